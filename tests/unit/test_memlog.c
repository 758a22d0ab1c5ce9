/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * Unit test of the in-memory partition log (storage/memlog.c), including resets and a
 * randomized test against a reference model.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "err.h"
#include "memlog.h"
#include "check.h"


#define RS(len) SL_MEMLOG_REC_SIZE(len)

static uint8_t buf[1 << 20];

/* Deterministic message contents. */
static void
fill(uint8_t *p, uint32_t len, uint32_t seed)
{
	uint32_t i;

	for (i = 0; i < len; i++)
		p[i] = (uint8_t)(seed * 131 + i * 31 + (i >> 8));
}

static int
same(const uint8_t *p, uint32_t len, uint32_t seed)
{
	uint32_t i;

	for (i = 0; i < len; i++)
		if (p[i] != (uint8_t)(seed * 131 + i * 31 + (i >> 8)))
			return 0;
	return 1;
}

/* The index sizing rule of memlog.h: the expected number of index slots. */
static uint64_t
exp_slots(size_t mem_len, uint32_t hint)
{
	uint64_t n = mem_len / RS(hint ? hint : 64), s = 1;

	while (s * 2 <= n)
		s *= 2;
	while (s > 16 && s * 8 > mem_len / 4)
		s /= 2;
	return s < 16 ? 16 : s;
}

struct region {
	void *mem;
	size_t len;
	struct sl_memlog *log;
};

static struct sl_memlog *
mk(struct region *r, size_t len, uint32_t hint)
{
	struct sl_memlog_conf c = {0};

	r->mem = aligned_alloc(64, (len + 63) & ~(size_t)63);
	if (r->mem == NULL)
		exit(EXIT_FAILURE);
	memset(r->mem, 0xcc, len);	/* nothing may rely on zeroed memory */
	r->len = len;
	c.mem = r->mem;
	c.mem_len = len;
	c.avg_msg_hint = hint;
	r->log = sl_memlog_open(&c);
	if (r->log == NULL) {
		printf("FAIL - sl_memlog_open(%zu, %u): errno %d\n", len, hint, errno);
		exit(EXIT_FAILURE);
	}
	return r->log;
}

static void
rm(struct region *r)
{
	sl_memlog_close(r->log);
	free(r->mem);
}

static int
app(struct sl_memlog *log, uint32_t len, uint32_t seed, uint64_t ts, struct sl_memlog_rec *p)
{
	struct sl_memlog_rec tmp;

	fill(buf, len, seed);
	return sl_memlog_append(log, buf, len, ts, seed, p != NULL ? p : &tmp);
}

/* read id and compare with (len, seed), trace_id == seed by convention */
static int
rd_ok(struct sl_memlog *log, uint64_t id, uint32_t len, uint32_t seed)
{
	struct sl_memlog_rec r;

	return sl_memlog_read(log, id, &r) == 0 && r.id == id && r.len == len &&
	       r.trace_id == seed && same(r.data, len, seed);
}

static void
test_open(void)
{
	struct sl_memlog_conf c = { .mem = buf, .mem_len = 4096 };
	struct sl_memlog_conf b;
	struct region r;
	struct sl_memlog *log;
	static const struct {
		size_t len;
		uint32_t hint;
	} sz[] = { { 4096, 0 }, { 4096, 100000 }, { 65536, 1 }, { 1 << 20, 0 },
		   { 1 << 20, 4000 }, { 12345 * 8, 64 } };
	unsigned int i;
	int ok = 1;

	errno = 0;
	CHECK(sl_memlog_open(NULL) == NULL && errno == EINVAL, "open refuses a NULL conf");
	b = c;
	b.mem = NULL;
	errno = 0;
	CHECK(sl_memlog_open(&b) == NULL && errno == EINVAL, "open refuses a NULL region");
	b = c;
	b.mem_len = 4095;
	errno = 0;
	CHECK(sl_memlog_open(&b) == NULL && errno == EINVAL, "open refuses 4095 bytes");
	b = c;
	b.mem = buf + 4;
	errno = 0;
	CHECK(sl_memlog_open(&b) == NULL && errno == EINVAL, "open refuses a misaligned region");

	for (i = 0; i < sizeof(sz) / sizeof(sz[0]); i++) {
		uint64_t s = exp_slots(sz[i].len, sz[i].hint);

		log = mk(&r, sz[i].len, sz[i].hint);
		ok &= sl_memlog_capacity(log) == ((sz[i].len - s * 8) & ~(uint64_t)7);
		ok &= s * 8 <= sz[i].len / 4 && (s & (s - 1)) == 0 && s >= 16;
		ok &= sl_memlog_first_id(log) == 1 && sl_memlog_end_id(log) == 0 &&
		      sl_memlog_end_offset(log) == 0 && sl_memlog_used(log) == 0;
		rm(&r);
	}
	CHECK(ok, "index sized as documented (power of two, >= 16, <= 1/4), empty state");
}

static void
test_roundtrip(void)
{
	struct region rg;
	struct sl_memlog *log = mk(&rg, 65536, 0);
	struct sl_memlog_rec p, r;
	uint64_t off, id;
	uint32_t hdr[2];
	uint64_t hdr64[3];

	CHECK(sl_memlog_find_offset(log, 0, &id) == 0 && id == 1,
	      "empty log: offset 0 is id 1");
	CHECK(sl_memlog_find_offset(log, 8, &id) == -ENOENT, "empty log: offset 8 -ENOENT");
	CHECK(sl_memlog_find_time(log, 0) == 1, "empty log: find_time gives 1");
	CHECK(sl_memlog_read(log, 1, &r) == -ENOENT && sl_memlog_read(log, 0, &r) == -ENOENT,
	      "empty log: read -ENOENT");
	CHECK(sl_memlog_offset_of(log, 1, &off) == 0 && off == 0,
	      "empty log: offset_of(1) == 0");

	CHECK(sl_memlog_append(log, "hello", 5, 100, 7, &p) == 0, "append 'hello'");
	CHECK(p.id == 1 && p.offset == 0 && p.timestamp_ns == 100 && p.len == 5 &&
	      p.trace_id == 7 && memcmp(p.data, "hello", 5) == 0,
	      "position: id 1, offset 0, ts 100, data in the log");
	CHECK(sl_memlog_read(log, 1, &r) == 0 && r.id == 1 && r.offset == 0 && r.len == 5 &&
	      r.timestamp_ns == 100 && r.trace_id == 7 && memcmp(r.data, "hello", 5) == 0,
	      "read back id 1");
	memcpy(hdr, r.data - 32, sizeof(hdr));
	memcpy(hdr64, r.data - 24, sizeof(hdr64));
	CHECK(hdr[0] == (0xA5u << 24 | 5) && hdr[1] == 0 && hdr64[0] == 1 && hdr64[1] == 100 &&
	      hdr64[2] == 7, "record header layout: magic|len, 0, id, ts, trace");
	CHECK(r.data[5] == 0 && r.data[6] == 0 && r.data[7] == 0, "data zero-padded to 8");
	CHECK((r.data - (const uint8_t *)rg.mem) == (ptrdiff_t)(exp_slots(65536, 0) * 8 + 32),
	      "first record right after the index");

	CHECK(app(log, 13, 2, 90, &p) == 0 && p.id == 2 && p.offset == RS(5) &&
	      p.timestamp_ns == 100, "id 2 at offset 40, ts 90 raised to 100");
	CHECK(sl_memlog_end_offset(log) == RS(5) + RS(13) && sl_memlog_end_id(log) == 2,
	      "end offset 88, end id 2");
	CHECK(sl_memlog_used(log) == RS(5) + RS(13), "used 88");
	CHECK(sl_memlog_offset_of(log, 2, &off) == 0 && off == 40 &&
	      sl_memlog_offset_of(log, 3, &off) == 0 && off == 88 &&
	      sl_memlog_offset_of(log, 4, &off) == -ENOENT &&
	      sl_memlog_offset_of(log, 0, &off) == -ENOENT, "offset_of 2, 3 (end), 4, 0");
	CHECK(sl_memlog_read(log, 3, &r) == -ENOENT, "read of an unwritten id -ENOENT");

	CHECK(app(log, 0, 3, 200, &p) == 0 && p.id == 3 && p.len == 0 && p.offset == 88,
	      "zero-length message");
	CHECK(rd_ok(log, 3, 0, 3) && sl_memlog_end_offset(log) == 88 + 32,
	      "zero-length read back, record size 32");
	CHECK(sl_memlog_append(log, NULL, 0, 200, 0, NULL) == 0,
	      "zero-length with NULL data and no position");
	CHECK(sl_memlog_append(log, NULL, 1, 200, 0, NULL) == -EINVAL,
	      "NULL data with length 1 refused");
	CHECK(rd_ok(log, 2, 13, 2), "id 2 intact");
	rm(&rg);
}

static void
test_max_and_too_big(void)
{
	struct region rg;
	struct sl_memlog *log = mk(&rg, 8192, 0);
	uint64_t cap = sl_memlog_capacity(log);
	uint32_t max = (uint32_t)(cap - 32);
	struct sl_memlog_rec p;

	CHECK(app(log, max + 1, 1, 1, NULL) == -SL_E_TOO_BIG,
	      "message bigger than the ring: -SL_E_TOO_BIG");
	CHECK(sl_memlog_append(log, buf, SL_MEMLOG_MAX_MSG + 1, 1, 1, &p) == -SL_E_TOO_BIG,
	      "message over 2^24-1: -SL_E_TOO_BIG");
	CHECK(app(log, max, 5, 1, &p) == 0 && p.id == 1 && sl_memlog_used(log) == cap,
	      "max fitting message (%u bytes) fills the ring", max);
	CHECK(rd_ok(log, 1, max, 5), "max message read back");
	CHECK(app(log, 0, 6, 1, NULL) == -SL_E_FULL, "then even 0 bytes is -SL_E_FULL");
	sl_memlog_trim(log, 2);
	CHECK(sl_memlog_used(log) == 0 && sl_memlog_first_id(log) == 2,
	      "trimmed: empty, first id 2");
	CHECK(app(log, max, 7, 1, &p) == 0 && p.id == 2 && p.offset == RS(max) &&
	      rd_ok(log, 2, max, 7), "max message again, offset %" PRIu64, RS(max));
	CHECK(app(log, max - 8, 8, 1, NULL) == -SL_E_FULL, "full again");
	rm(&rg);
}

static void
test_full(void)
{
	struct region rg;
	struct sl_memlog *log = mk(&rg, 65536, 0);
	uint64_t end_id, end_off, used, id;
	struct sl_memlog_rec p;
	int n = 0, r;

	while ((r = app(log, 1000, (uint32_t)n, 5, &p)) == 0)
		n++;
	CHECK(r == -SL_E_FULL && n == (int)(sl_memlog_capacity(log) / RS(1000)),
	      "full by space after %d messages of 1000 bytes", n);
	end_id = sl_memlog_end_id(log);
	end_off = sl_memlog_end_offset(log);
	used = sl_memlog_used(log);
	CHECK(end_id == (uint64_t)n && end_off == (uint64_t)n * RS(1000) && used == end_off,
	      "end id %d, end offset and used %" PRIu64, n, used);
	CHECK(app(log, 1000, 1, 5, NULL) == -SL_E_FULL && sl_memlog_end_id(log) == end_id &&
	      sl_memlog_end_offset(log) == end_off && sl_memlog_used(log) == used,
	      "failed append wrote nothing (end id, end offset, used unchanged)");
	CHECK(rd_ok(log, (uint64_t)n, 1000, (uint32_t)n - 1), "last message intact");
	sl_memlog_trim(log, 3);
	CHECK(app(log, 1000, 500, 5, &p) == 0 && p.id == (uint64_t)n + 1 &&
	      app(log, 1000, 501, 5, NULL) == 0, "2 trimmed: 2 more fit (wrapped)");
	CHECK(app(log, 1000, 502, 5, NULL) == -SL_E_FULL, "then full again");
	CHECK(rd_ok(log, (uint64_t)n + 1, 1000, 500) && rd_ok(log, 3, 1000, 2),
	      "reads across the wrap");
	CHECK(sl_memlog_find_offset(log, p.offset, &id) == 0 && id == p.id,
	      "find_offset of the wrapped record");
	rm(&rg);

	/* index: 4096 bytes with a huge hint gives the minimum of 16 slots */
	log = mk(&rg, 4096, 100000);
	n = 0;
	while ((r = app(log, 8, (uint32_t)n, 5, NULL)) == 0)
		n++;
	CHECK(r == -SL_E_FULL && n == 16, "full by index after 16 tiny messages (%d)", n);
	used = sl_memlog_used(log);
	CHECK(used == 16 * RS(8) && used * 2 < sl_memlog_capacity(log),
	      "index full while the ring is mostly free");
	CHECK(sl_memlog_end_id(log) == 16 && app(log, 0, 0, 0, NULL) == -SL_E_FULL &&
	      sl_memlog_end_id(log) == 16 && sl_memlog_used(log) == used,
	      "nothing written by the refused appends");
	sl_memlog_trim(log, 2);
	CHECK(app(log, 8, 77, 5, &p) == 0 && p.id == 17 && app(log, 8, 78, 5, NULL) ==
	      -SL_E_FULL, "one trimmed: exactly one more");
	CHECK(rd_ok(log, 17, 8, 77) && rd_ok(log, 2, 8, 1) && sl_memlog_read(log, 1, &p) ==
	      -ENOENT, "id 17 shares id 1's index slot; id 1 is gone");
	rm(&rg);
}

/*
 * Retention over a disk log trims memory once it is more than half full. Small messages
 * (24-byte bodies: 56-byte records, below the 64-byte average the index is sized for)
 * fill the index while the ring is less than half used: half_full must see the index
 * too, or memory is never trimmed and the partition refuses every publish for good.
 * The numbers of a 16 MiB partition (--log-mb 16): 131,072 slots.
 */
static void
test_half_full_small(void)
{
	const size_t len = 16u << 20;
	struct region rg;
	struct sl_memlog *log = mk(&rg, len, 64);
	uint64_t slots = sl_memlog_slots(log), n = 0, first_half = 0;
	int r;

	CHECK(slots == 131072 && slots == exp_slots(len, 64),
	      "16 MiB: %" PRIu64 " index slots", slots);
	CHECK(sl_memlog_count(log) == 0 && !sl_memlog_half_full(log), "empty: not half full");
	while ((r = app(log, 24, (uint32_t)n, 5, NULL)) == 0) {
		n++;
		if (first_half == 0 && sl_memlog_half_full(log))
			first_half = n;
	}
	CHECK(r == -SL_E_FULL && n == slots, "24-byte bodies: full by index after %" PRIu64, n);
	CHECK(sl_memlog_used(log) * 2 < sl_memlog_capacity(log),
	      "the ring is less than half used (%" PRIu64 " of %" PRIu64 " bytes)",
	      sl_memlog_used(log), sl_memlog_capacity(log));
	CHECK(sl_memlog_count(log) == slots, "count %" PRIu64, sl_memlog_count(log));
	CHECK(first_half == slots / 2 + 1,
	      "half full by index once more than half the slots are used (at %" PRIu64 ")",
	      first_half);
	/* what retention does: trim to the (durable) end frees index slots */
	sl_memlog_trim(log, n + 1);
	CHECK(sl_memlog_count(log) == 0 && !sl_memlog_half_full(log) &&
	      app(log, 24, 1, 5, NULL) == 0, "trimmed: empty, the next append fits");
	sl_memlog_trim(log, sl_memlog_end_id(log));
	CHECK(sl_memlog_count(log) == 1, "trim below the last: one retained");
	rm(&rg);

	/* by bytes, as before: big messages make the ring half full first */
	log = mk(&rg, 65536, 64);
	n = 0;
	while (!sl_memlog_half_full(log) && app(log, 1000, (uint32_t)n, 5, NULL) == 0)
		n++;
	CHECK(sl_memlog_half_full(log) && sl_memlog_used(log) * 2 > sl_memlog_capacity(log) &&
		      sl_memlog_count(log) * 2 <= sl_memlog_slots(log),
	      "1000-byte bodies: half full by bytes after %" PRIu64 " messages", n);
	rm(&rg);
}

static void
test_batch(void)
{
	struct region rg;
	struct sl_memlog *log = mk(&rg, 16384, 64);
	static uint8_t d[5][4096];
	const void *datas[5];
	uint32_t lens[5] = { 10, 0, 300, 7, 1000 };
	struct sl_memlog_rec first, r;
	uint64_t used, off;
	int i, ok = 1;

	for (i = 0; i < 5; i++) {
		fill(d[i], sizeof(d[i]), 40 + (uint32_t)i);
		datas[i] = d[i];
	}
	app(log, 100, 1, 1, NULL);
	CHECK(sl_memlog_append_batch(log, 5, datas, lens, 50, 9, &first) == 0 && first.id == 2 &&
	      first.offset == RS(100) && first.len == 10 && first.timestamp_ns == 50,
	      "batch of 5: first id 2 at offset %" PRIu64, RS(100));
	off = RS(100);
	for (i = 0; i < 5; i++) {
		ok &= sl_memlog_read(log, 2 + (uint64_t)i, &r) == 0 && r.len == lens[i] &&
		      r.offset == off && r.trace_id == 9 && r.timestamp_ns == 50 &&
		      same(r.data, lens[i], 40 + (uint32_t)i);
		off += RS(lens[i]);
	}
	CHECK(ok && sl_memlog_end_offset(log) == off && sl_memlog_end_id(log) == 6,
	      "every batch member read back with consecutive offsets");

	lens[2] = SL_MEMLOG_MAX_MSG + 1;
	used = sl_memlog_used(log);
	CHECK(sl_memlog_append_batch(log, 5, datas, lens, 50, 9, &first) == -SL_E_TOO_BIG &&
	      sl_memlog_end_id(log) == 6 && sl_memlog_used(log) == used,
	      "batch with a too big member: -SL_E_TOO_BIG, nothing written");
	lens[2] = 4096;
	for (i = 0; i < 5; i++)
		lens[i] = 4000;
	CHECK(sl_memlog_append_batch(log, 5, datas, lens, 50, 9, &first) == -SL_E_FULL &&
	      sl_memlog_end_id(log) == 6 && sl_memlog_used(log) == used &&
	      sl_memlog_end_offset(log) == off,
	      "batch of 5x4000 into 16K: -SL_E_FULL, nothing written");
	CHECK(sl_memlog_append_batch(log, 2, datas, lens, 50, 9, &first) == 0 && first.id == 7,
	      "2 of them fit");
	CHECK(sl_memlog_append_batch(log, 0, datas, lens, 50, 9, &first) == -EINVAL,
	      "empty batch -EINVAL");
	rm(&rg);

	/* index limit: 16 slots */
	log = mk(&rg, 4096, 100000);
	for (i = 0; i < 5; i++)
		lens[i] = 1;
	for (i = 0; i < 3; i++)
		sl_memlog_append_batch(log, 5, datas, lens, 1, 1, NULL);
	CHECK(sl_memlog_end_id(log) == 15 &&
	      sl_memlog_append_batch(log, 2, datas, lens, 1, 1, NULL) == -SL_E_FULL &&
	      sl_memlog_end_id(log) == 15, "batch of 2 with 1 index slot left: -SL_E_FULL");
	CHECK(sl_memlog_append_batch(log, 1, datas, lens, 1, 1, &first) == 0 && first.id == 16,
	      "batch of 1 fits");
	rm(&rg);
}

/* Fill, trim, refill over many laps with varied sizes; checks pads and contents. */
static void
test_wrap(void)
{
	struct region rg;
	struct sl_memlog *log = mk(&rg, 32768, 128);
	const uint8_t *ring0 = NULL, *prev_end = NULL;
	uint64_t cap = sl_memlog_capacity(log);
	uint64_t off = 0, id = 1, wraps = 0, pads = 0;
	uint32_t lens[4096];
	int cycle, ok = 1;
	uint64_t i;

	for (cycle = 0; cycle < 300 && ok; cycle++) {
		struct sl_memlog_rec p;
		uint32_t len;

		for (;;) {
			len = (uint32_t)((id * 7919 + (uint64_t)cycle * 13) % 1500);
			if (app(log, len, (uint32_t)id, id, &p) != 0)
				break;
			lens[id % 4096] = len;
			ok &= p.id == id && p.offset == off;
			if (ring0 == NULL)
				ring0 = p.data - 32;
			if (prev_end != NULL && p.data - 32 < prev_end) {
				wraps++;
				/* the gap up to the ring end holds a pad record */
				if (prev_end < ring0 + cap) {
					uint32_t m;

					memcpy(&m, prev_end, 4);
					ok &= (m >> 24) == 0x5A;
					pads++;
				}
				ok &= p.data - 32 == ring0;
			}
			prev_end = p.data - 32 + RS(len);
			off += RS(len);
			id++;
		}
		ok &= sl_memlog_used(log) <= cap && sl_memlog_end_offset(log) == off;
		for (i = sl_memlog_first_id(log); i < id; i++)
			ok &= rd_ok(log, i, lens[i % 4096], (uint32_t)i);
		/* keep about a third */
		sl_memlog_trim(log, id - (id - sl_memlog_first_id(log)) / 3);
	}
	CHECK(ok && wraps > 100 && pads > 50,
	      "300 fill/trim cycles: %" PRIu64 " messages, %" PRIu64 " wraps, %" PRIu64
	      " pad records, contents and offsets intact", id - 1, wraps, pads);
	rm(&rg);
}

static void
test_trim_truncate(void)
{
	struct region rg;
	struct sl_memlog *log = mk(&rg, 16384, 64);
	uint64_t offs[64], off, id, cap = sl_memlog_capacity(log);
	struct sl_memlog_rec p, r;
	int i, ok = 1;

	for (i = 1; i <= 10; i++) {
		app(log, (uint32_t)i * 10, (uint32_t)i, (uint64_t)i * 100, &p);
		offs[i] = p.offset;
	}
	offs[11] = sl_memlog_end_offset(log);
	sl_memlog_trim(log, 4);
	CHECK(sl_memlog_first_id(log) == 4 && sl_memlog_read(log, 3, &r) == -ENOENT &&
	      rd_ok(log, 4, 40, 4), "trim(4): ids 1..3 gone, 4 readable");
	CHECK(sl_memlog_offset_of(log, 3, &off) == -ENOENT &&
	      sl_memlog_offset_of(log, 4, &off) == 0 && off == offs[4], "offset_of after trim");
	sl_memlog_trim(log, 2);
	CHECK(sl_memlog_first_id(log) == 4, "trim backwards is a no-op");

	/* find_offset */
	for (i = 4; i <= 11; i++)
		ok &= sl_memlog_find_offset(log, offs[i], &id) == 0 && id == (uint64_t)i;
	CHECK(ok, "find_offset on every boundary, including the end (id 11)");
	CHECK(sl_memlog_find_offset(log, offs[5] + 8, &id) == -EINVAL &&
	      sl_memlog_find_offset(log, offs[10] + 40, &id) == -EINVAL,
	      "find_offset inside a record: -EINVAL");
	CHECK(sl_memlog_find_offset(log, offs[2], &id) == -ENOENT &&
	      sl_memlog_find_offset(log, offs[11] + 8, &id) == -ENOENT,
	      "find_offset of a trimmed record or past the end: -ENOENT");

	/* find_time: ts = id * 100 */
	CHECK(sl_memlog_find_time(log, 0) == 4 && sl_memlog_find_time(log, 400) == 4 &&
	      sl_memlog_find_time(log, 401) == 5 && sl_memlog_find_time(log, 1000) == 10 &&
	      sl_memlog_find_time(log, 1001) == 11, "find_time: first id with ts >= t");

	/* truncate */
	sl_memlog_truncate(log, 8);
	CHECK(sl_memlog_end_id(log) == 7 && sl_memlog_end_offset(log) == offs[8] &&
	      sl_memlog_read(log, 8, &r) == -ENOENT, "truncate(8): end id 7, end offset back");
	CHECK(app(log, 3, 800, 50, &p) == 0 && p.id == 8 && p.offset == offs[8] &&
	      p.timestamp_ns == 700 && rd_ok(log, 8, 3, 800),
	      "append continues at id 8, same offset, ts not below id 7's");
	CHECK(rd_ok(log, 7, 70, 7), "id 7 intact");
	sl_memlog_truncate(log, 100);
	CHECK(sl_memlog_end_id(log) == 8, "truncate past the end is a no-op");
	sl_memlog_truncate(log, 2);
	CHECK(sl_memlog_end_id(log) == 3 && sl_memlog_first_id(log) == 4 &&
	      sl_memlog_end_offset(log) == offs[4] && sl_memlog_used(log) == 0,
	      "truncate below first id clamps: empty, next id 4 at id 4's offset");
	CHECK(app(log, 5, 44, 1, &p) == 0 && p.id == 4 && p.offset == offs[4],
	      "append after emptying truncate: id 4 again");
	sl_memlog_trim(log, 1000);
	CHECK(sl_memlog_first_id(log) == 5 && sl_memlog_end_id(log) == 4 &&
	      sl_memlog_used(log) == 0, "trim past the end clamps to end_id + 1");
	CHECK(sl_memlog_find_time(log, 0) == 5 && sl_memlog_find_offset(log,
	      sl_memlog_end_offset(log), &id) == 0 && id == 5, "empty: find_time/offset give 5");
	rm(&rg);

	/* truncate across a wrap: old lap and new lap */
	log = mk(&rg, 16384, 64);
	cap = sl_memlog_capacity(log);
	id = 0;
	while (app(log, 1000, (uint32_t)id + 1, 1, &p) == 0)
		offs[++id] = p.offset;
	sl_memlog_trim(log, 5);
	for (i = 0; i < 3; i++) {
		CHECK(app(log, 1000, (uint32_t)id + 1, 1, &p) == 0, "wrapped append %d", i);
		offs[++id] = p.offset;
	}
	offs[id + 1] = sl_memlog_end_offset(log);
	CHECK(sl_memlog_used(log) > cap - RS(1000) * 5, "ring wrapped and nearly full");
	sl_memlog_truncate(log, id);		/* inside the new lap */
	CHECK(sl_memlog_end_offset(log) == offs[id] && app(log, 200, 900, 1, &p) == 0 &&
	      p.id == id && p.offset == offs[id] && rd_ok(log, id, 200, 900),
	      "truncate in the new lap, append continues there");
	sl_memlog_truncate(log, id - 2);	/* first record of the new lap */
	CHECK(sl_memlog_end_offset(log) == offs[id - 2] && app(log, 50, 901, 1, &p) == 0 &&
	      p.id == id - 2 && p.offset == offs[id - 2] && rd_ok(log, id - 2, 50, 901),
	      "truncate at the start of the new lap");
	sl_memlog_truncate(log, 7);		/* back into the old lap */
	CHECK(sl_memlog_end_id(log) == 6 && sl_memlog_end_offset(log) == offs[7] &&
	      rd_ok(log, 6, 1000, 6) && rd_ok(log, 5, 1000, 5), "truncate into the old lap");
	ok = 1;
	off = offs[7];
	for (i = 7; app(log, 700, 1000 + (uint32_t)i, 1, &p) == 0; i++) {
		ok &= p.id == (uint64_t)i && p.offset == off;
		off += RS(700);
	}
	for (id = 7; id < (uint64_t)i; id++)
		ok &= rd_ok(log, id, 700, 1000 + (uint32_t)id);
	CHECK(ok && i > 10 && rd_ok(log, 5, 1000, 5),
	      "appends after it continue at the right ids and offsets, and wrap again");
	for (id = 5; id < (uint64_t)i; id++)
		ok &= sl_memlog_offset_of(log, id, &off) == 0 &&
		      sl_memlog_find_offset(log, off, &offs[0]) == 0 && offs[0] == id;
	CHECK(ok, "find_offset over both laps");
	rm(&rg);
}

/*
 * Reset (a replica past its leader's retention restarts its log at the leader's first
 * message): of a full log to a higher id, of a wrapped log to a lower id, appends and
 * reads after it, ids written again after a reset to a lower id, wrap-around after it,
 * the index freed, start id 0.
 */
static void
test_reset(void)
{
	struct region rg;
	struct sl_memlog *log = mk(&rg, 16384, 64);
	uint64_t cap = sl_memlog_capacity(log), n, k, id, off, wraps = 0, end_old;
	const uint8_t *ring0 = NULL, *prev_end = NULL;
	struct sl_memlog_rec p, r;
	uint32_t lens[4096];
	int ok, cycle;

	/* a full log, reset to a higher id */
	for (n = 0; app(log, 1000, (uint32_t)n + 1, 100 + n, &p) == 0; n++)
		;
	CHECK(n == cap / RS(1000) && sl_memlog_end_id(log) == n,
	      "reset: a full log of %" PRIu64 " messages", n);
	sl_memlog_reset(log, 5000, 777 * 8);
	CHECK(sl_memlog_first_id(log) == 5000 && sl_memlog_end_id(log) == 4999 &&
	      sl_memlog_end_offset(log) == 6216 && sl_memlog_used(log) == 0,
	      "reset to id 5000 at offset 6216: first 5000, end 4999, end offset 6216, empty");
	ok = 1;
	for (id = 0; id <= n + 1; id++)
		ok &= sl_memlog_read(log, id, &r) == -ENOENT &&
		      sl_memlog_peek(log, id, &r) == -EBADMSG;
	CHECK(ok, "no read or peek finds an id of before the reset");
	CHECK(sl_memlog_read(log, 5000, &r) == -ENOENT &&
	      sl_memlog_peek(log, 5000, &r) == -EBADMSG &&
	      sl_memlog_read(log, 4999, &r) == -ENOENT, "nor id 5000 before it is appended");
	CHECK(sl_memlog_offset_of(log, 5000, &off) == 0 && off == 6216 &&
	      sl_memlog_offset_of(log, 4999, &off) == -ENOENT &&
	      sl_memlog_offset_of(log, 5001, &off) == -ENOENT && sl_memlog_offset_of(log, 1,
	      &off) == -ENOENT, "offset_of as a fresh log opened at (5000, 6216)");
	CHECK(sl_memlog_find_offset(log, 6216, &id) == 0 && id == 5000 &&
	      sl_memlog_find_offset(log, 6224, &id) == -ENOENT &&
	      sl_memlog_find_offset(log, 0, &id) == -ENOENT,
	      "find_offset as on an empty log: the end offset gives 5000, others -ENOENT");
	CHECK(sl_memlog_find_time(log, 0) == 5000 && sl_memlog_find_time(log, 150) == 5000 &&
	      sl_memlog_find_time(log, UINT64_MAX) == 5000, "find_time as on an empty log: 5000");

	/* appends after it: the whole ring is free, timestamps start over */
	CHECK(app(log, 10, 1, 50, &p) == 0 && p.id == 5000 && p.offset == 6216 &&
	      p.timestamp_ns == 50 && rd_ok(log, 5000, 10, 1),
	      "the next append: id 5000 at offset 6216, ts 50 (not raised to the old 100+)");
	CHECK(sl_memlog_peek(log, 5000, &r) == 0 && r.id == 5000 && r.len == 10 &&
	      same(r.data, 10, 1), "peek finds it");
	ok = 1;
	off = 6216 + RS(10);
	for (k = 0; app(log, 1000, 5001 + (uint32_t)k, 200, &p) == 0; k++) {
		ok &= p.id == 5001 + k && p.offset == off;
		off += RS(1000);
	}
	CHECK(ok && k == (cap - RS(10)) / RS(1000), "then %" PRIu64 " messages of 1000 bytes "
	      "fill the ring, at the right ids and offsets", k);
	sl_memlog_trim(log, 5003);
	CHECK(app(log, 1000, 7001, 300, &p) == 0 && p.id == 5001 + k &&
	      app(log, 1000, 7002, 300, NULL) == 0 && rd_ok(log, 5001 + k, 1000, 7001) &&
	      rd_ok(log, 5002 + k, 1000, 7002) && rd_ok(log, 5003, 1000, 5003),
	      "trim 3, 2 more: the ring wraps");
	CHECK(sl_memlog_find_offset(log, p.offset, &id) == 0 && id == p.id,
	      "find_offset in the wrapped lap");
	end_old = sl_memlog_end_id(log);

	/* a wrapped log, reset to a lower id: the old ids are not found, then written again */
	sl_memlog_reset(log, 4990, 64);
	CHECK(sl_memlog_first_id(log) == 4990 && sl_memlog_end_id(log) == 4989 &&
	      sl_memlog_end_offset(log) == 64 && sl_memlog_used(log) == 0,
	      "reset of a wrapped log to the lower id 4990 at offset 64");
	ok = 1;
	for (id = 4980; id <= end_old + 1; id++)
		ok &= sl_memlog_read(log, id, &r) == -ENOENT &&
		      sl_memlog_peek(log, id, &r) == -EBADMSG;
	CHECK(ok, "no read or peek finds ids 4980..%" PRIu64, end_old + 1);
	ok = 1;
	off = 64;
	for (id = 4990; id < 4995; id++) {
		ok &= app(log, 100, 9000 + (uint32_t)id, 400, &p) == 0 && p.id == id &&
		      p.offset == off;
		off += RS(100);
	}
	/* the old records of 5000.. are still in the ring past these five */
	for (id = 4995; id <= end_old; id++)
		ok &= sl_memlog_peek(log, id, &r) == -EBADMSG;
	CHECK(ok, "appends at 4990..4994; old records still in the ring are not peeked");
	ok = 1;
	for (id = 4995; id <= 5010; id++) {
		ok &= app(log, 100, 9000 + (uint32_t)id, 400, &p) == 0 && p.id == id &&
		      p.offset == off;
		off += RS(100);
	}
	for (id = 4990; id <= 5010; id++)
		ok &= rd_ok(log, id, 100, 9000 + (uint32_t)id) &&
		      sl_memlog_peek(log, id, &r) == 0 && same(r.data, 100, 9000 + (uint32_t)id);
	CHECK(ok && sl_memlog_end_offset(log) == off,
	      "ids 4990..5010 written again read back their new contents");

	/* wrap-around after the reset: fill/trim cycles over many laps */
	ok = 1;
	id = 5011;
	for (cycle = 0; cycle < 60 && ok; cycle++) {
		uint32_t len;

		for (;;) {
			len = (uint32_t)((id * 7919 + (uint64_t)cycle * 13) % 1500);
			if (app(log, len, (uint32_t)id, id, &p) != 0)
				break;
			lens[id % 4096] = len;
			ok &= p.id == id && p.offset == off;
			if (ring0 == NULL || p.data - 32 < ring0)
				ring0 = p.data - 32;
			if (prev_end != NULL && p.data - 32 < prev_end)
				wraps++;
			prev_end = p.data - 32 + RS(len);
			off += RS(len);
			id++;
		}
		for (k = sl_memlog_first_id(log); k < id; k++) {
			if (k <= 5010)
				continue;
			ok &= rd_ok(log, k, lens[k % 4096], (uint32_t)k) &&
			      sl_memlog_offset_of(log, k, &n) == 0 &&
			      sl_memlog_find_offset(log, n, &end_old) == 0 && end_old == k;
		}
		sl_memlog_trim(log, id - (id - sl_memlog_first_id(log)) / 3);
	}
	CHECK(ok && wraps > 20 && sl_memlog_end_offset(log) == off,
	      "after the reset, 60 fill/trim cycles: %" PRIu64 " wraps, contents, offsets and "
	      "find_offset intact", wraps);
	rm(&rg);

	/* the index is free again; start id 0 means 1 */
	log = mk(&rg, 4096, 100000);
	for (n = 0; app(log, 8, (uint32_t)n, 5, NULL) == 0; n++)
		;
	sl_memlog_reset(log, 100, 0);
	for (k = 0; app(log, 8, (uint32_t)k, 5, NULL) == 0; k++)
		;
	CHECK(n == 16 && k == 16 && sl_memlog_first_id(log) == 100 &&
	      sl_memlog_end_id(log) == 115, "full by index (16), reset: 16 fit again (%" PRIu64
	      ")", k);
	sl_memlog_reset(log, 0, 4096);
	CHECK(sl_memlog_first_id(log) == 1 && sl_memlog_end_id(log) == 0 &&
	      sl_memlog_end_offset(log) == 4096 && app(log, 3, 1, 1, &p) == 0 && p.id == 1 &&
	      p.offset == 4096 && sl_memlog_peek(log, 100, &r) == -EBADMSG,
	      "reset to id 0 means 1: the next append is id 1 at offset 4096");
	rm(&rg);
}

/* ---- randomized test against a reference model ---- */

#define MCAP (1u << 16)

struct mrec {
	uint64_t off;
	uint64_t ts;
	uint64_t trace;
	uint32_t len;
	uint32_t seed;
};

struct model {
	struct sl_memlog *log;
	struct mrec *r;		/* by id % MCAP */
	uint8_t *data[8];	/* message buffers, capacity bytes each */
	uint64_t slots;
	uint64_t cap;
	uint64_t first, end, end_off, last_ts, clock, bytes;
	unsigned int bad;
	int mode;		/* 0: mixed, 1: fill with small messages, 2: fill mixed */
	uint64_t n_app, n_full_idx, n_full_space, n_batch, n_trunc, n_trim, n_reads, n_find;
	uint64_t n_reset;
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

static struct mrec *
mr(struct model *m, uint64_t id)
{
	return &m->r[id % MCAP];
}

static uint32_t
rnd_len(struct model *m)
{
	uint64_t r = rndn(100);

	if (m->mode == 1)
		return (uint32_t)rndn(33);
	if (r < 50)
		return (uint32_t)rndn(65);
	if (r < 80)
		return (uint32_t)rndn(512);
	if (r < 97)
		return (uint32_t)rndn(4096);
	if (r < 99)
		return (uint32_t)rndn(m->cap / 3);
	return (uint32_t)(m->cap - 32 - rndn(3) * 8 + rndn(16));	/* about the max */
}

static void
m_check_read(struct model *m, uint64_t id)
{
	struct sl_memlog_rec r;
	int rc = sl_memlog_read(m->log, id, &r);

	m->n_reads++;
	if (id < m->first || id > m->end) {
		if (rc != -ENOENT)
			MFAIL(m, "read(%" PRIu64 ") = %d outside [%" PRIu64 ", %" PRIu64 "]", id,
			      rc, m->first, m->end);
		return;
	}
	if (rc != 0 || r.id != id || r.len != mr(m, id)->len || r.offset != mr(m, id)->off ||
	    r.timestamp_ns != mr(m, id)->ts || r.trace_id != mr(m, id)->trace ||
	    !same(r.data, r.len, mr(m, id)->seed))
		MFAIL(m, "read(%" PRIu64 ") rc %d mismatch", id, rc);
}

static void
m_positions(struct model *m)
{
	uint64_t used = sl_memlog_used(m->log);

	if (sl_memlog_first_id(m->log) != m->first || sl_memlog_end_id(m->log) != m->end ||
	    sl_memlog_end_offset(m->log) != m->end_off)
		MFAIL(m, "positions %" PRIu64 "/%" PRIu64 "/%" PRIu64 " model %" PRIu64 "/%"
		      PRIu64 "/%" PRIu64, sl_memlog_first_id(m->log), sl_memlog_end_id(m->log),
		      sl_memlog_end_offset(m->log), m->first, m->end, m->end_off);
	if (used < m->bytes || used > m->cap || (m->bytes == 0) != (used == 0))
		MFAIL(m, "used %" PRIu64 " retained bytes %" PRIu64, used, m->bytes);
}

/* Append n messages: the model predicts the cases it can. */
static void
m_append(struct model *m, uint32_t n)
{
	const void *datas[8];
	uint32_t lens[8], seeds[8], i;
	uint64_t need = 0, maxs = 0, ts, id, used = sl_memlog_used(m->log);
	int too_big = 0, must_full, must_fit, cannot_fit, rc;
	struct sl_memlog_rec p;

	for (i = 0; i < n; i++) {
		lens[i] = rnd_len(m);
		seeds[i] = (uint32_t)rnd();
		if (RS(lens[i]) > m->cap) {
			too_big = 1;
			lens[i] = (uint32_t)m->cap;	/* what the buffers hold */
		}
		fill(m->data[i], lens[i], seeds[i]);
		datas[i] = m->data[i];
		need += RS(lens[i]);
		if (RS(lens[i]) > maxs)
			maxs = RS(lens[i]);
	}
	m->clock += rndn(1000);
	ts = rndn(10) == 0 ? m->clock - rndn(3000) : m->clock;	/* sometimes behind */
	id = m->end + 1;
	if (n == 1 && rndn(2) == 0)
		rc = sl_memlog_append(m->log, datas[0], lens[0], ts, id, &p);
	else
		rc = sl_memlog_append_batch(m->log, n, datas, lens, ts, id, &p);
	if (too_big) {
		if (rc != -SL_E_TOO_BIG)
			MFAIL(m, "too big append = %d", rc);
		return;
	}
	must_full = m->end + 1 - m->first + n > m->slots;
	/* free >= need + maxs always has room: a wrap wastes less than the record that
	 * wraps, and a batch wraps at most once */
	must_fit = !must_full && (m->bytes == 0 ? need <= m->cap : used + need + maxs <= m->cap);
	cannot_fit = used + need > m->cap;
	if (rc == -SL_E_FULL) {
		if (must_fit)
			MFAIL(m, "append of %u (%" PRIu64 " bytes) full with %" PRIu64 " used", n,
			      need, used);
		if (must_full)
			m->n_full_idx++;
		else
			m->n_full_space++;
		return;
	}
	if (rc != 0 || must_full || cannot_fit) {
		MFAIL(m, "append of %u = %d (must_full %d, cannot_fit %d)", n, rc, must_full,
		      cannot_fit);
		return;
	}
	if (ts > m->last_ts)
		m->last_ts = ts;
	if (p.id != id || p.offset != m->end_off || p.len != lens[0] ||
	    p.timestamp_ns != m->last_ts || p.trace_id != id || !same(p.data, p.len, seeds[0]))
		MFAIL(m, "append position id %" PRIu64 " off %" PRIu64 " model %" PRIu64
		      " %" PRIu64, p.id, p.offset, id, m->end_off);
	for (i = 0; i < n; i++) {
		struct mrec *x = mr(m, m->end + 1);

		x->off = m->end_off;
		x->ts = m->last_ts;
		x->len = lens[i];
		x->seed = seeds[i];
		x->trace = id;		/* a batch shares one trace id */
		m->end++;
		m->end_off += RS(lens[i]);
		m->bytes += RS(lens[i]);
	}
	m->n_app += n;
	if (n > 1)
		m->n_batch++;
}

static void
m_trim(struct model *m, uint64_t id)
{
	sl_memlog_trim(m->log, id);
	if (id > m->end + 1)
		id = m->end + 1;
	while (m->first < id) {
		m->bytes -= RS(mr(m, m->first)->len);
		m->first++;
	}
	m->n_trim++;
}

static void
m_truncate(struct model *m, uint64_t id)
{
	sl_memlog_truncate(m->log, id);
	if (id < m->first)
		id = m->first;
	if (id > m->end)
		return;
	m->end_off = mr(m, id)->off;
	while (m->end >= id) {
		m->bytes -= RS(mr(m, m->end)->len);
		m->end--;
	}
	if (m->end >= m->first)
		m->last_ts = mr(m, m->end)->ts;
	m->n_trunc++;
}

/* Reset to an id above, below or at the end, or 0 (means 1), at a random offset. */
static void
m_reset(struct model *m)
{
	uint64_t old = m->end >= m->first ? m->first + rndn(m->end - m->first + 1) : 0;
	uint64_t k = rndn(4), start, off = rndn(UINT64_C(1) << 40);
	struct sl_memlog_rec r;

	start = k == 0 ? m->end + 1 + rndn(100000) : k == 1 ? 1 + rndn(m->end + 1) :
		k == 2 ? m->end + 1 : 0;
	sl_memlog_reset(m->log, start, off);
	m->first = start != 0 ? start : 1;
	m->end = m->first - 1;
	m->end_off = off;
	m->bytes = 0;
	m->last_ts = 0;
	if ((old != 0 && sl_memlog_peek(m->log, old, &r) != -EBADMSG) ||
	    sl_memlog_peek(m->log, m->first, &r) != -EBADMSG)
		MFAIL(m, "peek after a reset to %" PRIu64 " found a record", start);
	m->n_reset++;
}

static void
m_find(struct model *m)
{
	uint64_t id, got, off;
	int rc;

	m->n_find++;
	if (m->end >= m->first) {
		id = m->first + rndn(m->end - m->first + 1);
		off = mr(m, id)->off;
		rc = sl_memlog_find_offset(m->log, off, &got);
		if (rc != 0 || got != id)
			MFAIL(m, "find_offset(%" PRIu64 ") = %d/%" PRIu64 " want %" PRIu64, off, rc,
			      got, id);
		rc = sl_memlog_find_offset(m->log, off + 8 * (1 + rndn(3)), &got);
		if (rc != -EINVAL)
			MFAIL(m, "find_offset inside id %" PRIu64 " = %d", id, rc);
		rc = sl_memlog_offset_of(m->log, id, &got);
		if (rc != 0 || got != off)
			MFAIL(m, "offset_of(%" PRIu64 ") = %d/%" PRIu64, id, rc, got);
		if (mr(m, m->first)->off >= 8 &&
		    sl_memlog_find_offset(m->log, mr(m, m->first)->off - 8, &got) != -ENOENT)
			MFAIL(m, "find_offset before the first record");
		/* find_time against a linear scan */
		{
			uint64_t t = mr(m, id)->ts + rndn(3) - 1, want = m->end + 1, j;

			for (j = m->first; j <= m->end; j++)
				if (mr(m, j)->ts >= t) {
					want = j;
					break;
				}
			got = sl_memlog_find_time(m->log, t);
			if (got != want)
				MFAIL(m, "find_time(%" PRIu64 ") = %" PRIu64 " want %" PRIu64,
				      t, got, want);
		}
	}
	rc = sl_memlog_find_offset(m->log, m->end_off, &got);
	if (rc != 0 || got != m->end + 1)
		MFAIL(m, "find_offset(end) = %d/%" PRIu64, rc, got);
	if (sl_memlog_find_offset(m->log, m->end_off + 8, &got) != -ENOENT)
		MFAIL(m, "find_offset past the end");
	if (sl_memlog_find_time(m->log, m->last_ts + 1) != m->end + 1)
		MFAIL(m, "find_time past the last");
}

static void
model_run(size_t mem_len, uint32_t hint, unsigned int ops, uint64_t seed)
{
	struct model mm, *m = &mm;
	struct region rg;
	unsigned int op, i;

	memset(m, 0, sizeof(*m));
	rng_state = seed;
	m->r = calloc(MCAP, sizeof(*m->r));
	if (m->r == NULL)
		exit(EXIT_FAILURE);
	m->log = mk(&rg, mem_len, hint);
	m->slots = exp_slots(mem_len, hint);
	m->cap = sl_memlog_capacity(m->log);
	for (i = 0; i < 8; i++) {
		m->data[i] = malloc(m->cap + 64);
		if (m->data[i] == NULL)
			exit(EXIT_FAILURE);
	}
	m->first = 1;
	m->clock = 1000000;

	for (op = 0; op < ops && m->bad == 0; op++) {
		uint64_t r = rndn(1000), span = m->end + 1 - m->first;

		if (op % 2000 == 0)
			m->mode = (int)rndn(3);
		if (m->mode != 0 && r >= 520 && r < 650)
			r = 700;		/* fill phases: no trims */
		if (r < 450) {
			m_append(m, 1);
		} else if (r < 520) {
			m_append(m, 1 + (uint32_t)rndn(8));
		} else if (r < 650) {		/* trim, mostly a little, sometimes all */
			uint64_t k = rndn(20) == 0 ? span + 2 : rndn(span / 2 + 2);

			m_trim(m, m->first + k - (rndn(10) == 0 ? 2 : 0));
		} else if (r < 680) {		/* truncate a few, sometimes below first */
			uint64_t back = rndn(10) == 0 ? span + 2 : rndn(6);

			m_truncate(m, m->end + 2 > back ? m->end + 2 - back : 0);
		} else if (r == 899 && rndn(4) == 0) {
			m_reset(m);
		} else if (r < 900) {
			m_check_read(m, m->first + rndn(span + 6) - 3);
		} else {
			m_find(m);
		}
		m_positions(m);
	}
	/* everything retained still reads back */
	{
		uint64_t id;

		for (id = m->first > 3 ? m->first - 3 : 0; id <= m->end + 3; id++)
			m_check_read(m, id);
	}
	CHECK(m->bad == 0, "model (%zu bytes, hint %u, seed %#" PRIx64 "): %u ops, %" PRIu64
	      " appended, %" PRIu64 " batches, full %" PRIu64 " by space / %" PRIu64
	      " by index, %" PRIu64 " trims, %" PRIu64 " truncates, %" PRIu64 " resets, %"
	      PRIu64 " reads, %" PRIu64 " finds, end id %" PRIu64, mem_len, hint, seed, op,
	      m->n_app, m->n_batch, m->n_full_space, m->n_full_idx, m->n_trim, m->n_trunc,
	      m->n_reset, m->n_reads, m->n_find, m->end);
	CHECK(m->n_full_space > 100 && m->n_full_idx > 100 && m->n_trunc > 100 &&
	      m->n_batch > 1000 && m->n_reset > 10,
	      "model exercised both kinds of full, truncates, resets and batches");
	rm(&rg);
	for (i = 0; i < 8; i++)
		free(m->data[i]);
	free(m->r);
}

/* A log recovered from disk continues at (start_id, start_offset); peek reads what the
 * owner handed over. */
static void
test_start_and_peek(void)
{
	struct sl_memlog_conf c = { .mem = buf, .mem_len = 65536, .start_id = 1001,
				    .start_offset = 123456 };
	struct sl_memlog *log = sl_memlog_open(&c);
	struct sl_memlog_rec r, p;
	uint64_t off;

	CHECK(log != NULL, "open at id 1001");
	if (log == NULL)
		return;
	CHECK(sl_memlog_first_id(log) == 1001 && sl_memlog_end_id(log) == 1000 &&
	      sl_memlog_end_offset(log) == 123456, "empty log positioned at the start");
	CHECK(sl_memlog_append(log, "abc", 3, 5, 7, &r) == 0 && r.id == 1001 &&
	      r.offset == 123456, "first append gets id 1001 at offset 123456");
	CHECK(sl_memlog_offset_of(log, 1002, &off) == 0 && off == 123456 + RS(3),
	      "end offset follows");
	CHECK(sl_memlog_peek(log, 1001, &p) == 0 && p.len == 3 && memcmp(p.data, "abc", 3) == 0 &&
	      p.timestamp_ns == 5 && p.trace_id == 7, "peek reads the record");
	CHECK(sl_memlog_peek(log, 1002, &p) == -EBADMSG, "peek of an id never written: EBADMSG");
	CHECK(sl_memlog_read(log, 1000, &p) == -ENOENT, "ids before the start are not here");
	sl_memlog_close(log);
}

/* mprotect the pages of region bytes [from, to) read-write (the test's "prepare"). */
static void
lazy_prepare(uint8_t *m, uint64_t from, uint64_t to)
{
	uint64_t a = from / 4096 * 4096, b = (to + 4095) / 4096 * 4096;

	if (b > a)
		CHECK(mprotect(m + a, b - a, PROT_READ | PROT_WRITE) == 0, "mprotect");
}

static int
lazy_grow(struct sl_memlog *log, uint8_t *m)
{
	struct sl_memlog_grow g;

	if (!sl_memlog_grow_plan(log, &g))
		return 0;
	lazy_prepare(m, g.idx_from, g.idx_to);
	lazy_prepare(m, g.ring_from, g.ring_to);
	sl_memlog_grow_done(log, &g);
	return 1;
}

static int
count_cb(void *arg, const struct sl_memlog_rec *rec)
{
	(void)rec;
	(*(uint64_t *)arg)++;
	return 0;
}

/* A lazy log over a region that is PROT_NONE until "prepared": the owner never touches a
 * byte beyond the ready prefixes (a write there would be a SIGSEGV), answers FULL while a
 * growth is pending, and holds the whole region once grown; the index base moves when the
 * log is empty and a scan with the published base finds the records. */
static void
test_lazy(void)
{
	const size_t len = 1 << 20;
	uint8_t *m = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
			  -1, 0);
	uint64_t base = 0, n = 0, grows = 0, fulls = 0, found = 0, i;
	struct sl_memlog_conf c = {.mem = m, .mem_len = len, .lazy = 1, .start_id = 100,
				   .base_out = &base};
	struct sl_memlog_rec r;
	struct sl_memlog *log;
	uint8_t body[40];
	int rc;

	CHECK(m != MAP_FAILED, "reserve 1 MiB PROT_NONE");
	log = sl_memlog_open(&c);
	CHECK(log != NULL && base == 100, "open touches nothing; base = start id");
	CHECK(sl_memlog_resident(log) == 0, "nothing ready before the first growth");
	CHECK(lazy_grow(log, m) == 1, "the first growth step");
	CHECK(sl_memlog_resident(log) == 16 * 1024 + 4096, "16 KiB of records, one index page "
	      "(%" PRIu64 ")", sl_memlog_resident(log));
	fill(body, sizeof(body), 1);
	for (i = 0; i < 100000; i++) {
		rc = sl_memlog_append(log, body, sizeof(body), i, 0, NULL);
		if (rc == 0) {
			n++;
			continue;
		}
		if (rc != -SL_E_FULL)
			break;
		fulls++;
		if (!lazy_grow(log, m))
			break;	/* the region is all ready: really full */
		grows++;
	}
	CHECK(rc == -SL_E_FULL, "ends full (%d)", rc);
	CHECK(fulls == grows + 1 && grows >= 6, "FULL while growth was pending, %" PRIu64
	      " growth steps", grows);
	CHECK(sl_memlog_resident(log) >= len - 8, "all of the region ready at the end "
	      "(%" PRIu64 ")", sl_memlog_resident(log));
	CHECK(n == sl_memlog_count(log) && n == sl_memlog_slots(log), "%" PRIu64 " messages held "
	      "(as many as the index has slots)", n);
	CHECK(sl_memlog_read(log, 100, &r) == 0 && r.len == sizeof(body) &&
		      same(r.data, r.len, 1) && sl_memlog_read(log, 99 + n, &r) == 0,
	      "first and last read back");
	/* empty, then an append moves the base (slots start at 0 again) */
	sl_memlog_trim(log, 100 + n);
	CHECK(sl_memlog_append(log, body, sizeof(body), 1, 0, NULL) == 0 && base == 100 + n,
	      "the base moved to the first id after the empty log (%" PRIu64 ")", base);
	CHECK(sl_memlog_append(log, body, sizeof(body), 2, 0, NULL) == 0, "a second one");
	c.idx_base = base;
	c.start_offset = 0;
	CHECK(sl_memlog_scan(&c, base, count_cb, &found) == 2 && found == 2,
	      "a scan with the published base finds both (%" PRIu64 ")", found);
	c.idx_base = 0;
	found = 0;
	CHECK(sl_memlog_scan(&c, base, count_cb, &found) == 0, "and none with another base");
	sl_memlog_close(log);
	munmap(m, len);
}

/* A lazy log refused a batch larger than its ready part: the next growth step sizes the
 * prefix by the refused demand (what is in use plus twice the refused bytes), so the same
 * batch fits after ONE step instead of after as many doublings as it is larger. */
static void
test_lazy_demand(void)
{
	const size_t len = 8 << 20;
	uint8_t *m = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
			  -1, 0);
	struct sl_memlog_conf c = {.mem = m, .mem_len = len, .lazy = 1};
	static uint8_t body[64][1000];
	const void *datas[64];
	uint32_t lens[64], i;
	struct sl_memlog_rec r;
	struct sl_memlog *log;
	uint64_t before;

	CHECK(m != MAP_FAILED, "reserve 8 MiB PROT_NONE");
	log = sl_memlog_open(&c);
	CHECK(log != NULL && lazy_grow(log, m) == 1, "open, first growth step");
	for (i = 0; i < 64; i++) {
		fill(body[i], sizeof(body[i]), (uint8_t)i);
		datas[i] = body[i];
		lens[i] = sizeof(body[i]);
	}
	CHECK(sl_memlog_append_batch(log, 64, datas, lens, 1, 0, &r) == -SL_E_FULL,
	      "64 x 1000 B do not fit the first 16 KiB");
	CHECK(sl_memlog_append_batch(log, 64, datas, lens, 2, 0, &r) == -SL_E_FULL,
	      "nor when asked again before a growth step");
	before = sl_memlog_resident(log);
	CHECK(lazy_grow(log, m) == 1, "one growth step");
	CHECK(sl_memlog_resident(log) >= 4 * 64 * 1000 && sl_memlog_resident(log) > before,
	      "sized by both refused batches, twice (%" PRIu64 " -> %" PRIu64 ")", before,
	      sl_memlog_resident(log));
	CHECK(sl_memlog_append_batch(log, 64, datas, lens, 3, 0, &r) == 0 && r.id == 1,
	      "the batch fits after that one step");
	CHECK(sl_memlog_read(log, 64, &r) == 0 && r.len == 1000 && same(r.data, r.len, 63),
	      "and reads back");
	CHECK(lazy_grow(log, m) == 0, "no demand left: no growth (less than half in use)");
	sl_memlog_close(log);
	munmap(m, len);
}

int
main(void)
{
	test_open();
	test_start_and_peek();
	test_roundtrip();
	test_max_and_too_big();
	test_full();
	test_half_full_small();
	test_batch();
	test_wrap();
	test_trim_truncate();
	test_reset();
	test_lazy();
	test_lazy_demand();
	model_run(256 * 1024, 256, 200000, 0x10650001);
	model_run(16384, 0, 200000, 0x10650002);
	return check_report();
}
