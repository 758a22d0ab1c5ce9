/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * coord: the coordinator data of a node - topics, their partitions, the lcore that owns
 * each partition, and the replication fields (leader, replicas, ISR, write epoch, leader
 * session) - in liburcu QSBR structures.
 *
 * Writers: the control thread only. Readers: worker lcores, lock-free, between two
 * quiescent states (each worker loop iteration is one read-side critical section).
 *  - topics live in a cds_lfht keyed by name;
 *  - a partition's replication fields are an immutable struct sl_part_meta behind an
 *    RCU pointer: the control thread publishes a new version with
 *    sl_coord_part_set_meta() and the old one is freed after a grace period (call_rcu);
 *  - a removed topic is freed by its owner after synchronize_rcu().
 * A partition's runtime state (log, channels) is not coordinator data: it belongs to the
 * owning worker lcore and is reached through part->state.
 */
#ifndef SL_COORD_H
#define SL_COORD_H

#include <stdint.h>

#include <urcu-qsbr.h>
#include <urcu/rculfhash.h>

#define SL_COORD_MAX_PARTS 1024
#define SL_COORD_MAX_REPLICAS 8
#define SL_COORD_NAME_MAX 64

/* Topic flags */
#define SL_COORD_TOPIC_AUTO 0x1 /* created by auto-creation on first publish */

/* Replication view of a partition. Immutable once published. */
struct sl_part_meta {
	uint32_t leader;		/* node id of the leader */
	uint32_t epoch;			/* write epoch */
	uint64_t leader_session;	/* leader session (changes on every leadership) */
	uint8_t nreplicas;
	uint8_t nisr;
	uint8_t writes_disabled;	/* leadership change in progress */
	uint32_t replicas[SL_COORD_MAX_REPLICAS];
	uint32_t isr[SL_COORD_MAX_REPLICAS];
	struct rcu_head rcu;
};

struct sl_topic;

struct sl_coord_part {
	struct sl_topic *topic;
	uint16_t id;
	uint16_t owner;			/* index of the owning worker */
	struct sl_part_meta *meta;	/* RCU pointer: rcu_dereference() */
	void *state;			/* owned by the worker lcore `owner` */
};

struct sl_topic {
	struct cds_lfht_node node;
	char name[SL_COORD_NAME_MAX + 1];
	uint8_t name_len;
	uint16_t nparts;
	uint32_t flags;
	uint64_t created_ns;		/* wall clock */
	uint64_t mem;			/* bytes its partitions' logs reserve, counted against
					 * the memory budget (set before sl_coord_topic_add) */
	uint32_t auto_src;		/* auto-created: the client address (network order)
					 * whose publish created it, counted against
					 * --auto-topics-per-source; 0 otherwise. Control thread */
	struct sl_coord_part *parts;	/* nparts entries, fixed for the topic's life */
};

struct sl_coord_conf {
	uint32_t node_id;
	uint32_t max_topics;		/* 0 = SL_COORD_MAX_TOPICS_DEFAULT */
	uint64_t mem_budget;		/* bytes all topics' logs may reserve; 0 = no budget */
};

#define SL_COORD_MAX_TOPICS_DEFAULT 1024

struct sl_coord;

/** Create the topic table. Control thread, before workers start. NULL + errno. */
struct sl_coord *
sl_coord_open(const struct sl_coord_conf *conf);

/** Destroy the (empty) table. Control thread, after the workers stopped. */
void
sl_coord_close(struct sl_coord *c);

uint32_t
sl_coord_node_id(const struct sl_coord *c);

/** Number of topics. Any thread (approximate while changing). */
uint32_t
sl_coord_topic_count(const struct sl_coord *c);

/** Bytes the published topics reserve (the sum of their `mem`). Any thread (approximate
 * while changing). */
uint64_t
sl_coord_mem_used(const struct sl_coord *c);

/** The limits: *max_topics and *mem_budget (0: no budget). */
void
sl_coord_limits(const struct sl_coord *c, uint32_t *max_topics, uint64_t *mem_budget);

/** Set the memory budget (0: none). Control thread, before the workers start. */
void
sl_coord_set_budget(struct sl_coord *c, uint64_t mem_budget);

/**
 * Is there room for one more topic reserving mem bytes: fewer topics than the limit and,
 * with a budget, the reserved memory plus mem within it? 0 or -SL_E_CAPACITY. Any thread:
 * a worker asks before it queues an auto-creation (a racy but safe answer: the control
 * thread, the only writer, asks again before it creates).
 */
int
sl_coord_room(const struct sl_coord *c, uint64_t mem);

/**
 * Find a topic by name. Calling context: RCU read side (a registered, online QSBR
 * thread: a worker lcore, or the control thread). The result stays valid until the
 * caller's next quiescent state.
 */
struct sl_topic *
sl_coord_topic_find(struct sl_coord *c, const char *name, uint32_t len);

/**
 * Allocate a topic with nparts partitions, each with a single-replica meta (this node
 * leads, epoch 1, ISR = {this node}). owners[i] is partition i's worker; states[i] its
 * runtime state. Not yet visible: publish with sl_coord_topic_add(). Control thread.
 * NULL with errno (EINVAL, ENOMEM).
 */
struct sl_topic *
sl_coord_topic_alloc(struct sl_coord *c, const char *name, uint16_t nparts,
		     const uint16_t *owners, void *const *states, uint32_t flags);

/** Publish a topic. -SL_E_EXISTS if the name is taken, -SL_E_CAPACITY if there is no room
 * for it (sl_coord_room). Control thread (online). */
int
sl_coord_topic_add(struct sl_coord *c, struct sl_topic *t);

/** Unpublish a topic: new lookups miss it. The caller frees it with
 * sl_coord_topic_free() after synchronize_rcu(). Control thread (online). */
int
sl_coord_topic_del(struct sl_coord *c, struct sl_topic *t);

/** Free an unpublished topic and its metas (not the partition states). Control thread. */
void
sl_coord_topic_free(struct sl_topic *t);

/** Publish a new replication view of a partition (copied); the old one is freed after a
 * grace period. Control thread. 0 or -ENOMEM. */
int
sl_coord_part_set_meta(struct sl_coord_part *p, const struct sl_part_meta *m);

/** Bytes the memory budget has left (UINT64_MAX: no budget). Control thread. */
uint64_t
sl_coord_mem_room(const struct sl_coord *c);

/** A published topic's partitions grew by mem bytes (counted in t->mem and the budget's
 * use, given back when the topic is deleted). Control thread. */
void
sl_coord_topic_grew(struct sl_coord *c, struct sl_topic *t, uint64_t mem);

/** Visit every topic (RCU read side). Stops when fn returns non-zero. */
void
sl_coord_foreach(struct sl_coord *c, int (*fn)(void *arg, struct sl_topic *t), void *arg);

#endif /* SL_COORD_H */
