/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * Corpus replay driver for builds without libFuzzer: runs LLVMFuzzerTestOneInput() once
 * on every file named on the command line, or found in a named directory and in its
 * direct subdirectories (names starting with '.' are skipped). A crash or abort() in
 * the target fails the test; a file that cannot be read counts as failed.
 */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static unsigned int n_pass, n_fail;

static void
run_file(const char *path)
{
	uint8_t *buf = NULL;
	FILE *f = NULL;
	long sz;

	f = fopen(path, "rb");
	if (f == NULL || fseek(f, 0, SEEK_END) != 0 || (sz = ftell(f)) < 0 ||
	    fseek(f, 0, SEEK_SET) != 0)
		goto fail;
	/* exact-size allocation, so sanitizers see reads past the input */
	buf = malloc(sz > 0 ? (size_t)sz : 1);
	if (buf == NULL || (sz > 0 && fread(buf, 1, (size_t)sz, f) != (size_t)sz))
		goto fail;
	LLVMFuzzerTestOneInput(buf, (size_t)sz);
	n_pass++;
	goto out;
fail:
	fprintf(stderr, "FAIL %s: %s\n", path, strerror(errno ? errno : EIO));
	n_fail++;
out:
	free(buf);
	if (f != NULL)
		fclose(f);
}

static void
run_path(const char *path, int depth)
{
	struct dirent *de;
	struct stat st;
	char sub[4096];
	DIR *d;

	if (stat(path, &st) != 0) {
		fprintf(stderr, "FAIL %s: %s\n", path, strerror(errno));
		n_fail++;
		return;
	}
	if (!S_ISDIR(st.st_mode)) {
		run_file(path);
		return;
	}
	if (depth > 1)
		return;
	d = opendir(path);
	if (d == NULL) {
		fprintf(stderr, "FAIL %s: %s\n", path, strerror(errno));
		n_fail++;
		return;
	}
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		if ((size_t)snprintf(sub, sizeof(sub), "%s/%s", path, de->d_name) >= sizeof(sub))
			continue;
		run_path(sub, depth + 1);
	}
	closedir(d);
}

int
main(int argc, char **argv)
{
	int i;

	if (argc < 2) {
		fprintf(stderr, "usage: %s FILE|DIR...\n", argv[0]);
		return 2;
	}
	for (i = 1; i < argc; i++)
		run_path(argv[i], 0);
	printf("%u passed, %u failed\n", n_pass, n_fail);
	return n_fail == 0 ? 0 : 1;
}
