/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * Shared set-up of the unit tests that need an EAL: the EAL itself (--no-huge, no PCI,
 * a file prefix of its own, lcores on the CPUs this process may use) and, for the tests
 * that drive a broker, a port made of two rte_rings (rte_eth_from_rings): the test
 * enqueues client frames on the port's RX ring and dequeues what the broker transmits
 * from its TX ring. No NIC, no hugepages, no root.
 */
#ifndef SL_TEST_FIXTURE_H
#define SL_TEST_FIXTURE_H

#include <dirent.h>
#include <sched.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_eth_ring.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_ring.h>
#include <urcu-qsbr.h>

#include "net.h"
#include "port.h"

/* The EAL's runtime directory (/var/run/dpdk/<prefix>): DPDK leaves it behind. */
static char fx_rundir[4096];

/* At exit: remove the runtime directory's files and the directory (one level deep). */
static void
fx_rundir_remove(void)
{
	char path[sizeof(fx_rundir) + 256];
	struct dirent *e;
	DIR *d;

	if (fx_rundir[0] == '\0' || (d = opendir(fx_rundir)) == NULL)
		return;
	while ((e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", fx_rundir, e->d_name);
		unlink(path);
	}
	closedir(d);
	rmdir(fx_rundir);
}

/*
 * Start the EAL with nlcores lcores (main + nlcores - 1 workers) spread over the CPUs
 * this process may run on (sharing CPUs when there are fewer), --no-huge and a file
 * prefix of its own (sl-test-<tag>-<pid>) so tests run in parallel. 0 or -1.
 */
static inline int
fx_eal_init(const char *argv0, const char *tag, unsigned int nlcores)
{
	char prefix[64], lcores[256];
	int cpus[64], ncpu = 0, c;
	unsigned int i;
	size_t off = 0;
	cpu_set_t set;
	char *eal[] = {(char *)(uintptr_t)argv0, "--no-huge", "--no-pci", "-m", "128",
		       "--file-prefix", prefix, "--lcores", lcores, "--log-level", "*:error",
		       "--no-telemetry"};

	if (sched_getaffinity(0, sizeof(set), &set) == 0)
		for (c = 0; c < CPU_SETSIZE && ncpu < 64; c++)
			if (CPU_ISSET(c, &set))
				cpus[ncpu++] = c;
	if (ncpu == 0)
		cpus[ncpu++] = 0;
	for (i = 0; i < nlcores && off < sizeof(lcores); i++)
		off += (size_t)snprintf(lcores + off, sizeof(lcores) - off, "%s%u@%d",
					i ? "," : "", i, cpus[i % (unsigned int)ncpu]);
	snprintf(prefix, sizeof(prefix), "sl-test-%s-%d", tag, (int)getpid());
	if (rte_eal_init((int)(sizeof(eal) / sizeof(eal[0])), eal) < 0) {
		printf("rte_eal_init failed\n");
		return -1;
	}
	snprintf(fx_rundir, sizeof(fx_rundir), "%s", rte_eal_get_runtime_dir());
	atexit(fx_rundir_remove);
	return 0;
}

/* The test client's addresses and the broker's. */
#define FX_BROKER_IP "10.9.0.1"
#define FX_UDP_PORT 5150
#define FX_CLIENT_PORT 40000

/* A broker port made of two rings, and the client on the other side. */
struct fx_port {
	struct rte_mempool *pool;
	struct rte_ring *rx;		/* test -> broker */
	struct rte_ring *tx;		/* broker -> test */
	struct sl_broker_port port;	/* as sl_port_open filled it */
	struct sl_net_if cli;		/* the client: 02:00:00:00:00:02, 10.9.0.2:40000 */
};

/* Create the pool, the rings and the ring port (ethdev net_ring_<name>), and open it as the broker
 * would (sl_port_open) for nworkers workers. 0 or -1. */
static inline int
fx_port_open(struct fx_port *fp, const char *name, uint16_t nworkers)
{
	char rname[RTE_RING_NAMESIZE], dev[RTE_ETH_NAME_MAX_LEN];
	struct sl_port_conf pc = {
		.devargs = dev,
		.ip = FX_BROKER_IP,
		.udp_port = FX_UDP_PORT,
		.nworkers = nworkers,
		.rx_desc = 256,
		.tx_desc = 256,
	};
	static const uint8_t cmac[6] = {0x02, 0, 0, 0, 0, 0x02};
	int rc;

	memset(fp, 0, sizeof(*fp));
	snprintf(rname, sizeof(rname), "%s_pool", name);
	fp->pool = rte_pktmbuf_pool_create(rname, 2047, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE,
					   SOCKET_ID_ANY);
	snprintf(rname, sizeof(rname), "%s_rx", name);
	fp->rx = rte_ring_create(rname, 1024, SOCKET_ID_ANY, RING_F_SP_ENQ | RING_F_SC_DEQ);
	snprintf(rname, sizeof(rname), "%s_tx", name);
	fp->tx = rte_ring_create(rname, 1024, SOCKET_ID_ANY, RING_F_SC_DEQ);
	if (fp->pool == NULL || fp->rx == NULL || fp->tx == NULL) {
		printf("fixture: pool or rings: %s\n", rte_strerror(rte_errno));
		return -1;
	}
	/* the ethdev is named net_ring_<name>: sl_port_open finds it by that name */
	rc = rte_eth_from_rings(name, &fp->rx, 1, &fp->tx, 1, 0);
	if (rc < 0 || rte_eth_dev_get_name_by_port((uint16_t)rc, dev) != 0) {
		printf("fixture: rte_eth_from_rings: %s\n", rte_strerror(rte_errno));
		return -1;
	}
	pc.pool = fp->pool;
	if (sl_port_open(&pc, &fp->port) != 0) {
		printf("fixture: sl_port_open failed\n");
		return -1;
	}
	memcpy(fp->cli.mac, cmac, 6);
	sl_net_parse_ip("10.9.0.2", &fp->cli.ip);
	fp->cli.udp_port_lo = fp->cli.udp_port_hi = FX_CLIENT_PORT;
	return 0;
}

/* A broker configuration for fp with nworkers workers on the EAL's worker lcores: memory
 * only, adaptive idle (the tests share CPUs), small limits. */
static inline void
fx_broker_conf(struct sl_broker_conf *bc, struct fx_port *fp, uint16_t nworkers)
{
	unsigned int lcore = rte_get_next_lcore(-1, 1, 0);
	uint16_t i;

	memset(bc, 0, sizeof(*bc));
	bc->node_id = 1;
	bc->nworkers = nworkers;
	for (i = 0; i < nworkers; i++) {
		bc->worker_lcores[i] = lcore;
		lcore = rte_get_next_lcore(lcore, 1, 0);
	}
	bc->nports = 1;
	bc->ports[0] = fp->port;
	bc->pool = fp->pool;
	bc->socket_id = SOCKET_ID_ANY;
	bc->idle = SL_IDLE_ADAPTIVE;
	bc->idle_polls = 64;
	bc->idle_max_us = 200;
	bc->log_bytes = 1 << 20;
	bc->max_msg = 1024;
	bc->window = 16;
	bc->heartbeat_ms = 1000;
	bc->session_timeout_ms = 60000;
	bc->max_sessions = 4;
	bc->msg_timeout_ms = 30000;
	bc->max_req_delay_ms = 60000;
	bc->chan_window = 64;
	bc->auto_create_parts = 1;
}

/* Send one UDP datagram of len payload bytes from the client to the broker; cut bytes
 * are then removed from the end of the frame (a frame truncated on the way). 0 or -1. */
static inline int
fx_send_cut(struct fx_port *fp, const void *payload, uint32_t len, uint32_t cut)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(fp->pool);
	uint8_t *frame;
	uint32_t flen;

	if (m == NULL)
		return -1;
	frame = rte_pktmbuf_mtod(m, uint8_t *);
	memcpy(frame + SL_NET_HDRS_LEN, payload, len);
	flen = sl_net_udp_build(frame, &fp->cli, fp->port.nif.mac, fp->port.nif.ip,
				FX_CLIENT_PORT, FX_UDP_PORT, (uint16_t)len, 0);
	m->data_len = (uint16_t)(flen - cut);
	m->pkt_len = flen - cut;
	if (rte_ring_enqueue(fp->rx, m) != 0) {
		rte_pktmbuf_free(m);
		return -1;
	}
	return 0;
}

static inline int
fx_send(struct fx_port *fp, const void *payload, uint32_t len)
{
	return fx_send_cut(fp, payload, len, 0);
}

/*
 * Wait up to timeout_ms for the next frame the broker transmits; copy its UDP payload
 * (at most cap bytes) into buf. Returns the payload length, -1 on timeout, -2 for a frame
 * that is not UDP from the broker's port to the client. The caller is a registered QSBR
 * thread (it reports quiescent states while it waits).
 */
static inline int
fx_recv_dst(struct fx_port *fp, void *buf, uint32_t cap, uint32_t timeout_ms, uint8_t dst[6]);

static inline int
fx_recv(struct fx_port *fp, void *buf, uint32_t cap, uint32_t timeout_ms)
{
	return fx_recv_dst(fp, buf, cap, timeout_ms, NULL);
}

/* As fx_recv; dst (unless NULL) gets the frame's destination MAC. A frame to a MAC other
 * than the client's (fp->cli.mac) is -2. */
static inline int
fx_recv_dst(struct fx_port *fp, void *buf, uint32_t cap, uint32_t timeout_ms, uint8_t dst[6])
{
	uint64_t end = rte_get_tsc_cycles() + rte_get_tsc_hz() / 1000 * timeout_ms;
	struct sl_net_info info;
	struct rte_mbuf *m = NULL;
	int n;

	while (rte_ring_dequeue(fp->tx, (void **)&m) != 0) {
		if (rte_get_tsc_cycles() > end)
			return -1;
		rcu_quiescent_state();
		usleep(50);
	}
	/* a net_ring port's MAC is all zeros, which a receiver refuses as a source
	 * (sl_net_src_bad): the test's client side takes the answer as from 02:..:01 */
	if (m->data_len >= 12)
		memcpy(rte_pktmbuf_mtod(m, uint8_t *) + 6,
		       (const uint8_t[6]){0x02, 0, 0, 0, 0, 0x01}, 6);
	if (dst != NULL && m->data_len >= 6)
		memcpy(dst, rte_pktmbuf_mtod(m, uint8_t *), 6);
	if (sl_net_parse(rte_pktmbuf_mtod(m, uint8_t *), m->data_len, &fp->cli, 0, &info) !=
		    SL_NET_UDP ||
	    info.src_ip != fp->port.nif.ip || info.src_port != FX_UDP_PORT ||
	    info.dst_port != FX_CLIENT_PORT) {
		rte_pktmbuf_free(m);
		return -2;
	}
	n = info.payload_len < cap ? info.payload_len : (int)cap;
	memcpy(buf, rte_pktmbuf_mtod(m, uint8_t *) + info.payload_off, (size_t)n);
	rte_pktmbuf_free(m);
	return n;
}

/* Let the other lcores run for ms milliseconds, reporting quiescent states. */
static inline void
fx_wait_ms(uint32_t ms)
{
	uint32_t i;

	for (i = 0; i < ms; i++) {
		rcu_quiescent_state();
		usleep(1000);
	}
}

#endif /* SL_TEST_FIXTURE_H */
