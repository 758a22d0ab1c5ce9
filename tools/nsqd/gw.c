/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * sluice-nsqd core: the libsluice sessions (one per node) inside the libevent loop, the
 * gateway's registry of topics and channels, publishing.
 *
 * libsluice has no public accessor for its socket: the gateway finds it as the one
 * datagram socket that sl_client_open() created (the descriptors open before and after
 * are compared) and polls the client when it is readable, plus every TICK_MS for
 * retransmissions and heartbeats.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "err.h"
#include "gw.h"
#include "wire.h"

#define TICK_MS 5
#define FD_SCAN 4096
/* sluice frame budget from WELCOME's max_msg (docs/protocol.md, "Largest message"):
 * max_msg = D + 28 - 140, so the largest UDP payload is D = max_msg + 112 */
#define DGRAM_FROM_MAX_MSG 112

struct pub_ctx {
	struct pub_ctx *next;		/* free list */
	struct sl_gw *gw;
	sl_gw_pub_cb_t cb;
	void *arg;
	uint32_t count;
	char topic[SL_WIRE_NAME_MAX + 1];
};

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

void
sl_gw_poll(struct sl_gw *gw)
{
	uint32_t i;
	int n, rounds;

	for (i = 0; i < gw->nnodes; i++)
		for (rounds = 0; rounds < 64; rounds++) {
			n = sl_client_poll(gw->node[i].c, 0);
			if (n <= 0)
				break;
		}
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

/* Descriptors open now: bit per fd below FD_SCAN. */
static void
fd_snapshot(uint8_t *bits)
{
	int fd;

	memset(bits, 0, FD_SCAN / 8);
	for (fd = 0; fd < FD_SCAN; fd++)
		if (fcntl(fd, F_GETFD) != -1)
			bits[fd / 8] |= (uint8_t)(1u << (fd % 8));
}

/* The datagram socket opened since the snapshot, or -1. */
static int
fd_new_dgram(const uint8_t *before)
{
	int fd, type;
	socklen_t len;

	for (fd = 0; fd < FD_SCAN; fd++) {
		if (before[fd / 8] & (1u << (fd % 8)) || fcntl(fd, F_GETFD) == -1)
			continue;
		len = sizeof(type);
		if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) == 0 && type == SOCK_DGRAM)
			return fd;
	}
	return -1;
}

static int
node_open(struct sl_gw *gw, struct sl_gw_node *n, const char *ip)
{
	struct sl_client_conf cc = { .xport = SL_XPORT_UDP };
	uint8_t before[FD_SCAN / 8];

	snprintf(n->ip, sizeof(n->ip), "%s", ip);
	cc.broker_ip = n->ip;
	cc.broker_port = gw->conf.sluice_port;
	fd_snapshot(before);
	n->c = sl_client_open(&cc);
	if (n->c == NULL) {
		fprintf(stderr, "sluice-nsqd: no session with %s:%u: %s\n", ip, cc.broker_port,
			sl_strerror(errno));
		return -1;
	}
	n->fd = fd_new_dgram(before);
	n->max_msg = sl_client_welcome(n->c)->max_msg;
	if (n->fd >= 0) {
		n->ev = event_new(gw->base, n->fd, EV_READ | EV_PERSIST, on_node_readable, gw);
		if (n->ev == NULL || event_add(n->ev, NULL) != 0)
			return -1;
	} else {
		fprintf(stderr, "sluice-nsqd: %s: the client's socket was not found, "
			"polling every %d ms\n", ip, TICK_MS);
	}
	return 0;
}

static int
parse_ips(struct sl_gw *gw, const char *list)
{
	char buf[SL_GW_NODES_MAX * 16 + 16], *tok, *save = NULL;
	struct in_addr a;

	if (list == NULL || strlen(list) >= sizeof(buf)) {
		fprintf(stderr, "sluice-nsqd: --sluice: at most %d addresses\n", SL_GW_NODES_MAX);
		return -1;
	}
	strcpy(buf, list);
	for (tok = strtok_r(buf, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
		if (inet_pton(AF_INET, tok, &a) != 1 || gw->nnodes == SL_GW_NODES_MAX) {
			fprintf(stderr, "sluice-nsqd: --sluice: bad address \"%s\"\n", tok);
			return -1;
		}
		if (node_open(gw, &gw->node[gw->nnodes], tok) != 0) {
			if (gw->node[gw->nnodes].c != NULL)
				gw->nnodes++;
			return -1;
		}
		gw->nnodes++;
	}
	if (gw->nnodes == 0) {
		fprintf(stderr, "sluice-nsqd: --sluice: no address\n");
		return -1;
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
	struct timeval tv = { 0, TICK_MS * 1000 };
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
	gw->tick = event_new(base, -1, EV_PERSIST, on_tick, gw);
	if (gw->tick == NULL || event_add(gw->tick, &tv) != 0)
		goto out;
	rc = 0;
out:
	return rc;
}

void
sl_gw_close(struct sl_gw *gw)
{
	uint32_t i;

	if (gw->tick != NULL)
		event_free(gw->tick);
	for (i = 0; i < gw->nnodes; i++) {
		if (gw->node[i].ev != NULL)
			event_free(gw->node[i].ev);
		(void)sl_client_flush(gw->node[i].c, 1000);
		sl_client_close(gw->node[i].c);
	}
	for (i = 0; i < gw->ntopics; i++)
		free(gw->topic[i]);
	while (gw->free_ctx != NULL) {
		struct pub_ctx *p = gw->free_ctx;

		gw->free_ctx = p->next;
		free(p);
	}
	free(gw->topic);
	memset(gw, 0, sizeof(*gw));
}

uint32_t
sl_gw_chunk(const struct sl_gw *gw, size_t tlen, const uint32_t *lens, uint32_t n)
{
	uint64_t budget, used = 0;
	uint32_t i;

	/* header 32, partition/topic_len/flags 4, topic, count 2 */
	budget = (uint64_t)gw->max_msg + DGRAM_FROM_MAX_MSG - 32 - 4 - tlen - 2;
	for (i = 0; i < n && i < SL_WIRE_MPUB_MAX; i++) {
		if (used + 4 + lens[i] > budget)
			break;
		used += 4 + lens[i];
	}
	return i > 0 ? i : 1;
}

static void
on_pub(void *arg, const struct sl_pub_result *res)
{
	struct pub_ctx *p = arg;
	struct sl_gw *gw = p->gw;
	sl_gw_pub_cb_t cb = p->cb;
	void *cb_arg = p->arg;

	if (res->err == 0) {
		gw->pub_msgs += p->count;
		if (gw->on_topic_exists != NULL)
			gw->on_topic_exists(gw, p->topic);
	} else {
		gw->pub_errors++;
	}
	p->next = gw->free_ctx;
	gw->free_ctx = p;
	cb(cb_arg, res->err);
}

int
sl_gw_publish(struct sl_gw *gw, const char *topic, uint32_t count, const void *const *datas,
	      const uint32_t *lens, sl_gw_pub_cb_t cb, void *arg)
{
	struct sl_gw_topic *t = sl_gw_topic_get(gw, topic, 1);
	struct pub_ctx *p;
	uint64_t bytes = 0;
	uint32_t i;
	int rc;

	/* contexts are recycled: no allocation per publish once the window is warm */
	p = gw->free_ctx;
	if (p != NULL)
		gw->free_ctx = p->next;
	else if ((p = malloc(sizeof(*p))) == NULL)
		return -ENOMEM;
	p->gw = gw;
	p->cb = cb;
	p->arg = arg;
	p->count = count;
	snprintf(p->topic, sizeof(p->topic), "%s", topic);
	/* a cluster: the first node; docs/nsq-gateway.md says what is not routed yet */
	rc = sl_client_pub_async(gw->node[0].c, topic, SL_WIRE_PART_ANY, count, datas, lens,
				 on_pub, p);
	if (rc != 0) {
		p->next = gw->free_ctx;
		gw->free_ctx = p;
		gw->pub_errors++;
		return rc;
	}
	gw->pubs++;
	if (t != NULL) {
		for (i = 0; i < count; i++)
			bytes += lens[i];
		t->message_count += count;
		t->message_bytes += bytes;
	}
	return 0;
}
