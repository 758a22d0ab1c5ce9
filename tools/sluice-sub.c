/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * sluice-sub: print the messages of a topic partition's channel, one per line.
 *
 *   sluice-sub [-a ADDR] [-p PORT] [-P PARTITION] [-c CHANNEL] [-e] [-o] [-i] [-r RDY]
 *              [-n COUNT] [-t IDLE_SECONDS]
 *              [--from-start | --from-end | --from-offset OFF | --from-time NS]
 *              [--token-file FILE] TOPIC
 *
 * Each message body is written to stdout followed by '\n' (with -i, after its id in decimal
 * and a space); a message is FINished only
 * after stdout was flushed, so a message is never acknowledged before it was written.
 * Exits 0 after COUNT messages (-n), after IDLE_SECONDS without a message (-t), when
 * stdout's reader goes away (EPIPE), or on SIGINT/SIGTERM; the session is closed first,
 * so that the messages not FINished are requeued at once.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client.h"
#include "err.h"
#include "wire.h"

#define DEF_ADDR "127.0.0.1"
#define DEF_CHANNEL "sluice-sub"
#define DEF_RDY 256
#define POLL_US 100000

static volatile sig_atomic_t stop;

/* Messages written but not yet FINished: FINed after the next fflush(stdout). */
static struct {
	uint64_t limit;		/* -n; 0 = none */
	uint64_t count;		/* messages written */
	int64_t sub_id;
	uint64_t *ids;
	uint32_t n_ids;
	uint32_t cap_ids;
	int write_err;
	int print_id;		/* -i: each line starts with the message id and a space */
	struct sl_client *c;
} st;

static void
usage(void)
{
	fprintf(stderr,
		"usage: sluice-sub [-a ADDR] [-p PORT] [-P PARTITION] [-c CHANNEL] [-e] [-o]\n"
		"                  [-i] [-r RDY] [-n COUNT] [-t IDLE_SECONDS]\n"
		"                  [--from-start | --from-end | --from-offset OFF |\n"
		"                   --from-time NS] TOPIC\n"
		"  prints each message of TOPIC followed by a newline\n"
		"  -a ADDR        broker address, or a list A,B,C[:PORT] of the cluster's\n"
		"                 nodes: the leader is followed (default $SLUICE_ADDR, else %s)\n"
		"  -p PORT        broker UDP port (default $SLUICE_PORT, else %u)\n"
		"  -P PARTITION   partition (default 0)\n"
		"  -c CHANNEL     channel (default %s)\n"
		"  -e             ephemeral channel (removed with its last subscriber)\n"
		"  -o             ordered delivery (one message in flight at a time)\n"
		"  -i             print each message's id and a space before its body\n"
		"  -r RDY         messages in flight (default %u)\n"
		"  -n COUNT       exit after COUNT messages\n"
		"  -t SECONDS     exit after this long without a message (default: never)\n"
		"  --from-start   consume from the first message of the partition\n"
		"  --from-offset OFF  consume from the message at queue offset OFF\n"
		"  --from-time NS     consume from the first message published at or after\n"
		"                 NS (ns since the Unix epoch)\n"
		"  --from-end     consume only messages published from now on\n"
		"  --token-file FILE  client token for a node with --token-file (default\n"
		"                 $SLUICE_TOKEN; never on the command line: it would show in ps)\n",
		DEF_ADDR, SL_WIRE_UDP_PORT, DEF_CHANNEL, DEF_RDY);
}

static int
parse_u64(const char *s, uint64_t max, uint64_t *out)
{
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || v > max)
		return -1;
	*out = v;
	return 0;
}

static void
on_signal(int sig)
{
	stop = 1;
}

static uint64_t
mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Flush stdout, then FIN what it contained. */
static void
flush_and_fin(void)
{
	uint32_t i;

	if (fflush(stdout) != 0)
		st.write_err = errno != 0 ? errno : EIO;
	if (st.write_err != 0) {
		st.n_ids = 0; /* not written: leave them to be redelivered */
		return;
	}
	for (i = 0; i < st.n_ids; i++)
		(void)sl_client_fin(st.c, (uint64_t)st.sub_id, st.ids[i]);
	st.n_ids = 0;
}

static int
on_msg(void *arg, const struct sl_client_msg *m)
{
	if (stop || st.write_err != 0 || (st.limit != 0 && st.count >= st.limit))
		return 1; /* not taken: requeued when we close */
	if (st.n_ids == st.cap_ids)
		flush_and_fin();
	if ((st.print_id && printf("%" PRIu64 " ", m->id) < 0) ||
	    fwrite(m->data, 1, m->len, stdout) != m->len || putchar('\n') == EOF) {
		st.write_err = errno != 0 ? errno : EIO;
		return 1;
	}
	st.ids[st.n_ids++] = m->id;
	st.count++;
	return 1; /* FINed by flush_and_fin() once written out */
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "from-start", no_argument, NULL, 'S' },
		{ "from-end", no_argument, NULL, 'E' },
		{ "from-offset", required_argument, NULL, 'O' },
		{ "from-time", required_argument, NULL, 'T' },
		{ "token-file", required_argument, NULL, 'K' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct sl_client_conf conf = { .xport = SL_XPORT_UDP };
	const char *topic, *channel = DEF_CHANNEL, *env, *token_file = NULL;
	char token[SL_WIRE_TOKEN_MAX + 1];
	uint64_t v = 0, from_value = 0, idle_ms = 0, last_msg, count_seen = 0;
	int opt, from = 0, status = 1, rc, last_rc = 0;
	uint32_t rdy = DEF_RDY;
	uint16_t partition = 0;
	struct sigaction sa;
	uint8_t flags = 0;

	conf.broker_ip = getenv("SLUICE_ADDR") != NULL ? getenv("SLUICE_ADDR") : DEF_ADDR;
	env = getenv("SLUICE_PORT");
	if (env != NULL && (parse_u64(env, UINT16_MAX, &v) != 0 || v == 0)) {
		fprintf(stderr, "sluice-sub: bad SLUICE_PORT \"%s\"\n", env);
		return 1;
	}
	conf.broker_port = env != NULL ? (uint16_t)v : SL_WIRE_UDP_PORT;
	while ((opt = getopt_long(argc, argv, "a:p:P:c:eoir:n:t:h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'a':
			conf.broker_ip = optarg;
			break;
		case 'p':
			if (parse_u64(optarg, UINT16_MAX, &v) != 0 || v == 0)
				goto bad_arg;
			conf.broker_port = (uint16_t)v;
			break;
		case 'P':
			if (parse_u64(optarg, SL_WIRE_PART_ANY - 1, &v) != 0)
				goto bad_arg;
			partition = (uint16_t)v;
			break;
		case 'c':
			channel = optarg;
			break;
		case 'e':
			flags |= SL_WIRE_SUB_EPHEMERAL;
			break;
		case 'o':
			flags |= SL_WIRE_SUB_ORDERED;
			break;
		case 'i':
			st.print_id = 1;
			break;
		case 'r':
			if (parse_u64(optarg, UINT32_MAX, &v) != 0 || v == 0)
				goto bad_arg;
			rdy = (uint32_t)v;
			break;
		case 'n':
			if (parse_u64(optarg, UINT64_MAX, &v) != 0 || v == 0)
				goto bad_arg;
			st.limit = v;
			break;
		case 't':
			if (parse_u64(optarg, UINT64_MAX / 1000, &v) != 0)
				goto bad_arg;
			idle_ms = v * 1000;
			break;
		case 'O':
		case 'T':
			if (parse_u64(optarg, UINT64_MAX, &from_value) != 0)
				goto bad_arg;
			/* fall through */
		case 'S':
		case 'E':
			if (from != 0 && from != opt) {
				fprintf(stderr, "sluice-sub: one --from-* option at most\n");
				return 1;
			}
			from = opt;
			break;
		case 'K':
			token_file = optarg;
			break;
		case 'h':
			usage();
			return 0;
		default:
			usage();
			return 1;
		}
	}
	if (optind != argc - 1) {
		usage();
		return 1;
	}
	topic = argv[optind];
	if (sl_wire_check_name(topic, strlen(topic)) != 0 ||
	    sl_wire_check_name(channel, strlen(channel)) != 0) {
		fprintf(stderr, "sluice-sub: invalid topic or channel name\n");
		return 1;
	}
	if (st.limit != 0 && st.limit < rdy)
		rdy = (uint32_t)st.limit; /* do not take messages we will not print */

	/* no SA_RESTART: the signal interrupts the client's wait */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN); /* a closed stdout is an EPIPE write error instead */

	/* every message the broker may have in flight to us, written but not FINed yet */
	st.cap_ids = rdy < 65536 ? rdy : 65536;
	st.ids = malloc(st.cap_ids * sizeof(*st.ids));
	if (st.ids == NULL) {
		fprintf(stderr, "sluice-sub: out of memory\n");
		return 1;
	}
	rc = sl_client_token_read(token_file, token, sizeof(token));
	if (rc < 0) {
		fprintf(stderr, "sluice-sub: token from %s: %s\n",
			token_file ? token_file : "$SLUICE_TOKEN",
			rc == -EINVAL ? "no token of 1 to 128 bytes" : strerror(-rc));
		goto out;
	}
	conf.token = rc == 0 ? token : NULL;
	st.c = sl_client_open(&conf);
	explicit_bzero(token, sizeof(token));
	if (st.c == NULL) {
		fprintf(stderr, "sluice-sub: cannot open a session with %s:%u: %s\n",
			conf.broker_ip, conf.broker_port, sl_strerror(errno));
		goto out;
	}
	/* with a position to set, subscribe without credit first: nothing is delivered
	 * from the old position before the new one applies */
	st.sub_id = sl_client_sub(st.c, topic, partition, channel, flags, from != 0 ? 0 : rdy,
				  on_msg, NULL);
	if (st.sub_id < 0) {
		fprintf(stderr, "sluice-sub: subscribing to %s/%u channel %s: %s\n", topic,
			partition, channel, sl_strerror((int)st.sub_id));
		goto out;
	}
	if (from != 0) {
		rc = sl_client_set_offset(st.c, (uint64_t)st.sub_id,
					  from == 'S' ? SL_OFF_COUNT :
					  from == 'E' ? SL_OFF_END :
					  from == 'O' ? SL_OFF_OFFSET : SL_OFF_TIMESTAMP,
					  from == 'S' || from == 'E' ? 0 : from_value);
		if (rc != 0) {
			fprintf(stderr, "sluice-sub: setting the position: %s\n",
				sl_strerror(rc));
			goto out;
		}
		rc = sl_client_rdy(st.c, (uint64_t)st.sub_id, rdy);
		if (rc != 0) {
			fprintf(stderr, "sluice-sub: RDY: %s\n", sl_strerror(rc));
			goto out;
		}
	}

	last_msg = mono_ms();
	while (!stop && (st.limit == 0 || st.count < st.limit)) {
		rc = sl_client_poll(st.c, POLL_US);
		flush_and_fin();
		if (st.write_err == EPIPE)
			break; /* the reader went away (e.g. | head): a normal end */
		if (st.write_err != 0) {
			fprintf(stderr, "sluice-sub: writing stdout: %s\n",
				strerror(st.write_err));
			goto out;
		}
		if (rc < 0 && last_rc >= 0)
			fprintf(stderr, "sluice-sub: %s (retrying)\n", sl_strerror(rc));
		last_rc = rc;
		if (st.count != count_seen) {
			count_seen = st.count;
			last_msg = mono_ms();
		} else if (idle_ms != 0 && mono_ms() - last_msg >= idle_ms) {
			break;
		}
	}
	status = 0;
out:
	if (st.c != NULL) {
		flush_and_fin();
		sl_client_close(st.c); /* sends the FINs, then CLS */
	}
	free(st.ids);
	return status;

bad_arg:
	fprintf(stderr, "sluice-sub: bad value \"%s\" for -%c\n", optarg, opt);
	usage();
	return 1;
}
