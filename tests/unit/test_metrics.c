/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * Unit test: the Prometheus endpoint (control/metrics.c) against hostile HTTP on loopback:
 * every malformed, oversized, split or pipelined request head gets the documented answer
 * (200, 400, 404, 405, 431, 500) or a close, never a hang or a second answer; the
 * connection limit; address parsing; the exposition's escaping and number forms.
 * The server and the clients run in this one thread: a client writes, then the test polls
 * the server until the client has its whole answer (bounded).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "metrics.h"

static int render_mode;	/* 0: two samples, 1: fail, 2: out of memory */

static int
render(void *arg, struct sl_metrics_buf *out)
{
	(void)arg;
	if (render_mode == 1)
		return -EIO;
	if (render_mode == 2) {
		out->oom = 1;
		return 0;
	}
	sl_metrics_family(out, "sluice_test_total", SL_METRICS_COUNTER, "a test");
	sl_metrics_sample_u64(out, "sluice_test_total", NULL, NULL, NULL, 42);
	return 0;
}

static int64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int
client(uint16_t port)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		perror("connect");
		exit(1);
	}
	return fd;
}

/*
 * Poll the server until fd has seen EOF (the server closed after its answer) or 3 s pass.
 * Returns the bytes read into buf (NUL-terminated), -1 on a time-out, -2 on a reset with
 * nothing read.
 */
static int
drain(struct sl_metrics *m, int fd, char *buf, size_t cap)
{
	int64_t end = now_ms() + 3000;
	size_t len = 0;
	ssize_t n;

	while (now_ms() < end) {
		sl_metrics_poll(m, 10);
		for (;;) {
			n = recv(fd, buf + len, cap - 1 - len, MSG_DONTWAIT);
			if (n > 0) {
				len += (size_t)n;
				if (len == cap - 1)
					break;
				continue;
			}
			if (n == 0 || (n < 0 && errno == ECONNRESET)) {
				buf[len] = '\0';
				return n < 0 && len == 0 ? -2 : (int)len;
			}
			break;	/* EAGAIN: poll the server again */
		}
	}
	buf[len] = '\0';
	return -1;
}

/* Send req (len bytes) on a new connection, return the answer's status code (0: none). */
static int
ask(struct sl_metrics *m, const char *req, size_t len, char *buf, size_t cap)
{
	int fd = client(sl_metrics_port(m)), code = 0, n;

	if (send(fd, req, len, MSG_NOSIGNAL) != (ssize_t)len)
		perror("send");
	n = drain(m, fd, buf, cap);
	if (n > 0 && sscanf(buf, "HTTP/1.1 %d ", &code) != 1)
		code = 0;
	close(fd);
	return code;
}

#define ASK(m, s, buf) ask((m), (s), sizeof(s) - 1, (buf), sizeof(buf))

static void
test_requests(struct sl_metrics *m)
{
	static const char nul_path[] = "GET /met\0rics HTTP/1.1\r\n\r\n";
	static char big[SL_METRICS_REQ_MAX + 512];
	char buf[4096];
	int fd, n, i;

	CHECK(ASK(m, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", buf) == 200 &&
	      strstr(buf, "Content-Type: " SL_METRICS_CONTENT_TYPE "\r\n") != NULL &&
	      strstr(buf, "Connection: close\r\n") != NULL &&
	      strstr(buf, "\r\n\r\n# HELP sluice_test_total a test\n"
		     "# TYPE sluice_test_total counter\nsluice_test_total 42\n") != NULL,
	      "GET /metrics: 200, content type, exposition body");
	CHECK(ASK(m, "GET /metrics?name[]=x&y HTTP/1.0\r\n\r\n", buf) == 200,
	      "a query string is ignored (HTTP/1.0)");
	CHECK(ASK(m, "GET /metricsX HTTP/1.1\r\n\r\n", buf) == 404, "GET /metricsX: 404");
	CHECK(ASK(m, "GET /metrics/../metrics HTTP/1.1\r\n\r\n", buf) == 404,
	      "a dotted path is not normalised: 404");
	CHECK(ASK(m, "GET /%6detrics HTTP/1.1\r\n\r\n", buf) == 404,
	      "a percent-encoded path is not decoded: 404");
	CHECK(ASK(m, "POST /metrics HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello", buf) == 405,
	      "POST /metrics: 405");
	CHECK(ASK(m, "get /metrics HTTP/1.1\r\n\r\n", buf) == 405, "lower-case method: 405");
	CHECK(ASK(m, "GET /metrics HTTP/2.0\r\n\r\n", buf) == 400, "HTTP/2.0: 400");
	CHECK(ASK(m, "GET /metrics\r\n\r\n", buf) == 400, "HTTP/0.9 request line: 400");
	CHECK(ASK(m, "\r\n\r\n", buf) == 400, "empty request line: 400");
	CHECK(ASK(m, "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n", buf) == 400,
	      "a TLS ClientHello-like head: 400");
	CHECK(ask(m, nul_path, sizeof(nul_path) - 1, buf, sizeof(buf)) == 400,
	      "a NUL byte in the path: 400");

	memset(big, 'a', sizeof(big));
	memcpy(big, "GET /metrics HTTP/1.1\r\nX: ", 26);
	CHECK(ask(m, big, sizeof(big), buf, sizeof(buf)) == 431,
	      "a head past %d bytes: 431", SL_METRICS_REQ_MAX);

	/* a head sent a byte at a time still gets its answer */
	{
		static const char req[] = "GET /metrics HTTP/1.1\r\nHost: slow\r\n\r\n";

		fd = client(sl_metrics_port(m));
		for (i = 0; i < (int)sizeof(req) - 1; i++) {
			if (send(fd, req + i, 1, MSG_NOSIGNAL) != 1)
				break;
			sl_metrics_poll(m, 0);
		}
		n = drain(m, fd, buf, sizeof(buf));
		CHECK(n > 0 && strncmp(buf, "HTTP/1.1 200 ", 13) == 0,
		      "a head split into %d one-byte sends: 200", i);
		close(fd);
	}

	/* two pipelined requests: one answer, then the connection closes */
	n = ASK(m, "GET /metrics HTTP/1.1\r\n\r\nGET /nope HTTP/1.1\r\n\r\n", buf);
	CHECK(n == 200 && strstr(buf, "404") == NULL && strstr(strstr(buf, "\r\n") + 2,
								  "HTTP/1.1") == NULL,
	      "pipelined requests: one answer only");

	/* a client that connects and closes at once costs nothing */
	fd = client(sl_metrics_port(m));
	close(fd);
	sl_metrics_poll(m, 10);
	CHECK(ASK(m, "GET /metrics HTTP/1.1\r\n\r\n", buf) == 200,
	      "served after a client that closed without a request");

	render_mode = 1;
	CHECK(ASK(m, "GET /metrics HTTP/1.1\r\n\r\n", buf) == 500, "render fails: 500");
	render_mode = 2;
	CHECK(ASK(m, "GET /metrics HTTP/1.1\r\n\r\n", buf) == 500, "render out of memory: 500");
	render_mode = 0;
}

/* SL_METRICS_CONN_MAX silent connections held: one more is closed without an answer, and
 * once they are gone the server answers again. */
static void
test_conn_limit(struct sl_metrics *m)
{
	int held[SL_METRICS_CONN_MAX], fd, i, n;
	char buf[1024];

	for (i = 0; i < SL_METRICS_CONN_MAX; i++) {
		held[i] = client(sl_metrics_port(m));
		sl_metrics_poll(m, 10);
	}
	fd = client(sl_metrics_port(m));
	send(fd, "GET /metrics HTTP/1.1\r\n\r\n", 25, MSG_NOSIGNAL);
	n = drain(m, fd, buf, sizeof(buf));
	CHECK(n == 0 || n == -2, "connection %d past the limit: closed, no answer (%d)",
	      SL_METRICS_CONN_MAX + 1, n);
	close(fd);
	for (i = 0; i < SL_METRICS_CONN_MAX; i++)
		close(held[i]);
	/* the server sees the closes as it polls: await the first answer again (bounded) */
	for (i = 0, n = 0; i < 100 && n != 200; i++)
		n = ASK(m, "GET /metrics HTTP/1.1\r\n\r\n", buf);
	CHECK(n == 200, "answers again once the held connections closed");
}

static void
test_addresses(void)
{
	static const char *const bad[] = {
		"", "127.0.0.1", "127.0.0.1:", ":9100", "127.0.0.1:99999", "127.0.0.1:9x",
		"[::1]9100", "[::1", "::1:9100", "127.0.0.1:-1", "127.0.0.1:+80", NULL,
	};
	struct sl_metrics_conf c = {.render = render};
	struct sl_metrics *m;
	int i, all = 1;

	for (i = 0; bad[i] != NULL; i++) {
		c.address = bad[i];
		errno = 0;
		m = sl_metrics_open(&c);
		if (m != NULL || errno != EINVAL) {
			printf("# address \"%s\" accepted or wrong errno %d\n", bad[i], errno);
			all = 0;
			sl_metrics_close(m);
		}
	}
	CHECK(all, "%d malformed addresses refused with EINVAL", i);
	c.address = "127.0.0.1:0";
	c.render = NULL;
	errno = 0;
	CHECK(sl_metrics_open(&c) == NULL && errno == EINVAL, "no render callback: EINVAL");
}

static void
test_exposition(void)
{
	struct sl_metrics_buf b = {0};
	const char *labels[] = {"topic", "a\"b\\c\nd", "empty", NULL, NULL};

	sl_metrics_family(&b, "sluice_x", SL_METRICS_GAUGE, "line\\one\ntwo \"q\"");
	sl_metrics_sample(&b, "sluice_x", NULL, labels, NULL, 0.5);
	sl_metrics_sample(&b, "sluice_x", "_bucket", NULL, "+Inf", NAN);
	sl_metrics_sample(&b, "sluice_x", NULL, NULL, NULL, -INFINITY);
	sl_metrics_sample(&b, "sluice_x", NULL, NULL, NULL, 0.1);
	sl_metrics_sample_u64(&b, "sluice_x", "_total", NULL, NULL, UINT64_MAX);
	CHECK(b.p != NULL && !b.oom &&
	      strcmp(b.p, "# HELP sluice_x line\\\\one\\ntwo \"q\"\n"
			  "# TYPE sluice_x gauge\n"
			  "sluice_x{topic=\"a\\\"b\\\\c\\nd\",empty=\"\"} 0.5\n"
			  "sluice_x_bucket{le=\"+Inf\"} NaN\n"
			  "sluice_x -Inf\n"
			  "sluice_x 0.1\n"
			  "sluice_x_total 18446744073709551615\n") == 0,
	      "escaping of HELP and label values, NaN, -Inf, shortest doubles, u64 max");
	if (b.p != NULL && n_fail)
		printf("# got:\n%s", b.p);
	free(b.p);
}

int
main(void)
{
	struct sl_metrics_conf c = {.address = "127.0.0.1:0", .render = render};
	struct sl_metrics *m = sl_metrics_open(&c);

	if (m == NULL) {
		perror("sl_metrics_open");
		return 1;
	}
	test_requests(m);
	test_conn_limit(m);
	sl_metrics_close(m);
	test_addresses();
	test_exposition();
	return check_report();
}
