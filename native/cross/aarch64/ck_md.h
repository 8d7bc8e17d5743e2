/* SPDX-License-Identifier: MIT */
/*
 * ck_md.h for the aarch64 cross build (build/arm64/, `make arm64`).
 *
 * Concurrency Kit generates ck_md.h when it is configured, for the machine it is built on.
 * The build host's copy (Debian's libck-dev for amd64) says CK_MD_TSO, which would turn ck's
 * load and store fences into compiler barriers on arm64: wrong for a weakly ordered CPU. This
 * one says what ck 0.7's configure chooses for aarch64: relaxed memory order (CK_MD_RMO, every
 * ck_pr_fence_* a dmb), LSE off (ck's default), 64-byte lines, 4 KiB pages, 48-bit VAs.
 * The arm64 build puts this directory ahead of the system's on the include path.
 */
#ifndef CK_MD_H
#define CK_MD_H

#define CK_MD_CACHELINE (64)
#define CK_MD_PAGESIZE (4096)
#define CK_MD_RTM_DISABLE
#define CK_MD_LSE_DISABLE
#define CK_MD_POINTER_PACK_DISABLE
#define CK_MD_SSE_DISABLE
#define CK_MD_PPC32_LWSYNC_DISABLE
#define CK_MD_VMA_BITS 48ULL
#define CK_MD_RMO
#define CK_PR_ENABLE_DOUBLE
#define CK_VERSION "0.7.1"
#define CK_GIT_SHA ""

#endif /* CK_MD_H */
