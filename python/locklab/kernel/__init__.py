"""The kernel's own locktorture: booting kernels in QEMU (or the host), the sweep over them,
and the pure parser and converter of its logs into a spec and runs."""
