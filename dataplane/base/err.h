/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * sluice error codes. Functions return 0 or a negative value: either -errno or -SL_E_*.
 * The SL_E_* values are also the error codes carried on the wire in ERR frames
 * (docs/protocol.md, "Error codes"), so they never change once released.
 */
#ifndef SL_ERR_H
#define SL_ERR_H

enum sl_err {
	SL_E_BASE = 1000,
	SL_E_MALFORMED = 1001,	/* packet shorter than its declared fields, bad lengths */
	SL_E_VERSION = 1002,	/* unknown protocol version */
	SL_E_OPCODE = 1003,	/* unknown opcode */
	SL_E_SESSION = 1004,	/* unknown or expired session: send HELLO again */
	SL_E_TOPIC = 1005,	/* unknown topic */
	SL_E_PARTITION = 1006,	/* partition out of range */
	SL_E_CHANNEL = 1007,	/* unknown channel / not subscribed */
	SL_E_FULL = 1008,	/* partition log full: retry later, nothing was written */
	SL_E_TOO_BIG = 1009,	/* message larger than the limit announced in WELCOME */
	SL_E_SEQ_OLD = 1010,	/* sequence older than the idempotency window */
	SL_E_NOT_LEADER = 1011, /* this node does not lead the partition */
	SL_E_WRITE_DISABLED = 1012, /* leadership change in progress */
	SL_E_QUORUM = 1013,	/* ISR too small to accept writes */
	SL_E_EPOCH = 1014,	/* stale or changed write epoch */
	SL_E_MSG_ID = 1015,	/* message id not in flight on this channel */
	SL_E_EXISTS = 1016,	/* object already exists */
	SL_E_LIMIT = 1017,	/* a configured limit was reached (sessions, subs, channels) */
	SL_E_NAME = 1018,	/* invalid topic or channel name */
	SL_E_IO = 1019,		/* storage I/O error (sticky until resumed) */
	SL_E_PUB_ARG = 1020,	/* inconsistent publish arguments */
	SL_E_INTERNAL = 1021,	/* bug: please report */
	SL_E_INVAL = 1022,	/* invalid argument value */
	SL_E_TIMEOUT = 1023,	/* no answer in time (client side) */
	SL_E_CAPACITY = 1024,	/* no room for another topic: the node's topic limit or memory
				 * budget (sluiced --max-topics, --log-budget-mb) is reached, or
				 * the memory for its logs could not be had; nothing was created */
	SL_E_AUTH = 1025,	/* the node takes only clients with a token (sluiced --token-file):
				 * HELLO without one, with an unknown one, or a session whose
				 * token was removed since; no session, nothing executed */
	SL_E_DENIED = 1026,	/* the session's token lacks the right this request needs on
				 * its topic (publish, subscribe or admin); nothing executed */
	SL_E_OUT_OF_ORDER = 1027, /* an earlier publish of this session to this partition was
				   * refused and not retried yet: retry that one first */
	SL_E_MAX
};

/**
 * Human-readable text for a sluice error or errno value (sign ignored).
 * Calling context: any thread. Returns a static string.
 */
const char *
sl_strerror(int err);

#endif /* SL_ERR_H */
