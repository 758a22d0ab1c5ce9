/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * Unit test of the broker's control-thread API (dataplane/broker.h) on a node with two
 * worker lcores and one port made of two rte_rings (fixture.h): configuration checks,
 * topic create (before and after the workers start, partitions spread over the workers)
 * and delete, their errors (-SL_E_EXISTS, -SL_E_NAME, -SL_E_INVAL, -SL_E_TOPIC), the
 * replication-view rules of sl_broker_part_set_view (the epoch never goes back; a new
 * leader needs a higher epoch and a new session; invalid views refused), channels
 * (create on every partition or one, delete, reset), partition snapshots, and the
 * periodic tick (auto-creation on a publish to an unknown topic, session expiry).
 * Messages are published through the port as anonymous PUBs. EAL with --no-huge.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <urcu-qsbr.h>

#include "broker.h"
#include "err.h"
#include "idem.h"
#include "wire.h"
#include "check.h"
#include "fixture.h"

static struct fx_port fp;
static struct sl_broker_conf bc;
static struct sl_broker *b;
static struct sl_part_info info;	/* large: not on the stack */
static uint8_t buf[2048];
static uint64_t seq = 1;

/* Publish body to topic/part as an anonymous PUB; the answer's id, or 0 (an ERR, or no
 * answer within timeout_ms). */
static uint64_t
publish_wait(const char *topic, uint16_t part, const char *body, uint32_t timeout_ms)
{
	struct sl_wire_hdr h = {.version = SL_WIRE_VERSION, .seq = seq++};
	const void *msg = body;
	uint32_t len = (uint32_t)strlen(body);
	struct sl_wire_hdr ah;
	struct sl_wire_ok ok;
	int n = sl_wire_encode_pub(buf, sizeof(buf), &h, 0, part, topic, 0, 0, 1, &msg, &len);

	if (n < 0 || fx_send(&fp, buf, (uint32_t)n) != 0)
		return 0;
	n = fx_recv(&fp, buf, sizeof(buf), timeout_ms);
	if (n < 0 || sl_wire_decode_hdr(buf, (size_t)n, &ah) != 0 || ah.opcode != SL_OP_OK ||
	    sl_wire_decode_ok(buf + SL_WIRE_HDR_LEN, ah.body_len, &ok) != 0)
		return 0;
	return ok.id;
}

/* The answer to a publish that waits for its topic's auto-creation: ticks hand it back to
 * its worker, which runs it on the new topic (or answers the refusal). Its OK's id, 0 for
 * an ERR, -1 for no answer within timeout_ms. */
static int64_t
answer_after_ticks(uint32_t timeout_ms)
{
	struct sl_wire_hdr ah;
	struct sl_wire_ok ok;
	uint32_t i;
	int n = -1;

	for (i = 0; i < timeout_ms / 5 && n < 0; i++) {
		sl_broker_tick(b);
		n = fx_recv(&fp, buf, sizeof(buf), 5);
	}
	if (n < 0)
		return -1;
	if (sl_wire_decode_hdr(buf, (size_t)n, &ah) != 0 || ah.opcode != SL_OP_OK ||
	    sl_wire_decode_ok(buf + SL_WIRE_HDR_LEN, ah.body_len, &ok) != 0)
		return 0;
	return (int64_t)ok.id;
}

static uint64_t
publish(const char *topic, uint16_t part, const char *body)
{
	return publish_wait(topic, part, body, 2000);
}

static uint64_t
auto_create_reqs(void)
{
	return sl_broker_worker_stats(b, 0)->auto_create_req +
	       sl_broker_worker_stats(b, 1)->auto_create_req;
}

static struct sl_topic *
find(const char *name)
{
	return sl_coord_topic_find(sl_broker_coord(b), name, (uint32_t)strlen(name));
}

/* Index of channel chan in a fresh snapshot of topic/part (left in info), or -1. */
static int
chan_idx(const char *topic, uint16_t part, const char *chan)
{
	uint32_t i;

	if (sl_broker_part_info(b, topic, part, &info) != 0)
		return -1;
	for (i = 0; i < info.nchans; i++)
		if (strcmp(info.chans[i].name, chan) == 0)
			return (int)i;
	return -1;
}

static void
test_conf(void)
{
	struct sl_broker_conf c = bc;

	rte_errno = 0;
	CHECK(sl_broker_open(NULL) == NULL && rte_errno == EINVAL, "no conf: EINVAL");
	c.nworkers = 0;
	CHECK(sl_broker_open(&c) == NULL && rte_errno == EINVAL, "0 workers: EINVAL");
	c = bc;
	c.log_bytes = 65535;
	CHECK(sl_broker_open(&c) == NULL && rte_errno == EINVAL, "a log under 64 KiB: EINVAL");
	c = bc;
	c.chan_window = 48;
	CHECK(sl_broker_open(&c) == NULL && rte_errno == EINVAL,
	      "a channel window not a power of two: EINVAL");
	c = bc;
	c.window = SL_IDEM_WINDOW;
	CHECK(sl_broker_open(&c) == NULL && rte_errno == EINVAL,
	      "a session window as large as the idempotency window: EINVAL");
	c = bc;
	c.data_dir = "/nonexistent";
	CHECK(sl_broker_open(&c) == NULL && rte_errno == EINVAL,
	      "a data directory without a persistence lcore: EINVAL");
}

/* Topics created before the workers start are attached directly. */
static void
test_create_before_start(void)
{
	struct sl_topic *t;
	int rc = sl_broker_topic_create(b, "pre", 4, 0, NULL);

	t = find("pre");
	CHECK(rc == 0 && t != NULL && t->nparts == 4,
	      "a topic created before start: 4 partitions (%d)", rc);
	CHECK(t != NULL && t->parts[0].owner == 0 && t->parts[1].owner == 1 &&
		      t->parts[2].owner == 0 && t->parts[3].owner == 1,
	      "its partitions alternate between the 2 workers");
}

static void
test_create_errors(void)
{
	struct sl_persist_policy disk = {.durability = SL_PERSIST_DISK};
	char long_name[SL_WIRE_NAME_MAX + 2];
	int rc;

	rc = sl_broker_topic_create(b, "t", 3, 0, NULL);
	CHECK(rc == 0 && find("t") != NULL && sl_coord_topic_count(sl_broker_coord(b)) == 2,
	      "create t with 3 partitions on the running broker (%d)", rc);
	rc = sl_broker_topic_create(b, "t", 1, 0, NULL);
	CHECK(rc == -SL_E_EXISTS && find("t")->nparts == 3,
	      "create t again: -SL_E_EXISTS, the first stays (%d)", rc);
	CHECK(sl_broker_topic_create(b, "", 1, 0, NULL) == -SL_E_NAME &&
		      sl_broker_topic_create(b, "a/b", 1, 0, NULL) == -SL_E_NAME,
	      "an empty name, a name with '/': -SL_E_NAME");
	memset(long_name, 'x', sizeof(long_name) - 1);
	long_name[sizeof(long_name) - 1] = '\0';
	CHECK(sl_broker_topic_create(b, long_name, 1, 0, NULL) == -SL_E_NAME,
	      "a 65-byte name: -SL_E_NAME");
	long_name[SL_WIRE_NAME_MAX] = '\0';
	rc = sl_broker_topic_create(b, long_name, 1, 0, NULL);
	CHECK(rc == 0 && sl_broker_topic_delete(b, long_name) == 0,
	      "a 64-byte name: created and deleted (%d)", rc);
	CHECK(sl_broker_topic_create(b, "z", 0, 0, NULL) == -SL_E_INVAL &&
		      sl_broker_topic_create(b, "z", 9, 0, NULL) == -SL_E_INVAL &&
		      find("z") == NULL,
	      "0 partitions, and 9 over max_parts_per_topic 8: -SL_E_INVAL");
	rc = sl_broker_topic_create(b, "z", 1, 0, &disk);
	CHECK(rc == -SL_E_INVAL && find("z") == NULL,
	      "disk durability without a data directory: -SL_E_INVAL, no topic (%d)", rc);
	CHECK(sl_coord_topic_count(sl_broker_coord(b)) == 2, "still 2 topics");
}

static void
test_part_info(void)
{
	const struct sl_topic *t = find("t");
	uint64_t id;
	int rc;

	rc = sl_broker_part_info(b, "t", 1, &info);
	CHECK(rc == 0 && t != NULL && info.owner == t->parts[1].owner && info.end_id == 0 &&
		      info.log_capacity > 0 && info.log_capacity <= bc.log_bytes &&
		      info.store == NULL && !info.repl && info.nchans == 0,
	      "part_info of a new partition: its owner, empty log, memory only, no channels");
	CHECK(sl_broker_part_info(b, "t", 3, &info) == -SL_E_PARTITION &&
		      sl_broker_part_info(b, "nosuch", 0, &info) == -SL_E_TOPIC,
	      "part_info: partition 3 of 3 -SL_E_PARTITION, unknown topic -SL_E_TOPIC");
	id = publish("t", 1, "one");
	id = id == 1 ? publish("t", 1, "two") : 0;
	rc = sl_broker_part_info(b, "t", 1, &info);
	CHECK(id == 2 && rc == 0 && info.end_id == 2 && info.pubs == 2 && info.msgs_in == 2 &&
		      info.bytes_in == 6,
	      "two publishes to partition 1 show in its snapshot (end %" PRIu64 ")",
	      info.end_id);
	rc = sl_broker_part_info(b, "t", 0, &info);
	CHECK(rc == 0 && info.end_id == 0, "partition 0 stays empty");
}

static struct sl_part_meta
view(uint32_t leader, uint32_t epoch, uint64_t session)
{
	struct sl_part_meta m;

	memset(&m, 0, sizeof(m));
	m.leader = leader;
	m.epoch = epoch;
	m.leader_session = session;
	m.nreplicas = 3;
	m.replicas[0] = 1;
	m.replicas[1] = 2;
	m.replicas[2] = 3;
	m.nisr = 2;
	m.isr[0] = leader;
	m.isr[1] = leader == 1 ? 2 : 1;
	return m;
}

static int
view_is(uint32_t leader, uint32_t epoch, uint64_t session)
{
	struct sl_part_meta m;

	return sl_broker_part_get_view(b, "t", 2, &m) == 0 && m.leader == leader &&
	       m.epoch == epoch && m.leader_session == session;
}

static void
test_views(void)
{
	struct sl_part_meta m;
	int rc, refused;

	CHECK(view_is(1, 1, 0), "a new partition's view: this node leads, epoch 1, no session");
	m = view(2, 3, 100);
	CHECK(sl_broker_part_set_view(b, "nosuch", 0, &m) == -SL_E_TOPIC &&
		      sl_broker_part_set_view(b, "t", 3, &m) == -SL_E_PARTITION &&
		      sl_broker_part_get_view(b, "t", 3, &m) == -SL_E_PARTITION &&
		      sl_broker_part_get_view(b, "nosuch", 0, &m) == -SL_E_TOPIC,
	      "set/get view: unknown topic, partition out of range");
	refused = 0;
	m.nreplicas = 0;
	refused += sl_broker_part_set_view(b, "t", 2, &m) == -SL_E_INVAL;
	m = view(2, 3, 100);
	m.nreplicas = SL_COORD_MAX_REPLICAS + 1;
	refused += sl_broker_part_set_view(b, "t", 2, &m) == -SL_E_INVAL;
	m = view(2, 3, 100);
	m.nisr = 4;
	refused += sl_broker_part_set_view(b, "t", 2, &m) == -SL_E_INVAL;
	m = view(2, 0, 100);
	refused += sl_broker_part_set_view(b, "t", 2, &m) == -SL_E_INVAL;
	m = view(2, 3, 100);
	m.isr[1] = 9;
	refused += sl_broker_part_set_view(b, "t", 2, &m) == -SL_E_INVAL;
	CHECK(refused == 5 && view_is(1, 1, 0),
	      "no replicas, too many replicas, ISR larger than the replicas, epoch 0, an ISR "
	      "member not a replica: -SL_E_INVAL, view unchanged");

	m = view(2, 3, 100);
	rc = sl_broker_part_set_view(b, "t", 2, &m);
	CHECK(rc == 0 && view_is(2, 3, 100),
	      "the first view (none installed yet): node 2 leads, epoch 3, session 100");
	m = view(2, 2, 100);
	CHECK(sl_broker_part_set_view(b, "t", 2, &m) == -SL_E_EPOCH && view_is(2, 3, 100),
	      "same leader, epoch back to 2: -SL_E_EPOCH");
	m = view(3, 3, 101);
	CHECK(sl_broker_part_set_view(b, "t", 2, &m) == -SL_E_EPOCH && view_is(2, 3, 100),
	      "a new leader in the same epoch: -SL_E_EPOCH");
	m = view(3, 4, 100);
	CHECK(sl_broker_part_set_view(b, "t", 2, &m) == -SL_E_EPOCH && view_is(2, 3, 100),
	      "a new leader with a higher epoch but the same session: -SL_E_EPOCH");
	m = view(3, 4, 101);
	CHECK(sl_broker_part_set_view(b, "t", 2, &m) == 0 && view_is(3, 4, 101),
	      "a new leader with a higher epoch and a new session: installed");
	m = view(3, 4, 101);
	m.nisr = 3;
	m.isr[2] = 2;
	m.writes_disabled = 1;
	rc = sl_broker_part_set_view(b, "t", 2, &m);
	CHECK(rc == 0 && sl_broker_part_get_view(b, "t", 2, &m) == 0 && m.nisr == 3 &&
		      m.writes_disabled && m.epoch == 4,
	      "the same leadership with a new ISR and writes disabled: installed");
	m = view(3, 6, 101);
	CHECK(sl_broker_part_set_view(b, "t", 2, &m) == 0 && view_is(3, 6, 101),
	      "the same leader moving to a higher epoch: installed");
	m = view(2, 5, 102);
	CHECK(sl_broker_part_set_view(b, "t", 2, &m) == -SL_E_EPOCH && view_is(3, 6, 101),
	      "a new leader with a lower epoch: -SL_E_EPOCH");
	CHECK(view_is(3, 6, 101) && sl_broker_part_get_view(b, "t", 1, &m) == 0 &&
		      m.leader == 1 && m.epoch == 1,
	      "the other partitions keep their own views");
	/* a publish to the partition this node no longer leads is refused */
	CHECK(publish("t", 2, "x") == 0 && publish("t", 0, "x") == 1,
	      "this node no longer takes publishes for partition 2; partition 0 still does");
}

static void
test_channels(void)
{
	int rc, all = 1, ci;
	uint64_t next = 0;
	uint16_t p;

	rc = sl_broker_chan_create(b, "t", -1, "c", 1);
	for (p = 0; p < 3; p++)
		all &= (ci = chan_idx("t", p, "c")) >= 0 && info.chans[ci].ordered == 1;
	CHECK(rc == 0 && all, "channel c (ordered) created on every partition (%d)", rc);
	CHECK(sl_broker_chan_create(b, "t", -1, "c", 0) == -SL_E_EXISTS &&
		      sl_broker_chan_create(b, "t", 0, "c", 0) == -SL_E_EXISTS,
	      "c again, on all or on one: -SL_E_EXISTS");
	rc = sl_broker_chan_create(b, "t", 1, "d", 0);
	CHECK(rc == 0 && (ci = chan_idx("t", 1, "d")) >= 0 && info.chans[ci].ordered == 0 &&
		      chan_idx("t", 0, "d") < 0 && chan_idx("t", 2, "d") < 0,
	      "channel d (not ordered) on partition 1 only");
	CHECK(sl_broker_chan_create(b, "nosuch", -1, "c", 0) == -SL_E_TOPIC &&
		      sl_broker_chan_create(b, "t", 3, "e", 0) == -SL_E_PARTITION &&
		      sl_broker_chan_create(b, "t", -1, "bad name", 0) == -SL_E_NAME &&
		      sl_broker_chan_create(b, "t", -1, "", 0) == -SL_E_NAME,
	      "unknown topic, partition out of range, bad names");

	/* partition 1 holds messages 1 and 2: move d's position */
	rc = sl_broker_chan_reset(b, "t", 1, "d", SL_OFF_COUNT, 1, &next);
	CHECK(rc == 0 && next == 2, "reset d to after 1 message: next id 2 (%" PRIu64 ")", next);
	rc = sl_broker_chan_reset(b, "t", 1, "d", SL_OFF_END, 0, &next);
	CHECK(rc == 0 && next == 3, "reset d to the end: next id 3 (%" PRIu64 ")", next);
	rc = sl_broker_chan_reset(b, "t", 1, "d", SL_OFF_COUNT, 100, &next);
	CHECK(rc == 0 && next == 3, "a count past the end is clamped to the end");
	CHECK((ci = chan_idx("t", 1, "d")) >= 0 && info.chans[ci].confirmed_id == 3 &&
		      info.chans[ci].depth == 0,
	      "the snapshot shows d's new position");
	CHECK(sl_broker_chan_reset(b, "t", 1, "d", 9, 0, &next) == -SL_E_INVAL &&
		      sl_broker_chan_reset(b, "t", 0, "d", SL_OFF_END, 0, &next) == -SL_E_CHANNEL,
	      "reset: an unknown kind -SL_E_INVAL, a channel the partition lacks "
	      "-SL_E_CHANNEL");

	rc = sl_broker_chan_delete(b, "t", -1, "c");
	for (p = 0; p < 3; p++)
		all &= chan_idx("t", p, "c") < 0;
	CHECK(rc == 0 && all && chan_idx("t", 1, "d") >= 0, "delete c everywhere; d stays");
	CHECK(sl_broker_chan_delete(b, "t", -1, "c") == -SL_E_CHANNEL &&
		      sl_broker_chan_delete(b, "nosuch", -1, "d") == -SL_E_TOPIC,
	      "delete c again: -SL_E_CHANNEL; unknown topic: -SL_E_TOPIC");
	for (p = 0; p < SL_BROKER_MAX_CHANNELS; p++) {
		char name[8];

		snprintf(name, sizeof(name), "k%u", p);
		if (sl_broker_chan_create(b, "t", 0, name, 0) != 0)
			break;
	}
	rc = sl_broker_chan_create(b, "t", 0, "one-more", 0);
	CHECK(p == SL_BROKER_MAX_CHANNELS && rc == -SL_E_LIMIT,
	      "%u channels on a partition, then -SL_E_LIMIT (%d)", SL_BROKER_MAX_CHANNELS, rc);
}

static void
test_delete(void)
{
	struct sl_part_meta m;
	uint64_t reqs;
	int rc = sl_broker_topic_delete(b, "t");

	CHECK(rc == 0 && find("t") == NULL && sl_broker_part_info(b, "t", 0, &info) ==
						       -SL_E_TOPIC,
	      "delete t: gone (%d)", rc);
	CHECK(sl_broker_topic_delete(b, "t") == -SL_E_TOPIC, "delete t again: -SL_E_TOPIC");
	reqs = auto_create_reqs();
	CHECK(publish_wait("t", 0, "x", 200) == 0 && auto_create_reqs() == reqs + 1,
	      "a publish to the deleted topic waits (it asks for auto-creation)");
	rc = sl_broker_topic_create(b, "t", 2, 0, NULL);
	CHECK(rc == 0 && find("t")->nparts == 2 && sl_broker_part_info(b, "t", 1, &info) == 0 &&
		      info.end_id == 0 && info.nchans == 0 &&
		      sl_broker_part_get_view(b, "t", 1, &m) == 0 && m.leader == 1 &&
		      m.epoch == 1 && m.leader_session == 0,
	      "t created again: new, empty partitions, no channels, the default view");
	CHECK(answer_after_ticks(2000) == 1,
	      "the waiting publish, handed back by the tick, runs on the new t (id 1)");
	CHECK(publish("t", 1, "fresh") == 1, "and its partition 1 starts at id 1");
}

static void
test_tick(void)
{
	struct sl_wire_hello hello = {0};
	struct sl_wire_hdr h = {.version = SL_WIRE_VERSION, .seq = seq++};
	struct sl_topic *t = NULL;
	uint32_t i;
	int n, done = 0;

	/* a publish to an unknown topic asks the control thread to create it, and waits */
	CHECK(publish_wait("auto", 0, "x", 200) == 0 && find("auto") == NULL,
	      "a publish to an unknown topic: no answer before a tick, no topic yet");
	for (i = 0; i < 200 && t == NULL; i++) {
		done += sl_broker_tick(b);
		t = find("auto");
		fx_wait_ms(5);
	}
	CHECK(t != NULL && t->nparts == 2 && (t->flags & SL_COORD_TOPIC_AUTO) && done >= 1,
	      "the tick creates it: auto_create_parts partitions, flagged auto");
	CHECK(answer_after_ticks(2000) == 1, "the publish that asked runs on it: OK, id 1");
	CHECK(publish("auto", 0, "x") == 2, "the next publish is taken (id 2)");

	/* a session silent past the timeout (1 s) is expired by the tick */
	n = sl_wire_encode_hello(buf, sizeof(buf), &h, &hello);
	fx_send(&fp, buf, (uint32_t)n);
	n = fx_recv(&fp, buf, sizeof(buf), 2000);
	CHECK(n > 0 && buf[3] == SL_OP_WELCOME && sl_session_count(sl_broker_sessions(b)) == 1,
	      "a HELLO: one session");
	CHECK(sl_broker_tick(b) == 0 && sl_session_count(sl_broker_sessions(b)) == 1,
	      "a tick at once: nothing to do, the session stays");
	fx_wait_ms(1100);
	n = sl_broker_tick(b);
	CHECK(n == 1 && sl_session_count(sl_broker_sessions(b)) == 0,
	      "a tick after the timeout expires it (%d)", n);
}

int
main(int argc, char **argv)
{
	const struct sl_broker_conf *got;

	(void)argc;
	if (fx_eal_init(argv[0], "broker", 3) != 0)
		return 1;
	rcu_register_thread();
	if (fx_port_open(&fp, "btest", 2) != 0)
		return 1;
	fx_broker_conf(&bc, &fp, 2);
	bc.max_parts_per_topic = 8;
	bc.anon_publish = 1;
	bc.auto_create = 1;
	bc.auto_create_parts = 2;
	bc.session_timeout_ms = 1000;
	test_conf();
	b = sl_broker_open(&bc);
	if (b == NULL) {
		printf("broker: %s\n", rte_strerror(rte_errno));
		return 1;
	}
	got = sl_broker_get_conf(b);
	CHECK(got != &bc && got->nworkers == 2 && got->log_bytes == bc.log_bytes &&
		      sl_broker_worker_stats(b, 1) != NULL && sl_broker_worker_stats(b, 2) == NULL &&
		      sl_broker_worker_lcore(b, 1) == bc.worker_lcores[1],
	      "open: the broker's own copy of the conf, 2 workers");
	test_create_before_start();
	if (sl_broker_start(b) != 0)
		return 1;
	test_create_errors();
	test_part_info();
	test_views();
	test_channels();
	test_delete();
	test_tick();
	sl_broker_stop(b);
	sl_broker_close(b);
	sl_port_close(&fp.port);
	rcu_unregister_thread();
	rte_eal_cleanup();
	return check_report();
}
