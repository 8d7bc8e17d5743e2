#!/usr/bin/env bash
# Fetches Debian's kernel image matching the newest installed linux-headers-*-FLAVOUR and keeps
# only its vmlinuz, in build/kernel/images/ (no package install, so no initramfs hooks run on
# this machine). Prints the image's path. Used by `locklab kernel` users and by the tests.
#   scripts/fetch-kernel.sh             the generic kernel (headers: linux-headers-amd64)
#   scripts/fetch-kernel.sh rt-amd64    PREEMPT_RT (first: apt-get install linux-headers-rt-amd64)
set -euo pipefail
flavour=${1:-amd64}
# linux-headers-6.1.0-56-amd64, not -rt-amd64, for the generic flavour.
version=$(find /usr/src -maxdepth 1 -name "linux-headers-*-$flavour" -printf '%f\n' 2>/dev/null \
    | sed 's/^linux-headers-//' | { grep -v -- '-rt-amd64$' || true; } | sort -V | tail -1)
if [[ $flavour == rt-amd64 ]]; then
    version=$(find /usr/src -maxdepth 1 -name 'linux-headers-*-rt-amd64' -printf '%f\n' \
        2>/dev/null | sed 's/^linux-headers-//' | sort -V | tail -1)
fi
if [[ -z $version ]]; then
    echo "locklab: error: no linux-headers-*-$flavour installed (scripts/install-deps.sh)" >&2
    exit 1
fi
out=build/kernel/images
image=$out/vmlinuz-$version
if [[ ! -f $image ]]; then
    mkdir -p "$out"
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    (cd "$tmp" && apt-get download -qq -o APT::Sandbox::User=root "linux-image-$version")
    dpkg-deb --fsys-tarfile "$tmp"/linux-image-*.deb | tar -x -C "$tmp" "./boot/vmlinuz-$version"
    mv "$tmp/boot/vmlinuz-$version" "$image"
fi
echo "$image"
