/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * sio: the storage I/O operations table. Every file operation of the disk log and of the
 * memory log file (memfile.h) goes through one of these, so unit tests can inject short
 * writes, EIO, ENOSPC, a failed fdatasync, mmap or a torn tail without touching the code
 * under test. sl_sio_posix is the real one (thin wrappers over the system calls, retrying
 * EINTR). Each call returns what the system call returns, with errno set on failure
 * (mmap: MAP_FAILED).
 */
#ifndef SL_SIO_H
#define SL_SIO_H

#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

struct sl_sio_ops {
	int (*open)(const char *path, int flags, mode_t mode);
	int (*close)(int fd);
	ssize_t (*pwrite)(int fd, const void *buf, size_t len, off_t off);
	ssize_t (*pread)(int fd, void *buf, size_t len, off_t off);
	int (*fdatasync)(int fd);
	int (*fsync)(int fd);		/* files and directories (after create/rename) */
	int (*ftruncate)(int fd, off_t len);
	int (*unlink)(const char *path);
	int (*rename)(const char *from, const char *to);
	int (*fstat)(int fd, struct stat *st);
	/* the memory log file's blocks (posix_fallocate: returns an errno, not -1) and its
	 * shared mapping (storage/memfile.h) */
	int (*fallocate)(int fd, off_t off, off_t len);
	void *(*mmap)(void *addr, size_t len, int prot, int flags, int fd, off_t off);
	int (*munmap)(void *addr, size_t len);
};

/** The real operations. Any thread. */
extern const struct sl_sio_ops sl_sio_posix;

#endif /* SL_SIO_H */
