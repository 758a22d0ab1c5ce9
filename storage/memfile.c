/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * memfile: the file behind a memory-durability partition's in-memory log (memfile.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include <rte_hash_crc.h>

#include "bytes.h"
#include "memfile.h"
#include "populate.h"

#define MAGIC "SLMEMRNG"
#define HDR_LEN 64
#define BOOT_LEN 12
#define PAGE 4096u
#define BASE_OFF 64		/* the region's index base (memlog.h), host byte order */

struct sl_memfile {
	const struct sl_sio_ops *ops;
	int fd;
	uint32_t partition;
	uint8_t boot[BOOT_LEN];		/* this boot's id (zero when unknown) */
	uint8_t *map;			/* the whole file, mapped */
	uint64_t map_len;
	int prev;			/* map is the last process's region, trusted */
	uint64_t prev_len;
	uint32_t prev_hint;
	uint64_t prev_base;
};

/* CRC32C (Castagnoli, init and final xor ~0), as the disk log's files. */
static uint32_t
crc32c(const uint8_t *p, size_t len)
{
	uint32_t crc = ~0u;

	while (len-- > 0)
		crc = rte_hash_crc_1byte(*p++, crc);
	return ~crc;
}

static int
hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* The first BOOT_LEN bytes of the kernel's boot id; all zero (never trusted) if unknown. */
static void
boot_id(uint8_t *out)
{
	char txt[64];
	FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
	size_t i, n = 0;

	memset(out, 0, BOOT_LEN);
	if (f == NULL)
		return;
	if (fgets(txt, sizeof(txt), f) != NULL) {
		for (i = 0; txt[i] != '\0' && n < 2 * BOOT_LEN; i++) {
			int v = hexval(txt[i]);

			if (v < 0)
				continue;
			out[n / 2] = (uint8_t)(out[n / 2] << 4 | v);
			n++;
		}
	}
	fclose(f);
}

static int
boot_known(const uint8_t *b)
{
	static const uint8_t zero[BOOT_LEN];

	return memcmp(b, zero, BOOT_LEN) != 0;
}

static int
neg_errno(void)
{
	return errno != 0 ? errno : EIO;
}

/* Is the header at h ours, intact, of this boot, with a region the file holds? */
static int
hdr_trusted(const struct sl_memfile *mf, const uint8_t *h, uint64_t fsize, uint64_t *len,
	    uint32_t *hint)
{
	uint64_t off, rlen;

	if (memcmp(h, MAGIC, 8) != 0 || sl_bytes_get_le32(h + 8) != SL_MEMFILE_VERSION ||
	    sl_bytes_get_le32(h + 12) != HDR_LEN || sl_bytes_get_le32(h + 60) != crc32c(h, 60))
		return 0;
	off = sl_bytes_get_le64(h + 16);
	rlen = sl_bytes_get_le64(h + 24);
	if (off != SL_MEMFILE_REGION_OFF || rlen < 4096 || (rlen & 7) != 0 ||
	    rlen > fsize - off || fsize < off ||
	    sl_bytes_get_le32(h + 40) != mf->partition)
		return 0;
	if (!boot_known(mf->boot) || memcmp(h + 48, mf->boot, BOOT_LEN) != 0)
		return 0;
	*len = rlen;
	*hint = sl_bytes_get_le32(h + 44);
	return 1;
}

/* The index base the region's writer published (0 in files of before it had one). */
static uint64_t
hdr_base(const uint8_t *h)
{
	uint64_t b;

	memcpy(&b, h + BASE_OFF, sizeof(b));	/* host byte order, as the region */
	return b;
}

static void
unmap(struct sl_memfile *mf)
{
	if (mf->map != NULL)
		mf->ops->munmap(mf->map, mf->map_len);
	mf->map = NULL;
	mf->map_len = 0;
	mf->prev = 0;
}

/* Calling context: control thread, at partition open. */
struct sl_memfile *
sl_memfile_open(const struct sl_memfile_conf *conf)
{
	struct sl_memfile *mf = NULL;
	uint8_t h[HDR_LEN];
	char path[4096];
	struct stat st;
	void *m;
	int err = EINVAL;

	if (conf == NULL || conf->dir == NULL)
		goto fail;
	if ((size_t)snprintf(path, sizeof(path), "%s/%s", conf->dir, SL_MEMFILE_NAME) >=
	    sizeof(path))
		goto fail;
	mf = calloc(1, sizeof(*mf));
	err = ENOMEM;
	if (mf == NULL)
		goto fail;
	mf->ops = conf->ops != NULL ? conf->ops : &sl_sio_posix;
	mf->partition = conf->partition;
	boot_id(mf->boot);
	mf->fd = mf->ops->open(path, O_RDWR | O_CREAT, 0644);
	if (mf->fd < 0) {
		err = neg_errno();
		free(mf);
		mf = NULL;
		goto fail;
	}
	if (mf->ops->fstat(mf->fd, &st) != 0) {
		err = neg_errno();
		goto fail;
	}
	/* a short, foreign or torn header, or another boot's: nothing to take back */
	if ((uint64_t)st.st_size < SL_MEMFILE_REGION_OFF ||
	    mf->ops->pread(mf->fd, h, sizeof(h), 0) != (ssize_t)sizeof(h) ||
	    !hdr_trusted(mf, h, (uint64_t)st.st_size, &mf->prev_len, &mf->prev_hint))
		return mf;
	m = mf->ops->mmap(NULL, SL_MEMFILE_REGION_OFF + mf->prev_len, PROT_READ, MAP_SHARED,
			  mf->fd, 0);
	if (m == MAP_FAILED) {
		err = neg_errno();
		goto fail;
	}
	mf->map = m;
	mf->map_len = SL_MEMFILE_REGION_OFF + mf->prev_len;
	mf->prev = 1;
	mf->prev_base = hdr_base(mf->map);
	return mf;
fail:
	sl_memfile_close(mf);
	errno = err;
	return NULL;
}

/* Calling context: control thread. */
int
sl_memfile_prev(const struct sl_memfile *mf, const void **mem, uint64_t *len, uint32_t *hint,
		uint64_t *base)
{
	if (!mf->prev)
		return 0;
	*mem = mf->map + SL_MEMFILE_REGION_OFF;
	*len = mf->prev_len;
	*hint = mf->prev_hint;
	*base = mf->prev_base;
	return 1;
}

/* Calling context: control thread. */
void *
sl_memfile_map(struct sl_memfile *mf, uint64_t len, uint32_t hint)
{
	uint64_t total = SL_MEMFILE_REGION_OFF + len;
	struct timespec ts;
	uint8_t *h;
	void *m;

	if (len < 4096 || (len & 7) != 0) {
		errno = EINVAL;
		return NULL;
	}
	unmap(mf);
	/* drop the old region (its blocks go) and size the file sparse: the new region
	 * reads as zeros, costs no disk block and no memory until sl_memfile_prepare */
	if (mf->ops->ftruncate(mf->fd, SL_MEMFILE_REGION_OFF) != 0 ||
	    mf->ops->ftruncate(mf->fd, (off_t)total) != 0)
		return NULL;
	errno = mf->ops->fallocate(mf->fd, 0, SL_MEMFILE_REGION_OFF);
	if (errno != 0)
		return NULL;
	m = mf->ops->mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE,
			  mf->fd, 0);
	if (m == MAP_FAILED)
		return NULL;
	mf->map = m;
	mf->map_len = total;
	h = mf->map;
	memset(h, 0, SL_MEMFILE_REGION_OFF);
	memcpy(h, MAGIC, 8);
	sl_bytes_put_le32(h + 8, SL_MEMFILE_VERSION);
	sl_bytes_put_le32(h + 12, HDR_LEN);
	sl_bytes_put_le64(h + 16, SL_MEMFILE_REGION_OFF);
	sl_bytes_put_le64(h + 24, len);
	clock_gettime(CLOCK_REALTIME, &ts);
	sl_bytes_put_le64(h + 32, (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec);
	sl_bytes_put_le32(h + 40, mf->partition);
	sl_bytes_put_le32(h + 44, hint);
	memcpy(h + 48, mf->boot, BOOT_LEN);
	sl_bytes_put_le32(h + 60, crc32c(h, 60));
	return mf->map + SL_MEMFILE_REGION_OFF;
}

/* Calling context: control thread. */
uint64_t *
sl_memfile_base(struct sl_memfile *mf)
{
	return mf->map != NULL && !mf->prev ? (uint64_t *)(void *)(mf->map + BASE_OFF) : NULL;
}

/* Calling context: control thread (the region's grower). */
int
sl_memfile_prepare(struct sl_memfile *mf, uint64_t off, uint64_t len)
{
	uint64_t from = SL_MEMFILE_REGION_OFF + off / PAGE * PAGE, to;
	int err;

	if (mf->map == NULL || mf->prev || off + len > mf->map_len - SL_MEMFILE_REGION_OFF)
		return -EINVAL;
	if (len == 0)
		return 0;
	to = SL_MEMFILE_REGION_OFF + off + len;
	/* blocks first: a full disk is an error here, never a SIGBUS when the worker
	 * first writes the page */
	err = mf->ops->fallocate(mf->fd, (off_t)from, (off_t)(to - from));
	if (err != 0)
		return -err;
	/* then the write fault of each page, here rather than on the data path */
	sl_populate_write(mf->map + from, to - from);
	return 0;
}

/* Calling context: control thread, once no lcore uses the region. */
void
sl_memfile_close(struct sl_memfile *mf)
{
	if (mf == NULL)
		return;
	unmap(mf);
	if (mf->fd >= 0)
		mf->ops->close(mf->fd);
	free(mf);
}
