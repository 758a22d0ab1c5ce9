/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * sluice-nsqd: Prometheus text exposition format 0.0.4 of the gateway's counters. Every
 * family has its # HELP and # TYPE lines; counters end in _total, durations are in
 * seconds, sizes in bytes. Label values are topic and channel names (NSQ's name rule:
 * [.a-zA-Z0-9_-] and '#', nothing to escape), error codes of our own, node addresses.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "metrics.h"
#include "tcp.h"

struct out {
	struct evbuffer *b;
	int err;
};

static void
put(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void
put(struct out *o, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	if (evbuffer_add_vprintf(o->b, fmt, ap) < 0)
		o->err = 1;
	va_end(ap);
}

static void
family(struct out *o, const char *name, const char *type, const char *help)
{
	put(o, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void
per_topic(struct out *o, struct sl_gw *gw, const char *name, const char *help, size_t off)
{
	uint32_t i;

	family(o, name, "counter", help);
	for (i = 0; i < gw->ntopics; i++)
		put(o, "%s{topic=\"%s\"} %" PRIu64 "\n", name, gw->topic[i]->name,
		    *(const uint64_t *)((const char *)gw->topic[i] + off));
}

static void
per_channel(struct out *o, struct sl_gw *gw, const char *name, const char *help, size_t off)
{
	const struct sl_gw_topic *t;
	uint32_t i, j;

	family(o, name, "counter", help);
	for (i = 0; i < gw->ntopics; i++) {
		t = gw->topic[i];
		for (j = 0; j < t->nchannels; j++)
			put(o, "%s{topic=\"%s\",channel=\"%s\"} %" PRIu64 "\n", name, t->name,
			    t->ch[j].name, *(const uint64_t *)((const char *)&t->ch[j] + off));
	}
}

static void
per_node(struct out *o, struct sl_gw *gw, const char *name, const char *help, size_t off)
{
	struct sl_client_stats st;
	uint32_t i;

	family(o, name, "counter", help);
	for (i = 0; i < gw->nnodes; i++) {
		sl_client_get_stats(gw->node[i].c, &st);
		put(o, "%s{node=\"%s\"} %" PRIu64 "\n", name, gw->node[i].ip,
		    *(const uint64_t *)((const char *)&st + off));
	}
	/* the sessions of single partitions (publishing and consuming), live and closed */
	sl_gw_sess_stats(gw, &st);
	put(o, "%s{node=\"partitions\"} %" PRIu64 "\n", name,
	    *(const uint64_t *)((const char *)&st + off));
}

static void
latency(struct out *o, const struct sl_gw_metrics *m)
{
	static const char name[] = "sluice_nsqd_sluice_publish_duration_seconds";
	uint64_t cum = 0;
	uint32_t i;

	family(o, name, "histogram", "Round trip of the gateway's sluice PUB/MPUB requests, "
	       "from sending to the node's answer.");
	for (i = 0; i < SL_GW_LAT_BUCKETS; i++) {
		cum += m->lat_bucket[i];
		put(o, "%s_bucket{le=\"%g\"} %" PRIu64 "\n", name,
		    (double)sl_gw_lat_bounds_us[i] / 1e6, cum);
	}
	put(o, "%s_bucket{le=\"+Inf\"} %" PRIu64 "\n", name, m->lat_count);
	put(o, "%s_sum %.6f\n%s_count %" PRIu64 "\n", name, (double)m->lat_sum_us / 1e6, name,
	    m->lat_count);
}

int
sl_nsqmetrics_render(struct sl_gw *gw, struct evbuffer *out)
{
	const struct sl_gw_metrics *m = &gw->m;
	struct out o = { .b = out };
	const struct sl_gw_topic *t;
	uint32_t i, j;

	family(&o, "sluice_nsqd_start_time_seconds", "gauge",
	       "Unix time the gateway started.");
	put(&o, "sluice_nsqd_start_time_seconds %" PRIu64 "\n", gw->start_time);
	family(&o, "sluice_nsqd_connections", "gauge", "NSQ TCP connections open.");
	put(&o, "sluice_nsqd_connections %u\n", sl_nsqtcp_conns(gw));
	family(&o, "sluice_nsqd_connections_total", "counter", "NSQ TCP connections accepted.");
	put(&o, "sluice_nsqd_connections_total %" PRIu64 "\n", m->conns_total);
	family(&o, "sluice_nsqd_http_requests_total", "counter",
	       "Requests to the nsqd and nsqlookupd HTTP APIs.");
	put(&o, "sluice_nsqd_http_requests_total %" PRIu64 "\n", m->http_requests);

	per_topic(&o, gw, "sluice_nsqd_messages_published_total",
		  "Messages published through the gateway and acknowledged by sluice.",
		  offsetof(struct sl_gw_topic, pub_ok));
	per_topic(&o, gw, "sluice_nsqd_messages_publish_failed_total",
		  "Messages published through the gateway that sluice refused or did not answer.",
		  offsetof(struct sl_gw_topic, pub_failed));
	per_topic(&o, gw, "sluice_nsqd_published_bytes_total",
		  "Message bytes received for publishing (PUB, MPUB, /pub, /mpub).",
		  offsetof(struct sl_gw_topic, message_bytes));
	per_channel(&o, gw, "sluice_nsqd_messages_delivered_total",
		    "Messages sent to NSQ consumers (every attempt).",
		    offsetof(struct sl_gw_channel, message_count));
	per_channel(&o, gw, "sluice_nsqd_messages_finished_total", "FIN commands taken.",
		    offsetof(struct sl_gw_channel, finish_count));
	per_channel(&o, gw, "sluice_nsqd_messages_requeued_total", "REQ commands taken.",
		    offsetof(struct sl_gw_channel, requeue_count));
	per_channel(&o, gw, "sluice_nsqd_messages_timed_out_total",
		    "Messages a consumer held past its msg_timeout.",
		    offsetof(struct sl_gw_channel, timeout_count));
	family(&o, "sluice_nsqd_messages_in_flight", "gauge",
	       "Messages sent to consumers and not yet finished, requeued or timed out.");
	for (i = 0; i < gw->ntopics; i++) {
		t = gw->topic[i];
		for (j = 0; j < t->nchannels; j++)
			put(&o, "sluice_nsqd_messages_in_flight{topic=\"%s\",channel=\"%s\"} %"
			    PRIu64 "\n", t->name, t->ch[j].name,
			    sl_nsqtcp_in_flight(gw, t->name, t->ch[j].name));
	}
	family(&o, "sluice_nsqd_channel_clients", "gauge", "NSQ consumers subscribed.");
	for (i = 0; i < gw->ntopics; i++) {
		t = gw->topic[i];
		for (j = 0; j < t->nchannels; j++)
			put(&o, "sluice_nsqd_channel_clients{topic=\"%s\",channel=\"%s\"} %u\n",
			    t->name, t->ch[j].name, t->ch[j].clients);
	}

	family(&o, "sluice_nsqd_errors_total", "counter",
	       "Error frames sent to NSQ clients, by NSQ error code.");
	for (i = 0; i < m->ncauses; i++)
		put(&o, "sluice_nsqd_errors_total{cause=\"%s\"} %" PRIu64 "\n", m->err[i].cause,
		    m->err[i].n);
	put(&o, "sluice_nsqd_errors_total{cause=\"other\"} %" PRIu64 "\n", m->err_other);
	family(&o, "sluice_nsqd_sluice_publish_errors_total", "counter",
	       "Messages whose sluice publish failed, by sluice error.");
	for (i = 0; i <= SL_E_MAX - SL_E_BASE; i++)
		if (m->sluice_err[i] != 0)
			put(&o, "sluice_nsqd_sluice_publish_errors_total{error=\"%s\"} %" PRIu64
			    "\n", sl_gw_err_name(i == 0 ? -1 : -(int)(SL_E_BASE + i)),
			    m->sluice_err[i]);

	family(&o, "sluice_nsqd_sluice_publishes_total", "counter",
	       "sluice PUB/MPUB requests the gateway sent (NSQ publishes are batched).");
	put(&o, "sluice_nsqd_sluice_publishes_total %" PRIu64 "\n", m->sluice_pubs);
	family(&o, "sluice_nsqd_sluice_published_messages_total", "counter",
	       "Messages in those requests.");
	put(&o, "sluice_nsqd_sluice_published_messages_total %" PRIu64 "\n", m->sluice_pub_msgs);
	latency(&o, m);
	per_node(&o, gw, "sluice_nsqd_sluice_retransmits_total",
		 "Requests libsluice sent again to the node.",
		 offsetof(struct sl_client_stats, retries));
	per_node(&o, gw, "sluice_nsqd_sluice_timeouts_total",
		 "Requests libsluice gave up on.", offsetof(struct sl_client_stats, timeouts));
	per_node(&o, gw, "sluice_nsqd_sluice_leader_switches_total",
		 "Moves of the node's session to another leader.",
		 offsetof(struct sl_client_stats, leader_switches));
	per_node(&o, gw, "sluice_nsqd_sluice_busy_retries_total",
		 "Publishes sent again after a busy answer (full, quorum, write disabled).",
		 offsetof(struct sl_client_stats, busy_retries));
	return o.err ? -1 : 0;
}
