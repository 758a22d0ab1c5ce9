/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * ptab: the producer table of one partition, the idempotency state that follows the log
 * from node to node (Kafka's idempotent producer: producer id + sequence, kept with the
 * log). A client that names a producer id in its HELLO (docs/protocol.md section 8.1)
 * keeps that id, and the sequence number of each publish, across sessions and brokers;
 * every publish of such a session is written with its (producer, seq) tag, the tag
 * travels with the record to the replicas (replication WRITE and FETCH_RESP, repl.c),
 * and every replica notes it here. So the node that leads next recognises a retry of a
 * publish the old leader wrote (and maybe acknowledged) and answers it with the original
 * answer (same id) instead of writing it again.
 *
 * Per producer the table keeps the answers of its last SL_PTAB_SEQS publishes to the
 * partition (seq, first id, count, queue offset), in log order, and `floor`, the highest
 * seq it forgot. For (producer, seq):
 *   - held: DUP, the original answer;
 *   - not held and seq > floor: NEW (every write of the producer above floor is held);
 *   - not held and seq <= floor: OLD, the outcome cannot be told (SL_E_SEQ_OLD);
 *   - producer unknown: NEW.
 * At most SL_PTAB_PRODUCERS producers per partition: a new one takes the free entry or
 * the least recently written one (counted in `evictions`; a retry of an evicted
 * producer's publish is then not recognised). Memory is fixed at open: a hostile client
 * cannot grow it. Kept across restarts by the log itself: every commit record on disk
 * keeps its tag (storage/disklog.h, version 3 segments), and sl_partition_open rebuilds
 * the table from the newest SL_PTAB_SCAN commit records of the disk log
 * (sl_ptab_rebuild), after a crash (SIGKILL, machine crash) as after a clean stop. The
 * rebuilt table is the one the live table would be after noting those records in order,
 * with one difference when the log holds more (the read stopped at SL_PTAB_SCAN): each
 * producer held gets floor >= its lowest held seq - 1, so that a seq below what it holds
 * answers OLD (outcome unknown) rather than NEW. A producer whose newest publish is more
 * than SL_PTAB_SCAN records back from the log's end at open is not known (as an evicted
 * one): a retry of it is written again. Replicas keep the tags they receive the same
 * way, so any node rebuilds the same table from the same log. With `memory` durability
 * and a data directory the table itself lives in a shared file mapping
 * (storage/persist.h sl_pstore_ptab_mem), so that after a kill the tags of the records
 * replayed from the memory log file (which keeps none) are found in it.
 *
 * Owner: the partition's worker lcore. No allocation, no lock. A check or a note is
 * O(SL_PTAB_PRODUCERS) to find the producer and O(1) for a seq above all it holds;
 * a lookup by id (replication's reads) is O(SL_PTAB_PRODUCERS + SL_PTAB_SEQS).
 */
#ifndef SL_PTAB_H
#define SL_PTAB_H

#include <stddef.h>
#include <stdint.h>

#include "crec.h"

#define SL_PTAB_PRODUCERS 16	/* producers per partition */
#define SL_PTAB_SEQS 128	/* publishes remembered per producer and partition:
				 * at least any session window (< SL_IDEM_WINDOW,
				 * broker.c checks), so that a client's whole window
				 * can be retried after a failover or a busy answer
				 * even if it all goes to one partition */

#define SL_PTAB_SCAN (2 * SL_PTAB_PRODUCERS * SL_PTAB_SEQS)	/* commit records read back
				 * at open to rebuild the table (4,096: 320 KiB of commit
				 * log at 80 bytes each, one pass): twice what a full table
				 * holds, so a table of busy producers comes back whole
				 * even with as many untagged publishes between theirs */

enum sl_ptab_verdict {
	SL_PTAB_NEW = 0,	/* not written: write it, then sl_ptab_note() */
	SL_PTAB_DUP = 1,	/* written: *hit is the original answer */
	SL_PTAB_OLD = 2,	/* below what is remembered: outcome unknown, write nothing */
};

struct sl_ptab_ent {
	uint64_t seq;
	uint64_t id;		/* first message id */
	uint64_t offset;	/* queue offset of the first message */
	uint32_t count;		/* messages */
	uint32_t pad;
};

struct sl_ptab_prod {
	uint64_t producer;	/* 0: free */
	uint64_t floor;		/* highest seq forgotten (0: none) */
	uint64_t max_seq;	/* highest seq held */
	uint64_t used;		/* LRU tick of the last note */
	uint32_t head;		/* oldest entry */
	uint32_t n;		/* entries held */
	struct sl_ptab_ent e[SL_PTAB_SEQS];	/* ring, in log (id) order */
};

struct sl_ptab {
	uint64_t tick;
	uint64_t evictions;	/* producers forgotten to make room */
	uint64_t dups;		/* retries answered from the table */
	uint64_t old;		/* retries refused SL_E_SEQ_OLD */
	struct sl_ptab_prod p[SL_PTAB_PRODUCERS];
};

/** Empty the table. Owner (or before the owner starts). */
void
sl_ptab_init(struct sl_ptab *t);

/** Classify (producer != 0, seq). DUP: *hit is the original answer. Owner. */
enum sl_ptab_verdict
sl_ptab_check(const struct sl_ptab *t, uint64_t producer, uint64_t seq,
	      const struct sl_ptab_ent **hit);

/** A publish of (producer, seq) was written at id (count messages from queue offset
 * offset): remember it. Ids must come in log order. Producer 0 is ignored. Owner. */
void
sl_ptab_note(struct sl_ptab *t, uint64_t producer, uint64_t seq, uint64_t id, uint32_t count,
	     uint64_t offset);

/** The log lost every id > end (a rollback, a divergent tail): forget their tags. Owner. */
void
sl_ptab_truncate(struct sl_ptab *t, uint64_t end);

/** The tag of the record starting at id: 0 with *producer and *seq, or -1 (none held).
 * Owner. */
int
sl_ptab_find_id(const struct sl_ptab *t, uint64_t id, uint64_t *producer, uint64_t *seq);

/** Producers held. Owner. */
uint32_t
sl_ptab_count(const struct sl_ptab *t);

/**
 * Rebuild t from the newest n commit records of the partition's log, oldest first
 * (recs[i].producer 0: untagged), as the table described above: emptied, each tagged
 * record noted in order (id log_id, msg_num messages at msg_offset), then, when cut (the
 * log holds older records that were not read), every producer's floor raised to below its
 * lowest held seq. The counters start at 0. Owner (or before the owner starts).
 */
void
sl_ptab_rebuild(struct sl_ptab *t, const struct sl_crec *recs, uint32_t n, int cut);

/** 1 when t is shaped as a table this module made (counts and ring positions in range,
 * each producer's ids in log order), else 0: a table read back from a file that a
 * process was killed while changing is checked before use. Any thread. */
int
sl_ptab_valid(const struct sl_ptab *t);

#endif /* SL_PTAB_H */
