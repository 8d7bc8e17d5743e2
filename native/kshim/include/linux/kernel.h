/* SPDX-License-Identifier: MIT */
/* linux/kernel.h: part of the kernel environment in kshim/kernel.h. */
#include <kshim/kernel.h>
