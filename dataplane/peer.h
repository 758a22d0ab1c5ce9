/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * peer: how one worker lcore reaches the other nodes of the cluster. It knows the member
 * nodes (sl_broker_conf.nodes) and the port each is routed through, resolves their MAC
 * addresses by ARP (ahead of need, once per tick, and again when a send finds none),
 * wraps replication datagrams in the replica envelope (rlink.h: numbered per lane and
 * tagged with the link key) and UDP/IPv4, and checks what arrives on the replica port
 * before anything else reads it: a well-formed envelope addressed to this node, from a
 * member's address and replica port, with a good tag and a sequence not seen before.
 * Frames leave through the worker's TX batch (the tx callback).
 *
 * One per worker lcore; every call runs on that lcore (the ARP tables have one writer,
 * and lock-free readers anywhere). No allocation but one mbuf per datagram sent.
 */
#ifndef SL_PEER_H
#define SL_PEER_H

#include <stdint.h>

#include <rte_mbuf.h>

#include "broker.h"
#include "net.h"
#include "rlink.h"

/* Hand a built frame to the worker's TX batch of port index pi; offload: set the
 * port's checksum offloads for a UDP/IPv4 frame. The callee owns m afterwards. */
typedef void (*sl_peer_tx_fn)(void *arg, uint16_t pi, struct rte_mbuf *m, int offload);

struct sl_peer_conf {
	const struct sl_broker_conf *bconf;	/* nodes, ports, pool, node id, repl port,
						 * cluster keys */
	uint8_t lane;				/* this worker's index (< MAX_WORKERS) */
	uint64_t seq0;				/* first sequence: wall clock ns now */
	uint64_t arp_retry_tsc;			/* at most one ARP request per node per */
	sl_peer_tx_fn tx;
	void *tx_arg;
};

struct sl_peer_stats {
	uint64_t out;		/* datagrams sent */
	uint64_t no_arp;	/* not sent: the peer's MAC unknown yet (ARP asked) */
	uint64_t drops;		/* not sent: unknown node, too big */
	uint64_t no_mbuf;
	/* received and refused, by cause (each also makes -EBADMSG) */
	uint64_t rx_malformed;	/* not an envelope of this version, or a bad lane */
	uint64_t rx_not_member;	/* not for this node, or not from a member's address and
				 * replica port */
	uint64_t rx_bad_mac;	/* tag wrong, or made with a key this node does not hold */
	uint64_t rx_replay;	/* sequence seen before or older than the window */
};

struct sl_peer;

/** Create (ARP table per port). Control thread. NULL with rte_errno. */
struct sl_peer *
sl_peer_open(const struct sl_peer_conf *conf);

/** Free. Control thread, once the worker has stopped. NULL is a no-op. */
void
sl_peer_close(struct sl_peer *pr);

/** Send a replication datagram (buf, len) about topic/partition to node `to`. Dropped
 * (and counted) while its MAC is unknown: replication retransmits. Owner lcore. */
void
sl_peer_send(struct sl_peer *pr, uint32_t to, const char *topic, uint8_t topic_len,
	     uint16_t partition, const void *buf, uint32_t len, uint64_t now_tsc);

/** Once per tick: ask for the MACs of members not resolved yet. Owner lcore. */
void
sl_peer_tick(struct sl_peer *pr, uint64_t now_tsc);

/**
 * A datagram to the replica port (payload of len bytes, received on port index pi):
 * 0 and *env when it is a replica envelope addressed to this node from a member's address
 * and replica port, with a good tag and a new sequence (the sender's MAC is learned),
 * else -EBADMSG, counted by cause. Nothing past the fixed header is read before the tag
 * is checked. Owner lcore; the caller keeps the buffer.
 */
int
sl_peer_input(struct sl_peer *pr, uint16_t pi, const struct sl_net_info *info,
	      const uint8_t *payload, uint32_t len, uint64_t now_tsc,
	      struct sl_rlink_env *env);

/** An ARP reply received on port index pi. Owner lcore. */
void
sl_peer_arp_learn(struct sl_peer *pr, uint16_t pi, const struct sl_net_info *info,
		  uint64_t now_tsc);

/** Counters (racy reads from other threads are fine). */
const struct sl_peer_stats *
sl_peer_stats(const struct sl_peer *pr);

#endif /* SL_PEER_H */
