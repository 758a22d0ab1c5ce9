/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * Unit tests of the wire protocol v1 codec (dataplane/wire.c).
 *
 * Every decode of a truncated or exact-size buffer is done on a copy placed so that
 * its last byte is the last byte before a PROT_NONE page: a read past the end faults
 * even without AddressSanitizer.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "err.h"
#include "wire.h"
#include "check.h"


#define FRAME_MAX (SL_WIRE_HDR_LEN + 65535)

/* ---- guard page buffers ---- */

static uint8_t *guard_base;
static size_t guard_len;	/* accessible bytes before the guard page */

static int
guard_init(void)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	void *m;

	guard_len = (FRAME_MAX + 16 + pg - 1) / pg * pg;
	m = mmap(NULL, guard_len + pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		 -1, 0);
	if (m == MAP_FAILED)
		return -1;
	guard_base = m;
	if (mprotect(guard_base + guard_len, pg, PROT_NONE) != 0)
		return -1;
	return 0;
}

/* Copy n bytes so that they end exactly at the guard page. */
static const uint8_t *
guard_copy(const void *src, size_t n)
{
	uint8_t *p = guard_base + guard_len - n;

	if (n > 0)
		memcpy(p, src, n);
	return p;
}

/* ---- generic body decoding ---- */

union body_out {
	struct sl_wire_hello hello;
	struct sl_wire_welcome welcome;
	struct sl_wire_pub pub;
	struct sl_wire_sub sub;
	struct sl_wire_chan_op op;
	struct sl_wire_ok ok;
	struct sl_wire_err err;
	struct sl_wire_msg msg;
};

static int
decode_body(uint8_t opcode, const uint8_t *body, size_t len, union body_out *o)
{
	switch (opcode) {
	case SL_OP_HELLO:
		return sl_wire_decode_hello(body, len, 0, &o->hello);
	case SL_OP_WELCOME:
		return sl_wire_decode_welcome(body, len, &o->welcome);
	case SL_OP_PUB:
		return sl_wire_decode_pub(body, len, 0, &o->pub);
	case SL_OP_MPUB:
		return sl_wire_decode_pub(body, len, 1, &o->pub);
	case SL_OP_SUB:
		return sl_wire_decode_sub(body, len, &o->sub);
	case SL_OP_OK:
		return sl_wire_decode_ok(body, len, &o->ok);
	case SL_OP_ERR:
		return sl_wire_decode_err(body, len, &o->err);
	case SL_OP_MSG:
		return sl_wire_decode_msg(body, len, &o->msg);
	default:
		return sl_wire_decode_chan_op(opcode, body, len, &o->op);
	}
}

/* ---- a catalogue of valid frames, one or more per opcode ---- */

static const struct sl_wire_hdr base_hdr = {
	.flags = 0,
	.session = 0x0102030405060708ULL,
	.seq = 0x1112131415161718ULL,
	.cookie = 0xA1A2A3A4A5A6A7A8ULL,
};

static const uint64_t fin_ids[3] = { 7, 0x8000000000000001ULL, 42 };
static const char long_text[] =
	"0123456789012345678901234567890123456789012345678901234567890123"
	"0123456789012345678901234567890123456789012345678901234567890123"
	"this part is cut";

enum frame_kind {
	FR_HELLO, FR_WELCOME, FR_PUB, FR_PUB_TRACE, FR_PUB_EMPTY, FR_MPUB1, FR_MPUB3, FR_SUB,
	FR_RDY, FR_FIN, FR_REQ, FR_TOUCH, FR_CLS, FR_CLS_TOPIC, FR_CLS_SESSION, FR_NOP,
	FR_SET_OFFSET, FR_OK, FR_ERR, FR_ERR_LONG, FR_MSG, FR_KIND_MAX
};

static const char *const kind_names[FR_KIND_MAX] = {
	"HELLO", "WELCOME", "PUB", "PUB+trace", "PUB empty", "MPUB x1", "MPUB x3", "SUB",
	"RDY", "FIN", "REQ", "TOUCH", "CLS", "CLS topic", "CLS session", "NOP",
	"SET_OFFSET", "OK", "ERR", "ERR long", "MSG",
};

static void
addr_set(struct sl_wire_addr *a, uint16_t part, const char *topic, const char *chan)
{
	a->partition = part;
	a->topic = topic;
	a->topic_len = (uint8_t)strlen(topic);
	a->channel = chan;
	a->channel_len = (uint8_t)strlen(chan);
}

static int
build(enum frame_kind k, uint8_t *buf, size_t cap)
{
	struct sl_wire_hdr h = base_hdr;
	struct sl_wire_chan_op op;
	static const char *const m3[3] = { "first", "", "third message" };
	const void *msgs[3] = { m3[0], m3[1], m3[2] };
	uint32_t lens[3] = { 5, 0, 13 };

	memset(&op, 0, sizeof(op));
	addr_set(&op.addr, 3, "orders.eu-west_1", "billing#eph");
	switch (k) {
	case FR_HELLO: {
		struct sl_wire_hello x = { .client_info = 0x00010002, .window = 64 };

		h.session = 0;
		return sl_wire_encode_hello(buf, cap, &h, &x);
	}
	case FR_WELCOME: {
		struct sl_wire_welcome x = { 0xDEADBEEF00000001ULL, 64, 1400, 1000, 10000 };

		return sl_wire_encode_welcome(buf, cap, &h, &x);
	}
	case FR_PUB:
		return sl_wire_encode_pub(buf, cap, &h, 0, 5, "demo", 0, 0, 1, msgs, lens);
	case FR_PUB_TRACE:
		h.flags = SL_WIRE_F_NOACK | SL_WIRE_F_RETRY;
		return sl_wire_encode_pub(buf, cap, &h, 0, SL_WIRE_PART_ANY, "t",
					  SL_WIRE_PUB_TRACE, 0xFEDCBA9876543210ULL, 1,
					  &msgs[2], &lens[2]);
	case FR_PUB_EMPTY:
		return sl_wire_encode_pub(buf, cap, &h, 0, 0, "demo", 0, 0, 1, &msgs[1],
					  &lens[1]);
	case FR_MPUB1:
		return sl_wire_encode_pub(buf, cap, &h, 1, 1, "demo", 0, 0, 1, msgs, lens);
	case FR_MPUB3:
		return sl_wire_encode_pub(buf, cap, &h, 0, 2, "demo", SL_WIRE_PUB_TRACE, 99, 3,
					  msgs, lens);
	case FR_SUB: {
		struct sl_wire_sub s = { .flags = SL_WIRE_SUB_ORDERED | SL_WIRE_SUB_EPHEMERAL,
					 .rdy = 0x01020304 };

		s.addr = op.addr;
		return sl_wire_encode_sub(buf, cap, &h, &s);
	}
	case FR_RDY:
		op.count = 0xA0B0C0D0;
		return sl_wire_encode_chan_op(buf, cap, &h, SL_OP_RDY, &op, NULL);
	case FR_FIN:
		op.count = 3;
		return sl_wire_encode_chan_op(buf, cap, &h, SL_OP_FIN, &op, fin_ids);
	case FR_REQ:
		op.msg_id = 0x0102030405060708ULL;
		op.delay_ms = 2500;
		return sl_wire_encode_chan_op(buf, cap, &h, SL_OP_REQ, &op, NULL);
	case FR_TOUCH:
		op.msg_id = 77;
		return sl_wire_encode_chan_op(buf, cap, &h, SL_OP_TOUCH, &op, NULL);
	case FR_CLS:
		return sl_wire_encode_chan_op(buf, cap, &h, SL_OP_CLS, &op, NULL);
	case FR_CLS_TOPIC:
		addr_set(&op.addr, 9, "demo", "");
		return sl_wire_encode_chan_op(buf, cap, &h, SL_OP_CLS, &op, NULL);
	case FR_CLS_SESSION:
		addr_set(&op.addr, 0, "", "");
		return sl_wire_encode_chan_op(buf, cap, &h, SL_OP_CLS, &op, NULL);
	case FR_NOP:
		return sl_wire_encode_chan_op(buf, cap, &h, SL_OP_NOP, NULL, NULL);
	case FR_SET_OFFSET:
		op.kind = SL_OFF_TIMESTAMP;
		op.value = 1767225600000000000ULL;
		return sl_wire_encode_chan_op(buf, cap, &h, SL_OP_SET_OFFSET, &op, NULL);
	case FR_OK: {
		struct sl_wire_ok x = { SL_OP_PUB, 7, 1, 100, 4096, 101 };

		return sl_wire_encode_ok(buf, cap, &h, &x);
	}
	case FR_ERR:
		return sl_wire_encode_err(buf, cap, &h, SL_E_NOT_LEADER, SL_OP_PUB, 4,
					  "not the leader");
	case FR_ERR_LONG:
		return sl_wire_encode_err(buf, cap, &h, SL_E_INTERNAL, SL_OP_SUB, 0, long_text);
	case FR_MSG: {
		struct sl_wire_msg x = { 0x5555, 6, 2, 11, 12345, 67890, 1767225600000000001ULL,
					 0xABCDEF, (const uint8_t *)"hello world" };

		return sl_wire_encode_msg(buf, cap, &h, &x);
	}
	default:
		return -1;
	}
}

static uint8_t frames[FR_KIND_MAX][512];
static int frame_len[FR_KIND_MAX];

/* ---- tests ---- */

static void
test_names(void)
{
	char n64[65], n65[66];
	const char *bad[] = { " ", "a b", "a/b", "a\tb", "caf\xc3\xa9", "a:b", "a*", "a,b" };
	size_t i;

	memset(n64, 'x', 64);
	n64[64] = 0;
	memset(n65, 'y', 65);
	n65[65] = 0;
	CHECK(sl_wire_check_name("a", 1) == 0, "name 'a' accepted");
	CHECK(sl_wire_check_name(n64, 64) == 0, "64-byte name accepted");
	CHECK(sl_wire_check_name(n65, 65) == -SL_E_NAME, "65-byte name rejected");
	CHECK(sl_wire_check_name("", 0) == -SL_E_NAME, "empty name rejected");
	CHECK(sl_wire_check_name(NULL, 3) == -SL_E_NAME, "NULL name rejected");
	CHECK(sl_wire_check_name("ABCXYZabcxyz0189._-#", 20) == 0, "every character class");
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECK(sl_wire_check_name(bad[i], strlen(bad[i])) == -SL_E_NAME,
		      "bad name #%zu rejected", i);
	CHECK(sl_wire_check_name("a\0b", 3) == -SL_E_NAME, "embedded NUL rejected");
	CHECK(sl_wire_check_name("ab", 1) == 0, "only len bytes are looked at");
	/* a topic name is a directory under --data-dir: no '.', '..' or hidden name */
	CHECK(sl_wire_check_name(".", 1) == -SL_E_NAME, "'.' rejected");
	CHECK(sl_wire_check_name("..", 2) == -SL_E_NAME, "'..' rejected");
	CHECK(sl_wire_check_name(".x", 2) == -SL_E_NAME, "leading dot rejected");
	CHECK(sl_wire_check_name("x.", 2) == 0 && sl_wire_check_name("a..b", 4) == 0,
	      "dots after the first byte accepted");
	{
		/* the decoders and encoders apply it: PUB to '..', SUB to '.'/'.x' */
		uint8_t pub[] = { 0x00, 0x00, 0x02, 0x00, '.', '.', 0x00, 0x00, 0x00, 0x01, 'm' };
		uint8_t sub[] = { 0x00, 0x00, 0x01, 0x02, '.', '.', 'x', 0x00, 0x00, 0, 0, 0, 1 };
		uint8_t buf[128];
		struct sl_wire_hdr h = { .version = SL_WIRE_VERSION, .session = 1, .seq = 1 };
		struct sl_wire_sub so;
		struct sl_wire_pub p;
		const void *m = "m";
		uint32_t l = 1;

		CHECK(sl_wire_decode_pub(pub, sizeof(pub), 0, &p) == -SL_E_NAME,
		      "PUB to '..' -> SL_E_NAME");
		CHECK(sl_wire_decode_sub(sub, sizeof(sub), &so) == -SL_E_NAME,
		      "SUB to topic '.' -> SL_E_NAME");
		sub[4] = 't';
		CHECK(sl_wire_decode_sub(sub, sizeof(sub), &so) == -SL_E_NAME,
		      "SUB with channel '.x' -> SL_E_NAME");
		sub[5] = 'c';
		CHECK(sl_wire_decode_sub(sub, sizeof(sub), &so) == 0, "SUB t/cx accepted");
		CHECK(sl_wire_encode_pub(buf, sizeof(buf), &h, 0, 0, "..", 0, 0, 1, &m, &l) ==
		      -SL_E_NAME, "PUB encoder refuses '..'");
	}
}

static void
test_op_names(void)
{
	CHECK(strcmp(sl_wire_op_name(SL_OP_PUB), "PUB") == 0, "op name PUB");
	CHECK(strcmp(sl_wire_op_name(SL_OP_SET_OFFSET), "SET_OFFSET") == 0, "op name SET_OFFSET");
	CHECK(strcmp(sl_wire_op_name(SL_OP_WELCOME), "WELCOME") == 0, "op name WELCOME");
	CHECK(strcmp(sl_wire_op_name(0x00), "?") == 0, "op name of 0x00 is ?");
	CHECK(strcmp(sl_wire_op_name(0xFF), "?") == 0, "op name of 0xFF is ?");
}

static void
test_hdr(void)
{
	static const uint8_t expect[32] = {
		0x53, 0x4C, 0x01, 0x0B, 0x80, 0x03, 0x00, 0x10,
		0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08,
		0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18,
		0xA1, 0xA2, 0xA3, 0xA4, 0xA5, 0xA6, 0xA7, 0xA8,
	};
	struct sl_wire_hdr h = base_hdr, d;
	uint8_t buf[64];
	unsigned int op, n_ok = 0, n_bad = 0;
	int rc;

	h.version = 1;
	h.opcode = SL_OP_SET_OFFSET;
	h.flags = 0x8003;
	h.body_len = 16;
	sl_wire_encode_hdr(buf, &h);
	CHECK(memcmp(buf, expect, 32) == 0, "header bytes are big-endian at the spec offsets");
	memset(buf + 32, 0, 16);
	rc = sl_wire_decode_hdr(buf, 48, &d);
	CHECK(rc == 0 && d.version == 1 && d.opcode == SL_OP_SET_OFFSET && d.flags == 0x8003 &&
	      d.body_len == 16 && d.session == h.session && d.seq == h.seq &&
	      d.cookie == h.cookie, "header round trip");
	CHECK(sl_wire_decode_hdr(buf, 47, &d) == -SL_E_MALFORMED, "body_len > len - 32");
	CHECK(sl_wire_decode_hdr(buf, 49, &d) == -SL_E_MALFORMED, "body_len < len - 32");
	CHECK(sl_wire_decode_hdr(NULL, 0, &d) == -SL_E_MALFORMED, "NULL buffer");

	buf[0] = 0x4C;
	buf[1] = 0x53;
	CHECK(sl_wire_decode_hdr(buf, 48, &d) == -SL_E_MALFORMED, "byte-swapped magic");
	buf[0] = 0x53;
	buf[1] = 0x4D;
	CHECK(sl_wire_decode_hdr(buf, 48, &d) == -SL_E_MALFORMED, "bad magic");
	buf[1] = 0x4C;
	buf[2] = 0;
	CHECK(sl_wire_decode_hdr(buf, 48, &d) == -SL_E_VERSION, "version 0");
	buf[2] = 2;
	CHECK(sl_wire_decode_hdr(buf, 48, &d) == -SL_E_VERSION, "version 2");
	buf[2] = 0xFF;
	CHECK(sl_wire_decode_hdr(buf, 48, &d) == -SL_E_VERSION, "version 255");
	buf[2] = 1;
	for (op = 0; op < 256; op++) {
		int valid = (op >= 0x01 && op <= 0x0D) || (op >= 0x80 && op <= 0x84);

		buf[3] = (uint8_t)op;
		rc = sl_wire_decode_hdr(buf, 48, &d);
		if (valid && rc == 0 && d.opcode == op)
			n_ok++;
		else if (!valid && rc == -SL_E_OPCODE)
			n_bad++;
	}
	CHECK(n_ok == 18, "the 18 opcodes are accepted (%u)", n_ok);
	CHECK(n_bad == 238, "the 238 other opcodes give SL_E_OPCODE (%u)", n_bad);
}

static void
test_roundtrip(void)
{
	struct sl_wire_hdr d;
	union body_out o;
	const uint8_t *f, *b;
	const uint8_t *data;
	uint32_t pos, len;
	int k, rc;

	for (k = 0; k < FR_KIND_MAX; k++) {
		frame_len[k] = build((enum frame_kind)k, frames[k], sizeof(frames[k]));
		CHECK(frame_len[k] >= SL_WIRE_HDR_LEN, "encode %s: %d bytes", kind_names[k],
		      frame_len[k]);
	}

#define DEC(k) do {								\
	f = guard_copy(frames[k], (size_t)frame_len[k]);			\
	rc = sl_wire_decode_hdr(f, (size_t)frame_len[k], &d);			\
	b = f + SL_WIRE_HDR_LEN;						\
	if (rc == 0)								\
		rc = decode_body(d.opcode, b, d.body_len, &o);			\
} while (0)
#define HDR_SAME(d) ((d).version == 1 && (d).session == base_hdr.session &&	\
		     (d).seq == base_hdr.seq && (d).cookie == base_hdr.cookie)

	DEC(FR_HELLO);
	CHECK(rc == 0 && d.opcode == SL_OP_HELLO && d.session == 0 && d.seq == base_hdr.seq &&
	      o.hello.client_info == 0x00010002 && o.hello.window == 64, "HELLO round trip");
	DEC(FR_WELCOME);
	CHECK(rc == 0 && HDR_SAME(d) && d.opcode == SL_OP_WELCOME &&
	      o.welcome.session == 0xDEADBEEF00000001ULL && o.welcome.window == 64 &&
	      o.welcome.max_msg == 1400 && o.welcome.heartbeat_ms == 1000 &&
	      o.welcome.timeout_ms == 10000, "WELCOME round trip");
	DEC(FR_PUB);
	CHECK(rc == 0 && HDR_SAME(d) && d.opcode == SL_OP_PUB && d.flags == 0 &&
	      o.pub.partition == 5 && o.pub.topic_len == 4 &&
	      memcmp(o.pub.topic, "demo", 4) == 0 && o.pub.flags == 0 && o.pub.trace_id == 0 &&
	      o.pub.count == 1 && o.pub.msg_len == 5 && memcmp(o.pub.msg, "first", 5) == 0,
	      "PUB round trip");
	pos = 0;
	rc = sl_wire_mpub_next(&o.pub, &pos, &data, &len);
	CHECK(rc == 1 && len == 5 && data == o.pub.msg, "mpub_next on a PUB gives its message");
	CHECK(sl_wire_mpub_next(&o.pub, &pos, &data, &len) == 0, "... and then the end");
	DEC(FR_PUB_TRACE);
	CHECK(rc == 0 && HDR_SAME(d) && d.opcode == SL_OP_PUB &&
	      d.flags == (SL_WIRE_F_NOACK | SL_WIRE_F_RETRY) &&
	      o.pub.partition == SL_WIRE_PART_ANY && o.pub.topic_len == 1 &&
	      o.pub.topic[0] == 't' && o.pub.flags == SL_WIRE_PUB_TRACE &&
	      o.pub.trace_id == 0xFEDCBA9876543210ULL && o.pub.msg_len == 13 &&
	      memcmp(o.pub.msg, "third message", 13) == 0, "PUB with trace id and flags");
	DEC(FR_PUB_EMPTY);
	CHECK(rc == 0 && o.pub.count == 1 && o.pub.msg_len == 0 &&
	      d.body_len == 4 + 4 + 4, "PUB of an empty message");
	DEC(FR_MPUB1);
	CHECK(rc == 0 && d.opcode == SL_OP_MPUB && o.pub.count == 1 && o.pub.partition == 1 &&
	      o.pub.msg_len == 5 && o.pub.msgs_len == 9, "MPUB with 1 message");
	pos = 0;
	rc = sl_wire_mpub_next(&o.pub, &pos, &data, &len);
	CHECK(rc == 1 && len == 5 && memcmp(data, "first", 5) == 0 &&
	      sl_wire_mpub_next(&o.pub, &pos, &data, &len) == 0, "MPUB x1 iteration");
	DEC(FR_MPUB3);
	CHECK(rc == 0 && d.opcode == SL_OP_MPUB && o.pub.count == 3 && o.pub.partition == 2 &&
	      o.pub.trace_id == 99 && o.pub.msg_len == 18 && o.pub.msgs_len == 30,
	      "MPUB with 3 messages (count > 1 makes an MPUB)");
	pos = 0;
	rc = sl_wire_mpub_next(&o.pub, &pos, &data, &len);
	CHECK(rc == 1 && len == 5 && memcmp(data, "first", 5) == 0, "MPUB x3 element 0");
	rc = sl_wire_mpub_next(&o.pub, &pos, &data, &len);
	CHECK(rc == 1 && len == 0, "MPUB x3 element 1 (empty)");
	rc = sl_wire_mpub_next(&o.pub, &pos, &data, &len);
	CHECK(rc == 1 && len == 13 && memcmp(data, "third message", 13) == 0,
	      "MPUB x3 element 2");
	CHECK(sl_wire_mpub_next(&o.pub, &pos, &data, &len) == 0, "MPUB x3 end");
	DEC(FR_SUB);
	CHECK(rc == 0 && HDR_SAME(d) && d.opcode == SL_OP_SUB && o.sub.addr.partition == 3 &&
	      o.sub.addr.topic_len == 16 && memcmp(o.sub.addr.topic, "orders.eu-west_1", 16) == 0 &&
	      o.sub.addr.channel_len == 11 && memcmp(o.sub.addr.channel, "billing#eph", 11) == 0 &&
	      o.sub.flags == (SL_WIRE_SUB_ORDERED | SL_WIRE_SUB_EPHEMERAL) &&
	      o.sub.rdy == 0x01020304, "SUB round trip");
	DEC(FR_RDY);
	CHECK(rc == 0 && d.opcode == SL_OP_RDY && o.op.addr.partition == 3 &&
	      o.op.addr.channel_len == 11 && o.op.count == 0xA0B0C0D0, "RDY round trip");
	DEC(FR_FIN);
	CHECK(rc == 0 && d.opcode == SL_OP_FIN && o.op.count == 3 && o.op.msg_id == 7 &&
	      sl_wire_fin_id(&o.op, 0) == 7 && sl_wire_fin_id(&o.op, 1) == fin_ids[1] &&
	      sl_wire_fin_id(&o.op, 2) == 42, "FIN round trip");
	DEC(FR_REQ);
	CHECK(rc == 0 && d.opcode == SL_OP_REQ && o.op.msg_id == 0x0102030405060708ULL &&
	      o.op.delay_ms == 2500 && o.op.count == 0, "REQ round trip");
	DEC(FR_TOUCH);
	CHECK(rc == 0 && d.opcode == SL_OP_TOUCH && o.op.msg_id == 77 &&
	      o.op.addr.topic_len == 16, "TOUCH round trip");
	DEC(FR_CLS);
	CHECK(rc == 0 && d.opcode == SL_OP_CLS && o.op.addr.topic_len == 16 &&
	      o.op.addr.channel_len == 11 && memcmp(o.op.addr.channel, "billing#eph", 11) == 0,
	      "CLS of one subscription");
	DEC(FR_CLS_TOPIC);
	CHECK(rc == 0 && o.op.addr.partition == 9 && o.op.addr.topic_len == 4 &&
	      o.op.addr.channel_len == 0, "CLS with a topic and no channel");
	DEC(FR_CLS_SESSION);
	CHECK(rc == 0 && o.op.addr.topic_len == 0 && o.op.addr.channel_len == 0 &&
	      d.body_len == 4, "CLS of the whole session");
	DEC(FR_NOP);
	CHECK(rc == 0 && d.opcode == SL_OP_NOP && d.body_len == 0 &&
	      frame_len[FR_NOP] == SL_WIRE_HDR_LEN, "NOP round trip");
	DEC(FR_SET_OFFSET);
	CHECK(rc == 0 && d.opcode == SL_OP_SET_OFFSET && o.op.kind == SL_OFF_TIMESTAMP &&
	      o.op.value == 1767225600000000000ULL, "SET_OFFSET round trip");
	DEC(FR_OK);
	CHECK(rc == 0 && HDR_SAME(d) && d.opcode == SL_OP_OK && o.ok.req_opcode == SL_OP_PUB &&
	      o.ok.partition == 7 && o.ok.count == 1 && o.ok.id == 100 && o.ok.offset == 4096 &&
	      o.ok.aux == 101, "OK round trip");
	DEC(FR_ERR);
	CHECK(rc == 0 && d.opcode == SL_OP_ERR && o.err.code == SL_E_NOT_LEADER &&
	      o.err.req_opcode == SL_OP_PUB && o.err.partition == 4 && o.err.text_len == 14 &&
	      memcmp(o.err.text, "not the leader", 14) == 0, "ERR round trip");
	DEC(FR_ERR_LONG);
	CHECK(rc == 0 && o.err.text_len == SL_WIRE_ERR_TEXT_MAX &&
	      memcmp(o.err.text, long_text, SL_WIRE_ERR_TEXT_MAX) == 0 &&
	      frame_len[FR_ERR_LONG] == SL_WIRE_HDR_LEN + 8 + 128,
	      "ERR text truncated at 128 bytes");
	DEC(FR_MSG);
	CHECK(rc == 0 && HDR_SAME(d) && d.opcode == SL_OP_MSG && o.msg.sub_id == 0x5555 &&
	      o.msg.partition == 6 && o.msg.attempts == 2 && o.msg.len == 11 &&
	      o.msg.msg_id == 12345 && o.msg.offset == 67890 &&
	      o.msg.timestamp_ns == 1767225600000000001ULL && o.msg.trace_id == 0xABCDEF &&
	      memcmp(o.msg.data, "hello world", 11) == 0, "MSG round trip");
#undef DEC
#undef HDR_SAME
}

/* Every prefix of every valid frame (and of its body) is rejected, without overreads. */
static void
test_truncation(void)
{
	struct sl_wire_hdr d;
	union body_out o;
	size_t n, blen;
	int k, bad_hdr, bad_body, rc;
	uint8_t op;

	for (k = 0; k < FR_KIND_MAX; k++) {
		bad_hdr = 0;
		bad_body = 0;
		for (n = 0; n < (size_t)frame_len[k]; n++)
			if (sl_wire_decode_hdr(guard_copy(frames[k], n), n, &d) != -SL_E_MALFORMED)
				bad_hdr++;
		op = frames[k][3];
		blen = (size_t)frame_len[k] - SL_WIRE_HDR_LEN;
		for (n = 0; n < blen; n++) {
			rc = decode_body(op, guard_copy(frames[k] + SL_WIRE_HDR_LEN, n), n, &o);
			if (rc != -SL_E_MALFORMED)
				bad_body++;
		}
		rc = decode_body(op, guard_copy(frames[k] + SL_WIRE_HDR_LEN, blen), blen, &o);
		CHECK(bad_hdr == 0 && bad_body == 0 && rc == 0,
		      "%s: all %d frame and %zu body truncations rejected", kind_names[k],
		      frame_len[k], blen);
	}
}

/* One byte too many after every valid body is rejected too. */
static void
test_trailing(void)
{
	uint8_t tmp[600];
	union body_out o;
	size_t blen;
	int k, rc;

	for (k = 0; k < FR_KIND_MAX; k++) {
		blen = (size_t)frame_len[k] - SL_WIRE_HDR_LEN;
		memcpy(tmp, frames[k] + SL_WIRE_HDR_LEN, blen);
		tmp[blen] = 0;
		rc = decode_body(frames[k][3], guard_copy(tmp, blen + 1), blen + 1, &o);
		CHECK(rc == -SL_E_MALFORMED, "%s: trailing byte rejected (%d)", kind_names[k], rc);
	}
}

/* Encoders refuse a buffer one byte short, and write nothing into it. */
static void
test_too_small(void)
{
	static uint8_t buf[600];
	size_t i;
	int k, rc, touched;

	for (k = 0; k < FR_KIND_MAX; k++) {
		memset(buf, 0xEE, sizeof(buf));
		rc = build((enum frame_kind)k, buf, (size_t)frame_len[k] - 1);
		touched = 0;
		for (i = 0; i < sizeof(buf); i++)
			touched |= buf[i] != 0xEE;
		CHECK(rc == -SL_E_TOO_BIG && !touched, "%s: encoder with cap %d -> TOO_BIG",
		      kind_names[k], frame_len[k] - 1);
		rc = build((enum frame_kind)k, NULL, 0);
		CHECK(rc == -SL_E_TOO_BIG, "%s: encoder with no buffer -> TOO_BIG", kind_names[k]);
		rc = build((enum frame_kind)k, buf, (size_t)frame_len[k]);
		CHECK(rc == frame_len[k] && memcmp(buf, frames[k], (size_t)rc) == 0 &&
		      buf[rc] == 0xEE, "%s: encoder with exact cap", kind_names[k]);
	}
}

static void
test_mpub(void)
{
	static uint8_t buf[FRAME_MAX], body[FRAME_MAX];
	static uint8_t payload[256][8];
	const void *msgs[257];
	uint32_t lens[257], pos, len, i, good;
	const uint8_t *data;
	struct sl_wire_hdr h = base_hdr, d;
	struct sl_wire_pub p;
	size_t blen, cnt_off;
	int n, rc;

	for (i = 0; i < 257; i++) {
		msgs[i] = payload[i % 256];
		lens[i] = i % 8;
		memset(payload[i % 256], (int)i, 8);
	}
	n = sl_wire_encode_pub(buf, sizeof(buf), &h, 1, 0, "m", 0, 0, 256, msgs, lens);
	CHECK(n > 0, "encode MPUB with 256 messages (%d bytes)", n);
	rc = sl_wire_decode_hdr(guard_copy(buf, (size_t)n), (size_t)n, &d);
	blen = d.body_len;
	memcpy(body, buf + SL_WIRE_HDR_LEN, blen);
	rc |= sl_wire_decode_pub(guard_copy(body, blen), blen, 1, &p);
	CHECK(rc == 0 && p.count == 256, "decode MPUB with 256 messages");
	pos = 0;
	good = 0;
	for (i = 0; sl_wire_mpub_next(&p, &pos, &data, &len) == 1; i++)
		if (len == i % 8 && (len == 0 || (data[0] == (uint8_t)i &&
						  data[len - 1] == (uint8_t)i)))
			good++;
	CHECK(i == 256 && good == 256, "iterate 256 MPUB messages (%u, %u good)", i, good);

	n = sl_wire_encode_pub(buf, sizeof(buf), &h, 1, 0, "m", 0, 0, 257, msgs, lens);
	CHECK(n == -SL_E_PUB_ARG, "encoder refuses 257 messages");
	n = sl_wire_encode_pub(buf, sizeof(buf), &h, 1, 0, "m", 0, 0, 0, msgs, lens);
	CHECK(n == -SL_E_PUB_ARG, "encoder refuses 0 messages");
	n = sl_wire_encode_pub(buf, sizeof(buf), &h, 0, 0, "m", 0x80, 0, 1, msgs, lens);
	CHECK(n == -SL_E_PUB_ARG, "encoder refuses undefined PUB flags");

	/* body for "m": 00 00 01 00 'm' | count | elements */
	cnt_off = 5;
	body[cnt_off] = 0x01;	/* 257 */
	body[cnt_off + 1] = 0x01;
	CHECK(sl_wire_decode_pub(guard_copy(body, blen), blen, 1, &p) == -SL_E_MALFORMED,
	      "decoder refuses count 257");
	body[cnt_off] = 0;
	body[cnt_off + 1] = 0;
	CHECK(sl_wire_decode_pub(guard_copy(body, blen), blen, 1, &p) == -SL_E_MALFORMED,
	      "decoder refuses count 0");
	body[cnt_off + 1] = 255;	/* fewer than the elements present: trailing bytes */
	CHECK(sl_wire_decode_pub(guard_copy(body, blen), blen, 1, &p) == -SL_E_MALFORMED,
	      "decoder refuses elements beyond count");
	body[cnt_off] = 1;
	body[cnt_off + 1] = 0;

	/* 2 messages: "ab", "cde" */
	{
		static const uint8_t m2[] = {
			0x00, 0x01, 0x04, 0x00, 'd', 'e', 'm', 'o', 0x00, 0x02,
			0x00, 0x00, 0x00, 0x02, 'a', 'b',
			0x00, 0x00, 0x00, 0x03, 'c', 'd', 'e',
		};
		uint8_t t[sizeof(m2)];

		memcpy(t, m2, sizeof(t));
		CHECK(sl_wire_decode_pub(guard_copy(t, sizeof(t)), sizeof(t), 1, &p) == 0 &&
		      p.count == 2 && p.msg_len == 5 && p.msgs_len == 13, "hand-made MPUB x2");
		t[19] = 4;	/* last element overruns by one byte */
		CHECK(sl_wire_decode_pub(guard_copy(t, sizeof(t)), sizeof(t), 1, &p) ==
		      -SL_E_MALFORMED, "last element length overruns the body");
		t[16] = 0xFF;	/* 0xFF000004: wraps a 32-bit sum */
		CHECK(sl_wire_decode_pub(guard_copy(t, sizeof(t)), sizeof(t), 1, &p) ==
		      -SL_E_MALFORMED, "huge element length");
		t[16] = 0;
		t[19] = 2;	/* one byte left over */
		CHECK(sl_wire_decode_pub(guard_copy(t, sizeof(t)), sizeof(t), 1, &p) ==
		      -SL_E_MALFORMED, "elements not filling the body");
		t[19] = 3;
		t[13] = 0x09;	/* first element swallows the second's length */
		CHECK(sl_wire_decode_pub(guard_copy(t, sizeof(t)), sizeof(t), 1, &p) ==
		      -SL_E_MALFORMED, "count 2 but one element fills the body");
		t[13] = 0x02;
		t[9] = 3;	/* count 3, only 2 elements */
		CHECK(sl_wire_decode_pub(guard_copy(t, sizeof(t)), sizeof(t), 1, &p) ==
		      -SL_E_MALFORMED, "count larger than the elements present");
		t[9] = 2;
		t[3] = 0x02;	/* undefined flag */
		CHECK(sl_wire_decode_pub(guard_copy(t, sizeof(t)), sizeof(t), 1, &p) ==
		      -SL_E_MALFORMED, "undefined PUB flag rejected");
		t[3] = 0;
		t[2] = 0;	/* topic_len 0 */
		CHECK(sl_wire_decode_pub(guard_copy(t, sizeof(t)), sizeof(t), 1, &p) ==
		      -SL_E_NAME, "MPUB with topic_len 0 -> SL_E_NAME");
		t[2] = 4;
		t[5] = '/';
		CHECK(sl_wire_decode_pub(guard_copy(t, sizeof(t)), sizeof(t), 1, &p) ==
		      -SL_E_NAME, "bad topic character in MPUB -> SL_E_NAME");
		t[5] = 'e';
		CHECK(sl_wire_decode_pub(guard_copy(t, sizeof(t)), sizeof(t), 0, &p) ==
		      -SL_E_MALFORMED, "an MPUB body is not a valid PUB body");
	}
	{
		/* PUB whose msg_len overruns / underruns */
		uint8_t t[] = { 0x00, 0x00, 0x01, 0x00, 'x', 0x00, 0x00, 0x00, 0x03, 'a', 'b', 'c' };

		CHECK(sl_wire_decode_pub(guard_copy(t, sizeof(t)), sizeof(t), 0, &p) == 0 &&
		      p.msg_len == 3, "hand-made PUB");
		t[8] = 4;
		CHECK(sl_wire_decode_pub(guard_copy(t, sizeof(t)), sizeof(t), 0, &p) ==
		      -SL_E_MALFORMED, "PUB msg_len overruns");
		t[8] = 2;
		CHECK(sl_wire_decode_pub(guard_copy(t, sizeof(t)), sizeof(t), 0, &p) ==
		      -SL_E_MALFORMED, "PUB msg_len leaves a trailing byte");
		t[8] = 3;
		t[5] = 0x80;
		CHECK(sl_wire_decode_pub(guard_copy(t, sizeof(t)), sizeof(t), 0, &p) ==
		      -SL_E_MALFORMED, "PUB msg_len 2^31+3");
		t[5] = 0;
		t[2] = 0;
		t[3] = 0;
		CHECK(sl_wire_decode_pub(guard_copy(t, 4 + 4), 8, 0, &p) == -SL_E_NAME,
		      "PUB with empty topic -> SL_E_NAME");
	}
}

static void
test_pub_limits(void)
{
	static uint8_t buf[FRAME_MAX + 64];
	static uint8_t big[70000];
	const void *m = big;
	uint32_t l;
	struct sl_wire_hdr h = base_hdr;
	char n65[66];
	int n;

	/* largest PUB of a 1-byte topic in a standard datagram: 1472 - 40 - 1 */
	l = SL_WIRE_DGRAM_MAX_STD - 41;
	n = sl_wire_encode_pub(buf, SL_WIRE_DGRAM_MAX_STD, &h, 0, 0, "t", 0, 0, 1, &m, &l);
	CHECK(n == SL_WIRE_DGRAM_MAX_STD, "PUB of 1431 bytes fills a 1472-byte datagram");
	l++;
	n = sl_wire_encode_pub(buf, SL_WIRE_DGRAM_MAX_STD, &h, 0, 0, "t", 0, 0, 1, &m, &l);
	CHECK(n == -SL_E_TOO_BIG, "PUB of 1432 bytes does not");
	l = 65535 - 12 + 1;
	n = sl_wire_encode_pub(buf, sizeof(buf), &h, 0, 0, "demo", 0, 0, 1, &m, &l);
	CHECK(n == -SL_E_TOO_BIG, "PUB whose body exceeds 65535 bytes -> TOO_BIG");
	l = 65535 - 12;
	n = sl_wire_encode_pub(buf, sizeof(buf), &h, 0, 0, "demo", 0, 0, 1, &m, &l);
	CHECK(n == 65535 + SL_WIRE_HDR_LEN, "PUB with a 65535-byte body is the largest frame");
	l = 70000;
	n = sl_wire_encode_pub(buf, sizeof(buf), &h, 0, 0, "demo", 0, 0, 1, &m, &l);
	CHECK(n == -SL_E_TOO_BIG, "PUB of 70000 bytes -> TOO_BIG");
	memset(n65, 'a', 65);
	n65[65] = 0;
	l = 1;
	n = sl_wire_encode_pub(buf, sizeof(buf), &h, 0, 0, n65, 0, 0, 1, &m, &l);
	CHECK(n == -SL_E_NAME, "PUB encoder refuses a 65-byte topic");
	n65[64] = 0;
	n = sl_wire_encode_pub(buf, sizeof(buf), &h, 0, 0, n65, 0, 0, 1, &m, &l);
	CHECK(n == 32 + 4 + 64 + 4 + 1, "PUB encoder accepts a 64-byte topic");
	n = sl_wire_encode_pub(buf, sizeof(buf), &h, 0, 0, "", 0, 0, 1, &m, &l);
	CHECK(n == -SL_E_NAME, "PUB encoder refuses an empty topic");
	n = sl_wire_encode_pub(buf, sizeof(buf), &h, 0, 0, "a b", 0, 0, 1, &m, &l);
	CHECK(n == -SL_E_NAME, "PUB encoder refuses 'a b'");
	n = sl_wire_encode_pub(buf, sizeof(buf), &h, 0, 0, NULL, 0, 0, 1, &m, &l);
	CHECK(n == -SL_E_NAME, "PUB encoder refuses a NULL topic");
	{
		struct sl_wire_msg x = { .len = 65535 - 47, .data = big };

		n = sl_wire_encode_msg(buf, sizeof(buf), &h, &x);
		CHECK(n == -SL_E_TOO_BIG, "MSG whose body exceeds 65535 bytes -> TOO_BIG");
		x.len--;
		n = sl_wire_encode_msg(buf, sizeof(buf), &h, &x);
		CHECK(n == FRAME_MAX, "MSG with a 65535-byte body");
	}
}

static void
test_fin(void)
{
	static uint8_t buf[2048], body[2048];
	uint64_t ids[129];
	struct sl_wire_chan_op op, o;
	struct sl_wire_hdr h = base_hdr;
	uint32_t i, good = 0;
	size_t blen, cnt_off;
	int n;

	for (i = 0; i < 129; i++)
		ids[i] = 1000 + i * 0x0101010101ULL;
	memset(&op, 0, sizeof(op));
	addr_set(&op.addr, 1, "t", "c");
	op.count = 128;
	n = sl_wire_encode_chan_op(buf, sizeof(buf), &h, SL_OP_FIN, &op, ids);
	CHECK(n == 32 + 6 + 2 + 128 * 8, "encode FIN with 128 ids");
	blen = (size_t)n - 32;
	memcpy(body, buf + 32, blen);
	n = sl_wire_decode_chan_op(SL_OP_FIN, guard_copy(body, blen), blen, &o);
	for (i = 0; n == 0 && i < o.count; i++)
		good += sl_wire_fin_id(&o, i) == ids[i];
	CHECK(n == 0 && o.count == 128 && good == 128, "decode FIN with 128 ids");
	op.count = 129;
	CHECK(sl_wire_encode_chan_op(buf, sizeof(buf), &h, SL_OP_FIN, &op, ids) == -SL_E_INVAL,
	      "encoder refuses FIN with 129 ids");
	op.count = 0;
	CHECK(sl_wire_encode_chan_op(buf, sizeof(buf), &h, SL_OP_FIN, &op, ids) == -SL_E_INVAL,
	      "encoder refuses FIN with 0 ids");
	op.count = 1;
	CHECK(sl_wire_encode_chan_op(buf, sizeof(buf), &h, SL_OP_FIN, &op, ids) == 32 + 16,
	      "encoder accepts FIN with 1 id");

	cnt_off = 6;
	body[cnt_off] = 0;
	body[cnt_off + 1] = 129;
	CHECK(sl_wire_decode_chan_op(SL_OP_FIN, guard_copy(body, 8 + 129 * 8), 8 + 129 * 8,
				     &o) == -SL_E_MALFORMED, "decoder refuses FIN count 129");
	body[cnt_off + 1] = 0;
	CHECK(sl_wire_decode_chan_op(SL_OP_FIN, guard_copy(body, 8), 8, &o) == -SL_E_MALFORMED,
	      "decoder refuses FIN count 0");
	body[cnt_off + 1] = 1;
	CHECK(sl_wire_decode_chan_op(SL_OP_FIN, guard_copy(body, 16), 16, &o) == 0 &&
	      o.count == 1 && o.msg_id == ids[0], "decoder accepts FIN count 1");
	body[cnt_off + 1] = 2;
	CHECK(sl_wire_decode_chan_op(SL_OP_FIN, guard_copy(body, 32), 32, &o) ==
	      -SL_E_MALFORMED, "FIN count 2 with 3 ids");
	body[cnt_off + 1] = 4;
	CHECK(sl_wire_decode_chan_op(SL_OP_FIN, guard_copy(body, 32), 32, &o) ==
	      -SL_E_MALFORMED, "FIN count 4 with 3 ids");
	body[cnt_off] = 0xFF;
	body[cnt_off + 1] = 0xFF;
	CHECK(sl_wire_decode_chan_op(SL_OP_FIN, guard_copy(body, 32), 32, &o) ==
	      -SL_E_MALFORMED, "FIN count 65535");
}

static void
test_addresses(void)
{
	uint8_t buf[256];
	struct sl_wire_hdr h = base_hdr;
	struct sl_wire_chan_op op, o;
	struct sl_wire_sub s, so;
	char n65[66];
	int n;

	memset(&op, 0, sizeof(op));
	memset(&s, 0, sizeof(s));
	memset(n65, 'q', 65);
	n65[65] = 0;

	addr_set(&s.addr, 0, "t", "");
	CHECK(sl_wire_encode_sub(buf, sizeof(buf), &h, &s) == -SL_E_NAME,
	      "SUB encoder refuses an empty channel");
	addr_set(&s.addr, 0, "t", "c h");
	CHECK(sl_wire_encode_sub(buf, sizeof(buf), &h, &s) == -SL_E_NAME,
	      "SUB encoder refuses channel 'c h'");
	addr_set(&s.addr, 0, n65, "c");
	CHECK(sl_wire_encode_sub(buf, sizeof(buf), &h, &s) == -SL_E_NAME,
	      "SUB encoder refuses a 65-byte topic");
	addr_set(&s.addr, 0, "t", "c");
	s.flags = 0x04;
	CHECK(sl_wire_encode_sub(buf, sizeof(buf), &h, &s) == -SL_E_INVAL,
	      "SUB encoder refuses undefined flags");
	addr_set(&op.addr, 0, "", "c");
	CHECK(sl_wire_encode_chan_op(buf, sizeof(buf), &h, SL_OP_CLS, &op, NULL) == -SL_E_NAME,
	      "CLS encoder refuses a channel without topic");
	addr_set(&op.addr, 0, "t", "");
	CHECK(sl_wire_encode_chan_op(buf, sizeof(buf), &h, SL_OP_RDY, &op, NULL) == -SL_E_NAME,
	      "RDY encoder refuses an empty channel");
	CHECK(sl_wire_encode_chan_op(buf, sizeof(buf), &h, SL_OP_PUB, &op, NULL) == -SL_E_INVAL,
	      "chan_op encoder refuses opcode PUB");
	addr_set(&op.addr, 0, "t", "c");
	op.kind = 4;
	CHECK(sl_wire_encode_chan_op(buf, sizeof(buf), &h, SL_OP_SET_OFFSET, &op, NULL) ==
	      -SL_E_INVAL, "SET_OFFSET encoder refuses kind 4");

	{
		/* SUB body: part 00 07, tl 1, cl 1, 't', 'c', flags, rsvd, rdy */
		uint8_t t[] = { 0x00, 0x07, 0x01, 0x01, 't', 'c', 0x01, 0x00, 0, 0, 0, 9 };

		CHECK(sl_wire_decode_sub(guard_copy(t, sizeof(t)), sizeof(t), &so) == 0 &&
		      so.addr.partition == 7 && so.flags == 1 && so.rdy == 9, "hand-made SUB");
		t[7] = 1;
		CHECK(sl_wire_decode_sub(guard_copy(t, sizeof(t)), sizeof(t), &so) ==
		      -SL_E_MALFORMED, "SUB with a non-zero reserved byte");
		t[7] = 0;
		t[6] = 0x08;
		CHECK(sl_wire_decode_sub(guard_copy(t, sizeof(t)), sizeof(t), &so) ==
		      -SL_E_MALFORMED, "SUB with an undefined flag");
		t[6] = 0;
		t[5] = '!';
		CHECK(sl_wire_decode_sub(guard_copy(t, sizeof(t)), sizeof(t), &so) == -SL_E_NAME,
		      "SUB with channel '!'");
		t[5] = 'c';
		t[4] = 0;
		CHECK(sl_wire_decode_sub(guard_copy(t, sizeof(t)), sizeof(t), &so) == -SL_E_NAME,
		      "SUB with a NUL in the topic");
		t[4] = 't';
		t[3] = 0;	/* channel_len 0 */
		CHECK(sl_wire_decode_sub(guard_copy(t, sizeof(t) - 1), sizeof(t) - 1, &so) ==
		      -SL_E_NAME, "SUB with channel_len 0 -> SL_E_NAME");
		t[3] = 1;
		t[2] = 200;
		CHECK(sl_wire_decode_sub(guard_copy(t, sizeof(t)), sizeof(t), &so) ==
		      -SL_E_MALFORMED, "SUB topic_len beyond the body");
	}
	{
		/* 65-byte topic in a long enough body -> SL_E_NAME */
		uint8_t t[4 + 65 + 1 + 6];

		memset(t, 'a', sizeof(t));
		t[0] = 0;
		t[1] = 0;
		t[2] = 65;
		t[3] = 1;
		memset(t + 70, 0, 6);
		CHECK(sl_wire_decode_sub(guard_copy(t, sizeof(t)), sizeof(t), &so) == -SL_E_NAME,
		      "SUB with a 65-byte topic -> SL_E_NAME");
		t[2] = 64;
		t[3] = 2;
		CHECK(sl_wire_decode_sub(guard_copy(t, sizeof(t)), sizeof(t), &so) == 0,
		      "SUB with a 64-byte topic");
	}
	{
		uint8_t t[] = { 0x00, 0x00, 0x00, 0x01, 'c' };

		CHECK(sl_wire_decode_chan_op(SL_OP_CLS, guard_copy(t, 5), 5, &o) == -SL_E_NAME,
		      "CLS with a channel and no topic -> SL_E_NAME");
		t[3] = 0;
		CHECK(sl_wire_decode_chan_op(SL_OP_CLS, guard_copy(t, 4), 4, &o) == 0,
		      "CLS with no names closes the session");
		CHECK(sl_wire_decode_chan_op(SL_OP_RDY, guard_copy(t, 4), 4, &o) == -SL_E_NAME,
		      "RDY with no names -> SL_E_NAME");
		CHECK(sl_wire_decode_chan_op(SL_OP_PUB, guard_copy(t, 4), 4, &o) == -SL_E_OPCODE,
		      "decode_chan_op refuses opcode PUB");
		CHECK(sl_wire_decode_chan_op(SL_OP_NOP, guard_copy(t, 1), 1, &o) ==
		      -SL_E_MALFORMED, "NOP with a body");
	}
	{
		/* SET_OFFSET body: addr "t"/"c", kind, 7 reserved, value */
		uint8_t t[22] = { 0x00, 0x00, 0x01, 0x01, 't', 'c', SL_OFF_END };

		CHECK(sl_wire_decode_chan_op(SL_OP_SET_OFFSET, guard_copy(t, 22), 22, &o) == 0 &&
		      o.kind == SL_OFF_END && o.value == 0, "hand-made SET_OFFSET");
		t[6] = 4;
		CHECK(sl_wire_decode_chan_op(SL_OP_SET_OFFSET, guard_copy(t, 22), 22, &o) ==
		      -SL_E_MALFORMED, "SET_OFFSET kind 4");
		t[6] = 0;
		t[13] = 1;
		CHECK(sl_wire_decode_chan_op(SL_OP_SET_OFFSET, guard_copy(t, 22), 22, &o) ==
		      -SL_E_MALFORMED, "SET_OFFSET with a non-zero reserved byte");
	}
	{
		uint8_t ok[32] = { SL_OP_FIN };
		uint8_t er[10] = { 0x03, 0xE9, SL_OP_PUB, 0, 0, 0, 0, 2, 'h', 'i' };
		struct sl_wire_ok ko;
		struct sl_wire_err ke;

		CHECK(sl_wire_decode_ok(guard_copy(ok, 32), 32, &ko) == 0, "hand-made OK");
		ok[1] = 1;
		CHECK(sl_wire_decode_ok(guard_copy(ok, 32), 32, &ko) == -SL_E_MALFORMED,
		      "OK with a non-zero reserved byte");
		CHECK(sl_wire_decode_err(guard_copy(er, 10), 10, &ke) == 0 &&
		      ke.code == SL_E_MALFORMED && ke.text_len == 2, "hand-made ERR");
		er[3] = 1;
		CHECK(sl_wire_decode_err(guard_copy(er, 10), 10, &ke) == -SL_E_MALFORMED,
		      "ERR with a non-zero reserved byte");
		er[3] = 0;
		er[7] = 3;
		CHECK(sl_wire_decode_err(guard_copy(er, 10), 10, &ke) == -SL_E_MALFORMED,
		      "ERR text_len overruns");
	}
	{
		/* ERR whose text_len is 129 (and the body really has 129 bytes) */
		static uint8_t er[8 + 129];
		struct sl_wire_err ke;

		memset(er, 'x', sizeof(er));
		memset(er, 0, 8);
		er[7] = 129;
		CHECK(sl_wire_decode_err(guard_copy(er, sizeof(er)), sizeof(er), &ke) ==
		      -SL_E_MALFORMED, "ERR text longer than 128 bytes");
		n = sl_wire_encode_err(buf, sizeof(buf), &h, SL_E_IO, 0, 0, NULL);
		CHECK(n == 40, "ERR with no text");
	}
}

/* The worked example of docs/protocol.md: PUB "hello" to demo/0 and its OK. */
static void
test_doc_example(void)
{
	static const uint8_t pub[] = {
		0x53, 0x4c, 0x01, 0x02, 0x00, 0x00, 0x00, 0x11,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x2a,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01,
		0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88,
		0x00, 0x00, 0x04, 0x00, 0x64, 0x65, 0x6d, 0x6f,
		0x00, 0x00, 0x00, 0x05, 0x68, 0x65, 0x6c, 0x6c, 0x6f,
	};
	static const uint8_t ok[] = {
		0x53, 0x4c, 0x01, 0x80, 0x00, 0x00, 0x00, 0x20,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x2a,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01,
		0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88,
		0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01,
	};
	struct sl_wire_hdr h = { .session = 42, .seq = 1, .cookie = 0x1122334455667788ULL };
	struct sl_wire_ok k = { .req_opcode = SL_OP_PUB, .partition = 0, .count = 1, .id = 1,
				.offset = 0, .aux = 1 };
	const void *m = "hello";
	uint32_t l = 5;
	uint8_t buf[128];
	int n;

	n = sl_wire_encode_pub(buf, sizeof(buf), &h, 0, 0, "demo", 0, 0, 1, &m, &l);
	CHECK(n == (int)sizeof(pub) && memcmp(buf, pub, sizeof(pub)) == 0,
	      "docs/protocol.md PUB example bytes");
	n = sl_wire_encode_ok(buf, sizeof(buf), &h, &k);
	CHECK(n == (int)sizeof(ok) && memcmp(buf, ok, sizeof(ok)) == 0,
	      "docs/protocol.md OK example bytes");
}

/* HELLO's optional token: 8 bytes without, 9 + len with; any other length, a length byte
 * of 0 or past SL_WIRE_TOKEN_MAX is malformed. */
static void
test_hello_token(void)
{
	static const char tok[] = "0123456789abcdef0123456789abcdef";
	uint8_t buf[SL_WIRE_HDR_LEN + 9 + SL_WIRE_TOKEN_MAX + 8], big[SL_WIRE_TOKEN_MAX + 1];
	struct sl_wire_hdr h = { .seq = 1 }, d;
	struct sl_wire_hello x = { .client_info = 3, .window = 16, .token_len = 32,
				   .token = (const uint8_t *)tok }, o;
	const uint8_t *b;
	int n, bad = 0;
	size_t len;

	n = sl_wire_encode_hello(buf, sizeof(buf), &h, &x);
	CHECK(n == SL_WIRE_HDR_LEN + 9 + 32 && buf[SL_WIRE_HDR_LEN + 8] == 32,
	      "HELLO with a 32-byte token: body 41 bytes");
	CHECK(sl_wire_decode_hdr(buf, (size_t)n, &d) == 0 && d.body_len == 41, "its header");
	b = guard_copy(buf + SL_WIRE_HDR_LEN, 41);
	CHECK(sl_wire_decode_hello(b, 41, 0, &o) == 0 && o.client_info == 3 && o.window == 16 &&
	      o.token_len == 32 && memcmp(o.token, tok, 32) == 0, "HELLO token round trip");
	/* every other body length of that frame is malformed */
	for (len = 0; len < 41 + 8; len++) {
		if (len == 8 || len == 41)
			continue;
		b = guard_copy(buf + SL_WIRE_HDR_LEN, len);
		bad += sl_wire_decode_hello(b, len, 0, &o) != -SL_E_MALFORMED;
	}
	CHECK(bad == 0, "HELLO bodies of 0..48 bytes but 8 and 41 are malformed (%d not)", bad);
	b = guard_copy(buf + SL_WIRE_HDR_LEN, 8);
	CHECK(sl_wire_decode_hello(b, 8, 0, &o) == 0 && o.token_len == 0 && o.token == NULL,
	      "the first 8 bytes alone: a HELLO without a token");
	buf[SL_WIRE_HDR_LEN + 8] = 0;
	b = guard_copy(buf + SL_WIRE_HDR_LEN, 9);
	CHECK(sl_wire_decode_hello(b, 9, 0, &o) == -SL_E_MALFORMED, "token length 0 is malformed");
	x.token_len = SL_WIRE_TOKEN_MAX;
	memset(big, 'k', sizeof(big));
	x.token = big;
	n = sl_wire_encode_hello(buf, sizeof(buf), &h, &x);
	b = guard_copy(buf + SL_WIRE_HDR_LEN, (size_t)n - SL_WIRE_HDR_LEN);
	CHECK(n > 0 && sl_wire_decode_hello(b, (size_t)n - SL_WIRE_HDR_LEN, 0, &o) == 0 &&
	      o.token_len == SL_WIRE_TOKEN_MAX, "a %d-byte token (the most)", SL_WIRE_TOKEN_MAX);
	buf[SL_WIRE_HDR_LEN + 8] = SL_WIRE_TOKEN_MAX + 1;
	memcpy(buf + SL_WIRE_HDR_LEN + 9 + SL_WIRE_TOKEN_MAX, "k", 1);
	b = guard_copy(buf + SL_WIRE_HDR_LEN, 9 + SL_WIRE_TOKEN_MAX + 1);
	CHECK(sl_wire_decode_hello(b, 9 + SL_WIRE_TOKEN_MAX + 1, 0, &o) == -SL_E_MALFORMED,
	      "a token longer than %d bytes is malformed", SL_WIRE_TOKEN_MAX);
	x.token_len = 0;
	x.token = NULL;
	CHECK(sl_wire_encode_hello(buf, sizeof(buf), &h, &x) == SL_WIRE_HDR_LEN + 8,
	      "without a token the encoder writes the 8-byte body of before");
	/* the producer id (header flag SL_WIRE_F_PRODUCER): 8 more bytes at the end */
	x.producer = 0x0102030405060708ull;
	n = sl_wire_encode_hello(buf, sizeof(buf), &h, &x);
	CHECK(n == SL_WIRE_HDR_LEN + 16 && sl_wire_decode_hdr(buf, (size_t)n, &d) == 0 &&
		      (d.flags & SL_WIRE_F_PRODUCER) && buf[SL_WIRE_HDR_LEN + 8] == 1 &&
		      buf[SL_WIRE_HDR_LEN + 15] == 8,
	      "HELLO with a producer id: flag 0x0004, body 16, the id big-endian at 8");
	b = guard_copy(buf + SL_WIRE_HDR_LEN, 16);
	CHECK(sl_wire_decode_hello(b, 16, SL_WIRE_F_PRODUCER, &o) == 0 &&
		      o.producer == x.producer && o.token_len == 0 && o.window == 16,
	      "producer id round trip");
	CHECK(sl_wire_decode_hello(b, 16, 0, &o) == -SL_E_MALFORMED,
	      "the same body without the flag is malformed (an old broker refuses it)");
	CHECK(sl_wire_decode_hello(b, 8, SL_WIRE_F_PRODUCER, &o) == -SL_E_MALFORMED,
	      "the flag without the id is malformed");
	x.token_len = 32;
	x.token = (const uint8_t *)tok;
	n = sl_wire_encode_hello(buf, sizeof(buf), &h, &x);
	b = guard_copy(buf + SL_WIRE_HDR_LEN, 49);
	CHECK(n == SL_WIRE_HDR_LEN + 49 &&
		      sl_wire_decode_hello(b, 49, SL_WIRE_F_PRODUCER, &o) == 0 &&
		      o.token_len == 32 && memcmp(o.token, tok, 32) == 0 &&
		      o.producer == x.producer, "token and producer id: body 9 + 32 + 8");
	memset(buf + SL_WIRE_HDR_LEN + 41, 0, 8);
	b = guard_copy(buf + SL_WIRE_HDR_LEN, 49);
	CHECK(sl_wire_decode_hello(b, 49, SL_WIRE_F_PRODUCER, &o) == -SL_E_MALFORMED,
	      "producer id 0 is malformed");
	x.producer = 0;
	x.token_len = 0;
	x.token = NULL;
	h.flags = SL_WIRE_F_PRODUCER;
	CHECK(sl_wire_encode_hello(buf, sizeof(buf), &h, &x) == SL_WIRE_HDR_LEN + 8 &&
		      !(h.flags & SL_WIRE_F_PRODUCER), "no producer: no flag, 8 bytes");
}

/* METADATA (0x0C): the bytes of docs/protocol.md, exact length, name rules. */
static void
test_metadata(void)
{
	static const uint8_t doc[] = {
		0x53, 0x4c, 0x01, 0x0c, 0x00, 0x00, 0x00, 0x07, 0, 0, 0, 0, 0, 0, 0, 0,
		0, 0, 0, 0, 0, 0, 0, 0, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88,
		0x00, 0x00, 0x04, 'd', 'e', 'm', 'o',
	};
	struct sl_wire_hdr h = {.cookie = 0x1122334455667788ULL}, d;
	struct sl_wire_metareq m;
	uint8_t buf[128], body[8];
	int n, rc;

	n = sl_wire_encode_metareq(buf, sizeof(buf), &h, 0, "demo");
	CHECK(n == (int)sizeof(doc) && memcmp(buf, doc, sizeof(doc)) == 0,
	      "METADATA demo from partition 0: the documented 39 bytes (%d)", n);
	rc = sl_wire_decode_hdr(guard_copy(buf, (size_t)n), (size_t)n, &d);
	rc |= sl_wire_decode_metareq(guard_copy(buf + SL_WIRE_HDR_LEN, 7), 7, &m);
	CHECK(rc == 0 && d.opcode == SL_OP_METADATA && m.first_partition == 0 &&
		      m.topic_len == 4 && memcmp(m.topic, "demo", 4) == 0,
	      "METADATA decodes back");
	CHECK(strcmp(sl_wire_op_name(SL_OP_METADATA), "METADATA") == 0 &&
		      strcmp(sl_wire_op_name(SL_OP_META), "META") == 0, "op names METADATA, META");
	/* one byte short or too many; a bad name; an empty topic */
	CHECK(sl_wire_decode_metareq(guard_copy(buf + SL_WIRE_HDR_LEN, 6), 6, &m) ==
		      -SL_E_MALFORMED, "METADATA one byte short: MALFORMED");
	memcpy(body, buf + SL_WIRE_HDR_LEN, 7);
	body[7] = 'x';
	CHECK(sl_wire_decode_metareq(guard_copy(body, 8), 8, &m) == -SL_E_MALFORMED,
	      "METADATA one byte too many: MALFORMED");
	CHECK(sl_wire_decode_metareq(guard_copy(body, 2), 2, &m) == -SL_E_MALFORMED,
	      "METADATA of 2 bytes: MALFORMED");
	body[2] = 0;
	CHECK(sl_wire_decode_metareq(guard_copy(body, 3), 3, &m) == -SL_E_NAME,
	      "METADATA with an empty topic: NAME");
	body[2] = 4;
	body[3] = '.';
	CHECK(sl_wire_decode_metareq(guard_copy(body, 7), 7, &m) == -SL_E_NAME,
	      "METADATA with a topic starting with '.': NAME");
	CHECK(sl_wire_encode_metareq(buf, sizeof(buf), &h, 0, "a/b") == -SL_E_NAME &&
		      sl_wire_encode_metareq(buf, 38, &h, 0, "demo") == -SL_E_TOO_BIG,
	      "METADATA encoder: bad name, buffer too small");
}

/* META (0x84): round trip of the documented example, paging limits, strictness. */
static void
test_meta(void)
{
	struct sl_wire_meta_entry e[SL_WIRE_META_MAX], g;
	struct sl_wire_meta m = {.nparts = 3, .first_partition = 1, .count = 2}, o;
	struct sl_wire_hdr h = {.seq = 9, .cookie = 7}, d;
	static uint8_t buf[2048];
	uint8_t *body = buf + SL_WIRE_HDR_LEN;
	const uint8_t ip12[4] = {10, 0, 0, 12};
	int n, rc, i;

	memset(e, 0, sizeof(e));
	e[0] = (struct sl_wire_meta_entry){.partition = 1, .flags = SL_WIRE_META_F_REPLICA,
					   .leader = 2, .leader_port = 5150, .epoch = 3};
	memcpy(&e[0].leader_ip, ip12, 4);
	e[1] = e[0];
	e[1].partition = 2;
	e[1].flags = SL_WIRE_META_F_ALL;
	n = sl_wire_encode_meta(buf, sizeof(buf), &h, &m, e);
	CHECK(n == SL_WIRE_HDR_LEN + 8 + 40, "META of 2 entries: 80 bytes (%d)", n);
	CHECK(body[0] == 0 && body[1] == 3 && body[3] == 1 && body[5] == 2 &&
		      body[8 + 1] == 1 && body[8 + 3] == 4 && body[8 + 7] == 2 &&
		      memcmp(body + 16, ip12, 4) == 0 && body[20] == 0x14 && body[21] == 0x1E &&
		      body[8 + 19] == 3,
	      "META bytes: nparts, first, count, entry fields big-endian, ip as on the wire");
	rc = sl_wire_decode_hdr(guard_copy(buf, (size_t)n), (size_t)n, &d);
	rc |= sl_wire_decode_meta(guard_copy(body, 48), 48, 0, &o);
	CHECK(rc == 0 && d.opcode == SL_OP_META && o.nparts == 3 && o.first_partition == 1 &&
		      o.count == 2, "META decodes back");
	sl_wire_meta_get(&o, 1, &g);
	CHECK(g.partition == 2 && g.flags == SL_WIRE_META_F_ALL && g.leader == 2 &&
		      g.leader_ip == e[0].leader_ip && g.leader_port == 5150 && g.epoch == 3,
	      "META entry 1 decodes to its values");
	CHECK(sl_wire_decode_meta(guard_copy(body, 47), 47, 0, &o) == -SL_E_MALFORMED &&
		      sl_wire_decode_meta(guard_copy(body, 7), 7, 0, &o) == -SL_E_MALFORMED,
	      "META one byte short, or shorter than its header: MALFORMED");
	body[8 + 15] = 1;
	CHECK(sl_wire_decode_meta(guard_copy(body, 48), 48, 0, &o) == -SL_E_MALFORMED,
	      "META entry reserved byte not 0: MALFORMED");
	body[8 + 15] = 0;
	body[8 + 3] = 0x08;
	CHECK(sl_wire_decode_meta(guard_copy(body, 48), 48, 0, &o) == -SL_E_MALFORMED,
	      "META unknown entry flag: MALFORMED");
	body[8 + 3] = 0x04;
	body[8 + 1] = 0;
	CHECK(sl_wire_decode_meta(guard_copy(body, 48), 48, 0, &o) == -SL_E_MALFORMED,
	      "META entry numbered out of sequence: MALFORMED");
	body[8 + 1] = 1;
	body[1] = 2;
	CHECK(sl_wire_decode_meta(guard_copy(body, 48), 48, 0, &o) == -SL_E_MALFORMED,
	      "META entries past the partition count: MALFORMED");
	body[1] = 3;
	body[7] = 1;
	CHECK(sl_wire_decode_meta(guard_copy(body, 48), 48, 0, &o) == -SL_E_MALFORMED,
	      "META header reserved not 0: MALFORMED");
	/* an empty page, and the largest one */
	m.count = 0;
	m.first_partition = 3;
	n = sl_wire_encode_meta(buf, sizeof(buf), &h, &m, NULL);
	CHECK(n == SL_WIRE_HDR_LEN + 8 && sl_wire_decode_meta(guard_copy(body, 8), 8, 0, &o) == 0 &&
		      o.count == 0, "META with no entry (first == nparts)");
	m.nparts = 1000;
	m.first_partition = 100;
	m.count = SL_WIRE_META_MAX;
	for (i = 0; i < SL_WIRE_META_MAX; i++) {
		e[i] = e[0];
		e[i].partition = (uint16_t)(100 + i);
	}
	n = sl_wire_encode_meta(buf, sizeof(buf), &h, &m, e);
	CHECK(n > 0 && n <= 1400 && sl_wire_decode_meta(guard_copy(body, (size_t)n - 32),
							 (size_t)n - 32, 0, &o) == 0 &&
		      o.count == SL_WIRE_META_MAX,
	      "META of %d entries fits a 1400-byte datagram (%d)", SL_WIRE_META_MAX, n);
	m.count = SL_WIRE_META_MAX + 1;
	CHECK(sl_wire_encode_meta(buf, sizeof(buf), &h, &m, e) == -SL_E_INVAL,
	      "META encoder refuses more than %d entries", SL_WIRE_META_MAX);
	m.count = 2;
	e[1].partition = 7;
	CHECK(sl_wire_encode_meta(buf, sizeof(buf), &h, &m, e) == -SL_E_INVAL,
	      "META encoder refuses entries out of sequence");
}

/* META v2 (header flag SL_WIRE_F_META2): max_record in entry bytes 14..15, the documented
 * example; a v1 decoder still refuses it; v1 stays as before. */
static void
test_meta_v2(void)
{
	/* the documented META v2: topic of 2 partitions, first 0, one entry: partition 0,
	 * LEADER|WRITABLE, node 1 at 10.0.0.11:5150, max_record 1236, epoch 2 */
	static const uint8_t doc[] = {
		0x53, 0x4c, 0x01, 0x84, 0x00, 0x10, 0x00, 0x1c, 0, 0, 0, 0, 0, 0, 0, 0,
		0, 0, 0, 0, 0, 0, 0, 0, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88,
		0x00, 0x02, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00,
		0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00, 0x01, 0x0a, 0x00, 0x00, 0x0b,
		0x14, 0x1e, 0x04, 0xd4, 0x00, 0x00, 0x00, 0x02,
	};
	static const uint8_t req[] = {
		0x53, 0x4c, 0x01, 0x0c, 0x00, 0x10, 0x00, 0x07, 0, 0, 0, 0, 0, 0, 0, 0,
		0, 0, 0, 0, 0, 0, 0, 0, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88,
		0x00, 0x00, 0x04, 'd', 'e', 'm', 'o',
	};
	const uint8_t ip11[4] = {10, 0, 0, 11};
	struct sl_wire_meta_entry e = {.partition = 0, .flags = 3, .leader = 1,
				       .leader_port = 5150, .max_record = 1236, .epoch = 2}, g;
	struct sl_wire_meta m = {.nparts = 2, .first_partition = 0, .count = 1, .v2 = 1}, o;
	struct sl_wire_hdr h = {.cookie = 0x1122334455667788ULL}, d;
	static uint8_t buf[256];
	uint8_t *body = buf + SL_WIRE_HDR_LEN;
	int n, rc;

	h.flags = SL_WIRE_F_META2;
	n = sl_wire_encode_metareq(buf, sizeof(buf), &h, 0, "demo");
	CHECK(n == (int)sizeof(req) && memcmp(buf, req, sizeof(req)) == 0,
	      "METADATA asking for META v2: the documented 39 bytes, header flags 0x0010");
	rc = sl_wire_decode_hdr(guard_copy(buf, (size_t)n), (size_t)n, &d);
	CHECK(rc == 0 && d.flags == SL_WIRE_F_META2, "METADATA v2 request header decodes");
	memcpy(&e.leader_ip, ip11, 4);
	h.flags = 0;
	n = sl_wire_encode_meta(buf, sizeof(buf), &h, &m, &e);
	CHECK(n == (int)sizeof(doc) && memcmp(buf, doc, sizeof(doc)) == 0,
	      "META v2 of one entry: the documented 60 bytes (%d)", n);
	rc = sl_wire_decode_hdr(guard_copy(buf, (size_t)n), (size_t)n, &d);
	rc |= sl_wire_decode_meta(guard_copy(body, 28), 28, d.flags, &o);
	sl_wire_meta_get(&o, 0, &g);
	CHECK(rc == 0 && o.v2 && g.max_record == 1236 && g.flags == 3 && g.epoch == 2 &&
		      g.leader_port == 5150 && g.leader_ip == e.leader_ip,
	      "META v2 decodes back with max_record 1236");
	CHECK(sl_wire_decode_meta(guard_copy(body, 28), 28, 0, &o) == -SL_E_MALFORMED,
	      "META v2 given to a v1 decoder (no header flag): MALFORMED, as old clients do");
	body[8 + 14] = 0xff;
	body[8 + 15] = 0xff;
	CHECK(sl_wire_decode_meta(guard_copy(body, 28), 28, SL_WIRE_F_META2, &o) == 0 &&
		      (sl_wire_meta_get(&o, 0, &g), g.max_record == 0xffff),
	      "META v2: any max_record is decoded (0xffff)");
	body[8 + 3] = 0x08;
	CHECK(sl_wire_decode_meta(guard_copy(body, 28), 28, SL_WIRE_F_META2, &o) ==
		      -SL_E_MALFORMED, "META v2 unknown entry flag: MALFORMED");
	body[8 + 3] = 0x03;
	body[7] = 1;
	CHECK(sl_wire_decode_meta(guard_copy(body, 28), 28, SL_WIRE_F_META2, &o) ==
		      -SL_E_MALFORMED, "META v2 header reserved not 0: MALFORMED");
	CHECK(sl_wire_decode_meta(guard_copy(body, 27), 27, SL_WIRE_F_META2, &o) ==
		      -SL_E_MALFORMED, "META v2 one byte short: MALFORMED");
	/* v1: the flag is cleared even if the caller left it set; max_record must be 0 */
	m.v2 = 0;
	h.flags = SL_WIRE_F_META2;
	CHECK(sl_wire_encode_meta(buf, sizeof(buf), &h, &m, &e) == -SL_E_INVAL,
	      "META v1 encoder refuses a max_record it cannot carry");
	e.max_record = 0;
	n = sl_wire_encode_meta(buf, sizeof(buf), &h, &m, &e);
	rc = sl_wire_decode_hdr(guard_copy(buf, (size_t)n), (size_t)n, &d);
	CHECK(n == (int)sizeof(doc) && rc == 0 && d.flags == 0 && body[8 + 14] == 0 &&
		      body[8 + 15] == 0 &&
		      sl_wire_decode_meta(guard_copy(body, 28), 28, 0, &o) == 0,
	      "META v1: no header flag, reserved bytes 0, decodes as before");
}

/* Bundles (several frames in a datagram): the split's framing rules. */
static void
test_bundle(void)
{
	struct sl_wire_hdr h = {.session = 7, .flags = SL_WIRE_F_BUNDLE};
	const void *msg[1] = {"hello"};
	const uint32_t mlen[1] = {5};
	uint8_t buf[2 * SL_WIRE_DGRAM_MAX_JUMBO];
	uint16_t off[SL_WIRE_BUNDLE_MAX], len[SL_WIRE_BUNDLE_MAX];
	struct sl_wire_hdr d;
	size_t used = 0;
	int n, i, a, ok = 1;

	for (i = 0; i < 3; i++) {
		h.seq = (uint64_t)i + 1;
		n = sl_wire_encode_pub(buf + used, sizeof(buf) - used, &h, 0, 0, "t", 0, 0,
				       1, msg, mlen);
		CHECK(n > 0, "PUB encoded");
		used += (size_t)n;
	}
	a = (int)(used / 3);
	n = sl_wire_bundle_split(buf, used, off, len, SL_WIRE_BUNDLE_MAX);
	CHECK(n == 3 && off[0] == 0 && off[1] == a && off[2] == 2 * a && len[0] == a &&
	      len[2] == a, "three PUBs: three frames, back to back");
	for (i = 0; i < 3 && n == 3; i++)
		ok &= sl_wire_decode_hdr(buf + off[i], len[i], &d) == 0 && d.seq == (uint64_t)i + 1;
	CHECK(ok, "each frame decodes alone, in order");
	CHECK(sl_wire_is_bundle(buf, used) && !sl_wire_is_bundle(buf, (size_t)a) &&
	      !sl_wire_is_bundle(buf, 10) && !sl_wire_is_bundle(NULL, used),
	      "is_bundle: three flagged frames are, a lone one, a runt and NULL are not");
	CHECK(sl_wire_bundle_split(buf, (size_t)a, off, len, 4) == 1 && len[0] == a,
	      "a flagged frame alone: one frame");
	CHECK(sl_wire_bundle_split(buf, used, off, len, 2) == -SL_E_MALFORMED,
	      "more frames than max: malformed");
	CHECK(sl_wire_bundle_split(buf, used - 1, off, len, 4) == -SL_E_MALFORMED,
	      "the last frame runs past the datagram: malformed");
	memset(buf + used, 0, 3);
	CHECK(sl_wire_bundle_split(buf, used + 3, off, len, 4) == -SL_E_MALFORMED,
	      "bytes after the last frame, fewer than a header: malformed");
	buf[a + 5] &= (uint8_t)~SL_WIRE_F_BUNDLE;
	CHECK(sl_wire_bundle_split(buf, used, off, len, 4) == -SL_E_MALFORMED,
	      "a later frame without the flag: malformed");
	buf[a + 5] |= SL_WIRE_F_BUNDLE;
	buf[2 * a] = 0;
	CHECK(sl_wire_bundle_split(buf, used, off, len, 4) == -SL_E_MALFORMED,
	      "a later frame without the magic: malformed");
	buf[2 * a] = 0x53;
	buf[5] &= (uint8_t)~SL_WIRE_F_BUNDLE;
	CHECK(!sl_wire_is_bundle(buf, used), "first frame without the flag: not a bundle");
	CHECK(sl_wire_bundle_split(buf, used, off, len, 4) == 1 && len[0] == used,
	      "first frame without the flag: the datagram is one frame (decode_hdr refuses it)");
	CHECK(sl_wire_bundle_split(buf, 10, off, len, 4) == 1 && len[0] == 10,
	      "a runt: one frame (decode_hdr refuses it)");
	CHECK(sl_wire_bundle_split(NULL, 10, off, len, 4) == -SL_E_MALFORMED, "NULL: malformed");
}

int
main(void)
{
	if (guard_init() != 0) {
		perror("guard page");
		return 2;
	}
	test_names();
	test_op_names();
	test_hdr();
	test_roundtrip();
	test_truncation();
	test_trailing();
	test_too_small();
	test_mpub();
	test_pub_limits();
	test_fin();
	test_addresses();
	test_doc_example();
	test_hello_token();
	test_metadata();
	test_meta();
	test_meta_v2();
	test_bundle();
	return check_report();
}
