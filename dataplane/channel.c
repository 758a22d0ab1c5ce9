/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * channel: NSQ consumer semantics for one channel of one partition (see channel.h).
 *
 * The window [confirmed, cursor) is a ring of conf.window slots indexed by
 * id & (window - 1). Counts of IN_FLIGHT and REQUEUED slots are kept, together with a
 * lower bound of the earliest deadline (min_deadline) and of the earliest ready time
 * (min_ready), and a lower bound of the lowest REQUEUED id (req_lo). sl_channel_expire
 * and sl_channel_next only scan the window when the tracked minimum is due; a scan that
 * finds nothing due makes the bound exact again, so idle calls stay O(1).
 * Subscribers that may take another message (live, in_flight < rdy: NSQ RDY is a maximum
 * in flight, never consumed) are a bit mask, so round robin is a couple of bit operations.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "channel.h"
#include "err.h"

enum slot_state {
	ST_FREE = 0,	/* not in the window */
	ST_IN_FLIGHT,	/* time = deadline */
	ST_REQUEUED,	/* time = ready time */
	ST_DONE,
};

struct slot {
	uint64_t time;
	uint16_t attempts;
	uint8_t state;
	uint8_t sub;
	uint32_t reserved;
};

struct sl_channel {
	char name[SL_CHANNEL_NAME_MAX + 1];
	int ordered;
	int ephemeral;
	uint32_t window;
	uint32_t mask;
	uint64_t msg_timeout_ns;
	uint64_t max_req_delay_ns;

	uint64_t confirmed;	/* every id below is finished */
	uint64_t cursor;	/* next id never delivered */
	uint32_t n_in_flight;
	uint32_t n_requeued;
	uint64_t min_deadline;	/* <= every IN_FLIGHT deadline */
	uint64_t min_ready;	/* <= every REQUEUED ready time */
	uint64_t req_lo;	/* <= every REQUEUED id */

	uint64_t live_mask;	/* subs[] slots in use */
	uint64_t rdy_mask;	/* live subs with in_flight < rdy */
	uint32_t rr;		/* round robin: next sub index to try first */
	uint32_t n_subs;
	struct sl_channel_sub subs[SL_CHANNEL_MAX_SUBS];

	uint64_t delivered;
	uint64_t finished;
	uint64_t requeued;
	uint64_t timed_out;
	uint64_t used_at;	/* last time seen with a subscriber or used (0: never seen) */

	struct slot slots[];
};

static inline uint64_t
sat_add(uint64_t a, uint64_t b)
{
	uint64_t r = a + b;

	return r < a ? UINT64_MAX : r;
}

static inline struct slot *
slot_of(struct sl_channel *ch, uint64_t id)
{
	return &ch->slots[id & ch->mask];
}

static inline int
sub_valid(const struct sl_channel *ch, int sub)
{
	return sub >= 0 && sub < SL_CHANNEL_MAX_SUBS && (ch->live_mask >> sub) & 1;
}

static inline void
update_rdy_bit(struct sl_channel *ch, int sub)
{
	/* NSQ RDY: a subscriber may hold up to rdy messages in flight */
	if (((ch->live_mask >> sub) & 1) && ch->subs[sub].in_flight < ch->subs[sub].rdy)
		ch->rdy_mask |= UINT64_C(1) << sub;
	else
		ch->rdy_mask &= ~(UINT64_C(1) << sub);
}

/* Advance confirmed over the leading DONE slots. */
static void
advance_confirmed(struct sl_channel *ch)
{
	while (ch->confirmed < ch->cursor) {
		struct slot *s = slot_of(ch, ch->confirmed);

		if (s->state != ST_DONE)
			break;
		s->state = ST_FREE;
		ch->confirmed++;
	}
}

/* An IN_FLIGHT slot becomes REQUEUED, ready at time ready. */
static void
to_requeued(struct sl_channel *ch, uint64_t id, struct slot *s, uint64_t ready)
{
	struct sl_channel_sub *sb = &ch->subs[s->sub];

	if (sb->in_flight > 0)
		sb->in_flight--;
	update_rdy_bit(ch, s->sub);
	s->state = ST_REQUEUED;
	s->time = ready;
	ch->n_in_flight--;
	ch->n_requeued++;
	if (ready < ch->min_ready)
		ch->min_ready = ready;
	if (id < ch->req_lo)
		ch->req_lo = id;
}

/* Round robin: first sub below its rdy at or after rr, wrapping. -1 if none. */
static int
pick_sub(const struct sl_channel *ch)
{
	uint64_t m = ch->rdy_mask;
	uint64_t hi;

	if (m == 0)
		return -1;
	hi = m & (~UINT64_C(0) << ch->rr);
	return __builtin_ctzll(hi != 0 ? hi : m);
}

/*
 * Lowest REQUEUED id ready at now. Returns 1 and *id, or 0. Only called when
 * n_requeued > 0 and now >= min_ready. When nothing is ready the scan saw every
 * REQUEUED slot, so min_ready and req_lo become exact.
 */
static int
find_ready(struct sl_channel *ch, uint64_t now, uint64_t *id)
{
	uint64_t first = UINT64_MAX;
	uint64_t minr = UINT64_MAX;
	uint32_t seen = 0;
	uint64_t i;

	i = ch->req_lo > ch->confirmed ? ch->req_lo : ch->confirmed;
	for (; i < ch->cursor && seen < ch->n_requeued; i++) {
		const struct slot *s = slot_of(ch, i);

		if (s->state != ST_REQUEUED)
			continue;
		if (s->time <= now) {
			ch->req_lo = first != UINT64_MAX ? first : i + 1;
			*id = i;
			return 1;
		}
		seen++;
		if (first == UINT64_MAX)
			first = i;
		if (s->time < minr)
			minr = s->time;
	}
	ch->req_lo = first != UINT64_MAX ? first : ch->cursor;
	ch->min_ready = minr;
	return 0;
}

/* The IN_FLIGHT slot of id held by sub (any holder if sub < 0), or NULL. */
static struct slot *
held_slot(struct sl_channel *ch, int sub, uint64_t id)
{
	struct slot *s;

	if (id < ch->confirmed || id >= ch->cursor)
		return NULL;
	s = slot_of(ch, id);
	if (s->state != ST_IN_FLIGHT)
		return NULL;
	if (sub >= 0 && s->sub != (uint32_t)sub)
		return NULL;
	return s;
}

/* Calling context: the owner lcore, or any thread before handing it over. */
struct sl_channel *
sl_channel_open(const struct sl_channel_conf *conf)
{
	struct sl_channel *ch;
	size_t nlen;

	if (conf == NULL || conf->name == NULL)
		goto inval;
	nlen = strnlen(conf->name, SL_CHANNEL_NAME_MAX + 1);
	if (nlen == 0 || nlen > SL_CHANNEL_NAME_MAX)
		goto inval;
	if (conf->window == 0 || conf->window > 65536 ||
	    (conf->window & (conf->window - 1)) != 0)
		goto inval;
	if (conf->msg_timeout_ns == 0 || conf->start_id == 0)
		goto inval;

	ch = calloc(1, sizeof(*ch) + (size_t)conf->window * sizeof(struct slot));
	if (ch == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	memcpy(ch->name, conf->name, nlen);
	ch->name[nlen] = '\0';
	ch->ordered = conf->ordered != 0;
	ch->ephemeral = conf->ephemeral != 0;
	ch->window = conf->window;
	ch->mask = conf->window - 1;
	ch->msg_timeout_ns = conf->msg_timeout_ns;
	ch->max_req_delay_ns = conf->max_req_delay_ns;
	ch->confirmed = conf->start_id;
	ch->cursor = conf->start_id;
	ch->req_lo = conf->start_id;
	ch->min_deadline = UINT64_MAX;
	ch->min_ready = UINT64_MAX;
	return ch;

inval:
	errno = EINVAL;
	return NULL;
}

/* Calling context: the owner lcore (or control thread after the owner let go). */
void
sl_channel_close(struct sl_channel *ch)
{
	free(ch);
}

/* Calling context: any thread holding a reference. */
const char *
sl_channel_name(const struct sl_channel *ch)
{
	return ch->name;
}

/* Calling context: any thread holding a reference. */
int
sl_channel_is_ordered(const struct sl_channel *ch)
{
	return ch->ordered;
}

/* Calling context: any thread holding a reference. */
int
sl_channel_is_ephemeral(const struct sl_channel *ch)
{
	return ch->ephemeral;
}

/* Calling context: owner lcore. */
int
sl_channel_sub_add(struct sl_channel *ch, uint64_t session, uint32_t session_slot,
		   uint64_t sub_id, uint32_t rdy)
{
	struct sl_channel_sub *sb;
	int idx;

	if (session == 0)
		return -EINVAL;
	if (sl_channel_sub_find(ch, sub_id) >= 0)
		return -SL_E_EXISTS;
	if (~ch->live_mask == 0)
		return -SL_E_LIMIT;
	idx = __builtin_ctzll(~ch->live_mask);
	sb = &ch->subs[idx];
	memset(sb, 0, sizeof(*sb));
	sb->session = session;
	sb->session_slot = session_slot;
	sb->sub_id = sub_id;
	sb->rdy = rdy;
	ch->live_mask |= UINT64_C(1) << idx;
	update_rdy_bit(ch, idx);
	ch->n_subs++;
	return idx;
}

/* Calling context: owner lcore. */
int
sl_channel_sub_find(const struct sl_channel *ch, uint64_t sub_id)
{
	uint64_t m = ch->live_mask;

	while (m != 0) {
		int i = __builtin_ctzll(m);

		if (ch->subs[i].sub_id == sub_id)
			return i;
		m &= m - 1;
	}
	return -SL_E_CHANNEL;
}

/* Calling context: owner lcore. */
int
sl_channel_sub_rdy(struct sl_channel *ch, int sub, uint32_t rdy)
{
	if (!sub_valid(ch, sub))
		return -SL_E_CHANNEL;
	ch->subs[sub].rdy = rdy;
	update_rdy_bit(ch, sub);
	return 0;
}

/* Calling context: owner lcore. Scans the window only if the sub holds ids. */
void
sl_channel_sub_remove(struct sl_channel *ch, int sub, uint64_t now)
{
	uint64_t left;
	uint64_t id;

	if (!sub_valid(ch, sub))
		return;
	left = ch->subs[sub].in_flight;
	for (id = ch->confirmed; id < ch->cursor && left > 0; id++) {
		struct slot *s = slot_of(ch, id);

		if (s->state == ST_IN_FLIGHT && s->sub == (uint32_t)sub) {
			to_requeued(ch, id, s, now);
			left--;
		}
	}
	memset(&ch->subs[sub], 0, sizeof(ch->subs[sub]));
	ch->live_mask &= ~(UINT64_C(1) << sub);
	ch->rdy_mask &= ~(UINT64_C(1) << sub);
	ch->n_subs--;
}

/* Calling context: owner lcore. Scans the window only if the sub holds ids. */
uint32_t
sl_channel_sub_hop(struct sl_channel *ch, int sub, uint32_t gen, uint64_t now)
{
	uint64_t left, id;
	uint32_t n = 0;

	if (!sub_valid(ch, sub) || ch->subs[sub].hop_gen == gen)
		return 0;
	ch->subs[sub].hop_gen = gen;
	left = ch->subs[sub].in_flight;
	for (id = ch->confirmed; id < ch->cursor && left > 0; id++) {
		struct slot *s = slot_of(ch, id);

		if (s->state == ST_IN_FLIGHT && s->sub == (uint32_t)sub) {
			to_requeued(ch, id, s, now);
			left--;
			n++;
		}
	}
	if (ch->n_in_flight == 0)
		ch->min_deadline = UINT64_MAX;
	ch->requeued += n;
	return n;
}

/* Calling context: owner lcore (every tick). */
uint64_t
sl_channel_idle(struct sl_channel *ch, uint64_t now)
{
	if (ch->n_subs > 0 || ch->used_at == 0 || now < ch->used_at) {
		ch->used_at = now != 0 ? now : 1;
		return 0;
	}
	return now - ch->used_at;
}

/* Calling context: owner lcore. */
uint64_t
sl_channel_idle_ns(const struct sl_channel *ch, uint64_t now)
{
	if (ch->n_subs > 0 || ch->used_at == 0 || now < ch->used_at)
		return 0;
	return now - ch->used_at;
}

/* Calling context: owner lcore. */
void
sl_channel_mark_used(struct sl_channel *ch, uint64_t now)
{
	if (now > ch->used_at)
		ch->used_at = now;
}

/* Calling context: owner lcore. */
const struct sl_channel_sub *
sl_channel_sub_get(const struct sl_channel *ch, int sub)
{
	return sub_valid(ch, sub) ? &ch->subs[sub] : NULL;
}

/* Calling context: owner lcore. */
uint32_t
sl_channel_sub_count(const struct sl_channel *ch)
{
	return ch->n_subs;
}

/* Calling context: owner lcore (per-packet path: O(1) unless something is due). */
int
sl_channel_next(struct sl_channel *ch, uint64_t end_id, uint64_t now,
		struct sl_channel_delivery *d)
{
	struct sl_channel_sub *sb;
	struct slot *s;
	uint64_t id;
	int sub;

	sub = pick_sub(ch);
	if (sub < 0)
		return 0;
	if (ch->n_requeued > 0 && now >= ch->min_ready && find_ready(ch, now, &id)) {
		s = slot_of(ch, id);
		ch->n_requeued--;
		if (ch->n_requeued == 0)
			ch->min_ready = UINT64_MAX;
	} else {
		if (ch->n_requeued == 0)
			ch->min_ready = UINT64_MAX;
		if (ch->cursor > end_id)
			return 0;
		if (ch->ordered ? ch->cursor != ch->confirmed :
		    ch->cursor - ch->confirmed >= ch->window)
			return 0;
		id = ch->cursor++;
		s = slot_of(ch, id);
		s->attempts = 0;
	}
	s->state = ST_IN_FLIGHT;
	if (s->attempts < UINT16_MAX)
		s->attempts++;
	s->time = sat_add(now, ch->msg_timeout_ns);
	s->sub = (uint8_t)sub;
	ch->n_in_flight++;
	if (s->time < ch->min_deadline)
		ch->min_deadline = s->time;

	sb = &ch->subs[sub];
	sb->delivered++;
	sb->in_flight++;
	update_rdy_bit(ch, sub);
	ch->rr = (uint32_t)(sub + 1) & (SL_CHANNEL_MAX_SUBS - 1);
	ch->delivered++;

	d->id = id;
	d->attempts = s->attempts;
	d->sub = (uint16_t)sub;
	return 1;
}

/* Calling context: owner lcore, right after the sl_channel_next that produced d. */
void
sl_channel_unsend(struct sl_channel *ch, const struct sl_channel_delivery *d)
{
	struct slot *s = held_slot(ch, d->sub, d->id);
	struct sl_channel_sub *sb;

	if (s == NULL)
		return;
	sb = &ch->subs[d->sub];
	if (sb->delivered > 0)
		sb->delivered--;
	if (ch->delivered > 0)
		ch->delivered--;
	ch->rr = d->sub;
	if (s->attempts == 1 && d->id + 1 == ch->cursor) {
		/* It was a new id: the cursor goes back. */
		if (sb->in_flight > 0)
			sb->in_flight--;
		update_rdy_bit(ch, d->sub);
		ch->n_in_flight--;
		s->state = ST_FREE;
		s->attempts = 0;
		ch->cursor--;
		return;
	}
	/* It was a ready requeued id: ready again right away. */
	to_requeued(ch, d->id, s, 0);
	if (s->attempts > 0 && s->attempts < UINT16_MAX)
		s->attempts--;
}

/* Calling context: owner lcore. */
int
sl_channel_fin(struct sl_channel *ch, int sub, uint64_t id)
{
	struct slot *s = held_slot(ch, sub, id);
	struct sl_channel_sub *sb;

	if (s == NULL)
		return -SL_E_MSG_ID;
	sb = &ch->subs[s->sub];
	if (sb->in_flight > 0)
		sb->in_flight--;
	update_rdy_bit(ch, s->sub);
	s->state = ST_DONE;
	ch->n_in_flight--;
	if (ch->n_in_flight == 0)
		ch->min_deadline = UINT64_MAX;
	ch->finished++;
	advance_confirmed(ch);
	return 0;
}

/* Calling context: owner lcore. */
int
sl_channel_req(struct sl_channel *ch, int sub, uint64_t id, uint64_t delay_ns, uint64_t now)
{
	struct slot *s = held_slot(ch, sub, id);

	if (s == NULL)
		return -SL_E_MSG_ID;
	if (delay_ns > ch->max_req_delay_ns)
		delay_ns = ch->max_req_delay_ns;
	to_requeued(ch, id, s, sat_add(now, delay_ns));
	if (ch->n_in_flight == 0)
		ch->min_deadline = UINT64_MAX;
	ch->requeued++;
	return 0;
}

/* Calling context: owner lcore. */
int
sl_channel_touch(struct sl_channel *ch, int sub, uint64_t id, uint64_t now)
{
	struct slot *s = held_slot(ch, sub, id);

	if (s == NULL)
		return -SL_E_MSG_ID;
	/* Deadlines only grow here: min_deadline stays a valid lower bound. */
	s->time = sat_add(now, ch->msg_timeout_ns);
	return 0;
}

/* Calling context: owner lcore (per-poll: O(1) unless a deadline is due). */
uint64_t
sl_channel_next_due(const struct sl_channel *ch)
{
	uint64_t due = UINT64_MAX;

	if (ch->n_in_flight > 0)
		due = ch->min_deadline;
	if (ch->n_requeued > 0 && ch->min_ready < due)
		due = ch->min_ready;
	return due;
}

uint32_t
sl_channel_expire(struct sl_channel *ch, uint64_t now)
{
	uint64_t mind = UINT64_MAX;
	uint32_t left = ch->n_in_flight;
	uint32_t n = 0;
	uint64_t id;

	if (left == 0) {
		ch->min_deadline = UINT64_MAX;
		return 0;
	}
	if (now < ch->min_deadline)
		return 0;
	for (id = ch->confirmed; id < ch->cursor && left > 0; id++) {
		struct slot *s = slot_of(ch, id);

		if (s->state != ST_IN_FLIGHT)
			continue;
		left--;
		if (s->time <= now) {
			to_requeued(ch, id, s, now);
			n++;
		} else if (s->time < mind) {
			mind = s->time;
		}
	}
	ch->min_deadline = mind;
	ch->timed_out += n;
	return n;
}

/* Calling context: owner lcore (control rate). */
void
sl_channel_reset(struct sl_channel *ch, uint64_t next_id)
{
	uint64_t m = ch->live_mask;

	if (next_id == 0)
		next_id = 1;
	memset(ch->slots, 0, (size_t)ch->window * sizeof(struct slot));
	while (m != 0) {
		int sub = __builtin_ctzll(m);

		ch->subs[sub].in_flight = 0;
		update_rdy_bit(ch, sub);
		m &= m - 1;
	}
	ch->confirmed = next_id;
	ch->cursor = next_id;
	ch->req_lo = next_id;
	ch->n_in_flight = 0;
	ch->n_requeued = 0;
	ch->min_deadline = UINT64_MAX;
	ch->min_ready = UINT64_MAX;
}

/* Calling context: owner lcore. */
uint64_t
sl_channel_confirmed(const struct sl_channel *ch)
{
	return ch->confirmed;
}

/* Calling context: owner lcore. */
uint64_t
sl_channel_cursor(const struct sl_channel *ch)
{
	return ch->cursor;
}

/* Calling context: owner lcore. */
void
sl_channel_get_stats(const struct sl_channel *ch, struct sl_channel_stats *st)
{
	st->delivered = ch->delivered;
	st->finished = ch->finished;
	st->requeued = ch->requeued;
	st->timed_out = ch->timed_out;
	st->in_flight = ch->n_in_flight;
	st->requeued_now = ch->n_requeued;
}
