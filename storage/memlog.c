/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * memlog: a partition's bounded in-memory message log (see memlog.h).
 *
 * Ring state: retained records live in [head, tail) when head < tail, or in
 * [head, ring end) followed by [0, tail) when the ring has wrapped (head >= tail; the
 * gap between the last record of the old lap and the ring end is a wrap pad). An empty
 * log always has head == tail == 0. Logical offsets are ring position plus a per-lap
 * base: cur_base for the lap holding tail, prev_base for the older lap when wrapped.
 * Retained records span at most these two laps, so offset_of is O(1) and find_offset /
 * find_time are binary searches over the index. A reset empties the log at a new
 * (first_id, end_offset) and fills the index with IDX_NONE, a position past the ring.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "memlog.h"

#define MAGIC_REC 0xA5u
#define MAGIC_PAD 0x5Au
#define MAGIC_SHIFT 24
#define LEN_MASK 0xFFFFFFu
#define MIN_IDX_SLOTS 16
#define DEFAULT_HINT 64
#define IDX_NONE UINT64_MAX	/* index slot of no record (after a reset) */
#define GROW_RING_MIN (16u * 1024)	/* a lazy log's first ring prefix */
#define GROW_IDX_MIN 512u		/* and index prefix (slots: one 4 KiB page) */
#define PAGE_SZ 4096u
#define MIN_U64(a, b) ((a) < (b) ? (a) : (b))
#define MAX_U64(a, b) ((a) > (b) ? (a) : (b))

struct rec_hdr {
	uint32_t magic_len;
	uint32_t batch;		/* index in its PUB/MPUB (low 16) | messages after it (high 16) */
	uint64_t id;
	uint64_t timestamp_ns;
	uint64_t trace_id;
};

_Static_assert(sizeof(struct rec_hdr) == SL_MEMLOG_REC_HDR, "record header size");

struct sl_memlog {
	uint64_t *idx;		/* idx_slots ring positions, in conf->mem */
	uint8_t *ring;		/* record area, after the index */
	uint64_t idx_slots;
	uint64_t idx_mask;
	uint64_t ring_size;	/* where the ring wraps: multiple of 8, <= ring_ready */
	uint64_t ring_max;	/* the record area of the region */
	uint64_t idx_base;	/* slot of id = (id - idx_base) & idx_mask */
	uint64_t *base_out;	/* published idx_base (memory file header), or NULL */
	uint64_t idx_hw;	/* slots written since open (a reset clears them) */
	int lazy;
	/* written by the grower (control thread), read by the owner (acquire) */
	uint64_t ring_ready;	/* record area bytes ready */
	uint64_t idx_ready;	/* index slots ready, from slot 0 */
	/* written by the owner (relaxed) when an append found a prefix too short */
	uint64_t want_ring;
	uint64_t want_idx;
	uint64_t refused_ring;	/* record bytes of appends refused for want of a prefix */
	uint64_t refused_idx;	/* and their index slots (both only grow) */
	/* the grower's own: the refusal counters at its last step */
	uint64_t seen_refused_ring;
	uint64_t seen_refused_idx;

	uint64_t first_id;	/* oldest retained (end_id + 1 when empty) */
	uint64_t end_id;	/* last written (0 = never) */
	uint64_t end_offset;	/* logical offset after end_id */
	uint64_t head;		/* ring position of first_id */
	uint64_t tail;		/* ring position where the next record goes */
	uint64_t cur_base;	/* logical = cur_base + pos in tail's lap */
	uint64_t prev_base;	/* logical = prev_base + pos in the older lap */
	uint64_t last_ts;	/* timestamp of the last append (never decreases) */
};

static inline int
is_empty(const struct sl_memlog *log)
{
	return log->first_id > log->end_id;
}

static inline int
is_wrapped(const struct sl_memlog *log)
{
	return !is_empty(log) && log->head >= log->tail;
}

static inline uint64_t
idx_get(const struct sl_memlog *log, uint64_t id)
{
	uint64_t v;

	memcpy(&v, &log->idx[(id - log->idx_base) & log->idx_mask], sizeof(v));
	return v;
}

static inline void
idx_set(struct sl_memlog *log, uint64_t id, uint64_t pos)
{
	memcpy(&log->idx[(id - log->idx_base) & log->idx_mask], &pos, sizeof(pos));
}

static inline void
hdr_get(const struct sl_memlog *log, uint64_t pos, struct rec_hdr *h)
{
	memcpy(h, log->ring + pos, sizeof(*h));
}

/* Logical offset of the retained record at ring position pos. */
static inline uint64_t
logical_of(const struct sl_memlog *log, uint64_t pos)
{
	if (is_wrapped(log) && pos >= log->head)
		return log->prev_base + pos;
	return log->cur_base + pos;
}

static inline uint64_t
offset_of_id(const struct sl_memlog *log, uint64_t id)
{
	if (id > log->end_id)
		return log->end_offset;
	return logical_of(log, idx_get(log, id));
}

static inline uint64_t
ts_of_id(const struct sl_memlog *log, uint64_t id)
{
	struct rec_hdr h;

	hdr_get(log, idx_get(log, id), &h);
	return h.timestamp_ns;
}

static void
set_empty(struct sl_memlog *log)
{
	log->head = 0;
	log->tail = 0;
	log->cur_base = log->end_offset;
	log->prev_base = log->end_offset;
}

/*
 * Where a record of s bytes goes given head and tail (empty: both 0). Returns 0 and
 * *pos, with *wrap = 1 when the ring must wrap first (pad from tail to the ring end), or
 * -1 when there is no room.
 */
static int
fit(uint64_t ring_size, uint64_t head, uint64_t tail, int empty, uint64_t s, uint64_t *pos,
    int *wrap)
{
	*wrap = 0;
	if (empty) {
		if (s > ring_size)
			return -1;
		*pos = 0;
		return 0;
	}
	if (head < tail) {
		if (s <= ring_size - tail) {
			*pos = tail;
			return 0;
		}
		if (s <= head) {
			*pos = 0;
			*wrap = 1;
			return 0;
		}
		return -1;
	}
	if (s <= head - tail) {
		*pos = tail;
		return 0;
	}
	return -1;
}

static void
set_base(struct sl_memlog *log, uint64_t base)
{
	log->idx_base = base;
	if (log->base_out != NULL)
		memcpy(log->base_out, &base, sizeof(base));	/* before any record of it */
}

static int
conf_ok(const struct sl_memlog_conf *conf)
{
	return conf != NULL && conf->mem != NULL && conf->mem_len >= 4096 &&
	       ((uintptr_t)conf->mem & 7) == 0;
}

/* The index size of a region: a power of two, sized from the region and the average
 * message hint, at most about a quarter of the region. */
static uint64_t
idx_slots_of(const struct sl_memlog_conf *conf)
{
	uint64_t hint = conf->avg_msg_hint != 0 ? conf->avg_msg_hint : DEFAULT_HINT;
	uint64_t n = conf->mem_len / SL_MEMLOG_REC_SIZE(hint), slots = 1;

	while (slots * 2 <= n)
		slots *= 2;
	while (slots > MIN_IDX_SLOTS && slots * sizeof(uint64_t) > conf->mem_len / 4)
		slots /= 2;
	if (slots < MIN_IDX_SLOTS)
		slots = MIN_IDX_SLOTS;
	return slots;
}

/* Calling context: any thread, before the log is handed to its owner lcore. */
struct sl_memlog *
sl_memlog_open(const struct sl_memlog_conf *conf)
{
	struct sl_memlog *log;
	uint64_t slots;

	if (!conf_ok(conf)) {
		errno = EINVAL;
		return NULL;
	}
	slots = idx_slots_of(conf);
	log = calloc(1, sizeof(*log));
	if (log == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	log->idx = conf->mem;
	log->idx_slots = slots;
	log->idx_mask = slots - 1;
	log->ring = (uint8_t *)conf->mem + slots * sizeof(uint64_t);
	log->ring_max = (conf->mem_len - slots * sizeof(uint64_t)) & ~(uint64_t)7;
	log->lazy = conf->lazy;
	log->ring_ready = log->lazy ? 0 : log->ring_max;
	log->idx_ready = log->lazy ? 0 : slots;
	log->ring_size = log->ring_ready;
	log->base_out = conf->base_out;
	log->first_id = conf->start_id != 0 ? conf->start_id : 1;
	set_base(log, log->first_id);
	log->end_id = log->first_id - 1;
	log->end_offset = conf->start_offset;
	log->last_ts = 0;
	set_empty(log);
	return log;
}

/* Calling context: control path, once the owner lcore no longer uses the log. */
void
sl_memlog_close(struct sl_memlog *log)
{
	free(log);
}

/* Write record id at pos (the caller checked the room). */
static void
put_record(struct sl_memlog *log, uint64_t pos, uint64_t id, const void *data, uint32_t len,
	   uint64_t ts, uint64_t trace_id, uint32_t batch)
{
	struct rec_hdr h = {
		.magic_len = (MAGIC_REC << MAGIC_SHIFT) | len,
		.batch = batch,
		.id = id,
		.timestamp_ns = ts,
		.trace_id = trace_id,
	};
	uint64_t rs = SL_MEMLOG_REC_SIZE(len);
	uint8_t *p = log->ring + pos;

	/* the id goes last: a process killed part-way leaves the old id there (a record
	 * of an older lap, or none), which sl_memlog_scan never takes for this one */
	if (len > 0)
		memcpy(p + SL_MEMLOG_REC_HDR, data, len);
	if (rs - SL_MEMLOG_REC_HDR > len)
		memset(p + SL_MEMLOG_REC_HDR + len, 0, rs - SL_MEMLOG_REC_HDR - len);
	memcpy(p, &h, offsetof(struct rec_hdr, id));
	memcpy(p + offsetof(struct rec_hdr, timestamp_ns), &h.timestamp_ns,
	       sizeof(h) - offsetof(struct rec_hdr, timestamp_ns));
	__atomic_signal_fence(__ATOMIC_RELEASE);	/* program order is enough for a kill */
	memcpy(p + offsetof(struct rec_hdr, id), &h.id, sizeof(h.id));
}

/* Wrap: pad the ring tail (readers skip to position 0) and start a new lap. */
static void
wrap_ring(struct sl_memlog *log)
{
	if (log->tail < log->ring_size) {
		uint32_t pad[2] = { MAGIC_PAD << MAGIC_SHIFT, 0 };

		/* tail and ring_size are multiples of 8: at least 8 bytes are left. */
		memcpy(log->ring + log->tail, pad, sizeof(pad));
	}
	log->prev_base = log->cur_base;
	log->cur_base = log->end_offset;
}

/*
 * A lazy log before an append of n messages: move the base when the log is empty, take
 * the ring prefix the grower made ready while the ring has not wrapped (the older lap of
 * a wrapped ring ends at the old wrap point), and check that the index prefix holds ids
 * up to end_id + n. 0, or -1 (and the prefix wanted, for the grower) when it does not.
 */
static int
lazy_room(struct sl_memlog *log, uint32_t n)
{
	uint64_t rr = __atomic_load_n(&log->ring_ready, __ATOMIC_ACQUIRE);
	uint64_t ir = __atomic_load_n(&log->idx_ready, __ATOMIC_ACQUIRE);
	uint64_t need;

	if (is_empty(log) && log->idx_base != log->end_id + 1)
		set_base(log, log->end_id + 1);
	if (rr > log->ring_size && !is_wrapped(log))
		log->ring_size = rr;
	need = log->end_id + n + 1 - log->idx_base;	/* slots up to the last new id */
	if (ir >= log->idx_slots || need <= ir)
		return 0;
	__atomic_store_n(&log->want_idx, need, __ATOMIC_RELAXED);
	__atomic_store_n(&log->refused_idx, log->refused_idx + n, __ATOMIC_RELAXED);
	return -1;
}

/* A lazy log refused an append of n records for want of record area: count its bytes,
 * the demand the grower sizes its next step by. */
static void
refused(struct sl_memlog *log, uint32_t n, const uint32_t *lens)
{
	uint64_t b = 0;
	uint32_t i;

	for (i = 0; i < n; i++)
		b += SL_MEMLOG_REC_SIZE(lens[i]);
	__atomic_store_n(&log->refused_ring, log->refused_ring + b, __ATOMIC_RELAXED);
}

static int
append_n(struct sl_memlog *log, uint32_t n, const void *const *datas, const uint32_t *lens,
	 uint64_t ts_ns, uint64_t trace_id, struct sl_memlog_rec *first)
{
	uint64_t tail = log->tail;
	int empty = is_empty(log);
	uint64_t retained = log->end_id + 1 - log->first_id;
	uint64_t ts = ts_ns > log->last_ts ? ts_ns : log->last_ts;
	uint64_t pos, first_pos = 0;
	uint32_t i;
	int wrap;

	for (i = 0; i < n; i++) {
		if (lens[i] > SL_MEMLOG_MAX_MSG ||
		    SL_MEMLOG_REC_SIZE(lens[i]) > log->ring_max)
			return -SL_E_TOO_BIG;
		if (lens[i] > 0 && datas[i] == NULL)
			return -EINVAL;
	}
	if (retained + n > log->idx_slots)
		return -SL_E_FULL;
	if (log->lazy && lazy_room(log, n) != 0)
		return -SL_E_FULL;
	/* Dry run: every record must fit before anything is written. */
	for (i = 0; i < n; i++) {
		uint64_t s = SL_MEMLOG_REC_SIZE(lens[i]);

		/* a lazy ring grows up to ring_max before it wraps: a wrapped ring cannot
		 * take a longer prefix until its older lap is gone */
		if (fit(log->ring_size, log->head, tail, empty, s, &pos, &wrap) != 0 ||
		    (wrap && log->ring_size < log->ring_max)) {
			if (log->ring_size < log->ring_max) {
				__atomic_store_n(&log->want_ring, tail + s, __ATOMIC_RELAXED);
				refused(log, n, lens);
			}
			return -SL_E_FULL;
		}
		tail = pos + s;
		empty = 0;
	}

	for (i = 0; i < n; i++) {
		uint64_t s = SL_MEMLOG_REC_SIZE(lens[i]);
		uint64_t id = log->end_id + 1;

		fit(log->ring_size, log->head, log->tail, is_empty(log), s, &pos, &wrap);
		if (wrap)
			wrap_ring(log);
		if (i == 0) {
			first_pos = pos;
			if (first != NULL) {
				first->id = id;
				first->offset = log->end_offset;
			}
		}
		put_record(log, pos, id, datas[i], lens[i], ts, trace_id,
			   (i & 0xFFFFu) | ((n - 1 - i) & 0xFFFFu) << 16);
		idx_set(log, id, pos);
		if (id - log->idx_base >= log->idx_hw)
			log->idx_hw = MIN_U64(id - log->idx_base + 1, log->idx_slots);
		log->tail = pos + s;
		log->end_id = id;
		log->end_offset += s;
	}
	log->last_ts = ts;
	if (first != NULL) {
		first->timestamp_ns = ts;
		first->trace_id = trace_id;
		first->len = lens[0];
		first->data = log->ring + first_pos + SL_MEMLOG_REC_HDR;
	}
	return 0;
}

/* Calling context: owner lcore (per-packet path: no allocation). */
int
sl_memlog_append(struct sl_memlog *log, const void *data, uint32_t len, uint64_t ts_ns,
		 uint64_t trace_id, struct sl_memlog_rec *pos)
{
	const void *datas[1] = { data };

	return append_n(log, 1, datas, &len, ts_ns, trace_id, pos);
}

/* Calling context: owner lcore (per-packet path: no allocation). */
int
sl_memlog_append_batch(struct sl_memlog *log, uint32_t n, const void *const *datas,
		       const uint32_t *lens, uint64_t ts_ns, uint64_t trace_id,
		       struct sl_memlog_rec *first)
{
	if (n == 0 || datas == NULL || lens == NULL)
		return -EINVAL;
	return append_n(log, n, datas, lens, ts_ns, trace_id, first);
}

/* Calling context: owner lcore. */
int
sl_memlog_read(const struct sl_memlog *log, uint64_t id, struct sl_memlog_rec *out)
{
	struct rec_hdr h;
	uint64_t pos;

	if (id < log->first_id || id > log->end_id)
		return -ENOENT;
	pos = idx_get(log, id);
	hdr_get(log, pos, &h);
	out->id = h.id;
	out->offset = logical_of(log, pos);
	out->timestamp_ns = h.timestamp_ns;
	out->trace_id = h.trace_id;
	out->len = h.magic_len & LEN_MASK;
	out->batch_index = (uint16_t)h.batch;
	out->batch_left = (uint16_t)(h.batch >> 16);
	out->data = log->ring + pos + SL_MEMLOG_REC_HDR;
	return 0;
}

/* Calling context: any thread, for an id handed over by the owner (see memlog.h). */
int
sl_memlog_peek(const struct sl_memlog *log, uint64_t id, struct sl_memlog_rec *out)
{
	struct rec_hdr h;
	uint64_t pos = idx_get(log, id);

	/* IDX_NONE (reset), or memory never written: no record header fits there */
	if (pos == IDX_NONE || pos > log->ring_max - SL_MEMLOG_REC_HDR || (pos & 7) != 0)
		return -EBADMSG;
	hdr_get(log, pos, &h);
	if (h.id != id)
		return -EBADMSG;
	out->id = h.id;
	out->offset = 0;
	out->timestamp_ns = h.timestamp_ns;
	out->trace_id = h.trace_id;
	out->len = h.magic_len & LEN_MASK;
	out->batch_index = (uint16_t)h.batch;
	out->batch_left = (uint16_t)(h.batch >> 16);
	out->data = log->ring + pos + SL_MEMLOG_REC_HDR;
	return 0;
}

/* Calling context: owner lcore. */
void
sl_memlog_trim(struct sl_memlog *log, uint64_t id)
{
	if (id > log->end_id + 1)
		id = log->end_id + 1;
	if (id <= log->first_id)
		return;
	log->first_id = id;
	if (is_empty(log))
		set_empty(log);
	else
		log->head = idx_get(log, id);
}

/*
 * Calling context: owner lcore. Ids below first_id were trimmed and their offsets are
 * gone, so id is clamped to first_id (everything retained is removed, the next append
 * gets first_id).
 */
void
sl_memlog_truncate(struct sl_memlog *log, uint64_t id)
{
	uint64_t pos, end;

	if (id < log->first_id)
		id = log->first_id;
	if (id > log->end_id)
		return;
	end = log->end_id;
	if (id == log->first_id) {
		log->end_offset = offset_of_id(log, id);
		log->end_id = id - 1;
		set_empty(log);
	} else {
		pos = idx_get(log, id);
		log->end_offset = logical_of(log, pos);
		if (is_wrapped(log) && pos >= log->head)
			log->cur_base = log->prev_base;	/* the newer lap is gone entirely */
		log->tail = pos;
		log->end_id = id - 1;
		log->last_ts = ts_of_id(log, log->end_id);
	}
	/* the removed records stay in the ring: unindex them, so that no scan of a region
	 * a killed process left takes them back (a rare path: a replication rollback) */
	for (; id <= end; id++)
		idx_set(log, id, IDX_NONE);
}

/*
 * Calling context: owner lcore, with no peek running (see memlog.h). The old records stay
 * in the ring until overwritten: the index no longer points at them.
 */
void
sl_memlog_reset(struct sl_memlog *log, uint64_t start_id, uint64_t start_offset)
{
	/* IDX_NONE over every slot written since the open (the rest was never written:
	 * the region starts zero, or, not lazy, the caller's memory holds no record) */
	memset(log->idx, 0xFF, (log->lazy ? log->idx_hw : log->idx_slots) * sizeof(uint64_t));
	log->first_id = start_id != 0 ? start_id : 1;
	set_base(log, log->first_id);
	log->end_id = log->first_id - 1;
	log->end_offset = start_offset;
	log->last_ts = 0;
	set_empty(log);
}

/* The record of message id in a region left by another process, if whole: 0 and *h. */
static int
scan_rec(const struct sl_memlog *g, uint64_t id, struct rec_hdr *h, uint64_t *pos)
{
	uint32_t len;

	*pos = idx_get(g, id);
	if (*pos == IDX_NONE || *pos > g->ring_size - SL_MEMLOG_REC_HDR || (*pos & 7) != 0)
		return -1;
	hdr_get(g, *pos, h);
	len = h->magic_len & LEN_MASK;
	if (h->id != id || h->magic_len >> MAGIC_SHIFT != MAGIC_REC ||
	    SL_MEMLOG_REC_SIZE(len) > g->ring_size - *pos)
		return -1;
	return 0;
}

/* Calling context: any thread, before the region is opened as a log (control path). */
int64_t
sl_memlog_scan(const struct sl_memlog_conf *conf, uint64_t from, sl_memlog_scan_fn cb,
	       void *arg)
{
	struct sl_memlog g;
	struct sl_memlog_rec r;
	struct rec_hdr h;
	uint64_t id, end = from - 1, ts = 0, pos, off;
	uint32_t want = 0;	/* the batch index the next record must have */
	int rc;

	if (!conf_ok(conf) || from == 0)
		return -EINVAL;
	memset(&g, 0, sizeof(g));
	g.idx = conf->mem;
	g.idx_slots = idx_slots_of(conf);
	g.idx_mask = g.idx_slots - 1;
	g.ring = (uint8_t *)conf->mem + g.idx_slots * sizeof(uint64_t);
	g.ring_size = (conf->mem_len - g.idx_slots * sizeof(uint64_t)) & ~(uint64_t)7;
	g.idx_base = conf->idx_base;
	/* pass 1: the end of the last whole PUB/MPUB (ids consecutive, batch positions
	 * that follow, timestamps that never go down, at most idx_slots messages) */
	for (id = from; id - from < g.idx_slots && scan_rec(&g, id, &h, &pos) == 0; id++) {
		if ((h.batch & 0xFFFFu) != want || h.timestamp_ns < ts)
			break;
		ts = h.timestamp_ns;
		want = h.batch >> 16 == 0 ? 0 : want + 1;
		if (want == 0)
			end = id;
	}
	/* pass 2: hand them over */
	off = conf->start_offset;
	for (id = from; id <= end; id++) {
		scan_rec(&g, id, &h, &pos);
		r.id = id;
		r.offset = off;
		r.timestamp_ns = h.timestamp_ns;
		r.trace_id = h.trace_id;
		r.len = h.magic_len & LEN_MASK;
		r.batch_index = (uint16_t)h.batch;
		r.batch_left = (uint16_t)(h.batch >> 16);
		r.data = g.ring + pos + SL_MEMLOG_REC_HDR;
		rc = cb(arg, &r);
		if (rc != 0)
			return rc < 0 ? rc : -EINVAL;
		off += SL_MEMLOG_REC_SIZE(r.len);
	}
	return (int64_t)(end + 1 - from);
}

/* Calling context: owner lcore. */
uint64_t
sl_memlog_first_id(const struct sl_memlog *log)
{
	return log->first_id;
}

/* Calling context: owner lcore. */
uint64_t
sl_memlog_end_id(const struct sl_memlog *log)
{
	return log->end_id;
}

/* Calling context: owner lcore. */
uint64_t
sl_memlog_end_offset(const struct sl_memlog *log)
{
	return log->end_offset;
}

/* Calling context: owner lcore. */
int
sl_memlog_offset_of(const struct sl_memlog *log, uint64_t id, uint64_t *off)
{
	if (id < log->first_id || id > log->end_id + 1)
		return -ENOENT;
	*off = offset_of_id(log, id);
	return 0;
}

/* Calling context: owner lcore. */
int
sl_memlog_find_offset(const struct sl_memlog *log, uint64_t off, uint64_t *id)
{
	uint64_t lo = log->first_id, hi = log->end_id;

	if (off == log->end_offset) {
		*id = log->end_id + 1;
		return 0;
	}
	if (is_empty(log) || off > log->end_offset || off < offset_of_id(log, lo))
		return -ENOENT;
	/* Offsets strictly increase with ids. */
	while (lo <= hi) {
		uint64_t mid = lo + (hi - lo) / 2;
		uint64_t o = offset_of_id(log, mid);

		if (o == off) {
			*id = mid;
			return 0;
		}
		if (o < off)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return -EINVAL;
}

/* Calling context: owner lcore. */
uint64_t
sl_memlog_find_time(const struct sl_memlog *log, uint64_t ts_ns)
{
	uint64_t lo = log->first_id, hi = log->end_id + 1;

	/* First id in [lo, hi) with ts >= ts_ns; hi when none. */
	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;

		if (ts_of_id(log, mid) >= ts_ns)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

/* Calling context: owner lcore (stats). */
uint64_t
sl_memlog_used(const struct sl_memlog *log)
{
	if (is_empty(log))
		return 0;
	if (log->head < log->tail)
		return log->tail - log->head;
	return log->ring_size - log->head + log->tail;	/* the older lap ends at ring_size */
}

/* Calling context: any thread. */
uint64_t
sl_memlog_capacity(const struct sl_memlog *log)
{
	return log->ring_max;
}

static uint64_t
round_up(uint64_t v, uint64_t to)
{
	return (v + to - 1) / to * to;
}

/* Calling context: control thread (the log's one grower). */
int
sl_memlog_grow_plan(const struct sl_memlog *log, struct sl_memlog_grow *g)
{
	uint64_t rr = __atomic_load_n(&log->ring_ready, __ATOMIC_RELAXED);
	uint64_t ir = __atomic_load_n(&log->idx_ready, __ATOMIC_RELAXED);
	uint64_t tail = __atomic_load_n(&log->tail, __ATOMIC_RELAXED);
	uint64_t want_r = __atomic_load_n(&log->want_ring, __ATOMIC_RELAXED);
	uint64_t want_i = __atomic_load_n(&log->want_idx, __ATOMIC_RELAXED);
	uint64_t end = __atomic_load_n(&log->end_id, __ATOMIC_RELAXED);
	uint64_t base = __atomic_load_n(&log->idx_base, __ATOMIC_RELAXED);
	uint64_t in_use = end + 1 - base;	/* slots from 0 up to the last id */
	uint64_t ref_r = __atomic_load_n(&log->refused_ring, __ATOMIC_RELAXED);
	uint64_t ref_i = __atomic_load_n(&log->refused_idx, __ATOMIC_RELAXED);
	uint64_t dem_r = ref_r - log->seen_refused_ring;	/* refused since the last step */
	uint64_t dem_i = ref_i - log->seen_refused_idx;
	uint64_t nr = rr, ni = ir;

	if (!log->lazy)
		return 0;
	/* double a prefix more than half in use, or make it as long as an append wanted;
	 * after refusals, what is in use plus twice the refused demand */
	if (rr < log->ring_max && (rr == 0 || tail * 2 > rr || want_r > rr || dem_r > 0)) {
		nr = MAX_U64(MAX_U64(2 * rr, want_r), tail + 2 * dem_r);
		nr = MIN_U64(round_up(nr, PAGE_SZ), log->ring_max);
		nr = MAX_U64(nr, MIN_U64(GROW_RING_MIN, log->ring_max));
	}
	if (ir < log->idx_slots && (ir == 0 || (in_use <= log->idx_slots && in_use * 2 > ir) ||
				    want_i > ir || dem_i > 0)) {
		ni = MAX_U64(MAX_U64(2 * ir, want_i), MIN_U64(in_use, log->idx_slots) + 2 * dem_i);
		ni = MIN_U64(round_up(ni, GROW_IDX_MIN), log->idx_slots);
		ni = MAX_U64(ni, MIN_U64(GROW_IDX_MIN, log->idx_slots));
	}
	if (nr == rr && ni == ir)
		return 0;
	g->refused_ring = ref_r;
	g->refused_idx = ref_i;
	g->idx_from = ir * sizeof(uint64_t);
	g->idx_to = ni * sizeof(uint64_t);
	g->ring_from = log->idx_slots * sizeof(uint64_t) + rr;
	g->ring_to = log->idx_slots * sizeof(uint64_t) + nr;
	g->idx_ready = ni;
	g->ring_ready = nr;
	return 1;
}

/* Calling context: owner lcore. */
int
sl_memlog_grow_wanted(const struct sl_memlog *log)
{
	uint64_t rr, ir;

	if (!log->lazy)
		return 0;
	rr = __atomic_load_n(&log->ring_ready, __ATOMIC_ACQUIRE);
	ir = __atomic_load_n(&log->idx_ready, __ATOMIC_ACQUIRE);
	if (rr < log->ring_max && !is_wrapped(log) && (log->tail * 2 > rr || log->want_ring > rr))
		return 1;
	return ir < log->idx_slots &&
	       ((log->end_id + 1 - log->idx_base) * 2 > ir || log->want_idx > ir);
}

/* Calling context: control thread, once g's ranges are ready. */
void
sl_memlog_grow_done(struct sl_memlog *log, const struct sl_memlog_grow *g)
{
	log->seen_refused_ring = g->refused_ring;
	log->seen_refused_idx = g->refused_idx;
	__atomic_store_n(&log->idx_ready, g->idx_ready, __ATOMIC_RELEASE);
	__atomic_store_n(&log->ring_ready, g->ring_ready, __ATOMIC_RELEASE);
}

/* Calling context: any thread (racy). */
uint64_t
sl_memlog_resident(const struct sl_memlog *log)
{
	return __atomic_load_n(&log->idx_ready, __ATOMIC_RELAXED) * sizeof(uint64_t) +
	       __atomic_load_n(&log->ring_ready, __ATOMIC_RELAXED);
}

/* Calling context: owner lcore (stats: any thread, racy). */
uint64_t
sl_memlog_count(const struct sl_memlog *log)
{
	return is_empty(log) ? 0 : log->end_id + 1 - log->first_id;
}

/* Calling context: any thread. */
uint64_t
sl_memlog_slots(const struct sl_memlog *log)
{
	return log->idx_slots;
}

/* Calling context: owner lcore. */
int
sl_memlog_half_full(const struct sl_memlog *log)
{
	return sl_memlog_used(log) * 2 > log->ring_max ||
	       sl_memlog_count(log) * 2 > log->idx_slots;
}
