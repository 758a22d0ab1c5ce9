/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <sys/random.h>

#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_ring.h>
#include <sodium.h>
#include <urcu-qsbr.h>

#include "session.h"

/* Session ids come from a ChaCha20 keystream (a CSPRNG, as arc4random) keyed once from
 * getrandom(): one stream per lcore (nonce = lcore << 48 | block counter), refilled 256 bytes
 * at a time, so creating a session takes no system call and no lock. */
#define RNG_BUF 256

struct rng {
	uint8_t buf[RNG_BUF];
	uint32_t pos;			/* RNG_BUF: empty */
	uint64_t block;
} __rte_cache_aligned;

struct sl_session_table {
	uint32_t n;
	uint32_t live;
	uint32_t max_per_source;	/* 0: no limit */
	uint64_t timeout_tsc;
	struct rte_ring *free_ring;
	uint32_t *expired;		/* scratch for sl_session_expire */
	struct sl_session *s;
	uint32_t per_src[SL_SESSION_SRC_BUCKETS];	/* live sessions per source bucket */
	uint8_t key[crypto_stream_chacha20_KEYBYTES];
	struct rng rng[RTE_MAX_LCORE + 1];		/* [RTE_MAX_LCORE]: non-EAL threads */
};

static uint64_t
rand64(struct sl_session_table *t)
{
	unsigned int lc = rte_lcore_id();
	struct rng *r = &t->rng[lc < RTE_MAX_LCORE ? lc : RTE_MAX_LCORE];
	uint64_t v;

	if (r->pos + sizeof(v) > RNG_BUF) {
		uint64_t nonce = (uint64_t)(lc < RTE_MAX_LCORE ? lc : RTE_MAX_LCORE) << 48 |
				 r->block++;
		uint8_t n[crypto_stream_chacha20_NONCEBYTES];

		memcpy(n, &nonce, sizeof(n));
		crypto_stream_chacha20(r->buf, RNG_BUF, n, t->key);
		r->pos = 0;
	}
	memcpy(&v, r->buf + r->pos, sizeof(v));
	sodium_memzero(r->buf + r->pos, sizeof(v));
	r->pos += sizeof(v);
	return v;
}

/* A MAC in one word (byte i in bits 8i..8i+7): stored and loaded whole. */
static uint64_t
mac_pack(const uint8_t mac[6])
{
	uint64_t v = 0;
	int i;

	for (i = 0; i < 6; i++)
		v |= (uint64_t)mac[i] << (8 * i);
	return v;
}

static uint32_t
src_bucket(uint32_t ip)
{
	uint32_t h = ip * 0x9E3779B1u;

	return h >> (32 - SL_SESSION_SRC_BITS);
}

struct sl_session_table *
sl_session_open(const struct sl_session_conf *conf)
{
	struct sl_session_table *t = NULL;
	char name[RTE_RING_NAMESIZE];
	uint32_t i;
	static uint32_t instance;

	if (conf == NULL || conf->max_sessions == 0 || conf->max_sessions > SL_SESSION_MAX - 1 ||
	    conf->timeout_tsc == 0) {
		rte_errno = EINVAL;
		return NULL;
	}
	t = rte_zmalloc_socket("sl_sessions", sizeof(*t), RTE_CACHE_LINE_SIZE, conf->socket_id);
	if (t == NULL)
		goto nomem;
	t->n = conf->max_sessions;
	t->timeout_tsc = conf->timeout_tsc;
	t->max_per_source = conf->max_per_source;
	for (i = 0; i <= RTE_MAX_LCORE; i++)
		t->rng[i].pos = RNG_BUF;
	if (sodium_init() < 0 || getrandom(t->key, sizeof(t->key), 0) != (ssize_t)sizeof(t->key)) {
		rte_free(t);
		rte_errno = EIO;
		return NULL;
	}
	t->s = rte_zmalloc_socket("sl_session_slots", sizeof(*t->s) * t->n, RTE_CACHE_LINE_SIZE,
				  conf->socket_id);
	t->expired = calloc(t->n, sizeof(*t->expired));
	snprintf(name, sizeof(name), "sl_sess_free%u", instance++);
	t->free_ring = rte_ring_create(name, rte_align32pow2(t->n + 1), conf->socket_id,
				       RING_F_EXACT_SZ);
	if (t->s == NULL || t->expired == NULL || t->free_ring == NULL)
		goto nomem;
	for (i = 0; i < t->n; i++)
		rte_ring_enqueue(t->free_ring, (void *)(uintptr_t)(i + 1));
	return t;
nomem:
	sl_session_close(t);
	rte_errno = ENOMEM;
	return NULL;
}

void
sl_session_close(struct sl_session_table *t)
{
	if (t == NULL)
		return;
	rte_ring_free(t->free_ring);
	free(t->expired);
	rte_free(t->s);
	rte_free(t);
}

uint32_t
sl_session_capacity(const struct sl_session_table *t)
{
	return t->n;
}

struct sl_session *
sl_session_create(struct sl_session_table *t, uint32_t ip, uint16_t udp_port,
		  const uint8_t mac[6], uint16_t port_id, uint32_t window, uint32_t info,
		  uint32_t auth_uid, uint64_t auth_cache, uint64_t producer, uint64_t now)
{
	void *obj;
	uint32_t slot;
	struct sl_session *s;
	uint64_t id;

	uint32_t *per = &t->per_src[src_bucket(ip)];

	if (t->max_per_source != 0 &&
	    __atomic_add_fetch(per, 1, __ATOMIC_RELAXED) > t->max_per_source) {
		__atomic_sub_fetch(per, 1, __ATOMIC_RELAXED);
		rte_errno = EDQUOT;
		return NULL;
	}
	if (rte_ring_dequeue(t->free_ring, &obj) != 0) {
		if (t->max_per_source != 0)
			__atomic_sub_fetch(per, 1, __ATOMIC_RELAXED);
		rte_errno = ENOSPC;
		return NULL;
	}
	slot = (uint32_t)(uintptr_t)obj - 1;
	s = &t->s[slot];
	s->ip = ip;
	s->udp_port = udp_port;
	s->port_id = port_id;
	__atomic_store_n(&s->mac, mac_pack(mac), __ATOMIC_RELAXED);
	s->mac_gen = 0;
	s->closing = 0;
	s->window = window;
	s->client_info = info;
	s->auth_uid = auth_uid;
	s->producer = producer;
	__atomic_store_n(&s->auth_cache, auth_cache, __ATOMIC_RELAXED);
	s->created = now;
	__atomic_store_n(&s->last_seen, now, __ATOMIC_RELAXED);
	do {
		id = (rand64(t) << SL_SESSION_SLOT_BITS) | slot;
	} while (id == 0 || (id >> SL_SESSION_SLOT_BITS) == 0);
	__atomic_store_n(&s->id, id, __ATOMIC_RELEASE);
	__atomic_add_fetch(&t->live, 1, __ATOMIC_RELAXED);
	return s;
}

struct sl_session *
sl_session_peek(struct sl_session_table *t, uint32_t slot, uint64_t id)
{
	struct sl_session *s;

	if (slot >= t->n)
		return NULL;
	s = &t->s[slot];
	if (__atomic_load_n(&s->id, __ATOMIC_ACQUIRE) != id || id == 0)
		return NULL;
	return s;
}

struct sl_session *
sl_session_get(struct sl_session_table *t, uint64_t id, uint32_t *slot, uint64_t now)
{
	uint32_t i = (uint32_t)(id & (SL_SESSION_MAX - 1));
	struct sl_session *s = sl_session_peek(t, i, id);

	if (s == NULL || s->closing)
		return NULL;
	/* one store per packet at most; skip it when already fresh to spare the line */
	if (now - __atomic_load_n(&s->last_seen, __ATOMIC_RELAXED) > (t->timeout_tsc >> 6))
		__atomic_store_n(&s->last_seen, now, __ATOMIC_RELAXED);
	*slot = i;
	return s;
}

struct sl_session *
sl_session_get_src(struct sl_session_table *t, uint64_t id, uint32_t ip, uint16_t udp_port,
		   uint32_t *slot, uint64_t now)
{
	uint32_t i = (uint32_t)(id & (SL_SESSION_MAX - 1));
	struct sl_session *s = sl_session_peek(t, i, id);

	if (s == NULL || s->ip != ip || s->udp_port != udp_port)
		return NULL;
	return sl_session_get(t, id, slot, now);
}

void
sl_session_mac(const struct sl_session *s, uint8_t mac[6])
{
	uint64_t v = __atomic_load_n(&s->mac, __ATOMIC_RELAXED);
	int i;

	for (i = 0; i < 6; i++)
		mac[i] = (uint8_t)(v >> (8 * i));
}

void
sl_session_note_mac(struct sl_session *s, const uint8_t mac[6])
{
	uint64_t v = mac_pack(mac);

	if (__atomic_load_n(&s->mac, __ATOMIC_RELAXED) != v) {
		__atomic_store_n(&s->mac, v, __ATOMIC_RELAXED);
		__atomic_add_fetch(&s->mac_gen, 1, __ATOMIC_RELEASE);
	}
}

void
sl_session_mark_closing(struct sl_session *s)
{
	__atomic_store_n(&s->closing, SL_SESSION_CLOSING, __ATOMIC_RELAXED);
}

uint32_t
sl_session_revoke_tokens(struct sl_session_table *t, int (*gone)(void *arg, uint32_t uid),
			 void *arg)
{
	uint32_t i, n = 0;

	for (i = 0; i < t->n; i++) {
		struct sl_session *s = &t->s[i];

		if (__atomic_load_n(&s->id, __ATOMIC_ACQUIRE) == 0 || s->auth_uid == 0 ||
		    !gone(arg, s->auth_uid))
			continue;
		/* a closing session expires at the next scan anyway */
		if (__atomic_load_n(&s->closing, __ATOMIC_RELAXED) == 0)
			__atomic_store_n(&s->closing, SL_SESSION_REVOKED, __ATOMIC_RELAXED);
		n++;
	}
	return n;
}

int
sl_session_revoked(struct sl_session_table *t, uint64_t id, uint32_t ip, uint16_t udp_port)
{
	const struct sl_session *s = sl_session_peek(t, (uint32_t)(id & (SL_SESSION_MAX - 1)), id);

	return s != NULL && s->ip == ip && s->udp_port == udp_port &&
	       __atomic_load_n(&s->closing, __ATOMIC_RELAXED) == SL_SESSION_REVOKED;
}

uint32_t
sl_session_expire(struct sl_session_table *t, uint64_t now)
{
	uint32_t i, n = 0;

	for (i = 0; i < t->n; i++) {
		struct sl_session *s = &t->s[i];
		uint64_t id = __atomic_load_n(&s->id, __ATOMIC_ACQUIRE);
		uint64_t seen;

		if (id == 0)
			continue;
		seen = __atomic_load_n(&s->last_seen, __ATOMIC_RELAXED);
		if (__atomic_load_n(&s->closing, __ATOMIC_RELAXED) != SL_SESSION_CLOSING &&
		    (int64_t)(now - seen) < (int64_t)t->timeout_tsc)
			continue;
		__atomic_store_n(&s->id, 0, __ATOMIC_RELEASE);
		if (t->max_per_source != 0)
			__atomic_sub_fetch(&t->per_src[src_bucket(s->ip)], 1, __ATOMIC_RELAXED);
		t->expired[n++] = i;
	}
	if (n == 0)
		return 0;
	synchronize_rcu();
	for (i = 0; i < n; i++)
		rte_ring_enqueue(t->free_ring, (void *)(uintptr_t)(t->expired[i] + 1));
	__atomic_sub_fetch(&t->live, n, __ATOMIC_RELAXED);
	return n;
}

uint32_t
sl_session_count(const struct sl_session_table *t)
{
	return __atomic_load_n(&t->live, __ATOMIC_RELAXED);
}

const struct sl_session *
sl_session_at(const struct sl_session_table *t, uint32_t i)
{
	if (i >= t->n || __atomic_load_n(&t->s[i].id, __ATOMIC_ACQUIRE) == 0)
		return NULL;
	return &t->s[i];
}
