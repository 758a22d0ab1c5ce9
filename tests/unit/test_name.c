/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * Unit test of the one rule for topic and channel names (dataplane/base/name.c), which every
 * entry uses: the wire decoders, the control socket, the cluster file, --topic and the
 * recovery of a data directory. A topic name is a directory name under --data-dir: '.',
 * '..', '/', NUL and hidden names must never pass. Also the error code a refused topic
 * creation answers with (SL_E_CAPACITY) and its text.
 */
#include <string.h>

#include "err.h"
#include "name.h"
#include "check.h"

int
main(void)
{
	static const char *const good[] = {
		"a", "A", "0", "orders", "Orders.v2", "a.", "a..b", "a-b_c", "x#ephemeral",
		"_x", "-x", "#", "a.b.c", "0123456789", "ABCXYZabcxyz0189._-#",
	};
	static const char *const bad[] = {
		".", "..", ".x", "...", ".hidden", "./a", "../a", "a/b", "/", "/etc", "a/..",
		"..#", ".#ephemeral", " ", "a b", "a\tb", "a\nb", "caf\xc3\xa9", "a:b", "a*",
		"a,b", "a\\b", "~", "a%2fb", "\x7f", "\x01",
	};
	char n64[SL_NAME_MAX + 1], n65[SL_NAME_MAX + 2];
	size_t i;

	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		CHECK(sl_name_check(good[i], strlen(good[i])) == 0, "'%s' accepted", good[i]);
		CHECK(sl_name_check_str(good[i]) == 0, "'%s' accepted (string)", good[i]);
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		CHECK(sl_name_check(bad[i], strlen(bad[i])) == -SL_E_NAME, "bad name #%zu refused",
		      i);
		CHECK(sl_name_check_str(bad[i]) == -SL_E_NAME, "bad name #%zu refused (string)",
		      i);
	}
	/* NUL: anywhere in the counted bytes, even first or last */
	CHECK(sl_name_check("a\0b", 3) == -SL_E_NAME, "embedded NUL refused");
	CHECK(sl_name_check("\0", 1) == -SL_E_NAME, "a lone NUL refused");
	CHECK(sl_name_check("ab\0", 3) == -SL_E_NAME, "trailing NUL refused");
	CHECK(sl_name_check("..", 1) == -SL_E_NAME, "'.' (first byte of '..') refused");
	CHECK(sl_name_check("ab/", 2) == 0, "only len bytes are looked at");
	/* lengths */
	memset(n64, 'x', SL_NAME_MAX);
	n64[SL_NAME_MAX] = '\0';
	memset(n65, 'y', SL_NAME_MAX + 1);
	n65[SL_NAME_MAX + 1] = '\0';
	CHECK(sl_name_check(n64, SL_NAME_MAX) == 0, "64 bytes accepted");
	CHECK(sl_name_check_str(n64) == 0, "64 bytes accepted (string)");
	CHECK(sl_name_check(n65, SL_NAME_MAX + 1) == -SL_E_NAME, "65 bytes refused");
	CHECK(sl_name_check_str(n65) == -SL_E_NAME, "65 bytes refused (string)");
	n64[0] = '.';
	CHECK(sl_name_check_str(n64) == -SL_E_NAME, "64 bytes starting with '.' refused");
	CHECK(sl_name_check("", 0) == -SL_E_NAME, "empty refused");
	CHECK(sl_name_check_str("") == -SL_E_NAME, "empty refused (string)");
	CHECK(sl_name_check(NULL, 3) == -SL_E_NAME, "NULL refused");
	CHECK(sl_name_check_str(NULL) == -SL_E_NAME, "NULL refused (string)");
	/* every byte value: exactly the documented set passes as a one-byte name, and '.'
	 * passes only after the first byte */
	for (i = 0; i < 256; i++) {
		char c = (char)i, two[2] = {'a', (char)i};
		int want = (i >= 'a' && i <= 'z') || (i >= 'A' && i <= 'Z') ||
			   (i >= '0' && i <= '9') || i == '_' || i == '-' || i == '#';

		QCHECK((sl_name_check(&c, 1) == 0) == want, "byte 0x%02zx alone", i);
		QCHECK((sl_name_check(two, 2) == 0) == (want || i == '.'), "byte 0x%02zx second",
		       i);
	}
	/* the answer to a refused topic creation */
	CHECK(SL_E_CAPACITY == 1024 && SL_E_CAPACITY < SL_E_MAX, "SL_E_CAPACITY is 1024");
	CHECK(strstr(sl_strerror(-SL_E_CAPACITY), "no room") != NULL, "SL_E_CAPACITY text: %s",
	      sl_strerror(-SL_E_CAPACITY));
	CHECK(strcmp(sl_strerror(SL_E_NAME), "invalid name") == 0, "SL_E_NAME text");
	return check_report();
}
