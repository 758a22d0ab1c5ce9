/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * partition: one topic partition at run time, owned by one worker lcore. It holds the
 * in-memory log (storage/memlog.h), the channels (channel.h), the link to the
 * persistence lcore (storage/persist.h) and, on a node with a cluster, the replication
 * state machine (replication/repl.h) with its callbacks (partition_repl.c). The worker
 * parses requests and answers them; this module executes them.
 *
 * Requests whose answer waits (a publish until it is durable and committed by the ISR,
 * an ordered FIN or a SET_OFFSET until every ISR member holds the position, a SET_OFFSET
 * looked up on disk) carry a token chosen by the worker: the call returns
 * SL_PARTITION_HELD and the answer comes back later from sl_partition_poll() as a
 * completion {token, code}. Every held token comes back exactly once, or from
 * sl_partition_detach() when the partition stops being owned.
 *
 * Calling context: sl_partition_open, _replicate, _set_coord and _close run on the
 * control thread while no worker owns the partition; everything else runs on the owner
 * worker lcore only, inside its RCU read-side critical section (QSBR: between two
 * quiescent states). No call on the owner lcore allocates, blocks or does a system call,
 * except channel creation (one allocation per channel).
 */
#ifndef SL_PARTITION_H
#define SL_PARTITION_H

#include <stdint.h>

#include <rte_ring.h>

#include "broker.h"
#include "channel.h"
#include "coord.h"
#include "persist.h"
#include "repl.h"
#include "session.h"
#include "wire.h"

#define SL_PARTITION_PEND 4096	 /* publishes waiting for the disk or the ISR */
#define SL_PARTITION_CHANWAIT 64 /* channel syncs waiting for the ISR */
#define SL_PARTITION_EPOCHS 16	 /* epoch history (KIP-101) kept */
#define SL_PARTITION_HELD 1	 /* return value: the answer comes as a completion */

struct sl_partition;

struct sl_partition_conf {
	uint16_t partid;
	uint16_t worker;		/* owner worker index (its persistence ring) */
	int socket_id;
	uint64_t log_bytes;		/* in-memory log size */
	uint32_t max_msg;		/* largest message body */
	uint32_t chan_window;		/* in-flight messages per channel */
	uint32_t msg_timeout_ms;
	uint32_t max_req_delay_ms;
	uint32_t node_id;		/* this node (leader check without replication) */
	/* channels a client's SUB creates (anonymous): at most sub_chans of them per
	 * partition and sub_chans_per_src per creator address (0: no limit); an anonymous
	 * durable channel without a subscriber for sub_chan_idle_ms is deleted (0: never) */
	uint32_t sub_chans;
	uint32_t sub_chans_per_src;
	uint64_t sub_chan_idle_ms;
	struct sl_pstore *store;	/* NULL: memory only; taken over (closed with us) */
	struct sl_persist *persist;	/* with store: the persistence lcore */
	struct sl_session_table *sessions; /* subscribers' sessions (delivery, expiry) */
	/* an eventfd the control thread waits on, written (once per growth step) when the
	 * log wants to grow, so it grows at once rather than at the next tick; <= 0: none */
	int grow_fd;
};

/* Where replica datagrams go: the owner worker's peer addressing (peer.h). */
typedef void (*sl_partition_send_fn)(void *arg, uint32_t to, const char *topic,
				     uint8_t topic_len, uint16_t partition, const void *buf,
				     uint32_t len);

struct sl_partition_repl_conf {
	const char *topic;
	uint32_t max_dgram;		/* largest replica datagram payload */
	uint64_t isr_lag_ns;		/* ISR lag window (sl_repl_conf; 0: default) */
	sl_partition_send_fn send;
	void *send_arg;
	struct rte_ring *viewreq;	/* ISR change requests to the control thread (MP) */
	uint8_t *scratch;		/* the owner worker's encode buffer, >=
					 * SL_PARTITION_SCRATCH bytes */
};

#define SL_PARTITION_SCRATCH (SL_REPL_MAX_DGRAM + 256)

/* What a view request asks the control thread for. */
enum sl_viewreq_kind {
	SL_VIEWREQ_ISR_LEAVE = 0,	/* leader: remove `node` from the ISR (it lags) */
	SL_VIEWREQ_ISR_JOIN = 1,	/* leader: add `node` to the ISR (caught up) */
	SL_VIEWREQ_LEADER_ISR = 2,	/* replica: take the ISR its leader `node` announced
					 * (isr, nisr) for leadership (epoch, session) */
};

/* An ISR change a partition's leader (or a replica hearing its leader) asks the control
 * thread for: the membership seam. Allocated by the owner lcore, freed by the control
 * thread. */
struct sl_wviewreq {
	char topic[SL_COORD_NAME_MAX + 1];
	uint16_t partition;
	uint8_t kind;			/* enum sl_viewreq_kind */
	uint32_t node;			/* ISR_LEAVE/JOIN: the member */
	uint32_t epoch;			/* LEADER_ISR */
	uint64_t session;		/* LEADER_ISR */
	uint8_t nisr;			/* LEADER_ISR */
	uint32_t isr[SL_COORD_MAX_REPLICAS];
};

/* What a request did, for its answer (OK frame fields). */
struct sl_partition_res {
	uint32_t count;
	uint64_t id;
	uint64_t offset;
	uint64_t aux;
	const char *why;	/* a refused publish: why, for the ERR text (static string) or
				 * NULL (the code's own text) */
};

/* A completion: the held request `token` is answered with `code` (0: OK). For a
 * SET_OFFSET looked up on disk, has_pos says id/offset/aux give the new position. */
struct sl_partition_done {
	uint64_t token;
	uint16_t code;
	uint8_t has_pos;
	uint64_t id;
	uint64_t offset;
	uint64_t aux;
};

/* One message to deliver (sl_partition_deliver): build and send the MSG frame. Returns
 * 0 sent, 1 cannot be encoded (skipped: counted as finished), -1 no buffer now (the
 * message stays for a later iteration and the channel stops for this one). */
struct sl_partition_msg {
	uint64_t session;
	uint64_t sub_id;
	uint16_t partid;
	uint16_t attempts;
	const struct sl_memlog_rec *rec;
	const struct sl_session *sess;	/* the subscriber's live session */
};
typedef int (*sl_partition_emit_fn)(void *arg, const struct sl_partition_msg *m);

/** Create a partition (its log in memory of conf->socket_id). With a store the log
 * continues where the disk log ends and the saved channel positions are restored.
 * Control thread. NULL with rte_errno. */
struct sl_partition *
sl_partition_open(const struct sl_partition_conf *conf);

/** Give the partition its replication state (a node with a cluster): the view comes from
 * the coordinator on the owner's next poll. Control thread, before the partition is
 * attached. 0 or -ENOMEM / -EINVAL. */
int
sl_partition_replicate(struct sl_partition *p, const struct sl_partition_repl_conf *rc);

/** The coordinator entry (topic, leader view) of the partition. Control thread, before
 * the partition is attached. */
void
sl_partition_set_coord(struct sl_partition *p, struct sl_coord_part *cp);

/** The partition's store (NULL: memory only). Any thread. */
struct sl_pstore *
sl_partition_store(const struct sl_partition *p);

/* What a partition's memory is counted at when it is opened, against the memory budget:
 * its structure and the first prefixes of its log (memlog.c GROW_*_MIN), rounded up. */
#define SL_PARTITION_OPEN_MEM (24u * 1024)

/**
 * Grow the partition's memory ahead of need (its in-memory log is reserved for
 * conf->log_bytes but only a prefix is ready, memlog.h "Lazy regions"): one growth step
 * of the log when its ready prefixes are more than half in use or an append found them
 * short (until then such appends are refused SL_E_FULL), and, once it took a publish, its
 * tables populated; nothing that would take more than room bytes (the memory budget
 * left). The bytes it made resident, or a negative errno (a memory log file that cannot
 * grow: a full disk; the log stays as it is). Control thread, on an attached or detached
 * partition: it only touches memory the worker does not use yet.
 */
int64_t
sl_partition_grow(struct sl_partition *p, uint64_t room);

/** Bytes of memory the partition holds (its structure, the ready part of its log, its
 * tables once populated); racy. Any thread. */
uint64_t
sl_partition_resident(const struct sl_partition *p);

/**
 * The partition's positions read without a command to its worker (racy: each value as the
 * worker last stored it, a 64-bit aligned load): *end_id its log's end and, when it
 * replicates, *committed its commit index. 1 when it replicates, else 0 (*committed 0).
 * For advisory uses (the etcd backend's positions): the worker may move on at once.
 * Control thread, while the partition is open (only the control thread closes it).
 */
int
sl_partition_positions(const struct sl_partition *p, uint64_t *committed, uint64_t *end_id);

/** 1 when the partition replicates (a node with a cluster), else 0. Owner lcore. */
int
sl_partition_replicated(const struct sl_partition *p);

/** Free a detached partition (and its store). Control thread. NULL is a no-op. */
void
sl_partition_close(struct sl_partition *p);

/** PUB (mpub 0) or MPUB: append at the log end (the leader's write path: refused unless
 * this node may write). wall_ns: the messages' timestamp. 0 (answer now with *res),
 * SL_PARTITION_HELD (answered by a completion of token once durable and committed), or
 * -SL_E_*: nothing written. Owner lcore. */
int
sl_partition_publish(struct sl_partition *p, const struct sl_wire_pub *pub, int mpub,
		     uint64_t wall_ns, uint64_t now_ns, uint64_t token,
		     struct sl_partition_res *res);

/** SUB: join (or create) the channel; an existing subscription of the session takes the
 * new RDY. sub_id: the id a new subscription gets. A channel created here is anonymous:
 * it counts against conf.sub_chans and, for the session's address, conf.sub_chans_per_src
 * (-SL_E_LIMIT beyond), starts at the oldest message memory holds, and, durable, expires
 * after conf.sub_chan_idle_ms without a subscriber. 0 with *res (id = its sub id,
 * offset = the channel's confirmed offset) or -SL_E_*. Owner lcore. */
int
sl_partition_subscribe(struct sl_partition *p, const struct sl_wire_sub *sub,
		       uint64_t session, uint32_t session_slot, uint64_t sub_id,
		       struct sl_partition_res *res);

/** 1 if sub would create a durable channel (its channel does not exist, and neither the
 * SUB's flags nor the name's "#ephemeral" suffix make it ephemeral), else 0. Owner lcore. */
int
sl_partition_sub_creates_durable(const struct sl_partition *p, const struct sl_wire_sub *sub);

/** RDY, FIN, REQ, TOUCH, CLS (of a channel) and SET_OFFSET for `session`: 0 with *res,
 * SL_PARTITION_HELD (token answered by a completion) or -SL_E_*. Owner lcore. */
int
sl_partition_chan_op(struct sl_partition *p, uint8_t opcode, const struct sl_wire_chan_op *op,
		     uint64_t session, uint64_t now_ns, uint64_t token,
		     struct sl_partition_res *res);

/** A replica datagram from node `from` (already authenticated as a member by peer.h).
 * Owner lcore. The number of messages it appended to the log (a follower taking a
 * leader's WRITE or FETCH answer; 0 for anything else), or -ENOENT when the partition is
 * not replicated. */
int
sl_partition_replica_input(struct sl_partition *p, uint32_t from, const void *buf,
			   uint32_t len, uint64_t now_ns);

/**
 * Every loop: storage events, replication (view changes, timers, sends), then the
 * completions of held requests: up to max of them into done[]. Call again while it
 * returns max. *work counts what was done (for the idle logic). Owner lcore.
 */
uint32_t
sl_partition_poll(struct sl_partition *p, uint64_t now_ns, struct sl_partition_done *done,
		  uint32_t max, uint32_t *work);

/** Deliver to the subscribers with credit what they may see (durable, committed), up to
 * a budget per channel, through emit. Returns the messages sent. Owner lcore. */
uint32_t
sl_partition_deliver(struct sl_partition *p, uint64_t now_ns, sl_partition_emit_fn emit,
		     void *arg);

/** The earliest time (ns, the clock of now_ns) at which the partition may need its poll,
 * delivery or tick without a request arriving: its channels' in-flight deadlines and
 * requeue ready times; now_ns (due at every tick) while it has a store or replication
 * (their completions and timers come through rings and clocks, not the network);
 * UINT64_MAX when nothing is timed. Owner lcore (the worker's idle loop). */
uint64_t
sl_partition_next_due(const struct sl_partition *p, uint64_t now_ns);

/** Once per millisecond: in-flight timeouts, subscribers of dead sessions, ephemeral
 * channels without subscribers, idle anonymous channels, saved positions and log
 * trimming. Owner lcore. */
void
sl_partition_tick(struct sl_partition *p, uint64_t now_ns);

/** Control commands, run by the owner for the control thread. 0 or -SL_E_*. */
int
sl_partition_chan_create(struct sl_partition *p, const char *name, int ordered);
int
sl_partition_chan_delete(struct sl_partition *p, const char *name);
/* kind SL_OFF_*; *id: the channel's new position */
int
sl_partition_chan_reset(struct sl_partition *p, const char *name, uint8_t kind,
			uint64_t value, uint64_t *id);
void
sl_partition_info(const struct sl_partition *p, struct sl_part_info *info);

/** The owner stops owning the partition: channels and subscriptions are dropped, and
 * every held token is handed to drop(arg, token) (no answer is due any more). Owner
 * lcore. */
void
sl_partition_detach(struct sl_partition *p, void (*drop)(void *arg, uint64_t token),
		    void *arg);

#endif /* SL_PARTITION_H */
