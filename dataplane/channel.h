/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * channel: NSQ consumer semantics for one channel of one topic partition. Pure logic
 * over message ids (a partition's ids are consecutive from 1), owned by the worker lcore
 * that owns the partition; no DPDK, no I/O. Time is passed in (ns, any monotonic clock).
 *
 * Positions: every id < confirmed is finished. [confirmed, cursor) is the window of
 * delivered-but-not-all-finished ids, at most conf.window of them (a power of two), held
 * in a ring indexed by id & (window - 1). Each slot is IN_FLIGHT (deadline), REQUEUED
 * (ready time: REQ with delay, timeout, or subscriber gone) or DONE. confirmed advances
 * over leading DONE slots. Ids >= cursor are not yet delivered.
 *
 * Delivery (sl_channel_next): requeued ids that are ready go first (lowest id first),
 * then the next new id if cursor <= end_id and the window has room. An ordered channel
 * has at most one id outside DONE at a time, so ids are delivered strictly in order and a
 * requeued id is redelivered before any later one. Each delivery goes to the next
 * subscriber (round robin) holding fewer messages in flight than its RDY (NSQ: RDY is the
 * most messages a subscriber may hold unfinished); attempts counts
 * deliveries of that id (1 on the first).
 */
#ifndef SL_CHANNEL_H
#define SL_CHANNEL_H

#include <stdint.h>

#define SL_CHANNEL_MAX_SUBS 64
#define SL_CHANNEL_NAME_MAX 64

struct sl_channel_conf {
	const char *name;		/* 1..64 bytes */
	uint32_t window;		/* max ids in flight, power of two, 1..65536 */
	uint64_t msg_timeout_ns;	/* redeliver after this */
	uint64_t max_req_delay_ns;	/* REQ delays are clamped to this */
	int ordered;
	int ephemeral;
	uint64_t start_id;		/* first id to deliver (>= 1) */
};

/* A subscriber: identified by the caller's session and subscription ids. */
struct sl_channel_sub {
	uint64_t session;	/* session id (0 = free slot) */
	uint64_t sub_id;	/* id reported to the client in SUB's OK and in each MSG */
	uint32_t session_slot;	/* caller's session table slot */
	uint32_t rdy;		/* most messages this subscriber may hold in flight (NSQ RDY) */
	uint64_t delivered;
	uint64_t in_flight;
	uint32_t hop_gen;	/* its session's next-hop generation (sl_channel_sub_hop) */
};

struct sl_channel_delivery {
	uint64_t id;
	uint16_t attempts;
	uint16_t sub;		/* index into subs[] */
};

struct sl_channel_stats {
	uint64_t delivered;	/* deliveries, including redeliveries */
	uint64_t finished;
	uint64_t requeued;	/* REQ */
	uint64_t timed_out;
	uint64_t in_flight;	/* now */
	uint64_t requeued_now;	/* ids waiting in REQUEUED state now */
};

struct sl_channel;

/** Create a channel (calloc; control rate). NULL with errno = EINVAL on a bad conf,
 * ENOMEM. Calling context: the owner lcore, or any thread before handing it over. */
struct sl_channel *
sl_channel_open(const struct sl_channel_conf *conf);

void
sl_channel_close(struct sl_channel *ch);

const char *
sl_channel_name(const struct sl_channel *ch);
int
sl_channel_is_ordered(const struct sl_channel *ch);
int
sl_channel_is_ephemeral(const struct sl_channel *ch);

/**
 * Add a subscriber with initial credit rdy. Returns its index (0..MAX_SUBS-1), or
 * -SL_E_LIMIT when full, -SL_E_EXISTS if sub_id is already subscribed. Owner lcore.
 */
int
sl_channel_sub_add(struct sl_channel *ch, uint64_t session, uint32_t session_slot,
		   uint64_t sub_id, uint32_t rdy);

/** Find a subscriber index by sub_id, or -SL_E_CHANNEL. */
int
sl_channel_sub_find(const struct sl_channel *ch, uint64_t sub_id);

/**
 * The subscriber's next hop moved (its session's generation is now gen, session.h): the
 * messages it holds were sent to the old one and may be lost, so they go back, ready now
 * (a redelivery, a duplicate where one did arrive). Nothing when gen is the one seen.
 * Returns how many went back. Owner lcore.
 */
uint32_t
sl_channel_sub_hop(struct sl_channel *ch, int sub, uint32_t gen, uint64_t now);

/** Set a subscriber's credit (NSQ RDY semantics: the new total, not an increment). */
int
sl_channel_sub_rdy(struct sl_channel *ch, int sub, uint32_t rdy);

/** Remove a subscriber; its in-flight ids become REQUEUED and ready now. Owner. */
void
sl_channel_sub_remove(struct sl_channel *ch, int sub, uint64_t now);

/** Subscriber slot (read-only view), or NULL. */
const struct sl_channel_sub *
sl_channel_sub_get(const struct sl_channel *ch, int sub);

/** Number of live subscribers. */
uint32_t
sl_channel_sub_count(const struct sl_channel *ch);

/**
 * Pick the next delivery given the partition's last written id end_id and time now.
 * Returns 1 and fills *d (the id is now IN_FLIGHT until now + msg_timeout), or 0 when
 * nothing can be delivered (no credit, window full, nothing ready). Owner lcore.
 */
int
sl_channel_next(struct sl_channel *ch, uint64_t end_id, uint64_t now,
		struct sl_channel_delivery *d);

/**
 * The id was not actually sent (e.g. no mbuf): put it back as it was before
 * sl_channel_next (credit returned, attempts not counted). Owner lcore.
 */
void
sl_channel_unsend(struct sl_channel *ch, const struct sl_channel_delivery *d);

/** FIN: returns 0, or -SL_E_MSG_ID if id is not IN_FLIGHT (already finished, unknown,
 * or requeued). Only the subscriber holding it may finish it: sub < 0 skips the check,
 * else a mismatch is -SL_E_MSG_ID. Owner lcore. */
int
sl_channel_fin(struct sl_channel *ch, int sub, uint64_t id);

/** REQ: requeue an in-flight id, ready after delay_ns (clamped). 0 or -SL_E_MSG_ID. */
int
sl_channel_req(struct sl_channel *ch, int sub, uint64_t id, uint64_t delay_ns, uint64_t now);

/** TOUCH: reset an in-flight id's deadline to now + msg_timeout. 0 or -SL_E_MSG_ID. */
int
sl_channel_touch(struct sl_channel *ch, int sub, uint64_t id, uint64_t now);

/**
 * Requeue every IN_FLIGHT id whose deadline passed (attempts kept, redelivered with
 * attempts + 1). Returns how many timed out. Owner lcore; cheap when nothing is due
 * (it tracks the earliest deadline).
 */
uint32_t
sl_channel_expire(struct sl_channel *ch, uint64_t now);

/** The earliest time (ns) the channel may have something due without any request: a
 * lower bound of its IN_FLIGHT deadlines and REQUEUED ready times, or UINT64_MAX when it
 * has none. Owner lcore (the idle loop's timer deadline). */
uint64_t
sl_channel_next_due(const struct sl_channel *ch);

/** Move the consume position: next id to deliver becomes next_id (>= 1); every in-flight
 * or requeued id is forgotten (backwards allowed). Owner lcore. */
void
sl_channel_reset(struct sl_channel *ch, uint64_t next_id);

/**
 * Idle time: how long (ns) the channel has had no subscriber and no position change
 * (sl_channel_mark_used), at now. Restarts (returns 0) while a subscriber is there, and on
 * the first call (a channel just opened or restored is not idle yet). Called by the owner
 * every tick, so a channel's idle time is exact to a tick. Owner lcore.
 */
uint64_t
sl_channel_idle(struct sl_channel *ch, uint64_t now);

/** The same without restarting anything (stats): 0 with a subscriber or never seen. */
uint64_t
sl_channel_idle_ns(const struct sl_channel *ch, uint64_t now);

/** The channel was used at now (e.g. SET_OFFSET without a subscription): its idle time
 * restarts. Owner lcore. */
void
sl_channel_mark_used(struct sl_channel *ch, uint64_t now);

/** All ids < this are finished: the channel's confirmed position. */
uint64_t
sl_channel_confirmed(const struct sl_channel *ch);
/** Next id never delivered. */
uint64_t
sl_channel_cursor(const struct sl_channel *ch);

void
sl_channel_get_stats(const struct sl_channel *ch, struct sl_channel_stats *st);

#endif /* SL_CHANNEL_H */
