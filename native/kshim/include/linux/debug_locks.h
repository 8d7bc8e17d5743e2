/* SPDX-License-Identifier: MIT */
/* linux/debug_locks.h: part of the kernel environment in kshim/kernel.h. */
#include <kshim/kernel.h>
