/* SPDX-License-Identifier: MIT */
/* asm/spinlock_types.h: x86 and arm64 both use the queued spinlock's word (the tree's). */
#include <asm-generic/qspinlock_types.h>
