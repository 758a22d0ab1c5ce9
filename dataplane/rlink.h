/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * rlink: the replica link, how replication datagrams (replication/repl.h) travel between
 * sluiced nodes over the same DPDK ports as clients, on the replica UDP port (the client
 * port + 1, 5151 by default). Each UDP payload is an envelope naming the partition, then
 * the replication datagram, opaque here. Network byte order:
 *
 *   off size field
 *     0    4 magic      0x534C5250 ("SLRP")
 *     4    1 version    1
 *     5    1 name_len   topic name length, 1..64
 *     6    2 partition
 *     8    4 from       sender's node id
 *    12    4 to         receiver's node id (a node drops what is not for it)
 *    16    n topic name (name_len bytes, no NUL)
 *  16+n  ... replication datagram
 *
 * Pure functions over buffers: no EAL, unit-tested.
 */
#ifndef SL_RLINK_H
#define SL_RLINK_H

#include <stdint.h>

#define SL_RLINK_MAGIC 0x534C5250u
#define SL_RLINK_VERSION 1
#define SL_RLINK_HDR_LEN 16
#define SL_RLINK_NAME_MAX 64

struct sl_rlink_env {
	uint32_t from;
	uint32_t to;
	uint16_t partition;
	uint8_t name_len;
	const char *name;		/* decode: points into the buffer */
	const uint8_t *payload;		/* decode: the replication datagram */
	uint32_t payload_len;
};

/**
 * Write the envelope for env (name, partition, from, to) at buf (cap bytes). Returns the
 * envelope length (the datagram follows it) or -ENOSPC / -EINVAL. Any thread.
 */
int
sl_rlink_encode(uint8_t *buf, uint32_t cap, const struct sl_rlink_env *env);

/**
 * Parse a replica UDP payload. Returns 0 and *env, or -EBADMSG (not an envelope: short,
 * bad magic, bad name length) or -EPROTONOSUPPORT (another version). Any thread.
 */
int
sl_rlink_decode(const uint8_t *buf, uint32_t len, struct sl_rlink_env *env);

#endif /* SL_RLINK_H */
