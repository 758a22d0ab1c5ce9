/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * sluice-bench: the load generator of the benchmark suite, on libsluice.
 *
 *   sluice-bench [EAL options --] [options]      (EAL options only with --xport dpdk or
 *                                                 --role reflector)
 *
 * Roles:
 *   client (default)  drive a broker (or a reflector) and report one result per workload;
 *   reflector         a DPDK process that bounces every UDP datagram to its sender (and
 *                     answers ARP): the same packet path with no broker work, i.e. the
 *                     ceiling a broker on that path can approach.
 *
 * Workloads (--workload):
 *   pub      PUB of --size bytes; closed loop with --window requests in flight, or open
 *            loop at --rate messages/s;
 *   mpub     MPUB of --batch messages per request (same loops);
 *   pubsub   PUB as above while the same client consumes channel "bench" (auto FIN);
 *            reports the publish result and the end-to-end (publish to delivery) result;
 *   reflect  raw frames of the same size as a PUB against a reflector: the ceiling.
 *
 * Latency: per request, from its send time (closed loop) or from its *intended* send time
 * on the fixed schedule (open loop), so a stalled sender is measured, not hidden
 * (no coordinated omission). Histograms are log-bucketed (hist.h).
 * Broker CPU per message: --ctl SOCKET reads the workers' busy-cycle counters through the
 * control socket before and after the measured phase.
 * Answers: every publish ends acked, refused (an ERR answer: busy back pressure such as
 * SL_E_FULL counted apart from the others) or timed out (no answer within libsluice's
 * timeout); the three counts are printed after each row ("answers:") and put in the
 * note of the JSON line. By default a busy answer ends the publish at once (libsluice's
 * fail_busy), so a full partition costs answers, not time-outs; --busy-retry resends
 * them as an application on libsluice's defaults does.
 * Durable publishing: with --ctl, the persistence lcore's syncs over the measured phase
 * give the messages per sync (group commit); with --fsync-rate (the disk's fdatasync/s,
 * from sluice-disk-bench) the row is followed by the group-commit ceiling (messages per
 * sync x fsync rate, and requests in flight x fsync rate) and the ratio to it.
 * Output: one human table row per result on stdout, and JSON lines (report.h) to --json.
 * Exit status: 0; 1 when a publish ended with a time-out or an error other than a busy
 * refusal (refusals are the broker's answers, counted, not a failed run); 2 usage, setup.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_interrupts.h>
#include <rte_mbuf.h>
#include <rte_pause.h>

#include "client.h"
#include "bytes.h"
#include "err.h"
#include "hist.h"
#include "net.h"
#include "opt.h"
#include "report.h"
#include "wire.h"
#include "xport.h"

#define MAX_WINDOW 4096
#define CLIENT_IDLE_MAX 10000	/* --client-idle-us: a longer back-off would outlast the
				 * retransmission timer it waits beside */
#define REFLECT_RING 8192 /* power of two, > MAX_WINDOW */
#define COUNT_MAX (UINT64_C(1) << 40)	/* --count, --warmup */
#define SIZE_MAX_OPT 65536		/* --size: larger than any datagram */
#define MTU_MAX_OPT 9600		/* --mtu: 0 = the port's */
#define PROG "sluice-bench"
#define NUM(name, lo, hi) sl_opt_num(PROG, name, optarg, lo, hi)
#define REFLECT_LOSS_US 200000

static volatile int quit;

struct opts {
	int reflector;
	enum sl_xport_kind xport;
	const char *broker;
	const char *local_ip;
	uint16_t broker_port;
	const char *topic;
	uint16_t partition;
	const char *workload;
	uint32_t size;
	uint64_t count;
	uint64_t warmup;
	uint32_t batch;
	uint32_t window;
	double rate;
	const char *json;
	const char *cdf;
	const char *ctl;
	const char *system;
	uint32_t idle_polls;
	uint32_t client_idle_us;
	uint16_t mtu;
	uint32_t producers;
	const char *note;
	int quiet;
	int busy_retry;		/* resend publishes answered busy (libsluice's default) */
	int no_bundle;		/* kernel UDP: no bundles (conf.no_bundle) */
	uint32_t retry_ms;	/* libsluice's first retransmission timeout; 0 = its own */
	uint32_t timeout_ms;	/* libsluice's request timeout; 0 = its own */
	double fsync_rate;	/* the disk's fdatasync/s (sluice-disk-bench); 0 = unknown */
};

static void
on_signal(int sig)
{
	(void)sig;
	quit = 1;
}

/* ---- broker CPU through the control socket ---- */

static char ctl_buf[1 << 18];

/* The one-line JSON reply of control command cmd (with its newline) in ctl_buf: 0 or -1. */
static int
ctl_ask(const char *sock, const char *cmd)
{
	struct sockaddr_un sa;
	size_t n = 0, len = strlen(cmd);
	ssize_t r;
	int fd, rc = -1;

	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	if (fd < 0)
		return -1;
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
	    write(fd, cmd, len) != (ssize_t)len)
		goto out;
	while (n < sizeof(ctl_buf) - 1 &&
	       (r = read(fd, ctl_buf + n, sizeof(ctl_buf) - 1 - n)) > 0) {
		n += (size_t)r;
		if (memchr(ctl_buf, '\n', n) != NULL)
			break;
	}
	ctl_buf[n] = '\0';
	rc = n > 0 ? 0 : -1;
out:
	close(fd);
	return rc;
}

/* The control socket's answer in ctl_buf as a JSON object (jansson), or NULL. */
static json_t *
ctl_json(const char *sock, const char *cmd)
{
	json_t *o;

	if (ctl_ask(sock, cmd) != 0)
		return NULL;
	o = json_loads(ctl_buf, 0, NULL);
	if (o != NULL && !json_is_object(o)) {
		json_decref(o);
		o = NULL;
	}
	return o;
}

/* Sum of the workers' busy cycles and the TSC rate, from "stats workers". */
static int
broker_busy(const char *sock, uint64_t *busy, uint64_t *hz)
{
	json_t *o = ctl_json(sock, "stats workers\n"), *w;
	size_t i;
	int rc = -1;

	*busy = 0;
	*hz = 0;
	if (o == NULL || !json_is_integer(json_object_get(o, "tsc_hz")))
		goto out;
	*hz = (uint64_t)json_integer_value(json_object_get(o, "tsc_hz"));
	json_array_foreach(json_object_get(o, "workers"), i, w)
		*busy += (uint64_t)json_integer_value(json_object_get(w, "busy_cycles"));
	rc = 0;
out:
	json_decref(o);
	return rc;
}

/* The persistence lcore's syncs so far: how many, the time spent in them, the longest,
 * and how many took more than 10 and more than 25 ms (a client's retransmission timeout,
 * 20 ms at least in libsluice, lies between), from "stats all" ("persist": {... "syncs",
 * "sync_us", "sync_max_us", "sync_hist_le_us", "sync_hist"}). */
struct syncs {
	uint64_t n, us, max_us, over10, over25;
	uint64_t ckpts, ckpt_us, ckpt_max_us;	/* checkpoints: count, time, longest */
};

/* 0, or -1 when the broker has no persistence lcore. */
static int
broker_syncs(const char *sock, struct syncs *s)
{
	json_t *o = ctl_json(sock, "stats all\n"), *p, *le, *cnt;
	uint64_t lower, c;
	size_t i;
	int rc = -1;

	memset(s, 0, sizeof(*s));
	p = o != NULL ? json_object_get(o, "persist") : NULL;
	if (!json_is_integer(json_object_get(p, "syncs")))
		goto out;
	s->n = (uint64_t)json_integer_value(json_object_get(p, "syncs"));
	s->us = (uint64_t)json_integer_value(json_object_get(p, "sync_us"));
	s->max_us = (uint64_t)json_integer_value(json_object_get(p, "sync_max_us"));
	s->ckpts = (uint64_t)json_integer_value(json_object_get(p, "checkpoints"));
	s->ckpt_us = (uint64_t)json_integer_value(json_object_get(p, "checkpoint_us"));
	s->ckpt_max_us = (uint64_t)json_integer_value(json_object_get(p, "checkpoint_max_us"));
	/* count i lies above bound i - 1: count it by that lower edge */
	le = json_object_get(p, "sync_hist_le_us");
	cnt = json_object_get(p, "sync_hist");
	for (i = 1; i < json_array_size(cnt) && i <= json_array_size(le); i++) {
		lower = (uint64_t)json_integer_value(json_array_get(le, i - 1));
		c = (uint64_t)json_integer_value(json_array_get(cnt, i));
		s->over10 += lower >= 10000 ? c : 0;
		s->over25 += lower >= 25000 ? c : 0;
	}
	rc = 0;
out:
	json_decref(o);
	return rc;
}

/* ---- results ---- */

static void
emit(const struct opts *o, struct sl_report *r, const struct sl_hist *h)
{
	FILE *f;

	r->lat = h;
	if (r->note == NULL)
		r->note = o->note;
	sl_report_row(stdout, r);
	fflush(stdout);
	if (o->json != NULL) {
		f = strcmp(o->json, "-") == 0 ? stdout : fopen(o->json, "a");
		if (f == NULL) {
			fprintf(stderr, "sluice-bench: %s: %s\n", o->json, strerror(errno));
		} else {
			sl_report_json(f, r);
			if (f != stdout)
				fclose(f);
		}
	}
	if (o->cdf != NULL && h != NULL && h->count > 0) {
		char label[96], batch[16] = "";

		f = fopen(o->cdf, "a");
		if (f == NULL) {
			fprintf(stderr, "sluice-bench: %s: %s\n", o->cdf, strerror(errno));
			return;
		}
		/* one curve per system, workload, message size and loop */
		if (r->batch > 1)
			snprintf(batch, sizeof(batch), "x%u", r->batch);
		snprintf(label, sizeof(label), "%s-%s%s-%uB-%s", r->system, r->workload, batch,
			 r->msg_size, r->mode);
		sl_hist_write_cdf(h, f, label);
		fclose(f);
	}
}

/* ---- publish workloads over libsluice ---- */

/* How the publishes of a run ended, in requests. */
struct answers {
	uint64_t acked;		/* OK */
	uint64_t full;		/* ERR SL_E_FULL: the partition's back pressure */
	uint64_t busy;		/* other busy ERRs: WRITE_DISABLED, QUORUM, OUT_OF_ORDER */
	uint64_t other;		/* any other ERR, or refused by libsluice before sending */
	uint64_t timeouts;	/* no answer within libsluice's timeout */
	uint64_t bundled;	/* sessions whose requests and answers shared datagrams */
};

static void
answers_add(struct answers *a, int err)
{
	if (err == 0)
		a->acked++;
	else if (err == -SL_E_FULL)
		a->full++;
	else if (err == -SL_E_WRITE_DISABLED || err == -SL_E_QUORUM ||
		 err == -SL_E_OUT_OF_ORDER)
		a->busy++;
	else if (err == -SL_E_TIMEOUT)
		a->timeouts++;
	else
		a->other++;
}

static void
answers_sum(struct answers *a, const struct answers *b)
{
	a->acked += b->acked;
	a->full += b->full;
	a->busy += b->busy;
	a->other += b->other;
	a->timeouts += b->timeouts;
	a->bundled += b->bundled;
}

/* The answers line after a row, and the same counts in the JSON note (buf). */
static const char *
answers_print(const struct opts *o, const struct answers *a, char *buf, size_t cap)
{
	printf("answers: %" PRIu64 " acked, %" PRIu64 " refused full (SL_E_FULL), %" PRIu64
	       " refused busy (write disabled, quorum, out of order), %" PRIu64
	       " other errors, %" PRIu64 " time-outs (requests; busy answers %s); %" PRIu64
	       " of %u sessions bundled\n",
	       a->acked, a->full, a->busy, a->other, a->timeouts,
	       o->busy_retry ? "resent until the time-out" : "end the request at once",
	       a->bundled, o->producers > 1 ? o->producers : 1);
	snprintf(buf, cap, "%s%sacked_reqs=%" PRIu64 " refused_full=%" PRIu64
		 " refused_busy=%" PRIu64 " other_errors=%" PRIu64 " timeouts=%" PRIu64
		 " bundled_sessions=%" PRIu64,
		 o->note != NULL ? o->note : "", o->note != NULL ? "; " : "", a->acked, a->full,
		 a->busy, a->other, a->timeouts, a->bundled);
	return buf;
}

/* Durable publishing: messages per sync of the persistence lcore over the phase, and,
 * with the disk's fdatasync rate, the group-commit ceiling and the ratio to it. */
static void
group_commit_print(const struct opts *o, const struct sl_report *r, const struct syncs *s0,
		   const struct syncs *s1)
{
	uint64_t syncs = s1->n - s0->n, sync_us = s1->us - s0->us;
	double per_sync, rate, ceil_meas, ceil_window;

	if (syncs == 0 || r->acked == 0 || r->elapsed_s <= 0)
		return;
	per_sync = (double)r->acked / (double)syncs;
	rate = (double)r->acked / r->elapsed_s;
	printf("group commit: %" PRIu64 " syncs, %.1f msgs per sync, %.0f syncs/s", syncs,
	       per_sync, (double)syncs / r->elapsed_s);
	/* an acknowledgement that waits for its sync bounds a sync at what is in flight:
	 * more per sync means the syncs are not in the acknowledgement path (page-cache
	 * durability, synced by time): a ceiling from them would mean nothing */
	if (per_sync > (double)o->window * r->batch) {
		printf(" (more than the %u in flight: the acknowledgements did not wait for "
		       "these syncs, no group-commit ceiling)\n",
		       o->window * r->batch);
		return;
	}
	/* the disk as the broker saw it in this run: the rate its own syncs allow */
	if (sync_us > 0)
		printf(", fdatasync in the broker %.2f ms mean (%.0f/s, max %.1f ms since start;"
		       " %" PRIu64 " syncs over 10 ms and %" PRIu64 " over 25 ms in the run;"
		       " %" PRIu64 " checkpoints in the run, %.1f ms mean, max %.1f ms since"
		       " start), in-run ceiling %.0f msg/s, ratio %.2f",
		       (double)sync_us / 1e3 / syncs, 1e6 * syncs / (double)sync_us,
		       s1->max_us / 1e3, s1->over10 - s0->over10, s1->over25 - s0->over25,
		       s1->ckpts - s0->ckpts,
		       s1->ckpts > s0->ckpts ? (double)(s1->ckpt_us - s0->ckpt_us) / 1e3 /
						       (double)(s1->ckpts - s0->ckpts) : 0.0,
		       s1->ckpt_max_us / 1e3,
		       per_sync * 1e6 * syncs / (double)sync_us,
		       rate / (per_sync * 1e6 * syncs / (double)sync_us));
	if (o->fsync_rate <= 0) {
		printf(" (give --fsync-rate for the ceiling)\n");
		return;
	}
	/* the ceiling with what was in flight per sync, and with the whole window */
	ceil_meas = per_sync * o->fsync_rate;
	ceil_window = (double)o->window * r->batch * o->fsync_rate;
	printf("; disk %.0f fdatasync/s: ceiling %.0f msg/s (msgs per sync x rate), ratio "
	       "%.2f (target >= 0.80); window ceiling %.0f msg/s (%u in flight x rate), "
	       "ratio %.2f\n", o->fsync_rate, ceil_meas, rate / ceil_meas, ceil_window,
	       o->window * r->batch, rate / ceil_window);
}

struct slot {
	uint64_t t0;		/* send time (closed) or intended send time (open), ns */
	struct slot *next_free;
};

struct run {
	struct sl_client *c;
	const struct opts *o;
	struct slot slots[MAX_WINDOW + 1];
	struct slot *free;
	struct sl_hist lat;
	struct sl_hist e2e;
	uint64_t acked, errors, delivered, out_of_order, last_id;
	struct answers ans;
	int first_err;
	int measuring;
	uint8_t *payload;
	const void **datas;
	uint32_t *lens;
};

static void
pub_done(struct run *run, struct slot *s, const struct sl_pub_result *res)
{
	uint64_t t = sl_hist_now_ns();

	answers_add(&run->ans, res->err);
	if (res->err != 0) {
		if (run->errors++ == 0)
			run->first_err = res->err;
	} else {
		run->acked += res->count;
		if (run->measuring)
			sl_hist_add(&run->lat, t - s->t0);
	}
	s->next_free = run->free;
	run->free = s;
}

/* the run the callbacks of this thread's client belong to (one client per thread) */
static __thread struct run *cur_run;

static void
pub_cb(void *arg, const struct sl_pub_result *res)
{
	pub_done(cur_run, arg, res);
}

static int
msg_cb(void *arg, const struct sl_client_msg *m)
{
	struct run *run = arg;
	uint64_t t0;

	if (m->len >= sizeof(t0) && run->measuring) {
		memcpy(&t0, m->data, sizeof(t0));
		sl_hist_add(&run->e2e, sl_hist_now_ns() - t0);
	}
	if (m->id != run->last_id + 1 && run->last_id != 0)
		run->out_of_order++;
	run->last_id = m->id;
	run->delivered++;
	return 0; /* FIN */
}

static struct slot *
slot_get(struct run *run)
{
	struct slot *s;

	while (run->free == NULL && !quit)
		sl_client_poll(run->c, 100);
	s = run->free;
	if (s != NULL)
		run->free = s->next_free;
	return s;
}

/* Send n requests: closed loop (window) or open loop (rate). Returns the elapsed ns from
 * the first send to the last answer. Closed loop: every free slot gets its request
 * (sl_client_pub_async only queues it in libsluice's send batch) and then one poll sends
 * them all (one sendmmsg over kernel UDP) and takes the answers that came, so a window
 * costs a few system calls; a request's latency runs from its submission as before. */
static uint64_t
pub_phase(struct run *run, uint64_t n)
{
	const struct opts *o = run->o;
	uint32_t per_req = strcmp(o->workload, "mpub") == 0 ? o->batch : 1;
	uint64_t i, start, next, interval_ns = 0;
	uint32_t k;

	if (o->rate > 0)
		interval_ns = (uint64_t)(1e9 * per_req / o->rate);
	start = sl_hist_now_ns();
	next = start;
	for (i = 0; i < n && !quit; i++) {
		struct slot *s;
		uint64_t t;
		int rc;

		if (interval_ns != 0) {
			/* open loop: wait for this request's slot in the schedule, answering
			 * whatever arrives meanwhile. The wait is a poll with the time left as
			 * its time-out, so a DPDK client with --client-idle-us sleeps through
			 * it (else a light-load run spins a CPU the nodes may share) */
			while ((t = sl_hist_now_ns()) < next)
				sl_client_poll(run->c, (uint32_t)((next - t) / 1000));
			s = slot_get(run);
			if (s == NULL)
				break;
			s->t0 = next;
			next += interval_ns;
		} else {
			s = slot_get(run);
			if (s == NULL)
				break;
			s->t0 = sl_hist_now_ns();
		}
		t = sl_hist_now_ns();
		for (k = 0; k < per_req; k++)
			memcpy(run->payload + (size_t)k * o->size, &t,
			       o->size >= sizeof(t) ? sizeof(t) : 0);
		rc = sl_client_pub_async(run->c, o->topic, o->partition, per_req, run->datas,
					 run->lens, pub_cb, s);
		if (rc != 0) {
			if (run->errors++ == 0)
				run->first_err = rc;
			run->ans.other++;
			s->next_free = run->free;
			run->free = s;
		}
	}
	sl_client_flush(run->c, 30000);
	return sl_hist_now_ns() - start;
}

/* Payload and free slots of a run for client c. 0 or -ENOMEM. */
static int
run_init(struct run *run, const struct opts *o, struct sl_client *c)
{
	uint32_t per_req = strcmp(o->workload, "mpub") == 0 ? o->batch : 1;
	uint32_t k;

	run->c = c;
	run->o = o;
	sl_hist_init(&run->lat);
	sl_hist_init(&run->e2e);
	run->payload = calloc(per_req, o->size ? o->size : 1);
	run->datas = calloc(per_req, sizeof(*run->datas));
	run->lens = calloc(per_req, sizeof(*run->lens));
	if (run->payload == NULL || run->datas == NULL || run->lens == NULL)
		return -ENOMEM;
	for (k = 0; k < per_req; k++) {
		memset(run->payload + (size_t)k * o->size, 'a' + (int)(k % 26), o->size);
		run->datas[k] = run->payload + (size_t)k * o->size;
		run->lens[k] = o->size;
	}
	for (k = 0; k < o->window; k++) {
		run->slots[k].next_free = run->free;
		run->free = &run->slots[k];
	}
	return 0;
}

static void
run_fini(struct run *run)
{
	free(run->payload);
	free(run->datas);
	free(run->lens);
	free(run);
}

static int
run_pub(const struct opts *o, struct sl_client *c)
{
	struct run *run = calloc(1, sizeof(*run));
	uint32_t per_req = strcmp(o->workload, "mpub") == 0 ? o->batch : 1;
	int pubsub = strcmp(o->workload, "pubsub") == 0;
	uint64_t busy0 = 0, busy1 = 0, hz = 0, elapsed, reqs, deadline, acked0;
	struct syncs sy0 = {0}, sy1 = {0};
	uint64_t failed;
	struct sl_client_stats cs0, cs1;
	struct sl_report r;
	char note[512];
	int have_cpu = 0, have_syncs = 0;

	if (run == NULL || run_init(run, o, c) != 0) {
		if (run != NULL)
			run_fini(run);
		return -ENOMEM;
	}
	cur_run = run;
	if (pubsub) {
		int64_t sub = sl_client_sub(c, o->topic, o->partition == SL_WIRE_PART_ANY
							 ? 0 : o->partition, "bench",
					    SL_WIRE_SUB_EPHEMERAL, 1024, msg_cb, run);

		if (sub < 0) {
			fprintf(stderr, "sluice-bench: subscribe: %s\n", sl_strerror((int)sub));
			return (int)sub;
		}
		/* only what this run publishes */
		if (sl_client_set_offset(c, (uint64_t)sub, SL_OFF_END, 0) != 0)
			fprintf(stderr, "sluice-bench: set_offset end failed\n");
	}
	/* warm-up: not measured */
	pub_phase(run, (o->warmup + per_req - 1) / per_req);
	if (pubsub) {
		deadline = sl_hist_now_ns() + 10000000000ull;
		while (run->delivered < run->acked && sl_hist_now_ns() < deadline && !quit)
			sl_client_poll(c, 1000);
	}
	acked0 = run->acked;
	run->delivered = 0;
	run->out_of_order = 0;
	run->errors = 0;
	memset(&run->ans, 0, sizeof(run->ans));
	run->ans.bundled = (uint64_t)sl_client_bundled(c);
	if (o->ctl != NULL) {
		have_cpu = broker_busy(o->ctl, &busy0, &hz) == 0;
		have_syncs = broker_syncs(o->ctl, &sy0) == 0;
	}
	sl_client_get_stats(c, &cs0);
	run->measuring = 1;
	reqs = (o->count + per_req - 1) / per_req;
	elapsed = pub_phase(run, reqs);
	if (o->ctl != NULL && have_cpu)
		have_cpu = broker_busy(o->ctl, &busy1, &hz) == 0 && hz > 0;
	if (have_syncs)
		have_syncs = broker_syncs(o->ctl, &sy1) == 0;
	sl_client_get_stats(c, &cs1);

	memset(&r, 0, sizeof(r));
	r.system = o->system;
	r.workload = pubsub ? "pubsub-pub" : o->workload;
	r.mode = o->rate > 0 ? "open" : "closed";
	r.msg_size = o->size;
	r.batch = per_req;
	r.window = o->window;
	r.offered_per_s = o->rate;
	r.count = reqs * per_req;
	r.acked = run->acked - acked0;
	r.errors = run->errors;
	r.retries = cs1.retries - cs0.retries;
	r.elapsed_s = (double)elapsed / 1e9;
	r.cpu_ns_per_msg = have_cpu && r.acked > 0
				   ? (double)(busy1 - busy0) * 1e9 / (double)hz / (double)r.acked
				   : -1;
	if (r.errors > 0)
		fprintf(stderr, "sluice-bench: %" PRIu64 " errors, the first: %s\n", r.errors,
			sl_strerror(run->first_err));
	r.note = answers_print(o, &run->ans, note, sizeof(note));
	printf("client: %" PRIu64 " retransmissions, %" PRIu64 " busy resends, srtt %.1f ms, "
	       "first retransmission after %.1f ms\n", r.retries,
	       cs1.busy_retries - cs0.busy_retries, cs1.srtt_us / 1e3, cs1.rto_us / 1e3);
	emit(o, &r, &run->lat);
	if (have_syncs)
		group_commit_print(o, &r, &sy0, &sy1);
	if (pubsub) {
		uint64_t t0 = sl_hist_now_ns();

		deadline = t0 + 30000000000ull;
		while (run->delivered < r.acked && sl_hist_now_ns() < deadline && !quit)
			sl_client_poll(c, 1000);
		r.workload = "pubsub";
		r.acked = run->delivered;
		r.elapsed_s = (double)(sl_hist_now_ns() - t0 + elapsed) / 1e9;
		r.note = "end to end: publish to delivery; acked = delivered";
		emit(o, &r, &run->e2e);
		if (run->out_of_order)
			fprintf(stderr, "sluice-bench: %" PRIu64 " deliveries out of order\n",
				run->out_of_order);
	}
	failed = run->ans.other + run->ans.timeouts;
	run_fini(run);
	/* refusals (back pressure) are answers, counted and printed: not a failed run */
	return failed > 0 ? 1 : 0;
}

/* ---- several producers (kernel UDP): one thread and one client each ---- */

struct producer {
	pthread_t tid;
	struct opts o;			/* the run's options; rate = this producer's share */
	const struct sl_client_conf *cc;
	pthread_barrier_t *bar;		/* opened + warmed up; go */
	struct run *run;
	struct sl_client_stats cs0, cs1;
	int rc;
};

static void *
producer_main(void *arg)
{
	struct producer *p = arg;
	uint32_t per_req = strcmp(p->o.workload, "mpub") == 0 ? p->o.batch : 1;
	struct sl_client *c = sl_client_open(p->cc);

	if (c == NULL) {
		p->rc = -errno;
	} else {
		p->run = calloc(1, sizeof(*p->run));
		if (p->run == NULL || run_init(p->run, &p->o, c) != 0)
			p->rc = -ENOMEM;
	}
	if (p->rc == 0) {
		cur_run = p->run;
		pub_phase(p->run, (p->o.warmup + per_req - 1) / per_req);
		p->run->acked = 0;
		p->run->errors = 0;
		memset(&p->run->ans, 0, sizeof(p->run->ans));
		p->run->ans.bundled = (uint64_t)sl_client_bundled(c);
		sl_client_get_stats(c, &p->cs0);
	}
	pthread_barrier_wait(p->bar);	/* every producer warmed up: the broker CPU is read */
	pthread_barrier_wait(p->bar);	/* go */
	if (p->rc == 0) {
		p->run->measuring = 1;
		pub_phase(p->run, (p->o.count + per_req - 1) / per_req);
		sl_client_get_stats(c, &p->cs1);
	}
	if (c != NULL)
		sl_client_close(c);
	return NULL;
}

static int
run_producers(const struct opts *o, const struct sl_client_conf *cc)
{
	uint32_t per_req = strcmp(o->workload, "mpub") == 0 ? o->batch : 1;
	uint32_t n = o->producers, i, started = 0;
	struct producer *ps = calloc(n, sizeof(*ps));
	uint64_t busy0 = 0, busy1 = 0, hz = 0, t0, t1;
	pthread_barrier_t bar;
	struct sl_hist lat;
	struct sl_report r;
	struct answers ans = {0};
	char note[512];
	int have_cpu = 0, rc = 0, first_err = 0;

	if (ps == NULL || pthread_barrier_init(&bar, NULL, n + 1) != 0)
		return -ENOMEM;
	memset(&r, 0, sizeof(r));
	sl_hist_init(&lat);
	for (i = 0; i < n; i++) {
		ps[i].o = *o;
		ps[i].o.rate = o->rate / n;
		ps[i].o.count = o->count / n + (i < o->count % n);
		ps[i].o.warmup = o->warmup / n;
		ps[i].cc = cc;
		ps[i].bar = &bar;
		if (pthread_create(&ps[i].tid, NULL, producer_main, &ps[i]) != 0)
			break;
		started++;
	}
	if (started < n) {
		/* the barrier needs everyone: a machine that cannot start n threads is unusable */
		fprintf(stderr, "sluice-bench: cannot start %u producer threads\n", n);
		exit(2);
	}
	pthread_barrier_wait(&bar);
	if (o->ctl != NULL)
		have_cpu = broker_busy(o->ctl, &busy0, &hz) == 0;
	t0 = sl_hist_now_ns();
	pthread_barrier_wait(&bar);
	for (i = 0; i < n; i++)
		pthread_join(ps[i].tid, NULL);
	t1 = sl_hist_now_ns();
	if (have_cpu)
		have_cpu = broker_busy(o->ctl, &busy1, &hz) == 0 && hz > 0;
	for (i = 0; i < n; i++) {
		if (ps[i].rc != 0) {
			fprintf(stderr, "sluice-bench: producer %u: %s\n", i, sl_strerror(ps[i].rc));
			rc = 2;
			continue;
		}
		r.count += (ps[i].o.count + per_req - 1) / per_req * per_req;
		r.acked += ps[i].run->acked;
		r.errors += ps[i].run->errors;
		answers_sum(&ans, &ps[i].run->ans);
		if (first_err == 0)
			first_err = ps[i].run->first_err;
		r.retries += ps[i].cs1.retries - ps[i].cs0.retries;
		sl_hist_merge(&lat, &ps[i].run->lat);
		run_fini(ps[i].run);
	}
	r.system = o->system;
	r.workload = o->workload;
	r.mode = o->rate > 0 ? "open" : "closed";
	r.msg_size = o->size;
	r.batch = per_req;
	r.window = o->window;
	r.producers = n;
	r.offered_per_s = o->rate;
	r.elapsed_s = (double)(t1 - t0) / 1e9;
	r.cpu_ns_per_msg = have_cpu && r.acked > 0
				   ? (double)(busy1 - busy0) * 1e9 / (double)hz / (double)r.acked
				   : -1;
	if (r.errors > 0)
		fprintf(stderr, "sluice-bench: %" PRIu64 " errors, the first: %s\n", r.errors,
			sl_strerror(first_err));
	r.note = answers_print(o, &ans, note, sizeof(note));
	emit(o, &r, &lat);
	pthread_barrier_destroy(&bar);
	free(ps);
	return rc != 0 ? rc : ans.other + ans.timeouts > 0 ? 1 : 0;
}

/* ---- the ceiling: raw frames against a reflector ---- */

static int
run_reflect(const struct opts *o, const struct sl_client_conf *cc)
{
	const struct sl_xport_ops *ops;
	void *x = cc->xport == SL_XPORT_DPDK ? sl_xport_dpdk_open(cc, &ops)
					      : sl_xport_udp_open(cc, &ops);
	static uint64_t sent_at[REFLECT_RING];
	static uint8_t outstanding[REFLECT_RING];
	static uint8_t frame[SL_XPORT_DGRAM_MAX], rx[SL_XPORT_DGRAM_MAX];
	uint32_t per_req = o->batch > 1 ? o->batch : 1;
	const void **datas = calloc(per_req, sizeof(*datas));
	uint32_t *lens = calloc(per_req, sizeof(*lens));
	uint8_t *payload = calloc(per_req, o->size ? o->size : 1);
	struct sl_wire_hdr h;
	struct sl_hist lat;
	struct sl_report r;
	uint64_t seq = 0, done = 0, lost = 0, inflight = 0, total, phase_start = 0;
	uint64_t start, next, interval_ns = 0, last_rx, t;
	int len, n, k;

	if (x == NULL || datas == NULL || lens == NULL || payload == NULL) {
		fprintf(stderr, "sluice-bench: transport: %s\n", strerror(errno));
		return 2;
	}
	for (k = 0; k < (int)per_req; k++) {
		datas[k] = payload + (size_t)k * o->size;
		lens[k] = o->size;
	}
	sl_hist_init(&lat);
	total = o->warmup + (o->count + per_req - 1) / per_req;
	if (o->rate > 0)
		interval_ns = (uint64_t)(1e9 * per_req / o->rate);
	memset(&h, 0, sizeof(h));
	h.version = SL_WIRE_VERSION;
	start = next = last_rx = sl_hist_now_ns();
	while (done + lost < total && !quit) {
		t = sl_hist_now_ns();
		/* send what the window and the schedule allow */
		while (seq < total && inflight < o->window &&
		       (interval_ns == 0 || t >= next)) {
			h.seq = ++seq;
			h.cookie = seq;
			len = sl_wire_encode_pub(frame, sizeof(frame), &h, per_req > 1, 0, o->topic,
						 0, 0, (uint16_t)per_req, datas, lens);
			if (len <= 0)
				return 2;
			sent_at[seq & (REFLECT_RING - 1)] = interval_ns ? next : t;
			outstanding[seq & (REFLECT_RING - 1)] = 1;
			if (interval_ns)
				next += interval_ns;
			if (seq == o->warmup + 1)
				phase_start = t;
			ops->send(x, frame, (uint32_t)len);
			inflight++;
		}
		n = ops->recv(x, rx, sizeof(rx), 0);
		t = sl_hist_now_ns();
		if (n >= SL_WIRE_HDR_LEN) {
			uint64_t s = sl_bytes_get_be64(rx + 16);

			last_rx = t;
			if (s >= 1 && s <= seq && seq - s < REFLECT_RING &&
			    outstanding[s & (REFLECT_RING - 1)]) {
				outstanding[s & (REFLECT_RING - 1)] = 0;
				if (s > o->warmup)
					sl_hist_add(&lat, t - sent_at[s & (REFLECT_RING - 1)]);
				done++;
				inflight--;
			}
		} else if (inflight > 0 && t - last_rx > REFLECT_LOSS_US * 1000ull) {
			/* nothing back for a while: what is in flight is lost */
			lost += inflight;
			inflight = 0;
			memset(outstanding, 0, sizeof(outstanding));
			last_rx = t;
		}
	}
	t = sl_hist_now_ns();
	memset(&r, 0, sizeof(r));
	r.system = o->system;
	r.workload = "reflect";
	r.mode = o->rate > 0 ? "open" : "closed";
	r.msg_size = o->size;
	r.batch = per_req;
	r.window = o->window;
	r.offered_per_s = o->rate;
	r.count = (total - o->warmup) * per_req;
	r.acked = lat.count * per_req;
	r.errors = lost;
	r.elapsed_s = (double)(t - (phase_start ? phase_start : start)) / 1e9;
	r.cpu_ns_per_msg = -1;
	r.note = "raw round trips of PUB-sized frames through a reflector: the path's ceiling";
	emit(o, &r, &lat);
	ops->close(x);
	free(datas);
	free(lens);
	free(payload);
	return 0;
}

/* ---- reflector role ---- */

/*
 * A memif client that goes away while the reflector polls (every ceiling row ends so):
 * DPDK's memif PMD munmap()s the peer's shared regions on the EAL interrupt thread while
 * the reflector's lcore may be inside a receive or transmit burst on them, and the
 * reflector died of SIGSEGV (3 of 21 ceiling rows of tools/bench/run, 2026-11-27). sluiced
 * closes the same window with an RCU grace period (dataplane/port.c); the reflector has one
 * polling thread, so its loop counts iterations instead: an munmap on the interrupt thread
 * while the reflector runs waits (at most REFL_GP_MS) until that count moved twice, so a
 * burst that saw the port connected has returned, and later ones see the flag the PMD
 * cleared before its munmap. The executable exports munmap (tools/bench/meson.build) so
 * the PMD's calls bind to it; every other munmap goes straight to the system call.
 */
#define REFL_GP_MS 200

static uint64_t refl_loops;	/* reflector iterations (its lcore writes, atomics) */
static int refl_running;

/* Interposes libc's munmap for the whole process. Any thread. */
int
munmap(void *addr, size_t len)
{
	if (__atomic_load_n(&refl_running, __ATOMIC_ACQUIRE) && rte_thread_is_intr()) {
		uint64_t start = __atomic_load_n(&refl_loops, __ATOMIC_ACQUIRE);
		uint64_t end = rte_get_timer_cycles() + rte_get_timer_hz() * REFL_GP_MS / 1000;

		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		while (__atomic_load_n(&refl_loops, __ATOMIC_ACQUIRE) - start < 2 &&
		       __atomic_load_n(&refl_running, __ATOMIC_ACQUIRE) &&
		       rte_get_timer_cycles() < end)
			rte_delay_us_sleep(20);
	}
	return (int)syscall(SYS_munmap, addr, len);
}

static int
reflector(const struct opts *o, uint16_t port, struct rte_mempool *pool)
{
	struct sl_net_if nif;
	struct rte_ether_addr mac;
	struct rte_mbuf *pkts[32], *out[32];
	uint64_t rx = 0, tx = 0, empty = 0;
	uint32_t sleep_us = 0;
	uint16_t n, i, nout, sent;
	int rc;

	rc = sl_client_dpdk_port_start(port, pool, o->mtu, 30000);
	if (rc != 0) {
		fprintf(stderr, "sluice-bench: port %u: %s\n", port, strerror(-rc));
		return 2;
	}
	memset(&nif, 0, sizeof(nif));
	rte_eth_macaddr_get(port, &mac);
	memcpy(nif.mac, mac.addr_bytes, 6);
	if (sl_net_parse_ip(o->local_ip, &nif.ip) != 0) {
		fprintf(stderr, "sluice-bench: bad --local-ip\n");
		return 2;
	}
	nif.udp_port_lo = 1;
	nif.udp_port_hi = 65535;
	printf("reflector: port %u, %s, bouncing every UDP datagram\n", port, o->local_ip);
	fflush(stdout);
	__atomic_store_n(&refl_running, 1, __ATOMIC_RELEASE);
	while (!quit) {
		__atomic_store_n(&refl_loops, refl_loops + 1, __ATOMIC_RELEASE);
		n = rte_eth_rx_burst(port, 0, pkts, 32);
		nout = 0;
		for (i = 0; i < n; i++) {
			struct rte_mbuf *m = pkts[i];
			uint8_t *f = rte_pktmbuf_mtod(m, uint8_t *);
			struct sl_net_info info;
			uint32_t len = 0;

			switch (sl_net_parse(f, m->data_len, &nif, 0, &info)) {
			case SL_NET_UDP:
				len = sl_net_udp_reply(f, &info, (uint16_t)info.payload_len, 0);
				break;
			case SL_NET_ARP_REQUEST:
				len = sl_net_arp_reply(f, &nif);
				break;
			case SL_NET_ICMP_ECHO:
				len = sl_net_icmp_reply(f, m->data_len, &info, 0);
				break;
			default:
				break;
			}
			if (len == 0) {
				rte_pktmbuf_free(m);
				continue;
			}
			m->data_len = (uint16_t)len;
			m->pkt_len = len;
			out[nout++] = m;
		}
		rx += n;
		sent = nout ? rte_eth_tx_burst(port, 0, out, nout) : 0;
		tx += sent;
		for (i = sent; i < nout; i++)
			rte_pktmbuf_free(out[i]);
		if (n > 0) {
			empty = 0;
			sleep_us = 0;
		} else if (o->idle_polls > 0 && ++empty >= o->idle_polls) {
			/* adaptive idle, as sluiced's: back off up to 1 ms */
			sleep_us = sleep_us ? RTE_MIN(sleep_us * 2, 1000u) : 10;
			rte_delay_us_sleep(sleep_us);
		}
	}
	__atomic_store_n(&refl_running, 0, __ATOMIC_RELEASE);
	printf("reflector: %" PRIu64 " frames in, %" PRIu64 " out\n", rx, tx);
	return 0;
}

/* ---- main ---- */

static void
usage(FILE *f)
{
	fprintf(f,
		"usage: sluice-bench [EAL options --] [options]\n"
		"  --role client|reflector   (default client)\n"
		"  --xport udp|dpdk          client transport (default udp; dpdk uses port 0 of\n"
		"                            the EAL options, e.g. --vdev net_memif0,...)\n"
		"  -a, --broker IP           broker (or reflector) address\n"
		"  --broker-port N           (default 5150)\n"
		"  --local-ip IP             our address (dpdk client, reflector)\n"
		"  --workload pub|mpub|pubsub|reflect   (default pub)\n"
		"  -t, --topic NAME          (default bench)\n"
		"  -p, --partition N         (default: any)\n"
		"  --size N                  message bytes (default 100)\n"
		"  --count N                 measured messages (default 100000)\n"
		"  --warmup N                messages before measuring (default 10%% of count)\n"
		"  --batch N                 messages per MPUB (default 32); reflect: frames\n"
		"                            of an MPUB of N (default 1)\n"
		"  --window N                requests in flight (default 32, max %d)\n"
		"  --rate R                  open loop: R messages/s on a fixed schedule\n"
		"  --producers N             pub/mpub: N producers, each a thread with its own\n"
		"                            session (kernel UDP; default 1); window, rate and\n"
		"                            count are shared out, latency is merged\n"
		"  --system NAME             label in the output (default sluice / reflector)\n"
		"  --ctl SOCKET              broker control socket: report broker CPU per message\n"
		"  --json FILE               append JSON lines to FILE ('-': stdout)\n"
		"  --cdf FILE                append the latency CDF (gnuplot data) to FILE\n"
		"  --idle-polls N            reflector: sleep after N empty polls (0 = busy)\n"
		"  --client-idle-us N        DPDK client: while waiting for answers (and in an\n"
		"                            open loop, for the next send), sleep after\n"
		"                            64 empty polls, 1 us doubling up to N (0..10000,\n"
		"                            default 0: busy poll); leaves a shared CPU to the broker's\n"
		"                            lcores (replication rows on small machines)\n"
		"  --mtu N                   DPDK: link MTU (jumbo frames for MPUB; on memif,\n"
		"                            give the broker the same --mtu)\n"
		"  --note TEXT               free text for the JSON line (e.g. the topic's layout)\n"
		"  --busy-retry              resend publishes answered busy (SL_E_FULL, ...)\n"
		"                            until the time-out, as libsluice does by default;\n"
		"                            without it a busy answer ends the publish at once\n"
		"  --retry-ms N              libsluice's first retransmission timeout (default:\n"
		"                            libsluice's, adapted to the measured round trip)\n"
		"  --timeout-ms N            libsluice's request timeout (default 5000)\n"
		"  --no-bundle               kernel UDP: every request and its answer in a\n"
		"                            datagram of its own (default: requests ready together\n"
		"                            share datagrams, and so do their answers)\n"
		"  --fsync-rate R            the disk's fdatasync/s (sluice-disk-bench, disk-raw\n"
		"                            always, batch 1): prints the group-commit ceiling\n"
		"  --no-header               do not print the table header\n",
		MAX_WINDOW);
}

static int
parse_opts(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
		{"role", required_argument, NULL, 'R'},
		{"xport", required_argument, NULL, 'X'},
		{"broker", required_argument, NULL, 'a'},
		{"broker-port", required_argument, NULL, 'P'},
		{"local-ip", required_argument, NULL, 'L'},
		{"workload", required_argument, NULL, 'w'},
		{"topic", required_argument, NULL, 't'},
		{"partition", required_argument, NULL, 'p'},
		{"size", required_argument, NULL, 's'},
		{"count", required_argument, NULL, 'n'},
		{"warmup", required_argument, NULL, 'W'},
		{"batch", required_argument, NULL, 'b'},
		{"window", required_argument, NULL, 'k'},
		{"rate", required_argument, NULL, 'r'},
		{"system", required_argument, NULL, 'S'},
		{"ctl", required_argument, NULL, 'c'},
		{"json", required_argument, NULL, 'j'},
		{"cdf", required_argument, NULL, 'C'},
		{"idle-polls", required_argument, NULL, 'I'},
		{"client-idle-us", required_argument, NULL, 'J'},
		{"no-header", no_argument, NULL, 'q'},
		{"mtu", required_argument, NULL, 'M'},
		{"producers", required_argument, NULL, 'D'},
		{"note", required_argument, NULL, 'O'},
		{"busy-retry", no_argument, NULL, 'B'},
		{"retry-ms", required_argument, NULL, 'T'},
		{"timeout-ms", required_argument, NULL, 'U'},
		{"fsync-rate", required_argument, NULL, 'F'},
		{"no-bundle", no_argument, NULL, 'N'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int c, warm_set = 0;

	optind = 1;
	while ((c = getopt_long(argc, argv, "a:t:p:h", lo, NULL)) != -1) {
		switch (c) {
		case 'R':
			if (strcmp(optarg, "reflector") == 0)
				o->reflector = 1;
			else if (strcmp(optarg, "client") != 0)
				return -1;
			break;
		case 'X':
			if (strcmp(optarg, "dpdk") == 0)
				o->xport = SL_XPORT_DPDK;
			else if (strcmp(optarg, "udp") == 0)
				o->xport = SL_XPORT_UDP;
			else
				return -1;
			break;
		case 'a': o->broker = optarg; break;
		case 'P': o->broker_port = (uint16_t)NUM("broker-port", 1, UINT16_MAX); break;
		case 'L': o->local_ip = optarg; break;
		case 'w': o->workload = optarg; break;
		case 't': o->topic = optarg; break;
		case 'p': o->partition = (uint16_t)NUM("partition", 0, UINT16_MAX); break;
		case 's': o->size = (uint32_t)NUM("size", 0, SIZE_MAX_OPT); break;
		case 'n': o->count = NUM("count", 1, COUNT_MAX); break;
		case 'W': o->warmup = NUM("warmup", 0, COUNT_MAX); warm_set = 1; break;
		case 'b': o->batch = (uint32_t)NUM("batch", 1, SL_WIRE_MPUB_MAX); break;
		case 'k': o->window = (uint32_t)NUM("window", 1, MAX_WINDOW); break;
		case 'r': o->rate = sl_opt_real(PROG, "rate", optarg, 0, 1e9); break;
		case 'S': o->system = optarg; break;
		case 'c': o->ctl = optarg; break;
		case 'j': o->json = optarg; break;
		case 'C': o->cdf = optarg; break;
		case 'I': o->idle_polls = (uint32_t)NUM("idle-polls", 0, 1u << 20); break;
		case 'J': o->client_idle_us = (uint32_t)NUM("client-idle-us", 0, CLIENT_IDLE_MAX); break;
		case 'q': o->quiet = 1; break;
		case 'M': o->mtu = (uint16_t)NUM("mtu", 0, MTU_MAX_OPT); break;
		case 'D': o->producers = (uint32_t)NUM("producers", 1, 64); break;
		case 'O': o->note = optarg; break;
		case 'B': o->busy_retry = 1; break;
		case 'N': o->no_bundle = 1; break;
		case 'T': o->retry_ms = (uint32_t)NUM("retry-ms", 0, 60000); break;
		case 'U': o->timeout_ms = (uint32_t)NUM("timeout-ms", 0, 3600000); break;
		case 'F': o->fsync_rate = sl_opt_real(PROG, "fsync-rate", optarg, 0, 1e9); break;
		case 'h': usage(stdout); exit(0);
		default: return -1;
		}
	}
	if (optind != argc)
		return -1;
	if (!warm_set)
		o->warmup = o->count / 10;
	if (o->system == NULL)
		o->system = o->reflector || strcmp(o->workload, "reflect") == 0 ? "reflector"
										 : "sluice";
	return 0;
}

static int
check_opts(const struct opts *o)
{
	const char *w = o->workload;

	if (strcmp(w, "pub") && strcmp(w, "mpub") && strcmp(w, "pubsub") && strcmp(w, "reflect"))
		return fprintf(stderr, "sluice-bench: unknown --workload %s\n", w), -1;
	/* numbers were checked against their bounds as they were read (NUM, sl_opt_*) */
	if (o->producers > 1 && (o->xport != SL_XPORT_UDP ||
				 (strcmp(w, "pub") != 0 && strcmp(w, "mpub") != 0)))
		return fprintf(stderr, "sluice-bench: --producers > 1 is for pub and mpub over "
				       "--xport udp (a DPDK client owns its port queue)\n"),
		       -1;
	if (!o->reflector && o->broker == NULL)
		return fprintf(stderr, "sluice-bench: --broker IP is required\n"), -1;
	if ((o->reflector || o->xport == SL_XPORT_DPDK) && o->local_ip == NULL)
		return fprintf(stderr, "sluice-bench: --local-ip IP is required with DPDK\n"), -1;
	if (strcmp(w, "pubsub") == 0 && o->size < 8)
		return fprintf(stderr, "sluice-bench: pubsub needs --size >= 8 (timestamp)\n"),
		       -1;
	return 0;
}

int
main(int argc, char **argv)
{
	struct opts o = {
		.xport = SL_XPORT_UDP,
		.topic = "bench",
		.partition = SL_WIRE_PART_ANY,
		.workload = "pub",
		.size = 100,
		.count = 100000,
		.window = 32,
		.producers = 1,
		.idle_polls = 256,
	};
	struct sl_client_conf cc;
	struct rte_mempool *pool = NULL;
	struct sl_client *c;
	int has_eal = 0, i, rc;

	for (i = 1; i < argc; i++)
		if (strcmp(argv[i], "--") == 0)
			has_eal = 1;
	if (has_eal) {
		rc = rte_eal_init(argc, argv);
		if (rc < 0) {
			fprintf(stderr, "sluice-bench: EAL init failed: %s\n",
				rte_strerror(rte_errno));
			return 2;
		}
		argc -= rc;
		argv += rc;
	}
	if (parse_opts(argc, argv, &o) != 0) {
		usage(stderr);
		return 2;
	}
	if (o.batch == 0)
		o.batch = strcmp(o.workload, "mpub") == 0 ? 32 : 1;
	else if (strcmp(o.workload, "mpub") != 0 && strcmp(o.workload, "reflect") != 0)
		o.batch = 1;
	if (check_opts(&o) != 0)
		return 2;
	if ((o.reflector || o.xport == SL_XPORT_DPDK) && !has_eal) {
		fprintf(stderr, "sluice-bench: DPDK needs EAL options: sluice-bench --vdev ... "
				"-- [options]\n");
		return 2;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	if (has_eal) {
		if (rte_eth_dev_count_avail() == 0) {
			fprintf(stderr, "sluice-bench: no DPDK port (give --vdev or a PCI device)\n");
			return 2;
		}
		/* mbufs that hold a whole frame, jumbo ones too */
		pool = rte_pktmbuf_pool_create("bench_mbufs", 8191, 256, 0,
					       o.mtu > 1500 ? RTE_PKTMBUF_HEADROOM + o.mtu + 64
							    : RTE_MBUF_DEFAULT_BUF_SIZE,
					       (int)rte_socket_id());
		if (pool == NULL) {
			fprintf(stderr, "sluice-bench: mbuf pool: %s\n", rte_strerror(rte_errno));
			return 2;
		}
	}
	if (o.reflector) {
		/* exit without closing the port: the memif server's teardown races with its
		 * interrupt thread when the peer has just gone; the OS frees everything, and
		 * hugepage files are unlinked (--huge-unlink) or absent (--no-huge) */
		rc = reflector(&o, 0, pool);
		fflush(stdout);
		_exit(rc);
	}
	if (o.xport == SL_XPORT_DPDK) {
		rc = sl_client_dpdk_port_start(0, pool, o.mtu, 30000);
		if (rc != 0) {
			fprintf(stderr, "sluice-bench: port 0: %s\n", strerror(-rc));
			rc = 2;
			goto out;
		}
	}
	memset(&cc, 0, sizeof(cc));
	cc.xport = o.xport;
	cc.broker_ip = o.broker;
	cc.broker_port = o.broker_port;
	/* pubsub: as many requests again for the FINs, so they never wait behind PUBs */
	cc.window = strcmp(o.workload, "pubsub") == 0 ? 2 * o.window : o.window;
	cc.dpdk_port = 0;
	cc.dpdk_pool = pool;
	cc.dpdk_idle_us = o.client_idle_us;
	cc.local_ip = o.local_ip;
	cc.link_mtu = o.mtu;
	cc.fail_busy = !o.busy_retry;
	cc.no_bundle = o.no_bundle;
	cc.retry_ms = o.retry_ms;
	cc.timeout_ms = o.timeout_ms;
	if (!o.quiet)
		sl_report_header(stdout);
	if (strcmp(o.workload, "reflect") == 0) {
		rc = run_reflect(&o, &cc);
		goto out;
	}
	if (o.producers > 1) {
		rc = run_producers(&o, &cc);
		goto out;
	}
	c = sl_client_open(&cc);
	if (c == NULL) {
		fprintf(stderr, "sluice-bench: cannot open a session with %s: %s\n", o.broker,
			sl_strerror(errno));
		rc = 2;
		goto out;
	}
	if (sl_client_welcome(c)->window < cc.window) {
		fprintf(stderr, "sluice-bench: the broker allows %u requests in flight, not %u "
				"(sluiced --window)\n", sl_client_welcome(c)->window, cc.window);
		sl_client_close(c);
		rc = 2;
		goto out;
	}
	rc = run_pub(&o, c);
	sl_client_close(c);
out:
	if (has_eal) {
		if (rte_eth_dev_count_avail() > 0) {
			rte_eth_dev_stop(0);
			rte_eth_dev_close(0);
		}
		rte_eal_cleanup();
	}
	return rc;
}
