/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * ptable: a growing table of rows keyed by a topic name and, optionally, a partition
 * number: the topics and partition views that the controller (controller.c) and the etcd
 * membership (membership_etcd.c) keep of what the store says. A row is any struct whose
 * first member is its name, char[SL_COORD_NAME_MAX + 1]; a table of partitions also names
 * the offset of the row's uint16_t partition number. Rows are contiguous (sl_ptable_at),
 * found by a linear search, and a removed row's place is taken by the last row: a pointer
 * or index into the table holds until the next add or delete.
 *
 * Usage:
 *	struct sl_ptable parts = SL_PTABLE_INIT(struct cpart, topic, part);
 *	struct cpart *p = sl_ptable_add(&parts, "orders", 3);	(found, or a new zeroed row)
 *	p = sl_ptable_find(&parts, "orders", 3);
 *	sl_ptable_del(&parts, p);
 *	sl_ptable_free(&parts);
 *
 * Calling context of every function: any thread; a table must not be shared between
 * threads without external locking (both users keep theirs on the control thread).
 */
#ifndef SL_PTABLE_H
#define SL_PTABLE_H

#include <stddef.h>
#include <stdint.h>

#include "coord.h"

/* part_off of a table keyed by the name alone (topics). */
#define SL_PTABLE_NO_PART SIZE_MAX

struct sl_ptable {
	void *rows;			/* n rows of size bytes */
	size_t n, cap;
	size_t size;			/* of a row */
	size_t part_off;		/* of the row's uint16_t partition, or SL_PTABLE_NO_PART */
};

/* Compile-time check that `type`'s member `name` is its first, a char[SL_COORD_NAME_MAX + 1]:
 * 0, or an array of negative size.
 */
#define SL_PTABLE_NAME_FIRST(type, name) \
	(0 * sizeof(char[offsetof(type, name) == 0 && \
			 sizeof(((type *)0)->name) == SL_COORD_NAME_MAX + 1 ? 1 : -1]))

/* An empty table of rows of `type`, keyed by its member `name` (first, see above) and its
 * uint16_t member `part`.
 */
#define SL_PTABLE_INIT(type, name, part) \
	((struct sl_ptable){NULL, 0, 0, sizeof(type) + SL_PTABLE_NAME_FIRST(type, name), \
			    offsetof(type, part)})
/* An empty table of rows of `type`, keyed by its member `name` alone. */
#define SL_PTABLE_INIT_NAMES(type, name) \
	((struct sl_ptable){NULL, 0, 0, sizeof(type) + SL_PTABLE_NAME_FIRST(type, name), \
			    SL_PTABLE_NO_PART})

/* Row i (i < t->n). */
static inline void *
sl_ptable_at(const struct sl_ptable *t, size_t i)
{
	return (char *)t->rows + i * t->size;
}

/* The row of (name, part), or NULL; part is ignored in a table keyed by names. */
void *sl_ptable_find(const struct sl_ptable *t, const char *name, uint16_t part);

/* The row of (name, part), added zeroed with its key set when not there; NULL when the
 * name is longer than SL_COORD_NAME_MAX or memory ran out (the table is unchanged).
 */
void *sl_ptable_add(struct sl_ptable *t, const char *name, uint16_t part);

/* Remove a row of the table (from sl_ptable_find/add/at): the last row takes its place. */
void sl_ptable_del(struct sl_ptable *t, void *row);

/* Remove the row of (name, part) if there is one: 1 when removed, else 0. */
int sl_ptable_remove(struct sl_ptable *t, const char *name, uint16_t part);

/* Free the rows; the table is empty and can be used again. */
void sl_ptable_free(struct sl_ptable *t);

/* Parse a partition key's tail "<topic>/<part>" (what follows "partitions/"): 0 with the
 * topic (a non-empty name of at most SL_COORD_NAME_MAX bytes, NUL-terminated in
 * topic[SL_COORD_NAME_MAX + 1]) and the part (decimal, < SL_COORD_MAX_PARTS), or -EINVAL.
 */
int sl_ptable_key_parse(const char *rest, char *topic, uint16_t *part);

#endif /* SL_PTABLE_H */
