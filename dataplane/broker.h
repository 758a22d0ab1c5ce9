/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * broker: one sluiced node's dataplane as seen by the control thread. It owns the ports'
 * queue layout, the worker lcores, the session table and the coordinator data, and
 * offers the control operations (topics, channels, stats). Every function here runs on
 * the control thread (the EAL main lcore, a registered QSBR thread) unless it says
 * otherwise.
 *
 * Lcore roles:
 *   main lcore      control thread: control socket, telemetry, session expiry, topic
 *                   and channel changes (RCU writer), auto-creation;
 *   worker lcores   each polls its RX queue of every port, owns a set of partitions,
 *                   forwards frames for partitions it does not own to their owner
 *                   through single-producer/single-consumer rings, answers, delivers;
 *   persist lcore   the persistence core (storage/persist.h).
 */
#ifndef SL_BROKER_H
#define SL_BROKER_H

#include <stdint.h>

#include "auth.h"
#include "channel.h"
#include "coord.h"
#include "mpart.h"
#include "net.h"
#include "persist.h"
#include "repl.h"
#include "rlink.h"
#include "session.h"
#include "wire.h"

#define SL_BROKER_MAX_WORKERS 16
#define SL_BROKER_MAX_PORTS 4
#define SL_BROKER_MAX_CHANNELS 32	/* per partition */
#define SL_BROKER_MAX_NODES 64
#define SL_BROKER_MAX_KEYS 2		/* cluster keys at once (rotation) */
/* log_budget: 3/4 of the kernel's MemAvailable once the broker is open */
#define SL_BROKER_LOG_BUDGET_AUTO UINT64_MAX

/* A cluster node (for replica traffic). */
struct sl_broker_node {
	uint32_t id;
	uint32_t ip;			/* network byte order */
	uint16_t port;			/* its replica UDP port (host order) */
	uint16_t pi;			/* index of the port replica datagrams to it leave by:
					 * sl_broker_route() */
};

enum sl_idle_mode {
	SL_IDLE_BUSY = 0,	/* poll forever: lowest latency, one full core per lcore */
	SL_IDLE_ADAPTIVE = 1,	/* sleep (backing off) after idle_polls empty polls */
	SL_IDLE_INTERRUPT = 2,	/* as adaptive, but block on the RX queues' interrupts
				 * (rte_epoll_wait) where every port of the worker has them;
				 * elsewhere a deeper adaptive backoff (docs/architecture.md) */
	SL_IDLE_AUTO = 3,	/* the default: as interrupt where every RX queue of the
				 * worker has an interrupt or an AF_XDP socket (net_tap,
				 * net_af_xdp, NICs), else as adaptive (memif, rings) */
};

/** Whether idle mode m may block on RX interrupts (interrupt, auto). Any thread. */
static inline int
sl_broker_idle_blocks(enum sl_idle_mode m)
{
	return m == SL_IDLE_INTERRUPT || m == SL_IDLE_AUTO;
}

/** The name of an idle mode ("busy", "adaptive", "interrupt", "auto"). Any thread. */
const char *
sl_broker_idle_name(enum sl_idle_mode m);

struct sl_broker_port {
	uint16_t port_id;
	uint16_t nrxq;		/* RX queues: == nworkers with RSS, else 1 */
	uint16_t ntxq;		/* TX queues: == nrxq; workers >= ntxq hand TX to worker 0 */
	uint32_t tx_flags;	/* SL_NET_TX_* offloads enabled */
	uint32_t rx_flags;	/* SL_NET_RX_* offloads enabled */
	uint16_t mtu;
	uint8_t rx_intr;	/* configured with RX queue interrupts (intr_conf.rxq) */
	uint8_t xsk_ready;	/* net_af_xdp: xsk_fd[q] is RX queue q's AF_XDP socket */
	int xsk_fd[SL_BROKER_MAX_WORKERS];	/* readable when its RX ring holds frames */
	char name[64];
	struct sl_net_if nif;
	uint32_t netmask;	/* network order; 0 = no subnet given (--ip without /len) */
};

struct sl_broker_conf {
	uint32_t node_id;
	uint16_t nworkers;
	unsigned int worker_lcores[SL_BROKER_MAX_WORKERS];
	uint16_t nports;
	struct sl_broker_port ports[SL_BROKER_MAX_PORTS];
	struct rte_mempool *pool;
	int socket_id;
	enum sl_idle_mode idle;
	uint32_t idle_polls;		/* empty polls before sleeping (adaptive) or
					 * blocking (interrupt) */
	uint32_t idle_max_us;		/* longest sleep (adaptive) */
	uint32_t idle_min_us;		/* first sleep (adaptive; 0: 10) */
	uint32_t idle_deep_us;		/* longest sleep after SL_WORKER_DEEP_MS without work
					 * (adaptive; 0: idle_max_us) */
	uint64_t log_bytes;		/* in-memory log per partition */
	uint32_t max_msg;		/* largest message body */
	uint32_t window;		/* requests in flight per session (WELCOME) */
	uint32_t heartbeat_ms;
	uint32_t session_timeout_ms;
	uint32_t max_sessions;
	uint32_t max_sessions_per_source;	/* per client address (0: no limit) */
	uint32_t msg_timeout_ms;
	uint32_t max_req_delay_ms;
	uint32_t chan_window;		/* max in flight per channel */
	uint32_t sub_chans;		/* channels SUB may create per partition (0: any) */
	uint32_t sub_chans_per_src;	/* ... per partition and client address (0: any) */
	uint64_t sub_chan_idle_ms;	/* idle anonymous durable channels expire (0: never) */
	uint32_t isr_lag_ms;		/* ISR lag window of replicated partitions (0: 1 s) */
	int auto_create;		/* create unknown topics on first publish */
	uint16_t auto_create_parts;
	/* room for topics, checked before any creation (auto, control socket, --topic,
	 * cluster file, data directory at start): refused with SL_E_CAPACITY */
	uint32_t max_topics;		/* 0 = SL_COORD_MAX_TOPICS_DEFAULT */
	uint64_t log_budget;		/* bytes the partitions' memory may take in all:
					 * SL_PARTITION_OPEN_MEM each when opened, then what
					 * their logs and tables grow by (sl_partition_grow
					 * grows nothing beyond it: appends answer full);
					 * 0 = no budget, SL_BROKER_LOG_BUDGET_AUTO:
					 * sl_broker_open sets it */
	uint16_t max_parts_per_topic;
	uint32_t auto_topics_per_src;	/* topics one client address may create by publishing
					 * (auto_create): SL_E_LIMIT beyond; 0 = no limit */
	int anon_publish;		/* accept PUB/MPUB with session 0 (no idempotency) */
	/* client tokens (auth.h): with a table only HELLOs with a known token get a session,
	 * and each request needs its token's right on its topic; NULL: open mode. The broker
	 * owns the table once sl_broker_open succeeded (the caller frees it otherwise);
	 * token_file is where sl_broker_auth_swap's caller reloads it from */
	struct sl_auth_table *auth;
	const char *token_file;
	/* storage: without data_dir every topic lives in memory only */
	const char *data_dir;		/* <data_dir>/<topic>/<partition>/ */
	struct sl_persist *persist;	/* the persistence lcore (with data_dir) */
	uint64_t segment_bytes;		/* disk log segment size; 0 = 64 MiB */
	struct sl_persist_policy policy; /* default for new topics */
	/* replication: with nodes, every partition gets a replication state (repl.h) and
	 * replica datagrams travel on repl_port of every port (rlink.h) */
	uint32_t nnodes;
	struct sl_broker_node nodes[SL_BROKER_MAX_NODES];
	uint16_t repl_port;		/* 0: no replication */
	/* replica authentication (rlink.h): the first key tags what this node sends, a
	 * datagram tagged with either is accepted (key rotation); none: datagrams carry no
	 * tag and none is checked (sluiced --insecure-cluster) */
	uint8_t ncluster_keys;
	uint8_t cluster_keys[SL_BROKER_MAX_KEYS][SL_RLINK_KEY_LEN];
};

/* Per-worker counters: written by the owner lcore only, read racily by the control
 * thread (aligned 64-bit loads). */
struct sl_worker_stats {
	uint64_t rx_pkts;
	uint64_t tx_pkts;
	uint64_t tx_drops;		/* TX ring full */
	uint64_t tx_handoff;		/* frames handed to worker 0 to transmit */
	uint64_t drops[SL_NET_KIND_MAX]; /* by network reason (index 0..3 unused) */
	uint64_t drop_multiseg;
	uint64_t drop_bad_magic;	/* not a sluice frame: dropped silently */
	uint64_t drop_answer_op;	/* a client sent us an answer opcode */
	uint64_t drop_fwd_full;		/* forward ring to the owner worker full */
	uint64_t drop_no_mbuf;
	uint64_t drop_bad_bundle;	/* a bundle whose framing is wrong (answered ERR) */
	uint64_t bundles_in;		/* datagrams of several frames (SL_WIRE_F_BUNDLE) */
	uint64_t bundle_frames_in;	/* ... their frames */
	uint64_t bundles_out;		/* answer datagrams of several frames */
	uint64_t bundle_frames_out;	/* ... their frames */
	uint64_t arp_replies;
	uint64_t icmp_replies;
	uint64_t ops[SL_WIRE_OP_MAX];	/* requests by opcode (index: the opcode) */
	uint64_t ops_unknown;		/* requests with an opcode no handler takes */
	uint64_t errs_sent;		/* ERR frames */
	uint64_t err_codes[32];		/* by SL_E_* - SL_E_BASE */
	uint64_t dups;			/* retries answered from the idempotency window */
	uint64_t anon_pubs;		/* PUB/MPUB requests without a session */
	uint64_t fwd_out;
	uint64_t fwd_in;
	uint64_t pubs;			/* PUB + MPUB requests committed */
	uint64_t msgs_in;		/* messages committed */
	uint64_t bytes_in;
	uint64_t deliveries;		/* MSG frames sent (incl. redeliveries) */
	uint64_t busy_cycles;		/* cycles of iterations that did work */
	uint64_t total_cycles;
	uint64_t idle_sleeps;
	uint64_t follow_yields;		/* yields as a follower under a stream of records */
	uint64_t yield_starved;		/* replication yields that lost the CPU for longer
					 * than SL_WORKER_STARVED_US (naps for a while) */
	uint64_t sessions_created;
	uint64_t auto_create_req;
	uint64_t repl_in;		/* replica datagrams handed to a partition */
	uint64_t repl_out;
	uint64_t repl_drops;		/* malformed, not for us, unknown partition */
	uint64_t repl_no_arp;		/* not sent: peer's MAC unknown yet (ARP asked) */
	uint64_t repl_rej_malformed;	/* replica datagrams refused: not an envelope */
	uint64_t repl_rej_not_member;	/* ... not for us / not from a member's address */
	uint64_t repl_rej_bad_mac;	/* ... tag wrong or key unknown */
	uint64_t repl_rej_replay;	/* ... sequence seen before (replay) */
	uint64_t order_closed;		/* session order holes closed without their retry
					 * (not retried in time, or out of the window) */
	uint64_t order_untracked;	/* retryable refusals no hole could hold (every one
					 * of the session's holes on this worker in use) */
	struct sl_mpart_stats mpart;	/* MPUB_PART reassembly (mpart.h) */
};

/* Snapshot of one channel, filled by its owner worker on request. */
struct sl_chan_info {
	char name[SL_CHANNEL_NAME_MAX + 1];
	uint8_t ordered;
	uint8_t ephemeral;
	uint8_t anonymous;		/* created by a client's SUB */
	uint32_t nsubs;
	uint64_t idle_ms;		/* without a subscriber for this long */
	uint64_t confirmed_id;		/* all ids below are finished */
	uint64_t confirmed_offset;
	uint64_t cursor_id;
	uint64_t depth;			/* end_id + 1 - confirmed_id */
	struct sl_channel_stats st;
};

/* Snapshot of one partition, filled by its owner worker on request. */
struct sl_part_info {
	uint16_t owner;
	uint64_t first_id;
	uint64_t end_id;
	uint64_t end_offset;
	uint64_t log_used;
	uint64_t log_capacity;
	uint64_t mem_resident;		/* bytes of memory it holds (sl_partition_resident) */
	uint64_t log_msgs;		/* messages in memory */
	uint64_t log_slots;		/* most messages memory holds (its index) */
	uint64_t pubs;
	uint64_t msgs_in;
	uint64_t bytes_in;
	uint64_t full_errs;
	uint64_t grow_kicks;		/* times the owner woke the grower (log half used,
					 * or an append refused for want of room) */
	uint64_t grow_refused;		/* growth steps the memory budget refused */
	uint64_t deliveries;
	/* storage */
	const struct sl_pstore *store;	/* NULL: memory only (read its fields racily) */
	uint8_t disk;			/* durability disk */
	uint32_t pending;		/* publishes waiting to be durable */
	uint64_t io_errs;
	uint64_t disk_reads;
	uint64_t disk_skipped;
	uint64_t cache_trims;
	uint64_t sub_chans_refused;	/* SUBs refused by the anonymous channel limits */
	uint64_t sub_chans_expired;	/* idle anonymous channels deleted */
	/* the producer table (ptab.h) */
	uint32_t producers;		/* producer ids held */
	uint64_t producer_dups;		/* retries answered with the original answer */
	uint64_t producer_old;		/* retries older than it remembers (SL_E_SEQ_OLD) */
	uint64_t producer_evictions;	/* producers forgotten to make room */
	/* replication (repl: 0 without a cluster) */
	uint8_t repl;
	uint8_t in_sync;
	uint64_t committed;
	struct sl_repl_stats rst;
	uint32_t nchans;
	struct sl_chan_info chans[SL_BROKER_MAX_CHANNELS];
};

struct sl_broker;

/** Build the broker: session table, coordinator, rings, worker contexts. Ports must
 * already be configured and started (dataplane/port.h). NULL with rte_errno. */
struct sl_broker *
sl_broker_open(const struct sl_broker_conf *conf);

/** Launch the worker lcores (and nothing else). 0 or negative errno. */
int
sl_broker_start(struct sl_broker *b);

/** Ask every lcore to stop and wait for the workers. */
void
sl_broker_stop(struct sl_broker *b);

/** Free everything (after stop). */
void
sl_broker_close(struct sl_broker *b);

/** Periodic control work: session expiry, auto-creation requests, partitions' memory grown
 * ahead of need. Call every <= 100 ms, and when sl_broker_grow_fd is readable. Returns the
 * number of things done. Control thread. */
int
sl_broker_tick(struct sl_broker *b);

/** An eventfd that becomes readable when a partition's log wants to grow (its owner wrote
 * it, once per growth step): the control thread waits on it beside its other fds and calls
 * sl_broker_tick when it is readable (the tick reads it). Any thread. */
int
sl_broker_grow_fd(const struct sl_broker *b);

/** Every partition's info of topic t (as sl_broker_part_info), with one command per worker
 * rather than one per partition: infos[i] is partition i's when ok[i] (arrays of
 * t->nparts). The number filled, or -ENOMEM. Control thread. */
int
sl_broker_topic_infos(struct sl_broker *b, struct sl_topic *t, struct sl_part_info *infos,
		      uint8_t *ok);

struct sl_wviewreq;

/** Take one ISR change request the workers posted (the membership seam reads them:
 * control/membership.h) into *out and free the ring's copy. 1 if one was taken, 0 if none
 * waits. Control thread (the ring's single consumer). */
int
sl_broker_viewreq_take(struct sl_broker *b, struct sl_wviewreq *out);

/**
 * Add a node to the replication node table at run time (a node that joined the cluster:
 * the etcd membership backend). ip in network byte order, port its replica UDP port. The
 * table only grows; each worker sets the node up (link keys, route) on its next tick, and
 * until then neither sends to it nor accepts from it. 0 added, 1 already there with that
 * address, -EEXIST there with another address (not changed), -ENOSPC table full, -EINVAL
 * (no replication: repl_port 0). Control thread.
 */
int
sl_broker_node_add(struct sl_broker *b, uint32_t id, uint32_t ip, uint16_t port);

const struct sl_broker_conf *
sl_broker_get_conf(const struct sl_broker *b);
struct sl_coord *
sl_broker_coord(struct sl_broker *b);
struct sl_session_table *
sl_broker_sessions(struct sl_broker *b);
const struct sl_worker_stats *
sl_broker_worker_stats(const struct sl_broker *b, uint16_t w);
unsigned int
sl_broker_worker_lcore(const struct sl_broker *b, uint16_t w);

/** Create a topic with nparts partitions (spread over the workers) and storage policy
 * pol (NULL: the node's default). With a data directory the topic gets a new directory
 * there (never one that exists already: -SL_E_EXISTS) holding its configuration; a
 * creation that fails leaves nothing behind. 0, -SL_E_EXISTS, -SL_E_NAME (name.h),
 * -SL_E_INVAL (also: disk durability without a data directory), -SL_E_CAPACITY (no room:
 * topic limit, memory budget, or the memory itself), -SL_E_IO, or a negative errno. */
int
sl_broker_topic_create(struct sl_broker *b, const char *name, uint16_t nparts, uint32_t flags,
		       const struct sl_persist_policy *pol);

/** Recreate every topic saved in the data directory (at start, before the ports take
 * traffic); its partitions recover what their disk logs hold. An entry that is not a
 * topic (foreign, invalid name) or cannot be loaded (damaged configuration or storage, no
 * room) is logged, naming it and what to do, and left as it is. Returns the number of
 * topics loaded (*skipped: entries left, may be NULL) or a negative errno (the data
 * directory cannot be read). */
int
sl_broker_topics_load(struct sl_broker *b, uint32_t *skipped);

/** Bytes one more topic of nparts partitions counts against the memory budget. */
uint64_t
sl_broker_topic_mem(const struct sl_broker *b, uint16_t nparts);

/**
 * Install a partition's replication view (leader, epoch, leader session, replicas, ISR,
 * writes disabled). Called by the membership seam (control/membership.h) only.
 * A new leader needs a higher epoch and a new session; the epoch never goes back.
 * Workers read the view under RCU: this node takes publishes for the partition only as
 * its leader, with writes enabled and an ISR larger than half the replicas. 0,
 * -SL_E_TOPIC, -SL_E_PARTITION, -SL_E_EPOCH, -SL_E_INVAL, -ENOMEM. Control thread.
 */
int
sl_broker_part_set_view(struct sl_broker *b, const char *topic, uint16_t part,
			const struct sl_part_meta *m);

/** Copy a partition's current view. 0, -SL_E_TOPIC, -SL_E_PARTITION. Control thread. */
int
sl_broker_part_get_view(struct sl_broker *b, const char *topic, uint16_t part,
			struct sl_part_meta *m);

/** Ask the persistence lcore to resume a topic's failed partitions (part < 0: all).
 * Waits up to timeout_ms for them to be healthy. 0, -SL_E_TOPIC, -SL_E_PARTITION,
 * -SL_E_INVAL (no storage), -SL_E_IO (still failing: its cause is in the log). */
int
sl_broker_storage_resume(struct sl_broker *b, const char *topic, int part,
			 uint32_t timeout_ms);

/**
 * Install a new client token table (auth.h) in place of the current one: published under
 * RCU, then, after a grace period, every session whose token is not in t any more is
 * revoked (its subscriptions end, its requests get SL_E_AUTH) and the old table is freed.
 * Sessions of tokens still in t take their new rights at their next request. *revoked
 * (may be NULL) gets the number of sessions revoked. The broker owns t on success. 0, or
 * -EINVAL (t NULL, or the node runs without a token table: open mode). Control thread.
 */
int
sl_broker_auth_swap(struct sl_broker *b, struct sl_auth_table *t, uint32_t *revoked);

/** The client token table in use, NULL in open mode. Control thread (valid until the next
 * sl_broker_auth_swap). */
const struct sl_auth_table *
sl_broker_auth(const struct sl_broker *b);

/** Delete a topic, its partitions, channels and subscriptions. 0 or -SL_E_TOPIC. */
int
sl_broker_topic_delete(struct sl_broker *b, const char *name);

/** Create a durable channel on every partition of a topic (or one partition if
 * part >= 0). 0, -SL_E_TOPIC, -SL_E_PARTITION, -SL_E_EXISTS, -SL_E_LIMIT, -SL_E_NAME. */
int
sl_broker_chan_create(struct sl_broker *b, const char *topic, int part, const char *chan,
		      int ordered);

/** Delete a channel (every partition, or one). Subscribers lose it. */
int
sl_broker_chan_delete(struct sl_broker *b, const char *topic, int part, const char *chan);

/** Reset a channel's consume position (kind: enum sl_wire_off_kind). On success
 * *next_id gets the first id that will be delivered (first partition touched). */
int
sl_broker_chan_reset(struct sl_broker *b, const char *topic, int part, const char *chan,
		     uint8_t kind, uint64_t value, uint64_t *next_id);

/** A partition's log end and commit index without a command to its worker
 * (sl_partition_positions: racy, advisory): 1 when it replicates, 0 when it does not,
 * -SL_E_TOPIC / -SL_E_PARTITION. Control thread. */
int
sl_broker_part_pos(struct sl_broker *b, const char *topic, uint16_t part, uint64_t *committed,
		   uint64_t *end_id);

/** Snapshot a partition. 0 or -SL_E_TOPIC / -SL_E_PARTITION / -ETIMEDOUT. */
int
sl_broker_part_info(struct sl_broker *b, const char *topic, uint16_t part,
		    struct sl_part_info *info);

/** Set by the signal handler: every lcore loop leaves when it reads non-zero. */
extern volatile int sl_broker_quit;

#endif /* SL_BROKER_H */
