/* SPDX-License-Identifier: MIT */
/* asm/barrier.h: part of the kernel environment in kshim/kernel.h. */
#include <kshim/kernel.h>
