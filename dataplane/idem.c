/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * idem: per-session idempotency window (see idem.h). Slot = seq % SL_IDEM_WINDOW. Also
 * the holes that retryable refusals leave in a session's publishes to a partition.
 */
#include <string.h>

#include "idem.h"

/* Calling context: the owner worker lcore. */
void
sl_idem_bind(struct sl_idem *w, uint64_t session)
{
	if (w->session == session)
		return;
	memset(w->e, 0, sizeof(w->e));
	memset(w->holes, 0, sizeof(w->holes));
	w->session = session;
	w->top = 0;
	w->nholes = 0;
}

/* Calling context: the owner worker lcore (per request). */
enum sl_idem_verdict
sl_idem_check(const struct sl_idem *w, uint64_t seq, const struct sl_idem_entry **hit)
{
	const struct sl_idem_entry *e;

	if (hit != NULL)
		*hit = NULL;
	if (seq == 0)
		return SL_IDEM_OLD;
	/* more than WINDOW - 1 numbers behind the highest: outside the window */
	if (w->top > seq && w->top - seq >= SL_IDEM_WINDOW)
		return SL_IDEM_OLD;
	e = &w->e[seq % SL_IDEM_WINDOW];
	if (e->seq > seq)
		return SL_IDEM_OLD;
	if (e->seq < seq)
		return SL_IDEM_NEW;
	if (hit != NULL)
		*hit = e;
	return e->pending ? SL_IDEM_PENDING : SL_IDEM_DUP;
}

/*
 * Calling context: the owner worker lcore (per request). Recording a seq older than
 * the slot's occupant, or outside the window, is ignored: the window never moves
 * backwards.
 */
void
sl_idem_record(struct sl_idem *w, uint64_t seq, const struct sl_idem_entry *e)
{
	struct sl_idem_entry *slot;

	if (seq == 0 || (w->top > seq && w->top - seq >= SL_IDEM_WINDOW))
		return;
	slot = &w->e[seq % SL_IDEM_WINDOW];
	if (slot->seq > seq)
		return;
	if (slot != e)
		*slot = *e;
	slot->seq = seq;
	if (seq > w->top)
		w->top = seq;
}

/* ---- order across retryable refusals ---- */

/* The hole of part (NULL: a free hole), or NULL. */
static struct sl_idem_hole *
hole_find(struct sl_idem *w, const void *part)
{
	uint32_t i;

	for (i = 0; i < SL_IDEM_HOLES; i++)
		if (w->holes[i].part == part)
			return &w->holes[i];
	return NULL;
}

static void
hole_close(struct sl_idem *w, struct sl_idem_hole *h)
{
	memset(h, 0, sizeof(*h));
	w->nholes--;
}

/* Base has not been retried for SL_IDEM_HOLE_NS: the client gave up on it. */
static int
hole_stale(const struct sl_idem_hole *h, uint64_t now_ns)
{
	return now_ns - h->since_ns >= SL_IDEM_HOLE_NS;
}

/* The 128-bit set shifted towards bit 0 by k (0 < k < 128). */
static void
bits_down(uint64_t b[2], unsigned int k)
{
	if (k >= 64) {
		b[0] = b[1] >> (k - 64);
		b[1] = 0;
		return;
	}
	b[0] = b[0] >> k | b[1] << (64 - k);
	b[1] >>= k;
}

/* The 128-bit set shifted away from bit 0 by k (0 < k < 128); the top bits are lost. */
static void
bits_up(uint64_t b[2], unsigned int k)
{
	if (k >= 64) {
		b[1] = b[0] << (k - 64);
		b[0] = 0;
		return;
	}
	b[1] = b[1] << k | b[0] >> (64 - k);
	b[0] <<= k;
}

/* Calling context: the owner worker lcore (per publish). */
enum sl_idem_order
sl_idem_order_check(struct sl_idem *w, const void *part, uint64_t seq, int join,
		    uint64_t now_ns)
{
	struct sl_idem_hole *h;
	uint64_t off;

	if (w->nholes == 0 || (h = hole_find(w, part)) == NULL)
		return SL_IDEM_ORDER_GO;
	if (hole_stale(h, now_ns) || (seq > h->base && seq - h->base >= SL_IDEM_WINDOW)) {
		hole_close(w, h);
		return SL_IDEM_ORDER_CLOSED;
	}
	if (seq <= h->base)
		return SL_IDEM_ORDER_GO;
	off = seq - h->base;
	if (join)
		h->bits[off >> 6] |= 1ull << (off & 63);
	return SL_IDEM_ORDER_BLOCK;
}

/* A new hole for part at seq: 0, or -1 when every hole is in use and none is stale. */
static int
hole_open(struct sl_idem *w, const void *part, uint64_t seq, uint64_t now_ns)
{
	struct sl_idem_hole *h;
	uint32_t i;

	if (w->nholes == SL_IDEM_HOLES)
		for (i = 0; i < SL_IDEM_HOLES; i++)
			if (hole_stale(&w->holes[i], now_ns))
				hole_close(w, &w->holes[i]);
	h = hole_find(w, NULL);
	if (h == NULL)
		return -1;
	h->part = part;
	h->base = seq;
	h->bits[0] = 1;
	h->bits[1] = 0;
	h->since_ns = now_ns;
	w->nholes++;
	return 0;
}

/* Calling context: the owner worker lcore (per publish). */
int
sl_idem_order_note(struct sl_idem *w, const void *part, uint64_t seq, int refused,
		   uint64_t now_ns)
{
	struct sl_idem_hole *h = w->nholes != 0 ? hole_find(w, part) : NULL;
	uint64_t k;

	if (!refused) {
		/* only base can be accepted with a hole open (the seqs above it are refused) */
		if (h == NULL || seq != h->base)
			return 0;
		h->bits[0] &= ~1ull;
		if ((h->bits[0] | h->bits[1]) == 0) {
			hole_close(w, h);
			return 0;
		}
		k = h->bits[0] != 0 ? (uint64_t)__builtin_ctzll(h->bits[0]) :
				      64 + (uint64_t)__builtin_ctzll(h->bits[1]);
		bits_down(h->bits, (unsigned int)k);
		h->base += k;
		h->since_ns = now_ns;
		return 0;
	}
	if (h == NULL)
		return hole_open(w, part, seq, now_ns);
	if (seq > h->base) {	/* not executed with a hole open: nothing to move */
		if (seq - h->base < SL_IDEM_WINDOW)
			h->bits[(seq - h->base) >> 6] |= 1ull << ((seq - h->base) & 63);
		return 0;
	}
	if (seq < h->base) {
		/* an earlier seq refused after later ones (it arrived late): new base */
		k = h->base - seq;
		if (k >= SL_IDEM_WINDOW) {
			h->bits[0] = 0;
			h->bits[1] = 0;
		} else {
			bits_up(h->bits, (unsigned int)k);
		}
		h->bits[0] |= 1;
		h->base = seq;
	}
	h->since_ns = now_ns;
	return 0;
}
