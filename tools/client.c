/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * libsluice: the client side of the wire protocol (see client.h for the API contract).
 *
 * Requests. Every request (PUB, MPUB, SUB, RDY, FIN, REQ, TOUCH, CLS, SET_OFFSET, NOP)
 * occupies one slot of a fixed table of `window` slots allocated at open; a slot keeps
 * the encoded frame so that a retransmission resends the identical bytes with only the
 * SL_WIRE_F_RETRY header flag added. The session, sequence and cookie header fields are
 * written when the request is first sent (a request created while there is no session,
 * during a re-HELLO, waits in the QUEUED state; so does one that would number a seq
 * `window` or more above the oldest request still unanswered: the broker tells a retry
 * from a new request only within that span, docs/protocol.md section 8 rule 5, can_send).
 * The cookie is (epoch << 32 | slot + 1):
 * answers find their slot in O(1) and a late answer from an older session or for an
 * older request in the same slot (different seq) is ignored. Retransmission backs off
 * exponentially from the first timeout to 1 s; the first timeout follows the measured
 * round trip of answers (srtt + 4 x rttvar, RFC 6298, never below retry_ms: rtt_sample);
 * a request unanswered after timeout_ms fails with -SL_E_TIMEOUT.
 *
 * Busy answers. A publish answered SL_E_FULL, SL_E_WRITE_DISABLED, SL_E_QUORUM or
 * SL_E_OUT_OF_ORDER
 * (nothing written, nothing remembered by the broker) waits; one client-wide timer
 * (backing off like a retransmission, reset by an OK of such a publish) then sends every
 * waiting publish again at once, lowest seq first, so the broker can take them in the
 * session's order (docs/protocol.md section 8, rule 10). A publish still refused at its
 * timeout ends with that answer (busy_failed, not a time-out); with conf->fail_busy it
 * ends with the first busy answer at once, so the application sees back pressure as it
 * comes (a full partition) and decides itself when to publish again.
 *
 * Messages. A MSG is delivered to its subscription's callback; when the callback returns
 * 0 the id joins the subscription's FIN batch, sent as one FIN frame (up to
 * SL_WIRE_FIN_MAX ids) at the end of the poll iteration, or at once when the batch is
 * full. Subscription ids seen by the application are local and stable: a new session
 * re-subscribes everything and only the broker's ids change.
 *
 * Re-entrancy. Callbacks may call any function of this API except sl_client_close().
 * A call that must wait (blocking calls, or any call while the window is full) polls
 * from inside the callback. While a message callback runs, its data stays valid
 * (nested polls receive into a second buffer), and MSG frames received by nested polls
 * are dropped without FIN: the broker redelivers them after its message timeout.
 *
 * Following the leader (with several addresses). NOT_LEADER for a request marks it
 * waiting (like a busy answer, not retransmitted) and asks for a switch; the switch runs
 * from poll_once once every other request sent to the old broker is answered (or after
 * SWITCH_GRACE_US), so that the old leader's OKs are not lost. A broker silent for
 * failover_us while requests wait asks for one too. The switch (leader_switch) asks the
 * current broker and the seeds with METADATA who leads the partition, moves the transport
 * there, opens a session and puts every unanswered publish and SUB back in the QUEUED
 * state: send_queued sends them in creation order with new seqs, so no publish overtakes
 * an earlier one; other requests (FIN, RDY, REQ, TOUCH, NOP, SET_OFFSET, CLS) fail with
 * SL_E_SESSION as after a session reset. A silent broker that answers METADATA and still
 * leads keeps the session.
 *
 * Idempotent producer. HELLO carries a producer id (random at open, conf.producer_id) and
 * the sequence numbers never restart for the client's life: a publish requeued by a
 * leader switch keeps its seq, so a new leader that holds it (the old leader wrote it
 * and replicated it, the OK was lost) answers with the original id instead of writing it
 * again (docs/protocol.md section 8, rule 11). A broker that refuses such a HELLO
 * (SL_E_MALFORMED: older than producer ids) gets the HELLO of before.
 *
 * Sending in batches. A request's datagram goes to the transport's send batch
 * (ops->queue; xmit_q) and the batch leaves as one system call (the UDP transport's
 * sendmmsg) before the client waits for answers, at the end of every poll, at the end of
 * every public call that sends (but sl_client_pub_async outside a poll: its request
 * waits for the next poll, flush or blocking call, so a window of publishes leaves
 * together; sl_client_next_timer_us says 0 meanwhile), or when the batch is full. Order
 * is kept: the batch is sent in the order it was filled, and a datagram sent at once
 * (HELLO, METADATA: xmit) goes after it.
 *
 * Nothing here allocates, logs or makes a syscall per message, apart from the
 * transport's own send/recv (batched: a few per window).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "client.h"
#include "err.h"
#include "wire.h"
#include "xport.h"

#define DEF_RETRY_MS 20
#define DEF_TIMEOUT_MS 5000
#define RTO_MAX_US 1000000ULL
#define CLOSE_WAIT_MAX_MS 1000
#define RX_BUF_LEN 65536
#define POLL_BURST 256		/* frames handled per poll call */
#define WAIT_SLICE_US 100000	/* blocking waits poll in slices of this */
#define DEPTH_MAX 16		/* nested polls from callbacks */
#define WINDOW_MAX 65536
#define FIN_CAP (2 * SL_WIRE_FIN_MAX) /* pending FIN ids per subscription */
#define RESET_ATTEMPTS 3
#define CLIENT_INFO 0x00000100	/* library version 0.1.0 */
#define SEEDS_MAX 16
#define DEF_FAILOVER_MS 2000
#define SWITCH_GRACE_US 300000	/* longest wait for the old leader's other answers */
#define ASK_MIN_US 50000	/* one METADATA's wait for its answer: 8 x retry_ms, */
#define ASK_MAX_US 500000	/* within these */
/* PUB body bytes besides the topic and the message: partition, topic_len, flags,
 * trace id, msg_len. */
#define PUB_OVERHEAD (4 + 8 + 4)
/* A split MPUB's whole frame (header, prefix with trace id and count, element area) */
#define SPLIT_CAP (SL_WIRE_HDR_LEN + 4 + SL_WIRE_NAME_MAX + 8 + 2 + SL_WIRE_MPART_TOTAL_MAX)

enum req_state {
	REQ_FREE = 0,
	REQ_RESERVED,	/* taken by a caller that is encoding the frame */
	REQ_QUEUED,	/* waiting for a session */
	REQ_SENT,
};

/* A blocking caller's view of its request, on the caller's stack. */
struct waiter {
	int done;
	int err;
	uint16_t err_partition;
	struct sl_wire_ok ok;
};

struct req {
	uint8_t state;
	uint8_t opcode;
	uint32_t len;		/* frame length */
	uint64_t seq;
	uint64_t order;		/* creation order: queued requests leave in this order */
	uint64_t t_first;	/* creation time, us */
	uint64_t t_next;	/* next retransmission, us */
	uint64_t rto;		/* current retransmission timeout, us */
	uint64_t t_sent;	/* first sent, us: the round-trip sample of its answer */
	uint8_t resent;		/* sent more than once */
	uint64_t sub_id;	/* SUB: local id of the subscription */
	uint16_t busy_code;	/* the last busy answer (sent again since); 0 = none */
	uint8_t busy_wait;	/* answered busy: waits for the next ordered resend */
	uint8_t leader_wait;	/* answered NOT_LEADER: waits for the leader switch */
	uint8_t keep_seq;	/* requeued by a leader switch with a producer id: sent
				 * again with its seq (the new leader knows it by it) */
	uint8_t split;		/* an MPUB larger than a datagram: frame is its slot's
				 * SPLIT_CAP area of c->big, sent as MPUB_PART fragments */
	sl_pub_cb_t cb;
	void *arg;
	struct waiter *w;
	uint8_t *frame;		/* frame_cap bytes of c->frames */
};

struct sub {
	uint64_t id;		/* local, stable, what the application sees */
	uint64_t broker_id;	/* this session's id; 0 = not subscribed now */
	int confirmed;		/* accepted once: re-subscribe in a new session */
	uint32_t resub_epoch;
	uint16_t partition;
	uint8_t flags;
	uint8_t topic_len;
	uint8_t channel_len;
	uint32_t rdy;
	char topic[SL_WIRE_NAME_MAX + 1];
	char channel[SL_WIRE_NAME_MAX + 1];
	sl_msg_cb_t cb;
	void *arg;
	uint32_t fin_n;
	uint64_t fin_ids[FIN_CAP];
};

/* A broker address: IPv4 in network order, UDP port in host order. */
struct baddr {
	uint32_t ip;
	uint16_t port;
};

/* A publish waiting to be sent again, for sorting by seq. */
struct busy_ent {
	uint64_t seq;
	uint32_t idx;
};

struct sl_client {
	const struct sl_xport_ops *ops;
	void *x;
	struct sl_wire_welcome wel;
	uint32_t conf_window;
	uint8_t token_len;	/* 0: HELLO without a token */
	char token[SL_WIRE_TOKEN_MAX];
	uint64_t retry_us;
	uint64_t timeout_us;
	uint64_t srtt_us;	/* smoothed round trip of answered requests; 0 = none yet */
	uint64_t rttvar_us;	/* its mean deviation */
	uint64_t rto_us;	/* first retransmission timeout of a new request */
	int fail_busy;		/* conf->fail_busy: busy answers complete at once */
	int may_bundle;		/* the transport takes bundles and conf->no_bundle is 0 */
	int bundle;		/* ... and this session's broker does: requests carry
				 * SL_WIRE_F_BUNDLE (docs/protocol.md section 1) */
	uint64_t rto_max_us;

	/* session */
	uint64_t session;
	int session_ok;
	uint32_t epoch;		/* +1 per session; high half of cookies */
	uint64_t seq;		/* next sequence number (with a producer id: never restarts) */
	uint64_t producer;	/* producer id sent in HELLO; 0: none (an old broker) */
	uint64_t nonce;		/* HELLO cookie base */
	int need_reset;
	int resetting;
	int closing;

	/* requests */
	uint32_t window;	/* effective: <= n_slots */
	uint32_t n_slots;
	uint32_t frame_cap;
	struct req *reqs;
	uint8_t *frames;
	uint8_t *big;		/* [n_slots] x SPLIT_CAP, at the first split MPUB */
	uint8_t *frag;		/* frame_cap: one MPUB_PART being sent */
	uint32_t *free_stack;
	uint32_t n_free;
	uint32_t in_flight;	/* slots not free */
	uint32_t n_sent;
	uint32_t n_queued;
	uint64_t low_seq;	/* <= the lowest seq of a request sent and not answered */
	uint64_t order;
	uint64_t next_timer;	/* earliest retransmission / timeout; may be early */
	uint64_t last_tx;
	uint32_t tx_pending;	/* frames in the transport's send batch (ops->queue) */
	uint64_t busy_next;	/* next resend of the busy-waiting publishes; MAX = none */
	uint64_t busy_rto;	/* its back-off */
	struct busy_ent *busy_tmp;	/* [n_slots]: the resend's sort buffer */

	/* subscriptions */
	struct sub **subs;
	uint32_t n_subs;
	uint32_t cap_subs;
	uint64_t next_sub_id;
	struct sub *hot;	/* last MSG's subscription */

	/* receiving */
	uint32_t depth;		/* nested poll_once() */
	uint32_t in_msg_cb;	/* a message callback is running */
	uint8_t *rx_main;
	uint8_t *rx_alt;	/* used while a message callback runs */

	/* following the leader */
	int follow;
	struct baddr cur;	/* the broker we talk to */
	struct baddr tgt;	/* where the transport points (cur, or asked in a switch) */
	struct baddr sess_at;	/* where c->session is valid (a token HELLO in a switch) */
	uint64_t ask_seq;	/* METADATA cookies */
	struct baddr seeds[SEEDS_MAX];
	uint32_t nseeds;
	uint64_t failover_us;
	uint64_t last_rx;	/* last frame from the broker */
	int need_switch;	/* 1: NOT_LEADER (switch_at), 2: silent broker */
	int switching;
	uint64_t switch_at;	/* NOT_LEADER: switch by then even if answers are missing */
	uint64_t find_t0;	/* start of the leader search under way (0: none) */
	uint64_t find_next;	/* its next round: not before this (0: now) */
	uint64_t find_pause;	/* the pause after the next failed round */
	int meta_v2;		/* the last META answer was v2 (max_record known) */
	uint16_t sw_partition;	/* the partition whose leader is sought */
	char sw_topic[SL_WIRE_NAME_MAX + 1];

	struct sl_client_stats st;
	uint64_t nested_drops;	/* MSG frames dropped while a message callback ran */
};

static int poll_once(struct sl_client *c, uint32_t timeout_us);

/* ---- time, buffers, transmit ---- */

static uint64_t
now_us(const struct sl_client *c)
{
	struct timespec ts;

	if (c->ops->now_us != NULL)
		return c->ops->now_us(c->x);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

static uint8_t *
rxbuf(const struct sl_client *c)
{
	return c->in_msg_cb > 0 ? c->rx_alt : c->rx_main;
}

static uint64_t
min_u64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

/* Send the transport's send batch, if any (one sendmmsg for the UDP transport). */
static void
tx_flush(struct sl_client *c)
{
	int lost;

	if (c->tx_pending == 0)
		return;
	lost = c->ops->flush(c->x);
	if (lost > 0)
		c->st.tx_frames -= (uint64_t)lost < c->st.tx_frames ? (uint64_t)lost :
								      c->st.tx_frames;
	c->tx_pending = 0;
}

/* Send one datagram now, after whatever the send batch holds. */
static void
xmit(struct sl_client *c, const uint8_t *frame, uint32_t len, uint64_t now)
{
	tx_flush(c);
	if (c->ops->send(c->x, frame, len) == 0)
		c->st.tx_frames++;
	c->last_tx = now;
}

/*
 * Add one datagram of a request to the transport's send batch: it leaves with the next
 * tx_flush (before the client waits for an answer, at the end of a poll, at the end of a
 * public call other than sl_client_pub_async outside a poll) or when the batch is full.
 * Without batching (no ops->queue) it is sent at once.
 */
static void
xmit_q(struct sl_client *c, const uint8_t *frame, uint32_t len, uint64_t now)
{
	int rc;

	if (c->ops->queue == NULL) {
		xmit(c, frame, len, now);
		return;
	}
	rc = c->ops->queue(c->x, frame, len);
	if (rc >= 0) {
		c->st.tx_frames++;
		if (rc > 0)	/* a full batch left at once and lost some */
			c->st.tx_frames -= (uint64_t)rc < c->st.tx_frames ? (uint64_t)rc :
									    c->st.tx_frames;
		c->tx_pending++;
	}
	c->last_tx = now;
}

/*
 * Send a split MPUB (frame holds the whole MPUB frame, header fields up to date) as
 * MPUB_PART fragments of at most frame_cap bytes, in order: each with the MPUB's header
 * fields (session, seq, cookie, flags) and prefix, and the next piece of its element area
 * (docs/protocol.md "MPUB_PART"). The same bytes every time: a retransmission resends
 * them all, and the broker ignores copies of fragments it holds.
 */
static void
xmit_split(struct sl_client *c, const uint8_t *frame, uint32_t len, uint64_t now)
{
	struct sl_wire_hdr h;
	struct sl_wire_pub p;
	struct sl_wire_mpart f;
	uint32_t chunk;
	int n;

	if (sl_wire_decode_hdr(frame, len, &h) != 0 ||
	    sl_wire_decode_pub(frame + SL_WIRE_HDR_LEN, h.body_len, 1, &p) != 0)
		return;	/* cannot happen: we encoded it */
	chunk = sl_wire_mpart_chunk_max(c->frame_cap, p.topic_len, p.flags);
	memset(&f, 0, sizeof(f));
	f.partition = p.partition;
	f.topic_len = p.topic_len;
	f.flags = p.flags;
	f.topic = p.topic;
	f.trace_id = p.trace_id;
	f.count = p.count;
	f.total_len = p.msgs_len;
	f.nfrag = (uint8_t)((p.msgs_len + chunk - 1) / chunk);
	for (f.index = 0; f.index < f.nfrag; f.index++) {
		f.off = (uint32_t)f.index * chunk;
		f.chunk = p.msg + f.off;
		f.chunk_len = p.msgs_len - f.off < chunk ? p.msgs_len - f.off : chunk;
		n = sl_wire_encode_mpart(c->frag, c->frame_cap, &h, &f);
		if (n > 0)
			xmit_q(c, c->frag, (uint32_t)n, now);
	}
}

/* Send request r's frame: one datagram, or a split MPUB's fragments. */
static void
req_xmit(struct sl_client *c, const struct req *r, uint64_t now)
{
	if (r->split)
		xmit_split(c, r->frame, r->len, now);
	else
		xmit_q(c, r->frame, r->len, now);
}

/* Rewrite header fields of an encoded frame of ours. */
static void
hdr_patch(const struct sl_client *c, uint8_t *frame, uint32_t len, uint64_t seq,
	  uint64_t cookie)
{
	struct sl_wire_hdr h;

	if (sl_wire_decode_hdr(frame, len, &h) != 0)
		return; /* cannot happen: we encoded it */
	h.session = c->session;
	h.seq = seq;
	h.cookie = cookie;
	h.flags &= (uint16_t)~(SL_WIRE_F_RETRY | SL_WIRE_F_BUNDLE);
	if (c->bundle)
		h.flags |= SL_WIRE_F_BUNDLE;
	sl_wire_encode_hdr(frame, &h);
}

static void
hdr_set_retry(uint8_t *frame, uint32_t len)
{
	struct sl_wire_hdr h;

	if (sl_wire_decode_hdr(frame, len, &h) != 0)
		return;
	h.flags |= SL_WIRE_F_RETRY;
	sl_wire_encode_hdr(frame, &h);
}

/* Header for a request frame; session, seq and cookie are set when first sent. */
static struct sl_wire_hdr
req_hdr(void)
{
	struct sl_wire_hdr h = { .version = SL_WIRE_VERSION };

	return h;
}

/* ---- subscriptions ---- */

static struct sub *
sub_by_id(const struct sl_client *c, uint64_t id)
{
	uint32_t i;

	for (i = 0; i < c->n_subs; i++)
		if (c->subs[i]->id == id)
			return c->subs[i];
	return NULL;
}

static struct sub *
sub_by_broker(struct sl_client *c, uint64_t broker_id)
{
	uint32_t i;

	if (broker_id == 0)
		return NULL;
	if (c->hot != NULL && c->hot->broker_id == broker_id)
		return c->hot;
	for (i = 0; i < c->n_subs; i++) {
		if (c->subs[i]->broker_id == broker_id) {
			c->hot = c->subs[i];
			return c->hot;
		}
	}
	return NULL;
}

static int
sub_insert(struct sl_client *c, struct sub *s)
{
	struct sub **n;
	uint32_t cap;

	if (c->n_subs == c->cap_subs) {
		cap = c->cap_subs != 0 ? 2 * c->cap_subs : 8;
		n = realloc(c->subs, cap * sizeof(*n));
		if (n == NULL)
			return -ENOMEM;
		c->subs = n;
		c->cap_subs = cap;
	}
	c->subs[c->n_subs++] = s;
	return 0;
}

static void
sub_remove(struct sl_client *c, struct sub *s)
{
	uint32_t i;

	for (i = 0; i < c->n_subs; i++) {
		if (c->subs[i] == s) {
			c->subs[i] = c->subs[--c->n_subs];
			break;
		}
	}
	if (c->hot == s)
		c->hot = NULL;
	free(s);
}

static struct sl_wire_addr
sub_addr(const struct sub *s)
{
	struct sl_wire_addr a = {
		.partition = s->partition,
		.topic_len = s->topic_len,
		.channel_len = s->channel_len,
		.topic = s->topic,
		.channel = s->channel,
	};

	return a;
}

/* ---- request slots ---- */

static uint64_t
req_cookie(const struct sl_client *c, uint32_t idx)
{
	return (uint64_t)c->epoch << 32 | (idx + 1);
}

static void
timer_arm(struct sl_client *c, uint64_t t)
{
	if (t < c->next_timer)
		c->next_timer = t;
}

/* Take a free slot; the caller checked in_flight < window. */
static uint32_t
slot_get(struct sl_client *c)
{
	uint32_t idx = c->free_stack[--c->n_free];

	c->reqs[idx].state = REQ_RESERVED;
	c->in_flight++;
	return idx;
}

static void
slot_put(struct sl_client *c, uint32_t idx)
{
	struct req *r = &c->reqs[idx];

	if (r->state == REQ_SENT)
		c->n_sent--;
	else if (r->state == REQ_QUEUED)
		c->n_queued--;
	r->state = REQ_FREE;
	r->cb = NULL;
	r->w = NULL;
	if (r->split) {
		r->split = 0;
		r->frame = c->frames + (size_t)idx * c->frame_cap;
	}
	c->free_stack[c->n_free++] = idx;
	c->in_flight--;
}

/* Wait (polling) until a slot is free, then take it. */
static int
acquire_slot(struct sl_client *c, uint32_t *idx)
{
	while (c->in_flight >= c->window) {
		if (c->depth >= DEPTH_MAX)
			return -EDEADLK;
		(void)poll_once(c, WAIT_SLICE_US);
	}
	*idx = slot_get(c);
	return 0;
}

/* Lowest seq of a request sent and not answered (c->seq if none). */
static uint64_t
oldest_sent_seq(const struct sl_client *c)
{
	uint64_t low = c->seq;
	uint32_t i;

	for (i = 0; i < c->n_slots; i++)
		if (c->reqs[i].state == REQ_SENT && c->reqs[i].seq < low)
			low = c->reqs[i].seq;
	return low;
}

/*
 * May a request be sent now? Fewer than window sent and not answered, and the next new seq
 * less than window above the oldest of them: the broker tells a retry from a new request
 * only within the window of seqs it announced (its idempotency window and producer table,
 * docs/protocol.md section 8.4); a request answered late (a slow partition, busy answers)
 * while the later ones are answered would otherwise let the seqs run on, and its retry
 * would be refused SL_E_SEQ_OLD. The const form for sl_client_next_timer_us.
 */
static int
can_send(const struct sl_client *c)
{
	if (!c->session_ok || c->n_sent >= c->window)
		return 0;
	if (c->n_sent == 0 || (c->low_seq <= c->seq && c->seq - c->low_seq < c->window))
		return 1;
	return c->seq - oldest_sent_seq(c) < c->window;
}

/* can_send, keeping the lower bound low_seq up to date. */
static int
send_room(struct sl_client *c)
{
	if (can_send(c) == 0)
		return 0;
	if (c->n_sent != 0 && (c->low_seq > c->seq || c->seq - c->low_seq >= c->window))
		c->low_seq = oldest_sent_seq(c);
	return 1;
}

static void
req_send_first(struct sl_client *c, uint32_t idx, uint64_t now)
{
	struct req *r = &c->reqs[idx];

	c->n_queued--;
	r->state = REQ_SENT;
	if (r->keep_seq)
		r->keep_seq = 0;	/* the same (producer, seq): recognised if written */
	else
		r->seq = c->seq++;
	if (c->n_sent++ == 0 || r->seq < c->low_seq)
		c->low_seq = r->seq;
	hdr_patch(c, r->frame, r->len, r->seq, req_cookie(c, idx));
	r->rto = c->rto_us;
	r->t_sent = now;
	r->resent = 0;
	r->t_next = now + r->rto;
	timer_arm(c, r->t_next);
	req_xmit(c, r, now);
}

/* Start a reserved slot whose frame is encoded: send it now if we can, else queue it. */
static void
req_start(struct sl_client *c, uint32_t idx, uint8_t opcode, uint32_t len, sl_pub_cb_t cb,
	  void *arg, struct waiter *w, uint64_t sub_id)
{
	struct req *r = &c->reqs[idx];
	uint64_t now = now_us(c);

	r->opcode = opcode;
	r->len = len;
	r->cb = cb;
	r->arg = arg;
	r->w = w;
	r->sub_id = sub_id;
	r->order = c->order++;
	r->t_first = now;
	r->rto = c->retry_us;
	r->busy_code = 0;
	r->busy_wait = 0;
	r->leader_wait = 0;
	r->state = REQ_QUEUED;
	c->n_queued++;
	timer_arm(c, now + c->timeout_us);
	if (send_room(c))
		req_send_first(c, idx, now);
}

static void
req_retransmit(struct sl_client *c, uint32_t idx, uint64_t now)
{
	struct req *r = &c->reqs[idx];

	hdr_set_retry(r->frame, r->len);
	c->st.retries++;
	r->resent = 1;
	req_xmit(c, r, now);
	r->rto = min_u64(2 * r->rto, c->rto_max_us);
	r->t_next = now + r->rto;
	timer_arm(c, r->t_next);
}

/* Send queued requests, oldest first, while the window allows. */
static void
send_queued(struct sl_client *c)
{
	uint64_t now = now_us(c);
	uint32_t i, best;

	while (c->n_queued > 0 && send_room(c)) {
		best = UINT32_MAX;
		for (i = 0; i < c->n_slots; i++) {
			if (c->reqs[i].state != REQ_QUEUED)
				continue;
			if (best == UINT32_MAX || c->reqs[i].order < c->reqs[best].order)
				best = i;
		}
		if (best == UINT32_MAX)
			break;
		req_send_first(c, best, now);
	}
}

/*
 * Finish a request: free its slot first (a callback may issue the next request), then
 * tell whoever waits. ok is the OK body (err == 0) or NULL.
 */
static void
req_complete(struct sl_client *c, uint32_t idx, int err, const struct sl_wire_ok *ok,
	     uint16_t err_partition)
{
	struct req r = c->reqs[idx];
	struct sl_pub_result res;
	struct sub *s;

	slot_put(c, idx);
	if (r.opcode == SL_OP_SUB && err == 0 && ok != NULL) {
		s = sub_by_id(c, r.sub_id);
		if (s != NULL) {
			s->broker_id = ok->id;
			s->confirmed = 1;
		}
	}
	if (r.w != NULL) {
		r.w->err = err;
		r.w->err_partition = err_partition;
		if (ok != NULL)
			r.w->ok = *ok;
		r.w->done = 1;
	}
	if (r.cb != NULL) {
		memset(&res, 0, sizeof(res));
		res.err = err;
		res.partition = ok != NULL ? ok->partition : err_partition;
		if (ok != NULL) {
			res.count = ok->count;
			res.id = ok->id;
			res.offset = ok->offset;
		}
		r.cb(r.arg, &res);
	}
}

/* Fail every request in one of the given states (slots are visited by index: callbacks
 * may start new requests, which is fine). */
static void
fail_requests(struct sl_client *c, int err, int sent_only)
{
	uint32_t i;

	for (i = 0; i < c->n_slots; i++) {
		if (c->reqs[i].state == REQ_SENT ||
		    (!sent_only && c->reqs[i].state == REQ_QUEUED))
			req_complete(c, i, err, NULL, 0);
	}
}

static int
wait_req(struct sl_client *c, struct waiter *w)
{
	while (!w->done)
		(void)poll_once(c, WAIT_SLICE_US);
	return w->err;
}

static int
busy_cmp(const void *a, const void *b)
{
	const struct busy_ent *x = a, *y = b;

	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Send every publish waiting after a busy answer again, lowest seq first: the broker
 * takes them in that order (a later one that overtakes an earlier one is refused
 * SL_E_OUT_OF_ORDER and waits again). */
static void
busy_resend(struct sl_client *c, uint64_t now)
{
	uint32_t i, n = 0;
	struct req *r;

	c->busy_next = UINT64_MAX;
	for (i = 0; i < c->n_slots; i++) {
		if (c->reqs[i].state != REQ_SENT || !c->reqs[i].busy_wait)
			continue;
		c->busy_tmp[n].seq = c->reqs[i].seq;
		c->busy_tmp[n++].idx = i;
	}
	qsort(c->busy_tmp, n, sizeof(*c->busy_tmp), busy_cmp);
	for (i = 0; i < n; i++) {
		r = &c->reqs[c->busy_tmp[i].idx];
		r->busy_wait = 0;
		c->st.busy_retries++;
		r->resent = 1;
		r->t_sent = now;	/* a new attempt: its round trip starts now */
		hdr_set_retry(r->frame, r->len);
		req_xmit(c, r, now);
		r->t_next = now + r->rto;	/* its answer may still be lost */
		timer_arm(c, r->t_next);
	}
	if (n > 0)
		c->busy_rto = min_u64(2 * c->busy_rto, c->rto_max_us);
}

/* Retransmit late requests, send busy publishes again and fail expired ones. */
static void
run_timers(struct sl_client *c, uint64_t now)
{
	struct req *r;
	uint32_t i;

	if (now < c->next_timer)
		return;
	c->next_timer = UINT64_MAX;
	for (i = 0; i < c->n_slots; i++) {
		r = &c->reqs[i];
		if (r->state != REQ_SENT && r->state != REQ_QUEUED)
			continue;
		if (now - r->t_first >= c->timeout_us) {
			/* a publish the broker kept answering busy ends with that answer */
			if (r->busy_code != 0 && r->busy_code != SL_E_NOT_LEADER)
				c->st.busy_failed++;
			else
				c->st.timeouts++;
			req_complete(c, i, r->busy_code ? -(int)r->busy_code : -SL_E_TIMEOUT,
				     NULL, 0);
			continue;
		}
		if (r->busy_wait || r->leader_wait) {
			timer_arm(c, r->t_first + c->timeout_us);
			continue;	/* goes with the next ordered resend, or the switch */
		}
		if (r->state == REQ_SENT && now >= r->t_next)
			req_retransmit(c, i, now);
		timer_arm(c, r->t_first + c->timeout_us);
		if (r->state == REQ_SENT)
			timer_arm(c, r->t_next);
	}
	if (c->busy_next != UINT64_MAX && now >= c->busy_next)
		busy_resend(c, now);
	timer_arm(c, c->busy_next);
}

static uint64_t
heartbeat_due(const struct sl_client *c)
{
	/* no NOP when it could not be sent: the window is full (and being retransmitted) */
	if (c->wel.heartbeat_ms == 0 || !c->session_ok || c->closing || c->resetting ||
	    c->in_flight >= c->window)
		return UINT64_MAX;
	return c->last_tx + (uint64_t)c->wel.heartbeat_ms * 1000;
}

static void
heartbeat(struct sl_client *c, uint64_t now)
{
	struct sl_wire_chan_op op;
	struct sl_wire_hdr h = req_hdr();
	uint32_t idx;
	int len;

	if (now < heartbeat_due(c))
		return;
	memset(&op, 0, sizeof(op));
	idx = slot_get(c);
	len = sl_wire_encode_chan_op(c->reqs[idx].frame, c->frame_cap, &h, SL_OP_NOP, &op,
				     NULL);
	if (len < 0) {
		slot_put(c, idx);
		c->last_tx = now;
		return;
	}
	req_start(c, idx, SL_OP_NOP, (uint32_t)len, NULL, NULL, NULL, 0);
}

/* ---- FIN batching ---- */

/* Send up to SL_WIRE_FIN_MAX of s's pending ids in the reserved slot idx. */
static void
fin_send(struct sl_client *c, struct sub *s, uint32_t idx)
{
	uint32_t n = s->fin_n < SL_WIRE_FIN_MAX ? s->fin_n : SL_WIRE_FIN_MAX;
	const uint64_t *ids = &s->fin_ids[s->fin_n - n];
	struct sl_wire_hdr h = req_hdr();
	struct sl_wire_chan_op op;
	int len;

	memset(&op, 0, sizeof(op));
	op.addr = sub_addr(s);
	op.count = n;
	op.msg_id = ids[0];
	len = sl_wire_encode_chan_op(c->reqs[idx].frame, c->frame_cap, &h, SL_OP_FIN, &op,
				     ids);
	s->fin_n -= n;
	if (len < 0) {
		slot_put(c, idx); /* cannot happen: names were checked at SUB */
		return;
	}
	req_start(c, idx, SL_OP_FIN, (uint32_t)len, NULL, NULL, NULL, 0);
}

/* Send every pending FIN batch the window allows. Never waits. */
static void
fins_flush(struct sl_client *c)
{
	struct sub *s;
	uint32_t i;

	if (!c->session_ok)
		return;
	for (i = 0; i < c->n_subs; i++) {
		s = c->subs[i];
		while (s->fin_n > 0 && c->in_flight < c->window)
			fin_send(c, s, slot_get(c));
	}
}

static int
fins_pending(const struct sl_client *c)
{
	uint32_t i;

	for (i = 0; i < c->n_subs; i++)
		if (c->subs[i]->fin_n > 0)
			return 1;
	return 0;
}

/* Add msg_id to the FIN batch of subscription sub_id. */
static int
fin_add(struct sl_client *c, uint64_t sub_id, uint64_t msg_id)
{
	uint32_t epoch = c->epoch;
	struct sub *s = sub_by_id(c, sub_id);
	uint32_t idx;
	int rc;

	if (s == NULL)
		return -ENOENT;
	if (s->fin_n == FIN_CAP) {
		/* batch full and no slot at the last flush: wait for one */
		rc = acquire_slot(c, &idx);
		if (rc != 0)
			return rc;
		s = sub_by_id(c, sub_id);
		if (s == NULL || c->epoch != epoch) {
			slot_put(c, idx);
			return s == NULL ? -ENOENT : -SL_E_SESSION;
		}
		if (s->fin_n > 0)
			fin_send(c, s, idx);
		else
			slot_put(c, idx);
	}
	s->fin_ids[s->fin_n++] = msg_id;
	if (s->fin_n >= SL_WIRE_FIN_MAX && c->session_ok && c->in_flight < c->window)
		fin_send(c, s, slot_get(c));
	return 0;
}

static int
fin_is_pending(const struct sub *s, uint64_t msg_id)
{
	uint32_t i;

	for (i = 0; i < s->fin_n; i++)
		if (s->fin_ids[i] == msg_id)
			return 1;
	return 0;
}

/* ---- receiving ---- */

/* The slot a received answer is for, or -1 (late duplicate, older session). */
static int64_t
find_req(const struct sl_client *c, const struct sl_wire_hdr *h)
{
	const struct req *r;
	uint32_t idx;

	if (h->cookie != 0) {
		if ((uint32_t)(h->cookie >> 32) != c->epoch)
			return -1;
		idx = (uint32_t)h->cookie - 1;
		if (idx >= c->n_slots)
			return -1;
		r = &c->reqs[idx];
		return r->state == REQ_SENT && r->seq == h->seq ? (int64_t)idx : -1;
	}
	/* a broker that does not echo cookies: match the sequence in this session */
	if (!c->session_ok || h->session != c->session)
		return -1;
	for (idx = 0; idx < c->n_slots; idx++) {
		r = &c->reqs[idx];
		if (r->state == REQ_SENT && r->seq == h->seq)
			return idx;
	}
	return -1;
}

/*
 * An answer to request idx came: its round trip from the first send updates the smoothed
 * round trip and the first retransmission timeout of new requests (RFC 6298: srtt +
 * 4 x rttvar, at least retry_ms, at most 1 s). A broker that holds publishes for a slow
 * fdatasync (durability disk) answers in tens of ms: a fixed 20 ms would resend every
 * request in flight each time, a storm the broker only drops. Unlike TCP, the answers of
 * resent requests are sampled too (from the first send): with Karn's rule only the
 * answers faster than the timeout would count, and the timeout would stay below the
 * broker's real answer time. A lost datagram makes a sample too long: the timeout grows
 * for a while, which costs a little recovery time, never a storm.
 */
static void
rtt_sample(struct sl_client *c, uint32_t idx, uint64_t now)
{
	const struct req *r = &c->reqs[idx];
	uint64_t rtt, dev;

	if (r->state != REQ_SENT || now < r->t_sent)
		return;
	rtt = now - r->t_sent;
	if (c->srtt_us == 0) {
		c->srtt_us = rtt;
		c->rttvar_us = rtt / 2;
	} else {
		dev = rtt > c->srtt_us ? rtt - c->srtt_us : c->srtt_us - rtt;
		c->rttvar_us = (3 * c->rttvar_us + dev) / 4;
		c->srtt_us = (7 * c->srtt_us + rtt) / 8;
	}
	c->rto_us = min_u64(c->srtt_us + 4 * c->rttvar_us, c->rto_max_us);
	if (c->rto_us < c->retry_us)
		c->rto_us = c->retry_us;
}

static void
on_ok(struct sl_client *c, const struct sl_wire_hdr *h, const uint8_t *body)
{
	struct sl_wire_ok ok;
	int64_t idx;

	if (sl_wire_decode_ok(body, h->body_len, &ok) != 0) {
		c->st.bad_frames++;
		return;
	}
	idx = find_req(c, h);
	if (idx < 0)
		return;
	rtt_sample(c, (uint32_t)idx, now_us(c));
	if (c->reqs[idx].busy_code != 0)
		c->busy_rto = c->retry_us;	/* the broker takes them again */
	req_complete(c, (uint32_t)idx, 0, &ok, 0);
}

/*
 * A publish the broker could not take just now (its queue toward the disk or the
 * replicas is full, writes pause while a replica rejoins, the ISR is too small or shrank
 * under it, or an earlier publish of ours was refused and must go first): nothing was
 * written and the broker does not remember that answer, so the same request (same seq)
 * waits for the next ordered resend (busy_resend), until the request's own timeout, when
 * it ends with that answer.
 */
static int
busy_retry(struct sl_client *c, uint32_t idx, uint32_t code)
{
	struct req *r = &c->reqs[idx];
	uint64_t now = now_us(c);

	if ((code != SL_E_FULL && code != SL_E_WRITE_DISABLED && code != SL_E_QUORUM &&
	     code != SL_E_OUT_OF_ORDER) ||
	    r->state != REQ_SENT || (r->opcode != SL_OP_PUB && r->opcode != SL_OP_MPUB))
		return 0;
	if (c->fail_busy || now - r->t_first >= c->timeout_us) {
		c->st.busy_failed++;	/* completed with the busy answer (on_err) */
		return 0;
	}
	if (code == SL_E_OUT_OF_ORDER)
		c->st.order_refusals++;
	r->busy_code = (uint16_t)code;
	r->busy_wait = 1;
	if (c->busy_next == UINT64_MAX) {
		c->busy_next = now + c->busy_rto;
		timer_arm(c, c->busy_next);
	}
	return 1;
}

static int
is_pub(uint8_t opcode)
{
	return opcode == SL_OP_PUB || opcode == SL_OP_MPUB;
}

/* The topic (into topic, NUL-terminated) and partition request r names: 0, or -1 when
 * it names none (NOP, CLS of the session). */
static int
req_target(const struct req *r, char *topic, uint16_t *partition)
{
	const uint8_t *body = r->frame + SL_WIRE_HDR_LEN;
	uint32_t blen = r->len - SL_WIRE_HDR_LEN;
	union {
		struct sl_wire_pub p;
		struct sl_wire_sub s;
		struct sl_wire_chan_op o;
	} u;
	const char *t;
	uint8_t tl;

	if (is_pub(r->opcode)) {
		if (sl_wire_decode_pub(body, blen, r->opcode == SL_OP_MPUB, &u.p) != 0)
			return -1;
		t = u.p.topic;
		tl = u.p.topic_len;
		*partition = u.p.partition;
	} else if (r->opcode == SL_OP_SUB) {
		if (sl_wire_decode_sub(body, blen, &u.s) != 0)
			return -1;
		t = u.s.addr.topic;
		tl = u.s.addr.topic_len;
		*partition = u.s.addr.partition;
	} else {
		if (r->opcode == SL_OP_NOP ||
		    sl_wire_decode_chan_op(r->opcode, body, blen, &u.o) != 0 ||
		    u.o.addr.topic_len == 0)
			return -1;
		t = u.o.addr.topic;
		tl = u.o.addr.topic_len;
		*partition = u.o.addr.partition;
	}
	memcpy(topic, t, tl);
	topic[tl] = '\0';
	if (*partition == SL_WIRE_PART_ANY)
		*partition = 0;
	return 0;
}

/*
 * NOT_LEADER while following leaders: ask for a switch to the partition's leader (it
 * runs from poll_once once the old broker's other answers are in, or after
 * SWITCH_GRACE_US). A publish or SUB waits for it and is sent again to the new leader;
 * returns 1 then. Other requests end with the error (0).
 */
static int
leader_wait(struct sl_client *c, uint32_t idx, uint16_t err_partition)
{
	struct req *r = &c->reqs[idx];
	uint16_t part;

	if (!c->follow || r->state != REQ_SENT || req_target(r, c->sw_topic, &part) != 0)
		return 0;
	c->sw_partition = is_pub(r->opcode) && part == 0 ? err_partition : part;
	if (c->need_switch == 0) {
		c->need_switch = 1;
		c->switch_at = now_us(c) + SWITCH_GRACE_US;
		timer_arm(c, c->switch_at);
	}
	if (!is_pub(r->opcode) && r->opcode != SL_OP_SUB)
		return 0;
	r->leader_wait = 1;
	r->busy_code = SL_E_NOT_LEADER;	/* its answer if the switch does not come in time */
	return 1;
}

static void
on_err(struct sl_client *c, const struct sl_wire_hdr *h, const uint8_t *body)
{
	struct sl_wire_err e;
	int64_t idx;

	if (sl_wire_decode_err(body, h->body_len, &e) != 0) {
		c->st.bad_frames++;
		return;
	}
	c->st.errors++;
	idx = find_req(c, h);
	if (idx < 0)
		return;
	rtt_sample(c, (uint32_t)idx, now_us(c));
	if (e.code == SL_E_SESSION)
		c->need_reset = 1;
	if (busy_retry(c, (uint32_t)idx, e.code))
		return;
	if (e.code == SL_E_NOT_LEADER && leader_wait(c, (uint32_t)idx, e.partition))
		return;
	/* SL_E_MSG_ID for a FIN: the message timed out and was redelivered; counted in
	 * errors, nothing else to do. */
	req_complete(c, (uint32_t)idx, -(int)e.code, NULL, e.partition);
}

static void
on_msg(struct sl_client *c, const struct sl_wire_hdr *h, const uint8_t *body)
{
	struct sl_client_msg cm;
	struct sl_wire_msg m;
	uint64_t sub_id;
	uint32_t epoch;
	struct sub *s;
	int r;

	if (sl_wire_decode_msg(body, h->body_len, &m) != 0) {
		c->st.bad_frames++;
		return;
	}
	if (!c->session_ok || h->session != c->session)
		return; /* for an older session: the broker requeues it */
	s = sub_by_broker(c, m.sub_id);
	if (s == NULL)
		return; /* unsubscribed, or before its SUB answer: redelivered later */
	if (c->in_msg_cb > 0) {
		c->nested_drops++;
		return;
	}
	if (fin_is_pending(s, m.msg_id)) {
		c->st.dup_msgs++;
		return;
	}
	c->st.msgs++;
	cm.sub_id = s->id;
	cm.partition = m.partition;
	cm.attempts = m.attempts;
	cm.id = m.msg_id;
	cm.offset = m.offset;
	cm.timestamp_ns = m.timestamp_ns;
	cm.trace_id = m.trace_id;
	cm.len = m.len;
	cm.data = m.data;
	sub_id = s->id;
	epoch = c->epoch;
	c->in_msg_cb++;
	r = s->cb(s->arg, &cm);
	c->in_msg_cb--;
	/* s may be gone now (the callback can unsubscribe): look it up again */
	if (r == 0 && c->epoch == epoch)
		(void)fin_add(c, sub_id, m.msg_id);
}

static void
handle_frame(struct sl_client *c, const uint8_t *buf, uint32_t len)
{
	const uint8_t *body = buf + SL_WIRE_HDR_LEN;
	struct sl_wire_hdr h;

	c->st.rx_frames++;
	if (sl_wire_decode_hdr(buf, len, &h) != 0) {
		c->st.bad_frames++;
		return;
	}
	switch (h.opcode) {
	case SL_OP_OK:
		on_ok(c, &h, body);
		break;
	case SL_OP_ERR:
		on_err(c, &h, body);
		break;
	case SL_OP_MSG:
		on_msg(c, &h, body);
		break;
	case SL_OP_WELCOME:
		break; /* duplicate answer to a retried HELLO */
	default:
		c->st.bad_frames++;
		break;
	}
}

/* ---- session ---- */

static uint32_t
clamp_window(const struct sl_client *c, uint32_t broker_window, uint32_t n_slots)
{
	uint32_t w = broker_window;

	if (c->conf_window != 0 && (w == 0 || c->conf_window < w))
		w = c->conf_window;
	if (w == 0)
		w = 1;
	if (w > WINDOW_MAX)
		w = WINDOW_MAX;
	if (n_slots != 0 && w > n_slots)
		w = n_slots;
	return w;
}

/*
 * HELLO -> WELCOME: retransmitted with backoff until timeout_us. Frames other than our
 * WELCOME are discarded (requests of the old session were failed before). Fills c->wel.
 */
static int
hello(struct sl_client *c, uint64_t timeout_us)
{
	struct sl_wire_hello hb = { .client_info = CLIENT_INFO, .window = c->conf_window,
				    .token_len = c->token_len, .token = (uint8_t *)c->token,
				    .producer = c->producer };
	struct sl_wire_hdr h = req_hdr();
	uint8_t frame[SL_WIRE_HDR_LEN + 9 + SL_WIRE_TOKEN_MAX + 8];
	struct sl_wire_welcome wel;
	uint64_t t0, now, next, rto;
	struct sl_wire_err e;
	struct sl_wire_hdr rh;
	uint32_t len;
	int n, sent = 0;

	h.cookie = c->nonce ^ c->epoch;
	n = sl_wire_encode_hello(frame, sizeof(frame), &h, &hb);
	if (n < 0)
		return n;
	len = (uint32_t)n;
	t0 = now_us(c);
	next = t0;
	rto = c->retry_us;
	for (;;) {
		now = now_us(c);
		if (now - t0 >= timeout_us)
			return -SL_E_TIMEOUT;
		if (now >= next) {
			if (sent) {
				hdr_set_retry(frame, len);
				c->st.retries++;
			}
			xmit(c, frame, len, now);
			sent = 1;
			next = now + rto;
			rto = min_u64(2 * rto, c->rto_max_us);
		}
		n = c->ops->recv(c->x, rxbuf(c), RX_BUF_LEN,
				 (uint32_t)(min_u64(next, t0 + timeout_us) - now));
		if (n <= 0)
			continue;
		c->st.rx_frames++;
		if (sl_wire_decode_hdr(rxbuf(c), (uint32_t)n, &rh) != 0) {
			c->st.bad_frames++;
			continue;
		}
		if (rh.cookie != h.cookie)
			continue;
		if (rh.opcode == SL_OP_WELCOME) {
			if (sl_wire_decode_welcome(rxbuf(c) + SL_WIRE_HDR_LEN, rh.body_len,
						   &wel) != 0) {
				c->st.bad_frames++;
				continue;
			}
			c->wel = wel;
			c->session = wel.session;
			c->bundle = c->may_bundle && (rh.flags & SL_WIRE_F_BUNDLE);
			return 0;
		}
		if (rh.opcode == SL_OP_ERR &&
		    sl_wire_decode_err(rxbuf(c) + SL_WIRE_HDR_LEN, rh.body_len, &e) == 0) {
			c->st.errors++;
			if (e.code == SL_E_MALFORMED && hb.producer != 0) {
				/* a broker older than producer ids: HELLO as before (no
				 * idempotency across sessions from now on) */
				c->producer = 0;
				hb.producer = 0;
				h = req_hdr();
				h.cookie = c->nonce ^ c->epoch;
				n = sl_wire_encode_hello(frame, sizeof(frame), &h, &hb);
				if (n < 0)
					return n;
				len = (uint32_t)n;
				sent = 0;
				next = now_us(c);
				continue;
			}
			return -(int)e.code;
		}
	}
}

static int
sub_request(struct sl_client *c, uint64_t sub_id)
{
	struct sl_wire_hdr h = req_hdr();
	struct waiter w = { 0 };
	struct sl_wire_sub sb;
	struct sub *s;
	uint32_t idx;
	int rc, len;

	rc = acquire_slot(c, &idx);
	if (rc != 0)
		return rc;
	s = sub_by_id(c, sub_id);
	if (s == NULL) {
		slot_put(c, idx);
		return -ENOENT;
	}
	memset(&sb, 0, sizeof(sb));
	sb.addr = sub_addr(s);
	sb.flags = s->flags;
	sb.rdy = s->rdy;
	len = sl_wire_encode_sub(c->reqs[idx].frame, c->frame_cap, &h, &sb);
	if (len < 0) {
		slot_put(c, idx);
		return len;
	}
	req_start(c, idx, SL_OP_SUB, (uint32_t)len, NULL, NULL, &w, sub_id);
	return wait_req(c, &w);
}

/* Re-subscribe every confirmed subscription in the new session (epoch). */
static int
resubscribe_all(struct sl_client *c)
{
	uint32_t epoch = c->epoch;
	struct sub *s;
	uint32_t i;
	int rc;

	for (;;) {
		if (c->need_reset || c->epoch != epoch)
			return -SL_E_SESSION;
		s = NULL;
		for (i = 0; i < c->n_subs && s == NULL; i++)
			if (c->subs[i]->confirmed && c->subs[i]->resub_epoch != epoch)
				s = c->subs[i];
		if (s == NULL)
			return 0;
		s->resub_epoch = epoch;
		rc = sub_request(c, s->id);
		if (rc == -EDEADLK)
			return rc;
		/* other errors: that subscription stays inactive (counted in errors) */
	}
}

/*
 * The broker forgot our session: fail what is in flight with -SL_E_SESSION, open a new
 * session (sequence restarts at 1) and re-subscribe. Requests created meanwhile wait in
 * the QUEUED state and leave once the new session exists.
 */
static int
session_reset(struct sl_client *c)
{
	struct sub *s;
	uint32_t i;
	int attempt, rc = 0;

	c->resetting = 1;
	for (attempt = 0; c->need_reset && attempt < RESET_ATTEMPTS; attempt++) {
		c->need_reset = 0;
		c->session_ok = 0;
		c->epoch++;
		for (i = 0; i < c->n_subs; i++) {
			s = c->subs[i];
			s->broker_id = 0;
			s->fin_n = 0; /* deliveries of the old session: redelivered */
		}
		c->hot = NULL;
		fail_requests(c, -SL_E_SESSION, 1);
		rc = hello(c, c->timeout_us);
		if (rc != 0) {
			c->need_reset = 1; /* try again at the next poll */
			break;
		}
		c->window = clamp_window(c, c->wel.window, c->n_slots);
		if (c->producer == 0)
			c->seq = 1;	/* with a producer id the numbers never restart */
		c->session_ok = 1;
		send_queued(c);
		rc = resubscribe_all(c);
	}
	c->resetting = 0;
	return rc;
}

/* ---- following the leader ---- */

static int
same_addr(struct baddr a, struct baddr b)
{
	return a.ip == b.ip && a.port == b.port;
}

/* Point the transport at a. 0 or a negative errno. */
static int
retarget_to(struct sl_client *c, struct baddr a)
{
	int rc;

	if (same_addr(c->tgt, a))
		return 0;
	rc = c->ops->retarget(c->x, a.ip, a.port);
	if (rc == 0)
		c->tgt = a;
	return rc;
}

/*
 * Ask broker a with METADATA for the partition sought (c->sw_topic, c->sw_partition),
 * waiting up to one ask time for the answer; other frames are discarded. With a client
 * token, a node needs a session to answer: one is opened there first (HELLO). 0 with *e,
 * or a negative error (no answer, ERR).
 */
static int
meta_ask(struct sl_client *c, struct baddr a, struct sl_wire_meta_entry *e)
{
	uint64_t wait = min_u64(ASK_MAX_US, 8 * c->retry_us > ASK_MIN_US ? 8 * c->retry_us :
								       ASK_MIN_US);
	uint8_t frame[SL_WIRE_HDR_LEN + 3 + SL_WIRE_NAME_MAX];
	struct sl_wire_hdr h = req_hdr(), rh;
	struct sl_wire_meta m;
	uint64_t t0, now;
	int n;

	if (retarget_to(c, a) != 0)
		return -EHOSTUNREACH;
	if (c->token_len != 0 && !same_addr(c->sess_at, a)) {
		c->sess_at.ip = 0;	/* c->session changes: valid nowhere until WELCOME */
		if (hello(c, wait) != 0)
			return -SL_E_TIMEOUT;
		c->sess_at = a;
	}
	h.session = c->token_len != 0 ? c->session : 0;
	h.cookie = c->nonce ^ 0x4D45544100000000ULL ^ ++c->ask_seq;
	h.flags = SL_WIRE_F_META2;	/* an older broker ignores it and answers META v1 */
	n = sl_wire_encode_metareq(frame, sizeof(frame), &h, c->sw_partition, c->sw_topic);
	if (n < 0)
		return n;
	t0 = now_us(c);
	c->st.metadata_asked++;
	xmit(c, frame, (uint32_t)n, t0);
	for (now = t0; now - t0 < wait; now = now_us(c)) {
		n = c->ops->recv(c->x, rxbuf(c), RX_BUF_LEN, (uint32_t)(wait - (now - t0)));
		if (n <= 0)
			continue;
		c->st.rx_frames++;
		if (sl_wire_decode_hdr(rxbuf(c), (uint32_t)n, &rh) != 0 || rh.cookie != h.cookie)
			continue;
		if (rh.opcode == SL_OP_ERR)
			return -SL_E_TOPIC;
		if (rh.opcode != SL_OP_META ||
		    sl_wire_decode_meta(rxbuf(c) + SL_WIRE_HDR_LEN, rh.body_len, rh.flags,
					&m) != 0 ||
		    m.count == 0 || m.first_partition != c->sw_partition) {
			c->st.bad_frames++;
			continue;
		}
		sl_wire_meta_get(&m, 0, e);
		c->meta_v2 = m.v2;
		return 0;
	}
	return -SL_E_TIMEOUT;
}

int
sl_client_metadata(struct sl_client *c, const char *topic, uint16_t partition,
		   struct sl_wire_meta_entry *e)
{
	char topic_was[SL_WIRE_NAME_MAX + 1];
	uint16_t part_was;
	size_t len;
	int rc;

	if (c == NULL || topic == NULL || e == NULL)
		return -SL_E_INVAL;
	len = strnlen(topic, SL_WIRE_NAME_MAX + 1);
	if (sl_wire_check_name(topic, len) != 0)
		return -SL_E_NAME;
	if (c->depth > 0 || c->switching || c->resetting || c->closing)
		return -EBUSY;
	/* the partition a pending leader switch seeks is kept for it */
	memcpy(topic_was, c->sw_topic, sizeof(topic_was));
	part_was = c->sw_partition;
	memcpy(c->sw_topic, topic, len);
	c->sw_topic[len] = '\0';
	c->sw_partition = partition;
	c->depth++;
	rc = meta_ask(c, c->cur, e);
	c->depth--;
	memcpy(c->sw_topic, topic_was, sizeof(topic_was));
	c->sw_partition = part_was;
	if (rc < 0)
		return rc;
	return c->meta_v2 ? 0 : 1;
}

/* One round over the current broker and the seeds: the address of the node that says it
 * leads with the highest epoch, unless another answer names a leader of a higher epoch
 * that confirms it. A current broker that names another leader (it refused us:
 * NOT_LEADER after a move or a failover it has seen) is followed at once: that leader,
 * if it confirms, without asking the seeds (a round trip each). 0 with *to, or -1. */
static int
leader_round(struct sl_client *c, struct baddr *to)
{
	struct baddr claim = {0}, hint = {0};
	uint32_t claim_epoch = 0, hint_epoch = 0, i;
	struct sl_wire_meta_entry e;
	struct baddr a;

	for (i = 0; i <= c->nseeds; i++) {
		a = i == 0 ? c->cur : c->seeds[i - 1];
		if ((i > 0 && same_addr(a, c->cur)) || meta_ask(c, a, &e) != 0)
			continue;
		if (i == 0 && !(e.flags & SL_WIRE_META_F_LEADER) && e.leader_ip != 0 &&
		    e.leader_port != 0) {
			uint32_t named = e.epoch;

			a.ip = e.leader_ip;
			a.port = e.leader_port;
			if (!same_addr(a, c->cur) && meta_ask(c, a, &e) == 0 &&
			    (e.flags & SL_WIRE_META_F_LEADER) && e.epoch >= named) {
				*to = a;
				return 0;
			}
			hint = a;	/* not confirmed (yet): ask everyone */
			hint_epoch = named;
			continue;
		}
		if ((e.flags & SL_WIRE_META_F_LEADER) && (claim.ip == 0 || e.epoch > claim_epoch)) {
			claim = a;
			claim_epoch = e.epoch;
		} else if (!(e.flags & SL_WIRE_META_F_LEADER) && e.leader_ip != 0 &&
			   e.leader_port != 0 && (hint.ip == 0 || e.epoch > hint_epoch)) {
			hint.ip = e.leader_ip;
			hint.port = e.leader_port;
			hint_epoch = e.epoch;
		}
	}
	if (hint.ip != 0 && (claim.ip == 0 || hint_epoch > claim_epoch) &&
	    !same_addr(hint, claim) && meta_ask(c, hint, &e) == 0 &&
	    (e.flags & SL_WIRE_META_F_LEADER) && e.epoch >= hint_epoch) {
		*to = hint;
		return 0;
	}
	if (claim.ip == 0)
		return -1;
	*to = claim;
	return 0;
}

/* One round of the leader search (a search lasts until a leader is found or the request
 * timeout passed, with a pause between rounds while a leader is being elected): 0 with
 * *to; -EAGAIN: none yet, the next round not before c->find_next (the client goes on
 * meanwhile: its caller's event loop is not held for the search, only for one round, at
 * most one METADATA wait per address); -SL_E_TIMEOUT: none within the request timeout
 * (a new search starts at the next switch). */
static int
leader_find(struct sl_client *c, struct baddr *to)
{
	uint64_t now = now_us(c);

	if (c->find_t0 == 0) {
		c->find_t0 = now;
		c->find_pause = c->retry_us;
	}
	if (leader_round(c, to) == 0) {
		c->find_t0 = 0;
		c->find_next = 0;
		return 0;
	}
	now = now_us(c);
	(void)retarget_to(c, c->cur);	/* meanwhile the requests' retransmissions go there */
	if (now - c->find_t0 >= c->timeout_us) {
		c->find_t0 = 0;
		c->find_next = 0;
		return -SL_E_TIMEOUT;
	}
	c->find_next = now + c->find_pause;
	c->find_pause = min_u64(2 * c->find_pause, 200000);
	timer_arm(c, c->find_next);	/* a blocking call's poll wakes for it */
	return -EAGAIN;
}

/* Put every unanswered publish and SUB back in the QUEUED state for the new session
 * (send_queued sends them in creation order); fail the other requests as a session
 * reset does. */
static void
requeue_for_switch(struct sl_client *c, uint64_t now)
{
	struct req *r;
	uint32_t i;

	for (i = 0; i < c->n_slots; i++) {
		r = &c->reqs[i];
		if (r->state != REQ_SENT)
			continue;
		if (!is_pub(r->opcode) && r->opcode != SL_OP_SUB) {
			req_complete(c, i, -SL_E_SESSION, NULL, 0);
			continue;
		}
		r->state = REQ_QUEUED;
		c->n_sent--;
		c->n_queued++;
		/* a publish the old leader may have written: the new leader recognises it by
		 * (producer, seq) (docs/protocol.md section 8, rule 11) */
		r->keep_seq = c->producer != 0 && is_pub(r->opcode);
		r->leader_wait = 0;
		r->busy_wait = 0;
		r->busy_code = 0;
		r->rto = c->retry_us;
		r->t_first = now;	/* a full timeout at the new leader */
		c->st.leader_resent++;
	}
	c->busy_next = UINT64_MAX;
	timer_arm(c, now + c->timeout_us);
}

/*
 * Move to the leader of the partition sought: find it, and unless it is the broker we
 * talk to and only silence brought us here, open a session there and send the
 * unanswered publishes and SUBs again in their order, then subscribe again.
 */
static int
leader_switch(struct sl_client *c)
{
	int why = c->need_switch, rc;
	struct baddr to;
	uint64_t now;
	uint32_t i;

	c->switching = 1;
	c->need_switch = 0;
	rc = leader_find(c, &to);
	now = now_us(c);
	if (rc == 0 && why == 2 && same_addr(to, c->cur) && same_addr(c->sess_at, c->cur))
		rc = retarget_to(c, c->cur);	/* alive and leading: keep the session */
	else if (rc == 0)
		rc = retarget_to(c, to);
	else if (rc != -EAGAIN)
		rc = -SL_E_TIMEOUT;
	if (rc == -EAGAIN) {	/* no leader yet: the next round from a later poll */
		c->need_switch = why;
		c->last_rx = now;
		c->switching = 0;
		return 0;
	}
	if (rc != 0 || (why == 2 && same_addr(to, c->cur) && same_addr(c->sess_at, c->cur))) {
		if (rc != 0)
			c->need_switch = why;	/* again from the next poll */
		c->last_rx = now;
		c->switching = 0;
		return rc;
	}
	c->session_ok = 0;
	c->epoch++;
	for (i = 0; i < c->n_subs; i++) {
		c->subs[i]->broker_id = 0;
		c->subs[i]->fin_n = 0;
	}
	c->hot = NULL;
	requeue_for_switch(c, now);
	if (!same_addr(c->sess_at, to)) {
		c->sess_at.ip = 0;
		rc = hello(c, c->timeout_us);
		if (rc != 0) {
			c->need_switch = why;
			c->switching = 0;
			return rc;
		}
		if (c->producer == 0)
			c->seq = 1;	/* a new session numbers from 1 */
		/* with a producer id the numbers go on: a publish sent again keeps its seq
		 * (requeue_for_switch) and the new ones follow it */
	}
	/* else the same session goes on (a NOT_LEADER from the broker that leads again):
	 * its numbers go on too; starting again at 1 would meet the broker's idempotency
	 * window as SL_E_SEQ_OLD */
	c->cur = to;
	c->sess_at = to;
	c->window = clamp_window(c, c->wel.window, c->n_slots);
	c->session_ok = 1;
	c->last_rx = now_us(c);
	c->st.leader_switches++;
	send_queued(c);
	rc = resubscribe_all(c);
	c->switching = 0;
	return rc;
}

/* The topic and partition of the oldest request that names one, else of the first
 * subscription, for a silent broker: 0 or -1 (nothing to ask about). */
static int
silence_target(struct sl_client *c)
{
	const struct req *best = NULL;
	uint16_t part;
	uint32_t i;

	for (i = 0; i < c->n_slots; i++) {
		const struct req *r = &c->reqs[i];

		if ((r->state == REQ_SENT || r->state == REQ_QUEUED) && r->opcode != SL_OP_NOP &&
		    (best == NULL || r->order < best->order) &&
		    req_target(r, c->sw_topic, &part) == 0)
			best = r;
	}
	if (best != NULL && req_target(best, c->sw_topic, &c->sw_partition) == 0)
		return 0;
	if (c->n_subs == 0)
		return -1;
	memcpy(c->sw_topic, c->subs[0]->topic, sizeof(c->sw_topic));
	c->sw_partition = c->subs[0]->partition;
	return 0;
}

/* Is a leader switch to run now? Also notices a silent broker. */
static int
switch_due(struct sl_client *c, uint64_t now)
{
	const struct req *r;
	uint32_t i;

	if (!c->follow || c->switching || c->resetting || c->closing)
		return 0;
	if (c->need_switch != 0 && c->find_next > now)
		return 0;	/* a search under way: its next round later */
	if (c->need_switch == 0 && c->session_ok && c->n_sent > 0 &&
	    now - c->last_rx >= c->failover_us) {
		if (silence_target(c) != 0) {
			c->last_rx = now;
			return 0;
		}
		c->need_switch = 2;
	}
	if (c->need_switch != 1)
		return c->need_switch;
	if (now >= c->switch_at)
		return 1;
	/* NOT_LEADER: first the old broker's answers to what it still has */
	for (i = 0; i < c->n_slots; i++) {
		r = &c->reqs[i];
		if (r->state == REQ_SENT && !r->leader_wait && !r->busy_wait &&
		    r->opcode != SL_OP_NOP)
			return 0;
	}
	return 1;
}

/* Parse "a.b.c.d[:port],..." into out (up to SEEDS_MAX - *n more, duplicates skipped).
 * 0 or -EINVAL. */
static int
parse_addrs(const char *list, uint16_t defport, struct baddr *out, uint32_t *n)
{
	char one[64], *colon;
	const char *p = list, *end;
	struct baddr a;
	struct in_addr ia;
	uint32_t i, len;
	long port;

	while (*p != '\0') {
		end = strchr(p, ',');
		len = end != NULL ? (uint32_t)(end - p) : (uint32_t)strlen(p);
		if (len == 0 || len >= sizeof(one))
			return -EINVAL;
		memcpy(one, p, len);
		one[len] = '\0';
		a.port = defport;
		colon = strchr(one, ':');
		if (colon != NULL) {
			*colon = '\0';
			port = strtol(colon + 1, &colon, 10);
			if (*colon != '\0' || port <= 0 || port > 65535)
				return -EINVAL;
			a.port = (uint16_t)port;
		}
		if (inet_pton(AF_INET, one, &ia) != 1)
			return -EINVAL;
		a.ip = ia.s_addr;
		for (i = 0; i < *n && !same_addr(out[i], a); i++)
			;
		if (i == *n && *n < SEEDS_MAX)
			out[(*n)++] = a;
		p = end != NULL ? end + 1 : p + len;
	}
	return 0;
}

/* Set up following from conf: the current broker and the seeds. 0 or -EINVAL. */
static int
follow_setup(struct sl_client *c, const struct sl_client_conf *conf)
{
	uint16_t port = conf->broker_port != 0 ? conf->broker_port : SL_WIRE_UDP_PORT;
	int rc = 0;

	c->failover_us = (uint64_t)(conf->failover_ms != 0 ? conf->failover_ms :
				    DEF_FAILOVER_MS) * 1000;
	if (conf->broker_ip != NULL)
		rc = parse_addrs(conf->broker_ip, port, c->seeds, &c->nseeds);
	if (rc == 0 && conf->seeds != NULL)
		rc = parse_addrs(conf->seeds, port, c->seeds, &c->nseeds);
	if (rc != 0)
		return rc;
	if (c->nseeds > 0)
		c->cur = c->seeds[0];
	c->tgt = c->cur;
	c->sess_at = c->cur;
	c->follow = c->ops->retarget != NULL && c->nseeds > 0 &&
		    (c->nseeds > 1 || conf->follow_leader);
	return 0;
}

/* ---- polling ---- */

static int
poll_once(struct sl_client *c, uint32_t timeout_us)
{
	uint64_t now, end, due;
	uint32_t wait;
	int n, handled = 0, rc = 0;

	c->depth++;
	/* what the application queued since the last poll (sl_client_pub_async) leaves
	 * first, in one batch */
	tx_flush(c);
	now = now_us(c);
	end = now + timeout_us;
	/* what already arrived first: after a stall (this process descheduled on a busy
	 * machine) the answers wait in the socket, and timers run before them would resend
	 * every request in flight */
	while (handled < POLL_BURST && (n = c->ops->recv(c->x, rxbuf(c), RX_BUF_LEN, 0)) > 0) {
		handle_frame(c, rxbuf(c), (uint32_t)n);
		handled++;
	}
	if (handled > 0) {
		c->last_rx = now_us(c);
		now = c->last_rx;
	}
	for (; handled == 0;) {
		run_timers(c, now);
		heartbeat(c, now);
		wait = 0;
		if (now < end) {
			due = min_u64(end, min_u64(c->next_timer, heartbeat_due(c)));
			wait = due > now ? (uint32_t)(due - now) : 0;
		}
		if (wait > 0)
			tx_flush(c);	/* retransmissions, a heartbeat: before waiting */
		n = c->ops->recv(c->x, rxbuf(c), RX_BUF_LEN, wait);
		if (n > 0) {
			handle_frame(c, rxbuf(c), (uint32_t)n);
			handled++;
			c->last_rx = now_us(c);
			break;
		}
		if (n == -EMSGSIZE)
			c->st.bad_frames++;
		now = now_us(c);
		if (now >= end)
			break;
	}
	while (handled > 0 && handled < POLL_BURST) {
		n = c->ops->recv(c->x, rxbuf(c), RX_BUF_LEN, 0);
		if (n <= 0)
			break;
		handle_frame(c, rxbuf(c), (uint32_t)n);
		handled++;
	}
	now = now_us(c);
	run_timers(c, now);
	if (c->n_queued > 0)
		send_queued(c);
	fins_flush(c);
	heartbeat(c, now);
	/* everything this poll sent (requests started by callbacks, retransmissions,
	 * queued requests, FINs, a heartbeat) leaves in one batch, before a session reset
	 * or leader switch moves the transport */
	tx_flush(c);
	if (c->need_reset && !c->resetting && !c->closing && !c->switching)
		rc = session_reset(c);
	else if (switch_due(c, now))
		rc = leader_switch(c);
	tx_flush(c);	/* what the new session sent again */
	c->depth--;
	return rc < 0 ? rc : handled;
}

int
sl_client_poll(struct sl_client *c, uint32_t timeout_us)
{
	if (c == NULL)
		return -SL_E_INVAL;
	return poll_once(c, timeout_us);
}

/* ---- open / close ---- */

int
sl_client_token_read(const char *path, char *buf, size_t cap)
{
	const char *env = getenv("SLUICE_TOKEN");
	char line[SL_WIRE_TOKEN_MAX + 64], *p = NULL;
	size_t len = 0;
	FILE *f;
	int rc = -EINVAL;

	if (path == NULL) {
		if (env == NULL || env[0] == '\0')
			return 1;
		len = strlen(env);
		if (len > SL_WIRE_TOKEN_MAX || len + 1 > cap)
			return -EINVAL;
		memcpy(buf, env, len + 1);
		return 0;
	}
	f = fopen(path, "r");
	if (f == NULL)
		return -errno;
	while (fgets(line, sizeof(line), f) != NULL) {
		p = line + strspn(line, " \t");
		len = strcspn(p, " \t\r\n");
		if (len == 0 || p[0] == '#')
			continue;
		if (len <= SL_WIRE_TOKEN_MAX && len + 1 <= cap) {
			memcpy(buf, p, len);
			buf[len] = '\0';
			rc = 0;
		}
		break;
	}
	fclose(f);
	explicit_bzero(line, sizeof(line));
	return rc;
}

struct sl_client *
sl_client_open_xport(const struct sl_client_conf *conf, const struct sl_xport_ops *ops,
		     void *x)
{
	struct sl_client *c = NULL;
	uint64_t need, cap;
	uint32_t i, xmax;
	int err;

	if (conf == NULL || ops == NULL || ops->send == NULL || ops->recv == NULL ||
	    ops->close == NULL || (ops->queue != NULL && ops->flush == NULL)) {
		err = EINVAL;
		goto fail;
	}
	c = calloc(1, sizeof(*c));
	if (c == NULL) {
		err = ENOMEM;
		goto fail;
	}
	c->ops = ops;
	c->x = x;
	c->conf_window = conf->window;
	if (follow_setup(c, conf) != 0) {
		err = EINVAL;
		goto fail;
	}
	if (conf->token != NULL) {
		size_t tl = strlen(conf->token);

		if (tl == 0 || tl > SL_WIRE_TOKEN_MAX) {
			err = EINVAL;
			goto fail;
		}
		memcpy(c->token, conf->token, tl);
		c->token_len = (uint8_t)tl;
	}
	c->retry_us = (uint64_t)(conf->retry_ms != 0 ? conf->retry_ms : DEF_RETRY_MS) * 1000;
	c->rto_us = c->retry_us;
	c->timeout_us = (uint64_t)(conf->timeout_ms != 0 ? conf->timeout_ms : DEF_TIMEOUT_MS) *
			1000;
	c->rto_max_us = c->retry_us > RTO_MAX_US ? c->retry_us : RTO_MAX_US;
	c->fail_busy = conf->fail_busy != 0;
	c->may_bundle = !conf->no_bundle && ops->bundles != NULL && ops->bundles(x) == 1;
	c->epoch = 1;
	c->next_sub_id = 1;
	c->next_timer = UINT64_MAX;
	c->busy_next = UINT64_MAX;
	c->busy_rto = c->retry_us;
	c->nonce = (now_us(c) * 0x9E3779B97F4A7C15ULL) ^ ((uint64_t)getpid() << 32) ^
		   (uint64_t)(uintptr_t)c;
	/* the idempotent producer: one id for the client's life, on every broker */
	c->producer = conf->producer_id;
	if (c->producer == SL_CLIENT_NO_PRODUCER)
		c->producer = 0;
	else if (c->producer == 0 &&
		 (getrandom(&c->producer, sizeof(c->producer), 0) != sizeof(c->producer) ||
		  c->producer == 0))
		c->producer = c->nonce | 1;
	c->rx_main = malloc(RX_BUF_LEN);
	c->rx_alt = malloc(RX_BUF_LEN);
	if (c->rx_main == NULL || c->rx_alt == NULL) {
		err = ENOMEM;
		goto fail;
	}

	err = -hello(c, c->timeout_us);
	if (err != 0)
		goto fail;

	/* Request table, sized once from the first WELCOME. */
	c->n_slots = clamp_window(c, c->wel.window, 0);
	c->window = c->n_slots;
	xmax = ops->dgram_max != NULL ? ops->dgram_max(x) : SL_XPORT_DGRAM_MAX;
	need = (uint64_t)SL_WIRE_HDR_LEN + PUB_OVERHEAD + SL_WIRE_NAME_MAX + c->wel.max_msg;
	cap = need > SL_WIRE_DGRAM_MAX_STD ? need : SL_WIRE_DGRAM_MAX_STD;
	c->frame_cap = (uint32_t)min_u64(cap, xmax);
	c->reqs = calloc(c->n_slots, sizeof(*c->reqs));
	c->frames = malloc((size_t)c->n_slots * c->frame_cap);
	c->frag = malloc(c->frame_cap);
	c->free_stack = malloc(c->n_slots * sizeof(*c->free_stack));
	c->busy_tmp = malloc(c->n_slots * sizeof(*c->busy_tmp));
	if (c->reqs == NULL || c->frames == NULL || c->free_stack == NULL ||
	    c->busy_tmp == NULL || c->frag == NULL) {
		err = ENOMEM;
		goto fail;
	}
	for (i = 0; i < c->n_slots; i++) {
		c->reqs[i].frame = c->frames + (size_t)i * c->frame_cap;
		c->free_stack[i] = c->n_slots - 1 - i;
	}
	c->n_free = c->n_slots;
	c->seq = 1;
	c->session_ok = 1;
	c->last_rx = now_us(c);
	return c;

fail:
	if (c != NULL) {
		free(c->rx_main);
		free(c->rx_alt);
		free(c->reqs);
		free(c->frames);
		free(c->frag);
		free(c->big);
		free(c->free_stack);
		explicit_bzero(c->token, sizeof(c->token));
		free(c->busy_tmp);
		free(c);
	}
	if (ops != NULL && ops->close != NULL)
		ops->close(x);
	errno = err;
	return NULL;
}

struct sl_client *
sl_client_open(const struct sl_client_conf *conf)
{
	const struct sl_xport_ops *ops = NULL;
	void *x;

	struct sl_client_conf first;
	struct baddr a[SEEDS_MAX];
	char ip[INET_ADDRSTRLEN];
	uint32_t n = 0;

	if (conf == NULL) {
		errno = EINVAL;
		return NULL;
	}
	/* the transport starts at the first address of a list "a[:port],b,..." */
	first = *conf;
	if (conf->broker_ip != NULL && strpbrk(conf->broker_ip, ",:") != NULL) {
		if (parse_addrs(conf->broker_ip, conf->broker_port != 0 ? conf->broker_port :
			    SL_WIRE_UDP_PORT, a, &n) != 0 || n == 0 ||
		    inet_ntop(AF_INET, &a[0].ip, ip, sizeof(ip)) == NULL) {
			errno = EINVAL;
			return NULL;
		}
		first.broker_ip = ip;
		first.broker_port = a[0].port;
	}
	switch (conf->xport) {
	case SL_XPORT_UDP:
		x = sl_xport_udp_open(&first, &ops);
		break;
	case SL_XPORT_DPDK:
		x = sl_xport_dpdk_open(&first, &ops);
		break;
	default:
		errno = EINVAL;
		return NULL;
	}
	if (x == NULL)
		return NULL;
	return sl_client_open_xport(conf, ops, x);
}

void
sl_client_close(struct sl_client *c)
{
	struct sl_wire_hdr h = req_hdr();
	struct sl_wire_chan_op op;
	uint64_t now, end;
	uint32_t i, idx;
	int len;

	if (c == NULL)
		return;
	c->closing = 1;
	if (c->session_ok && acquire_slot(c, &idx) == 0) {
		fins_flush(c);
		memset(&op, 0, sizeof(op));
		op.addr.topic = "";
		op.addr.channel = "";
		len = sl_wire_encode_chan_op(c->reqs[idx].frame, c->frame_cap, &h, SL_OP_CLS,
					     &op, NULL);
		if (len < 0)
			slot_put(c, idx);
		else
			req_start(c, idx, SL_OP_CLS, (uint32_t)len, NULL, NULL, NULL, 0);
	}
	/* wait a little for the answers to what is in flight (FINs, CLS) */
	now = now_us(c);
	end = now + min_u64(c->timeout_us, CLOSE_WAIT_MAX_MS * 1000);
	while (c->in_flight > 0 && c->session_ok && now < end) {
		(void)poll_once(c, (uint32_t)min_u64(end - now, WAIT_SLICE_US));
		now = now_us(c);
	}
	fail_requests(c, -ECANCELED, 0);
	tx_flush(c);
	c->ops->close(c->x);
	for (i = 0; i < c->n_subs; i++)
		free(c->subs[i]);
	free(c->subs);
	free(c->rx_main);
	free(c->rx_alt);
	free(c->reqs);
	free(c->frames);
	free(c->frag);
	free(c->big);
	free(c->free_stack);
	explicit_bzero(c->token, sizeof(c->token));
	free(c->busy_tmp);
	free(c);
}

int
sl_client_bundled(const struct sl_client *c)
{
	return c->bundle;
}

const struct sl_wire_welcome *
sl_client_welcome(const struct sl_client *c)
{
	return &c->wel;
}

/* ---- publishing ---- */

static int
pub_start(struct sl_client *c, const char *topic, uint16_t partition, int mpub,
	  uint32_t count, const void *const *datas, const uint32_t *lens, sl_pub_cb_t cb,
	  void *arg, struct waiter *w)
{
	struct sl_wire_hdr h = req_hdr();
	uint64_t size, chunk;
	size_t tlen;
	uint32_t i, idx;
	int rc, len, split = 0;

	if (c == NULL || topic == NULL || datas == NULL || lens == NULL || count == 0 ||
	    count > SL_WIRE_MPUB_MAX)
		return -SL_E_INVAL;
	tlen = strlen(topic);
	if (sl_wire_check_name(topic, tlen) != 0)
		return -SL_E_NAME;
	/* refuse before waiting for a slot: the frame layout of wire.h */
	size = SL_WIRE_HDR_LEN + 4 + tlen + (mpub ? 2 : 0);
	for (i = 0; i < count; i++) {
		if (datas[i] == NULL && lens[i] != 0)
			return -SL_E_INVAL;
		if (lens[i] > c->wel.max_msg)
			return -SL_E_TOO_BIG;
		size += 4 + (uint64_t)lens[i];
	}
	if (size > c->frame_cap) {
		/* an MPUB larger than a datagram goes as up to 16 MPUB_PART fragments */
		chunk = sl_wire_mpart_chunk_max(c->frame_cap, (uint8_t)tlen, 0);
		size -= SL_WIRE_HDR_LEN + 4 + tlen + 2;	/* the element area */
		if (!mpub || chunk == 0 || size > SL_WIRE_MPART_TOTAL_MAX ||
		    (size + chunk - 1) / chunk > SL_WIRE_MPART_FRAGS)
			return -SL_E_TOO_BIG;
		if (c->big == NULL) {
			c->big = malloc((size_t)c->n_slots * SPLIT_CAP);	/* once */
			if (c->big == NULL)
				return -ENOMEM;
		}
		split = 1;
	}

	rc = acquire_slot(c, &idx);
	if (rc != 0)
		return rc;
	if (split) {
		c->reqs[idx].split = 1;
		c->reqs[idx].frame = c->big + (size_t)idx * SPLIT_CAP;
	}
	if (c->fail_busy)
		h.flags |= SL_WIRE_F_NORESEND;	/* a busy refusal opens no hole: not resent */
	len = sl_wire_encode_pub(c->reqs[idx].frame, split ? SPLIT_CAP : c->frame_cap, &h, mpub,
				 partition, topic, 0, 0, (uint16_t)count, datas, lens);
	if (len < 0) {
		slot_put(c, idx);
		return len;
	}
	req_start(c, idx, mpub ? SL_OP_MPUB : SL_OP_PUB, (uint32_t)len, cb, arg, w, 0);
	return 0;
}

static int
pub_wait(struct sl_client *c, const char *topic, uint16_t partition, int mpub,
	 uint32_t count, const void *const *datas, const uint32_t *lens,
	 struct sl_pub_result *res)
{
	struct waiter w = { 0 };
	int rc;

	rc = pub_start(c, topic, partition, mpub, count, datas, lens, NULL, NULL, &w);
	if (rc == 0)
		rc = wait_req(c, &w);
	if (res != NULL) {
		memset(res, 0, sizeof(*res));
		res->err = rc;
		if (rc == 0) {
			res->partition = w.ok.partition;
			res->count = w.ok.count;
			res->id = w.ok.id;
			res->offset = w.ok.offset;
		} else {
			res->partition = w.err_partition;
		}
	}
	return rc;
}

int
sl_client_pub(struct sl_client *c, const char *topic, uint16_t partition, const void *data,
	      uint32_t len, struct sl_pub_result *res)
{
	const void *datas[1] = { data };
	uint32_t lens[1] = { len };

	return pub_wait(c, topic, partition, 0, 1, datas, lens, res);
}

int
sl_client_mpub(struct sl_client *c, const char *topic, uint16_t partition, uint32_t count,
	       const void *const *datas, const uint32_t *lens, struct sl_pub_result *res)
{
	return pub_wait(c, topic, partition, 1, count, datas, lens, res);
}

int
sl_client_pub_async(struct sl_client *c, const char *topic, uint16_t partition,
		    uint32_t count, const void *const *datas, const uint32_t *lens,
		    sl_pub_cb_t cb, void *arg)
{
	return pub_start(c, topic, partition, count > 1, count, datas, lens, cb, arg, NULL);
}

int
sl_client_flush(struct sl_client *c, uint32_t timeout_ms)
{
	uint64_t now, end;

	if (c == NULL)
		return -SL_E_INVAL;
	now = now_us(c);
	end = now + (uint64_t)timeout_ms * 1000;
	for (;;) {
		fins_flush(c);
		if (c->in_flight == 0 && !fins_pending(c))
			return 0;
		if (now >= end)
			return -SL_E_TIMEOUT;
		(void)poll_once(c, (uint32_t)min_u64(end - now, WAIT_SLICE_US));
		now = now_us(c);
	}
}

uint32_t
sl_client_in_flight(const struct sl_client *c)
{
	return c->in_flight;
}

/* ---- subscriptions ---- */

int64_t
sl_client_sub(struct sl_client *c, const char *topic, uint16_t partition,
	      const char *channel, uint8_t flags, uint32_t rdy, sl_msg_cb_t cb, void *arg)
{
	size_t tlen, clen;
	struct sub *s;
	uint64_t id;
	int rc;

	if (c == NULL || topic == NULL || channel == NULL || cb == NULL)
		return -SL_E_INVAL;
	tlen = strlen(topic);
	clen = strlen(channel);
	if (sl_wire_check_name(topic, tlen) != 0 || sl_wire_check_name(channel, clen) != 0)
		return -SL_E_NAME;
	s = calloc(1, sizeof(*s));
	if (s == NULL)
		return -ENOMEM;
	s->id = c->next_sub_id++;
	s->partition = partition;
	s->flags = flags;
	s->rdy = rdy;
	s->topic_len = (uint8_t)tlen;
	s->channel_len = (uint8_t)clen;
	memcpy(s->topic, topic, tlen);
	memcpy(s->channel, channel, clen);
	s->cb = cb;
	s->arg = arg;
	s->resub_epoch = c->epoch;
	rc = sub_insert(c, s);
	if (rc != 0) {
		free(s);
		return rc;
	}
	id = s->id;
	rc = sub_request(c, id);
	if (rc != 0) {
		s = sub_by_id(c, id);
		if (s != NULL)
			sub_remove(c, s);
		return rc;
	}
	return (int64_t)id;
}

/* Start a channel operation on subscription sub_id: waits for a slot if needed; with
 * w, also waits for the answer. */
static int
chan_op(struct sl_client *c, uint64_t sub_id, uint8_t opcode, struct sl_wire_chan_op *op,
	struct waiter *w)
{
	struct sl_wire_hdr h = req_hdr();
	struct sub *s;
	uint32_t idx;
	int rc, len;

	if (c == NULL)
		return -SL_E_INVAL;
	if (sub_by_id(c, sub_id) == NULL)
		return -ENOENT;
	rc = acquire_slot(c, &idx);
	if (rc != 0)
		return rc;
	s = sub_by_id(c, sub_id); /* may have gone while we waited */
	if (s == NULL) {
		slot_put(c, idx);
		return -ENOENT;
	}
	op->addr = sub_addr(s);
	len = sl_wire_encode_chan_op(c->reqs[idx].frame, c->frame_cap, &h, opcode, op, NULL);
	if (len < 0) {
		slot_put(c, idx);
		return len;
	}
	req_start(c, idx, opcode, (uint32_t)len, NULL, NULL, w, 0);
	if (w != NULL)
		return wait_req(c, w);
	if (c->depth == 0)
		tx_flush(c);	/* outside a poll: sent now, as before batching */
	return 0;
}

int
sl_client_rdy(struct sl_client *c, uint64_t sub_id, uint32_t rdy)
{
	struct sl_wire_chan_op op = { .count = rdy };
	struct sub *s = c != NULL ? sub_by_id(c, sub_id) : NULL;

	if (s == NULL)
		return c == NULL ? -SL_E_INVAL : -ENOENT;
	s->rdy = rdy; /* also what a new session's SUB asks for */
	return chan_op(c, sub_id, SL_OP_RDY, &op, NULL);
}

int
sl_client_fin(struct sl_client *c, uint64_t sub_id, uint64_t msg_id)
{
	int rc;

	if (c == NULL)
		return -SL_E_INVAL;
	rc = fin_add(c, sub_id, msg_id);
	if (rc == 0 && c->depth == 0) {
		fins_flush(c); /* outside a poll: do not wait for the next one */
		tx_flush(c);
	}
	return rc;
}

int
sl_client_req(struct sl_client *c, uint64_t sub_id, uint64_t msg_id, uint32_t delay_ms)
{
	struct sl_wire_chan_op op = { .msg_id = msg_id, .delay_ms = delay_ms };

	return chan_op(c, sub_id, SL_OP_REQ, &op, NULL);
}

int
sl_client_touch(struct sl_client *c, uint64_t sub_id, uint64_t msg_id)
{
	struct sl_wire_chan_op op = { .msg_id = msg_id };

	return chan_op(c, sub_id, SL_OP_TOUCH, &op, NULL);
}

int
sl_client_set_offset(struct sl_client *c, uint64_t sub_id, uint8_t kind, uint64_t value)
{
	struct sl_wire_chan_op op = { .kind = kind, .value = value };
	struct waiter w = { 0 };

	if (kind > SL_OFF_END)
		return -SL_E_INVAL;
	return chan_op(c, sub_id, SL_OP_SET_OFFSET, &op, &w);
}

int
sl_client_unsub(struct sl_client *c, uint64_t sub_id)
{
	char topic[SL_WIRE_NAME_MAX + 1], channel[SL_WIRE_NAME_MAX + 1];
	struct sl_wire_hdr h = req_hdr();
	struct sl_wire_chan_op op;
	struct waiter w = { 0 };
	struct sub *s;
	uint32_t idx;
	int rc, len;

	if (c == NULL)
		return -SL_E_INVAL;
	/* FIN what the application finished, then forget the subscription (a new session
	 * must not re-subscribe it, and its MSGs are no longer delivered), then CLS it. */
	for (;;) {
		s = sub_by_id(c, sub_id);
		if (s == NULL)
			return -ENOENT;
		if (s->fin_n == 0 || !c->session_ok)
			break;
		rc = acquire_slot(c, &idx);
		if (rc != 0)
			return rc;
		s = sub_by_id(c, sub_id);
		if (s == NULL || s->fin_n == 0)
			slot_put(c, idx);
		else
			fin_send(c, s, idx);
	}
	memset(&op, 0, sizeof(op));
	op.addr = sub_addr(s);
	memcpy(topic, s->topic, sizeof(topic));
	memcpy(channel, s->channel, sizeof(channel));
	op.addr.topic = topic;
	op.addr.channel = channel;
	sub_remove(c, s);

	rc = acquire_slot(c, &idx);
	if (rc != 0)
		return rc;
	len = sl_wire_encode_chan_op(c->reqs[idx].frame, c->frame_cap, &h, SL_OP_CLS, &op,
				     NULL);
	if (len < 0) {
		slot_put(c, idx);
		return len;
	}
	req_start(c, idx, SL_OP_CLS, (uint32_t)len, NULL, NULL, &w, 0);
	return wait_req(c, &w);
}

int
sl_client_fd(const struct sl_client *c)
{
	if (c == NULL || c->ops->fd == NULL)
		return -1;
	return c->ops->fd(c->x);
}

uint64_t
sl_client_next_timer_us(const struct sl_client *c)
{
	uint64_t now, due;

	if (c == NULL)
		return UINT64_MAX;
	if (c->tx_pending > 0 || (c->need_switch == 2 && c->find_next == 0) ||
	    (c->need_reset && !c->resetting && !c->closing) ||
	    (c->session_ok && c->in_flight < c->window && fins_pending(c)) ||
	    (c->n_queued > 0 && can_send(c)))
		return 0;
	due = min_u64(c->next_timer, heartbeat_due(c));
	if (c->need_switch != 0 && c->find_next != 0)
		due = min_u64(due, c->find_next);	/* the search's next round */
	else if (c->need_switch == 1)
		due = min_u64(due, c->switch_at);
	if (c->follow && c->session_ok && c->n_sent > 0)
		due = min_u64(due, c->last_rx + c->failover_us);
	if (due == UINT64_MAX)
		return UINT64_MAX;
	now = now_us(c);
	return due > now ? due - now : 0;
}

void
sl_client_get_stats(const struct sl_client *c, struct sl_client_stats *st)
{
	*st = c->st;
	st->srtt_us = c->srtt_us;
	st->rto_us = c->rto_us;
}
