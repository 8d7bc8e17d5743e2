/* SPDX-License-Identifier: MIT */
/* linux/build_bug.h: the kernel's base C environment (kshim/base.h). */
#include <kshim/base.h>
