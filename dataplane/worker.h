/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * worker: the polling loop of a worker lcore and everything it owns. Internal to the
 * dataplane: broker.c creates workers and talks to them through command rings.
 *
 * Loop, every iteration (one QSBR read-side critical section):
 *   1. commands from the control thread (attach/detach partitions, channel changes,
 *      snapshots);
 *   2. frames forwarded by the other workers (SPSC rings, one per source worker); on
 *      worker 0, frames the others hand it to transmit on software-dispatch ports;
 *   3. RX bursts from this worker's queue of every port: parse, answer ARP/ICMP, decode
 *      the sluice frame, forward it to the partition's owner or execute it, answer in
 *      place (the request mbuf becomes the answer);
 *   4. deliveries: for every owned partition and channel, MSG frames to subscribers
 *      with credit; every millisecond, in-flight timeouts and log trimming;
 *   5. TX flush; rcu_quiescent_state(); adaptive idle sleep (offline) when nothing
 *      happened for idle_polls iterations.
 * No heap allocation, syscall, lock or log line per packet. Channel creation on SUB is
 * the one allocation a worker does (once per channel).
 */
#ifndef SL_WORKER_H
#define SL_WORKER_H

#include <stdint.h>

#include <rte_common.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include "broker.h"
#include "idem.h"
#include "memlog.h"
#include "net.h"
#include "persist.h"
#include "repl.h"
#include "wire.h"

#define SL_WORKER_MAX_PARTS 4096
#define SL_WORKER_BURST 32
#define SL_WORKER_TXQ_MAX 64
#define SL_WORKER_PEND 4096	/* publishes waiting for the disk, per partition */
#define SL_WORKER_EPOCHS 16	/* epoch history (KIP-101) kept per partition */

/* A publish answered once its messages are durable (or the store fails): the request
 * frame is kept and turned into the answer then. */
struct sl_pend {
	struct rte_mbuf *m;		/* NULL: no answer wanted (NOACK) */
	uint64_t last_id;
	uint32_t slot;			/* session slot (idempotency window) */
	uint16_t pi;
	uint8_t anon;
	struct sl_net_info info;
	struct sl_wire_hdr hdr;
	struct sl_idem_entry e;
};

#define SL_WORKER_CHANWAIT 64	/* channel syncs waiting for the ISR, per partition */

/* An ordered FIN or a SET_OFFSET waiting for every ISR member (replication). */
struct sl_chanwait {
	uint64_t token;
	uint64_t prev;			/* the position to roll back to */
	uint8_t used;
	uint8_t held;			/* req holds the client's request */
	uint8_t done;			/* answered while being posted */
	int err;
	char chan[SL_CHANNEL_NAME_MAX + 1];
	struct sl_pend req;
};

/* Runtime state of one partition: owned by one worker lcore. */
struct sl_pstate {
	struct sl_partition *part;	/* coordinator entry (stable for the topic's life) */
	uint16_t partid;
	uint16_t owner;
	struct sl_memlog *log;
	void *log_mem;			/* rte_malloc'ed region behind log */
	uint32_t nchans;
	struct sl_channel *chans[SL_BROKER_MAX_CHANNELS];
	uint64_t pubs;
	uint64_t msgs_in;
	uint64_t bytes_in;
	uint64_t full_errs;
	uint64_t deliveries;
	uint64_t trimmed_to;
	uint64_t log_base;		/* the partition log's first id ever held: 1, or where
					 * it was reset to (replication catch-up) or retained */
	/* storage (NULL store: memory only, no data directory) */
	struct sl_pstore *store;
	int disk;			/* durability disk: answer and deliver when durable */
	int store_err;			/* the store's error was seen and handled */
	uint32_t store_gen;		/* store generation this worker writes under */
	uint8_t pslot[SL_BROKER_MAX_CHANNELS];	/* channel -> persisted position slot */
	uint32_t pslots_used;		/* bitmap of SL_PERSIST_MAX_CHANS slots */
	struct sl_pend *pend;		/* [SL_WORKER_PEND] FIFO (disk durability) */
	uint32_t pend_head;
	uint32_t pend_tail;
	struct sl_pfind find;		/* a client's SET_OFFSET looked up on disk */
	struct sl_pend setoff;		/* ... and its request, answered when found */
	char setoff_chan[SL_CHANNEL_NAME_MAX + 1];
	int setoff_busy;
	uint64_t io_errs;		/* publishes refused or failed by a storage error */
	uint64_t disk_reads;		/* messages delivered from the disk reader */
	uint64_t disk_skipped;		/* ids gone from disk (retention) when delivered */
	uint64_t cache_trims;		/* memory trimmed past a channel (data on disk) */
	/* replication (NULL repl: a node without a cluster) */
	struct sl_worker *w;		/* the owner, for the replication callbacks */
	struct sl_repl *repl;
	struct sl_repl_ops repl_ops;	/* the callbacks, with arg = this state */
	struct sl_repl_view view;	/* the view last installed into repl */
	uint64_t view_version;
	uint64_t committed;		/* commit index: every ISR member holds it */
	struct sl_repl_crec disk_last;	/* the disk log's last commit record at start */
	struct sl_chanwait *chanwait;	/* [SL_WORKER_CHANWAIT] */
	uint64_t chan_token;
	uint32_t nepochs;
	uint64_t epoch_of[SL_WORKER_EPOCHS];	/* epoch history: epoch_of[i] starts */
	uint64_t epoch_start[SL_WORKER_EPOCHS];	/* at id epoch_start[i] */
};

enum sl_wcmd_op {
	SL_WCMD_ATTACH = 1,	/* start owning ps */
	SL_WCMD_DETACH,		/* stop owning ps: drop channels and subscriptions */
	SL_WCMD_CHAN_CREATE,
	SL_WCMD_CHAN_DELETE,
	SL_WCMD_CHAN_RESET,
	SL_WCMD_PART_INFO,
};

/* A command from the control thread; the worker sets result then done (release). */
struct sl_wcmd {
	enum sl_wcmd_op op;
	struct sl_pstate *ps;
	char chan[SL_CHANNEL_NAME_MAX + 1];
	int ordered;
	uint8_t kind;
	uint64_t value;
	struct sl_part_info *info;
	int result;
	uint64_t out_id;
	int done;
};

struct sl_worker {
	struct sl_broker *b;
	const struct sl_broker_conf *conf;
	uint16_t idx;
	unsigned int lcore;
	struct rte_ring *cmd;				/* control -> this worker */
	struct rte_ring *in[SL_BROKER_MAX_WORKERS];	/* worker i -> this worker */
	struct rte_ring *txin[SL_BROKER_MAX_WORKERS];	/* worker 0 only: worker i's frames
							 * for ports with one TX queue */
	struct rte_ring *autocreate;			/* this worker -> control */
	struct sl_worker **peers;			/* every worker, by index */
	struct sl_coord *coord;
	struct sl_persist *persist;			/* NULL without a data directory */
	struct sl_session_table *sessions;
	struct sl_idem *idem;				/* [max_sessions] */
	uint32_t nparts;
	struct sl_pstate **parts;			/* [SL_WORKER_MAX_PARTS] */
	uint64_t sub_counter;
	uint64_t now_tsc;
	uint64_t now_ns;	/* monotonic ns (from tsc) */
	uint64_t wall_base_ns;
	uint64_t tsc_base;
	double ns_per_tsc;
	uint64_t next_tick_tsc;
	uint64_t tick_tsc;
	struct sl_net_arp *arp[SL_BROKER_MAX_PORTS];	/* neighbours (replica peers) */
	uint64_t arp_asked_tsc[SL_BROKER_MAX_NODES];	/* last ARP request per node */
	uint8_t *rbuf;					/* replication scratch buffer */
	struct rte_ring *viewreq;			/* this worker -> control: ISR */
	uint16_t ntx[SL_BROKER_MAX_PORTS];
	struct rte_mbuf *tx[SL_BROKER_MAX_PORTS][SL_WORKER_TXQ_MAX];
	struct sl_worker_stats st __rte_cache_aligned;
} __rte_cache_aligned;

/** Worker lcore entry point (rte_eal_remote_launch). arg: struct sl_worker *. */
int
sl_worker_main(void *arg);

/** Create a partition's runtime state (log in hugepage memory). With a store, the log
 * continues where the disk log ends, and the saved channel positions are restored.
 * Control thread. NULL with rte_errno. */
struct sl_pstate *
sl_worker_pstate_create(const struct sl_broker_conf *conf, uint16_t partid, uint16_t owner,
			struct sl_pstore *store);

/**
 * Give a partition its replication state (a node with a cluster): the view comes from the
 * coordinator on the worker's next loop. topic: the topic's name. Control thread, before
 * the partition is attached. 0 or -ENOMEM / -EINVAL.
 */
int
sl_worker_pstate_replicate(const struct sl_broker_conf *conf, struct sl_pstate *ps,
			   const char *topic, struct sl_worker *owner);

/* An ISR change the partition's leader asks the control thread for (the membership seam). */
struct sl_wviewreq {
	char topic[SL_COORD_NAME_MAX + 1];
	uint16_t partition;
	uint8_t join;			/* 1: add node to the ISR, 0: remove it, 2: take the
					 * leader's ISR (isr, nisr) for (epoch, session) */
	uint32_t node;			/* join 0/1; join 2: the leader */
	uint32_t epoch;			/* join 2 */
	uint64_t session;		/* join 2 */
	uint8_t nisr;			/* join 2 */
	uint32_t isr[SL_COORD_MAX_REPLICAS];
};

/** Free a detached partition state. Control thread. */
void
sl_worker_pstate_free(struct sl_pstate *ps);

#endif /* SL_WORKER_H */
