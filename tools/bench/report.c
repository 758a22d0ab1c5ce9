/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 */
#include <string.h>

#include <jansson.h>

#include "report.h"

static double
rate(const struct sl_report *r)
{
	return r->elapsed_s > 0 ? (double)r->acked / r->elapsed_s : 0;
}

static double
q_us(const struct sl_report *r, double q)
{
	return r->lat ? (double)sl_hist_quantile(r->lat, q) / 1000.0 : 0;
}

void
sl_report_header(FILE *f)
{
	fprintf(f, "%-10s %-8s %-6s %5s %5s %5s %4s %12s %9s %9s %9s %9s %9s %7s %8s\n",
		"system", "workload", "mode", "size", "batch", "win", "prod", "acked/s", "MB/s",
		"p50 us",
		"p99 us", "p99.9 us", "max us", "errors", "cpu ns/m");
}

void
sl_report_row(FILE *f, const struct sl_report *r)
{
	char cpu[32];

	if (r->cpu_ns_per_msg < 0)
		snprintf(cpu, sizeof(cpu), "-");
	else
		snprintf(cpu, sizeof(cpu), "%.0f", r->cpu_ns_per_msg);
	fprintf(f,
		"%-10s %-8s %-6s %5u %5u %5u %4u %12.0f %9.2f %9.1f %9.1f %9.1f %9.1f %7llu %8s\n",
		r->system, r->workload, r->mode, r->msg_size, r->batch, r->window,
		r->producers ? r->producers : 1, rate(r),
		rate(r) * r->msg_size / 1e6, q_us(r, 0.5), q_us(r, 0.99), q_us(r, 0.999),
		r->lat ? (double)r->lat->max / 1000.0 : 0, (unsigned long long)r->errors, cpu);
}

/* One JSON object per line, through jansson (keys in this order). */
void
sl_report_json(FILE *f, const struct sl_report *r)
{
	json_t *o = json_pack(
		"{s:s, s:s, s:s, s:I, s:I, s:I, s:I, s:f, s:I, s:I, s:I, s:I, s:f, s:f, s:f, s:f,"
		" s:f, s:f, s:f, s:f, s:f, s:s}",
		"system", r->system ? r->system : "", "workload", r->workload ? r->workload : "",
		"mode", r->mode ? r->mode : "", "msg_size", (json_int_t)r->msg_size,
		"batch", (json_int_t)r->batch, "window", (json_int_t)r->window,
		"producers", (json_int_t)(r->producers ? r->producers : 1),
		"offered_per_s", r->offered_per_s, "count", (json_int_t)r->count,
		"acked", (json_int_t)r->acked, "errors", (json_int_t)r->errors,
		"retries", (json_int_t)r->retries, "elapsed_s", r->elapsed_s,
		"acked_per_s", rate(r), "mb_per_s", rate(r) * r->msg_size / 1e6,
		"p50_us", q_us(r, 0.5), "p99_us", q_us(r, 0.99), "p999_us", q_us(r, 0.999),
		"max_us", r->lat ? (double)r->lat->max / 1000.0 : 0.0,
		"mean_us", r->lat ? sl_hist_mean(r->lat) / 1000.0 : 0.0,
		"cpu_ns_per_msg", r->cpu_ns_per_msg, "note", r->note ? r->note : "");

	if (o == NULL || json_dumpf(o, f, JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(9)) != 0)
		fputs("{\"error\": \"report: cannot encode\"}", f);
	fputc('\n', f);
	fflush(f);
	json_decref(o);
}
