/* SPDX-License-Identifier: MIT */
/* linux/stringify.h: the kernel's base C environment (kshim/base.h). */
#include <kshim/base.h>
