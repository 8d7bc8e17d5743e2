/*
 * The /init of a guest whose kernel has locktorture built in, for guests that cannot run the
 * host's busybox (an arm64 guest on an x86_64 host). It does what initramfs.static_initramfs's
 * busybox script does: mount /proc, report the CPUs the guest brought up (qemu.missing_cpus
 * reads the marker line), then wait. The test runs from the kernel's own initcall, and
 * locktorture.shutdown_secs ends it: its shutdown thread prints the final statistics and
 * "End of test" and powers the machine off. /init must never exit: the kernel panics if it
 * does.
 *
 * Built static (no libraries in the initramfs) by `make arm64`: build/arm64/torture-init.
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

/* initramfs.CPUS_MARKER; tests/test_kernel_arm64.py checks that the two agree. */
#define CPUS_MARKER "LOCKLAB-CPUS"

/* The CPUs init may run on: every CPU online at boot, as busybox nproc counts them. */
static int online_cpus(void)
{
	cpu_set_t cpus;

	CPU_ZERO(&cpus);
	if (sched_getaffinity(0, sizeof(cpus), &cpus) != 0)
		return -1;
	return CPU_COUNT(&cpus);
}

int main(void)
{
	/* Not needed for the count; mounted as the busybox init does, for anyone looking. */
	if (mount("proc", "/proc", "proc", 0, NULL) != 0)
		fprintf(stderr, "torture-init: mount /proc: %s\n", strerror(errno));
	printf("%s %d\n", CPUS_MARKER, online_cpus());
	fflush(stdout);
	for (;;)
		pause();
}
