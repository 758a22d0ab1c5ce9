/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 */
#include <errno.h>
#include <string.h>

#include "rlink.h"

static inline void
put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static inline void
put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static inline uint16_t
get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static inline uint32_t
get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

int
sl_rlink_encode(uint8_t *buf, uint32_t cap, const struct sl_rlink_env *env)
{
	uint32_t len = SL_RLINK_HDR_LEN + env->name_len;

	if (env->name_len == 0 || env->name_len > SL_RLINK_NAME_MAX || env->name == NULL)
		return -EINVAL;
	if (cap < len)
		return -ENOSPC;
	put32(buf, SL_RLINK_MAGIC);
	buf[4] = SL_RLINK_VERSION;
	buf[5] = env->name_len;
	put16(buf + 6, env->partition);
	put32(buf + 8, env->from);
	put32(buf + 12, env->to);
	memcpy(buf + SL_RLINK_HDR_LEN, env->name, env->name_len);
	return (int)len;
}

int
sl_rlink_decode(const uint8_t *buf, uint32_t len, struct sl_rlink_env *env)
{
	if (len < SL_RLINK_HDR_LEN || get32(buf) != SL_RLINK_MAGIC)
		return -EBADMSG;
	if (buf[4] != SL_RLINK_VERSION)
		return -EPROTONOSUPPORT;
	env->name_len = buf[5];
	if (env->name_len == 0 || env->name_len > SL_RLINK_NAME_MAX ||
	    len < SL_RLINK_HDR_LEN + (uint32_t)env->name_len)
		return -EBADMSG;
	env->partition = get16(buf + 6);
	env->from = get32(buf + 8);
	env->to = get32(buf + 12);
	env->name = (const char *)buf + SL_RLINK_HDR_LEN;
	env->payload = buf + SL_RLINK_HDR_LEN + env->name_len;
	env->payload_len = len - SL_RLINK_HDR_LEN - env->name_len;
	return 0;
}
