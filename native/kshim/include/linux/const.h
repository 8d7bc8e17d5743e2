/* SPDX-License-Identifier: MIT */
/* linux/const.h: the kernel's base C environment (kshim/base.h). */
#include <kshim/base.h>
