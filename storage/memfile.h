/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * memfile: the file behind the in-memory log of a `memory`-durability partition with a
 * data directory. The region the worker appends to (storage/memlog.h) is a MAP_SHARED
 * mapping of <partition dir>/memlog, so what the worker wrote before it acknowledged a
 * publish is in the kernel's page cache and outlives a kill of the process (not a crash
 * of the machine: the page cache goes with it). At the next start the persistence layer
 * scans the region the killed process left (sl_memlog_scan) and writes what the disk log
 * lacks to it before the partition takes traffic.
 *
 * The region grows with the log (a lazy memlog, memlog.h): sl_memfile_map makes the file
 * sparse (the region reads as zeros and costs no block and no page), and the control
 * thread allocates the blocks of each part of the region and takes its write faults
 * (sl_memfile_prepare) before the log may write there: the data path makes no system
 * call and takes no fault for it, and a full disk is an error of the grower (the log
 * answers full), never a SIGBUS on the data path.
 *
 * File format (version 1; integers little-endian): a 4096-byte first page, then the
 * region (the in-memory log, host byte order, format in memlog.h):
 *   off size field
 *     0    8 magic        "SLMEMRNG"
 *     8    4 version      1
 *    12    4 hdr_len      64
 *    16    8 region_off   4096: where the region starts in the file
 *    24    8 region_len   bytes of the region (the log's size, --log-mb)
 *    32    8 created_ns   wall clock, when this run mapped it
 *    40    4 partition
 *    44    4 avg_msg_hint the log's index geometry (sl_memlog_conf.avg_msg_hint)
 *    48   12 boot         the first 12 bytes of the kernel's boot id
 *                         (/proc/sys/kernel/random/boot_id, as 16 bytes) of the boot
 *                         that wrote the region
 *    60    4 crc32c of bytes 0..59
 *    64    8 idx_base     the region's index base (memlog.h: slot of id = (id - idx_base)
 *                         mod idx_slots), host byte order, stored by the worker each time
 *                         it moves, before any record under it; not under the crc. Zero
 *                         in files written before it existed, which is what they meant
 *    72 4024 zero
 * A region is trusted only when the header is intact and its boot is the running one:
 * after a machine crash the page cache is gone and the file holds whatever the kernel
 * had written back, a mix of pages of different times, which nothing replays.
 */
#ifndef SL_MEMFILE_H
#define SL_MEMFILE_H

#include <stddef.h>
#include <stdint.h>

#include "sio.h"

#define SL_MEMFILE_NAME "memlog"
#define SL_MEMFILE_VERSION 1
#define SL_MEMFILE_REGION_OFF 4096

struct sl_memfile_conf {
	const char *dir;		/* partition directory (exists) */
	uint32_t partition;
	const struct sl_sio_ops *ops;	/* NULL = sl_sio_posix */
};

struct sl_memfile;

/**
 * Open (or create) dir/memlog and look at what the last process left there. When its
 * region is trusted (see the top of this file), sl_memfile_prev gives it, mapped read
 * only. Returns NULL with errno set (the filesystem's errno; EINVAL on a bad conf).
 * Calling context: control thread, at partition open.
 */
struct sl_memfile *
sl_memfile_open(const struct sl_memfile_conf *conf);

/**
 * The region the last process left: 1 with *mem, *len, *hint and *base (its index base)
 * when there is a trusted one, else 0. Valid until sl_memfile_map or sl_memfile_close.
 * Control thread.
 */
int
sl_memfile_prev(const struct sl_memfile *mf, const void **mem, uint64_t *len,
		uint32_t *hint, uint64_t *base);

/**
 * Make the region for this run: drop the old mapping and the old region's blocks, size
 * the file sparse to hold len bytes (a multiple of 8, >= 4096) after the first page, map
 * it shared, read-write, then write the header (this boot, this geometry). The region
 * reads as zeros: a lazy memlog (memlog.h) over it, grown with sl_memfile_prepare. The
 * caller must first have made durable whatever it needed from the old region. Returns
 * the region (4096-aligned) or NULL with errno set. Control thread.
 */
void *
sl_memfile_map(struct sl_memfile *mf, uint64_t len, uint32_t hint);

/**
 * Make bytes [off, off + len) of the region writable without a fault or a SIGBUS:
 * allocate their blocks (a full disk: -ENOSPC) and take the write fault of each page.
 * 0 or a negative errno. Control thread, for a region of sl_memfile_map.
 */
int
sl_memfile_prepare(struct sl_memfile *mf, uint64_t off, uint64_t len);

/** Where the log publishes its index base (header offset 64), for sl_memlog_conf.base_out;
 * NULL before sl_memfile_map. Control thread. */
uint64_t *
sl_memfile_base(struct sl_memfile *mf);

/** Unmap and close (the file stays). Control thread, once no lcore uses the region. */
void
sl_memfile_close(struct sl_memfile *mf);

#endif /* SL_MEMFILE_H */
