/* SPDX-License-Identifier: MIT */
/* linux/errno.h: the kernel's base C environment (kshim/base.h). */
#include <kshim/base.h>
