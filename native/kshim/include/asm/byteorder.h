/* SPDX-License-Identifier: MIT */
/* asm/byteorder.h: part of the kernel environment in kshim/kernel.h. */
#include <kshim/kernel.h>
