/* SPDX-License-Identifier: MIT */
/* linux/lockdep_types.h: the kernel's base C environment (kshim/base.h). */
#include <kshim/base.h>
