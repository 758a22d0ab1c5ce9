/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * Unit tests of dataplane/net.c: parse / build / reply for Ethernet, ARP, IPv4, UDP and
 * ICMP echo, the ARP cache and the address parser. No EAL. Checksums are verified with
 * an independent byte-wise (kernel-style) implementation. Run under ASan/UBSan to catch
 * out-of-bounds reads on truncated frames (each truncation is parsed from its own
 * exactly-sized heap copy).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>

#include "bytes.h"
#include "net.h"

static int n_pass;
static int n_fail;

#define CHECK(cond, ...)                                                        \
	do {                                                                    \
		if (cond) {                                                     \
			n_pass++;                                               \
			printf("ok   ");                                        \
		} else {                                                        \
			n_fail++;                                               \
			printf("FAIL %s:%d ", __FILE__, __LINE__);              \
		}                                                               \
		printf(__VA_ARGS__);                                            \
		printf("\n");                                                   \
	} while (0)

#define OFF_IP 14
#define OFF_UDP 34
#define BUF_LEN 2048

static const uint8_t our_mac[6] = {0x02, 0x00, 0x00, 0x00, 0x00, 0x01};
static const uint8_t peer_mac[6] = {0x02, 0x00, 0x00, 0x00, 0x00, 0x02};
static const uint8_t bcast_mac[6] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};

static struct sl_net_if our_if;
static struct sl_net_if peer_if;

/* Kernel-style checksum: big-endian 16-bit words, odd byte padded, folded. */
static uint32_t
sum_bytes(const uint8_t *p, size_t n, uint32_t sum)
{
	size_t i;

	for (i = 0; i + 1 < n; i += 2)
		sum += (uint32_t)p[i] << 8 | p[i + 1];
	if (n & 1)
		sum += (uint32_t)p[n - 1] << 8;
	return sum;
}

static uint16_t
fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)sum;
}

/* 1 if the IPv4 header at frame + 14 has a valid checksum. */
static int
ip_cksum_ok(const uint8_t *frame)
{
	size_t ihl = (size_t)(frame[OFF_IP] & 0xf) * 4;

	return fold(sum_bytes(frame + OFF_IP, ihl, 0)) == 0xffff;
}

/* Pseudo-header sum (not complemented) of the IPv4 packet at frame + 14. */
static uint32_t
pseudo_sum(const uint8_t *frame)
{
	const uint8_t *ip = frame + OFF_IP;
	size_t ihl = (size_t)(ip[0] & 0xf) * 4;
	uint32_t sum = 0;

	sum = sum_bytes(ip + 12, 8, sum);		/* src, dst */
	sum += ip[9];					/* zero, protocol */
	sum += (uint32_t)(sl_bytes_get_be16(ip + 2) - ihl);		/* L4 length */
	return sum;
}

/* 1 if the UDP checksum of the packet at frame + 14 verifies (full computation). */
static int
udp_cksum_ok(const uint8_t *frame)
{
	const uint8_t *ip = frame + OFF_IP;
	size_t ihl = (size_t)(ip[0] & 0xf) * 4;
	const uint8_t *udp = ip + ihl;

	return fold(sum_bytes(udp, sl_bytes_get_be16(udp + 4), pseudo_sum(frame))) == 0xffff;
}

static void
fix_ip_cksum(uint8_t *frame)
{
	size_t ihl = (size_t)(frame[OFF_IP] & 0xf) * 4;

	sl_bytes_put_be16(frame + OFF_IP + 10, 0);
	sl_bytes_put_be16(frame + OFF_IP + 10, (uint16_t)~fold(sum_bytes(frame + OFF_IP, ihl, 0)));
}

static void
fix_udp_cksum(uint8_t *frame)
{
	size_t ihl = (size_t)(frame[OFF_IP] & 0xf) * 4;
	uint8_t *udp = frame + OFF_IP + ihl;
	uint16_t c;

	sl_bytes_put_be16(udp + 6, 0);
	c = (uint16_t)~fold(sum_bytes(udp, sl_bytes_get_be16(udp + 4), pseudo_sum(frame)));
	sl_bytes_put_be16(udp + 6, c == 0 ? 0xffff : c);
}

/* A valid UDP frame from peer to us (port 5150) with payload_len pattern bytes. */
static uint32_t
peer_udp(uint8_t *frame, uint16_t payload_len, uint16_t dport)
{
	uint16_t i;

	for (i = 0; i < payload_len; i++)
		frame[SL_NET_HDRS_LEN + i] = (uint8_t)(i * 7 + 3);
	return sl_net_udp_build(frame, &peer_if, our_mac, our_if.ip, 40000, dport,
				payload_len, 0);
}

static enum sl_net_kind
parse(const uint8_t *frame, uint32_t len)
{
	struct sl_net_info info;

	return sl_net_parse(frame, len, &our_if, 0, &info);
}

static void
test_build_parse(void)
{
	static const uint16_t sizes[] = {0, 1, 18, 33, 100, 1472, 8972};
	uint8_t frame[9100];
	struct sl_net_info info;
	uint32_t len;
	size_t k;
	int intact, i;

	for (k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		uint16_t pl = sizes[k];

		memset(frame, 0xee, sizeof(frame));
		len = peer_udp(frame, pl, 5150);
		CHECK(len == SL_NET_HDRS_LEN + (uint32_t)pl, "build len %u for payload %u",
		      len, pl);
		CHECK(ip_cksum_ok(frame), "payload %u: IPv4 checksum verifies (full)", pl);
		CHECK(udp_cksum_ok(frame), "payload %u: UDP checksum verifies (full)", pl);
		CHECK(sl_bytes_get_be16(frame + OFF_UDP + 6) != 0, "payload %u: UDP checksum present", pl);
		CHECK(frame[OFF_IP] == 0x45 && frame[OFF_IP + 8] == 64 &&
		      sl_bytes_get_be16(frame + OFF_IP + 6) == 0x4000 &&
		      sl_bytes_get_be16(frame + OFF_IP + 4) == 0 &&
		      frame[OFF_IP + 9] == 17,
		      "payload %u: IHL 5, TTL 64, DF, id 0, proto UDP", pl);
		CHECK(sl_bytes_get_be16(frame + OFF_IP + 2) == 28 + pl &&
		      sl_bytes_get_be16(frame + OFF_UDP + 4) == 8 + pl,
		      "payload %u: IP total and UDP lengths", pl);
		CHECK(memcmp(frame, our_mac, 6) == 0 && memcmp(frame + 6, peer_mac, 6) == 0 &&
		      sl_bytes_get_be16(frame + 12) == 0x0800, "payload %u: Ethernet header", pl);

		CHECK(sl_net_parse(frame, len, &our_if, 0, &info) == SL_NET_UDP &&
		      info.kind == SL_NET_UDP, "payload %u: parses as udp", pl);
		CHECK(info.payload_off == SL_NET_HDRS_LEN && info.payload_len == pl &&
		      info.l3_off == 14 && info.l4_off == 34,
		      "payload %u: offsets and payload length", pl);
		CHECK(info.src_port == 40000 && info.dst_port == 5150,
		      "payload %u: ports host order", pl);
		CHECK(info.src_ip == peer_if.ip && info.dst_ip == our_if.ip &&
		      memcmp(info.src_mac, peer_mac, 6) == 0, "payload %u: addresses", pl);
		intact = 1;
		for (i = 0; i < pl; i++)
			if (frame[info.payload_off + i] != (uint8_t)(i * 7 + 3))
				intact = 0;
		CHECK(intact, "payload %u: payload intact", pl);
	}

	/* A 64-byte frame (60 + FCS stripped) with padding beyond IP total length. */
	len = peer_udp(frame, 10, 5150);
	memset(frame + len, 0xab, 60 - len);
	CHECK(sl_net_parse(frame, 60, &our_if, 0, &info) == SL_NET_UDP &&
	      info.payload_len == 10, "Ethernet padding beyond IP total length ignored");

	/* Unaligned frame start. */
	{
		static uint8_t raw[256];

		len = peer_udp(frame, 21, 5150);
		memcpy(raw + 1, frame, len);
		CHECK(sl_net_parse(raw + 1, len, &our_if, 0, &info) == SL_NET_UDP &&
		      info.payload_len == 21, "unaligned frame parses");
	}

	{
		static uint8_t big[SL_NET_HDRS_LEN + 65507];

		len = sl_net_udp_build(big, &peer_if, our_mac, our_if.ip, 1, 5150, 65507, 0);
		CHECK(len == SL_NET_HDRS_LEN + 65507u && ip_cksum_ok(big) && udp_cksum_ok(big),
		      "build accepts payload 65507, checksums verify");
		CHECK(sl_net_parse(big, len, &our_if, 0, &info) == SL_NET_UDP &&
		      info.payload_len == 65507, "65507-byte payload parses");
		CHECK(sl_net_udp_build(big, &peer_if, our_mac, our_if.ip, 1, 2, 65508, 0) == 0,
		      "build refuses payload 65508 (returns 0)");
	}
}

static void
test_offload_flags(void)
{
	uint8_t frame[256];
	struct sl_net_info info;
	uint32_t len;
	uint16_t i;

	for (i = 0; i < 30; i++)
		frame[SL_NET_HDRS_LEN + i] = (uint8_t)i;
	len = sl_net_udp_build(frame, &peer_if, our_mac, our_if.ip, 40000, 5150, 30,
			       SL_NET_TX_IP_CKSUM | SL_NET_TX_UDP_CKSUM);
	CHECK(sl_bytes_get_be16(frame + OFF_IP + 10) == 0, "TX_IP_CKSUM: IPv4 checksum left 0");
	CHECK(sl_bytes_get_be16(frame + OFF_UDP + 6) == fold(pseudo_sum(frame)),
	      "TX_UDP_CKSUM: UDP checksum = pseudo-header sum (0x%04x)",
	      sl_bytes_get_be16(frame + OFF_UDP + 6));
	CHECK(sl_net_parse(frame, len, &our_if, 0, &info) == SL_NET_DROP_IP_CKSUM,
	      "offload frame without hints: drop_ip_cksum");
	CHECK(sl_net_parse(frame, len, &our_if, SL_NET_RX_IP_CKSUM_GOOD, &info) ==
	      SL_NET_DROP_UDP_CKSUM, "offload frame with IP hint only: drop_udp_cksum");
	CHECK(sl_net_parse(frame, len, &our_if, SL_NET_RX_IP_CKSUM_GOOD |
			   SL_NET_RX_L4_CKSUM_GOOD, &info) == SL_NET_UDP,
	      "offload frame with both hints: udp");

	len = sl_net_udp_build(frame, &peer_if, our_mac, our_if.ip, 40000, 5150, 30,
			       SL_NET_TX_UDP_CKSUM);
	CHECK(ip_cksum_ok(frame), "TX_UDP_CKSUM alone: IPv4 checksum still computed");
	len = sl_net_udp_build(frame, &peer_if, our_mac, our_if.ip, 40000, 5150, 30,
			       SL_NET_TX_IP_CKSUM);
	CHECK(udp_cksum_ok(frame), "TX_IP_CKSUM alone: UDP checksum still computed");
	CHECK(sl_net_parse(frame, len, &our_if, SL_NET_RX_IP_CKSUM_GOOD, &info) == SL_NET_UDP,
	      "TX_IP_CKSUM frame parses with RX_IP_CKSUM_GOOD");
}

static void
test_drops(void)
{
	uint8_t frame[256], f[256];
	struct sl_net_info info;
	struct sl_net_if nif;
	uint32_t len;

	len = peer_udp(frame, 40, 5150);
	CHECK(parse(frame, len) == SL_NET_UDP, "base frame is udp");

	CHECK(parse(frame, 0) == SL_NET_DROP_SHORT, "len 0: drop_short");
	CHECK(parse(frame, 13) == SL_NET_DROP_SHORT, "len 13: drop_short");
	CHECK(parse(frame, 20) == SL_NET_DROP_SHORT, "IPv4 header cut: drop_short");
	CHECK(parse(frame, len - 1) == SL_NET_DROP_SHORT, "last byte cut: drop_short");

	memcpy(f, frame, len);
	sl_bytes_put_be16(f + 12, 0x86dd);
	CHECK(parse(f, len) == SL_NET_DROP_ETHERTYPE, "IPv6 ethertype: drop_ethertype");
	sl_bytes_put_be16(f + 12, 0x8100);
	CHECK(parse(f, len) == SL_NET_DROP_ETHERTYPE, "VLAN ethertype: drop_ethertype");
	sl_bytes_put_be16(f + 12, 0x0040);
	CHECK(parse(f, len) == SL_NET_DROP_ETHERTYPE, "802.3 length field: drop_ethertype");

	memcpy(f, frame, len);
	f[5] ^= 0x10;
	CHECK(parse(f, len) == SL_NET_DROP_NOT_US, "other dst MAC: drop_not_us");
	memcpy(f, bcast_mac, 6);
	CHECK(parse(f, len) == SL_NET_DROP_NOT_US, "broadcast MAC for IPv4: drop_not_us");
	memcpy(f, frame, len);
	f[OFF_IP + 19] ^= 1;
	fix_ip_cksum(f);
	fix_udp_cksum(f);
	CHECK(parse(f, len) == SL_NET_DROP_NOT_US, "other dst IP: drop_not_us");

	memcpy(f, frame, len);
	f[OFF_IP] = 0x65;
	fix_ip_cksum(f);
	CHECK(parse(f, len) == SL_NET_DROP_IP_HDR, "IP version 6 in IPv4 frame: drop_ip_hdr");
	f[OFF_IP] = 0x44;
	fix_ip_cksum(f);
	CHECK(parse(f, len) == SL_NET_DROP_IP_HDR, "IHL 4: drop_ip_hdr");
	memcpy(f, frame, len);
	sl_bytes_put_be16(f + OFF_IP + 2, 19);
	fix_ip_cksum(f);
	CHECK(parse(f, len) == SL_NET_DROP_IP_HDR, "total length < IHL*4: drop_ip_hdr");
	memcpy(f, frame, len);
	sl_bytes_put_be16(f + OFF_IP + 2, (uint16_t)(len - 14 + 1));
	fix_ip_cksum(f);
	CHECK(parse(f, len) == SL_NET_DROP_SHORT, "total length > frame: drop_short");
	memcpy(f, frame, len);
	f[OFF_IP] = 0x4f;	/* IHL 15 = 60 bytes: past the end of a 34-byte frame */
	CHECK(parse(f, 40) == SL_NET_DROP_SHORT, "IHL beyond frame: drop_short");

	memcpy(f, frame, len);
	f[OFF_IP + 10] ^= 0x01;
	CHECK(parse(f, len) == SL_NET_DROP_IP_CKSUM, "bad IP checksum: drop_ip_cksum");
	CHECK(sl_net_parse(f, len, &our_if, SL_NET_RX_IP_CKSUM_GOOD, &info) == SL_NET_UDP,
	      "bad IP checksum with RX_IP_CKSUM_GOOD: udp");

	memcpy(f, frame, len);
	sl_bytes_put_be16(f + OFF_IP + 6, 0x2000);
	fix_ip_cksum(f);
	CHECK(parse(f, len) == SL_NET_DROP_FRAGMENT, "MF set: drop_fragment");
	sl_bytes_put_be16(f + OFF_IP + 6, 0x4001);
	fix_ip_cksum(f);
	CHECK(parse(f, len) == SL_NET_DROP_FRAGMENT, "offset 1 with DF: drop_fragment");
	sl_bytes_put_be16(f + OFF_IP + 6, 0x0000);
	fix_ip_cksum(f);
	CHECK(parse(f, len) == SL_NET_UDP, "no DF, offset 0: udp");

	memcpy(f, frame, len);
	f[OFF_IP + 9] = 6;
	fix_ip_cksum(f);
	CHECK(parse(f, len) == SL_NET_DROP_PROTO, "TCP: drop_proto");
	f[OFF_IP + 9] = 47;
	fix_ip_cksum(f);
	CHECK(parse(f, len) == SL_NET_DROP_PROTO, "GRE: drop_proto");

	len = peer_udp(f, 40, 5149);
	CHECK(parse(f, len) == SL_NET_DROP_UDP_PORT, "port below range: drop_udp_port");
	len = peer_udp(f, 40, 5154);
	CHECK(parse(f, len) == SL_NET_DROP_UDP_PORT, "port above range: drop_udp_port");
	len = peer_udp(f, 40, 5153);
	CHECK(parse(f, len) == SL_NET_UDP, "port at top of range: udp");

	len = peer_udp(frame, 40, 5150);
	memcpy(f, frame, len);
	sl_bytes_put_be16(f + OFF_UDP + 4, 47);
	fix_udp_cksum(f);
	CHECK(parse(f, len) == SL_NET_DROP_UDP_LEN, "UDP length < IP payload: drop_udp_len");
	sl_bytes_put_be16(f + OFF_UDP + 4, 49);
	CHECK(parse(f, len) == SL_NET_DROP_UDP_LEN, "UDP length > IP payload: drop_udp_len");
	sl_bytes_put_be16(f + OFF_UDP + 4, 7);
	CHECK(parse(f, len) == SL_NET_DROP_UDP_LEN, "UDP length 7: drop_udp_len");
	memcpy(f, frame, len);
	sl_bytes_put_be16(f + OFF_IP + 2, 20 + 4);	/* IP payload shorter than a UDP header */
	fix_ip_cksum(f);
	CHECK(parse(f, len) == SL_NET_DROP_UDP_LEN, "IP payload of 4 bytes: drop_udp_len");

	memcpy(f, frame, len);
	f[SL_NET_HDRS_LEN + 5] ^= 0x40;
	CHECK(parse(f, len) == SL_NET_DROP_UDP_CKSUM, "corrupted payload: drop_udp_cksum");
	CHECK(sl_net_parse(f, len, &our_if, SL_NET_RX_L4_CKSUM_GOOD, &info) == SL_NET_UDP,
	      "corrupted payload with RX_L4_CKSUM_GOOD: udp");
	sl_bytes_put_be16(f + OFF_UDP + 6, 0);
	CHECK(parse(f, len) == SL_NET_UDP, "UDP checksum 0 (none): udp");
	sl_bytes_put_be16(f + OFF_UDP + 6, 0xffff);
	CHECK(parse(f, len) == SL_NET_DROP_UDP_CKSUM, "UDP checksum 0xffff wrong: drop");

	/* Port range of one port. */
	nif = our_if;
	nif.udp_port_lo = nif.udp_port_hi = 5150;
	CHECK(sl_net_parse(frame, len, &nif, 0, &info) == SL_NET_UDP, "single-port range: udp");
	nif.udp_port_lo = nif.udp_port_hi = 5151;
	CHECK(sl_net_parse(frame, len, &nif, 0, &info) == SL_NET_DROP_UDP_PORT,
	      "single-port range, other port: drop_udp_port");
}

/* IPv4 header with 8 bytes of options (NOP NOP NOP NOP, EOL...), UDP to us. */
static uint32_t
udp_with_options(uint8_t *frame, uint16_t payload_len)
{
	uint8_t tmp[BUF_LEN];
	uint32_t len;
	uint16_t i;

	for (i = 0; i < payload_len; i++)
		tmp[SL_NET_HDRS_LEN + i] = (uint8_t)(0x30 + i);
	len = sl_net_udp_build(tmp, &peer_if, our_mac, our_if.ip, 40001, 5151, payload_len, 0);
	memcpy(frame, tmp, 34);
	memset(frame + 34, 0, 8);
	memset(frame + 34, 1, 4);
	memcpy(frame + 42, tmp + 34, len - 34);
	frame[OFF_IP] = 0x47;
	sl_bytes_put_be16(frame + OFF_IP + 2, (uint16_t)(sl_bytes_get_be16(frame + OFF_IP + 2) + 8));
	fix_ip_cksum(frame);
	fix_udp_cksum(frame);
	return len + 8;
}

static void
test_udp_reply(void)
{
	uint8_t frame[BUF_LEN];
	struct sl_net_info info, rinfo;
	uint32_t len, rlen;
	uint16_t i;
	int intact;

	len = peer_udp(frame, 64, 5152);
	CHECK(sl_net_parse(frame, len, &our_if, 0, &info) == SL_NET_UDP, "request parses");
	for (i = 0; i < 200; i++)
		frame[info.payload_off + i] = (uint8_t)(0xa0 ^ i);
	memset(frame + info.payload_off + 200, 0x77, 100);	/* stale bytes after */
	rlen = sl_net_udp_reply(frame, &info, 200, 0);
	CHECK(rlen == SL_NET_HDRS_LEN + 200, "reply length %u", rlen);
	CHECK(memcmp(frame, peer_mac, 6) == 0 && memcmp(frame + 6, our_mac, 6) == 0,
	      "reply MACs swapped");
	CHECK(ip_cksum_ok(frame) && udp_cksum_ok(frame), "reply checksums verify (full)");
	CHECK(frame[OFF_IP + 8] == 64 && sl_bytes_get_be16(frame + OFF_IP + 6) == 0x4000 &&
	      sl_bytes_get_be16(frame + OFF_IP + 2) == 228, "reply TTL 64, DF, total length 228");
	CHECK(sl_net_parse(frame, rlen, &peer_if, 0, &rinfo) == SL_NET_UDP,
	      "reply parses at the peer as udp");
	CHECK(rinfo.src_ip == our_if.ip && rinfo.dst_ip == peer_if.ip &&
	      memcmp(rinfo.src_mac, our_mac, 6) == 0, "reply IPs swapped");
	CHECK(rinfo.src_port == 5152 && rinfo.dst_port == 40000, "reply ports swapped");
	intact = rinfo.payload_len == 200;
	for (i = 0; intact && i < 200; i++)
		intact = frame[rinfo.payload_off + i] == (uint8_t)(0xa0 ^ i);
	CHECK(intact, "reply payload intact");

	/* Shorter answer, with both TX offloads. */
	len = peer_udp(frame, 64, 5150);
	sl_net_parse(frame, len, &our_if, 0, &info);
	rlen = sl_net_udp_reply(frame, &info, 3, SL_NET_TX_IP_CKSUM | SL_NET_TX_UDP_CKSUM);
	CHECK(rlen == SL_NET_HDRS_LEN + 3 && sl_bytes_get_be16(frame + OFF_IP + 10) == 0 &&
	      sl_bytes_get_be16(frame + OFF_UDP + 6) == fold(pseudo_sum(frame)),
	      "offloaded reply: IP cksum 0, UDP pseudo-header sum");
	CHECK(sl_net_parse(frame, rlen, &peer_if, SL_NET_RX_IP_CKSUM_GOOD |
			   SL_NET_RX_L4_CKSUM_GOOD, &rinfo) == SL_NET_UDP &&
	      rinfo.payload_len == 3, "offloaded reply parses with hints");

	/* Request with IP options: reply has a 20-byte header, payload moved. */
	len = udp_with_options(frame, 50);
	CHECK(sl_net_parse(frame, len, &our_if, 0, &info) == SL_NET_UDP &&
	      info.l4_off == 42 && info.payload_off == 50 && info.payload_len == 50,
	      "request with IP options parses (l4_off %u)", info.l4_off);
	for (i = 0; i < 60; i++)
		frame[info.payload_off + i] = (uint8_t)(0x55 + i);
	rlen = sl_net_udp_reply(frame, &info, 60, 0);
	CHECK(rlen == SL_NET_HDRS_LEN + 60 && frame[OFF_IP] == 0x45,
	      "options reply: IHL 5, length %u", rlen);
	CHECK(ip_cksum_ok(frame) && udp_cksum_ok(frame), "options reply: checksums verify");
	CHECK(sl_net_parse(frame, rlen, &peer_if, 0, &rinfo) == SL_NET_UDP &&
	      rinfo.payload_off == SL_NET_HDRS_LEN && rinfo.dst_port == 40001 &&
	      rinfo.src_port == 5151, "options reply parses at the peer");
	intact = rinfo.payload_len == 60;
	for (i = 0; intact && i < 60; i++)
		intact = frame[SL_NET_HDRS_LEN + i] == (uint8_t)(0x55 + i);
	CHECK(intact, "options reply: payload moved intact");
}

/* Parse every truncation of frame[0..len) from an exactly-sized heap copy. */
static int
truncations_never(const uint8_t *frame, uint32_t len, enum sl_net_kind good)
{
	struct sl_net_info info;
	uint32_t n;
	int ok = 1;

	for (n = 0; n < len; n++) {
		uint8_t *copy = malloc(n ? n : 1);

		if (copy == NULL)
			abort();
		memcpy(copy, frame, n);
		if (sl_net_parse(copy, n, &our_if, 0, &info) == good ||
		    info.kind < SL_NET_DROP_SHORT) {
			printf("     truncation to %u gave %s\n", n,
			       sl_net_kind_name(info.kind));
			ok = 0;
		}
		free(copy);
	}
	return ok;
}

static uint32_t
peer_icmp_echo(uint8_t *frame, uint16_t data_len)
{
	uint32_t len;
	uint16_t i;
	uint8_t *icmp;

	icmp = frame + OFF_UDP;
	for (i = 0; i < data_len; i++)
		icmp[8 + i] = (uint8_t)(i ^ 0x5a);
	/* Same layout as UDP: 8-byte ICMP header in place of the UDP header. */
	len = sl_net_udp_build(frame, &peer_if, our_mac, our_if.ip, 1, 2, data_len, 0);
	frame[OFF_IP + 9] = 1;
	sl_bytes_put_be16(frame + OFF_IP + 4, 0x1234);
	fix_ip_cksum(frame);
	icmp[0] = 8;
	icmp[1] = 0;
	sl_bytes_put_be16(icmp + 2, 0);
	sl_bytes_put_be16(icmp + 4, 0xbeef);
	sl_bytes_put_be16(icmp + 6, 7);
	sl_bytes_put_be16(icmp + 2, (uint16_t)~fold(sum_bytes(icmp, 8u + data_len, 0)));
	return len;
}

static void
test_truncation(void)
{
	uint8_t frame[BUF_LEN];
	uint32_t len;

	len = peer_udp(frame, 18, 5150);
	CHECK(len == 60 && parse(frame, len) == SL_NET_UDP, "60-byte UDP frame is udp");
	CHECK(truncations_never(frame, len, SL_NET_UDP),
	      "every truncation of a 60-byte UDP frame is a drop");
	len = peer_udp(frame, 301, 5150);
	CHECK(truncations_never(frame, len, SL_NET_UDP),
	      "every truncation of a 343-byte UDP frame is a drop");
	len = udp_with_options(frame, 20);
	CHECK(parse(frame, len) == SL_NET_UDP && truncations_never(frame, len, SL_NET_UDP),
	      "every truncation of a UDP frame with IP options is a drop");
	len = sl_net_arp_request(frame, &peer_if, our_if.ip);
	CHECK(parse(frame, 42) == SL_NET_ARP_REQUEST &&
	      truncations_never(frame, 42, SL_NET_ARP_REQUEST),
	      "every truncation of an ARP request is a drop");
	len = peer_icmp_echo(frame, 33);
	CHECK(parse(frame, len) == SL_NET_ICMP_ECHO &&
	      truncations_never(frame, len, SL_NET_ICMP_ECHO),
	      "every truncation of an ICMP echo is a drop");
}

static void
test_arp(void)
{
	uint8_t frame[BUF_LEN], f[BUF_LEN];
	struct sl_net_info info;
	uint32_t len, rlen, i;
	int zero;

	memset(frame, 0xcc, sizeof(frame));
	len = sl_net_arp_request(frame, &peer_if, our_if.ip);
	CHECK(len == 60, "ARP request length 60");
	zero = 1;
	for (i = 42; i < 60; i++)
		zero &= frame[i] == 0;
	CHECK(zero, "ARP request padding zeroed");
	CHECK(memcmp(frame, bcast_mac, 6) == 0 && memcmp(frame + 6, peer_mac, 6) == 0 &&
	      sl_bytes_get_be16(frame + 12) == 0x0806, "ARP request: broadcast from sender");
	CHECK(sl_bytes_get_be16(frame + 14) == 1 && sl_bytes_get_be16(frame + 16) == 0x0800 &&
	      frame[18] == 6 && frame[19] == 4 && sl_bytes_get_be16(frame + 20) == 1,
	      "ARP request: htype/ptype/hlen/plen/op");
	CHECK(memcmp(frame + 22, peer_mac, 6) == 0 &&
	      memcmp(frame + 28, &peer_if.ip, 4) == 0 &&
	      memcmp(frame + 32, "\0\0\0\0\0\0", 6) == 0 &&
	      memcmp(frame + 38, &our_if.ip, 4) == 0, "ARP request: addresses");

	CHECK(sl_net_parse(frame, len, &our_if, 0, &info) == SL_NET_ARP_REQUEST,
	      "request for our IP: arp_request");
	CHECK(memcmp(info.src_mac, peer_mac, 6) == 0 && info.src_ip == peer_if.ip &&
	      info.l3_off == 14, "arp_request: sender filled");
	memcpy(f, frame, len);
	memcpy(f, our_mac, 6);
	CHECK(parse(f, len) == SL_NET_ARP_REQUEST, "unicast request to our MAC: arp_request");

	rlen = sl_net_arp_reply(frame, &our_if);
	CHECK(rlen == 42, "ARP reply length 42 (%u)", rlen);
	CHECK(memcmp(frame, peer_mac, 6) == 0 && memcmp(frame + 6, our_mac, 6) == 0 &&
	      sl_bytes_get_be16(frame + 12) == 0x0806 && sl_bytes_get_be16(frame + 20) == 2,
	      "ARP reply: Ethernet to requester, op 2");
	CHECK(memcmp(frame + 22, our_mac, 6) == 0 && memcmp(frame + 28, &our_if.ip, 4) == 0 &&
	      memcmp(frame + 32, peer_mac, 6) == 0 && memcmp(frame + 38, &peer_if.ip, 4) == 0,
	      "ARP reply: sender = us, target = old sender");
	CHECK(sl_net_parse(frame, rlen, &peer_if, 0, &info) == SL_NET_ARP_REPLY,
	      "peer parses our answer as arp_reply");
	CHECK(memcmp(info.src_mac, our_mac, 6) == 0 && info.src_ip == our_if.ip,
	      "arp_reply: src_mac/src_ip from sender fields");
	CHECK(parse(frame, rlen) == SL_NET_DROP_NOT_US, "reply for someone else: drop_not_us");

	/* Variants of a request to us. */
	len = sl_net_arp_request(frame, &peer_if, our_if.ip);
	memcpy(f, frame, len);
	memcpy(f + 38, &peer_if.ip, 4);
	CHECK(parse(f, len) == SL_NET_DROP_NOT_US, "request for another IP: drop_not_us");
	memcpy(f, frame, len);
	memcpy(f + 28, &our_if.ip, 4);
	CHECK(parse(f, len) == SL_NET_DROP_NOT_US, "gratuitous ARP for our IP: drop_not_us");
	memcpy(f, frame, len);
	memset(f + 28, 0, 4);
	CHECK(parse(f, len) == SL_NET_ARP_REQUEST, "ARP probe (sender IP 0): arp_request");
	memcpy(f, frame, len);
	sl_bytes_put_be16(f + 14, 6);
	CHECK(parse(f, len) == SL_NET_DROP_ARP, "htype 6: drop_arp");
	memcpy(f, frame, len);
	sl_bytes_put_be16(f + 16, 0x86dd);
	CHECK(parse(f, len) == SL_NET_DROP_ARP, "ptype IPv6: drop_arp");
	memcpy(f, frame, len);
	f[18] = 8;
	CHECK(parse(f, len) == SL_NET_DROP_ARP, "hlen 8: drop_arp");
	memcpy(f, frame, len);
	f[19] = 16;
	CHECK(parse(f, len) == SL_NET_DROP_ARP, "plen 16: drop_arp");
	memcpy(f, frame, len);
	sl_bytes_put_be16(f + 20, 3);
	CHECK(parse(f, len) == SL_NET_DROP_ARP, "op 3 (RARP): drop_arp");
	memcpy(f, frame, len);
	memset(f + 22, 0xff, 6);
	CHECK(parse(f, len) == SL_NET_DROP_ARP, "broadcast sender MAC: drop_arp");
	memcpy(f, frame, len);
	f[5] = 0x99;
	CHECK(parse(f, len) == SL_NET_DROP_NOT_US, "ARP to another unicast MAC: drop_not_us");
	CHECK(parse(frame, 41) == SL_NET_DROP_SHORT, "ARP cut at 41 bytes: drop_short");

	/* Gratuitous reply (sender = target = peer), broadcast. */
	len = sl_net_arp_request(frame, &peer_if, peer_if.ip);
	sl_bytes_put_be16(frame + 20, 2);
	CHECK(parse(frame, len) == SL_NET_DROP_NOT_US, "gratuitous reply: drop_not_us");
}

static void
test_icmp(void)
{
	static const uint16_t sizes[] = {0, 1, 56, 57, 1000};
	uint8_t frame[BUF_LEN], f[BUF_LEN];
	struct sl_net_info info;
	uint32_t len, rlen;
	size_t k;
	int intact, i;

	for (k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		uint16_t dl = sizes[k];
		uint8_t *icmp = frame + OFF_UDP;

		len = peer_icmp_echo(frame, dl);
		memset(frame + len, 0, 8);	/* padding beyond total length */
		CHECK(sl_net_parse(frame, len + 8, &our_if, 0, &info) == SL_NET_ICMP_ECHO,
		      "echo request data %u: icmp_echo", dl);
		rlen = sl_net_icmp_reply(frame, len + 8, &info, 0);
		CHECK(rlen == len + 8, "echo reply length unchanged");
		CHECK(icmp[0] == 0 && icmp[1] == 0 && sl_bytes_get_be16(icmp + 4) == 0xbeef &&
		      sl_bytes_get_be16(icmp + 6) == 7, "echo reply: type 0, id/seq kept");
		CHECK(fold(sum_bytes(icmp, 8u + dl, 0)) == 0xffff,
		      "echo reply data %u: ICMP checksum valid (full)", dl);
		CHECK(ip_cksum_ok(frame) && frame[OFF_IP + 8] == 64,
		      "echo reply: IPv4 checksum valid, TTL 64");
		CHECK(memcmp(frame, peer_mac, 6) == 0 && memcmp(frame + 6, our_mac, 6) == 0 &&
		      memcmp(frame + OFF_IP + 12, &our_if.ip, 4) == 0 &&
		      memcmp(frame + OFF_IP + 16, &peer_if.ip, 4) == 0,
		      "echo reply: MACs and IPs swapped");
		intact = 1;
		for (i = 0; i < dl; i++)
			intact &= icmp[8 + i] == (uint8_t)(i ^ 0x5a);
		CHECK(intact, "echo reply: data intact");
	}

	len = peer_icmp_echo(frame, 20);
	sl_net_parse(frame, len, &our_if, 0, &info);
	sl_net_icmp_reply(frame, len, &info, SL_NET_TX_IP_CKSUM);
	CHECK(sl_bytes_get_be16(frame + OFF_IP + 10) == 0 &&
	      fold(sum_bytes(frame + OFF_UDP, 28, 0)) == 0xffff,
	      "echo reply with TX_IP_CKSUM: IP cksum 0, ICMP valid");

	len = peer_icmp_echo(frame, 20);
	memcpy(f, frame, len);
	f[OFF_UDP] = 13;	/* timestamp request */
	CHECK(parse(f, len) == SL_NET_DROP_PROTO, "ICMP type 13: drop_proto");
	memcpy(f, frame, len);
	f[OFF_UDP + 1] = 1;
	CHECK(parse(f, len) == SL_NET_DROP_PROTO, "ICMP echo code 1: drop_proto");
	memcpy(f, frame, len);
	f[OFF_UDP + 12] ^= 0x80;
	CHECK(parse(f, len) == SL_NET_DROP_PROTO, "ICMP bad checksum: drop_proto");
	memcpy(f, frame, len);
	sl_bytes_put_be16(f + OFF_IP + 2, 20 + 7);
	fix_ip_cksum(f);
	CHECK(parse(f, len) == SL_NET_DROP_SHORT, "ICMP message of 7 bytes: drop_short");
}

static void
test_arp_table(void)
{
	static struct sl_net_arp t;
	uint8_t mac[6], m2[6];
	uint32_t ip, i, found, used;
	int dup;

	memset(&t, 0, sizeof(t));
	CHECK(sl_net_arp_lookup(&t, peer_if.ip, mac) == -ENOENT, "empty table: -ENOENT");
	sl_net_arp_learn(&t, peer_if.ip, peer_mac, 100);
	memset(mac, 0, 6);
	CHECK(sl_net_arp_lookup(&t, peer_if.ip, mac) == 0 && memcmp(mac, peer_mac, 6) == 0,
	      "learned entry found");
	CHECK(sl_net_arp_lookup(&t, our_if.ip, mac) == -ENOENT, "other IP: -ENOENT");
	memcpy(m2, peer_mac, 6);
	m2[5] = 0x42;
	sl_net_arp_learn(&t, peer_if.ip, m2, 200);
	CHECK(sl_net_arp_lookup(&t, peer_if.ip, mac) == 0 && memcmp(mac, m2, 6) == 0,
	      "overwrite: new MAC returned");
	used = 0;
	for (i = 0; i < SL_NET_ARP_SLOTS; i++) {
		used += t.e[i].ip != 0;
		if (t.e[i].ip == peer_if.ip)
			CHECK(t.e[i].seq % 2 == 0 && t.e[i].seq >= 4 && t.e[i].updated_tsc == 200,
			      "entry seq even (%u) and tsc updated", t.e[i].seq);
	}
	CHECK(used == 1, "overwrite did not add a second entry");
	sl_net_arp_learn(&t, 0, peer_mac, 300);
	sl_net_arp_learn(&t, htonl(0x0a000063), bcast_mac, 300);
	CHECK(sl_net_arp_lookup(&t, 0, mac) == -ENOENT &&
	      sl_net_arp_lookup(&t, htonl(0x0a000063), mac) == -ENOENT,
	      "IP 0 and broadcast MAC are not learned");

	/* Flood: 4096 distinct IPs into 256 slots, refreshing one IP all along. */
	memset(&t, 0, sizeof(t));
	sl_net_arp_learn(&t, peer_if.ip, peer_mac, 1);
	for (i = 0; i < 4096; i++) {
		ip = htonl(0x0a010000 + i);
		mac[0] = 0x02;
		mac[1] = 0;
		mac[2] = (uint8_t)(i >> 8);
		mac[3] = (uint8_t)i;
		mac[4] = 0;
		mac[5] = 1;
		sl_net_arp_learn(&t, ip, mac, 10 + 2ull * i);
		sl_net_arp_learn(&t, peer_if.ip, peer_mac, 11 + 2ull * i);
	}
	CHECK(sl_net_arp_lookup(&t, peer_if.ip, mac) == 0 && memcmp(mac, peer_mac, 6) == 0,
	      "entry refreshed during flood is never evicted");
	found = 0;
	for (i = 0; i < 4096; i++) {
		ip = htonl(0x0a010000 + i);
		if (sl_net_arp_lookup(&t, ip, mac) == 0) {
			found++;
			if (mac[2] != (uint8_t)(i >> 8) || mac[3] != (uint8_t)i)
				found += 100000;	/* wrong MAC */
		}
	}
	used = 0;
	dup = 0;
	for (i = 0; i < SL_NET_ARP_SLOTS; i++) {
		uint32_t j;

		used += t.e[i].ip != 0;
		for (j = i + 1; j < SL_NET_ARP_SLOTS; j++)
			dup |= t.e[i].ip != 0 && t.e[i].ip == t.e[j].ip;
	}
	CHECK(found + 1 == used && used <= SL_NET_ARP_SLOTS,
	      "full table: %u flood IPs found with correct MACs, %u slots used", found, used);
	CHECK(used >= SL_NET_ARP_SLOTS - 8, "full table nearly all slots used (%u)", used);
	CHECK(!dup, "no IP stored twice");
	/* An entry can only be evicted when 8 newer ones exist in its window. */
	for (i = 4096 - 7; i < 4096; i++)
		if (sl_net_arp_lookup(&t, htonl(0x0a010000 + i), mac) != 0)
			break;
	CHECK(i == 4096, "the 7 most recently learned IPs are all present");
	CHECK(sl_net_arp_lookup(&t, htonl(0x0a010000), mac) == -ENOENT,
	      "the first (oldest) flood IP was evicted");
}

struct rw_ctx {
	struct sl_net_arp *t;
	uint32_t ip;
	int done;
	int torn;
	uint32_t reads;
};

static void *
arp_reader(void *arg)
{
	struct rw_ctx *c = arg;
	uint8_t mac[6];
	int i;

	while (!__atomic_load_n(&c->done, __ATOMIC_ACQUIRE)) {
		if (sl_net_arp_lookup(c->t, c->ip, mac) != 0) {
			c->torn++;
			continue;
		}
		for (i = 1; i < 6; i++)
			if (mac[i] != mac[0])
				c->torn++;
		c->reads++;
	}
	return NULL;
}

static void
test_arp_concurrent(void)
{
	static struct sl_net_arp t;
	struct rw_ctx c = {.t = &t, .ip = htonl(0xc0a80102)};
	uint8_t mac[6];
	pthread_t th;
	uint32_t i;

	memset(&t, 0, sizeof(t));
	memset(mac, 0x02, 6);
	sl_net_arp_learn(&t, c.ip, mac, 0);
	if (pthread_create(&th, NULL, arp_reader, &c) != 0) {
		CHECK(0, "pthread_create");
		return;
	}
	for (i = 0; i < 2000000; i++) {
		memset(mac, (uint8_t)((i % 100) * 2 + 2), 6);	/* unicast, all bytes equal */
		sl_net_arp_learn(&t, c.ip, mac, i);
	}
	__atomic_store_n(&c.done, 1, __ATOMIC_RELEASE);
	pthread_join(th, NULL);
	CHECK(c.torn == 0, "concurrent reader: no torn or missing entry in %u reads", c.reads);
}

static void
test_parse_ip(void)
{
	static const char *const bad[] = {
		"", "1", "1.2.3", "1.2.3.4.5", "256.1.1.1", "1.2.3.256", "01.2.3.4",
		"1.2.3.00", "1.2.3.4 ", " 1.2.3.4", "1..3.4", "a.b.c.d", "1.2.3.-4",
		"1.2.3.4.", ".1.2.3.4", "1234.1.1.1", "1.2.3.0004", "1,2,3,4", "0x1.2.3.4",
		"1.2.3.+4", "999.999.999.999",
	};
	uint32_t ip = 0x12345678;
	size_t i;

	CHECK(sl_net_parse_ip("10.0.0.1", &ip) == 0 && ip == htonl(0x0a000001),
	      "10.0.0.1 parses");
	CHECK(sl_net_parse_ip("192.168.200.254", &ip) == 0 && ip == htonl(0xc0a8c8fe),
	      "192.168.200.254 parses");
	CHECK(sl_net_parse_ip("0.0.0.0", &ip) == 0 && ip == 0, "0.0.0.0 parses");
	CHECK(sl_net_parse_ip("255.255.255.255", &ip) == 0 && ip == 0xffffffffu,
	      "255.255.255.255 parses");
	CHECK(sl_net_parse_ip("1.20.100.0", &ip) == 0 && ip == htonl(0x01146400),
	      "1.20.100.0 parses");
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ip = 0x12345678;
		CHECK(sl_net_parse_ip(bad[i], &ip) == -EINVAL && ip == 0x12345678,
		      "\"%s\" rejected, output untouched", bad[i]);
	}
	CHECK(sl_net_parse_ip(NULL, &ip) == -EINVAL, "NULL rejected");
}

static void
test_parse_cidr(void)
{
	static const char *const bad[] = {
		"10.0.0.1/", "10.0.0.1/0", "10.0.0.1/33", "10.0.0.1/024", "10.0.0.1/-1",
		"10.0.0.1/+8", "10.0.0.1/8x", "10.0.0.1/ 8", "10.0.0/8", "/8", "10.0.0.1/8/8",
		"10.0.0.1//8", "10.0.0.1/4294967304", "255.255.255.255.255/32",
	};
	uint32_t ip = 0, mask = 1;
	size_t i;

	CHECK(sl_net_parse_cidr("10.1.2.3", &ip, &mask) == 0 && ip == htonl(0x0a010203) &&
	      mask == 0, "no length: mask 0");
	CHECK(sl_net_parse_cidr("10.1.2.3/24", &ip, &mask) == 0 && ip == htonl(0x0a010203) &&
	      mask == htonl(0xffffff00), "/24");
	CHECK(sl_net_parse_cidr("10.1.2.3/1", &ip, &mask) == 0 && mask == htonl(0x80000000),
	      "/1");
	CHECK(sl_net_parse_cidr("10.1.2.3/32", &ip, &mask) == 0 && mask == 0xffffffffu, "/32");
	CHECK(sl_net_parse_cidr("10.1.2.3/30", &ip, &mask) == 0 && mask == htonl(0xfffffffc),
	      "/30");
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ip = 7;
		mask = 7;
		CHECK(sl_net_parse_cidr(bad[i], &ip, &mask) == -EINVAL && ip == 7 && mask == 7,
		      "\"%s\" rejected, output untouched", bad[i]);
	}
}

/* A frame from peer (UDP, or ICMP echo when icmp) with its source IP, MAC and port
 * forged; checksums fixed, so only the source decides. */
static uint32_t
forged(uint8_t *frame, int icmp, uint32_t src_ip_host, const uint8_t *src_mac,
       uint16_t sport)
{
	uint32_t len = icmp ? peer_icmp_echo(frame, 8) : peer_udp(frame, 16, 5150);

	sl_bytes_put_be32(frame + OFF_IP + 12, src_ip_host);
	if (src_mac != NULL)
		memcpy(frame + 6, src_mac, 6);
	fix_ip_cksum(frame);
	if (!icmp) {
		sl_bytes_put_be16(frame + OFF_UDP, sport);
		fix_udp_cksum(frame);
	}
	return len;
}

/*
 * No answer ever goes to a source that is broadcast, multicast, loopback, zero, our own
 * address or UDP port 0: such a UDP datagram or ICMP echo is dropped (drop_bad_source),
 * never answered (an answer to a forged source makes the node an amplifier).
 */
static void
test_bad_source(void)
{
	static const struct {
		uint32_t ip;
		const char *what;
	} bad[] = {
		{0xffffffffu, "255.255.255.255 (limited broadcast)"},
		{0x0a0000ffu, "10.0.0.255 (our /24's directed broadcast)"},
		{0xe0000001u, "224.0.0.1 (multicast)"},
		{0xe00000fbu, "224.0.0.251 (multicast)"},
		{0xefffffffu, "239.255.255.255 (multicast)"},
		{0xf0000001u, "240.0.0.1 (reserved)"},
		{0x7f000001u, "127.0.0.1 (loopback)"},
		{0x7f0a0b0cu, "127.10.11.12 (loopback)"},
		{0x00000000u, "0.0.0.0"},
		{0x00010203u, "0.1.2.3 (this network)"},
		{0x0a000001u, "10.0.0.1 (our own address)"},
	};
	static const uint8_t mcast_mac[6] = {0x01, 0x00, 0x5e, 0x00, 0x00, 0x01};
	static const uint8_t zero_mac[6] = {0};
	uint8_t frame[BUF_LEN];
	struct sl_net_info info;
	struct sl_net_if nif = our_if;
	uint32_t len;
	size_t i;
	int icmp;

	nif.netmask = htonl(0xffffff00u);
	for (icmp = 0; icmp <= 1; icmp++) {
		enum sl_net_kind ok = icmp ? SL_NET_ICMP_ECHO : SL_NET_UDP;
		const char *proto = icmp ? "ICMP echo" : "UDP";

		len = forged(frame, icmp, 0x0a000002u, NULL, 40000);
		CHECK(sl_net_parse(frame, len, &nif, 0, &info) == ok,
		      "%s from 10.0.0.2: answered", proto);
		for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			len = forged(frame, icmp, bad[i].ip, NULL, 40000);
			CHECK(sl_net_parse(frame, len, &nif, 0, &info) == SL_NET_DROP_SRC,
			      "%s from %s: drop_bad_source", proto, bad[i].what);
		}
		len = forged(frame, icmp, 0x0a000002u, bcast_mac, 40000);
		CHECK(sl_net_parse(frame, len, &nif, 0, &info) == SL_NET_DROP_SRC,
		      "%s from the broadcast MAC: drop_bad_source", proto);
		len = forged(frame, icmp, 0x0a000002u, mcast_mac, 40000);
		CHECK(sl_net_parse(frame, len, &nif, 0, &info) == SL_NET_DROP_SRC,
		      "%s from a multicast MAC: drop_bad_source", proto);
		len = forged(frame, icmp, 0x0a000002u, zero_mac, 40000);
		CHECK(sl_net_parse(frame, len, &nif, 0, &info) == SL_NET_DROP_SRC,
		      "%s from the zero MAC: drop_bad_source", proto);
	}
	len = forged(frame, 0, 0x0a000002u, NULL, 0);
	CHECK(sl_net_parse(frame, len, &nif, 0, &info) == SL_NET_DROP_SRC,
	      "UDP from source port 0: drop_bad_source");
	len = forged(frame, 0, 0x0a000002u, NULL, 1);
	CHECK(sl_net_parse(frame, len, &nif, 0, &info) == SL_NET_UDP, "UDP from port 1: udp");
	/* without a netmask .255 may be a host of a wider subnet */
	len = forged(frame, 0, 0x0a0000ffu, NULL, 40000);
	CHECK(sl_net_parse(frame, len, &our_if, 0, &info) == SL_NET_UDP,
	      "10.0.0.255 with no netmask known: udp");
	nif.netmask = htonl(0xffff0000u);
	CHECK(sl_net_parse(frame, len, &nif, 0, &info) == SL_NET_UDP,
	      "10.0.0.255 in a /16: a host, udp");
	len = forged(frame, 0, 0x0a00ffffu, NULL, 40000);
	CHECK(sl_net_parse(frame, len, &nif, 0, &info) == SL_NET_DROP_SRC,
	      "10.0.255.255 in our /16: drop_bad_source");
	len = forged(frame, 0, 0x0b00ffffu, NULL, 40000);
	CHECK(sl_net_parse(frame, len, &nif, 0, &info) == SL_NET_UDP,
	      "11.0.255.255 (another subnet's host as far as we know): udp");
	nif.netmask = htonl(0xfffffffeu);
	len = forged(frame, 0, 0x0a000000u, NULL, 40000);
	CHECK(sl_net_parse(frame, len, &nif, 0, &info) == SL_NET_UDP,
	      "a /31 has no broadcast: its other address 10.0.0.0 is a peer");
	/* the pure check */
	CHECK(sl_net_src_bad(&our_if, peer_mac, htonl(0x0a000002u), 1, 5150) == 0 &&
		      sl_net_src_bad(&our_if, peer_mac, htonl(0x0a000002u), 1, 0) == 1 &&
		      sl_net_src_bad(&our_if, peer_mac, htonl(0x0a000002u), 0, 0) == 0 &&
		      sl_net_src_bad(&our_if, peer_mac, htonl(0xdfffffffu), 1, 9) == 0,
	      "sl_net_src_bad: port 0 only counts for UDP; 223.255.255.255 is unicast");
	CHECK(strcmp(sl_net_kind_name(SL_NET_DROP_SRC), "drop_bad_source") == 0,
	      "drop reason name drop_bad_source");
}

static void
test_kind_names(void)
{
	static const char *const want[SL_NET_KIND_MAX] = {
		"udp", "arp_request", "arp_reply", "icmp_echo", "drop_short", "drop_ethertype",
		"drop_not_us", "drop_ip_hdr", "drop_ip_cksum", "drop_fragment", "drop_proto",
		"drop_udp_port", "drop_udp_len", "drop_udp_cksum", "drop_arp", "drop_bad_source",
	};
	int i, ok = 1;

	for (i = 0; i < SL_NET_KIND_MAX; i++)
		if (sl_net_kind_name((enum sl_net_kind)i) == NULL ||
		    strcmp(sl_net_kind_name((enum sl_net_kind)i), want[i]) != 0)
			ok = 0;
	CHECK(ok, "kind names match");
	CHECK(strcmp(sl_net_kind_name(SL_NET_KIND_MAX), "unknown") == 0, "out of range: unknown");
}

int
main(void)
{
	memcpy(our_if.mac, our_mac, 6);
	our_if.ip = htonl(0x0a000001);
	our_if.udp_port_lo = 5150;
	our_if.udp_port_hi = 5153;
	memcpy(peer_if.mac, peer_mac, 6);
	peer_if.ip = htonl(0x0a000002);
	peer_if.udp_port_lo = 40000;
	peer_if.udp_port_hi = 40001;

	test_build_parse();
	test_offload_flags();
	test_drops();
	test_udp_reply();
	test_truncation();
	test_arp();
	test_icmp();
	test_arp_table();
	test_arp_concurrent();
	test_parse_ip();
	test_parse_cidr();
	test_kind_names();
	test_bad_source();

	printf("%d passed, %d failed\n", n_pass, n_fail);
	return n_fail == 0 ? 0 : 1;
}
