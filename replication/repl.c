/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * repl.c: replication of one topic partition (repl.h), leader and replica side.
 *
 * Wire format of the replica datagrams (little-endian, every datagram <=
 * SL_REPL_MAX_DGRAM bytes; docs/replication.md has the same tables):
 *
 * Header, 40 bytes, in every datagram:
 *   0  u8[3] magic "SLR" (0x53 0x4c 0x52)
 *   3  u8    version (1)
 *   4  u8    type (T_* below)
 *   5  u8    status (answers: ST_* below; 0 in requests)
 *   6  u8    flags (CHAN_SYNC: F_ACK 1 = answer wanted, F_SET_OFFSET 2; FETCH: F_EMPTY 4;
 *             WRITE, FETCH_RESP: F_PTAG 8 = every record carries its producer tag;
 *             FETCH_RESP: F_MORE 16 = more answers to the same FETCH follow)
 *   7  u8    reserved (0)
 *   8  u32   partition
 *   12 u32   view epoch of the leadership the datagram belongs to
 *   16 u64   topic hash (sl_repl_topic_hash)
 *   24 u64   leader session
 *   32 u64   write epoch (leader: its current one; answers: echoed)
 *
 * A commit record ("crec", 56 bytes): the layout of dataplane/base/crec.h (the one codec,
 *   shared with the disk log). A record in WRITE and FETCH_RESP is the crec, with F_PTAG
 *   its producer tag (u64 producer id, u64 seq; 0 0 = none: the idempotency state that
 *   follows the log, dataplane/ptab.h), then msg_size bytes of messages. This build always
 *   sends F_PTAG and reads records with or without it.
 *
 * Bodies, after the header (offsets from the end of the header):
 *   1 WRITE       leader -> ISR member: u64 commit, u64 prev_epoch (epoch of the record
 *                 ending at log_id - 1, 0 for id 1), then one or more records back to
 *                 back, each a crec and its msg_size bytes of messages (consecutive:
 *                 each record's prev_epoch is the epoch of the one before it)
 *   2 WRITE_ACK   member -> leader: u64 end (the end of the prefix it holds that is known
 *                 to match the leader's log), u64 end_epoch (epoch of that record),
 *                 u64 commit (the member's). Answers WRITE and HEARTBEAT.
 *   3 HEARTBEAT   leader -> ISR member: u64 commit, u64 leader_end
 *   4 CHAN_SYNC   leader -> member: u64 seq, u64 confirmed_id, u8 name_len, name bytes
 *   5 CHAN_ACK    member -> leader: u64 seq
 *   6 CATCHUP_REQ replica -> leader: u64 last_epoch (epoch of its last record), u64 end
 *   7 CATCHUP_RESP leader -> replica: u64 req_epoch, u64 end (ops->epoch_end(req_epoch)),
 *                 u64 end_epoch (epoch of the leader's record ending there), u64
 *                 leader_end, u64 leader_last_epoch, u64 commit
 *   8 FETCH       replica -> leader: u64 from (first id wanted), u64 prev_epoch (epoch of
 *                 the replica's record ending at from - 1), and optionally u32 batch: the
 *                 answers wanted, 1 to FETCH_BATCH (absent: 1); flag F_EMPTY 4: the
 *                 replica holds no record and its log starts at from (no previous epoch
 *                 to check)
 *   9 FETCH_RESP  leader -> replica: u64 from, u64 commit, u64 leader_end, u32 nrec,
 *                 u32 reserved, then nrec times (crec, msg_size bytes of messages); up to
 *                 `batch` answers to one FETCH, consecutive (each one's from is the end of
 *                 the one before + 1), every one but the last with flag F_MORE 16;
 *                 status ST_MISMATCH when from - 1 / prev_epoch is not in the leader's log;
 *                 status ST_RESET when `from` is older than the leader's first record
 *                 (retention): nrec 0, then u64 first_id, u64 first_offset, and the
 *                 replica restarts its log empty there (ops->reset)
 *   10 JOIN_REQ   replica -> leader: u64 end
 *   11 VIEW       leader -> every other replica: u8 nisr, u8[3] 0, then nisr u32 node ids:
 *                 the ISR the leader commits with (on every change, and every lag
 *                 timeout), for the replicas' views (ops->leader_isr)
 *
 * Status: 0 OK, 1 DUP (already held: OK, nothing written), 2 GAP (not at the expected
 * id, or the previous record's epoch differs: resend from the answer's end + 1), 3 FENCED
 * (stale session or epoch), 4 NOT_ISR, 5 STALE_VIEW (the receiver's view is older than
 * the datagram's epoch), 6 PUB_ARG, 7 IO (local append failed), 8 MISMATCH, 9 RESET.
 *
 * No heap allocation after sl_repl_open: the transmit and read buffers, the window ring
 * of pending record ends, the member table and the channel tables live in struct sl_repl.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "err.h"
#include "repl.h"

#define MAGIC0 0x53
#define MAGIC1 0x4c
#define MAGIC2 0x52
#define VERSION 1
#define HDR_LEN 40
#define CREC_LEN SL_CREC_LEN
#define PTAG_LEN 16		/* a record's producer tag: u64 producer, u64 seq */
#define REC_HDR (CREC_LEN + PTAG_LEN)	/* what precedes a record's messages (F_PTAG) */

enum { T_WRITE = 1, T_WRITE_ACK, T_HEARTBEAT, T_CHAN_SYNC, T_CHAN_ACK, T_CATCHUP_REQ,
	T_CATCHUP_RESP, T_FETCH, T_FETCH_RESP, T_JOIN_REQ, T_VIEW, T_MAX };
enum { ST_OK = 0, ST_DUP, ST_GAP, ST_FENCED, ST_NOT_ISR, ST_STALE_VIEW, ST_PUB_ARG, ST_IO,
	ST_MISMATCH, ST_RESET };
#define F_ACK 1
#define F_SET_OFFSET 2
#define F_EMPTY 4		/* FETCH: the replica holds no record, its log starts at from */
#define F_PTAG 8		/* WRITE, FETCH_RESP: every crec is followed by its producer tag */
#define F_MORE 16		/* FETCH_RESP: more answers to this FETCH follow */
#define FETCH_BATCH 16		/* FETCH: answers asked per request (a catch-up pipelined:
				 * one datagram per round trip fell behind a busy leader) */

#define BURST 32			/* records resent per member per round */
#define CHAN_PEND 64			/* leader: channel syncs in flight */
#define MARKS 8				/* ISR lag marks per member (power of 2) */
#define CHAN_CACHE 64			/* replica: channels with a cached position */

enum { M_NONE, M_FOLLOW, M_PROBE, M_FETCH };

struct member {
	uint32_t node;
	uint8_t in_isr;			/* in the installed view's ISR */
	uint8_t joining;		/* isr_join asked: counted for commits */
	uint8_t join_wait;		/* JOIN_REQ accepted, writes paused, not yet joined */
	uint8_t leave_asked;
	uint64_t acked;			/* validated end it holds */
	uint64_t next;			/* next id to send */
	uint64_t fetch_end;		/* validated end from its last FETCH */
	uint64_t last_send_ns;
	uint64_t caught_ns;		/* last time it held the leader's whole log */
	uint8_t mark_head, mark_n;	/* marks not reached yet, oldest first */
	struct {
		uint64_t end;		/* the leader's end at ns: reaching it ... */
		uint64_t ns;		/* ... makes caught_ns ns */
	} mark[MARKS];
	uint64_t leave_ns;
	/* retransmission (rto_next): the timer runs from rto_base_ns (the last progress, the
	 * last retransmission, or the first record outstanding) for rto_ns, which follows the
	 * member's round trip and doubles per timeout */
	uint64_t rto_ns, rto_base_ns;
	uint64_t srtt_ns;		/* smoothed WRITE-to-ack round trip (0: none yet) */
	uint64_t rtt_end, rtt_ns;	/* the sample in flight: the ack of rtt_end (0: none) */
	/* a rejoin that did not make it within the pause: its next JOIN_REQ waits until
	 * join_until, join_hold (from 4 pauses, doubling to the ISR lag window) */
	uint64_t join_until, join_hold;
};

struct chan_pend {
	uint8_t used;
	uint8_t internal;		/* rejoin transfer: no chan_done */
	uint8_t flags;
	uint8_t need;			/* member mask */
	uint8_t acked;
	uint64_t seq;
	uint64_t token;
	uint64_t confirmed;
	uint64_t prev;
	uint64_t first_ns;
	uint64_t send_ns;
	char name[SL_REPL_CHAN_NAME_MAX + 1];
};

struct chan_cache {
	uint8_t used;
	uint8_t has_cached;
	uint64_t session;
	uint64_t seq;
	uint64_t cached;
	char name[SL_REPL_CHAN_NAME_MAX + 1];
};

struct sl_repl {
	struct sl_repl_conf conf;
	struct sl_repl_ops ops;
	struct sl_repl_view view;
	uint8_t have_view;
	uint8_t is_leader;
	uint8_t in_isr;			/* replica */
	uint8_t joining;		/* replica: JOIN_REQ sent in this session */
	uint8_t mode;			/* replica: M_* */
	uint64_t now;
	uint32_t maxd;			/* largest datagram we send */
	uint8_t unsent;			/* leader: records written, not yet sent to a member */

	/* the local log */
	uint64_t end;
	uint64_t end_epoch;
	uint8_t empty;			/* no record held (end: the id before the log's start,
					 * 0 unless the log was reset to a later start) */
	uint64_t commit;

	/* leader */
	uint64_t wepoch;
	uint64_t inherited;		/* our end when we became leader: records of earlier
					 * leaderships, maybe committed by them, never rolled
					 * back by us */
	uint32_t gen;
	uint32_t nmembers;
	struct member m[SL_REPL_MAX_NODES];
	uint64_t ring[SL_REPL_WINDOW];	/* ends of pending records */
	uint32_t ring_head;
	uint32_t ring_n;
	uint64_t chan_seq;
	uint64_t pause_until;
	int join_idx;			/* member being joined, -1 */
	struct chan_pend cp[CHAN_PEND];

	/* replica */
	uint64_t vend;			/* end of the prefix known to match the leader's */
	uint64_t lcommit;		/* the leader's commit index as last heard */
	uint64_t lwepoch;		/* the leader's highest write epoch heard: a datagram
					 * with an older one was sent before a rollback */
	uint64_t req_ns;		/* replica: last request sent, or FETCH answer taken */
	/* replica: the FETCH timeout, like the leader's per-member one (rto_of): twice the
	 * smoothed time from a FETCH to its last answer, doubled per timeout, a sample only
	 * from a FETCH not sent again (fetch_timed) */
	uint64_t fetch_ns, fetch_srtt_ns, fetch_rto_ns;
	uint8_t fetch_timed;
	uint8_t fetch_idle;		/* the last answer showed the leader's end: the next
					 * FETCH (every retransmit_ns) is a poll, not a resend */
	uint64_t view_ns;		/* leader: last VIEW sent */
	uint64_t heard_ns;		/* replica: last datagram from the view's leader */
	uint64_t join_ns;
	struct chan_cache cc[CHAN_CACHE];

	struct sl_repl_stats st;
	uint8_t tx[SL_REPL_MAX_DGRAM];
	uint8_t rd[SL_REPL_MAX_DGRAM];
};

/* ---- encoding ---- */

/* header for a datagram of this leadership (sess/vepoch/wepoch given) */
static uint8_t *
hdr(struct sl_repl *r, int type, int status, int flags, uint32_t vepoch, uint64_t sess,
    uint64_t wepoch)
{
	uint8_t *p = r->tx;

	p[0] = MAGIC0;
	p[1] = MAGIC1;
	p[2] = MAGIC2;
	p[3] = VERSION;
	p[4] = type;
	p[5] = status;
	p[6] = flags;
	p[7] = 0;
	sl_bytes_put_le32(p + 8, r->conf.partition);
	sl_bytes_put_le32(p + 12, vepoch);
	sl_bytes_put_le64(p + 16, r->conf.topic_hash);
	sl_bytes_put_le64(p + 24, sess);
	sl_bytes_put_le64(p + 32, wepoch);
	return p + HDR_LEN;
}

/* header of the current view's leadership */
static uint8_t *
vhdr(struct sl_repl *r, int type, int status, int flags)
{
	return hdr(r, type, status, flags, r->view.epoch, r->view.leader_session,
		   r->is_leader ? r->wepoch : 0);
}

static void
tx(struct sl_repl *r, uint32_t node, uint32_t len)
{
	r->ops.send(r->ops.arg, node, r->tx, len);
	r->st.sent++;
}

/* ---- local log helpers ---- */

static void
refresh_end(struct sl_repl *r)
{
	struct sl_crec c;

	memset(&c, 0, sizeof(c));
	r->ops.last(r->ops.arg, &c);
	r->empty = c.log_id == 0;
	r->end = c.last_msg_log_id;
	r->end_epoch = c.log_id ? c.epoch : 0;
}

/* epoch of the record ending at id: 0 for id 0, UINT64_MAX when id is no record end */
static uint64_t
epoch_at(struct sl_repl *r, uint64_t id)
{
	struct sl_crec c;

	if (id == 0)
		return 0;
	if (id == r->end)
		return r->end_epoch;
	if (r->ops.read(r->ops.arg, id, &c, r->rd, sizeof(r->rd)) != 0 ||
	    c.last_msg_log_id != id)
		return UINT64_MAX;
	return c.epoch;
}

static void
set_commit(struct sl_repl *r, uint64_t c)
{
	if (c <= r->commit)
		return;
	r->commit = c;
	r->st.committed_end = c;
	r->ops.committed(r->ops.arg, c);
}

static void
truncate_to(struct sl_repl *r, uint64_t end)
{
	if (end >= r->end)
		return;
	r->ops.truncate(r->ops.arg, end);
	refresh_end(r);
	if (r->vend > r->end)
		r->vend = r->end;
	if (r->commit > r->end)	/* never for a correct leader; kept consistent */
		r->commit = r->end;
}

/* ---- members (leader) ---- */

static int
in_list(const uint32_t *l, uint32_t n, uint32_t node)
{
	uint32_t i;

	for (i = 0; i < n && i < SL_REPL_MAX_NODES; i++)
		if (l[i] == node)
			return 1;
	return 0;
}

static int
member_idx(const struct sl_repl *r, uint32_t node)
{
	uint32_t i;

	for (i = 0; i < r->nmembers; i++)
		if (r->m[i].node == node)
			return (int)i;
	return -1;
}

static int
counted(const struct member *m)
{
	return m->in_isr || m->joining;
}

static uint8_t
counted_mask(const struct sl_repl *r, int with_join_wait)
{
	uint8_t mask = 0;
	uint32_t i;

	for (i = 0; i < r->nmembers; i++)
		if (counted(&r->m[i]) || (with_join_wait && r->m[i].join_wait))
			mask |= 1u << i;
	return mask;
}

static int
majority(const struct sl_repl *r)
{
	return r->view.nisr > r->view.nreplicas / 2;
}

static void
ring_push(struct sl_repl *r, uint64_t end)
{
	if (r->ring_n == SL_REPL_WINDOW)
		return;
	r->ring[(r->ring_head + r->ring_n) % SL_REPL_WINDOW] = end;
	r->ring_n++;
}

static void
ring_pop_upto(struct sl_repl *r, uint64_t end)
{
	while (r->ring_n && r->ring[r->ring_head] <= end) {
		r->ring_head = (r->ring_head + 1) % SL_REPL_WINDOW;
		r->ring_n--;
	}
}

static void
advance_commit(struct sl_repl *r)
{
	uint64_t c = r->end;
	uint32_t i;

	if (!r->is_leader || !majority(r))
		return;
	for (i = 0; i < r->nmembers; i++)
		if (counted(&r->m[i]) && r->m[i].acked < c)
			c = r->m[i].acked;
	if (c > r->commit) {
		ring_pop_upto(r, c);
		set_commit(r, c);
	}
}

/* leader: drop what we wrote past the commit index */
static void
rollback(struct sl_repl *r, int err)
{
	uint64_t c = r->commit > r->inherited ? r->commit : r->inherited;
	uint32_t i;

	if (r->end <= c)
		return;
	truncate_to(r, c);
	r->gen++;
	r->wepoch = (uint64_t)r->view.epoch << 32 | r->gen;
	r->ring_n = 0;
	r->st.rollbacks++;
	for (i = 0; i < r->nmembers; i++) {
		if (r->m[i].acked > r->end)
			r->m[i].acked = r->end;
		if (r->m[i].next > r->end + 1)
			r->m[i].next = r->end + 1;
		if (r->m[i].fetch_end > r->end)
			r->m[i].fetch_end = r->end;
	}
	r->ops.rolled_back(r->ops.arg, c, err);
}

static void
chan_finish(struct sl_repl *r, struct chan_pend *p, int err)
{
	struct chan_pend q = *p;

	p->used = 0;
	if (!q.internal)
		r->ops.chan_done(r->ops.arg, q.token, err, q.prev);
}

static void join_cancel(struct sl_repl *r);

static void
chan_fail_all(struct sl_repl *r, int err)
{
	uint32_t i;

	join_cancel(r);
	for (i = 0; i < CHAN_PEND; i++)
		if (r->cp[i].used)
			chan_finish(r, &r->cp[i], err);
}

static void
chan_check(struct sl_repl *r, struct chan_pend *p)
{
	if (p->used && (p->need & ~p->acked) == 0 && (p->internal || majority(r)))
		chan_finish(r, p, 0);
}

static void
send_chan(struct sl_repl *r, struct chan_pend *p, uint32_t node)
{
	uint8_t *b = vhdr(r, T_CHAN_SYNC, 0, p->flags);
	size_t n = strlen(p->name);

	sl_bytes_put_le64(b, p->seq);
	sl_bytes_put_le64(b + 8, p->confirmed);
	b[16] = (uint8_t)n;
	memcpy(b + 17, p->name, n);
	tx(r, node, HDR_LEN + 17 + n);
}

static void
join_cancel(struct sl_repl *r)
{
	uint32_t i;

	if (r->join_idx < 0)
		return;
	r->m[r->join_idx].join_wait = 0;
	for (i = 0; i < CHAN_PEND; i++)
		if (r->cp[i].used && r->cp[i].internal)
			r->cp[i].used = 0;
	r->join_idx = -1;
	r->pause_until = 0;
}

/* leader: the rejoining member has our end and every channel position: ask isr_join */

/*
 * The ISR lag rule (Kafka's replica.lag.time.max.ms): a member stays in the ISR only while it
 * has held the leader's whole log at some moment within the last conf.isr_lag_ns; progress
 * alone does not keep it. caught_ns is the last such moment. With writes pipelined, the
 * leader's end runs ahead of every ack, so the moment is found through marks: every
 * isr_lag_ns / MARKS the leader notes its end and the time (mark_take, from leader_poll); an
 * ack that reaches a mark's end proves the member held everything the leader had then. A
 * healthy member reaches each mark within a round trip; one on a link slower than the write
 * rate falls further behind and leaves once its newest reached mark is older than the window
 * (judged to within isr_lag_ns / MARKS).
 */
static void
caught_up(struct sl_repl *r, struct member *m)
{
	m->caught_ns = r->now;
	m->mark_n = 0;
	m->rto_base_ns = r->now;
}

/*
 * Retransmission timeout of a member: twice its smoothed round trip, at least
 * conf.retransmit_ns, at most a quarter of the ISR lag window. A fixed timeout far below
 * the round trip of a slow link (1 Mbit/s with a deep queue: a second) resent every
 * record in flight hundreds of times over, filled the link with copies and took the
 * leader's CPU from the healthy members and the control thread.
 */
static uint64_t
rto_cap(const struct sl_repl *r)
{
	uint64_t q = r->conf.isr_lag_ns / 4;

	return q > r->conf.retransmit_ns ? q : r->conf.retransmit_ns;
}

static uint64_t
rto_of(const struct sl_repl *r, const struct member *m)
{
	uint64_t t = 2 * m->srtt_ns, cap = rto_cap(r);

	if (t < r->conf.retransmit_ns)
		t = r->conf.retransmit_ns;
	return t < cap ? t : cap;
}

/* Leader loop: note the leader's end for a member that does not hold it. */
static void
mark_take(struct sl_repl *r, struct member *m)
{
	uint8_t last = (m->mark_head + m->mark_n - 1) & (MARKS - 1);

	if (m->mark_n == MARKS || (m->mark_n && (m->mark[last].end == r->end ||
			r->now - m->mark[last].ns < r->conf.isr_lag_ns / MARKS)))
		return;
	last = (m->mark_head + m->mark_n++) & (MARKS - 1);
	m->mark[last].end = r->end;
	m->mark[last].ns = r->now;
}

/* m->acked moved forward: the end, or the newest mark it reached, moves caught_ns; the
 * round trip sample, if this ack covers it, moves srtt_ns; the retransmit timer restarts. */
static void
progress(struct sl_repl *r, struct member *m)
{
	if (m->rtt_end && m->acked >= m->rtt_end) {
		uint64_t sample = r->now - m->rtt_ns;

		m->srtt_ns = m->srtt_ns ? m->srtt_ns - m->srtt_ns / 8 + sample / 8 : sample;
		m->rtt_end = 0;
	}
	m->rto_ns = rto_of(r, m);
	m->rto_base_ns = r->now;
	if (m->acked >= r->end) {
		caught_up(r, m);
	} else {
		while (m->mark_n && m->acked >= m->mark[m->mark_head].end) {
			if (m->mark[m->mark_head].ns > m->caught_ns)
				m->caught_ns = m->mark[m->mark_head].ns;
			m->mark_head = (m->mark_head + 1) & (MARKS - 1);
			m->mark_n--;
		}
	}
	if (r->now - m->caught_ns < r->conf.isr_lag_ns)
		m->leave_asked = 0;
}

static void
join_try(struct sl_repl *r)
{
	struct member *m;
	uint32_t i;

	if (r->join_idx < 0)
		return;
	m = &r->m[r->join_idx];
	if (m->fetch_end != r->end)
		return;
	for (i = 0; i < CHAN_PEND; i++)
		if (r->cp[i].used && r->cp[i].internal)
			return;
	m->join_wait = 0;
	m->joining = 1;
	m->leave_asked = 0;
	m->acked = r->end;
	m->next = r->end + 1;
	caught_up(r, m);
	m->rto_ns = rto_of(r, m);	/* not the backoff of before it left */
	m->join_hold = 0;
	m->last_send_ns = r->now;
	r->join_idx = -1;
	r->pause_until = 0;
	r->st.joins++;
	r->ops.isr_join(r->ops.arg, m->node);
}

/* leader: the record containing id from the local log (ops->read), its producer tag
 * cleared first: a log that keeps no tags leaves it 0 */
static int
read_rec(struct sl_repl *r, uint64_t id, struct sl_crec *c, void *buf, uint32_t cap)
{
	c->producer = 0;
	c->pseq = 0;
	return r->ops.read(r->ops.arg, id, c, buf, cap);
}

/* a record's header in WRITE and FETCH_RESP (F_PTAG): crec, then its producer tag */
static void
rec_encode(uint8_t *p, const struct sl_crec *c)
{
	sl_crec_encode(p, c);
	sl_bytes_put_le64(p + CREC_LEN, c->producer);
	sl_bytes_put_le64(p + CREC_LEN + 8, c->pseq);
}

/* leader: send records [from, from + BURST) to member m, as many per WRITE as fit */
static void
send_from(struct sl_repl *r, struct member *m, uint64_t from)
{
	struct sl_crec c;
	uint64_t prev, id = from;
	uint32_t n = 0, used = 0;
	uint8_t *b = NULL;

	if (from > r->end)
		return;
	prev = epoch_at(r, from - 1);
	if (prev == UINT64_MAX)
		return;
	while (id <= r->end && n < BURST) {
		if (b == NULL) {
			b = vhdr(r, T_WRITE, 0, F_PTAG);
			sl_bytes_put_le64(b, r->commit);
			sl_bytes_put_le64(b + 8, prev);
			used = 16;
		}
		/* the room left for this record's messages (none: send what is packed) */
		uint32_t room = r->maxd > HDR_LEN + used + REC_HDR ?
					r->maxd - HDR_LEN - used - REC_HDR : 0;

		if (room == 0 ||
		    read_rec(r, id, &c, b + used + REC_HDR, room) != 0 ||
		    c.log_id != id) {
			if (used > 16) {
				/* no room left for it: send what is packed, it goes next */
				tx(r, m->node, HDR_LEN + used);
				b = NULL;
				continue;
			}
			b = NULL;
			break;
		}
		rec_encode(b + used, &c);
		used += REC_HDR + c.msg_size;
		prev = c.epoch;
		id = c.last_msg_log_id + 1;
		n++;
	}
	if (b != NULL && used > 16)
		tx(r, m->node, HDR_LEN + used);
	m->next = id;
	m->last_send_ns = r->now;
}

/* leader: send every member what it has not been sent yet (sl_repl_write queues) */
static uint32_t
flush_writes(struct sl_repl *r)
{
	uint32_t i, n = 0;

	if (!r->unsent)
		return 0;
	r->unsent = 0;
	for (i = 0; i < r->nmembers; i++) {
		struct member *m = &r->m[i];

		if (!counted(m) || m->next > r->end || m->next <= m->acked)
			continue;
		send_from(r, m, m->next);
		if (!m->rtt_end && m->next > m->acked + 1) {
			m->rtt_end = m->next - 1;	/* a first send: time its ack */
			m->rtt_ns = r->now;
		}
		n++;
	}
	return n;
}

static void
become_leader(struct sl_repl *r)
{
	struct sl_crec c;
	uint64_t id;
	uint32_t i;

	r->is_leader = 1;
	r->mode = M_NONE;
	r->in_isr = 1;
	r->joining = 0;
	refresh_end(r);
	r->inherited = r->end;
	r->gen = 0;
	r->wepoch = (uint64_t)r->view.epoch << 32;
	if (r->end_epoch >= r->wepoch)	/* never from a seam that bumps the epoch */
		r->gen = (uint32_t)(r->end_epoch & 0xffffffffu) + 1;
	r->wepoch |= r->gen;
	r->ring_n = 0;
	r->ring_head = 0;
	for (id = r->commit + 1; id <= r->end && r->ring_n < SL_REPL_WINDOW; ) {
		if (r->ops.read(r->ops.arg, id, &c, r->rd, sizeof(r->rd)) != 0)
			break;
		ring_push(r, c.last_msg_log_id);
		id = c.last_msg_log_id + 1;
	}
	r->join_idx = -1;
	r->pause_until = 0;
	r->nmembers = 0;
	for (i = 0; i < r->view.nreplicas && i < SL_REPL_MAX_NODES; i++) {
		struct member *m;

		if (r->view.replicas[i] == r->conf.node_id)
			continue;
		m = &r->m[r->nmembers++];
		memset(m, 0, sizeof(*m));
		m->node = r->view.replicas[i];
		m->in_isr = in_list(r->view.isr, r->view.nisr, m->node);
		/* an ISR member holds every committed record, ours included */
		m->acked = m->in_isr ? r->commit : 0;
		m->next = r->commit + 1;
		m->rto_ns = r->conf.retransmit_ns;
		caught_up(r, m);
	}
	advance_commit(r);
}

/* leader, same leadership: a replica the view adds (a move's first step, docs/cluster.md)
 * gets a member entry as become_leader makes them, outside the ISR: it catches up and asks
 * to join as a restarted replica does. Writes go on meanwhile: no new leadership. One that
 * comes back after the view had removed it starts afresh. */
static void
leader_add_members(struct sl_repl *r, const struct sl_repl_view *old)
{
	struct member *m;
	uint32_t i, j;
	int idx;

	for (i = 0; i < r->view.nreplicas; i++) {
		uint32_t node = r->view.replicas[i];

		if (node == r->conf.node_id)
			continue;
		idx = member_idx(r, node);
		if (idx >= 0 && in_list(old->replicas, old->nreplicas, node))
			continue;
		if (idx < 0 && r->nmembers < SL_REPL_MAX_NODES)
			idx = (int)r->nmembers++;
		for (j = 0; idx < 0 && j < r->nmembers; j++)	/* full: one the view removed */
			if (!in_list(r->view.replicas, r->view.nreplicas, r->m[j].node))
				idx = (int)j;
		if (idx < 0)
			continue;
		if (idx == r->join_idx) {
			join_cancel(r);
		}
		m = &r->m[idx];
		memset(m, 0, sizeof(*m));
		m->node = node;
		m->in_isr = in_list(r->view.isr, r->view.nisr, node);
		m->acked = m->in_isr ? r->commit : 0;
		m->next = r->commit + 1;
		m->rto_ns = r->conf.retransmit_ns;
		caught_up(r, m);
	}
}

/* leader, same leadership, new ISR or replicas */
static void
leader_view_change(struct sl_repl *r, const struct sl_repl_view *old)
{
	uint32_t i, j;
	int shrunk = 0;

	leader_add_members(r, old);
	for (i = 0; i < r->nmembers; i++) {
		struct member *m = &r->m[i];
		int now_in = in_list(r->view.isr, r->view.nisr, m->node);

		if (now_in && !m->in_isr) {
			m->in_isr = 1;
			m->joining = 0;
			m->leave_asked = 0;
		} else if (!now_in && m->in_isr) {
			m->in_isr = 0;
			m->joining = 0;
			shrunk = 1;
		} else if (!now_in && m->joining && m->leave_asked) {
			/* we asked it out after asking it in: the seam has it out */
			m->joining = 0;
			shrunk = 1;
		}
		if (!in_list(r->view.replicas, r->view.nreplicas, m->node)) {
			m->in_isr = 0;
			m->joining = 0;
		}
	}
	if (r->join_idx >= 0 && !r->m[r->join_idx].join_wait)
		r->join_idx = -1;
	if (shrunk) {
		advance_commit(r);
		if (r->end > r->commit)
			rollback(r, -SL_E_QUORUM);
		for (j = 0; j < CHAN_PEND; j++) {
			struct chan_pend *p = &r->cp[j];

			if (!p->used || p->internal)
				continue;	/* a rejoin transfer ends with the join */
			p->need &= counted_mask(r, 1);
			if (!majority(r))
				chan_finish(r, p, -SL_E_QUORUM);
			else
				chan_check(r, p);
		}
	}
	advance_commit(r);
}

/* ---- replica side ---- */

static void
replica_commit(struct sl_repl *r)
{
	uint64_t c = r->lcommit < r->vend ? r->lcommit : r->vend;

	set_commit(r, c);
}

static void
send_catchup_req(struct sl_repl *r)
{
	uint8_t *b = vhdr(r, T_CATCHUP_REQ, 0, 0);

	sl_bytes_put_le64(b, r->end_epoch);
	sl_bytes_put_le64(b + 8, r->end);
	tx(r, r->view.leader, HDR_LEN + 16);
	r->req_ns = r->now;
}

static void
send_fetch(struct sl_repl *r)
{
	/* a log that holds nothing uncommitted matches the leader's up to its end */
	uint8_t *b = vhdr(r, T_FETCH, 0, r->empty || r->end <= r->commit ? F_EMPTY : 0);

	sl_bytes_put_le64(b, r->end + 1);
	sl_bytes_put_le64(b + 8, r->end_epoch);
	sl_bytes_put_le32(b + 16, FETCH_BATCH);
	tx(r, r->view.leader, HDR_LEN + 20);
	r->req_ns = r->now;
	r->fetch_ns = r->now;
	r->fetch_timed = 1;
	r->fetch_idle = 0;
	r->st.fetches++;
}

static uint64_t
fetch_rto(const struct sl_repl *r)
{
	return r->fetch_rto_ns ? r->fetch_rto_ns : r->conf.retransmit_ns;
}

static struct chan_cache *
cache_get(struct sl_repl *r, const char *name)
{
	struct chan_cache *free_e = NULL, *victim = &r->cc[0];
	uint32_t i;

	for (i = 0; i < CHAN_CACHE; i++) {
		struct chan_cache *e = &r->cc[i];

		if (!e->used) {
			if (!free_e)
				free_e = e;
			continue;
		}
		if (strcmp(e->name, name) == 0)
			return e;
		if (!e->has_cached && (victim->has_cached || e->seq < victim->seq))
			victim = e;
	}
	if (!free_e)
		free_e = victim;
	memset(free_e, 0, sizeof(*free_e));
	free_e->used = 1;
	strcpy(free_e->name, name);
	return free_e;
}

static void
cache_apply(struct sl_repl *r)
{
	uint32_t i;

	for (i = 0; i < CHAN_CACHE; i++) {
		struct chan_cache *e = &r->cc[i];

		if (e->used && e->has_cached && e->cached <= r->end + 1) {
			e->has_cached = 0;
			r->ops.chan_set(r->ops.arg, e->name, e->cached);
		}
	}
}

/* MPUB / PUB argument checks of a record from the leader */
static int
pub_args_ok(struct sl_repl *r, const struct sl_crec *c, const void *msgs)
{
	uint64_t first, last;
	uint32_t num;

	if (c->log_id == 0 || c->msg_num == 0 || c->last_msg_log_id < c->log_id ||
	    c->last_msg_log_id - c->log_id + 1 != c->msg_num ||
	    c->msg_cnt != c->last_msg_log_id)
		return 0;
	if (!r->ops.msg_ids)
		return 1;
	if (r->ops.msg_ids(r->ops.arg, msgs, c->msg_size, &first, &last, &num) != 0)
		return 0;
	return first == c->log_id && last == c->last_msg_log_id && num == c->msg_num;
}

/* a record from the current leader, to append at our end; prev_epoch: the leader's
 * record ending at log_id - 1. Returns ST_* */
static int
apply_record(struct sl_repl *r, const struct sl_crec *c, const void *msgs,
	     uint64_t prev_epoch)
{
	struct sl_crec h;
	int rc;

	if (!pub_args_ok(r, c, msgs))
		return ST_PUB_ARG;
	if (c->last_msg_log_id <= r->commit)
		return ST_DUP;
	if (c->log_id <= r->end) {
		/* overlap: the same (epoch, id) is the same record */
		if (r->ops.read(r->ops.arg, c->log_id, &h, r->rd, sizeof(r->rd)) == 0 &&
		    h.log_id == c->log_id && h.epoch == c->epoch &&
		    h.last_msg_log_id == c->last_msg_log_id) {
			/* log matching: our prefix up to it is the leader's */
			if (c->last_msg_log_id > r->vend)
				r->vend = c->last_msg_log_id;
			r->st.dup_writes++;
			return ST_DUP;
		}
		if (c->log_id <= r->commit ||
		    (c->log_id - 1 > r->commit && epoch_at(r, c->log_id - 1) != prev_epoch))
			return ST_GAP;
		r->st.truncated_on_catchup += r->end - (c->log_id - 1);
		truncate_to(r, c->log_id - 1);
	}
	/* a log that holds nothing uncommitted (empty, or reset to the leader's first
	 * record, or all committed) is the committed prefix: any previous epoch matches
	 * (the leader may no longer hold the record before, to name its epoch) */
	if (c->log_id != r->end + 1 || (r->end_epoch != prev_epoch && r->end > r->commit)) {
		r->st.gaps++;
		return ST_GAP;
	}
	rc = r->ops.append(r->ops.arg, c, msgs);
	if (rc != 0) {
		refresh_end(r);
		return ST_IO;
	}
	r->end = c->last_msg_log_id;
	r->end_epoch = c->epoch;
	r->empty = 0;
	r->vend = r->end;
	return ST_OK;
}

/* fencing of a leader datagram; 0 = accept, else the ST_* answer */
static int
fence(struct sl_repl *r, uint32_t from, uint32_t vepoch, uint64_t sess, int need_isr)
{
	if (!r->have_view || vepoch > r->view.epoch)
		return ST_STALE_VIEW;
	if (vepoch < r->view.epoch || sess != r->view.leader_session ||
	    from != r->view.leader || r->is_leader)
		return ST_FENCED;
	if (need_isr && !r->in_isr && !r->joining)
		return ST_NOT_ISR;
	return 0;
}

/* a datagram of the current leadership sent before one of its rollbacks? */
static int
stale_gen(struct sl_repl *r, uint64_t wepoch)
{
	if (wepoch < r->lwepoch)
		return 1;
	r->lwepoch = wepoch;
	return 0;
}

static void
send_ack(struct sl_repl *r, uint32_t to, int status, uint32_t vepoch, uint64_t sess,
	 uint64_t wepoch)
{
	uint8_t *b = hdr(r, T_WRITE_ACK, status, 0, vepoch, sess, wepoch);
	uint64_t e = epoch_at(r, r->vend);

	if (e == UINT64_MAX) {	/* cannot happen: vend is a record end */
		r->vend = r->commit;
		e = epoch_at(r, r->vend);
	}
	sl_bytes_put_le64(b, r->vend);
	sl_bytes_put_le64(b + 8, e);
	sl_bytes_put_le64(b + 16, r->commit);
	tx(r, to, HDR_LEN + 24);
}

/* ---- input ---- */

struct din {
	uint32_t from;
	uint32_t len;
	const uint8_t *p;		/* body */
	uint32_t blen;
	int type;
	int status;
	int flags;
	uint32_t vepoch;
	uint64_t sess;
	uint64_t wepoch;
};

/* The bytes before a record's messages in d: crec, and its producer tag with F_PTAG (a
 * sender that predates tags sends none: its records carry no producer) */
static uint32_t
rec_hdr_len(const struct din *d)
{
	return d->flags & F_PTAG ? REC_HDR : CREC_LEN;
}

static void
rec_decode(const struct din *d, const uint8_t *p, struct sl_crec *c)
{
	sl_crec_decode(p, c);
	if (d->flags & F_PTAG) {
		c->producer = sl_bytes_get_le64(p + CREC_LEN);
		c->pseq = sl_bytes_get_le64(p + CREC_LEN + 8);
	}
}

static void
in_write(struct sl_repl *r, struct din *d)
{
	struct sl_crec c;
	uint64_t prev;
	uint32_t pos = 16, rh = rec_hdr_len(d);
	int st;

	if (d->blen < 16 + rh)
		goto bad;
	st = fence(r, d->from, d->vepoch, d->sess, 1);
	if (st) {
		if (st == ST_FENCED || st == ST_NOT_ISR)
			r->st.fenced++;
		send_ack(r, d->from, st, d->vepoch, d->sess, d->wepoch);
		return;
	}
	if (stale_gen(r, d->wepoch))
		return;
	/* one or more consecutive records; stop at the first that is not applied */
	prev = sl_bytes_get_le64(d->p + 8);
	st = ST_OK;
	while (pos + rh <= d->blen) {
		rec_decode(d, d->p + pos, &c);
		if (c.msg_size > d->blen - pos - rh) {
			r->st.bad_dgrams++;
			break;
		}
		st = apply_record(r, &c, d->p + pos + rh, prev);
		if (st != ST_OK && st != ST_DUP)
			break;
		prev = c.epoch;
		pos += rh + c.msg_size;
	}
	if (sl_bytes_get_le64(d->p) > r->lcommit)
		r->lcommit = sl_bytes_get_le64(d->p);
	replica_commit(r);
	cache_apply(r);
	send_ack(r, d->from, st, d->vepoch, d->sess, d->wepoch);
	return;
bad:
	r->st.bad_dgrams++;
}

static void
in_heartbeat(struct sl_repl *r, struct din *d)
{
	int st;

	if (d->blen < 16) {
		r->st.bad_dgrams++;
		return;
	}
	st = fence(r, d->from, d->vepoch, d->sess, 1);
	if (!st && stale_gen(r, d->wepoch))
		return;
	if (!st) {
		if (sl_bytes_get_le64(d->p) > r->lcommit)
			r->lcommit = sl_bytes_get_le64(d->p);
		replica_commit(r);
		if (r->vend < sl_bytes_get_le64(d->p + 8))
			st = ST_GAP;
	}
	send_ack(r, d->from, st, d->vepoch, d->sess, d->wepoch);
}

/* leader: an answer from member m for the current leadership */
static struct member *
leader_member(struct sl_repl *r, struct din *d)
{
	int i;

	if (!r->is_leader || d->vepoch != r->view.epoch || d->sess != r->view.leader_session)
		return NULL;
	i = member_idx(r, d->from);
	/* a member the view removed (a move that kept the leader) is heard no more: its
	 * JOIN_REQ would pause the writes for a node that is not a replica */
	if (i < 0 || !in_list(r->view.replicas, r->view.nreplicas, d->from))
		return NULL;
	return &r->m[i];
}

/* leader: is (end, epoch) a record end of our log with that epoch? */
static int
valid_end(struct sl_repl *r, uint64_t end, uint64_t epoch)
{
	if (end > r->end)
		return 0;
	if (end == 0)
		return epoch == 0;
	if (epoch == r->wepoch)
		return 1;	/* records of the current epoch never change */
	return epoch_at(r, end) == epoch;
}

static void
in_write_ack(struct sl_repl *r, struct din *d)
{
	struct member *m = leader_member(r, d);
	uint64_t end, e;

	if (d->blen < 24) {
		r->st.bad_dgrams++;
		return;
	}
	if (!m)
		return;
	r->st.acks_in++;
	if (d->status != ST_OK && d->status != ST_DUP && d->status != ST_GAP)
		return;
	end = sl_bytes_get_le64(d->p);
	e = sl_bytes_get_le64(d->p + 8);
	if (!valid_end(r, end, e)) {
		if (d->status == ST_GAP && m->next > m->acked + 1)
			m->next = m->acked + 1;
		return;
	}
	if (end > m->acked) {
		m->acked = end;
		progress(r, m);
	}
	if (d->status == ST_GAP) {
		/* go back to what it holds; resend at once unless we just did */
		if (m->next > end + 1)
			m->next = end + 1;
		if (counted(m) && r->now - m->last_send_ns >= r->conf.retransmit_ns / 4) {
			send_from(r, m, m->next);
			m->rtt_end = 0;		/* a resend: its ack times nothing */
			r->st.retransmits++;
		}
	} else if (m->next < end + 1) {
		m->next = end + 1;
	}
	advance_commit(r);
}

static void
in_chan_sync(struct sl_repl *r, struct din *d)
{
	char name[SL_REPL_CHAN_NAME_MAX + 1];
	struct chan_cache *e;
	uint64_t seq, pos;
	uint8_t *b;
	uint32_t n;
	int st;

	if (d->blen < 17 || (n = d->p[16]) == 0 || n > SL_REPL_CHAN_NAME_MAX ||
	    17 + n > d->blen) {
		r->st.bad_dgrams++;
		return;
	}
	seq = sl_bytes_get_le64(d->p);
	pos = sl_bytes_get_le64(d->p + 8);
	memcpy(name, d->p + 17, n);
	name[n] = 0;
	st = fence(r, d->from, d->vepoch, d->sess, 1);
	if (!st) {
		e = cache_get(r, name);
		if (e->session != d->sess) {
			e->session = d->sess;
			e->seq = 0;
		}
		if (seq > e->seq) {
			e->seq = seq;
			r->st.chan_syncs++;
			if (pos <= r->end + 1) {
				e->has_cached = 0;
				r->ops.chan_set(r->ops.arg, name, pos);
			} else {
				e->has_cached = 1;
				e->cached = pos;
				r->st.chan_cached++;
			}
		}
	} else {
		r->st.fenced++;
	}
	if (!(d->flags & F_ACK))
		return;
	b = hdr(r, T_CHAN_ACK, st, 0, d->vepoch, d->sess, d->wepoch);
	sl_bytes_put_le64(b, seq);
	tx(r, d->from, HDR_LEN + 8);
}

static void
in_chan_ack(struct sl_repl *r, struct din *d)
{
	struct member *m = leader_member(r, d);
	uint64_t seq;
	uint32_t i;

	if (d->blen < 8) {
		r->st.bad_dgrams++;
		return;
	}
	if (!m || d->status != ST_OK)
		return;
	seq = sl_bytes_get_le64(d->p);
	for (i = 0; i < CHAN_PEND; i++) {
		struct chan_pend *p = &r->cp[i];

		if (p->used && p->seq == seq) {
			p->acked |= 1u << (m - r->m);
			chan_check(r, p);
			break;
		}
	}
	join_try(r);
}

static void
in_catchup_req(struct sl_repl *r, struct din *d)
{
	struct member *m = leader_member(r, d);
	uint64_t req, end;
	uint8_t *b;

	if (d->blen < 16) {
		r->st.bad_dgrams++;
		return;
	}
	if (!m)
		return;
	req = sl_bytes_get_le64(d->p);
	end = r->ops.epoch_end(r->ops.arg, req);
	if (end > r->end)
		end = r->end;
	b = vhdr(r, T_CATCHUP_RESP, 0, 0);
	sl_bytes_put_le64(b, req);
	sl_bytes_put_le64(b + 8, end);
	sl_bytes_put_le64(b + 16, epoch_at(r, end));
	sl_bytes_put_le64(b + 24, r->end);
	sl_bytes_put_le64(b + 32, r->end_epoch);
	sl_bytes_put_le64(b + 40, r->commit);
	tx(r, d->from, HDR_LEN + 48);
}

static void
in_catchup_resp(struct sl_repl *r, struct din *d)
{
	struct sl_crec c;
	uint64_t lend, lep, t, mine;

	if (d->blen < 48) {
		r->st.bad_dgrams++;
		return;
	}
	if (fence(r, d->from, d->vepoch, d->sess, 0) || r->mode != M_PROBE ||
	    sl_bytes_get_le64(d->p) != r->end_epoch)
		return;
	lend = sl_bytes_get_le64(d->p + 8);
	lep = sl_bytes_get_le64(d->p + 16);
	if (lep == UINT64_MAX)
		return;
	mine = r->ops.epoch_end(r->ops.arg, lep);
	t = lend < mine ? lend : mine;
	/* at a record end of ours (rollbacks in one epoch may cut records differently), and
	 * never into the committed prefix, which matches every leader's (the leader may not
	 * hold the epochs of it any more: retention) */
	if (t < r->end && t > r->commit &&
	    r->ops.read(r->ops.arg, t, &c, r->rd, sizeof(r->rd)) == 0 && c.last_msg_log_id != t)
		t = c.log_id - 1;
	if (t < r->commit)
		t = r->commit;
	if (!r->empty && t < r->end) {
		r->st.truncated_on_catchup += r->end - t;
		truncate_to(r, t);
	}
	if (sl_bytes_get_le64(d->p + 40) > r->lcommit)
		r->lcommit = sl_bytes_get_le64(d->p + 40);
	if (r->empty || r->end_epoch == lep || r->end <= r->commit) {
		/* our log is a prefix of the leader's */
		r->vend = r->end;
		replica_commit(r);
		r->mode = M_FETCH;
		r->st.catchups++;
		send_fetch(r);
	} else {
		send_catchup_req(r);
	}
}

static void
in_fetch(struct sl_repl *r, struct din *d)
{
	struct member *m = leader_member(r, d);
	struct sl_crec c;
	uint64_t from, prev, id, first, foff, at;
	uint32_t off, nrec, k, batch = 1;
	uint8_t *b;
	int st = ST_OK, empty_ok;

	if (d->blen < 16) {
		r->st.bad_dgrams++;
		return;
	}
	if (!m)
		return;
	from = sl_bytes_get_le64(d->p);
	prev = sl_bytes_get_le64(d->p + 8);
	if (d->blen >= 20)
		batch = sl_bytes_get_le32(d->p + 16);
	if (batch == 0 || batch > FETCH_BATCH)
		batch = batch ? FETCH_BATCH : 1;
	r->st.fetches++;
	if (r->ops.first == NULL || r->ops.first(r->ops.arg, &first, NULL) != 0)
		first = 1;
	if (from < first && first > 1) {
		/* what it needs is gone here: it starts over at our first record, if that
		 * one follows the committed prefix (else later) */
		if (first - 1 > r->commit ||
		    r->ops.first(r->ops.arg, &first, &foff) != 0 || from >= first) {
			r->st.fetch_too_old++;
			return;
		}
		b = vhdr(r, T_FETCH_RESP, ST_RESET, 0);
		sl_bytes_put_le64(b, from);
		sl_bytes_put_le64(b + 8, r->commit);
		sl_bytes_put_le64(b + 16, r->end);
		sl_bytes_put_le32(b + 24, 0);
		sl_bytes_put_le32(b + 28, 0);
		sl_bytes_put_le64(b + 32, first);
		sl_bytes_put_le64(b + 40, foff);
		tx(r, d->from, HDR_LEN + 48);
		r->st.resets++;
		return;
	}
	/* an empty replica log starting at a committed id needs no previous epoch */
	empty_ok = (d->flags & F_EMPTY) && from - 1 <= r->commit;
	if (from == 0 || from - 1 > r->end || (!empty_ok && epoch_at(r, from - 1) != prev))
		st = ST_MISMATCH;
	/* up to `batch` answers, back to back, each from where the one before ended */
	for (k = 0, at = from; k < batch; k++) {
		b = vhdr(r, T_FETCH_RESP, st, F_PTAG);
		sl_bytes_put_le64(b, at);
		sl_bytes_put_le64(b + 8, r->commit);
		sl_bytes_put_le64(b + 16, r->end);
		off = HDR_LEN + 32;
		nrec = 0;
		for (id = at; st == ST_OK && id <= r->end; id = c.last_msg_log_id + 1) {
			if (off + REC_HDR >= r->maxd)
				break;
			if (read_rec(r, id, &c, r->tx + off + REC_HDR,
				     r->maxd - off - REC_HDR) != 0 || c.log_id != id)
				break;
			rec_encode(r->tx + off, &c);
			off += REC_HDR + c.msg_size;
			nrec++;
		}
		sl_bytes_put_le32(b + 24, nrec);
		sl_bytes_put_le32(b + 28, 0);
		if (st == ST_OK && nrec > 0 && id <= r->end && k + 1 < batch)
			r->tx[6] |= F_MORE;
		tx(r, d->from, off);
		if (!(r->tx[6] & F_MORE))
			break;
		at = id;
	}
	if (st != ST_OK)
		return;
	/* it holds our log up to from - 1 */
	m->fetch_end = from - 1;
	if (counted(m) && from - 1 > m->acked) {
		m->acked = from - 1;
		progress(r, m);
		advance_commit(r);
	}
	join_try(r);
}

/* The leader no longer holds the records after our end: drop our log, start it over
 * empty at the leader's first record (the ids before it are committed), fetch from it. */
static void
reset_to(struct sl_repl *r, struct din *d)
{
	uint64_t first, foff;

	if (d->blen < 48) {
		r->st.bad_dgrams++;
		return;
	}
	first = sl_bytes_get_le64(d->p + 32);
	foff = sl_bytes_get_le64(d->p + 40);
	if (first <= r->end + 1 || r->ops.reset == NULL)
		return;
	if (r->ops.reset(r->ops.arg, first, foff) != 0)
		return;		/* asked again with the next answer */
	r->st.resets++;
	r->st.truncated_on_catchup += r->empty ? 0 : r->end - r->commit;
	refresh_end(r);
	r->empty = 1;
	r->end = first - 1;
	r->end_epoch = 0;
	r->vend = r->end;
	if (r->commit < r->end) {
		r->commit = r->end;
		r->st.committed_end = r->end;
	}
	if (r->lcommit < r->end)
		r->lcommit = r->end;
	send_fetch(r);
}

static void
in_fetch_resp(struct sl_repl *r, struct din *d)
{
	struct sl_crec c;
	uint64_t prev, lend;
	uint32_t nrec, i, off, rh = rec_hdr_len(d);
	int st, more;

	if (d->blen < 32) {
		r->st.bad_dgrams++;
		return;
	}
	if (fence(r, d->from, d->vepoch, d->sess, 0) || r->mode != M_FETCH ||
	    stale_gen(r, d->wepoch))
		return;
	if (d->status == ST_MISMATCH) {
		r->mode = M_PROBE;
		send_catchup_req(r);
		return;
	}
	/* any answer restarts the FETCH timeout, a late one too: the link is alive, only
	 * slow, and asking again would queue one more batch behind the late ones */
	r->req_ns = r->now;
	if (sl_bytes_get_le64(d->p) != r->end + 1)
		return;		/* late answer */
	if (d->status == ST_RESET) {
		reset_to(r, d);
		return;
	}
	prev = r->end_epoch;
	lend = sl_bytes_get_le64(d->p + 16);
	nrec = sl_bytes_get_le32(d->p + 24);
	off = 32;
	for (i = 0; i < nrec; i++) {
		if (off + rh > d->blen)
			break;
		rec_decode(d, d->p + off, &c);
		if (c.msg_size > d->blen - off - rh)
			break;
		st = apply_record(r, &c, d->p + off + rh, prev);
		if (st != ST_OK && st != ST_DUP)
			break;
		prev = c.epoch;
		off += rh + c.msg_size;
	}
	if (sl_bytes_get_le64(d->p + 8) > r->lcommit)
		r->lcommit = sl_bytes_get_le64(d->p + 8);
	replica_commit(r);
	cache_apply(r);
	if ((d->flags & F_MORE) && i == nrec)
		return;		/* the rest of this FETCH's answers are on their way */
	if (r->fetch_timed) {
		uint64_t sample = r->now - r->fetch_ns, t;

		r->fetch_srtt_ns = r->fetch_srtt_ns ?
			r->fetch_srtt_ns - r->fetch_srtt_ns / 8 + sample / 8 : sample;
		t = 2 * r->fetch_srtt_ns;
		if (t < r->conf.retransmit_ns)
			t = r->conf.retransmit_ns;
		r->fetch_rto_ns = t < rto_cap(r) ? t : rto_cap(r);
	}
	more = r->end < lend;
	r->fetch_idle = !more;
	if (!r->in_isr && r->end + r->conf.join_lag >= lend &&
	    (!r->joining || r->now - r->join_ns >= r->conf.retransmit_ns * 4)) {
		uint8_t *b = vhdr(r, T_JOIN_REQ, 0, 0);

		sl_bytes_put_le64(b, r->end);
		tx(r, r->view.leader, HDR_LEN + 8);
		r->joining = 1;
		r->join_ns = r->now;
		more = 1;	/* the leader joins us when a FETCH shows its end */
	}
	if (more)
		send_fetch(r);
}

static void
in_join_req(struct sl_repl *r, struct din *d)
{
	struct member *m = leader_member(r, d);
	char name[SL_REPL_CHAN_NAME_MAX + 1];
	uint64_t pos;
	uint32_t idx, j, k;

	if (d->blen < 8) {
		r->st.bad_dgrams++;
		return;
	}
	if (!m || counted(m) || r->join_idx >= 0 || r->now < m->join_until)
		return;
	if (r->view.writes_disabled)
		return;
	/* channel positions go first, as internal syncs to it alone */
	k = 0;
	if (r->ops.chan_get) {
		for (idx = 0; r->ops.chan_get(r->ops.arg, idx, name, &pos) == 0; idx++) {
			for (; k < CHAN_PEND && r->cp[k].used; k++)
				;
			if (k == CHAN_PEND) {
				for (j = 0; j < CHAN_PEND; j++)
					if (r->cp[j].used && r->cp[j].internal)
						r->cp[j].used = 0;
				return;	/* no room now: it asks again */
			}
			struct chan_pend *p = &r->cp[k];

			memset(p, 0, sizeof(*p));
			p->used = 1;
			p->internal = 1;
			p->flags = F_ACK | F_SET_OFFSET;
			p->need = 1u << (m - r->m);
			p->seq = ++r->chan_seq;
			p->confirmed = pos;
			p->first_ns = r->now;
			p->send_ns = r->now;
			name[SL_REPL_CHAN_NAME_MAX] = 0;
			strcpy(p->name, name);
			send_chan(r, p, m->node);
		}
	}
	m->join_wait = 1;
	m->leave_asked = 0;
	r->join_idx = (int)(m - r->m);
	r->pause_until = r->now + r->conf.catchup_pause_ns;
	join_try(r);
}

/* Leader: tell every other replica the ISR we commit with. */
static void
send_view(struct sl_repl *r)
{
	uint32_t i, n = r->view.nisr;
	uint8_t *b;

	for (i = 0; i < r->view.nreplicas; i++) {
		if (r->view.replicas[i] == r->conf.node_id)
			continue;
		b = vhdr(r, T_VIEW, 0, 0);
		b[0] = (uint8_t)n;
		b[1] = b[2] = b[3] = 0;
		for (uint32_t k = 0; k < n; k++)
			sl_bytes_put_le32(b + 4 + 4 * k, r->view.isr[k]);
		tx(r, r->view.replicas[i], HDR_LEN + 4 + 4 * n);
	}
	r->view_ns = r->now;
}

/* Replica: the leader's ISR; to the seam when our view says otherwise. */
static void
in_view(struct sl_repl *r, struct din *d)
{
	uint32_t isr[SL_REPL_MAX_NODES], n, i;
	int same;

	if (d->blen < 4 || (n = d->p[0]) == 0 || n > SL_REPL_MAX_NODES || 4 + 4 * n > d->blen) {
		r->st.bad_dgrams++;
		return;
	}
	if (fence(r, d->from, d->vepoch, d->sess, 0) || r->ops.leader_isr == NULL)
		return;
	same = n == r->view.nisr;
	for (i = 0; i < n; i++) {
		isr[i] = sl_bytes_get_le32(d->p + 4 + 4 * i);
		same = same && in_list(r->view.isr, r->view.nisr, isr[i]);
	}
	if (!same)
		r->ops.leader_isr(r->ops.arg, d->vepoch, d->sess, isr, n);
}

/* every datagram type's handler, by T_* (the header check keeps the type in range) */
static void (*const handlers[T_MAX])(struct sl_repl *r, struct din *d) = {
	[T_WRITE] = in_write,
	[T_WRITE_ACK] = in_write_ack,
	[T_HEARTBEAT] = in_heartbeat,
	[T_CHAN_SYNC] = in_chan_sync,
	[T_CHAN_ACK] = in_chan_ack,
	[T_CATCHUP_REQ] = in_catchup_req,
	[T_CATCHUP_RESP] = in_catchup_resp,
	[T_FETCH] = in_fetch,
	[T_FETCH_RESP] = in_fetch_resp,
	[T_JOIN_REQ] = in_join_req,
	[T_VIEW] = in_view,
};

void
sl_repl_input(struct sl_repl *r, uint32_t from, const void *buf, uint32_t len, uint64_t now_ns)
{
	const uint8_t *p = buf;
	struct din d;

	r->now = now_ns;
	if (len < HDR_LEN || p[0] != MAGIC0 || p[1] != MAGIC1 || p[2] != MAGIC2 ||
	    p[3] != VERSION || p[4] == 0 || p[4] >= T_MAX ||
	    sl_bytes_get_le32(p + 8) != r->conf.partition ||
	    sl_bytes_get_le64(p + 16) != r->conf.topic_hash || len > SL_REPL_MAX_DGRAM) {
		r->st.bad_dgrams++;
		return;
	}
	d.from = from;
	d.len = len;
	d.p = p + HDR_LEN;
	d.blen = len - HDR_LEN;
	d.type = p[4];
	d.status = p[5];
	d.flags = p[6];
	d.vepoch = sl_bytes_get_le32(p + 12);
	d.sess = sl_bytes_get_le64(p + 24);
	d.wepoch = sl_bytes_get_le64(p + 32);
	if (!r->is_leader && r->have_view && d.from == r->view.leader)
		r->heard_ns = now_ns;
	handlers[d.type](r, &d);
}

/* ---- API ---- */

struct sl_repl *
sl_repl_open(const struct sl_repl_conf *conf)
{
	struct sl_repl *r;
	const struct sl_repl_ops *o = conf ? conf->ops : NULL;

	if (!o || !o->send || !o->append || !o->truncate || !o->read || !o->last ||
	    !o->epoch_end || !o->isr_leave || !o->isr_join || !o->committed ||
	    !o->rolled_back || !o->chan_set || !o->chan_done) {
		errno = EINVAL;
		return NULL;
	}
	r = calloc(1, sizeof(*r));
	if (!r) {
		errno = ENOMEM;
		return NULL;
	}
	r->conf = *conf;
	r->ops = *o;
	if (!r->conf.retransmit_ns)
		r->conf.retransmit_ns = 2000000;
	if (!r->conf.lag_timeout_ns)
		r->conf.lag_timeout_ns = 500000000;
	if (!r->conf.isr_lag_ns)
		r->conf.isr_lag_ns = SL_REPL_ISR_LAG_NS;
	if (!r->conf.catchup_pause_ns)
		r->conf.catchup_pause_ns = 50000000;
	if (!r->conf.join_lag)
		r->conf.join_lag = 256;
	r->maxd = SL_REPL_MAX_DGRAM;
	if (r->conf.max_dgram && r->conf.max_dgram < SL_REPL_MAX_DGRAM)
		r->maxd = r->conf.max_dgram < 512 ? 512 : r->conf.max_dgram;
	r->join_idx = -1;
	refresh_end(r);
	return r;
}

void
sl_repl_close(struct sl_repl *r)
{
	free(r);
}

void
sl_repl_set_view(struct sl_repl *r, const struct sl_repl_view *v, uint64_t now_ns)
{
	struct sl_repl_view old = r->view;
	int had = r->have_view;
	int same_lead;

	r->now = now_ns;
	if (had && v->version < old.version)
		return;
	r->view = *v;
	if (r->view.nreplicas > SL_REPL_MAX_NODES)
		r->view.nreplicas = SL_REPL_MAX_NODES;
	if (r->view.nisr > SL_REPL_MAX_NODES)
		r->view.nisr = SL_REPL_MAX_NODES;
	r->have_view = 1;
	same_lead = had && old.leader == v->leader && old.epoch == v->epoch &&
		old.leader_session == v->leader_session;
	if (v->leader == r->conf.node_id) {
		if (r->is_leader && same_lead) {
			leader_view_change(r, &old);
			send_view(r);
			return;
		}
		if (r->is_leader) {
			/* a new epoch or session under us: our pending writes are void */
			rollback(r, -SL_E_EPOCH);
			chan_fail_all(r, -SL_E_EPOCH);
		}
		become_leader(r);
		return;
	}
	if (r->is_leader) {
		rollback(r, -SL_E_NOT_LEADER);
		chan_fail_all(r, -SL_E_NOT_LEADER);
		r->is_leader = 0;
		r->join_idx = -1;
		r->nmembers = 0;
	}
	if (!same_lead) {
		r->vend = r->commit;
		r->lcommit = 0;
		r->lwepoch = 0;
		r->joining = 0;
		r->join_ns = 0;
		r->mode = M_NONE;
	}
	r->in_isr = in_list(v->isr, v->nisr, r->conf.node_id);
	if (r->in_isr) {
		r->mode = M_FOLLOW;
		r->joining = 0;
	} else if (r->mode == M_FOLLOW || r->mode == M_NONE) {
		r->mode = M_PROBE;
		send_catchup_req(r);
	}
}

int
sl_repl_can_write(const struct sl_repl *r)
{
	if (!r->is_leader)
		return -SL_E_NOT_LEADER;
	if (r->view.writes_disabled || r->join_idx >= 0)
		return -SL_E_WRITE_DISABLED;
	if (!majority(r))
		return -SL_E_QUORUM;
	if (r->ring_n >= SL_REPL_WINDOW)
		return -SL_E_FULL;
	return 0;
}

uint64_t
sl_repl_epoch(const struct sl_repl *r)
{
	return r->wepoch;
}

int
sl_repl_write(struct sl_repl *r, struct sl_crec *c, const void *msgs, uint64_t now_ns)
{
	uint32_t i;
	int rc;

	r->now = now_ns;
	rc = sl_repl_can_write(r);
	if (rc)
		return rc;
	if (c->epoch != r->wepoch)
		return -SL_E_EPOCH;
	if (c->log_id != r->end + 1 || c->msg_num == 0 || c->last_msg_log_id < c->log_id ||
	    c->last_msg_log_id - c->log_id + 1 != c->msg_num)
		return -SL_E_PUB_ARG;
	if (c->msg_size > r->maxd - 128)
		return -SL_E_TOO_BIG;
	(void)msgs;	/* sent from the log by sl_repl_flush, packed with its neighbours */
	r->end = c->last_msg_log_id;
	r->end_epoch = c->epoch;
	r->empty = 0;
	ring_push(r, r->end);
	r->st.writes++;
	for (i = 0; i < r->nmembers; i++) {
		struct member *m = &r->m[i];

		if (!counted(m))
			continue;
		if (m->acked + 1 == c->log_id)
			caught_up(r, m);	/* it held everything until now */
		if (m->next == c->log_id)
			r->unsent = 1;	/* up to date: the next flush sends it */
	}
	advance_commit(r);
	return 0;
}

int
sl_repl_chan_sync(struct sl_repl *r, const char *chan, uint64_t confirmed_id, uint64_t prev_id,
		  int ordered, int set_offset, uint64_t token, uint64_t now_ns)
{
	struct chan_pend *p = NULL;
	size_t n = chan ? strlen(chan) : 0;
	uint32_t i;

	r->now = now_ns;
	if (!r->is_leader)
		return -SL_E_NOT_LEADER;
	if (n == 0 || n > SL_REPL_CHAN_NAME_MAX)
		return -SL_E_NAME;
	if (!ordered && !set_offset) {
		struct chan_pend tmp;

		memset(&tmp, 0, sizeof(tmp));
		tmp.seq = ++r->chan_seq;
		tmp.confirmed = confirmed_id;
		memcpy(tmp.name, chan, n + 1);
		for (i = 0; i < r->nmembers; i++)
			if (counted(&r->m[i]) || r->m[i].join_wait)
				send_chan(r, &tmp, r->m[i].node);
		r->st.chan_syncs++;
		r->ops.chan_done(r->ops.arg, token, 0, prev_id);
		return 0;
	}
	if (!majority(r))
		return -SL_E_QUORUM;
	for (i = 0; i < CHAN_PEND; i++)
		if (!r->cp[i].used) {
			p = &r->cp[i];
			break;
		}
	if (!p)
		return -SL_E_FULL;
	memset(p, 0, sizeof(*p));
	p->used = 1;
	p->flags = F_ACK | (set_offset ? F_SET_OFFSET : 0);
	p->need = counted_mask(r, 1);
	p->seq = ++r->chan_seq;
	p->token = token;
	p->confirmed = confirmed_id;
	p->prev = prev_id;
	p->first_ns = now_ns;
	p->send_ns = now_ns;
	memcpy(p->name, chan, n + 1);
	r->st.chan_syncs++;
	for (i = 0; i < r->nmembers; i++)
		if (p->need & (1u << i))
			send_chan(r, p, r->m[i].node);
	chan_check(r, p);
	return 0;
}

static uint32_t
leader_poll(struct sl_repl *r)
{
	uint64_t now = r->now, rt = r->conf.retransmit_ns, lag = r->conf.lag_timeout_ns;
	uint32_t i, j, done = 0;

	if (r->join_idx >= 0 && now >= r->pause_until) {
		struct member *jm = &r->m[r->join_idx];

		/* it did not make it in time: writes go on, and its next try waits (a
		 * replica on a slow link would otherwise pause the writes again and again) */
		jm->join_hold = jm->join_hold ? 2 * jm->join_hold : 4 * r->conf.catchup_pause_ns;
		if (jm->join_hold > r->conf.isr_lag_ns)
			jm->join_hold = r->conf.isr_lag_ns;
		jm->join_until = now + jm->join_hold;
		join_cancel(r);
		done++;
	}
	if (now - r->view_ns >= lag) {
		send_view(r);	/* a restarted replica learns where it stands */
		done++;
	}
	for (i = 0; i < r->nmembers; i++) {
		struct member *m = &r->m[i];

		if (!counted(m))
			continue;
		if (m->acked < r->end) {
			mark_take(r, m);
			if (now - m->rto_base_ns >= (m->rto_ns ? m->rto_ns : rt)) {
				/* no progress for a timeout: resend from its end, back off */
				send_from(r, m, m->acked + 1);
				m->rtt_end = 0;
				m->rto_base_ns = now;
				m->rto_ns = m->rto_ns ? m->rto_ns : rt;
				m->rto_ns = 2 * m->rto_ns < rto_cap(r) ? 2 * m->rto_ns : rto_cap(r);
				r->st.retransmits++;
				done++;
			}
			if (now - m->caught_ns >= r->conf.isr_lag_ns &&
			    (!m->leave_asked || now - m->leave_ns >= lag)) {
				m->leave_asked = 1;
				m->leave_ns = now;
				r->st.isr_leaves++;
				r->ops.isr_leave(r->ops.arg, m->node);
				done++;
			}
		} else if (now - m->last_send_ns >= rt * 4) {
			uint8_t *b = vhdr(r, T_HEARTBEAT, 0, 0);

			sl_bytes_put_le64(b, r->commit);
			sl_bytes_put_le64(b + 8, r->end);
			tx(r, m->node, HDR_LEN + 16);
			m->last_send_ns = now;
			done++;
		}
	}
	for (j = 0; j < CHAN_PEND; j++) {
		struct chan_pend *p = &r->cp[j];

		if (!p->used)
			continue;
		if (!p->internal && now - p->first_ns >= 4 * lag) {
			chan_finish(r, p, -SL_E_QUORUM);
			done++;
			continue;
		}
		if (now - p->send_ns >= rt) {
			p->send_ns = now;
			for (i = 0; i < r->nmembers; i++) {
				struct member *m = &r->m[i];

				if (!(p->need & ~p->acked & (1u << i)))
					continue;
				send_chan(r, p, m->node);
				if (!p->internal && m->in_isr && now - p->first_ns >= lag &&
				    (!m->leave_asked || now - m->leave_ns >= lag)) {
					m->leave_asked = 1;
					m->leave_ns = now;
					r->st.isr_leaves++;
					r->ops.isr_leave(r->ops.arg, m->node);
				}
			}
			done++;
		}
	}
	return done;
}

uint32_t
sl_repl_flush(struct sl_repl *r, uint64_t now_ns)
{
	r->now = now_ns;
	return flush_writes(r);
}

uint32_t
sl_repl_poll(struct sl_repl *r, uint64_t now_ns)
{
	r->now = now_ns;
	flush_writes(r);
	if (!r->have_view)
		return 0;
	if (r->is_leader)
		return leader_poll(r);
	if (now_ns - r->req_ns < (r->mode == M_FETCH && !r->fetch_idle ? fetch_rto(r) :
				  r->conf.retransmit_ns))
		return 0;
	if (r->mode == M_FOLLOW && now_ns - r->heard_ns >= r->conf.lag_timeout_ns &&
	    now_ns - r->req_ns >= r->conf.lag_timeout_ns) {
		/* nothing from the leader for a while (say we restarted and it dropped us):
		 * tell it where we are; its next VIEW tells us where we stand */
		send_ack(r, r->view.leader, ST_OK, r->view.epoch, r->view.leader_session,
			 r->lwepoch);
		r->req_ns = now_ns;
		return 1;
	}
	if (r->mode == M_PROBE) {
		send_catchup_req(r);
		return 1;
	}
	if (r->mode == M_FETCH && r->fetch_idle) {
		send_fetch(r);		/* at the leader's end: ask again, as a poll */
		return 1;
	}
	if (r->mode == M_FETCH) {
		/* nothing taken for a timeout: ask again, back off, time nothing */
		send_fetch(r);
		r->fetch_timed = 0;
		r->fetch_rto_ns = 2 * fetch_rto(r) < rto_cap(r) ? 2 * fetch_rto(r) : rto_cap(r);
		return 1;
	}
	return 0;
}

uint64_t
sl_repl_committed(const struct sl_repl *r)
{
	return r->commit;
}

int
sl_repl_in_sync(const struct sl_repl *r)
{
	return r->is_leader || (r->have_view && r->in_isr);
}

void
sl_repl_get_stats(const struct sl_repl *r, struct sl_repl_stats *st)
{
	*st = r->st;
	st->committed_end = r->commit;
}

uint64_t
sl_repl_topic_hash(const char *name, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ull;
	size_t i;

	for (i = 0; i < len; i++) {
		h ^= (uint8_t)name[i];
		h *= 0x100000001b3ull;
	}
	return h;
}
