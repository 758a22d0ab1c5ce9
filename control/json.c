/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * Streaming JSON writer, see json.h.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"

/* Append n bytes, keeping the prefix that fits and flagging overflow. */
static void
put(struct sl_json *j, const char *s, size_t n)
{
	size_t avail;

	if (j->overflow)
		return;
	if (j->cap == 0) {
		j->overflow = 1;
		return;
	}
	avail = j->cap - 1 - j->len;
	if (n > avail) {
		n = avail;
		j->overflow = 1;
	}
	memcpy(j->buf + j->len, s, n);
	j->len += n;
	j->buf[j->len] = '\0';
}

static void
put_quoted(struct sl_json *j, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	size_t run = 0, i;
	char esc[6];

	put(j, "\"", 1);
	for (i = 0; i < n && !j->overflow; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c >= 0x20 && c != '"' && c != '\\')
			continue;
		put(j, s + run, i - run);
		run = i + 1;
		if (c == '"' || c == '\\') {
			esc[0] = '\\';
			esc[1] = (char)c;
			put(j, esc, 2);
		} else {
			memcpy(esc, "\\u00", 4);
			esc[4] = hex[c >> 4];
			esc[5] = hex[c & 0xf];
			put(j, esc, 6);
		}
	}
	if (!j->overflow)
		put(j, s + run, n - run);
	put(j, "\"", 1);
}

/* Comma and key before a value. Returns 0 when nothing more may be written. */
static int
begin(struct sl_json *j, const char *key)
{
	if (j->overflow)
		return 0;
	if (j->need_comma[j->depth])
		put(j, ",", 1);
	j->need_comma[j->depth] = 1;
	if (key != NULL) {
		put_quoted(j, key, strlen(key));
		put(j, ":", 1);
	}
	return !j->overflow;
}

static void
open_container(struct sl_json *j, const char *key, char c)
{
	if (!begin(j, key))
		return;
	if (j->depth + 1 >= SL_JSON_DEPTH_MAX) {
		j->overflow = 1;
		return;
	}
	put(j, &c, 1);
	j->depth++;
	j->need_comma[j->depth] = 0;
}

static void
close_container(struct sl_json *j, char c)
{
	if (j->overflow)
		return;
	if (j->depth == 0) {	/* unbalanced close: a caller bug, make finish() fail */
		j->overflow = 1;
		return;
	}
	put(j, &c, 1);
	j->depth--;
}

void
sl_json_init(struct sl_json *j, char *buf, size_t cap)
{
	j->buf = buf;
	j->cap = cap;
	j->len = 0;
	j->depth = 0;
	memset(j->need_comma, 0, sizeof(j->need_comma));
	j->overflow = 0;
	j->err[0] = '\0';
	if (cap > 0)
		buf[0] = '\0';
}

void
sl_json_obj_open(struct sl_json *j, const char *key)
{
	open_container(j, key, '{');
}

void
sl_json_obj_close(struct sl_json *j)
{
	close_container(j, '}');
}

void
sl_json_arr_open(struct sl_json *j, const char *key)
{
	open_container(j, key, '[');
}

void
sl_json_arr_close(struct sl_json *j)
{
	close_container(j, ']');
}

void
sl_json_strn(struct sl_json *j, const char *key, const char *v, size_t len)
{
	if (begin(j, key))
		put_quoted(j, v, len);
}

void
sl_json_str(struct sl_json *j, const char *key, const char *v)
{
	if (v == NULL)
		sl_json_null(j, key);
	else
		sl_json_strn(j, key, v, strlen(v));
}

void
sl_json_u64(struct sl_json *j, const char *key, uint64_t v)
{
	char tmp[24];
	int n;

	if (!begin(j, key))
		return;
	n = snprintf(tmp, sizeof(tmp), "%" PRIu64, v);
	put(j, tmp, (size_t)n);
}

void
sl_json_i64(struct sl_json *j, const char *key, int64_t v)
{
	char tmp[24];
	int n;

	if (!begin(j, key))
		return;
	n = snprintf(tmp, sizeof(tmp), "%" PRId64, v);
	put(j, tmp, (size_t)n);
}

void
sl_json_double(struct sl_json *j, const char *key, double v)
{
	char tmp[40];
	int n;

	if (!isfinite(v)) {
		sl_json_null(j, key);
		return;
	}
	if (!begin(j, key))
		return;
	/* shortest of the two forms that reads back exactly */
	n = snprintf(tmp, sizeof(tmp), "%.15g", v);
	if (strtod(tmp, NULL) != v)
		n = snprintf(tmp, sizeof(tmp), "%.17g", v);
	put(j, tmp, (size_t)n);
}

void
sl_json_bool(struct sl_json *j, const char *key, int v)
{
	if (!begin(j, key))
		return;
	if (v)
		put(j, "true", 4);
	else
		put(j, "false", 5);
}

void
sl_json_null(struct sl_json *j, const char *key)
{
	if (begin(j, key))
		put(j, "null", 4);
}

int
sl_json_finish(struct sl_json *j)
{
	if (j->cap > 0)
		j->buf[j->len] = '\0';
	else
		j->overflow = 1;
	return j->overflow ? -ENOSPC : 0;
}
