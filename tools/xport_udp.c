/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * libsluice kernel UDP transport: one connected, non-blocking UDP socket to the broker.
 * System calls are batched both ways, so that a window of pipelined requests costs a few
 * calls per round instead of one per datagram:
 *  - sending: queue() copies each payload into the send batch (up to TX_BATCH datagrams,
 *    TX_BYTES bytes) and flush() sends the batch with one sendmmsg() (the client flushes
 *    before it waits for answers and at the end of each poll; a full batch leaves at
 *    once). A datagram the kernel refuses (ECONNREFUSED from an earlier ICMP, a full
 *    socket buffer) is lost as a failed send() was: the client retransmits.
 *  - bundles (docs/protocol.md section 1): a frame that carries SL_WIRE_F_BUNDLE is
 *    appended to the batch's last datagram when that one's frames carry it too and the
 *    datagram stays within SL_WIRE_DGRAM_MAX_STD bytes and SL_WIRE_BUNDLE_MAX frames; recv()
 *    hands out the frames of a bundled datagram one per call.
 *  - receiving: recv() waits with ppoll() (microsecond timeout); one recvmmsg() takes up
 *    to RX_BATCH datagrams that are waiting, and the next recv() calls hand them out
 *    without a system call. After a recvmmsg() that emptied the socket (fewer than
 *    RX_BATCH) or found it empty, a recv() that may wait goes to ppoll() first (it
 *    returns at once when a datagram came since) instead of trying recvmmsg() again.
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

#include "bytes.h"
#include "wire.h"
#include "xport.h"

#define SOCK_BUF_BYTES (4 * 1024 * 1024)
#define RX_BATCH 32		/* a window of 32 answers per call; RX_BATCH x RX_SLOT of memory */
#define RX_SLOT 65536		/* any UDP payload */
#define TX_BATCH 64
#define TX_BYTES (256 * 1024)	/* > SL_XPORT_DGRAM_MAX */

struct xudp {
	int fd;
	int dry;		/* the last recvmmsg() emptied the socket or found it empty */
	uint32_t head;		/* next datagram of the batch to hand out */
	uint32_t n;		/* datagrams in the batch */
	struct mmsghdr msgs[RX_BATCH];
	struct iovec iov[RX_BATCH];
	uint8_t *bufs;		/* RX_BATCH x RX_SLOT */
	/* send batch: tx_n datagrams, tx_used bytes of tx_buf */
	uint32_t tx_n;
	uint32_t tx_used;
	struct mmsghdr tx_msgs[TX_BATCH];
	struct iovec tx_iov[TX_BATCH];
	uint8_t *tx_buf;	/* TX_BYTES */
	uint32_t tx_bun;	/* frames in the batch's last datagram, 0 when it is closed
				 * to bundling */
	/* the received bundle being handed out: frame sub_i of sub_n, in datagram sub_d */
	const uint8_t *sub_d;
	uint32_t sub_i;
	uint32_t sub_n;
	uint16_t sub_off[SL_WIRE_BUNDLE_MAX];
	uint16_t sub_len[SL_WIRE_BUNDLE_MAX];
};

static int
is_bundle_frame(const uint8_t *f, uint32_t len)
{
	return len >= SL_WIRE_HDR_LEN && len <= SL_WIRE_DGRAM_MAX_STD &&
	       (sl_bytes_get_be16(f + 4) & SL_WIRE_F_BUNDLE);
}

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
udp_flush(void *x)
{
	struct xudp *u = x;
	uint32_t i = 0;
	int n, lost = 0, again = 1;

	while (i < u->tx_n) {
		n = sendmmsg(u->fd, &u->tx_msgs[i], u->tx_n - i, 0);
		if (n > 0) {
			i += (uint32_t)n;
			again = 1;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		/* the first one was refused: a pending ICMP error (reported once) costs it
		 * nothing, it is tried once more; else (a full buffer) it is lost as with
		 * send(), and the others get their own chance */
		if (again && errno != EAGAIN && errno != EWOULDBLOCK && errno != ENOBUFS) {
			again = 0;
			continue;
		}
		i++;
		lost++;
		again = 1;
	}
	u->tx_n = 0;
	u->tx_used = 0;
	u->tx_bun = 0;
	return lost;
}

static int
udp_queue(void *x, const void *frame_payload, uint32_t len)
{
	struct xudp *u = x;
	uint8_t *d;
	int lost = 0, bun = is_bundle_frame(frame_payload, len);

	if (len > SL_XPORT_DGRAM_MAX)
		return -EMSGSIZE;
	if (bun && u->tx_bun > 0 && u->tx_bun < SL_WIRE_BUNDLE_MAX &&
	    u->tx_iov[u->tx_n - 1].iov_len + len <= SL_WIRE_DGRAM_MAX_STD &&
	    u->tx_used + len <= TX_BYTES) {
		/* the last datagram's bytes end at tx_used: the frame joins it */
		memcpy(u->tx_buf + u->tx_used, frame_payload, len);
		u->tx_iov[u->tx_n - 1].iov_len += len;
		u->tx_used += len;
		u->tx_bun++;
		return 0;
	}
	if (u->tx_n == TX_BATCH || u->tx_used + len > TX_BYTES)
		lost = udp_flush(u);
	d = u->tx_buf + u->tx_used;
	memcpy(d, frame_payload, len);
	u->tx_iov[u->tx_n].iov_base = d;
	u->tx_iov[u->tx_n].iov_len = len;
	u->tx_n++;
	u->tx_used += len;
	u->tx_bun = bun ? 1 : 0;
	return lost;
}

static int
udp_recv(void *x, void *buf, uint32_t cap, uint32_t timeout_us)
{
	struct xudp *u = x;
	struct pollfd pfd = { .fd = u->fd, .events = POLLIN };
	struct timespec ts;
	ssize_t n;

	for (;;) {
		if (u->sub_i < u->sub_n) {
			uint32_t i = u->sub_i++;

			if (u->sub_len[i] > cap)
				return -EMSGSIZE;
			memcpy(buf, u->sub_d + u->sub_off[i], u->sub_len[i]);
			return (int)u->sub_len[i];
		}
		if (u->head < u->n) {
			const struct mmsghdr *m = &u->msgs[u->head];
			const uint8_t *d = u->bufs + (size_t)u->head * RX_SLOT;
			int k;

			u->head++;
			/* truncated (MSG_TRUNC), empty or longer than cap: never a frame of ours */
			if ((m->msg_hdr.msg_flags & MSG_TRUNC) || m->msg_len == 0 ||
			    m->msg_len > cap)
				return -EMSGSIZE;
			/* a bundle: its frames one per call (a wrong one goes whole: the
			 * client's decoder refuses it) */
			k = sl_wire_bundle_split(d, m->msg_len, u->sub_off, u->sub_len,
						 SL_WIRE_BUNDLE_MAX);
			if (k > 1) {
				u->sub_d = d;
				u->sub_i = 0;
				u->sub_n = (uint32_t)k;
				continue;
			}
			memcpy(buf, d, m->msg_len);
			return (int)m->msg_len;
		}
		if (u->dry && timeout_us > 0)
			goto wait; /* ppoll returns at once if a datagram came since */
		n = recvmmsg(u->fd, u->msgs, RX_BATCH, MSG_DONTWAIT, NULL);
		if (n > 0) {
			u->head = 0;
			u->n = (uint32_t)n;
			u->dry = n < RX_BATCH;
			continue;
		}
		if (n == 0)
			continue;
		if (errno == EINTR)
			return 0;
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			return -errno; /* e.g. ECONNREFUSED: no broker listening (yet) */
		u->dry = 1;
		if (timeout_us == 0)
			return 0;
wait:
		ts.tv_sec = timeout_us / 1000000;
		ts.tv_nsec = (long)(timeout_us % 1000000) * 1000;
		if (ppoll(&pfd, 1, &ts, NULL) <= 0)
			return 0; /* timeout, or EINTR: let the caller look at its flags */
		u->dry = 0;
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
	free(u->bufs);
	free(u->tx_buf);
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
	(void)udp_flush(u);	/* queued for the old address */
	if (connect(u->fd, (const struct sockaddr *)&sa, sizeof(sa)) != 0)
		return -errno;
	u->head = u->n = 0;
	u->sub_i = u->sub_n = 0;
	u->dry = 0;
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

static int
udp_bundles(void *x)
{
	(void)x;
	return 1;
}

static const struct sl_xport_ops udp_ops = {
	.send = udp_send,
	.recv = udp_recv,
	.close = udp_close,
	.dgram_max = udp_dgram_max,
	.now_us = NULL,
	.retarget = udp_retarget,
	.fd = udp_fd,
	.queue = udp_queue,
	.flush = udp_flush,
	.bundles = udp_bundles,
};

void *
sl_xport_udp_open(const struct sl_client_conf *conf, const struct sl_xport_ops **ops)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	struct xudp *u = NULL;
	int bufsz = SOCK_BUF_BYTES;
	uint32_t i;
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
	u->fd = -1;
	u->bufs = malloc((size_t)RX_BATCH * RX_SLOT);
	if (u->bufs == NULL) {
		err = ENOMEM;
		goto fail;
	}
	u->tx_buf = malloc(TX_BYTES);
	if (u->tx_buf == NULL) {
		err = ENOMEM;
		goto fail;
	}
	for (i = 0; i < TX_BATCH; i++) {
		u->tx_msgs[i].msg_hdr.msg_iov = &u->tx_iov[i];
		u->tx_msgs[i].msg_hdr.msg_iovlen = 1;
	}
	for (i = 0; i < RX_BATCH; i++) {
		u->iov[i].iov_base = u->bufs + (size_t)i * RX_SLOT;
		u->iov[i].iov_len = RX_SLOT;
		u->msgs[i].msg_hdr.msg_iov = &u->iov[i];
		u->msgs[i].msg_hdr.msg_iovlen = 1;
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
	if (u != NULL) {
		free(u->bufs);
		free(u->tx_buf);
	}
	free(u);
	errno = err;
	return NULL;
}
