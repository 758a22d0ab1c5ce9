/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * sluice-nsqd, the NSQ compatibility gateway: the core shared by its TCP (protocol V2)
 * and HTTP front ends. One event loop (libevent), one thread: every function here runs
 * on the loop's thread. The gateway reaches the sluice node(s) with libsluice over kernel
 * UDP: one client (session) per node (publishing with one node, the HTTP API's channel
 * creation), and with several nodes one session per partition it works with, started at
 * that partition's leader (METADATA) and following it (libsluice's leader discovery): one
 * per (topic, partition) for publishing, one per (NSQ consumer, partition) for consuming.
 * A libsluice session talks to one node at a time, so a topic whose partitions lead on
 * different nodes needs a session per partition. It keeps its own view of the topics and
 * channels NSQ clients named through it (for /stats, /topics, /lookup, /metrics).
 *
 * Publishing is batched: the publishes of one topic issued during one turn of the loop
 * (from any NSQ connection) leave as one sluice MPUB when they fit a datagram, and each
 * publish's callback runs with that MPUB's answer (all or none).
 */
#ifndef SL_GW_H
#define SL_GW_H

#include <stddef.h>
#include <stdint.h>

#include <event2/event.h>

#include "client.h"
#include "err.h"

#define SL_GW_NODES_MAX 16
#define SL_GW_TOPICS_MAX 4096
#define SL_GW_CHANNELS_MAX 64	/* per topic, as seen by the gateway */
#define SL_GW_PARTS_MAX 64	/* partitions a SUB probes */
#define SL_GW_VERSION "1.3.0-sluice"	/* what nsqd-style "version" fields say */
#define SL_GW_LAT_BUCKETS 14		/* sluice round-trip histogram: finite buckets */
#define SL_GW_ERR_CAUSES 48		/* distinct error causes counted (then "other") */

struct sl_gw_conf {
	const char *sluice;		/* "A.B.C.D[,A.B.C.D...]" */
	uint16_t sluice_port;		/* 0 = SL_WIRE_UDP_PORT */
	const char *tcp_address;	/* HOST:PORT */
	const char *http_address;	/* HOST:PORT, "" = off */
	const char *lookupd_http_address; /* HOST:PORT, "" = off */
	const char *broadcast_address;	/* what /lookup announces; NULL = tcp host */
	uint32_t max_rdy_count;		/* nsqd --max-rdy-count, 2500 */
	uint32_t max_body_size;		/* nsqd --max-body-size, bytes */
	uint32_t msg_timeout_ms;	/* default msg_timeout */
	uint32_t max_msg_timeout_ms;
	uint32_t max_req_timeout_ms;
	uint32_t max_heartbeat_ms;
	uint32_t max_connections;
	uint32_t max_pending;		/* publishes awaiting their answer per connection */
	uint32_t max_output_bytes;	/* per connection, then back pressure */
};

struct sl_gw_node {
	struct sl_client *c;
	char ip[16];
	char addrs[SL_GW_NODES_MAX * 16 + 16]; /* this node first, then the others */
	int fd;				/* sl_client_fd(): the event loop watches it */
	struct event *ev;
	uint32_t max_msg;
};

/* A libsluice session for one partition (struct sl_gw_sess): started at the partition's
 * leader, given every --sluice address as a seed, following the leader. */
struct sl_gw_sess {
	struct sl_gw_sess *next, *prev;
	struct sl_gw *gw;
	struct sl_client *c;
	struct event *ev;
	uint16_t partition;
};

/* What METADATA told of a topic (sl_gw_meta). */
struct sl_gw_meta {
	uint16_t nparts;		/* the topic's partitions (at most SL_GW_PARTS_MAX used) */
	struct {
		uint32_t ip;		/* network order; 0 = unknown */
		uint16_t port;
		uint32_t epoch;
	} leader[SL_GW_PARTS_MAX];
	/* META v2 (every META answered was v2): the smallest max_record of any partition,
	 * UINT32_MAX when none has one (not replicated); 0: unknown (an older node) */
	uint32_t max_record;
};

struct sl_gw_channel {
	char name[SL_WIRE_NAME_MAX + 1];
	uint64_t message_count;		/* delivered through the gateway */
	uint64_t requeue_count;
	uint64_t timeout_count;
	uint64_t finish_count;
	uint32_t clients;		/* subscribed gateway connections */
};

struct sl_gw_topic {
	char name[SL_WIRE_NAME_MAX + 1];
	uint64_t message_count;		/* published through the gateway */
	uint64_t message_bytes;
	uint64_t pub_ok;		/* messages the node acknowledged */
	uint64_t pub_failed;		/* messages whose publish failed */
	struct pub_batch *batch;	/* publishes waiting for the end of the turn */
	/* with several nodes: batches go round robin to the partitions, each through its
	 * own session (opened at the first batch for it) */
	uint16_t nparts;		/* 0: not known yet (METADATA asked again later) */
	uint16_t rr;			/* the next batch's partition */
	uint64_t meta_ms;		/* last METADATA asked */
	/* the replica record bound of a batch (META v2 max_record, smallest of the
	 * partitions): UINT32_MAX none; 0 not known yet (the bound of a replicated topic
	 * is assumed, METADATA asked again after META_RETRY_MS) */
	uint32_t max_record;
	uint64_t rec_ms;		/* last METADATA asked for max_record */
	struct sl_gw_sess *ps[SL_GW_PARTS_MAX];
	uint32_t nchannels;
	uint32_t waiting_subs;		/* connections waiting for the topic to exist */
	struct sl_gw_channel ch[SL_GW_CHANNELS_MAX];
};

/* Counters of /metrics (what is not kept with the topics and channels). */
struct sl_gw_metrics {
	uint64_t conns_total;		/* TCP connections accepted */
	uint64_t http_requests;
	uint64_t sluice_pubs;		/* sluice PUB/MPUB requests sent */
	uint64_t sluice_pub_msgs;	/* messages in them */
	uint64_t lat_count;		/* sluice publish round trips (histogram) */
	uint64_t lat_sum_us;
	uint64_t lat_bucket[SL_GW_LAT_BUCKETS];	/* not cumulative: <= bound i */
	uint64_t sluice_err[SL_E_MAX - SL_E_BASE + 1]; /* failed publishes by code; [0]: errno */
	uint32_t ncauses;
	struct {
		char cause[24];
		uint64_t n;
	} err[SL_GW_ERR_CAUSES];	/* error frames sent to NSQ clients, by code */
	uint64_t err_other;
	uint64_t sess_opened;		/* partition sessions opened */
	uint64_t meta_asked;		/* METADATA requests the gateway sent */
	struct sl_client_stats closed;	/* what the closed partition sessions counted */
};

/* Upper bounds of the latency buckets, in microseconds. */
extern const uint32_t sl_gw_lat_bounds_us[SL_GW_LAT_BUCKETS];

struct sl_gw;
struct pub_ctx;
struct pub_batch;
typedef void (*sl_gw_topic_cb_t)(struct sl_gw *gw, const char *topic);

struct sl_gw {
	struct sl_gw_conf conf;
	struct event_base *base;
	struct sl_gw_node node[SL_GW_NODES_MAX];
	uint32_t nnodes;
	uint32_t max_msg;		/* smallest of the nodes' */
	struct sl_gw_sess *sessions;	/* partition sessions */
	uint32_t nsessions;
	int meta_fd;			/* UDP socket for METADATA */
	uint64_t meta_cookie;
	struct sl_gw_topic **topic;
	uint32_t ntopics;
	struct event *tick;		/* the clients' next timer (sl_client_next_timer_us) */
	struct event *kick;		/* end of the turn: send batches, poll the clients */
	int kicked;
	struct pub_batch *dirty;	/* batches holding publishes */
	uint64_t start_time;		/* unix seconds */
	uint64_t pubs, pub_msgs, pub_errors;
	struct pub_ctx *free_ctx;	/* recycled publish contexts */
	struct sl_gw_metrics m;
	sl_gw_topic_cb_t on_topic_exists; /* a publish through the gateway succeeded */
	void *tcp;			/* the TCP front end (tcp.c) */
	void *http;			/* the HTTP front ends (http.c) */
	char tcp_host[64];
	uint16_t tcp_port, http_port;
	char hostname[64];
};

/* One publish (PUB, or MPUB of count <= SL_WIRE_MPUB_MAX messages that fit a datagram). */
typedef void (*sl_gw_pub_cb_t)(void *arg, int err);

/**
 * Validate conf, open one libsluice session per node and hook them into base.
 * Returns 0 or a negative error (message on stderr). Calling context: main thread,
 * before the loop runs.
 */
int
sl_gw_open(struct sl_gw *gw, const struct sl_gw_conf *conf, struct event_base *base);

/** Close the sessions and free everything. Calling context: main thread, loop stopped. */
void
sl_gw_close(struct sl_gw *gw);

/** 1 if name is a valid NSQ topic/channel name (nsqd's rule). Any context. */
int
sl_gw_nsq_name_ok(const char *name, size_t len);

/** 1 if name is also valid for sluice (no leading '.'). Any context. */
int
sl_gw_sluice_name_ok(const char *name, size_t len);

/** The gateway's record of a topic, created when create != 0 (NULL when full or not
 * found). Calling context: loop thread. */
struct sl_gw_topic *
sl_gw_topic_get(struct sl_gw *gw, const char *name, int create);

/** The record of a channel of t, created when create != 0. Calling context: loop. */
struct sl_gw_channel *
sl_gw_channel_get(struct sl_gw_topic *t, const char *name, int create);

/**
 * Publish count messages to topic (any partition), asynchronously: the messages are
 * copied into the topic's batch, sent with the other publishes of this turn of the loop
 * as one sluice PUB/MPUB (sl_gw_kick), and cb(arg, err) runs later from the loop with 0
 * or a negative SL_E_* / errno (the answer of the MPUB that carried them). The messages
 * must fit one sluice datagram and replica record (sl_gw_chunk). Returns 0 (cb will
 * run) or a negative error (cb will not run: -SL_E_LIMIT when the gateway's topic table
 * is full, -SL_E_TOO_BIG, -ENOMEM). Calling context: loop thread (a full batch is sent
 * at once, which may poll the node while libsluice's window is full, running other
 * callbacks, including those of earlier publishes).
 */
int
sl_gw_publish(struct sl_gw *gw, const char *topic, uint32_t count, const void *const *datas,
	      const uint32_t *lens, sl_gw_pub_cb_t cb, void *arg);

/**
 * How many of the n messages (lens[]) starting at the first fit one sluice MPUB
 * datagram for topic, and the replica record its leader makes of them when it is
 * replicated (docs/nsq-gateway.md, "Batches toward a replicated topic"): the bound META
 * v2 gives (max_record), asked once per topic (blocking up to META_WAIT_MS, again after
 * META_RETRY_MS while the topic does not exist or no node answered), else that of a
 * replicated topic; at least 1. Calling context: loop thread.
 */
uint32_t
sl_gw_chunk(struct sl_gw *gw, const char *topic, const uint32_t *lens, uint32_t n);

/**
 * Ask the nodes with METADATA which partitions topic has and who leads each: every node
 * at once, up to META_WAIT_MS for the answers; per partition the node that says it leads
 * (highest epoch), else the leader the others name. Blocking (up to the wait). Returns 0
 * with *m, -SL_E_TOPIC when every node that answered does not know the topic, or
 * -SL_E_TIMEOUT (no answer). Calling context: loop thread.
 */
int
sl_gw_meta(struct sl_gw *gw, const char *topic, struct sl_gw_meta *m);

/**
 * Open a session for (topic, partition) at the leader m names (else the first node),
 * every node a seed so that it follows the partition's leader, watched by the loop.
 * Blocking (HELLO). Returns the session or NULL (message counted, errno set). Calling
 * context: loop thread, never from a callback of a partition session.
 */
struct sl_gw_sess *
sl_gw_sess_open(struct sl_gw *gw, const struct sl_gw_meta *m, uint16_t partition);

/** Close a partition session (CLS: the node requeues what it delivered and was not
 * finished). Calling context: loop thread, never from one of its own callbacks. */
void
sl_gw_sess_close(struct sl_gw *gw, struct sl_gw_sess *s);

/** Sum of the stats of the partition sessions, live and closed (the nodes' sessions not
 * included). Calling context: loop thread. */
void
sl_gw_sess_stats(const struct sl_gw *gw, struct sl_client_stats *st);

/** Run the nodes' clients (answers, deliveries, retransmits), then arm the timer for
 * the earliest sl_client_next_timer_us(). Calling context: loop. */
void
sl_gw_poll(struct sl_gw *gw);

/**
 * Ask for the end-of-turn work (send the publish batches, poll the clients, re-arm the
 * timer) once the callbacks already due in this turn of the loop have run. Call it after
 * any use of a node's client outside sl_gw_poll (FIN, REQ, RDY ... queue work). Cheap
 * when already asked. Calling context: loop thread.
 */
void
sl_gw_kick(struct sl_gw *gw);

/** Count an error frame sent to an NSQ client under its code ("E_BAD_TOPIC"): the
 * cause label of sluice_nsqd_errors_total. Calling context: loop thread. */
void
sl_gw_count_error(struct sl_gw *gw, const char *code, size_t len);

/** The label value of a sluice error (-SL_E_* or -errno): "not_leader", "errno" ...
 * Any context. */
const char *
sl_gw_err_name(int err);

/** Millisecond monotonic clock. Any context. */
uint64_t
sl_gw_now_ms(void);

#endif /* SL_GW_H */
