/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * ptab: a partition's producer table (see ptab.h). Per producer a ring of its last
 * SL_PTAB_SEQS publishes, in log order.
 */
#include <errno.h>
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

/* crc32c, bitwise (a snapshot is written at a checkpoint, never per packet) */
static uint32_t
crc32c(uint32_t crc, const uint8_t *b, size_t len)
{
	int k;

	while (len-- > 0) {
		crc ^= *b++;
		for (k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0x82f63b78u & (0u - (crc & 1)));
	}
	return crc;
}

static uint32_t
snap_crc(const uint8_t *b, size_t len)
{
	uint32_t crc = crc32c(~0u, b, 20);

	return ~crc32c(crc, b + SL_PTAB_SNAP_HDR, len - SL_PTAB_SNAP_HDR);
}

static void
put_le(uint8_t *b, uint64_t v, int n)
{
	int i;

	for (i = 0; i < n; i++)
		b[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t
get_le(const uint8_t *b, int n)
{
	uint64_t v = 0;
	int i;

	for (i = n; i-- > 0;)
		v = (v << 8) | b[i];
	return v;
}

/* Calling context: the owner (a checkpoint). */
int
sl_ptab_snap_encode(const struct sl_ptab *t, uint64_t log_end, void *buf, size_t len)
{
	const struct sl_ptab_prod *order[SL_PTAB_PRODUCERS], *p;
	uint8_t *b = buf;
	size_t off = SL_PTAB_SNAP_HDR;
	uint32_t i, j, n = 0, k;

	for (i = 0; i < SL_PTAB_PRODUCERS; i++) {
		p = &t->p[i];
		if (p->producer == 0)
			continue;
		for (j = n; j > 0 && order[j - 1]->used > p->used; j--)
			order[j] = order[j - 1];	/* least recently written first */
		order[j] = p;
		n++;
	}
	for (i = 0; i < n; i++)
		off += SL_PTAB_SNAP_PROD + (size_t)order[i]->n * SL_PTAB_SNAP_ENT;
	if (off > len)
		return -ENOSPC;
	memset(b, 0, off);
	put_le(b, SL_PTAB_SNAP_MAGIC, 4);
	put_le(b + 4, SL_PTAB_SNAP_VERSION, 2);
	put_le(b + 6, n, 2);
	put_le(b + 8, log_end, 8);
	put_le(b + 16, off, 4);
	off = SL_PTAB_SNAP_HDR;
	for (i = 0; i < n; i++) {
		p = order[i];
		put_le(b + off, p->producer, 8);
		put_le(b + off + 8, p->floor, 8);
		put_le(b + off + 16, p->n, 4);
		off += SL_PTAB_SNAP_PROD;
		for (k = 0; k < p->n; k++, off += SL_PTAB_SNAP_ENT) {
			put_le(b + off, ent_at(p, k)->seq, 8);
			put_le(b + off + 8, ent_at(p, k)->id, 8);
			put_le(b + off + 16, ent_at(p, k)->offset, 8);
			put_le(b + off + 24, ent_at(p, k)->count, 4);
		}
	}
	put_le(b + 20, snap_crc(b, off), 4);
	return (int)off;
}

/* Calling context: the owner, or before it starts (recovery). */
int
sl_ptab_snap_decode(struct sl_ptab *t, const void *buf, size_t len, uint64_t *log_end)
{
	const uint8_t *b = buf;
	struct sl_ptab_prod *p;
	struct sl_ptab_ent *e;
	size_t off = SL_PTAB_SNAP_HDR;
	uint32_t i, j, n, k;
	int rc = -EBADMSG;

	sl_ptab_init(t);
	if (len < SL_PTAB_SNAP_HDR)
		return -EBADMSG;
	if (get_le(b, 4) != SL_PTAB_SNAP_MAGIC || get_le(b + 4, 2) != SL_PTAB_SNAP_VERSION)
		return -EPROTO;
	n = (uint32_t)get_le(b + 6, 2);
	if (get_le(b + 16, 4) != len || len > SL_PTAB_SNAP_MAX || n > SL_PTAB_PRODUCERS ||
	    get_le(b + 20, 4) != snap_crc(b, len))
		return -EBADMSG;
	for (i = 0; i < n; i++) {
		p = &t->p[i];
		if (len - off < SL_PTAB_SNAP_PROD)
			goto out;
		p->producer = get_le(b + off, 8);
		p->floor = get_le(b + off + 8, 8);
		p->n = (uint32_t)get_le(b + off + 16, 4);
		off += SL_PTAB_SNAP_PROD;
		if (p->producer == 0 || p->n > SL_PTAB_SEQS ||
		    len - off < (size_t)p->n * SL_PTAB_SNAP_ENT)
			goto out;
		for (j = 0; j < i; j++)
			if (t->p[j].producer == p->producer)
				goto out;
		for (k = 0; k < p->n; k++, off += SL_PTAB_SNAP_ENT) {
			e = &p->e[k];
			e->seq = get_le(b + off, 8);
			e->id = get_le(b + off + 8, 8);
			e->offset = get_le(b + off + 16, 8);
			e->count = (uint32_t)get_le(b + off + 24, 4);
			/* seqs need not be in order (a lower seq above floor is NEW) */
			if (e->seq == 0 || (k > 0 && e->id <= p->e[k - 1].id))
				goto out;
			if (e->seq > p->max_seq)
				p->max_seq = e->seq;
		}
		if (p->n == 0 && p->floor == 0)
			goto out;
		p->used = ++t->tick;
	}
	if (off != len)
		goto out;
	*log_end = get_le(b + 8, 8);
	rc = 0;
out:
	if (rc != 0)
		sl_ptab_init(t);
	return rc;
}
