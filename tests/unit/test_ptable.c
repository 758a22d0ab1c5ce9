/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * Unit test of control/ptable.c: the topic and partition tables of the controller and the
 * etcd membership (find, add, delete by moving the last row, remove by key, growth with
 * rows kept) and
 * the parse of a partition key's "<topic>/<part>".
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include <rte_common.h>

#include "ptable.h"

struct trow {
	char name[SL_COORD_NAME_MAX + 1];
	uint32_t val;
};

struct prow {
	char topic[SL_COORD_NAME_MAX + 1];
	uint64_t val;
	uint16_t part;
};

static void
test_parts(void)
{
	struct sl_ptable t = SL_PTABLE_INIT(struct prow, topic, part);
	char name[SL_COORD_NAME_MAX + 2];
	struct prow *p;
	uint16_t i;
	int ok = 1;

	CHECK(sl_ptable_find(&t, "a", 0) == NULL, "empty table: nothing found");
	for (i = 0; i < 1000; i++) {
		p = sl_ptable_add(&t, i % 2 ? "odd" : "even", i);
		if (p == NULL || p->val != 0 || p->part != i) {
			ok = 0;
			break;
		}
		p->val = 1000u + i;
	}
	CHECK(ok && t.n == 1000, "1000 partitions added (grown from empty), zeroed, keyed");
	for (i = 0; ok && i < 1000; i++) {
		p = sl_ptable_find(&t, i % 2 ? "odd" : "even", i);
		ok = p != NULL && p->val == 1000u + i;
	}
	CHECK(ok, "each found with its value after the growths");
	CHECK(sl_ptable_find(&t, "odd", 2) == NULL && sl_ptable_find(&t, "even", 1) == NULL,
	      "the key is topic and partition");
	p = sl_ptable_add(&t, "odd", 3);
	CHECK(p != NULL && p->val == 1003 && t.n == 1000, "adding a present key finds it");
	sl_ptable_del(&t, sl_ptable_find(&t, "even", 0));
	p = sl_ptable_find(&t, "odd", 999);
	CHECK(t.n == 999 && sl_ptable_find(&t, "even", 0) == NULL && p != NULL &&
	      p->val == 1999 && p == sl_ptable_at(&t, 0),
	      "a deleted row's place is taken by the last");
	sl_ptable_del(&t, sl_ptable_at(&t, t.n - 1));
	CHECK(t.n == 998 && sl_ptable_find(&t, "even", 998) == NULL, "the last row deleted");
	memset(name, 'n', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	CHECK(sl_ptable_add(&t, name, 0) == NULL && t.n == 998,
	      "a name longer than SL_COORD_NAME_MAX is refused, table unchanged");
	name[SL_COORD_NAME_MAX] = '\0';
	p = sl_ptable_add(&t, name, 0);
	CHECK(p != NULL && strcmp(p->topic, name) == 0, "a name of SL_COORD_NAME_MAX is kept");
	sl_ptable_free(&t);
	CHECK(t.n == 0 && t.rows == NULL && sl_ptable_find(&t, "odd", 1) == NULL,
	      "freed: empty");
	CHECK(sl_ptable_add(&t, "again", 1) != NULL && t.n == 1, "usable again after free");
	sl_ptable_free(&t);
}

static void
test_topics(void)
{
	struct sl_ptable t = SL_PTABLE_INIT_NAMES(struct trow, name);
	struct trow *a, *b;

	a = sl_ptable_add(&t, "orders", 7);
	b = sl_ptable_add(&t, "orders", 9);
	CHECK(a != NULL && a == b && t.n == 1 && sl_ptable_find(&t, "orders", 3) == a,
	      "a table of names ignores the partition");
	CHECK(sl_ptable_remove(&t, "other", 0) == 0 && t.n == 1, "removing a name not there: 0");
	CHECK(sl_ptable_remove(&t, "orders", 0) == 1 && t.n == 0 &&
	      sl_ptable_find(&t, "orders", 0) == NULL, "the only row removed by name");
	sl_ptable_free(&t);
}

static void
test_key_parse(void)
{
	static const char *const bad[] = {
		"", "/", "a", "a/", "/3", "a/x", "a/3x", "a/ 3", "a/+3", "a/-1", "a/1024",
		"a/99999999999999999999", "a/0x10",
	};
	char topic[SL_COORD_NAME_MAX + 1], key[SL_COORD_NAME_MAX + 8];
	uint16_t part = 0;
	size_t i;

	CHECK(sl_ptable_key_parse("orders/12", topic, &part) == 0 &&
	      strcmp(topic, "orders") == 0 && part == 12, "orders/12");
	CHECK(sl_ptable_key_parse("a/b/1023", topic, &part) == 0 && strcmp(topic, "a/b") == 0 &&
	      part == 1023, "the last slash ends the topic; 1023 is the last partition");
	CHECK(sl_ptable_key_parse("t/007", topic, &part) == 0 && part == 7, "leading zeros");
	for (i = 0; i < RTE_DIM(bad); i++) {
		part = 55;
		strcpy(topic, "kept");
		QCHECK(sl_ptable_key_parse(bad[i], topic, &part) == -EINVAL &&
		       strcmp(topic, "kept") == 0 && part == 55, "'%s' refused", bad[i]);
	}
	CHECK(1, "%zu malformed keys refused, nothing written", RTE_DIM(bad));
	memset(key, 'k', SL_COORD_NAME_MAX);
	strcpy(key + SL_COORD_NAME_MAX, "/1");
	CHECK(sl_ptable_key_parse(key, topic, &part) == 0 && part == 1 &&
	      strlen(topic) == SL_COORD_NAME_MAX, "a topic of SL_COORD_NAME_MAX bytes");
	memset(key, 'k', SL_COORD_NAME_MAX + 1);
	strcpy(key + SL_COORD_NAME_MAX + 1, "/1");
	CHECK(sl_ptable_key_parse(key, topic, &part) == -EINVAL, "a topic one byte longer");
}

int
main(void)
{
	test_parts();
	test_topics();
	test_key_parse();
	return check_report();
}
