/* SPDX-License-Identifier: MIT */
/* linux/irqflags.h: part of the kernel environment in kshim/kernel.h. */
#include <kshim/kernel.h>
