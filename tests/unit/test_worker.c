/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * Unit test of the worker's request handling (dataplane/worker.c): frames go in on a
 * port made of two rte_rings (fixture.h) and a real worker lcore polls it, decodes them,
 * dispatches them through the opcode table and answers; the test reads the answers from
 * the port's TX ring and the per-opcode counters (ops[opcode], ops_unknown) from the
 * worker's statistics. Covered: HELLO -> WELCOME, PUB and MPUB -> OK (and a retry
 * answered from the idempotency window), SUB -> OK then MSG deliveries, FIN, NOP, CLS of
 * the session, a request without a session, an unknown topic, an unknown opcode, bad
 * versions and truncated frames at each layer, answer opcodes sent to the broker, and
 * the session limit, MSG frames following a session's next hop when its MAC changes.
 * Every request checks that only its own opcode's counter moved.
 * Order across retryable refusals (docs/protocol.md section 8): a pipelined session whose
 * publish is refused (writes disabled, log full) and retried in seq order gets its
 * messages written in seq order, the later ones refused SL_E_OUT_OF_ORDER meanwhile.
 * EAL with --no-huge; no NIC.
 */
#include <arpa/inet.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_eal.h>
#include <rte_mbuf.h>
#include <urcu-qsbr.h>

#include "broker.h"
#include "bytes.h"
#include "err.h"
#include "wire.h"
#include "worker.h"
#include "check.h"
#include "fixture.h"

#define TIMEOUT_MS 2000

static struct fx_port fp;
static struct sl_broker *b;
static uint64_t session;	/* from WELCOME */
static uint64_t next_seq = 1;

static uint8_t req[2048];
static uint8_t ans[2048];

/* An answer, decoded. */
struct answer {
	int len;			/* payload length, or -1 (none) */
	struct sl_wire_hdr h;
	struct sl_wire_ok ok;
	struct sl_wire_err err;
	struct sl_wire_welcome wel;
	struct sl_wire_msg msg;
	struct sl_wire_meta meta;	/* entries point into ans[] */
	char text[SL_WIRE_ERR_TEXT_MAX + 1];
	char body[64];			/* MSG body as a string */
};

static const struct sl_worker_stats *
stats(void)
{
	return sl_broker_worker_stats(b, 0);
}

/* Receive and decode the next frame from the broker (-1 in len: none in time, or to
 * another MAC than the client's); dst (unless NULL): its destination MAC. */
static struct answer
recv_answer_dst(uint8_t dst[6])
{
	struct answer a;

	memset(&a, 0, sizeof(a));
	a.len = fx_recv_dst(&fp, ans, sizeof(ans), TIMEOUT_MS, dst);
	if (a.len < 0 || sl_wire_decode_hdr(ans, (size_t)a.len, &a.h) != 0) {
		a.len = -1;
		return a;
	}
	switch (a.h.opcode) {
	case SL_OP_OK:
		if (sl_wire_decode_ok(ans + SL_WIRE_HDR_LEN, a.h.body_len, &a.ok) != 0)
			a.len = -1;
		break;
	case SL_OP_ERR:
		if (sl_wire_decode_err(ans + SL_WIRE_HDR_LEN, a.h.body_len, &a.err) != 0)
			a.len = -1;
		else
			snprintf(a.text, sizeof(a.text), "%.*s", (int)a.err.text_len,
				 a.err.text);
		break;
	case SL_OP_WELCOME:
		if (sl_wire_decode_welcome(ans + SL_WIRE_HDR_LEN, a.h.body_len, &a.wel) != 0)
			a.len = -1;
		break;
	case SL_OP_META:
		if (sl_wire_decode_meta(ans + SL_WIRE_HDR_LEN, a.h.body_len, a.h.flags,
					&a.meta) != 0)
			a.len = -1;
		break;
	case SL_OP_MSG:
		if (sl_wire_decode_msg(ans + SL_WIRE_HDR_LEN, a.h.body_len, &a.msg) != 0)
			a.len = -1;
		else
			snprintf(a.body, sizeof(a.body), "%.*s", (int)a.msg.len,
				 (const char *)a.msg.data);
		break;
	default:
		a.len = -1;
	}
	return a;
}

static struct answer
recv_answer(void)
{
	return recv_answer_dst(NULL);
}

/* Send a request frame of len bytes and wait for its answer. */
static struct answer
xchg(const void *frame, int len)
{
	struct answer none = {.len = -1};

	if (len < 0 || fx_send(&fp, frame, (uint32_t)len) != 0)
		return none;
	return recv_answer();
}

static struct sl_wire_hdr
hdr(uint64_t sess, uint64_t cookie)
{
	struct sl_wire_hdr h = {.version = SL_WIRE_VERSION, .session = sess, .seq = next_seq++,
				.cookie = cookie};
	return h;
}

static int
enc_pub(struct sl_wire_hdr *h, int mpub, uint16_t part, const char *topic, uint16_t n,
	const char *const *bodies)
{
	const void *msgs[8];
	uint32_t lens[8];
	uint16_t i;

	for (i = 0; i < n; i++) {
		msgs[i] = bodies[i];
		lens[i] = (uint32_t)strlen(bodies[i]);
	}
	return sl_wire_encode_pub(req, sizeof(req), h, mpub, part, topic, 0, 0, n, msgs, lens);
}

static int
enc_nop(struct sl_wire_hdr *h)
{
	struct sl_wire_chan_op op;

	memset(&op, 0, sizeof(op));
	return sl_wire_encode_chan_op(req, sizeof(req), h, SL_OP_NOP, &op, NULL);
}

/* Did exactly ops[op] move by one (op 0: none) and ops_unknown by unknown? */
static int
only_op_counted(const struct sl_worker_stats *before, uint8_t op, uint64_t unknown)
{
	const struct sl_worker_stats *now = stats();
	int k;

	for (k = 0; k < SL_WIRE_OP_MAX; k++)
		if (now->ops[k] - before->ops[k] != (k == op && op != 0 ? 1u : 0u))
			return 0;
	return now->ops_unknown - before->ops_unknown == unknown;
}

/* Wait until *counter differs from old (a frame dropped without an answer). */
static int
counter_moved(const uint64_t *counter, uint64_t old)
{
	uint32_t i;

	for (i = 0; i < TIMEOUT_MS; i++) {
		if (__atomic_load_n(counter, __ATOMIC_RELAXED) != old)
			return 1;
		fx_wait_ms(1);
	}
	return 0;
}

static void
test_hello(void)
{
	struct sl_wire_hello hello = {.client_info = 7, .window = 8};
	struct sl_wire_hdr h = hdr(0, 0xC0FFEE);
	struct sl_worker_stats before = *stats();
	struct answer a;

	a = xchg(req, sl_wire_encode_hello(req, sizeof(req), &h, &hello));
	CHECK(a.len > 0 && a.h.opcode == SL_OP_WELCOME && a.wel.session != 0,
	      "HELLO: WELCOME with a session (%" PRIx64 ")", a.wel.session);
	CHECK(a.h.session == a.wel.session && a.h.seq == h.seq && a.h.cookie == 0xC0FFEE,
	      "WELCOME header: the new session, the request's seq and cookie");
	CHECK(a.wel.window == 8 && a.wel.max_msg == 1024 && a.wel.heartbeat_ms == 1000,
	      "WELCOME: the smaller window (8 of 16), max_msg, heartbeat");
	CHECK(only_op_counted(&before, SL_OP_HELLO, 0) &&
		      stats()->sessions_created == before.sessions_created + 1,
	      "HELLO counted in ops[HELLO] only; one session created");
	session = a.wel.session;
}

static void
test_no_session(void)
{
	struct sl_wire_hdr h = hdr(session ^ 0x100000, 1);	/* same slot, other id */
	const char *body[] = {"x"};
	struct sl_worker_stats before = *stats();
	struct answer a;

	a = xchg(req, enc_pub(&h, 0, 0, "t", 1, body));
	CHECK(a.len > 0 && a.h.opcode == SL_OP_ERR && a.err.code == SL_E_SESSION &&
		      a.err.req_opcode == SL_OP_PUB && a.h.seq == h.seq,
	      "PUB with an unknown session: ERR SESSION (%u)", a.err.code);
	CHECK(only_op_counted(&before, SL_OP_PUB, 0) && stats()->pubs == before.pubs &&
		      stats()->errs_sent == before.errs_sent + 1,
	      "counted in ops[PUB], not published, one error sent");
}

static void
test_unknown_topic(void)
{
	struct sl_wire_hdr h = hdr(session, 2);
	const char *body[] = {"x"};
	struct sl_worker_stats before = *stats();
	struct answer a;

	a = xchg(req, enc_pub(&h, 0, 0, "nosuch", 1, body));
	CHECK(a.len > 0 && a.h.opcode == SL_OP_ERR && a.err.code == SL_E_TOPIC,
	      "PUB to an unknown topic (no auto-creation): ERR TOPIC (%u)", a.err.code);
	CHECK(only_op_counted(&before, SL_OP_PUB, 0), "counted in ops[PUB] only");
}

static void
test_publish(void)
{
	const char *one[] = {"m1"}, *three[] = {"m2", "m3", "m4"};
	struct sl_wire_hdr h = hdr(session, 3), h2;
	struct sl_worker_stats before = *stats();
	struct answer a;
	int len;

	len = enc_pub(&h, 0, 0, "t", 1, one);
	a = xchg(req, len);
	CHECK(a.len > 0 && a.h.opcode == SL_OP_OK && a.ok.req_opcode == SL_OP_PUB &&
		      a.ok.count == 1 && a.ok.id == 1 && a.ok.aux == 1 && a.ok.partition == 0,
	      "PUB: OK, message id 1, partition count 1 (id %" PRIu64 ")", a.ok.id);
	CHECK(a.h.session == session && a.h.seq == h.seq && a.h.cookie == 3,
	      "OK header echoes session, seq and cookie");
	CHECK(only_op_counted(&before, SL_OP_PUB, 0) && stats()->pubs == before.pubs + 1 &&
		      stats()->msgs_in == before.msgs_in + 1 &&
		      stats()->bytes_in == before.bytes_in + 2,
	      "ops[PUB] only; pubs, msgs_in, bytes_in counted");

	/* the same frame again: a retry, answered from the idempotency window */
	before = *stats();
	a = xchg(req, len);
	CHECK(a.len > 0 && a.h.opcode == SL_OP_OK && a.ok.id == 1 && a.ok.aux == 1 &&
		      stats()->dups == before.dups + 1 && stats()->pubs == before.pubs,
	      "a retry of the PUB: the same answer, nothing written again");
	CHECK(only_op_counted(&before, SL_OP_PUB, 0), "the retry counted in ops[PUB]");

	h2 = hdr(session, 4);
	before = *stats();
	a = xchg(req, enc_pub(&h2, 1, 0, "t", 3, three));
	CHECK(a.len > 0 && a.h.opcode == SL_OP_OK && a.ok.req_opcode == SL_OP_MPUB &&
		      a.ok.count == 3 && a.ok.id == 2 && a.ok.aux == 4,
	      "MPUB of 3: OK ids 2..4 (id %" PRIu64 " count %u)", a.ok.id, a.ok.count);
	CHECK(only_op_counted(&before, SL_OP_MPUB, 0) && stats()->msgs_in == before.msgs_in + 3,
	      "ops[MPUB] only, 3 messages in");

	h2 = hdr(session, 5);
	before = *stats();
	a = xchg(req, enc_pub(&h2, 0, 9, "t", 1, one));
	CHECK(a.len > 0 && a.h.opcode == SL_OP_ERR && a.err.code == SL_E_PARTITION &&
		      a.err.partition == 9,
	      "PUB to partition 9 of a 1-partition topic: ERR PARTITION");
	CHECK(only_op_counted(&before, SL_OP_PUB, 0), "counted in ops[PUB] only");
}

/* SUB, then the four messages arrive as MSG frames, then FIN them. */
static void
test_subscribe(void)
{
	struct sl_wire_sub sub;
	struct sl_wire_chan_op op;
	struct sl_wire_hdr h = hdr(session, 6);
	struct sl_worker_stats before = *stats();
	struct sl_part_info *info = calloc(1, sizeof(*info));
	struct answer a;
	uint64_t ids[4], sub_id;
	uint32_t n = 0, ok_ids = 0, ok_body = 0, i;
	int rc;

	memset(&sub, 0, sizeof(sub));
	sub.addr.topic = "t";
	sub.addr.topic_len = 1;
	sub.addr.channel = "c";
	sub.addr.channel_len = 1;
	sub.rdy = 10;
	a = xchg(req, sl_wire_encode_sub(req, sizeof(req), &h, &sub));
	CHECK(a.len > 0 && a.h.opcode == SL_OP_OK && a.ok.req_opcode == SL_OP_SUB &&
		      a.ok.id != 0 && a.ok.aux == 4,
	      "SUB: OK with a subscription id (%" PRIx64 "), partition end 4", a.ok.id);
	sub_id = a.ok.id;
	CHECK(only_op_counted(&before, SL_OP_SUB, 0), "counted in ops[SUB] only");
	for (i = 0; i < 4; i++) {
		char want[8];

		a = recv_answer();
		if (a.len < 0 || a.h.opcode != SL_OP_MSG)
			break;
		n++;
		snprintf(want, sizeof(want), "m%u", i + 1);
		ok_ids += a.msg.msg_id == i + 1 && a.msg.sub_id == sub_id &&
			  a.h.cookie == sub_id && a.h.session == session && a.msg.attempts == 1;
		ok_body += strcmp(a.body, want) == 0;
		ids[i] = a.msg.msg_id;
	}
	CHECK(n == 4 && ok_ids == 4 && ok_body == 4,
	      "the 4 messages delivered in order as MSG frames of the subscription (%u)", n);
	CHECK(fx_recv(&fp, ans, sizeof(ans), 50) == -1, "and nothing more");

	memset(&op, 0, sizeof(op));
	op.addr = sub.addr;
	op.count = 4;
	h = hdr(session, 7);
	before = *stats();
	a = xchg(req, sl_wire_encode_chan_op(req, sizeof(req), &h, SL_OP_FIN, &op, ids));
	CHECK(a.len > 0 && a.h.opcode == SL_OP_OK && a.ok.req_opcode == SL_OP_FIN &&
		      a.ok.count == 4,
	      "FIN of the 4 ids: OK, 4 finished (%u)", a.ok.count);
	CHECK(only_op_counted(&before, SL_OP_FIN, 0), "counted in ops[FIN] only");

	rc = info != NULL ? sl_broker_part_info(b, "t", 0, info) : -1;
	CHECK(rc == 0 && info->nchans == 1 && strcmp(info->chans[0].name, "c") == 0 &&
		      info->chans[0].nsubs == 1 && info->chans[0].confirmed_id == 5 &&
		      info->chans[0].depth == 0,
	      "the partition's channel c: one subscriber, everything confirmed");
	free(info);
}

/*
 * The client's next hop changes under a live session (a Linux bridge's MAC moves when a
 * port leaves it): after a request of the session from the new MAC, MSG frames go there,
 * and what the subscriber held (sent to the old MAC) is delivered again. They went to the
 * MAC of the HELLO before, lost until the message timeout (nsq_nsqjs_parts_failover's
 * 60 s stall).
 */
static void
test_next_hop(void)
{
	static const uint8_t hop2[6] = {0x02, 0, 0, 0, 0, 0x05};
	const char *one[] = {"hop"}, *held[] = {"held"};
	struct sl_wire_chan_op op;
	struct sl_wire_hdr h = hdr(session, 20);
	uint8_t old[6], dst[6] = {0}, msg_dst[6] = {0};
	struct answer a;
	uint64_t id = 0, ids[2] = {0};
	int i, ok = 0;

	/* one message delivered to the first MAC and held (not finished) */
	if (fx_send(&fp, req, (uint32_t)enc_pub(&h, 0, 0, "t", 1, held)) != 0)
		CHECK(0, "send PUB");
	for (i = 0; i < 2; i++) {
		a = recv_answer();
		if (a.len > 0 && a.h.opcode == SL_OP_MSG && strcmp(a.body, "held") == 0)
			ids[0] = a.msg.msg_id;
	}
	CHECK(ids[0] != 0, "a message delivered to the first MAC, held (id %" PRIu64 ")",
	      ids[0]);
	memcpy(old, fp.cli.mac, 6);
	memcpy(fp.cli.mac, hop2, 6);
	h = hdr(session, 23);
	a = xchg(req, enc_nop(&h));
	CHECK(a.len > 0 && a.h.opcode == SL_OP_OK, "NOP of the session from another MAC: OK");
	/* what it held went to the old MAC, maybe lost: it comes again, to the new one */
	a = recv_answer_dst(dst);
	CHECK(a.len > 0 && a.h.opcode == SL_OP_MSG && a.msg.msg_id == ids[0] &&
		      a.msg.attempts == 2 && memcmp(dst, hop2, 6) == 0,
	      "the held message comes again, attempt 2, to the new next hop");
	h = hdr(session, 21);
	if (fx_send(&fp, req, (uint32_t)enc_pub(&h, 0, 0, "t", 1, one)) != 0)
		CHECK(0, "send PUB");
	for (i = 0; i < 2; i++) {	/* its OK and the MSG to the subscription of channel c */
		a = recv_answer_dst(dst);
		if (a.len > 0 && a.h.opcode == SL_OP_OK && a.ok.req_opcode == SL_OP_PUB)
			ok++;
		if (a.len > 0 && a.h.opcode == SL_OP_MSG && strcmp(a.body, "hop") == 0) {
			id = a.msg.msg_id;
			memcpy(msg_dst, dst, 6);
		}
	}
	CHECK(ok == 1, "PUB: OK");
	CHECK(id != 0 && memcmp(msg_dst, hop2, 6) == 0,
	      "its MSG frame goes to the session's new next hop (id %" PRIu64 ", to "
	      "%02x:..:%02x)", id, msg_dst[0], msg_dst[5]);
	memset(&op, 0, sizeof(op));
	op.addr.topic = "t";
	op.addr.topic_len = 1;
	op.addr.channel = "c";
	op.addr.channel_len = 1;
	op.count = 2;
	ids[1] = id;
	h = hdr(session, 22);
	a = xchg(req, sl_wire_encode_chan_op(req, sizeof(req), &h, SL_OP_FIN, &op, ids));
	CHECK(a.len > 0 && a.h.opcode == SL_OP_OK && a.ok.count == 2, "FIN of both: OK");
	memcpy(fp.cli.mac, old, 6);	/* the next requests come from the first MAC again */
}

static void
test_nop(void)
{
	struct sl_wire_hdr h = hdr(session, 8);
	struct sl_worker_stats before = *stats();
	struct answer a;

	a = xchg(req, enc_nop(&h));
	CHECK(a.len > 0 && a.h.opcode == SL_OP_OK && a.ok.req_opcode == SL_OP_NOP &&
		      a.h.cookie == 8,
	      "NOP: OK");
	CHECK(only_op_counted(&before, SL_OP_NOP, 0), "counted in ops[NOP] only");
}

/* Frames with our magic but a bad header, and truncated frames. */
static void
test_bad_frames(void)
{
	const char *one[] = {"hello"};
	struct sl_wire_hdr h = hdr(session, 9);
	struct sl_worker_stats before = *stats();
	struct answer a;
	uint64_t end_before;
	int len;

	/* an opcode no request has: ERR OPCODE, counted in ops_unknown */
	len = enc_nop(&h);
	req[3] = 0x0E;
	a = xchg(req, len);
	CHECK(a.len > 0 && a.h.opcode == SL_OP_ERR && a.err.code == SL_E_OPCODE &&
		      a.err.req_opcode == 0x0E && a.h.session == session && a.h.seq == h.seq &&
		      a.h.cookie == 9,
	      "opcode 0x0E: ERR OPCODE echoing session, seq and cookie (%u)", a.err.code);
	CHECK(only_op_counted(&before, 0, 1), "counted in ops_unknown, no ops[] entry moved");

	h = hdr(session, 10);
	len = enc_nop(&h);
	req[3] = 0xFF;
	before = *stats();
	a = xchg(req, len);
	CHECK(a.len > 0 && a.h.opcode == SL_OP_ERR && a.err.code == SL_E_OPCODE &&
		      only_op_counted(&before, 0, 1),
	      "opcode 0xFF: ERR OPCODE, counted in ops_unknown");

	h = hdr(session, 11);
	len = enc_nop(&h);
	req[2] = 2;
	before = *stats();
	a = xchg(req, len);
	CHECK(a.len > 0 && a.h.opcode == SL_OP_ERR && a.err.code == SL_E_VERSION &&
		      a.h.cookie == 11 && only_op_counted(&before, 0, 0),
	      "version 2: ERR VERSION, no request counter moved");

	/* a PUB whose datagram lost its last 3 bytes: body_len says more than arrived */
	end_before = stats()->msgs_in;
	h = hdr(session, 12);
	len = enc_pub(&h, 0, 0, "t", 1, one);
	before = *stats();
	a = xchg(req, len - 3);
	CHECK(a.len > 0 && a.h.opcode == SL_OP_ERR && a.err.code == SL_E_MALFORMED &&
		      a.err.req_opcode == SL_OP_PUB && a.h.seq == h.seq && a.h.cookie == 12,
	      "a truncated PUB datagram: ERR MALFORMED (%u)", a.err.code);
	CHECK(only_op_counted(&before, 0, 0) && stats()->msgs_in == end_before,
	      "refused before the opcode table: no counter, nothing published");

	/* a PUB whose body is cut inside (header consistent, msg_len too long) */
	h = hdr(session, 13);
	len = enc_pub(&h, 0, 0, "t", 1, one);
	sl_bytes_put_be16(req + 6, (uint16_t)(h.body_len - 2));
	before = *stats();
	a = xchg(req, len - 2);
	CHECK(a.len > 0 && a.h.opcode == SL_OP_ERR && a.err.code == SL_E_MALFORMED &&
		      a.h.cookie == 13,
	      "a PUB body shorter than its msg_len: ERR MALFORMED (%u)", a.err.code);
	CHECK(only_op_counted(&before, SL_OP_PUB, 0) && stats()->msgs_in == end_before,
	      "counted in ops[PUB] (the body decoder refused it), nothing published");

	/* a datagram shorter than a header: not a sluice frame, dropped silently */
	before = *stats();
	fx_send(&fp, req, 20);
	CHECK(counter_moved(&stats()->drop_bad_magic, before.drop_bad_magic) &&
		      fx_recv(&fp, ans, sizeof(ans), 50) == -1 && only_op_counted(&before, 0, 0),
	      "a 20-byte datagram: dropped without an answer (drop_bad_magic)");

	/* a frame cut short on the wire: its IP length says more than the frame holds */
	h = hdr(session, 14);
	len = enc_nop(&h);
	before = *stats();
	fx_send_cut(&fp, req, (uint32_t)len, 5);
	CHECK(counter_moved(&stats()->drops[SL_NET_DROP_SHORT], before.drops[SL_NET_DROP_SHORT]) &&
		      fx_recv(&fp, ans, sizeof(ans), 50) == -1 && only_op_counted(&before, 0, 0),
	      "a frame shorter than its IP length: dropped without an answer (drop_short)");

	/* a broker-to-client opcode sent to the broker: dropped */
	h = hdr(session, 15);
	len = enc_nop(&h);
	req[3] = SL_OP_OK;
	sl_bytes_put_be16(req + 6, 0);
	before = *stats();
	fx_send(&fp, req, SL_WIRE_HDR_LEN);
	CHECK(counter_moved(&stats()->drop_answer_op, before.drop_answer_op) &&
		      fx_recv(&fp, ans, sizeof(ans), 50) == -1 && only_op_counted(&before, 0, 0),
	      "an OK sent to the broker: dropped without an answer (drop_answer_op)");
}


/* MPUB_PART: an MPUB of 40 messages in 3 fragments, out of order: one OK when the last
 * arrives, nothing before; a retransmitted fragment gets the same OK; a fragment that
 * contradicts its MPUB drops it (ERR MALFORMED, nothing written); another session's
 * fragment is refused (docs/protocol.md "MPUB_PART"). */
static uint8_t big[4096];
static struct sl_wire_pub mp_body;

static int
enc_frag(struct sl_wire_hdr *h, uint8_t index, uint32_t chunk, const uint8_t *bytes)
{
	struct sl_wire_mpart f = {
		.partition = 0, .topic_len = 2, .topic = "mp", .index = index, .nfrag = 3,
		.count = mp_body.count, .total_len = mp_body.msgs_len, .off = index * chunk,
	};

	f.chunk_len = index == 2 ? mp_body.msgs_len - f.off : chunk;
	f.chunk = (bytes != NULL ? bytes : mp_body.msg) + f.off;
	return sl_wire_encode_mpart(req, sizeof(req), h, &f);
}

static void
test_mpub_part(void)
{
	static char bodies[40][61];
	const void *msgs[40];
	uint32_t lens[40], i, chunk;
	uint8_t other[4096];
	struct sl_wire_hdr h = hdr(session, 50), mh = h;
	struct sl_worker_stats before = *stats();
	struct answer a;
	uint64_t first;
	int n, silent;

	for (i = 0; i < 40; i++) {
		snprintf(bodies[i], sizeof(bodies[i]), "%060u", i);
		msgs[i] = bodies[i];
		lens[i] = 60;
	}
	n = sl_wire_encode_pub(big, sizeof(big), &mh, 1, 0, "mp", 0, 0, 40, msgs, lens);
	CHECK(n > 0 && sl_wire_decode_pub(big + SL_WIRE_HDR_LEN, (size_t)n - SL_WIRE_HDR_LEN, 1,
					  &mp_body) == 0 && mp_body.msgs_len == 2560,
	      "an MPUB of 40 x 60 bytes: 2560 bytes of elements, more than max_msg allows");
	chunk = 1000;
	silent = fx_send(&fp, req, (uint32_t)enc_frag(&h, 2, chunk, NULL)) == 0 &&
		 fx_recv(&fp, ans, sizeof(ans), 50) == -1;
	silent = silent && fx_send(&fp, req, (uint32_t)enc_frag(&h, 0, chunk, NULL)) == 0 &&
		 fx_recv(&fp, ans, sizeof(ans), 50) == -1;
	CHECK(silent && stats()->msgs_in == before.msgs_in,
	      "fragments 2 and 0: no answer, nothing written yet");
	a = xchg(req, enc_frag(&h, 1, chunk, NULL));
	CHECK(a.len > 0 && a.h.opcode == SL_OP_OK && a.ok.req_opcode == SL_OP_MPUB_PART &&
		      a.ok.count == 40 && a.h.seq == h.seq && a.h.cookie == 50 &&
		      stats()->msgs_in == before.msgs_in + 40 &&
		      stats()->mpart.completed == before.mpart.completed + 1,
	      "fragment 1 completes it: one OK for 40 messages (count %u)", a.ok.count);
	first = a.ok.id;
	a = xchg(req, enc_frag(&h, 0, chunk, NULL));
	CHECK(a.len > 0 && a.h.opcode == SL_OP_OK && a.ok.id == first && a.ok.count == 40 &&
		      stats()->msgs_in == before.msgs_in + 40,
	      "a retransmitted fragment: the same OK, nothing written again");

	/* a fragment 0 with other bytes after the real one: the MPUB is dropped */
	h = hdr(session, 51);
	memcpy(other, mp_body.msg, mp_body.msgs_len);
	other[10] ^= 1;
	silent = fx_send(&fp, req, (uint32_t)enc_frag(&h, 0, chunk, NULL)) == 0 &&
		 fx_recv(&fp, ans, sizeof(ans), 50) == -1;
	a = xchg(req, enc_frag(&h, 0, chunk, other));
	CHECK(silent && a.len > 0 && a.h.opcode == SL_OP_ERR && a.err.code == SL_E_MALFORMED &&
		      a.err.req_opcode == SL_OP_MPUB_PART && strstr(a.text, "MPUB_PART") != NULL,
	      "a conflicting copy of fragment 0: ERR MALFORMED (%u, \"%s\")", a.err.code,
	      a.text);
	silent = fx_send(&fp, req, (uint32_t)enc_frag(&h, 1, chunk, NULL)) == 0 &&
		 fx_recv(&fp, ans, sizeof(ans), 50) == -1;
	silent = silent && fx_send(&fp, req, (uint32_t)enc_frag(&h, 2, chunk, NULL)) == 0 &&
		 fx_recv(&fp, ans, sizeof(ans), 50) == -1;
	CHECK(silent && stats()->msgs_in == before.msgs_in + 40,
	      "its other fragments start afresh: no answer, nothing written (all or none)");

	/* a fragment of another (unknown) session: refused before any reassembly */
	h = hdr(session ^ 0x200000, 52);
	a = xchg(req, enc_frag(&h, 1, chunk, NULL));
	CHECK(a.len > 0 && a.h.opcode == SL_OP_ERR && a.err.code == SL_E_SESSION,
	      "a fragment with another session id: ERR SESSION (%u)", a.err.code);
	/* a malformed fragment: index beyond nfrag */
	h = hdr(session, 53);
	n = enc_frag(&h, 1, chunk, NULL);
	req[SL_WIRE_HDR_LEN + 4 + 2] = 3;	/* index 3 of 3 */
	a = xchg(req, n);
	CHECK(a.len > 0 && a.h.opcode == SL_OP_ERR && a.err.code == SL_E_MALFORMED,
	      "fragment index 3 of 3: ERR MALFORMED (%u)", a.err.code);
}

/* HELLO until the session table is full, then CLS of the session. */
static void
test_sessions(void)
{
	struct sl_wire_hello hello = {0};
	struct sl_wire_chan_op op;
	struct sl_worker_stats before;
	struct sl_wire_hdr h;
	struct answer a;
	uint64_t ids[3] = {0};
	uint32_t i, welcomed = 0;

	for (i = 0; i < 3; i++) {	/* 4 sessions in all */
		h = hdr(0, 20 + i);
		a = xchg(req, sl_wire_encode_hello(req, sizeof(req), &h, &hello));
		if (a.len > 0 && a.h.opcode == SL_OP_WELCOME && a.wel.session != session &&
		    a.wel.window == 16) {
			ids[i] = a.wel.session;
			welcomed++;
		}
	}
	CHECK(welcomed == 3 && ids[0] != ids[1] && ids[1] != ids[2] && ids[0] != ids[2],
	      "3 more HELLOs: 3 distinct sessions, the broker's window (16)");
	h = hdr(0, 30);
	before = *stats();
	a = xchg(req, sl_wire_encode_hello(req, sizeof(req), &h, &hello));
	CHECK(a.len > 0 && a.h.opcode == SL_OP_ERR && a.err.code == SL_E_LIMIT &&
		      a.h.cookie == 30 && strstr(a.text, "sessions") != NULL,
	      "a 5th HELLO with max_sessions 4: ERR LIMIT (%u, \"%s\")", a.err.code, a.text);
	CHECK(only_op_counted(&before, SL_OP_HELLO, 0) &&
		      stats()->sessions_created == before.sessions_created,
	      "counted in ops[HELLO], no session created");

	/* CLS with an empty address closes the session: later requests need a HELLO */
	memset(&op, 0, sizeof(op));
	h = hdr(ids[0], 31);
	before = *stats();
	a = xchg(req, sl_wire_encode_chan_op(req, sizeof(req), &h, SL_OP_CLS, &op, NULL));
	CHECK(a.len > 0 && a.h.opcode == SL_OP_OK && a.ok.req_opcode == SL_OP_CLS &&
		      only_op_counted(&before, SL_OP_CLS, 0),
	      "CLS of a session: OK, counted in ops[CLS] only");
	h = hdr(ids[0], 32);
	a = xchg(req, enc_nop(&h));
	CHECK(a.len > 0 && a.h.opcode == SL_OP_ERR && a.err.code == SL_E_SESSION,
	      "a NOP on the closed session: ERR SESSION (%u)", a.err.code);
	h = hdr(ids[1], 33);
	a = xchg(req, enc_nop(&h));
	CHECK(a.len > 0 && a.h.opcode == SL_OP_OK, "another session is unaffected");
}

/* ---- order across retryable refusals ---- */

/* One publish of the order tests: the frame's header, and its outcome. */
struct opub {
	struct sl_wire_hdr h;
	const char *topic;
	const char *body;
	uint16_t code;		/* the last answer: 0 OK, else the ERR code; 0xFFFF none */
	uint64_t id;		/* message id, once OK */
};

static void
opub_init(struct opub *o, const char *topic, const char *body)
{
	o->h = hdr(session, 0);
	o->h.cookie = o->h.seq;
	o->topic = topic;
	o->body = body;
	o->code = 0xFFFF;
	o->id = 0;
}

/* Send o's frame (again: with the RETRY flag, same session, seq and cookie). */
static int
opub_send(struct opub *o)
{
	const char *bodies[] = {o->body};
	struct sl_wire_hdr h = o->h;

	if (o->code != 0xFFFF)
		h.flags |= SL_WIRE_F_RETRY;
	return fx_send(&fp, req, (uint32_t)enc_pub(&h, 0, 0, o->topic, 1, bodies));
}

/* Receive `want` answers and file them by seq among o[0..n). Returns how many came. */
static int
opub_collect(struct opub *o, int n, int want)
{
	int got = 0, i;

	while (got < want) {
		struct answer a = recv_answer();

		if (a.len < 0)
			break;
		for (i = 0; i < n; i++) {
			if (o[i].h.seq != a.h.seq)
				continue;
			o[i].code = a.h.opcode == SL_OP_OK ? 0 : a.err.code;
			o[i].id = a.h.opcode == SL_OP_OK ? a.ok.id : 0;
		}
		got++;
	}
	return got;
}

static int
retryable(uint16_t code)
{
	return code == SL_E_FULL || code == SL_E_WRITE_DISABLED || code == SL_E_OUT_OF_ORDER;
}

/* What libsluice does: send every refused publish again, all of them, in seq order, and
 * collect the answers, until none is refused (the broker may still be busy: each round
 * waits for its answers). 0 when all were accepted, else -1. */
static int
opub_retry_in_order(struct opub *o, int n)
{
	int round, i, sent;

	for (round = 0; round < 100000; round++) {
		for (i = 0, sent = 0; i < n; i++)
			if (retryable(o[i].code) && opub_send(&o[i]) == 0)
				sent++;
		if (sent == 0)
			break;
		if (opub_collect(o, n, sent) != sent)
			return -1;
	}
	for (i = 0; i < n; i++)
		if (o[i].code != 0)
			return -1;
	return 0;
}

/* Pairs of accepted publishes written in the other order than their seqs. */
static int
reorderings(const struct opub *o, int n)
{
	int i, j, k = 0;

	for (i = 0; i < n; i++)
		for (j = i + 1; j < n; j++)
			k += o[i].code == 0 && o[j].code == 0 && o[i].id > o[j].id;
	return k;
}

static int
set_writes_disabled(const char *topic, uint8_t off)
{
	struct sl_part_meta m;
	int rc = sl_broker_part_get_view(b, topic, 0, &m);

	if (rc != 0)
		return rc;
	m.writes_disabled = off;
	return sl_broker_part_set_view(b, topic, 0, &m);
}

/* Writes disabled while a pipelined session publishes: the refused publish is retried
 * first and the later ones are refused meanwhile, so the log holds them in seq order. */
static void
test_order_write_disabled(void)
{
	struct opub o[5];
	struct answer a;
	struct sl_wire_hdr h;
	const char *one[] = {"x"};
	int rc;

	opub_init(&o[0], "o", "o1");
	CHECK(opub_send(&o[0]) == 0 && opub_collect(o, 1, 1) == 1 && o[0].code == 0,
	      "order: the first publish is written (%u)", o[0].code);
	rc = set_writes_disabled("o", 1);
	opub_init(&o[1], "o", "o2");
	CHECK(rc == 0 && opub_send(&o[1]) == 0 && opub_collect(o, 2, 1) == 1 &&
		      o[1].code == SL_E_WRITE_DISABLED,
	      "order: with writes disabled the second is refused WRITE_DISABLED (%u)",
	      o[1].code);
	rc = set_writes_disabled("o", 0);
	/* pipelined: the next three leave before the refused one is retried */
	opub_init(&o[2], "o", "o3");
	opub_init(&o[3], "o", "o4");
	opub_init(&o[4], "o", "o5");
	CHECK(rc == 0 && opub_send(&o[2]) == 0 && opub_send(&o[3]) == 0 &&
		      opub_send(&o[4]) == 0 && opub_collect(o, 5, 3) == 3,
	      "order: writes enabled again, three more publishes answered");
	CHECK(o[2].code == SL_E_OUT_OF_ORDER && o[3].code == SL_E_OUT_OF_ORDER &&
		      o[4].code == SL_E_OUT_OF_ORDER,
	      "order: the later publishes are refused OUT_OF_ORDER (%u %u %u)", o[2].code,
	      o[3].code, o[4].code);

	/* the hole is this session's and this partition's only */
	h = hdr(session, 90);
	a = xchg(req, enc_pub(&h, 0, 0, "f", 1, one));
	CHECK(a.len > 0 && a.h.opcode == SL_OP_OK, "order: the session's publish to another "
	      "topic is not held back");

	CHECK(opub_retry_in_order(o, 5) == 0, "order: every publish accepted once retried "
	      "in seq order");
	rc = reorderings(o, 5);
	printf("# order (writes disabled): %d reordering(s); ids %" PRIu64 " %" PRIu64
	       " %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", rc, o[0].id, o[1].id, o[2].id,
	       o[3].id, o[4].id);
	CHECK(rc == 0 && o[1].id == o[0].id + 1 && o[4].id == o[0].id + 4,
	      "order: the partition holds the session's messages in seq order (%d "
	      "reorderings)", rc);
}

/* A full log (memory only, no channel): the refused publish is written before a later
 * one once a channel lets the log be trimmed. */
static void
test_order_full(void)
{
	static char big[1001];
	struct opub o[3];
	uint64_t next_id;
	int i, rc;

	memset(big, 'f', sizeof(big) - 1);
	for (i = 0; i < 4096; i++) {
		opub_init(&o[0], "f", big);
		if (opub_send(&o[0]) != 0 || opub_collect(o, 1, 1) != 1 || o[0].code != 0)
			break;
	}
	CHECK(o[0].code == SL_E_FULL, "order: a memory log without a channel fills up: FULL "
	      "after %d publishes (%u)", i, o[0].code);
	rc = sl_broker_chan_create(b, "f", 0, "c", 0);
	rc = rc != 0 ? rc : sl_broker_chan_reset(b, "f", 0, "c", SL_OFF_END, 0, &next_id);
	CHECK(rc == 0, "order: a channel at the end lets the log be trimmed (%d)", rc);
	/* a later publish of the session, sent until the log has room (or it is refused
	 * for the refused one's sake) */
	opub_init(&o[1], "f", "after");
	do {
		if (opub_send(&o[1]) != 0 || opub_collect(o, 3, 1) != 1)
			break;
	} while (o[1].code == SL_E_FULL);
	opub_init(&o[2], "f", "after2");
	CHECK(opub_send(&o[2]) == 0 && opub_collect(o, 3, 1) == 1, "order: one more publish");
	CHECK(opub_retry_in_order(o, 3) == 0, "order: all three accepted once retried in seq "
	      "order");
	rc = reorderings(o, 3);
	printf("# order (full): %d reordering(s); ids %" PRIu64 " %" PRIu64 " %" PRIu64 "\n",
	       rc, o[0].id, o[1].id, o[2].id);
	CHECK(rc == 0, "order: the refused publish was written before the later ones (%d "
	      "reorderings)", rc);
}

/* Set partition part of topic: leader, epoch, replicas {1, leader} (leader 0: none). */
static int
set_leader(const char *topic, uint16_t part, uint32_t leader, uint32_t epoch)
{
	struct sl_part_meta m;
	int rc = sl_broker_part_get_view(b, topic, part, &m);

	if (rc != 0)
		return rc;
	m.leader = leader;
	m.epoch = epoch;
	m.nreplicas = 2;
	m.replicas[0] = 1;
	m.replicas[1] = 2;
	m.nisr = 2;
	m.isr[0] = 1;
	m.isr[1] = 2;
	return sl_broker_part_set_view(b, topic, part, &m);
}

static struct answer
metadata(uint64_t sess, const char *topic, uint16_t first)
{
	struct sl_wire_hdr h = hdr(sess, 0xDA7A);

	return xchg(req, sl_wire_encode_metareq(req, sizeof(req), &h, first, topic));
}

/* METADATA (docs/protocol.md): answered without a session, META with this node's view
 * of each partition's leader (address from the node table), paged from first_partition;
 * NOT_LEADER's text names the leader. */
static void
test_metadata(void)
{
	struct sl_worker_stats before = *stats();
	struct sl_wire_meta_entry e;
	const char *one[] = {"x"};
	struct sl_wire_hdr h;
	struct answer a;
	uint32_t ip12;
	int rc;

	a = metadata(0, "t", 0);
	CHECK(a.len > 0 && a.h.opcode == SL_OP_META && a.h.cookie == 0xDA7A &&
		      a.h.session == 0 && a.meta.nparts == 1 && a.meta.count == 1,
	      "METADATA without a session: META for the topic's one partition");
	sl_wire_meta_get(&a.meta, 0, &e);
	CHECK(e.partition == 0 && e.leader == 1 && e.epoch == 1 &&
		      e.flags == SL_WIRE_META_F_ALL && e.leader_ip == fp.port.nif.ip &&
		      e.leader_port == fp.port.nif.udp_port_lo,
	      "this node leads, takes writes, is a replica; its own address (flags %#x)",
	      e.flags);
	CHECK(only_op_counted(&before, SL_OP_METADATA, 0), "counted in ops[METADATA] only");
	a = metadata(session, "t", 0);
	CHECK(a.len > 0 && a.h.opcode == SL_OP_META && a.h.session == session,
	      "METADATA in a session: the same answer");
	CHECK(a.h.flags == 0 && !a.meta.v2, "METADATA without SL_WIRE_F_META2: META v1");
	h = hdr(0, 0xDA7B);
	h.flags = SL_WIRE_F_META2;
	a = xchg(req, sl_wire_encode_metareq(req, sizeof(req), &h, 0, "t"));
	sl_wire_meta_get(&a.meta, 0, &e);
	CHECK(a.len > 0 && a.h.opcode == SL_OP_META && a.h.flags == SL_WIRE_F_META2 &&
		      a.meta.v2 && e.max_record == 0 && e.flags == SL_WIRE_META_F_ALL,
	      "METADATA with SL_WIRE_F_META2: META v2, max_record 0 (no replication here)");
	{
		struct sl_broker_conf rc = {.repl_port = 0, .nports = 1};

		rc.ports[0].mtu = 1500;
		CHECK(sl_worker_repl_dgram(&rc) == 0, "no replication: no record bound");
		rc.repl_port = 5151;
		CHECK(sl_worker_repl_dgram(&rc) == 1356,
		      "replication on a 1500 MTU: 1356-byte replica datagrams, max_record 1228 "
		      "(%u)", sl_worker_repl_dgram(&rc));
	}
	a = metadata(0, "nope", 0);
	CHECK(a.len > 0 && a.h.opcode == SL_OP_ERR && a.err.code == SL_E_TOPIC &&
		      a.err.req_opcode == SL_OP_METADATA, "unknown topic: ERR TOPIC");
	a = metadata(0, "t", 1);
	CHECK(a.len > 0 && a.h.opcode == SL_OP_ERR && a.err.code == SL_E_PARTITION,
	      "first_partition past the last: ERR PARTITION");
	h = hdr(0, 1);
	rc = sl_wire_encode_metareq(req, sizeof(req), &h, 0, "t");
	req[SL_WIRE_HDR_LEN + 2] = 2;	/* topic_len beyond the body */
	a = xchg(req, rc);
	CHECK(a.len > 0 && a.h.opcode == SL_OP_ERR && a.err.code == SL_E_MALFORMED,
	      "METADATA with a bad topic_len: ERR MALFORMED");

	/* a three-partition topic: node 2 leads partition 1, nobody leads partition 2 */
	rc = sl_broker_topic_create(b, "nl", 3, 0, NULL);
	rc = rc != 0 ? rc : set_leader("nl", 1, 2, 3);
	rc = rc != 0 ? rc : set_leader("nl", 2, 0, 4);
	CHECK(rc == 0, "topic nl: node 2 leads partition 1, none partition 2 (%d)", rc);
	a = metadata(0, "nl", 0);
	CHECK(a.len > 0 && a.h.opcode == SL_OP_META && a.meta.nparts == 3 &&
		      a.meta.count == 3, "METADATA nl: three entries");
	sl_wire_meta_get(&a.meta, 1, &e);
	ip12 = htonl(0x0A00000C);
	CHECK(e.leader == 2 && e.epoch == 3 && e.flags == SL_WIRE_META_F_REPLICA &&
		      e.leader_ip == ip12 && e.leader_port == fp.port.nif.udp_port_lo,
	      "partition 1: node 2 at its node-table address, this node a replica only");
	sl_wire_meta_get(&a.meta, 2, &e);
	CHECK(e.leader == 0 && e.leader_ip == 0 && e.leader_port == 0 && e.epoch == 4,
	      "partition 2: no leader known");
	a = metadata(0, "nl", 2);
	CHECK(a.len > 0 && a.h.opcode == SL_OP_META && a.meta.first_partition == 2 &&
		      a.meta.count == 1, "paging: from partition 2, one entry");
	h = hdr(session, 2);
	a = xchg(req, enc_pub(&h, 0, 1, "nl", 1, one));
	printf("# NOT_LEADER text: %s\n", a.text);
	CHECK(a.len > 0 && a.h.opcode == SL_OP_ERR && a.err.code == SL_E_NOT_LEADER &&
		      strncmp(a.text, "not the partition leader: node 2 at 10.0.0.12:", 46) == 0 &&
		      strstr(a.text, "leads (epoch 3)") != NULL,
	      "PUB to a partition node 2 leads: NOT_LEADER naming node 2 and its address");
	h = hdr(session, 3);
	a = xchg(req, enc_pub(&h, 0, 2, "nl", 1, one));
	CHECK(a.len > 0 && a.err.code == SL_E_NOT_LEADER &&
		      strcmp(a.text, "not the partition leader: no leader known (epoch 4)") == 0,
	      "PUB to a partition without a leader: NOT_LEADER saying so (%s)", a.text);
}

int
main(int argc, char **argv)
{
	struct sl_broker_conf bc;
	int rc;

	(void)argc;
	if (fx_eal_init(argv[0], "worker", 2) != 0)
		return 1;
	rcu_register_thread();
	if (fx_port_open(&fp, "wtest", 1) != 0)
		return 1;
	fx_broker_conf(&bc, &fp, 1);
	/* a node table (no replication): where METADATA finds another leader's address */
	bc.nnodes = 1;
	bc.nodes[0].id = 2;
	bc.nodes[0].ip = htonl(0x0A00000C);
	bc.nodes[0].port = 5151;
	b = sl_broker_open(&bc);
	if (b == NULL || sl_broker_start(b) != 0) {
		printf("broker: %s\n", rte_strerror(rte_errno));
		return 1;
	}
	rc = sl_broker_topic_create(b, "t", 1, 0, NULL);
	CHECK(rc == 0, "topic t created on the running broker (%d)", rc);
	rc = sl_broker_topic_create(b, "o", 1, 0, NULL);
	rc = rc != 0 ? rc : sl_broker_topic_create(b, "f", 1, 0, NULL);
	rc = rc != 0 ? rc : sl_broker_topic_create(b, "mp", 1, 0, NULL);
	CHECK(rc == 0, "topics o, f and mp created (%d)", rc);

	test_hello();
	test_no_session();
	test_unknown_topic();
	test_publish();
	test_subscribe();
	test_next_hop();
	test_nop();
	test_bad_frames();
	test_order_write_disabled();
	test_order_full();
	test_metadata();
	test_mpub_part();
	test_sessions();

	sl_broker_stop(b);
	sl_broker_close(b);
	sl_port_close(&fp.port);
	rcu_unregister_thread();
	rte_eal_cleanup();
	return check_report();
}
