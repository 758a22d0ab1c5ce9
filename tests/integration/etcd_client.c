/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * etcd_client: control/etcd.c against a real etcd (started by etcd_client.sh).
 *
 *   etcd_client LIVE_URL DEAD_URL
 *
 * LIVE_URL is the etcd's client URL; nothing listens at DEAD_URL. Every wait is for an
 * event (a watch event, a lease answer) with a deadline, never a fixed sleep, except the
 * keep-alive check, which must let more than a TTL pass.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "etcd.h"

static const char *live, *dead;

static uint64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* The next event of w within timeout_ms: 1 (*ev set), 0 (none came) or a negative errno. */
static int
next_event(struct sl_etcd_watch *w, struct sl_etcd_event *ev, uint64_t timeout_ms)
{
	uint64_t end = now_ms() + timeout_ms, now;
	int rc;

	while ((rc = sl_etcd_watch_poll(w, ev)) == 0 && (now = now_ms()) < end)
		sl_etcd_watch_wait(w, (int)(end - now));
	return rc;
}

static struct sl_etcd *
open_ep(const char *eps, size_t max_response)
{
	struct sl_etcd_conf c = {
		.endpoints = eps,
		.max_response = max_response,
	};

	return sl_etcd_open(&c);
}

static void
test_conf(void)
{
	static const char *const bad[] = {
		"", "ftp://127.0.0.1:2379", "http://", "127.0.0.1:2379", "http://a b",
		"http://h:1,http://h:2,http://h:3,http://h:4,http://h:5,http://h:6,http://h:7,"
		"http://h:8,http://h:9",
	};
	struct sl_etcd *e;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		errno = 0;
		e = open_ep(bad[i], 0);
		CHECK(e == NULL && errno == EINVAL, "endpoints '%.40s' refused (EINVAL)", bad[i]);
		sl_etcd_close(e);
	}
	e = open_ep("http://127.0.0.1:1,https://etcd.example:2379/", 0);
	CHECK(e != NULL, "two endpoints accepted (no connection at open)");
	sl_etcd_close(e);
}

static void
test_kv(struct sl_etcd *e)
{
	struct sl_etcd_kvs r;
	int64_t rev = 0, rev2 = 0, n = -1;
	int rc;

	sl_etcd_delete(e, "/t/", 1, NULL);
	rc = sl_etcd_put(e, "/t/a", "one", 3, 0, &rev);
	CHECK(rc == 0 && rev > 0, "put /t/a (rc %d, revision %lld)", rc, (long long)rev);
	rc = sl_etcd_range(e, "/t/a", 0, 0, &r);
	CHECK(rc == 0 && r.n == 1 && strcmp(r.kv[0].key, "/t/a") == 0 &&
	      r.kv[0].value_len == 3 && memcmp(r.kv[0].value, "one", 3) == 0 &&
	      r.kv[0].mod_revision == rev && r.kv[0].create_revision == rev &&
	      r.kv[0].version == 1 && r.revision >= rev, "range /t/a: value, revisions");
	sl_etcd_kvs_free(&r);
	sl_etcd_put(e, "/t/c", "\0binary\xff", 8, 0, NULL);
	sl_etcd_put(e, "/t/b", "", 0, 0, NULL);
	sl_etcd_put(e, "/tx", "outside", 7, 0, NULL);
	rc = sl_etcd_range(e, "/t/", 1, 0, &r);
	CHECK(rc == 0 && r.n == 3 && strcmp(r.kv[0].key, "/t/a") == 0 &&
	      strcmp(r.kv[1].key, "/t/b") == 0 && r.kv[1].value_len == 0 &&
	      strcmp(r.kv[2].key, "/t/c") == 0 && r.kv[2].value_len == 8 &&
	      memcmp(r.kv[2].value, "\0binary\xff", 8) == 0 && !r.more,
	      "prefix /t/: 3 keys in order, binary value intact, /tx left out");
	sl_etcd_kvs_free(&r);
	rc = sl_etcd_range(e, "/t/", 1, 2, &r);
	CHECK(rc == 0 && r.n == 2 && r.more, "prefix with limit 2: 2 keys and 'more'");
	sl_etcd_kvs_free(&r);
	rc = sl_etcd_range(e, "/nothing/here", 0, 0, &r);
	CHECK(rc == 0 && r.n == 0 && r.revision > 0, "missing key: no kv, a revision");
	sl_etcd_kvs_free(&r);
	rc = sl_etcd_put(e, "/t/a", "two", 3, 0, &rev2);
	rc = rc == 0 ? sl_etcd_range(e, "/t/a", 0, 0, &r) : rc;
	CHECK(rc == 0 && r.n == 1 && r.kv[0].version == 2 && r.kv[0].mod_revision == rev2 &&
	      r.kv[0].create_revision == rev, "second put: version 2, same create revision");
	sl_etcd_kvs_free(&r);
	rc = sl_etcd_delete(e, "/t/b", 0, &n);
	CHECK(rc == 0 && n == 1, "delete /t/b: 1 deleted");
	rc = sl_etcd_delete(e, "/t/", 1, &n);
	CHECK(rc == 0 && n == 2, "delete prefix /t/: 2 deleted");
	rc = sl_etcd_range(e, "/t/", 1, 0, &r);
	CHECK(rc == 0 && r.n == 0, "prefix /t/ empty after the delete");
	sl_etcd_kvs_free(&r);
	sl_etcd_delete(e, "/tx", 0, NULL);
}

static void
test_txn(struct sl_etcd *e)
{
	struct sl_etcd_cmp create0 = {
		.key = "/x/lock", .target = SL_ETCD_CMP_CREATE, .result = SL_ETCD_EQUAL, .num = 0,
	};
	struct sl_etcd_op put_a = {.kind = SL_ETCD_OP_PUT, .key = "/x/lock", .value = "A",
				   .value_len = 1};
	struct sl_etcd_op put_b = {.kind = SL_ETCD_OP_PUT, .key = "/x/lock", .value = "B",
				   .value_len = 1};
	struct sl_etcd_op get = {.kind = SL_ETCD_OP_GET, .key = "/x/lock"};
	struct sl_etcd_op two[2] = {
		{.kind = SL_ETCD_OP_PUT, .key = "/x/p1", .value = "1", .value_len = 1},
		{.kind = SL_ETCD_OP_DELETE, .key = "/x/lock"},
	};
	struct sl_etcd_cmp mod, val;
	struct sl_etcd_kvs got, r;
	int64_t rev = 0, rev2 = 0;
	int rc;

	sl_etcd_delete(e, "/x/", 1, NULL);
	rc = sl_etcd_txn(e, &create0, 1, &put_a, 1, &get, 1, &rev, &got);
	CHECK(rc == 1 && rev > 0 && got.n == 0, "create-if-absent: succeeded (rc %d)", rc);
	sl_etcd_kvs_free(&got);
	rc = sl_etcd_txn(e, &create0, 1, &put_b, 1, &get, 1, &rev2, &got);
	CHECK(rc == 0 && got.n == 1 && got.kv[0].value[0] == 'A' && got.kv[0].mod_revision == rev,
	      "create-if-absent again: failed, the failure branch read the holder 'A'");
	sl_etcd_kvs_free(&got);
	/* CAS on mod_revision */
	mod = (struct sl_etcd_cmp){.key = "/x/lock", .target = SL_ETCD_CMP_MOD,
				   .result = SL_ETCD_EQUAL, .num = rev};
	rc = sl_etcd_txn(e, &mod, 1, &put_b, 1, NULL, 0, &rev2, NULL);
	CHECK(rc == 1 && rev2 > rev, "CAS on mod_revision %lld: succeeded", (long long)rev);
	rc = sl_etcd_txn(e, &mod, 1, &put_a, 1, NULL, 0, NULL, NULL);
	CHECK(rc == 0, "CAS on the old mod_revision: failed");
	rc = sl_etcd_range(e, "/x/lock", 0, 0, &r);
	CHECK(rc == 0 && r.n == 1 && r.kv[0].value[0] == 'B' && r.kv[0].version == 2,
	      "value is the first CAS's 'B', version 2");
	sl_etcd_kvs_free(&r);
	/* version and value compares, several ops */
	val = (struct sl_etcd_cmp){.key = "/x/lock", .target = SL_ETCD_CMP_VALUE,
				   .result = SL_ETCD_EQUAL, .value = "A", .value_len = 1};
	rc = sl_etcd_txn(e, &val, 1, two, 2, NULL, 0, NULL, NULL);
	CHECK(rc == 0, "value == 'A': failed (it is 'B')");
	val.value = "B";
	mod = (struct sl_etcd_cmp){.key = "/x/lock", .target = SL_ETCD_CMP_VERSION,
				   .result = SL_ETCD_GREATER, .num = 1};
	{
		struct sl_etcd_cmp both[2] = {val, mod};

		rc = sl_etcd_txn(e, both, 2, two, 2, NULL, 0, NULL, NULL);
	}
	CHECK(rc == 1, "value == 'B' and version > 1: succeeded");
	rc = sl_etcd_range(e, "/x/", 1, 0, &r);
	CHECK(rc == 0 && r.n == 1 && strcmp(r.kv[0].key, "/x/p1") == 0,
	      "both ops ran: /x/p1 put, /x/lock deleted");
	sl_etcd_kvs_free(&r);
	sl_etcd_delete(e, "/x/", 1, NULL);
}

static void
test_watch(struct sl_etcd *e)
{
	struct sl_etcd_op two[2] = {
		{.kind = SL_ETCD_OP_PUT, .key = "/w/3", .value = "c", .value_len = 1},
		{.kind = SL_ETCD_OP_PUT, .key = "/w/4", .value = "d", .value_len = 1},
	};
	struct sl_etcd_watch *w;
	struct sl_etcd_event ev;
	int64_t rev = 0, r1 = 0;
	int rc, i, ok;

	sl_etcd_delete(e, "/w/", 1, NULL);
	sl_etcd_put(e, "/w-outside", "x", 1, 0, &rev);
	w = sl_etcd_watch_open(e, "/w/", 1, rev + 1);
	CHECK(w != NULL, "watch /w/ from revision %lld", (long long)rev + 1);
	if (w == NULL)
		return;
	sl_etcd_put(e, "/w/1", "a", 1, 0, &r1);
	sl_etcd_put(e, "/w/2", "b", 1, 0, NULL);
	sl_etcd_put(e, "/w-outside", "y", 1, 0, NULL);
	sl_etcd_delete(e, "/w/1", 0, NULL);
	sl_etcd_txn(e, NULL, 0, two, 2, NULL, 0, NULL, NULL);
	rc = next_event(w, &ev, 5000);
	CHECK(rc == 1 && ev.type == SL_ETCD_EV_PUT && strcmp(ev.kv.key, "/w/1") == 0 &&
	      ev.kv.value_len == 1 && ev.kv.value[0] == 'a' && ev.kv.mod_revision == r1,
	      "event 1: PUT /w/1 = a at its revision");
	sl_etcd_event_free(&ev);
	rc = next_event(w, &ev, 5000);
	CHECK(rc == 1 && ev.type == SL_ETCD_EV_PUT && strcmp(ev.kv.key, "/w/2") == 0,
	      "event 2: PUT /w/2");
	sl_etcd_event_free(&ev);
	rc = next_event(w, &ev, 5000);
	CHECK(rc == 1 && ev.type == SL_ETCD_EV_DELETE && strcmp(ev.kv.key, "/w/1") == 0 &&
	      ev.kv.value_len == 0, "event 3: DELETE /w/1 (the key outside the prefix unseen)");
	sl_etcd_event_free(&ev);
	for (i = 0, ok = 1; i < 2; i++) {
		rc = next_event(w, &ev, 5000);
		ok = ok && rc == 1 && ev.type == SL_ETCD_EV_PUT && ev.kv.key[3] == '3' + i;
		if (rc == 1)
			sl_etcd_event_free(&ev);
	}
	CHECK(ok, "events 4, 5: both puts of one txn, in order");
	CHECK(sl_etcd_watch_ready(w), "the watch was confirmed (created)");
	rc = sl_etcd_watch_poll(w, &ev);
	CHECK(rc == 0, "nothing more");
	sl_etcd_watch_close(w);
	sl_etcd_delete(e, "/w", 1, NULL);
}

static void
test_lease(struct sl_etcd *e)
{
	struct sl_etcd_watch *w;
	struct sl_etcd_event ev;
	struct sl_etcd_kvs r;
	int64_t id = 0, ttl = 0, rev = 0, ttl2 = 0;
	uint64_t t0, deadline;
	int rc, ok = 1, kept;

	rc = sl_etcd_lease_grant(e, 2, &id, &ttl);
	CHECK(rc == 0 && id != 0 && ttl >= 2, "lease granted (TTL %lld)", (long long)ttl);
	rc = sl_etcd_put(e, "/l/k", "v", 1, id, &rev);
	rc = rc == 0 ? sl_etcd_range(e, "/l/k", 0, 0, &r) : rc;
	CHECK(rc == 0 && r.n == 1 && r.kv[0].lease == id, "key put under the lease");
	sl_etcd_kvs_free(&r);
	w = sl_etcd_watch_open(e, "/l/k", 0, rev + 1);
	/* keep-alive: 2.5 TTLs with a renewal every TTL / 4; the key must stay */
	t0 = now_ms();
	deadline = t0 + (uint64_t)ttl * 2500;
	kept = 0;
	while (now_ms() < deadline && ok) {
		uint64_t next = now_ms() + (uint64_t)ttl * 250;

		ok = sl_etcd_lease_keepalive(e, id, &ttl2) == 0 && ttl2 >= 2;
		kept++;
		while (ok && now_ms() < next) {
			rc = sl_etcd_watch_poll(w, &ev);
			if (rc != 0) {
				ok = 0;
				if (rc == 1)
					sl_etcd_event_free(&ev);
				break;
			}
			sl_etcd_watch_wait(w, (int)(next - now_ms()) + 1);
		}
	}
	CHECK(ok, "%d keep-alives over %.1f s (> TTL): no event on the key", kept,
	      (double)(now_ms() - t0) / 1000);
	rc = sl_etcd_range(e, "/l/k", 0, 0, &r);
	CHECK(rc == 0 && r.n == 1, "the key is still there");
	sl_etcd_kvs_free(&r);
	/* expiry: stop renewing; the key's DELETE comes within a TTL (+ the server's slack) */
	t0 = now_ms();
	rc = next_event(w, &ev, (uint64_t)ttl * 1000 + 3000);
	CHECK(rc == 1 && ev.type == SL_ETCD_EV_DELETE && strcmp(ev.kv.key, "/l/k") == 0,
	      "lease expired: DELETE /l/k after %.1f s", (double)(now_ms() - t0) / 1000);
	if (rc == 1)
		sl_etcd_event_free(&ev);
	sl_etcd_watch_close(w);
	rc = sl_etcd_lease_keepalive(e, id, NULL);
	CHECK(rc == -ENOENT, "keep-alive of the expired lease: -ENOENT (%d)", rc);
	/* revoke: its keys go at once */
	rc = sl_etcd_lease_grant(e, 60, &id, NULL);
	rc = rc == 0 ? sl_etcd_put(e, "/l/r", "v", 1, id, NULL) : rc;
	rc = rc == 0 ? sl_etcd_lease_revoke(e, id) : rc;
	rc = rc == 0 ? sl_etcd_range(e, "/l/r", 0, 0, &r) : rc;
	CHECK(rc == 0 && r.n == 0, "revoked lease: its key is gone");
	sl_etcd_kvs_free(&r);
	rc = sl_etcd_lease_revoke(e, id);
	CHECK(rc == -ENOENT, "revoke again: -ENOENT (%d)", rc);
	rc = sl_etcd_put(e, "/l/r", "v", 1, id, NULL);
	CHECK(rc == -ENOENT, "put under a revoked lease: -ENOENT (%d)", rc);
}

static void
test_failover(void)
{
	char eps[600];
	struct sl_etcd *e, *e2;
	struct sl_etcd_watch *w;
	struct sl_etcd_event ev;
	struct sl_etcd_kvs r;
	int64_t rev = 0;
	int rc;

	snprintf(eps, sizeof(eps), "%s,%s", dead, live);
	e = open_ep(eps, 0);
	CHECK(e != NULL && strcmp(sl_etcd_endpoint(e), dead) == 0,
	      "first endpoint is the dead one");
	if (e == NULL)
		return;
	rc = sl_etcd_put(e, "/f/k", "v", 1, 0, &rev);
	CHECK(rc == 0 && strcmp(sl_etcd_endpoint(e), live) == 0,
	      "put through the second endpoint (rc %d, now %s)", rc, sl_etcd_endpoint(e));
	rc = sl_etcd_range(e, "/f/k", 0, 0, &r);
	CHECK(rc == 0 && r.n == 1, "range goes straight to the live one");
	sl_etcd_kvs_free(&r);
	/* a watch opened on a handle still pointing at the dead endpoint moves on */
	e2 = open_ep(eps, 0);
	w = e2 != NULL ? sl_etcd_watch_open(e2, "/f/", 1, rev) : NULL;
	rc = w != NULL ? next_event(w, &ev, 5000) : -1;
	CHECK(rc == 1 && strcmp(ev.kv.key, "/f/k") == 0 && ev.kv.mod_revision == rev,
	      "watch through a dead first endpoint sees the put");
	if (rc == 1)
		sl_etcd_event_free(&ev);
	sl_etcd_watch_close(w);
	sl_etcd_close(e2);
	sl_etcd_delete(e, "/f/", 1, NULL);
	sl_etcd_close(e);
	/* every endpoint dead */
	e = open_ep(dead, 0);
	rc = e != NULL ? sl_etcd_put(e, "/f/k", "v", 1, 0, NULL) : -1;
	CHECK(rc == -ENOTCONN, "only a dead endpoint: -ENOTCONN (%d)", rc);
	sl_etcd_close(e);
}

static void
test_bounds(void)
{
	static char big[4096];
	struct sl_etcd *e = open_ep(live, 1024);
	struct sl_etcd_kvs r;
	int rc;

	memset(big, 'z', sizeof(big));
	rc = e != NULL ? sl_etcd_put(e, "/b/big", big, sizeof(big), 0, NULL) : -1;
	CHECK(rc == 0, "a 4 KiB value put (the request is not bounded)");
	rc = sl_etcd_range(e, "/b/big", 0, 0, &r);
	CHECK(rc == -EMSGSIZE, "its range answer is over the 1 KiB bound: -EMSGSIZE (%d)", rc);
	sl_etcd_kvs_free(&r);
	rc = sl_etcd_lease_keepalive(e, 12345, NULL);
	CHECK(rc == -ENOENT, "keep-alive of an unknown lease: -ENOENT");
	sl_etcd_delete(e, "/b/", 1, NULL);
	sl_etcd_close(e);
}

int
main(int argc, char **argv)
{
	struct sl_etcd *e;

	if (argc != 3) {
		fprintf(stderr, "usage: %s LIVE_URL DEAD_URL\n", argv[0]);
		return 2;
	}
	live = argv[1];
	dead = argv[2];
	setvbuf(stdout, NULL, _IOLBF, 0);
	test_conf();
	e = open_ep(live, 0);
	CHECK(e != NULL, "open %s", live);
	if (e == NULL)
		return check_report();
	test_kv(e);
	test_txn(e);
	test_watch(e);
	test_failover();
	test_bounds();
	test_lease(e);
	sl_etcd_close(e);
	return check_report();
}
