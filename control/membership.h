/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * membership: the membership seam. The one interface through which a node learns who is in
 * its cluster (the node list) and what each partition's view is (leader, epoch, leader
 * session, replicas, ISR, writes), and through which every change to a view goes:
 *
 *   - ISR change requests from the data path: a partition leader asks to drop a lagging
 *     member (SL_VIEWREQ_ISR_LEAVE) or to take back one that caught up
 *     (SL_VIEWREQ_ISR_JOIN); a replica reports the ISR its leader announced
 *     (SL_VIEWREQ_LEADER_ISR). Workers post them to the broker's ring (partition_repl.c);
 *     sl_membership_poll() takes them (sl_broker_viewreq_take) and hands them to the
 *     backend, which decides and installs the new view (sl_broker_part_set_view);
 *   - leader changes and other operator edits (`sluicectl partition set`):
 *     sl_membership_set_view().
 *
 * A backend is a table of operations (struct sl_membership_ops). The first is "static": the
 * cluster file given by --cluster (control/cluster.h; no file: a single node with no
 * replicated partitions), whose decisions are taken and applied on this node alone. The
 * etcd-backed controller plugs in as a second backend: it writes a request to etcd (compare
 * and swap on the partition key) before it applies it, and learns other nodes' changes by
 * watch from poll(). The data path does not change with the backend.
 *
 * The policy that decides whether a request changes a view (sl_membership_isr_next) and the
 * rules an operator edit must follow (sl_membership_view_next) are pure functions: no EAL,
 * no broker, unit-tested on their own.
 *
 * Calling context: everything here runs on the control thread (an online RCU QSBR reader
 * where it touches the broker), except the two pure functions (any thread).
 */
#ifndef SL_MEMBERSHIP_H
#define SL_MEMBERSHIP_H

#include <stddef.h>
#include <stdint.h>

#include "broker.h"
#include "coord.h"
#include "json.h"
#include "partition.h"

#define SL_MEMBERSHIP_MAX_NODES 64
#define SL_MEMBERSHIP_ETCD_PREFIX "/sluice/default"
#define SL_MEMBERSHIP_ETCD_TTL_S 2
#define SL_MEMBERSHIP_POS_MS 150	/* etcd: positions published at most this often */

/* A member node. */
struct sl_membership_node {
	uint32_t id;
	uint32_t ip;			/* host byte order */
	uint16_t port;			/* replica UDP port */
};

struct sl_membership_conf {
	const char *backend;		/* "static" (NULL: "static") */
	const char *source;		/* static: the cluster file (NULL: single node);
					 * etcd: the endpoints, "http://H:P[,http://H:P...]" */
	uint32_t node_id;		/* this node */
	/* etcd only (docs/cluster.md) */
	const char *prefix;		/* key prefix (NULL: SL_MEMBERSHIP_ETCD_PREFIX) */
	uint32_t ip;			/* this node's replica address (host byte order) */
	uint16_t port;			/* this node's replica UDP port */
	uint32_t lease_ttl_s;		/* node lease TTL (0: SL_MEMBERSHIP_ETCD_TTL_S) */
	char *err;			/* open: what is wrong, "FILE:LINE: ..." (may be NULL) */
	size_t err_len;
};

struct sl_membership;

/* A backend. Every operation runs on the control thread. */
struct sl_membership_ops {
	const char *name;
	/* Read the configuration (conf->source); fill m->nodes. 0 or a negative errno with
	 * conf->err set. */
	int (*open)(struct sl_membership *m, const struct sl_membership_conf *conf);
	/* Install the views known at start into the broker (creating their topics). */
	int (*start)(struct sl_membership *m);
	/* A request from the data path: decide, record where the backend keeps views, and
	 * install the result. 1 if the view changed, 0 if not, or a negative error. */
	int (*request)(struct sl_membership *m, const struct sl_wviewreq *q);
	/* An operator's new view (already checked by sl_membership_view_next). 0 or a
	 * negative error. */
	int (*set_view)(struct sl_membership *m, const char *topic, uint16_t part,
			const struct sl_part_meta *next);
	/* Periodic work (watches, lease keep-alive): may be NULL. */
	void (*poll)(struct sl_membership *m);
	/* Block until fd is readable, the backend has work for poll (a watch event), or
	 * timeout_ms. May be NULL: a poll() on fd alone. */
	int (*wait)(struct sl_membership *m, int fd, int timeout_ms);
	/* Free the backend's state: may be NULL. */
	void (*close)(struct sl_membership *m);
	/* A cluster-wide topic (`sluicectl topic create ... --replicas R`): record it where
	 * the backend keeps topics; its partitions are placed by the controller. May be NULL
	 * (the static backend: topics are local). 0 or a negative error. */
	int (*topic_create)(struct sl_membership *m, const char *name, uint16_t nparts,
			    uint8_t replicas, int disk);
	/* The backend's own state for `status` and `cluster show` (store reachable, fencing,
	 * controller) into an open JSON object. May be NULL. */
	void (*describe)(struct sl_membership *m, struct sl_json *out);
	/* Is node id alive as far as the backend knows: 1, 0, or -1 (it cannot tell); and
	 * is it the controller (*controller). May be NULL (-1, not controller). */
	int (*node_state)(struct sl_membership *m, uint32_t id, int *controller);
	/* Start moving a partition to the replicas ids[0..n) (sl_membership_move). May be
	 * NULL (not supported). */
	int (*move)(struct sl_membership *m, const char *topic, uint16_t part,
		    const uint32_t *ids, uint8_t n, char *err, size_t err_len);
	/* The last move's state into an open JSON object. May be NULL. */
	void (*move_status)(struct sl_membership *m, struct sl_json *out);
};

/* What the failover choice knows of one ISR member (sl_membership_failover_next). */
struct sl_membership_pos {
	uint8_t live;			/* its node is alive */
	uint8_t known;			/* it published its positions */
	uint8_t avoid;			/* lead only if no other is as long (the controller) */
	uint64_t committed;		/* its committed end (id) */
	uint64_t end;			/* its log end (id) */
};

/* The handle: the backend's operations, the node list, the broker once attached. */
struct sl_membership {
	const struct sl_membership_ops *ops;
	uint32_t node_id;
	uint32_t nnodes;
	struct sl_membership_node nodes[SL_MEMBERSHIP_MAX_NODES];
	struct sl_broker *broker;	/* set by sl_membership_start */
	void *priv;			/* the backend's own state */
	uint64_t requests;		/* requests taken from the data path */
	uint64_t changes;		/* views changed by them */
};

/** The static backend: the --cluster file (control/membership_static.c). */
extern const struct sl_membership_ops sl_membership_static_ops;
/** The etcd backend: nodes, controller and views in etcd (control/membership_etcd.c,
 * docs/cluster.md). */
extern const struct sl_membership_ops sl_membership_etcd_ops;

/**
 * Open the membership backend named in conf and read its node list. No EAL needed.
 * Returns NULL with rte_errno set (EINVAL: bad conf or file, ENOENT: unknown backend,
 * ENOMEM) and, where it can, conf->err saying what is wrong. Control thread.
 */
struct sl_membership *
sl_membership_open(const struct sl_membership_conf *conf);

/** The node with this id, or NULL. Control thread. */
const struct sl_membership_node *
sl_membership_node(const struct sl_membership *m, uint32_t id);

/** Attach the broker and install the views the backend knows (creating their topics).
 * 0 or a negative error (logged, naming the partition). Control thread. */
int
sl_membership_start(struct sl_membership *m, struct sl_broker *b);

/** Take every ISR change request the workers posted and hand each to the backend; then the
 * backend's periodic work. Returns the number of requests taken. Control thread, online
 * RCU reader. */
int
sl_membership_poll(struct sl_membership *m);

/** Block until fd (the control socket) is readable, the backend has something for
 * sl_membership_poll (an etcd watch event), or timeout_ms. Control thread, offline for
 * RCU. */
int
sl_membership_wait(struct sl_membership *m, int fd, int timeout_ms);

/**
 * An operator's edit of a partition's view: `next` starts as a copy of the current view
 * with the operator's changes; sl_membership_view_next applies the leadership rules, then
 * the backend records and installs it. On success *next holds the view installed. 0, or
 * -SL_E_INVAL with err set (a view that breaks the rules), or the broker's error
 * (-SL_E_TOPIC, -SL_E_PARTITION, -SL_E_EPOCH). Control thread, online RCU reader.
 */
int
sl_membership_set_view(struct sl_membership *m, const char *topic, uint16_t part,
		       struct sl_part_meta *next, char *err, size_t err_len);

/** Create a topic cluster-wide (nparts partitions of `replicas` replicas, disk or memory
 * durability) through the backend: -ENOTSUP when the backend keeps topics per node (static),
 * else 0 or a negative error. Control thread, online RCU reader. */
int
sl_membership_topic_create(struct sl_membership *m, const char *name, uint16_t nparts,
			   uint8_t replicas, int disk);

/**
 * Describe the cluster as this node sees it into out (an open JSON object): "backend" and
 * the backend's state (etcd: "etcd_reachable", "fenced", "controller", ...); with nodes != 0
 * also "nodes": every node known (id, address, alive, controller, the partitions it leads
 * in this node's installed views, "topic/partition"). Control thread, online RCU reader.
 */
void
sl_membership_describe(struct sl_membership *m, struct sl_json *out, int nodes);

/**
 * Start moving a partition to the replicas ids[0..n): the view first gets the union of the
 * old and new replicas (the new ones follow the leader, catch up and join the ISR, as a
 * restarted node does), then, once every new replica is in the ISR, the target replicas
 * with the ISR within them, and a new leader (next epoch and session) if the old one is
 * not among them. Returns once the first step is written: 0, -ENOTSUP (the backend cannot:
 * static), or an error with err set; the progress is in sl_membership_move_status. Control
 * thread, online RCU reader.
 */
int
sl_membership_move(struct sl_membership *m, const char *topic, uint16_t part,
		   const uint32_t *ids, uint8_t n, char *err, size_t err_len);

/** The last move started on this node ("move": state, catch-up time, leaders, the time to
 * the new leader's first write) into an open JSON object. Control thread. */
void
sl_membership_move_status(struct sl_membership *m, struct sl_json *out);

/** Close the backend and free the handle (NULL is fine). Control thread. */
void
sl_membership_close(struct sl_membership *m);

/**
 * The policy for a request from the data path: given the partition's current view `cur`,
 * the request `q` and this node's id, compute the next view. Returns 1 with *next set when
 * the view changes, 0 when the request changes nothing or must be ignored:
 *   ISR_LEAVE: the member is in the ISR and is not the leader -> removed;
 *   ISR_JOIN: the member is a replica not yet in the ISR -> added;
 *   LEADER_ISR: this node is a replica (not the leader) of the same leadership (epoch and
 *   session), the announced ISR holds the leader, only replicas, and differs from ours ->
 *   taken.
 * Any thread (pure).
 */
int
sl_membership_isr_next(const struct sl_part_meta *cur, const struct sl_wviewreq *q,
		       uint32_t self, struct sl_part_meta *next);

/**
 * The rules for an operator's edit: a new leader is a new leadership, so unless the edit
 * names them the epoch becomes cur's + 1 and the leader session cur's + 1; the view must be
 * valid (sl_cluster_check_meta: the leader and ISR members are replicas, no duplicates, the
 * ISR holds the leader). Adjusts *next; 0 or -SL_E_INVAL with err set. That the epoch never
 * goes back is the broker's rule (sl_broker_part_set_view: -SL_E_EPOCH). Any thread (pure).
 */
int
sl_membership_view_next(const struct sl_part_meta *cur, struct sl_part_meta *next, char *err,
			size_t err_len);

/**
 * The failover choice: given a partition's view `cur` and, for each ISR member (index as in
 * cur->isr), whether it is alive and its published positions, compute the next view when
 * the leader is gone. The new ISR is the live ISR members (in their order); the new leader
 * the live member holding the longest log: the highest log end, then the highest committed
 * end; a member whose positions are unknown ranks below every known one; then one not marked
 * avoid; remaining ties go to the first in ISR order. Epoch and leader session + 1, writes enabled.
 * Returns 1 with *next set, 0 when the leader is alive (nothing to do), -1 when no ISR
 * member is alive (no unclean election). Any thread (pure).
 */
int
sl_membership_failover_next(const struct sl_part_meta *cur,
			    const struct sl_membership_pos *isr_pos, struct sl_part_meta *next);

/**
 * The etcd backend's placement of partition `part` of a topic of `replicas` replicas over
 * the live nodes live[0..n) (ids in ascending order): the replicas are live[part mod n],
 * live[part + 1 mod n], ..., the first leads (leaders spread evenly), epoch 1, leader
 * session 1, the ISR the replicas, writes on. 0, or -1 when fewer than `replicas` nodes are
 * live. Any thread (pure).
 */
int
sl_membership_place(const uint32_t *live, uint32_t n, uint16_t part, uint8_t replicas,
		    struct sl_part_meta *out);

/** A view as the etcd backend stores it: {"leader","epoch","leader_session","replicas",
 * "isr","writable"} (docs/cluster.md); a string to free(), or NULL (no memory). Any
 * thread (pure). */
char *
sl_membership_view_json(const struct sl_part_meta *m);

/** Parse a stored view into *m: 0, or -EINVAL (not JSON, a field missing or out of range,
 * or a view that breaks sl_cluster_check_meta). Any thread (pure). */
int
sl_membership_view_parse(const char *s, size_t len, struct sl_part_meta *m);

#endif /* SL_MEMBERSHIP_H */
