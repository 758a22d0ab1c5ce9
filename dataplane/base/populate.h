/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * populate: take the write fault of every page of a mapping ahead of need, off the data
 * path (the control thread growing a partition's log: its anonymous memory, or the file
 * mapping of a memory-durability log). Pure C (Linux), no DPDK.
 *
 * It goes SL_POPULATE_STEP bytes at a time with MADV_POPULATE_WRITE. One call holds the
 * process's memory map lock for reading, and another thread's mmap(), munmap() or
 * mprotect() waits for it: a persistence lcore's first malloc (which maps its arena)
 * waited 64 ms behind one call for 112 MiB (2026-11-29); one step of 2 MiB takes about
 * 2 ms on the development machine. On a file mapping a step also takes each page's fault
 * once (a write fault that reads the page in), where touching a page from user space
 * takes a read fault, then a write fault. Without MADV_POPULATE_WRITE (Linux before 5.14)
 * it touches each page: a load and a store of the same byte.
 */
#ifndef SL_POPULATE_H
#define SL_POPULATE_H

#include <stddef.h>

#define SL_POPULATE_STEP ((size_t)2 << 20)

/**
 * Take the write fault of every page of [m, m + len): the pages are resident and writable
 * after it, their contents unchanged. m must be page-aligned (a mapping's start, or an
 * offset of it in pages); len need not be. The caller makes sure every page can be backed
 * (a file's blocks allocated first, or a write to a hole may SIGBUS on a full disk).
 * Calling context: any thread, never the data path (it faults pages in).
 */
void
sl_populate_write(void *m, size_t len);

#endif /* SL_POPULATE_H */
