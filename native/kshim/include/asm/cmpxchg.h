/* SPDX-License-Identifier: MIT */
/* asm/cmpxchg.h: part of the kernel environment in kshim/kernel.h. */
#include <kshim/kernel.h>
