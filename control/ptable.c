/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * ptable: the topic and partition tables of the controller and the etcd membership
 * (ptable.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ptable.h"

static uint16_t
row_part(const struct sl_ptable *t, const char *row)
{
	uint16_t part;

	if (t->part_off == SL_PTABLE_NO_PART)
		return 0;
	memcpy(&part, row + t->part_off, sizeof(part));
	return part;
}

void *
sl_ptable_find(const struct sl_ptable *t, const char *name, uint16_t part)
{
	size_t i;

	if (t->part_off == SL_PTABLE_NO_PART)
		part = 0;
	for (i = 0; i < t->n; i++) {
		char *row = sl_ptable_at(t, i);

		if (row_part(t, row) == part && strcmp(row, name) == 0)
			return row;
	}
	return NULL;
}

void *
sl_ptable_add(struct sl_ptable *t, const char *name, uint16_t part)
{
	char *row = sl_ptable_find(t, name, part);

	if (row != NULL)
		return row;
	if (strlen(name) > SL_COORD_NAME_MAX)
		return NULL;
	if (t->n == t->cap) {
		size_t cap = t->cap != 0 ? t->cap * 2 : 16;
		void *rows = realloc(t->rows, cap * t->size);

		if (rows == NULL)
			return NULL;
		t->rows = rows;
		t->cap = cap;
	}
	row = sl_ptable_at(t, t->n++);
	memset(row, 0, t->size);
	memcpy(row, name, strlen(name) + 1);
	if (t->part_off != SL_PTABLE_NO_PART)
		memcpy(row + t->part_off, &part, sizeof(part));
	return row;
}

void
sl_ptable_del(struct sl_ptable *t, void *row)
{
	void *last = sl_ptable_at(t, t->n - 1);

	if (row != last)
		memcpy(row, last, t->size);
	t->n--;
}

int
sl_ptable_remove(struct sl_ptable *t, const char *name, uint16_t part)
{
	void *row = sl_ptable_find(t, name, part);

	if (row == NULL)
		return 0;
	sl_ptable_del(t, row);
	return 1;
}

void
sl_ptable_free(struct sl_ptable *t)
{
	free(t->rows);
	t->rows = NULL;
	t->n = 0;
	t->cap = 0;
}

int
sl_ptable_key_parse(const char *rest, char *topic, uint16_t *part)
{
	const char *slash = strrchr(rest, '/');
	unsigned long v;
	char *end;

	if (slash == NULL || slash == rest || (size_t)(slash - rest) > SL_COORD_NAME_MAX ||
	    slash[1] < '0' || slash[1] > '9')
		return -EINVAL;
	v = strtoul(slash + 1, &end, 10);
	if (*end != '\0' || v >= SL_COORD_MAX_PARTS)
		return -EINVAL;
	memcpy(topic, rest, (size_t)(slash - rest));
	topic[slash - rest] = '\0';
	*part = (uint16_t)v;
	return 0;
}
