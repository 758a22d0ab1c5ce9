/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * Unit test of the persistence module (storage/persist.c): the sync-due rule, the sync
 * policy strings, open errors, the channel-position slots (sequence lock), and the
 * persistence lcore end to end in a temporary directory, the test playing the worker:
 * append to an in-memory log and submit descriptors (PUB and MPUB, with their write
 * epochs), wait for written_id / durable_id, look messages up and fetch them through the
 * reader thread, truncate, a sticky error and its resume (only once the worker has
 * acknowledged it), an every:N policy, detach, stop; then reopen the store and check what
 * recovery finds: the messages, the epochs and the saved channel positions.
 * EAL with --no-huge (one extra lcore for the persistence loop).
 */
#include <errno.h>
#include <ftw.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_lcore.h>

#include "err.h"
#include "persist.h"
#include "check.h"
#include "fixture.h"

static char tmpdir[] = "/tmp/sl-test-persist-XXXXXX";

/* Wait up to ms for *v to reach want (acquire loads). */
static int
wait_u64(const uint64_t *v, uint64_t want, uint32_t ms)
{
	uint32_t i;

	for (i = 0; i < ms; i++) {
		if (__atomic_load_n(v, __ATOMIC_ACQUIRE) == want)
			return 1;
		usleep(1000);
	}
	return __atomic_load_n(v, __ATOMIC_ACQUIRE) == want;
}

/* sl_persist_set_notify's callback: counts the calls (the persistence lcore) */
static void
count_notify(void *arg)
{
	__atomic_fetch_add((uint64_t *)arg, 1, __ATOMIC_RELEASE);
}

static void
test_sync_due(void)
{
	struct sl_persist_policy always = {.sync = SL_PERSIST_SYNC_ALWAYS};
	struct sl_persist_policy every = {.sync = SL_PERSIST_SYNC_EVERY, .every = 10};
	struct sl_persist_policy ms = {.sync = SL_PERSIST_SYNC_INTERVAL, .interval_ms = 5};

	CHECK(sl_persist_sync_due(&always, 0, 0) && sl_persist_sync_due(&always, 1, 0),
	      "always: a sync is always due");
	CHECK(!sl_persist_sync_due(&every, 9, 0) && sl_persist_sync_due(&every, 10, 0) &&
		      sl_persist_sync_due(&every, 11, 0),
	      "every:10: due at 10 messages, not at 9");
	CHECK(!sl_persist_sync_due(&every, 1, SL_PERSIST_MAX_UNSYNCED_NS - 1) &&
		      sl_persist_sync_due(&every, 1, SL_PERSIST_MAX_UNSYNCED_NS),
	      "every:10: due after a second with fewer messages");
	CHECK(!sl_persist_sync_due(&ms, 1000, 4999999) && sl_persist_sync_due(&ms, 0, 5000000),
	      "ms:5: due after 5 ms whatever the count, not before");
}

static void
test_parse_sync(void)
{
	static const char *const bad[] = {"", "never", "every:", "every:0", "every:x",
					  "every:5x", "ms:1000001", "ms:-1", "every 5"};
	struct sl_persist_policy pol;
	char buf[32];
	unsigned int i, refused = 0;

	memset(&pol, 0, sizeof(pol));
	CHECK(sl_persist_parse_sync("every:100", &pol) == 0 &&
		      pol.sync == SL_PERSIST_SYNC_EVERY && pol.every == 100 &&
		      strcmp(sl_persist_sync_str(&pol, buf, sizeof(buf)), "every:100") == 0,
	      "every:100 parsed and printed back");
	CHECK(sl_persist_parse_sync("ms:1000000", &pol) == 0 &&
		      pol.sync == SL_PERSIST_SYNC_INTERVAL && pol.interval_ms == 1000000 &&
		      strcmp(sl_persist_sync_str(&pol, buf, sizeof(buf)), "ms:1000000") == 0,
	      "ms:1000000 parsed and printed back");
	CHECK(sl_persist_parse_sync("always", &pol) == 0 && pol.sync == SL_PERSIST_SYNC_ALWAYS &&
		      strcmp(sl_persist_sync_str(&pol, buf, sizeof(buf)), "always") == 0,
	      "always parsed and printed back");
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		refused += sl_persist_parse_sync(bad[i], &pol) == -EINVAL;
	CHECK(refused == sizeof(bad) / sizeof(bad[0]) && pol.sync == SL_PERSIST_SYNC_ALWAYS,
	      "bad policies refused with -EINVAL, the policy untouched (%u)", refused);
}

static void
test_open_errors(void)
{
	struct sl_persist_policy pol = {0};
	struct sl_persist_conf pc = {.nsources = 0, .socket_id = SOCKET_ID_ANY};
	char path[256];
	FILE *f;

	rte_errno = 0;
	CHECK(sl_pstore_open(NULL, "t", 0, &pol, 0) == NULL && rte_errno == EINVAL &&
		      sl_pstore_open(tmpdir, NULL, 0, &pol, 0) == NULL &&
		      sl_pstore_open(tmpdir, "t", 0, NULL, 0) == NULL,
	      "pstore_open without a directory, topic or policy: EINVAL");
	snprintf(path, sizeof(path), "%s/file", tmpdir);
	f = fopen(path, "w");
	if (f != NULL)
		fclose(f);
	snprintf(path, sizeof(path), "%s/file/p0", tmpdir);
	rte_errno = 0;
	CHECK(sl_pstore_open(path, "t", 0, &pol, 0) == NULL && rte_errno == ENOTDIR,
	      "pstore_open under a regular file: the filesystem's error (%s)",
	      strerror(rte_errno));
	rte_errno = 0;
	CHECK(sl_persist_open(NULL) == NULL && rte_errno == EINVAL, "persist_open(NULL): EINVAL");
	CHECK(sl_persist_open(&pc) == NULL && rte_errno == EINVAL, "0 sources: EINVAL");
	pc.nsources = SL_PERSIST_MAX_SOURCES + 1;
	CHECK(sl_persist_open(&pc) == NULL && rte_errno == EINVAL, "17 sources: EINVAL");
}

static void
test_chan_slots(struct sl_pstore *ps)
{
	struct sl_pchan *c = &ps->chans[3];
	uint32_t seq;

	sl_pstore_chan_set(ps, 3, "orders", 1, 10);
	CHECK(c->seq == 2 && c->flags == (1u | (1u << 31)) && c->confirmed_id == 10 &&
		      strcmp(c->name, "orders") == 0,
	      "chan_set: slot in use, ordered, position 10, sequence even (%u)", c->seq);
	seq = c->seq;
	sl_pstore_chan_set(ps, 3, "orders", 1, 10);
	CHECK(c->seq == seq, "the same position again: no write (sequence unchanged)");
	sl_pstore_chan_set(ps, 3, "orders", 1, 11);
	CHECK(c->seq == seq + 2 && c->confirmed_id == 11, "a new position: one more write");
	sl_pstore_chan_clear(ps, 3);
	CHECK(c->seq == seq + 4 && c->flags == 0, "chan_clear: the slot is free");
	sl_pstore_chan_clear(ps, 3);
	CHECK(c->seq == seq + 4, "clearing a free slot: no write");
	sl_pstore_chan_set(ps, SL_PERSIST_MAX_CHANS, "x", 0, 1);
	sl_pstore_chan_clear(ps, SL_PERSIST_MAX_CHANS);
	CHECK(ps->chans[SL_PERSIST_MAX_CHANS - 1].seq == 0, "a slot past the table is ignored");
}

/* Append bodies to log as one PUB (n 1) or MPUB and hand them over with epoch. */
static uint64_t
mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t
submit(struct sl_persist *p, struct sl_pstore *ps, struct sl_memlog *log, uint32_t n,
       const char *const *bodies, uint64_t ts, uint64_t epoch)
{
	const void *datas[8];
	uint32_t lens[8], i;
	struct sl_memlog_rec r;

	for (i = 0; i < n; i++) {
		datas[i] = bodies[i];
		lens[i] = (uint32_t)strlen(bodies[i]);
	}
	if (sl_memlog_append_batch(log, n, datas, lens, ts, 0, &r) != 0 ||
	    sl_persist_submit(p, 0, ps, r.id, n, r.offset, epoch) != 0)
		return 0;
	return r.id;
}

static struct sl_memlog *
new_log(void **mem)
{
	struct sl_memlog_conf mc = {.mem_len = 1 << 20};

	*mem = aligned_alloc(64, mc.mem_len);
	mc.mem = *mem;
	return *mem != NULL ? sl_memlog_open(&mc) : NULL;
}

static void
test_lcore(void)
{
	struct sl_persist_policy pol = {.sync = SL_PERSIST_SYNC_ALWAYS};
	struct sl_persist_policy every = {.sync = SL_PERSIST_SYNC_EVERY, .every = 3};
	uint64_t t0;
	struct sl_persist_conf pc = {
		.lcore = rte_get_next_lcore(-1, 1, 0),
		.nsources = 1,
		.adaptive_idle = 1,
		.idle_max_us = 100,
		.socket_id = SOCKET_ID_ANY,
		.buf_bytes = 1 << 20,
	};
	static const char *const a[] = {"a1", "a2", "a3", "a4", "a5"}, *b[] = {"b6", "b7", "b8"};
	static const char *const c6[] = {"c6"}, *d7[] = {"d7"}, *e[] = {"e1", "e2", "e3", "e4"};
	static struct sl_disklog_msg msgs[16];
	struct sl_disklog_chan chans[4];
	struct sl_pstore *ps, *ps2;
	struct sl_memlog *log, *log2;
	struct sl_persist *p;
	const struct sl_persist_stats *st;
	char dir[256], dir2[256], got[8][8];
	void *mem, *mem2;
	uint64_t id = 0, off = 0, epochs[4], starts[4], first_avail, notified = 0;
	uint32_t i, n = 0;
	int rc, ok;

	snprintf(dir, sizeof(dir), "%s/t/0", tmpdir);
	snprintf(dir2, sizeof(dir2), "%s/t/1", tmpdir);
	ps = sl_pstore_open(dir, "t", 0, &pol, 0);
	ps2 = sl_pstore_open(dir2, "t", 1, &every, 0);
	log = new_log(&mem);
	log2 = new_log(&mem2);
	p = sl_persist_open(&pc);
	if (ps == NULL || ps2 == NULL || log == NULL || log2 == NULL || p == NULL) {
		CHECK(0, "stores, logs and the persistence module open (%s)",
		      rte_strerror(rte_errno));
		return;
	}
	CHECK(strcmp(ps->rec.what, "clean") == 0 && sl_pstore_written_id(ps) == 0 &&
		      sl_pstore_durable_id(ps) == 0 && sl_pstore_disk_first_id(ps) == 1 &&
		      sl_pstore_error(ps) == 0 && sl_pstore_gen(ps) == 0,
	      "a new store: clean, nothing written, first id 1, healthy, gen 0");
	test_chan_slots(ps);
	CHECK(sl_persist_attach(p, ps) == -EINVAL, "attach without an in-memory log: -EINVAL");
	ps->log = log;
	ps2->log = log2;
	sl_persist_set_notify(p, count_notify, &notified);
	rc = sl_persist_start(p);
	CHECK(rc == 0 && sl_persist_attach(p, ps) == 0 && sl_persist_attach(p, ps2) == 0,
	      "start the lcore and attach both stores (%d)", rc);
	st = sl_persist_get_stats(p);

	/* 5 PUBs of epoch 1, then an MPUB of 3 of epoch 2 */
	ok = 1;
	for (i = 0; i < 5; i++)
		ok &= submit(p, ps, log, 1, &a[i], 1000 * (i + 1), 1) == i + 1;
	ok &= submit(p, ps, log, 3, b, 6000, 2) == 6;
	CHECK(ok && wait_u64(&ps->durable_id, 8, 2000) && sl_pstore_written_id(ps) == 8,
	      "5 PUBs and an MPUB of 3: written and durable up to 8 (sync always)");
	CHECK(st->records == 6 && st->msgs == 8 && st->syncs >= 1 && st->writes >= 1,
	      "stats: 6 commit records, 8 messages, written and synced");
	/* the loop that synced calls the notification right after (the workers' bells) */
	for (i = 0; i < 2000 && __atomic_load_n(&notified, __ATOMIC_ACQUIRE) == 0; i++)
		usleep(1000);
	CHECK(__atomic_load_n(&notified, __ATOMIC_ACQUIRE) > 0,
	      "the notification ran after the write and the sync (%" PRIu64 " calls)",
	      __atomic_load_n(&notified, __ATOMIC_ACQUIRE));

	/* the reader thread: lookups and a fetch */
	sl_memlog_offset_of(log, 7, &off);
	rc = sl_persist_find(p, ps, SL_DISKLOG_BY_OFFSET, off, &id);
	CHECK(rc == 0 && id == 7, "find by offset: message 7 (%d, %" PRIu64 ")", rc, id);
	rc = sl_persist_find(p, ps, SL_DISKLOG_BY_TIME, 3500, &id);
	CHECK(rc == 0 && id == 4, "find by time 3500: message 4 (%" PRIu64 ")", id);
	rc = sl_persist_find(p, ps, SL_DISKLOG_BY_COUNT, 100, &id);
	CHECK(rc == 0 && id == 9, "find past the end: end + 1 (%" PRIu64 ")", id);
	rc = sl_persist_fetch(p, ps, 2, 7);
	for (i = 0; rc == 0 && i < 2000 &&
		    sl_pstore_job_state(&ps->fetch.state) != SL_PFETCH_READY; i++)
		usleep(1000);
	ok = rc == 0 && ps->fetch.rc == 0 && ps->fetch.n == 6;
	for (i = 0; ok && i < 6; i++)
		snprintf(got[i], sizeof(got[i]), "%.*s", (int)ps->fetch.msgs[i].len,
			 (const char *)ps->fetch.msgs[i].data);
	CHECK(ok && ps->fetch.msgs[0].id == 2 && strcmp(got[0], "a2") == 0 &&
		      ps->fetch.msgs[5].id == 7 && strcmp(got[5], "b7") == 0 &&
		      ps->fetch.msgs[2].timestamp_ns == 4000,
	      "fetch 2..7 through the reader: 6 messages with their bodies and timestamps");

	/* truncate to 5 (the end of a PUB): the MPUB leaves the disk */
	rc = sl_persist_truncate(p, 0, ps, 5);
	CHECK(rc == 0 && wait_u64(&ps->truncates, 1, 2000) && sl_pstore_written_id(ps) == 5 &&
		      sl_pstore_durable_id(ps) == 5 && sl_pstore_error(ps) == 0,
	      "truncate to 5: written and durable back to 5");
	sl_memlog_truncate(log, 6);
	CHECK(submit(p, ps, log, 1, c6, 7000, 3) == 6 && wait_u64(&ps->durable_id, 6, 2000),
	      "a new message 6 (epoch 3) after the truncation");

	/* a descriptor out of order: the store's error becomes sticky (logged) */
	printf("# an expected storage error follows\n");
	sl_memlog_append(log, "x", 1, 8000, 0, NULL);
	rc = sl_persist_submit(p, 0, ps, 10, 1, 0, 3);
	for (i = 0; i < 2000 && sl_pstore_error(ps) == 0; i++)
		usleep(1000);
	CHECK(rc == 0 && sl_pstore_error(ps) == -SL_E_INTERNAL && sl_pstore_written_id(ps) == 6,
	      "a descriptor for id 10 when 7 is next: sticky error (%d)", sl_pstore_error(ps));
	rc = sl_persist_submit(p, 0, ps, 7, 1, 0, 3);
	for (i = 0; i < 2000 && ps->dropped < 2; i++)
		usleep(1000);
	CHECK(rc == 0 && ps->dropped == 2 && sl_pstore_written_id(ps) == 6,
	      "while failed, descriptors are dropped (%" PRIu64 ")", ps->dropped);
	sl_persist_resume(ps);
	usleep(300 * 1000);
	CHECK(sl_pstore_error(ps) != 0 && sl_pstore_gen(ps) == 0,
	      "a resume waits for the worker to acknowledge the error");
	sl_memlog_truncate(log, 7);	/* the worker rolls back to durable_id */
	sl_pstore_error_ack(ps, sl_pstore_gen(ps));
	CHECK(wait_u64(&ps->resumes, 1, 2000) && sl_pstore_error(ps) == 0 &&
		      sl_pstore_gen(ps) == 1 &&
		      sl_pstore_written_id(ps) == 6 && sl_pstore_durable_id(ps) == 6,
	      "acknowledged: resumed at 6, generation 1");
	CHECK(submit(p, ps, log, 1, d7, 9000, 3) == 7 && wait_u64(&ps->durable_id, 7, 2000),
	      "writes go on after the resume (message 7)");

	/* every:3 on the second store: synced at 3 messages, or once the oldest unsynced one
	 * is a second old (on a slow or shared machine that second may pass first: then a
	 * sync is right, and only then) */
	t0 = mono_ns();
	ok = submit(p, ps2, log2, 1, &e[0], 1, 1) == 1 && submit(p, ps2, log2, 1, &e[1], 2, 1) == 2;
	ok &= wait_u64(&ps2->written_id, 2, 10000);
	usleep(100 * 1000);
	CHECK(ok && (sl_pstore_durable_id(ps2) == 0 ||
		     mono_ns() - t0 >= SL_PERSIST_MAX_UNSYNCED_NS),
	      "every:3: 2 messages written, not synced (before the longest unsynced time)");
	ok = submit(p, ps2, log2, 1, &e[2], 3, 1) == 3 && wait_u64(&ps2->durable_id, 3, 10000);
	CHECK(ok, "the 3rd message: synced");
	t0 = mono_ns();
	ok = submit(p, ps2, log2, 1, &e[3], 4, 1) == 4 && wait_u64(&ps2->written_id, 4, 10000);
	ok &= sl_pstore_durable_id(ps2) == 3 || mono_ns() - t0 >= SL_PERSIST_MAX_UNSYNCED_NS;
	CHECK(ok && wait_u64(&ps2->durable_id, 4, 10000),
	      "a 4th alone: synced within the longest unsynced time (1 s)");

	/* channel positions: saved on detach; one past the durable end is clamped */
	sl_pstore_chan_set(ps, 0, "c", 1, 4);
	sl_pstore_chan_set(ps, 1, "d", 0, 100);
	CHECK(sl_persist_detach(p, ps) == 0 && sl_persist_detach(p, ps2) == 0,
	      "detach both stores");
	__atomic_store_n(&sl_broker_quit, 1, __ATOMIC_RELEASE);
	sl_persist_close(p);
	__atomic_store_n(&sl_broker_quit, 0, __ATOMIC_RELEASE);
	sl_pstore_close(ps);
	sl_pstore_close(ps2);
	sl_memlog_close(log);
	sl_memlog_close(log2);
	free(mem);
	free(mem2);

	/* reopen: recovery finds what was made durable */
	ps = sl_pstore_open(dir, "t", 0, &pol, 0);
	if (ps == NULL) {
		CHECK(0, "reopen the store");
		return;
	}
	CHECK(strcmp(ps->rec.what, "clean") == 0 && ps->rec.end_id == 7 &&
		      sl_pstore_written_id(ps) == 7 && sl_pstore_durable_id(ps) == 7 &&
		      sl_pstore_disk_first_id(ps) == 1,
	      "reopened: clean, messages 1..7 written and durable (%s)", ps->rec.what);
	rc = sl_disklog_read(ps->dl, 1, 100, ps->fetch.buf, SL_PERSIST_FETCH_BYTES, msgs, 16, &n,
			     &first_avail);
	ok = rc == 0 && n == 7;
	for (i = 0; ok && i < 7; i++) {
		static const char *const want[] = {"a1", "a2", "a3", "a4", "a5", "c6", "d7"};

		ok &= msgs[i].id == i + 1 && msgs[i].len == 2 &&
		      memcmp(msgs[i].data, want[i], 2) == 0;
	}
	CHECK(ok, "the messages on disk: a1..a5, c6, d7 (%u)", n);
	rc = sl_disklog_epochs(ps->dl, epochs, starts, 4);
	CHECK(rc == 2 && epochs[0] == 1 && starts[0] == 1 && epochs[1] == 3 && starts[1] == 6,
	      "their commit records carry the descriptors' epochs: 1 from id 1, 3 from id 6");
	rc = sl_disklog_chan_load(ps->dl, chans, 4);
	CHECK(rc == 2 && strcmp(chans[0].name, "c") == 0 && chans[0].flags == 1 &&
		      chans[0].confirmed_id == 4 && strcmp(chans[1].name, "d") == 0 &&
		      chans[1].flags == 0 && chans[1].confirmed_id == 8,
	      "the channel positions: c at 4 (ordered), d clamped to the durable end + 1 (%d)",
	      rc);
	sl_pstore_close(ps);
	ps2 = sl_pstore_open(dir2, "t", 1, &every, 0);
	CHECK(ps2 != NULL && ps2->rec.end_id == 4 && sl_pstore_durable_id(ps2) == 4,
	      "the every:3 store reopens with its 4 messages");
	sl_pstore_close(ps2);
}

static int
rm_cb(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(path);
}

/*
 * The id mark of a memory-durability store (issue 12, point 6): open writes it a step
 * ahead; a close lowers it to the end; an open that finds the mark past the disk log's
 * end and a memory log file it cannot trust (here: never mapped, so no header of this
 * boot) records the ids in between as lost and continues at the mark; a disk-durability
 * store has no mark.
 */
static void
test_id_mark(void)
{
	struct sl_persist_policy mem = {.durability = SL_PERSIST_MEMORY};
	struct sl_persist_policy disk = {.durability = SL_PERSIST_DISK};
	struct sl_disklog_stats ds;
	struct sl_pstore *ps;
	char dir[256];

	snprintf(dir, sizeof(dir), "%s/mark", tmpdir);
	ps = sl_pstore_open(dir, "t", 0, &mem, 0);
	CHECK(ps != NULL && ps->rec.id_mark == 0 && ps->lost_from == 0 &&
	      sl_pstore_id_mark(ps) == 1 + SL_PERSIST_MARK_STEP,
	      "a new store: no range lost, mark %" PRIu64, ps ? sl_pstore_id_mark(ps) : 0);
	sl_pstore_close(ps);
	ps = sl_pstore_open(dir, "t", 0, &mem, 0);
	CHECK(ps != NULL && ps->rec.id_mark == 1 && ps->lost_from == 0,
	      "a close lowered the mark to the end: nothing lost at the next open");
	/* as a crash leaves it: the mark a step ahead (and no close to lower it) */
	if (ps != NULL) {
		sl_disklog_mark(ps->dl, 1 + SL_PERSIST_MARK_STEP);
		ps->id_mark = UINT64_MAX;
	}
	sl_pstore_close(ps);
	ps = sl_pstore_open(dir, "t", 0, &mem, 0);
	if (ps != NULL)
		sl_disklog_get_stats(ps->dl, &ds);
	CHECK(ps != NULL && ps->rec.id_mark == 1 + SL_PERSIST_MARK_STEP && ps->lost_from == 1 &&
	      ps->lost_to == SL_PERSIST_MARK_STEP && ds.end_id == SL_PERSIST_MARK_STEP &&
	      sl_pstore_written_id(ps) == SL_PERSIST_MARK_STEP &&
	      sl_pstore_id_mark(ps) == 1 + 2 * SL_PERSIST_MARK_STEP,
	      "reopen with an untrusted memory log: ids %" PRIu64 "..%" PRIu64 " lost, next mark %"
	      PRIu64, ps ? ps->lost_from : 0, ps ? ps->lost_to : 0,
	      ps ? sl_pstore_id_mark(ps) : 0);
	sl_pstore_close(ps);

	/* a forged mark near 2^64 (the file is owner-only, but must not make ids jump):
	 * the store is not opened, with a clear error; without the file it opens again */
	snprintf(dir, sizeof(dir), "%s/forged", tmpdir);
	ps = sl_pstore_open(dir, "t", 0, &mem, 0);
	if (ps != NULL) {
		sl_disklog_mark(ps->dl, UINT64_MAX - 3);
		ps->id_mark = UINT64_MAX;
	}
	sl_pstore_close(ps);
	rte_errno = 0;
	ps = sl_pstore_open(dir, "t", 0, &mem, 0);
	CHECK(ps == NULL && rte_errno == EBADMSG,
	      "a mark 2^64 - 4 (forged) refuses the open with EBADMSG (%d)", rte_errno);
	sl_pstore_close(ps);
	{
		char f[300];

		snprintf(f, sizeof(f), "%s/idmark", dir);
		CHECK(unlink(f) == 0, "the idmark file is where the error says");
	}
	ps = sl_pstore_open(dir, "t", 0, &mem, 0);
	CHECK(ps != NULL && ps->lost_from == 0 && sl_pstore_id_mark(ps) == 1 + SL_PERSIST_MARK_STEP,
	      "without it the store opens: nothing lost, mark a step ahead");
	sl_pstore_close(ps);

	snprintf(dir, sizeof(dir), "%s/nomark", tmpdir);
	ps = sl_pstore_open(dir, "t", 0, &disk, 0);
	CHECK(ps != NULL && sl_pstore_id_mark(ps) == UINT64_MAX, "disk durability: no mark");
	sl_pstore_close(ps);
	ps = sl_pstore_open(dir, "t", 0, &disk, 0);
	CHECK(ps != NULL && ps->lost_from == 0 && ps->rec.id_mark == 0, "nor a lost range");
	sl_pstore_close(ps);
}


int
main(int argc, char **argv)
{
	(void)argc;
	if (fx_eal_init(argv[0], "persist", 2) != 0)
		return 1;
	if (mkdtemp(tmpdir) == NULL) {
		printf("mkdtemp: %s\n", strerror(errno));
		return 1;
	}
	test_sync_due();
	test_parse_sync();
	test_open_errors();
	test_id_mark();
	test_lcore();
	nftw(tmpdir, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
	rte_eal_cleanup();
	return check_report();
}
