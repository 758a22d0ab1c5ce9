/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * ptab: a partition's producer table (see ptab.h). Per producer a ring of its last
 * SL_PTAB_SEQS publishes, in log order.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "ptab.h"

/* Calling context: the owner. */
void
sl_ptab_init(struct sl_ptab *t)
{
	memset(t, 0, sizeof(*t));
}

static const struct sl_ptab_prod *
prod_find(const struct sl_ptab *t, uint64_t producer)
{
	uint32_t i;

	for (i = 0; i < SL_PTAB_PRODUCERS; i++)
		if (t->p[i].producer == producer)
			return &t->p[i];
	return NULL;
}

static const struct sl_ptab_ent *
ent_at(const struct sl_ptab_prod *p, uint32_t k)
{
	return &p->e[(p->head + k) % SL_PTAB_SEQS];
}

/* Calling context: the owner (per publish with a producer). */
enum sl_ptab_verdict
sl_ptab_check(const struct sl_ptab *t, uint64_t producer, uint64_t seq,
	      const struct sl_ptab_ent **hit)
{
	const struct sl_ptab_prod *p;
	uint32_t k;

	*hit = NULL;
	if (producer == 0 || (p = prod_find(t, producer)) == NULL)
		return SL_PTAB_NEW;
	if (seq > p->max_seq && seq > p->floor)
		return SL_PTAB_NEW;	/* the common case: the next publish */
	for (k = 0; k < p->n; k++) {
		if (ent_at(p, k)->seq == seq) {
			*hit = ent_at(p, k);
			return SL_PTAB_DUP;
		}
	}
	return seq > p->floor ? SL_PTAB_NEW : SL_PTAB_OLD;
}

/* The producer's entry, a free one, or the least recently written one (evicted). */
static struct sl_ptab_prod *
prod_take(struct sl_ptab *t, uint64_t producer)
{
	struct sl_ptab_prod *p = (struct sl_ptab_prod *)prod_find(t, producer), *lru = NULL;
	uint32_t i;

	if (p != NULL)
		return p;
	for (i = 0; i < SL_PTAB_PRODUCERS; i++) {
		p = &t->p[i];
		if (p->producer == 0)
			break;
		if (lru == NULL || p->used < lru->used)
			lru = p;
		p = NULL;
	}
	if (p == NULL) {
		p = lru;
		t->evictions++;
	}
	memset(p, 0, sizeof(*p));
	p->producer = producer;
	return p;
}

/* Calling context: the owner (per publish with a producer, leader and replicas). */
void
sl_ptab_note(struct sl_ptab *t, uint64_t producer, uint64_t seq, uint64_t id, uint32_t count,
	     uint64_t offset)
{
	struct sl_ptab_prod *p;
	struct sl_ptab_ent *e;

	if (producer == 0 || seq == 0)
		return;
	p = prod_take(t, producer);
	if (p->n == SL_PTAB_SEQS) {
		/* forget the oldest: its seq and every lower one are no longer told apart */
		e = &p->e[p->head];
		if (e->seq > p->floor)
			p->floor = e->seq;
		p->head = (p->head + 1) % SL_PTAB_SEQS;
		p->n--;
	}
	e = &p->e[(p->head + p->n) % SL_PTAB_SEQS];
	e->seq = seq;
	e->id = id;
	e->offset = offset;
	e->count = count;
	p->n++;
	if (seq > p->max_seq)
		p->max_seq = seq;
	p->used = ++t->tick;
}

/* Calling context: the owner (a rollback). */
void
sl_ptab_truncate(struct sl_ptab *t, uint64_t end)
{
	struct sl_ptab_prod *p;
	uint32_t i, k;

	for (i = 0; i < SL_PTAB_PRODUCERS; i++) {
		p = &t->p[i];
		if (p->producer == 0 || p->n == 0 || ent_at(p, p->n - 1)->id <= end)
			continue;
		while (p->n > 0 && ent_at(p, p->n - 1)->id > end)
			p->n--;		/* newest first: the ring is in log order */
		p->max_seq = 0;
		for (k = 0; k < p->n; k++)
			if (ent_at(p, k)->seq > p->max_seq)
				p->max_seq = ent_at(p, k)->seq;
		if (p->n == 0 && p->floor == 0)
			memset(p, 0, sizeof(*p));
	}
}

/* Calling context: the owner (replication reads a record to send it). */
int
sl_ptab_find_id(const struct sl_ptab *t, uint64_t id, uint64_t *producer, uint64_t *seq)
{
	const struct sl_ptab_prod *p;
	uint32_t i, k;

	for (i = 0; i < SL_PTAB_PRODUCERS; i++) {
		p = &t->p[i];
		if (p->producer == 0 || p->n == 0 || id < ent_at(p, 0)->id ||
		    id > ent_at(p, p->n - 1)->id)
			continue;
		/* newest first: replication mostly reads what was just written */
		for (k = p->n; k-- > 0;) {
			if (ent_at(p, k)->id == id) {
				*producer = p->producer;
				*seq = ent_at(p, k)->seq;
				return 0;
			}
			if (ent_at(p, k)->id < id)
				break;
		}
	}
	return -1;
}

/* Calling context: the owner. */
uint32_t
sl_ptab_count(const struct sl_ptab *t)
{
	uint32_t i, n = 0;

	for (i = 0; i < SL_PTAB_PRODUCERS; i++)
		n += t->p[i].producer != 0;
	return n;
}

/* Calling context: the owner (or before the owner starts: the partition's open). */
void
sl_ptab_rebuild(struct sl_ptab *t, const struct sl_crec *recs, uint32_t n, int cut)
{
	struct sl_ptab_prod *p;
	uint64_t lo;
	uint32_t i, k;

	sl_ptab_init(t);
	for (i = 0; i < n; i++)
		sl_ptab_note(t, recs[i].producer, recs[i].pseq, recs[i].log_id, recs[i].msg_num,
			     recs[i].msg_offset);
	t->evictions = 0;
	if (!cut)
		return;
	/* older records were not read: a seq below every one held may be among them */
	for (i = 0; i < SL_PTAB_PRODUCERS; i++) {
		p = &t->p[i];
		if (p->producer == 0 || p->n == 0)
			continue;
		lo = UINT64_MAX;
		for (k = 0; k < p->n; k++)
			if (ent_at(p, k)->seq < lo)
				lo = ent_at(p, k)->seq;
		if (lo - 1 > p->floor)
			p->floor = lo - 1;
	}
}

/* Calling context: any thread, on a table no one changes. */
int
sl_ptab_valid(const struct sl_ptab *t)
{
	const struct sl_ptab_prod *p;
	uint32_t i, k;

	for (i = 0; i < SL_PTAB_PRODUCERS; i++) {
		p = &t->p[i];
		if (p->n > SL_PTAB_SEQS || p->head >= SL_PTAB_SEQS ||
		    (p->producer == 0 && p->n != 0))
			return 0;
		for (k = 1; k < p->n; k++)
			if (ent_at(p, k)->id <= ent_at(p, k - 1)->id)
				return 0;
	}
	return 1;
}
