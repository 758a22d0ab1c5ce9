/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * sluiced: one sluice node. The EAL main lcore is the control thread (this file's main
 * loop: control socket, periodic broker work); worker lcores and the persistence lcore
 * are launched by the broker and persist modules.
 *
 *   sluiced [EAL options] -- [sluiced options]     (sluiced --help)
 */
#include <arpa/inet.h>
#include <errno.h>
#include <ftw.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <unistd.h>

#include <sodium.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_log.h>
#include <rte_mbuf.h>
#include <urcu-qsbr.h>

#include "admin.h"
#include "broker.h"
#include "cluster.h"
#include "ctl.h"
#include "err.h"
#include "idem.h"
#include "membership.h"
#include "name.h"
#include "persist.h"
#include "port.h"
#include "wire.h"

RTE_LOG_REGISTER_SUFFIX(sl_main_logtype, main, INFO);
#define MLOG(level, fmt, ...) \
	rte_log(RTE_LOG_##level, sl_main_logtype, "sluiced: " fmt "\n", ##__VA_ARGS__)

#define MAX_TOPICS_AT_START 32

struct opts {
	const char *ports[SL_BROKER_MAX_PORTS];
	const char *ips[SL_BROKER_MAX_PORTS];
	uint16_t nports, nips;
	uint16_t udp_port;
	uint16_t workers;
	uint16_t mtu;
	int idle;
	uint32_t idle_max_us;
	uint32_t idle_min_us;
	uint32_t idle_polls;
	uint32_t idle_deep_us;
	const char *control;
	const char *metrics_address;	/* NULL: no Prometheus endpoint */
	uint64_t log_mb;
	uint32_t max_msg;
	uint32_t window;
	uint32_t heartbeat_ms;
	uint32_t session_timeout_ms;
	uint32_t msg_timeout_ms;
	uint32_t max_req_delay_ms;
	uint32_t chan_window;
	uint32_t sub_chans;
	uint32_t sub_chans_per_src;
	uint64_t sub_chan_idle_s;
	uint32_t max_sessions;
	uint32_t max_sessions_src;
	int auto_create;
	uint16_t auto_create_parts;
	uint32_t auto_topics_src;
	uint32_t max_topics;
	uint64_t log_budget_mb;		/* UINT64_MAX: auto */
	uint32_t node_id;
	uint32_t mbufs;
	int no_offload;
	int anon_publish;
	const char *topics[MAX_TOPICS_AT_START];
	uint16_t ntopics;
	const char *ready_file;
	const char *data_dir;
	const char *cluster;
	const char *cluster_key;
	int insecure_cluster;
	uint32_t isr_lag_ms;
	const char *etcd;		/* etcd endpoints: the etcd membership backend */
	const char *etcd_prefix;
	uint32_t etcd_ttl_s;
	const char *token_file;
	uint32_t segment_mb;
	struct sl_persist_policy policy;
};

static void
usage(const char *prog)
{
	printf("Usage: %s [EAL options] -- [options]\n"
	       "  --config FILE          read options from FILE: one 'name value' per line,\n"
	       "                         names as below without '--', '#' starts a comment\n"
	       "  --port DEVARGS         port to serve (repeatable, up to %d): a PCI address\n"
	       "                         or vdev devargs, e.g. net_tap0,iface=sl0\n"
	       "  --ip A.B.C.D[/LEN]     this node's IPv4 address, one per --port; with /LEN,\n"
	       "                         replica datagrams to nodes in that subnet leave by\n"
	       "                         this port (else by the first)\n"
	       "  --udp-port N           client UDP port (default %u)\n"
	       "  --workers N            worker lcores (default: all lcores but the main\n"
	       "                         and the persistence lcore)\n"
	       "  --idle MODE            busy: poll forever (lowest latency, a core per\n"
	       "                         worker); adaptive: sleep when idle (backing off);\n"
	       "                         interrupt: block on RX interrupts when idle where the\n"
	       "                         ports have them (net_tap, net_af_xdp, NICs), else\n"
	       "                         adaptive with a deeper sleep after a silence; auto\n"
	       "                         (default): interrupt where every RX queue of a worker\n"
	       "                         has one, else adaptive\n"
	       "  --idle-max-us N        longest adaptive sleep (default 1000)\n"
	       "  --idle-min-us N        first adaptive sleep, doubled up to --idle-max-us\n"
	       "                         (default 50)\n"
	       "  --idle-polls N         empty polls before the first adaptive sleep or the\n"
	       "                         interrupt block (default 32)\n"
	       "  --idle-deep-us N       longest adaptive sleep after 200 ms without work\n"
	       "                         (default 0: --idle-max-us; with --idle interrupt on\n"
	       "                         a port without RX interrupts: 10000)\n"
	       "  --control PATH         control socket (default /run/sluice/sluiced.sock)\n"
	       "  --metrics-address HOST:PORT  serve Prometheus metrics at\n"
	       "                         http://HOST:PORT/metrics (default: off)\n"
	       "  --log-mb N             in-memory log per partition, MiB (default 64)\n"
	       "  --mtu N                port MTU (default: the port's); sets the message limit\n"
	       "  --max-msg N            largest message (default: what fits one datagram)\n"
	       "  --window N             requests in flight per session (default 64, < %d)\n"
	       "  --heartbeat-ms N       client heartbeat interval (default 1000)\n"
	       "  --session-timeout-ms N session expiry after silence (default 10000)\n"
	       "  --msg-timeout-ms N     in-flight message timeout (default 60000)\n"
	       "  --max-req-delay-ms N   longest REQ delay (default 3600000)\n"
	       "  --chan-window N        max in flight per channel, power of 2 (default 1024)\n"
	       "  --sub-channels N       channels clients may create by SUB, per partition\n"
	       "                         (default 16, 0 = up to the %d channels a partition has)\n"
	       "  --sub-channels-per-source N  of those, per client address (default 8, 0 = no\n"
	       "                         limit of its own)\n"
	       "  --sub-channel-idle-s N delete a channel created by SUB (durable) once it had\n"
	       "                         no subscriber for N seconds (default 0 = never)\n"
	       "  --max-sessions N       (default 4096)\n"
	       "  --max-sessions-per-source N  live sessions one client address may hold\n"
	       "                         (default 256, 0: no limit): a HELLO flood from one\n"
	       "                         address cannot lock other clients out\n"
	       "  --auto-create[=N]      create unknown topics on first publish, N partitions\n"
	       "                         (off by default)\n"
	       "  --auto-topics-per-source N  topics one client address may create by\n"
	       "                         publishing (default 64, 0 = no limit of its own)\n"
	       "  --max-topics N         most topics this node holds (default %d); a creation\n"
	       "                         past it is refused (SL_E_CAPACITY)\n"
	       "  --log-budget-mb N|auto memory all partitions may hold, MiB: 24 KiB each when\n"
	       "                         created, then what their logs grow to (0 = no budget).\n"
	       "                         Default auto: 3/4 of the kernel's MemAvailable at start\n"
	       "  --topic NAME[:N[:D]]   create topic NAME with N partitions and durability D\n"
	       "                         (memory|disk) at start, unless the data directory\n"
	       "                         already holds it\n"
	       "  --node-id N            this node's id (default 1)\n"
	       "  --mbufs N              mbuf pool size (default 16383)\n"
	       "  --no-offload           do not use checksum offloads\n"
	       "  --anon-publish         accept PUB/MPUB without a session (session 0: packet\n"
	       "                         generators; no retry detection, at most once)\n"
	       "  --token-file FILE      take only clients with a token listed in FILE, each\n"
	       "                         with its rights per topic (mode 0600; make tokens\n"
	       "                         with `sluicectl token gen`, reload with `sluicectl\n"
	       "                         token reload`). Without it any client that reaches\n"
	       "                         the port may publish and consume\n"
	       "  --ready-file PATH      write PATH once serving (for scripts)\n"
	       "  --cluster FILE         static cluster membership: nodes, and per partition\n"
	       "                         its replicas, leader, ISR and epoch (docs/operations.md)\n"
	       "  --cluster-key FILE     authenticate replica traffic with the key(s) in FILE\n"
	       "                         (mode 0600; make one with `sluicectl keygen FILE`);\n"
	       "                         needed with a cluster of more than one node\n"
	       "  --isr-lag-ms N         a follower that has not held the leader's whole log\n"
	       "                         within N ms leaves the ISR (default 1000)\n"
	       "  --etcd URL[,URL...]    join the cluster whose state etcd holds (no cluster\n"
	       "                         file): http://HOST:2379,... (docs/cluster.md)\n"
	       "  --etcd-prefix P        the cluster's key prefix in etcd (default %s)\n"
	       "  --etcd-ttl-s N         this node's lease in etcd: a node silent this long\n"
	       "                         is gone and its partitions fail over (default %u)\n"
	       "  --insecure-cluster     run a multi-node cluster without a key: anyone who can\n"
	       "                         reach the replica port can forge replica datagrams\n"
	       "  --data-dir DIR         keep topics on disk in DIR (default: memory only);\n"
	       "                         topics saved there are recreated at start\n"
	       "  --durability memory|disk  default for new topics (default memory): disk\n"
	       "                         acknowledges a publish only once it is on disk\n"
	       "  --sync always|every:N|ms:T  default sync policy (default always: group\n"
	       "                         commit, one fdatasync per write batch)\n"
	       "  --segment-mb N         disk log segment size (default 64)\n"
	       "  --retain-mb N          default retention per partition, MiB (0 = no limit)\n"
	       "  --retain-age-s N       default retention by age, seconds (0 = no limit)\n"
	       "  --help\n",
	       prog, SL_BROKER_MAX_PORTS, SL_WIRE_UDP_PORT, SL_IDEM_WINDOW,
	       SL_BROKER_MAX_CHANNELS, SL_COORD_MAX_TOPICS_DEFAULT, SL_MEMBERSHIP_ETCD_PREFIX,
	       SL_MEMBERSHIP_ETCD_TTL_S);
}

static void
opts_default(struct opts *o)
{
	memset(o, 0, sizeof(*o));
	o->udp_port = SL_WIRE_UDP_PORT;
	o->idle = SL_IDLE_AUTO;
	o->idle_max_us = 1000;
	o->idle_min_us = 50;
	o->idle_polls = 32;
	o->control = "/run/sluice/sluiced.sock";
	o->log_mb = 64;
	o->window = 64;
	o->heartbeat_ms = 1000;
	o->session_timeout_ms = 10000;
	o->msg_timeout_ms = 60000;
	o->max_req_delay_ms = 3600000;
	o->chan_window = 1024;
	o->sub_chans = 16;
	o->sub_chans_per_src = 8;
	o->sub_chan_idle_s = 0;
	o->isr_lag_ms = 1000;
	o->max_sessions = 4096;
	o->max_sessions_src = 256;
	o->auto_create_parts = 1;
	o->auto_topics_src = 64;
	o->max_topics = SL_COORD_MAX_TOPICS_DEFAULT;
	o->log_budget_mb = UINT64_MAX;
	o->node_id = 1;
	o->mbufs = 16383;
	o->segment_mb = 64;
	o->policy.durability = SL_PERSIST_MEMORY;
	o->policy.sync = SL_PERSIST_SYNC_ALWAYS;
	o->policy.retain_unconsumed = 1;
}

enum {
	O_CONFIG = 256, O_PORT, O_IP, O_UDP_PORT, O_WORKERS, O_IDLE, O_IDLE_MAX, O_CONTROL,
	O_IDLE_MIN, O_IDLE_POLLS, O_IDLE_DEEP,
	O_LOG_MB, O_MTU, O_MAX_MSG, O_WINDOW, O_HB, O_SESS_TO, O_MSG_TO, O_REQ_DELAY,
	O_CHAN_WIN, O_MAX_SESS, O_MAX_SESS_SRC, O_AUTO, O_TOPIC, O_NODE, O_MBUFS, O_NO_OFFLOAD, O_READY,
	O_ANON, O_CLUSTER, O_CLUSTER_KEY, O_INSECURE_CLUSTER, O_ISR_LAG, O_DATA_DIR, O_DURABILITY, O_SYNC,
	O_SEGMENT_MB, O_RETAIN_MB, O_RETAIN_AGE, O_SUB_CHANS, O_SUB_CHANS_SRC, O_SUB_CHAN_IDLE,
	O_MAX_TOPICS, O_LOG_BUDGET, O_ETCD, O_ETCD_PREFIX, O_ETCD_TTL,
	O_TOKEN_FILE, O_AUTO_SRC, O_METRICS, O_HELP
};

static const struct option long_opts[] = {
	{"config", required_argument, NULL, O_CONFIG},
	{"port", required_argument, NULL, O_PORT},
	{"ip", required_argument, NULL, O_IP},
	{"udp-port", required_argument, NULL, O_UDP_PORT},
	{"workers", required_argument, NULL, O_WORKERS},
	{"idle", required_argument, NULL, O_IDLE},
	{"idle-max-us", required_argument, NULL, O_IDLE_MAX},
	{"idle-min-us", required_argument, NULL, O_IDLE_MIN},
	{"idle-polls", required_argument, NULL, O_IDLE_POLLS},
	{"idle-deep-us", required_argument, NULL, O_IDLE_DEEP},
	{"control", required_argument, NULL, O_CONTROL},
	{"log-mb", required_argument, NULL, O_LOG_MB},
	{"mtu", required_argument, NULL, O_MTU},
	{"max-msg", required_argument, NULL, O_MAX_MSG},
	{"window", required_argument, NULL, O_WINDOW},
	{"heartbeat-ms", required_argument, NULL, O_HB},
	{"session-timeout-ms", required_argument, NULL, O_SESS_TO},
	{"msg-timeout-ms", required_argument, NULL, O_MSG_TO},
	{"max-req-delay-ms", required_argument, NULL, O_REQ_DELAY},
	{"chan-window", required_argument, NULL, O_CHAN_WIN},
	{"sub-channels", required_argument, NULL, O_SUB_CHANS},
	{"sub-channels-per-source", required_argument, NULL, O_SUB_CHANS_SRC},
	{"sub-channel-idle-s", required_argument, NULL, O_SUB_CHAN_IDLE},
	{"max-sessions", required_argument, NULL, O_MAX_SESS},
	{"max-sessions-per-source", required_argument, NULL, O_MAX_SESS_SRC},
	{"auto-create", optional_argument, NULL, O_AUTO},
	{"auto-topics-per-source", required_argument, NULL, O_AUTO_SRC},
	{"max-topics", required_argument, NULL, O_MAX_TOPICS},
	{"log-budget-mb", required_argument, NULL, O_LOG_BUDGET},
	{"topic", required_argument, NULL, O_TOPIC},
	{"node-id", required_argument, NULL, O_NODE},
	{"mbufs", required_argument, NULL, O_MBUFS},
	{"no-offload", no_argument, NULL, O_NO_OFFLOAD},
	{"ready-file", required_argument, NULL, O_READY},
	{"anon-publish", no_argument, NULL, O_ANON},
	{"data-dir", required_argument, NULL, O_DATA_DIR},
	{"cluster", required_argument, NULL, O_CLUSTER},
	{"cluster-key", required_argument, NULL, O_CLUSTER_KEY},
	{"insecure-cluster", no_argument, NULL, O_INSECURE_CLUSTER},
	{"isr-lag-ms", required_argument, NULL, O_ISR_LAG},
	{"etcd", required_argument, NULL, O_ETCD},
	{"etcd-prefix", required_argument, NULL, O_ETCD_PREFIX},
	{"etcd-ttl-s", required_argument, NULL, O_ETCD_TTL},
	{"token-file", required_argument, NULL, O_TOKEN_FILE},
	{"durability", required_argument, NULL, O_DURABILITY},
	{"sync", required_argument, NULL, O_SYNC},
	{"segment-mb", required_argument, NULL, O_SEGMENT_MB},
	{"retain-mb", required_argument, NULL, O_RETAIN_MB},
	{"retain-age-s", required_argument, NULL, O_RETAIN_AGE},
	{"metrics-address", required_argument, NULL, O_METRICS},
	{"help", no_argument, NULL, O_HELP},
	{NULL, 0, NULL, 0},
};

static int
parse_u64(const char *name, const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno != 0 || end == s || *end != '\0' || v < min || v > max) {
		fprintf(stderr, "sluiced: --%s: '%s' is not a number in [%llu, %llu]\n", name, s,
			(unsigned long long)min, (unsigned long long)max);
		return -1;
	}
	*out = v;
	return 0;
}

static int parse_file(struct opts *o, const char *path, int depth);

#define NUM(field, lo, hi)                                                                \
	do {                                                                              \
		uint64_t v_;                                                              \
		if (parse_u64(name, arg, lo, hi, &v_) != 0)                               \
			return -1;                                                        \
		o->field = (__typeof__(o->field))v_;                                      \
	} while (0)

/* Apply one option (from argv or a config file). arg may be NULL for flags. */
static int
apply(struct opts *o, int id, const char *name, const char *arg, int depth)
{
	switch (id) {
	case O_CONFIG:
		return parse_file(o, arg, depth + 1);
	case O_PORT:
		if (o->nports == SL_BROKER_MAX_PORTS)
			goto too_many;
		o->ports[o->nports++] = arg;
		return 0;
	case O_IP:
		if (o->nips == SL_BROKER_MAX_PORTS)
			goto too_many;
		o->ips[o->nips++] = arg;
		return 0;
	case O_UDP_PORT: NUM(udp_port, 1, 65535); return 0;
	case O_WORKERS: NUM(workers, 1, SL_BROKER_MAX_WORKERS); return 0;
	case O_IDLE:
		if (strcmp(arg, "busy") == 0)
			o->idle = SL_IDLE_BUSY;
		else if (strcmp(arg, "adaptive") == 0)
			o->idle = SL_IDLE_ADAPTIVE;
		else if (strcmp(arg, "interrupt") == 0)
			o->idle = SL_IDLE_INTERRUPT;
		else if (strcmp(arg, "auto") == 0)
			o->idle = SL_IDLE_AUTO;
		else {
			fprintf(stderr,
				"sluiced: --idle must be busy, adaptive, interrupt or auto\n");
			return -1;
		}
		return 0;
	case O_IDLE_MAX: NUM(idle_max_us, 10, 100000); return 0;
	case O_IDLE_MIN: NUM(idle_min_us, 1, 100000); return 0;
	case O_IDLE_POLLS: NUM(idle_polls, 1, 1000000); return 0;
	case O_IDLE_DEEP: NUM(idle_deep_us, 0, 1000000); return 0;
	case O_CONTROL: o->control = arg; return 0;
	case O_METRICS: o->metrics_address = arg; return 0;
	case O_LOG_MB: NUM(log_mb, 1, 1 << 20); return 0;
	case O_MTU: NUM(mtu, 576, 9600); return 0;
	case O_MAX_MSG: NUM(max_msg, 1, SL_WIRE_DGRAM_MAX_JUMBO); return 0;
	case O_WINDOW: NUM(window, 1, SL_IDEM_WINDOW - 1); return 0;
	case O_HB: NUM(heartbeat_ms, 10, 600000); return 0;
	case O_SESS_TO: NUM(session_timeout_ms, 100, 3600000); return 0;
	case O_MSG_TO: NUM(msg_timeout_ms, 1, 86400000); return 0;
	case O_REQ_DELAY: NUM(max_req_delay_ms, 0, 86400000); return 0;
	case O_CHAN_WIN: NUM(chan_window, 1, 65536); return 0;
	case O_SUB_CHANS: NUM(sub_chans, 0, SL_BROKER_MAX_CHANNELS); return 0;
	case O_SUB_CHANS_SRC: NUM(sub_chans_per_src, 0, SL_BROKER_MAX_CHANNELS); return 0;
	case O_SUB_CHAN_IDLE: NUM(sub_chan_idle_s, 0, 100u * 365 * 86400); return 0;
	case O_MAX_SESS: NUM(max_sessions, 1, 1 << 19); return 0;
	case O_MAX_SESS_SRC: NUM(max_sessions_src, 0, 1 << 19); return 0;
	case O_AUTO:
		o->auto_create = 1;
		if (arg != NULL)
			NUM(auto_create_parts, 1, SL_COORD_MAX_PARTS);
		return 0;
	case O_MAX_TOPICS: NUM(max_topics, 1, 1 << 20); return 0;
	case O_AUTO_SRC: NUM(auto_topics_src, 0, 1 << 20); return 0;
	case O_LOG_BUDGET:
		if (strcmp(arg, "auto") == 0) {
			o->log_budget_mb = UINT64_MAX;
			return 0;
		}
		NUM(log_budget_mb, 0, 1ull << 32);
		return 0;
	case O_TOPIC:
		if (o->ntopics == MAX_TOPICS_AT_START)
			goto too_many;
		o->topics[o->ntopics++] = arg;
		return 0;
	case O_NODE: NUM(node_id, 1, UINT32_MAX); return 0;
	case O_MBUFS: NUM(mbufs, 1023, 1 << 22); return 0;
	case O_NO_OFFLOAD: o->no_offload = 1; return 0;
	case O_READY: o->ready_file = arg; return 0;
	case O_ANON: o->anon_publish = 1; return 0;
	case O_DATA_DIR: o->data_dir = arg; return 0;
	case O_CLUSTER: o->cluster = arg; return 0;
	case O_CLUSTER_KEY: o->cluster_key = arg; return 0;
	case O_INSECURE_CLUSTER: o->insecure_cluster = 1; return 0;
	case O_ISR_LAG: NUM(isr_lag_ms, 10, 3600000); return 0;
	case O_ETCD: o->etcd = arg; return 0;
	case O_ETCD_PREFIX: o->etcd_prefix = arg; return 0;
	case O_ETCD_TTL: NUM(etcd_ttl_s, 1, 3600); return 0;
	case O_TOKEN_FILE: o->token_file = arg; return 0;
	case O_DURABILITY:
		if (strcmp(arg, "disk") == 0)
			o->policy.durability = SL_PERSIST_DISK;
		else if (strcmp(arg, "memory") == 0)
			o->policy.durability = SL_PERSIST_MEMORY;
		else
			goto bad;
		return 0;
	case O_SYNC:
		if (sl_persist_parse_sync(arg, &o->policy) != 0)
			goto bad;
		return 0;
	case O_SEGMENT_MB: NUM(segment_mb, 1, 1 << 16); return 0;
	case O_RETAIN_MB:
		NUM(policy.retain_bytes, 0, 1u << 30);
		o->policy.retain_bytes <<= 20;
		return 0;
	case O_RETAIN_AGE: NUM(policy.retain_age_s, 0, UINT32_MAX); return 0;
	default:
		return -1;
	}
too_many:
	fprintf(stderr, "sluiced: too many --%s\n", name);
	return -1;
bad:
	fprintf(stderr, "sluiced: --%s %s: see --help for the values it takes\n", name, arg);
	return -1;
}

static int
parse_file(struct opts *o, const char *path, int depth)
{
	FILE *f;
	char line[1024];
	int lineno = 0, rc = 0;

	if (depth > 4) {
		fprintf(stderr, "sluiced: config files nested too deep\n");
		return -1;
	}
	f = fopen(path, "r");
	if (f == NULL) {
		fprintf(stderr, "sluiced: cannot open config %s: %s\n", path, strerror(errno));
		return -1;
	}
	while (rc == 0 && fgets(line, sizeof(line), f) != NULL) {
		char *p = line, *name, *val, *hash;
		const struct option *lo;

		lineno++;
		hash = strchr(p, '#');
		if (hash != NULL)
			*hash = '\0';
		name = strtok(p, " \t\r\n=");
		if (name == NULL)
			continue;
		val = strtok(NULL, " \t\r\n");
		for (lo = long_opts; lo->name != NULL; lo++)
			if (strcmp(lo->name, name) == 0)
				break;
		if (lo->name == NULL || lo->val == O_HELP) {
			fprintf(stderr, "sluiced: %s:%d: unknown option '%s'\n", path, lineno, name);
			rc = -1;
			break;
		}
		if (lo->has_arg == required_argument && val == NULL) {
			fprintf(stderr, "sluiced: %s:%d: '%s' needs a value\n", path, lineno, name);
			rc = -1;
			break;
		}
		/* values outlive the file: keep them */
		rc = apply(o, lo->val, name, val ? strdup(val) : NULL, depth);
	}
	fclose(f);
	return rc;
}

static int
parse_args(struct opts *o, int argc, char **argv)
{
	int c, idx;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", long_opts, &idx)) != -1) {
		if (c == 'h' || c == O_HELP) {
			usage(argv[0]);
			exit(0);
		}
		if (c == '?')
			return -1;
		if (apply(o, c, long_opts[idx].name, optarg, 0) != 0)
			return -1;
	}
	if (optind < argc) {
		fprintf(stderr, "sluiced: unexpected argument '%s'\n", argv[optind]);
		return -1;
	}
	if (o->nports == 0) {
		fprintf(stderr, "sluiced: no --port given (e.g. --port net_tap0,iface=sl0 "
				"--ip 192.0.2.1); see --help\n");
		return -1;
	}
	if (o->nips != o->nports) {
		fprintf(stderr, "sluiced: %u --port but %u --ip: give one address per port\n",
			o->nports, o->nips);
		return -1;
	}
	if (o->etcd != NULL && o->cluster != NULL) {
		fprintf(stderr, "sluiced: --cluster and --etcd are two ways to know the cluster: "
				"give one\n");
		return -1;
	}
	if (o->chan_window & (o->chan_window - 1)) {
		fprintf(stderr, "sluiced: --chan-window must be a power of two\n");
		return -1;
	}
	if (o->token_file != NULL && o->anon_publish) {
		fprintf(stderr, "sluiced: --anon-publish cannot go with --token-file: a publish "
				"without a session carries no token\n");
		return -1;
	}
	return 0;
}

static void
on_signal(int sig)
{
	(void)sig;
	__atomic_store_n(&sl_broker_quit, 1, __ATOMIC_RELAXED);
}

static int
rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(path);
}

/* The cluster key(s) for replica authentication: required with more than one node, unless
 * the operator says --insecure-cluster. */
static int
load_cluster_key(const struct opts *o, struct sl_broker_conf *bc, uint32_t nnodes)
{
	char err[512];
	int n;

	if (o->cluster_key == NULL) {
		if (nnodes > 1 && !o->insecure_cluster) {
			MLOG(ERR, "%s %s has %u nodes: replica traffic needs a key "
				  "(--cluster-key FILE, made by `sluicectl keygen FILE`), or "
				  "--insecure-cluster to run without one",
			     o->etcd != NULL ? "--etcd" : "--cluster",
			     o->etcd != NULL ? o->etcd : o->cluster, nnodes);
			return -EINVAL;
		}
		if (nnodes > 1)
			MLOG(WARNING, "--insecure-cluster: replica traffic is not authenticated; "
				      "anyone who reaches the replica port can forge it");
		return 0;
	}
	n = sl_cluster_key_load(o->cluster_key, bc->cluster_keys, SL_BROKER_MAX_KEYS, err,
				sizeof(err));
	if (n < 0) {
		MLOG(ERR, "--cluster-key %s", err);
		return n;
	}
	bc->ncluster_keys = (uint8_t)n;
	MLOG(INFO, "replica traffic authenticated with %d cluster key(s)", n);
	return 0;
}

/* The client tokens (--token-file), or the open mode, said clearly in the start log. */
static int
load_tokens(const struct opts *o, struct sl_broker_conf *bc)
{
	char err[512];

	bc->token_file = o->token_file;
	if (o->token_file == NULL) {
		MLOG(WARNING, "no --token-file: any client that reaches the port may publish and "
			      "consume");
		return 0;
	}
	bc->auth = sl_auth_load(o->token_file, NULL, err, sizeof(err));
	if (bc->auth == NULL) {
		MLOG(ERR, "--token-file %s", err);
		return -EINVAL;
	}
	MLOG(INFO, "client tokens: %u token(s) from %s; HELLO without a known token is refused",
	     sl_auth_count(bc->auth), o->token_file);
	return 0;
}

/* Open the membership seam (before the ports: they serve the replica port too) and copy its
 * node list into the broker's node table. */
static struct sl_membership *
open_membership(const struct opts *o, struct sl_broker_conf *bc)
{
	char err[512] = "";
	struct sl_membership_conf mc = {
		.backend = o->etcd != NULL ? "etcd" : "static",
		.source = o->etcd != NULL ? o->etcd : o->cluster,
		.node_id = o->node_id,
		.err = err,
		.err_len = sizeof(err),
		.prefix = o->etcd_prefix,
		.port = (uint16_t)(o->udp_port + 1),
		.lease_ttl_s = o->etcd_ttl_s,
	};
	struct sl_membership *m;
	const struct sl_membership_node *me;
	uint32_t i;

	if (o->etcd != NULL) {
		/* the node's replica address: its first --ip */
		char ip[INET_ADDRSTRLEN] = "";
		struct in_addr a;

		snprintf(ip, sizeof(ip), "%.*s", (int)strcspn(o->ips[0], "/"), o->ips[0]);
		if (inet_pton(AF_INET, ip, &a) != 1) {
			MLOG(ERR, "--etcd: --ip %s is not an IPv4 address", o->ips[0]);
			return NULL;
		}
		mc.ip = ntohl(a.s_addr);
	}
	m = sl_membership_open(&mc);
	if (m == NULL) {
		MLOG(ERR, "%s %s", o->etcd != NULL ? "--etcd" : "--cluster",
		     err[0] != '\0' ? err : rte_strerror(rte_errno));
		return NULL;
	}
	if (o->cluster == NULL && o->etcd == NULL)
		return m;
	me = sl_membership_node(m, o->node_id);
	if (me->port != o->udp_port + 1) {
		MLOG(ERR, "--cluster %s: node %u's replica port must be the client port + 1 (%u)",
		     o->cluster, o->node_id, o->udp_port + 1);
		goto fail;
	}
	if (m->nnodes > SL_BROKER_MAX_NODES) {
		MLOG(ERR, "--cluster %s: more than %d nodes", o->cluster, SL_BROKER_MAX_NODES);
		goto fail;
	}
	for (i = 0; i < m->nnodes; i++) {
		bc->nodes[i].id = m->nodes[i].id;
		bc->nodes[i].ip = rte_cpu_to_be_32(m->nodes[i].ip);
		bc->nodes[i].port = m->nodes[i].port;
	}
	bc->nnodes = m->nnodes;
	bc->repl_port = me->port;
	/* with etcd, more nodes may join at any time: a key is needed from the start */
	if (load_cluster_key(o, bc, o->etcd != NULL ? SL_MEMBERSHIP_MAX_NODES : m->nnodes) != 0)
		goto fail;
	return m;
fail:
	sl_membership_close(m);
	return NULL;
}

static int
create_topic_arg(struct sl_broker *b, const char *arg, const struct sl_persist_policy *def)
{
	char name[SL_COORD_NAME_MAX + 1];
	const char *colon = strchr(arg, ':');
	size_t len = colon ? (size_t)(colon - arg) : strlen(arg);
	char *end = NULL;
	unsigned long parts = colon ? strtoul(colon + 1, &end, 10) : 1;
	struct sl_persist_policy pol = *def;
	int rc;

	if (end != NULL && *end == ':') {
		if (strcmp(end + 1, "disk") == 0)
			pol.durability = SL_PERSIST_DISK;
		else if (strcmp(end + 1, "memory") == 0)
			pol.durability = SL_PERSIST_MEMORY;
		else
			parts = 0;
	} else if (end != NULL && *end != '\0') {
		parts = 0;
	}
	if (len == 0 || len > SL_COORD_NAME_MAX || parts == 0 || parts > SL_COORD_MAX_PARTS) {
		MLOG(ERR, "--topic %s: expected NAME[:PARTITIONS[:memory|disk]]", arg);
		return -EINVAL;
	}
	memcpy(name, arg, len);
	name[len] = '\0';
	rc = sl_broker_topic_create(b, name, (uint16_t)parts, 0, &pol);
	if (rc == -SL_E_EXISTS &&
	    sl_coord_topic_find(sl_broker_coord(b), name, (uint32_t)len) == NULL) {
		/* a directory of that name the start skipped: serve the rest */
		MLOG(ERR, "--topic %s: not served: the data directory holds a '%s' that was not "
			  "loaded (see above)", arg, name);
		return 0;
	}
	if (rc == -SL_E_EXISTS) {
		MLOG(INFO, "--topic %s: already in the data directory, kept as it is", arg);
		return 0;
	}
	if (rc != 0)
		MLOG(ERR, "--topic %s: %s%s", arg, sl_strerror(rc),
		     rc == -SL_E_INVAL && pol.durability == SL_PERSIST_DISK && b != NULL ?
			     " (disk durability needs --data-dir)" :
		     rc == -SL_E_NAME ? " (" SL_NAME_RULE ")" :
		     rc == -SL_E_CAPACITY ? " (--max-topics, --log-budget-mb, --log-mb)" : "");
	return rc;
}

/* Every partition with a data directory keeps files open (disk log segments, index,
 * memory log file): raise the soft limit on descriptors to the hard limit, so that a node
 * holds thousands of partitions. The new soft limit, logged. */
#define NOFILE_WANT (UINT64_C(1) << 20)	/* 4 per partition with a data dir: 10,000s */

static void
raise_nofile(void)
{
	struct rlimit rl, want;
	unsigned long long nr_open = 0;
	FILE *f;

	if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
		return;
	/* privileged (CAP_SYS_RESOURCE): the hard limit too, up to the kernel's nr_open */
	f = fopen("/proc/sys/fs/nr_open", "r");
	if (f != NULL) {
		if (fscanf(f, "%llu", &nr_open) != 1)
			nr_open = 0;
		fclose(f);
	}
	want.rlim_cur = want.rlim_max = RTE_MIN((rlim_t)NOFILE_WANT, (rlim_t)nr_open);
	if (want.rlim_max > rl.rlim_max && setrlimit(RLIMIT_NOFILE, &want) == 0) {
		rl = want;
	} else if (rl.rlim_cur < rl.rlim_max) {
		rlim_t old = rl.rlim_cur;

		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
			rl.rlim_cur = old;
	}
	MLOG(INFO, "file descriptors: up to %llu (RLIMIT_NOFILE; a partition with a data "
	     "directory keeps 4 open)", (unsigned long long)rl.rlim_cur);
}

/* fd to an epoll set, for readability */
static int
epoll_add(int ep, int fd)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.fd = fd};

	return epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
}

/*
 * net_tap's frame signals. DPDK's net_tap PMD asks the kernel for a signal on every frame
 * its queues receive (F_SETSIG on the queue's fd: SIGIO in older releases, a real-time
 * signal in 22.11; its handler bumps a counter the receive burst reads before its read()),
 * delivered to any thread of the process that does not block it: the control thread took
 * most of them (each ended its poll with EINTR and ran a loop iteration: 0.3 of a core at
 * 30 k frames/s over a tap, 14 k wake-ups a second, 2026-11-27) and a worker took some in
 * the middle of its loop. SIGIO and the real-time signals are blocked before the EAL
 * starts any thread, so every thread inherits the block, and one thread that does nothing
 * else, sl-sigio, on the main lcore's CPUs, takes them all. If it cannot start, the main
 * thread takes them again as before. (glibc's own signals lie below SIGRTMIN; nothing in
 * sluiced directs a real-time signal at a particular thread.)
 */
static void
frame_signals(sigset_t *set)
{
	int sig;

	sigemptyset(set);
	sigaddset(set, SIGIO);
	for (sig = SIGRTMIN; sig <= SIGRTMAX; sig++)
		sigaddset(set, sig);
}

static void *
sigio_main(void *arg)
{
	sigset_t set;

	(void)arg;
	frame_signals(&set);
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);
	for (;;)
		pause();
	return NULL;
}

/* Before rte_eal_init, main thread. Returns 1 when sl-sigio runs (*tid set). */
static int
sigio_thread_start(pthread_t *tid)
{
	sigset_t set;

	frame_signals(&set);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	if (pthread_create(tid, NULL, sigio_main, NULL) != 0) {
		pthread_sigmask(SIG_UNBLOCK, &set, NULL);
		return 0;
	}
	pthread_detach(*tid);
	pthread_setname_np(*tid, "sl-sigio");
	return 1;
}

int
main(int argc, char **argv)
{
	struct opts o;
	struct sl_broker_conf bc;
	struct sl_broker *b = NULL;
	struct sl_persist *persist = NULL;
	struct sl_persist_conf pc;
	struct sl_membership *mship = NULL;
	struct sl_ctl *ctl = NULL;
	struct sl_ctl_conf cc;
	struct sl_metrics *metrics = NULL;
	struct rte_mempool *pool = NULL;
	unsigned int lcore, lcores[RTE_MAX_LCORE], nl = 0;
	uint16_t i, nopen = 0;
	uint32_t dataroom, skipped = 0;
	char rundir[PATH_MAX];
	int ret, rc = 1, eal_up = 0, wait_fd = -1, sigio_up;
	pthread_t sigio_tid;
	cpu_set_t main_cpus;

	sigio_up = sigio_thread_start(&sigio_tid);
	ret = rte_eal_init(argc, argv);
	if (ret < 0) {
		fprintf(stderr, "sluiced: EAL init failed: %s\n", rte_strerror(rte_errno));
		return 1;
	}
	eal_up = 1;
	/* sl-sigio wakes once per tap frame: keep it off the workers' CPUs */
	if (sigio_up && pthread_getaffinity_np(pthread_self(), sizeof(main_cpus), &main_cpus) == 0)
		(void)pthread_setaffinity_np(sigio_tid, sizeof(main_cpus), &main_cpus);
	snprintf(rundir, sizeof(rundir), "%s", rte_eal_get_runtime_dir());
	argc -= ret;
	argv += ret;
	argv[0] = "sluiced";
	opts_default(&o);
	if (parse_args(&o, argc, argv) != 0)
		goto out;
	raise_nofile();
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGPIPE, SIG_IGN);
	rcu_register_thread();

	RTE_LCORE_FOREACH_WORKER(lcore)
		lcores[nl++] = lcore;
	if (nl < 2) {
		MLOG(ERR, "need at least 3 lcores (control, worker, persistence), have %u; "
			  "e.g. -l 0-2, or on 2 CPUs --lcores 0@0,1@1,2@0", nl + 1);
		goto out_rcu;
	}
	if (o.workers == 0)
		o.workers = (uint16_t)RTE_MIN(nl - 1, (unsigned int)SL_BROKER_MAX_WORKERS);
	if (o.workers > nl - 1) {
		MLOG(ERR, "--workers %u needs %u lcores besides the main one, have %u", o.workers,
		     o.workers + 1, nl);
		goto out_rcu;
	}

	dataroom = RTE_MBUF_DEFAULT_BUF_SIZE;
	if (o.mtu > 1500)
		dataroom = RTE_PKTMBUF_HEADROOM + o.mtu + 64;
	pool = rte_pktmbuf_pool_create("sl_mbufs", o.mbufs, 256, 0, (uint16_t)dataroom,
				       (int)rte_socket_id());
	if (pool == NULL) {
		MLOG(ERR, "mbuf pool: %s", rte_strerror(rte_errno));
		goto out_rcu;
	}

	memset(&bc, 0, sizeof(bc));
	mship = open_membership(&o, &bc);
	if (mship == NULL)
		goto out_rcu;
	for (i = 0; i < o.nports; i++) {
		struct sl_port_conf p = {
			.devargs = o.ports[i],
			.ip = o.ips[i],
			.udp_port = o.udp_port,
			.repl_port = bc.repl_port,
			.nworkers = o.workers,
			.mtu = o.mtu,
			.pool = pool,
			.no_offload = o.no_offload,
			.rx_intr = sl_broker_idle_blocks(o.idle),
		};

		ret = sl_port_open(&p, &bc.ports[i]);
		if (ret != 0) {
			MLOG(ERR, "port %s: %s", o.ports[i], sl_strerror(ret));
			goto out_ports;
		}
		nopen++;
	}
	bc.nports = o.nports;
	bc.node_id = o.node_id;
	bc.nworkers = o.workers;
	for (i = 0; i < o.workers; i++)
		bc.worker_lcores[i] = lcores[i];
	bc.pool = pool;
	bc.socket_id = (int)rte_socket_id();
	bc.idle = o.idle;
	bc.idle_polls = o.idle_polls;
	bc.idle_min_us = o.idle_min_us;
	bc.idle_deep_us = o.idle_deep_us;
	bc.idle_max_us = o.idle_max_us;
	bc.log_bytes = o.log_mb << 20;
	{
		/* the largest message is what fits in one PUB datagram on the smallest MTU,
		 * with the longest topic name and a trace id */
		uint32_t mtu = 9000, limit;

		for (i = 0; i < o.nports; i++)
			mtu = RTE_MIN(mtu, (uint32_t)bc.ports[i].mtu);
		limit = mtu - 28 - SL_WIRE_HDR_LEN - 4 - SL_WIRE_NAME_MAX - 8 - 4;
		if (dataroom - RTE_PKTMBUF_HEADROOM < mtu + 14)
			limit = RTE_MIN(limit, dataroom - RTE_PKTMBUF_HEADROOM - 14 - 28 -
					       SL_WIRE_HDR_LEN - 4 - SL_WIRE_NAME_MAX - 12);
		bc.max_msg = o.max_msg ? RTE_MIN(o.max_msg, limit) : limit;
		if (o.max_msg > limit)
			MLOG(WARNING, "--max-msg %u does not fit one datagram at MTU %u: using %u",
			     o.max_msg, mtu, limit);
	}
	bc.window = o.window;
	bc.heartbeat_ms = o.heartbeat_ms;
	bc.session_timeout_ms = o.session_timeout_ms;
	bc.max_sessions = o.max_sessions;
	bc.max_sessions_per_source = o.max_sessions_src;
	bc.msg_timeout_ms = o.msg_timeout_ms;
	bc.max_req_delay_ms = o.max_req_delay_ms;
	bc.chan_window = o.chan_window;
	bc.sub_chans = o.sub_chans;
	bc.sub_chans_per_src = o.sub_chans_per_src;
	bc.sub_chan_idle_ms = o.sub_chan_idle_s * 1000;
	bc.isr_lag_ms = o.isr_lag_ms;
	bc.auto_create = o.auto_create;
	bc.auto_create_parts = o.auto_create_parts;
	bc.auto_topics_per_src = o.auto_topics_src;
	bc.max_topics = o.max_topics;
	bc.log_budget = o.log_budget_mb == UINT64_MAX ? SL_BROKER_LOG_BUDGET_AUTO :
							 o.log_budget_mb << 20;
	bc.anon_publish = o.anon_publish;
	memset(&pc, 0, sizeof(pc));
	pc.lcore = lcores[o.workers];
	pc.nsources = o.workers;
	/* --idle applies to the workers. The persistence lcore has nothing to write while
	 * durability is "memory", so it always backs off when idle: busy polling there would
	 * only take a CPU from whatever shares it (on small machines, the clients) */
	pc.adaptive_idle = 1;
	pc.idle_max_us = o.idle_max_us;
	pc.socket_id = (int)rte_socket_id();
	persist = sl_persist_open(&pc);
	if (persist == NULL) {
		MLOG(ERR, "persistence lcore: %s", rte_strerror(rte_errno));
		goto out_ports;
	}
	bc.data_dir = o.data_dir;
	bc.persist = persist;
	bc.segment_bytes = (uint64_t)o.segment_mb << 20;
	bc.policy = o.policy;
	if (o.data_dir == NULL && o.policy.durability == SL_PERSIST_DISK) {
		MLOG(ERR, "--durability disk needs --data-dir");
		goto out_broker;
	}
	if (load_tokens(&o, &bc) != 0)
		goto out_broker;
	b = sl_broker_open(&bc);
	if (b == NULL) {
		MLOG(ERR, "broker: %s", rte_strerror(rte_errno));
		goto out_broker;
	}
	bc.auth = NULL;		/* the broker's now */
	{
		uint64_t budget;
		uint32_t maxt;

		sl_coord_limits(sl_broker_coord(b), &maxt, &budget);
		if (budget == 0)
			MLOG(INFO, "room for %u topic(s), no memory budget (--log-budget-mb 0)",
			     maxt);
		else
			MLOG(INFO, "room for %u topic(s), partitions' memory within %s%" PRIu64
				   " MiB (%" PRIu64 " partition(s) of --log-mb %" PRIu64 " full, "
				   "%" PRIu64 " idle)",
			     maxt, o.log_budget_mb == UINT64_MAX ? "auto " : "", budget >> 20,
			     budget / bc.log_bytes, o.log_mb, budget / SL_PARTITION_OPEN_MEM);
	}
	/* topics before traffic: the saved ones (recovering their logs), then --topic */
	ret = sl_broker_topics_load(b, &skipped);
	if (ret < 0) {
		MLOG(ERR, "data directory %s: %s", o.data_dir, sl_strerror(ret));
		goto out_broker;
	}
	if (o.data_dir != NULL)
		MLOG(INFO, "data directory %s: %d topic(s) recovered%s", o.data_dir, ret,
		     skipped ? ", some entries skipped (see above)" : "");
	for (i = 0; i < o.ntopics; i++)
		if (create_topic_arg(b, o.topics[i], &o.policy) != 0)
			goto out_broker;
	if (sl_membership_start(mship, b) != 0) {
		MLOG(ERR, "%s %s: the partition views cannot be installed",
		     o.etcd != NULL ? "--etcd" : "--cluster", o.etcd != NULL ? o.etcd : o.cluster);
		goto out_broker;
	}
	memset(&cc, 0, sizeof(cc));
	cc.path = o.control;
	cc.strerror = sl_strerror;
	ctl = sl_ctl_open(&cc);
	if (ctl == NULL) {
		MLOG(ERR, "control socket %s: %s", o.control, strerror(errno));
		goto out_broker;
	}
	if (sl_admin_register(ctl, b, persist, mship) != 0)
		goto out_broker;
	if (o.metrics_address != NULL) {
		struct sl_metrics_conf mc = {
			.address = o.metrics_address,
			.render = sl_admin_metrics,
			.arg = b,
		};

		metrics = sl_metrics_open(&mc);
		if (metrics == NULL) {
			MLOG(ERR, "--metrics-address %s: %s", o.metrics_address,
			     errno == EINVAL ? "not HOST:PORT" : strerror(errno));
			goto out_broker;
		}
		MLOG(INFO, "Prometheus metrics on http://%s/metrics", o.metrics_address);
	}
	if (sl_persist_start(persist) != 0 || sl_broker_start(b) != 0)
		goto out_stop;
	MLOG(INFO, "node %u serving UDP port %u on %u port(s) with %u worker(s), idle %s, "
		   "max message %u bytes, control socket %s",
	     o.node_id, o.udp_port, o.nports, o.workers,
	     sl_broker_idle_name((enum sl_idle_mode)o.idle), bc.max_msg, o.control);
	if (o.ready_file != NULL) {
		FILE *f = fopen(o.ready_file, "w");

		if (f != NULL) {
			fprintf(f, "%d\n", (int)getpid());
			fclose(f);
		}
	}
	/* the control socket and the partitions' growth requests, as one pollable fd */
	wait_fd = epoll_create1(EPOLL_CLOEXEC);
	if (wait_fd < 0 || epoll_add(wait_fd, sl_ctl_fd(ctl)) != 0 ||
	    epoll_add(wait_fd, sl_broker_grow_fd(b)) != 0) {
		MLOG(ERR, "epoll: %s", strerror(errno));
		goto out_stop;
	}
	while (!__atomic_load_n(&sl_broker_quit, __ATOMIC_RELAXED)) {
		rcu_thread_offline();
		/* the control socket, a log that wants to grow, and the membership backend's
		 * watch, whichever first; else 10 ms (the tick's other work) */
		sl_membership_wait(mship, wait_fd, 10);
		sl_ctl_poll(ctl, 0);
		rcu_thread_online();
		sl_broker_tick(b);
		sl_membership_poll(mship);
		sl_admin_tick(b);
		/* the scrape endpoint: rendering reads the broker (RCU read side) */
		if (metrics != NULL)
			sl_metrics_poll(metrics, 0);
		rcu_quiescent_state();
	}
	MLOG(INFO, "shutting down");
	rc = 0;
out_stop:
	if (wait_fd >= 0)
		close(wait_fd);
	sl_broker_stop(b);
out_broker:
	sl_persist_close(persist);
	sl_metrics_close(metrics);
	sl_admin_unregister();
	sl_ctl_close(ctl);
	sl_broker_close(b);
	sl_auth_free(bc.auth);	/* not taken by a broker */
out_ports:
	for (i = 0; i < nopen; i++)
		sl_port_close(&bc.ports[i]);
	rte_mempool_free(pool);
out_rcu:
	sl_membership_close(mship);
	sodium_memzero(bc.cluster_keys, sizeof(bc.cluster_keys));
	rcu_unregister_thread();
out:
	if (o.ready_file != NULL)
		unlink(o.ready_file);
	if (eal_up) {
		rte_eal_cleanup();
		/* leave nothing behind: runtime dir (config, telemetry socket) */
		nftw(rundir, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
	}
	return rc;
}
