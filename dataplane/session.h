/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * session: the node's client sessions, a fixed table shared by all worker lcores.
 *
 * A session id is (random << 20) | slot, so any worker finds the slot in O(1) and checks
 * the id. Slots are allocated by any worker on HELLO from a lock-free MPMC ring of free
 * slots; a slot's fields are written before its id is published (release) and are then
 * read-only, except last_seen (relaxed stores by any worker), closing (set on CLS) and
 * mac (relaxed, any worker: the next hop of the session's latest request).
 * The control thread expires sessions: it clears the id of sessions silent for longer
 * than the timeout (or closing), waits for a grace period, and only then returns the
 * slots to the free ring - so a worker that validated an id in its current loop
 * iteration never sees the slot reused under it.
 */
#ifndef SL_SESSION_H
#define SL_SESSION_H

#include <stdint.h>

#include <rte_common.h>

#define SL_SESSION_SLOT_BITS 20
#define SL_SESSION_MAX (1u << SL_SESSION_SLOT_BITS)

struct sl_session {
	uint64_t id;		/* 0 = free; acquire-load before reading the rest */
	uint64_t last_seen;	/* tsc, relaxed */
	uint64_t created;	/* tsc */
	uint64_t mac;		/* client (or next hop) MAC, byte i in bits 8i..8i+7; relaxed
				 * (sl_session_mac, sl_session_note_mac) */
	uint32_t ip;		/* client, network order */
	uint16_t udp_port;	/* client, host order */
	uint16_t port_id;	/* DPDK port the session came in on */
	uint8_t closing;	/* SL_SESSION_CLOSING or _REVOKED, else 0 */
	uint8_t pad[3];
	uint32_t mac_gen;	/* times mac changed; relaxed (sl_session_note_mac) */
	uint32_t window;
	uint32_t client_info;
	uint32_t auth_uid;	/* its client token's uid (auth.h); 0: no token (open mode) */
	uint64_t auth_cache;	/* (token table generation << 32) | the token's index in that
				 * table, UINT32_MAX: removed; relaxed, any worker (auth.h) */
	uint64_t producer;	/* HELLO's producer id, 0: none (ptab.h; set before id) */
} __rte_cache_aligned;

/* closing: the session ends (CLS of the session): it expires at the next scan */
#define SL_SESSION_CLOSING 1
/* closing: its client token was removed (sl_session_revoke_tokens): its subscriptions end
 * like a closing session's, but it stays known until it has been silent for the timeout,
 * so that its requests get SL_E_AUTH (sl_session_revoked), not SL_E_SESSION */
#define SL_SESSION_REVOKED 2

/* Live sessions are counted per source address in this many buckets (a hash of the IPv4
 * address: two sources may share a bucket, which only makes their limit shared). */
#define SL_SESSION_SRC_BITS 12
#define SL_SESSION_SRC_BUCKETS (1u << SL_SESSION_SRC_BITS)

struct sl_session_conf {
	uint32_t max_sessions;	/* power of two not required; <= SL_SESSION_MAX */
	uint32_t max_per_source;	/* live sessions per client address (0: no limit) */
	uint64_t timeout_tsc;	/* silence after which a session expires */
	int socket_id;
};

struct sl_session_table;

/** Create the table (hugepage memory). Control thread. NULL + rte_errno. */
struct sl_session_table *
sl_session_open(const struct sl_session_conf *conf);

void
sl_session_close(struct sl_session_table *t);

uint32_t
sl_session_capacity(const struct sl_session_table *t);

/**
 * Create a session for a client address (auth_uid, auth_cache: its client token, auth.h;
 * 0 and 0 without a token file). Its id is the slot in the low SL_SESSION_SLOT_BITS
 * and 64 - SL_SESSION_SLOT_BITS bits from a CSPRNG above (ChaCha20 keyed from getrandom()
 * at open; no system call here): ids cannot be guessed from earlier ones. Returns the
 * slot's session, or NULL with rte_errno ENOSPC (table full) or EDQUOT (the address holds
 * max_per_source sessions already). producer: the HELLO's producer id (0: none), kept
 * for the session's publishes (docs/protocol.md section 8). Any lcore; lock-free.
 */
struct sl_session *
sl_session_create(struct sl_session_table *t, uint32_t ip, uint16_t udp_port,
		  const uint8_t mac[6], uint16_t port_id, uint32_t window, uint32_t info,
		  uint32_t auth_uid, uint64_t auth_cache, uint64_t producer, uint64_t now);

/**
 * Validate a session id and refresh last_seen. Returns the session and its slot, or
 * NULL if unknown / expired. Any worker lcore, RCU read side.
 */
struct sl_session *
sl_session_get(struct sl_session_table *t, uint64_t id, uint32_t *slot, uint64_t now);

/**
 * As sl_session_get, but only for the address and UDP port that opened the session: a
 * request with a live session id from anywhere else finds nothing (and refreshes
 * nothing). ip in network order, udp_port in host order. Any worker lcore, RCU read side.
 */
struct sl_session *
sl_session_get_src(struct sl_session_table *t, uint64_t id, uint32_t ip, uint16_t udp_port,
		   uint32_t *slot, uint64_t now);

/** Session at slot if its id is still id (no refresh), else NULL. Worker lcores. */
struct sl_session *
sl_session_peek(struct sl_session_table *t, uint32_t slot, uint64_t id);

/** The MAC MSG frames to the session go to (its latest request's source). Any lcore. */
void
sl_session_mac(const struct sl_session *s, uint8_t mac[6]);

/**
 * A request of the session (validated by sl_session_get_src) came from the next hop mac:
 * the session's MSG frames go there from now on. A client's next hop can change under a
 * live session (a Linux bridge takes the lowest MAC of its ports, so its address moves
 * when a port leaves; a router fails over); answers go back to each request's source
 * anyway, but MSG frames are sent unasked and would be lost, each until its message
 * timeout: mac_gen counts the changes, and each partition's tick gives back the messages
 * the session's subscribers held at a change (sl_channel_sub_hop). One relaxed load, and
 * stores only when the MAC changed. Any worker lcore.
 */
void
sl_session_note_mac(struct sl_session *s, const uint8_t mac[6]);

/** Mark a session closing (CLS of the session). Any worker. */
void
sl_session_mark_closing(struct sl_session *s);

/**
 * Revoke every live session whose client token is gone: those with an auth_uid for which
 * gone(arg, uid) returns non-zero. Their subscriptions end (as for a closing session) and
 * their requests are refused. Returns the number revoked. Control thread, once the table
 * without those tokens is published and a grace period has passed (so that no HELLO
 * still creates a session with a token of the old table).
 */
uint32_t
sl_session_revoke_tokens(struct sl_session_table *t, int (*gone)(void *arg, uint32_t uid),
			 void *arg);

/**
 * 1 if id names a live session of the address and port ip/udp_port whose client token was
 * revoked (its requests get SL_E_AUTH), else 0. Refreshes nothing. Any worker lcore, RCU
 * read side.
 */
int
sl_session_revoked(struct sl_session_table *t, uint64_t id, uint32_t ip, uint16_t udp_port);

/**
 * Expire silent or closing sessions (a revoked one only once silent): clear their ids,
 * synchronize_rcu(), return the slots. Returns the number expired. Control thread
 * (registered QSBR thread).
 */
uint32_t
sl_session_expire(struct sl_session_table *t, uint64_t now);

/** Number of live sessions (approximate). Any thread. */
uint32_t
sl_session_count(const struct sl_session_table *t);

/** Slot of index i if live (for listings), else NULL. Control thread. */
const struct sl_session *
sl_session_at(const struct sl_session_table *t, uint32_t i);

#endif /* SL_SESSION_H */
