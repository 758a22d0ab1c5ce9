/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * Control socket server (the daemon side of sluicectl). Plain POSIX, no DPDK.
 *
 * Wire protocol, over a Unix stream socket (mode 0600, default /run/sluice/sluiced.sock):
 *   - One connection carries one request and one reply.
 *   - Request: one line of UTF-8 words separated by spaces or tabs, terminated by "\n"
 *     (a trailing "\r" is ignored; EOF also ends the line). At most SL_CTL_REQ_MAX bytes and
 *     SL_CTL_ARGC_MAX words. A word may be double-quoted to contain spaces: `topic create
 *     "a b" 3`; inside quotes, \" and \\ stand for " and \. Quotes may start mid-word and the
 *     parts are joined, as in a shell (`a"b c"` is the word `ab c`). The first word is the
 *     command.
 *   - Or, when its first character (after spaces) is '[', the request line is a JSON array
 *     of strings, the command first: ["topic","create","a b","3"] (parsed by jansson; any
 *     escape JSON allows, no NUL; same limits). sluicectl sends this form.
 *   - Reply: exactly one JSON object (compact, encoded by jansson: json.h) terminated by
 *     "\n"; then the server closes the connection. Errors are objects with "error"
 *     (string) and "code" (int, a positive errno or SL_E_* value, see dataplane/err.h),
 *     e.g.
 *       {"error":"unknown command 'x'","code":38}
 *     Protocol-level errors: unknown command (ENOSYS), empty request or bad quoting (EINVAL),
 *     too many words (E2BIG), request line too long (EMSGSIZE), request not received within
 *     SL_CTL_DEADLINE_MS (ETIMEDOUT), reply larger than reply_max (ENOSPC).
 *   - Built-in command "help": {"commands":[{"name":"help","help":"help"},...]} in
 *     registration order.
 *   - A client that connects and closes without sending anything gets no reply.
 *
 * The server is single-threaded and serves clients one after the other from sl_ctl_poll();
 * reading a request and writing a reply each have a SL_CTL_DEADLINE_MS deadline, so a silent
 * or stuck client delays the control thread by at most that much.
 *
 * Calling context of every function: the control thread (one thread owns a struct sl_ctl).
 */
#ifndef SL_CTL_H
#define SL_CTL_H

#include <stddef.h>

#include "json.h"

#define SL_CTL_REQ_MAX 4096		/* request line, "\n" included */
#define SL_CTL_ARGC_MAX 64		/* words per request */
#define SL_CTL_DEADLINE_MS 1000	/* per client: read the request, then write the reply */
#define SL_CTL_REPLY_DEFAULT (1u << 20)	/* reply_max when 0 */
#define SL_CTL_REPLY_MIN 2048		/* smaller reply_max raised to this: error replies fit */
#define SL_CTL_BATCH_MAX 16		/* clients served per sl_ctl_poll() call at most */

struct sl_ctl_conf {
	const char *path;	/* Unix socket path (must fit sockaddr_un.sun_path) */
	size_t reply_max;	/* bytes, 0 = SL_CTL_REPLY_DEFAULT (1 MiB) */
	/*
	 * Optional: text for a handler's negative return when it did not call
	 * sl_ctl_set_error(), e.g. sl_strerror from dataplane/err.h; called with the handler's
	 * (negative) return value. NULL: "error N" with N = -ret.
	 */
	const char *(*strerror)(int err);
};

struct sl_ctl;

/**
 * Command handler. argv[0] is the command word; argv[] is NULL-terminated and its strings may
 * be modified (they live until the handler returns). `out` is positioned INSIDE the reply
 * object: write members with keys (sl_json_u64(out, "count", n), ...); the server opens and
 * closes the object, so a handler that writes nothing replies {}.
 * Returns 0 (positive values are treated as 0) or a negative errno / -SL_E_* value: the server
 * then discards whatever was written and replies {"error": text, "code": -ret}, where text is
 * the message set with sl_ctl_set_error() or, failing that, conf.strerror(ret) / "error N".
 * Calling context: the control thread, from sl_ctl_poll().
 */
typedef int (*sl_ctl_handler_t)(void *arg, int argc, char **argv, struct sl_json *out);

/**
 * Create the control socket at conf->path: creates missing parent directories with mode 0700,
 * replaces a stale socket file nothing listens on (a live server answering on it makes this
 * fail with EADDRINUSE; an existing non-socket file makes it fail with EEXIST and is left
 * alone), binds, chmods the socket 0600 and listens (non-blocking listen fd).
 * Returns the server, or NULL with errno set (EINVAL, ENAMETOOLONG, EADDRINUSE, EEXIST,
 * ENOMEM, or the failing syscall's errno).
 * Calling context: the control thread (initialisation).
 */
struct sl_ctl *
sl_ctl_open(const struct sl_ctl_conf *conf);

/**
 * Register command `cmd` (one word, no spaces or quotes). help: one line shown by "help",
 * e.g. "topic create <name> <partitions> | topic list | topic delete <name>"; NULL = cmd.
 * Both strings are copied. Returns 0, -EINVAL (bad word), -EEXIST (already registered, or
 * "help") or -ENOMEM.
 * Calling context: the control thread.
 */
int
sl_ctl_register(struct sl_ctl *c, const char *cmd, sl_ctl_handler_t fn, void *arg,
		const char *help);

/** The listen fd, for the caller's own poll() loop (POLLIN = clients waiting).
 * Calling context: the control thread. */
int
sl_ctl_fd(const struct sl_ctl *c);

/**
 * Wait up to timeout_ms (-1 = forever, 0 = just check) for clients, then serve every client
 * already waiting (at most SL_CTL_BATCH_MAX): read one request line, run its handler, write
 * the reply + "\n", close. Misbehaving clients are answered with an error object or dropped;
 * they never make this fail.
 * Returns the number of requests answered (0 on timeout or EINTR), or a negative errno when
 * poll()/accept() fail on the listen socket.
 * Calling context: the control thread.
 */
int
sl_ctl_poll(struct sl_ctl *c, int timeout_ms);

/**
 * Attach an error message (printf format) to the reply being built; the handler must still
 * return a negative code for the reply to be an error. Truncated to SL_JSON_ERR_MAX - 1 bytes.
 * Calling context: the control thread, inside a handler.
 */
void
sl_ctl_set_error(struct sl_json *out, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/**
 * Close the listen socket, unlink the socket file (only if it is still the one this server
 * created) and free the server. NULL is a no-op.
 * Calling context: the control thread (shutdown).
 */
void
sl_ctl_close(struct sl_ctl *c);

#endif /* SL_CTL_H */
