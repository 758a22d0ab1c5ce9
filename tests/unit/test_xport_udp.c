/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * Unit test of libsluice's kernel UDP transport (tools/xport_udp.c) against a plain UDP
 * socket on 127.0.0.1 standing in for the broker: bundles (docs/protocol.md section 1).
 * Frames that carry SL_WIRE_F_BUNDLE and are queued together leave in one datagram of at
 * most SL_WIRE_DGRAM_MAX_STD bytes; a frame without the flag goes alone; a bundled datagram
 * received is handed out one frame per recv(); a bundle with wrong framing is handed out
 * whole (the client's decoder refuses it).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "check.h"
#include "client.h"
#include "wire.h"
#include "xport.h"

/* A NOP frame (32 bytes) with seq, and the bundle flag or not. */
static void
nop(uint8_t *buf, uint64_t seq, int bundle)
{
	struct sl_wire_hdr h = {.version = SL_WIRE_VERSION, .opcode = SL_OP_NOP, .seq = seq,
				.flags = bundle ? SL_WIRE_F_BUNDLE : 0};

	sl_wire_encode_hdr(buf, &h);
}

/* The next datagram on fd (up to 1 s), or -1. */
static ssize_t
next_dgram(int fd, uint8_t *buf, size_t cap, struct sockaddr_in *from)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	socklen_t sl = sizeof(*from);

	if (poll(&p, 1, 1000) != 1)
		return -1;
	return recvfrom(fd, buf, cap, 0, (struct sockaddr *)from, &sl);
}

static uint64_t
seq_of(const uint8_t *f)
{
	uint64_t v = 0;
	int i;

	for (i = 0; i < 8; i++)
		v = v << 8 | f[16 + i];
	return v;
}

int
main(void)
{
	struct sockaddr_in sa = {.sin_family = AF_INET}, from;
	socklen_t sl = sizeof(sa);
	struct sl_client_conf conf;
	const struct sl_xport_ops *ops = NULL;
	uint8_t f[SL_WIRE_HDR_LEN], big[4 * SL_WIRE_DGRAM_MAX_STD], got[65536];
	uint16_t off[SL_WIRE_BUNDLE_MAX], len[SL_WIRE_BUNDLE_MAX];
	ssize_t n;
	void *x;
	int fd, i, k, ok;

	fd = socket(AF_INET, SOCK_DGRAM, 0);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
	    getsockname(fd, (struct sockaddr *)&sa, &sl) != 0) {
		perror("broker socket");
		return 2;
	}
	memset(&conf, 0, sizeof(conf));
	conf.broker_ip = "127.0.0.1";
	conf.broker_port = ntohs(sa.sin_port);
	x = sl_xport_udp_open(&conf, &ops);
	if (x == NULL) {
		perror("sl_xport_udp_open");
		return 2;
	}
	CHECK(ops->bundles != NULL && ops->bundles(x) == 1, "the kernel UDP transport takes "
	      "bundles");

	/* three flagged frames then an unflagged one: a bundle of three, then one alone */
	for (i = 1; i <= 4; i++) {
		nop(f, (uint64_t)i, i <= 3);
		CHECK(ops->queue(x, f, sizeof(f)) == 0, "frame %d queued", i);
	}
	CHECK(ops->flush(x) == 0, "flushed");
	n = next_dgram(fd, got, sizeof(got), &from);
	k = n > 0 ? sl_wire_bundle_split(got, (size_t)n, off, len, SL_WIRE_BUNDLE_MAX) : -1;
	CHECK(n == 3 * SL_WIRE_HDR_LEN && k == 3 && seq_of(got) == 1 &&
	      seq_of(got + off[2]) == 3, "frames 1-3 in one datagram of 96 bytes (%zd, %d)", n, k);
	n = next_dgram(fd, got, sizeof(got), &from);
	CHECK(n == SL_WIRE_HDR_LEN && seq_of(got) == 4, "frame 4 (no flag) alone (%zd)", n);

	/* 50 flagged frames: 46 fill 1472 bytes, the other 4 the next datagram */
	for (i = 0; i < 50; i++) {
		nop(f, 100 + (uint64_t)i, 1);
		(void)ops->queue(x, f, sizeof(f));
	}
	(void)ops->flush(x);
	n = next_dgram(fd, got, sizeof(got), &from);
	CHECK(n == 46 * SL_WIRE_HDR_LEN && n <= SL_WIRE_DGRAM_MAX_STD,
	      "a bundle stops at %d bytes (%zd)", SL_WIRE_DGRAM_MAX_STD, n);
	n = next_dgram(fd, got, sizeof(got), &from);
	CHECK(n == 4 * SL_WIRE_HDR_LEN && seq_of(got) == 146, "the rest in the next (%zd)", n);

	/* answers: a bundle of three is handed out frame by frame, then a lone frame */
	for (i = 0; i < 3; i++)
		nop(big + i * SL_WIRE_HDR_LEN, 200 + (uint64_t)i, 1);
	CHECK(sendto(fd, big, 3 * SL_WIRE_HDR_LEN, 0, (struct sockaddr *)&from,
		     sizeof(from)) == 3 * SL_WIRE_HDR_LEN, "broker sends a bundle of 3");
	nop(big, 300, 0);
	(void)sendto(fd, big, SL_WIRE_HDR_LEN, 0, (struct sockaddr *)&from, sizeof(from));
	ok = 1;
	for (i = 0; i < 3; i++) {
		int r = ops->recv(x, got, sizeof(got), 1000000);

		ok &= r == SL_WIRE_HDR_LEN && seq_of(got) == 200 + (uint64_t)i;
	}
	CHECK(ok, "recv() hands out the bundle's three frames in order");
	CHECK(ops->recv(x, got, sizeof(got), 1000000) == SL_WIRE_HDR_LEN && seq_of(got) == 300,
	      "then the lone frame");

	/* wrong framing (3 bytes after the last frame): handed out whole */
	for (i = 0; i < 2; i++)
		nop(big + i * SL_WIRE_HDR_LEN, 400 + (uint64_t)i, 1);
	memset(big + 2 * SL_WIRE_HDR_LEN, 0, 3);
	(void)sendto(fd, big, 2 * SL_WIRE_HDR_LEN + 3, 0, (struct sockaddr *)&from, sizeof(from));
	CHECK(ops->recv(x, got, sizeof(got), 1000000) == 2 * SL_WIRE_HDR_LEN + 3,
	      "a bundle with wrong framing: the datagram whole (the decoder refuses it)");
	ops->close(x);
	close(fd);
	return check_report();
}
