/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * sluice's tiny network stack (see net.h). Only DPDK's header-only protocol
 * definitions and inline checksum helpers are used: nothing here needs EAL.
 *
 * Alignment: frames may start at any address. The IPv4, UDP and ICMP structs of DPDK
 * are packed (alignment 1) and are accessed in place; the Ethernet and ARP structs are
 * 2-byte aligned, so they are copied to/from locals with memcpy.
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include <rte_arp.h>
#include <rte_byteorder.h>
#include <rte_ether.h>
#include <rte_icmp.h>
#include <rte_ip.h>
#include <rte_pause.h>
#include <rte_udp.h>

#include "net.h"

#define ETH_LEN ((uint32_t)sizeof(struct rte_ether_hdr))	/* 14 */
#define ARP_LEN ((uint32_t)sizeof(struct rte_arp_hdr))	/* 28 */
#define IP_MIN_LEN ((uint32_t)sizeof(struct rte_ipv4_hdr))	/* 20 */
#define UDP_LEN ((uint32_t)sizeof(struct rte_udp_hdr))	/* 8 */
#define ICMP_LEN ((uint32_t)sizeof(struct rte_icmp_hdr))	/* 8 */
#define ARP_FRAME_MIN 60	/* minimum Ethernet frame without FCS */
#define TX_TTL 64
#define UDP_PAYLOAD_MAX (UINT16_MAX - IP_MIN_LEN - UDP_LEN)
#define ARP_PROBE_WINDOW 8

_Static_assert(SL_NET_HDRS_LEN == 14 + 20 + 8, "SL_NET_HDRS_LEN");
_Static_assert(sizeof(struct rte_ether_hdr) == 14, "ether hdr");
_Static_assert(sizeof(struct rte_arp_hdr) == 28, "arp hdr");
_Static_assert(sizeof(struct rte_ipv4_hdr) == 20, "ipv4 hdr");
_Static_assert((SL_NET_ARP_SLOTS & (SL_NET_ARP_SLOTS - 1)) == 0, "ARP slots power of 2");
_Static_assert(SL_NET_ARP_SLOTS >= ARP_PROBE_WINDOW, "ARP slots >= probe window");

static const char *const kind_names[SL_NET_KIND_MAX] = {
	[SL_NET_UDP] = "udp",
	[SL_NET_ARP_REQUEST] = "arp_request",
	[SL_NET_ARP_REPLY] = "arp_reply",
	[SL_NET_ICMP_ECHO] = "icmp_echo",
	[SL_NET_DROP_SHORT] = "drop_short",
	[SL_NET_DROP_ETHERTYPE] = "drop_ethertype",
	[SL_NET_DROP_NOT_US] = "drop_not_us",
	[SL_NET_DROP_IP_HDR] = "drop_ip_hdr",
	[SL_NET_DROP_IP_CKSUM] = "drop_ip_cksum",
	[SL_NET_DROP_FRAGMENT] = "drop_fragment",
	[SL_NET_DROP_PROTO] = "drop_proto",
	[SL_NET_DROP_UDP_PORT] = "drop_udp_port",
	[SL_NET_DROP_UDP_LEN] = "drop_udp_len",
	[SL_NET_DROP_UDP_CKSUM] = "drop_udp_cksum",
	[SL_NET_DROP_ARP] = "drop_arp",
	[SL_NET_DROP_SRC] = "drop_bad_source",
};

static inline int
mac_is_bcast(const uint8_t *m)
{
	return (m[0] & m[1] & m[2] & m[3] & m[4] & m[5]) == 0xff;
}

static inline int
mac_is_mcast(const uint8_t *m)
{
	return m[0] & 0x01;	/* includes broadcast */
}

static inline int
mac_is_zero(const uint8_t *m)
{
	return (m[0] | m[1] | m[2] | m[3] | m[4] | m[5]) == 0;
}

/* Ones' complement sum of a and b (both already folded to 16 bits). */
static inline uint16_t
cksum_add(uint16_t a, uint16_t b)
{
	uint32_t s = (uint32_t)a + b;

	return (uint16_t)((s & 0xffff) + (s >> 16));
}

static enum sl_net_kind
parse_arp(const uint8_t *frame, uint32_t len, const struct sl_net_if *nif,
	  struct sl_net_info *info)
{
	struct rte_arp_hdr arp;
	uint16_t op;

	if (len < ETH_LEN + ARP_LEN)
		return SL_NET_DROP_SHORT;
	memcpy(&arp, frame + ETH_LEN, ARP_LEN);
	if (arp.arp_hardware != RTE_BE16(RTE_ARP_HRD_ETHER) ||
	    arp.arp_protocol != RTE_BE16(RTE_ETHER_TYPE_IPV4) ||
	    arp.arp_hlen != RTE_ETHER_ADDR_LEN || arp.arp_plen != 4)
		return SL_NET_DROP_ARP;
	/* A sender hardware address that is multicast or zero is never valid. */
	if (mac_is_mcast(arp.arp_data.arp_sha.addr_bytes) ||
	    mac_is_zero(arp.arp_data.arp_sha.addr_bytes))
		return SL_NET_DROP_ARP;
	op = rte_be_to_cpu_16(arp.arp_opcode);
	if (op != RTE_ARP_OP_REQUEST && op != RTE_ARP_OP_REPLY)
		return SL_NET_DROP_ARP;

	memcpy(info->src_mac, arp.arp_data.arp_sha.addr_bytes, 6);
	info->src_ip = arp.arp_data.arp_sip;
	info->dst_ip = arp.arp_data.arp_tip;

	/*
	 * Only ARP for our IP. Gratuitous ARP (sender IP == target IP) is never
	 * answered nor reported, even when it names our IP (that would be a conflict).
	 * An RFC 5227 probe (sender IP 0) for our IP is answered like any request.
	 */
	if (arp.arp_data.arp_tip != nif->ip || arp.arp_data.arp_sip == arp.arp_data.arp_tip)
		return SL_NET_DROP_NOT_US;
	if (op == RTE_ARP_OP_REQUEST)
		return SL_NET_ARP_REQUEST;
	if (arp.arp_data.arp_sip == 0)
		return SL_NET_DROP_ARP;	/* a reply must name its sender */
	return SL_NET_ARP_REPLY;
}

static enum sl_net_kind
parse_udp(const uint8_t *frame, const struct rte_ipv4_hdr *ip, uint32_t l4_off,
	  uint32_t l4_len, const struct sl_net_if *nif, uint32_t rx_flags,
	  struct sl_net_info *info)
{
	const struct rte_udp_hdr *udp = (const struct rte_udp_hdr *)(frame + l4_off);
	uint16_t ulen, dport, sum;

	/* l4_off + l4_len <= len was checked by the caller. */
	if (l4_len < UDP_LEN)
		return SL_NET_DROP_UDP_LEN;
	ulen = rte_be_to_cpu_16(udp->dgram_len);
	if (ulen != l4_len)
		return SL_NET_DROP_UDP_LEN;
	dport = rte_be_to_cpu_16(udp->dst_port);
	info->src_port = rte_be_to_cpu_16(udp->src_port);
	info->dst_port = dport;
	if (dport < nif->udp_port_lo || dport > nif->udp_port_hi)
		return SL_NET_DROP_UDP_PORT;
	if (udp->dgram_cksum != 0 && !(rx_flags & SL_NET_RX_L4_CKSUM_GOOD)) {
		/* pseudo-header length = total_length - IHL * 4 = ulen (checked above) */
		sum = cksum_add(rte_raw_cksum(udp, ulen), rte_ipv4_phdr_cksum(ip, 0));
		if (sum != 0xffff)
			return SL_NET_DROP_UDP_CKSUM;
	}
	info->payload_off = (uint16_t)(l4_off + UDP_LEN);
	info->payload_len = (uint16_t)(ulen - UDP_LEN);
	return SL_NET_UDP;
}

static enum sl_net_kind
parse_icmp(const uint8_t *frame, uint32_t l4_off, uint32_t l4_len)
{
	const struct rte_icmp_hdr *icmp = (const struct rte_icmp_hdr *)(frame + l4_off);

	if (l4_len < ICMP_LEN)
		return SL_NET_DROP_SHORT;
	if (icmp->icmp_type != RTE_IP_ICMP_ECHO_REQUEST || icmp->icmp_code != 0)
		return SL_NET_DROP_PROTO;
	/* No dedicated reason for a bad ICMP checksum: counted as DROP_PROTO. */
	if (rte_raw_cksum(icmp, l4_len) != 0xffff)
		return SL_NET_DROP_PROTO;
	return SL_NET_ICMP_ECHO;
}

int
sl_net_src_bad(const struct sl_net_if *nif, const uint8_t src_mac[6], uint32_t src_ip,
	       int udp, uint16_t src_port)
{
	uint32_t a = rte_be_to_cpu_32(src_ip), mask = rte_be_to_cpu_32(nif->netmask);
	uint32_t top = a >> 24;

	if (mac_is_mcast(src_mac) || mac_is_zero(src_mac))
		return 1;
	/* 0/8 this network, 127/8 loopback, 224/4 multicast, 240/4 reserved + broadcast */
	if (top == 0 || top == 127 || top >= 224)
		return 1;
	if (src_ip == nif->ip)
		return 1;
	/* the directed broadcast of our subnet (a /31 or /32 has none) */
	if (mask != 0 && ~mask > 1 && (a & ~mask) == ~mask &&
	    (a & mask) == (rte_be_to_cpu_32(nif->ip) & mask))
		return 1;
	return udp && src_port == 0;
}

static enum sl_net_kind
parse_ipv4(const uint8_t *frame, uint32_t len, const struct sl_net_if *nif,
	   uint32_t rx_flags, struct sl_net_info *info)
{
	const struct rte_ipv4_hdr *ip = (const struct rte_ipv4_hdr *)(frame + ETH_LEN);
	enum sl_net_kind kind;
	uint32_t ihl, tot, l4_off;
	uint16_t frag;

	if (len < ETH_LEN + IP_MIN_LEN)
		return SL_NET_DROP_SHORT;
	if ((ip->version_ihl >> 4) != 4)
		return SL_NET_DROP_IP_HDR;
	ihl = (uint32_t)(ip->version_ihl & RTE_IPV4_HDR_IHL_MASK) * RTE_IPV4_IHL_MULTIPLIER;
	if (ihl < IP_MIN_LEN)
		return SL_NET_DROP_IP_HDR;
	if (len < ETH_LEN + ihl)
		return SL_NET_DROP_SHORT;
	if (!(rx_flags & SL_NET_RX_IP_CKSUM_GOOD) && rte_raw_cksum(ip, ihl) != 0xffff)
		return SL_NET_DROP_IP_CKSUM;
	tot = rte_be_to_cpu_16(ip->total_length);
	if (tot < ihl)
		return SL_NET_DROP_IP_HDR;
	/* Bytes past total_length are Ethernet padding: ignored. */
	if (tot > len - ETH_LEN)
		return SL_NET_DROP_SHORT;
	frag = rte_be_to_cpu_16(ip->fragment_offset);
	if (frag & (RTE_IPV4_HDR_MF_FLAG | RTE_IPV4_HDR_OFFSET_MASK))
		return SL_NET_DROP_FRAGMENT;

	l4_off = ETH_LEN + ihl;
	info->src_ip = ip->src_addr;
	info->dst_ip = ip->dst_addr;
	info->l4_off = (uint16_t)l4_off;
	if (ip->dst_addr != nif->ip)
		return SL_NET_DROP_NOT_US;

	switch (ip->next_proto_id) {
	case IPPROTO_UDP:
		kind = parse_udp(frame, ip, l4_off, tot - ihl, nif, rx_flags, info);
		if (kind == SL_NET_UDP &&
		    sl_net_src_bad(nif, info->src_mac, info->src_ip, 1, info->src_port))
			return SL_NET_DROP_SRC;
		return kind;
	case IPPROTO_ICMP:
		kind = parse_icmp(frame, l4_off, tot - ihl);
		if (kind == SL_NET_ICMP_ECHO &&
		    sl_net_src_bad(nif, info->src_mac, info->src_ip, 0, 0))
			return SL_NET_DROP_SRC;
		return kind;
	default:
		return SL_NET_DROP_PROTO;
	}
}

enum sl_net_kind
sl_net_parse(const uint8_t *frame, uint32_t len, const struct sl_net_if *nif,
	     uint32_t rx_flags, struct sl_net_info *info)
{
	struct rte_ether_hdr eth;
	enum sl_net_kind kind;
	uint16_t type;

	memset(info, 0, sizeof(*info));
	if (len < ETH_LEN) {
		kind = SL_NET_DROP_SHORT;
		goto out;
	}
	memcpy(&eth, frame, ETH_LEN);
	memcpy(info->src_mac, eth.src_addr.addr_bytes, 6);
	info->l3_off = (uint16_t)ETH_LEN;
	type = rte_be_to_cpu_16(eth.ether_type);

	/* Ours, or broadcast for ARP only. */
	if (memcmp(eth.dst_addr.addr_bytes, nif->mac, 6) != 0 &&
	    !(type == RTE_ETHER_TYPE_ARP && mac_is_bcast(eth.dst_addr.addr_bytes))) {
		kind = SL_NET_DROP_NOT_US;
		goto out;
	}

	switch (type) {
	case RTE_ETHER_TYPE_IPV4:
		kind = parse_ipv4(frame, len, nif, rx_flags, info);
		break;
	case RTE_ETHER_TYPE_ARP:
		kind = parse_arp(frame, len, nif, info);
		break;
	default:	/* incl. VLAN, QinQ, IPv6, 802.3 length fields */
		kind = SL_NET_DROP_ETHERTYPE;
		break;
	}
out:
	info->kind = kind;
	return kind;
}

/* Fill a 20-byte IPv4 header (no options) and the UDP header that follows it. */
static void
write_ip_udp(uint8_t *l3, uint32_t src_ip, uint32_t dst_ip, uint16_t src_port,
	     uint16_t dst_port, uint16_t payload_len, uint32_t tx_flags)
{
	struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)l3;
	struct rte_udp_hdr *udp = (struct rte_udp_hdr *)(l3 + IP_MIN_LEN);

	ip->version_ihl = RTE_IPV4_VHL_DEF;
	ip->type_of_service = 0;
	ip->total_length = rte_cpu_to_be_16((uint16_t)(IP_MIN_LEN + UDP_LEN + payload_len));
	ip->packet_id = 0;
	ip->fragment_offset = RTE_BE16(RTE_IPV4_HDR_DF_FLAG);
	ip->time_to_live = TX_TTL;
	ip->next_proto_id = IPPROTO_UDP;
	ip->hdr_checksum = 0;
	ip->src_addr = src_ip;
	ip->dst_addr = dst_ip;
	if (!(tx_flags & SL_NET_TX_IP_CKSUM))
		ip->hdr_checksum = rte_ipv4_cksum(ip);

	udp->src_port = rte_cpu_to_be_16(src_port);
	udp->dst_port = rte_cpu_to_be_16(dst_port);
	udp->dgram_len = rte_cpu_to_be_16((uint16_t)(UDP_LEN + payload_len));
	udp->dgram_cksum = 0;
	if (tx_flags & SL_NET_TX_UDP_CKSUM)
		udp->dgram_cksum = rte_ipv4_phdr_cksum(ip, 0);
	else
		udp->dgram_cksum = rte_ipv4_udptcp_cksum(ip, udp);
}

uint32_t
sl_net_udp_build(uint8_t *frame, const struct sl_net_if *nif, const uint8_t dst_mac[6],
		 uint32_t dst_ip, uint16_t src_port, uint16_t dst_port, uint16_t payload_len,
		 uint32_t tx_flags)
{
	struct rte_ether_hdr eth;

	if (payload_len > UDP_PAYLOAD_MAX)
		return 0;
	memcpy(eth.dst_addr.addr_bytes, dst_mac, 6);
	memcpy(eth.src_addr.addr_bytes, nif->mac, 6);
	eth.ether_type = RTE_BE16(RTE_ETHER_TYPE_IPV4);
	memcpy(frame, &eth, ETH_LEN);
	write_ip_udp(frame + ETH_LEN, nif->ip, dst_ip, src_port, dst_port, payload_len,
		     tx_flags);
	return SL_NET_HDRS_LEN + payload_len;
}

uint32_t
sl_net_udp_reply(uint8_t *frame, const struct sl_net_info *info, uint16_t payload_len,
		 uint32_t tx_flags)
{
	uint8_t our_mac[6];

	if (payload_len > UDP_PAYLOAD_MAX)
		return 0;
	/* The request's destination MAC is ours (parse accepted it as UDP). */
	memcpy(our_mac, frame, 6);
	memcpy(frame, info->src_mac, 6);
	memcpy(frame + 6, our_mac, 6);
	/* Request had IP options: move the payload to where a 20-byte header ends. */
	if (info->payload_off != SL_NET_HDRS_LEN)
		memmove(frame + SL_NET_HDRS_LEN, frame + info->payload_off, payload_len);
	write_ip_udp(frame + ETH_LEN, info->dst_ip, info->src_ip, info->dst_port,
		     info->src_port, payload_len, tx_flags);
	return SL_NET_HDRS_LEN + payload_len;
}

uint32_t
sl_net_udp_rewrap(uint8_t *frame, const uint8_t *orig, const struct sl_net_info *info,
		  const uint8_t *payload, uint16_t len, struct sl_net_info *out)
{
	memmove(frame + SL_NET_HDRS_LEN, payload, len);
	if (frame != orig)
		memcpy(frame, orig, ETH_LEN);
	write_ip_udp(frame + ETH_LEN, info->src_ip, info->dst_ip, info->src_port,
		     info->dst_port, len, 0);
	*out = *info;
	out->l3_off = ETH_LEN;
	out->l4_off = ETH_LEN + IP_MIN_LEN;
	out->payload_off = SL_NET_HDRS_LEN;
	out->payload_len = len;
	return SL_NET_HDRS_LEN + len;
}

uint32_t
sl_net_udp_resize(uint8_t *frame, uint16_t payload_len, uint32_t tx_flags)
{
	const struct rte_ipv4_hdr *ip = (const struct rte_ipv4_hdr *)(frame + ETH_LEN);
	const struct rte_udp_hdr *udp = (const struct rte_udp_hdr *)(frame + ETH_LEN +
								     IP_MIN_LEN);

	write_ip_udp(frame + ETH_LEN, ip->src_addr, ip->dst_addr,
		     rte_be_to_cpu_16(udp->src_port), rte_be_to_cpu_16(udp->dst_port),
		     payload_len, tx_flags);
	return SL_NET_HDRS_LEN + payload_len;
}

uint32_t
sl_net_arp_reply(uint8_t *frame, const struct sl_net_if *nif)
{
	struct rte_ether_hdr eth;
	struct rte_arp_hdr arp;

	memcpy(&arp, frame + ETH_LEN, ARP_LEN);
	arp.arp_opcode = RTE_BE16(RTE_ARP_OP_REPLY);
	arp.arp_data.arp_tha = arp.arp_data.arp_sha;
	arp.arp_data.arp_tip = arp.arp_data.arp_sip;
	memcpy(arp.arp_data.arp_sha.addr_bytes, nif->mac, 6);
	arp.arp_data.arp_sip = nif->ip;

	eth.dst_addr = arp.arp_data.arp_tha;
	memcpy(eth.src_addr.addr_bytes, nif->mac, 6);
	eth.ether_type = RTE_BE16(RTE_ETHER_TYPE_ARP);

	memcpy(frame, &eth, ETH_LEN);
	memcpy(frame + ETH_LEN, &arp, ARP_LEN);
	return ETH_LEN + ARP_LEN;
}

uint32_t
sl_net_arp_request(uint8_t *frame, const struct sl_net_if *nif, uint32_t target_ip)
{
	struct rte_ether_hdr eth;
	struct rte_arp_hdr arp;

	memset(eth.dst_addr.addr_bytes, 0xff, 6);
	memcpy(eth.src_addr.addr_bytes, nif->mac, 6);
	eth.ether_type = RTE_BE16(RTE_ETHER_TYPE_ARP);

	arp.arp_hardware = RTE_BE16(RTE_ARP_HRD_ETHER);
	arp.arp_protocol = RTE_BE16(RTE_ETHER_TYPE_IPV4);
	arp.arp_hlen = RTE_ETHER_ADDR_LEN;
	arp.arp_plen = 4;
	arp.arp_opcode = RTE_BE16(RTE_ARP_OP_REQUEST);
	memcpy(arp.arp_data.arp_sha.addr_bytes, nif->mac, 6);
	arp.arp_data.arp_sip = nif->ip;
	memset(arp.arp_data.arp_tha.addr_bytes, 0, 6);
	arp.arp_data.arp_tip = target_ip;

	memcpy(frame, &eth, ETH_LEN);
	memcpy(frame + ETH_LEN, &arp, ARP_LEN);
	memset(frame + ETH_LEN + ARP_LEN, 0, ARP_FRAME_MIN - ETH_LEN - ARP_LEN);
	return ARP_FRAME_MIN;
}

uint32_t
sl_net_icmp_reply(uint8_t *frame, uint32_t len, const struct sl_net_info *info,
		  uint32_t tx_flags)
{
	struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(frame + info->l3_off);
	struct rte_icmp_hdr *icmp = (struct rte_icmp_hdr *)(frame + info->l4_off);
	uint16_t old_word, new_word;
	uint8_t our_mac[6];

	memcpy(our_mac, frame, 6);
	memcpy(frame, info->src_mac, 6);
	memcpy(frame + 6, our_mac, 6);

	/* IPv4: same header (options kept), addresses swapped, fresh TTL. */
	ip->src_addr = info->dst_ip;
	ip->dst_addr = info->src_ip;
	ip->time_to_live = TX_TTL;
	ip->hdr_checksum = 0;
	if (!(tx_flags & SL_NET_TX_IP_CKSUM))
		ip->hdr_checksum = rte_ipv4_cksum(ip);

	/*
	 * ICMP: type 8 -> 0. Incremental update (RFC 1624, eqn. 3) of the word holding
	 * type and code: HC' = ~(~HC + ~m + m'). The request's checksum was verified.
	 */
	memcpy(&old_word, &icmp->icmp_type, 2);
	icmp->icmp_type = RTE_IP_ICMP_ECHO_REPLY;
	memcpy(&new_word, &icmp->icmp_type, 2);
	icmp->icmp_cksum = (uint16_t)~cksum_add(cksum_add((uint16_t)~icmp->icmp_cksum,
							  (uint16_t)~old_word), new_word);
	return len;
}

const char *
sl_net_kind_name(enum sl_net_kind kind)
{
	if ((unsigned int)kind >= SL_NET_KIND_MAX)
		return "unknown";
	return kind_names[kind];
}

static inline uint32_t
arp_hash(uint32_t ip)
{
	uint32_t h = ip;

	/* murmur3 finaliser: every input bit affects the low bits we keep */
	h ^= h >> 16;
	h *= 0x85ebca6bu;
	h ^= h >> 13;
	h *= 0xc2b2ae35u;
	h ^= h >> 16;
	return h & (SL_NET_ARP_SLOTS - 1);
}

/* Seqcount write of one entry (single writer). */
static void
arp_write(struct sl_net_arp_entry *e, uint32_t ip, const uint8_t mac[6], uint64_t now)
{
	uint32_t seq = e->seq;
	int i;

	__atomic_store_n(&e->seq, seq + 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	__atomic_store_n(&e->ip, ip, __ATOMIC_RELAXED);
	for (i = 0; i < 6; i++)
		__atomic_store_n(&e->mac[i], mac[i], __ATOMIC_RELAXED);
	__atomic_store_n(&e->updated_tsc, now, __ATOMIC_RELAXED);
	__atomic_store_n(&e->seq, seq + 2, __ATOMIC_RELEASE);
}

void
sl_net_arp_learn(struct sl_net_arp *t, uint32_t ip, const uint8_t mac[6], uint64_t now)
{
	struct sl_net_arp_entry *e, *empty = NULL, *oldest = NULL;
	uint32_t h, i;

	/* 0.0.0.0 marks empty slots; a multicast/zero MAC is never a neighbour. */
	if (ip == 0 || mac_is_mcast(mac) || mac_is_zero(mac))
		return;
	h = arp_hash(ip);
	for (i = 0; i < ARP_PROBE_WINDOW; i++) {
		e = &t->e[(h + i) & (SL_NET_ARP_SLOTS - 1)];
		if (e->ip == ip) {
			if (memcmp(e->mac, mac, 6) == 0)
				__atomic_store_n(&e->updated_tsc, now, __ATOMIC_RELAXED);
			else
				arp_write(e, ip, mac, now);
			return;
		}
		if (e->ip == 0) {
			/* Slots are never emptied, so ip cannot be further along. */
			empty = e;
			break;
		}
		if (oldest == NULL || e->updated_tsc < oldest->updated_tsc)
			oldest = e;
	}
	arp_write(empty != NULL ? empty : oldest, ip, mac, now);
}

int
sl_net_arp_lookup(const struct sl_net_arp *t, uint32_t ip, uint8_t mac[6])
{
	const struct sl_net_arp_entry *e;
	uint32_t h, i, s1, s2, eip;
	uint8_t m[6];
	int j;

	if (ip == 0)
		return -ENOENT;
	h = arp_hash(ip);
	for (i = 0; i < ARP_PROBE_WINDOW; i++) {
		e = &t->e[(h + i) & (SL_NET_ARP_SLOTS - 1)];
		for (;;) {
			s1 = __atomic_load_n(&e->seq, __ATOMIC_ACQUIRE);
			if (s1 & 1) {
				rte_pause();
				continue;
			}
			eip = __atomic_load_n(&e->ip, __ATOMIC_RELAXED);
			for (j = 0; j < 6; j++)
				m[j] = __atomic_load_n(&e->mac[j], __ATOMIC_RELAXED);
			__atomic_thread_fence(__ATOMIC_ACQUIRE);
			s2 = __atomic_load_n(&e->seq, __ATOMIC_RELAXED);
			if (s1 == s2)
				break;
		}
		if (eip == ip) {
			memcpy(mac, m, 6);
			return 0;
		}
		if (eip == 0)
			return -ENOENT;
	}
	return -ENOENT;
}

int
sl_net_parse_ip(const char *s, uint32_t *ip)
{
	uint32_t v = 0, part;
	int i, digits;

	if (s == NULL || ip == NULL)
		return -EINVAL;
	for (i = 0; i < 4; i++) {
		if (i > 0 && *s++ != '.')
			return -EINVAL;
		part = 0;
		digits = 0;
		while (*s >= '0' && *s <= '9') {
			if (digits > 0 && part == 0)
				return -EINVAL;	/* leading zero: "01" */
			part = part * 10 + (uint32_t)(*s - '0');
			if (++digits > 3 || part > 255)
				return -EINVAL;
			s++;
		}
		if (digits == 0)
			return -EINVAL;
		v = (v << 8) | part;
	}
	if (*s != '\0')
		return -EINVAL;
	*ip = rte_cpu_to_be_32(v);
	return 0;
}

int
sl_net_parse_cidr(const char *s, uint32_t *ip, uint32_t *mask)
{
	char buf[16];
	const char *slash;
	uint32_t len = 0, v;
	size_t n;

	if (s == NULL || ip == NULL || mask == NULL)
		return -EINVAL;
	slash = strchr(s, '/');
	n = slash != NULL ? (size_t)(slash - s) : strlen(s);
	if (n >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, s, n);
	buf[n] = 0;
	if (slash != NULL) {
		s = slash + 1;
		if (*s < '1' || *s > '9')
			return -EINVAL;		/* empty, a sign, or a leading zero */
		while (*s >= '0' && *s <= '9' && len <= 32)
			len = len * 10 + (uint32_t)(*s++ - '0');
		if (*s != '\0' || len > 32)
			return -EINVAL;
	}
	if (sl_net_parse_ip(buf, &v) != 0)
		return -EINVAL;
	*ip = v;
	*mask = len == 0 ? 0 : rte_cpu_to_be_32(len == 32 ? 0xffffffffu : ~(0xffffffffu >> len));
	return 0;
}
