/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * sluice-pcap: write a pcap file of anonymous PUB (or MPUB) frames for packet generators.
 *
 *   sluice-pcap -o FILE --dst-mac MAC --dst-ip A.B.C.D --topic NAME [options]
 *
 * Each frame is a complete Ethernet/IPv4/UDP datagram (IPv4 and UDP checksums filled in)
 * carrying one sluice frame with session 0, which a sluiced started with --anon-publish
 * executes every time it arrives (docs/packet-generators.md). Frame i (from 1) has
 * seq = cookie = i, so the OK answers can be matched to the requests by cookie. With
 * --batch 1 (the default) a frame is a PUB of one message, else an MPUB of B messages.
 * Message k (from 1, over the whole file: frame i carries messages (i-1)*B+1 .. i*B) is
 * the decimal k, zero-padded on the left to --size bytes (only its last --size digits
 * when k has more).
 *
 * The file is classic libpcap format (magic 0xa1b2c3d4, microsecond timestamps, host
 * byte order, linktype 1 = Ethernet), written by hand; frame i is stamped
 * (i-1) * --ipg-us microseconds after the epoch. Needs no EAL, no libpcap.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "net.h"
#include "wire.h"

#define DEF_SRC_MAC     "02:00:00:00:00:01"
#define DEF_SRC_IP      "198.18.0.1"
#define DEF_SRC_PORT    40000
#define DEF_SIZE        64
#define DEF_MTU         1500
#define MTU_MIN         576
#define IP_UDP_LEN      28 /* IPv4 (20, no options) + UDP (8) */
#define MTU_MAX         (SL_WIRE_DGRAM_MAX_JUMBO + IP_UDP_LEN)
#define BROKER_OVERHEAD 140 /* sluiced: max_msg = MTU - 140 (docs/protocol.md) */
#define PUB_FIXED       8   /* partition, topic_len, flags, msg_len */
#define MPUB_FIXED      6   /* partition, topic_len, flags, count */
#define MPUB_ELEM       4   /* u32 length before each MPUB message */
#define MAX_COUNT       UINT32_MAX
#define MAX_IPG_US      1000000

/* classic libpcap file format */
#define PCAP_MAGIC             0xa1b2c3d4u
#define PCAP_VERSION_MAJOR     2
#define PCAP_VERSION_MINOR     4
#define PCAP_SNAPLEN           65535
#define PCAP_LINKTYPE_ETHERNET 1

struct pcap_file_hdr {
	uint32_t magic;
	uint16_t version_major;
	uint16_t version_minor;
	int32_t thiszone;
	uint32_t sigfigs;
	uint32_t snaplen;
	uint32_t linktype;
};

struct pcap_rec_hdr {
	uint32_t ts_sec;
	uint32_t ts_usec;
	uint32_t incl_len;
	uint32_t orig_len;
};

_Static_assert(sizeof(struct pcap_file_hdr) == 24, "pcap file header");
_Static_assert(sizeof(struct pcap_rec_hdr) == 16, "pcap record header");

enum {
	O_SRC_MAC = 256,
	O_DST_MAC,
	O_SRC_IP,
	O_DST_IP,
	O_SRC_PORT,
	O_DST_PORT,
	O_TOPIC,
	O_PARTITION,
	O_SIZE,
	O_COUNT,
	O_BATCH,
	O_NOACK,
	O_MTU,
	O_IPG,
};

static const struct option long_opts[] = {
	{"output", required_argument, NULL, 'o'},
	{"src-mac", required_argument, NULL, O_SRC_MAC},
	{"dst-mac", required_argument, NULL, O_DST_MAC},
	{"src-ip", required_argument, NULL, O_SRC_IP},
	{"dst-ip", required_argument, NULL, O_DST_IP},
	{"src-port", required_argument, NULL, O_SRC_PORT},
	{"dst-port", required_argument, NULL, O_DST_PORT},
	{"topic", required_argument, NULL, O_TOPIC},
	{"partition", required_argument, NULL, O_PARTITION},
	{"size", required_argument, NULL, O_SIZE},
	{"count", required_argument, NULL, O_COUNT},
	{"batch", required_argument, NULL, O_BATCH},
	{"noack", no_argument, NULL, O_NOACK},
	{"mtu", required_argument, NULL, O_MTU},
	{"ipg-us", required_argument, NULL, O_IPG},
	{"quiet", no_argument, NULL, 'q'},
	{"help", no_argument, NULL, 'h'},
	{NULL, 0, NULL, 0},
};

struct conf {
	const char *output;
	const char *topic;
	struct sl_net_if nif; /* source: MAC, IP */
	uint8_t dst_mac[6];
	uint32_t dst_ip;
	uint16_t sport_lo;
	uint16_t sport_hi;
	uint16_t dport;
	uint16_t partition;
	uint32_t size;
	uint32_t count;
	uint32_t batch;
	uint32_t mtu;
	uint32_t ipg_us;
	int noack;
	int quiet;
	int have_dst_mac;
	int have_dst_ip;
};

static void
usage(FILE *f)
{
	fprintf(f,
		"usage: sluice-pcap -o FILE --dst-mac MAC --dst-ip A.B.C.D --topic NAME\n"
		"                   [--src-mac MAC] [--src-ip A.B.C.D] [--src-port P[-Q]]\n"
		"                   [--dst-port P] [--partition N|any] [--size BYTES]\n"
		"                   [--count N] [--batch B] [--noack] [--mtu N] [--ipg-us N] [-q]\n"
		"  writes a pcap file (Ethernet) of N anonymous PUB frames (session 0) for a\n"
		"  packet generator; the broker must run with --anon-publish\n"
		"  -o, --output FILE  pcap file to write (\"-\": stdout)\n"
		"  --dst-mac MAC      the broker port's MAC address (required)\n"
		"  --dst-ip A.B.C.D   the broker port's IPv4 address (required)\n"
		"  --src-mac MAC      source MAC, where answers go (default %s)\n"
		"  --src-ip A.B.C.D   source IPv4 address, where answers go (default %s)\n"
		"  --src-port P[-Q]   source UDP port, or a range used round robin to spread\n"
		"                     the frames over flows for RSS (default %u)\n"
		"  --dst-port P       the broker's UDP port (default %u)\n"
		"  --topic NAME       topic to publish to (required)\n"
		"  --partition N|any  partition, or any: the broker chooses (default any)\n"
		"  --size BYTES       bytes per message (default %u)\n"
		"  --count N          frames to write (default 1)\n"
		"  --batch B          messages per frame: 1 = PUB, 2..%u = MPUB (default 1)\n"
		"  --noack            set the NOACK flag: the broker answers no OK (ERR still)\n"
		"  --mtu N            link MTU every frame must fit, %u..%u (default %u;\n"
		"                     9000 for jumbo frames)\n"
		"  --ipg-us N         timestamp step between frames, microseconds (default 1)\n"
		"  -q, --quiet        do not print the summary\n"
		"  -h, --help         this text\n"
		"Frame i (from 1) has seq = cookie = i. Message k (from 1) is the decimal k\n"
		"zero-padded to BYTES (its last BYTES digits if longer).\n",
		DEF_SRC_MAC, DEF_SRC_IP, DEF_SRC_PORT, SL_WIRE_UDP_PORT, DEF_SIZE, SL_WIRE_MPUB_MAX,
		MTU_MIN, MTU_MAX, DEF_MTU);
}

static int
parse_u32(const char *s, uint32_t min, uint32_t max, uint32_t *out)
{
	unsigned long long v;
	char *end;

	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || v < min || v > max)
		return -1;
	*out = (uint32_t)v;
	return 0;
}

/* "P" or "P-Q" with 1 <= P <= Q <= 65535. */
static int
parse_port_range(const char *s, uint16_t *lo, uint16_t *hi)
{
	const char *dash = strchr(s, '-');
	uint32_t a, b;
	char buf[16];

	if (dash == NULL) {
		if (parse_u32(s, 1, UINT16_MAX, &a) != 0)
			return -1;
		*lo = *hi = (uint16_t)a;
		return 0;
	}
	if ((size_t)(dash - s) >= sizeof(buf))
		return -1;
	memcpy(buf, s, (size_t)(dash - s));
	buf[dash - s] = '\0';
	if (parse_u32(buf, 1, UINT16_MAX, &a) != 0 || parse_u32(dash + 1, 1, UINT16_MAX, &b) != 0 ||
	    b < a)
		return -1;
	*lo = (uint16_t)a;
	*hi = (uint16_t)b;
	return 0;
}

static int
hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* "xx:xx:xx:xx:xx:xx": exactly two hex digits per byte, ':' or '-' between them. */
static int
parse_mac(const char *s, uint8_t mac[6])
{
	int i, h, l;

	for (i = 0; i < 6; i++, s += 3) {
		h = hex_digit(s[0]);
		l = h < 0 ? -1 : hex_digit(s[1]);
		if (l < 0)
			return -1;
		mac[i] = (uint8_t)(h << 4 | l);
		if (i < 5 && s[2] != ':' && s[2] != '-')
			return -1;
	}
	return s[-1] == '\0' ? 0 : -1;
}

/* Long name of an option value, for error messages. */
static const char *
opt_name(int val)
{
	const struct option *o;

	for (o = long_opts; o->name != NULL; o++)
		if (o->val == val)
			return o->name;
	return "?";
}

/* Message k: the decimal k zero-padded to len bytes (its last len digits if longer). */
static void
fill_msg(uint8_t *buf, uint32_t len, uint64_t k)
{
	uint32_t i = len;

	memset(buf, '0', len);
	while (i > 0 && k > 0) {
		buf[--i] = (uint8_t)('0' + k % 10);
		k /= 10;
	}
}

/* Largest message size that fits a frame of this batch in a UDP payload of dgram bytes. */
static uint32_t
max_size(uint32_t dgram, size_t tlen, uint32_t batch)
{
	size_t fixed;

	if (batch == 1) {
		fixed = SL_WIRE_HDR_LEN + PUB_FIXED + tlen;
		return dgram > fixed ? (uint32_t)(dgram - fixed) : 0;
	}
	fixed = SL_WIRE_HDR_LEN + MPUB_FIXED + tlen + (size_t)batch * MPUB_ELEM;
	return dgram > fixed ? (uint32_t)((dgram - fixed) / batch) : 0;
}

/* UDP payload (sluice frame) length for the configuration. */
static size_t
dgram_len(const struct conf *c, size_t tlen)
{
	if (c->batch == 1)
		return SL_WIRE_HDR_LEN + PUB_FIXED + tlen + c->size;
	return SL_WIRE_HDR_LEN + MPUB_FIXED + tlen + (size_t)c->batch * (MPUB_ELEM + c->size);
}

static int
write_all(FILE *f, const void *buf, size_t len)
{
	return fwrite(buf, 1, len, f) == len ? 0 : -1;
}

static int
check_conf(const struct conf *c)
{
	size_t tlen, dlen;
	uint32_t dgram;

	if (c->output == NULL || !c->have_dst_mac || !c->have_dst_ip || c->topic == NULL) {
		fprintf(stderr, "sluice-pcap: -o, --dst-mac, --dst-ip and --topic are required\n");
		return -1;
	}
	tlen = strlen(c->topic);
	if (sl_wire_check_name(c->topic, tlen) != 0) {
		fprintf(stderr, "sluice-pcap: invalid topic name \"%s\": 1..%d of A-Za-z0-9._-#\n",
			c->topic, SL_WIRE_NAME_MAX);
		return -1;
	}
	if (c->nif.mac[0] & 0x01) {
		fprintf(stderr, "sluice-pcap: --src-mac must be a unicast address\n");
		return -1;
	}
	if (c->dst_mac[0] & 0x01)
		fprintf(stderr, "sluice-pcap: warning: --dst-mac is a multicast/broadcast address: "
				"the broker only accepts frames to its port's MAC\n");
	dgram = c->mtu - IP_UDP_LEN;
	dlen = dgram_len(c, tlen);
	if (dlen > dgram) {
		if (c->batch == 1)
			fprintf(stderr,
				"sluice-pcap: a PUB of a %" PRIu32 "-byte message to topic \"%s\" "
				"is a %zu-byte datagram, more than the %" PRIu32 " bytes that fit "
				"an MTU of %" PRIu32 ":\n  largest message: %" PRIu32 " bytes",
				c->size, c->topic, dlen, dgram, c->mtu, max_size(dgram, tlen, 1));
		else
			fprintf(stderr,
				"sluice-pcap: an MPUB of %" PRIu32 " %" PRIu32 "-byte messages to "
				"topic \"%s\" is a %zu-byte datagram, more than the %" PRIu32
				" bytes that fit an MTU of %" PRIu32 ":\n  largest message with "
				"--batch %" PRIu32 ": %" PRIu32 " bytes",
				c->batch, c->size, c->topic, dlen, dgram, c->mtu, c->batch,
				max_size(dgram, tlen, c->batch));
		fprintf(stderr, "%s\n",
			c->mtu < MTU_MAX ? " (--mtu 9000 on a jumbo-frame link allows more)" : "");
		return -1;
	}
	if (c->size > c->mtu - BROKER_OVERHEAD)
		fprintf(stderr,
			"sluice-pcap: warning: sluiced on a %u-byte MTU accepts messages of at "
			"most "
			"%u bytes by default (max_msg = MTU - %u): larger ones are answered with "
			"ERR SL_E_TOO_BIG\n",
			c->mtu, c->mtu - BROKER_OVERHEAD, BROKER_OVERHEAD);
	return 0;
}

static int
generate(const struct conf *c, FILE *f, uint32_t *frame_len)
{
	const void *msgs[SL_WIRE_MPUB_MAX];
	uint32_t lens[SL_WIRE_MPUB_MAX];
	struct pcap_file_hdr fh = {
		.magic = PCAP_MAGIC,
		.version_major = PCAP_VERSION_MAJOR,
		.version_minor = PCAP_VERSION_MINOR,
		.snaplen = PCAP_SNAPLEN,
		.linktype = PCAP_LINKTYPE_ETHERNET,
	};
	struct pcap_rec_hdr rh;
	struct sl_wire_hdr hdr;
	uint8_t *frame, *arena;
	uint32_t i, b, nports = (uint32_t)(c->sport_hi - c->sport_lo) + 1;
	uint64_t k = 0, ts_us;
	int n, rc = -1;

	frame = malloc(SL_NET_HDRS_LEN + SL_WIRE_DGRAM_MAX_JUMBO);
	arena = malloc((size_t)c->batch * c->size + 1);
	if (frame == NULL || arena == NULL) {
		fprintf(stderr, "sluice-pcap: out of memory\n");
		goto out;
	}
	for (b = 0; b < c->batch; b++) {
		msgs[b] = arena + (size_t)b * c->size;
		lens[b] = c->size;
	}
	if (write_all(f, &fh, sizeof(fh)) != 0)
		goto io_err;
	for (i = 1; i <= c->count; i++) {
		for (b = 0; b < c->batch; b++)
			fill_msg(arena + (size_t)b * c->size, c->size, ++k);
		memset(&hdr, 0, sizeof(hdr));
		hdr.flags = c->noack ? SL_WIRE_F_NOACK : 0;
		hdr.session = 0;
		hdr.seq = i;
		hdr.cookie = i;
		n = sl_wire_encode_pub(frame + SL_NET_HDRS_LEN, c->mtu - IP_UDP_LEN, &hdr,
				       c->batch > 1, c->partition, c->topic, 0, 0,
				       (uint16_t)c->batch, msgs, lens);
		if (n < 0) {
			/* check_conf() made sure it fits */
			fprintf(stderr, "sluice-pcap: encoding frame %" PRIu32 ": %s\n", i,
				sl_strerror(n));
			goto out;
		}
		*frame_len = sl_net_udp_build(frame, &c->nif, c->dst_mac, c->dst_ip,
					      (uint16_t)(c->sport_lo + (i - 1) % nports), c->dport,
					      (uint16_t)n, 0);
		ts_us = (uint64_t)(i - 1) * c->ipg_us;
		rh.ts_sec = (uint32_t)(ts_us / 1000000);
		rh.ts_usec = (uint32_t)(ts_us % 1000000);
		rh.incl_len = *frame_len;
		rh.orig_len = *frame_len;
		if (write_all(f, &rh, sizeof(rh)) != 0 || write_all(f, frame, *frame_len) != 0)
			goto io_err;
	}
	if (fflush(f) != 0)
		goto io_err;
	rc = 0;
	goto out;
io_err:
	fprintf(stderr, "sluice-pcap: writing %s: %s\n", c->output, strerror(errno));
out:
	free(frame);
	free(arena);
	return rc;
}

int
main(int argc, char **argv)
{
	struct conf c = {
		.sport_lo = DEF_SRC_PORT,
		.sport_hi = DEF_SRC_PORT,
		.dport = SL_WIRE_UDP_PORT,
		.partition = SL_WIRE_PART_ANY,
		.size = DEF_SIZE,
		.count = 1,
		.batch = 1,
		.mtu = DEF_MTU,
		.ipg_us = 1,
	};
	uint32_t v, frame_len = 0;
	int opt, to_stdout, rc;
	FILE *f;

	(void)parse_mac(DEF_SRC_MAC, c.nif.mac);
	(void)sl_net_parse_ip(DEF_SRC_IP, &c.nif.ip);
	while ((opt = getopt_long(argc, argv, "o:qh", long_opts, NULL)) != -1) {
		switch (opt) {
		case 'o':
			c.output = optarg;
			break;
		case O_SRC_MAC:
			if (parse_mac(optarg, c.nif.mac) != 0)
				goto bad_arg;
			break;
		case O_DST_MAC:
			if (parse_mac(optarg, c.dst_mac) != 0)
				goto bad_arg;
			c.have_dst_mac = 1;
			break;
		case O_SRC_IP:
			if (sl_net_parse_ip(optarg, &c.nif.ip) != 0)
				goto bad_arg;
			break;
		case O_DST_IP:
			if (sl_net_parse_ip(optarg, &c.dst_ip) != 0)
				goto bad_arg;
			c.have_dst_ip = 1;
			break;
		case O_SRC_PORT:
			if (parse_port_range(optarg, &c.sport_lo, &c.sport_hi) != 0)
				goto bad_arg;
			break;
		case O_DST_PORT:
			if (parse_u32(optarg, 1, UINT16_MAX, &v) != 0)
				goto bad_arg;
			c.dport = (uint16_t)v;
			break;
		case O_TOPIC:
			c.topic = optarg;
			break;
		case O_PARTITION:
			if (strcmp(optarg, "any") == 0)
				v = SL_WIRE_PART_ANY;
			else if (parse_u32(optarg, 0, SL_WIRE_PART_ANY - 1, &v) != 0)
				goto bad_arg;
			c.partition = (uint16_t)v;
			break;
		case O_SIZE:
			if (parse_u32(optarg, 0, SL_WIRE_DGRAM_MAX_JUMBO, &c.size) != 0)
				goto bad_arg;
			break;
		case O_COUNT:
			if (parse_u32(optarg, 1, MAX_COUNT, &c.count) != 0)
				goto bad_arg;
			break;
		case O_BATCH:
			if (parse_u32(optarg, 1, SL_WIRE_MPUB_MAX, &c.batch) != 0)
				goto bad_arg;
			break;
		case O_NOACK:
			c.noack = 1;
			break;
		case O_MTU:
			if (parse_u32(optarg, MTU_MIN, MTU_MAX, &c.mtu) != 0)
				goto bad_arg;
			break;
		case O_IPG:
			if (parse_u32(optarg, 0, MAX_IPG_US, &c.ipg_us) != 0)
				goto bad_arg;
			break;
		case 'q':
			c.quiet = 1;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 1;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "sluice-pcap: unexpected argument \"%s\"\n", argv[optind]);
		usage(stderr);
		return 1;
	}
	if (check_conf(&c) != 0)
		return 1;

	to_stdout = strcmp(c.output, "-") == 0;
	f = to_stdout ? stdout : fopen(c.output, "wb");
	if (f == NULL) {
		fprintf(stderr, "sluice-pcap: cannot create %s: %s\n", c.output, strerror(errno));
		return 1;
	}
	rc = generate(&c, f, &frame_len);
	if (!to_stdout && fclose(f) != 0 && rc == 0) {
		fprintf(stderr, "sluice-pcap: writing %s: %s\n", c.output, strerror(errno));
		rc = -1;
	}
	if (rc != 0) {
		if (!to_stdout)
			remove(c.output);
		return 1;
	}
	if (!c.quiet)
		fprintf(stderr,
			"sluice-pcap: wrote %" PRIu32 " %s frame(s) of %" PRIu32 " bytes (%" PRIu64
			" message(s) of %" PRIu32 " bytes%s) to %s\n",
			c.count, c.batch == 1 ? "PUB" : "MPUB", frame_len,
			(uint64_t)c.count * c.batch, c.size, c.noack ? ", NOACK" : "", c.output);
	return 0;

bad_arg:
	fprintf(stderr, "sluice-pcap: bad value \"%s\" for --%s\n", optarg, opt_name(opt));
	return 1;
}
