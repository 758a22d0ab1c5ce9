/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * populate: the write faults of a mapping's pages ahead of need (populate.h).
 */
#include <stdint.h>
#include <sys/mman.h>

#include "populate.h"

#define PAGE 4096u

void
sl_populate_write(void *m, size_t len)
{
	uint8_t *p = m;
	size_t o, n, q;

	if (m == NULL)
		return;
	for (o = 0; o < len; o += n) {
		n = len - o < SL_POPULATE_STEP ? len - o : SL_POPULATE_STEP;
#ifdef MADV_POPULATE_WRITE
		if (madvise(p + o, n, MADV_POPULATE_WRITE) == 0)
			continue;
#endif
		for (q = 0; q < n; q += PAGE) {
			volatile uint8_t *b = p + o + q;

			*b = *b;
		}
	}
}
