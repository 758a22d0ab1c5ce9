/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * auth: client tokens and their rights per topic (sluiced --token-file; format and
 * meaning: docs/operations.md, "Client tokens").
 *
 * A table is built from the token file on the control thread and is then immutable: the
 * broker publishes it under RCU (rcu_xchg_pointer) and frees the previous one after a
 * grace period, so a worker reads it lock-free for the length of a loop iteration. A
 * table keeps only a hash of each token (BLAKE2b-256, libsodium crypto_generichash): a
 * token is hashed once, at HELLO, and compared in constant time; a session then remembers
 * its token's uid, and each request costs a pattern match on the session's rules, no hash.
 *
 * Every token has a uid that stays the same across reloads as long as the token (its
 * hash) stays in the file, and is never given to another token: a session finds its token
 * again in a new table by uid, and finds nothing once the token was removed.
 *
 * Rights (SL_AUTH_*), given per topic pattern, add up over the matching rules:
 *   pub    PUB and MPUB on an existing topic;
 *   sub    SUB (joining an existing channel, or creating an ephemeral one), RDY, FIN,
 *          REQ, TOUCH and CLS of a channel;
 *   admin  what changes the node for other clients, on top of pub or sub: creating a
 *          topic by publishing to it (--auto-create; with pub), creating a durable channel
 *          by SUB (with sub), SET_OFFSET (with sub).
 * A pattern is a topic name, a prefix ending in '*' ("orders.*"), or "*" (every topic).
 *
 * Pure C with libsodium, no DPDK: the unit test links it alone.
 */
#ifndef SL_AUTH_H
#define SL_AUTH_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define SL_AUTH_PUB 0x1u
#define SL_AUTH_SUB 0x2u
#define SL_AUTH_ADMIN 0x4u
#define SL_AUTH_ALL (SL_AUTH_PUB | SL_AUTH_SUB | SL_AUTH_ADMIN)

#define SL_AUTH_TOKEN_MIN 16		/* bytes of a token (what the client sends) */
#define SL_AUTH_TOKEN_MAX 128		/* = SL_WIRE_TOKEN_MAX */
#define SL_AUTH_HASH_LEN 32
#define SL_AUTH_HASH_PREFIX "blake2b:"	/* a token given by its hash in the file */
#define SL_AUTH_MAX_TOKENS 1024
#define SL_AUTH_MAX_RULES 64		/* allow lines per token */
#define SL_AUTH_NAME_MAX 64

struct sl_auth_table;

/**
 * Read a token file: sl_secfile_open (owned by this user, mode 0600 or 0400, not a link),
 * then sl_auth_parse. prev: the table in use (its tokens keep their uids), or NULL.
 * Returns the new table, or NULL with errno and `err` holding "FILE: ..." or
 * "FILE:LINE: ...". Control thread.
 */
struct sl_auth_table *
sl_auth_load(const char *path, const struct sl_auth_table *prev, char *err, size_t err_len);

/**
 * Parse a token file's text from f (name: the file name for messages). Lines:
 *   # a comment (a line whose first non-blank character is '#'), blank lines
 *   token NAME SECRET           SECRET: the token itself, 16 to 128 of
 *                               A-Z a-z 0-9 - _ . ~ + / =, or blake2b:<64 hex digits>,
 *                               the hash of the token (`sluicectl token hash`)
 *   allow NAME RIGHTS PATTERN   RIGHTS: pub, sub, admin, comma-separated, or all;
 *                               NAME declared by a token line above
 * NAME follows the topic name rule (name.h). A name or a token given twice, an unknown
 * keyword, right or pattern, and a file without a token are errors. Returns the table, or
 * NULL with errno (EINVAL, ENOMEM, E2BIG) and `err` set. Control thread.
 */
struct sl_auth_table *
sl_auth_parse(FILE *f, const char *name, const struct sl_auth_table *prev, char *err,
	      size_t err_len);

/** Free a table (NULL is a no-op). Control thread, after a grace period. */
void
sl_auth_free(struct sl_auth_table *t);

/** The hash a table keeps of a token. Any thread. */
void
sl_auth_hash(const void *token, size_t len, uint8_t out[SL_AUTH_HASH_LEN]);

/**
 * The index of the token `token` (len bytes, as sent in HELLO) in t, or -1: it hashes the
 * token and compares it with every entry in constant time. Any thread (RCU read side for
 * a published table); no allocation, no system call.
 */
int
sl_auth_find(const struct sl_auth_table *t, const void *token, size_t len);

/** The index of the token with this uid in t, or -1 (removed). Any thread, RCU read side. */
int
sl_auth_by_uid(const struct sl_auth_table *t, uint32_t uid);

/**
 * The rights (SL_AUTH_* bits) token idx has on the topic of len bytes: the union of the
 * rights of its rules whose pattern matches. Any thread, RCU read side; no allocation.
 */
uint32_t
sl_auth_rights(const struct sl_auth_table *t, uint32_t idx, const char *topic, size_t len);

/** The table's generation (1 for the first table, +1 per reload). Any thread. */
uint32_t
sl_auth_gen(const struct sl_auth_table *t);

/** Number of tokens. Any thread. */
uint32_t
sl_auth_count(const struct sl_auth_table *t);

/** Token idx's uid (never 0), name and number of rules. Any thread. */
uint32_t
sl_auth_uid(const struct sl_auth_table *t, uint32_t idx);
const char *
sl_auth_name(const struct sl_auth_table *t, uint32_t idx);
uint32_t
sl_auth_nrules(const struct sl_auth_table *t, uint32_t idx);

/** Rule r of token idx as text ("pub,sub orders.*") into buf. Any thread. */
void
sl_auth_rule_str(const struct sl_auth_table *t, uint32_t idx, uint32_t r, char *buf,
		 size_t len);

/** "pub,sub,admin" (or "none") for a rights mask into buf. Any thread. */
void
sl_auth_rights_str(uint32_t rights, char *buf, size_t len);

#endif /* SL_AUTH_H */
