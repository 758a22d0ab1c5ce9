/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * bell: how one thread sleeps until another has work for it. A bell is an eventfd and an
 * "asleep" word. The sleeper arms the bell (stores asleep, then a full fence), looks at
 * its queues once more, and only then waits on the fd; a waker enqueues its work, then
 * rings (a full fence, then a load of asleep). Either the sleeper's last look sees the
 * work or the waker sees it asleep. The first waker takes asleep back to 0, so a sleep
 * costs at most one eventfd write however many wakers there are, and a thread that runs
 * costs its wakers a fence and a load. A ring that comes before the sleeper armed is not
 * kept: every wait is bounded by a timeout. Pure C (Linux), no DPDK.
 *
 * Used by the workers (sl_worker_wake) and the persistence lcore (its submitters).
 */
#ifndef SL_BELL_H
#define SL_BELL_H

#include <stdint.h>

struct sl_bell {
	uint32_t asleep;	/* 1 from sl_bell_arm until a ring or sl_bell_disarm */
	int fd;			/* eventfd, nonblocking; -1 when there is no bell */
};

/**
 * Create the eventfd. Returns 0 or a negative errno (the bell then has fd -1, and rings
 * and waits on it do nothing). Calling context: the thread that sets up the sleeper.
 */
int
sl_bell_open(struct sl_bell *b);

/** Close the eventfd (fd -1 is a no-op). Calling context: after the sleeper has stopped. */
void
sl_bell_close(struct sl_bell *b);

/**
 * Mark the sleeper asleep, with a full fence: the caller's next look at its queues comes
 * after. Calling context: the sleeper.
 */
static inline void
sl_bell_arm(struct sl_bell *b)
{
	__atomic_store_n(&b->asleep, 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
}

/** The sleeper is awake again. Calling context: the sleeper, after its wait. */
static inline void
sl_bell_disarm(struct sl_bell *b)
{
	__atomic_store_n(&b->asleep, 0, __ATOMIC_RELAXED);
}

/**
 * Wait up to ns nanoseconds for a ring (ppoll), and take it. Returns 1 when the bell rang,
 * else 0 (timeout, a signal, or no bell: then it returns at once). Calling context: the
 * sleeper, between sl_bell_arm and sl_bell_disarm.
 */
int
sl_bell_wait(const struct sl_bell *b, uint64_t ns);

/** Take a ring that an epoll set reported on b->fd. Calling context: the sleeper. */
void
sl_bell_drain(const struct sl_bell *b);

/**
 * Wake the sleeper if it is asleep (or about to be), after the caller's enqueue: one
 * eventfd write per sleep, nothing else when it runs. Calling context: any thread.
 */
void
sl_bell_ring(struct sl_bell *b);

/**
 * Write the eventfd whether or not the sleeper is armed, e.g. to end its last wait after
 * the quit flag was set. Calling context: any thread.
 */
void
sl_bell_kick(const struct sl_bell *b);

#endif /* SL_BELL_H */
