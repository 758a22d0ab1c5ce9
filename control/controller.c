/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * controller: the cluster controller's state machine over a store (controller.h,
 * docs/cluster.md "The controller"). Election, placement, the failover choice, the
 * silent-leader suspicion and the scan, deciding from what the store's keys say and
 * writing through the store's transactions, batched; no etcd call and no clock here.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include <rte_common.h>
#include <rte_errno.h>
#include <rte_log.h>

#include "controller.h"
#include "membership.h"
#include "ptable.h"

RTE_LOG_REGISTER_SUFFIX(sl_controller_logtype, controller, INFO);
#define CLOG(level, fmt, ...) \
	rte_log(RTE_LOG_##level, sl_controller_logtype, "controller: " fmt "\n", ##__VA_ARGS__)

struct cnode {
	uint32_t id;
	uint8_t live;			/* nodes/<id> is there */
	uint8_t read;			/* ... in the full read under way */
	uint8_t pos_read;		/* pos/<id> too */
	char *pos_raw;			/* pos/<id> as last put (NULL: none) */
	size_t pos_len;
	json_t *pos;			/* ... parsed when first looked up (most never are) */
	uint64_t pos_seen_ms;		/* its last pos/<id> put arrived */
};

struct ctopic {
	char name[SL_COORD_NAME_MAX + 1];
	uint16_t nparts;
	uint8_t replicas;
};

struct cpart {
	char topic[SL_COORD_NAME_MAX + 1];
	uint16_t part;
	int64_t mod_rev;		/* of the partition key: the CAS compares it */
	uint64_t since_ms;		/* its leader (as the store holds it) was first seen */
	uint32_t wait_epoch;		/* "no live ISR member" said for this epoch (0: not) */
	struct sl_part_meta meta;	/* as the store holds it */
};

/* One view to write: an existing partition (idx) or a new one (idx SIZE_MAX). */
struct decision {
	size_t idx;
	char topic[SL_COORD_NAME_MAX + 1];
	uint16_t part;
	uint8_t silent;			/* a failover for a silent leader */
	int64_t rev;			/* the partition key's mod_revision compared (0: new) */
	struct sl_part_meta next;
};

struct sl_controller {
	uint32_t self;
	const struct sl_controller_store *store;
	void *arg;
	int64_t lease;			/* 0: none (or fenced) */
	uint32_t ctl_id;		/* the controller key's id (0: none known) */
	int acting;			/* this node holds the controller key under its lease */
	int64_t ctl_rev;		/* create_revision of that key (0: not ours) */
	int lost_election;		/* the key was there: wait for its deletion */
	int due;			/* scan at the next tick */
	int reading;			/* a full read is under way */
	uint64_t next_scan_ms;
	uint64_t event_ms;		/* the last watch event arrived */
	uint64_t flow_ms;		/* since then, no gap of 2 BEAT_MS between events */
	struct cnode nodes[SL_CONTROLLER_MAX_NODES];
	uint32_t nnodes;
	struct sl_ptable topics;		/* struct ctopic */
	struct sl_ptable parts;		/* struct cpart */
	struct decision *dec;		/* this tick's decisions */
	size_t ndec, cdec;
	struct sl_controller_stats st;
};

/* ---- tables ---- */

static struct cnode *
node_get(struct sl_controller *c, uint32_t id, int add)
{
	uint32_t i;

	for (i = 0; i < c->nnodes; i++)
		if (c->nodes[i].id == id)
			return &c->nodes[i];
	if (!add || c->nnodes == SL_CONTROLLER_MAX_NODES)
		return NULL;
	memset(&c->nodes[c->nnodes], 0, sizeof(c->nodes[0]));
	c->nodes[c->nnodes].id = id;
	return &c->nodes[c->nnodes++];
}

static int
node_live(struct sl_controller *c, uint32_t id)
{
	const struct cnode *n = node_get(c, id, 0);

	return n != NULL && n->live;
}

static uint32_t
id_of(const char *s)
{
	char *end;
	unsigned long v = strtoul(s, &end, 10);

	return *s != '\0' && *end == '\0' && v > 0 && v <= UINT32_MAX ? (uint32_t)v : 0;
}

/* ---- what the store says ---- */

static void
on_node(struct sl_controller *c, const char *rest, int del)
{
	uint32_t id = id_of(rest);
	struct cnode *n = id != 0 ? node_get(c, id, !del) : NULL;

	if (n != NULL && c->reading)
		n->read = 1;
	if (n == NULL || n->live == !del)
		return;
	n->live = !del;
	c->due = 1;
}

/* This node begins to act as the controller: it says so, scans at once, and says again
 * which partitions wait for an ISR member. */
static void
acting_begins(struct sl_controller *c, uint64_t now)
{
	size_t i;

	CLOG(NOTICE, "this node (%u) is the controller", c->self);
	c->due = 1;
	c->flow_ms = now;
	for (i = 0; i < c->parts.n; i++)
		((struct cpart *)sl_ptable_at(&c->parts, i))->wait_epoch = 0;
}

static void
on_controller(struct sl_controller *c, const struct sl_controller_kv *kv, int del,
	      uint64_t now)
{
	json_int_t id = 0;
	json_t *j;

	if (del) {
		if (c->ctl_id != 0)
			CLOG(NOTICE, "controller %u gone", c->ctl_id);
		c->lost_election = 0;
		c->ctl_id = 0;
		c->acting = 0;
		c->ctl_rev = 0;
		return;
	}
	j = json_loadb(kv->value, kv->value_len, 0, NULL);
	if (j != NULL && json_unpack(j, "{s:I}", "id", &id) == 0 && id > 0 && id <= UINT32_MAX) {
		int was = c->acting;

		c->ctl_id = (uint32_t)id;
		c->acting = id == c->self && c->lease != 0 && kv->lease == c->lease;
		c->ctl_rev = c->acting ? kv->create_rev : 0;
		if (c->acting && !was)
			acting_begins(c, now);
	}
	json_decref(j);
}

static void
on_topic(struct sl_controller *c, const char *name, const struct sl_controller_kv *kv,
	 int del)
{
	json_int_t parts = 0, reps = 0;
	struct ctopic *t;
	json_t *j;

	if (del) {
		sl_ptable_remove(&c->topics, name, 0);
		return;
	}
	j = json_loadb(kv->value, kv->value_len, 0, NULL);
	if (j == NULL || json_unpack(j, "{s:I, s:I}", "partitions", &parts, "replicas",
				     &reps) != 0 || parts <= 0 || parts > SL_COORD_MAX_PARTS ||
	    reps <= 0 || reps > SL_COORD_MAX_REPLICAS || strlen(name) > SL_COORD_NAME_MAX) {
		json_decref(j);
		return;
	}
	json_decref(j);
	t = sl_ptable_add(&c->topics, name, 0);
	if (t == NULL)
		return;
	t->nparts = (uint16_t)parts;
	t->replicas = (uint8_t)reps;
	c->due = 1;
}

static void
on_part(struct sl_controller *c, const char *rest, const struct sl_controller_kv *kv, int del,
	uint64_t now)
{
	char topic[SL_COORD_NAME_MAX + 1];
	struct sl_part_meta meta;
	struct cpart *p;
	uint16_t part;

	if (sl_ptable_key_parse(rest, topic, &part) != 0)
		return;
	if (del) {
		sl_ptable_remove(&c->parts, topic, part);
		return;
	}
	if (sl_membership_view_parse(kv->value, kv->value_len, &meta) != 0)
		return;
	p = sl_ptable_add(&c->parts, topic, part);
	if (p == NULL || (p->mod_rev != 0 && kv->mod_rev < p->mod_rev))
		return;		/* older than what we wrote or read since */
	if (p->since_ms == 0 || p->meta.leader != meta.leader || p->meta.epoch != meta.epoch)
		p->since_ms = now;
	p->mod_rev = kv->mod_rev;
	p->meta = meta;
}

static void
on_pos(struct sl_controller *c, const char *rest, const struct sl_controller_kv *kv, int del,
       uint64_t now)
{
	uint32_t id = id_of(rest);
	struct cnode *n = id != 0 ? node_get(c, id, 0) : NULL;

	if (n == NULL)
		return;
	if (c->reading)
		n->pos_read = 1;
	json_decref(n->pos);
	n->pos = NULL;
	free(n->pos_raw);
	n->pos_raw = NULL;
	if (del)
		return;
	/* a beat: kept as it came, parsed only for a decision */
	n->pos_raw = malloc(kv->value_len + 1);
	if (n->pos_raw == NULL)
		return;
	memcpy(n->pos_raw, kv->value, kv->value_len);
	n->pos_raw[kv->value_len] = '\0';
	n->pos_len = kv->value_len;
	n->pos_seen_ms = now;
}

void
sl_controller_apply(struct sl_controller *c, const struct sl_controller_kv *kv, int del,
		    uint64_t now_ms)
{
	const char *k = kv->key;

	if (strncmp(k, "nodes/", 6) == 0)
		on_node(c, k + 6, del);
	else if (strcmp(k, "controller") == 0)
		on_controller(c, kv, del, now_ms);
	else if (strncmp(k, "topics/", 7) == 0)
		on_topic(c, k + 7, kv, del);
	else if (strncmp(k, "partitions/", 11) == 0)
		on_part(c, k + 11, kv, del, now_ms);
	else if (strncmp(k, "pos/", 4) == 0)
		on_pos(c, k + 4, kv, del, now_ms);
}

void
sl_controller_watch_event(struct sl_controller *c, uint64_t now_ms)
{
	if (now_ms > c->event_ms + 2 * SL_CONTROLLER_BEAT_MS)
		c->flow_ms = now_ms;	/* a gap: the flow starts again */
	c->event_ms = now_ms;
}

void
sl_controller_set_lease(struct sl_controller *c, int64_t lease)
{
	if (lease == c->lease)
		return;
	if (c->acting)
		CLOG(NOTICE, "node %u stops acting as controller (%s)", c->self,
		     lease == 0 ? "it cannot prove its lease" : "a new lease");
	c->lease = lease;
	c->acting = 0;
	c->ctl_rev = 0;
}

void
sl_controller_read_begin(struct sl_controller *c)
{
	uint32_t i;

	for (i = 0; i < c->nnodes; i++)
		c->nodes[i].read = c->nodes[i].pos_read = 0;
	c->reading = 1;
}

void
sl_controller_read_end(struct sl_controller *c)
{
	uint32_t i;

	for (i = 0; i < c->nnodes; i++) {
		struct cnode *n = &c->nodes[i];

		if (n->live && !n->read) {
			n->live = 0;
			c->due = 1;
		}
		if (n->pos_raw != NULL && !n->pos_read) {
			json_decref(n->pos);	/* gone with its lease meanwhile */
			n->pos = NULL;
			free(n->pos_raw);
			n->pos_raw = NULL;
		}
	}
	c->reading = 0;
}

void
sl_controller_forget(struct sl_controller *c)
{
	c->lost_election = 0;
	c->ctl_id = 0;
	c->acting = 0;
	c->ctl_rev = 0;
}

uint32_t
sl_controller_id(const struct sl_controller *c)
{
	return c->ctl_id;
}

int
sl_controller_acting(const struct sl_controller *c)
{
	return c->acting;
}

void
sl_controller_get_stats(const struct sl_controller *c, struct sl_controller_stats *st)
{
	size_t i;

	*st = c->st;
	st->waiting = 0;
	for (i = 0; c->acting && i < c->parts.n; i++)
		st->waiting += ((const struct cpart *)sl_ptable_at(&c->parts, i))->wait_epoch != 0;
}

/* ---- deciding ---- */

/* What node holds of topic/part: 1 with *committed, *end from its pos/<id> key, or 0. */
static int
pos_lookup(struct sl_controller *c, uint32_t node, const char *topic, uint16_t part,
	   uint64_t *committed, uint64_t *end)
{
	struct cnode *n = node_get(c, node, 0);
	char k[SL_COORD_NAME_MAX + 8];
	json_t *a;

	if (n == NULL || n->pos_raw == NULL)
		return 0;
	if (n->pos == NULL) {
		n->pos = json_loadb(n->pos_raw, n->pos_len, 0, NULL);
		if (!json_is_object(n->pos)) {
			json_decref(n->pos);
			n->pos = NULL;
			free(n->pos_raw);	/* not a position object: unknown */
			n->pos_raw = NULL;
			return 0;
		}
	}
	snprintf(k, sizeof(k), "%s/%u", topic, part);
	a = json_object_get(n->pos, k);
	if (!json_is_array(a) || json_array_size(a) != 2)
		return 0;
	*committed = (uint64_t)json_integer_value(json_array_get(a, 0));
	*end = (uint64_t)json_integer_value(json_array_get(a, 1));
	return 1;
}

/* The fast path to a dead leader: a leader writes pos/<id> every BEAT_MS; one whose last
 * write is older than SUSPECT_MS (a new leader: twice that from its leadership) while the
 * watch has been flowing without a gap (other nodes' writes, the controller's own beat: the
 * store is fine, it is the leader that is silent) for SUSPECT_MS / 2 is failed over without
 * waiting for its lease to end. A wrong suspicion costs a leader change, not data: the old
 * leader cannot commit past the new epoch (every ISR member must acknowledge). */
static int
suspect(struct sl_controller *c, const struct cpart *p, uint64_t now)
{
	const struct cnode *n = node_get(c, p->meta.leader, 0);
	uint64_t last;

	if (n == NULL || !n->live || p->meta.leader == c->self)
		return 0;
	last = RTE_MAX(n->pos_seen_ms, p->since_ms + SL_CONTROLLER_SUSPECT_MS);
	return now > last + SL_CONTROLLER_SUSPECT_MS &&
	       now <= c->event_ms + 2 * SL_CONTROLLER_BEAT_MS &&
	       now >= c->flow_ms + SL_CONTROLLER_SUSPECT_MS / 2;
}

static struct decision *
decide(struct sl_controller *c)
{
	struct decision *d;

	if (c->ndec == c->cdec) {
		size_t n = c->cdec != 0 ? c->cdec * 2 : 64;

		d = realloc(c->dec, n * sizeof(*d));
		if (d == NULL)
			return NULL;
		c->dec = d;
		c->cdec = n;
	}
	d = &c->dec[c->ndec++];
	memset(d, 0, sizeof(*d));
	return d;
}

static int
cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* The partitions of topic t that the store does not hold: sl_membership_place over the
 * live nodes' ids, ascending (leaders spread evenly). */
static void
place(struct sl_controller *c, const struct ctopic *t)
{
	uint32_t live[SL_CONTROLLER_MAX_NODES], n = 0, i;
	struct sl_part_meta meta;
	struct decision *d;
	uint16_t part;

	for (i = 0; i < c->nnodes; i++)
		if (c->nodes[i].live)
			live[n++] = c->nodes[i].id;
	qsort(live, n, sizeof(live[0]), cmp_u32);
	for (part = 0; part < t->nparts; part++) {
		if (sl_ptable_find(&c->parts, t->name, part) != NULL)
			continue;
		if (sl_membership_place(live, n, part, t->replicas, &meta) != 0) {
			CLOG(WARNING, "topic %s: %u replicas wanted, %u nodes live: waiting",
			     t->name, t->replicas, n);
			return;
		}
		d = decide(c);
		if (d == NULL)
			return;
		d->idx = SIZE_MAX;
		snprintf(d->topic, sizeof(d->topic), "%s", t->name);
		d->part = part;
		d->next = meta;
	}
}

/* The partition no longer waits for a live ISR member: said once, as its start was. */
static void
wait_end(struct cpart *p, const char *why)
{
	if (p->wait_epoch == 0)
		return;
	CLOG(NOTICE, "%s/%u: %s: no longer waiting for a live ISR member", p->topic, p->part,
	     why);
	p->wait_epoch = 0;
}

/* Partition idx's leader is gone (looked at on a full scan) or silent (always): the live
 * ISR member with the longest log (sl_membership_failover_next) leads, with the next epoch
 * and leader session. A partition with no live ISR member waits for one: said when that
 * begins and when it ends, not at every scan. */
static void
failover(struct sl_controller *c, size_t idx, int full, uint64_t now)
{
	struct cpart *p = sl_ptable_at(&c->parts, idx);
	struct sl_membership_pos pos[SL_COORD_MAX_REPLICAS];
	uint32_t gone = p->meta.leader;
	struct sl_part_meta next;
	struct decision *d;
	int silent = 0, rc;
	uint8_t i;

	if (p->wait_epoch != 0 && p->wait_epoch != p->meta.epoch)
		wait_end(p, "a new view");
	if (node_live(c, gone)) {
		if (!suspect(c, p, now)) {
			wait_end(p, "its leader is back");
			return;
		}
		silent = 1;
	} else if (!full) {
		return;
	}
	memset(pos, 0, sizeof(pos));
	for (i = 0; i < p->meta.nisr; i++) {
		pos[i].live = node_live(c, p->meta.isr[i]) && p->meta.isr[i] != gone;
		pos[i].avoid = p->meta.isr[i] == c->self;	/* the controller: last */
		pos[i].known = pos_lookup(c, p->meta.isr[i], p->topic, p->part,
					  &pos[i].committed, &pos[i].end);
	}
	rc = sl_membership_failover_next(&p->meta, pos, &next);
	if (rc < 0) {
		if (p->wait_epoch == 0)
			CLOG(ERR, "%s/%u: leader %u gone and no live ISR member: the partition "
				  "waits for one", p->topic, p->part, gone);
		p->wait_epoch = p->meta.epoch;
		return;
	}
	wait_end(p, "an ISR member is live");
	/* a suspicion that leaves the partition unwritable changes nothing: the lease
	 * decides */
	if (rc == 0 || (silent && next.nisr <= next.nreplicas / 2))
		return;
	d = decide(c);
	if (d == NULL)
		return;
	d->idx = idx;
	snprintf(d->topic, sizeof(d->topic), "%s", p->topic);
	d->part = p->part;
	d->silent = (uint8_t)silent;
	d->rev = p->mod_rev;
	d->next = next;
}

static void
key_part(char *k, const char *topic, uint16_t part)
{
	snprintf(k, SL_CONTROLLER_KEY_MAX, "partitions/%s/%u", topic, part);
}

/* A decision written at revision rev: into the table, said. */
static void
written(struct sl_controller *c, const struct decision *d, int64_t rev, uint64_t now)
{
	struct cpart *p = d->idx != SIZE_MAX ? sl_ptable_at(&c->parts, d->idx) :
			  sl_ptable_add(&c->parts, d->topic, d->part);
	struct sl_part_meta old;
	uint64_t ce = 0, e = 0;
	int known;

	if (p == NULL)
		return;
	old = p->meta;
	p->mod_rev = rev;
	p->since_ms = now;
	p->meta = d->next;
	if (d->idx == SIZE_MAX) {
		c->st.placed++;
		CLOG(NOTICE, "%s/%u placed: leader %u, %u replicas", d->topic, d->part,
		     d->next.leader, d->next.nreplicas);
		return;
	}
	c->st.failovers++;
	c->st.suspects += d->silent;
	known = pos_lookup(c, d->next.leader, p->topic, p->part, &ce, &e);
	CLOG(NOTICE, "%s/%u: leader %u %s: node %u leads (log end %llu, committed %llu%s), "
		     "epoch %u, ISR of %u", p->topic, p->part, old.leader,
	     d->silent ? "silent for " RTE_STR(SL_CONTROLLER_SUSPECT_MS) " ms" : "gone",
	     d->next.leader, (unsigned long long)e, (unsigned long long)ce,
	     known ? "" : ": positions unknown", d->next.epoch, d->next.nisr);
}

/* Write dec[from..to) as one transaction: 1 written, 0 a compare failed, or a negative
 * errno. */
static int
write_chunk(struct sl_controller *c, size_t from, size_t to, uint64_t now)
{
	struct sl_controller_cmp cmp[SL_CONTROLLER_TXN_KEYS + 1];
	struct sl_controller_put put[SL_CONTROLLER_TXN_KEYS] = {{0}};
	char keys[SL_CONTROLLER_TXN_KEYS][SL_CONTROLLER_KEY_MAX];
	char *vals[SL_CONTROLLER_TXN_KEYS];
	size_t i, n = to - from;
	int64_t rev = 0;
	int rc = 0;

	if (n == 0 || n > SL_CONTROLLER_TXN_KEYS)
		return -EINVAL;
	memset(vals, 0, sizeof(vals));
	for (i = 0; i < n; i++) {
		const struct decision *d = &c->dec[from + i];

		key_part(keys[i], d->topic, d->part);
		vals[i] = sl_membership_view_json(&d->next);
		if (vals[i] == NULL) {
			rc = -ENOMEM;
			goto out;
		}
		cmp[i] = (struct sl_controller_cmp){
			.key = keys[i],
			.target = d->rev != 0 ? SL_CONTROLLER_CMP_MOD : SL_CONTROLLER_CMP_CREATE,
			.rev = d->rev,
		};
		put[i] = (struct sl_controller_put){.key = keys[i], .value = vals[i],
						    .value_len = strlen(vals[i])};
	}
	/* fencing: only while the controller key is the one this node's election created */
	cmp[n] = (struct sl_controller_cmp){.key = "controller",
					    .target = SL_CONTROLLER_CMP_CREATE,
					    .rev = c->ctl_rev};
	c->st.txns++;
	rc = c->store->txn(c->arg, cmp, n + 1, put, n, &rev);
	if (rc == 1)
		for (i = 0; i < n; i++)
			written(c, &c->dec[from + i], rev, now);
	else if (rc == 0)
		c->st.cas_lost++;
out:
	for (i = 0; i < n; i++)
		free(vals[i]);
	return rc;
}

struct reread {
	struct sl_controller *c;
	uint64_t now;
	int ctl_seen;
};

static void
reread_kv(void *arg, const struct sl_controller_kv *kv)
{
	struct reread *r = arg;

	if (strcmp(kv->key, "controller") == 0)
		r->ctl_seen = 1;
	sl_controller_apply(r->c, kv, 0, r->now);
}

/* After a lost transaction: is this node still the controller (its key as it created it),
 * and the lost partitions as the store holds them now. 0, or a negative errno, or
 * -EPERM when deposed. */
static int
reread(struct sl_controller *c, const size_t *lost, size_t nlost, uint64_t now)
{
	struct reread r = {.c = c, .now = now};
	char key[SL_CONTROLLER_KEY_MAX];
	int64_t rev = c->ctl_rev;
	size_t i, j;
	int rc;

	c->st.reads++;
	rc = c->store->read(c->arg, "controller", 0, reread_kv, &r);
	if (rc != 0)
		return rc;
	if (!r.ctl_seen || !c->acting || c->ctl_rev != rev) {
		CLOG(WARNING, "node %u is no longer the controller: its writes stop", c->self);
		c->acting = 0;
		c->ctl_rev = 0;
		return -EPERM;
	}
	/* the lost chunks' topics, each once */
	for (i = 0; i < nlost; i++) {
		const char *t = c->dec[lost[i]].topic;

		for (j = 0; j < i; j++)
			if (strcmp(c->dec[lost[j]].topic, t) == 0)
				break;
		if (j < i)
			continue;
		snprintf(key, sizeof(key), "partitions/%s/", t);
		c->st.reads++;
		rc = c->store->read(c->arg, key, 1, reread_kv, &r);
		if (rc != 0)
			return rc;
	}
	return 0;
}

/* Decide (placement on a full scan; failovers: dead leaders on a full scan, silent ones
 * always) and write in chunks; a chunk that lost a compare: read again, decide again. */
static int
scan(struct sl_controller *c, int full, uint64_t now)
{
	size_t *lost = NULL, nlost, nviews, i, from;
	int attempt, rc = 0, total = 0;

	for (attempt = 0; attempt <= SL_CONTROLLER_RETRIES && c->acting; attempt++) {
		c->ndec = 0;
		for (i = 0; full && i < c->topics.n; i++)
			place(c, sl_ptable_at(&c->topics, i));
		for (i = 0; i < c->parts.n; i++)
			failover(c, i, full, now);
		if (c->ndec == 0)
			break;
		free(lost);
		lost = malloc(c->ndec * sizeof(*lost));
		if (lost == NULL)
			return -ENOMEM;
		nlost = nviews = 0;
		for (from = 0; from < c->ndec; from += SL_CONTROLLER_TXN_KEYS) {
			size_t to = RTE_MIN(from + SL_CONTROLLER_TXN_KEYS, c->ndec);

			rc = write_chunk(c, from, to, now);
			if (rc < 0)
				goto out;
			if (rc == 1) {
				total += (int)(to - from);
				continue;
			}
			/* lost: its topics are read again (a decision per new topic) */
			nviews += to - from;
			for (i = from; i < to; i++)
				if (i == from || strcmp(c->dec[i].topic, c->dec[i - 1].topic) != 0)
					lost[nlost++] = i;
		}
		if (nlost == 0)
			break;
		if (attempt == SL_CONTROLLER_RETRIES) {
			CLOG(WARNING, "%zu partition view(s) lost their compare %d times: again "
				      "at the next scan", nviews, attempt + 1);
			break;
		}
		rc = reread(c, lost, nlost, now);
		if (rc < 0)
			goto out;
	}
	rc = 0;
out:
	free(lost);
	return rc < 0 && rc != -EPERM ? rc : total;
}

/* Run for controller: txn(create_revision(controller) == 0) put controller under the
 * lease. */
static int
elect(struct sl_controller *c, uint64_t now)
{
	char val[48];
	struct sl_controller_cmp absent = {.key = "controller",
					   .target = SL_CONTROLLER_CMP_CREATE};
	struct sl_controller_put put = {.key = "controller", .value = val, .lease = c->lease};
	int64_t rev = 0;
	int rc;

	put.value_len = (size_t)snprintf(val, sizeof(val), "{\"id\":%u}", c->self);
	c->st.txns++;
	rc = c->store->txn(c->arg, &absent, 1, &put, 1, &rev);
	if (rc == 1) {
		c->ctl_id = c->self;
		c->acting = 1;
		c->ctl_rev = rev;	/* the txn's one put: the key's create_revision */
		c->st.elections++;
		acting_begins(c, now);
	} else if (rc < 0) {
		CLOG(WARNING, "election: %s", strerror(-rc));
	} else {
		/* another node holds it; the watch says which: not again before the key
		 * is seen deleted */
		c->lost_election = 1;
	}
	return rc;
}

int
sl_controller_tick(struct sl_controller *c, uint64_t now_ms, int able)
{
	int full;

	if (!able || c->lease == 0)
		return 0;
	if (c->ctl_id == 0 && !c->lost_election && elect(c, now_ms) < 0)
		return 0;
	if (!c->acting)
		return 0;
	full = c->due || now_ms >= c->next_scan_ms;
	if (full) {
		c->due = 0;
		c->next_scan_ms = now_ms + SL_CONTROLLER_SCAN_MS;
	}
	return scan(c, full, now_ms);
}

struct sl_controller *
sl_controller_open(const struct sl_controller_conf *conf)
{
	struct sl_controller *c;

	if (conf == NULL || conf->node_id == 0 || conf->store == NULL ||
	    conf->store->txn == NULL || conf->store->read == NULL) {
		rte_errno = EINVAL;
		return NULL;
	}
	c = calloc(1, sizeof(*c));
	if (c == NULL) {
		rte_errno = ENOMEM;
		return NULL;
	}
	c->self = conf->node_id;
	c->topics = SL_PTABLE_INIT_NAMES(struct ctopic, name);
	c->parts = SL_PTABLE_INIT(struct cpart, topic, part);
	c->store = conf->store;
	c->arg = conf->store_arg;
	return c;
}

void
sl_controller_close(struct sl_controller *c)
{
	uint32_t i;

	if (c == NULL)
		return;
	for (i = 0; i < c->nnodes; i++) {
		json_decref(c->nodes[i].pos);
		free(c->nodes[i].pos_raw);
	}
	sl_ptable_free(&c->topics);
	sl_ptable_free(&c->parts);
	free(c->dec);
	free(c);
}
