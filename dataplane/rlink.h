/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * rlink: the replica link, how replication datagrams (replication/repl.h) travel between
 * sluiced nodes over the same DPDK ports as clients, on the replica UDP port (the client
 * port + 1, 5151 by default). Each UDP payload is an envelope naming the partition, the
 * replication datagram, and a MAC over both. Format version 3, network byte order:
 *
 *   off size field
 *     0    4 magic      0x534C5250 ("SLRP")
 *     4    1 version    3
 *     5    1 name_len   topic name length, 1..64
 *     6    2 partition
 *     8    4 from       sender's node id
 *    12    4 to         receiver's node id (a node drops what is not for it)
 *    16    1 lane       the sender's worker index (each lane numbers its datagrams)
 *    17    1 key_id     which cluster key made the tag (sl_rlink_key_id: 1..255), 0 when
 *                       the cluster runs without a key (--insecure-cluster: no tag check)
 *    18    2 reserved   0
 *    20    8 seq        the lane's sequence number to this receiver: starts at the
 *                       sender's wall clock in ns when it starts, + 1 per datagram
 *    28    8 boot       random, drawn by the sending lane when it starts
 *    36    n topic name (name_len bytes, no NUL)
 *  36+n    m replication datagram
 *  36+n+m 16 tag        the Poly1305 tag of XChaCha20-Poly1305 (IETF; libsodium
 *                       crypto_aead_xchacha20poly1305_ietf) with an empty message and
 *                       bytes 0 .. 36+n+m-1 as associated data, keyed with the link key
 *                       of (from, to), under the 24-byte nonce
 *                       boot (8) || lane (1) || 7 zero bytes || seq (8)
 *
 * The link key of the direction from -> to is BLAKE2b-256 keyed with the 32-byte cluster
 * key over "sluice rlink v3" (15 bytes) || from (u32 BE) || to (u32 BE): each direction
 * has its own key, so a tag cannot be reflected back to its sender or moved to another
 * receiver. A nonce is never used twice under a link key: a lane numbers every datagram
 * to a receiver, and a restarted lane draws a new boot (a repeated nonce would let an
 * observer of both datagrams forge others under it). Version 2 tagged with keyed BLAKE2b,
 * 6 times slower on 9000-byte datagrams (1.35 against 0.22 ns a byte here, 2026-11-29).
 * A receiver checks, in this order and before it reads anything further: the
 * fixed header and lengths, that `to` is itself, that `from` is a member sending from the
 * member's address and replica port, the tag (constant time), then the sequence against a
 * 64-datagram sliding window per (from, lane) (replay protection; the window moves only
 * for a datagram whose tag is good). Sequences start at the wall clock so that a
 * restarted sender is ahead of everything it sent before; a restarted receiver accepts a
 * replay of what was sent before it started once, which the replication protocol treats
 * as the network duplicate it is.
 *
 * Pure functions over buffers: no EAL, unit-tested.
 */
#ifndef SL_RLINK_H
#define SL_RLINK_H

#include <stdint.h>

#include <sodium.h>

#define SL_RLINK_MAGIC 0x534C5250u
#define SL_RLINK_VERSION 3
#define SL_RLINK_HDR_LEN 36
#define SL_RLINK_NAME_MAX 64
#define SL_RLINK_TAG_LEN 16
#define SL_RLINK_KEY_LEN 32
/* Envelope bytes around a replication datagram at most (header, longest name, tag). */
#define SL_RLINK_OVERHEAD (SL_RLINK_HDR_LEN + SL_RLINK_NAME_MAX + SL_RLINK_TAG_LEN)

struct sl_rlink_env {
	uint32_t from;
	uint32_t to;
	uint16_t partition;
	uint8_t name_len;
	uint8_t lane;
	uint8_t key_id;			/* 0: no key */
	uint64_t seq;
	uint64_t boot;			/* the sending lane's random start value */
	const char *name;		/* decode: points into the buffer */
	const uint8_t *payload;		/* decode: the replication datagram */
	uint32_t payload_len;
};

/* A link key, ready to tag or check. */
struct sl_rlink_key {
	uint8_t k[crypto_aead_xchacha20poly1305_ietf_KEYBYTES];
	uint8_t id;			/* 0: none */
};

/* The replay window of one (sender, lane): the highest sequence seen and which of the 64
 * before it were seen. */
struct sl_rlink_replay {
	uint64_t top;
	uint64_t seen;			/* bit i: top - i was seen */
};

/** The id a cluster key's tags carry: 1..255 (a fingerprint of the key). Any thread. */
uint8_t
sl_rlink_key_id(const uint8_t key[SL_RLINK_KEY_LEN]);

/** Derive the link key of the direction from -> to. Any thread (sodium_init done). */
void
sl_rlink_key_derive(struct sl_rlink_key *k, const uint8_t key[SL_RLINK_KEY_LEN],
		    uint32_t from, uint32_t to);

/**
 * Write the envelope header for env (name, partition, from, to, lane, key_id, seq, boot) at buf
 * (cap bytes). Returns its length (the datagram follows it) or -ENOSPC / -EINVAL. Any
 * thread.
 */
int
sl_rlink_encode(uint8_t *buf, uint32_t cap, const struct sl_rlink_env *env);

/**
 * Append the tag to the envelope and datagram of len bytes at buf (cap bytes): keyed with
 * k under the nonce of the header's boot, lane and seq, or zeros when k is NULL (no key).
 * Returns len + SL_RLINK_TAG_LEN or -ENOSPC (or -EINVAL for len shorter than a header).
 * Any thread.
 */
int
sl_rlink_seal(uint8_t *buf, uint32_t len, uint32_t cap, const struct sl_rlink_key *k);

/**
 * Parse a replica UDP payload's header: 0 and *env (payload without the tag), or
 * -EBADMSG (short, bad magic, bad name length, reserved bytes set) or -EPROTONOSUPPORT
 * (another version). Checks no tag. Any thread.
 */
int
sl_rlink_decode(const uint8_t *buf, uint32_t len, struct sl_rlink_env *env);

/** Check the tag of a decoded payload of len bytes with link key k (constant time).
 * 0 or -EBADMSG. Any thread. */
int
sl_rlink_verify(const uint8_t *buf, uint32_t len, const struct sl_rlink_key *k);

/** 0 if seq is new to the window, -EALREADY if it was seen or is older than the window.
 * Any thread (the window's owner). */
int
sl_rlink_replay_check(const struct sl_rlink_replay *r, uint64_t seq);

/** Record seq (after its tag was checked). */
void
sl_rlink_replay_mark(struct sl_rlink_replay *r, uint64_t seq);

#endif /* SL_RLINK_H */
