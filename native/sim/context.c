/* SPDX-License-Identifier: MIT */
/*
 * context.c - hand-overs in user space: a saved context per program thread, swapped in tens of
 * nanoseconds on one host thread, where a hand-over between host threads costs two system
 * calls and the host's context switch (microseconds in a virtual machine).
 *
 * A context is a stack pointer, with the callee-saved registers pushed on that stack, and a
 * thread pointer. Swapping the thread pointer with the stack keeps each program thread's
 * thread-local storage its own (errno, the C library's per-thread caches, a lock's per-CPU
 * state, sim_self): every program thread still starts as a host thread of its own, whose
 * thread-local block and stack it keeps, and whose host thread waits, parked, while its code
 * runs on the first host thread (scheduler.c, "Contexts"). C11Tester (Luo and Demsky,
 * ASPLOS 2021) runs its model threads the same way.
 *
 * x86-64 only: the thread pointer is the FS base, written with wrfsbase where the kernel
 * allows it (HWCAP2_FSGSBASE, Linux 5.9 on) and with arch_prctl(ARCH_SET_FS) otherwise.
 * Elsewhere sim_contexts_supported() says no and the runtime hands over between host threads.
 * The callee-saved registers are the System V ABI's: rbx, rbp, r12 to r15 (and rsp). The
 * floating-point control words are not saved: nothing in a simulated program changes them.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "runtime.h"

_Static_assert(offsetof(struct sim_context, stack_pointer) == 0, "the swap's layout");
_Static_assert(offsetof(struct sim_context, thread_pointer) == 8, "the swap's layout");

#if defined(__x86_64__)
#define ARCH_SET_FS_CODE 0x1002 /* asm/prctl.h */
#define HWCAP2_FSGSBASE_BIT (1ul << 1)
#define AS_TEXT(x) #x
#define NUMBER_TEXT(x) AS_TEXT(x) /* a macro's value, for the assembly */

#define PUSH_CALLEE_SAVED "pushq %rbp\n\tpushq %rbx\n\tpushq %r12\n\tpushq %r13\n\tpushq %r14\n\tpushq %r15\n\t"
#define POP_CALLEE_SAVED "popq %r15\n\tpopq %r14\n\tpopq %r13\n\tpopq %r12\n\tpopq %rbx\n\tpopq %rbp\n\t"

/*
 * swap(save, load): push the callee-saved registers, save the stack pointer in save, then load
 * load's thread pointer and stack pointer and pop its registers. The thread pointer changes
 * inside the swap, not before it, so no C code ever runs with one thread's stack and another's
 * thread-local storage. A fresh context starts in context_entry with its function in r13 and
 * its argument in r12 (sim_context_prepare).
 */
__asm__(".text\n"
	".globl sim_swap_wrfsbase\n"
	".type sim_swap_wrfsbase,@function\n"
	"sim_swap_wrfsbase:\n\t" PUSH_CALLEE_SAVED
	"movq %rsp, (%rdi)\n\t"
	"movq 8(%rsi), %rax\n\t"
	"wrfsbase %rax\n\t"
	"movq (%rsi), %rsp\n\t" POP_CALLEE_SAVED
	"ret\n"
	".size sim_swap_wrfsbase, .-sim_swap_wrfsbase\n"
	".globl sim_swap_arch_prctl\n"
	".type sim_swap_arch_prctl,@function\n"
	"sim_swap_arch_prctl:\n\t" PUSH_CALLEE_SAVED
	"movq %rsp, (%rdi)\n\t"
	"movq %rsi, %r12\n\t"
	"movl $" NUMBER_TEXT(SYS_arch_prctl) ", %eax\n\t"
	"movl $" NUMBER_TEXT(ARCH_SET_FS_CODE) ", %edi\n\t"
	"movq 8(%r12), %rsi\n\t"
	"syscall\n\t"
	"movq (%r12), %rsp\n\t" POP_CALLEE_SAVED
	"ret\n"
	".size sim_swap_arch_prctl, .-sim_swap_arch_prctl\n"
	".globl sim_context_entry\n"
	".type sim_context_entry,@function\n"
	"sim_context_entry:\n\t"
	"movq %r12, %rdi\n\t"
	"callq *%r13\n\t"
	"ud2\n" /* the function never returns */
	".size sim_context_entry, .-sim_context_entry\n");

void sim_swap_wrfsbase(struct sim_context *save, const struct sim_context *load);
void sim_swap_arch_prctl(struct sim_context *save, const struct sim_context *load);
void sim_context_entry(void);

static void (*swap)(struct sim_context *, const struct sim_context *);

bool sim_contexts_supported(const char **why)
{
	if (swap != NULL)
		return true;
	/* LOCKLAB_SIM_FSBASE=arch_prctl takes the fallback where wrfsbase works (a test). */
	const char *way = getenv("LOCKLAB_SIM_FSBASE");
	bool system_call = way != NULL && strcmp(way, "arch_prctl") == 0;
	if (way != NULL && *way != '\0' && !system_call && strcmp(way, "wrfsbase") != 0)
		sim_fatal("LOCKLAB_SIM_FSBASE is wrfsbase or arch_prctl, not '%s'", way);
	if (!system_call && (getauxval(AT_HWCAP2) & HWCAP2_FSGSBASE_BIT)) {
		swap = sim_swap_wrfsbase;
		return true;
	}
	/* The fallback is a system call per hand-over: check once that the kernel takes it. */
	void *mine = __builtin_thread_pointer();
	if (syscall(SYS_arch_prctl, ARCH_SET_FS_CODE, mine) != 0) {
		*why = "this kernel refuses arch_prctl(ARCH_SET_FS)";
		return false;
	}
	swap = sim_swap_arch_prctl;
	return true;
}

void sim_context_swap(struct sim_context *save, const struct sim_context *load) { swap(save, load); }

void sim_context_prepare(struct sim_context *context, void *stack, size_t size,
			 void (*function)(void *), void *argument)
{
	uint64_t *top = (uint64_t *)(((uintptr_t)stack + size) & ~(uintptr_t)15);
	/* Popped in this order: r15, r14, r13, r12, rbx, rbp, then the return address; the
	 * stack is then 16-byte aligned for context_entry's call, as the ABI wants at a call. */
	uint64_t *sp = top - 7;
	sp[0] = 0;                              /* r15 */
	sp[1] = 0;                              /* r14 */
	sp[2] = (uint64_t)(uintptr_t)function; /* r13 */
	sp[3] = (uint64_t)(uintptr_t)argument; /* r12 */
	sp[4] = 0;                              /* rbx */
	sp[5] = 0;                              /* rbp */
	sp[6] = (uint64_t)(uintptr_t)sim_context_entry;
	context->stack_pointer = sp;
	context->thread_pointer = __builtin_thread_pointer();
}

#else

bool sim_contexts_supported(const char **why)
{
	*why = "hand-overs in user space are written for x86-64 only";
	return false;
}

void sim_context_swap(struct sim_context *save, const struct sim_context *load)
{
	(void)save;
	(void)load;
	sim_fatal("no user-space contexts on this architecture");
}

void sim_context_prepare(struct sim_context *context, void *stack, size_t size,
			 void (*function)(void *), void *argument)
{
	(void)context;
	(void)stack;
	(void)size;
	(void)function;
	(void)argument;
	sim_fatal("no user-space contexts on this architecture");
}

#endif

/* A parked host thread's own stack: pages of its own, so that the heap and every other
 * mapping keep their offsets within a page whichever way the runtime hands over. */
void *sim_park_stack_new(size_t size)
{
	void *stack = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (stack == MAP_FAILED)
		sim_fatal("out of memory for a parked thread's stack");
	return stack;
}
