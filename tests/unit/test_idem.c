/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * Unit test of the idempotency window (dataplane/idem.c), and of the holes retryable
 * refusals leave in a session's publishes to a partition (order across retries).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "idem.h"
#include "check.h"



static struct sl_idem win;

static void
rec(uint64_t seq, uint8_t pending, uint64_t id)
{
	struct sl_idem_entry e = {
		.opcode = 7, .pending = pending, .code = 0, .partition = 3, .count = 1,
		.id = id, .offset = id * 100, .aux = seq,
	};

	sl_idem_record(&win, seq, &e);
}

static void
test_classify(void)
{
	const struct sl_idem_entry *hit = (const void *)&hit;
	struct sl_idem_entry e;

	memset(&win, 0xee, sizeof(win));
	sl_idem_bind(&win, 42);
	CHECK(win.session == 42, "bind sets the session");
	CHECK(sl_idem_check(&win, 1, &hit) == SL_IDEM_NEW && hit == NULL,
	      "fresh window: seq 1 is NEW, no hit");
	CHECK(sl_idem_check(&win, 0, &hit) == SL_IDEM_OLD, "seq 0 is invalid: OLD");

	rec(1, 0, 1000);
	CHECK(sl_idem_check(&win, 1, &hit) == SL_IDEM_DUP, "recorded seq 1 is DUP");
	CHECK(hit != NULL && hit->seq == 1 && hit->id == 1000 && hit->offset == 100000 &&
	      hit->partition == 3 && hit->opcode == 7,
	      "DUP hit carries the recorded answer");
	CHECK(sl_idem_check(&win, 2, &hit) == SL_IDEM_NEW && hit == NULL, "seq 2 is NEW");

	/* seq field of the given entry is ignored: it is set from seq. */
	memset(&e, 0, sizeof(e));
	e.seq = 999;
	e.code = SL_E_FULL;
	sl_idem_record(&win, 2, &e);
	CHECK(sl_idem_check(&win, 2, &hit) == SL_IDEM_DUP && hit->seq == 2 &&
	      hit->code == SL_E_FULL, "record sets e->seq from seq, error answers kept");

	rec(3, 1, 3000);
	CHECK(sl_idem_check(&win, 3, &hit) == SL_IDEM_PENDING && hit != NULL &&
	      hit->id == 3000, "pending entry is PENDING with a hit");
	rec(3, 0, 3001);
	CHECK(sl_idem_check(&win, 3, &hit) == SL_IDEM_DUP && hit->id == 3001,
	      "re-recording the final answer turns PENDING into DUP");

	/* seq 1 + WINDOW shares seq 1's slot. */
	CHECK(sl_idem_check(&win, 1 + SL_IDEM_WINDOW, &hit) == SL_IDEM_NEW,
	      "seq 1+W over an older occupant is NEW");
	rec(1 + SL_IDEM_WINDOW, 0, 5);
	CHECK(sl_idem_check(&win, 1, &hit) == SL_IDEM_OLD && hit == NULL,
	      "seq 1 after 1+W took its slot is OLD");
	CHECK(sl_idem_check(&win, 1 + SL_IDEM_WINDOW, &hit) == SL_IDEM_DUP,
	      "seq 1+W is DUP");
	rec(1, 0, 6);
	CHECK(sl_idem_check(&win, 1 + SL_IDEM_WINDOW, &hit) == SL_IDEM_DUP && hit->id == 5,
	      "recording an older seq never evicts a newer one");
	CHECK(sl_idem_check(&win, 2, &hit) == SL_IDEM_DUP, "seq 2 still DUP");
	CHECK(sl_idem_check(&win, 3, NULL) == SL_IDEM_DUP, "hit pointer may be NULL");
}

static void
test_wrap(void)
{
	const uint64_t total = 200 * SL_IDEM_WINDOW + 17;
	const uint64_t live = SL_IDEM_WINDOW / 2;	/* requests in flight */
	unsigned int bad = 0;
	uint64_t s;

	sl_idem_bind(&win, 43);
	CHECK(sl_idem_check(&win, 1, NULL) == SL_IDEM_NEW, "rebinding clears the window");
	for (s = 1; s <= total; s++) {
		const struct sl_idem_entry *hit;
		uint64_t back;

		if (sl_idem_check(&win, s, &hit) != SL_IDEM_NEW)
			bad++;
		rec(s, 1, s);
		if (sl_idem_check(&win, s, &hit) != SL_IDEM_PENDING || hit->id != s)
			bad++;
		/* the answer of s - live becomes final */
		if (s > live) {
			rec(s - live, 0, s - live);
			if (sl_idem_check(&win, s - live, &hit) != SL_IDEM_DUP ||
			    hit->id != s - live)
				bad++;
		}
		/* everything within the last WINDOW seqs is still known */
		for (back = 1; back < SL_IDEM_WINDOW && back < s; back += 13) {
			enum sl_idem_verdict v = sl_idem_check(&win, s - back, &hit);

			if ((v != SL_IDEM_DUP && v != SL_IDEM_PENDING) || hit->seq != s - back)
				bad++;
			if ((v == SL_IDEM_PENDING) != (back < live))
				bad++;
		}
		/* one window back and older: OLD */
		if (s > SL_IDEM_WINDOW &&
		    sl_idem_check(&win, s - SL_IDEM_WINDOW, &hit) != SL_IDEM_OLD)
			bad++;
		if (s > 3 * SL_IDEM_WINDOW &&
		    sl_idem_check(&win, s - 3 * SL_IDEM_WINDOW + 5, &hit) != SL_IDEM_OLD)
			bad++;
		/* the future is NEW */
		if (sl_idem_check(&win, s + 1, &hit) != SL_IDEM_NEW ||
		    sl_idem_check(&win, s + SL_IDEM_WINDOW - 1, &hit) != SL_IDEM_NEW)
			bad++;
		if (bad != 0)
			break;
	}
	CHECK(bad == 0, "wraparound over %llu seqs (%llu windows): NEW/PENDING/DUP/OLD "
	      "as expected (%u mismatches)", (unsigned long long)total,
	      (unsigned long long)(total / SL_IDEM_WINDOW), bad);
}

static void
test_rebind(void)
{
	const struct sl_idem_entry *hit;
	int i;

	sl_idem_bind(&win, 100);
	for (i = 1; i <= 50; i++)
		rec((uint64_t)i, 0, (uint64_t)i);
	CHECK(sl_idem_check(&win, 10, &hit) == SL_IDEM_DUP, "session 100 knows seq 10");
	sl_idem_bind(&win, 100);
	CHECK(sl_idem_check(&win, 10, &hit) == SL_IDEM_DUP,
	      "binding the same session keeps the window");
	sl_idem_bind(&win, 101);
	CHECK(win.session == 101, "rebind to session 101");
	for (i = 1; i <= 50; i++)
		QCHECK(sl_idem_check(&win, (uint64_t)i, &hit) == SL_IDEM_NEW,
		       "seq %d NEW after rebind", i);
	CHECK(sl_idem_check(&win, 10, &hit) == SL_IDEM_NEW && hit == NULL,
	      "rebinding to another session clears every entry");
	for (i = 0; i < SL_IDEM_WINDOW; i++)
		QCHECK(win.e[i].seq == 0 && win.e[i].id == 0, "slot %d zeroed", i);
	CHECK(n_fail == 0, "all %d slots zeroed after rebind", SL_IDEM_WINDOW);
	sl_idem_bind(&win, 100);
	CHECK(sl_idem_check(&win, 10, &hit) == SL_IDEM_NEW,
	      "going back to session 100 does not resurrect its entries");
}

/*
 * docs/protocol.md 8.4: the window is the last SL_IDEM_WINDOW sequence numbers. A seq
 * more than WINDOW - 1 behind the highest recorded one is refused even when its slot was
 * never used (the seqs in between went to another worker, were NOACK, or were never
 * sent): a stray or forged old request must not be executed.
 */
static void
test_beyond_window(void)
{
	const struct sl_idem_entry *hit;
	unsigned int fails;
	uint64_t s;
	int i;

	sl_idem_bind(&win, 200);
	for (i = 1; i <= 10; i++)
		rec((uint64_t)i, 0, (uint64_t)i);
	rec(500, 0, 500);
	CHECK(sl_idem_check(&win, 20, &hit) == SL_IDEM_OLD && hit == NULL,
	      "seq 20 after 500: 480 behind, its slot never used: OLD, not executed");
	CHECK(sl_idem_check(&win, 5, &hit) == SL_IDEM_OLD,
	      "seq 5 (recorded once, 495 behind): OLD");
	CHECK(sl_idem_check(&win, 500 - SL_IDEM_WINDOW, &hit) == SL_IDEM_OLD,
	      "seq top - WINDOW: OLD (the window holds top - WINDOW + 1 .. top)");
	CHECK(sl_idem_check(&win, 500 - SL_IDEM_WINDOW + 1, &hit) == SL_IDEM_NEW,
	      "seq top - WINDOW + 1: inside the window, never seen: NEW");
	CHECK(sl_idem_check(&win, 499, &hit) == SL_IDEM_NEW, "seq 499: NEW");
	CHECK(sl_idem_check(&win, 500, &hit) == SL_IDEM_DUP && hit->id == 500, "seq 500: DUP");
	CHECK(sl_idem_check(&win, 501, &hit) == SL_IDEM_NEW, "seq 501: NEW");
	/* recording outside the window changes nothing */
	rec(20, 0, 20);
	CHECK(sl_idem_check(&win, 20, &hit) == SL_IDEM_OLD, "recording seq 20 is ignored");
	CHECK(win.e[20 % SL_IDEM_WINDOW].seq != 20, "its slot was not written");
	/* the top only moves forward: recording an older seq in the window keeps it */
	rec(450, 0, 450);
	CHECK(sl_idem_check(&win, 450, &hit) == SL_IDEM_DUP, "seq 450 in the window recorded");
	CHECK(sl_idem_check(&win, 500 - SL_IDEM_WINDOW, &hit) == SL_IDEM_OLD,
	      "top still 500 after recording 450");
	/* the extremes: a seq near 2^64 */
	rec(UINT64_MAX - 1, 0, 7);
	CHECK(sl_idem_check(&win, UINT64_MAX - 1, &hit) == SL_IDEM_DUP, "seq 2^64 - 2 recorded");
	CHECK(sl_idem_check(&win, UINT64_MAX, &hit) == SL_IDEM_NEW, "seq 2^64 - 1: NEW");
	CHECK(sl_idem_check(&win, 501, &hit) == SL_IDEM_OLD, "seq 501 now far behind: OLD");
	CHECK(sl_idem_check(&win, UINT64_MAX - 1 - SL_IDEM_WINDOW, &hit) == SL_IDEM_OLD &&
		      sl_idem_check(&win, UINT64_MAX - SL_IDEM_WINDOW, &hit) == SL_IDEM_NEW,
	      "top 2^64 - 2: top - WINDOW is OLD, top - WINDOW + 1 is NEW (no wrap)");
	/* a fresh session: a client that starts at a high seq */
	sl_idem_bind(&win, 201);
	CHECK(sl_idem_check(&win, 1, &hit) == SL_IDEM_NEW, "rebinding clears the top too");
	/* holes: every other seq recorded, the ones never seen inside the window are NEW */
	for (s = 1; s <= 4 * SL_IDEM_WINDOW; s += 2)
		rec(s, 0, s);
	fails = n_fail;
	for (s = 1; s <= 4 * SL_IDEM_WINDOW; s++) {
		enum sl_idem_verdict v = sl_idem_check(&win, s, &hit);
		uint64_t top = 4 * SL_IDEM_WINDOW - 1;
		enum sl_idem_verdict want = top - s >= SL_IDEM_WINDOW && s < top ? SL_IDEM_OLD :
					    (s & 1) ? SL_IDEM_DUP : SL_IDEM_NEW;

		QCHECK(v == want, "seq %llu: verdict %d, want %d", (unsigned long long)s, v, want);
	}
	CHECK(n_fail == fails, "holes: OLD below the window, DUP/NEW inside it");
}

/* Order across retryable refusals: what a hole lets through, in which order it passes,
 * and the ways it closes without its retry. */
static void
test_order(void)
{
	static const char parts[SL_IDEM_HOLES + 1];
	const void *a = &parts[0], *b = &parts[1];
	const uint64_t T = SL_IDEM_HOLE_NS;
	int i, ok;

	sl_idem_bind(&win, 300);
	CHECK(sl_idem_order_check(&win, a, 5, 1, 0) == SL_IDEM_ORDER_GO, "no hole: GO");
	CHECK(sl_idem_order_note(&win, a, 5, 1, 0) == 0 && win.nholes == 1,
	      "seq 5 refused busy: a hole opens");
	CHECK(sl_idem_order_check(&win, a, 6, 1, 0) == SL_IDEM_ORDER_BLOCK &&
		      sl_idem_order_check(&win, a, 7, 1, 0) == SL_IDEM_ORDER_BLOCK,
	      "seqs 6 and 7 to the same partition: BLOCK");
	CHECK(sl_idem_order_check(&win, b, 6, 1, 0) == SL_IDEM_ORDER_GO,
	      "seq 6 to another partition: GO");
	CHECK(sl_idem_order_check(&win, a, 4, 1, 0) == SL_IDEM_ORDER_GO &&
		      sl_idem_order_check(&win, a, 5, 1, 0) == SL_IDEM_ORDER_GO,
	      "the refused seq 5 and the earlier seq 4: GO");
	sl_idem_order_note(&win, a, 5, 0, 1);
	CHECK(win.holes[0].base == 6 && sl_idem_order_check(&win, a, 7, 1, 1) ==
		      SL_IDEM_ORDER_BLOCK,
	      "5 accepted: 6 (refused meanwhile) is next, 7 still BLOCK");
	sl_idem_order_note(&win, a, 6, 0, 2);
	CHECK(win.holes[0].base == 7 && sl_idem_order_check(&win, a, 7, 1, 2) ==
		      SL_IDEM_ORDER_GO, "6 accepted: 7 GO");
	sl_idem_order_note(&win, a, 7, 0, 3);
	CHECK(win.nholes == 0 && win.holes[0].part == NULL &&
		      sl_idem_order_check(&win, a, 8, 1, 3) == SL_IDEM_ORDER_GO,
	      "7 accepted: the hole is closed, 8 GO");

	/* an earlier seq refused after a later one (it arrived late) */
	sl_idem_order_note(&win, a, 20, 1, 0);
	CHECK(sl_idem_order_check(&win, a, 21, 1, 0) == SL_IDEM_ORDER_BLOCK,
	      "20 refused: 21 BLOCK");
	sl_idem_order_note(&win, a, 18, 1, 0);
	CHECK(win.holes[0].base == 18 && sl_idem_order_check(&win, a, 19, 1, 0) ==
		      SL_IDEM_ORDER_BLOCK && sl_idem_order_check(&win, a, 20, 1, 0) ==
		      SL_IDEM_ORDER_BLOCK,
	      "18 refused after 20: 18 is first, 19 and 20 BLOCK");
	ok = 1;
	for (i = 18; i <= 21; i++) {
		ok &= win.holes[0].base == (uint64_t)i &&
		      sl_idem_order_check(&win, a, (uint64_t)i, 1, 0) == SL_IDEM_ORDER_GO;
		sl_idem_order_note(&win, a, (uint64_t)i, 0, 0);
	}
	CHECK(ok && win.nholes == 0, "then 18, 19, 20, 21 pass one after the other, closed");

	/* across the two words of the set, both ways */
	sl_idem_order_note(&win, a, 1000, 1, 0);
	sl_idem_order_check(&win, a, 1070, 1, 0);
	sl_idem_order_check(&win, a, 1100, 1, 0);
	sl_idem_order_note(&win, a, 1000, 0, 0);
	CHECK(win.holes[0].base == 1070 && sl_idem_order_check(&win, a, 1100, 1, 0) ==
		      SL_IDEM_ORDER_BLOCK, "1000 accepted: 1070 next (70 on)");
	sl_idem_order_note(&win, a, 1070, 0, 0);
	sl_idem_order_note(&win, a, 1100, 0, 0);
	CHECK(win.nholes == 0, "1070 then 1100 accepted: closed");
	sl_idem_order_note(&win, a, 2000, 1, 0);
	sl_idem_order_check(&win, a, 2060, 1, 0);
	sl_idem_order_note(&win, a, 1990, 1, 0);
	ok = win.holes[0].base == 1990;
	sl_idem_order_note(&win, a, 1990, 0, 0);
	ok &= win.holes[0].base == 2000;
	sl_idem_order_note(&win, a, 2000, 0, 0);
	ok &= win.holes[0].base == 2060;
	sl_idem_order_note(&win, a, 2060, 0, 0);
	CHECK(ok && win.nholes == 0, "a base moved down across a word: 1990, 2000, 2060");

	/* closed without the retry: base not retried for SL_IDEM_HOLE_NS */
	sl_idem_order_note(&win, a, 30, 1, 0);
	CHECK(sl_idem_order_check(&win, a, 31, 1, T - 1) == SL_IDEM_ORDER_BLOCK,
	      "just under the hole timeout: BLOCK");
	sl_idem_order_note(&win, a, 30, 1, T - 1);
	CHECK(sl_idem_order_check(&win, a, 31, 1, 2 * T - 2) == SL_IDEM_ORDER_BLOCK,
	      "30 retried and refused again: the timeout starts over");
	CHECK(sl_idem_order_check(&win, a, 31, 1, 2 * T - 1) == SL_IDEM_ORDER_CLOSED &&
		      win.nholes == 0 && sl_idem_order_check(&win, a, 32, 1, 2 * T) ==
		      SL_IDEM_ORDER_GO,
	      "30 not retried for the timeout: CLOSED, then GO");
	/* closed: base out of the window */
	sl_idem_order_note(&win, a, 100, 1, 0);
	CHECK(sl_idem_order_check(&win, a, 100 + SL_IDEM_WINDOW - 1, 1, 0) ==
		      SL_IDEM_ORDER_BLOCK && sl_idem_order_check(&win, a, 100 + SL_IDEM_WINDOW, 1,
								 0) == SL_IDEM_ORDER_CLOSED,
	      "a seq a window past base: CLOSED");
	/* every hole in use */
	ok = 1;
	for (i = 0; i < SL_IDEM_HOLES; i++)
		ok &= sl_idem_order_note(&win, &parts[i], 200, 1, 0) == 0;
	CHECK(ok && sl_idem_order_note(&win, &parts[SL_IDEM_HOLES], 200, 1, 1) == -1,
	      "%d holes: the next partition's refusal is not tracked", SL_IDEM_HOLES);
	CHECK(sl_idem_order_note(&win, &parts[SL_IDEM_HOLES], 200, 1, T) == 0 &&
		      win.nholes == 1,
	      "once the others are stale, they make room");
	sl_idem_bind(&win, 301);
	CHECK(win.nholes == 0 && sl_idem_order_check(&win, &parts[SL_IDEM_HOLES], 201, 1, T) ==
		      SL_IDEM_ORDER_GO, "another session in the slot: no hole");
}

int
main(void)
{
	test_classify();
	test_wrap();
	test_rebind();
	test_beyond_window();
	test_order();
	return check_report();
}
