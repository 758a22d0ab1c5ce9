/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * Prometheus scrape endpoint, see metrics.h for the HTTP rules.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <netdb.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <netinet/in.h>

#include "metrics.h"

#define LISTEN_BACKLOG 16
#define HEAD_MAX 256		/* the answer's status line and headers */

struct conn {
	int fd;			/* -1: free slot */
	int writing;		/* the answer is built: sending it */
	int64_t deadline;	/* ms, CLOCK_MONOTONIC */
	size_t inlen;
	char in[SL_METRICS_REQ_MAX];
	char *out;		/* malloc'ed answer */
	size_t outlen;
	size_t outoff;
};

struct sl_metrics {
	int fd;
	uint16_t port;
	int (*render)(void *arg, struct sl_metrics_buf *out);
	void *arg;
	struct conn conns[SL_METRICS_CONN_MAX];
};

static int64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- the exposition writer ---- */

static void
buf_put(struct sl_metrics_buf *b, const char *s, size_t n)
{
	size_t cap;
	char *p;

	if (b->oom)
		return;
	if (b->len + n + 1 > b->cap) {
		cap = b->cap != 0 ? b->cap : 65536;
		while (cap < b->len + n + 1)
			cap *= 2;
		if (cap > SL_METRICS_BODY_MAX) {
			b->oom = 1;
			return;
		}
		p = realloc(b->p, cap);
		if (p == NULL) {
			b->oom = 1;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

void
sl_metrics_printf(struct sl_metrics_buf *b, const char *fmt, ...)
{
	char tmp[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof(tmp)) {	/* longer than tmp: a bug of the caller's format */
		b->oom = 1;
		return;
	}
	buf_put(b, tmp, (size_t)n);
}

/* Escape s into b: always \\ and \n; \" too inside label values. */
static void
put_escaped(struct sl_metrics_buf *b, const char *s, int quote)
{
	size_t run = 0, i;

	for (i = 0; s[i] != '\0'; i++) {
		const char *e = s[i] == '\\' ? "\\\\" : s[i] == '\n' ? "\\n" :
				(quote && s[i] == '"') ? "\\\"" : NULL;

		if (e == NULL)
			continue;
		buf_put(b, s + run, i - run);
		buf_put(b, e, 2);
		run = i + 1;
	}
	buf_put(b, s + run, i - run);
}

void
sl_metrics_family(struct sl_metrics_buf *b, const char *name, enum sl_metrics_type type,
		  const char *help)
{
	static const char *const types[] = {"counter", "gauge", "histogram"};

	sl_metrics_printf(b, "# HELP %s ", name);
	put_escaped(b, help, 0);
	sl_metrics_printf(b, "\n# TYPE %s %s\n", name, types[type]);
}

static void
put_name_labels(struct sl_metrics_buf *b, const char *name, const char *suffix,
		const char *const *labels, const char *le)
{
	int first = 1;

	buf_put(b, name, strlen(name));
	if (suffix != NULL)
		buf_put(b, suffix, strlen(suffix));
	for (; labels != NULL && labels[0] != NULL; labels += 2) {
		buf_put(b, first ? "{" : ",", 1);
		first = 0;
		buf_put(b, labels[0], strlen(labels[0]));
		buf_put(b, "=\"", 2);
		put_escaped(b, labels[1] != NULL ? labels[1] : "", 1);
		buf_put(b, "\"", 1);
	}
	if (le != NULL) {
		buf_put(b, first ? "{" : ",", 1);
		first = 0;
		sl_metrics_printf(b, "le=\"%s\"", le);
	}
	if (!first)
		buf_put(b, "}", 1);
}

void
sl_metrics_sample(struct sl_metrics_buf *b, const char *name, const char *suffix,
		  const char *const *labels, const char *le, double v)
{
	char tmp[40];

	put_name_labels(b, name, suffix, labels, le);
	if (isnan(v))
		sl_metrics_printf(b, " NaN\n");
	else if (isinf(v))
		sl_metrics_printf(b, " %s\n", v > 0 ? "+Inf" : "-Inf");
	else if (snprintf(tmp, sizeof(tmp), "%.15g", v) > 0 && strtod(tmp, NULL) == v)
		sl_metrics_printf(b, " %s\n", tmp);	/* shortest form that reads back */
	else
		sl_metrics_printf(b, " %.17g\n", v);
}

void
sl_metrics_sample_u64(struct sl_metrics_buf *b, const char *name, const char *suffix,
		      const char *const *labels, const char *le, uint64_t v)
{
	put_name_labels(b, name, suffix, labels, le);
	sl_metrics_printf(b, " %" PRIu64 "\n", v);
}

/* ---- the server ---- */

/* Split "HOST:PORT" / "[V6]:PORT" into host and port. */
static int
split_address(const char *a, char *host, size_t hcap, char *port, size_t pcap)
{
	const char *colon, *h = a, *he;

	if (a == NULL || a[0] == '\0')
		return -EINVAL;
	if (a[0] == '[') {
		he = strchr(a, ']');
		if (he == NULL || he[1] != ':')
			return -EINVAL;
		h = a + 1;
		colon = he + 1;
	} else {
		colon = strrchr(a, ':');
		if (colon == NULL || strchr(a, ':') != colon)
			return -EINVAL;
		he = colon;
	}
	if (he == h || (size_t)(he - h) >= hcap || colon[1] == '\0' || strlen(colon + 1) >= pcap)
		return -EINVAL;
	memcpy(host, h, (size_t)(he - h));
	host[he - h] = '\0';
	snprintf(port, pcap, "%s", colon + 1);
	for (h = port; *h != '\0'; h++)
		if (*h < '0' || *h > '9')
			return -EINVAL;
	if (strtoul(port, NULL, 10) > 65535)
		return -EINVAL;
	return 0;
}

struct sl_metrics *
sl_metrics_open(const struct sl_metrics_conf *conf)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV};
	struct addrinfo *res = NULL;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	struct sl_metrics *m = NULL;
	char host[256], port[8];
	int err = 0, one = 1, i;

	if (conf == NULL || conf->render == NULL ||
	    split_address(conf->address, host, sizeof(host), port, sizeof(port)) != 0) {
		err = EINVAL;
		goto fail;
	}
	i = getaddrinfo(host, port, &hints, &res);
	if (i != 0) {
		err = i == EAI_SYSTEM ? errno : EINVAL;
		goto fail;
	}
	m = calloc(1, sizeof(*m));
	if (m == NULL) {
		err = ENOMEM;
		goto fail;
	}
	for (i = 0; i < SL_METRICS_CONN_MAX; i++)
		m->conns[i].fd = -1;
	m->render = conf->render;
	m->arg = conf->arg;
	m->fd = socket(res->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (m->fd < 0) {
		err = errno;
		goto fail;
	}
	setsockopt(m->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(m->fd, res->ai_addr, res->ai_addrlen) < 0 ||
	    listen(m->fd, LISTEN_BACKLOG) < 0 ||
	    getsockname(m->fd, (struct sockaddr *)&ss, &sl) < 0) {
		err = errno;
		goto fail;
	}
	m->port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port :
						   ((struct sockaddr_in *)&ss)->sin_port);
	freeaddrinfo(res);
	return m;

fail:
	if (res != NULL)
		freeaddrinfo(res);
	if (m != NULL && m->fd >= 0)
		close(m->fd);
	free(m);
	errno = err;
	return NULL;
}

uint16_t
sl_metrics_port(const struct sl_metrics *m)
{
	return m->port;
}

#define DRAIN_MAX (64 * 1024)	/* unread request bytes discarded before close */

static void
conn_close(struct conn *c)
{
	char sink[1024];
	size_t drained = 0;
	ssize_t n;

	/*
	 * Discard what the client sent beyond the request head (an oversized head): closing a
	 * socket with unread data sends a reset that can overtake the answer.
	 */
	if (c->writing) {
		shutdown(c->fd, SHUT_WR);
		while (drained < DRAIN_MAX) {
			n = recv(c->fd, sink, sizeof(sink), MSG_DONTWAIT);
			if (n <= 0)
				break;
			drained += (size_t)n;
		}
	}
	close(c->fd);
	free(c->out);
	c->fd = -1;
	c->out = NULL;
	c->writing = 0;
	c->inlen = 0;
}

/* Build the answer: status, headers, body (body may be NULL). */
static void
answer(struct conn *c, const char *status, const char *ctype, const char *body, size_t blen)
{
	char head[HEAD_MAX];
	int n;

	n = snprintf(head, sizeof(head),
		     "HTTP/1.1 %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
		     "Connection: close\r\n\r\n", status, ctype, blen);
	c->out = malloc((size_t)n + blen);
	if (c->out == NULL) {
		c->outlen = 0;
	} else {
		memcpy(c->out, head, (size_t)n);
		if (blen > 0)
			memcpy(c->out + n, body, blen);
		c->outlen = (size_t)n + blen;
	}
	c->outoff = 0;
	c->writing = 1;
	c->deadline = now_ms() + SL_METRICS_IDLE_MS;
}

static void
answer_text(struct conn *c, const char *status, const char *text)
{
	answer(c, status, "text/plain; charset=utf-8", text, strlen(text));
}

/* The request head is complete in c->in: route it. */
static void
route(struct sl_metrics *m, struct conn *c)
{
	struct sl_metrics_buf b = {0};
	char *sp1, *sp2, *eol, *q;

	eol = memchr(c->in, '\r', c->inlen);
	sp1 = memchr(c->in, ' ', c->inlen);
	if (eol == NULL || sp1 == NULL || sp1 > eol) {
		answer_text(c, "400 Bad Request", "bad request\n");
		return;
	}
	*eol = '\0';
	*sp1 = '\0';
	sp2 = strchr(sp1 + 1, ' ');
	if (sp2 == NULL || strncmp(sp2 + 1, "HTTP/1.", 7) != 0) {
		answer_text(c, "400 Bad Request", "bad request\n");
		return;
	}
	*sp2 = '\0';
	q = strchr(sp1 + 1, '?');
	if (q != NULL)
		*q = '\0';
	if (strcmp(sp1 + 1, "/metrics") != 0) {
		answer_text(c, "404 Not Found", "not found: only GET /metrics\n");
		return;
	}
	if (strcmp(c->in, "GET") != 0) {
		answer_text(c, "405 Method Not Allowed", "only GET /metrics\n");
		return;
	}
	if (m->render(m->arg, &b) != 0 || b.oom)
		answer_text(c, "500 Internal Server Error", "metrics unavailable\n");
	else
		answer(c, "200 OK", SL_METRICS_CONTENT_TYPE, b.p != NULL ? b.p : "", b.len);
	free(b.p);
}

/* Read what is there. Returns 1 when the answer is built. */
static int
conn_read(struct sl_metrics *m, struct conn *c)
{
	ssize_t n;

	for (;;) {
		if (c->inlen == sizeof(c->in)) {
			answer_text(c, "431 Request Header Fields Too Large", "request too large\n");
			return 1;
		}
		n = recv(c->fd, c->in + c->inlen, sizeof(c->in) - c->inlen, 0);
		if (n > 0) {
			size_t from = c->inlen >= 3 ? c->inlen - 3 : 0;

			c->inlen += (size_t)n;
			c->deadline = now_ms() + SL_METRICS_IDLE_MS;
			if (memmem(c->in + from, c->inlen - from, "\r\n\r\n", 4) != NULL) {
				route(m, c);
				return 1;
			}
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 0;
		conn_close(c);	/* EOF before a whole request, or an error */
		return 0;
	}
}

/* Send what the socket takes. Returns 1 when the answer is complete (connection closed). */
static int
conn_write(struct conn *c)
{
	ssize_t n;

	while (c->outoff < c->outlen) {
		n = send(c->fd, c->out + c->outoff, c->outlen - c->outoff, MSG_NOSIGNAL);
		if (n > 0) {
			c->outoff += (size_t)n;
			c->deadline = now_ms() + SL_METRICS_IDLE_MS;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 0;
		break;
	}
	n = c->outoff == c->outlen && c->outlen > 0;
	conn_close(c);
	return (int)n;
}

static void
accept_all(struct sl_metrics *m)
{
	int fd, i;

	for (;;) {
		fd = accept4(m->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			return;	/* EAGAIN, or EMFILE and the like: try again next poll */
		}
		for (i = 0; i < SL_METRICS_CONN_MAX; i++)
			if (m->conns[i].fd < 0)
				break;
		if (i == SL_METRICS_CONN_MAX) {
			close(fd);	/* too many at once */
			continue;
		}
		m->conns[i].fd = fd;
		m->conns[i].inlen = 0;
		m->conns[i].writing = 0;
		m->conns[i].deadline = now_ms() + SL_METRICS_IDLE_MS;
	}
}

int
sl_metrics_poll(struct sl_metrics *m, int timeout_ms)
{
	struct pollfd pfd[SL_METRICS_CONN_MAX + 1];
	int idx[SL_METRICS_CONN_MAX + 1];
	int n = 0, i, r, done = 0;
	int64_t now;

	pfd[n].fd = m->fd;
	pfd[n].events = POLLIN;
	idx[n++] = -1;
	for (i = 0; i < SL_METRICS_CONN_MAX; i++) {
		if (m->conns[i].fd < 0)
			continue;
		pfd[n].fd = m->conns[i].fd;
		pfd[n].events = m->conns[i].writing ? POLLOUT : POLLIN;
		idx[n++] = i;
	}
	r = poll(pfd, (nfds_t)n, timeout_ms);
	if (r < 0)
		return errno == EINTR ? 0 : -errno;
	for (i = 1; i < n && r > 0; i++) {
		struct conn *c = &m->conns[idx[i]];

		if (pfd[i].revents == 0)
			continue;
		if (!c->writing && !conn_read(m, c))
			continue;
		if (c->fd >= 0 && c->writing)
			done += conn_write(c);
	}
	if (r > 0 && (pfd[0].revents & POLLIN))
		accept_all(m);
	now = now_ms();
	for (i = 0; i < SL_METRICS_CONN_MAX; i++)
		if (m->conns[i].fd >= 0 && now > m->conns[i].deadline)
			conn_close(&m->conns[i]);
	return done;
}

void
sl_metrics_close(struct sl_metrics *m)
{
	int i;

	if (m == NULL)
		return;
	for (i = 0; i < SL_METRICS_CONN_MAX; i++)
		if (m->conns[i].fd >= 0)
			conn_close(&m->conns[i]);
	close(m->fd);
	free(m);
}
