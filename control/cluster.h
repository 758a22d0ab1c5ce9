/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * cluster: the cluster file's parser (--cluster), read by the membership seam's static
 * backend (membership_static.c; the seam itself: membership.h). Text, one item per line,
 * '#' starts a comment:
 *
 *   node <id> <ipv4> [replica-udp-port]
 *   partition <topic> <partition> replicas=<id,id,...> leader=<id> isr=<id,...>
 *             [epoch=<n>] [session=<n>] [writes=on|off]
 *
 * (a partition line is one line). Every id must be a declared node; the leader and every
 * ISR member must be replicas; epoch and session default to 1. A topic named in a
 * partition line gets as many partitions as its highest partition number + 1 when the
 * node creates it. Parsing needs no EAL. Calling context: control thread.
 */
#ifndef SL_CLUSTER_H
#define SL_CLUSTER_H

#include <stddef.h>
#include <stdint.h>

#include "coord.h"

#define SL_CLUSTER_MAX_NODES 64
#define SL_CLUSTER_MAX_PARTS 1024
#define SL_CLUSTER_REPL_PORT 5151	/* default replica UDP port */

struct sl_cluster_node {
	uint32_t id;
	uint32_t ip;			/* host byte order */
	uint16_t port;			/* replica UDP port */
};

struct sl_cluster_part {
	char topic[SL_COORD_NAME_MAX + 1];
	uint16_t partition;
	struct sl_part_meta meta;	/* leader, epoch, session, replicas, ISR, writes */
};

struct sl_cluster {
	uint32_t nnodes;
	struct sl_cluster_node nodes[SL_CLUSTER_MAX_NODES];
	uint32_t nparts;
	struct sl_cluster_part parts[SL_CLUSTER_MAX_PARTS];
};

/**
 * Parse a cluster file into *c. Returns 0, or a negative errno with `err` holding
 * "FILE:LINE: what is wrong". Control thread.
 */
int
sl_cluster_load(const char *path, struct sl_cluster *c, char *err, size_t err_len);

/** Parse "1,2,3" into ids (at most max). Returns the count or -EINVAL. Any thread. */
int
sl_cluster_parse_ids(const char *s, uint32_t *ids, int max);

/** 1 if id is among the n ids, else 0. Any thread. */
int
sl_cluster_has(const uint32_t *ids, int n, uint32_t id);

/** Check a partition view: leader and ISR members are replicas, no duplicates, the ISR
 * holds the leader, at least one replica. 0 or -EINVAL with `err` set. Any thread. */
int
sl_cluster_check_meta(const struct sl_part_meta *m, char *err, size_t err_len);

#define SL_CLUSTER_KEY_LEN 32
#define SL_CLUSTER_MAX_KEYS 2

/**
 * Read the cluster key file (--cluster-key): one or two keys, each 64 hex digits on a line
 * of its own ('#' comments and blank lines allowed; `sluicectl keygen FILE` writes one).
 * The first key tags what this node sends, either is accepted (rotation:
 * docs/operations.md). The file must be a regular file owned by this user and readable by
 * no one else (mode 0600 or 0400). Returns the number of keys, or a negative errno with
 * `err` holding "FILE: what is wrong". Control thread.
 */
int
sl_cluster_key_load(const char *path, uint8_t keys[][SL_CLUSTER_KEY_LEN], int max, char *err,
		    size_t err_len);

/** The node with this id, or NULL. */
const struct sl_cluster_node *
sl_cluster_node(const struct sl_cluster *c, uint32_t id);

#endif /* SL_CLUSTER_H */
