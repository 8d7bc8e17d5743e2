/* SPDX-License-Identifier: MIT */
/*
 * anon-vma-load - the kernel path seed 001 measured (a fork-heavy mail server on 3.10):
 * processes forking from one address space, so every fork, exit and page walk takes the
 * lock of one shared anon_vma (include/linux/rmap.h: anon_vma->root->rwsem).
 *
 * THREADS threads share one anonymous mapping. Each one, ITERATIONS times:
 *   - forks a child that writes one byte to each of its PAGES pages (copy-on-write faults)
 *     and exits: fork() clones the parent's anon_vma chain under the root's lock taken for
 *     writing (anon_vma_fork), the exit unlinks it under the same lock (unlink_anon_vmas);
 *   - waits for it, touches its pages again and asks the kernel to page them out
 *     (madvise MADV_PAGEOUT): reclaim first walks each page's reverse map, which takes the
 *     root's lock for reading (folio_lock_anon_vma_read). Without swap the pages stay, but
 *     the walk is done: that is the read side a patch making the lock exclusive changes.
 * Before the 3.10 conversion the lock was a mutex, exclusive for both sides.
 *
 * usage: anon-vma-load THREADS ITERATIONS [PAGES]   (PAGES per thread, default 16)
 * Prints "ops/s: X" (forks over the wall time) and "ok"; a child that fails, or any error,
 * is one line "anon-vma-load: error: ..." and exit status 1 (usage: 2).
 */
#define LOAD_NAME "anon-vma-load"
#include "load_args.h"
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef MADV_PAGEOUT
#define MADV_PAGEOUT 21 /* Linux 5.4 */
#endif
#define MAX_THREADS 256

static unsigned long iterations;
static unsigned long pages_per_thread = 16;
static size_t page_size;
static unsigned char *mapping;
static int pageout_unsupported; /* EINVAL once: a kernel without MADV_PAGEOUT */

static void touch(unsigned char *pages, unsigned char value)
{
	for (unsigned long p = 0; p < pages_per_thread; p++)
		((volatile unsigned char *)pages)[p * page_size] = value;
}

static void *fork_and_walk(void *arg)
{
	unsigned char *mine = mapping + (size_t)arg * pages_per_thread * page_size;
	for (unsigned long i = 0; i < iterations; i++) {
		pid_t child = fork();
		if (child < 0)
			fail("fork", errno);
		if (child == 0) { /* only async-signal-safe work in a threaded parent's child */
			touch(mine, (unsigned char)(i + 1));
			_exit(0);
		}
		int status;
		while (waitpid(child, &status, 0) < 0)
			if (errno != EINTR)
				fail("waitpid", errno);
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
			fprintf(stderr, "anon-vma-load: error: a child ended with status %#x\n", status);
			exit(1);
		}
		touch(mine, (unsigned char)i);
		if (!__atomic_load_n(&pageout_unsupported, __ATOMIC_RELAXED) &&
		    madvise(mine, pages_per_thread * page_size, MADV_PAGEOUT) != 0) {
			if (errno != EINVAL)
				fail("madvise(MADV_PAGEOUT)", errno);
			__atomic_store_n(&pageout_unsupported, 1, __ATOMIC_RELAXED);
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 3 && argc != 4) {
		fprintf(stderr, "usage: anon-vma-load THREADS ITERATIONS [PAGES]\n");
		return 2;
	}
	unsigned long threads = parse_count(argv[1], "THREADS", MAX_THREADS);
	iterations = parse_count(argv[2], "ITERATIONS", 100000000UL);
	if (argc == 4)
		pages_per_thread = parse_count(argv[3], "PAGES", 65536);
	page_size = (size_t)sysconf(_SC_PAGESIZE);
	size_t bytes = threads * pages_per_thread * page_size;
	mapping = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mapping == MAP_FAILED)
		fail("mmap", errno);
	memset(mapping, 1, bytes); /* every page present before the first fork */

	pthread_t ids[MAX_THREADS];
	struct timespec start, end;
	clock_gettime(CLOCK_MONOTONIC, &start);
	for (unsigned long t = 0; t < threads; t++) {
		int error = pthread_create(&ids[t], NULL, fork_and_walk, (void *)(size_t)t);
		if (error)
			fail("pthread_create", error);
	}
	for (unsigned long t = 0; t < threads; t++)
		pthread_join(ids[t], NULL);
	clock_gettime(CLOCK_MONOTONIC, &end);

	double seconds = (double)(end.tv_sec - start.tv_sec) + (double)(end.tv_nsec - start.tv_nsec) * 1e-9;
	unsigned long long forks = (unsigned long long)threads * iterations;
	printf("threads: %lu forks: %llu seconds: %.6f%s\n", threads, forks, seconds,
	       pageout_unsupported ? " (no MADV_PAGEOUT: no reverse-map walks)" : "");
	printf("ops/s: %.1f\n", (double)forks / seconds);
	printf("ok\n");
	return 0;
}
