/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 */
#include <errno.h>
#include <string.h>

#include "bytes.h"
#include "rlink.h"

int
sl_rlink_encode(uint8_t *buf, uint32_t cap, const struct sl_rlink_env *env)
{
	uint32_t len = SL_RLINK_HDR_LEN + env->name_len;

	if (env->name_len == 0 || env->name_len > SL_RLINK_NAME_MAX || env->name == NULL)
		return -EINVAL;
	if (cap < len)
		return -ENOSPC;
	sl_bytes_put_be32(buf, SL_RLINK_MAGIC);
	buf[4] = SL_RLINK_VERSION;
	buf[5] = env->name_len;
	sl_bytes_put_be16(buf + 6, env->partition);
	sl_bytes_put_be32(buf + 8, env->from);
	sl_bytes_put_be32(buf + 12, env->to);
	memcpy(buf + SL_RLINK_HDR_LEN, env->name, env->name_len);
	return (int)len;
}

int
sl_rlink_decode(const uint8_t *buf, uint32_t len, struct sl_rlink_env *env)
{
	if (len < SL_RLINK_HDR_LEN || sl_bytes_get_be32(buf) != SL_RLINK_MAGIC)
		return -EBADMSG;
	if (buf[4] != SL_RLINK_VERSION)
		return -EPROTONOSUPPORT;
	env->name_len = buf[5];
	if (env->name_len == 0 || env->name_len > SL_RLINK_NAME_MAX ||
	    len < SL_RLINK_HDR_LEN + (uint32_t)env->name_len)
		return -EBADMSG;
	env->partition = sl_bytes_get_be16(buf + 6);
	env->from = sl_bytes_get_be32(buf + 8);
	env->to = sl_bytes_get_be32(buf + 12);
	env->name = (const char *)buf + SL_RLINK_HDR_LEN;
	env->payload = buf + SL_RLINK_HDR_LEN + env->name_len;
	env->payload_len = len - SL_RLINK_HDR_LEN - env->name_len;
	return 0;
}
