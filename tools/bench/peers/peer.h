/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * peer: what the peers' load generators (bench_nats, bench_redis) share: the options every
 * one of them takes, their parsing, and the server's CPU time from /proc. Each program keeps
 * its own getopt table (common entries from SL_PEER_LONG_OPTS) and hands every option it
 * does not know itself to sl_peer_opt().
 * Calling context: the program's main thread, before any measurement.
 */
#ifndef SL_PEER_H
#define SL_PEER_H

#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>

#include "opt.h"

/* Messages carry their send time in the first bytes (latency to the consumer). */
#define SL_PEER_STAMP_BYTES 8

struct sl_peer_opts {
	const char *host;
	int port;
	uint32_t size;
	uint32_t batch;
	uint32_t window;
	uint32_t fetch;
	uint64_t count;
	uint64_t warmup;
	double rate;
	bool pubsub;
	const char *json;
	const char *cdf;
	int server_pid;
	double timeout_s;
	bool header;
	bool window_set;
};

/* getopt_long entries of the common options (codes 'H', 'P', 's', 'n', 'W', 'b', 'w',
 * 'r', 'l', 'f', 'j', 'c', 'p', 't', 'N'); programs must not reuse those codes. */
#define SL_PEER_LONG_OPTS                                                                          \
	{"host", required_argument, NULL, 'H'}, {"port", required_argument, NULL, 'P'},            \
		{"size", required_argument, NULL, 's'}, {"count", required_argument, NULL, 'n'},   \
		{"warmup", required_argument, NULL, 'W'}, {"batch", required_argument, NULL, 'b'}, \
		{"window", required_argument, NULL, 'w'}, {"rate", required_argument, NULL, 'r'},  \
		{"workload", required_argument, NULL, 'l'},                                        \
		{"fetch", required_argument, NULL, 'f'}, {"json", required_argument, NULL, 'j'},   \
		{"cdf", required_argument, NULL, 'c'},                                             \
		{"server-pid", required_argument, NULL, 'p'},                                      \
		{"timeout", required_argument, NULL, 't'},                                         \
	{                                                                                          \
		"no-header", no_argument, NULL, 'N'                                                \
	}

/** The defaults: 127.0.0.1:port, 100-byte messages, batch 1, window 1, fetch 100,
 * 100000 messages after 1000 of warm-up, 120 s timeout, table header on. */
void sl_peer_opts_init(struct sl_peer_opts *o, int port);

/** Apply common option c (a getopt_long code) with argument arg. Returns 0, or -1 when c
 * is not a common option. Exits with status 2 and a message on a bad value. */
int sl_peer_opt(struct sl_peer_opts *o, const char *prog, int c, const char *arg);

/** After parsing: open loop (--rate) without --window gets a window of 1024. */
void sl_peer_opts_finish(struct sl_peer_opts *o);

/** utime + stime of process pid in ns, or -1 when unknown (pid <= 0, no such process). */
double sl_peer_proc_cpu_ns(int pid);

struct sl_report;

/** Append the run's latency CDF (rep->lat; nothing when NULL) to the file at path, labelled
 * SYSTEM-WORKLOAD, then "xBATCH" for a batch and "-Np" for N producers (peers.sh adds the
 * durability). Returns 0, or -1 when the file cannot be written. */
int sl_peer_write_cdf(const char *path, const struct sl_report *rep);

#endif /* SL_PEER_H */
