/* SPDX-License-Identifier: MIT */
/*
 * load_args.h - what the kernel workloads (pi_futex_load.c, anon_vma_load.c) share: one line
 * "PROGRAM: error: ..." and exit status 1 for a failure, 2 for a bad argument. The including
 * file defines LOAD_NAME, its program's name.
 */
#ifndef LOCKLAB_LOAD_ARGS_H
#define LOCKLAB_LOAD_ARGS_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void fail(const char *what, int error)
{
	fprintf(stderr, LOAD_NAME ": error: %s: %s\n", what, strerror(error));
	exit(1);
}

/* A whole number from 1 to max, else one line and exit status 2. */
static unsigned long parse_count(const char *text, const char *name, unsigned long max)
{
	char *end;
	errno = 0;
	unsigned long value = strtoul(text, &end, 10);
	if (errno || *end || end == text || value < 1 || value > max) {
		fprintf(stderr, LOAD_NAME ": error: %s must be from 1 to %lu (got '%s')\n", name, max,
			text);
		exit(2);
	}
	return value;
}

#endif
