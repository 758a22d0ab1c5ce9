/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * bench_nats: the NATS peers of sluice-bench (JetStream, and core NATS as a no-ack
 * reference). Same workload, options and output (struct sl_report: a table row on stderr, a
 * JSON line on --json or stdout) as sluice's own benchmark, so tools/bench/run can report
 * ratios. Each run uses its own subject and, for JetStream, its own stream, deleted at the
 * end.
 *
 * What it measures (cnats client, one publishing thread):
 *  - system "jetstream", workload "pub": acknowledged publishes into a stream of 1 replica
 *    on file storage (--storage file, the default: written to files, synced by the server's
 *    sync interval, 2 minutes by default) or memory storage (--storage memory).
 *    --window 1 and --batch 1: synchronous js_Publish, latency is the call. Otherwise
 *    js_PublishAsync with PublishAsync.MaxPending = window * batch (JetStream has no batch
 *    request: a batch is that many publishes written back to back and due at the same
 *    time), latency from the (intended) send time carried in the first 8 payload bytes to
 *    the PubAck seen by the ack handler.
 *  - system "jetstream", workload "pubsub": the same publisher, plus a pull consumer with
 *    explicit acks on a second connection that fetches --fetch messages at a time and acks
 *    each; the report is the consumer's (consume rate, latency send to delivery).
 *  - system "nats-core", workload "pub": natsConnection_Publish of every message and one
 *    flush (PING/PONG) at the end: no ack, no storage, no latency (lat NULL).
 *  - system "nats-core", workload "pubsub": a subscriber on a second connection; as core
 *    NATS has no ack, delivery closes the loop: at most window * batch messages are
 *    published and not yet delivered. Latency from (intended) send to delivery.
 * The publishing connection writes each message at once (cnats SendAsap) in closed loops:
 * cnats' flusher thread would otherwise hold it for about a millisecond, which would be
 * the measured latency. Open loop and nats-core pub keep the flusher, which coalesces
 * writes as the server would see them from a real application (--send-asap overrides).
 * The consumer's connection keeps it too, so acks are coalesced; fetches are requests,
 * sent at once anyway.
 * Closed loop by default; --rate R offers R messages/s on a fixed schedule (open loop), and
 * latency is then taken from each message's intended send time, so a stall cannot hide
 * the messages it delayed (no coordinated omission). --warmup messages go first and are not
 * measured. Elapsed time is CLOCK_MONOTONIC wall time. With --server-pid the broker's CPU
 * (utime + stime from /proc/PID/stat) over the measured phase is reported per message (-1
 * when under 10 clock ticks, too coarse to mean anything).
 * Exit status: 0 all measured messages acknowledged (delivered for pubsub), 1 some were
 * not (errors, timeout), 2 bad usage or the server is unreachable.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include <nats/nats.h>

#include "hist.h"
#include "peer.h"
#include "report.h"

#define STAMP_BYTES   SL_PEER_STAMP_BYTES
#define MIN_CPU_TICKS 10
#define DURABLE       "slbench"

enum sys { SYS_JETSTREAM, SYS_CORE };

struct opts {
	struct sl_peer_opts c;	/* the options every peer takes */
	char url[512];
	enum sys sys;
	int asap;    /* publisher unbuffered; -1 auto: closed loop and not nats-core pub */
	bool memory; /* jetstream: memory storage instead of file storage */
};

/*
 * Messages in flight, closed by a PubAck (jetstream) or a delivery (nats-core pubsub), and
 * the latency of those carrying a stamp. The closer runs on a cnats thread; the publisher
 * waits on cv for room in the window.
 */
struct flight {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	uint64_t inflight;
	uint64_t cap;
	bool waiting;
	uint64_t acked; /* stamped (measured) messages closed */
	uint64_t errors;
	uint64_t last_ns;
	struct sl_hist hist;
};

/* JetStream pull consumer thread. */
struct consumer {
	const struct opts *o;
	natsSubscription *sub;
	pthread_t tid;
	struct sl_hist hist;
	uint64_t consumed; /* measured messages fetched and acked */
	uint64_t errors;
	uint64_t last_ns;
	uint64_t deadline_ns;
	atomic_bool pub_done;
	char err[160];
};

static const char *prog = "bench_nats";

static void
usage(FILE *f)
{
	fprintf(f,
		"usage: %s [options]\n"
		"  --system S      jetstream | nats-core (default jetstream)\n"
		"  --url URL       server (default nats://127.0.0.1:4222)\n"
		"  --host H --port P        same, separately\n"
		"  --size N        message bytes, >= 8 (default 100)\n"
		"  --count N       measured messages (default 100000)\n"
		"  --warmup N      unmeasured messages sent first (default 1000)\n"
		"  --batch N       publishes per request (default 1)\n"
		"  --window N      requests in flight (default 1; 1024 with --rate)\n"
		"  --rate R        open loop: offer R messages/s on a fixed schedule\n"
		"  --workload W    pub | pubsub (default pub)\n"
		"  --fetch N       jetstream pubsub: pull batch (default 100)\n"
		"  --json FILE     append the JSON line to FILE (default stdout)\n"
		"  --cdf FILE      append the latency CDF to FILE, labelled\n"
		"                  SYSTEM-WORKLOAD[xBATCH][-Np]\n"
		"  --server-pid P  report the server's CPU per message from /proc/P/stat\n"
		"  --timeout S     give up after S seconds (default 120)\n"
		"  --storage S     jetstream stream storage: file (default) | memory\n"
		"  --send-asap 0|1 publisher writes each message at once instead of through\n"
		"                  cnats' flusher (default 1 for closed loops but nats-core pub)\n"
		"  --no-header     do not print the table header on stderr\n",
		prog);
}

static void
parse_opts(struct opts *o, int argc, char **argv)
{
	static const struct option lo[] = {
		{"system", required_argument, NULL, 'S'},
		{"url", required_argument, NULL, 'u'},
		SL_PEER_LONG_OPTS,
		{"send-asap", required_argument, NULL, 'A'},
		{"storage", required_argument, NULL, 'T'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *url = NULL;
	int c;

	memset(o, 0, sizeof(*o));
	sl_peer_opts_init(&o->c, 4222);
	o->asap = -1;
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'S':
			if (strcmp(optarg, "jetstream") == 0) {
				o->sys = SYS_JETSTREAM;
			} else if (strcmp(optarg, "nats-core") == 0) {
				o->sys = SYS_CORE;
			} else {
				fprintf(stderr, "%s: --system is jetstream or nats-core\n", prog);
				exit(2);
			}
			break;
		case 'u':
			url = optarg;
			break;
		case 'A':
			o->asap = (int)sl_opt_num(prog, "send-asap", optarg, 0, 1);
			break;
		case 'T':
			if (strcmp(optarg, "memory") == 0) {
				o->memory = true;
			} else if (strcmp(optarg, "file") != 0) {
				fprintf(stderr, "%s: --storage is file or memory\n", prog);
				exit(2);
			}
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			if (sl_peer_opt(&o->c, prog, c, optarg) != 0) {
				usage(stderr);
				exit(2);
			}
		}
	}
	if (optind != argc) {
		usage(stderr);
		exit(2);
	}
	if (url != NULL)
		snprintf(o->url, sizeof(o->url), "%s", url);
	else
		snprintf(o->url, sizeof(o->url), "nats://%s:%d", o->c.host, o->c.port);
	sl_peer_opts_finish(&o->c);
	if (o->asap < 0)
		o->asap = o->c.rate == 0 && (o->sys == SYS_JETSTREAM || o->c.pubsub);
}

static void
abs_ts(struct timespec *ts, uint64_t ns)
{
	ts->tv_sec = (time_t)(ns / 1000000000u);
	ts->tv_nsec = (long)(ns % 1000000000u);
}

/* Sleep until the monotonic time t (the open-loop schedule; nothing else to wait for). */
static void
wait_until(uint64_t t)
{
	struct timespec ts;

	abs_ts(&ts, t);
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

static void
die_nats(const char *what, natsStatus s)
{
	fprintf(stderr, "%s: %s: %s\n", prog, what, natsStatus_GetText(s));
	nats_PrintLastErrorStack(stderr);
	exit(2);
}

static natsConnection *
connect_or_die(const struct opts *o, bool asap)
{
	natsConnection *nc = NULL;
	natsOptions *no = NULL;
	natsStatus s;

	s = natsOptions_Create(&no);
	if (s == NATS_OK)
		s = natsOptions_SetURL(no, o->url);
	if (s == NATS_OK)
		s = natsOptions_SetTimeout(no, 2000);
	if (s == NATS_OK)
		s = natsOptions_SetAllowReconnect(no, false);
	/* Unbuffered: cnats' flusher thread otherwise holds a publish for about 1 ms. */
	if (s == NATS_OK)
		s = natsOptions_SetSendAsap(no, asap);
	if (s != NATS_OK)
		die_nats("options", s);
	s = natsConnection_Connect(&nc, no);
	natsOptions_Destroy(no);
	if (s != NATS_OK) {
		fprintf(stderr, "%s: cannot connect to nats at %s: %s\n", prog, o->url,
			natsStatus_GetText(s));
		exit(2);
	}
	return nc;
}

static void
flight_init(struct flight *f, uint64_t cap)
{
	pthread_condattr_t ca;

	/* Deadlines are CLOCK_MONOTONIC, like every other time here. */
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_mutex_init(&f->mu, NULL);
	pthread_cond_init(&f->cv, &ca);
	pthread_condattr_destroy(&ca);
	f->cap = cap;
	sl_hist_init(&f->hist);
}

/* One message left flight: ok or failed, with the stamp it carried (0: warmup). */
static void
flight_close(struct flight *f, const char *data, int len, bool ok)
{
	uint64_t t = sl_hist_now_ns(), stamp = 0;

	if (len >= STAMP_BYTES)
		memcpy(&stamp, data, STAMP_BYTES);
	pthread_mutex_lock(&f->mu);
	if (!ok) {
		f->errors++;
	} else if (stamp != 0) {
		f->acked++;
		sl_hist_add(&f->hist, t - stamp);
		f->last_ns = t;
	}
	f->inflight--;
	if (f->waiting)
		pthread_cond_signal(&f->cv);
	pthread_mutex_unlock(&f->mu);
}

/* Reserve room for m messages; false when the deadline passed first. */
static bool
flight_reserve(struct flight *f, uint64_t m, uint64_t deadline)
{
	struct timespec ts;
	bool ok = true;

	abs_ts(&ts, deadline);
	pthread_mutex_lock(&f->mu);
	while (f->inflight + m > f->cap && ok) {
		f->waiting = true;
		ok = pthread_cond_timedwait(&f->cv, &f->mu, &ts) != ETIMEDOUT;
	}
	f->waiting = false;
	if (ok)
		f->inflight += m;
	pthread_mutex_unlock(&f->mu);
	return ok;
}

/* Wait until nothing is in flight; false when the deadline passed first. */
static bool
flight_drain(struct flight *f, uint64_t deadline)
{
	struct timespec ts;
	bool ok = true;

	abs_ts(&ts, deadline);
	pthread_mutex_lock(&f->mu);
	while (f->inflight > 0 && ok) {
		f->waiting = true;
		ok = pthread_cond_timedwait(&f->cv, &f->mu, &ts) != ETIMEDOUT;
	}
	f->waiting = false;
	pthread_mutex_unlock(&f->mu);
	return ok;
}

static void
on_puback(jsCtx *js, natsMsg *msg, jsPubAck *pa, jsPubAckErr *pae, void *closure)
{
	struct flight *f = closure;

	flight_close(f, natsMsg_GetData(msg), natsMsg_GetDataLength(msg),
		     pa != NULL && pae == NULL);
	natsMsg_Destroy(msg);
}

static void
on_core_msg(natsConnection *nc, natsSubscription *sub, natsMsg *msg, void *closure)
{
	flight_close(closure, natsMsg_GetData(msg), natsMsg_GetDataLength(msg), true);
	natsMsg_Destroy(msg);
}

static void *
consumer_main(void *arg)
{
	struct consumer *cs = arg;
	natsMsgList list;
	jsErrCode jerr;
	uint64_t stamp, t;
	natsStatus s;
	int i;

	while (cs->consumed < cs->o->c.count) {
		bool idle_after_pub = atomic_load(&cs->pub_done);

		if (sl_hist_now_ns() >= cs->deadline_ns) {
			snprintf(cs->err, sizeof(cs->err), "timed out");
			break;
		}
		s = natsSubscription_Fetch(&list, cs->sub, (int)cs->o->c.fetch, 500, &jerr);
		if (s == NATS_TIMEOUT) {
			/* Nothing came after the last publish was acknowledged: none is left. */
			if (idle_after_pub) {
				snprintf(cs->err, sizeof(cs->err), "stream drained early");
				break;
			}
			continue;
		}
		if (s != NATS_OK) {
			snprintf(cs->err, sizeof(cs->err), "fetch: %s", natsStatus_GetText(s));
			break;
		}
		t = sl_hist_now_ns();
		for (i = 0; i < list.Count; i++) {
			natsMsg *m = list.Msgs[i];

			if (natsMsg_Ack(m, NULL) != NATS_OK)
				cs->errors++;
			if (natsMsg_GetDataLength(m) < STAMP_BYTES) {
				cs->errors++;
				continue;
			}
			memcpy(&stamp, natsMsg_GetData(m), STAMP_BYTES);
			if (stamp == 0)
				continue; /* warmup */
			sl_hist_add(&cs->hist, t - stamp);
			cs->consumed++;
		}
		natsMsgList_Destroy(&list);
		cs->last_ns = sl_hist_now_ns();
	}
	return NULL;
}

/*
 * Publish n messages, batch per request, on the closed or open (rate) schedule. js NULL:
 * core NATS (f NULL: no loop closer at all). Stamps are (intended) send times when
 * measured, else 0. Returns how many messages the client sent without an error.
 */
static uint64_t
publish(const struct opts *o, natsConnection *nc, jsCtx *js, const char *subj, struct flight *f,
	uint64_t n, bool measured, uint64_t t0, uint64_t deadline, struct sl_hist *sync_hist,
	uint64_t *sync_acked, bool *timed_out)
{
	const double ns_per_req = o->c.rate > 0 ? 1e9 * o->c.batch / o->c.rate : 0;
	const bool sync_js = js != NULL && o->c.window == 1 && o->c.batch == 1;
	uint64_t sent = 0, k, m, i, due, stamp, fails = 0, t;
	jsErrCode jerr;
	jsPubAck *pa;
	natsStatus s;
	char *buf;

	buf = malloc(o->c.size);
	if (buf == NULL) {
		fprintf(stderr, "%s: out of memory\n", prog);
		exit(2);
	}
	memset(buf, 'x', o->c.size);
	for (k = 0; sent < n; k++) {
		m = n - sent < o->c.batch ? n - sent : o->c.batch;
		due = 0;
		if (o->c.rate > 0) {
			due = t0 + (uint64_t)((double)k * ns_per_req);
			wait_until(due);
		}
		if (sl_hist_now_ns() >= deadline) {
			*timed_out = true;
			break;
		}
		if (!sync_js && f != NULL && !flight_reserve(f, m, deadline)) {
			*timed_out = true;
			break;
		}
		stamp = measured ? (o->c.rate > 0 ? due : sl_hist_now_ns()) : 0;
		memcpy(buf, &stamp, STAMP_BYTES);
		for (i = 0; i < m; i++) {
			if (sync_js) {
				pa = NULL;
				s = js_Publish(&pa, js, subj, buf, (int)o->c.size, NULL, &jerr);
				t = sl_hist_now_ns();
				jsPubAck_Destroy(pa);
				if (s == NATS_OK && measured) {
					sl_hist_add(sync_hist, t - stamp);
					(*sync_acked)++;
				}
			} else if (js != NULL) {
				s = js_PublishAsync(js, subj, buf, (int)o->c.size, NULL);
			} else {
				s = natsConnection_Publish(nc, subj, buf, (int)o->c.size);
			}
			if (s != NATS_OK) {
				if (fails++ == 0)
					fprintf(stderr, "%s: publish: %s\n", prog,
						natsStatus_GetText(s));
				/* No ack or delivery will close it. */
				if (!sync_js && f != NULL)
					flight_close(f, NULL, 0, false);
			}
		}
		sent += m;
	}
	free(buf);
	return sent - fails;
}

int
main(int argc, char **argv)
{
	const char *subjects[1];
	char subj[64], stream[64], note[320];
	struct consumer cs = {0};
	natsConnection *nc, *nc2 = NULL;
	natsSubscription *sub = NULL;
	struct sl_hist sync_hist;
	struct sl_report rep;
	struct flight fl;
	jsCtx *js = NULL, *js2 = NULL;
	jsOptions jo;
	jsErrCode jerr = 0;
	uint64_t t0, end, deadline, sync_acked = 0, sent_ok;
	bool timed_out = false, use_flight, sync_js;
	double cpu0, cpu1;
	const char *sysname;
	struct opts o;
	FILE *jf = stdout;
	natsStatus s;
	int rc = 0;

	parse_opts(&o, argc, argv);
	prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
	sysname = o.sys == SYS_JETSTREAM ? "jetstream" : "nats-core";
	snprintf(subj, sizeof(subj), "slbench.%d.%" PRIu64, (int)getpid(), sl_hist_now_ns());
	snprintf(stream, sizeof(stream), "SLBENCH_%d_%" PRIu64, (int)getpid(), sl_hist_now_ns());
	subjects[0] = subj;
	sync_js = o.sys == SYS_JETSTREAM && o.c.window == 1 && o.c.batch == 1;
	use_flight = o.sys == SYS_JETSTREAM ? !sync_js : o.c.pubsub;
	flight_init(&fl, (uint64_t)o.c.window * o.c.batch);
	sl_hist_init(&sync_hist);
	sl_hist_init(&cs.hist);
	nc = connect_or_die(&o, o.asap);
	deadline = sl_hist_now_ns() + (uint64_t)(o.c.timeout_s * 1e9);

	if (o.sys == SYS_JETSTREAM) {
		jsStreamConfig sc;

		jsOptions_Init(&jo);
		jo.Wait = 10000;
		jo.PublishAsync.MaxPending = (int64_t)o.c.window * o.c.batch;
		jo.PublishAsync.AckHandler = on_puback;
		jo.PublishAsync.AckHandlerClosure = &fl;
		jo.PublishAsync.StallWait = (int64_t)(o.c.timeout_s * 1000);
		s = natsConnection_JetStream(&js, nc, &jo);
		if (s != NATS_OK)
			die_nats("jetstream context", s);
		jsStreamConfig_Init(&sc);
		sc.Name = stream;
		sc.Subjects = subjects;
		sc.SubjectsLen = 1;
		sc.Storage = o.memory ? js_MemoryStorage : js_FileStorage;
		sc.Replicas = 1;
		s = js_AddStream(NULL, js, &sc, NULL, &jerr);
		if (s != NATS_OK) {
			fprintf(stderr,
				"%s: cannot create stream (is JetStream enabled, -js?): "
				"%s (%d)\n",
				prog, natsStatus_GetText(s), (int)jerr);
			return 2;
		}
	}
	if (o.c.pubsub) {
		nc2 = connect_or_die(&o, false);
		if (o.sys == SYS_JETSTREAM) {
			jsSubOptions so;

			s = natsConnection_JetStream(&js2, nc2, NULL);
			if (s != NATS_OK)
				die_nats("jetstream context", s);
			jsSubOptions_Init(&so);
			so.Stream = stream;
			so.Config.AckPolicy = js_AckExplicit;
			so.Config.DeliverPolicy = js_DeliverAll;
			so.Config.MaxAckPending = -1;
			s = js_PullSubscribe(&sub, js2, subj, DURABLE, NULL, &so, &jerr);
			if (s != NATS_OK)
				die_nats("pull subscribe", s);
			cs.o = &o;
			cs.sub = sub;
			cs.deadline_ns = deadline;
			atomic_init(&cs.pub_done, false);
			if (pthread_create(&cs.tid, NULL, consumer_main, &cs) != 0) {
				fprintf(stderr, "%s: cannot start the consumer thread\n", prog);
				return 2;
			}
		} else {
			s = natsConnection_Subscribe(&sub, nc2, subj, on_core_msg, &fl);
			if (s == NATS_OK)
				s = natsSubscription_SetPendingLimits(sub, -1, -1);
			/* The server has the interest once the PONG is back. */
			if (s == NATS_OK)
				s = natsConnection_FlushTimeout(nc2, 5000);
			if (s != NATS_OK)
				die_nats("subscribe", s);
		}
	}

	/* Warmup: unstamped, then wait until all of it is closed. */
	if (o.c.warmup > 0) {
		publish(&o, nc, js, subj, use_flight ? &fl : NULL, o.c.warmup, false, sl_hist_now_ns(),
			deadline, &sync_hist, &sync_acked, &timed_out);
		if (use_flight)
			flight_drain(&fl, deadline);
		natsConnection_FlushTimeout(nc, 5000);
		fl.errors = 0;
	}

	cpu0 = sl_peer_proc_cpu_ns(o.c.server_pid);
	t0 = sl_hist_now_ns();
	sent_ok = publish(&o, nc, js, subj, use_flight ? &fl : NULL, o.c.count, true, t0, deadline,
			  &sync_hist, &sync_acked, &timed_out);
	if (use_flight && !timed_out && !flight_drain(&fl, deadline))
		timed_out = true;
	/* All buffered publishes reached the server once the PONG is back. */
	s = natsConnection_FlushTimeout(nc, 10000);
	if (s != NATS_OK) {
		fprintf(stderr, "%s: flush: %s\n", prog, natsStatus_GetText(s));
		sent_ok = 0;
	}
	end = sl_hist_now_ns();
	if (o.c.pubsub && o.sys == SYS_JETSTREAM) {
		atomic_store(&cs.pub_done, true);
		pthread_join(cs.tid, NULL);
		if (cs.err[0] != '\0')
			fprintf(stderr, "%s: consumer: %s\n", prog, cs.err);
		natsConnection_FlushTimeout(nc2, 5000); /* the last acks */
		end = cs.last_ns;
	}
	cpu1 = sl_peer_proc_cpu_ns(o.c.server_pid);

	rep = (struct sl_report){
		.system = sysname,
		.workload = o.c.pubsub ? "pubsub" : "pub",
		.mode = o.c.rate > 0 ? "open" : "closed",
		.msg_size = o.c.size,
		.batch = o.c.batch,
		.window = o.c.window,
		.offered_per_s = o.c.rate,
		.count = o.c.count,
		.cpu_ns_per_msg = -1,
		.note = note,
	};
	pthread_mutex_lock(&fl.mu);
	if (o.sys == SYS_JETSTREAM && o.c.pubsub) {
		rep.acked = cs.consumed;
		rep.errors = o.c.count - cs.consumed + cs.errors;
		rep.lat = &cs.hist;
		snprintf(note, sizeof(note),
			 "jetstream %s stream R1, pull consumer (fetch %u, explicit ack each): "
			 "rate consumed, latency (intended) send to delivery; publisher %s",
			 o.memory ? "memory" : "file", o.c.fetch,
			 sync_js ? "js_Publish" : "js_PublishAsync");
	} else if (o.sys == SYS_JETSTREAM) {
		rep.acked = sync_js ? sync_acked : fl.acked;
		rep.errors = o.c.count - rep.acked;
		rep.lat = sync_js ? &sync_hist : &fl.hist;
		snprintf(note, sizeof(note),
			 "jetstream %s stream R1, %s, latency (intended) send to PubAck",
			 o.memory ? "memory" : "file", sync_js ? "synchronous js_Publish"
				 : "js_PublishAsync, MaxPending = window * batch");
	} else if (o.c.pubsub) {
		rep.acked = fl.acked;
		rep.errors = o.c.count - rep.acked;
		rep.lat = &fl.hist;
		snprintf(note, sizeof(note),
			 "core nats, no ack, no storage: subscriber on a 2nd connection, at most "
			 "window * batch published and not yet delivered; latency (intended) send "
			 "to delivery");
	} else {
		rep.acked = sent_ok;
		rep.errors = o.c.count - sent_ok;
		rep.lat = NULL;
		snprintf(note, sizeof(note),
			 "core nats, no ack, no storage, no subscriber: natsConnection_Publish, "
			 "one flush (PING/PONG) at the end; window ignored; latency not measured");
	}
	pthread_mutex_unlock(&fl.mu);
	if (o.sys == SYS_JETSTREAM || o.c.pubsub)
		snprintf(note + strlen(note), sizeof(note) - strlen(note), "; %s",
			 o.asap ? "send-asap" : "publishes buffered by the cnats flusher");
	rep.elapsed_s = end > t0 ? (double)(end - t0) / 1e9 : 0;
	/* /proc counts clock ticks: below MIN_CPU_TICKS the figure would be noise. */
	if (cpu0 >= 0 && cpu1 >= 0 && rep.acked > 0 &&
	    cpu1 - cpu0 >= MIN_CPU_TICKS * 1e9 / (double)sysconf(_SC_CLK_TCK))
		rep.cpu_ns_per_msg = (cpu1 - cpu0) / (double)rep.acked;
	if (timed_out) {
		fprintf(stderr, "%s: timed out after %.0f s\n", prog, o.c.timeout_s);
		strncat(note, "; TIMED OUT", sizeof(note) - strlen(note) - 1);
	}

	if (o.c.header)
		sl_report_header(stderr);
	sl_report_row(stderr, &rep);
	if (o.c.json != NULL) {
		jf = fopen(o.c.json, "a");
		if (jf == NULL) {
			fprintf(stderr, "%s: cannot open %s: %s\n", prog, o.c.json, strerror(errno));
			return 2;
		}
	}
	sl_report_json(jf, &rep);
	if (jf != stdout)
		fclose(jf);
	if (o.c.cdf != NULL && sl_peer_write_cdf(o.c.cdf, &rep) != 0) {
		fprintf(stderr, "%s: cannot write %s\n", prog, o.c.cdf);
		rc = 1;
	}

	if (sub != NULL) {
		natsSubscription_Unsubscribe(sub);
		natsSubscription_Destroy(sub);
	}
	if (js != NULL) {
		js_DeleteStream(js, stream, NULL, NULL);
		jsCtx_Destroy(js);
	}
	jsCtx_Destroy(js2);
	natsConnection_Destroy(nc2);
	natsConnection_Destroy(nc);
	nats_Close();
	if (rep.acked < o.c.count || rep.errors > 0 || timed_out)
		rc = 1;
	return rc;
}
