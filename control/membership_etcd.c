/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * membership_etcd: the second membership backend (sluiced --etcd). The cluster's state lives
 * in etcd under one prefix P (docs/cluster.md has the whole story):
 *
 *   P/nodes/<id>              {"id","ip","port"}    under the node's lease (liveness)
 *   P/controller              {"id"}                under the controller's lease
 *   P/topics/<name>           {"partitions","replicas","durability"}
 *   P/partitions/<topic>/<p>  {"leader","epoch","leader_session","replicas","isr",
 *                              "writable"}
 *   P/pos/<id>                {"<topic>/<p>": [committed end, log end], ...} under the
 *                              node's lease: where each replica it holds stands
 *
 * Every node registers itself under a lease it keeps alive, reads everything under P at
 * start and then watches P (one watch, driven from poll(): sl_etcd_watch_poll never blocks):
 * new nodes go into the broker's node table, topics are created, and partition views are
 * installed through the broker as the static backend does. An ISR change the data path asks
 * for is written first, with a compare-and-swap on the partition key's mod_revision, and
 * installed only once etcd has it: a leader never commits with an ISR etcd does not hold.
 *
 * One node is the controller: the one whose txn created P/controller (create_revision == 0)
 * under its lease; the others take over when that key goes (watch). The controller places
 * the partitions of a new topic over the live nodes (leaders spread evenly) and, when a
 * leader's node key expires, makes a live ISR member leader with the next epoch and leader
 * session (CAS on the partition key); every node installs it by watch. The new leader is
 * the live ISR member with the longest log, as the members publish it (P/pos/<id>). The
 * controller's writes also compare its P/controller key's create_revision: a deposed
 * controller's writes fail. Its state machine is control/controller.c: this file feeds it
 * every key read or watched, its lease and the time, and gives it the store it writes
 * through (store_txn, store_read: etcd transactions, batched by the controller).
 *
 * Fencing: a node that has not renewed its lease for 2/3 of the TTL can no longer prove it
 * is alive to the others (its lease may expire and its partitions fail over elsewhere): it
 * installs its own views with writes off for the partitions it leads, and stops acting as
 * controller, until a renewal succeeds (then it reads everything again). Only when every
 * endpoint refuses the connection (etcd is down: nobody can fail over) does it keep writing.
 *
 * Calling context: every function runs on the control thread; the etcd calls are blocking
 * HTTP requests bounded by the client's timeouts (control/etcd.h).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include <rte_common.h>
#include <rte_errno.h>
#include <rte_log.h>

#include "cluster.h"
#include "controller.h"
#include "err.h"
#include "etcd.h"
#include "membership.h"
#include "name.h"
#include "persist.h"
#include "ptable.h"

RTE_LOG_REGISTER_SUFFIX(sl_membership_etcd_logtype, membership.etcd, INFO);
#define XLOG(level, fmt, ...) \
	rte_log(RTE_LOG_##level, sl_membership_etcd_logtype, "membership: etcd: " fmt "\n", \
		##__VA_ARGS__)

#define KEY_MAX 256
#define PREFIX_MAX 128
#define MAX_EVENTS_PER_POLL 1024
#define RETRY_MS 100			/* a keep-alive that failed is tried again after */
#define BEAT_MS SL_CONTROLLER_BEAT_MS	/* a leader (and the controller) writes P/pos so often */
#define STALL_MS 400			/* a poll, or a gap between polls, said when longer */
#define MOVE_TIMEOUT_MS 60000		/* a move whose new replicas do not catch up gives up */
#define START_WAIT_MS 10000		/* etcd not answering at start: tried this long */

enum move_state {
	MOVE_NONE = 0,
	MOVE_CATCHUP,			/* the view holds old + new replicas: new ones catch up */
	MOVE_DONE,
	MOVE_FAILED,
};

/* A partition move (`partition move T P --replicas a,b,c`) this node drives. */
struct emove {
	char topic[SL_COORD_NAME_MAX + 1];
	uint16_t part;
	uint32_t target[SL_COORD_MAX_REPLICAS];
	uint8_t ntarget;
	enum move_state state;
	uint32_t old_leader, new_leader;
	uint64_t start_ms, caught_up_ms, switch_ms, led_ms;
	char why[96];
};

struct etopic {
	char name[SL_COORD_NAME_MAX + 1];
	uint16_t nparts;
	uint8_t replicas;
	uint8_t disk;
};

struct epart {
	char topic[SL_COORD_NAME_MAX + 1];
	uint16_t part;
	int64_t mod_rev;		/* of the partition key: the CAS compares it */
	uint64_t since_ms;		/* its leader (as etcd holds it) was first seen */
	struct sl_part_meta meta;	/* as etcd holds it */
};

struct mse {
	struct sl_etcd *e;
	struct sl_etcd_watch *w;
	char prefix[PREFIX_MAX];
	uint32_t ip;			/* host order */
	uint16_t port;
	uint32_t ttl_s;
	int64_t lease;
	uint64_t next_keepalive_ms;
	int64_t rev;			/* store revision of the last full read */
	struct sl_controller *ctl;	/* the controller's state machine (controller.h) */
	uint8_t live[SL_MEMBERSHIP_MAX_NODES];	/* by index in m->nodes */
	json_t *pos[SL_MEMBERSHIP_MAX_NODES];	/* P/pos/<id> by index in m->nodes */
	uint64_t pos_put_ms;		/* this node's last P/pos write */
	uint64_t poll_start_ms, poll_end_ms;
	uint64_t fence_age_ms;		/* the last renewal's age when it last fenced */
	struct emove mv;		/* the last move started here */
	uint32_t fence_ms;		/* not renewed for this long: leader writes off */
	uint32_t request_ms;		/* the etcd client's bound on one call */
	uint64_t last_renew_ms;		/* when the last successful renewal was sent */
	int reachable;			/* the last etcd call got an answer */
	int etcd_down;			/* ... failed: every endpoint refused (etcd down) */
	uint64_t unreachable_ms;	/* since when not */
	int fenced;			/* views of the partitions this node leads: writes off */
	char *pos_last;			/* the P/pos/<id> value last written */
	uint64_t next_pos_ms;
	uint64_t fences, cas_lost;
	struct sl_ptable topics;		/* struct etopic */
	struct sl_ptable parts;		/* struct epart */
};

static uint64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* ---- values: JSON in and out ---- */

static char *
node_json(uint32_t id, uint32_t ip, uint16_t port)
{
	char a[INET_ADDRSTRLEN];
	struct in_addr in = {.s_addr = htonl(ip)};

	json_t *j;
	char *s;

	inet_ntop(AF_INET, &in, a, sizeof(a));
	j = json_pack("{s:I, s:s, s:i}", "id", (json_int_t)id, "ip", a, "port", (int)port);
	s = j != NULL ? json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	json_decref(j);
	return s;
}

static json_t *
ids_json(const uint32_t *ids, uint8_t n)
{
	json_t *a = json_array();
	uint8_t i;

	for (i = 0; a != NULL && i < n; i++)
		json_array_append_new(a, json_integer(ids[i]));
	return a;
}

char *
sl_membership_view_json(const struct sl_part_meta *m)
{
	json_t *j = json_pack("{s:I, s:I, s:I, s:o, s:o, s:b}", "leader", (json_int_t)m->leader,
			      "epoch", (json_int_t)m->epoch, "leader_session",
			      (json_int_t)m->leader_session, "replicas",
			      ids_json(m->replicas, m->nreplicas), "isr", ids_json(m->isr, m->nisr),
			      "writable", !m->writes_disabled);
	char *s = j != NULL ? json_dumps(j, JSON_COMPACT) : NULL;

	json_decref(j);
	return s;
}

static int
ids_parse(const json_t *a, uint32_t *ids, uint8_t *n)
{
	size_t i;

	if (!json_is_array(a) || json_array_size(a) > SL_COORD_MAX_REPLICAS)
		return -EINVAL;
	for (i = 0; i < json_array_size(a); i++) {
		json_int_t v = json_integer_value(json_array_get(a, i));

		if (v <= 0 || v > UINT32_MAX)
			return -EINVAL;
		ids[i] = (uint32_t)v;
	}
	*n = (uint8_t)i;
	return 0;
}

int
sl_membership_view_parse(const char *s, size_t len, struct sl_part_meta *m)
{
	json_t *j = json_loadb(s, len, 0, NULL);
	json_int_t leader = 0, epoch = 0, session = 0;
	json_t *reps = NULL, *isr = NULL;
	int writable = 1, rc = -EINVAL;
	char why[128];

	memset(m, 0, sizeof(*m));
	if (j == NULL || json_unpack(j, "{s:I, s:I, s:I, s:o, s:o, s?b}", "leader", &leader,
				     "epoch", &epoch, "leader_session", &session, "replicas",
				     &reps, "isr", &isr, "writable", &writable) != 0)
		goto out;
	if (leader <= 0 || leader > UINT32_MAX || epoch <= 0 || epoch > UINT32_MAX ||
	    session < 0 || ids_parse(reps, m->replicas, &m->nreplicas) != 0 ||
	    ids_parse(isr, m->isr, &m->nisr) != 0)
		goto out;
	m->leader = (uint32_t)leader;
	m->epoch = (uint32_t)epoch;
	m->leader_session = (uint64_t)session;
	m->writes_disabled = !writable;
	rc = sl_cluster_check_meta(m, why, sizeof(why)) == 0 ? 0 : -EINVAL;
out:
	json_decref(j);
	return rc;
}

static int
meta_same(const struct sl_part_meta *a, const struct sl_part_meta *b)
{
	return a->leader == b->leader && a->epoch == b->epoch &&
	       a->leader_session == b->leader_session && a->nreplicas == b->nreplicas &&
	       a->nisr == b->nisr && a->writes_disabled == b->writes_disabled &&
	       memcmp(a->replicas, b->replicas, a->nreplicas * sizeof(a->replicas[0])) == 0 &&
	       memcmp(a->isr, b->isr, a->nisr * sizeof(a->isr[0])) == 0;
}

/* ---- local tables ---- */

static int
node_index(const struct sl_membership *m, uint32_t id)
{
	uint32_t i;

	for (i = 0; i < m->nnodes; i++)
		if (m->nodes[i].id == id)
			return (int)i;
	return -1;
}

static int
node_live(const struct sl_membership *m, uint32_t id)
{
	const struct mse *x = m->priv;
	int i = node_index(m, id);

	return i >= 0 && x->live[i];
}

static void
key_of(const struct mse *x, char *k, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void
key_of(const struct mse *x, char *k, const char *fmt, ...)
{
	va_list ap;
	int n = snprintf(k, KEY_MAX, "%s/", x->prefix);

	va_start(ap, fmt);
	vsnprintf(k + n, KEY_MAX - (size_t)n, fmt, ap);
	va_end(ap);
}

/* After an etcd call: whether etcd answered (rc -ENOTCONN: no endpoint did), said once per
 * change. */
static void
seen(struct sl_membership *m, int rc)
{
	struct mse *x = m->priv;

	if (rc == -ENOTCONN) {
		x->etcd_down = sl_etcd_refused(x->e);
		if (!x->reachable)
			return;
		x->reachable = 0;
		x->unreachable_ms = now_ms();
		XLOG(ERR, "etcd unreachable (%s): serving with the views installed, no failover "
			  "or ISR change possible until it answers again",
		     x->etcd_down ? "every endpoint refuses: etcd is down" : "no answer");
		return;
	}
	if (!x->reachable) {
		x->reachable = 1;
		XLOG(NOTICE, "etcd reachable again (%s) after %llu ms", sl_etcd_endpoint(x->e),
		     (unsigned long long)(now_ms() - x->unreachable_ms));
	}
}

/* ---- applying what etcd holds ---- */

/* Create the topic on this node if it is not there (as many partitions as etcd says, or
 * at least part + 1 while the topic key is unknown). */
static int
topic_local(struct sl_membership *m, const char *name, uint16_t part)
{
	struct mse *x = m->priv;
	const struct etopic *t = sl_ptable_find(&x->topics, name, 0);
	struct sl_persist_policy pol = sl_broker_get_conf(m->broker)->policy;
	uint16_t n = t != NULL ? t->nparts : (uint16_t)(part + 1);
	int rc;

	if (t != NULL)
		pol.durability = t->disk ? SL_PERSIST_DISK : SL_PERSIST_MEMORY;
	rc = sl_broker_topic_create(m->broker, name, n, 0, &pol);
	if (rc == 0)
		XLOG(INFO, "topic %s created here (%u partitions)", name, n);
	return rc == -SL_E_EXISTS ? 0 : rc;
}

static void
install(struct sl_membership *m, const struct epart *p)
{
	struct sl_part_meta cur;
	int rc;

	struct mse *x = m->priv;
	struct sl_part_meta want = p->meta;

	if (m->broker == NULL)
		return;
	/* fenced: the partitions this node leads keep their view, with writes off */
	if (x->fenced && want.leader == m->node_id)
		want.writes_disabled = 1;
	rc = sl_broker_part_get_view(m->broker, p->topic, p->part, &cur);
	if (rc == -SL_E_TOPIC) {
		rc = topic_local(m, p->topic, p->part);
		if (rc == 0)
			rc = sl_broker_part_get_view(m->broker, p->topic, p->part, &cur);
	}
	if (rc == 0 && meta_same(&cur, &want))
		return;
	if (rc == 0)
		rc = sl_broker_part_set_view(m->broker, p->topic, p->part, &want);
	if (rc != 0) {
		XLOG(WARNING, "%s/%u: view from etcd not installed: %s", p->topic, p->part,
		     sl_strerror(rc));
		return;
	}
	if (want.leader == m->node_id && cur.leader != m->node_id) {
		/* leading now: say so in P/pos at the next poll, not at the next beat (a move
		 * measures its switch by it; the controller sees a live leader at once) */
		x->next_pos_ms = 0;
		free(x->pos_last);
		x->pos_last = NULL;
	}
	XLOG(INFO, "%s/%u: view installed: leader %u epoch %u session %llu, ISR of %u, "
		   "writes %s%s", p->topic, p->part, want.leader, want.epoch,
	     (unsigned long long)want.leader_session, want.nisr,
	     want.writes_disabled ? "off" : "on",
	     want.writes_disabled != p->meta.writes_disabled ? " (fenced)" : "");
}

static void
on_node(struct sl_membership *m, const char *rest, const struct sl_etcd_kv *kv, int del)
{
	struct mse *x = m->priv;
	json_int_t id = 0, port = 0;
	const char *ip = NULL;
	struct in_addr a;
	json_t *j;
	int i, rc;

	if (del) {
		i = node_index(m, (uint32_t)strtoul(rest, NULL, 10));
		if (i >= 0 && x->live[i]) {
			x->live[i] = 0;
			XLOG(NOTICE, "node %u left (its lease ended)", m->nodes[i].id);
		}
		return;
	}
	j = json_loadb(kv->value, kv->value_len, 0, NULL);
	if (j == NULL || json_unpack(j, "{s:I, s:s, s:I}", "id", &id, "ip", &ip, "port",
				     &port) != 0 || id <= 0 || id > UINT32_MAX || port <= 0 ||
	    port > 65535 || inet_pton(AF_INET, ip, &a) != 1) {
		XLOG(WARNING, "%s: not a node", kv->key);
		json_decref(j);
		return;
	}
	i = node_index(m, (uint32_t)id);
	if (i < 0 && m->nnodes < SL_MEMBERSHIP_MAX_NODES) {
		i = (int)m->nnodes++;
		m->nodes[i].id = (uint32_t)id;
		m->nodes[i].ip = ntohl(a.s_addr);
		m->nodes[i].port = (uint16_t)port;
	}
	json_decref(j);
	if (i < 0) {
		XLOG(ERR, "node %lld: more than %d nodes", (long long)id, SL_MEMBERSHIP_MAX_NODES);
		return;
	}
	if (m->nodes[i].ip != ntohl(a.s_addr) || m->nodes[i].port != port)
		XLOG(WARNING, "node %u registered with another address than before: the old "
			      "one stays in use until this node restarts", m->nodes[i].id);
	if (m->broker != NULL) {
		rc = sl_broker_node_add(m->broker, m->nodes[i].id, htonl(m->nodes[i].ip),
					m->nodes[i].port);
		if (rc < 0)
			XLOG(WARNING, "node %u not added to the replication table: %s",
			     m->nodes[i].id, strerror(-rc));
	}
	if (!x->live[i]) {
		x->live[i] = 1;
		a.s_addr = htonl(m->nodes[i].ip);
		XLOG(NOTICE, "node %u is live (%s:%u)", m->nodes[i].id, inet_ntoa(a),
		     m->nodes[i].port);
	}
}

static void
on_topic(struct sl_membership *m, const char *name, const struct sl_etcd_kv *kv, int del)
{
	struct mse *x = m->priv;
	json_int_t parts = 0, reps = 0;
	const char *dur = "memory";
	struct etopic *t;
	json_t *j;

	if (del) {
		/* topic deletion is not cluster-wide yet: the local topic stays */
		sl_ptable_remove(&x->topics, name, 0);
		return;
	}
	j = json_loadb(kv->value, kv->value_len, 0, NULL);
	if (j == NULL || json_unpack(j, "{s:I, s:I, s?s}", "partitions", &parts, "replicas",
				     &reps, "durability", &dur) != 0 || parts <= 0 ||
	    parts > SL_COORD_MAX_PARTS || reps <= 0 || reps > SL_COORD_MAX_REPLICAS ||
	    strlen(name) > SL_COORD_NAME_MAX) {
		XLOG(WARNING, "%s: not a topic", kv->key);
		json_decref(j);
		return;
	}
	t = sl_ptable_add(&x->topics, name, 0);
	if (t == NULL) {
		json_decref(j);
		return;
	}
	t->nparts = (uint16_t)parts;
	t->replicas = (uint8_t)reps;
	t->disk = strcmp(dur, "disk") == 0;
	json_decref(j);
	if (m->broker != NULL)
		topic_local(m, name, 0);
}

static void
on_part(struct sl_membership *m, const char *rest, const struct sl_etcd_kv *kv, int del)
{
	struct mse *x = m->priv;
	char topic[SL_COORD_NAME_MAX + 1];
	struct sl_part_meta meta;
	struct epart *p;
	uint16_t part;

	if (sl_ptable_key_parse(rest, topic, &part) != 0)
		return;
	if (del) {
		sl_ptable_remove(&x->parts, topic, part);
		return;
	}
	if (sl_membership_view_parse(kv->value, kv->value_len, &meta) != 0) {
		XLOG(WARNING, "%s: not a partition view", kv->key);
		return;
	}
	p = sl_ptable_add(&x->parts, topic, part);
	if (p == NULL)
		return;
	p->mod_rev = kv->mod_revision;
	if (p->since_ms == 0 || p->meta.leader != meta.leader || p->meta.epoch != meta.epoch)
		p->since_ms = now_ms();
	p->meta = meta;
	install(m, p);
}

/* P/pos/<id>: where node id's replicas stand (kept for the failover choice). */
static void
on_pos(struct sl_membership *m, const char *rest, const struct sl_etcd_kv *kv, int del)
{
	struct mse *x = m->priv;
	int i = node_index(m, (uint32_t)strtoul(rest, NULL, 10));
	json_t *j = NULL;

	if (i < 0)
		return;
	if (!del) {
		j = json_loadb(kv->value, kv->value_len, 0, NULL);
		if (!json_is_object(j)) {
			XLOG(WARNING, "%s: not a position object", kv->key);
			json_decref(j);
			j = NULL;
		}
	}
	json_decref(x->pos[i]);
	x->pos[i] = j;
	if (j != NULL && x->mv.state == MOVE_DONE && x->mv.led_ms == 0 &&
	    m->nodes[i].id == x->mv.new_leader && x->mv.new_leader != x->mv.old_leader)
		x->mv.led_ms = now_ms();	/* its first write since it leads */
}

/* One key under the prefix, read or watched: this node's tables, then the controller's. */
static void
apply(struct sl_membership *m, const struct sl_etcd_kv *kv, int del)
{
	struct mse *x = m->priv;
	size_t pl = strlen(x->prefix);
	struct sl_controller_kv ckv;
	const char *rest;

	if (kv->key_len <= pl + 1 || strncmp(kv->key, x->prefix, pl) != 0 || kv->key[pl] != '/')
		return;
	rest = kv->key + pl + 1;
	ckv = (struct sl_controller_kv){.key = rest, .value = kv->value,
					.value_len = kv->value_len,
					.create_rev = kv->create_revision,
					.mod_rev = kv->mod_revision, .lease = kv->lease};
	if (strncmp(rest, "nodes/", 6) == 0)
		on_node(m, rest + 6, kv, del);
	else if (strncmp(rest, "topics/", 7) == 0)
		on_topic(m, rest + 7, kv, del);
	else if (strncmp(rest, "partitions/", 11) == 0)
		on_part(m, rest + 11, kv, del);
	else if (strncmp(rest, "pos/", 4) == 0)
		on_pos(m, rest + 4, kv, del);
	sl_controller_apply(x->ctl, &ckv, del, now_ms());
}

/* Read everything under the prefix (nodes, then the controller, topics, partitions: each
 * needs the one before) and watch from the revision after. */
static int
resync(struct sl_membership *m)
{
	static const char *const order[] = {"nodes/", "controller", "topics/", "partitions/",
					    "pos/"};
	struct mse *x = m->priv;
	struct sl_etcd_kvs all;
	char key[KEY_MAX];
	size_t i, k, pl = strlen(x->prefix) + 1;
	int rc;

	key_of(x, key, "%s", "");
	rc = sl_etcd_range(x->e, key, 1, 0, &all);
	seen(m, rc);
	if (rc != 0) {
		XLOG(ERR, "reading %s: %s", key, strerror(-rc));
		return rc;
	}
	sl_controller_read_begin(x->ctl);
	for (k = 0; k < RTE_DIM(order); k++)
		for (i = 0; i < all.n; i++)
			if (all.kv[i].key_len > pl &&
			    strncmp(all.kv[i].key + pl, order[k], strlen(order[k])) == 0)
				apply(m, &all.kv[i], 0);
	sl_controller_read_end(x->ctl);
	x->rev = all.revision;
	sl_etcd_kvs_free(&all);
	sl_etcd_watch_close(x->w);
	x->w = sl_etcd_watch_open(x->e, key, 1, x->rev + 1);
	if (x->w == NULL)
		return -errno;
	return 0;
}

/* ---- registration, election ---- */

static int
lease_and_register(struct sl_membership *m, uint64_t wait_ms)
{
	struct mse *x = m->priv;
	struct sl_etcd_cmp absent = {.target = SL_ETCD_CMP_CREATE, .result = SL_ETCD_EQUAL};
	struct sl_etcd_op put = {.kind = SL_ETCD_OP_PUT};
	struct sl_etcd_kvs got;
	char key[KEY_MAX], *val;
	uint64_t sent = now_ms(), until = sent + wait_ms;
	int rc;

	rc = sl_etcd_lease_grant(x->e, x->ttl_s, &x->lease, NULL);
	seen(m, rc);
	if (rc != 0)
		return rc;
	x->last_renew_ms = sent;
	sl_controller_set_lease(x->ctl, x->fenced ? 0 : x->lease);
	free(x->pos_last);	/* a new lease: the positions go under it again */
	x->pos_last = NULL;
	key_of(x, key, "nodes/%u", m->node_id);
	val = node_json(m->node_id, x->ip, x->port);
	if (val == NULL)
		return -ENOMEM;
	absent.key = key;
	put.key = key;
	put.value = val;
	put.value_len = strlen(val);
	put.lease = x->lease;
	for (;;) {
		rc = sl_etcd_txn(x->e, &absent, 1, &put, 1, NULL, 0, NULL, &got);
		seen(m, rc);
		sl_etcd_kvs_free(&got);
		if (rc != 0 || now_ms() >= until)
			break;
		/* a previous run of this node (killed) still holds the key until its lease
		 * ends: at start only, wait for that */
		nanosleep(&(struct timespec){.tv_nsec = 100000000}, NULL);
	}
	free(val);
	if (rc == 0)
		return -EADDRINUSE;
	if (rc == 1) {
		x->next_keepalive_ms = now_ms() + x->ttl_s * 1000 / 3;
		rc = 0;
	}
	return rc;
}

/* ---- writing views (CAS on the partition key) ---- */

/* Write next for partition p if its key is still at p->mod_rev (0: must not exist): an ISR
 * change, an operator's edit, a move. ctl must be 0: the controller's writes go through
 * its store (store_txn), fenced by its key. 1 written (p updated), 0 someone changed it
 * first, or a negative errno. */
static int
cas_view(struct sl_membership *m, struct epart *p, const struct sl_part_meta *next, int ctl)
{
	struct mse *x = m->priv;
	char key[KEY_MAX], *val;
	struct sl_etcd_cmp cmp = {
		.key = key, .target = p->mod_rev != 0 ? SL_ETCD_CMP_MOD : SL_ETCD_CMP_CREATE,
		.result = SL_ETCD_EQUAL, .num = p->mod_rev,
	};
	struct sl_etcd_op put = {.kind = SL_ETCD_OP_PUT, .key = key};
	int64_t rev = 0;
	int rc;

	if (x->fenced || ctl)
		return 0;	/* this node cannot prove its lease */
	val = sl_membership_view_json(next);
	if (val == NULL)
		return -ENOMEM;
	key_of(x, key, "partitions/%s/%u", p->topic, p->part);
	put.value = val;
	put.value_len = strlen(val);
	rc = sl_etcd_txn(x->e, &cmp, 1, &put, 1, NULL, 0, &rev, NULL);
	seen(m, rc);
	free(val);
	if (rc == 0)
		x->cas_lost++;
	if (rc == 1) {
		p->mod_rev = rev;
		if (p->meta.leader != next->leader || p->meta.epoch != next->epoch)
			p->since_ms = now_ms();
		p->meta = *next;
	}
	return rc;
}

/* ---- the controller's store (controller.h) on etcd ---- */

static void fence_check(struct sl_membership *m, uint64_t ahead_ms);

/* One etcd txn: the compares (all "equal"), the puts. Once written, the partition views it
 * wrote are this node's at once (installed, as the watch would, later). */
static int
store_txn(void *arg, const struct sl_controller_cmp *cmp, size_t ncmp,
	  const struct sl_controller_put *put, size_t nput, int64_t *rev)
{
	struct sl_membership *m = arg;
	struct mse *x = m->priv;
	struct sl_etcd_cmp *ec;
	struct sl_etcd_op *eo;
	char (*keys)[KEY_MAX];
	size_t i, pl = strlen(x->prefix) + 1;
	int64_t r = 0;
	int rc;

	/* a scan's transactions may take a while: stop at the fence */
	fence_check(m, x->request_ms);
	if (x->fenced || !x->reachable)
		return -EAGAIN;
	ec = calloc(ncmp, sizeof(*ec));
	eo = calloc(nput, sizeof(*eo));
	keys = malloc((ncmp + nput) * sizeof(*keys));
	rc = -ENOMEM;
	if (ec == NULL || eo == NULL || keys == NULL)
		goto out;
	for (i = 0; i < ncmp; i++) {
		key_of(x, keys[i], "%s", cmp[i].key);
		ec[i] = (struct sl_etcd_cmp){
			.key = keys[i], .result = SL_ETCD_EQUAL, .num = cmp[i].rev,
			.target = cmp[i].target == SL_CONTROLLER_CMP_MOD ? SL_ETCD_CMP_MOD :
									    SL_ETCD_CMP_CREATE,
		};
	}
	for (i = 0; i < nput; i++) {
		key_of(x, keys[ncmp + i], "%s", put[i].key);
		eo[i] = (struct sl_etcd_op){.kind = SL_ETCD_OP_PUT, .key = keys[ncmp + i],
					    .value = put[i].value, .value_len = put[i].value_len,
					    .lease = put[i].lease};
	}
	rc = sl_etcd_txn(x->e, ec, ncmp, eo, nput, NULL, 0, &r, NULL);
	seen(m, rc);
	if (rev != NULL)
		*rev = r;
	for (i = 0; rc == 1 && i < nput; i++) {
		struct sl_etcd_kv kv = {.key = keys[ncmp + i], .key_len = strlen(keys[ncmp + i]),
					.value = (char *)(uintptr_t)put[i].value,
					.value_len = put[i].value_len, .mod_revision = r,
					.lease = put[i].lease};

		if (strncmp(kv.key + pl, "partitions/", 11) == 0)
			on_part(m, kv.key + pl + 11, &kv, 0);
	}
out:
	free(ec);
	free(eo);
	free(keys);
	return rc;
}

static int
store_read(void *arg, const char *key, int prefix, sl_controller_kv_fn fn, void *fn_arg)
{
	struct sl_membership *m = arg;
	struct mse *x = m->priv;
	size_t i, pl = strlen(x->prefix) + 1;
	struct sl_etcd_kvs got;
	char k[KEY_MAX];
	int rc;

	key_of(x, k, "%s", key);
	rc = sl_etcd_range(x->e, k, prefix, 0, &got);
	seen(m, rc);
	if (rc != 0)
		return rc;
	for (i = 0; i < got.n; i++) {
		const struct sl_etcd_kv *kv = &got.kv[i];
		struct sl_controller_kv ckv = {.key = kv->key + pl, .value = kv->value,
					       .value_len = kv->value_len,
					       .create_rev = kv->create_revision,
					       .mod_rev = kv->mod_revision, .lease = kv->lease};

		if (kv->key_len > pl)
			fn(fn_arg, &ckv);
	}
	sl_etcd_kvs_free(&got);
	return 0;
}

static const struct sl_controller_store etcd_store = {
	.txn = store_txn,
	.read = store_read,
};

/* ---- the controller ---- */

int
sl_membership_place(const uint32_t *live, uint32_t n, uint16_t part, uint8_t replicas,
		    struct sl_part_meta *out)
{
	uint8_t i;

	if (replicas == 0 || replicas > SL_COORD_MAX_REPLICAS || n < replicas)
		return -1;
	memset(out, 0, sizeof(*out));
	out->nreplicas = out->nisr = replicas;
	for (i = 0; i < replicas; i++)
		out->replicas[i] = out->isr[i] = live[(part + i) % n];
	out->leader = out->replicas[0];
	out->epoch = 1;
	out->leader_session = 1;
	return 0;
}

/* What node holds of topic/part: 1 with *committed, *end from its P/pos key, or 0. */
static int
pos_lookup(const struct sl_membership *m, uint32_t node, const char *topic, uint16_t part,
	   uint64_t *committed, uint64_t *end)
{
	const struct mse *x = m->priv;
	int i = node_index(m, node);
	char k[SL_COORD_NAME_MAX + 8];
	json_t *a;

	if (i < 0 || x->pos[i] == NULL)
		return 0;
	snprintf(k, sizeof(k), "%s/%u", topic, part);
	a = json_object_get(x->pos[i], k);
	if (!json_is_array(a) || json_array_size(a) != 2)
		return 0;
	*committed = (uint64_t)json_integer_value(json_array_get(a, 0));
	*end = (uint64_t)json_integer_value(json_array_get(a, 1));
	return 1;
}

/* ---- fencing ---- */

/* The lease may expire at etcd once it has not been renewed for the TTL: at fence_ms
 * (2/3 of it) the partitions this node leads stop taking writes and it stops acting as
 * controller, unless etcd is down for everyone (every endpoint refuses: nobody can fail
 * over). ahead_ms: as if that much later (before a call that may block that long). */
static void
fence_check(struct sl_membership *m, uint64_t ahead_ms)
{
	struct mse *x = m->priv;
	uint64_t since = now_ms() + ahead_ms - x->last_renew_ms;
	size_t i;

	if (x->fenced || since < x->fence_ms || (!x->reachable && x->etcd_down))
		return;
	x->fenced = 1;
	x->fences++;
	x->fence_age_ms = since;
	XLOG(ERR, "lease not renewed for %llu ms (TTL %u s): this node can no longer prove it "
		  "is alive, its partitions may fail over elsewhere: the partitions it leads "
		  "stop taking writes%s until etcd answers", (unsigned long long)since, x->ttl_s,
	     sl_controller_acting(x->ctl) ? ", and it stops acting as controller" : "");
	sl_controller_set_lease(x->ctl, 0);
	for (i = 0; i < x->parts.n; i++)
		install(m, sl_ptable_at(&x->parts, i));
}

/* A renewal succeeded again: read everything (views may have changed meanwhile, the
 * controller key may be gone) and install etcd's views as they are. */
static void
unfence(struct sl_membership *m)
{
	struct mse *x = m->priv;
	size_t i;

	if (!x->fenced)
		return;
	x->fenced = 0;
	sl_controller_forget(x->ctl);
	sl_controller_set_lease(x->ctl, x->lease);
	if (resync(m) != 0) {
		x->fenced = 1;
		sl_controller_set_lease(x->ctl, 0);
		for (i = 0; i < x->parts.n; i++)
			install(m, sl_ptable_at(&x->parts, i));
		return;
	}
	XLOG(NOTICE, "lease renewed: fencing lifted, views as etcd holds them");
	/* no controller: run for it */
	sl_controller_tick(x->ctl, now_ms(), x->reachable);
}

/* ---- positions ---- */

static int
holds(const struct sl_part_meta *pm, uint32_t id)
{
	uint8_t i;

	for (i = 0; i < pm->nreplicas; i++)
		if (pm->replicas[i] == id)
			return 1;
	return 0;
}

/* P/pos/<id>: for every partition this node replicates, its committed end and log end (the
 * owner worker's snapshot), written under the lease when it changed, at most every
 * SL_MEMBERSHIP_POS_MS. */
static void
publish_pos(struct sl_membership *m)
{
	struct mse *x = m->priv;
	json_t *o;
	char key[KEY_MAX], k[SL_COORD_NAME_MAX + 8], *val;
	int rc, beat = sl_controller_acting(x->ctl);	/* leaders and the controller beat */
	size_t i;

	if (m->broker == NULL || x->fenced || !x->reachable || x->lease == 0)
		return;
	o = json_object();
	for (i = 0; o != NULL && i < x->parts.n; i++) {
		const struct epart *p = sl_ptable_at(&x->parts, i);
		uint64_t committed, end_id;

		beat |= p->meta.leader == m->node_id;
		/* read without a worker command: a pass costs no round trip per partition */
		if (!holds(&p->meta, m->node_id) ||
		    sl_broker_part_pos(m->broker, p->topic, p->part, &committed, &end_id) != 1)
			continue;
		snprintf(k, sizeof(k), "%s/%u", p->topic, p->part);
		json_object_set_new(o, k, json_pack("[I, I]", (json_int_t)committed,
						    (json_int_t)end_id));
	}
	val = o != NULL ? json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	json_decref(o);
	if (val == NULL || (x->pos_last != NULL && strcmp(val, x->pos_last) == 0 &&
			    !(beat && now_ms() >= x->pos_put_ms + BEAT_MS))) {
		free(val);
		return;
	}
	key_of(x, key, "pos/%u", m->node_id);
	rc = sl_etcd_put(x->e, key, val, strlen(val), x->lease, NULL);
	seen(m, rc);
	if (rc != 0) {
		free(val);
		return;
	}
	free(x->pos_last);
	x->pos_last = val;
	x->pos_put_ms = now_ms();
}

/* ---- the backend's operations ---- */

static void
ms_close(struct sl_membership *m)
{
	struct mse *x = m->priv;
	size_t i;

	if (x == NULL)
		return;
	sl_etcd_watch_close(x->w);
	if (x->lease != 0 && x->e != NULL)
		sl_etcd_lease_revoke(x->e, x->lease);	/* others fail over at once */
	sl_etcd_close(x->e);
	sl_controller_close(x->ctl);
	for (i = 0; i < SL_MEMBERSHIP_MAX_NODES; i++)
		json_decref(x->pos[i]);
	free(x->pos_last);
	sl_ptable_free(&x->topics);
	sl_ptable_free(&x->parts);
	free(x);
	m->priv = NULL;
}

static int
ms_open(struct sl_membership *m, const struct sl_membership_conf *conf)
{
	struct sl_etcd_conf ec = {.endpoints = conf->source};
	const char *prefix = conf->prefix != NULL ? conf->prefix : SL_MEMBERSHIP_ETCD_PREFIX;
	size_t pl = strlen(prefix);
	uint64_t until;
	struct mse *x;
	int rc;

	if (conf->source == NULL || conf->ip == 0 || conf->port == 0 || pl == 0 ||
	    pl >= PREFIX_MAX || prefix[0] != '/' || prefix[pl - 1] == '/') {
		if (conf->err != NULL)
			snprintf(conf->err, conf->err_len, "etcd: endpoints, this node's address "
				 "and a prefix (/a/b, no trailing /) are needed");
		return -EINVAL;
	}
	x = calloc(1, sizeof(*x));
	if (x == NULL)
		return -ENOMEM;
	m->priv = x;
	x->topics = SL_PTABLE_INIT_NAMES(struct etopic, name);
	x->parts = SL_PTABLE_INIT(struct epart, topic, part);
	snprintf(x->prefix, sizeof(x->prefix), "%s", prefix);
	x->ip = conf->ip;
	x->port = conf->port;
	x->ttl_s = conf->lease_ttl_s != 0 ? conf->lease_ttl_s : SL_MEMBERSHIP_ETCD_TTL_S;
	x->fence_ms = x->ttl_s * 2000 / 3;
	/* one call must end well within the lease: the fence is checked between calls */
	x->request_ms = RTE_MAX(x->ttl_s * 1000 / 6, 250u);
	ec.request_timeout_ms = x->request_ms;
	ec.connect_timeout_ms = RTE_MIN(x->request_ms, (uint32_t)SL_ETCD_CONNECT_TIMEOUT_MS);
	x->reachable = 1;
	x->ctl = sl_controller_open(&(struct sl_controller_conf){
		.node_id = m->node_id, .store = &etcd_store, .store_arg = m});
	if (x->ctl == NULL) {
		rc = -rte_errno;
		goto fail;
	}
	x->e = sl_etcd_open(&ec);
	if (x->e == NULL) {
		rc = -EINVAL;
		if (conf->err != NULL)
			snprintf(conf->err, conf->err_len, "etcd: bad endpoint list '%s'",
				 conf->source);
		goto fail;
	}
	/* at start a slow etcd (or one still starting) is waited for, a while: each call
	 * is bounded tightly for the fence's sake, not for this */
	until = now_ms() + START_WAIT_MS;
	do {
		rc = lease_and_register(m, (uint64_t)x->ttl_s * 2000 + 1000);
	} while (rc == -ENOTCONN && now_ms() < until &&
		 nanosleep(&(struct timespec){.tv_nsec = 100000000}, NULL) == 0);
	if (rc != 0) {
		if (conf->err != NULL)
			snprintf(conf->err, conf->err_len, "etcd %s: registering node %u: %s",
				 conf->source, m->node_id, rc == -EADDRINUSE ?
				 "another live process holds this node id" : strerror(-rc));
		goto fail;
	}
	/* the nodes known now go into the broker's table at open; later ones by watch */
	until = now_ms() + START_WAIT_MS;
	do {
		rc = resync(m);
	} while (rc == -ENOTCONN && now_ms() < until &&
		 nanosleep(&(struct timespec){.tv_nsec = 100000000}, NULL) == 0);
	if (rc != 0) {
		if (conf->err != NULL)
			snprintf(conf->err, conf->err_len, "etcd %s: %s", conf->source,
				 strerror(-rc));
		goto fail;
	}
	XLOG(INFO, "node %u registered under %s (lease TTL %u s), %u node(s) known",
	     m->node_id, x->prefix, x->ttl_s, m->nnodes);
	return 0;
fail:
	ms_close(m);
	return rc;
}

static int
ms_start(struct sl_membership *m)
{
	struct mse *x = m->priv;
	uint64_t until;
	size_t i;
	int rc;

	/* now with the broker: add the nodes, create the topics, install the views */
	for (i = 0; i < m->nnodes; i++)
		sl_broker_node_add(m->broker, m->nodes[i].id, htonl(m->nodes[i].ip),
				   m->nodes[i].port);
	until = now_ms() + START_WAIT_MS;
	do {
		rc = resync(m);
	} while (rc == -ENOTCONN && now_ms() < until &&
		 nanosleep(&(struct timespec){.tv_nsec = 100000000}, NULL) == 0);
	if (rc != 0)
		return rc;
	/* no controller: run for it */
	sl_controller_tick(x->ctl, now_ms(), !x->fenced && x->reachable);
	XLOG(INFO, "started: %zu topic(s), %zu partition view(s), controller %u", x->topics.n,
	     x->parts.n, sl_controller_id(x->ctl));
	return 0;
}

static int
ms_request(struct sl_membership *m, const struct sl_wviewreq *q)
{
	struct mse *x = m->priv;
	struct sl_part_meta cur, next;
	struct epart *p;
	int rc;

	/* a replica hearing its leader's ISR: the leader wrote it to etcd first, and the
	 * watch brings it here */
	if (q->kind == SL_VIEWREQ_LEADER_ISR)
		return 0;
	if (sl_broker_part_get_view(m->broker, q->topic, q->partition, &cur) != 0)
		return 0;
	p = sl_ptable_find(&x->parts, q->topic, q->partition);
	if (p == NULL || !meta_same(&cur, &p->meta))
		return 0;	/* etcd holds a newer view: it is on its way by watch */
	if (sl_membership_isr_next(&cur, q, m->node_id, &next) == 0)
		return 0;
	rc = cas_view(m, p, &next, 0);
	if (rc != 1) {
		if (rc < 0)
			XLOG(WARNING, "%s/%u: ISR change not written: %s", q->topic, q->partition,
			     strerror(-rc));
		return rc < 0 ? rc : 0;
	}
	rc = sl_broker_part_set_view(m->broker, q->topic, q->partition, &next);
	if (rc != 0) {
		XLOG(WARNING, "%s/%u: ISR change not installed: %s", q->topic, q->partition,
		     sl_strerror(rc));
		return rc;
	}
	XLOG(NOTICE, "%s/%u: node %u %s the ISR (asked by the leader, in etcd at %lld)",
	     q->topic, q->partition, q->node, q->kind == SL_VIEWREQ_ISR_JOIN ? "joins" : "leaves",
	     (long long)p->mod_rev);
	return 1;
}

static int
ms_set_view(struct sl_membership *m, const char *topic, uint16_t part,
	    const struct sl_part_meta *next)
{
	struct mse *x = m->priv;
	struct epart *p = sl_ptable_find(&x->parts, topic, part);
	int rc;

	if (p == NULL)
		return -SL_E_PARTITION;
	if (x->fenced)
		return -SL_E_IO;	/* etcd cannot be reached: nothing can be written */
	rc = cas_view(m, p, next, 0);
	if (rc == 0)
		return -SL_E_EPOCH;	/* changed meanwhile: look again */
	if (rc < 0)
		return -SL_E_IO;
	return sl_broker_part_set_view(m->broker, topic, part, next);
}

static int
ms_topic_create(struct sl_membership *m, const char *name, uint16_t nparts, uint8_t replicas,
		int disk)
{
	struct mse *x = m->priv;
	char key[KEY_MAX], *val;
	struct sl_etcd_cmp absent = {.key = key, .target = SL_ETCD_CMP_CREATE,
				     .result = SL_ETCD_EQUAL};
	struct sl_etcd_op put = {.kind = SL_ETCD_OP_PUT, .key = key};
	json_t *j;
	int rc;

	if (nparts == 0 || nparts > SL_COORD_MAX_PARTS || replicas == 0 ||
	    replicas > SL_COORD_MAX_REPLICAS || strlen(name) > SL_COORD_NAME_MAX)
		return -SL_E_INVAL;
	if (sl_name_check_str(name) != 0)
		return -SL_E_NAME;
	key_of(x, key, "topics/%s", name);
	j = json_pack("{s:i, s:i, s:s}", "partitions", (int)nparts, "replicas", (int)replicas,
		      "durability", disk ? "disk" : "memory");
	val = j != NULL ? json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	json_decref(j);
	if (val == NULL)
		return -ENOMEM;
	put.value = val;
	put.value_len = strlen(val);
	rc = sl_etcd_txn(x->e, &absent, 1, &put, 1, NULL, 0, NULL, NULL);
	free(val);
	if (rc == 0)
		return -SL_E_EXISTS;
	if (rc < 0)
		return -SL_E_IO;
	XLOG(NOTICE, "topic %s written to etcd: %u partitions of %u replicas", name, nparts,
	     replicas);
	return 0;
}

/* ---- partition moves ---- */

static int
has_id(const uint32_t *ids, uint8_t n, uint32_t id)
{
	uint8_t i;

	for (i = 0; i < n; i++)
		if (ids[i] == id)
			return 1;
	return 0;
}

static void
move_fail(struct sl_membership *m, const char *why)
{
	struct mse *x = m->priv;

	x->mv.state = MOVE_FAILED;
	snprintf(x->mv.why, sizeof(x->mv.why), "%s", why);
	XLOG(ERR, "%s/%u: move failed: %s", x->mv.topic, x->mv.part, why);
}

/* The move's next step, from poll(): once every new replica is in the ISR (etcd's view),
 * write the final view: the target replicas, the ISR within them, and if the leader is not
 * one of them the target member of the ISR with the longest log leads (epoch and session
 * + 1, as a failover: the old leader's writes are fenced by the epoch). */
static void
move_step(struct sl_membership *m)
{
	struct mse *x = m->priv;
	struct emove *mv = &x->mv;
	struct sl_membership_pos pos[SL_COORD_MAX_REPLICAS];
	struct sl_part_meta next;
	struct epart *p;
	uint8_t i;
	int rc;

	if (mv->state != MOVE_CATCHUP || x->fenced || !x->reachable)
		return;
	p = sl_ptable_find(&x->parts, mv->topic, mv->part);
	if (p == NULL) {
		move_fail(m, "the partition is gone");
		return;
	}
	for (i = 0; i < mv->ntarget; i++)
		if (!has_id(p->meta.isr, p->meta.nisr, mv->target[i]))
			break;
	if (i < mv->ntarget) {
		if (now_ms() > mv->start_ms + MOVE_TIMEOUT_MS)
			move_fail(m, "the new replicas did not catch up within 60 s");
		return;
	}
	if (mv->caught_up_ms == 0)
		mv->caught_up_ms = now_ms();
	next = p->meta;
	memcpy(next.replicas, mv->target, sizeof(mv->target[0]) * mv->ntarget);
	next.nreplicas = mv->ntarget;
	next.nisr = 0;
	memset(pos, 0, sizeof(pos));
	for (i = 0; i < p->meta.nisr; i++)
		if (has_id(mv->target, mv->ntarget, p->meta.isr[i]))
			next.isr[next.nisr++] = p->meta.isr[i];
	mv->old_leader = p->meta.leader;
	if (!has_id(mv->target, mv->ntarget, p->meta.leader)) {
		struct sl_part_meta chosen;

		/* the leader leaves: the choice a failover would make among the target's ISR
		 * members (next still names the old leader, which is not in next's ISR) */
		for (i = 0; i < next.nisr; i++) {
			pos[i].live = node_live(m, next.isr[i]);
			pos[i].known = pos_lookup(m, next.isr[i], p->topic, p->part,
						  &pos[i].committed, &pos[i].end);
		}
		if (sl_membership_failover_next(&next, pos, &chosen) != 1) {
			move_fail(m, "no live member of the new replicas in the ISR");
			return;
		}
		next = chosen;
	}
	mv->new_leader = next.leader;
	rc = cas_view(m, p, &next, 0);
	if (rc == 0)
		return;		/* changed meanwhile (an ISR change): again on the next poll */
	if (rc < 0) {
		move_fail(m, "writing the final view failed");
		return;
	}
	mv->switch_ms = now_ms();
	mv->state = MOVE_DONE;
	install(m, p);
	XLOG(NOTICE, "%s/%u: moved to %u replicas, leader %u (was %u), epoch %u: caught up in "
		     "%llu ms", p->topic, p->part, next.nreplicas, next.leader, mv->old_leader,
	     next.epoch, (unsigned long long)(mv->caught_up_ms - mv->start_ms));
}

static int
ms_move(struct sl_membership *m, const char *topic, uint16_t part, const uint32_t *ids,
	uint8_t n, char *err, size_t err_len)
{
	struct mse *x = m->priv;
	struct epart *p = sl_ptable_find(&x->parts, topic, part);
	struct sl_part_meta next;
	uint8_t i;
	int rc;

	if (p == NULL) {
		snprintf(err, err_len, "no such partition in etcd");
		return -SL_E_PARTITION;
	}
	if (x->mv.state == MOVE_CATCHUP) {
		snprintf(err, err_len, "a move of %s/%u is under way here", x->mv.topic,
			 x->mv.part);
		return -SL_E_INVAL;
	}
	if (x->fenced || !x->reachable) {
		snprintf(err, err_len, "etcd is not reachable");
		return -SL_E_IO;
	}
	for (i = 0; i < n; i++)
		if (!node_live(m, ids[i]) || has_id(ids, i, ids[i])) {
			snprintf(err, err_len, "node %u is not live (or named twice)", ids[i]);
			return -SL_E_INVAL;
		}
	/* first the union: the new replicas follow the leader, catch up, join the ISR. The
	 * same leadership (epoch and session kept): the leader adds them to its member table
	 * (repl.c, leader_add_members) and writes go on */
	next = p->meta;
	for (i = 0; i < n; i++) {
		if (has_id(next.replicas, next.nreplicas, ids[i]))
			continue;
		if (next.nreplicas == SL_COORD_MAX_REPLICAS) {
			snprintf(err, err_len, "more than %d replicas during the move",
				 SL_COORD_MAX_REPLICAS);
			return -SL_E_INVAL;
		}
		next.replicas[next.nreplicas++] = ids[i];
	}
	memset(&x->mv, 0, sizeof(x->mv));
	snprintf(x->mv.topic, sizeof(x->mv.topic), "%s", topic);
	x->mv.part = part;
	memcpy(x->mv.target, ids, sizeof(ids[0]) * n);
	x->mv.ntarget = n;
	x->mv.start_ms = now_ms();
	if (next.nreplicas != p->meta.nreplicas) {
		rc = cas_view(m, p, &next, 0);
		if (rc != 1) {
			snprintf(err, err_len, "%s", rc == 0 ? "the view changed meanwhile: again" :
				 "writing the view failed");
			return rc == 0 ? -SL_E_EPOCH : -SL_E_IO;
		}
		install(m, p);
	}
	x->mv.state = MOVE_CATCHUP;
	XLOG(NOTICE, "%s/%u: move to %u replicas started: the new ones catch up", topic, part, n);
	move_step(m);
	return 0;
}

static void
ms_move_status(struct sl_membership *m, struct sl_json *out)
{
	static const char *const names[] = {"none", "catching_up", "done", "failed"};
	const struct emove *mv = &((const struct mse *)m->priv)->mv;

	sl_json_obj_open(out, "move");
	sl_json_str(out, "state", names[mv->state]);
	if (mv->state != MOVE_NONE) {
		sl_json_str(out, "topic", mv->topic);
		sl_json_u64(out, "partition", mv->part);
	}
	if (mv->caught_up_ms != 0)
		sl_json_u64(out, "catch_up_ms", mv->caught_up_ms - mv->start_ms);
	if (mv->state == MOVE_DONE) {
		sl_json_u64(out, "old_leader", mv->old_leader);
		sl_json_u64(out, "new_leader", mv->new_leader);
		/* a leader change: from the final view's write (the old leader commits
		 * nothing after it) to the new leader's first write to etcd (it installed the
		 * view and takes writes by then): the writes' pause as this node sees it. The
		 * leader stays: its leadership goes on through the move, no pause */
		if (mv->new_leader != mv->old_leader && mv->led_ms != 0) {
			sl_json_u64(out, "switch_to_new_leader_ms", mv->led_ms - mv->switch_ms);
			sl_json_u64(out, "write_pause_ms", mv->led_ms - mv->switch_ms);
		} else if (mv->new_leader == mv->old_leader) {
			sl_json_u64(out, "write_pause_ms", 0);
		}
	}
	if (mv->state == MOVE_FAILED)
		sl_json_str(out, "why", mv->why);
	sl_json_obj_close(out);
}

/* Wait on the control socket and the watch's connection at once: a view change (a move's
 * switch, a failover) is applied as its watch event arrives, not at the loop's timeout. */
static int
ms_wait(struct sl_membership *m, int fd, int timeout_ms)
{
	struct mse *x = m->priv;
	struct pollfd pfd = { .fd = fd, .events = POLLIN };

	if (x->w != NULL)
		return sl_etcd_watch_wait_fd(x->w, fd, timeout_ms);
	return poll(&pfd, 1, timeout_ms) < 0 && errno != EINTR ? -errno : 0;
}

static void
ms_poll(struct sl_membership *m)
{
	struct mse *x = m->priv;
	struct sl_etcd_event ev;
	uint64_t now = now_ms(), t_ka, t_watch, t_pos;
	int i, rc;

	/* the control loop itself held up (a slow command, a starved CPU): said, as it
	 * delays the renewals as much as a slow etcd does */
	if (x->poll_end_ms != 0 && now > x->poll_end_ms + STALL_MS)
		XLOG(WARNING, "the control loop did not run for %llu ms",
		     (unsigned long long)(now - x->poll_end_ms));
	x->poll_start_ms = now;
	fence_check(m, 0);
	if (now >= x->next_keepalive_ms) {
		/* the call may block for its bound: fence now if the fence falls within it */
		fence_check(m, x->request_ms);
		rc = sl_etcd_lease_keepalive(x->e, x->lease, NULL);
		seen(m, rc);
		if (rc == 0) {
			x->last_renew_ms = now;		/* when it was sent */
			x->next_keepalive_ms = now + x->ttl_s * 1000 / 3;
			unfence(m);
		} else if (rc == -ENOENT) {
			XLOG(ERR, "node %u's lease expired: registering again", m->node_id);
			x->last_renew_ms = 0;
			fence_check(m, 0);	/* its partitions may be led elsewhere now */
			sl_controller_set_lease(x->ctl, 0);
			rc = lease_and_register(m, 0);
			if (rc != 0)
				XLOG(ERR, "registering again: %s", strerror(-rc));
			x->next_keepalive_ms = rc == 0 ? now_ms() + x->ttl_s * 1000 / 3 :
							 now_ms() + RETRY_MS;
			if (rc == 0)
				unfence(m);
		} else {
			/* try again soon: the fence is at 2/3 of the TTL */
			x->next_keepalive_ms = now_ms() + RETRY_MS;
		}
		fence_check(m, 0);
	}
	t_ka = now_ms();
	for (i = 0; x->w != NULL && i < MAX_EVENTS_PER_POLL; i++) {
		rc = sl_etcd_watch_poll(x->w, &ev);
		if (rc == 1) {
			sl_controller_watch_event(x->ctl, now_ms());
			apply(m, &ev.kv, ev.type == SL_ETCD_EV_DELETE);
			sl_etcd_event_free(&ev);
			continue;
		}
		if (rc < 0 && x->reachable && !x->fenced) {
			XLOG(WARNING, "watch: %s: reading everything again", strerror(-rc));
			resync(m);
		}
		break;
	}
	now = t_watch = now_ms();
	if (now >= x->next_pos_ms) {
		x->next_pos_ms = now + SL_MEMBERSHIP_POS_MS;
		publish_pos(m);
	}
	t_pos = now_ms();
	/* the controller (controller.c): elect, scan when due, silent leaders (no etcd call
	 * unless there is something to write) */
	sl_controller_tick(x->ctl, now, !x->fenced && x->reachable);
	move_step(m);
	x->poll_end_ms = now_ms();
	if (x->poll_end_ms > x->poll_start_ms + STALL_MS)
		XLOG(WARNING, "one poll took %llu ms (keep-alive %llu, watch %llu, positions "
			      "%llu, controller %llu)",
		     (unsigned long long)(x->poll_end_ms - x->poll_start_ms),
		     (unsigned long long)(t_ka - x->poll_start_ms),
		     (unsigned long long)(t_watch - t_ka), (unsigned long long)(t_pos - t_watch),
		     (unsigned long long)(x->poll_end_ms - t_pos));
}

static void
ms_describe(struct sl_membership *m, struct sl_json *out)
{
	struct mse *x = m->priv;
	struct sl_controller_stats st;
	uint64_t now = now_ms();

	sl_json_str(out, "etcd_endpoint", sl_etcd_endpoint(x->e));
	sl_json_bool(out, "etcd_reachable", x->reachable);
	if (!x->reachable) {
		sl_json_u64(out, "etcd_unreachable_ms", now - x->unreachable_ms);
		sl_json_bool(out, "etcd_down", x->etcd_down);
	}
	sl_json_str(out, "etcd_prefix", x->prefix);
	sl_json_u64(out, "lease_ttl_s", x->ttl_s);
	sl_json_u64(out, "lease_renewed_ms_ago", now - x->last_renew_ms);
	sl_json_bool(out, "fenced", x->fenced);
	sl_json_u64(out, "fences", x->fences);
	if (x->fences != 0)
		sl_json_u64(out, "last_fence_after_ms", x->fence_age_ms);
	sl_controller_get_stats(x->ctl, &st);
	if (sl_controller_id(x->ctl) != 0)
		sl_json_u64(out, "controller", sl_controller_id(x->ctl));
	else
		sl_json_null(out, "controller");
	sl_json_bool(out, "this_node_controls", sl_controller_acting(x->ctl));
	sl_json_u64(out, "failovers", st.failovers);
	sl_json_u64(out, "failovers_for_silence", st.suspects);
	sl_json_u64(out, "partitions_placed", st.placed);
	sl_json_u64(out, "partitions_waiting", st.waiting);
	sl_json_u64(out, "controller_txns", st.txns);
	sl_json_u64(out, "cas_lost", x->cas_lost + st.cas_lost);
}

static int
ms_node_state(struct sl_membership *m, uint32_t id, int *controller)
{
	const struct mse *x = m->priv;

	*controller = sl_controller_id(x->ctl) == id;
	return node_live(m, id);
}

const struct sl_membership_ops sl_membership_etcd_ops = {
	.name = "etcd",
	.open = ms_open,
	.start = ms_start,
	.request = ms_request,
	.set_view = ms_set_view,
	.poll = ms_poll,
	.close = ms_close,
	.topic_create = ms_topic_create,
	.describe = ms_describe,
	.node_state = ms_node_state,
	.wait = ms_wait,
	.move = ms_move,
	.move_status = ms_move_status,
};
