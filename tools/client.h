/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * libsluice: the sluice client library. One API over two transports:
 *  - SL_XPORT_UDP: a kernel UDP socket (any application);
 *  - SL_XPORT_DPDK: a DPDK port the application has initialised and started
 *    (kernel-bypass applications); the library does Ethernet/ARP/IPv4/UDP itself.
 *
 * A client is single-threaded: every call on one struct sl_client comes from the same
 * thread. Nothing happens in the background: sl_client_poll() (and the blocking calls,
 * which poll internally) receive answers, run callbacks, retransmit requests whose
 * answer is late (same session and sequence, so the broker never executes a retry twice)
 * and send heartbeats. On SL_E_SESSION (the broker forgot the session) the client opens
 * a new session and re-subscribes; requests in flight then fail with SL_E_SESSION.
 *
 * Following the leader: given several addresses (broker_ip "a,b,c", or seeds), the
 * client answers SL_E_NOT_LEADER, or a broker silent for failover_ms while requests wait,
 * by asking the addresses (and the current broker) with METADATA who leads the partition
 * concerned, then moves to it: a new session (HELLO) there, its unanswered publishes and
 * SUBs sent again in their original order (new seqs, same order), its subscriptions
 * subscribed again. While no node says it leads (an election under way), the search goes
 * on in rounds from later polls (one round: one METADATA wait per address at most, then a
 * pause of retry_ms doubling up to 200 ms, sl_client_next_timer_us says when), so an
 * event loop is never held for the whole search; requests wait (and time out) meanwhile.
 * One client talks to one broker at a time: it follows the leader of
 * the partition that moved (use one client per leader when partitions of one client lead
 * on different nodes). A publish the old leader wrote but whose answer was lost is
 * written again by the new leader (docs/protocol.md, "Following the leader").
 */
#ifndef SL_CLIENT_H
#define SL_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#include "wire.h"

enum sl_xport_kind {
	SL_XPORT_UDP = 0,
	SL_XPORT_DPDK = 1,
};

#define SL_CLIENT_NO_PRODUCER UINT64_MAX

struct sl_client_conf {
	enum sl_xport_kind xport;
	const char *broker_ip;		/* "a.b.c.d", or a list "a.b.c.d[:port],...": the
					 * first is where the client starts, all are seeds */
	uint16_t broker_port;		/* 0 = SL_WIRE_UDP_PORT (addresses without :port) */
	const char *seeds;		/* more seed addresses "a.b.c.d[:port],..."; NULL: none */
	int follow_leader;		/* follow the leader even with one address (it is
					 * followed whenever there are two or more) */
	uint32_t failover_ms;		/* following: no frame from the broker for this long
					 * while requests wait = ask who leads; 0 = 2000 */
	uint32_t window;		/* max requests in flight (<= broker's); 0 = broker's */
	uint32_t retry_ms;		/* least first retransmit timeout (it follows the
					 * answers' round trip); 0 = 20 ms; doubles, max 1 s */
	uint32_t timeout_ms;		/* give up on a request after this; 0 = 5000 */
	int fail_busy;			/* a publish answered busy (SL_E_FULL,
					 * SL_E_WRITE_DISABLED, SL_E_QUORUM, SL_E_OUT_OF_ORDER)
					 * completes at once with that answer; 0: it is sent
					 * again until timeout_ms (then ends with it) */
	const char *token;		/* client token sent in HELLO (a node with
					 * --token-file needs one): 1..SL_WIRE_TOKEN_MAX
					 * bytes, NUL-terminated, copied at open; NULL: none */
	uint64_t producer_id;		/* idempotent producer id sent in HELLO, kept across
					 * sessions and brokers (docs/protocol.md section 8):
					 * 0 = a random one (getrandom), SL_CLIENT_NO_PRODUCER
					 * = none (the HELLO of before: a publish sent again to
					 * a new leader may be written twice) */
	int no_bundle;			/* SL_XPORT_UDP: send every request in a datagram of
					 * its own, and have its answer sent alone (0: requests
					 * that are ready together share datagrams, and so do
					 * their answers, when the broker takes bundles:
					 * docs/protocol.md section 1) */
	/* SL_XPORT_DPDK only */
	uint16_t dpdk_port;		/* started port, 1 rx and 1 tx queue used */
	uint16_t dpdk_queue;		/* rx/tx queue index */
	struct rte_mempool *dpdk_pool;	/* mbufs for transmit */
	const char *local_ip;		/* our address on that port */
	uint16_t local_port;		/* our UDP port; 0 = 40000 + queue */
	uint16_t link_mtu;		/* 0 = the port's MTU; else this (ports that have no
					 * MTU setting, e.g. net_memif: see
					 * sl_client_dpdk_port_start) */
	uint32_t dpdk_idle_us;		/* 0 = busy-poll while waiting for an answer; else
					 * sleep after 64 empty polls, 1 us doubling up to
					 * this (a client sharing a CPU with the broker's
					 * lcores, as load generators on small machines) */
};

/* Result of a publish. */
struct sl_pub_result {
	int err;		/* 0 or -SL_E_* / -errno */
	uint16_t partition;
	uint32_t count;
	uint64_t id;		/* first message id */
	uint64_t offset;	/* first message queue offset */
};

typedef void (*sl_pub_cb_t)(void *arg, const struct sl_pub_result *res);

/* A delivered message. data is valid only during the callback. */
struct sl_client_msg {
	uint64_t sub_id;
	uint16_t partition;
	uint16_t attempts;
	uint64_t id;
	uint64_t offset;
	uint64_t timestamp_ns;
	uint64_t trace_id;
	uint32_t len;
	const uint8_t *data;
};

/* Return 0 from the callback to FIN the message automatically, 1 to leave it in
 * flight (the application calls sl_client_fin/req/touch itself later). */
typedef int (*sl_msg_cb_t)(void *arg, const struct sl_client_msg *m);

struct sl_client;
struct rte_mempool;

/**
 * For DPDK clients: configure and start port `port` with one RX and one TX queue (queue
 * 0, receiving into pool), set its MTU when mtu != 0, and wait up to timeout_ms for its
 * link to come up (net_memif connects asynchronously). A port without an MTU setting
 * (net_memif) is accepted as is: give the same mtu as conf->link_mtu then, and a pool
 * whose mbufs hold a whole frame. Returns 0 or a negative errno (-ETIMEDOUT: no link).
 * Calling context: the EAL main thread, after rte_eal_init and before sl_client_open.
 */
int
sl_client_dpdk_port_start(uint16_t port, struct rte_mempool *pool, uint16_t mtu,
			  uint32_t timeout_ms);

/**
 * Read a client token for conf->token: from file `path` when it is not NULL (the first
 * line that is not blank or a '#' comment, blanks around it removed), else from the
 * environment variable SLUICE_TOKEN. Never take a token from the command line: it shows
 * in ps. Returns 0 with the token in buf (NUL-terminated), 1 when there is none (path NULL
 * and SLUICE_TOKEN unset or empty), or a negative errno (-EINVAL: no token in the file, or
 * longer than SL_WIRE_TOKEN_MAX or cap - 1). Calling context: any thread.
 */
int
sl_client_token_read(const char *path, char *buf, size_t cap);

/** Open a client and its session (sends HELLO, waits for WELCOME up to timeout_ms).
 * Returns NULL with errno set (negative SL_E_* values in errno are positive codes;
 * SL_E_AUTH: the node wants a token this client does not have, or does not know it). */
struct sl_client *
sl_client_open(const struct sl_client_conf *conf);

/** Close the session (CLS) and free everything. */
void
sl_client_close(struct sl_client *c);

/** 1 when this session's requests and answers share datagrams (bundles: the transport
 * and the broker take them, conf->no_bundle is 0), else 0. The client's thread. */
int
sl_client_bundled(const struct sl_client *c);

/** Session parameters from WELCOME. */
const struct sl_wire_welcome *
sl_client_welcome(const struct sl_client *c);

/** Blocking publish of one message. partition may be SL_WIRE_PART_ANY. Returns 0 or a
 * negative error; *res (may be NULL) gets the answer. */
int
sl_client_pub(struct sl_client *c, const char *topic, uint16_t partition, const void *data,
	      uint32_t len, struct sl_pub_result *res);

/** Blocking multi-publish: all or none, count <= SL_WIRE_MPUB_MAX, one datagram. */
int
sl_client_mpub(struct sl_client *c, const char *topic, uint16_t partition, uint32_t count,
	       const void *const *datas, const uint32_t *lens, struct sl_pub_result *res);

/**
 * Pipelined publish: queue one message and return at once; cb runs from a later poll
 * with the answer. Blocks (polling) only while the window is full. Returns 0 or a
 * negative error (nothing queued). count > 1 makes it an MPUB. Called outside a poll
 * (not from a callback), the request may wait in the transport's send batch until the
 * next sl_client_poll, sl_client_flush or blocking call, so that the publishes queued in
 * between leave in one system call (sl_client_next_timer_us returns 0 meanwhile).
 */
int
sl_client_pub_async(struct sl_client *c, const char *topic, uint16_t partition,
		    uint32_t count, const void *const *datas, const uint32_t *lens,
		    sl_pub_cb_t cb, void *arg);

/** Poll until every pipelined request is answered or failed, up to timeout_ms. Returns
 * 0, or -SL_E_TIMEOUT. */
int
sl_client_flush(struct sl_client *c, uint32_t timeout_ms);

/**
 * Ask the broker the client talks to with METADATA (the META v2 flag set) about one
 * partition of topic: *e gets its entry (leader, epoch, flags, and max_record: the
 * largest replica record one PUB/MPUB to it may make, the sum over its messages of
 * SL_WIRE_META_REC_SIZE(len), 0 = no bound but the datagram; docs/protocol.md, "META").
 * Blocking, up to one METADATA wait (50 to 500 ms, from the round trip); frames that
 * arrive meanwhile other than the answer are discarded (requests in flight recover by
 * retransmission): call it before publishing, or with nothing in flight. Returns 0
 * (META v2: e->max_record holds), 1 (the broker predates META v2: e->max_record is 0 and
 * means nothing, assume the bound of a replicated partition), or a negative error
 * (-SL_E_TOPIC: an ERR, e.g. no such topic or partition; -SL_E_TIMEOUT: no answer;
 * -SL_E_NAME; -EBUSY: called from a callback or during a leader switch). Calling
 * context: the client's thread, not from a callback.
 */
int
sl_client_metadata(struct sl_client *c, const char *topic, uint16_t partition,
		   struct sl_wire_meta_entry *e);

/** Requests in flight. */
uint32_t
sl_client_in_flight(const struct sl_client *c);

/**
 * Subscribe to (topic, partition, channel). flags: SL_WIRE_SUB_ORDERED, _EPHEMERAL.
 * rdy: credit (messages in flight to this subscription). Blocking until the broker
 * answers. Returns the subscription id (> 0) or a negative error.
 */
int64_t
sl_client_sub(struct sl_client *c, const char *topic, uint16_t partition,
	      const char *channel, uint8_t flags, uint32_t rdy, sl_msg_cb_t cb, void *arg);

/** Change a subscription's credit. */
int
sl_client_rdy(struct sl_client *c, uint64_t sub_id, uint32_t rdy);

/** Finish / requeue (delay in ms) / touch a message of a subscription. Not blocking:
 * the request is retried until answered. */
int
sl_client_fin(struct sl_client *c, uint64_t sub_id, uint64_t msg_id);
int
sl_client_req(struct sl_client *c, uint64_t sub_id, uint64_t msg_id, uint32_t delay_ms);
int
sl_client_touch(struct sl_client *c, uint64_t sub_id, uint64_t msg_id);

/** Set a subscription's channel consume position (kind: enum sl_wire_off_kind).
 * Blocking; returns 0 or a negative error. */
int
sl_client_set_offset(struct sl_client *c, uint64_t sub_id, uint8_t kind, uint64_t value);

/** Unsubscribe (CLS of that address). Blocking. */
int
sl_client_unsub(struct sl_client *c, uint64_t sub_id);

/**
 * Receive and handle whatever arrived, retransmit late requests, send a heartbeat when
 * due. Waits up to timeout_us for the first packet (0 = do not wait). Returns the number
 * of frames handled, or a negative error.
 */
int
sl_client_poll(struct sl_client *c, uint32_t timeout_us);

/**
 * The descriptor to watch for readability in an event loop (poll, epoll, libevent): when
 * it is readable, call sl_client_poll(c, 0) until it returns 0. The same descriptor for
 * the client's life (a leader switch reconnects it, never replaces it). Returns -1 for a
 * transport without one (SL_XPORT_DPDK: poll the client from the lcore's loop instead).
 * The application must not read from, write to or close it. Calling context: the client's
 * thread (any time after sl_client_open).
 */
int
sl_client_fd(const struct sl_client *c);

/**
 * Microseconds until the client needs sl_client_poll() although its descriptor stays
 * silent: the earliest retransmission, request timeout, busy-publish resend, heartbeat,
 * leader-switch deadline; 0 when work is waiting now (FINs or queued requests to send,
 * publishes in the send batch, a session reset or leader switch to run); UINT64_MAX when
 * nothing is due (poll when readable only). May be early, never late: an event loop polls
 * when the descriptor is readable or when this time has passed, whichever is first, and
 * asks again after every poll and after every other call on the client (a call may queue
 * work). Calling context: the client's thread; no syscall apart from reading the clock.
 */
uint64_t
sl_client_next_timer_us(const struct sl_client *c);

/* Counters for tools and benchmarks. */
struct sl_client_stats {
	uint64_t tx_frames;
	uint64_t rx_frames;
	uint64_t retries;
	uint64_t errors;	/* ERR answers */
	uint64_t busy_retries;	/* publishes sent again after a busy answer (SL_E_FULL,
				 * SL_E_WRITE_DISABLED, SL_E_QUORUM, SL_E_OUT_OF_ORDER), in
				 * seq order */
	uint64_t order_refusals;	/* SL_E_OUT_OF_ORDER answers: an earlier publish of
				 * the session had to go first */
	uint64_t timeouts;	/* requests given up: no answer in timeout_ms */
	uint64_t busy_failed;	/* publishes completed with a busy answer: at once with
				 * fail_busy, else when still refused at timeout_ms */
	uint64_t msgs;		/* MSG frames delivered to callbacks */
	uint64_t dup_msgs;	/* MSG frames for ids already being handled */
	uint64_t bad_frames;	/* undecodable frames received */
	uint64_t leader_switches;	/* moves to another broker (or a new session on the
				 * same one) after NOT_LEADER or a silent broker */
	uint64_t leader_resent;	/* requests sent again to the new leader */
	uint64_t metadata_asked;	/* METADATA requests sent */
	uint64_t srtt_us;	/* smoothed round trip of answers (0: none yet) */
	uint64_t rto_us;	/* first retransmission timeout of a new request (from srtt) */
};

void
sl_client_get_stats(const struct sl_client *c, struct sl_client_stats *st);

#endif /* SL_CLIENT_H */
