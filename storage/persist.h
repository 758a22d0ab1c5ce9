/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * persist: the persistence lcore and the disk reader.
 *
 * Every partition of a node with a data directory has a store (struct sl_pstore): its
 * disk log (storage/disklog.h) and the positions the persistence lcore publishes back to
 * the partition's worker. The worker appends a PUB or MPUB to its in-memory log and hands
 * the persistence lcore a 56-byte descriptor (partition, first id, count, offset, epoch,
 * producer tag)
 * through its own single-producer/single-consumer ring (sl_persist_submit). The
 * persistence lcore copies the records out of the in-memory log into a hugepage buffer
 * (libhugetlbfs; normal pages with a warning when there are none), encodes them with
 * their CRC, writes them with one pwrite per partition per loop (plus one for the commit
 * records), and syncs per the partition's policy. Then it publishes, with release
 * stores, how far the log is written (written_id: the worker may trim its memory below
 * it) and durable (durable_id: fdatasync'ed). Workers read them with acquire loads: no
 * lock, no syscall on the polling path.
 *
 * Durability per topic: `memory` acknowledges a publish once it is in the in-memory log
 * (the disk copy follows, synced per the policy); `disk` acknowledges only when
 * durable_id covers it, and consumers see only durable messages.
 *
 * Errors: a failed write or sync makes the store's error sticky (error != 0). The worker
 * answers SL_E_IO to what is waiting, refuses new publishes, rolls its in-memory log back
 * to durable_id (disk durability) and acknowledges by setting err_ack = gen. An operator
 * fixes the cause and asks for a resume (sl_persist_resume); the persistence lcore then
 * cuts the files back to the durable end, bumps gen and clears the error. Descriptors
 * carry the gen they were made under; older ones are dropped.
 *
 * Besides appends, the ring carries truncations (sl_persist_truncate: a replication
 * rollback) and resets (sl_persist_reset: a replica whose leader no longer holds the old
 * part of the log drops its whole disk log and restarts it empty at the leader's first
 * retained message), each taken in order with the appends.
 *
 * The reader thread (a plain pthread, blocking I/O) serves consumers that fell behind
 * the in-memory window: a worker posts a fetch (sl_persist_fetch) and later finds the
 * records in the store's fetch buffer (state SL_PFETCH_READY).
 */
#ifndef SL_PERSIST_H
#define SL_PERSIST_H

#include <pthread.h>
#include <stdint.h>

#include <rte_common.h>

#include "disklog.h"
#include "memfile.h"
#include "memlog.h"

#define SL_PERSIST_MAX_SOURCES 16
#define SL_PERSIST_MAX_CHANS 32
#define SL_PERSIST_FETCH_BYTES (1u << 20)
#define SL_PERSIST_FETCH_MSGS 4096
#define SL_PERSIST_TRUNC_PEND 16	/* truncations and resets in flight per store */

enum sl_persist_durability {
	SL_PERSIST_MEMORY = 0,
	SL_PERSIST_DISK = 1,
};

enum sl_persist_sync_mode {
	SL_PERSIST_SYNC_ALWAYS = 0,	/* every write batch (group commit) */
	SL_PERSIST_SYNC_EVERY = 1,	/* every `every` messages */
	SL_PERSIST_SYNC_INTERVAL = 2,	/* every `interval_ms` */
};

/* A topic's storage policy (also kept in <data-dir>/<topic>/topic.conf). */
struct sl_persist_policy {
	enum sl_persist_durability durability;
	enum sl_persist_sync_mode sync;
	uint32_t every;			/* SYNC_EVERY: messages */
	uint32_t interval_ms;		/* SYNC_INTERVAL (also the longest gap for EVERY) */
	uint64_t retain_bytes;		/* 0 = no size limit */
	uint64_t retain_age_s;		/* 0 = no age limit */
	int retain_unconsumed;		/* 1 (default): keep what a durable channel has not
					 * consumed even past the limits */
};

/* The longest a partition with sync `every:N` stays unsynced while it writes less. */
#define SL_PERSIST_MAX_UNSYNCED_NS (1000ull * 1000 * 1000)

/*
 * The longest a written message waits for a timed sync under pol: always 0; every:N
 * SL_PERSIST_MAX_UNSYNCED_NS (N messages may bring it sooner); ms:T T milliseconds. Any
 * thread.
 */
static inline uint64_t
sl_persist_sync_wait_ns(const struct sl_persist_policy *pol)
{
	switch (pol->sync) {
	case SL_PERSIST_SYNC_EVERY:
		return SL_PERSIST_MAX_UNSYNCED_NS;
	case SL_PERSIST_SYNC_INTERVAL:
		return (uint64_t)pol->interval_ms * 1000000ull;
	default:
		return 0;
	}
}

/*
 * The one sync-due rule: with `unsynced` messages written since the last sync, `since_ns`
 * ago, is a sync due under pol? always: yes; every:N: N messages, or a second at most;
 * ms:T: T milliseconds (sl_persist_sync_wait_ns). Any thread (used by the persistence
 * lcore and the disk bench).
 */
static inline int
sl_persist_sync_due(const struct sl_persist_policy *pol, uint64_t unsynced, uint64_t since_ns)
{
	return (pol->sync == SL_PERSIST_SYNC_EVERY && unsynced >= pol->every) ||
	       since_ns >= sl_persist_sync_wait_ns(pol);
}

/* A channel's persisted position, written by the worker under a sequence lock. */
struct sl_pchan {
	uint32_t seq;			/* odd while the worker writes */
	uint32_t flags;			/* bit 0 ordered; bit 31: slot in use */
	uint64_t confirmed_id;
	char name[SL_DISKLOG_CHAN_NAME_MAX + 1];
};

enum sl_pfetch_state {
	SL_PFETCH_IDLE = 0,
	SL_PFETCH_QUEUED = 1,		/* posted to the reader */
	SL_PFETCH_READY = 2,		/* msgs[] valid (or rc < 0) */
};

/* One partition's fetch buffer: owned by the worker while IDLE or READY, by the reader
 * while QUEUED. */
struct sl_pfetch {
	uint32_t state;
	int32_t rc;
	uint64_t from_id;
	uint64_t max_id;
	uint64_t first_avail;		/* oldest id on disk (when rc == -ENOENT) */
	uint32_t n;
	struct sl_disklog_msg *msgs;	/* [SL_PERSIST_FETCH_MSGS] */
	uint8_t *buf;			/* [SL_PERSIST_FETCH_BYTES] */
};

/* A lookup on a disk log by the reader thread (sl_disklog_find). Owned by the poster
 * while IDLE or READY, by the reader while QUEUED; 8-byte aligned (the ring tags it). */
struct sl_pfind {
	struct sl_pstore *ps;
	enum sl_disklog_find_kind kind;
	uint32_t state;			/* enum sl_pfetch_state */
	uint64_t value;
	uint64_t id;			/* result */
	int32_t rc;
} __rte_aligned(8);

#define SL_PERSIST_RREAD_RECS 256

/* Whole commit records and their encoded messages read back for replication (a replica
 * catching up from further back than the leader's memory). Owned like sl_pfetch. */
struct sl_prread {
	uint32_t state;			/* enum sl_pfetch_state */
	int32_t rc;
	uint64_t from_id;
	uint64_t max_id;
	uint32_t n;
	struct sl_crec *crecs;	/* [SL_PERSIST_RREAD_RECS] */
	uint8_t *buf;			/* [SL_PERSIST_FETCH_BYTES] */
};

/* Per-partition store. Fields are grouped by writer. */
struct sl_pstore {
	/* fixed after sl_pstore_open */
	struct sl_disklog *dl;
	struct sl_memlog *log;		/* the worker's in-memory log (set before attach) */
	struct sl_persist_policy pol;
	uint32_t partition;
	char topic[72];
	struct sl_disklog_recovery rec;	/* what recovery found */
	struct sl_memfile *mf;		/* memory durability: the file behind the log */
	int grow_err_logged;		/* a failed growth of mf was logged */
	uint64_t mem_replayed;		/* messages a killed process left in it, written
					 * to the disk log at open */
	uint64_t lost_from;		/* a lost range recorded at open: ids lost_from.. */
	uint64_t lost_to;		/* ..lost_to (0: none), see sl_pstore_open */
	char *dir;			/* the partition's directory */
	void *pt_map;			/* the producer table file's mapping, or NULL */
	size_t pt_len;

	/* persistence lcore -> worker (release / acquire) */
	uint64_t written_id __rte_cache_aligned;
	uint64_t durable_id;
	int32_t error;			/* sticky negative errno, 0 = healthy */
	uint32_t gen;
	uint64_t disk_first_id;		/* oldest id the disk log retains */
	uint64_t id_mark;		/* memory durability: ids below it may be acknowledged
					 * (durable in the idmark file); UINT64_MAX otherwise */

	/* worker -> persistence lcore */
	uint32_t err_ack __rte_cache_aligned;	/* gen whose error the worker handled
						 * (UINT32_MAX: none yet) */
	/* truncations and resets posted (sl_persist_truncate/reset) before the worker cut
	 * its in-memory log; trunc_end[i % SL_PERSIST_TRUNC_PEND] is the end id the i-th one
	 * keeps (0 for a reset). The persistence lcore counts those it took (trunc_taken):
	 * an append it takes while one posted after it is pending, and which that one cuts,
	 * is stale (its messages may be gone or replaced in memory) and is dropped. */
	uint32_t trunc_posted;
	uint64_t trunc_end[SL_PERSIST_TRUNC_PEND];
	uint64_t keep_from_id;		/* lowest durable-channel position (retention) */
	uint64_t mark_want;		/* the worker's log end + 1 once it is less than half
					 * a step below the id mark (its appends run ahead of
					 * the descriptors the persistence lcore has taken) */
	struct sl_pchan chans[SL_PERSIST_MAX_CHANS];

	/* control -> persistence lcore */
	uint32_t resume_req __rte_cache_aligned;

	/* persistence lcore private (and stats read racily by the control thread) */
	uint64_t next_id __rte_cache_aligned;	/* next id expected in a descriptor */
	uint64_t unsynced;		/* messages written, not synced */
	uint64_t last_sync_ns;
	uint64_t last_ckpt_id;
	uint32_t chan_seqsum;		/* of the last saved channel snapshot */
	uint32_t dirty;			/* on the persist lcore's dirty list */
	uint64_t dropped;		/* descriptors dropped (stale gen, error) */
	uint64_t stale;			/* appends dropped: a later truncation cut them */
	uint32_t trunc_taken;		/* truncations and resets taken (worker reads) */
	uint64_t resumes;
	uint64_t truncates;
	uint64_t resets;		/* disk log resets (replica past the leader's retention) */
	struct sl_disklog_retain_res retain;

	/* reader */
	struct sl_pfetch fetch __rte_cache_aligned;
	struct sl_prread rread;
};

/*
 * Accessors for the store's shared state, for its partition's owner worker (any thread
 * may read them for statistics). The memory order is stated here once: the persistence
 * lcore and the reader publish with release stores what the worker reads with acquire
 * loads, and the worker publishes with release stores what they read with acquire loads.
 * No other module touches these fields directly.
 */

/* Every id up to this one is written to the files (memory may be trimmed below it). */
static inline uint64_t
sl_pstore_written_id(const struct sl_pstore *ps)
{
	return __atomic_load_n(&ps->written_id, __ATOMIC_ACQUIRE);
}

/* Every id up to this one is synced (fdatasync). */
static inline uint64_t
sl_pstore_durable_id(const struct sl_pstore *ps)
{
	return __atomic_load_n(&ps->durable_id, __ATOMIC_ACQUIRE);
}

/* The oldest id the disk log retains. */
static inline uint64_t
sl_pstore_disk_first_id(const struct sl_pstore *ps)
{
	return __atomic_load_n(&ps->disk_first_id, __ATOMIC_ACQUIRE);
}

/* The id mark: the worker acknowledges a publish only when all its ids are below it. */
static inline uint64_t
sl_pstore_id_mark(const struct sl_pstore *ps)
{
	return __atomic_load_n(&ps->id_mark, __ATOMIC_ACQUIRE);
}

/* How far ahead of the last id handed over the persistence lcore keeps the id mark of a
 * `memory`-durability partition, and when it moves it (the mark is less than half a step
 * ahead): one small fsynced file per step, off the data path. */
#define SL_PERSIST_MARK_STEP (UINT64_C(1) << 22)

/* Worker: its log ends at end_id; once that is less than half a step below the id mark,
 * it asks the persistence lcore to move the mark (a store only then, not per publish). */
static inline void
sl_pstore_mark_need(struct sl_pstore *ps, uint64_t end_id, uint64_t mark)
{
	if (end_id + SL_PERSIST_MARK_STEP / 2 >= mark)
		__atomic_store_n(&ps->mark_want, end_id + 1, __ATOMIC_RELEASE);
}

/* The sticky error (negative errno), 0 while healthy. */
static inline int
sl_pstore_error(const struct sl_pstore *ps)
{
	return __atomic_load_n(&ps->error, __ATOMIC_ACQUIRE);
}

/* The store generation: bumped by every resume. */
static inline uint32_t
sl_pstore_gen(const struct sl_pstore *ps)
{
	return __atomic_load_n(&ps->gen, __ATOMIC_ACQUIRE);
}

/* Worker: the error of generation gen is handled (what waited was failed). */
static inline void
sl_pstore_error_ack(struct sl_pstore *ps, uint32_t gen)
{
	__atomic_store_n(&ps->err_ack, gen, __ATOMIC_RELEASE);
}

/* Worker: retention keeps every id from id on (0: no durable channel holds anything). */
static inline void
sl_pstore_keep_from(struct sl_pstore *ps, uint64_t id)
{
	__atomic_store_n(&ps->keep_from_id, id, __ATOMIC_RELEASE);
}

/* The state (enum sl_pfetch_state) of a reader job: a fetch, a lookup or a read for
 * replication. The reader publishes READY with a release store after the result. */
static inline uint32_t
sl_pstore_job_state(const uint32_t *state)
{
	return __atomic_load_n(state, __ATOMIC_ACQUIRE);
}

struct sl_persist_conf {
	unsigned int lcore;
	uint16_t nsources;		/* worker lcores that submit */
	uint32_t ring_size;		/* per source, power of two; 0 = 16384 */
	int adaptive_idle;
	uint32_t idle_max_us;
	int socket_id;
	size_t buf_bytes;		/* staging buffer; 0 = 4 MiB */
};

/* The sync latency histogram (sl_persist_stats.sync_hist): bucket i counts the syncs of a
 * partition's disk log (sl_disklog_sync: its fdatasyncs) that took at most
 * sl_persist_sync_bucket_ns(i) and more than bucket i - 1's bound; the last slot counts the
 * slower ones. */
#define SL_PERSIST_SYNC_BUCKETS 16

struct sl_persist_stats {
	uint64_t records;		/* descriptors written */
	uint64_t msgs;
	uint64_t bytes;
	uint64_t writes;		/* write batches */
	uint64_t syncs;
	uint64_t sync_ns;		/* time in fdatasync over all syncs */
	uint64_t sync_max_ns;		/* the longest one */
	uint64_t loops;
	uint64_t idle_sleeps;
	uint64_t idle_blocks;		/* deep-idle blocks on the bell (no work for 2 ms) */
	uint64_t bell_wakes;		/* blocks and idle naps ended by the bell (a submit or
					 * a command) */
	uint64_t fetches;
	uint64_t fetch_msgs;
	uint64_t rreads;		/* replication reads (catch-up from disk) */
	uint64_t rread_recs;
	int huge_buf;			/* staging buffer is on hugepages */
	uint64_t sync_hist[SL_PERSIST_SYNC_BUCKETS + 1]; /* syncs by duration, see above */
	uint64_t ckpts;			/* checkpoints written (once a second per store with
					 * new durable data: sl_disklog_checkpoint) */
	uint64_t ckpt_ns;		/* time in them: no sync of any store runs meanwhile */
	uint64_t ckpt_max_ns;		/* the longest one */
	uint64_t clog_syncs;		/* commit-log syncs between checkpoints (every 100 ms
					 * with new durable data: sl_disklog_sync_clogs) */
	uint64_t clog_sync_max_ns;	/* the longest one: no sync runs meanwhile either */
};

/** Upper bound of sync latency bucket i (< SL_PERSIST_SYNC_BUCKETS), in ns. Any thread. */
uint64_t
sl_persist_sync_bucket_ns(unsigned int i);

struct sl_persist;

/** Create the rings and the staging buffer. Control thread. NULL + rte_errno. */
struct sl_persist *
sl_persist_open(const struct sl_persist_conf *conf);

/**
 * Have the persistence lcore call fn(arg) after each loop that wrote or synced (and so may
 * have made held publishes answerable), e.g. to ring the workers' bells. fn runs on the
 * persistence lcore and must not block. Control thread, before sl_persist_start.
 */
void
sl_persist_set_notify(struct sl_persist *p, void (*fn)(void *arg), void *arg);

/** Launch the persistence lcore and the reader thread. Control thread. 0 or -errno. */
int
sl_persist_start(struct sl_persist *p);

/** Stop: write and sync what is queued, save channel positions, wait for the lcore and
 * the reader; free. The quit flag is the broker's. Control thread. */
void
sl_persist_close(struct sl_persist *p);

/**
 * Open (create or recover) a partition's store in dir. The report of what recovery did
 * is in ps->rec. With `memory` durability, the messages a killed process left in the
 * memory log file beyond the disk log's end (sl_memlog_scan) are then written to the disk
 * log and synced (ps->mem_replayed): the next id is past every one it may have
 * acknowledged. When the memory log file cannot tell (another boot: a machine crash; torn
 * or missing) and the id mark file says ids up to mark - 1 may have been acknowledged
 * beyond the disk log's end, those ids are recorded as a lost range (sl_disklog_skip,
 * ps->lost_from..lost_to, a WARNING) and the next id is the mark. Then the mark is moved
 * SL_PERSIST_MARK_STEP past the next id (ps->id_mark). NULL with rte_errno. Control thread.
 */
struct sl_pstore *
sl_pstore_open(const char *dir, const char *topic, uint32_t partition,
	       const struct sl_persist_policy *pol, uint64_t segment_bytes);

/**
 * The region for a `memory`-durability partition's in-memory log (len bytes, index
 * geometry hint): a shared mapping of the file <dir>/memlog, sparse (it reads as zeros:
 * open a lazy log over it and grow it with sl_pstore_log_prepare), which outlives a kill
 * of the process (storage/memfile.h); whatever the last process left there beyond the
 * disk log was already written to it and synced by sl_pstore_open. NULL with rte_errno
 * when the mapping fails, or when ps has `disk` durability (its region is plain memory:
 * EINVAL). The region is unmapped by sl_pstore_close. Control thread, before the store
 * is attached.
 */
void *
sl_pstore_log_mem(struct sl_pstore *ps, uint64_t len, uint32_t hint);

/**
 * The memory for a `memory`-durability partition's producer table (len bytes, zeroed,
 * every page faulted in): a shared mapping of the file <dir>/producers.shm, so that the
 * table outlives a kill of the process as the in-memory log does (storage/memfile.h):
 * the tags of the records the last process left in the memory log file, which
 * sl_pstore_open wrote to the disk log without them (the memory log keeps no tag), are
 * looked up there. When the file holds a table of the same length written during this
 * boot (so not torn by a machine crash), it is copied into prev (len bytes) first and
 * *had is set to 1, else 0: a table a process was killed while changing, to be checked
 * before use. File format (version 1): a 4096-byte first page, the header: magic
 * "SLPRODSH" 8, version u32 1, reserved u32 0, len u64 (little-endian), 24: the boot id
 * (/proc/sys/kernel/random/boot_id, 36 characters and a NUL), zero to 4096; then the
 * table (dataplane/ptab.h struct sl_ptab, host byte order). The region is unmapped by
 * sl_pstore_close. NULL with rte_errno (EINVAL: not a memory-durability store, or mapped
 * already). Control thread, at the partition's open.
 */
void *
sl_pstore_ptab_mem(struct sl_pstore *ps, size_t len, void *prev, int *had);

/** The memory log file's index base field (sl_memfile_base), for sl_memlog_conf.base_out.
 * Control thread, after sl_pstore_log_mem. */
uint64_t *
sl_pstore_log_base(struct sl_pstore *ps);

/** Grow the memory log file's region: sl_memfile_prepare (bytes [off, off + len) of the
 * region). 0 or a negative errno (logged once). Control thread. */
int
sl_pstore_log_prepare(struct sl_pstore *ps, uint64_t off, uint64_t len);

/** Close a store that is detached from the persistence lcore. Control thread. */
void
sl_pstore_close(struct sl_pstore *ps);

/** Start writing ps (its log must be set). Control thread; waits for the lcore. */
int
sl_persist_attach(struct sl_persist *p, struct sl_pstore *ps);

/** Stop writing ps: everything queued for it is written and synced first. Control
 * thread; the worker must no longer submit for ps. */
int
sl_persist_detach(struct sl_persist *p, struct sl_pstore *ps);

/** Ask for a resume after a storage error. Control thread; the persistence lcore acts
 * once the worker has handled the error. */
void
sl_persist_resume(struct sl_pstore *ps);

/**
 * Hand the persistence lcore n messages starting at first_id (offset: queue offset of
 * the first; epoch: the write epoch for its commit record), just appended to ps->log.
 * Calling context: worker `source` only. Returns 0 or -ENOBUFS when its ring is full
 * (use sl_persist_room first to avoid appending what cannot be handed over). Rings the
 * lcore's bell (one eventfd write) only when the lcore blocks in deep idle.
 */
int
sl_persist_submit(struct sl_persist *p, uint16_t source, struct sl_pstore *ps,
		  uint64_t first_id, uint32_t n, uint64_t offset, uint64_t epoch);

/**
 * sl_persist_submit for one PUB/MPUB (one commit record) with its producer tag (producer,
 * pseq; dataplane/ptab.h), which its commit record keeps on disk (storage/disklog.h) so
 * that the producer table can be rebuilt at the next open; a tag with a zero half is
 * none. Same calling context and results.
 */
int
sl_persist_submit_tag(struct sl_persist *p, uint16_t source, struct sl_pstore *ps,
		      uint64_t first_id, uint32_t n, uint64_t offset, uint64_t epoch,
		      uint64_t producer, uint64_t pseq);

/**
 * Hand the persistence lcore a truncation, in order with the appends: every id > end_id
 * leaves the disk log (replication rollback, divergent tail), and written_id/durable_id
 * come back to end_id at most. Worker `source` only, BEFORE it cuts its in-memory log
 * (appends queued before it that it cuts are then dropped, never read from memory that
 * the cut freed). 0 or -ENOBUFS (ring full, or SL_PERSIST_TRUNC_PEND in flight).
 */
int
sl_persist_truncate(struct sl_persist *p, uint16_t source, struct sl_pstore *ps,
		    uint64_t end_id);

/**
 * Hand the persistence lcore a reset, in order with the appends and truncations: the disk
 * log drops everything and restarts empty at id first_id (0 means 1), queue offset
 * first_offset (sl_disklog_reset): a replica whose leader no longer holds the old part of
 * the log. The lcore then expects first_id next, and stores written_id and durable_id =
 * first_id - 1 (release; they may go down as well as up) and disk_first_id = first_id. A
 * failure makes the store's error sticky (a resume completes the reset). The caller first
 * waits until written_id covers every descriptor it queued (sl_memlog_reset of ps->log
 * needs that too); until the lcore takes the reset, written_id and durable_id describe the
 * old log. Worker `source` only. 0 or -ENOBUFS.
 */
int
sl_persist_reset(struct sl_persist *p, uint16_t source, struct sl_pstore *ps,
		 uint64_t first_id, uint64_t first_offset);

/** Free descriptor slots in worker `source`'s ring. Worker `source` only. */
uint32_t
sl_persist_room(const struct sl_persist *p, uint16_t source);

/**
 * Ask the reader for ps's messages from id `from` to at most max_id. The fetch state
 * goes IDLE/READY -> QUEUED -> READY. Returns 0, or -EBUSY if a fetch is queued, or
 * -ENOBUFS. Calling context: the worker that owns ps.
 */
int
sl_persist_fetch(struct sl_persist *p, struct sl_pstore *ps, uint64_t from, uint64_t max_id);

/**
 * Post a lookup (job->ps, kind and value set) to the reader thread without waiting: the
 * job becomes READY with id and rc (sl_disklog_find semantics). 0 or -ENOBUFS. Any
 * thread; the job must stay valid until READY.
 */
int
sl_persist_find_post(struct sl_persist *p, struct sl_pfind *job);

/**
 * Find a message on ps's disk log through the reader thread (sl_disklog_find semantics).
 * Blocks up to a second. Control thread.
 */
int
sl_persist_find(struct sl_persist *p, struct sl_pstore *ps, enum sl_disklog_find_kind kind,
		uint64_t value, uint64_t *id);

/**
 * Ask the reader for ps's commit records from the one holding `from` (to at most max_id)
 * with their messages (sl_disklog_read_recs). The state goes to QUEUED, then READY.
 * 0, -EBUSY (one is queued) or -ENOBUFS. The worker that owns ps.
 */
int
sl_persist_rread(struct sl_persist *p, struct sl_pstore *ps, uint64_t from, uint64_t max_id);

/** Publish a channel's position for saving (slot < SL_PERSIST_MAX_CHANS); flags:
 * SL_DISKLOG_CHAN_*. Owner worker. */
void
sl_pstore_chan_set(struct sl_pstore *ps, uint32_t slot, const char *name, uint32_t flags,
		   uint64_t confirmed_id);
/** Forget a channel slot. Owner worker. */
void
sl_pstore_chan_clear(struct sl_pstore *ps, uint32_t slot);

const struct sl_persist_stats *
sl_persist_get_stats(const struct sl_persist *p);

/** Parse "always", "every:N", "ms:T" into pol. 0 or -EINVAL. Any thread. */
int
sl_persist_parse_sync(const char *s, struct sl_persist_policy *pol);

/** Format pol's sync policy ("always", "every:N", "ms:T"). Any thread. */
const char *
sl_persist_sync_str(const struct sl_persist_policy *pol, char *buf, size_t len);

#endif /* SL_PERSIST_H */
