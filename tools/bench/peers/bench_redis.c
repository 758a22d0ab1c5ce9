/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * bench_redis: the Redis Streams peer of sluice-bench. Same workload, options and output
 * (struct sl_report: a table row on stderr, a JSON line on --json or stdout) as sluice's own
 * benchmark, so tools/bench/run can report ratios.
 *
 * What it measures, on one hiredis connection driven by one thread (--producers N: N
 * threads, each with its own connection and an equal share of the messages, into the same
 * stream; the latencies of all of them in one histogram):
 *  - workload "pub": XADD KEY * d PAYLOAD (a fresh stream KEY per run, deleted at the end).
 *    A request is --batch XADDs pipelined (written together, N replies read back); --window
 *    requests are kept in flight. Latency is per XADD: from the request's send time (closed
 *    loop) or its intended send time on the --rate schedule (open loop, so a slow reply
 *    cannot hide the requests it delayed: no coordinated omission) to its reply.
 *  - workload "pubsub": the same publisher, plus a consumer thread on a second connection
 *    in a consumer group: XREADGROUP ... COUNT --fetch BLOCK, then one XACK for the IDs it
 *    got. The report is the consumer's: messages consumed and acked per second from the
 *    start of the measured publishing, latency from each message's (intended) send time,
 *    carried in its first 8 payload bytes, to its delivery.
 * --warmup messages go first and are not measured. Elapsed time is CLOCK_MONOTONIC wall
 * time. With --server-pid the broker's CPU (utime + stime from /proc/PID/stat) over the
 * measured phase is reported per acknowledged message (-1 when under 10 clock ticks, too
 * coarse to mean anything).
 * Exit status: 0 all measured messages acknowledged, 1 some were not (errors, timeout),
 * 2 bad usage or the server is unreachable.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
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

#include <hiredis.h>

#include "hist.h"
#include "peer.h"
#include "report.h"

#define GROUP         "slbench"
#define STAMP_BYTES   SL_PEER_STAMP_BYTES
#define MIN_CPU_TICKS 10


/* One pipelined request in flight: its (intended) send time and replies still due. */
struct req {
	uint64_t t_ns;
	uint32_t left;
};

/* Publisher's figures for one phase (warmup or measured). */
struct pub_result {
	uint64_t acked;
	uint64_t errors;
	uint64_t end_ns;
	bool timed_out;
};

/* Consumer thread state. Written by the consumer, read by main after join, except the
 * flags. */
struct consumer {
	const struct sl_peer_opts *o;
	const char *key;
	redisContext *c;
	pthread_t tid;
	struct sl_hist hist;
	uint64_t consumed; /* measured messages consumed and acked */
	uint64_t errors;
	uint64_t last_ns;
	uint64_t deadline_ns;
	atomic_bool pub_done; /* publisher finished: an empty read means nothing is left */
	char err[128];
};

/* One publishing thread of --producers N (closed loop, workload pub). */
struct producer {
	const struct sl_peer_opts *o;
	const char *key;
	redisContext *c;
	pthread_t tid;
	pthread_barrier_t *start; /* warmup done: main reads the clocks, then all go */
	uint64_t warmup, count, deadline_ns;
	struct sl_hist hist;
	struct pub_result res;
	int rc;
};

static const char *prog = "bench_redis";
static uint32_t nprod = 1; /* --producers */

static void
usage(FILE *f)
{
	fprintf(f,
		"usage: %s [options]\n"
		"  --url redis://HOST:PORT  server (default redis://127.0.0.1:6379)\n"
		"  --host H --port P        same, separately\n"
		"  --size N        message bytes, >= 8 (default 100)\n"
		"  --count N       measured messages (default 100000)\n"
		"  --warmup N      unmeasured messages sent first (default 1000)\n"
		"  --batch N       XADDs pipelined per request (default 1)\n"
		"  --window N      requests in flight (default 1; 1024 with --rate)\n"
		"  --rate R        open loop: offer R messages/s on a fixed schedule\n"
		"  --workload W    pub | pubsub (default pub)\n"
		"  --fetch N       pubsub: XREADGROUP COUNT (default 100)\n"
		"  --json FILE     append the JSON line to FILE (default stdout)\n"
		"  --cdf FILE      append the latency CDF to FILE, labelled\n"
		"                  SYSTEM-WORKLOAD[xBATCH][-Np]\n"
		"  --server-pid P  report the server's CPU per message from /proc/P/stat\n"
		"  --timeout S     give up after S seconds (default 120)\n"
		"  --producers N   pub, closed loop: N threads, each with its own connection\n"
		"                  and count/N of the messages, into one stream (default 1)\n"
		"  --no-header     do not print the table header on stderr\n",
		prog);
}

/* "redis://HOST:PORT", "HOST:PORT" or "HOST". */
static void
parse_url(struct sl_peer_opts *o, const char *url)
{
	static char host[256];
	const char *p = url, *colon;
	size_t n;

	if (strncmp(p, "redis://", 8) == 0)
		p += 8;
	colon = strrchr(p, ':');
	n = colon ? (size_t)(colon - p) : strlen(p);
	if (n == 0 || n >= sizeof(host)) {
		fprintf(stderr, "%s: bad --url '%s'\n", prog, url);
		exit(2);
	}
	memcpy(host, p, n);
	host[n] = '\0';
	o->host = host;
	if (colon)
		o->port = (int)sl_opt_num(prog, "url port", colon + 1, 1, 65535);
}

static void
parse_opts(struct sl_peer_opts *o, int argc, char **argv)
{
	static const struct option lo[] = {
		{"url", required_argument, NULL, 'u'},
		{"producers", required_argument, NULL, 'R'},
		SL_PEER_LONG_OPTS,
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int c;

	sl_peer_opts_init(o, 6379);
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'u':
			parse_url(o, optarg);
			break;
		case 'R':
			nprod = (uint32_t)sl_opt_num(prog, "producers", optarg, 1, 64);
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			if (sl_peer_opt(o, prog, c, optarg) != 0) {
				usage(stderr);
				exit(2);
			}
		}
	}
	if (optind != argc) {
		usage(stderr);
		exit(2);
	}
	sl_peer_opts_finish(o);
	if (nprod > 1 && (o->pubsub || o->rate > 0)) {
		fprintf(stderr, "%s: --producers > 1 is for workload pub in closed loop\n", prog);
		exit(2);
	}
}

static redisContext *
connect_or_die(const struct sl_peer_opts *o)
{
	struct timeval tv = {.tv_sec = 2};
	redisContext *c;

	c = redisConnectWithTimeout(o->host, o->port, tv);
	if (c == NULL || c->err) {
		fprintf(stderr, "%s: cannot connect to redis at %s:%d: %s\n", prog, o->host,
			o->port, c ? c->errstr : "out of memory");
		exit(2);
	}
	/* Blocking reads (consumer, setup) give up instead of hanging forever. */
	tv.tv_sec = (time_t)o->timeout_s + 5;
	redisSetTimeout(c, tv);
	return c;
}

/* Run one command; return true when the reply is not an error. */
static bool
command_ok(redisContext *c, const char *what, int argc, const char **argv)
{
	redisReply *r = redisCommandArgv(c, argc, argv, NULL);
	bool ok = r != NULL && r->type != REDIS_REPLY_ERROR;

	if (!ok)
		fprintf(stderr, "%s: %s failed: %s\n", prog, what, r ? r->str : c->errstr);
	if (r != NULL)
		freeReplyObject(r);
	return ok;
}

static bool
flush_out(redisContext *c)
{
	int done = 0;

	while (!done)
		if (redisBufferWrite(c, &done) != REDIS_OK)
			return false;
	return true;
}

/*
 * Send n XADDs (batch per request, window requests in flight) and read their replies.
 * Open loop when rate > 0: request k is due at t0 + k * batch / rate. Latency goes to h
 * (NULL: not measured, and payload stamps are 0 so a consumer skips them too).
 */
static int
publish(const struct sl_peer_opts *o, redisContext *c, const char *key, uint64_t n,
	struct sl_hist *h, uint64_t t0, uint64_t deadline, struct pub_result *res)
{
	const double ns_per_req = o->rate > 0 ? 1e9 * o->batch / o->rate : 0;
	size_t argvlen[5] = {4, strlen(key), 1, 1, o->size};
	const char *argv[5] = {"XADD", key, "*", "d", NULL};
	uint64_t sent = 0, done = 0, k = 0, stamp, t, due = 0, until, t_rx = 0;
	uint32_t head = 0, tail = 0, inflight = 0, m, i;
	struct pollfd pfd;
	struct timespec ts;
	bool can_send;
	int rc;
	struct req *q;
	char *buf;
	int ret = -1;

	q = calloc(o->window, sizeof(*q));
	buf = malloc(o->size);
	if (q == NULL || buf == NULL) {
		fprintf(stderr, "%s: out of memory\n", prog);
		goto out;
	}
	memset(buf, 'x', o->size);
	argv[4] = buf;
	*res = (struct pub_result){0};
	while (done < n) {
		t = sl_hist_now_ns();
		/* Send every request the window (and, open loop, the schedule) allows. */
		while (inflight < o->window && sent < n) {
			due = o->rate > 0 ? t0 + (uint64_t)((double)k * ns_per_req) : t;
			if (due > t)
				break;
			m = n - sent < o->batch ? (uint32_t)(n - sent) : o->batch;
			stamp = h != NULL ? due : 0;
			memcpy(buf, &stamp, STAMP_BYTES);
			for (i = 0; i < m; i++)
				if (redisAppendCommandArgv(c, 5, argv, argvlen) != REDIS_OK)
					goto io_err;
			q[tail] = (struct req){.t_ns = due, .left = m};
			tail = (tail + 1) % o->window;
			inflight++;
			sent += m;
			k++;
		}
		if (!flush_out(c))
			goto io_err;
		/* Read what has arrived; wait for replies or the next due time. */
		for (;;) {
			void *rep = NULL;

			if (redisGetReplyFromReader(c, &rep) != REDIS_OK)
				goto io_err;
			if (rep == NULL)
				break;
			if (inflight == 0) {
				freeReplyObject(rep);
				fprintf(stderr, "%s: unexpected reply\n", prog);
				goto out;
			}
			if (((redisReply *)rep)->type == REDIS_REPLY_ERROR) {
				if (res->errors++ == 0)
					fprintf(stderr, "%s: XADD: %s\n", prog,
						((redisReply *)rep)->str);
			} else {
				res->acked++;
				if (h != NULL)
					sl_hist_add(h, t_rx - q[head].t_ns);
			}
			freeReplyObject(rep);
			done++;
			if (--q[head].left == 0) {
				head = (head + 1) % o->window;
				inflight--;
			}
		}
		if (done >= n)
			break;
		t = sl_hist_now_ns();
		if (t >= deadline) {
			res->timed_out = true;
			break;
		}
		can_send = inflight < o->window && sent < n;
		due = o->rate > 0 ? t0 + (uint64_t)((double)k * ns_per_req) : t;
		if (can_send && due <= t)
			continue;
		until = can_send && due < deadline ? due : deadline;
		if (inflight == 0) {
			/* Nothing to read: sleep until the next request is due. */
			ts = (struct timespec){.tv_sec = until / 1000000000u,
					       .tv_nsec = until % 1000000000u};
			clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
			continue;
		}
		/* Wait for replies, or until the next request is due. */
		ts = (struct timespec){.tv_sec = (until - t) / 1000000000u,
				       .tv_nsec = (until - t) % 1000000000u};
		pfd = (struct pollfd){.fd = c->fd, .events = POLLIN};
		rc = ppoll(&pfd, 1, &ts, NULL);
		if (rc < 0 && errno != EINTR)
			goto io_err;
		if (rc > 0 && redisBufferRead(c) != REDIS_OK)
			goto io_err;
		t_rx = sl_hist_now_ns();
	}
	res->end_ns = sl_hist_now_ns();
	ret = 0;
	goto out;
io_err:
	fprintf(stderr, "%s: connection error: %s\n", prog, c->errstr);
out:
	free(q);
	free(buf);
	return ret;
}

static void *
consumer_main(void *arg)
{
	struct consumer *cs = arg;
	const struct sl_peer_opts *o = cs->o;
	char count[16];
	const char *rd[] = {"XREADGROUP", "GROUP", GROUP,     "c1",    "COUNT", count,
			    "BLOCK",      "200",   "STREAMS", cs->key, ">"};
	const char **ack;
	redisReply *r, *ents;
	uint64_t stamp, t;
	size_t i, nack;

	snprintf(count, sizeof(count), "%u", o->fetch);
	ack = malloc((3 + o->fetch) * sizeof(*ack));
	if (ack == NULL) {
		snprintf(cs->err, sizeof(cs->err), "out of memory");
		return NULL;
	}
	ack[0] = "XACK";
	ack[1] = cs->key;
	ack[2] = GROUP;
	while (cs->consumed < o->count) {
		bool idle_after_pub = atomic_load(&cs->pub_done);

		if (sl_hist_now_ns() >= cs->deadline_ns) {
			snprintf(cs->err, sizeof(cs->err), "timed out");
			break;
		}
		r = redisCommandArgv(cs->c, 11, rd, NULL);
		if (r == NULL || r->type == REDIS_REPLY_ERROR) {
			snprintf(cs->err, sizeof(cs->err), "XREADGROUP: %.100s",
				 r ? r->str : cs->c->errstr);
			if (r != NULL)
				freeReplyObject(r);
			break;
		}
		if (r->type != REDIS_REPLY_ARRAY || r->elements < 1) {
			freeReplyObject(r);
			/* Empty read after the last XADD was acknowledged: nothing is left. */
			if (idle_after_pub) {
				snprintf(cs->err, sizeof(cs->err), "stream drained early");
				break;
			}
			continue;
		}
		t = sl_hist_now_ns();
		ents = r->element[0]->element[1];
		nack = 3;
		for (i = 0; i < ents->elements; i++) {
			redisReply *e = ents->element[i];
			redisReply *fv = e->element[1];

			ack[nack++] = e->element[0]->str;
			if (fv->elements < 2 || fv->element[1]->len < STAMP_BYTES) {
				cs->errors++;
				continue;
			}
			memcpy(&stamp, fv->element[1]->str, STAMP_BYTES);
			if (stamp == 0)
				continue; /* warmup */
			sl_hist_add(&cs->hist, t - stamp);
			cs->consumed++;
		}
		if (nack > 3) {
			if (!command_ok(cs->c, "XACK", (int)nack, ack))
				cs->errors++;
			cs->last_ns = sl_hist_now_ns();
		}
		freeReplyObject(r);
	}
	free(ack);
	return NULL;
}

/* A producer of --producers N: warm up, wait for the start, publish its share. */
static void *
producer_main(void *arg)
{
	struct producer *p = arg;
	struct pub_result wres;

	if (p->warmup > 0 && publish(p->o, p->c, p->key, p->warmup, NULL, sl_hist_now_ns(),
				     p->deadline_ns, &wres) < 0)
		p->rc = -1;
	pthread_barrier_wait(p->start); /* warmed up: main reads the clocks */
	pthread_barrier_wait(p->start); /* go */
	if (p->rc == 0 && publish(p->o, p->c, p->key, p->count, &p->hist, sl_hist_now_ns(),
				  p->deadline_ns, &p->res) < 0)
		p->rc = -1;
	if (p->res.end_ns == 0)
		p->res.end_ns = sl_hist_now_ns();
	return NULL;
}

/*
 * --producers N: N threads and connections publish count/N each into the same stream.
 * Their latencies go to h, their sums to res; *cpu0 and *t0 are read once every producer
 * has warmed up, just before they all start. Returns -1 when a producer failed.
 */
static int
run_producers(const struct sl_peer_opts *o, const char *key, uint64_t deadline,
	      struct sl_hist *h, struct pub_result *res, double *cpu0, uint64_t *t0)
{
	pthread_barrier_t start;
	struct producer *p;
	uint32_t i;
	int ret = 0;

	p = calloc(nprod, sizeof(*p));
	if (p == NULL || pthread_barrier_init(&start, NULL, nprod + 1) != 0) {
		fprintf(stderr, "%s: out of memory\n", prog);
		exit(2);
	}
	for (i = 0; i < nprod; i++) {
		p[i] = (struct producer){
			.o = o,
			.key = key,
			.start = &start,
			.deadline_ns = deadline,
			.warmup = o->warmup / nprod + (i < o->warmup % nprod),
			.count = o->count / nprod + (i < o->count % nprod),
			.c = connect_or_die(o),
		};
		sl_hist_init(&p[i].hist);
	}
	for (i = 0; i < nprod; i++)
		if (pthread_create(&p[i].tid, NULL, producer_main, &p[i]) != 0) {
			fprintf(stderr, "%s: cannot start producer thread %u\n", prog, i);
			exit(2);
		}
	pthread_barrier_wait(&start);
	*cpu0 = sl_peer_proc_cpu_ns(o->server_pid);
	*t0 = sl_hist_now_ns();
	pthread_barrier_wait(&start);
	*res = (struct pub_result){0};
	for (i = 0; i < nprod; i++) {
		pthread_join(p[i].tid, NULL);
		sl_hist_merge(h, &p[i].hist);
		res->acked += p[i].res.acked;
		res->errors += p[i].res.errors;
		res->timed_out |= p[i].res.timed_out;
		if (p[i].res.end_ns > res->end_ns)
			res->end_ns = p[i].res.end_ns;
		if (p[i].rc != 0)
			ret = -1;
		redisFree(p[i].c);
	}
	pthread_barrier_destroy(&start);
	free(p);
	return ret;
}

int
main(int argc, char **argv)
{
	struct consumer cs = {0};
	struct pub_result wres, res;
	struct sl_hist hist;
	struct sl_report rep;
	redisContext *c;
	char key[64], note[256];
	uint64_t t0, deadline, end;
	double cpu0, cpu1;
	struct sl_peer_opts o;
	FILE *jf = stdout;
	int rc = 0;

	parse_opts(&o, argc, argv);
	prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
	c = connect_or_die(&o);
	snprintf(key, sizeof(key), "slbench:%d:%" PRIu64, (int)getpid(), sl_hist_now_ns());
	deadline = sl_hist_now_ns() + (uint64_t)(o.timeout_s * 1e9);
	sl_hist_init(&hist);
	if (o.pubsub) {
		const char *cr[] = {"XGROUP", "CREATE", key, GROUP, "$", "MKSTREAM"};

		if (!command_ok(c, "XGROUP CREATE", 6, cr))
			return 2;
		cs.o = &o;
		cs.key = key;
		cs.c = connect_or_die(&o);
		cs.deadline_ns = deadline;
		sl_hist_init(&cs.hist);
		atomic_init(&cs.pub_done, false);
		if (pthread_create(&cs.tid, NULL, consumer_main, &cs) != 0) {
			fprintf(stderr, "%s: cannot start the consumer thread\n", prog);
			return 2;
		}
	}
	if (nprod > 1) {
		if (run_producers(&o, key, deadline, &hist, &res, &cpu0, &t0) < 0)
			rc = 1;
	} else {
		if (o.warmup > 0 && publish(&o, c, key, o.warmup, NULL, sl_hist_now_ns(),
					    deadline, &wres) < 0)
			return 2;
		cpu0 = sl_peer_proc_cpu_ns(o.server_pid);
		t0 = sl_hist_now_ns();
		if (publish(&o, c, key, o.count, &hist, t0, deadline, &res) < 0)
			rc = 1;
	}
	end = res.end_ns;
	if (o.pubsub) {
		atomic_store(&cs.pub_done, true);
		pthread_join(cs.tid, NULL);
		if (cs.err[0] != '\0')
			fprintf(stderr, "%s: consumer: %s\n", prog, cs.err);
		end = cs.last_ns;
	}
	cpu1 = sl_peer_proc_cpu_ns(o.server_pid);
	{
		const char *del[] = {"DEL", key};

		command_ok(c, "DEL", 2, del);
	}

	rep = (struct sl_report){
		.system = "redis",
		.workload = o.pubsub ? "pubsub" : "pub",
		.mode = o.rate > 0 ? "open" : "closed",
		.msg_size = o.size,
		.batch = o.batch,
		.window = o.window,
		.producers = nprod,
		.offered_per_s = o.rate,
		.count = o.count,
		.cpu_ns_per_msg = -1,
		.note = note,
	};
	if (o.pubsub) {
		rep.acked = cs.consumed;
		rep.errors = o.count - cs.consumed + cs.errors;
		rep.lat = &cs.hist;
		snprintf(note, sizeof(note),
			 "redis streams consumer group: XREADGROUP COUNT %u + XACK, rate consumed, "
			 "latency (intended) send to delivery; publisher %.0f XADD/s acked",
			 o.fetch,
			 res.end_ns > t0 ? (double)res.acked * 1e9 / (double)(res.end_ns - t0) : 0);
	} else {
		rep.acked = res.acked;
		rep.errors = o.count - res.acked;
		rep.lat = &hist;
		snprintf(note, sizeof(note),
			 "redis streams XADD, %u pipelined per request, latency per XADD reply%s",
			 o.batch, nprod > 1 ? ", one stream, a connection per producer" : "");
	}
	rep.elapsed_s = end > t0 ? (double)(end - t0) / 1e9 : 0;
	/* /proc counts clock ticks: below MIN_CPU_TICKS the figure would be noise. */
	if (cpu0 >= 0 && cpu1 >= 0 && rep.acked > 0 &&
	    cpu1 - cpu0 >= MIN_CPU_TICKS * 1e9 / (double)sysconf(_SC_CLK_TCK))
		rep.cpu_ns_per_msg = (cpu1 - cpu0) / (double)rep.acked;
	if (res.timed_out) {
		fprintf(stderr, "%s: timed out after %.0f s\n", prog, o.timeout_s);
		strncat(note, "; TIMED OUT", sizeof(note) - strlen(note) - 1);
	}

	if (o.header)
		sl_report_header(stderr);
	sl_report_row(stderr, &rep);
	if (o.json != NULL) {
		jf = fopen(o.json, "a");
		if (jf == NULL) {
			fprintf(stderr, "%s: cannot open %s: %s\n", prog, o.json, strerror(errno));
			return 2;
		}
	}
	sl_report_json(jf, &rep);
	if (jf != stdout)
		fclose(jf);
	if (o.cdf != NULL && sl_peer_write_cdf(o.cdf, &rep) != 0) {
		fprintf(stderr, "%s: cannot write %s\n", prog, o.cdf);
		rc = 1;
	}
	if (o.pubsub)
		redisFree(cs.c);
	redisFree(c);
	if (rep.acked < o.count || rep.errors > 0)
		rc = 1;
	return rc;
}
