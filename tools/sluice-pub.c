/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * sluice-pub: publish the lines of stdin, one message per line (without its '\n').
 *
 *   sluice-pub [-a ADDR] [-p PORT] [-P PARTITION|any] [-w WINDOW] [-b BATCH] [-A FILE] [-q]
 *              [--token-file FILE] TOPIC
 *
 * Publishes are pipelined (up to WINDOW requests in flight) and batched (BATCH lines
 * per MPUB, default 1). Lines keep their order within the partition across busy answers
 * (writes paused, queue full): the broker refuses the later ones of the session until
 * the refused one is retried, and the client sends them again in order (docs/protocol.md
 * section 8). A lost datagram can still let a later line overtake an earlier one; -w 1
 * forces one request at a time. Exit status 0 only if every line was acknowledged;
 * otherwise the first failed line is reported on stderr and the status is 1.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client.h"
#include "err.h"
#include "wire.h"

#define DEF_ADDR "127.0.0.1"
#define STDIN_WAIT_MS 10
#define READ_CHUNK 65536

/* The publish callback argument packs the first line number and the line count. */
_Static_assert(sizeof(uintptr_t) >= 8, "64-bit pointers expected");
#define ARG_PACK(line, count) ((void *)(uintptr_t)((uint64_t)(line) << 16 | (count)))
#define ARG_LINE(arg) ((uint64_t)(uintptr_t)(arg) >> 16)
#define ARG_COUNT(arg) ((uint32_t)((uintptr_t)(arg) & 0xFFFF))

static struct {
	uint64_t acked;		/* messages acknowledged */
	uint64_t fail_line;	/* first line of the earliest failed publish; 0 = none */
	uint32_t fail_count;
	int fail_err;
	FILE *acked_log;	/* -A: the number of every acknowledged line, as acked */
} st;

/* stdin, read with read(2) so that we can keep polling the client while it is idle */
struct reader {
	char *buf;
	size_t cap;
	size_t start;		/* first unconsumed byte */
	size_t end;		/* end of data */
	int eof;
};

static void
usage(void)
{
	fprintf(stderr,
		"usage: sluice-pub [-a ADDR] [-p PORT] [-P PARTITION|any] [-w WINDOW] "
		"[-b BATCH] [-A FILE] [-q] [--token-file FILE] TOPIC\n"
		"  publishes each line of stdin as one message\n"
		"  -a ADDR       broker address, or a list A,B,C[:PORT] of the cluster's\n"
		"                nodes: the leader is followed (default $SLUICE_ADDR, else %s)\n"
		"  -p PORT       broker UDP port (default $SLUICE_PORT, else %u)\n"
		"  -P PARTITION  partition number or \"any\" (default 0)\n"
		"  -w WINDOW     requests in flight (default: the broker's window)\n"
		"  -b BATCH      lines per MPUB, 1..%u (default 1)\n"
		"  -A FILE       append the number of each acknowledged line to FILE as its\n"
		"                acknowledgement arrives (crash tests)\n"
		"  -q            do not print the summary\n"
		"  --token-file FILE  client token for a node with --token-file (default\n"
		"                $SLUICE_TOKEN; never on the command line: it would show in ps)\n",
		DEF_ADDR, SL_WIRE_UDP_PORT, SL_WIRE_MPUB_MAX);
}

static int
parse_u32(const char *s, uint32_t max, uint32_t *out)
{
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || v > max)
		return -1;
	*out = (uint32_t)v;
	return 0;
}

static void
on_pub(void *arg, const struct sl_pub_result *res)
{
	uint32_t i;

	if (res->err == 0) {
		st.acked += ARG_COUNT(arg);
		if (st.acked_log != NULL) {
			for (i = 0; i < ARG_COUNT(arg); i++)
				fprintf(st.acked_log, "%" PRIu64 "\n", ARG_LINE(arg) + i);
			fflush(st.acked_log);
		}
		return;
	}
	if (st.fail_line == 0 || ARG_LINE(arg) < st.fail_line) {
		st.fail_line = ARG_LINE(arg);
		st.fail_count = ARG_COUNT(arg);
		st.fail_err = res->err;
	}
}

static void
report_failure(uint64_t line, uint32_t count, int err)
{
	if (count > 1)
		fprintf(stderr, "sluice-pub: lines %" PRIu64 "-%" PRIu64 " failed: %s\n", line,
			line + count - 1, sl_strerror(err));
	else
		fprintf(stderr, "sluice-pub: line %" PRIu64 " failed: %s\n", line,
			sl_strerror(err));
}

/*
 * Publish lines [first_line, first_line + count) asynchronously. A batch too big for
 * one datagram is split in halves.
 */
static int
send_batch(struct sl_client *c, const char *topic, uint16_t partition, uint64_t first_line,
	   uint32_t count, const void *const *datas, const uint32_t *lens)
{
	uint32_t half;
	int rc;

	rc = sl_client_pub_async(c, topic, partition, count, datas, lens, on_pub,
				 ARG_PACK(first_line, count));
	if (rc == -SL_E_TOO_BIG && count > 1) {
		half = count / 2;
		rc = send_batch(c, topic, partition, first_line, half, datas, lens);
		if (rc == 0)
			rc = send_batch(c, topic, partition, first_line + half, count - half,
					datas + half, lens + half);
		return rc;
	}
	if (rc != 0)
		report_failure(first_line, count, rc);
	return rc;
}

/*
 * Next complete line in the reader's buffer: 1 with line and len set, 0 when more input
 * is needed, -1 at the end of input. A last line without '\n' counts at EOF.
 */
static int
next_line(struct reader *r, char **line, size_t *len)
{
	char *nl = memchr(r->buf + r->start, '\n', r->end - r->start);

	if (nl != NULL) {
		*line = r->buf + r->start;
		*len = (size_t)(nl - *line);
		r->start += *len + 1;
		return 1;
	}
	if (!r->eof)
		return 0;
	if (r->start == r->end)
		return -1;
	*line = r->buf + r->start;
	*len = r->end - r->start;
	r->start = r->end;
	return 1;
}

/* Read more input, polling the client while stdin has nothing. Returns 0 or -errno. */
static int
fill(struct reader *r, struct sl_client *c)
{
	struct pollfd pfd = { .fd = STDIN_FILENO, .events = POLLIN };
	size_t room;
	ssize_t n;
	int rc;

	if (r->start > 0) {
		memmove(r->buf, r->buf + r->start, r->end - r->start);
		r->end -= r->start;
		r->start = 0;
	}
	room = r->cap - r->end;
	if (room > READ_CHUNK)
		room = READ_CHUNK;
	for (;;) {
		rc = poll(&pfd, 1, STDIN_WAIT_MS);
		if (rc <= 0) {
			/* nothing yet: answers, retransmissions, heartbeat */
			(void)sl_client_poll(c, 0);
			continue;
		}
		n = read(STDIN_FILENO, r->buf + r->end, room);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			r->eof = 1;
		r->end += (size_t)n;
		return 0;
	}
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "token-file", required_argument, NULL, 'T' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct sl_client_conf conf = { .xport = SL_XPORT_UDP };
	const char *token_file = NULL;
	char token[SL_WIRE_TOKEN_MAX + 1];
	const void *datas[SL_WIRE_MPUB_MAX];
	uint32_t lens[SL_WIRE_MPUB_MAX];
	struct reader rd = { 0 };
	struct sl_client *c = NULL;
	uint32_t batch = 1, n = 0, max_msg, v = 0;
	uint64_t line = 0, first = 0, sent = 0;
	uint16_t partition = 0;
	const char *topic, *env;
	int opt, quiet = 0, status = 1, rc;
	char *p, *arena = NULL;
	size_t len, used = 0, arena_cap;

	conf.broker_ip = getenv("SLUICE_ADDR") != NULL ? getenv("SLUICE_ADDR") : DEF_ADDR;
	env = getenv("SLUICE_PORT");
	if (env != NULL && (parse_u32(env, UINT16_MAX, &v) != 0 || v == 0)) {
		fprintf(stderr, "sluice-pub: bad SLUICE_PORT \"%s\"\n", env);
		return 1;
	}
	conf.broker_port = env != NULL ? (uint16_t)v : SL_WIRE_UDP_PORT;
	while ((opt = getopt_long(argc, argv, "a:p:P:w:b:A:qh", longopts, NULL)) != -1) {
		switch (opt) {
		case 'a':
			conf.broker_ip = optarg;
			break;
		case 'p':
			if (parse_u32(optarg, UINT16_MAX, &v) != 0 || v == 0)
				goto bad_arg;
			conf.broker_port = (uint16_t)v;
			break;
		case 'P':
			if (strcmp(optarg, "any") == 0)
				v = SL_WIRE_PART_ANY;
			else if (parse_u32(optarg, SL_WIRE_PART_ANY - 1, &v) != 0)
				goto bad_arg;
			partition = (uint16_t)v;
			break;
		case 'w':
			if (parse_u32(optarg, UINT32_MAX, &v) != 0 || v == 0)
				goto bad_arg;
			conf.window = v;
			break;
		case 'b':
			if (parse_u32(optarg, SL_WIRE_MPUB_MAX, &v) != 0 || v == 0)
				goto bad_arg;
			batch = v;
			break;
		case 'A':
			st.acked_log = fopen(optarg, "a");
			if (st.acked_log == NULL) {
				fprintf(stderr, "sluice-pub: -A %s: %s\n", optarg,
					strerror(errno));
				return 2;
			}
			break;
		case 'q':
			quiet = 1;
			break;
		case 'T':
			token_file = optarg;
			break;
		default:
			usage();
			return opt == 'h' ? 0 : 1;
		}
	}
	if (optind != argc - 1) {
		usage();
		return 1;
	}
	topic = argv[optind];
	if (sl_wire_check_name(topic, strlen(topic)) != 0) {
		fprintf(stderr, "sluice-pub: invalid topic name \"%s\"\n", topic);
		return 1;
	}

	rc = sl_client_token_read(token_file, token, sizeof(token));
	if (rc < 0) {
		fprintf(stderr, "sluice-pub: token from %s: %s\n",
			token_file ? token_file : "$SLUICE_TOKEN",
			rc == -EINVAL ? "no token of 1 to 128 bytes" : strerror(-rc));
		return 1;
	}
	conf.token = rc == 0 ? token : NULL;
	c = sl_client_open(&conf);
	explicit_bzero(token, sizeof(token));
	if (c == NULL) {
		fprintf(stderr, "sluice-pub: cannot open a session with %s:%u: %s\n",
			conf.broker_ip, conf.broker_port, sl_strerror(errno));
		return 1;
	}
	max_msg = sl_client_welcome(c)->max_msg;
	rd.cap = (size_t)max_msg + 1 + READ_CHUNK;
	rd.buf = malloc(rd.cap);
	arena_cap = (size_t)batch * max_msg < READ_CHUNK ? (size_t)batch * max_msg : READ_CHUNK;
	if (arena_cap < max_msg)
		arena_cap = max_msg;
	arena = malloc(arena_cap + 1);
	if (rd.buf == NULL || arena == NULL) {
		fprintf(stderr, "sluice-pub: out of memory\n");
		goto out;
	}

	for (;;) {
		rc = next_line(&rd, &p, &len);
		if (rc == 0) {
			if (rd.end - rd.start > max_msg) {
				fprintf(stderr, "sluice-pub: line %" PRIu64 " is longer than the "
					"maximum message size (%u bytes)\n", line + 1, max_msg);
				goto out;
			}
			rc = fill(&rd, c);
			if (rc != 0) {
				fprintf(stderr, "sluice-pub: reading stdin: %s\n", strerror(-rc));
				goto out;
			}
			continue;
		}
		if (rc > 0) {
			line++;
			if (len > max_msg) {
				fprintf(stderr, "sluice-pub: line %" PRIu64 " is longer than the "
					"maximum message size (%u bytes)\n", line, max_msg);
				goto out;
			}
			/* room in the arena, else publish what it holds first */
			if (n > 0 && used + len > arena_cap) {
				if (send_batch(c, topic, partition, first, n, datas, lens) != 0)
					goto out;
				sent += n;
				n = 0;
				used = 0;
			}
			if (n == 0)
				first = line;
			memcpy(arena + used, p, len);
			datas[n] = arena + used;
			lens[n] = (uint32_t)len;
			used += len;
			n++;
		}
		if (n > 0 && (n == batch || rc < 0)) {
			if (send_batch(c, topic, partition, first, n, datas, lens) != 0)
				goto out;
			sent += n;
			n = 0;
			used = 0;
			(void)sl_client_poll(c, 0);
		}
		if (st.fail_line != 0 || rc < 0)
			break;
	}

	/* every request ends within the client's timeout: wait for all of them */
	if (sl_client_flush(c, UINT32_MAX / 1000) != 0) {
		fprintf(stderr, "sluice-pub: timed out waiting for acknowledgements\n");
		goto out;
	}
	if (st.fail_line != 0) {
		report_failure(st.fail_line, st.fail_count, st.fail_err);
		goto out;
	}
	if (st.acked != sent) {
		fprintf(stderr, "sluice-pub: %" PRIu64 " of %" PRIu64 " messages acknowledged\n",
			st.acked, sent);
		goto out;
	}
	if (!quiet) {
		struct sl_client_stats cs;

		sl_client_get_stats(c, &cs);
		fprintf(stderr, "published %" PRIu64 " messages", st.acked);
		if (cs.busy_retries != 0)
			fprintf(stderr, " (%" PRIu64 " sent again after a busy answer, %" PRIu64
				" of them refused out of order)", cs.busy_retries,
				cs.order_refusals);
		if (cs.leader_switches != 0)
			fprintf(stderr, " (%" PRIu64 " leader switch(es), %" PRIu64 " request(s) "
				"sent again to the new leader)", cs.leader_switches,
				cs.leader_resent);
		fprintf(stderr, "\n");
	}
	status = 0;
out:
	if (status != 0 && c != NULL)
		(void)sl_client_flush(c, UINT32_MAX / 1000); /* let earlier lines finish */
	sl_client_close(c);
	free(rd.buf);
	free(arena);
	return status;

bad_arg:
	fprintf(stderr, "sluice-pub: bad value \"%s\" for -%c\n", optarg, opt);
	usage();
	return 1;
}
