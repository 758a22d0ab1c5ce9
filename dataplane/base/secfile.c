/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "secfile.h"

int
sl_secfile_open(const char *path, char *err, size_t err_len)
{
	struct stat st;
	int fd, rc;

	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		snprintf(err, err_len, "%s: %s", path,
			 errno == ELOOP ? "a symbolic link: give the file itself" :
					  strerror(errno));
		return rc;
	}
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		rc = -EINVAL;
		snprintf(err, err_len, "%s: not a regular file", path);
		goto fail;
	}
	if ((st.st_mode & 077) != 0 || st.st_uid != geteuid()) {
		rc = -EPERM;
		snprintf(err, err_len, "%s: must be owned by this user and readable by no one "
			 "else (chmod 600 %s)", path, path);
		goto fail;
	}
	return fd;
fail:
	close(fd);
	return rc;
}
