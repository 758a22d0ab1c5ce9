/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * The control socket's JSON, built and encoded by jansson, see json.h.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"

/* Attach v (a new reference, may be NULL: no memory) under key in the innermost container. */
static void
add(struct sl_json *j, const char *key, json_t *v)
{
	json_t *top = j->depth > 0 ? j->open[j->depth - 1] : NULL;
	int rc;

	if (j->overflow || v == NULL) {
		j->overflow = 1;
		json_decref(v);
		return;
	}
	if (top == NULL) {
		if (key != NULL || j->root != NULL) {
			j->overflow = 1;
			json_decref(v);
			return;
		}
		j->root = v;
		return;
	}
	if (json_is_object(top))
		rc = key != NULL ? json_object_set_new(top, key, v) : (json_decref(v), -1);
	else
		rc = key == NULL ? json_array_append_new(top, v) : (json_decref(v), -1);
	if (rc != 0)
		j->overflow = 1;
}

static void
open_container(struct sl_json *j, const char *key, json_t *c)
{
	if (j->overflow || c == NULL || j->depth + 1 >= SL_JSON_DEPTH_MAX) {
		j->overflow = 1;
		json_decref(c);
		return;
	}
	json_incref(c);		/* one reference for the parent, one while it is open */
	add(j, key, c);
	if (j->overflow) {
		json_decref(c);
		return;
	}
	j->open[j->depth++] = c;
}

static void
close_container(struct sl_json *j, int object)
{
	json_t *c;

	if (j->overflow)
		return;
	if (j->depth == 0) {	/* unbalanced close: a caller bug, make finish() fail */
		j->overflow = 1;
		return;
	}
	c = j->open[j->depth - 1];
	if ((json_is_object(c) ? 1 : 0) != object) {
		j->overflow = 1;
		return;
	}
	j->depth--;
	json_decref(c);
}

void
sl_json_free(struct sl_json *j)
{
	while (j->depth > 0)
		json_decref(j->open[--j->depth]);
	json_decref(j->root);
	j->root = NULL;
}

void
sl_json_init(struct sl_json *j, char *buf, size_t cap)
{
	j->buf = buf;
	j->cap = cap;
	j->len = 0;
	j->root = NULL;
	j->depth = 0;
	j->overflow = 0;
	j->err[0] = '\0';
	if (cap > 0)
		buf[0] = '\0';
}

void
sl_json_obj_open(struct sl_json *j, const char *key)
{
	open_container(j, key, json_object());
}

void
sl_json_obj_close(struct sl_json *j)
{
	close_container(j, 1);
}

void
sl_json_arr_open(struct sl_json *j, const char *key)
{
	open_container(j, key, json_array());
}

void
sl_json_arr_close(struct sl_json *j)
{
	close_container(j, 0);
}

void
sl_json_strn(struct sl_json *j, const char *key, const char *v, size_t len)
{
	json_t *s;
	char *tmp;
	size_t i;

	if (j->overflow)
		return;
	s = json_stringn(v, len);
	if (s == NULL && (tmp = malloc(len + 1)) != NULL) {
		/* not UTF-8 (or cut inside a character): keep the ASCII, mark the rest */
		for (i = 0; i < len; i++)
			tmp[i] = (unsigned char)v[i] < 0x80 ? v[i] : '?';
		s = json_stringn(tmp, len);
		free(tmp);
	}
	add(j, key, s);
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
	if (v <= (uint64_t)INT64_MAX)
		add(j, key, json_integer((json_int_t)v));
	else
		add(j, key, json_real((double)v));
}

void
sl_json_i64(struct sl_json *j, const char *key, int64_t v)
{
	add(j, key, json_integer((json_int_t)v));
}

void
sl_json_double(struct sl_json *j, const char *key, double v)
{
	add(j, key, isfinite(v) ? json_real(v) : json_null());
}

void
sl_json_bool(struct sl_json *j, const char *key, int v)
{
	add(j, key, json_boolean(v));
}

void
sl_json_null(struct sl_json *j, const char *key)
{
	add(j, key, json_null());
}

int
sl_json_finish(struct sl_json *j)
{
	size_t n = 0;

	j->len = 0;
	if (j->cap == 0 || j->root == NULL)
		j->overflow = 1;
	if (!j->overflow)
		n = json_dumpb(j->root, j->buf, j->cap - 1,
			       JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENCODE_ANY);
	if (!j->overflow && (n == 0 || n > j->cap - 1))
		j->overflow = 1;
	if (!j->overflow)
		j->len = n;
	if (j->cap > 0)
		j->buf[j->len] = '\0';
	sl_json_free(j);
	return j->overflow ? -ENOSPC : 0;
}
