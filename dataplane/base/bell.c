/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * bell: an eventfd and an asleep word (see bell.h for the protocol).
 */
#include <errno.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "bell.h"

int
sl_bell_open(struct sl_bell *b)
{
	b->asleep = 0;
	b->fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	return b->fd < 0 ? -errno : 0;
}

void
sl_bell_close(struct sl_bell *b)
{
	if (b->fd >= 0)
		close(b->fd);
	b->fd = -1;
}

int
sl_bell_wait(const struct sl_bell *b, uint64_t ns)
{
	struct pollfd pfd = {.fd = b->fd, .events = POLLIN};
	struct timespec ts = {.tv_sec = (time_t)(ns / 1000000000u),
			      .tv_nsec = (long)(ns % 1000000000u)};
	uint64_t cnt;

	if (b->fd < 0)
		return 0;
	return ppoll(&pfd, 1, &ts, NULL) > 0 && read(b->fd, &cnt, sizeof(cnt)) > 0;
}

void
sl_bell_drain(const struct sl_bell *b)
{
	uint64_t cnt;

	if (b->fd >= 0)
		(void)!read(b->fd, &cnt, sizeof(cnt));
}

void
sl_bell_ring(struct sl_bell *b)
{
	uint64_t one = 1;

	/* pairs with sl_bell_arm's fence: the caller's enqueue before this load of asleep,
	 * the sleeper's store of asleep before its last look */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (b->fd >= 0 && __atomic_load_n(&b->asleep, __ATOMIC_RELAXED) &&
	    __atomic_exchange_n(&b->asleep, 0, __ATOMIC_RELAXED))
		(void)!write(b->fd, &one, sizeof(one));
}

void
sl_bell_kick(const struct sl_bell *b)
{
	uint64_t one = 1;

	if (b->fd >= 0)
		(void)!write(b->fd, &one, sizeof(one));
}
