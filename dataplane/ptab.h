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
 * cannot grow it. Kept across a clean stop only: the broker saves the snapshot below
 * (sl_ptab_snap_encode) as the file "producers" of the partition's directory when it
 * closes, and the next sl_partition_open loads it (sl_ptab_snap_decode, then drops the
 * tags beyond the disk log's end) and removes it. After a crash the table starts empty
 * and learns the tags of the records the node fetches from the leader.
 *
 * Snapshot format, version 1 (all integers little-endian):
 *   offset size
 *      0    4 magic "SLPT" (0x54504c53)
 *      4    2 version (1)
 *      6    2 producers n (<= SL_PTAB_PRODUCERS)
 *      8    8 log id covered: the table holds every tag of ids <= this
 *     16    4 total length in bytes (header included)
 *     20    4 crc32c (Castagnoli, reflected, init and final xor ~0) of every byte of the
 *             snapshot except these 4
 *     24      n producers, least recently written first, each:
 *        0  8 producer id (!= 0)
 *        8  8 floor
 *       16  4 entries k (<= SL_PTAB_SEQS)
 *       20  4 zero
 *       24    k entries in log order (first id strictly increasing, seq != 0), 32 bytes:
 *             seq 8, first id 8, queue offset 8, count 4, zero 4
 * A snapshot that is short, long, of another magic or version, or whose crc or content
 * does not check, is refused whole (the table is left empty).
 *
 * Owner: the partition's worker lcore. No allocation, no lock. A check or a note is
 * O(SL_PTAB_PRODUCERS) to find the producer and O(1) for a seq above all it holds;
 * a lookup by id (replication's reads) is O(SL_PTAB_PRODUCERS + SL_PTAB_SEQS).
 */
#ifndef SL_PTAB_H
#define SL_PTAB_H

#include <stddef.h>
#include <stdint.h>

#define SL_PTAB_PRODUCERS 16	/* producers per partition */
#define SL_PTAB_SEQS 128	/* publishes remembered per producer and partition:
				 * at least any session window (< SL_IDEM_WINDOW,
				 * broker.c checks), so that a client's whole window
				 * can be retried after a failover or a busy answer
				 * even if it all goes to one partition */

#define SL_PTAB_SNAP_MAGIC 0x54504c53u	/* "SLPT" */
#define SL_PTAB_SNAP_VERSION 1
#define SL_PTAB_SNAP_HDR 24
#define SL_PTAB_SNAP_PROD 24
#define SL_PTAB_SNAP_ENT 32
#define SL_PTAB_SNAP_MAX (SL_PTAB_SNAP_HDR + SL_PTAB_PRODUCERS * \
			  (SL_PTAB_SNAP_PROD + SL_PTAB_SEQS * SL_PTAB_SNAP_ENT))

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

/** Write the table as a snapshot covering the log up to id log_end into buf (len bytes,
 * SL_PTAB_SNAP_MAX always suffices). Returns the snapshot's length, or -ENOSPC. Owner. */
int
sl_ptab_snap_encode(const struct sl_ptab *t, uint64_t log_end, void *buf, size_t len);

/** Load a snapshot into t (emptied first). 0 with *log_end, or -EBADMSG (torn, corrupt,
 * inconsistent) or -EPROTO (another magic or version): t is then left empty. The counters
 * (evictions, dups, old) start at 0. Owner (or before the owner starts). */
int
sl_ptab_snap_decode(struct sl_ptab *t, const void *buf, size_t len, uint64_t *log_end);

#endif /* SL_PTAB_H */
