/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * Unit test of the bell (dataplane/base/bell.c) that wakes a napping worker or persistence
 * lcore: a ring reaches only an armed sleeper, costs one eventfd write per sleep however
 * many wakers ring, and is never lost between the sleeper's last look and its wait (the
 * handshake below would then wait out its timeout and fail).
 */
#include <pthread.h>
#include <stdint.h>
#include <unistd.h>

#include "bell.h"
#include "check.h"

#define ROUNDS 20000
#define LONG_NS (10ull * 1000000000ull)	/* a lost ring fails the round instead of hanging */

static struct sl_bell bell;
static uint32_t work;		/* the "queue": rounds handed to the sleeper */
static uint32_t missed;
static uint32_t waits;		/* rounds the sleeper slept for */

static void *
sleeper(void *arg)
{
	uint32_t seen = 0;

	(void)arg;
	while (seen < ROUNDS) {
		sl_bell_arm(&bell);
		if (__atomic_load_n(&work, __ATOMIC_RELAXED) != seen) {
			sl_bell_disarm(&bell);
			seen++;
			continue;
		}
		/* the waker rings after every round: only a lost ring times out */
		waits++;
		if (!sl_bell_wait(&bell, LONG_NS)) {
			__atomic_store_n(&missed, 1, __ATOMIC_RELAXED);
			break;
		}
		sl_bell_disarm(&bell);
	}
	return NULL;
}

int
main(void)
{
	struct sl_bell none = {.fd = -1};
	uint64_t cnt;
	pthread_t t;
	uint32_t i;

	CHECK(sl_bell_open(&bell) == 0 && bell.fd >= 0, "open: an eventfd");
	CHECK(sl_bell_wait(&bell, 1000) == 0, "nothing rung: the wait times out");
	sl_bell_ring(&bell);
	CHECK(read(bell.fd, &cnt, sizeof(cnt)) < 0, "a ring while nobody sleeps writes nothing");
	sl_bell_arm(&bell);
	sl_bell_ring(&bell);
	sl_bell_ring(&bell);
	sl_bell_ring(&bell);
	CHECK(bell.asleep == 0, "the first ring takes asleep back to 0");
	CHECK(read(bell.fd, &cnt, sizeof(cnt)) == sizeof(cnt) && cnt == 1,
	      "three rings of one sleep: one write (count %llu)", (unsigned long long)cnt);
	sl_bell_arm(&bell);
	sl_bell_ring(&bell);
	CHECK(sl_bell_wait(&bell, LONG_NS) == 1, "an armed sleeper's wait ends on the ring");
	sl_bell_disarm(&bell);
	CHECK(sl_bell_wait(&bell, 1000) == 0, "the wait took the ring");
	sl_bell_kick(&bell);
	CHECK(sl_bell_wait(&bell, LONG_NS) == 1, "a kick rings an unarmed bell");
	sl_bell_ring(&none);
	sl_bell_kick(&none);
	sl_bell_drain(&none);
	CHECK(sl_bell_wait(&none, LONG_NS) == 0, "no bell (fd -1): everything is a no-op");

	/* the handshake: enqueue then ring, against arm then look then wait */
	CHECK(pthread_create(&t, NULL, sleeper, NULL) == 0, "sleeper thread");
	for (i = 1; i <= ROUNDS; i++) {
		__atomic_store_n(&work, i, __ATOMIC_RELAXED);
		sl_bell_ring(&bell);
		/* let the sleeper reach its next arm before the next round (only this thread
		 * writes work, so it is i all along) */
		while (i < ROUNDS && __atomic_load_n(&bell.asleep, __ATOMIC_RELAXED) == 0 &&
		       !__atomic_load_n(&missed, __ATOMIC_RELAXED))
			;
	}
	pthread_join(t, NULL);
	CHECK(missed == 0, "%u rounds of enqueue-and-ring: no ring lost", ROUNDS);
	CHECK(waits > 0, "the sleeper slept in %u of them", waits);
	sl_bell_close(&bell);
	CHECK(bell.fd == -1, "close");
	return check_report();
}
