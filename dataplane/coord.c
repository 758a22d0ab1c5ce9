/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rte_jhash.h>

#include "coord.h"
#include "err.h"
#include "wire.h"

struct sl_coord {
	struct cds_lfht *topics;
	uint32_t node_id;
	uint32_t max_topics;
	uint32_t ntopics;
	uint64_t mem_budget;		/* 0: none */
	uint64_t mem_used;		/* sum of the published topics' mem */
};

static uint32_t
name_hash(const char *name, uint32_t len)
{
	/* names come straight out of packets at any alignment: rte_jhash reads 32-bit
	 * words, so hash an aligned copy (at most SL_COORD_NAME_MAX bytes) */
	uint32_t words[(SL_COORD_NAME_MAX + 3) / 4];

	if (len > SL_COORD_NAME_MAX)
		len = SL_COORD_NAME_MAX;
	memcpy(words, name, len);
	return rte_jhash(words, len, 0x5c1ce);
}

static int
name_match(struct cds_lfht_node *node, const void *key)
{
	const struct sl_topic *t = caa_container_of(node, struct sl_topic, node);
	const struct sl_topic *k = key;

	return t->name_len == k->name_len && memcmp(t->name, k->name, t->name_len) == 0;
}

struct sl_coord *
sl_coord_open(const struct sl_coord_conf *conf)
{
	struct sl_coord *c;

	if (conf == NULL) {
		errno = EINVAL;
		return NULL;
	}
	c = calloc(1, sizeof(*c));
	if (c == NULL)
		goto fail;
	c->node_id = conf->node_id;
	c->max_topics = conf->max_topics ? conf->max_topics : SL_COORD_MAX_TOPICS_DEFAULT;
	c->mem_budget = conf->mem_budget;
	c->topics = cds_lfht_new(64, 64, 0, CDS_LFHT_AUTO_RESIZE | CDS_LFHT_ACCOUNTING, NULL);
	if (c->topics == NULL)
		goto fail;
	return c;
fail:
	free(c);
	errno = ENOMEM;
	return NULL;
}

void
sl_coord_close(struct sl_coord *c)
{
	if (c == NULL)
		return;
	if (c->topics != NULL)
		cds_lfht_destroy(c->topics, NULL);
	free(c);
}

uint32_t
sl_coord_node_id(const struct sl_coord *c)
{
	return c->node_id;
}

uint32_t
sl_coord_topic_count(const struct sl_coord *c)
{
	return __atomic_load_n(&c->ntopics, __ATOMIC_RELAXED);
}

uint64_t
sl_coord_mem_used(const struct sl_coord *c)
{
	return __atomic_load_n(&c->mem_used, __ATOMIC_RELAXED);
}

void
sl_coord_limits(const struct sl_coord *c, uint32_t *max_topics, uint64_t *mem_budget)
{
	*max_topics = c->max_topics;
	*mem_budget = c->mem_budget;
}

void
sl_coord_set_budget(struct sl_coord *c, uint64_t mem_budget)
{
	c->mem_budget = mem_budget;
}

uint64_t
sl_coord_mem_room(const struct sl_coord *c)
{
	uint64_t used = sl_coord_mem_used(c);

	if (c->mem_budget == 0)
		return UINT64_MAX;
	return used < c->mem_budget ? c->mem_budget - used : 0;
}

void
sl_coord_topic_grew(struct sl_coord *c, struct sl_topic *t, uint64_t mem)
{
	t->mem += mem;
	__atomic_add_fetch(&c->mem_used, mem, __ATOMIC_RELAXED);
}

int
sl_coord_room(const struct sl_coord *c, uint64_t mem)
{
	uint64_t used = sl_coord_mem_used(c);

	if (sl_coord_topic_count(c) >= c->max_topics)
		return -SL_E_CAPACITY;
	if (c->mem_budget != 0 && (mem > c->mem_budget || used > c->mem_budget - mem))
		return -SL_E_CAPACITY;
	return 0;
}

struct sl_topic *
sl_coord_topic_find(struct sl_coord *c, const char *name, uint32_t len)
{
	struct cds_lfht_iter it;
	struct cds_lfht_node *node;
	struct sl_topic key;

	if (len == 0 || len > SL_COORD_NAME_MAX)
		return NULL;
	memcpy(key.name, name, len);
	key.name_len = (uint8_t)len;
	cds_lfht_lookup(c->topics, name_hash(name, len), name_match, &key, &it);
	node = cds_lfht_iter_get_node(&it);
	return node ? caa_container_of(node, struct sl_topic, node) : NULL;
}

struct sl_topic *
sl_coord_topic_alloc(struct sl_coord *c, const char *name, uint16_t nparts,
		     const uint16_t *owners, void *const *states, uint32_t flags)
{
	struct sl_topic *t = NULL;
	size_t len = strlen(name);
	struct timespec ts;
	uint16_t i;

	if (sl_wire_check_name(name, len) != 0 || nparts == 0 || nparts > SL_COORD_MAX_PARTS) {
		errno = EINVAL;
		return NULL;
	}
	t = calloc(1, sizeof(*t));
	if (t == NULL)
		goto nomem;
	t->parts = calloc(nparts, sizeof(*t->parts));
	if (t->parts == NULL)
		goto nomem;
	memcpy(t->name, name, len);
	t->name_len = (uint8_t)len;
	t->nparts = nparts;
	t->flags = flags;
	clock_gettime(CLOCK_REALTIME, &ts);
	t->created_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	cds_lfht_node_init(&t->node);
	for (i = 0; i < nparts; i++) {
		struct sl_part_meta *m = calloc(1, sizeof(*m));

		if (m == NULL)
			goto nomem;
		m->leader = c->node_id;
		m->epoch = 1;
		m->leader_session = 0;	/* no view installed yet: this node alone */
		m->nreplicas = 1;
		m->nisr = 1;
		m->replicas[0] = c->node_id;
		m->isr[0] = c->node_id;
		t->parts[i].topic = t;
		t->parts[i].id = i;
		t->parts[i].owner = owners[i];
		t->parts[i].state = states[i];
		t->parts[i].meta = m;
	}
	return t;
nomem:
	sl_coord_topic_free(t);
	errno = ENOMEM;
	return NULL;
}

int
sl_coord_topic_add(struct sl_coord *c, struct sl_topic *t)
{
	struct cds_lfht_node *old;

	if (sl_coord_room(c, t->mem) != 0)
		return -SL_E_CAPACITY;
	old = cds_lfht_add_unique(c->topics, name_hash(t->name, t->name_len), name_match, t,
				  &t->node);
	if (old != &t->node)
		return -SL_E_EXISTS;
	__atomic_add_fetch(&c->ntopics, 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&c->mem_used, t->mem, __ATOMIC_RELAXED);
	return 0;
}

int
sl_coord_topic_del(struct sl_coord *c, struct sl_topic *t)
{
	if (cds_lfht_del(c->topics, &t->node) != 0)
		return -ENOENT;
	__atomic_sub_fetch(&c->ntopics, 1, __ATOMIC_RELAXED);
	__atomic_sub_fetch(&c->mem_used, t->mem, __ATOMIC_RELAXED);
	return 0;
}

void
sl_coord_topic_free(struct sl_topic *t)
{
	uint16_t i;

	if (t == NULL)
		return;
	if (t->parts != NULL) {
		for (i = 0; i < t->nparts; i++)
			free(t->parts[i].meta);
		free(t->parts);
	}
	free(t);
}

static void
meta_free_cb(struct rcu_head *head)
{
	free(caa_container_of(head, struct sl_part_meta, rcu));
}

int
sl_coord_part_set_meta(struct sl_coord_part *p, const struct sl_part_meta *m)
{
	struct sl_part_meta *n = malloc(sizeof(*n)), *old;

	if (n == NULL)
		return -ENOMEM;
	*n = *m;
	old = rcu_xchg_pointer(&p->meta, n);
	if (old != NULL)
		call_rcu(&old->rcu, meta_free_cb);
	return 0;
}

void
sl_coord_foreach(struct sl_coord *c, int (*fn)(void *arg, struct sl_topic *t), void *arg)
{
	struct cds_lfht_iter it;
	struct sl_topic *t;

	cds_lfht_for_each_entry(c->topics, &it, t, node) {
		if (fn(arg, t) != 0)
			break;
	}
}
