/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "name.h"
#include "tstore.h"

void
sl_tstore_part_dir(const char *data_dir, const char *topic, uint16_t part, char *buf,
		   size_t len)
{
	snprintf(buf, len, "%s/%s/%u", data_dir, topic, part);
}

static int
mkdir_p(const char *path)
{
	char tmp[PATH_MAX];
	char *p;

	if (snprintf(tmp, sizeof(tmp), "%s", path) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	for (p = tmp + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(tmp, 0750) != 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(tmp, 0750) != 0 && errno != EEXIST)
		return -errno;
	return 0;
}

static void
fsync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY);

	if (fd >= 0) {
		fsync(fd);
		close(fd);
	}
}

/* topic.conf in dir (which exists), with tmp + fsync + rename. */
static int
conf_write(const char *dir, uint16_t nparts, const struct sl_persist_policy *pol)
{
	char path[PATH_MAX], tmp[PATH_MAX], sync[32];
	FILE *f;
	int rc;

	snprintf(path, sizeof(path), "%s/topic.conf", dir);
	snprintf(tmp, sizeof(tmp), "%s/topic.conf.tmp", dir);
	f = fopen(tmp, "w");
	if (f == NULL)
		return -errno;
	fprintf(f, "# sluice topic configuration (written by sluiced)\n"
		"version=%d\npartitions=%u\ndurability=%s\nsync=%s\nretain_bytes=%" PRIu64
		"\nretain_age_s=%" PRIu64 "\nretain_unconsumed=%d\n",
		SL_TSTORE_VERSION, nparts, pol->durability == SL_PERSIST_DISK ? "disk" : "memory",
		sl_persist_sync_str(pol, sync, sizeof(sync)), pol->retain_bytes,
		pol->retain_age_s, pol->retain_unconsumed ? 1 : 0);
	rc = fflush(f) != 0 || fsync(fileno(f)) != 0 ? -errno : 0;
	if (fclose(f) != 0 && rc == 0)
		rc = -errno;
	if (rc == 0 && rename(tmp, path) != 0)
		rc = -errno;
	if (rc != 0) {
		unlink(tmp);
		return rc;
	}
	fsync_dir(dir);
	return 0;
}

int
sl_tstore_save(const char *data_dir, const char *topic, uint16_t nparts,
	       const struct sl_persist_policy *pol)
{
	char dir[PATH_MAX - 32];
	int rc;

	if (sl_name_check_str(topic) != 0)
		return -EINVAL;
	snprintf(dir, sizeof(dir), "%s/%s", data_dir, topic);
	rc = mkdir_p(dir);
	return rc != 0 ? rc : conf_write(dir, nparts, pol);
}

int
sl_tstore_create(const char *data_dir, const char *topic, uint16_t nparts,
		 const struct sl_persist_policy *pol)
{
	char dir[PATH_MAX - 32];
	int rc;

	if (sl_name_check_str(topic) != 0)
		return -EINVAL;
	rc = mkdir_p(data_dir);
	if (rc != 0)
		return rc;
	if (snprintf(dir, sizeof(dir), "%s/%s", data_dir, topic) >= (int)sizeof(dir))
		return -ENAMETOOLONG;
	if (mkdir(dir, 0750) != 0)
		return -errno;
	rc = conf_write(dir, nparts, pol);
	if (rc != 0) {
		sl_tstore_remove(data_dir, topic);
		return rc;
	}
	fsync_dir(data_dir);
	return 0;
}

static int
parse_u64(const char *v, uint64_t *out)
{
	char *end;

	errno = 0;
	*out = strtoull(v, &end, 10);
	return errno != 0 || end == v || *end != '\0' || v[0] == '-' ? -1 : 0;
}

int
sl_tstore_load(const char *data_dir, const char *topic, uint16_t *nparts,
	       struct sl_persist_policy *pol, char *why, size_t why_len)
{
	char path[PATH_MAX], line[256];
	unsigned int lineno = 0;
	uint64_t v;
	int rc = 0, have_parts = 0;
	FILE *f;

	if (sl_name_check_str(topic) != 0)
		return -EINVAL;
	snprintf(path, sizeof(path), "%s/%s/topic.conf", data_dir, topic);
	f = fopen(path, "r");
	if (f == NULL)
		return -errno;
	memset(pol, 0, sizeof(*pol));
	pol->retain_unconsumed = 1;
	while (fgets(line, sizeof(line), f) != NULL) {
		char *eq, *val;
		size_t n = strcspn(line, "\r\n");

		lineno++;
		line[n] = '\0';
		if (line[0] == '#' || line[0] == '\0')
			continue;
		eq = strchr(line, '=');
		if (eq == NULL)
			goto bad;
		*eq = '\0';
		val = eq + 1;
		if (strcmp(line, "version") == 0) {
			if (parse_u64(val, &v) != 0 || v != SL_TSTORE_VERSION)
				goto bad;
		} else if (strcmp(line, "partitions") == 0) {
			if (parse_u64(val, &v) != 0 || v == 0 || v > UINT16_MAX)
				goto bad;
			*nparts = (uint16_t)v;
			have_parts = 1;
		} else if (strcmp(line, "durability") == 0) {
			if (strcmp(val, "disk") == 0)
				pol->durability = SL_PERSIST_DISK;
			else if (strcmp(val, "memory") == 0)
				pol->durability = SL_PERSIST_MEMORY;
			else
				goto bad;
		} else if (strcmp(line, "sync") == 0) {
			if (sl_persist_parse_sync(val, pol) != 0)
				goto bad;
		} else if (strcmp(line, "retain_bytes") == 0) {
			if (parse_u64(val, &pol->retain_bytes) != 0)
				goto bad;
		} else if (strcmp(line, "retain_age_s") == 0) {
			if (parse_u64(val, &pol->retain_age_s) != 0)
				goto bad;
		} else if (strcmp(line, "retain_unconsumed") == 0) {
			if (parse_u64(val, &v) != 0 || v > 1)
				goto bad;
			pol->retain_unconsumed = (int)v;
		} else {
			goto bad;
		}
	}
	if (!have_parts) {
		snprintf(why, why_len, "%s: no partitions= line", path);
		rc = -EBADMSG;
	}
	fclose(f);
	return rc;
bad:
	snprintf(why, why_len, "%s:%u: bad line '%s'", path, lineno, line);
	fclose(f);
	return -EBADMSG;
}

static int
rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	return remove(path) != 0 ? -1 : 0;
}

int
sl_tstore_remove(const char *data_dir, const char *topic)
{
	char dir[PATH_MAX];

	if (sl_name_check_str(topic) != 0)
		return -EINVAL;
	snprintf(dir, sizeof(dir), "%s/%s", data_dir, topic);
	if (nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS) != 0)
		return errno == ENOENT ? 0 : -errno;
	return 0;
}

static int
cmp_names(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

/* Why data_dir/name is not a topic to load, or NULL. */
static const char *
not_a_topic(const char *data_dir, const char *name)
{
	char path[PATH_MAX];
	struct stat st;

	if (sl_name_check_str(name) != 0)
		return "not a valid topic name (" SL_NAME_RULE ")";
	snprintf(path, sizeof(path), "%s/%s", data_dir, name);
	if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
		return "not a directory";
	snprintf(path, sizeof(path), "%s/%s/topic.conf", data_dir, name);
	if (stat(path, &st) != 0)
		return "no topic.conf";
	return NULL;
}

int
sl_tstore_foreach(const char *data_dir,
		  int (*fn)(void *arg, const char *entry, const char *skip), void *arg)
{
	struct dirent **ents;
	int i, n, rc = 0;

	n = scandir(data_dir, &ents, NULL, cmp_names);
	if (n < 0)
		return errno == ENOENT ? 0 : -errno;
	for (i = 0; i < n; i++) {
		const char *e = ents[i]->d_name;

		if (rc == 0 && strcmp(e, ".") != 0 && strcmp(e, "..") != 0)
			rc = fn(arg, e, not_a_topic(data_dir, e));
		free(ents[i]);
	}
	free(ents);
	return rc;
}
