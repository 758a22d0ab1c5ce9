/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * Unit test of the channel consumer logic (dataplane/channel.c), including a randomized
 * test against a reference model.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "channel.h"
#include "err.h"
#include "check.h"


#define TIMEOUT 1000
#define MAX_REQ 5000

static struct sl_channel *
mk(uint32_t window, int ordered, uint64_t start)
{
	struct sl_channel_conf c = {
		.name = "chan", .window = window, .msg_timeout_ns = TIMEOUT,
		.max_req_delay_ns = MAX_REQ, .ordered = ordered, .start_id = start,
	};
	struct sl_channel *ch = sl_channel_open(&c);

	if (ch == NULL) {
		printf("FAIL - sl_channel_open: errno %d\n", errno);
		exit(EXIT_FAILURE);
	}
	return ch;
}

static struct sl_channel_stats
stats(const struct sl_channel *ch)
{
	struct sl_channel_stats st;

	sl_channel_get_stats(ch, &st);
	return st;
}

/* next() that must deliver: returns the id, 0 if nothing was delivered. */
static uint64_t
nx(struct sl_channel *ch, uint64_t end, uint64_t now, struct sl_channel_delivery *d)
{
	struct sl_channel_delivery tmp;

	if (d == NULL)
		d = &tmp;
	memset(d, 0, sizeof(*d));
	return sl_channel_next(ch, end, now, d) == 1 ? d->id : 0;
}

static void
test_conf(void)
{
	char long_name[SL_CHANNEL_NAME_MAX + 2];
	struct sl_channel_conf c = {
		.name = "c", .window = 8, .msg_timeout_ns = 1, .start_id = 1,
	};
	struct sl_channel_conf b;
	struct sl_channel *ch;

	memset(long_name, 'x', sizeof(long_name) - 1);
	long_name[sizeof(long_name) - 1] = '\0';

#define BAD(field, val, what) do {						\
	b = c;									\
	b.field = val;								\
	errno = 0;								\
	ch = sl_channel_open(&b);						\
	CHECK(ch == NULL && errno == EINVAL, "open refuses %s", what);		\
	sl_channel_close(ch);							\
} while (0)
	BAD(window, 0, "window 0");
	BAD(window, 3, "window 3 (not a power of two)");
	BAD(window, 131072, "window 131072");
	BAD(name, "", "an empty name");
	BAD(name, NULL, "a NULL name");
	BAD(name, long_name, "a 65-byte name");
	BAD(msg_timeout_ns, 0, "msg_timeout 0");
	BAD(start_id, 0, "start_id 0");
#undef BAD
	errno = 0;
	CHECK(sl_channel_open(NULL) == NULL && errno == EINVAL, "open refuses a NULL conf");

	long_name[SL_CHANNEL_NAME_MAX] = '\0';
	b = c;
	b.name = long_name;
	b.window = 65536;
	b.ordered = 1;
	b.ephemeral = 1;
	b.start_id = 77;
	ch = sl_channel_open(&b);
	CHECK(ch != NULL && strcmp(sl_channel_name(ch), long_name) == 0 &&
	      sl_channel_is_ordered(ch) && sl_channel_is_ephemeral(ch),
	      "64-byte name, window 65536, ordered+ephemeral accepted");
	CHECK(ch != NULL && sl_channel_confirmed(ch) == 77 && sl_channel_cursor(ch) == 77,
	      "start_id sets confirmed and cursor");
	sl_channel_close(ch);
	b.window = 1;
	b.ordered = 0;
	b.ephemeral = 0;
	ch = sl_channel_open(&b);
	CHECK(ch != NULL && !sl_channel_is_ordered(ch) && !sl_channel_is_ephemeral(ch),
	      "window 1 accepted");
	sl_channel_close(ch);
}

static void
test_basic(void)
{
	struct sl_channel *ch = mk(16, 0, 1);
	struct sl_channel_delivery d;
	const struct sl_channel_sub *sb;
	struct sl_channel_stats st;
	int s, ok;
	uint64_t i;

	CHECK(nx(ch, 10, 0, NULL) == 0, "no subscriber: nothing delivered");
	s = sl_channel_sub_add(ch, 7, 3, 500, 3);
	CHECK(s >= 0 && sl_channel_sub_count(ch) == 1, "sub_add returns an index (%d)", s);
	sb = sl_channel_sub_get(ch, s);
	CHECK(sb != NULL && sb->session == 7 && sb->session_slot == 3 && sb->sub_id == 500 &&
	      sb->rdy == 3, "sub_get shows session, slot, sub_id, rdy");
	CHECK(sl_channel_sub_find(ch, 500) == s, "sub_find by sub_id");
	CHECK(sl_channel_sub_find(ch, 501) == -SL_E_CHANNEL, "sub_find unknown -SL_E_CHANNEL");

	CHECK(nx(ch, 0, 0, NULL) == 0, "end_id 0: nothing to deliver");
	ok = 1;
	for (i = 1; i <= 3; i++)
		ok &= nx(ch, 10, 0, &d) == i && d.attempts == 1 && d.sub == s &&
		      sb->rdy == 3 && sb->in_flight == i;
	CHECK(ok, "ids 1..3 delivered in order, attempts 1, rdy stays 3");
	CHECK(nx(ch, 10, 0, NULL) == 0 && sb->rdy == 3, "3 in flight = rdy 3: nothing delivered");
	CHECK(sb->delivered == 3 && sb->in_flight == 3, "sub counts 3 delivered, 3 in flight");
	st = stats(ch);
	CHECK(st.delivered == 3 && st.in_flight == 3 && st.finished == 0,
	      "stats: 3 delivered, 3 in flight");
	CHECK(sl_channel_cursor(ch) == 4 && sl_channel_confirmed(ch) == 1,
	      "cursor 4, confirmed 1");

	CHECK(sl_channel_sub_rdy(ch, s, 100) == 0 && sb->rdy == 100,
	      "RDY sets the maximum in flight (not an increment)");
	CHECK(sl_channel_sub_rdy(ch, s, 5) == 0 && sb->rdy == 5, "RDY can lower the maximum");
	CHECK(sl_channel_sub_rdy(ch, 9, 5) == -SL_E_CHANNEL, "RDY on a free slot refused");
	CHECK(sl_channel_sub_rdy(ch, -1, 5) == -SL_E_CHANNEL, "RDY on index -1 refused");
	CHECK(nx(ch, 100, 0, NULL) == 4 && nx(ch, 100, 0, NULL) == 5 &&
	      nx(ch, 100, 0, NULL) == 0 && sb->rdy == 5 && sb->in_flight == 5,
	      "rdy 5 with 3 in flight: ids 4, 5 then stop");

	sl_channel_sub_rdy(ch, s, 100);
	ok = 1;
	for (i = 6; i <= 16; i++)
		ok &= nx(ch, 100, 0, NULL) == i;
	CHECK(ok, "window of 16 filled up to id 16");
	CHECK(nx(ch, 100, 0, NULL) == 0 && sb->rdy == 100 && sb->in_flight == 16,
	      "window full: nothing delivered, rdy unchanged");
	CHECK(sl_channel_fin(ch, s, 2) == 0 && nx(ch, 100, 0, NULL) == 0,
	      "FIN of id 2 (not the oldest) does not make room");
	CHECK(sl_channel_fin(ch, s, 1) == 0 && sl_channel_confirmed(ch) == 3,
	      "FIN of id 1 advances confirmed over 1 and 2");
	CHECK(nx(ch, 100, 0, NULL) == 17 && nx(ch, 100, 0, NULL) == 18 &&
	      nx(ch, 100, 0, NULL) == 0, "two slots freed: ids 17, 18, then full");
	CHECK(nx(ch, 18, 0, NULL) == 0, "cursor past end_id: nothing");
	sl_channel_close(ch);
}

/* NSQ RDY: the most messages a subscriber may hold in flight, never consumed. */
static void
test_rdy_max(void)
{
	struct sl_channel *ch = mk(64, 0, 1);
	struct sl_channel_delivery d;
	const struct sl_channel_sub *sb;
	int s, o, ok, i;
	uint64_t a, b, c;

	s = sl_channel_sub_add(ch, 1, 0, 1, 2);
	sb = sl_channel_sub_get(ch, s);
	a = nx(ch, 100, 0, &d);
	b = nx(ch, 100, 0, NULL);
	CHECK(a == 1 && b == 2 && d.sub == s && sb->in_flight == 2 && sb->rdy == 2,
	      "rdy 2: ids 1 and 2 delivered, rdy still 2");
	ok = 1;
	for (i = 0; i < 5; i++)
		ok &= nx(ch, 100, (uint64_t)i, NULL) == 0;
	CHECK(ok && sl_channel_cursor(ch) == 3, "2 in flight: nothing more, repeatedly");
	CHECK(sl_channel_fin(ch, s, 1) == 0 && sb->in_flight == 1 && sb->rdy == 2,
	      "FIN 1: 1 in flight");
	CHECK(nx(ch, 100, 10, NULL) == 3 && nx(ch, 100, 10, NULL) == 0,
	      "FIN frees exactly one slot: id 3, then nothing");

	/* REQ frees a slot: with a delay, the next id goes out instead */
	CHECK(sl_channel_req(ch, s, 2, 500, 10) == 0 && sb->in_flight == 1 && sb->rdy == 2,
	      "REQ 2 (delay 500): 1 in flight");
	CHECK(nx(ch, 100, 20, NULL) == 4 && nx(ch, 100, 20, NULL) == 0,
	      "REQ frees exactly one slot: id 4, then nothing");
	CHECK(nx(ch, 100, 510, NULL) == 0, "ready requeued 2 waits too: the sub is at its rdy");
	CHECK(sl_channel_req(ch, s, 3, 0, 510) == 0 && nx(ch, 100, 510, &d) == 2 &&
	      d.attempts == 2 && nx(ch, 100, 510, NULL) == 0,
	      "REQ 3: the slot goes to the ready 2, then nothing (3 waits)");

	/* timeout frees slots */
	CHECK(sl_channel_expire(ch, 510 + TIMEOUT) == 2 && sb->in_flight == 0 && sb->rdy == 2,
	      "both held ids time out: 0 in flight, rdy still 2");
	a = nx(ch, 100, 2000, NULL);
	b = nx(ch, 100, 2000, NULL);
	c = nx(ch, 100, 2000, NULL);
	CHECK(a == 2 && b == 3 && c == 0 && sb->in_flight == 2,
	      "timeout frees the slots: 2 and 3 redelivered, then nothing");
	CHECK(sl_channel_expire(ch, 2000 + TIMEOUT) == 2 && nx(ch, 100, 3000, NULL) == 2 &&
	      nx(ch, 100, 3000, NULL) == 3 && nx(ch, 100, 3000, NULL) == 0,
	      "again after the next timeout");
	CHECK(sl_channel_fin(ch, s, 2) == 0 && sl_channel_fin(ch, s, 3) == 0 &&
	      nx(ch, 100, 3000, &d) == 4 && d.attempts == 2 && sl_channel_fin(ch, s, 4) == 0 &&
	      sb->in_flight == 0 && sl_channel_confirmed(ch) == 5,
	      "FIN 2, 3; the timed-out 4 redelivered and finished");

	/* lowering rdy below in_flight */
	sl_channel_sub_rdy(ch, s, 4);
	ok = 1;
	for (i = 5; i <= 8; i++)
		ok &= nx(ch, 100, 3000, NULL) == (uint64_t)i;
	CHECK(ok && nx(ch, 100, 3000, NULL) == 0 && sb->in_flight == 4,
	      "rdy 4: ids 5..8, then nothing");
	CHECK(sl_channel_sub_rdy(ch, s, 2) == 0 && sb->rdy == 2 && sb->in_flight == 4 &&
	      nx(ch, 100, 3000, NULL) == 0, "rdy lowered to 2 with 4 in flight: nothing");
	CHECK(sl_channel_fin(ch, s, 5) == 0 && nx(ch, 100, 3000, NULL) == 0,
	      "FIN: 3 in flight >= rdy 2: nothing");
	CHECK(sl_channel_req(ch, s, 6, 0, 3000) == 0 && nx(ch, 100, 3000, NULL) == 0,
	      "REQ: 2 in flight >= rdy 2: nothing (not even the ready 6)");
	CHECK(sl_channel_fin(ch, s, 7) == 0 && sb->in_flight == 1 &&
	      nx(ch, 100, 3000, &d) == 6 && d.attempts == 2 && nx(ch, 100, 3000, NULL) == 0,
	      "FIN: 1 in flight < 2: exactly one (the requeued 6), then nothing");

	/* rdy 0 */
	CHECK(sl_channel_sub_rdy(ch, s, 0) == 0 && nx(ch, 100, 3000, NULL) == 0,
	      "rdy 0: nothing");
	CHECK(sl_channel_fin(ch, s, 6) == 0 && sl_channel_fin(ch, s, 8) == 0 &&
	      sb->in_flight == 0 && nx(ch, 100, 3000, NULL) == 0,
	      "rdy 0 with nothing in flight: still nothing");
	CHECK(sl_channel_sub_rdy(ch, s, 1) == 0 && nx(ch, 100, 3000, NULL) == 9 &&
	      nx(ch, 100, 3000, NULL) == 0, "rdy 1: one id (9), then nothing");
	CHECK(sl_channel_sub_rdy(ch, s, 1) == 0 && nx(ch, 100, 3000, NULL) == 0,
	      "RDY 1 again is not an increment: nothing");

	/* a second subscriber is limited by its own rdy only */
	o = sl_channel_sub_add(ch, 2, 0, 2, 3);
	ok = 1;
	for (i = 0; i < 3; i++)
		ok &= nx(ch, 100, 3000, &d) == (uint64_t)i + 10 && d.sub == o;
	CHECK(ok && nx(ch, 100, 3000, NULL) == 0 && sl_channel_sub_get(ch, o)->in_flight == 3,
	      "other sub (rdy 3) gets 10..12 while the first is full, then nothing");
	CHECK(sl_channel_fin(ch, o, 11) == 0 && nx(ch, 100, 3000, &d) == 13 && d.sub == o &&
	      nx(ch, 100, 3000, NULL) == 0, "its FIN frees a slot for itself only");
	sl_channel_sub_remove(ch, o, 3000);
	CHECK(sb->in_flight == 1 && nx(ch, 100, 3000, NULL) == 0,
	      "its ids requeued on remove, but the first sub is still at rdy 1");
	CHECK(sl_channel_fin(ch, s, 9) == 0 && nx(ch, 100, 3000, &d) == 10 && d.sub == s &&
	      nx(ch, 100, 3000, NULL) == 0, "FIN 9: one requeued id (10), then nothing");

	/* reset forgets what is held */
	sl_channel_sub_rdy(ch, s, 2);
	CHECK(nx(ch, 100, 3000, NULL) == 12 && nx(ch, 100, 3000, NULL) == 0,
	      "rdy 2: one more (12), then full");
	sl_channel_reset(ch, 50);
	CHECK(sb->in_flight == 0 && sb->rdy == 2 && nx(ch, 100, 3000, NULL) == 50 &&
	      nx(ch, 100, 3000, NULL) == 51 && nx(ch, 100, 3000, NULL) == 0,
	      "reset frees the slots: 50, 51, then nothing");
	sl_channel_close(ch);

	/* sub_add with rdy 0, and a large rdy bounded by the window only */
	ch = mk(4, 0, 1);
	s = sl_channel_sub_add(ch, 1, 0, 1, 0);
	CHECK(nx(ch, 100, 0, NULL) == 0, "added with rdy 0: nothing");
	sl_channel_sub_rdy(ch, s, UINT32_MAX);
	ok = 1;
	for (i = 1; i <= 4; i++)
		ok &= nx(ch, 100, 0, NULL) == (uint64_t)i;
	CHECK(ok && nx(ch, 100, 0, NULL) == 0 && sl_channel_sub_get(ch, s)->rdy == UINT32_MAX,
	      "rdy UINT32_MAX: the window (4) is the limit, rdy unchanged");
	sl_channel_close(ch);
}

static void
test_fin(void)
{
	struct sl_channel *ch = mk(8, 0, 1);
	struct sl_channel_stats st;
	int s = sl_channel_sub_add(ch, 1, 0, 1, 10);
	uint64_t i;

	for (i = 1; i <= 5; i++)
		nx(ch, 5, 0, NULL);
	CHECK(sl_channel_fin(ch, s, 3) == 0 && sl_channel_confirmed(ch) == 1,
	      "FIN 3 first: confirmed stays 1");
	CHECK(sl_channel_fin(ch, s, 5) == 0 && sl_channel_confirmed(ch) == 1,
	      "FIN 5: confirmed stays 1");
	CHECK(sl_channel_fin(ch, s, 1) == 0 && sl_channel_confirmed(ch) == 2,
	      "FIN 1: confirmed 2 (2 is unfinished)");
	CHECK(sl_channel_fin(ch, s, 2) == 0 && sl_channel_confirmed(ch) == 4,
	      "FIN 2: confirmed jumps over the done 3 to 4");
	CHECK(sl_channel_fin(ch, s, 3) == -SL_E_MSG_ID, "double FIN (3, inside window) refused");
	CHECK(sl_channel_fin(ch, s, 1) == -SL_E_MSG_ID, "double FIN (1, below confirmed) refused");
	CHECK(sl_channel_fin(ch, s, 6) == -SL_E_MSG_ID, "FIN of a never-delivered id refused");
	CHECK(sl_channel_fin(ch, -1, 0) == -SL_E_MSG_ID, "FIN of id 0 refused");
	CHECK(sl_channel_fin(ch, s, 4) == 0 && sl_channel_confirmed(ch) == 6 &&
	      sl_channel_cursor(ch) == 6, "FIN 4: everything finished, confirmed == cursor");
	st = stats(ch);
	CHECK(st.finished == 5 && st.in_flight == 0 && st.delivered == 5,
	      "stats: 5 finished, none in flight");
	CHECK(sl_channel_sub_get(ch, s)->in_flight == 0, "sub in_flight back to 0");
	sl_channel_close(ch);
}

static void
test_timeout(void)
{
	struct sl_channel *ch = mk(8, 0, 1);
	struct sl_channel_delivery d;
	struct sl_channel_stats st;
	int s = sl_channel_sub_add(ch, 1, 0, 1, 10);

	CHECK(sl_channel_next_due(ch) == UINT64_MAX, "nothing due with nothing in flight");
	nx(ch, 2, 100, NULL);		/* id 1, deadline 1100 */
	nx(ch, 2, 300, NULL);		/* id 2, deadline 1300 */
	CHECK(sl_channel_next_due(ch) == 1100, "next due: the earliest deadline");
	CHECK(sl_channel_expire(ch, 1099) == 0, "nothing expires before the deadline");
	CHECK(sl_channel_expire(ch, 1100) == 1, "id 1 expires at its deadline");
	st = stats(ch);
	CHECK(st.timed_out == 1 && st.in_flight == 1 && st.requeued_now == 1 &&
	      st.requeued == 0, "stats: 1 timed out, 1 in flight, 1 waiting, 0 REQ");
	CHECK(sl_channel_sub_get(ch, s)->in_flight == 1, "sub holds 1 after the timeout");
	CHECK(sl_channel_fin(ch, s, 1) == -SL_E_MSG_ID, "FIN of a timed-out id refused");
	CHECK(sl_channel_touch(ch, s, 1, 1100) == -SL_E_MSG_ID, "TOUCH of a timed-out id refused");
	CHECK(nx(ch, 2, 1150, &d) == 1 && d.attempts == 2, "id 1 redelivered with attempts 2");
	CHECK(sl_channel_expire(ch, 1200) == 0, "redelivered id has a new deadline");
	CHECK(sl_channel_expire(ch, 2150) == 2, "both expire at 2150");
	CHECK(nx(ch, 2, 2150, &d) == 1 && d.attempts == 3 &&
	      nx(ch, 2, 2150, &d) == 2 && d.attempts == 2,
	      "redelivered lowest id first: 1 (attempts 3), 2 (attempts 2)");
	CHECK(stats(ch).timed_out == 3, "timed_out counts 3");
	CHECK(sl_channel_fin(ch, s, 1) == 0 && sl_channel_fin(ch, s, 2) == 0 &&
	      sl_channel_confirmed(ch) == 3, "redelivered ids can be finished");
	CHECK(sl_channel_expire(ch, 100000) == 0, "expire with nothing in flight is 0");
	CHECK(sl_channel_next_due(ch) == UINT64_MAX, "nothing due once all are finished");
	sl_channel_close(ch);
}

static void
test_touch(void)
{
	struct sl_channel *ch = mk(8, 0, 1);
	int s = sl_channel_sub_add(ch, 1, 0, 1, 10);
	int o = sl_channel_sub_add(ch, 2, 0, 2, 0);

	nx(ch, 1, 0, NULL);		/* deadline 1000 */
	CHECK(sl_channel_touch(ch, s, 1, 900) == 0, "TOUCH at 900");
	CHECK(sl_channel_expire(ch, 1000) == 0 && sl_channel_expire(ch, 1899) == 0,
	      "touched id does not expire at the old deadline");
	CHECK(sl_channel_touch(ch, o, 1, 1500) == -SL_E_MSG_ID,
	      "TOUCH by another subscriber refused");
	CHECK(sl_channel_expire(ch, 1900) == 1, "expires at touch time + timeout");
	CHECK(sl_channel_touch(ch, s, 2, 1900) == -SL_E_MSG_ID, "TOUCH of an unknown id refused");
	sl_channel_close(ch);
}

static void
test_req(void)
{
	struct sl_channel *ch = mk(8, 0, 1);
	struct sl_channel_delivery d;
	struct sl_channel_stats st;
	int s = sl_channel_sub_add(ch, 1, 0, 1, 100);

	nx(ch, 1, 0, NULL);
	CHECK(sl_channel_req(ch, s, 1, 500, 100) == 0, "REQ id 1 with delay 500 at 100");
	CHECK(sl_channel_next_due(ch) == 600, "next due: the requeued id's ready time");
	st = stats(ch);
	CHECK(st.requeued == 1 && st.requeued_now == 1 && st.in_flight == 0,
	      "stats: requeued 1, waiting 1");
	CHECK(sl_channel_req(ch, s, 1, 0, 100) == -SL_E_MSG_ID, "REQ of a requeued id refused");
	CHECK(nx(ch, 1, 599, NULL) == 0, "not redelivered before its ready time");
	sl_channel_get_stats(ch, &st);
	CHECK(st.delivered == 1, "no delivery counted");
	CHECK(nx(ch, 1, 600, &d) == 1 && d.attempts == 2, "redelivered at 600 with attempts 2");
	CHECK(sl_channel_expire(ch, 1599) == 0 && sl_channel_expire(ch, 1600) == 1,
	      "the redelivery has deadline now + timeout");
	nx(ch, 1, 1600, &d);
	CHECK(sl_channel_req(ch, s, 1, 1000000, 2000) == 0, "REQ with a huge delay");
	CHECK(nx(ch, 1, 6999, NULL) == 0 && nx(ch, 1, 7000, &d) == 1 && d.attempts == 4,
	      "delay clamped to max_req_delay (ready at 7000)");

	/* requeued ids go before new ones, lowest first */
	nx(ch, 10, 7000, NULL);		/* 2 */
	nx(ch, 10, 7000, NULL);		/* 3 */
	nx(ch, 10, 7000, NULL);		/* 4 */
	CHECK(sl_channel_req(ch, s, 4, 0, 7000) == 0 && sl_channel_req(ch, s, 2, 0, 7000) == 0,
	      "REQ 4 then 2 (no delay)");
	CHECK(nx(ch, 10, 7000, NULL) == 2 && nx(ch, 10, 7000, NULL) == 4 &&
	      nx(ch, 10, 7000, NULL) == 5, "redelivered 2, 4, then new id 5");
	CHECK(sl_channel_req(ch, s, 3, 300, 7000) == 0 && sl_channel_req(ch, s, 5, 0, 7000) == 0,
	      "REQ 3 (delay 300) and 5 (no delay)");
	CHECK(nx(ch, 10, 7100, NULL) == 5 && nx(ch, 10, 7100, NULL) == 6,
	      "ready 5 goes first, delayed 3 waits, then new 6");
	CHECK(nx(ch, 10, 7300, NULL) == 3, "3 goes once ready, before new 7");
	CHECK(stats(ch).requeued == 6, "requeued counts REQs only (6)");
	sl_channel_close(ch);
}

static void
test_ordered(void)
{
	struct sl_channel *ch = mk(16, 1, 1);
	struct sl_channel_delivery d;
	int a = sl_channel_sub_add(ch, 1, 0, 1, 100);
	int b = sl_channel_sub_add(ch, 2, 0, 2, 100);
	int holder;

	CHECK(nx(ch, 10, 0, &d) == 1 && nx(ch, 10, 0, NULL) == 0,
	      "ordered: id 1 out, nothing else while it is in flight");
	CHECK(sl_channel_req(ch, d.sub, 1, 0, 0) == 0, "REQ 1");
	CHECK(nx(ch, 10, 0, &d) == 1 && d.attempts == 2 && nx(ch, 10, 0, NULL) == 0,
	      "requeued 1 redelivered before 2");
	CHECK(sl_channel_fin(ch, d.sub, 1) == 0 && nx(ch, 10, 0, &d) == 2,
	      "FIN 1 then 2 goes out");
	CHECK(sl_channel_req(ch, d.sub, 2, 100, 0) == 0 && nx(ch, 10, 50, NULL) == 0,
	      "delayed REQ of 2: nothing (not even 3) before its ready time");
	CHECK(nx(ch, 10, 100, &d) == 2 && d.attempts == 2, "2 again at 100");
	CHECK(sl_channel_expire(ch, 1100) == 1 && nx(ch, 10, 1100, &d) == 2 && d.attempts == 3,
	      "timed-out 2 redelivered before 3");
	CHECK(sl_channel_fin(ch, d.sub, 2) == 0 && nx(ch, 10, 1100, &d) == 3, "then 3");
	holder = d.sub;
	sl_channel_sub_remove(ch, holder, 1200);
	CHECK(nx(ch, 10, 1200, &d) == 3 && d.attempts == 2 && d.sub == (holder == a ? b : a),
	      "subscriber gone: 3 goes to the other one, before 4");
	CHECK(stats(ch).in_flight + stats(ch).requeued_now == 1, "one outstanding");
	sl_channel_close(ch);
}

static void
test_round_robin(void)
{
	struct sl_channel *ch = mk(64, 0, 1);
	struct sl_channel_delivery d;
	int s[3], order[9], i, ok, cnt[3] = { 0 };

	for (i = 0; i < 3; i++)
		s[i] = sl_channel_sub_add(ch, 10 + i, i, 100 + i, 10);
	CHECK(s[0] >= 0 && s[1] >= 0 && s[2] >= 0 && s[0] != s[1] && s[1] != s[2] &&
	      s[0] != s[2], "3 subscribers, distinct indexes");
	for (i = 0; i < 9; i++) {
		nx(ch, 100, 0, &d);
		order[i] = d.sub;
	}
	ok = order[0] != order[1] && order[1] != order[2] && order[0] != order[2];
	for (i = 3; i < 9; i++)
		ok &= order[i] == order[i - 3];
	CHECK(ok, "9 deliveries rotate over the 3 subs (%d %d %d %d %d %d)", order[0],
	      order[1], order[2], order[3], order[4], order[5]);
	sl_channel_sub_rdy(ch, s[1], 0);
	ok = 1;
	for (i = 0; i < 6; i++) {
		nx(ch, 100, 0, &d);
		ok &= d.sub != s[1];
		cnt[d.sub == s[0] ? 0 : 2]++;
	}
	CHECK(ok && cnt[0] == 3 && cnt[2] == 3, "sub with rdy 0 skipped: 3 and 3");
	sl_channel_sub_remove(ch, s[0], 0);
	i = sl_channel_sub_add(ch, 99, 0, 199, 4);
	CHECK(i == s[0], "a removed slot is reused (%d)", i);
	CHECK(sl_channel_sub_get(ch, s[1])->in_flight == 3 &&
	      sl_channel_sub_get(ch, s[2])->in_flight == 6, "the others hold 3 and 6");
	/* 4 free slots each */
	sl_channel_sub_rdy(ch, s[1], 7);
	sl_channel_sub_rdy(ch, s[2], 10);
	memset(cnt, 0, sizeof(cnt));
	ok = 1;
	for (i = 0; i < 12; i++) {
		ok &= nx(ch, 100, 0, &d) != 0;
		cnt[d.sub == s[0] ? 0 : d.sub == s[1] ? 1 : 2]++;
		if (i % 3 == 2)
			ok &= cnt[0] == cnt[1] && cnt[1] == cnt[2];
	}
	CHECK(ok && nx(ch, 100, 0, NULL) == 0,
	      "equal shares after remove/add, then every sub at its rdy");
	sl_channel_close(ch);
}

static void
test_sub_remove(void)
{
	struct sl_channel *ch = mk(16, 0, 1);
	struct sl_channel_delivery d;
	struct sl_channel_stats st;
	int a = sl_channel_sub_add(ch, 1, 0, 1, 3);
	int b = sl_channel_sub_add(ch, 2, 0, 2, 0);

	nx(ch, 10, 0, NULL);
	nx(ch, 10, 0, NULL);
	nx(ch, 10, 0, NULL);
	CHECK(sl_channel_fin(ch, b, 2) == -SL_E_MSG_ID, "FIN by the wrong subscriber refused");
	CHECK(sl_channel_req(ch, b, 2, 0, 0) == -SL_E_MSG_ID,
	      "REQ by the wrong subscriber refused");
	CHECK(sl_channel_fin(ch, a, 2) == 0, "FIN by the holder accepted");
	sl_channel_sub_remove(ch, a, 10);
	st = stats(ch);
	CHECK(sl_channel_sub_get(ch, a) == NULL && sl_channel_sub_count(ch) == 1 &&
	      sl_channel_sub_find(ch, 1) == -SL_E_CHANNEL, "subscriber removed");
	CHECK(st.in_flight == 0 && st.requeued_now == 2, "its 2 in-flight ids are requeued");
	CHECK(sl_channel_fin(ch, -1, 1) == -SL_E_MSG_ID, "requeued id cannot be finished");
	CHECK(nx(ch, 10, 10, NULL) == 0, "other sub has rdy 0: nothing");
	sl_channel_sub_rdy(ch, b, 10);
	CHECK(nx(ch, 10, 10, &d) == 1 && d.sub == b && d.attempts == 2 &&
	      nx(ch, 10, 10, &d) == 3 && d.sub == b && d.attempts == 2,
	      "ids 1 and 3 go to the other subscriber right away, attempts 2");
	CHECK(nx(ch, 10, 10, &d) == 4 && d.attempts == 1, "then new id 4");
	CHECK(sl_channel_fin(ch, -1, 1) == 0, "FIN with sub -1 skips the holder check");
	CHECK(sl_channel_sub_get(ch, b)->in_flight == 2, "sub b holds 2");
	sl_channel_close(ch);
}

static void
test_subs_limits(void)
{
	struct sl_channel *ch = mk(8, 0, 1);
	int i, ok = 1;

	for (i = 0; i < SL_CHANNEL_MAX_SUBS; i++)
		ok &= sl_channel_sub_add(ch, 1, 0, (uint64_t)i + 1000, 1) == i;
	CHECK(ok && sl_channel_sub_count(ch) == SL_CHANNEL_MAX_SUBS, "64 subscribers added");
	CHECK(sl_channel_sub_add(ch, 1, 0, 5000, 1) == -SL_E_LIMIT, "65th: -SL_E_LIMIT");
	CHECK(sl_channel_sub_add(ch, 1, 0, 1010, 1) == -SL_E_EXISTS,
	      "duplicate sub_id: -SL_E_EXISTS");
	CHECK(sl_channel_sub_find(ch, 1063) == 63, "sub_find the last one");
	CHECK(sl_channel_sub_get(ch, 64) == NULL && sl_channel_sub_get(ch, -1) == NULL,
	      "sub_get out of range is NULL");
	sl_channel_sub_remove(ch, 63, 0);
	sl_channel_sub_remove(ch, 63, 0);
	CHECK(sl_channel_sub_count(ch) == 63, "removing twice is harmless");
	ok = 1;
	for (i = 0; i < 64; i++) {
		struct sl_channel_delivery d;

		ok &= nx(ch, 100, 0, &d) == (uint64_t)i + 1 || i >= 8;
		if (i < 8)
			ok &= d.sub == i;
	}
	CHECK(ok, "round robin goes over subs 0..7 in order");
	CHECK(sl_channel_sub_add(ch, 0, 0, 7777, 1) == -EINVAL, "session 0 refused");
	sl_channel_close(ch);
}

static void
test_reset(void)
{
	struct sl_channel *ch = mk(8, 0, 1);
	struct sl_channel_delivery d;
	struct sl_channel_stats st;
	int s = sl_channel_sub_add(ch, 1, 0, 1, 100);

	nx(ch, 10, 0, NULL);
	nx(ch, 10, 0, NULL);
	nx(ch, 10, 0, NULL);
	sl_channel_req(ch, s, 2, 0, 0);
	sl_channel_reset(ch, 100);
	st = stats(ch);
	CHECK(sl_channel_confirmed(ch) == 100 && sl_channel_cursor(ch) == 100,
	      "reset forward: confirmed = cursor = 100");
	CHECK(st.in_flight == 0 && st.requeued_now == 0 &&
	      sl_channel_sub_get(ch, s)->in_flight == 0, "in-flight and requeued forgotten");
	CHECK(sl_channel_fin(ch, s, 1) == -SL_E_MSG_ID, "FIN of a forgotten id refused");
	CHECK(nx(ch, 99, 0, NULL) == 0, "end_id 99 < 100: nothing");
	CHECK(nx(ch, 200, 0, &d) == 100 && d.attempts == 1, "delivers 100 next");
	nx(ch, 200, 0, NULL);
	sl_channel_reset(ch, 50);
	CHECK(sl_channel_confirmed(ch) == 50 && sl_channel_cursor(ch) == 50,
	      "reset backward to 50");
	CHECK(nx(ch, 200, 10000, &d) == 50 && d.attempts == 1 && nx(ch, 200, 10000, NULL) == 51,
	      "delivers 50, 51 again (attempts 1)");
	CHECK(sl_channel_expire(ch, 10000 + TIMEOUT) == 2, "only the post-reset ids expire");
	CHECK(sl_channel_fin(ch, s, 100) == -SL_E_MSG_ID, "FIN of a pre-reset id refused");
	sl_channel_reset(ch, 0);
	CHECK(sl_channel_cursor(ch) == 1, "reset to 0 means 1");
	sl_channel_close(ch);
}

static void
test_unsend(void)
{
	struct sl_channel *ch = mk(8, 0, 1);
	struct sl_channel_delivery d, e;
	const struct sl_channel_sub *sb;
	struct sl_channel_stats st;
	int s = sl_channel_sub_add(ch, 1, 0, 1, 2);
	int t = sl_channel_sub_add(ch, 2, 0, 2, 2);

	sb = sl_channel_sub_get(ch, s);
	nx(ch, 10, 0, &d);
	CHECK(d.sub == s && d.id == 1 && sb->rdy == 2 && sb->in_flight == 1, "id 1 to sub %d", s);
	sl_channel_unsend(ch, &d);
	st = stats(ch);
	CHECK(sl_channel_cursor(ch) == 1 && sb->rdy == 2 && sb->in_flight == 0 &&
	      sb->delivered == 0 && st.delivered == 0 && st.in_flight == 0,
	      "unsend of a new id: cursor, in_flight, counts restored, rdy unchanged");
	CHECK(nx(ch, 10, 0, &e) == 1 && e.attempts == 1 && e.sub == s,
	      "id 1 delivered again, attempts 1, same subscriber");
	CHECK(sl_channel_req(ch, s, 1, 0, 0) == 0 && nx(ch, 10, 0, &d) == 1 && d.attempts == 2,
	      "REQ 1, redelivered with attempts 2");
	sl_channel_unsend(ch, &d);
	st = stats(ch);
	CHECK(st.requeued_now == 1 && st.in_flight == 0 && sl_channel_cursor(ch) == 2,
	      "unsend of a requeued id: requeued again, cursor unchanged");
	CHECK(sl_channel_fin(ch, -1, 1) == -SL_E_MSG_ID, "unsent id is not in flight");
	CHECK(nx(ch, 10, 0, &e) == 1 && e.attempts == 2 && e.sub == d.sub,
	      "redelivered with attempts 2 (unsent attempt not counted), same sub");
	CHECK(sl_channel_sub_get(ch, t)->rdy == 2 && sb->rdy == 2 &&
	      sl_channel_sub_get(ch, t)->in_flight + sb->in_flight == 1,
	      "rdy of both unchanged, 1 id held in total");
	sl_channel_close(ch);

	/* unsend frees the slot of a subscriber at its rdy */
	ch = mk(8, 0, 1);
	s = sl_channel_sub_add(ch, 1, 0, 1, 1);
	sb = sl_channel_sub_get(ch, s);
	CHECK(nx(ch, 10, 0, &d) == 1 && nx(ch, 10, 0, NULL) == 0,
	      "rdy 1: id 1, then nothing");
	sl_channel_unsend(ch, &d);
	CHECK(sb->in_flight == 0 && sb->rdy == 1 && nx(ch, 10, 0, &d) == 1 && d.attempts == 1 &&
	      nx(ch, 10, 0, NULL) == 0, "unsend frees the slot: id 1 again, then nothing");
	CHECK(sl_channel_req(ch, s, 1, 0, 0) == 0 && nx(ch, 10, 0, &d) == 1 &&
	      d.attempts == 2 && nx(ch, 10, 0, NULL) == 0, "REQ 1, redelivered, then nothing");
	sl_channel_unsend(ch, &d);
	CHECK(sb->in_flight == 0 && nx(ch, 10, 0, &d) == 1 && d.attempts == 2 &&
	      nx(ch, 10, 0, NULL) == 0, "unsend of the redelivery frees the slot too");
	sl_channel_close(ch);
}

/* ---- randomized test against a reference model ---- */

#define M_MAXID (1u << 17)

enum { M_NEW = 0, M_FLY, M_REQ, M_DONE };

struct mid {
	uint8_t st;
	uint8_t ever;		/* delivered since the last reset */
	int16_t sub;
	uint16_t attempts;
	uint64_t time;
};

static struct mid *mids;

struct model {
	struct sl_channel *ch;
	uint32_t window;
	int ordered;
	uint64_t base;		/* last reset / start: ids below are finished */
	uint64_t confirmed;
	uint64_t cursor;
	uint64_t end;
	uint64_t now;
	int live[SL_CHANNEL_MAX_SUBS];
	uint32_t rdy[SL_CHANNEL_MAX_SUBS];	/* max in flight; only RDY/add change it */
	uint32_t fly[SL_CHANNEL_MAX_SUBS];	/* ids each sub holds in flight */
	uint32_t rr;				/* round robin: first sub index to try */
	uint64_t next_sub_id;
	unsigned int bad;
	uint64_t n_deliver, n_fin, n_req, n_touch, n_expired, n_reset, n_drain, n_unsend;
	uint64_t n_full;	/* next() that found every sub at its rdy */
	uint64_t n_over;	/* times a sub held more than its (lowered) rdy */
};

static uint64_t rng_state;

static uint64_t
rnd(void)
{
	uint64_t x = rng_state;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	rng_state = x;
	return x * UINT64_C(2685821657736338717);
}

static uint64_t
rndn(uint64_t n)
{
	return n == 0 ? 0 : rnd() % n;
}

#define MFAIL(m, ...) do {							\
	if ((m)->bad++ < 10) {							\
		printf("FAIL - model: ");					\
		printf(__VA_ARGS__);						\
		printf("\n");							\
	}									\
} while (0)

static void
m_advance(struct model *m)
{
	while (m->confirmed < m->cursor && mids[m->confirmed].st == M_DONE)
		m->confirmed++;
}

/* Full consistency check of the channel against the model. */
static void
m_verify(struct model *m)
{
	uint32_t fly = 0, req = 0, hold[SL_CHANNEL_MAX_SUBS] = { 0 };
	struct sl_channel_stats st;
	uint64_t id;
	int i;

	if (sl_channel_confirmed(m->ch) != m->confirmed ||
	    sl_channel_cursor(m->ch) != m->cursor)
		MFAIL(m, "confirmed/cursor %" PRIu64 "/%" PRIu64 " model %" PRIu64 "/%" PRIu64,
		      sl_channel_confirmed(m->ch), sl_channel_cursor(m->ch), m->confirmed,
		      m->cursor);
	/* the ids just below confirmed (all of them in m_drain) */
	id = sl_channel_confirmed(m->ch);
	id = id > m->base + m->window + 8 ? id - m->window - 8 : m->base;
	for (; id < sl_channel_confirmed(m->ch) && id < M_MAXID; id++)
		if (mids[id].st != M_DONE) {
			MFAIL(m, "confirmed %" PRIu64 " passes unfinished id %" PRIu64,
			      sl_channel_confirmed(m->ch), id);
			break;
		}
	for (id = m->confirmed; id < m->cursor; id++) {
		if (mids[id].st == M_FLY) {
			fly++;
			hold[mids[id].sub]++;
		} else if (mids[id].st == M_REQ) {
			req++;
		}
	}
	sl_channel_get_stats(m->ch, &st);
	if (st.in_flight != fly || st.requeued_now != req)
		MFAIL(m, "stats in_flight %" PRIu64 " requeued_now %" PRIu64 " model %u %u",
		      st.in_flight, st.requeued_now, fly, req);
	if (m->ordered && fly + req > 1)
		MFAIL(m, "ordered channel has %u outstanding", fly + req);
	if (m->cursor - m->confirmed > m->window)
		MFAIL(m, "window overflow");
	for (i = 0; i < SL_CHANNEL_MAX_SUBS; i++) {
		const struct sl_channel_sub *sb = sl_channel_sub_get(m->ch, i);

		if ((sb != NULL) != m->live[i]) {
			MFAIL(m, "sub %d liveness", i);
			continue;
		}
		if (sb != NULL && (sb->rdy != m->rdy[i] || sb->in_flight != hold[i] ||
				   hold[i] != m->fly[i]))
			MFAIL(m, "sub %d rdy %u/%u in_flight %" PRIu64 "/%u/%u", i, sb->rdy,
			      m->rdy[i], sb->in_flight, hold[i], m->fly[i]);
		if (sb == NULL && hold[i] != 0)
			MFAIL(m, "free sub %d holds %u ids", i, hold[i]);
		if (sb != NULL && hold[i] > m->rdy[i])
			m->n_over++;
	}
}

/* Lowest requeued id ready now, or 0. */
static uint64_t
m_ready(const struct model *m)
{
	uint64_t id;

	for (id = m->confirmed; id < m->cursor; id++)
		if (mids[id].st == M_REQ && mids[id].time <= m->now)
			return id;
	return 0;
}

/* The sub a delivery must go to: round robin from rr over the live subs holding fewer
 * than rdy ids in flight; -1 if every sub is at (or over) its rdy. */
static int
m_pick_sub(const struct model *m)
{
	uint32_t k;

	for (k = 0; k < SL_CHANNEL_MAX_SUBS; k++) {
		uint32_t i = (m->rr + k) % SL_CHANNEL_MAX_SUBS;

		if (m->live[i] && m->fly[i] < m->rdy[i])
			return (int)i;
	}
	return -1;
}

static int
m_next(struct model *m, struct sl_channel_delivery *d)
{
	uint64_t ready = m_ready(m);
	int want = m_pick_sub(m);
	int can_new;
	struct mid *x;

	can_new = m->cursor <= m->end && (m->ordered ? m->cursor == m->confirmed :
					  m->cursor - m->confirmed < m->window);
	if (sl_channel_next(m->ch, m->end, m->now, d) != 1) {
		if (want >= 0 && (ready != 0 || can_new))
			MFAIL(m, "next gave nothing (sub %d, ready %" PRIu64 ", can_new %d)",
			      want, ready, can_new);
		if (want < 0 && (ready != 0 || can_new))
			m->n_full++;
		return 0;
	}
	if (d->sub >= SL_CHANNEL_MAX_SUBS || !m->live[d->sub] ||
	    m->fly[d->sub] >= m->rdy[d->sub]) {
		MFAIL(m, "delivered to sub %u holding %u, rdy %u", d->sub,
		      d->sub < SL_CHANNEL_MAX_SUBS ? m->fly[d->sub] : 0,
		      d->sub < SL_CHANNEL_MAX_SUBS ? m->rdy[d->sub] : 0);
		return 0;
	}
	if (d->sub != want)
		MFAIL(m, "delivered to sub %u, round robin says %d", d->sub, want);
	if (d->id >= M_MAXID) {
		MFAIL(m, "id %" PRIu64 " out of range", d->id);
		return 0;
	}
	x = &mids[d->id];
	if (ready != 0) {
		if (d->id != ready)
			MFAIL(m, "delivered %" PRIu64 " but requeued %" PRIu64 " is ready",
			      d->id, ready);
	} else if (!can_new || d->id != m->cursor) {
		MFAIL(m, "delivered %" PRIu64 " (state %u), model cursor %" PRIu64
		      " can_new %d", d->id, x->st, m->cursor, can_new);
	}
	if (x->st == M_FLY)
		MFAIL(m, "id %" PRIu64 " delivered while in flight", d->id);
	if (x->st == M_DONE)
		MFAIL(m, "id %" PRIu64 " delivered after FIN", d->id);
	if (d->attempts != x->attempts + 1)
		MFAIL(m, "id %" PRIu64 " attempts %u model %u", d->id, d->attempts,
		      x->attempts + 1);
	if (d->id == m->cursor)
		m->cursor++;
	x->st = M_FLY;
	x->sub = (int16_t)d->sub;
	x->attempts++;
	x->time = m->now + TIMEOUT;
	x->ever = 1;
	m->fly[d->sub]++;
	m->rr = (d->sub + 1u) % SL_CHANNEL_MAX_SUBS;
	m->n_deliver++;
	return 1;
}

/* A random id near the window, and a random sub argument for it. */
static void
m_pick(struct model *m, uint64_t *id, int *sub)
{
	uint64_t lo = m->confirmed > 3 ? m->confirmed - 3 : 0;
	uint64_t r = rndn(10);
	int i;

	if (r < 8 && m->cursor > m->confirmed)
		*id = m->confirmed + rndn(m->cursor - m->confirmed);
	else
		*id = lo + rndn(m->cursor + 3 - lo);
	r = rndn(10);
	if (r < 6 && *id < M_MAXID && mids[*id].st == M_FLY) {
		*sub = mids[*id].sub;
	} else if (r < 8) {
		*sub = -1;
	} else {
		i = (int)rndn(SL_CHANNEL_MAX_SUBS);
		*sub = i;
	}
}

static int
m_holds(const struct model *m, uint64_t id, int sub)
{
	return id >= m->confirmed && id < m->cursor && mids[id].st == M_FLY &&
	       (sub < 0 || mids[id].sub == sub);
}

static void
m_fin(struct model *m, uint64_t id, int sub)
{
	int exp = m_holds(m, id, sub);
	int r = sl_channel_fin(m->ch, sub, id);

	if ((r == 0) != exp || (r != 0 && r != -SL_E_MSG_ID))
		MFAIL(m, "fin(%d, %" PRIu64 ") = %d, model %d", sub, id, r, exp);
	if (exp) {
		m->fly[mids[id].sub]--;
		mids[id].st = M_DONE;
		m_advance(m);
		m->n_fin++;
	}
}

static void
m_sub_remove(struct model *m, int i)
{
	uint64_t id;

	sl_channel_sub_remove(m->ch, i, m->now);
	for (id = m->confirmed; id < m->cursor; id++)
		if (mids[id].st == M_FLY && mids[id].sub == i) {
			mids[id].st = M_REQ;
			mids[id].time = m->now;
		}
	m->live[i] = 0;
	m->rdy[i] = 0;
	m->fly[i] = 0;
}

static int
m_sub_add(struct model *m, uint32_t rdy)
{
	uint64_t sid = m->next_sub_id++;
	int i = sl_channel_sub_add(m->ch, 1 + rndn(5), 0, sid, rdy);

	if (i < 0 || i >= SL_CHANNEL_MAX_SUBS || m->live[i]) {
		MFAIL(m, "sub_add returned %d", i);
		return -1;
	}
	m->live[i] = 1;
	m->rdy[i] = rdy;
	m->fly[i] = 0;
	return i;
}

static void
m_reset(struct model *m, uint64_t next)
{
	uint64_t lo = next < m->confirmed ? next : m->confirmed;
	uint64_t hi = next > m->cursor ? next : m->cursor;
	uint64_t id;

	sl_channel_reset(m->ch, next);
	for (id = lo; id < hi && id < M_MAXID; id++)
		memset(&mids[id], 0, sizeof(mids[id]));
	memset(m->fly, 0, sizeof(m->fly));
	m->base = m->confirmed = m->cursor = next;
	m->n_reset++;
}

/* Deliver and finish everything up to end; every id must come out. */
static void
m_drain(struct model *m)
{
	struct sl_channel_delivery d;
	int s = -1, i, rounds;
	uint64_t id, want;

	for (i = 0; i < SL_CHANNEL_MAX_SUBS; i++)
		if (m->live[i])
			s = i;
	if (s < 0)
		s = m_sub_add(m, 0);
	if (s < 0)
		return;
	/* a reset may have moved the position past the end of the partition */
	want = m->end + 1 > m->base ? m->end + 1 : m->base;
	for (rounds = 0; rounds < 100000 && m->confirmed < want; rounds++) {
		m->now += MAX_REQ + TIMEOUT + 1;
		m->n_expired += sl_channel_expire(m->ch, m->now);
		for (id = m->confirmed; id < m->cursor; id++)
			if (mids[id].st == M_FLY) {
				m->fly[mids[id].sub]--;
				mids[id].st = M_REQ;
				mids[id].time = m->now;
			}
		sl_channel_sub_rdy(m->ch, s, 1000);
		m->rdy[s] = 1000;
		while (m_next(m, &d))
			m_fin(m, d.id, d.sub);
	}
	if (m->confirmed != want || sl_channel_confirmed(m->ch) != want)
		MFAIL(m, "drain: confirmed %" PRIu64 " end %" PRIu64, m->confirmed, m->end);
	for (id = m->base; id <= m->end; id++)
		if (!mids[id].ever || mids[id].st != M_DONE) {
			MFAIL(m, "drain: id %" PRIu64 " never delivered/finished", id);
			break;
		}
	m->n_drain++;
	m_verify(m);
}

static void
model_run(uint32_t window, int ordered, unsigned int ops, uint64_t seed)
{
	struct model mm, *m = &mm;
	struct sl_channel_delivery d;
	unsigned int op;
	uint64_t lim;
	uint64_t id;
	int sub, i;

	memset(m, 0, sizeof(*m));
	memset(mids, 0, M_MAXID * sizeof(*mids));
	rng_state = seed;
	m->ch = mk(window, ordered, 1);
	m->window = window;
	m->ordered = ordered;
	m->base = m->confirmed = m->cursor = 1;
	m->next_sub_id = 1;
	m_sub_add(m, 3);
	m_sub_add(m, 3);

	for (op = 0; op < ops && m->bad == 0; op++) {
		uint64_t r = rndn(1000);

		m->now += rndn(40);
		if (r < 300) {			/* next, sometimes unsent */
			uint64_t cur = m->cursor;

			if (m_next(m, &d) && rndn(20) == 0) {
				/* undo in the model: slot freed, id as it was, same
				 * sub first again */
				struct mid *x = &mids[d.id];

				sl_channel_unsend(m->ch, &d);
				m->fly[d.sub]--;
				m->rr = d.sub;
				x->attempts--;
				if (d.id == cur) {
					x->st = M_NEW;
					x->ever = 0;
					m->cursor = cur;
				} else {
					x->st = M_REQ;
					x->time = 0;
				}
				m->n_deliver--;
				m->n_unsend++;
			}
		} else if (r < 450) {		/* fin */
			m_pick(m, &id, &sub);
			m_fin(m, id, sub);
		} else if (r < 530) {		/* req */
			uint64_t delay = rndn(2 * MAX_REQ);
			int exp, rr;

			m_pick(m, &id, &sub);
			exp = m_holds(m, id, sub);
			rr = sl_channel_req(m->ch, sub, id, delay, m->now);
			if ((rr == 0) != exp)
				MFAIL(m, "req(%d, %" PRIu64 ") = %d, model %d", sub, id, rr, exp);
			if (exp) {
				m->fly[mids[id].sub]--;
				mids[id].st = M_REQ;
				mids[id].time = m->now + (delay < MAX_REQ ? delay : MAX_REQ);
				m->n_req++;
			}
		} else if (r < 580) {		/* touch */
			int exp, rr;

			m_pick(m, &id, &sub);
			exp = m_holds(m, id, sub);
			rr = sl_channel_touch(m->ch, sub, id, m->now);
			if ((rr == 0) != exp)
				MFAIL(m, "touch(%d, %" PRIu64 ") = %d, model %d", sub, id, rr,
				      exp);
			if (exp) {
				mids[id].time = m->now + TIMEOUT;
				m->n_touch++;
			}
		} else if (r < 700) {		/* expire */
			uint32_t exp = 0, got;

			m->now += rndn(4) == 0 ? rndn(2 * TIMEOUT) : rndn(TIMEOUT / 4);
			for (id = m->confirmed; id < m->cursor; id++)
				if (mids[id].st == M_FLY && mids[id].time <= m->now) {
					m->fly[mids[id].sub]--;
					mids[id].st = M_REQ;
					mids[id].time = m->now;
					exp++;
				}
			got = sl_channel_expire(m->ch, m->now);
			if (got != exp)
				MFAIL(m, "expire = %u, model %u", got, exp);
			m->n_expired += got;
		} else if (r < 850) {		/* the partition grows */
			if (m->end + 8 < M_MAXID)
				m->end += rndn(5);
		} else if (r < 930) {		/* RDY */
			i = (int)rndn(SL_CHANNEL_MAX_SUBS);
			if (m->live[i]) {
				uint32_t v = (uint32_t)rndn(6);

				if (sl_channel_sub_rdy(m->ch, i, v) != 0)
					MFAIL(m, "rdy on live sub %d refused", i);
				m->rdy[i] = v;
			} else if (sl_channel_sub_rdy(m->ch, i, 1) != -SL_E_CHANNEL) {
				MFAIL(m, "rdy on free sub %d accepted", i);
			}
		} else if (r < 960) {		/* sub add */
			if (sl_channel_sub_count(m->ch) < 6)
				m_sub_add(m, (uint32_t)rndn(5));
		} else if (r < 990) {		/* sub remove */
			i = (int)rndn(8);
			if (m->live[i])
				m_sub_remove(m, i);
		} else if (r < 992) {		/* reset */
			uint64_t next = m->cursor > 100 ? m->cursor - 100 : 1;

			next += rndn(200);
			if (next + 8 < M_MAXID) {
				m_reset(m, next);
				if (m->end + 1 < next && rndn(2))
					m->end = next + rndn(10);
			}
		} else if (r < 993) {		/* everything must come out */
			m_drain(m);
		}
		m_verify(m);
	}
	m_drain(m);
	CHECK(m->bad == 0, "model (window %u%s, seed %#" PRIx64 "): %u ops, %" PRIu64
	      " deliveries, %" PRIu64 " fin, %" PRIu64 " req, %" PRIu64 " touch, %" PRIu64
	      " timed out, %" PRIu64 " unsent, %" PRIu64 " resets, %" PRIu64 " drains, end %"
	      PRIu64, window, ordered ? " ordered" : "", seed, op, m->n_deliver, m->n_fin,
	      m->n_req, m->n_touch, m->n_expired, m->n_unsend, m->n_reset, m->n_drain, m->end);
	CHECK(m->n_deliver > 1000 && m->n_fin > 1000 && m->n_expired > 10 && m->n_drain > 5,
	      "model exercised deliveries, fins, timeouts and drains");
	/* an ordered channel or a window of 1 holds one id at most: rarely at rdy */
	lim = m->ordered || m->window == 1 ? 5 : 100;
	CHECK(m->n_full > lim && m->n_over > lim,
	      "model exercised subs at their rdy (%" PRIu64 " next() held back) and over a "
	      "lowered rdy (%" PRIu64 " states)", m->n_full, m->n_over);
	sl_channel_close(m->ch);
}

/* Idle time (the partition expires idle anonymous channels by it): counted only while
 * the channel has no subscriber and nobody moved its position. */
static void
test_idle(void)
{
	struct sl_channel *ch = mk(8, 0, 1);
	int s;

	CHECK(sl_channel_idle(ch, 1000) == 0 && sl_channel_idle_ns(ch, 5000) == 4000,
	      "the first look starts the idle time");
	CHECK(sl_channel_idle(ch, 6000) == 5000, "idle 5000 ns later");
	s = sl_channel_sub_add(ch, 1, 0, 1, 4);
	CHECK(s >= 0 && sl_channel_idle(ch, 7000) == 0 && sl_channel_idle_ns(ch, 9000) == 0,
	      "a subscriber: not idle");
	sl_channel_sub_remove(ch, s, 8000);
	CHECK(sl_channel_idle(ch, 10000) == 3000,
	      "the subscriber left: idle from the last look with it (7000)");
	sl_channel_mark_used(ch, 20000);
	CHECK(sl_channel_idle(ch, 20500) == 500, "a use (SET_OFFSET) restarts it");
	sl_channel_mark_used(ch, 100);
	CHECK(sl_channel_idle(ch, 21000) == 1000, "a use in the past changes nothing");
	CHECK(sl_channel_idle(ch, 50) == 0 && sl_channel_idle(ch, 60) == 10,
	      "a clock that goes back restarts it");
	sl_channel_close(ch);
}

int
main(void)
{
	mids = calloc(M_MAXID, sizeof(*mids));
	if (mids == NULL)
		return EXIT_FAILURE;
	test_conf();
	test_basic();
	test_rdy_max();
	test_fin();
	test_timeout();
	test_touch();
	test_req();
	test_ordered();
	test_round_robin();
	test_sub_remove();
	test_subs_limits();
	test_reset();
	test_unsend();
	test_idle();
	model_run(16, 0, 100000, 0x5eed0001);
	model_run(8, 1, 100000, 0x5eed0002);
	model_run(1, 0, 100000, 0x5eed0003);
	model_run(64, 0, 100000, 0x5eed0004);
	free(mids);
	return check_report();
}
