/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * repl_sim: deterministic simulator for the replication core (replication/repl.c, linked
 * as is). One partition on 3 to 5 nodes (chosen by the seed), each with a simulated disk
 * log (commit records + message bytes, a synced point, crashes that lose the unsynced
 * tail and may leave a torn last record that recovery cuts; a base, the id before its
 * first record, on disk: retention removes a prefix of committed, durable records now and
 * then, on any live node, and a replica behind its leader's first record resets its log
 * to start there: ops->first, ops->reset), a simulated network (per datagram drop,
 * duplicate, delay and so reorder, and node isolation for a while), a simulated clock (an
 * event queue), a membership controller (applies isr_leave/isr_join at once, removes a
 * crashed node from the ISR, elects a new leader among the live ISR members with the
 * highest log end on a leader crash with a new epoch and session, and installs every view
 * on every node after a delay), publishing clients (PUB and MPUB, retried on errors and
 * timeouts) and one consumer on an ordered channel (FIN in order, a SET_OFFSET now and
 * then). The only source of randomness is the seed (splitmix64); there is no wall clock
 * and no thread.
 *
 * After every step (one event) the invariants are checked; the first violation prints
 * the seed, the step and what went wrong, and the program exits 1. The same seed gives
 * the same run (and the same --verbose trace).
 *
 *   repl_sim [--seed N | --seeds A-B] [--steps K] [--verbose]
 *
 * Invariants (docs/replication.md):
 *  (a) every member of the controller's ISR holds every committed record after its
 *      base (what retention or a reset removed before it is committed); a node's base
 *      never moves back; a reset starts the log empty right after a committed record
 *      (at that record's end offset), at or before the answering leader's first record,
 *      and drops only records older than that first record;
 *  (b) committed logs never diverge: whatever a node reports committed (ops->committed)
 *      equals, record by record (fields and bytes), the global committed log, and a node
 *      never truncates below what it reported committed;
 *  (c) a committed record is never replaced or changed (the global committed log only
 *      grows; an acknowledged publish is found there with its payloads); retried
 *      publishes may commit twice (no idempotent producer here): counted, not failed;
 *  (d) the ordered channel's consumer is delivered ids in strict order: every id it
 *      gets is the position of the last acknowledged FIN or SET_OFFSET, or the position
 *      of one sent since and not acknowledged (it may have reached some replicas, and a
 *      failover may bring it back or not): never a skip, never a step behind a
 *      confirmed FIN, whatever the leader changes.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "repl.h"
#include "sim_common.h"

#define MAXN 5
#define NCLIENTS 3
#define PAYLOAD 16
#define MSGREC (8 + 4 + PAYLOAD)
#define MAXPEND 64
#define US ((uint64_t)1000)
#define MS ((uint64_t)1000000)

static uint64_t seed_now;
static uint32_t sim_maxd;	/* the transport's largest datagram: an MTU of 1500 or 8 KiB */
static uint64_t step_now;
static int verbose;

/* ---- PRNG (sim_common.h) ---- */

/* probability in 1/10000 */
static int
chance(uint32_t p)
{
	return sim_rndn(10000) < p;
}

static uint64_t now;

static void
trace(const char *fmt, ...)
{
	va_list ap;

	if (!verbose)
		return;
	printf("%9" PRIu64 ".%03" PRIu64 "ms #%-6" PRIu64 " ", now / MS, now / US % 1000,
	       step_now);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

static void __attribute__((noreturn))
fail(const char *fmt, ...)
{
	va_list ap;

	printf("VIOLATION seed=%" PRIu64 " step=%" PRIu64 " t=%" PRIu64 "ns: ", seed_now,
	       step_now, now);
	va_start(ap, fmt);
	sim_vfail("repl_sim", seed_now, fmt, ap);
}

/* ---- records and disks ---- */
struct rec {
	struct sl_crec c;
	uint8_t *msgs;
};

struct disk {
	struct rec *r;
	uint32_t n, cap;
	uint32_t synced;		/* records durable */
	uint64_t base;			/* the id before the first record (retention, reset):
					 * durable at once, survives crashes; 0 = from id 1 */
	uint64_t base_off;		/* message offset of the record after base */
};

static uint64_t
disk_end(const struct disk *d)
{
	return d->n ? d->r[d->n - 1].c.last_msg_log_id : d->base;
}

static uint64_t
disk_bytes(const struct disk *d)
{
	return d->n ? d->r[d->n - 1].c.msg_offset + d->r[d->n - 1].c.msg_size : d->base_off;
}

static void
disk_push(struct disk *d, const struct sl_crec *c, const void *msgs)
{
	if (d->n == d->cap) {
		d->cap = d->cap ? d->cap * 2 : 64;
		d->r = realloc(d->r, d->cap * sizeof(*d->r));
		if (!d->r)
			abort();
	}
	d->r[d->n].c = *c;
	d->r[d->n].msgs = malloc(c->msg_size ? c->msg_size : 1);
	memcpy(d->r[d->n].msgs, msgs, c->msg_size);
	d->n++;
}

static void
disk_cut(struct disk *d, uint32_t n)
{
	while (d->n > n) {
		d->n--;
		free(d->r[d->n].msgs);
	}
	if (d->synced > d->n)
		d->synced = d->n;
}

/* remove the first k records (retention): the log then starts after the last of them */
static void
disk_drop_front(struct disk *d, uint32_t k)
{
	uint32_t i;

	if (k == 0 || k > d->n)
		abort();
	d->base = d->r[k - 1].c.last_msg_log_id;
	d->base_off = d->r[k - 1].c.msg_offset + d->r[k - 1].c.msg_size;
	for (i = 0; i < k; i++)
		free(d->r[i].msgs);
	memmove(d->r, d->r + k, (d->n - k) * sizeof(*d->r));
	d->n -= k;
	d->synced = d->synced > k ? d->synced - k : 0;
}

/* index of the record containing id, -1 */
static int
disk_find(const struct disk *d, uint64_t id)
{
	int lo = 0, hi = (int)d->n - 1;

	while (lo <= hi) {
		int mid = (lo + hi) / 2;
		const struct sl_crec *c = &d->r[mid].c;

		if (id < c->log_id)
			hi = mid - 1;
		else if (id > c->last_msg_log_id)
			lo = mid + 1;
		else
			return mid;
	}
	return -1;
}

static int
rec_eq(const struct rec *a, const struct rec *b)
{
	return memcmp(&a->c, &b->c, sizeof(a->c)) == 0 &&
		memcmp(a->msgs, b->msgs, a->c.msg_size) == 0;
}

/* ---- the world ---- */
struct pend {
	int client;
	uint32_t attempt;
	uint64_t first, last;
};

struct node {
	uint32_t id;
	int alive;
	uint32_t inc;			/* incarnation */
	struct sl_repl *r;
	struct disk d;
	uint32_t tbase;			/* index in the committed log of the record after
					 * d.base (d.base is always a committed record end) */
	uint64_t chanpos[2];		/* "ord", "unord": next id to deliver */
	uint32_t ok_upto;		/* records checked against the truth (a) */
	uint32_t cok_upto;		/* records checked on committed() (b) */
	uint64_t commit_seen;
	struct pend pend[MAXPEND];
	uint32_t npend;
	uint64_t last_view_t;
	uint64_t isolated_until;	/* network partition: its datagrams are lost */
};

struct client {
	int waiting;
	uint32_t attempt;
	uint64_t msgno;
	uint32_t nm;
	uint64_t payload[4];
	uint64_t deadline;
	uint64_t acked;
};

struct consumer {
	int inflight;			/* 1 FIN, 2 SET_OFFSET */
	uint32_t node, inc;
	uint64_t token;
	uint64_t id;			/* FIN: id; SET_OFFSET: position */
	uint64_t deadline;
	uint64_t last;			/* last delivered id (0 none) */
	uint64_t confirmed;		/* position of the last acknowledged FIN/SET_OFFSET */
	uint64_t allowed[256];		/* maybe-positions: unconfirmed FIN/SET_OFFSET */
	uint32_t nallowed;
	int overflow;			/* too many: (d) unchecked until a confirmation */
	uint64_t delivered;
};

enum { EV_DGRAM = 1, EV_POLL, EV_VIEW, EV_CRASH, EV_RESTART, EV_CLIENT, EV_PUB, EV_ANS,
	EV_CONSUMER, EV_FAULT, EV_SYNC };

struct ev {
	uint64_t t, seq;
	int type;
	uint32_t a, b, inc;
	uint32_t len;
	int err;
	void *data;
};

static struct {
	struct ev *h;
	uint32_t n, cap;
	uint64_t seq;
} q;

static struct node nodes[MAXN];
static uint32_t nn;
static struct client clients[NCLIENTS];
static struct consumer cons;

static struct {
	struct sl_repl_view v;
	uint32_t alive_isr;
} ctl;

/* the global committed log */
static struct disk truth;

/* fault parameters of this seed */
static uint32_t p_drop, p_dup, p_crash, p_sync, p_isolate, p_retain;
static uint64_t d_min, d_span;

/* the sender of the datagram being input (the leader a reset answer came from), else -1 */
static uint32_t dgram_from = UINT32_MAX;

static struct {
	uint64_t commits, acked, crashes, elections, dups, rollbacks, joins, leaves,
		delivered, setoffsets, dgrams;
	uint64_t retains, retained;	/* retention events, records they removed */
	uint64_t resets;		/* replica logs reset (ops->reset done) */
	uint64_t st_resets, st_too_old;	/* sl_repl_stats resets (leader answers + replica
					 * resets) and fetch_too_old, every incarnation */
	uint64_t below_base;		/* truncations to below a node's base */
} tot;

static uint64_t tok;

static uint64_t
tok_next(void)
{
	return ++tok;
}

/* ---- event queue (binary heap on (t, seq)) ---- */
static int
ev_lt(const struct ev *a, const struct ev *b)
{
	return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

static void
push(struct ev e)
{
	uint32_t i;

	if (q.n == q.cap) {
		q.cap = q.cap ? q.cap * 2 : 1024;
		q.h = realloc(q.h, q.cap * sizeof(*q.h));
		if (!q.h)
			abort();
	}
	e.seq = q.seq++;
	i = q.n++;
	while (i && ev_lt(&e, &q.h[(i - 1) / 2])) {
		q.h[i] = q.h[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	q.h[i] = e;
}

static struct ev
pop(void)
{
	struct ev top = q.h[0], last = q.h[--q.n];
	uint32_t i = 0;

	for (;;) {
		uint32_t c = 2 * i + 1;

		if (c >= q.n)
			break;
		if (c + 1 < q.n && ev_lt(&q.h[c + 1], &q.h[c]))
			c++;
		if (!ev_lt(&q.h[c], &last))
			break;
		q.h[i] = q.h[c];
		i = c;
	}
	if (q.n)
		q.h[i] = last;
	return top;
}

static void
at(uint64_t t, int type, uint32_t a, uint32_t b, uint32_t inc)
{
	struct ev e;

	memset(&e, 0, sizeof(e));
	e.t = t;
	e.type = type;
	e.a = a;
	e.b = b;
	e.inc = inc;
	push(e);
}

static uint64_t
net_delay(void)
{
	return d_min + sim_rndn(d_span);
}

/* ---- the controller (membership seam) ---- */
static int
ctl_in_isr(uint32_t node)
{
	uint32_t i;

	for (i = 0; i < ctl.v.nisr; i++)
		if (ctl.v.isr[i] == node)
			return 1;
	return 0;
}

static void
ctl_publish(const char *why)
{
	uint32_t i;

	ctl.v.version++;
	if (verbose) {
		char isr[64];
		int o = 0;

		for (i = 0; i < ctl.v.nisr; i++)
			o += snprintf(isr + o, sizeof(isr) - o, "%s%u", i ? "," : "", ctl.v.isr[i]);
		trace("CTL view v%" PRIu64 " leader=%u epoch=%u isr=[%s] (%s)", ctl.v.version,
		      ctl.v.leader, ctl.v.epoch, isr, why);
	}
	for (i = 0; i < nn; i++) {
		struct node *n = &nodes[i];
		struct ev e;
		uint64_t t;

		if (!n->alive)
			continue;
		t = now + 100 * US + sim_rndn(2 * MS);
		if (t <= n->last_view_t)
			t = n->last_view_t + 1;
		n->last_view_t = t;
		memset(&e, 0, sizeof(e));
		e.t = t;
		e.type = EV_VIEW;
		e.a = i;
		e.inc = n->inc;
		e.data = malloc(sizeof(ctl.v));
		memcpy(e.data, &ctl.v, sizeof(ctl.v));
		push(e);
	}
}

static void
ctl_isr_remove(uint32_t node)
{
	uint32_t i, j = 0;

	for (i = 0; i < ctl.v.nisr; i++)
		if (ctl.v.isr[i] != node)
			ctl.v.isr[j++] = ctl.v.isr[i];
	ctl.v.nisr = j;
}

/* ---- node ops ---- */
static void
answer(uint32_t client, uint32_t attempt, int err)
{
	struct ev e;

	memset(&e, 0, sizeof(e));
	e.t = now + net_delay();
	e.type = EV_ANS;
	e.a = client;
	e.b = attempt;
	e.err = err;
	if (!chance(p_drop))
		push(e);
}

static void
op_send(void *arg, uint32_t node, const void *buf, uint32_t len)
{
	struct node *n = arg;
	uint32_t copies = 1, k;

	if (len > sim_maxd)
		fail("node %u sent a datagram of %u bytes (the transport carries %u)", n->id, len,
		     sim_maxd);
	if (node >= nn || node == n->id)
		fail("node %u sent to bad node %u", n->id, node);
	tot.dgrams++;
	if (chance(p_drop) || n->isolated_until > now || nodes[node].isolated_until > now)
		return;
	if (chance(p_dup))
		copies = 2;
	for (k = 0; k < copies; k++) {
		struct ev e;

		memset(&e, 0, sizeof(e));
		e.t = now + net_delay();
		e.type = EV_DGRAM;
		e.a = n->id;
		e.b = node;
		e.len = len;
		e.data = malloc(len);
		memcpy(e.data, buf, len);
		push(e);
	}
}

static int
op_append(void *arg, const struct sl_crec *c, const void *msgs)
{
	struct node *n = arg;

	/* repl.c appends at the end it got from ops->last (after a reset: the reset's id and
	 * offset); anything else is its bookkeeping gone wrong, or a reset to a bad offset */
	if (c->log_id != disk_end(&n->d) + 1 || c->msg_offset != disk_bytes(&n->d))
		fail("node %u appends record %" PRIu64 " at offset %" PRIu64 " to its log "
		     "ending at %" PRIu64 ", offset %" PRIu64 " (base %" PRIu64 ")", n->id,
		     c->log_id, c->msg_offset, disk_end(&n->d), disk_bytes(&n->d), n->d.base);
	disk_push(&n->d, c, msgs);
	if (chance(p_sync))
		n->d.synced = n->d.n;
	return 0;
}

static void
node_cut(struct node *n, uint64_t end_id)
{
	uint32_t k = n->d.n;

	while (k && n->d.r[k - 1].c.log_id > end_id)
		k--;
	if (k && n->d.r[k - 1].c.last_msg_log_id != end_id)
		fail("node %u truncate to %" PRIu64 " inside a record", n->id, end_id);
	if (end_id < n->d.base) {
		/* every record goes; the base stays (what retention removed does not come
		 * back): the log is empty at its base */
		trace("node %u truncates to %" PRIu64 " below its base %" PRIu64 ": empty",
		      n->id, end_id, n->d.base);
		tot.below_base++;
	}
	disk_cut(&n->d, k);
	if (n->ok_upto > k)
		n->ok_upto = k;
	if (n->cok_upto > k)
		n->cok_upto = k;
}

static int
op_truncate(void *arg, uint64_t end_id)
{
	struct node *n = arg;

	trace("node %u truncate to %" PRIu64 " (end %" PRIu64 ")", n->id, end_id,
	      disk_end(&n->d));
	if (end_id < n->commit_seen)
		fail("(b) node %u truncates to %" PRIu64 " below its commit index %" PRIu64,
		     n->id, end_id, n->commit_seen);
	node_cut(n, end_id);
	return 0;
}

static int
op_read(void *arg, uint64_t id, struct sl_crec *c, void *buf, uint32_t cap)
{
	struct node *n = arg;
	int i = disk_find(&n->d, id);

	if (i < 0)
		return -ENOENT;
	*c = n->d.r[i].c;
	if (c->msg_size > cap)
		return -ENOBUFS;
	memcpy(buf, n->d.r[i].msgs, c->msg_size);
	return 0;
}

static void
op_last(void *arg, struct sl_crec *c)
{
	struct node *n = arg;

	if (n->d.n) {
		*c = n->d.r[n->d.n - 1].c;
	} else {
		/* empty: log_id 0, ending at its base (0 unless retained or reset) */
		memset(c, 0, sizeof(*c));
		c->last_msg_log_id = n->d.base;
		c->msg_cnt = n->d.base;
		c->msg_offset = n->d.base_off;
	}
}

static uint64_t
op_epoch_end(void *arg, uint64_t epoch)
{
	struct node *n = arg;
	uint32_t k = n->d.n;

	while (k && n->d.r[k - 1].c.epoch > epoch)
		k--;
	/* none retained: 0 (the epochs before the base are gone, as in the disk log) */
	return k ? n->d.r[k - 1].c.last_msg_log_id : 0;
}

/* the index in the committed log of the record after id (a committed record end), or
 * fail: a base is always one */
static uint32_t
truth_after(struct node *n, uint64_t id, const char *what)
{
	int i;

	if (id == 0)
		return 0;
	i = disk_find(&truth, id);
	if (i < 0 || truth.r[i].c.last_msg_log_id != id)
		fail("node %u: %s %" PRIu64 " is no committed record end (committed end %"
		     PRIu64 ")", n->id, what, id, disk_end(&truth));
	return (uint32_t)i + 1;
}

/* leader: the oldest record it can serve, the one after its base (for an empty log the
 * next one: everything before it is committed, a replica may start there), and its offset
 * when asked for; now and then "not known now" */
static int
op_first(void *arg, uint64_t *id, uint64_t *offset)
{
	struct node *n = arg;

	if (chance(300))
		return -EAGAIN;
	*id = n->d.base + 1;
	if (offset)
		*offset = n->d.base_off;
	return 0;
}

/* replica: restart the log empty before id, at offset. (a) a reset drops only records
 * older than the answering leader's first record, never moves the base back, and starts
 * right after a committed record with that record's end offset ("every id before counts
 * as committed"); the log is then empty at exactly that base */
static int
op_reset(void *arg, uint64_t id, uint64_t offset)
{
	struct node *n = arg;
	struct node *l = dgram_from < nn ? &nodes[dgram_from] : NULL;
	uint32_t t;

	if (chance(1000)) {
		trace("node %u reset to %" PRIu64 ": not now", n->id, id);
		return -EAGAIN;
	}
	trace("node %u RESET its log (base %" PRIu64 ", end %" PRIu64 ") to start at %"
	      PRIu64 " offset %" PRIu64 " (leader %d first %" PRIu64 ")", n->id, n->d.base,
	      disk_end(&n->d), id, offset, l ? (int)l->id : -1, l ? l->d.base + 1 : 0);
	if (id == 0)
		fail("node %u reset to id 0", n->id);
	if (id - 1 < n->d.base)
		fail("(a) node %u reset moves its base back: %" PRIu64 " -> %" PRIu64, n->id,
		     n->d.base, id - 1);
	if (l == NULL || l == n)
		fail("node %u resets its log outside an answer from a leader", n->id);
	if (id > l->d.base + 1)
		fail("(a) node %u reset to %" PRIu64 ", past leader %u's first record %" PRIu64,
		     n->id, id, l->id, l->d.base + 1);
	if (disk_end(&n->d) >= l->d.base + 1)
		fail("(a) node %u reset to %" PRIu64 " drops records up to %" PRIu64 " that "
		     "leader %u still holds (its first %" PRIu64 ")", n->id, id,
		     disk_end(&n->d), l->id, l->d.base + 1);
	if (id - 1 > disk_end(&truth))
		fail("(a) node %u reset to %" PRIu64 ": ids up to %" PRIu64 " count as "
		     "committed, the committed end is %" PRIu64, n->id, id, id - 1,
		     disk_end(&truth));
	t = truth_after(n, id - 1, "reset base");
	if (offset != (t ? truth.r[t - 1].c.msg_offset + truth.r[t - 1].c.msg_size : 0))
		fail("(a) node %u reset to %" PRIu64 " at offset %" PRIu64 ", the committed "
		     "log has it at %" PRIu64, n->id, id, offset,
		     t ? truth.r[t - 1].c.msg_offset + truth.r[t - 1].c.msg_size : 0);
	disk_cut(&n->d, 0);
	n->d.base = id - 1;
	n->d.base_off = offset;
	n->tbase = t;
	n->ok_upto = 0;
	n->cok_upto = 0;
	tot.resets++;
	return 0;
}

static void
op_isr_leave(void *arg, uint32_t node)
{
	struct node *n = arg;

	if (!n->alive || ctl.v.leader != n->id)
		return;
	trace("node %u asks node %u out of the ISR", n->id, node);
	tot.leaves++;
	ctl_isr_remove(node);
	ctl_publish("isr_leave");
}

static void
op_isr_join(void *arg, uint32_t node)
{
	struct node *n = arg;

	if (!n->alive || ctl.v.leader != n->id)
		return;
	trace("node %u asks node %u into the ISR", n->id, node);
	tot.joins++;
	if (nodes[node].alive && !ctl_in_isr(node))
		ctl.v.isr[ctl.v.nisr++] = node;
	ctl_publish("isr_join");
}

static uint64_t
payload_of(uint32_t client, uint64_t msgno)
{
	return (uint64_t)(client + 1) << 40 | msgno;
}

static void
check_truth_rec(const struct rec *r)
{
	const uint8_t *p = r->msgs;
	uint32_t k;

	for (k = 0; k < r->c.msg_num; k++, p += MSGREC) {
		uint64_t id, pl;

		memcpy(&id, p, 8);
		memcpy(&pl, p + 12, 8);
		if (id != r->c.log_id + k)
			fail("(c) committed record %" PRIu64 " has message id %" PRIu64,
			     r->c.log_id, id);
		(void)pl;
	}
}

static void
op_committed(void *arg, uint64_t end_id)
{
	struct node *n = arg;
	uint32_t k;

	if (end_id < n->commit_seen)
		fail("(b) node %u commit index went back %" PRIu64 " -> %" PRIu64, n->id,
		     n->commit_seen, end_id);
	n->commit_seen = end_id;
	/* its committed prefix is the global committed log (b, c); the records before its
	 * base are not held any more (retention, reset) and were checked then */
	for (k = n->cok_upto; k < n->d.n && n->d.r[k].c.last_msg_log_id <= end_id; k++) {
		const struct rec *r = &n->d.r[k];
		uint32_t t = n->tbase + k;

		if (t < truth.n) {
			if (!rec_eq(r, &truth.r[t]))
				fail("(b) node %u committed record %" PRIu64 " (epoch %#" PRIx64
				     ") differs from the committed log's (epoch %#" PRIx64 ")",
				     n->id, r->c.log_id, r->c.epoch, truth.r[t].c.epoch);
		} else {
			if (r->c.log_id != disk_end(&truth) + 1)
				fail("(b) node %u commits record %" PRIu64 " after %" PRIu64,
				     n->id, r->c.log_id, disk_end(&truth));
			disk_push(&truth, &r->c, r->msgs);
			check_truth_rec(r);
			tot.commits++;
		}
	}
	n->cok_upto = k;
	if (k < n->d.n ? n->d.r[k].c.log_id <= end_id : disk_end(&n->d) < end_id)
		fail("(b) node %u commit index %" PRIu64 " is no record end of its log "
		     "(end %" PRIu64 ")", n->id, end_id, disk_end(&n->d));
	/* answer the publishes */
	for (k = 0; k < n->npend; ) {
		struct pend *p = &n->pend[k];

		if (p->last <= end_id) {
			answer(p->client, p->attempt, 0);
			n->pend[k] = n->pend[--n->npend];
		} else {
			k++;
		}
	}
}

static void
op_rolled_back(void *arg, uint64_t end_id, int err)
{
	struct node *n = arg;
	uint32_t k;

	trace("node %u rolled back past %" PRIu64 ": %s", n->id, end_id, sl_strerror(err));
	tot.rollbacks++;
	for (k = 0; k < n->npend; ) {
		struct pend *p = &n->pend[k];

		if (p->last > end_id) {
			answer(p->client, p->attempt, err);
			n->pend[k] = n->pend[--n->npend];
		} else {
			k++;
		}
	}
}

static int
chan_idx(const char *chan)
{
	if (strcmp(chan, "ord") == 0)
		return 0;
	if (strcmp(chan, "unord") == 0)
		return 1;
	return -1;
}

static void
op_chan_set(void *arg, const char *chan, uint64_t id)
{
	struct node *n = arg;
	int i = chan_idx(chan);

	if (i < 0)
		fail("node %u: unknown channel '%s'", n->id, chan);
	if (id > disk_end(&n->d) + 1)
		fail("node %u: channel %s set to %" PRIu64 " beyond its data end %" PRIu64,
		     n->id, chan, id, disk_end(&n->d));
	trace("node %u channel %s -> %" PRIu64, n->id, chan, id);
	n->chanpos[i] = id;
}

static void
op_chan_done(void *arg, uint64_t token, int err, uint64_t prev)
{
	struct node *n = arg;

	if (token == 0)
		return;		/* unordered */
	if (!cons.inflight || token != cons.token || n->id != cons.node)
		return;
	trace("node %u chan done token %" PRIu64 ": %s", n->id, token,
	      err ? sl_strerror(err) : "ok");
	if (err) {
		if (cons.inflight == 1 && n->chanpos[0] == cons.id + 1)
			n->chanpos[0] = prev;
		else if (cons.inflight == 2 && n->chanpos[0] == cons.id)
			n->chanpos[0] = prev;
	} else {
		cons.confirmed = cons.inflight == 1 ? cons.id + 1 : cons.id;
		cons.nallowed = 0;
		cons.overflow = 0;
	}
	cons.inflight = 0;
}

static int
op_msg_ids(void *arg, const void *msgs, uint32_t size, uint64_t *first, uint64_t *last,
	   uint32_t *num)
{
	const uint8_t *p = msgs;

	if (size == 0 || size % MSGREC)
		return -EINVAL;
	*num = size / MSGREC;
	memcpy(first, p, 8);
	memcpy(last, p + size - MSGREC, 8);
	return 0;
}

static int
op_chan_get(void *arg, uint32_t idx, char name[SL_REPL_CHAN_NAME_MAX + 1], uint64_t *id)
{
	struct node *n = arg;

	if (idx > 1)
		return -ENOENT;
	strcpy(name, idx ? "unord" : "ord");
	*id = n->chanpos[idx];
	return 0;
}

static const struct sl_repl_ops ops = {
	.send = op_send,
	.append = op_append,
	.truncate = op_truncate,
	.read = op_read,
	.last = op_last,
	.epoch_end = op_epoch_end,
	.isr_leave = op_isr_leave,
	.isr_join = op_isr_join,
	.committed = op_committed,
	.rolled_back = op_rolled_back,
	.chan_set = op_chan_set,
	.chan_done = op_chan_done,
	.msg_ids = op_msg_ids,
	.chan_get = op_chan_get,
	.first = op_first,
	.reset = op_reset,
};

/* ---- nodes ---- */
static void
node_open(struct node *n)
{
	struct sl_repl_conf conf;

	memset(&conf, 0, sizeof(conf));
	conf.node_id = n->id;
	conf.partition = 0;
	conf.topic_hash = sl_repl_topic_hash("sim", 3);
	conf.retransmit_ns = 2 * MS;
	conf.lag_timeout_ns = 40 * MS;
	conf.isr_lag_ns = 40 * MS;
	conf.catchup_pause_ns = 10 * MS;
	conf.join_lag = 16;
	conf.max_dgram = sim_maxd;
	struct sl_repl_ops *o = malloc(sizeof(*o));

	*o = ops;
	o->arg = n;
	conf.ops = o;
	n->r = sl_repl_open(&conf);
	if (!n->r)
		abort();
	n->commit_seen = 0;
	n->cok_upto = 0;
	n->npend = 0;
	n->alive = 1;
	n->inc++;
	free(o);	/* sl_repl_open copied the ops */
	at(now + sim_rndn(MS), EV_POLL, n->id, 0, n->inc);
}

/* the counters of an incarnation, before it goes */
static void
node_stats_add(const struct node *n)
{
	struct sl_repl_stats st;

	sl_repl_get_stats(n->r, &st);
	tot.st_resets += st.resets;
	tot.st_too_old += st.fetch_too_old;
}

/* retention: node n removes a prefix of its log, whole records that this incarnation
 * reported committed (and so checked against the committed log), durable ones (only
 * sealed, synced segments go), never its last record. Durable at once: the base is on
 * disk and survives crashes. Half the time everything it may remove, so a lagging or
 * restarted replica may find the leader's log starting after its end. */
static void
node_retain(struct node *n)
{
	uint32_t max = n->cok_upto, k;
	uint64_t old = n->d.base;

	if (max > n->d.synced)
		max = n->d.synced;
	if (n->d.n == 0)
		return;
	if (max > n->d.n - 1)
		max = n->d.n - 1;
	if (max == 0)
		return;
	k = chance(5000) ? max : 1 + (uint32_t)sim_rndn(max);
	disk_drop_front(&n->d, k);
	n->tbase += k;
	n->cok_upto -= k;
	n->ok_upto = n->ok_upto > k ? n->ok_upto - k : 0;
	if (n->tbase != truth_after(n, n->d.base, "retention base"))
		fail("node %u: retention to %" PRIu64 " lost track of the committed log",
		     n->id, n->d.base);
	tot.retains++;
	tot.retained += k;
	trace("RETAIN node %u removes %u records: base %" PRIu64 " -> %" PRIu64 " (end %"
	      PRIu64 ", committed %" PRIu64 ")", n->id, k, old, n->d.base, disk_end(&n->d),
	      n->commit_seen);
}

static void
node_crash(struct node *n)
{
	uint32_t i, best = UINT32_MAX;
	uint64_t best_end = 0;
	int was_leader = ctl.v.leader == n->id;

	tot.crashes++;
	n->alive = 0;
	node_stats_add(n);
	sl_repl_close(n->r);
	n->r = NULL;
	n->npend = 0;	/* its clients time out */
	trace("CRASH node %u (log %u records, %u synced)", n->id, n->d.n, n->d.synced);
	if (n->d.synced < n->d.n)
		trace("node %u loses %u unsynced records%s", n->id, n->d.n - n->d.synced,
		      sim_rndn(2) ? ", recovery cuts a torn record" : "");
	disk_cut(&n->d, n->d.synced);
	n->ok_upto = 0;
	ctl_isr_remove(n->id);
	if (was_leader) {
		for (i = 0; i < ctl.v.nisr; i++) {
			struct node *c = &nodes[ctl.v.isr[i]];
			uint64_t e = disk_end(&c->d);

			if (best == UINT32_MAX || e > best_end) {
				best = c->id;
				best_end = e;
			}
		}
		if (best == UINT32_MAX)
			fail("no live ISR member to elect");
		ctl.v.leader = best;
		ctl.v.epoch++;
		ctl.v.leader_session = sim_rnd() | 1;
		tot.elections++;
		ctl_publish("leader crashed: election");
	} else {
		ctl_publish("node crashed");
	}
	at(now + 5 * MS + sim_rndn(60 * MS), EV_RESTART, n->id, 0, 0);
}

/* may node n crash now? never the last live ISR member */
static int
may_crash(const struct node *n)
{
	uint32_t i, live = 0;

	if (!n->alive)
		return 0;
	for (i = 0; i < ctl.v.nisr; i++)
		if (ctl.v.isr[i] != n->id && nodes[ctl.v.isr[i]].alive)
			live++;
	return live >= 1;
}

/* ---- clients ---- */
static void
client_send(uint32_t ci)
{
	struct client *c = &clients[ci];
	struct ev e;

	c->attempt++;
	c->deadline = now + 60 * MS;
	memset(&e, 0, sizeof(e));
	e.t = now + net_delay();
	e.type = EV_PUB;
	e.a = ci;
	e.b = c->attempt;
	e.inc = ctl.v.leader;	/* the client's lookup */
	if (!chance(p_drop))
		push(e);
	at(c->deadline, EV_CLIENT, ci, c->attempt, 0);
}

static void
client_new(uint32_t ci)
{
	struct client *c = &clients[ci];
	uint32_t k;

	c->nm = chance(5000) ? 1 : 2 + sim_rndn(3);
	for (k = 0; k < c->nm; k++)
		c->payload[k] = payload_of(ci, ++c->msgno);
	c->waiting = 1;
	c->attempt = 0;
	client_send(ci);
}

static void
node_pub(struct node *n, uint32_t ci, uint32_t attempt)
{
	struct client *c = &clients[ci];
	uint8_t msgs[4 * MSGREC], *p = msgs;
	struct sl_crec rc;
	uint64_t end = disk_end(&n->d);
	uint32_t k;
	int err;

	err = sl_repl_can_write(n->r);
	if (err || n->npend == MAXPEND) {
		answer(ci, attempt, err ? err : -SL_E_FULL);
		return;
	}
	for (k = 0; k < c->nm; k++, p += MSGREC) {
		uint64_t id = end + 1 + k;
		uint32_t len = PAYLOAD;
		uint64_t chk = c->payload[k] * 0x9e3779b97f4a7c15ull;

		memcpy(p, &id, 8);
		memcpy(p + 8, &len, 4);
		memcpy(p + 12, &c->payload[k], 8);
		memcpy(p + 20, &chk, 8);
	}
	memset(&rc, 0, sizeof(rc));
	rc.log_id = end + 1;
	rc.epoch = sl_repl_epoch(n->r);
	rc.last_msg_log_id = end + c->nm;
	rc.msg_offset = disk_bytes(&n->d);
	rc.msg_cnt = rc.last_msg_log_id;
	rc.timestamp_ns = now;
	rc.msg_size = c->nm * MSGREC;
	rc.msg_num = c->nm;
	disk_push(&n->d, &rc, msgs);
	if (chance(p_sync))
		n->d.synced = n->d.n;
	n->pend[n->npend].client = ci;
	n->pend[n->npend].attempt = attempt;
	n->pend[n->npend].first = rc.log_id;
	n->pend[n->npend].last = rc.last_msg_log_id;
	n->npend++;
	trace("node %u writes %" PRIu64 "-%" PRIu64 " epoch %#" PRIx64 " for client %u/%u",
	      n->id, rc.log_id, rc.last_msg_log_id, rc.epoch, ci, attempt);
	err = sl_repl_write(n->r, &rc, msgs, now);
	if (err) {
		uint32_t j;

		for (j = 0; j < n->npend; j++)
			if (n->pend[j].client == (int)ci && n->pend[j].attempt == attempt)
				n->pend[j] = n->pend[--n->npend];
		node_cut(n, end);
		answer(ci, attempt, err);
	}
}

static void
client_answer(uint32_t ci, uint32_t attempt, int err)
{
	struct client *c = &clients[ci];
	uint32_t k;

	if (!c->waiting || attempt != c->attempt)
		return;
	if (err) {
		trace("client %u attempt %u: %s", ci, attempt, sl_strerror(err));
		c->deadline = now + 2 * MS + sim_rndn(3 * MS);
		at(c->deadline, EV_CLIENT, ci, c->attempt, 0);
		return;
	}
	/* (c) acknowledged: its payloads are committed */
	for (k = 0; k < c->nm; k++) {
		uint32_t i;
		int found = 0;

		for (i = truth.n; i-- > 0 && !found; ) {
			const struct rec *r = &truth.r[i];
			const uint8_t *p = r->msgs;
			uint32_t j;

			for (j = 0; j < r->c.msg_num; j++, p += MSGREC) {
				uint64_t pl;

				memcpy(&pl, p + 12, 8);
				if (pl == c->payload[k])
					found = 1;
			}
		}
		if (!found)
			fail("(c) client %u acknowledged payload %#" PRIx64 " not committed", ci,
			     c->payload[k]);
	}
	tot.acked += c->nm;
	c->acked += c->nm;
	c->waiting = 0;
	trace("client %u acked after %u attempts", ci, attempt);
	at(now + 100 * US + sim_rndn(2 * MS), EV_CLIENT, ci, 0, 0);
}

static void
client_tick(uint32_t ci, uint32_t attempt)
{
	struct client *c = &clients[ci];

	if (!c->waiting) {
		if (attempt == 0)
			client_new(ci);
		return;
	}
	if (attempt == c->attempt && now >= c->deadline)
		client_send(ci);	/* timeout or error: retry, same payloads */
}

/* ---- the ordered channel's consumer ---- */
/* (d): the leader's position of the ordered channel comes from the last acknowledged FIN
 * or SET_OFFSET (confirmed), or from one not acknowledged yet that may have reached some
 * replicas (a maybe-position, cleared by the next acknowledgement). Anything else (a
 * skip, a step behind a confirmed FIN) is a violation. */
static int
allowed(uint64_t id)
{
	uint32_t i;

	if (id == cons.confirmed || cons.overflow)
		return 1;
	for (i = 0; i < cons.nallowed; i++)
		if (cons.allowed[i] == id)
			return 1;
	return 0;
}

static void
allow(uint64_t id)
{
	if (cons.nallowed < 256)
		cons.allowed[cons.nallowed++] = id;
	else
		cons.overflow = 1;
}

static void
consumer_tick(void)
{
	struct node *n = &nodes[ctl.v.leader];
	uint64_t pos, commit;
	int rc;

	at(now + 300 * US + sim_rndn(MS), EV_CONSUMER, 0, 0, 0);
	if (cons.inflight) {
		if (now < cons.deadline && nodes[cons.node].alive &&
		    nodes[cons.node].inc == cons.inc)
			return;
		trace("consumer gives up on token %" PRIu64, cons.token);
		cons.inflight = 0;
	}
	if (!n->alive || sl_repl_can_write(n->r) == -SL_E_NOT_LEADER)
		return;
	commit = sl_repl_committed(n->r);
	pos = n->chanpos[0];
	if (chance(300) && commit) {
		uint64_t p = 1 + sim_rndn(commit + 1), old = pos;

		cons.token = tok_next();
		cons.inflight = 2;
		cons.node = n->id;
		cons.inc = n->inc;
		cons.id = p;
		cons.deadline = now + 200 * MS;
		n->chanpos[0] = p;
		tot.setoffsets++;
		trace("consumer SET_OFFSET %" PRIu64 " on node %u (was %" PRIu64 ")", p, n->id,
		      old);
		rc = sl_repl_chan_sync(n->r, "ord", p, old, 1, 1, cons.token, now);
		if (rc) {
			n->chanpos[0] = old;
			cons.inflight = 0;
		} else {
			allow(p);
		}
		return;
	}
	if (pos > commit)
		return;
	if (!allowed(pos))
		fail("(d) ordered consumer got id %" PRIu64 " after %" PRIu64 " (confirmed "
		     "position %" PRIu64 ", %u maybe-positions) from node %u", pos, cons.last,
		     cons.confirmed, cons.nallowed, n->id);
	if (pos > disk_end(&truth))
		fail("(d) consumer got id %" PRIu64 " that is not committed", pos);
	cons.last = pos;
	cons.delivered++;
	tot.delivered++;
	cons.token = tok_next();
	cons.inflight = 1;
	cons.node = n->id;
	cons.inc = n->inc;
	cons.id = pos;
	cons.deadline = now + 200 * MS;
	n->chanpos[0] = pos + 1;
	trace("consumer gets %" PRIu64 " from node %u, FIN", pos, n->id);
	rc = sl_repl_chan_sync(n->r, "ord", pos + 1, pos, 1, 0, cons.token, now);
	if (rc) {
		n->chanpos[0] = pos;
		cons.inflight = 0;
	} else {
		allow(pos + 1);
	}
	if (pos + 1 > n->chanpos[1]) {
		n->chanpos[1] = pos + 1;
		sl_repl_chan_sync(n->r, "unord", pos + 1, pos, 0, 0, 0, now);
	}
}

/* ---- invariants after every step ---- */
static void
check_isr(void)
{
	uint32_t i;

	for (i = 0; i < ctl.v.nisr; i++) {
		struct node *n = &nodes[ctl.v.isr[i]];

		if (!n->alive)
			fail("(a) crashed node %u in the ISR", n->id);
		if (n->ok_upto > n->d.n)
			n->ok_upto = n->d.n;
		/* from its base on (what is before is committed and gone) */
		for (; n->tbase + n->ok_upto < truth.n; n->ok_upto++) {
			const struct rec *t = &truth.r[n->tbase + n->ok_upto];

			if (n->ok_upto >= n->d.n)
				fail("(a) ISR member %u lacks committed record %" PRIu64
				     " (its base %" PRIu64 ", end %" PRIu64 ")", n->id, t->c.log_id,
				     n->d.base, disk_end(&n->d));
			if (!rec_eq(&n->d.r[n->ok_upto], t))
				fail("(a) ISR member %u has another record at %" PRIu64
				     " than the committed one", n->id, t->c.log_id);
		}
	}
}

/* ---- the run ---- */
static const char *
dg_name(const uint8_t *p, uint32_t len)
{
	static const char *names[] = { "?", "WRITE", "WRITE_ACK", "HEARTBEAT", "CHAN_SYNC",
		"CHAN_ACK", "CATCHUP_REQ", "CATCHUP_RESP", "FETCH", "FETCH_RESP", "JOIN_REQ" };

	return len > 4 && p[4] < 11 ? names[p[4]] : "?";
}

/* --verbose: the status and the leading u64 fields of a catch-up datagram's body */
static const char *
dg_detail(const uint8_t *p, uint32_t len)
{
	static char buf[160];
	uint32_t k, o;

	buf[0] = 0;
	if (len < 40 || p[4] < 6 || p[4] > 9)
		return buf;
	o = (uint32_t)snprintf(buf, sizeof(buf), " st %u flags %u:", p[5], p[6]);
	for (k = 0; k < 6 && 40 + 8 * k + 8 <= len && o < sizeof(buf); k++) {
		uint64_t v;

		memcpy(&v, p + 40 + 8 * k, 8);
		o += (uint32_t)snprintf(buf + o, sizeof(buf) - o, " %#" PRIx64, v);
	}
	return buf;
}

static void
reset(void)
{
	uint32_t i;

	for (i = 0; i < q.n; i++)
		free(q.h[i].data);
	q.n = 0;
	q.seq = 0;
	for (i = 0; i < MAXN; i++) {
		if (nodes[i].r)
			sl_repl_close(nodes[i].r);
		disk_cut(&nodes[i].d, 0);
		free(nodes[i].d.r);
		memset(&nodes[i], 0, sizeof(nodes[i]));
	}
	disk_cut(&truth, 0);
	free(truth.r);
	memset(&truth, 0, sizeof(truth));
	memset(clients, 0, sizeof(clients));
	memset(&cons, 0, sizeof(cons));
	memset(&ctl, 0, sizeof(ctl));
	memset(&tot, 0, sizeof(tot));
	tok = 0;
}

static int
run(uint64_t seed, uint64_t steps)
{
	uint32_t i;

	reset();
	seed_now = seed;
	sim_maxd = (seed & 1) ? 1400 : SL_REPL_MAX_DGRAM;
	sim_seed(seed);
	now = 0;
	nn = 3 + sim_rndn(3);
	p_drop = sim_rndn(800);		/* up to 8 % */
	p_dup = sim_rndn(300);
	p_crash = 200 + sim_rndn(1500);	/* per fault tick (5 ms) */
	p_sync = 1000 + sim_rndn(6000);
	p_isolate = sim_rndn(400);
	d_min = 20 * US;
	d_span = 50 * US + sim_rndn(2 * MS);
	p_retain = sim_rndn(4) ? 100 + sim_rndn(900) : 0;	/* per node per fault tick */
	trace("seed %" PRIu64 ": %u nodes, drop %u/10000, dup %u/10000, delay %" PRIu64
	      "-%" PRIu64 " us, crash %u/10000 per 5 ms, sync %u/10000, retention %u/10000 "
	      "per node per 5 ms", seed, nn, p_drop, p_dup, d_min / US, (d_min + d_span) / US,
	      p_crash, p_sync, p_retain);
	ctl.v.leader = sim_rndn(nn);
	ctl.v.epoch = 1;
	ctl.v.leader_session = sim_rnd() | 1;
	ctl.v.nreplicas = nn;
	ctl.v.nisr = nn;
	for (i = 0; i < nn; i++) {
		ctl.v.replicas[i] = i;
		ctl.v.isr[i] = i;
		nodes[i].id = i;
		nodes[i].chanpos[0] = 1;
		nodes[i].chanpos[1] = 1;
		node_open(&nodes[i]);
	}
	ctl_publish("initial");
	for (i = 0; i < NCLIENTS; i++)
		at(MS + sim_rndn(MS), EV_CLIENT, i, 0, 0);
	cons.last = 0;
	cons.confirmed = 1;
	at(2 * MS, EV_CONSUMER, 0, 0, 0);
	at(5 * MS, EV_FAULT, 0, 0, 0);
	for (step_now = 0; step_now < steps && q.n; step_now++) {
		struct ev e = pop();
		struct node *n = e.a < MAXN ? &nodes[e.a] : NULL;

		now = e.t;
		switch (e.type) {
		case EV_DGRAM:
			n = &nodes[e.b];
			if (n->alive && n->isolated_until <= now) {
				if (verbose)
					trace("%u -> %u %s (%u bytes)%s", e.a, e.b,
					      dg_name(e.data, e.len), e.len,
					      dg_detail(e.data, e.len));
				dgram_from = e.a;
				sl_repl_input(n->r, e.a, e.data, e.len, now);
				dgram_from = UINT32_MAX;
			}
			break;
		case EV_POLL:
			if (n->alive && n->inc == e.inc) {
				sl_repl_poll(n->r, now);
				at(now + MS, EV_POLL, e.a, 0, e.inc);
			}
			break;
		case EV_VIEW:
			if (n->alive && n->inc == e.inc) {
				struct sl_repl_view *v = e.data;

				trace("node %u installs view v%" PRIu64, e.a, v->version);
				sl_repl_set_view(n->r, v, now);
			}
			break;
		case EV_RESTART:
			trace("RESTART node %u (log end %" PRIu64 ")", e.a, disk_end(&n->d));
			node_open(n);
			sl_repl_set_view(n->r, &ctl.v, now);
			n->last_view_t = now;
			break;
		case EV_CLIENT:
			client_tick(e.a, e.b);
			break;
		case EV_PUB:
			n = &nodes[e.inc];
			if (n->alive)
				node_pub(n, e.a, e.b);
			break;
		case EV_ANS:
			client_answer(e.a, e.b, e.err);
			break;
		case EV_CONSUMER:
			consumer_tick();
			break;
		case EV_FAULT:
			at(now + 5 * MS, EV_FAULT, 0, 0, 0);
			for (i = 0; i < nn; i++)
				if (nodes[i].alive && chance(3000))
					nodes[i].d.synced = nodes[i].d.n;
			for (i = 0; i < nn; i++)
				if (nodes[i].alive && chance(p_retain))
					node_retain(&nodes[i]);
			if (chance(p_crash)) {
				struct node *v = &nodes[sim_rndn(nn)];

				if (may_crash(v))
					node_crash(v);
			}
			if (chance(p_isolate)) {
				struct node *v = &nodes[sim_rndn(nn)];

				v->isolated_until = now + 10 * MS + sim_rndn(150 * MS);
				trace("ISOLATE node %u until %" PRIu64 " ms", v->id,
				      v->isolated_until / MS);
			}
			break;
		}
		free(e.data);
		check_isr();
	}
	for (i = 0; i < nn; i++)
		if (nodes[i].alive)
			node_stats_add(&nodes[i]);
	if (tot.st_resets < tot.resets)
		fail("the stats count %" PRIu64 " resets, the logs were reset %" PRIu64 " times",
		     tot.st_resets, tot.resets);
	if (verbose || getenv("REPL_SIM_STATS"))
		printf("seed %" PRIu64 ": %u nodes, %" PRIu64 " steps, t=%" PRIu64 " ms, "
		       "committed %" PRIu64 " records (end %" PRIu64 "), acked %" PRIu64
		       " msgs, delivered %" PRIu64 ", crashes %" PRIu64 ", elections %" PRIu64
		       ", rollbacks %" PRIu64 ", leaves %" PRIu64 ", joins %" PRIu64
		       ", set_offsets %" PRIu64 ", datagrams %" PRIu64 ", retention %" PRIu64
		       " (%" PRIu64 " records), resets %" PRIu64 " (%" PRIu64 " reset answers),"
		       " fetch_too_old %" PRIu64 ", truncations below a base %" PRIu64 "\n",
		       seed, nn, step_now, now / MS, tot.commits, disk_end(&truth), tot.acked,
		       tot.delivered, tot.crashes, tot.elections, tot.rollbacks, tot.leaves,
		       tot.joins, tot.setoffsets, tot.dgrams, tot.retains, tot.retained,
		       tot.resets, tot.st_resets - tot.resets, tot.st_too_old, tot.below_base);
	return 0;
}

int
main(int argc, char **argv)
{
	struct sim_opts o = {.length = 20000};
	uint64_t a, b, steps, sum_commits = 0, sum_acked = 0;
	uint64_t sum_retains = 0, sum_resets = 0, reset_seeds = 0;

	if (sim_opts_parse(argc, argv, "--steps", &o) != 0)
		return 2;
	a = o.first;
	b = o.last;
	steps = o.length;
	verbose = o.verbose;
	for (uint64_t s = a; s <= b; s++) {
		run(s, steps);
		sum_commits += tot.commits;
		sum_acked += tot.acked;
		sum_retains += tot.retains;
		sum_resets += tot.resets;
		reset_seeds += tot.resets > 0;
	}
	reset();
	free(q.h);
	printf("repl_sim: seeds %" PRIu64 "-%" PRIu64 " passed (%" PRIu64 " steps each at "
	       "most; %" PRIu64 " records committed, %" PRIu64 " messages acknowledged, %"
	       PRIu64 " retentions, %" PRIu64 " log resets in %" PRIu64 " seeds)\n", a, b,
	       steps, sum_commits, sum_acked, sum_retains, sum_resets, reset_seeds);
	return 0;
}
