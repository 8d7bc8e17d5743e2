#!/usr/bin/env bash
# Installs the Debian 12 packages locklab needs, only those missing. Safe to run repeatedly.
#   gcc, make         the native engine (gcc's libtsan2/libasan8 come with it)
#   libck-dev         Concurrency Kit, the peer locks (ck_ticket, ck_mcs, ck_clh, ck_fas)
#   python3-venv      the front end's virtualenv
#   chromium, chromium-driver   the report's test opens the HTML page in a headless browser
#   qemu-system-x86, busybox-static, linux-source-6.1, linux-headers-amd64
#                     `locklab kernel`: the kernel's own locktorture, built out of tree and
#                     booted in QEMU (scripts/fetch-kernel.sh fetches the matching image)
#   gcc-aarch64-linux-gnu, libc6-dev-arm64-cross, binutils-aarch64-linux-gnu, qemu-user-static
#                     the arm64 build (build/arm64/, `make arm64`): cross-compiled, run under
#                     qemu-aarch64-static and disassembled by tests/test_arm64.py (seed 000's
#                     arm64 question); without them the arm64 tests skip, naming the package
#   qemu-system-arm   qemu-system-aarch64: `locklab kernel --arch arm64` boots arm64 kernels
#                     (under emulation on an x86_64 host; tests/test_kernel_arm64.py)
#   ccache, flex, bison, bc, libelf-dev, xz-utils, patch
#                     `locklab kernel build`: kernels built from linux-source-6.1 with the
#                     user's patches (kconfig needs flex/bison, the x86 build bc and objtool's
#                     libelf; ccache makes a rebuild of the same objects take seconds)
#   kyotocabinet-utils  a real program for the interposition library (LD_PRELOAD
#                     liblocklab-interpose.so): `kccachetest wicked -th N` uses pthread mutexes,
#                     try and timed locks and condition variables, and checks its own results
#   memcached         the second real program (campaigns/memcached.toml): locklab's load
#                     generator (build/opt/memcached-load --spawn) starts its own instance on a
#                     free loopback port; the package's system service is not used, so when this
#                     script installs the package on a systemd machine it stops and disables it
#   rt-tests          cyclictest and hackbench, run inside the seed-003 kernels
#   git               --rev, `locklab bisect` and `locklab history` read the user's kernel tree
#                     with it (and their tests make a small one)
#   rsync, openssh-client   --hosts: the project shipped to other machines over the user's ssh
#   openssh-server    the --hosts tests start their own sshd on a loopback port, as this user;
#                     the package's system service is not used, so when this script installs
#                     the package on a systemd machine it stops and disables it
#   --check           install nothing: print the missing packages and exit 3 if any
#   --check-build     the same, for what building and measuring need (make build venv): what
#                     locklab --hosts asks a host before building there
#   --slow: linux-source-6.12   `make test-slow` and campaigns/seed-003-kernel.toml: Linux 6.12,
#                     the first with PREEMPT_RT in mainline (a 150 MB package CI does not need)
set -euo pipefail

packages=(gcc make libc6-dev libck-dev python3-venv chromium chromium-driver
    qemu-system-x86 qemu-system-arm busybox-static linux-source-6.1
    "linux-headers-$(dpkg --print-architecture)"
    ccache flex bison bc libelf-dev xz-utils patch kyotocabinet-utils memcached rt-tests git
    rsync openssh-client openssh-server)
# The arm64 cross build is an x86_64 machine's: an arm64 host builds natively.
[[ "$(uname -m)" == x86_64 ]] && packages+=(gcc-aarch64-linux-gnu libc6-dev-arm64-cross
    binutils-aarch64-linux-gnu qemu-user-static)
[[ "${1:-}" == --slow ]] && packages+=(linux-source-6.12)
[[ "${1:-}" == --check-build ]] && packages=(gcc make libc6-dev libck-dev python3-venv)
missing=()
for package in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" \
        || missing+=("$package")
done
((${#missing[@]} == 0)) && exit 0
if [[ "${1:-}" == --check || "${1:-}" == --check-build ]]; then
    echo "${missing[*]}"
    exit 3
fi

echo "locklab: installing Debian packages: ${missing[*]}"
as_root=()
if ((EUID != 0)); then
    command -v sudo >/dev/null || { echo "locklab: error: need root or sudo to install ${missing[*]}" >&2; exit 1; }
    as_root=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
"${as_root[@]}" apt-get update -qq
"${as_root[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
for service in memcached:memcached ssh:openssh-server; do
    if [[ " ${missing[*]} " == *" ${service#*:} "* && -d /run/systemd/system ]]; then
        "${as_root[@]}" systemctl disable --now --quiet "${service%%:*}.service" || true
    fi
done
