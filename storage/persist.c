/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 */
#include <errno.h>
#include <stdio.h>

#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_log.h>
#include <rte_malloc.h>
#include <rte_ring.h>
#include <urcu-qsbr.h>

#include "persist.h"

RTE_LOG_REGISTER_SUFFIX(sl_persist_logtype, persist, INFO);

extern volatile int sl_broker_quit;

struct sl_persist {
	struct sl_persist_conf conf;
	struct rte_ring *rings[SL_PERSIST_MAX_SOURCES];
	int started;
	struct sl_persist_stats st __rte_cache_aligned;
};

struct sl_persist *
sl_persist_open(const struct sl_persist_conf *conf)
{
	struct sl_persist *p;
	char name[RTE_RING_NAMESIZE];
	static unsigned int instance;
	unsigned int id = instance++;
	uint16_t i;

	if (conf == NULL || conf->nsources == 0 || conf->nsources > SL_PERSIST_MAX_SOURCES) {
		rte_errno = EINVAL;
		return NULL;
	}
	p = rte_zmalloc_socket("sl_persist", sizeof(*p), RTE_CACHE_LINE_SIZE, conf->socket_id);
	if (p == NULL)
		goto nomem;
	p->conf = *conf;
	for (i = 0; i < conf->nsources; i++) {
		snprintf(name, sizeof(name), "sl_pers%u_%u", id, i);
		p->rings[i] = rte_ring_create(name, conf->ring_size ? conf->ring_size : 4096,
					      conf->socket_id, RING_F_SP_ENQ | RING_F_SC_DEQ);
		if (p->rings[i] == NULL)
			goto nomem;
	}
	return p;
nomem:
	sl_persist_close(p);
	rte_errno = ENOMEM;
	return NULL;
}

static int
persist_main(void *arg)
{
	struct sl_persist *p = arg;
	uint32_t empty = 0, sleep_us = 0;

	rcu_register_thread();
	rte_log(RTE_LOG_INFO, sl_persist_logtype, "persist: running on lcore %u\n",
		rte_lcore_id());
	while (!__atomic_load_n(&sl_broker_quit, __ATOMIC_RELAXED)) {
		void *objs[64];
		uint32_t n = 0, got;
		uint16_t i;

		for (i = 0; i < p->conf.nsources; i++) {
			got = rte_ring_sc_dequeue_burst(p->rings[i], objs, 64, NULL);
			/* memory durability: records are acknowledged already; nothing to
			 * write yet. The durable storage issue writes them here. */
			n += got;
		}
		p->st.records += n;
		p->st.loops++;
		rcu_quiescent_state();
		if (n > 0 || !p->conf.adaptive_idle) {
			empty = 0;
			sleep_us = 0;
			continue;
		}
		if (++empty < 1024)
			continue;
		sleep_us = sleep_us ? RTE_MIN(sleep_us * 2, p->conf.idle_max_us) : 10;
		rcu_thread_offline();
		rte_delay_us_sleep(sleep_us);
		rcu_thread_online();
		p->st.idle_sleeps++;
	}
	rcu_unregister_thread();
	return 0;
}

int
sl_persist_start(struct sl_persist *p)
{
	int rc = rte_eal_remote_launch(persist_main, p, p->conf.lcore);

	if (rc == 0)
		p->started = 1;
	return rc;
}

void
sl_persist_close(struct sl_persist *p)
{
	uint16_t i;

	if (p == NULL)
		return;
	if (p->started)
		rte_eal_wait_lcore(p->conf.lcore);
	for (i = 0; i < SL_PERSIST_MAX_SOURCES; i++)
		rte_ring_free(p->rings[i]);
	rte_free(p);
}

int
sl_persist_submit(struct sl_persist *p, uint16_t source, void *rec)
{
	return rte_ring_sp_enqueue(p->rings[source], rec) == 0 ? 0 : -ENOBUFS;
}

const struct sl_persist_stats *
sl_persist_get_stats(const struct sl_persist *p)
{
	return &p->st;
}
