/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <rte_bus.h>
#include <rte_dev.h>
#include <rte_ethdev.h>
#include <rte_log.h>

#include "err.h"
#include "net.h"
#include "port.h"

RTE_LOG_REGISTER_SUFFIX(sl_port_logtype, port, INFO);
#define PLOG(level, fmt, ...) \
	rte_log(RTE_LOG_##level, sl_port_logtype, "port: " fmt "\n", ##__VA_ARGS__)

/* The device name is devargs up to the first comma. */
static void
dev_name(const char *devargs, char *name, size_t len)
{
	size_t n = strcspn(devargs, ",");

	if (n >= len)
		n = len - 1;
	memcpy(name, devargs, n);
	name[n] = '\0';
}

/* Whether to ask a PMD for RX queue interrupts. These virtual devices of DPDK 22.11 have
 * none (no interrupt vector for rte_eth_dev_rx_intr_ctl_q): asking is useless there, and
 * the ethdev layer would log an error per queue when the worker tries. Anything else
 * (net_tap, hardware PMDs) is asked; a configure that refuses is retried without. */
static int
rx_intr_possible(const char *driver)
{
	static const char *const none[] = {"net_af_xdp", "net_memif", "net_af_packet",
					   "net_ring", "net_null"};
	size_t i;

	for (i = 0; i < RTE_DIM(none); i++)
		if (strcmp(driver, none[i]) == 0)
			return 0;
	return 1;
}

static int
find_port(const char *name, uint16_t *port_id)
{
	if (rte_eth_dev_get_port_by_name(name, port_id) == 0)
		return 0;
	return -ENODEV;
}

int
sl_port_open(const struct sl_port_conf *conf, struct sl_broker_port *out)
{
	struct rte_eth_conf ec;
	struct rte_eth_dev_info info;
	struct rte_ether_addr mac;
	char name[64];
	uint16_t port_id, q, nrxq, ntxq, forced_mtu = 0;
	int rc;

	memset(out, 0, sizeof(*out));
	if (conf == NULL || conf->devargs == NULL || conf->nworkers == 0 || conf->pool == NULL)
		return -EINVAL;
	if (sl_net_parse_cidr(conf->ip, &out->nif.ip, &out->netmask) != 0) {
		PLOG(ERR, "bad IPv4 address '%s' (a.b.c.d or a.b.c.d/len)",
		     conf->ip ? conf->ip : "");
		return -EINVAL;
	}
	out->nif.netmask = out->netmask;	/* no answer to the subnet's broadcast */
	dev_name(conf->devargs, name, sizeof(name));
	if (find_port(name, &port_id) != 0) {
		rc = rte_dev_probe(conf->devargs);
		if (rc != 0) {
			PLOG(ERR, "cannot probe '%s': %s", conf->devargs, rte_strerror(-rc));
			return rc;
		}
		if (find_port(name, &port_id) != 0) {
			PLOG(ERR, "probed '%s' but found no ethdev named '%s'", conf->devargs,
			     name);
			return -ENODEV;
		}
	}
	rc = rte_eth_dev_info_get(port_id, &info);
	if (rc != 0)
		return rc;
	memset(&ec, 0, sizeof(ec));
	nrxq = 1;
	if (conf->nworkers > 1 && info.max_rx_queues >= conf->nworkers &&
	    info.max_tx_queues >= conf->nworkers &&
	    (info.flow_type_rss_offloads & RTE_ETH_RSS_NONFRAG_IPV4_UDP)) {
		nrxq = conf->nworkers;
		ec.rxmode.mq_mode = RTE_ETH_MQ_RX_RSS;
		ec.rx_adv_conf.rss_conf.rss_hf =
			RTE_ETH_RSS_NONFRAG_IPV4_UDP & info.flow_type_rss_offloads;
	}
	if (!conf->no_offload) {
		if ((info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_IPV4_CKSUM) &&
		    (info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_UDP_CKSUM)) {
			ec.txmode.offloads |= RTE_ETH_TX_OFFLOAD_IPV4_CKSUM |
					      RTE_ETH_TX_OFFLOAD_UDP_CKSUM;
			out->tx_flags |= SL_NET_TX_IP_CKSUM | SL_NET_TX_UDP_CKSUM;
		}
		if (info.rx_offload_capa & RTE_ETH_RX_OFFLOAD_IPV4_CKSUM) {
			ec.rxmode.offloads |= RTE_ETH_RX_OFFLOAD_IPV4_CKSUM;
			out->rx_flags |= SL_NET_RX_IP_CKSUM_GOOD;
		}
		if (info.rx_offload_capa & RTE_ETH_RX_OFFLOAD_UDP_CKSUM) {
			ec.rxmode.offloads |= RTE_ETH_RX_OFFLOAD_UDP_CKSUM;
			out->rx_flags |= SL_NET_RX_L4_CKSUM_GOOD;
		}
	}
	/* With RSS every worker has its own queue pair. Without it, worker 0 does all of the
	 * port's I/O on one queue pair and the other workers hand it their frames: some
	 * vdevs (net_memif) only connect as many queues as the peer opens, so a TX queue of
	 * our own per worker would silently drop. */
	ntxq = nrxq;
	ec.intr_conf.rxq = conf->rx_intr && rx_intr_possible(info.driver_name) ? 1 : 0;
	rc = rte_eth_dev_configure(port_id, nrxq, ntxq, &ec);
	if (rc != 0 && ec.intr_conf.rxq) {
		PLOG(INFO, "%s: no RX queue interrupts (%s): adaptive idle sleeps", name,
		     rte_strerror(-rc));
		ec.intr_conf.rxq = 0;
		rc = rte_eth_dev_configure(port_id, nrxq, ntxq, &ec);
	}
	if (rc != 0) {
		PLOG(ERR, "%s: configure failed: %s", name, rte_strerror(-rc));
		return rc;
	}
	if (conf->mtu != 0) {
		rc = rte_eth_dev_set_mtu(port_id, conf->mtu);
		if (rc == -ENOTSUP && strcmp(info.driver_name, "net_memif") == 0) {
			/* memif copies whole frames through shared memory (chaining its
			 * buffers) and has no MTU to set: the limit is our mbuf size */
			PLOG(WARNING, "%s: the port has no MTU setting; using %u for the message "
				      "limit", name, conf->mtu);
			forced_mtu = conf->mtu;
		} else if (rc != 0) {
			PLOG(ERR, "%s: MTU %u refused: %s", name, conf->mtu, rte_strerror(-rc));
			return rc;
		}
	}
	for (q = 0; q < nrxq; q++) {
		rc = rte_eth_rx_queue_setup(port_id, q, conf->rx_desc ? conf->rx_desc : 1024,
					    rte_eth_dev_socket_id(port_id), NULL, conf->pool);
		if (rc != 0) {
			PLOG(ERR, "%s: RX queue %u: %s", name, q, rte_strerror(-rc));
			return rc;
		}
	}
	for (q = 0; q < ntxq; q++) {
		rc = rte_eth_tx_queue_setup(port_id, q, conf->tx_desc ? conf->tx_desc : 1024,
					    rte_eth_dev_socket_id(port_id), NULL);
		if (rc != 0) {
			PLOG(ERR, "%s: TX queue %u: %s", name, q, rte_strerror(-rc));
			return rc;
		}
	}
	rc = rte_eth_dev_start(port_id);
	if (rc != 0) {
		PLOG(ERR, "%s: start failed: %s", name, rte_strerror(-rc));
		return rc;
	}
	rte_eth_macaddr_get(port_id, &mac);
	memcpy(out->nif.mac, mac.addr_bytes, 6);
	out->nif.udp_port_lo = conf->udp_port;
	out->nif.udp_port_hi = conf->repl_port != 0 ? conf->repl_port : conf->udp_port;
	out->port_id = port_id;
	out->nrxq = nrxq;
	out->ntxq = ntxq;
	out->rx_intr = ec.intr_conf.rxq;
	rte_eth_dev_get_mtu(port_id, &out->mtu);
	if (forced_mtu != 0)
		out->mtu = forced_mtu;
	snprintf(out->name, sizeof(out->name), "%s", name);
	PLOG(INFO, "%s: port %u up, MAC " RTE_ETHER_ADDR_PRT_FMT ", %s, %u RX queue(s)%s, MTU %u",
	     name, port_id, RTE_ETHER_ADDR_BYTES(&mac), conf->ip, nrxq,
	     nrxq > 1 ? " (RSS)" : " (software dispatch)", out->mtu);
	return 0;
}

void
sl_port_close(struct sl_broker_port *p)
{
	struct rte_eth_dev_info info;

	rte_eth_dev_stop(p->port_id);
	if (rte_eth_dev_info_get(p->port_id, &info) == 0 && info.device != NULL) {
		rte_eth_dev_close(p->port_id);
		rte_dev_remove(info.device);
	} else {
		rte_eth_dev_close(p->port_id);
	}
}
