/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * etcd: a client of etcd v3 (3.4 and later) through its JSON gateway (POST /v3/kv/range,
 * /v3/kv/put, /v3/kv/deleterange, /v3/kv/txn, /v3/lease/grant, /v3/lease/keepalive,
 * /v3/lease/revoke, /v3/watch), with libcurl and jansson. Keys and values travel in base64
 * (libsodium's codec); 64-bit numbers as JSON strings.
 *
 * Unary calls (range, put, delete, txn, lease) are blocking HTTP requests bounded by the
 * conf's timeouts: the control thread makes them between two polls of its socket, never a
 * data-path core. A watch is one long HTTP response (a stream of JSON lines) on a curl
 * multi handle of its own: sl_etcd_watch_poll() does the transfer work that is ready
 * (non-blocking) and hands out the events it parsed, so the control loop drives it with no
 * thread of its own; sl_etcd_watch_wait() blocks (bounded) for callers that may wait.
 *
 * Endpoints: a comma-separated list. A call goes to the endpoint that answered last; when it
 * cannot be reached (connection refused or timed out, transport error, gRPC UNAVAILABLE) the
 * call moves on to the next, once round the list. A watch that breaks reconnects the same
 * way from the revision after the last event it delivered, so no event is lost or repeated.
 *
 * Every response is parsed with jansson and checked: HTTP status, the gateway's error
 * object ({"error","code","message"}: the gRPC code becomes a negative errno), the response
 * header's revision, the fields used; a response larger than conf.max_response is refused
 * (-EMSGSIZE).
 *
 * Errors: -EINVAL (bad argument or a response that is not what the API says), -ENOENT
 * (lease not found or expired), -ERANGE (revision compacted: re-read and watch again),
 * -EMSGSIZE, -ENOMEM, -ENOTCONN (no endpoint answered), -EIO (any other server error).
 *
 * Calling context: a handle and its watches belong to one thread (sluiced: the control
 * thread); nothing here takes a lock. Needs no EAL.
 */
#ifndef SL_ETCD_H
#define SL_ETCD_H

#include <stddef.h>
#include <stdint.h>

#define SL_ETCD_MAX_ENDPOINTS 8
#define SL_ETCD_ENDPOINT_MAX 256		/* bytes of one endpoint URL */
#define SL_ETCD_CONNECT_TIMEOUT_MS 300		/* conf defaults (0 in the conf) */
#define SL_ETCD_REQUEST_TIMEOUT_MS 2000
#define SL_ETCD_MAX_RESPONSE (8u << 20)

struct sl_etcd_conf {
	const char *endpoints;		/* "http://HOST:PORT[,http://HOST:PORT...]" */
	uint32_t connect_timeout_ms;	/* per endpoint (0: SL_ETCD_CONNECT_TIMEOUT_MS) */
	uint32_t request_timeout_ms;	/* per endpoint (0: SL_ETCD_REQUEST_TIMEOUT_MS) */
	size_t max_response;		/* largest response body (0: SL_ETCD_MAX_RESPONSE) */
};

/* A key-value pair as etcd holds it. key and value are NUL-terminated copies (value may also
 * hold NUL bytes: value_len says how long it is). */
struct sl_etcd_kv {
	char *key;
	size_t key_len;
	char *value;
	size_t value_len;
	int64_t create_revision;
	int64_t mod_revision;
	int64_t version;
	int64_t lease;
};

/* A range's answer. */
struct sl_etcd_kvs {
	struct sl_etcd_kv *kv;
	size_t n;
	int64_t revision;		/* the store's revision when it was read */
	int more;			/* more keys matched than were returned */
};

enum sl_etcd_target {
	SL_ETCD_CMP_VERSION = 0,
	SL_ETCD_CMP_CREATE,		/* create_revision (0: the key does not exist) */
	SL_ETCD_CMP_MOD,		/* mod_revision */
	SL_ETCD_CMP_VALUE,
};

enum sl_etcd_result {
	SL_ETCD_EQUAL = 0,
	SL_ETCD_GREATER,
	SL_ETCD_LESS,
	SL_ETCD_NOT_EQUAL,
};

/* A txn compare: key's target (result) num, or value for SL_ETCD_CMP_VALUE. */
struct sl_etcd_cmp {
	const char *key;
	enum sl_etcd_target target;
	enum sl_etcd_result result;
	int64_t num;
	const char *value;
	size_t value_len;
};

enum sl_etcd_op_kind {
	SL_ETCD_OP_PUT = 0,
	SL_ETCD_OP_DELETE,		/* the key (prefix: every key under it) */
	SL_ETCD_OP_GET,			/* the key (prefix: every key under it) */
};

struct sl_etcd_op {
	enum sl_etcd_op_kind kind;
	const char *key;
	int prefix;			/* DELETE, GET: the key is a prefix */
	const char *value;		/* PUT */
	size_t value_len;
	int64_t lease;			/* PUT: 0 = none */
};

enum sl_etcd_ev_type {
	SL_ETCD_EV_PUT = 0,
	SL_ETCD_EV_DELETE,
};

/* A watch event: kv.value is empty for a DELETE; kv.mod_revision is the event's revision. */
struct sl_etcd_event {
	enum sl_etcd_ev_type type;
	struct sl_etcd_kv kv;
};

struct sl_etcd;
struct sl_etcd_watch;

/**
 * Check the conf (every endpoint http:// or https:// with a host, at most
 * SL_ETCD_MAX_ENDPOINTS) and make a handle. Connects to nothing yet. NULL with rte_errno and
 * errno set (EINVAL, ENOMEM). Control thread.
 */
struct sl_etcd *
sl_etcd_open(const struct sl_etcd_conf *conf);

/** Free a handle (NULL is fine). Its watches must be closed first. Control thread. */
void
sl_etcd_close(struct sl_etcd *e);

/** The endpoint the last call reached (or will try first). Control thread. */
const char *
sl_etcd_endpoint(const struct sl_etcd *e);

/** 1 when the last unary call failed because every endpoint refused the connection (a
 * host that answers with no etcd listening: etcd is down, not cut off from us), else 0.
 * Control thread. */
int
sl_etcd_refused(const struct sl_etcd *e);

/** Read one key (prefix != 0: every key under it, in key order, at most limit, 0: all)
 * into *out (free it with sl_etcd_kvs_free). 0 or a negative errno. Control thread. */
int
sl_etcd_range(struct sl_etcd *e, const char *key, int prefix, int64_t limit,
	      struct sl_etcd_kvs *out);

/** Free what a range or txn put in *kvs and zero it (fine on a zeroed one). Any thread. */
void
sl_etcd_kvs_free(struct sl_etcd_kvs *kvs);

/** Put key = value (lease: 0 none). *rev (may be NULL): the revision of the put. 0 or a
 * negative errno. Control thread. */
int
sl_etcd_put(struct sl_etcd *e, const char *key, const void *value, size_t value_len,
	    int64_t lease, int64_t *rev);

/** Delete the key (prefix != 0: every key under it). *deleted (may be NULL): how many.
 * 0 or a negative errno. Control thread. */
int
sl_etcd_delete(struct sl_etcd *e, const char *key, int prefix, int64_t *deleted);

/**
 * A transaction: if every compare holds, the success ops run, else the failure ops. Returns
 * 1 (compares held), 0 (they did not) or a negative errno. *rev (may be NULL): the store's
 * revision after it; *got (may be NULL): the keys the first GET op of the branch that ran
 * read (free with sl_etcd_kvs_free). Control thread.
 */
int
sl_etcd_txn(struct sl_etcd *e, const struct sl_etcd_cmp *cmp, size_t ncmp,
	    const struct sl_etcd_op *success, size_t nsuccess,
	    const struct sl_etcd_op *failure, size_t nfailure, int64_t *rev,
	    struct sl_etcd_kvs *got);

/** Grant a lease of ttl_s seconds: *id, *granted (may be NULL: the TTL etcd gave). 0 or a
 * negative errno. Control thread. */
int
sl_etcd_lease_grant(struct sl_etcd *e, int64_t ttl_s, int64_t *id, int64_t *granted);

/** Renew a lease once: *ttl (may be NULL) its TTL again. -ENOENT if it expired (or never
 * was). Control thread. */
int
sl_etcd_lease_keepalive(struct sl_etcd *e, int64_t id, int64_t *ttl);

/** Revoke a lease: every key under it is deleted. 0, -ENOENT (gone already) or a negative
 * errno. Control thread. */
int
sl_etcd_lease_revoke(struct sl_etcd *e, int64_t id);

/**
 * Watch every key under prefix (prefix != 0) or the one key, from revision start_rev (0:
 * from now). Starts the stream; events come from sl_etcd_watch_poll. NULL with rte_errno
 * and errno set. Control thread (the handle's thread).
 */
struct sl_etcd_watch *
sl_etcd_watch_open(struct sl_etcd *e, const char *key, int prefix, int64_t start_rev);

/**
 * Do the transfer work that is ready, without blocking, and take the next event in
 * revision order: 1 with *ev set (free it with sl_etcd_event_free), 0 if none is here yet,
 * or a negative errno: -ERANGE (the revision to resume from was compacted, or the server
 * cancelled the watch: re-read with a range and open a new watch), -EMSGSIZE (a line too
 * long), -ENOMEM. A broken stream is reopened on the next endpoint by itself (0 meanwhile).
 * Control thread.
 */
int
sl_etcd_watch_poll(struct sl_etcd_watch *w, struct sl_etcd_event *ev);

/** Wait up to timeout_ms for the watch's connection to have something (for callers that
 * may block: tests, a thread of their own). 0 or a negative errno. Control thread. */
int
sl_etcd_watch_wait(struct sl_etcd_watch *w, int timeout_ms);

/** The same, returning early also when fd (>= 0) is readable: a control loop waits on its
 * control socket and the watch at once, so a watch event is taken as it arrives rather
 * than at the loop's next timeout. 0 or a negative errno. Control thread. */
int
sl_etcd_watch_wait_fd(struct sl_etcd_watch *w, int fd, int timeout_ms);

/** 1 once etcd confirmed the watch (its "created" answer) since the last (re)connect. */
int
sl_etcd_watch_ready(const struct sl_etcd_watch *w);

/** The revision the watch resumes from after a reconnect (the last event's + 1). */
int64_t
sl_etcd_watch_next_rev(const struct sl_etcd_watch *w);

/** Free an event's copies. Any thread. */
void
sl_etcd_event_free(struct sl_etcd_event *ev);

/** Stop and free a watch (NULL is fine). Control thread. */
void
sl_etcd_watch_close(struct sl_etcd_watch *w);

#endif /* SL_ETCD_H */
