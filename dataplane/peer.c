/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * peer: node addressing for replication (peer.h).
 */
#include <errno.h>
#include <string.h>

#include <rte_common.h>
#include <rte_errno.h>
#include <rte_malloc.h>

#include "peer.h"

struct sl_peer {
	struct sl_peer_conf conf;
	struct sl_net_arp *arp[SL_BROKER_MAX_PORTS];	/* neighbours, per port */
	uint64_t asked_tsc[SL_BROKER_MAX_NODES];	/* last ARP request per node */
	struct sl_peer_stats st;
	uint8_t nkeys;					/* 0: no tags (insecure) */
	uint32_t nknown;	/* nodes [0, nknown) of the broker's table are set up here: a
				 * node added at run time (sl_broker_node_add) counts from the
				 * next sl_peer_tick on */
	uint64_t tx_seq[SL_BROKER_MAX_NODES];		/* next sequence, per receiver */
	uint64_t boot;		/* random, drawn at open: with the lane and the sequence, the
				 * tags' nonce (rlink.h) */
	/* link keys by node index: this node -> node (first cluster key), node -> this
	 * node (every cluster key) */
	struct sl_rlink_key tx_key[SL_BROKER_MAX_NODES];
	struct sl_rlink_key rx_key[SL_BROKER_MAX_KEYS][SL_BROKER_MAX_NODES];
	struct sl_rlink_replay win[SL_BROKER_MAX_NODES][SL_BROKER_MAX_WORKERS];
};

/* Every link key of this node for the nodes the table holds beyond those already set up:
 * tags for what it sends, checks for what it receives. The table only grows; its count is
 * published with a release store after the entry (sl_broker_node_add). */
static void
derive_keys(struct sl_peer *pr)
{
	const struct sl_broker_conf *bc = pr->conf.bconf;
	uint32_t i, k, n = __atomic_load_n(&bc->nnodes, __ATOMIC_ACQUIRE);

	pr->nkeys = bc->ncluster_keys;
	for (i = pr->nknown; i < n; i++) {
		pr->tx_seq[i] = pr->conf.seq0;
		if (pr->nkeys == 0)
			continue;
		sl_rlink_key_derive(&pr->tx_key[i], bc->cluster_keys[0], bc->node_id,
				    bc->nodes[i].id);
		for (k = 0; k < pr->nkeys; k++)
			sl_rlink_key_derive(&pr->rx_key[k][i], bc->cluster_keys[k],
					    bc->nodes[i].id, bc->node_id);
	}
	pr->nknown = n;
}

struct sl_peer *
sl_peer_open(const struct sl_peer_conf *conf)
{
	const struct sl_broker_conf *bc = conf->bconf;
	struct sl_peer *pr;
	uint16_t j;

	if (bc == NULL || conf->tx == NULL || bc->nports > SL_BROKER_MAX_PORTS ||
	    bc->nnodes > SL_BROKER_MAX_NODES || conf->lane >= SL_BROKER_MAX_WORKERS ||
	    bc->ncluster_keys > SL_BROKER_MAX_KEYS || sodium_init() < 0) {
		rte_errno = EINVAL;
		return NULL;
	}
	pr = rte_zmalloc_socket("sl_peer", sizeof(*pr), RTE_CACHE_LINE_SIZE, bc->socket_id);
	if (pr == NULL)
		goto nomem;
	pr->conf = *conf;
	randombytes_buf(&pr->boot, sizeof(pr->boot));
	for (j = 0; j < bc->nports; j++) {
		pr->arp[j] = rte_zmalloc_socket("sl_arp", sizeof(*pr->arp[j]),
						RTE_CACHE_LINE_SIZE, bc->socket_id);
		if (pr->arp[j] == NULL)
			goto nomem;
	}
	derive_keys(pr);
	return pr;
nomem:
	sl_peer_close(pr);
	rte_errno = ENOMEM;
	return NULL;
}

void
sl_peer_close(struct sl_peer *pr)
{
	uint16_t j;

	if (pr == NULL)
		return;
	for (j = 0; j < SL_BROKER_MAX_PORTS; j++)
		rte_free(pr->arp[j]);
	sodium_memzero(pr, sizeof(*pr));
	rte_free(pr);
}

static const struct sl_broker_node *
node_of(const struct sl_peer *pr, uint32_t id)
{
	const struct sl_broker_conf *bc = pr->conf.bconf;
	uint32_t i;

	for (i = 0; i < pr->nknown; i++)
		if (bc->nodes[i].id == id)
			return &bc->nodes[i];
	return NULL;
}

/* An ARP request for node n, at most one per arp_retry_tsc. */
static void
arp_ask(struct sl_peer *pr, const struct sl_broker_node *n, uint64_t now_tsc)
{
	const struct sl_broker_conf *bc = pr->conf.bconf;
	uint64_t *asked = &pr->asked_tsc[n - bc->nodes];
	struct rte_mbuf *m;
	uint32_t flen;

	if (now_tsc - *asked < pr->conf.arp_retry_tsc)
		return;
	*asked = now_tsc;
	m = rte_pktmbuf_alloc(bc->pool);
	if (m == NULL) {
		pr->st.no_mbuf++;
		return;
	}
	flen = sl_net_arp_request(rte_pktmbuf_mtod(m, uint8_t *), &bc->ports[n->pi].nif, n->ip);
	m->data_len = (uint16_t)flen;
	m->pkt_len = flen;
	pr->conf.tx(pr->conf.tx_arg, n->pi, m, 0);
}

void
sl_peer_tick(struct sl_peer *pr, uint64_t now_tsc)
{
	const struct sl_broker_conf *bc = pr->conf.bconf;
	const struct sl_broker_node *n;
	uint8_t mac[6];
	uint32_t i;

	if (bc->repl_port == 0)
		return;
	if (pr->nknown != __atomic_load_n(&bc->nnodes, __ATOMIC_RELAXED))
		derive_keys(pr);
	for (i = 0; i < pr->nknown; i++) {
		n = &bc->nodes[i];
		if (n->id != bc->node_id && sl_net_arp_lookup(pr->arp[n->pi], n->ip, mac) != 0)
			arp_ask(pr, n, now_tsc);
	}
}

void
sl_peer_send(struct sl_peer *pr, uint32_t to, const char *topic, uint8_t topic_len,
	     uint16_t partition, const void *buf, uint32_t len, uint64_t now_tsc)
{
	const struct sl_broker_conf *bc = pr->conf.bconf;
	const struct sl_broker_node *n = node_of(pr, to);
	const struct sl_broker_port *port;
	struct sl_rlink_env env = {
		.from = bc->node_id,
		.to = to,
		.partition = partition,
		.name = topic,
		.name_len = topic_len,
		.lane = pr->conf.lane,
	};
	uint8_t mac[6], *frame;
	struct rte_mbuf *m;
	uint32_t flen, ni, room;
	int elen;

	if (n == NULL) {
		pr->st.drops++;
		return;
	}
	ni = (uint32_t)(n - bc->nodes);
	env.key_id = pr->nkeys ? pr->tx_key[ni].id : 0;
	env.seq = pr->tx_seq[ni];
	env.boot = pr->boot;
	port = &bc->ports[n->pi];
	if (sl_net_arp_lookup(pr->arp[n->pi], n->ip, mac) != 0) {
		pr->st.no_arp++;
		arp_ask(pr, n, now_tsc);
		return;
	}
	m = rte_pktmbuf_alloc(bc->pool);
	if (m == NULL) {
		pr->st.no_mbuf++;
		return;
	}
	frame = rte_pktmbuf_mtod(m, uint8_t *);
	room = RTE_MIN((uint32_t)rte_pktmbuf_tailroom(m) - SL_NET_HDRS_LEN,
		       (uint32_t)port->mtu - 28);
	elen = sl_rlink_encode(frame + SL_NET_HDRS_LEN, room, &env);
	if (elen < 0 || (uint32_t)elen + len > room) {
		pr->st.drops++;
		rte_pktmbuf_free(m);
		return;
	}
	memcpy(frame + SL_NET_HDRS_LEN + elen, buf, len);
	elen = sl_rlink_seal(frame + SL_NET_HDRS_LEN, (uint32_t)elen + len, room,
			     pr->nkeys ? &pr->tx_key[ni] : NULL);
	if (elen < 0) {
		pr->st.drops++;
		rte_pktmbuf_free(m);
		return;
	}
	pr->tx_seq[ni]++;
	flen = sl_net_udp_build(frame, &port->nif, mac, n->ip, bc->repl_port, n->port,
				(uint16_t)elen, port->tx_flags);
	m->data_len = (uint16_t)flen;
	m->pkt_len = flen;
	pr->conf.tx(pr->conf.tx_arg, n->pi, m, 1);
	pr->st.out++;
}

/* The link key a datagram from node index ni says it was tagged with, or NULL. */
static const struct sl_rlink_key *
rx_key_of(const struct sl_peer *pr, uint32_t ni, uint8_t key_id)
{
	uint8_t k;

	for (k = 0; k < pr->nkeys; k++)
		if (pr->rx_key[k][ni].id == key_id)
			return &pr->rx_key[k][ni];
	return NULL;
}

int
sl_peer_input(struct sl_peer *pr, uint16_t pi, const struct sl_net_info *info,
	      const uint8_t *payload, uint32_t len, uint64_t now_tsc,
	      struct sl_rlink_env *env)
{
	const struct sl_broker_conf *bc = pr->conf.bconf;
	const struct sl_broker_node *n;
	const struct sl_rlink_key *k = NULL;
	struct sl_rlink_replay *win;
	uint32_t ni;

	if (sl_rlink_decode(payload, len, env) != 0 || env->lane >= SL_BROKER_MAX_WORKERS) {
		pr->st.rx_malformed++;
		return -EBADMSG;
	}
	n = node_of(pr, env->from);
	if (env->to != bc->node_id || n == NULL || n->id == bc->node_id ||
	    info->src_ip != n->ip || info->src_port != n->port) {
		pr->st.rx_not_member++;
		return -EBADMSG;
	}
	ni = (uint32_t)(n - bc->nodes);
	if (pr->nkeys != 0) {
		k = rx_key_of(pr, ni, env->key_id);
		if (k == NULL || sl_rlink_verify(payload, len, k) != 0) {
			pr->st.rx_bad_mac++;
			return -EBADMSG;
		}
	} else if (env->key_id != 0) {
		pr->st.rx_bad_mac++;
		return -EBADMSG;
	}
	win = &pr->win[ni][env->lane];
	if (sl_rlink_replay_check(win, env->seq) != 0) {
		pr->st.rx_replay++;
		return -EBADMSG;
	}
	sl_rlink_replay_mark(win, env->seq);
	sl_net_arp_learn(pr->arp[pi], info->src_ip, info->src_mac, now_tsc);
	return 0;
}

void
sl_peer_arp_learn(struct sl_peer *pr, uint16_t pi, const struct sl_net_info *info,
		  uint64_t now_tsc)
{
	sl_net_arp_learn(pr->arp[pi], info->src_ip, info->src_mac, now_tsc);
}

const struct sl_peer_stats *
sl_peer_stats(const struct sl_peer *pr)
{
	return &pr->st;
}
