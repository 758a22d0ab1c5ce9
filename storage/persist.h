/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * persist: the persistence lcore. Worker lcores hand it records through one
 * single-producer/single-consumer ring each (sl_persist_submit); it will copy them into
 * hugepage buffers and write them to files (the durable storage issue). Today every
 * topic has `memory` durability: a message is acknowledged when it is committed in the
 * worker's in-memory log, and this lcore only drains and counts what it is handed, so
 * the seam (rings, lcore, idle behaviour, QSBR registration) is in place and exercised.
 */
#ifndef SL_PERSIST_H
#define SL_PERSIST_H

#include <stdint.h>

#include <rte_common.h>

#define SL_PERSIST_MAX_SOURCES 16

struct sl_persist_conf {
	unsigned int lcore;
	uint16_t nsources;		/* worker lcores that submit */
	uint32_t ring_size;		/* per source, power of two; 0 = 4096 */
	int adaptive_idle;
	uint32_t idle_max_us;
	int socket_id;
};

struct sl_persist_stats {
	uint64_t records;
	uint64_t loops;
	uint64_t idle_sleeps;
};

struct sl_persist;

/** Create the rings. Control thread. NULL + rte_errno. */
struct sl_persist *
sl_persist_open(const struct sl_persist_conf *conf);

/** Launch the persistence lcore. Control thread. 0 or negative errno. */
int
sl_persist_start(struct sl_persist *p);

/** Stop (waits for the lcore; the quit flag is the broker's) and free. Control thread. */
void
sl_persist_close(struct sl_persist *p);

/** Hand a record to the persistence lcore. Calling context: worker `source` only.
 * Returns 0 or -ENOBUFS (ring full: the caller keeps ownership of rec). */
int
sl_persist_submit(struct sl_persist *p, uint16_t source, void *rec);

const struct sl_persist_stats *
sl_persist_get_stats(const struct sl_persist *p);

#endif /* SL_PERSIST_H */
