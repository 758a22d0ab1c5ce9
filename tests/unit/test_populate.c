/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * Unit test of populate (dataplane/base/populate.c), which the control thread uses to take
 * the faults of a growing log's pages: after it every page of the range is resident
 * (mincore), a range that is no multiple of its step included, the pages outside are
 * not, and what the pages held is unchanged, in anonymous memory as in a file mapping.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "check.h"
#include "populate.h"

#define PAGE 4096u

/* Pages of [m + from, m + from + len) resident. */
static size_t
resident(uint8_t *m, size_t from, size_t len)
{
	size_t n = (len + PAGE - 1) / PAGE, i, r = 0;
	unsigned char *v = calloc(n, 1);

	if (v == NULL || mincore(m + from, len, v) != 0) {
		free(v);
		return SIZE_MAX;
	}
	for (i = 0; i < n; i++)
		r += v[i] & 1;
	free(v);
	return r;
}

static void
test_anon(void)
{
	/* two and a half steps and 3 pages, inside a mapping with a page free at each end */
	size_t len = 2 * SL_POPULATE_STEP + SL_POPULATE_STEP / 2 + 3 * PAGE + 100;
	size_t pages = (len + PAGE - 1) / PAGE, map = (pages + 2) * PAGE, i, bad = 0;
	uint8_t *m = mmap(NULL, map, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	CHECK(m != MAP_FAILED, "an anonymous mapping of %zu bytes", map);
	if (m == MAP_FAILED)
		return;
	CHECK(resident(m, 0, map) == 0, "nothing resident before");
	m[PAGE + 5 * PAGE + 7] = 0xa5;	/* a page written before: kept */
	sl_populate_write(m + PAGE, len);
	CHECK(resident(m, PAGE, len) == pages, "every page of the range resident after (%zu of "
	      "%zu, the last one partial)", resident(m, PAGE, len), pages);
	CHECK(resident(m, 0, PAGE) == 0 && resident(m, PAGE + pages * PAGE, PAGE) == 0,
	      "the pages before and after the range are not");
	for (i = 0; i < len; i++)
		bad += m[PAGE + i] != (i == 5 * PAGE + 7 ? 0xa5 : 0);
	CHECK(bad == 0, "contents unchanged: zeros, and the byte written before (%zu differ)",
	      bad);
	m[PAGE + len - 1] = 1;	/* writable */
	sl_populate_write(NULL, PAGE);
	sl_populate_write(m, 0);
	CHECK(resident(m, 0, PAGE) == 0, "NULL and an empty range do nothing");
	munmap(m, map);
}

static void
test_file(void)
{
	char path[] = "/tmp/test_populate.XXXXXX";
	size_t len = SL_POPULATE_STEP + 5 * PAGE, i, bad = 0;
	uint8_t pat[PAGE], *m;
	int fd = mkstemp(path);

	CHECK(fd >= 0, "a file");
	if (fd < 0)
		return;
	unlink(path);
	memset(pat, 0x3c, sizeof(pat));
	CHECK(ftruncate(fd, (off_t)len) == 0 && posix_fallocate(fd, 0, (off_t)len) == 0 &&
	      pwrite(fd, pat, sizeof(pat), 3 * PAGE) == (ssize_t)sizeof(pat) &&
	      posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0,
	      "sized, its blocks allocated, one page written");
	m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	CHECK(m != MAP_FAILED, "mapped shared");
	if (m == MAP_FAILED) {
		close(fd);
		return;
	}
	sl_populate_write(m, len);
	CHECK(resident(m, 0, len) == len / PAGE, "every page resident after (%zu of %zu)",
	      resident(m, 0, len), len / PAGE);
	for (i = 0; i < len; i++)
		bad += m[i] != (i >= 3 * PAGE && i < 4 * PAGE ? 0x3c : 0);
	CHECK(bad == 0, "the file's contents unchanged (%zu bytes differ)", bad);
	munmap(m, len);
	close(fd);
}

int
main(void)
{
	test_anon();
	test_file();
	return check_report();
}
