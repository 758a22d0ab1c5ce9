/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * report: one benchmark result, printed the same way by every load generator (sluice,
 * the reflector ceiling, the NATS and Redis peers), so tools/bench/run can put them side by
 * side and compute ratios.
 *
 * JSON line (one object per result, on stdout or the --json file):
 *   {"system": "...", "workload": "pub|mpub|pubsub|reflect|...", "mode": "closed|open",
 *    "msg_size": N, "batch": N, "window": N, "producers": N,
 *    "offered_per_s": X (open loop, else 0),
 *    "count": N, "acked": N, "errors": N, "retries": N, "elapsed_s": X,
 *    "acked_per_s": X, "mb_per_s": X, "p50_us": X, "p99_us": X, "p999_us": X,
 *    "max_us": X, "mean_us": X, "cpu_ns_per_msg": X (sluice: the workers' busy cycles per
 *    message, cycles of poll-loop iterations that did work; -1 if unknown),
 *    "note": "..."}
 * tools/bench/run (through tools/bench/placement.py) adds to each line the conditions and
 * the placement of the run: "transport" (memif | udp-tap | tcp-loopback), "durability"
 * (none | page-cache | fsync), "rf", "run" (1..N), "ack" (yes | no), "placement" (busy and
 * pinned threads with their allowed cores), "shared_cores" (a busy thread shared a core with
 * another), "others_cores" (CPU taken by processes the run did not start),
 * "proc_cpu_ns_per_msg" (the broker's whole-process CPU per message: not comparable with
 * cpu_ns_per_msg) and, for several nodes, "node_cpu". The peers' generators put the
 * server's whole-process CPU in cpu_ns_per_msg; the tagging moves it to proc_cpu_ns_per_msg.
 * Human line: the same figures as one aligned table row (sl_report_header() first).
 * Calling context: any thread, not on a measurement path.
 */
#ifndef SL_REPORT_H
#define SL_REPORT_H

#include <stdint.h>
#include <stdio.h>

#include "hist.h"

struct sl_report {
	const char *system;	/* "sluice", "reflector", "jetstream", "nats-core", "redis" */
	const char *workload;	/* "pub", "mpub", "pubsub", "reflect", ... */
	const char *mode;	/* "closed" or "open" */
	uint32_t msg_size;
	uint32_t batch;		/* messages per request (1 for PUB) */
	uint32_t window;	/* requests in flight (closed loop), per producer */
	uint32_t producers;	/* publishing clients (0 is taken as 1) */
	double offered_per_s;	/* open loop: intended messages/s; 0 for closed loop */
	uint64_t count;		/* messages attempted */
	uint64_t acked;		/* messages acknowledged */
	uint64_t errors;
	uint64_t retries;
	double elapsed_s;
	double cpu_ns_per_msg;	/* sluice: worker busy cycles per acked message; peers: the
				 * server's whole-process CPU; < 0 unknown */
	const struct sl_hist *lat;	/* per request latency; may be NULL */
	const char *note;	/* free text, may be NULL */
};

/** Print the human table header. */
void
sl_report_header(FILE *f);

/** Print one human table row. */
void
sl_report_row(FILE *f, const struct sl_report *r);

/** Print one JSON line. */
void
sl_report_json(FILE *f, const struct sl_report *r);

#endif /* SL_REPORT_H */
