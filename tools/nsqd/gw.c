/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * sluice-nsqd core: the libsluice sessions (one per node, and with several nodes one per
 * partition in use) inside the libevent loop, the gateway's registry of topics and
 * channels, METADATA, publishing.
 *
 * Partitions led by different nodes: a libsluice session talks to one node at a time and
 * follows the leader of the partition it last met NOT_LEADER for, so with several nodes
 * the gateway gives every partition it publishes to or consumes from a session of its
 * own (struct sl_gw_sess), started at the leader METADATA names and given every node as
 * a seed: it follows that partition's leader through a failover by itself.
 *
 * Each client is polled when its descriptor (sl_client_fd) is readable, and when its
 * next timer (sl_client_next_timer_us: retransmission, timeout, heartbeat, leader
 * switch) passes: one libevent timer armed for the earliest of the clients' after every
 * poll (no later than INFLIGHT_POLL_US while requests are in flight). Work queued by
 * other calls (a FIN, a publish) is picked up by the kick, an event
 * made active once per turn of the loop (sl_gw_kick).
 *
 * Publish batching: sl_gw_publish copies the messages into the topic's batch (one
 * datagram's worth) and kicks; the kick, after every callback already due in this turn
 * (so the PUBs of many NSQ connections read in the same turn), sends each batch as one
 * sluice PUB or MPUB. A batch that would overflow is sent at once. The publish context
 * of a batch lists the callbacks of its publishes, in order; the MPUB's answer (all or
 * none) goes to each. Contexts and batches are allocated once and recycled.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "err.h"
#include "gw.h"
#include "wire.h"

#define IDLE_TICK_US 1000000	/* timer when no client has one (never late: may be early) */
/* While a client has requests in flight, poll it at least this often anyway: measured on
 * the shared 2-core VM (tools/bench/nsq-gateway, MPUB x32, alternating runs), relying on
 * readability and sl_client_next_timer_us alone halved the gateway/direct ratio (median
 * 0.35 in 8 runs against 0.77 with this poll and 0.88 for the old 5 ms tick); the cause
 * was not found (docs/nsq-gateway.md, "Not done yet"). */
#define INFLIGHT_POLL_US 5000
/* sluice frame budget from WELCOME's max_msg (docs/protocol.md, "Largest message"):
 * max_msg = D + 28 - 140, so the largest UDP payload is D = max_msg + 112 */
#define DGRAM_FROM_MAX_MSG 112
/* A replicated topic's leader sends a publish to its followers as one record of the
 * messages' log encodings, 32 bytes + the length rounded up to 8 each (docs/storage.md),
 * in one replica datagram: at most min(8192, MTU - 28 - 108) - 128 bytes (replication/
 * repl.c, dataplane/worker.c), D - 236 with D the UDP payload above, else the publish is
 * answered "message too large". An MPUB of many small messages is 3x larger there than on
 * the wire, so batches and chunks are bounded by that too: by the max_record of META v2
 * (docs/protocol.md), or for nodes that do not send it by the bound computed here. */
#define STORED_SIZE(len) SL_WIRE_META_REC_SIZE(len)
#define REPL_DGRAM_MAX 8192
#define REPL_FROM_DGRAM 236
#define META_WAIT_MS 150	/* sl_gw_meta: the wait for the nodes' answers */
#define META_RETRY_MS 1000	/* a topic METADATA did not know: asked again after this */
#define SESS_MAX 4096		/* partition sessions open at once */

/* One sluice publish in flight: the NSQ publishes it carries. */
struct pub_ctx {
	struct pub_ctx *next;		/* free list */
	struct sl_gw *gw;
	struct sl_gw_topic *t;
	uint64_t sent_us;
	uint32_t count;			/* messages */
	uint32_t nw;			/* publishes (callbacks) */
	struct {
		sl_gw_pub_cb_t cb;
		void *arg;
	} w[SL_WIRE_MPUB_MAX];
};

/* A topic's publishes waiting for the end of the turn. */
struct pub_batch {
	struct pub_batch *next_dirty;
	struct sl_gw_topic *t;
	struct pub_ctx *ctx;		/* NULL while empty */
	int dirty;
	uint32_t n;			/* messages */
	uint32_t used;			/* bytes in buf */
	uint64_t payload;		/* MPUB payload: 4 + len per message */
	uint64_t stored;		/* replicated record: STORED_SIZE(len) per message */
	const void *datas[SL_WIRE_MPUB_MAX];
	uint32_t lens[SL_WIRE_MPUB_MAX];
	uint8_t buf[];
};

const uint32_t sl_gw_lat_bounds_us[SL_GW_LAT_BUCKETS] = {
	100, 250, 500, 1000, 2500, 5000, 10000, 25000, 50000, 100000, 250000, 500000,
	1000000, 5000000,
};

static const char *const err_names[SL_E_MAX - SL_E_BASE] = {
	"errno", "malformed", "version", "opcode", "session", "topic", "partition",
	"channel", "full", "too_big", "seq_old", "not_leader", "write_disabled", "quorum",
	"epoch", "msg_id", "exists", "limit", "name", "io", "pub_arg", "internal", "inval",
	"timeout", "capacity", "auth", "denied", "out_of_order",
};

static uint64_t
now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

const char *
sl_gw_err_name(int err)
{
	int code = -err;

	if (code > SL_E_BASE && code < SL_E_MAX)
		return err_names[code - SL_E_BASE];
	return "errno";
}

static uint32_t
err_index(int err)
{
	int code = -err;

	return code > SL_E_BASE && code < SL_E_MAX ? (uint32_t)(code - SL_E_BASE) : 0;
}

void
sl_gw_count_error(struct sl_gw *gw, const char *code, size_t len)
{
	struct sl_gw_metrics *m = &gw->m;
	uint32_t i;

	if (len == 0 || len >= sizeof(m->err[0].cause)) {
		m->err_other++;
		return;
	}
	for (i = 0; i < m->ncauses; i++)
		if (strncmp(m->err[i].cause, code, len) == 0 && m->err[i].cause[len] == '\0') {
			m->err[i].n++;
			return;
		}
	if (m->ncauses == SL_GW_ERR_CAUSES) {
		m->err_other++;
		return;
	}
	memcpy(m->err[m->ncauses].cause, code, len);
	m->err[m->ncauses].cause[len] = '\0';
	m->err[m->ncauses++].n = 1;
}

uint64_t
sl_gw_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

int
sl_gw_nsq_name_ok(const char *name, size_t len)
{
	static const char eph[] = "#ephemeral";
	size_t i, n = len;

	if (len < 1 || len > 64)
		return 0;
	if (len > sizeof(eph) - 1 && memcmp(name + len - (sizeof(eph) - 1), eph,
					     sizeof(eph) - 1) == 0)
		n = len - (sizeof(eph) - 1);
	for (i = 0; i < n; i++) {
		char ch = name[i];

		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		      (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' || ch == '-'))
			return 0;
	}
	return 1;
}

int
sl_gw_sluice_name_ok(const char *name, size_t len)
{
	return sl_wire_check_name(name, len) == 0;
}

struct sl_gw_topic *
sl_gw_topic_get(struct sl_gw *gw, const char *name, int create)
{
	struct sl_gw_topic *t;
	uint32_t i;

	for (i = 0; i < gw->ntopics; i++)
		if (strcmp(gw->topic[i]->name, name) == 0)
			return gw->topic[i];
	if (!create || gw->ntopics == SL_GW_TOPICS_MAX || strlen(name) > SL_WIRE_NAME_MAX)
		return NULL;
	t = calloc(1, sizeof(*t));
	if (t == NULL)
		return NULL;
	strcpy(t->name, name);
	gw->topic[gw->ntopics++] = t;
	return t;
}

struct sl_gw_channel *
sl_gw_channel_get(struct sl_gw_topic *t, const char *name, int create)
{
	struct sl_gw_channel *c;
	uint32_t i;

	for (i = 0; i < t->nchannels; i++)
		if (strcmp(t->ch[i].name, name) == 0)
			return &t->ch[i];
	if (!create || t->nchannels == SL_GW_CHANNELS_MAX || strlen(name) > SL_WIRE_NAME_MAX)
		return NULL;
	c = &t->ch[t->nchannels++];
	memset(c, 0, sizeof(*c));
	strcpy(c->name, name);
	return c;
}

static void flush_batches(struct sl_gw *gw);

void
sl_gw_poll(struct sl_gw *gw)
{
	uint64_t due = IDLE_TICK_US, t;
	struct timeval tv;
	uint32_t i;
	int n, rounds;

	struct sl_gw_sess *s;

	for (i = 0; i < gw->nnodes; i++)
		for (rounds = 0; rounds < 64; rounds++) {
			n = sl_client_poll(gw->node[i].c, 0);
			if (n <= 0)
				break;
		}
	/* callbacks never close a partition session (sl_gw_sess_close's contract) */
	for (s = gw->sessions; s != NULL; s = s->next)
		for (rounds = 0; rounds < 64; rounds++) {
			n = sl_client_poll(s->c, 0);
			if (n <= 0)
				break;
		}
	for (i = 0; i < gw->nnodes; i++) {
		t = sl_client_next_timer_us(gw->node[i].c);
		if (t > INFLIGHT_POLL_US && sl_client_in_flight(gw->node[i].c) > 0)
			t = INFLIGHT_POLL_US;
		if (t < due)
			due = t;
	}
	for (s = gw->sessions; s != NULL; s = s->next) {
		t = sl_client_next_timer_us(s->c);
		if (t > INFLIGHT_POLL_US && sl_client_in_flight(s->c) > 0)
			t = INFLIGHT_POLL_US;
		if (t < due)
			due = t;
	}
	if (due == 0) { /* work waiting now (FINs past a full window ...): next turn */
		sl_gw_kick(gw);
		return;
	}
	tv.tv_sec = (time_t)(due / 1000000);
	tv.tv_usec = (suseconds_t)(due % 1000000);
	evtimer_add(gw->tick, &tv);
}

/* One partition session readable: poll it, then arm the timer for every session (a scan
 * of their next timers, no syscall) as sl_gw_poll does. */
static void
on_sess_readable(evutil_socket_t fd, short what, void *arg)
{
	struct sl_gw_sess *s = arg;
	struct sl_gw *gw = s->gw;
	uint64_t due = IDLE_TICK_US, t;
	struct sl_gw_sess *x;
	struct timeval tv;
	uint32_t i;
	int rounds;

	for (rounds = 0; rounds < 64; rounds++)
		if (sl_client_poll(s->c, 0) <= 0)
			break;
	for (i = 0; i < gw->nnodes; i++) {
		t = sl_client_next_timer_us(gw->node[i].c);
		if (t > INFLIGHT_POLL_US && sl_client_in_flight(gw->node[i].c) > 0)
			t = INFLIGHT_POLL_US;
		due = t < due ? t : due;
	}
	for (x = gw->sessions; x != NULL; x = x->next) {
		t = sl_client_next_timer_us(x->c);
		if (t > INFLIGHT_POLL_US && sl_client_in_flight(x->c) > 0)
			t = INFLIGHT_POLL_US;
		due = t < due ? t : due;
	}
	if (due == 0) {
		sl_gw_kick(gw);
		return;
	}
	tv.tv_sec = (time_t)(due / 1000000);
	tv.tv_usec = (suseconds_t)(due % 1000000);
	evtimer_add(gw->tick, &tv);
}

void
sl_gw_kick(struct sl_gw *gw)
{
	if (gw->kicked || gw->kick == NULL)
		return;
	gw->kicked = 1;
	event_active(gw->kick, EV_TIMEOUT, 1);
}

static void
on_kick(evutil_socket_t fd, short what, void *arg)
{
	struct sl_gw *gw = arg;

	gw->kicked = 0;
	flush_batches(gw);
	sl_gw_poll(gw);
}

static void
on_node_readable(evutil_socket_t fd, short what, void *arg)
{
	struct sl_gw *gw = arg;

	sl_gw_poll(gw);
}

static void
on_tick(evutil_socket_t fd, short what, void *arg)
{
	struct sl_gw *gw = arg;

	sl_gw_poll(gw);
}

/* n->addrs: node k first, then the others (the client's seeds: with two or more it
 * follows the leader). */
static void
node_addrs(struct sl_gw *gw, uint32_t k, const char (*ips)[16], uint32_t nips)
{
	struct sl_gw_node *n = &gw->node[k];
	size_t o;
	uint32_t i;

	o = (size_t)snprintf(n->addrs, sizeof(n->addrs), "%s", ips[k]);
	for (i = 0; i < nips; i++)
		if (i != k && o < sizeof(n->addrs))
			o += (size_t)snprintf(n->addrs + o, sizeof(n->addrs) - o, ",%s", ips[i]);
}

static int
node_open(struct sl_gw *gw, struct sl_gw_node *n, const char *ip)
{
	struct sl_client_conf cc = { .xport = SL_XPORT_UDP };

	snprintf(n->ip, sizeof(n->ip), "%.15s", ip);
	cc.broker_ip = n->addrs;
	cc.broker_port = gw->conf.sluice_port;
	n->c = sl_client_open(&cc);
	if (n->c == NULL) {
		fprintf(stderr, "sluice-nsqd: no session with %s:%u: %s\n", ip, cc.broker_port,
			sl_strerror(errno));
		return -1;
	}
	n->fd = sl_client_fd(n->c);
	n->max_msg = sl_client_welcome(n->c)->max_msg;
	if (n->fd < 0) {
		fprintf(stderr, "sluice-nsqd: %s: the client has no descriptor\n", ip);
		return -1;
	}
	n->ev = event_new(gw->base, n->fd, EV_READ | EV_PERSIST, on_node_readable, gw);
	if (n->ev == NULL || event_add(n->ev, NULL) != 0)
		return -1;
	return 0;
}

static int
parse_ips(struct sl_gw *gw, const char *list)
{
	char buf[SL_GW_NODES_MAX * 16 + 16], *tok, *save = NULL;
	char ips[SL_GW_NODES_MAX][16];
	struct in_addr a;
	uint32_t n = 0, k;

	if (list == NULL || strlen(list) >= sizeof(buf)) {
		fprintf(stderr, "sluice-nsqd: --sluice: at most %d addresses\n", SL_GW_NODES_MAX);
		return -1;
	}
	strcpy(buf, list);
	for (tok = strtok_r(buf, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
		if (inet_pton(AF_INET, tok, &a) != 1 || n == SL_GW_NODES_MAX) {
			fprintf(stderr, "sluice-nsqd: --sluice: bad address \"%s\"\n", tok);
			return -1;
		}
		snprintf(ips[n++], sizeof(ips[0]), "%s", tok);
	}
	if (n == 0) {
		fprintf(stderr, "sluice-nsqd: --sluice: no address\n");
		return -1;
	}
	for (k = 0; k < n; k++) {
		node_addrs(gw, k, (const char (*)[16])ips, n);
		if (node_open(gw, &gw->node[k], ips[k]) != 0) {
			if (gw->node[k].c != NULL)
				gw->nnodes++;
			return -1;
		}
		gw->nnodes++;
	}
	return 0;
}

/* ---- METADATA and partition sessions ---- */

static uint16_t
sluice_port(const struct sl_gw *gw)
{
	return gw->conf.sluice_port != 0 ? gw->conf.sluice_port : SL_WIRE_UDP_PORT;
}

/* One META answer into m: per partition the entry of a node that leads it (highest
 * epoch) over an entry naming another node, then the highest epoch. */
static void
meta_take(struct sl_gw_meta *m, uint8_t *claimed, const struct sl_wire_meta *meta,
	  uint16_t port)
{
	struct sl_wire_meta_entry e;
	uint8_t lead;
	uint16_t i;

	if (meta->nparts > m->nparts)
		m->nparts = meta->nparts;
	for (i = 0; i < meta->count; i++) {
		sl_wire_meta_get(meta, i, &e);
		if (meta->v2 && e.max_record != 0 && e.max_record < m->max_record)
			m->max_record = e.max_record;
		if (e.partition >= SL_GW_PARTS_MAX || e.leader_ip == 0)
			continue;
		lead = (e.flags & SL_WIRE_META_F_LEADER) != 0;
		if (m->leader[e.partition].ip != 0 &&
		    (claimed[e.partition] > lead ||
		     (claimed[e.partition] == lead && m->leader[e.partition].epoch >= e.epoch)))
			continue;
		claimed[e.partition] = lead;
		m->leader[e.partition].ip = e.leader_ip;
		m->leader[e.partition].port = e.leader_port != 0 ? e.leader_port : port;
		m->leader[e.partition].epoch = e.epoch;
	}
}

int
sl_gw_meta(struct sl_gw *gw, const char *topic, struct sl_gw_meta *m)
{
	uint8_t frame[SL_WIRE_HDR_LEN + 3 + SL_WIRE_NAME_MAX], rx[4096];
	uint8_t claimed[SL_GW_PARTS_MAX] = {0};
	struct sl_wire_hdr h = { .version = SL_WIRE_VERSION }, rh;
	uint32_t answered = 0, metas = 0, unknown = 0, i;
	struct sockaddr_in to = { .sin_family = AF_INET };
	struct pollfd pfd = { .fd = gw->meta_fd, .events = POLLIN };
	struct sl_wire_meta meta;
	struct sl_wire_err err;
	uint32_t v1 = 0;
	uint64_t end, now;
	ssize_t r;
	int n;

	memset(m, 0, sizeof(*m));
	m->max_record = UINT32_MAX;
	if (gw->meta_fd < 0)
		return -SL_E_TIMEOUT;
	h.cookie = ++gw->meta_cookie;
	h.flags = SL_WIRE_F_META2;	/* older nodes ignore it and answer META v1 */
	n = sl_wire_encode_metareq(frame, sizeof(frame), &h, 0, topic);
	if (n < 0)
		return n;
	to.sin_port = htons(sluice_port(gw));
	for (i = 0; i < gw->nnodes; i++) {
		if (inet_pton(AF_INET, gw->node[i].ip, &to.sin_addr) != 1)
			continue;
		(void)sendto(gw->meta_fd, frame, (size_t)n, 0, (struct sockaddr *)&to, sizeof(to));
		gw->m.meta_asked++;
	}
	end = sl_gw_now_ms() + META_WAIT_MS;
	while (answered < gw->nnodes && (now = sl_gw_now_ms()) < end) {
		if (poll(&pfd, 1, (int)(end - now)) <= 0)
			continue;
		r = recv(gw->meta_fd, rx, sizeof(rx), MSG_DONTWAIT);
		if (r <= 0 || sl_wire_decode_hdr(rx, (uint32_t)r, &rh) != 0 ||
		    rh.cookie != h.cookie)
			continue; /* a late answer to an earlier question */
		answered++;
		if (rh.opcode == SL_OP_ERR) {
			if (sl_wire_decode_err(rx + SL_WIRE_HDR_LEN, rh.body_len, &err) == 0 &&
			    err.code == SL_E_TOPIC)
				unknown++;
		} else if (rh.opcode == SL_OP_META &&
			   sl_wire_decode_meta(rx + SL_WIRE_HDR_LEN, rh.body_len, rh.flags,
					       &meta) == 0) {
			meta_take(m, claimed, &meta, sluice_port(gw));
			metas++;
			v1 += !meta.v2;
		}
	}
	if (v1 > 0 || metas == 0)
		m->max_record = 0;	/* not known from every node */
	if (metas > 0 && m->nparts > 0)
		return 0;
	return unknown > 0 ? -SL_E_TOPIC : -SL_E_TIMEOUT;
}

struct sl_gw_sess *
sl_gw_sess_open(struct sl_gw *gw, const struct sl_gw_meta *m, uint16_t partition)
{
	char addrs[(SL_GW_NODES_MAX + 1) * 24], ip[INET_ADDRSTRLEN];
	struct sl_client_conf cc = { .xport = SL_XPORT_UDP };
	struct sl_gw_sess *s;
	struct in_addr a;
	size_t o = 0;
	uint32_t i;

	if (gw->nsessions >= SESS_MAX) {
		errno = ENOSPC;
		return NULL;
	}
	/* the partition's leader first, then every node: the client's seeds */
	if (m != NULL && partition < SL_GW_PARTS_MAX && m->leader[partition].ip != 0) {
		a.s_addr = m->leader[partition].ip;
		if (inet_ntop(AF_INET, &a, ip, sizeof(ip)) != NULL)
			o = (size_t)snprintf(addrs, sizeof(addrs), "%s:%u", ip,
					     m->leader[partition].port);
	}
	for (i = 0; i < gw->nnodes && o < sizeof(addrs); i++)
		o += (size_t)snprintf(addrs + o, sizeof(addrs) - o, "%s%s:%u", o > 0 ? "," : "",
				      gw->node[i].ip, sluice_port(gw));
	s = calloc(1, sizeof(*s));
	if (s == NULL)
		return NULL;
	s->gw = gw;
	s->partition = partition;
	cc.broker_ip = addrs;
	cc.broker_port = gw->conf.sluice_port;
	s->c = sl_client_open(&cc);
	if (s->c == NULL) {
		free(s);
		return NULL;
	}
	s->ev = event_new(gw->base, sl_client_fd(s->c), EV_READ | EV_PERSIST, on_sess_readable,
			  s);
	if (s->ev == NULL || event_add(s->ev, NULL) != 0) {
		if (s->ev != NULL)
			event_free(s->ev);
		sl_client_close(s->c);
		free(s);
		errno = ENOMEM;
		return NULL;
	}
	s->next = gw->sessions;
	if (gw->sessions != NULL)
		gw->sessions->prev = s;
	gw->sessions = s;
	gw->nsessions++;
	gw->m.sess_opened++;
	return s;
}

static void
stats_add(struct sl_client_stats *sum, const struct sl_client_stats *st)
{
	sum->tx_frames += st->tx_frames;
	sum->rx_frames += st->rx_frames;
	sum->retries += st->retries;
	sum->errors += st->errors;
	sum->busy_retries += st->busy_retries;
	sum->order_refusals += st->order_refusals;
	sum->timeouts += st->timeouts;
	sum->busy_failed += st->busy_failed;
	sum->msgs += st->msgs;
	sum->dup_msgs += st->dup_msgs;
	sum->bad_frames += st->bad_frames;
	sum->leader_switches += st->leader_switches;
	sum->leader_resent += st->leader_resent;
	sum->metadata_asked += st->metadata_asked;
}

void
sl_gw_sess_close(struct sl_gw *gw, struct sl_gw_sess *s)
{
	struct sl_client_stats st;

	if (s == NULL)
		return;
	sl_client_get_stats(s->c, &st);
	stats_add(&gw->m.closed, &st);
	event_free(s->ev);
	if (s->prev != NULL)
		s->prev->next = s->next;
	else
		gw->sessions = s->next;
	if (s->next != NULL)
		s->next->prev = s->prev;
	gw->nsessions--;
	sl_client_close(s->c);
	free(s);
}

void
sl_gw_sess_stats(const struct sl_gw *gw, struct sl_client_stats *sum)
{
	struct sl_client_stats st;
	const struct sl_gw_sess *s;

	*sum = gw->m.closed;
	for (s = gw->sessions; s != NULL; s = s->next) {
		sl_client_get_stats(s->c, &st);
		stats_add(sum, &st);
	}
}

static int
conf_check(const struct sl_gw_conf *c)
{
	if (c->max_rdy_count == 0 || c->max_rdy_count > 1000000 || c->max_body_size < 64 ||
	    c->max_body_size > (1u << 30) || c->msg_timeout_ms < 1000 ||
	    c->msg_timeout_ms > c->max_msg_timeout_ms || c->max_heartbeat_ms < 1000 ||
	    c->max_connections == 0 || c->max_pending == 0 || c->max_pending > 65536 ||
	    c->max_output_bytes < 65536 || c->tcp_address == NULL)
		return -1;
	return 0;
}

int
sl_gw_open(struct sl_gw *gw, const struct sl_gw_conf *conf, struct event_base *base)
{
	uint32_t i;
	int rc = -1;

	memset(gw, 0, sizeof(*gw));
	gw->conf = *conf;
	gw->base = base;
	gw->start_time = (uint64_t)time(NULL);
	if (conf_check(conf) != 0) {
		fprintf(stderr, "sluice-nsqd: invalid configuration\n");
		goto out;
	}
	if (gethostname(gw->hostname, sizeof(gw->hostname) - 1) != 0)
		strcpy(gw->hostname, "localhost");
	gw->topic = calloc(SL_GW_TOPICS_MAX, sizeof(*gw->topic));
	if (gw->topic == NULL)
		goto out;
	gw->meta_fd = -1;
	if (parse_ips(gw, conf->sluice) != 0)
		goto out;
	gw->meta_fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	gw->meta_cookie = ((uint64_t)getpid() << 40) ^ (now_us() << 8);
	gw->max_msg = UINT32_MAX;
	for (i = 0; i < gw->nnodes; i++)
		if (gw->node[i].max_msg < gw->max_msg)
			gw->max_msg = gw->node[i].max_msg;
	gw->tick = evtimer_new(base, on_tick, gw);
	gw->kick = event_new(base, -1, 0, on_kick, gw);
	if (gw->tick == NULL || gw->kick == NULL)
		goto out;
	sl_gw_poll(gw);
	rc = 0;
out:
	return rc;
}

void
sl_gw_close(struct sl_gw *gw)
{
	uint32_t i;

	flush_batches(gw);
	if (gw->tick != NULL)
		event_free(gw->tick);
	if (gw->kick != NULL)
		event_free(gw->kick);
	gw->kick = NULL;
	while (gw->sessions != NULL) {
		(void)sl_client_flush(gw->sessions->c, 1000);
		sl_gw_sess_close(gw, gw->sessions);
	}
	if (gw->meta_fd >= 0)
		close(gw->meta_fd);
	for (i = 0; i < gw->nnodes; i++) {
		if (gw->node[i].ev != NULL)
			event_free(gw->node[i].ev);
		(void)sl_client_flush(gw->node[i].c, 1000);
		sl_client_close(gw->node[i].c);
	}
	for (i = 0; i < gw->ntopics; i++) {
		free(gw->topic[i]->batch);
		free(gw->topic[i]);
	}
	while (gw->free_ctx != NULL) {
		struct pub_ctx *p = gw->free_ctx;

		gw->free_ctx = p->next;
		free(p);
	}
	free(gw->topic);
	memset(gw, 0, sizeof(*gw));
}

/* the replicated record budget (STORED_SIZE) */
static uint64_t
stored_budget(const struct sl_gw *gw)
{
	uint64_t d = (uint64_t)gw->max_msg + DGRAM_FROM_MAX_MSG;

	if (d > REPL_DGRAM_MAX + REPL_FROM_DGRAM - 128)
		d = REPL_DGRAM_MAX + REPL_FROM_DGRAM - 128;
	return d - REPL_FROM_DGRAM;
}

/* What META said of t's replica record bound (META v2 from every node), taken. */
static void
topic_take_meta(struct sl_gw_topic *t, const struct sl_gw_meta *m)
{
	if (m->max_record != 0)
		t->max_record = m->max_record;
}

/* t's replica record budget: the max_record of META v2 (UINT64_MAX: not replicated),
 * asked at the first publish and again META_RETRY_MS later while not known (the topic
 * does not exist yet, no answer); the replicated bound until then, and for nodes that
 * answer META v1. */
static uint64_t
topic_budget(struct sl_gw *gw, struct sl_gw_topic *t)
{
	struct sl_gw_meta m;
	uint64_t now;

	if (t->max_record == 0) {
		now = sl_gw_now_ms();
		if (t->rec_ms == 0 || now - t->rec_ms >= META_RETRY_MS) {
			t->rec_ms = now | 1;
			if (sl_gw_meta(gw, t->name, &m) == 0) {
				topic_take_meta(t, &m);
				if (t->max_record == 0) /* an older node: do not ask again */
					t->max_record = (uint32_t)stored_budget(gw);
			}
		}
	}
	if (t->max_record == UINT32_MAX)
		return UINT64_MAX;
	return t->max_record != 0 ? t->max_record : stored_budget(gw);
}

uint32_t
sl_gw_chunk(struct sl_gw *gw, const char *topic, const uint32_t *lens, uint32_t n)
{
	struct sl_gw_topic *t = sl_gw_topic_get(gw, topic, 1);
	uint64_t budget, used = 0, stored = 0;
	uint64_t sbudget = t != NULL ? topic_budget(gw, t) : stored_budget(gw);
	size_t tlen = strlen(topic);
	uint32_t i;

	/* header 32, partition/topic_len/flags 4, topic, count 2 */
	budget = (uint64_t)gw->max_msg + DGRAM_FROM_MAX_MSG - 32 - 4 - tlen - 2;
	for (i = 0; i < n && i < SL_WIRE_MPUB_MAX; i++) {
		if (used + 4 + lens[i] > budget || stored + STORED_SIZE(lens[i]) > sbudget)
			break;
		used += 4 + lens[i];
		stored += STORED_SIZE(lens[i]);
	}
	return i > 0 ? i : 1;
}

static struct pub_ctx *
ctx_get(struct sl_gw *gw)
{
	struct pub_ctx *p = gw->free_ctx;

	if (p != NULL)
		gw->free_ctx = p->next;
	else if ((p = malloc(sizeof(*p))) == NULL)
		return NULL;
	p->gw = gw;
	p->count = 0;
	p->nw = 0;
	return p;
}

static void
ctx_put(struct sl_gw *gw, struct pub_ctx *p)
{
	p->next = gw->free_ctx;
	gw->free_ctx = p;
}

static void
lat_record(struct sl_gw_metrics *m, uint64_t us)
{
	uint32_t i;

	for (i = 0; i < SL_GW_LAT_BUCKETS && us > sl_gw_lat_bounds_us[i]; i++)
		;
	if (i < SL_GW_LAT_BUCKETS)
		m->lat_bucket[i]++;
	m->lat_count++;
	m->lat_sum_us += us;
}

/* The answer of one sluice publish: to each NSQ publish it carried, in order. */
static void
ctx_done(struct pub_ctx *p, int err)
{
	struct sl_gw *gw = p->gw;
	uint32_t i;

	if (err == 0) {
		gw->pub_msgs += p->count;
		if (p->t != NULL)
			p->t->pub_ok += p->count;
		if (p->t != NULL && p->t->nparts == 0)
			p->t->meta_ms = 0; /* it exists now: ask METADATA at the next batch */
		if (p->t != NULL && p->t->max_record == 0)
			p->t->rec_ms = 0;
		if (gw->on_topic_exists != NULL && p->t != NULL)
			gw->on_topic_exists(gw, p->t->name);
	} else {
		gw->pub_errors += p->nw;
		gw->m.sluice_err[err_index(err)] += p->count;
		if (p->t != NULL)
			p->t->pub_failed += p->count;
	}
	for (i = 0; i < p->nw; i++)
		p->w[i].cb(p->w[i].arg, err);
	ctx_put(gw, p);
}

static void
on_pub(void *arg, const struct sl_pub_result *res)
{
	struct pub_ctx *p = arg;

	lat_record(&p->gw->m, now_us() - p->sent_us);
	ctx_done(p, res->err);
}

/* With several nodes: the session and partition of t's next batch, round robin over its
 * partitions (METADATA asked at the first batch, or again META_RETRY_MS after it did not
 * know the topic; the sessions opened then). NULL: node 0's session, any partition (the
 * node picks one; a topic that does not exist yet is created so). */
static struct sl_gw_sess *
pub_sess(struct sl_gw *gw, struct sl_gw_topic *t, uint16_t *part)
{
	struct sl_gw_meta m;
	uint64_t now;
	uint32_t i, p;

	if (gw->nnodes < 2)
		return NULL;
	if (t->nparts == 0) {
		now = sl_gw_now_ms();
		if (t->meta_ms != 0 && now - t->meta_ms < META_RETRY_MS)
			return NULL;
		t->meta_ms = now | 1;
		if (sl_gw_meta(gw, t->name, &m) != 0)
			return NULL;
		topic_take_meta(t, &m);
		t->nparts = m.nparts < SL_GW_PARTS_MAX ? m.nparts : SL_GW_PARTS_MAX;
		for (p = 0; p < t->nparts; p++)
			t->ps[p] = sl_gw_sess_open(gw, &m, (uint16_t)p);
	}
	for (i = 0; i < t->nparts; i++) {
		p = t->rr++ % t->nparts;
		if (t->ps[p] != NULL) {
			*part = (uint16_t)p;
			return t->ps[p];
		}
	}
	return NULL;
}

/* Send a batch as one sluice publish (answers go to its context's callbacks). */
static void
batch_send(struct sl_gw *gw, struct pub_batch *b)
{
	struct pub_ctx *p = b->ctx;
	struct sl_gw_sess *ps;
	uint16_t part = SL_WIRE_PART_ANY;
	int rc;

	if (p == NULL)
		return;
	b->ctx = NULL;
	p->sent_us = now_us();
	gw->m.sluice_pubs++;
	gw->m.sluice_pub_msgs += b->n;
	/* the client copies the frame: the batch is free again once this returns */
	ps = pub_sess(gw, b->t, &part);
	rc = sl_client_pub_async(ps != NULL ? ps->c : gw->node[0].c, b->t->name, part, b->n,
				 b->datas, b->lens, on_pub, p);
	b->n = 0;
	b->used = 0;
	b->payload = 0;
	b->stored = 0;
	if (rc != 0)
		ctx_done(p, rc);
}

static void
flush_batches(struct sl_gw *gw)
{
	struct pub_batch *b;

	while ((b = gw->dirty) != NULL) {
		gw->dirty = b->next_dirty;
		b->dirty = 0;
		batch_send(gw, b);
	}
}

static uint64_t
batch_budget(const struct sl_gw *gw, size_t tlen)
{
	/* header 32, partition/topic_len/flags 4, topic, count 2 */
	return (uint64_t)gw->max_msg + DGRAM_FROM_MAX_MSG - 32 - 4 - tlen - 2;
}

int
sl_gw_publish(struct sl_gw *gw, const char *topic, uint32_t count, const void *const *datas,
	      const uint32_t *lens, sl_gw_pub_cb_t cb, void *arg)
{
	struct sl_gw_topic *t = sl_gw_topic_get(gw, topic, 1);
	struct pub_batch *b;
	uint64_t bytes = 0, payload = 0, stored = 0, budget, sbudget;
	uint32_t i;

	if (t == NULL) /* the gateway's topic table is full */
		return -SL_E_LIMIT;
	sbudget = topic_budget(gw, t);
	if (count == 0 || count > SL_WIRE_MPUB_MAX)
		return -SL_E_PUB_ARG;
	budget = batch_budget(gw, strlen(topic));
	for (i = 0; i < count; i++) {
		if (lens[i] > gw->max_msg)
			return -SL_E_TOO_BIG;
		bytes += lens[i];
		payload += 4 + (uint64_t)lens[i];
		stored += STORED_SIZE(lens[i]);
	}
	if ((payload > budget || stored > sbudget) && count > 1)
		return -SL_E_TOO_BIG; /* the caller splits with sl_gw_chunk */
	b = t->batch;
	if (b == NULL) {
		b = calloc(1, sizeof(*b) + budget + gw->max_msg);
		if (b == NULL)
			return -ENOMEM;
		b->t = t;
		t->batch = b;
	}
	if (b->ctx != NULL && (b->n + count > SL_WIRE_MPUB_MAX || b->payload + payload > budget ||
			       b->stored + stored > sbudget || b->ctx->nw == SL_WIRE_MPUB_MAX))
		batch_send(gw, b); /* full: this one starts the next */
	if (b->ctx == NULL && (b->ctx = ctx_get(gw)) == NULL)
		return -ENOMEM;
	b->ctx->t = t;
	for (i = 0; i < count; i++) {
		memcpy(b->buf + b->used, datas[i], lens[i]);
		b->datas[b->n] = b->buf + b->used;
		b->lens[b->n++] = lens[i];
		b->used += lens[i];
	}
	b->payload += payload;
	b->stored += stored;
	b->ctx->count += count;
	b->ctx->w[b->ctx->nw].cb = cb;
	b->ctx->w[b->ctx->nw++].arg = arg;
	if (!b->dirty) {
		b->dirty = 1;
		b->next_dirty = gw->dirty;
		gw->dirty = b;
	}
	sl_gw_kick(gw);
	gw->pubs++;
	t->message_count += count;
	t->message_bytes += bytes;
	return 0;
}
