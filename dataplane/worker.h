/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * worker: the polling loop of a worker lcore. Internal to the dataplane: broker.c creates
 * workers and talks to them through command rings.
 *
 * Loop, every iteration (one QSBR read-side critical section):
 *   1. commands from the control thread (attach/detach partitions, channel changes,
 *      snapshots), executed on the partition module (partition.h);
 *   2. frames forwarded by the other workers (SPSC rings, one per source worker); on
 *      worker 0, frames the others hand it to transmit on software-dispatch ports;
 *   3. RX bursts from this worker's queue of every port: parse (net.h), answer ARP/ICMP,
 *      decode the sluice header (wire.h), look the opcode up in the opcode table, check
 *      the session and the idempotency window, forward the request to the partition's
 *      owner or execute it on the partition, answer in place (the request mbuf becomes
 *      the answer). Replica datagrams go through the peer module (peer.h) to the
 *      partition's replication;
 *   4. every owned partition: storage and replication events, completions of held
 *      requests (answered here), deliveries (MSG frames built here); every millisecond
 *      timeouts, trimming and ARP for the peers;
 *   5. TX flush; rcu_quiescent_state(); when nothing happened for idle_polls iterations,
 *      the idle part (offline for RCU): with --idle adaptive a sleep that doubles from
 *      idle_min_us up to idle_max_us (idle_deep_us after SL_WORKER_DEEP_MS without work);
 *      with --idle interrupt, when every RX queue of the worker has interrupts and no
 *      answer is held, a block in rte_epoll_wait on the queues' interrupts and the
 *      worker's bell (sl_worker_wake) until the next timer deadline (partitions'
 *      in-flight and requeue times), at most SL_WORKER_INTR_MAX_MS; otherwise the
 *      adaptive sleeps, with a deeper bound (SL_WORKER_INTR_DEEP_US) after a silence;
 *      with --idle auto (the default) as interrupt where every RX queue has interrupts,
 *      else as adaptive.
 * No heap allocation, syscall, lock or log line per packet.
 */
#ifndef SL_WORKER_H
#define SL_WORKER_H

#include <poll.h>
#include <stdint.h>

#include <rte_common.h>
#include <rte_epoll.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include "bell.h"
#include "broker.h"
#include "idem.h"
#include "net.h"
#include "partition.h"
#include "peer.h"
#include "wire.h"

#define SL_WORKER_MAX_PARTS 16384	/* partitions one worker owns (10,000 per node and more) */
#define SL_WORKER_BURST 32
#define SL_WORKER_TXQ_MAX 64
#define SL_WORKER_HELD 32768	/* requests whose answer waits, per worker */
#define SL_WORKER_HELD_IDLE_US 50u /* longest adaptive idle sleep while a request is held */
#define SL_WORKER_REPL_SPIN_US 500u	/* replicated publishes held: yield, not sleep, until
					 * this long after the last work */
#define SL_WORKER_REPL_HOT 100u	/* replicated records a follower takes in a tick (1 ms)
					 * for it to yield, not nap, between them */
#define SL_WORKER_REPL_FOLLOW_US 200u	/* ... until this long after the last records */
#define SL_WORKER_STARVED_US 250u	/* a yield that gave the CPU away this long: */
#define SL_WORKER_STARVED_MS 10u	/* no yields, only naps, for this long */
#define SL_WORKER_INTR_MAX_MS 100	/* longest interrupt idle block (a quit is seen by then) */
#define SL_WORKER_INTR_DEEP_US 10000u	/* --idle interrupt on ports without RX interrupts:
					 * longest sleep after SL_WORKER_DEEP_MS without work
					 * when --idle-deep-us is not given */
#define SL_WORKER_AUTOCREATE_MAX 64	/* auto-creations waiting for the control thread */

/* A publish for a topic that does not exist yet (with auto-creation): its frame travels
 * to the control thread (autocreate ring), which creates the topic or refuses, and back
 * to the worker that received it (its acdone ring) with the outcome: that worker then
 * handles the frame again, so it is executed on the new topic or answered with rc. */
struct sl_wautocreate {
	struct rte_mbuf *m;		/* the request frame */
	uint16_t pi;			/* port index it came in by */
	uint16_t worker;		/* the worker it goes back to */
	int rc;				/* set by the control thread: 0 or -SL_E_* */
	const char *why;		/* set by the control thread: a static text for the
					 * refusal's ERR, or NULL (sl_strerror of rc) */
	uint32_t src_ip;		/* the client address (network order) */
	char topic[SL_COORD_NAME_MAX + 1];
};

/* A request whose answer waits (a publish until durable and committed, a channel sync,
 * a lookup on disk): the request frame is kept and turned into the answer then. Its
 * index is the token the partition gives back. */
/* adaptive idle: without work for this long, a worker may sleep up to idle_deep_us */
#define SL_WORKER_DEEP_MS 200

struct sl_held {
	struct rte_mbuf *m;		/* NULL: no answer wanted (NOACK) */
	const void *part;		/* the partition (session order of publishes) */
	uint32_t slot;			/* session slot (idempotency window) */
	uint16_t pi;
	uint8_t anon;
	uint8_t used;
	uint8_t repl;			/* on a replicated partition: w->nheld_repl */
	struct sl_net_info info;
	struct sl_wire_hdr hdr;
	struct sl_idem_entry e;
};

enum sl_wcmd_op {
	SL_WCMD_ATTACH = 1,	/* start owning p */
	SL_WCMD_DETACH,		/* stop owning p: drop channels, subscriptions, held answers */
	SL_WCMD_CHAN_CREATE,
	SL_WCMD_CHAN_DELETE,
	SL_WCMD_CHAN_RESET,
	SL_WCMD_PART_INFO,
};

/* A command from the control thread; the worker sets result then done (release). */
struct sl_wcmd {
	enum sl_wcmd_op op;
	struct sl_partition *p;
	struct sl_partition **parts;	/* ATTACH of many (p NULL): all or none; */
	uint32_t nparts;		/* PART_INFO of many (p NULL): into infos[i] */
	struct sl_part_info *infos;
	char chan[SL_CHANNEL_NAME_MAX + 1];
	int ordered;
	uint8_t kind;
	uint64_t value;
	struct sl_part_info *info;
	int result;
	uint64_t out_id;
	int done;
};

struct sl_worker {
	struct sl_broker *b;
	const struct sl_broker_conf *conf;
	uint16_t idx;
	unsigned int lcore;
	struct rte_ring *cmd;				/* control -> this worker */
	struct rte_ring *in[SL_BROKER_MAX_WORKERS];	/* worker i -> this worker */
	struct rte_ring *txin[SL_BROKER_MAX_WORKERS];	/* worker 0 only: worker i's frames
							 * for ports with one TX queue */
	struct rte_ring *autocreate;			/* this worker -> control */
	struct rte_ring *acdone;			/* control -> this worker: the
							 * auto-creations it asked for */
	int ac_rc;					/* > 0 while a frame back from
							 * auto-creation is handled:
							 * -(its rc) or SL_E_TOPIC */
	const char *ac_why;				/* ... and its ERR text or NULL */
	struct rte_ring *viewreq;			/* this worker -> control: ISR */
	struct sl_worker **peers;			/* every worker, by index */
	struct sl_coord *coord;
	struct sl_persist *persist;			/* NULL without a data directory */
	struct sl_session_table *sessions;
	struct sl_auth_table **auth;			/* the broker's RCU pointer to the
							 * client tokens (NULL: open mode) */
	struct sl_idem *idem;				/* [max_sessions] */
	uint32_t nparts;
	struct sl_partition **parts;			/* [SL_WORKER_MAX_PARTS] */
	struct sl_held *held;				/* [SL_WORKER_HELD] */
	struct sl_mpart *mpart;				/* MPUB_PART reassembly pool */
	uint32_t *held_free;				/* stack of free held tokens */
	uint32_t nheld_free;
	uint32_t nheld_repl;				/* held on replicated partitions */
	uint64_t repl_recs;				/* records taken as a follower in
							 * this tick */
	uint64_t repl_rec_tsc;				/* ... the last of them */
	uint64_t repl_hot_until;			/* follower yields until (tsc) */
	uint64_t yield_off_until;			/* no yields until (tsc): starved */
	uint64_t starved_tsc;				/* SL_WORKER_STARVED_US */
	struct sl_peer *peer;				/* NULL without replication */
	uint8_t *rbuf;					/* replication encode buffer */
	uint64_t repl_drops;				/* replica datagrams for no partition */
	uint64_t peer_no_mbuf;				/* peer's no_mbuf counted so far */
	uint64_t sub_counter;
	uint64_t now_tsc;
	uint64_t now_ns;	/* monotonic ns (from tsc) */
	uint64_t wall_base_ns;
	uint64_t tsc_base;
	double ns_per_tsc;
	uint64_t next_tick_tsc;
	uint64_t tick_tsc;
	/* --idle interrupt (worker.c, the idle part of the loop) */
	struct sl_bell bell;				/* sl_worker_wake -> this worker
							 * while it blocks or naps; fd -1
							 * with --idle busy */
	uint8_t intr_ok;				/* every RX queue of the worker has
							 * interrupts: it may block */
	uint8_t intr_arm[SL_BROKER_MAX_PORTS];		/* rx_intr_enable/disable needed */
	uint8_t intr_any_arm;				/* ... for one port at least */
	struct rte_epoll_event bell_ev;
	struct rte_epoll_event xsk_ev[SL_BROKER_MAX_PORTS];	/* net_af_xdp sockets */
	struct pollfd woke[SL_BROKER_MAX_PORTS];	/* queue fds of the last wake-up */
	uint32_t nwoke;
	uint64_t woke_rx;				/* st.rx_pkts at that wake-up */
	uint16_t ntx[SL_BROKER_MAX_PORTS];
	struct rte_mbuf *tx[SL_BROKER_MAX_PORTS][SL_WORKER_TXQ_MAX];
	/* the answer datagram being filled per port (bundled answers, sl_worker_tx_answer):
	 * its frames' bytes and count; sent before any other frame of the port */
	struct rte_mbuf *bun[SL_BROKER_MAX_PORTS];
	uint16_t bun_len[SL_BROKER_MAX_PORTS];
	uint16_t bun_n[SL_BROKER_MAX_PORTS];
	struct sl_worker_stats st __rte_cache_aligned;
} __rte_cache_aligned;

/** Allocate the worker's own resources (held pool; with replication its peer module and
 * encode buffer) once its conf, rings and index are set. Control thread. 0 or -ENOMEM. */
int
sl_worker_setup(struct sl_worker *w);

/** Free what sl_worker_setup allocated (and held frames). Control thread, the worker
 * stopped. */
void
sl_worker_teardown(struct sl_worker *w);

/** Wake w if it blocks in its interrupt idle (--idle interrupt), after something was put
 * in one of its rings that no RX interrupt announces (a command, a frame back from
 * auto-creation). Any thread; cheap when w is not asleep (a fence and a load), else one
 * write to an eventfd. */
void
sl_worker_wake(struct sl_worker *w);

/** Worker lcore entry point (rte_eal_remote_launch). arg: struct sl_worker *. */
int
sl_worker_main(void *arg);

/** The largest replica datagram this node sends (the record of one publish must fit it,
 * less 128 bytes: replication/repl.h), from the ports' MTU; 0 without replication
 * (repl_port 0). Any thread. */
uint32_t
sl_worker_repl_dgram(const struct sl_broker_conf *c);

/** Give partition p (owned by w) its replication state, its datagrams sent through w's
 * peer module. Control thread, before the partition is attached. 0 or -errno. */
int
sl_worker_partition_replicate(struct sl_worker *w, struct sl_partition *p, const char *topic);

#endif /* SL_WORKER_H */
