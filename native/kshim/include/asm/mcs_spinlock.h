/* SPDX-License-Identifier: MIT */
/*
 * asm/mcs_spinlock.h: neither x86 nor arm64 overrides the MCS hand-over (arm64 had its own
 * WFE-based one until 4.15, removed since), so kernel/locking/mcs_spinlock.h's generic
 * acquire-load spin and release store are used.
 */
