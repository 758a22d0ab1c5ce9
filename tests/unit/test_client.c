/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * Unit test of libsluice's client.c over a fake in-process transport that plays the
 * broker (with the real wire codec). Time is virtual: the fake's recv() advances its
 * clock by the requested wait when it has nothing to deliver, so retransmission
 * backoff, timeouts and heartbeats are checked exactly and without sleeping.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "err.h"
#include "wire.h"
#include "xport.h"

static int passed, failed;

#define CHECK(cond, ...)                                   \
	do {                                               \
		if (cond) {                                \
			passed++;                          \
			printf("ok   ");                   \
		} else {                                   \
			failed++;                          \
			printf("FAIL ");                   \
		}                                          \
		printf(__VA_ARGS__);                       \
		printf(" (%s:%d)\n", __FILE__, __LINE__);  \
	} while (0)

#define QN 1024
#define FRAME_MAX 2048
#define SEQ_TRACK 8192
#define KEPT_MAX 64
#define FINS_MAX 1024

#define WIN_BROKER 8
#define WIN_CONF 4
#define MAX_MSG 1000
#define HEARTBEAT_MS 1000
#define RETRY_MS 20
#define TIMEOUT_MS 200
#define LATENCY_US 1000

struct qframe {
	uint64_t at;
	uint32_t len;
	uint8_t buf[FRAME_MAX];
};

/* the first copy of a dropped request, to compare with its retransmission */
struct kept {
	uint64_t seq;
	uint32_t len;
	uint8_t buf[FRAME_MAX];
};

struct fake {
	uint64_t now;		/* virtual clock, us */
	struct qframe q[QN];	/* frames for the client, FIFO */
	uint32_t q_head;
	uint32_t q_n;
	int closed;

	/* behaviour */
	int blackhole;		/* drop everything */
	int drop_third_pub;	/* drop the first copy of every 3rd new PUB */
	int fin_err;		/* answer FIN with ERR SL_E_MSG_ID */
	uint16_t busy_code;	/* answer the first copy of every new PUB with this ERR */
	int busy_always;	/* ... and every copy after it too */
	uint32_t busy_answers;
	uint16_t pub_flags;	/* header flags of the last publish received */
	int meta_v1;		/* answer METADATA as a broker older than META v2 */
	uint32_t metadatas;	/* METADATA requests received */
	uint64_t session;	/* current session; 0 = forgotten */
	uint64_t sessions;	/* sessions created */
	uint64_t next_sub_id;
	uint64_t next_msg_id;

	/* observations */
	uint32_t frames_in;
	uint32_t hellos;
	uint32_t pubs_new;
	uint32_t mpubs;
	uint32_t mpub_count;
	int mpub_data_ok;
	uint32_t subs;
	char sub_topic[SL_WIRE_NAME_MAX + 1];
	char sub_channel[SL_WIRE_NAME_MAX + 1];
	uint32_t sub_rdy;
	uint32_t fin_frames;
	uint32_t fin_n;
	uint64_t fin_ids[FINS_MAX];
	uint32_t nops;
	uint32_t rdys;
	uint32_t rdy_count;
	uint32_t reqs;
	uint32_t touches;
	uint32_t set_offsets;
	uint8_t set_offset_kind;
	uint32_t cls_session;	/* CLS of the whole session */
	uint32_t cls_sub;	/* CLS of one subscription */
	uint64_t first_seq_in_session;
	int producer;		/* the last HELLO carried a producer id */
	uint64_t max_seq;
	uint32_t seq_gaps;	/* a new sequence that is not max + 1 */
	uint32_t dup_no_flag;	/* a repeated sequence without the RETRY flag */
	uint8_t seq_state[SEQ_TRACK]; /* 1: received, answer not delivered; 2: answered */
	uint32_t outstanding;
	uint32_t max_outstanding;
	uint32_t client_in_flight_max;
	struct kept kept[KEPT_MAX];
	uint32_t n_kept;
	uint32_t retries_same;	/* retransmission identical but for the RETRY flag */
	uint32_t retries_diff;
	/* a publish left unanswered while the later ones are answered (a slow partition) */
	int hold_arm;		/* hold the next new PUB */
	uint64_t hold_seq;	/* its seq; 0: none */
	uint32_t hold_drops;	/* copies of it still to lose */
	uint64_t hold_span_max;	/* highest seq sent - hold_seq while it was unanswered */
	int seq_old;		/* like the broker: a retry WIN_BROKER or more below max_seq is
				 * answered SL_E_SEQ_OLD */
	/* MPUB_PART: the fragments of one seq put together (the broker's side, simplified) */
	uint32_t mpart_frags;	/* fragments received */
	uint32_t mpart_max_len;	/* the longest */
	uint64_t mpart_seq;
	uint32_t mpart_have;
	uint32_t mpart_got;
	uint32_t mpart_base;
	uint8_t mpart_buf[SL_WIRE_HDR_LEN + 128 + SL_WIRE_MPART_TOTAL_MAX];
};

static struct fake fk;
static struct sl_client *g_c;

static void
push(struct fake *f, const uint8_t *buf, int len)
{
	struct qframe *e;

	if (len <= 0 || f->q_n == QN) {
		fprintf(stderr, "fake: cannot queue a frame (%d)\n", len);
		abort();
	}
	e = &f->q[(f->q_head + f->q_n) % QN];
	e->at = f->now + LATENCY_US;
	e->len = (uint32_t)len;
	memcpy(e->buf, buf, (size_t)len);
	f->q_n++;
}

static struct sl_wire_hdr
answer_hdr(const struct sl_wire_hdr *req)
{
	struct sl_wire_hdr h = {
		.version = SL_WIRE_VERSION,
		.session = req->session,
		.seq = req->seq,
		.cookie = req->cookie,
	};

	return h;
}

static void
answer_ok(struct fake *f, const struct sl_wire_hdr *req, uint16_t partition, uint32_t count,
	  uint64_t id, uint64_t offset)
{
	struct sl_wire_ok ok = {
		.req_opcode = req->opcode,
		.partition = partition,
		.count = count,
		.id = id,
		.offset = offset,
	};
	struct sl_wire_hdr h = answer_hdr(req);
	uint8_t buf[FRAME_MAX];

	push(f, buf, sl_wire_encode_ok(buf, sizeof(buf), &h, &ok));
}

static void
answer_err(struct fake *f, const struct sl_wire_hdr *req, uint16_t code)
{
	struct sl_wire_hdr h = answer_hdr(req);
	uint8_t buf[FRAME_MAX];

	push(f, buf, sl_wire_encode_err(buf, sizeof(buf), &h, code, req->opcode, 0, "fake"));
}

static void
push_msg(struct fake *f, uint64_t session, uint64_t sub_id, uint64_t msg_id)
{
	struct sl_wire_hdr h = { .version = SL_WIRE_VERSION, .session = session };
	struct sl_wire_msg m = { 0 };
	uint8_t buf[FRAME_MAX];
	char data[32];

	snprintf(data, sizeof(data), "msg-%" PRIu64, msg_id);
	m.sub_id = sub_id;
	m.partition = 0;
	m.attempts = 1;
	m.msg_id = msg_id;
	m.offset = msg_id * 100;
	m.len = (uint32_t)strlen(data);
	m.data = (const uint8_t *)data;
	push(f, buf, sl_wire_encode_msg(buf, sizeof(buf), &h, &m));
}

static void
do_hello(struct fake *f, const struct sl_wire_hdr *req)
{
	struct sl_wire_welcome w = {
		.window = WIN_BROKER,
		.max_msg = MAX_MSG,
		.heartbeat_ms = HEARTBEAT_MS,
		.timeout_ms = 10000,
	};
	struct sl_wire_hdr h = answer_hdr(req);
	uint8_t buf[FRAME_MAX];

	f->hellos++;
	f->session = ++f->sessions;
	w.session = f->session;
	h.session = 0;
	memset(f->seq_state, 0, sizeof(f->seq_state));
	f->outstanding = 0;
	/* an idempotent producer's numbers go on from session to session */
	f->producer = !!(req->flags & SL_WIRE_F_PRODUCER);
	if (!f->producer)
		f->max_seq = 0;
	f->first_seq_in_session = 0;
	push(f, buf, sl_wire_encode_welcome(buf, sizeof(buf), &h, &w));
}

/* METADATA: topic "topic" has 2 partitions, this node leads them; max_record 1236 in a
 * META v2 (asked with SL_WIRE_F_META2, unless playing an older broker). */
static void
do_metadata(struct fake *f, const struct sl_wire_hdr *req, const uint8_t *body, uint32_t len)
{
	struct sl_wire_meta m = {.nparts = 2, .count = 1};
	struct sl_wire_hdr h = answer_hdr(req);
	struct sl_wire_meta_entry e = {.flags = SL_WIRE_META_F_ALL, .leader = 1,
				       .leader_port = 5150, .epoch = 7};
	struct sl_wire_metareq q;
	uint8_t buf[FRAME_MAX];

	f->metadatas++;
	if (sl_wire_decode_metareq(body, len - SL_WIRE_HDR_LEN, &q) != 0 ||
	    q.topic_len != 5 || memcmp(q.topic, "topic", 5) != 0 || q.first_partition >= 2) {
		answer_err(f, req, SL_E_TOPIC);
		return;
	}
	m.first_partition = q.first_partition;
	e.partition = q.first_partition;
	e.leader_ip = 0x0100007f;
	m.v2 = !f->meta_v1 && (req->flags & SL_WIRE_F_META2) != 0;
	e.max_record = m.v2 ? 1236 : 0;
	h.flags = req->flags;	/* the encoder sets or clears SL_WIRE_F_META2 itself */
	push(f, buf, sl_wire_encode_meta(buf, sizeof(buf), &h, &m, &e));
}

/* Compare a retransmission with the kept first copy: identical except RETRY. */
static void
check_retry(struct fake *f, const struct sl_wire_hdr *h, const uint8_t *buf, uint32_t len)
{
	struct sl_wire_hdr a, b;
	uint8_t x[FRAME_MAX];
	uint32_t i;

	for (i = 0; i < f->n_kept; i++) {
		if (f->kept[i].seq != h->seq)
			continue;
		memcpy(x, buf, len);
		b = *h;
		b.flags &= (uint16_t)~SL_WIRE_F_RETRY;
		sl_wire_encode_hdr(x, &b);
		if (sl_wire_decode_hdr(f->kept[i].buf, f->kept[i].len, &a) == 0 &&
		    !(a.flags & SL_WIRE_F_RETRY) && (h->flags & SL_WIRE_F_RETRY) &&
		    f->kept[i].len == len && memcmp(f->kept[i].buf, x, len) == 0)
			f->retries_same++;
		else
			f->retries_diff++;
		f->kept[i] = f->kept[--f->n_kept];
		return;
	}
}

static int
fake_send(void *x, const void *p, uint32_t len);

/* An MPUB_PART: kept until its MPUB is complete, which then goes through fake_send as
 * one MPUB frame with the fragments' header. */
static void
fake_mpart(struct fake *f, const struct sl_wire_hdr *h, const uint8_t *body, uint32_t len)
{
	struct sl_wire_mpart m;
	struct sl_wire_hdr mh = *h;
	uint8_t *b = f->mpart_buf + SL_WIRE_HDR_LEN;

	if (sl_wire_decode_mpart(body, h->body_len, &m) != 0)
		return;
	f->mpart_frags++;
	if (len > f->mpart_max_len)
		f->mpart_max_len = len;
	if (h->seq != f->mpart_seq) {
		f->mpart_seq = h->seq;
		f->mpart_have = 0;
		f->mpart_got = 0;
		memcpy(b, body, 4u + m.topic_len + ((m.flags & SL_WIRE_PUB_TRACE) ? 8u : 0u));
		f->mpart_base = 4u + m.topic_len + ((m.flags & SL_WIRE_PUB_TRACE) ? 8u : 0u);
		b[f->mpart_base] = (uint8_t)(m.count >> 8);
		b[f->mpart_base + 1] = (uint8_t)m.count;
		f->mpart_base += 2;
	}
	if (!(f->mpart_have & (1u << m.index))) {
		memcpy(b + f->mpart_base + m.off, m.chunk, m.chunk_len);
		f->mpart_have |= 1u << m.index;
		f->mpart_got += m.chunk_len;
	}
	if (f->mpart_have != (1u << m.nfrag) - 1 || f->mpart_got != m.total_len)
		return;
	mh.opcode = SL_OP_MPUB;
	mh.body_len = (uint16_t)(f->mpart_base + m.total_len);
	sl_wire_encode_hdr(f->mpart_buf, &mh);
	f->mpart_seq = 0;
	(void)fake_send(f, f->mpart_buf, SL_WIRE_HDR_LEN + mh.body_len);
}

static int
fake_send(void *x, const void *p, uint32_t len)
{
	struct fake *f = x;
	const uint8_t *buf = p;
	const uint8_t *body = buf + SL_WIRE_HDR_LEN;
	struct sl_wire_chan_op op;
	struct sl_wire_sub sb;
	struct sl_wire_pub pb;
	struct sl_wire_hdr h;
	const uint8_t *d;
	uint32_t i, pos, dl;
	int is_new;

	f->frames_in++;
	if (g_c != NULL && sl_client_in_flight(g_c) > f->client_in_flight_max)
		f->client_in_flight_max = sl_client_in_flight(g_c);
	if (sl_wire_decode_hdr(buf, len, &h) != 0)
		return 0;
	if (f->blackhole) {
		/* lost on the way, but its sequence number was used */
		if (h.opcode != SL_OP_HELLO && h.session == f->session && h.seq > f->max_seq)
			f->max_seq = h.seq;
		return 0;
	}
	if (h.opcode == SL_OP_HELLO) {
		do_hello(f, &h);
		return 0;
	}
	if (h.opcode == SL_OP_METADATA) {
		do_metadata(f, &h, body, len);
		return 0;
	}
	if (h.opcode == SL_OP_MPUB_PART && h.session == f->session && f->session != 0) {
		fake_mpart(f, &h, body, len);
		return 0;
	}
	if (f->session == 0 || h.session != f->session) {
		/* its number was used (the next session of a producer goes on after it) */
		if (h.seq > f->max_seq)
			f->max_seq = h.seq;
		answer_err(f, &h, SL_E_SESSION);
		return 0;
	}
	is_new = h.seq > f->max_seq;
	if (is_new) {
		if (h.seq != f->max_seq + 1)
			f->seq_gaps++;
		if (f->first_seq_in_session == 0)
			f->first_seq_in_session = h.seq;
		f->max_seq = h.seq;
		if (h.seq < SEQ_TRACK) {
			f->seq_state[h.seq] = 1;
			if (++f->outstanding > f->max_outstanding)
				f->max_outstanding = f->outstanding;
		}
	} else if (h.flags & SL_WIRE_F_RETRY) {
		check_retry(f, &h, buf, len);
	} else {
		f->dup_no_flag++;
	}

	switch (h.opcode) {
	case SL_OP_PUB:
	case SL_OP_MPUB:
		if (sl_wire_decode_pub(body, h.body_len, h.opcode == SL_OP_MPUB, &pb) != 0)
			return 0;
		f->pub_flags = h.flags;
		if (!is_new && f->seq_old && f->max_seq - h.seq >= WIN_BROKER) {
			if (h.seq == f->hold_seq)
				f->hold_seq = 0;
			answer_err(f, &h, SL_E_SEQ_OLD);
			return 0;
		}
		if (is_new && h.opcode == SL_OP_PUB && f->hold_arm) {
			f->hold_arm = 0;
			f->hold_seq = h.seq;
		}
		if (f->hold_seq != 0 && f->max_seq - f->hold_seq > f->hold_span_max)
			f->hold_span_max = f->max_seq - f->hold_seq;
		if (f->hold_seq != 0 && h.seq == f->hold_seq) {
			if (f->hold_drops > 0) {
				f->hold_drops--;
				return 0; /* lost on the way */
			}
			f->hold_seq = 0; /* this copy is answered */
		}
		if (is_new && h.opcode == SL_OP_PUB && f->drop_third_pub &&
		    ++f->pubs_new % 3 == 0 && f->n_kept < KEPT_MAX) {
			f->kept[f->n_kept].seq = h.seq;
			f->kept[f->n_kept].len = len;
			memcpy(f->kept[f->n_kept].buf, buf, len);
			f->n_kept++;
			return 0; /* lost on the way */
		}
		if ((is_new || f->busy_always) && f->busy_code != 0) {
			f->busy_answers++;
			answer_err(f, &h, f->busy_code);
			return 0;
		}
		if (h.opcode == SL_OP_MPUB && is_new) {
			f->mpubs++;
			f->mpub_count = pb.count;
			f->mpub_data_ok = 1;
			pos = 0;
			for (i = 0; sl_wire_mpub_next(&pb, &pos, &d, &dl); i++) {
				char want[16];

				snprintf(want, sizeof(want), "m%u", i);
				if (dl != strlen(want) || memcmp(d, want, dl) != 0)
					f->mpub_data_ok = 0;
			}
		}
		answer_ok(f, &h, pb.partition, pb.count, f->next_msg_id + 1,
			  f->next_msg_id * 10);
		f->next_msg_id += pb.count;
		return 0;
	case SL_OP_SUB:
		if (sl_wire_decode_sub(body, h.body_len, &sb) != 0)
			return 0;
		f->subs++;
		memcpy(f->sub_topic, sb.addr.topic, sb.addr.topic_len);
		f->sub_topic[sb.addr.topic_len] = '\0';
		memcpy(f->sub_channel, sb.addr.channel, sb.addr.channel_len);
		f->sub_channel[sb.addr.channel_len] = '\0';
		f->sub_rdy = sb.rdy;
		answer_ok(f, &h, sb.addr.partition, 0, f->next_sub_id++, 0);
		return 0;
	case SL_OP_NOP:
		f->nops++;
		answer_ok(f, &h, 0, 0, 0, 0);
		return 0;
	default:
		break;
	}
	if (sl_wire_decode_chan_op(h.opcode, body, h.body_len, &op) != 0)
		return 0;
	switch (h.opcode) {
	case SL_OP_FIN:
		f->fin_frames++;
		for (i = 0; i < op.count && f->fin_n < FINS_MAX; i++)
			f->fin_ids[f->fin_n++] = sl_wire_fin_id(&op, i);
		if (f->fin_err)
			answer_err(f, &h, SL_E_MSG_ID);
		else
			answer_ok(f, &h, op.addr.partition, op.count, 0, 0);
		return 0;
	case SL_OP_RDY:
		f->rdys++;
		f->rdy_count = op.count;
		break;
	case SL_OP_REQ:
		f->reqs++;
		break;
	case SL_OP_TOUCH:
		f->touches++;
		break;
	case SL_OP_SET_OFFSET:
		f->set_offsets++;
		f->set_offset_kind = op.kind;
		break;
	case SL_OP_CLS:
		if (op.addr.topic_len == 0)
			f->cls_session++;
		else
			f->cls_sub++;
		break;
	default:
		return 0;
	}
	answer_ok(f, &h, op.addr.partition, 0, 0, 0);
	return 0;
}

static int
fake_recv(void *x, void *buf, uint32_t cap, uint32_t timeout_us)
{
	struct fake *f = x;
	struct sl_wire_hdr h;
	struct qframe *e;

	if (f->q_n == 0 || f->q[f->q_head].at > f->now + timeout_us) {
		f->now += timeout_us;
		return 0;
	}
	e = &f->q[f->q_head];
	if (e->at > f->now)
		f->now = e->at;
	f->q_head = (f->q_head + 1) % QN;
	f->q_n--;
	if (e->len > cap)
		return -EMSGSIZE;
	memcpy(buf, e->buf, e->len);
	/* the broker's view of the window: an answered request is no longer in flight */
	if (sl_wire_decode_hdr(e->buf, e->len, &h) == 0 &&
	    (h.opcode == SL_OP_OK || h.opcode == SL_OP_ERR) && h.session == f->session &&
	    h.seq < SEQ_TRACK && f->seq_state[h.seq] == 1) {
		f->seq_state[h.seq] = 2;
		f->outstanding--;
	}
	return (int)e->len;
}

static void
fake_close(void *x)
{
	struct fake *f = x;

	f->closed++;
}

static uint64_t
fake_now(void *x)
{
	struct fake *f = x;

	return f->now;
}

static const struct sl_xport_ops fake_ops = {
	.send = fake_send,
	.recv = fake_recv,
	.close = fake_close,
	.dgram_max = NULL,
	.now_us = fake_now,
};

/* The same broker behind a transport that batches sends as the kernel UDP one does
 * (queue, then flush in order): every test runs over both. */
#define TXB_MAX 3	/* < WIN_CONF: full batches happen */

static struct {
	uint32_t n;
	uint32_t len[TXB_MAX];
	uint8_t buf[TXB_MAX][FRAME_MAX];
	uint32_t flushes;	/* flushes that sent something */
	uint32_t largest;	/* datagrams in the largest of them */
	uint32_t full;		/* batches sent because they were full */
} txb;

static int
fake_flush(void *x)
{
	uint32_t i, n = txb.n;

	txb.n = 0;
	if (n == 0)
		return 0;
	txb.flushes++;
	if (n > txb.largest)
		txb.largest = n;
	for (i = 0; i < n; i++)
		(void)fake_send(x, txb.buf[i], txb.len[i]);
	return 0;
}

static int
fake_queue(void *x, const void *p, uint32_t len)
{
	if (len > FRAME_MAX)
		return -EMSGSIZE;
	if (txb.n == TXB_MAX) {
		txb.full++;
		(void)fake_flush(x);
	}
	memcpy(txb.buf[txb.n], p, len);
	txb.len[txb.n++] = len;
	return 0;
}

static const struct sl_xport_ops fake_ops_batch = {
	.send = fake_send,
	.recv = fake_recv,
	.close = fake_close,
	.dgram_max = NULL,
	.now_us = fake_now,
	.queue = fake_queue,
	.flush = fake_flush,
};

static const struct sl_xport_ops *g_ops = &fake_ops;

/* ---- callbacks ---- */

#define PUBS 30

static struct {
	uint32_t n;
	uint32_t ok;
	int last_err;
	int errs[PUBS];
} pubcb;

static void
on_pub(void *arg, const struct sl_pub_result *res)
{
	uintptr_t i = (uintptr_t)arg;

	pubcb.n++;
	if (res->err == 0)
		pubcb.ok++;
	pubcb.last_err = res->err;
	if (i < PUBS)
		pubcb.errs[i] = res->err;
}

static struct {
	uint32_t n;
	uint64_t sub_id;
	uint64_t ids[512];
	int data_ok;
	uint64_t hold_id;	/* return 1 for this id */
	int nested_pub;		/* publish (blocking) from inside the callback */
	int nested_rc;
	int data_kept;
} msgcb;

static int
on_msg(void *arg, const struct sl_client_msg *m)
{
	char want[32], copy[32];

	snprintf(want, sizeof(want), "msg-%" PRIu64, m->id);
	if (m->len != strlen(want) || memcmp(m->data, want, m->len) != 0)
		msgcb.data_ok = 0;
	msgcb.sub_id = m->sub_id;
	if (msgcb.n < 512)
		msgcb.ids[msgcb.n] = m->id;
	msgcb.n++;
	if (msgcb.nested_pub) {
		memcpy(copy, m->data, m->len);
		msgcb.nested_rc = sl_client_pub(g_c, "topic", 0, "x", 1, NULL);
		msgcb.data_kept = memcmp(copy, m->data, m->len) == 0;
	}
	return m->id == msgcb.hold_id ? 1 : 0;
}

/* Poll until nothing is in flight (virtual time). */
static void
settle(struct sl_client *c)
{
	int i;

	for (i = 0; i < 1000 && (sl_client_in_flight(c) > 0 || fk.q_n > 0); i++)
		(void)sl_client_poll(c, 10000);
}

static int
fin_seen(uint64_t id)
{
	uint32_t i;

	for (i = 0; i < fk.fin_n; i++)
		if (fk.fin_ids[i] == id)
			return 1;
	return 0;
}

/* ---- tests ---- */

static struct sl_client_conf
test_conf(void)
{
	struct sl_client_conf conf = {
		.xport = SL_XPORT_UDP,
		.broker_ip = "127.0.0.1",
		.window = WIN_CONF,
		.retry_ms = RETRY_MS,
		.timeout_ms = TIMEOUT_MS,
	};

	return conf;
}

static void
test_open_fails(void)
{
	struct sl_client_conf conf = test_conf();
	struct sl_client *c;

	memset(&fk, 0, sizeof(fk));
	fk.blackhole = 1;
	c = sl_client_open_xport(&conf, g_ops, &fk);
	CHECK(c == NULL && errno == SL_E_TIMEOUT, "open without a broker: NULL, errno %d", errno);
	CHECK(fk.closed == 1, "open failure closes the transport");
	CHECK(fk.now == (uint64_t)TIMEOUT_MS * 1000, "HELLO gave up after timeout_ms (%" PRIu64
	      " us)", fk.now);
	/* HELLO at 0, retries at 20, 60, 140 ms */
	CHECK(fk.frames_in == 4, "HELLO retransmitted with backoff (%u sends)", fk.frames_in);
}

static struct sl_client *
test_open(void)
{
	struct sl_client_conf conf = test_conf();
	const struct sl_wire_welcome *w;
	struct sl_client *c;

	memset(&fk, 0, sizeof(fk));
	fk.next_sub_id = 77;
	c = sl_client_open_xport(&conf, g_ops, &fk);
	CHECK(c != NULL, "open over the fake transport");
	if (c == NULL)
		exit(1);
	g_c = c;
	w = sl_client_welcome(c);
	CHECK(fk.hellos == 1 && w->session == 1 && w->window == WIN_BROKER &&
	      w->max_msg == MAX_MSG, "HELLO -> WELCOME (session %" PRIu64 ")", w->session);
	return c;
}

static void
test_pub(struct sl_client *c)
{
	struct sl_pub_result res;
	char big[MAX_MSG + 1];
	uint32_t before;
	int rc;

	rc = sl_client_pub(c, "topic", 3, "hello", 5, &res);
	CHECK(rc == 0 && res.err == 0 && res.partition == 3 && res.count == 1 && res.id == 1,
	      "blocking PUB answered (rc %d, id %" PRIu64 ")", rc, res.id);
	CHECK(fk.first_seq_in_session == 1 && fk.max_seq == 1, "first request has seq 1");
	CHECK(fk.producer, "HELLO carried a producer id (flag 0x0004)");

	memset(big, 'a', sizeof(big));
	before = fk.frames_in;
	rc = sl_client_pub(c, "topic", 0, big, MAX_MSG + 1, &res);
	CHECK(rc == -SL_E_TOO_BIG && fk.frames_in == before, "message > max_msg refused locally");
	rc = sl_client_pub(c, "topic", 0, big, MAX_MSG, &res);
	CHECK(rc == 0, "message of exactly max_msg accepted");
	{
		static const void *datas[32];
		uint32_t lens[32], i, frags;

		for (i = 0; i < 32; i++) {
			datas[i] = big;
			lens[i] = MAX_MSG;
		}
		before = fk.frames_in;
		frags = fk.mpart_frags;
		rc = sl_client_mpub(c, "topic", 0, 2, datas, lens, &res);
		CHECK(rc == 0 && res.count == 2 && fk.mpart_frags == frags + 2 &&
			      fk.frames_in == before + 3 &&
			      fk.mpart_max_len <= SL_WIRE_DGRAM_MAX_STD,
		      "MPUB over the datagram limit: 2 MPUB_PART fragments of "
			      "at most a datagram, one MPUB (rc %d, count %u, %u bytes)", rc,
			      res.count, fk.mpart_max_len);
		before = fk.frames_in;
		rc = sl_client_mpub(c, "topic", 0, 22, datas, lens, &res);
		CHECK(rc == 0 && res.count == 22 && fk.mpart_frags == frags + 2 + 16,
		      "MPUB of 22 x max_msg: 16 fragments, the most (rc %d, frags %u)", rc,
		      fk.mpart_frags - frags - 2);
		before = fk.frames_in;
		rc = sl_client_mpub(c, "topic", 0, 23, datas, lens, &res);
		CHECK(rc == -SL_E_TOO_BIG && fk.frames_in == before,
		      "an MPUB needing 17 fragments refused locally (%d)", rc);
	}
	rc = sl_client_pub(c, "bad topic", 0, "x", 1, &res);
	CHECK(rc == -SL_E_NAME, "invalid topic name refused");
}

static void
test_mpub(struct sl_client *c)
{
	const void *datas[3] = { "m0", "m1", "m2" };
	uint32_t lens[3] = { 2, 2, 2 };
	struct sl_pub_result res;
	uint32_t mpubs = fk.mpubs;
	int rc;

	rc = sl_client_mpub(c, "topic", 1, 3, datas, lens, &res);
	CHECK(rc == 0 && res.count == 3, "MPUB of 3 answered (count %u)", res.count);
	CHECK(fk.mpubs == mpubs + 1 && fk.mpub_count == 3 && fk.mpub_data_ok,
	      "broker decoded one MPUB with the 3 messages");

	/* a split MPUB whose fragments are lost: the retransmission sends them all again */
	{
		static char big[MAX_MSG];
		const void *bd[3] = {big, big, big};
		uint32_t bl[3] = {MAX_MSG, MAX_MSG, MAX_MSG}, frags = fk.mpart_frags, i;
		struct sl_client_stats st0, st1;

		memset(big, 'b', sizeof(big));
		memset(&pubcb, 0, sizeof(pubcb));
		sl_client_get_stats(c, &st0);
		st1 = st0;
		fk.blackhole = 1;
		CHECK(sl_client_pub_async(c, "topic", 0, 3, bd, bl, on_pub, NULL) == 0,
		      "split MPUB of 3 x max_msg queued");
		for (i = 0; i < 20 && st1.retries == st0.retries; i++) {
			fk.now += sl_client_next_timer_us(c);
			(void)sl_client_poll(c, 0);
			sl_client_get_stats(c, &st1);
		}
		fk.blackhole = 0;
		settle(c);
		CHECK(pubcb.n == 1 && pubcb.ok == 1 && st1.retries == st0.retries + 1 &&
			      fk.mpart_frags - frags == 3,
		      "its 3 fragments lost, all resent: answered once (%u fragments arrived)",
		      fk.mpart_frags - frags);
		/* prompt answers bring the retransmission timeout back (later tests rely on
		 * retry_ms) */
		for (i = 0; i < 40; i++)
			(void)sl_client_pub_async(c, "topic", 0, 1, bd, bl, on_pub, NULL);
		settle(c);
	}
}

static void
test_pipeline_and_retry(struct sl_client *c)
{
	struct sl_client_stats st0, st1;
	uintptr_t i;
	int rc = 0;
	char m[16];

	sl_client_get_stats(c, &st0);
	memset(&pubcb, 0, sizeof(pubcb));
	fk.drop_third_pub = 1;
	fk.pubs_new = 0;
	fk.max_outstanding = 0;
	fk.client_in_flight_max = 0;
	for (i = 0; i < PUBS && rc == 0; i++) {
		const void *d[1] = { m };
		uint32_t l[1];

		l[0] = (uint32_t)snprintf(m, sizeof(m), "p%u", (unsigned)i);
		rc = sl_client_pub_async(c, "topic", 0, 1, d, l, on_pub, (void *)i);
		if (sl_client_in_flight(c) > WIN_CONF)
			rc = -1;
	}
	CHECK(rc == 0, "%d pipelined publishes queued", PUBS);
	rc = sl_client_flush(c, 10000);
	CHECK(rc == 0 && sl_client_in_flight(c) == 0, "flush: everything answered");
	CHECK(pubcb.n == PUBS && pubcb.ok == PUBS, "every callback ran with success (%u/%u)",
	      pubcb.ok, pubcb.n);
	CHECK(fk.max_outstanding == WIN_CONF,
	      "broker saw at most the window in flight, and the window was used (%u)",
	      fk.max_outstanding);
	CHECK(fk.client_in_flight_max <= WIN_CONF, "client never had more than the window (%u)",
	      fk.client_in_flight_max);
	CHECK(fk.retries_same == PUBS / 3 && fk.retries_diff == 0 && fk.n_kept == 0,
	      "every dropped PUB retried with the same seq and bytes but RETRY (%u same, %u diff)",
	      fk.retries_same, fk.retries_diff);
	sl_client_get_stats(c, &st1);
	CHECK(st1.retries - st0.retries == PUBS / 3, "stats count %" PRIu64 " retries",
	      st1.retries - st0.retries);
	CHECK(fk.seq_gaps == 0 && fk.dup_no_flag == 0,
	      "sequence numbers increase by one per request, repeats only as retries");
	fk.drop_third_pub = 0;
}

/*
 * One publish stays unanswered (its partition is slow, its copies are lost) while the later
 * ones are answered at once. The broker tells a retry from a new request only within its
 * announced window of sequence numbers (idempotency window, producer table: docs/protocol.md
 * section 8.4): a retry of a seq that is window or more below the highest seq sent is
 * SL_E_SEQ_OLD. So the client may not send a new seq window or more above the oldest one
 * still in flight, whatever the count in flight.
 */
static void
test_window_span(void)
{
	struct sl_client_conf conf = test_conf();
	struct sl_client *c;
	uintptr_t i;
	int rc = 0;
	char m[16];

	/* a client of its own: the first retransmission after retry_ms */
	memset(&fk, 0, sizeof(fk));
	c = sl_client_open_xport(&conf, g_ops, &fk);
	CHECK(c != NULL, "open for the window span");
	if (c == NULL)
		return;
	g_c = c;
	memset(&pubcb, 0, sizeof(pubcb));
	fk.hold_arm = 1;
	fk.hold_seq = 0;
	fk.hold_drops = 1;
	fk.hold_span_max = 0;
	fk.seq_old = 1;
	for (i = 0; i < PUBS && rc == 0; i++) {
		const void *d[1] = { m };
		uint32_t l[1];

		l[0] = (uint32_t)snprintf(m, sizeof(m), "s%u", (unsigned)i);
		rc = sl_client_pub_async(c, "topic", 0, 1, d, l, on_pub, (void *)i);
	}
	CHECK(rc == 0, "%d pipelined publishes queued behind a held one", PUBS);
	rc = sl_client_flush(c, 10000);
	CHECK(rc == 0 && pubcb.n == PUBS && pubcb.ok == PUBS,
	      "flush: every publish answered with success (%u/%u)", pubcb.ok, pubcb.n);
	CHECK(fk.hold_drops == 0 && fk.hold_seq == 0 && pubcb.errs[0] == 0,
	      "the held publish was retried and taken (drops left %u, err %d)", fk.hold_drops,
	      pubcb.errs[0]);
	CHECK(fk.hold_span_max < WIN_CONF,
	      "no seq sent window (%u) or more above the oldest in flight (span %" PRIu64 ")",
	      WIN_CONF, fk.hold_span_max);
	g_c = NULL;
	sl_client_close(c);
}

/* Busy answers (SL_E_FULL, SL_E_WRITE_DISABLED, SL_E_QUORUM): the publish goes again,
 * same seq, until it is taken; any other error ends it. */
static void
test_busy(struct sl_client *c)
{
	static const uint16_t codes[] = { SL_E_FULL, SL_E_WRITE_DISABLED };
	struct sl_client_stats st0, st1;
	struct sl_pub_result res;
	uint32_t i;
	int rc;

	for (i = 0; i < 2; i++) {
		sl_client_get_stats(c, &st0);
		fk.busy_code = codes[i];
		fk.busy_answers = 0;
		rc = sl_client_pub(c, "topic", 0, "busy", 4, &res);
		sl_client_get_stats(c, &st1);
		CHECK(rc == 0 && res.err == 0 && fk.busy_answers == 1 &&
		      st1.busy_retries - st0.busy_retries == 1,
		      "a publish answered %s is sent again and taken (rc %d)",
		      sl_strerror(-(int)codes[i]), rc);
	}
	fk.busy_code = SL_E_WRITE_DISABLED;
	fk.busy_always = 1;
	fk.busy_answers = 0;
	rc = sl_client_pub(c, "topic", 0, "paused", 6, &res);
	CHECK(rc == -SL_E_WRITE_DISABLED && fk.busy_answers >= 2,
	      "busy until the timeout: ends with that answer, not a timeout (rc %d, %u tries)",
	      rc, fk.busy_answers);
	fk.busy_always = 0;
	fk.busy_code = SL_E_QUORUM;
	fk.busy_answers = 0;
	rc = sl_client_pub(c, "topic", 0, "quorum", 6, &res);
	CHECK(rc == 0 && fk.busy_answers == 1, "SL_E_QUORUM (an ISR shrink rolled it back) is "
	      "busy too: sent again and taken (rc %d)", rc);
	fk.busy_code = SL_E_TOO_BIG;
	rc = sl_client_pub(c, "topic", 0, "big", 3, &res);
	CHECK(rc == -SL_E_TOO_BIG, "SL_E_TOO_BIG ends the publish (rc %d)", rc);
	fk.busy_code = 0;
}

static void
test_timeout(struct sl_client *c)
{
	struct sl_client_stats st0, st1;
	struct sl_pub_result res;
	uint64_t t0 = fk.now;
	uint32_t frames0 = fk.frames_in;
	int rc;

	sl_client_get_stats(c, &st0);
	fk.blackhole = 1;
	rc = sl_client_pub(c, "topic", 0, "lost", 4, &res);
	fk.blackhole = 0;
	sl_client_get_stats(c, &st1);
	CHECK(rc == -SL_E_TIMEOUT && res.err == -SL_E_TIMEOUT, "unanswered PUB: -SL_E_TIMEOUT");
	CHECK(fk.now - t0 == (uint64_t)TIMEOUT_MS * 1000, "given up after timeout_ms (%" PRIu64
	      " us)", fk.now - t0);
	CHECK(st1.timeouts - st0.timeouts == 1, "timeouts counter");
	/* the first timeout follows the round trip of earlier answers (at least RETRY_MS),
	 * then doubles: with 20 ms, sent at 0, retried at 20, 60 and 140 ms */
	CHECK(st0.rto_us >= RETRY_MS * 1000, "first timeout %" PRIu64 " us >= retry_ms",
	      st0.rto_us);
	{
		uint64_t at = st0.rto_us, step = st0.rto_us, want = 0;

		while (at < (uint64_t)TIMEOUT_MS * 1000) {
			want++;
			step *= 2;
			at += step;
		}
		CHECK(st1.retries - st0.retries == want && fk.frames_in - frames0 == want + 1,
		      "exponential backoff from %" PRIu64 " us: %" PRIu64 " retries (want %"
		      PRIu64 ")", st0.rto_us, st1.retries - st0.retries, want);
	}
	CHECK(sl_client_in_flight(c) == 0, "timed out request left the window");
}

static void
test_heartbeat(struct sl_client *c)
{
	uint32_t nops = fk.nops;
	uint64_t t0 = fk.now;
	int rc;

	rc = sl_client_poll(c, 3 * HEARTBEAT_MS * 1000);
	CHECK(rc == 1 && fk.nops == nops + 1, "idle: one NOP heartbeat (poll %d)", rc);
	CHECK(fk.now - t0 <= (uint64_t)HEARTBEAT_MS * 1000 + LATENCY_US,
	      "heartbeat after heartbeat_ms of silence");
	CHECK(sl_client_in_flight(c) == 0, "NOP answered");
}

static int64_t
test_sub_and_fin(struct sl_client *c)
{
	struct sl_client_stats st0, st1;
	int64_t sub;
	uint64_t id;
	int rc, all;

	sub = sl_client_sub(c, "topic", 0, "chan", SL_WIRE_SUB_ORDERED, 300, on_msg, NULL);
	CHECK(sub == 1, "SUB returns the local id 1 (%" PRId64 ")", sub);
	CHECK(fk.subs == 1 && strcmp(fk.sub_topic, "topic") == 0 &&
	      strcmp(fk.sub_channel, "chan") == 0 && fk.sub_rdy == 300,
	      "broker got the SUB address and credit");

	/* 10 messages in one burst: one callback each, one FIN frame for the 9 returning 0 */
	memset(&msgcb, 0, sizeof(msgcb));
	msgcb.data_ok = 1;
	msgcb.hold_id = 105;
	fk.fin_frames = 0;
	fk.fin_n = 0;
	for (id = 100; id < 110; id++)
		push_msg(&fk, fk.session, 77, id);
	rc = sl_client_poll(c, 10000);
	CHECK(rc == 10 && msgcb.n == 10 && msgcb.data_ok && msgcb.sub_id == (uint64_t)sub,
	      "10 MSG frames -> 10 callbacks with data and the local sub id (poll %d)", rc);
	all = fk.fin_n == 9;
	for (id = 100; id < 110; id++)
		if (id != 105 && !fin_seen(id))
			all = 0;
	CHECK(fk.fin_frames == 1 && all && !fin_seen(105),
	      "one FIN frame with the 9 ids whose callback returned 0 (%u frames, %u ids)",
	      fk.fin_frames, fk.fin_n);
	rc = sl_client_fin(c, (uint64_t)sub, 105);
	CHECK(rc == 0 && fk.fin_frames == 2 && fk.fin_n == 10 && fin_seen(105),
	      "sl_client_fin outside a poll sends at once");
	settle(c);

	/* 200 messages: FIN frames of at most SL_WIRE_FIN_MAX ids */
	fk.fin_frames = 0;
	fk.fin_n = 0;
	msgcb.n = 0;
	msgcb.hold_id = 0;
	for (id = 1000; id < 1200; id++)
		push_msg(&fk, fk.session, 77, id);
	rc = sl_client_poll(c, 10000);
	all = 1;
	for (id = 1000; id < 1200; id++)
		if (!fin_seen(id))
			all = 0;
	CHECK(rc == 200 && msgcb.n == 200, "200 MSG frames handled in one poll (%d)", rc);
	CHECK(fk.fin_frames == 2 && fk.fin_n == 200 && all,
	      "200 FINs in 2 frames (%u frames, %u ids)", fk.fin_frames, fk.fin_n);
	settle(c);

	/* a redelivery while the first copy's FIN is still pending is a duplicate */
	sl_client_get_stats(c, &st0);
	msgcb.n = 0;
	push_msg(&fk, fk.session, 77, 2000);
	push_msg(&fk, fk.session, 77, 2000);
	(void)sl_client_poll(c, 10000);
	sl_client_get_stats(c, &st1);
	CHECK(msgcb.n == 1 && st1.dup_msgs - st0.dup_msgs == 1,
	      "duplicate MSG not delivered twice");
	settle(c);

	/* FIN answered with ERR SL_E_MSG_ID: counted, not fatal */
	sl_client_get_stats(c, &st0);
	fk.fin_err = 1;
	push_msg(&fk, fk.session, 77, 3000);
	(void)sl_client_poll(c, 10000);
	settle(c);
	fk.fin_err = 0;
	sl_client_get_stats(c, &st1);
	CHECK(st1.errors - st0.errors == 1 && fk.hellos == 1 && sl_client_in_flight(c) == 0,
	      "ERR SL_E_MSG_ID for a FIN is counted and not fatal");

	/* MSG for an unknown subscription, or another session: not delivered */
	msgcb.n = 0;
	push_msg(&fk, fk.session, 999, 4000);
	push_msg(&fk, fk.session + 5, 77, 4001);
	(void)sl_client_poll(c, 10000);
	CHECK(msgcb.n == 0, "MSG for an unknown sub id or session ignored");

	/* a blocking call from inside a message callback: data stays valid */
	msgcb.n = 0;
	msgcb.nested_pub = 1;
	push_msg(&fk, fk.session, 77, 5000);
	(void)sl_client_poll(c, 10000);
	msgcb.nested_pub = 0;
	CHECK(msgcb.n == 1 && msgcb.nested_rc == 0 && msgcb.data_kept,
	      "blocking PUB from a message callback works, message data stays valid");
	settle(c);
	CHECK(fin_seen(5000), "message FINed after the nested call");
	return sub;
}

static void
test_chan_ops(struct sl_client *c, int64_t sub)
{
	int rc;

	rc = sl_client_rdy(c, (uint64_t)sub, 50);
	CHECK(rc == 0, "RDY queued");
	rc = sl_client_req(c, (uint64_t)sub, 7, 100);
	CHECK(rc == 0, "REQ queued");
	rc = sl_client_touch(c, (uint64_t)sub, 7);
	CHECK(rc == 0, "TOUCH queued");
	CHECK(sl_client_flush(c, 10000) == 0, "flush");
	CHECK(fk.rdys == 1 && fk.rdy_count == 50 && fk.reqs == 1 && fk.touches == 1,
	      "broker got RDY 50, REQ and TOUCH");
	rc = sl_client_set_offset(c, (uint64_t)sub, SL_OFF_COUNT, 0);
	CHECK(rc == 0 && fk.set_offsets == 1 && fk.set_offset_kind == SL_OFF_COUNT,
	      "SET_OFFSET count 0 answered");
	CHECK(sl_client_fin(c, 12345, 1) == -ENOENT, "FIN on an unknown subscription: -ENOENT");
}

static void
test_session_reset(struct sl_client *c, int64_t sub)
{
	uint32_t subs0 = fk.subs;
	struct sl_pub_result res;
	uintptr_t i;
	int rc;

	/* the broker forgets the session: requests in flight fail with SL_E_SESSION */
	memset(&pubcb, 0, sizeof(pubcb));
	fk.session = 0;
	fk.next_sub_id = 88;
	for (i = 0; i < 3; i++) {
		const void *d[1] = { "s" };
		uint32_t l[1] = { 1 };

		(void)sl_client_pub_async(c, "topic", 0, 1, d, l, on_pub, (void *)i);
	}
	settle(c);
	CHECK(pubcb.n == 3 && pubcb.ok == 0 && pubcb.errs[0] == -SL_E_SESSION &&
	      pubcb.errs[1] == -SL_E_SESSION && pubcb.errs[2] == -SL_E_SESSION,
	      "requests in flight failed with -SL_E_SESSION");
	CHECK(fk.hellos == 2 && sl_client_welcome(c)->session == 2,
	      "re-HELLO: new session %" PRIu64, sl_client_welcome(c)->session);
	CHECK(fk.subs == subs0 + 1 && strcmp(fk.sub_topic, "topic") == 0 &&
	      strcmp(fk.sub_channel, "chan") == 0 && fk.sub_rdy == 50,
	      "re-SUB of the subscription with its current credit");
	CHECK(fk.producer && fk.first_seq_in_session > 1,
	      "with a producer id the sequence goes on in the new session (from %" PRIu64 ")",
	      fk.first_seq_in_session);

	/* the broker's new sub id 88 maps to the same local id */
	memset(&msgcb, 0, sizeof(msgcb));
	msgcb.data_ok = 1;
	push_msg(&fk, fk.session, 88, 6000);
	push_msg(&fk, fk.session, 77, 6001); /* the old id is gone */
	(void)sl_client_poll(c, 10000);
	CHECK(msgcb.n == 1 && msgcb.ids[0] == 6000 && msgcb.sub_id == (uint64_t)sub,
	      "MSG of the new broker sub id delivered with the stable local id");
	settle(c);
	CHECK(fin_seen(6000), "and FINed in the new session");

	rc = sl_client_pub(c, "topic", 0, "after", 5, &res);
	CHECK(rc == 0, "publishing works in the new session");
	CHECK(fk.seq_gaps == 0 && fk.dup_no_flag == 0,
	      "sequence still contiguous (%u gaps, %u dups)", fk.seq_gaps, fk.dup_no_flag);
}

/* sl_client_fd and sl_client_next_timer_us: what an event loop needs to drive a client. */
static void
test_next_timer(struct sl_client *c)
{
	struct sl_client_stats st0, st1;
	const void *d[1] = { "t" };
	uint32_t l[1] = { 1 };
	uint64_t t, waited;
	int i;

	CHECK(sl_client_fd(c) == -1, "a transport without a descriptor: sl_client_fd -1");
	settle(c);
	t = sl_client_next_timer_us(c);
	CHECK(t > 0 && t <= (uint64_t)HEARTBEAT_MS * 1000,
	      "idle: next timer at most the heartbeat (%" PRIu64 " us)", t);
	fk.blackhole = 1;
	memset(&pubcb, 0, sizeof(pubcb));
	CHECK(sl_client_pub_async(c, "topic", 0, 1, d, l, on_pub, NULL) == 0, "publish queued");
	if (g_ops->queue != NULL) {
		t = sl_client_next_timer_us(c);
		CHECK(t == 0 && txb.n == 1, "in the send batch: poll now (%" PRIu64 " us)", t);
		(void)sl_client_poll(c, 0);
		CHECK(txb.n == 0, "the poll sent it");
	}
	t = sl_client_next_timer_us(c);
	CHECK(t > 0 && t <= (uint64_t)RETRY_MS * 1000,
	      "a request unanswered: next timer is its retransmission (%" PRIu64 " us)", t);
	/* an event loop with a silent descriptor: sleep as told, poll, ask again */
	sl_client_get_stats(c, &st0);
	st1 = st0;
	for (i = 0, waited = 0; i < 20 && st1.retries == st0.retries; i++) {
		t = sl_client_next_timer_us(c);
		fk.now += t;
		waited += t;
		(void)sl_client_poll(c, 0);
		sl_client_get_stats(c, &st1);
	}
	CHECK(st1.retries == st0.retries + 1 && waited <= (uint64_t)RETRY_MS * 1000,
	      "polled when it says: retransmitted after %" PRIu64 " us, never late (%d polls)",
	      waited, i);
	t = sl_client_next_timer_us(c);
	CHECK(t > 0 && t <= 2 * (uint64_t)RETRY_MS * 1000,
	      "then the backed-off retransmission (%" PRIu64 " us)", t);
	fk.blackhole = 0;
	settle(c);
	CHECK(pubcb.n == 1 && pubcb.ok == 1, "and the publish is answered");
	/* that late answer raised the round trip; prompt answers bring the first
	 * retransmission timeout back to retry_ms (the next tests lose datagrams) */
	for (i = 0; i < 40; i++)
		(void)sl_client_pub_async(c, "topic", 0, 1, d, l, on_pub, NULL);
	settle(c);
	sl_client_get_stats(c, &st1);
	CHECK(st1.rto_us == (uint64_t)RETRY_MS * 1000,
	      "prompt answers: first retransmission timeout back to retry_ms (%" PRIu64 " us)",
	      st1.rto_us);
}

/* sl_client_metadata: META v2 with max_record from a broker that knows it, 1 from an
 * older one, errors; the session goes on. */
static void
test_metadata(struct sl_client *c)
{
	struct sl_wire_meta_entry e;
	uint32_t asked = fk.metadatas;
	int rc;

	settle(c);
	memset(&e, 0xff, sizeof(e));
	rc = sl_client_metadata(c, "topic", 1, &e);
	CHECK(rc == 0 && e.partition == 1 && e.max_record == 1236 && e.epoch == 7 &&
		      e.flags == SL_WIRE_META_F_ALL && fk.metadatas == asked + 1,
	      "sl_client_metadata: META v2, partition 1, max_record 1236 (rc %d)", rc);
	fk.meta_v1 = 1;
	rc = sl_client_metadata(c, "topic", 0, &e);
	CHECK(rc == 1 && e.partition == 0 && e.max_record == 0,
	      "a broker older than META v2: 1, max_record 0 (rc %d)", rc);
	fk.meta_v1 = 0;
	CHECK(sl_client_metadata(c, "nope", 0, &e) == -SL_E_TOPIC &&
		      sl_client_metadata(c, "topic", 2, &e) == -SL_E_TOPIC,
	      "unknown topic, partition past the last: -SL_E_TOPIC");
	CHECK(sl_client_metadata(c, "a/b", 0, &e) == -SL_E_NAME &&
		      sl_client_metadata(c, NULL, 0, &e) == -SL_E_INVAL,
	      "bad name, no topic: refused without asking");
	fk.blackhole = 1;
	CHECK(sl_client_metadata(c, "topic", 0, &e) == -SL_E_TIMEOUT, "no answer: -SL_E_TIMEOUT");
	fk.blackhole = 0;
	rc = sl_client_pub(c, "topic", 0, "x", 1, NULL);
	CHECK(rc == 0, "the session goes on: a blocking PUB answered (%d)", rc);
}

static void
test_unsub_close(struct sl_client *c, int64_t sub)
{
	int rc;

	rc = sl_client_unsub(c, (uint64_t)sub);
	CHECK(rc == 0 && fk.cls_sub == 1, "unsubscribe sends CLS of the subscription");
	msgcb.n = 0;
	push_msg(&fk, fk.session, 88, 7000);
	(void)sl_client_poll(c, 10000);
	CHECK(msgcb.n == 0, "no delivery after unsubscribe");
	CHECK(sl_client_unsub(c, (uint64_t)sub) == -ENOENT, "second unsubscribe: -ENOENT");

	g_c = NULL;
	sl_client_close(c);
	CHECK(fk.cls_session == 1 && fk.closed == 1, "close sends CLS of the session and closes");
}

/* fail_busy: a busy answer ends the publish at once with it (no resend, no time-out),
 * and the publishes carry NORESEND so the broker opens no order hole for them. */
static void
test_fail_busy(void)
{
	struct sl_client_conf conf = test_conf();
	struct sl_client_stats st0, st1;
	struct sl_pub_result res;
	struct sl_client *c;
	uint64_t t0;
	int rc;

	memset(&fk, 0, sizeof(fk));
	conf.fail_busy = 1;
	c = sl_client_open_xport(&conf, g_ops, &fk);
	CHECK(c != NULL, "open with fail_busy");
	if (c == NULL)
		return;
	g_c = c;
	rc = sl_client_pub(c, "topic", 0, "ok", 2, &res);
	CHECK(rc == 0 && (fk.pub_flags & SL_WIRE_F_NORESEND),
	      "fail_busy: publishes carry NORESEND (flags 0x%x)", fk.pub_flags);
	sl_client_get_stats(c, &st0);
	fk.busy_code = SL_E_FULL;
	fk.busy_answers = 0;
	t0 = fk.now;
	rc = sl_client_pub(c, "topic", 0, "full", 4, &res);
	sl_client_get_stats(c, &st1);
	CHECK(rc == -SL_E_FULL && res.err == -SL_E_FULL && fk.busy_answers == 1,
	      "a full partition's answer ends the publish (rc %d, %u busy answers)", rc,
	      fk.busy_answers);
	CHECK(fk.now - t0 < (uint64_t)RETRY_MS * 1000, "at once (%" PRIu64 " us), not after a "
	      "resend or the time-out", fk.now - t0);
	CHECK(st1.busy_failed - st0.busy_failed == 1 && st1.timeouts == st0.timeouts &&
	      st1.busy_retries == st0.busy_retries, "counted busy_failed, not a time-out");
	fk.busy_code = 0;
	g_c = NULL;
	sl_client_close(c);
}

/*
 * Over a batching transport (a batch of TXB_MAX, less than the window): publishes queued
 * outside a poll wait in the send batch (next timer 0) but for a batch that fills, which
 * leaves at once; the rest leaves at the next poll, in order.
 */
static void
test_batching(struct sl_client *c)
{
	const void *d[1] = { "b" };
	uint32_t l[1] = { 1 };
	uint32_t i, f0, fl0, full0;
	int rc = 0;

	settle(c);
	memset(&pubcb, 0, sizeof(pubcb));
	fk.seq_gaps = 0;
	fk.dup_no_flag = 0;
	f0 = fk.frames_in;
	fl0 = txb.flushes;
	full0 = txb.full;
	for (i = 0; i < TXB_MAX && rc == 0; i++)
		rc = sl_client_pub_async(c, "topic", 0, 1, d, l, on_pub, NULL);
	CHECK(rc == 0 && fk.frames_in == f0 && txb.n == TXB_MAX,
	      "%u publishes queued outside a poll wait in the send batch (%u sent, %u queued)",
	      TXB_MAX, fk.frames_in - f0, txb.n);
	CHECK(sl_client_next_timer_us(c) == 0, "next timer 0 while the batch waits");
	rc = sl_client_pub_async(c, "topic", 0, 1, d, l, on_pub, NULL);
	CHECK(rc == 0 && txb.full == full0 + 1 && fk.frames_in == f0 + TXB_MAX && txb.n == 1,
	      "one more: the full batch left at once (%u sent), the new one waits",
	      fk.frames_in - f0);
	(void)sl_client_poll(c, 0);
	CHECK(txb.n == 0 && txb.flushes == fl0 + 2 && fk.frames_in == f0 + TXB_MAX + 1,
	      "the next poll sends the rest (%u flushes, %u frames)", txb.flushes - fl0,
	      fk.frames_in - f0);
	settle(c);
	CHECK(pubcb.n == TXB_MAX + 1 && pubcb.ok == TXB_MAX + 1 && txb.n == 0,
	      "every publish answered (%u/%u), nothing left in the batch", pubcb.ok, pubcb.n);
	CHECK(fk.seq_gaps == 0 && fk.dup_no_flag == 0,
	      "batched sends keep the order (no seq gap, no repeat without RETRY)");
}

static int
run_all(void)
{
	struct sl_client *c;
	int64_t sub;

	test_open_fails();
	c = test_open();
	test_pub(c);
	test_mpub(c);
	test_next_timer(c);
	test_pipeline_and_retry(c);
	test_busy(c);
	test_timeout(c);
	test_heartbeat(c);
	sub = test_sub_and_fin(c);
	test_chan_ops(c, sub);
	test_session_reset(c, sub);
	test_metadata(c);
	test_unsub_close(c, sub);
	test_fail_busy();
	test_window_span();
	return 0;
}

int
main(void)
{
	struct sl_client *c;

	printf("# over a transport that sends each datagram at once\n");
	g_ops = &fake_ops;
	run_all();
	printf("# over a transport that batches sends (queue + flush)\n");
	g_ops = &fake_ops_batch;
	run_all();
	c = test_open();
	test_batching(c);
	sl_client_close(c);

	printf("%d passed, %d failed\n", passed, failed);
	return failed == 0 ? 0 : 1;
}
