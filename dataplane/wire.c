/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * sluice wire protocol v1 codec (see wire.h and docs/protocol.md).
 *
 * Decoders check every length against the buffer before reading, then names,
 * counts and reserved fields. Every body has an exact length (fixed, or implied by
 * its own length/count fields): a byte too few or too many is -SL_E_MALFORMED.
 * Reserved bytes and undefined body flag bits must be zero.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "bytes.h"
#include "err.h"
#include "name.h"
#include "wire.h"

/* address block: u16 partition, u8 topic_len, u8 channel_len */
#define ADDR_FIXED 4
/* PUB/MPUB prefix: u16 partition, u8 topic_len, u8 flags */
#define PUB_FIXED 4
#define SUB_TAIL 6		/* u8 flags, u8 reserved, u32 rdy */
#define RDY_TAIL 4
#define TOUCH_TAIL 8
#define REQ_TAIL 12
#define SETOFF_TAIL 16		/* u8 kind, 7 reserved, u64 value */
#define BODY_MAX UINT16_MAX

#define PUB_FLAGS_ALL SL_WIRE_PUB_TRACE
#define SUB_FLAGS_ALL (SL_WIRE_SUB_ORDERED | SL_WIRE_SUB_EPHEMERAL)

static int
all_zero(const uint8_t *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (p[i] != 0)
			return 0;
	return 1;
}

static int
op_valid(uint8_t op)
{
	return (op >= SL_OP_HELLO && op <= SL_OP_MPUB_PART) ||
	       (op >= SL_OP_OK && op <= SL_OP_META);
}

int
sl_wire_check_name(const char *name, size_t len)
{
	return sl_name_check(name, len);
}

static const char *const op_names[256] = {
	[SL_OP_HELLO] = "HELLO",
	[SL_OP_PUB] = "PUB",
	[SL_OP_MPUB] = "MPUB",
	[SL_OP_SUB] = "SUB",
	[SL_OP_RDY] = "RDY",
	[SL_OP_FIN] = "FIN",
	[SL_OP_REQ] = "REQ",
	[SL_OP_TOUCH] = "TOUCH",
	[SL_OP_CLS] = "CLS",
	[SL_OP_NOP] = "NOP",
	[SL_OP_SET_OFFSET] = "SET_OFFSET",
	[SL_OP_METADATA] = "METADATA",
	[SL_OP_MPUB_PART] = "MPUB_PART",
	[SL_OP_OK] = "OK",
	[SL_OP_ERR] = "ERR",
	[SL_OP_MSG] = "MSG",
	[SL_OP_WELCOME] = "WELCOME",
	[SL_OP_META] = "META",
};

const char *
sl_wire_op_name(uint8_t opcode)
{
	return op_names[opcode] != NULL ? op_names[opcode] : "?";
}

/* ---- header ---- */

int
sl_wire_decode_hdr(const uint8_t *buf, size_t len, struct sl_wire_hdr *hdr)
{
	if (buf == NULL || len < SL_WIRE_HDR_LEN)
		return -SL_E_MALFORMED;
	if (sl_bytes_get_be16(buf) != SL_WIRE_MAGIC)
		return -SL_E_MALFORMED;
	if (buf[2] != SL_WIRE_VERSION)
		return -SL_E_VERSION;
	if (!op_valid(buf[3]))
		return -SL_E_OPCODE;
	if ((size_t)sl_bytes_get_be16(buf + 6) != len - SL_WIRE_HDR_LEN)
		return -SL_E_MALFORMED;
	hdr->version = buf[2];
	hdr->opcode = buf[3];
	hdr->flags = sl_bytes_get_be16(buf + 4);
	hdr->body_len = sl_bytes_get_be16(buf + 6);
	hdr->session = sl_bytes_get_be64(buf + 8);
	hdr->seq = sl_bytes_get_be64(buf + 16);
	hdr->cookie = sl_bytes_get_be64(buf + 24);
	return 0;
}

int
sl_wire_is_bundle(const uint8_t *buf, size_t len)
{
	return buf != NULL && len > SL_WIRE_HDR_LEN &&
	       (sl_bytes_get_be16(buf + 4) & SL_WIRE_F_BUNDLE) &&
	       SL_WIRE_HDR_LEN + (size_t)sl_bytes_get_be16(buf + 6) < len;
}

int
sl_wire_bundle_split(const uint8_t *buf, size_t len, uint16_t *off, uint16_t *flen,
		     unsigned int max)
{
	size_t pos = 0, fl;
	unsigned int n = 0;

	if (buf == NULL || max == 0 || len > UINT16_MAX)
		return -SL_E_MALFORMED;
	if (!sl_wire_is_bundle(buf, len)) {
		off[0] = 0;
		flen[0] = (uint16_t)len;
		return 1;
	}
	while (pos < len) {
		if (n == max || len - pos < SL_WIRE_HDR_LEN ||
		    sl_bytes_get_be16(buf + pos) != SL_WIRE_MAGIC ||
		    !(sl_bytes_get_be16(buf + pos + 4) & SL_WIRE_F_BUNDLE))
			return -SL_E_MALFORMED;
		fl = SL_WIRE_HDR_LEN + (size_t)sl_bytes_get_be16(buf + pos + 6);
		if (fl > len - pos)
			return -SL_E_MALFORMED;
		off[n] = (uint16_t)pos;
		flen[n] = (uint16_t)fl;
		n++;
		pos += fl;
	}
	return (int)n;
}

void
sl_wire_encode_hdr(uint8_t *buf, const struct sl_wire_hdr *hdr)
{
	sl_bytes_put_be16(buf, SL_WIRE_MAGIC);
	buf[2] = hdr->version;
	buf[3] = hdr->opcode;
	sl_bytes_put_be16(buf + 4, hdr->flags);
	sl_bytes_put_be16(buf + 6, hdr->body_len);
	sl_bytes_put_be64(buf + 8, hdr->session);
	sl_bytes_put_be64(buf + 16, hdr->seq);
	sl_bytes_put_be64(buf + 24, hdr->cookie);
}

/*
 * Common start of every frame encoder: check the body fits in a frame and in cap,
 * fill the header fields the encoder owns and write the header.
 * Returns the frame length or -SL_E_TOO_BIG.
 */
static int
frame_begin(uint8_t *buf, size_t cap, struct sl_wire_hdr *hdr, uint8_t opcode,
	    size_t body_len)
{
	if (body_len > BODY_MAX || cap < SL_WIRE_HDR_LEN + body_len || buf == NULL)
		return -SL_E_TOO_BIG;
	hdr->version = SL_WIRE_VERSION;
	hdr->opcode = opcode;
	hdr->body_len = (uint16_t)body_len;
	sl_wire_encode_hdr(buf, hdr);
	return (int)(SL_WIRE_HDR_LEN + body_len);
}

/* ---- address block ---- */

/*
 * Decode the address block at the start of body. cls: channel_len 0 is allowed, and
 * topic_len 0 too when channel_len is 0 (close the session). Returns the address block
 * length (>= 4) or a negative error.
 */
static int
addr_decode(const uint8_t *body, size_t len, int cls, struct sl_wire_addr *a)
{
	size_t need;
	int rc;

	if (len < ADDR_FIXED)
		return -SL_E_MALFORMED;
	a->partition = sl_bytes_get_be16(body);
	a->topic_len = body[2];
	a->channel_len = body[3];
	need = ADDR_FIXED + (size_t)a->topic_len + a->channel_len;
	if (len < need)
		return -SL_E_MALFORMED;
	a->topic = (const char *)body + ADDR_FIXED;
	a->channel = a->topic + a->topic_len;
	if (cls && a->channel_len == 0) {
		if (a->topic_len == 0)
			return (int)need;
	} else {
		rc = sl_wire_check_name(a->channel, a->channel_len);
		if (rc < 0)
			return rc;
	}
	rc = sl_wire_check_name(a->topic, a->topic_len);
	if (rc < 0)
		return rc;
	return (int)need;
}

static int
addr_check(const struct sl_wire_addr *a, int cls)
{
	int rc;

	if (cls && a->channel_len == 0) {
		if (a->topic_len == 0)
			return 0;
	} else {
		rc = sl_wire_check_name(a->channel, a->channel_len);
		if (rc < 0)
			return rc;
	}
	return sl_wire_check_name(a->topic, a->topic_len);
}

static size_t
addr_len(const struct sl_wire_addr *a)
{
	return ADDR_FIXED + (size_t)a->topic_len + a->channel_len;
}

static size_t
addr_encode(uint8_t *p, const struct sl_wire_addr *a)
{
	sl_bytes_put_be16(p, a->partition);
	p[2] = a->topic_len;
	p[3] = a->channel_len;
	if (a->topic_len > 0)
		memcpy(p + ADDR_FIXED, a->topic, a->topic_len);
	if (a->channel_len > 0)
		memcpy(p + ADDR_FIXED + a->topic_len, a->channel, a->channel_len);
	return addr_len(a);
}

/* ---- HELLO / WELCOME ---- */

int
sl_wire_decode_hello(const uint8_t *body, size_t len, uint16_t hdr_flags,
		     struct sl_wire_hello *out)
{
	out->producer = 0;
	if (hdr_flags & SL_WIRE_F_PRODUCER) {
		/* the producer id closes the body; 0 is not an id */
		if (len < 16 || sl_bytes_get_be64(body + len - 8) == 0)
			return -SL_E_MALFORMED;
		len -= 8;
		out->producer = sl_bytes_get_be64(body + len);
	}
	if (len != 8 && (len < 10 || len != 9u + body[8] || body[8] > SL_WIRE_TOKEN_MAX))
		return -SL_E_MALFORMED;
	out->client_info = sl_bytes_get_be32(body);
	out->window = sl_bytes_get_be32(body + 4);
	out->token_len = len == 8 ? 0 : body[8];
	out->token = len == 8 ? NULL : body + 9;
	return 0;
}

int
sl_wire_encode_hello(uint8_t *buf, size_t cap, struct sl_wire_hdr *hdr,
		     const struct sl_wire_hello *h)
{
	size_t len;
	int n;

	if (h->token_len > SL_WIRE_TOKEN_MAX || (h->token_len != 0 && h->token == NULL))
		return -SL_E_INVAL;
	len = h->token_len ? 9u + h->token_len : 8;
	if (h->producer != 0)
		hdr->flags |= SL_WIRE_F_PRODUCER;
	else
		hdr->flags &= (uint16_t)~SL_WIRE_F_PRODUCER;
	n = frame_begin(buf, cap, hdr, SL_OP_HELLO, len + (h->producer != 0 ? 8 : 0));
	if (n < 0)
		return n;
	if (h->producer != 0)
		sl_bytes_put_be64(buf + SL_WIRE_HDR_LEN + len, h->producer);
	sl_bytes_put_be32(buf + SL_WIRE_HDR_LEN, h->client_info);
	sl_bytes_put_be32(buf + SL_WIRE_HDR_LEN + 4, h->window);
	if (h->token_len != 0) {
		buf[SL_WIRE_HDR_LEN + 8] = h->token_len;
		memcpy(buf + SL_WIRE_HDR_LEN + 9, h->token, h->token_len);
	}
	return n;
}

int
sl_wire_decode_welcome(const uint8_t *body, size_t len, struct sl_wire_welcome *out)
{
	if (len != SL_WIRE_WELCOME_LEN)
		return -SL_E_MALFORMED;
	out->session = sl_bytes_get_be64(body);
	out->window = sl_bytes_get_be32(body + 8);
	out->max_msg = sl_bytes_get_be32(body + 12);
	out->heartbeat_ms = sl_bytes_get_be32(body + 16);
	out->timeout_ms = sl_bytes_get_be32(body + 20);
	return 0;
}

int
sl_wire_encode_welcome(uint8_t *buf, size_t cap, struct sl_wire_hdr *hdr,
		       const struct sl_wire_welcome *w)
{
	int n = frame_begin(buf, cap, hdr, SL_OP_WELCOME, SL_WIRE_WELCOME_LEN);
	uint8_t *p;

	if (n < 0)
		return n;
	p = buf + SL_WIRE_HDR_LEN;
	sl_bytes_put_be64(p, w->session);
	sl_bytes_put_be32(p + 8, w->window);
	sl_bytes_put_be32(p + 12, w->max_msg);
	sl_bytes_put_be32(p + 16, w->heartbeat_ms);
	sl_bytes_put_be32(p + 20, w->timeout_ms);
	return n;
}

/* ---- PUB / MPUB ---- */

int
sl_wire_decode_pub(const uint8_t *body, size_t len, int mpub, struct sl_wire_pub *out)
{
	size_t off, rest, pos;
	uint32_t i, total, el;
	int rc;

	memset(out, 0, sizeof(*out));
	if (len < PUB_FIXED)
		return -SL_E_MALFORMED;
	out->partition = sl_bytes_get_be16(body);
	out->topic_len = body[2];
	out->flags = body[3];
	off = PUB_FIXED + (size_t)out->topic_len;
	if (out->flags & SL_WIRE_PUB_TRACE)
		off += 8;
	if (len < off + (mpub ? 2 : 4))
		return -SL_E_MALFORMED;
	if (out->flags & ~PUB_FLAGS_ALL)
		return -SL_E_MALFORMED;
	out->topic = (const char *)body + PUB_FIXED;
	rc = sl_wire_check_name(out->topic, out->topic_len);
	if (rc < 0)
		return rc;
	if (out->flags & SL_WIRE_PUB_TRACE)
		out->trace_id = sl_bytes_get_be64(body + PUB_FIXED + out->topic_len);

	if (!mpub) {
		out->count = 1;
		out->msg_len = sl_bytes_get_be32(body + off);
		off += 4;
		if ((size_t)out->msg_len != len - off)
			return -SL_E_MALFORMED;
		out->msg = body + off;
		out->msgs_len = 0;
		return 0;
	}

	out->count = sl_bytes_get_be16(body + off);
	off += 2;
	if (out->count == 0 || out->count > SL_WIRE_MPUB_MAX)
		return -SL_E_MALFORMED;
	rest = len - off;
	pos = 0;
	total = 0;
	for (i = 0; i < out->count; i++) {
		if (rest - pos < 4)
			return -SL_E_MALFORMED;
		el = sl_bytes_get_be32(body + off + pos);
		pos += 4;
		if (el > rest - pos)
			return -SL_E_MALFORMED;
		pos += el;
		total += el;	/* bounded by len < 2^32 */
	}
	if (pos != rest)
		return -SL_E_MALFORMED;
	out->msg = body + off;
	out->msgs_len = (uint32_t)rest;
	out->msg_len = total;
	return 0;
}

int
sl_wire_mpub_next(const struct sl_wire_pub *p, uint32_t *pos, const uint8_t **data,
		  uint32_t *len)
{
	uint32_t el;

	if (p->msgs_len == 0) {
		/* a decoded PUB: its single message */
		if (*pos != 0 || p->msg == NULL)
			return 0;
		*data = p->msg;
		*len = p->msg_len;
		*pos = 1;
		return 1;
	}
	if (*pos >= p->msgs_len || p->msgs_len - *pos < 4)
		return 0;
	el = sl_bytes_get_be32(p->msg + *pos);
	if (el > p->msgs_len - *pos - 4)
		return 0;
	*data = p->msg + *pos + 4;
	*len = el;
	*pos += 4 + el;
	return 1;
}

int
sl_wire_encode_pub(uint8_t *buf, size_t cap, struct sl_wire_hdr *hdr, int mpub,
		   uint16_t partition, const char *topic, uint8_t flags, uint64_t trace_id,
		   uint16_t count, const void *const *msgs, const uint32_t *lens)
{
	size_t tlen, body, i;
	uint8_t *p;
	int n, rc;

	if (topic == NULL)
		return -SL_E_NAME;
	tlen = strnlen(topic, SL_WIRE_NAME_MAX + 1);
	rc = sl_wire_check_name(topic, tlen);
	if (rc < 0)
		return rc;
	if (count > 1)
		mpub = 1;
	if (count == 0 || count > SL_WIRE_MPUB_MAX || (flags & ~PUB_FLAGS_ALL) ||
	    msgs == NULL || lens == NULL)
		return -SL_E_PUB_ARG;
	body = PUB_FIXED + tlen + ((flags & SL_WIRE_PUB_TRACE) ? 8 : 0) + (mpub ? 2 : 0);
	for (i = 0; i < count; i++) {
		if (lens[i] > 0 && msgs[i] == NULL)
			return -SL_E_PUB_ARG;
		if (lens[i] > BODY_MAX)
			return -SL_E_TOO_BIG;
		body += 4 + (size_t)lens[i];
		if (body > BODY_MAX)
			return -SL_E_TOO_BIG;
	}
	n = frame_begin(buf, cap, hdr, mpub ? SL_OP_MPUB : SL_OP_PUB, body);
	if (n < 0)
		return n;
	p = buf + SL_WIRE_HDR_LEN;
	sl_bytes_put_be16(p, partition);
	p[2] = (uint8_t)tlen;
	p[3] = flags;
	memcpy(p + PUB_FIXED, topic, tlen);
	p += PUB_FIXED + tlen;
	if (flags & SL_WIRE_PUB_TRACE) {
		sl_bytes_put_be64(p, trace_id);
		p += 8;
	}
	if (mpub) {
		sl_bytes_put_be16(p, count);
		p += 2;
	}
	for (i = 0; i < count; i++) {
		sl_bytes_put_be32(p, lens[i]);
		p += 4;
		if (lens[i] > 0)
			memcpy(p, msgs[i], lens[i]);
		p += lens[i];
	}
	return n;
}

/* ---- MPUB_PART ---- */

/* The fragment fields' rules, shared by the decoder and the encoder. */
static int
mpart_check(const struct sl_wire_mpart *f)
{
	if (f->nfrag == 0 || f->nfrag > SL_WIRE_MPART_FRAGS || f->index >= f->nfrag)
		return -SL_E_MALFORMED;
	if (f->count == 0 || f->count > SL_WIRE_MPUB_MAX)
		return -SL_E_MALFORMED;
	if (f->total_len < 4u * f->count || f->total_len > SL_WIRE_MPART_TOTAL_MAX)
		return -SL_E_MALFORMED;
	if (f->chunk_len == 0 || (uint64_t)f->off + f->chunk_len > f->total_len)
		return -SL_E_MALFORMED;
	return 0;
}

int
sl_wire_decode_mpart(const uint8_t *body, size_t len, struct sl_wire_mpart *out)
{
	size_t off;
	int rc;

	memset(out, 0, sizeof(*out));
	if (len < PUB_FIXED)
		return -SL_E_MALFORMED;
	out->partition = sl_bytes_get_be16(body);
	out->topic_len = body[2];
	out->flags = body[3];
	off = PUB_FIXED + (size_t)out->topic_len;
	if (out->flags & SL_WIRE_PUB_TRACE)
		off += 8;
	if (len < off + SL_WIRE_MPART_FIXED || (out->flags & ~PUB_FLAGS_ALL))
		return -SL_E_MALFORMED;
	out->topic = (const char *)body + PUB_FIXED;
	rc = sl_wire_check_name(out->topic, out->topic_len);
	if (rc < 0)
		return rc;
	if (out->flags & SL_WIRE_PUB_TRACE)
		out->trace_id = sl_bytes_get_be64(body + PUB_FIXED + out->topic_len);
	out->index = body[off];
	out->nfrag = body[off + 1];
	out->count = sl_bytes_get_be16(body + off + 2);
	out->total_len = sl_bytes_get_be32(body + off + 4);
	out->off = sl_bytes_get_be32(body + off + 8);
	off += SL_WIRE_MPART_FIXED;
	out->chunk = body + off;
	out->chunk_len = (uint32_t)(len - off);
	return mpart_check(out);
}

int
sl_wire_encode_mpart(uint8_t *buf, size_t cap, struct sl_wire_hdr *hdr,
		     const struct sl_wire_mpart *f)
{
	size_t body;
	uint8_t *p;
	int n, rc;

	if (f->topic == NULL || f->topic_len == 0)
		return -SL_E_NAME;
	rc = sl_wire_check_name(f->topic, f->topic_len);
	if (rc < 0)
		return rc;
	if ((f->flags & ~PUB_FLAGS_ALL) || mpart_check(f) != 0 || f->chunk == NULL)
		return -SL_E_PUB_ARG;
	body = PUB_FIXED + (size_t)f->topic_len + ((f->flags & SL_WIRE_PUB_TRACE) ? 8 : 0) +
	       SL_WIRE_MPART_FIXED + f->chunk_len;
	n = frame_begin(buf, cap, hdr, SL_OP_MPUB_PART, body);
	if (n < 0)
		return n;
	p = buf + SL_WIRE_HDR_LEN;
	sl_bytes_put_be16(p, f->partition);
	p[2] = f->topic_len;
	p[3] = f->flags;
	memcpy(p + PUB_FIXED, f->topic, f->topic_len);
	p += PUB_FIXED + f->topic_len;
	if (f->flags & SL_WIRE_PUB_TRACE) {
		sl_bytes_put_be64(p, f->trace_id);
		p += 8;
	}
	p[0] = f->index;
	p[1] = f->nfrag;
	sl_bytes_put_be16(p + 2, f->count);
	sl_bytes_put_be32(p + 4, f->total_len);
	sl_bytes_put_be32(p + 8, f->off);
	memcpy(p + SL_WIRE_MPART_FIXED, f->chunk, f->chunk_len);
	return n;
}

uint32_t
sl_wire_mpart_chunk_max(size_t dgram, uint8_t topic_len, uint8_t flags)
{
	size_t fixed = SL_WIRE_HDR_LEN + PUB_FIXED + (size_t)topic_len +
		       ((flags & SL_WIRE_PUB_TRACE) ? 8 : 0) + SL_WIRE_MPART_FIXED;

	if (dgram > SL_WIRE_HDR_LEN + BODY_MAX)
		dgram = SL_WIRE_HDR_LEN + BODY_MAX;
	return dgram > fixed ? (uint32_t)(dgram - fixed) : 0;
}

/* ---- SUB ---- */

int
sl_wire_decode_sub(const uint8_t *body, size_t len, struct sl_wire_sub *out)
{
	const uint8_t *t;
	int a;

	memset(out, 0, sizeof(*out));
	a = addr_decode(body, len, 0, &out->addr);
	if (a < 0)
		return a;
	if (len - (size_t)a != SUB_TAIL)
		return -SL_E_MALFORMED;
	t = body + a;
	out->flags = t[0];
	if ((t[0] & ~SUB_FLAGS_ALL) || t[1] != 0)
		return -SL_E_MALFORMED;
	out->rdy = sl_bytes_get_be32(t + 2);
	return 0;
}

int
sl_wire_encode_sub(uint8_t *buf, size_t cap, struct sl_wire_hdr *hdr,
		   const struct sl_wire_sub *s)
{
	uint8_t *p;
	size_t a;
	int n, rc;

	rc = addr_check(&s->addr, 0);
	if (rc < 0)
		return rc;
	if (s->flags & ~SUB_FLAGS_ALL)
		return -SL_E_INVAL;
	a = addr_len(&s->addr);
	n = frame_begin(buf, cap, hdr, SL_OP_SUB, a + SUB_TAIL);
	if (n < 0)
		return n;
	p = buf + SL_WIRE_HDR_LEN;
	p += addr_encode(p, &s->addr);
	p[0] = s->flags;
	p[1] = 0;
	sl_bytes_put_be32(p + 2, s->rdy);
	return n;
}

/* ---- channel operations ---- */

int
sl_wire_decode_chan_op(uint8_t opcode, const uint8_t *body, size_t len,
		       struct sl_wire_chan_op *out)
{
	const uint8_t *t;
	size_t rest;
	int a;

	memset(out, 0, sizeof(*out));
	if (opcode == SL_OP_NOP)
		return len == 0 ? 0 : -SL_E_MALFORMED;
	if (opcode != SL_OP_RDY && opcode != SL_OP_FIN && opcode != SL_OP_REQ &&
	    opcode != SL_OP_TOUCH && opcode != SL_OP_CLS && opcode != SL_OP_SET_OFFSET)
		return -SL_E_OPCODE;
	a = addr_decode(body, len, opcode == SL_OP_CLS, &out->addr);
	if (a < 0)
		return a;
	t = body + a;
	rest = len - (size_t)a;
	switch (opcode) {
	case SL_OP_RDY:
		if (rest != RDY_TAIL)
			return -SL_E_MALFORMED;
		out->count = sl_bytes_get_be32(t);
		break;
	case SL_OP_TOUCH:
		if (rest != TOUCH_TAIL)
			return -SL_E_MALFORMED;
		out->msg_id = sl_bytes_get_be64(t);
		break;
	case SL_OP_REQ:
		if (rest != REQ_TAIL)
			return -SL_E_MALFORMED;
		out->msg_id = sl_bytes_get_be64(t);
		out->delay_ms = sl_bytes_get_be32(t + 8);
		break;
	case SL_OP_FIN:
		if (rest < 2)
			return -SL_E_MALFORMED;
		out->count = sl_bytes_get_be16(t);
		if (out->count == 0 || out->count > SL_WIRE_FIN_MAX ||
		    rest - 2 != (size_t)out->count * 8)
			return -SL_E_MALFORMED;
		out->ids = t + 2;
		out->msg_id = sl_bytes_get_be64(t + 2);
		break;
	case SL_OP_CLS:
		if (rest != 0)
			return -SL_E_MALFORMED;
		break;
	default: /* SL_OP_SET_OFFSET */
		if (rest != SETOFF_TAIL)
			return -SL_E_MALFORMED;
		out->kind = t[0];
		if (out->kind > SL_OFF_END || !all_zero(t + 1, 7))
			return -SL_E_MALFORMED;
		out->value = sl_bytes_get_be64(t + 8);
		break;
	}
	return 0;
}

uint64_t
sl_wire_fin_id(const struct sl_wire_chan_op *op, uint32_t i)
{
	return sl_bytes_get_be64(op->ids + (size_t)i * 8);
}

int
sl_wire_encode_chan_op(uint8_t *buf, size_t cap, struct sl_wire_hdr *hdr, uint8_t opcode,
		       const struct sl_wire_chan_op *op, const uint64_t *ids)
{
	size_t a, tail;
	uint8_t *p;
	uint32_t i;
	int n, rc;

	if (opcode == SL_OP_NOP)
		return frame_begin(buf, cap, hdr, SL_OP_NOP, 0);
	switch (opcode) {
	case SL_OP_RDY:
		tail = RDY_TAIL;
		break;
	case SL_OP_TOUCH:
		tail = TOUCH_TAIL;
		break;
	case SL_OP_REQ:
		tail = REQ_TAIL;
		break;
	case SL_OP_FIN:
		if (op->count == 0 || op->count > SL_WIRE_FIN_MAX || ids == NULL)
			return -SL_E_INVAL;
		tail = 2 + (size_t)op->count * 8;
		break;
	case SL_OP_CLS:
		tail = 0;
		break;
	case SL_OP_SET_OFFSET:
		if (op->kind > SL_OFF_END)
			return -SL_E_INVAL;
		tail = SETOFF_TAIL;
		break;
	default:
		return -SL_E_INVAL;
	}
	rc = addr_check(&op->addr, opcode == SL_OP_CLS);
	if (rc < 0)
		return rc;
	a = addr_len(&op->addr);
	n = frame_begin(buf, cap, hdr, opcode, a + tail);
	if (n < 0)
		return n;
	p = buf + SL_WIRE_HDR_LEN;
	p += addr_encode(p, &op->addr);
	switch (opcode) {
	case SL_OP_RDY:
		sl_bytes_put_be32(p, op->count);
		break;
	case SL_OP_TOUCH:
		sl_bytes_put_be64(p, op->msg_id);
		break;
	case SL_OP_REQ:
		sl_bytes_put_be64(p, op->msg_id);
		sl_bytes_put_be32(p + 8, op->delay_ms);
		break;
	case SL_OP_FIN:
		sl_bytes_put_be16(p, (uint16_t)op->count);
		for (i = 0; i < op->count; i++)
			sl_bytes_put_be64(p + 2 + (size_t)i * 8, ids[i]);
		break;
	case SL_OP_SET_OFFSET:
		p[0] = op->kind;
		memset(p + 1, 0, 7);
		sl_bytes_put_be64(p + 8, op->value);
		break;
	default: /* CLS: nothing after the address */
		break;
	}
	return n;
}

/* ---- OK / ERR / MSG ---- */

int
sl_wire_decode_ok(const uint8_t *body, size_t len, struct sl_wire_ok *out)
{
	if (len != SL_WIRE_OK_LEN || body[1] != 0)
		return -SL_E_MALFORMED;
	out->req_opcode = body[0];
	out->partition = sl_bytes_get_be16(body + 2);
	out->count = sl_bytes_get_be32(body + 4);
	out->id = sl_bytes_get_be64(body + 8);
	out->offset = sl_bytes_get_be64(body + 16);
	out->aux = sl_bytes_get_be64(body + 24);
	return 0;
}

int
sl_wire_encode_ok(uint8_t *buf, size_t cap, struct sl_wire_hdr *hdr,
		  const struct sl_wire_ok *ok)
{
	int n = frame_begin(buf, cap, hdr, SL_OP_OK, SL_WIRE_OK_LEN);
	uint8_t *p;

	if (n < 0)
		return n;
	p = buf + SL_WIRE_HDR_LEN;
	p[0] = ok->req_opcode;
	p[1] = 0;
	sl_bytes_put_be16(p + 2, ok->partition);
	sl_bytes_put_be32(p + 4, ok->count);
	sl_bytes_put_be64(p + 8, ok->id);
	sl_bytes_put_be64(p + 16, ok->offset);
	sl_bytes_put_be64(p + 24, ok->aux);
	return n;
}

int
sl_wire_decode_err(const uint8_t *body, size_t len, struct sl_wire_err *out)
{
	if (len < SL_WIRE_ERR_HDR_LEN || body[3] != 0)
		return -SL_E_MALFORMED;
	out->code = sl_bytes_get_be16(body);
	out->req_opcode = body[2];
	out->partition = sl_bytes_get_be16(body + 4);
	out->text_len = sl_bytes_get_be16(body + 6);
	if (out->text_len > SL_WIRE_ERR_TEXT_MAX ||
	    (size_t)out->text_len != len - SL_WIRE_ERR_HDR_LEN)
		return -SL_E_MALFORMED;
	out->text = (const char *)body + SL_WIRE_ERR_HDR_LEN;
	return 0;
}

int
sl_wire_encode_err(uint8_t *buf, size_t cap, struct sl_wire_hdr *hdr, uint16_t code,
		   uint8_t req_opcode, uint16_t partition, const char *text)
{
	size_t tlen = text != NULL ? strnlen(text, SL_WIRE_ERR_TEXT_MAX) : 0;
	int n = frame_begin(buf, cap, hdr, SL_OP_ERR, SL_WIRE_ERR_HDR_LEN + tlen);
	uint8_t *p;

	if (n < 0)
		return n;
	p = buf + SL_WIRE_HDR_LEN;
	sl_bytes_put_be16(p, code);
	p[2] = req_opcode;
	p[3] = 0;
	sl_bytes_put_be16(p + 4, partition);
	sl_bytes_put_be16(p + 6, (uint16_t)tlen);
	if (tlen > 0)
		memcpy(p + SL_WIRE_ERR_HDR_LEN, text, tlen);
	return n;
}

int
sl_wire_decode_msg(const uint8_t *body, size_t len, struct sl_wire_msg *out)
{
	if (len < SL_WIRE_MSG_HDR_LEN)
		return -SL_E_MALFORMED;
	out->sub_id = sl_bytes_get_be64(body);
	out->partition = sl_bytes_get_be16(body + 8);
	out->attempts = sl_bytes_get_be16(body + 10);
	out->len = sl_bytes_get_be32(body + 12);
	if ((size_t)out->len != len - SL_WIRE_MSG_HDR_LEN)
		return -SL_E_MALFORMED;
	out->msg_id = sl_bytes_get_be64(body + 16);
	out->offset = sl_bytes_get_be64(body + 24);
	out->timestamp_ns = sl_bytes_get_be64(body + 32);
	out->trace_id = sl_bytes_get_be64(body + 40);
	out->data = body + SL_WIRE_MSG_HDR_LEN;
	return 0;
}

int
sl_wire_encode_msg(uint8_t *buf, size_t cap, struct sl_wire_hdr *hdr,
		   const struct sl_wire_msg *m)
{
	uint8_t *p;
	int n;

	if (m->len > 0 && m->data == NULL)
		return -SL_E_INVAL;
	n = frame_begin(buf, cap, hdr, SL_OP_MSG, SL_WIRE_MSG_HDR_LEN + (size_t)m->len);
	if (n < 0)
		return n;
	p = buf + SL_WIRE_HDR_LEN;
	sl_bytes_put_be64(p, m->sub_id);
	sl_bytes_put_be16(p + 8, m->partition);
	sl_bytes_put_be16(p + 10, m->attempts);
	sl_bytes_put_be32(p + 12, m->len);
	sl_bytes_put_be64(p + 16, m->msg_id);
	sl_bytes_put_be64(p + 24, m->offset);
	sl_bytes_put_be64(p + 32, m->timestamp_ns);
	sl_bytes_put_be64(p + 40, m->trace_id);
	if (m->len > 0)
		memcpy(p + SL_WIRE_MSG_HDR_LEN, m->data, m->len);
	return n;
}

/* ---- METADATA / META ---- */

int
sl_wire_decode_metareq(const uint8_t *body, size_t len, struct sl_wire_metareq *out)
{
	if (len < 3 || len != 3u + body[2])
		return -SL_E_MALFORMED;
	out->first_partition = sl_bytes_get_be16(body);
	out->topic_len = body[2];
	out->topic = (const char *)body + 3;
	return sl_wire_check_name(out->topic, out->topic_len);
}

int
sl_wire_encode_metareq(uint8_t *buf, size_t cap, struct sl_wire_hdr *hdr, uint16_t first,
		       const char *topic)
{
	size_t tlen;
	int n, rc;

	if (topic == NULL)
		return -SL_E_NAME;
	tlen = strnlen(topic, SL_WIRE_NAME_MAX + 1);
	rc = sl_wire_check_name(topic, tlen);
	if (rc < 0)
		return rc;
	n = frame_begin(buf, cap, hdr, SL_OP_METADATA, 3 + tlen);
	if (n < 0)
		return n;
	sl_bytes_put_be16(buf + SL_WIRE_HDR_LEN, first);
	buf[SL_WIRE_HDR_LEN + 2] = (uint8_t)tlen;
	memcpy(buf + SL_WIRE_HDR_LEN + 3, topic, tlen);
	return n;
}

int
sl_wire_decode_meta(const uint8_t *body, size_t len, uint16_t hdr_flags,
		    struct sl_wire_meta *out)
{
	const uint8_t *e;
	uint16_t i;

	if (len < SL_WIRE_META_HDR_LEN)
		return -SL_E_MALFORMED;
	out->nparts = sl_bytes_get_be16(body);
	out->first_partition = sl_bytes_get_be16(body + 2);
	out->count = sl_bytes_get_be16(body + 4);
	out->v2 = (hdr_flags & SL_WIRE_F_META2) != 0;
	if (sl_bytes_get_be16(body + 6) != 0 || out->count > SL_WIRE_META_MAX ||
	    (uint32_t)out->first_partition + out->count > out->nparts ||
	    len != SL_WIRE_META_HDR_LEN + (size_t)out->count * SL_WIRE_META_ENTRY_LEN)
		return -SL_E_MALFORMED;
	out->entries = body + SL_WIRE_META_HDR_LEN;
	for (i = 0; i < out->count; i++) {
		e = out->entries + (size_t)i * SL_WIRE_META_ENTRY_LEN;
		if (sl_bytes_get_be16(e) != (uint16_t)(out->first_partition + i) ||
		    (sl_bytes_get_be16(e + 2) & ~SL_WIRE_META_F_ALL) ||
		    (!out->v2 && sl_bytes_get_be16(e + 14) != 0))
			return -SL_E_MALFORMED;
	}
	return 0;
}

void
sl_wire_meta_get(const struct sl_wire_meta *m, uint16_t i, struct sl_wire_meta_entry *e)
{
	const uint8_t *p = m->entries + (size_t)i * SL_WIRE_META_ENTRY_LEN;

	e->partition = sl_bytes_get_be16(p);
	e->flags = sl_bytes_get_be16(p + 2);
	e->leader = sl_bytes_get_be32(p + 4);
	memcpy(&e->leader_ip, p + 8, 4);	/* kept in network order */
	e->leader_port = sl_bytes_get_be16(p + 12);
	e->max_record = m->v2 ? sl_bytes_get_be16(p + 14) : 0;
	e->epoch = sl_bytes_get_be32(p + 16);
}

int
sl_wire_encode_meta(uint8_t *buf, size_t cap, struct sl_wire_hdr *hdr,
		    const struct sl_wire_meta *m, const struct sl_wire_meta_entry *e)
{
	uint8_t *p;
	uint16_t i;
	int n;

	if (m->count > SL_WIRE_META_MAX || (m->count > 0 && e == NULL) ||
	    (uint32_t)m->first_partition + m->count > m->nparts)
		return -SL_E_INVAL;
	for (i = 0; i < m->count; i++)
		if (e[i].partition != (uint16_t)(m->first_partition + i) ||
		    (e[i].flags & ~SL_WIRE_META_F_ALL) || (!m->v2 && e[i].max_record != 0))
			return -SL_E_INVAL;
	if (m->v2)
		hdr->flags |= SL_WIRE_F_META2;
	else
		hdr->flags &= (uint16_t)~SL_WIRE_F_META2;
	n = frame_begin(buf, cap, hdr, SL_OP_META,
			SL_WIRE_META_HDR_LEN + (size_t)m->count * SL_WIRE_META_ENTRY_LEN);
	if (n < 0)
		return n;
	p = buf + SL_WIRE_HDR_LEN;
	sl_bytes_put_be16(p, m->nparts);
	sl_bytes_put_be16(p + 2, m->first_partition);
	sl_bytes_put_be16(p + 4, m->count);
	sl_bytes_put_be16(p + 6, 0);
	for (i = 0, p += SL_WIRE_META_HDR_LEN; i < m->count; i++, p += SL_WIRE_META_ENTRY_LEN) {
		sl_bytes_put_be16(p, e[i].partition);
		sl_bytes_put_be16(p + 2, e[i].flags);
		sl_bytes_put_be32(p + 4, e[i].leader);
		memcpy(p + 8, &e[i].leader_ip, 4);
		sl_bytes_put_be16(p + 12, e[i].leader_port);
		sl_bytes_put_be16(p + 14, m->v2 ? e[i].max_record : 0);
		sl_bytes_put_be32(p + 16, e[i].epoch);
	}
	return n;
}
