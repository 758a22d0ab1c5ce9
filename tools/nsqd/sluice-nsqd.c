/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * sluice-nsqd: an NSQ compatibility gateway. NSQ clients (go-nsq, pynsq, nsqjs, curl
 * scripts) speak to it as to nsqd (TCP protocol V2, HTTP API) and nsqlookupd (HTTP);
 * it speaks libsluice over kernel UDP to the sluice node(s). docs/nsq-gateway.md.
 *
 *   sluice-nsqd --sluice A.B.C.D[,A.B.C.D...] [--sluice-port PORT]
 *               [--tcp-address HOST:PORT] [--http-address HOST:PORT]
 *               [--lookupd-http-address HOST:PORT] [--broadcast-address ADDR]
 *               [--max-rdy-count N] [--max-body-size BYTES] [--msg-timeout-ms MS]
 *               [--max-msg-timeout-ms MS] [--max-req-timeout-ms MS]
 *               [--max-heartbeat-ms MS] [--max-connections N] [--ready-file FILE]
 *
 * One thread, one libevent loop. SIGINT/SIGTERM end it cleanly (exit 0).
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "gw.h"
#include "http.h"
#include "tcp.h"
#include "wire.h"

static void
usage(FILE *f)
{
	fprintf(f,
		"usage: sluice-nsqd --sluice A.B.C.D[,A.B.C.D...] [options]\n"
		"  --sluice LIST              sluice node addresses (kernel UDP)\n"
		"  --sluice-port PORT         their UDP port (default %u)\n"
		"  --tcp-address HOST:PORT    NSQ TCP protocol (default 0.0.0.0:4150)\n"
		"  --http-address HOST:PORT   nsqd HTTP API (default 0.0.0.0:4151; \"\" = off)\n"
		"  --lookupd-http-address HOST:PORT\n"
		"                             nsqlookupd HTTP API (default 0.0.0.0:4161;\n"
		"                             \"\" = off)\n"
		"  --broadcast-address ADDR   announced by /lookup (default: the TCP host, or\n"
		"                             the hostname when it is 0.0.0.0)\n"
		"  --max-rdy-count N          (default 2500)\n"
		"  --max-body-size BYTES      IDENTIFY/MPUB body limit (default 5242880)\n"
		"  --msg-timeout-ms MS        default msg_timeout (default 60000)\n"
		"  --max-msg-timeout-ms MS    (default 900000)\n"
		"  --max-req-timeout-ms MS    REQ delay limit (default 3600000)\n"
		"  --max-heartbeat-ms MS      (default 60000)\n"
		"  --max-connections N        (default 4096)\n"
		"  --ready-file FILE          write the bound ports here once serving\n",
		SL_WIRE_UDP_PORT);
}

static int
parse_u32(const char *s, uint32_t min, uint32_t max, uint32_t *out)
{
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || *s == '-' || v < min || v > max)
		return -1;
	*out = (uint32_t)v;
	return 0;
}

static void
on_signal(evutil_socket_t sig, short what, void *arg)
{
	event_base_loopbreak(arg);
}

int
main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "sluice", required_argument, NULL, 's' },
		{ "sluice-port", required_argument, NULL, 'p' },
		{ "tcp-address", required_argument, NULL, 't' },
		{ "http-address", required_argument, NULL, 'H' },
		{ "lookupd-http-address", required_argument, NULL, 'L' },
		{ "broadcast-address", required_argument, NULL, 'b' },
		{ "max-rdy-count", required_argument, NULL, 'r' },
		{ "max-body-size", required_argument, NULL, 'B' },
		{ "msg-timeout-ms", required_argument, NULL, 'm' },
		{ "max-msg-timeout-ms", required_argument, NULL, 'M' },
		{ "max-req-timeout-ms", required_argument, NULL, 'q' },
		{ "max-heartbeat-ms", required_argument, NULL, 'h' },
		{ "max-connections", required_argument, NULL, 'c' },
		{ "ready-file", required_argument, NULL, 'R' },
		{ "help", no_argument, NULL, '?' + 256 },
		{ NULL, 0, NULL, 0 },
	};
	struct sl_gw_conf conf = {
		.tcp_address = "0.0.0.0:4150",
		.http_address = "0.0.0.0:4151",
		.lookupd_http_address = "0.0.0.0:4161",
		.max_rdy_count = 2500,
		.max_body_size = 5 * 1024 * 1024,
		.msg_timeout_ms = 60000,
		.max_msg_timeout_ms = 15 * 60 * 1000,
		.max_req_timeout_ms = 60 * 60 * 1000,
		.max_heartbeat_ms = 60000,
		.max_connections = 4096,
		.max_pending = 1024,
		.max_output_bytes = 16 * 1024 * 1024,
	};
	struct event *sigint = NULL, *sigterm = NULL;
	const char *ready = NULL;
	struct event_base *base;
	struct sl_gw gw;
	int opt, st = 1, gw_open = 0;
	uint32_t v;
	FILE *f;

	while ((opt = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (opt) {
		case 's':
			conf.sluice = optarg;
			break;
		case 'p':
			if (parse_u32(optarg, 1, 65535, &v) != 0)
				goto bad;
			conf.sluice_port = (uint16_t)v;
			break;
		case 't':
			conf.tcp_address = optarg;
			break;
		case 'H':
			conf.http_address = optarg;
			break;
		case 'L':
			conf.lookupd_http_address = optarg;
			break;
		case 'b':
			conf.broadcast_address = optarg;
			break;
		case 'r':
			if (parse_u32(optarg, 1, 1000000, &conf.max_rdy_count) != 0)
				goto bad;
			break;
		case 'B':
			if (parse_u32(optarg, 64, 1u << 30, &conf.max_body_size) != 0)
				goto bad;
			break;
		case 'm':
			if (parse_u32(optarg, 1000, UINT32_MAX, &conf.msg_timeout_ms) != 0)
				goto bad;
			break;
		case 'M':
			if (parse_u32(optarg, 1000, UINT32_MAX, &conf.max_msg_timeout_ms) != 0)
				goto bad;
			break;
		case 'q':
			if (parse_u32(optarg, 0, UINT32_MAX, &conf.max_req_timeout_ms) != 0)
				goto bad;
			break;
		case 'h':
			if (parse_u32(optarg, 1000, UINT32_MAX, &conf.max_heartbeat_ms) != 0)
				goto bad;
			break;
		case 'c':
			if (parse_u32(optarg, 1, 1000000, &conf.max_connections) != 0)
				goto bad;
			break;
		case 'R':
			ready = optarg;
			break;
		case '?' + 256:
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 1;
		}
	}
	if (optind != argc || conf.sluice == NULL) {
		usage(stderr);
		return 1;
	}
	memset(&gw, 0, sizeof(gw));
	signal(SIGPIPE, SIG_IGN);
	base = event_base_new();
	if (base == NULL) {
		fprintf(stderr, "sluice-nsqd: no event base\n");
		return 1;
	}
	if (sl_gw_open(&gw, &conf, base) != 0)
		goto out;
	gw_open = 1;
	if (sl_nsqtcp_open(&gw) != 0 || sl_nsqhttp_open(&gw) != 0)
		goto out;
	sigint = evsignal_new(base, SIGINT, on_signal, base);
	sigterm = evsignal_new(base, SIGTERM, on_signal, base);
	if (sigint == NULL || sigterm == NULL || event_add(sigint, NULL) != 0 ||
	    event_add(sigterm, NULL) != 0)
		goto out;
	fprintf(stderr, "sluice-nsqd: TCP %s (port %u), HTTP %s, lookupd %s, %u node(s), "
		"max message %u bytes\n", conf.tcp_address, gw.tcp_port, conf.http_address,
		conf.lookupd_http_address, gw.nnodes, gw.max_msg);
	if (ready != NULL) {
		f = fopen(ready, "w");
		if (f == NULL || fprintf(f, "tcp %u\nhttp %u\n", gw.tcp_port, gw.http_port) < 0 ||
		    fclose(f) != 0) {
			fprintf(stderr, "sluice-nsqd: cannot write %s\n", ready);
			goto out;
		}
	}
	event_base_dispatch(base);
	st = 0;
out:
	if (sigint != NULL)
		event_free(sigint);
	if (sigterm != NULL)
		event_free(sigterm);
	sl_nsqhttp_close(&gw);
	sl_nsqtcp_close(&gw);
	if (gw_open)
		sl_gw_close(&gw);
	event_base_free(base);
	return st;
bad:
	fprintf(stderr, "sluice-nsqd: bad value \"%s\"\n", optarg);
	usage(stderr);
	return 1;
}
