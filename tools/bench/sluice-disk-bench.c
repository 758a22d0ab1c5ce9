/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * sluice-disk-bench: the storage append benchmark. How fast the partition log on disk
 * (storage/disklog.h) takes batches of messages, next to the ceiling of the same disk
 * measured in the same run, on the same directory, with the same bytes per write call
 * and the same sync spacing.
 *
 *   sluice-disk-bench [--dir DIR] [--size S] [--batch B[,B...]] [--seconds T | --quick]
 *                     [--policy P[,P...]] [--mpub] [--json FILE]
 *
 * Per batch size B and sync policy P, two runs of --seconds each (or --max-mb written):
 *   disk-raw  sequential pwrite() of the bytes the disk log writes for B messages (message
 *             records and commit records) into one plain file, one call per batch, synced
 *             with fdatasync() per P: the ceiling. It zero-fills the file ahead of its
 *             end as the disk log does (--prealloc KB steps, the broker's by default;
 *             skipped while syncs carry more than SL_DISKLOG_PREALLOC_SYNC_MAX bytes; 0:
 *             plain appends), so that both rows pay the same file-system costs;
 *   disklog   sl_disklog_write() of B messages encoded with sl_disklog_encode_msg() (the
 *             encoding is timed), one commit record per message as a PUB does, or one per
 *             batch as an MPUB (--mpub), synced with sl_disklog_sync() per P.
 * Sync policies: always (after every write call: the persistence lcore's group commit,
 * every batch durable before its acks), every:N (once N messages were written since the
 * last sync), ms:T (once T ms passed since the last sync), none (the page cache's rate).
 * Output: one table row per run (messages/s, disk MB/s, syncs/s, latency of a write call
 * with its sync, appender CPU per message, and the disk log's ratio to disk-raw under the
 * same policy), JSON lines (report.h) to --json, and the target: always >= 0.80 of raw.
 * Every run writes into a fresh scratch directory made under DIR (default /var/tmp) and
 * syncs and deletes its files afterwards (untimed), so runs do not inherit dirty pages.
 * No EAL.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "disklog.h"
#include "persist.h"
#include "hist.h"
#include "opt.h"
#include "report.h"

#define PROG "sluice-disk-bench"
#define MAX_BATCHES 8
#define MAX_POLICIES 8
#define TARGET_RATIO 0.80

static volatile sig_atomic_t quit;

enum pol_kind { POL_ALWAYS, POL_EVERY, POL_MS, POL_NONE };

struct policy {
	enum pol_kind kind;
	uint64_t arg;		/* every: messages; ms: nanoseconds */
	struct sl_persist_policy pol;	/* the broker's policy for ALWAYS, EVERY, MS */
	char name[32];
};

struct opts {
	const char *parent;
	uint32_t size;
	uint32_t batch[MAX_BATCHES];
	uint32_t nbatch;
	struct policy pol[MAX_POLICIES];
	uint32_t npol;
	double seconds;
	uint64_t max_bytes;
	int mpub;
	uint64_t prealloc;	/* zero-fill step, bytes (0: append) */
	const char *json;
	int no_header;
};

/* One configuration: what a write call carries and when to sync. */
struct run {
	const struct opts *o;
	const char *dir;	/* scratch directory */
	uint32_t batch;		/* messages per write call */
	uint32_t ncrec;		/* commit records per write call */
	uint32_t rec;		/* bytes of one message record */
	uint64_t batch_bytes;	/* message and commit record bytes of one write call */
	const struct policy *pol;
};

struct sink;

/* A target of the appends: the raw file or the disk log. */
struct sink_ops {
	const char *system;
	int (*open)(struct sink *s);
	int (*write)(struct sink *s);
	int (*sync)(struct sink *s);
	int (*close)(struct sink *s);	/* untimed: sync the rest, delete the files */
};

struct sink {
	const struct run *r;
	char path[PATH_MAX];
	uint8_t *buf;		/* one write call's bytes */
	int fd;			/* raw */
	off_t off;
	struct sl_disklog *dl;	/* disklog */
	struct sl_crec *crecs;
	uint8_t *payload;
	uint64_t next_id;
	uint64_t next_offset;
	uint64_t zero_end;	/* raw: zero-filled up to here */
	uint64_t pz_next;	/* raw: the disk log's zero-fill rule (disklog.c zero_ahead) */
	uint64_t pz_bytes;
	uint64_t pz_syncs;
};

struct result {
	uint64_t msgs;
	uint64_t bytes;
	uint64_t syncs;
	double elapsed_s;
	double cpu_ns_per_msg;
	struct sl_hist lat;	/* per write call, with its sync when it has one */
};

static void
on_signal(int sig)
{
	(void)sig;
	quit = 1;
}

static uint64_t
cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- disk-raw: pwrite + fdatasync on one plain file ---- */

static int
raw_open(struct sink *s)
{
	snprintf(s->path, sizeof(s->path), "%s/raw", s->r->dir);
	s->off = 0;
	s->zero_end = 0;
	s->pz_next = 0;
	s->pz_bytes = 0;
	s->pz_syncs = 0;
	s->fd = open(s->path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	return s->fd < 0 ? -errno : 0;
}

/* The disk log's zero-fill ahead of the end (disklog.c zero_ahead), on the raw file. */
static int
raw_zero(struct sink *s, uint64_t len)
{
	static const uint8_t zeros[64u << 10];
	uint64_t pre = s->r->o->prealloc, need = (uint64_t)s->off + len, to, pos;
	ssize_t n;

	if (pre == 0 || need + pre / 2 <= s->zero_end || need < s->pz_next)
		return 0;
	if (s->pz_syncs > 0 && s->pz_bytes / s->pz_syncs > SL_DISKLOG_PREALLOC_SYNC_MAX) {
		s->pz_next = need + pre;
		s->pz_bytes = 0;
		s->pz_syncs = 0;
		return 0;
	}
	s->pz_bytes = 0;
	s->pz_syncs = 0;
	pos = s->zero_end > (uint64_t)s->off ? s->zero_end : (uint64_t)s->off;
	to = ((need > s->zero_end ? need : s->zero_end) + 4095) / 4096 * 4096 + pre;
	for (; pos < to; pos += (uint64_t)n) {
		n = pwrite(s->fd, zeros, to - pos < sizeof(zeros) ? to - pos : sizeof(zeros),
			   (off_t)pos);
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
	}
	s->zero_end = to;
	return 0;
}

static int
raw_write(struct sink *s)
{
	size_t done = 0, len = s->r->batch_bytes;
	ssize_t n;
	int rc = raw_zero(s, len);

	if (rc != 0)
		return rc;
	s->pz_bytes += len;
	while (done < len) {
		n = pwrite(s->fd, s->buf + done, len - done, s->off + (off_t)done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		done += (size_t)n;
	}
	s->off += (off_t)len;
	return 0;
}

static int
raw_sync(struct sink *s)
{
	s->pz_syncs++;
	return fdatasync(s->fd) != 0 ? -errno : 0;
}

static int
raw_close(struct sink *s)
{
	int rc = raw_sync(s);

	close(s->fd);
	if (unlink(s->path) != 0 && rc == 0)
		rc = -errno;
	return rc;
}

static const struct sink_ops raw_ops = {
	.system = "disk-raw",
	.open = raw_open,
	.write = raw_write,
	.sync = raw_sync,
	.close = raw_close,
};

/* ---- disklog: sl_disklog_write + sl_disklog_sync ---- */

/* Remove the log's directory: its files are flat (segments, checkpoint, channels). */
static int
remove_dir(const char *path)
{
	char f[PATH_MAX];
	struct dirent *e;
	DIR *d = opendir(path);
	int rc = 0;

	if (d == NULL)
		return -errno;
	while ((e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		snprintf(f, sizeof(f), "%s/%s", path, e->d_name);
		if (unlink(f) != 0 && rc == 0)
			rc = -errno;
	}
	closedir(d);
	if (rmdir(path) != 0 && rc == 0)
		rc = -errno;
	return rc;
}

static int
log_open(struct sink *s)
{
	struct sl_disklog_conf conf = {.partition = 0, .prealloc_bytes = s->r->o->prealloc};
	struct sl_disklog_recovery rep;

	snprintf(s->path, sizeof(s->path), "%s/log", s->r->dir);
	conf.dir = s->path;
	s->dl = sl_disklog_open(&conf, &rep);
	if (s->dl == NULL)
		return -errno;
	s->next_id = rep.end_id + 1;
	s->next_offset = rep.end_offset;
	return 0;
}

/* Encode one batch (timed: the CRCs are part of the disk log's cost) and append it. */
static int
log_write(struct sink *s)
{
	const struct run *r = s->r;
	struct sl_crec *c = s->crecs;
	struct timespec ts;
	uint64_t now, id = s->next_id;
	uint8_t *p = s->buf;
	uint32_t i;

	clock_gettime(CLOCK_REALTIME, &ts);
	now = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	/* PUB: every message ends its commit record; MPUB: the batch's last one does */
	for (i = 0; i < r->batch; i++)
		p += sl_disklog_encode_msg(p, id + i, now, 0, s->payload, r->o->size,
					   r->ncrec != 1 || i + 1 == r->batch);
	for (i = 0; i < r->ncrec; i++) {
		/* PUB: one record per message; MPUB: one for the whole batch */
		uint32_t n = r->ncrec == 1 ? r->batch : 1;

		c[i] = (struct sl_crec){
			.log_id = id + i,
			.epoch = 1,
			.last_msg_log_id = id + i + n - 1,
			.msg_offset = s->next_offset + (uint64_t)i * r->rec,
			.msg_cnt = id + i + n - 1,
			.timestamp_ns = now,
			.msg_size = n * r->rec,
			.msg_num = n,
		};
	}
	s->next_id += r->batch;
	s->next_offset += (uint64_t)r->batch * r->rec;
	return sl_disklog_write(s->dl, s->buf, c, r->ncrec);
}

static int
log_sync(struct sink *s)
{
	return sl_disklog_sync(s->dl);
}

static int
log_close(struct sink *s)
{
	int rc = log_sync(s), rc2;

	sl_disklog_close(s->dl);
	s->dl = NULL;
	rc2 = remove_dir(s->path);
	return rc != 0 ? rc : rc2;
}

static const struct sink_ops log_ops = {
	.system = "disklog",
	.open = log_open,
	.write = log_write,
	.sync = log_sync,
	.close = log_close,
};

/* ---- one run ---- */

/* The broker's rule (sl_persist_sync_due), so both sides sync at the same spacing. */
static int
sync_due(const struct policy *p, uint64_t since_msgs, uint64_t since_ns)
{
	return p->kind != POL_NONE && sl_persist_sync_due(&p->pol, since_msgs, since_ns);
}

static int
run_one(const struct sink_ops *ops, struct sink *s, struct result *res)
{
	const struct run *r = s->r;
	uint64_t t0, t1, start, end, cpu0, last_sync, since = 0;
	int rc, rc2;

	memset(res, 0, sizeof(*res));
	sl_hist_init(&res->lat);
	rc = ops->open(s);
	if (rc != 0)
		return rc;
	start = sl_hist_now_ns();
	end = start + (uint64_t)(r->o->seconds * 1e9);
	cpu0 = cpu_ns();
	last_sync = start;
	t1 = start;
	while (!quit && t1 < end && res->bytes < r->o->max_bytes) {
		t0 = t1;
		rc = ops->write(s);
		if (rc != 0)
			break;
		res->msgs += r->batch;
		res->bytes += r->batch_bytes;
		since += r->batch;
		t1 = sl_hist_now_ns();
		if (sync_due(r->pol, since, t1 - last_sync)) {
			rc = ops->sync(s);
			if (rc != 0)
				break;
			res->syncs++;
			since = 0;
			t1 = sl_hist_now_ns();
			last_sync = t1;
		}
		sl_hist_add(&res->lat, t1 - t0);
	}
	res->elapsed_s = (double)(t1 - start) / 1e9;
	res->cpu_ns_per_msg = res->msgs ? (double)(cpu_ns() - cpu0) / (double)res->msgs : -1;
	rc2 = ops->close(s);
	return rc != 0 ? rc : rc2;
}

/* ---- output ---- */

static double
per_s(uint64_t n, const struct result *res)
{
	return res->elapsed_s > 0 ? (double)n / res->elapsed_s : 0;
}

static void
header(void)
{
	printf("%-9s %-8s %-11s %5s %5s %11s %9s %8s %9s %9s %8s %6s\n", "system", "workload",
	       "sync", "size", "batch", "msgs/s", "disk MB/s", "syncs/s", "p50 us", "p99 us",
	       "cpu ns/m", "vs raw");
}

/* One table row and one JSON line. ratio < 0: none (the raw run itself). */
static void
emit(const struct run *r, const char *system, const struct result *res, double ratio)
{
	struct sl_report rep = {
		.system = system,
		.workload = r->o->mpub ? "mpub" : "pub",
		.mode = r->pol->name,
		.msg_size = r->o->size,
		.batch = r->batch,
		.window = 1,
		.producers = 1,
		.count = res->msgs,
		.acked = res->msgs,
		.elapsed_s = res->elapsed_s,
		.cpu_ns_per_msg = res->cpu_ns_per_msg,
		.lat = &res->lat,
	};
	char vs[16] = "-", note[160];
	FILE *f;

	if (ratio >= 0)
		snprintf(vs, sizeof(vs), "%.2f", ratio);
	printf("%-9s %-8s %-11s %5u %5u %11.0f %9.1f %8.1f %9.1f %9.1f %8.0f %6s\n", system,
	       rep.workload, rep.mode, r->o->size, r->batch, per_s(res->msgs, res),
	       per_s(res->bytes, res) / 1e6, per_s(res->syncs, res),
	       (double)sl_hist_quantile(&res->lat, 0.5) / 1000.0,
	       (double)sl_hist_quantile(&res->lat, 0.99) / 1000.0, res->cpu_ns_per_msg, vs);
	fflush(stdout);
	if (r->o->json == NULL)
		return;
	/* the figures report.h has no field for, as key=value words the summary reads */
	snprintf(note, sizeof(note),
		 "syncs_per_s=%.1f disk_mb_per_s=%.2f record_bytes=%u commit_records=%u "
		 "vs_raw=%.3f prealloc_kb=%llu; latency per write call with its sync",
		 per_s(res->syncs, res), per_s(res->bytes, res) / 1e6, r->rec, r->ncrec,
		 ratio >= 0 ? ratio : 1.0, (unsigned long long)(r->o->prealloc >> 10));
	rep.note = note;
	f = strcmp(r->o->json, "-") == 0 ? stdout : fopen(r->o->json, "a");
	if (f == NULL) {
		fprintf(stderr, "sluice-disk-bench: %s: %s\n", r->o->json, strerror(errno));
		return;
	}
	sl_report_json(f, &rep);
	if (f != stdout)
		fclose(f);
}

/* ---- options ---- */

static void
usage(FILE *f)
{
	fprintf(f,
		"usage: sluice-disk-bench [options]\n"
		"  --dir DIR          filesystem to measure: the scratch directory is made under\n"
		"                     DIR and removed at the end (default /var/tmp)\n"
		"  --size S           message bytes (default 100: 136-byte records)\n"
		"  --batch LIST       messages per write call, e.g. 1,16,256 (default 256, the\n"
		"                     group-commit batch; at most %d sizes)\n"
		"  --policy LIST      sync policies, of always, every:N (messages), ms:T,\n"
		"                     none (default always,every:4096,ms:10,none)\n"
		"  --mpub             one commit record per batch (MPUB) instead of per message\n"
		"  --prealloc KB      zero-fill both files this far ahead of their end, as the\n"
		"                     broker's disk log does (default %llu; 0: plain appends)\n"
		"  --seconds T        per run (default 3)\n"
		"  --quick            --seconds 1 --max-mb 256\n"
		"  --max-mb N         stop a run after N MB written (default 1024)\n"
		"  --json FILE        append JSON lines (report.h) to FILE ('-': stdout)\n"
		"  --no-header        do not print the table header\n",
		MAX_BATCHES, (unsigned long long)(SL_DISKLOG_PREALLOC_DEFAULT >> 10));
}

static int
parse_policy(const char *s, struct policy *p)
{
	char *end;
	unsigned long long v;

	snprintf(p->name, sizeof(p->name), "%s", s);
	memset(&p->pol, 0, sizeof(p->pol));
	if (strcmp(s, "always") == 0) {
		p->kind = POL_ALWAYS;
		p->pol.sync = SL_PERSIST_SYNC_ALWAYS;
		return 0;
	}
	if (strcmp(s, "none") == 0) {
		p->kind = POL_NONE;
		return 0;
	}
	if (strncmp(s, "every:", 6) == 0) {
		p->kind = POL_EVERY;
		s += 6;
	} else if (strncmp(s, "ms:", 3) == 0) {
		p->kind = POL_MS;
		s += 3;
	} else {
		return -1;
	}
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || v == 0 || v > 1000000000ull)
		return -1;
	p->arg = p->kind == POL_MS ? v * 1000000ull : v;
	p->pol.sync = p->kind == POL_MS ? SL_PERSIST_SYNC_INTERVAL : SL_PERSIST_SYNC_EVERY;
	p->pol.every = (uint32_t)v;
	p->pol.interval_ms = (uint32_t)v;
	return 0;
}

/* Split a comma-separated list in place; call fn on each item. */
static int
each_item(char *list, int (*fn)(const char *item, struct opts *o), struct opts *o)
{
	char *save = NULL, *it;

	for (it = strtok_r(list, ",", &save); it != NULL; it = strtok_r(NULL, ",", &save))
		if (fn(it, o) != 0)
			return -1;
	return 0;
}

static int
add_batch(const char *it, struct opts *o)
{
	char *end;
	unsigned long v = strtoul(it, &end, 10);

	if (end == it || *end != '\0' || v == 0 || v > 65536 || o->nbatch == MAX_BATCHES)
		return -1;
	o->batch[o->nbatch++] = (uint32_t)v;
	return 0;
}

static int
add_policy(const char *it, struct opts *o)
{
	if (o->npol == MAX_POLICIES || parse_policy(it, &o->pol[o->npol]) != 0)
		return -1;
	o->npol++;
	return 0;
}

static int
parse_opts(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
		{"dir", required_argument, NULL, 'd'},
		{"size", required_argument, NULL, 's'},
		{"batch", required_argument, NULL, 'b'},
		{"policy", required_argument, NULL, 'P'},
		{"mpub", no_argument, NULL, 'm'},
		{"prealloc", required_argument, NULL, 'p'},
		{"seconds", required_argument, NULL, 'T'},
		{"quick", no_argument, NULL, 'Q'},
		{"max-mb", required_argument, NULL, 'M'},
		{"json", required_argument, NULL, 'j'},
		{"no-header", no_argument, NULL, 'q'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	char defpol[] = "always,every:4096,ms:10,none";
	double seconds = 3;
	long long mb = -1;
	int c, quick = 0;

	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (c) {
		case 'd': o->parent = optarg; break;
		case 's': o->size = (uint32_t)sl_opt_num(PROG, "size", optarg, 1, 1u << 20); break;
		case 'b':
			if (each_item(optarg, add_batch, o) != 0)
				return -1;
			break;
		case 'P':
			if (each_item(optarg, add_policy, o) != 0)
				return -1;
			break;
		case 'm': o->mpub = 1; break;
		case 'p':
			o->prealloc = sl_opt_num(PROG, "prealloc", optarg, 0, 1u << 20) << 10;
			break;
		case 'T': seconds = sl_opt_real(PROG, "seconds", optarg, 0.01, 3600); break;
		case 'Q': quick = 1; break;
		case 'M': mb = (long long)sl_opt_num(PROG, "max-mb", optarg, 1, 1u << 30); break;
		case 'j': o->json = optarg; break;
		case 'q': o->no_header = 1; break;
		case 'h': usage(stdout); exit(0);
		default: return -1;
		}
	}
	/* the values were checked as they were read (sl_opt_*) */
	if (optind != argc)
		return -1;
	if (o->nbatch == 0)
		o->batch[o->nbatch++] = 256;
	if (o->npol == 0 && each_item(defpol, add_policy, o) != 0)
		return -1;
	o->seconds = quick ? 1 : seconds;
	if (mb < 0)
		mb = quick ? 256 : 1024;
	o->max_bytes = (uint64_t)mb * 1000000ull;
	return 0;
}

/* ---- main ---- */

/* One batch size: per sync policy, the raw run then the disk log's. *always_ratio gets the
 * disk log's ratio under "always" (-1 when not measured). */
static int
bench_batch(const struct opts *o, const char *dir, uint32_t batch, double *always_ratio)
{
	struct run r = {
		.o = o,
		.dir = dir,
		.batch = batch,
		.ncrec = o->mpub ? 1 : batch,
		.rec = (uint32_t)SL_DISKLOG_MREC_SIZE(o->size),
	};
	static const struct sink_ops *const ops[] = {&raw_ops, &log_ops};
	struct result res[2];
	struct sink s = {.r = &r, .fd = -1};
	double ratio;
	uint32_t i, k;
	int rc = 0;

	*always_ratio = -1;
	r.batch_bytes = (uint64_t)batch * r.rec + (uint64_t)r.ncrec * SL_DISKLOG_CREC_TAG_LEN;
	s.buf = malloc(r.batch_bytes);
	s.crecs = calloc(r.ncrec, sizeof(*s.crecs));
	s.payload = malloc(o->size);
	if (s.buf == NULL || s.crecs == NULL || s.payload == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	memset(s.buf, 0xa5, r.batch_bytes);
	memset(s.payload, 'x', o->size);
	for (i = 0; i < o->npol && !quit; i++) {
		r.pol = &o->pol[i];
		for (k = 0; k < 2 && !quit; k++) {
			rc = run_one(ops[k], &s, &res[k]);
			if (rc != 0) {
				fprintf(stderr, "sluice-disk-bench: %s %s: %s\n", ops[k]->system,
					r.pol->name, strerror(-rc));
				goto out;
			}
			ratio = -1;
			if (k == 1 && res[0].elapsed_s > 0 && res[0].msgs > 0)
				ratio = per_s(res[1].msgs, &res[1]) / per_s(res[0].msgs, &res[0]);
			emit(&r, ops[k]->system, &res[k], ratio);
			if (k == 1 && r.pol->kind == POL_ALWAYS)
				*always_ratio = ratio;
		}
	}
out:
	free(s.payload);
	free(s.crecs);
	free(s.buf);
	return rc;
}

int
main(int argc, char **argv)
{
	struct opts o = {.parent = "/var/tmp", .size = 100, .prealloc = SL_DISKLOG_PREALLOC_DEFAULT};
	double ratio[MAX_BATCHES];
	char dir[PATH_MAX];
	uint32_t i, n;
	int rc = 0;

	if (parse_opts(argc, argv, &o) != 0) {
		usage(stderr);
		return 2;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	snprintf(dir, sizeof(dir), "%s/sluice-disk-bench.XXXXXX", o.parent);
	if (mkdtemp(dir) == NULL) {
		fprintf(stderr, "sluice-disk-bench: mkdtemp %s: %s\n", dir, strerror(errno));
		return 1;
	}
	if (!o.no_header) {
		if (o.prealloc != 0)
			printf("preallocation: the message log (and the raw file) zero-filled %llu KiB "
			       "ahead of its end "
			       "(skipped above %llu KiB per sync; --prealloc 0: plain appends)\n",
			       (unsigned long long)(o.prealloc >> 10),
			       (unsigned long long)(SL_DISKLOG_PREALLOC_SYNC_MAX >> 10));
		else
			printf("preallocation: none (plain appends)\n");
		header();
	}
	for (n = 0; n < o.nbatch && !quit && rc == 0; n++)
		rc = bench_batch(&o, dir, o.batch[n], &ratio[n]);
	for (i = 0; i < n; i++)
		if (ratio[i] >= 0)
			printf("target: disklog always (group commit) >= %.2f x disk-raw always "
			       "(pwrite + fdatasync), batch %u: %.2f, %s\n", TARGET_RATIO,
			       o.batch[i], ratio[i], ratio[i] >= TARGET_RATIO ? "met" : "NOT met");
	if (rmdir(dir) != 0)
		fprintf(stderr, "sluice-disk-bench: rmdir %s: %s\n", dir, strerror(errno));
	return rc != 0 || quit ? 1 : 0;
}
