/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * sluice's own tiny network stack: Ethernet II, ARP, IPv4 (no options on transmit,
 * options accepted on receive, no fragments), UDP and ICMP echo. Works on a contiguous
 * frame buffer (the first mbuf segment), so it is shared by the broker and by the DPDK
 * transport of libsluice, and unit-testable without EAL. Uses only DPDK's header-only
 * protocol definitions and checksum helpers.
 */
#ifndef SL_NET_H
#define SL_NET_H

#include <stdint.h>

/* Ethernet (14) + IPv4 (20) + UDP (8): where the UDP payload starts in frames we build. */
#define SL_NET_HDRS_LEN 42

/* What a received frame is, and why it was dropped. */
enum sl_net_kind {
	SL_NET_UDP = 0,		/* UDP to our IP and one of our ports: payload is valid */
	SL_NET_ARP_REQUEST,	/* ARP request for our IP: answer with sl_net_arp_reply() */
	SL_NET_ARP_REPLY,	/* ARP reply (sender learned by the caller) */
	SL_NET_ICMP_ECHO,	/* ICMP echo request to our IP: sl_net_icmp_reply() */
	/* drop reasons, counted by the caller */
	SL_NET_DROP_SHORT,	/* truncated at some layer */
	SL_NET_DROP_ETHERTYPE,	/* not IPv4 / ARP (incl. VLAN, IPv6) */
	SL_NET_DROP_NOT_US,	/* wrong destination MAC or IP, or ARP for another IP */
	SL_NET_DROP_IP_HDR,	/* bad IPv4 version / IHL / total length */
	SL_NET_DROP_IP_CKSUM,	/* bad IPv4 header checksum */
	SL_NET_DROP_FRAGMENT,	/* IPv4 fragment */
	SL_NET_DROP_PROTO,	/* IP protocol other than UDP / ICMP, or ICMP other than echo */
	SL_NET_DROP_UDP_PORT,	/* UDP to a port we do not serve */
	SL_NET_DROP_UDP_LEN,	/* UDP length inconsistent with IP length */
	SL_NET_DROP_UDP_CKSUM,	/* bad UDP checksum */
	SL_NET_DROP_ARP,	/* malformed or unsupported ARP */
	SL_NET_DROP_SRC,	/* UDP or ICMP from a source no answer may go to: see below */
	SL_NET_KIND_MAX
};

/* Receive/transmit offload hints, from the port's capabilities. */
#define SL_NET_RX_IP_CKSUM_GOOD 0x1  /* NIC verified IPv4 header checksum */
#define SL_NET_RX_L4_CKSUM_GOOD 0x2  /* NIC verified UDP checksum */
#define SL_NET_TX_IP_CKSUM 0x4	     /* NIC fills IPv4 checksum: leave it 0 */
#define SL_NET_TX_UDP_CKSUM 0x8	     /* NIC fills UDP checksum: put the pseudo-header sum */

/* One interface: our addresses. ip is in network byte order. */
struct sl_net_if {
	uint8_t mac[6];
	uint32_t ip;		/* network byte order */
	uint16_t udp_port_lo;	/* host byte order: we serve ports [lo, hi] */
	uint16_t udp_port_hi;
	uint32_t netmask;	/* network order; 0 = unknown (no directed broadcast check) */
};

/* Result of parsing a received frame. Addresses in network byte order. */
struct sl_net_info {
	enum sl_net_kind kind;
	uint16_t l3_off;	/* IPv4 or ARP header offset */
	uint16_t l4_off;	/* UDP/ICMP header offset */
	uint16_t payload_off;	/* UDP payload offset */
	uint16_t payload_len;	/* UDP payload length */
	uint8_t src_mac[6];
	uint32_t src_ip;
	uint32_t dst_ip;
	uint16_t src_port;	/* host byte order */
	uint16_t dst_port;	/* host byte order */
};

/**
 * Classify and validate a received frame of len bytes (contiguous). rx_flags are
 * SL_NET_RX_* hints from the mbuf. Verifies IPv4 header checksum and UDP checksum
 * (0 = none, allowed for IPv4) unless the hints say the NIC did. Returns info->kind.
 *
 * Every UDP datagram and ICMP echo is answered to its source, so a source no answer may
 * go to is SL_NET_DROP_SRC (sl_net_src_bad): otherwise one forged datagram makes the node
 * send to a whole segment, to a group, to itself, or to a port nobody listens on (an
 * amplifier). Calling context: any thread; no side effects.
 */
enum sl_net_kind
sl_net_parse(const uint8_t *frame, uint32_t len, const struct sl_net_if *nif,
	     uint32_t rx_flags, struct sl_net_info *info);

/**
 * Turn a received UDP frame (parsed into info) into the answer in place: swap MACs,
 * IPs and ports, write a new payload length payload_len (payload already written at
 * info->payload_off), fix IPv4 total length, TTL 64, checksums (per tx_flags).
 * The reply always has the layout of sl_net_udp_build(): a fresh 20-byte IPv4 header
 * (no options, id 0, DF, TOS 0) and the payload at SL_NET_HDRS_LEN. If the request
 * carried IP options (info->payload_off > SL_NET_HDRS_LEN), the payload is moved down
 * with memmove; so TX offload metadata is always l2 14, l3 20.
 * Returns the new frame length (0 if payload_len > 65507). Any thread.
 */
uint32_t
sl_net_udp_reply(uint8_t *frame, const struct sl_net_info *info, uint16_t payload_len,
		 uint32_t tx_flags);

/**
 * Write Ethernet/IPv4/UDP headers into frame[0..SL_NET_HDRS_LEN) for a payload of
 * payload_len bytes already at frame + SL_NET_HDRS_LEN. dst_ip network order, ports
 * host order. Returns the frame length. Any thread.
 */
uint32_t
sl_net_udp_build(uint8_t *frame, const struct sl_net_if *nif, const uint8_t dst_mac[6],
		 uint32_t dst_ip, uint16_t src_port, uint16_t dst_port, uint16_t payload_len,
		 uint32_t tx_flags);

/**
 * Write into frame (room for SL_NET_HDRS_LEN + len bytes) the received UDP datagram that
 * orig holds (parsed into info) carrying instead the len bytes at payload: orig's Ethernet
 * header, a fresh 20-byte IPv4 header and a UDP header with info's addresses and ports,
 * lengths and both checksums written, the payload at SL_NET_HDRS_LEN. frame may be orig
 * (payload then inside it: it is moved down). *out: the new frame's info, as sl_net_parse()
 * would give. For the frames of a bundle, each made a datagram of its own. Returns the
 * frame length. Any thread.
 */
uint32_t
sl_net_udp_rewrap(uint8_t *frame, const uint8_t *orig, const struct sl_net_info *info,
		  const uint8_t *payload, uint16_t len, struct sl_net_info *out);

/**
 * A UDP frame with the layout of sl_net_udp_build() whose payload now has payload_len bytes
 * (appended to): rewrite the IPv4 total length, the UDP length and the checksums (per
 * tx_flags), keeping its addresses and ports. Returns the frame length. Any thread.
 */
uint32_t
sl_net_udp_resize(uint8_t *frame, uint16_t payload_len, uint32_t tx_flags);

/** Answer an ARP request in place (frame parsed as SL_NET_ARP_REQUEST). Returns length. */
uint32_t
sl_net_arp_reply(uint8_t *frame, const struct sl_net_if *nif);

/** Build a broadcast ARP request for target_ip (network order) into frame (>= 60 bytes).
 * Returns length (padded to 60). */
uint32_t
sl_net_arp_request(uint8_t *frame, const struct sl_net_if *nif, uint32_t target_ip);

/** Answer an ICMP echo request in place (parsed as SL_NET_ICMP_ECHO); len is the frame
 * length. Returns the length (unchanged). */
uint32_t
sl_net_icmp_reply(uint8_t *frame, uint32_t len, const struct sl_net_info *info,
		  uint32_t tx_flags);

/**
 * 1 when an answer must never go to this source (addresses network order, port host
 * order; port 0 for ICMP, which has none: then only the addresses count), else 0:
 *   - a multicast or broadcast source MAC (bit 0 of the first byte), or the zero MAC;
 *   - IPv4 0.0.0.0/8 ("this network"), 127.0.0.0/8 (loopback), 224.0.0.0/4 (multicast),
 *     240.0.0.0/4 (reserved, with 255.255.255.255, the limited broadcast);
 *   - the node's own address, or the directed broadcast of its subnet (nif->netmask
 *     known, i.e. --ip a.b.c.d/len with len <= 30);
 *   - UDP source port 0 (udp non-zero).
 * Any thread.
 */
int
sl_net_src_bad(const struct sl_net_if *nif, const uint8_t src_mac[6], uint32_t src_ip,
	       int udp, uint16_t src_port);

/** Name of a kind / drop reason, for stats ("drop_ip_cksum"). */
const char *
sl_net_kind_name(enum sl_net_kind kind);

/*
 * ARP cache: a fixed open-addressing table with one writer (the lcore that handles
 * ARP) and lock-free readers (seqcount per entry).
 */
#define SL_NET_ARP_SLOTS 256

struct sl_net_arp_entry {
	uint32_t seq;	/* odd while being written */
	uint32_t ip;	/* network order; 0 = empty */
	uint8_t mac[6];
	uint64_t updated_tsc;
};

struct sl_net_arp {
	struct sl_net_arp_entry e[SL_NET_ARP_SLOTS];
};

/** Insert or refresh ip -> mac. Calling context: the single writer only. */
void
sl_net_arp_learn(struct sl_net_arp *t, uint32_t ip, const uint8_t mac[6], uint64_t now);

/** Look up ip. Returns 0 and fills mac, or -ENOENT. Any thread (lock-free). */
int
sl_net_arp_lookup(const struct sl_net_arp *t, uint32_t ip, uint8_t mac[6]);

/** Parse "a.b.c.d" into network order. Returns 0 or -EINVAL. */
int
sl_net_parse_ip(const char *s, uint32_t *ip);

/**
 * Parse "a.b.c.d" or "a.b.c.d/len" (len 1..32) into an address and a netmask, both in
 * network order; *mask is 0 when no length is given. Returns 0 or -EINVAL (nothing
 * written). Any thread.
 */
int
sl_net_parse_cidr(const char *s, uint32_t *ip, uint32_t *mask);

#endif /* SL_NET_H */
