/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * Unit test of the on-disk partition log (storage/disklog.c) through a fault-injecting
 * sl_sio_ops: round trips across segments, lookups, recovery from a torn or corrupt tail
 * at every byte, commit records rebuilt from the message log (the commit log is synced
 * lazily) and torn MPUBs cut whole, sticky write and sync errors and resume, retention,
 * channel positions and checkpoints, resets (and faults during them). Runs in a
 * temporary directory under /tmp, no EAL.
 */
#define _XOPEN_SOURCE 700
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "disklog.h"
#include "sio.h"
#include "check.h"



#define RS(len) SL_DISKLOG_MREC_SIZE(len)
#define CR SL_DISKLOG_CREC_TAG_LEN	/* a commit record of this build */
#define AADD(x, v) __atomic_fetch_add(&(x), (v), __ATOMIC_RELAXED)
#define ALD(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)
#define MAXID 20000
#define T0 UINT64_C(1700000000000000000)
#define DLEN 256			/* directory path buffers */

/*
 * Heap allocations of the code under test while alloc_counting is set: malloc, calloc and
 * realloc are wrapped at link time (-Wl,--wrap, tests/unit/meson.build).
 */
void *__real_malloc(size_t n);
void *__real_calloc(size_t k, size_t n);
void *__real_realloc(void *p, size_t n);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t k, size_t n);
void *__wrap_realloc(void *p, size_t n);
static int alloc_counting;
static unsigned long allocs;

void *
__wrap_malloc(size_t n)
{
	if (ALD(alloc_counting))
		AADD(allocs, 1);
	return __real_malloc(n);
}

void *
__wrap_calloc(size_t k, size_t n)
{
	if (ALD(alloc_counting))
		AADD(allocs, 1);
	return __real_calloc(k, n);
}

void *
__wrap_realloc(void *p, size_t n)
{
	if (ALD(alloc_counting))
		AADD(allocs, 1);
	return __real_realloc(p, n);
}

static uint64_t w_epoch = 7;		/* the epoch app() writes */
static uint64_t w_producer;		/* and its records' producer tag (seq: log_id) */

/* ---- fault injection ---- */

static struct {
	unsigned int short_in;		/* the short_in-th pwrite from now writes half, the
					 * next one fails with ENOSPC */
	unsigned int fail_in;		/* the fail_in-th pwrite from now fails with fail_errno */
	int fail_errno;
	unsigned int sync_fail;		/* the next sync_fail fdatasyncs fail with EIO */
	unsigned int fsync_fail;	/* the next fsync_fail fsyncs fail with EIO */
	unsigned int unlink_fail_in;	/* the unlink_fail_in-th unlink from now fails (EIO) */
	unsigned int pwrites;
	unsigned int fdatasyncs;
	unsigned int unlinks;
	unsigned int renames;
} F;

static ssize_t
f_pwrite(int fd, const void *buf, size_t len, off_t off)
{
	F.pwrites++;
	if (F.short_in != 0 && --F.short_in == 0) {
		/* as a filling disk does: part of it, then ENOSPC for the rest */
		F.fail_in = 1;
		F.fail_errno = ENOSPC;
		return sl_sio_posix.pwrite(fd, buf, len / 2, off);
	}
	if (F.fail_in != 0 && --F.fail_in == 0) {
		errno = F.fail_errno;
		return -1;
	}
	return sl_sio_posix.pwrite(fd, buf, len, off);
}

static int
f_fdatasync(int fd)
{
	F.fdatasyncs++;
	if (F.sync_fail != 0) {
		F.sync_fail--;
		errno = EIO;
		return -1;
	}
	return sl_sio_posix.fdatasync(fd);
}

static int
f_fsync(int fd)
{
	if (F.fsync_fail != 0) {
		F.fsync_fail--;
		errno = EIO;
		return -1;
	}
	return sl_sio_posix.fsync(fd);
}

static int
f_unlink(const char *path)
{
	F.unlinks++;
	if (F.unlink_fail_in != 0 && --F.unlink_fail_in == 0) {
		errno = EIO;
		return -1;
	}
	return sl_sio_posix.unlink(path);
}

static int
f_rename(const char *from, const char *to)
{
	F.renames++;
	return sl_sio_posix.rename(from, to);
}

static struct sl_sio_ops fops;

/* ---- a model of what was written ---- */

static struct {
	uint64_t off;
	uint64_t ts;
	uint32_t len;
} M[MAXID];
static uint64_t m_end_id, m_end_off;
static uint64_t ts_step = 1000;		/* timestamp of id = T0 + id * ts_step (default) */

static uint8_t wbuf[1 << 20];
static uint8_t rbuf[1 << 20];
static struct sl_disklog_msg rmsgs[4096];
static struct sl_crec crecs[256];

static uint32_t
len_of(uint64_t id)
{
	return (uint32_t)((id * 37) % 150);
}

static void
fill(uint8_t *p, uint32_t len, uint64_t seed)
{
	uint32_t i;

	for (i = 0; i < len; i++)
		p[i] = (uint8_t)(seed * 131 + i * 31 + (i >> 8));
}

static int
same(const uint8_t *p, uint32_t len, uint64_t seed)
{
	uint32_t i;

	for (i = 0; i < len; i++)
		if (p[i] != (uint8_t)(seed * 131 + i * 31 + (i >> 8)))
			return 0;
	return 1;
}

static void
model_reset(void)
{
	m_end_id = 0;
	m_end_off = 0;
}

/* Cut the model back to end id e. */
static void
model_cut(uint64_t e)
{
	m_end_id = e;
	m_end_off = e == 0 ? 0 : M[e].off + RS(M[e].len);
}

/*
 * Append nrec commit records of per[i % nper] messages each in one sl_disklog_write.
 * The model advances only on success. Returns what the write returned.
 */
static int
app(struct sl_disklog *dl, uint32_t nrec, const uint32_t *per, uint32_t nper)
{
	uint64_t id = m_end_id + 1, off = m_end_off;
	size_t used = 0;
	uint32_t i, k;
	int rc;

	for (i = 0; i < nrec; i++) {
		struct sl_crec *c = &crecs[i];
		uint32_t n = per[i % nper];

		memset(c, 0, sizeof(*c));
		c->log_id = id;
		c->epoch = w_epoch;
		c->msg_offset = off;
		c->timestamp_ns = T0 + id * ts_step;
		for (k = 0; k < n; k++, id++) {
			uint32_t len = len_of(id), sz;
			uint8_t data[256];

			fill(data, len, id);
			M[id].off = off;
			M[id].ts = T0 + id * ts_step;
			M[id].len = len;
			sz = sl_disklog_encode_msg(wbuf + used, id, M[id].ts, id ^ 0x5555, data,
						   len, k + 1 == n);
			used += sz;
			off += sz;
			c->msg_size += sz;
		}
		c->last_msg_log_id = id - 1;
		c->msg_cnt = id - 1;
		c->msg_num = n;
		c->producer = w_producer;
		c->pseq = w_producer != 0 ? c->log_id : 0;
	}
	rc = sl_disklog_write(dl, wbuf, crecs, nrec);
	if (rc == 0) {
		m_end_id = id - 1;
		m_end_off = off;
	}
	return rc;
}

static int
app1(struct sl_disklog *dl, uint32_t nrec, uint32_t per)
{
	return app(dl, nrec, &per, 1);
}

/* Read ids [from, to] back and compare with the model. Returns mismatches. */
static int
verify(struct sl_disklog *dl, uint64_t from, uint64_t to)
{
	uint64_t id = from, fa = 0;
	uint32_t n, i;
	int bad = 0, rc;

	while (id <= to) {
		rc = sl_disklog_read(dl, id, to, rbuf, sizeof(rbuf), rmsgs, 4096, &n, &fa);
		if (rc != 0 || n == 0) {
			printf("  read from %" PRIu64 ": rc %d n %u\n", id, rc, n);
			return bad + 1;
		}
		for (i = 0; i < n; i++, id++) {
			const struct sl_disklog_msg *m = &rmsgs[i];

			if (m->id != id || m->offset != M[id].off || m->timestamp_ns != M[id].ts ||
			    m->trace_id != (id ^ 0x5555) || m->len != M[id].len ||
			    !same(m->data, m->len, id)) {
				if (bad++ < 5)
					printf("  mismatch at id %" PRIu64 "\n", id);
			}
		}
	}
	return bad;
}

/* ---- files ---- */

static char tmpdir[64];

static int
rm_cb(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static void
rm_rf(const char *path)
{
	nftw(path, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

static void
sub(char *buf, const char *name)
{
	snprintf(buf, DLEN, "%s/%s", tmpdir, name);
}

static void
copy_dir(const char *from, const char *to)
{
	char a[PATH_MAX], b[PATH_MAX];
	struct dirent *d;
	DIR *dir;

	rm_rf(to);
	mkdir(to, 0755);
	dir = opendir(from);
	while ((d = readdir(dir)) != NULL) {
		ssize_t r;
		int in, out;

		if (d->d_name[0] == '.')
			continue;
		snprintf(a, sizeof(a), "%s/%s", from, d->d_name);
		snprintf(b, sizeof(b), "%s/%s", to, d->d_name);
		in = open(a, O_RDONLY);
		out = open(b, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		while ((r = read(in, rbuf, sizeof(rbuf))) > 0)
			if (write(out, rbuf, (size_t)r) != r)
				break;
		close(in);
		close(out);
	}
	closedir(dir);
}

static void
seg_file(char *buf, const char *dir, uint64_t base, const char *ext)
{
	snprintf(buf, PATH_MAX, "%s/%020" PRIu64 ".%s", dir, base, ext);
}

static off_t
fsize(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 ? st.st_size : -1;
}

static void
poke(const char *path, off_t off, uint8_t x)
{
	int fd = open(path, O_RDWR);
	uint8_t b = 0;

	if (pread(fd, &b, 1, off) != 1)
		b = 0;
	b ^= x;
	if (pwrite(fd, &b, 1, off) != 1)
		printf("  poke failed\n");
	close(fd);
}

static struct sl_disklog *
opn(const char *dir, uint64_t seg_bytes, const struct sl_sio_ops *ops,
    struct sl_disklog_recovery *rep)
{
	struct sl_disklog_conf c = {
		.dir = dir, .partition = 3, .segment_bytes = seg_bytes, .ops = ops,
	};

	return sl_disklog_open(&c, rep);
}

static struct sl_disklog_stats
stats(struct sl_disklog *dl)
{
	struct sl_disklog_stats st;

	sl_disklog_get_stats(dl, &st);
	return st;
}

static const uint32_t mix[] = {1, 3, 1, 2, 5, 1, 1, 4};

/* ---- tests ---- */

/*
 * The appender's segment rolls allocate nothing (the table has room at open): on the
 * persistence lcore a first malloc maps the thread's arena, and that mmap() waited 64 ms
 * for the memory map lock behind a growing log's population (2026-11-29).
 */
static void
test_roll_no_alloc(void)
{
	char dir[DLEN];
	struct sl_disklog_recovery rep;
	struct sl_disklog_stats st;
	struct sl_disklog *dl;
	unsigned long n;
	int rc = 0;

	sub(dir, "roll-alloc");
	model_reset();
	dl = opn(dir, 8192, NULL, &rep);
	CHECK(dl != NULL, "open a new log with 8 KiB segments");
	if (dl == NULL)
		return;
	__atomic_store_n(&allocs, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&alloc_counting, 1, __ATOMIC_RELAXED);
	while (rc == 0 && stats(dl).segments < 40) {
		rc = app1(dl, 4, 2);
		if (rc == 0)
			rc = sl_disklog_sync(dl);
	}
	__atomic_store_n(&alloc_counting, 0, __ATOMIC_RELAXED);
	n = ALD(allocs);
	st = stats(dl);
	CHECK(rc == 0 && st.segments >= 40 && n == 0,
	      "39 segment rolls with their syncs allocate nothing (%lu allocations, %u segments)",
	      n, st.segments);
	/* past the room left at open the table still grows */
	while (rc == 0 && stats(dl).segments < 80) {
		rc = app1(dl, 4, 2);
		if (rc == 0)
			rc = sl_disklog_sync(dl);
	}
	CHECK(rc == 0 && stats(dl).segments >= 80 && verify(dl, 1, m_end_id) == 0,
	      "and 80 segments: the table grew, every message reads back");
	sl_disklog_close(dl);
}

static void
test_roundtrip(void)
{
	struct sl_disklog_recovery rep;
	struct sl_disklog_stats st, st2;
	struct sl_disklog *dl;
	char dir[DLEN];
	uint64_t id, v;
	uint32_t i, n;
	int rc, bad;

	sub(dir, "rt/p3");	/* created with parents */
	model_reset();
	dl = opn(dir, 4096, NULL, &rep);
	CHECK(dl != NULL, "open a new log");
	if (dl == NULL)
		return;
	CHECK(strcmp(rep.what, "clean") == 0 && rep.end_id == 0 && rep.first_id == 1 &&
	      rep.segments == 0, "new log: clean, empty (%s)", rep.what);
	CHECK(sl_disklog_find(dl, SL_DISKLOG_BY_ID, 1, &id) == 0 && id == 1,
	      "find in an empty log: end + 1");
	rc = sl_disklog_read(dl, 1, UINT64_MAX, rbuf, sizeof(rbuf), rmsgs, 16, &n, &v);
	CHECK(rc == 0 && n == 0, "read an empty log: nothing");
	for (i = 0, rc = 0; i < 40 && rc == 0; i++)
		rc = app(dl, 1 + i % 9, mix, 8);
	CHECK(rc == 0, "40 writes of PUB and MPUB records (%d)", rc);
	st = stats(dl);
	CHECK(st.segments >= 4 && st.end_id == m_end_id && st.end_offset == m_end_off &&
	      st.first_id == 1, "%u segments, end id %" PRIu64 " offset %" PRIu64, st.segments,
	      st.end_id, st.end_offset);
	CHECK(st.synced_id == 0, "nothing synced yet");
	CHECK(sl_disklog_sync(dl) == 0 && stats(dl).synced_id == m_end_id, "sync: synced_id");
	bad = verify(dl, 1, m_end_id);
	CHECK(bad == 0, "read back every message (%d bad)", bad);
	bad = verify(dl, 17, 33);
	CHECK(bad == 0, "read a middle range");
	rc = sl_disklog_read(dl, 5, 5, rbuf, sizeof(rbuf), rmsgs, 16, &n, &v);
	CHECK(rc == 0 && n == 1 && rmsgs[0].id == 5, "read stops at max_id");
	rc = sl_disklog_read(dl, 5, UINT64_MAX, rbuf, sizeof(rbuf), rmsgs, 3, &n, &v);
	CHECK(rc == 0 && n == 3 && rmsgs[2].id == 7, "read stops at max_msgs");
	rc = sl_disklog_read(dl, 5, UINT64_MAX, rbuf, RS(M[5].len) + RS(M[6].len) + 8, rmsgs,
			     100, &n, &v);
	CHECK(rc == 0 && n == 2, "read stops when the buffer is full (%u)", n);
	rc = sl_disklog_read(dl, 2, UINT64_MAX, rbuf, 16, rmsgs, 100, &n, &v);
	CHECK(rc == -ENOBUFS && n == 0, "a buffer too small for one record: -ENOBUFS");
	rc = sl_disklog_read(dl, m_end_id + 1, UINT64_MAX, rbuf, sizeof(rbuf), rmsgs, 100, &n,
			     &v);
	CHECK(rc == 0 && n == 0, "read at the end: nothing");
	rc = sl_disklog_read(dl, 0, UINT64_MAX, rbuf, sizeof(rbuf), rmsgs, 100, &n, &v);
	CHECK(rc == -ENOENT && v == 1, "read below the start: -ENOENT, first_avail 1");

	/* Batching: a write within one segment is one pwrite for messages, one for records. */
	st = stats(dl);
	sl_disklog_close(dl);
	dl = opn(dir, 1 << 20, NULL, &rep);
	CHECK(dl != NULL && strcmp(rep.what, "clean") == 0 && rep.end_id == m_end_id &&
	      rep.end_offset == m_end_off && rep.checkpoint_valid == 0 &&
	      rep.segments == st.segments && rep.scanned_records > 0,
	      "reopen: clean, same end, %u segments, %" PRIu64 " records scanned", rep.segments,
	      rep.scanned_records);
	if (dl == NULL)
		return;
	st = stats(dl);
	rc = app1(dl, 20, 3);
	st2 = stats(dl);
	CHECK(rc == 0 && st2.writes - st.writes == 2,
	      "20 MPUB records in one call: %" PRIu64 " pwrites", st2.writes - st.writes);
	CHECK(verify(dl, 1, m_end_id) == 0, "read back after reopen and append");

	/* find */
	bad = 0;
	for (id = 1; id <= m_end_id; id++) {
		uint64_t got = 0;

		if (sl_disklog_find(dl, SL_DISKLOG_BY_ID, id, &got) != 0 || got != id)
			bad++;
		if (sl_disklog_find(dl, SL_DISKLOG_BY_COUNT, id - 1, &got) != 0 || got != id)
			bad++;
		if (sl_disklog_find(dl, SL_DISKLOG_BY_OFFSET, M[id].off, &got) != 0 || got != id)
			bad++;
		if (sl_disklog_find(dl, SL_DISKLOG_BY_TIME, M[id].ts, &got) != 0 || got != id)
			bad++;
		if (id > 1 && (sl_disklog_find(dl, SL_DISKLOG_BY_TIME, M[id].ts - 1, &got) != 0 ||
			       got != id))
			bad++;
		if (M[id].len >= 8 &&
		    sl_disklog_find(dl, SL_DISKLOG_BY_OFFSET, M[id].off + 8, &got) != -EINVAL)
			bad++;
	}
	CHECK(bad == 0, "find every id by id, count, offset, time (and -EINVAL inside a record): "
	      "%d bad", bad);
	CHECK(sl_disklog_find(dl, SL_DISKLOG_BY_ID, m_end_id + 5, &id) == 0 && id == m_end_id + 1,
	      "by id past the end: end + 1");
	CHECK(sl_disklog_find(dl, SL_DISKLOG_BY_COUNT, m_end_id, &id) == 0 && id == m_end_id + 1,
	      "by count = all: end + 1");
	CHECK(sl_disklog_find(dl, SL_DISKLOG_BY_OFFSET, m_end_off, &id) == 0 &&
	      id == m_end_id + 1, "by offset at the end: end + 1");
	CHECK(sl_disklog_find(dl, SL_DISKLOG_BY_OFFSET, m_end_off + 4096, &id) == 0 &&
	      id == m_end_id + 1, "by offset past the end: end + 1");
	CHECK(sl_disklog_find(dl, SL_DISKLOG_BY_TIME, M[m_end_id].ts + 1, &id) == 0 &&
	      id == m_end_id + 1, "by time past the end: end + 1");
	CHECK(sl_disklog_find(dl, SL_DISKLOG_BY_ID, 0, &id) == -ENOENT && id == 1,
	      "by id 0: -ENOENT, first id");
	CHECK(sl_disklog_find(dl, SL_DISKLOG_BY_TIME, M[1].ts, &id) == 0 && id == 1,
	      "by time of the first message: 1");
	CHECK(sl_disklog_find(dl, SL_DISKLOG_BY_TIME, M[1].ts - 1, &id) == -ENOENT && id == 1,
	      "by time below the first message: -ENOENT, first id");
	CHECK(sl_disklog_find(dl, SL_DISKLOG_BY_TIME, 0, &id) == -ENOENT && id == 1,
	      "by time 0: -ENOENT, first id");

	/* Whole records with their encoded messages (replication catch-up), from every id:
	 * the record holding it comes first, its bytes are the messages as written. */
	bad = 0;
	for (id = 1; id <= m_end_id; id++) {
		static uint8_t rb[1 << 16];
		struct sl_crec rc[8];
		uint32_t n = 0, k, pos = 0;

		if (sl_disklog_read_recs(dl, id, UINT64_MAX, rb, sizeof(rb), rc, 8, &n) != 0 ||
		    n == 0 || rc[0].log_id > id || rc[0].last_msg_log_id < id) {
			bad++;
			continue;
		}
		for (k = 0; k < n; k++) {
			uint64_t first;

			memcpy(&first, rb + pos + 8, 8);
			if (first != rc[k].log_id || (k > 0 && rc[k].log_id !=
							       rc[k - 1].last_msg_log_id + 1))
				bad++;
			pos += rc[k].msg_size;
		}
	}
	CHECK(bad == 0, "read whole records from every id, with their messages: %d bad", bad);
	{
		struct sl_crec rc[1];
		uint32_t n;
		static uint8_t rb[64];

		CHECK(sl_disklog_read_recs(dl, m_end_id + 1, UINT64_MAX, rb, sizeof(rb), rc, 1,
					   &n) == -ENOENT, "records past the end: -ENOENT");
	}

	/* Write checks: -EINVAL, not sticky. */
	crecs[0].log_id = m_end_id + 2;
	CHECK(sl_disklog_write(dl, wbuf, crecs, 1) == -EINVAL && sl_disklog_error(dl) == 0,
	      "a record with a gap in ids: -EINVAL, not sticky");
	CHECK(app1(dl, 1, 1) == 0, "and the log still appends");
	sl_disklog_close(dl);
}

/* Build a log whose last record is an MPUB of 3; gives the id before it and its size. */
static void
mk_tail_log(const char *dir, uint64_t *prev_end, uint64_t *msg_bytes)
{
	struct sl_disklog_recovery rep;
	struct sl_disklog *dl;
	uint32_t i;

	rm_rf(dir);
	model_reset();
	dl = opn(dir, 4096, NULL, &rep);
	for (i = 0; i < 12; i++)
		app(dl, 1 + i % 5, mix, 8);
	*prev_end = m_end_id;
	app1(dl, 1, 3);
	*msg_bytes = m_end_off - M[*prev_end + 1].off;
	sl_disklog_sync(dl);
	sl_disklog_close(dl);
}

/* The base offset of the last segment file in dir. */
static uint64_t
last_base(const char *dir)
{
	uint64_t best = 0;
	struct dirent *d;
	DIR *dd = opendir(dir);

	while ((d = readdir(dd)) != NULL) {
		if (strstr(d->d_name, ".clog") != NULL) {
			uint64_t b = strtoull(d->d_name, NULL, 10);

			if (b > best)
				best = b;
		}
	}
	closedir(dd);
	return best;
}

static void
test_torn_tail(void)
{
	char gold[DLEN], dir[DLEN], mf[PATH_MAX], cf[PATH_MAX];
	struct sl_disklog_recovery rep;
	uint64_t prev, mbytes, base, L, full_end_id, full_end_off;
	struct sl_disklog *dl;
	off_t msz, csz;
	unsigned int fails = n_fail;
	int bad = 0, rc;

	sub(gold, "torn-gold");
	sub(dir, "torn");
	mk_tail_log(gold, &prev, &mbytes);
	full_end_id = m_end_id;
	full_end_off = m_end_off;
	base = last_base(gold);
	seg_file(mf, gold, base, "msg");
	seg_file(cf, gold, base, "clog");
	msz = fsize(mf);
	csz = fsize(cf);
	CHECK(mbytes > 64 && msz >= (off_t)(64 + mbytes) && csz >= 128,
	      "tail log: last record %" PRIu64 " message bytes, ids %" PRIu64 "..%" PRIu64,
	      mbytes, prev + 1, full_end_id);

	/* Cut the message log at every length of the last record's messages. */
	for (L = 0; L < mbytes; L++) {
		copy_dir(gold, dir);
		seg_file(mf, dir, base, "msg");
		if (truncate(mf, msz - (off_t)mbytes + (off_t)L) != 0)
			bad++;
		model_cut(full_end_id);
		dl = opn(dir, 4096, NULL, &rep);
		if (dl == NULL) {
			bad++;
			continue;
		}
		model_cut(prev);
		QCHECK(rep.end_id == prev && rep.end_offset == m_end_off &&
		       rep.truncated_msg_bytes == L && rep.truncated_commit_bytes == CR &&
		       strncmp(rep.what, "torn tail", 9) == 0,
		       "msg cut at %" PRIu64 ": end %" PRIu64 " cut %" PRIu64 "/%" PRIu64 " (%s)",
		       L, rep.end_id, rep.truncated_msg_bytes, rep.truncated_commit_bytes,
		       rep.what);
		rc = app1(dl, 1, 2);
		QCHECK(rc == 0 && stats(dl).end_id == prev + 2 && verify(dl, 1, m_end_id) == 0,
		       "msg cut at %" PRIu64 ": the next append continues at id %" PRIu64, L,
		       prev + 1);
		sl_disklog_close(dl);
		dl = opn(dir, 4096, NULL, &rep);
		QCHECK(dl != NULL && strcmp(rep.what, "clean") == 0 && rep.end_id == m_end_id,
		       "msg cut at %" PRIu64 ": reopen clean", L);
		sl_disklog_close(dl);
	}
	CHECK(bad == 0 && n_fail == fails, "message log cut at each of %" PRIu64 " lengths: "
	      "recovered to id %" PRIu64 " and continued", mbytes, prev);

	/* Cut the commit log at every length of the last commit record: its messages are
	 * whole, so the record is rebuilt from them (the commit log is synced lazily). */
	for (L = 0; L < CR; L++) {
		copy_dir(gold, dir);
		seg_file(cf, dir, base, "clog");
		if (truncate(cf, csz - CR + (off_t)L) != 0)
			bad++;
		dl = opn(dir, 4096, NULL, &rep);
		if (dl == NULL) {
			bad++;
			continue;
		}
		model_cut(full_end_id);
		QCHECK(rep.end_id == full_end_id && rep.end_offset == full_end_off &&
		       rep.truncated_msg_bytes == 0 && rep.truncated_commit_bytes == L &&
		       rep.rebuilt_commit_records == 1 && fsize(cf) == csz &&
		       strncmp(rep.what, "rebuilt 1 commit records", 24) == 0,
		       "clog cut at %" PRIu64 ": end %" PRIu64 " cut %" PRIu64 "/%" PRIu64
		       " rebuilt %" PRIu64 " (%s)", L, rep.end_id, rep.truncated_msg_bytes,
		       rep.truncated_commit_bytes, rep.rebuilt_commit_records, rep.what);
		rc = app1(dl, 2, 1);
		QCHECK(rc == 0 && verify(dl, 1, m_end_id) == 0 &&
		       stats(dl).end_offset == m_end_off,
		       "clog cut at %" PRIu64 ": the next append continues", L);
		sl_disklog_close(dl);
	}
	CHECK(bad == 0 && n_fail == fails,
	      "commit log cut at each of its lengths: the last record rebuilt, appends continue");

	/* Garbage in the last record: its message data, a message header, the commit record. */
	{
		/* a bad commit record over whole messages is rebuilt from them */
		static const struct {
			int clog;
			uint64_t at;
			const char *what;
		} g[] = {
			{0, 40, "message data"}, {0, 0, "message magic"}, {0, 9, "message id"},
			{0, 4, "message crc"}, {1, 0, "commit record id"}, {1, 48, "msg_size"},
			{1, CR - 2, "commit record crc"}, {0, UINT64_MAX, "last message's id"},
			{0, 3, "first message's marker"},
		};
		uint32_t i;

		for (i = 0; i < sizeof(g) / sizeof(g[0]); i++) {
			uint64_t at;

			copy_dir(gold, dir);
			seg_file(mf, dir, base, "msg");
			seg_file(cf, dir, base, "clog");
			if (g[i].clog)
				poke(cf, csz - CR + (off_t)g[i].at, 0x21);
			else {
				at = g[i].at;
				if (g[i].at == UINT64_MAX)
					at = M[full_end_id].off - M[prev + 1].off + 8;
				poke(mf, msz - (off_t)mbytes + (off_t)at, 0x40);
			}
			dl = opn(dir, 4096, NULL, &rep);
			if (g[i].clog) {
				model_cut(full_end_id);
				CHECK(dl != NULL && rep.end_id == full_end_id &&
				      rep.end_offset == full_end_off &&
				      rep.truncated_commit_bytes == CR &&
				      rep.truncated_msg_bytes == 0 &&
				      rep.rebuilt_commit_records == 1,
				      "garbage in the %s: rebuilt from the messages (%s)",
				      g[i].what, rep.what);
			} else {
				model_cut(prev);
				CHECK(dl != NULL && rep.end_id == prev &&
				      rep.end_offset == m_end_off &&
				      rep.truncated_commit_bytes == CR &&
				      rep.truncated_msg_bytes == mbytes &&
				      rep.rebuilt_commit_records == 0,
				      "garbage in the %s: cut (%s)", g[i].what, rep.what);
			}
			if (dl != NULL)
				CHECK(app1(dl, 1, 1) == 0 && verify(dl, 1, m_end_id) == 0,
				      "  and appends continue");
			sl_disklog_close(dl);
		}
	}
	/* Orphan message bytes after the last record (written, commit record lost). */
	copy_dir(gold, dir);
	seg_file(mf, dir, base, "msg");
	{
		int fd = open(mf, O_WRONLY | O_APPEND);

		memset(rbuf, 0xA5, 100);
		if (write(fd, rbuf, 100) != 100)
			bad++;
		close(fd);
	}
	dl = opn(dir, 4096, NULL, &rep);
	model_cut(full_end_id);
	CHECK(dl != NULL && rep.end_id == full_end_id && rep.end_offset == full_end_off &&
	      rep.truncated_msg_bytes == 100 && rep.truncated_commit_bytes == 0,
	      "orphan message bytes cut (%s)", rep.what);
	sl_disklog_close(dl);
	/* A torn header of a new tail segment is removed; a foreign file fails with EBADMSG. */
	copy_dir(gold, dir);
	{
		char p[PATH_MAX];
		int fd;

		seg_file(p, dir, full_end_off, "msg");
		fd = open(p, O_WRONLY | O_CREAT, 0644);
		close(fd);
		seg_file(p, dir, full_end_off, "clog");
		fd = open(p, O_WRONLY | O_CREAT, 0644);
		memset(rbuf, 0, 64);
		if (write(fd, rbuf, 30) != 30)
			bad++;
		close(fd);
		dl = opn(dir, 4096, NULL, &rep);
		CHECK(dl != NULL && rep.end_id == full_end_id && rep.removed_segments == 1 &&
		      fsize(p) < 0, "a tail segment with a torn header is removed (%s)", rep.what);
		sl_disklog_close(dl);
		seg_file(p, dir, 0, "msg");
		memcpy(rbuf, "NOTOURS!", 8);
		fd = open(p, O_WRONLY);
		if (pwrite(fd, rbuf, 8, 0) != 8)
			bad++;
		close(fd);
		errno = 0;
		dl = opn(dir, 4096, NULL, &rep);
		CHECK(dl == NULL && errno == EBADMSG, "a segment header that is not ours: EBADMSG");
		sl_disklog_close(dl);
	}
	model_cut(full_end_id);
}

static void
fault_reset(void)
{
	memset(&F, 0, sizeof(F));
}

/* Read a whole file (at most cap bytes). Returns its size or -1. */
static ssize_t
slurp(const char *path, uint8_t *buf, size_t cap)
{
	int fd = open(path, O_RDONLY);
	ssize_t r;

	if (fd < 0)
		return -1;
	r = read(fd, buf, cap);
	close(fd);
	return r;
}

/* The base offsets of the segments in dir, oldest first. Returns how many (<= max). */
static uint32_t
bases(const char *dir, uint64_t *b, uint32_t max)
{
	struct dirent *d;
	DIR *dd = opendir(dir);
	uint32_t n = 0, i, j;

	while (dd != NULL && (d = readdir(dd)) != NULL)
		if (strstr(d->d_name, ".clog") != NULL && n < max)
			b[n++] = strtoull(d->d_name, NULL, 10);
	if (dd != NULL)
		closedir(dd);
	for (i = 1; i < n; i++)
		for (j = i; j > 0 && b[j - 1] > b[j]; j--) {
			uint64_t t = b[j];

			b[j] = b[j - 1];
			b[j - 1] = t;
		}
	return n;
}

/* Every id of [from, to] found by offset and by time. Returns the misses. */
static int
find_all(struct sl_disklog *dl, uint64_t from, uint64_t to)
{
	uint64_t id, got;
	int bad = 0;

	for (id = from; id <= to; id++) {
		if (sl_disklog_find(dl, SL_DISKLOG_BY_OFFSET, M[id].off, &got) != 0 || got != id)
			bad++;
		if (sl_disklog_find(dl, SL_DISKLOG_BY_TIME, M[id].ts, &got) != 0 || got != id)
			bad++;
	}
	return bad;
}

/* sl_disklog_sync fdatasyncs the message log only; the checkpoint syncs the commit log. */
static void
test_lazy_clog(void)
{
	char dir[DLEN];
	struct sl_disklog_recovery rep;
	struct sl_crec c;
	struct sl_disklog *dl;
	uint32_t sz;
	int rc;

	sub(dir, "lazy");
	model_reset();
	fault_reset();
	dl = opn(dir, 1 << 20, &fops, &rep);
	if (dl == NULL) {
		CHECK(0, "lazy: open");
		return;
	}
	app1(dl, 10, 2);
	CHECK(sl_disklog_sync(dl) == 0, "first sync of a new segment");
	app1(dl, 10, 2);
	F.fdatasyncs = 0;
	CHECK(sl_disklog_sync(dl) == 0 && F.fdatasyncs == 1 &&
	      stats(dl).synced_id == m_end_id,
	      "group commit: one fdatasync (the .msg), synced_id %" PRIu64 " (%u)",
	      stats(dl).synced_id, F.fdatasyncs);
	CHECK(sl_disklog_checkpoint(dl) == 0 && F.fdatasyncs == 2,
	      "the checkpoint fdatasyncs the .clog first (%u)", F.fdatasyncs);
	CHECK(sl_disklog_checkpoint(dl) == 0 && F.fdatasyncs == 2,
	      "nothing new: no fdatasync (%u)", F.fdatasyncs);
	app1(dl, 1, 1);
	rc = sl_disklog_sync(dl);
	F.sync_fail = 1;
	CHECK(rc == 0 && sl_disklog_checkpoint(dl) == -EIO &&
	      sl_disklog_error(dl) == -EIO, "a failed .clog fdatasync at the checkpoint: sticky");
	CHECK(sl_disklog_resume(dl) == 0 && stats(dl).end_id == m_end_id,
	      "resume keeps the synced end %" PRIu64, m_end_id);

	/* the write checks the markers */
	memset(&c, 0, sizeof(c));
	c.log_id = m_end_id + 1;
	c.last_msg_log_id = c.log_id;
	c.msg_cnt = c.log_id;
	c.msg_offset = m_end_off;
	c.msg_num = 1;
	sz = sl_disklog_encode_msg(wbuf, c.log_id, T0, 0, "x", 1, 0);
	c.msg_size = sz;
	CHECK(sl_disklog_write(dl, wbuf, &c, 1) == -EINVAL && sl_disklog_error(dl) == 0,
	      "a PUB marked 0xA4: -EINVAL");
	c.last_msg_log_id = c.log_id + 1;
	c.msg_cnt = c.last_msg_log_id;
	c.msg_num = 2;
	sz = sl_disklog_encode_msg(wbuf, c.log_id, T0, 0, "x", 1, 1);
	sz += sl_disklog_encode_msg(wbuf + sz, c.log_id + 1, T0, 0, "y", 1, 1);
	c.msg_size = sz;
	CHECK(sl_disklog_write(dl, wbuf, &c, 1) == -EINVAL, "an MPUB with 0xA5 inside: -EINVAL");
	CHECK(app1(dl, 2, 3) == 0 && verify(dl, 1, m_end_id) == 0, "and the log appends");
	sl_disklog_close(dl);
}

/*
 * (a) Writes and syncs, no checkpoint: the commit logs lose their tails (never synced),
 * the message logs are whole. Open rebuilds the records, byte for byte (epoch: the
 * previous record's), with their MPUB grouping, in the last segment and in the one
 * before it; appends continue.
 */
static void
test_rebuild(void)
{
	static uint8_t want[2][64 << 10], got[64 << 10];
	char gold[DLEN], dir[DLEN], cf[2][PATH_MAX];
	struct sl_disklog_recovery rep;
	struct sl_disklog *dl;
	uint64_t b[64], end_id, end_off, nlast, nprev;
	ssize_t wl[2], gl;
	uint32_t nb, i, k;
	int rc;

	sub(gold, "rebuild-gold");
	sub(dir, "rebuild");
	model_reset();
	dl = opn(gold, 4096, NULL, &rep);
	if (dl == NULL) {
		CHECK(0, "rebuild: open");
		return;
	}
	for (i = 0, rc = 0; i < 30 && rc == 0; i++)
		rc = app(dl, 1 + i % 6, mix, 8);
	rc |= sl_disklog_sync(dl);
	sl_disklog_close(dl);
	end_id = m_end_id;
	end_off = m_end_off;
	nb = bases(gold, b, 64);
	seg_file(cf[0], gold, b[nb - 2], "clog");
	seg_file(cf[1], gold, b[nb - 1], "clog");
	wl[0] = slurp(cf[0], want[0], sizeof(want[0]));
	wl[1] = slurp(cf[1], want[1], sizeof(want[1]));
	nprev = (uint64_t)(wl[0] - 64) / CR;
	nlast = (uint64_t)(wl[1] - 64) / CR;
	CHECK(rc == 0 && nb >= 3 && nprev >= 2 && nlast >= 3,
	      "rebuild: %u segments, %" PRIu64 " and %" PRIu64 " records in the last two", nb,
	      nprev, nlast);
	if (nb < 3 || nprev < 2 || nlast < 3)
		return;

	for (k = 0; k < 2; k++) {
		uint64_t expect = k == 0 ? nlast - 2 : nlast + nprev - 1;

		copy_dir(gold, dir);
		seg_file(cf[0], dir, b[nb - 2], "clog");
		seg_file(cf[1], dir, b[nb - 1], "clog");
		if (k == 0) {
			/* the last segment's commit log: 2 records and a torn third */
			rc = truncate(cf[1], 64 + 2 * CR + 13);
		} else {
			/* both: the last one's to its header, the previous one's to 1 record */
			rc = truncate(cf[1], 64);
			rc |= truncate(cf[0], 64 + CR);
		}
		model_cut(end_id);
		dl = opn(dir, 4096, NULL, &rep);
		CHECK(rc == 0 && dl != NULL && rep.end_id == end_id && rep.end_offset == end_off &&
		      rep.rebuilt_commit_records == expect && rep.truncated_msg_bytes == 0 &&
		      rep.truncated_commit_bytes == (k == 0 ? 13u : 0u) &&
		      strstr(rep.what, "commit records from the message log") != NULL,
		      "rebuild %u: every synced message kept, %" PRIu64
		      " commit records rebuilt (%s)", k, rep.rebuilt_commit_records, rep.what);
		if (dl == NULL)
			continue;
		gl = slurp(cf[1], got, sizeof(got));
		CHECK(gl == wl[1] && memcmp(got, want[1], (size_t)gl) == 0,
		      "rebuild %u: the last segment's commit log is as written (%zd bytes)", k, gl);
		if (k == 1) {
			gl = slurp(cf[0], got, sizeof(got));
			CHECK(gl == wl[0] && memcmp(got, want[0], (size_t)gl) == 0,
			      "rebuild %u: and the previous segment's (%zd bytes)", k, gl);
		}
		CHECK(verify(dl, 1, end_id) == 0 && find_all(dl, 1, end_id) == 0,
		      "rebuild %u: read back, find every id by offset and time", k);
		rc = app(dl, 9, mix, 8);
		CHECK(rc == 0 && sl_disklog_sync(dl) == 0 && verify(dl, 1, m_end_id) == 0,
		      "rebuild %u: appends continue at %" PRIu64, k, end_id + 1);
		sl_disklog_close(dl);
		dl = opn(dir, 4096, NULL, &rep);
		CHECK(dl != NULL && strcmp(rep.what, "clean") == 0 && rep.end_id == m_end_id &&
		      verify(dl, 1, m_end_id) == 0, "rebuild %u: reopen clean (%s)", k, rep.what);
		sl_disklog_close(dl);
	}
}

/*
 * (b) A torn MPUB after a lost commit log: its first records are intact (0xA4) but its
 * 0xA5 end is missing or corrupt: cut entirely; the whole PUB and MPUB before it are
 * rebuilt (epoch 0: no commit record before them).
 */
static void
test_torn_mpub(void)
{
	static const uint32_t per[] = {1, 1, 3};
	char dir[DLEN], mf[PATH_MAX], cf[PATH_MAX], gold[DLEN];
	struct sl_disklog_recovery rep;
	struct sl_disklog *dl;
	uint64_t cut;
	uint8_t h[128];
	uint32_t k;
	int rc;

	sub(gold, "mpub-gold");
	sub(dir, "mpub");
	model_reset();
	dl = opn(gold, 1 << 20, NULL, &rep);
	if (dl == NULL) {
		CHECK(0, "torn mpub: open");
		return;
	}
	rc = app(dl, 3, per, 3);		/* ids 1, 2, 3..5 */
	rc |= app1(dl, 1, 4);			/* ids 6..9 */
	rc |= sl_disklog_sync(dl);
	sl_disklog_close(dl);
	CHECK(rc == 0 && m_end_id == 9 && len_of(9) > 8, "torn mpub: PUB, PUB, MPUB 3, MPUB 4");
	for (k = 0; k < 2; k++) {
		copy_dir(gold, dir);
		seg_file(mf, dir, 0, "msg");
		seg_file(cf, dir, 0, "clog");
		rc = truncate(cf, 64);
		if (k == 0) {
			/* torn inside the 4th record: 6, 7, 8 intact (0xA4), 9 not there */
			rc |= truncate(mf, (off_t)(64 + M[9].off + 20));
			cut = M[9].off + 20 - M[6].off;
		} else {
			/* the 0xA5 record is there but corrupt */
			poke(mf, (off_t)(64 + M[9].off + 32 + 3), 0x08);
			cut = m_end_off - M[6].off;
		}
		dl = opn(dir, 1 << 20, NULL, &rep);
		model_cut(5);
		CHECK(rc == 0 && dl != NULL && rep.end_id == 5 && rep.end_offset == m_end_off &&
		      rep.rebuilt_commit_records == 3 && rep.truncated_msg_bytes == cut &&
		      rep.truncated_commit_bytes == 0 && fsize(cf) == 64 + 3 * CR &&
		      fsize(mf) == (off_t)(64 + m_end_off),
		      "torn mpub %u: the MPUB cut entirely, 3 records rebuilt (%s)", k, rep.what);
		if (dl == NULL)
			continue;
		CHECK(slurp(cf, h, sizeof(h)) == 128 && h[64] == 1 && h[64 + 8] == 0 &&
		      h[64 + 48] == RS(len_of(1)) && h[64 + 52] == 1,
		      "torn mpub %u: record 0: id 1, epoch 0, 1 message", k);
		CHECK(sl_disklog_truncate(dl, 4) == -EINVAL && find_all(dl, 1, 5) == 0 &&
		      verify(dl, 1, 5) == 0, "torn mpub %u: ids 3..5 one record; read, find", k);
		CHECK(app1(dl, 2, 2) == 0 && sl_disklog_sync(dl) == 0 &&
		      verify(dl, 1, m_end_id) == 0, "torn mpub %u: appends continue at id 6", k);
		sl_disklog_close(dl);
		dl = opn(dir, 1 << 20, NULL, &rep);
		CHECK(dl != NULL && strcmp(rep.what, "clean") == 0 && rep.end_id == m_end_id,
		      "torn mpub %u: reopen clean", k);
		sl_disklog_close(dl);
	}
}

/* A write error: sticky, nothing after the synced point survives, resume continues. */
static void
write_error_case(const char *name, int which, int err)
{
	char dir[DLEN];
	struct sl_disklog_recovery rep;
	struct sl_disklog_stats st;
	struct sl_disklog *dl;
	uint64_t synced, synced_off;
	uint32_t segs;
	int rc, want = err == EIO ? -EIO : -ENOSPC;

	sub(dir, name);
	model_reset();
	fault_reset();
	dl = opn(dir, 4096, &fops, &rep);
	if (dl == NULL) {
		CHECK(0, "%s: open", name);
		return;
	}
	app1(dl, 30, 2);
	CHECK(sl_disklog_sync(dl) == 0, "%s: sync", name);
	synced = m_end_id;
	synced_off = m_end_off;
	segs = stats(dl).segments;
	/* which: 1 = message pwrite, 2 = commit-log pwrite (both short when err == 0) */
	if (err == 0)
		F.short_in = (unsigned int)which;
	else {
		F.fail_in = (unsigned int)which;
		F.fail_errno = err;
	}
	rc = app1(dl, 2, 3);
	CHECK(rc == want && sl_disklog_error(dl) == want, "%s: the write fails with %d (%d)", name,
	      want, rc);
	CHECK(app1(dl, 1, 1) == want && sl_disklog_sync(dl) == want &&
	      sl_disklog_checkpoint(dl) == want && sl_disklog_truncate(dl, 1) == want,
	      "%s: sticky: later writes, sync, checkpoint, truncate return it", name);
	st = stats(dl);
	CHECK(st.synced_id == synced && st.error == want, "%s: synced_id stays %" PRIu64, name,
	      synced);
	sl_disklog_close(dl);
	dl = opn(dir, 4096, NULL, &rep);
	model_cut(synced);
	CHECK(dl != NULL && rep.end_id == synced && rep.end_offset == synced_off,
	      "%s: reopen without resume: ends at the synced id (%s)", name, rep.what);
	sl_disklog_close(dl);

	/* Again, with resume; this time the failing write rolls into a new segment. */
	fault_reset();
	dl = opn(dir, 4096, &fops, &rep);
	app1(dl, 3, 1);
	sl_disklog_sync(dl);
	synced = m_end_id;
	synced_off = m_end_off;
	segs = stats(dl).segments;
	if (err == 0)
		F.short_in = (unsigned int)(which + 4);
	else {
		F.fail_in = (unsigned int)(which + 4);
		F.fail_errno = err;
	}
	rc = app1(dl, 60, 2);	/* > 4 KiB: rolls, then fails */
	CHECK(rc == want, "%s: a write across a roll fails (%d)", name, rc);
	CHECK(sl_disklog_resume(dl) == 0 && sl_disklog_error(dl) == 0, "%s: resume", name);
	model_cut(synced);
	st = stats(dl);
	CHECK(st.end_id == synced && st.end_offset == synced_off && st.synced_id == synced &&
	      st.segments == segs, "%s: after resume end == synced %" PRIu64 ", %u segments",
	      name, synced, st.segments);
	CHECK(app1(dl, 5, 3) == 0 && sl_disklog_sync(dl) == 0 && verify(dl, 1, m_end_id) == 0,
	      "%s: appends continue after resume at id %" PRIu64, name, synced + 1);
	sl_disklog_close(dl);
	dl = opn(dir, 4096, NULL, &rep);
	CHECK(dl != NULL && strcmp(rep.what, "clean") == 0 && rep.end_id == m_end_id &&
	      verify(dl, 1, m_end_id) == 0, "%s: reopen clean at %" PRIu64, name, m_end_id);
	sl_disklog_close(dl);
}

static void
test_errors(void)
{
	char dir[DLEN];
	struct sl_disklog_recovery rep;
	struct sl_disklog *dl;
	uint64_t synced;

	write_error_case("short-msg", 1, 0);
	write_error_case("short-clog", 2, 0);
	write_error_case("eio", 1, EIO);
	write_error_case("enospc", 2, ENOSPC);

	/* A failed fdatasync. */
	sub(dir, "syncfail");
	model_reset();
	fault_reset();
	dl = opn(dir, 4096, &fops, &rep);
	app1(dl, 10, 2);
	sl_disklog_sync(dl);
	synced = m_end_id;
	app1(dl, 10, 2);
	F.sync_fail = 1;
	CHECK(sl_disklog_sync(dl) == -EIO && sl_disklog_error(dl) == -EIO,
	      "fdatasync fails: sync returns -EIO");
	CHECK(stats(dl).synced_id == synced, "synced_id does not advance (%" PRIu64 ")",
	      stats(dl).synced_id);
	CHECK(app1(dl, 1, 1) == -EIO && sl_disklog_sync(dl) == -EIO, "sticky");
	F.sync_fail = 1;
	CHECK(sl_disklog_resume(dl) == -EIO && sl_disklog_error(dl) == -EIO,
	      "resume while fdatasync still fails: still poisoned");
	CHECK(sl_disklog_resume(dl) == 0 && stats(dl).end_id == synced,
	      "resume: back at the synced id %" PRIu64, synced);
	model_cut(synced);
	CHECK(app1(dl, 4, 4) == 0 && sl_disklog_sync(dl) == 0 && stats(dl).synced_id == m_end_id &&
	      verify(dl, 1, m_end_id) == 0, "appends and syncs continue");
	sl_disklog_close(dl);
}

/*
 * Preallocation (disklog.h): the active segment's .msg is zero-filled ahead of its end; a
 * crash leaves the zeros, which open cuts without reporting a cut (a non-zero byte among
 * them is a torn tail, as before); closed segments and a closed log end at their last
 * record; a zero write that fails (a full disk) is undone and the log goes on appending.
 */
static void
test_prealloc(void)
{
	struct sl_sio_ops ops = sl_sio_posix;
	struct sl_disklog_conf c = {.partition = 3, .prealloc_bytes = 16384};
	char dir[DLEN], cp[DLEN], mf[PATH_MAX], cf[PATH_MAX];
	struct sl_disklog_recovery rep;
	struct sl_disklog_stats st;
	struct sl_disklog *dl, *dl2;
	uint64_t b[64], end_id, end_off;
	uint32_t nb, i, bad = 0;
	off_t msz;
	int rc;

	sub(dir, "prealloc");
	sub(cp, "prealloc-crash");
	model_reset();
	fault_reset();
	c.dir = dir;
	c.segment_bytes = 1 << 20;
	dl = sl_disklog_open(&c, &rep);
	CHECK(dl != NULL, "open with preallocation");
	if (dl == NULL)
		return;
	for (i = 0, rc = 0; i < 6 && rc == 0; i++) {
		rc = app1(dl, 3, 2);
		if (rc == 0)
			rc = sl_disklog_sync(dl);
	}
	st = stats(dl);
	nb = bases(dir, b, 64);
	seg_file(mf, dir, b[nb - 1], "msg");
	msz = fsize(mf);
	CHECK(rc == 0 && st.zero_bytes > 0 && msz > (off_t)(64 + m_end_off) &&
	      msz >= 16384, "writes and syncs: the .msg is zero-filled past its records "
	      "(%lld bytes for %" PRIu64 ", %" PRIu64 " zeros written)", (long long)msz,
	      64 + m_end_off, st.zero_bytes);

	/* a crash: the zeros stay; open cuts them and reports nothing cut */
	copy_dir(dir, cp);
	dl2 = opn(cp, 1 << 20, NULL, &rep);
	seg_file(mf, cp, b[nb - 1], "msg");
	CHECK(dl2 != NULL && strcmp(rep.what, "clean") == 0 && rep.end_id == m_end_id &&
	      rep.truncated_msg_bytes == 0 && fsize(mf) == (off_t)(64 + m_end_off) &&
	      verify(dl2, 1, m_end_id) == 0,
	      "a crash with the zeros: open cuts them, clean, every message back (%s)", rep.what);
	sl_disklog_close(dl2);

	/* a non-zero byte among them: a torn tail, cut and reported */
	copy_dir(dir, cp);
	seg_file(mf, cp, b[nb - 1], "msg");
	poke(mf, (off_t)(64 + m_end_off + 100), 0x5a);
	dl2 = opn(cp, 1 << 20, NULL, &rep);
	CHECK(dl2 != NULL && rep.end_id == m_end_id && rep.truncated_msg_bytes > 0 &&
	      strcmp(rep.what, "clean") != 0 && fsize(mf) == (off_t)(64 + m_end_off),
	      "a non-zero byte in the zeros: a torn tail, %" PRIu64 " bytes cut (%s)",
	      rep.truncated_msg_bytes, rep.what);
	sl_disklog_close(dl2);

	/* a zero write that fails with ENOSPC: undone, the record is written, no error */
	sl_disklog_close(dl);
	ops.pwrite = f_pwrite;
	c.ops = &ops;
	c.segment_bytes = 1 << 20;
	dl = sl_disklog_open(&c, &rep);
	CHECK(dl != NULL && strcmp(rep.what, "clean") == 0 && rep.end_id == m_end_id,
	      "close cuts the zeros: reopen clean (%s)", rep.what);
	if (dl == NULL)
		return;
	fault_reset();
	F.fail_in = 1;		/* the first pwrite: the zero-fill step */
	F.fail_errno = ENOSPC;
	rc = app1(dl, 2, 1);
	st = stats(dl);
	CHECK(rc == 0 && sl_disklog_sync(dl) == 0 && sl_disklog_error(dl) == 0 &&
	      st.zero_skips == 1 && stats(dl).synced_id == m_end_id &&
	      verify(dl, 1, m_end_id) == 0,
	      "a zero-fill step fails with ENOSPC: undone, the write goes on (skips %" PRIu64
	      ")", st.zero_skips);
	seg_file(mf, dir, b[nb - 1], "msg");
	CHECK(fsize(mf) == (off_t)(64 + m_end_off), "no zeros left after the failed step");
	sl_disklog_close(dl);

	/* small segments: each closed one ends at its last record */
	sub(dir, "prealloc-roll");
	model_reset();
	fault_reset();
	c.dir = dir;
	c.ops = NULL;
	c.segment_bytes = 8192;
	c.prealloc_bytes = 4096;
	dl = sl_disklog_open(&c, &rep);
	for (i = 0, rc = dl == NULL; i < 40 && rc == 0; i++) {
		rc = app1(dl, 2, 3);
		if (rc == 0)
			rc = sl_disklog_sync(dl);
	}
	nb = bases(dir, b, 64);
	for (i = 0; i + 1 < nb; i++) {
		seg_file(mf, dir, b[i], "msg");
		if (fsize(mf) != (off_t)(64 + b[i + 1] - b[i]))
			bad++;
	}
	CHECK(rc == 0 && nb >= 3 && bad == 0 && stats(dl).zero_bytes > 0,
	      "%u segments: every closed one ends at its last record (%u do not)", nb, bad);
	end_id = m_end_id;
	end_off = m_end_off;
	copy_dir(dir, cp);
	sl_disklog_close(dl);
	seg_file(mf, dir, b[nb - 1], "msg");
	seg_file(cf, dir, b[nb - 1], "clog");
	CHECK(fsize(mf) == (off_t)(64 + end_off - b[nb - 1]), "close: the active one too");
	dl = opn(cp, 8192, NULL, &rep);
	CHECK(dl != NULL && strcmp(rep.what, "clean") == 0 && rep.end_id == end_id &&
	      verify(dl, 1, end_id) == 0, "a crash copy of it opens clean (%s)", rep.what);
	sl_disklog_close(dl);
}

static void
test_retention(void)
{
	char dir[DLEN];
	struct sl_disklog_retention pol;
	struct sl_disklog_retain_res res;
	struct sl_disklog_recovery rep;
	struct sl_disklog_stats st, st2;
	struct sl_disklog *dl;
	uint64_t id, v;
	uint32_t n;
	int rc;

	sub(dir, "ret");
	model_reset();
	dl = opn(dir, 4096, NULL, &rep);
	app1(dl, 200, 2);
	sl_disklog_sync(dl);
	st = stats(dl);
	CHECK(st.segments > 10, "%u segments, %" PRIu64 " bytes", st.segments, st.bytes);

	/* held back by a channel position */
	memset(&pol, 0, sizeof(pol));
	pol.max_bytes = st.bytes / 2;
	pol.keep_from_id = 50;
	pol.now_ns = T0;
	rc = sl_disklog_retain(dl, &pol, &res);
	st2 = stats(dl);
	CHECK(rc == 0 && res.removed_segments > 0 && st2.first_id <= 50 && st2.first_id > 1 &&
	      res.held_bytes > 0 && res.held_from_id == 50 &&
	      st2.bytes + res.held_bytes > pol.max_bytes,
	      "size retention held at id 50: removed %u segments, first id %" PRIu64
	      ", held %" PRIu64 " bytes", res.removed_segments, st2.first_id, res.held_bytes);
	CHECK(st.bytes - st2.bytes == res.removed_bytes, "removed_bytes %" PRIu64,
	      res.removed_bytes);
	rc = sl_disklog_read(dl, 1, UINT64_MAX, rbuf, sizeof(rbuf), rmsgs, 10, &n, &v);
	CHECK(rc == -ENOENT && v == st2.first_id, "read below the first id: -ENOENT, first %"
	      PRIu64, v);
	CHECK(sl_disklog_find(dl, SL_DISKLOG_BY_OFFSET, 0, &id) == -ENOENT && id == st2.first_id,
	      "find by offset below the start: -ENOENT");
	CHECK(sl_disklog_find(dl, SL_DISKLOG_BY_ID, 1, &id) == -ENOENT && id == st2.first_id,
	      "find by id below the start: -ENOENT");
	CHECK(sl_disklog_find(dl, SL_DISKLOG_BY_TIME, M[1].ts, &id) == -ENOENT &&
	      id == st2.first_id, "find by time below the start: -ENOENT");
	CHECK(sl_disklog_find(dl, SL_DISKLOG_BY_OFFSET, M[st2.first_id].off, &id) == 0 &&
	      id == st2.first_id, "find by offset of the first retained message");
	CHECK(verify(dl, st2.first_id, m_end_id) == 0, "the rest reads back");

	/* by size, not held */
	pol.keep_from_id = 0;
	rc = sl_disklog_retain(dl, &pol, &res);
	st = stats(dl);
	CHECK(rc == 0 && res.removed_segments > 0 && res.held_bytes == 0 &&
	      st.bytes <= pol.max_bytes && st.first_id > 50,
	      "size retention: %" PRIu64 " bytes left (max %" PRIu64 "), first id %" PRIu64,
	      st.bytes, pol.max_bytes, st.first_id);

	/* by age */
	memset(&pol, 0, sizeof(pol));
	pol.max_age_ns = 1000000;
	pol.now_ns = M[300].ts + pol.max_age_ns;	/* drop segments whose newest < id 300 */
	rc = sl_disklog_retain(dl, &pol, &res);
	st = stats(dl);
	CHECK(rc == 0 && res.removed_segments > 0 && st.first_id <= 300 &&
	      M[st.first_id - 1].ts < M[300].ts, "age retention: first id %" PRIu64, st.first_id);
	{
		uint64_t e = 0;

		/* the first segment's newest message is not older than the cutoff */
		sl_disklog_find(dl, SL_DISKLOG_BY_TIME, M[300].ts, &e);
		CHECK(e == 300, "and id 300 is still there");
	}
	/* never the active segment */
	memset(&pol, 0, sizeof(pol));
	pol.max_bytes = 1;
	rc = sl_disklog_retain(dl, &pol, &res);
	st = stats(dl);
	CHECK(rc == 0 && st.segments == 1 && st.end_id == m_end_id, "max_bytes 1: only the active "
	      "segment stays (first id %" PRIu64 ")", st.first_id);
	sl_disklog_close(dl);
	dl = opn(dir, 4096, NULL, &rep);
	CHECK(dl != NULL && strcmp(rep.what, "clean") == 0 && rep.first_id == st.first_id &&
	      rep.end_id == m_end_id && verify(dl, st.first_id, m_end_id) == 0,
	      "reopen after retention: clean, first id %" PRIu64, rep.first_id);
	/* an interrupted removal: a lone .msg of the oldest segment */
	sl_disklog_close(dl);
	{
		char p[PATH_MAX];
		int fd;

		seg_file(p, dir, 0, "msg");
		fd = open(p, O_WRONLY | O_CREAT, 0644);
		if (write(fd, "x", 1) != 1)
			printf("  write failed\n");
		close(fd);
		dl = opn(dir, 4096, NULL, &rep);
		CHECK(dl != NULL && rep.end_id == m_end_id && fsize(p) < 0,
		      "a lone .msg of an oldest segment is removed (%s)", rep.what);
		sl_disklog_close(dl);
	}
}

static void
test_channels(void)
{
	char dir[DLEN], p[PATH_MAX];
	struct sl_disklog_chan c[3], l[4];
	struct sl_disklog_recovery rep;
	struct sl_disklog *dl;
	int rc;

	sub(dir, "chan");
	dl = opn(dir, 0, NULL, &rep);
	CHECK(sl_disklog_chan_load(dl, l, 4) == 0, "no channels saved: 0");
	memset(c, 0, sizeof(c));
	strcpy(c[0].name, "orders");
	c[0].flags = 1;
	c[0].confirmed_id = 12345;
	memset(c[1].name, 'x', SL_DISKLOG_CHAN_NAME_MAX);
	c[1].confirmed_id = 7;
	strcpy(c[2].name, "audit");
	c[2].confirmed_id = UINT64_MAX - 1;
	CHECK(sl_disklog_chan_save(dl, c, 3) == 0, "save 3 channels");
	rc = sl_disklog_chan_load(dl, l, 4);
	CHECK(rc == 3 && memcmp(c, l, sizeof(c)) == 0, "load them back (%d)", rc);
	rc = sl_disklog_chan_load(dl, l, 2);
	CHECK(rc == 2, "load at most max");
	sl_disklog_close(dl);
	snprintf(p, sizeof(p), "%s/channels", dir);
	CHECK(fsize(p) == 64 + 3 * 96, "channels file: header and 3 entries of 96 bytes");
	poke(p, 64 + 96 + 80, 1);
	dl = opn(dir, 0, NULL, &rep);
	CHECK(sl_disklog_chan_load(dl, l, 4) == -EBADMSG, "a flipped bit in an entry: -EBADMSG");
	poke(p, 64 + 96 + 80, 1);
	CHECK(sl_disklog_chan_load(dl, l, 4) == 3, "restored: loads");
	poke(p, 44, 1);
	CHECK(sl_disklog_chan_load(dl, l, 4) == -EBADMSG, "a flipped bit in the header: -EBADMSG");
	CHECK(sl_disklog_chan_save(dl, c, 1) == 0 && sl_disklog_chan_load(dl, l, 4) == 1 &&
	      strcmp(l[0].name, "orders") == 0, "save replaces the file");
	strcpy(c[0].name, "");
	memset(c[0].name, 'y', sizeof(c[0].name));
	CHECK(sl_disklog_chan_save(dl, c, 1) == -EINVAL, "a name over 64 bytes: -EINVAL");
	sl_disklog_close(dl);
}

static void
test_checkpoint(void)
{
	char dir[DLEN], p[PATH_MAX];
	struct sl_disklog_recovery rep;
	struct sl_disklog *dl;
	uint64_t ck, recs_after;

	sub(dir, "ckpt");
	model_reset();
	dl = opn(dir, 4096, NULL, &rep);
	app1(dl, 100, 2);
	sl_disklog_sync(dl);
	CHECK(sl_disklog_checkpoint(dl) == 0, "checkpoint");
	ck = m_end_id + 1;
	app1(dl, 7, 3);
	recs_after = 7;
	sl_disklog_sync(dl);
	sl_disklog_close(dl);
	snprintf(p, sizeof(p), "%s/checkpoint", dir);
	CHECK(fsize(p) == 128, "checkpoint file: two header slots");
	dl = opn(dir, 4096, NULL, &rep);
	CHECK(dl != NULL && rep.checkpoint_valid && rep.checkpoint_id == ck &&
	      rep.scanned_records == recs_after && strcmp(rep.what, "clean") == 0 &&
	      rep.end_id == m_end_id, "reopen: checkpoint at %" PRIu64 " used, %" PRIu64
	      " records verified after it", rep.checkpoint_id, rep.scanned_records);
	sl_disklog_close(dl);
	/* A corrupt message well before the checkpoint is not scanned at open (the checkpoint
	 * vouches for it) but a read finds it. */
	seg_file(p, dir, 0, "msg");
	poke(p, 64 + M[3].off + 40, 0x10);
	dl = opn(dir, 4096, NULL, &rep);
	{
		uint32_t n;
		uint64_t v;
		int rc = sl_disklog_read(dl, 3, 3, rbuf, sizeof(rbuf), rmsgs, 10, &n, &v);

		CHECK(dl != NULL && strcmp(rep.what, "clean") == 0 && rc == -EBADMSG,
		      "corruption before the checkpoint: open clean, read -EBADMSG (%d)", rc);
	}
	poke(p, 64 + M[3].off + 40, 0x10);
	/* the checkpoint says more is durable than survives: recover, and say so. The last
	 * segment's commit log is gone and its message log cut inside message ck - 1 (the
	 * second of a PUB of 2): the records before are rebuilt, the end is still short. */
	sl_disklog_close(dl);
	{
		uint64_t base = last_base(dir);

		CHECK(M[ck - 2].off >= base, "ids %" PRIu64 "..%" PRIu64 " in the last segment",
		      ck - 2, ck - 1);
		seg_file(p, dir, base, "clog");
		if (truncate(p, 64) != 0)
			printf("  truncate failed\n");
		seg_file(p, dir, base, "msg");
		if (truncate(p, (off_t)(64 + M[ck - 1].off - base + 20)) != 0)
			printf("  truncate failed\n");
	}
	dl = opn(dir, 4096, NULL, &rep);
	CHECK(dl != NULL && rep.end_id == ck - 3 && strstr(rep.what, "DATA LOST") != NULL &&
	      (M[ck - 3].off < last_base(dir) || rep.rebuilt_commit_records > 0),
	      "checkpoint beyond the intact end after the rebuild: recovered to %" PRIu64
	      ", reported (%s)", rep.end_id, rep.what);
	model_cut(rep.end_id);
	CHECK(app1(dl, 2, 2) == 0 && verify(dl, 1, m_end_id) == 0, "and appends continue");
	sl_disklog_close(dl);
}

/* The checkpoint's two slots: later checkpoints overwrite the older slot in place (one
 * fdatasync, no rename); open takes the newer slot that checks, so a torn newest slot
 * leaves the one before; a one-slot file of an earlier build is read, then rewritten. */
static void
test_checkpoint_slots(void)
{
	char dir[DLEN], p[PATH_MAX];
	struct sl_disklog_recovery rep;
	struct sl_disklog *dl;
	uint64_t ck2, ck3;

	sub(dir, "ckslots");
	model_reset();
	fault_reset();
	dl = opn(dir, 1 << 20, &fops, &rep);
	if (dl == NULL) {
		CHECK(0, "ckslots: open");
		return;
	}
	snprintf(p, sizeof(p), "%s/checkpoint", dir);
	app1(dl, 10, 1);
	sl_disklog_sync(dl);
	F.renames = 0;
	CHECK(sl_disklog_checkpoint(dl) == 0 && fsize(p) == 128 && F.renames == 1,
	      "the first checkpoint creates the file (tmp + rename)");
	app1(dl, 5, 1);
	sl_disklog_sync(dl);
	F.fdatasyncs = 0;
	CHECK(sl_disklog_checkpoint(dl) == 0 && F.renames == 1 && F.fdatasyncs == 2,
	      "the next one in place: no rename, the .clog's and the slot's fdatasync (%u)",
	      F.fdatasyncs);
	ck2 = m_end_id + 1;
	CHECK(sl_disklog_checkpoint(dl) == 0 && F.fdatasyncs == 2,
	      "nothing new: nothing written (%u)", F.fdatasyncs);
	app1(dl, 5, 1);
	sl_disklog_sync(dl);
	CHECK(sl_disklog_checkpoint(dl) == 0 && F.renames == 1, "a third, in the other slot");
	ck3 = m_end_id + 1;
	sl_disklog_close(dl);
	dl = opn(dir, 1 << 20, &fops, &rep);
	CHECK(dl != NULL && rep.checkpoint_valid && rep.checkpoint_id == ck3 &&
	      rep.end_id == m_end_id, "reopen: the newest slot (next id %" PRIu64 ")",
	      rep.checkpoint_id);
	sl_disklog_close(dl);
	/* gen 1 in both slots, then 2 in slot 0 (ck2), 3 in slot 1 (ck3): tear slot 1 */
	poke(p, 64 + 20, 0x01);
	dl = opn(dir, 1 << 20, &fops, &rep);
	CHECK(dl != NULL && rep.checkpoint_valid && rep.checkpoint_id == ck2 &&
	      rep.end_id == m_end_id && rep.scanned_records == 5,
	      "a torn newest slot: the one before it (next id %" PRIu64 ", %" PRIu64
	      " records verified after it)", rep.checkpoint_id, rep.scanned_records);
	sl_disklog_close(dl);
	if (truncate(p, 64) != 0)
		printf("  truncate failed\n");
	dl = opn(dir, 1 << 20, &fops, &rep);
	CHECK(dl != NULL && rep.checkpoint_valid && rep.checkpoint_id == ck2 &&
	      rep.end_id == m_end_id, "a one-slot file (an earlier build): read");
	CHECK(dl != NULL && sl_disklog_checkpoint(dl) == 0 && fsize(p) == 128,
	      "and written whole again, with two slots");
	sl_disklog_close(dl);
}

static void
test_truncate(void)
{
	char dir[DLEN];
	struct sl_disklog_recovery rep;
	struct sl_disklog_stats st;
	struct sl_disklog *dl;
	uint64_t id;

	sub(dir, "trunc");
	model_reset();
	dl = opn(dir, 4096, NULL, &rep);
	app1(dl, 100, 3);
	sl_disklog_sync(dl);
	sl_disklog_checkpoint(dl);
	CHECK(sl_disklog_truncate(dl, 152) == -EINVAL && sl_disklog_error(dl) == 0,
	      "truncate inside an MPUB record: -EINVAL, not sticky");
	CHECK(sl_disklog_truncate(dl, 150) == 0, "truncate to id 150 (several segments back)");
	model_cut(150);
	st = stats(dl);
	CHECK(st.end_id == 150 && st.end_offset == m_end_off && st.synced_id == 150,
	      "end %" PRIu64 " offset %" PRIu64 ", %u segments", st.end_id, st.end_offset,
	      st.segments);
	CHECK(sl_disklog_find(dl, SL_DISKLOG_BY_TIME, M[200].ts, &id) == 0 && id == 151,
	      "find by time past the new end: 151");
	CHECK(app1(dl, 10, 2) == 0 && verify(dl, 1, m_end_id) == 0, "append after truncate");
	sl_disklog_sync(dl);
	sl_disklog_close(dl);
	dl = opn(dir, 4096, NULL, &rep);
	CHECK(dl != NULL && strcmp(rep.what, "clean") == 0 && rep.end_id == m_end_id,
	      "reopen clean (%s)", rep.what);
	CHECK(sl_disklog_truncate(dl, 0) == 0 && stats(dl).end_id == 0 &&
	      stats(dl).segments == 1, "truncate to nothing");
	model_reset();
	CHECK(app1(dl, 3, 2) == 0 && verify(dl, 1, 6) == 0, "and start over at id 1");
	sl_disklog_close(dl);
}

/*
 * The epoch history comes back from the commit records: epoch changes inside a segment,
 * at a segment boundary, several in a row, after a reopen, a truncate and retention, and
 * capped to the newest entries.
 */
static void
test_epochs(void)
{
	static const uint64_t want_e[] = {3, 5, 6, 9, 10, 12};
	static const uint64_t want_s[] = {1, 91, 94, 97, 502, 580};
	struct sl_disklog_retention pol = {.max_bytes = 1, .now_ns = T0};
	struct sl_disklog_retain_res res;
	struct sl_disklog_recovery rep;
	uint64_t e[8], st[8];
	struct sl_disklog *dl;
	char dir[DLEN];
	int n, i, ok;

	sub(dir, "epochs");
	model_reset();
	dl = opn(dir, 4096, NULL, &rep);
	CHECK(sl_disklog_epochs(dl, e, st, 8) == 0, "empty log: no epochs");
	/* 30 PUBs of 3 in epoch 3 (ids 1..90), one record each in 5 and 6, then 9 */
	w_epoch = 3;
	app1(dl, 30, 3);
	w_epoch = 5;
	app1(dl, 1, 3);
	w_epoch = 6;
	app1(dl, 1, 3);
	w_epoch = 9;
	app1(dl, 135, 3);
	w_epoch = 10;
	app1(dl, 26, 3);
	w_epoch = 12;
	app1(dl, 40, 2);
	n = sl_disklog_epochs(dl, e, st, 8);
	for (i = 0, ok = n == 6; ok && i < n; i++)
		ok = e[i] == want_e[i] && st[i] == want_s[i];
	CHECK(ok, "six epochs over %u segments (got %d, first %" PRIu64 "@%" PRIu64 ")",
	      stats(dl).segments, n, e[0], st[0]);
	n = sl_disklog_epochs(dl, e, st, 2);
	CHECK(n == 2 && e[0] == 10 && st[0] == 502 && e[1] == 12 && st[1] == 580,
	      "capped at 2: the newest two");
	sl_disklog_sync(dl);
	sl_disklog_close(dl);
	dl = opn(dir, 4096, NULL, &rep);
	n = sl_disklog_epochs(dl, e, st, 8);
	CHECK(n == 6 && e[5] == 12 && st[5] == 580, "after a reopen: the same (%d)", n);
	CHECK(sl_disklog_truncate(dl, 96) == 0, "truncate to 96 (inside epoch 6)");
	model_cut(96);
	n = sl_disklog_epochs(dl, e, st, 8);
	CHECK(n == 3 && e[2] == 6 && st[2] == 94, "after the truncate: 3, 5, 6 (%d)", n);
	w_epoch = 13;
	app1(dl, 200, 2);
	sl_disklog_sync(dl);
	sl_disklog_checkpoint(dl);
	CHECK(sl_disklog_retain(dl, &pol, &res) == 0 && res.removed_segments > 0,
	      "retention to the last segment");
	n = sl_disklog_epochs(dl, e, st, 8);
	CHECK(n == 1 && e[0] == 13 && st[0] == stats(dl).first_id && st[0] > 97,
	      "after retention: epoch 13 from the first retained id %" PRIu64 " (%d)",
	      stats(dl).first_id, n);
	sl_disklog_close(dl);
	w_epoch = 7;
}

/* The id of the message at queue offset off (the model's), 0 if none. */
static uint64_t
id_at(uint64_t off)
{
	uint64_t id;

	for (id = 1; id <= m_end_id; id++)
		if (M[id].off == off)
			return id;
	return 0;
}

/* The checkpoint file's (base offset, base id), 0 when it is not there. */
static int
ckpt_at(const char *dir, uint64_t *off, uint64_t *id)
{
	char p[PATH_MAX];
	uint8_t h[64];

	snprintf(p, sizeof(p), "%s/checkpoint", dir);
	if (slurp(p, h, sizeof(h)) != 64)
		return 0;
	memcpy(off, h + 16, 8);		/* little-endian files, little-endian host */
	memcpy(id, h + 24, 8);
	return 1;
}

/*
 * Reset (a replica whose leader no longer holds the old part of the log): to a higher id,
 * appends after it, reopen; to a lower id at the active segment's base offset (the same
 * file names), reopen empty; a poisoned log.
 */
static void
test_reset(void)
{
	char dir[DLEN], p[PATH_MAX];
	struct sl_disklog_chan ch, cl[2];
	struct sl_disklog_recovery rep;
	struct sl_disklog_stats st;
	struct sl_crec c;
	struct sl_disklog *dl;
	uint64_t b[64], e[4], sid[4], id, v, base, nid, coff, cid, last;
	uint32_t n, nb;
	int rc, ok;

	sub(dir, "reset");
	model_reset();
	fault_reset();
	dl = opn(dir, 4096, &fops, &rep);
	if (dl == NULL) {
		CHECK(0, "reset: open");
		return;
	}
	app1(dl, 100, 2);
	sl_disklog_sync(dl);
	sl_disklog_checkpoint(dl);
	memset(&ch, 0, sizeof(ch));
	strcpy(ch.name, "orders");
	ch.confirmed_id = 150;
	rc = sl_disklog_chan_save(dl, &ch, 1);
	st = stats(dl);
	CHECK(rc == 0 && st.segments >= 4 && st.end_id == 200,
	      "reset: a log of %u segments, ids 1..200", st.segments);
	CHECK(sl_disklog_reset(dl, 0, 0) == -EINVAL && sl_disklog_error(dl) == 0 &&
	      stats(dl).segments == st.segments, "reset to id 0: -EINVAL, not sticky, no change");

	/* to a higher id: the leader's first retained message */
	nid = 1000;
	base = m_end_off + 100000;
	rc = sl_disklog_reset(dl, nid, base);
	st = stats(dl);
	CHECK(rc == 0 && st.first_id == nid && st.end_id == nid - 1 && st.end_offset == base &&
	      st.synced_id == nid - 1 && st.segments == 1 && st.bytes == 128 && st.error == 0,
	      "reset to id 1000 at offset %" PRIu64 ": first 1000, end 999, synced 999, one "
	      "empty segment (%d)", base, rc);
	nb = bases(dir, b, 64);
	seg_file(p, dir, base, "msg");
	ok = fsize(p) == 64;
	seg_file(p, dir, base, "clog");
	CHECK(nb == 1 && b[0] == base && ok && fsize(p) == 64,
	      "on disk: one segment named by the new base, each file a header");
	CHECK(ckpt_at(dir, &coff, &cid) && coff == base && cid == nid,
	      "the checkpoint is at the new base (next id 1000)");
	CHECK(sl_disklog_chan_load(dl, cl, 2) == 1 && strcmp(cl[0].name, "orders") == 0 &&
	      cl[0].confirmed_id == 150, "the channels file is left alone");
	rc = sl_disklog_read(dl, 1, UINT64_MAX, rbuf, sizeof(rbuf), rmsgs, 16, &n, &v);
	ok = rc == -ENOENT && v == nid;
	rc = sl_disklog_read(dl, nid - 1, UINT64_MAX, rbuf, sizeof(rbuf), rmsgs, 16, &n, &v);
	ok &= rc == -ENOENT && v == nid;
	CHECK(ok, "read of an old id: -ENOENT, first_avail 1000");
	ok = sl_disklog_find(dl, SL_DISKLOG_BY_ID, 5, &id) == -ENOENT && id == nid;
	ok &= sl_disklog_find(dl, SL_DISKLOG_BY_COUNT, 4, &id) == -ENOENT && id == nid;
	ok &= sl_disklog_find(dl, SL_DISKLOG_BY_OFFSET, M[5].off, &id) == -ENOENT && id == nid;
	ok &= sl_disklog_find(dl, SL_DISKLOG_BY_OFFSET, base, &id) == 0 && id == nid;
	ok &= sl_disklog_find(dl, SL_DISKLOG_BY_ID, nid, &id) == 0 && id == nid;
	ok &= sl_disklog_find(dl, SL_DISKLOG_BY_TIME, M[5].ts, &id) == 0 && id == nid;
	CHECK(ok, "find of an old id or offset: -ENOENT, the new first id; by the new base "
	      "offset, id or any time: 1000 (empty)");
	rc = sl_disklog_read(dl, nid, UINT64_MAX, rbuf, sizeof(rbuf), rmsgs, 16, &n, &v);
	CHECK(rc == 0 && n == 0 && sl_disklog_read_recs(dl, 5, UINT64_MAX, rbuf, sizeof(rbuf),
							crecs, 4, &n) == -ENOENT &&
	      sl_disklog_read_recs(dl, nid, UINT64_MAX, rbuf, sizeof(rbuf), crecs, 4, &n) ==
	      -ENOENT, "read at 1000: nothing; read_recs of old ids and 1000: -ENOENT");
	CHECK(sl_disklog_last(dl, &c) == -ENOENT && sl_disklog_epochs(dl, e, sid, 4) == 0,
	      "after the reset: last -ENOENT, epochs 0 (empty)");

	/* appends after it start at (1000, base) */
	m_end_id = nid - 1;
	m_end_off = base;
	w_epoch = 21;
	rc = app1(dl, 60, 2);
	st = stats(dl);
	CHECK(rc == 0 && st.end_id == m_end_id && st.first_id == nid && st.segments > 2 &&
	      crecs[0].log_id == nid && M[nid].off == base && verify(dl, nid, m_end_id) == 0 &&
	      find_all(dl, nid, m_end_id) == 0,
	      "appends continue at id 1000, offset %" PRIu64 " over %u segments: read back, "
	      "found by offset and time", base, st.segments);
	CHECK(sl_disklog_epochs(dl, e, sid, 4) == 1 && e[0] == 21 && sid[0] == nid &&
	      sl_disklog_last(dl, &c) == 0 && c.last_msg_log_id == m_end_id && c.epoch == 21,
	      "epochs: 21 from id 1000; last: the last record");
	rc = sl_disklog_sync(dl);
	sl_disklog_close(dl);
	dl = opn(dir, 4096, &fops, &rep);
	CHECK(rc == 0 && dl != NULL && strcmp(rep.what, "clean") == 0 && rep.first_id == nid &&
	      rep.end_id == m_end_id && rep.checkpoint_valid && rep.checkpoint_id == nid &&
	      verify(dl, nid, m_end_id) == 0,
	      "reopen after the reset and appends: clean, ids 1000..%" PRIu64 " (%s)",
	      m_end_id, rep.what);
	if (dl == NULL)
		return;

	/* to a lower id, at the active segment's base offset: the same file names */
	nb = bases(dir, b, 64);
	last = m_end_id;
	rc = sl_disklog_reset(dl, 10, b[nb - 1]);
	st = stats(dl);
	CHECK(rc == 0 && st.first_id == 10 && st.end_id == 9 && st.end_offset == b[nb - 1] &&
	      st.synced_id == 9 && st.segments == 1 && bases(dir, e, 4) == 1 &&
	      e[0] == b[nb - 1] && ckpt_at(dir, &coff, &cid) && coff == b[nb - 1] && cid == 10,
	      "reset to the lower id 10 at the active segment's base offset %" PRIu64
	      ": one empty segment, checkpoint there", b[nb - 1]);
	rc = sl_disklog_read(dl, nid, UINT64_MAX, rbuf, sizeof(rbuf), rmsgs, 16, &n, &v);
	ok = rc == 0 && n == 0;
	rc = sl_disklog_read(dl, last, UINT64_MAX, rbuf, sizeof(rbuf), rmsgs, 16, &n, &v);
	ok &= rc == 0 && n == 0;
	CHECK(ok && sl_disklog_find(dl, SL_DISKLOG_BY_ID, nid, &id) == 0 && id == 10 &&
	      sl_disklog_find(dl, SL_DISKLOG_BY_ID, 9, &id) == -ENOENT && id == 10,
	      "the old ids (now past the end) read nothing; by id: end + 1; 9: -ENOENT");
	sl_disklog_close(dl);
	dl = opn(dir, 4096, &fops, &rep);
	CHECK(dl != NULL && strcmp(rep.what, "clean") == 0 && rep.first_id == 10 &&
	      rep.end_id == 9 && rep.end_offset == b[nb - 1] && rep.checkpoint_id == 10,
	      "reopen after the reset: the empty log at (offset %" PRIu64 ", id 10) (%s)",
	      b[nb - 1], rep.what);
	if (dl == NULL)
		return;
	m_end_id = 9;
	m_end_off = b[nb - 1];
	CHECK(app1(dl, 5, 3) == 0 && verify(dl, 10, m_end_id) == 0 &&
	      sl_disklog_sync(dl) == 0, "appends at id 10 again, over the old ids' model");
	sl_disklog_close(dl);
	dl = opn(dir, 4096, &fops, &rep);
	CHECK(dl != NULL && strcmp(rep.what, "clean") == 0 && rep.first_id == 10 &&
	      rep.end_id == m_end_id && verify(dl, 10, m_end_id) == 0,
	      "reopen: clean, ids 10..%" PRIu64, m_end_id);
	if (dl == NULL)
		return;

	/* a poisoned log: the reset returns its error and changes nothing */
	F.fail_in = 1;
	F.fail_errno = EIO;
	rc = app1(dl, 1, 1);
	st = stats(dl);
	nb = bases(dir, b, 64);
	CHECK(rc == -EIO && sl_disklog_reset(dl, 5000, 0) == -EIO &&
	      stats(dl).first_id == st.first_id && stats(dl).end_id == st.end_id &&
	      bases(dir, e, 4) == nb && e[0] == b[0] && ckpt_at(dir, &coff, &cid) && cid == 10,
	      "poisoned: the reset returns the error (%d), nothing changes", rc);
	CHECK(sl_disklog_resume(dl) == 0 && stats(dl).end_id == m_end_id &&
	      stats(dl).first_id == 10, "resume: the log as it was, ids 10..%" PRIu64, m_end_id);
	sl_disklog_close(dl);
	w_epoch = 7;
}

/*
 * A reset that fails part-way: at the directory fsync after the checkpoint goes, at an
 * unlink among the old segments, at the new segment's creation (also when it takes the
 * name of the active one), at the unlink of the segment it replaced, at the new segment's
 * fdatasync. The log is poisoned and stays readable; a crash there (a copy of the
 * directory, opened) gives a suffix of the old log or the new empty one; resume
 * completes the reset; appends and a reopen follow.
 */
enum { RF_DIRSYNC, RF_UNLINK_OLD, RF_CREATE, RF_CREATE_SAME, RF_UNLINK_LAST, RF_SYNC };

static void
reset_fault_case(int what)
{
	static const char *const name[] = {"dir fsync", "unlink of an old segment",
					   "create", "create at the same name",
					   "unlink of the replaced segment", "fdatasync"};
	char dir[DLEN], cp[DLEN];
	struct sl_disklog_recovery rep;
	struct sl_disklog_stats st;
	struct sl_disklog *dl, *dl2;
	uint64_t b[64], e[4], nid = 5000, base, want_first, want_end, coff, cid;
	uint32_t nb, want_segs;
	int rc, want = what == RF_CREATE || what == RF_CREATE_SAME ? -ENOSPC : -EIO;

	sub(dir, "reset-fault");
	sub(cp, "reset-crash");
	rm_rf(dir);
	model_reset();
	fault_reset();
	dl = opn(dir, 4096, &fops, &rep);
	if (dl == NULL) {
		CHECK(0, "reset fault: open");
		return;
	}
	app1(dl, 100, 2);
	sl_disklog_sync(dl);
	sl_disklog_checkpoint(dl);
	nb = bases(dir, b, 64);
	base = what == RF_CREATE_SAME ? b[nb - 1] : m_end_off + 8000;
	/* what the table holds after the failure */
	want_first = 1;
	want_end = m_end_id;
	want_segs = nb;
	switch (what) {
	case RF_DIRSYNC:
		F.fsync_fail = 1;
		break;
	case RF_UNLINK_OLD:
		F.unlink_fail_in = 1 + 2 * 2 + 1;	/* checkpoint, 2 segments, a .clog */
		want_first = id_at(b[2]);
		want_segs = nb - 2;
		break;
	case RF_CREATE:
	case RF_CREATE_SAME:
		F.fail_in = 1;				/* the new .msg's header */
		F.fail_errno = ENOSPC;
		want_first = id_at(b[nb - 1]);
		want_segs = 1;
		break;
	case RF_UNLINK_LAST:
		F.unlink_fail_in = 1 + 2 * (nb - 1) + 1;
		want_first = nid;
		want_end = nid - 1;
		want_segs = 1;
		break;
	default:
		F.sync_fail = 1;
		want_first = nid;
		want_end = nid - 1;
		want_segs = 1;
		break;
	}
	rc = sl_disklog_reset(dl, nid, base);
	st = stats(dl);
	CHECK(rc == want && st.error == want && st.first_id == want_first &&
	      st.end_id == want_end && st.segments == want_segs,
	      "reset fault at the %s: %d, poisoned; first %" PRIu64 ", end %" PRIu64
	      ", %u segments", name[what], rc, st.first_id, st.end_id, st.segments);
	CHECK(app1(dl, 1, 1) == want && sl_disklog_sync(dl) == want &&
	      sl_disklog_reset(dl, nid, base) == want &&
	      (want_end < want_first || verify(dl, want_first, want_end) == 0),
	      "reset fault at the %s: sticky; what the table holds reads back", name[what]);

	/* a crash here: open a copy of the directory */
	copy_dir(dir, cp);
	dl2 = opn(cp, 4096, NULL, &rep);
	if (what == RF_CREATE_SAME) {
		want_first = 1;		/* no segment left: an empty log at (0, 1) */
		want_end = 0;
	} else if (what == RF_UNLINK_OLD) {
		/* the failed .clog's .msg went: the lone .clog is removed at open */
		want_first = id_at(b[3]);
	}
	/* RF_UNLINK_LAST: the same for the replaced segment: the new empty log */
	CHECK(dl2 != NULL && rep.first_id == want_first && rep.end_id == want_end &&
	      !rep.checkpoint_valid && strstr(rep.what, "DATA LOST") == NULL &&
	      (want_end < want_first || verify(dl2, want_first, want_end) == 0),
	      "reset fault at the %s: a crash opens ids %" PRIu64 "..%" PRIu64 " (%s)",
	      name[what], rep.first_id, rep.end_id, rep.what);
	sl_disklog_close(dl2);

	/* resume completes the reset */
	rc = sl_disklog_resume(dl);
	st = stats(dl);
	CHECK(rc == 0 && st.error == 0 && st.first_id == nid && st.end_id == nid - 1 &&
	      st.end_offset == base && st.synced_id == nid - 1 && st.segments == 1 &&
	      bases(dir, e, 4) == 1 && e[0] == base && ckpt_at(dir, &coff, &cid) &&
	      coff == base && cid == nid,
	      "reset fault at the %s: resume completes the reset (%d)", name[what], rc);
	m_end_id = nid - 1;
	m_end_off = base;
	rc = app1(dl, 30, 2);
	CHECK(rc == 0 && sl_disklog_sync(dl) == 0 && verify(dl, nid, m_end_id) == 0,
	      "reset fault at the %s: appends at id %" PRIu64, name[what], nid);
	sl_disklog_close(dl);
	dl = opn(dir, 4096, NULL, &rep);
	CHECK(dl != NULL && strcmp(rep.what, "clean") == 0 && rep.first_id == nid &&
	      rep.end_id == m_end_id && verify(dl, nid, m_end_id) == 0,
	      "reset fault at the %s: reopen clean (%s)", name[what], rep.what);
	sl_disklog_close(dl);
}

static void
test_reset_faults(void)
{
	int what;

	for (what = RF_DIRSYNC; what <= RF_SYNC; what++)
		reset_fault_case(what);
}

/* A reader thread reads and finds while the appender writes, rolls, retains and resets. */
struct rd_arg {
	struct sl_disklog *dl;
	int stop;		/* these through __atomic builtins */
	uint64_t reads;
	uint64_t msgs;
	uint64_t bad;
	uint64_t resets;	/* bumped before each reset */
};

static void *
reader(void *arg)
{
	static uint8_t buf[64 << 10];
	static struct sl_disklog_msg msgs[256];
	struct rd_arg *a = arg;
	uint64_t from = 1, fa, id, id2, resets;
	uint32_t n, i;
	int rc, rc2;

	while (!ALD(a->stop)) {
		resets = __atomic_load_n(&a->resets, __ATOMIC_ACQUIRE);
		rc = sl_disklog_read(a->dl, from, UINT64_MAX, buf, sizeof(buf), msgs, 256, &n, &fa);
		AADD(a->reads, 1);
		if (rc == -ENOENT) {
			from = fa;
			continue;
		}
		if (rc != 0) {
			AADD(a->bad, 1);
			break;
		}
		for (i = 0; i < n; i++) {
			/* the model entries of written ids are stable */
			if (msgs[i].id != from + i || msgs[i].len != len_of(msgs[i].id) ||
			    !same(msgs[i].data, msgs[i].len, msgs[i].id) ||
			    msgs[i].offset != M[msgs[i].id].off)
				AADD(a->bad, 1);
		}
		AADD(a->msgs, n);
		from += n;
		if (n == 0)
			continue;
		rc = sl_disklog_find(a->dl, SL_DISKLOG_BY_OFFSET, msgs[n - 1].offset, &id);
		rc2 = sl_disklog_find(a->dl, SL_DISKLOG_BY_TIME, msgs[0].timestamp_ns, &id2);
		/* after a reset, what was read is gone and the finds answer for the new log */
		if (__atomic_load_n(&a->resets, __ATOMIC_ACQUIRE) != resets)
			continue;
		if (rc != -ENOENT && (rc != 0 || id != msgs[n - 1].id))
			AADD(a->bad, 1);
		if (rc2 != -ENOENT && (rc2 != 0 || id2 != msgs[0].id))
			AADD(a->bad, 1);
	}
	return NULL;
}

static void
test_concurrent(void)
{
	char dir[DLEN];
	struct sl_disklog_retention pol = {.max_bytes = 64 << 10, .now_ns = T0};
	struct sl_disklog_recovery rep;
	struct rd_arg a;
	pthread_t t;
	int i, rc = 0, nres = 0;

	sub(dir, "conc");
	model_reset();
	memset(&a, 0, sizeof(a));
	a.dl = opn(dir, 8192, NULL, &rep);
	if (a.dl == NULL)
		return;
	pthread_create(&t, NULL, reader, &a);
	for (i = 0; i < 1000 && rc == 0 && m_end_id + 64 < MAXID; i++) {
		rc = app(a.dl, 1 + i % 7, mix, 8);
		if (rc == 0 && i % 50 == 0)
			rc = sl_disklog_sync(a.dl);
		if (rc == 0 && i % 100 == 0)
			rc = sl_disklog_retain(a.dl, &pol, NULL);
		if (rc == 0 && i % 250 == 125) {
			/* a reset to a higher id: the reader jumps to it (ids are never reused,
			 * so its model checks hold) */
			__atomic_fetch_add(&a.resets, 1, __ATOMIC_RELEASE);
			rc = sl_disklog_reset(a.dl, m_end_id + 300, m_end_off + 4096);
			m_end_id += 299;
			m_end_off += 4096;
			nres++;
		}
	}
	/* at most 10 s: on a loaded machine the reader may have had little time */
	for (i = 0; i < 10000 && ALD(a.msgs) < 1000 && ALD(a.bad) == 0; i++)
		usleep(1000);
	__atomic_store_n(&a.stop, 1, __ATOMIC_RELAXED);
	pthread_join(t, NULL);
	CHECK(rc == 0 && a.bad == 0 && a.msgs > 0 && nres == 4 &&
	      verify(a.dl, stats(a.dl).first_id, m_end_id) == 0,
	      "concurrent reader during appends, rolls, retention and %d resets: %" PRIu64
	      " reads, %" PRIu64 " messages, %" PRIu64 " bad", nres, a.reads, a.msgs, a.bad);
	sl_disklog_close(a.dl);
}

/* CRC32C (Castagnoli), bit by bit: to forge a well-formed header. */
static uint32_t
crc_ref(const uint8_t *p, size_t len)
{
	uint32_t c = ~0u;
	size_t i;
	int k;

	for (i = 0; i < len; i++) {
		c ^= p[i];
		for (k = 0; k < 8; k++)
			c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1u)));
	}
	return ~c;
}

/*
 * A lost range (memory durability after a machine crash, storage/persist.c): ids the id
 * mark says may have been acknowledged but that are not on disk are skipped for good.
 * The log continues after it, reads, lookups, recovery, retention and truncation treat
 * it as a hole, and a torn header of the segment that names it loses only that segment.
 */
static void
test_lost_range(void)
{
	struct sl_disklog_retention pol;
	struct sl_disklog_retain_res res;
	struct sl_disklog_recovery rep;
	struct sl_disklog_stats st;
	struct sl_disklog *dl;
	char dir[DLEN], path[2 * DLEN];
	uint64_t id, v, gap_base;
	uint32_t n;
	int rc;

	/* the id mark file round-trips */
	sub(dir, "lost");
	model_reset();
	dl = opn(dir, 4096, NULL, &rep);
	CHECK(dl != NULL && rep.id_mark == 0, "a new log has no id mark");
	app1(dl, 50, 2);			/* ids 1..100 */
	CHECK(sl_disklog_mark(dl, 5000) == 0, "id mark written");
	sl_disklog_sync(dl);
	sl_disklog_close(dl);
	dl = opn(dir, 4096, NULL, &rep);
	CHECK(dl != NULL && rep.id_mark == 5000 && strcmp(rep.what, "clean") == 0,
	      "reopen: id mark %" PRIu64 ", %s", rep.id_mark, rep.what);

	/* ids 101..299 lost: the log continues at 300, at the same queue offset */
	gap_base = m_end_off;
	CHECK(sl_disklog_skip(dl, 300) == 0, "skip to 300");
	st = stats(dl);
	CHECK(st.end_id == 299 && st.synced_id == 299 && st.end_offset == gap_base &&
	      st.first_id == 1, "after the skip: end %" PRIu64 ", offset %" PRIu64, st.end_id,
	      st.end_offset);
	CHECK(sl_disklog_skip(dl, 200) == 0 && stats(dl).end_id == 299,
	      "a skip below the end is a no-op");
	sl_disklog_close(dl);

	/* the empty segment after the range is kept at open (not an empty tail) */
	dl = opn(dir, 4096, NULL, &rep);
	st = stats(dl);
	CHECK(dl != NULL && st.end_id == 299 && st.end_offset == gap_base &&
	      strcmp(rep.what, "clean") == 0, "reopen after the skip: end %" PRIu64 ", %s",
	      st.end_id, rep.what);
	m_end_id = 299;				/* the model continues after the range */
	CHECK(app1(dl, 100, 2) == 0, "append after the range (ids 300..499)");
	sl_disklog_sync(dl);

	/* reads: a read stops before the range, a read in it names the next id held */
	CHECK(verify(dl, 1, 100) == 0 && verify(dl, 300, 499) == 0, "both sides read back");
	rc = sl_disklog_read(dl, 90, UINT64_MAX, rbuf, sizeof(rbuf), rmsgs, 4096, &n, &v);
	CHECK(rc == 0 && n == 11 && rmsgs[n - 1].id == 100,
	      "a read from 90 stops before the range: rc %d, %u messages", rc, n);
	v = 0;
	rc = sl_disklog_read(dl, 101, UINT64_MAX, rbuf, sizeof(rbuf), rmsgs, 4096, &n, &v);
	CHECK(rc == -ENOENT && v == 300, "a read in the range: rc %d, next %" PRIu64, rc, v);
	rc = sl_disklog_read(dl, 299, UINT64_MAX, rbuf, sizeof(rbuf), rmsgs, 4096, &n, &v);
	CHECK(rc == -ENOENT && v == 300, "a read at the range's end: rc %d, next %" PRIu64, rc,
	      v);
	CHECK(sl_disklog_find(dl, SL_DISKLOG_BY_ID, 150, &id) == 0 && id == 300,
	      "find by id in the range: %" PRIu64, id);
	CHECK(sl_disklog_find(dl, SL_DISKLOG_BY_COUNT, 100, &id) == 0 && id == 300,
	      "find by count in the range: %" PRIu64, id);
	CHECK(sl_disklog_find(dl, SL_DISKLOG_BY_ID, 77, &id) == 0 && id == 77,
	      "find by id before the range: %" PRIu64, id);
	CHECK(sl_disklog_find(dl, SL_DISKLOG_BY_OFFSET, gap_base, &id) == 0 && id == 300,
	      "find by offset at the range: %" PRIu64, id);
	sl_disklog_close(dl);

	/* recovery verifies across the range, with or without the checkpoint */
	snprintf(path, sizeof(path), "%s/checkpoint", dir);
	unlink(path);
	dl = opn(dir, 4096, NULL, &rep);
	st = stats(dl);
	CHECK(dl != NULL && st.end_id == 499 && strcmp(rep.what, "clean") == 0 &&
	      verify(dl, 1, 100) == 0 && verify(dl, 300, 499) == 0,
	      "reopen without a checkpoint: end %" PRIu64 ", %s", st.end_id, rep.what);

	/* retention across the range: what is before it goes, reads start after it */
	memset(&pol, 0, sizeof(pol));
	pol.max_bytes = 1;
	pol.now_ns = T0;
	pol.keep_from_id = 350;
	rc = sl_disklog_retain(dl, &pol, &res);
	st = stats(dl);
	CHECK(rc == 0 && st.first_id >= 300 && st.first_id <= 350,
	      "retention across the range: first id %" PRIu64, st.first_id);
	rc = sl_disklog_read(dl, 150, UINT64_MAX, rbuf, sizeof(rbuf), rmsgs, 10, &n, &v);
	CHECK(rc == -ENOENT && v == st.first_id, "read below: -ENOENT, first %" PRIu64, v);
	CHECK(verify(dl, st.first_id, 499) == 0, "what is left reads back");
	sl_disklog_close(dl);
	dl = opn(dir, 4096, NULL, &rep);
	CHECK(dl != NULL && stats(dl).first_id == st.first_id && stats(dl).end_id == 499,
	      "reopen after retention across the range: %s", rep.what);
	sl_disklog_close(dl);

	/* a truncation into the range cuts it off with its segment */
	sub(dir, "lost_trunc");
	model_reset();
	dl = opn(dir, 4096, NULL, &rep);
	app1(dl, 50, 2);
	CHECK(sl_disklog_skip(dl, 300) == 0, "skip");
	m_end_id = 299;
	app1(dl, 10, 1);
	CHECK(sl_disklog_truncate(dl, 200) == 0 && stats(dl).end_id == 100,
	      "truncate into the range: end %" PRIu64, stats(dl).end_id);
	sl_disklog_close(dl);

	/* a skip of an empty log (a new partition): the log starts after the range */
	sub(dir, "lost_empty");
	model_reset();
	dl = opn(dir, 4096, NULL, &rep);
	CHECK(sl_disklog_skip(dl, 1000) == 0, "skip an empty log");
	st = stats(dl);
	CHECK(st.first_id == 1000 && st.end_id == 999 && st.end_offset == 0,
	      "empty log after the skip: first %" PRIu64 " end %" PRIu64, st.first_id, st.end_id);
	sl_disklog_close(dl);
	dl = opn(dir, 4096, NULL, &rep);
	st = stats(dl);
	CHECK(dl != NULL && st.first_id == 1000 && st.end_id == 999,
	      "reopen: first %" PRIu64 " end %" PRIu64, st.first_id, st.end_id);
	rc = sl_disklog_read(dl, 5, UINT64_MAX, rbuf, sizeof(rbuf), rmsgs, 10, &n, &v);
	CHECK(rc == -ENOENT && v == 1000, "read below: next %" PRIu64, v);
	sl_disklog_close(dl);

	/* a torn header of the segment after the range (a crash while it was made): open
	 * removes that segment only; the range is recorded again by the caller's next skip */
	sub(dir, "lost_torn");
	model_reset();
	dl = opn(dir, 4096, NULL, &rep);
	app1(dl, 5, 2);
	gap_base = m_end_off;
	CHECK(sl_disklog_skip(dl, 300) == 0, "skip");
	sl_disklog_close(dl);
	seg_file(path, dir, gap_base, "msg");
	poke(path, 50, 0x40);			/* lost_from, under the header CRC */
	dl = opn(dir, 4096, NULL, &rep);
	st = stats(dl);
	CHECK(dl != NULL && st.end_id == 10 && verify(dl, 1, 10) == 0,
	      "torn header after the range: end %" PRIu64 ", %s", st.end_id, rep.what);
	CHECK(sl_disklog_skip(dl, 300) == 0 && stats(dl).end_id == 299, "skip again");
	sl_disklog_close(dl);

	/* a header that names a range that does not start where the log ends: not ours */
	seg_file(path, dir, gap_base, "msg");
	{
		uint8_t h[64];
		int fd = open(path, O_RDWR);

		if (fd < 0 || pread(fd, h, 64, 0) != 64)
			printf("  cannot read %s\n", path);
		h[48] = 77;	/* lost_from 77, not 11 */
		/* a consistent CRC: the header is well formed, its range is not */
		{
			uint32_t crc = crc_ref(h, 60);

			h[60] = (uint8_t)crc;
			h[61] = (uint8_t)(crc >> 8);
			h[62] = (uint8_t)(crc >> 16);
			h[63] = (uint8_t)(crc >> 24);
		}
		if (fd >= 0 && pwrite(fd, h, 64, 0) != 64)
			printf("  cannot write %s\n", path);
		if (fd >= 0)
			close(fd);
	}
	dl = opn(dir, 4096, NULL, &rep);
	CHECK(dl == NULL || stats(dl).end_id == 10,
	      "a range that does not follow the log is not trusted");
	if (dl != NULL)
		sl_disklog_close(dl);
}

/*
 * Producer tags: every commit record keeps its (producer, seq) (version 3 segments, 80-byte
 * records), so that a partition reopened after a crash (no clean stop: the log closed
 * without a checkpoint) rebuilds its producer table from sl_disklog_tail, which reads only
 * the newest records, across segments, oldest first.
 */
static void
test_tags(void)
{
	static struct sl_crec t[64];
	static const uint32_t per[] = {1, 3, 2};
	uint64_t segb[64];
	char dir[DLEN], cf[PATH_MAX];
	struct sl_disklog_recovery rep;
	struct sl_disklog *dl;
	uint8_t h[64];
	int rc, n, ok, i;

	sub(dir, "tags");
	model_reset();
	dl = opn(dir, 2048, NULL, &rep);
	if (dl == NULL) {
		CHECK(0, "tags: open");
		return;
	}
	rc = 0;
	for (i = 0; i < 12; i++) {
		w_producer = i % 3 == 2 ? 0 : 0xabc0 + (uint64_t)(i % 2);	/* some untagged */
		rc |= app(dl, 1, &per[i % 3], 1);
	}
	w_producer = 0;
	rc |= sl_disklog_sync(dl);
	sl_disklog_close(dl);		/* no checkpoint: as a kill */
	seg_file(cf, dir, 0, "clog");
	CHECK(rc == 0 && slurp(cf, h, sizeof(h)) == 64 && h[8] == SL_DISKLOG_VERSION_TAG &&
		      bases(dir, segb, 64) > 1,
	      "12 records, some tagged, over several segments: version %u headers", h[8]);
	dl = opn(dir, 2048, NULL, &rep);
	n = dl != NULL ? sl_disklog_tail(dl, t, 64) : -1;
	ok = n == 12;
	for (i = 0; ok && i < n; i++) {
		uint64_t want = i % 3 == 2 ? 0 : 0xabc0 + (uint64_t)(i % 2);

		ok = t[i].producer == want && t[i].pseq == (want != 0 ? t[i].log_id : 0) &&
		     (i == 0 || t[i].log_id == t[i - 1].last_msg_log_id + 1) &&
		     t[i].msg_num == per[i % 3];
	}
	CHECK(dl != NULL && ok && t[0].log_id == 1 && t[11].last_msg_log_id == m_end_id,
	      "reopened after a crash: all 12 records back with their tags, oldest first (%d)",
	      n);
	n = dl != NULL ? sl_disklog_tail(dl, t, 5) : -1;
	/* records 7..11: record 7 starts after 2 cycles of 1 + 3 + 2 messages and one of 1 */
	CHECK(n == 5 && t[0].log_id == 14 && t[4].producer == 0 && t[3].producer == 0xabc0 &&
		      t[2].producer == 0xabc1 && t[2].pseq == t[2].log_id &&
		      t[4].last_msg_log_id == m_end_id,
	      "the newest 5 only (%d, first id %" PRIu64 ")", n, n > 0 ? t[0].log_id : 0);
	CHECK(dl != NULL && sl_disklog_tail(dl, t, 0) == 0 &&
		      sl_disklog_tail(dl, NULL, 3) == -EINVAL, "tail of 0: 0; no buffer: -EINVAL");
	if (dl != NULL) {
		w_producer = 0x77;
		rc = app1(dl, 1, 1);
		w_producer = 0;
		n = sl_disklog_tail(dl, t, 1);
		CHECK(rc == 0 && n == 1 && t[0].producer == 0x77 && t[0].pseq == m_end_id,
		      "a tagged append after the reopen reads back");
		sl_disklog_close(dl);
	}
}

static void
put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

/*
 * A segment of an earlier build (version 1: 64-byte commit records, no tag), forged from
 * one this build wrote: it opens and reads, its records have no tag, and the first
 * append rolls to a new version-3 segment whose tags read back, also after a reopen.
 */
static void
test_tags_v1(void)
{
	static uint8_t b[64 + 16 * 80], o[64 + 16 * 64];
	static struct sl_crec t[16];
	char dir[DLEN], cf[PATH_MAX], mf[PATH_MAX];
	struct sl_disklog_recovery rep;
	struct sl_disklog *dl;
	uint64_t segb[8];
	ssize_t len;
	uint32_t i, nrec;
	int rc, n, fd;

	sub(dir, "tags-v1");
	model_reset();
	dl = opn(dir, 1 << 20, NULL, &rep);
	if (dl == NULL) {
		CHECK(0, "tags v1: open");
		return;
	}
	rc = app1(dl, 5, 2);
	rc |= sl_disklog_sync(dl);
	sl_disklog_close(dl);
	seg_file(cf, dir, 0, "clog");
	seg_file(mf, dir, 0, "msg");
	len = slurp(cf, b, sizeof(b));
	nrec = (uint32_t)((len - 64) / 80);
	CHECK(rc == 0 && len == 64 + 5 * 80 && nrec == 5, "tags v1: 5 records written");
	/* the headers as version 1, each 80-byte record as its 64-byte ancestor */
	memcpy(o, b, 64);
	o[8] = 1;
	put32(o + 60, crc_ref(o, 60));
	for (i = 0; i < nrec; i++) {
		memcpy(o + 64 + 64 * i, b + 64 + 80 * i, 56);
		put32(o + 64 + 64 * i + 56, 0x474F4C43u);
		put32(o + 64 + 64 * i + 60, crc_ref(o + 64 + 64 * i, 60));
	}
	fd = open(cf, O_WRONLY | O_TRUNC);
	rc = fd >= 0 && write(fd, o, 64 + 64 * nrec) == (ssize_t)(64 + 64 * nrec) ? 0 : -1;
	if (fd >= 0)
		close(fd);
	fd = open(mf, O_RDWR);
	if (fd < 0 || pread(fd, o, 64, 0) != 64)
		rc = -1;
	o[8] = 1;
	put32(o + 60, crc_ref(o, 60));
	if (fd < 0 || pwrite(fd, o, 64, 0) != 64)
		rc = -1;
	if (fd >= 0)
		close(fd);
	dl = opn(dir, 1 << 20, NULL, &rep);
	n = dl != NULL ? sl_disklog_tail(dl, t, 16) : -1;
	CHECK(rc == 0 && dl != NULL && strcmp(rep.what, "clean") == 0 && rep.end_id == 10 &&
		      verify(dl, 1, 10) == 0 && n == 5 && t[4].producer == 0 &&
		      t[4].last_msg_log_id == 10,
	      "a version-1 segment (64-byte records) opens clean and reads: ids 1..10 (%s)",
	      dl != NULL ? rep.what : "not opened");
	if (dl == NULL)
		return;
	w_producer = 0x99;
	rc = app1(dl, 2, 1);
	w_producer = 0;
	rc |= sl_disklog_sync(dl);
	n = sl_disklog_tail(dl, t, 16);
	CHECK(rc == 0 && bases(dir, segb, 8) == 2 && n == 7 && t[5].producer == 0x99 &&
		      t[5].pseq == 11 && t[6].pseq == 12 && t[4].producer == 0,
	      "the first append after it rolls to a version-3 segment: tags kept (%d)", n);
	sl_disklog_close(dl);
	seg_file(cf, dir, segb[1], "clog");
	len = slurp(cf, b, 64);
	dl = opn(dir, 1 << 20, NULL, &rep);
	n = dl != NULL ? sl_disklog_tail(dl, t, 16) : -1;
	CHECK(len == 64 && b[8] == SL_DISKLOG_VERSION_TAG && dl != NULL && rep.end_id == 12 &&
		      verify(dl, 1, 12) == 0 && n == 7 && t[6].producer == 0x99,
	      "reopened: both versions read, the new one's tags back (%d)", n);
	if (dl != NULL)
		sl_disklog_close(dl);
}

int
main(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/test_disklog.XXXXXX");
	if (mkdtemp(tmpdir) == NULL) {
		perror("mkdtemp");
		return EXIT_FAILURE;
	}
	fops = sl_sio_posix;
	fops.pwrite = f_pwrite;
	fops.fdatasync = f_fdatasync;
	fops.fsync = f_fsync;
	fops.unlink = f_unlink;
	fops.rename = f_rename;
	test_roundtrip();
	test_torn_tail();
	test_lazy_clog();
	test_rebuild();
	test_torn_mpub();
	test_errors();
	test_prealloc();
	test_roll_no_alloc();
	test_retention();
	test_channels();
	test_checkpoint();
	test_checkpoint_slots();
	test_truncate();
	test_epochs();
	test_reset();
	test_reset_faults();
	test_concurrent();
	test_lost_range();
	test_tags();
	test_tags_v1();
	rm_rf(tmpdir);
	return check_report();
}
