/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * Unit test of the commit record's one codec (dataplane/base/crec.c) and the byte-order
 * helpers (bytes.h). The golden bytes below were produced by the encoders the disk log and
 * replication had before they shared this codec (put_crec in replication/repl.c,
 * crec_encode in storage/disklog.c, both little-endian): the formats are unchanged.
 */
#include <errno.h>
#include <string.h>

#include "bytes.h"
#include "crec.h"
#include "check.h"

static const uint8_t golden[SL_CREC_LEN] = {
	0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01,
	0x02, 0x00, 0x00, 0x00, 0x07, 0x00, 0x00, 0x00,
	0x10, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01,
	0x18, 0x17, 0x16, 0x15, 0x14, 0x13, 0x12, 0x11,
	0x10, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01,
	0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x71, 0x18,
	0x40, 0x01, 0x00, 0x00, 0x09, 0x00, 0x00, 0x00,
};

static const struct sl_crec rec = {
	.log_id = 0x0102030405060708ull,
	.epoch = 0x0000000700000002ull,
	.last_msg_log_id = 0x0102030405060710ull,
	.msg_offset = 0x1112131415161718ull,
	.msg_cnt = 0x0102030405060710ull,
	.timestamp_ns = 0x1871000000000001ull,
	.msg_size = 0x140,
	.msg_num = 9,
};

int
main(void)
{
	uint8_t buf[SL_CREC_LEN + 3], b8[8];
	struct sl_crec c, bad;

	memset(buf, 0xEE, sizeof(buf));
	sl_crec_encode(buf + 3, &rec);	/* at an odd address */
	CHECK(memcmp(buf + 3, golden, SL_CREC_LEN) == 0, "encode: the 56 golden bytes");
	memset(&c, 0, sizeof(c));
	sl_crec_decode(golden, &c);
	CHECK(memcmp(&c, &rec, sizeof(c)) == 0, "decode: every field back");
	CHECK(sl_crec_check(&rec, 32) == 0, "a consistent record passes the check");
	bad = rec;
	bad.msg_cnt--;
	CHECK(sl_crec_check(&bad, 32) == -EBADMSG, "msg_cnt != last id: refused");
	bad = rec;
	bad.msg_num = 8;
	CHECK(sl_crec_check(&bad, 32) == -EBADMSG, "msg_num not the id span: refused");
	bad = rec;
	bad.last_msg_log_id = bad.log_id - 1;
	CHECK(sl_crec_check(&bad, 32) == -EBADMSG, "last id before the first: refused");
	bad = rec;
	bad.msg_size = 0x13C;
	CHECK(sl_crec_check(&bad, 32) == -EBADMSG, "msg_size not a multiple of 8: refused");
	bad = rec;
	bad.msg_size = 8 * 32;
	CHECK(sl_crec_check(&bad, 32) == -EBADMSG, "msg_size below msg_num records: refused");

	sl_bytes_put_be64(b8, 0x0102030405060708ull);
	CHECK(b8[0] == 1 && b8[7] == 8 && sl_bytes_get_be64(b8) == 0x0102030405060708ull,
	      "big-endian 64");
	sl_bytes_put_le64(b8, 0x0102030405060708ull);
	CHECK(b8[0] == 8 && b8[7] == 1 && sl_bytes_get_le64(b8) == 0x0102030405060708ull,
	      "little-endian 64");
	sl_bytes_put_be16(b8, 0xABCD);
	sl_bytes_put_le16(b8 + 2, 0xABCD);
	CHECK(b8[0] == 0xAB && b8[2] == 0xCD && sl_bytes_get_be16(b8) == 0xABCD &&
		      sl_bytes_get_le16(b8 + 2) == 0xABCD, "16-bit both ways");
	sl_bytes_put_be32(b8, 0xA1B2C3D4);
	sl_bytes_put_le32(b8 + 4, 0xA1B2C3D4);
	CHECK(b8[0] == 0xA1 && b8[4] == 0xD4 && sl_bytes_get_be32(b8) == 0xA1B2C3D4 &&
		      sl_bytes_get_le32(b8 + 4) == 0xA1B2C3D4, "32-bit both ways");
	return check_report();
}
