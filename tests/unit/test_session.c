/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * Unit test of the session table (dataplane/session.c): configuration checks, create and
 * lookup (the id names its slot; another id on that slot is refused), the capacity
 * limit, expiry of silent sessions by time (a session in use stays, a worker clock ahead
 * of the control thread's does not expire anything), CLS (closing) sessions, slot reuse
 * with a new id, and creation from two lcores at once. Times are plain tsc values handed
 * in by the test. EAL with --no-huge (the table lives in rte_malloc memory).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <urcu-qsbr.h>

#include "session.h"
#include "check.h"
#include "fixture.h"

#define T 6400			/* timeout, tsc */
#define BASE 1000000ull		/* a "now" far from 0 */

static const uint8_t mac[6] = {2, 0, 0, 0, 0, 9};

static struct sl_session_table *
open_table(uint32_t n)
{
	struct sl_session_conf c = {.max_sessions = n, .timeout_tsc = T,
				    .socket_id = SOCKET_ID_ANY};

	return sl_session_open(&c);
}

static struct sl_session *
create(struct sl_session_table *t, uint32_t ip, uint64_t now)
{
	return sl_session_create(t, ip, 4000, mac, 1, 16, 77, 0, 0, 0, now);
}

static void
test_conf(void)
{
	struct sl_session_conf c = {.max_sessions = 4, .timeout_tsc = 0,
				    .socket_id = SOCKET_ID_ANY};

	rte_errno = 0;
	CHECK(sl_session_open(NULL) == NULL && rte_errno == EINVAL, "no conf: EINVAL");
	rte_errno = 0;
	CHECK(sl_session_open(&c) == NULL && rte_errno == EINVAL, "timeout 0: EINVAL");
	c.timeout_tsc = T;
	c.max_sessions = 0;
	rte_errno = 0;
	CHECK(sl_session_open(&c) == NULL && rte_errno == EINVAL, "0 sessions: EINVAL");
	c.max_sessions = SL_SESSION_MAX;
	rte_errno = 0;
	CHECK(sl_session_open(&c) == NULL && rte_errno == EINVAL,
	      "SL_SESSION_MAX sessions (one more than the slot bits allow): EINVAL");
	sl_session_close(NULL);
}

static void
test_create_get(void)
{
	struct sl_session_table *t = open_table(4), *t2 = open_table(4);
	static const uint8_t hop2[6] = {0x02, 0, 0, 0, 0x02, 0x01};
	struct sl_session *s, *g;
	uint32_t slot = 99;
	uint8_t m[6];

	CHECK(t != NULL && t2 != NULL, "two tables open side by side");
	if (t == NULL || t2 == NULL)
		return;
	CHECK(sl_session_capacity(t) == 4 && sl_session_count(t) == 0, "capacity 4, empty");
	s = create(t, 0x0a000002, BASE);
	CHECK(s != NULL && s->id != 0 && (s->id >> SL_SESSION_SLOT_BITS) != 0,
	      "create: an id with random high bits (%" PRIx64 ")", s ? s->id : 0);
	if (s == NULL)
		return;
	sl_session_mac(s, m);
	CHECK(s->ip == 0x0a000002 && s->udp_port == 4000 && memcmp(m, mac, 6) == 0 &&
		      s->port_id == 1 && s->window == 16 && s->client_info == 77 &&
		      s->created == BASE && s->last_seen == BASE && !s->closing,
	      "the client's address, window and info are kept");
	g = sl_session_get(t, s->id, &slot, BASE + 1);
	CHECK(g == s && slot == (uint32_t)(s->id & (SL_SESSION_MAX - 1)) && slot < 4,
	      "get by id: the same session, its slot from the id's low bits (%u)", slot);
	CHECK(sl_session_peek(t, slot, s->id) == s, "peek by slot and id");
	sl_session_note_mac(s, hop2);
	sl_session_mac(s, m);
	CHECK(memcmp(m, hop2, 6) == 0, "a request from another next hop: MSG frames go there");
	sl_session_note_mac(s, mac);
	CHECK(sl_session_get(t, s->id ^ (1ull << SL_SESSION_SLOT_BITS), &slot, BASE) == NULL,
	      "get: another id on the same slot is refused");
	CHECK(sl_session_peek(t, slot, s->id + (1ull << SL_SESSION_SLOT_BITS)) == NULL &&
		      sl_session_peek(t, 4, s->id) == NULL && sl_session_peek(t, slot, 0) == NULL,
	      "peek: wrong id, slot past the table, id 0: NULL");
	CHECK(sl_session_get(t, 0, &slot, BASE) == NULL &&
		      sl_session_get(t, (s->id & ~(uint64_t)(SL_SESSION_MAX - 1)) | 5, &slot,
				     BASE) == NULL,
	      "get: id 0, and an id naming a slot past the table: NULL");
	CHECK(sl_session_get(t2, s->id, &slot, BASE) == NULL, "the other table does not know it");
	CHECK(sl_session_count(t) == 1 && sl_session_count(t2) == 0 &&
		      sl_session_at(t, slot) == s && sl_session_at(t, (slot + 1) % 4) == NULL &&
		      sl_session_at(t, 4) == NULL,
	      "count and listing: one live session");
	sl_session_close(t);
	sl_session_close(t2);
}

static void
test_capacity(void)
{
	struct sl_session_table *t = open_table(4);
	struct sl_session *s[4];
	uint32_t i, j, seen = 0, distinct = 1;

	if (t == NULL)
		return;
	for (i = 0; i < 4; i++) {
		s[i] = create(t, i, BASE);
		if (s[i] != NULL)
			seen |= 1u << (s[i]->id & (SL_SESSION_MAX - 1));
	}
	for (i = 0; i < 4; i++)
		for (j = 0; j < i; j++)
			distinct &= s[i] != NULL && s[j] != NULL && s[i]->id != s[j]->id;
	CHECK(seen == 0xf && distinct, "4 sessions fill the 4 slots with distinct ids");
	CHECK(create(t, 9, BASE) == NULL && sl_session_count(t) == 4,
	      "a 5th session: NULL (table full), count stays 4");
	sl_session_close(t);
}

static void
test_expiry(void)
{
	struct sl_session_table *t = open_table(4);
	struct sl_session *s[4], *again;
	uint64_t old[4];
	uint32_t slot, i, live;
	uint64_t now;
	int ok;

	if (t == NULL)
		return;
	for (i = 0; i < 4; i++) {
		s[i] = create(t, i, BASE);
		old[i] = s[i] != NULL ? s[i]->id : 0;
	}
	CHECK(sl_session_expire(t, BASE + T - 1) == 0 && sl_session_count(t) == 4,
	      "nothing expires before the timeout");
	/* session 0 is in use: a request every half timeout keeps it */
	ok = 1;
	for (now = BASE + T / 2; now <= BASE + 4 * T; now += T / 2) {
		ok &= sl_session_get(t, old[0], &slot, now) == s[0];
		if (now == BASE + T)
			ok &= sl_session_expire(t, now) == 3;
		else
			ok &= sl_session_expire(t, now) == 0;
	}
	CHECK(ok && sl_session_count(t) == 1,
	      "silent sessions expire at the timeout; one in use every T/2 lives on");
	live = 0;
	for (i = 0; i < 4; i++)
		live += sl_session_at(t, old[i] & (SL_SESSION_MAX - 1)) != NULL;
	CHECK(live == 1 && sl_session_get(t, old[1], &slot, now) == NULL &&
		      sl_session_peek(t, old[2] & (SL_SESSION_MAX - 1), old[2]) == NULL,
	      "expired ids are unknown and their slots are not listed");

	/* the expired slots are free again, under new ids */
	ok = 1;
	for (i = 1; i < 4; i++) {
		again = create(t, 10 + i, now);
		ok &= again != NULL;
		ok &= again != NULL && again->id != old[1] && again->id != old[2] &&
		      again->id != old[3] && again->ip == 10 + i && again->created == now;
	}
	CHECK(ok && sl_session_count(t) == 4 && create(t, 20, now) == NULL,
	      "3 new sessions take the freed slots with new ids; then full again");
	for (i = 1; i < 4; i++)
		ok &= sl_session_get(t, old[i], &slot, now) == NULL;
	CHECK(ok, "the old ids stay unknown on the reused slots");

	/* a worker clock ahead of the control thread's: the session is not silent */
	ok = sl_session_get(t, old[0], &slot, now + 10 * T) == s[0];
	CHECK(ok && sl_session_expire(t, now + T - 1) == 0 && sl_session_at(t, slot) != NULL,
	      "last_seen ahead of the expiry's now: not expired");
	sl_session_close(t);
}

static void
test_closing(void)
{
	struct sl_session_table *t = open_table(4);
	struct sl_session *a, *b;
	uint32_t slot;
	uint64_t id;

	if (t == NULL)
		return;
	a = create(t, 1, BASE);
	b = create(t, 2, BASE);
	if (a == NULL || b == NULL)
		return;
	id = a->id;
	sl_session_mark_closing(a);
	CHECK(sl_session_get(t, id, &slot, BASE) == NULL &&
		      sl_session_peek(t, id & (SL_SESSION_MAX - 1), id) == a,
	      "closing: get refuses it at once (peek still sees the slot until expiry)");
	CHECK(sl_session_expire(t, BASE + 1) == 1 && sl_session_count(t) == 1 &&
		      sl_session_peek(t, id & (SL_SESSION_MAX - 1), id) == NULL &&
		      sl_session_get(t, b->id, &slot, BASE + 1) == b,
	      "the next expiry takes the closing session before its timeout, not the other");
	sl_session_close(t);
}

/* Two lcores create sessions at once until the table is full. */
static struct sl_session_table *race_t;
static uint64_t race_ids[2][1024];
static uint32_t race_n[2];

static int
race_create(void *arg)
{
	uintptr_t who = (uintptr_t)arg;
	struct sl_session *s;

	while ((s = create(race_t, (uint32_t)who, BASE)) != NULL && race_n[who] < 1024)
		race_ids[who][race_n[who]++] = s->id;
	return 0;
}

static void
test_concurrent_create(void)
{
	unsigned int lcore = rte_get_next_lcore(-1, 1, 0);
	static uint8_t used[1024];
	uint32_t i, w, dup = 0;

	race_t = open_table(1024);
	if (race_t == NULL || lcore >= RTE_MAX_LCORE)
		return;
	rte_eal_remote_launch(race_create, (void *)(uintptr_t)1, lcore);
	race_create((void *)(uintptr_t)0);
	rte_eal_wait_lcore(lcore);
	for (w = 0; w < 2; w++)
		for (i = 0; i < race_n[w]; i++)
			dup += used[race_ids[w][i] & 1023]++ != 0;
	CHECK(race_n[0] + race_n[1] == 1024 && dup == 0 && sl_session_count(race_t) == 1024,
	      "two lcores creating at once: 1024 sessions (%u + %u), each slot once",
	      race_n[0], race_n[1]);
	sl_session_close(race_t);
}

/* Hardening: a session answers only to the address and port that opened it; one address
 * holds at most max_per_source sessions (others can still connect); ids are not a
 * sequence (their random part differs between two tables filled the same way). */
static void
test_source(void)
{
	struct sl_session_conf c = {.max_sessions = 64, .max_per_source = 3, .timeout_tsc = T,
				    .socket_id = SOCKET_ID_ANY};
	struct sl_session_table *t = sl_session_open(&c), *u = sl_session_open(&c);
	struct sl_session *s[4];
	uint64_t a[8], b[8];
	uint32_t slot, i, same = 0, lowbits = 0;

	if (t == NULL || u == NULL) {
		CHECK(0, "open two tables");
		return;
	}
	s[0] = create(t, 0x0a000001, BASE);
	CHECK(s[0] != NULL &&
		      sl_session_get_src(t, s[0]->id, 0x0a000001, 4000, &slot, BASE) == s[0],
	      "the opening address and port find their session");
	CHECK(sl_session_get_src(t, s[0]->id, 0x0a000002, 4000, &slot, BASE) == NULL,
	      "another address with the same id finds nothing");
	CHECK(sl_session_get_src(t, s[0]->id, 0x0a000001, 4001, &slot, BASE) == NULL,
	      "another port of the same address finds nothing");
	s[1] = create(t, 0x0a000001, BASE);
	s[2] = create(t, 0x0a000001, BASE);
	s[3] = create(t, 0x0a000001, BASE);
	CHECK(s[1] != NULL && s[2] != NULL && s[3] == NULL && rte_errno == EDQUOT,
	      "a 4th session from one address with max_per_source 3: refused (EDQUOT)");
	CHECK(create(t, 0x0a000002, BASE) != NULL, "another address still gets a session");
	sl_session_mark_closing(s[1]);
	sl_session_expire(t, BASE);
	CHECK(create(t, 0x0a000001, BASE) != NULL,
	      "once one of its sessions is gone, the address may open another");
	for (i = 0; i < 8; i++) {
		struct sl_session *x = create(u, 0x0b000000 + i, BASE);
		struct sl_session *y = create(t, 0x0c000000 + i, BASE);

		a[i] = x != NULL ? x->id >> SL_SESSION_SLOT_BITS : 0;
		b[i] = y != NULL ? y->id >> SL_SESSION_SLOT_BITS : 1;
		same += a[i] == b[i];
		lowbits += i > 0 && a[i] == a[i - 1] + 1;
	}
	CHECK(same == 0 && lowbits == 0,
	      "ids' random parts differ between tables and do not count up");
	sl_session_close(t);
	sl_session_close(u);
}

int
main(int argc, char **argv)
{
	(void)argc;
	if (fx_eal_init(argv[0], "session", 2) != 0)
		return 1;
	rcu_register_thread();	/* sl_session_expire waits for a grace period */
	test_conf();
	test_create_get();
	test_capacity();
	test_expiry();
	test_closing();
	test_concurrent_create();
	test_source();
	rcu_unregister_thread();
	rte_eal_cleanup();
	return check_report();
}
