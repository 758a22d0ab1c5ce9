/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * A thin streaming front end to jansson for the control socket's replies: handlers write
 * members one call at a time (as they walk the broker), the document is a jansson tree
 * (objects keep their insertion order), and sl_json_finish() has jansson encode it, compact,
 * into a caller-provided buffer.
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
 *	if (sl_json_finish(&j) < 0) ... did not fit ...
 *
 * `key` is the member name inside an object; pass NULL for array elements and for the top-level
 * value. A key inside an array, no key inside an object, a second top-level value, an
 * unbalanced close, nesting deeper than SL_JSON_DEPTH_MAX or an allocation failure sets
 * `overflow`: every later call is ignored and sl_json_finish() reports -ENOSPC. A key written
 * twice in one object keeps its first position and its last value.
 *
 * Encoding (jansson's): strings are UTF-8; '"', '\\' and control characters are escaped
 * (\", \\, \b \f \n \r \t, other controls as \u00XX). A string that is not valid UTF-8 has
 * its bytes >= 0x80 replaced by '?'. Integers above INT64_MAX (jansson's integers are signed
 * 64-bit) are written as numbers with a fraction or exponent (doubles, 17 significant digits);
 * NaN and infinities as null.
 *
 * Calling context of every function: any thread; a struct sl_json must not be shared between
 * threads without external locking. Memory: the tree is freed by sl_json_finish() or
 * sl_json_free().
 */
#ifndef SL_JSON_H
#define SL_JSON_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#define SL_JSON_DEPTH_MAX 32	/* nesting levels (objects + arrays), top level included */
#define SL_JSON_ERR_MAX 256	/* size of the error text slot used by sl_ctl_set_error() */

struct sl_json {
	char *buf;			/* where sl_json_finish() writes */
	size_t cap;			/* size of buf, NUL included */
	size_t len;			/* bytes written by sl_json_finish(), NUL excluded */
	json_t *root;			/* the document (NULL: nothing written yet) */
	json_t *open[SL_JSON_DEPTH_MAX]; /* the open containers, innermost last */
	int depth;			/* containers open, 0 = top level */
	int overflow;			/* misuse or no memory: the document is void */
	char err[SL_JSON_ERR_MAX];	/* error text for control replies (ctl.h), "" = none */
};

/** Start a document written into buf[0..cap) by sl_json_finish(). Clears err. Any thread. */
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

/** Write a number (NaN/inf as null). Context: any thread. */
void
sl_json_double(struct sl_json *j, const char *key, double v);

/** Write true (v != 0) or false. Calling context: any thread. */
void
sl_json_bool(struct sl_json *j, const char *key, int v);

/** Write null. Calling context: any thread. */
void
sl_json_null(struct sl_json *j, const char *key);

/**
 * End the document: encode it (compact, members in insertion order) into buf, NUL-terminated
 * (always, when cap > 0), set len, free the tree.
 * Returns 0, or -ENOSPC when it does not fit in cap - 1 bytes (buf is then ""), when
 * `overflow` is set, or when nothing was written. Does not check that every container was
 * closed. Calling context: any thread.
 */
int
sl_json_finish(struct sl_json *j);

/** Drop the document without encoding it (sl_json_init may follow). Any thread. */
void
sl_json_free(struct sl_json *j);

#endif /* SL_JSON_H */
