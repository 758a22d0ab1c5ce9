/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * partition_repl: the partition's side of replication/repl.h. The state machine calls
 * these callbacks on the owner lcore, from inside sl_repl_write, _input, _poll,
 * _set_view and _chan_sync: appends and truncations go to the in-memory log and, in
 * order, to the persistence lcore; reads come from memory or, for a replica further
 * behind, from the disk log through the reader thread; ISR changes go to the control
 * thread (the membership seam); settled publishes and channel syncs become completions.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <rte_common.h>
#include <rte_malloc.h>
#include <urcu-qsbr.h>

#include "err.h"
#include "partition_int.h"

/* ---- the log: commit records, epochs ---- */

/* The epoch of the record starting at id, from the epoch history. */
uint64_t
sl_partition_epoch_for(const struct sl_partition *p, uint64_t id)
{
	uint64_t e = p->nepochs > 0 ? p->epoch_of[0] : 0;
	uint32_t i;

	for (i = 0; i < p->nepochs; i++)
		if (p->epoch_start[i] <= id)
			e = p->epoch_of[i];
	return e;
}

/* The commit record holding id, rebuilt from the in-memory log: each record knows its
 * place in its PUB/MPUB, and a record has the same size in memory and on disk. */
static int
crec_of(const struct sl_partition *p, uint64_t id, struct sl_crec *c)
{
	struct sl_memlog_rec rec;
	uint64_t first, last, end_off;

	if (sl_memlog_read(p->log, id, &rec) != 0)
		return -ENOENT;
	first = id - rec.batch_index;
	last = id + rec.batch_left;
	if (last > sl_memlog_end_id(p->log) || sl_memlog_read(p->log, first, &rec) != 0 ||
	    sl_memlog_offset_of(p->log, last + 1, &end_off) != 0)
		return -ENOENT;
	c->log_id = first;
	c->epoch = sl_partition_epoch_for(p, first);
	c->last_msg_log_id = last;
	c->msg_offset = rec.offset;
	c->msg_cnt = last;
	c->timestamp_ns = rec.timestamp_ns;
	c->msg_size = (uint32_t)(end_off - rec.offset);
	c->msg_num = (uint32_t)(last - first + 1);
	c->producer = 0;
	c->pseq = 0;
	return 0;
}

static void
epoch_note(struct sl_partition *p, uint64_t epoch, uint64_t first_id)
{
	if (p->nepochs > 0 && p->epoch_of[p->nepochs - 1] >= epoch)
		return;
	if (p->nepochs == SL_PARTITION_EPOCHS) {
		memmove(p->epoch_of, p->epoch_of + 1,
			sizeof(p->epoch_of[0]) * (SL_PARTITION_EPOCHS - 1));
		memmove(p->epoch_start, p->epoch_start + 1,
			sizeof(p->epoch_start[0]) * (SL_PARTITION_EPOCHS - 1));
		p->nepochs--;
	}
	p->epoch_of[p->nepochs] = epoch;
	p->epoch_start[p->nepochs++] = first_id;
}

/* The message record at pos of an encoded run of size bytes (the disk log's format, which
 * replication carries): its size, or 0 when it does not fit. *hdr gets its header words
 * (magic_len, crc, id, timestamp, trace). */
static uint32_t
mrec_at(const uint8_t *buf, uint32_t pos, uint32_t size, uint32_t *len, uint64_t hdr[4])
{
	uint32_t ml;
	uint64_t rs;

	if (pos + SL_DISKLOG_MREC_HDR > size)
		return 0;
	memcpy(&ml, buf + pos, 4);
	*len = ml & 0xFFFFFF;
	rs = SL_DISKLOG_MREC_SIZE(*len);
	if (pos + rs > size)
		return 0;
	memcpy(hdr, buf + pos, SL_DISKLOG_MREC_HDR);
	return (uint32_t)rs;
}

/* ---- callbacks: the replica's apply ---- */

static void
r_send(void *arg, uint32_t to, const void *buf, uint32_t len)
{
	struct sl_partition *p = arg;
	const struct sl_topic *t = p->cp->topic;

	p->rc.send(p->rc.send_arg, to, t->name, t->name_len, p->conf.partid, buf, len);
}

/* The records arrive encoded in the disk log's format. */
static int
r_append(void *arg, const struct sl_crec *c, const void *msgs)
{
	struct sl_partition *p = arg;
	const void *datas[SL_WIRE_MPUB_MAX];
	uint32_t lens[SL_WIRE_MPUB_MAX], i, pos = 0;
	const uint8_t *m = msgs;
	uint64_t ts = 0, trace = 0, hdr[4];
	struct sl_memlog_rec rec;
	int rc;

	if (c->msg_num == 0 || c->msg_num > SL_WIRE_MPUB_MAX ||
	    c->log_id != sl_memlog_end_id(p->log) + 1 ||
	    c->msg_offset != sl_memlog_end_offset(p->log))
		return -EINVAL;
	if (p->store != NULL && (p->store_err || sl_persist_room(p->persist, p->conf.worker) == 0))
		return -ENOBUFS;
	for (i = 0; i < c->msg_num; i++) {
		uint32_t sz = mrec_at(m, pos, c->msg_size, &lens[i], hdr);

		if (sz == 0)
			return -EINVAL;
		if (i == 0) {
			ts = hdr[2];
			trace = hdr[3];
		}
		datas[i] = m + pos + SL_DISKLOG_MREC_HDR;
		pos += sz;
	}
	rc = c->msg_num == 1 ? sl_memlog_append(p->log, datas[0], lens[0], ts, trace, &rec) :
			       sl_memlog_append_batch(p->log, c->msg_num, datas, lens, ts, trace,
						      &rec);
	if (rc != 0)
		return rc;
	epoch_note(p, c->epoch, c->log_id);
	/* the idempotency state follows the log: the next leader knows the retry */
	sl_ptab_note(p->ptab, c->producer, c->pseq, rec.id, c->msg_num, rec.offset);
	if (p->store != NULL)
		sl_persist_submit_tag(p->persist, p->conf.worker, p->store, rec.id, c->msg_num,
				      rec.offset, c->epoch, c->producer, c->pseq);
	p->msgs_in += c->msg_num;
	return 0;
}

static int
r_truncate(void *arg, uint64_t end_id)
{
	struct sl_partition *p = arg;

	if (end_id >= sl_memlog_end_id(p->log))
		return 0;
	/* the persistence lcore hears of the cut before the memory goes */
	if (p->store != NULL &&
	    sl_persist_truncate(p->persist, p->conf.worker, p->store, end_id) != 0)
		return -ENOBUFS;
	sl_memlog_truncate(p->log, end_id + 1);
	sl_ptab_truncate(p->ptab, end_id);
	if (p->disk_last.last_msg_log_id > end_id)
		memset(&p->disk_last, 0, sizeof(p->disk_last));
	while (p->nepochs > 0 && p->epoch_start[p->nepochs - 1] > end_id)
		p->nepochs--;
	if (p->committed > end_id)
		p->committed = end_id;
	return 0;
}

/*
 * The record holding id from the disk log, for a replica further behind than memory: the
 * reader thread reads whole records (their messages exactly as on disk, the replication
 * format) into the store's rread buffer; until they are there this answers -ENOENT and
 * replication asks again later. buf NULL: the commit record only. No I/O here.
 */
static int
disk_crec(struct sl_partition *p, uint64_t id, struct sl_crec *c, void *buf, uint32_t cap)
{
	struct sl_prread *rr;
	uint32_t i, off = 0;

	if (p->store == NULL)
		return -ENOENT;
	rr = &p->store->rread;
	if (sl_pstore_job_state(&rr->state) == SL_PFETCH_READY && rr->rc == 0) {
		for (i = 0; i < rr->n; i++) {
			const struct sl_crec *d = &rr->crecs[i];

			if (id >= d->log_id && id <= d->last_msg_log_id) {
				if (buf != NULL && d->msg_size > cap)
					return -ENOBUFS;
				*c = *d;
				if (buf != NULL)
					memcpy(buf, rr->buf + off, d->msg_size);
				/* the record's tag from disk, else the table's */
				if (c->producer == 0)
					sl_ptab_find_id(p->ptab, c->log_id, &c->producer,
							&c->pseq);
				return 0;
			}
			off += rr->crecs[i].msg_size;
		}
	}
	if (sl_pstore_job_state(&rr->state) != SL_PFETCH_QUEUED)
		sl_persist_rread(p->persist, p->store, id, sl_pstore_written_id(p->store));
	return -ENOENT;
}

static int
r_read(void *arg, uint64_t id, struct sl_crec *c, void *buf, uint32_t cap)
{
	struct sl_partition *p = arg;
	struct sl_memlog_rec rec;
	struct sl_crec k;
	uint8_t *out = buf;
	uint32_t used = 0;
	uint64_t i;

	if (crec_of(p, id, &k) != 0)
		return disk_crec(p, id, c, buf, cap);
	if (k.msg_size > cap)
		return -ENOBUFS;
	for (i = k.log_id; i <= k.last_msg_log_id; i++) {
		if (sl_memlog_read(p->log, i, &rec) != 0)
			return -ENOENT;
		used += sl_disklog_encode_msg(out + used, rec.id, rec.timestamp_ns, rec.trace_id,
					      rec.data, rec.len, i == k.last_msg_log_id);
	}
	*c = k;
	/* its producer tag, while the table remembers it */
	sl_ptab_find_id(p->ptab, c->log_id, &c->producer, &c->pseq);
	return 0;
}

static void
r_last(void *arg, struct sl_crec *c)
{
	struct sl_partition *p = arg;
	uint64_t end = sl_memlog_end_id(p->log);

	/* memory, or what the disk log ended with at start */
	if (end >= sl_memlog_first_id(p->log) && crec_of(p, end, c) == 0)
		return;
	if (p->disk_last.last_msg_log_id == end) {
		*c = p->disk_last;
		return;
	}
	memset(c, 0, sizeof(*c));
	if (end + 1 == p->log_base)
		c->last_msg_log_id = end;	/* nothing held since a reset to log_base */
}

/*
 * Leader: the oldest record replication can still serve and (offset not NULL) its
 * message offset: the disk log's first when the partition has one (memory holds a suffix
 * of it), else the first whole record in memory (a trim may have cut into an MPUB). With
 * nothing held, the log's end. The id alone costs no read; the offset of a record only
 * on disk is read by the reader thread: -EAGAIN until it is there.
 */
static int
r_first(void *arg, uint64_t *id, uint64_t *offset)
{
	struct sl_partition *p = arg;
	struct sl_disklog_stats ds;
	struct sl_memlog_rec rec;
	struct sl_crec c;
	uint64_t first = sl_memlog_first_id(p->log), end = sl_memlog_end_id(p->log);

	if (p->store != NULL) {
		sl_disklog_get_stats(p->store->dl, &ds);
		if (ds.first_id <= ds.end_id && ds.first_id < first)
			first = ds.first_id;
	}
	while (first <= end && sl_memlog_read(p->log, first, &rec) == 0 &&
	       rec.batch_index != 0)
		first += (uint64_t)rec.batch_left + 1;	/* the rest of a cut MPUB */
	if (first > end) {
		*id = end + 1;
		if (offset != NULL)
			*offset = sl_memlog_end_offset(p->log);
		return 0;
	}
	*id = first;
	if (offset == NULL)
		return 0;
	if (crec_of(p, first, &c) != 0 && disk_crec(p, first, &c, NULL, 0) != 0)
		return -EAGAIN;
	*id = c.log_id;
	*offset = c.msg_offset;
	return 0;
}

/*
 * Replica: the leader no longer holds what follows our end. Drop the whole log, memory
 * and disk, and start it over, empty, at record id (offset): every id before it counts as
 * committed, and channel positions before it move up to it. Waits (-EAGAIN) until the
 * persistence lcore took every record handed to it, so the reset follows them.
 */
static int
r_reset(void *arg, uint64_t id, uint64_t offset)
{
	struct sl_partition *p = arg;
	uint32_t c;
	int err;

	if (p->store != NULL) {
		err = sl_pstore_error(p->store);
		if (err != 0)
			return err;
		if (sl_persist_room(p->persist, p->conf.worker) == 0 ||
		    sl_pstore_written_id(p->store) < sl_memlog_end_id(p->log) ||
		    sl_persist_reset(p->persist, p->conf.worker, p->store, id, offset) != 0)
			return -EAGAIN;
	}
	PLOG(NOTICE, "%s/%u: the leader's log starts at %" PRIu64 ", after ours (%" PRIu64
	     "): our log starts over there", p->cp->topic->name, p->conf.partid, id,
	     sl_memlog_end_id(p->log));
	sl_memlog_reset(p->log, id, offset);
	memset(&p->disk_last, 0, sizeof(p->disk_last));
	p->nepochs = 0;
	p->committed = id - 1;
	p->trimmed_to = id;
	p->log_base = id;
	for (c = 0; c < p->nchans; c++)
		if (sl_channel_confirmed(p->chans[c]) < id)
			sl_channel_reset(p->chans[c], id);
	return 0;
}

static uint64_t
r_epoch_end(void *arg, uint64_t epoch)
{
	struct sl_partition *p = arg;
	uint32_t i;

	/* the end of `epoch` is where the next higher epoch starts */
	for (i = 0; i < p->nepochs; i++)
		if (p->epoch_of[i] > epoch)
			return p->epoch_start[i] - 1;
	return p->nepochs > 0 && p->epoch_of[0] > epoch ? 0 : sl_memlog_end_id(p->log);
}

/* ---- callbacks: membership (to the control thread) ---- */

/* A view change request for the control thread about this partition (NULL: none now,
 * the ring is busy). Control rate: a membership change, so the allocation is fine. */
static struct sl_wviewreq *
viewreq_new(struct sl_partition *p, enum sl_viewreq_kind kind)
{
	const struct sl_topic *t = p->cp->topic;
	struct sl_wviewreq *q;

	if (rte_ring_count(p->rc.viewreq) >= 64)
		return NULL;
	q = rte_zmalloc(NULL, sizeof(*q), 0);
	if (q == NULL)
		return NULL;
	memcpy(q->topic, t->name, t->name_len);
	q->topic[t->name_len] = '\0';
	q->partition = p->conf.partid;
	q->kind = (uint8_t)kind;
	return q;
}

static void
viewreq_post(struct sl_partition *p, struct sl_wviewreq *q)
{
	if (rte_ring_mp_enqueue(p->rc.viewreq, q) != 0)
		rte_free(q);
}

static void
view_request(struct sl_partition *p, uint32_t node, enum sl_viewreq_kind kind)
{
	struct sl_wviewreq *q = viewreq_new(p, kind);

	if (q == NULL)
		return;
	q->node = node;
	viewreq_post(p, q);
}

/* Replica: the leader's ISR for the leadership we follow, to this node's view. */
static void
r_leader_isr(void *arg, uint32_t epoch, uint64_t session, const uint32_t *isr, uint32_t nisr)
{
	struct sl_partition *p = arg;
	struct sl_wviewreq *q;

	if (nisr > SL_COORD_MAX_REPLICAS || (q = viewreq_new(p, SL_VIEWREQ_LEADER_ISR)) == NULL)
		return;
	q->epoch = epoch;
	q->session = session;
	q->nisr = (uint8_t)nisr;
	memcpy(q->isr, isr, nisr * sizeof(*isr));
	viewreq_post(p, q);
}

static void
r_isr_leave(void *arg, uint32_t node)
{
	view_request(arg, node, SL_VIEWREQ_ISR_LEAVE);
}

static void
r_isr_join(void *arg, uint32_t node)
{
	view_request(arg, node, SL_VIEWREQ_ISR_JOIN);
}

/* ---- callbacks: commits, rollbacks, channels ---- */

static void
r_committed(void *arg, uint64_t end_id)
{
	struct sl_partition *p = arg;

	if (end_id > p->committed)
		p->committed = end_id;
}

static void
r_rolled_back(void *arg, uint64_t end_id, int err)
{
	struct sl_partition *p = arg;

	/* the newest waiting publishes are the ones rolled back */
	sl_partition_fail_after(p, end_id, err);
	r_truncate(arg, end_id);
}

static void
r_chan_set(void *arg, const char *chan, uint64_t confirmed_id)
{
	struct sl_partition *p = arg;
	int ci = sl_partition_chan_find(p, chan, (uint32_t)strlen(chan));

	if (ci < 0)
		ci = sl_partition_chan_open(p, chan, (uint32_t)strlen(chan), 0, 0, confirmed_id);
	if (ci >= 0)
		sl_channel_reset(p->chans[ci], confirmed_id);
}

static int
r_msg_ids(void *arg, const void *msgs, uint32_t msg_size, uint64_t *first, uint64_t *last,
	  uint32_t *num)
{
	uint32_t pos = 0, n = 0, len, sz;
	uint64_t hdr[4];

	while (pos < msg_size) {
		sz = mrec_at(msgs, pos, msg_size, &len, hdr);
		if (sz == 0)
			return -EINVAL;
		if (n++ == 0)
			*first = hdr[1];
		*last = hdr[1];
		pos += sz;
	}
	*num = n;
	return n > 0 ? 0 : -EINVAL;
}

static int
r_chan_get(void *arg, uint32_t idx, char name[SL_REPL_CHAN_NAME_MAX + 1],
	   uint64_t *confirmed_id)
{
	struct sl_partition *p = arg;
	uint32_t c, k = 0;

	for (c = 0; c < p->nchans; c++) {
		if (sl_channel_is_ephemeral(p->chans[c]))
			continue;
		if (k++ == idx) {
			snprintf(name, SL_REPL_CHAN_NAME_MAX + 1, "%s",
				 sl_channel_name(p->chans[c]));
			*confirmed_id = sl_channel_confirmed(p->chans[c]);
			return 0;
		}
	}
	return -ENOENT;
}

/* An ordered FIN or a SET_OFFSET is settled: complete the held request, or roll back. */
static void
r_chan_done(void *arg, uint64_t seq, int err, uint64_t prev_id)
{
	struct sl_partition *p = arg;
	struct chanwait *cw;
	int ci;

	if (seq == 0 || p->chanwait == NULL)
		return;
	cw = &p->chanwait[seq & (SL_PARTITION_CHANWAIT - 1)];
	if (!cw->used || cw->seq != seq)
		return;
	if (!cw->held) {
		cw->done = 1;	/* inside sl_partition_chan_sync's own call: it answers */
		cw->err = err;
		return;
	}
	if (err != 0) {
		ci = sl_partition_chan_find(p, cw->chan, (uint32_t)strlen(cw->chan));
		if (ci >= 0)
			sl_channel_reset(p->chans[ci], prev_id);
	}
	cw->used = 0;
	sl_partition_complete(p, cw->token, err);
}

const struct sl_repl_ops sl_partition_repl_ops = {
	.send = r_send,
	.append = r_append,
	.truncate = r_truncate,
	.read = r_read,
	.last = r_last,
	.epoch_end = r_epoch_end,
	.isr_leave = r_isr_leave,
	.isr_join = r_isr_join,
	.committed = r_committed,
	.rolled_back = r_rolled_back,
	.chan_set = r_chan_set,
	.chan_done = r_chan_done,
	.msg_ids = r_msg_ids,
	.chan_get = r_chan_get,
	.first = r_first,
	.reset = r_reset,
	.leader_isr = r_leader_isr,
};

/* ---- the owner's calls ---- */

/*
 * A channel position moved on the leader (FIN, SET_OFFSET): sync it to the ISR. An
 * ordered channel's FIN and a SET_OFFSET count only once every ISR member has it: the
 * request (token) is held and completed by r_chan_done (SL_PARTITION_HELD), or the
 * position is rolled back to prev and the error returned. An unordered channel's FIN is a
 * notify; ephemeral channels are never synced. 0, SL_PARTITION_HELD or -SL_E_*.
 */
int
sl_partition_chan_sync(struct sl_partition *p, struct sl_channel *ch, uint64_t prev,
		       int set_offset, uint64_t token)
{
	struct chanwait *cw;
	uint64_t seq;
	int rc;

	if (p->repl == NULL || sl_channel_is_ephemeral(ch) ||
	    (sl_channel_confirmed(ch) == prev && !set_offset))
		return 0;
	if (!set_offset && !sl_channel_is_ordered(ch)) {
		sl_repl_chan_sync(p->repl, sl_channel_name(ch), sl_channel_confirmed(ch), prev,
				  0, 0, 0, p->now_ns);
		return 0;
	}
	seq = ++p->chan_token;
	cw = &p->chanwait[seq & (SL_PARTITION_CHANWAIT - 1)];
	if (cw->used) {
		rc = -SL_E_FULL;
		goto rollback;
	}
	*cw = (struct chanwait){.used = 1, .token = token, .seq = seq, .prev = prev};
	snprintf(cw->chan, sizeof(cw->chan), "%s", sl_channel_name(ch));
	rc = sl_repl_chan_sync(p->repl, cw->chan, sl_channel_confirmed(ch), prev,
			       sl_channel_is_ordered(ch), set_offset, seq, p->now_ns);
	if (rc == 0 && cw->done)
		rc = cw->err;	/* settled at once (an ISR of this node alone) */
	if (rc != 0 || cw->done) {
		cw->used = 0;
		if (rc != 0)
			goto rollback;
		return 0;
	}
	cw->held = 1;
	return SL_PARTITION_HELD;
rollback:
	sl_channel_reset(ch, prev);
	return rc;
}

/* Leader: replicate the n messages just appended from first (PutMessageToCluster's
 * cluster part; the answer waits for the commit). */
int
sl_partition_repl_write(struct sl_partition *p, const struct sl_memlog_rec *first, uint32_t n)
{
	struct sl_crec c = {
		.log_id = first->id,
		.last_msg_log_id = first->id + n - 1,
		.msg_offset = first->offset,
		.msg_cnt = first->id + n - 1,
		.timestamp_ns = first->timestamp_ns,
		.msg_num = n,
	};
	struct sl_memlog_rec rec;
	uint8_t *buf = p->rc.scratch;
	uint32_t used = 0, i;
	int rc;

	for (i = 0; i < n; i++) {
		if (sl_memlog_read(p->log, first->id + i, &rec) != 0 ||
		    used + SL_DISKLOG_MREC_SIZE(rec.len) > SL_PARTITION_SCRATCH)
			return -SL_E_TOO_BIG;
		used += sl_disklog_encode_msg(buf + used, rec.id, rec.timestamp_ns, rec.trace_id,
					      rec.data, rec.len, i == n - 1);
	}
	c.msg_size = used;
	c.epoch = sl_repl_epoch(p->repl);
	rc = sl_repl_write(p->repl, &c, buf, p->now_ns);
	if (rc != 0)
		return rc;
	epoch_note(p, c.epoch, c.log_id);
	return 0;
}

/* The coordinator's view as replication wants it. */
static void
view_of(const struct sl_part_meta *m, struct sl_repl_view *v)
{
	memset(v, 0, sizeof(*v));
	v->leader = m->leader;
	v->epoch = m->epoch;
	v->leader_session = m->leader_session;
	v->writes_disabled = m->writes_disabled;
	v->nreplicas = m->nreplicas;
	v->nisr = m->nisr;
	memcpy(v->replicas, m->replicas, sizeof(v->replicas[0]) * RTE_MIN(m->nreplicas, 8));
	memcpy(v->isr, m->isr, sizeof(v->isr[0]) * RTE_MIN(m->nisr, 8));
}

/* Every loop: install view changes, run replication timers. RCU read side. */
uint32_t
sl_partition_repl_poll(struct sl_partition *p, uint64_t now_ns)
{
	struct sl_repl_view v;
	uint32_t done = 0;

	if (p->repl == NULL)
		return 0;
	p->now_ns = now_ns;
	view_of(rcu_dereference(p->cp->meta), &v);
	v.version = p->view.version;
	if (memcmp(&v, &p->view, sizeof(v)) != 0) {
		v.version = ++p->view_version;
		p->view = v;
		sl_repl_set_view(p->repl, &v, now_ns);
		done++;
	}
	return done + sl_repl_poll(p->repl, now_ns);
}

int
sl_partition_replica_input(struct sl_partition *p, uint32_t from, const void *buf,
			   uint32_t len, uint64_t now_ns)
{
	uint64_t before, after;

	if (p->repl == NULL)
		return -ENOENT;
	p->now_ns = now_ns;
	before = sl_memlog_end_id(p->log);
	sl_repl_input(p->repl, from, buf, len, now_ns);
	/* what a leader's WRITE appended; a truncation (a divergent tail) appended nothing */
	after = sl_memlog_end_id(p->log);
	if (after <= before)
		return 0;
	return after - before > INT32_MAX ? INT32_MAX : (int)(after - before);
}

/* What the disk log ends with, and its epoch history (KIP-101: which epoch wrote which
 * ids), from the commit records on disk. */
static void
disk_epochs(struct sl_partition *p)
{
	struct sl_crec dc;
	int n;

	if (p->store == NULL || sl_disklog_last(p->store->dl, &dc) != 0)
		return;
	p->disk_last = dc;
	n = sl_disklog_epochs(p->store->dl, p->epoch_of, p->epoch_start, SL_PARTITION_EPOCHS);
	p->nepochs = n > 0 ? (uint32_t)n : 0;
	if (n <= 0) {
		PLOG(WARNING, "partition %u: epoch history unreadable (%s), taking epoch %" PRIu64
		     " for the whole log", p->conf.partid, sl_strerror(n), dc.epoch);
		epoch_note(p, dc.epoch, 1);
	}
}

int
sl_partition_replicate(struct sl_partition *p, const struct sl_partition_repl_conf *rc)
{
	struct sl_repl_conf c = {
		.node_id = p->conf.node_id,
		.partition = p->conf.partid,
		.max_dgram = rc->max_dgram,
		.isr_lag_ns = rc->isr_lag_ns,
		.ops = &p->repl_ops,
	};

	if (rc->send == NULL || rc->viewreq == NULL || rc->scratch == NULL || rc->topic == NULL)
		return -EINVAL;
	c.topic_hash = sl_repl_topic_hash(rc->topic, strlen(rc->topic));
	p->rc = *rc;
	p->rc.topic = NULL;	/* the caller's string: the coordinator's name is used */
	p->repl_ops = sl_partition_repl_ops;
	p->repl_ops.arg = p;
	p->chanwait = rte_zmalloc_socket("sl_chanwait",
					 sizeof(*p->chanwait) * SL_PARTITION_CHANWAIT,
					 RTE_CACHE_LINE_SIZE, p->conf.socket_id);
	if (sl_partition_queues(p) != 0 || p->chanwait == NULL)
		return -ENOMEM;
	disk_epochs(p);
	p->repl = sl_repl_open(&c);
	return p->repl != NULL ? 0 : -EINVAL;
}
