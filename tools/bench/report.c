/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 */
#include <string.h>

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

/* JSON string: our strings are plain ASCII names; escape the two characters that matter. */
static void
json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; s != NULL && *s; s++) {
		if (*s == '"' || *s == '\\')
			fputc('\\', f);
		if ((unsigned char)*s >= 0x20)
			fputc(*s, f);
	}
	fputc('"', f);
}

void
sl_report_json(FILE *f, const struct sl_report *r)
{
	fputs("{\"system\": ", f);
	json_str(f, r->system);
	fputs(", \"workload\": ", f);
	json_str(f, r->workload);
	fputs(", \"mode\": ", f);
	json_str(f, r->mode);
	fprintf(f,
		", \"msg_size\": %u, \"batch\": %u, \"window\": %u, \"producers\": %u"
		", \"offered_per_s\": %.1f"
		", \"count\": %llu, \"acked\": %llu, \"errors\": %llu, \"retries\": %llu"
		", \"elapsed_s\": %.6f, \"acked_per_s\": %.1f, \"mb_per_s\": %.3f"
		", \"p50_us\": %.3f, \"p99_us\": %.3f, \"p999_us\": %.3f, \"max_us\": %.3f"
		", \"mean_us\": %.3f, \"cpu_ns_per_msg\": %.1f, \"note\": ",
		r->msg_size, r->batch, r->window, r->producers ? r->producers : 1, r->offered_per_s,
		(unsigned long long)r->count, (unsigned long long)r->acked,
		(unsigned long long)r->errors, (unsigned long long)r->retries, r->elapsed_s,
		rate(r), rate(r) * r->msg_size / 1e6, q_us(r, 0.5), q_us(r, 0.99),
		q_us(r, 0.999), r->lat ? (double)r->lat->max / 1000.0 : 0,
		r->lat ? sl_hist_mean(r->lat) / 1000.0 : 0, r->cpu_ns_per_msg);
	json_str(f, r->note ? r->note : "");
	fputs("}\n", f);
	fflush(f);
}
