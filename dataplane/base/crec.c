/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * crec: the commit record's codec (layout in crec.h).
 */
#include <errno.h>

#include "bytes.h"
#include "crec.h"

void
sl_crec_encode(uint8_t *p, const struct sl_crec *c)
{
	sl_bytes_put_le64(p, c->log_id);
	sl_bytes_put_le64(p + 8, c->epoch);
	sl_bytes_put_le64(p + 16, c->last_msg_log_id);
	sl_bytes_put_le64(p + 24, c->msg_offset);
	sl_bytes_put_le64(p + 32, c->msg_cnt);
	sl_bytes_put_le64(p + 40, c->timestamp_ns);
	sl_bytes_put_le32(p + 48, c->msg_size);
	sl_bytes_put_le32(p + 52, c->msg_num);
}

void
sl_crec_decode(const uint8_t *p, struct sl_crec *c)
{
	c->log_id = sl_bytes_get_le64(p);
	c->epoch = sl_bytes_get_le64(p + 8);
	c->last_msg_log_id = sl_bytes_get_le64(p + 16);
	c->msg_offset = sl_bytes_get_le64(p + 24);
	c->msg_cnt = sl_bytes_get_le64(p + 32);
	c->timestamp_ns = sl_bytes_get_le64(p + 40);
	c->msg_size = sl_bytes_get_le32(p + 48);
	c->msg_num = sl_bytes_get_le32(p + 52);
	c->producer = 0;
	c->pseq = 0;
}

int
sl_crec_check(const struct sl_crec *c, uint32_t min_rec)
{
	if (c->last_msg_log_id < c->log_id || c->msg_cnt != c->last_msg_log_id ||
	    c->msg_num != c->last_msg_log_id - c->log_id + 1 ||
	    (uint64_t)c->msg_size < (uint64_t)c->msg_num * min_rec || (c->msg_size & 7) != 0)
		return -EBADMSG;
	return 0;
}
