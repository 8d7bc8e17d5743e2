/* SPDX-License-Identifier: MIT */
/*
 * POSIX thread locks from the C library, as peers: pthread_mutex, pthread_mutex_pi
 * (PTHREAD_PRIO_INHERIT, the peer of rtmutex), pthread_spinlock and pthread_rwlock.
 *
 * Source: IEEE Std 1003.1-2017 (POSIX); the implementation measured is the system's C
 * library (glibc on Debian: nptl/pthread_mutex_lock.c, pthread_spin_lock.c,
 * pthread_rwlock_common.c). pthread_mutex is the default (PTHREAD_MUTEX_NORMAL-like) type;
 * pthread_rwlock uses the default policy, which in glibc prefers readers.
 *
 * These are not ours to patch: they are the baselines a new lock has to beat.
 */
#include <pthread.h>

#include <locklab/lock.h>

static const struct lock_tunable no_tunables[] = { LOCK_TUNABLES_END };

/* ---- pthread_mutex ------------------------------------------------------------------------ */

static int pthread_mutex_ops_init(void *lockp, const struct lock_init_args *args)
{
	(void)args;
	return -pthread_mutex_init(lockp, NULL);
}

static void pthread_mutex_ops_destroy(void *lockp) { pthread_mutex_destroy(lockp); }

static void pthread_mutex_ops_lock(void *lockp, struct lock_thread *self)
{
	(void)self;
	pthread_mutex_lock(lockp);
}

static void pthread_mutex_ops_unlock(void *lockp, struct lock_thread *self)
{
	(void)self;
	pthread_mutex_unlock(lockp);
}

static bool pthread_mutex_ops_trylock(void *lockp, struct lock_thread *self)
{
	(void)self;
	return pthread_mutex_trylock(lockp) == 0;
}

const struct lock_ops pthread_mutex_ops = {
	.abi_version = LOCKLAB_ABI_VERSION,
	.name = "pthread_mutex",
	.family = "peer-libc",
	.summary = "the C library's default pthread_mutex_t",
	.source = "POSIX.1-2017; glibc nptl",
	.flags = LOCK_SLEEPS | LOCK_EXTERNAL,
	.lock_size = sizeof(pthread_mutex_t),
	.tunables = no_tunables,
	.init = pthread_mutex_ops_init,
	.destroy = pthread_mutex_ops_destroy,
	.lock = pthread_mutex_ops_lock,
	.unlock = pthread_mutex_ops_unlock,
	.trylock = pthread_mutex_ops_trylock,
};

/* ---- pthread_mutex_pi: priority inheritance (glibc: the kernel's PI futex underneath) -------- */

static int pthread_mutex_pi_ops_init(void *lockp, const struct lock_init_args *args)
{
	pthread_mutexattr_t attr;
	int err;
	(void)args;
	if ((err = pthread_mutexattr_init(&attr)) != 0)
		return -err;
	err = pthread_mutexattr_setprotocol(&attr, PTHREAD_PRIO_INHERIT);
	if (err == 0)
		err = pthread_mutex_init(lockp, &attr);
	pthread_mutexattr_destroy(&attr);
	return -err;
}

const struct lock_ops pthread_mutex_pi_ops = {
	.abi_version = LOCKLAB_ABI_VERSION,
	.name = "pthread_mutex_pi",
	.family = "peer-libc",
	.summary = "the C library's pthread_mutex_t with PTHREAD_PRIO_INHERIT",
	.source = "POSIX.1-2017 (PTHREAD_PRIO_INHERIT); glibc nptl over FUTEX_LOCK_PI",
	.flags = LOCK_SLEEPS | LOCK_PRIO_INHERIT | LOCK_EXTERNAL,
	.lock_size = sizeof(pthread_mutex_t),
	.tunables = no_tunables,
	.init = pthread_mutex_pi_ops_init,
	.destroy = pthread_mutex_ops_destroy,
	.lock = pthread_mutex_ops_lock,
	.unlock = pthread_mutex_ops_unlock,
	.trylock = pthread_mutex_ops_trylock,
};

/* ---- pthread_spinlock --------------------------------------------------------------------- */

static int pthread_spin_ops_init(void *lockp, const struct lock_init_args *args)
{
	(void)args;
	return -pthread_spin_init(lockp, PTHREAD_PROCESS_PRIVATE);
}

static void pthread_spin_ops_destroy(void *lockp) { pthread_spin_destroy(lockp); }

static void pthread_spin_ops_lock(void *lockp, struct lock_thread *self)
{
	(void)self;
	pthread_spin_lock(lockp);
}

static void pthread_spin_ops_unlock(void *lockp, struct lock_thread *self)
{
	(void)self;
	pthread_spin_unlock(lockp);
}

static bool pthread_spin_ops_trylock(void *lockp, struct lock_thread *self)
{
	(void)self;
	return pthread_spin_trylock(lockp) == 0;
}

const struct lock_ops pthread_spinlock_ops = {
	.abi_version = LOCKLAB_ABI_VERSION,
	.name = "pthread_spinlock",
	.family = "peer-libc",
	.summary = "the C library's pthread_spinlock_t",
	.source = "POSIX.1-2017; glibc nptl",
	.flags = LOCK_SPINS | LOCK_EXTERNAL,
	.lock_size = sizeof(pthread_spinlock_t),
	.tunables = no_tunables,
	.init = pthread_spin_ops_init,
	.destroy = pthread_spin_ops_destroy,
	.lock = pthread_spin_ops_lock,
	.unlock = pthread_spin_ops_unlock,
	.trylock = pthread_spin_ops_trylock,
};

/* ---- pthread_rwlock ----------------------------------------------------------------------- */

static int pthread_rwlock_ops_init(void *lockp, const struct lock_init_args *args)
{
	(void)args;
	return -pthread_rwlock_init(lockp, NULL);
}

static void pthread_rwlock_ops_destroy(void *lockp) { pthread_rwlock_destroy(lockp); }

static void pthread_rwlock_ops_write_lock(void *lockp, struct lock_thread *self)
{
	(void)self;
	pthread_rwlock_wrlock(lockp);
}

static void pthread_rwlock_ops_unlock(void *lockp, struct lock_thread *self)
{
	(void)self;
	pthread_rwlock_unlock(lockp);
}

static bool pthread_rwlock_ops_trylock(void *lockp, struct lock_thread *self)
{
	(void)self;
	return pthread_rwlock_trywrlock(lockp) == 0;
}

static void pthread_rwlock_ops_read_lock(void *lockp, struct lock_thread *self)
{
	(void)self;
	pthread_rwlock_rdlock(lockp);
}

const struct lock_ops pthread_rwlock_ops = {
	.abi_version = LOCKLAB_ABI_VERSION,
	.name = "pthread_rwlock",
	.family = "peer-libc",
	.summary = "the C library's pthread_rwlock_t (default policy: readers preferred)",
	.source = "POSIX.1-2017; glibc nptl",
	.flags = LOCK_SLEEPS | LOCK_READER_WRITER | LOCK_EXTERNAL,
	.lock_size = sizeof(pthread_rwlock_t),
	.tunables = no_tunables,
	.init = pthread_rwlock_ops_init,
	.destroy = pthread_rwlock_ops_destroy,
	.lock = pthread_rwlock_ops_write_lock,
	.unlock = pthread_rwlock_ops_unlock,
	.trylock = pthread_rwlock_ops_trylock,
	.read_lock = pthread_rwlock_ops_read_lock,
	.read_unlock = pthread_rwlock_ops_unlock,
};
