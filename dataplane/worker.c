/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_log.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_prefetch.h>
#include <urcu-qsbr.h>

#include "err.h"
#include "wire.h"
#include "worker.h"

RTE_LOG_REGISTER_SUFFIX(sl_worker_logtype, worker, INFO);
#define WLOG(level, fmt, ...) \
	rte_log(RTE_LOG_##level, sl_worker_logtype, "worker: " fmt "\n", ##__VA_ARGS__)

volatile int sl_broker_quit;

#define DELIVER_BUDGET 64
#define EPHEMERAL_SUFFIX "#ephemeral"

/* ---- small helpers ---- */

static inline struct sl_pstate *
owned_state(struct sl_worker *w, struct sl_partition *p)
{
	return p->owner == w->idx ? p->state : NULL;
}

/* Send n frames of port index pi: on our own TX queue, or, when the port has fewer TX
 * queues than workers (software dispatch), through our SPSC ring to worker 0, which
 * transmits them. Frees and counts what cannot be sent. */
static void
tx_burst(struct sl_worker *w, uint16_t pi, struct rte_mbuf **pkts, uint16_t n)
{
	const struct sl_broker_port *port = &w->conf->ports[pi];
	uint16_t sent = 0, i;

	if (w->idx < port->ntxq) {
		/* a few retries absorb short bursts; after that the frames are dropped and
		 * the clients retransmit */
		for (i = 0; i < 4 && sent < n; i++)
			sent += rte_eth_tx_burst(port->port_id, w->idx, pkts + sent, n - sent);
		w->st.tx_pkts += sent;
	} else {
		for (i = 0; i < n; i++)
			pkts[i]->hash.usr = pi;
		sent = (uint16_t)rte_ring_sp_enqueue_burst(w->peers[0]->txin[w->idx],
							   (void **)pkts, n, NULL);
		w->st.tx_handoff += sent;
	}
	for (i = sent; i < n; i++) {
		rte_pktmbuf_free(pkts[i]);
		w->st.tx_drops++;
	}
}

static void
tx_enqueue(struct sl_worker *w, uint16_t pi, struct rte_mbuf *m)
{
	if (w->ntx[pi] == SL_WORKER_TXQ_MAX) {
		tx_burst(w, pi, w->tx[pi], w->ntx[pi]);
		w->ntx[pi] = 0;
	}
	w->tx[pi][w->ntx[pi]++] = m;
}

static void
tx_flush(struct sl_worker *w)
{
	uint16_t pi;

	for (pi = 0; pi < w->conf->nports; pi++) {
		if (w->ntx[pi] == 0)
			continue;
		tx_burst(w, pi, w->tx[pi], w->ntx[pi]);
		w->ntx[pi] = 0;
	}
}

static void
set_tx_offload(struct rte_mbuf *m, uint32_t tx_flags, uint16_t l3_len)
{
	m->ol_flags = 0;
	if (tx_flags & (SL_NET_TX_IP_CKSUM | SL_NET_TX_UDP_CKSUM)) {
		m->l2_len = 14;
		m->l3_len = l3_len;
		m->ol_flags |= RTE_MBUF_F_TX_IPV4;
		if (tx_flags & SL_NET_TX_IP_CKSUM)
			m->ol_flags |= RTE_MBUF_F_TX_IP_CKSUM;
		if (tx_flags & SL_NET_TX_UDP_CKSUM)
			m->ol_flags |= RTE_MBUF_F_TX_UDP_CKSUM;
	}
}

/* Request context while a frame is being handled. */
struct req {
	struct rte_mbuf *m;
	uint16_t pi;			/* port index */
	struct sl_net_info info;
	struct sl_wire_hdr hdr;
	const uint8_t *body;
	struct sl_session *sess;
	uint32_t slot;
};

/* Turn the request mbuf into a reply whose payload (plen bytes) is already written. */
static void
reply_send(struct sl_worker *w, struct req *r, int plen)
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
	set_tx_offload(r->m, port->tx_flags, r->info.l4_off - r->info.l3_off);
	tx_enqueue(w, r->pi, r->m);
}

static inline uint8_t *
reply_buf(struct req *r, size_t *cap)
{
	uint8_t *frame = rte_pktmbuf_mtod(r->m, uint8_t *);
	size_t room = rte_pktmbuf_data_room_size(r->m->pool) - r->m->data_off;

	*cap = room > r->info.payload_off ? room - r->info.payload_off : 0;
	if (*cap > SL_WIRE_DGRAM_MAX_JUMBO)
		*cap = SL_WIRE_DGRAM_MAX_JUMBO;
	return frame + r->info.payload_off;
}

static struct sl_wire_hdr
answer_hdr(const struct req *r)
{
	struct sl_wire_hdr h = {
		.version = SL_WIRE_VERSION,
		.session = r->hdr.session,
		.seq = r->hdr.seq,
		.cookie = r->hdr.cookie,
	};
	return h;
}

static void
reply_err(struct sl_worker *w, struct req *r, int code, uint16_t partition, const char *text)
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
reply_entry(struct sl_worker *w, struct req *r, const struct sl_idem_entry *e)
{
	struct sl_wire_hdr h = answer_hdr(r);
	struct sl_wire_ok ok;
	size_t cap;
	uint8_t *buf;

	if (e->code != 0) {
		reply_err(w, r, e->code, e->partition, NULL);
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

/* ---- channels ---- */

static int
chan_find(const struct sl_pstate *ps, const char *name, uint32_t len)
{
	uint32_t i;

	for (i = 0; i < ps->nchans; i++) {
		const char *n = sl_channel_name(ps->chans[i]);

		if (strlen(n) == len && memcmp(n, name, len) == 0)
			return (int)i;
	}
	return -1;
}

static int
chan_create(struct sl_worker *w, struct sl_pstate *ps, const char *name, uint32_t len,
	    int ordered, int ephemeral)
{
	const struct sl_broker_conf *c = w->conf;
	struct sl_channel_conf cc;
	char nbuf[SL_CHANNEL_NAME_MAX + 1];
	struct sl_channel *ch;
	size_t sl = strlen(EPHEMERAL_SUFFIX);

	if (ps->nchans >= SL_BROKER_MAX_CHANNELS)
		return -SL_E_LIMIT;
	if (sl_wire_check_name(name, len) != 0)
		return -SL_E_NAME;
	memcpy(nbuf, name, len);
	nbuf[len] = '\0';
	if (len > sl && memcmp(name + len - sl, EPHEMERAL_SUFFIX, sl) == 0)
		ephemeral = 1;
	memset(&cc, 0, sizeof(cc));
	cc.name = nbuf;
	cc.window = c->chan_window;
	cc.msg_timeout_ns = (uint64_t)c->msg_timeout_ms * 1000000ull;
	cc.max_req_delay_ns = (uint64_t)c->max_req_delay_ms * 1000000ull;
	cc.ordered = ordered;
	cc.ephemeral = ephemeral;
	/* a new channel starts at the oldest message the partition still holds */
	cc.start_id = sl_memlog_first_id(ps->log);
	ch = sl_channel_open(&cc);
	if (ch == NULL)
		return errno == EINVAL ? -SL_E_INVAL : -ENOMEM;
	ps->chans[ps->nchans] = ch;
	return (int)ps->nchans++;
}

static void
chan_remove(struct sl_pstate *ps, int ci)
{
	sl_channel_close(ps->chans[ci]);
	ps->chans[ci] = ps->chans[ps->nchans - 1];
	ps->chans[--ps->nchans] = NULL;
}

static void
chan_gc_ephemeral(struct sl_pstate *ps, int ci)
{
	if (sl_channel_is_ephemeral(ps->chans[ci]) && sl_channel_sub_count(ps->chans[ci]) == 0)
		chan_remove(ps, ci);
}

static int
chan_sub_of(const struct sl_channel *ch, uint64_t session)
{
	int i;

	for (i = 0; i < SL_CHANNEL_MAX_SUBS; i++) {
		const struct sl_channel_sub *s = sl_channel_sub_get(ch, i);

		if (s != NULL && s->session == session)
			return i;
	}
	return -1;
}

static uint64_t
pos_next_id(struct sl_pstate *ps, uint8_t kind, uint64_t value, int *err)
{
	uint64_t first = sl_memlog_first_id(ps->log), end = sl_memlog_end_id(ps->log), id;

	*err = 0;
	switch (kind) {
	case SL_OFF_OFFSET:
		if (sl_memlog_find_offset(ps->log, value, &id) != 0) {
			/* before the oldest retained message: start at the oldest */
			uint64_t first_off = 0;

			if (sl_memlog_offset_of(ps->log, first, &first_off) == 0 &&
			    value < first_off) {
				id = first;
				break;
			}
			*err = -SL_E_INVAL;
			return 0;
		}
		break;
	case SL_OFF_COUNT:
		id = value + 1;
		break;
	case SL_OFF_TIMESTAMP:
		id = sl_memlog_find_time(ps->log, value);
		break;
	case SL_OFF_END:
		id = end + 1;
		break;
	default:
		*err = -SL_E_INVAL;
		return 0;
	}
	if (id < first)
		id = first;
	if (id > end + 1)
		id = end + 1;
	return id;
}

/* ---- request handlers: return 0 with *e filled, or -SL_E_* ---- */

static uint16_t
pick_partition(const struct sl_topic *t, const struct sl_wire_hdr *h)
{
	/* deterministic, so a retry of the same request lands on the same partition */
	uint64_t x = h->session ^ (h->seq * 0x9E3779B97F4A7C15ull);

	x ^= x >> 29;
	return (uint16_t)(x % t->nparts);
}

static int
do_pub(struct sl_worker *w, struct sl_pstate *ps, const struct sl_wire_pub *p, int mpub,
       struct sl_idem_entry *e)
{
	struct sl_memlog_rec rec;
	uint64_t ts = w->wall_base_ns + w->now_ns;
	int rc;

	if (!mpub) {
		if (p->msg_len > w->conf->max_msg)
			return -SL_E_TOO_BIG;
		rc = sl_memlog_append(ps->log, p->msg, p->msg_len, ts, p->trace_id, &rec);
	} else {
		const void *datas[SL_WIRE_MPUB_MAX];
		uint32_t lens[SL_WIRE_MPUB_MAX], pos = 0, n = 0, len;
		const uint8_t *d;

		while (n < SL_WIRE_MPUB_MAX && sl_wire_mpub_next(p, &pos, &d, &len)) {
			if (len > w->conf->max_msg)
				return -SL_E_TOO_BIG;
			datas[n] = d;
			lens[n++] = len;
		}
		if (n != p->count)
			return -SL_E_PUB_ARG;
		rc = sl_memlog_append_batch(ps->log, n, datas, lens, ts, p->trace_id, &rec);
	}
	if (rc != 0) {
		if (rc == -SL_E_FULL)
			ps->full_errs++;
		return rc;
	}
	ps->pubs++;
	ps->msgs_in += p->count;
	ps->bytes_in += p->msg_len;
	w->st.pubs++;
	w->st.msgs_in += p->count;
	w->st.bytes_in += p->msg_len;
	e->count = p->count;
	e->id = rec.id;
	e->offset = rec.offset;
	e->aux = sl_memlog_end_id(ps->log);
	return 0;
}

static int
do_sub(struct sl_worker *w, struct req *r, struct sl_pstate *ps, const struct sl_wire_sub *s,
       struct sl_idem_entry *e)
{
	struct sl_channel *ch;
	uint64_t sub_id, off = 0;
	int ci, si, rc;

	ci = chan_find(ps, s->addr.channel, s->addr.channel_len);
	if (ci < 0) {
		ci = chan_create(w, ps, s->addr.channel, s->addr.channel_len,
				 !!(s->flags & SL_WIRE_SUB_ORDERED),
				 !!(s->flags & SL_WIRE_SUB_EPHEMERAL));
		if (ci < 0)
			return ci;
	}
	ch = ps->chans[ci];
	si = chan_sub_of(ch, r->sess->id);
	if (si >= 0) {
		sl_channel_sub_rdy(ch, si, s->rdy);
		sub_id = sl_channel_sub_get(ch, si)->sub_id;
	} else {
		sub_id = ((uint64_t)(w->idx + 1) << 48) | ++w->sub_counter;
		rc = sl_channel_sub_add(ch, r->sess->id, r->slot, sub_id, s->rdy);
		if (rc < 0) {
			chan_gc_ephemeral(ps, ci);
			return rc;
		}
	}
	sl_memlog_offset_of(ps->log, sl_channel_confirmed(ch), &off);
	e->id = sub_id;
	e->offset = off;
	e->aux = sl_memlog_end_id(ps->log);
	return 0;
}

static int
do_chan_op(struct sl_worker *w, struct req *r, struct sl_pstate *ps,
	   const struct sl_wire_chan_op *op, struct sl_idem_entry *e)
{
	struct sl_channel *ch;
	int ci, si, rc = 0;
	uint32_t i, ok = 0;

	ci = chan_find(ps, op->addr.channel, op->addr.channel_len);
	if (ci < 0)
		return -SL_E_CHANNEL;
	ch = ps->chans[ci];
	if (r->hdr.opcode == SL_OP_SET_OFFSET) {
		uint64_t id = pos_next_id(ps, op->kind, op->value, &rc);

		if (rc != 0)
			return rc;
		sl_channel_reset(ch, id);
		sl_memlog_offset_of(ps->log, id, &e->offset);
		e->id = id;
		e->aux = id - 1;
		return 0;
	}
	si = chan_sub_of(ch, r->sess->id);
	if (si < 0)
		return -SL_E_CHANNEL;
	switch (r->hdr.opcode) {
	case SL_OP_RDY:
		return sl_channel_sub_rdy(ch, si, op->count);
	case SL_OP_FIN:
		for (i = 0; i < op->count; i++)
			if (sl_channel_fin(ch, si, sl_wire_fin_id(op, i)) == 0)
				ok++;
		e->count = ok;
		return ok == 0 ? -SL_E_MSG_ID : 0;
	case SL_OP_REQ:
		e->id = op->msg_id;
		return sl_channel_req(ch, si, op->msg_id, (uint64_t)op->delay_ms * 1000000ull,
				      w->now_ns);
	case SL_OP_TOUCH:
		e->id = op->msg_id;
		return sl_channel_touch(ch, si, op->msg_id, w->now_ns);
	case SL_OP_CLS:
		sl_channel_sub_remove(ch, si, w->now_ns);
		chan_gc_ephemeral(ps, ci);
		return 0;
	default:
		return -SL_E_OPCODE;
	}
}

static void
handle_hello(struct sl_worker *w, struct req *r)
{
	struct sl_wire_hello h;
	struct sl_wire_welcome wel;
	struct sl_wire_hdr ah = answer_hdr(r);
	struct sl_session *s;
	size_t cap;
	uint8_t *buf;
	int rc = sl_wire_decode_hello(r->body, r->hdr.body_len, &h);

	if (rc != 0) {
		reply_err(w, r, rc, 0, NULL);
		return;
	}
	wel.window = w->conf->window;
	if (h.window != 0 && h.window < wel.window)
		wel.window = h.window;
	s = sl_session_create(w->sessions, r->info.src_ip, r->info.src_port, r->info.src_mac,
			      w->conf->ports[r->pi].port_id, wel.window, h.client_info,
			      w->now_tsc);
	if (s == NULL) {
		reply_err(w, r, SL_E_LIMIT, 0, "too many sessions");
		return;
	}
	w->st.sessions_created++;
	wel.session = s->id;
	wel.max_msg = w->conf->max_msg;
	wel.heartbeat_ms = w->conf->heartbeat_ms;
	wel.timeout_ms = w->conf->session_timeout_ms;
	ah.session = s->id;
	buf = reply_buf(r, &cap);
	reply_send(w, r, sl_wire_encode_welcome(buf, cap, &ah, &wel));
}

/* Forward a frame to the worker that owns its partition (SPSC ring from this worker to
 * the owner). Consumes r->m. */
static void
forward_to(struct sl_worker *w, struct req *r, uint16_t owner)
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

/* The answer code of an operation's result: 0, an SL_E_* code, or SL_E_INTERNAL. */
static uint16_t
answer_code(int rc)
{
	if (rc >= 0)
		return 0;
	return (uint16_t)(-rc > SL_E_BASE && -rc < SL_E_MAX ? -rc : SL_E_INTERNAL);
}

static void
handle_request(struct sl_worker *w, struct req *r, int forwarded)
{
	uint8_t op = r->hdr.opcode;
	struct sl_wire_pub pub;
	struct sl_wire_sub sub;
	struct sl_wire_chan_op cop;
	const struct sl_wire_addr *addr = NULL;
	const char *tname;
	uint32_t tlen;
	uint16_t partition;
	struct sl_topic *t;
	struct sl_pstate *ps;
	struct sl_idem *idem;
	const struct sl_idem_entry *hit;
	struct sl_idem_entry e;
	int rc, anon;

	w->st.ops[op & 15]++;
	if (op == SL_OP_HELLO) {
		handle_hello(w, r);
		return;
	}
	/* a publish without a session (packet generators): executed every time it arrives,
	 * no retry detection */
	anon = r->hdr.session == 0 && (op == SL_OP_PUB || op == SL_OP_MPUB) &&
	       w->conf->anon_publish;
	r->sess = anon ? NULL : sl_session_get(w->sessions, r->hdr.session, &r->slot, w->now_tsc);
	if (r->sess == NULL && !anon) {
		reply_err(w, r, SL_E_SESSION, 0, NULL);
		return;
	}
	memset(&e, 0, sizeof(e));
	e.opcode = op;
	switch (op) {
	case SL_OP_NOP:
		if (r->hdr.body_len != 0) {
			reply_err(w, r, SL_E_MALFORMED, 0, NULL);
			return;
		}
		reply_entry(w, r, &e);
		return;
	case SL_OP_PUB:
	case SL_OP_MPUB:
		rc = sl_wire_decode_pub(r->body, r->hdr.body_len, op == SL_OP_MPUB, &pub);
		if (rc != 0) {
			reply_err(w, r, rc, 0, NULL);
			return;
		}
		tname = pub.topic;
		tlen = pub.topic_len;
		partition = pub.partition;
		break;
	case SL_OP_SUB:
		rc = sl_wire_decode_sub(r->body, r->hdr.body_len, &sub);
		if (rc != 0) {
			reply_err(w, r, rc, 0, NULL);
			return;
		}
		addr = &sub.addr;
		tname = addr->topic;
		tlen = addr->topic_len;
		partition = addr->partition;
		break;
	default:
		rc = sl_wire_decode_chan_op(op, r->body, r->hdr.body_len, &cop);
		if (rc != 0) {
			reply_err(w, r, rc, 0, NULL);
			return;
		}
		addr = &cop.addr;
		if (op == SL_OP_CLS && addr->topic_len == 0) {
			sl_session_mark_closing(r->sess);
			reply_entry(w, r, &e);
			return;
		}
		tname = addr->topic;
		tlen = addr->topic_len;
		partition = addr->partition;
		break;
	}
	t = sl_coord_topic_find(w->coord, tname, tlen);
	if (t == NULL) {
		if ((op == SL_OP_PUB || op == SL_OP_MPUB) && w->conf->auto_create) {
			/* ask the control thread to create it; the client's retry finds it */
			char *name = NULL;

			if (rte_ring_count(w->autocreate) < 64) {
				name = rte_malloc(NULL, SL_COORD_NAME_MAX + 1, 0);
				if (name != NULL) {
					memcpy(name, tname, tlen);
					name[tlen] = '\0';
					if (rte_ring_mp_enqueue(w->autocreate, name) != 0)
						rte_free(name);
					else
						w->st.auto_create_req++;
				}
			}
			rte_pktmbuf_free(r->m);
			return;
		}
		reply_err(w, r, SL_E_TOPIC, partition, NULL);
		return;
	}
	if (partition == SL_WIRE_PART_ANY && (op == SL_OP_PUB || op == SL_OP_MPUB))
		partition = pick_partition(t, &r->hdr);
	if (partition >= t->nparts) {
		reply_err(w, r, SL_E_PARTITION, partition, NULL);
		return;
	}
	ps = owned_state(w, &t->parts[partition]);
	if (ps == NULL) {
		if (forwarded) {
			reply_err(w, r, SL_E_INTERNAL, partition, "partition owner moved");
			return;
		}
		forward_to(w, r, t->parts[partition].owner);
		return;
	}
	e.partition = partition;
	if (anon) {
		w->st.anon_pubs++;
		rc = do_pub(w, ps, &pub, op == SL_OP_MPUB, &e);
		e.code = answer_code(rc);
		reply_entry(w, r, &e);
		return;
	}
	idem = &w->idem[r->slot];
	if (idem->session != r->sess->id)
		sl_idem_bind(idem, r->sess->id);
	switch (sl_idem_check(idem, r->hdr.seq, &hit)) {
	case SL_IDEM_DUP:
		w->st.dups++;
		reply_entry(w, r, hit);
		return;
	case SL_IDEM_PENDING:
		rte_pktmbuf_free(r->m);
		return;
	case SL_IDEM_OLD:
		reply_err(w, r, SL_E_SEQ_OLD, partition, NULL);
		return;
	case SL_IDEM_NEW:
		break;
	}
	if (op == SL_OP_PUB || op == SL_OP_MPUB)
		rc = do_pub(w, ps, &pub, op == SL_OP_MPUB, &e);
	else if (op == SL_OP_SUB)
		rc = do_sub(w, r, ps, &sub, &e);
	else
		rc = do_chan_op(w, r, ps, &cop, &e);
	e.code = answer_code(rc);
	sl_idem_record(idem, r->hdr.seq, &e);
	reply_entry(w, r, &e);
}

static void
handle_udp(struct sl_worker *w, struct req *r, int forwarded)
{
	const uint8_t *payload = rte_pktmbuf_mtod(r->m, uint8_t *) + r->info.payload_off;
	int rc = sl_wire_decode_hdr(payload, r->info.payload_len, &r->hdr);

	if (rc != 0) {
		/* answer what is recognisably ours; drop the rest silently */
		if (r->info.payload_len >= SL_WIRE_HDR_LEN && payload[0] == 0x53 &&
		    payload[1] == 0x4C) {
			memset(&r->hdr, 0, sizeof(r->hdr));
			r->hdr.session = rte_be_to_cpu_64(*(const unaligned_uint64_t *)(payload + 8));
			r->hdr.seq = rte_be_to_cpu_64(*(const unaligned_uint64_t *)(payload + 16));
			r->hdr.cookie = rte_be_to_cpu_64(*(const unaligned_uint64_t *)(payload + 24));
			r->hdr.opcode = payload[3];
			reply_err(w, r, rc, 0, NULL);
			return;
		}
		w->st.drop_bad_magic++;
		rte_pktmbuf_free(r->m);
		return;
	}
	if (r->hdr.opcode >= SL_OP_OK) {
		w->st.drop_answer_op++;
		rte_pktmbuf_free(r->m);
		return;
	}
	r->body = payload + SL_WIRE_HDR_LEN;
	handle_request(w, r, forwarded);
}

static void
handle_frame(struct sl_worker *w, struct rte_mbuf *m, uint16_t pi, int forwarded)
{
	const struct sl_broker_port *port = &w->conf->ports[pi];
	uint8_t *frame = rte_pktmbuf_mtod(m, uint8_t *);
	uint32_t rx_flags = 0, len;
	struct req r;
	enum sl_net_kind k;

	if (m->nb_segs != 1) {
		w->st.drop_multiseg++;
		rte_pktmbuf_free(m);
		return;
	}
	if (port->rx_flags & SL_NET_RX_IP_CKSUM_GOOD &&
	    (m->ol_flags & RTE_MBUF_F_RX_IP_CKSUM_MASK) == RTE_MBUF_F_RX_IP_CKSUM_GOOD)
		rx_flags |= SL_NET_RX_IP_CKSUM_GOOD;
	if (port->rx_flags & SL_NET_RX_L4_CKSUM_GOOD &&
	    (m->ol_flags & RTE_MBUF_F_RX_L4_CKSUM_MASK) == RTE_MBUF_F_RX_L4_CKSUM_GOOD)
		rx_flags |= SL_NET_RX_L4_CKSUM_GOOD;
	r.m = m;
	r.pi = pi;
	k = sl_net_parse(frame, m->data_len, &port->nif, rx_flags, &r.info);
	switch (k) {
	case SL_NET_UDP:
		handle_udp(w, &r, forwarded);
		return;
	case SL_NET_ARP_REQUEST:
		len = sl_net_arp_reply(frame, &port->nif);
		m->data_len = (uint16_t)len;
		m->pkt_len = len;
		m->ol_flags = 0;
		w->st.arp_replies++;
		tx_enqueue(w, pi, m);
		return;
	case SL_NET_ICMP_ECHO:
		len = sl_net_icmp_reply(frame, m->data_len, &r.info, 0);
		m->data_len = (uint16_t)len;
		m->pkt_len = len;
		m->ol_flags = 0;
		w->st.icmp_replies++;
		tx_enqueue(w, pi, m);
		return;
	default:
		w->st.drops[k < SL_NET_KIND_MAX ? k : 0]++;
		rte_pktmbuf_free(m);
		return;
	}
}

/* ---- delivery ---- */

static int
deliver_one(struct sl_worker *w, struct sl_pstate *ps, struct sl_channel *ch,
	    const struct sl_channel_delivery *d)
{
	const struct sl_channel_sub *sub = sl_channel_sub_get(ch, d->sub);
	struct sl_session *s = sl_session_peek(w->sessions, sub->session_slot, sub->session);
	struct sl_memlog_rec rec;
	struct sl_wire_hdr h = {.version = SL_WIRE_VERSION};
	struct sl_wire_msg msg;
	struct rte_mbuf *m;
	uint16_t pi;
	uint8_t *frame;
	int n;

	if (s == NULL || s->closing) {
		/* subscriber's session is gone: its in-flight ids (this one too) requeue */
		sl_channel_sub_remove(ch, d->sub, w->now_ns);
		return 1;
	}
	if (sl_memlog_read(ps->log, d->id, &rec) != 0) {
		/* no longer held (position moved below the log start): skip it */
		sl_channel_fin(ch, d->sub, d->id);
		return 1;
	}
	for (pi = 0; pi < w->conf->nports; pi++)
		if (w->conf->ports[pi].port_id == s->port_id)
			break;
	if (pi == w->conf->nports)
		pi = 0;
	m = rte_pktmbuf_alloc(w->conf->pool);
	if (m == NULL) {
		sl_channel_unsend(ch, d);
		w->st.drop_no_mbuf++;
		return -1;
	}
	frame = rte_pktmbuf_mtod(m, uint8_t *);
	h.session = sub->session;
	h.cookie = sub->sub_id;
	msg.sub_id = sub->sub_id;
	msg.partition = ps->partid;
	msg.attempts = d->attempts;
	msg.len = rec.len;
	msg.msg_id = rec.id;
	msg.offset = rec.offset;
	msg.timestamp_ns = rec.timestamp_ns;
	msg.trace_id = rec.trace_id;
	msg.data = rec.data;
	n = sl_wire_encode_msg(frame + SL_NET_HDRS_LEN,
			       rte_pktmbuf_tailroom(m) - SL_NET_HDRS_LEN, &h, &msg);
	if (n < 0) {
		rte_pktmbuf_free(m);
		sl_channel_fin(ch, d->sub, d->id);
		return 1;
	}
	n = (int)sl_net_udp_build(frame, &w->conf->ports[pi].nif, s->mac, s->ip,
				  w->conf->ports[pi].nif.udp_port_lo, s->udp_port, (uint16_t)n,
				  w->conf->ports[pi].tx_flags);
	m->data_len = (uint16_t)n;
	m->pkt_len = (uint32_t)n;
	set_tx_offload(m, w->conf->ports[pi].tx_flags, 20);
	tx_enqueue(w, pi, m);
	w->st.deliveries++;
	ps->deliveries++;
	return 0;
}

static uint32_t
deliver(struct sl_worker *w)
{
	uint32_t i, c, done = 0;

	for (i = 0; i < w->nparts; i++) {
		struct sl_pstate *ps = w->parts[i];
		uint64_t end = sl_memlog_end_id(ps->log);

		for (c = 0; c < ps->nchans; c++) {
			struct sl_channel *ch = ps->chans[c];
			struct sl_channel_delivery d;
			uint32_t budget = DELIVER_BUDGET;

			if (sl_channel_sub_count(ch) == 0)
				continue;
			while (budget-- && sl_channel_next(ch, end, w->now_ns, &d)) {
				int rc = deliver_one(w, ps, ch, &d);

				if (rc < 0)
					break;
				done++;
			}
		}
	}
	return done;
}

/* Once per tick: timeouts, ephemeral channels whose subscribers vanished, trimming. */
static void
tick(struct sl_worker *w)
{
	uint32_t i;
	int c;

	for (i = 0; i < w->nparts; i++) {
		struct sl_pstate *ps = w->parts[i];
		uint64_t min = UINT64_MAX;

		for (c = (int)ps->nchans - 1; c >= 0; c--) {
			struct sl_channel *ch = ps->chans[c];
			int s;

			sl_channel_expire(ch, w->now_ns);
			for (s = 0; s < SL_CHANNEL_MAX_SUBS; s++) {
				const struct sl_channel_sub *sub = sl_channel_sub_get(ch, s);

				const struct sl_session *ss;

				if (sub == NULL)
					continue;
				ss = sl_session_peek(w->sessions, sub->session_slot, sub->session);
				if (ss == NULL || ss->closing)
					sl_channel_sub_remove(ch, s, w->now_ns);
			}
			if (sl_channel_is_ephemeral(ch) && sl_channel_sub_count(ch) == 0) {
				chan_remove(ps, c);
				continue;
			}
			if (sl_channel_confirmed(ch) < min)
				min = sl_channel_confirmed(ch);
		}
		/* messages every channel confirmed are released; with no channel at all the
		 * log keeps everything (and fills up) so that no message is ever dropped */
		if (ps->nchans > 0 && min != UINT64_MAX && min > ps->trimmed_to) {
			sl_memlog_trim(ps->log, min);
			ps->trimmed_to = min;
		}
	}
}

/* ---- commands from the control thread ---- */

static void
fill_part_info(struct sl_worker *w, struct sl_pstate *ps, struct sl_part_info *info)
{
	uint32_t c;

	memset(info, 0, sizeof(*info));
	info->owner = w->idx;
	info->first_id = sl_memlog_first_id(ps->log);
	info->end_id = sl_memlog_end_id(ps->log);
	info->end_offset = sl_memlog_end_offset(ps->log);
	info->log_used = sl_memlog_used(ps->log);
	info->log_capacity = sl_memlog_capacity(ps->log);
	info->pubs = ps->pubs;
	info->msgs_in = ps->msgs_in;
	info->bytes_in = ps->bytes_in;
	info->full_errs = ps->full_errs;
	info->deliveries = ps->deliveries;
	info->nchans = ps->nchans;
	for (c = 0; c < ps->nchans; c++) {
		struct sl_channel *ch = ps->chans[c];
		struct sl_chan_info *ci = &info->chans[c];

		snprintf(ci->name, sizeof(ci->name), "%s", sl_channel_name(ch));
		ci->ordered = (uint8_t)sl_channel_is_ordered(ch);
		ci->ephemeral = (uint8_t)sl_channel_is_ephemeral(ch);
		ci->nsubs = sl_channel_sub_count(ch);
		ci->confirmed_id = sl_channel_confirmed(ch);
		ci->cursor_id = sl_channel_cursor(ch);
		sl_memlog_offset_of(ps->log, ci->confirmed_id, &ci->confirmed_offset);
		ci->depth = info->end_id + 1 > ci->confirmed_id ? info->end_id + 1 -
								      ci->confirmed_id : 0;
		sl_channel_get_stats(ch, &ci->st);
	}
}

static int
exec_cmd(struct sl_worker *w, struct sl_wcmd *cmd)
{
	struct sl_pstate *ps = cmd->ps;
	uint32_t i;
	int ci;

	switch (cmd->op) {
	case SL_WCMD_ATTACH:
		if (w->nparts >= SL_WORKER_MAX_PARTS)
			return -SL_E_LIMIT;
		w->parts[w->nparts++] = ps;
		return 0;
	case SL_WCMD_DETACH:
		for (i = 0; i < w->nparts; i++) {
			if (w->parts[i] != ps)
				continue;
			w->parts[i] = w->parts[--w->nparts];
			while (ps->nchans > 0)
				chan_remove(ps, (int)ps->nchans - 1);
			return 0;
		}
		return -ENOENT;
	case SL_WCMD_CHAN_CREATE:
		if (chan_find(ps, cmd->chan, (uint32_t)strlen(cmd->chan)) >= 0)
			return -SL_E_EXISTS;
		ci = chan_create(w, ps, cmd->chan, (uint32_t)strlen(cmd->chan), cmd->ordered, 0);
		return ci < 0 ? ci : 0;
	case SL_WCMD_CHAN_DELETE:
		ci = chan_find(ps, cmd->chan, (uint32_t)strlen(cmd->chan));
		if (ci < 0)
			return -SL_E_CHANNEL;
		chan_remove(ps, ci);
		return 0;
	case SL_WCMD_CHAN_RESET: {
		int rc;
		uint64_t id;

		ci = chan_find(ps, cmd->chan, (uint32_t)strlen(cmd->chan));
		if (ci < 0)
			return -SL_E_CHANNEL;
		id = pos_next_id(ps, cmd->kind, cmd->value, &rc);
		if (rc != 0)
			return rc;
		sl_channel_reset(ps->chans[ci], id);
		cmd->out_id = id;
		return 0;
	}
	case SL_WCMD_PART_INFO:
		fill_part_info(w, ps, cmd->info);
		return 0;
	}
	return -EINVAL;
}

static uint32_t
poll_cmds(struct sl_worker *w)
{
	void *obj;
	uint32_t n = 0;

	while (rte_ring_sc_dequeue(w->cmd, &obj) == 0) {
		struct sl_wcmd *cmd = obj;

		cmd->result = exec_cmd(w, cmd);
		__atomic_store_n(&cmd->done, 1, __ATOMIC_RELEASE);
		n++;
	}
	return n;
}

/* ---- the loop ---- */

static inline void
clock_update(struct sl_worker *w)
{
	w->now_tsc = rte_get_tsc_cycles();
	w->now_ns = (uint64_t)((double)(w->now_tsc - w->tsc_base) * w->ns_per_tsc);
}

static uint32_t
poll_forwarded(struct sl_worker *w)
{
	struct rte_mbuf *pkts[SL_WORKER_BURST];
	uint32_t total = 0;
	uint16_t src, i, n;

	for (src = 0; src < w->conf->nworkers; src++) {
		if (w->in[src] == NULL)
			continue;
		n = (uint16_t)rte_ring_sc_dequeue_burst(w->in[src], (void **)pkts,
							 SL_WORKER_BURST, NULL);
		for (i = 0; i < n; i++)
			handle_frame(w, pkts[i], (uint16_t)pkts[i]->hash.usr, 1);
		w->st.fwd_in += n;
		total += n;
	}
	return total;
}

/* Worker 0: transmit the frames the other workers handed over (port index in hash.usr). */
static uint32_t
poll_tx_handoff(struct sl_worker *w)
{
	struct rte_mbuf *pkts[SL_WORKER_BURST];
	uint32_t total = 0;
	uint16_t src, i, n;

	for (src = 1; src < w->conf->nworkers; src++) {
		if (w->txin[src] == NULL)
			continue;
		n = (uint16_t)rte_ring_sc_dequeue_burst(w->txin[src], (void **)pkts,
							 SL_WORKER_BURST, NULL);
		for (i = 0; i < n; i++)
			tx_enqueue(w, (uint16_t)pkts[i]->hash.usr, pkts[i]);
		total += n;
	}
	return total;
}

static uint32_t
poll_rx(struct sl_worker *w)
{
	struct rte_mbuf *pkts[SL_WORKER_BURST];
	uint32_t total = 0;
	uint16_t pi, i, n;

	for (pi = 0; pi < w->conf->nports; pi++) {
		const struct sl_broker_port *port = &w->conf->ports[pi];

		if (w->idx >= port->nrxq)
			continue;
		n = rte_eth_rx_burst(port->port_id, w->idx, pkts, SL_WORKER_BURST);
		w->st.rx_pkts += n;
		for (i = 0; i < n; i++) {
			if (i + 1 < n)
				rte_prefetch0(rte_pktmbuf_mtod(pkts[i + 1], void *));
			handle_frame(w, pkts[i], pi, 0);
		}
		total += n;
	}
	return total;
}

int
sl_worker_main(void *arg)
{
	struct sl_worker *w = arg;
	uint64_t hz = rte_get_tsc_hz();
	uint32_t empty = 0, sleep_us = 0;
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	w->tsc_base = rte_get_tsc_cycles();
	w->wall_base_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	w->ns_per_tsc = 1e9 / (double)hz;
	w->tick_tsc = hz / 1000;
	rcu_register_thread();
	WLOG(INFO, "worker %u running on lcore %u", w->idx, w->lcore);
	while (!__atomic_load_n(&sl_broker_quit, __ATOMIC_RELAXED)) {
		uint64_t start = rte_get_tsc_cycles();
		uint32_t work;

		clock_update(w);
		work = poll_cmds(w);
		work += poll_forwarded(w);
		if (w->idx == 0)
			work += poll_tx_handoff(w);
		work += poll_rx(w);
		work += deliver(w);
		if (w->now_tsc >= w->next_tick_tsc) {
			tick(w);
			w->next_tick_tsc = w->now_tsc + w->tick_tsc;
		}
		tx_flush(w);
		rcu_quiescent_state();
		if (work > 0) {
			uint64_t end = rte_get_tsc_cycles();

			w->st.busy_cycles += end - start;
			w->st.total_cycles += end - start;
			empty = 0;
			sleep_us = 0;
			continue;
		}
		w->st.total_cycles += rte_get_tsc_cycles() - start;
		if (w->conf->idle != SL_IDLE_ADAPTIVE || ++empty < w->conf->idle_polls)
			continue;
		/* idle: go offline so grace periods do not wait for us, sleep, back off */
		sleep_us = sleep_us ? RTE_MIN(sleep_us * 2, w->conf->idle_max_us) : 10;
		rcu_thread_offline();
		rte_delay_us_sleep(sleep_us);
		rcu_thread_online();
		w->st.idle_sleeps++;
	}
	rcu_unregister_thread();
	WLOG(INFO, "worker %u stopped", w->idx);
	return 0;
}

/* ---- partition state ---- */

struct sl_pstate *
sl_worker_pstate_create(const struct sl_broker_conf *conf, uint16_t partid, uint16_t owner)
{
	struct sl_pstate *ps = rte_zmalloc_socket("sl_pstate", sizeof(*ps), RTE_CACHE_LINE_SIZE,
						  conf->socket_id);
	struct sl_memlog_conf mc;

	if (ps == NULL)
		goto fail;
	ps->partid = partid;
	ps->owner = owner;
	ps->log_mem = rte_malloc_socket("sl_memlog", conf->log_bytes, 64, conf->socket_id);
	if (ps->log_mem == NULL)
		goto fail;
	memset(&mc, 0, sizeof(mc));
	mc.mem = ps->log_mem;
	mc.mem_len = conf->log_bytes;
	mc.avg_msg_hint = 64;
	ps->log = sl_memlog_open(&mc);
	if (ps->log == NULL)
		goto fail;
	return ps;
fail:
	sl_worker_pstate_free(ps);
	rte_errno = ENOMEM;
	return NULL;
}

void
sl_worker_pstate_free(struct sl_pstate *ps)
{
	uint32_t c;

	if (ps == NULL)
		return;
	for (c = 0; c < ps->nchans; c++)
		sl_channel_close(ps->chans[c]);
	sl_memlog_close(ps->log);
	rte_free(ps->log_mem);
	rte_free(ps);
}
