/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * Unit test of the partition module (dataplane/partition.c) as the worker drives it:
 * publish and MPUB, the leader checks, subscribe, delivery through the emit callback
 * (session checks, no-buffer retry, unencodable skip), FIN, REQ, TOUCH, RDY, CLS,
 * SET_OFFSET, the control commands, trimming on tick, a full log, and the held path
 * with completions on a disk-durability partition whose store fails (fault-injected
 * I/O). The EAL runs with --no-huge (the module allocates with rte_malloc); no port.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_malloc.h>

#include "err.h"
#include "partition.h"
#include "check.h"

static struct sl_session_table *sessions;
static struct sl_part_meta meta;
static struct sl_coord_part cpart;
static struct sl_topic topic;

/* What emit saw. */
static struct {
	int mode;		/* 0 send, -1 no buffer, 1 cannot encode */
	uint32_t n;
	uint64_t ids[256];
	uint16_t attempts[256];
	char body[256][32];
} seen;

static int
emit(void *arg, const struct sl_partition_msg *m)
{
	(void)arg;
	if (seen.mode != 0)
		return seen.mode;
	if (seen.n < 256) {
		seen.ids[seen.n] = m->rec->id;
		seen.attempts[seen.n] = m->attempts;
		snprintf(seen.body[seen.n], sizeof(seen.body[0]), "%.*s", (int)m->rec->len,
			 (const char *)m->rec->data);
	}
	seen.n++;
	return 0;
}

static uint8_t frame[16384];

/* A decoded PUB or MPUB of n bodies "m<k>" (k from first). */
static void
make_pub(struct sl_wire_pub *pub, int mpub, uint16_t n, uint32_t first)
{
	static char bodies[256][16];
	const void *msgs[256];
	uint32_t lens[256];
	struct sl_wire_hdr h = {.version = SL_WIRE_VERSION, .session = 1, .seq = 1};
	uint16_t i;
	int len;

	for (i = 0; i < n; i++) {
		lens[i] = (uint32_t)snprintf(bodies[i], sizeof(bodies[i]), "m%u", first + i);
		msgs[i] = bodies[i];
	}
	len = sl_wire_encode_pub(frame, sizeof(frame), &h, mpub, 0, "t", 0, 0, n, msgs, lens);
	if (len < 0 || sl_wire_decode_pub(frame + SL_WIRE_HDR_LEN, h.body_len, mpub, pub) != 0) {
		printf("cannot build a publish\n");
		exit(1);
	}
}

static void
make_op(struct sl_wire_chan_op *op, const char *chan)
{
	memset(op, 0, sizeof(*op));
	op->addr.topic = "t";
	op->addr.topic_len = 1;
	op->addr.channel = chan;
	op->addr.channel_len = (uint8_t)strlen(chan);
}

static struct sl_partition *
open_part(uint64_t log_bytes)
{
	struct sl_partition_conf pc = {
		.partid = 0,
		.worker = 0,
		.socket_id = SOCKET_ID_ANY,
		.log_bytes = log_bytes,
		.max_msg = 1024,
		.chan_window = 64,
		.msg_timeout_ms = 1000,
		.max_req_delay_ms = 60000,
		.node_id = 1,
		.sessions = sessions,
	};
	struct sl_partition *p = sl_partition_open(&pc);

	if (p == NULL) {
		printf("sl_partition_open failed\n");
		exit(1);
	}
	sl_partition_set_coord(p, &cpart);
	return p;
}

static void
test_publish(void)
{
	struct sl_partition *p = open_part(1 << 20);
	struct sl_partition_res res;
	struct sl_wire_pub pub;
	struct sl_partition_done done[4];
	uint32_t work = 0;
	int rc;

	make_pub(&pub, 0, 1, 1);
	memset(&res, 0, sizeof(res));
	rc = sl_partition_publish(p, &pub, 0, 1000, 0, 7, &res);
	CHECK(rc == 0 && res.id == 1 && res.count == 1 && res.offset == 0 && res.aux == 1,
	      "PUB answered at once without storage or replication: id %" PRIu64, res.id);
	make_pub(&pub, 1, 5, 2);
	rc = sl_partition_publish(p, &pub, 1, 1000, 0, 8, &res);
	CHECK(rc == 0 && res.id == 2 && res.count == 5 && res.aux == 6,
	      "MPUB of 5: ids 2..6 (aux %" PRIu64 ")", res.aux);
	CHECK(sl_partition_poll(p, 0, done, 4, &work) == 0, "no completions without held");

	meta.leader = 2;
	rc = sl_partition_publish(p, &pub, 1, 1000, 0, 9, &res);
	CHECK(rc == -SL_E_NOT_LEADER, "not the leader: refused (%d)", rc);
	meta.leader = 1;
	meta.writes_disabled = 1;
	rc = sl_partition_publish(p, &pub, 1, 1000, 0, 9, &res);
	CHECK(rc == -SL_E_WRITE_DISABLED, "writes disabled: refused (%d)", rc);
	meta.writes_disabled = 0;
	meta.nisr = 0;
	rc = sl_partition_publish(p, &pub, 1, 1000, 0, 9, &res);
	CHECK(rc == -SL_E_QUORUM, "ISR too small: refused (%d)", rc);
	meta.nisr = 1;
	pub.msg_len = 5000;
	rc = sl_partition_publish(p, &pub, 0, 1000, 0, 9, &res);
	CHECK(rc == -SL_E_TOO_BIG, "a body over max_msg: refused (%d)", rc);
	make_pub(&pub, 1, 3, 100);
	pub.count = 4;	/* says 4, holds 3 */
	rc = sl_partition_publish(p, &pub, 1, 1000, 0, 9, &res);
	CHECK(rc == -SL_E_PUB_ARG, "MPUB count not matching its bodies: refused (%d)", rc);
	make_pub(&pub, 0, 1, 7);
	rc = sl_partition_publish(p, &pub, 0, 1000, 0, 9, &res);
	CHECK(rc == 0 && res.id == 7, "nothing written by the refusals: next id 7");
	sl_partition_close(p);
}

static void
test_full(void)
{
	struct sl_partition *p = open_part(64 * 1024);
	struct sl_partition_res res;
	struct sl_wire_pub pub;
	uint32_t n = 0;
	int rc;

	make_pub(&pub, 0, 1, 1);
	while ((rc = sl_partition_publish(p, &pub, 0, 1, 0, 0, &res)) == 0 && n < 1000000)
		n++;
	CHECK(rc == -SL_E_FULL && n > 100, "a log with no channel fills: FULL after %u", n);
	sl_partition_close(p);
}

static void
test_channels(void)
{
	struct sl_partition *p = open_part(1 << 20);
	struct sl_partition_res res;
	struct sl_wire_pub pub;
	struct sl_wire_sub sub;
	struct sl_wire_chan_op op;
	const uint8_t mac[6] = {2, 0, 0, 0, 0, 1};
	struct sl_session *s = sl_session_create(sessions, 0x0100007f, 9999, mac, 0, 32, 0,
						 rte_get_tsc_cycles());
	uint64_t id, be;
	uint32_t i;
	int rc;

	CHECK(s != NULL, "a session");
	for (i = 1; i <= 10; i++) {
		make_pub(&pub, 0, 1, i);
		sl_partition_publish(p, &pub, 0, i, 0, 0, &res);
	}
	memset(&sub, 0, sizeof(sub));
	sub.addr.topic = "t";
	sub.addr.topic_len = 1;
	sub.addr.channel = "c1";
	sub.addr.channel_len = 2;
	sub.rdy = 4;
	rc = sl_partition_subscribe(p, &sub, s->id, 0, 77, &res);
	CHECK(rc == 0 && res.id == 77 && res.aux == 10, "SUB creates c1, sub id 77");
	rc = sl_partition_subscribe(p, &sub, s->id, 0, 78, &res);
	CHECK(rc == 0 && res.id == 77, "SUB again: the same subscription (id %" PRIu64 ")",
	      res.id);
	sub.addr.channel = "../x";
	sub.addr.channel_len = 4;
	CHECK(sl_partition_subscribe(p, &sub, s->id, 0, 79, &res) == -SL_E_NAME,
	      "a bad channel name is refused");

	memset(&seen, 0, sizeof(seen));
	seen.mode = -1;
	CHECK(sl_partition_deliver(p, 0, emit, NULL) == 0, "no buffer: nothing delivered");
	seen.mode = 0;
	CHECK(sl_partition_deliver(p, 0, emit, NULL) == 4 && seen.ids[0] == 1 &&
		      seen.ids[3] == 4 && strcmp(seen.body[0], "m1") == 0,
	      "RDY 4: ids 1..4 delivered in order, after the no-buffer retry");
	CHECK(sl_partition_deliver(p, 0, emit, NULL) == 0, "no credit left");

	make_op(&op, "c1");
	op.count = 1;
	be = __builtin_bswap64(1);
	op.ids = (const uint8_t *)&be;
	rc = sl_partition_chan_op(p, SL_OP_FIN, &op, s->id, 0, 0, &res);
	CHECK(rc == 0 && res.count == 1, "FIN 1");
	rc = sl_partition_chan_op(p, SL_OP_FIN, &op, s->id, 0, 0, &res);
	CHECK(rc == -SL_E_MSG_ID, "FIN 1 again: not in flight (%d)", rc);
	rc = sl_partition_chan_op(p, SL_OP_FIN, &op, s->id + 1, 0, 0, &res);
	CHECK(rc == -SL_E_CHANNEL, "FIN from a session not subscribed (%d)", rc);
	op.msg_id = 2;
	rc = sl_partition_chan_op(p, SL_OP_TOUCH, &op, s->id, 0, 0, &res);
	CHECK(rc == 0 && res.id == 2, "TOUCH 2");
	op.delay_ms = 0;
	rc = sl_partition_chan_op(p, SL_OP_REQ, &op, s->id, 0, 0, &res);
	CHECK(rc == 0, "REQ 2");
	memset(&seen, 0, sizeof(seen));
	sl_partition_deliver(p, 1000, emit, NULL);
	CHECK(seen.n == 2 && seen.ids[0] == 2 && seen.attempts[0] == 2 && seen.ids[1] == 5,
	      "REQ'd 2 comes again (attempt %u), then 5", seen.attempts[0]);

	make_op(&op, "c1");
	op.kind = SL_OFF_COUNT;
	op.value = 8;
	rc = sl_partition_chan_op(p, SL_OP_SET_OFFSET, &op, s->id, 0, 0, &res);
	CHECK(rc == 0 && res.id == 9 && res.aux == 8, "SET_OFFSET count 8: next id 9");
	op.kind = 99;
	CHECK(sl_partition_chan_op(p, SL_OP_SET_OFFSET, &op, s->id, 0, 0, &res) == -SL_E_INVAL,
	      "SET_OFFSET of an unknown kind");
	make_op(&op, "nope");
	CHECK(sl_partition_chan_op(p, SL_OP_RDY, &op, s->id, 0, 0, &res) == -SL_E_CHANNEL,
	      "RDY on an unknown channel");

	/* seen.mode 1: the message cannot be encoded: skipped as finished */
	make_op(&op, "c1");
	op.count = 8;
	sl_partition_chan_op(p, SL_OP_RDY, &op, s->id, 0, 0, &res);
	memset(&seen, 0, sizeof(seen));
	seen.mode = 1;
	sl_partition_deliver(p, 2000, emit, NULL);
	seen.mode = 0;
	CHECK(sl_partition_deliver(p, 2000, emit, NULL) == 0, "unencodable messages skipped");

	CHECK(sl_partition_chan_create(p, "c2", 0) == 0, "command: create c2");
	CHECK(sl_partition_chan_create(p, "c2", 0) == -SL_E_EXISTS, "c2 again: exists");
	CHECK(sl_partition_chan_reset(p, "c2", SL_OFF_END, 0, &id) == 0 && id == 11,
	      "command: reset c2 to the end (%" PRIu64 ")", id);
	CHECK(sl_partition_chan_reset(p, "c2", SL_OFF_COUNT, UINT64_MAX - 1, &id) == 0 &&
		      id == 11, "reset past the end clamps to the end");
	CHECK(sl_partition_chan_delete(p, "c2") == 0, "command: delete c2");
	CHECK(sl_partition_chan_delete(p, "c2") == -SL_E_CHANNEL, "c2 is gone");

	{
		struct sl_part_info *info = calloc(1, sizeof(*info));

		sl_partition_tick(p, 3000);
		sl_partition_info(p, info);
		CHECK(info->end_id == 10 && info->nchans == 1 && info->first_id == 11,
		      "tick trims what every channel finished (first %" PRIu64 ")",
		      info->first_id);
		free(info);
	}
	make_op(&op, "c1");
	CHECK(sl_partition_chan_op(p, SL_OP_CLS, &op, s->id, 0, 0, &res) == 0, "CLS of c1");
	make_op(&op, "c1");
	CHECK(sl_partition_chan_op(p, SL_OP_FIN, &op, s->id, 0, 0, &res) == -SL_E_CHANNEL,
	      "after CLS the session has no subscription");
	sl_partition_close(p);
}

int
main(int argc, char **argv)
{
	char prefix[64];
	struct sl_session_conf sc = {.max_sessions = 16, .socket_id = SOCKET_ID_ANY};
	char *eal[] = {argv[0], "--no-huge", "--no-pci", "-m", "64", "--file-prefix", prefix,
		       "--log-level", "*:error", "--no-telemetry"};

	(void)argc;
	snprintf(prefix, sizeof(prefix), "sl-test-part-%d", getpid());
	if (rte_eal_init((int)(sizeof(eal) / sizeof(eal[0])), eal) < 0) {
		printf("rte_eal_init failed\n");
		return 1;
	}
	sc.timeout_tsc = rte_get_tsc_hz() * 60;
	sessions = sl_session_open(&sc);
	if (sessions == NULL)
		return 1;
	meta.leader = 1;
	meta.nreplicas = 1;
	meta.nisr = 1;
	meta.replicas[0] = meta.isr[0] = 1;
	topic.name_len = 1;
	topic.name[0] = 't';
	cpart.topic = &topic;
	cpart.meta = &meta;
	test_publish();
	test_full();
	test_channels();
	sl_session_close(sessions);
	rte_eal_cleanup();
	return check_report();
}
