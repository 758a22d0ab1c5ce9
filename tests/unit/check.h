/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * The unit tests' checks: CHECK prints every result, QCHECK only failures (for loops);
 * check_report() prints the tally and gives the exit status. One test program per
 * module includes this once.
 */
#ifndef SL_TEST_CHECK_H
#define SL_TEST_CHECK_H

#include <stdio.h>
#include <stdlib.h>

static unsigned int n_pass, n_fail;

#define CHECK(cond, ...) do {							\
	if (cond) {								\
		n_pass++;							\
		printf("ok   - ");						\
	} else {								\
		n_fail++;							\
		printf("FAIL - %s:%d: ", __FILE__, __LINE__);			\
	}									\
	printf(__VA_ARGS__);							\
	printf("\n");								\
} while (0)

#define QCHECK(cond, ...) do {							\
	if (cond) {								\
		n_pass++;							\
	} else {								\
		n_fail++;							\
		printf("FAIL - %s:%d: ", __FILE__, __LINE__);			\
		printf(__VA_ARGS__);						\
		printf("\n");							\
	}									\
} while (0)

/* Print "N passed, M failed"; EXIT_SUCCESS only without a failure. */
static inline int
check_report(void)
{
	printf("%u passed, %u failed\n", n_pass, n_fail);
	return n_fail == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

#endif /* SL_TEST_CHECK_H */
