/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * Unit test of the membership seam (control/membership.h) without an EAL or a broker: the
 * ISR change policy for each named request kind, the rules of an operator's edit, and the
 * static backend's reading of a cluster file (node list, errors that name the file), and the
 * etcd backend's pure parts: the failover choice (the live ISR member with the longest log),
 * the placement of a new topic's partitions and the JSON codec of a stored view.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_common.h>
#include <rte_errno.h>

#include "check.h"
#include "cluster.h"
#include "err.h"
#include "membership.h"

static struct sl_part_meta
view(uint32_t leader, uint32_t epoch, uint64_t session, const char *replicas,
     const char *isr)
{
	struct sl_part_meta m;

	memset(&m, 0, sizeof(m));
	m.leader = leader;
	m.epoch = epoch;
	m.leader_session = session;
	m.nreplicas = (uint8_t)sl_cluster_parse_ids(replicas, m.replicas, SL_COORD_MAX_REPLICAS);
	m.nisr = (uint8_t)sl_cluster_parse_ids(isr, m.isr, SL_COORD_MAX_REPLICAS);
	return m;
}

static struct sl_wviewreq
req(enum sl_viewreq_kind kind, uint32_t node)
{
	struct sl_wviewreq q;

	memset(&q, 0, sizeof(q));
	snprintf(q.topic, sizeof(q.topic), "t");
	q.kind = (uint8_t)kind;
	q.node = node;
	return q;
}

static int
isr_has(const struct sl_part_meta *m, uint32_t id)
{
	uint8_t i;

	for (i = 0; i < m->nisr; i++)
		if (m->isr[i] == id)
			return 1;
	return 0;
}

static void
test_leave_join(void)
{
	struct sl_part_meta cur = view(1, 3, 7, "1,2,3", "1,2,3"), next;
	struct sl_wviewreq q = req(SL_VIEWREQ_ISR_LEAVE, 3);

	CHECK(sl_membership_isr_next(&cur, &q, 1, &next) == 1 && next.nisr == 2 &&
		      !isr_has(&next, 3) && isr_has(&next, 1) && isr_has(&next, 2),
	      "ISR_LEAVE: the lagging member leaves the ISR");
	CHECK(next.epoch == 3 && next.leader_session == 7 && next.leader == 1 &&
		      next.nreplicas == 3,
	      "ISR_LEAVE: leadership and replicas unchanged");
	q = req(SL_VIEWREQ_ISR_LEAVE, 1);
	CHECK(sl_membership_isr_next(&cur, &q, 1, &next) == 0,
	      "ISR_LEAVE: the leader never leaves its own ISR");
	cur = view(1, 3, 7, "1,2,3", "1,2");
	q = req(SL_VIEWREQ_ISR_LEAVE, 3);
	CHECK(sl_membership_isr_next(&cur, &q, 1, &next) == 0,
	      "ISR_LEAVE: a member already out changes nothing");

	q = req(SL_VIEWREQ_ISR_JOIN, 3);
	CHECK(sl_membership_isr_next(&cur, &q, 1, &next) == 1 && next.nisr == 3 &&
		      isr_has(&next, 3),
	      "ISR_JOIN: a caught-up replica joins the ISR");
	q = req(SL_VIEWREQ_ISR_JOIN, 2);
	CHECK(sl_membership_isr_next(&cur, &q, 1, &next) == 0,
	      "ISR_JOIN: a member already in changes nothing");
	q = req(SL_VIEWREQ_ISR_JOIN, 9);
	CHECK(sl_membership_isr_next(&cur, &q, 1, &next) == 0,
	      "ISR_JOIN: a node that is not a replica never joins");
	q = req(SL_VIEWREQ_ISR_JOIN, 3);
	CHECK(sl_membership_isr_next(&cur, &q, 2, &next) == 0,
	      "ISR_JOIN/LEAVE: only the leader's view changes (this node is a follower)");
	q.kind = 77;
	CHECK(sl_membership_isr_next(&cur, &q, 1, &next) == 0, "an unknown kind is ignored");
}

static void
test_leader_isr(void)
{
	struct sl_part_meta cur = view(1, 4, 9, "1,2,3", "1,2,3"), next;
	struct sl_wviewreq q = req(SL_VIEWREQ_LEADER_ISR, 0);

	q.epoch = 4;
	q.session = 9;
	q.nisr = (uint8_t)sl_cluster_parse_ids("1,2", q.isr, SL_COORD_MAX_REPLICAS);
	CHECK(sl_membership_isr_next(&cur, &q, 2, &next) == 1 && next.nisr == 2 &&
		      !isr_has(&next, 3),
	      "LEADER_ISR: a follower takes the ISR its leader announced");
	CHECK(sl_membership_isr_next(&cur, &q, 1, &next) == 0,
	      "LEADER_ISR: the leader itself ignores it");
	q.epoch = 3;
	CHECK(sl_membership_isr_next(&cur, &q, 2, &next) == 0,
	      "LEADER_ISR: an older epoch is ignored");
	q.epoch = 4;
	q.session = 8;
	CHECK(sl_membership_isr_next(&cur, &q, 2, &next) == 0,
	      "LEADER_ISR: another leader session is ignored");
	q.session = 9;
	q.nisr = (uint8_t)sl_cluster_parse_ids("2,3", q.isr, SL_COORD_MAX_REPLICAS);
	CHECK(sl_membership_isr_next(&cur, &q, 2, &next) == 0,
	      "LEADER_ISR: an ISR without the leader is refused");
	q.nisr = (uint8_t)sl_cluster_parse_ids("1,5", q.isr, SL_COORD_MAX_REPLICAS);
	CHECK(sl_membership_isr_next(&cur, &q, 2, &next) == 0,
	      "LEADER_ISR: an ISR with a non-replica is refused");
	q.nisr = (uint8_t)sl_cluster_parse_ids("1,2,2", q.isr, SL_COORD_MAX_REPLICAS);
	CHECK(sl_membership_isr_next(&cur, &q, 2, &next) == 0,
	      "LEADER_ISR: an ISR that lists a member twice is refused");
	q.nisr = (uint8_t)sl_cluster_parse_ids("3,2,1", q.isr, SL_COORD_MAX_REPLICAS);
	CHECK(sl_membership_isr_next(&cur, &q, 2, &next) == 0,
	      "LEADER_ISR: the same ISR in another order changes nothing");
	q.nisr = 0;
	CHECK(sl_membership_isr_next(&cur, &q, 2, &next) == 0,
	      "LEADER_ISR: an empty ISR is refused");
}

static void
test_view_next(void)
{
	struct sl_part_meta cur = view(1, 4, 9, "1,2,3", "1,2,3"), next;
	char err[160];

	next = cur;
	next.leader = 2;
	CHECK(sl_membership_view_next(&cur, &next, err, sizeof(err)) == 0 && next.epoch == 5 &&
		      next.leader_session == 10,
	      "a new leader gets the next epoch and session");
	next = cur;
	next.leader = 2;
	next.epoch = 20;
	next.leader_session = 40;
	CHECK(sl_membership_view_next(&cur, &next, err, sizeof(err)) == 0 && next.epoch == 20 &&
		      next.leader_session == 40,
	      "an epoch and session the operator names are kept");
	next = cur;
	next.writes_disabled = 1;
	CHECK(sl_membership_view_next(&cur, &next, err, sizeof(err)) == 0 && next.epoch == 4 &&
		      next.leader_session == 9,
	      "the same leader keeps its leadership");
	next = cur;
	next.leader = 7;
	CHECK(sl_membership_view_next(&cur, &next, err, sizeof(err)) == -SL_E_INVAL &&
		      strstr(err, "leader 7") != NULL,
	      "a leader that is not a replica is refused: %s", err);
	next = view(1, 4, 9, "1,2,3", "2,3");
	CHECK(sl_membership_view_next(&cur, &next, err, sizeof(err)) == -SL_E_INVAL,
	      "an ISR without the leader is refused: %s", err);
}

static int
write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (f == NULL)
		return -1;
	fputs(text, f);
	return fclose(f);
}

static void
test_static_backend(void)
{
	char dir[] = "/tmp/sl-membership-XXXXXX", path[64], err[512];
	struct sl_membership_conf mc = {.node_id = 2, .err = err, .err_len = sizeof(err)};
	const struct sl_membership_node *n;
	struct sl_membership *m;

	if (mkdtemp(dir) == NULL) {
		CHECK(0, "mkdtemp");
		return;
	}
	snprintf(path, sizeof(path), "%s/cluster", dir);
	write_file(path, "# three nodes\n"
			 "node 1 10.0.0.1\n"
			 "node 2 10.0.0.2 6001\n"
			 "node 3 10.0.0.3\n"
			 "partition t 0 replicas=1,2,3 leader=1 isr=1,2,3\n");
	mc.source = path;
	m = sl_membership_open(&mc);
	CHECK(m != NULL && m->nnodes == 3 && strcmp(m->ops->name, "static") == 0,
	      "static: the cluster file's three nodes");
	n = m != NULL ? sl_membership_node(m, 2) : NULL;
	CHECK(n != NULL && n->ip == 0x0a000002 && n->port == 6001,
	      "static: a node's address and replica port");
	n = m != NULL ? sl_membership_node(m, 1) : NULL;
	CHECK(n != NULL && n->port == SL_CLUSTER_REPL_PORT, "static: the default replica port");
	CHECK(m != NULL && sl_membership_node(m, 9) == NULL, "static: no such node");
	sl_membership_close(m);

	mc.node_id = 4;
	err[0] = '\0';
	m = sl_membership_open(&mc);
	CHECK(m == NULL && rte_errno == EINVAL && strstr(err, "not declared") != NULL,
	      "static: a node that is not in the file is refused: %s", err);

	mc.node_id = 1;
	write_file(path, "node 1 10.0.0.1\npartition t 0 replicas=1,2 leader=1 isr=1\n");
	err[0] = '\0';
	m = sl_membership_open(&mc);
	CHECK(m == NULL && strstr(err, path) != NULL,
	      "static: an undeclared replica is refused, naming the file: %s", err);

	mc.source = NULL;
	m = sl_membership_open(&mc);
	CHECK(m != NULL && m->nnodes == 0, "static without a file: a single node, no views");
	sl_membership_close(m);

	mc.backend = "zookeeper";
	err[0] = '\0';
	m = sl_membership_open(&mc);
	CHECK(m == NULL && rte_errno == ENOENT && strstr(err, "zookeeper") != NULL,
	      "an unknown backend is refused: %s", err);
	unlink(path);
	rmdir(dir);
}

/* pos(live, known, committed, end) */
static struct sl_membership_pos
pos(int live, int known, uint64_t committed, uint64_t end)
{
	struct sl_membership_pos p = {.live = (uint8_t)live, .known = (uint8_t)known,
				      .committed = committed, .end = end};

	return p;
}

static void
test_failover_next(void)
{
	struct sl_part_meta cur = view(1, 4, 9, "1,2,3", "1,2,3"), next;
	struct sl_membership_pos ps[3];

	ps[0] = pos(1, 1, 100, 100);
	ps[1] = pos(1, 1, 90, 90);
	ps[2] = pos(1, 1, 90, 95);
	CHECK(sl_membership_failover_next(&cur, ps, &next) == 0,
	      "failover: a live leader keeps its partition");
	ps[0].live = 0;
	CHECK(sl_membership_failover_next(&cur, ps, &next) == 1 && next.leader == 3 &&
		      next.epoch == 5 && next.leader_session == 10 && !next.writes_disabled,
	      "failover: the member with the longest log (3: end 95 > 90) leads, epoch and "
	      "session + 1, writes on");
	CHECK(next.nisr == 2 && !isr_has(&next, 1) && isr_has(&next, 2) && isr_has(&next, 3) &&
		      next.nreplicas == 3,
	      "failover: the new ISR is the live members, the replicas stay");
	ps[2] = pos(1, 1, 80, 90);
	CHECK(sl_membership_failover_next(&cur, ps, &next) == 1 && next.leader == 2,
	      "failover: equal log ends, the higher committed end leads (2)");
	ps[1] = pos(1, 0, 0, 0);
	ps[2] = pos(1, 1, 10, 10);
	CHECK(sl_membership_failover_next(&cur, ps, &next) == 1 && next.leader == 3,
	      "failover: a member whose positions are unknown ranks below a known one");
	ps[1] = pos(1, 1, 50, 50);
	ps[2] = pos(1, 1, 50, 50);
	CHECK(sl_membership_failover_next(&cur, ps, &next) == 1 && next.leader == 2,
	      "failover: a tie goes to the first in ISR order");
	ps[1].avoid = 1;
	CHECK(sl_membership_failover_next(&cur, ps, &next) == 1 && next.leader == 3,
	      "failover: a tie goes to a member not marked avoid (the controller)");
	ps[1] = pos(0, 1, 200, 200);
	CHECK(sl_membership_failover_next(&cur, ps, &next) == 1 && next.leader == 3 &&
		      next.nisr == 1,
	      "failover: a dead member never leads, however long its log");
	ps[2].live = 0;
	CHECK(sl_membership_failover_next(&cur, ps, &next) == -1,
	      "failover: no live ISR member, no leader (no unclean election)");
	cur = view(1, 4, 9, "1,2,3", "1,2");
	ps[0] = pos(0, 1, 9, 9);
	ps[1] = pos(1, 1, 9, 9);
	ps[2] = pos(1, 1, 999, 999);	/* index 2 is past the ISR: never read */
	CHECK(sl_membership_failover_next(&cur, ps, &next) == 1 && next.leader == 2 &&
		      next.nisr == 1,
	      "failover: only ISR members are candidates (3, out of the ISR, is not)");
}

static void
test_place(void)
{
	const uint32_t live[] = {1, 2, 4, 7};
	struct sl_part_meta m;
	uint32_t leads[8] = {0};
	uint16_t p;

	CHECK(sl_membership_place(live, 4, 0, 3, &m) == 0 && m.leader == 1 &&
		      m.nreplicas == 3 && m.replicas[0] == 1 && m.replicas[1] == 2 &&
		      m.replicas[2] == 4 && m.nisr == 3 && m.epoch == 1 &&
		      m.leader_session == 1 && !m.writes_disabled,
	      "place: partition 0 on the first three live nodes, the first leads, epoch 1, "
	      "ISR = replicas, writes on");
	CHECK(sl_membership_place(live, 4, 3, 3, &m) == 0 && m.leader == 7 &&
		      m.replicas[1] == 1 && m.replicas[2] == 2,
	      "place: partition 3 starts at the fourth node and wraps around");
	for (p = 0; p < 8; p++) {
		uint32_t k;

		if (sl_membership_place(live, 4, p, 2, &m) != 0)
			break;
		for (k = 0; k < 4 && live[k] != m.leader; k++)
			;
		leads[k]++;
	}
	CHECK(p == 8 && leads[0] == 2 && leads[1] == 2 && leads[2] == 2 && leads[3] == 2,
	      "place: 8 partitions on 4 nodes: each node leads 2");
	CHECK(sl_membership_place(live, 2, 0, 3, &m) == -1,
	      "place: fewer live nodes than replicas: not placed");
	CHECK(sl_membership_place(live, 4, 0, 0, &m) == -1, "place: 0 replicas refused");
}

static void
test_view_codec(void)
{
	struct sl_part_meta v = view(2, 5, 9, "1,2,3", "2,3"), back;
	char *s = sl_membership_view_json(&v);
	static const char *const bad[] = {
		"", "[]", "{\"leader\":1}",
		"{\"leader\":0,\"epoch\":1,\"leader_session\":1,\"replicas\":[1],\"isr\":[1]}",
		"{\"leader\":1,\"epoch\":0,\"leader_session\":1,\"replicas\":[1],\"isr\":[1]}",
		"{\"leader\":4,\"epoch\":1,\"leader_session\":1,\"replicas\":[1,2],"
		"\"isr\":[1]}",
		"{\"leader\":1,\"epoch\":1,\"leader_session\":1,\"replicas\":[1,2],"
		"\"isr\":[1,3]}",
		"{\"leader\":1,\"epoch\":1,\"leader_session\":1,\"replicas\":[1,1],"
		"\"isr\":[1]}",
		"{\"leader\":1,\"epoch\":1,\"leader_session\":1,\"replicas\":\"1\","
		"\"isr\":[1]}",
	};
	size_t i;

	v.writes_disabled = 1;
	free(s);
	s = sl_membership_view_json(&v);
	CHECK(s != NULL && sl_membership_view_parse(s, strlen(s), &back) == 0 &&
		      back.leader == 2 && back.epoch == 5 && back.leader_session == 9 &&
		      back.nreplicas == 3 && back.nisr == 2 && back.isr[0] == 2 &&
		      back.isr[1] == 3 && back.writes_disabled == 1,
	      "view codec: a view survives JSON and back (%s)", s != NULL ? s : "NULL");
	free(s);
	for (i = 0; i < RTE_DIM(bad); i++)
		CHECK(sl_membership_view_parse(bad[i], strlen(bad[i]), &back) == -EINVAL,
		      "view codec: refused: %s", bad[i]);
	s = "{\"leader\":1,\"epoch\":1,\"leader_session\":1,\"replicas\":[1],\"isr\":[1]}";
	CHECK(sl_membership_view_parse(s, strlen(s), &back) == 0 && !back.writes_disabled,
	      "view codec: writable is optional (default on)");
}

int
main(void)
{
	test_leave_join();
	test_leader_isr();
	test_view_next();
	test_static_backend();
	test_failover_next();
	test_place();
	test_view_codec();
	return check_report();
}
