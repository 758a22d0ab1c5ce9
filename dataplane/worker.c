/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/prctl.h>

#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_log.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_prefetch.h>
#include <urcu-qsbr.h>

#include "err.h"
#include "rlink.h"
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
chan_open(const struct sl_broker_conf *c, struct sl_pstate *ps, const char *name, uint32_t len,
	  int ordered, int ephemeral, uint64_t start_id)
{
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
	/* a new channel starts at the oldest message the partition still holds in memory */
	cc.start_id = start_id != 0 ? start_id : sl_memlog_first_id(ps->log);
	ch = sl_channel_open(&cc);
	if (ch == NULL)
		return errno == EINVAL ? -SL_E_INVAL : -ENOMEM;
	ps->pslot[ps->nchans] = UINT8_MAX;
	if (ps->store != NULL && !ephemeral && ps->pslots_used != UINT32_MAX) {
		uint8_t slot = (uint8_t)__builtin_ctz(~ps->pslots_used);

		ps->pslots_used |= 1u << slot;
		ps->pslot[ps->nchans] = slot;
		sl_pstore_chan_set(ps->store, slot, nbuf, ordered, cc.start_id);
	}
	ps->chans[ps->nchans] = ch;
	return (int)ps->nchans++;
}

static int
chan_create(struct sl_worker *w, struct sl_pstate *ps, const char *name, uint32_t len,
	    int ordered, int ephemeral)
{
	return chan_open(w->conf, ps, name, len, ordered, ephemeral, 0);
}

static void
chan_remove(struct sl_pstate *ps, int ci)
{
	uint8_t slot = ps->pslot[ci];

	if (slot != UINT8_MAX) {
		sl_pstore_chan_clear(ps->store, slot);
		ps->pslots_used &= ~(1u << slot);
	}
	sl_channel_close(ps->chans[ci]);
	ps->chans[ci] = ps->chans[ps->nchans - 1];
	ps->pslot[ci] = ps->pslot[ps->nchans - 1];
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
	/* with a disk log, positions reach back to what the disk retains (read back by
	 * the disk reader); offsets and times older than memory are looked up on disk by
	 * the control socket's reset-offset */
	if (ps->store != NULL)
		first = RTE_MIN(first, __atomic_load_n(&ps->store->disk_first_id,
						       __ATOMIC_ACQUIRE));
	switch (kind) {
	case SL_OFF_OFFSET:
		if (sl_memlog_find_offset(ps->log, value, &id) != 0) {
			/* before the oldest retained message: start at the oldest */
			uint64_t first_off = 0;

			if (sl_memlog_offset_of(ps->log, sl_memlog_first_id(ps->log),
						&first_off) == 0 &&
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

/* The epoch a commit record written now carries: replication's write epoch, else the
 * view's. RCU read side. */
static uint64_t
write_epoch(const struct sl_pstate *ps)
{
	return ps->repl != NULL ? sl_repl_epoch(ps->repl) : rcu_dereference(ps->part->meta)->epoch;
}

/* ---- publishes waiting for the disk ---- */

/* Keep a request in pd (to answer later). */
static void
pend_hold(struct sl_pend *pd, struct req *r, const struct sl_idem_entry *e, int anon)
{
	if (r->hdr.flags & SL_WIRE_F_NOACK) {
		rte_pktmbuf_free(r->m);
		pd->m = NULL;
	} else {
		pd->m = r->m;
	}
	pd->slot = r->slot;
	pd->pi = r->pi;
	pd->anon = (uint8_t)anon;
	pd->info = r->info;
	pd->hdr = r->hdr;
	pd->e = *e;
	pd->e.pending = 0;
	pd->e.seq = r->hdr.seq;	/* the answer replaces the pending entry of this seq */
}

/* Keep a committed publish of a disk-durability partition until it is durable. Room was
 * checked in do_pub. */
static void
pend_push(struct sl_worker *w, struct sl_pstate *ps, struct req *r,
	  const struct sl_idem_entry *e, int anon)
{
	struct sl_pend *pd = &ps->pend[ps->pend_tail++ & (SL_WORKER_PEND - 1)];

	pend_hold(pd, r, e, anon);
	pd->last_id = e->id + e->count - 1;
}

/* Answer a held request with code and its recorded entry; records the answer in the
 * session's idempotency window. */
static void
pend_answer(struct sl_worker *w, struct sl_pend *pd, uint16_t code)
{
	struct req r;

	pd->e.code = code;
	if (!pd->anon) {
		struct sl_idem *idem = &w->idem[pd->slot];
		struct sl_idem_entry *slot = &idem->e[pd->hdr.seq % SL_IDEM_WINDOW];

		/* the session may have expired and its slot been reused meanwhile */
		if (idem->session == pd->hdr.session && slot->seq == pd->hdr.seq)
			*slot = pd->e;
	}
	if (pd->m == NULL)
		return;
	memset(&r, 0, sizeof(r));
	r.m = pd->m;
	r.pi = pd->pi;
	r.info = pd->info;
	r.hdr = pd->hdr;
	pd->m = NULL;
	reply_entry(w, &r, &pd->e);
}

/* Answer the oldest waiting publish with code (0: it is durable). */
static void
pend_pop(struct sl_worker *w, struct sl_pstate *ps, uint16_t code)
{
	pend_answer(w, &ps->pend[ps->pend_head++ & (SL_WORKER_PEND - 1)], code);
}

/*
 * A client's SET_OFFSET by offset or time older than memory holds: look it up on disk
 * through the reader (one at a time per partition). Returns SETOFF_DEFERRED (the request
 * is held and answered by setoff_done) or -SL_E_FULL when a lookup is running.
 */
#define SETOFF_DEFERRED 1

static int
on_disk(struct sl_pstate *ps, uint8_t kind, uint64_t value)
{
	uint64_t first = sl_memlog_first_id(ps->log), off;
	struct sl_memlog_rec rec;

	if (ps->store == NULL ||
	    __atomic_load_n(&ps->store->disk_first_id, __ATOMIC_ACQUIRE) >= first)
		return 0;
	if (kind == SL_OFF_OFFSET)
		return sl_memlog_offset_of(ps->log, first, &off) == 0 && value < off;
	if (kind == SL_OFF_TIMESTAMP)
		return sl_memlog_read(ps->log, first, &rec) != 0 || value < rec.timestamp_ns;
	return 0;
}

static int
setoff_defer(struct sl_worker *w, struct sl_pstate *ps, struct req *r,
	     const struct sl_wire_chan_op *op, const struct sl_idem_entry *e)
{
	if (ps->setoff_busy)
		return -SL_E_FULL;
	ps->find.ps = ps->store;
	ps->find.kind = op->kind == SL_OFF_OFFSET ? SL_DISKLOG_BY_OFFSET : SL_DISKLOG_BY_TIME;
	ps->find.value = op->value;
	if (sl_persist_find_post(w->persist, &ps->find) != 0)
		return -SL_E_FULL;
	memcpy(ps->setoff_chan, op->addr.channel, op->addr.channel_len);
	ps->setoff_chan[op->addr.channel_len] = '\0';
	pend_hold(&ps->setoff, r, e, 0);
	ps->setoff_busy = 1;
	return SETOFF_DEFERRED;
}

/* The disk lookup of a held SET_OFFSET is done: apply it and answer. */
static void
setoff_done(struct sl_worker *w, struct sl_pstate *ps)
{
	struct sl_pend *pd = &ps->setoff;
	uint64_t id = ps->find.id, end = sl_memlog_end_id(ps->log);
	uint16_t code = 0;
	int ci;

	ps->setoff_busy = 0;
	ps->find.state = SL_PFETCH_IDLE;
	ci = chan_find(ps, ps->setoff_chan, (uint32_t)strlen(ps->setoff_chan));
	if (ps->find.rc != 0 && ps->find.rc != -ENOENT)
		code = ps->find.rc == -EINVAL ? SL_E_INVAL : SL_E_IO;
	else if (ci < 0)
		code = SL_E_CHANNEL;
	if (code == 0) {
		/* -ENOENT: older than the disk holds; id is its oldest message */
		id = RTE_MIN(id, end + 1);
		sl_channel_reset(ps->chans[ci], id);
		pd->e.id = id;
		pd->e.aux = id - 1;
		if (sl_memlog_offset_of(ps->log, id, &pd->e.offset) != 0)
			pd->e.offset = ps->find.rc == 0 && ps->find.kind == SL_DISKLOG_BY_OFFSET ?
					       ps->find.value : 0;
	}
	pend_answer(w, pd, code);
}

/* How far publishes may be answered and consumers see: durable (disk durability) and
 * committed by the ISR (replication). */
static inline uint64_t
ack_end(const struct sl_pstate *ps)
{
	uint64_t end = UINT64_MAX;

	if (ps->disk)
		end = __atomic_load_n(&ps->store->durable_id, __ATOMIC_ACQUIRE);
	if (ps->repl != NULL)
		end = RTE_MIN(end, ps->committed);
	return end;
}

/* Answer the publishes that became durable and committed. */
static uint32_t
acks_poll(struct sl_worker *w, struct sl_pstate *ps)
{
	uint32_t done = 0;
	uint64_t end;

	if (ps->pend == NULL || ps->pend_head == ps->pend_tail)
		return 0;
	end = ack_end(ps);
	while (ps->pend_head != ps->pend_tail &&
	       ps->pend[ps->pend_head & (SL_WORKER_PEND - 1)].last_id <= end) {
		pend_pop(w, ps, 0);
		done++;
	}
	return done;
}

/* Handle a store error and its resume; answer a client's SET_OFFSET found on disk. */
static uint32_t
storage_poll(struct sl_worker *w, struct sl_pstate *ps)
{
	struct sl_pstore *st = ps->store;
	uint32_t done = 0;
	uint64_t durable;
	int err;

	if (st == NULL)
		return 0;
	if (ps->setoff_busy &&
	    __atomic_load_n(&ps->find.state, __ATOMIC_ACQUIRE) == SL_PFETCH_READY) {
		setoff_done(w, ps);
		done++;
	}
	durable = __atomic_load_n(&st->durable_id, __ATOMIC_ACQUIRE);
	err = __atomic_load_n(&st->error, __ATOMIC_ACQUIRE);
	if (err != 0 && !ps->store_err) {
		/* nothing that is not durable is acknowledged: fail what waits and,
		 * for disk durability, forget it (consumers never saw it) */
		while (ps->pend_head != ps->pend_tail) {
			pend_pop(w, ps, SL_E_IO);
			ps->io_errs++;
		}
		if (ps->disk)
			sl_memlog_truncate(ps->log, durable + 1);
		ps->store_err = 1;
		__atomic_store_n(&st->err_ack, ps->store_gen, __ATOMIC_RELEASE);
		done++;
	} else if (err == 0 && ps->store_err &&
		   __atomic_load_n(&st->gen, __ATOMIC_ACQUIRE) != ps->store_gen) {
		/* resumed: the files end at `durable`; hand over again what memory
		 * holds beyond it (memory durability: acknowledged already) */
		uint64_t id = durable + 1, end = sl_memlog_end_id(ps->log), off;

		ps->store_gen = __atomic_load_n(&st->gen, __ATOMIC_ACQUIRE);
		ps->store_err = 0;
		while (id <= end && sl_memlog_offset_of(ps->log, id, &off) == 0) {
			uint32_t n = (uint32_t)RTE_MIN(end - id + 1, 64u);

			if (sl_persist_submit(w->persist, w->idx, st, id, n, off,
					      write_epoch(ps)) != 0)
				break;	/* ring full: rare; the rest waits for a
					 * later resume */
			id += n;
		}
		done++;
	}
	return done;
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
repl_write(struct sl_worker *w, struct sl_pstate *ps, const struct sl_memlog_rec *first,
	   uint32_t n);

/* The leader write path's first step (PutMessageToCluster): refuse unless this node
 * leads the partition, writes are enabled and the ISR is a majority of the replicas.
 * RCU read side (the worker is a QSBR reader between quiescent states). */
static int
write_allowed(const struct sl_worker *w, const struct sl_pstate *ps)
{
	const struct sl_part_meta *m = rcu_dereference(ps->part->meta);

	if (m->leader != sl_coord_node_id(w->coord))
		return -SL_E_NOT_LEADER;
	if (m->writes_disabled)
		return -SL_E_WRITE_DISABLED;
	if (m->nisr <= m->nreplicas / 2)
		return -SL_E_QUORUM;
	/* the replica transport is not wired into the dataplane yet: an ISR member other
	 * than this node could not acknowledge, so nothing may be acknowledged for it */
	if (m->nisr > 1)
		return -SL_E_QUORUM;
	return 0;
}

static int
do_pub(struct sl_worker *w, struct sl_pstate *ps, const struct sl_wire_pub *p, int mpub,
       struct sl_idem_entry *e)
{
	struct sl_memlog_rec rec;
	uint64_t ts = w->wall_base_ns + w->now_ns;
	int rc;

	rc = ps->repl != NULL ? sl_repl_can_write(ps->repl) : write_allowed(w, ps);
	if (rc != 0)
		return rc;
	if (ps->repl != NULL && ps->pend_tail - ps->pend_head >= SL_WORKER_PEND) {
		ps->full_errs++;
		return -SL_E_FULL;
	}
	if (ps->store != NULL) {
		/* a failed store takes no more writes until an operator resumes it */
		if (ps->store_err || __atomic_load_n(&ps->store->error, __ATOMIC_ACQUIRE)) {
			ps->io_errs++;
			return -SL_E_IO;
		}
		/* room to hand it over (and to wait for the disk): else retry later */
		if (sl_persist_room(w->persist, w->idx) == 0 ||
		    (ps->disk && ps->pend_tail - ps->pend_head >= SL_WORKER_PEND)) {
			ps->full_errs++;
			return -SL_E_FULL;
		}
	}
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
	if (ps->repl != NULL) {
		rc = repl_write(w, ps, &rec, p->count);
		if (rc != 0) {
			sl_memlog_truncate(ps->log, rec.id);
			return rc;
		}
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
	if (ps->store != NULL)
		sl_persist_submit(w->persist, w->idx, ps->store, rec.id, p->count, rec.offset,
				  write_epoch(ps));
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

/*
 * A channel position moved on the leader (FIN, SET_OFFSET): sync it to the ISR. An
 * ordered channel's FIN and a SET_OFFSET count only once every ISR member has it: the
 * client's request r is held and answered by r_chan_done (SETOFF_DEFERRED), or the
 * position is rolled back to prev and the error returned. An unordered channel's FIN is a
 * notify; ephemeral channels are never synced; without r (control socket) nobody waits.
 * Returns 0, SETOFF_DEFERRED or a negative SL_E_*. Owner lcore.
 */
static int
chan_replicate(struct sl_worker *w, struct sl_pstate *ps, struct sl_channel *ch, uint64_t prev,
	       int set_offset, struct req *r, const struct sl_idem_entry *e)
{
	struct sl_chanwait *cw;
	uint64_t token;
	int rc;

	if (ps->repl == NULL || sl_channel_is_ephemeral(ch) ||
	    (sl_channel_confirmed(ch) == prev && !set_offset))
		return 0;
	if (r == NULL || (!set_offset && !sl_channel_is_ordered(ch))) {
		sl_repl_chan_sync(ps->repl, sl_channel_name(ch), sl_channel_confirmed(ch), prev,
				  sl_channel_is_ordered(ch), set_offset, 0, w->now_ns);
		return 0;
	}
	token = ++ps->chan_token;
	cw = &ps->chanwait[token & (SL_WORKER_CHANWAIT - 1)];
	if (cw->used) {
		rc = -SL_E_FULL;
		goto rollback;
	}
	cw->used = 1;
	cw->held = 0;
	cw->done = 0;
	cw->token = token;
	cw->prev = prev;
	snprintf(cw->chan, sizeof(cw->chan), "%s", sl_channel_name(ch));
	rc = sl_repl_chan_sync(ps->repl, cw->chan, sl_channel_confirmed(ch), prev,
			       sl_channel_is_ordered(ch), set_offset, token, w->now_ns);
	if (rc == 0 && cw->done)
		rc = cw->err;	/* settled at once (an ISR of this node alone) */
	if (rc != 0 || cw->done) {
		cw->used = 0;
		if (rc != 0)
			goto rollback;
		return 0;
	}
	pend_hold(&cw->req, r, e, 0);
	cw->held = 1;
	return SETOFF_DEFERRED;
rollback:
	sl_channel_reset(ch, prev);
	return rc;
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
		uint64_t id;

		if (on_disk(ps, op->kind, op->value))
			return setoff_defer(w, ps, r, op, e);
		uint64_t prev = sl_channel_confirmed(ch);

		id = pos_next_id(ps, op->kind, op->value, &rc);
		if (rc != 0)
			return rc;
		sl_channel_reset(ch, id);
		sl_memlog_offset_of(ps->log, id, &e->offset);
		e->id = id;
		e->aux = id - 1;
		return chan_replicate(w, ps, ch, prev, 1, r, e);
	}
	si = chan_sub_of(ch, r->sess->id);
	if (si < 0)
		return -SL_E_CHANNEL;
	switch (r->hdr.opcode) {
	case SL_OP_RDY:
		return sl_channel_sub_rdy(ch, si, op->count);
	case SL_OP_FIN: {
		uint64_t prev = sl_channel_confirmed(ch);

		for (i = 0; i < op->count; i++)
			if (sl_channel_fin(ch, si, sl_wire_fin_id(op, i)) == 0)
				ok++;
		e->count = ok;
		if (ok == 0)
			return -SL_E_MSG_ID;
		return chan_replicate(w, ps, ch, prev, 0, r, e);
	}
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

/* ---- replication: the partition's side of replication/repl.h ---- */

#define ARP_RETRY_MS 100
#define RBUF_LEN (SL_REPL_MAX_DGRAM + 256)

static const struct sl_broker_node *
node_of(const struct sl_worker *w, uint32_t id)
{
	uint32_t i;

	for (i = 0; i < w->conf->nnodes; i++)
		if (w->conf->nodes[i].id == id)
			return &w->conf->nodes[i];
	return NULL;
}

/* An ARP request for peer n, at most one per ARP_RETRY_MS. */
static void
arp_ask(struct sl_worker *w, const struct sl_broker_node *n)
{
	struct rte_mbuf *m;
	uint32_t flen;

	if (w->now_tsc - w->arp_asked_tsc[n - w->conf->nodes] < w->tick_tsc * ARP_RETRY_MS)
		return;
	w->arp_asked_tsc[n - w->conf->nodes] = w->now_tsc;
	m = rte_pktmbuf_alloc(w->conf->pool);
	if (m == NULL)
		return;
	flen = sl_net_arp_request(rte_pktmbuf_mtod(m, uint8_t *), &w->conf->ports[n->pi].nif,
				  n->ip);
	m->data_len = (uint16_t)flen;
	m->pkt_len = flen;
	tx_enqueue(w, n->pi, m);
}

/* Once per tick: resolve the peers before replication needs them, so the first write
 * does not wait for ARP (and a member's lag timer does not run out meanwhile). */
static void
arp_peers(struct sl_worker *w)
{
	const struct sl_broker_node *n;
	uint8_t mac[6];
	uint32_t i;

	if (w->nparts == 0 || w->conf->repl_port == 0)
		return;
	for (i = 0; i < w->conf->nnodes; i++) {
		n = &w->conf->nodes[i];
		if (n->id != w->conf->node_id && sl_net_arp_lookup(w->arp[n->pi], n->ip, mac) != 0)
			arp_ask(w, n);
	}
}

/* A replica datagram to node `to`, in an rlink envelope, from the port routed to it
 * (sl_broker_node.pi). Dropped (and the peer's MAC asked for) while the neighbour is
 * unknown: replication retransmits. */
static void
r_send(void *arg, uint32_t to, const void *buf, uint32_t len)
{
	struct sl_pstate *ps = arg;
	struct sl_worker *w = ps->w;
	const struct sl_broker_node *n = node_of(w, to);
	const struct sl_broker_port *port;
	const struct sl_topic *t = ps->part->topic;
	struct sl_rlink_env env = {
		.from = sl_coord_node_id(w->coord),
		.to = to,
		.partition = ps->partid,
		.name = t->name,
		.name_len = t->name_len,
	};
	uint8_t mac[6], *frame;
	struct rte_mbuf *m;
	int elen;
	uint32_t flen;

	if (n == NULL) {
		w->st.repl_drops++;
		return;
	}
	port = &w->conf->ports[n->pi];
	if (sl_net_arp_lookup(w->arp[n->pi], n->ip, mac) != 0) {
		w->st.repl_no_arp++;
		arp_ask(w, n);
		return;
	}
	m = rte_pktmbuf_alloc(w->conf->pool);
	if (m == NULL) {
		w->st.drop_no_mbuf++;
		return;
	}
	frame = rte_pktmbuf_mtod(m, uint8_t *);
	elen = sl_rlink_encode(frame + SL_NET_HDRS_LEN,
			       rte_pktmbuf_tailroom(m) - SL_NET_HDRS_LEN, &env);
	if (elen < 0 || (uint32_t)elen + len + SL_NET_HDRS_LEN > rte_pktmbuf_tailroom(m) ||
	    (uint32_t)elen + len + 28 > port->mtu) {
		w->st.repl_drops++;
		rte_pktmbuf_free(m);
		return;
	}
	memcpy(frame + SL_NET_HDRS_LEN + elen, buf, len);
	flen = sl_net_udp_build(frame, &port->nif, mac, n->ip, w->conf->repl_port, n->port,
				(uint16_t)(elen + len), port->tx_flags);
	m->data_len = (uint16_t)flen;
	m->pkt_len = flen;
	set_tx_offload(m, port->tx_flags, 20);
	tx_enqueue(w, n->pi, m);
	w->st.repl_out++;
}

/* The epoch of the record starting at id, from the epoch history. */
static uint64_t
epoch_for(const struct sl_pstate *ps, uint64_t id)
{
	uint64_t e = ps->nepochs > 0 ? ps->epoch_of[0] : 0;
	uint32_t i;

	for (i = 0; i < ps->nepochs; i++)
		if (ps->epoch_start[i] <= id)
			e = ps->epoch_of[i];
	return e;
}

/* The commit record holding id, rebuilt from the in-memory log: each record knows its
 * place in its PUB/MPUB, and a record has the same size in memory and on disk. */
static int
crec_of(const struct sl_pstate *ps, uint64_t id, struct sl_repl_crec *c)
{
	struct sl_memlog_rec rec;
	uint64_t first, last, end_off;

	if (sl_memlog_read(ps->log, id, &rec) != 0)
		return -ENOENT;
	first = id - rec.batch_index;
	last = id + rec.batch_left;
	if (last > sl_memlog_end_id(ps->log) || sl_memlog_read(ps->log, first, &rec) != 0 ||
	    sl_memlog_offset_of(ps->log, last + 1, &end_off) != 0)
		return -ENOENT;
	c->log_id = first;
	c->epoch = epoch_for(ps, first);
	c->last_msg_log_id = last;
	c->msg_offset = rec.offset;
	c->msg_cnt = last;
	c->timestamp_ns = rec.timestamp_ns;
	c->msg_size = (uint32_t)(end_off - rec.offset);
	c->msg_num = (uint32_t)(last - first + 1);
	return 0;
}

static void
epoch_note(struct sl_pstate *ps, uint64_t epoch, uint64_t first_id)
{
	if (ps->nepochs > 0 && ps->epoch_of[ps->nepochs - 1] >= epoch)
		return;
	if (ps->nepochs == SL_WORKER_EPOCHS) {
		memmove(ps->epoch_of, ps->epoch_of + 1,
			sizeof(ps->epoch_of[0]) * (SL_WORKER_EPOCHS - 1));
		memmove(ps->epoch_start, ps->epoch_start + 1,
			sizeof(ps->epoch_start[0]) * (SL_WORKER_EPOCHS - 1));
		ps->nepochs--;
	}
	ps->epoch_of[ps->nepochs] = epoch;
	ps->epoch_start[ps->nepochs++] = first_id;
}

/* The message record at pos of an encoded run of size bytes (the disk log's format, which
 * replication carries): its size, or 0 when it does not fit. *hdr gets its header words
 * (magic_len, crc, id, timestamp, trace). */
static uint32_t
mrec_at(const uint8_t *p, uint32_t pos, uint32_t size, uint32_t *len, uint64_t hdr[4])
{
	uint32_t ml;
	uint64_t rs;

	if (pos + SL_DISKLOG_MREC_HDR > size)
		return 0;
	memcpy(&ml, p + pos, 4);
	*len = ml & 0xFFFFFF;
	rs = SL_DISKLOG_MREC_SIZE(*len);
	if (pos + rs > size)
		return 0;
	memcpy(hdr, p + pos, SL_DISKLOG_MREC_HDR);
	return (uint32_t)rs;
}

/* A commit record as the disk log keeps it, for replication (the same fields). */
static void
crec_from_disk(struct sl_repl_crec *c, const struct sl_disklog_crec *d)
{
	c->log_id = d->log_id;
	c->epoch = d->epoch;
	c->last_msg_log_id = d->last_msg_log_id;
	c->msg_offset = d->msg_offset;
	c->msg_cnt = d->msg_cnt;
	c->timestamp_ns = d->timestamp_ns;
	c->msg_size = d->msg_size;
	c->msg_num = d->msg_num;
}

/* The replica's apply: the records arrive encoded in the disk log's format. */
static int
r_append(void *arg, const struct sl_repl_crec *c, const void *msgs)
{
	struct sl_pstate *ps = arg;
	struct sl_worker *w = ps->w;
	const void *datas[SL_WIRE_MPUB_MAX];
	uint32_t lens[SL_WIRE_MPUB_MAX], i, pos = 0;
	const uint8_t *p = msgs;
	uint64_t ts = 0, trace = 0;
	struct sl_memlog_rec rec;
	int rc;

	if (c->msg_num == 0 || c->msg_num > SL_WIRE_MPUB_MAX ||
	    c->log_id != sl_memlog_end_id(ps->log) + 1 ||
	    c->msg_offset != sl_memlog_end_offset(ps->log))
		return -EINVAL;
	if (ps->store != NULL && (ps->store_err || sl_persist_room(w->persist, w->idx) == 0))
		return -ENOBUFS;
	for (i = 0; i < c->msg_num; i++) {
		uint64_t hdr[4];
		uint32_t sz = mrec_at(p, pos, c->msg_size, &lens[i], hdr);

		if (sz == 0)
			return -EINVAL;
		if (i == 0) {
			ts = hdr[2];
			trace = hdr[3];
		}
		datas[i] = p + pos + SL_DISKLOG_MREC_HDR;
		pos += sz;
	}
	rc = c->msg_num == 1 ? sl_memlog_append(ps->log, datas[0], lens[0], ts, trace, &rec) :
			       sl_memlog_append_batch(ps->log, c->msg_num, datas, lens, ts, trace,
						      &rec);
	if (rc != 0)
		return rc;
	epoch_note(ps, c->epoch, c->log_id);
	if (ps->store != NULL)
		sl_persist_submit(w->persist, w->idx, ps->store, rec.id, c->msg_num, rec.offset,
				  c->epoch);
	ps->msgs_in += c->msg_num;
	return 0;
}

static int
r_truncate(void *arg, uint64_t end_id)
{
	struct sl_pstate *ps = arg;
	struct sl_worker *w = ps->w;

	if (end_id >= sl_memlog_end_id(ps->log))
		return 0;
	sl_memlog_truncate(ps->log, end_id + 1);
	if (ps->disk_last.last_msg_log_id > end_id)
		memset(&ps->disk_last, 0, sizeof(ps->disk_last));
	while (ps->nepochs > 0 && ps->epoch_start[ps->nepochs - 1] > end_id)
		ps->nepochs--;
	if (ps->committed > end_id)
		ps->committed = end_id;
	if (ps->store != NULL && sl_persist_truncate(w->persist, w->idx, ps->store, end_id) != 0)
		return -ENOBUFS;
	return 0;
}

/*
 * The record holding id from the disk log, for a replica further behind than memory: the
 * reader thread reads whole records (their messages exactly as on disk, the replication
 * format) into the store's rread buffer; until they are there this answers -ENOENT and
 * replication asks again later. buf NULL: the commit record only. Owner lcore: no I/O here.
 */
static int
disk_crec(struct sl_pstate *ps, uint64_t id, struct sl_repl_crec *c, void *buf, uint32_t cap)
{
	struct sl_prread *rr;
	uint32_t i, off = 0;

	if (ps->store == NULL)
		return -ENOENT;
	rr = &ps->store->rread;
	if (__atomic_load_n(&rr->state, __ATOMIC_ACQUIRE) == SL_PFETCH_READY && rr->rc == 0) {
		for (i = 0; i < rr->n; i++) {
			const struct sl_disklog_crec *d = &rr->crecs[i];

			if (id >= d->log_id && id <= d->last_msg_log_id) {
				if (buf != NULL && d->msg_size > cap)
					return -ENOBUFS;
				crec_from_disk(c, d);
				if (buf != NULL)
					memcpy(buf, rr->buf + off, d->msg_size);
				return 0;
			}
			off += rr->crecs[i].msg_size;
		}
	}
	if (__atomic_load_n(&rr->state, __ATOMIC_ACQUIRE) != SL_PFETCH_QUEUED)
		sl_persist_rread(ps->w->persist, ps->store, id,
				 __atomic_load_n(&ps->store->written_id, __ATOMIC_ACQUIRE));
	return -ENOENT;
}

static int
r_read(void *arg, uint64_t id, struct sl_repl_crec *c, void *buf, uint32_t cap)
{
	struct sl_pstate *ps = arg;
	struct sl_memlog_rec rec;
	struct sl_repl_crec k;
	uint8_t *p = buf;
	uint32_t used = 0;
	uint64_t i;

	if (crec_of(ps, id, &k) != 0)
		return disk_crec(ps, id, c, buf, cap);
	if (k.msg_size > cap)
		return -ENOBUFS;
	for (i = k.log_id; i <= k.last_msg_log_id; i++) {
		if (sl_memlog_read(ps->log, i, &rec) != 0)
			return -ENOENT;
		used += sl_disklog_encode_msg(p + used, rec.id, rec.timestamp_ns, rec.trace_id,
					      rec.data, rec.len, i == k.last_msg_log_id);
	}
	*c = k;
	return 0;
}

static void
r_last(void *arg, struct sl_repl_crec *c)
{
	struct sl_pstate *ps = arg;
	uint64_t end = sl_memlog_end_id(ps->log);

	/* memory, or what the disk log ended with at start */
	if (end >= sl_memlog_first_id(ps->log) && crec_of(ps, end, c) == 0)
		return;
	if (ps->disk_last.last_msg_log_id == end) {
		*c = ps->disk_last;
		return;
	}
	memset(c, 0, sizeof(*c));
	if (end + 1 == ps->log_base)
		c->last_msg_log_id = end;	/* nothing held since a reset to log_base */
}

/*
 * Leader: the oldest record replication can still serve and (offset not NULL) its
 * message offset: the disk log's first when the partition has one (memory holds a suffix
 * of it), else the first whole record in memory (a trim may have cut into an MPUB). With
 * nothing held, the log's end. The id alone costs no read; the offset of a record only
 * on disk is read by the reader thread: -EAGAIN until it is there. Owner lcore.
 */
static int
r_first(void *arg, uint64_t *id, uint64_t *offset)
{
	struct sl_pstate *ps = arg;
	struct sl_disklog_stats ds;
	struct sl_memlog_rec rec;
	struct sl_repl_crec c;
	uint64_t first = sl_memlog_first_id(ps->log), end = sl_memlog_end_id(ps->log);

	if (ps->store != NULL) {
		sl_disklog_get_stats(ps->store->dl, &ds);
		if (ds.first_id <= ds.end_id && ds.first_id < first)
			first = ds.first_id;
	}
	while (first <= end && sl_memlog_read(ps->log, first, &rec) == 0 &&
	       rec.batch_index != 0)
		first += (uint64_t)rec.batch_left + 1;	/* the rest of a cut MPUB */
	if (first > end) {
		*id = end + 1;
		if (offset != NULL)
			*offset = sl_memlog_end_offset(ps->log);
		return 0;
	}
	*id = first;
	if (offset == NULL)
		return 0;
	if (crec_of(ps, first, &c) != 0 && disk_crec(ps, first, &c, NULL, 0) != 0)
		return -EAGAIN;
	*id = c.log_id;
	*offset = c.msg_offset;
	return 0;
}

/*
 * Replica: the leader no longer holds what follows our end. Drop the whole log, memory
 * and disk, and start it over, empty, at record id (offset): every id before it counts as
 * committed, and channel positions before it move up to it. Waits (-EAGAIN) until the
 * persistence lcore took every record handed to it, so the reset follows them. Owner.
 */
static int
r_reset(void *arg, uint64_t id, uint64_t offset)
{
	struct sl_pstate *ps = arg;
	struct sl_worker *w = ps->w;
	uint32_t c;
	int err;

	if (ps->store != NULL) {
		err = __atomic_load_n(&ps->store->error, __ATOMIC_ACQUIRE);
		if (err != 0)
			return err;
		if (sl_persist_room(w->persist, w->idx) == 0 ||
		    __atomic_load_n(&ps->store->written_id, __ATOMIC_ACQUIRE) <
			    sl_memlog_end_id(ps->log) ||
		    sl_persist_reset(w->persist, w->idx, ps->store, id, offset) != 0)
			return -EAGAIN;
	}
	WLOG(NOTICE, "%s/%u: the leader's log starts at %" PRIu64 ", after ours (%" PRIu64
	     "): our log starts over there", ps->part->topic->name, ps->partid, id,
	     sl_memlog_end_id(ps->log));
	sl_memlog_reset(ps->log, id, offset);
	memset(&ps->disk_last, 0, sizeof(ps->disk_last));
	ps->nepochs = 0;
	ps->committed = id - 1;
	ps->trimmed_to = id;
	ps->log_base = id;
	for (c = 0; c < ps->nchans; c++)
		if (sl_channel_confirmed(ps->chans[c]) < id)
			sl_channel_reset(ps->chans[c], id);
	return 0;
}

static uint64_t
r_epoch_end(void *arg, uint64_t epoch)
{
	struct sl_pstate *ps = arg;
	uint32_t i;

	/* the end of `epoch` is where the next higher epoch starts */
	for (i = 0; i < ps->nepochs; i++)
		if (ps->epoch_of[i] > epoch)
			return ps->epoch_start[i] - 1;
	return ps->nepochs > 0 && ps->epoch_of[0] > epoch ? 0 : sl_memlog_end_id(ps->log);
}

/* A view change request for the control thread about this partition (NULL: none now,
 * the ring is busy). Control rate: a membership change, so the allocation is fine. */
static struct sl_wviewreq *
viewreq_new(struct sl_pstate *ps, int join)
{
	struct sl_wviewreq *q;

	if (rte_ring_count(ps->w->viewreq) >= 64)
		return NULL;
	q = rte_zmalloc(NULL, sizeof(*q), 0);
	if (q == NULL)
		return NULL;
	memcpy(q->topic, ps->part->topic->name, ps->part->topic->name_len);
	q->topic[ps->part->topic->name_len] = '\0';
	q->partition = ps->partid;
	q->join = (uint8_t)join;
	return q;
}

static void
viewreq_post(struct sl_pstate *ps, struct sl_wviewreq *q)
{
	if (rte_ring_mp_enqueue(ps->w->viewreq, q) != 0)
		rte_free(q);
}

static void
view_request(struct sl_pstate *ps, uint32_t node, int join)
{
	struct sl_wviewreq *q = viewreq_new(ps, join);

	if (q == NULL)
		return;
	q->node = node;
	viewreq_post(ps, q);
}

/* Replica: the leader's ISR for the leadership we follow, to this node's view. */
static void
r_leader_isr(void *arg, uint32_t epoch, uint64_t session, const uint32_t *isr, uint32_t nisr)
{
	struct sl_pstate *ps = arg;
	struct sl_wviewreq *q;

	if (nisr > SL_COORD_MAX_REPLICAS || (q = viewreq_new(ps, 2)) == NULL)
		return;
	q->epoch = epoch;
	q->session = session;
	q->nisr = (uint8_t)nisr;
	memcpy(q->isr, isr, nisr * sizeof(*isr));
	viewreq_post(ps, q);
}

static void
r_isr_leave(void *arg, uint32_t node)
{
	view_request(arg, node, 0);
}

static void
r_isr_join(void *arg, uint32_t node)
{
	view_request(arg, node, 1);
}

static void
r_committed(void *arg, uint64_t end_id)
{
	struct sl_pstate *ps = arg;

	if (end_id > ps->committed)
		ps->committed = end_id;
}

static void
r_rolled_back(void *arg, uint64_t end_id, int err)
{
	struct sl_pstate *ps = arg;
	struct sl_worker *w = ps->w;

	/* the newest waiting publishes are the ones rolled back */
	while (ps->pend_tail != ps->pend_head &&
	       ps->pend[(ps->pend_tail - 1) & (SL_WORKER_PEND - 1)].last_id > end_id) {
		struct sl_pend *pd = &ps->pend[--ps->pend_tail & (SL_WORKER_PEND - 1)];

		pend_answer(w, pd, (uint16_t)(err < 0 ? -err : err));
	}
	r_truncate(arg, end_id);
}

static void
r_chan_set(void *arg, const char *chan, uint64_t confirmed_id)
{
	struct sl_pstate *ps = arg;
	int ci = chan_find(ps, chan, (uint32_t)strlen(chan));

	if (ci < 0)
		ci = chan_open(ps->w->conf, ps, chan, (uint32_t)strlen(chan), 0, 0, confirmed_id);
	if (ci >= 0)
		sl_channel_reset(ps->chans[ci], confirmed_id);
}

static int
r_msg_ids(void *arg, const void *msgs, uint32_t msg_size, uint64_t *first, uint64_t *last,
	  uint32_t *num)
{
	uint32_t pos = 0, n = 0, len, sz;
	uint64_t hdr[4];

	while (pos < msg_size) {
		sz = mrec_at(msgs, pos, msg_size, &len, hdr);
		if (sz == 0)
			return -EINVAL;
		if (n++ == 0)
			*first = hdr[1];
		*last = hdr[1];
		pos += sz;
	}
	*num = n;
	return n > 0 ? 0 : -EINVAL;
}

static int
r_chan_get(void *arg, uint32_t idx, char name[SL_REPL_CHAN_NAME_MAX + 1],
	   uint64_t *confirmed_id)
{
	struct sl_pstate *ps = arg;
	uint32_t c, k = 0;

	for (c = 0; c < ps->nchans; c++) {
		if (sl_channel_is_ephemeral(ps->chans[c]))
			continue;
		if (k++ == idx) {
			snprintf(name, SL_REPL_CHAN_NAME_MAX + 1, "%s",
				 sl_channel_name(ps->chans[c]));
			*confirmed_id = sl_channel_confirmed(ps->chans[c]);
			return 0;
		}
	}
	return -ENOENT;
}

/* An ordered FIN or a SET_OFFSET is settled: answer the held request, or roll back. */
static void
r_chan_done(void *arg, uint64_t token, int err, uint64_t prev_id)
{
	struct sl_pstate *ps = arg;
	struct sl_chanwait *cw;
	int ci;

	if (token == 0 || ps->chanwait == NULL)
		return;
	cw = &ps->chanwait[token & (SL_WORKER_CHANWAIT - 1)];
	if (!cw->used || cw->token != token)
		return;
	if (!cw->held) {
		cw->done = 1;	/* inside chan_replicate's own call: it answers */
		cw->err = err;
		return;
	}
	if (err != 0) {
		ci = chan_find(ps, cw->chan, (uint32_t)strlen(cw->chan));
		if (ci >= 0)
			sl_channel_reset(ps->chans[ci], prev_id);
	}
	cw->used = 0;
	pend_answer(ps->w, &cw->req, (uint16_t)(err < 0 ? -err : err));
}

static const struct sl_repl_ops repl_ops = {
	.send = r_send,
	.append = r_append,
	.truncate = r_truncate,
	.read = r_read,
	.last = r_last,
	.epoch_end = r_epoch_end,
	.isr_leave = r_isr_leave,
	.isr_join = r_isr_join,
	.committed = r_committed,
	.rolled_back = r_rolled_back,
	.chan_set = r_chan_set,
	.chan_done = r_chan_done,
	.msg_ids = r_msg_ids,
	.chan_get = r_chan_get,
	.first = r_first,
	.reset = r_reset,
	.leader_isr = r_leader_isr,
};

/* The coordinator's view as replication wants it. */
static void
view_of(const struct sl_part_meta *m, struct sl_repl_view *v)
{
	memset(v, 0, sizeof(*v));
	v->leader = m->leader;
	v->epoch = m->epoch;
	v->leader_session = m->leader_session;
	v->writes_disabled = m->writes_disabled;
	v->nreplicas = m->nreplicas;
	v->nisr = m->nisr;
	memcpy(v->replicas, m->replicas, sizeof(v->replicas[0]) * RTE_MIN(m->nreplicas, 8));
	memcpy(v->isr, m->isr, sizeof(v->isr[0]) * RTE_MIN(m->nisr, 8));
}

/* Every loop: install view changes, run replication timers. RCU read side. */
static uint32_t
repl_poll(struct sl_worker *w, struct sl_pstate *ps)
{
	struct sl_repl_view v;
	uint32_t done = 0;

	if (ps->repl == NULL)
		return 0;
	view_of(rcu_dereference(ps->part->meta), &v);
	v.version = ps->view.version;
	if (memcmp(&v, &ps->view, sizeof(v)) != 0) {
		v.version = ++ps->view_version;
		ps->view = v;
		sl_repl_set_view(ps->repl, &v, w->now_ns);
		done++;
	}
	return done + sl_repl_poll(ps->repl, w->now_ns);
}

/* Every loop, per partition: storage events, replication (view, timers, sends), then the
 * publishes that became durable and committed. */
static uint32_t
parts_poll(struct sl_worker *w)
{
	uint32_t i, done = 0;

	for (i = 0; i < w->nparts; i++) {
		struct sl_pstate *ps = w->parts[i];

		done += storage_poll(w, ps);
		done += repl_poll(w, ps);
		done += acks_poll(w, ps);
	}
	return done;
}

/* Leader: replicate the n messages just appended from first (PutMessageToCluster's
 * cluster part; the answer waits for the commit). Owner lcore. */
static int
repl_write(struct sl_worker *w, struct sl_pstate *ps, const struct sl_memlog_rec *first,
	   uint32_t n)
{
	struct sl_repl_crec c = {
		.log_id = first->id,
		.last_msg_log_id = first->id + n - 1,
		.msg_offset = first->offset,
		.msg_cnt = first->id + n - 1,
		.timestamp_ns = first->timestamp_ns,
		.msg_num = n,
	};
	struct sl_memlog_rec rec;
	uint32_t used = 0, i;
	int rc;

	for (i = 0; i < n; i++) {
		if (sl_memlog_read(ps->log, first->id + i, &rec) != 0 ||
		    used + SL_DISKLOG_MREC_SIZE(rec.len) > RBUF_LEN)
			return -SL_E_TOO_BIG;
		used += sl_disklog_encode_msg(w->rbuf + used, rec.id, rec.timestamp_ns,
					      rec.trace_id, rec.data, rec.len, i == n - 1);
	}
	c.msg_size = used;
	c.epoch = sl_repl_epoch(ps->repl);
	rc = sl_repl_write(ps->repl, &c, w->rbuf, w->now_ns);
	if (rc != 0)
		return rc;
	epoch_note(ps, c.epoch, c.log_id);
	return 0;
}

/* A frame to the replica port: hand its datagram to the partition's replication. */
static void
handle_replica(struct sl_worker *w, struct req *r, int forwarded)
{
	const uint8_t *payload = rte_pktmbuf_mtod(r->m, uint8_t *) + r->info.payload_off;
	struct sl_rlink_env env;
	struct sl_topic *t;
	struct sl_pstate *ps;

	if (sl_rlink_decode(payload, r->info.payload_len, &env) != 0 ||
	    env.to != sl_coord_node_id(w->coord) || node_of(w, env.from) == NULL)
		goto drop;
	sl_net_arp_learn(w->arp[r->pi], r->info.src_ip, r->info.src_mac, w->now_tsc);
	t = sl_coord_topic_find(w->coord, env.name, env.name_len);
	if (t == NULL || env.partition >= t->nparts)
		goto drop;
	ps = owned_state(w, &t->parts[env.partition]);
	if (ps == NULL) {
		if (forwarded)
			goto drop;
		forward_to(w, r, t->parts[env.partition].owner);
		return;
	}
	if (ps->repl == NULL)
		goto drop;
	w->st.repl_in++;
	sl_repl_input(ps->repl, env.from, env.payload, env.payload_len, w->now_ns);
	rte_pktmbuf_free(r->m);
	return;
drop:
	w->st.repl_drops++;
	rte_pktmbuf_free(r->m);
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
		if (rc == 0 && (ps->disk || ps->repl != NULL))
			pend_push(w, ps, r, &e, 1);
		else
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
	if (rc == SETOFF_DEFERRED) {
		/* answered when the disk lookup is done; a retry meanwhile is ignored */
		e.pending = 1;
		sl_idem_record(idem, r->hdr.seq, &e);
		return;
	}
	e.code = answer_code(rc);
	if (rc == 0 && (ps->disk || ps->repl != NULL) && (op == SL_OP_PUB || op == SL_OP_MPUB)) {
		/* acknowledged once durable and committed by the ISR: a retry meanwhile is
		 * ignored (PENDING) */
		e.pending = 1;
		sl_idem_record(idem, r->hdr.seq, &e);
		pend_push(w, ps, r, &e, 0);
		return;
	}
	/* a publish that failed wrote nothing: its answer is not remembered, so that a
	 * retry (a client backing off from SL_E_FULL or SL_E_WRITE_DISABLED) runs again */
	if (rc == 0 || (op != SL_OP_PUB && op != SL_OP_MPUB))
		sl_idem_record(idem, r->hdr.seq, &e);
	reply_entry(w, r, &e);
}

static void
handle_udp(struct sl_worker *w, struct req *r, int forwarded)
{
	const uint8_t *payload = rte_pktmbuf_mtod(r->m, uint8_t *) + r->info.payload_off;
	int rc;

	if (w->conf->repl_port != 0 && r->info.dst_port == w->conf->repl_port) {
		handle_replica(w, r, forwarded);
		return;
	}
	rc = sl_wire_decode_hdr(payload, r->info.payload_len, &r->hdr);

	if (rc != 0) {
		/* answer what is recognisably ours; drop the rest silently */
		if (r->info.payload_len >= SL_WIRE_HDR_LEN && payload[0] == 0x53 &&
		    payload[1] == 0x4C) {
			uint64_t v[3];

			/* the payload sits at any alignment: copy before reading words */
			memcpy(v, payload + 8, sizeof(v));
			memset(&r->hdr, 0, sizeof(r->hdr));
			r->hdr.session = rte_be_to_cpu_64(v[0]);
			r->hdr.seq = rte_be_to_cpu_64(v[1]);
			r->hdr.cookie = rte_be_to_cpu_64(v[2]);
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
	case SL_NET_ARP_REPLY:
		if (w->arp[pi] != NULL)
			sl_net_arp_learn(w->arp[pi], r.info.src_ip, r.info.src_mac, w->now_tsc);
		rte_pktmbuf_free(m);
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

/*
 * Message id from the disk reader's buffer: 0 and *rec, -EAGAIN while it is being fetched
 * (a fetch from id is posted when the buffer does not hold it), -ENOENT when the disk no
 * longer has it. Owner lcore: no I/O here, the reader thread does it.
 */
static int
disk_rec(struct sl_worker *w, struct sl_pstate *ps, uint64_t id, struct sl_memlog_rec *rec)
{
	struct sl_pfetch *f = &ps->store->fetch;
	uint32_t state = __atomic_load_n(&f->state, __ATOMIC_ACQUIRE);
	const struct sl_disklog_msg *m;

	if (id >= sl_memlog_first_id(ps->log))
		return -ENOENT;	/* not written yet, or rolled back */
	if (state == SL_PFETCH_QUEUED)
		return -EAGAIN;
	if (state == SL_PFETCH_READY) {
		if (f->rc == 0 && f->n > 0 && id >= f->msgs[0].id && id <= f->msgs[f->n - 1].id) {
			m = &f->msgs[id - f->msgs[0].id];
			rec->id = m->id;
			rec->offset = m->offset;
			rec->timestamp_ns = m->timestamp_ns;
			rec->trace_id = m->trace_id;
			rec->len = m->len;
			rec->data = m->data;
			ps->disk_reads++;
			return 0;
		}
		if (f->rc == -ENOENT && id < f->first_avail && f->from_id == id)
			return -ENOENT;
	}
	sl_persist_fetch(w->persist, ps->store, id,
			 __atomic_load_n(&ps->store->written_id, __ATOMIC_ACQUIRE));
	return -EAGAIN;
}

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
		int rc = ps->store != NULL ? disk_rec(w, ps, d->id, &rec) : -ENOENT;

		if (rc == -EAGAIN) {
			/* the reader is fetching it: deliver it on a later iteration */
			sl_channel_unsend(ch, d);
			return -1;
		}
		if (rc != 0) {
			/* no longer held anywhere (retention, or a position moved below
			 * the log start): skip it */
			ps->disk_skipped++;
			sl_channel_fin(ch, d->sub, d->id);
			return 1;
		}
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

		/* consumers see only what a crash would not take back: durable (disk
		 * durability) and committed by the ISR (replication) */
		end = RTE_MIN(end, ack_end(ps));
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

/*
 * Trimming with a store: memory is a cache of the disk log. What every channel confirmed
 * goes once it is durable; when the log is more than half full, everything durable goes,
 * and channels behind read it back through the disk reader.
 */
/*
 * Drop the in-memory log below id `to`. A replicated partition keeps its last committed
 * record and everything after it: replication sends each record with the epoch of the
 * one before, reads what it resends from memory, and finds the log's end there.
 */
static void
trim_mem(struct sl_pstate *ps, uint64_t to)
{
	struct sl_memlog_rec rec;
	uint64_t keep = ps->committed;

	if (ps->repl != NULL) {
		if (keep >= sl_memlog_first_id(ps->log) && sl_memlog_read(ps->log, keep, &rec) == 0)
			keep -= rec.batch_index;	/* that record's first id */
		to = RTE_MIN(to, keep);
	}
	if (to > ps->trimmed_to && to > sl_memlog_first_id(ps->log)) {
		sl_memlog_trim(ps->log, to);
		ps->trimmed_to = to;
	}
}

static void
trim_stored(struct sl_pstate *ps, uint64_t min)
{
	uint64_t durable = __atomic_load_n(&ps->store->durable_id, __ATOMIC_ACQUIRE);
	uint64_t to = min == UINT64_MAX ? 0 : min;

	__atomic_store_n(&ps->store->keep_from_id, min == UINT64_MAX ? 0 : min,
			 __ATOMIC_RELEASE);
	if (ps->store_err)
		return;
	if (sl_memlog_used(ps->log) * 2 > sl_memlog_capacity(ps->log) && durable + 1 > to) {
		if (to <= durable && min != UINT64_MAX)
			ps->cache_trims++;
		to = durable + 1;
	}
	to = RTE_MIN(to, durable + 1);
	trim_mem(ps, to);
}

/* Once per tick: timeouts, ephemeral channels whose subscribers vanished, trimming. */
static void
tick(struct sl_worker *w)
{
	uint32_t i;
	int c;

	arp_peers(w);
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
			if (ps->pslot[c] != UINT8_MAX)
				sl_pstore_chan_set(ps->store, ps->pslot[c], sl_channel_name(ch),
						   sl_channel_is_ordered(ch),
						   sl_channel_confirmed(ch));
			if (sl_channel_confirmed(ch) < min)
				min = sl_channel_confirmed(ch);
		}
		if (ps->store != NULL)
			trim_stored(ps, min);
		/* messages every channel confirmed are released; with no channel at all the
		 * log keeps everything (and fills up) so that no message is ever dropped */
		else if (ps->nchans > 0 && min != UINT64_MAX && min > ps->trimmed_to)
			trim_mem(ps, min);
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
	info->store = ps->store;
	info->disk = (uint8_t)ps->disk;
	info->pending = ps->pend_tail - ps->pend_head;
	info->io_errs = ps->io_errs;
	info->disk_reads = ps->disk_reads;
	info->disk_skipped = ps->disk_skipped;
	info->cache_trims = ps->cache_trims;
	if (ps->repl != NULL) {
		info->repl = 1;
		info->in_sync = (uint8_t)sl_repl_in_sync(ps->repl);
		info->committed = ps->committed;
		sl_repl_get_stats(ps->repl, &info->rst);
	}
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
	/* adaptive idle sleeps for tens of microseconds: without this, the kernel's default
	 * 50 us timer slack stretches each one (and a peer's answer waits for it) */
	if (w->conf->idle == SL_IDLE_ADAPTIVE)
		prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
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
		work += parts_poll(w);
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
sl_worker_pstate_create(const struct sl_broker_conf *conf, uint16_t partid, uint16_t owner,
			struct sl_pstore *store)
{
	struct sl_pstate *ps = rte_zmalloc_socket("sl_pstate", sizeof(*ps), RTE_CACHE_LINE_SIZE,
						  conf->socket_id);
	struct sl_disklog_chan saved[SL_PERSIST_MAX_CHANS];
	struct sl_disklog_stats ds;
	struct sl_memlog_conf mc;
	int i, n;

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
	if (store != NULL) {
		/* memory continues where the disk ends; older messages are read back */
		sl_disklog_get_stats(store->dl, &ds);
		mc.start_id = ds.end_id + 1;
		mc.start_offset = ds.end_offset;
		ps->disk = store->pol.durability == SL_PERSIST_DISK;
		ps->store_gen = store->gen;
		if (ps->disk) {
			ps->pend = rte_zmalloc_socket("sl_pend", sizeof(*ps->pend) * SL_WORKER_PEND,
						      RTE_CACHE_LINE_SIZE, conf->socket_id);
			if (ps->pend == NULL)
				goto fail;
		}
	}
	ps->log = sl_memlog_open(&mc);
	if (ps->log == NULL)
		goto fail;
	ps->trimmed_to = sl_memlog_first_id(ps->log);
	ps->log_base = 1;
	if (store != NULL && ds.first_id > 1)
		ps->log_base = ds.first_id;	/* retained, or reset, and maybe empty */
	if (store == NULL)
		return ps;
	ps->store = store;
	store->log = ps->log;
	/* channel positions saved by the last run */
	n = sl_disklog_chan_load(store->dl, saved, SL_PERSIST_MAX_CHANS);
	if (n < 0)
		WLOG(ERR, "%s/%u: saved channel positions unreadable (%s): channels start "
		     "afresh", store->topic, partid, sl_strerror(n));
	for (i = 0; i < n; i++) {
		uint64_t start = RTE_MAX(RTE_MIN(saved[i].confirmed_id, ds.end_id + 1),
					 RTE_MAX(ds.first_id, 1u));

		if (chan_open(conf, ps, saved[i].name, (uint32_t)strlen(saved[i].name),
			      saved[i].flags & 1, 0, start) < 0)
			WLOG(ERR, "%s/%u: cannot restore channel %s", store->topic, partid,
			     saved[i].name);
	}
	return ps;
fail:
	sl_worker_pstate_free(ps);
	rte_errno = ENOMEM;
	return NULL;
}

int
sl_worker_pstate_replicate(const struct sl_broker_conf *conf, struct sl_pstate *ps,
			   const char *topic, struct sl_worker *owner)
{
	struct sl_repl_conf rc = {
		.node_id = conf->node_id,
		.partition = ps->partid,
		.topic_hash = sl_repl_topic_hash(topic, strlen(topic)),
		.ops = &ps->repl_ops,
	};
	struct sl_disklog_crec dc;
	uint16_t mtu = 9000, i;
	int n;

	for (i = 0; i < conf->nports; i++)
		mtu = RTE_MIN(mtu, conf->ports[i].mtu);
	rc.max_dgram = RTE_MIN((uint32_t)SL_REPL_MAX_DGRAM,
			       (uint32_t)mtu - 28 - SL_RLINK_HDR_LEN - SL_RLINK_NAME_MAX);
	ps->w = owner;
	ps->repl_ops = repl_ops;
	ps->repl_ops.arg = ps;
	if (ps->pend == NULL)
		ps->pend = rte_zmalloc_socket("sl_pend", sizeof(*ps->pend) * SL_WORKER_PEND,
					      RTE_CACHE_LINE_SIZE, conf->socket_id);
	ps->chanwait = rte_zmalloc_socket("sl_chanwait",
					  sizeof(*ps->chanwait) * SL_WORKER_CHANWAIT,
					  RTE_CACHE_LINE_SIZE, conf->socket_id);
	if (ps->pend == NULL || ps->chanwait == NULL)
		return -ENOMEM;
	/* what the disk log ends with, and its epoch history (KIP-101: which epoch wrote
	 * which ids), from the commit records on disk */
	if (ps->store != NULL && sl_disklog_last(ps->store->dl, &dc) == 0) {
		crec_from_disk(&ps->disk_last, &dc);
		n = sl_disklog_epochs(ps->store->dl, ps->epoch_of, ps->epoch_start,
				      SL_WORKER_EPOCHS);
		ps->nepochs = n > 0 ? (uint32_t)n : 0;
		if (n <= 0) {
			WLOG(WARNING, "partition %u: epoch history unreadable (%s), taking "
			     "epoch %" PRIu64 " for the whole log", ps->partid,
			     sl_strerror(n), dc.epoch);
			epoch_note(ps, dc.epoch, 1);
		}
	}
	ps->repl = sl_repl_open(&rc);
	return ps->repl != NULL ? 0 : -EINVAL;
}

void
sl_worker_pstate_free(struct sl_pstate *ps)
{
	uint32_t c;

	if (ps == NULL)
		return;
	for (c = 0; c < ps->nchans; c++)
		sl_channel_close(ps->chans[c]);
	while (ps->pend != NULL && ps->pend_head != ps->pend_tail)
		rte_pktmbuf_free(ps->pend[ps->pend_head++ & (SL_WORKER_PEND - 1)].m);
	rte_free(ps->pend);
	sl_repl_close(ps->repl);
	for (c = 0; ps->chanwait != NULL && c < SL_WORKER_CHANWAIT; c++)
		if (ps->chanwait[c].used && ps->chanwait[c].held)
			rte_pktmbuf_free(ps->chanwait[c].req.m);
	rte_free(ps->chanwait);
	sl_pstore_close(ps->store);
	sl_memlog_close(ps->log);
	rte_free(ps->log_mem);
	rte_free(ps);
}
