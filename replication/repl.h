/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * repl: replication of one topic partition, leader and replica side, as pure logic. It
 * does no I/O of its own: datagrams, the local log, time and the membership seam are the
 * caller's, through struct sl_repl_ops. sluiced drives it from the worker lcore that owns
 * the partition (frames from the replica UDP port, the partition's logs); the
 * deterministic simulator (tests/fault/repl_sim.c) drives the very same code with a
 * simulated network, clock and disk. No heap allocation after sl_repl_open, no locks:
 * one owner thread per partition.
 *
 * Semantics: youzan/nsq's coordinator (PutMessageToCluster, putMessageOnSlave,
 * FinishMessageToCluster, SetChannelConsumeOffsetToCluster, updateChannelOffsetOnSlave),
 * pipelined, with Kafka KIP-101 style catch-up. docs/replication.md has the protocol, the
 * fencing rules and the invariants the simulator checks; the wire format of the replica
 * messages (magic, version, every field) is at the top of repl.c and in that document.
 *
 * Positions are message ids (consecutive from 1 per partition; a commit record covers ids
 * log_id..last_msg_log_id and msg_cnt == last_msg_log_id). "end" is the last id of a
 * prefix. The local log holds written records, committed or not; the commit index
 * (committed end) is what every ISR member has acknowledged: clients are answered and
 * consumers see messages only up to it.
 */
#ifndef SL_REPL_H
#define SL_REPL_H

#include <stddef.h>
#include <stdint.h>

#include "crec.h"

#define SL_REPL_MAX_NODES 8
#define SL_REPL_WINDOW 1024		/* commit records in flight per partition (leader) */
#define SL_REPL_CHAN_NAME_MAX 64	/* bytes of a channel name, without the NUL */
#define SL_REPL_MAX_DGRAM 8192		/* largest replica datagram payload */

/* The membership view of a partition (static config, control socket, later etcd). The
 * seam applies isr_leave/isr_join in the order asked and installs every later view with
 * a higher version; sl_repl_set_view ignores a view older than the installed one. */
struct sl_repl_view {
	uint64_t version;		/* bumped on every change by the membership seam */
	uint32_t leader;		/* node id */
	uint32_t epoch;			/* write epoch: bumped on every leadership change */
	uint64_t leader_session;	/* changes with every leadership */
	uint8_t writes_disabled;	/* leadership change in progress */
	uint8_t nreplicas;
	uint8_t nisr;
	uint32_t replicas[SL_REPL_MAX_NODES];
	uint32_t isr[SL_REPL_MAX_NODES];
};

/* The caller's side. Every callback runs synchronously on the owner thread. */
struct sl_repl_ops {
	void *arg;
	/* best-effort datagram to a node's replica port (may be lost, duplicated, late) */
	void (*send)(void *arg, uint32_t node, const void *buf, uint32_t len);

	/* the local log: commit records and their encoded message records */
	/* append at the end: c->log_id == last end + 1, c->msg_offset == end offset. 0 or
	 * a negative errno (the write then failed: nothing appended) */
	int (*append)(void *arg, const struct sl_crec *c, const void *msgs);
	/* remove every record with an id > end_id (rollback, divergent tail) */
	int (*truncate)(void *arg, uint64_t end_id);
	/* the record containing id, its messages copied to buf (cap bytes): 0, -ENOENT
	 * (not in the log: older than retained or past the end), -ENOBUFS */
	int (*read)(void *arg, uint64_t id, struct sl_crec *c, void *buf, uint32_t cap);
	/* the last record; an empty log: log_id 0 and last_msg_log_id the id before its
	 * first (0, unless the log was reset to start later: see reset) */
	void (*last)(void *arg, struct sl_crec *c);
	/* KIP-101: the end (last id) of the last record whose epoch <= epoch; 0 if none */
	uint64_t (*epoch_end)(void *arg, uint64_t epoch);

	/* the membership seam: the leader asks to drop a lagging member from the ISR, or to
	 * add a caught-up one. The view changes only through sl_repl_set_view. The leader
	 * counts a member it asked to add for its commits at once (Kafka's "maximal ISR"),
	 * and one it asked to drop until a view without it arrives, so the seam's ISR is
	 * always a subset of the set the leader waits for. */
	void (*isr_leave)(void *arg, uint32_t node);
	void (*isr_join)(void *arg, uint32_t node);

	/* results */
	/* the commit index moved to end_id: answer publishes <= end_id, consumers may see */
	void (*committed)(void *arg, uint64_t end_id);
	/* records > end_id were rolled back (leader: err is the answer for their
	 * publishes, e.g. -SL_E_QUORUM, -SL_E_EPOCH) */
	void (*rolled_back)(void *arg, uint64_t end_id, int err);
	/* replica side: a channel position to apply (the leader's synced FIN/SET_OFFSET,
	 * or one cached until the data reached it): confirmed_id = every id below it is
	 * finished. chan is NUL-terminated */
	void (*chan_set)(void *arg, const char *chan, uint64_t confirmed_id);
	/* an ordered FIN or a SET_OFFSET the leader asked for is done: err 0 or why not
	 * (the leader rolled the position back to prev_id) */
	void (*chan_done)(void *arg, uint64_t token, int err, uint64_t prev_id);

	/* optional (NULL: skipped): the first and last message id and the message count
	 * encoded in msgs (msg_size bytes), for the replica's MPUB checks. 0 or < 0 when
	 * msgs does not parse */
	int (*msg_ids)(void *arg, const void *msgs, uint32_t msg_size, uint64_t *first,
		       uint64_t *last, uint32_t *num);
	/* optional (NULL: no channel positions move with a rejoin): the leader's synced
	 * (ordered or unordered, not ephemeral) channel number idx and its position; 0, or
	 * -ENOENT past the last one. The leader sends them to a rejoining replica before it
	 * asks isr_join, so a later leader never goes back behind a confirmed FIN */
	int (*chan_get)(void *arg, uint32_t idx, char name[SL_REPL_CHAN_NAME_MAX + 1],
			uint64_t *confirmed_id);

	/* Catch-up past the leader's retention (Kafka's log start offset). Optional; without
	 * them a replica behind the leader's oldest record stays behind (the leader counts
	 * the FETCHes it cannot serve in fetch_too_old). */
	/* leader: the oldest record it can still serve (what came before was trimmed from
	 * memory or removed by retention): 0 with its id and, when offset is not NULL, its
	 * message offset, or -EAGAIN (not known now). Called with offset NULL for every
	 * FETCH, so that must be cheap; with offset only when a reset is answered */
	int (*first)(void *arg, uint64_t *id, uint64_t *offset);
	/* replica: drop the whole local log and restart it empty, the next append being
	 * record id at message offset `offset` (every id before it counts as committed).
	 * 0, -EAGAIN (not now: asked again with the leader's next answer) or an error */
	int (*reset)(void *arg, uint64_t id, uint64_t offset);

	/* optional (NULL: ignored): replica: the ISR of the leadership (view epoch,
	 * leader session) it follows, as the leader sees it (its isr_leave/isr_join have
	 * been applied there; it sends it on every change and now and then). The seam
	 * applies it to this node's view if that is still the same leadership, so every
	 * node's view shows the ISR the leader commits with, and a replica left out of it
	 * catches up and asks to rejoin on its own */
	void (*leader_isr)(void *arg, uint32_t epoch, uint64_t session, const uint32_t *isr,
			   uint32_t nisr);
};

/* Default ISR lag window: 1 s, as Kafka's replica.lag.time.max.ms is in spirit. */
#define SL_REPL_ISR_LAG_NS 1000000000ull

struct sl_repl_conf {
	uint32_t node_id;		/* this node */
	uint32_t partition;
	uint64_t topic_hash;		/* identifies the topic in replica datagrams */
	const struct sl_repl_ops *ops;
	uint64_t retransmit_ns;		/* resend unacknowledged writes after this; 0 = 2 ms */
	uint64_t lag_timeout_ns;	/* a replica that hears nothing from its leader this
					 * long asks again; channel syncs give up after 4x;
					 * 0 = 500 ms */
	uint64_t isr_lag_ns;		/* an ISR member that has not held the leader's
					 * whole log within this window leaves (progress
					 * alone does not keep it); 0 = SL_REPL_ISR_LAG_NS */
	uint64_t catchup_pause_ns;	/* longest write pause for a rejoin; 0 = 50 ms */
	uint32_t max_dgram;		/* largest datagram the transport carries (its MTU
					 * minus headers); 0 = SL_REPL_MAX_DGRAM */
	uint64_t join_lag;		/* replica asks to rejoin within this many ids of the
					 * leader's end; 0 = 256 */
};

/* Largest msg_size of one record for SL_REPL_MAX_DGRAM: a WRITE carries one whole record
 * in one datagram (records are not fragmented yet; the caller splits a larger MPUB).
 * With a smaller conf.max_dgram the limit is max_dgram - 128. */
#define SL_REPL_MAX_REC (SL_REPL_MAX_DGRAM - 128)

struct sl_repl_stats {
	uint64_t writes;		/* records written as leader */
	uint64_t committed_end;
	uint64_t sent;
	uint64_t retransmits;
	uint64_t acks_in;
	uint64_t dup_writes;		/* replica: records already held, answered, not written */
	uint64_t fenced;		/* replica: stale session/epoch, or not in ISR */
	uint64_t gaps;			/* replica: wrong offset -> catch-up */
	uint64_t rollbacks;
	uint64_t isr_leaves;
	uint64_t catchups;
	uint64_t truncated_on_catchup;	/* divergent ids dropped (catch-up or overwrite) */
	uint64_t fetches;		/* leader: FETCH answered; replica: FETCH sent */
	uint64_t joins;			/* leader: isr_join asked */
	uint64_t chan_syncs;		/* leader: positions synced; replica: applied */
	uint64_t chan_cached;		/* replica: positions beyond the data end, cached */
	uint64_t bad_dgrams;		/* malformed, wrong magic/topic/partition */
	uint64_t resets;		/* leader: FETCHes answered "start at my first record";
					 * replica: local log reset to the leader's first */
	uint64_t fetch_too_old;		/* leader: FETCHes for records it no longer holds and
					 * cannot answer with a reset (no ops->first) */
};

struct sl_repl;

/** Open a partition's replication state (not leader, no view yet, commit index 0: a
 * restarted node learns it from the leader). NULL with errno = EINVAL on a bad conf,
 * ENOMEM. Any thread, before handing it to its owner. */
struct sl_repl *
sl_repl_open(const struct sl_repl_conf *conf);

/** Free it (no callbacks). Owner, or any thread once the owner stopped using it. */
void
sl_repl_close(struct sl_repl *r);

/**
 * Install a new membership view (leader, epoch, session, ISR); ignored when v->version is
 * older than the installed one. Becoming leader: the records past the commit index are
 * replicated again and commit when the ISR has them. Leader, same session, ISR shrunk:
 * pending writes commit if every remaining member acknowledged them and the ISR is still
 * a majority, else they and their successors are rolled back (-SL_E_QUORUM). Leader of
 * a new epoch or session: pending writes are rolled back (-SL_E_EPOCH). Losing
 * leadership: pending writes are rolled back (-SL_E_NOT_LEADER), pending channel syncs
 * fail. A replica that is not in the ISR starts catching up. Owner.
 */
void
sl_repl_set_view(struct sl_repl *r, const struct sl_repl_view *v, uint64_t now_ns);

/**
 * Leader: may a write start now? 0, -SL_E_NOT_LEADER, -SL_E_WRITE_DISABLED (also during a
 * rejoin pause), -SL_E_QUORUM (ISR <= replicas / 2), -SL_E_FULL (window full). Owner.
 */
int
sl_repl_can_write(const struct sl_repl *r);

/** Leader: the write epoch to put in the next commit record (crec.epoch). Owner. */
uint64_t
sl_repl_epoch(const struct sl_repl *r);

/**
 * Leader: the caller has appended c (c->epoch == sl_repl_epoch(), c->log_id == the
 * previous end + 1) and its messages to the local log through the same log the ops
 * read; replicate it. The record commits when every ISR member has acknowledged it
 * (ops->committed), or is rolled back (ops->rolled_back, after ops->truncate) with its
 * successors. Returns 0, the can_write error, -SL_E_EPOCH (c->epoch is not the write
 * epoch), -SL_E_PUB_ARG (not at the end, inconsistent ids) or -SL_E_TOO_BIG (msg_size >
 * max_dgram - 128); on an error the caller must truncate its append. Owner.
 */
int
sl_repl_write(struct sl_repl *r, struct sl_crec *c, const void *msgs, uint64_t now_ns);

/**
 * Leader: sync a channel position the caller has already applied locally. ordered:
 * every ISR member must acknowledge before ops->chan_done(token, 0) (else
 * chan_done(token, err, prev_id) and the caller rolls the position back to prev_id);
 * unordered: fire and forget (chan_done at once); ephemeral channels are never synced
 * (do not call). set_offset: a SET_OFFSET (may move backwards), always synchronous to
 * every ISR member. The leader's own position is the caller's: ops->chan_set is only
 * called on replicas. Returns 0 or -SL_E_NOT_LEADER / -SL_E_QUORUM / -SL_E_FULL /
 * -SL_E_NAME (empty or too long a name); on an error chan_done is not called. Owner.
 */
int
sl_repl_chan_sync(struct sl_repl *r, const char *chan, uint64_t confirmed_id, uint64_t prev_id,
		  int ordered, int set_offset, uint64_t token, uint64_t now_ns);

/**
 * Leader: send the records written since the last flush, packed several to a datagram.
 * sl_repl_write only queues; call this once per batch of writes (sluiced: once per
 * worker loop) or let sl_repl_poll do it. Returns the members sent to. Owner.
 */
uint32_t
sl_repl_flush(struct sl_repl *r, uint64_t now_ns);

/** A replica datagram arrived from node `from`. Owner. */
void
sl_repl_input(struct sl_repl *r, uint32_t from, const void *buf, uint32_t len, uint64_t now_ns);

/** Timers: retransmits, lag timeouts, catch-up requests. Call at least every
 * retransmit_ns / 2. Returns the number of things done. Owner. */
uint32_t
sl_repl_poll(struct sl_repl *r, uint64_t now_ns);

/** The commit index (committed end). Owner. */
uint64_t
sl_repl_committed(const struct sl_repl *r);

/** Leader: 1. Replica: 1 when this node is in the ISR of its view (following the
 * leader's writes), else 0 (catching up, or no view). Owner. */
int
sl_repl_in_sync(const struct sl_repl *r);

/** Counters. Owner. */
void
sl_repl_get_stats(const struct sl_repl *r, struct sl_repl_stats *st);

/** Topic hash for sl_repl_conf.topic_hash (FNV-1a of the name). Any thread. */
uint64_t
sl_repl_topic_hash(const char *name, size_t len);

#endif /* SL_REPL_H */
