/* SPDX-License-Identifier: MIT */
/* linux/sched.h: part of the kernel environment in kshim/kernel.h. */
#include <kshim/kernel.h>
