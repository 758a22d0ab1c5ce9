/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * disklog: one topic partition's log on disk. Owned by the persistence lcore (appender:
 * write, sync, retention, truncate, checkpoint, channel positions); readers (a reader
 * thread serving consumers that fell behind memory, SET_OFFSET lookups) may call
 * sl_disklog_read and sl_disklog_find from any one other thread at the same time.
 * An internal mutex guards the segment table; the appender takes it only when it adds or
 * removes a segment, never per record.
 *
 * Directory <dir>/ holds, per segment, a message-log file and a commit-log file named by
 * the segment's base queue offset (20 decimal digits), plus a checkpoint and the channel
 * positions:
 *   00000000000000000000.msg   message log segment
 *   00000000000000000000.clog  commit log of that segment (its index)
 *   checkpoint                 last durable position: two header slots, the older one
 *                              overwritten in place by each checkpoint (count: its
 *                              number); written whole (tmp + rename) only when missing
 *   channels                   channel consume positions (tmp + rename)
 * (A file "producers" of an earlier build, its producer table snapshot, is removed at open
 * unread: the commit records keep the producer tags now.)
 * All integers little-endian. Every file starts with a 64-byte header:
 *   off size field
 *     0    8 magic      "SLMSGLOG" (.msg), "SLCOMLOG" (.clog), "SLCHECKP", "SLCHANPS"
 *     8    4 version    .msg/.clog: 3 (this build writes only it: 80-byte commit records
 *                       with the producer tag); 1 and 2 (earlier builds, still read, not
 *                       appended to, see below): 64-byte commit records, 2 for a
 *                       segment after a lost range. Other files: 1
 *    12    4 hdr_len    64
 *    16    8 base_offset  (msg/clog: queue offset of the segment's first record)
 *    24    8 base_id      (msg/clog: id of the segment's first message)
 *    32    8 created_ns   wall clock
 *    40    4 partition
 *    44    4 count        (channels: entries; checkpoint: its number; else 0)
 *    48    8 lost_from  (version 2 and 3 .msg/.clog: ids lost_from..base_id-1 are a lost
 *                       range, see below, 0 for none in version 3; every other file and
 *                       version: 0)
 *    56    4 reserved 0
 *    60    4 crc32c of bytes 0..59
 * Message record (the in-memory log's record with a CRC in its reserved word, so a
 * record's size and therefore every queue offset is the same in memory and on disk):
 *     0    4 magic_len  marker << 24 | len; marker 0xA5: the last message of its commit
 *                       record (a PUB, or an MPUB's last), 0xA4: more messages of the same
 *                       commit record follow (an MPUB's others)
 *     4    4 crc32c     over bytes 0..3 and 8..(32+len-1)
 *     8    8 id
 *    16    8 timestamp_ns (wall clock)
 *    24    8 trace_id
 *    32  len data, zero padding to a multiple of 8
 * The record at queue offset o of a segment with base b sits at file position 64 + o - b.
 * The markers delimit the commit records in the message log itself, so recovery can
 * rebuild a commit record that did not reach the disk.
 * Commit record (one per PUB or MPUB), version 3: fixed 80 bytes, record i at 64 + 80 * i:
 *     0    8 log_id          id of the first message
 *     8    8 epoch           write epoch of the leader that wrote it
 *    16    8 last_msg_log_id id of the last message (== log_id for PUB)
 *    24    8 msg_offset      queue offset of the first message
 *    32    8 msg_cnt         total message count after this record (== last id)
 *    40    8 timestamp_ns    of the first message
 *    48    4 msg_size        bytes of message records
 *    52    4 msg_num         messages in this record
 *    56    8 producer        the publish's producer id (dataplane/ptab.h), 0: none
 *    64    8 seq             its sequence number (0 iff producer is 0)
 *    72    4 magic           0x474F4C43 ("CLOG")
 *    76    4 crc32c of bytes 0..75
 * Versions 1 and 2: fixed 64 bytes, record i at 64 + 64 * i: bytes 0..55 as above, then
 * magic at 56 and crc32c of bytes 0..59 at 60 (no tag). A build reads both; it appends
 * to a version 1/2 segment only while it is empty of records (then it makes it again in
 * place, at open, as version 3) or never: the first write to a non-empty one rolls to a
 * new version 3 segment. A build that knows only versions 1 and 2 refuses a version 3
 * segment (a foreign header: EBADMSG, the partition not opened): downgrade by copying
 * the messages out, not by opening the directory with it.
 * The tag is what a retry of the publish is recognised by (dataplane/ptab.h): the
 * partition rebuilds its producer table from the newest commit records at open
 * (sl_disklog_tail). A commit record rebuilt by recovery from the message log has no tag
 * (0 0): after a machine crash, the tags of the records written after the active commit
 * log's last fdatasync (the checkpoint's, at most about a second old) may be lost, never
 * after a process kill (the page cache keeps them). No client retries that late (a
 * request times out in seconds, a machine restarts in minutes), so the commit log stays
 * synced lazily: one fdatasync per sync, as before tags.
 * A commit record and its messages never span two segments. The commit log is an index
 * of the message log, synced lazily (as Kafka's index files): sl_disklog_sync fdatasyncs
 * the message logs; the active segment's commit log is fdatasync'ed by the checkpoint,
 * truncate, resume and open, and a segment's at its
 * first sync after it was closed. At
 * open, the message records after the last intact commit record are scanned: each
 * complete run of intact records (CRC ok, ids consecutive, ending at a 0xA5 record) gets
 * its commit record rebuilt (epoch: the previous record's, 0 if none) and appended to the
 * commit log; an incomplete run (no 0xA5 end) and anything torn or corrupt are cut. So a
 * message is committed on disk iff every message record of its commit record is intact
 * and either that commit record is intact or all the message records before it are.
 * Channel entry (channels file, 96 bytes each after the header):
 *     0   72 name, NUL padded (at most 64 bytes)
 *    72    4 flags (bit 0: ordered)
 *    76    4 reserved 0
 *    80    8 confirmed_id (every id below is finished)
 *    88    4 reserved 0
 *    92    4 crc32c of bytes 0..91
 * The checkpoint file is a header whose base_offset/base_id are the end (offset, next id)
 * of the log when it was written, all of it durable.
 * The id mark file (idmark, magic "SLIDMARK", tmp + rename) is a header whose base_id is
 * the id mark of a `memory`-durability partition: no id at or above it was acknowledged
 * (base_offset 0).
 *
 * Lost range (sl_disklog_skip): ids lost_from..base_id-1 that may have been acknowledged
 * and are not on disk (a machine crash took them with the page cache): a segment whose
 * header (version 2) has lost_from != 0 starts at base_id, at the queue offset where the
 * segment before it ends (no bytes for the lost ids), and lost_from is that segment's
 * end id + 1 (or, for the oldest segment, anything below base_id). It may be empty and
 * last: open keeps it. Readers treat the range as a hole: sl_disklog_read from an id in
 * it gives -ENOENT with *first_avail = base_id, a read stops before it, BY_ID/BY_COUNT
 * lookups of an id in it give base_id, a truncation into it cuts it off with its segment.
 * A build that knows only version 1 refuses such a segment (a foreign header).
 *
 * Reset (a replica catching up past its leader's retention, Kafka's log start offset):
 * sl_disklog_reset removes the checkpoint, then every segment oldest first, creates one
 * empty segment whose header base is (first_offset, first_id) (so its files are named by
 * first_offset, which need not follow any old segment), syncs it and writes the
 * checkpoint at it. The next record is log_id first_id at msg_offset first_offset; ids may
 * go down as well as up across a reset. A crash during one opens as a suffix of the old
 * log or as the new empty log. The channels file is not touched.
 *
 * Preallocation (conf.prealloc_bytes, sl_persist's logs: SL_DISKLOG_PREALLOC_DEFAULT): the
 * active segment's .msg is zero-filled ahead of its end, prealloc_bytes at a time, so that
 * a group commit writes into blocks that are already allocated, written and inside the
 * file's size: its fdatasync then writes the data and flushes the device cache, without
 * the allocation, extent and size metadata an append makes it write first (measured on
 * ext4: two more synchronous writes per fdatasync; docs/storage.md "Durable publishing").
 * The zeros beyond the last record are not part of the format: the message log ends at
 * its last record, and a file may hold zero bytes after it only while it is the active
 * segment of a running log or after a crash. A segment is cut to its last record when it
 * is closed (roll, lost range, sl_disklog_close); open cuts an all-zero tail of any
 * segment without reporting a cut (a tail that is not all zeros is torn, as before).
 * Zero-filling is skipped while syncs carry more than SL_DISKLOG_PREALLOC_SYNC_MAX bytes
 * on average (the zeros double what is written; a big sync is bound by bandwidth, not by
 * the metadata writes), and after a failed zero write (a full disk: the zeros written
 * are cut again and the log goes on appending; a failure to cut them is sticky).
 *
 * Errors are sticky: the first failed write, fdatasync or truncate poisons the log and
 * every later call returns that error, until sl_disklog_resume. What was written after
 * the last successful sync is cut off right away (best effort; resume does it again), so
 * a reopen without resume ends at the synced position too. A reset that fails part-way
 * (unlink, create, fsync) poisons the log too; sl_disklog_resume then completes it.
 */
#ifndef SL_DISKLOG_H
#define SL_DISKLOG_H

#include <stddef.h>
#include <stdint.h>

#include "crec.h"
#include "sio.h"

#define SL_DISKLOG_VERSION 1
#define SL_DISKLOG_VERSION_GAP 2	/* .msg/.clog header of a segment after a lost range */
#define SL_DISKLOG_VERSION_TAG 3	/* .msg/.clog header of a segment this build writes */
#define SL_DISKLOG_HDR_LEN 64
#define SL_DISKLOG_CREC_LEN 64		/* commit record of a version 1 or 2 segment */
#define SL_DISKLOG_CREC_TAG_LEN 80	/* of a version 3 segment: with the producer tag */
#define SL_DISKLOG_MREC_HDR 32
#define SL_DISKLOG_MREC_SIZE(len) (SL_DISKLOG_MREC_HDR + (((uint64_t)(len) + 7) & ~(uint64_t)7))
#define SL_DISKLOG_CHAN_NAME_MAX 64

struct sl_disklog_conf {
	const char *dir;		/* partition directory (created with parents) */
	uint32_t partition;
	uint64_t segment_bytes;		/* roll the segment past this; 0 = 64 MiB */
	const struct sl_sio_ops *ops;	/* NULL = sl_sio_posix */
	uint64_t prealloc_bytes;	/* zero-fill the active .msg this far ahead; 0 = never */
};

/* The persistence lcore's zero-fill step (see "Preallocation" above), and the bytes per
 * sync (average since the last step) above which a step is skipped. */
#define SL_DISKLOG_PREALLOC_DEFAULT (UINT64_C(1) << 20)
#define SL_DISKLOG_PREALLOC_SYNC_MAX (UINT64_C(64) << 10)

/* What sl_disklog_open found and did. */
struct sl_disklog_recovery {
	int checkpoint_valid;		/* a valid checkpoint was found */
	uint64_t checkpoint_id;		/* next id at the checkpoint */
	uint32_t segments;		/* segments found */
	uint64_t scanned_records;	/* commit records verified past the checkpoint */
	uint64_t first_id;		/* oldest retained id (end_id + 1 when empty) */
	uint64_t end_id;		/* last intact id (0 = empty) */
	uint64_t end_offset;		/* queue offset after it */
	uint64_t truncated_msg_bytes;	/* torn or orphaned bytes cut off the message log */
	uint64_t truncated_commit_bytes; /* bytes cut off the commit log */
	uint64_t rebuilt_commit_records; /* commit records rebuilt from the message log */
	uint32_t removed_segments;	/* empty or wholly invalid tail segments removed */
	char what[160];			/* one line for an operator: "clean", or what was cut */
	uint64_t id_mark;		/* the id mark file's id (sl_disklog_mark), 0 = none */
};

/* A message read back. data points into the caller's buffer. */
struct sl_disklog_msg {
	uint64_t id;
	uint64_t offset;
	uint64_t timestamp_ns;
	uint64_t trace_id;
	uint32_t len;
	const uint8_t *data;
};

enum sl_disklog_find_kind {
	SL_DISKLOG_BY_ID = 0,		/* the id itself, if retained */
	SL_DISKLOG_BY_OFFSET = 1,	/* the message at this queue offset (a record boundary) */
	SL_DISKLOG_BY_COUNT = 2,	/* the message after `value` messages (id value + 1) */
	SL_DISKLOG_BY_TIME = 3,		/* the first message with timestamp >= value */
};

struct sl_disklog_retention {
	uint64_t max_bytes;		/* keep at most this much (0 = no limit) */
	uint64_t max_age_ns;		/* drop segments whose newest message is older (0 = none) */
	uint64_t keep_from_id;		/* never drop ids >= this (durable channels); 0 = none */
	uint64_t now_ns;		/* wall clock */
};

struct sl_disklog_retain_res {
	uint32_t removed_segments;
	uint64_t removed_bytes;
	uint64_t held_bytes;		/* bytes the policy would drop but a channel holds */
	uint64_t held_from_id;		/* the channel position that holds them */
};

struct sl_disklog_stats {
	uint64_t first_id;
	uint64_t end_id;
	uint64_t end_offset;
	uint64_t synced_id;		/* every id <= this survives a crash */
	uint64_t bytes;			/* message + commit log bytes on disk */
	uint32_t segments;
	uint64_t writes;		/* pwrite calls on the logs */
	uint64_t syncs;
	uint64_t zero_bytes;		/* zeros written ahead (preallocation), all together */
	uint64_t zero_skips;		/* preallocation steps skipped (big syncs, a failure) */
	int error;			/* sticky error (negative errno) or 0 */
};

struct sl_disklog;

/**
 * Open (create or recover) the partition log in conf->dir. Recovery starts at the last
 * checkpoint, verifies every commit record after it and its message records, rebuilds
 * the commit records missing after the last intact one from the intact message records
 * that follow (complete groups ending at a 0xA5 record), truncates a torn or corrupt tail
 * (and an incomplete group) back to the last intact commit record, and removes tail
 * segments left empty. *rep (may be NULL) says
 * what was found and done. Returns NULL with errno set on failure (EINVAL on a bad conf,
 * the filesystem's errno, EBADMSG when a file's header is not ours).
 * Calling context: control thread.
 */
struct sl_disklog *
sl_disklog_open(const struct sl_disklog_conf *conf, struct sl_disklog_recovery *rep);

/**
 * Record ids end_id + 1 .. next_id - 1 as a lost range (see the top of this file): syncs
 * what is written, adds a segment based at (end offset, next_id) whose header names the
 * range (an empty last segment is made again in place instead), syncs it and writes the
 * checkpoint. The next write starts at next_id. No-op when next_id <= end_id + 1. 0 or
 * the sticky negative errno. Calling context: the control thread, right after open,
 * before the log has an appender or readers.
 */
int
sl_disklog_skip(struct sl_disklog *dl, uint64_t next_id);

/**
 * Write the id mark file (tmp + fsync + rename + directory fsync): ids >= id were never
 * acknowledged. The next open reports it in rep->id_mark. 0, a negative errno (a failed
 * write or fsync is sticky). Calling context: the appender (or the control thread before
 * there is one).
 */
int
sl_disklog_mark(struct sl_disklog *dl, uint64_t id);

/** Close the files and free the handle (does not sync). Control thread, after the
 * appender and readers stopped using it. */
void
sl_disklog_close(struct sl_disklog *dl);

/**
 * Encode one message record at dst (SL_DISKLOG_MREC_SIZE(len) bytes, CRC computed).
 * last: the message is the last of its commit record (a PUB, or an MPUB's last message;
 * marker 0xA5), else 0 (marker 0xA4). Returns the bytes written (0 when len does not fit
 * the 24-bit length). Any thread, no I/O.
 */
uint32_t
sl_disklog_encode_msg(void *dst, uint64_t id, uint64_t ts_ns, uint64_t trace_id,
		      const void *data, uint32_t len, int last);

/**
 * Append ncrec commit records and their message records. msgs holds the encoded message
 * records of all of them back to back (sum of msg_size bytes), in order; each crec's
 * log_id must be end_id + 1 and msg_offset the end offset at that point, and its records'
 * ids, sizes and markers must match it (else -EINVAL, not sticky; CRCs are not
 * rechecked). Each crec's producer tag (producer, pseq: pseq not 0 when producer is not,
 * else -EINVAL) is kept with it (not in a version 1/2 segment). The segment rolls
 * between records once it passes segment_bytes, and off a version 1/2 segment.
 * Returns 0 or the (sticky) negative errno. Calling context: the appender only.
 */
int
sl_disklog_write(struct sl_disklog *dl, const void *msgs, const struct sl_crec *crecs,
		 uint32_t ncrec);

/** fdatasync the active segment's message log (and both files of any segment closed or
 * created since the last sync); not the active segment's commit log (see the top of this
 * file). On success every id written so far survives a crash (its message records are
 * durable; its commit record may be rebuilt at open): synced_id = end_id. Appender. */
int
sl_disklog_sync(struct sl_disklog *dl);

/** fdatasync the commit logs not yet synced, then write the checkpoint (the synced end)
 * in the older of its file's two slots (nothing when it says that already). Appender; the
 * persistence lcore calls it every second. */
int
sl_disklog_checkpoint(struct sl_disklog *dl);

/** fdatasync the commit logs not yet synced (what sl_disklog_checkpoint does first), so
 * that the checkpoint's own sync is short. 0 or the sticky error. Appender. */
int
sl_disklog_sync_clogs(struct sl_disklog *dl);

/** Remove every message with id > end_id from both logs (files truncated, later
 * segments removed), then sync (and rewrite the checkpoint if it was past end_id).
 * end_id must end a commit record (else -EINVAL, not sticky). Appender. 0 or sticky
 * negative errno. */
int
sl_disklog_truncate(struct sl_disklog *dl, uint64_t end_id);

/**
 * Drop the whole log and restart it empty at (first_offset, first_id): a replica whose
 * leader no longer holds the old part of the log (trimmed from memory, removed by
 * retention) restarts at the leader's first retained message. Removes every segment
 * (message and commit-log files), creates an empty segment whose base is (first_offset,
 * first_id), syncs it and writes the checkpoint at it. The stats then give first_id as
 * the first id, first_id - 1 as end_id and synced_id, first_offset as end_offset, and
 * the next sl_disklog_write starts at log_id first_id, msg_offset first_offset (above or
 * below the old ids).
 * Read, read_recs and find of an older id answer -ENOENT with the new first id; last and
 * epochs see an empty log; a reopen recovers the empty log at that base (and what was
 * appended after). The channels file is left alone. first_id must be >= 1 (else -EINVAL,
 * not sticky). Returns 0 or the sticky negative errno: a poisoned log returns its error;
 * a failed unlink, create, write or sync poisons it, and sl_disklog_resume then completes
 * the reset (not a cut back to the synced id). Readers may run meanwhile (see
 * sl_disklog_read). Calling context: the appender.
 */
int
sl_disklog_reset(struct sl_disklog *dl, uint64_t first_id, uint64_t first_offset);

/** The sticky error, 0 if none. Any thread. */
int
sl_disklog_error(const struct sl_disklog *dl);

/**
 * Clear a sticky error once its cause is fixed: reopen the files, cut both logs back to
 * the last synced position (what was written after it is not trusted) and sync; after a
 * failed sl_disklog_reset, complete that reset instead. Returns 0 (the log accepts writes
 * again, end == synced) or a negative errno (still poisoned). Appender.
 */
int
sl_disklog_resume(struct sl_disklog *dl);

/**
 * Delete whole oldest segments (never the active one) per the policy. Appender.
 */
int
sl_disklog_retain(struct sl_disklog *dl, const struct sl_disklog_retention *pol,
		  struct sl_disklog_retain_res *res);

/**
 * Read intact message records starting at id `from` (which must be retained: else
 * -ENOENT with *first_avail set to the oldest retained id; in a lost range: -ENOENT with
 * *first_avail the first id after it) into buf, consecutive ids. Stops before id
 * max_id + 1, before a lost range, at the end of the log, or when buf (len bytes) is
 * full; at least one record
 * is read if one exists and fits. Fills msgs[0..*n-1] (at most max_msgs), pointing into
 * buf. Returns 0 (*n may be 0 at the end of the log) or a negative errno (-EBADMSG on a
 * CRC mismatch, -ENOBUFS when the record at `from` is larger than len). Any thread (one
 * reader at a time besides the appender).
 */
int
sl_disklog_read(struct sl_disklog *dl, uint64_t from, uint64_t max_id, void *buf, size_t len,
		struct sl_disklog_msg *msgs, uint32_t max_msgs, uint32_t *n,
		uint64_t *first_avail);

/**
 * Read whole commit records from the one holding id on (at most max_recs, none past
 * max_id, within one segment), each with its message records as they are on disk (CRCs,
 * batch markers: the replication wire format), back to back in buf (len bytes). Returns
 * 0 with *n >= 1, -ENOENT (id not retained, in a lost range or past the end), -ENOBUFS
 * (the first record does not fit) or a read error. Any thread (same rule as sl_disklog_read).
 */
int
sl_disklog_read_recs(struct sl_disklog *dl, uint64_t id, uint64_t max_id, void *buf, size_t len,
		     struct sl_crec *crecs, uint32_t max_recs, uint32_t *n);

/**
 * Find a message through the commit-log index (binary search over segments, then over
 * the segment's fixed-size commit records, then a scan of one record's messages).
 * *id gets the id found; end_id + 1 when value is past the end (by time, count, offset);
 * -ENOENT when value is below the oldest retained message (*id = first_id; by time: a
 * value earlier than that message's timestamp), -EINVAL when an offset is not a record
 * boundary. Any thread (same rule as sl_disklog_read).
 */
int
sl_disklog_find(struct sl_disklog *dl, enum sl_disklog_find_kind kind, uint64_t value,
		uint64_t *id);

/** The last commit record: 0, -ENOENT (empty log) or a read error. Any thread (same rule
 * as sl_disklog_read). */
int
sl_disklog_last(struct sl_disklog *dl, struct sl_crec *c);

/**
 * The log's epoch history (KIP-101's leader-epoch cache), rebuilt from the commit records,
 * whose epochs never decrease along the log: for each epoch, oldest first, the epoch and
 * the id of its first retained message. Binary search over each segment's commit records
 * (a few reads per epoch change, never a scan). At most max entries: when there are more,
 * the newest max are kept. Returns the number of entries (0: empty log) or a read error.
 * Any thread (same rule as sl_disklog_read).
 */
int
sl_disklog_epochs(struct sl_disklog *dl, uint64_t *epoch, uint64_t *start_id, uint32_t max);

/** Save the channel positions (tmp + fsync + rename). Appender. */
#define SL_DISKLOG_CHAN_ORDERED 0x1u	/* an ordered channel */
#define SL_DISKLOG_CHAN_ANON 0x2u	/* created by a client's SUB (expires when idle) */
struct sl_disklog_chan {
	char name[SL_DISKLOG_CHAN_NAME_MAX + 1];
	uint32_t flags;			/* SL_DISKLOG_CHAN_* */
	uint64_t confirmed_id;
};
int
sl_disklog_chan_save(struct sl_disklog *dl, const struct sl_disklog_chan *c, uint32_t n);

/** Load saved channel positions. Returns the number loaded (<= max), 0 when none were
 * saved, or a negative errno (-EBADMSG: corrupt file, reported and ignored by callers).
 * Control thread, at start. */
int
sl_disklog_chan_load(struct sl_disklog *dl, struct sl_disklog_chan *c, uint32_t max);

/**
 * The newest commit records of the log, at most max, oldest first, into out, with their
 * producer tags (crec.producer, pseq; 0 0 for a record of a version 1 or 2 segment or one
 * recovery rebuilt). Reads only those: at most max * 80 bytes of the newest commit log
 * files, backwards from the end. Returns how many (fewer than max: every retained
 * record), -EINVAL, a read error, or -EBADMSG (a record that does not check).
 * Calling context: the control thread, before the log has an appender or readers (the
 * partition's open).
 */
int
sl_disklog_tail(struct sl_disklog *dl, struct sl_crec *out, uint32_t max);

/** Counters and positions. Appender, or any thread (values may be a little stale). */
void
sl_disklog_get_stats(const struct sl_disklog *dl, struct sl_disklog_stats *st);

#endif /* SL_DISKLOG_H */
