"""The kernel's locktorture over a sweep: for each repeat, target (a labelled kernel booted in
QEMU, or the host) and writer count, one locktorture run whose console is kept as a log; then
all the logs are converted (kernel/locktorture.py) and stored as one experiment."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console

from locklab.errors import LocklabError
from locklab.kernel import findings, initramfs, locktorture, qemu
from locklab.kernel.arch import Arch, resolve
from locklab.kernel.vcpu_pin import PinnedVcpu, parse_pin_cpus, pinning_line
from locklab.model.values import parse_int_list, validate_axis, validate_seconds
from locklab.printable import printable
from locklab.run import machine_check
from locklab.store import Experiment, Store

if TYPE_CHECKING:
    from locklab.kernel.build import Built

# A target runs locktorture once with these module parameters and returns its console log.
Target = tuple[str, Callable[[dict[str, str]], str]]


@dataclass
class LocktortureSweep:
    """What `locklab kernel` runs; the field defaults are the command's defaults."""

    torture_type: str = "spin_lock"
    nwriters: str = "2"  # nwriters_stress values, like 1,2,4
    repeat: int = 1
    duration_s: float = 10.0
    stat_interval: int = 1  # seconds between locktorture's reports
    warmup_reports: int = 1  # reports dropped at the start of each run
    cpus: int = 2  # virtual CPUs
    accel: str = "auto"  # auto | kvm | tcg
    # Host CPUs, like 0-7: one per vCPU in QEMU (vCPU i on the i-th), or the kthreads'
    # (--host-kernel).
    pin_cpus: str = ""
    arch: str = ""  # the built kernels' architecture, x86_64 or arm64 ("": this machine's)
    accels: set[str] = field(default_factory=set)  # what the boots used
    fallbacks: set[str] = field(default_factory=set)  # why KVM was left, when it was
    # Runs whose kernel oopsed, panicked, hung or failed its test: log path -> how it ended.
    failed_runs: dict[str, str] = field(default_factory=dict)
    last_failure: str | None = None  # set by a target's run, read by run()
    provenance: dict[str, dict] = field(default_factory=dict)  # label -> how it was built
    pinned: list[list[PinnedVcpu]] = field(default_factory=list)  # each boot's checked pins

    def check(self, host: bool = False) -> None:
        """Every locktorture option, checked before any module is built or kernel booted
        (`host`: for --host-kernel, where --pin-cpus is the kthreads' CPUs, not one per vCPU)."""
        if self.torture_type not in qemu.TORTURE_TYPES:
            raise LocklabError(
                f"--type: unknown torture_type '{self.torture_type}' "
                f"(known: {', '.join(qemu.TORTURE_TYPES)})"
            )
        validate_axis("nwriters", parse_int_list("nwriters", self.nwriters))
        if not 1 <= self.stat_interval <= 3600:
            raise LocklabError(
                f"--stat-interval must be from 1 to 3600 s (got {self.stat_interval})"
            )
        validate_seconds("duration", self.duration_s, minimum=2 * self.stat_interval)
        if not 1 <= self.repeat <= 1000:
            raise LocklabError(f"--repeat must be from 1 to 1000 (got {self.repeat})")
        if not 1 <= self.cpus <= qemu.MAX_GUEST_CPUS:
            raise LocklabError(f"--cpus must be from 1 to {qemu.MAX_GUEST_CPUS} (got {self.cpus})")
        if self.warmup_reports < 0:
            raise LocklabError(f"--warmup-reports must not be negative (got {self.warmup_reports})")
        if self.duration_s < (self.warmup_reports + 2) * self.stat_interval:
            raise LocklabError(
                f"--duration {self.duration_s:g} s leaves fewer than two reports after "
                f"{self.warmup_reports} warm-up reports of {self.stat_interval} s"
            )
        if self.pin_cpus:
            parse_pin_cpus(self.pin_cpus, None if host else self.cpus)
        if host:
            if self.arch and not resolve(self.arch).is_host():
                raise LocklabError(f"--host-kernel runs this machine's kernel: --arch {self.arch} "
                                   "is for kernels built here (--patch)")  # fmt: skip
        elif self.accel == "kvm" and not self.target().is_host():
            raise LocklabError(f"--accel kvm: {qemu.kvm_unusable(self.target())}")

    def target(self) -> Arch:
        return resolve(self.arch)

    def vcpu_pins(self) -> list[int] | None:
        """The host CPU of each vCPU, or None for no pinning."""
        return parse_pin_cpus(self.pin_cpus, self.cpus) if self.pin_cpus else None

    def _booted(self, booted: qemu.Boot) -> str:
        """Note how a boot ran (accelerator, why KVM was left, its pins); its console."""
        self.accels.add(booted.accel)
        if booted.fallback:
            self.fallbacks.add(booted.fallback)
        self.pinned.append(booted.pinned)
        return booted.console

    def host_targets(self, label: str | None) -> list[Target]:
        """The running kernel, bare metal, its kthreads pinned to `pin_cpus`."""
        cpus = parse_pin_cpus(self.pin_cpus, None) if self.pin_cpus else []
        label = label or os.uname().release
        return [(label, lambda params: qemu.run_on_host(params, self.duration_s, cpus))]

    def qemu_targets(self, kernels: str | None, labels: str | None) -> list[Target]:
        """Each kernel image, booted in QEMU with its modules (built once per version)."""
        if not kernels:
            raise LocklabError(
                "kernel: give --kernel IMAGE[,IMAGE...], --patch LABEL=... or --host-kernel"
            )
        if not self.target().is_host():
            raise LocklabError(
                f"--kernel boots with this machine's busybox and modules: --arch {self.arch} "
                "is for kernels built here (--patch)"
            )
        images = [Path(p) for p in kernels.split(",") if p]
        for image in images:
            if not image.is_file():
                raise LocklabError(f"--kernel: {image} is not a file")
        versions = [qemu.kernel_version(image) for image in images]
        names = labels.split(",") if labels else versions
        if len(names) != len(images):
            raise LocklabError("--label: give one label per kernel")
        modules = {version: qemu.build_modules(version) for version in set(versions)}
        pins = self.vcpu_pins()
        initrd = qemu.BUILD / "initramfs.gz"  # rewritten for each run

        def boot(image: Path, version: str) -> Callable[[dict[str, str]], str]:
            def run(params: dict[str, str]) -> str:
                initrd.parent.mkdir(parents=True, exist_ok=True)
                initramfs.initramfs(modules[version], params, self.duration_s, initrd)
                booted = qemu.boot(image, initrd, self.cpus, self.duration_s, self.accel,
                                   pin=pins)  # fmt: skip
                return self._booted(booted)

            return run

        return [(name, boot(image, version)) for image, version, name in zip(
            images, versions, names, strict=True)]  # fmt: skip

    def built_targets(
        self, patch_options: list[str], source: Path | None, config: Path | None,
        param_options: list[str], debug: list[str] | None = None,
        rev_options: list[str] | None = None,
    ) -> list[Target]:  # fmt: skip
        """Kernels built from a source tree (or a revision of a git tree) with each label's
        patches (cached), locktorture built in: its parameters go on the command line, and
        the console says how it ended."""
        from locklab.kernel import build, build_inputs
        from locklab.kernel.revisions import parse_rev_options

        extra = _checked_params(param_options)  # before minutes of building
        patches = build_inputs.parse_patch_options(patch_options)
        revisions = parse_rev_options(rev_options or [])
        arch = self.target()
        arch.require_qemu()
        built = build.build(patches, source, config, debug, arch.name, revisions)
        return self._builtin_targets(built, extra)

    def prebuilt_targets(self, manifest: Path, param_options: list[str]) -> list[Target]:
        """Kernels with locktorture built in that another machine built (--hosts ships them
        with their manifest): booted as if built here, their provenance kept."""
        from locklab.kernel import build

        built = build.read_manifest(manifest)
        arch = self.target()
        for label, kernel in built.items():
            if kernel.arch != arch.name:
                raise LocklabError(f"--images: {label} is an {kernel.arch} kernel; this run "
                                   f"boots {arch.name} guests (--arch)")  # fmt: skip
        arch.require_qemu()
        return self._builtin_targets(built, _checked_params(param_options))

    def _builtin_targets(self, built: dict[str, Built], extra: dict[str, str]) -> list[Target]:
        """Each kernel booted with locktorture's parameters, `extra` (checked) added."""
        pins = self.vcpu_pins()
        arch = self.target()
        self.provenance = {label: b.provenance() for label, b in built.items()}

        def boot(image: Path) -> Callable[[dict[str, str]], str]:
            def run(run_params: dict[str, str]) -> str:
                booted = qemu.run_builtin(
                    image, {**run_params, **extra}, self.duration_s, self.cpus, self.accel,
                    pin=pins, arch=arch.name,
                )  # fmt: skip
                self.last_failure = booted.outcome if booted.failed else None
                return self._booted(booted)

            return run

        return [(label, boot(b.image)) for label, b in built.items()]

    def provenance_line(self) -> str:
        """What each built kernel is: version, patches (with their hashes) and config."""
        return "; ".join(
            f"{label}=Linux {p['version']} + "
            + (", ".join(f"{x['name']}@{x['sha256'][:12]}" for x in p["patches"]) or "no patch")
            + f" (config {str(p['config_sha256'])[:12]})"
            for label, p in self.provenance.items()
        )

    def qemu_machine(self) -> str:
        """The machine line of QEMU runs: emulation is said so, with why KVM was left,
        whether the vCPUs were pinned (to which CPUs, checked in /proc), and the guests'
        architecture."""
        accelerator = qemu.accelerator_line(self.accels, self.fallbacks)
        return f"{accelerator}; {pinning_line(self.pinned)}; {self.target().name} guests"

    def run(
        self, store: Store, name: str, targets: list[Target], machine: Callable[[], str]
    ) -> tuple[Experiment, list[str], Path]:
        """Run every (repeat, target, writers), keep each console log under the store's
        kernel-logs/NAME, and store them all as one experiment. Returns it, the problems
        found in the logs, and the folder of the logs."""
        logs = store.path.parent / "kernel-logs" / name
        logs.mkdir(parents=True, exist_ok=True)
        console = Console(stderr=True, highlight=False, markup=False, soft_wrap=True)
        labelled: list[tuple[str | None, Path]] = []
        pinning: dict[str, list[dict]] = {}  # log name -> each vCPU's thread and checked pin
        for repeat in range(self.repeat):
            for label, run in targets:
                for writers in parse_int_list("nwriters", self.nwriters):
                    params = {"torture_type": self.torture_type,
                              "nwriters_stress": str(writers),
                              "stat_interval": str(self.stat_interval)}  # fmt: skip
                    console.print(
                        f"{printable(label)}: {self.torture_type} nwriters={writers} "
                        f"#{repeat + 1}"
                    )
                    log = logs / f"{label}-{self.torture_type}-n{writers}-r{repeat + 1}.log"
                    self.last_failure = None
                    boots = len(self.pinned)
                    log.write_text(run(params))
                    labelled.append((label, log))
                    if len(self.pinned) > boots and self.pinned[-1]:
                        pinning[log.name] = [pin.as_dict() for pin in self.pinned[-1]]
                    if self.last_failure:
                        self.failed_runs[str(log)] = self.last_failure
        host = machine()
        if pinning:
            (logs / "pinning.json").write_text(json.dumps(pinning, indent=2) + "\n")
        if self.provenance:
            (logs / "kernels.json").write_text(json.dumps(self.provenance, indent=2) + "\n")
            host += "; kernels: " + self.provenance_line()
        imported = locktorture.convert(labelled, name, host, self.warmup_reports,
                                       frozenset(self.failed_runs))  # fmt: skip
        check = machine_check.stored_facts()  # this host's, for the table's summary line
        for stored in imported.runs:
            if isinstance(stored.machine, dict):
                stored.machine["check"] = check
            log = (stored.result or {}).get("log")
            if stored.result is not None and log and Path(str(log)).is_file():
                found = findings.findings(Path(str(log)).read_text(errors="replace"))
                stored.result["kernel_findings"] = findings.as_records(found)
            # a kernel that broke is a failed run, whatever it printed
            outcome = self.failed_runs.get(str(log))
            if outcome:
                stored.status, stored.exit_code = "error", 1
                stored.throughput_ops_per_s, stored.error = None, f"kernel: {outcome}"
                if stored.result is not None:
                    stored.result["status"] = "error"
        experiment, problems = locktorture.store_imported(store, imported, host)
        return experiment, problems, logs


def _checked_params(param_options: list[str]) -> dict[str, str]:
    """--param NAME=VALUE options, checked against locktorture's parameters: one line each."""
    from locklab.kernel import params

    return params.check(dict(_name_value(text) for text in param_options))


def _name_value(text: str) -> tuple[str, str]:
    name, equals, value = text.partition("=")
    if not equals or not name:
        raise LocklabError(f"--param {text!r}: give NAME=VALUE")
    if name in ("torture_type", "nwriters_stress", "stat_interval", "shutdown_secs"):
        raise LocklabError(f"--param {name}: use --type, --nwriters, --stat-interval, --duration")
    return name, value
