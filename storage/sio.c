/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * sio: the real storage I/O operations (see sio.h): thin wrappers over the system calls
 * that retry EINTR. A short pread or pwrite is returned as is; the caller decides.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "sio.h"

static int
posix_open(const char *path, int flags, mode_t mode)
{
	int fd;

	do {
		fd = open(path, flags | O_CLOEXEC, mode);
	} while (fd < 0 && errno == EINTR);
	return fd;
}

/* close is not retried: on Linux the descriptor is released even when it fails. */
static int
posix_close(int fd)
{
	return close(fd);
}

static ssize_t
posix_pwrite(int fd, const void *buf, size_t len, off_t off)
{
	ssize_t r;

	do {
		r = pwrite(fd, buf, len, off);
	} while (r < 0 && errno == EINTR);
	return r;
}

static ssize_t
posix_pread(int fd, void *buf, size_t len, off_t off)
{
	ssize_t r;

	do {
		r = pread(fd, buf, len, off);
	} while (r < 0 && errno == EINTR);
	return r;
}

static int
posix_fdatasync(int fd)
{
	int r;

	do {
		r = fdatasync(fd);
	} while (r < 0 && errno == EINTR);
	return r;
}

static int
posix_fsync(int fd)
{
	int r;

	do {
		r = fsync(fd);
	} while (r < 0 && errno == EINTR);
	return r;
}

static int
posix_ftruncate(int fd, off_t len)
{
	int r;

	do {
		r = ftruncate(fd, len);
	} while (r < 0 && errno == EINTR);
	return r;
}

static int
posix_unlink(const char *path)
{
	int r;

	do {
		r = unlink(path);
	} while (r < 0 && errno == EINTR);
	return r;
}

static int
posix_rename(const char *from, const char *to)
{
	int r;

	do {
		r = rename(from, to);
	} while (r < 0 && errno == EINTR);
	return r;
}

static int
posix_fstat(int fd, struct stat *st)
{
	return fstat(fd, st);
}

static int
posix_falloc(int fd, off_t off, off_t len)
{
	int r;

	do {
		r = posix_fallocate(fd, off, len);
	} while (r == EINTR);
	return r;
}

static void *
posix_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	return mmap(addr, len, prot, flags, fd, off);
}

static int
posix_munmap(void *addr, size_t len)
{
	return munmap(addr, len);
}

const struct sl_sio_ops sl_sio_posix = {
	.open = posix_open,
	.close = posix_close,
	.pwrite = posix_pwrite,
	.pread = posix_pread,
	.fdatasync = posix_fdatasync,
	.fsync = posix_fsync,
	.ftruncate = posix_ftruncate,
	.unlink = posix_unlink,
	.rename = posix_rename,
	.fstat = posix_fstat,
	.fallocate = posix_falloc,
	.mmap = posix_mmap,
	.munmap = posix_munmap,
};
