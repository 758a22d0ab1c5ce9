/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * worker: the poll loop of a worker lcore (worker.h). It receives frames, parses them
 * (Ethernet, IPv4, UDP, the sluice header), hands each client request to request.c (the
 * opcode table, the partition module, the answer) and each replica datagram to its
 * partition's replication, sends what partitions deliver, and runs the control thread's
 * commands. Peer addressing for replication is in peer.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <poll.h>
#include <sched.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/prctl.h>

#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_epoll.h>
#include <rte_ethdev.h>
#include <rte_interrupts.h>
#include <rte_lcore.h>
#include <rte_log.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_prefetch.h>
#include <urcu-qsbr.h>

#include "bytes.h"
#include "auth.h"
#include "err.h"
#include "rlink.h"
#include "wire.h"
#include "request.h"
#include "worker.h"

RTE_LOG_REGISTER_SUFFIX(sl_worker_logtype, worker, INFO);
#define WLOG(level, fmt, ...) \
	rte_log(RTE_LOG_##level, sl_worker_logtype, "worker: " fmt "\n", ##__VA_ARGS__)

volatile int sl_broker_quit;

#define ARP_RETRY_MS 100
#define DONE_BATCH 32

/* ---- TX ---- */

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
tx_add(struct sl_worker *w, uint16_t pi, struct rte_mbuf *m)
{
	if (w->ntx[pi] == SL_WORKER_TXQ_MAX) {
		tx_burst(w, pi, w->tx[pi], w->ntx[pi]);
		w->ntx[pi] = 0;
	}
	w->tx[pi][w->ntx[pi]++] = m;
}

/* Queue port pi's answer datagram being filled: its headers rewritten when answers were
 * appended to its first. */
static void
bundle_close(struct sl_worker *w, uint16_t pi)
{
	struct rte_mbuf *m = w->bun[pi];
	uint32_t flen;

	w->bun[pi] = NULL;
	if (w->bun_n[pi] > 1) {
		flen = sl_net_udp_resize(rte_pktmbuf_mtod(m, uint8_t *), w->bun_len[pi],
					 w->conf->ports[pi].tx_flags);
		m->data_len = (uint16_t)flen;
		m->pkt_len = flen;
		w->st.bundles_out++;
		w->st.bundle_frames_out += w->bun_n[pi];
	}
	tx_add(w, pi, m);
}

void
sl_worker_tx_enqueue(struct sl_worker *w, uint16_t pi, struct rte_mbuf *m)
{
	if (w->bun[pi] != NULL)
		bundle_close(w, pi);	/* frames leave in the order they were made */
	tx_add(w, pi, m);
}

/* Same Ethernet destination, IPv4 addresses and UDP ports (frames of net.h's layout). */
static int
same_dest(const uint8_t *a, const uint8_t *b)
{
	return memcmp(a, b, 6) == 0 && memcmp(a + 26, b + 26, 8) == 0 &&
	       memcmp(a + 34, b + 34, 4) == 0;
}

void
sl_worker_tx_answer(struct sl_worker *w, uint16_t pi, struct rte_mbuf *m, uint16_t plen)
{
	struct rte_mbuf *b = w->bun[pi];
	uint8_t *f = rte_pktmbuf_mtod(m, uint8_t *);

	if (b != NULL) {
		uint8_t *bf = rte_pktmbuf_mtod(b, uint8_t *);
		uint32_t len = w->bun_len[pi];

		if (len + plen <= SL_WIRE_DGRAM_MAX_STD && w->bun_n[pi] < SL_WIRE_BUNDLE_MAX &&
		    rte_pktmbuf_tailroom(b) + b->data_len >= SL_NET_HDRS_LEN + len + plen &&
		    same_dest(bf, f)) {
			memcpy(bf + SL_NET_HDRS_LEN + len, f + SL_NET_HDRS_LEN, plen);
			w->bun_len[pi] = (uint16_t)(len + plen);
			w->bun_n[pi]++;
			rte_pktmbuf_free(m);
			return;
		}
		bundle_close(w, pi);
	}
	w->bun[pi] = m;
	w->bun_len[pi] = plen;
	w->bun_n[pi] = 1;
}

static void
tx_flush(struct sl_worker *w)
{
	uint16_t pi;

	for (pi = 0; pi < w->conf->nports; pi++) {
		if (w->bun[pi] != NULL)
			bundle_close(w, pi);
		if (w->ntx[pi] == 0)
			continue;
		tx_burst(w, pi, w->tx[pi], w->ntx[pi]);
		w->ntx[pi] = 0;
	}
}

void
sl_worker_tx_offload(struct rte_mbuf *m, uint32_t tx_flags, uint16_t l3_len)
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

/* peer.h's way out: a frame for port pi. */
static void
peer_tx(void *arg, uint16_t pi, struct rte_mbuf *m, int offload)
{
	struct sl_worker *w = arg;

	if (offload)
		sl_worker_tx_offload(m, w->conf->ports[pi].tx_flags, 20);
	sl_worker_tx_enqueue(w, pi, m);
}

/* A frame to the replica port: hand its datagram to the partition's replication. */
static void
handle_replica(struct sl_worker *w, struct sl_request *r, int forwarded)
{
	const uint8_t *payload = rte_pktmbuf_mtod(r->m, uint8_t *) + r->info.payload_off;
	struct sl_rlink_env env;
	struct sl_topic *t;
	struct sl_partition *p;
	int rc;

	/* the receiving worker checked it (address, tag, replay) before it forwarded it */
	if (w->peer == NULL ||
	    (forwarded ? sl_rlink_decode(payload, r->info.payload_len, &env) :
			 sl_peer_input(w->peer, r->pi, &r->info, payload, r->info.payload_len,
				       w->now_tsc, &env)) != 0)
		goto drop;
	t = sl_coord_topic_find(w->coord, env.name, env.name_len);
	if (t == NULL || env.partition >= t->nparts)
		goto drop;
	p = sl_request_owned(w, &t->parts[env.partition]);
	if (p == NULL) {
		if (forwarded)
			goto drop;
		sl_request_forward(w, r, t->parts[env.partition].owner);
		return;
	}
	rc = sl_partition_replica_input(p, env.from, env.payload, env.payload_len, w->now_ns);
	if (rc < 0)
		goto drop;
	if (rc > 0) {
		/* records from a leader: counted for the follower's yields (idle part) */
		w->repl_recs += (uint64_t)rc;
		w->repl_rec_tsc = w->now_tsc;
	}
	w->st.repl_in++;
	rte_pktmbuf_free(r->m);
	return;
drop:
	w->repl_drops++;
	rte_pktmbuf_free(r->m);
}

/* Answer ERR rc to the frame at payload, whose header did not decode (or whose bundle's
 * framing is wrong), echoing what of it can be read. */
static void
reply_raw_err(struct sl_worker *w, struct sl_request *r, const uint8_t *payload, int rc)
{
	memset(&r->hdr, 0, sizeof(r->hdr));
	r->hdr.session = sl_bytes_get_be64(payload + 8);
	r->hdr.seq = sl_bytes_get_be64(payload + 16);
	r->hdr.cookie = sl_bytes_get_be64(payload + 24);
	r->hdr.opcode = payload[3];
	sl_request_reply_err(w, r, rc, 0, NULL);
}

static void handle_wire(struct sl_worker *w, struct sl_request *r, int forwarded);

/* A datagram of several frames (SL_WIRE_F_BUNDLE): each frame becomes a datagram of its own
 * (frames 2.. copied into mbufs of the receiving pool first, then the first rewritten in
 * place), handled in order as if it had come alone. A frame that gets no mbuf is dropped
 * (counted; its client sends it again). A bundle whose framing is wrong is answered ERR
 * SL_E_MALFORMED on its first frame's header: none of its frames is handled. */
static void
handle_bundle(struct sl_worker *w, struct sl_request *r, int forwarded)
{
	uint8_t *frame = rte_pktmbuf_mtod(r->m, uint8_t *);
	const uint8_t *payload = frame + r->info.payload_off;
	uint16_t off[SL_WIRE_BUNDLE_MAX], len[SL_WIRE_BUNDLE_MAX];
	struct sl_request sub[SL_WIRE_BUNDLE_MAX];
	struct sl_net_info first;
	int n, i;

	n = sl_wire_bundle_split(payload, r->info.payload_len, off, len, SL_WIRE_BUNDLE_MAX);
	if (n < 0) {
		w->st.drop_bad_bundle++;
		reply_raw_err(w, r, payload, n);
		return;
	}
	w->st.bundles_in++;
	w->st.bundle_frames_in += (uint64_t)n;
	for (i = 1; i < n; i++) {
		struct rte_mbuf *m = rte_pktmbuf_alloc(r->m->pool);
		uint32_t flen;

		if (m == NULL || rte_pktmbuf_tailroom(m) < SL_NET_HDRS_LEN + len[i]) {
			w->st.drop_no_mbuf += (uint64_t)(n - i);
			rte_pktmbuf_free(m);
			n = i;
			break;
		}
		sub[i] = *r;
		sub[i].m = m;
		flen = sl_net_udp_rewrap(rte_pktmbuf_mtod(m, uint8_t *), frame, &r->info,
					 payload + off[i], len[i], &sub[i].info);
		m->data_len = (uint16_t)flen;
		m->pkt_len = flen;
		m->port = r->m->port;
	}
	r->m->data_len = (uint16_t)sl_net_udp_rewrap(frame, frame, &r->info, payload, len[0],
						     &first);
	r->m->pkt_len = r->m->data_len;
	r->info = first;
	handle_wire(w, r, forwarded);
	for (i = 1; i < n; i++)
		handle_wire(w, &sub[i], forwarded);
}

static void
handle_udp(struct sl_worker *w, struct sl_request *r, int forwarded)
{
	const uint8_t *payload = rte_pktmbuf_mtod(r->m, uint8_t *) + r->info.payload_off;

	if (w->conf->repl_port != 0 && r->info.dst_port == w->conf->repl_port) {
		handle_replica(w, r, forwarded);
		return;
	}
	if (sl_wire_is_bundle(payload, r->info.payload_len)) {
		handle_bundle(w, r, forwarded);
		return;
	}
	handle_wire(w, r, forwarded);
}

/* One frame of a client (a datagram's, or a bundle's made a datagram of its own). */
static void
handle_wire(struct sl_worker *w, struct sl_request *r, int forwarded)
{
	const uint8_t *payload = rte_pktmbuf_mtod(r->m, uint8_t *) + r->info.payload_off;
	int rc;

	rc = sl_wire_decode_hdr(payload, r->info.payload_len, &r->hdr);
	if (rc == 0 && r->hdr.opcode >= SL_OP_OK) {
		w->st.drop_answer_op++;
		rte_pktmbuf_free(r->m);
		return;
	}
	if (rc == 0) {
		r->body = payload + SL_WIRE_HDR_LEN;
		sl_request_handle(w, r, forwarded);
		return;
	}
	/* answer what is recognisably ours; drop the rest silently */
	if (r->info.payload_len < SL_WIRE_HDR_LEN || payload[0] != 0x53 || payload[1] != 0x4C) {
		w->st.drop_bad_magic++;
		rte_pktmbuf_free(r->m);
		return;
	}
	/* a request with an opcode no handler takes: the header decoder refuses it before
	 * the opcode table, so it is counted here */
	if (rc == -SL_E_OPCODE)
		w->st.ops_unknown++;
	reply_raw_err(w, r, payload, rc);
}

/* Answer ARP and ICMP echo in place (len: the answer's length). */
static void
reply_in_place(struct sl_worker *w, struct rte_mbuf *m, uint16_t pi, uint32_t len)
{
	m->data_len = (uint16_t)len;
	m->pkt_len = len;
	m->ol_flags = 0;
	sl_worker_tx_enqueue(w, pi, m);
}

static void
handle_frame(struct sl_worker *w, struct rte_mbuf *m, uint16_t pi, int forwarded)
{
	const struct sl_broker_port *port = &w->conf->ports[pi];
	uint8_t *frame = rte_pktmbuf_mtod(m, uint8_t *);
	uint32_t rx_flags = 0;
	struct sl_request r;
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
	r.anon = 0;
	k = sl_net_parse(frame, m->data_len, &port->nif, rx_flags, &r.info);
	switch (k) {
	case SL_NET_UDP:
		handle_udp(w, &r, forwarded);
		return;
	case SL_NET_ARP_REQUEST:
		w->st.arp_replies++;
		reply_in_place(w, m, pi, sl_net_arp_reply(frame, &port->nif));
		return;
	case SL_NET_ARP_REPLY:
		if (w->peer != NULL)
			sl_peer_arp_learn(w->peer, pi, &r.info, w->now_tsc);
		rte_pktmbuf_free(m);
		return;
	case SL_NET_ICMP_ECHO:
		w->st.icmp_replies++;
		reply_in_place(w, m, pi, sl_net_icmp_reply(frame, m->data_len, &r.info, 0));
		return;
	default:
		w->st.drops[k < SL_NET_KIND_MAX ? k : 0]++;
		rte_pktmbuf_free(m);
		return;
	}
}

/* ---- delivery ---- */

/* Build and send one MSG frame (sl_partition_emit_fn). */
static int
emit_msg(void *arg, const struct sl_partition_msg *pm)
{
	struct sl_worker *w = arg;
	const struct sl_session *s = pm->sess;
	const struct sl_memlog_rec *rec = pm->rec;
	struct sl_wire_hdr h = {.version = SL_WIRE_VERSION, .session = pm->session,
				.cookie = pm->sub_id};
	struct sl_wire_msg msg;
	struct rte_mbuf *m;
	uint8_t dmac[6];
	uint16_t pi;
	uint8_t *frame;
	int n;

	for (pi = 0; pi < w->conf->nports; pi++)
		if (w->conf->ports[pi].port_id == s->port_id)
			break;
	if (pi == w->conf->nports)
		pi = 0;
	m = rte_pktmbuf_alloc(w->conf->pool);
	if (m == NULL) {
		w->st.drop_no_mbuf++;
		return -1;
	}
	frame = rte_pktmbuf_mtod(m, uint8_t *);
	msg.sub_id = pm->sub_id;
	msg.partition = pm->partid;
	msg.attempts = pm->attempts;
	msg.len = rec->len;
	msg.msg_id = rec->id;
	msg.offset = rec->offset;
	msg.timestamp_ns = rec->timestamp_ns;
	msg.trace_id = rec->trace_id;
	msg.data = rec->data;
	n = sl_wire_encode_msg(frame + SL_NET_HDRS_LEN,
			       rte_pktmbuf_tailroom(m) - SL_NET_HDRS_LEN, &h, &msg);
	if (n < 0) {
		rte_pktmbuf_free(m);
		return 1;
	}
	sl_session_mac(s, dmac);	/* its latest request's next hop */
	n = (int)sl_net_udp_build(frame, &w->conf->ports[pi].nif, dmac, s->ip,
				  w->conf->ports[pi].nif.udp_port_lo, s->udp_port, (uint16_t)n,
				  w->conf->ports[pi].tx_flags);
	m->data_len = (uint16_t)n;
	m->pkt_len = (uint32_t)n;
	sl_worker_tx_offload(m, w->conf->ports[pi].tx_flags, 20);
	sl_worker_tx_enqueue(w, pi, m);
	w->st.deliveries++;
	return 0;
}

/* Every loop, per partition: storage events, replication, completions of held requests
 * (answered here), then deliveries. */
static uint32_t
parts_poll(struct sl_worker *w)
{
	struct sl_partition_done done[DONE_BATCH];
	uint32_t i, k, n, work = 0;

	for (i = 0; i < w->nparts; i++) {
		struct sl_partition *p = w->parts[i];

		do {
			n = sl_partition_poll(p, w->now_ns, done, DONE_BATCH, &work);
			for (k = 0; k < n; k++)
				sl_request_held_answer(w, &done[k]);
		} while (n == DONE_BATCH);
	}
	for (i = 0; i < w->nparts; i++)
		work += sl_partition_deliver(w->parts[i], w->now_ns, emit_msg, w);
	return work;
}

/* Once per tick: peers' ARP, partitions' timers, counters of the peer module. */
static void
tick(struct sl_worker *w)
{
	const struct sl_peer_stats *ps;
	uint32_t i;

	for (i = 0; i < w->nparts; i++)
		sl_partition_tick(w->parts[i], w->now_ns);
	if (w->peer == NULL)
		return;
	/* a follower under a stream of records yields between them for the next tick or two
	 * (the idle part of sl_worker_main) */
	if (w->repl_recs >= SL_WORKER_REPL_HOT)
		w->repl_hot_until = w->now_tsc + 2 * w->tick_tsc;
	w->repl_recs = 0;
	if (w->nparts != 0)
		sl_peer_tick(w->peer, w->now_tsc);
	ps = sl_peer_stats(w->peer);
	w->st.repl_out = ps->out;
	w->st.repl_no_arp = ps->no_arp;
	w->st.repl_rej_malformed = ps->rx_malformed;
	w->st.repl_rej_not_member = ps->rx_not_member;
	w->st.repl_rej_bad_mac = ps->rx_bad_mac;
	w->st.repl_rej_replay = ps->rx_replay;
	w->st.repl_drops = w->repl_drops + ps->drops;
	w->st.drop_no_mbuf += ps->no_mbuf - w->peer_no_mbuf;
	w->peer_no_mbuf = ps->no_mbuf;
}

/* ---- commands from the control thread ---- */

static int
exec_cmd(struct sl_worker *w, struct sl_wcmd *cmd)
{
	struct sl_partition *p = cmd->p;
	uint32_t i;

	switch (cmd->op) {
	case SL_WCMD_ATTACH:
		if (p == NULL) {
			if (cmd->nparts > SL_WORKER_MAX_PARTS - w->nparts)
				return -SL_E_LIMIT;
			for (i = 0; i < cmd->nparts; i++)
				w->parts[w->nparts++] = cmd->parts[i];
			return 0;
		}
		if (w->nparts >= SL_WORKER_MAX_PARTS)
			return -SL_E_LIMIT;
		w->parts[w->nparts++] = p;
		return 0;
	case SL_WCMD_DETACH:
		for (i = 0; i < w->nparts; i++) {
			if (w->parts[i] != p)
				continue;
			w->parts[i] = w->parts[--w->nparts];
			sl_partition_detach(p, sl_request_held_drop, w);
			return 0;
		}
		return -ENOENT;
	case SL_WCMD_CHAN_CREATE:
		return sl_partition_chan_create(p, cmd->chan, cmd->ordered);
	case SL_WCMD_CHAN_DELETE:
		return sl_partition_chan_delete(p, cmd->chan);
	case SL_WCMD_CHAN_RESET:
		return sl_partition_chan_reset(p, cmd->chan, cmd->kind, cmd->value, &cmd->out_id);
	case SL_WCMD_PART_INFO:
		if (p == NULL) {
			for (i = 0; i < cmd->nparts; i++)
				sl_partition_info(cmd->parts[i], &cmd->infos[i]);
			return 0;
		}
		sl_partition_info(p, cmd->info);
		return 0;
	}
	return -EINVAL;
}

static uint32_t
poll_cmds(struct sl_worker *w)
{
	void *obj = NULL;
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

/* Publishes back from auto-creation: handled again, so they run on the new topic or are
 * answered with the reason it was not created. */
static uint32_t
poll_autocreated(struct sl_worker *w)
{
	void *obj = NULL;
	uint32_t n = 0;

	while (rte_ring_sc_dequeue(w->acdone, &obj) == 0) {
		struct sl_wautocreate *a = obj;

		w->ac_rc = a->rc != 0 ? -a->rc : SL_E_TOPIC;
		w->ac_why = a->why;
		handle_frame(w, a->m, a->pi, 0);
		w->ac_rc = 0;
		w->ac_why = NULL;
		rte_free(a);
		n++;
	}
	return n;
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
			sl_worker_tx_enqueue(w, (uint16_t)pkts[i]->hash.usr, pkts[i]);
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

/* One iteration's work: everything but the idle logic. */
static uint32_t
iterate(struct sl_worker *w)
{
	uint32_t work;

	clock_update(w);
	work = poll_cmds(w);
	work += poll_autocreated(w);
	work += poll_forwarded(w);
	if (w->idx == 0)
		work += poll_tx_handoff(w);
	work += poll_rx(w);
	work += parts_poll(w);
	if (w->now_tsc >= w->next_tick_tsc) {
		tick(w);
		w->next_tick_tsc = w->now_tsc + w->tick_tsc;
	}
	tx_flush(w);
	return work;
}

static void
clock_start(struct sl_worker *w)
{
	uint64_t hz = rte_get_tsc_hz();
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	w->tsc_base = rte_get_tsc_cycles();
	w->wall_base_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	w->ns_per_tsc = 1e9 / (double)hz;
	w->tick_tsc = hz / 1000;
}

/* ---- the idle part: interrupts (--idle interrupt) ---- */

/* On the worker lcore, before the loop: add the RX queues of this worker to the lcore's
 * own epoll set (RTE_EPOLL_PER_THREAD), and the bell. The worker may block only when
 * every queue it polls has an interrupt; it logs per port which idle it uses. */
static void
intr_setup(struct sl_worker *w)
{
	uint16_t pi;
	int ok = 1, rc;

	if (!sl_broker_idle_blocks(w->conf->idle) || w->bell.fd < 0)
		return;
	for (pi = 0; pi < w->conf->nports; pi++) {
		const struct sl_broker_port *port = &w->conf->ports[pi];

		if (w->idx >= port->nrxq)
			continue;
		rc = -ENOTSUP;
		if (!port->rx_intr && port->xsk_ready) {
			/* net_af_xdp: the queue's AF_XDP socket is readable while its RX
			 * ring holds frames (dataplane/port.c); level-triggered, so frames
			 * that came before the block wake it at once */
			struct rte_epoll_event *ev = &w->xsk_ev[pi];

			ev->epdata.event = EPOLLIN;
			ev->epdata.data = NULL;
			ev->epdata.cb_fun = NULL;
			rc = rte_epoll_ctl(RTE_EPOLL_PER_THREAD, EPOLL_CTL_ADD,
					   port->xsk_fd[w->idx], ev);
			if (rc == 0) {
				WLOG(INFO, "worker %u: %s RX queue %u: idle blocks on its AF_XDP "
					   "socket", w->idx, port->name, w->idx);
				continue;
			}
			rc = -errno;	/* logged and counted below, as a queue without one */
		}
		if (port->rx_intr)
			rc = rte_eth_dev_rx_intr_ctl_q(port->port_id, w->idx,
						       RTE_EPOLL_PER_THREAD, RTE_INTR_EVENT_ADD,
						       NULL);
		if (rc == 0) {
			/* PMDs without arming (net_tap: the queue's fd is the interrupt)
			 * answer -ENOTSUP and need none */
			rc = rte_eth_dev_rx_intr_enable(port->port_id, w->idx);
			w->intr_arm[pi] = rc == 0;
			w->intr_any_arm |= rc == 0;
			if (rc == 0)
				rte_eth_dev_rx_intr_disable(port->port_id, w->idx);
			rc = rc == -ENOTSUP ? 0 : rc;
		}
		if (rc == 0)
			WLOG(INFO, "worker %u: %s RX queue %u: idle blocks on its interrupt",
			     w->idx, port->name, w->idx);
		else if (w->conf->idle == SL_IDLE_AUTO)
			WLOG(INFO, "worker %u: %s RX queue %u: no RX interrupt (%s): adaptive "
				   "idle", w->idx, port->name, w->idx, rte_strerror(-rc));
		else
			WLOG(INFO, "worker %u: %s RX queue %u: no RX interrupt (%s): adaptive "
				   "idle sleeps, up to %u us after %u ms without work", w->idx,
			     port->name, w->idx, rte_strerror(-rc),
			     w->conf->idle_deep_us ? w->conf->idle_deep_us :
						     SL_WORKER_INTR_DEEP_US, SL_WORKER_DEEP_MS);
		ok &= rc == 0;
	}
	w->bell_ev.epdata.event = EPOLLIN;
	w->bell_ev.epdata.data = NULL;
	w->bell_ev.epdata.cb_fun = NULL;
	rc = rte_epoll_ctl(RTE_EPOLL_PER_THREAD, EPOLL_CTL_ADD, w->bell.fd, &w->bell_ev);
	if (rc != 0) {
		WLOG(WARNING, "worker %u: cannot add its bell to its epoll set: adaptive idle",
		     w->idx);
		ok = 0;
	}
	w->intr_ok = (uint8_t)ok;
}

void
sl_worker_wake(struct sl_worker *w)
{
	sl_bell_ring(&w->bell);
}

static void
intr_arm(struct sl_worker *w, int on)
{
	uint16_t pi;

	if (!w->intr_any_arm)
		return;
	for (pi = 0; pi < w->conf->nports; pi++) {
		if (!w->intr_arm[pi])
			continue;
		if (on)
			rte_eth_dev_rx_intr_enable(w->conf->ports[pi].port_id, w->idx);
		else
			rte_eth_dev_rx_intr_disable(w->conf->ports[pi].port_id, w->idx);
	}
}

/* An adaptive idle sleep of us microseconds that the bell ends early (a command, or the
 * persistence lcore after a write or a sync that may release held publishes). Frames do
 * not end it: with the client on the worker's CPU, a wake-up per datagram of a window
 * cost more than it saved (durable PUB 0.79-0.80 of the group-commit ceiling against
 * 0.86-0.87, 2026-11-28). A wake-up sent just before asleep was set is missed: the sleep
 * is bounded as a plain one. */
static void
nap(struct sl_worker *w, uint32_t us)
{
	if (w->bell.fd < 0) {
		rte_delay_us_sleep(us);
		return;
	}
	sl_bell_arm(&w->bell);
	sl_bell_wait(&w->bell, (uint64_t)us * 1000u);
	sl_bell_disarm(&w->bell);
}

/* How long the worker may block (ms), 0 when it must not: its timers. Partitions that
 * store or replicate, and the peers' ARP, are due at every tick; channels at their
 * earliest in-flight deadline or requeue time. With several workers, frames forwarded
 * between them come through rings with no interrupt: blocks are as short as
 * idle_max_us then (at least 1 ms). */
static int
intr_timeout_ms(struct sl_worker *w)
{
	uint64_t due = w->now_ns + (uint64_t)SL_WORKER_INTR_MAX_MS * 1000000u;
	uint32_t i;
	int ms;

	if (w->peer != NULL && w->nparts != 0)
		return 0;
	for (i = 0; i < w->nparts && due > w->now_ns; i++)
		due = RTE_MIN(due, sl_partition_next_due(w->parts[i], w->now_ns));
	if (due <= w->now_ns + 1000000u)
		return 0;
	ms = (int)((due - w->now_ns) / 1000000u);
	if (w->conf->nworkers > 1)
		ms = RTE_MIN(ms, (int)RTE_MAX(1u, w->conf->idle_max_us / 1000u));
	return ms;
}

/* Block until a frame, the bell or the timeout: arm the interrupts, look once more (what
 * came in before they were armed, a command enqueued before asleep was seen), and wait
 * offline for RCU. Returns 0 when it did not block (nothing held, but a timer is due
 * within a millisecond: the caller sleeps adaptively), 1 otherwise. */
static int
intr_block(struct sl_worker *w)
{
	struct rte_epoll_event ev[SL_BROKER_MAX_PORTS + 1];
	uint32_t work;
	int ms = intr_timeout_ms(w), n, i;

	if (ms == 0)
		return 0;
	/* the queues that woke us last time, if still readable, hold frames the PMD did not
	 * see yet (net_tap reads only after its SIGIO handler ran in some thread): their
	 * edge is spent, so sleep adaptively until the PMD takes them */
	if (w->nwoke > 0 && w->st.rx_pkts == w->woke_rx && poll(w->woke, w->nwoke, 0) > 0)
		return 0;
	w->nwoke = 0;
	sl_bell_arm(&w->bell);
	/* look once more: frames of queues that must be armed may have come in before,
	 * (the others stay in the epoll set, edge-triggered), a command before asleep was
	 * seen, and a PMD that reads only when told (net_tap's SIGIO) may have been told */
	intr_arm(w, 1);
	work = iterate(w);
	if (work == 0) {
		rcu_thread_offline();
		n = rte_epoll_wait_interruptible(RTE_EPOLL_PER_THREAD, ev, RTE_DIM(ev), ms);
		rcu_thread_online();
		for (i = 0; i < n; i++) {
			if (ev[i].fd == w->bell.fd) {
				sl_bell_drain(&w->bell);
			} else if (w->nwoke < RTE_DIM(w->woke)) {
				w->woke[w->nwoke].fd = ev[i].fd;
				w->woke[w->nwoke++].events = POLLIN;
			}
		}
		w->st.idle_sleeps++;
	}
	/* a burst that took frames read its queues until they were empty (or comes back):
	 * the readable check above is only for a wake-up that found none */
	w->woke_rx = w->st.rx_pkts;
	rcu_quiescent_state();
	sl_bell_disarm(&w->bell);
	intr_arm(w, 0);
	return 1;
}

/* The idle part's sched_yield() while replication waits (below): 1, or 0 when the yield
 * gave the CPU away for longer than SL_WORKER_STARVED_US. A busy neighbour took it then:
 * EEVDF pushes the deadline of a task that yields back, so a yielder loses to a CPU hog
 * for milliseconds at a time, where a task waking from a nap gets the CPU at once. The
 * worker stops yielding for SL_WORKER_STARVED_MS and naps. */
static int
repl_yield(struct sl_worker *w)
{
	uint64_t t0;

	if (w->now_tsc < w->yield_off_until)
		return 0;
	t0 = rte_get_tsc_cycles();
	sched_yield();
	if (rte_get_tsc_cycles() - t0 > w->starved_tsc) {
		w->yield_off_until = t0 + rte_get_tsc_hz() / 1000 * SL_WORKER_STARVED_MS;
		w->st.yield_starved++;
	}
	return 1;
}

int
sl_worker_main(void *arg)
{
	struct sl_worker *w = arg;
	uint32_t empty = 0, sleep_us = 0, cap, deep_us, polls;
	uint64_t last_work = rte_get_tsc_cycles();
	const uint64_t deep_tsc = rte_get_tsc_hz() / 1000 * SL_WORKER_DEEP_MS;
	const uint64_t spin_tsc = rte_get_tsc_hz() / 1000000 * SL_WORKER_REPL_SPIN_US;
	const uint64_t follow_tsc = rte_get_tsc_hz() / 1000000 * SL_WORKER_REPL_FOLLOW_US;

	clock_start(w);
	w->starved_tsc = rte_get_tsc_hz() / 1000000 * SL_WORKER_STARVED_US;
	/* adaptive idle sleeps for tens of microseconds: without this, the kernel's default
	 * 50 us timer slack stretches each one (and a peer's answer waits for it) */
	if (w->conf->idle != SL_IDLE_BUSY)
		prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
	rcu_register_thread();
	intr_setup(w);
	polls = w->conf->idle_polls ? w->conf->idle_polls : 32;
	deep_us = w->conf->idle_deep_us;
	if (deep_us == 0 && w->conf->idle == SL_IDLE_INTERRUPT && !w->intr_ok)
		deep_us = SL_WORKER_INTR_DEEP_US;
	WLOG(INFO, "worker %u running on lcore %u", w->idx, w->lcore);
	while (!__atomic_load_n(&sl_broker_quit, __ATOMIC_RELAXED)) {
		uint64_t start = rte_get_tsc_cycles();
		uint32_t work = iterate(w);

		rcu_quiescent_state();
		if (work > 0) {
			uint64_t end = rte_get_tsc_cycles();

			w->st.busy_cycles += end - start;
			w->st.total_cycles += end - start;
			empty = 0;
			sleep_us = 0;
			last_work = end;
			continue;
		}
		w->st.total_cycles += rte_get_tsc_cycles() - start;
		if (w->conf->idle == SL_IDLE_BUSY || ++empty < polls)
			continue;
		/* interrupt idle: nothing held for the disk or the replicas (their OKs go out
		 * when this lcore looks again: bounded sleeps below) */
		if (w->intr_ok && w->nheld_free == SL_WORKER_HELD && intr_block(w)) {
			empty = 0;
			sleep_us = 0;
			continue;
		}
		/* idle: go offline so grace periods do not wait for us, sleep, back off */
		/* a long silence (no work for SL_WORKER_DEEP_MS) may sleep longer */
		cap = w->conf->idle_max_us;
		if (deep_us > cap && w->now_tsc - last_work > deep_tsc)
			cap = deep_us;
		sleep_us = sleep_us ? RTE_MIN(sleep_us * 2, cap) :
			   RTE_MIN(w->conf->idle_min_us ? w->conf->idle_min_us : 10, cap);
		/* publishes held for the disk or the replicas: their OKs go out once this
		 * lcore looks again, so it never sleeps long while any waits (as the
		 * persistence lcore with stores attached) */
		if (w->nheld_free < SL_WORKER_HELD)
			sleep_us = RTE_MIN(sleep_us, SL_WORKER_HELD_IDLE_US);
		/* publishes held for the replicas: their answer comes with the followers'
		 * acks, frames that no bell announces. Until SL_WORKER_REPL_SPIN_US after
		 * the last work, look again after a sched_yield (whatever else is runnable
		 * on this CPU runs first) instead of a nap: RF=3 over memif and taps +20-24 %
		 * (tools/bench/run --only replication, 2026-11-28; naps of 5 us instead cost
		 * RF=3 four fifths, each wake-up taking the CPU of a follower) */
		if (w->nheld_repl > 0 && w->now_tsc - last_work < spin_tsc && repl_yield(w))
			continue;
		/* a follower under a stream of records (SL_WORKER_REPL_HOT in a tick): the
		 * leader's next WRITE comes about a round trip of its client after the last,
		 * and a nap makes the whole round trip wait for it. Until
		 * SL_WORKER_REPL_FOLLOW_US after the last records, look again after a
		 * sched_yield(). Under light load it naps: a yield per record would cost more
		 * CPU than the latency it saves */
		if (w->now_tsc < w->repl_hot_until && w->now_tsc - w->repl_rec_tsc < follow_tsc &&
		    repl_yield(w)) {
			w->st.follow_yields++;
			continue;
		}
		rcu_thread_offline();
		nap(w, sleep_us);
		rcu_thread_online();
		w->st.idle_sleeps++;
	}
	rcu_unregister_thread();
	WLOG(INFO, "worker %u stopped", w->idx);
	return 0;
}

/* ---- set-up (control thread) ---- */

int
sl_worker_setup(struct sl_worker *w)
{
	const struct sl_broker_conf *c = w->conf;
	struct sl_peer_conf pc = {
		.bconf = c,
		.arp_retry_tsc = rte_get_tsc_hz() / 1000 * ARP_RETRY_MS,
		.tx = peer_tx,
		.tx_arg = w,
		.lane = (uint8_t)w->idx,
	};
	struct sl_mpart_conf mc = {0};
	struct timespec now;
	uint32_t i;

	/* the bell ends adaptive naps and interrupt blocks early (commands, the persistence
	 * lcore's notifications): every mode but busy sleeps */
	if (c->idle != SL_IDLE_BUSY) {
		int rc = sl_bell_open(&w->bell);

		if (rc < 0)
			return rc;
	}
	/* replica sequences start at the wall clock: a restarted node numbers past
	 * everything it sent before (rlink.h) */
	clock_gettime(CLOCK_REALTIME, &now);
	pc.seq0 = (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;

	w->held = rte_zmalloc_socket("sl_held", sizeof(*w->held) * SL_WORKER_HELD,
				     RTE_CACHE_LINE_SIZE, c->socket_id);
	w->held_free = rte_malloc_socket("sl_held_free", sizeof(*w->held_free) * SL_WORKER_HELD,
					 RTE_CACHE_LINE_SIZE, c->socket_id);
	w->mpart = rte_malloc_socket("sl_mpart", sizeof(*w->mpart), RTE_CACHE_LINE_SIZE,
				     c->socket_id);
	if (w->held == NULL || w->held_free == NULL || w->mpart == NULL)
		return -ENOMEM;
	(void)sl_mpart_init(w->mpart, &mc);
	for (i = 0; i < SL_WORKER_HELD; i++)
		w->held_free[i] = SL_WORKER_HELD - 1 - i;
	w->nheld_free = SL_WORKER_HELD;
	if (c->repl_port == 0)
		return 0;
	w->peer = sl_peer_open(&pc);
	w->rbuf = rte_malloc_socket("sl_rbuf", SL_PARTITION_SCRATCH, 64, c->socket_id);
	return w->peer != NULL && w->rbuf != NULL ? 0 : -ENOMEM;
}

void
sl_worker_teardown(struct sl_worker *w)
{
	uint32_t i;

	for (i = 0; w->held != NULL && i < SL_WORKER_HELD; i++)
		if (w->held[i].used)
			rte_pktmbuf_free(w->held[i].m);
	for (i = 0; i < SL_BROKER_MAX_PORTS; i++) {
		rte_pktmbuf_free(w->bun[i]);
		w->bun[i] = NULL;
	}
	rte_free(w->held);
	rte_free(w->held_free);
	rte_free(w->mpart);
	w->mpart = NULL;
	sl_peer_close(w->peer);
	rte_free(w->rbuf);
	sl_bell_close(&w->bell);
	w->held = NULL;
	w->held_free = NULL;
	w->peer = NULL;
	w->rbuf = NULL;
}

/* A partition's replication datagram, through this worker's peer addressing. */
static void
repl_send(void *arg, uint32_t to, const char *topic, uint8_t topic_len, uint16_t partition,
	  const void *buf, uint32_t len)
{
	struct sl_worker *w = arg;

	sl_peer_send(w->peer, to, topic, topic_len, partition, buf, len, w->now_tsc);
}

uint32_t
sl_worker_repl_dgram(const struct sl_broker_conf *c)
{
	uint16_t mtu = 9000, i;

	if (c->repl_port == 0)
		return 0;
	for (i = 0; i < c->nports; i++)
		mtu = RTE_MIN(mtu, c->ports[i].mtu);
	return RTE_MIN((uint32_t)SL_REPL_MAX_DGRAM, (uint32_t)mtu - 28 - SL_RLINK_OVERHEAD);
}

int
sl_worker_partition_replicate(struct sl_worker *w, struct sl_partition *p, const char *topic)
{
	const struct sl_broker_conf *c = w->conf;
	struct sl_partition_repl_conf rc = {
		.topic = topic,
		.send = repl_send,
		.send_arg = w,
		.viewreq = w->viewreq,
		.scratch = w->rbuf,
		.isr_lag_ns = (uint64_t)c->isr_lag_ms * 1000000,
	};

	rc.max_dgram = sl_worker_repl_dgram(c);
	return sl_partition_replicate(p, &rc);
}
