/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * disklog: one topic partition's log on disk (see disklog.h for the whole format).
 *
 * Commit record of a version 3 segment (the only one this build creates), 80 bytes,
 * little-endian: 0..55 the sl_crec body (dataplane/base/crec.h: log_id 8, epoch 8,
 * last_msg_log_id 8, msg_offset 8, msg_cnt 8, timestamp_ns 8, msg_size 4, msg_num 4),
 * 56 producer 8, 64 seq 8 (the producer tag; 0 0: none), 72 magic "CLOG" 4, 76 crc32c of
 * 0..75 4. Of a version 1 or 2 segment (earlier builds), 64 bytes: the body, magic at 56,
 * crc32c of 0..59 at 60. seg.rlen is the segment's record size, from its .clog header.
 *
 * State: a table of segments, oldest first; the last one is active (appended to). For
 * each, the appender knows the .msg size, the number of commit records (nrec, so the
 * .clog size is 64 + rlen * nrec), its last id and its first and newest timestamps.
 *
 * Concurrency: the appender is the only thread that changes anything. The table (array,
 * count, file descriptors) changes only under dl->lock; readers hold dl->lock for the
 * whole of a read or find, so a descriptor they use is never closed under them. Appends
 * do not take the lock: they write the bytes first, then publish the segment's msg_size
 * and nrec and the log's end (release stores); readers load them (acquire) and never
 * look past them. Truncation (truncate, resume) moves those back under the lock. A reset
 * removes the old segments one by one under the lock (as retention does), then swaps the
 * last one for the new empty segment and sets first_id, end and synced under it, so a
 * reader sees the old log, a suffix of it, or the new one, never a mix; a read of an id
 * below the new first_id gets -ENOENT with it.
 *
 * Durability: a sync fdatasyncs the .msg of every segment written since the last sync (a
 * suffix of the table), the .clog of the segments closed since then and of a segment
 * created since then (its header), and fsyncs the directory when segments were created or
 * removed. The active segment's .clog is synced lazily, as Kafka treats its index files:
 * by the checkpoint (before the checkpoint file is written), truncate, resume and open;
 * after a crash, recovery rebuilds the commit records it lacks from the message records
 * (the batch markers 0xA4/0xA5 delimit each commit record's messages). Files of a new
 * segment are created .msg first, then .clog; retention removes .clog first, then .msg.
 * A crash in between leaves a lone file in the newest or the oldest segment: open deletes
 * it (a lone file anywhere else is not something we wrote: EBADMSG). A reset removes the
 * checkpoint first and writes the new one last (see reset_log for the crash cases).
 *
 * Preallocation (disklog.h): seg.zero_end is the file position up to which the active
 * segment's .msg holds zeros written ahead of msg_size (none when <= msg_size). The zeros
 * go through the page cache like the records, so a later record's partial pages are found
 * there (no read), and the fdatasync after the step writes them with the allocation and
 * size metadata; the syncs after it write records into allocated blocks inside the size.
 * seal_seg cuts them off a segment that stops being the active one.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <rte_byteorder.h>
#include <rte_hash_crc.h>
#include <rte_log.h>

#include "bytes.h"
#include "disklog.h"

RTE_LOG_REGISTER_SUFFIX(sl_disklog_logtype, disklog, INFO);

#define DL_LOG(level, fmt, ...)                                                                    \
	rte_log(RTE_LOG_##level, sl_disklog_logtype, "disklog: " fmt "\n", ##__VA_ARGS__)

#define HDR SL_DISKLOG_HDR_LEN
#define CREC SL_DISKLOG_CREC_LEN		/* commit record of a version 1 or 2 segment */
#define CREC_TAG SL_DISKLOG_CREC_TAG_LEN	/* of a version 3 segment: with its tag */
#define MHDR SL_DISKLOG_MREC_HDR
#define MREC_MAGIC 0xA5u	/* the last message of its commit record */
#define MREC_MAGIC_MORE 0xA4u	/* more messages of the same commit record follow */
#define MREC_LEN_MAX 0xFFFFFFu
#define CREC_MAGIC 0x474F4C43u
#define DEFAULT_SEG_BYTES (UINT64_C(64) << 20)
#define CBUF_RECS 512		/* commit records encoded per pwrite (32 KiB) */
#define SCAN_BUF (256u << 10)	/* recovery read buffer */
#define SCAN_RECS 1024		/* commit records read per pread in recovery */
#define SEG_NAME_DIGITS 20

#define LD(x) __atomic_load_n(&(x), __ATOMIC_ACQUIRE)
#define ST(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELEASE)
#define LDR(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)
#define STR(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELAXED)

static const char MAGIC_MSG[8] = {'S', 'L', 'M', 'S', 'G', 'L', 'O', 'G'};
static const char MAGIC_CLOG[8] = {'S', 'L', 'C', 'O', 'M', 'L', 'O', 'G'};
static const char MAGIC_CKPT[8] = {'S', 'L', 'C', 'H', 'E', 'C', 'K', 'P'};
static const char MAGIC_CHAN[8] = {'S', 'L', 'C', 'H', 'A', 'N', 'P', 'S'};
static const char MAGIC_MARK[8] = {'S', 'L', 'I', 'D', 'M', 'A', 'R', 'K'};

struct seg {
	uint64_t base_offset;	/* immutable */
	uint64_t base_id;	/* immutable */
	uint64_t lost_from;	/* immutable: ids lost_from..base_id-1 are a lost range (0: none) */
	uint64_t msg_size;	/* .msg bytes written, header included (published) */
	uint64_t nrec;		/* commit records written (published) */
	uint64_t end_id;	/* last id, base_id - 1 when empty (appender) */
	uint64_t first_ts;	/* timestamp of the first commit record (valid if nrec) */
	uint64_t last_ts;	/* newest message timestamp (appender, retention) */
	uint32_t rlen;		/* immutable: commit record size, CREC or CREC_TAG (version) */
	int msg_fd;
	int clog_fd;
	uint8_t dirty;		/* written since the last sync */
	uint8_t fresh;		/* created since the last sync */
	uint8_t clog_dirty;	/* .clog written since its last fdatasync */
	uint64_t zero_end;	/* .msg zero-filled up to here past msg_size (appender) */
};

struct sl_disklog {
	const struct sl_sio_ops *ops;
	char *dir;
	uint32_t partition;
	uint64_t seg_bytes;
	int dirfd;
	int dir_dirty;		/* entries created or removed since the last sync */
	pthread_mutex_t lock;	/* segs, nseg, fds; see the top of this file */
	struct seg *segs;
	uint32_t nseg;
	uint32_t seg_cap;

	uint64_t first_id;	/* atomics: readers and stats */
	uint64_t end_id;
	uint64_t end_offset;
	uint64_t synced_id;
	uint64_t synced_offset;
	uint64_t bytes;
	uint64_t writes;
	uint64_t syncs;
	uint64_t zero_bytes;
	uint64_t zero_skips;
	int error;

	uint64_t prealloc;	/* zero-fill step, 0 = none (conf.prealloc_bytes) */
	uint64_t pz_next;	/* no zero-fill decision before the end offset passes this */
	uint64_t pz_bytes;	/* bytes written and syncs since the last decision */
	uint64_t pz_syncs;
	uint64_t ckpt_id;	/* next id of the newest checkpoint on disk, 0 = none */
	uint32_t ckpt_gen;	/* its number (the header's count field: write_checkpoint) */
	uint8_t ckpt_slots;	/* the checkpoint file has both slots: written in place */
	uint8_t *cbuf;		/* CBUF_RECS encoded commit records */

	uint64_t reset_id;	/* a reset that failed part-way (resume completes it), 0 = none */
	uint64_t reset_offset;
	uint64_t stray_base;	/* a segment a reset replaced but could not unlink */
	int stray;
};

/*
 * CRC32C (Castagnoli, init and final xor ~0) through DPDK's rte_hash_crc primitives.
 * rte_hash_crc() itself dereferences the buffer as uint64_t, which is undefined for the
 * unaligned buffers callers may hand in, so the 8-byte steps load with memcpy.
 */
static inline uint32_t
crc_upd(const void *data, size_t len, uint32_t crc)
{
	const uint8_t *p = data;
	uint64_t v;

	while (len >= 8) {
		memcpy(&v, p, 8);
		crc = rte_hash_crc_8byte(v, crc);
		p += 8;
		len -= 8;
	}
	while (len > 0) {
		crc = rte_hash_crc_1byte(*p++, crc);
		len--;
	}
	return crc;
}

static inline uint32_t
crc32c(const void *data, size_t len)
{
	return ~crc_upd(data, len, ~0u);
}

static uint64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline int
neg_errno(void)
{
	return errno > 0 ? -errno : -EIO;
}

/* File header. */
static void
hdr_encode_v(uint8_t *p, const char magic[8], uint32_t version, uint64_t base_off,
	     uint64_t base_id, uint32_t partition, uint32_t count, uint64_t lost_from)
{
	memset(p, 0, HDR);
	memcpy(p, magic, 8);
	/* segments (.msg, .clog) this build writes: version 3 (80-byte commit records, with
	 * or without a lost range); the checkpoint, id mark and channels files: version 1 */
	sl_bytes_put_le32(p + 8, version);
	sl_bytes_put_le64(p + 48, lost_from);
	sl_bytes_put_le32(p + 12, HDR);
	sl_bytes_put_le64(p + 16, base_off);
	sl_bytes_put_le64(p + 24, base_id);
	sl_bytes_put_le64(p + 32, now_ns());
	sl_bytes_put_le32(p + 40, partition);
	sl_bytes_put_le32(p + 44, count);
	sl_bytes_put_le32(p + 60, crc32c(p, 60));
}

static void
hdr_encode(uint8_t *p, const char magic[8], uint64_t base_off, uint64_t base_id,
	   uint32_t partition, uint32_t count)
{
	hdr_encode_v(p, magic, SL_DISKLOG_VERSION, base_off, base_id, partition, count, 0);
}

enum { HDR_OK = 0, HDR_TORN = 1, HDR_FOREIGN = 2 };

/* HDR_TORN: all zero, or our magic with a bad CRC (an interrupted write); HDR_FOREIGN:
 * not our magic or not our version. */
static int
hdr_check(const uint8_t *p, const char magic[8])
{
	uint32_t i;

	for (i = 0; i < HDR && p[i] == 0; i++)
		;
	if (i == HDR)
		return HDR_TORN;
	if (memcmp(p, magic, 8) != 0)
		return HDR_FOREIGN;
	if (sl_bytes_get_le32(p + 60) != crc32c(p, 60))
		return HDR_TORN;
	if (sl_bytes_get_le32(p + 8) < SL_DISKLOG_VERSION ||
	    sl_bytes_get_le32(p + 8) > SL_DISKLOG_VERSION_TAG ||
	    sl_bytes_get_le32(p + 12) != HDR)
		return HDR_FOREIGN;
	return HDR_OK;
}

/* Commit record of rlen bytes (CREC: versions 1 and 2, no tag; CREC_TAG: version 3, the
 * producer tag at 56). */
static void
crec_encode(uint8_t *p, const struct sl_crec *c, uint32_t rlen)
{
	sl_crec_encode(p, c);
	if (rlen == CREC_TAG) {
		sl_bytes_put_le64(p + SL_CREC_LEN, c->producer);
		sl_bytes_put_le64(p + SL_CREC_LEN + 8, c->producer != 0 ? c->pseq : 0);
	}
	sl_bytes_put_le32(p + rlen - 8, CREC_MAGIC);
	sl_bytes_put_le32(p + rlen - 4, crc32c(p, rlen - 4));
}

/* Decode and check CRC, magic and the record's own consistency (a tag: both producer and
 * seq 0, or both not). Returns 0 or -EBADMSG. */
static int
crec_decode(const uint8_t *p, struct sl_crec *c, uint32_t rlen)
{
	if (sl_bytes_get_le32(p + rlen - 8) != CREC_MAGIC ||
	    sl_bytes_get_le32(p + rlen - 4) != crc32c(p, rlen - 4))
		return -EBADMSG;
	sl_crec_decode(p, c);
	if (rlen == CREC_TAG) {
		c->producer = sl_bytes_get_le64(p + SL_CREC_LEN);
		c->pseq = sl_bytes_get_le64(p + SL_CREC_LEN + 8);
		if ((c->producer == 0) != (c->pseq == 0))
			return -EBADMSG;
	}
	return sl_crec_check(c, MHDR);
}

/* CRC of a message record: bytes 0..3 and 8..(32 + len - 1). */
static inline uint32_t
mrec_crc(const uint8_t *rec, uint32_t len)
{
	uint32_t crc = crc_upd(rec, 4, ~0u);

	return ~crc_upd(rec + 8, MHDR - 8 + (size_t)len, crc);
}

/* Length of a message record (either marker). 0 or -EBADMSG. */
static inline int
mrec_len(const uint8_t *rec, uint32_t *len)
{
	uint32_t ml = sl_bytes_get_le32(rec);

	if ((ml >> 24) != MREC_MAGIC && (ml >> 24) != MREC_MAGIC_MORE)
		return -EBADMSG;
	*len = ml & MREC_LEN_MAX;
	return 0;
}

/* The record is the last message of its commit record (marker 0xA5). */
static inline int
mrec_last(const uint8_t *rec)
{
	return (sl_bytes_get_le32(rec) >> 24) == MREC_MAGIC;
}

/* Calling context: any thread. */
uint32_t
sl_disklog_encode_msg(void *dst, uint64_t id, uint64_t ts_ns, uint64_t trace_id,
		      const void *data, uint32_t len, int last)
{
	uint8_t *p = dst;
	uint32_t size;

	if (len > MREC_LEN_MAX)
		return 0;
	size = (uint32_t)SL_DISKLOG_MREC_SIZE(len);
	sl_bytes_put_le32(p, (last ? MREC_MAGIC : MREC_MAGIC_MORE) << 24 | len);
	sl_bytes_put_le64(p + 8, id);
	sl_bytes_put_le64(p + 16, ts_ns);
	sl_bytes_put_le64(p + 24, trace_id);
	if (len > 0)
		memcpy(p + MHDR, data, len);
	memset(p + MHDR + len, 0, size - MHDR - len);
	sl_bytes_put_le32(p + 4, mrec_crc(p, len));
	return size;
}

/* I/O helpers. */
static int
write_all(const struct sl_disklog *dl, int fd, const void *buf, size_t len, uint64_t off)
{
	const uint8_t *p = buf;
	ssize_t w;

	/* a short write is retried for the rest: the error that stops it (ENOSPC on a full
	 * disk) is the one reported; a write that makes no progress is EIO */
	while (len > 0) {
		errno = 0;
		w = dl->ops->pwrite(fd, p, len, (off_t)off);
		if (w < 0)
			return neg_errno();
		if (w == 0)
			return -EIO;
		p += w;
		off += (uint64_t)w;
		len -= (size_t)w;
	}
	return 0;
}

/* Read up to len bytes (short only at the end of the file). Returns bytes or -errno. */
static ssize_t
read_full(const struct sl_disklog *dl, int fd, void *buf, size_t len, uint64_t off)
{
	size_t got = 0;
	ssize_t r;

	while (got < len) {
		r = dl->ops->pread(fd, (uint8_t *)buf + got, len - got, (off_t)(off + got));
		if (r < 0)
			return neg_errno();
		if (r == 0)
			break;
		got += (size_t)r;
	}
	return (ssize_t)got;
}

/* Read exactly len bytes: 0, -EBADMSG if the file is shorter, or -errno. */
static int
read_exact(const struct sl_disklog *dl, int fd, void *buf, size_t len, uint64_t off)
{
	ssize_t r = read_full(dl, fd, buf, len, off);

	if (r < 0)
		return (int)r;
	return (size_t)r == len ? 0 : -EBADMSG;
}

static void
seg_path(const struct sl_disklog *dl, char *buf, uint64_t base, const char *ext)
{
	snprintf(buf, PATH_MAX, "%s/%0*" PRIu64 ".%s", dl->dir, SEG_NAME_DIGITS, base, ext);
}

static void
file_path(const struct sl_disklog *dl, char *buf, const char *name)
{
	snprintf(buf, PATH_MAX, "%s/%s", dl->dir, name);
}

static int
cut_to(struct sl_disklog *dl, uint64_t end_id);

/*
 * Make an I/O error sticky. What was written after the last sync is not trusted: cut it
 * off at once (best effort; resume does it again) so that a reopen without resume does
 * not bring back records the appender was told failed.
 */
static int
set_error(struct sl_disklog *dl, int rc)
{
	if (rc != 0 && LDR(dl->error) == 0) {
		STR(dl->error, rc);
		DL_LOG(ERR, "%s: I/O error %d (%s), log poisoned until resume", dl->dir, rc,
		       strerror(-rc));
		cut_to(dl, LDR(dl->synced_id));
	}
	return LDR(dl->error);
}

static inline uint64_t
seg_bytes_on_disk(const struct seg *s)
{
	return s->msg_size + HDR + s->nrec * s->rlen;
}

static int
read_crec(const struct sl_disklog *dl, const struct seg *s, uint64_t i, struct sl_crec *c)
{
	uint8_t b[CREC_TAG];
	int rc = read_exact(dl, s->clog_fd, b, s->rlen, HDR + s->rlen * i);

	return rc != 0 ? rc : crec_decode(b, c, s->rlen);
}

static void
close_seg(const struct sl_disklog *dl, struct seg *s)
{
	if (s->msg_fd >= 0)
		dl->ops->close(s->msg_fd);
	if (s->clog_fd >= 0)
		dl->ops->close(s->clog_fd);
	s->msg_fd = -1;
	s->clog_fd = -1;
}

/* Unlink a segment's files: .clog first, then .msg (see the top of this file). */
static int
unlink_seg(const struct sl_disklog *dl, uint64_t base)
{
	char path[PATH_MAX];
	int rc = 0;

	seg_path(dl, path, base, "clog");
	if (dl->ops->unlink(path) != 0 && errno != ENOENT)
		rc = neg_errno();
	seg_path(dl, path, base, "msg");
	if (dl->ops->unlink(path) != 0 && errno != ENOENT && rc == 0)
		rc = neg_errno();
	return rc;
}

/*
 * Grow the table (control/appender; the caller holds the lock if readers may run). Open
 * leaves SEG_HEADROOM free entries, so the appender's rolls (on the persistence lcore)
 * allocate nothing until that many segments were added. Its first heap allocation would
 * create the thread's malloc arena: an mmap(), which waits for the process's memory map
 * lock, held meanwhile by a control thread populating a growing log. Measured 2026-11-29:
 * a 64 ms stall of every sync at the first roll of a durable PUB run, windows resent.
 */
#define SEG_HEADROOM 64u

static int
reserve_seg(struct sl_disklog *dl)
{
	struct seg *n;
	uint32_t cap;

	if (dl->nseg < dl->seg_cap)
		return 0;
	cap = dl->seg_cap ? dl->seg_cap * 2 : SEG_HEADROOM;
	n = realloc(dl->segs, (size_t)cap * sizeof(*n));
	if (n == NULL)
		return -ENOMEM;
	dl->segs = n;
	dl->seg_cap = cap;
	return 0;
}

/* Create a segment's files with their headers. Returns 0 (fds in *s) or -errno. */
static int
create_seg_files(struct sl_disklog *dl, struct seg *s)
{
	char path[PATH_MAX];
	uint8_t h[HDR];
	int rc;

	s->msg_fd = -1;
	s->clog_fd = -1;
	seg_path(dl, path, s->base_offset, "msg");
	s->msg_fd = dl->ops->open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (s->msg_fd < 0)
		return neg_errno();
	hdr_encode_v(h, MAGIC_MSG, SL_DISKLOG_VERSION_TAG, s->base_offset, s->base_id,
		     dl->partition, 0, s->lost_from);
	rc = write_all(dl, s->msg_fd, h, HDR, 0);
	if (rc != 0)
		goto fail;
	seg_path(dl, path, s->base_offset, "clog");
	s->clog_fd = dl->ops->open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (s->clog_fd < 0) {
		rc = neg_errno();
		goto fail;
	}
	hdr_encode_v(h, MAGIC_CLOG, SL_DISKLOG_VERSION_TAG, s->base_offset, s->base_id,
		     dl->partition, 0, s->lost_from);
	rc = write_all(dl, s->clog_fd, h, HDR, 0);
	if (rc != 0)
		goto fail;
	return 0;
fail:
	close_seg(dl, s);
	unlink_seg(dl, s->base_offset);
	return rc;
}

/* Add a new active segment starting at (off, id). Appender or open. */
/* Take the oldest segment out of the table (readers see the new first id at once) and
 * return it; its files are the caller's to close and remove. Appender, nseg > 1. */
static struct seg
seg_pop_oldest(struct sl_disklog *dl)
{
	struct seg old = dl->segs[0];

	pthread_mutex_lock(&dl->lock);
	memmove(dl->segs, dl->segs + 1, (dl->nseg - 1) * sizeof(*dl->segs));
	dl->nseg--;
	STR(dl->first_id, dl->segs[0].base_id);
	pthread_mutex_unlock(&dl->lock);
	return old;
}

/* A new empty segment starting at queue offset off, id id: its files created with their
 * headers, not yet synced. 0, or a negative errno and no files left. Appender. */
static int
seg_create(struct sl_disklog *dl, struct seg *s, uint64_t off, uint64_t id, uint64_t lost)
{
	int rc;

	memset(s, 0, sizeof(*s));
	s->base_offset = off;
	s->base_id = id;
	s->lost_from = lost;
	s->rlen = CREC_TAG;
	s->msg_size = HDR;
	s->end_id = id - 1;
	rc = create_seg_files(dl, s);
	if (rc != 0)
		return rc;
	s->dirty = 1;
	s->fresh = 1;
	s->clog_dirty = 1;
	return 0;
}

static int
add_segment_lost(struct sl_disklog *dl, uint64_t off, uint64_t id, uint64_t lost)
{
	struct seg s;
	int rc;

	rc = seg_create(dl, &s, off, id, lost);
	if (rc != 0)
		return rc;
	pthread_mutex_lock(&dl->lock);
	rc = reserve_seg(dl);
	if (rc == 0)
		dl->segs[dl->nseg++] = s;
	pthread_mutex_unlock(&dl->lock);
	if (rc != 0) {
		close_seg(dl, &s);
		unlink_seg(dl, off);
		return rc;
	}
	dl->dir_dirty = 1;
	STR(dl->bytes, LDR(dl->bytes) + 2 * HDR);
	return 0;
}

static int
add_segment(struct sl_disklog *dl, uint64_t off, uint64_t id)
{
	return add_segment_lost(dl, off, id, 0);
}

static inline int
seg_flagged(const struct seg *s)
{
	return s->dirty || s->fresh || s->clog_dirty;
}

#define ZBUF (64u << 10)
#define PAGE 4096u
static const uint8_t zeros[ZBUF];	/* what a zero-fill step writes from */

/*
 * Cut the zeros written ahead off segment s, which stops being the active one (or the log
 * closes): its .msg ends at its last record again, durably at the next sync. 0 or -errno.
 * Appender (control thread at close).
 */
static int
seal_seg(const struct sl_disklog *dl, struct seg *s)
{
	if (s->zero_end > s->msg_size) {
		if (dl->ops->ftruncate(s->msg_fd, (off_t)s->msg_size) != 0)
			return neg_errno();
		s->dirty = 1;
	}
	s->zero_end = 0;
	return 0;
}

/*
 * Before len bytes of records are written at the end of the active segment s: when what is
 * zero-filled ends less than half a step past them, decide on the next step (skip it
 * while syncs average more than SL_DISKLOG_PREALLOC_SYNC_MAX bytes) and zero-fill the
 * .msg a step past them, never beyond the segment's size. A failed zero write (a full
 * disk) is undone and the log appends for a step. Returns 0, or the negative errno of a
 * failed undo (the caller poisons the log). Appender.
 */
static int
zero_ahead(struct sl_disklog *dl, struct seg *s, uint64_t len)
{
	uint64_t need = s->msg_size + len, lim = HDR + dl->seg_bytes, pos, to, n;
	uint64_t end_off = LDR(dl->end_offset) + len;
	ssize_t w = 0;

	if (dl->prealloc == 0 || need + dl->prealloc / 2 <= s->zero_end || need >= lim ||
	    end_off < dl->pz_next)
		return 0;
	if (dl->pz_syncs > 0 && dl->pz_bytes / dl->pz_syncs > SL_DISKLOG_PREALLOC_SYNC_MAX)
		goto skip;
	dl->pz_bytes = 0;
	dl->pz_syncs = 0;
	pos = RTE_MAX(s->zero_end, s->msg_size);
	to = RTE_MIN(RTE_ALIGN_CEIL(RTE_MAX(need, s->zero_end), PAGE) + dl->prealloc, lim);
	while (pos < to) {
		n = RTE_MIN(to - pos, (uint64_t)ZBUF);
		w = dl->ops->pwrite(s->msg_fd, zeros, n, (off_t)pos);
		if (w <= 0)
			break;
		pos += (uint64_t)w;
		STR(dl->zero_bytes, LDR(dl->zero_bytes) + (uint64_t)w);
	}
	if (pos >= to) {
		s->zero_end = to;
		return 0;
	}
	if (dl->ops->ftruncate(s->msg_fd, (off_t)s->msg_size) != 0)
		return neg_errno();
	s->zero_end = 0;
skip:
	dl->pz_bytes = 0;
	dl->pz_syncs = 0;
	dl->pz_next = end_off + dl->prealloc;
	STR(dl->zero_skips, LDR(dl->zero_skips) + 1);
	return 0;
}

/* fdatasync the .clog of every segment of the written suffix that needs it (all: also the
 * active segment's, else only closed or new segments'). Appender. */
static int
sync_clogs(struct sl_disklog *dl, int all)
{
	uint32_t i = dl->nseg;
	struct seg *s;

	while (i > 0 && seg_flagged(&dl->segs[i - 1]))
		i--;
	for (; i < dl->nseg; i++) {
		s = &dl->segs[i];
		if (!s->clog_dirty || !(all || s->fresh || i + 1 < dl->nseg))
			continue;
		if (dl->ops->fdatasync(s->clog_fd) != 0)
			return neg_errno();
		s->clog_dirty = 0;
	}
	return 0;
}

/*
 * Sync the written suffix of the table and the directory: the .msg files, and the .clog
 * files per sync_clogs(clogs). Appender.
 */
static int
sync_files(struct sl_disklog *dl, int clogs)
{
	uint32_t i = dl->nseg;
	struct seg *s;
	int rc;

	while (i > 0 && seg_flagged(&dl->segs[i - 1]))
		i--;
	for (; i < dl->nseg; i++) {
		s = &dl->segs[i];
		if (s->dirty && dl->ops->fdatasync(s->msg_fd) != 0)
			return neg_errno();
	}
	rc = sync_clogs(dl, clogs);
	if (rc != 0)
		return rc;
	if (dl->dir_dirty) {
		if (dl->ops->fsync(dl->dirfd) != 0)
			return neg_errno();
		dl->dir_dirty = 0;
	}
	for (i = dl->nseg; i > 0 && seg_flagged(&dl->segs[i - 1]); i--) {
		dl->segs[i - 1].dirty = 0;
		dl->segs[i - 1].fresh = 0;
	}
	STR(dl->synced_offset, LDR(dl->end_offset));
	STR(dl->synced_id, LDR(dl->end_id));
	STR(dl->syncs, LDR(dl->syncs) + 1);
	dl->pz_syncs++;
	return 0;
}

/* Write a small file with tmp + fsync + rename + directory fsync. A failed write or
 * fsync poisons the log (sticky); a failed open or rename does not. */
static int
write_file_atomic(struct sl_disklog *dl, const char *name, const void *buf, size_t len)
{
	char tmp[PATH_MAX], path[PATH_MAX];
	int fd, rc, io;

	snprintf(tmp, sizeof(tmp), "%s/%s.tmp", dl->dir, name);
	file_path(dl, path, name);
	fd = dl->ops->open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		return neg_errno();
	rc = write_all(dl, fd, buf, len, 0);
	if (rc == 0 && dl->ops->fsync(fd) != 0)
		rc = neg_errno();
	dl->ops->close(fd);
	io = rc != 0;
	if (rc == 0 && dl->ops->rename(tmp, path) != 0)
		rc = neg_errno();
	if (rc == 0 && dl->ops->fsync(dl->dirfd) != 0) {
		rc = neg_errno();
		io = 1;
	}
	if (rc != 0 && !io)
		dl->ops->unlink(tmp);
	return io ? set_error(dl, rc) : rc;
}

/*
 * The checkpoint file holds two header slots, at 0 and at HDR; the header's count field
 * numbers the checkpoints. Each one overwrites the older slot in place and fdatasyncs the
 * file: blocks already allocated, no metadata, one small sync. Open takes the newer slot
 * of the two that check (a torn one leaves the other). Only a file that is missing, or
 * that has one slot (an earlier build), is written whole (tmp, fsync, rename, directory
 * fsync: two journal commits on ext4). The persistence lcore syncs nothing while a
 * checkpoint runs (docs/storage.md, "Checkpoint file").
 */
static int
write_checkpoint(struct sl_disklog *dl)
{
	uint8_t h[2 * HDR];
	char path[PATH_MAX];
	uint64_t id = LDR(dl->synced_id) + 1;
	uint32_t gen = dl->ckpt_gen + 1;
	int fd = -1, rc;

	hdr_encode(h, MAGIC_CKPT, LDR(dl->synced_offset), id, dl->partition, gen);
	if (dl->ckpt_slots) {
		file_path(dl, path, "checkpoint");
		fd = dl->ops->open(path, O_WRONLY, 0);
		if (fd < 0 && errno != ENOENT)
			return set_error(dl, neg_errno());
	}
	if (fd < 0) {
		memcpy(h + HDR, h, HDR);
		rc = write_file_atomic(dl, "checkpoint", h, 2 * HDR);
		if (rc != 0)
			return rc;
		dl->ckpt_slots = 1;
	} else {
		rc = write_all(dl, fd, h, HDR, (uint64_t)(gen & 1) * HDR);
		if (rc == 0 && dl->ops->fdatasync(fd) != 0)
			rc = neg_errno();
		dl->ops->close(fd);
		if (rc != 0)
			return set_error(dl, rc);
	}
	dl->ckpt_id = id;
	dl->ckpt_gen = gen;
	return 0;
}

enum crec_key { KEY_ID, KEY_OFFSET, KEY_TIME };

/* Index of the last segment whose base id (KEY_ID) or base offset (KEY_OFFSET) is <=
 * value (0 if none). Lock held or appender. */
static uint32_t
seg_search(const struct sl_disklog *dl, enum crec_key key, uint64_t value)
{
	uint32_t lo = 0, hi = dl->nseg;

	while (hi - lo > 1) {
		uint32_t mid = lo + (hi - lo) / 2;
		const struct seg *m = &dl->segs[mid];

		if ((key == KEY_ID ? m->base_id : m->base_offset) <= value)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

/*
 * Binary search the first nrec commit records of s for the last one whose key is
 * <= value (KEY_TIME: < value). Returns its index in *idx (and the record in *c), 1 when
 * every record's key is greater, or a negative errno.
 */
static int
crec_search(const struct sl_disklog *dl, const struct seg *s, uint64_t nrec, enum crec_key key,
	    uint64_t value, uint64_t *idx, struct sl_crec *c)
{
	uint64_t lo = 0, hi = nrec, k;
	struct sl_crec m;
	int found = 0, rc;

	/* Invariant: records below lo qualify, records at hi and above do not. */
	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;
		int le;

		rc = read_crec(dl, s, mid, &m);
		if (rc != 0)
			return rc;
		k = key == KEY_ID ? m.log_id : key == KEY_OFFSET ? m.msg_offset : m.timestamp_ns;
		le = key == KEY_TIME ? k < value : k <= value;
		if (le) {
			lo = mid + 1;
			*c = m;
			*idx = mid;
			found = 1;
		} else {
			hi = mid;
		}
	}
	return found ? 0 : 1;
}

/* Read the header of the message record at file position pos of s. */
static int
read_mhdr(const struct sl_disklog *dl, const struct seg *s, uint64_t pos, uint32_t *len,
	  uint64_t *id, uint64_t *ts)
{
	uint8_t h[MHDR];
	int rc = read_exact(dl, s->msg_fd, h, MHDR, pos);

	if (rc != 0)
		return rc;
	if (mrec_len(h, len) != 0)
		return -EBADMSG;
	*id = sl_bytes_get_le64(h + 8);
	*ts = sl_bytes_get_le64(h + 16);
	return 0;
}

/* Timestamp of the last message of commit record c (a walk over its message headers). */
static int
last_msg_ts_disk(const struct sl_disklog *dl, const struct seg *s,
		 const struct sl_crec *c, uint64_t *ts)
{
	uint64_t pos = HDR + c->msg_offset - s->base_offset, id;
	uint32_t k, len;
	int rc;

	for (k = 0; k < c->msg_num; k++) {
		rc = read_mhdr(dl, s, pos, &len, &id, ts);
		if (rc != 0)
			return rc;
		if (id != c->log_id + k)
			return -EBADMSG;
		pos += SL_DISKLOG_MREC_SIZE(len);
	}
	return 0;
}

/* ---------------------------------------------------------------------------------- */
/* Recovery                                                                           */

struct rbuf {
	int fd;
	uint64_t fsize;		/* file size */
	uint64_t start;		/* file position of buf[0] */
	uint32_t fill;
	uint8_t *buf;
};

enum { V_OK = 0, V_TORN = 1, V_BAD = 2 };

/* Make [pos, pos + n) (n <= SCAN_BUF) available: V_OK and *p, V_TORN past the end of
 * the file, or a negative errno. */
static int
rb_need(const struct sl_disklog *dl, struct rbuf *rb, uint64_t pos, uint32_t n,
	const uint8_t **p)
{
	ssize_t r;
	uint64_t want;

	if (pos >= rb->start && pos + n <= rb->start + rb->fill) {
		*p = rb->buf + (pos - rb->start);
		return V_OK;
	}
	if (pos + n > rb->fsize)
		return V_TORN;
	want = RTE_MIN((uint64_t)SCAN_BUF, rb->fsize - pos);
	r = read_full(dl, rb->fd, rb->buf, want, pos);
	if (r < 0)
		return (int)r;
	rb->start = pos;
	rb->fill = (uint32_t)r;
	if ((uint64_t)r < n)
		return V_TORN;
	*p = rb->buf;
	return V_OK;
}

/*
 * Verify the message record at file position pos: marker, length (the record must end by
 * lim, else V_BAD), id, CRC. Gives its size, timestamp and whether it ends its commit
 * record. V_OK, V_TORN (it runs past the end of the file), V_BAD, or a negative errno.
 */
static int
verify_mrec(const struct sl_disklog *dl, struct rbuf *rb, uint64_t pos, uint64_t lim,
	    uint64_t id, uint64_t *size, uint64_t *ts, int *last)
{
	const uint8_t *p = NULL;
	uint32_t len, stored, crc, chunk, rem;
	uint64_t q;
	int rc;

	if (lim - pos < MHDR)
		return V_BAD;
	rc = rb_need(dl, rb, pos, MHDR, &p);
	if (rc != V_OK)
		return rc;
	if (mrec_len(p, &len) != 0 || SL_DISKLOG_MREC_SIZE(len) > lim - pos ||
	    sl_bytes_get_le64(p + 8) != id)
		return V_BAD;
	if (pos + SL_DISKLOG_MREC_SIZE(len) > rb->fsize)
		return V_TORN;		/* the padding is part of the record */
	stored = sl_bytes_get_le32(p + 4);
	*ts = sl_bytes_get_le64(p + 16);
	*last = mrec_last(p);
	*size = SL_DISKLOG_MREC_SIZE(len);
	crc = crc_upd(p, 4, ~0u);
	crc = crc_upd(p + 8, MHDR - 8, crc);
	for (q = pos + MHDR, rem = len; rem > 0; q += chunk, rem -= chunk) {
		chunk = RTE_MIN(rem, SCAN_BUF);
		rc = rb_need(dl, rb, q, chunk, &p);
		if (rc != V_OK)
			return rc;
		crc = crc_upd(p, chunk, crc);
	}
	return ~crc == stored ? V_OK : V_BAD;
}

/* Verify the message records of commit record c at file position pos (markers: 0xA4 but
 * for the last one, 0xA5). */
static int
verify_msgs(const struct sl_disklog *dl, struct rbuf *rb, uint64_t pos,
	    const struct sl_crec *c, uint64_t *last_ts)
{
	uint64_t end = pos + c->msg_size, size;
	uint32_t k;
	int rc, last;

	for (k = 0; k < c->msg_num; k++) {
		rc = verify_mrec(dl, rb, pos, end, c->log_id + k, &size, last_ts, &last);
		if (rc != V_OK)
			return rc;
		if (last != (k + 1 == c->msg_num))
			return V_BAD;
		pos += size;
	}
	return pos == end ? V_OK : V_BAD;
}

struct scan {
	uint8_t *cbuf;		/* SCAN_RECS commit records */
	struct rbuf rb;
	uint64_t msg_fsize;	/* file sizes of the segment being verified */
	uint64_t clog_fsize;
	uint64_t ckpt_id;
	uint64_t scanned;
	uint64_t epoch;		/* of the last intact commit record so far (0: none) */
};

/*
 * Verify segment s record by record, expecting its first record at (id, off). Sets the
 * segment's nrec, msg_size (of the intact part), end_id and timestamps. Returns V_OK when
 * every whole commit record in the file is intact, V_TORN / V_BAD for the reason it
 * stopped early, or a negative errno.
 */
static int
verify_seg(const struct sl_disklog *dl, struct seg *s, struct scan *sc)
{
	uint64_t n = (sc->clog_fsize - HDR) / s->rlen, r, id = s->base_id, off = s->base_offset;
	uint64_t got = 0, ts = 0;
	struct sl_crec c;
	ssize_t rd;
	int rc = V_OK;

	sc->rb.fd = s->msg_fd;
	sc->rb.fsize = sc->msg_fsize;
	sc->rb.start = 0;
	sc->rb.fill = 0;
	for (r = 0; r < n; r++) {
		if (r == got) {
			uint64_t want = RTE_MIN((uint64_t)SCAN_RECS, n - r);

			rd = read_full(dl, s->clog_fd, sc->cbuf, want * s->rlen, HDR + r * s->rlen);
			if (rd < 0)
				return (int)rd;
			got = r + (uint64_t)rd / s->rlen;
			if (got == r) {
				rc = V_TORN;
				break;
			}
		}
		if (crec_decode(sc->cbuf + (r % SCAN_RECS) * s->rlen, &c, s->rlen) != 0 ||
		    c.log_id != id ||
		    c.msg_offset != off) {
			rc = V_BAD;
			break;
		}
		rc = verify_msgs(dl, &sc->rb, HDR + off - s->base_offset, &c, &ts);
		if (rc != V_OK)
			break;
		if (r == 0)
			s->first_ts = c.timestamp_ns;
		s->last_ts = RTE_MAX(s->last_ts, ts);
		sc->epoch = c.epoch;
		if (c.log_id >= sc->ckpt_id)
			sc->scanned++;
		id = c.last_msg_log_id + 1;
		off += c.msg_size;
	}
	if (rc < 0)
		return rc;
	s->nrec = r;
	s->end_id = id - 1;
	s->msg_size = HDR + off - s->base_offset;
	if (rc == V_OK && sc->clog_fsize != HDR + n * s->rlen)
		rc = V_TORN;		/* a partial commit record */
	return rc;
}

/* Write the k rebuilt commit records in sc->cbuf after the nrec records of s. */
static int
flush_rebuilt(const struct sl_disklog *dl, const struct seg *s, const struct scan *sc,
	      uint64_t nrec, uint32_t k)
{
	if (k == 0)
		return 0;
	return write_all(dl, s->clog_fd, sc->cbuf, (size_t)k * s->rlen, HDR + nrec * s->rlen);
}

/*
 * Rebuild the commit records of s that its .clog lacks from its message records: after
 * the intact part found by verify_seg (s->nrec records ending at file position
 * s->msg_size), the intact message records that follow (CRC, consecutive ids) form
 * commit records, each ending at a record marked 0xA5. The .clog is cut to its intact
 * part, the rebuilt records are appended to it, and both files are synced. s describes
 * the result; *n gets the number rebuilt. Returns V_OK when the whole .msg was consumed,
 * V_TORN / V_BAD for why it stopped before (an incomplete trailing group is V_TORN), or a
 * negative errno.
 */
static int
rebuild_seg(const struct sl_disklog *dl, struct seg *s, struct scan *sc, uint64_t *n)
{
	uint64_t pos = s->msg_size, gpos = pos, id = s->end_id + 1, gid = id, gts = 0;
	uint64_t nrec = s->nrec, size, ts, last_ts = s->last_ts;
	struct sl_crec c;
	uint32_t k = 0, cnt = 0;
	int rc = V_OK, last, cut = 0;

	*n = 0;
	while (pos < sc->msg_fsize) {
		rc = verify_mrec(dl, &sc->rb, pos, UINT64_MAX, id, &size, &ts, &last);
		if (rc < 0)
			return rc;
		if (rc != V_OK)
			break;
		if (cnt++ == 0)
			gts = ts;
		last_ts = RTE_MAX(last_ts, ts);
		id++;
		pos += size;
		if (pos - gpos > UINT32_MAX) {
			rc = V_BAD;		/* not something we wrote */
			break;
		}
		if (!last)
			continue;
		c = (struct sl_crec){
			.log_id = gid,
			.epoch = sc->epoch,
			.last_msg_log_id = id - 1,
			.msg_offset = s->base_offset + gpos - HDR,
			.msg_cnt = id - 1,
			.timestamp_ns = gts,
			.msg_size = (uint32_t)(pos - gpos),
			.msg_num = cnt,
		};
		if (!cut) {
			/* drop the .clog's torn or corrupt tail before appending to it */
			if (dl->ops->ftruncate(s->clog_fd, (off_t)(HDR + nrec * s->rlen)) != 0)
				return neg_errno();
			cut = 1;
		}
		crec_encode(sc->cbuf + (size_t)k * s->rlen, &c, s->rlen);
		if (++k == SCAN_RECS) {
			rc = flush_rebuilt(dl, s, sc, nrec, k);
			if (rc != 0)
				return rc;
			nrec += k;
			k = 0;
		}
		if (s->nrec == 0 && *n == 0)
			s->first_ts = gts;
		s->last_ts = last_ts;
		s->end_id = id - 1;
		s->msg_size = pos;
		(*n)++;
		gpos = pos;
		gid = id;
		cnt = 0;
	}
	if (rc == V_OK && cnt > 0)
		rc = V_TORN;		/* the group's 0xA5 record is missing */
	if (*n == 0)
		return rc;
	last = flush_rebuilt(dl, s, sc, nrec, k);
	if (last != 0)
		return last;
	s->nrec = nrec + k;
	/* the messages first: a durable commit record must not point at lost messages */
	if (dl->ops->fdatasync(s->msg_fd) != 0 || dl->ops->fdatasync(s->clog_fd) != 0)
		return neg_errno();
	return rc;
}

/* 1 when bytes [from, to) of fd are all zero (the zero-fill of a running log: see
 * "Preallocation"), 0 when not, or a negative errno. buf: SCAN_BUF bytes. */
static int
all_zero(const struct sl_disklog *dl, int fd, uint8_t *buf, uint64_t from, uint64_t to)
{
	uint64_t n, k;
	ssize_t r;

	while (from < to) {
		n = RTE_MIN(to - from, (uint64_t)SCAN_BUF);
		r = read_full(dl, fd, buf, n, from);
		if (r < 0)
			return (int)r;
		if ((uint64_t)r != n)
			return 0;
		for (k = 0; k < n; k++)
			if (buf[k] != 0)
				return 0;
		from += n;
	}
	return 1;
}

/* Trust a segment before the checkpoint after checking its first and last records. */
static int
quick_load(const struct sl_disklog *dl, struct seg *s, struct scan *sc)
{
	struct sl_crec c;
	uint64_t n, ts = 0;

	if (sc->clog_fsize < HDR + s->rlen || (sc->clog_fsize - HDR) % s->rlen != 0)
		return -1;
	n = (sc->clog_fsize - HDR) / s->rlen;
	if (read_crec(dl, s, 0, &c) != 0 || c.log_id != s->base_id ||
	    c.msg_offset != s->base_offset)
		return -1;
	s->first_ts = c.timestamp_ns;
	if (read_crec(dl, s, n - 1, &c) != 0 ||
	    c.msg_offset + c.msg_size != s->base_offset + sc->msg_fsize - HDR ||
	    c.last_msg_log_id - s->base_id + 1 < n)
		return -1;
	if (last_msg_ts_disk(dl, s, &c, &ts) != 0)
		return -1;
	sc->epoch = c.epoch;
	s->nrec = n;
	s->end_id = c.last_msg_log_id;
	s->msg_size = sc->msg_fsize;
	s->last_ts = ts;
	return 0;
}

struct seg_ent {
	uint64_t base;
	uint8_t has_msg;
	uint8_t has_clog;
};

static int
ent_cmp(const void *a, const void *b)
{
	const struct seg_ent *x = a, *y = b;

	return x->base < y->base ? -1 : x->base > y->base;
}

/* List the segment files of the directory, sorted by base offset. */
static int
list_segments(const struct sl_disklog *dl, struct seg_ent **out, uint32_t *nout)
{
	struct seg_ent *e = NULL, *ne;
	uint32_t n = 0, cap = 0, i;
	struct dirent *d;
	DIR *dir;

	dir = opendir(dl->dir);
	if (dir == NULL)
		return neg_errno();
	while ((d = readdir(dir)) != NULL) {
		const char *nm = d->d_name;
		size_t l = strlen(nm);
		int is_msg;
		uint64_t base;

		if (l == SEG_NAME_DIGITS + 4 && strcmp(nm + SEG_NAME_DIGITS, ".msg") == 0)
			is_msg = 1;
		else if (l == SEG_NAME_DIGITS + 5 && strcmp(nm + SEG_NAME_DIGITS, ".clog") == 0)
			is_msg = 0;
		else
			continue;
		for (i = 0; i < SEG_NAME_DIGITS && nm[i] >= '0' && nm[i] <= '9'; i++)
			;
		if (i != SEG_NAME_DIGITS)
			continue;
		base = strtoull(nm, NULL, 10);
		for (i = 0; i < n && e[i].base != base; i++)
			;
		if (i == n) {
			if (n == cap) {
				cap = cap ? cap * 2 : 16;
				ne = realloc(e, cap * sizeof(*e));
				if (ne == NULL) {
					free(e);
					closedir(dir);
					return -ENOMEM;
				}
				e = ne;
			}
			memset(&e[n], 0, sizeof(e[n]));
			e[n++].base = base;
		}
		if (is_msg)
			e[i].has_msg = 1;
		else
			e[i].has_clog = 1;
	}
	closedir(dir);
	if (n > 1)
		qsort(e, n, sizeof(*e), ent_cmp);
	*out = e;
	*nout = n;
	return 0;
}

static int
file_size(int fd, uint64_t *size)
{
	struct stat st;

	if (fstat(fd, &st) != 0)
		return neg_errno();
	*size = (uint64_t)st.st_size;
	return 0;
}

/* Version 1: no lost range; 2: a lost range; 3: either. */
static inline int
lost_fits(uint32_t version, uint64_t lost_from)
{
	return version == SL_DISKLOG_VERSION_TAG ||
	       (lost_from != 0) == (version == SL_DISKLOG_VERSION_GAP);
}

/*
 * Open a listed segment. Returns HDR_OK (s filled, both files open), HDR_TORN (a lone
 * file or a torn header: only acceptable at the ends of the table), or a negative errno
 * (-EBADMSG: a header that is not ours, or inconsistent with its name).
 */
static int
open_seg(const struct sl_disklog *dl, const struct seg_ent *e, struct seg *s,
	 uint64_t *msg_fsize, uint64_t *clog_fsize)
{
	char path[PATH_MAX];
	uint8_t hm[HDR], hc[HDR];
	int rc, tm, tc;

	memset(s, 0, sizeof(*s));
	s->msg_fd = -1;
	s->clog_fd = -1;
	s->base_offset = e->base;
	if (!e->has_msg || !e->has_clog)
		return HDR_TORN;
	seg_path(dl, path, e->base, "msg");
	s->msg_fd = dl->ops->open(path, O_RDWR, 0);
	if (s->msg_fd < 0)
		return neg_errno();
	seg_path(dl, path, e->base, "clog");
	s->clog_fd = dl->ops->open(path, O_RDWR, 0);
	if (s->clog_fd < 0)
		return neg_errno();
	rc = file_size(s->msg_fd, msg_fsize);
	if (rc == 0)
		rc = file_size(s->clog_fd, clog_fsize);
	if (rc != 0)
		return rc;
	if (*msg_fsize < HDR || *clog_fsize < HDR)
		return HDR_TORN;
	rc = read_exact(dl, s->msg_fd, hm, HDR, 0);
	if (rc == 0)
		rc = read_exact(dl, s->clog_fd, hc, HDR, 0);
	if (rc != 0)
		return rc == -EBADMSG ? HDR_TORN : rc;
	tm = hdr_check(hm, MAGIC_MSG);
	tc = hdr_check(hc, MAGIC_CLOG);
	if (tm == HDR_FOREIGN || tc == HDR_FOREIGN)
		return -EBADMSG;
	if (tm == HDR_TORN || tc == HDR_TORN)
		return HDR_TORN;
	if (sl_bytes_get_le64(hm + 16) != e->base || sl_bytes_get_le64(hc + 16) != e->base ||
	    sl_bytes_get_le64(hm + 24) != sl_bytes_get_le64(hc + 24) || sl_bytes_get_le64(hm + 24) == 0)
		return -EBADMSG;
	s->base_id = sl_bytes_get_le64(hm + 24);
	s->lost_from = sl_bytes_get_le64(hm + 48);
	if (s->lost_from != sl_bytes_get_le64(hc + 48) || s->lost_from >= s->base_id ||
	    !lost_fits(sl_bytes_get_le32(hm + 8), s->lost_from) ||
	    !lost_fits(sl_bytes_get_le32(hc + 8), s->lost_from))
		return -EBADMSG;
	/* the .clog's version says its record size (the two files of a segment this build
	 * made again in place may differ in version for a crash in between, both empty) */
	s->rlen = sl_bytes_get_le32(hc + 8) == SL_DISKLOG_VERSION_TAG ? CREC_TAG : CREC;
	s->end_id = s->base_id - 1;
	s->msg_size = HDR;
	return HDR_OK;
}

/*
 * Read the header file `name` of the partition's directory into h: 1 when it is there with
 * the magic and a good CRC, 0 when it is missing, torn or foreign, or -errno.
 */
static int
read_hdr_file(const struct sl_disklog *dl, const char *name, const char magic[8], uint8_t *h)
{
	char path[PATH_MAX];
	int fd, rc;

	file_path(dl, path, name);
	fd = dl->ops->open(path, O_RDONLY, 0);
	if (fd < 0)
		return errno == ENOENT ? 0 : neg_errno();
	rc = read_exact(dl, fd, h, HDR, 0);
	dl->ops->close(fd);
	if (rc == -EBADMSG || (rc == 0 && hdr_check(h, magic) != HDR_OK))
		return 0;
	return rc != 0 ? rc : 1;
}

/*
 * The checkpoint: 1 with *off and *id its end (offset, next id), 0 when there is none;
 * *gen its number and *slots whether the file has both slots (write_checkpoint). The
 * newer of the slots that check wins; an earlier build's file has one. Or -errno.
 */
static int
read_checkpoint(const struct sl_disklog *dl, uint64_t *off, uint64_t *id, uint32_t *gen,
		uint8_t *slots)
{
	uint8_t h[2 * HDR];
	char path[PATH_MAX];
	const uint8_t *b = NULL;
	ssize_t n;
	int fd, k;

	*gen = 0;
	*slots = 0;
	file_path(dl, path, "checkpoint");
	fd = dl->ops->open(path, O_RDONLY, 0);
	if (fd < 0)
		return errno == ENOENT ? 0 : neg_errno();
	n = read_full(dl, fd, h, sizeof(h), 0);
	dl->ops->close(fd);
	if (n < 0)
		return (int)n;
	*slots = n == (ssize_t)sizeof(h);
	for (k = 0; k < 2 && n >= (ssize_t)(k + 1) * HDR; k++) {
		const uint8_t *s = h + k * HDR;

		if (hdr_check(s, MAGIC_CKPT) != HDR_OK || sl_bytes_get_le64(s + 24) == 0)
			continue;
		if (b == NULL ||
		    (int32_t)(sl_bytes_get_le32(s + 44) - sl_bytes_get_le32(b + 44)) > 0)
			b = s;
	}
	if (b == NULL)
		return 0;
	*off = sl_bytes_get_le64(b + 16);
	*id = sl_bytes_get_le64(b + 24);
	*gen = sl_bytes_get_le32(b + 44);
	return 1;
}

/* The id mark file: *id its id (0 when there is none, or it is torn). 0 or -errno. */
static int
read_mark(const struct sl_disklog *dl, uint64_t *id)
{
	uint8_t h[HDR];
	int rc = read_hdr_file(dl, "idmark", MAGIC_MARK, h);

	*id = rc == 1 ? sl_bytes_get_le64(h + 24) : 0;
	return rc < 0 ? rc : 0;
}

static int
mkdir_p(const char *dir)
{
	char p[PATH_MAX];
	size_t i, l = strlen(dir);

	if (l == 0 || l >= sizeof(p))
		return -EINVAL;
	memcpy(p, dir, l + 1);
	for (i = 1; i <= l; i++) {
		if (p[i] != '/' && p[i] != '\0')
			continue;
		p[i] = '\0';
		if (mkdir(p, 0755) != 0 && errno != EEXIST)
			return neg_errno();
		if (i < l)
			p[i] = '/';
	}
	return 0;
}

/* Segment s starts where prev ends, or after a lost range that starts where prev ends. */
static inline int
follows(const struct seg *prev, const struct seg *s)
{
	return (s->base_id == prev->end_id + 1 ||
		(s->lost_from != 0 && s->lost_from == prev->end_id + 1)) &&
	       s->base_offset == prev->base_offset + prev->msg_size - HDR;
}

/* Append to rep->what (wl: its length so far). */
#define WHAT(rep, wl, ...)                                                                         \
	do {                                                                                       \
		if ((wl) < sizeof((rep)->what) - 1) {                                              \
			int n_ = snprintf((rep)->what + (wl), sizeof((rep)->what) - (wl),          \
					  __VA_ARGS__);                                            \
			if (n_ > 0)                                                                \
				(wl) = RTE_MIN((wl) + (size_t)n_, sizeof((rep)->what) - 1);        \
		}                                                                                  \
	} while (0)

/* Recover the table from the directory (open). Fills rep. */
static int
recover(struct sl_disklog *dl, struct sl_disklog_recovery *rep)
{
	struct seg_ent *ents = NULL;
	struct scan sc;
	struct seg *s;
	uint64_t ckpt_off = 0, ckpt_id = 0, cut_msg = 0, cut_clog = 0, *msz = NULL, *csz = NULL;
	uint64_t rebuilt = 0, nrb;
	uint32_t nent = 0, i, v, lo, hi, keep, removed = 0;
	int rc, rc2, why = V_OK, changed = 0;
	size_t wl = 0;

	memset(&sc, 0, sizeof(sc));
	rc = read_checkpoint(dl, &ckpt_off, &ckpt_id, &dl->ckpt_gen, &dl->ckpt_slots);
	if (rc < 0)
		return rc;
	rep->checkpoint_valid = rc;
	rep->checkpoint_id = rc ? ckpt_id : 0;
	dl->ckpt_id = rc ? ckpt_id : 0;
	if (!rc)
		ckpt_id = 0;
	sc.ckpt_id = ckpt_id;

	rc = read_mark(dl, &rep->id_mark);
	if (rc < 0)
		return rc;
	rc = list_segments(dl, &ents, &nent);
	if (rc != 0)
		return rc;
	rep->segments = nent;
	dl->segs = calloc(nent + SEG_HEADROOM, sizeof(*dl->segs));
	msz = calloc(nent ? nent : 1, sizeof(*msz));
	csz = calloc(nent ? nent : 1, sizeof(*csz));
	sc.cbuf = malloc(SCAN_RECS * CREC_TAG);
	sc.rb.buf = malloc(SCAN_BUF);
	rc = -ENOMEM;
	if (dl->segs == NULL || msz == NULL || csz == NULL || sc.cbuf == NULL ||
	    sc.rb.buf == NULL)
		goto out;
	dl->seg_cap = nent + SEG_HEADROOM;

	/* Open every segment; lone files and torn headers only at the two ends. */
	for (i = 0; i < nent; i++) {
		s = &dl->segs[i];
		rc = open_seg(dl, &ents[i], s, &msz[i], &csz[i]);
		dl->nseg = i + 1;
		if (rc < 0)
			goto out;
		if (rc == HDR_TORN)
			s->base_id = 0;		/* mark */
	}
	lo = 0;
	hi = nent;
	while (hi > lo && dl->segs[hi - 1].base_id == 0)
		hi--;
	if (lo < hi && dl->segs[lo].base_id == 0 && (!ents[lo].has_msg || !ents[lo].has_clog))
		lo++;		/* interrupted retention */
	for (i = lo; i < hi; i++) {
		if (dl->segs[i].base_id == 0) {
			DL_LOG(ERR, "%s: segment %020" PRIu64 " has a torn header", dl->dir,
			       ents[i].base);
			rc = -EBADMSG;
			goto out;
		}
	}
	for (i = 0; i < nent; i++) {
		if (i >= lo && i < hi)
			continue;
		close_seg(dl, &dl->segs[i]);
		rc = unlink_seg(dl, ents[i].base);
		if (rc != 0)
			goto out;
		cut_msg += msz[i] > HDR ? msz[i] - HDR : 0;
		cut_clog += csz[i] > HDR ? csz[i] - HDR : 0;
		removed++;
		changed = 1;
	}
	memmove(dl->segs, dl->segs + lo, (hi - lo) * sizeof(*dl->segs));
	memmove(msz, msz + lo, (hi - lo) * sizeof(*msz));
	memmove(csz, csz + lo, (hi - lo) * sizeof(*csz));
	dl->nseg = hi - lo;

	/* Segments wholly before the checkpoint's are trusted after a light check. */
	v = 0;
	if (ckpt_id != 0 && dl->nseg > 0)
		v = seg_search(dl, KEY_OFFSET, ckpt_off);
	for (i = 0; i < v; i++) {
		s = &dl->segs[i];
		sc.msg_fsize = msz[i];
		sc.clog_fsize = csz[i];
		if ((i > 0 && !follows(&dl->segs[i - 1], s)) || quick_load(dl, s, &sc) != 0) {
			v = i;
			break;
		}
	}
	/* Verify the rest record by record; cut at the first bad one. */
	keep = dl->nseg;
	for (i = v; i < dl->nseg; i++) {
		s = &dl->segs[i];
		if (i > 0 && !follows(&dl->segs[i - 1], s)) {
			why = V_BAD;
			keep = i;
			break;
		}
		sc.msg_fsize = msz[i];
		sc.clog_fsize = csz[i];
		rc = verify_seg(dl, s, &sc);
		if (rc < 0)
			goto out;
		if (rc != V_OK && why == V_OK)
			why = rc;
		if (s->msg_size < msz[i]) {
			/* message records past the intact commit log: rebuild its records */
			uint64_t cend = HDR + s->nrec * s->rlen;

			rc = rebuild_seg(dl, s, &sc, &nrb);
			if (rc < 0)
				goto out;
			if (nrb > 0) {
				rebuilt += nrb;
				cut_clog += csz[i] - cend;
				csz[i] = HDR + s->nrec * s->rlen;
				changed = 1;
			}
			if (rc == V_OK && msz[i] == s->msg_size)
				continue;	/* the whole segment is committed now */
			/* zeros written ahead of the records (preallocation) are not a
			 * torn tail: cut them without reporting a cut */
			rc2 = all_zero(dl, s->msg_fd, sc.rb.buf, s->msg_size, msz[i]);
			sc.rb.fill = 0;
			if (rc2 < 0) {
				rc = rc2;
				goto out;
			}
			if (rc2 == 1) {
				if (dl->ops->ftruncate(s->msg_fd, (off_t)s->msg_size) != 0) {
					rc = neg_errno();
					goto out;
				}
				msz[i] = s->msg_size;
				s->dirty = 1;
				changed = 1;
				rc = V_OK;
			}
		}
		if (rc == V_OK && msz[i] == s->msg_size && csz[i] == HDR + s->nrec * s->rlen)
			continue;
		why = rc != V_OK ? rc : why != V_OK ? why : V_TORN;	/* or orphan bytes */
		if (s->nrec == 0 && i > 0) {
			keep = i;		/* nothing intact: removed below */
			break;
		}
		if (dl->ops->ftruncate(s->clog_fd, (off_t)(HDR + s->nrec * s->rlen)) != 0 ||
		    dl->ops->ftruncate(s->msg_fd, (off_t)s->msg_size) != 0) {
			rc = neg_errno();
			goto out;
		}
		cut_msg += msz[i] - s->msg_size;
		cut_clog += csz[i] - (HDR + s->nrec * s->rlen);
		s->dirty = 1;
		changed = 1;
		keep = i + 1;
		break;
	}
	rep->scanned_records = sc.scanned;
	/* Remove the segments after the cut, then empty tail segments. */
	while (dl->nseg > keep || (dl->nseg > 1 && dl->segs[dl->nseg - 1].nrec == 0 &&
				   dl->segs[dl->nseg - 1].lost_from == 0)) {
		s = &dl->segs[dl->nseg - 1];
		close_seg(dl, s);
		rc = unlink_seg(dl, s->base_offset);
		if (rc != 0)
			goto out;
		if (dl->nseg > keep) {
			cut_msg += msz[dl->nseg - 1] - HDR;
			cut_clog += csz[dl->nseg - 1] - HDR;
		}
		dl->nseg--;
		removed++;
		changed = 1;
	}
	if (dl->nseg == 0) {
		rc = add_segment(dl, ckpt_id ? ckpt_off : 0, ckpt_id ? ckpt_id : 1);
		if (rc != 0)
			goto out;
		changed = 1;
	}
	s = &dl->segs[dl->nseg - 1];
	if (s->nrec == 0 && s->rlen != CREC_TAG) {
		/* an empty last segment of version 1 or 2: made again in place as version 3
		 * (same name, base and lost range), so that the next records keep their tags */
		struct seg ns;

		close_seg(dl, s);
		rc = seg_create(dl, &ns, s->base_offset, s->base_id, s->lost_from);
		if (rc != 0) {
			dl->nseg--;	/* its files are gone (create_seg_files) */
			goto out;
		}
		*s = ns;
		changed = 1;
	}
	dl->first_id = dl->segs[0].base_id;
	dl->end_id = s->end_id;
	dl->end_offset = s->base_offset + s->msg_size - HDR;
	for (i = 0; i < dl->nseg; i++)
		dl->bytes += seg_bytes_on_disk(&dl->segs[i]);
	if (changed) {
		dl->dir_dirty = 1;
		s->dirty = 1;
		s->clog_dirty = 1;
	}
	rc = sync_files(dl, 1);
	if (rc != 0)
		goto out;
	dl->syncs = 0;

	rep->first_id = dl->first_id;
	rep->end_id = dl->end_id;
	rep->end_offset = dl->end_offset;
	rep->truncated_msg_bytes = cut_msg;
	rep->truncated_commit_bytes = cut_clog;
	rep->removed_segments = removed;
	rep->rebuilt_commit_records = rebuilt;
	rep->what[0] = '\0';
	if (rebuilt > 0)
		WHAT(rep, wl, "rebuilt %" PRIu64 " commit records from the message log",
		     rebuilt);
	if (cut_msg != 0 || cut_clog != 0) {
		WHAT(rep, wl, "%s%s: cut %" PRIu64 " message bytes and %" PRIu64
		     " commit-log bytes after id %" PRIu64 " in segment %020" PRIu64,
		     wl > 0 ? "; " : "", why == V_BAD ? "corrupt record" : "torn tail", cut_msg,
		     cut_clog, dl->end_id, s->base_offset);
		if (removed > 0)
			WHAT(rep, wl, ", %u segments removed", removed);
	} else if (removed > 0) {
		WHAT(rep, wl, "%sremoved %u empty or leftover segment(s)", wl > 0 ? "; " : "",
		     removed);
	}
	if (wl == 0)
		WHAT(rep, wl, "clean");
	if (ckpt_id != 0 && ckpt_id > dl->end_id + 1) {
		char lost[80];
		size_t ll = (size_t)snprintf(lost, sizeof(lost),
					     "; DATA LOST: checkpoint had ids to %" PRIu64
					     " durable", ckpt_id - 1);

		/* this part must show: it overwrites the end of a long line */
		wl = RTE_MIN(wl, sizeof(rep->what) - 1 - ll);
		WHAT(rep, wl, "%s", lost);
	}
	if (strcmp(rep->what, "clean") != 0)
		DL_LOG(WARNING, "%s: recovery: %s", dl->dir, rep->what);
	rc = 0;
out:
	free(ents);
	free(msz);
	free(csz);
	free(sc.cbuf);
	free(sc.rb.buf);
	return rc;
}

/* The producer table snapshot of earlier builds ("producers", written at a clean stop):
 * the commit records hold the tags now, so it is not read, only removed (best effort: one
 * that comes back after a crash is removed again). */
static void
drop_old_files(const struct sl_disklog *dl)
{
	static const char *const old[] = {"producers", "producers.tmp"};
	char path[PATH_MAX];
	uint32_t i;

	for (i = 0; i < RTE_DIM(old); i++) {
		file_path(dl, path, old[i]);
		if (dl->ops->unlink(path) == 0)
			DL_LOG(INFO, "%s: removed %s (an earlier build's producer table: the "
			       "commit log keeps the tags now)", dl->dir, old[i]);
	}
}

/* Calling context: control thread. */
struct sl_disklog *
sl_disklog_open(const struct sl_disklog_conf *conf, struct sl_disklog_recovery *rep)
{
	struct sl_disklog_recovery tmp;
	struct sl_disklog *dl;
	uint32_t i;
	int rc;

	if (rep == NULL)
		rep = &tmp;
	memset(rep, 0, sizeof(*rep));
	if (conf == NULL || conf->dir == NULL || conf->dir[0] == '\0' ||
	    strlen(conf->dir) + 32 >= PATH_MAX) {
		errno = EINVAL;
		return NULL;
	}
	dl = calloc(1, sizeof(*dl));
	if (dl == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	dl->ops = conf->ops != NULL ? conf->ops : &sl_sio_posix;
	dl->partition = conf->partition;
	dl->seg_bytes = conf->segment_bytes ? conf->segment_bytes : DEFAULT_SEG_BYTES;
	dl->prealloc = RTE_MIN(RTE_ALIGN_CEIL(conf->prealloc_bytes, (uint64_t)PAGE), dl->seg_bytes);
	dl->dirfd = -1;
	pthread_mutex_init(&dl->lock, NULL);
	dl->dir = strdup(conf->dir);
	dl->cbuf = malloc(CBUF_RECS * CREC_TAG);
	rc = -ENOMEM;
	if (dl->dir == NULL || dl->cbuf == NULL)
		goto fail;
	rc = mkdir_p(dl->dir);
	if (rc != 0)
		goto fail;
	dl->dirfd = dl->ops->open(dl->dir, O_RDONLY | O_DIRECTORY, 0);
	if (dl->dirfd < 0) {
		rc = neg_errno();
		goto fail;
	}
	rc = recover(dl, rep);
	if (rc != 0)
		goto fail;
	drop_old_files(dl);
	return dl;
fail:
	if (rc != -EBADMSG)
		DL_LOG(ERR, "%s: open failed: %s", conf->dir, strerror(-rc));
	else
		DL_LOG(ERR, "%s: open failed: a file is not a disklog file", conf->dir);
	for (i = 0; i < dl->nseg; i++)
		close_seg(dl, &dl->segs[i]);
	dl->nseg = 0;
	sl_disklog_close(dl);
	errno = -rc;
	return NULL;
}

/* Calling context: control thread. */
void
sl_disklog_close(struct sl_disklog *dl)
{
	uint32_t i;

	if (dl == NULL)
		return;
	/* best effort: a crash may leave the zeros too, and open cuts them */
	if (dl->nseg > 0 && dl->segs[dl->nseg - 1].msg_fd >= 0)
		seal_seg(dl, &dl->segs[dl->nseg - 1]);
	for (i = 0; i < dl->nseg; i++)
		close_seg(dl, &dl->segs[i]);
	if (dl->dirfd >= 0)
		dl->ops->close(dl->dirfd);
	pthread_mutex_destroy(&dl->lock);
	free(dl->segs);
	free(dl->cbuf);
	free(dl->dir);
	free(dl);
}

/* ---------------------------------------------------------------------------------- */
/* Appender                                                                           */

/*
 * Structural check of the message records of c at p (their CRCs were just computed by
 * sl_disklog_encode_msg and are not recomputed): consecutive ids, sizes summing to
 * msg_size, marker 0xA4 on every record but the last, 0xA5 on the last. Gives the newest
 * timestamp.
 */
static int
check_msgs(const uint8_t *p, const struct sl_crec *c, uint64_t *ts)
{
	uint64_t pos = 0, sz;
	uint32_t k, ml, want;

	for (k = 0; k < c->msg_num; k++) {
		if (c->msg_size - pos < MHDR)
			return -EINVAL;
		ml = sl_bytes_get_le32(p + pos);
		want = k + 1 == c->msg_num ? MREC_MAGIC : MREC_MAGIC_MORE;
		sz = SL_DISKLOG_MREC_SIZE(ml & MREC_LEN_MAX);
		if ((ml >> 24) != want || sz > c->msg_size - pos ||
		    sl_bytes_get_le64(p + pos + 8) != c->log_id + k)
			return -EINVAL;
		*ts = RTE_MAX(*ts, sl_bytes_get_le64(p + pos + 16));
		pos += sz;
	}
	return pos == c->msg_size ? 0 : -EINVAL;
}

/* Calling context: the appender. */
int
sl_disklog_write(struct sl_disklog *dl, const void *msgs, const struct sl_crec *crecs,
		 uint32_t ncrec)
{
	const uint8_t *p = msgs;
	uint64_t id = dl->end_id + 1, off = dl->end_offset, pos = 0, ts;
	uint32_t i, j, k;
	struct seg *s;
	int rc;

	if (dl->error != 0)
		return dl->error;
	if (ncrec > 0 && (msgs == NULL || crecs == NULL))
		return -EINVAL;
	/* Check everything first: -EINVAL writes nothing. */
	for (i = 0; i < ncrec; i++) {
		const struct sl_crec *c = &crecs[i];

		ts = 0;
		if (c->log_id != id || c->msg_offset != off || c->last_msg_log_id < c->log_id ||
		    c->msg_cnt != c->last_msg_log_id ||
		    c->msg_num != c->last_msg_log_id - c->log_id + 1 ||
		    (c->producer != 0 && c->pseq == 0) || check_msgs(p + pos, c, &ts) != 0)
			return -EINVAL;
		id = c->last_msg_log_id + 1;
		off += c->msg_size;
		pos += c->msg_size;
	}
	for (i = 0; i < ncrec; i = j) {
		uint64_t data, mbytes = 0;

		s = &dl->segs[dl->nseg - 1];
		/* roll past segment_bytes, and off a segment of an older version (records
		 * without their tag) once it holds a record */
		if (s->nrec > 0 && (s->msg_size - HDR >= dl->seg_bytes || s->rlen != CREC_TAG)) {
			rc = seal_seg(dl, s);
			if (rc == 0)
				rc = add_segment(dl, crecs[i].msg_offset, crecs[i].log_id);
			if (rc != 0)
				return set_error(dl, rc);
			s = &dl->segs[dl->nseg - 1];
		}
		data = s->msg_size - HDR;
		ts = s->last_ts;
		for (j = i, k = 0; j < ncrec && k < CBUF_RECS; j++, k++) {
			if (j > i && data + mbytes >= dl->seg_bytes)
				break;		/* roll before record j */
			crec_encode(dl->cbuf + (size_t)k * s->rlen, &crecs[j], s->rlen);
			ts = RTE_MAX(ts, crecs[j].timestamp_ns);
			mbytes += crecs[j].msg_size;
		}
		/* The newest message of the chunk: its last record's last message. */
		check_msgs(p + mbytes - crecs[j - 1].msg_size, &crecs[j - 1], &ts);
		rc = zero_ahead(dl, s, mbytes);
		if (rc != 0)
			return set_error(dl, rc);
		dl->pz_bytes += mbytes;
		STR(dl->writes, LDR(dl->writes) + 2);
		rc = write_all(dl, s->msg_fd, p, mbytes, s->msg_size);
		if (rc == 0)
			rc = write_all(dl, s->clog_fd, dl->cbuf, (size_t)k * s->rlen,
				       HDR + s->nrec * s->rlen);
		if (rc != 0)
			return set_error(dl, rc);
		if (s->nrec == 0)
			s->first_ts = crecs[i].timestamp_ns;
		s->last_ts = ts;
		s->end_id = crecs[j - 1].last_msg_log_id;
		s->dirty = 1;
		s->clog_dirty = 1;
		ST(s->msg_size, s->msg_size + mbytes);
		ST(s->nrec, s->nrec + k);
		STR(dl->bytes, LDR(dl->bytes) + mbytes + (uint64_t)k * s->rlen);
		ST(dl->end_offset, crecs[j - 1].msg_offset + crecs[j - 1].msg_size);
		ST(dl->end_id, s->end_id);
		p += mbytes;
	}
	return 0;
}

/* Calling context: the appender. */
int
sl_disklog_sync(struct sl_disklog *dl)
{
	if (dl->error != 0)
		return dl->error;
	return set_error(dl, sync_files(dl, 0));
}

/* Calling context: the appender. */
int
sl_disklog_sync_clogs(struct sl_disklog *dl)
{
	int rc;

	if (dl->error != 0)
		return dl->error;
	rc = sync_clogs(dl, 1);
	return rc != 0 ? set_error(dl, rc) : 0;
}

/* Calling context: the appender. */
int
sl_disklog_checkpoint(struct sl_disklog *dl)
{
	/* the commit records up to the checkpoint are durable before it is */
	int rc = sl_disklog_sync_clogs(dl);

	if (rc != 0)
		return rc;
	/* nothing synced since the last one: the file says it already */
	if (dl->ckpt_slots && dl->ckpt_id == LDR(dl->synced_id) + 1)
		return 0;
	return write_checkpoint(dl);
}

/*
 * Cut the log back to end_id (a commit-record boundary, >= first_id - 1): truncate the
 * segment holding it, remove the later ones. Returns 0, -EINVAL (not a boundary) or
 * -errno of the truncation.
 */
static int
cut_to(struct sl_disklog *dl, uint64_t end_id)
{
	struct sl_crec c;
	uint64_t msg_size = HDR, nrec = 0, r;
	struct seg *s;
	uint32_t t, k;
	int rc = 0, rc2;

	t = seg_search(dl, KEY_ID, end_id);	/* the segment holding end_id (0 when none does) */
	s = &dl->segs[t];
	if (end_id > s->end_id && t + 1 < dl->nseg && dl->segs[t + 1].lost_from != 0)
		end_id = s->end_id;	/* in the lost range after s: it goes with its end */
	if (end_id >= s->base_id) {
		rc = crec_search(dl, s, s->nrec, KEY_ID, end_id, &r, &c);
		if (rc < 0)
			return rc;
		if (rc != 0 || c.last_msg_log_id != end_id)
			return -EINVAL;
		nrec = r + 1;
		msg_size = HDR + c.msg_offset + c.msg_size - s->base_offset;
	}
	pthread_mutex_lock(&dl->lock);
	if (dl->ops->ftruncate(s->clog_fd, (off_t)(HDR + nrec * s->rlen)) != 0 ||
	    dl->ops->ftruncate(s->msg_fd, (off_t)msg_size) != 0) {
		rc = neg_errno();
		pthread_mutex_unlock(&dl->lock);
		return rc;
	}
	STR(dl->bytes, LDR(dl->bytes) - seg_bytes_on_disk(s) + msg_size + HDR + nrec * s->rlen);
	s->zero_end = 0;
	ST(s->msg_size, msg_size);
	ST(s->nrec, nrec);
	s->end_id = end_id;
	s->dirty = 1;
	s->clog_dirty = 1;
	if (nrec == 0)
		s->last_ts = 0;
	for (k = t + 1; k < dl->nseg; k++) {
		STR(dl->bytes, LDR(dl->bytes) - seg_bytes_on_disk(&dl->segs[k]));
		close_seg(dl, &dl->segs[k]);
		rc2 = unlink_seg(dl, dl->segs[k].base_offset);
		if (rc == 0)
			rc = rc2;
		dl->dir_dirty = 1;
	}
	dl->nseg = t + 1;
	ST(dl->end_offset, s->base_offset + msg_size - HDR);
	ST(dl->end_id, end_id);
	if (LDR(dl->synced_id) > end_id) {
		STR(dl->synced_id, end_id);
		STR(dl->synced_offset, dl->end_offset);
	}
	pthread_mutex_unlock(&dl->lock);
	return rc;
}

/* Calling context: the appender. */
int
sl_disklog_truncate(struct sl_disklog *dl, uint64_t end_id)
{
	int rc;

	if (dl->error != 0)
		return dl->error;
	if (end_id >= dl->end_id)
		return 0;
	if (end_id + 1 < dl->first_id)
		return -EINVAL;
	rc = cut_to(dl, end_id);
	if (rc == -EINVAL)
		return rc;
	if (rc == 0)
		rc = sync_files(dl, 1);
	/* A checkpoint past the new end would read as data loss at the next open. */
	if (rc != 0)
		return set_error(dl, rc);
	if (dl->ckpt_id > end_id + 1)
		rc = write_checkpoint(dl);
	return rc;
}

/*
 * The reset proper: sl_disklog_reset, and sl_disklog_resume after a reset that failed
 * part-way. Each step leaves a table readers can use, and a directory that open recovers
 * as a consistent log (a suffix of the old one, or the new empty one); run again after a
 * failure, it picks up where it stopped.
 *   1. The checkpoint goes (directory fsync'ed): a crash in the middle must not open the
 *      log against a checkpoint of the old one (a false "DATA LOST", trusted segments).
 *   2. The old segments but the newest go, oldest first, as retention removes them: a
 *      crash leaves a suffix of the old log.
 *   3. The new segment's files are created, and the new segment replaces the newest old
 *      one in the table; that one's files go after, or before when both have the same
 *      base offset (the same file names). In between the directory holds both: open keeps
 *      whichever comes first and cuts the other, which does not follow it (a lone file
 *      left by a failed unlink is removed at open, as after an interrupted retention).
 *   4. Both new files and the directory are synced, then the checkpoint is written at
 *      the new base.
 * Returns 0 or a negative errno (the caller poisons the log).
 */
static int
reset_log(struct sl_disklog *dl, uint64_t first_id, uint64_t first_offset)
{
	char path[PATH_MAX];
	struct seg n, old;
	int rc;

	if (dl->stray) {
		rc = unlink_seg(dl, dl->stray_base);
		if (rc != 0)
			return rc;
		dl->stray = 0;
		dl->dir_dirty = 1;
	}
	file_path(dl, path, "checkpoint");
	if (dl->ops->unlink(path) == 0)
		dl->dir_dirty = 1;
	else if (errno != ENOENT)
		return neg_errno();
	dl->ckpt_id = 0;
	dl->ckpt_slots = 0;
	if (dl->dir_dirty) {
		if (dl->ops->fsync(dl->dirfd) != 0)
			return neg_errno();
		dl->dir_dirty = 0;
	}
	while (dl->nseg > 1) {
		rc = unlink_seg(dl, dl->segs[0].base_offset);
		dl->dir_dirty = 1;
		if (rc != 0)
			return rc;
		old = seg_pop_oldest(dl);
		close_seg(dl, &old);
		STR(dl->bytes, LDR(dl->bytes) - seg_bytes_on_disk(&old));
	}
	old = dl->segs[0];
	if (old.base_offset == first_offset) {
		/* readers keep reading it through its descriptors until the swap */
		rc = unlink_seg(dl, old.base_offset);
		dl->dir_dirty = 1;
		if (rc != 0)
			return rc;
	}
	rc = seg_create(dl, &n, first_offset, first_id, 0);
	dl->dir_dirty = 1;
	if (rc != 0)
		return rc;
	pthread_mutex_lock(&dl->lock);
	dl->segs[0] = n;
	STR(dl->first_id, first_id);
	ST(dl->end_offset, first_offset);
	ST(dl->end_id, first_id - 1);
	/* nothing below first_id is in the log: a crash loses nothing of it */
	STR(dl->synced_offset, first_offset);
	STR(dl->synced_id, first_id - 1);
	STR(dl->bytes, seg_bytes_on_disk(&n));
	pthread_mutex_unlock(&dl->lock);
	close_seg(dl, &old);
	if (old.base_offset != first_offset) {
		rc = unlink_seg(dl, old.base_offset);
		if (rc != 0) {
			dl->stray = 1;
			dl->stray_base = old.base_offset;
			return rc;
		}
	}
	rc = sync_files(dl, 1);
	if (rc != 0)
		return rc;
	return write_checkpoint(dl);
}

/* Calling context: the appender. */
int
sl_disklog_reset(struct sl_disklog *dl, uint64_t first_id, uint64_t first_offset)
{
	uint64_t was_first = dl->first_id, was_end = dl->end_id;
	int rc;

	if (dl->error != 0)
		return dl->error;
	if (first_id == 0)
		return -EINVAL;
	rc = reset_log(dl, first_id, first_offset);
	if (rc == 0) {
		DL_LOG(NOTICE, "%s: reset: ids %" PRIu64 "..%" PRIu64 " dropped, the log restarts "
		       "empty at id %" PRIu64 ", offset %" PRIu64, dl->dir, was_first, was_end,
		       first_id, first_offset);
		return 0;
	}
	/* Not set_error: its cut to the synced id does not apply to a half-reset table. */
	dl->reset_id = first_id;
	dl->reset_offset = first_offset;
	if (LDR(dl->error) == 0) {
		STR(dl->error, rc);
		DL_LOG(ERR, "%s: I/O error %d (%s) in a reset to id %" PRIu64 ", log poisoned "
		       "until resume (which completes the reset)", dl->dir, rc, strerror(-rc),
		       first_id);
	}
	return LDR(dl->error);
}

/* Calling context: the control thread, before the log has an appender or readers. */
int
sl_disklog_skip(struct sl_disklog *dl, uint64_t next_id)
{
	struct seg *s, ns;
	uint64_t end, lost;
	int rc;

	if (dl->error != 0)
		return dl->error;
	end = LDR(dl->end_id);
	if (next_id <= end + 1)
		return 0;
	rc = sync_files(dl, 1);		/* what is before the range is durable first */
	if (rc != 0)
		return set_error(dl, rc);
	s = &dl->segs[dl->nseg - 1];
	lost = end + 1;
	if (s->msg_size == HDR) {
		/* an empty active segment: made again in place (same name, same queue
		 * offset), its own range joining the lost one */
		if (s->lost_from != 0)
			lost = s->lost_from;
		close_seg(dl, s);
		rc = seg_create(dl, &ns, s->base_offset, next_id, lost);
		if (rc != 0) {
			dl->nseg--;	/* its files are gone (create_seg_files) */
			return set_error(dl, rc);
		}
		*s = ns;
		dl->dir_dirty = 1;
	} else {
		rc = seal_seg(dl, s);
		if (rc == 0)
			rc = add_segment_lost(dl, LDR(dl->end_offset), next_id, lost);
		if (rc != 0)
			return set_error(dl, rc);
	}
	ST(dl->first_id, dl->segs[0].base_id);
	ST(dl->end_id, next_id - 1);
	rc = sync_files(dl, 1);
	if (rc != 0)
		return set_error(dl, rc);
	rc = write_checkpoint(dl);
	if (rc != 0)
		return rc;
	DL_LOG(WARNING, "%s: ids %" PRIu64 "..%" PRIu64 " recorded as a lost range: the log "
	       "continues at id %" PRIu64, dl->dir, lost, next_id - 1, next_id);
	return 0;
}

/* Calling context: the appender (or the control thread before there is one). */
int
sl_disklog_mark(struct sl_disklog *dl, uint64_t id)
{
	uint8_t h[HDR];

	if (dl->error != 0)
		return dl->error;
	hdr_encode(h, MAGIC_MARK, 0, id, dl->partition, 0);
	return write_file_atomic(dl, "idmark", h, HDR);
}

/* Calling context: any thread. */
int
sl_disklog_error(const struct sl_disklog *dl)
{
	return LDR(dl->error);
}

/* Reopen a segment's files (after an I/O error the old descriptors may stay bad). */
static int
reopen_seg(struct sl_disklog *dl, struct seg *s)
{
	char path[PATH_MAX];
	int mfd, cfd;

	seg_path(dl, path, s->base_offset, "msg");
	mfd = dl->ops->open(path, O_RDWR, 0);
	if (mfd < 0)
		return neg_errno();
	seg_path(dl, path, s->base_offset, "clog");
	cfd = dl->ops->open(path, O_RDWR, 0);
	if (cfd < 0) {
		dl->ops->close(mfd);
		return neg_errno();
	}
	pthread_mutex_lock(&dl->lock);
	close_seg(dl, s);
	s->msg_fd = mfd;
	s->clog_fd = cfd;
	pthread_mutex_unlock(&dl->lock);
	return 0;
}

/* Calling context: the appender. */
int
sl_disklog_resume(struct sl_disklog *dl)
{
	struct seg *s;
	uint32_t i;
	int rc;

	if (dl->error == 0)
		return 0;
	if (dl->reset_id != 0) {
		/* a reset failed part-way: finish it (what it dropped is not wanted back) */
		rc = reset_log(dl, dl->reset_id, dl->reset_offset);
		if (rc != 0)
			return rc;
		DL_LOG(NOTICE, "%s: resumed after error %d: the reset to id %" PRIu64
		       " is complete", dl->dir, dl->error, dl->reset_id);
		dl->reset_id = 0;
		STR(dl->error, 0);
		return 0;
	}
	/* Segments created after the last sync go. */
	pthread_mutex_lock(&dl->lock);
	while (dl->nseg > 1 && dl->segs[dl->nseg - 1].fresh) {
		s = &dl->segs[dl->nseg - 1];
		STR(dl->bytes, LDR(dl->bytes) - seg_bytes_on_disk(s));
		close_seg(dl, s);
		unlink_seg(dl, s->base_offset);
		dl->nseg--;
		dl->dir_dirty = 1;
	}
	pthread_mutex_unlock(&dl->lock);
	for (i = dl->nseg; i > 0 && seg_flagged(&dl->segs[i - 1]); i--) {
		rc = reopen_seg(dl, &dl->segs[i - 1]);
		if (rc != 0)
			return rc;
	}
	rc = cut_to(dl, LDR(dl->synced_id));
	if (rc == 0)
		rc = sync_files(dl, 1);
	if (rc != 0)
		return rc;
	DL_LOG(NOTICE, "%s: resumed after error %d at id %" PRIu64, dl->dir, dl->error,
	       dl->end_id);
	STR(dl->error, 0);
	return 0;
}

/* Calling context: the appender. */
int
sl_disklog_retain(struct sl_disklog *dl, const struct sl_disklog_retention *pol,
		  struct sl_disklog_retain_res *res)
{
	struct sl_disklog_retain_res tmp;
	uint64_t bytes = LDR(dl->bytes), cutoff = 0, sz;
	struct seg s;
	uint32_t i;
	int rc = 0, rc2;

	if (res == NULL)
		res = &tmp;
	memset(res, 0, sizeof(*res));
	if (dl->error != 0)
		return dl->error;
	if (pol == NULL)
		return -EINVAL;
	if (pol->max_age_ns != 0 && pol->now_ns > pol->max_age_ns)
		cutoff = pol->now_ns - pol->max_age_ns;
	while (dl->nseg > 1) {
		s = dl->segs[0];
		sz = seg_bytes_on_disk(&s);
		if (!((pol->max_bytes != 0 && bytes > pol->max_bytes) || s.last_ts < cutoff))
			break;
		if (pol->keep_from_id != 0 && s.end_id >= pol->keep_from_id) {
			/* What the policy would drop from here on, were it not held. */
			res->held_from_id = pol->keep_from_id;
			for (i = 0; i + 1 < dl->nseg; i++) {
				const struct seg *h = &dl->segs[i];

				sz = seg_bytes_on_disk(h);
				if (!((pol->max_bytes != 0 && bytes > pol->max_bytes) ||
				      h->last_ts < cutoff))
					break;
				res->held_bytes += sz;
				bytes -= sz;
			}
			break;
		}
		s = seg_pop_oldest(dl);
		close_seg(dl, &s);
		rc2 = unlink_seg(dl, s.base_offset);
		if (rc == 0)
			rc = rc2;
		dl->dir_dirty = 1;
		bytes -= sz;
		STR(dl->bytes, LDR(dl->bytes) - sz);
		res->removed_segments++;
		res->removed_bytes += sz;
	}
	return rc;
}

/* ---------------------------------------------------------------------------------- */
/* Readers                                                                            */

/* When id falls in a lost range (after segment si, before the next one's base id): that
 * base id, the next id held; else 0. Lock held. */
static uint64_t
lost_next(const struct sl_disklog *dl, uint32_t si, uint64_t id)
{
	const struct seg *n;

	if (si + 1 >= dl->nseg)
		return 0;
	n = &dl->segs[si + 1];
	return n->lost_from != 0 && id >= n->lost_from && id < n->base_id ? n->base_id : 0;
}

/* File position of message id in segment s (id in the first nrec records). */
static int
locate_id(const struct sl_disklog *dl, const struct seg *s, uint64_t nrec, uint64_t id,
	  uint64_t *pos)
{
	struct sl_crec c;
	uint64_t r, p, mid, ts;
	uint32_t len;
	int rc;

	rc = crec_search(dl, s, nrec, KEY_ID, id, &r, &c);
	if (rc != 0)
		return rc < 0 ? rc : -ENOENT;
	if (id > c.last_msg_log_id)
		return -ENOENT;
	p = HDR + c.msg_offset - s->base_offset;
	for (r = c.log_id; r < id; r++) {
		rc = read_mhdr(dl, s, p, &len, &mid, &ts);
		if (rc != 0)
			return rc;
		if (mid != r)
			return -EBADMSG;
		p += SL_DISKLOG_MREC_SIZE(len);
	}
	*pos = p;
	return 0;
}

/* Calling context: any thread (one reader besides the appender). */
int
sl_disklog_read_recs(struct sl_disklog *dl, uint64_t id, uint64_t max_id, void *buf, size_t len,
		     struct sl_crec *crecs, uint32_t max_recs, uint32_t *n)
{
	struct sl_crec c;
	const struct seg *s;
	uint64_t r, nrec, end;
	uint32_t si, used = 0;
	int rc;

	*n = 0;
	pthread_mutex_lock(&dl->lock);
	end = RTE_MIN(LD(dl->end_id), max_id);
	if (dl->nseg == 0 || id < LD(dl->first_id) || id > end) {
		rc = -ENOENT;
		goto out;
	}
	si = seg_search(dl, KEY_ID, id);
	if (lost_next(dl, si, id) != 0) {
		rc = -ENOENT;	/* a lost range */
		goto out;
	}
	s = &dl->segs[si];
	nrec = LD(s->nrec);
	rc = crec_search(dl, s, nrec, KEY_ID, id, &r, &c);
	if (rc != 0 || id > c.last_msg_log_id) {
		rc = rc < 0 ? rc : -ENOENT;
		goto out;
	}
	/* whole records of this segment, in order, as long as they fit */
	for (; r < nrec && *n < max_recs; r++) {
		if (read_crec(dl, s, r, &c) != 0 || c.last_msg_log_id > end ||
		    used + c.msg_size > len)
			break;
		rc = read_exact(dl, s->msg_fd, (uint8_t *)buf + used, c.msg_size,
				HDR + c.msg_offset - s->base_offset);
		if (rc != 0)
			break;
		crecs[(*n)++] = c;
		used += c.msg_size;
	}
	rc = *n > 0 ? 0 : (rc != 0 ? rc : -ENOBUFS);
out:
	pthread_mutex_unlock(&dl->lock);
	return rc;
}

/* Calling context: any thread (one reader besides the appender). */
int
sl_disklog_read(struct sl_disklog *dl, uint64_t from, uint64_t max_id, void *buf, size_t len,
		struct sl_disklog_msg *msgs, uint32_t max_msgs, uint32_t *n,
		uint64_t *first_avail)
{
	uint64_t end = LD(dl->end_id), lim, pos = 0, mend, want, expect = from, next;
	uint8_t *b = buf;
	size_t used = 0;
	uint32_t si, cnt = 0, rlen;
	ssize_t got;
	int rc = 0, done = 0;

	if (n == NULL || (len > 0 && buf == NULL) || (max_msgs > 0 && msgs == NULL))
		return -EINVAL;
	*n = 0;
	pthread_mutex_lock(&dl->lock);
	if (from < dl->first_id) {
		if (first_avail != NULL)
			*first_avail = dl->first_id;
		pthread_mutex_unlock(&dl->lock);
		return -ENOENT;
	}
	lim = RTE_MIN(max_id, end);
	if (from > lim || max_msgs == 0)
		goto out;
	si = seg_search(dl, KEY_ID, from);
	next = lost_next(dl, si, from);
	if (next != 0) {
		/* a lost range: the caller skips to the next id held */
		if (first_avail != NULL)
			*first_avail = next;
		rc = -ENOENT;
		goto out;
	}
	rc = locate_id(dl, &dl->segs[si], LD(dl->segs[si].nrec), from, &pos);
	if (rc == -ENOENT) {
		rc = 0;		/* cut meanwhile */
		goto out;
	}
	while (rc == 0 && !done && cnt < max_msgs) {
		const struct seg *s = &dl->segs[si];
		uint8_t *q, *qend;

		mend = LD(s->msg_size);
		if (pos >= mend) {
			if (si + 1 >= dl->nseg || dl->segs[si + 1].base_id != expect)
				break;	/* the end, or a lost range: a read stops before it */
			si++;
			pos = HDR;
			continue;
		}
		want = RTE_MIN((uint64_t)(len - used), mend - pos);
		if (want < MHDR)
			break;
		got = read_full(dl, s->msg_fd, b + used, want, pos);
		if (got < 0 || (uint64_t)got != want) {
			rc = got < 0 ? (int)got : -EIO;
			break;
		}
		q = b + used;
		qend = q + want;
		while (cnt < max_msgs && qend - q >= MHDR) {
			struct sl_disklog_msg *m = &msgs[cnt];

			if (mrec_len(q, &rlen) != 0 || sl_bytes_get_le64(q + 8) != expect) {
				rc = -EBADMSG;
				break;
			}
			if (expect > lim) {
				done = 1;
				break;
			}
			if (SL_DISKLOG_MREC_SIZE(rlen) > (uint64_t)(qend - q))
				break;
			if (mrec_crc(q, rlen) != sl_bytes_get_le32(q + 4)) {
				rc = -EBADMSG;
				break;
			}
			m->id = expect++;
			m->offset = s->base_offset + pos + (uint64_t)(q - (b + used)) - HDR;
			m->timestamp_ns = sl_bytes_get_le64(q + 16);
			m->trace_id = sl_bytes_get_le64(q + 24);
			m->len = rlen;
			m->data = q + MHDR;
			cnt++;
			q += SL_DISKLOG_MREC_SIZE(rlen);
		}
		if (q == b + used)
			break;		/* the next record does not fit */
		pos += (uint64_t)(q - (b + used));
		used += (size_t)(q - (b + used));
	}
	if (rc == 0 && cnt == 0 && !done && expect <= lim)
		rc = -ENOBUFS;
out:
	pthread_mutex_unlock(&dl->lock);
	*n = cnt;
	return rc;
}

/* First message at or after time ts in the records of segment si (lock held). */
static int
find_time(const struct sl_disklog *dl, uint32_t si, uint32_t nseg, uint64_t value, uint64_t *id)
{
	const struct seg *s = &dl->segs[si];
	uint64_t nrec = LD(s->nrec), r, pos, mid, ts;
	struct sl_crec c;
	uint32_t k, len;
	int rc;

	rc = crec_search(dl, s, nrec, KEY_TIME, value, &r, &c);
	if (rc < 0)
		return rc;
	if (rc == 1) {
		/* the segment's first record is already at or after value */
		*id = s->base_id;
		return 0;
	}
	pos = HDR + c.msg_offset - s->base_offset;
	for (k = 0; k < c.msg_num; k++) {
		rc = read_mhdr(dl, s, pos, &len, &mid, &ts);
		if (rc != 0)
			return rc;
		if (ts >= value) {
			*id = mid;
			return 0;
		}
		pos += SL_DISKLOG_MREC_SIZE(len);
	}
	/* Next: the next record, the next segment's first (both at or after value), or the
	 * end. */
	*id = c.last_msg_log_id + 1;
	return 0;
}

/* Calling context: any thread (one reader besides the appender). */
int
sl_disklog_last(struct sl_disklog *dl, struct sl_crec *c)
{
	const struct seg *s;
	int rc = -ENOENT;
	uint32_t i;

	memset(c, 0, sizeof(*c));
	pthread_mutex_lock(&dl->lock);
	for (i = dl->nseg; i > 0; i--) {
		s = &dl->segs[i - 1];
		if (LD(s->nrec) > 0) {
			rc = read_crec(dl, s, LD(s->nrec) - 1, c);
			break;
		}
	}
	pthread_mutex_unlock(&dl->lock);
	return rc;
}

/* Append (e, id) to an epoch history of at most max entries, dropping the oldest. */
static void
epoch_push(uint64_t *epoch, uint64_t *start_id, uint32_t max, uint32_t *n, uint64_t e,
	   uint64_t id)
{
	if (*n > 0 && epoch[*n - 1] == e)
		return;
	if (*n == max) {
		memmove(epoch, epoch + 1, sizeof(*epoch) * (max - 1));
		memmove(start_id, start_id + 1, sizeof(*start_id) * (max - 1));
		(*n)--;
	}
	epoch[*n] = e;
	start_id[*n] = id;
	(*n)++;
}

int
sl_disklog_epochs(struct sl_disklog *dl, uint64_t *epoch, uint64_t *start_id, uint32_t max)
{
	struct sl_crec c, last;
	uint64_t nrec, a, b, m, cur;
	const struct seg *s;
	uint32_t si, n = 0;
	int rc = 0;

	if (max == 0)
		return -EINVAL;
	pthread_mutex_lock(&dl->lock);
	for (si = 0; si < dl->nseg; si++) {
		s = &dl->segs[si];
		nrec = LD(s->nrec);
		if (nrec == 0)
			continue;
		rc = read_crec(dl, s, 0, &c);
		if (rc == 0)
			rc = read_crec(dl, s, nrec - 1, &last);
		if (rc != 0)
			goto out;
		epoch_push(epoch, start_id, max, &n, c.epoch, c.log_id);
		/* record a has epoch cur; find the first record after it with a higher one */
		for (a = 0, cur = c.epoch; cur < last.epoch;) {
			for (b = nrec - 1; b - a > 1;) {
				m = a + (b - a) / 2;
				rc = read_crec(dl, s, m, &c);
				if (rc != 0)
					goto out;
				if (c.epoch > cur)
					b = m;
				else
					a = m;
			}
			rc = read_crec(dl, s, b, &c);
			if (rc != 0)
				goto out;
			epoch_push(epoch, start_id, max, &n, c.epoch, c.log_id);
			a = b;
			cur = c.epoch;
		}
	}
out:
	pthread_mutex_unlock(&dl->lock);
	return rc != 0 ? rc : (int)n;
}

int
sl_disklog_find(struct sl_disklog *dl, enum sl_disklog_find_kind kind, uint64_t value,
		uint64_t *id)
{
	struct sl_crec c;
	uint64_t end, first, nrec, r, pos, mid, ts;
	const struct seg *s;
	uint32_t si, nseg, len;
	int rc = 0;

	if (id == NULL)
		return -EINVAL;
	switch (kind) {
	case SL_DISKLOG_BY_COUNT:
		if (value == UINT64_MAX)
			return -EINVAL;
		value++;
		/* fall through */
	case SL_DISKLOG_BY_ID:
		pthread_mutex_lock(&dl->lock);
		end = LD(dl->end_id);
		first = LD(dl->first_id);
		if (value < first) {
			*id = first;
			rc = -ENOENT;
		} else if (value > end) {
			*id = end + 1;
		} else {
			/* an id in a lost range: the next one held */
			r = lost_next(dl, seg_search(dl, KEY_ID, value), value);
			*id = r != 0 ? r : value;
		}
		pthread_mutex_unlock(&dl->lock);
		return rc;
	case SL_DISKLOG_BY_OFFSET:
	case SL_DISKLOG_BY_TIME:
		break;
	default:
		return -EINVAL;
	}
	pthread_mutex_lock(&dl->lock);
	nseg = dl->nseg;
	first = dl->first_id;
	if (kind == SL_DISKLOG_BY_OFFSET) {
		if (value < dl->segs[0].base_offset) {
			*id = first;
			rc = -ENOENT;
			goto out;
		}
		si = seg_search(dl, KEY_OFFSET, value);
		s = &dl->segs[si];
		nrec = LD(s->nrec);
		if (nrec == 0) {
			*id = s->base_id;
			goto out;
		}
		rc = crec_search(dl, s, nrec, KEY_OFFSET, value, &r, &c);
		if (rc != 0) {
			rc = rc < 0 ? rc : -EBADMSG;
			goto out;
		}
		if (value >= c.msg_offset + c.msg_size) {
			*id = c.last_msg_log_id + 1;	/* the end, or past it */
			goto out;
		}
		pos = c.msg_offset;
		for (mid = c.log_id; pos < value; mid++) {
			rc = read_mhdr(dl, s, HDR + pos - s->base_offset, &len, &r, &ts);
			if (rc != 0)
				goto out;
			pos += SL_DISKLOG_MREC_SIZE(len);
		}
		if (pos != value)
			rc = -EINVAL;
		else
			*id = mid;
		goto out;
	}
	/* By time: segments by their first record's timestamp, then records, then messages. */
	if (nseg > 1 && LD(dl->segs[nseg - 1].nrec) == 0)
		nseg--;		/* just rolled, nothing written yet */
	if (LD(dl->segs[0].nrec) == 0) {
		*id = first;
		goto out;
	}
	{
		uint32_t lo = 0, hi = nseg;

		/* last segment whose first record is before value */
		while (lo < hi) {
			uint32_t m = lo + (hi - lo) / 2;

			if (dl->segs[m].first_ts < value)
				lo = m + 1;
			else
				hi = m;
		}
		if (lo == 0) {
			/* the oldest retained message is already at or after value */
			*id = first;
			rc = value < dl->segs[0].first_ts ? -ENOENT : 0;
			goto out;
		}
		rc = find_time(dl, lo - 1, nseg, value, id);
	}
out:
	pthread_mutex_unlock(&dl->lock);
	return rc;
}

/* ---------------------------------------------------------------------------------- */
/* Channel positions                                                                  */

#define CHAN_ENT 96
#define CHAN_NAME_FIELD 72

/* Calling context: the appender. */
int
sl_disklog_chan_save(struct sl_disklog *dl, const struct sl_disklog_chan *c, uint32_t n)
{
	size_t sz = HDR + (size_t)n * CHAN_ENT;
	uint8_t *b, *e;
	uint32_t i;
	int rc;

	if (dl->error != 0)
		return dl->error;
	if (n > 0 && c == NULL)
		return -EINVAL;
	for (i = 0; i < n; i++)
		if (strnlen(c[i].name, sizeof(c[i].name)) > SL_DISKLOG_CHAN_NAME_MAX)
			return -EINVAL;
	b = calloc(1, sz);
	if (b == NULL)
		return -ENOMEM;
	hdr_encode(b, MAGIC_CHAN, 0, 0, dl->partition, n);
	for (i = 0; i < n; i++) {
		e = b + HDR + (size_t)i * CHAN_ENT;
		memcpy(e, c[i].name, strnlen(c[i].name, SL_DISKLOG_CHAN_NAME_MAX));
		sl_bytes_put_le32(e + 72, c[i].flags);
		sl_bytes_put_le64(e + 80, c[i].confirmed_id);
		sl_bytes_put_le32(e + 92, crc32c(e, 92));
	}
	rc = write_file_atomic(dl, "channels", b, sz);
	free(b);
	return rc;
}

/* Calling context: control thread. */
int
sl_disklog_chan_load(struct sl_disklog *dl, struct sl_disklog_chan *c, uint32_t max)
{
	char path[PATH_MAX];
	uint8_t h[HDR], e[CHAN_ENT];
	uint32_t count, i, j;
	int fd, rc = 0;

	if (max > 0 && c == NULL)
		return -EINVAL;
	file_path(dl, path, "channels");
	fd = dl->ops->open(path, O_RDONLY, 0);
	if (fd < 0)
		return errno == ENOENT ? 0 : neg_errno();
	rc = read_exact(dl, fd, h, HDR, 0);
	if (rc == 0 && hdr_check(h, MAGIC_CHAN) != HDR_OK)
		rc = -EBADMSG;
	count = rc == 0 ? sl_bytes_get_le32(h + 44) : 0;
	for (i = 0; rc == 0 && i < count; i++) {
		rc = read_exact(dl, fd, e, CHAN_ENT, HDR + (uint64_t)i * CHAN_ENT);
		if (rc != 0)
			break;
		for (j = 0; j <= SL_DISKLOG_CHAN_NAME_MAX && e[j] != 0; j++)
			;
		if (sl_bytes_get_le32(e + 92) != crc32c(e, 92) || j > SL_DISKLOG_CHAN_NAME_MAX) {
			rc = -EBADMSG;
			break;
		}
		if (i < max) {
			memset(&c[i], 0, sizeof(c[i]));
			memcpy(c[i].name, e, j);
			c[i].flags = sl_bytes_get_le32(e + 72);
			c[i].confirmed_id = sl_bytes_get_le64(e + 80);
		}
	}
	dl->ops->close(fd);
	if (rc != 0) {
		DL_LOG(ERR, "%s: channels file is corrupt (%s)", dl->dir, strerror(-rc));
		return rc;
	}
	return (int)RTE_MIN(count, max);
}

/* ---------------------------------------------------------------------------------- */
/* Producer tags                                                                      */

/* Calling context: the control thread, before the log has an appender or readers. */
int
sl_disklog_tail(struct sl_disklog *dl, struct sl_crec *out, uint32_t max)
{
	uint64_t left = max, r, want, k;
	const struct seg *s;
	uint32_t i;
	int rc;

	if (max > 0 && out == NULL)
		return -EINVAL;
	if (max > INT32_MAX)
		return -EINVAL;
	if (dl->error != 0)
		return dl->error;
	/* newest segment first, each read from its last record back: out is filled from
	 * its end, then moved to its start */
	for (i = dl->nseg; i > 0 && left > 0; i--) {
		s = &dl->segs[i - 1];
		want = RTE_MIN(s->nrec, left);
		r = s->nrec - want;	/* the first record of s wanted */
		for (k = 0; k < want; k += CBUF_RECS) {
			uint64_t n = RTE_MIN((uint64_t)CBUF_RECS, want - k), j;

			rc = read_exact(dl, s->clog_fd, dl->cbuf, (size_t)(n * s->rlen),
					HDR + (r + k) * s->rlen);
			for (j = 0; rc == 0 && j < n; j++)
				rc = crec_decode(dl->cbuf + j * s->rlen,
						 &out[left - want + k + j], s->rlen);
			if (rc != 0)
				return rc;
		}
		left -= want;
	}
	if (left > 0)
		memmove(out, out + left, (size_t)(max - left) * sizeof(*out));
	return (int)(max - left);
}

/* Calling context: any thread. */
void
sl_disklog_get_stats(const struct sl_disklog *dl, struct sl_disklog_stats *st)
{
	st->first_id = LDR(dl->first_id);
	st->end_id = LDR(dl->end_id);
	st->end_offset = LDR(dl->end_offset);
	st->synced_id = LDR(dl->synced_id);
	st->bytes = LDR(dl->bytes);
	st->segments = LDR(dl->nseg);
	st->writes = LDR(dl->writes);
	st->syncs = LDR(dl->syncs);
	st->zero_bytes = LDR(dl->zero_bytes);
	st->zero_skips = LDR(dl->zero_skips);
	st->error = LDR(dl->error);
}
