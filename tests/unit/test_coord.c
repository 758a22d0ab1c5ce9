/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * Unit test of the coordinator data (dataplane/coord.c): topic allocation (name and
 * partition-count checks, the default single-replica view of each partition), publish,
 * lookup (exact names of any alignment), duplicates, the topic limit, delete and
 * re-create, foreach, and the partition view published under RCU: a reader holding the
 * old view keeps reading it until its quiescent state, and a reader thread running
 * against a writer that replaces views and re-creates a topic always sees whole,
 * never-freed objects (run it under ASan). The test threads are liburcu QSBR threads,
 * as the coordinator expects. No EAL.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <urcu-qsbr.h>

#include "coord.h"
#include "err.h"
#include "check.h"

static uint16_t owners[SL_COORD_MAX_PARTS + 1];
static void *states[SL_COORD_MAX_PARTS + 1];

static struct sl_coord *
open_coord(uint32_t node, uint32_t max_topics)
{
	struct sl_coord_conf cc = {.node_id = node, .max_topics = max_topics};

	return sl_coord_open(&cc);
}

static struct sl_topic *
alloc_topic(struct sl_coord *c, const char *name, uint16_t nparts)
{
	return sl_coord_topic_alloc(c, name, nparts, owners, states, 0);
}

static void
test_alloc(void)
{
	struct sl_coord *c = open_coord(7, 0);
	char long_name[SL_COORD_NAME_MAX + 2];
	struct sl_topic *t;
	struct timespec ts;
	uint64_t now;
	uint16_t i;
	int ok = 1;

	errno = 0;
	CHECK(sl_coord_open(NULL) == NULL && errno == EINVAL, "open without a conf: EINVAL");
	CHECK(c != NULL && sl_coord_node_id(c) == 7 && sl_coord_topic_count(c) == 0,
	      "open: node 7, no topics");
	if (c == NULL)
		return;
	errno = 0;
	CHECK(alloc_topic(c, "", 1) == NULL && errno == EINVAL, "empty name: EINVAL");
	errno = 0;
	CHECK(alloc_topic(c, "a b", 1) == NULL && errno == EINVAL, "name with a space: EINVAL");
	memset(long_name, 'n', sizeof(long_name) - 1);
	long_name[sizeof(long_name) - 1] = '\0';
	errno = 0;
	CHECK(alloc_topic(c, long_name, 1) == NULL && errno == EINVAL, "65-byte name: EINVAL");
	errno = 0;
	CHECK(alloc_topic(c, "t", 0) == NULL && errno == EINVAL, "0 partitions: EINVAL");
	errno = 0;
	CHECK(alloc_topic(c, "t", SL_COORD_MAX_PARTS + 1) == NULL && errno == EINVAL,
	      "%u partitions: EINVAL", SL_COORD_MAX_PARTS + 1);

	long_name[SL_COORD_NAME_MAX] = '\0';
	t = alloc_topic(c, long_name, 1);
	CHECK(t != NULL && t->name_len == SL_COORD_NAME_MAX &&
		      strcmp(t->name, long_name) == 0,
	      "a 64-byte name is fine");
	sl_coord_topic_free(t);

	for (i = 0; i < 3; i++) {
		owners[i] = (uint16_t)(i % 2);
		states[i] = &owners[i];
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	now = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	t = sl_coord_topic_alloc(c, "orders.eu-1_#x", 3, owners, states, SL_COORD_TOPIC_AUTO);
	CHECK(t != NULL && strcmp(t->name, "orders.eu-1_#x") == 0 && t->name_len == 14 &&
		      t->nparts == 3 && t->flags == SL_COORD_TOPIC_AUTO &&
		      t->created_ns + 5000000000ull > now && t->created_ns < now + 5000000000ull,
	      "alloc: name, partitions, flags, creation time");
	if (t == NULL)
		return;
	for (i = 0; i < 3; i++) {
		const struct sl_coord_part *p = &t->parts[i];
		const struct sl_part_meta *m = p->meta;

		ok &= p->topic == t && p->id == i && p->owner == i % 2 && p->state == &owners[i];
		ok &= m != NULL && m->leader == 7 && m->epoch == 1 && m->leader_session == 0 &&
		      m->nreplicas == 1 && m->nisr == 1 && m->replicas[0] == 7 &&
		      m->isr[0] == 7 && !m->writes_disabled;
	}
	CHECK(ok, "each partition: its owner and state, a view where this node alone leads, "
		  "epoch 1, no session");
	rcu_read_lock();
	CHECK(sl_coord_topic_find(c, "orders.eu-1_#x", 14) == NULL && sl_coord_topic_count(c) == 0,
	      "an allocated topic is not visible before it is added");
	rcu_read_unlock();
	sl_coord_topic_free(t);
	sl_coord_close(c);
}

static int
count_cb(void *arg, struct sl_topic *t)
{
	uint32_t *n = arg;

	(void)t;
	return ++*n == 2;	/* stop after the second */
}

static int
all_cb(void *arg, struct sl_topic *t)
{
	uint32_t *mask = arg;

	*mask |= 1u << (t->name[0] - 'a');
	return 0;
}

static void
test_add_find_del(void)
{
	struct sl_coord *c = open_coord(1, 3);
	struct sl_topic *a, *b, *dup, *d, *e;
	char buf[16] = "xalphaZZ";
	uint32_t n = 0, mask = 0;
	int rc;

	if (c == NULL)
		return;
	a = alloc_topic(c, "alpha", 1);
	b = alloc_topic(c, "beta", 2);
	rc = sl_coord_topic_add(c, a);
	CHECK(rc == 0 && sl_coord_topic_add(c, b) == 0 && sl_coord_topic_count(c) == 2,
	      "add two topics (%d)", rc);
	CHECK(sl_coord_topic_find(c, "alpha", 5) == a && sl_coord_topic_find(c, "beta", 4) == b,
	      "find each by name");
	CHECK(sl_coord_topic_find(c, buf + 1, 5) == a,
	      "find with a name at an odd address, not terminated (from a packet)");
	CHECK(sl_coord_topic_find(c, "alph", 4) == NULL &&
		      sl_coord_topic_find(c, "alphaa", 6) == NULL &&
		      sl_coord_topic_find(c, "Alpha", 5) == NULL &&
		      sl_coord_topic_find(c, "alpha", 0) == NULL,
	      "a prefix, a longer name, another case, length 0: not found");
	memset(buf, 'a', sizeof(buf));
	CHECK(sl_coord_topic_find(c, buf, SL_COORD_NAME_MAX + 1) == NULL,
	      "a length over 64: not found");

	dup = alloc_topic(c, "alpha", 4);
	rc = sl_coord_topic_add(c, dup);
	CHECK(rc == -SL_E_EXISTS && sl_coord_topic_count(c) == 2 &&
		      sl_coord_topic_find(c, "alpha", 5) == a,
	      "a second alpha: -SL_E_EXISTS, the first stays (%d)", rc);
	sl_coord_topic_free(dup);

	d = alloc_topic(c, "delta", 1);
	e = alloc_topic(c, "echo", 1);
	CHECK(sl_coord_room(c, 0) == 0, "max_topics 3, 2 topics: room for one more");
	CHECK(sl_coord_topic_add(c, d) == 0 && sl_coord_room(c, 0) == -SL_E_CAPACITY &&
		      sl_coord_topic_add(c, e) == -SL_E_CAPACITY &&
		      sl_coord_topic_count(c) == 3 && sl_coord_topic_find(c, "echo", 4) == NULL,
	      "max_topics 3: no room, the 4th add is -SL_E_CAPACITY and not visible");

	sl_coord_foreach(c, all_cb, &mask);
	CHECK(mask == ((1u << 0) | (1u << 1) | (1u << 3)), "foreach visits alpha, beta, delta");
	sl_coord_foreach(c, count_cb, &n);
	CHECK(n == 2, "foreach stops when the callback returns non-zero");

	rc = sl_coord_topic_del(c, b);
	CHECK(rc == 0 && sl_coord_topic_count(c) == 2 && sl_coord_topic_find(c, "beta", 4) == NULL,
	      "delete beta: gone, count 2");
	CHECK(sl_coord_topic_del(c, b) == -ENOENT && sl_coord_topic_count(c) == 2,
	      "delete it again: -ENOENT, count unchanged");
	CHECK(sl_coord_topic_add(c, e) == 0 && sl_coord_topic_find(c, "echo", 4) == e,
	      "with room again, echo is added");
	synchronize_rcu();
	sl_coord_topic_free(b);
	b = alloc_topic(c, "beta", 5);
	CHECK(sl_coord_topic_del(c, d) == 0 && sl_coord_topic_add(c, b) == 0 &&
		      sl_coord_topic_find(c, "beta", 4) == b && b->nparts == 5,
	      "a deleted name can be created again");
	synchronize_rcu();
	sl_coord_topic_free(d);
	sl_coord_topic_del(c, a);
	sl_coord_topic_del(c, b);
	sl_coord_topic_del(c, e);
	CHECK(sl_coord_topic_count(c) == 0, "all deleted: count 0");
	synchronize_rcu();
	sl_coord_topic_free(a);
	sl_coord_topic_free(b);
	sl_coord_topic_free(e);
	sl_coord_close(c);
}

static void
test_default_limit(void)
{
	struct sl_coord *c = open_coord(1, 0);
	static struct sl_topic *t[SL_COORD_MAX_TOPICS_DEFAULT + 1];
	char name[16];
	uint32_t i, added = 0;
	int rc = 0;

	if (c == NULL)
		return;
	for (i = 0; i < SL_COORD_MAX_TOPICS_DEFAULT + 1; i++) {
		snprintf(name, sizeof(name), "t%u", i);
		t[i] = alloc_topic(c, name, 1);
		rc = t[i] != NULL ? sl_coord_topic_add(c, t[i]) : -ENOMEM;
		if (rc == 0)
			added++;
	}
	CHECK(added == SL_COORD_MAX_TOPICS_DEFAULT && rc == -SL_E_CAPACITY,
	      "max_topics 0 means %d (%u added)", SL_COORD_MAX_TOPICS_DEFAULT, added);
	for (i = 0; i < SL_COORD_MAX_TOPICS_DEFAULT; i++)
		sl_coord_topic_del(c, t[i]);
	synchronize_rcu();
	for (i = 0; i < SL_COORD_MAX_TOPICS_DEFAULT + 1; i++)
		sl_coord_topic_free(t[i]);
	sl_coord_close(c);
}

/* The memory budget: every topic's mem counts until it is deleted; a topic that would pass
 * the budget is refused with -SL_E_CAPACITY and not visible. */
static void
test_budget(void)
{
	struct sl_coord_conf cc = {.node_id = 1, .max_topics = 100, .mem_budget = 10 << 20};
	struct sl_coord *c = sl_coord_open(&cc);
	struct sl_topic *a, *b2, *x;
	uint64_t budget;
	uint32_t maxt;

	if (c == NULL)
		return;
	sl_coord_limits(c, &maxt, &budget);
	CHECK(maxt == 100 && budget == 10 << 20 && sl_coord_mem_used(c) == 0, "limits as set");
	CHECK(sl_coord_room(c, 11 << 20) == -SL_E_CAPACITY && sl_coord_room(c, 10 << 20) == 0,
	      "more than the budget: no room; exactly the budget: room");
	CHECK(sl_coord_room(c, UINT64_MAX) == -SL_E_CAPACITY, "a huge request does not wrap");
	a = alloc_topic(c, "a", 1);
	b2 = alloc_topic(c, "b", 1);
	x = alloc_topic(c, "x", 1);
	a->mem = 6 << 20;
	b2->mem = 4 << 20;
	x->mem = 1;
	CHECK(sl_coord_topic_add(c, a) == 0 && sl_coord_mem_used(c) == 6 << 20,
	      "a takes 6 MiB");
	CHECK(sl_coord_room(c, 4 << 20) == 0 && sl_coord_room(c, (4 << 20) + 1) == -SL_E_CAPACITY,
	      "4 MiB left, not a byte more");
	CHECK(sl_coord_topic_add(c, b2) == 0 && sl_coord_mem_used(c) == 10 << 20,
	      "b takes the last 4 MiB");
	CHECK(sl_coord_topic_add(c, x) == -SL_E_CAPACITY && sl_coord_topic_find(c, "x", 1) == NULL &&
		      sl_coord_mem_used(c) == 10 << 20,
	      "x (1 byte) past the budget: -SL_E_CAPACITY, not visible, nothing counted");
	CHECK(sl_coord_topic_del(c, a) == 0 && sl_coord_mem_used(c) == 4 << 20 &&
		      sl_coord_topic_add(c, x) == 0,
	      "deleting a gives its memory back: x fits");
	sl_coord_set_budget(c, 0);
	CHECK(sl_coord_room(c, UINT64_MAX) == 0, "budget 0: no budget");
	sl_coord_topic_del(c, b2);
	sl_coord_topic_del(c, x);
	CHECK(sl_coord_mem_used(c) == 0 && sl_coord_topic_count(c) == 0, "all deleted: 0 used");
	synchronize_rcu();
	sl_coord_topic_free(a);
	sl_coord_topic_free(b2);
	sl_coord_topic_free(x);
	sl_coord_close(c);
}

static void
test_set_meta(void)
{
	struct sl_coord *c = open_coord(1, 0);
	struct sl_topic *t = c ? alloc_topic(c, "view", 1) : NULL;
	struct sl_part_meta m, *old, *cur;

	if (t == NULL || sl_coord_topic_add(c, t) != 0)
		return;
	rcu_read_lock();
	old = rcu_dereference(t->parts[0].meta);
	memset(&m, 0, sizeof(m));
	m.leader = 2;
	m.epoch = 5;
	m.leader_session = 99;
	m.nreplicas = 3;
	m.nisr = 2;
	m.replicas[0] = 1;
	m.replicas[1] = 2;
	m.replicas[2] = 3;
	m.isr[0] = 2;
	m.isr[1] = 1;
	CHECK(sl_coord_part_set_meta(&t->parts[0], &m) == 0, "set_meta: 0");
	m.epoch = 6;	/* the published view is a copy */
	cur = rcu_dereference(t->parts[0].meta);
	CHECK(cur != old && cur != &m && cur->leader == 2 && cur->epoch == 5 &&
		      cur->leader_session == 99 && cur->nreplicas == 3 && cur->nisr == 2 &&
		      cur->isr[1] == 1 && cur->replicas[2] == 3,
	      "the new view is published as a copy of the caller's");
	CHECK(old->epoch == 1 && old->leader == 1,
	      "a reader that took the old view before its quiescent state still reads it");
	rcu_read_unlock();
	rcu_quiescent_state();
	/* the old view is freed after the grace period: wait for the callbacks */
	rcu_thread_offline();
	rcu_barrier();
	rcu_thread_online();
	sl_coord_topic_del(c, t);
	synchronize_rcu();
	sl_coord_topic_free(t);
	sl_coord_close(c);
}

/* A reader thread against a writer that replaces views and re-creates a topic. */
static struct sl_coord *race_c;
static struct sl_topic *race_fixed;
static volatile int race_stop;
static uint64_t race_reads, race_bad, race_found;

static void *
race_reader(void *arg)
{
	uint32_t last_epoch = 0;

	(void)arg;
	rcu_register_thread();
	while (!__atomic_load_n(&race_stop, __ATOMIC_ACQUIRE)) {
		struct sl_topic *t;
		const struct sl_part_meta *m;

		rcu_read_lock();
		m = rcu_dereference(race_fixed->parts[0].meta);
		/* every view the writer publishes has leader == epoch * 10 + 1 */
		if (m->epoch < last_epoch || (m->epoch > 1 && m->leader != m->epoch * 10 + 1))
			race_bad++;
		last_epoch = m->epoch;
		t = sl_coord_topic_find(race_c, "churn", 5);
		if (t != NULL) {
			race_found++;
			if (t->nparts != 2 || strcmp(t->name, "churn") != 0 ||
			    t->parts[1].meta->epoch != 1)
				race_bad++;
		}
		rcu_read_unlock();
		__atomic_add_fetch(&race_reads, 1, __ATOMIC_RELAXED);
		rcu_quiescent_state();
	}
	rcu_unregister_thread();
	return NULL;
}

static void
test_rcu_race(void)
{
	struct sl_part_meta m;
	struct sl_topic *t = NULL, *old;
	pthread_t th;
	uint32_t i;
	int ok = 1;

	race_c = open_coord(1, 0);
	race_fixed = race_c ? alloc_topic(race_c, "fixed", 1) : NULL;
	if (race_fixed == NULL || sl_coord_topic_add(race_c, race_fixed) != 0)
		return;
	if (pthread_create(&th, NULL, race_reader, NULL) != 0)
		return;
	while (__atomic_load_n(&race_reads, __ATOMIC_RELAXED) == 0)
		rcu_quiescent_state();	/* the reader is registered and reading */
	memset(&m, 0, sizeof(m));
	m.nreplicas = 1;
	m.nisr = 1;
	for (i = 2; i < 3000; i++) {
		m.epoch = i;
		m.leader = i * 10 + 1;
		ok &= sl_coord_part_set_meta(&race_fixed->parts[0], &m) == 0;
		if (i % 10 == 0) {
			/* replace churn: unpublish it, publish a new one, free the old one
			 * once no reader can hold it */
			if (t != NULL)
				ok &= sl_coord_topic_del(race_c, t) == 0;
			rcu_quiescent_state();
			old = t;
			t = alloc_topic(race_c, "churn", 2);
			ok &= t != NULL && sl_coord_topic_add(race_c, t) == 0;
			synchronize_rcu();
			sl_coord_topic_free(old);
		}
		rcu_quiescent_state();
	}
	if (t != NULL)
		sl_coord_topic_del(race_c, t);
	__atomic_store_n(&race_stop, 1, __ATOMIC_RELEASE);
	rcu_thread_offline();
	pthread_join(th, NULL);
	rcu_barrier();
	rcu_thread_online();
	CHECK(ok && race_bad == 0 && race_reads > 0,
	      "a reader during 3000 view changes and 300 topic replacements: only whole, current "
	      "objects (%llu reads, %llu finds, %llu bad)", (unsigned long long)race_reads,
	      (unsigned long long)race_found, (unsigned long long)race_bad);
	CHECK(rcu_dereference(race_fixed->parts[0].meta)->epoch == 2999, "the last view stays");
	sl_coord_topic_del(race_c, race_fixed);
	synchronize_rcu();
	sl_coord_topic_free(race_fixed);
	sl_coord_topic_free(t);
	sl_coord_close(race_c);
}

int
main(void)
{
	rcu_register_thread();
	test_alloc();
	test_add_find_del();
	test_default_limit();
	test_budget();
	test_set_meta();
	test_rcu_race();
	rcu_unregister_thread();
	return check_report();
}
