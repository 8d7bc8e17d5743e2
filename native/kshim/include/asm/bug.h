/* SPDX-License-Identifier: MIT */
/* asm/bug.h: part of the kernel environment in kshim/kernel.h. */
#include <kshim/kernel.h>
