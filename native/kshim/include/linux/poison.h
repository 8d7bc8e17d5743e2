/* SPDX-License-Identifier: MIT */
/* linux/poison.h: the kernel's base C environment (kshim/base.h). */
#include <kshim/base.h>
