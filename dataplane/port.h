/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * port: bring up one DPDK port for the broker - probe it from devargs when it is not
 * already there (a PCI address, or a vdev such as net_tap0,iface=sl0 / net_memif0,...),
 * configure one TX queue per worker and either one RX queue per worker with RSS (when
 * the port can) or a single RX queue polled by worker 0 (the others then get their
 * partitions' frames through software dispatch rings), enable checksum offloads the
 * port offers, set the MTU, start it. With conf->rx_intr it configures RX queue
 * interrupts (intr_conf.rxq) on PMDs that may have them; in DPDK 22.11 net_tap does
 * (its queue fds), net_af_xdp, net_memif, net_af_packet, net_ring and net_null do not, so
 * those are not asked (the worker falls back to adaptive sleeps there). Control thread,
 * before the workers start.
 *
 * A net_memif port is also guarded against a peer that goes away: port.c defines munmap()
 * (exported by sluiced), which on the EAL interrupt thread, while a memif port's link is
 * down, waits for an RCU grace period (bounded) so that the PMD never unmaps a departed
 * peer's shared memory under a worker's RX/TX burst (docs/architecture.md, "When a memif
 * peer goes away"). Every other munmap goes straight to the system call.
 */
#ifndef SL_PORT_H
#define SL_PORT_H

#include <stdint.h>

#include <rte_mempool.h>

#include "broker.h"

struct sl_port_conf {
	const char *devargs;		/* "0000:01:00.0", "net_tap0,iface=sl0", ... */
	const char *ip;			/* "a.b.c.d" or "a.b.c.d/len" (the port's subnet:
					 * replica datagrams to nodes in it leave here) */
	uint16_t udp_port;		/* client port (host order) */
	uint16_t repl_port;		/* replica port: udp_port + 1, or 0 (no replication) */
	uint16_t nworkers;
	uint16_t mtu;			/* 0 = leave the port's default */
	uint16_t rx_desc;		/* 0 = 1024 */
	uint16_t tx_desc;		/* 0 = 1024 */
	struct rte_mempool *pool;
	int no_offload;			/* do not use checksum offloads */
	int rx_intr;			/* ask for RX queue interrupts where the PMD may
					 * have them (--idle interrupt): out->rx_intr says */
};

/** Probe, configure and start a port; fill *out (a memif port joins the unmap guard). 0 or
 * a negative errno. Control thread, before the workers start. */
int
sl_port_open(const struct sl_port_conf *conf, struct sl_broker_port *out);

/** Stop and close a port (and detach a vdev we probed); a memif port leaves the unmap
 * guard first. Control thread, after the workers stopped. */
void
sl_port_close(struct sl_broker_port *p);

#endif /* SL_PORT_H */
