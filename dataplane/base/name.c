/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 */
#include <stdint.h>
#include <string.h>

#include "err.h"
#include "name.h"

static int
name_char_ok(uint8_t c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '.' || c == '_' || c == '-' || c == '#';
}

int
sl_name_check(const char *name, size_t len)
{
	size_t i;

	if (name == NULL || len == 0 || len > SL_NAME_MAX || name[0] == '.')
		return -SL_E_NAME;
	for (i = 0; i < len; i++)
		if (!name_char_ok((uint8_t)name[i]))
			return -SL_E_NAME;
	return 0;
}

int
sl_name_check_str(const char *name)
{
	/* one byte past the limit is enough to tell a name too long */
	return name == NULL ? -SL_E_NAME : sl_name_check(name, strnlen(name, SL_NAME_MAX + 1));
}
