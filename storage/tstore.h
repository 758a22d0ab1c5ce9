/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * tstore: a topic's configuration in the data directory, so a restarted node recreates
 * its topics before it takes traffic. <data-dir>/<topic>/topic.conf is text, one
 * key=value per line (lines starting with # ignored, unknown keys refused):
 *   version=1
 *   partitions=4
 *   durability=disk          memory | disk
 *   sync=always              always | every:N | ms:T
 *   retain_bytes=0           per partition; 0 = no size limit
 *   retain_age_s=0           0 = no age limit
 *   retain_unconsumed=1      keep what a durable channel has not consumed
 * It is written with tmp + fsync + rename. Partition p lives in <data-dir>/<topic>/<p>/.
 * <topic> is always a name sl_name_check() (dataplane/base/name.h) accepts: one plain path
 * component, never '.', '..' or hidden; every function here refuses any other (-EINVAL).
 * Calling context of every function: the control thread.
 */
#ifndef SL_TSTORE_H
#define SL_TSTORE_H

#include <stdint.h>

#include "persist.h"

#define SL_TSTORE_VERSION 1

/** Create a new topic's directory (and the data directory if need be) and save its
 * configuration in it. The topic directory must not exist yet: -EEXIST if it does (a topic
 * that was not loaded, or a directory that is no topic, is never taken over). On any other
 * failure nothing is left behind. 0 or -errno. */
int
sl_tstore_create(const char *data_dir, const char *topic, uint16_t nparts,
		 const struct sl_persist_policy *pol);

/** Save a topic's configuration (creates the topic directory). 0 or -errno. */
int
sl_tstore_save(const char *data_dir, const char *topic, uint16_t nparts,
	       const struct sl_persist_policy *pol);

/** Load a topic's configuration. 0, -ENOENT (no topic.conf), -EBADMSG (malformed:
 * `why` says which line), or -errno. */
int
sl_tstore_load(const char *data_dir, const char *topic, uint16_t *nparts,
	       struct sl_persist_policy *pol, char *why, size_t why_len);

/** Remove a topic's directory and everything in it. 0 or -errno. */
int
sl_tstore_remove(const char *data_dir, const char *topic);

/** Call fn for every entry of data_dir but '.' and '..', in name order: with skip NULL
 * for a directory holding a topic.conf under a valid topic name (a topic to load), else
 * with skip saying why the entry is not a topic ("not a valid topic name", "not a
 * directory", "no topic.conf"): the caller logs and leaves it. Stops when fn returns
 * non-zero and returns that; else 0 or -errno. */
int
sl_tstore_foreach(const char *data_dir,
		  int (*fn)(void *arg, const char *entry, const char *skip), void *arg);

/** Format a partition's directory into buf. */
void
sl_tstore_part_dir(const char *data_dir, const char *topic, uint16_t part, char *buf,
		   size_t len);

#endif /* SL_TSTORE_H */
