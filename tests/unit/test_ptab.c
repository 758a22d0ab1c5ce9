/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * Unit test of a partition's producer table (dataplane/ptab.c): the idempotency state
 * that travels with the log, so that a new leader answers a retried (producer, seq) with
 * the original answer instead of writing it twice.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptab.h"
#include "check.h"

static struct sl_ptab tab;

static void
test_check_note(void)
{
	const struct sl_ptab_ent *hit = (const void *)&hit;
	uint64_t pr = 0, sq = 0;

	sl_ptab_init(&tab);
	CHECK(sl_ptab_check(&tab, 0xabc, 1, &hit) == SL_PTAB_NEW && hit == NULL,
	      "unknown producer: NEW");
	CHECK(sl_ptab_check(&tab, 0, 1, &hit) == SL_PTAB_NEW, "producer 0 (none): NEW");
	sl_ptab_note(&tab, 0xabc, 1, 10, 1, 640);
	sl_ptab_note(&tab, 0xabc, 2, 11, 3, 704);
	sl_ptab_note(&tab, 0, 3, 14, 1, 900);	/* no producer: not remembered */
	CHECK(sl_ptab_count(&tab) == 1, "one producer held");
	CHECK(sl_ptab_check(&tab, 0xabc, 1, &hit) == SL_PTAB_DUP && hit != NULL &&
		      hit->id == 10 && hit->count == 1 && hit->offset == 640,
	      "a retry of seq 1: DUP with the original id, count and offset");
	CHECK(sl_ptab_check(&tab, 0xabc, 2, &hit) == SL_PTAB_DUP && hit->id == 11 &&
		      hit->count == 3, "an MPUB: DUP with its first id and count");
	CHECK(sl_ptab_check(&tab, 0xabc, 3, &hit) == SL_PTAB_NEW, "the next seq: NEW");
	CHECK(sl_ptab_check(&tab, 0xdef, 1, &hit) == SL_PTAB_NEW,
	      "another producer's seq 1: NEW");
	CHECK(sl_ptab_find_id(&tab, 11, &pr, &sq) == 0 && pr == 0xabc && sq == 2,
	      "the record at id 11 carries (producer, seq 2)");
	CHECK(sl_ptab_find_id(&tab, 12, &pr, &sq) == -1,
	      "id 12 (inside an MPUB, no record starts there): no tag");
	CHECK(sl_ptab_find_id(&tab, 14, &pr, &sq) == -1, "a record without producer: no tag");
	/* a seq below the highest that was never written (a lost datagram): NEW */
	sl_ptab_note(&tab, 0xabc, 5, 15, 1, 1000);
	CHECK(sl_ptab_check(&tab, 0xabc, 4, &hit) == SL_PTAB_NEW,
	      "seq 4, never written, below the highest held (5): NEW");
}

static void
test_window(void)
{
	const struct sl_ptab_ent *hit;
	uint64_t s;

	sl_ptab_init(&tab);
	for (s = 1; s <= SL_PTAB_SEQS + 10; s++)
		sl_ptab_note(&tab, 7, s, 100 + s, 1, s * 64);
	CHECK(sl_ptab_check(&tab, 7, 11, &hit) == SL_PTAB_DUP && hit->id == 111,
	      "the last %d seqs are held (seq 11)", SL_PTAB_SEQS);
	CHECK(sl_ptab_check(&tab, 7, SL_PTAB_SEQS + 10, &hit) == SL_PTAB_DUP,
	      "the newest is held");
	CHECK(sl_ptab_check(&tab, 7, 10, &hit) == SL_PTAB_OLD && hit == NULL,
	      "seq 10 was forgotten: OLD (outcome unknown, nothing written)");
	CHECK(sl_ptab_check(&tab, 7, 1, &hit) == SL_PTAB_OLD, "seq 1: OLD");
	CHECK(sl_ptab_check(&tab, 7, SL_PTAB_SEQS + 11, &hit) == SL_PTAB_NEW, "next: NEW");
	/* written out of seq order: forgetting a high seq makes everything below it OLD */
	sl_ptab_init(&tab);
	sl_ptab_note(&tab, 7, 50, 1, 1, 0);
	for (s = 1; s <= SL_PTAB_SEQS + 1; s++)
		if (s != 50)
			sl_ptab_note(&tab, 7, s, 1 + s, 1, 0);
	CHECK(tab.p[0].floor == 50 && sl_ptab_check(&tab, 7, 49, &hit) == SL_PTAB_DUP,
	      "seq 50 forgotten: floor 50, seq 49 still held");
	CHECK(sl_ptab_check(&tab, 7, 50, &hit) == SL_PTAB_OLD, "seq 50: OLD");
	CHECK(sl_ptab_check(&tab, 7, SL_PTAB_SEQS + 2, &hit) == SL_PTAB_NEW,
	      "a seq above floor and every held one: NEW");
}

static void
test_truncate(void)
{
	const struct sl_ptab_ent *hit;
	uint64_t pr, sq;

	sl_ptab_init(&tab);
	sl_ptab_note(&tab, 1, 1, 1, 1, 0);
	sl_ptab_note(&tab, 2, 1, 2, 2, 64);
	sl_ptab_note(&tab, 1, 2, 4, 1, 192);
	sl_ptab_note(&tab, 2, 2, 5, 1, 256);
	sl_ptab_truncate(&tab, 3);	/* a rollback: ids 4 and 5 are gone */
	CHECK(sl_ptab_check(&tab, 1, 2, &hit) == SL_PTAB_NEW,
	      "a rolled back publish is not written any more: NEW");
	CHECK(sl_ptab_check(&tab, 2, 2, &hit) == SL_PTAB_NEW, "the other producer's too");
	CHECK(sl_ptab_check(&tab, 2, 1, &hit) == SL_PTAB_DUP && hit->id == 2,
	      "what stays in the log stays known");
	CHECK(sl_ptab_find_id(&tab, 4, &pr, &sq) == -1, "no tag past the cut");
	sl_ptab_truncate(&tab, 0);
	CHECK(sl_ptab_count(&tab) == 0, "a cut to 0 forgets every producer");
	/* the replica rewrites the cut ids with another leader's records */
	sl_ptab_note(&tab, 3, 9, 1, 1, 0);
	CHECK(sl_ptab_find_id(&tab, 1, &pr, &sq) == 0 && pr == 3 && sq == 9,
	      "a rewritten id carries its new tag");
}

static void
test_bounded(void)
{
	const struct sl_ptab_ent *hit;
	uint64_t i;
	int ok = 1;

	sl_ptab_init(&tab);
	/* a hostile client: a new producer id for every publish */
	for (i = 1; i <= 100000; i++)
		sl_ptab_note(&tab, i, 1, i, 1, 0);
	CHECK(sl_ptab_count(&tab) == SL_PTAB_PRODUCERS &&
		      tab.evictions == 100000 - SL_PTAB_PRODUCERS,
	      "100,000 producers: %u held (fixed memory, %zu bytes), %llu evicted",
	      sl_ptab_count(&tab), sizeof(tab), (unsigned long long)tab.evictions);
	for (i = 100000 - SL_PTAB_PRODUCERS + 1; i <= 100000; i++)
		ok &= sl_ptab_check(&tab, i, 1, &hit) == SL_PTAB_DUP;
	CHECK(ok, "the %d most recent producers are the ones held", SL_PTAB_PRODUCERS);
	/* LRU: a producer that keeps writing is not evicted by newcomers */
	sl_ptab_init(&tab);
	for (i = 1; i <= 1000; i++) {
		sl_ptab_note(&tab, 0x5eed, i, 2 * i - 1, 1, 0);
		sl_ptab_note(&tab, 1000 + i, 1, 2 * i, 1, 0);
	}
	CHECK(sl_ptab_check(&tab, 0x5eed, 1000, &hit) == SL_PTAB_DUP &&
		      hit->id == 1999, "a busy producer stays while one-shot ones come and go");
}

static struct sl_ptab tab2;
static struct sl_crec recs[4 * SL_PTAB_SEQS];

/* A tagged commit record as the disk log gives it back. */
static struct sl_crec
rec(uint64_t id, uint32_t n, uint64_t off, uint64_t producer, uint64_t seq)
{
	return (struct sl_crec){.log_id = id, .last_msg_log_id = id + n - 1, .msg_offset = off,
				.msg_num = n, .producer = producer, .pseq = seq};
}

/* A node restarted from its data directory rebuilds its producer table from the tags of
 * the log's newest commit records: the same table the live one was after writing them,
 * and, when older records were not read, seqs below what it holds answer OLD, not NEW. */
static void
test_rebuild(void)
{
	const struct sl_ptab_ent *hit;
	uint32_t n = 0, i;
	uint64_t s, id = 1000;

	sl_ptab_init(&tab);
	for (s = 1; s <= SL_PTAB_SEQS + 36; s++) {
		recs[n] = rec(id, 2, 64 * id, 0xabc, s);
		sl_ptab_note(&tab, 0xabc, s, id, 2, 64 * id);
		id += 2;
		n++;
		recs[n++] = rec(id, 1, 64 * id, 0, 0);	/* an untagged publish */
		id++;
	}
	recs[n++] = rec(id, 1, 64 * id, 0xdef, 7);
	sl_ptab_note(&tab, 0xdef, 7, id, 1, 64 * id);
	id++;
	sl_ptab_rebuild(&tab2, recs, n, 0);
	CHECK(sl_ptab_count(&tab2) == 2, "both producers back");
	CHECK(sl_ptab_check(&tab2, 0xabc, 50, &hit) == SL_PTAB_DUP && hit->id == 1000 + 49 * 3 &&
		      hit->count == 2 && hit->offset == 64 * hit->id,
	      "a retry of seq 50 after the restart: DUP with the original id");
	CHECK(sl_ptab_check(&tab2, 0xdef, 7, &hit) == SL_PTAB_DUP && hit->id == id - 1,
	      "the other producer's retry: DUP");
	CHECK(sl_ptab_check(&tab2, 0xabc, 36, &hit) == SL_PTAB_OLD,
	      "seqs the live table forgot (the ring's floor): OLD");
	CHECK(sl_ptab_check(&tab2, 0xabc, SL_PTAB_SEQS + 37, &hit) == SL_PTAB_NEW,
	      "the next seq: NEW");
	CHECK(memcmp(tab.p, tab2.p, sizeof(tab.p)) == 0,
	      "the rebuilt table is the live one, entry for entry");
	/* LRU kept: 14 new producers and one more evict 0xabc (older), not 0xdef */
	for (s = 1; s <= 15; s++)
		sl_ptab_note(&tab2, 0x100 + s, 1, 6000 + s, 1, 0);
	CHECK(sl_ptab_check(&tab2, 0xdef, 7, &hit) == SL_PTAB_DUP &&
		      sl_ptab_check(&tab2, 0xabc, 60, &hit) == SL_PTAB_NEW,
	      "the rebuilt LRU order: the least recently written producer goes first");

	/* the read stopped before the log's start: the window holds seqs 101..110 of
	 * 0xabc; 90 (older, maybe written before the window) cannot be told */
	n = 0;
	for (s = 101; s <= 110; s++)
		recs[n++] = rec(5000 + s, 1, 0, 0xabc, s);
	sl_ptab_rebuild(&tab2, recs, n, 1);
	CHECK(sl_ptab_check(&tab2, 0xabc, 105, &hit) == SL_PTAB_DUP && hit->id == 5105,
	      "cut window: a held seq is DUP");
	CHECK(sl_ptab_check(&tab2, 0xabc, 90, &hit) == SL_PTAB_OLD,
	      "cut window: a seq below the window is OLD (not written twice)");
	CHECK(sl_ptab_check(&tab2, 0xabc, 111, &hit) == SL_PTAB_NEW, "cut window: next is NEW");
	sl_ptab_rebuild(&tab2, recs, n, 0);
	CHECK(sl_ptab_check(&tab2, 0xabc, 90, &hit) == SL_PTAB_NEW,
	      "the whole log read: a seq it never held is NEW");
	for (i = 0; i < n; i++)
		recs[i].producer = recs[i].pseq = 0;
	sl_ptab_rebuild(&tab2, recs, n, 1);
	CHECK(sl_ptab_count(&tab2) == 0, "untagged records: an empty table");
	sl_ptab_rebuild(&tab2, NULL, 0, 0);
	CHECK(sl_ptab_count(&tab2) == 0 && tab2.evictions == 0, "an empty log: an empty table");
}

int
main(void)
{
	test_check_note();
	test_window();
	test_truncate();
	test_bounded();
	test_rebuild();
	return check_report();
}
