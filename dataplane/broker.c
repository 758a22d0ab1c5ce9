/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_log.h>
#include <rte_malloc.h>
#include <rte_ring.h>
#include <urcu-qsbr.h>

#include "broker.h"
#include "err.h"
#include "name.h"
#include "ptab.h"
#include "tstore.h"
#include "wire.h"
#include "worker.h"

RTE_LOG_REGISTER_SUFFIX(sl_broker_logtype, broker, INFO);
#define BLOG(level, fmt, ...) \
	rte_log(RTE_LOG_##level, sl_broker_logtype, "broker: " fmt "\n", ##__VA_ARGS__)

#define CMD_TIMEOUT_MS 2000

struct sl_broker {
	struct sl_broker_conf conf;
	struct sl_coord *coord;
	struct sl_session_table *sessions;
	struct rte_ring *autocreate;
	struct rte_ring *viewreq;	/* workers -> control: ISR changes (membership seam) */
	struct sl_worker *workers[SL_BROKER_MAX_WORKERS];
	uint16_t next_owner;
	int started;
	uint32_t loaded;	/* topics recreated from the data directory */
	uint32_t skipped;	/* entries of the data directory left as they are */
	struct sl_auth_table *auth;	/* RCU pointer: client tokens; NULL: open mode */
	/* topics auto-created per client address, in buckets (a hash of the address: two
	 * addresses may share a bucket, which only makes their limit shared). Control
	 * thread */
	uint32_t auto_src[SL_SESSION_SRC_BUCKETS];
	int grow_fd;	/* eventfd: partitions whose logs want to grow (sl_partition_conf) */
};

static uint32_t instance;

/* A session's window must be honoured by every table that tells a retry from a new
 * request: the idempotency window (SL_IDEM_WINDOW seqs per session and worker) and the
 * producer table (SL_PTAB_SEQS publishes per producer and partition). The client keeps
 * its seqs in flight within window of each other (docs/protocol.md section 8, rule 5). */
_Static_assert(SL_PTAB_SEQS >= SL_IDEM_WINDOW - 1, "the producer table covers any window");

static int
check_conf(const struct sl_broker_conf *c)
{
	if (c->nworkers == 0 || c->nworkers > SL_BROKER_MAX_WORKERS || c->nports == 0 ||
	    c->nports > SL_BROKER_MAX_PORTS || c->pool == NULL || c->log_bytes < 65536 ||
	    c->max_msg == 0 || c->window == 0 || c->window >= SL_IDEM_WINDOW ||
	    c->window > SL_PTAB_SEQS ||
	    c->max_sessions == 0 || c->chan_window == 0 ||
	    (c->chan_window & (c->chan_window - 1)) != 0 || c->msg_timeout_ms == 0 ||
	    c->session_timeout_ms == 0)
		return -EINVAL;
	return 0;
}

/* Which port replica datagrams to each node leave by: the first port whose subnet
 * (--ip a.b.c.d/len) holds the node's address, else port 0. */
static void
route_nodes(struct sl_broker_conf *c)
{
	struct sl_broker_node *n;
	const uint8_t *a;
	uint32_t i;
	uint16_t pi;

	for (i = 0; i < c->nnodes; i++) {
		n = &c->nodes[i];
		n->pi = 0;
		for (pi = 0; pi < c->nports; pi++) {
			const struct sl_broker_port *p = &c->ports[pi];

			if (p->netmask != 0 && (n->ip & p->netmask) == (p->nif.ip & p->netmask)) {
				n->pi = pi;
				break;
			}
		}
		if (n->id == c->node_id)
			continue;
		a = (const uint8_t *)&n->ip;
		BLOG(INFO, "replication to node %u (%u.%u.%u.%u:%u) through port %u (%s)%s",
		     n->id, a[0], a[1], a[2], a[3], n->port, n->pi, c->ports[n->pi].name,
		     pi == c->nports ? ": no port's subnet holds it, the first port" : "");
	}
}

int
sl_broker_node_add(struct sl_broker *b, uint32_t id, uint32_t ip, uint16_t port)
{
	struct sl_broker_conf *c = &b->conf;
	struct sl_broker_conf one;
	uint32_t i;

	if (c->repl_port == 0 || id == 0 || port == 0)
		return -EINVAL;
	for (i = 0; i < c->nnodes; i++)
		if (c->nodes[i].id == id)
			return c->nodes[i].ip == ip && c->nodes[i].port == port ? 1 : -EEXIST;
	if (c->nnodes == SL_BROKER_MAX_NODES)
		return -ENOSPC;
	/* route the new entry alone (route_nodes works on a table) */
	memcpy(&one, c, offsetof(struct sl_broker_conf, nodes));
	one.nnodes = 1;
	one.nodes[0] = (struct sl_broker_node){.id = id, .ip = ip, .port = port};
	route_nodes(&one);
	c->nodes[c->nnodes] = one.nodes[0];
	__atomic_store_n(&c->nnodes, c->nnodes + 1, __ATOMIC_RELEASE);
	return 0;
}

/* The kernel's MemAvailable, in bytes (0 when unknown). */
static uint64_t
mem_available(void)
{
	unsigned long long kb = 0, v;
	char line[128];
	FILE *f = fopen("/proc/meminfo", "r");

	if (f == NULL)
		return 0;
	while (fgets(line, sizeof(line), f) != NULL)
		if (sscanf(line, "MemAvailable: %llu kB", &v) == 1)
			kb = v;
	fclose(f);
	return (uint64_t)kb * 1024;
}

/* SL_BROKER_LOG_BUDGET_AUTO: 3/4 of the memory the kernel has available once the broker is
 * open (logs and partition tables are ordinary memory, not DPDK's hugepage heap). */
static uint64_t
auto_log_budget(void)
{
	uint64_t avail = mem_available() / 4 * 3;

	return avail != 0 ? avail : 1;	/* 0 would mean no budget */
}

/* sl_persist_set_notify's callback: persistence lcore */
static void
wake_workers(void *arg)
{
	struct sl_broker *b = arg;
	uint16_t i;

	for (i = 0; i < b->conf.nworkers; i++)
		sl_worker_wake(b->workers[i]);
}

struct sl_broker *
sl_broker_open(const struct sl_broker_conf *conf)
{
	struct sl_broker *b = NULL;
	struct sl_coord_conf cc = {0};
	struct sl_session_conf sc = {0};
	char name[RTE_RING_NAMESIZE];
	uint32_t id = instance++;
	uint16_t i, j;

	if (conf == NULL || check_conf(conf) != 0 ||
	    (conf->data_dir != NULL && conf->persist == NULL)) {
		rte_errno = EINVAL;
		return NULL;
	}
	b = rte_zmalloc("sl_broker", sizeof(*b), RTE_CACHE_LINE_SIZE);
	if (b == NULL)
		goto nomem;
	b->conf = *conf;
	b->conf.auth = NULL;	/* b->auth is the table in use */
	b->grow_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (b->grow_fd < 0)
		goto nomem;
	route_nodes(&b->conf);
	cc.node_id = conf->node_id;
	cc.max_topics = conf->max_topics;
	cc.mem_budget = conf->log_budget == SL_BROKER_LOG_BUDGET_AUTO ? 0 : conf->log_budget;
	b->coord = sl_coord_open(&cc);
	sc.max_sessions = conf->max_sessions;
	sc.max_per_source = conf->max_sessions_per_source;
	sc.timeout_tsc = rte_get_tsc_hz() / 1000 * conf->session_timeout_ms;
	sc.socket_id = conf->socket_id;
	b->sessions = sl_session_open(&sc);
	snprintf(name, sizeof(name), "sl_autocr%u", id);
	b->autocreate = rte_ring_create(name, 128, conf->socket_id, RING_F_SC_DEQ);
	snprintf(name, sizeof(name), "sl_viewrq%u", id);
	b->viewreq = rte_ring_create(name, 128, conf->socket_id, RING_F_SC_DEQ);
	if (b->coord == NULL || b->sessions == NULL || b->autocreate == NULL ||
	    b->viewreq == NULL)
		goto nomem;
	for (i = 0; i < conf->nworkers; i++) {
		struct sl_worker *w = rte_zmalloc_socket("sl_worker", sizeof(*w),
							 RTE_CACHE_LINE_SIZE, conf->socket_id);

		if (w == NULL)
			goto nomem;
		b->workers[i] = w;
		w->bell.fd = -1;
		w->b = b;
		w->conf = &b->conf;
		w->idx = i;
		w->lcore = conf->worker_lcores[i];
		w->peers = b->workers;
		w->coord = b->coord;
		w->persist = conf->data_dir != NULL ? conf->persist : NULL;
		w->sessions = b->sessions;
		w->auth = &b->auth;
		w->autocreate = b->autocreate;
		snprintf(name, sizeof(name), "sl_acdone%u_%u", id, i);
		w->acdone = rte_ring_create(name, 128, conf->socket_id,
					    RING_F_SP_ENQ | RING_F_SC_DEQ);
		if (w->acdone == NULL)
			goto nomem;
		w->viewreq = b->viewreq;
		if (sl_worker_setup(w) != 0)
			goto nomem;
		w->idem = rte_zmalloc_socket("sl_idem", sizeof(*w->idem) * conf->max_sessions,
					     RTE_CACHE_LINE_SIZE, conf->socket_id);
		w->parts = rte_zmalloc_socket("sl_wparts", sizeof(*w->parts) * SL_WORKER_MAX_PARTS,
					      RTE_CACHE_LINE_SIZE, conf->socket_id);
		snprintf(name, sizeof(name), "sl_cmd%u_%u", id, i);
		w->cmd = rte_ring_create(name, 64, conf->socket_id, RING_F_SP_ENQ | RING_F_SC_DEQ);
		if (w->idem == NULL || w->parts == NULL || w->cmd == NULL)
			goto nomem;
	}
	/* one SPSC ring per ordered pair of workers for software dispatch */
	for (i = 0; i < conf->nworkers; i++) {
		for (j = 0; j < conf->nworkers; j++) {
			if (i == j)
				continue;
			snprintf(name, sizeof(name), "sl_fwd%u_%u_%u", id, j, i);
			b->workers[i]->in[j] = rte_ring_create(name, 1024, conf->socket_id,
							       RING_F_SP_ENQ | RING_F_SC_DEQ);
			if (b->workers[i]->in[j] == NULL)
				goto nomem;
		}
	}
	/* workers 1.. hand worker 0 their frames for ports with a single TX queue */
	for (j = 1; j < conf->nworkers; j++) {
		snprintf(name, sizeof(name), "sl_txh%u_%u", id, j);
		b->workers[0]->txin[j] = rte_ring_create(name, 2048, conf->socket_id,
							 RING_F_SP_ENQ | RING_F_SC_DEQ);
		if (b->workers[0]->txin[j] == NULL)
			goto nomem;
	}
	if (conf->log_budget == SL_BROKER_LOG_BUDGET_AUTO) {
		/* what the broker itself needs is allocated by now: the rest is for logs */
		b->conf.log_budget = auto_log_budget();
		sl_coord_set_budget(b->coord, b->conf.log_budget);
	}
	/* publishes held for the disk are answered by the worker that holds them: the
	 * persistence lcore rings the workers' bells after each write or sync, so a napping
	 * worker answers then, not at the end of its sleep. The persistence lcore must stop
	 * (sl_persist_close) before sl_broker_close, as sluiced does. */
	if (conf->data_dir != NULL)
		sl_persist_set_notify(conf->persist, wake_workers, b);
	b->auth = conf->auth;
	return b;
nomem:
	sl_broker_close(b);
	rte_errno = ENOMEM;
	return NULL;
}

int
sl_broker_start(struct sl_broker *b)
{
	uint16_t i;
	int rc;

	for (i = 0; i < b->conf.nworkers; i++) {
		rc = rte_eal_remote_launch(sl_worker_main, b->workers[i], b->workers[i]->lcore);
		if (rc != 0) {
			BLOG(ERR, "cannot launch worker %u on lcore %u: %s", i,
			     b->workers[i]->lcore, rte_strerror(-rc));
			return rc;
		}
	}
	b->started = 1;
	return 0;
}

void
sl_broker_stop(struct sl_broker *b)
{
	uint16_t i;

	__atomic_store_n(&sl_broker_quit, 1, __ATOMIC_RELEASE);
	if (!b->started)
		return;
	rcu_thread_offline();
	for (i = 0; i < b->conf.nworkers; i++)
		rte_eal_wait_lcore(b->workers[i]->lcore);
	rcu_thread_online();
	b->started = 0;
}

static int
free_topic_cb(void *arg, struct sl_topic *t)
{
	struct sl_broker *b = arg;
	uint16_t p;

	sl_coord_topic_del(b->coord, t);
	for (p = 0; p < t->nparts; p++) {
		sl_partition_close(t->parts[p].state);
	}
	sl_coord_topic_free(t);
	return 0;
}

void
sl_broker_close(struct sl_broker *b)
{
	uint16_t i, j;
	void *obj;

	if (b == NULL)
		return;
	sl_auth_free(b->auth);	/* workers are stopped */
	if (b->grow_fd > 0)
		close(b->grow_fd);
	if (b->coord != NULL) {
		/* workers are stopped: nobody reads the table any more */
		sl_coord_foreach(b->coord, free_topic_cb, b);
		sl_coord_close(b->coord);
	}
	for (i = 0; i < SL_BROKER_MAX_WORKERS; i++) {
		struct sl_worker *w = b->workers[i];

		if (w == NULL)
			continue;
		for (j = 0; j < SL_BROKER_MAX_WORKERS; j++) {
			struct rte_mbuf *m;

			if (w->in[j] == NULL)
				continue;
			while (rte_ring_dequeue(w->in[j], (void **)&m) == 0)
				rte_pktmbuf_free(m);
			rte_ring_free(w->in[j]);
		}
		for (j = 0; j < SL_BROKER_MAX_WORKERS; j++) {
			struct rte_mbuf *m;

			if (w->txin[j] == NULL)
				continue;
			while (rte_ring_dequeue(w->txin[j], (void **)&m) == 0)
				rte_pktmbuf_free(m);
			rte_ring_free(w->txin[j]);
		}
		if (w->acdone != NULL) {
			while (rte_ring_dequeue(w->acdone, &obj) == 0) {
				rte_pktmbuf_free(((struct sl_wautocreate *)obj)->m);
				rte_free(obj);
			}
			rte_ring_free(w->acdone);
		}
		rte_ring_free(w->cmd);
		sl_worker_teardown(w);
		rte_free(w->parts);
		rte_free(w->idem);
		rte_free(w);
	}
	if (b->autocreate != NULL) {
		while (rte_ring_dequeue(b->autocreate, &obj) == 0) {
			rte_pktmbuf_free(((struct sl_wautocreate *)obj)->m);
			rte_free(obj);
		}
		rte_ring_free(b->autocreate);
	}
	if (b->viewreq != NULL) {
		while (rte_ring_dequeue(b->viewreq, &obj) == 0)
			rte_free(obj);
		rte_ring_free(b->viewreq);
	}
	sl_session_close(b->sessions);
	rte_free(b);
}

static uint64_t
mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Run a command on a worker and wait for it. The worker may be sleeping (adaptive idle)
 * for up to idle_max_us (a blocked interrupt idle is woken by its bell), so this polls
 * with short sleeps, offline for RCU. The wait is bounded by the clock (a usleep(50)
 * sleeps far longer on a loaded machine), and ends at once when the process is quitting
 * and the worker has left its loop: the quit flag stops the workers as soon as a signal
 * sets it, while the control thread may still be in the middle of a pass that asks them
 * (10,000 partitions' admin pass took 53 s to stop). */
static int
run_cmd(struct sl_broker *b, uint16_t worker, struct sl_wcmd *cmd)
{
	struct sl_worker *w = b->workers[worker];
	uint64_t deadline;

	cmd->done = 0;
	if (!b->started) {
		/* before start (or after stop) the control thread owns everything */
		return -EAGAIN;
	}
	if (rte_ring_sp_enqueue(w->cmd, cmd) != 0)
		return -EBUSY;
	sl_worker_wake(w);
	deadline = mono_ms() + CMD_TIMEOUT_MS;
	rcu_thread_offline();
	while (!__atomic_load_n(&cmd->done, __ATOMIC_ACQUIRE)) {
		/* in both cases the command stays queued and the caller must not free it:
		 * leak it rather than corrupt memory */
		if (__atomic_load_n(&sl_broker_quit, __ATOMIC_ACQUIRE) &&
		    rte_eal_get_lcore_state(w->lcore) != RUNNING) {
			rcu_thread_online();
			return -ETIMEDOUT;	/* stopped: nobody will answer (callers treat it
						 * as a time-out: the command is not theirs) */
		}
		if (mono_ms() > deadline) {
			rcu_thread_online();
			BLOG(ERR, "worker %u did not answer a command in %u ms", worker,
			     CMD_TIMEOUT_MS);
			return -ETIMEDOUT;
		}
		usleep(50);
	}
	rcu_thread_online();
	return cmd->result;
}

static struct sl_wcmd *
cmd_new(enum sl_wcmd_op op, struct sl_partition *p)
{
	struct sl_wcmd *c = calloc(1, sizeof(*c));

	if (c != NULL) {
		c->op = op;
		c->p = p;
	}
	return c;
}

static int
run_cmd_free(struct sl_broker *b, uint16_t worker, struct sl_wcmd *cmd)
{
	int rc = run_cmd(b, worker, cmd);

	if (rc != -ETIMEDOUT)
		free(cmd);
	return rc;
}

int
sl_broker_viewreq_take(struct sl_broker *b, struct sl_wviewreq *out)
{
	void *obj;

	if (rte_ring_sc_dequeue(b->viewreq, &obj) != 0)
		return 0;
	memcpy(out, obj, sizeof(*out));
	rte_free(obj);
	return 1;
}

static uint32_t
src_bucket(uint32_t ip)
{
	return (ip * 0x9E3779B1u) >> (32 - SL_SESSION_SRC_BITS);
}

/* A worker's auto-creation request: create the topic (unless it exists by now) and hand
 * the publish that asked back to that worker with the outcome, which it answers. One
 * client address creates at most auto_topics_per_src topics (SL_E_LIMIT beyond). */
static void
auto_create(struct sl_broker *b, struct sl_wautocreate *a)
{
	uint32_t *per = &b->auto_src[src_bucket(a->src_ip)];
	const uint8_t *ip = (const uint8_t *)&a->src_ip;
	struct sl_topic *t;
	int rc = 0;

	t = sl_coord_topic_find(b->coord, a->topic, (uint32_t)strlen(a->topic));
	a->why = NULL;
	if (t == NULL && b->conf.auto_topics_per_src != 0 &&
	    *per >= b->conf.auto_topics_per_src) {
		rc = -SL_E_LIMIT;
		a->why = "too many topics auto-created from this address";
		BLOG(WARNING, "auto-creation of topic %s refused: %u.%u.%u.%u created %u topics "
			      "(--auto-topics-per-source)", a->topic, ip[0], ip[1], ip[2], ip[3],
		     *per);
	} else if (t == NULL) {
		rc = sl_broker_topic_create(b, a->topic, b->conf.auto_create_parts,
					    SL_COORD_TOPIC_AUTO, NULL);
		t = rc == 0 ? sl_coord_topic_find(b->coord, a->topic,
						  (uint32_t)strlen(a->topic)) : NULL;
		if (t != NULL) {
			t->auto_src = a->src_ip;
			(*per)++;
		}
		if (rc == 0)
			BLOG(INFO, "auto-created topic %s (%u partitions) for %u.%u.%u.%u",
			     a->topic, b->conf.auto_create_parts, ip[0], ip[1], ip[2], ip[3]);
		else
			BLOG(WARNING, "auto-creation of topic %s refused: %s", a->topic,
			     sl_strerror(rc));
	}
	/* the answer is an error code of the protocol */
	a->rc = rc == 0 || (-rc > SL_E_BASE && -rc < SL_E_MAX) ? rc : -SL_E_INTERNAL;
	if (a->worker >= b->conf.nworkers ||
	    rte_ring_sp_enqueue(b->workers[a->worker]->acdone, a) != 0) {
		/* cannot happen (the ring holds more than can be asked): the client retries */
		rte_pktmbuf_free(a->m);
		rte_free(a);
		return;
	}
	sl_worker_wake(b->workers[a->worker]);
}

struct grow_walk {
	struct sl_broker *b;
	uint32_t grew;
};

/* Every partition of a topic: its memory grown ahead of need, within the budget. */
static int
grow_topic_cb(void *arg, struct sl_topic *t)
{
	struct grow_walk *gw = arg;
	uint16_t i;

	for (i = 0; i < t->nparts; i++) {
		struct sl_partition *p = t->parts[i].state;
		int64_t n;

		if (p == NULL)
			continue;
		n = sl_partition_grow(p, sl_coord_mem_room(gw->b->coord));
		if (n > 0) {
			sl_coord_topic_grew(gw->b->coord, t, (uint64_t)n);
			gw->grew++;
		}
	}
	return 0;
}

int
sl_broker_grow_fd(const struct sl_broker *b)
{
	return b->grow_fd;
}

int
sl_broker_tick(struct sl_broker *b)
{
	int n = (int)sl_session_expire(b->sessions, rte_get_tsc_cycles());
	struct grow_walk gw = {.b = b};
	uint64_t kicks;
	void *obj;

	/* the kicks that woke us (they are all served by the walk below) */
	if (read(b->grow_fd, &kicks, sizeof(kicks)) < 0)
		kicks = 0;
	sl_coord_foreach(b->coord, grow_topic_cb, &gw);
	n += (int)gw.grew;

	while (rte_ring_sc_dequeue(b->autocreate, &obj) == 0) {
		auto_create(b, obj);
		n++;
	}
	return n;
}

static int
token_gone(void *arg, uint32_t uid)
{
	return sl_auth_by_uid(arg, uid) < 0;
}

int
sl_broker_auth_swap(struct sl_broker *b, struct sl_auth_table *t, uint32_t *revoked)
{
	struct sl_auth_table *old;
	uint32_t n;

	if (t == NULL || b->auth == NULL)
		return -EINVAL;
	old = rcu_xchg_pointer(&b->auth, t);
	/* after this, no worker holds the old table: every HELLO with one of its tokens has
	 * created its session, every later one finds the token in t or is refused */
	synchronize_rcu();
	n = sl_session_revoke_tokens(b->sessions, token_gone, t);
	sl_auth_free(old);
	BLOG(INFO, "client tokens: %u token(s) in use, %u session(s) of removed tokens revoked",
	     sl_auth_count(t), n);
	if (revoked != NULL)
		*revoked = n;
	return 0;
}

const struct sl_auth_table *
sl_broker_auth(const struct sl_broker *b)
{
	return b->auth;
}

const struct sl_broker_conf *
sl_broker_get_conf(const struct sl_broker *b)
{
	return &b->conf;
}

struct sl_coord *
sl_broker_coord(struct sl_broker *b)
{
	return b->coord;
}

struct sl_session_table *
sl_broker_sessions(struct sl_broker *b)
{
	return b->sessions;
}

const struct sl_worker_stats *
sl_broker_worker_stats(const struct sl_broker *b, uint16_t w)
{
	return w < b->conf.nworkers ? &b->workers[w]->st : NULL;
}

unsigned int
sl_broker_worker_lcore(const struct sl_broker *b, uint16_t w)
{
	return b->workers[w]->lcore;
}

/* Open partition i's store (recovering its disk log) and start writing it. */
static int
store_open(struct sl_broker *b, const char *name, uint16_t i,
	   const struct sl_persist_policy *pol, struct sl_pstore **out)
{
	char dir[4096];
	struct sl_pstore *st;

	*out = NULL;
	sl_tstore_part_dir(b->conf.data_dir, name, i, dir, sizeof(dir));
	st = sl_pstore_open(dir, name, i, pol, b->conf.segment_bytes);
	if (st == NULL) {
		BLOG(ERR, "topic %s partition %u: storage in %s: %s", name, i, dir,
		     sl_strerror(rte_errno));
		return -SL_E_IO;
	}
	*out = st;
	return 0;
}

/* A partition's run-time state, owned by worker `owner`, with store st (or NULL). */
static struct sl_partition *
part_open(struct sl_broker *b, uint16_t partid, uint16_t owner, struct sl_pstore *st)
{
	const struct sl_broker_conf *c = &b->conf;
	struct sl_partition_conf pc = {
		.partid = partid,
		.worker = owner,
		.socket_id = c->socket_id,
		.log_bytes = c->log_bytes,
		.max_msg = c->max_msg,
		.chan_window = c->chan_window,
		.msg_timeout_ms = c->msg_timeout_ms,
		.max_req_delay_ms = c->max_req_delay_ms,
		.node_id = c->node_id,
		.sub_chans = c->sub_chans,
		.sub_chans_per_src = c->sub_chans_per_src,
		.sub_chan_idle_ms = c->sub_chan_idle_ms,
		.store = st,
		.persist = b->workers[owner]->persist,
		.sessions = b->sessions,
		.grow_fd = b->grow_fd,
	};

	return sl_partition_open(&pc);
}

/* Stop writing and close the stores of states[0..n-1] (their workers let go of them). */
static void
stores_detach(struct sl_broker *b, void *const *states, uint16_t n)
{
	uint16_t i;

	for (i = 0; i < n; i++) {
		struct sl_pstore *st = states[i] != NULL ? sl_partition_store(states[i]) : NULL;

		if (st != NULL && st->log != NULL)
			sl_persist_detach(b->conf.persist, st);
	}
}

/* Take p out of a worker that is not running (attached directly, before start). */
static void
detach_direct(struct sl_worker *w, const struct sl_partition *p)
{
	uint32_t i;

	for (i = 0; i < w->nparts; i++) {
		if (w->parts[i] == p) {
			w->parts[i] = w->parts[--w->nparts];
			return;
		}
	}
}

uint64_t
sl_broker_topic_mem(const struct sl_broker *b, uint16_t nparts)
{
	(void)b;
	return (uint64_t)nparts * SL_PARTITION_OPEN_MEM;	/* grown later, on demand */
}

/* Create a topic: a new one (load 0: its directory in the data directory is made here and,
 * if the creation fails, removed), or one the data directory holds (load 1: its files are
 * never removed). */
static int
topic_make(struct sl_broker *b, const char *name, uint16_t nparts, uint32_t flags,
	   const struct sl_persist_policy *pol, int load)
{
	uint16_t owners[SL_COORD_MAX_PARTS];
	void *states[SL_COORD_MAX_PARTS];
	struct sl_topic *t = NULL;
	struct sl_pstore *st = NULL;
	uint8_t att[SL_COORD_MAX_PARTS] = {0};	/* attached to its worker */
	uint16_t i, wi, stored = 0;
	int rc, made_dir = 0;

	if (sl_name_check_str(name) != 0)
		return -SL_E_NAME;
	if (nparts == 0 || nparts > SL_COORD_MAX_PARTS ||
	    (b->conf.max_parts_per_topic && nparts > b->conf.max_parts_per_topic))
		return -SL_E_INVAL;
	if (sl_coord_topic_find(b->coord, name, (uint32_t)strlen(name)) != NULL)
		return -SL_E_EXISTS;
	if (pol == NULL)
		pol = &b->conf.policy;
	if (pol->durability == SL_PERSIST_DISK && b->conf.data_dir == NULL)
		return -SL_E_INVAL;
	/* room first: nothing is allocated or written for a topic that does not fit */
	if (sl_coord_room(b->coord, sl_broker_topic_mem(b, nparts)) != 0)
		return -SL_E_CAPACITY;
	if (b->conf.data_dir != NULL && !load) {
		rc = sl_tstore_create(b->conf.data_dir, name, nparts, pol);
		if (rc == -EEXIST) {
			BLOG(ERR, "topic %s: %s/%s exists but holds no loaded topic (see the "
			     "start log): move it out of the data directory to use the name",
			     name, b->conf.data_dir, name);
			return -SL_E_EXISTS;
		}
		if (rc != 0) {
			BLOG(ERR, "topic %s: cannot save its configuration in %s: %s", name,
			     b->conf.data_dir, sl_strerror(rc));
			return -SL_E_IO;
		}
		made_dir = 1;
	}
	memset(states, 0, sizeof(states));
	for (i = 0; i < nparts; i++) {
		owners[i] = b->next_owner;
		b->next_owner = (uint16_t)((b->next_owner + 1) % b->conf.nworkers);
		if (b->conf.data_dir != NULL) {
			rc = store_open(b, name, i, pol, &st);
			if (rc != 0)
				goto fail;
		}
		states[i] = part_open(b, i, owners[i], st);
		if (states[i] == NULL) {
			sl_pstore_close(st);
			rc = -ENOMEM;
			goto fail;
		}
		st = NULL;
		if (b->conf.repl_port != 0) {
			rc = sl_worker_partition_replicate(b->workers[owners[i]], states[i],
							   name);
			if (rc != 0)
				goto fail;
		}
	}
	/* the persistence lcore takes the stores before any worker can write to them */
	for (stored = 0; stored < nparts; stored++) {
		struct sl_pstore *ps = sl_partition_store(states[stored]);

		if (ps == NULL)
			continue;
		rc = sl_persist_attach(b->conf.persist, ps);
		if (rc != 0)
			goto fail;
	}
	t = sl_coord_topic_alloc(b->coord, name, nparts, owners, states, flags);
	if (t == NULL) {
		rc = -errno;
		goto fail;
	}
	t->mem = sl_broker_topic_mem(b, nparts);
	for (i = 0; i < nparts; i++)
		sl_partition_set_coord(states[i], &t->parts[i]);
	/* hand every partition to its worker before the topic becomes visible: one command
	 * per worker with all of its partitions (a round trip each would cost a worker's
	 * idle sleep per partition) */
	for (wi = 0; wi < SL_BROKER_MAX_WORKERS; wi++) {
		struct sl_partition **mine;
		struct sl_worker *w = b->workers[wi];
		struct sl_wcmd *c;
		uint32_t k = 0;

		for (i = 0; i < nparts; i++)
			k += owners[i] == wi;
		if (k == 0)
			continue;
		/* the list lives with the command (a wedged worker keeps both) */
		c = calloc(1, sizeof(*c) + k * sizeof(*mine));
		if (c == NULL) {
			rc = -ENOMEM;
			goto fail;
		}
		mine = (struct sl_partition **)(void *)(c + 1);
		for (i = 0, k = 0; i < nparts; i++)
			if (owners[i] == wi)
				mine[k++] = states[i];
		c->op = SL_WCMD_ATTACH;
		c->parts = mine;
		c->nparts = k;
		rc = run_cmd(b, wi, c);
		if (rc == -EAGAIN) {
			/* workers not running yet: attach directly */
			rc = k <= SL_WORKER_MAX_PARTS - w->nparts ? 0 : -SL_E_LIMIT;
			for (i = 0; rc == 0 && i < k; i++)
				w->parts[w->nparts++] = mine[i];
		}
		if (rc != -ETIMEDOUT)
			free(c);
		if (rc != 0)
			goto fail;
		for (i = 0; i < nparts; i++)
			att[i] |= owners[i] == wi;
	}
	rc = sl_coord_topic_add(b->coord, t);
	if (rc != 0)
		goto fail;
	BLOG(INFO, "topic %s created with %u partitions", name, nparts);
	return 0;
fail:
	for (i = 0; i < nparts; i++) {
		struct sl_wcmd *c;
		int r;

		if (!att[i])
			continue;
		c = cmd_new(SL_WCMD_DETACH, states[i]);
		r = c != NULL ? run_cmd_free(b, owners[i], c) : -ENOMEM;

		if (r == -EAGAIN)
			detach_direct(b->workers[owners[i]], states[i]);
		else if (r != 0)
			states[i] = NULL; /* the worker may still hold it: leak */
	}
	stores_detach(b, states, stored);
	for (i = 0; i < nparts; i++)
		sl_partition_close(states[i]);
	sl_coord_topic_free(t);
	if (made_dir) {
		int r = sl_tstore_remove(b->conf.data_dir, name);

		if (r != 0)
			BLOG(ERR, "topic %s: the creation failed and %s/%s could not be removed: "
			     "%s; remove it by hand", name, b->conf.data_dir, name,
			     sl_strerror(r));
	}
	/* memory that could not be had, or a worker with no room for another partition,
	 * is no room for this topic */
	if (rc == -ENOMEM || rc == -SL_E_LIMIT)
		rc = -SL_E_CAPACITY;
	return rc;
}

int
sl_broker_topic_create(struct sl_broker *b, const char *name, uint16_t nparts, uint32_t flags,
		       const struct sl_persist_policy *pol)
{
	return topic_make(b, name, nparts, flags, pol, 0);
}

/* One entry of the data directory at start: load the topic it holds, or say why not and
 * what to do; the node serves the others either way. */
static int
load_topic_cb(void *arg, const char *name, const char *skip)
{
	struct sl_broker *b = arg;
	const char *dir = b->conf.data_dir;
	struct sl_persist_policy pol;
	uint16_t nparts = 0;
	char why[256] = "";
	int rc;

	if (skip != NULL) {
		BLOG(WARNING, "data directory %s: '%s' skipped: %s, so not a topic; move it out "
		     "of the data directory", dir, name, skip);
		b->skipped++;
		return 0;
	}
	rc = sl_tstore_load(dir, name, &nparts, &pol, why, sizeof(why));
	if (rc != 0) {
		BLOG(ERR, "data directory %s: topic %s not loaded: %s; fix %s/%s/topic.conf or "
		     "move %s/%s out of the data directory, then restart", dir, name,
		     why[0] ? why : sl_strerror(rc), dir, name, dir, name);
		b->skipped++;
		return 0;
	}
	rc = topic_make(b, name, nparts, 0, &pol, 1);
	if (rc != 0) {
		BLOG(ERR, "data directory %s: topic %s not loaded: %s; %s", dir, name,
		     sl_strerror(rc),
		     rc == -SL_E_CAPACITY ?
			     "raise sluiced --max-topics or --log-budget-mb (or lower --log-mb), "
			     "then restart" :
		     rc == -SL_E_IO ?
			     "its partition storage is damaged (see above): repair it or move "
			     "the directory out of the data directory, then restart" :
			     "fix or move the directory out of the data directory, then restart");
		b->skipped++;
		return 0;
	}
	b->loaded++;
	return 0;
}

int
sl_broker_topics_load(struct sl_broker *b, uint32_t *skipped)
{
	int rc;

	b->loaded = 0;
	b->skipped = 0;
	if (skipped != NULL)
		*skipped = 0;
	if (b->conf.data_dir == NULL)
		return 0;
	rc = sl_tstore_foreach(b->conf.data_dir, load_topic_cb, b);
	if (skipped != NULL)
		*skipped = b->skipped;
	return rc < 0 ? rc : (int)b->loaded;
}

int
sl_broker_part_get_view(struct sl_broker *b, const char *topic, uint16_t part,
			struct sl_part_meta *m)
{
	struct sl_topic *t = sl_coord_topic_find(b->coord, topic, (uint32_t)strlen(topic));

	if (t == NULL)
		return -SL_E_TOPIC;
	if (part >= t->nparts)
		return -SL_E_PARTITION;
	*m = *rcu_dereference(t->parts[part].meta);
	return 0;
}

int
sl_broker_part_set_view(struct sl_broker *b, const char *topic, uint16_t part,
			const struct sl_part_meta *m)
{
	struct sl_topic *t = sl_coord_topic_find(b->coord, topic, (uint32_t)strlen(topic));
	const struct sl_part_meta *cur;
	uint8_t i, j;

	if (t == NULL)
		return -SL_E_TOPIC;
	if (part >= t->nparts)
		return -SL_E_PARTITION;
	if (m->nreplicas == 0 || m->nreplicas > SL_COORD_MAX_REPLICAS ||
	    m->nisr > m->nreplicas || m->epoch == 0)
		return -SL_E_INVAL;
	for (i = 0; i < m->nisr; i++) {
		for (j = 0; j < m->nreplicas && m->replicas[j] != m->isr[i]; j++)
			;
		if (j == m->nreplicas)
			return -SL_E_INVAL;
	}
	cur = rcu_dereference(t->parts[part].meta);
	/* session 0: the default of a new topic, no view installed yet: any view goes */
	if (cur->leader_session != 0 &&
	    (m->epoch < cur->epoch ||
	     (m->leader != cur->leader && (m->epoch == cur->epoch ||
					   m->leader_session == cur->leader_session))))
		return -SL_E_EPOCH;
	BLOG(INFO, "%s/%u: leader %u, epoch %u, session %" PRIu64 ", ISR %u of %u replicas%s",
	     topic, part, m->leader, m->epoch, m->leader_session, m->nisr, m->nreplicas,
	     m->writes_disabled ? ", writes disabled" : "");
	return sl_coord_part_set_meta(&t->parts[part], m);
}

int
sl_broker_storage_resume(struct sl_broker *b, const char *topic, int part, uint32_t timeout_ms)
{
	struct sl_topic *t = sl_coord_topic_find(b->coord, topic, (uint32_t)strlen(topic));
	uint16_t p, lo, hi;
	uint32_t waited = 0;
	int failing;

	if (t == NULL)
		return -SL_E_TOPIC;
	if (part >= (int)t->nparts)
		return -SL_E_PARTITION;
	lo = part < 0 ? 0 : (uint16_t)part;
	hi = part < 0 ? t->nparts : (uint16_t)(part + 1);
	for (p = lo; p < hi; p++) {
		struct sl_pstore *ps = sl_partition_store(t->parts[p].state);

		if (ps == NULL)
			return -SL_E_INVAL;
		if (sl_pstore_error(ps) != 0)
			sl_persist_resume(ps);
	}
	do {
		failing = 0;
		for (p = lo; p < hi; p++) {
			failing |= sl_pstore_error(sl_partition_store(t->parts[p].state)) != 0;
		}
		if (!failing)
			return 0;
		rcu_thread_offline();
		rte_delay_us_sleep(10000);
		rcu_thread_online();
		waited += 10;
	} while (waited < timeout_ms);
	return -SL_E_IO;
}

int
sl_broker_topic_delete(struct sl_broker *b, const char *name)
{
	struct sl_topic *t = sl_coord_topic_find(b->coord, name, (uint32_t)strlen(name));
	uint16_t p;
	int leak = 0;

	if (t == NULL)
		return -SL_E_TOPIC;
	if (t->auto_src != 0 && b->auto_src[src_bucket(t->auto_src)] > 0)
		b->auto_src[src_bucket(t->auto_src)]--;
	sl_coord_topic_del(b->coord, t);
	for (p = 0; p < t->nparts; p++) {
		struct sl_wcmd *c = cmd_new(SL_WCMD_DETACH, t->parts[p].state);

		if (c == NULL || run_cmd_free(b, t->parts[p].owner, c) == -ETIMEDOUT)
			leak = 1;
	}
	/* workers may still hold pointers from lookups of their current iteration */
	synchronize_rcu();
	if (leak) {
		BLOG(ERR, "topic %s: a worker did not detach; its memory is leaked", name);
		return 0;
	}
	for (p = 0; p < t->nparts; p++) {
		void *st = t->parts[p].state;

		stores_detach(b, &st, 1);
		sl_partition_close(st);
	}
	if (b->conf.data_dir != NULL) {
		int rc = sl_tstore_remove(b->conf.data_dir, name);

		if (rc != 0)
			BLOG(ERR, "topic %s: its files in %s could not all be removed: %s", name,
			     b->conf.data_dir, sl_strerror(rc));
	}
	sl_coord_topic_free(t);
	BLOG(INFO, "topic %s deleted", name);
	return 0;
}

/* Apply a channel command to one partition or all of them. */
static int
chan_cmd(struct sl_broker *b, const char *topic, int part, enum sl_wcmd_op op,
	 const char *chan, int ordered, uint8_t kind, uint64_t value, uint64_t *out_id)
{
	struct sl_topic *t = sl_coord_topic_find(b->coord, topic, (uint32_t)strlen(topic));
	uint16_t p, lo, hi;
	int rc = 0, first = 1;

	if (t == NULL)
		return -SL_E_TOPIC;
	if (sl_wire_check_name(chan, strlen(chan)) != 0)
		return -SL_E_NAME;
	if (part >= (int)t->nparts)
		return -SL_E_PARTITION;
	lo = part < 0 ? 0 : (uint16_t)part;
	hi = part < 0 ? t->nparts : (uint16_t)(part + 1);
	for (p = lo; p < hi; p++) {
		struct sl_wcmd *c = cmd_new(op, t->parts[p].state);
		int r;

		if (c == NULL)
			return -ENOMEM;
		snprintf(c->chan, sizeof(c->chan), "%s", chan);
		c->ordered = ordered;
		c->kind = kind;
		c->value = value;
		r = run_cmd(b, t->parts[p].owner, c);
		if (r == -ETIMEDOUT)
			return r;
		if (r == 0 && first && out_id != NULL)
			*out_id = c->out_id;
		if (r == 0)
			first = 0;
		free(c);
		if (r != 0 && rc == 0)
			rc = r;
	}
	return rc;
}

int
sl_broker_chan_create(struct sl_broker *b, const char *topic, int part, const char *chan,
		      int ordered)
{
	return chan_cmd(b, topic, part, SL_WCMD_CHAN_CREATE, chan, ordered, 0, 0, NULL);
}

int
sl_broker_chan_delete(struct sl_broker *b, const char *topic, int part, const char *chan)
{
	return chan_cmd(b, topic, part, SL_WCMD_CHAN_DELETE, chan, 0, 0, 0, NULL);
}

int
sl_broker_chan_reset(struct sl_broker *b, const char *topic, int part, const char *chan,
		     uint8_t kind, uint64_t value, uint64_t *next_id)
{
	struct sl_topic *t;
	struct sl_pstore *ps;
	uint64_t id;
	int rc;

	/* a position by offset or time may be older than memory holds: look it up on disk
	 * (through the reader thread) and hand the worker the message count */
	if (b->conf.data_dir == NULL || (kind != SL_OFF_OFFSET && kind != SL_OFF_TIMESTAMP))
		return chan_cmd(b, topic, part, SL_WCMD_CHAN_RESET, chan, 0, kind, value, next_id);
	t = sl_coord_topic_find(b->coord, topic, (uint32_t)strlen(topic));
	if (t == NULL)
		return -SL_E_TOPIC;
	if (part >= (int)t->nparts)
		return -SL_E_PARTITION;
	if (part < 0 && t->nparts > 1) {
		uint16_t p;

		for (p = 0; p < t->nparts; p++) {
			rc = sl_broker_chan_reset(b, topic, p, chan, kind, value,
						  p == 0 ? next_id : &id);
			if (rc != 0)
				return rc;
		}
		return 0;
	}
	ps = sl_partition_store(t->parts[part < 0 ? 0 : part].state);
	rc = sl_persist_find(b->conf.persist, ps,
			     kind == SL_OFF_OFFSET ? SL_DISKLOG_BY_OFFSET : SL_DISKLOG_BY_TIME, value,
			     &id);
	if (rc == -EINVAL)
		return -SL_E_INVAL;
	/* below the oldest retained message: start there (id is first_id) */
	if (rc != 0 && rc != -ENOENT)
		return -SL_E_IO;
	if (id > sl_pstore_written_id(ps))
		/* past what is on disk: memory knows */
		return chan_cmd(b, topic, part, SL_WCMD_CHAN_RESET, chan, 0, kind, value, next_id);
	return chan_cmd(b, topic, part, SL_WCMD_CHAN_RESET, chan, 0, SL_OFF_COUNT, id - 1,
			next_id);
}

int
sl_broker_topic_infos(struct sl_broker *b, struct sl_topic *t, struct sl_part_info *infos,
		      uint8_t *ok)
{
	uint16_t wi, i;
	int n = 0;

	memset(ok, 0, t->nparts);
	for (wi = 0; wi < SL_BROKER_MAX_WORKERS; wi++) {
		struct sl_wcmd *c;
		uint32_t k = 0;

		for (i = 0; i < t->nparts; i++)
			k += t->parts[i].owner == wi && t->parts[i].state != NULL;
		if (k == 0)
			continue;
		/* the lists live with the command (a wedged worker keeps them) */
		c = calloc(1, sizeof(*c) + k * (sizeof(*c->parts) + sizeof(*c->infos)));
		if (c == NULL)
			return -ENOMEM;
		c->op = SL_WCMD_PART_INFO;
		c->infos = (struct sl_part_info *)(void *)(c + 1);
		c->parts = (struct sl_partition **)(void *)(c->infos + k);
		for (i = 0, k = 0; i < t->nparts; i++)
			if (t->parts[i].owner == wi && t->parts[i].state != NULL)
				c->parts[k++] = t->parts[i].state;
		c->nparts = k;
		if (run_cmd(b, wi, c) == -ETIMEDOUT)
			continue;	/* leaked with the command */
		for (i = 0, k = 0; i < t->nparts; i++) {
			if (t->parts[i].owner != wi || t->parts[i].state == NULL)
				continue;
			infos[i] = c->infos[k++];
			ok[i] = 1;
			n++;
		}
		free(c);
	}
	return n;
}

/* Calling context: control thread. */
int
sl_broker_part_pos(struct sl_broker *b, const char *topic, uint16_t part, uint64_t *committed,
		   uint64_t *end_id)
{
	struct sl_topic *t = sl_coord_topic_find(b->coord, topic, (uint32_t)strlen(topic));

	if (t == NULL)
		return -SL_E_TOPIC;
	if (part >= t->nparts || t->parts[part].state == NULL)
		return -SL_E_PARTITION;
	return sl_partition_positions(t->parts[part].state, committed, end_id);
}

int
sl_broker_part_info(struct sl_broker *b, const char *topic, uint16_t part,
		    struct sl_part_info *info)
{
	struct sl_topic *t = sl_coord_topic_find(b->coord, topic, (uint32_t)strlen(topic));
	struct sl_wcmd *c;
	int rc;

	if (t == NULL)
		return -SL_E_TOPIC;
	if (part >= t->nparts)
		return -SL_E_PARTITION;
	c = cmd_new(SL_WCMD_PART_INFO, t->parts[part].state);
	if (c == NULL)
		return -ENOMEM;
	/* the worker writes into a buffer of ours: on timeout it may still do so later,
	 * so the buffer is leaked with the command in that case */
	c->info = malloc(sizeof(*info));
	if (c->info == NULL) {
		free(c);
		return -ENOMEM;
	}
	rc = run_cmd(b, t->parts[part].owner, c);
	if (rc == -ETIMEDOUT)
		return rc;
	if (rc == 0)
		*info = *c->info;
	free(c->info);
	free(c);
	return rc;
}

const char *
sl_broker_idle_name(enum sl_idle_mode m)
{
	switch (m) {
	case SL_IDLE_BUSY:
		return "busy";
	case SL_IDLE_ADAPTIVE:
		return "adaptive";
	case SL_IDLE_INTERRUPT:
		return "interrupt";
	case SL_IDLE_AUTO:
		return "auto";
	}
	return "?";
}
