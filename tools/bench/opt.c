/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "opt.h"

uint64_t
sl_opt_num(const char *prog, const char *name, const char *s, uint64_t min, uint64_t max)
{
	unsigned long long v = 0;
	char *end = NULL;

	errno = 0;
	if (s[0] >= '0' && s[0] <= '9')
		v = strtoull(s, &end, 10);
	if (end == NULL || end == s || *end != '\0' || errno != 0 || v < min || v > max) {
		fprintf(stderr, "%s: bad --%s '%s' (want a whole number in %" PRIu64 "..%" PRIu64
			")\n", prog, name, s, min, max);
		exit(2);
	}
	return v;
}

double
sl_opt_real(const char *prog, const char *name, const char *s, double min, double max)
{
	char *end = NULL;
	double v = 0;

	errno = 0;
	/* strtod also reads hexadecimal, "inf" and "nan": the first character rules them out
	 * but for "0x..", which the digits check below the call refuses */
	if ((s[0] >= '0' && s[0] <= '9') || (s[0] == '.' && s[1] >= '0' && s[1] <= '9'))
		v = strtod(s, &end);
	if (end == NULL || end == s || *end != '\0' || errno != 0 || !isfinite(v) ||
	    (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) || v < min || v > max) {
		fprintf(stderr, "%s: bad --%s '%s' (want a number in %g..%g)\n", prog, name, s,
			min, max);
		exit(2);
	}
	return v;
}
