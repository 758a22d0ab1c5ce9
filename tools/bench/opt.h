/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * opt: the numeric command-line values of the benchmark tools (sluice-bench,
 * sluice-disk-bench, the peers' load generators), read strictly: decimal digits only (no
 * sign, space, hexadecimal or trailing junk), within the option's bounds, or the tool
 * exits with status 2 and a message naming the option and its bounds. A value that
 * strtoul would wrap ('-1', '2^64') or cut ('5x') is refused, never taken as another.
 */
#ifndef SL_OPT_H
#define SL_OPT_H

#include <stdint.h>

/** A decimal integer in [min, max], or exit(2) with a message naming --name. Any thread
 * (option parsing). */
uint64_t
sl_opt_num(const char *prog, const char *name, const char *s, uint64_t min, uint64_t max);

/** A decimal number (digits, at most one '.', optional exponent) in [min, max], finite,
 * or exit(2) with a message naming --name. Any thread (option parsing). */
double
sl_opt_real(const char *prog, const char *name, const char *s, double min, double max);

#endif /* SL_OPT_H */
