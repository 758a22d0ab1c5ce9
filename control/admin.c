/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 */
#include <errno.h>
#include <stddef.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_telemetry.h>
#include <urcu-qsbr.h>

#include "admin.h"
#include "cluster.h"
#include "err.h"
#include "name.h"
#include "wire.h"

#define SNAP_MAX 4096
#define SL_ADMIN_VERSION "0.1.0"		/* partitions in the telemetry snapshot */

struct snap_part {
	char topic[SL_COORD_NAME_MAX + 1];
	uint16_t part;
	uint32_t leader;	/* the partition view at the snapshot (part meta) */
	uint8_t nreplicas;
	uint8_t nisr;
	struct sl_part_info info;
};

/*
 * DPDK 22.11 telemetry callbacks take no user argument, so the telemetry side needs one
 * file-scope handle to reach the broker; it is set once at registration and only read
 * under snap_lock (a control-plane mutex, never taken by a worker lcore).
 */
static struct admin {
	struct sl_broker *b;
	struct sl_persist *persist;
	struct sl_membership *ms;	/* topic create --replicas goes through it */
	uint64_t start_tsc;
	uint64_t next_snap_tsc;
	pthread_mutex_t snap_lock;
	uint32_t nsnap;
	struct snap_part *snap;
	struct snap_part *building;
	uint32_t nbuilding;
	/* worker busy ratio over the last snapshot interval (sl_admin_tick) */
	uint64_t prev_busy[SL_BROKER_MAX_WORKERS];
	uint64_t prev_total[SL_BROKER_MAX_WORKERS];
	double busy_ratio[SL_BROKER_MAX_WORKERS];
} adm = {.snap_lock = PTHREAD_MUTEX_INITIALIZER};

static const char *const op_names[SL_WIRE_OP_MAX] = {
	NULL, "hello", "pub", "mpub", "sub", "rdy", "fin", "req", "touch", "cls", "nop",
	"set_offset", "metadata", "mpub_part",
};

/* ---- helpers ---- */

static int
parse_int(const char *s, long lo, long hi, long *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 0);
	if (errno || end == s || *end || v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

static void
json_ip(struct sl_json *j, const char *key, uint32_t ip_be)
{
	const uint8_t *b = (const uint8_t *)&ip_be;
	char s[16];

	snprintf(s, sizeof(s), "%u.%u.%u.%u", b[0], b[1], b[2], b[3]);
	sl_json_str(j, key, s);
}

static void
json_mac(struct sl_json *j, const char *key, const uint8_t *m)
{
	char s[18];

	snprintf(s, sizeof(s), "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4],
		 m[5]);
	sl_json_str(j, key, s);
}

/* ---- status ---- */

static void
json_ports(struct sl_json *out, const struct sl_broker_conf *c, int with_stats)
{
	uint16_t i;

	sl_json_arr_open(out, "ports");
	for (i = 0; i < c->nports; i++) {
		const struct sl_broker_port *p = &c->ports[i];
		struct rte_eth_stats st;

		sl_json_obj_open(out, NULL);
		sl_json_str(out, "name", p->name);
		sl_json_u64(out, "port_id", p->port_id);
		json_ip(out, "ip", p->nif.ip);
		sl_json_u64(out, "prefix_len", (uint64_t)__builtin_popcount(p->netmask));
		json_mac(out, "mac", p->nif.mac);
		sl_json_u64(out, "udp_port", p->nif.udp_port_lo);
		sl_json_u64(out, "mtu", p->mtu);
		sl_json_u64(out, "rx_queues", p->nrxq);
		sl_json_bool(out, "tx_cksum_offload", p->tx_flags != 0);
		sl_json_bool(out, "rx_cksum_offload", p->rx_flags != 0);
		if (with_stats && rte_eth_stats_get(p->port_id, &st) == 0) {
			sl_json_u64(out, "rx_packets", st.ipackets);
			sl_json_u64(out, "tx_packets", st.opackets);
			sl_json_u64(out, "rx_bytes", st.ibytes);
			sl_json_u64(out, "tx_bytes", st.obytes);
			sl_json_u64(out, "rx_missed", st.imissed);
			sl_json_u64(out, "rx_errors", st.ierrors);
			sl_json_u64(out, "tx_errors", st.oerrors);
			sl_json_u64(out, "rx_nombuf", st.rx_nombuf);
		}
		sl_json_obj_close(out);
	}
	sl_json_arr_close(out);
}

static int
cmd_status(void *arg, int argc, char **argv, struct sl_json *out)
{
	struct sl_broker *b = arg;
	const struct sl_broker_conf *c = sl_broker_get_conf(b);
	struct sl_coord *co = sl_broker_coord(b);
	uint64_t budget;
	uint32_t maxt;
	uint16_t w;

	sl_coord_limits(co, &maxt, &budget);
	sl_json_str(out, "version", SL_ADMIN_VERSION);
	sl_json_u64(out, "node_id", c->node_id);
	sl_json_u64(out, "uptime_s", (rte_get_tsc_cycles() - adm.start_tsc) / rte_get_tsc_hz());
	sl_json_str(out, "idle", sl_broker_idle_name(c->idle));
	sl_json_str(out, "durability", "memory");
	sl_json_u64(out, "topics", sl_coord_topic_count(co));
	sl_json_u64(out, "max_topics", maxt);
	sl_json_u64(out, "log_budget_bytes", budget);
	sl_json_u64(out, "log_reserved_bytes", sl_coord_mem_used(co));
	sl_json_u64(out, "sessions", sl_session_count(sl_broker_sessions(b)));
	sl_json_u64(out, "max_sessions", c->max_sessions);
	sl_json_u64(out, "max_msg", c->max_msg);
	sl_json_u64(out, "window", c->window);
	sl_json_u64(out, "log_bytes_per_partition", c->log_bytes);
	sl_json_bool(out, "auto_create", c->auto_create);
	sl_json_u64(out, "auto_topics_per_source", c->auto_topics_per_src);
	/* "open": any client that reaches the port may publish and consume */
	sl_json_str(out, "client_auth", sl_broker_auth(b) != NULL ? "tokens" : "open");
	if (sl_broker_auth(b) != NULL)
		sl_json_u64(out, "client_tokens", sl_auth_count(sl_broker_auth(b)));
	sl_json_obj_open(out, "lcores");
	sl_json_u64(out, "control", rte_get_main_lcore());
	sl_json_arr_open(out, "workers");
	for (w = 0; w < c->nworkers; w++)
		sl_json_u64(out, NULL, sl_broker_worker_lcore(b, w));
	sl_json_arr_close(out);
	sl_json_obj_close(out);
	json_ports(out, c, 0);
	/* the membership backend: etcd reachable, fenced, controller (cluster show: more) */
	if (adm.ms != NULL) {
		sl_json_obj_open(out, "cluster");
		sl_membership_describe(adm.ms, out, 0);
		sl_json_obj_close(out);
	}
	/* the cluster's nodes and the port replication reaches each through */
	sl_json_arr_open(out, "nodes");
	for (w = 0; w < c->nnodes; w++) {
		sl_json_obj_open(out, NULL);
		sl_json_u64(out, "id", c->nodes[w].id);
		json_ip(out, "ip", c->nodes[w].ip);
		sl_json_u64(out, "replica_port", c->nodes[w].port);
		if (c->nodes[w].id == c->node_id)
			sl_json_bool(out, "self", 1);
		else
			sl_json_str(out, "via_port", c->ports[c->nodes[w].pi].name);
		sl_json_obj_close(out);
	}
	sl_json_arr_close(out);
	return 0;
}

/* A walk over partitions (stats, storage status). */
struct part_walk {
	struct sl_broker *b;
	struct sl_json *out;
	struct sl_part_info *info;
	const char *topic;	/* only this topic (NULL: all) */
	int storage;		/* only the storage of each partition */
	int chans;
	int rc;
};

/* ---- topics ---- */

static int
topic_list_cb(void *arg, struct sl_topic *t)
{
	struct sl_json *out = arg;

	sl_json_obj_open(out, NULL);
	sl_json_strn(out, "name", t->name, t->name_len);
	sl_json_u64(out, "partitions", t->nparts);
	sl_json_bool(out, "auto_created", !!(t->flags & SL_COORD_TOPIC_AUTO));
	sl_json_obj_close(out);
	return 0;
}

static void
json_chan(struct sl_json *out, const struct sl_chan_info *ci, int partition)
{
	sl_json_obj_open(out, NULL);
	sl_json_str(out, "name", ci->name);
	if (partition >= 0)
		sl_json_u64(out, "partition", (uint64_t)partition);
	sl_json_bool(out, "ordered", ci->ordered);
	sl_json_bool(out, "ephemeral", ci->ephemeral);
	sl_json_bool(out, "anonymous", ci->anonymous);
	sl_json_u64(out, "subscribers", ci->nsubs);
	sl_json_u64(out, "idle_ms", ci->idle_ms);
	sl_json_u64(out, "confirmed_count", ci->confirmed_id - 1);
	sl_json_u64(out, "confirmed_offset", ci->confirmed_offset);
	sl_json_u64(out, "next_id", ci->cursor_id);
	sl_json_u64(out, "depth", ci->depth);
	sl_json_u64(out, "in_flight", ci->st.in_flight);
	sl_json_u64(out, "requeued_now", ci->st.requeued_now);
	sl_json_u64(out, "delivered", ci->st.delivered);
	sl_json_u64(out, "finished", ci->st.finished);
	sl_json_u64(out, "requeued", ci->st.requeued);
	sl_json_u64(out, "timed_out", ci->st.timed_out);
	sl_json_obj_close(out);
}

/* A partition's storage: positions, health, what recovery did, what retention holds. */
static void
json_storage(struct sl_json *out, const struct sl_part_info *in)
{
	const struct sl_pstore *st = in->store;
	struct sl_disklog_stats ds;
	char sync[32];

	sl_json_obj_open(out, "storage");
	if (st == NULL) {
		sl_json_str(out, "durability", "memory");
		sl_json_bool(out, "on_disk", 0);
		sl_json_obj_close(out);
		return;
	}
	sl_disklog_get_stats(st->dl, &ds);
	sl_json_str(out, "durability", in->disk ? "disk" : "memory");
	sl_json_bool(out, "on_disk", 1);
	sl_json_str(out, "sync", sl_persist_sync_str(&st->pol, sync, sizeof(sync)));
	sl_json_str(out, "state", st->error != 0 ? "failed" : "ok");
	if (st->error != 0)
		sl_json_str(out, "error", sl_strerror(st->error));
	sl_json_u64(out, "written_id", st->written_id);
	sl_json_u64(out, "durable_id", st->durable_id);
	sl_json_u64(out, "disk_first_id", ds.first_id);
	sl_json_u64(out, "disk_bytes", ds.bytes);
	sl_json_u64(out, "segments", ds.segments);
	sl_json_u64(out, "syncs", ds.syncs);
	sl_json_u64(out, "waiting_publishes", in->pending);
	sl_json_u64(out, "io_errors", in->io_errs);
	sl_json_u64(out, "disk_reads", in->disk_reads);
	sl_json_u64(out, "disk_skipped", in->disk_skipped);
	sl_json_u64(out, "resumes", st->resumes);
	sl_json_u64(out, "truncates", st->truncates);
	sl_json_u64(out, "resets", st->resets);
	sl_json_obj_open(out, "retention");
	sl_json_u64(out, "max_bytes", st->pol.retain_bytes);
	sl_json_u64(out, "max_age_s", st->pol.retain_age_s);
	sl_json_bool(out, "keep_unconsumed", st->pol.retain_unconsumed);
	sl_json_u64(out, "removed_segments", st->retain.removed_segments);
	sl_json_u64(out, "removed_bytes", st->retain.removed_bytes);
	sl_json_u64(out, "held_bytes", st->retain.held_bytes);
	if (st->retain.held_bytes > 0) {
		sl_json_u64(out, "held_from_id", st->retain.held_from_id);
		sl_json_str(out, "held_because", "a durable channel has not consumed them");
	}
	sl_json_obj_close(out);
	sl_json_obj_open(out, "recovery");
	sl_json_str(out, "result", st->rec.what);
	sl_json_bool(out, "checkpoint_valid", st->rec.checkpoint_valid);
	sl_json_u64(out, "checkpoint_id", st->rec.checkpoint_id);
	sl_json_u64(out, "segments", st->rec.segments);
	sl_json_u64(out, "scanned_records", st->rec.scanned_records);
	sl_json_u64(out, "end_id", st->rec.end_id);
	sl_json_u64(out, "truncated_msg_bytes", st->rec.truncated_msg_bytes);
	sl_json_u64(out, "truncated_commit_bytes", st->rec.truncated_commit_bytes);
	sl_json_u64(out, "rebuilt_commit_records", st->rec.rebuilt_commit_records);
	sl_json_u64(out, "removed_segments", st->rec.removed_segments);
	sl_json_obj_close(out);
	sl_json_obj_close(out);
}

/* A partition's replication counters (replication/repl.h). */
static void
json_repl(struct sl_json *out, const struct sl_part_info *in)
{
	const struct sl_repl_stats *r = &in->rst;

	sl_json_obj_open(out, "replication");
	sl_json_u64(out, "committed_id", in->committed);
	sl_json_bool(out, "in_sync", in->in_sync);
	sl_json_u64(out, "writes", r->writes);
	sl_json_u64(out, "sent", r->sent);
	sl_json_u64(out, "retransmits", r->retransmits);
	sl_json_u64(out, "acks_in", r->acks_in);
	sl_json_u64(out, "dup_writes", r->dup_writes);
	sl_json_u64(out, "fenced", r->fenced);
	sl_json_u64(out, "gaps", r->gaps);
	sl_json_u64(out, "rollbacks", r->rollbacks);
	sl_json_u64(out, "isr_leaves", r->isr_leaves);
	sl_json_u64(out, "catchups", r->catchups);
	sl_json_u64(out, "truncated_on_catchup", r->truncated_on_catchup);
	sl_json_u64(out, "fetches", r->fetches);
	sl_json_u64(out, "joins", r->joins);
	sl_json_u64(out, "chan_syncs", r->chan_syncs);
	sl_json_u64(out, "bad_datagrams", r->bad_dgrams);
	sl_json_u64(out, "resets", r->resets);
	sl_json_u64(out, "fetch_too_old", r->fetch_too_old);
	sl_json_obj_close(out);
}

static void
json_part(struct sl_json *out, uint16_t p, const struct sl_part_info *in, int chans)
{
	uint32_t c;

	sl_json_u64(out, "partition", p);
	sl_json_u64(out, "worker", in->owner);
	sl_json_u64(out, "first_id", in->first_id);
	sl_json_u64(out, "message_count", in->end_id);
	sl_json_u64(out, "end_offset", in->end_offset);
	sl_json_u64(out, "log_used_bytes", in->log_used);
	sl_json_u64(out, "log_capacity_bytes", in->log_capacity);
	sl_json_u64(out, "mem_resident_bytes", in->mem_resident);
	sl_json_u64(out, "log_messages", in->log_msgs);
	sl_json_u64(out, "log_index_slots", in->log_slots);
	sl_json_u64(out, "publishes", in->pubs);
	sl_json_u64(out, "messages_in", in->msgs_in);
	sl_json_u64(out, "bytes_in", in->bytes_in);
	sl_json_u64(out, "full_errors", in->full_errs);
	sl_json_u64(out, "log_grow_kicks", in->grow_kicks);
	sl_json_u64(out, "log_grow_refused", in->grow_refused);
	sl_json_u64(out, "deliveries", in->deliveries);
	sl_json_u64(out, "sub_channels_refused", in->sub_chans_refused);
	sl_json_u64(out, "sub_channels_expired", in->sub_chans_expired);
	sl_json_u64(out, "producers", in->producers);
	sl_json_u64(out, "producer_dups", in->producer_dups);
	sl_json_u64(out, "producer_old", in->producer_old);
	sl_json_u64(out, "producer_evictions", in->producer_evictions);
	json_storage(out, in);
	if (in->repl)
		json_repl(out, in);
	if (!chans)
		return;
	sl_json_arr_open(out, "channels");
	for (c = 0; c < in->nchans; c++)
		json_chan(out, &in->chans[c], -1);
	sl_json_arr_close(out);
}

static int
topic_info(struct sl_broker *b, const char *name, struct sl_json *out)
{
	struct sl_topic *t = sl_coord_topic_find(sl_broker_coord(b), name, strlen(name));
	struct sl_part_info *info;
	const struct sl_part_meta *m;
	uint16_t p;
	int rc = 0;

	if (t == NULL) {
		sl_ctl_set_error(out, "unknown topic '%s'", name);
		return -SL_E_TOPIC;
	}
	info = malloc(sizeof(*info));
	if (info == NULL)
		return -ENOMEM;
	sl_json_strn(out, "name", t->name, t->name_len);
	sl_json_u64(out, "partitions", t->nparts);
	sl_json_arr_open(out, "partition_info");
	for (p = 0; p < t->nparts && rc == 0; p++) {
		rc = sl_broker_part_info(b, name, p, info);
		if (rc != 0)
			break;
		sl_json_obj_open(out, NULL);
		json_part(out, p, info, 1);
		m = rcu_dereference(t->parts[p].meta);
		sl_json_u64(out, "leader", m->leader);
		sl_json_u64(out, "epoch", m->epoch);
		sl_json_obj_close(out);
	}
	sl_json_arr_close(out);
	free(info);
	return rc;
}

static int
cmd_topic(void *arg, int argc, char **argv, struct sl_json *out)
{
	struct sl_broker *b = arg;
	struct sl_persist_policy pol = sl_broker_get_conf(b)->policy;
	long parts = 1, v, replicas = 0;
	int rc, i;

	if (argc >= 2 && strcmp(argv[1], "list") == 0) {
		sl_json_arr_open(out, "topics");
		sl_coord_foreach(sl_broker_coord(b), topic_list_cb, out);
		sl_json_arr_close(out);
		return 0;
	}
	if (argc >= 3 && strcmp(argv[1], "create") == 0) {
		i = 3;
		if (argc >= 4 && argv[3][0] != '-') {
			if (parse_int(argv[3], 1, SL_COORD_MAX_PARTS, &parts) != 0) {
				sl_ctl_set_error(out, "partitions must be 1..%d",
						 SL_COORD_MAX_PARTS);
				return -SL_E_INVAL;
			}
			i = 4;
		}
		for (; i < argc; i += 2) {
			const char *k = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;

			if (val == NULL)
				goto create_usage;
			if (strcmp(k, "--durability") == 0 && strcmp(val, "disk") == 0)
				pol.durability = SL_PERSIST_DISK;
			else if (strcmp(k, "--durability") == 0 && strcmp(val, "memory") == 0)
				pol.durability = SL_PERSIST_MEMORY;
			else if (strcmp(k, "--sync") == 0 && sl_persist_parse_sync(val, &pol) == 0)
				;
			else if (strcmp(k, "--retain-mb") == 0 &&
				 parse_int(val, 0, 1L << 30, &v) == 0)
				pol.retain_bytes = (uint64_t)v << 20;
			else if (strcmp(k, "--retain-age-s") == 0 &&
				 parse_int(val, 0, UINT32_MAX, &v) == 0)
				pol.retain_age_s = (uint64_t)v;
			else if (strcmp(k, "--keep-unconsumed") == 0 &&
				 parse_int(val, 0, 1, &v) == 0)
				pol.retain_unconsumed = (int)v;
			else if (strcmp(k, "--replicas") == 0 &&
				 parse_int(val, 1, SL_COORD_MAX_REPLICAS, &replicas) == 0)
				;
			else
				goto create_usage;
		}
		if (replicas != 0) {
			/* a cluster-wide topic: the membership backend records it, its
			 * controller places the partitions, every node creates it by watch */
			rc = adm.ms != NULL ? sl_membership_topic_create(
						      adm.ms, argv[2], (uint16_t)parts,
						      (uint8_t)replicas,
						      pol.durability == SL_PERSIST_DISK) :
					      -ENOTSUP;
			if (rc != 0) {
				sl_ctl_set_error(out, "topic '%.80s': %s", argv[2],
						 rc == -ENOTSUP ?
							 "--replicas needs sluiced --etcd" :
							 sl_strerror(rc));
				return rc == -ENOTSUP ? -SL_E_INVAL : rc;
			}
			sl_json_str(out, "created", argv[2]);
			sl_json_u64(out, "partitions", (uint64_t)parts);
			sl_json_u64(out, "replicas", (uint64_t)replicas);
			return 0;
		}
		rc = sl_broker_topic_create(b, argv[2], (uint16_t)parts, 0, &pol);
		if (rc != 0) {
			sl_ctl_set_error(out, "topic '%.80s': %s%s", argv[2], sl_strerror(rc),
					 rc == -SL_E_INVAL && pol.durability == SL_PERSIST_DISK &&
							 sl_broker_get_conf(b)->data_dir == NULL ?
						 " (disk durability needs sluiced --data-dir)" :
					 rc == -SL_E_NAME ? " (" SL_NAME_RULE ")" :
					 rc == -SL_E_CAPACITY ?
						 " (sluiced --max-topics, --log-budget-mb; see "
						 "sluicectl status)" :
					 rc == -SL_E_EXISTS ?
						 " (a topic, or a directory in the data directory "
						 "that was not loaded)" :
						 "");
			return rc;
		}
		sl_json_str(out, "created", argv[2]);
		sl_json_u64(out, "partitions", (uint64_t)parts);
		sl_json_str(out, "durability",
			    pol.durability == SL_PERSIST_DISK ? "disk" : "memory");
		return 0;
create_usage:
		sl_ctl_set_error(out, "usage: topic create <name> [partitions] [--durability "
				      "memory|disk] [--sync always|every:N|ms:T] [--retain-mb N] "
				      "[--retain-age-s N] [--keep-unconsumed 0|1] [--replicas R]");
		return -SL_E_INVAL;
	}
	if (argc == 3 && strcmp(argv[1], "delete") == 0) {
		rc = sl_broker_topic_delete(b, argv[2]);
		if (rc != 0) {
			sl_ctl_set_error(out, "topic '%s': %s", argv[2], sl_strerror(rc));
			return rc;
		}
		sl_json_str(out, "deleted", argv[2]);
		return 0;
	}
	if (argc == 3 && strcmp(argv[1], "info") == 0)
		return topic_info(b, argv[2], out);
	sl_ctl_set_error(out, "usage: topic create <name> [partitions] [options] | topic list | "
			      "topic info <name> | topic delete <name>");
	return -EINVAL;
}

/* ---- partitions: the replication view (membership seam) ---- */

static void
json_ids(struct sl_json *out, const char *key, const uint32_t *ids, uint8_t n)
{
	uint8_t i;

	sl_json_arr_open(out, key);
	for (i = 0; i < n; i++)
		sl_json_u64(out, NULL, ids[i]);
	sl_json_arr_close(out);
}

static void
json_view(struct sl_json *out, const char *topic, uint16_t part, const struct sl_part_meta *m,
	  uint32_t node)
{
	sl_json_obj_open(out, NULL);
	sl_json_str(out, "topic", topic);
	sl_json_u64(out, "partition", part);
	sl_json_u64(out, "leader", m->leader);
	sl_json_bool(out, "this_node_leads", m->leader == node);
	sl_json_u64(out, "epoch", m->epoch);
	sl_json_u64(out, "leader_session", m->leader_session);
	sl_json_bool(out, "writes_enabled", !m->writes_disabled);
	json_ids(out, "replicas", m->replicas, m->nreplicas);
	json_ids(out, "isr", m->isr, m->nisr);
	sl_json_bool(out, "writable", m->leader == node && !m->writes_disabled &&
					   m->nisr > m->nreplicas / 2);
	sl_json_obj_close(out);
}

static int
cmd_partition(void *arg, int argc, char **argv, struct sl_json *out)
{
	struct sl_membership *ms = arg;
	struct sl_broker *b = ms->broker;
	struct sl_coord *c = sl_broker_coord(b);
	struct sl_part_meta m;
	char err[160];
	long part = -1, v;
	int rc, i, n;
	uint32_t ids[SL_COORD_MAX_REPLICAS];

	if (argc >= 3 && argc <= 4 && strcmp(argv[1], "show") == 0) {
		struct sl_topic *t = sl_coord_topic_find(c, argv[2], strlen(argv[2]));
		uint16_t p;

		if (t == NULL) {
			sl_ctl_set_error(out, "unknown topic '%s'", argv[2]);
			return -SL_E_TOPIC;
		}
		if (argc == 4 && parse_int(argv[3], 0, t->nparts - 1, &part) != 0) {
			sl_ctl_set_error(out, "partition must be 0..%u", t->nparts - 1);
			return -SL_E_PARTITION;
		}
		sl_json_arr_open(out, "partitions");
		for (p = 0; p < t->nparts; p++)
			if (part < 0 || p == part)
				json_view(out, argv[2], p, rcu_dereference(t->parts[p].meta),
					  sl_coord_node_id(c));
		sl_json_arr_close(out);
		return 0;
	}
	if (argc >= 5 && strcmp(argv[1], "set") == 0) {
		struct sl_part_meta cur;

		if (parse_int(argv[3], 0, SL_COORD_MAX_PARTS - 1, &part) != 0)
			goto usage;
		rc = sl_broker_part_get_view(b, argv[2], (uint16_t)part, &cur);
		if (rc != 0) {
			sl_ctl_set_error(out, "%s/%ld: %s", argv[2], part, sl_strerror(rc));
			return rc;
		}
		m = cur;
		for (i = 4; i < argc; i++) {
			char *eq = strchr(argv[i], '=');
			const char *val = eq != NULL ? eq + 1 : "";

			if (eq == NULL)
				goto usage;
			*eq = '\0';
			if (strcmp(argv[i], "leader") == 0 &&
			    parse_int(val, 1, UINT32_MAX, &v) == 0) {
				m.leader = (uint32_t)v;
			} else if (strcmp(argv[i], "epoch") == 0 &&
				   parse_int(val, 1, UINT32_MAX, &v) == 0) {
				m.epoch = (uint32_t)v;
			} else if (strcmp(argv[i], "session") == 0 &&
				   parse_int(val, 1, INT32_MAX, &v) == 0) {
				m.leader_session = (uint64_t)v;
			} else if (strcmp(argv[i], "writes") == 0 &&
				   (strcmp(val, "on") == 0 || strcmp(val, "off") == 0)) {
				m.writes_disabled = strcmp(val, "off") == 0;
			} else if ((strcmp(argv[i], "isr") == 0 || strcmp(argv[i], "replicas") == 0) &&
				   (n = sl_cluster_parse_ids(val, ids, SL_COORD_MAX_REPLICAS)) > 0) {
				if (argv[i][0] == 'i') {
					memcpy(m.isr, ids, sizeof(ids[0]) * (size_t)n);
					m.nisr = (uint8_t)n;
				} else {
					memcpy(m.replicas, ids, sizeof(ids[0]) * (size_t)n);
					m.nreplicas = (uint8_t)n;
				}
			} else {
				goto usage;
			}
		}
		/* the leadership rules, then the backend records and installs it */
		rc = sl_membership_set_view(ms, argv[2], (uint16_t)part, &m, err, sizeof(err));
		if (rc != 0) {
			sl_ctl_set_error(out, "%s/%ld: %s", argv[2], part, err);
			return rc;
		}
		sl_json_arr_open(out, "partitions");
		json_view(out, argv[2], (uint16_t)part, &m, sl_coord_node_id(c));
		sl_json_arr_close(out);
		return 0;
	}
	if (argc == 6 && strcmp(argv[1], "move") == 0 && strcmp(argv[4], "--replicas") == 0) {
		if (parse_int(argv[3], 0, SL_COORD_MAX_PARTS - 1, &part) != 0 ||
		    (n = sl_cluster_parse_ids(argv[5], ids, SL_COORD_MAX_REPLICAS)) <= 0)
			goto usage;
		rc = sl_membership_move(ms, argv[2], (uint16_t)part, ids, (uint8_t)n, err,
					sizeof(err));
		if (rc != 0) {
			sl_ctl_set_error(out, "%s/%ld: %s", argv[2], part, err);
			return rc;
		}
		sl_membership_move_status(ms, out);
		return 0;
	}
	if (argc == 2 && strcmp(argv[1], "move-status") == 0) {
		sl_membership_move_status(ms, out);
		return 0;
	}
usage:
	sl_ctl_set_error(out, "usage: partition show <topic> [partition] | partition set <topic> "
			      "<partition> [leader=N] [isr=a,b,..] [replicas=a,b,..] [epoch=N] "
			      "[session=N] [writes=on|off] | partition move <topic> <partition> "
			      "--replicas a,b,.. | partition move-status");
	return -SL_E_INVAL;
}

/* ---- the cluster as this node sees it ---- */

static int
cmd_cluster(void *arg, int argc, char **argv, struct sl_json *out)
{
	struct sl_membership *ms = arg;

	if (argc != 2 || strcmp(argv[1], "show") != 0) {
		sl_ctl_set_error(out, "usage: cluster show");
		return -SL_E_INVAL;
	}
	sl_json_u64(out, "node_id", ms->node_id);
	sl_membership_describe(ms, out, 1);
	return 0;
}

/* ---- storage ---- */

/* One object per partition: its stats (json_part) or only its storage. */
static int
stats_part_cb(void *arg, struct sl_topic *t)
{
	struct part_walk *pw = arg;
	char name[SL_COORD_NAME_MAX + 1];
	uint16_t p;

	memcpy(name, t->name, t->name_len);
	name[t->name_len] = '\0';
	if (pw->topic != NULL && strcmp(pw->topic, name) != 0)
		return 0;
	for (p = 0; p < t->nparts; p++) {
		if (sl_broker_part_info(pw->b, name, p, pw->info) != 0)
			continue;
		sl_json_obj_open(pw->out, NULL);
		sl_json_str(pw->out, "topic", name);
		if (pw->storage) {
			sl_json_u64(pw->out, "partition", p);
			sl_json_u64(pw->out, "message_count", pw->info->end_id);
			json_storage(pw->out, pw->info);
		} else {
			json_part(pw->out, p, pw->info, pw->chans);
		}
		sl_json_obj_close(pw->out);
	}
	return 0;
}

static int
cmd_storage(void *arg, int argc, char **argv, struct sl_json *out)
{
	struct sl_broker *b = arg;
	const struct sl_broker_conf *c = sl_broker_get_conf(b);
	struct part_walk pw = {.b = b, .out = out};
	long part = -1;
	int rc;

	if (argc >= 2 && strcmp(argv[1], "status") == 0 && argc <= 3) {
		const struct sl_persist_stats *ps = sl_persist_get_stats(adm.persist);

		sl_json_str(out, "data_dir", c->data_dir != NULL ? c->data_dir : "");
		sl_json_bool(out, "staging_on_hugepages", ps->huge_buf);
		sl_json_u64(out, "written_messages", ps->msgs);
		sl_json_u64(out, "written_bytes", ps->bytes);
		sl_json_u64(out, "write_batches", ps->writes);
		sl_json_u64(out, "syncs", ps->syncs);
		sl_json_u64(out, "disk_fetches", ps->fetches);
		sl_json_u64(out, "disk_fetched_messages", ps->fetch_msgs);
		sl_json_u64(out, "replication_disk_reads", ps->rreads);
		sl_json_u64(out, "replication_disk_records", ps->rread_recs);
		pw.topic = argc == 3 ? argv[2] : NULL;
		pw.info = malloc(sizeof(*pw.info));
		if (pw.info == NULL)
			return -ENOMEM;
		sl_json_arr_open(out, "partitions");
		pw.storage = 1;
		sl_coord_foreach(sl_broker_coord(b), stats_part_cb, &pw);
		sl_json_arr_close(out);
		free(pw.info);
		return 0;
	}
	if ((argc == 3 || argc == 4) && strcmp(argv[1], "resume") == 0) {
		if (argc == 4 && parse_int(argv[3], 0, SL_COORD_MAX_PARTS - 1, &part) != 0) {
			sl_ctl_set_error(out, "partition must be 0..%d", SL_COORD_MAX_PARTS - 1);
			return -SL_E_INVAL;
		}
		rc = sl_broker_storage_resume(b, argv[2], (int)part, 3000);
		if (rc != 0) {
			sl_ctl_set_error(out, "resume %s: %s%s", argv[2], sl_strerror(rc),
					 rc == -SL_E_IO ? " (still failing: see `storage status` and "
							  "the sluiced log)" : "");
			return rc;
		}
		sl_json_str(out, "resumed", argv[2]);
		return 0;
	}
	sl_ctl_set_error(out, "usage: storage status [topic] | storage resume <topic> [partition]");
	return -EINVAL;
}

/* ---- channels ---- */

static int
chan_list(struct sl_broker *b, const char *topic, struct sl_json *out)
{
	struct sl_topic *t = sl_coord_topic_find(sl_broker_coord(b), topic, strlen(topic));
	struct sl_part_info *info;
	uint16_t p;
	uint32_t c;
	int rc = 0;

	if (t == NULL) {
		sl_ctl_set_error(out, "unknown topic '%s'", topic);
		return -SL_E_TOPIC;
	}
	info = malloc(sizeof(*info));
	if (info == NULL)
		return -ENOMEM;
	sl_json_str(out, "topic", topic);
	sl_json_arr_open(out, "channels");
	for (p = 0; p < t->nparts; p++) {
		rc = sl_broker_part_info(b, topic, p, info);
		if (rc != 0)
			break;
		for (c = 0; c < info->nchans; c++)
			json_chan(out, &info->chans[c], p);
	}
	sl_json_arr_close(out);
	free(info);
	return rc;
}

/* Pull "--partition N" and "--ordered" out of argv; returns the new argc. */
static int
take_flags(int argc, char **argv, long *part, int *ordered, int *bad)
{
	int i, n = 0;

	*part = -1;
	*ordered = 0;
	*bad = 0;
	for (i = 0; i < argc; i++) {
		if (strcmp(argv[i], "--ordered") == 0) {
			*ordered = 1;
		} else if (strcmp(argv[i], "--partition") == 0 && i + 1 < argc) {
			if (parse_int(argv[++i], 0, SL_COORD_MAX_PARTS - 1, part) != 0)
				*bad = 1;
		} else {
			argv[n++] = argv[i];
		}
	}
	argv[n] = NULL;
	return n;
}

static int
cmd_channel(void *arg, int argc, char **argv, struct sl_json *out)
{
	struct sl_broker *b = arg;
	long part;
	int ordered, bad, rc;

	argc = take_flags(argc, argv, &part, &ordered, &bad);
	if (bad) {
		sl_ctl_set_error(out, "--partition needs a partition number");
		return -EINVAL;
	}
	if (argc == 3 && strcmp(argv[1], "list") == 0)
		return chan_list(b, argv[2], out);
	if (argc == 4 && strcmp(argv[1], "create") == 0) {
		rc = sl_broker_chan_create(b, argv[2], (int)part, argv[3], ordered);
		if (rc != 0) {
			sl_ctl_set_error(out, "channel '%.80s' of '%.80s': %s%s", argv[3], argv[2],
					 sl_strerror(rc),
					 rc == -SL_E_NAME ? " (" SL_NAME_RULE ")" : "");
			return rc;
		}
		sl_json_str(out, "created", argv[3]);
		sl_json_bool(out, "ordered", ordered);
		return 0;
	}
	if (argc == 4 && strcmp(argv[1], "delete") == 0) {
		rc = sl_broker_chan_delete(b, argv[2], (int)part, argv[3]);
		if (rc != 0) {
			sl_ctl_set_error(out, "channel '%s' of '%s': %s", argv[3], argv[2],
					 sl_strerror(rc));
			return rc;
		}
		sl_json_str(out, "deleted", argv[3]);
		return 0;
	}
	if ((argc == 5 || argc == 6) && strcmp(argv[1], "reset-offset") == 0) {
		static const char *const kinds[] = {"offset", "count", "timestamp", "end"};
		uint64_t value = 0, next = 0;
		uint8_t k;
		char *end;

		for (k = 0; k < 4; k++)
			if (strcmp(argv[4], kinds[k]) == 0)
				break;
		if (k == 4 || (k != SL_OFF_END && argc != 6)) {
			sl_ctl_set_error(out, "usage: channel reset-offset <topic> <channel> "
					      "offset|count|timestamp <value> | end");
			return -EINVAL;
		}
		if (argc == 6) {
			errno = 0;
			value = strtoull(argv[5], &end, 0);
			if (errno || *end) {
				sl_ctl_set_error(out, "bad value '%s'", argv[5]);
				return -EINVAL;
			}
		}
		rc = sl_broker_chan_reset(b, argv[2], (int)part, argv[3], k, value, &next);
		if (rc != 0) {
			sl_ctl_set_error(out, "channel '%s' of '%s': %s", argv[3], argv[2],
					 sl_strerror(rc));
			return rc;
		}
		sl_json_str(out, "channel", argv[3]);
		sl_json_u64(out, "next_id", next);
		return 0;
	}
	sl_ctl_set_error(out, "usage: channel list <topic> | channel create <topic> <channel> "
			      "[--ordered] | channel delete <topic> <channel> | channel "
			      "reset-offset <topic> <channel> offset|count|timestamp <v> | end "
			      "(all take --partition N)");
	return -EINVAL;
}

/* ---- stats ---- */

static void
json_worker(struct sl_json *out, const struct sl_broker *b, uint16_t w)
{
	const struct sl_worker_stats *s = sl_broker_worker_stats(b, w);
	int k;

	sl_json_obj_open(out, NULL);
	sl_json_u64(out, "worker", w);
	sl_json_u64(out, "lcore", sl_broker_worker_lcore(b, w));
	sl_json_u64(out, "rx_packets", s->rx_pkts);
	sl_json_u64(out, "tx_packets", s->tx_pkts);
	sl_json_u64(out, "tx_drops", s->tx_drops);
	sl_json_u64(out, "publishes", s->pubs);
	sl_json_u64(out, "messages_in", s->msgs_in);
	sl_json_u64(out, "bytes_in", s->bytes_in);
	sl_json_u64(out, "deliveries", s->deliveries);
	sl_json_u64(out, "retries_answered", s->dups);
	sl_json_u64(out, "errors_sent", s->errs_sent);
	sl_json_u64(out, "forwarded_out", s->fwd_out);
	sl_json_u64(out, "tx_handoff", s->tx_handoff);
	sl_json_u64(out, "anonymous_publishes", s->anon_pubs);
	sl_json_u64(out, "order_holes_closed", s->order_closed);
	sl_json_u64(out, "order_untracked", s->order_untracked);
	sl_json_u64(out, "mpub_part_started", s->mpart.started);
	sl_json_u64(out, "mpub_part_completed", s->mpart.completed);
	sl_json_u64(out, "mpub_part_expired", s->mpart.expired);
	sl_json_u64(out, "mpub_part_refused", s->mpart.refused);
	sl_json_u64(out, "mpub_part_malformed", s->mpart.malformed);
	sl_json_u64(out, "mpub_part_dups", s->mpart.dups);
	sl_json_u64(out, "repl_in", s->repl_in);
	sl_json_u64(out, "repl_out", s->repl_out);
	sl_json_u64(out, "repl_drops", s->repl_drops);
	sl_json_u64(out, "repl_no_arp", s->repl_no_arp);
	sl_json_u64(out, "repl_rejected_malformed", s->repl_rej_malformed);
	sl_json_u64(out, "repl_rejected_not_member", s->repl_rej_not_member);
	sl_json_u64(out, "repl_rejected_bad_mac", s->repl_rej_bad_mac);
	sl_json_u64(out, "repl_rejected_replay", s->repl_rej_replay);
	sl_json_u64(out, "forwarded_in", s->fwd_in);
	sl_json_u64(out, "arp_replies", s->arp_replies);
	sl_json_u64(out, "icmp_replies", s->icmp_replies);
	sl_json_u64(out, "sessions_created", s->sessions_created);
	sl_json_u64(out, "bundles_in", s->bundles_in);
	sl_json_u64(out, "bundle_frames_in", s->bundle_frames_in);
	sl_json_u64(out, "bundles_out", s->bundles_out);
	sl_json_u64(out, "bundle_frames_out", s->bundle_frames_out);
	sl_json_u64(out, "busy_cycles", s->busy_cycles);
	sl_json_u64(out, "total_cycles", s->total_cycles);
	sl_json_u64(out, "idle_sleeps", s->idle_sleeps);
	sl_json_u64(out, "follow_yields", s->follow_yields);
	sl_json_u64(out, "yield_starved", s->yield_starved);
	sl_json_obj_open(out, "requests");
	for (k = 1; k < SL_WIRE_OP_MAX; k++)
		sl_json_u64(out, op_names[k], s->ops[k]);
	sl_json_u64(out, "unknown", s->ops_unknown);
	sl_json_obj_close(out);
	sl_json_obj_open(out, "drops");
	for (k = SL_NET_DROP_SHORT; k < SL_NET_KIND_MAX; k++)
		sl_json_u64(out, sl_net_kind_name((enum sl_net_kind)k), s->drops[k]);
	sl_json_u64(out, "multi_segment", s->drop_multiseg);
	sl_json_u64(out, "not_sluice", s->drop_bad_magic);
	sl_json_u64(out, "answer_opcode", s->drop_answer_op);
	sl_json_u64(out, "forward_ring_full", s->drop_fwd_full);
	sl_json_u64(out, "no_mbuf", s->drop_no_mbuf);
	sl_json_u64(out, "bad_bundle", s->drop_bad_bundle);
	sl_json_obj_close(out);
	sl_json_obj_open(out, "errors_by_code");
	for (k = 1; k < SL_E_MAX - SL_E_BASE && k < 32; k++)
		if (s->err_codes[k])
			sl_json_u64(out, sl_strerror(SL_E_BASE + k), s->err_codes[k]);
	sl_json_obj_close(out);
	sl_json_obj_close(out);
}



static int
cmd_stats(void *arg, int argc, char **argv, struct sl_json *out)
{
	struct sl_broker *b = arg;
	const struct sl_broker_conf *c = sl_broker_get_conf(b);
	const char *what = argc > 1 ? argv[1] : "all";
	int all = strcmp(what, "all") == 0;
	struct part_walk pw = {.b = b, .out = out};
	unsigned int k;
	uint16_t w;

	if (!all && strcmp(what, "ports") && strcmp(what, "workers") &&
	    strcmp(what, "lcores") && strcmp(what, "partitions") && strcmp(what, "channels")) {
		sl_ctl_set_error(out, "usage: stats [all|ports|workers|partitions|channels]");
		return -EINVAL;
	}
	if (all || !strcmp(what, "ports"))
		json_ports(out, c, 1);
	if (all || !strcmp(what, "workers") || !strcmp(what, "lcores")) {
		const struct sl_persist_stats *ps = sl_persist_get_stats(adm.persist);

		/* cycle counters below are in TSC cycles: tsc_hz converts them to time */
		sl_json_u64(out, "tsc_hz", rte_get_tsc_hz());
		sl_json_arr_open(out, "workers");
		for (w = 0; w < c->nworkers; w++)
			json_worker(out, b, w);
		sl_json_arr_close(out);
		sl_json_obj_open(out, "persist");
		sl_json_u64(out, "records", ps->records);
		sl_json_u64(out, "messages", ps->msgs);
		sl_json_u64(out, "bytes", ps->bytes);
		sl_json_u64(out, "syncs", ps->syncs);
		sl_json_u64(out, "sync_us", ps->sync_ns / 1000);
		sl_json_u64(out, "sync_max_us", ps->sync_max_ns / 1000);
		sl_json_u64(out, "checkpoints", ps->ckpts);
		sl_json_u64(out, "checkpoint_us", ps->ckpt_ns / 1000);
		sl_json_u64(out, "checkpoint_max_us", ps->ckpt_max_ns / 1000);
		sl_json_u64(out, "clog_syncs", ps->clog_syncs);
		sl_json_u64(out, "clog_sync_max_us", ps->clog_sync_max_ns / 1000);
		/* syncs by duration: count i is those within sync_hist_le_us[i] (and above the
		 * bound before it); the one count more is those above every bound */
		sl_json_arr_open(out, "sync_hist_le_us");
		for (k = 0; k < SL_PERSIST_SYNC_BUCKETS; k++)
			sl_json_u64(out, NULL, sl_persist_sync_bucket_ns(k) / 1000);
		sl_json_arr_close(out);
		sl_json_arr_open(out, "sync_hist");
		for (k = 0; k <= SL_PERSIST_SYNC_BUCKETS; k++)
			sl_json_u64(out, NULL, ps->sync_hist[k]);
		sl_json_arr_close(out);
		sl_json_u64(out, "loops", ps->loops);
		sl_json_u64(out, "idle_sleeps", ps->idle_sleeps);
		sl_json_u64(out, "idle_blocks", ps->idle_blocks);
		sl_json_u64(out, "bell_wakes", ps->bell_wakes);
		sl_json_obj_close(out);
	}
	if (all || !strcmp(what, "partitions") || !strcmp(what, "channels")) {
		pw.info = malloc(sizeof(*pw.info));
		if (pw.info == NULL)
			return -ENOMEM;
		pw.chans = 1;
		sl_json_arr_open(out, "partitions");
		sl_coord_foreach(sl_broker_coord(b), stats_part_cb, &pw);
		sl_json_arr_close(out);
		free(pw.info);
	}
	return 0;
}

static int
cmd_sessions(void *arg, int argc, char **argv, struct sl_json *out)
{
	struct sl_broker *b = arg;
	struct sl_session_table *t = sl_broker_sessions(b);
	const struct sl_auth_table *a = sl_broker_auth(b);
	uint64_t now = rte_get_tsc_cycles(), hz = rte_get_tsc_hz();
	uint32_t i, n = 0;
	int k;

	sl_json_u64(out, "count", sl_session_count(t));
	sl_json_arr_open(out, "sessions");
	for (i = 0; i < sl_session_capacity(t) && n < 1000; i++) {
		const struct sl_session *s = sl_session_at(t, i);
		char id[20];

		if (s == NULL)
			continue;
		n++;
		snprintf(id, sizeof(id), "%016llx", (unsigned long long)s->id);
		sl_json_obj_open(out, NULL);
		sl_json_str(out, "id", id);
		json_ip(out, "ip", s->ip);
		sl_json_u64(out, "udp_port", s->udp_port);
		sl_json_u64(out, "idle_ms", (now - s->last_seen) * 1000 / hz);
		sl_json_u64(out, "age_s", (now - s->created) / hz);
		if (a != NULL) {
			k = sl_auth_by_uid(a, s->auth_uid);
			sl_json_str(out, "token", k >= 0 ? sl_auth_name(a, (uint32_t)k) : "");
			sl_json_bool(out, "revoked", s->closing == SL_SESSION_REVOKED || k < 0);
		}
		sl_json_obj_close(out);
	}
	sl_json_arr_close(out);
	return 0;
}

/* ---- client tokens ---- */

static void
json_tokens(struct sl_json *out, const struct sl_auth_table *a)
{
	char rule[128];
	uint32_t i, r;

	sl_json_arr_open(out, "tokens");
	for (i = 0; i < sl_auth_count(a); i++) {
		sl_json_obj_open(out, NULL);
		sl_json_str(out, "name", sl_auth_name(a, i));
		sl_json_arr_open(out, "allow");
		for (r = 0; r < sl_auth_nrules(a, i); r++) {
			sl_auth_rule_str(a, i, r, rule, sizeof(rule));
			sl_json_str(out, NULL, rule);
		}
		sl_json_arr_close(out);
		sl_json_obj_close(out);
	}
	sl_json_arr_close(out);
}

/* token list: the tokens' names and rules (never a token or its hash); token reload: read
 * the token file again and install it (a file with an error changes nothing). */
static int
cmd_token(void *arg, int argc, char **argv, struct sl_json *out)
{
	struct sl_broker *b = arg;
	const struct sl_broker_conf *c = sl_broker_get_conf(b);
	const struct sl_auth_table *cur = sl_broker_auth(b);
	struct sl_auth_table *t;
	char err[512];
	uint32_t revoked = 0;
	int rc;

	if (argc != 2 || (strcmp(argv[1], "list") != 0 && strcmp(argv[1], "reload") != 0)) {
		sl_ctl_set_error(out, "usage: token list | token reload");
		return -EINVAL;
	}
	if (cur == NULL) {
		sl_ctl_set_error(out, "no --token-file: this node runs open (any client that "
				      "reaches the port may publish and consume)");
		return -EINVAL;
	}
	if (strcmp(argv[1], "list") == 0) {
		sl_json_str(out, "file", c->token_file);
		json_tokens(out, cur);
		return 0;
	}
	t = sl_auth_load(c->token_file, cur, err, sizeof(err));
	if (t == NULL) {
		sl_ctl_set_error(out, "%s (the tokens in use are unchanged)", err);
		return -EINVAL;
	}
	rc = sl_broker_auth_swap(b, t, &revoked);
	if (rc != 0) {
		sl_auth_free(t);
		return rc;
	}
	sl_json_str(out, "file", c->token_file);
	sl_json_u64(out, "sessions_revoked", revoked);
	json_tokens(out, sl_broker_auth(b));
	return 0;
}

/* ---- telemetry ---- */

static int
tel_status(const char *cmd, const char *params, struct rte_tel_data *d)
{
	const struct sl_broker_conf *c;

	rte_tel_data_start_dict(d);
	pthread_mutex_lock(&adm.snap_lock);
	if (adm.b != NULL) {
		c = sl_broker_get_conf(adm.b);
		rte_tel_data_add_dict_u64(d, "node_id", c->node_id);
		rte_tel_data_add_dict_u64(d, "workers", c->nworkers);
		rte_tel_data_add_dict_u64(d, "ports", c->nports);
		rte_tel_data_add_dict_u64(d, "topics", sl_coord_topic_count(sl_broker_coord(adm.b)));
		rte_tel_data_add_dict_u64(d, "sessions",
					  sl_session_count(sl_broker_sessions(adm.b)));
		rte_tel_data_add_dict_u64(d, "max_msg", c->max_msg);
	}
	pthread_mutex_unlock(&adm.snap_lock);
	return 0;
}

static int
tel_workers(const char *cmd, const char *params, struct rte_tel_data *d)
{
	uint16_t w;

	rte_tel_data_start_dict(d);
	pthread_mutex_lock(&adm.snap_lock);
	for (w = 0; adm.b != NULL && w < sl_broker_get_conf(adm.b)->nworkers; w++) {
		const struct sl_worker_stats *s = sl_broker_worker_stats(adm.b, w);
		struct rte_tel_data *x = rte_tel_data_alloc();
		char key[16];

		if (x == NULL)
			break;
		rte_tel_data_start_dict(x);
		rte_tel_data_add_dict_u64(x, "rx_packets", s->rx_pkts);
		rte_tel_data_add_dict_u64(x, "tx_packets", s->tx_pkts);
		rte_tel_data_add_dict_u64(x, "tx_drops", s->tx_drops);
		rte_tel_data_add_dict_u64(x, "publishes", s->pubs);
		rte_tel_data_add_dict_u64(x, "messages_in", s->msgs_in);
		rte_tel_data_add_dict_u64(x, "deliveries", s->deliveries);
		rte_tel_data_add_dict_u64(x, "errors_sent", s->errs_sent);
		rte_tel_data_add_dict_u64(x, "retries_answered", s->dups);
		rte_tel_data_add_dict_u64(x, "not_sluice_drops", s->drop_bad_magic);
		rte_tel_data_add_dict_u64(x, "bad_source_drops", s->drops[SL_NET_DROP_SRC]);
		rte_tel_data_add_dict_u64(x, "busy_cycles", s->busy_cycles);
		rte_tel_data_add_dict_u64(x, "total_cycles", s->total_cycles);
		snprintf(key, sizeof(key), "worker%u", w);
		if (rte_tel_data_add_dict_container(d, key, x, 0) != 0)
			rte_tel_data_free(x);	/* not taken: telemetry frees only what it took */
	}
	pthread_mutex_unlock(&adm.snap_lock);
	return 0;
}

/* A telemetry key from a topic, channel or counter name: DPDK's telemetry takes only
 * letters, digits, '_' and '/' in names (and refuses the entry otherwise), so every other
 * byte becomes '_'. */
static void
tel_key(char *k)
{
	for (; *k != '\0'; k++)
		if (!((*k >= 'a' && *k <= 'z') || (*k >= 'A' && *k <= 'Z') ||
		      (*k >= '0' && *k <= '9') || *k == '_' || *k == '/'))
			*k = '_';
}

static int
tel_partitions(const char *cmd, const char *params, struct rte_tel_data *d)
{
	uint32_t i;

	rte_tel_data_start_dict(d);
	pthread_mutex_lock(&adm.snap_lock);
	for (i = 0; i < adm.nsnap; i++) {
		const struct snap_part *sp = &adm.snap[i];
		struct rte_tel_data *x = rte_tel_data_alloc();
		char key[RTE_TEL_MAX_STRING_LEN];
		uint32_t c;

		if (x == NULL)
			break;
		rte_tel_data_start_dict(x);
		rte_tel_data_add_dict_u64(x, "message_count", sp->info.end_id);
		rte_tel_data_add_dict_u64(x, "end_offset", sp->info.end_offset);
		rte_tel_data_add_dict_u64(x, "publishes", sp->info.pubs);
		rte_tel_data_add_dict_u64(x, "messages_in", sp->info.msgs_in);
		rte_tel_data_add_dict_u64(x, "full_errors", sp->info.full_errs);
		rte_tel_data_add_dict_u64(x, "deliveries", sp->info.deliveries);
		rte_tel_data_add_dict_u64(x, "log_used_bytes", sp->info.log_used);
		rte_tel_data_add_dict_u64(x, "log_messages", sp->info.log_msgs);
		for (c = 0; c < sp->info.nchans && c < 8; c++) {
			char ck[RTE_TEL_MAX_STRING_LEN];

			snprintf(ck, sizeof(ck), "chan/%s/depth", sp->info.chans[c].name);
			tel_key(ck);
			rte_tel_data_add_dict_u64(x, ck, sp->info.chans[c].depth);
			snprintf(ck, sizeof(ck), "chan/%s/in_flight", sp->info.chans[c].name);
			tel_key(ck);
			rte_tel_data_add_dict_u64(x, ck, sp->info.chans[c].st.in_flight);
		}
		snprintf(key, sizeof(key), "%s/%u", sp->topic, sp->part);
		tel_key(key);
		if (rte_tel_data_add_dict_container(d, key, x, 0) != 0)
			rte_tel_data_free(x);
	}
	pthread_mutex_unlock(&adm.snap_lock);
	return 0;
}

struct snap_walk {
	struct sl_broker *b;
};

static int
snap_cb(void *arg, struct sl_topic *t)
{
	struct snap_walk *sw = arg;
	struct sl_part_info *infos = malloc(sizeof(*infos) * t->nparts);
	uint8_t *ok = malloc(t->nparts);
	uint16_t p;

	/* one worker command per topic and worker (thousands of partitions) */
	if (adm.nbuilding >= SNAP_MAX || infos == NULL || ok == NULL ||
	    sl_broker_topic_infos(sw->b, t, infos, ok) < 0) {
		free(infos);
		free(ok);
		return 0;
	}
	for (p = 0; p < t->nparts && adm.nbuilding < SNAP_MAX; p++) {
		struct snap_part *sp = &adm.building[adm.nbuilding];

		const struct sl_part_meta *m = rcu_dereference(t->parts[p].meta);

		memcpy(sp->topic, t->name, t->name_len);
		sp->topic[t->name_len] = '\0';
		sp->part = p;
		sp->leader = m != NULL ? m->leader : 0;
		sp->nreplicas = m != NULL ? m->nreplicas : 0;
		sp->nisr = m != NULL ? m->nisr : 0;
		if (ok[p]) {
			sp->info = infos[p];
			adm.nbuilding++;
		}
	}
	free(infos);
	free(ok);
	return 0;
}

/* Each worker's busy share of the cycles since the last tick (snap_lock held). */
static void
busy_tick(const struct sl_broker *b)
{
	uint16_t w, n = sl_broker_get_conf(b)->nworkers;

	for (w = 0; w < n && w < SL_BROKER_MAX_WORKERS; w++) {
		const struct sl_worker_stats *s = sl_broker_worker_stats(b, w);
		uint64_t busy = s->busy_cycles, total = s->total_cycles;

		if (total > adm.prev_total[w])
			adm.busy_ratio[w] = (double)(busy - adm.prev_busy[w]) /
					    (double)(total - adm.prev_total[w]);
		adm.prev_busy[w] = busy;
		adm.prev_total[w] = total;
	}
}

/* ---- Prometheus (control/metrics.h): the same snapshot and counters as telemetry ---- */

#define FAM(name, type, help) sl_metrics_family(out, name, SL_METRICS_##type, help)

/* One family per partition field of the snapshot: name, type, help, expression of sp. */
#define PART_FAMILY(fam, type, help, expr)                                                \
	do {                                                                              \
		FAM(fam, type, help);                                                     \
		for (i = 0; i < adm.nsnap; i++) {                                         \
			const struct snap_part *sp = &adm.snap[i];                        \
			char pn[8];                                                       \
			const char *l[] = {"topic", sp->topic, "partition", pn, NULL};    \
                                                                                          \
			snprintf(pn, sizeof(pn), "%u", sp->part);                         \
			sl_metrics_sample_u64(out, fam, NULL, l, NULL, (expr));           \
		}                                                                         \
	} while (0)

#define CHAN_FAMILY(fam, type, help, expr)                                                \
	do {                                                                              \
		FAM(fam, type, help);                                                     \
		for (i = 0; i < adm.nsnap; i++) {                                         \
			const struct snap_part *sp = &adm.snap[i];                        \
			char pn[8];                                                       \
                                                                                          \
			snprintf(pn, sizeof(pn), "%u", sp->part);                         \
			for (c = 0; c < sp->info.nchans; c++) {                           \
				const struct sl_chan_info *ci = &sp->info.chans[c];       \
				const char *l[] = {"topic", sp->topic, "partition", pn,   \
						   "channel", ci->name, NULL};            \
                                                                                          \
				sl_metrics_sample_u64(out, fam, NULL, l, NULL, (expr));   \
			}                                                                 \
		}                                                                         \
	} while (0)

#define WORKER_FAMILY(fam, type, help, expr)                                              \
	do {                                                                              \
		FAM(fam, type, help);                                                     \
		for (w = 0; w < c_->nworkers; w++) {                                      \
			const struct sl_worker_stats *s = sl_broker_worker_stats(b, w);   \
			char wn[8];                                                       \
			const char *l[] = {"worker", wn, NULL};                           \
                                                                                          \
			snprintf(wn, sizeof(wn), "%u", w);                                \
			sl_metrics_sample_u64(out, fam, NULL, l, NULL, (expr));           \
		}                                                                         \
	} while (0)

/* Drop causes outside the network classifier's (sl_net_kind): label and counter. */
static const struct {
	const char *cause;
	size_t off;
} worker_drops[] = {
	{"tx_ring_full", offsetof(struct sl_worker_stats, tx_drops)},
	{"multi_segment", offsetof(struct sl_worker_stats, drop_multiseg)},
	{"not_sluice", offsetof(struct sl_worker_stats, drop_bad_magic)},
	{"answer_opcode", offsetof(struct sl_worker_stats, drop_answer_op)},
	{"forward_ring_full", offsetof(struct sl_worker_stats, drop_fwd_full)},
	{"no_mbuf", offsetof(struct sl_worker_stats, drop_no_mbuf)},
	{"bad_bundle", offsetof(struct sl_worker_stats, drop_bad_bundle)},
	{"repl_malformed_or_unknown", offsetof(struct sl_worker_stats, repl_drops)},
	{"repl_no_arp", offsetof(struct sl_worker_stats, repl_no_arp)},
	{"repl_rejected_malformed", offsetof(struct sl_worker_stats, repl_rej_malformed)},
	{"repl_rejected_not_member", offsetof(struct sl_worker_stats, repl_rej_not_member)},
	{"repl_rejected_bad_mac", offsetof(struct sl_worker_stats, repl_rej_bad_mac)},
	{"repl_rejected_replay", offsetof(struct sl_worker_stats, repl_rej_replay)},
};

static void
metrics_workers(struct sl_metrics_buf *out, const struct sl_broker *b)
{
	const struct sl_broker_conf *c_ = sl_broker_get_conf(b);
	double hz = (double)rte_get_tsc_hz();
	uint16_t w;
	size_t k;
	int e;

	WORKER_FAMILY("sluice_worker_rx_packets_total", COUNTER,
		      "Packets a worker received from its port queues.", s->rx_pkts);
	WORKER_FAMILY("sluice_worker_tx_packets_total", COUNTER,
		      "Packets a worker sent.", s->tx_pkts);
	WORKER_FAMILY("sluice_worker_messages_in_total", COUNTER,
		      "Messages a worker appended to its partitions.", s->msgs_in);
	WORKER_FAMILY("sluice_worker_deliveries_total", COUNTER,
		      "Messages a worker delivered to subscribers.", s->deliveries);
	FAM("sluice_worker_busy_ratio", GAUGE,
	    "Share of a worker's cycles spent on loop iterations that did work, over the last "
	    "second (0..1).");
	for (w = 0; w < c_->nworkers; w++) {
		char wn[8];
		const char *l[] = {"worker", wn, NULL};

		snprintf(wn, sizeof(wn), "%u", w);
		sl_metrics_sample(out, "sluice_worker_busy_ratio", NULL, l, NULL,
				  adm.busy_ratio[w]);
	}
	FAM("sluice_worker_busy_seconds_total", COUNTER,
	    "Time a worker spent on loop iterations that did work (rate() of it over "
	    "sluice_worker_seconds_total: the busy ratio).");
	for (w = 0; w < c_->nworkers; w++) {
		char wn[8];
		const char *l[] = {"worker", wn, NULL};

		snprintf(wn, sizeof(wn), "%u", w);
		sl_metrics_sample(out, "sluice_worker_busy_seconds_total", NULL, l, NULL,
				  (double)sl_broker_worker_stats(b, w)->busy_cycles / hz);
	}
	FAM("sluice_worker_seconds_total", COUNTER, "Time a worker's loop has run.");
	for (w = 0; w < c_->nworkers; w++) {
		char wn[8];
		const char *l[] = {"worker", wn, NULL};

		snprintf(wn, sizeof(wn), "%u", w);
		sl_metrics_sample(out, "sluice_worker_seconds_total", NULL, l, NULL,
				  (double)sl_broker_worker_stats(b, w)->total_cycles / hz);
	}
	FAM("sluice_requests_total", COUNTER, "Client requests a worker handled, by opcode.");
	for (w = 0; w < c_->nworkers; w++) {
		const struct sl_worker_stats *s = sl_broker_worker_stats(b, w);
		char wn[8];

		snprintf(wn, sizeof(wn), "%u", w);
		for (e = 1; e <= SL_WIRE_OP_MAX; e++) {
			const char *l[] = {"worker", wn, "op",
					   e < SL_WIRE_OP_MAX ? op_names[e] : "unknown", NULL};

			sl_metrics_sample_u64(out, "sluice_requests_total", NULL, l, NULL,
					      e < SL_WIRE_OP_MAX ? s->ops[e] : s->ops_unknown);
		}
	}
	FAM("sluice_drops_total", COUNTER,
	    "Packets a worker dropped, by cause (network checks, rings, replica checks).");
	for (w = 0; w < c_->nworkers; w++) {
		const struct sl_worker_stats *s = sl_broker_worker_stats(b, w);
		char wn[8];

		snprintf(wn, sizeof(wn), "%u", w);
		for (e = SL_NET_DROP_SHORT; e < SL_NET_KIND_MAX; e++) {
			const char *name = sl_net_kind_name((enum sl_net_kind)e);
			const char *l[] = {"worker", wn, "cause",
					   strncmp(name, "drop_", 5) == 0 ? name + 5 : name, NULL};

			sl_metrics_sample_u64(out, "sluice_drops_total", NULL, l, NULL,
					      s->drops[e]);
		}
		for (k = 0; k < RTE_DIM(worker_drops); k++) {
			const char *l[] = {"worker", wn, "cause", worker_drops[k].cause, NULL};

			sl_metrics_sample_u64(out, "sluice_drops_total", NULL, l, NULL,
					      *(const uint64_t *)((const char *)s +
								  worker_drops[k].off));
		}
	}
	FAM("sluice_errors_total", COUNTER,
	    "Error answers a worker sent to clients, by sluice error code (dataplane/err.h).");
	for (w = 0; w < c_->nworkers; w++) {
		const struct sl_worker_stats *s = sl_broker_worker_stats(b, w);
		char wn[8], code[12];

		snprintf(wn, sizeof(wn), "%u", w);
		for (e = 1; e < SL_E_MAX - SL_E_BASE && e < 32; e++) {
			const char *l[] = {"worker", wn, "code", code, "error",
					   sl_strerror(SL_E_BASE + e), NULL};

			snprintf(code, sizeof(code), "%d", SL_E_BASE + e);
			sl_metrics_sample_u64(out, "sluice_errors_total", NULL, l, NULL,
					      s->err_codes[e]);
		}
	}
}

static void
metrics_persist(struct sl_metrics_buf *out)
{
	const char *name = "sluice_persist_sync_duration_seconds";
	const struct sl_persist_stats *ps = sl_persist_get_stats(adm.persist);
	uint64_t cum = 0;
	unsigned int k;
	char le[24];

	FAM("sluice_persist_messages_total", COUNTER, "Messages written to disk logs.");
	sl_metrics_sample_u64(out, "sluice_persist_messages_total", NULL, NULL, NULL, ps->msgs);
	FAM("sluice_persist_written_bytes_total", COUNTER, "Bytes written to disk logs.");
	sl_metrics_sample_u64(out, "sluice_persist_written_bytes_total", NULL, NULL, NULL,
			      ps->bytes);
	FAM("sluice_persist_write_batches_total", COUNTER, "Write batches to disk logs.");
	sl_metrics_sample_u64(out, "sluice_persist_write_batches_total", NULL, NULL, NULL,
			      ps->writes);
	FAM(name, HISTOGRAM,
	    "Time one sync of a partition's disk log took (its fdatasyncs), persistence lcore.");
	for (k = 0; k < SL_PERSIST_SYNC_BUCKETS; k++) {
		cum += ps->sync_hist[k];
		snprintf(le, sizeof(le), "%.9g", (double)sl_persist_sync_bucket_ns(k) / 1e9);
		sl_metrics_sample_u64(out, name, "_bucket", NULL, le, cum);
	}
	cum += ps->sync_hist[SL_PERSIST_SYNC_BUCKETS];
	sl_metrics_sample_u64(out, name, "_bucket", NULL, "+Inf", cum);
	sl_metrics_sample(out, name, "_sum", NULL, NULL, (double)ps->sync_ns / 1e9);
	sl_metrics_sample_u64(out, name, "_count", NULL, NULL, cum);
}

static void
metrics_parts(struct sl_metrics_buf *out)
{
	uint32_t i, c;

	PART_FAMILY("sluice_partition_messages_in_total", COUNTER,
		    "Messages appended to the partition on this node.", sp->info.msgs_in);
	PART_FAMILY("sluice_partition_publishes_total", COUNTER,
		    "Publish requests (PUB, MPUB) the partition took.", sp->info.pubs);
	PART_FAMILY("sluice_partition_received_bytes_total", COUNTER,
		    "Message bytes appended to the partition.", sp->info.bytes_in);
	PART_FAMILY("sluice_partition_deliveries_total", COUNTER,
		    "Messages delivered from the partition to subscribers.", sp->info.deliveries);
	PART_FAMILY("sluice_partition_full_errors_total", COUNTER,
		    "Publishes refused because the partition log was full.", sp->info.full_errs);
	PART_FAMILY("sluice_partition_log_grow_wakeups_total", COUNTER,
		    "Times the partition's worker woke the control thread to grow its log.",
		    sp->info.grow_kicks);
	PART_FAMILY("sluice_partition_log_grow_refused_total", COUNTER,
		    "Log growth steps refused by the node's memory budget (--log-budget-mb).",
		    sp->info.grow_refused);
	PART_FAMILY("sluice_partition_storage_io_errors_total", COUNTER,
		    "Disk I/O errors of the partition's log.", sp->info.io_errs);
	PART_FAMILY("sluice_partition_end_id", GAUGE,
		    "Id of the last message of the partition (its message count).",
		    sp->info.end_id);
	PART_FAMILY("sluice_partition_end_offset_bytes", GAUGE,
		    "Byte offset of the end of the partition log.", sp->info.end_offset);
	PART_FAMILY("sluice_partition_log_used_bytes", GAUGE,
		    "Bytes the partition's in-memory log holds.", sp->info.log_used);
	PART_FAMILY("sluice_partition_log_capacity_bytes", GAUGE,
		    "Size of the partition's in-memory log.", sp->info.log_capacity);
	PART_FAMILY("sluice_partition_leader", GAUGE,
		    "Node id of the partition's leader.", sp->leader);
	PART_FAMILY("sluice_partition_replicas", GAUGE,
		    "Replicas of the partition.", sp->nreplicas);
	PART_FAMILY("sluice_partition_isr_size", GAUGE,
		    "Members of the partition's in-sync replica set.", sp->nisr);
	PART_FAMILY("sluice_partition_replication_lag_messages", GAUGE,
		    "Messages of the partition not yet committed by its ISR (end id - committed "
		    "id; 0 without replication).",
		    sp->info.repl && sp->info.end_id > sp->info.committed ?
			    sp->info.end_id - sp->info.committed : 0);
	CHAN_FAMILY("sluice_channel_depth", GAUGE,
		    "Messages of the partition the channel has not finished.", ci->depth);
	CHAN_FAMILY("sluice_channel_in_flight", GAUGE,
		    "Messages delivered to the channel's subscribers, not yet finished.",
		    ci->st.in_flight);
	CHAN_FAMILY("sluice_channel_subscribers", GAUGE,
		    "Subscribers of the channel.", ci->nsubs);
	CHAN_FAMILY("sluice_channel_delivered_total", COUNTER,
		    "Deliveries of the channel (redeliveries included).", ci->st.delivered);
	CHAN_FAMILY("sluice_channel_finished_total", COUNTER,
		    "Messages the channel's subscribers finished.", ci->st.finished);
	CHAN_FAMILY("sluice_channel_requeued_total", COUNTER,
		    "Messages the channel's subscribers requeued.", ci->st.requeued);
	CHAN_FAMILY("sluice_channel_timed_out_total", COUNTER,
		    "In-flight messages of the channel that timed out.", ci->st.timed_out);
}

int
sl_admin_metrics(void *arg, struct sl_metrics_buf *out)
{
	struct sl_broker *b = arg;
	const struct sl_broker_conf *c = sl_broker_get_conf(b);
	char node[12];
	const char *l[] = {"node_id", node, "version", SL_ADMIN_VERSION, NULL};

	snprintf(node, sizeof(node), "%u", c->node_id);
	FAM("sluice_node_info", GAUGE, "Always 1: the node's id and version as labels.");
	sl_metrics_sample_u64(out, "sluice_node_info", NULL, l, NULL, 1);
	FAM("sluice_uptime_seconds", GAUGE, "Time since sluiced started.");
	sl_metrics_sample(out, "sluice_uptime_seconds", NULL, NULL, NULL,
			  (double)(rte_get_tsc_cycles() - adm.start_tsc) /
				  (double)rte_get_tsc_hz());
	FAM("sluice_topics", GAUGE, "Topics this node holds.");
	sl_metrics_sample_u64(out, "sluice_topics", NULL, NULL, NULL,
			      sl_coord_topic_count(sl_broker_coord(b)));
	FAM("sluice_sessions", GAUGE, "Live client sessions.");
	sl_metrics_sample_u64(out, "sluice_sessions", NULL, NULL, NULL,
			      sl_session_count(sl_broker_sessions(b)));
	metrics_workers(out, b);
	metrics_persist(out);
	pthread_mutex_lock(&adm.snap_lock);
	metrics_parts(out);
	pthread_mutex_unlock(&adm.snap_lock);
	return 0;
}

void
sl_admin_tick(struct sl_broker *b)
{
	uint64_t now = rte_get_tsc_cycles();
	struct snap_walk sw = {.b = b};
	struct snap_part *tmp;

	if (now < adm.next_snap_tsc || adm.building == NULL)
		return;
	adm.next_snap_tsc = now + rte_get_tsc_hz();
	adm.nbuilding = 0;
	sl_coord_foreach(sl_broker_coord(b), snap_cb, &sw);
	pthread_mutex_lock(&adm.snap_lock);
	tmp = adm.snap;
	adm.snap = adm.building;
	adm.nsnap = adm.nbuilding;
	adm.building = tmp;
	busy_tick(b);
	pthread_mutex_unlock(&adm.snap_lock);
}

void
sl_admin_unregister(void)
{
	pthread_mutex_lock(&adm.snap_lock);
	adm.b = NULL;
	adm.nsnap = 0;
	free(adm.snap);
	free(adm.building);
	adm.snap = NULL;
	adm.building = NULL;
	pthread_mutex_unlock(&adm.snap_lock);
}

int
sl_admin_register(struct sl_ctl *ctl, struct sl_broker *b, struct sl_persist *p,
		  struct sl_membership *ms)
{
	int rc = 0;

	adm.start_tsc = rte_get_tsc_cycles();
	adm.persist = p;
	adm.ms = ms;
	adm.snap = calloc(SNAP_MAX, sizeof(*adm.snap));
	adm.building = calloc(SNAP_MAX, sizeof(*adm.building));
	if (adm.snap == NULL || adm.building == NULL)
		return -ENOMEM;
	rc |= sl_ctl_register(ctl, "status", cmd_status, b, "status: node, lcores, ports");
	rc |= sl_ctl_register(ctl, "topic", cmd_topic, b,
			      "topic create <name> [partitions] [--durability memory|disk] "
			      "[--sync always|every:N|ms:T] [--retain-mb N] [--retain-age-s N] "
			      "[--keep-unconsumed 0|1] [--replicas R (--etcd)] | topic list | "
			      "topic info <name> "
			      "| topic delete <name>");
	rc |= sl_ctl_register(ctl, "channel", cmd_channel, b,
			      "channel list <topic> | channel create <topic> <channel> "
			      "[--ordered] | channel delete <topic> <channel> | channel "
			      "reset-offset <topic> <channel> offset|count|timestamp <v> | end "
			      "[--partition N]");
	rc |= sl_ctl_register(ctl, "stats", cmd_stats, b,
			      "stats [all|ports|workers|partitions|channels]");
	rc |= sl_ctl_register(ctl, "sessions", cmd_sessions, b, "sessions: live client sessions");
	rc |= sl_ctl_register(ctl, "token", cmd_token, b,
			      "token list: client tokens and their rights | token reload: read "
			      "--token-file again; sessions of removed tokens are revoked");
	rc |= sl_ctl_register(ctl, "partition", cmd_partition, ms,
			      "partition show <topic> [partition] | partition set <topic> "
			      "<partition> [leader=N] [isr=a,b,..] [replicas=a,b,..] [epoch=N] "
			      "[session=N] [writes=on|off]: the replication view | partition "
			      "move <topic> <partition> --replicas a,b,.. (--etcd) | partition "
			      "move-status");
	rc |= sl_ctl_register(ctl, "cluster", cmd_cluster, ms,
			      "cluster show: nodes (id, address, alive, controller, partitions "
			      "each leads), etcd reachable, fencing");
	rc |= sl_ctl_register(ctl, "storage", cmd_storage, b,
			      "storage status [topic]: disk logs, recovery, retention | storage "
			      "resume <topic> [partition]: after a disk error is fixed");
	if (rc != 0)
		return -EINVAL;
	pthread_mutex_lock(&adm.snap_lock);
	adm.b = b;
	pthread_mutex_unlock(&adm.snap_lock);
	/* telemetry may be disabled (--no-telemetry): not fatal */
	rte_telemetry_register_cmd("/sluice/status", tel_status, "sluice node status");
	rte_telemetry_register_cmd("/sluice/workers", tel_workers,
				   "sluice per-worker counters");
	rte_telemetry_register_cmd("/sluice/partitions", tel_partitions,
				   "sluice per-partition and per-channel counters (1 s snapshot)");
	return 0;
}
