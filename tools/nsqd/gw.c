/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * sluice-nsqd core: the libsluice sessions (one per node) inside the libevent loop, the
 * gateway's registry of topics and channels, publishing.
 *
 * Each client is polled when its descriptor (sl_client_fd) is readable, and when its
 * next timer (sl_client_next_timer_us: retransmission, timeout, heartbeat, leader
 * switch) passes: one libevent timer armed for the earliest of the clients' after every
 * poll (no later than INFLIGHT_POLL_US while requests are in flight). Work queued by other calls (a FIN, a publish) is picked up by the kick, an event
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
 * the wire, so batches and chunks are bounded by that too. */
#define STORED_HDR 32
#define STORED_SIZE(len) (STORED_HDR + (((uint64_t)(len) + 7) & ~(uint64_t)7))
#define REPL_DGRAM_MAX 8192
#define REPL_FROM_DGRAM 236

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

	for (i = 0; i < gw->nnodes; i++)
		for (rounds = 0; rounds < 64; rounds++) {
			n = sl_client_poll(gw->node[i].c, 0);
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
	if (due == 0) { /* work waiting now (FINs past a full window ...): next turn */
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
	if (parse_ips(gw, conf->sluice) != 0)
		goto out;
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

uint32_t
sl_gw_chunk(const struct sl_gw *gw, size_t tlen, const uint32_t *lens, uint32_t n)
{
	uint64_t budget, used = 0, stored = 0, sbudget = stored_budget(gw);
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

/* Send a batch as one sluice publish (answers go to its context's callbacks). */
static void
batch_send(struct sl_gw *gw, struct pub_batch *b)
{
	struct pub_ctx *p = b->ctx;
	int rc;

	if (p == NULL)
		return;
	b->ctx = NULL;
	p->sent_us = now_us();
	gw->m.sluice_pubs++;
	gw->m.sluice_pub_msgs += b->n;
	/* the client copies the frame: the batch is free again once this returns */
	rc = sl_client_pub_async(gw->node[0].c, b->t->name, SL_WIRE_PART_ANY, b->n, b->datas,
				 b->lens, on_pub, p);
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
	uint64_t bytes = 0, payload = 0, stored = 0, budget, sbudget = stored_budget(gw);
	uint32_t i;

	if (t == NULL) /* the gateway's topic table is full */
		return -SL_E_LIMIT;
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
