/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 */
#include <errno.h>
#include <string.h>
#include <time.h>

#include "hist.h"

/* Bucket index of v: values below SL_HIST_SUB map 1:1; above, the top SL_HIST_SUB_BITS
 * bits after the leading one pick the sub-bucket of the value's power of two. */
static unsigned int
bucket_of(uint64_t v)
{
	unsigned int msb, shift;

	if (v < SL_HIST_SUB)
		return (unsigned int)v;
	if (v >= (1ull << SL_HIST_MAX_BITS))
		return SL_HIST_NBUCKETS - 1;
	msb = 63u - (unsigned int)__builtin_clzll(v);
	shift = msb - SL_HIST_SUB_BITS;
	return (shift + 1) * SL_HIST_SUB + (unsigned int)((v >> shift) & (SL_HIST_SUB - 1));
}

/* Largest value that falls in bucket i. */
static uint64_t
bucket_hi(unsigned int i)
{
	unsigned int grp = i / SL_HIST_SUB, sub = i % SL_HIST_SUB, shift;

	if (grp == 0)
		return i;
	shift = grp - 1;
	return ((uint64_t)(SL_HIST_SUB + sub + 1) << shift) - 1;
}

uint64_t
sl_hist_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void
sl_hist_init(struct sl_hist *h)
{
	memset(h, 0, sizeof(*h));
	h->min = UINT64_MAX;
}

void
sl_hist_add(struct sl_hist *h, uint64_t ns)
{
	h->b[bucket_of(ns)]++;
	h->count++;
	h->sum += (double)ns;
	if (ns < h->min)
		h->min = ns;
	if (ns > h->max)
		h->max = ns;
}

void
sl_hist_merge(struct sl_hist *dst, const struct sl_hist *src)
{
	unsigned int i;

	for (i = 0; i < SL_HIST_NBUCKETS; i++)
		dst->b[i] += src->b[i];
	dst->count += src->count;
	dst->sum += src->sum;
	if (src->min < dst->min)
		dst->min = src->min;
	if (src->max > dst->max)
		dst->max = src->max;
}

uint64_t
sl_hist_quantile(const struct sl_hist *h, double q)
{
	uint64_t want, seen = 0, v;
	unsigned int i;

	if (h->count == 0)
		return 0;
	if (q <= 0)
		return h->min;
	want = (uint64_t)(q * (double)h->count + 0.5);
	if (want == 0)
		want = 1;
	if (want > h->count)
		want = h->count;
	for (i = 0; i < SL_HIST_NBUCKETS; i++) {
		seen += h->b[i];
		if (seen >= want) {
			v = bucket_hi(i);
			return v > h->max ? h->max : v < h->min ? h->min : v;
		}
	}
	return h->max;
}

double
sl_hist_mean(const struct sl_hist *h)
{
	return h->count ? h->sum / (double)h->count : 0;
}

int
sl_hist_write_cdf(const struct sl_hist *h, FILE *f, const char *label)
{
	uint64_t seen = 0, v;
	unsigned int i;

	for (i = 0; i < SL_HIST_NBUCKETS; i++) {
		if (h->b[i] == 0)
			continue;
		seen += h->b[i];
		v = bucket_hi(i);
		if (v > h->max)
			v = h->max;
		if (fprintf(f, "%s %.3f %.6f\n", label, (double)v / 1000.0,
			    (double)seen / (double)h->count) < 0)
			return -EIO;
	}
	return 0;
}
