/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * request: a worker's handling of one client request (internal to dataplane/). From a parsed
 * frame (struct sl_request, filled by worker.c's receive path) to its answer: the session and
 * token checks, the idempotency window and the per-session order rule, the opcode table with
 * its per-opcode decode and execute handlers, the partition module call, and the answer
 * built in place in the request's mbuf. Requests whose answer waits (replication, the disk)
 * are held by token and answered from the partition's completions
 * (sl_request_held_answer). worker.c keeps the poll loop, RX/TX, frame parsing, delivery and
 * the control thread's commands.
 *
 * Calling context: everything here runs on the owner worker lcore (an online RCU QSBR
 * reader). mbufs: the request's mbuf (r->m) is owned by the call; it is sent as the answer,
 * forwarded, or freed before it returns.
 */
#ifndef SL_REQUEST_H
#define SL_REQUEST_H

#include <stdint.h>

#include <rte_mbuf.h>

#include "net.h"
#include "partition.h"
#include "session.h"
#include "wire.h"
#include "worker.h"

/* Request context while a frame is being handled. */
struct sl_request {
	struct rte_mbuf *m;
	uint16_t pi;			/* port index */
	uint8_t anon;			/* a publish without a session */
	struct sl_net_info info;
	struct sl_wire_hdr hdr;
	const uint8_t *body;
	struct sl_session *sess;
	uint32_t slot;
	uint32_t rights;		/* its token's rights on its topic (SL_AUTH_*) */
};

/** Handle request r (forwarded: it came from another worker, its checks done). The request's
 * mbuf is owned by the call. Owner lcore. */
void
sl_request_handle(struct sl_worker *w, struct sl_request *r, int forwarded);

/** Answer the held request a partition completion names. Owner lcore. */
void
sl_request_held_answer(struct sl_worker *w, const struct sl_partition_done *d);

/** A held request dropped (partition detached): its slot back, no answer. arg: the worker.
 * Owner lcore. */
void
sl_request_held_drop(void *arg, uint64_t token);

/** Hand r to the worker that owns its partition (the mbuf goes with it). Owner lcore. */
void
sl_request_forward(struct sl_worker *w, struct sl_request *r, uint16_t owner);

/** The partition of cp when this worker owns it, else NULL. Owner lcore, RCU read side. */
struct sl_partition *
sl_request_owned(const struct sl_worker *w, const struct sl_coord_part *cp);

/** Answer r with ERR code (a negative or positive SL_E_*), text or sl_strerror's. The mbuf
 * becomes the answer. Owner lcore. */
void
sl_request_reply_err(struct sl_worker *w, struct sl_request *r, int code, uint16_t partition,
		     const char *text);

/* From worker.c, for the answers built here. Owner lcore. */
void
sl_worker_tx_enqueue(struct sl_worker *w, uint16_t pi, struct rte_mbuf *m);
/* An answer frame m (headers written, payload plen bytes) to a request that carried
 * SL_WIRE_F_BUNDLE: appended to port pi's answer datagram being filled when it goes to the
 * same address and port and has room (SL_WIRE_DGRAM_MAX_STD bytes, SL_WIRE_BUNDLE_MAX
 * frames; m is then freed), else it becomes that datagram. Owner lcore. */
void
sl_worker_tx_answer(struct sl_worker *w, uint16_t pi, struct rte_mbuf *m, uint16_t plen);
void
sl_worker_tx_offload(struct rte_mbuf *m, uint32_t tx_flags, uint16_t l3_len);

#endif /* SL_REQUEST_H */
