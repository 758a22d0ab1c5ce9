/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * membership_static: the first membership backend. Nodes and the partition views at start
 * come from the cluster file (--cluster, format in control/cluster.h); without one the node
 * is alone and has no replicated partitions. Every decision (an ISR change a leader asks
 * for, an operator's new view) is taken on this node and installed at once: nothing outside
 * the node records it, so after a restart the file's views apply again and the replicas
 * find their place through replication (docs/replication.md).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rte_common.h>
#include <rte_log.h>

#include "cluster.h"
#include "err.h"
#include "membership.h"

RTE_LOG_REGISTER_SUFFIX(sl_membership_static_logtype, membership.static, INFO);
#define SLOG(level, fmt, ...) \
	rte_log(RTE_LOG_##level, sl_membership_static_logtype, "membership: " fmt "\n", \
		##__VA_ARGS__)

static int
st_open(struct sl_membership *m, const struct sl_membership_conf *conf)
{
	struct sl_cluster *c;
	char why[512];
	uint32_t i;
	int rc;

	if (conf->source == NULL)
		return 0;
	c = malloc(sizeof(*c));
	if (c == NULL)
		return -ENOMEM;
	rc = sl_cluster_load(conf->source, c, why, sizeof(why));
	if (rc == 0 && c->nnodes > SL_MEMBERSHIP_MAX_NODES) {
		snprintf(why, sizeof(why), "%s: more than %d nodes", conf->source,
			 SL_MEMBERSHIP_MAX_NODES);
		rc = -EINVAL;
	}
	if (rc == 0 && sl_cluster_node(c, conf->node_id) == NULL) {
		snprintf(why, sizeof(why), "%s: this node (%u) is not declared in it",
			 conf->source, conf->node_id);
		rc = -EINVAL;
	}
	if (rc != 0) {
		if (conf->err != NULL)
			snprintf(conf->err, conf->err_len, "%s", why);
		free(c);
		return rc;
	}
	for (i = 0; i < c->nnodes; i++) {
		m->nodes[i].id = c->nodes[i].id;
		m->nodes[i].ip = c->nodes[i].ip;
		m->nodes[i].port = c->nodes[i].port;
	}
	m->nnodes = c->nnodes;
	m->priv = c;
	return 0;
}

/* Create the topics the file names (as many partitions as its highest partition + 1) and
 * install every partition's view. */
static int
st_start(struct sl_membership *m)
{
	const struct sl_cluster *c = m->priv;
	uint32_t i, j;
	int rc = 0;

	for (i = 0; c != NULL && i < c->nparts && rc == 0; i++) {
		const struct sl_cluster_part *p = &c->parts[i];
		uint16_t nparts = 0;

		for (j = 0; j < c->nparts; j++)
			if (strcmp(c->parts[j].topic, p->topic) == 0)
				nparts = (uint16_t)RTE_MAX(nparts, c->parts[j].partition + 1);
		rc = sl_broker_topic_create(m->broker, p->topic, nparts, 0, NULL);
		if (rc == -SL_E_EXISTS)
			rc = 0;
		if (rc == 0)
			rc = sl_broker_part_set_view(m->broker, p->topic, p->partition, &p->meta);
		if (rc != 0)
			SLOG(ERR, "partition %s/%u: %s", p->topic, p->partition, sl_strerror(rc));
	}
	if (rc == 0 && c != NULL)
		SLOG(INFO, "static: %u nodes, %u partition views", c->nnodes, c->nparts);
	return rc;
}

static int
st_request(struct sl_membership *m, const struct sl_wviewreq *q)
{
	struct sl_part_meta cur, next;
	int rc;

	if (sl_broker_part_get_view(m->broker, q->topic, q->partition, &cur) != 0)
		return 0;
	if (sl_membership_isr_next(&cur, q, m->node_id, &next) == 0)
		return 0;
	rc = sl_broker_part_set_view(m->broker, q->topic, q->partition, &next);
	if (rc != 0) {
		SLOG(WARNING, "%s/%u: ISR change not installed: %s", q->topic, q->partition,
		     sl_strerror(rc));
		return rc;
	}
	if (q->kind == SL_VIEWREQ_LEADER_ISR)
		SLOG(NOTICE, "%s/%u: ISR of %u members from leader %u", q->topic, q->partition,
		     next.nisr, next.leader);
	else
		SLOG(NOTICE, "%s/%u: node %u %s the ISR (asked by the leader)", q->topic,
		     q->partition, q->node, q->kind == SL_VIEWREQ_ISR_JOIN ? "joins" : "leaves");
	return 1;
}

static int
st_set_view(struct sl_membership *m, const char *topic, uint16_t part,
	    const struct sl_part_meta *next)
{
	return sl_broker_part_set_view(m->broker, topic, part, next);
}

static void
st_close(struct sl_membership *m)
{
	free(m->priv);
	m->priv = NULL;
}

const struct sl_membership_ops sl_membership_static_ops = {
	.name = "static",
	.open = st_open,
	.start = st_start,
	.request = st_request,
	.set_view = st_set_view,
	.poll = NULL,
	.close = st_close,
};
