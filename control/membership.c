/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * membership: the seam's front (membership.h) and the policy every backend shares.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <urcu-qsbr.h>

#include <rte_errno.h>
#include <rte_log.h>

#include "cluster.h"
#include "err.h"
#include "membership.h"

RTE_LOG_REGISTER_SUFFIX(sl_membership_logtype, membership, INFO);
#define GLOG(level, fmt, ...) \
	rte_log(RTE_LOG_##level, sl_membership_logtype, "membership: " fmt "\n", ##__VA_ARGS__)

static const struct sl_membership_ops *const backends[] = {
	&sl_membership_static_ops,
	&sl_membership_etcd_ops,
};

static int
leader_isr_next(const struct sl_part_meta *cur, const struct sl_wviewreq *q, uint32_t self,
		struct sl_part_meta *next)
{
	uint8_t i, same = q->nisr == cur->nisr;

	if (q->epoch != cur->epoch || q->session != cur->leader_session ||
	    cur->leader == self || q->nisr == 0 ||
	    q->nisr > cur->nreplicas || !sl_cluster_has(q->isr, q->nisr, cur->leader))
		return 0;
	for (i = 0; i < q->nisr; i++) {
		if (!sl_cluster_has(cur->replicas, cur->nreplicas, q->isr[i]) ||
		    sl_cluster_has(q->isr, i, q->isr[i]))
			return 0;
		same = same && sl_cluster_has(cur->isr, cur->nisr, q->isr[i]);
	}
	if (same)
		return 0;
	*next = *cur;
	next->nisr = q->nisr;
	memcpy(next->isr, q->isr, q->nisr * sizeof(q->isr[0]));
	return 1;
}

int
sl_membership_isr_next(const struct sl_part_meta *cur, const struct sl_wviewreq *q,
		       uint32_t self, struct sl_part_meta *next)
{
	uint8_t i;

	switch (q->kind) {
	case SL_VIEWREQ_LEADER_ISR:
		return leader_isr_next(cur, q, self, next);
	case SL_VIEWREQ_ISR_JOIN:
		/* only the leader's own requests: a view we lead */
		if (cur->leader != self || sl_cluster_has(cur->isr, cur->nisr, q->node) ||
		    !sl_cluster_has(cur->replicas, cur->nreplicas, q->node) ||
		    cur->nisr == SL_COORD_MAX_REPLICAS)
			return 0;
		*next = *cur;
		next->isr[next->nisr++] = q->node;
		return 1;
	case SL_VIEWREQ_ISR_LEAVE:
		if (cur->leader != self || q->node == cur->leader ||
		    !sl_cluster_has(cur->isr, cur->nisr, q->node))
			return 0;
		*next = *cur;
		for (i = 0; next->isr[i] != q->node; i++)
			;
		next->isr[i] = next->isr[--next->nisr];
		return 1;
	default:
		return 0;
	}
}

int
sl_membership_view_next(const struct sl_part_meta *cur, struct sl_part_meta *next, char *err,
			size_t err_len)
{
	/* a new leader is a new leadership: next epoch and session unless given */
	if (next->leader != cur->leader) {
		if (next->epoch == cur->epoch)
			next->epoch = cur->epoch + 1;
		if (next->leader_session == cur->leader_session)
			next->leader_session = cur->leader_session + 1;
	}
	if (sl_cluster_check_meta(next, err, err_len) != 0)
		return -SL_E_INVAL;
	return 0;
}

struct sl_membership *
sl_membership_open(const struct sl_membership_conf *conf)
{
	const char *name = conf->backend != NULL ? conf->backend : "static";
	struct sl_membership *m = NULL;
	size_t i;
	int rc;

	if (conf->node_id == 0) {
		if (conf->err != NULL)
			snprintf(conf->err, conf->err_len, "node id must be 1 or more");
		rte_errno = EINVAL;
		return NULL;
	}
	for (i = 0; i < RTE_DIM(backends) && strcmp(backends[i]->name, name) != 0; i++)
		;
	if (i == RTE_DIM(backends)) {
		if (conf->err != NULL)
			snprintf(conf->err, conf->err_len, "unknown membership backend '%s'", name);
		rte_errno = ENOENT;
		return NULL;
	}
	m = calloc(1, sizeof(*m));
	if (m == NULL) {
		rte_errno = ENOMEM;
		return NULL;
	}
	m->ops = backends[i];
	m->node_id = conf->node_id;
	rc = m->ops->open(m, conf);
	if (rc != 0) {
		free(m);
		rte_errno = -rc;
		return NULL;
	}
	return m;
}

const struct sl_membership_node *
sl_membership_node(const struct sl_membership *m, uint32_t id)
{
	uint32_t i;

	for (i = 0; i < m->nnodes; i++)
		if (m->nodes[i].id == id)
			return &m->nodes[i];
	return NULL;
}

int
sl_membership_start(struct sl_membership *m, struct sl_broker *b)
{
	m->broker = b;
	return m->ops->start(m);
}

int
sl_membership_poll(struct sl_membership *m)
{
	struct sl_wviewreq q;
	int n = 0;

	while (m->broker != NULL && sl_broker_viewreq_take(m->broker, &q)) {
		n++;
		m->requests++;
		q.topic[sizeof(q.topic) - 1] = '\0';
		if (m->ops->request(m, &q) > 0)
			m->changes++;
	}
	if (m->ops->poll != NULL)
		m->ops->poll(m);
	return n;
}

int
sl_membership_wait(struct sl_membership *m, int fd, int timeout_ms)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };

	if (m->ops->wait != NULL)
		return m->ops->wait(m, fd, timeout_ms);
	return poll(&pfd, 1, timeout_ms) < 0 && errno != EINTR ? -errno : 0;
}

int
sl_membership_set_view(struct sl_membership *m, const char *topic, uint16_t part,
		       struct sl_part_meta *next, char *err, size_t err_len)
{
	struct sl_part_meta cur;
	int rc;

	rc = sl_broker_part_get_view(m->broker, topic, part, &cur);
	if (rc != 0)
		goto out;
	rc = sl_membership_view_next(&cur, next, err, err_len);
	if (rc != 0)
		return rc;
	rc = m->ops->set_view(m, topic, part, next);
	if (rc == 0)
		GLOG(NOTICE, "%s/%u: view set by the operator: leader %u epoch %u session %lu, "
			     "%u replicas, %u in the ISR, writes %s", topic, part, next->leader,
		     next->epoch, (unsigned long)next->leader_session, next->nreplicas, next->nisr,
		     next->writes_disabled ? "off" : "on");
out:
	if (rc != 0)
		snprintf(err, err_len, "%s", sl_strerror(rc));
	return rc;
}

int
sl_membership_move(struct sl_membership *m, const char *topic, uint16_t part,
		   const uint32_t *ids, uint8_t n, char *err, size_t err_len)
{
	if (m->ops->move == NULL) {
		snprintf(err, err_len, "moves need the etcd backend (--etcd)");
		return -ENOTSUP;
	}
	if (n == 0 || n > SL_COORD_MAX_REPLICAS) {
		snprintf(err, err_len, "1 to %d replicas", SL_COORD_MAX_REPLICAS);
		return -SL_E_INVAL;
	}
	return m->ops->move(m, topic, part, ids, n, err, err_len);
}

void
sl_membership_move_status(struct sl_membership *m, struct sl_json *out)
{
	if (m->ops->move_status != NULL)
		m->ops->move_status(m, out);
}

int
sl_membership_topic_create(struct sl_membership *m, const char *name, uint16_t nparts,
			   uint8_t replicas, int disk)
{
	if (m->ops->topic_create == NULL)
		return -ENOTSUP;
	return m->ops->topic_create(m, name, nparts, replicas, disk);
}

int
sl_membership_failover_next(const struct sl_part_meta *cur,
			    const struct sl_membership_pos *isr_pos, struct sl_part_meta *next)
{
	int best = -1;
	uint8_t i;

	for (i = 0; i < cur->nisr; i++)
		if (cur->isr[i] == cur->leader && isr_pos[i].live)
			return 0;
	*next = *cur;
	next->nisr = 0;
	for (i = 0; i < cur->nisr; i++) {
		const struct sl_membership_pos *c = &isr_pos[i], *b;

		if (!c->live)
			continue;
		next->isr[next->nisr++] = cur->isr[i];
		b = best >= 0 ? &isr_pos[best] : NULL;
		if (b == NULL || (c->known && !b->known) ||
		    (c->known == b->known &&
		     (c->end > b->end || (c->end == b->end && (c->committed > b->committed ||
		      (c->committed == b->committed && !c->avoid && b->avoid))))))
			best = i;
	}
	if (best < 0)
		return -1;
	next->leader = cur->isr[best];
	next->epoch = cur->epoch + 1;
	next->leader_session = cur->leader_session + 1;
	next->writes_disabled = 0;
	return 1;
}

/* The partitions node id leads in this node's installed views. */
struct leads_walk {
	struct sl_json *out;
	uint32_t id;
};

static int
leads_cb(void *arg, struct sl_topic *t)
{
	struct leads_walk *w = arg;
	char name[SL_COORD_NAME_MAX + 8];
	uint16_t p;

	for (p = 0; p < t->nparts; p++) {
		const struct sl_part_meta *pm = rcu_dereference(t->parts[p].meta);

		if (pm->leader_session == 0 || pm->leader != w->id)
			continue;
		snprintf(name, sizeof(name), "%.*s/%u", (int)t->name_len, t->name, p);
		sl_json_str(w->out, NULL, name);
	}
	return 0;
}

void
sl_membership_describe(struct sl_membership *m, struct sl_json *out, int nodes)
{
	struct leads_walk w = {.out = out};
	char a[INET_ADDRSTRLEN];
	int alive, ctl;
	uint32_t i;

	sl_json_str(out, "backend", m->ops->name);
	if (m->ops->describe != NULL)
		m->ops->describe(m, out);
	if (!nodes)
		return;
	sl_json_arr_open(out, "nodes");
	for (i = 0; i < m->nnodes; i++) {
		const struct sl_membership_node *n = &m->nodes[i];
		struct in_addr in = {.s_addr = htonl(n->ip)};

		ctl = 0;
		alive = m->ops->node_state != NULL ? m->ops->node_state(m, n->id, &ctl) : -1;
		if (alive < 0 && n->id == m->node_id)
			alive = 1;
		inet_ntop(AF_INET, &in, a, sizeof(a));
		sl_json_obj_open(out, NULL);
		sl_json_u64(out, "id", n->id);
		sl_json_str(out, "address", a);
		sl_json_u64(out, "replica_port", n->port);
		if (alive < 0)
			sl_json_null(out, "alive");
		else
			sl_json_bool(out, "alive", alive);
		sl_json_bool(out, "controller", ctl);
		sl_json_bool(out, "self", n->id == m->node_id);
		sl_json_arr_open(out, "leads");
		w.id = n->id;
		if (m->broker != NULL)
			sl_coord_foreach(sl_broker_coord(m->broker), leads_cb, &w);
		sl_json_arr_close(out);
		sl_json_obj_close(out);
	}
	sl_json_arr_close(out);
}

void
sl_membership_close(struct sl_membership *m)
{
	if (m == NULL)
		return;
	if (m->ops->close != NULL)
		m->ops->close(m);
	free(m);
}
