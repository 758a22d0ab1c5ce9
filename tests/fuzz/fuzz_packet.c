/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * libFuzzer target for the receive path: Ethernet/IPv4/UDP parsing (net.c) and the
 * wire protocol codec (wire.c). One input is used three ways:
 *  1. as an Ethernet frame: sl_net_parse(), then, for SL_NET_UDP, the header and body
 *     decoders on the UDP payload (copied to a buffer of exactly its size, so that
 *     AddressSanitizer sees any read past the payload);
 *  2. as a UDP payload directly (the codec without the net layer), and as a bundle of
 *     frames (each then a payload); a parsed UDP frame is also rewrapped as a bundle's
 *     frame is (net.c) and must parse again the same;
 *  3. as data[0] = decoder selector, data[1..] = a body (body decoders without a valid
 *     header in front, which the fuzzer would otherwise rarely build);
 *  4. as a replica link payload (rlink.c: envelope, tag, replay window).
 * Every MPUB_PART that decodes also goes into a reassembly pool (mpart.c) kept across
 * inputs, keyed by its header's session and seq: a complete MPUB is read to the end.
 * Whatever decodes is encoded again: the encoding must be byte-identical to the input
 * (the format is canonical: exact lengths, zero reserved bytes) and must decode to the
 * same values. Any mismatch abort()s.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "mpart.h"
#include "net.h"
#include "rlink.h"
#include "wire.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FRAME_MAX (SL_WIRE_HDR_LEN + 65535)

union body_out {
	struct sl_wire_hello hello;
	struct sl_wire_welcome welcome;
	struct sl_wire_pub pub;
	struct sl_wire_sub sub;
	struct sl_wire_chan_op op;
	struct sl_wire_ok ok;
	struct sl_wire_err err;
	struct sl_wire_msg msg;
	struct sl_wire_metareq mreq;
	struct sl_wire_meta meta;
	struct sl_wire_mpart mpart;
};

static const uint8_t body_ops[] = {
	SL_OP_HELLO, SL_OP_PUB, SL_OP_MPUB, SL_OP_SUB, SL_OP_RDY, SL_OP_FIN, SL_OP_REQ,
	SL_OP_TOUCH, SL_OP_CLS, SL_OP_NOP, SL_OP_SET_OFFSET, SL_OP_OK, SL_OP_ERR, SL_OP_MSG,
	SL_OP_WELCOME, SL_OP_METADATA, SL_OP_META, SL_OP_MPUB_PART,
};

static uint8_t enc[FRAME_MAX];
static volatile uint64_t sink;

/* hdr_flags: the header's (HELLO's body depends on SL_WIRE_F_PRODUCER) */
static int
decode_body(uint8_t opcode, uint16_t hdr_flags, const uint8_t *body, size_t len,
	    union body_out *o)
{
	memset(o, 0, sizeof(*o));
	switch (opcode) {
	case SL_OP_HELLO:
		return sl_wire_decode_hello(body, len, hdr_flags, &o->hello);
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
	case SL_OP_METADATA:
		return sl_wire_decode_metareq(body, len, &o->mreq);
	case SL_OP_META:
		return sl_wire_decode_meta(body, len, hdr_flags, &o->meta);
	case SL_OP_MPUB_PART:
		return sl_wire_decode_mpart(body, len, &o->mpart);
	default:
		return sl_wire_decode_chan_op(opcode, body, len, &o->op);
	}
}

static struct sl_mpart pool;
static int pool_ready;
static uint64_t fake_ns;

/* A decoded fragment into the pool, as a worker does (session and seq from h). */
static void
reassemble(const struct sl_wire_hdr *h, const struct sl_wire_mpart *f)
{
	struct sl_mpart_conf c = {0};
	struct sl_wire_pub p;
	const uint8_t *d;
	uint32_t handle, pos = 0, len, n = 0;
	int rc;

	if (!pool_ready && sl_mpart_init(&pool, &c) == 0)
		pool_ready = 1;
	fake_ns += 1000000;	/* 1 ms per fragment: the pool's expiry runs too */
	rc = sl_mpart_add(&pool, h->session & 3, h->seq & 7, (uint32_t)h->cookie & 1, f,
			  fake_ns, &p, &handle);
	if (rc == SL_MPART_DONE) {
		while (sl_wire_mpub_next(&p, &pos, &d, &len) == 1) {
			sink += len > 0 ? d[len - 1] : 0;
			n++;
		}
		if (n != p.count || p.count != f->count || p.msgs_len != f->total_len)
			abort();
		sl_mpart_release(&pool, handle);
	} else if (rc != SL_MPART_MORE && rc != SL_MPART_DUP && rc != -SL_E_FULL &&
		   rc != -SL_E_MALFORMED) {
		abort();
	}
	if (pool.nused > SL_MPART_SLOTS)
		abort();
}

/* Touch every byte a decoded body points at, as the broker would. */
static void
consume(uint8_t opcode, const union body_out *o)
{
	const uint8_t *d;
	uint64_t acc = 0;
	uint32_t pos = 0, len, i, n = 0;

	switch (opcode) {
	case SL_OP_MPUB_PART:
		for (i = 0; i < o->mpart.chunk_len; i++)
			acc += o->mpart.chunk[i];
		break;
	case SL_OP_PUB:
	case SL_OP_MPUB:
		while (sl_wire_mpub_next(&o->pub, &pos, &d, &len) == 1) {
			for (i = 0; i < len; i++)
				acc += d[i];
			n++;
		}
		if (n != o->pub.count)
			abort();
		break;
	case SL_OP_FIN:
		for (i = 0; i < o->op.count; i++)
			acc ^= sl_wire_fin_id(&o->op, i);
		if (o->op.count > 0 && o->op.msg_id != sl_wire_fin_id(&o->op, 0))
			abort();
		break;
	case SL_OP_MSG:
		for (i = 0; i < o->msg.len; i++)
			acc += o->msg.data[i];
		break;
	case SL_OP_ERR:
		for (i = 0; i < o->err.text_len; i++)
			acc += (uint8_t)o->err.text[i];
		break;
	case SL_OP_META:
		for (i = 0; i < o->meta.count; i++) {
			struct sl_wire_meta_entry e;

			sl_wire_meta_get(&o->meta, (uint16_t)i, &e);
			if (e.partition != (uint16_t)(o->meta.first_partition + i))
				abort();
			acc += e.leader ^ e.leader_ip ^ e.epoch ^ e.leader_port ^ e.flags ^
			       e.max_record;
		}
		break;
	default:
		break;
	}
	sink += acc;
}

static int
same_addr(const struct sl_wire_addr *a, const struct sl_wire_addr *b)
{
	return a->partition == b->partition && a->topic_len == b->topic_len &&
	       a->channel_len == b->channel_len &&
	       (a->topic_len == 0 || memcmp(a->topic, b->topic, a->topic_len) == 0) &&
	       (a->channel_len == 0 || memcmp(a->channel, b->channel, a->channel_len) == 0);
}

static int
same_pub(const struct sl_wire_pub *a, const struct sl_wire_pub *b)
{
	const uint8_t *da, *db;
	uint32_t pa = 0, pb = 0, la, lb;
	int ra, rb;

	if (a->partition != b->partition || a->topic_len != b->topic_len ||
	    a->flags != b->flags || a->trace_id != b->trace_id || a->count != b->count ||
	    a->msg_len != b->msg_len || a->msgs_len != b->msgs_len ||
	    memcmp(a->topic, b->topic, a->topic_len) != 0)
		return 0;
	for (;;) {
		ra = sl_wire_mpub_next(a, &pa, &da, &la);
		rb = sl_wire_mpub_next(b, &pb, &db, &lb);
		if (ra != rb)
			return 0;
		if (ra == 0)
			return 1;
		if (la != lb || (la > 0 && memcmp(da, db, la) != 0))
			return 0;
	}
}

static int
same_body(uint8_t opcode, const union body_out *a, const union body_out *b)
{
	uint32_t i;

	switch (opcode) {
	case SL_OP_HELLO:
		return a->hello.client_info == b->hello.client_info &&
		       a->hello.window == b->hello.window &&
		       a->hello.producer == b->hello.producer &&
		       a->hello.token_len == b->hello.token_len &&
		       (a->hello.token_len == 0 ||
			memcmp(a->hello.token, b->hello.token, a->hello.token_len) == 0);
	case SL_OP_WELCOME:
		return memcmp(&a->welcome, &b->welcome, sizeof(a->welcome)) == 0;
	case SL_OP_PUB:
	case SL_OP_MPUB:
		return same_pub(&a->pub, &b->pub);
	case SL_OP_MPUB_PART:
		return a->mpart.partition == b->mpart.partition &&
		       a->mpart.topic_len == b->mpart.topic_len &&
		       a->mpart.flags == b->mpart.flags && a->mpart.trace_id == b->mpart.trace_id &&
		       a->mpart.index == b->mpart.index && a->mpart.nfrag == b->mpart.nfrag &&
		       a->mpart.count == b->mpart.count &&
		       a->mpart.total_len == b->mpart.total_len && a->mpart.off == b->mpart.off &&
		       a->mpart.chunk_len == b->mpart.chunk_len &&
		       memcmp(a->mpart.topic, b->mpart.topic, a->mpart.topic_len) == 0 &&
		       memcmp(a->mpart.chunk, b->mpart.chunk, a->mpart.chunk_len) == 0;
	case SL_OP_SUB:
		return same_addr(&a->sub.addr, &b->sub.addr) && a->sub.flags == b->sub.flags &&
		       a->sub.rdy == b->sub.rdy;
	case SL_OP_OK:
		return a->ok.req_opcode == b->ok.req_opcode &&
		       a->ok.partition == b->ok.partition && a->ok.count == b->ok.count &&
		       a->ok.id == b->ok.id && a->ok.offset == b->ok.offset &&
		       a->ok.aux == b->ok.aux;
	case SL_OP_ERR:
		return a->err.code == b->err.code && a->err.req_opcode == b->err.req_opcode &&
		       a->err.partition == b->err.partition &&
		       a->err.text_len == b->err.text_len &&
		       memcmp(a->err.text, b->err.text, a->err.text_len) == 0;
	case SL_OP_MSG:
		return a->msg.sub_id == b->msg.sub_id && a->msg.partition == b->msg.partition &&
		       a->msg.attempts == b->msg.attempts && a->msg.len == b->msg.len &&
		       a->msg.msg_id == b->msg.msg_id && a->msg.offset == b->msg.offset &&
		       a->msg.timestamp_ns == b->msg.timestamp_ns &&
		       a->msg.trace_id == b->msg.trace_id &&
		       memcmp(a->msg.data, b->msg.data, a->msg.len) == 0;
	case SL_OP_METADATA:
		return a->mreq.first_partition == b->mreq.first_partition &&
		       a->mreq.topic_len == b->mreq.topic_len &&
		       memcmp(a->mreq.topic, b->mreq.topic, a->mreq.topic_len) == 0;
	case SL_OP_META:
		return a->meta.nparts == b->meta.nparts && a->meta.v2 == b->meta.v2 &&
		       a->meta.first_partition == b->meta.first_partition &&
		       a->meta.count == b->meta.count &&
		       memcmp(a->meta.entries, b->meta.entries,
			      (size_t)a->meta.count * SL_WIRE_META_ENTRY_LEN) == 0;
	default:
		if (!same_addr(&a->op.addr, &b->op.addr) || a->op.count != b->op.count ||
		    a->op.msg_id != b->op.msg_id || a->op.delay_ms != b->op.delay_ms ||
		    a->op.kind != b->op.kind || a->op.value != b->op.value)
			return 0;
		if (opcode == SL_OP_FIN)
			for (i = 0; i < a->op.count; i++)
				if (sl_wire_fin_id(&a->op, i) != sl_wire_fin_id(&b->op, i))
					return 0;
		return 1;
	}
}

/*
 * Encode a decoded body again into enc[]. Returns the frame length, 0 when the value
 * cannot be given to the encoder (ERR text with a NUL byte), or a negative error.
 */
static int
reencode(uint8_t opcode, struct sl_wire_hdr *h, const union body_out *o)
{
	static const void *msgs[SL_WIRE_MPUB_MAX];
	static uint32_t lens[SL_WIRE_MPUB_MAX];
	static uint64_t ids[SL_WIRE_FIN_MAX];
	static struct sl_wire_meta_entry ments[SL_WIRE_META_MAX];
	char name[SL_WIRE_NAME_MAX + 1];
	char text[SL_WIRE_ERR_TEXT_MAX + 1];
	const uint8_t *d;
	uint32_t pos = 0, len, i = 0;

	switch (opcode) {
	case SL_OP_HELLO:
		return sl_wire_encode_hello(enc, sizeof(enc), h, &o->hello);
	case SL_OP_WELCOME:
		return sl_wire_encode_welcome(enc, sizeof(enc), h, &o->welcome);
	case SL_OP_PUB:
	case SL_OP_MPUB:
		while (i < SL_WIRE_MPUB_MAX && sl_wire_mpub_next(&o->pub, &pos, &d, &len) == 1) {
			msgs[i] = d;
			lens[i] = len;
			i++;
		}
		memcpy(name, o->pub.topic, o->pub.topic_len);
		name[o->pub.topic_len] = '\0';
		return sl_wire_encode_pub(enc, sizeof(enc), h, opcode == SL_OP_MPUB,
					  o->pub.partition, name, o->pub.flags, o->pub.trace_id,
					  (uint16_t)i, msgs, lens);
	case SL_OP_MPUB_PART:
		return sl_wire_encode_mpart(enc, sizeof(enc), h, &o->mpart);
	case SL_OP_SUB:
		return sl_wire_encode_sub(enc, sizeof(enc), h, &o->sub);
	case SL_OP_OK:
		return sl_wire_encode_ok(enc, sizeof(enc), h, &o->ok);
	case SL_OP_ERR:
		if (o->err.text_len > 0 && memchr(o->err.text, 0, o->err.text_len) != NULL)
			return 0;
		memcpy(text, o->err.text, o->err.text_len);
		text[o->err.text_len] = '\0';
		return sl_wire_encode_err(enc, sizeof(enc), h, o->err.code, o->err.req_opcode,
					  o->err.partition, text);
	case SL_OP_MSG:
		return sl_wire_encode_msg(enc, sizeof(enc), h, &o->msg);
	case SL_OP_METADATA:
		memcpy(name, o->mreq.topic, o->mreq.topic_len);
		name[o->mreq.topic_len] = '\0';
		return sl_wire_encode_metareq(enc, sizeof(enc), h, o->mreq.first_partition, name);
	case SL_OP_META:
		for (i = 0; i < o->meta.count; i++)
			sl_wire_meta_get(&o->meta, (uint16_t)i, &ments[i]);
		return sl_wire_encode_meta(enc, sizeof(enc), h, &o->meta, ments);
	case SL_OP_FIN:
		for (i = 0; i < o->op.count && i < SL_WIRE_FIN_MAX; i++)
			ids[i] = sl_wire_fin_id(&o->op, i);
		return sl_wire_encode_chan_op(enc, sizeof(enc), h, opcode, &o->op, ids);
	default:
		return sl_wire_encode_chan_op(enc, sizeof(enc), h, opcode, &o->op, NULL);
	}
}

/*
 * A body that decoded: consume it, encode it again and check the encoding is the same
 * bytes and decodes to the same values. h is the frame's header (or a synthetic one).
 */
static void
roundtrip(uint8_t opcode, struct sl_wire_hdr *h, const uint8_t *body, size_t len,
	  const union body_out *o)
{
	struct sl_wire_hdr h2;
	union body_out o2;
	int n;

	consume(opcode, o);
	if (opcode == SL_OP_MPUB_PART)
		reassemble(h, &o->mpart);
	n = reencode(opcode, h, o);
	if (n == 0)
		return;
	if (n < 0 || (size_t)n != SL_WIRE_HDR_LEN + len ||
	    memcmp(enc + SL_WIRE_HDR_LEN, body, len) != 0)
		abort();
	if (sl_wire_decode_hdr(enc, (size_t)n, &h2) != 0 || h2.opcode != opcode ||
	    h2.body_len != len || h2.flags != h->flags || h2.session != h->session ||
	    h2.seq != h->seq || h2.cookie != h->cookie)
		abort();
	if (decode_body(opcode, h2.flags, enc + SL_WIRE_HDR_LEN, len, &o2) != 0 ||
	    !same_body(opcode, o, &o2))
		abort();
}

/* A UDP payload: header, then the body with the decoder of its opcode. */
static void
fuzz_payload(const uint8_t *p, size_t len)
{
	struct sl_wire_hdr h;
	union body_out o;
	int rc;

	rc = sl_wire_decode_hdr(p, len, &h);
	if (rc != 0) {
		if (rc != -SL_E_MALFORMED && rc != -SL_E_VERSION && rc != -SL_E_OPCODE)
			abort();
		return;
	}
	if ((size_t)h.body_len + SL_WIRE_HDR_LEN != len || sl_wire_op_name(h.opcode)[0] == '?')
		abort();
	rc = decode_body(h.opcode, h.flags, p + SL_WIRE_HDR_LEN, h.body_len, &o);
	if (rc != 0) {
		if (rc != -SL_E_MALFORMED && rc != -SL_E_NAME)
			abort();
		return;
	}
	roundtrip(h.opcode, &h, p + SL_WIRE_HDR_LEN, h.body_len, &o);
	/* the whole frame must come back identical, header included */
	if (memcmp(enc, p, len) != 0 && !(h.opcode == SL_OP_ERR && o.err.text_len > 0 &&
					  memchr(o.err.text, 0, o.err.text_len) != NULL))
		abort();
}

/* A UDP payload as a bundle (SL_WIRE_F_BUNDLE): the frames the split gives must tile the
 * payload exactly, each carry the flag when there are several, and each is then a payload
 * of its own (copied to a buffer of exactly its size). */
static void
fuzz_bundle(const uint8_t *p, size_t len)
{
	uint16_t off[SL_WIRE_BUNDLE_MAX], flen[SL_WIRE_BUNDLE_MAX];
	size_t pos = 0;
	uint8_t *f;
	int n, i;

	n = sl_wire_bundle_split(p, len, off, flen, SL_WIRE_BUNDLE_MAX);
	if (n < 0) {
		if (n != -SL_E_MALFORMED)
			abort();
		return;
	}
	if (n == 0 || n > SL_WIRE_BUNDLE_MAX)
		abort();
	for (i = 0; i < n; i++) {
		if (off[i] != pos || (n > 1 && (flen[i] < SL_WIRE_HDR_LEN ||
						!(((uint32_t)p[pos + 4] << 8 | p[pos + 5]) &
						  SL_WIRE_F_BUNDLE))))
			abort();
		pos += flen[i];
	}
	if (pos != len || n == 1)
		return;
	for (i = 0; i < n; i++) {
		f = malloc(flen[i]);
		if (f == NULL)
			return;
		memcpy(f, p + off[i], flen[i]);
		fuzz_payload(f, flen[i]);
		free(f);
	}
}

/* A parsed UDP frame made into a frame of its own with its payload (net.c's rewrap, as for
 * a bundle's frames): it must parse again as UDP with the same addresses and payload. */
static void
fuzz_rewrap(const uint8_t *data, size_t size, const struct sl_net_if *nf,
	    const struct sl_net_info *info)
{
	struct sl_net_info out, again;
	uint8_t *f = malloc(SL_NET_HDRS_LEN + (size_t)info->payload_len);
	uint32_t flen;

	if (f == NULL)
		return;
	flen = sl_net_udp_rewrap(f, data, info, data + info->payload_off, info->payload_len,
				 &out);
	(void)size;
	memset(&again, 0, sizeof(again));
	if (flen != SL_NET_HDRS_LEN + (uint32_t)info->payload_len ||
	    sl_net_parse(f, flen, nf, 0, &again) != SL_NET_UDP ||
	    again.payload_off != out.payload_off || again.payload_len != info->payload_len ||
	    again.src_ip != info->src_ip || again.dst_ip != info->dst_ip ||
	    again.src_port != info->src_port || again.dst_port != info->dst_port ||
	    memcmp(f + SL_NET_HDRS_LEN, data + info->payload_off, info->payload_len) != 0)
		abort();
	free(f);
}

/* data[0] picks a body decoder, the rest is the body. */
static void
fuzz_body(const uint8_t *data, size_t size)
{
	struct sl_wire_hdr h = { .flags = 0, .session = 1, .seq = 2, .cookie = 3 };
	union body_out o;
	uint8_t opcode;

	if (size < 1 || size - 1 > 65535)
		return;
	opcode = body_ops[data[0] % sizeof(body_ops)];
	if (decode_body(opcode, h.flags, data + 1, size - 1, &o) != 0)
		return;
	roundtrip(opcode, &h, data + 1, size - 1, &o);
}

static void
fuzz_frame(const uint8_t *data, size_t size)
{
	static const struct sl_net_if nif = {
		.mac = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x01 },
		.udp_port_lo = SL_WIRE_UDP_PORT,
		.udp_port_hi = SL_WIRE_UDP_PORT + 1,
	};
	static const uint8_t ip[4] = { 10, 0, 0, 1 };
	struct sl_net_if nf = nif;
	struct sl_net_info info;
	uint8_t *copy;

	if (size > UINT32_MAX)
		return;
	memcpy(&nf.ip, ip, 4);	/* network byte order */
	memset(&info, 0, sizeof(info));
	if (sl_net_parse(data, (uint32_t)size, &nf, 0, &info) != SL_NET_UDP)
		return;
	/* a net.c bug, not a codec one: make it loud */
	if (info.kind != SL_NET_UDP || (size_t)info.payload_off + info.payload_len > size)
		abort();
	copy = malloc(info.payload_len > 0 ? info.payload_len : 1);
	if (copy == NULL)
		return;
	memcpy(copy, data + info.payload_off, info.payload_len);
	fuzz_payload(copy, info.payload_len);
	fuzz_bundle(copy, info.payload_len);
	free(copy);
	fuzz_rewrap(data, size, &nf, &info);
}

/* 4. as a replica UDP payload (rlink.h, version 3): the header decoder, the tag check with
 * a fixed link key and the replay window. Whatever decodes is encoded again and must be
 * byte-identical; a tag the fuzzer made up must never verify, and a payload sealed here
 * with the key must. */
static void
fuzz_rlink(const uint8_t *data, size_t size)
{
	static const uint8_t key[SL_RLINK_KEY_LEN] = "fuzzing key, 32 bytes, fixed....";
	static struct sl_rlink_key k;
	static struct sl_rlink_replay win;
	static int ready;
	static uint8_t buf[SL_RLINK_HDR_LEN + SL_RLINK_NAME_MAX + 256 + SL_RLINK_TAG_LEN];
	struct sl_rlink_env e;
	uint8_t *copy;
	int n;

	if (!ready) {
		if (sodium_init() < 0)
			abort();
		sl_rlink_key_derive(&k, key, 1, 2);
		ready = 1;
	}
	if (size > 65535)
		return;
	copy = malloc(size ? size : 1);
	if (copy == NULL)
		return;
	memcpy(copy, data, size);
	if (sl_rlink_decode(copy, (uint32_t)size, &e) == 0) {
		if (e.payload + e.payload_len + SL_RLINK_TAG_LEN != copy + size)
			abort();
		n = sl_rlink_encode(enc, sizeof(enc), &e);
		if (n != SL_RLINK_HDR_LEN + e.name_len || memcmp(enc, copy, (size_t)n) != 0)
			abort();
		/* a made-up tag: valid only by a 2^-128 chance, so never here */
		if (sl_rlink_verify(copy, (uint32_t)size, &k) == 0)
			abort();
		if (sl_rlink_replay_check(&win, e.seq) == 0)
			sl_rlink_replay_mark(&win, e.seq);
		if (sl_rlink_replay_check(&win, e.seq) == 0)
			abort();
		/* the same envelope sealed with the key verifies */
		if (e.payload_len <= 256) {
			n = sl_rlink_encode(buf, sizeof(buf), &e);
			memcpy(buf + n, e.payload, e.payload_len);
			n = sl_rlink_seal(buf, (uint32_t)n + e.payload_len, sizeof(buf), &k);
			if (n < 0 || sl_rlink_verify(buf, (uint32_t)n, &k) != 0)
				abort();
		}
	}
	free(copy);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_frame(data, size);
	fuzz_payload(data, size);
	fuzz_bundle(data, size);
	fuzz_body(data, size);
	fuzz_rlink(data, size);
	return 0;
}
