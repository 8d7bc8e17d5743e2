/* SPDX-License-Identifier: MIT */
/*
 * check.h - the C unit tests' one assertion: CHECK(condition, "printf format", ...) counts a
 * failure and says where, and the test goes on, so one run reports every broken check.
 * main() ends with check_summary(), which prints the verdict the pytest wrapper reads.
 */
#ifndef LOCKLAB_UNIT_CHECK_H
#define LOCKLAB_UNIT_CHECK_H

#include <stdio.h>

static int failures;

#define CHECK(cond, ...)                                                                       \
	do {                                                                                   \
		if (!(cond)) {                                                                 \
			failures++;                                                            \
			printf("FAIL %s:%d: ", __FILE__, __LINE__);                            \
			printf(__VA_ARGS__);                                                   \
			printf("\n");                                                          \
		}                                                                              \
	} while (0)

/* "all checks passed" and 0, or how many failed and 1. */
static inline int check_summary(void)
{
	if (failures) {
		printf("%d checks failed\n", failures);
		return 1;
	}
	printf("all checks passed\n");
	return 0;
}

#endif /* LOCKLAB_UNIT_CHECK_H */
