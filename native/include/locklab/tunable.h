/* SPDX-License-Identifier: MIT */
/*
 * tunable.h - a tunable's value from text, one rule for the engine's --param and the
 * interposition library's LOCKLAB_PARAMS: an integer, or the name of one of its choices.
 */
#ifndef LOCKLAB_TUNABLE_H
#define LOCKLAB_TUNABLE_H

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lock.h"

/* The name of `value` among t's choices, or NULL when t has none. */
static inline const char *lock_tunable_choice(const struct lock_tunable *t, long value)
{
	if (t->choices == NULL || value < t->min_value || value > t->max_value)
		return NULL;
	return t->choices[value - t->min_value];
}

/* `text` as a value of t into *value: 0, -EINVAL (not a value) or -ERANGE (outside t's range). */
static inline int lock_tunable_parse(const struct lock_tunable *t, const char *text, long *value)
{
	for (long v = t->min_value; t->choices != NULL && v <= t->max_value; v++) {
		if (strcmp(lock_tunable_choice(t, v), text) == 0) {
			*value = v;
			return 0;
		}
	}
	char *end;
	errno = 0;
	long parsed = strtol(text, &end, 0);
	if (errno || end == text || *end != '\0')
		return -EINVAL;
	if (parsed < t->min_value || parsed > t->max_value)
		return -ERANGE;
	*value = parsed;
	return 0;
}

#endif /* LOCKLAB_TUNABLE_H */
