/* SPDX-License-Identifier: MIT */
/* linux/sched/rt.h: part of the kernel environment in kshim/kernel.h. */
#include <kshim/kernel.h>
