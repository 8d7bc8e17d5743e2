/* SPDX-License-Identifier: MIT */
/* linux/compiler.h: the kernel's base C environment (kshim/base.h). */
#include <kshim/base.h>
