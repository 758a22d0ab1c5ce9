/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * memlog: a partition's bounded in-memory message log. One writer and reader: the
 * worker lcore that owns the partition. The memory is handed in by the caller
 * (hugepage memory from rte_malloc in sluiced, plain memory in unit tests).
 *
 * Messages get consecutive ids starting at 1 and a logical queue offset: the offset of
 * message n+1 is the offset of message n plus SL_MEMLOG_REC_SIZE(len of n). The logical
 * offset never counts wrap padding, so it is the same value the disk queue will use.
 *
 * Memory layout of the region: [index: idx_slots x u64][record area]. The record area
 * is a ring of records, each (host byte order, 8-byte aligned):
 *   off size field
 *     0    4 magic_len   upper 8 bits 0xA5 (record) or 0x5A (wrap pad), low 24 bits: len
 *     4    4 batch: index of the message in its PUB/MPUB (low 16 bits) and how many
 *              messages of it follow (high 16 bits); 0 for a PUB
 *     8    8 id
 *    16    8 timestamp_ns
 *    24    8 trace_id
 *    32  len data, then zero padding to a multiple of 8
 * A wrap pad record fills the tail of the ring when the next record does not fit;
 * readers skip it. The index maps (id - idx_base) % idx_slots to the record's ring
 * position; idx_base is the log's first id at open or reset, moved up to the next id
 * whenever the log is empty at an append (so that the slots in use start at slot 0 again),
 * and published through conf->base_out (0 for a region written before there was a base:
 * slot = id % idx_slots). An index slot holding 0 that was never written names ring
 * position 0: harmless, every reader checks the record's id there.
 *
 * Lazy regions (conf->lazy): the region is reserved, not populated (an anonymous
 * MAP_NORESERVE mapping, or a sparse file). Only a prefix of the index (idx_ready slots,
 * counted from idx_base) and of the record area (ring_ready bytes) may be written; the
 * owner lcore never touches a byte beyond them, so it takes no page fault and makes no
 * system call. The control thread grows both prefixes ahead of need
 * (sl_memlog_grow_plan, prepare the pages, sl_memlog_grow_done): it doubles a prefix when
 * more than half of it is in use, and when appends found it too short it grows it to what
 * is in use plus twice the bytes (slots) they were refused since its last step, so a
 * fresh partition taking a fast stream of MPUBs outgrows its refusals in one step of the
 * grower (the control thread's 10 ms tick), not in one doubling per tick. Until it has, an
 * append that needs more room fails with -SL_E_FULL and writes nothing (back pressure,
 * as a full log). The ring wraps within its ready prefix: a log that holds little stays
 * small; the index prefix stays small while the log keeps emptying (the base moves).
 * A log is full when the ring has no room for a record, or the index has no free slot
 * (more than idx_slots messages retained): appends then fail with -SL_E_FULL and write
 * nothing.
 *
 * A reset (sl_memlog_reset: a replica whose leader no longer holds the old part of the log
 * restarts at the leader's first retained message) drops every record and restarts the
 * log empty at a given (id, offset), as an open over the same memory would; it also sets
 * every index slot to all ones (a position past the ring, which no record has), so no
 * read or peek finds a record of before the reset.
 */
#ifndef SL_MEMLOG_H
#define SL_MEMLOG_H

#include <stddef.h>
#include <stdint.h>

#define SL_MEMLOG_REC_HDR 32
#define SL_MEMLOG_REC_SIZE(len) (SL_MEMLOG_REC_HDR + (((uint64_t)(len) + 7) & ~(uint64_t)7))
#define SL_MEMLOG_MAX_MSG ((1u << 24) - 1)

struct sl_memlog_conf {
	void *mem;		/* region, 8-byte aligned, owned by the caller */
	size_t mem_len;		/* >= 4096 */
	uint32_t avg_msg_hint;	/* expected message size, sizes the index; 0 = 64 */
	uint64_t start_id;	/* id of the first append (a log recovered from disk); 0 = 1 */
	uint64_t start_offset;	/* its logical queue offset */
	int lazy;		/* 1: only what sl_memlog_grow_done made ready is written */
	uint64_t idx_base;	/* sl_memlog_scan only: the base the region's writer published */
	uint64_t *base_out;	/* where the log publishes its idx_base (a plain store by the
				 * owner, in the memory file's header), or NULL */
};

/* One growth step of a lazy log: region byte ranges [from, to) to make writable (touch
 * every page; for a file, allocate its blocks first), then sl_memlog_grow_done. */
struct sl_memlog_grow {
	uint64_t idx_from, idx_to;	/* bytes of the region: part of the index */
	uint64_t ring_from, ring_to;	/* bytes of the region: part of the record area */
	uint64_t idx_ready;		/* the new ready prefixes */
	uint64_t ring_ready;
	uint64_t refused_ring;		/* the owner's refusal counters this plan saw */
	uint64_t refused_idx;
};

/* Where a message landed / what a read returns. */
struct sl_memlog_rec {
	uint64_t id;
	uint64_t offset;	/* logical queue offset */
	uint64_t timestamp_ns;
	uint64_t trace_id;
	uint32_t len;
	uint16_t batch_index;	/* its index in its PUB/MPUB: the batch starts at id - this */
	uint16_t batch_left;	/* messages of the batch after it: it ends at id + this */
	const uint8_t *data;	/* points into the log: valid until the message is trimmed */
};

struct sl_memlog;

/**
 * Open a log over conf->mem. Returns NULL with errno set (EINVAL) on a bad conf.
 * The handle itself is malloc'ed (control path). Calling context: any thread, before
 * the log is handed to its owner lcore.
 */
struct sl_memlog *
sl_memlog_open(const struct sl_memlog_conf *conf);

/** Free the handle (not conf->mem). */
void
sl_memlog_close(struct sl_memlog *log);

/**
 * Append one message. On success fills *pos (id, offset, timestamp) and returns 0;
 * -SL_E_FULL when it does not fit (nothing written), -SL_E_TOO_BIG when len exceeds
 * SL_MEMLOG_MAX_MSG or the ring. Owner lcore.
 */
int
sl_memlog_append(struct sl_memlog *log, const void *data, uint32_t len, uint64_t ts_ns,
		 uint64_t trace_id, struct sl_memlog_rec *pos);

/**
 * Append n messages all or none (MPUB). datas[i]/lens[i]. On success *first describes
 * the first message (ids are first->id .. first->id + n - 1). Owner lcore.
 */
int
sl_memlog_append_batch(struct sl_memlog *log, uint32_t n, const void *const *datas,
		       const uint32_t *lens, uint64_t ts_ns, uint64_t trace_id,
		       struct sl_memlog_rec *first);

/** Read message id. Returns 0, or -ENOENT if trimmed or not yet written. Owner lcore. */
int
sl_memlog_read(const struct sl_memlog *log, uint64_t id, struct sl_memlog_rec *out);

/**
 * Read message id from another thread (the persistence lcore) without the owner's
 * positions: only for an id the owner handed over (through a ring, release order) and
 * promises not to trim, truncate or reset until told the reader is done with it.
 * out->offset is not filled. Returns 0 or -EBADMSG if the slot does not hold id (a bug,
 * or an id not written since the last reset). Any thread.
 */
int
sl_memlog_peek(const struct sl_memlog *log, uint64_t id, struct sl_memlog_rec *out);

/** Release every message with an id < id (all channels have confirmed them). Owner. */
void
sl_memlog_trim(struct sl_memlog *log, uint64_t id);

/** Remove every message with id >= id (replication rollback). Owner. */
void
sl_memlog_truncate(struct sl_memlog *log, uint64_t id);

/**
 * Drop every record and restart the log empty so that the next append gets id start_id
 * (0 means 1) at logical offset start_offset, as sl_memlog_open with that conf start_id /
 * start_offset over the same memory: first_id == start_id, end_id == start_id - 1,
 * end_offset == start_offset; start_id may be above or below the old ids. Reads and
 * peeks of every id of before fail. Costs one pass over the index slots written since
 * the open (a memset of at most idx_slots x 8 bytes): a rare event (replica catch-up
 * past the leader's retention), not for the per-packet path. No other thread may be
 * peeking at the log (every id handed over was taken). Calling context: owner lcore.
 */
void
sl_memlog_reset(struct sl_memlog *log, uint64_t start_id, uint64_t start_offset);

/* One message found by sl_memlog_scan (rec->batch_left == 0: it ends its PUB/MPUB).
 * 0 to go on; a negative errno stops the scan with it. */
typedef int (*sl_memlog_scan_fn)(void *arg, const struct sl_memlog_rec *rec);

/**
 * Find the messages that a process which was killed left in a region it shared with a
 * file that outlived it (the region of a `memory`-durability partition with a data
 * directory): from id `from` on (it must start a PUB/MPUB), every whole PUB/MPUB with
 * ids consecutive, located through the region's index (conf's geometry: mem, mem_len,
 * avg_msg_hint as the process opened it). A record is whole when its id is there: an
 * append writes the id last (see put_record), and a truncation unindexes what it removes.
 * An incomplete trailing MPUB is left out. cb gets each message in order, its offset
 * counted from conf->start_offset (the queue offset of `from`); rec->data points into
 * the region. Returns the number of messages given to cb, or cb's negative error, or
 * -EINVAL on a bad conf. Nothing in the region is changed.
 * Calling context: any thread, before the region is opened as a log (control path).
 */
int64_t
sl_memlog_scan(const struct sl_memlog_conf *conf, uint64_t from, sl_memlog_scan_fn cb,
	       void *arg);

/* Positions. first_id: oldest retained id (== end_id + 1 when empty). end_id: last
 * written id (0 when nothing was ever written). end_offset: offset after the last. */
uint64_t
sl_memlog_first_id(const struct sl_memlog *log);
uint64_t
sl_memlog_end_id(const struct sl_memlog *log);
uint64_t
sl_memlog_end_offset(const struct sl_memlog *log);
/** Logical offset of message id (first_id <= id <= end_id + 1; end_id+1 gives
 * end_offset). Returns 0 and *off, or -ENOENT. */
int
sl_memlog_offset_of(const struct sl_memlog *log, uint64_t id, uint64_t *off);

/** id of the message at logical offset off (must be a message boundary, or end_offset
 * which gives end_id + 1). Returns 0 or -ENOENT / -EINVAL. Binary search. */
int
sl_memlog_find_offset(const struct sl_memlog *log, uint64_t off, uint64_t *id);

/** First retained id with timestamp >= ts (end_id + 1 if none). Binary search. */
uint64_t
sl_memlog_find_time(const struct sl_memlog *log, uint64_t ts_ns);

/**
 * The next growth step of a lazy log, from racy reads of the owner's positions: 1 and *g
 * when a prefix should grow. A prefix doubles when more than half of it is in use; when
 * appends were refused since the last step, it grows to hold what is in use plus twice
 * what they brought (the demand of one grower period, with room for the next), so a log
 * written at any rate outgrows its refusals in one step (the first call after open gives
 * the initial prefixes, which must be ready before the log is handed to its owner), 0 when
 * none should. Control
 * thread (one grower per log).
 */
int
sl_memlog_grow_plan(const struct sl_memlog *log, struct sl_memlog_grow *g);

/** A lazy log whose ready prefixes are more than half used, or too short for an append it
 * refused: the grower's next step would grow it. Owner lcore (plain reads of its own
 * positions, an acquire read of the prefixes); 0 for a log that is not lazy or whose
 * prefixes are whole. */
int
sl_memlog_grow_wanted(const struct sl_memlog *log);

/** The ranges of g are ready: publish the new prefixes (release order). Control thread. */
void
sl_memlog_grow_done(struct sl_memlog *log, const struct sl_memlog_grow *g);

/** Bytes of the region ready to be written (index and record area): what the log costs in
 * memory; the whole region when not lazy. Any thread (racy). */
uint64_t
sl_memlog_resident(const struct sl_memlog *log);

/** Bytes used by retained records and capacity (the whole record area, what it may grow
 * to), for stats. */
uint64_t
sl_memlog_used(const struct sl_memlog *log);
uint64_t
sl_memlog_capacity(const struct sl_memlog *log);

/** Messages retained (end_id + 1 - first_id) and the most the index holds (idx_slots):
 * the log is full when either the ring or the index is. Owner lcore / any thread. */
uint64_t
sl_memlog_count(const struct sl_memlog *log);
uint64_t
sl_memlog_slots(const struct sl_memlog *log);

/**
 * 1 when more than half of the log is in use, by ring bytes or by index slots, else 0.
 * Retention over a disk log trims memory down to the durable end then: small messages
 * fill the index long before the ring (24-byte bodies: 56-byte records against a 64-byte
 * average), so a test on bytes alone would never fire and the log would stay full.
 * Owner lcore.
 */
int
sl_memlog_half_full(const struct sl_memlog *log);

#endif /* SL_MEMLOG_H */
