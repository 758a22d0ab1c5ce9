/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * idem: per-session idempotency window (see idem.h). Slot = seq % SL_IDEM_WINDOW.
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
	w->session = session;
	w->top = 0;
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
