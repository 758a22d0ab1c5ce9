/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * libsluice kernel UDP transport: one connected, non-blocking UDP socket to the broker.
 * recv() waits with ppoll() (microsecond timeout).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "wire.h"
#include "xport.h"

#define SOCK_BUF_BYTES (4 * 1024 * 1024)

struct xudp {
	int fd;
};

static int
udp_send(void *x, const void *frame_payload, uint32_t len)
{
	struct xudp *u = x;
	ssize_t n;

	n = send(u->fd, frame_payload, len, 0);
	if (n < 0)
		return -errno;
	return n == (ssize_t)len ? 0 : -EIO;
}

static int
udp_recv(void *x, void *buf, uint32_t cap, uint32_t timeout_us)
{
	struct xudp *u = x;
	struct pollfd pfd = { .fd = u->fd, .events = POLLIN };
	struct timespec ts;
	ssize_t n;

	for (;;) {
		/* MSG_TRUNC: the real length, so that a truncated datagram is detected. */
		n = recv(u->fd, buf, cap, MSG_TRUNC);
		if (n > (ssize_t)cap)
			return -EMSGSIZE;
		if (n > 0)
			return (int)n;
		if (n == 0)
			return -EMSGSIZE; /* empty datagram: never a valid frame */
		if (errno == EINTR)
			return 0;
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			return -errno; /* e.g. ECONNREFUSED: no broker listening (yet) */
		if (timeout_us == 0)
			return 0;
		ts.tv_sec = timeout_us / 1000000;
		ts.tv_nsec = (long)(timeout_us % 1000000) * 1000;
		if (ppoll(&pfd, 1, &ts, NULL) <= 0)
			return 0; /* timeout, or EINTR: let the caller look at its flags */
		timeout_us = 0; /* readable: one more recv, no second wait */
	}
}

static void
udp_close(void *x)
{
	struct xudp *u = x;

	if (u == NULL)
		return;
	close(u->fd);
	free(u);
}

static uint32_t
udp_dgram_max(void *x)
{
	return SL_XPORT_DGRAM_MAX;
}

static int
udp_retarget(void *x, uint32_t ip, uint16_t port)
{
	struct xudp *u = x;
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	char junk[64];

	sa.sin_addr.s_addr = ip;
	if (connect(u->fd, (const struct sockaddr *)&sa, sizeof(sa)) != 0)
		return -errno;
	/* what the old peer sent and we did not read yet is not for the new one */
	while (recv(u->fd, junk, sizeof(junk), MSG_TRUNC) >= 0 || errno == ECONNREFUSED)
		;
	return 0;
}

static int
udp_fd(void *x)
{
	return ((const struct xudp *)x)->fd;
}

static const struct sl_xport_ops udp_ops = {
	.send = udp_send,
	.recv = udp_recv,
	.close = udp_close,
	.dgram_max = udp_dgram_max,
	.now_us = NULL,
	.retarget = udp_retarget,
	.fd = udp_fd,
};

void *
sl_xport_udp_open(const struct sl_client_conf *conf, const struct sl_xport_ops **ops)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	struct xudp *u = NULL;
	int bufsz = SOCK_BUF_BYTES;
	int err;

	if (conf == NULL || conf->broker_ip == NULL || ops == NULL) {
		err = EINVAL;
		goto fail;
	}
	if (inet_pton(AF_INET, conf->broker_ip, &sa.sin_addr) != 1) {
		err = EINVAL;
		goto fail;
	}
	sa.sin_port = htons(conf->broker_port != 0 ? conf->broker_port : SL_WIRE_UDP_PORT);

	u = calloc(1, sizeof(*u));
	if (u == NULL) {
		err = ENOMEM;
		goto fail;
	}
	u->fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (u->fd < 0) {
		err = errno;
		goto fail;
	}
	/* Best effort: without CAP_NET_ADMIN (the *FORCE variants) the kernel caps these
	 * at net.core.rmem_max / wmem_max. */
	if (setsockopt(u->fd, SOL_SOCKET, SO_RCVBUFFORCE, &bufsz, sizeof(bufsz)) != 0)
		(void)setsockopt(u->fd, SOL_SOCKET, SO_RCVBUF, &bufsz, sizeof(bufsz));
	if (setsockopt(u->fd, SOL_SOCKET, SO_SNDBUFFORCE, &bufsz, sizeof(bufsz)) != 0)
		(void)setsockopt(u->fd, SOL_SOCKET, SO_SNDBUF, &bufsz, sizeof(bufsz));
	if (connect(u->fd, (const struct sockaddr *)&sa, sizeof(sa)) != 0) {
		err = errno;
		goto fail;
	}
	*ops = &udp_ops;
	return u;

fail:
	if (u != NULL && u->fd >= 0)
		close(u->fd);
	free(u);
	errno = err;
	return NULL;
}
