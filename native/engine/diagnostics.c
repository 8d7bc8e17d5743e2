/* SPDX-License-Identifier: MIT */
/*
 * diagnostics.c - how the engine reports a problem the user can fix. Its own unit, so that every
 * other unit (options, registry, topology, run) can refuse input without depending on another.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "engine.h"

void usage_error(const char *fmt, ...)
{
	va_list args;
	fflush(stdout);
	fputs("locklab-bench: error: ", stderr);
	va_start(args, fmt);
	vfprintf(stderr, fmt, args);
	va_end(args);
	fputc('\n', stderr);
	exit(EXIT_USAGE);
}
