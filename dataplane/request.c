/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * request: a worker's handling of one client request, from the parsed frame to its answer
 * (request.h): answers, the held pool, the opcode table and its handlers, client tokens,
 * and the dispatch through the idempotency window and the order rule.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_log.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <urcu-qsbr.h>

#include "bytes.h"
#include "auth.h"
#include "err.h"
#include "mpart.h"
#include "wire.h"
#include "request.h"
#include "worker.h"


/* ---- answers ---- */


/* Turn the request mbuf into a reply whose payload (plen bytes) is already written. */
static void
reply_send(struct sl_worker *w, struct sl_request *r, int plen)
{
	const struct sl_broker_port *port = &w->conf->ports[r->pi];
	uint8_t *frame = rte_pktmbuf_mtod(r->m, uint8_t *);
	uint32_t flen;

	if (plen < 0) {
		w->st.drop_no_mbuf++;
		rte_pktmbuf_free(r->m);
		return;
	}
	flen = sl_net_udp_reply(frame, &r->info, (uint16_t)plen, port->tx_flags);
	r->m->data_len = (uint16_t)flen;
	r->m->pkt_len = flen;
	/* the answer is laid out as sl_net_udp_build's: 20-byte IPv4 header */
	sl_worker_tx_offload(r->m, port->tx_flags, 20);
	if (r->hdr.flags & SL_WIRE_F_BUNDLE)
		sl_worker_tx_answer(w, r->pi, r->m, (uint16_t)plen);
	else
		sl_worker_tx_enqueue(w, r->pi, r->m);
}

static inline uint8_t *
reply_buf(struct sl_request *r, size_t *cap)
{
	uint8_t *frame = rte_pktmbuf_mtod(r->m, uint8_t *);
	size_t room = rte_pktmbuf_data_room_size(r->m->pool) - r->m->data_off;

	*cap = room > r->info.payload_off ? room - r->info.payload_off : 0;
	if (*cap > SL_WIRE_DGRAM_MAX_JUMBO)
		*cap = SL_WIRE_DGRAM_MAX_JUMBO;
	return frame + r->info.payload_off;
}

static struct sl_wire_hdr
answer_hdr(const struct sl_request *r)
{
	struct sl_wire_hdr h = {
		.version = SL_WIRE_VERSION,
		.flags = r->hdr.flags & SL_WIRE_F_BUNDLE,	/* it may share a datagram */
		.session = r->hdr.session,
		.seq = r->hdr.seq,
		.cookie = r->hdr.cookie,
	};
	return h;
}

void
sl_request_reply_err(struct sl_worker *w, struct sl_request *r, int code, uint16_t partition,
		     const char *text)
{
	struct sl_wire_hdr h = answer_hdr(r);
	size_t cap;
	uint8_t *buf = reply_buf(r, &cap);
	int n;

	if (code < 0)
		code = -code;
	if (code <= SL_E_BASE || code >= SL_E_MAX)
		code = SL_E_INTERNAL;
	w->st.errs_sent++;
	w->st.err_codes[(code - SL_E_BASE) & 31]++;
	n = sl_wire_encode_err(buf, cap, &h, (uint16_t)code, r->hdr.opcode, partition,
			       text ? text : sl_strerror(code));
	reply_send(w, r, n);
}

static void
reply_entry(struct sl_worker *w, struct sl_request *r, const struct sl_idem_entry *e)
{
	struct sl_wire_hdr h = answer_hdr(r);
	struct sl_wire_ok ok;
	size_t cap;
	uint8_t *buf;

	if (e->code != 0) {
		sl_request_reply_err(w, r, e->code, e->partition, NULL);
		return;
	}
	if (r->hdr.flags & SL_WIRE_F_NOACK) {
		rte_pktmbuf_free(r->m);
		return;
	}
	buf = reply_buf(r, &cap);
	ok.req_opcode = e->opcode;
	ok.partition = e->partition;
	ok.count = e->count;
	ok.id = e->id;
	ok.offset = e->offset;
	ok.aux = e->aux;
	reply_send(w, r, sl_wire_encode_ok(buf, cap, &h, &ok));
}

/* The answer code of an operation's result: 0, an SL_E_* code, or SL_E_INTERNAL. */
static uint16_t
answer_code(int rc)
{
	if (rc >= 0)
		return 0;
	return (uint16_t)(-rc > SL_E_BASE && -rc < SL_E_MAX ? -rc : SL_E_INTERNAL);
}

/* ---- requests whose answer waits: the worker's held pool, by token ---- */

static int busy_code(int code);
static void order_note(struct sl_worker *w, uint32_t slot, const struct sl_wire_hdr *hdr,
		       const void *p, int rc);

static int
is_publish(uint8_t opcode)
{
	return opcode == SL_OP_PUB || opcode == SL_OP_MPUB || opcode == SL_OP_MPUB_PART;
}

/* A free held slot's token, or -1 when every slot is in use. */
static int64_t
held_take(struct sl_worker *w)
{
	return w->nheld_free > 0 ? (int64_t)w->held_free[--w->nheld_free] : -1;
}

static void
held_put(struct sl_worker *w, uint64_t token)
{
	w->nheld_repl -= w->held[token].repl;
	w->held[token].used = 0;
	w->held[token].repl = 0;
	w->held_free[w->nheld_free++] = (uint32_t)token;
}

/* Keep request r to partition p (answered later with entry e) in slot token. */
static void
held_fill(struct sl_worker *w, uint64_t token, struct sl_request *r, const void *p,
	  const struct sl_idem_entry *e)
{
	struct sl_held *h = &w->held[token];

	if (r->hdr.flags & SL_WIRE_F_NOACK) {
		rte_pktmbuf_free(r->m);
		h->m = NULL;
	} else {
		h->m = r->m;
	}
	h->used = 1;
	h->repl = (uint8_t)sl_partition_replicated((const struct sl_partition *)p);
	w->nheld_repl += h->repl;
	h->part = p;
	h->slot = r->slot;
	h->pi = r->pi;
	h->anon = r->anon;
	h->info = r->info;
	h->hdr = r->hdr;
	h->e = *e;
	h->e.pending = 0;
	h->e.seq = r->hdr.seq;	/* the answer replaces the pending entry of this seq */
}

/* A partition completed a held request: record the answer in the session's idempotency
 * window and send it. */
void
sl_request_held_answer(struct sl_worker *w, const struct sl_partition_done *d)
{
	struct sl_held *h = &w->held[d->token];
	struct sl_request r;

	h->e.code = d->code;
	if (d->has_pos) {
		h->e.id = d->id;
		h->e.offset = d->offset;
		h->e.aux = d->aux;
	}
	if (!h->anon) {
		struct sl_idem *idem = &w->idem[h->slot];
		struct sl_idem_entry *slot = &idem->e[h->hdr.seq % SL_IDEM_WINDOW];
		/* a publish rolled back (an ISR shrink): busy, retried with the same seq */
		int busy = is_publish(h->hdr.opcode) && d->code != 0 && busy_code(d->code);

		/* the session may have expired and its slot been reused meanwhile */
		if (idem->session == h->hdr.session && slot->seq == h->hdr.seq) {
			if (busy && !(h->hdr.flags & SL_WIRE_F_NORESEND))
				memset(slot, 0, sizeof(*slot));	/* not remembered */
			else
				*slot = h->e;
			if (is_publish(h->hdr.opcode))
				order_note(w, h->slot, &h->hdr, h->part, -(int)d->code);
		}
	}
	if (h->m != NULL) {
		memset(&r, 0, sizeof(r));
		r.m = h->m;
		r.pi = h->pi;
		r.info = h->info;
		r.hdr = h->hdr;
		reply_entry(w, &r, &h->e);
	}
	held_put(w, d->token);
}

/* A detached partition's held request: no answer is due any more. */
void
sl_request_held_drop(void *arg, uint64_t token)
{
	struct sl_worker *w = arg;

	rte_pktmbuf_free(w->held[token].m);
	held_put(w, token);
}

/* ---- the opcode table ---- */

/* A decoded request body. */
union body {
	struct sl_wire_pub pub;
	struct sl_wire_mpart mp;
	struct sl_wire_sub sub;
	struct sl_wire_chan_op cop;
};

/* The partition a request names. */
struct target {
	const char *topic;
	uint32_t topic_len;
	uint16_t partition;
};

#define ANSWERED 1	/* a decode handler answered the request itself */

struct op_handler {
	/* HELLO and the like: handled before the session check, no partition */
	void (*local)(struct sl_worker *w, struct sl_request *r);
	/* decode the body: 0 and *t, ANSWERED, or -SL_E_* */
	int (*decode)(struct sl_worker *w, struct sl_request *r, union body *b, struct target *t);
	/* execute on the owning partition: 0, SL_PARTITION_HELD (token) or -SL_E_* */
	int (*exec)(struct sl_worker *w, struct sl_request *r, struct sl_partition *p,
		    const union body *b, uint64_t token, struct sl_partition_res *res);
	uint8_t publish;	/* PUB/MPUB: anonymous allowed, auto-create, failures not
				 * remembered by the idempotency window */
	uint8_t may_hold;	/* may answer later (takes a held slot) */
	uint8_t need;		/* SL_AUTH_* rights on the topic it needs (with tokens) */
	const char *denied;	/* the ERR text when they are missing */
};

static void
op_hello(struct sl_worker *w, struct sl_request *r)
{
	struct sl_wire_hello h;
	struct sl_wire_welcome wel;
	struct sl_wire_hdr ah = answer_hdr(r);
	struct sl_session *s;
	size_t cap;
	uint8_t *buf;
	const struct sl_auth_table *a = rcu_dereference(*w->auth);
	uint64_t acache = 0;
	uint32_t uid = 0;
	int rc = sl_wire_decode_hello(r->body, r->hdr.body_len, r->hdr.flags, &h), idx;

	if (rc != 0) {
		sl_request_reply_err(w, r, rc, 0, NULL);
		return;
	}
	if (a != NULL) {
		/* with a token file, only a known token opens a session (one hash per HELLO) */
		idx = h.token_len != 0 ? sl_auth_find(a, h.token, h.token_len) : -1;
		if (idx < 0) {
			sl_request_reply_err(w, r, SL_E_AUTH, 0,
					     h.token_len != 0
						     ? "unknown client token"
						     : "this node takes only clients with a token");
			return;
		}
		uid = sl_auth_uid(a, (uint32_t)idx);
		acache = (uint64_t)sl_auth_gen(a) << 32 | (uint32_t)idx;
	}
	wel.window = w->conf->window;
	if (h.window != 0 && h.window < wel.window)
		wel.window = h.window;
	s = sl_session_create(w->sessions, r->info.src_ip, r->info.src_port, r->info.src_mac,
			      w->conf->ports[r->pi].port_id, wel.window, h.client_info, uid,
			      acache, h.producer, w->now_tsc);
	if (s == NULL) {
		sl_request_reply_err(w, r, SL_E_LIMIT, 0, rte_errno == EDQUOT ?
			  "too many sessions from this address" : "too many sessions");
		return;
	}
	w->st.sessions_created++;
	wel.session = s->id;
	wel.max_msg = w->conf->max_msg;
	wel.heartbeat_ms = w->conf->heartbeat_ms;
	wel.timeout_ms = w->conf->session_timeout_ms;
	ah.session = s->id;
	ah.flags |= SL_WIRE_F_BUNDLE;	/* this broker takes bundles and bundles answers */
	buf = reply_buf(r, &cap);
	reply_send(w, r, sl_wire_encode_welcome(buf, cap, &ah, &wel));
}

/* The client address of node id: its IPv4 (network order, 0 when unknown) and *port.
 * This node's is the receiving port's; another's comes from the node table, with this
 * node's client port (the same on every node of a cluster: docs/operations.md). */
static uint32_t
node_addr(const struct sl_worker *w, const struct sl_request *r, uint32_t id, uint16_t *port)
{
	const struct sl_broker_conf *c = w->conf;
	uint32_t i, n = __atomic_load_n(&c->nnodes, __ATOMIC_ACQUIRE);

	*port = 0;
	if (id == 0)
		return 0;
	if (id == c->node_id) {
		*port = c->ports[r->pi].nif.udp_port_lo;
		return c->ports[r->pi].nif.ip;
	}
	for (i = 0; i < n && i < SL_BROKER_MAX_NODES; i++) {
		if (c->nodes[i].id == id) {
			*port = c->ports[r->pi].nif.udp_port_lo;
			return c->nodes[i].ip;
		}
	}
	return 0;
}

/* A partition's METADATA entry from its replication view (max_record: for META v2).
 * RCU read side. */
static void
meta_entry(const struct sl_worker *w, const struct sl_request *r, const struct sl_coord_part *cp,
	   struct sl_wire_meta_entry *e)
{
	const struct sl_part_meta *m = rcu_dereference(cp->meta);
	uint32_t me = w->conf->node_id, i, d = sl_worker_repl_dgram(w->conf);

	e->partition = cp->id;
	e->flags = 0;
	/* every partition of a node with replication writes through sl_repl_write, which
	 * refuses a record above max_dgram - 128 (whatever the replica count) */
	e->max_record = d > 128 ? (uint16_t)(d - 128) : 0;
	e->leader = m->leader;
	e->epoch = m->epoch;
	e->leader_ip = node_addr(w, r, m->leader, &e->leader_port);
	if (m->leader == me) {
		e->flags |= SL_WIRE_META_F_LEADER;
		if (!m->writes_disabled && m->nisr > m->nreplicas / 2)
			e->flags |= SL_WIRE_META_F_WRITABLE;
	}
	for (i = 0; i < m->nreplicas && i < SL_COORD_MAX_REPLICAS; i++)
		if (m->replicas[i] == me)
			e->flags |= SL_WIRE_META_F_REPLICA;
}

static int session_rights(struct sl_worker *w, const struct sl_request *r, const struct target *t);

/* With a token file, METADATA needs a live session (from its own source) with any right
 * on the topic: 0, or answered. */
static int
metadata_denied(struct sl_worker *w, struct sl_request *r, const struct target *tg)
{
	int rc;

	if (rcu_dereference(*w->auth) == NULL)
		return 0;
	r->sess = sl_session_get_src(w->sessions, r->hdr.session, r->info.src_ip,
				     r->info.src_port, &r->slot, w->now_tsc);
	if (r->sess == NULL) {
		sl_request_reply_err(w, r, SL_E_AUTH, 0,
				     "this node answers METADATA only in a session");
		return 1;
	}
	rc = session_rights(w, r, tg);
	if (rc > 0)
		return 0;
	sl_request_reply_err(w, r, rc < 0 ? rc : -SL_E_DENIED, tg->partition, rc < 0 ?
		  "the session's client token was removed" : "no right on this topic");
	return 1;
}

#define META_ROOM(n) (SL_WIRE_HDR_LEN + SL_WIRE_META_HDR_LEN + (size_t)(n) * \
		      SL_WIRE_META_ENTRY_LEN)

/* METADATA: the leaders of a topic's partitions, as many as fit one META, answered to
 * the source like HELLO (no session needed without a token file, nothing cached). */
static void
op_metadata(struct sl_worker *w, struct sl_request *r)
{
	struct sl_wire_meta_entry e[SL_WIRE_META_MAX];
	struct sl_wire_hdr ah = answer_hdr(r);
	struct sl_wire_metareq q;
	struct sl_wire_meta m;
	struct target tg;
	struct sl_topic *t;
	size_t cap;
	uint8_t *buf;
	uint16_t i;
	int rc = sl_wire_decode_metareq(r->body, r->hdr.body_len, &q);

	if (rc != 0) {
		sl_request_reply_err(w, r, rc, 0, NULL);
		return;
	}
	tg.topic = q.topic;
	tg.topic_len = q.topic_len;
	tg.partition = q.first_partition;
	if (metadata_denied(w, r, &tg))
		return;
	t = sl_coord_topic_find(w->coord, q.topic, q.topic_len);
	if (t == NULL || q.first_partition >= t->nparts) {
		sl_request_reply_err(w, r, t == NULL ? SL_E_TOPIC : SL_E_PARTITION,
				     q.first_partition, NULL);
		return;
	}
	buf = reply_buf(r, &cap);
	m.nparts = t->nparts;
	m.first_partition = q.first_partition;
	m.v2 = (r->hdr.flags & SL_WIRE_F_META2) != 0;
	m.count = (uint16_t)RTE_MIN(t->nparts - q.first_partition, SL_WIRE_META_MAX);
	/* and what the mbuf holds: one entry at the least, checked by the encoder */
	if (cap < META_ROOM(m.count))
		m.count = cap > META_ROOM(1) ? (uint16_t)((cap - META_ROOM(0)) /
							  SL_WIRE_META_ENTRY_LEN) : 1;
	for (i = 0; i < m.count; i++)
		meta_entry(w, r, &t->parts[q.first_partition + i], &e[i]);
	reply_send(w, r, sl_wire_encode_meta(buf, cap, &ah, &m, e));
}

static int
dec_nop(struct sl_worker *w, struct sl_request *r, union body *b, struct target *t)
{
	struct sl_idem_entry e = {.opcode = SL_OP_NOP};

	if (r->hdr.body_len != 0)
		return -SL_E_MALFORMED;
	reply_entry(w, r, &e);
	return ANSWERED;
}

static int
dec_pub(struct sl_worker *w, struct sl_request *r, union body *b, struct target *t)
{
	int rc = sl_wire_decode_pub(r->body, r->hdr.body_len, r->hdr.opcode == SL_OP_MPUB,
				    &b->pub);

	/* a session with a producer id writes (producer, seq) with the record (ptab.h) */
	if (rc == 0 && r->sess != NULL && r->sess->producer != 0) {
		b->pub.producer = r->sess->producer;
		b->pub.pseq = r->hdr.seq;
	}
	t->topic = b->pub.topic;
	t->topic_len = b->pub.topic_len;
	t->partition = b->pub.partition;
	return rc;
}

/* MPUB_PART: the fragment, routed like its MPUB (every fragment names the partition);
 * reassembled on the partition's owner (mpart_step) */
static int
dec_mpart(struct sl_worker *w, struct sl_request *r, union body *b, struct target *t)
{
	int rc = sl_wire_decode_mpart(r->body, r->hdr.body_len, &b->mp);

	t->topic = b->mp.topic;
	t->topic_len = b->mp.topic_len;
	t->partition = b->mp.partition;
	return rc;
}

static int
dec_sub(struct sl_worker *w, struct sl_request *r, union body *b, struct target *t)
{
	int rc = sl_wire_decode_sub(r->body, r->hdr.body_len, &b->sub);

	t->topic = b->sub.addr.topic;
	t->topic_len = b->sub.addr.topic_len;
	t->partition = b->sub.addr.partition;
	return rc;
}

static int
dec_chan(struct sl_worker *w, struct sl_request *r, union body *b, struct target *t)
{
	int rc = sl_wire_decode_chan_op(r->hdr.opcode, r->body, r->hdr.body_len, &b->cop);

	if (rc != 0)
		return rc;
	if (r->hdr.opcode == SL_OP_CLS && b->cop.addr.topic_len == 0) {
		/* CLS of the whole session */
		struct sl_idem_entry e = {.opcode = SL_OP_CLS};

		sl_session_mark_closing(r->sess);
		reply_entry(w, r, &e);
		return ANSWERED;
	}
	t->topic = b->cop.addr.topic;
	t->topic_len = b->cop.addr.topic_len;
	t->partition = b->cop.addr.partition;
	return 0;
}

static int
ex_pub(struct sl_worker *w, struct sl_request *r, struct sl_partition *p, const union body *b,
       uint64_t token, struct sl_partition_res *res)
{
	int rc = sl_partition_publish(p, &b->pub, r->hdr.opcode != SL_OP_PUB,
				      w->wall_base_ns + w->now_ns, w->now_ns, token, res);

	if (rc >= 0) {
		w->st.pubs++;
		w->st.msgs_in += b->pub.count;
		w->st.bytes_in += b->pub.msg_len;
	}
	return rc;
}

static int
ex_sub(struct sl_worker *w, struct sl_request *r, struct sl_partition *p, const union body *b,
       uint64_t token, struct sl_partition_res *res)
{
	uint64_t sub_id = ((uint64_t)(w->idx + 1) << 48) | (w->sub_counter + 1);
	int rc = sl_partition_subscribe(p, &b->sub, r->sess->id, r->slot, sub_id, res);

	if (rc == 0 && res->id == sub_id)
		w->sub_counter++;	/* a new subscription took the id */
	return rc;
}

static int
ex_chan(struct sl_worker *w, struct sl_request *r, struct sl_partition *p, const union body *b,
	uint64_t token, struct sl_partition_res *res)
{
	return sl_partition_chan_op(p, r->hdr.opcode, &b->cop, r->sess->id, w->now_ns, token,
				    res);
}

#define DENIED_PUB "publishing needs the pub right on this topic"
#define DENIED_SUB "consuming needs the sub right on this topic"

static const struct op_handler op_table[SL_WIRE_OP_MAX] = {
	[SL_OP_HELLO] = {.local = op_hello},
	[SL_OP_METADATA] = {.local = op_metadata},
	[SL_OP_NOP] = {.decode = dec_nop},
	[SL_OP_PUB] = {.decode = dec_pub, .exec = ex_pub, .publish = 1, .may_hold = 1,
		       .need = SL_AUTH_PUB, .denied = DENIED_PUB},
	[SL_OP_MPUB] = {.decode = dec_pub, .exec = ex_pub, .publish = 1, .may_hold = 1,
			.need = SL_AUTH_PUB, .denied = DENIED_PUB},
	[SL_OP_MPUB_PART] = {.decode = dec_mpart, .exec = ex_pub, .publish = 1, .may_hold = 1,
			     .need = SL_AUTH_PUB, .denied = DENIED_PUB},
	[SL_OP_SUB] = {.decode = dec_sub, .exec = ex_sub, .need = SL_AUTH_SUB,
		       .denied = DENIED_SUB},
	[SL_OP_RDY] = {.decode = dec_chan, .exec = ex_chan, .need = SL_AUTH_SUB,
		       .denied = DENIED_SUB},
	[SL_OP_FIN] = {.decode = dec_chan, .exec = ex_chan, .may_hold = 1, .need = SL_AUTH_SUB,
		       .denied = DENIED_SUB},
	[SL_OP_REQ] = {.decode = dec_chan, .exec = ex_chan, .need = SL_AUTH_SUB,
		       .denied = DENIED_SUB},
	[SL_OP_TOUCH] = {.decode = dec_chan, .exec = ex_chan, .need = SL_AUTH_SUB,
			 .denied = DENIED_SUB},
	[SL_OP_CLS] = {.decode = dec_chan, .exec = ex_chan, .need = SL_AUTH_SUB,
		       .denied = DENIED_SUB},
	[SL_OP_SET_OFFSET] = {.decode = dec_chan, .exec = ex_chan, .may_hold = 1,
			      .need = SL_AUTH_SUB | SL_AUTH_ADMIN,
			      .denied = "SET_OFFSET needs the sub and admin rights on this topic"},
};

/* ---- client tokens (auth.h) ---- */

/* The rights of r's session on topic t: SL_AUTH_ALL in open mode, else its token's (the
 * session keeps the token's index in the table it last saw; after a reload it finds its
 * token again by uid, once). -SL_E_AUTH when the token was removed. RCU read side. */
static int
session_rights(struct sl_worker *w, const struct sl_request *r, const struct target *t)
{
	const struct sl_auth_table *a = rcu_dereference(*w->auth);
	struct sl_session *s = r->sess;
	uint64_t c;

	if (a == NULL)
		return SL_AUTH_ALL;
	if (s == NULL)
		return -SL_E_AUTH;
	c = __atomic_load_n(&s->auth_cache, __ATOMIC_RELAXED);
	if ((uint32_t)(c >> 32) != sl_auth_gen(a)) {
		c = (uint64_t)sl_auth_gen(a) << 32 | (uint32_t)sl_auth_by_uid(a, s->auth_uid);
		__atomic_store_n(&s->auth_cache, c, __ATOMIC_RELAXED);
	}
	if ((uint32_t)c == UINT32_MAX)
		return -SL_E_AUTH;
	return (int)sl_auth_rights(a, (uint32_t)c, t->topic, t->topic_len);
}

/* ---- request dispatch ---- */

/* Forward a frame to the worker that owns its partition (SPSC ring from this worker to
 * the owner). Consumes r->m. */
void
sl_request_forward(struct sl_worker *w, struct sl_request *r, uint16_t owner)
{
	struct sl_worker *dst = w->peers[owner];

	r->m->hash.usr = r->pi;
	if (rte_ring_sp_enqueue(dst->in[w->idx], r->m) != 0) {
		w->st.drop_fwd_full++;
		rte_pktmbuf_free(r->m);
		return;
	}
	w->st.fwd_out++;
}

/* A publish names a topic that does not exist: hand its frame to the control thread,
 * which creates the topic and gives the frame back (poll_autocreated). Refused at once
 * when the node has no room for a topic (SL_E_CAPACITY) or too many creations wait
 * (SL_E_FULL: the client retries). Control rate: bounded by the ring, so the allocation
 * is fine. Consumes r->m. */
static void
autocreate_ask(struct sl_worker *w, struct sl_request *r, const struct target *t)
{
	uint64_t mem = (uint64_t)w->conf->auto_create_parts * w->conf->log_bytes;
	struct sl_wautocreate *a = NULL;
	int rc = sl_coord_room(w->coord, mem);

	if (rc == 0 && rte_ring_count(w->autocreate) < SL_WORKER_AUTOCREATE_MAX)
		a = rte_malloc(NULL, sizeof(*a), 0);
	if (a == NULL) {
		sl_request_reply_err(w, r, rc != 0 ? rc : -SL_E_FULL, t->partition,
			  rc != 0 ? NULL : "topic creations queued: retry");
		return;
	}
	a->m = r->m;
	a->pi = r->pi;
	a->worker = w->idx;
	a->rc = 0;
	a->why = NULL;
	a->src_ip = r->info.src_ip;
	memcpy(a->topic, t->topic, t->topic_len);
	a->topic[t->topic_len] = '\0';
	if (rte_ring_mp_enqueue(w->autocreate, a) != 0) {
		rte_free(a);
		sl_request_reply_err(w, r, -SL_E_FULL, t->partition,
				     "topic creations queued: retry");
		return;
	}
	w->st.auto_create_req++;
}

static uint16_t
pick_partition(const struct sl_topic *t, const struct sl_wire_hdr *h, uint64_t producer)
{
	/* deterministic, so a retry of the same request lands on the same partition; with a
	 * producer id also a retry in another session, on another broker */
	uint64_t x = (producer != 0 ? producer : h->session) ^ (h->seq * 0x9E3779B97F4A7C15ull);

	x ^= x >> 29;
	return (uint16_t)(x % t->nparts);
}

struct sl_partition *
sl_request_owned(const struct sl_worker *w, const struct sl_coord_part *cp)
{
	return cp->owner == w->idx ? cp->state : NULL;
}

/* The partition a request is for, when this worker owns it; else the request was
 * answered, dropped or forwarded to the owner, and NULL. RCU read side. */
static struct sl_partition *
target_partition(struct sl_worker *w, struct sl_request *r, const struct op_handler *h,
		 struct target *tg, int forwarded)
{
	struct sl_topic *t = sl_coord_topic_find(w->coord, tg->topic, tg->topic_len);
	struct sl_partition *p;

	if (t == NULL) {
		/* a frame back from auto-creation gets its outcome: asked once */
		if (h->publish && w->conf->auto_create && w->ac_rc == 0 &&
		    !(r->rights & SL_AUTH_ADMIN))
			sl_request_reply_err(w, r, SL_E_DENIED, tg->partition,
				  "creating a topic by publishing needs the admin right");
		else if (h->publish && w->conf->auto_create && w->ac_rc == 0)
			autocreate_ask(w, r, tg);
		else
			sl_request_reply_err(w, r, w->ac_rc != 0 ? w->ac_rc : SL_E_TOPIC,
					     tg->partition, w->ac_rc != 0 ? w->ac_why : NULL);
		return NULL;
	}
	if (tg->partition == SL_WIRE_PART_ANY && h->publish)
		tg->partition = pick_partition(t, &r->hdr,
					       r->sess != NULL ? r->sess->producer : 0);
	if (tg->partition >= t->nparts) {
		sl_request_reply_err(w, r, SL_E_PARTITION, tg->partition, NULL);
		return NULL;
	}
	p = sl_request_owned(w, &t->parts[tg->partition]);
	if (p != NULL)
		return p;
	if (forwarded)
		sl_request_reply_err(w, r, SL_E_INTERNAL, tg->partition, "partition owner moved");
	else
		sl_request_forward(w, r, t->parts[tg->partition].owner);
	return NULL;
}

/* The idempotency window's verdict on a request with a session: 1 new (execute it),
 * else it was answered (a retry) or dropped (still pending). */
static int
idem_new(struct sl_worker *w, struct sl_request *r, uint16_t partition)
{
	struct sl_idem *idem = &w->idem[r->slot];
	const struct sl_idem_entry *hit;

	if (idem->session != r->sess->id)
		sl_idem_bind(idem, r->sess->id);
	switch (sl_idem_check(idem, r->hdr.seq, &hit)) {
	case SL_IDEM_DUP:
		w->st.dups++;
		reply_entry(w, r, hit);
		return 0;
	case SL_IDEM_PENDING:
		rte_pktmbuf_free(r->m);
		return 0;
	case SL_IDEM_OLD:
		sl_request_reply_err(w, r, SL_E_SEQ_OLD, partition, NULL);
		return 0;
	case SL_IDEM_NEW:
		break;
	}
	return 1;
}

/* A publish's refusal the client retries with the same seq (docs/protocol.md section 8):
 * nothing was written and the answer is not remembered. SL_E_QUORUM also ends a held
 * publish that an ISR shrink rolled back. */
static int
busy_code(int code)
{
	if (code < 0)
		code = -code;
	return code == SL_E_FULL || code == SL_E_WRITE_DISABLED || code == SL_E_QUORUM;
}

/* Order across retryable refusals (idem.h, docs/protocol.md section 8): a publish of the
 * session to p above one of its publishes to p that was refused and not accepted since is
 * refused SL_E_OUT_OF_ORDER and not executed. 1 when so answered, 0: execute it. */
static int
order_refused(struct sl_worker *w, struct sl_request *r, const struct sl_partition *p,
	      uint16_t partition)
{
	/* a NOACK or NORESEND publish is not sent again: refused, it does not join the hole */
	int join = !(r->hdr.flags & (SL_WIRE_F_NOACK | SL_WIRE_F_NORESEND));

	switch (sl_idem_order_check(&w->idem[r->slot], p, r->hdr.seq, join, w->now_ns)) {
	case SL_IDEM_ORDER_BLOCK:
		sl_request_reply_err(w, r, SL_E_OUT_OF_ORDER, partition, NULL);
		return 1;
	case SL_IDEM_ORDER_CLOSED:
		w->st.order_closed++;
		break;
	case SL_IDEM_ORDER_GO:
		break;
	}
	return 0;
}

/* A publish's outcome for the session's order on partition p (slot: its session's; hdr:
 * its header): refused with a busy answer (it joins the hole), or settled (accepted,
 * held, or refused for good: the hole passes it). A NOACK or NORESEND publish is never
 * retried, so its refusal opens no hole. */
static void
order_note(struct sl_worker *w, uint32_t slot, const struct sl_wire_hdr *hdr, const void *p,
	   int rc)
{
	int busy = rc < 0 && busy_code(rc);

	if (busy && (hdr->flags & (SL_WIRE_F_NOACK | SL_WIRE_F_NORESEND)))
		return;
	if (sl_idem_order_note(&w->idem[slot], p, hdr->seq, busy, w->now_ns) != 0)
		w->st.order_untracked++;
}

/* NOT_LEADER's ERR text: who leads the partition now, from its view (RCU read side).
 * Only on that refusal: no allocation, one snprintf. */
static const char *
not_leader_text(struct sl_worker *w, const struct sl_request *r, const struct target *tg,
		char *buf, size_t cap)
{
	struct sl_topic *t = sl_coord_topic_find(w->coord, tg->topic, tg->topic_len);
	struct sl_wire_meta_entry e;
	const uint8_t *ip = (const uint8_t *)&e.leader_ip;

	if (t == NULL || tg->partition >= t->nparts)
		return NULL;
	meta_entry(w, r, &t->parts[tg->partition], &e);
	if (e.leader == 0)
		snprintf(buf, cap, "not the partition leader: no leader known (epoch %u)",
			 e.epoch);
	else if (e.leader_ip == 0)
		snprintf(buf, cap, "not the partition leader: node %u leads, address unknown "
			 "(epoch %u)", e.leader, e.epoch);
	else
		snprintf(buf, cap, "not the partition leader: node %u at %u.%u.%u.%u:%u leads "
			 "(epoch %u)", e.leader, ip[0], ip[1], ip[2], ip[3], e.leader_port,
			 e.epoch);
	return buf;
}

/* Run a request on its partition and answer it, now or (held) once it completes. */
static void
execute(struct sl_worker *w, struct sl_request *r, const struct op_handler *h,
	struct sl_partition *p, const union body *b, const struct target *tg)
{
	uint16_t partition = tg->partition;
	char text[SL_WIRE_ERR_TEXT_MAX + 1];
	struct sl_idem_entry e = {.opcode = r->hdr.opcode, .partition = partition};
	struct sl_partition_res res = {0};
	int64_t token = 0;
	int rc;

	if (r->anon)
		w->st.anon_pubs++;
	else if (!idem_new(w, r, partition))
		return;
	if (h->publish && !r->anon && order_refused(w, r, p, partition))
		return;
	if (h->may_hold && (token = held_take(w)) < 0)
		rc = -SL_E_FULL;	/* every held slot in use: the client retries */
	else
		rc = h->exec(w, r, p, b, (uint64_t)token, &res);
	if (h->publish && !r->anon)
		order_note(w, r->slot, &r->hdr, p, rc);
	e.count = res.count;
	e.id = res.id;
	e.offset = res.offset;
	e.aux = res.aux;
	if (rc == SL_PARTITION_HELD) {
		/* answered on completion; a retry meanwhile is ignored (PENDING) */
		if (!r->anon) {
			e.pending = 1;
			sl_idem_record(&w->idem[r->slot], r->hdr.seq, &e);
		}
		held_fill(w, (uint64_t)token, r, p, &e);
		return;
	}
	if (h->may_hold && token >= 0)
		held_put(w, (uint64_t)token);
	e.code = answer_code(rc);
	/* a publish that failed wrote nothing: its answer is not remembered, so that a
	 * retry (a client backing off from SL_E_FULL or SL_E_WRITE_DISABLED) runs again;
	 * unless NORESEND: its client reported the refusal, a late copy must not write it */
	if (!r->anon && (rc == 0 || !h->publish || (r->hdr.flags & SL_WIRE_F_NORESEND)))
		sl_idem_record(&w->idem[r->slot], r->hdr.seq, &e);
	if (rc < 0 && h->publish && res.why != NULL)
		sl_request_reply_err(w, r, rc, partition, res.why);	/* what it waits for */
	else if (rc == -SL_E_NOT_LEADER)
		sl_request_reply_err(w, r, rc, partition,
				     not_leader_text(w, r, tg, text, sizeof(text)));
	else
		reply_entry(w, r, &e);
}

/* An MPUB_PART fragment on its partition's owner: kept in the worker's reassembly pool
 * until its MPUB is complete, which then runs as the MPUB (answered with the completing
 * fragment's header). A retransmitted fragment of an MPUB already answered gets that
 * answer from the idempotency window; one still held is dropped. */
static void
mpart_step(struct sl_worker *w, struct sl_request *r, const struct op_handler *h,
	   struct sl_partition *p, union body *b, const struct target *tg)
{
	struct sl_wire_mpart f = b->mp;
	uint32_t handle = 0;
	int rc;

	if (!idem_new(w, r, tg->partition))
		return;
	rc = sl_mpart_add(w->mpart, r->hdr.session, r->hdr.seq, r->info.src_ip, &f, w->now_ns,
			  &b->pub, &handle);
	w->st.mpart = w->mpart->st;
	switch (rc) {
	case SL_MPART_MORE:
	case SL_MPART_DUP:
		rte_pktmbuf_free(r->m);
		return;
	case SL_MPART_DONE:
		if (r->sess->producer != 0) {
			b->pub.producer = r->sess->producer;
			b->pub.pseq = r->hdr.seq;
		}
		execute(w, r, h, p, b, tg);
		sl_mpart_release(w->mpart, handle);
		return;
	default:
		/* a busy refusal keeps the session's order like a refused MPUB (rule 10) */
		if (busy_code(rc))
			order_note(w, r->slot, &r->hdr, p, rc);
		sl_request_reply_err(w, r, rc, tg->partition, rc == -SL_E_FULL ?
			"MPUB_PART: every reassembly slot of this source or node in use: retry" :
			"MPUB_PART: fragment inconsistent with its MPUB's others: MPUB dropped");
	}
}

void
sl_request_handle(struct sl_worker *w, struct sl_request *r, int forwarded)
{
	uint8_t op = r->hdr.opcode;
	const struct op_handler *h = op < SL_WIRE_OP_MAX ? &op_table[op] : NULL;
	struct sl_partition *p;
	struct target tg;
	union body b;
	int rc;

	if (h != NULL && (h->local != NULL || h->decode != NULL))
		w->st.ops[op]++;
	else
		w->st.ops_unknown++;
	if (h != NULL && h->local != NULL) {
		h->local(w, r);
		return;
	}
	/* a publish without a session (packet generators): executed every time it arrives,
	 * no retry detection */
	r->anon = r->hdr.session == 0 && h != NULL && h->publish && w->conf->anon_publish &&
		  op != SL_OP_MPUB_PART;	/* fragments are matched by (session, seq) */
	/* a session answers only to the address and port that opened it */
	r->sess = r->anon ? NULL :
			    sl_session_get_src(w->sessions, r->hdr.session, r->info.src_ip,
					       r->info.src_port, &r->slot, w->now_tsc);
	if (r->sess == NULL && !r->anon) {
		/* a session whose token was removed is refused as such until it expires */
		if (rcu_dereference(*w->auth) != NULL &&
		    sl_session_revoked(w->sessions, r->hdr.session, r->info.src_ip,
				       r->info.src_port))
			sl_request_reply_err(w, r, SL_E_AUTH, 0,
					     "the session's client token was removed");
		else
			sl_request_reply_err(w, r, SL_E_SESSION, 0, NULL);
		return;
	}
	/* MSG frames follow the session's next hop (its MAC can change under the session) */
	if (r->sess != NULL)
		sl_session_note_mac(r->sess, r->info.src_mac);
	if (h == NULL || h->decode == NULL) {
		sl_request_reply_err(w, r, SL_E_OPCODE, 0, NULL);
		return;
	}
	rc = h->decode(w, r, &b, &tg);
	if (rc != 0) {
		if (rc != ANSWERED)
			sl_request_reply_err(w, r, rc, 0, NULL);
		return;
	}
	/* the token's rights on the topic, before anything is looked up or executed */
	rc = session_rights(w, r, &tg);
	if (rc < 0 || ((uint32_t)rc & h->need) != h->need) {
		sl_request_reply_err(w, r, rc < 0 ? rc : -SL_E_DENIED, tg.partition,
			  rc < 0 ? "the session's client token was removed" : h->denied);
		return;
	}
	r->rights = (uint32_t)rc;
	p = target_partition(w, r, h, &tg, forwarded);
	if (p == NULL)
		return;
	if (r->hdr.opcode == SL_OP_SUB && !(r->rights & SL_AUTH_ADMIN) &&
	    sl_partition_sub_creates_durable(p, &b.sub)) {
		sl_request_reply_err(
			w, r, SL_E_DENIED, tg.partition,
			"creating a durable channel needs "
			"the admin right (join an existing one, or subscribe EPHEMERAL)");
		return;
	}
	if (op == SL_OP_MPUB_PART)
		mpart_step(w, r, h, p, &b, &tg);
	else
		execute(w, r, h, p, &b, &tg);
}
