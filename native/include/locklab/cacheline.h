/* SPDX-License-Identifier: MIT */
/*
 * cacheline.h - how far apart locklab keeps what different threads write. Apart from arch.h,
 * so that lock.h, which every plugin includes, brings no cpu_relax() or barrier of ours into a
 * file that defines its own.
 */
#ifndef LOCKLAB_CACHELINE_H
#define LOCKLAB_CACHELINE_H

/*
 * Alignment for anything written by one thread and read by others. 128, not 64: x86's
 * adjacent-line prefetcher pairs lines, and several arm64 parts have 128-byte lines.
 */
#define LOCKLAB_CACHELINE 128

#endif /* LOCKLAB_CACHELINE_H */
