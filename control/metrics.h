/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * metrics: a Prometheus scrape endpoint (text exposition format, version 0.0.4) served by
 * the control thread from its own poll loop. Plain POSIX, no DPDK; never on a data-path lcore.
 *
 * HTTP, hostile network in mind:
 *   - "GET /metrics" (a query string is ignored) answers 200 with
 *     Content-Type: text/plain; version=0.0.4; charset=utf-8 and the body the render
 *     callback writes; every other path answers 404, any other method 405; a request whose
 *     head (request line and headers, up to the blank line) exceeds SL_METRICS_REQ_MAX bytes
 *     answers 431; a request that is not HTTP/1.x answers 400. Request bodies are not read.
 *   - One request per connection: every answer carries "Connection: close".
 *   - At most SL_METRICS_CONN_MAX connections at once; a connection past that is accepted and
 *     closed at once (the kernel backlog does not fill with them).
 *   - A connection has SL_METRICS_IDLE_MS to send its request head and, after that, the
 *     same to take each part of the answer (the deadline moves when bytes move): a silent or
 *     slow client is closed, it never holds the control thread.
 *   - The body is at most SL_METRICS_BODY_MAX bytes; past that the answer is 500.
 *
 * Calling context of every function: the control thread (one thread owns a struct sl_metrics).
 */
#ifndef SL_METRICS_H
#define SL_METRICS_H

#include <stddef.h>
#include <stdint.h>

#define SL_METRICS_REQ_MAX 8192		/* request head, bytes */
#define SL_METRICS_CONN_MAX 16		/* connections at once */
#define SL_METRICS_IDLE_MS 5000		/* per connection: no progress this long closes it */
#define SL_METRICS_BODY_MAX (64u << 20)	/* largest answer body */
#define SL_METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/* A growing text buffer the render callback appends to (malloc'ed, at most BODY_MAX). */
struct sl_metrics_buf {
	char *p;
	size_t len;
	size_t cap;
	int oom;		/* an append did not fit: the answer is 500 */
};

/* Metric types of the exposition format's TYPE line. */
enum sl_metrics_type {
	SL_METRICS_COUNTER,
	SL_METRICS_GAUGE,
	SL_METRICS_HISTOGRAM,
};

struct sl_metrics_conf {
	const char *address;	/* "HOST:PORT" or "[V6ADDR]:PORT"; HOST numeric or a name */
	/* Write the whole exposition into out; called once per GET /metrics, on the control
	 * thread, from sl_metrics_poll(). Returns 0 or a negative errno (answer 500). */
	int (*render)(void *arg, struct sl_metrics_buf *out);
	void *arg;
};

struct sl_metrics;

/**
 * Bind and listen on conf->address (SO_REUSEADDR, non-blocking).
 * Returns the server, or NULL with errno set (EINVAL: bad address or no render callback,
 * or the failing getaddrinfo/socket/bind/listen errno).
 * Calling context: the control thread (initialisation).
 */
struct sl_metrics *
sl_metrics_open(const struct sl_metrics_conf *conf);

/**
 * Wait up to timeout_ms (0: only check) for the listen socket and the open connections,
 * then accept, read, answer and close as far as each can go without blocking; closes the
 * connections past their deadline. Returns the number of answers completed.
 * Calling context: the control thread; render() runs inside it (RCU read side online if the
 * callback needs it).
 */
int
sl_metrics_poll(struct sl_metrics *m, int timeout_ms);

/** The bound port (useful with port 0). Calling context: the control thread. */
uint16_t
sl_metrics_port(const struct sl_metrics *m);

/** Close every connection and the listen socket, free. NULL is a no-op. Control thread. */
void
sl_metrics_close(struct sl_metrics *m);

/* ---- writing the exposition (any thread that owns the buffer) ---- */

/** Append printf-formatted text. Any thread owning b. */
void
sl_metrics_printf(struct sl_metrics_buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/** "# HELP name help" and "# TYPE name type" (help escaped: \\ and \n). Any thread owning b. */
void
sl_metrics_family(struct sl_metrics_buf *b, const char *name, enum sl_metrics_type type,
		  const char *help);

/**
 * One sample line: name{k1="v1",k2="v2"} value. labels: NULL or an array of key, value
 * pairs ended by a NULL key; values are escaped (\\, \" and \n). suffix (may be NULL) is
 * appended to name (e.g. "_bucket"); le (may be NULL) adds the histogram label le="...".
 * Any thread owning b.
 */
void
sl_metrics_sample(struct sl_metrics_buf *b, const char *name, const char *suffix,
		  const char *const *labels, const char *le, double v);

/** Same with an integer value written exactly. Any thread owning b. */
void
sl_metrics_sample_u64(struct sl_metrics_buf *b, const char *name, const char *suffix,
		      const char *const *labels, const char *le, uint64_t v);

#endif /* SL_METRICS_H */
