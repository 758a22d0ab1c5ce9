/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * controller: the cluster controller's state machine (docs/cluster.md "The controller"),
 * apart from etcd and from the clock. It decides; a store (struct sl_controller_store: a
 * transaction of compare-and-swap puts, and a read) records. membership_etcd.c implements
 * the store with control/etcd.c; tests/fault/ctl_sim.c with an in-memory fake store on
 * simulated time.
 *
 * What it knows comes in as the store's keys, relative to the cluster's prefix, exactly as
 * etcd holds them (sl_controller_apply, from the initial read and the watch):
 *
 *   nodes/<id>               present: the node is live (its lease holds the key)
 *   controller               {"id": N}: who is the controller (create_revision fences)
 *   topics/<name>            {"partitions": P, "replicas": R, ...}
 *   partitions/<topic>/<p>   a view (sl_membership_view_json), mod_revision for the CAS
 *   pos/<id>                 {"<topic>/<p>": [committed end, log end], ...}: a beat
 *
 * plus the node's own lease (sl_controller_set_lease: 0 while fenced) and the time, passed
 * in (milliseconds of a monotonic clock). sl_controller_tick runs for the controller
 * (election when no controller key is known, the scan every SL_CONTROLLER_SCAN_MS or when
 * a node, a topic or the controller changed, silent leaders between scans).
 *
 * Writes: every view the controller writes compares the partition key's mod_revision (a
 * new one: create_revision == 0) and the controller key's create_revision with the one its
 * election created, so a deposed controller's writes fail. The views of many partitions
 * (a new topic's placement, every partition a dead node led) go out in transactions of at
 * most SL_CONTROLLER_TXN_KEYS keys (etcd 3.4's --max-txn-ops 128 counts the compares:
 * that many keys plus the controller key). A transaction is all or nothing: when one of
 * its compares fails, nothing of it is written; the controller then reads the controller
 * key (deposed: it stops) and the lost topics' partition keys again, decides again for
 * them and writes what is still needed, at most SL_CONTROLLER_RETRIES times per tick; what
 * is left waits for the next scan.
 *
 * Calling context: one thread (sluiced: the control thread); the store's calls are made
 * from the caller's thread, inside sl_controller_tick.
 */
#ifndef SL_CONTROLLER_H
#define SL_CONTROLLER_H

#include <stddef.h>
#include <stdint.h>

#include "coord.h"

#define SL_CONTROLLER_SCAN_MS 1000	/* every partition re-checked this often */
#define SL_CONTROLLER_BEAT_MS 200	/* leaders and the controller write pos/<id> so often */
#define SL_CONTROLLER_SUSPECT_MS 1200	/* a leader silent this long is failed over */
#define SL_CONTROLLER_TXN_KEYS 127	/* partition keys per transaction (+ the controller) */
#define SL_CONTROLLER_RETRIES 3		/* a transaction that lost a compare: decided again */
#define SL_CONTROLLER_MAX_NODES 64
#define SL_CONTROLLER_KEY_MAX 96	/* "partitions/" topic "/" part */

enum sl_controller_target {
	SL_CONTROLLER_CMP_CREATE = 0,	/* the key's create_revision (0: it does not exist) */
	SL_CONTROLLER_CMP_MOD,		/* the key's mod_revision */
};

/* A compare: the key's target equals rev. */
struct sl_controller_cmp {
	const char *key;
	enum sl_controller_target target;
	int64_t rev;
};

/* A put: key = value[0..value_len), under lease (0: none). */
struct sl_controller_put {
	const char *key;
	const char *value;
	size_t value_len;
	int64_t lease;
};

/* A key as the store holds it (key relative to the prefix, NUL-terminated). */
struct sl_controller_kv {
	const char *key;
	const char *value;
	size_t value_len;
	int64_t create_rev;
	int64_t mod_rev;
	int64_t lease;
};

typedef void (*sl_controller_kv_fn)(void *arg, const struct sl_controller_kv *kv);

/* The store. Keys are relative to the cluster's prefix. */
struct sl_controller_store {
	/* If every compare holds, every put, as one revision: 1 with *rev that revision;
	 * 0 when a compare failed (nothing written); a negative errno when the store could
	 * not be asked (nothing known: it may or may not have been written). */
	int (*txn)(void *arg, const struct sl_controller_cmp *cmp, size_t ncmp,
		   const struct sl_controller_put *put, size_t nput, int64_t *rev);
	/* Read key (prefix != 0: every key under it) and hand each to fn(fn_arg, kv) (the
	 * kv lives for the call). 0 or a negative errno. */
	int (*read)(void *arg, const char *key, int prefix, sl_controller_kv_fn fn,
		    void *fn_arg);
};

struct sl_controller_conf {
	uint32_t node_id;			/* this node */
	const struct sl_controller_store *store;
	void *store_arg;			/* the store's first argument */
};

struct sl_controller_stats {
	uint64_t elections;		/* won */
	uint64_t placed;		/* partitions placed */
	uint64_t failovers;		/* leader changes written */
	uint64_t suspects;		/* ... of them for a silent leader */
	uint64_t txns;			/* transactions sent (every answer) */
	uint64_t cas_lost;		/* transactions whose compares failed */
	uint64_t reads;			/* reads after a lost compare */
	uint64_t waiting;		/* acting: partitions waiting for a live ISR member */
};

struct sl_controller;

/** A controller for node conf->node_id over conf->store: knows nothing yet, not the
 * controller. NULL with rte_errno set (EINVAL, ENOMEM). Any thread (then its own). */
struct sl_controller *
sl_controller_open(const struct sl_controller_conf *conf);

/** Free it (NULL is fine). Its thread. */
void
sl_controller_close(struct sl_controller *c);

/** A key read or watched (del: deleted; kv->value then empty), relative to the prefix;
 * keys the controller does not use are ignored. Marks the scan due when a node comes or
 * goes, a topic or the controller key changes. Its thread. */
void
sl_controller_apply(struct sl_controller *c, const struct sl_controller_kv *kv, int del,
		    uint64_t now_ms);

/** A watch event arrived at now_ms (any key): the controller suspects a silent leader only
 * while the watch delivers events with no gap above 2 SL_CONTROLLER_BEAT_MS. Its thread. */
void
sl_controller_watch_event(struct sl_controller *c, uint64_t now_ms);

/** This node's lease (0: none, or fenced: it cannot prove it is alive). A change stops it
 * acting as controller (its key was under the old lease) until the key under the new one
 * is seen. Its thread. */
void
sl_controller_set_lease(struct sl_controller *c, int64_t lease);

/** A full read of the cluster begins: the keys read follow (sl_controller_apply), then
 * sl_controller_read_end. Its thread. */
void
sl_controller_read_begin(struct sl_controller *c);

/** The full read is complete: a node whose key it did not hold is gone (its deletion
 * happened while nothing was watched). Not called when the read failed. Its thread. */
void
sl_controller_read_end(struct sl_controller *c);

/** Forget who the controller is (before the cluster is read again: a controller key that
 * went meanwhile is not seen deleted). Its thread. */
void
sl_controller_forget(struct sl_controller *c);

/**
 * The controller's work at now_ms, when able (this node holds its lease and the store
 * answers): run for controller when no controller key is known; as the controller, the
 * scan when due (placement, failover of leaders whose node is gone) and the failover of
 * silent leaders. Returns the number of partition views written, or a negative errno from
 * the store (the rest waits for the next tick). Its thread.
 */
int
sl_controller_tick(struct sl_controller *c, uint64_t now_ms, int able);

/** The controller's node id as known here (0: none). Its thread. */
uint32_t
sl_controller_id(const struct sl_controller *c);

/** 1 when this node is the controller and acts as one. Its thread. */
int
sl_controller_acting(const struct sl_controller *c);

/** The counters. Its thread. */
void
sl_controller_get_stats(const struct sl_controller *c, struct sl_controller_stats *st);

#endif /* SL_CONTROLLER_H */
