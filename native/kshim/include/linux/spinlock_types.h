/* SPDX-License-Identifier: MIT */
/* linux/spinlock_types.h: part of the kernel environment in kshim/kernel.h. */
#include <kshim/kernel.h>
