/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * A memif client that keeps sluiced's receive path busy, for memif_disconnect.sh:
 *
 *   memif_flood [EAL options] -- BROKER_IP LOCAL_IP TOPIC ROUNDS
 *
 * It opens a session over libsluice's DPDK transport (net_memif port 0), prints "flooding",
 * then for ROUNDS rounds (0 = until killed) sends a burst of 32 jumbo frames (9000 bytes)
 * of a local experimental EtherType that the broker reads and drops, so that its worker
 * spends most of its time inside the memif PMD's receive burst, copying out of the shared
 * regions; every 8th round also an MPUB of 32 (pipelined, window 32). The test SIGKILLs
 * it there, or lets it end (exit without closing the port: the broker sees the control
 * socket close). Exit 0 after ROUNDS rounds, 2 on a set-up error.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include "client.h"
#include "err.h"

#define NOISE_LEN 1500
#define NOISE_SEGS 6
#define NOISE_TYPE 0x88b5	/* IEEE 802 local experimental EtherType 1 */

static void
on_pub(void *arg, const struct sl_pub_result *r)
{
	uint64_t *acked = arg;

	if (r->err == 0)
		*acked += r->count;
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

int
main(int argc, char **argv)
{
	static char payload[32][32];
	const void *datas[32];
	uint32_t lens[32];
	struct sl_client_conf cc;
	struct sl_client *c;
	struct rte_mempool *pool;
	uint64_t rounds, r, acked = 0;
	int ret, i, rc;

	ret = rte_eal_init(argc, argv);
	if (ret < 0) {
		fprintf(stderr, "EAL init failed\n");
		return 2;
	}
	argc -= ret;
	argv += ret;
	if (argc != 5) {
		fprintf(stderr, "usage: memif_flood [EAL] -- BROKER_IP LOCAL_IP TOPIC ROUNDS\n");
		return 2;
	}
	rounds = strtoull(argv[4], NULL, 10);
	pool = rte_pktmbuf_pool_create("flood_mbufs", 16383, 256, 0, RTE_MBUF_DEFAULT_BUF_SIZE,
				       (int)rte_socket_id());
	if (pool == NULL || sl_client_dpdk_port_start(0, pool, 0, 10000) != 0) {
		fprintf(stderr, "port 0 setup failed (is sluiced's memif server up?)\n");
		return 2;
	}
	memset(&cc, 0, sizeof(cc));
	cc.xport = SL_XPORT_DPDK;
	cc.broker_ip = argv[1];
	cc.local_ip = argv[2];
	cc.dpdk_port = 0;
	cc.dpdk_queue = 0;
	cc.dpdk_pool = pool;
	cc.window = 32;
	c = sl_client_open(&cc);
	if (c == NULL) {
		fprintf(stderr, "sl_client_open: %s\n", sl_strerror(errno));
		return 2;
	}
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
			rc = sl_client_pub_async(c, argv[3], 0, 32, datas, lens, on_pub, &acked);
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
