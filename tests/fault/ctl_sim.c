/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * ctl_sim: deterministic simulator of the cluster controller (control/controller.c, linked
 * as is) over a fake etcd. 3 to 5 nodes (chosen by the seed), each running the real
 * sl_controller behind a small model of membership_etcd's glue (lease keep-alive every
 * TTL/3, fencing at 2/3 of the TTL without a renewal, registration, a full read at start
 * and after a fence, the watch, positions published every 150 ms and beats every 200 ms),
 * against an in-memory store with etcd's semantics: one revision counter, create and mod
 * revisions per key, leases that expire on simulated time and delete their keys in one
 * revision, transactions whose compares all hold or nothing is written, a watch per node
 * that delivers every event in revision order (etcd never reorders one watch) after a
 * delay of its own (0 to 600 ms: watchers see changes at different times).
 *
 * Faults, from the seed: nodes SIGKILLed (restarted 0.3-3 s later: a new controller
 * object, a new lease once the old node key has gone), stopped cleanly (lease revoked),
 * cut off from the store for 0.1-3 s (calls fail, the watch stalls: the lease may expire),
 * transactions refused (-EIO, nothing written), answers lost after the write (the caller
 * sees -ENOTCONN), and transactions held in the network for up to 3 s and applied then
 * (the caller timed out: a deposed controller's write arriving late). Topics created at
 * the start and during the run. Leaders change their ISR now and then (a member leaves, a
 * caught-up replica joins: a write without the controller's compare, as ms_request's),
 * racing the controller's batches (their compares lose: the controller reads again and
 * decides again). Each node's log end per partition grows while its leader is up
 * (followers at most the leader's); positions go to pos/<id>.
 *
 * Invariants, checked on every transaction and after every step (1 ms):
 *  (1) a partition view is only ever written by the node holding the controller key,
 *      under the lease it held when it sent the write (a deposed controller's writes fail);
 *  (2) a partition's epoch and leader session never go back, and a leader change raises
 *      both;
 *  (3) a new leader is a member of the old ISR, live as far as the writer had read (its
 *      node key there at the revision the writer had seen), the new ISR is within the old;
 *  (4) the new leader's log is the longest among the live old ISR members, by the
 *      positions the writer had seen (pos/<id> at the revision it had read up to);
 *  (5) a placement spreads leaders evenly: consecutive partitions of a topic written in one
 *      transaction have min(k, live nodes) distinct leaders, counts within one of each
 *      other, every leader live;
 *  (6) after the faults stop (the dead stay dead) and the cluster runs quietly for 6 s: a
 *      live controller, every topic placed when enough nodes are up, no partition led by
 *      a dead node while a member of its ISR is live;
 *  (7) store-level sanity of the fake itself (revisions only grow);
 *  (8) the controller says that a partition waits for a live ISR member once when the wait
 *      begins and once when it ends (its log, read through a stream of our own), not at
 *      every scan; its `waiting` counter is the number of partitions it said wait.
 *
 *   ctl_sim [--seed N | --seeds A-B] [--verbose] [--ms T]
 *
 * The only source of randomness is the seed (splitmix64): the same seed gives the same
 * run. The first violation prints the seed and what went wrong, and exits 1.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_common.h>
#include <rte_log.h>

#include "controller.h"
#include "membership.h"
#include "sim_common.h"

#define MAXN 5
#define MAXKV 256
#define MAXT 4
#define MAXP 48
#define TTL_MS 2000
#define KEYLEN 96

static uint64_t seed_now, now, step_ms;
static int verbose;

/* ---- PRNG (sim_common.h) ---- */

/* probability in 1/100000 */
static int
chance(uint32_t p)
{
	return sim_rndn(100000) < p;
}

static void
trace(const char *fmt, ...)
{
	va_list ap;

	if (!verbose)
		return;
	printf("%6" PRIu64 "ms ", now);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

static void __attribute__((noreturn))
fail(const char *fmt, ...)
{
	va_list ap;

	printf("VIOLATION seed=%" PRIu64 " t=%" PRIu64 "ms: ", seed_now, now);
	va_start(ap, fmt);
	sim_vfail("ctl_sim", seed_now, fmt, ap);
}

/* ---- the store ---- */
struct skv {
	char key[KEYLEN];
	char *val;
	size_t len;
	int64_t create, mod, lease;
	int view;			/* a partition key whose value parsed: meta */
	struct sl_part_meta meta;
	uint32_t t, p;			/* ... of topic index t, partition p */
};

struct sev {
	int del;
	struct skv kv;
};

struct slease {
	int64_t id;
	uint64_t expires;
	int live;
};

/* a node key's lifetimes, for "live at revision R" */
struct life {
	int64_t from, to;	/* [from, to): to 0 while it lives */
};

/* a transaction held in the network */
struct held {
	uint32_t node;
	int64_t lease;		/* the writer's lease when it sent it */
	uint64_t at;
	size_t ncmp, nput;
	struct sl_controller_cmp cmp[SL_CONTROLLER_TXN_KEYS + 1];
	struct sl_controller_put put[SL_CONTROLLER_TXN_KEYS];
};

static struct skv kvs[MAXKV];
static size_t nkv;
static int64_t rev;
static struct sev *evs;
static size_t nev, cev;
static struct slease leases[256];
static size_t nleases;
static struct life lives[MAXN + 1][128];
static size_t nlives[MAXN + 1];
static struct held *helds[16];
static size_t nheld;

/* fault rates, per mille per event (from the seed) */
static uint32_t p_kill, p_cut, p_refuse, p_lost, p_hold, p_stop;
static int quiet;		/* faults off (the final phase) */

static int part_index(const char *key, uint32_t *t, uint32_t *p);

static struct skv *
kv_get(const char *key)
{
	size_t i;

	for (i = 0; i < nkv; i++)
		if (strcmp(kvs[i].key, key) == 0)
			return &kvs[i];
	return NULL;
}

static void
ev_push(int del, const struct skv *kv)
{
	struct sev *e;

	if (nev == cev) {
		cev = cev ? cev * 2 : 1024;
		evs = realloc(evs, cev * sizeof(*evs));
		if (evs == NULL)
			abort();
	}
	e = &evs[nev++];
	e->del = del;
	e->kv = *kv;
	e->kv.val = malloc(kv->len + 1);
	memcpy(e->kv.val, kv->val, kv->len);
	e->kv.val[kv->len] = '\0';
}

static void
node_key_life(const char *key, int del)
{
	uint32_t id;

	if (strncmp(key, "nodes/", 6) != 0)
		return;
	id = (uint32_t)atoi(key + 6);
	if (id == 0 || id > MAXN)
		return;
	if (del) {
		lives[id][nlives[id] - 1].to = rev;
		return;
	}
	if (nlives[id] > 0 && lives[id][nlives[id] - 1].to == 0)
		return;		/* a put over a live key */
	if (nlives[id] == 128)
		abort();
	lives[id][nlives[id]++] = (struct life){.from = rev};
}

/* node id's key was there at revision r */
static int
live_at(uint32_t id, int64_t r)
{
	size_t i;

	for (i = 0; id <= MAXN && i < nlives[id]; i++)
		if (lives[id][i].from <= r && (lives[id][i].to == 0 || lives[id][i].to > r))
			return 1;
	return 0;
}

/* put at the current revision */
static void
kv_put(const char *key, const char *val, size_t len, int64_t lease)
{
	struct skv *k = kv_get(key);

	if (k == NULL) {
		if (nkv == MAXKV)
			abort();
		k = &kvs[nkv++];
		memset(k, 0, sizeof(*k));
		snprintf(k->key, sizeof(k->key), "%s", key);
		k->create = rev;
		node_key_life(key, 0);
	}
	free(k->val);
	k->val = malloc(len + 1);
	memcpy(k->val, val, len);
	k->val[len] = '\0';
	k->len = len;
	k->mod = rev;
	k->lease = lease;
	k->view = part_index(key, &k->t, &k->p) == 0 &&
		  sl_membership_view_parse(val, len, &k->meta) == 0;
	ev_push(0, k);
}

static void
kv_del(struct skv *k)
{
	struct skv d = *k;

	d.mod = rev;
	d.len = 0;
	d.val = (char *)"";
	ev_push(1, &d);
	node_key_life(k->key, 1);
	free(k->val);
	*k = kvs[--nkv];
}

static struct slease *
lease_get(int64_t id)
{
	size_t i;

	for (i = 0; i < nleases; i++)
		if (leases[i].id == id)
			return &leases[i];
	return NULL;
}

static int64_t
lease_grant(void)
{
	struct slease *l = &leases[nleases++];

	if (nleases > 256)
		abort();
	l->id = (int64_t)(1000 + nleases);
	l->expires = now + TTL_MS;
	l->live = 1;
	return l->id;
}

/* the lease ends: every key under it goes, in one revision */
static void
lease_end(struct slease *l)
{
	size_t i;

	l->live = 0;
	rev++;
	for (i = nkv; i-- > 0;)
		if (kvs[i].lease == l->id)
			kv_del(&kvs[i]);
}

static int
cmps_hold(const struct sl_controller_cmp *cmp, size_t ncmp)
{
	size_t i;

	for (i = 0; i < ncmp; i++) {
		const struct skv *k = kv_get(cmp[i].key);
		int64_t have = k == NULL ? 0 :
			       cmp[i].target == SL_CONTROLLER_CMP_CREATE ? k->create : k->mod;

		if (have != cmp[i].rev)
			return 0;
	}
	return 1;
}

/* ---- simulated nodes ---- */
struct snode {
	uint32_t id;
	int up;				/* the process runs */
	struct sl_controller *c;
	int64_t lease;
	uint64_t renewed;		/* the last renewal that succeeded was sent */
	uint64_t next_ka, next_poll, next_pos, pos_put;
	int fenced;
	int registered;
	uint64_t cut_until;		/* cut off from the store */
	uint64_t restart_at;
	size_t wcur;			/* next event for its watch */
	uint64_t wdue, wlast;		/* when event wcur arrives; the last arrival */
	int64_t seen;			/* the highest revision it read or was delivered */
	char *pos_last;
	uint64_t end[MAXT * MAXP];	/* log end per partition */
	uint8_t waits[MAXT * MAXP];	/* (8): its controller said partition waits */
};

static struct snode nodes[MAXN + 1];
static uint32_t nn;

struct stopic {
	char name[16];
	uint16_t nparts;
	uint8_t replicas;
};

static struct stopic topics[MAXT];
static uint32_t ntopics;

static struct {
	uint64_t txns, writes, lost, refused, held, kills, cuts, stops, failovers, placed;
	uint64_t elections, isr, cas_lost, reads;
} sims;

static void
ctl_close(struct sl_controller *c)
{
	struct sl_controller_stats st;

	if (c == NULL)
		return;
	sl_controller_get_stats(c, &st);
	sims.cas_lost += st.cas_lost;
	sims.reads += st.reads;
	sl_controller_close(c);
}

static int
reachable(const struct snode *n)
{
	return now >= n->cut_until;
}

static void
view_of(const struct skv *k, struct sl_part_meta *m)
{
	if (!k->view)
		fail("%s: the store holds a view that does not parse: %s", k->key, k->val);
	*m = k->meta;
}

static int
in_ids(const uint32_t *ids, uint8_t n, uint32_t id)
{
	uint8_t i;

	for (i = 0; i < n; i++)
		if (ids[i] == id)
			return 1;
	return 0;
}

/* a partition key's topic index and partition, or -1 */
static int
part_index(const char *key, uint32_t *t, uint32_t *p)
{
	char name[16];
	uint32_t i;

	if (sscanf(key, "partitions/%15[^/]/%u", name, p) != 2)
		return -1;
	for (i = 0; i < ntopics; i++)
		if (strcmp(topics[i].name, name) == 0) {
			*t = i;
			return *p < MAXP ? 0 : -1;
		}
	return -1;
}

/* ---- (8): the controller's log, read line by line ---- */
static struct snode *log_node;	/* the node whose controller ticks (NULL: none) */
static char log_line[512];
static size_t log_len;

static void
log_waits(const char *line)
{
	struct snode *n = log_node;
	uint32_t t, p, k;
	char key[48];

	/* a new term (an election, or its key seen again under its lease) says them again */
	if (sscanf(line, "controller: this node (%u) is the controller", &k) == 1 &&
	    k >= 1 && k <= MAXN) {
		memset(nodes[k].waits, 0, sizeof(nodes[k].waits));
		return;
	}
	if (n == NULL)
		return;
	if (sscanf(line, "controller: t%u/%u: ", &t, &p) != 2)
		return;
	snprintf(key, sizeof(key), "partitions/t%u/%u", t, p);
	if (part_index(key, &t, &p) != 0)
		fail("node %u's controller logs an unknown partition: %s", n->id, line);
	k = t * MAXP + p;
	if (strstr(line, "no live ISR member") != NULL) {
		if (n->waits[k])
			fail("node %u's controller says t%u/%u waits for an ISR member again, "
			     "with no end said between (%s)", n->id, t, p, line);
		n->waits[k] = 1;
	} else if (strstr(line, "no longer waiting") != NULL) {
		if (!n->waits[k])
			fail("node %u's controller ends a wait of t%u/%u it did not say began",
			     n->id, t, p);
		n->waits[k] = 0;
	}
}

static ssize_t
log_write(void *cookie, const char *buf, size_t size)
{
	size_t i;

	(void)cookie;
	if (verbose)
		fprintf(stderr, "[n%u] %.*s", log_node ? log_node->id : 0, (int)size, buf);
	for (i = 0; i < size; i++) {
		if (buf[i] != '\n') {
			if (log_len < sizeof(log_line) - 1)
				log_line[log_len++] = buf[i];
			continue;
		}
		log_line[log_len] = '\0';
		log_len = 0;
		log_waits(log_line);
	}
	return (ssize_t)size;
}

/* node id's position for partition (t, p) as its pos key held it at revision r (the
 * event log has every version): 1 with *end, or 0 */
static int
pos_at(uint32_t id, uint32_t t, uint32_t p, int64_t r, uint64_t *end)
{
	char key[32], pk[32];
	unsigned long long c, e;
	const char *s;
	size_t i;

	snprintf(key, sizeof(key), "pos/%u", id);
	for (i = nev; i-- > 0;) {
		if (evs[i].kv.mod > r || strcmp(evs[i].kv.key, key) != 0)
			continue;
		if (evs[i].del)
			return 0;
		snprintf(pk, sizeof(pk), "\"%s/%u\":[", topics[t].name, p);
		s = strstr(evs[i].kv.val, pk);
		if (s == NULL || sscanf(s + strlen(pk), "%llu,%llu", &c, &e) != 2)
			return 0;
		*end = e;
		return 1;
	}
	return 0;
}

/* Invariants (3), (4), (5) on what node w sends, against the store as it is now (the
 * compares hold: the writer's view of these partitions is the store's). */
static void
check_send(const struct snode *w, const struct sl_controller_put *put, size_t nput)
{
	size_t i;
	uint32_t t, p;

	for (i = 0; i < nput; i++) {
		const struct skv *k = kv_get(put[i].key);
		struct sl_part_meta old, nw;
		uint64_t best = 0, e;
		uint8_t j;
		int known;

		if (part_index(put[i].key, &t, &p) != 0)
			continue;
		if (sl_membership_view_parse(put[i].value, put[i].value_len, &nw) != 0)
			fail("node %u writes a view that does not parse: %.*s", w->id,
			     (int)put[i].value_len, put[i].value);
		if (k == NULL)
			continue;
		view_of(k, &old);
		if (old.leader == nw.leader)
			continue;
		/* (3) */
		if (!in_ids(old.isr, old.nisr, nw.leader))
			fail("%s: new leader %u not in the old ISR", put[i].key, nw.leader);
		for (j = 0; j < nw.nisr; j++)
			if (!in_ids(old.isr, old.nisr, nw.isr[j]))
				fail("%s: new ISR member %u not in the old ISR", put[i].key,
				     nw.isr[j]);
		if (!live_at(nw.leader, w->seen))
			fail("%s: new leader %u was not live at revision %" PRId64
			     " (what node %u had read)", put[i].key, nw.leader, w->seen, w->id);
		/* (4): what the writer had seen, every event up to w->seen */
		known = pos_at(nw.leader, t, p, w->seen, &best);
		for (j = 0; j < old.nisr; j++) {
			uint32_t m = old.isr[j];

			if (m == old.leader || m == nw.leader || !live_at(m, w->seen) ||
			    !pos_at(m, t, p, w->seen, &e))
				continue;
			if (!known || e > best)
				fail("%s: node %u leads with log end %" PRIu64 "%s, but ISR member "
				     "%u had %" PRIu64 " (seen by the controller %u)", put[i].key,
				     nw.leader, best, known ? "" : " (unknown)", m, e, w->id);
		}
	}
	/* (5) placement: the partitions this txn creates, per topic, if consecutive */
	for (t = 0; t < ntopics; t++) {
		uint32_t cnt[MAXN + 1] = {0}, first = UINT32_MAX, last = 0, k = 0, nlive = 0;
		uint32_t distinct = 0, mx = 0, mn = UINT32_MAX, id;

		for (i = 0; i < nput; i++) {
			struct sl_part_meta nw;
			uint32_t tt;

			if (part_index(put[i].key, &tt, &p) != 0 || tt != t ||
			    kv_get(put[i].key) != NULL)
				continue;
			if (sl_membership_view_parse(put[i].value, put[i].value_len, &nw) != 0)
				continue;
			if (!live_at(nw.leader, w->seen))
				fail("%s placed on node %u, not live at %" PRId64 " (seen by %u)",
				     put[i].key, nw.leader, w->seen, w->id);
			cnt[nw.leader]++;
			first = p < first ? p : first;
			last = p > last ? p : last;
			k++;
		}
		if (k == 0 || last - first + 1 != k)
			continue;
		for (id = 1; id <= nn; id++) {
			nlive += live_at(id, w->seen);
			if (cnt[id] == 0)
				continue;
			distinct++;
			mx = cnt[id] > mx ? cnt[id] : mx;
			mn = cnt[id] < mn ? cnt[id] : mn;
		}
		if (distinct != (k < nlive ? k : nlive) || mx > mn + 1)
			fail("topic %s: %u partitions placed with leaders on %u of %u live nodes, "
			     "%u to %u each", topics[t].name, k, distinct, nlive, mn, mx);
	}
}

/* Apply a transaction whose compares hold: invariants (1), (2), then the puts. */
static void
apply_txn(uint32_t writer, int64_t wlease, const struct sl_controller_put *put, size_t nput,
	  int isr)
{
	const struct skv *ck = kv_get("controller");
	size_t i;

	rev++;
	for (i = 0; i < nput; i++) {
		const struct skv *k = kv_get(put[i].key);
		struct sl_part_meta old, nw;
		uint32_t t, p;

		if (part_index(put[i].key, &t, &p) == 0) {
			char want[32];

			/* (1) */
			snprintf(want, sizeof(want), "{\"id\":%u}", writer);
			if (!isr && (ck == NULL || strcmp(ck->val, want) != 0 ||
				     ck->lease != wlease))
				fail("%s written by node %u (lease %" PRId64 ") while the "
				     "controller key is %s (lease %" PRId64 ")", put[i].key,
				     writer, wlease, ck ? ck->val : "absent",
				     ck ? ck->lease : 0);
			if (sl_membership_view_parse(put[i].value, put[i].value_len, &nw) != 0)
				fail("bad view");
			if (isr && (k == NULL || !k->view || k->meta.leader != writer ||
				    nw.leader != writer || nw.epoch != k->meta.epoch))
				fail("%s: an ISR change by node %u that is not its leader",
				     put[i].key, writer);
			if (k != NULL) {
				view_of(k, &old);
				/* (2) */
				if (nw.epoch < old.epoch ||
				    nw.leader_session < old.leader_session ||
				    (nw.leader != old.leader && (nw.epoch <= old.epoch ||
				     nw.leader_session <= old.leader_session)))
					fail("%s: epoch %u session %" PRIu64 " after epoch %u "
					     "session %" PRIu64 " (leader %u -> %u)", put[i].key,
					     nw.epoch, nw.leader_session, old.epoch,
					     old.leader_session, old.leader, nw.leader);
				if (nw.leader != old.leader)
					sims.failovers++;
				trace("node %u writes %s: leader %u -> %u epoch %u", writer,
				      put[i].key, old.leader, nw.leader, nw.epoch);
			} else {
				sims.placed++;
				trace("node %u places %s: leader %u", writer, put[i].key,
				      nw.leader);
			}
		}
		if (put[i].lease != 0 && (lease_get(put[i].lease) == NULL ||
					  !lease_get(put[i].lease)->live))
			fail("fake store: a put under a dead lease got through");
		kv_put(put[i].key, put[i].value, put[i].value_len, put[i].lease);
		if (strcmp(put[i].key, "controller") == 0) {
			sims.elections++;
			trace("node %u is the controller (rev %" PRId64 ")", writer, rev);
		}
	}
	sims.writes++;
}

static int
puts_leases_live(const struct sl_controller_put *put, size_t nput)
{
	size_t i;

	for (i = 0; i < nput; i++)
		if (put[i].lease != 0 &&
		    (lease_get(put[i].lease) == NULL || !lease_get(put[i].lease)->live))
			return 0;
	return 1;
}

static int
st_txn(void *arg, const struct sl_controller_cmp *cmp, size_t ncmp,
       const struct sl_controller_put *put, size_t nput, int64_t *r)
{
	struct snode *n = arg;
	int lost = 0;
	size_t i;

	sims.txns++;
	if (ncmp > SL_CONTROLLER_TXN_KEYS + 1 || nput > SL_CONTROLLER_TXN_KEYS)
		fail("a txn of %zu compares and %zu puts: etcd refuses more than 128", ncmp,
		     nput);
	if (!n->up)
		fail("node %u calls the store while down", n->id);
	if (!reachable(n))
		return -ENOTCONN;
	if (!quiet && chance(p_refuse)) {
		sims.refused++;
		return -EIO;
	}
	if (!quiet && nheld < 16 && chance(p_hold)) {
		/* held in the network: the caller times out, the store sees it later */
		struct held *h = calloc(1, sizeof(*h));

		h->node = n->id;
		h->lease = n->lease;
		h->at = now + 100 + sim_rndn(3000);
		h->ncmp = ncmp;
		h->nput = nput;
		for (i = 0; i < ncmp; i++) {
			h->cmp[i] = cmp[i];
			h->cmp[i].key = strdup(cmp[i].key);
		}
		for (i = 0; i < nput; i++) {
			h->put[i] = put[i];
			h->put[i].key = strdup(put[i].key);
			h->put[i].value = strndup(put[i].value, put[i].value_len);
		}
		helds[nheld++] = h;
		sims.held++;
		trace("node %u: a txn of %zu puts held until %" PRIu64, n->id, nput, h->at);
		return -ENOTCONN;
	}
	if (!puts_leases_live(put, nput))
		return -ENOENT;
	if (!cmps_hold(cmp, ncmp))
		return 0;
	check_send(n, put, nput);
	if (!quiet && chance(p_lost)) {
		lost = 1;
		sims.lost++;
	}
	apply_txn(n->id, n->lease, put, nput, 0);
	if (lost)
		return -ENOTCONN;
	*r = rev;
	return 1;
}

static int
key_cmp(const void *a, const void *b)
{
	return strcmp(((const struct skv *)a)->key, ((const struct skv *)b)->key);
}

static int
st_read(void *arg, const char *key, int prefix, sl_controller_kv_fn fn, void *fn_arg)
{
	struct snode *n = arg;
	size_t i, kl = strlen(key);

	if (!reachable(n))
		return -ENOTCONN;
	qsort(kvs, nkv, sizeof(kvs[0]), key_cmp);
	for (i = 0; i < nkv; i++)
		if (prefix ? strncmp(kvs[i].key, key, kl) == 0 : strcmp(kvs[i].key, key) == 0) {
			struct sl_controller_kv kv = {.key = kvs[i].key, .value = kvs[i].val,
						      .value_len = kvs[i].len,
						      .create_rev = kvs[i].create,
						      .mod_rev = kvs[i].mod,
						      .lease = kvs[i].lease};

			fn(fn_arg, &kv);
		}
	return 0;
}

static const struct sl_controller_store store = {.txn = st_txn, .read = st_read};

/* the held transactions that are due reach the store */
static void
held_due(void)
{
	size_t i, k;

	for (i = 0; i < nheld;) {
		struct held *h = helds[i];

		if (h->at > now) {
			i++;
			continue;
		}
		if (puts_leases_live(h->put, h->nput) && cmps_hold(h->cmp, h->ncmp)) {
			trace("node %u: a held txn of %zu puts applies", h->node, h->nput);
			apply_txn(h->node, h->lease, h->put, h->nput, 0);
		} else {
			trace("node %u: a held txn of %zu puts fails its compares", h->node,
			      h->nput);
		}
		for (k = 0; k < h->ncmp; k++)
			free((char *)(uintptr_t)h->cmp[k].key);
		for (k = 0; k < h->nput; k++) {
			free((char *)(uintptr_t)h->put[k].key);
			free((char *)(uintptr_t)h->put[k].value);
		}
		free(h);
		helds[i] = helds[--nheld];
	}
}

/* ---- the glue (membership_etcd.c's part, modelled) ---- */

static void
feed(struct snode *n, const struct skv *k, int del)
{
	struct sl_controller_kv kv = {.key = k->key, .value = k->val, .value_len = k->len,
				      .create_rev = k->create, .mod_rev = k->mod,
				      .lease = k->lease};

	sl_controller_apply(n->c, &kv, del, now);
}

/* read everything (nodes, controller, topics, partitions, pos: in that order) and watch
 * from the next revision */
static int
resync(struct snode *n)
{
	static const char *const order[] = {"nodes/", "controller", "topics/", "partitions/",
					    "pos/"};
	size_t i, o;

	if (!reachable(n))
		return -ENOTCONN;
	qsort(kvs, nkv, sizeof(kvs[0]), key_cmp);
	sl_controller_read_begin(n->c);
	for (o = 0; o < 5; o++)
		for (i = 0; i < nkv; i++)
			if (strncmp(kvs[i].key, order[o], strlen(order[o])) == 0)
				feed(n, &kvs[i], 0);
	sl_controller_read_end(n->c);
	n->seen = rev;
	n->wcur = nev;
	n->wdue = 0;
	return 0;
}

static int
node_register(struct snode *n)
{
	char key[16];

	snprintf(key, sizeof(key), "nodes/%u", n->id);
	if (kv_get(key) != NULL)
		return -EADDRINUSE;	/* the last run's key: wait for its lease */
	n->lease = lease_grant();
	rev++;
	kv_put(key, "{}", 2, n->lease);
	n->renewed = now;
	n->next_ka = now + TTL_MS / 3;
	n->registered = 1;
	trace("node %u registered (lease %" PRId64 ", rev %" PRId64 ")", n->id, n->lease, rev);
	return 0;
}

static void
node_start(struct snode *n)
{
	n->c = sl_controller_open(&(struct sl_controller_conf){
		.node_id = n->id, .store = &store, .store_arg = n});
	if (n->c == NULL)
		abort();
	n->up = 1;
	n->registered = 0;
	n->fenced = 0;
	n->lease = 0;
	n->next_poll = now;
	memset(n->waits, 0, sizeof(n->waits));
	free(n->pos_last);
	n->pos_last = NULL;
	trace("node %u starts", n->id);
}

static void
node_down(struct snode *n, int clean)
{
	struct slease *l = lease_get(n->lease);

	if (clean && l != NULL && l->live && reachable(n))
		lease_end(l);
	ctl_close(n->c);
	n->c = NULL;
	n->up = 0;
	n->restart_at = now + 300 + sim_rndn(2700);
	trace("node %u %s", n->id, clean ? "stops (lease revoked)" : "killed");
}

static void
fence_check(struct snode *n)
{
	if (n->fenced || !n->registered || now < n->renewed + TTL_MS * 2 / 3)
		return;
	n->fenced = 1;
	sl_controller_set_lease(n->c, 0);
	trace("node %u fences", n->id);
}

static void
keepalive(struct snode *n)
{
	struct slease *l = lease_get(n->lease);

	fence_check(n);
	if (!reachable(n)) {
		n->next_ka = now + 100;
		return;
	}
	if (l == NULL || !l->live) {
		/* expired: registered again, read everything */
		n->fenced = 0;
		n->registered = 0;
		if (node_register(n) != 0) {
			n->next_ka = now + 100;
			return;
		}
		sl_controller_forget(n->c);
		sl_controller_set_lease(n->c, n->lease);
		free(n->pos_last);
		n->pos_last = NULL;
		resync(n);
		trace("node %u registered again (lease %" PRId64 ")", n->id, n->lease);
		return;
	}
	l->expires = now + TTL_MS;
	n->renewed = now;
	n->next_ka = now + TTL_MS / 3;
	if (n->fenced) {
		n->fenced = 0;
		sl_controller_forget(n->c);
		sl_controller_set_lease(n->c, n->lease);
		resync(n);
		trace("node %u unfenced", n->id);
	}
}

static void
watch(struct snode *n)
{
	int64_t r;

	while (n->wcur < nev && reachable(n)) {
		if (n->wdue == 0) {
			uint64_t d = chance(2000) ? 150 + sim_rndn(450) :
				     chance(20000) ? 20 + sim_rndn(130) : sim_rndn(20);

			n->wdue = now + d > n->wlast ? now + d : n->wlast;
		}
		if (n->wdue > now)
			return;
		n->wlast = n->wdue;
		n->wdue = 0;
		/* one revision's events come in one watch response */
		r = evs[n->wcur].kv.mod;
		for (; n->wcur < nev && evs[n->wcur].kv.mod == r; n->wcur++) {
			sl_controller_watch_event(n->c, now);
			feed(n, &evs[n->wcur].kv, evs[n->wcur].del);
		}
		n->seen = r;
	}
}

/* pos/<id>: every partition this node replicates (the store's views), at most every
 * 150 ms when changed, every 200 ms anyway when it leads or controls */
static void
publish_pos(struct snode *n)
{
	char buf[4096];
	size_t o = 0, i;
	int beat = sl_controller_acting(n->c);
	char key[16];

	if (now < n->next_pos || n->fenced || !reachable(n))
		return;
	n->next_pos = now + 150;
	o += (size_t)snprintf(buf + o, sizeof(buf) - o, "{");
	qsort(kvs, nkv, sizeof(kvs[0]), key_cmp);
	for (i = 0; i < nkv; i++) {
		struct sl_part_meta m;
		uint32_t t, p;

		if (!kvs[i].view)
			continue;
		t = kvs[i].t;
		p = kvs[i].p;
		view_of(&kvs[i], &m);
		if (!in_ids(m.replicas, m.nreplicas, n->id))
			continue;
		beat |= m.leader == n->id;
		o += (size_t)snprintf(buf + o, sizeof(buf) - o, "%s\"%s/%u\":[%" PRIu64 ",%" PRIu64
				      "]", o > 1 ? "," : "", topics[t].name, p,
				      n->end[t * MAXP + p], n->end[t * MAXP + p]);
		if (o >= sizeof(buf) - 64)
			abort();
	}
	o += (size_t)snprintf(buf + o, sizeof(buf) - o, "}");
	if (n->pos_last != NULL && strcmp(buf, n->pos_last) == 0 &&
	    !(beat && now >= n->pos_put + 200))
		return;
	snprintf(key, sizeof(key), "pos/%u", n->id);
	rev++;
	kv_put(key, buf, o, n->lease);
	free(n->pos_last);
	n->pos_last = strdup(buf);
	n->pos_put = now;
}

/* A leader's ISR change (as membership_etcd's ms_request writes it: CAS on the partition
 * key's mod_revision, no controller compare): now and then a member leaves (lagging), or a
 * replica out of the ISR that caught up joins. Races with the controller's batches. */
static void
isr_change(struct snode *n)
{
	size_t i;

	if (n->fenced || !reachable(n) || quiet || !chance(3000))
		return;
	for (i = 0; i < nkv; i++) {
		struct skv *k = &kvs[i];
		struct sl_part_meta m;
		struct sl_controller_put put;
		uint32_t who;
		char *val;
		uint8_t j;

		if (!k->view || k->meta.leader != n->id || chance(50000))
			continue;
		m = k->meta;
		who = m.replicas[sim_rndn(m.nreplicas)];
		if (who == n->id)
			continue;
		if (in_ids(m.isr, m.nisr, who)) {
			uint8_t o = 0;

			for (j = 0; j < m.nisr; j++)
				if (m.isr[j] != who)
					m.isr[o++] = m.isr[j];
			m.nisr = o;
		} else if (nodes[who].end[k->t * MAXP + k->p] ==
			   n->end[k->t * MAXP + k->p] && nodes[who].up) {
			m.isr[m.nisr++] = who;
		} else {
			continue;
		}
		val = sl_membership_view_json(&m);
		put = (struct sl_controller_put){.key = k->key, .value = val,
						 .value_len = strlen(val)};
		trace("node %u: %s: ISR of %u -> %u", n->id, k->key, k->meta.nisr, m.nisr);
		/* the store as it is: the leader's CAS holds */
		apply_txn(n->id, n->lease, &put, 1, 1);
		sims.isr++;
		free(val);
		return;
	}
}

static void
node_poll(struct snode *n)
{
	n->next_poll = now + 5 + sim_rndn(45);
	if (!n->registered) {
		if (reachable(n) && node_register(n) == 0) {
			sl_controller_set_lease(n->c, n->lease);
			resync(n);
		}
		return;
	}
	fence_check(n);
	if (now >= n->next_ka)
		keepalive(n);
	watch(n);
	publish_pos(n);
	isr_change(n);
	log_node = n;
	sl_controller_tick(n->c, now, !n->fenced && reachable(n));
	log_node = NULL;
	if (sl_controller_acting(n->c)) {	/* (8) */
		struct sl_controller_stats st;
		uint64_t w = 0;
		size_t k;

		for (k = 0; k < RTE_DIM(n->waits); k++)
			w += n->waits[k];
		sl_controller_get_stats(n->c, &st);
		if (st.waiting != w)
			fail("node %u's controller counts %" PRIu64 " partitions waiting for an "
			     "ISR member, its log said %" PRIu64, n->id, st.waiting, w);
	}
}

/* the data: a leader up and writable appends, its up followers follow (never past it;
 * a follower longer than its leader truncates) */
static void
data_tick(void)
{
	size_t i;

	for (i = 0; i < nkv; i++) {
		struct sl_part_meta m;
		struct snode *l;
		uint32_t t, p;
		uint8_t j;

		if (!kvs[i].view)
			continue;
		t = kvs[i].t;
		p = kvs[i].p;
		view_of(&kvs[i], &m);
		l = &nodes[m.leader];
		if (!l->up || l->fenced || m.writes_disabled)
			continue;
		l->end[t * MAXP + p] += sim_rndn(3);
		for (j = 0; j < m.nreplicas; j++) {
			struct snode *f = &nodes[m.replicas[j]];
			uint64_t *e = &f->end[t * MAXP + p], le = l->end[t * MAXP + p];

			if (f == l || !f->up)
				continue;
			if (*e > le)
				*e = le;
			else if (in_ids(m.isr, m.nisr, f->id) || chance(50000))
				*e = le - sim_rndn(le - *e + 1 < 3 ? le - *e + 1 : 3);
		}
	}
}

static void
topic_create(uint32_t t)
{
	char key[32], val[96];
	int len;

	snprintf(topics[t].name, sizeof(topics[t].name), "t%u", t);
	topics[t].nparts = (uint16_t)(1 + sim_rndn(chance(20000) ? MAXP : 12));
	topics[t].replicas = (uint8_t)(1 + sim_rndn(nn < 3 ? nn : 3));
	snprintf(key, sizeof(key), "topics/%s", topics[t].name);
	len = snprintf(val, sizeof(val), "{\"durability\":\"memory\",\"partitions\":%u,"
			"\"replicas\":%u}", topics[t].nparts, topics[t].replicas);
	rev++;
	kv_put(key, val, (size_t)len, 0);
	trace("topic %s: %u partitions of %u replicas", topics[t].name, topics[t].nparts,
	      topics[t].replicas);
}

static void
faults(void)
{
	uint32_t i, up = 0;

	for (i = 1; i <= nn; i++)
		up += nodes[i].up;
	for (i = 1; i <= nn; i++) {
		struct snode *n = &nodes[i];

		if (!n->up) {
			if (now >= n->restart_at)
				node_start(n);
			continue;
		}
		if (up > 1 && chance(p_kill)) {
			sims.kills++;
			node_down(n, 0);
			up--;
		} else if (up > 1 && chance(p_stop)) {
			sims.stops++;
			node_down(n, 1);
			up--;
		} else if (reachable(n) && chance(p_cut)) {
			sims.cuts++;
			n->cut_until = now + 100 + sim_rndn(2900);
			trace("node %u cut off from the store until %" PRIu64, n->id, n->cut_until);
		}
	}
}

/* (6): after the quiet phase */
static void
check_settled(void)
{
	const struct skv *ck = kv_get("controller");
	uint32_t t, p, id, up = 0;
	uint8_t j;

	for (id = 1; id <= nn; id++)
		up += nodes[id].up;
	if (ck == NULL)
		fail("settled: no controller");
	if (sscanf(ck->val, "{\"id\":%u}", &id) != 1 || id == 0 || id > nn || !nodes[id].up)
		fail("settled: controller %s is not a live node", ck->val);
	for (t = 0; t < ntopics; t++)
		for (p = 0; p < topics[t].nparts; p++) {
			char key[KEYLEN + 32];
			const struct skv *k;
			struct sl_part_meta m;
			int any = 0;

			snprintf(key, sizeof(key), "partitions/%s/%u", topics[t].name, p);
			k = kv_get(key);
			if (k == NULL && topics[t].replicas <= up)
				fail("settled: %s not placed (%u nodes up)", key, up);
			if (k == NULL)
				continue;
			view_of(k, &m);
			if (!in_ids(m.isr, m.nisr, m.leader))
				fail("settled: %s: leader %u not in its ISR", key, m.leader);
			for (j = 0; j < m.nisr; j++)
				any |= live_at(m.isr[j], rev);
			if (!live_at(m.leader, rev) && any)
				fail("settled: %s led by node %u, gone, while an ISR member "
				     "is live", key, m.leader);
		}
}

static void
reset(void)
{
	size_t i;

	for (i = 0; i < nkv; i++)
		free(kvs[i].val);
	nkv = 0;
	for (i = 0; i < nev; i++)
		free(evs[i].kv.val);
	nev = 0;
	rev = 0;
	nleases = 0;
	memset(nlives, 0, sizeof(nlives));
	for (i = 0; i < nheld; i++) {
		size_t k;

		for (k = 0; k < helds[i]->ncmp; k++)
			free((char *)(uintptr_t)helds[i]->cmp[k].key);
		for (k = 0; k < helds[i]->nput; k++) {
			free((char *)(uintptr_t)helds[i]->put[k].key);
			free((char *)(uintptr_t)helds[i]->put[k].value);
		}
		free(helds[i]);
	}
	nheld = 0;
	for (i = 1; i <= MAXN; i++) {
		ctl_close(nodes[i].c);
		free(nodes[i].pos_last);
	}
	memset(nodes, 0, sizeof(nodes));
	memset(topics, 0, sizeof(topics));
	ntopics = 0;
	quiet = 0;
	now = 0;
}

static void
run(uint64_t seed, uint64_t ms)
{
	uint64_t quiet_at = ms > 6000 ? ms - 6000 : 0, t2;
	uint32_t i;
	int64_t last_rev = 0;

	reset();
	seed_now = seed;
	if (getenv("CTL_SIM_TRACE") != NULL)
		verbose = strtoull(getenv("CTL_SIM_TRACE"), NULL, 10) == seed;
	sim_seed(seed);
	nn = 3 + (uint32_t)sim_rndn(3);
	t2 = sim_rndn(ms / 2);
	p_kill = (uint32_t)sim_rndn(40);		/* per node per ms, in 1/100000 */
	p_stop = (uint32_t)sim_rndn(10);
	p_cut = (uint32_t)sim_rndn(40);
	p_refuse = (uint32_t)sim_rndn(3000);	/* per txn */
	p_lost = (uint32_t)sim_rndn(3000);
	p_hold = (uint32_t)sim_rndn(2000);
	for (i = 1; i <= nn; i++) {
		nodes[i].id = i;
		node_start(&nodes[i]);
		nodes[i].next_poll = sim_rndn(50);
	}
	ntopics = 1 + (uint32_t)sim_rndn(2);
	for (i = 0; i < ntopics; i++)
		topic_create(i);
	for (now = 0; now < ms; now++) {
		step_ms = now;
		if (now == t2 && ntopics < MAXT)
			topic_create(ntopics++);
		if (now == quiet_at) {
			quiet = 1;
			trace("quiet from here");
		}
		for (i = 0; i < nleases; i++)
			if (leases[i].live && leases[i].expires <= now) {
				trace("lease %" PRId64 " expires", leases[i].id);
				lease_end(&leases[i]);
			}
		held_due();
		if (!quiet)
			faults();
		else
			for (i = 1; i <= nn; i++)
				nodes[i].cut_until = 0;	/* the dead stay dead */
		for (i = 1; i <= nn; i++)
			if (nodes[i].up && now >= nodes[i].next_poll)
				node_poll(&nodes[i]);
		if (now % 10 == 0)
			data_tick();
		/* (7) */
		if (rev < last_rev)
			fail("fake store: revision went back");
		last_rev = rev;
	}
	if (quiet_at != 0)
		check_settled();
}

int
main(int argc, char **argv)
{
	struct sim_opts o = {.length = 20000};
	uint64_t s;

	if (sim_opts_parse(argc, argv, "--ms", &o) != 0)
		return 2;
	verbose = o.verbose;
	/* the controller's log goes through log_write, for (8); printed only with --verbose */
	rte_openlog_stream(fopencookie(NULL, "w", (cookie_io_functions_t){.write = log_write}));
	rte_log_set_global_level(verbose ? RTE_LOG_DEBUG : RTE_LOG_NOTICE);
	for (s = o.first; s <= o.last; s++)
		run(s, o.length);
	printf("ctl_sim: seeds %" PRIu64 "-%" PRIu64 " passed (in all: %" PRIu64 " txns, %"
	       PRIu64 " written, %" PRIu64 " placed, %" PRIu64 " leader changes, %" PRIu64
	       " elections, %" PRIu64 " kills, %" PRIu64 " cuts, %" PRIu64 " refused, %" PRIu64
	       " answers lost, %" PRIu64 " held, %" PRIu64 " ISR changes, %" PRIu64
	       " controller txns lost a compare, %" PRIu64 " reads after)\n", o.first, o.last,
	       sims.txns, sims.writes, sims.placed, sims.failovers, sims.elections, sims.kills,
	       sims.cuts, sims.refused, sims.lost, sims.held, sims.isr, sims.cas_lost,
	       sims.reads);
	reset();
	free(evs);
	return 0;
}
