/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * libsluice internal: the transport operations table. client.c speaks the wire protocol
 * and sees a transport only through these operations, so the same client runs over the
 * kernel UDP stack, over a DPDK port, or (in the unit test) over a fake in-process broker.
 *
 * A transport carries whole UDP payloads (one wire frame each, or a bundle of frames)
 * between this client and its broker. Like the client, it is single-threaded: every
 * operation on one transport comes from the thread that owns the client.
 */
#ifndef SL_XPORT_H
#define SL_XPORT_H

#include <stdint.h>

#include "client.h"

/* Largest UDP payload over IPv4 (65535 - 20 - 8). */
#define SL_XPORT_DGRAM_MAX 65507

struct sl_xport_ops {
	/** Send one UDP payload of len bytes. Returns 0 or a negative errno (the datagram
	 * is then lost; the client retransmits requests anyway). */
	int (*send)(void *x, const void *frame_payload, uint32_t len);
	/** Receive one UDP payload into buf (cap bytes), waiting up to timeout_us for it.
	 * Returns its length (> 0), 0 on timeout (or an interrupting signal), or a negative
	 * errno for a datagram lost on the way (e.g. -EMSGSIZE when longer than cap). */
	int (*recv)(void *x, void *buf, uint32_t cap, uint32_t timeout_us);
	/** Release the transport (not the DPDK port or pool, which the application owns). */
	void (*close)(void *x);
	/** Optional: the largest UDP payload the transport can send. NULL =
	 * SL_XPORT_DGRAM_MAX. */
	uint32_t (*dgram_max)(void *x);
	/** Optional: a monotonic clock in microseconds. NULL = CLOCK_MONOTONIC. A test
	 * transport provides a virtual clock that its recv() advances. */
	uint64_t (*now_us)(void *x);
	/** Optional: send to and receive from another broker from now on: ip (network
	 * order), port (host order). Returns 0 or a negative errno. NULL: the client cannot
	 * follow a leader to another address. */
	int (*retarget)(void *x, uint32_t ip, uint16_t port);
	/** Optional: the descriptor that becomes readable when recv() has a datagram
	 * (the same one for the transport's life, retarget included). NULL: none. */
	int (*fd)(void *x);
	/** Optional, with flush: add one UDP payload of len bytes to the send batch (copied:
	 * the caller's buffer is free again on return); a full batch is sent at once. The
	 * batch leaves, in order, at the next flush() (or retarget(), to the old address).
	 * Returns how many payloads of the batch a send at once lost (0 normally), or a
	 * negative errno (-EMSGSIZE: longer than the transport sends; nothing queued).
	 * NULL: the client sends every payload with send() at once. */
	int (*queue)(void *x, const void *frame_payload, uint32_t len);
	/** Send the batch (e.g. one sendmmsg). Returns how many payloads were lost (not
	 * sent: the client retransmits requests anyway), 0 when all left. */
	int (*flush)(void *x);
	/** Optional: 1 when the transport takes bundles (docs/protocol.md section 1): queue()
	 * packs consecutive frames that carry SL_WIRE_F_BUNDLE into one datagram (at most
	 * SL_WIRE_DGRAM_MAX_STD bytes, SL_WIRE_BUNDLE_MAX frames), and recv() hands out the
	 * frames of a bundled datagram one per call. NULL or 0: every frame goes alone (the
	 * client then never sets the flag, so the broker never bundles its answers). */
	int (*bundles)(void *x);
};

/**
 * Open a kernel UDP transport to conf->broker_ip:broker_port (a connected non-blocking
 * socket, 4 MiB socket buffers; sends batched with sendmmsg, receives with recvmmsg).
 * Sets *ops. Returns the transport, or NULL with errno
 * set. Calling context: any thread, not on a per-packet path.
 */
void *
sl_xport_udp_open(const struct sl_client_conf *conf, const struct sl_xport_ops **ops);

/**
 * Open a DPDK transport on the started port conf->dpdk_port, queue conf->dpdk_queue,
 * transmitting from conf->dpdk_pool, with our address conf->local_ip:local_port.
 * Resolves the broker's MAC address with ARP (up to conf->timeout_ms). The broker must
 * be on the same Ethernet segment (no routing). Sets *ops. Returns the transport, or NULL
 * with errno set. Calling context: an EAL thread (lcore) that owns that queue.
 */
void *
sl_xport_dpdk_open(const struct sl_client_conf *conf, const struct sl_xport_ops **ops);

/**
 * Test hook and the common constructor: open a client over an already opened transport
 * x with operations ops (conf->xport is ignored). The client owns x from then on: it
 * calls ops->close(x) on failure and in sl_client_close(). Returns NULL with errno set
 * as sl_client_open(). Calling context: the thread that will use the client.
 */
struct sl_client *
sl_client_open_xport(const struct sl_client_conf *conf, const struct sl_xport_ops *ops,
		     void *x);

#endif /* SL_XPORT_H */
