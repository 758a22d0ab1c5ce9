/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * Unit test of the partition module (dataplane/partition.c) as the worker drives it:
 * publish and MPUB, the leader checks, subscribe, delivery through the emit callback
 * (session checks, no-buffer retry, unencodable skip), FIN, REQ, TOUCH, RDY, CLS,
 * SET_OFFSET, the control commands, trimming on tick, a full log, and the held path
 * with completions on a disk-durability partition whose store fails (fault-injected
 * I/O). The EAL runs with --no-huge (the module allocates with rte_malloc); no port.
 */
#include <errno.h>
#include <ftw.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_random.h>
#include <rte_log.h>
#include <rte_eal.h>
#include <rte_malloc.h>

#include "broker.h"
#include "err.h"
#include "partition.h"
#include "persist.h"
#include "ptab.h"
#include "check.h"
#include "fixture.h"

static struct sl_session_table *sessions;
static struct sl_part_meta meta;
static struct sl_coord_part cpart;
static struct sl_topic topic;

/* What emit saw. */
static struct {
	int mode;		/* 0 send, -1 no buffer, 1 cannot encode */
	uint32_t n;
	uint64_t ids[256];
	uint16_t attempts[256];
	char body[256][32];
} seen;

static int
emit(void *arg, const struct sl_partition_msg *m)
{
	(void)arg;
	if (seen.mode != 0)
		return seen.mode;
	if (seen.n < 256) {
		seen.ids[seen.n] = m->rec->id;
		seen.attempts[seen.n] = m->attempts;
		snprintf(seen.body[seen.n], sizeof(seen.body[0]), "%.*s", (int)m->rec->len,
			 (const char *)m->rec->data);
	}
	seen.n++;
	return 0;
}

static uint8_t frame[16384];

/* A decoded PUB or MPUB of n bodies "m<k>" (k from first). */
static void
make_pub(struct sl_wire_pub *pub, int mpub, uint16_t n, uint32_t first)
{
	static char bodies[256][16];
	const void *msgs[256];
	uint32_t lens[256];
	struct sl_wire_hdr h = {.version = SL_WIRE_VERSION, .session = 1, .seq = 1};
	uint16_t i;
	int len;

	for (i = 0; i < n; i++) {
		lens[i] = (uint32_t)snprintf(bodies[i], sizeof(bodies[i]), "m%u", first + i);
		msgs[i] = bodies[i];
	}
	len = sl_wire_encode_pub(frame, sizeof(frame), &h, mpub, 0, "t", 0, 0, n, msgs, lens);
	if (len < 0 || sl_wire_decode_pub(frame + SL_WIRE_HDR_LEN, h.body_len, mpub, pub) != 0) {
		printf("cannot build a publish\n");
		exit(1);
	}
}

static void
make_op(struct sl_wire_chan_op *op, const char *chan)
{
	memset(op, 0, sizeof(*op));
	op->addr.topic = "t";
	op->addr.topic_len = 1;
	op->addr.channel = chan;
	op->addr.channel_len = (uint8_t)strlen(chan);
}

static struct sl_partition *
open_part_conf(uint64_t log_bytes, const struct sl_partition_conf *extra)
{
	struct sl_partition_conf pc = {
		.partid = 0,
		.worker = 0,
		.socket_id = SOCKET_ID_ANY,
		.log_bytes = log_bytes,
		.max_msg = 1024,
		.chan_window = 64,
		.msg_timeout_ms = 1000,
		.max_req_delay_ms = 60000,
		.node_id = 1,
		.sessions = sessions,
	};
	struct sl_partition *p;

	if (extra != NULL) {
		pc.sub_chans = extra->sub_chans;
		pc.sub_chans_per_src = extra->sub_chans_per_src;
		pc.sub_chan_idle_ms = extra->sub_chan_idle_ms;
		pc.store = extra->store;
		pc.persist = extra->persist;
		pc.grow_fd = extra->grow_fd;
	}
	p = sl_partition_open(&pc);

	if (p == NULL) {
		printf("sl_partition_open failed\n");
		exit(1);
	}
	sl_partition_set_coord(p, &cpart);
	return p;
}

static struct sl_partition *
open_part(uint64_t log_bytes)
{
	return open_part_conf(log_bytes, NULL);
}

/* A session from address ip (host order) and its table slot. */
static struct sl_session *
mk_session(uint32_t ip, uint32_t *slot)
{
	const uint8_t mac[6] = {2, 0, 0, 0, 0, 9};
	struct sl_session *s = sl_session_create(sessions, __builtin_bswap32(ip), 9999, mac, 0,
						 32, 0, 0, 0, 0, rte_get_tsc_cycles());

	if (s == NULL) {
		printf("cannot create a session\n");
		exit(1);
	}
	*slot = (uint32_t)(s->id & (SL_SESSION_MAX - 1));
	return s;
}

/* SUB of session s (slot) to channel chan with rdy; flags SL_WIRE_SUB_*. */
static int
do_sub(struct sl_partition *p, const struct sl_session *s, uint32_t slot, const char *chan,
       uint8_t flags, uint32_t rdy, uint64_t sub_id)
{
	struct sl_partition_res res;
	struct sl_wire_sub sub;

	memset(&sub, 0, sizeof(sub));
	sub.addr.topic = "t";
	sub.addr.topic_len = 1;
	sub.addr.channel = chan;
	sub.addr.channel_len = (uint8_t)strlen(chan);
	sub.flags = flags;
	sub.rdy = rdy;
	return sl_partition_subscribe(p, &sub, s->id, slot, sub_id, &res);
}

/* Deliver and FIN everything channel chan of session s may see at now. Returns the
 * number of messages finished. */
static uint32_t
consume_all(struct sl_partition *p, const struct sl_session *s, const char *chan,
	    uint64_t now)
{
	struct sl_partition_res res;
	struct sl_wire_chan_op op;
	uint64_t be[256];
	uint32_t total = 0, i, n;

	for (;;) {
		memset(&seen, 0, sizeof(seen));
		sl_partition_deliver(p, now, emit, NULL);
		n = seen.n < 256 ? seen.n : 256;
		if (n == 0)
			return total;
		for (i = 0; i < n; i += 128) {
			uint32_t k, m = n - i < 128 ? n - i : 128;

			for (k = 0; k < m; k++)
				be[k] = __builtin_bswap64(seen.ids[i + k]);
			make_op(&op, chan);
			op.count = m;
			op.ids = (const uint8_t *)be;
			if (sl_partition_chan_op(p, SL_OP_FIN, &op, s->id, now, 0, &res) == 0)
				total += res.count;
		}
	}
}

static void
test_publish(void)
{
	struct sl_partition *p = open_part(1 << 20);
	struct sl_partition_res res;
	struct sl_wire_pub pub;
	struct sl_partition_done done[4];
	uint32_t work = 0;
	int rc;

	make_pub(&pub, 0, 1, 1);
	memset(&res, 0, sizeof(res));
	rc = sl_partition_publish(p, &pub, 0, 1000, 0, 7, &res);
	CHECK(rc == 0 && res.id == 1 && res.count == 1 && res.offset == 0 && res.aux == 1,
	      "PUB answered at once without storage or replication: id %" PRIu64, res.id);
	make_pub(&pub, 1, 5, 2);
	rc = sl_partition_publish(p, &pub, 1, 1000, 0, 8, &res);
	CHECK(rc == 0 && res.id == 2 && res.count == 5 && res.aux == 6,
	      "MPUB of 5: ids 2..6 (aux %" PRIu64 ")", res.aux);
	CHECK(sl_partition_poll(p, 0, done, 4, &work) == 0, "no completions without held");

	meta.leader = 2;
	rc = sl_partition_publish(p, &pub, 1, 1000, 0, 9, &res);
	CHECK(rc == -SL_E_NOT_LEADER, "not the leader: refused (%d)", rc);
	meta.leader = 1;
	meta.writes_disabled = 1;
	rc = sl_partition_publish(p, &pub, 1, 1000, 0, 9, &res);
	CHECK(rc == -SL_E_WRITE_DISABLED, "writes disabled: refused (%d)", rc);
	meta.writes_disabled = 0;
	meta.nisr = 0;
	rc = sl_partition_publish(p, &pub, 1, 1000, 0, 9, &res);
	CHECK(rc == -SL_E_QUORUM, "ISR too small: refused (%d)", rc);
	meta.nisr = 1;
	pub.msg_len = 5000;
	rc = sl_partition_publish(p, &pub, 0, 1000, 0, 9, &res);
	CHECK(rc == -SL_E_TOO_BIG, "a body over max_msg: refused (%d)", rc);
	make_pub(&pub, 1, 3, 100);
	pub.count = 4;	/* says 4, holds 3 */
	rc = sl_partition_publish(p, &pub, 1, 1000, 0, 9, &res);
	CHECK(rc == -SL_E_PUB_ARG, "MPUB count not matching its bodies: refused (%d)", rc);
	make_pub(&pub, 0, 1, 7);
	rc = sl_partition_publish(p, &pub, 0, 1000, 0, 9, &res);
	CHECK(rc == 0 && res.id == 7, "nothing written by the refusals: next id 7");
	sl_partition_close(p);
}

/* A publish of a session with a producer id (ptab.h): written once, whatever session or
 * node it is retried from; the table follows the log's rollbacks. */
static void
test_producer(void)
{
	struct sl_partition *p = open_part(1 << 20);
	struct sl_partition_res res;
	struct sl_part_info info;
	struct sl_wire_pub pub;
	int rc;

	make_pub(&pub, 0, 1, 1);
	pub.producer = 0xfeed;
	pub.pseq = 5;
	memset(&res, 0, sizeof(res));
	rc = sl_partition_publish(p, &pub, 0, 1000, 0, 1, &res);
	CHECK(rc == 0 && res.id == 1, "(producer, seq 5) written: id %" PRIu64, res.id);
	make_pub(&pub, 1, 3, 2);
	pub.producer = 0xfeed;
	pub.pseq = 6;
	rc = sl_partition_publish(p, &pub, 1, 1000, 0, 2, &res);
	CHECK(rc == 0 && res.id == 2 && res.count == 3, "(producer, seq 6) MPUB of 3: ids 2..4");
	memset(&res, 0, sizeof(res));
	rc = sl_partition_publish(p, &pub, 1, 1000, 0, 3, &res);
	sl_partition_info(p, &info);
	CHECK(rc == 0 && res.id == 2 && res.count == 3 && res.aux == 4 && res.offset != 0 &&
		      info.end_id == 4,
	      "seq 6 again (another session): the original answer, nothing written (end %" PRIu64
	      ")", info.end_id);
	make_pub(&pub, 0, 1, 1);
	pub.producer = 0xbeef;
	pub.pseq = 5;
	rc = sl_partition_publish(p, &pub, 0, 1000, 0, 4, &res);
	CHECK(rc == 0 && res.id == 5, "another producer's seq 5 is its own: written, id 5");
	pub.producer = 0;
	rc = sl_partition_publish(p, &pub, 0, 1000, 0, 5, &res);
	CHECK(rc == 0 && res.id == 6, "without a producer id: written each time (id 6)");
	rc = sl_partition_publish(p, &pub, 0, 1000, 0, 6, &res);
	CHECK(rc == 0 && res.id == 7, "and again (id 7)");
	sl_partition_info(p, &info);
	CHECK(info.producers == 2 && info.producer_dups == 1,
	      "info: %u producers, %" PRIu64 " retry answered from the table", info.producers,
	      info.producer_dups);
	sl_partition_close(p);
}

static int
rm_cb(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

/* Publish (producer, seq) with n messages; the answer in *res. */
static int
pub_prod(struct sl_partition *p, uint64_t producer, uint64_t seq, uint32_t n,
	 struct sl_partition_res *res)
{
	struct sl_wire_pub pub;

	make_pub(&pub, n > 1, n, 1);
	pub.producer = producer;
	pub.pseq = seq;
	memset(res, 0, sizeof(*res));
	return sl_partition_publish(p, &pub, n > 1, 1000, 0, seq, res);
}

/* Publish (producer 0xfeed, seq) with n messages; the answer in *res. */
static int
pub_seq(struct sl_partition *p, uint64_t seq, uint32_t n, struct sl_partition_res *res)
{
	return pub_prod(p, 0xfeed, seq, n, res);
}

/* Persistence for the restart tests: no lcore until a test gives it one. */
static const struct sl_persist_conf persist_conf = {
	.nsources = 1, .socket_id = SOCKET_ID_ANY, .buf_bytes = 1 << 20, .adaptive_idle = 1,
	.idle_max_us = 100,
};

/* Persistence (its lcore not started) and a store of policy pol in dir (<tmp made
 * here>/t/0). 0; 1 when the store did not open (persistence and tmp to clean up); -1 when
 * nothing is left to clean up. */
static int
store_setup(struct sl_partition_conf *extra, char *tmp, char *dir, size_t dlen,
	    const struct sl_persist_policy *pol, const char *what)
{
	extra->persist = sl_persist_open(&persist_conf);
	if (extra->persist == NULL || mkdtemp(tmp) == NULL) {
		CHECK(0, "persistence and a data directory for %s", what);
		sl_persist_close(extra->persist);
		return -1;
	}
	snprintf(dir, dlen, "%s/t/0", tmp);
	extra->store = sl_pstore_open(dir, "t", 0, pol, 0);
	CHECK(extra->store != NULL, "%s: store opened in %s", what, dir);
	return extra->store != NULL ? 0 : 1;
}

/* Retry seqs 7 (ids 1..2) and 8 (id 3) on a reopened partition: the original answers,
 * nothing written. */
static void
check_retries(struct sl_partition *p, const char *when)
{
	struct sl_partition_res res, res2;
	struct sl_part_info info;
	int rc, rc2;

	rc = pub_seq(p, 7, 2, &res);
	rc2 = pub_seq(p, 8, 1, &res2);
	sl_partition_info(p, &info);
	CHECK(rc == 0 && res.id == 1 && res.count == 2 && rc2 == 0 && res2.id == 3 &&
		      info.end_id == 3 && info.producers == 1 && info.producer_dups == 2,
	      "%s: seqs 7 and 8 again get their original ids (%" PRIu64 ", %" PRIu64
	      "), nothing written (end %" PRIu64 ")", when, res.id, res2.id, info.end_id);
}

/* A partition that stops without any save (a crash: SIGKILL, or a machine crash once its
 * records are on disk) and is reopened from its data directory still knows its
 * producers: a retried (producer, seq) gets the original answer and nothing is written
 * twice. Memory durability: (1) the records are still only in the memory log file (the
 * persistence lcore never ran): the store writes them to the disk log without their tags,
 * the table kept in the store's file gives them back; (2) the records were written to
 * the disk log with their tags, the memory log and table files are gone: the table is
 * rebuilt from the commit records alone. An earlier build's "producers" file is removed
 * unread. */
static void
test_producer_restart(void)
{
	struct sl_persist_policy mem = {.durability = SL_PERSIST_MEMORY};
	struct sl_persist_conf pcf = persist_conf;
	struct sl_partition_conf extra = {0};
	char tmp[] = "/tmp/sl-test-part-ptab-XXXXXX", dir[64], dir2[64];
	struct sl_partition_res res;
	struct sl_part_info info;
	struct sl_partition *p;
	char path[96];
	int rc, round, i;
	FILE *f;

	/* the persistence lcore is not started: the memory log file carries the records
	 * from one open to the next, as after a kill with memory durability */
	rc = store_setup(&extra, tmp, dir, sizeof(dir), &mem, "the restart test");
	if (rc < 0)
		return;
	if (rc > 0)
		goto out;
	p = open_part_conf(1 << 20, &extra);
	rc = pub_seq(p, 7, 2, &res);
	CHECK(rc == 0 && res.id == 1 && res.count == 2, "(producer, seq 7) MPUB of 2: ids 1..2");
	rc = pub_seq(p, 8, 1, &res);
	CHECK(rc == 0 && res.id == 3, "(producer, seq 8) written: id 3");
	sl_partition_close(p);		/* no save of any kind: as a kill */
	for (round = 0; round < 2; round++) {
		extra.store = sl_pstore_open(dir, "t", 0, &mem, 0);
		CHECK(extra.store != NULL, "store reopened");
		if (extra.store == NULL)
			goto out;
		p = open_part_conf(1 << 20, &extra);
		check_retries(p, round == 0 ? "after a kill (records replayed from the memory log "
					      "file)" : "after a second kill");
		sl_partition_close(p);
	}

	/* (2) the persistence lcore writes the records, tags and all */
	pcf.lcore = rte_get_next_lcore(-1, 1, 0);
	if (pcf.lcore >= RTE_MAX_LCORE) {
		printf("# one lcore only: the disk-tag restart is not tested\n");
		goto out;
	}
	sl_persist_close(extra.persist);
	extra.persist = sl_persist_open(&pcf);
	snprintf(dir2, sizeof(dir2), "%s/t/1", tmp);
	extra.store = sl_pstore_open(dir2, "t", 1, &mem, 0);
	if (extra.persist == NULL || extra.store == NULL ||
	    sl_persist_start(extra.persist) != 0) {
		CHECK(0, "a started persistence lcore and a store in %s", dir2);
		goto out;
	}
	p = open_part_conf(1 << 20, &extra);
	rc = sl_persist_attach(extra.persist, extra.store);
	CHECK(rc == 0 && pub_seq(p, 7, 2, &res) == 0 && res.id == 1 &&
		      pub_seq(p, 8, 1, &res) == 0 && res.id == 3,
	      "seqs 7 (ids 1..2) and 8 (id 3) with the persistence lcore running");
	for (i = 0; i < 2000 && sl_pstore_written_id(extra.store) < 3; i++)
		usleep(1000);
	CHECK(sl_pstore_written_id(extra.store) == 3, "written to the disk log");
	sl_persist_detach(extra.persist, extra.store);
	sl_partition_close(p);
	/* nothing but the disk log: no memory log file, no table file; and a stale
	 * snapshot of an earlier build */
	snprintf(path, sizeof(path), "%s/memlog", dir2);
	unlink(path);
	snprintf(path, sizeof(path), "%s/producers.shm", dir2);
	unlink(path);
	snprintf(path, sizeof(path), "%s/producers", dir2);
	f = fopen(path, "w");
	if (f != NULL) {
		fputs("SLPT stale", f);
		fclose(f);
	}
	extra.store = sl_pstore_open(dir2, "t", 1, &mem, 0);
	CHECK(extra.store != NULL && f != NULL, "store reopened from its disk log alone");
	if (extra.store == NULL)
		goto out;
	CHECK(access(path, F_OK) != 0, "an earlier build's producers file: removed unread");
	p = open_part_conf(1 << 20, &extra);
	/* as sluiced does: the store attached to the persistence lcore before it serves */
	rc = sl_persist_attach(extra.persist, extra.store);
	CHECK(rc == 0, "store attached to the running persistence lcore");
	check_retries(p, "rebuilt from the commit records' tags");
	rc = pub_seq(p, 9, 1, &res);
	sl_partition_info(p, &info);
	CHECK(rc == 0 && res.id == 4 && info.end_id == 4, "seq 9: new, written at id 4");
	for (i = 0; i < 2000 && sl_pstore_written_id(extra.store) < 4; i++)
		usleep(1000);
	CHECK(sl_pstore_written_id(extra.store) == 4 && sl_pstore_error(extra.store) == 0,
	      "seq 9 written to the disk log, no storage error");
	sl_persist_detach(extra.persist, extra.store);
	sl_partition_close(p);
out:
	/* a started persistence lcore runs until the broker's quit flag */
	__atomic_store_n(&sl_broker_quit, 1, __ATOMIC_RELEASE);
	sl_persist_close(extra.persist);
	__atomic_store_n(&sl_broker_quit, 0, __ATOMIC_RELEASE);
	nftw(tmp, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

/* A disk-durability store that fails right after a sync (the persistence lcore is not
 * started: the test sets what it would have, the durable id and then the error, in its
 * order). What the sync made durable stays on disk: its publishes must be acknowledged, not
 * failed, or their clients publish them a second time (a message stored twice: seen in
 * fault/disk_full); the rest fails with SL_E_IO and leaves the log. */
static void
test_disk_error_after_sync(void)
{
	struct sl_persist_policy disk = {.durability = SL_PERSIST_DISK};
	struct sl_partition_conf extra = {0};
	char tmp[] = "/tmp/sl-test-part-err-XXXXXX", dir[64];
	struct sl_partition_done done[8];
	struct sl_partition_res res;
	struct sl_part_info info;
	struct sl_partition *p;
	uint32_t work = 0, n, i, ok = 0, io = 0;
	int rc[3];

	rc[0] = store_setup(&extra, tmp, dir, sizeof(dir), &disk, "the store error test");
	if (rc[0] < 0)
		return;
	if (rc[0] > 0)
		goto out;
	p = open_part_conf(1 << 20, &extra);
	for (i = 0; i < 3; i++)
		rc[i] = pub_seq(p, i + 1, 1, &res);
	CHECK(rc[0] == SL_PARTITION_HELD && rc[1] == SL_PARTITION_HELD &&
		      rc[2] == SL_PARTITION_HELD,
	      "3 publishes (ids 1..3) held for the disk (%d %d %d)", rc[0], rc[1], rc[2]);
	n = sl_partition_poll(p, 0, done, 8, &work);
	CHECK(n == 0, "no answer before the disk's (%u)", n);
	/* the persistence lcore: ids 1..2 synced, then the write of id 3 failed */
	__atomic_store_n(&extra.store->written_id, 2, __ATOMIC_RELEASE);
	__atomic_store_n(&extra.store->durable_id, 2, __ATOMIC_RELEASE);
	__atomic_store_n(&extra.store->error, -ENOSPC, __ATOMIC_RELEASE);
	n = sl_partition_poll(p, 0, done, 8, &work);
	for (i = 0; i < n; i++) {
		ok += done[i].code == 0 && done[i].token == i + 1 && i < 2;
		io += done[i].code == SL_E_IO && done[i].token == 3 && i == 2;
	}
	CHECK(n == 3 && ok == 2 && io == 1,
	      "the error seen in the same poll as the sync: ids 1..2 acknowledged, id 3 "
	      "SL_E_IO (%u answers, %u ok, %u I/O errors)", n, ok, io);
	sl_partition_info(p, &info);
	CHECK(info.end_id == 2, "the log ends at the durable id 2 (%" PRIu64 ")", info.end_id);
	rc[0] = pub_seq(p, 4, 1, &res);
	CHECK(rc[0] == -SL_E_IO, "a later publish: SL_E_IO, the error is sticky (%d)", rc[0]);
	/* the persistence lcore's resume: the files end at the durable id, a new generation */
	__atomic_store_n(&extra.store->gen, extra.store->gen + 1, __ATOMIC_RELEASE);
	__atomic_store_n(&extra.store->error, 0, __ATOMIC_RELEASE);
	n = sl_partition_poll(p, 0, done, 8, &work);
	rc[0] = pub_seq(p, 5, 1, &res);
	CHECK(n == 0 && rc[0] == SL_PARTITION_HELD && res.id == 3,
	      "resumed: a publish is taken again, at id 3 (%d, id %" PRIu64 ")", rc[0], res.id);
	sl_partition_close(p);
out:
	sl_persist_close(extra.persist);
	nftw(tmp, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

/* producers.shm as sl_pstore_ptab_mem writes it (storage/persist.h): a 4096-byte header
 * (magic, version, table length, this boot's id), then the table. */
#define PT_HDR 4096

enum forge {
	FORGE_NONE,		/* as a process of this boot leaves it: trusted */
	FORGE_GARBAGE,		/* random bytes */
	FORGE_SHORT,		/* 10 bytes of the magic */
	FORGE_HDR_ONLY,		/* a right header, no table */
	FORGE_TRUNCATED,	/* a right header, half the table */
	FORGE_LEN_BIG,		/* the header says 2^40 bytes */
	FORGE_LEN_SMALL,	/* the header says 8 bytes less than the table */
	FORGE_VERSION,		/* version 2 */
	FORGE_BOOT,		/* another boot's id */
	FORGE_TAB_N,		/* a producer holding SL_PTAB_SEQS + 1 entries */
	FORGE_TAB_HEAD,		/* a ring head out of range */
	FORGE_TAB_ORDER,	/* ids not in log order */
	FORGE_TAB_FREE,		/* a free entry holding entries */
	FORGE_SYMLINK,		/* a link to another file */
	FORGE_DIR,		/* a directory */
	FORGE_N
};

static const char *const forge_what[FORGE_N] = {
	"this boot's table", "random bytes", "10 bytes", "a header and no table",
	"half a table", "a length of 2^40", "a length 8 bytes short", "version 2",
	"another boot's id", "a producer with 129 entries", "a ring head out of range",
	"ids out of log order", "a free entry with entries", "a symbolic link", "a directory",
};

/* what the table file's refusal must say (in the log) */
static const char *const forge_said[FORGE_N] = {
	NULL, "not a producer table file", "not a producer table file", "truncated",
	"truncated", "a table of 1099511627776 bytes", "bytes, not", "version 2, not 1",
	"written before this boot", "malformed table", "malformed table", "malformed table",
	"malformed table", "producer table file", "producer table file",
};

/* Write producers.shm in dir: a table claiming ids 1..3 for producer 0xbad (seq 5: ids
 * 1..2, seq 6: id 3), forged as f says. 0, or -1 when it cannot be written. */
static int
forge_write(const char *dir, const char *boot, enum forge f)
{
	static uint8_t buf[PT_HDR + sizeof(struct sl_ptab)];
	struct sl_ptab *t = (struct sl_ptab *)(buf + PT_HDR);
	uint64_t len = sizeof(*t);
	size_t n = sizeof(buf), i;
	char path[160], other[160];
	FILE *fp;

	snprintf(path, sizeof(path), "%s/producers.shm", dir);
	if (unlink(path) != 0 && errno != ENOENT)
		return -1;
	if (f == FORGE_DIR)
		return mkdir(path, 0700);
	if (f == FORGE_SYMLINK) {
		snprintf(other, sizeof(other), "%s/victim", dir);
		fp = fopen(other, "w");
		if (fp == NULL)
			return -1;
		fputs("not to be overwritten", fp);
		fclose(fp);
		return symlink(other, path);
	}
	memset(buf, 0, sizeof(buf));
	memcpy(buf, "SLPRODSH", 8);
	buf[8] = f == FORGE_VERSION ? 2 : 1;
	if (f == FORGE_LEN_BIG)
		len = 1ull << 40;
	else if (f == FORGE_LEN_SMALL)
		len -= 8;
	for (i = 0; i < 8; i++)
		buf[16 + i] = (uint8_t)(len >> (8 * i));
	memcpy(buf + 24, boot, 37);
	if (f == FORGE_BOOT)
		buf[24] ^= 1;
	sl_ptab_init(t);
	sl_ptab_note(t, 0xbad, 5, 1, 2, 0);
	sl_ptab_note(t, 0xbad, 6, 3, 1, 2);
	if (f == FORGE_TAB_N)
		t->p[0].n = SL_PTAB_SEQS + 1;
	else if (f == FORGE_TAB_HEAD)
		t->p[0].head = SL_PTAB_SEQS;
	else if (f == FORGE_TAB_ORDER)
		t->p[0].e[1].id = 1;
	else if (f == FORGE_TAB_FREE)
		t->p[1].n = 1;
	if (f == FORGE_GARBAGE)
		for (i = 0; i < n; i++)
			buf[i] = (uint8_t)rte_rand();
	else if (f == FORGE_SHORT)
		n = 10;
	else if (f == FORGE_HDR_ONLY)
		n = PT_HDR;
	else if (f == FORGE_TRUNCATED)
		n = PT_HDR + sizeof(*t) / 2;
	fp = fopen(path, "w");
	if (fp == NULL)
		return -1;
	i = fwrite(buf, 1, n, fp);
	return fclose(fp) == 0 && i == n ? 0 : -1;
}

/* A memory-durability partition killed with records only in its memory log file (as in
 * test_producer_restart) is reopened with a producers.shm forged in every way: only this
 * boot's well-formed table is used (its tags come back); every other file is refused, said
 * in the log, nothing of it trusted (the table comes from the commit log, which holds the
 * replayed records untagged: no producer), the partition serves, and the file is made
 * anew (or, not a regular file, left as it is: the table in memory only). */
static void
test_producer_forged(void)
{
	struct sl_persist_policy mem = {.durability = SL_PERSIST_MEMORY};
	struct sl_persist_conf pcf = persist_conf;
	char tmp[] = "/tmp/sl-test-part-forge-XXXXXX", dir[96], path[160], boot[37];
	struct sl_partition_conf extra = {0};
	struct sl_partition_res res;
	struct sl_part_info info;
	struct sl_partition *p;
	char *logbuf = NULL;
	size_t loglen = 0;
	struct stat st;
	FILE *fp, *log;
	int f, rc;

	memset(boot, 0, sizeof(boot));
	fp = fopen("/proc/sys/kernel/random/boot_id", "r");
	if (fp == NULL || fread(boot, 1, 36, fp) != 36) {
		printf("# no boot id: the forged producer table files are not tested\n");
		if (fp != NULL)
			fclose(fp);
		return;
	}
	fclose(fp);
	extra.persist = sl_persist_open(&pcf);
	if (extra.persist == NULL || mkdtemp(tmp) == NULL) {
		CHECK(0, "persistence and a data directory for the forged-file test");
		sl_persist_close(extra.persist);
		return;
	}
	for (f = 0; f < FORGE_N; f++) {
		snprintf(dir, sizeof(dir), "%s/t%d/0", tmp, f);
		extra.store = sl_pstore_open(dir, "t", 0, &mem, 0);
		if (extra.store == NULL) {
			CHECK(0, "store opened in %s", dir);
			break;
		}
		p = open_part_conf(1 << 20, &extra);
		rc = pub_seq(p, 7, 2, &res) | pub_seq(p, 8, 1, &res);
		sl_partition_close(p);		/* as a kill */
		if (rc != 0 || forge_write(dir, boot, (enum forge)f) != 0) {
			CHECK(0, "%s: written and forged", forge_what[f]);
			break;
		}
		/* the log of the reopen read back (fixture.h runs the EAL at *:error) */
		log = open_memstream(&logbuf, &loglen);
		if (log != NULL)
			rte_openlog_stream(log);
		rte_log_set_level_pattern("*", RTE_LOG_INFO);
		extra.store = sl_pstore_open(dir, "t", 0, &mem, 0);
		p = extra.store != NULL ? open_part_conf(1 << 20, &extra) : NULL;
		rte_log_set_level_pattern("*", RTE_LOG_ERR);
		rte_openlog_stream(NULL);
		if (log != NULL)
			fclose(log);
		if (p == NULL) {
			CHECK(0, "%s: store reopened", forge_what[f]);
			free(logbuf);
			break;
		}
		sl_partition_info(p, &info);
		if (f == FORGE_NONE) {
			rc = pub_prod(p, 0xbad, 5, 2, &res);
			CHECK(info.producers == 1 && rc == 0 && res.id == 1 && logbuf != NULL &&
			      strstr(logbuf, "producers.shm") == NULL,
			      "%s: used, nothing said (the records' tags come back from it: a "
			      "retry of its (0xbad, 5) answered id %" PRIu64 ")", forge_what[f],
			      res.id);
		} else {
			rc = pub_prod(p, 0xbad, 5, 2, &res);
			CHECK(info.producers == 0 && rc == 0 && res.id == 4 && logbuf != NULL &&
			      strstr(logbuf, forge_said[f]) != NULL,
			      "%s: refused, said (\"%s\"), nothing trusted (no producer; "
			      "(0xbad, 5) new: written at id %" PRIu64 ")", forge_what[f],
			      forge_said[f], res.id);
		}
		if (f != FORGE_NONE && logbuf != NULL && strstr(logbuf, forge_said[f]) == NULL)
			printf("# its log: %s", logbuf);
		free(logbuf);
		logbuf = NULL;
		snprintf(path, sizeof(path), "%s/producers.shm", dir);
		if (f == FORGE_SYMLINK || f == FORGE_DIR) {
			snprintf(path, sizeof(path), "%s/victim", dir);
			fp = f == FORGE_SYMLINK ? fopen(path, "r") : NULL;
			if (fp != NULL) {
				char got[64] = "";

				if (fgets(got, sizeof(got), fp) == NULL)
					got[0] = 0;
				fclose(fp);
				CHECK(strcmp(got, "not to be overwritten") == 0,
				      "%s: the file it names is left as it was", forge_what[f]);
			}
		} else {
			CHECK(stat(path, &st) == 0 &&
			      st.st_size == (off_t)(PT_HDR + sizeof(struct sl_ptab)),
			      "%s: the file made anew (%lld bytes)", forge_what[f],
			      (long long)st.st_size);
		}
		rc = pub_seq(p, 9, 1, &res);
		CHECK(rc == 0 && res.id == (f == FORGE_NONE ? 4u : 6u),
		      "%s: the partition serves (seq 9 written at id %" PRIu64 ")",
		      forge_what[f], res.id);
		sl_partition_close(p);
	}
	sl_persist_close(extra.persist);
	nftw(tmp, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

static void
test_full(void)
{
	struct sl_partition *p = open_part(64 * 1024);
	struct sl_partition_res res;
	struct sl_wire_pub pub;
	uint32_t n = 0;
	int rc;

	make_pub(&pub, 0, 1, 1);
	memset(&res, 0, sizeof(res));
	while ((rc = sl_partition_publish(p, &pub, 0, 1, 0, 0, &res)) == 0 && n < 1000000)
		n++;
	CHECK(rc == -SL_E_FULL && n > 100, "a log with no channel fills: FULL after %u", n);
	CHECK(res.why != NULL && strstr(res.why, "no channel") != NULL,
	      "its ERR text says no channel releases it (%s)", res.why ? res.why : "none");
	sl_partition_close(p);
}

/* The owner wakes the grower through grow_fd once its log's ready part is more than half
 * used, once per growth step (not once per publish), and again after a step. */
static void
test_grow_kick(void)
{
	struct sl_partition_conf extra = {0};
	struct sl_partition_res res;
	struct sl_wire_pub pub;
	struct sl_partition *p;
	uint32_t n = 0, first = 0, second = 0, extra_kicks = 0;
	struct sl_part_info info;
	uint64_t v;

	extra.grow_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	CHECK(extra.grow_fd > 0, "eventfd");
	p = open_part_conf(4u << 20, &extra);
	make_pub(&pub, 0, 1, 1);
	memset(&res, 0, sizeof(res));
	while (n < 100000 && sl_partition_publish(p, &pub, 0, 1, 0, 0, &res) == 0) {
		n++;
		if (read(extra.grow_fd, &v, sizeof(v)) == (ssize_t)sizeof(v)) {
			if (first == 0)
				first = n;
			else
				extra_kicks++;
		}
		if (first != 0 && n == first + 50)
			break;
	}
	CHECK(first > 10, "the first kick once the first part is half used (publish %u)", first);
	CHECK(extra_kicks == 0, "no second kick before the grower's step (%u)", extra_kicks);
	CHECK(sl_partition_grow(p, UINT64_MAX) > 0, "the grower's step");
	while (n < 100000 && sl_partition_publish(p, &pub, 0, 1, 0, 0, &res) == 0) {
		n++;
		if (read(extra.grow_fd, &v, sizeof(v)) == (ssize_t)sizeof(v)) {
			second = n;
			break;
		}
	}
	CHECK(second > first + 50, "a kick again after the step, when the grown part is half "
	      "used (publish %u)", second);
	sl_partition_info(p, &info);
	CHECK(info.grow_kicks == 2 && info.grow_refused == 0,
	      "topic info counts the two wake-ups (%" PRIu64 ") and no refused step (%" PRIu64
	      ")", info.grow_kicks, info.grow_refused);
	CHECK(sl_partition_grow(p, 0) == 0, "a step over the budget is not taken");
	sl_partition_info(p, &info);
	CHECK(info.grow_refused == 1, "and is counted as refused (%" PRIu64 ")",
	      info.grow_refused);
	sl_partition_close(p);
	close(extra.grow_fd);
}

static void
test_channels(void)
{
	struct sl_partition *p = open_part(1 << 20);
	struct sl_partition_res res;
	struct sl_wire_pub pub;
	struct sl_wire_sub sub;
	struct sl_wire_chan_op op;
	const uint8_t mac[6] = {2, 0, 0, 0, 0, 1};
	struct sl_session *s = sl_session_create(sessions, 0x0100007f, 9999, mac, 0, 32, 0, 0,
						 0, 0, rte_get_tsc_cycles());
	uint64_t id, be;
	uint32_t i;
	int rc;

	CHECK(s != NULL, "a session");
	for (i = 1; i <= 10; i++) {
		make_pub(&pub, 0, 1, i);
		sl_partition_publish(p, &pub, 0, i, 0, 0, &res);
	}
	memset(&sub, 0, sizeof(sub));
	sub.addr.topic = "t";
	sub.addr.topic_len = 1;
	sub.addr.channel = "c1";
	sub.addr.channel_len = 2;
	sub.rdy = 4;
	rc = sl_partition_subscribe(p, &sub, s->id, 0, 77, &res);
	CHECK(rc == 0 && res.id == 77 && res.aux == 10, "SUB creates c1, sub id 77");
	rc = sl_partition_subscribe(p, &sub, s->id, 0, 78, &res);
	CHECK(rc == 0 && res.id == 77, "SUB again: the same subscription (id %" PRIu64 ")",
	      res.id);
	sub.addr.channel = "../x";
	sub.addr.channel_len = 4;
	CHECK(sl_partition_subscribe(p, &sub, s->id, 0, 79, &res) == -SL_E_NAME,
	      "a bad channel name is refused");

	memset(&seen, 0, sizeof(seen));
	seen.mode = -1;
	CHECK(sl_partition_deliver(p, 0, emit, NULL) == 0, "no buffer: nothing delivered");
	seen.mode = 0;
	CHECK(sl_partition_deliver(p, 0, emit, NULL) == 4 && seen.ids[0] == 1 &&
		      seen.ids[3] == 4 && strcmp(seen.body[0], "m1") == 0,
	      "RDY 4: ids 1..4 delivered in order, after the no-buffer retry");
	CHECK(sl_partition_deliver(p, 0, emit, NULL) == 0, "no credit left");

	make_op(&op, "c1");
	op.count = 1;
	be = __builtin_bswap64(1);
	op.ids = (const uint8_t *)&be;
	rc = sl_partition_chan_op(p, SL_OP_FIN, &op, s->id, 0, 0, &res);
	CHECK(rc == 0 && res.count == 1, "FIN 1");
	rc = sl_partition_chan_op(p, SL_OP_FIN, &op, s->id, 0, 0, &res);
	CHECK(rc == -SL_E_MSG_ID, "FIN 1 again: not in flight (%d)", rc);
	rc = sl_partition_chan_op(p, SL_OP_FIN, &op, s->id + 1, 0, 0, &res);
	CHECK(rc == -SL_E_CHANNEL, "FIN from a session not subscribed (%d)", rc);
	op.msg_id = 2;
	rc = sl_partition_chan_op(p, SL_OP_TOUCH, &op, s->id, 0, 0, &res);
	CHECK(rc == 0 && res.id == 2, "TOUCH 2");
	op.delay_ms = 0;
	rc = sl_partition_chan_op(p, SL_OP_REQ, &op, s->id, 0, 0, &res);
	CHECK(rc == 0, "REQ 2");
	memset(&seen, 0, sizeof(seen));
	sl_partition_deliver(p, 1000, emit, NULL);
	CHECK(seen.n == 2 && seen.ids[0] == 2 && seen.attempts[0] == 2 && seen.ids[1] == 5,
	      "REQ'd 2 comes again (attempt %u), then 5", seen.attempts[0]);

	make_op(&op, "c1");
	op.kind = SL_OFF_COUNT;
	op.value = 8;
	rc = sl_partition_chan_op(p, SL_OP_SET_OFFSET, &op, s->id, 0, 0, &res);
	CHECK(rc == 0 && res.id == 9 && res.aux == 8, "SET_OFFSET count 8: next id 9");
	op.kind = 99;
	CHECK(sl_partition_chan_op(p, SL_OP_SET_OFFSET, &op, s->id, 0, 0, &res) == -SL_E_INVAL,
	      "SET_OFFSET of an unknown kind");
	make_op(&op, "nope");
	CHECK(sl_partition_chan_op(p, SL_OP_RDY, &op, s->id, 0, 0, &res) == -SL_E_CHANNEL,
	      "RDY on an unknown channel");

	/* seen.mode 1: the message cannot be encoded: skipped as finished */
	make_op(&op, "c1");
	op.count = 8;
	sl_partition_chan_op(p, SL_OP_RDY, &op, s->id, 0, 0, &res);
	memset(&seen, 0, sizeof(seen));
	seen.mode = 1;
	sl_partition_deliver(p, 2000, emit, NULL);
	seen.mode = 0;
	CHECK(sl_partition_deliver(p, 2000, emit, NULL) == 0, "unencodable messages skipped");

	CHECK(sl_partition_chan_create(p, "c2", 0) == 0, "command: create c2");
	CHECK(sl_partition_chan_create(p, "c2", 0) == -SL_E_EXISTS, "c2 again: exists");
	CHECK(sl_partition_chan_reset(p, "c2", SL_OFF_END, 0, &id) == 0 && id == 11,
	      "command: reset c2 to the end (%" PRIu64 ")", id);
	CHECK(sl_partition_chan_reset(p, "c2", SL_OFF_COUNT, UINT64_MAX - 1, &id) == 0 &&
		      id == 11, "reset past the end clamps to the end");
	CHECK(sl_partition_chan_delete(p, "c2") == 0, "command: delete c2");
	CHECK(sl_partition_chan_delete(p, "c2") == -SL_E_CHANNEL, "c2 is gone");

	{
		struct sl_part_info *info = calloc(1, sizeof(*info));

		sl_partition_tick(p, 3000);
		sl_partition_info(p, info);
		CHECK(info->end_id == 10 && info->nchans == 1 && info->first_id == 11,
		      "tick trims what every channel finished (first %" PRIu64 ")",
		      info->first_id);
		free(info);
	}
	make_op(&op, "c1");
	CHECK(sl_partition_chan_op(p, SL_OP_CLS, &op, s->id, 0, 0, &res) == 0, "CLS of c1");
	make_op(&op, "c1");
	CHECK(sl_partition_chan_op(p, SL_OP_FIN, &op, s->id, 0, 0, &res) == -SL_E_CHANNEL,
	      "after CLS the session has no subscription");
	sl_partition_close(p);
}

/* SET_OFFSET at the extremes: a count near 2^64 is the end (saturated), never a wrap to
 * the start; the answer carries the clamped position. */
static void
test_set_offset_extremes(void)
{
	struct sl_partition *p = open_part(1 << 20);
	struct sl_partition_res res;
	struct sl_wire_pub pub;
	struct sl_wire_chan_op op;
	uint64_t id, end_off;
	uint32_t i;
	int rc;

	for (i = 1; i <= 10; i++) {
		make_pub(&pub, 0, 1, i);
		sl_partition_publish(p, &pub, 0, 1000 + i, 0, 0, &res);
	}
	end_off = res.offset + SL_MEMLOG_REC_SIZE(pub.msg_len);
	CHECK(sl_partition_chan_create(p, "x", 0) == 0, "channel x");
	make_op(&op, "x");
	op.kind = SL_OFF_COUNT;
	op.value = UINT64_MAX;
	memset(&res, 0, sizeof(res));
	rc = sl_partition_chan_op(p, SL_OP_SET_OFFSET, &op, 1, 0, 0, &res);
	CHECK(rc == 0 && res.id == 11 && res.aux == 10 && res.offset == end_off,
	      "count 2^64-1: the end (next id %" PRIu64 ", offset %" PRIu64 "), not the start",
	      res.id, res.offset);
	memset(&seen, 0, sizeof(seen));
	CHECK(sl_partition_chan_reset(p, "x", SL_OFF_COUNT, UINT64_MAX, &id) == 0 && id == 11,
	      "control reset-offset count 2^64-1: the end (%" PRIu64 ")", id);
	op.value = UINT64_MAX - 1;
	rc = sl_partition_chan_op(p, SL_OP_SET_OFFSET, &op, 1, 0, 0, &res);
	CHECK(rc == 0 && res.id == 11, "count 2^64-2: the end");
	op.value = 0;
	rc = sl_partition_chan_op(p, SL_OP_SET_OFFSET, &op, 1, 0, 0, &res);
	CHECK(rc == 0 && res.id == 1 && res.aux == 0 && res.offset == 0, "count 0: the start");
	op.value = 4;
	rc = sl_partition_chan_op(p, SL_OP_SET_OFFSET, &op, 1, 0, 0, &res);
	CHECK(rc == 0 && res.id == 5, "count 4: next id 5");
	op.kind = SL_OFF_TIMESTAMP;
	op.value = UINT64_MAX;
	rc = sl_partition_chan_op(p, SL_OP_SET_OFFSET, &op, 1, 0, 0, &res);
	CHECK(rc == 0 && res.id == 11, "timestamp 2^64-1: the end");
	op.value = 0;
	rc = sl_partition_chan_op(p, SL_OP_SET_OFFSET, &op, 1, 0, 0, &res);
	CHECK(rc == 0 && res.id == 1, "timestamp 0: the start");
	op.kind = SL_OFF_OFFSET;
	op.value = UINT64_MAX;
	rc = sl_partition_chan_op(p, SL_OP_SET_OFFSET, &op, 1, 0, 0, &res);
	CHECK(rc == -SL_E_INVAL, "offset 2^64-1 (no message there): SL_E_INVAL (%d)", rc);
	op.value = end_off;
	rc = sl_partition_chan_op(p, SL_OP_SET_OFFSET, &op, 1, 0, 0, &res);
	CHECK(rc == 0 && res.id == 11, "offset of the end: the end");
	op.kind = SL_OFF_END;
	op.value = UINT64_MAX;
	rc = sl_partition_chan_op(p, SL_OP_SET_OFFSET, &op, 1, 0, 0, &res);
	CHECK(rc == 0 && res.id == 11, "end (value ignored): the end");
	sl_partition_close(p);
}

/* Channels a client's SUB creates are capped per partition and per creator address;
 * channels an operator creates are not, and joining an existing channel is never refused
 * by the caps. */
static void
test_sub_caps(void)
{
	const struct sl_partition_conf caps = {.sub_chans = 4, .sub_chans_per_src = 2};
	struct sl_partition *p = open_part_conf(1 << 20, &caps);
	struct sl_part_info *info = calloc(1, sizeof(*info));
	uint32_t sa, sb, sc, sa2;
	struct sl_session *a = mk_session(0x0a000011, &sa);
	struct sl_session *b = mk_session(0x0a000012, &sb);
	struct sl_session *c = mk_session(0x0a000013, &sc);
	struct sl_session *a2 = mk_session(0x0a000011, &sa2);
	uint32_t i, anon = 0;
	int rc;

	CHECK(do_sub(p, a, sa, "a1", 0, 1, 1) == 0 && do_sub(p, a, sa, "a2", 0, 1, 2) == 0,
	      "address A creates 2 channels by SUB");
	rc = do_sub(p, a, sa, "a3", 0, 1, 3);
	CHECK(rc == -SL_E_LIMIT, "a third from A: SL_E_LIMIT (per source, %d)", rc);
	rc = do_sub(p, a2, sa2, "a3", SL_WIRE_SUB_EPHEMERAL, 1, 4);
	CHECK(rc == -SL_E_LIMIT, "nor from another session of A's address, ephemeral too (%d)",
	      rc);
	CHECK(do_sub(p, b, sb, "b1", 0, 1, 5) == 0 &&
		      do_sub(p, b, sb, "b2#ephemeral", 0, 1, 6) == 0,
	      "address B creates 2 (one ephemeral)");
	rc = do_sub(p, c, sc, "c1", 0, 1, 7);
	CHECK(rc == -SL_E_LIMIT, "a fifth anywhere: SL_E_LIMIT (per partition, %d)", rc);
	CHECK(do_sub(p, c, sc, "a1", 0, 1, 8) == 0 && do_sub(p, a, sa, "b1", 0, 1, 9) == 0,
	      "joining existing channels is not creating: allowed");
	CHECK(sl_partition_chan_create(p, "op1", 0) == 0 &&
		      sl_partition_chan_create(p, "op2", 0) == 0,
	      "an operator's channels are not counted");
	sl_partition_info(p, info);
	for (i = 0; i < info->nchans; i++)
		anon += info->chans[i].anonymous;
	CHECK(info->nchans == 6 && anon == 4 && info->sub_chans_refused == 3,
	      "6 channels, 4 anonymous, 3 SUBs refused (%u, %u, %" PRIu64 ")", info->nchans,
	      anon, info->sub_chans_refused);
	/* the ephemeral one goes with its subscriber: room for one more */
	{
		struct sl_partition_res res;
		struct sl_wire_chan_op op;

		make_op(&op, "b2#ephemeral");
		CHECK(sl_partition_chan_op(p, SL_OP_CLS, &op, b->id, 0, 0, &res) == 0,
		      "CLS of the ephemeral channel deletes it");
	}
	CHECK(do_sub(p, c, sc, "c1", 0, 1, 10) == 0, "then C may create one");
	CHECK(sl_partition_chan_delete(p, "a1") == 0 && do_sub(p, a, sa, "a3", 0, 1, 11) == 0,
	      "an operator deletes a1: A may create another");
	free(info);
	sl_partition_close(p);

	/* 0: no limit of its own (the partition's channel table still bounds it) */
	{
		const struct sl_partition_conf none = {0};
		char name[16];
		uint32_t n = 0;

		p = open_part_conf(1 << 20, &none);
		for (i = 0; i < 40; i++) {
			snprintf(name, sizeof(name), "n%u", i);
			if (do_sub(p, a, sa, name, 0, 1, 100 + i) == 0)
				n++;
		}
		CHECK(n == SL_BROKER_MAX_CHANNELS, "no caps: up to the %u channels of a partition",
		      n);
		sl_partition_close(p);
	}
}

/* An anonymous durable channel nobody subscribes to expires after the idle time, so it
 * cannot hold the log forever; an operator's channel never does. Then retention frees the
 * log it held. */
static void
test_sub_idle_expiry(void)
{
	const struct sl_partition_conf idle = {.sub_chan_idle_ms = 100};
	const uint64_t ms = 1000000ull;
	struct sl_partition *p = open_part_conf(64 * 1024, &idle);
	struct sl_part_info *info = calloc(1, sizeof(*info));
	struct sl_partition_res res;
	struct sl_wire_chan_op op;
	struct sl_wire_pub pub;
	uint32_t sa, n = 0, more = 0;
	struct sl_session *a = mk_session(0x0a000021, &sa);
	int rc;

	CHECK(do_sub(p, a, sa, "live", 0, 64, 1) == 0 && do_sub(p, a, sa, "gone", 0, 64, 2) == 0,
	      "two channels by SUB");
	CHECK(sl_partition_chan_create(p, "op", 0) == 0, "and an operator's");
	make_op(&op, "gone");
	CHECK(sl_partition_chan_op(p, SL_OP_CLS, &op, a->id, ms, 0, &res) == 0,
	      "the subscriber of 'gone' leaves (durable: the channel stays)");
	CHECK(sl_partition_chan_delete(p, "op") == 0, "(the operator's channel is deleted: "
	      "it would hold the log too)");
	sl_partition_tick(p, 1 * ms);
	make_pub(&pub, 0, 1, 1);
	while ((rc = sl_partition_publish(p, &pub, 0, 1, 0, 0, &res)) == 0 && n < 100000)
		n++;
	CHECK(rc == -SL_E_FULL, "the log fills (%u messages)", n);
	CHECK(consume_all(p, a, "live", 2 * ms) == n, "'live' consumes all %u", n);
	sl_partition_tick(p, 50 * ms);
	CHECK(sl_partition_publish(p, &pub, 0, 1, 0, 0, &res) == -SL_E_FULL,
	      "'gone' (idle 49 ms) still holds the log: FULL");
	sl_partition_info(p, info);
	CHECK(info->nchans == 2 && info->sub_chans_expired == 0, "both channels still there");
	/* SET_OFFSET without subscribing is a use: the idle time restarts */
	make_op(&op, "gone");
	op.kind = SL_OFF_COUNT;
	op.value = 0;
	CHECK(sl_partition_chan_op(p, SL_OP_SET_OFFSET, &op, a->id, 90 * ms, 0, &res) == 0,
	      "SET_OFFSET on 'gone' at 90 ms");
	sl_partition_tick(p, 150 * ms);
	sl_partition_info(p, info);
	CHECK(info->nchans == 2, "at 150 ms 'gone' was used 60 ms ago: kept");
	sl_partition_tick(p, 189 * ms);
	sl_partition_info(p, info);
	CHECK(info->nchans == 2, "at 189 ms: kept");
	sl_partition_tick(p, 191 * ms);
	sl_partition_info(p, info);
	CHECK(info->nchans == 1 && strcmp(info->chans[0].name, "live") == 0 &&
		      info->sub_chans_expired == 1,
	      "at 191 ms (idle 101 ms): 'gone' deleted, 'live' (subscribed) kept");
	while (sl_partition_publish(p, &pub, 0, 1, 0, 0, &res) == 0 && more < 100000)
		more++;
	CHECK(more > n / 2, "the log it held is free again: %u more accepted", more);
	sl_partition_tick(p, 10000 * ms);
	sl_partition_info(p, info);
	CHECK(info->nchans == 1, "a subscribed anonymous channel never expires");
	free(info);
	sl_partition_close(p);

	/* without an idle time nothing expires */
	p = open_part_conf(64 * 1024, NULL);
	CHECK(do_sub(p, a, sa, "keep", 0, 1, 3) == 0, "a channel by SUB (no idle time)");
	make_op(&op, "keep");
	sl_partition_chan_op(p, SL_OP_CLS, &op, a->id, ms, 0, &res);
	sl_partition_tick(p, 1 * ms);
	sl_partition_tick(p, 3600000 * ms);
	info = calloc(1, sizeof(*info));
	sl_partition_info(p, info);
	CHECK(info->nchans == 1 && info->chans[0].anonymous && info->chans[0].idle_ms >= 3599999,
	      "idle an hour, kept (idle_ms %" PRIu64 ")", info->chans[0].idle_ms);
	free(info);
	sl_partition_close(p);
}

/* Memory only: a channel that is behind holds the log (nothing is dropped), so publishes
 * get the temporary SL_E_FULL; once it consumes, the next tick frees the log and
 * publishes are accepted again. Small (24-byte) bodies fill the index first: the same. */
static void
test_behind_backpressure(void)
{
	struct sl_partition *p = open_part(256 * 1024);
	struct sl_partition_res res;
	struct sl_wire_pub pub;
	uint32_t sa, n = 0, more = 0, round;
	struct sl_session *a = mk_session(0x0a000031, &sa);
	const char body[24] = "twenty-four byte body..";
	int rc = 0;

	make_pub(&pub, 0, 1, 1);
	pub.msg = (const uint8_t *)body;
	pub.msg_len = sizeof(body);
	CHECK(do_sub(p, a, sa, "slow", 0, 64, 1) == 0, "a consumer");
	for (round = 0; round < 3; round++) {
		n = 0;
		/* the log grows ahead of need on the control thread (sl_partition_grow): a
		 * FULL while it can still grow is the pause until it has */
		while (((rc = sl_partition_publish(p, &pub, 0, 1, 0, 0, &res)) == 0 ||
			(rc == -SL_E_FULL && sl_partition_grow(p, UINT64_MAX) > 0)) && n < 1000000)
			n += rc == 0;
		QCHECK(rc == -SL_E_FULL && n > 1000, "round %u: FULL after %u", round, n);
		sl_partition_tick(p, (round + 1) * 2000000ull);
		res.why = NULL;
		QCHECK(sl_partition_publish(p, &pub, 0, 1, 0, 0, &res) == -SL_E_FULL &&
			       res.why != NULL && strstr(res.why, "a channel is behind") != NULL,
		       "round %u: still FULL while the consumer is behind, and says so", round);
		QCHECK(consume_all(p, a, "slow", (round + 1) * 2000000ull) == n,
		       "round %u: it consumes %u", round, n);
		sl_partition_tick(p, (round + 1) * 2000000ull + 1000000);
		more = 0;
		while (sl_partition_publish(p, &pub, 0, 1, 0, 0, &res) == 0 && more < 10)
			more++;
		QCHECK(more == 10, "round %u: accepting again after it consumed", round);
		consume_all(p, a, "slow", (round + 1) * 2000000ull + 1000000);
		sl_partition_tick(p, (round + 1) * 2000000ull + 1500000);
	}
	CHECK(n_fail == 0, "3 rounds: FULL while behind, accepting once consumed (24-byte "
	      "bodies, %u a round)", n);
	sl_partition_close(p);
}

int
main(int argc, char **argv)
{
	struct sl_session_conf sc = {.max_sessions = 16, .socket_id = SOCKET_ID_ANY};

	(void)argc;
	if (fx_eal_init(argv[0], "part", 2) != 0)
		return 1;
	sc.timeout_tsc = rte_get_tsc_hz() * 60;
	sessions = sl_session_open(&sc);
	if (sessions == NULL)
		return 1;
	meta.leader = 1;
	meta.nreplicas = 1;
	meta.nisr = 1;
	meta.replicas[0] = meta.isr[0] = 1;
	topic.name_len = 1;
	topic.name[0] = 't';
	cpart.topic = &topic;
	cpart.meta = &meta;
	test_publish();
	test_producer();
	test_producer_restart();
	test_disk_error_after_sync();
	test_producer_forged();
	test_full();
	test_grow_kick();
	test_channels();
	test_set_offset_extremes();
	test_sub_caps();
	test_sub_idle_expiry();
	test_behind_backpressure();
	sl_session_close(sessions);
	rte_eal_cleanup();
	return check_report();
}
