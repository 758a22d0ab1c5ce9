/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 */
/* rte_intr_instance_alloc and its setters, rte_intr_callback_unregister_sync: experimental
 * in DPDK 22.11 (the memif stop on the interrupt thread, below) */
#define ALLOW_EXPERIMENTAL_API

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <dirent.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>

#include <rte_bus.h>
#include <rte_cycles.h>
#include <rte_dev.h>
#include <rte_ethdev.h>
#include <rte_interrupts.h>
#include <rte_log.h>
#include <urcu-qsbr.h>

#include "err.h"
#include "net.h"
#include "port.h"

RTE_LOG_REGISTER_SUFFIX(sl_port_logtype, port, INFO);
#define PLOG(level, fmt, ...) \
	rte_log(RTE_LOG_##level, sl_port_logtype, "port: " fmt "\n", ##__VA_ARGS__)

/* ---- memif peers that go away (docs/architecture.md, "When a memif peer goes away") ----
 *
 * DPDK's memif PMD (22.11 and every later release up to 25.11) tears a connection down in
 * memif_disconnect(), on the EAL interrupt thread when the peer's control socket closes or
 * sends DISCONNECT: it marks the link down and clears its "connected" flag (plain stores),
 * closes the queues' event fds, then munmap()s the peer's shared regions (rings,
 * descriptors, buffers) and frees their descriptions. Its receive and transmit bursts test
 * the flag once on entry and then read and write those regions with nothing that makes the
 * interrupt thread wait for them: a worker inside a burst when the peer goes touches
 * unmapped memory (SIGSEGV in librte_net_memif). The PMD raises no LSC or RMV event (it
 * has no RTE_ETH_DEV_INTR_LSC), so no ethdev callback runs before the unmap, and a link
 * test before each burst would only repeat the PMD's own flag test: neither closes the
 * window.
 *
 * What does: sluiced defines munmap() (exported from the executable, control/meson.build,
 * so the PMD's calls bind to it). On the interrupt thread, while one of our memif ports
 * has its link down (memif_disconnect has begun), it waits for an RCU grace period before
 * the real munmap: every worker then has passed a quiescent state (once per loop
 * iteration, or offline while idle), so a burst that saw the port connected has returned,
 * and a later one sees the cleared flag and returns 0 without touching the regions. The
 * wait is bounded (GP_WAIT_MS, the grace period runs on a helper thread): the interrupt
 * thread might hold an EAL lock (an rte_free that returns hugepages) that an online
 * reader needs, and must not deadlock; a timeout is logged and leaves that unmap
 * unprotected. Every other munmap goes straight to the system call.
 *
 * Closing the port races that teardown: rte_eth_dev_stop() runs memif_disconnect() too, and
 * the PMD does not serialise the two (each unmaps the regions, closes their fds, frees their
 * descriptions). When a node and its memif peer stopped together, the interrupt thread's
 * munmap sat in the grace-period wait (the control thread, still an RCU reader, was closing
 * the ports) while the control thread unmapped the same regions; it then unmapped the range
 * again after rte_eal_cleanup() had mapped libgcc_s there (pthread_cancel's unwinder):
 * SIGSEGV at exit in 3 of 6 three-node memif runs (2026-11-28); letting the interrupt thread
 * skip its unmap instead left the two threads freeing the same region descriptions (SIGSEGV
 * in the control thread's rte_eth_dev_stop). So sl_port_close() sets memif_closing (the
 * workers have stopped: no grace period is needed, a wait in progress ends within
 * GP_SLICE_MS) and has a memif port stopped on the interrupt thread itself, after whatever
 * disconnect runs there: an interrupt source of its own (an eventfd) whose callback stops the
 * port, unregistered before the close. (Not an EAL alarm: DPDK 22.11's rte_eal_cleanup()
 * frees the alarm's interrupt handle under its still registered source, and the interrupt
 * thread then crashed on it.) */

#define MEMIF_MAX_PORTS 8
#define GP_WAIT_MS 2000
#define GP_SLICE_MS 5		/* the wait looks at memif_closing this often */
#define STOP_WAIT_MS 10000	/* a port's stop handed to the interrupt thread, at most */

static uint16_t memif_ports[MEMIF_MAX_PORTS];
static unsigned int memif_nports;	/* written by the control thread, read anywhere */
static int memif_closing;		/* ports are being closed: the workers have stopped */

struct gp_wait {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int done;
	int refs;		/* the waiter and the helper: the last to leave frees it */
};

static void
gp_put(struct gp_wait *g)
{
	int last;

	pthread_mutex_lock(&g->lock);
	last = --g->refs == 0;
	pthread_mutex_unlock(&g->lock);
	if (last) {
		pthread_cond_destroy(&g->cond);
		pthread_mutex_destroy(&g->lock);
		free(g);
	}
}

static void *
gp_helper(void *arg)
{
	struct gp_wait *g = arg;

	synchronize_rcu();
	pthread_mutex_lock(&g->lock);
	g->done = 1;
	pthread_cond_signal(&g->cond);
	pthread_mutex_unlock(&g->lock);
	gp_put(g);
	return NULL;
}

/* ts += ms */
static void
ts_add_ms(struct timespec *ts, unsigned int ms)
{
	ts->tv_sec += ms / 1000;
	ts->tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}

/* A mutex and a condition variable whose timed waits use CLOCK_MONOTONIC. */
static void
mono_cond_init(pthread_mutex_t *lock, pthread_cond_t *cond)
{
	pthread_condattr_t ca;

	pthread_mutex_init(lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(cond, &ca);
	pthread_condattr_destroy(&ca);
}

/* An RCU grace period, waited for at most GP_WAIT_MS and only until the ports are being
 * closed (memif_closing: the workers have stopped). 1 when it completed or is no longer
 * needed, 0 on time-out. */
static int
grace_period_bounded(void)
{
	struct gp_wait *g;
	struct timespec end, ts;
	pthread_t t;
	int done;

	g = calloc(1, sizeof(*g));
	if (g == NULL)
		return 0;
	mono_cond_init(&g->lock, &g->cond);
	g->refs = 2;
	if (pthread_create(&t, NULL, gp_helper, g) != 0) {
		g->refs = 1;
		gp_put(g);
		return 0;
	}
	pthread_detach(t);
	clock_gettime(CLOCK_MONOTONIC, &end);
	ts_add_ms(&end, GP_WAIT_MS);
	pthread_mutex_lock(&g->lock);
	for (;;) {
		if (__atomic_load_n(&memif_closing, __ATOMIC_ACQUIRE)) {
			done = 1;
			break;
		}
		done = g->done;
		if (done)
			break;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		if (ts.tv_sec > end.tv_sec ||
		    (ts.tv_sec == end.tv_sec && ts.tv_nsec >= end.tv_nsec))
			break;
		ts_add_ms(&ts, GP_SLICE_MS);
		pthread_cond_timedwait(&g->cond, &g->lock, &ts);
	}
	pthread_mutex_unlock(&g->lock);
	gp_put(g);
	return done;
}

/* The memif port whose peer is being disconnected, or -1. */
static int
memif_port_down(void)
{
	unsigned int i, n = __atomic_load_n(&memif_nports, __ATOMIC_ACQUIRE);
	struct rte_eth_link link;

	for (i = 0; i < n && i < MEMIF_MAX_PORTS; i++) {
		uint16_t pid = __atomic_load_n(&memif_ports[i], __ATOMIC_RELAXED);

		/* a plain read of dev_link for memif (its link_update does nothing in a
		 * primary process) */
		if (rte_eth_link_get_nowait(pid, &link) == 0 &&
		    link.link_status == RTE_ETH_LINK_DOWN)
			return pid;
	}
	return -1;
}

/* Interposes libc's munmap for the whole process (see above). Any thread. */
int
munmap(void *addr, size_t len)
{
	int pid;

	if (__atomic_load_n(&memif_nports, __ATOMIC_RELAXED) != 0 && rte_thread_is_intr() &&
	    !__atomic_load_n(&memif_closing, __ATOMIC_ACQUIRE) && (pid = memif_port_down()) >= 0) {
		uint64_t t0 = rte_get_timer_cycles(), us;

		/* the PMD cleared its flag before this call; order that store before the
		 * grace period starts (synchronize_rcu begins with a full barrier too) */
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		if (grace_period_bounded()) {
			us = (rte_get_timer_cycles() - t0) * 1000000 / rte_get_timer_hz();
			PLOG(INFO, "port %d: memif peer gone; every worker left the port before "
				   "its shared region %p was unmapped (waited %" PRIu64 " us)",
			     pid, addr, us);
		} else {
			PLOG(WARNING, "port %d: memif peer gone; no grace period within %u ms, "
				      "unmapping %p unguarded", pid, GP_WAIT_MS, addr);
		}
	}
	return (int)syscall(SYS_munmap, addr, len);
}

/* Control thread, before the workers start. */
static void
memif_guard_add(uint16_t port_id)
{
	unsigned int n = memif_nports;

	if (n >= MEMIF_MAX_PORTS) {
		PLOG(WARNING, "port %u: more than %u memif ports: this one is not guarded "
			      "against a peer that goes away", port_id, MEMIF_MAX_PORTS);
		return;
	}
	memif_ports[n] = port_id;
	__atomic_store_n(&memif_nports, n + 1, __ATOMIC_RELEASE);
}

/* Control thread, before the port is stopped. */
static void
memif_guard_del(uint16_t port_id)
{
	unsigned int i, n = memif_nports;

	for (i = 0; i < n; i++) {
		if (memif_ports[i] != port_id)
			continue;
		__atomic_store_n(&memif_ports[i], memif_ports[n - 1], __ATOMIC_RELAXED);
		__atomic_store_n(&memif_nports, n - 1, __ATOMIC_RELEASE);
		return;
	}
}

/* The device name is devargs up to the first comma. */
static void
dev_name(const char *devargs, char *name, size_t len)
{
	size_t n = strcspn(devargs, ",");

	if (n >= len)
		n = len - 1;
	memcpy(name, devargs, n);
	name[n] = '\0';
}

/* Whether to ask a PMD for RX queue interrupts. These virtual devices of DPDK 22.11 have
 * none (no interrupt vector for rte_eth_dev_rx_intr_ctl_q): asking is useless there, and
 * the ethdev layer would log an error per queue when the worker tries. Anything else
 * (net_tap, hardware PMDs) is asked; a configure that refuses is retried without. */
static int
rx_intr_possible(const char *driver)
{
	static const char *const none[] = {"net_af_xdp", "net_memif", "net_af_packet",
					   "net_ring", "net_null"};
	size_t i;

	for (i = 0; i < RTE_DIM(none); i++)
		if (strcmp(driver, none[i]) == 0)
			return 0;
	return 1;
}

/* ---- net_af_xdp: the queues' sockets as their RX interrupt ----
 *
 * DPDK 22.11's net_af_xdp has no RX queue interrupt, but each RX queue is an AF_XDP socket
 * that poll() reports readable while its RX ring holds frames (the kernel wakes its
 * waiters as it fills the ring). The PMD does not hand the socket out, so the port's
 * start finds them: the AF_XDP sockets of the process after its RX queues are set up,
 * less those before, in ascending descriptor order (the PMD creates one per queue, in
 * queue order). Anything else (a count that does not match) and the workers sleep
 * adaptively as before. --idle interrupt adds them, level-triggered, to the worker's
 * epoll set (dataplane/worker.c). */
#ifndef AF_XDP
#define AF_XDP 44
#endif
#define XSK_SCAN_MAX 64

static int
cmp_int(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

/* The AF_XDP sockets open in this process, ascending; returns how many (<= max). */
static int
xsk_scan(int *fds, int max)
{
	struct dirent *e;
	DIR *d = opendir("/proc/self/fd");
	int n = 0, fd, dom;
	socklen_t len;

	if (d == NULL)
		return 0;
	while ((e = readdir(d)) != NULL && n < max) {
		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		fd = atoi(e->d_name);
		if (fd == dirfd(d))
			continue;
		len = sizeof(dom);
		if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &dom, &len) == 0 && dom == AF_XDP)
			fds[n++] = fd;
	}
	closedir(d);
	qsort(fds, (size_t)n, sizeof(fds[0]), cmp_int);
	return n;
}

/* out->xsk_fd[q] for every RX queue: the sockets in after[] and not in before[]. */
static void
xsk_take(struct sl_broker_port *out, const int *before, int nb, const int *after, int na)
{
	int i, j, k = 0, seen;

	for (i = 0; i < na; i++) {
		for (seen = 0, j = 0; j < nb && !seen; j++)
			seen = after[i] == before[j];
		if (seen)
			continue;
		if (k == out->nrxq || k == SL_BROKER_MAX_WORKERS) {
			k = -1;
			break;
		}
		out->xsk_fd[k++] = after[i];
	}
	out->xsk_ready = k > 0 && k == out->nrxq;
	if (!out->xsk_ready)
		PLOG(INFO, "%s: %d new AF_XDP socket(s) for %u RX queue(s): no socket wake-up, "
			   "idle workers sleep adaptively", out->name, k, out->nrxq);
}

static int
find_port(const char *name, uint16_t *port_id)
{
	if (rte_eth_dev_get_port_by_name(name, port_id) == 0)
		return 0;
	return -ENODEV;
}

int
sl_port_open(const struct sl_port_conf *conf, struct sl_broker_port *out)
{
	struct rte_eth_conf ec;
	struct rte_eth_dev_info info;
	struct rte_ether_addr mac;
	char name[64];
	uint16_t port_id, q, nrxq, ntxq, forced_mtu = 0;
	int rc, is_xdp, xsk_before[XSK_SCAN_MAX], xsk_after[XSK_SCAN_MAX], nb = 0, na;

	memset(out, 0, sizeof(*out));
	if (conf == NULL || conf->devargs == NULL || conf->nworkers == 0 || conf->pool == NULL)
		return -EINVAL;
	if (sl_net_parse_cidr(conf->ip, &out->nif.ip, &out->netmask) != 0) {
		PLOG(ERR, "bad IPv4 address '%s' (a.b.c.d or a.b.c.d/len)",
		     conf->ip ? conf->ip : "");
		return -EINVAL;
	}
	out->nif.netmask = out->netmask;	/* no answer to the subnet's broadcast */
	dev_name(conf->devargs, name, sizeof(name));
	if (find_port(name, &port_id) != 0) {
		rc = rte_dev_probe(conf->devargs);
		if (rc != 0) {
			PLOG(ERR, "cannot probe '%s': %s", conf->devargs, rte_strerror(-rc));
			return rc;
		}
		if (find_port(name, &port_id) != 0) {
			PLOG(ERR, "probed '%s' but found no ethdev named '%s'", conf->devargs,
			     name);
			return -ENODEV;
		}
	}
	rc = rte_eth_dev_info_get(port_id, &info);
	if (rc != 0)
		return rc;
	memset(&ec, 0, sizeof(ec));
	nrxq = 1;
	if (conf->nworkers > 1 && info.max_rx_queues >= conf->nworkers &&
	    info.max_tx_queues >= conf->nworkers &&
	    (info.flow_type_rss_offloads & RTE_ETH_RSS_NONFRAG_IPV4_UDP)) {
		nrxq = conf->nworkers;
		ec.rxmode.mq_mode = RTE_ETH_MQ_RX_RSS;
		ec.rx_adv_conf.rss_conf.rss_hf =
			RTE_ETH_RSS_NONFRAG_IPV4_UDP & info.flow_type_rss_offloads;
	}
	if (!conf->no_offload) {
		if ((info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_IPV4_CKSUM) &&
		    (info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_UDP_CKSUM)) {
			ec.txmode.offloads |= RTE_ETH_TX_OFFLOAD_IPV4_CKSUM |
					      RTE_ETH_TX_OFFLOAD_UDP_CKSUM;
			out->tx_flags |= SL_NET_TX_IP_CKSUM | SL_NET_TX_UDP_CKSUM;
		}
		if (info.rx_offload_capa & RTE_ETH_RX_OFFLOAD_IPV4_CKSUM) {
			ec.rxmode.offloads |= RTE_ETH_RX_OFFLOAD_IPV4_CKSUM;
			out->rx_flags |= SL_NET_RX_IP_CKSUM_GOOD;
		}
		if (info.rx_offload_capa & RTE_ETH_RX_OFFLOAD_UDP_CKSUM) {
			ec.rxmode.offloads |= RTE_ETH_RX_OFFLOAD_UDP_CKSUM;
			out->rx_flags |= SL_NET_RX_L4_CKSUM_GOOD;
		}
	}
	/* With RSS every worker has its own queue pair. Without it, worker 0 does all of the
	 * port's I/O on one queue pair and the other workers hand it their frames: some
	 * vdevs (net_memif) only connect as many queues as the peer opens, so a TX queue of
	 * our own per worker would silently drop. */
	ntxq = nrxq;
	ec.intr_conf.rxq = conf->rx_intr && rx_intr_possible(info.driver_name) ? 1 : 0;
	rc = rte_eth_dev_configure(port_id, nrxq, ntxq, &ec);
	if (rc != 0 && ec.intr_conf.rxq) {
		PLOG(INFO, "%s: no RX queue interrupts (%s): adaptive idle sleeps", name,
		     rte_strerror(-rc));
		ec.intr_conf.rxq = 0;
		rc = rte_eth_dev_configure(port_id, nrxq, ntxq, &ec);
	}
	if (rc != 0) {
		PLOG(ERR, "%s: configure failed: %s", name, rte_strerror(-rc));
		return rc;
	}
	if (conf->mtu != 0) {
		rc = rte_eth_dev_set_mtu(port_id, conf->mtu);
		if (rc == -ENOTSUP && strcmp(info.driver_name, "net_memif") == 0) {
			/* memif copies whole frames through shared memory (chaining its
			 * buffers) and has no MTU to set: the limit is our mbuf size */
			const char *bs = strstr(conf->devargs, "bsize=");
			unsigned long bsize = bs != NULL ? strtoul(bs + 6, NULL, 0) : 2048;

			PLOG(WARNING, "%s: the port has no MTU setting; using %u for the message "
				      "limit", name, conf->mtu);
			forced_mtu = conf->mtu;
			/* a frame longer than one memif buffer arrives chained, and the
			 * workers drop chained frames (counted, multi_segment) */
			if (bsize < (unsigned long)conf->mtu + RTE_ETHER_HDR_LEN)
				PLOG(WARNING, "%s: memif buffers of %lu bytes (bsize) hold no frame "
					      "of MTU %u: longer frames arrive chained and are "
					      "dropped (stats: multi_segment); give bsize=%u or more "
					      "on both ends", name, bsize, conf->mtu,
				     conf->mtu + RTE_ETHER_HDR_LEN);
		} else if (rc != 0) {
			PLOG(ERR, "%s: MTU %u refused: %s", name, conf->mtu, rte_strerror(-rc));
			return rc;
		}
	}
	is_xdp = strcmp(info.driver_name, "net_af_xdp") == 0;
	if (is_xdp)
		nb = xsk_scan(xsk_before, XSK_SCAN_MAX);
	for (q = 0; q < nrxq; q++) {
		rc = rte_eth_rx_queue_setup(port_id, q, conf->rx_desc ? conf->rx_desc : 1024,
					    rte_eth_dev_socket_id(port_id), NULL, conf->pool);
		if (rc != 0) {
			PLOG(ERR, "%s: RX queue %u: %s", name, q, rte_strerror(-rc));
			return rc;
		}
	}
	for (q = 0; q < ntxq; q++) {
		rc = rte_eth_tx_queue_setup(port_id, q, conf->tx_desc ? conf->tx_desc : 1024,
					    rte_eth_dev_socket_id(port_id), NULL);
		if (rc != 0) {
			PLOG(ERR, "%s: TX queue %u: %s", name, q, rte_strerror(-rc));
			return rc;
		}
	}
	rc = rte_eth_dev_start(port_id);
	if (rc != 0) {
		PLOG(ERR, "%s: start failed: %s", name, rte_strerror(-rc));
		return rc;
	}
	rte_eth_macaddr_get(port_id, &mac);
	memcpy(out->nif.mac, mac.addr_bytes, 6);
	out->nif.udp_port_lo = conf->udp_port;
	out->nif.udp_port_hi = conf->repl_port != 0 ? conf->repl_port : conf->udp_port;
	out->port_id = port_id;
	out->nrxq = nrxq;
	out->ntxq = ntxq;
	out->rx_intr = ec.intr_conf.rxq;
	rte_eth_dev_get_mtu(port_id, &out->mtu);
	if (forced_mtu != 0)
		out->mtu = forced_mtu;
	snprintf(out->name, sizeof(out->name), "%s", name);
	if (is_xdp) {
		na = xsk_scan(xsk_after, XSK_SCAN_MAX);
		xsk_take(out, xsk_before, nb, xsk_after, na);
	}
	if (strcmp(info.driver_name, "net_memif") == 0)
		memif_guard_add(port_id);
	PLOG(INFO, "%s: port %u up, MAC " RTE_ETHER_ADDR_PRT_FMT ", %s, %u RX queue(s)%s, MTU %u",
	     name, port_id, RTE_ETHER_ADDR_BYTES(&mac), conf->ip, nrxq,
	     nrxq > 1 ? " (RSS)" : " (software dispatch)", out->mtu);
	return 0;
}

struct stop_job {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int efd;
	uint16_t port_id;
	int done;
};

/* Interrupt callback (the interrupt thread): stop the port. */
static void
stop_on_intr(void *arg)
{
	struct stop_job *j = arg;
	uint64_t v;

	if (read(j->efd, &v, sizeof(v)) != (ssize_t)sizeof(v))
		return;
	rte_eth_dev_stop(j->port_id);
	pthread_mutex_lock(&j->lock);
	j->done = 1;
	pthread_cond_signal(&j->cond);
	pthread_mutex_unlock(&j->lock);
}

/* Stop a memif port on the interrupt thread (see "memif peers that go away"), waiting at
 * most STOP_WAIT_MS; 1 when it was stopped there, 0 when the caller must stop it. */
static int
memif_stop_on_intr(uint16_t port_id)
{
	struct stop_job j = {.efd = -1, .port_id = port_id};
	struct rte_intr_handle *ih = NULL;
	struct timespec end;
	uint64_t one = 1;
	int rc, done = 0;

	mono_cond_init(&j.lock, &j.cond);
	j.efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	ih = rte_intr_instance_alloc(RTE_INTR_INSTANCE_F_PRIVATE);
	if (j.efd < 0 || ih == NULL || rte_intr_type_set(ih, RTE_INTR_HANDLE_EXT) != 0 ||
	    rte_intr_fd_set(ih, j.efd) != 0) {
		rc = -ENOMEM;
		goto out;
	}
	rc = rte_intr_callback_register(ih, stop_on_intr, &j);
	if (rc != 0)
		goto out;
	if (write(j.efd, &one, sizeof(one)) != (ssize_t)sizeof(one)) {
		rc = -errno;
	} else {
		clock_gettime(CLOCK_MONOTONIC, &end);
		ts_add_ms(&end, STOP_WAIT_MS);
		pthread_mutex_lock(&j.lock);
		while (!j.done && pthread_cond_timedwait(&j.cond, &j.lock, &end) == 0)
			;
		pthread_mutex_unlock(&j.lock);
	}
	/* waits for a callback in progress; afterwards it cannot run again */
	rte_intr_callback_unregister_sync(ih, stop_on_intr, &j);
	done = j.done;
	if (!done && rc == 0)
		PLOG(WARNING, "port %u: the interrupt thread did not stop it within %u ms: "
			      "stopping it here", port_id, STOP_WAIT_MS);
out:
	if (rc != 0)
		PLOG(WARNING, "port %u: cannot hand its stop to the interrupt thread (%s): "
			      "stopping it here", port_id, rte_strerror(-rc));
	rte_intr_instance_free(ih);
	if (j.efd >= 0)
		close(j.efd);
	pthread_cond_destroy(&j.cond);
	pthread_mutex_destroy(&j.lock);
	return done;
}

void
sl_port_close(struct sl_broker_port *p)
{
	struct rte_eth_dev_info info;
	int have_info, memif;

	have_info = rte_eth_dev_info_get(p->port_id, &info) == 0;
	memif = have_info && strcmp(info.driver_name, "net_memif") == 0;
	if (memif) {
		/* the workers have stopped (calling context): the unmap guard's waits end */
		__atomic_store_n(&memif_closing, 1, __ATOMIC_RELEASE);
		memif_guard_del(p->port_id);
	}
	if (!memif || rte_thread_is_intr() || !memif_stop_on_intr(p->port_id))
		rte_eth_dev_stop(p->port_id);
	rte_eth_dev_close(p->port_id);
	if (have_info && info.device != NULL)
		rte_dev_remove(info.device);
}
