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
static uint8_t snap[SL_PTAB_SNAP_MAX], snap2[SL_PTAB_SNAP_MAX];

/* A node restarted from its data directory reloads its producer table from a snapshot:
 * the retry of a publish it already holds is answered, not written twice. A torn,
 * corrupt or foreign snapshot is refused whole, never half loaded. */
static void
test_snapshot(void)
{
	const struct sl_ptab_ent *hit;
	const uint64_t last = SL_PTAB_SEQS + 37;
	uint64_t end = 0, s;
	int len, len2, bad;
	size_t i;

	sl_ptab_init(&tab);
	/* seqs 1..37 forgotten by the end: floor 37, whatever SL_PTAB_SEQS */
	for (s = 1; s <= SL_PTAB_SEQS + 36; s++)
		sl_ptab_note(&tab, 0xabc, s, 1000 + 2 * s, 2, 64 * s);
	sl_ptab_note(&tab, 0xdef, 7, 5000, 1, 9000);
	sl_ptab_note(&tab, 0xabc, last, 5001, 1, 9064);	/* 0xabc most recent */
	len = sl_ptab_snap_encode(&tab, 5001, snap, sizeof(snap));
	CHECK(len == SL_PTAB_SNAP_HDR + 2 * SL_PTAB_SNAP_PROD +
			     (SL_PTAB_SEQS + 1) * SL_PTAB_SNAP_ENT,
	      "snapshot of 2 producers, %d entries: %d bytes", SL_PTAB_SEQS + 1, len);
	CHECK(sl_ptab_snap_encode(&tab, 5001, snap2, (size_t)len - 1) == -ENOSPC,
	      "a buffer one byte short: -ENOSPC");
	CHECK(memcmp(snap, "SLPT", 4) == 0 && snap[4] == 1 && snap[5] == 0,
	      "magic SLPT, version 1, at the top");

	CHECK(sl_ptab_snap_decode(&tab2, snap, (size_t)len, &end) == 0 && end == 5001,
	      "the snapshot loads, covering the log to id 5001");
	CHECK(sl_ptab_count(&tab2) == 2, "both producers back");
	CHECK(sl_ptab_check(&tab2, 0xabc, 50, &hit) == SL_PTAB_DUP && hit->id == 1100 &&
		      hit->count == 2 && hit->offset == 3200,
	      "a retry of seq 50 after the restart: DUP with the original id");
	CHECK(sl_ptab_check(&tab2, 0xdef, 7, &hit) == SL_PTAB_DUP && hit->id == 5000,
	      "the other producer's retry: DUP");
	CHECK(sl_ptab_check(&tab2, 0xabc, 36, &hit) == SL_PTAB_OLD, "the floor survives: OLD");
	CHECK(sl_ptab_check(&tab2, 0xabc, last + 1, &hit) == SL_PTAB_NEW, "the next seq: NEW");
	len2 = sl_ptab_snap_encode(&tab2, 5001, snap2, sizeof(snap2));
	CHECK(len2 == len && memcmp(snap, snap2, (size_t)len) == 0,
	      "reloaded and written again: the same bytes (LRU order kept)");
	/* LRU kept: 14 new producers and one more evict 0xdef (the older), not 0xabc */
	for (s = 1; s <= 15; s++)
		sl_ptab_note(&tab2, 0x100 + s, 1, 6000 + s, 1, 0);
	CHECK(sl_ptab_check(&tab2, 0xabc, last, &hit) == SL_PTAB_DUP &&
		      sl_ptab_check(&tab2, 0xdef, 7, &hit) == SL_PTAB_NEW,
	      "the reloaded LRU order: the least recently written producer goes first");

	for (i = 0, bad = 0; i < (size_t)len; i++)
		if (sl_ptab_snap_decode(&tab2, snap, i, &end) == 0 || sl_ptab_count(&tab2) != 0)
			bad++;
	CHECK(bad == 0, "every torn snapshot (0..%d bytes) refused, the table left empty",
	      len - 1);
	for (i = 0, bad = 0; i < (size_t)len; i++) {
		snap[i] ^= 0x10;
		if (sl_ptab_snap_decode(&tab2, snap, (size_t)len, &end) == 0 ||
		    sl_ptab_count(&tab2) != 0)
			bad++;
		snap[i] ^= 0x10;
	}
	CHECK(bad == 0, "a flipped bit anywhere: refused, the table left empty");
	memcpy(snap2, snap, (size_t)len);
	memcpy(snap2, "SLDL", 4);
	CHECK(sl_ptab_snap_decode(&tab2, snap2, (size_t)len, &end) == -EPROTO,
	      "a foreign file (another magic): -EPROTO");
	memcpy(snap2, snap, (size_t)len);
	snap2[4] = 2;
	CHECK(sl_ptab_snap_decode(&tab2, snap2, (size_t)len, &end) == -EPROTO,
	      "a later version: -EPROTO");
	CHECK(sl_ptab_snap_decode(&tab2, snap, (size_t)len, &end) == 0,
	      "the intact snapshot still loads");

	sl_ptab_init(&tab);
	len = sl_ptab_snap_encode(&tab, 0, snap, sizeof(snap));
	CHECK(len == SL_PTAB_SNAP_HDR && sl_ptab_snap_decode(&tab2, snap, (size_t)len, &end) == 0 &&
		      end == 0 && sl_ptab_count(&tab2) == 0, "an empty table round-trips");
}

int
main(void)
{
	test_check_note();
	test_window();
	test_truncate();
	test_bounded();
	test_snapshot();
	return check_report();
}
