/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * sluice-nsqd HTTP front ends: nsqd's API and nsqlookupd's, answered the way nsqd's
 * http_api answers (JSON {"message": "CODE"} with the HTTP status on errors, header
 * X-NSQ-Content-Type). Request bodies are bounded by max_body_size (evhttp refuses a
 * larger one), headers by HDR_MAX.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/queue.h>
#include <sys/socket.h>

#include <event2/buffer.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <jansson.h>

#include "err.h"
#include "http.h"
#include "metrics.h"
#include "tcp.h"
#include "wire.h"

#define HDR_MAX 16384
#define HTTP_TIMEOUT_S 60

struct web {
	struct evhttp *nsqd;
	struct evhttp *lookupd;
};

/* one /pub or /mpub waiting for sluice */
struct hpub {
	struct evhttp_request *req;
	uint32_t left;
	int err;
	struct evbuffer *keep;	/* the body the messages point into */
};

static void
respond(struct evhttp_request *req, int code, const char *type, const char *body)
{
	struct evkeyvalq *h = evhttp_request_get_output_headers(req);
	struct evbuffer *b = evbuffer_new();

	evhttp_add_header(h, "X-NSQ-Content-Type", "nsq; version=1.0");
	if (type != NULL)
		evhttp_add_header(h, "Content-Type", type);
	if (b != NULL && body != NULL)
		evbuffer_add(b, body, strlen(body));
	evhttp_send_reply(req, code, code == 200 ? "OK" : "Error", b);
	if (b != NULL)
		evbuffer_free(b);
}

/* {"message": msg}, as nsqd answers an error (jansson escapes msg) */
static void
respond_err(struct evhttp_request *req, int code, const char *msg)
{
	json_t *o = json_pack("{s:s}", "message", msg);
	char *txt = o != NULL ? json_dumps(o, JSON_COMPACT) : NULL;

	json_decref(o);
	respond(req, code, "application/json; charset=utf-8",
		txt != NULL ? txt : "{\"message\":\"INTERNAL_ERROR\"}");
	free(txt);
}

static void
respond_text(struct evhttp_request *req, const char *text)
{
	respond(req, 200, "text/plain; charset=utf-8", text);
}

static void
respond_json(struct evhttp_request *req, json_t *o)
{
	char *txt = o != NULL ? json_dumps(o, JSON_COMPACT) : NULL;

	json_decref(o);
	if (txt == NULL) {
		respond_err(req, 500, "INTERNAL_ERROR");
		return;
	}
	respond(req, 200, "application/json; charset=utf-8", txt);
	free(txt);
}

/* The value of query parameter key (first one), or NULL. q must be cleared by the
 * caller. */
static const char *
query(struct evhttp_request *req, struct evkeyvalq *q, const char *key)
{
	const char *s = evhttp_uri_get_query(evhttp_request_get_evhttp_uri(req));

	if (TAILQ_EMPTY(q) && s != NULL)
		(void)evhttp_parse_query_str(s, q);
	return evhttp_find_header(q, key);
}

static const char *
path_of(struct evhttp_request *req)
{
	const char *p = evhttp_uri_get_path(evhttp_request_get_evhttp_uri(req));

	return p != NULL ? p : "/";
}

static int
method_is(struct evhttp_request *req, enum evhttp_cmd_type a, enum evhttp_cmd_type b)
{
	enum evhttp_cmd_type m = evhttp_request_get_command(req);

	if (m == a || m == b)
		return 1;
	respond_err(req, 405, "METHOD_NOT_ALLOWED");
	return 0;
}

static const char *
broadcast(const struct sl_gw *gw)
{
	if (gw->conf.broadcast_address != NULL && gw->conf.broadcast_address[0] != '\0')
		return gw->conf.broadcast_address;
	if (gw->tcp_host[0] != '\0' && strcmp(gw->tcp_host, "0.0.0.0") != 0)
		return gw->tcp_host;
	return gw->hostname;
}

/* ---- nsqd API ---- */

static void
pub_done(void *arg, int err)
{
	struct hpub *h = arg;
	char buf[160];

	if (err != 0 && h->err == 0)
		h->err = err;
	if (--h->left > 0)
		return;
	if (h->err == 0) {
		respond_text(h->req, "OK");
	} else {
		/* nsqd answers 503 EXITING when its topic refuses; here the node said why */
		snprintf(buf, sizeof(buf), "PUB_FAILED: %s", sl_strerror(h->err));
		respond_err(h->req, 503, buf);
	}
	if (h->keep != NULL)
		evbuffer_free(h->keep);
	free(h);
}

/* Publish n messages in datagram-sized chunks; answers the request when all are done. */
static void
http_publish(struct sl_gw *gw, struct evhttp_request *req, const char *topic,
	     struct evbuffer *keep, uint32_t n, const void **datas, uint32_t *lens)
{
	struct hpub *h = calloc(1, sizeof(*h));
	uint32_t i = 0, k;
	int rc;

	if (h == NULL) {
		if (keep != NULL)
			evbuffer_free(keep);
		respond_err(req, 500, "INTERNAL_ERROR");
		return;
	}
	h->req = req;
	h->keep = keep;
	h->left = 1;
	while (i < n) {
		k = sl_gw_chunk(gw, topic, lens + i, n - i);
		h->left++;
		rc = sl_gw_publish(gw, topic, k, datas + i, lens + i, pub_done, h);
		if (rc != 0) {
			h->left--;
			h->err = rc;
			break;
		}
		i += k;
	}
	pub_done(h, 0);
}

/* topic parameter of /pub and /mpub; answers and returns NULL when missing/invalid */
static const char *
pub_topic(struct evhttp_request *req, struct evkeyvalq *q)
{
	const char *t = query(req, q, "topic");

	if (t == NULL) {
		respond_err(req, 400, "MISSING_ARG_TOPIC");
		return NULL;
	}
	if (!sl_gw_nsq_name_ok(t, strlen(t)) || !sl_gw_sluice_name_ok(t, strlen(t))) {
		respond_err(req, 400, "INVALID_TOPIC");
		return NULL;
	}
	return t;
}

static void
do_pub(struct sl_gw *gw, struct evhttp_request *req)
{
	struct evbuffer *in = evhttp_request_get_input_buffer(req), *keep;
	struct evkeyvalq q = TAILQ_HEAD_INITIALIZER(q);
	const char *topic, *ds;
	const void *d;
	uint32_t len = (uint32_t)evbuffer_get_length(in);
	uint64_t defer = 0;
	char *end;

	if (!method_is(req, EVHTTP_REQ_POST, EVHTTP_REQ_PUT))
		goto out;
	if (len > gw->max_msg) {
		respond_err(req, 413, "MSG_TOO_BIG");
		goto out;
	}
	if (len == 0) {
		respond_err(req, 400, "MSG_EMPTY");
		goto out;
	}
	topic = pub_topic(req, &q);
	if (topic == NULL)
		goto out;
	ds = evhttp_find_header(&q, "defer");
	if (ds != NULL) {
		errno = 0;
		defer = strtoull(ds, &end, 10);
		if (errno != 0 || *ds == '\0' || *end != '\0' || *ds == '-' ||
		    defer > gw->conf.max_req_timeout_ms) {
			respond_err(req, 400, "INVALID_DEFER");
			goto out;
		}
		if (defer > 0) { /* no deferred publish in sluice: docs/nsq-gateway.md */
			respond_err(req, 400, "DEFER_NOT_SUPPORTED");
			goto out;
		}
	}
	keep = evbuffer_new();
	if (keep == NULL) {
		respond_err(req, 500, "INTERNAL_ERROR");
		goto out;
	}
	evbuffer_add_buffer(keep, in);
	d = evbuffer_pullup(keep, -1);
	http_publish(gw, req, topic, keep, 1, &d, &len);
out:
	evhttp_clear_headers(&q);
}

static void
do_mpub(struct sl_gw *gw, struct evhttp_request *req)
{
	struct evbuffer *in = evhttp_request_get_input_buffer(req), *keep = NULL;
	struct evkeyvalq q = TAILQ_HEAD_INITIALIZER(q);
	size_t len = evbuffer_get_length(in), off = 0, e;
	const void **datas = NULL;
	uint32_t *lens = NULL, n = 0, cap, i, sz, cnt;
	const char *topic, *bin;
	const uint8_t *b;
	int binary = 0;

	if (!method_is(req, EVHTTP_REQ_POST, EVHTTP_REQ_PUT))
		goto out;
	if (len > gw->conf.max_body_size) {
		respond_err(req, 413, "BODY_TOO_BIG");
		goto out;
	}
	topic = pub_topic(req, &q);
	if (topic == NULL)
		goto out;
	bin = evhttp_find_header(&q, "binary");
	if (bin != NULL) /* nsqd: an unrecognised value counts as true */
		binary = !(strcmp(bin, "false") == 0 || strcmp(bin, "0") == 0);
	keep = evbuffer_new();
	if (keep == NULL)
		goto nomem;
	evbuffer_add_buffer(keep, in);
	b = len > 0 ? evbuffer_pullup(keep, -1) : (const uint8_t *)"";
	cap = binary ? (len >= 4 ? (uint32_t)(len / 5) + 1 : 1) : (uint32_t)len + 1;
	datas = malloc(cap * sizeof(*datas));
	lens = malloc(cap * sizeof(*lens));
	if (datas == NULL || lens == NULL)
		goto nomem;
	if (binary) {
		/* nsqd answers 413 with its TCP error code minus "E_" */
		if (len < 4) {
			respond_err(req, 413, "BAD_BODY");
			goto out;
		}
		cnt = (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
		off = 4;
		if ((int32_t)cnt <= 0 || cnt > (gw->conf.max_body_size - 4) / 5 || cnt > cap) {
			respond_err(req, 413, "BAD_BODY");
			goto out;
		}
		for (i = 0; i < cnt; i++) {
			if (len - off < 4) {
				respond_err(req, 413, "BAD_MESSAGE");
				goto out;
			}
			sz = (uint32_t)b[off] << 24 | (uint32_t)b[off + 1] << 16 |
			     (uint32_t)b[off + 2] << 8 | b[off + 3];
			off += 4;
			if ((int32_t)sz <= 0 || sz > gw->max_msg || len - off < sz) {
				respond_err(req, 413, "BAD_MESSAGE");
				goto out;
			}
			datas[n] = b + off;
			lens[n++] = sz;
			off += sz;
		}
		if (off != len) {
			respond_err(req, 413, "BAD_BODY");
			goto out;
		}
	} else {
		while (off < len) {
			const uint8_t *nl = memchr(b + off, '\n', len - off);

			e = nl != NULL ? (size_t)(nl - b) : len;
			if (e - off > gw->max_msg) {
				respond_err(req, 413, "MSG_TOO_BIG");
				goto out;
			}
			if (e > off) { /* nsqd silently skips empty lines */
				datas[n] = b + off;
				lens[n++] = (uint32_t)(e - off);
			}
			off = e + 1;
		}
	}
	if (n == 0) {
		respond_text(req, "OK");
		goto out;
	}
	http_publish(gw, req, topic, keep, n, datas, lens);
	keep = NULL;
	goto out;
nomem:
	respond_err(req, 500, "INTERNAL_ERROR");
out:
	if (keep != NULL)
		evbuffer_free(keep);
	free(datas);
	free(lens);
	evhttp_clear_headers(&q);
}

static json_t *
latency_json(void)
{
	return json_pack("{s:i, s:n}", "count", 0, "percentiles");
}

static void
do_stats(struct sl_gw *gw, struct evhttp_request *req)
{
	struct evkeyvalq q = TAILQ_HEAD_INITIALIZER(q);
	const char *fmt = query(req, &q, "format");
	const char *ft = evhttp_find_header(&q, "topic");
	const char *fc = evhttp_find_header(&q, "channel");
	json_t *topics = json_array(), *chans, *o;
	struct evbuffer *txt = evbuffer_new();
	struct sl_gw_channel *ch;
	struct sl_gw_topic *t;
	uint32_t i, j;
	uint64_t inf;

	if (topics == NULL || txt == NULL)
		goto fail;
	evbuffer_add_printf(txt, "nsqd v%s (sluice-nsqd gateway)\nstart_time %" PRIu64
			    "\n\nHealth: OK\n", SL_GW_VERSION, gw->start_time);
	if (gw->ntopics == 0)
		evbuffer_add_printf(txt, "\nTopics: None\n");
	for (i = 0; i < gw->ntopics; i++) {
		t = gw->topic[i];
		if (ft != NULL && strcmp(ft, t->name) != 0)
			continue;
		chans = json_array();
		evbuffer_add_printf(txt, "\n   [%-15s] depth: 0     be-depth: 0     msgs: %-8"
				    PRIu64 "\n", t->name, t->message_count);
		for (j = 0; j < t->nchannels; j++) {
			ch = &t->ch[j];
			if (fc != NULL && strcmp(fc, ch->name) != 0)
				continue;
			inf = sl_nsqtcp_in_flight(gw, t->name, ch->name);
			o = json_pack("{s:s, s:i, s:i, s:I, s:i, s:I, s:I, s:I, s:i, s:o, s:b, "
				      "s:o}",
				      "channel_name", ch->name, "depth", 0, "backend_depth", 0,
				      "in_flight_count", (json_int_t)inf, "deferred_count", 0,
				      "message_count", (json_int_t)ch->message_count,
				      "requeue_count", (json_int_t)ch->requeue_count,
				      "timeout_count", (json_int_t)ch->timeout_count,
				      "client_count", (int)ch->clients,
				      "clients", sl_nsqtcp_clients_json(gw, t->name, ch->name),
				      "paused", 0, "e2e_processing_latency", latency_json());
			json_array_append_new(chans, o);
			evbuffer_add_printf(txt, "      [%-25s] depth: 0     be-depth: 0     "
					    "inflt: %-4" PRIu64 " def: 0    re-q: %-5" PRIu64
					    " timeout: %-5" PRIu64 " msgs: %-8" PRIu64 "\n",
					    ch->name, inf, ch->requeue_count, ch->timeout_count,
					    ch->message_count);
		}
		o = json_pack("{s:s, s:o, s:i, s:i, s:I, s:I, s:b, s:o}",
			      "topic_name", t->name, "channels", chans, "depth", 0,
			      "backend_depth", 0, "message_count", (json_int_t)t->message_count,
			      "message_bytes", (json_int_t)t->message_bytes, "paused", 0,
			      "e2e_processing_latency", latency_json());
		json_array_append_new(topics, o);
	}
	if (fmt != NULL && strcmp(fmt, "json") == 0) {
		respond_json(req, json_pack("{s:s, s:s, s:I, s:o, s:o}", "version",
					    SL_GW_VERSION, "health", "OK",
					    "start_time", (json_int_t)gw->start_time,
					    "topics", topics,
					    "producers", sl_nsqtcp_clients_json(gw, NULL, NULL)));
		topics = NULL;
	} else {
		evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
				  "text/plain; charset=utf-8");
		evhttp_send_reply(req, 200, "OK", txt);
	}
	goto out;
fail:
	respond_err(req, 500, "INTERNAL_ERROR");
out:
	json_decref(topics);
	if (txt != NULL)
		evbuffer_free(txt);
	evhttp_clear_headers(&q);
}

/* topic (and channel) arguments the way nsqd's GetTopicChannelArgs checks them */
static int
topic_channel_args(struct evhttp_request *req, struct evkeyvalq *q, const char **t,
		   const char **c)
{
	*t = query(req, q, "topic");
	if (*t == NULL) {
		respond_err(req, 400, "MISSING_ARG_TOPIC");
		return -1;
	}
	if (!sl_gw_nsq_name_ok(*t, strlen(*t)) || !sl_gw_sluice_name_ok(*t, strlen(*t))) {
		respond_err(req, 400, "INVALID_ARG_TOPIC");
		return -1;
	}
	if (c == NULL)
		return 0;
	*c = evhttp_find_header(q, "channel");
	if (*c == NULL) {
		respond_err(req, 400, "MISSING_ARG_CHANNEL");
		return -1;
	}
	if (!sl_gw_nsq_name_ok(*c, strlen(*c)) || !sl_gw_sluice_name_ok(*c, strlen(*c))) {
		respond_err(req, 400, "INVALID_ARG_CHANNEL");
		return -1;
	}
	return 0;
}

static int
nop_msg(void *arg, const struct sl_client_msg *m)
{
	return 1; /* not taken: requeued by the CLS that follows */
}

/* /channel/create: a durable channel in sluice is made by a SUB without credit (and
 * its CLS) on every partition (with several nodes through a partition session at each
 * partition's leader); the gateway records it too. */
static void
do_channel(struct sl_gw *gw, struct evhttp_request *req, int create)
{
	struct evkeyvalq q = TAILQ_HEAD_INITIALIZER(q);
	const char *tn, *cn;
	struct sl_gw_topic *t;
	int64_t id;
	uint32_t p;

	if (!method_is(req, EVHTTP_REQ_POST, EVHTTP_REQ_PUT) ||
	    topic_channel_args(req, &q, &tn, &cn) != 0)
		goto out;
	t = sl_gw_topic_get(gw, tn, 0);
	if (!create) {
		if (t == NULL || sl_gw_channel_get(t, cn, 0) == NULL)
			respond_err(req, 404, "CHANNEL_NOT_FOUND");
		else /* no delete in sluice's client protocol: docs/nsq-gateway.md */
			respond_err(req, 501, "NOT_SUPPORTED: delete the channel with sluicectl");
		goto out;
	}
	if (gw->nnodes > 1) {
		/* each partition at its leader (a follower would take the SUB for itself) */
		struct sl_gw_meta m;
		struct sl_gw_sess *ss;

		if (sl_gw_meta(gw, tn, &m) != 0)
			m.nparts = 0;
		for (p = 0; p < m.nparts && p < SL_GW_PARTS_MAX; p++) {
			ss = sl_gw_sess_open(gw, &m, (uint16_t)p);
			if (ss == NULL)
				break;
			id = sl_client_sub(ss->c, tn, (uint16_t)p, cn, 0, 0, nop_msg, NULL);
			if (id > 0)
				(void)sl_client_unsub(ss->c, (uint64_t)id);
			sl_gw_sess_close(gw, ss);
			if (id <= 0)
				break;
		}
	} else {
		for (p = 0; p < SL_GW_PARTS_MAX; p++) {
			id = sl_client_sub(gw->node[0].c, tn, (uint16_t)p, cn, 0, 0, nop_msg,
					   NULL);
			if (id <= 0)
				break;
			(void)sl_client_unsub(gw->node[0].c, (uint64_t)id);
		}
	}
	if (t == NULL && p == 0) {
		respond_err(req, 404, "TOPIC_NOT_FOUND");
		goto out;
	}
	if (t == NULL)
		t = sl_gw_topic_get(gw, tn, 1);
	if (t == NULL || sl_gw_channel_get(t, cn, 1) == NULL) {
		respond_err(req, 500, "INTERNAL_ERROR");
		goto out;
	}
	respond(req, 200, NULL, "");
out:
	evhttp_clear_headers(&q);
}

static void
do_topic(struct sl_gw *gw, struct evhttp_request *req, int create)
{
	struct evkeyvalq q = TAILQ_HEAD_INITIALIZER(q);
	const char *tn;

	if (!method_is(req, EVHTTP_REQ_POST, EVHTTP_REQ_PUT) ||
	    topic_channel_args(req, &q, &tn, NULL) != 0)
		goto out;
	if (!create) {
		if (sl_gw_topic_get(gw, tn, 0) == NULL)
			respond_err(req, 404, "TOPIC_NOT_FOUND");
		else
			respond_err(req, 501, "NOT_SUPPORTED: delete the topic with sluicectl");
		goto out;
	}
	/* sluice creates the topic on its first publish; the gateway knows it from now
	 * (/topics, /lookup) */
	if (sl_gw_topic_get(gw, tn, 1) == NULL)
		respond_err(req, 500, "INTERNAL_ERROR");
	else
		respond(req, 200, NULL, "");
out:
	evhttp_clear_headers(&q);
}

static void
do_info(struct sl_gw *gw, struct evhttp_request *req)
{
	respond_json(req, json_pack("{s:s, s:s, s:s, s:i, s:i, s:I, s:I, s:i, s:I, s:i, s:s, "
				    "s:s}",
				    "version", SL_GW_VERSION,
				    "broadcast_address", broadcast(gw),
				    "hostname", gw->hostname,
				    "http_port", gw->http_port != 0 ? gw->http_port : -1,
				    "tcp_port", gw->tcp_port,
				    "start_time", (json_int_t)gw->start_time,
				    "max_heartbeat_interval",
				    (json_int_t)gw->conf.max_heartbeat_ms * 1000000,
				    "max_output_buffer_size", 65536,
				    "max_output_buffer_timeout", (json_int_t)30000000000LL,
				    "max_deflate_level", 6,
				    "topology_zone", "", "topology_region", ""));
}

/* GET /metrics: Prometheus text format 0.0.4 (metrics.c) */
static void
do_metrics(struct sl_gw *gw, struct evhttp_request *req)
{
	struct evkeyvalq *h = evhttp_request_get_output_headers(req);
	struct evbuffer *b;

	if (evhttp_request_get_command(req) != EVHTTP_REQ_GET &&
	    evhttp_request_get_command(req) != EVHTTP_REQ_HEAD) {
		respond_err(req, 405, "METHOD_NOT_ALLOWED");
		return;
	}
	b = evbuffer_new();
	if (b == NULL || sl_nsqmetrics_render(gw, b) != 0) {
		if (b != NULL)
			evbuffer_free(b);
		respond_err(req, 500, "INTERNAL_ERROR");
		return;
	}
	evhttp_add_header(h, "Content-Type", SL_NSQMETRICS_CONTENT_TYPE);
	evhttp_send_reply(req, 200, "OK", b);
	evbuffer_free(b);
}

static void
on_nsqd(struct evhttp_request *req, void *arg)
{
	struct sl_gw *gw = arg;
	const char *p = path_of(req);

	gw->m.http_requests++;
	if (strcmp(p, "/ping") == 0)
		respond_text(req, "OK");
	else if (strcmp(p, "/info") == 0)
		do_info(gw, req);
	else if (strcmp(p, "/pub") == 0 || strcmp(p, "/put") == 0)
		do_pub(gw, req);
	else if (strcmp(p, "/mpub") == 0 || strcmp(p, "/mput") == 0)
		do_mpub(gw, req);
	else if (strcmp(p, "/stats") == 0)
		do_stats(gw, req);
	else if (strcmp(p, "/metrics") == 0)
		do_metrics(gw, req);
	else if (strcmp(p, "/topic/create") == 0)
		do_topic(gw, req, 1);
	else if (strcmp(p, "/topic/delete") == 0)
		do_topic(gw, req, 0);
	else if (strcmp(p, "/channel/create") == 0)
		do_channel(gw, req, 1);
	else if (strcmp(p, "/channel/delete") == 0)
		do_channel(gw, req, 0);
	else if (strncmp(p, "/topic/", 7) == 0 || strncmp(p, "/channel/", 9) == 0)
		respond_err(req, 501, "NOT_SUPPORTED"); /* empty, pause, unpause */
	else
		respond_err(req, 404, "NOT_FOUND");
	sl_gw_kick(gw);
}

/* ---- nsqlookupd API ---- */

static json_t *
peer_json(struct sl_gw *gw)
{
	char remote[96];

	snprintf(remote, sizeof(remote), "%s:%u", gw->tcp_host, gw->tcp_port);
	return json_pack("{s:s, s:s, s:s, s:i, s:i, s:s, s:s, s:s}",
			 "remote_address", remote, "hostname", gw->hostname,
			 "broadcast_address", broadcast(gw), "tcp_port", gw->tcp_port,
			 "http_port", gw->http_port != 0 ? gw->http_port : -1,
			 "version", SL_GW_VERSION, "topology_zone", "", "topology_region", "");
}

static json_t *
channels_json(struct sl_gw *gw, const char *topic)
{
	struct sl_gw_topic *t = sl_gw_topic_get(gw, topic, 0);
	json_t *a = json_array();
	uint32_t i;

	for (i = 0; t != NULL && i < t->nchannels; i++)
		json_array_append_new(a, json_string(t->ch[i].name));
	return a;
}

static json_t *
topics_json(struct sl_gw *gw)
{
	json_t *a = json_array();
	uint32_t i;

	for (i = 0; i < gw->ntopics; i++)
		json_array_append_new(a, json_string(gw->topic[i]->name));
	return a;
}

static void
on_lookupd(struct evhttp_request *req, void *arg)
{
	struct sl_gw *gw = arg;
	struct evkeyvalq q = TAILQ_HEAD_INITIALIZER(q);
	const char *p = path_of(req), *t;
	json_t *node;

	gw->m.http_requests++;
	if (strcmp(p, "/ping") == 0) {
		respond_text(req, "OK");
	} else if (strcmp(p, "/info") == 0) {
		respond_json(req, json_pack("{s:s}", "version", SL_GW_VERSION));
	} else if (strcmp(p, "/topics") == 0) {
		respond_json(req, json_pack("{s:o}", "topics", topics_json(gw)));
	} else if (strcmp(p, "/channels") == 0 || strcmp(p, "/lookup") == 0) {
		t = query(req, &q, "topic");
		if (t == NULL) {
			respond_err(req, 400, "MISSING_ARG_TOPIC");
		} else if (strcmp(p, "/channels") == 0) {
			respond_json(req, json_pack("{s:o}", "channels", channels_json(gw, t)));
		} else if (!sl_gw_nsq_name_ok(t, strlen(t)) ||
			   !sl_gw_sluice_name_ok(t, strlen(t))) {
			respond_err(req, 404, "TOPIC_NOT_FOUND");
		} else {
			/* the gateway serves every topic: a SUB to one that does not exist yet
			 * waits for it, as nsqd creates it */
			respond_json(req, json_pack("{s:o, s:[o]}", "channels",
						    channels_json(gw, t), "producers",
						    peer_json(gw)));
		}
	} else if (strcmp(p, "/nodes") == 0) {
		node = peer_json(gw);
		json_object_set_new(node, "tombstones", json_array());
		json_object_set_new(node, "topics", topics_json(gw));
		{
			json_t *tomb = json_object_get(node, "tombstones");
			uint32_t i;

			for (i = 0; i < gw->ntopics; i++)
				json_array_append_new(tomb, json_false());
		}
		respond_json(req, json_pack("{s:[o]}", "producers", node));
	} else {
		respond_err(req, 404, "NOT_FOUND");
	}
	evhttp_clear_headers(&q);
}

/* ---- servers ---- */

static struct evhttp *
serve(struct sl_gw *gw, const char *addr, const char *flag,
      void (*cb)(struct evhttp_request *, void *), uint16_t *port)
{
	struct evhttp_bound_socket *bs;
	struct sockaddr_in sa;
	socklen_t sl = sizeof(sa);
	char host[64];
	const char *colon = strrchr(addr, ':');
	unsigned long pn;
	struct evhttp *h;
	char *end;

	if (colon == NULL || (size_t)(colon - addr) >= sizeof(host)) {
		fprintf(stderr, "sluice-nsqd: bad %s \"%s\"\n", flag, addr);
		return NULL;
	}
	memcpy(host, addr, (size_t)(colon - addr));
	host[colon - addr] = '\0';
	pn = strtoul(colon + 1, &end, 10);
	if (*end != '\0' || pn > 65535 || colon[1] == '\0') {
		fprintf(stderr, "sluice-nsqd: bad %s \"%s\"\n", flag, addr);
		return NULL;
	}
	h = evhttp_new(gw->base);
	if (h == NULL)
		return NULL;
	evhttp_set_max_body_size(h, (ev_ssize_t)gw->conf.max_body_size);
	evhttp_set_max_headers_size(h, HDR_MAX);
	evhttp_set_timeout(h, HTTP_TIMEOUT_S);
	evhttp_set_allowed_methods(h, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_PUT |
				   EVHTTP_REQ_HEAD);
	evhttp_set_gencb(h, cb, gw);
	bs = evhttp_bind_socket_with_handle(h, host[0] != '\0' ? host : "0.0.0.0",
					    (uint16_t)pn);
	if (bs == NULL) {
		fprintf(stderr, "sluice-nsqd: cannot listen on %s (%s)\n", addr, flag);
		evhttp_free(h);
		return NULL;
	}
	if (getsockname(evhttp_bound_socket_get_fd(bs), (struct sockaddr *)&sa, &sl) == 0)
		*port = ntohs(sa.sin_port);
	return h;
}

int
sl_nsqhttp_open(struct sl_gw *gw)
{
	struct web *w = calloc(1, sizeof(*w));
	uint16_t lport = 0;

	if (w == NULL)
		return -1;
	gw->http = w;
	if (gw->conf.http_address != NULL && gw->conf.http_address[0] != '\0') {
		w->nsqd = serve(gw, gw->conf.http_address, "--http-address", on_nsqd,
				&gw->http_port);
		if (w->nsqd == NULL)
			goto fail;
	}
	if (gw->conf.lookupd_http_address != NULL && gw->conf.lookupd_http_address[0] != '\0') {
		w->lookupd = serve(gw, gw->conf.lookupd_http_address, "--lookupd-http-address",
				   on_lookupd, &lport);
		if (w->lookupd == NULL)
			goto fail;
	}
	return 0;
fail:
	sl_nsqhttp_close(gw);
	return -1;
}

void
sl_nsqhttp_close(struct sl_gw *gw)
{
	struct web *w = gw->http;

	if (w == NULL)
		return;
	if (w->nsqd != NULL)
		evhttp_free(w->nsqd);
	if (w->lookupd != NULL)
		evhttp_free(w->lookupd);
	free(w);
	gw->http = NULL;
}
