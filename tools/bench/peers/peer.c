/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hist.h"
#include "peer.h"
#include "report.h"

void
sl_peer_opts_init(struct sl_peer_opts *o, int port)
{
	*o = (struct sl_peer_opts){.host = "127.0.0.1",
				   .port = port,
				   .size = 100,
				   .batch = 1,
				   .window = 1,
				   .fetch = 100,
				   .count = 100000,
				   .warmup = 1000,
				   .timeout_s = 120,
				   .header = true};
}

int
sl_peer_opt(struct sl_peer_opts *o, const char *prog, int c, const char *arg)
{
	switch (c) {
	case 'H':
		o->host = arg;
		return 0;
	case 'P':
		o->port = (int)sl_opt_num(prog, "port", arg, 1, 65535);
		return 0;
	case 's':
		o->size = (uint32_t)sl_opt_num(prog, "size", arg, SL_PEER_STAMP_BYTES,
						      64 << 20);
		return 0;
	case 'n':
		o->count = sl_opt_num(prog, "count", arg, 1, UINT32_MAX);
		return 0;
	case 'W':
		o->warmup = sl_opt_num(prog, "warmup", arg, 0, UINT32_MAX);
		return 0;
	case 'b':
		o->batch = (uint32_t)sl_opt_num(prog, "batch", arg, 1, 1 << 20);
		return 0;
	case 'w':
		o->window = (uint32_t)sl_opt_num(prog, "window", arg, 1, 1 << 20);
		o->window_set = true;
		return 0;
	case 'r':
		o->rate = sl_opt_real(prog, "rate", arg, 1e-6, 1e9);
		return 0;
	case 'l':
		if (strcmp(arg, "pub") == 0) {
			o->pubsub = false;
		} else if (strcmp(arg, "pubsub") == 0) {
			o->pubsub = true;
		} else {
			fprintf(stderr, "%s: --workload is pub or pubsub\n", prog);
			exit(2);
		}
		return 0;
	case 'f':
		o->fetch = (uint32_t)sl_opt_num(prog, "fetch", arg, 1, 1 << 20);
		return 0;
	case 'j':
		o->json = arg;
		return 0;
	case 'c':
		o->cdf = arg;
		return 0;
	case 'p':
		o->server_pid = (int)sl_opt_num(prog, "server-pid", arg, 1, INT32_MAX);
		return 0;
	case 't':
		o->timeout_s = sl_opt_real(prog, "timeout", arg, 1e-3, 86400);
		return 0;
	case 'N':
		o->header = false;
		return 0;
	default:
		return -1;
	}
}

void
sl_peer_opts_finish(struct sl_peer_opts *o)
{
	if (o->rate > 0 && !o->window_set)
		o->window = 1024;
}

double
sl_peer_proc_cpu_ns(int pid)
{
	unsigned long long ut, st;
	char path[64], buf[1024], *p;
	size_t n;
	FILE *f;

	if (pid <= 0)
		return -1;
	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "r");
	if (f == NULL)
		return -1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* Field 2 (comm) may hold spaces: fields 14 and 15 are counted from its ')'. */
	p = strrchr(buf, ')');
	if (p == NULL ||
	    sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
		return -1;
	return (double)(ut + st) * 1e9 / (double)sysconf(_SC_CLK_TCK);
}

int
sl_peer_write_cdf(const char *path, const struct sl_report *rep)
{
	char label[64];
	size_t n;
	FILE *f;
	int rc;

	if (rep->lat == NULL)
		return 0;
	snprintf(label, sizeof(label), "%s-%s", rep->system, rep->workload);
	n = strlen(label);
	if (rep->batch > 1)
		n += (size_t)snprintf(label + n, sizeof(label) - n, "x%u", (unsigned)rep->batch);
	if (rep->producers > 1 && n < sizeof(label))
		snprintf(label + n, sizeof(label) - n, "-%up", (unsigned)rep->producers);
	f = fopen(path, "a");
	if (f == NULL)
		return -1;
	rc = sl_hist_write_cdf(rep->lat, f, label) < 0 ? -1 : 0;
	if (fclose(f) != 0)
		rc = -1;
	return rc;
}
