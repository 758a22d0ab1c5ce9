/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * partition internals, shared by partition.c (log, channels, storage, delivery) and
 * partition_repl.c (the replication adapter). Included by nothing else.
 */
#ifndef SL_PARTITION_INT_H
#define SL_PARTITION_INT_H

#include <rte_log.h>

#include "memlog.h"
#include "partition.h"
#include "ptab.h"

/* A publish waiting to be durable and committed. */
struct pend {
	uint64_t token;
	uint64_t last_id;
};

/* An ordered FIN or a SET_OFFSET waiting for every ISR member. */
struct chanwait {
	uint64_t token;			/* the client's request (worker token) */
	uint64_t seq;			/* replication's token for it */
	uint64_t prev;			/* the position to roll back to */
	uint8_t used;
	uint8_t held;			/* the caller returned SL_PARTITION_HELD */
	uint8_t done;			/* settled while being posted */
	int err;
	char chan[SL_CHANNEL_NAME_MAX + 1];
};

#define DONE_RING (2 * SL_PARTITION_PEND)	/* > every token that can be held */

struct sl_partition {
	struct sl_partition_conf conf;
	struct sl_coord_part *cp;	/* coordinator entry (stable for the topic's life) */
	struct sl_memlog *log;
	void *log_mem;			/* reserved anonymous region behind log, or
					 * (log_mapped) the store's shared file mapping
					 * (memfile.h); both grown by sl_partition_grow */
	int log_mapped;
	struct sl_pstore *store_mapped;	/* log_mapped: the store whose file it is */
	uint64_t grow_refused;		/* growth steps refused by the memory budget */
	uint32_t grow_kicked;		/* the owner wrote grow_fd since the last growth step
					 * (set by the owner, cleared by the grower: atomics) */
	uint64_t grow_kicks;		/* times it did (owner) */
	int tables_ready;		/* ptab, pend, done populated (grow_tables) */
	int ptab_restored;		/* the table holds what the log had at open (or is
					 * the store's populated file mapping) */
	uint64_t open_end_id;		/* the log's end at open: it took a publish since
					 * when its end differs */
	uint32_t nchans;
	struct sl_channel *chans[SL_BROKER_MAX_CHANNELS];
	uint64_t pubs;
	uint64_t msgs_in;
	uint64_t bytes_in;
	uint64_t full_errs;
	uint64_t deliveries;
	uint64_t trimmed_to;
	uint64_t log_base;		/* the log's first id ever held: 1, or where it was
					 * reset to (replication catch-up) or retained */
	/* storage (NULL store: memory only, no data directory) */
	struct sl_pstore *store;
	struct sl_persist *persist;
	int disk;			/* durability disk: answer and deliver when durable */
	int store_err;			/* the store's error was seen and handled; set until
					 * a resume's hand-over is complete */
	uint64_t handover_next;		/* resumed: the next id memory hands over to the
					 * disk again (0: none) */
	uint32_t store_gen;		/* store generation this partition writes under */
	uint8_t pslot[SL_BROKER_MAX_CHANNELS];	/* channel -> persisted position slot */
	uint8_t chan_anon[SL_BROKER_MAX_CHANNELS];	/* created by a client's SUB */
	uint32_t chan_src[SL_BROKER_MAX_CHANNELS];	/* its creator's address (0: not known,
							 * e.g. restored from disk) */
	uint64_t sub_chans_refused;	/* SUBs refused by the anonymous channel limits */
	uint64_t sub_chans_expired;	/* idle anonymous channels deleted */
	uint32_t pslots_used;		/* bitmap of SL_PERSIST_MAX_CHANS slots */
	struct pend *pend;		/* [SL_PARTITION_PEND] FIFO (disk or replication) */
	uint32_t pend_head;
	uint32_t pend_tail;
	struct sl_partition_done *done;	/* [DONE_RING] completions not yet polled */
	uint32_t done_head;
	uint32_t done_tail;
	struct sl_pfind find;		/* a client's SET_OFFSET looked up on disk */
	uint64_t setoff_token;
	char setoff_chan[SL_CHANNEL_NAME_MAX + 1];
	int setoff_busy;
	uint64_t io_errs;		/* publishes refused or failed by a storage error */
	uint64_t disk_reads;		/* messages delivered from the disk reader */
	uint64_t disk_skipped;		/* ids gone from disk (retention) when delivered */
	uint64_t cache_trims;		/* memory trimmed past a channel (data on disk) */
	/* replication (NULL repl: a node without a cluster) */
	struct sl_repl *repl;
	struct sl_repl_ops repl_ops;	/* the callbacks, with arg = this partition */
	struct sl_partition_repl_conf rc;
	struct sl_repl_view view;	/* the view last installed into repl */
	uint64_t view_version;
	uint64_t committed;		/* commit index: every ISR member holds it */
	uint64_t now_ns;		/* of the call in progress (replication callbacks) */
	struct sl_crec disk_last; /* the disk log's last commit record at start */
	struct chanwait *chanwait;	/* [SL_PARTITION_CHANWAIT] */
	uint64_t chan_token;
	uint32_t nepochs;
	uint64_t epoch_of[SL_PARTITION_EPOCHS];	/* epoch history: epoch_of[i] starts */
	uint64_t epoch_start[SL_PARTITION_EPOCHS];	/* at id epoch_start[i] */
	/* the producer table: (producer, seq) of the log's recent publishes, on every
	 * replica (ptab.h); fixed size, reserved at open, populated at the first publish */
	struct sl_ptab *ptab;
	uint8_t ptab_shared;	/* ptab is the store's file mapping (memory durability) */
};

/* partition.c, for the replication adapter */
int
sl_partition_chan_find(const struct sl_partition *p, const char *name, uint32_t len);
int
sl_partition_chan_open(struct sl_partition *p, const char *name, uint32_t len, int ordered,
		       int ephemeral, uint64_t start_id);
void
sl_partition_complete(struct sl_partition *p, uint64_t token, int err);
uint32_t
sl_partition_fail_after(struct sl_partition *p, uint64_t id, int err);
uint64_t
sl_partition_write_epoch(const struct sl_partition *p);
int
sl_partition_queues(struct sl_partition *p);

/* partition_repl.c: the epoch of the record starting at id (a replicated partition's epoch
 * history). Owner lcore. */
uint64_t
sl_partition_epoch_for(const struct sl_partition *p, uint64_t id);

extern int sl_partition_logtype;
#define PLOG(level, fmt, ...) \
	rte_log(RTE_LOG_##level, sl_partition_logtype, "partition: " fmt "\n", ##__VA_ARGS__)

/* partition_repl.c */
extern const struct sl_repl_ops sl_partition_repl_ops;
int
sl_partition_repl_write(struct sl_partition *p, const struct sl_memlog_rec *first, uint32_t n);
uint32_t
sl_partition_repl_poll(struct sl_partition *p, uint64_t now_ns);
int
sl_partition_chan_sync(struct sl_partition *p, struct sl_channel *ch, uint64_t prev,
		       int set_offset, uint64_t token);

#endif /* SL_PARTITION_INT_H */
