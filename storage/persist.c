/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <hugetlbfs.h> /* needs size_t first */

#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_log.h>
#include <rte_malloc.h>
#include <rte_ring.h>
#include <rte_ring_elem.h>
#include <urcu-qsbr.h>

#include "bell.h"
#include "bytes.h"
#include "err.h"
#include "persist.h"

RTE_LOG_REGISTER_SUFFIX(sl_persist_logtype, persist, INFO);
#define PLOG(level, ...) rte_log(RTE_LOG_##level, sl_persist_logtype, "persist: " __VA_ARGS__)

extern volatile int sl_broker_quit;

#define MAX_STORES 4096
#define MAX_CRECS 4096
#define DESC_BURST 256
#define RUN_SLACK (128u << 10)	/* room kept for one descriptor's records */
#define PERIODIC_NS (100ull * 1000 * 1000)
#define CKPT_NS (1000ull * 1000 * 1000)
#define RETAIN_NS (1000ull * 1000 * 1000)
#define STORE_IDLE_US 50u	/* longest idle sleep while partitions are attached */
/* after this long without work, the lcore blocks on its bell (rung by a submit or a
 * command) until the next timed work, instead of sleeping STORE_IDLE_US at a time: on an
 * idle node those wake-ups were a fifth of a core (2026-11-28, this VM) */
#define DEEP_IDLE_NS (2ull * 1000 * 1000)
/* longest idle sleep of the reader with no partition attached (no data directory, or no
 * topic yet): only a command (an attach) can bring it work then, and a wake-up a
 * millisecond was most of an idle node's CPU (the lcore blocks on its bell instead) */
#define NOSTORE_IDLE_US 10000u

/*
 * What a worker hands over: 56 bytes by value in the ring, taken in order. n is the
 * message count of an append (PUB/MPUB: ids first_id .. first_id + n - 1 at queue offset
 * `offset`, commit record epoch `epoch` and producer tag (producer, pseq), kept in the
 * commit record), or one of two markers:
 *   n == 0 (DESC_TRUNCATE): every id >= first_id goes (a replication rollback or a
 *          divergent tail); offset and epoch unused;
 *   n == UINT32_MAX (DESC_RESET): the whole log goes and restarts empty at id first_id,
 *          queue offset `offset` (a replica past its leader's retention); epoch unused.
 * Every kind carries the gen it was made under: older ones are dropped.
 */
struct desc {
	struct sl_pstore *ps;
	uint64_t first_id;
	uint64_t offset;
	uint32_t n;
	uint32_t gen;
	uint64_t epoch;			/* write epoch of the commit record */
	uint64_t producer;		/* its producer tag (0 0: none) */
	uint64_t pseq;
};

_Static_assert(sizeof(struct desc) == 56, "the descriptor is 56 bytes");

#define DESC_TRUNCATE 0u
#define DESC_RESET UINT32_MAX

enum cmd_op { CMD_ATTACH = 1, CMD_DETACH };

struct cmd {
	enum cmd_op op;
	struct sl_pstore *ps;
	int result;
	int done;
};

struct sl_persist {
	struct sl_persist_conf conf;
	struct rte_ring *rings[SL_PERSIST_MAX_SOURCES];	/* worker -> lcore, struct desc */
	struct rte_ring *cmds;				/* control -> lcore */
	struct rte_ring *jobs;				/* workers -> reader */
	int started;
	int reader_started;
	pthread_t reader;
	volatile int reader_quit;

	/* staging buffer and the run being built in it (one partition at a time) */
	uint8_t *buf;
	size_t buf_len;
	int buf_huge;
	struct sl_pstore *run_ps;
	size_t run_used;
	uint32_t run_ncrec;
	uint64_t run_last_id;
	uint64_t run_msgs;
	struct sl_crec crecs[MAX_CRECS];

	uint32_t nstores;
	struct sl_pstore *stores[MAX_STORES];
	uint32_t ndirty;
	struct sl_pstore *dirty[MAX_STORES];
	uint64_t next_periodic;
	uint64_t next_ckpt;
	uint64_t next_retain;

	/* after a loop that wrote or synced: sl_persist_set_notify */
	void (*notify)(void *arg);
	void *notify_arg;

	/* written by the lcore around a block, read by every submitter: a line of its own */
	struct sl_bell bell __rte_cache_aligned;	/* blocks or naps (or is about to) */

	struct sl_persist_stats st __rte_cache_aligned;
};

static uint64_t
mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t
wall_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- policy strings ---- */

int
sl_persist_parse_sync(const char *s, struct sl_persist_policy *pol)
{
	char *end;
	unsigned long v;

	if (strcmp(s, "always") == 0) {
		pol->sync = SL_PERSIST_SYNC_ALWAYS;
		return 0;
	}
	if (strncmp(s, "every:", 6) == 0 || strncmp(s, "ms:", 3) == 0) {
		const char *num = strchr(s, ':') + 1;

		errno = 0;
		v = strtoul(num, &end, 10);
		if (errno != 0 || end == num || *end != '\0' || v == 0 || v > 1000000)
			return -EINVAL;
		if (s[0] == 'e') {
			pol->sync = SL_PERSIST_SYNC_EVERY;
			pol->every = (uint32_t)v;
		} else {
			pol->sync = SL_PERSIST_SYNC_INTERVAL;
			pol->interval_ms = (uint32_t)v;
		}
		return 0;
	}
	return -EINVAL;
}

const char *
sl_persist_sync_str(const struct sl_persist_policy *pol, char *buf, size_t len)
{
	switch (pol->sync) {
	case SL_PERSIST_SYNC_EVERY:
		snprintf(buf, len, "every:%u", pol->every);
		break;
	case SL_PERSIST_SYNC_INTERVAL:
		snprintf(buf, len, "ms:%u", pol->interval_ms);
		break;
	default:
		snprintf(buf, len, "always");
		break;
	}
	return buf;
}

/* ---- stores ---- */

#define REPLAY_CRECS 1024
#define REPLAY_BUF (4u << 20)

/* Writing what a killed process left in the memory log file to the disk log. */
struct replay {
	struct sl_disklog *dl;
	uint8_t *buf;
	size_t cap;
	size_t used;
	struct sl_crec crecs[REPLAY_CRECS];
	uint32_t ncrec;
	uint64_t epoch;			/* of the disk log's last commit record */
	uint32_t grp_n;			/* messages of the PUB/MPUB being built */
	size_t grp_start;
	uint64_t grp_first;
	uint64_t grp_off;
	uint64_t grp_ts;
};

static int
replay_flush(struct replay *r)
{
	int rc = 0;

	if (r->ncrec > 0)
		rc = sl_disklog_write(r->dl, r->buf, r->crecs, r->ncrec);
	r->used = 0;
	r->ncrec = 0;
	return rc;
}

/* One message of the scan (sl_memlog_scan_fn): whole PUB/MPUBs become commit records. */
static int
replay_msg(void *arg, const struct sl_memlog_rec *m)
{
	struct replay *r = arg;
	size_t need = SL_DISKLOG_MREC_SIZE(m->len);
	struct sl_crec *c;
	int rc;

	if (r->grp_n == 0 && (r->ncrec == REPLAY_CRECS || r->cap - r->used < need)) {
		rc = replay_flush(r);
		if (rc != 0)
			return rc;
	}
	if (r->cap - r->used < need) {
		/* one MPUB larger than the buffer */
		size_t cap = r->used + need + REPLAY_BUF;
		uint8_t *b = realloc(r->buf, cap);

		if (b == NULL)
			return -ENOMEM;
		r->buf = b;
		r->cap = cap;
	}
	if (r->grp_n == 0) {
		r->grp_first = m->id;
		r->grp_off = m->offset;
		r->grp_ts = m->timestamp_ns;
		r->grp_start = r->used;
	}
	r->used += sl_disklog_encode_msg(r->buf + r->used, m->id, m->timestamp_ns, m->trace_id,
					 m->data, m->len, m->batch_left == 0);
	r->grp_n++;
	if (m->batch_left != 0)
		return 0;
	c = &r->crecs[r->ncrec++];
	c->log_id = r->grp_first;
	c->epoch = r->epoch;
	c->last_msg_log_id = m->id;
	c->msg_offset = r->grp_off;
	c->msg_cnt = m->id;
	c->timestamp_ns = r->grp_ts;
	c->msg_size = (uint32_t)(r->used - r->grp_start);
	c->msg_num = r->grp_n;
	r->grp_n = 0;
	return 0;
}

/*
 * Memory durability: open the file behind the in-memory log and write to the disk log
 * (then sync) every whole PUB/MPUB a killed process of this boot left there beyond the
 * disk log's end. 0 or a negative errno; *trusted: the file was of this boot and intact.
 */
static int
mem_replay(struct sl_pstore *ps, const char *dir, int *trusted)
{
	struct sl_memfile_conf mc = {.dir = dir, .partition = ps->partition};
	struct sl_memlog_conf lc;
	struct sl_disklog_stats ds;
	struct replay *r = NULL;
	struct sl_crec last;
	int64_t n;
	int rc = 0;

	ps->mf = sl_memfile_open(&mc);
	if (ps->mf == NULL)
		return -errno;
	memset(&lc, 0, sizeof(lc));
	*trusted = 0;
	if (!sl_memfile_prev(ps->mf, (const void **)&lc.mem, &lc.mem_len, &lc.avg_msg_hint,
			     &lc.idx_base))
		return 0;
	*trusted = 1;
	r = calloc(1, sizeof(*r));
	if (r == NULL || (r->buf = malloc(REPLAY_BUF)) == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	r->cap = REPLAY_BUF;
	r->dl = ps->dl;
	if (sl_disklog_last(ps->dl, &last) == 0)
		r->epoch = last.epoch;
	sl_disklog_get_stats(ps->dl, &ds);
	lc.start_offset = ds.end_offset;
	n = sl_memlog_scan(&lc, ds.end_id + 1, replay_msg, r);
	if (n < 0) {
		rc = (int)n;
		goto out;
	}
	rc = replay_flush(r);
	if (rc == 0 && n > 0)
		rc = sl_disklog_sync(ps->dl);
	if (rc == 0 && n > 0)
		rc = sl_disklog_checkpoint(ps->dl);
	if (rc == 0 && n > 0) {
		ps->mem_replayed = (uint64_t)n;
		PLOG(NOTICE, "%s/%u: %" PRId64 " message(s) (ids %" PRIu64 "..%" PRIu64 ") "
		     "acknowledged before the last process was killed, not yet on disk, taken "
		     "back from the memory log file\n", ps->topic, ps->partition, n,
		     ds.end_id + 1, ds.end_id + (uint64_t)n);
	}
out:
	if (r != NULL)
		free(r->buf);
	free(r);
	return rc;
}

/*
 * Memory durability, after mem_replay: when the memory log file could not tell what the
 * last process acknowledged (trusted 0) and the id mark is past the disk log's end, the
 * ids in between may have been acknowledged and are gone: record them as a lost range,
 * so that they are never given to other bodies. Then move the mark a step past the next
 * id. 0 or a negative errno.
 */
#define MARK_GAP_MAX (UINT64_C(1) << 40)	/* an id mark further past the disk end is forged */

static int
id_gap(struct sl_pstore *ps, int trusted)
{
	struct sl_disklog_stats ds;
	uint64_t mark = ps->rec.id_mark, next;
	int rc;

	sl_disklog_get_stats(ps->dl, &ds);
	next = ds.end_id + 1;
	if (!trusted && mark > next && mark - next > MARK_GAP_MAX) {
		/* the idmark file is the node's own (owner-only in the data dir), but a forged
		 * or corrupted one must not make numbering jump to near 2^64 */
		PLOG(ERR, "%s/%u: the id mark file says %" PRIu64 ", %" PRIu64 " ids past the "
		     "disk log's end (%" PRIu64 "): more than a process can have acknowledged "
		     "(at most 2^40 past it); not a mark sluiced wrote: the partition is not "
		     "opened (check the data dir, remove the partition's idmark file to go on "
		     "without it)\n", ps->topic, ps->partition, mark, mark - next, next - 1);
		return -EBADMSG;
	}
	if (!trusted && mark > next) {
		PLOG(WARNING, "%s/%u: ids %" PRIu64 "..%" PRIu64 " may have been acknowledged "
		     "and are not on disk (the memory log file is missing, torn or of another "
		     "boot: a machine crash lost what was not synced); they are recorded as "
		     "lost and never given to other messages: the partition continues at id "
		     "%" PRIu64 "\n", ps->topic, ps->partition, next, mark - 1, mark);
		rc = sl_disklog_skip(ps->dl, mark);
		if (rc != 0)
			return rc;
		ps->lost_from = next;
		ps->lost_to = mark - 1;
		next = mark;
	}
	rc = sl_disklog_mark(ps->dl, next + SL_PERSIST_MARK_STEP);
	if (rc != 0)
		return rc;
	ps->id_mark = next + SL_PERSIST_MARK_STEP;
	return 0;
}

static void
set_error(struct sl_pstore *ps, int rc);

/* Persistence lcore: move the id mark of a memory-durability partition a step past the
 * next id (or the worker's log end, which runs ahead of the descriptors taken, when it
 * asked: sl_pstore_mark_need) once it is less than half a step ahead. A failure leaves
 * it (the worker then refuses publishes with SL_E_FULL) and is tried again. */
static void
mark_check(struct sl_pstore *ps)
{
	uint64_t m, base = RTE_MAX(ps->next_id, __atomic_load_n(&ps->mark_want,
								   __ATOMIC_ACQUIRE));

	if (ps->pol.durability != SL_PERSIST_MEMORY || ps->error != 0 ||
	    base + SL_PERSIST_MARK_STEP / 2 < ps->id_mark)
		return;
	m = base + SL_PERSIST_MARK_STEP;
	if (sl_disklog_mark(ps->dl, m) != 0) {
		if (sl_disklog_error(ps->dl) != 0)
			set_error(ps, sl_disklog_error(ps->dl));
		return;
	}
	__atomic_store_n(&ps->id_mark, m, __ATOMIC_RELEASE);
}

/* A buffer reserved as address space (anonymous, MAP_NORESERVE): pages come on first use. */
static void *
lazy_buf(size_t len)
{
	void *m = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	return m == MAP_FAILED ? NULL : m;
}

static void
lazy_buf_free(void *m, size_t len)
{
	if (m != NULL)
		munmap(m, len);
}

struct sl_pstore *
sl_pstore_open(const char *dir, const char *topic, uint32_t partition,
	       const struct sl_persist_policy *pol, uint64_t segment_bytes)
{
	struct sl_disklog_conf dc = {
		.dir = dir,
		.partition = partition,
		.segment_bytes = segment_bytes,
		.prealloc_bytes = SL_DISKLOG_PREALLOC_DEFAULT,
	};
	struct sl_disklog_stats ds;
	struct sl_pstore *ps;
	int err = ENOMEM;

	if (dir == NULL || topic == NULL || pol == NULL) {
		rte_errno = EINVAL;
		return NULL;
	}
	ps = rte_zmalloc("sl_pstore", sizeof(*ps), RTE_CACHE_LINE_SIZE);
	if (ps == NULL)
		goto fail;
	/* reserved, not populated: a store that never reads back costs no memory for them
	 * (thousands of partitions per node) */
	ps->fetch.buf = lazy_buf(SL_PERSIST_FETCH_BYTES);
	ps->fetch.msgs = lazy_buf(SL_PERSIST_FETCH_MSGS * sizeof(*ps->fetch.msgs));
	ps->rread.buf = lazy_buf(SL_PERSIST_FETCH_BYTES);
	ps->rread.crecs = lazy_buf(SL_PERSIST_RREAD_RECS * sizeof(*ps->rread.crecs));
	if (ps->fetch.buf == NULL || ps->fetch.msgs == NULL || ps->rread.buf == NULL ||
	    ps->rread.crecs == NULL)
		goto fail;
	ps->pol = *pol;
	ps->partition = partition;
	snprintf(ps->topic, sizeof(ps->topic), "%s", topic);
	ps->dir = strdup(dir);
	if (ps->dir == NULL)
		goto fail;
	ps->dl = sl_disklog_open(&dc, &ps->rec);
	if (ps->dl == NULL) {
		err = errno;
		PLOG(ERR, "%s/%u: cannot open the disk log in %s: %s\n", topic, partition, dir,
		     sl_strerror(err));
		goto fail;
	}
	if (strcmp(ps->rec.what, "clean") != 0)
		PLOG(WARNING, "%s/%u: recovery: %s\n", topic, partition, ps->rec.what);
	ps->id_mark = UINT64_MAX;
	if (pol->durability == SL_PERSIST_MEMORY) {
		int trusted = 0;

		err = mem_replay(ps, dir, &trusted);
		if (err != 0) {
			PLOG(ERR, "%s/%u: the memory log file in %s: %s\n", topic, partition,
			     dir, sl_strerror(err));
			err = -err;
			goto fail;
		}
		err = id_gap(ps, trusted);
		if (err != 0) {
			PLOG(ERR, "%s/%u: the id mark in %s: %s\n", topic, partition, dir,
			     sl_strerror(err));
			err = -err;
			goto fail;
		}
	}
	sl_disklog_get_stats(ps->dl, &ds);
	ps->written_id = ds.end_id;
	ps->durable_id = ds.end_id;
	ps->disk_first_id = ds.first_id;
	ps->next_id = ds.end_id + 1;
	ps->last_ckpt_id = ds.end_id;
	/* no error handled yet: not even generation 0's, so a resume waits for the
	 * worker's acknowledgement of the first error too */
	ps->err_ack = UINT32_MAX;
	return ps;
fail:
	sl_pstore_close(ps);
	rte_errno = err;
	return NULL;
}

void *
sl_pstore_log_mem(struct sl_pstore *ps, uint64_t len, uint32_t hint)
{
	void *m;

	if (ps->mf == NULL) {
		rte_errno = EINVAL;
		return NULL;
	}
	m = sl_memfile_map(ps->mf, len, hint);
	if (m == NULL) {
		rte_errno = errno;
		PLOG(ERR, "%s/%u: cannot map the memory log file (%" PRIu64 " bytes): %s\n",
		     ps->topic, ps->partition, len, sl_strerror(rte_errno));
	}
	return m;
}

/* ---- the producer table's file (memory durability) ---- */

#define PT_FILE "producers.shm"
#define PT_HDR 4096u
#define PT_VERSION 1u
#define PT_BOOT 37		/* the boot id's 36 characters and a NUL */
static const char PT_MAGIC[8] = {'S', 'L', 'P', 'R', 'O', 'D', 'S', 'H'};

/* This boot's id as text (/proc/sys/kernel/random/boot_id), all zero when unknown. */
static void
boot_text(char *out)
{
	FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");

	memset(out, 0, PT_BOOT);
	if (f == NULL)
		return;
	if (fread(out, 1, PT_BOOT - 1, f) != PT_BOOT - 1)
		memset(out, 0, PT_BOOT);
	fclose(f);
}

/* Calling context: control thread, at the partition's open. */
void *
sl_pstore_ptab_mem(struct sl_pstore *ps, size_t len, void *prev, int *had)
{
	char path[PATH_MAX], boot[PT_BOOT], why[96] = "";
	uint8_t h[64];
	struct stat st;
	uint8_t *m;
	ssize_t got;
	int fd = -1, err;

	*had = 0;
	if (ps == NULL || ps->dir == NULL || ps->pol.durability != SL_PERSIST_MEMORY ||
	    len == 0 || len > (64u << 20) || prev == NULL || ps->pt_map != NULL) {
		rte_errno = EINVAL;
		return NULL;
	}
	snprintf(path, sizeof(path), "%s/%s", ps->dir, PT_FILE);
	boot_text(boot);
	/* not through a link, and only a regular file: it is truncated and mapped */
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0644);
	if (fd < 0)
		goto fail;
	if (fstat(fd, &st) != 0)
		goto fail;
	if (!S_ISREG(st.st_mode)) {
		errno = EINVAL;
		snprintf(why, sizeof(why), "not a regular file");
		goto fail;
	}
	/* what a process of this boot left: trusted (a kill keeps the page cache); anything
	 * else is said and not used (the table comes from the commit log alone) */
	got = st.st_size == 0 ? 0 : pread(fd, h, sizeof(h), 0);
	if (got == 0) {
		/* a new file: nothing to say */
	} else if (got != (ssize_t)sizeof(h) || memcmp(h, PT_MAGIC, 8) != 0)
		snprintf(why, sizeof(why), "not a producer table file");
	else if (sl_bytes_get_le32(h + 8) != PT_VERSION)
		snprintf(why, sizeof(why), "version %u, not %u", sl_bytes_get_le32(h + 8),
			 PT_VERSION);
	else if (sl_bytes_get_le64(h + 16) != len)
		snprintf(why, sizeof(why), "a table of %" PRIu64 " bytes, not %zu",
			 sl_bytes_get_le64(h + 16), len);
	else if (boot[0] == 0)
		snprintf(why, sizeof(why), "this boot's id is unknown");
	else if (memcmp(h + 24, boot, PT_BOOT) != 0)
		snprintf(why, sizeof(why), "written before this boot");
	else if ((got = pread(fd, prev, len, PT_HDR)) != (ssize_t)len)
		snprintf(why, sizeof(why), "truncated: %zd of %zu table bytes",
			 got < 0 ? (ssize_t)0 : got, len);
	else
		*had = 1;
	if (why[0] != 0)	/* another boot's: expected after a restart of the machine */
		rte_log(strcmp(why, "written before this boot") == 0 ? RTE_LOG_INFO :
			RTE_LOG_WARNING, sl_persist_logtype, "persist: %s/%u: %s: %s: not used "
			"(the producer table comes from the commit log)\n", ps->topic,
			ps->partition, path, why);
	if (ftruncate(fd, (off_t)(PT_HDR + len)) != 0)
		goto fail;
	m = mmap(NULL, PT_HDR + len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED)
		goto fail;
	close(fd);
	memset(m, 0, PT_HDR + len);	/* every page faulted in for writing now */
	memcpy(m, PT_MAGIC, 8);
	sl_bytes_put_le32(m + 8, PT_VERSION);
	sl_bytes_put_le64(m + 16, len);
	memcpy(m + 24, boot, PT_BOOT);
	ps->pt_map = m;
	ps->pt_len = PT_HDR + len;
	return m + PT_HDR;
fail:
	err = errno;
	if (fd >= 0)
		close(fd);
	PLOG(ERR, "%s/%u: the producer table file %s: %s\n", ps->topic, ps->partition, path,
	     why[0] != 0 ? why : strerror(err));
	rte_errno = err;
	return NULL;
}

uint64_t *
sl_pstore_log_base(struct sl_pstore *ps)
{
	return ps->mf != NULL ? sl_memfile_base(ps->mf) : NULL;
}

int
sl_pstore_log_prepare(struct sl_pstore *ps, uint64_t off, uint64_t len)
{
	int rc = ps->mf != NULL ? sl_memfile_prepare(ps->mf, off, len) : -EINVAL;

	if (rc != 0 && !ps->grow_err_logged) {
		ps->grow_err_logged = 1;
		PLOG(ERR, "%s/%u: cannot grow the memory log file by %" PRIu64 " bytes: %s "
		     "(the log stays at its size: publishes beyond it are refused full)\n",
		     ps->topic, ps->partition, len, sl_strerror(-rc));
	}
	return rc;
}

void
sl_pstore_close(struct sl_pstore *ps)
{
	if (ps == NULL)
		return;
	/* the worker and the persistence lcore are done with it: nothing past the in-memory
	 * log's end (the disk log's, when no log was ever attached: open already put it past
	 * every id an earlier run may have acknowledged) was acknowledged, so a machine crash
	 * after this clean stop records no lost range (a failure keeps the higher mark) */
	if (ps->dl != NULL && ps->pol.durability == SL_PERSIST_MEMORY &&
	    ps->id_mark != UINT64_MAX) {
		struct sl_disklog_stats ds;
		uint64_t end;

		sl_disklog_get_stats(ps->dl, &ds);
		end = ps->log != NULL ? sl_memlog_end_id(ps->log) : ds.end_id;
		if (end + 1 < ps->id_mark)
			sl_disklog_mark(ps->dl, end + 1);
	}
	sl_memfile_close(ps->mf);
	if (ps->pt_map != NULL)
		munmap(ps->pt_map, ps->pt_len);
	free(ps->dir);
	if (ps->dl != NULL)
		sl_disklog_close(ps->dl);
	lazy_buf_free(ps->fetch.buf, SL_PERSIST_FETCH_BYTES);
	lazy_buf_free(ps->fetch.msgs, SL_PERSIST_FETCH_MSGS * sizeof(*ps->fetch.msgs));
	lazy_buf_free(ps->rread.buf, SL_PERSIST_FETCH_BYTES);
	lazy_buf_free(ps->rread.crecs, SL_PERSIST_RREAD_RECS * sizeof(*ps->rread.crecs));
	rte_free(ps);
}

void
sl_pstore_chan_set(struct sl_pstore *ps, uint32_t slot, const char *name, uint32_t cflags,
		   uint64_t confirmed_id)
{
	struct sl_pchan *c = &ps->chans[slot];
	uint32_t flags = (cflags & (SL_DISKLOG_CHAN_ORDERED | SL_DISKLOG_CHAN_ANON)) | (1u << 31);

	if (slot >= SL_PERSIST_MAX_CHANS)
		return;
	if (c->confirmed_id == confirmed_id && c->flags == flags &&
	    strncmp(c->name, name, sizeof(c->name)) == 0)
		return;
	__atomic_store_n(&c->seq, c->seq + 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	c->flags = flags;
	c->confirmed_id = confirmed_id;
	snprintf(c->name, sizeof(c->name), "%s", name);
	__atomic_store_n(&c->seq, c->seq + 1, __ATOMIC_RELEASE);
}

void
sl_pstore_chan_clear(struct sl_pstore *ps, uint32_t slot)
{
	struct sl_pchan *c = &ps->chans[slot];

	if (slot >= SL_PERSIST_MAX_CHANS || c->flags == 0)
		return;
	__atomic_store_n(&c->seq, c->seq + 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	c->flags = 0;
	__atomic_store_n(&c->seq, c->seq + 1, __ATOMIC_RELEASE);
}

/* ---- the persistence lcore ---- */

/* Wake the lcore if it blocks or naps on its bell (or is about to), after the caller's
 * enqueue: block() and nap() arm the bell before their last look at the rings (bell.h).
 * One eventfd write per sleep, none per publish while the lcore runs. */
static inline void
wake(struct sl_persist *p)
{
	sl_bell_ring(&p->bell);
}

static void
set_error(struct sl_pstore *ps, int rc)
{
	if (ps->error != 0)
		return;
	PLOG(ERR, "%s/%u: storage error: %s; publishes to it now fail with SL_E_IO until "
	     "`sluicectl storage resume %s`\n", ps->topic, ps->partition, sl_strerror(rc),
	     ps->topic);
	__atomic_store_n(&ps->error, rc < 0 ? rc : -EIO, __ATOMIC_RELEASE);
}

static void
mark_dirty(struct sl_persist *p, struct sl_pstore *ps)
{
	if (ps->dirty)
		return;
	ps->dirty = 1;
	p->dirty[p->ndirty++] = ps;
}

/* Write the run built in the staging buffer with one disklog call. */
static void
flush_run(struct sl_persist *p)
{
	struct sl_pstore *ps = p->run_ps;
	int rc;

	if (ps == NULL || p->run_ncrec == 0)
		goto out;
	rc = sl_disklog_write(ps->dl, p->buf, p->crecs, p->run_ncrec);
	if (rc != 0) {
		set_error(ps, rc);
		goto out;
	}
	p->st.writes++;
	p->st.records += p->run_ncrec;
	p->st.msgs += p->run_msgs;
	p->st.bytes += p->run_used;
	ps->unsynced += p->run_msgs;
	__atomic_store_n(&ps->written_id, p->run_last_id, __ATOMIC_RELEASE);
	mark_dirty(p, ps);
out:
	p->run_ps = NULL;
	p->run_used = 0;
	p->run_ncrec = 0;
	p->run_msgs = 0;
}

/* Cut the disk log after end_id (written run first), and the positions with it. */
static void
take_truncate(struct sl_persist *p, struct sl_pstore *ps, uint64_t end_id)
{
	int rc;

	flush_run(p);
	if (ps->error != 0 || end_id + 1 >= ps->next_id)
		return;
	rc = sl_disklog_truncate(ps->dl, end_id);
	if (rc != 0) {
		set_error(ps, rc);
		return;
	}
	ps->next_id = end_id + 1;
	if (ps->written_id > end_id)
		__atomic_store_n(&ps->written_id, end_id, __ATOMIC_RELEASE);
	if (ps->durable_id > end_id)
		__atomic_store_n(&ps->durable_id, end_id, __ATOMIC_RELEASE);
	ps->truncates++;
}

/*
 * Restart the disk log empty at (first_id, first_offset) (written run first), and the
 * positions with it: written_id and durable_id become first_id - 1, which may be below or
 * above what they were.
 */
static void
take_reset(struct sl_persist *p, struct sl_pstore *ps, uint64_t first_id,
	   uint64_t first_offset)
{
	int rc;

	flush_run(p);
	if (ps->error != 0)
		return;
	rc = sl_disklog_reset(ps->dl, first_id, first_offset);
	if (rc != 0) {
		set_error(ps, rc);
		return;
	}
	ps->next_id = first_id;
	ps->unsynced = 0;
	ps->last_ckpt_id = first_id - 1;	/* the reset wrote the checkpoint */
	__atomic_store_n(&ps->written_id, first_id - 1, __ATOMIC_RELEASE);
	__atomic_store_n(&ps->durable_id, first_id - 1, __ATOMIC_RELEASE);
	__atomic_store_n(&ps->disk_first_id, first_id, __ATOMIC_RELEASE);
	ps->resets++;
	PLOG(NOTICE, "%s/%u: disk log reset: it restarts empty at id %" PRIu64 ", offset %"
	     PRIu64 "\n", ps->topic, ps->partition, first_id, first_offset);
}

/*
 * Is the append of ids .. last_id cut by a truncation or reset posted after it (all those
 * not taken yet: the ring is in order)? Then its messages may be gone from memory or be
 * other ones already. Checked after the copy, so a cut made during it is seen too.
 */
static int
append_stale(const struct sl_pstore *ps, uint64_t last_id)
{
	uint32_t i, posted = __atomic_load_n(&ps->trunc_posted, __ATOMIC_ACQUIRE);

	for (i = ps->trunc_taken; i != posted; i++)
		if (ps->trunc_end[i % SL_PERSIST_TRUNC_PEND] < last_id)
			return 1;
	return 0;
}

/* Copy one descriptor's records out of the worker's in-memory log into the run. */
static void
take_desc(struct sl_persist *p, const struct desc *d)
{
	struct sl_pstore *ps = d->ps;
	uint64_t last_id = d->first_id + d->n - 1;
	struct sl_crec *c;
	struct sl_memlog_rec r;
	uint32_t i, size = 0;
	int peek_failed = 0;

	if (d->n == DESC_TRUNCATE || d->n == DESC_RESET)
		__atomic_store_n(&ps->trunc_taken, ps->trunc_taken + 1, __ATOMIC_RELEASE);
	if (__atomic_load_n(&ps->error, __ATOMIC_RELAXED) != 0 || d->gen != ps->gen) {
		ps->dropped++;
		return;
	}
	if (d->n == DESC_TRUNCATE) {
		take_truncate(p, ps, d->first_id - 1);
		return;
	}
	if (d->n == DESC_RESET) {
		take_reset(p, ps, d->first_id, d->offset);
		mark_check(ps);
		return;
	}
	if (append_stale(ps, last_id)) {
		ps->stale++;
		return;
	}
	if (d->first_id != ps->next_id) {
		ps->dropped++;
		PLOG(ERR, "%s/%u: descriptor for id %" PRIu64 ", expected %" PRIu64 "\n",
		     ps->topic, ps->partition, d->first_id, ps->next_id);
		set_error(ps, -SL_E_INTERNAL);
		return;
	}
	if (p->run_ps != ps || p->run_ncrec == MAX_CRECS || p->buf_len - p->run_used < RUN_SLACK)
		flush_run(p);
	if (ps->error != 0)
		return;
	p->run_ps = ps;
	c = &p->crecs[p->run_ncrec];
	for (i = 0; i < d->n; i++) {
		if (sl_memlog_peek(ps->log, d->first_id + i, &r) != 0 ||
		    p->buf_len - p->run_used - size < SL_DISKLOG_MREC_SIZE(r.len)) {
			peek_failed = 1;
			break;
		}
		if (i == 0)
			c->timestamp_ns = r.timestamp_ns;
		size += sl_disklog_encode_msg(p->buf + p->run_used + size, r.id, r.timestamp_ns,
					      r.trace_id, r.data, r.len, i == d->n - 1);
	}
	/* the copy is kept only if no cut came while it was made (nothing is committed to
	 * the run before this point) */
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	if (append_stale(ps, last_id)) {
		ps->stale++;
		return;
	}
	if (peek_failed) {
		set_error(ps, -SL_E_INTERNAL);
		return;
	}
	c->log_id = d->first_id;
	c->epoch = d->epoch;
	c->last_msg_log_id = d->first_id + d->n - 1;
	c->msg_offset = d->offset;
	c->msg_cnt = c->last_msg_log_id;
	c->msg_size = size;
	c->msg_num = d->n;
	c->producer = d->producer;
	c->pseq = d->producer != 0 ? d->pseq : 0;
	p->run_used += size;
	p->run_ncrec++;
	p->run_msgs += d->n;
	p->run_last_id = c->last_msg_log_id;
	ps->next_id = c->last_msg_log_id + 1;
	mark_check(ps);
}

/* Sync latency bucket bounds, us: 25 us .. 2.5 s in 1-2.5-5 steps (and 25 us). */
static const uint32_t sync_bucket_us[SL_PERSIST_SYNC_BUCKETS] = {
	25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 25000, 50000, 100000, 250000, 500000,
	1000000, 2500000,
};

uint64_t
sl_persist_sync_bucket_ns(unsigned int i)
{
	return i < SL_PERSIST_SYNC_BUCKETS ? (uint64_t)sync_bucket_us[i] * 1000 : UINT64_MAX;
}

/* Count one sync of ns nanoseconds (the persistence lcore: the stats' only writer). */
static void
sync_account(struct sl_persist *p, uint64_t ns)
{
	unsigned int i = 0;

	while (i < SL_PERSIST_SYNC_BUCKETS && ns > (uint64_t)sync_bucket_us[i] * 1000)
		i++;
	p->st.sync_hist[i]++;
	p->st.sync_ns += ns;
	if (ns > p->st.sync_max_ns)
		p->st.sync_max_ns = ns;
	p->st.syncs++;
}

static void
sync_store(struct sl_persist *p, struct sl_pstore *ps, uint64_t now)
{
	uint64_t written = ps->written_id, t0;
	int rc;

	if (ps->error != 0)
		return;
	t0 = mono_ns();
	rc = sl_disklog_sync(ps->dl);
	if (rc != 0) {
		set_error(ps, rc);
		return;
	}
	sync_account(p, mono_ns() - t0);
	ps->unsynced = 0;
	ps->last_sync_ns = now;
	__atomic_store_n(&ps->durable_id, written, __ATOMIC_RELEASE);
}

/* Sync the partitions whose policy says so; keep the others on the dirty list. */
static void
sync_pass(struct sl_persist *p, uint64_t now, int all)
{
	uint32_t i = 0;

	while (i < p->ndirty) {
		struct sl_pstore *ps = p->dirty[i];

		if (ps->error == 0 && !all &&
		    !sl_persist_sync_due(&ps->pol, ps->unsynced, now - ps->last_sync_ns)) {
			i++;
			continue;
		}
		sync_store(p, ps, now);
		ps->dirty = 0;
		p->dirty[i] = p->dirty[--p->ndirty];
	}
}

static void
try_resume(struct sl_pstore *ps)
{
	struct sl_disklog_stats ds;
	int rc;

	if (__atomic_load_n(&ps->err_ack, __ATOMIC_ACQUIRE) != ps->gen)
		return;	/* the worker has not rolled back yet: next period */
	__atomic_store_n(&ps->resume_req, 0, __ATOMIC_RELAXED);
	rc = sl_disklog_resume(ps->dl);
	if (rc != 0) {
		PLOG(ERR, "%s/%u: resume failed: %s\n", ps->topic, ps->partition,
		     sl_strerror(rc));
		return;
	}
	sl_disklog_get_stats(ps->dl, &ds);
	ps->next_id = ds.end_id + 1;
	ps->unsynced = 0;
	__atomic_store_n(&ps->written_id, ds.end_id, __ATOMIC_RELEASE);
	__atomic_store_n(&ps->durable_id, ds.end_id, __ATOMIC_RELEASE);
	/* a resume may have completed a failed reset: the disk log may start elsewhere */
	__atomic_store_n(&ps->disk_first_id, ds.first_id, __ATOMIC_RELEASE);
	__atomic_store_n(&ps->gen, ps->gen + 1, __ATOMIC_RELEASE);
	__atomic_store_n(&ps->error, 0, __ATOMIC_RELEASE);
	ps->resumes++;
	PLOG(NOTICE, "%s/%u: resumed at id %" PRIu64 "\n", ps->topic, ps->partition, ds.end_id);
}

/* Save the channel positions when any changed (sequence-lock snapshot). */
static void
save_chans(struct sl_pstore *ps)
{
	struct sl_disklog_chan out[SL_PERSIST_MAX_CHANS];
	uint32_t i, n = 0, sum = 0;

	for (i = 0; i < SL_PERSIST_MAX_CHANS; i++)
		sum += __atomic_load_n(&ps->chans[i].seq, __ATOMIC_ACQUIRE);
	if (sum == ps->chan_seqsum)
		return;
	for (i = 0; i < SL_PERSIST_MAX_CHANS; i++) {
		struct sl_pchan *c = &ps->chans[i];
		struct sl_disklog_chan tmp;
		uint32_t s1, s2;

		do {
			s1 = __atomic_load_n(&c->seq, __ATOMIC_ACQUIRE);
			tmp.flags = c->flags;
			tmp.confirmed_id = c->confirmed_id;
			memcpy(tmp.name, c->name, sizeof(tmp.name));
			__atomic_thread_fence(__ATOMIC_ACQUIRE);
			s2 = __atomic_load_n(&c->seq, __ATOMIC_RELAXED);
		} while ((s1 & 1) || s1 != s2);
		if (!(tmp.flags & (1u << 31)))
			continue;
		tmp.flags &= SL_DISKLOG_CHAN_ORDERED | SL_DISKLOG_CHAN_ANON;
		tmp.name[SL_DISKLOG_CHAN_NAME_MAX] = '\0';
		/* a position past the durable end would skip messages after a crash */
		if (tmp.confirmed_id > ps->durable_id + 1)
			tmp.confirmed_id = ps->durable_id + 1;
		out[n++] = tmp;
	}
	if (sl_disklog_chan_save(ps->dl, out, n) == 0)
		ps->chan_seqsum = sum;
}

static void
retain(struct sl_pstore *ps, uint64_t now_wall)
{
	struct sl_disklog_retention r = {
		.max_bytes = ps->pol.retain_bytes,
		.max_age_ns = ps->pol.retain_age_s * 1000000000ull,
		.now_ns = now_wall,
	};
	struct sl_disklog_retain_res res = {0};
	struct sl_disklog_stats ds;

	if (r.max_bytes == 0 && r.max_age_ns == 0)
		return;
	if (ps->pol.retain_unconsumed)
		r.keep_from_id = __atomic_load_n(&ps->keep_from_id, __ATOMIC_ACQUIRE);
	sl_disklog_retain(ps->dl, &r, &res);
	/* removals add up over the run; what is held back is the latest verdict */
	ps->retain.removed_segments += res.removed_segments;
	ps->retain.removed_bytes += res.removed_bytes;
	ps->retain.held_bytes = res.held_bytes;
	ps->retain.held_from_id = res.held_from_id;
	sl_disklog_get_stats(ps->dl, &ds);
	__atomic_store_n(&ps->disk_first_id, ds.first_id, __ATOMIC_RELEASE);
}

static void
periodic(struct sl_persist *p, uint64_t now)
{
	int ckpt = now >= p->next_ckpt, ret = now >= p->next_retain;
	uint64_t wall = wall_ns();
	uint32_t i;

	for (i = 0; i < p->nstores; i++) {
		struct sl_pstore *ps = p->stores[i];

		if (__atomic_load_n(&ps->error, __ATOMIC_RELAXED) != 0) {
			if (__atomic_load_n(&ps->resume_req, __ATOMIC_ACQUIRE))
				try_resume(ps);
			continue;
		}
		save_chans(ps);
		mark_check(ps);
		/* the commit logs every 100 ms, so that the checkpoint's sync is short: synced
		 * once a second, a second of commit records took 15-22 ms to sync on the bench
		 * machine, and no publish was answered meanwhile (durable publishers resent
		 * their windows after 20 ms); now 2.6-3.5 ms a checkpoint (2026-11-29) */
		if (!ckpt && ps->durable_id != ps->last_ckpt_id) {
			uint64_t t0 = mono_ns(), ns;

			sl_disklog_sync_clogs(ps->dl);
			ns = mono_ns() - t0;
			p->st.clog_syncs++;
			p->st.clog_sync_max_ns = RTE_MAX(p->st.clog_sync_max_ns, ns);
		}
		if (ckpt && ps->durable_id != ps->last_ckpt_id) {
			uint64_t t0 = mono_ns(), ns;

			if (sl_disklog_checkpoint(ps->dl) == 0)
				ps->last_ckpt_id = ps->durable_id;
			ns = mono_ns() - t0;
			p->st.ckpts++;
			p->st.ckpt_ns += ns;
			p->st.ckpt_max_ns = RTE_MAX(p->st.ckpt_max_ns, ns);
		}
		if (ret)
			retain(ps, wall);
	}
	p->next_periodic = now + PERIODIC_NS;
	if (ckpt)
		p->next_ckpt = now + CKPT_NS;
	if (ret)
		p->next_retain = now + RETAIN_NS;
}

/* Write everything queued in the rings. Returns descriptors taken. */
static uint32_t
drain(struct sl_persist *p)
{
	struct desc d[DESC_BURST];
	uint32_t i, j, got, n = 0;

	for (i = 0; i < p->conf.nsources; i++) {
		got = rte_ring_sc_dequeue_burst_elem(p->rings[i], d, sizeof(d[0]), DESC_BURST,
						     NULL);
		for (j = 0; j < got; j++)
			take_desc(p, &d[j]);
		n += got;
	}
	flush_run(p);
	return n;
}

static void
detach(struct sl_persist *p, struct sl_pstore *ps)
{
	uint32_t i;

	while (drain(p) > 0)
		;
	if (ps->dirty) {
		sync_store(p, ps, mono_ns());
		for (i = 0; i < p->ndirty; i++)
			if (p->dirty[i] == ps)
				p->dirty[i] = p->dirty[--p->ndirty];
		ps->dirty = 0;
	}
	if (ps->error == 0) {
		save_chans(ps);
		sl_disklog_checkpoint(ps->dl);
	}
	for (i = 0; i < p->nstores; i++)
		if (p->stores[i] == ps)
			p->stores[i] = p->stores[--p->nstores];
}

static uint32_t
poll_cmds(struct sl_persist *p)
{
	void *obj = NULL;
	uint32_t n = 0;

	while (rte_ring_sc_dequeue(p->cmds, &obj) == 0) {
		struct cmd *c = obj;

		if (c->op == CMD_ATTACH) {
			if (p->nstores == MAX_STORES) {
				c->result = -SL_E_LIMIT;
			} else {
				c->ps->last_sync_ns = mono_ns();
				p->stores[p->nstores++] = c->ps;
				c->result = 0;
			}
		} else {
			detach(p, c->ps);
			c->result = 0;
		}
		__atomic_store_n(&c->done, 1, __ATOMIC_RELEASE);
		n++;
	}
	return n;
}

/* Is anything queued for the lcore (descriptors of any source, commands)? */
static int
pending(const struct sl_persist *p)
{
	uint32_t i;

	for (i = 0; i < p->conf.nsources; i++)
		if (rte_ring_count(p->rings[i]) > 0)
			return 1;
	return rte_ring_count(p->cmds) > 0;
}

/* When the next timed work is due: the periodic pass, or the timed sync of a partition
 * with written, unsynced data (sl_persist_sync_wait_ns after its last sync). */
static uint64_t
next_due(const struct sl_persist *p)
{
	uint64_t due = p->next_periodic;
	uint32_t i;

	for (i = 0; i < p->ndirty; i++)
		if (p->dirty[i]->error == 0)
			due = RTE_MIN(due, p->dirty[i]->last_sync_ns +
					       sl_persist_sync_wait_ns(&p->dirty[i]->pol));
	return due;
}

/* Deep idle: block on the bell until a submit or a command rings it, or the next timed
 * work is due (sl_persist_close rings it too). Offline for RCU while blocked. */
static void
block(struct sl_persist *p, uint64_t now)
{
	uint64_t due;

	sl_bell_arm(&p->bell);
	due = next_due(p);
	if (!pending(p) && due > now && !__atomic_load_n(&sl_broker_quit, __ATOMIC_RELAXED)) {
		rcu_thread_offline();
		if (sl_bell_wait(&p->bell, due - now))
			p->st.bell_wakes++;
		rcu_thread_online();
		p->st.idle_blocks++;
	}
	sl_bell_disarm(&p->bell);
}

/* Adaptive idle: sleep us microseconds, or until a submit or a command rings the bell (a
 * publish waiting for the next sync is written at once, not after the sleep). Offline for
 * RCU while asleep. */
static void
nap(struct sl_persist *p, uint32_t us)
{
	sl_bell_arm(&p->bell);
	if (!pending(p) && !__atomic_load_n(&sl_broker_quit, __ATOMIC_RELAXED)) {
		rcu_thread_offline();
		if (sl_bell_wait(&p->bell, (uint64_t)us * 1000u))
			p->st.bell_wakes++;
		rcu_thread_online();
	}
	sl_bell_disarm(&p->bell);
}

static int
persist_main(void *arg)
{
	struct sl_persist *p = arg;
	uint32_t empty = 0, sleep_us = 0;
	uint64_t last_work = mono_ns();
	uint32_t i;

	/* adaptive idle sleeps for tens of microseconds while a publish may wait for the
	 * next sync: without this, the kernel's default 50 us timer slack stretches each
	 * one (as the worker's) */
	if (p->conf.adaptive_idle)
		prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
	rcu_register_thread();
	PLOG(INFO, "running on lcore %u, staging buffer %zu KiB on %s\n", rte_lcore_id(),
	     p->buf_len >> 10, p->buf_huge ? "hugepages" : "normal pages");
	while (!__atomic_load_n(&sl_broker_quit, __ATOMIC_RELAXED)) {
		uint64_t now, syncs = p->st.syncs;
		uint32_t n = poll_cmds(p) + drain(p);

		now = mono_ns();
		if (p->ndirty > 0)
			sync_pass(p, now, 0);
		if ((n > 0 || p->st.syncs != syncs) && p->notify != NULL)
			p->notify(p->notify_arg);
		if (now >= p->next_periodic)
			periodic(p, now);
		p->st.loops++;
		rcu_quiescent_state();
		if (n > 0 || !p->conf.adaptive_idle) {
			empty = 0;
			sleep_us = 0;
			last_work = now;
			continue;
		}
		if (++empty < 1024)
			continue;
		if (now - last_work >= DEEP_IDLE_NS) {
			block(p, now);
			continue;
		}
		/* an acknowledgement of a disk publish waits for this lcore to wake up: until
		 * deep idle, sleep at most STORE_IDLE_US (a syscall here costs the workers
		 * nothing); with no partition attached, up to --idle-max-us (only an attach,
		 * which rings the bell, brings work then) */
		sleep_us = sleep_us ? RTE_MIN(sleep_us * 2, p->nstores > 0 ?
					      RTE_MIN(p->conf.idle_max_us, STORE_IDLE_US) :
					      p->conf.idle_max_us) : 10;
		nap(p, sleep_us);
		p->st.idle_sleeps++;
	}
	/* shutdown: everything handed over is written and synced, positions saved */
	while (drain(p) > 0)
		;
	sync_pass(p, mono_ns(), 1);
	for (i = 0; i < p->nstores; i++) {
		if (p->stores[i]->error != 0)
			continue;
		save_chans(p->stores[i]);
		sl_disklog_checkpoint(p->stores[i]->dl);
	}
	rcu_unregister_thread();
	return 0;
}

/* ---- the reader thread ---- */

/* The reader's jobs travel as pointers tagged in their low bits: a store (its consumer
 * fetch), a lookup, or a replication read. */
#define JOB_FETCH 0u
#define JOB_FIND 1u
#define JOB_RREAD 2u
#define JOB_MASK ((uintptr_t)3)

/* Post obj (tagged) to the reader; *state goes QUEUED, or back to IDLE if the ring is
 * full (-ENOBUFS). */
static int
post_job(struct sl_persist *p, uint32_t *state, void *obj, uintptr_t tag)
{
	__atomic_store_n(state, SL_PFETCH_QUEUED, __ATOMIC_RELEASE);
	if (rte_ring_mp_enqueue(p->jobs, (void *)((uintptr_t)obj | tag)) != 0) {
		__atomic_store_n(state, SL_PFETCH_IDLE, __ATOMIC_RELEASE);
		return -ENOBUFS;
	}
	return 0;
}
static void
run_find(struct sl_pfind *j)
{
	j->rc = sl_disklog_find(j->ps->dl, j->kind, j->value, &j->id);
	__atomic_store_n(&j->state, SL_PFETCH_READY, __ATOMIC_RELEASE);
}

static void *
reader_main(void *arg)
{
	struct sl_persist *p = arg;
	uint32_t sleep_us = 50;

	while (!p->reader_quit) {
		struct sl_pstore *ps;
		struct sl_pfetch *f;
		void *obj = NULL;

		if (rte_ring_sc_dequeue(p->jobs, &obj) != 0) {
			struct timespec ts = {0, (long)sleep_us * 1000};

			nanosleep(&ts, NULL);
			sleep_us = RTE_MIN(sleep_us * 2,
					   __atomic_load_n(&p->nstores, __ATOMIC_RELAXED) > 0 ?
						   1000u : NOSTORE_IDLE_US);
			continue;
		}
		sleep_us = 50;
		if (((uintptr_t)obj & JOB_MASK) == JOB_FIND) {
			run_find((struct sl_pfind *)((uintptr_t)obj & ~JOB_MASK));
			continue;
		}
		if (((uintptr_t)obj & JOB_MASK) == JOB_RREAD) {
			struct sl_prread *rr = (struct sl_prread *)((uintptr_t)obj & ~JOB_MASK);

			ps = caa_container_of(rr, struct sl_pstore, rread);
			rr->rc = sl_disklog_read_recs(ps->dl, rr->from_id, rr->max_id, rr->buf,
						      SL_PERSIST_FETCH_BYTES, rr->crecs,
						      SL_PERSIST_RREAD_RECS, &rr->n);
			p->st.rreads++;
			p->st.rread_recs += rr->n;
			__atomic_store_n(&rr->state, SL_PFETCH_READY, __ATOMIC_RELEASE);
			continue;
		}
		ps = obj;
		f = &ps->fetch;
		f->n = 0;
		f->rc = sl_disklog_read(ps->dl, f->from_id, f->max_id, f->buf,
					SL_PERSIST_FETCH_BYTES, f->msgs, SL_PERSIST_FETCH_MSGS,
					&f->n, &f->first_avail);
		p->st.fetches++;
		p->st.fetch_msgs += f->n;
		__atomic_store_n(&f->state, SL_PFETCH_READY, __ATOMIC_RELEASE);
	}
	return NULL;
}

int
sl_persist_fetch(struct sl_persist *p, struct sl_pstore *ps, uint64_t from, uint64_t max_id)
{
	struct sl_pfetch *f = &ps->fetch;

	if (__atomic_load_n(&f->state, __ATOMIC_ACQUIRE) == SL_PFETCH_QUEUED)
		return -EBUSY;
	f->from_id = from;
	f->max_id = max_id;
	f->n = 0;
	return post_job(p, &f->state, ps, JOB_FETCH);
}

int
sl_persist_rread(struct sl_persist *p, struct sl_pstore *ps, uint64_t from, uint64_t max_id)
{
	struct sl_prread *rr = &ps->rread;

	if (__atomic_load_n(&rr->state, __ATOMIC_ACQUIRE) == SL_PFETCH_QUEUED)
		return -EBUSY;
	rr->from_id = from;
	rr->max_id = max_id;
	rr->n = 0;
	return post_job(p, &rr->state, rr, JOB_RREAD);
}

int
sl_persist_find_post(struct sl_persist *p, struct sl_pfind *job)
{
	return post_job(p, &job->state, job, JOB_FIND);
}

int
sl_persist_find(struct sl_persist *p, struct sl_pstore *ps, enum sl_disklog_find_kind kind,
		uint64_t value, uint64_t *id)
{
	struct sl_pfind j = {.ps = ps, .kind = kind, .value = value};
	int waited_ms = 0;

	if (!p->reader_started) {
		run_find(&j);
	} else {
		if (sl_persist_find_post(p, &j) != 0)
			return -ENOBUFS;
		/* the job lives on this stack: wait for it, however long it takes */
		while (__atomic_load_n(&j.state, __ATOMIC_ACQUIRE) != SL_PFETCH_READY) {
			rte_delay_us_sleep(200);
			if (++waited_ms == 5000)
				PLOG(WARNING, "%s/%u: disk lookup slow\n", ps->topic,
				     ps->partition);
		}
	}
	*id = j.id;
	return j.rc;
}

/* ---- control ---- */

static void *
staging_alloc(size_t len, int *huge)
{
	void *b = get_hugepage_region(len, GHR_STRICT);

	if (b != NULL) {
		*huge = 1;
		return b;
	}
	*huge = 0;
	PLOG(WARNING, "no hugepages for the %zu KiB staging buffer (libhugetlbfs): "
	     "using normal pages\n", len >> 10);
	if (posix_memalign(&b, 4096, len) != 0)
		return NULL;
	return b;
}

struct sl_persist *
sl_persist_open(const struct sl_persist_conf *conf)
{
	struct sl_persist *p;
	char name[RTE_RING_NAMESIZE];
	static unsigned int instance;
	unsigned int id = instance++;
	uint16_t i;
	int rc;

	if (conf == NULL || conf->nsources == 0 || conf->nsources > SL_PERSIST_MAX_SOURCES) {
		rte_errno = EINVAL;
		return NULL;
	}
	p = rte_zmalloc_socket("sl_persist", sizeof(*p), RTE_CACHE_LINE_SIZE, conf->socket_id);
	if (p == NULL)
		goto nomem;
	p->conf = *conf;
	rc = sl_bell_open(&p->bell);
	if (rc < 0) {
		rte_errno = -rc;
		goto fail;
	}
	for (i = 0; i < conf->nsources; i++) {
		snprintf(name, sizeof(name), "sl_pers%u_%u", id, i);
		p->rings[i] = rte_ring_create_elem(name, sizeof(struct desc),
						   conf->ring_size ? conf->ring_size : 16384,
						   conf->socket_id, RING_F_SP_ENQ | RING_F_SC_DEQ);
		if (p->rings[i] == NULL)
			goto nomem;
	}
	snprintf(name, sizeof(name), "sl_perscmd%u", id);
	p->cmds = rte_ring_create(name, 64, conf->socket_id, RING_F_SC_DEQ);
	snprintf(name, sizeof(name), "sl_persjob%u", id);
	p->jobs = rte_ring_create(name, 8192, conf->socket_id, RING_F_SC_DEQ);
	if (p->cmds == NULL || p->jobs == NULL)
		goto nomem;
	p->buf_len = conf->buf_bytes ? conf->buf_bytes : (4u << 20);
	p->buf = staging_alloc(p->buf_len, &p->buf_huge);
	if (p->buf == NULL)
		goto nomem;
	p->st.huge_buf = p->buf_huge;
	return p;
nomem:
	rte_errno = ENOMEM;
fail:
	sl_persist_close(p);
	return NULL;
}

void
sl_persist_set_notify(struct sl_persist *p, void (*fn)(void *arg), void *arg)
{
	p->notify = fn;
	p->notify_arg = arg;
}

int
sl_persist_start(struct sl_persist *p)
{
	int rc = pthread_create(&p->reader, NULL, reader_main, p);

	if (rc != 0)
		return -rc;
	p->reader_started = 1;
	pthread_setname_np(p->reader, "sl-reader");
	rc = rte_eal_remote_launch(persist_main, p, p->conf.lcore);
	if (rc == 0)
		p->started = 1;
	return rc;
}

void
sl_persist_close(struct sl_persist *p)
{
	uint16_t i;

	if (p == NULL)
		return;
	if (p->started) {
		/* the broker's quit flag is set: a blocked lcore sees it once woken */
		sl_bell_kick(&p->bell);
		rte_eal_wait_lcore(p->conf.lcore);
	}
	if (p->reader_started) {
		p->reader_quit = 1;
		pthread_join(p->reader, NULL);
	}
	for (i = 0; i < SL_PERSIST_MAX_SOURCES; i++)
		rte_ring_free(p->rings[i]);
	rte_ring_free(p->cmds);
	rte_ring_free(p->jobs);
	sl_bell_close(&p->bell);
	if (p->buf != NULL) {
		if (p->buf_huge)
			free_hugepage_region(p->buf);
		else
			free(p->buf);
	}
	rte_free(p);
}

/* Run a command on the persistence lcore (or here, when it is not running). */
static int
run_cmd(struct sl_persist *p, enum cmd_op op, struct sl_pstore *ps)
{
	struct cmd c = {.op = op, .ps = ps};

	if (!p->started || rte_eal_get_lcore_state(p->conf.lcore) != RUNNING) {
		if (op == CMD_ATTACH) {
			if (p->nstores == MAX_STORES)
				return -SL_E_LIMIT;
			p->stores[p->nstores++] = ps;
		} else {
			detach(p, ps);
		}
		return 0;
	}
	if (rte_ring_mp_enqueue(p->cmds, &c) != 0)
		return -ENOBUFS;
	wake(p);
	while (!__atomic_load_n(&c.done, __ATOMIC_ACQUIRE))
		rte_delay_us_sleep(100);
	return c.result;
}

int
sl_persist_attach(struct sl_persist *p, struct sl_pstore *ps)
{
	if (ps->log == NULL)
		return -EINVAL;
	return run_cmd(p, CMD_ATTACH, ps);
}

int
sl_persist_detach(struct sl_persist *p, struct sl_pstore *ps)
{
	return run_cmd(p, CMD_DETACH, ps);
}

void
sl_persist_resume(struct sl_pstore *ps)
{
	__atomic_store_n(&ps->resume_req, 1, __ATOMIC_RELEASE);
}

/* Post a truncation (end_id) or reset (0) that cuts what is queued before it. Worker. */
static int
post_cut(struct sl_persist *p, uint16_t source, struct sl_pstore *ps, uint64_t end_id,
	 uint64_t first_id, uint32_t n, uint64_t offset)
{
	uint32_t posted = ps->trunc_posted;
	int rc;

	if (posted - __atomic_load_n(&ps->trunc_taken, __ATOMIC_ACQUIRE) >= SL_PERSIST_TRUNC_PEND)
		return -ENOBUFS;
	ps->trunc_end[posted % SL_PERSIST_TRUNC_PEND] = end_id;
	/* published before the descriptor and before the caller cuts its memory */
	__atomic_store_n(&ps->trunc_posted, posted + 1, __ATOMIC_RELEASE);
	rc = sl_persist_submit(p, source, ps, first_id, n, offset, 0);
	if (rc != 0)
		__atomic_store_n(&ps->trunc_posted, posted, __ATOMIC_RELEASE);
	return rc;
}

int
sl_persist_truncate(struct sl_persist *p, uint16_t source, struct sl_pstore *ps, uint64_t end_id)
{
	return post_cut(p, source, ps, end_id, end_id + 1, DESC_TRUNCATE, 0);
}

/* Calling context: worker `source` only. */
int
sl_persist_reset(struct sl_persist *p, uint16_t source, struct sl_pstore *ps,
		 uint64_t first_id, uint64_t first_offset)
{
	if (first_id == 0)
		first_id = 1;
	return post_cut(p, source, ps, 0, first_id, DESC_RESET, first_offset);
}

int
sl_persist_submit_tag(struct sl_persist *p, uint16_t source, struct sl_pstore *ps,
		      uint64_t first_id, uint32_t n, uint64_t offset, uint64_t epoch,
		      uint64_t producer, uint64_t pseq)
{
	struct desc d = {
		.ps = ps,
		.first_id = first_id,
		.offset = offset,
		.n = n,
		.gen = __atomic_load_n(&ps->gen, __ATOMIC_ACQUIRE),
		.epoch = epoch,
		.producer = pseq != 0 ? producer : 0,
		.pseq = producer != 0 ? pseq : 0,
	};

	if (rte_ring_sp_enqueue_elem(p->rings[source], &d, sizeof(d)) != 0)
		return -ENOBUFS;
	wake(p);
	return 0;
}

int
sl_persist_submit(struct sl_persist *p, uint16_t source, struct sl_pstore *ps,
		  uint64_t first_id, uint32_t n, uint64_t offset, uint64_t epoch)
{
	return sl_persist_submit_tag(p, source, ps, first_id, n, offset, epoch, 0, 0);
}

uint32_t
sl_persist_room(const struct sl_persist *p, uint16_t source)
{
	return rte_ring_free_count(p->rings[source]);
}

const struct sl_persist_stats *
sl_persist_get_stats(const struct sl_persist *p)
{
	return &p->st;
}
