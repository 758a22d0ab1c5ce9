/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * Unit test of the MPUB_PART codec (wire.c) and the reassembly pool (dataplane/mpart.c):
 * an MPUB cut into fragments, sent in any order, comes back as the same MPUB body; every
 * hostile case (a fragment that disagrees with its MPUB, overlaps, a duplicate that is
 * not a copy, a gap, a bad element area, another session's or source's fragment, too many
 * sources, expiry) is refused and leaves nothing behind.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "mpart.h"
#include "wire.h"
#include "check.h"

#define SRC 0x0100000a		/* 10.0.0.1, network order on little endian */
#define MS 1000000ull

static struct sl_mpart *mp;
static uint8_t mpub[SL_WIRE_HDR_LEN + SL_MPART_BUF];	/* the MPUB frame */
static int mpub_len;
static struct sl_wire_pub orig;				/* its decoded body */
static uint8_t frames[SL_WIRE_MPART_FRAGS][SL_WIRE_DGRAM_MAX_STD];
static int flen[SL_WIRE_MPART_FRAGS];
static struct sl_wire_mpart frag[SL_WIRE_MPART_FRAGS];	/* decoded from frames[] */

/* An MPUB of count messages of msg bytes (message i filled with i). */
static void
make_mpub(uint16_t count, uint32_t msg)
{
	static uint8_t data[SL_WIRE_MPUB_MAX][1500];
	const void *msgs[SL_WIRE_MPUB_MAX];
	uint32_t lens[SL_WIRE_MPUB_MAX];
	struct sl_wire_hdr h = {.session = 7, .seq = 1};
	uint16_t i;

	for (i = 0; i < count; i++) {
		memset(data[i], (int)i, msg);
		msgs[i] = data[i];
		lens[i] = msg;
	}
	mpub_len = sl_wire_encode_pub(mpub, sizeof(mpub), &h, 1, 3, "topic.x", SL_WIRE_PUB_TRACE,
				      0xabcdef, count, msgs, lens);
	if (mpub_len < 0 || sl_wire_decode_pub(mpub + SL_WIRE_HDR_LEN,
					       (size_t)mpub_len - SL_WIRE_HDR_LEN, 1, &orig) != 0)
		abort();
}

/* Cut the MPUB into fragments of at most a 1472-byte datagram: their number. */
static int
cut(void)
{
	uint32_t chunk = sl_wire_mpart_chunk_max(SL_WIRE_DGRAM_MAX_STD, orig.topic_len,
						 orig.flags);
	int n = (int)((orig.msgs_len + chunk - 1) / chunk), i;

	for (i = 0; i < n && i < SL_WIRE_MPART_FRAGS; i++) {
		struct sl_wire_mpart f = {
			.partition = orig.partition, .topic_len = orig.topic_len,
			.flags = orig.flags, .topic = orig.topic, .trace_id = orig.trace_id,
			.index = (uint8_t)i, .nfrag = (uint8_t)n, .count = orig.count,
			.total_len = orig.msgs_len, .off = (uint32_t)i * chunk,
		};
		struct sl_wire_hdr h = {.session = 7, .seq = 1, .cookie = 99};
		struct sl_wire_hdr d;

		f.chunk_len = i == n - 1 ? orig.msgs_len - f.off : chunk;
		f.chunk = orig.msg + f.off;
		flen[i] = sl_wire_encode_mpart(frames[i], sizeof(frames[i]), &h, &f);
		if (flen[i] < 0 || sl_wire_decode_hdr(frames[i], (size_t)flen[i], &d) != 0 ||
		    d.opcode != SL_OP_MPUB_PART ||
		    sl_wire_decode_mpart(frames[i] + SL_WIRE_HDR_LEN, d.body_len, &frag[i]) != 0)
			abort();
	}
	return n;
}

static void
reset(void)
{
	struct sl_mpart_conf c = {.per_source = 2, .expiry_ns = 1000 * MS};

	memset(mp, 0xa5, sizeof(*mp));	/* init must not rely on zeroed memory */
	if (sl_mpart_init(mp, &c) != 0)
		abort();
}

static int
add(uint64_t session, uint64_t seq, uint32_t src, const struct sl_wire_mpart *f,
    uint64_t now, struct sl_wire_pub *out, uint32_t *handle)
{
	return sl_mpart_add(mp, session, seq, src, f, now, out, handle);
}

static int
same_as_orig(const struct sl_wire_pub *p)
{
	return p->count == orig.count && p->msgs_len == orig.msgs_len &&
	       p->msg_len == orig.msg_len && p->partition == orig.partition &&
	       p->trace_id == orig.trace_id && p->flags == orig.flags &&
	       p->topic_len == orig.topic_len && memcmp(p->topic, orig.topic, p->topic_len) == 0 &&
	       memcmp(p->msg, orig.msg, orig.msgs_len) == 0;
}

static void
test_codec(void)
{
	struct sl_wire_mpart f;
	uint8_t body[256];
	size_t n;
	int nf;

	make_mpub(32, 100);
	nf = cut();
	CHECK(nf == 3, "MPUB of 32 x 100 bytes (3328-byte area) in 3 fragments of a 1472 "
	      "datagram (%d)", nf);
	CHECK(flen[0] == SL_WIRE_DGRAM_MAX_STD && flen[1] == SL_WIRE_DGRAM_MAX_STD,
	      "the first fragments fill the datagram (%d)", flen[0]);
	CHECK(sl_wire_mpart_chunk_max(SL_WIRE_DGRAM_MAX_STD, 7, SL_WIRE_PUB_TRACE) ==
		      1472 - 32 - 4 - 7 - 8 - 12, "chunk_max: datagram minus header and prefix");
	CHECK(strcmp(sl_wire_op_name(SL_OP_MPUB_PART), "MPUB_PART") == 0, "opcode name");

	/* byte-level rules of the decoder, on fragment 1's body */
	n = 4 + 7 + 8 + 12;
	memcpy(body, frames[1] + SL_WIRE_HDR_LEN, n + 10);
	CHECK(sl_wire_decode_mpart(body, n, &f) == -SL_E_MALFORMED, "empty chunk: malformed");
	CHECK(sl_wire_decode_mpart(body, n - 1, &f) == -SL_E_MALFORMED, "short: malformed");
	CHECK(sl_wire_decode_mpart(body, n + 10, &f) == 0 && f.index == 1 && f.nfrag == 3 &&
		      f.count == 32 && f.total_len == 32 * 104 && f.chunk_len == 10,
	      "a short chunk decodes (fields %u/%u count %u total %u)", f.index, f.nfrag,
	      f.count, f.total_len);
	body[4 + 7 + 8] = 3;	/* index = nfrag */
	CHECK(sl_wire_decode_mpart(body, n + 10, &f) == -SL_E_MALFORMED, "index >= nfrag");
	body[4 + 7 + 8] = 0;
	body[4 + 7 + 8 + 1] = 17;
	CHECK(sl_wire_decode_mpart(body, n + 10, &f) == -SL_E_MALFORMED, "17 fragments");
	body[4 + 7 + 8 + 1] = 0;
	CHECK(sl_wire_decode_mpart(body, n + 10, &f) == -SL_E_MALFORMED, "0 fragments");
	body[4 + 7 + 8 + 1] = 3;
	body[4 + 7 + 8 + 2] = 0x01;	/* count 256 + 32 */
	CHECK(sl_wire_decode_mpart(body, n + 10, &f) == -SL_E_MALFORMED, "count 288");
	body[4 + 7 + 8 + 2] = 0;
	body[4 + 7 + 8 + 3] = 0;
	CHECK(sl_wire_decode_mpart(body, n + 10, &f) == -SL_E_MALFORMED, "count 0");
	body[4 + 7 + 8 + 3] = 32;
	memcpy(body + 4 + 7 + 8 + 4, "\x00\x00\x60\x01", 4);	/* total 24577 */
	CHECK(sl_wire_decode_mpart(body, n + 10, &f) == -SL_E_MALFORMED, "total above max");
	memcpy(body + 4 + 7 + 8 + 4, "\x00\x00\x00\x7f", 4);	/* total 127 < 4 x 32 */
	CHECK(sl_wire_decode_mpart(body, n + 10, &f) == -SL_E_MALFORMED,
	      "total below 4 x count");
	memcpy(body + 4 + 7 + 8 + 4, "\x00\x00\x0d\x00", 4);	/* 3328 */
	memcpy(body + 4 + 7 + 8 + 8, "\x00\x00\x0c\xf7", 4);	/* off 3319 + 10 > 3328 */
	CHECK(sl_wire_decode_mpart(body, n + 10, &f) == -SL_E_MALFORMED, "past the area");
	memcpy(body + 4 + 7 + 8 + 8, "\xff\xff\xff\xfa", 4);	/* off wraps */
	CHECK(sl_wire_decode_mpart(body, n + 10, &f) == -SL_E_MALFORMED, "offset wraps");
	memcpy(body + 4 + 7 + 8 + 8, "\x00\x00\x0c\xf6", 4);	/* 3318 + 10 = 3328 */
	CHECK(sl_wire_decode_mpart(body, n + 10, &f) == 0, "the area's last bytes");
	body[3] = 0x03;
	CHECK(sl_wire_decode_mpart(body, n + 10, &f) == -SL_E_MALFORMED, "unknown flag");
	body[3] = 0x01;
	body[4] = '.';
	CHECK(sl_wire_decode_mpart(body, n + 10, &f) == -SL_E_NAME, "bad topic name");
}

static void
test_in_order_and_shuffled(void)
{
	struct sl_wire_pub out;
	uint32_t h = 99;
	int nf, i, rc = 0;
	static const int order[] = {4, 0, 7, 2, 6, 1, 5, 3};

	reset();
	make_mpub(32, 100);
	nf = cut();
	for (i = 0; i < nf - 1; i++)
		CHECK(add(7, 1, SRC, &frag[i], 0, &out, &h) == SL_MPART_MORE,
		      "fragment %d of %d: more", i, nf);
	CHECK(add(7, 1, SRC, &frag[nf - 1], 0, &out, &h) == SL_MPART_DONE && h < SL_MPART_SLOTS,
	      "last fragment: done");
	CHECK(same_as_orig(&out), "the reassembled MPUB is the original, byte for byte");
	sl_mpart_release(mp, h);
	CHECK(mp->nused == 0 && mp->st.completed == 1 && mp->st.started == 1, "released");

	make_mpub(80, 120);
	nf = cut();
	CHECK(nf == 8, "MPUB of 80 x 120 bytes: 8 fragments (%d)", nf);
	for (i = 0; i < nf; i++) {
		rc = add(7, 2, SRC, &frag[order[i]], MS, &out, &h);
		QCHECK(rc == (i == nf - 1 ? SL_MPART_DONE : SL_MPART_MORE),
		       "shuffled fragment %d: %d", order[i], rc);
	}
	CHECK(same_as_orig(&out), "shuffled: the original MPUB");
	sl_mpart_release(mp, h);

	/* 16 fragments, the most, 256 messages */
	make_mpub(256, 80);
	nf = cut();
	CHECK(nf == 16, "MPUB of 256 x 80 bytes: 16 fragments (%d)", nf);
	for (i = nf - 1; i >= 0; i--)
		rc = add(7, 3, SRC, &frag[i], MS, &out, &h);
	CHECK(rc == SL_MPART_DONE && same_as_orig(&out), "16 fragments, backwards: done");
	sl_mpart_release(mp, h);
}

static void
test_hostile(void)
{
	struct sl_wire_pub out;
	struct sl_wire_mpart f;
	uint32_t h;
	uint64_t bad;
	int nf, rc;

	reset();
	make_mpub(32, 100);
	nf = cut();

	/* a retransmitted copy: nothing changes */
	CHECK(add(7, 1, SRC, &frag[0], 0, &out, &h) == SL_MPART_MORE, "first");
	CHECK(add(7, 1, SRC, &frag[0], 0, &out, &h) == SL_MPART_DUP && mp->st.dups == 1,
	      "the same fragment again: DUP");
	/* the same index with other bytes: conflict, the MPUB is dropped */
	f = frag[0];
	f.chunk = frag[1].chunk;
	bad = mp->st.malformed;
	CHECK(add(7, 1, SRC, &f, 0, &out, &h) == -SL_E_MALFORMED && mp->nused == 0 &&
		      mp->st.malformed == bad + 1,
	      "same index, other bytes: malformed, MPUB dropped");
	/* after a drop the MPUB starts again from nothing */
	CHECK(add(7, 1, SRC, &frag[1], 0, &out, &h) == SL_MPART_MORE && mp->nused == 1,
	      "a new start after the drop");

	/* overlap: fragment 2 claiming bytes fragment 1 holds */
	f = frag[2];
	f.off = frag[1].off + 5;
	f.chunk_len = frag[2].chunk_len;
	CHECK(add(7, 1, SRC, &f, 0, &out, &h) == -SL_E_MALFORMED && mp->nused == 0,
	      "overlapping range: malformed");

	/* a fragment that disagrees on the MPUB: count, total, nfrag, topic, partition,
	 * trace id */
	{
		struct sl_wire_mpart v[6];
		const char *what[6] = {"count", "total_len", "nfrag", "topic", "partition",
				       "trace id"};
		int k;

		for (k = 0; k < 6; k++)
			v[k] = frag[1];
		v[0].count = 31;
		v[1].total_len -= 1;
		v[2].nfrag = 4;
		v[3].topic = "topic.y";
		v[4].partition = 4;
		v[5].trace_id = 1;
		for (k = 0; k < 6; k++) {
			(void)add(7, 1, SRC, &frag[0], 0, &out, &h);
			rc = add(7, 1, SRC, &v[k], 0, &out, &h);
			CHECK(rc == -SL_E_MALFORMED && mp->nused == 0,
			      "a fragment with another %s: malformed, dropped (%d)", what[k], rc);
		}
	}

	/* a gap: every index there, lengths short of the area */
	(void)add(7, 1, SRC, &frag[0], 0, &out, &h);
	(void)add(7, 1, SRC, &frag[1], 0, &out, &h);
	f = frag[2];
	f.chunk_len -= 1;
	CHECK(add(7, 1, SRC, &f, 0, &out, &h) == -SL_E_MALFORMED && mp->nused == 0,
	      "all fragments but a byte missing: malformed");

	/* fragments of another session or seq or source start their own MPUB: never mixed */
	(void)add(7, 1, SRC, &frag[0], 0, &out, &h);
	(void)add(7, 1, SRC, &frag[1], 0, &out, &h);
	CHECK(add(8, 1, SRC, &frag[2], 0, &out, &h) == SL_MPART_MORE && mp->nused == 2,
	      "the last fragment from another session: its own MPUB, not this one's end");
	CHECK(add(9, 1, SRC, &frag[2], 0, &out, &h) == -SL_E_FULL && mp->nused == 2,
	      "a third MPUB from the address: per-source cap 2 (both in use), refused FULL");
	reset();
	(void)add(7, 1, SRC, &frag[0], 0, &out, &h);
	(void)add(7, 1, SRC, &frag[1], 0, &out, &h);
	CHECK(add(7, 1, SRC + 1, &frag[2], 0, &out, &h) == SL_MPART_MORE && mp->nused == 2,
	      "the same (session, seq) from another address is another MPUB");
	CHECK(add(7, 1, SRC, &frag[2], 0, &out, &h) == SL_MPART_DONE && same_as_orig(&out),
	      "the real last fragment completes the real MPUB");
	sl_mpart_release(mp, h);

	/* a complete area that is not count elements: the MPUB decoder refuses it */
	reset();
	{
		uint8_t area[16] = {0, 0, 0, 4, 'a', 'b', 'c', 'd', 0, 0, 0, 9, 1, 2, 3, 4};
		struct sl_wire_mpart g = {
			.topic = "t", .topic_len = 1, .nfrag = 2, .count = 2, .total_len = 16,
		};

		g.index = 0;
		g.chunk = area;
		g.chunk_len = 8;
		CHECK(add(1, 1, SRC, &g, 0, &out, &h) == SL_MPART_MORE, "element area part 1");
		g.index = 1;
		g.off = 8;
		g.chunk = area + 8;
		CHECK(add(1, 1, SRC, &g, 0, &out, &h) == -SL_E_MALFORMED && mp->nused == 0,
		      "an element longer than the area: malformed, dropped");
	}
	(void)nf;
}

static void
test_bounds(void)
{
	struct sl_wire_pub out;
	struct sl_mpart_conf c = {.per_source = SL_MPART_SLOTS + 1};
	uint32_t h, i;
	int rc = 0;

	CHECK(sl_mpart_init(mp, &c) == -SL_E_INVAL, "per_source above the pool: refused");
	reset();
	make_mpub(32, 100);
	(void)cut();
	/* the pool: 2 per source, SL_MPART_SLOTS in all */
	for (i = 0; i < SL_MPART_SLOTS; i++)
		QCHECK(add(1, i + 1, SRC + (i / 2), &frag[0], 0, &out, &h) == SL_MPART_MORE,
		       "slot %u", i);
	CHECK(mp->nused == SL_MPART_SLOTS, "pool full (%u)", mp->nused);
	CHECK(add(1, 100, SRC + 100, &frag[0], 0, &out, &h) == -SL_E_FULL &&
		      mp->st.refused == 1, "a new MPUB when the pool is full: FULL");
	CHECK(add(1, 1, SRC, &frag[1], 0, &out, &h) == SL_MPART_MORE,
	      "a started one still takes its fragments");
	/* expiry: 1 s after their first fragment */
	rc = add(1, 100, SRC + 100, &frag[0], 999 * MS, &out, &h);
	CHECK(rc == -SL_E_FULL, "at 0.999 s nothing expired");
	rc = add(1, 100, SRC + 100, &frag[0], 1000 * MS, &out, &h);
	CHECK(rc == SL_MPART_MORE && mp->st.expired == SL_MPART_SLOTS && mp->nused == 1,
	      "at 1 s every old one expired, the new one started (expired %lu)",
	      (unsigned long)mp->st.expired);
	CHECK(add(1, 1, SRC, &frag[2], 1000 * MS, &out, &h) == SL_MPART_MORE,
	      "an expired MPUB's late fragment starts afresh (never completes the old)");
	sl_mpart_expire(mp, 5000 * MS);
	CHECK(mp->nused == 0, "sl_mpart_expire empties the pool");
}

int
main(void)
{
	mp = calloc(1, sizeof(*mp));
	if (mp == NULL)
		return EXIT_FAILURE;
	printf("pool: %zu bytes for %d slots\n", sizeof(*mp), SL_MPART_SLOTS);
	test_codec();
	test_in_order_and_shuffled();
	test_hostile();
	test_bounds();
	free(mp);
	return check_report();
}
