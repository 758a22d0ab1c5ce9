/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * libsluice DPDK transport: kernel bypass over a port the application has initialised
 * and started (rte_eal_init, rte_eth_dev_configure/start are the application's job).
 * We use one rx/tx queue pair, do Ethernet/ARP/IPv4/UDP with dataplane/net.h, compute
 * checksums in software (no offload assumptions) and busy-poll the rx queue: this is a
 * client, latency matters more than a core.
 *
 * Limits: the broker must be on the same Ethernet segment (ARP for its IP, no gateway);
 * received frames must fit in one mbuf segment.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_pause.h>

#include "net.h"
#include "wire.h"
#include "xport.h"

#define RXQ_SIZE 32
#define ARP_RETRY_MS 100
#define RETARGET_ARP_MS 500	/* a leader that does not answer ARP by then is skipped */
#define IPV4_UDP_HDRS 28 /* IPv4 (20) + UDP (8) */

struct xdpdk {
	uint16_t port;
	uint16_t queue;
	struct rte_mempool *pool;
	struct sl_net_if nif;
	uint32_t broker_ip;	/* network order */
	uint16_t broker_port;	/* host order */
	uint16_t local_port;	/* host order */
	uint8_t broker_mac[6];
	int have_mac;
	uint32_t dgram_max;
	uint64_t hz;
	uint32_t idle_us;	/* conf.dpdk_idle_us */
	/* received but not yet consumed: rxq[rx_head .. rx_head + rx_n) */
	struct rte_mbuf *rxq[RXQ_SIZE];
	uint16_t rx_head;
	uint16_t rx_n;
};

static void
tx_frame(struct xdpdk *d, struct rte_mbuf *m, uint32_t len)
{
	m->data_len = (uint16_t)len;
	m->pkt_len = len;
	if (rte_eth_tx_burst(d->port, d->queue, &m, 1) != 1)
		rte_pktmbuf_free(m);
}

static uint32_t
rx_flags_of(const struct rte_mbuf *m)
{
	uint32_t f = 0;

	if ((m->ol_flags & RTE_MBUF_F_RX_IP_CKSUM_MASK) == RTE_MBUF_F_RX_IP_CKSUM_GOOD)
		f |= SL_NET_RX_IP_CKSUM_GOOD;
	if ((m->ol_flags & RTE_MBUF_F_RX_L4_CKSUM_MASK) == RTE_MBUF_F_RX_L4_CKSUM_GOOD)
		f |= SL_NET_RX_L4_CKSUM_GOOD;
	return f;
}

/*
 * Consume one received frame: a UDP datagram from the broker is copied to buf (returns
 * its length, or -EMSGSIZE when longer than cap); ARP and ICMP echo are answered or
 * learned (returns 0); anything else is dropped (returns 0). Always consumes m.
 */
static int
rx_one(struct xdpdk *d, struct rte_mbuf *m, void *buf, uint32_t cap)
{
	uint8_t *frame = rte_pktmbuf_mtod(m, uint8_t *);
	struct sl_net_info info;
	uint32_t len;
	int rc = 0;

	if (m->nb_segs != 1)
		goto drop;
	switch (sl_net_parse(frame, rte_pktmbuf_data_len(m), &d->nif, rx_flags_of(m), &info)) {
	case SL_NET_UDP:
		if (info.src_ip != d->broker_ip || info.src_port != d->broker_port ||
		    info.payload_len == 0)
			break;
		if (info.payload_len > cap) {
			rc = -EMSGSIZE;
			break;
		}
		memcpy(buf, frame + info.payload_off, info.payload_len);
		rc = info.payload_len;
		break;
	case SL_NET_ARP_REQUEST:
		if (info.src_ip == d->broker_ip) {
			memcpy(d->broker_mac, info.src_mac, sizeof(d->broker_mac));
			d->have_mac = 1;
		}
		len = sl_net_arp_reply(frame, &d->nif);
		tx_frame(d, m, len);
		return 0;
	case SL_NET_ARP_REPLY:
		if (info.src_ip == d->broker_ip) {
			memcpy(d->broker_mac, info.src_mac, sizeof(d->broker_mac));
			d->have_mac = 1;
		}
		break;
	case SL_NET_ICMP_ECHO:
		len = sl_net_icmp_reply(frame, rte_pktmbuf_data_len(m), &info, 0);
		tx_frame(d, m, len);
		return 0;
	default:
		break;
	}
drop:
	rte_pktmbuf_free(m);
	return rc;
}

static int
dpdk_recv(void *x, void *buf, uint32_t cap, uint32_t timeout_us)
{
	struct xdpdk *d = x;
	uint64_t deadline = rte_get_timer_cycles() + (uint64_t)timeout_us * d->hz / 1000000;
	uint64_t now, left_us;
	uint32_t empty = 0, sleep_us = 0;
	struct rte_mbuf *m;
	int rc;

	for (;;) {
		while (d->rx_n > 0) {
			m = d->rxq[d->rx_head++];
			d->rx_n--;
			rc = rx_one(d, m, buf, cap);
			if (rc != 0)
				return rc;
		}
		d->rx_head = 0;
		d->rx_n = rte_eth_rx_burst(d->port, d->queue, d->rxq, RXQ_SIZE);
		if (d->rx_n > 0)
			continue;
		now = rte_get_timer_cycles();
		if (now >= deadline)
			return 0;
		if (d->idle_us == 0 || ++empty < 64) {
			rte_pause();
			continue;
		}
		/* conf.dpdk_idle_us: back off so that what shares this CPU gets it, never
		 * past the caller's deadline */
		sleep_us = sleep_us ? RTE_MIN(sleep_us * 2, d->idle_us) : 1;
		left_us = (deadline - now) * 1000000 / d->hz;
		rte_delay_us_sleep(RTE_MAX(1u, (uint32_t)RTE_MIN((uint64_t)sleep_us, left_us)));
	}
}

static int
dpdk_send(void *x, const void *frame_payload, uint32_t len)
{
	struct xdpdk *d = x;
	struct rte_mbuf *m;
	uint8_t *frame;
	uint32_t flen;

	if (len > d->dgram_max)
		return -EMSGSIZE;
	m = rte_pktmbuf_alloc(d->pool);
	if (m == NULL)
		return -ENOBUFS;
	frame = rte_pktmbuf_mtod(m, uint8_t *);
	memcpy(frame + SL_NET_HDRS_LEN, frame_payload, len);
	flen = sl_net_udp_build(frame, &d->nif, d->broker_mac, d->broker_ip, d->local_port,
				d->broker_port, (uint16_t)len, 0);
	m->data_len = (uint16_t)flen;
	m->pkt_len = flen;
	if (rte_eth_tx_burst(d->port, d->queue, &m, 1) != 1) {
		rte_pktmbuf_free(m);
		return -EAGAIN;
	}
	return 0;
}

static void
dpdk_close(void *x)
{
	struct xdpdk *d = x;

	if (d == NULL)
		return;
	while (d->rx_n > 0) {
		rte_pktmbuf_free(d->rxq[d->rx_head++]);
		d->rx_n--;
	}
	free(d);
}

static uint32_t
dpdk_dgram_max(void *x)
{
	struct xdpdk *d = x;

	return d->dgram_max;
}

static int arp_resolve(struct xdpdk *d, uint32_t timeout_ms);

/* Another broker: resolve its MAC (up to RETARGET_ARP_MS). */
static int
dpdk_retarget(void *x, uint32_t ip, uint16_t port)
{
	struct xdpdk *d = x;

	if (ip == d->broker_ip && port == d->broker_port)
		return 0;
	d->broker_ip = ip;
	d->broker_port = port;
	d->have_mac = 0;
	return arp_resolve(d, RETARGET_ARP_MS);
}

static const struct sl_xport_ops dpdk_ops = {
	.send = dpdk_send,
	.recv = dpdk_recv,
	.close = dpdk_close,
	.dgram_max = dpdk_dgram_max,
	.now_us = NULL,
	.retarget = dpdk_retarget,
};

static int
arp_send_request(struct xdpdk *d)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(d->pool);

	if (m == NULL)
		return -ENOBUFS;
	tx_frame(d, m, sl_net_arp_request(rte_pktmbuf_mtod(m, uint8_t *), &d->nif,
					  d->broker_ip));
	return 0;
}

/* ARP for the broker every ARP_RETRY_MS until it answers or timeout_ms passed. */
static int
arp_resolve(struct xdpdk *d, uint32_t timeout_ms)
{
	uint64_t start = rte_get_timer_cycles();
	uint64_t end = start + (uint64_t)timeout_ms * d->hz / 1000;
	uint64_t next = start;
	uint64_t now;

	while (!d->have_mac) {
		now = rte_get_timer_cycles();
		if (now >= end)
			return -EHOSTUNREACH;
		if (now >= next) {
			(void)arp_send_request(d);
			next = now + (uint64_t)ARP_RETRY_MS * d->hz / 1000;
		}
		/* cap 0: UDP datagrams (none expected yet) are dropped, ARP is handled */
		(void)dpdk_recv(d, NULL, 0, 1000);
	}
	return 0;
}

void *
sl_xport_dpdk_open(const struct sl_client_conf *conf, const struct sl_xport_ops **ops)
{
	struct rte_ether_addr mac;
	struct xdpdk *d = NULL;
	uint16_t mtu = 1500;
	uint32_t room;
	int err;

	if (conf == NULL || ops == NULL || conf->broker_ip == NULL || conf->local_ip == NULL ||
	    conf->dpdk_pool == NULL || !rte_eth_dev_is_valid_port(conf->dpdk_port)) {
		err = EINVAL;
		goto fail;
	}
	d = calloc(1, sizeof(*d));
	if (d == NULL) {
		err = ENOMEM;
		goto fail;
	}
	d->port = conf->dpdk_port;
	d->queue = conf->dpdk_queue;
	d->pool = conf->dpdk_pool;
	d->hz = rte_get_timer_hz();
	d->idle_us = conf->dpdk_idle_us;
	d->broker_port = conf->broker_port != 0 ? conf->broker_port : SL_WIRE_UDP_PORT;
	d->local_port = conf->local_port != 0 ? conf->local_port : 40000 + conf->dpdk_queue;
	if (sl_net_parse_ip(conf->broker_ip, &d->broker_ip) != 0 ||
	    sl_net_parse_ip(conf->local_ip, &d->nif.ip) != 0) {
		err = EINVAL;
		goto fail;
	}
	if (rte_eth_macaddr_get(d->port, &mac) != 0) {
		err = ENODEV;
		goto fail;
	}
	memcpy(d->nif.mac, mac.addr_bytes, sizeof(d->nif.mac));
	d->nif.udp_port_lo = d->local_port;
	d->nif.udp_port_hi = d->local_port;

	(void)rte_eth_dev_get_mtu(d->port, &mtu);
	if (conf->link_mtu != 0)
		mtu = conf->link_mtu;
	d->dgram_max = mtu > IPV4_UDP_HDRS ? mtu - IPV4_UDP_HDRS : 0;
	room = rte_pktmbuf_data_room_size(d->pool);
	room = room > RTE_PKTMBUF_HEADROOM + SL_NET_HDRS_LEN ?
		room - RTE_PKTMBUF_HEADROOM - SL_NET_HDRS_LEN : 0;
	if (room < d->dgram_max)
		d->dgram_max = room;
	if (d->dgram_max < SL_WIRE_HDR_LEN + SL_WIRE_OK_LEN) {
		err = EMSGSIZE;
		goto fail;
	}

	err = -arp_resolve(d, conf->timeout_ms != 0 ? conf->timeout_ms : 5000);
	if (err != 0)
		goto fail;
	*ops = &dpdk_ops;
	return d;

fail:
	dpdk_close(d);
	errno = err;
	return NULL;
}

int
sl_client_dpdk_port_start(uint16_t port, struct rte_mempool *pool, uint16_t mtu,
			  uint32_t timeout_ms)
{
	struct rte_eth_conf conf;
	struct rte_eth_link link;
	uint64_t deadline;
	int rc;

	memset(&conf, 0, sizeof(conf));
	rc = rte_eth_dev_configure(port, 1, 1, &conf);
	if (rc == 0)
		rc = rte_eth_rx_queue_setup(port, 0, 1024, rte_eth_dev_socket_id(port), NULL, pool);
	if (rc == 0)
		rc = rte_eth_tx_queue_setup(port, 0, 1024, rte_eth_dev_socket_id(port), NULL);
	if (rc == 0 && mtu != 0) {
		rc = rte_eth_dev_set_mtu(port, mtu);
		if (rc == -ENOTSUP)
			rc = 0; /* no MTU setting (memif): the caller's link_mtu says it */
	}
	if (rc == 0)
		rc = rte_eth_dev_start(port);
	if (rc != 0)
		return rc;
	/* the link state is polled: ethdev has no blocking wait for it (bounded) */
	deadline = rte_get_tsc_cycles() + (uint64_t)timeout_ms * rte_get_tsc_hz() / 1000;
	do {
		rte_eth_link_get_nowait(port, &link);
		if (link.link_status == RTE_ETH_LINK_UP)
			return 0;
		rte_delay_ms(10);
	} while (rte_get_tsc_cycles() < deadline);
	return -ETIMEDOUT;
}
