/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * Unit test of a topic's files in the data directory (storage/tstore.c), against hostile
 * names and foreign entries: no function writes, reads or removes outside the data
 * directory for a name the name rule refuses; a new topic never takes over a directory that
 * exists; recovery names every entry that is not a topic and why.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "err.h"
#include "tstore.h"
#include "check.h"

/* tstore's policy strings come from persist.c, whose lcore loop reads the broker's quit
 * flag: this test runs no loop, the flag only has to exist */
volatile int sl_broker_quit;

static char root[256], data[300];

static int
exists(const char *rel)
{
	char p[512];
	struct stat st;

	snprintf(p, sizeof(p), "%s/%s", root, rel);
	return stat(p, &st) == 0;
}

struct seen {
	char names[16][80];
	const char *skips[16];
	int n;
};

static int
collect(void *arg, const char *entry, const char *skip)
{
	struct seen *s = arg;

	if (s->n < 16) {
		snprintf(s->names[s->n], sizeof(s->names[0]), "%s", entry);
		s->skips[s->n] = skip;
		s->n++;
	}
	return 0;
}

static const char *
skip_of(const struct seen *s, const char *name, int *found)
{
	int i;

	for (i = 0; i < s->n; i++) {
		if (strcmp(s->names[i], name) == 0) {
			*found = 1;
			return s->skips[i];
		}
	}
	*found = 0;
	return NULL;
}

static void
touch(const char *rel, const char *text)
{
	char p[512];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", root, rel);
	f = fopen(p, "w");
	if (f != NULL) {
		fputs(text, f);
		fclose(f);
	}
}

static void
mkdir_rel(const char *rel)
{
	char p[512];

	snprintf(p, sizeof(p), "%s/%s", root, rel);
	mkdir(p, 0750);
}

int
main(void)
{
	static const char *const hostile[] = {"..", ".", ".x", "a/b", "../escape", "/abs"};
	struct sl_persist_policy pol = {.durability = SL_PERSIST_MEMORY,
					.sync = SL_PERSIST_SYNC_ALWAYS,
					.retain_unconsumed = 1};
	struct sl_persist_policy got;
	struct seen seen = {0};
	uint16_t nparts = 0;
	char why[256], cmd[600];
	const char *skip;
	size_t i;
	int found;

	snprintf(root, sizeof(root), "/tmp/sl-test-tstore.XXXXXX");
	if (mkdtemp(root) == NULL) {
		perror("mkdtemp");
		return 1;
	}
	/* the data directory is root/data: root/topic.conf would be an escape */
	snprintf(data, sizeof(data), "%s/data", root);

	CHECK(sl_tstore_create(data, "good", 2, &pol) == 0, "create 'good' (makes the data dir)");
	CHECK(exists("data/good/topic.conf"), "good/topic.conf written");
	CHECK(sl_tstore_load(data, "good", &nparts, &got, why, sizeof(why)) == 0 && nparts == 2,
	      "good loads with 2 partitions");
	CHECK(sl_tstore_create(data, "good", 1, &pol) == -EEXIST,
	      "create over an existing topic directory: -EEXIST");
	mkdir_rel("data/foreign");
	touch("data/foreign/precious", "not ours\n");
	CHECK(sl_tstore_create(data, "foreign", 1, &pol) == -EEXIST,
	      "create over a foreign directory: -EEXIST");
	CHECK(exists("data/foreign/precious") && !exists("data/foreign/topic.conf"),
	      "the foreign directory is untouched");

	for (i = 0; i < sizeof(hostile) / sizeof(hostile[0]); i++) {
		const char *n = hostile[i];

		CHECK(sl_tstore_create(data, n, 1, &pol) == -EINVAL, "create '%s': -EINVAL", n);
		CHECK(sl_tstore_save(data, n, 1, &pol) == -EINVAL, "save '%s': -EINVAL", n);
		CHECK(sl_tstore_load(data, n, &nparts, &got, why, sizeof(why)) == -EINVAL,
		      "load '%s': -EINVAL", n);
		CHECK(sl_tstore_remove(data, n) == -EINVAL, "remove '%s': -EINVAL", n);
	}
	CHECK(!exists("topic.conf") && !exists("data/topic.conf") && !exists("escape") &&
		      !exists("data/a"), "nothing written outside a topic directory");
	CHECK(exists("data/good/topic.conf"), "remove('.') did not remove the data directory");

	/* recovery: what start sees */
	mkdir_rel("data/.hidden");
	touch("data/.hidden/topic.conf", "version=1\npartitions=1\n");
	mkdir_rel("data/lost+found");
	mkdir_rel("data/noconf");
	touch("data/afile", "x\n");
	CHECK(sl_tstore_foreach(data, collect, &seen) == 0, "foreach");
	skip = skip_of(&seen, "good", &found);
	CHECK(found && skip == NULL, "good: a topic to load");
	skip = skip_of(&seen, ".hidden", &found);
	CHECK(found && skip != NULL && strstr(skip, "name") != NULL,
	      ".hidden: reported, not a valid name (%s)", skip ? skip : "-");
	skip = skip_of(&seen, "lost+found", &found);
	CHECK(found && skip != NULL && strstr(skip, "name") != NULL,
	      "lost+found: reported, not a valid name");
	skip = skip_of(&seen, "noconf", &found);
	CHECK(found && skip != NULL && strstr(skip, "topic.conf") != NULL,
	      "noconf: reported, no topic.conf");
	skip = skip_of(&seen, "foreign", &found);
	CHECK(found && skip != NULL, "foreign: reported");
	skip = skip_of(&seen, "afile", &found);
	CHECK(found && skip != NULL && strstr(skip, "directory") != NULL,
	      "afile: reported, not a directory");
	skip_of(&seen, ".", &found);
	CHECK(!found, "'.' not reported");
	skip_of(&seen, "..", &found);
	CHECK(!found, "'..' not reported");

	/* a failed create leaves nothing: a data directory we cannot write into */
	if (geteuid() != 0) {
		char ro[320];

		snprintf(ro, sizeof(ro), "%s/ro", root);
		mkdir(ro, 0500);
		CHECK(sl_tstore_create(ro, "t", 1, &pol) == -EACCES, "create in a read-only dir");
	}
	CHECK(sl_tstore_remove(data, "good") == 0 && !exists("data/good"), "remove good");
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	if (system(cmd) != 0)
		printf("could not remove %s\n", root);
	return check_report();
}
