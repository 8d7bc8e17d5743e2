/* SPDX-License-Identifier: MIT */
/* linux/container_of.h: the kernel's base C environment (kshim/base.h). */
#include <kshim/base.h>
