/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * A tiny streaming JSON writer into a caller-provided buffer. No allocation, no syscalls.
 *
 * Usage:
 *	char buf[512];
 *	struct sl_json j;
 *	sl_json_init(&j, buf, sizeof(buf));
 *	sl_json_obj_open(&j, NULL);
 *	sl_json_str(&j, "name", "orders");
 *	sl_json_arr_open(&j, "offsets");
 *	sl_json_u64(&j, NULL, 42);
 *	sl_json_arr_close(&j);
 *	sl_json_obj_close(&j);
 *	if (sl_json_finish(&j) < 0) ... truncated ...
 *
 * `key` is the member name inside an object; pass NULL for array elements and for the top-level
 * value. Commas are inserted automatically. The output is always NUL-terminated (when cap > 0):
 * when the buffer is too small the writer keeps the prefix that fits, sets `overflow`, ignores
 * every later call, and sl_json_finish() reports -ENOSPC. Nesting deeper than SL_JSON_DEPTH_MAX
 * is reported the same way.
 *
 * Strings are copied byte for byte except '"', '\\' and control characters (< 0x20), which are
 * escaped as \", \\ and \u00XX. Non-ASCII bytes are passed through (callers supply UTF-8).
 * Doubles that are NaN or infinite are written as null (JSON has no representation for them).
 *
 * Calling context of every function: any thread; a struct sl_json must not be shared between
 * threads without external locking.
 */
#ifndef SL_JSON_H
#define SL_JSON_H

#include <stddef.h>
#include <stdint.h>

#define SL_JSON_DEPTH_MAX 32	/* nesting levels (objects + arrays), top level included */
#define SL_JSON_ERR_MAX 256	/* size of the error text slot used by sl_ctl_set_error() */

struct sl_json {
	char *buf;
	size_t cap;			/* size of buf, NUL included */
	size_t len;			/* bytes written, NUL excluded; always < cap */
	int depth;			/* current nesting level, 0 = top level */
	uint8_t need_comma[SL_JSON_DEPTH_MAX]; /* per level: an element was written */
	int overflow;			/* buffer too small / nesting too deep: truncated */
	char err[SL_JSON_ERR_MAX];	/* error text for control replies (ctl.h), "" = none */
};

/** Start writing into buf[0..cap). Clears err. Calling context: any thread. */
void
sl_json_init(struct sl_json *j, char *buf, size_t cap);

/** Open an object ("key": { ...). key NULL in arrays / at top level. Context: any thread. */
void
sl_json_obj_open(struct sl_json *j, const char *key);

/** Close the innermost object. Calling context: any thread. */
void
sl_json_obj_close(struct sl_json *j);

/** Open an array ("key": [ ...). key NULL in arrays / at top level. Context: any thread. */
void
sl_json_arr_open(struct sl_json *j, const char *key);

/** Close the innermost array. Calling context: any thread. */
void
sl_json_arr_close(struct sl_json *j);

/** Write a NUL-terminated string value; v NULL writes null. Calling context: any thread. */
void
sl_json_str(struct sl_json *j, const char *key, const char *v);

/** Write a string value of exactly len bytes (may contain NULs). Context: any thread. */
void
sl_json_strn(struct sl_json *j, const char *key, const char *v, size_t len);

/** Write an unsigned integer. Calling context: any thread. */
void
sl_json_u64(struct sl_json *j, const char *key, uint64_t v);

/** Write a signed integer. Calling context: any thread. */
void
sl_json_i64(struct sl_json *j, const char *key, int64_t v);

/** Write a number (shortest round-trip form; NaN/inf as null). Context: any thread. */
void
sl_json_double(struct sl_json *j, const char *key, double v);

/** Write true (v != 0) or false. Calling context: any thread. */
void
sl_json_bool(struct sl_json *j, const char *key, int v);

/** Write null. Calling context: any thread. */
void
sl_json_null(struct sl_json *j, const char *key);

/**
 * End the document: NUL-terminates buf (always, when cap > 0).
 * Returns 0, or -ENOSPC when the output was truncated (buffer too small, cap == 0, or nesting
 * deeper than SL_JSON_DEPTH_MAX). Does not check that every container was closed.
 * Calling context: any thread.
 */
int
sl_json_finish(struct sl_json *j);

#endif /* SL_JSON_H */
