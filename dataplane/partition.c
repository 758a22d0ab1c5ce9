/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * partition: the log, the channels, the link to the persistence lcore and delivery of
 * one partition (partition.h). The replication callbacks are in partition_repl.c.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <rte_common.h>
#include <rte_errno.h>
#include <rte_log.h>
#include <rte_malloc.h>
#include <urcu-qsbr.h>

#include "err.h"
#include "populate.h"
#include "partition_int.h"

RTE_LOG_REGISTER_SUFFIX(sl_partition_logtype, partition, INFO);

#define DELIVER_BUDGET 64
#define EPHEMERAL_SUFFIX "#ephemeral"

/* ---- channels ---- */

int
sl_partition_chan_find(const struct sl_partition *p, const char *name, uint32_t len)
{
	uint32_t i;

	for (i = 0; i < p->nchans; i++) {
		const char *n = sl_channel_name(p->chans[i]);

		if (strlen(n) == len && memcmp(n, name, len) == 0)
			return (int)i;
	}
	return -1;
}

/* Open a channel (its position persisted when the partition has a store and the channel
 * is durable). start_id 0: the oldest message memory holds. Its index or -SL_E_*. */
int
sl_partition_chan_open(struct sl_partition *p, const char *name, uint32_t len, int ordered,
		       int ephemeral, uint64_t start_id)
{
	const struct sl_partition_conf *c = &p->conf;
	struct sl_channel_conf cc;
	char nbuf[SL_CHANNEL_NAME_MAX + 1];
	struct sl_channel *ch;
	size_t sl = strlen(EPHEMERAL_SUFFIX);

	if (p->nchans >= SL_BROKER_MAX_CHANNELS)
		return -SL_E_LIMIT;
	if (sl_wire_check_name(name, len) != 0)
		return -SL_E_NAME;
	memcpy(nbuf, name, len);
	nbuf[len] = '\0';
	if (len > sl && memcmp(name + len - sl, EPHEMERAL_SUFFIX, sl) == 0)
		ephemeral = 1;
	memset(&cc, 0, sizeof(cc));
	cc.name = nbuf;
	cc.window = c->chan_window;
	cc.msg_timeout_ns = (uint64_t)c->msg_timeout_ms * 1000000ull;
	cc.max_req_delay_ns = (uint64_t)c->max_req_delay_ms * 1000000ull;
	cc.ordered = ordered;
	cc.ephemeral = ephemeral;
	/* a new channel starts at the oldest message the partition still holds in memory */
	cc.start_id = start_id != 0 ? start_id : sl_memlog_first_id(p->log);
	ch = sl_channel_open(&cc);
	if (ch == NULL)
		return errno == EINVAL ? -SL_E_INVAL : -ENOMEM;
	p->pslot[p->nchans] = UINT8_MAX;
	p->chan_anon[p->nchans] = 0;
	p->chan_src[p->nchans] = 0;
	if (p->store != NULL && !ephemeral && p->pslots_used != UINT32_MAX) {
		uint8_t slot = (uint8_t)__builtin_ctz(~p->pslots_used);

		p->pslots_used |= 1u << slot;
		p->pslot[p->nchans] = slot;
		sl_pstore_chan_set(p->store, slot, nbuf, ordered ? SL_DISKLOG_CHAN_ORDERED : 0,
				   cc.start_id);
	}
	p->chans[p->nchans] = ch;
	return (int)p->nchans++;
}

/* The flags a channel's saved position carries (SL_DISKLOG_CHAN_*). */
static uint32_t
chan_pflags(const struct sl_partition *p, int ci)
{
	return (sl_channel_is_ordered(p->chans[ci]) ? SL_DISKLOG_CHAN_ORDERED : 0) |
	       (p->chan_anon[ci] ? SL_DISKLOG_CHAN_ANON : 0);
}

/* Mark channel ci anonymous (created by a client's SUB from address src; 0: unknown). */
static void
chan_set_anon(struct sl_partition *p, int ci, uint32_t src)
{
	p->chan_anon[ci] = 1;
	p->chan_src[ci] = src;
	if (p->pslot[ci] != UINT8_MAX)
		sl_pstore_chan_set(p->store, p->pslot[ci], sl_channel_name(p->chans[ci]),
				   chan_pflags(p, ci), sl_channel_confirmed(p->chans[ci]));
}

/* May a SUB from address src create one more channel? 0 or -SL_E_LIMIT. */
static int
sub_chan_allowed(struct sl_partition *p, uint32_t src)
{
	uint32_t c, all = 0, mine = 0;

	for (c = 0; c < p->nchans; c++) {
		if (!p->chan_anon[c])
			continue;
		all++;
		mine += src != 0 && p->chan_src[c] == src;
	}
	if ((p->conf.sub_chans != 0 && all >= p->conf.sub_chans) ||
	    (p->conf.sub_chans_per_src != 0 && mine >= p->conf.sub_chans_per_src) ||
	    p->nchans >= SL_BROKER_MAX_CHANNELS) {
		p->sub_chans_refused++;
		return -SL_E_LIMIT;
	}
	return 0;
}

static void
chan_remove(struct sl_partition *p, int ci)
{
	uint8_t slot = p->pslot[ci];

	if (slot != UINT8_MAX) {
		sl_pstore_chan_clear(p->store, slot);
		p->pslots_used &= ~(1u << slot);
	}
	sl_channel_close(p->chans[ci]);
	p->chans[ci] = p->chans[p->nchans - 1];
	p->pslot[ci] = p->pslot[p->nchans - 1];
	p->chan_anon[ci] = p->chan_anon[p->nchans - 1];
	p->chan_src[ci] = p->chan_src[p->nchans - 1];
	p->chans[--p->nchans] = NULL;
}

static void
chan_gc_ephemeral(struct sl_partition *p, int ci)
{
	if (sl_channel_is_ephemeral(p->chans[ci]) && sl_channel_sub_count(p->chans[ci]) == 0)
		chan_remove(p, ci);
}

static int
chan_sub_of(const struct sl_channel *ch, uint64_t session)
{
	int i;

	for (i = 0; i < SL_CHANNEL_MAX_SUBS; i++) {
		const struct sl_channel_sub *s = sl_channel_sub_get(ch, i);

		if (s != NULL && s->session == session)
			return i;
	}
	return -1;
}

/* The id a position (SL_OFF_* kind, value) names, clamped to what is held. */
static uint64_t
pos_next_id(struct sl_partition *p, uint8_t kind, uint64_t value, int *err)
{
	uint64_t first = sl_memlog_first_id(p->log), end = sl_memlog_end_id(p->log), id;
	uint64_t first_off = 0;

	*err = 0;
	/* with a disk log, positions reach back to what the disk retains (read back by
	 * the disk reader); offsets and times older than memory are looked up on disk by
	 * the control socket's reset-offset */
	if (p->store != NULL)
		first = RTE_MIN(first, sl_pstore_disk_first_id(p->store));
	switch (kind) {
	case SL_OFF_OFFSET:
		if (sl_memlog_find_offset(p->log, value, &id) == 0)
			break;
		/* before the oldest retained message: start at the oldest */
		if (sl_memlog_offset_of(p->log, sl_memlog_first_id(p->log), &first_off) == 0 &&
		    value < first_off) {
			id = first;
			break;
		}
		*err = -SL_E_INVAL;
		return 0;
	case SL_OFF_COUNT:
		/* saturate: a count near 2^64 is past the end, never a wrap to the start */
		id = value == UINT64_MAX ? UINT64_MAX : value + 1;
		break;
	case SL_OFF_TIMESTAMP:
		id = sl_memlog_find_time(p->log, value);
		break;
	case SL_OFF_END:
		id = end + 1;
		break;
	default:
		*err = -SL_E_INVAL;
		return 0;
	}
	return RTE_MIN(RTE_MAX(id, first), end + 1);
}

/* The epoch a commit record written now carries: replication's write epoch, else the
 * view's. RCU read side. */
uint64_t
sl_partition_write_epoch(const struct sl_partition *p)
{
	return p->repl != NULL ? sl_repl_epoch(p->repl) : rcu_dereference(p->cp->meta)->epoch;
}

/* ---- completions ---- */

static void
done_push(struct sl_partition *p, const struct sl_partition_done *d)
{
	/* cannot overflow: DONE_RING exceeds every token that can be held at once */
	p->done[p->done_tail++ & (DONE_RING - 1)] = *d;
}

/* A held request is settled with err (0 or an SL_E_* code, either sign). */
void
sl_partition_complete(struct sl_partition *p, uint64_t token, int err)
{
	struct sl_partition_done d = {.token = token, .code = (uint16_t)(err < 0 ? -err : err)};

	done_push(p, &d);
}

/* The waiting publishes that end above id are never acknowledged (pend is in id order): each
 * is settled with err, oldest first, and dropped. Returns how many. Owner lcore. */
uint32_t
sl_partition_fail_after(struct sl_partition *p, uint64_t id, int err)
{
	uint32_t cut, i;

	for (cut = p->pend_head;
	     cut != p->pend_tail && p->pend[cut & (SL_PARTITION_PEND - 1)].last_id <= id; cut++)
		;
	for (i = cut; i != p->pend_tail; i++)
		sl_partition_complete(p, p->pend[i & (SL_PARTITION_PEND - 1)].token, err);
	i = p->pend_tail - cut;
	p->pend_tail = cut;
	return i;
}

static void
pend_push(struct sl_partition *p, uint64_t token, uint64_t last_id)
{
	struct pend *pd = &p->pend[p->pend_tail++ & (SL_PARTITION_PEND - 1)];

	pd->token = token;
	pd->last_id = last_id;
}

static uint32_t
pend_count(const struct sl_partition *p)
{
	return p->pend_tail - p->pend_head + (p->done_tail - p->done_head);
}

/* How far publishes may be answered and consumers see: durable (disk durability) and
 * committed by the ISR (replication). */
static uint64_t
ack_end(const struct sl_partition *p)
{
	uint64_t end = UINT64_MAX;

	if (p->disk)
		end = sl_pstore_durable_id(p->store);
	if (p->repl != NULL)
		end = RTE_MIN(end, p->committed);
	return end;
}

/* Answer the waiting publishes whose ids all end at or before end, oldest first. */
static void
ack_pending(struct sl_partition *p, uint64_t end)
{
	while (p->pend_head != p->pend_tail &&
	       p->pend[p->pend_head & (SL_PARTITION_PEND - 1)].last_id <= end) {
		struct sl_partition_done d = {
			.token = p->pend[p->pend_head++ & (SL_PARTITION_PEND - 1)].token};

		done_push(p, &d);
	}
}

/* ---- SET_OFFSET older than memory: looked up on disk by the reader ---- */

static int
on_disk(struct sl_partition *p, uint8_t kind, uint64_t value)
{
	uint64_t first = sl_memlog_first_id(p->log), off;
	struct sl_memlog_rec rec;

	if (p->store == NULL || sl_pstore_disk_first_id(p->store) >= first)
		return 0;
	if (kind == SL_OFF_OFFSET)
		return sl_memlog_offset_of(p->log, first, &off) == 0 && value < off;
	if (kind == SL_OFF_TIMESTAMP)
		return sl_memlog_read(p->log, first, &rec) != 0 || value < rec.timestamp_ns;
	return 0;
}

/* One lookup at a time per partition: SL_PARTITION_HELD or -SL_E_FULL. */
static int
setoff_defer(struct sl_partition *p, const struct sl_wire_chan_op *op, uint64_t token)
{
	if (p->setoff_busy)
		return -SL_E_FULL;
	p->find.ps = p->store;
	p->find.kind = op->kind == SL_OFF_OFFSET ? SL_DISKLOG_BY_OFFSET : SL_DISKLOG_BY_TIME;
	p->find.value = op->value;
	if (sl_persist_find_post(p->persist, &p->find) != 0)
		return -SL_E_FULL;
	memcpy(p->setoff_chan, op->addr.channel, op->addr.channel_len);
	p->setoff_chan[op->addr.channel_len] = '\0';
	p->setoff_token = token;
	p->setoff_busy = 1;
	return SL_PARTITION_HELD;
}

/* The disk lookup of a held SET_OFFSET is done: apply it, complete the request. */
static void
setoff_done(struct sl_partition *p)
{
	struct sl_partition_done d = {.token = p->setoff_token};
	uint64_t id = p->find.id, end = sl_memlog_end_id(p->log);
	int ci;

	p->setoff_busy = 0;
	p->find.state = SL_PFETCH_IDLE;
	ci = sl_partition_chan_find(p, p->setoff_chan, (uint32_t)strlen(p->setoff_chan));
	if (p->find.rc != 0 && p->find.rc != -ENOENT)
		d.code = p->find.rc == -EINVAL ? SL_E_INVAL : SL_E_IO;
	else if (ci < 0)
		d.code = SL_E_CHANNEL;
	if (d.code == 0) {
		/* -ENOENT: older than the disk holds; id is its oldest message */
		id = RTE_MIN(id, end + 1);
		sl_channel_reset(p->chans[ci], id);
		d.has_pos = 1;
		d.id = id;
		d.aux = id - 1;
		if (sl_memlog_offset_of(p->log, id, &d.offset) != 0)
			d.offset = p->find.rc == 0 && p->find.kind == SL_DISKLOG_BY_OFFSET ?
					   p->find.value : 0;
	}
	done_push(p, &d);
}

/* ---- storage events ---- */

/* Hand over to the disk again what memory holds from handover_next on (memory durability:
 * acknowledged already; replication: kept for the replicas), record by record as it was
 * first handed over, with its epoch and producer tag, so the disk log's commit records are
 * the replicas' (the files end at a record's end). As far as the persistence ring takes
 * now; the rest at the next poll. Until it is all handed over, the store takes nothing
 * else (publishes answer SL_E_FULL, replica appends wait): the disk log takes ids in
 * order. */
static void
handover(struct sl_partition *p)
{
	uint64_t id = p->handover_next, end = sl_memlog_end_id(p->log);
	struct sl_memlog_rec rec;

	while (id <= end && sl_memlog_read(p->log, id, &rec) == 0) {
		uint64_t producer = 0, seq = 0, epoch;
		uint32_t n = rec.batch_left + 1u;

		epoch = p->repl != NULL && p->nepochs > 0 ? sl_partition_epoch_for(p, id) :
							     sl_partition_write_epoch(p);
		sl_ptab_find_id(p->ptab, id, &producer, &seq);
		if (sl_persist_submit_tag(p->persist, p->conf.worker, p->store, id, n, rec.offset,
					  epoch, producer, seq) != 0) {
			p->handover_next = id;	/* the ring is full: the rest next time */
			return;
		}
		id += n;
	}
	/* memory no longer holds what the disk lacks: the store refuses the next append
	 * (not at its end) and fails again, with this as the reason */
	if (id <= end)
		PLOG(ERR, "%s/%u: id %" PRIu64 " is no longer in memory: the disk log cannot "
		     "be brought to %" PRIu64, p->store->topic, p->conf.partid, id, end);
	p->handover_next = 0;
	p->store_err = 0;
}

/* Handle a store error and its resume; complete a SET_OFFSET found on disk. */
static uint32_t
storage_poll(struct sl_partition *p)
{
	struct sl_pstore *st = p->store;
	uint32_t done = 0;
	uint64_t durable;
	int err;

	if (st == NULL)
		return 0;
	if (p->setoff_busy && sl_pstore_job_state(&p->find.state) == SL_PFETCH_READY) {
		setoff_done(p);
		done++;
	}
	/* the error first: the persistence lcore moves the durable id before it sets the
	 * error and never after, so the id read next is the store's final one */
	err = sl_pstore_error(st);
	durable = sl_pstore_durable_id(st);
	if (err != 0 && (!p->store_err || p->handover_next != 0)) {
		/* what the partition keeps: with disk durability and no replication what
		 * the last sync covered (the rest is cut from memory below and from the
		 * files on resume); else all of it, handed over to the disk again on resume
		 * (memory durability: it is acknowledged from memory; replication: the
		 * replicas may hold it already, and a leader's log cut below theirs would
		 * diverge from them) */
		int cut_mem = p->disk && p->repl == NULL;
		uint64_t keep = cut_mem ? durable : UINT64_MAX;

		/* a kept publish is answered as usual: now when durable and committed, else
		 * once the replicas commit it (an error answer would have its client
		 * publish it a second time) */
		ack_pending(p, ack_end(p));
		/* nothing else is ever acknowledged */
		p->io_errs += sl_partition_fail_after(p, keep, SL_E_IO);
		if (cut_mem) {
			sl_memlog_truncate(p->log, durable + 1);
			sl_ptab_truncate(p->ptab, durable);
		}
		p->store_err = 1;
		p->handover_next = 0;	/* failed again while handing over: a later resume */
		sl_pstore_error_ack(st, p->store_gen);
		done++;
	} else if (err == 0 && p->store_err && sl_pstore_gen(st) != p->store_gen) {
		/* resumed by an operator: the files end at durable */
		p->store_gen = sl_pstore_gen(st);
		p->handover_next = durable + 1;
		handover(p);
		done++;
	} else if (p->handover_next != 0) {
		handover(p);
		done++;
	}
	return done;
}

uint32_t
sl_partition_poll(struct sl_partition *p, uint64_t now_ns, struct sl_partition_done *done,
		  uint32_t max, uint32_t *work)
{
	uint32_t n = 0;

	*work += storage_poll(p);
	*work += sl_partition_repl_poll(p, now_ns);
	/* the publishes that became durable and committed, oldest first */
	if (p->pend != NULL && p->pend_head != p->pend_tail)
		ack_pending(p, ack_end(p));
	while (n < max && p->done_head != p->done_tail)
		done[n++] = p->done[p->done_head++ & (DONE_RING - 1)];
	*work += n;
	return n;
}

/* ---- publish ---- */

/* The leader write path's first step without replication (PutMessageToCluster): refuse
 * unless this node leads the partition, writes are enabled and the ISR is a majority.
 * RCU read side. */
static int
write_allowed(const struct sl_partition *p)
{
	const struct sl_part_meta *m = rcu_dereference(p->cp->meta);

	if (m->leader != p->conf.node_id)
		return -SL_E_NOT_LEADER;
	if (m->writes_disabled)
		return -SL_E_WRITE_DISABLED;
	if (m->nisr <= m->nreplicas / 2)
		return -SL_E_QUORUM;
	/* without replication state no other ISR member could acknowledge */
	if (m->nisr > 1)
		return -SL_E_QUORUM;
	return 0;
}

/* May a publish be written now? 0 or -SL_E_* (the retryable ones count as full), with
 * *why saying what a refusal waits for. */
static int
publish_check(struct sl_partition *p, const char **why)
{
	int rc = p->repl != NULL ? sl_repl_can_write(p->repl) : write_allowed(p);
	uint64_t end, mark;

	if (rc != 0)
		return rc;
	if (p->repl != NULL && pend_count(p) >= SL_PARTITION_PEND) {
		p->full_errs++;
		*why = "partition log full: waiting for the replicas (retry later)";
		return -SL_E_FULL;
	}
	if (p->store == NULL)
		return 0;
	/* resumed, memory is handing over what the disk lacks: a moment */
	if (p->handover_next != 0 && sl_pstore_error(p->store) == 0) {
		p->full_errs++;
		*why = "partition log full: waiting for the disk (retry later)";
		return -SL_E_FULL;
	}
	/* a failed store takes no more writes until an operator resumes it */
	if (p->store_err || sl_pstore_error(p->store) != 0) {
		p->io_errs++;
		return -SL_E_IO;
	}
	/* room to hand it over (and to wait for the disk), and, with memory durability, ids
	 * below the durable id mark (moved well ahead by the persistence lcore, asked to
	 * once the log nears it): else retry later */
	end = sl_memlog_end_id(p->log);
	mark = sl_pstore_id_mark(p->store);
	sl_pstore_mark_need(p->store, end, mark);
	if (sl_persist_room(p->persist, p->conf.worker) == 0 ||
	    (p->disk && pend_count(p) >= SL_PARTITION_PEND) || end + SL_WIRE_MPUB_MAX >= mark) {
		p->full_errs++;
		*why = "partition log full: waiting for the disk (retry later)";
		return -SL_E_FULL;
	}
	return 0;
}

/* Why the in-memory log refused an append: what releases it (the ERR text). */
static const char *
full_why(const struct sl_partition *p)
{
	if (p->store != NULL)
		return p->repl != NULL ?
			       "partition log full: waiting for the disk or the replicas (retry "
			       "later)" :
			       "partition log full: waiting for the disk (retry later)";
	if (p->nchans == 0)
		return "partition log full: no channel (memory only: messages are kept until "
		       "a channel consumes them)";
	return p->repl != NULL ?
		       "partition log full: a channel or a replica is behind (retry later)" :
		       "partition log full: a channel is behind (retry later)";
}

/*
 * A publish of a session with a producer id: was (producer, seq) written already, in
 * another session or by another leader (ptab.h)? 1: no, write it. 0: yes, *res is the
 * original answer (nothing written). -SL_E_WRITE_DISABLED: yes, but not committed (or
 * durable) yet: a busy answer, the client retries. -SL_E_SEQ_OLD: older than what the
 * table remembers of the producer: the outcome cannot be told, nothing is written.
 */
static int
producer_check(struct sl_partition *p, const struct sl_wire_pub *pub,
	       struct sl_partition_res *res)
{
	const struct sl_ptab_ent *hit;
	uint64_t last;

	switch (sl_ptab_check(p->ptab, pub->producer, pub->pseq, &hit)) {
	case SL_PTAB_NEW:
		return 1;
	case SL_PTAB_OLD:
		p->ptab->old++;
		res->why = "seq older than the producer's publishes this partition remembers: "
			   "outcome unknown, not written";
		return -SL_E_SEQ_OLD;
	case SL_PTAB_DUP:
		break;
	}
	last = hit->id + hit->count - 1;
	if (last > ack_end(p)) {
		res->why = "the first copy of this publish is not committed yet (retry)";
		return -SL_E_WRITE_DISABLED;
	}
	p->ptab->dups++;
	res->count = hit->count;
	res->id = hit->id;
	res->offset = hit->offset;
	res->aux = last;
	return 0;
}

/* Append the bodies of a PUB or MPUB to the log: 0 and *rec (the first record). */
static int
append(struct sl_partition *p, const struct sl_wire_pub *pub, int mpub, uint64_t ts,
       struct sl_memlog_rec *rec)
{
	const void *datas[SL_WIRE_MPUB_MAX];
	uint32_t lens[SL_WIRE_MPUB_MAX], pos = 0, n = 0, len;
	const uint8_t *d;

	if (!mpub) {
		if (pub->msg_len > p->conf.max_msg)
			return -SL_E_TOO_BIG;
		return sl_memlog_append(p->log, pub->msg, pub->msg_len, ts, pub->trace_id, rec);
	}
	while (n < SL_WIRE_MPUB_MAX && sl_wire_mpub_next(pub, &pos, &d, &len)) {
		if (len > p->conf.max_msg)
			return -SL_E_TOO_BIG;
		datas[n] = d;
		lens[n++] = len;
	}
	if (n != pub->count)
		return -SL_E_PUB_ARG;
	return sl_memlog_append_batch(p->log, n, datas, lens, ts, pub->trace_id, rec);
}

/*
 * The log wants to grow (more than half of its ready part used, or an append refused for
 * want of it): wake the grower (the control thread) through grow_fd, once per growth
 * step, so a log written fast grows within microseconds instead of at the next 10 ms
 * tick. A system call, but at most one per growth step of the partition (a doubling, or
 * a refusal after one), never one per packet.
 */
static inline void
grow_kick(struct sl_partition *p)
{
	uint64_t one = 1;

	if (p->conf.grow_fd <= 0 || __atomic_load_n(&p->grow_kicked, __ATOMIC_RELAXED) ||
	    !sl_memlog_grow_wanted(p->log))
		return;
	__atomic_store_n(&p->grow_kicked, 1, __ATOMIC_RELAXED);
	p->grow_kicks++;
	if (write(p->conf.grow_fd, &one, sizeof(one)) < 0)
		return;	/* a full counter is a pending wake-up too: the tick grows it anyway */
}

int
sl_partition_publish(struct sl_partition *p, const struct sl_wire_pub *pub, int mpub,
		     uint64_t wall_ns, uint64_t now_ns, uint64_t token,
		     struct sl_partition_res *res)
{
	struct sl_memlog_rec rec;
	int rc;

	rc = publish_check(p, &res->why);
	if (rc != 0)
		return rc;
	if (pub->producer != 0) {
		rc = producer_check(p, pub, res);
		if (rc != 1)
			return rc;
	}
	rc = append(p, pub, mpub, wall_ns, &rec);
	grow_kick(p);
	if (rc != 0) {
		if (rc == -SL_E_FULL) {
			p->full_errs++;
			res->why = full_why(p);
		}
		return rc;
	}
	/* the tag goes with the record: replication reads it back from the table */
	sl_ptab_note(p->ptab, pub->producer, pub->pseq, rec.id, pub->count, rec.offset);
	if (p->repl != NULL) {
		p->now_ns = now_ns;
		rc = sl_partition_repl_write(p, &rec, pub->count);
		if (rc != 0) {
			sl_memlog_truncate(p->log, rec.id);
			sl_ptab_truncate(p->ptab, rec.id - 1);
			return rc;
		}
	}
	p->pubs++;
	p->msgs_in += pub->count;
	p->bytes_in += pub->msg_len;
	res->count = pub->count;
	res->id = rec.id;
	res->offset = rec.offset;
	res->aux = sl_memlog_end_id(p->log);
	if (p->store != NULL)
		sl_persist_submit_tag(p->persist, p->conf.worker, p->store, rec.id, pub->count,
				      rec.offset, sl_partition_write_epoch(p), pub->producer,
				      pub->pseq);
	if (p->pend == NULL)
		return 0;
	/* answered once durable and committed by the ISR */
	pend_push(p, token, rec.id + pub->count - 1);
	return SL_PARTITION_HELD;
}

/* ---- channel operations ---- */

int
sl_partition_sub_creates_durable(const struct sl_partition *p, const struct sl_wire_sub *sub)
{
	size_t sl = strlen(EPHEMERAL_SUFFIX);
	uint32_t len = sub->addr.channel_len;

	if (sub->flags & SL_WIRE_SUB_EPHEMERAL ||
	    sl_partition_chan_find(p, sub->addr.channel, len) >= 0)
		return 0;
	return !(len > sl && memcmp(sub->addr.channel + len - sl, EPHEMERAL_SUFFIX, sl) == 0);
}

int
sl_partition_subscribe(struct sl_partition *p, const struct sl_wire_sub *sub,
		       uint64_t session, uint32_t session_slot, uint64_t sub_id,
		       struct sl_partition_res *res)
{
	const struct sl_session *ss;
	struct sl_channel *ch;
	uint64_t off = 0;
	int ci, si, rc;

	ci = sl_partition_chan_find(p, sub->addr.channel, sub->addr.channel_len);
	if (ci < 0) {
		/* an anonymous channel, capped per partition and per creator address */
		const struct sl_session *s = sl_session_peek(p->conf.sessions, session_slot,
							     session);
		uint32_t src = s != NULL ? s->ip : 0;

		rc = sl_wire_check_name(sub->addr.channel, sub->addr.channel_len) != 0 ?
			     -SL_E_NAME : sub_chan_allowed(p, src);
		if (rc != 0)
			return rc;
		ci = sl_partition_chan_open(p, sub->addr.channel, sub->addr.channel_len,
					    !!(sub->flags & SL_WIRE_SUB_ORDERED),
					    !!(sub->flags & SL_WIRE_SUB_EPHEMERAL), 0);
		if (ci < 0)
			return ci;
		chan_set_anon(p, ci, src);
	}
	ch = p->chans[ci];
	si = chan_sub_of(ch, session);
	if (si >= 0) {
		sl_channel_sub_rdy(ch, si, sub->rdy);
		sub_id = sl_channel_sub_get(ch, si)->sub_id;
	} else {
		rc = sl_channel_sub_add(ch, session, session_slot, sub_id, sub->rdy);
		if (rc < 0) {
			chan_gc_ephemeral(p, ci);
			return rc;
		}
		ss = sl_session_peek(p->conf.sessions, session_slot, session);
		if (ss != NULL)	/* the next hop it starts with */
			sl_channel_sub_hop(ch, rc, __atomic_load_n(&ss->mac_gen, __ATOMIC_ACQUIRE),
					   0);
	}
	sl_memlog_offset_of(p->log, sl_channel_confirmed(ch), &off);
	res->id = sub_id;
	res->offset = off;
	res->aux = sl_memlog_end_id(p->log);
	return 0;
}

static int
set_offset(struct sl_partition *p, struct sl_channel *ch, const struct sl_wire_chan_op *op,
	   uint64_t token, struct sl_partition_res *res)
{
	uint64_t prev = sl_channel_confirmed(ch), id;
	int rc;

	if (on_disk(p, op->kind, op->value))
		return setoff_defer(p, op, token);
	id = pos_next_id(p, op->kind, op->value, &rc);
	if (rc != 0)
		return rc;
	sl_channel_reset(ch, id);
	sl_memlog_offset_of(p->log, id, &res->offset);
	res->id = id;
	res->aux = id - 1;
	return sl_partition_chan_sync(p, ch, prev, 1, token);
}

static int
fin(struct sl_partition *p, struct sl_channel *ch, int si, const struct sl_wire_chan_op *op,
    uint64_t token, struct sl_partition_res *res)
{
	uint64_t prev = sl_channel_confirmed(ch);
	uint32_t i, ok = 0;

	for (i = 0; i < op->count; i++)
		if (sl_channel_fin(ch, si, sl_wire_fin_id(op, i)) == 0)
			ok++;
	res->count = ok;
	if (ok == 0)
		return -SL_E_MSG_ID;
	return sl_partition_chan_sync(p, ch, prev, 0, token);
}

int
sl_partition_chan_op(struct sl_partition *p, uint8_t opcode, const struct sl_wire_chan_op *op,
		     uint64_t session, uint64_t now_ns, uint64_t token,
		     struct sl_partition_res *res)
{
	struct sl_channel *ch;
	int ci, si;

	ci = sl_partition_chan_find(p, op->addr.channel, op->addr.channel_len);
	if (ci < 0)
		return -SL_E_CHANNEL;
	ch = p->chans[ci];
	p->now_ns = now_ns;
	if (opcode == SL_OP_SET_OFFSET) {
		sl_channel_mark_used(ch, now_ns);
		return set_offset(p, ch, op, token, res);
	}
	si = chan_sub_of(ch, session);
	if (si < 0)
		return -SL_E_CHANNEL;
	switch (opcode) {
	case SL_OP_RDY:
		return sl_channel_sub_rdy(ch, si, op->count);
	case SL_OP_FIN:
		return fin(p, ch, si, op, token, res);
	case SL_OP_REQ:
		res->id = op->msg_id;
		return sl_channel_req(ch, si, op->msg_id, (uint64_t)op->delay_ms * 1000000ull,
				      now_ns);
	case SL_OP_TOUCH:
		res->id = op->msg_id;
		return sl_channel_touch(ch, si, op->msg_id, now_ns);
	case SL_OP_CLS:
		sl_channel_sub_remove(ch, si, now_ns);
		chan_gc_ephemeral(p, ci);
		return 0;
	default:
		return -SL_E_OPCODE;
	}
}

/* ---- delivery ---- */

/*
 * Message id from the disk reader's buffer: 0 and *rec, -EAGAIN while it is being fetched
 * (a fetch from id is posted when the buffer does not hold it), -ENOENT when the disk no
 * longer has it or never had it (a lost range, storage/disklog.h). No I/O here: the
 * reader thread does it.
 */
static int
disk_rec(struct sl_partition *p, uint64_t id, struct sl_memlog_rec *rec)
{
	struct sl_pfetch *f = &p->store->fetch;
	uint32_t state = sl_pstore_job_state(&f->state);
	const struct sl_disklog_msg *m;

	if (id >= sl_memlog_first_id(p->log))
		return -ENOENT;	/* not written yet, or rolled back */
	if (state == SL_PFETCH_QUEUED)
		return -EAGAIN;
	if (state == SL_PFETCH_READY) {
		if (f->rc == 0 && f->n > 0 && id >= f->msgs[0].id && id <= f->msgs[f->n - 1].id) {
			m = &f->msgs[id - f->msgs[0].id];
			rec->id = m->id;
			rec->offset = m->offset;
			rec->timestamp_ns = m->timestamp_ns;
			rec->trace_id = m->trace_id;
			rec->len = m->len;
			rec->data = m->data;
			p->disk_reads++;
			return 0;
		}
		/* gone (retention) or never held (a lost range): every id from the fetch's
		 * start to the next one held is skipped on this one answer */
		if (f->rc == -ENOENT && id >= f->from_id && id < f->first_avail)
			return -ENOENT;
	}
	sl_persist_fetch(p->persist, p->store, id, sl_pstore_written_id(p->store));
	return -EAGAIN;
}

/* One delivery: 0 sent (or skipped), -1 stop this channel for now. */
static int
deliver_one(struct sl_partition *p, struct sl_channel *ch, const struct sl_channel_delivery *d,
	    uint64_t now_ns, sl_partition_emit_fn emit, void *arg)
{
	const struct sl_channel_sub *sub = sl_channel_sub_get(ch, d->sub);
	const struct sl_session *s = sl_session_peek(p->conf.sessions, sub->session_slot,
						     sub->session);
	struct sl_partition_msg msg;
	struct sl_memlog_rec rec;
	int rc;

	if (s == NULL || s->closing) {
		/* subscriber's session is gone: its in-flight ids (this one too) requeue */
		sl_channel_sub_remove(ch, d->sub, now_ns);
		return 1;
	}
	if (sl_memlog_read(p->log, d->id, &rec) != 0) {
		rc = p->store != NULL ? disk_rec(p, d->id, &rec) : -ENOENT;
		if (rc == -EAGAIN) {
			/* the reader is fetching it: deliver it on a later iteration */
			sl_channel_unsend(ch, d);
			return -1;
		}
		if (rc != 0) {
			/* no longer held anywhere (retention, or a position moved below
			 * the log start): skip it */
			p->disk_skipped++;
			sl_channel_fin(ch, d->sub, d->id);
			return 1;
		}
	}
	msg.session = sub->session;
	msg.sub_id = sub->sub_id;
	msg.partid = p->conf.partid;
	msg.attempts = d->attempts;
	msg.rec = &rec;
	msg.sess = s;
	rc = emit(arg, &msg);
	if (rc < 0) {
		sl_channel_unsend(ch, d);
		return -1;
	}
	if (rc > 0) {
		sl_channel_fin(ch, d->sub, d->id);
		return 1;
	}
	p->deliveries++;
	return 0;
}

uint32_t
sl_partition_deliver(struct sl_partition *p, uint64_t now_ns, sl_partition_emit_fn emit,
		     void *arg)
{
	/* consumers see only what a crash would not take back: durable (disk durability)
	 * and committed by the ISR (replication) */
	uint64_t end;
	uint32_t c, done = 0;

	if (p->nchans == 0)
		return 0;	/* every loop, for each of thousands of idle partitions */
	end = RTE_MIN(sl_memlog_end_id(p->log), ack_end(p));
	for (c = 0; c < p->nchans; c++) {
		struct sl_channel *ch = p->chans[c];
		struct sl_channel_delivery d;
		uint32_t budget = DELIVER_BUDGET;

		if (sl_channel_sub_count(ch) == 0)
			continue;
		while (budget-- && sl_channel_next(ch, end, now_ns, &d)) {
			if (deliver_one(p, ch, &d, now_ns, emit, arg) < 0)
				break;
			done++;
		}
	}
	return done;
}

/* ---- trimming ---- */

/*
 * Drop the in-memory log below id `to`. A replicated partition keeps its last committed
 * record and everything after it: replication sends each record with the epoch of the
 * one before, reads what it resends from memory, and finds the log's end there.
 */
static void
trim_mem(struct sl_partition *p, uint64_t to)
{
	struct sl_memlog_rec rec;
	uint64_t keep = p->committed;

	if (p->repl != NULL) {
		if (keep >= sl_memlog_first_id(p->log) && sl_memlog_read(p->log, keep, &rec) == 0)
			keep -= rec.batch_index;	/* that record's first id */
		to = RTE_MIN(to, keep);
	}
	if (to > p->trimmed_to && to > sl_memlog_first_id(p->log)) {
		sl_memlog_trim(p->log, to);
		p->trimmed_to = to;
	}
}

/*
 * Trimming with a store: memory is a cache of the disk log. What every channel confirmed
 * goes once it is durable; when the log is more than half full, by ring bytes or by index
 * slots (small messages fill the index first), everything durable goes, and channels
 * behind read it back through the disk reader.
 */
static void
trim_stored(struct sl_partition *p, uint64_t min)
{
	uint64_t durable = sl_pstore_durable_id(p->store);
	uint64_t to = min == UINT64_MAX ? 0 : min;

	sl_pstore_keep_from(p->store, min == UINT64_MAX ? 0 : min);
	if (p->store_err)
		return;
	if (sl_memlog_half_full(p->log) && durable + 1 > to) {
		if (to <= durable && min != UINT64_MAX)
			p->cache_trims++;
		to = durable + 1;
	}
	trim_mem(p, RTE_MIN(to, durable + 1));
}

/* A channel's tick: timeouts and dead subscribers. 1 when the channel is gone. */
static int
chan_tick(struct sl_partition *p, int c, uint64_t now_ns)
{
	struct sl_channel *ch = p->chans[c];
	const struct sl_session *ss;
	int s;

	sl_channel_expire(ch, now_ns);
	for (s = 0; s < SL_CHANNEL_MAX_SUBS; s++) {
		const struct sl_channel_sub *sub = sl_channel_sub_get(ch, s);

		if (sub == NULL)
			continue;
		ss = sl_session_peek(p->conf.sessions, sub->session_slot, sub->session);
		if (ss == NULL || ss->closing)
			sl_channel_sub_remove(ch, s, now_ns);
		else	/* its next hop moved: what it holds may be lost (session.h) */
			sl_channel_sub_hop(ch, s, __atomic_load_n(&ss->mac_gen, __ATOMIC_ACQUIRE),
					   now_ns);
	}
	if (sl_channel_is_ephemeral(ch) && sl_channel_sub_count(ch) == 0) {
		chan_remove(p, c);
		return 1;
	}
	/* an anonymous durable channel nobody uses goes after the operator's idle time, so
	 * that it cannot hold memory (no data directory) or disk retention forever */
	if (sl_channel_idle(ch, now_ns) >= p->conf.sub_chan_idle_ms * 1000000ull &&
	    p->chan_anon[c] && p->conf.sub_chan_idle_ms != 0) {
		PLOG(INFO, "partition %u: anonymous channel %s idle for %" PRIu64 " ms: deleted",
		     p->conf.partid, sl_channel_name(ch), p->conf.sub_chan_idle_ms);
		p->sub_chans_expired++;
		chan_remove(p, c);
		return 1;
	}
	if (p->pslot[c] != UINT8_MAX)
		sl_pstore_chan_set(p->store, p->pslot[c], sl_channel_name(ch), chan_pflags(p, c),
				   sl_channel_confirmed(ch));
	return 0;
}

uint64_t
sl_partition_next_due(const struct sl_partition *p, uint64_t now_ns)
{
	uint64_t due = UINT64_MAX;
	uint32_t c;

	if (p->store != NULL || p->repl != NULL)
		return now_ns;
	for (c = 0; c < p->nchans; c++)
		due = RTE_MIN(due, sl_channel_next_due(p->chans[c]));
	return due;
}

void
sl_partition_tick(struct sl_partition *p, uint64_t now_ns)
{
	uint64_t min = UINT64_MAX;
	int c;

	p->now_ns = now_ns;
	for (c = (int)p->nchans - 1; c >= 0; c--)
		if (chan_tick(p, c, now_ns) == 0)
			min = RTE_MIN(min, sl_channel_confirmed(p->chans[c]));
	if (p->store != NULL)
		trim_stored(p, min);
	/* messages every channel confirmed are released; with no channel at all the log
	 * keeps everything (and fills up) so that no message is ever dropped */
	else if (p->nchans > 0 && min != UINT64_MAX && min > p->trimmed_to)
		trim_mem(p, min);
}

/* ---- commands from the control thread, run by the owner ---- */

int
sl_partition_chan_create(struct sl_partition *p, const char *name, int ordered)
{
	int ci;

	if (sl_partition_chan_find(p, name, (uint32_t)strlen(name)) >= 0)
		return -SL_E_EXISTS;
	ci = sl_partition_chan_open(p, name, (uint32_t)strlen(name), ordered, 0, 0);
	return ci < 0 ? ci : 0;
}

int
sl_partition_chan_delete(struct sl_partition *p, const char *name)
{
	int ci = sl_partition_chan_find(p, name, (uint32_t)strlen(name));

	if (ci < 0)
		return -SL_E_CHANNEL;
	chan_remove(p, ci);
	return 0;
}

int
sl_partition_chan_reset(struct sl_partition *p, const char *name, uint8_t kind,
			uint64_t value, uint64_t *id)
{
	int ci = sl_partition_chan_find(p, name, (uint32_t)strlen(name)), rc;

	if (ci < 0)
		return -SL_E_CHANNEL;
	*id = pos_next_id(p, kind, value, &rc);
	if (rc != 0)
		return rc;
	sl_channel_reset(p->chans[ci], *id);
	return 0;
}

void
sl_partition_info(const struct sl_partition *p, struct sl_part_info *info)
{
	uint32_t c;

	memset(info, 0, sizeof(*info));
	info->owner = p->conf.worker;
	info->first_id = sl_memlog_first_id(p->log);
	info->end_id = sl_memlog_end_id(p->log);
	info->end_offset = sl_memlog_end_offset(p->log);
	info->log_used = sl_memlog_used(p->log);
	info->log_capacity = sl_memlog_capacity(p->log);
	info->mem_resident = sl_partition_resident(p);
	info->log_msgs = sl_memlog_count(p->log);
	info->log_slots = sl_memlog_slots(p->log);
	info->pubs = p->pubs;
	info->msgs_in = p->msgs_in;
	info->bytes_in = p->bytes_in;
	info->full_errs = p->full_errs;
	info->grow_kicks = __atomic_load_n(&p->grow_kicks, __ATOMIC_RELAXED);
	info->grow_refused = __atomic_load_n(&p->grow_refused, __ATOMIC_RELAXED);
	info->deliveries = p->deliveries;
	info->store = p->store;
	info->disk = (uint8_t)p->disk;
	info->pending = p->pend_tail - p->pend_head;
	info->io_errs = p->io_errs;
	info->disk_reads = p->disk_reads;
	info->disk_skipped = p->disk_skipped;
	info->cache_trims = p->cache_trims;
	info->sub_chans_refused = p->sub_chans_refused;
	info->sub_chans_expired = p->sub_chans_expired;
	/* a table no publish and no restart filled is empty: reading it would make its
	 * pages resident (lazy_zalloc) */
	if (p->ptab_restored || sl_memlog_end_id(p->log) != p->open_end_id) {
		info->producers = sl_ptab_count(p->ptab);
		info->producer_dups = p->ptab->dups;
		info->producer_old = p->ptab->old;
		info->producer_evictions = p->ptab->evictions;
	}
	if (p->repl != NULL) {
		info->repl = 1;
		info->in_sync = (uint8_t)sl_repl_in_sync(p->repl);
		info->committed = p->committed;
		sl_repl_get_stats(p->repl, &info->rst);
	}
	info->nchans = p->nchans;
	for (c = 0; c < p->nchans; c++) {
		struct sl_channel *ch = p->chans[c];
		struct sl_chan_info *ci = &info->chans[c];

		snprintf(ci->name, sizeof(ci->name), "%s", sl_channel_name(ch));
		ci->ordered = (uint8_t)sl_channel_is_ordered(ch);
		ci->ephemeral = (uint8_t)sl_channel_is_ephemeral(ch);
		ci->anonymous = p->chan_anon[c];
		ci->nsubs = sl_channel_sub_count(ch);
		ci->idle_ms = sl_channel_idle_ns(ch, p->now_ns) / 1000000ull;
		ci->confirmed_id = sl_channel_confirmed(ch);
		ci->cursor_id = sl_channel_cursor(ch);
		sl_memlog_offset_of(p->log, ci->confirmed_id, &ci->confirmed_offset);
		ci->depth = info->end_id + 1 > ci->confirmed_id ? info->end_id + 1 -
								      ci->confirmed_id : 0;
		sl_channel_get_stats(ch, &ci->st);
	}
}

void
sl_partition_detach(struct sl_partition *p, void (*drop)(void *arg, uint64_t token),
		    void *arg)
{
	uint32_t c;

	while (p->nchans > 0)
		chan_remove(p, (int)p->nchans - 1);
	while (p->pend != NULL && p->pend_head != p->pend_tail)
		drop(arg, p->pend[p->pend_head++ & (SL_PARTITION_PEND - 1)].token);
	while (p->done != NULL && p->done_head != p->done_tail)
		drop(arg, p->done[p->done_head++ & (DONE_RING - 1)].token);
	for (c = 0; p->chanwait != NULL && c < SL_PARTITION_CHANWAIT; c++) {
		if (p->chanwait[c].used && p->chanwait[c].held)
			drop(arg, p->chanwait[c].token);
		p->chanwait[c].used = 0;
	}
	if (p->setoff_busy) {
		drop(arg, p->setoff_token);
		p->setoff_busy = 0;
	}
}

/* ---- life cycle (control thread) ---- */

/*
 * Tables that cost what they hold: an anonymous mapping reserved, not populated (zero
 * pages, no swap reserved), so a partition that never uses its producer table or its
 * held-request rings costs no memory for them. The control thread populates them when
 * the partition first takes a publish (grow_tables), so the worker takes at most the
 * faults of the pages it writes before that (a few, once per partition).
 */
static void *
lazy_zalloc(size_t len)
{
	void *m = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	return m == MAP_FAILED ? NULL : m;
}

static void
lazy_free(void *m, size_t len)
{
	if (m != NULL)
		munmap(m, len);
}

#define PEND_BYTES (sizeof(struct pend) * SL_PARTITION_PEND)
#define DONE_BYTES (sizeof(struct sl_partition_done) * DONE_RING)

/* The held-request queues of a partition whose answers wait (disk or replication). */
int
sl_partition_queues(struct sl_partition *p)
{
	if (p->pend == NULL)
		p->pend = lazy_zalloc(PEND_BYTES);
	if (p->done == NULL)
		p->done = lazy_zalloc(DONE_BYTES);
	p->tables_ready = 0;
	return p->pend != NULL && p->done != NULL ? 0 : -ENOMEM;
}

/* The log's memory: reserved for conf->log_bytes, grown by sl_partition_grow. */
static void *
log_reserve(const struct sl_partition_conf *conf)
{
	return lazy_zalloc(conf->log_bytes);
}

/* One growth step of the log (memlog.h, lazy logs): make its ranges writable. */
static int
grow_log(struct sl_partition *p)
{
	struct sl_memlog_grow g;
	int rc = 0;

	if (!sl_memlog_grow_plan(p->log, &g))
		return 0;
	if (p->log_mapped) {
		rc = sl_pstore_log_prepare(p->store_mapped, g.idx_from, g.idx_to - g.idx_from);
		if (rc == 0)
			rc = sl_pstore_log_prepare(p->store_mapped, g.ring_from,
						   g.ring_to - g.ring_from);
	} else {
		uintptr_t a = (uintptr_t)p->log_mem;
		uintptr_t i0 = (a + g.idx_from) & ~(uintptr_t)4095;
		uintptr_t r0 = (a + g.ring_from) & ~(uintptr_t)4095;

		sl_populate_write((void *)i0, a + g.idx_to - i0);
		sl_populate_write((void *)r0, a + g.ring_to - r0);
	}
	if (rc != 0)
		return rc;
	sl_memlog_grow_done(p->log, &g);
	return 1;
}

/* Once the partition took a publish: populate its tables (see lazy_zalloc). */
static void
grow_tables(struct sl_partition *p)
{
	if (p->tables_ready || sl_memlog_end_id(p->log) == p->open_end_id)
		return;
	sl_populate_write(p->ptab, sizeof(*p->ptab));
	sl_populate_write(p->pend, p->pend != NULL ? PEND_BYTES : 0);
	sl_populate_write(p->done, p->done != NULL ? DONE_BYTES : 0);
	p->tables_ready = 1;
}

int64_t
sl_partition_grow(struct sl_partition *p, uint64_t room)
{
	struct sl_memlog_grow g;
	uint64_t tables = sizeof(*p->ptab) + (p->pend != NULL ? PEND_BYTES : 0) +
			  (p->done != NULL ? DONE_BYTES : 0);
	int64_t n = 0;
	int rc;

	if (p == NULL || p->log == NULL)
		return 0;
	if (sl_memlog_grow_plan(p->log, &g)) {
		uint64_t step = g.idx_to - g.idx_from + g.ring_to - g.ring_from;

		if (step > room) {
			p->grow_refused++;	/* over the memory budget: appends stay full */
		} else {
			rc = grow_log(p);
			if (rc < 0)
				return rc;
			n += (int64_t)step;
			room -= step;
			/* after the new prefixes are published: the owner may kick again */
			__atomic_store_n(&p->grow_kicked, 0, __ATOMIC_RELEASE);
		}
	}
	if (!p->tables_ready && sl_memlog_end_id(p->log) != p->open_end_id && tables <= room) {
		grow_tables(p);
		n += (int64_t)tables;
	}
	return n;
}

uint64_t
sl_partition_resident(const struct sl_partition *p)
{
	uint64_t n = sizeof(*p) + sl_memlog_resident(p->log);

	if (p->tables_ready)
		n += sizeof(*p->ptab) + (p->pend != NULL ? PEND_BYTES : 0) +
		     (p->done != NULL ? DONE_BYTES : 0);
	return n;
}

/* Calling context: control thread (racy reads, partition.h). */
int
sl_partition_positions(const struct sl_partition *p, uint64_t *committed, uint64_t *end_id)
{
	*end_id = sl_memlog_end_id(p->log);	/* an aligned u64 the worker stores */
	*committed = 0;
	if (__atomic_load_n(&p->repl, __ATOMIC_ACQUIRE) == NULL)
		return 0;
	*committed = __atomic_load_n(&p->committed, __ATOMIC_RELAXED);
	return 1;
}

int
sl_partition_replicated(const struct sl_partition *p)
{
	return p->repl != NULL;
}

/* Channel positions saved by the last run. */
static void
chans_restore(struct sl_partition *p, const struct sl_disklog_stats *ds)
{
	struct sl_disklog_chan saved[SL_PERSIST_MAX_CHANS];
	int i, n;

	n = sl_disklog_chan_load(p->store->dl, saved, SL_PERSIST_MAX_CHANS);
	if (n < 0)
		PLOG(ERR, "%s/%u: saved channel positions unreadable (%s): channels start "
		     "afresh", p->store->topic, p->conf.partid, sl_strerror(n));
	for (i = 0; i < n; i++) {
		uint64_t start = RTE_MAX(RTE_MIN(saved[i].confirmed_id, ds->end_id + 1),
					 RTE_MAX(ds->first_id, 1u));

		int ci = sl_partition_chan_open(p, saved[i].name, (uint32_t)strlen(saved[i].name),
						saved[i].flags & SL_DISKLOG_CHAN_ORDERED, 0, start);

		if (ci < 0)
			PLOG(ERR, "%s/%u: cannot restore channel %s", p->store->topic,
			     p->conf.partid, saved[i].name);
		else if (saved[i].flags & SL_DISKLOG_CHAN_ANON)
			chan_set_anon(p, ci, 0);	/* its creator's address is not kept */
	}
}

/*
 * The producer table, rebuilt from the tags of the disk log's newest SL_PTAB_SCAN commit
 * records (ptab.h), after a crash as after a clean stop. With memory durability the
 * table lives in the store's file (sl_pstore_ptab_mem), so that it outlives a kill as the
 * memory log does: the records the last process left there were written to the disk log
 * without their tags, which are taken from its table. A read error leaves it empty.
 */
static void
ptab_restore(struct sl_partition *p, const struct sl_disklog_stats *ds)
{
	struct sl_crec *recs = malloc(SL_PTAB_SCAN * sizeof(*recs));
	struct sl_ptab *prev = NULL, *shm = NULL;
	int n, i, had = 0;

	if (p->store->pol.durability == SL_PERSIST_MEMORY) {
		prev = malloc(sizeof(*prev));
		if (prev != NULL)
			shm = sl_pstore_ptab_mem(p->store, sizeof(*shm), prev, &had);
		if (shm == NULL)
			PLOG(WARNING, "%s/%u: producer table in memory only: after a kill, a "
			     "retry of a publish not yet on disk is written again",
			     p->store->topic, p->conf.partid);
		if (had && !sl_ptab_valid(prev)) {
			PLOG(WARNING, "%s/%u: the producer table file holds a malformed table: "
			     "not used (the table comes from the commit log)", p->store->topic,
			     p->conf.partid);
			had = 0;
		}
	}
	/* an empty log leaves the table untouched: its pages stay unpopulated (lazy_zalloc) */
	n = ds->end_id == 0 || ds->end_id < ds->first_id ? 0 :
	    recs != NULL ? sl_disklog_tail(p->store->dl, recs, SL_PTAB_SCAN) : -ENOMEM;
	for (i = 0; had && i < n; i++)
		if (recs[i].producer == 0)
			sl_ptab_find_id(prev, recs[i].log_id, &recs[i].producer, &recs[i].pseq);
	if (n > 0) {
		sl_ptab_rebuild(p->ptab, recs, (uint32_t)n, n == SL_PTAB_SCAN &&
				recs[0].log_id > RTE_MAX(ds->first_id, 1u));
		p->ptab_restored = 1;
	} else if (n < 0) {
		PLOG(ERR, "%s/%u: cannot read the commit log back (%s): the producer table "
		     "starts empty", p->store->topic, p->conf.partid, sl_strerror(n));
	}
	if (shm != NULL) {	/* zeroed and populated by the store: an empty table */
		if (n > 0)
			memcpy(shm, p->ptab, sizeof(*shm));
		lazy_free(p->ptab, sizeof(*p->ptab));
		p->ptab = shm;
		p->ptab_shared = 1;
		p->ptab_restored = 1;
	}
	free(recs);
	free(prev);
}

struct sl_partition *
sl_partition_open(const struct sl_partition_conf *conf)
{
	struct sl_partition *p = rte_zmalloc_socket("sl_partition", sizeof(*p),
						    RTE_CACHE_LINE_SIZE, conf->socket_id);
	struct sl_pstore *store = conf->store;
	struct sl_disklog_stats ds = {.first_id = 1};
	struct sl_memlog_conf mc;

	if (p == NULL)
		goto fail;
	p->conf = *conf;
	p->conf.store = NULL;
	p->ptab = lazy_zalloc(sizeof(*p->ptab));	/* all zero: sl_ptab_init's empty table */
	if (p->ptab == NULL)
		goto fail;
	/* memory durability with a data directory: the log is a shared mapping of a file,
	 * so that what was acknowledged outlives a kill of the process (the store already
	 * wrote what the last one left there to the disk log) */
	p->log_mapped = store != NULL && store->pol.durability == SL_PERSIST_MEMORY;
	if (p->log_mapped)
		p->log_mem = sl_pstore_log_mem(store, conf->log_bytes & ~(uint64_t)7, 64);
	else
		p->log_mem = log_reserve(conf);
	if (p->log_mem == NULL)
		goto fail;
	memset(&mc, 0, sizeof(mc));
	mc.mem = p->log_mem;
	mc.mem_len = conf->log_bytes & ~(uint64_t)7;
	mc.avg_msg_hint = 64;
	mc.lazy = 1;	/* grown by the control thread (sl_partition_grow) */
	if (p->log_mapped) {
		mc.base_out = sl_pstore_log_base(store);
		p->store_mapped = store;
	}
	if (store != NULL) {
		/* memory continues where the disk ends; older messages are read back */
		sl_disklog_get_stats(store->dl, &ds);
		mc.start_id = ds.end_id + 1;
		mc.start_offset = ds.end_offset;
		p->disk = store->pol.durability == SL_PERSIST_DISK;
		p->store_gen = store->gen;
		if (p->disk && sl_partition_queues(p) != 0)
			goto fail;
		/* a SET_OFFSET older than memory is looked up on disk and completed later,
		 * whatever the durability: its completion needs the done ring */
		if (p->done == NULL)
			p->done = lazy_zalloc(DONE_BYTES);
		if (p->done == NULL)
			goto fail;
	}
	p->log = sl_memlog_open(&mc);
	if (p->log == NULL)
		goto fail;
	/* the first prefixes of the log, ready before the worker has it (a mapped file was
	 * made sparse by sl_pstore_log_mem: it holds no record of earlier runs) */
	if (grow_log(p) < 0)
		goto fail;
	p->trimmed_to = sl_memlog_first_id(p->log);
	p->open_end_id = sl_memlog_end_id(p->log);
	p->log_base = RTE_MAX(ds.first_id, 1u);	/* retained, or reset, and maybe empty */
	if (store == NULL)
		return p;
	p->store = store;
	p->persist = conf->persist;
	store->log = p->log;
	chans_restore(p, &ds);
	ptab_restore(p, &ds);
	return p;
fail:
	sl_partition_close(p);
	rte_errno = ENOMEM;
	return NULL;
}

struct sl_pstore *
sl_partition_store(const struct sl_partition *p)
{
	return p->store;
}

void
sl_partition_set_coord(struct sl_partition *p, struct sl_coord_part *cp)
{
	p->cp = cp;
}

void
sl_partition_close(struct sl_partition *p)
{
	uint32_t c;

	if (p == NULL)
		return;
	for (c = 0; c < p->nchans; c++)
		sl_channel_close(p->chans[c]);
	lazy_free(p->pend, PEND_BYTES);
	lazy_free(p->done, DONE_BYTES);
	sl_repl_close(p->repl);
	rte_free(p->chanwait);
	if (!p->ptab_shared)
		lazy_free(p->ptab, sizeof(*p->ptab));	/* else the store's mapping */
	sl_pstore_close(p->store);	/* reads the log's end (its id mark) */
	sl_memlog_close(p->log);
	if (!p->log_mapped)
		lazy_free(p->log_mem, p->conf.log_bytes);	/* a mapped one goes with its store */
	rte_free(p);
}
