/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * A DPDK (kernel-bypass) client of sluiced over net_memif, on libsluice's DPDK transport.
 * Run by memif.sh against a real sluiced process:
 *
 *   memif_client [EAL options] -- BROKER_IP LOCAL_IP TOPIC COUNT [PARTITION]
 *   memif_client [EAL options] -- flood BROKER_IP LOCAL_IP TOPIC ROUNDS
 *
 * Checks: blocking PUB; COUNT pipelined publishes acknowledged with consecutive ids;
 * an MPUB of 32 (all or none, consecutive ids); local and broker-side errors (message too
 * big, unknown topic); a subscriber receives every message exactly once, in order,
 * intact; REQ with a delay redelivers with attempts + 1; an ordered channel never has two
 * messages in flight.
 *
 * flood (for tests/fault/memif_disconnect.sh): keeps sluiced's receive path busy. It opens a
 * session, prints "flooding", then for ROUNDS rounds (0 = until killed) sends a burst of 32
 * jumbo frames (9000 bytes) of a local experimental EtherType that the broker reads and
 * drops, so that its worker spends most of its time inside the memif PMD's receive burst,
 * copying out of the shared regions; every 8th round also an MPUB of 32 (pipelined, window
 * 32). The test SIGKILLs it there, or lets it end (exit without closing the port: the broker
 * sees the control socket close). Exit 0 after ROUNDS rounds, 2 on a set-up error.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include "client.h"
#include "err.h"

static int passed, failed;

#define NOISE_LEN 1500
#define NOISE_SEGS 6
#define NOISE_TYPE 0x88b5	/* IEEE 802 local experimental EtherType 1 */

#define CHECK(cond, ...)                                                                  \
	do {                                                                              \
		if (cond) {                                                               \
			passed++;                                                         \
		} else {                                                                  \
			failed++;                                                         \
			printf("FAIL %s:%d: ", __FILE__, __LINE__);                       \
			printf(__VA_ARGS__);                                              \
			printf("\n");                                                     \
		}                                                                         \
	} while (0)

struct pub_state {
	uint64_t acked;
	uint64_t errors;
	uint64_t last_id;
	uint64_t nonconsecutive;
};

static void
on_pub(void *arg, const struct sl_pub_result *r)
{
	struct pub_state *s = arg;

	if (r->err != 0) {
		s->errors++;
		return;
	}
	if (s->last_id != 0 && r->id != s->last_id + 1)
		s->nonconsecutive++;
	s->last_id = r->id + r->count - 1;
	s->acked += r->count;
}

struct sub_state {
	uint64_t expect_next;	/* next message id expected */
	uint64_t got;
	uint64_t out_of_order;
	uint64_t bad_payload;
	uint64_t first_id;
};

static char (*payloads)[64];
static uint64_t npayloads;

static int
on_msg(void *arg, const struct sl_client_msg *m)
{
	struct sub_state *s = arg;

	if (m->id != s->expect_next)
		s->out_of_order++;
	s->expect_next = m->id + 1;
	if (m->id - s->first_id < npayloads) {
		const char *want = payloads[m->id - s->first_id];

		if (m->len != strlen(want) || memcmp(m->data, want, m->len) != 0)
			s->bad_payload++;
	} else {
		s->bad_payload++;
	}
	s->got++;
	return 0; /* FIN */
}

struct req_state {
	struct sl_client *c;
	uint64_t sub;
	uint64_t first_id;
	int seen;
	uint16_t attempts[4];
	uint64_t t_first;
	uint64_t t_second;
};

static int
on_req_msg(void *arg, const struct sl_client_msg *m)
{
	struct req_state *s = arg;

	if (m->id != s->first_id || s->seen >= 4)
		return 0;
	s->attempts[s->seen++] = m->attempts;
	if (s->seen == 1) {
		s->t_first = rte_get_tsc_cycles();
		sl_client_req(s->c, m->sub_id, m->id, 100);
		return 1; /* we answered it ourselves */
	}
	s->t_second = rte_get_tsc_cycles();
	return 0;
}

struct ord_state {
	uint64_t outstanding;
	uint64_t max_outstanding;
	uint64_t got;
	uint64_t pending_id[1];
	int pending;
};

static int
on_ord_msg(void *arg, const struct sl_client_msg *m)
{
	struct ord_state *s = arg;

	s->outstanding++;
	if (s->outstanding > s->max_outstanding)
		s->max_outstanding = s->outstanding;
	s->pending_id[0] = m->id;
	s->pending = 1;
	s->got++;
	return 1; /* FIN later, from the main loop */
}

/* The client's mbuf pool, port 0 (the memif) and a libsluice session over it, window 32.
 * NULL after printing why. */
static struct sl_client *
open_client(const char *broker, const char *local, const char *pool_name, uint32_t nmbufs,
	    struct rte_mempool **poolp)
{
	struct sl_client_conf cc;
	struct rte_mempool *pool;
	struct sl_client *c;

	pool = rte_pktmbuf_pool_create(pool_name, nmbufs, 256, 0, RTE_MBUF_DEFAULT_BUF_SIZE,
				       (int)rte_socket_id());
	if (pool == NULL || sl_client_dpdk_port_start(0, pool, 0, 10000) != 0) {
		fprintf(stderr, "port 0 setup failed (is sluiced's memif server up?)\n");
		return NULL;
	}
	memset(&cc, 0, sizeof(cc));
	cc.xport = SL_XPORT_DPDK;
	cc.broker_ip = broker;
	cc.local_ip = local;
	cc.dpdk_port = 0;
	cc.dpdk_queue = 0;
	cc.dpdk_pool = pool;
	cc.window = 32;
	c = sl_client_open(&cc);
	if (c == NULL)
		fprintf(stderr, "sl_client_open: %s\n", sl_strerror(errno));
	*poolp = pool;
	return c;
}

/* 32 broadcast frames nobody parses beyond the Ethernet header, each NOISE_SEGS segments of
 * NOISE_LEN bytes: a jumbo frame spans several memif buffers, so the broker's receive
 * burst copies about 300 KB and lasts long enough to be caught inside. */
static void
send_noise(struct rte_mempool *pool)
{
	struct rte_mbuf *m[32];
	uint16_t i, k, n = 0, sent;

	for (i = 0; i < 32; i++) {
		struct rte_ether_hdr *eh;
		struct rte_mbuf *seg;
		char *d;

		m[n] = rte_pktmbuf_alloc(pool);
		if (m[n] == NULL)
			break;
		eh = (struct rte_ether_hdr *)rte_pktmbuf_append(m[n], NOISE_LEN);
		if (eh == NULL) {
			rte_pktmbuf_free(m[n]);
			break;
		}
		memset(eh, 0xa5, NOISE_LEN);
		memset(&eh->dst_addr, 0xff, RTE_ETHER_ADDR_LEN);
		rte_eth_macaddr_get(0, &eh->src_addr);
		eh->ether_type = rte_cpu_to_be_16(NOISE_TYPE);
		for (k = 1; k < NOISE_SEGS; k++) {
			seg = rte_pktmbuf_alloc(pool);
			if (seg == NULL)
				break;
			d = rte_pktmbuf_append(seg, NOISE_LEN);
			if (d == NULL || rte_pktmbuf_chain(m[n], seg) != 0) {
				rte_pktmbuf_free(seg);
				break;
			}
			memset(d, 0x5a, NOISE_LEN);
		}
		n++;
	}
	sent = rte_eth_tx_burst(0, 0, m, n);
	for (i = sent; i < n; i++)
		rte_pktmbuf_free(m[i]);
}

static void
on_flood_pub(void *arg, const struct sl_pub_result *r)
{
	uint64_t *acked = arg;

	if (r->err == 0)
		*acked += r->count;
}

/* The flood mode: argv = BROKER_IP LOCAL_IP TOPIC ROUNDS. */
static int
flood(char **argv)
{
	static char payload[32][32];
	const void *datas[32];
	uint32_t lens[32];
	struct rte_mempool *pool;
	struct sl_client *c;
	uint64_t rounds, r, acked = 0;
	int i, rc;

	rounds = strtoull(argv[3], NULL, 10);
	c = open_client(argv[0], argv[1], "flood_mbufs", 16383, &pool);
	if (c == NULL)
		return 2;
	for (i = 0; i < 32; i++) {
		memset(payload[i], 'a' + i % 26, sizeof(payload[i]));
		datas[i] = payload[i];
		lens[i] = sizeof(payload[i]);
	}
	printf("flooding\n");
	fflush(stdout);
	for (r = 0; rounds == 0 || r < rounds; r++) {
		/* one MPUB every 8 rounds: the partition's log must not fill over the cycles */
		if (r % 8 == 0) {
			rc = sl_client_pub_async(c, argv[2], 0, 32, datas, lens, on_flood_pub,
						 &acked);
			if (rc != 0)
				fprintf(stderr, "mpub: %s\n", sl_strerror(rc));
		}
		send_noise(pool);
		sl_client_poll(c, 0);
	}
	printf("%" PRIu64 " rounds, %" PRIu64 " messages acknowledged\n", rounds, acked);
	/* no sl_client_close, no port stop: the process just goes, as a crashed one would
	 * (the kernel closes the memif control socket) */
	return 0;
}

int
main(int argc, char **argv)
{
	struct sl_client *c;
	struct rte_mempool *pool;
	struct sl_pub_result res;
	struct pub_state ps = {0};
	struct sub_state ss = {0};
	struct req_state rs = {0};
	struct ord_state os = {0};
	const char *topic;
	uint64_t count, i, deadline, hz;
	int ret, rc;
	int64_t sub, ord_sub;
	uint16_t part;

	ret = rte_eal_init(argc, argv);
	if (ret < 0) {
		fprintf(stderr, "EAL init failed\n");
		return 2;
	}
	argc -= ret;
	argv += ret;
	if (argc == 6 && strcmp(argv[1], "flood") == 0)
		return flood(argv + 2);
	if (argc != 5 && argc != 6) {
		fprintf(stderr, "usage: memif_client [EAL] -- BROKER_IP LOCAL_IP TOPIC COUNT "
				"[PARTITION]\n"
				"       memif_client [EAL] -- flood BROKER_IP LOCAL_IP TOPIC ROUNDS\n");
		return 2;
	}
	part = argc == 6 ? (uint16_t)atoi(argv[5]) : 0;
	topic = argv[3];
	count = strtoull(argv[4], NULL, 10);
	hz = rte_get_tsc_hz();
	c = open_client(argv[1], argv[2], "client_mbufs", 8191, &pool);
	if (c == NULL)
		return 2;
	printf("session %016" PRIx64 ", window %u, max message %u\n",
	       sl_client_welcome(c)->session, sl_client_welcome(c)->window,
	       sl_client_welcome(c)->max_msg);

	/* channels that must see every message exist before the first publish (a new channel
	 * starts at the oldest message still held); credit 0 until their turn below */
	rs.c = c;
	rs.first_id = 1;
	sub = sl_client_sub(c, topic, part, "requeue", 0, 0, on_req_msg, &rs);
	CHECK(sub > 0, "sub requeue: %s", sl_strerror((int)sub));
	rs.sub = (uint64_t)sub;
	ord_sub = sl_client_sub(c, topic, part, "ordered", SL_WIRE_SUB_ORDERED, 0, on_ord_msg, &os);
	CHECK(ord_sub > 0, "sub ordered: %s", sl_strerror((int)ord_sub));
	if (failed) {
		/* the broker does not answer: every later step would only time out */
		printf("%d passed, %d failed\n", passed, failed);
		return 1;
	}

	/* blocking PUB */
	rc = sl_client_pub(c, topic, part, "first", 5, &res);
	CHECK(rc == 0 && res.id == 1 && res.offset == 0, "blocking pub: rc %d id %" PRIu64, rc,
	      res.id);

	/* pipelined publishes */
	npayloads = count + 32 + 1;
	payloads = calloc(npayloads, sizeof(*payloads));
	snprintf(payloads[0], sizeof(payloads[0]), "first");
	ps.last_id = 1;
	for (i = 1; i <= count; i++) {
		const void *d = payloads[i];
		uint32_t len;

		snprintf(payloads[i], sizeof(payloads[i]), "message %" PRIu64, i);
		len = (uint32_t)strlen(payloads[i]);
		rc = sl_client_pub_async(c, topic, part, 1, &d, &len, on_pub, &ps);
		if (rc != 0) {
			CHECK(0, "pub_async %" PRIu64 ": %s", i, sl_strerror(rc));
			break;
		}
	}
	rc = sl_client_flush(c, 30000);
	CHECK(rc == 0, "flush: %s", sl_strerror(rc));
	CHECK(ps.acked == count && ps.errors == 0 && ps.nonconsecutive == 0,
	      "pipelined: acked %" PRIu64 "/%" PRIu64 ", errors %" PRIu64 ", gaps %" PRIu64,
	      ps.acked, count, ps.errors, ps.nonconsecutive);

	/* MPUB of 32 */
	{
		const void *datas[32];
		uint32_t lens[32];

		for (i = 0; i < 32; i++) {
			snprintf(payloads[count + 1 + i], 64, "batch %" PRIu64, i);
			datas[i] = payloads[count + 1 + i];
			lens[i] = (uint32_t)strlen(payloads[count + 1 + i]);
		}
		rc = sl_client_mpub(c, topic, part, 32, datas, lens, &res);
		CHECK(rc == 0 && res.count == 32 && res.id == count + 2,
		      "mpub: rc %d count %u id %" PRIu64, rc, res.count, res.id);
	}

	/* errors */
	{
		static char big[9000];

		rc = sl_client_pub(c, topic, part, big, sizeof(big), &res);
		CHECK(rc == -SL_E_TOO_BIG, "oversized message: %s", sl_strerror(rc));
		rc = sl_client_pub(c, "no-such-topic", 0, "x", 1, &res);
		CHECK(rc == -SL_E_TOPIC, "unknown topic: %s", sl_strerror(rc));
		rc = sl_client_pub(c, topic, 999, "x", 1, &res);
		CHECK(rc == -SL_E_PARTITION, "bad partition: %s", sl_strerror(rc));
	}

	/* subscribe: every message once, in order, intact */
	ss.expect_next = 1;
	ss.first_id = 1;
	sub = sl_client_sub(c, topic, part, "all", 0, 256, on_msg, &ss);
	CHECK(sub > 0, "sub: %s", sl_strerror((int)sub));
	deadline = rte_get_tsc_cycles() + 60 * hz;
	while (ss.got < npayloads && rte_get_tsc_cycles() < deadline)
		sl_client_poll(c, 1000);
	CHECK(ss.got == npayloads && ss.out_of_order == 0 && ss.bad_payload == 0,
	      "subscriber got %" PRIu64 "/%" PRIu64 ", out of order %" PRIu64 ", bad %" PRIu64,
	      ss.got, npayloads, ss.out_of_order, ss.bad_payload);

	/* SET_OFFSET backwards: to message count 100, so ids 101.. come again, in order
	 * (the other channels still hold the log) */
	ss.expect_next = 101;
	ss.got = 0;
	rc = sl_client_set_offset(c, (uint64_t)sub, SL_OFF_COUNT, 100);
	CHECK(rc == 0, "set_offset count 100: %s", sl_strerror(rc));
	deadline = rte_get_tsc_cycles() + 60 * hz;
	while (ss.got < npayloads - 100 && rte_get_tsc_cycles() < deadline)
		sl_client_poll(c, 1000);
	CHECK(ss.got == npayloads - 100 && ss.out_of_order == 0 && ss.bad_payload == 0,
	      "after set_offset got %" PRIu64 "/%" PRIu64 ", out of order %" PRIu64,
	      ss.got, npayloads - 100, ss.out_of_order);
	/* SET_OFFSET to the end: nothing more comes */
	rc = sl_client_set_offset(c, (uint64_t)sub, SL_OFF_END, 0);
	CHECK(rc == 0, "set_offset end: %s", sl_strerror(rc));

	/* REQ with delay: redelivered with attempts 2, not before the delay */
	rc = sl_client_rdy(c, rs.sub, 1);
	CHECK(rc == 0, "rdy: %s", sl_strerror(rc));
	deadline = rte_get_tsc_cycles() + 10 * hz;
	while (rs.seen < 2 && rte_get_tsc_cycles() < deadline)
		sl_client_poll(c, 1000);
	CHECK(rs.seen >= 2 && rs.attempts[0] == 1 && rs.attempts[1] == 2,
	      "requeue: seen %d attempts %u,%u", rs.seen, rs.attempts[0], rs.attempts[1]);
	CHECK(rs.seen >= 2 && (rs.t_second - rs.t_first) * 1000 / hz >= 90,
	      "requeued message came back after %" PRIu64 " ms (delay 100)",
	      rs.seen >= 2 ? (rs.t_second - rs.t_first) * 1000 / hz : 0);
	sl_client_unsub(c, rs.sub);

	/* ordered channel: one message in flight at a time even with credit 64 */
	sub = ord_sub;
	rc = sl_client_rdy(c, (uint64_t)sub, 64);
	CHECK(rc == 0, "rdy: %s", sl_strerror(rc));
	deadline = rte_get_tsc_cycles() + 30 * hz;
	while (os.got < 200 && rte_get_tsc_cycles() < deadline) {
		sl_client_poll(c, 1000);
		if (os.pending) {
			os.pending = 0;
			os.outstanding--;
			sl_client_fin(c, (uint64_t)sub, os.pending_id[0]);
		}
	}
	CHECK(os.got >= 200 && os.max_outstanding == 1,
	      "ordered: got %" PRIu64 ", max outstanding %" PRIu64, os.got, os.max_outstanding);

	sl_client_close(c);
	rte_eth_dev_stop(0);
	rte_eth_dev_close(0);
	rte_eal_cleanup();
	free(payloads);
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
