/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * Unit test of the replica link envelope (dataplane/rlink.c): round trip, every
 * truncation, bad magic, name lengths and versions.
 */
#include <errno.h>
#include <string.h>

#include "rlink.h"
#include "check.h"

int
main(void)
{
	uint8_t buf[256];
	struct sl_rlink_env e = {.from = 3, .to = 0x01020304, .partition = 513, .name = "orders",
				 .name_len = 6}, d;
	uint32_t n, i, bad = 0;
	int len;

	len = sl_rlink_encode(buf, sizeof(buf), &e);
	CHECK(len == SL_RLINK_HDR_LEN + 6, "envelope of a 6-byte name is %d bytes", len);
	memcpy(buf + len, "DATAGRAM", 8);
	n = (uint32_t)len + 8;
	CHECK(sl_rlink_decode(buf, n, &d) == 0 && d.from == 3 && d.to == 0x01020304 &&
	      d.partition == 513 && d.name_len == 6 && memcmp(d.name, "orders", 6) == 0 &&
	      d.payload_len == 8 && memcmp(d.payload, "DATAGRAM", 8) == 0,
	      "round trip: addresses, partition, name and datagram");
	CHECK(buf[0] == 'S' && buf[1] == 'L' && buf[2] == 'R' && buf[3] == 'P' && buf[6] == 2 &&
	      buf[7] == 1, "magic \"SLRP\" and the partition in network order");
	for (i = 0; i < (uint32_t)len; i++)
		bad += sl_rlink_decode(buf, i, &d) != -EBADMSG;
	CHECK(bad == 0, "every truncation inside the envelope is -EBADMSG");
	CHECK(sl_rlink_decode(buf, (uint32_t)len, &d) == 0 && d.payload_len == 0,
	      "an empty datagram is still an envelope");
	buf[4] = 2;
	CHECK(sl_rlink_decode(buf, n, &d) == -EPROTONOSUPPORT, "another version is refused");
	buf[4] = SL_RLINK_VERSION;
	buf[5] = 0;
	CHECK(sl_rlink_decode(buf, n, &d) == -EBADMSG, "an empty name is refused");
	buf[5] = 65;
	CHECK(sl_rlink_decode(buf, sizeof(buf), &d) == -EBADMSG, "a 65-byte name is refused");
	buf[0] = 'X';
	CHECK(sl_rlink_decode(buf, n, &d) == -EBADMSG, "bad magic");
	CHECK(sl_rlink_encode(buf, 10, &e) == -ENOSPC, "encode into a short buffer: -ENOSPC");
	e.name_len = 0;
	CHECK(sl_rlink_encode(buf, sizeof(buf), &e) == -EINVAL, "encode without a name: -EINVAL");
	return check_report();
}
