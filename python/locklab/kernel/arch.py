"""The architectures `locklab kernel` builds and boots kernels for (`--arch`), each in one row:
how make builds it, which image it boots, how QEMU runs it, what its config needs and which
/init a guest with locktorture built in runs. x86_64 is built natively on an x86_64 host;
arm64 (seed 000 ran on a Kunpeng 920) is cross-built with Debian's gcc-aarch64-linux-gnu and
booted on QEMU's `virt` machine, under emulation unless the host is arm64 itself.
"""

from __future__ import annotations

import platform
import shutil
from dataclasses import dataclass

from locklab.errors import LocklabError
from locklab.kernel.build_inputs import PROGRAM_OPTIONS


@dataclass(frozen=True)
class Arch:
    name: str  # --arch
    machines: tuple[str, ...]  # what platform.machine() says on a host of this architecture
    make_arch: str  # make ARCH=
    cross_compile: str  # make CROSS_COMPILE= when the host is of another architecture
    cross_package: str  # the Debian package of that cross compiler
    image: str  # the boot image, in the built tree
    qemu: str
    qemu_package: str
    tcg_args: tuple[str, ...]  # machine and CPU under emulation
    kvm_args: tuple[str, ...]  # ... and under KVM
    console: str  # the kernel command line's console (and what else the platform wants)
    options: dict[str, str]  # config options beyond build_inputs.BASE_OPTIONS
    needed: tuple[str, ...]  # what a guest cannot do without, beyond build_inputs.NEEDED
    # The static /init of a guest with locktorture built in: a Makefile target (C, cross-built
    # like the kernel), or None for the host's busybox with a script.
    torture_init: str | None = None
    runs_programs: bool = False  # `--exec`: the host's root over virtio-9p, a busybox /init

    @property
    def image_name(self) -> str:
        return self.image.rsplit("/", 1)[-1]

    @property
    def distinct(self) -> str:
        """What tells this architecture's work trees and image keys apart. x86_64's trees and
        keys predate --arch: they stay as they were, so images built before are still used."""
        return "" if self.name == X86_64.name else f"-{self.name}"

    def is_host(self) -> bool:
        return platform.machine() in self.machines

    def compiler_prefix(self) -> str:
        return "" if self.is_host() else self.cross_compile

    def require_compiler(self) -> str:
        """The C compiler for this architecture's kernels; a missing one is one line."""
        compiler = f"{self.compiler_prefix()}gcc"
        if shutil.which(compiler) is None:
            package = "gcc" if self.is_host() else self.cross_package
            raise LocklabError(f"--arch {self.name}: {compiler} is missing: install {package}")
        return compiler

    def require_qemu(self) -> str:
        if shutil.which(self.qemu) is None:
            raise LocklabError(f"--arch {self.name}: {self.qemu} is missing: "
                               f"install {self.qemu_package}")  # fmt: skip
        return self.qemu


X86_64 = Arch(
    name="x86_64", machines=("x86_64", "amd64"), make_arch="x86_64",
    cross_compile="x86_64-linux-gnu-", cross_package="gcc-x86-64-linux-gnu",
    image="arch/x86/boot/bzImage", qemu="qemu-system-x86_64", qemu_package="qemu-system-x86",
    tcg_args=(), kvm_args=("-cpu", "host"), console="console=ttyS0 edd=off",
    options={
        "64BIT": "y",  # qemu-system-x86_64 guests; tinyconfig alone would build i386
        # QEMU lists the vCPUs in ACPI's MADT; SeaBIOS's MP table names the boot CPU alone, so
        # without ACPI a guest of any -smp brings up one CPU.
        "ACPI": "y",
        "SERIAL_8250": "y",  # the serial console, ttyS0
        "SERIAL_8250_CONSOLE": "y",
        "BINFMT_SCRIPT": "y",  # /init is a busybox script
        # Call chains as they are: tinyconfig's guess unwinder lists every text address left
        # on the stack.
        "UNWINDER_ORC": "y",
        **PROGRAM_OPTIONS,
    },
    needed=("64BIT", "ACPI", "SERIAL_8250", "SERIAL_8250_CONSOLE", "BINFMT_SCRIPT"),
    runs_programs=True,
)  # fmt: skip

ARM64 = Arch(
    name="arm64", machines=("aarch64", "arm64"), make_arch="arm64",
    cross_compile="aarch64-linux-gnu-", cross_package="gcc-aarch64-linux-gnu",
    image="arch/arm64/boot/Image", qemu="qemu-system-aarch64", qemu_package="qemu-system-arm",
    # QEMU's `virt` machine, described by its device tree (no ACPI needed). GICv3: GICv2 takes
    # at most 8 CPUs. Neoverse N1 is Armv8.2 with LSE atomics, the level of seed 000's
    # Kunpeng 920 (and of `make arm64`'s engine, ARM64_MARCH=armv8.2-a).
    tcg_args=("-M", "virt,gic-version=3", "-cpu", "neoverse-n1"),
    kvm_args=("-M", "virt,gic-version=host", "-cpu", "host"),
    console="console=ttyAMA0",
    options={
        "SERIAL_AMBA_PL011": "y",  # virt's UART, ttyAMA0
        "SERIAL_AMBA_PL011_CONSOLE": "y",
        "ARM_PSCI_FW": "y",  # how the guest brings up its secondary CPUs and powers off
        # LSE atomics patched in at boot on a CPU that has them, as a distribution kernel does
        # (tinyconfig leaves the LL/SC loops alone); seed 000's patches change which atomic
        # marks an rt_mutex's waiters.
        "ARM64_USE_LSE_ATOMICS": "y",
    },
    needed=("SERIAL_AMBA_PL011", "SERIAL_AMBA_PL011_CONSOLE", "ARM_PSCI_FW"),
    torture_init="build/arm64/torture-init",
)  # fmt: skip

ARCHES: dict[str, Arch] = {arch.name: arch for arch in (X86_64, ARM64)}


def host_arch() -> Arch | None:
    return next((arch for arch in ARCHES.values() if arch.is_host()), None)


def resolve(name: str | None) -> Arch:
    """`--arch NAME`, or this machine's architecture when none is given; one line otherwise."""
    if not name:
        host = host_arch()
        if host is None:
            raise LocklabError(
                f"--arch: this machine is {platform.machine()}, which locklab builds no "
                f"kernels for: give --arch {' or '.join(ARCHES)}"
            )
        return host
    if name not in ARCHES:
        raise LocklabError(f"--arch: unknown architecture {name!r} (known: {', '.join(ARCHES)})")
    return ARCHES[name]
