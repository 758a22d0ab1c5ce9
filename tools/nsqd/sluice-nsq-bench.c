/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * sluice-nsq-bench: publish through sluice-nsqd (NSQ TCP: PUB, and MPUB of --batch)
 * and the same load straight to the node with libsluice over kernel UDP, in the same
 * run; print both rates, their ratio, and the gateway's CPU time per message (from
 * /proc/PID/stat of --gateway-pid).
 *
 * Like with like: the gateway packs the publishes of one turn of its loop into sluice
 * MPUBs, so its PUBs travel to the node as MPUBs. With --gateway-http, the bench reads
 * the gateway's /metrics before and after its run (sluice_nsqd_sluice_publishes_total,
 * sluice_nsqd_sluice_published_messages_total): the mean messages per sluice request B'.
 * When B' differs from --batch, libsluice publishes the same messages in MPUBs of B' as
 * well (same transport, same node and topic, same acknowledgement: stored and, on a
 * replicated topic, replicated), and that ratio is printed as "like for like".
 *
 *   sluice-nsq-bench --gateway HOST:PORT --sluice A.B.C.D [--sluice-port PORT]
 *                    [--gateway-pid PID] [--gateway-http HOST:PORT] [--topic T]
 *                    [--count N] [--size BYTES] [--batch B] [--window W]
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stddef.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "client.h"
#include "err.h"
#include "wire.h"

#define BUF_CAP (4u << 20)

struct opts {
	const char *gw;
	const char *gw_http;
	const char *sluice;
	uint16_t sluice_port;
	long gw_pid;
	const char *topic;
	uint64_t count;
	uint32_t size;
	uint32_t batch;
	uint32_t window;
};

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* utime + stime of pid in seconds, or -1 */
static double
cpu_of(long pid)
{
	unsigned long ut, st;
	char path[64], buf[1024], *p;
	FILE *f;
	size_t n;

	if (pid <= 0)
		return -1;
	snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	f = fopen(path, "r");
	if (f == NULL)
		return -1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	p = strrchr(buf, ')');
	if (p == NULL || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu",
				&ut, &st) != 2)
		return -1;
	return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

static void
put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

/* One command (PUB or MPUB of batch) into out; returns its length. */
static size_t
command(const struct opts *o, uint8_t *out, const uint8_t *msg)
{
	size_t n;
	uint32_t i;

	if (o->batch == 1) {
		n = (size_t)sprintf((char *)out, "PUB %s\n", o->topic);
		put32(out + n, o->size);
		memcpy(out + n + 4, msg, o->size);
		return n + 4 + o->size;
	}
	n = (size_t)sprintf((char *)out, "MPUB %s\n", o->topic);
	put32(out + n, 4 + o->batch * (4 + o->size));
	put32(out + n + 4, o->batch);
	n += 8;
	for (i = 0; i < o->batch; i++) {
		put32(out + n, o->size);
		memcpy(out + n + 4, msg, o->size);
		n += 4 + o->size;
	}
	return n;
}

/* HOST:PORT (IPv4) into sa; 0 or -1. */
static int
addr_of(const char *s, struct sockaddr_in *sa)
{
	const char *colon = strrchr(s, ':');
	char host[64];

	if (colon == NULL || colon - s >= (ptrdiff_t)sizeof(host))
		return -1;
	memcpy(host, s, (size_t)(colon - s));
	host[colon - s] = '\0';
	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	sa->sin_port = htons((uint16_t)atoi(colon + 1));
	return inet_pton(AF_INET, host, &sa->sin_addr) == 1 ? 0 : -1;
}

#define K_PUBS "\nsluice_nsqd_sluice_publishes_total "
#define K_MSGS "\nsluice_nsqd_sluice_published_messages_total "

/* The gateway's sluice publishes and their messages from its /metrics; 0 or -1. */
static int
gw_scrape(const char *http, double *pubs, double *msgs)
{
	static const char req[] = "GET /metrics HTTP/1.0\r\n\r\n";
	static char buf[1 << 20];
	struct sockaddr_in sa;
	size_t len = 0;
	ssize_t n;
	char *p;
	int fd, rc = -1;

	if (http == NULL || addr_of(http, &sa) != 0)
		return -1;
	fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
	    write(fd, req, sizeof(req) - 1) != (ssize_t)sizeof(req) - 1)
		goto out;
	while (len < sizeof(buf) - 1 && (n = read(fd, buf + len, sizeof(buf) - 1 - len)) > 0)
		len += (size_t)n;
	buf[len] = '\0';
	p = strstr(buf, K_PUBS);
	if (p == NULL || sscanf(p + strlen(K_PUBS), "%lf", pubs) != 1)
		goto out;
	p = strstr(buf, K_MSGS);
	if (p == NULL || sscanf(p + strlen(K_MSGS), "%lf", msgs) != 1)
		goto out;
	rc = 0;
out:
	close(fd);
	return rc;
}

/* Pipelined NSQ publishes; returns messages/s or -1. */
static double
run_gateway(const struct opts *o, const uint8_t *msg, double *cpu_per_msg)
{
	uint64_t cmds = o->count / o->batch, sent = 0, acked = 0;
	uint8_t *obuf = malloc(BUF_CAP), *ibuf = malloc(BUF_CAP), one[70000];
	struct sockaddr_in sa;
	size_t clen, ilen = 0, off, olen;
	double t0, t1, c0, c1, rate = -1;
	int fd = -1, on = 1;
	ssize_t n;
	uint32_t sz, ty;

	if (obuf == NULL || ibuf == NULL || addr_of(o->gw, &sa) != 0)
		goto out;
	fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		perror("sluice-nsq-bench: connect");
		goto out;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on));
	if (write(fd, "  V2", 4) != 4)
		goto out;
	clen = command(o, one, msg);
	c0 = cpu_of(o->gw_pid);
	t0 = now_s();
	while (acked < cmds) {
		olen = 0;
		while (sent < cmds && sent - acked < o->window && olen + clen <= BUF_CAP) {
			memcpy(obuf + olen, one, clen);
			olen += clen;
			sent++;
		}
		for (off = 0; off < olen; off += (size_t)n) {
			n = write(fd, obuf + off, olen - off);
			if (n <= 0)
				goto out;
		}
		n = read(fd, ibuf + ilen, BUF_CAP - ilen);
		if (n <= 0) {
			fprintf(stderr, "sluice-nsq-bench: the gateway closed\n");
			goto out;
		}
		ilen += (size_t)n;
		off = 0;
		while (ilen - off >= 8) {
			sz = (uint32_t)ibuf[off] << 24 | (uint32_t)ibuf[off + 1] << 16 |
			     (uint32_t)ibuf[off + 2] << 8 | ibuf[off + 3];
			if (ilen - off < 4 + (size_t)sz)
				break;
			ty = ibuf[off + 7];
			if (ty != 0 || sz != 6 || memcmp(ibuf + off + 8, "OK", 2) != 0) {
				if (!(ty == 0 && sz == 15)) { /* _heartbeat_ */
					fprintf(stderr, "sluice-nsq-bench: answer %.*s\n",
						(int)sz - 4, ibuf + off + 8);
					goto out;
				}
			} else {
				acked++;
			}
			off += 4 + sz;
		}
		memmove(ibuf, ibuf + off, ilen - off);
		ilen -= off;
	}
	t1 = now_s();
	c1 = cpu_of(o->gw_pid);
	rate = (double)(cmds * o->batch) / (t1 - t0);
	*cpu_per_msg = c0 >= 0 && c1 >= 0 ? (c1 - c0) / (double)(cmds * o->batch) : -1;
out:
	if (fd >= 0)
		close(fd);
	free(obuf);
	free(ibuf);
	return rate;
}

static uint64_t direct_acked, direct_failed;

static void
on_pub(void *arg, const struct sl_pub_result *res)
{
	if (res->err == 0)
		direct_acked += (uintptr_t)arg;
	else
		direct_failed++;
}

/* The same load with libsluice, pipelined within the node's window. */
static double
run_direct(const struct opts *o, const uint8_t *msg, uint32_t batch)
{
	struct sl_client_conf cc = { .xport = SL_XPORT_UDP };
	const void *datas[SL_WIRE_MPUB_MAX];
	uint32_t lens[SL_WIRE_MPUB_MAX], i;
	uint64_t cmds = o->count / batch, k;
	struct sl_client *c;
	double t0, t1;

	cc.broker_ip = o->sluice;
	cc.broker_port = o->sluice_port;
	c = sl_client_open(&cc);
	if (c == NULL) {
		fprintf(stderr, "sluice-nsq-bench: no session: %s\n", sl_strerror(errno));
		return -1;
	}
	for (i = 0; i < batch; i++) {
		datas[i] = msg;
		lens[i] = o->size;
	}
	direct_acked = direct_failed = 0;
	t0 = now_s();
	for (k = 0; k < cmds; k++)
		if (sl_client_pub_async(c, o->topic, SL_WIRE_PART_ANY, batch, datas, lens,
					on_pub, (void *)(uintptr_t)batch) != 0)
			direct_failed++;
	(void)sl_client_flush(c, 10000);
	t1 = now_s();
	sl_client_close(c);
	if (direct_failed != 0)
		fprintf(stderr, "sluice-nsq-bench: %" PRIu64 " direct publishes failed\n",
			direct_failed);
	return (double)direct_acked / (t1 - t0);
}

int
main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "gateway", required_argument, NULL, 'g' },
		{ "sluice", required_argument, NULL, 's' },
		{ "sluice-port", required_argument, NULL, 'p' },
		{ "gateway-pid", required_argument, NULL, 'P' },
		{ "gateway-http", required_argument, NULL, 'H' },
		{ "topic", required_argument, NULL, 't' },
		{ "count", required_argument, NULL, 'n' },
		{ "size", required_argument, NULL, 'S' },
		{ "batch", required_argument, NULL, 'b' },
		{ "window", required_argument, NULL, 'w' },
		{ NULL, 0, NULL, 0 },
	};
	struct opts o = { .topic = "nsqbench", .count = 200000, .size = 64, .batch = 1,
			  .window = 256, .sluice_port = SL_WIRE_UDP_PORT };
	uint8_t msg[1400];
	double g, d, cpu = -1, p0 = 0, m0 = 0, p1 = 0, m1 = 0, eff;
	uint32_t like;
	int have_m;
	int opt;

	while ((opt = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (opt) {
		case 'g':
			o.gw = optarg;
			break;
		case 's':
			o.sluice = optarg;
			break;
		case 'p':
			o.sluice_port = (uint16_t)atoi(optarg);
			break;
		case 'P':
			o.gw_pid = atol(optarg);
			break;
		case 'H':
			o.gw_http = optarg;
			break;
		case 't':
			o.topic = optarg;
			break;
		case 'n':
			o.count = strtoull(optarg, NULL, 10);
			break;
		case 'S':
			o.size = (uint32_t)atoi(optarg);
			break;
		case 'b':
			o.batch = (uint32_t)atoi(optarg);
			break;
		case 'w':
			o.window = (uint32_t)atoi(optarg);
			break;
		default:
			fprintf(stderr, "see the comment at the top of sluice-nsq-bench.c\n");
			return 1;
		}
	}
	if (o.gw == NULL || o.sluice == NULL || o.size == 0 || o.size > sizeof(msg) ||
	    o.batch == 0 || o.batch > SL_WIRE_MPUB_MAX || o.window == 0 ||
	    o.count < o.batch || (uint64_t)o.batch * (o.size + 4) > 60000) {
		fprintf(stderr, "sluice-nsq-bench: bad arguments\n");
		return 1;
	}
	memset(msg, 'm', sizeof(msg));
	have_m = gw_scrape(o.gw_http, &p0, &m0) == 0;
	g = run_gateway(&o, msg, &cpu);
	have_m = have_m && gw_scrape(o.gw_http, &p1, &m1) == 0 && p1 > p0;
	d = run_direct(&o, msg, o.batch);
	if (g < 0 || d <= 0)
		return 1;
	printf("%-4s x%-3u %7" PRIu64 " msgs of %u B: gateway %9.0f msg/s  direct libsluice "
	       "%9.0f msg/s  ratio %.2f  gateway CPU %.2f us/msg\n",
	       o.batch == 1 ? "PUB" : "MPUB", o.batch, o.count / o.batch * o.batch, o.size, g,
	       d, g / d, cpu * 1e6);
	if (!have_m)
		return 0;
	eff = (m1 - m0) / (p1 - p0);
	like = (uint32_t)(eff + 0.5);
	if (like < 1)
		like = 1;
	printf("     the gateway sent %.1f messages per sluice request (%.0f requests)", eff,
	       p1 - p0);
	if (like == o.batch) {
		printf(": like for like, ratio %.2f\n", g / d);
		return 0;
	}
	d = run_direct(&o, msg, like);
	if (d <= 0)
		return 1;
	printf("\n     like for like: direct libsluice MPUB x%u %9.0f msg/s  ratio %.2f\n", like,
	       d, g / d);
	return 0;
}
