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
 * session (CAS on the partition key); every node installs it by watch.
 *
 * Calling context: every function runs on the control thread; the etcd calls are blocking
 * HTTP requests bounded by the client's timeouts (control/etcd.h).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include <rte_common.h>
#include <rte_log.h>

#include "cluster.h"
#include "err.h"
#include "etcd.h"
#include "membership.h"
#include "name.h"
#include "persist.h"

RTE_LOG_REGISTER_SUFFIX(sl_membership_etcd_logtype, membership.etcd, INFO);
#define XLOG(level, fmt, ...) \
	rte_log(RTE_LOG_##level, sl_membership_etcd_logtype, "membership: etcd: " fmt "\n", \
		##__VA_ARGS__)

#define KEY_MAX 256
#define PREFIX_MAX 128
#define SCAN_MS 1000			/* the controller re-checks every partition */
#define MAX_EVENTS_PER_POLL 1024

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
	uint64_t next_scan_ms;
	int64_t rev;			/* store revision of the last full read */
	uint32_t controller_id;		/* 0: none known */
	int controller;			/* this node holds P/controller */
	uint8_t live[SL_MEMBERSHIP_MAX_NODES];	/* by index in m->nodes */
	struct etopic *topics;
	size_t ntopics, ctopics;
	struct epart *parts;
	size_t nparts, cparts;
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

static char *
part_json(const struct sl_part_meta *m)
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

static int
part_parse(const char *s, size_t len, struct sl_part_meta *m)
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

static struct etopic *
topic_find(struct mse *x, const char *name)
{
	size_t i;

	for (i = 0; i < x->ntopics; i++)
		if (strcmp(x->topics[i].name, name) == 0)
			return &x->topics[i];
	return NULL;
}

static struct epart *
part_find(struct mse *x, const char *topic, uint16_t part, int add)
{
	struct epart *p;
	size_t i;

	for (i = 0; i < x->nparts; i++)
		if (x->parts[i].part == part && strcmp(x->parts[i].topic, topic) == 0)
			return &x->parts[i];
	if (!add)
		return NULL;
	if (x->nparts == x->cparts) {
		size_t c = x->cparts != 0 ? x->cparts * 2 : 64;

		p = realloc(x->parts, c * sizeof(*p));
		if (p == NULL)
			return NULL;
		x->parts = p;
		x->cparts = c;
	}
	p = &x->parts[x->nparts++];
	memset(p, 0, sizeof(*p));
	snprintf(p->topic, sizeof(p->topic), "%s", topic);
	p->part = part;
	return p;
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

/* ---- applying what etcd holds ---- */

/* Create the topic on this node if it is not there (as many partitions as etcd says, or
 * at least part + 1 while the topic key is unknown). */
static int
topic_local(struct sl_membership *m, const char *name, uint16_t part)
{
	struct mse *x = m->priv;
	const struct etopic *t = topic_find(x, name);
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

	if (m->broker == NULL)
		return;
	rc = sl_broker_part_get_view(m->broker, p->topic, p->part, &cur);
	if (rc == -SL_E_TOPIC) {
		rc = topic_local(m, p->topic, p->part);
		if (rc == 0)
			rc = sl_broker_part_get_view(m->broker, p->topic, p->part, &cur);
	}
	if (rc == 0 && meta_same(&cur, &p->meta))
		return;
	if (rc == 0)
		rc = sl_broker_part_set_view(m->broker, p->topic, p->part, &p->meta);
	if (rc != 0) {
		XLOG(WARNING, "%s/%u: view from etcd not installed: %s", p->topic, p->part,
		     sl_strerror(rc));
		return;
	}
	XLOG(INFO, "%s/%u: view installed: leader %u epoch %u session %llu, ISR of %u, "
		   "writes %s", p->topic, p->part, p->meta.leader, p->meta.epoch,
	     (unsigned long long)p->meta.leader_session, p->meta.nisr,
	     p->meta.writes_disabled ? "off" : "on");
}

static void controller_scan(struct sl_membership *m);
static void elect(struct sl_membership *m);

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
			if (x->controller)
				controller_scan(m);
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
		XLOG(NOTICE, "node %u is live (%s:%u)", m->nodes[i].id, ip, m->nodes[i].port);
		if (x->controller)
			controller_scan(m);
	}
}

static void
on_controller(struct sl_membership *m, const struct sl_etcd_kv *kv, int del)
{
	struct mse *x = m->priv;
	json_int_t id = 0;
	json_t *j;

	if (del) {
		XLOG(NOTICE, "controller %u gone", x->controller_id);
		x->controller_id = 0;
		x->controller = 0;
		elect(m);
		return;
	}
	j = json_loadb(kv->value, kv->value_len, 0, NULL);
	if (j != NULL && json_unpack(j, "{s:I}", "id", &id) == 0 && id > 0) {
		x->controller_id = (uint32_t)id;
		x->controller = id == m->node_id && kv->lease == x->lease;
	}
	json_decref(j);
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
		t = topic_find(x, name);
		if (t != NULL)
			*t = x->topics[--x->ntopics];
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
	t = topic_find(x, name);
	if (t == NULL) {
		if (x->ntopics == x->ctopics) {
			size_t c = x->ctopics != 0 ? x->ctopics * 2 : 16;
			struct etopic *nt = realloc(x->topics, c * sizeof(*nt));

			if (nt == NULL) {
				json_decref(j);
				return;
			}
			x->topics = nt;
			x->ctopics = c;
		}
		t = &x->topics[x->ntopics++];
		snprintf(t->name, sizeof(t->name), "%s", name);
	}
	t->nparts = (uint16_t)parts;
	t->replicas = (uint8_t)reps;
	t->disk = strcmp(dur, "disk") == 0;
	json_decref(j);
	if (m->broker != NULL)
		topic_local(m, name, 0);
	if (x->controller)
		controller_scan(m);
}

static void
on_part(struct sl_membership *m, const char *rest, const struct sl_etcd_kv *kv, int del)
{
	struct mse *x = m->priv;
	char topic[SL_COORD_NAME_MAX + 1];
	const char *slash = strrchr(rest, '/');
	struct sl_part_meta meta;
	struct epart *p;
	unsigned long part;
	char *end;

	if (slash == NULL || slash == rest || (size_t)(slash - rest) > SL_COORD_NAME_MAX)
		return;
	memcpy(topic, rest, (size_t)(slash - rest));
	topic[slash - rest] = '\0';
	part = strtoul(slash + 1, &end, 10);
	if (*end != '\0' || part >= SL_COORD_MAX_PARTS)
		return;
	if (del) {
		p = part_find(x, topic, (uint16_t)part, 0);
		if (p != NULL)
			*p = x->parts[--x->nparts];
		return;
	}
	if (part_parse(kv->value, kv->value_len, &meta) != 0) {
		XLOG(WARNING, "%s: not a partition view", kv->key);
		return;
	}
	p = part_find(x, topic, (uint16_t)part, 1);
	if (p == NULL)
		return;
	p->mod_rev = kv->mod_revision;
	p->meta = meta;
	install(m, p);
}

/* One key under the prefix, read or watched. */
static void
apply(struct sl_membership *m, const struct sl_etcd_kv *kv, int del)
{
	struct mse *x = m->priv;
	size_t pl = strlen(x->prefix);
	const char *rest;

	if (kv->key_len <= pl + 1 || strncmp(kv->key, x->prefix, pl) != 0 || kv->key[pl] != '/')
		return;
	rest = kv->key + pl + 1;
	if (strncmp(rest, "nodes/", 6) == 0)
		on_node(m, rest + 6, kv, del);
	else if (strcmp(rest, "controller") == 0)
		on_controller(m, kv, del);
	else if (strncmp(rest, "topics/", 7) == 0)
		on_topic(m, rest + 7, kv, del);
	else if (strncmp(rest, "partitions/", 11) == 0)
		on_part(m, rest + 11, kv, del);
}

/* Read everything under the prefix (nodes, then the controller, topics, partitions: each
 * needs the one before) and watch from the revision after. */
static int
resync(struct sl_membership *m)
{
	static const char *const order[] = {"nodes/", "controller", "topics/", "partitions/"};
	struct mse *x = m->priv;
	struct sl_etcd_kvs all;
	char key[KEY_MAX];
	size_t i, k, pl = strlen(x->prefix) + 1;
	int rc;

	key_of(x, key, "%s", "");
	rc = sl_etcd_range(x->e, key, 1, 0, &all);
	if (rc != 0) {
		XLOG(ERR, "reading %s: %s", key, strerror(-rc));
		return rc;
	}
	for (k = 0; k < RTE_DIM(order); k++)
		for (i = 0; i < all.n; i++)
			if (all.kv[i].key_len > pl &&
			    strncmp(all.kv[i].key + pl, order[k], strlen(order[k])) == 0)
				apply(m, &all.kv[i], 0);
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
	uint64_t until = now_ms() + wait_ms;
	int rc;

	rc = sl_etcd_lease_grant(x->e, x->ttl_s, &x->lease, NULL);
	if (rc != 0)
		return rc;
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

static void
elect(struct sl_membership *m)
{
	struct mse *x = m->priv;
	char key[KEY_MAX], val[64];
	struct sl_etcd_cmp absent = {.key = key, .target = SL_ETCD_CMP_CREATE,
				     .result = SL_ETCD_EQUAL};
	struct sl_etcd_op put = {.kind = SL_ETCD_OP_PUT, .key = key, .value = val,
				 .lease = x->lease};
	int rc;

	if (x->controller_id != 0 || x->lease == 0)
		return;
	key_of(x, key, "controller");
	put.value_len = (size_t)snprintf(val, sizeof(val), "{\"id\":%u}", m->node_id);
	rc = sl_etcd_txn(x->e, &absent, 1, &put, 1, NULL, 0, NULL, NULL);
	if (rc == 1) {
		x->controller = 1;
		x->controller_id = m->node_id;
		XLOG(NOTICE, "this node (%u) is the controller", m->node_id);
		controller_scan(m);
	} else if (rc < 0) {
		XLOG(WARNING, "election: %s", strerror(-rc));
	}
	/* rc 0: another node holds it; the watch tells us which */
}

/* ---- writing views (CAS on the partition key) ---- */

/* Write next for partition p if its key is still at p->mod_rev (0: must not exist). 1
 * written (p updated), 0 someone changed it first, or a negative errno. */
static int
cas_view(struct sl_membership *m, struct epart *p, const struct sl_part_meta *next)
{
	struct mse *x = m->priv;
	char key[KEY_MAX], *val = part_json(next);
	struct sl_etcd_cmp cmp = {.key = key, .target = p->mod_rev != 0 ? SL_ETCD_CMP_MOD :
									   SL_ETCD_CMP_CREATE,
				  .result = SL_ETCD_EQUAL, .num = p->mod_rev};
	struct sl_etcd_op put = {.kind = SL_ETCD_OP_PUT, .key = key, .value = val};
	int64_t rev = 0;
	int rc;

	if (val == NULL)
		return -ENOMEM;
	key_of(x, key, "partitions/%s/%u", p->topic, p->part);
	put.value_len = strlen(val);
	rc = sl_etcd_txn(x->e, &cmp, 1, &put, 1, NULL, 0, &rev, NULL);
	free(val);
	if (rc == 1) {
		p->mod_rev = rev;
		p->meta = *next;
	}
	return rc;
}

/* ---- the controller ---- */

static int
cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* Place a topic's partitions that etcd does not hold yet: partition p's replicas are the
 * live nodes from index p on (ids sorted), its leader the first: leaders spread evenly. */
static void
place(struct sl_membership *m, const struct etopic *t)
{
	struct mse *x = m->priv;
	uint32_t live[SL_MEMBERSHIP_MAX_NODES], n = 0, i;
	struct sl_part_meta meta;
	struct epart *p;
	uint16_t part;
	int rc;

	for (i = 0; i < m->nnodes; i++)
		if (x->live[i])
			live[n++] = m->nodes[i].id;
	qsort(live, n, sizeof(live[0]), cmp_u32);
	for (part = 0; part < t->nparts; part++) {
		if (part_find(x, t->name, part, 0) != NULL)
			continue;
		if (n < t->replicas) {
			XLOG(WARNING, "topic %s: %u replicas wanted, %u nodes live: waiting",
			     t->name, t->replicas, n);
			return;
		}
		memset(&meta, 0, sizeof(meta));
		meta.nreplicas = meta.nisr = t->replicas;
		for (i = 0; i < t->replicas; i++)
			meta.replicas[i] = meta.isr[i] = live[(part + i) % n];
		meta.leader = meta.replicas[0];
		meta.epoch = 1;
		meta.leader_session = 1;
		p = part_find(x, t->name, part, 1);
		if (p == NULL)
			return;
		rc = cas_view(m, p, &meta);
		if (rc != 1) {
			/* someone wrote it first (the watch brings it) or etcd failed */
			*p = x->parts[--x->nparts];
			continue;
		}
		XLOG(NOTICE, "%s/%u placed: leader %u, %u replicas", t->name, part, meta.leader,
		     meta.nreplicas);
		install(m, p);
	}
}

/* A partition whose leader's node is gone: the first live ISR member (every ISR member
 * holds every committed record) leads, with the next epoch and leader session. */
static void
failover(struct sl_membership *m, struct epart *p)
{
	struct sl_part_meta next = p->meta;
	uint32_t gone = p->meta.leader;
	uint8_t i;
	int rc;

	if (node_live(m, p->meta.leader))
		return;
	next.nisr = 0;
	for (i = 0; i < p->meta.nisr; i++)
		if (node_live(m, p->meta.isr[i]))
			next.isr[next.nisr++] = p->meta.isr[i];
	if (next.nisr == 0) {
		XLOG(ERR, "%s/%u: leader %u gone and no live ISR member: the partition waits "
			  "for one", p->topic, p->part, p->meta.leader);
		return;
	}
	next.leader = next.isr[0];
	next.epoch = p->meta.epoch + 1;
	next.leader_session = p->meta.leader_session + 1;
	next.writes_disabled = 0;
	rc = cas_view(m, p, &next);
	if (rc == 1) {
		XLOG(NOTICE, "%s/%u: leader %u gone: node %u leads, epoch %u, ISR of %u",
		     p->topic, p->part, gone, next.leader, next.epoch, next.nisr);
		install(m, p);
	} else if (rc < 0) {
		XLOG(WARNING, "%s/%u: failover not written: %s", p->topic, p->part, strerror(-rc));
	}
}

static void
controller_scan(struct sl_membership *m)
{
	struct mse *x = m->priv;
	size_t i;

	x->next_scan_ms = now_ms() + SCAN_MS;
	for (i = 0; i < x->ntopics; i++)
		place(m, &x->topics[i]);
	for (i = 0; i < x->nparts; i++)
		failover(m, &x->parts[i]);
}

/* ---- the backend's operations ---- */

static void
ms_close(struct sl_membership *m)
{
	struct mse *x = m->priv;

	if (x == NULL)
		return;
	sl_etcd_watch_close(x->w);
	if (x->lease != 0 && x->e != NULL)
		sl_etcd_lease_revoke(x->e, x->lease);	/* others fail over at once */
	sl_etcd_close(x->e);
	free(x->topics);
	free(x->parts);
	free(x);
	m->priv = NULL;
}

static int
ms_open(struct sl_membership *m, const struct sl_membership_conf *conf)
{
	struct sl_etcd_conf ec = {.endpoints = conf->source};
	const char *prefix = conf->prefix != NULL ? conf->prefix : SL_MEMBERSHIP_ETCD_PREFIX;
	size_t pl = strlen(prefix);
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
	snprintf(x->prefix, sizeof(x->prefix), "%s", prefix);
	x->ip = conf->ip;
	x->port = conf->port;
	x->ttl_s = conf->lease_ttl_s != 0 ? conf->lease_ttl_s : SL_MEMBERSHIP_ETCD_TTL_S;
	x->e = sl_etcd_open(&ec);
	if (x->e == NULL) {
		rc = -EINVAL;
		if (conf->err != NULL)
			snprintf(conf->err, conf->err_len, "etcd: bad endpoint list '%s'",
				 conf->source);
		goto fail;
	}
	rc = lease_and_register(m, (uint64_t)x->ttl_s * 2000 + 1000);
	if (rc != 0) {
		if (conf->err != NULL)
			snprintf(conf->err, conf->err_len, "etcd %s: registering node %u: %s",
				 conf->source, m->node_id, rc == -EADDRINUSE ?
				 "another live process holds this node id" : strerror(-rc));
		goto fail;
	}
	/* the nodes known now go into the broker's table at open; later ones by watch */
	rc = resync(m);
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
	size_t i;
	int rc;

	/* now with the broker: add the nodes, create the topics, install the views */
	for (i = 0; i < m->nnodes; i++)
		sl_broker_node_add(m->broker, m->nodes[i].id, htonl(m->nodes[i].ip),
				   m->nodes[i].port);
	rc = resync(m);
	if (rc != 0)
		return rc;
	if (x->controller_id == 0)
		elect(m);
	XLOG(INFO, "started: %zu topic(s), %zu partition view(s), controller %u", x->ntopics,
	     x->nparts, x->controller_id);
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
	p = part_find(x, q->topic, q->partition, 0);
	if (p == NULL || !meta_same(&cur, &p->meta))
		return 0;	/* etcd holds a newer view: it is on its way by watch */
	if (sl_membership_isr_next(&cur, q, m->node_id, &next) == 0)
		return 0;
	rc = cas_view(m, p, &next);
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
	struct epart *p = part_find(x, topic, part, 0);
	int rc;

	if (p == NULL)
		return -SL_E_PARTITION;
	rc = cas_view(m, p, next);
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

static void
ms_poll(struct sl_membership *m)
{
	struct mse *x = m->priv;
	struct sl_etcd_event ev;
	uint64_t now = now_ms();
	int i, rc;

	if (now >= x->next_keepalive_ms) {
		x->next_keepalive_ms = now + x->ttl_s * 1000 / 3;
		rc = sl_etcd_lease_keepalive(x->e, x->lease, NULL);
		if (rc == -ENOENT) {
			XLOG(ERR, "node %u's lease expired: registering again", m->node_id);
			x->controller = 0;
			rc = lease_and_register(m, 0);
			if (rc != 0)
				XLOG(ERR, "registering again: %s", strerror(-rc));
			elect(m);
		} else if (rc != 0) {
			XLOG(WARNING, "lease keep-alive: %s", strerror(-rc));
		}
	}
	for (i = 0; x->w != NULL && i < MAX_EVENTS_PER_POLL; i++) {
		rc = sl_etcd_watch_poll(x->w, &ev);
		if (rc == 1) {
			apply(m, &ev.kv, ev.type == SL_ETCD_EV_DELETE);
			sl_etcd_event_free(&ev);
			continue;
		}
		if (rc < 0) {
			XLOG(WARNING, "watch: %s: reading everything again", strerror(-rc));
			resync(m);
		}
		break;
	}
	if (x->controller && now >= x->next_scan_ms)
		controller_scan(m);
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
};
