/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * bytes: the one set of byte-order helpers. Wire formats (wire.h, rlink.h) are big-endian
 * (network order); the disk formats (disklog.h) and the replication datagrams (repl.h,
 * crec.h) are little-endian. Every helper reads or writes through bytes, so any
 * alignment is fine. Any thread.
 */
#ifndef SL_BYTES_H
#define SL_BYTES_H

#include <stdint.h>

static inline void
sl_bytes_put_be16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static inline void
sl_bytes_put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static inline void
sl_bytes_put_be64(uint8_t *p, uint64_t v)
{
	sl_bytes_put_be32(p, (uint32_t)(v >> 32));
	sl_bytes_put_be32(p + 4, (uint32_t)v);
}

static inline uint16_t
sl_bytes_get_be16(const uint8_t *p)
{
	return (uint16_t)((uint16_t)p[0] << 8 | p[1]);
}

static inline uint32_t
sl_bytes_get_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static inline uint64_t
sl_bytes_get_be64(const uint8_t *p)
{
	return (uint64_t)sl_bytes_get_be32(p) << 32 | sl_bytes_get_be32(p + 4);
}

static inline void
sl_bytes_put_le16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static inline void
sl_bytes_put_le32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

static inline void
sl_bytes_put_le64(uint8_t *p, uint64_t v)
{
	sl_bytes_put_le32(p, (uint32_t)v);
	sl_bytes_put_le32(p + 4, (uint32_t)(v >> 32));
}

static inline uint16_t
sl_bytes_get_le16(const uint8_t *p)
{
	return (uint16_t)(p[0] | (uint16_t)p[1] << 8);
}

static inline uint32_t
sl_bytes_get_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static inline uint64_t
sl_bytes_get_le64(const uint8_t *p)
{
	return (uint64_t)sl_bytes_get_le32(p) | (uint64_t)sl_bytes_get_le32(p + 4) << 32;
}

#endif /* SL_BYTES_H */
