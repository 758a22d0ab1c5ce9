/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * hist: a log-bucketed latency histogram for the benchmarks (HdrHistogram-like).
 * Values are nanoseconds. Each power of two [2^k, 2^(k+1)) is split into
 * SL_HIST_SUB linear sub-buckets, so a reported quantile is within 1/SL_HIST_SUB
 * (1.6 %) of the true value, from 1 ns to 2^40 ns (18 minutes; larger values are clamped).
 * Fixed size, no allocation: sl_hist_add() is safe on a measurement path.
 * Calling context: any single thread per histogram; merge to combine threads.
 */
#ifndef SL_HIST_H
#define SL_HIST_H

#include <stdint.h>
#include <stdio.h>

#define SL_HIST_SUB_BITS 6
#define SL_HIST_SUB (1u << SL_HIST_SUB_BITS)
#define SL_HIST_MAX_BITS 40
#define SL_HIST_NBUCKETS ((SL_HIST_MAX_BITS - SL_HIST_SUB_BITS + 1) * SL_HIST_SUB)

struct sl_hist {
	uint64_t count;
	uint64_t min;
	uint64_t max;
	double sum;
	uint64_t b[SL_HIST_NBUCKETS];
};

/** The clock every benchmark measures with: CLOCK_MONOTONIC in ns (vDSO, no syscall).
 * Any thread. */
uint64_t
sl_hist_now_ns(void);

/** Empty the histogram. */
void
sl_hist_init(struct sl_hist *h);

/** Record one value (ns). */
void
sl_hist_add(struct sl_hist *h, uint64_t ns);

/** Add every value of src to dst. */
void
sl_hist_merge(struct sl_hist *dst, const struct sl_hist *src);

/** The value at quantile q in [0, 1] (upper edge of its bucket, capped at max);
 * 0 when empty. */
uint64_t
sl_hist_quantile(const struct sl_hist *h, double q);

/** Mean in ns (0 when empty). */
double
sl_hist_mean(const struct sl_hist *h);

/**
 * Write the CDF as text lines "LABEL latency_us fraction" (one per non-empty bucket),
 * for gnuplot. Returns 0 or -errno.
 */
int
sl_hist_write_cdf(const struct sl_hist *h, FILE *f, const char *label);

#endif /* SL_HIST_H */
