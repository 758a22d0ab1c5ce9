/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * What the deterministic simulators (repl_sim.c, ctl_sim.c) share: the seeded PRNG
 * (splitmix64: a run's only source of randomness, so a seed gives the same run), the
 * command line (--seed N | --seeds A-B, a length option, --verbose) and the end of a
 * violation's report. Included once per
 * simulator; the PRNG state is the including program's own. Single-threaded.
 */
#ifndef SL_SIM_COMMON_H
#define SL_SIM_COMMON_H

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t sim_rng_state;

/* Start the PRNG for a run of `seed`. */
static inline void
sim_seed(uint64_t seed)
{
	sim_rng_state = seed * 0x2545f4914f6cdd1dull + 1;
}

/* The next 64 random bits (splitmix64). */
static inline uint64_t
sim_rnd(void)
{
	uint64_t z = (sim_rng_state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* A random number in [0, n), 0 when n is 0. */
static inline uint64_t
sim_rndn(uint64_t n)
{
	return n ? sim_rnd() % n : 0;
}

/* After the simulator's own "VIOLATION seed=... t=...: " prefix: what went wrong (fmt,
 * ap) and how to run that seed again; exit 1. */
static inline void __attribute__((noreturn))
sim_vfail(const char *prog, uint64_t seed, const char *fmt, va_list ap)
{
	vprintf(fmt, ap);
	printf("\nreproduce: %s --seed %" PRIu64 " --verbose\n", prog, seed);
	fflush(stdout);
	exit(1);
}

/* What the command line asks. */
struct sim_opts {
	uint64_t first, last;		/* the seeds, first <= last (default 1-1) */
	uint64_t length;		/* the length option's value (default: as given) */
	int verbose;
};

/* A whole decimal number, 0 or -EINVAL. */
static inline int
sim_u64(const char *s, uint64_t *v)
{
	char *end;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	*v = strtoull(s, &end, 10);
	return *end == '\0' && errno == 0 ? 0 : -EINVAL;
}

/* Parse `prog [--seed N | --seeds A-B] [LEN_OPT K] [--verbose]` into o (o->length holds
 * the default on entry): 0, or the usage printed to stderr and -EINVAL.
 */
static inline int
sim_opts_parse(int argc, char **argv, const char *len_opt, struct sim_opts *o)
{
	int i;

	o->first = o->last = 1;
	o->verbose = 0;
	for (i = 1; i < argc; i++) {
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		const char *dash = v != NULL ? strchr(v, '-') : NULL;
		char a[24];

		if (strcmp(argv[i], "--seed") == 0 && v != NULL && sim_u64(v, &o->first) == 0) {
			o->last = o->first;
			i++;
		} else if (strcmp(argv[i], "--seeds") == 0 && dash != NULL &&
			   (size_t)(dash - v) < sizeof(a) &&
			   snprintf(a, sizeof(a), "%.*s", (int)(dash - v), v) > 0 &&
			   sim_u64(a, &o->first) == 0 && sim_u64(dash + 1, &o->last) == 0 &&
			   o->first <= o->last) {
			i++;
		} else if (strcmp(argv[i], len_opt) == 0 && v != NULL &&
			   sim_u64(v, &o->length) == 0) {
			i++;
		} else if (strcmp(argv[i], "--verbose") == 0) {
			o->verbose = 1;
		} else {
			fprintf(stderr, "usage: %s [--seed N | --seeds A-B] [%s K] [--verbose]\n",
				argv[0], len_opt);
			return -EINVAL;
		}
	}
	return 0;
}

#endif /* SL_SIM_COMMON_H */
