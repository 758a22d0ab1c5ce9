/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * sluicectl: send one command to sluiced's control socket and print the JSON reply.
 * Standalone on purpose (no sluice library): the wire is described in control/ctl.h; the
 * request goes as a JSON array of words, and jansson parses and re-indents the reply.
 *
 *   sluicectl [-s SOCKET] [--json] COMMAND [ARGS...]
 *
 * Exit status: 0 success, 1 the daemon answered with an error object, 2 usage error or the
 * daemon could not be reached / did not answer.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <jansson.h>
#include <sodium.h>

#define DEFAULT_SOCKET "/run/sluice/sluiced.sock"
#define REQ_MAX 4096		/* request line limit of the server, "\n" included */
#define REPLY_TIMEOUT_S 30	/* give up when the daemon does not answer */
#define EXIT_ERR_REPLY 1
#define EXIT_UNREACHABLE 2

static const char *prog = "sluicectl";

static void
usage(FILE *f)
{
	fprintf(f,
		"usage: %s [-s SOCKET] [--json] COMMAND [ARGS...]\n"
		"       %s -h\n"
		"       %s keygen FILE\n"
		"       %s token gen [FILE] | token hash [FILE]\n"
		"Send one command to the sluiced control socket and print its JSON reply.\n"
		"keygen writes a new cluster key for --cluster-key to FILE (mode 0600; it\n"
		"refuses to overwrite; append a second key line to rotate, docs/operations.md).\n"
		"token gen prints a new client token (32 random bytes, 64 hex digits), or\n"
		"writes it to a new FILE (mode 0600) for sluice-pub/sluice-sub --token-file.\n"
		"token hash prints the blake2b: form of the token in FILE (or stdin) for\n"
		"sluiced's --token-file, which then holds no usable secret. 'token list' and\n"
		"'token reload' go to the daemon.\n"
		"  -s, --socket SOCKET  control socket (default: $SLUICE_CTL if set, else\n"
		"                       " DEFAULT_SOCKET ")\n"
		"  --json               print the raw one-line JSON reply\n"
		"  -h, --help           this text; '%s help' lists the daemon's commands\n"
		"Exit status: 0 success, 1 the daemon replied with an error,\n"
		"             2 usage error or daemon unreachable.\n",
		prog, prog, prog, prog, prog);
}

/* sluicectl keygen FILE, token gen FILE: a new random cluster key or client token, 64 hex
 * digits, in a file only its owner can read, created exclusively (an existing key is never
 * overwritten). path NULL: the token on stdout. */
static int
keygen(const char *path)
{
	uint8_t key[32];
	char hex[65], line[80];
	int fd, len, rc = 0;

	if (sodium_init() < 0) {
		fprintf(stderr, "%s: keygen: libsodium cannot start\n", prog);
		return EXIT_UNREACHABLE;
	}
	fd = path == NULL ? dup(STDOUT_FILENO) :
			    open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		fprintf(stderr, "%s: keygen %s: %s\n", prog, path ? path : "stdout",
			strerror(errno));
		return EXIT_UNREACHABLE;
	}
	randombytes_buf(key, sizeof(key));
	sodium_bin2hex(hex, sizeof(hex), key, sizeof(key));
	len = snprintf(line, sizeof(line), "%s\n", hex);
	if (write(fd, line, (size_t)len) != len || (path != NULL && fsync(fd) != 0)) {
		fprintf(stderr, "%s: keygen %s: %s\n", prog, path ? path : "stdout",
			strerror(errno));
		if (path != NULL)
			unlink(path);
		rc = EXIT_UNREACHABLE;
	}
	close(fd);
	sodium_memzero(key, sizeof(key));
	sodium_memzero(hex, sizeof(hex));
	sodium_memzero(line, sizeof(line));
	return rc;
}

/* sluicectl token hash [FILE]: the form of a client token that sluiced's --token-file may
 * hold instead of the token, blake2b:<hex of its BLAKE2b-256 hash> (dataplane/auth.c hashes
 * a HELLO's token the same way). The token is the first line of FILE or stdin that is not
 * blank or a '#' comment. */
static int
token_hash(const char *path)
{
	FILE *f = path != NULL ? fopen(path, "r") : stdin;
	uint8_t h[crypto_generichash_BYTES];
	char line[256], hex[2 * sizeof(h) + 1], *p = NULL;
	size_t len = 0, i;
	int found = 0;

	if (f == NULL || sodium_init() < 0) {
		fprintf(stderr, "%s: token hash %s: %s\n", prog, path, strerror(errno));
		return EXIT_UNREACHABLE;
	}
	while (!found && fgets(line, sizeof(line), f) != NULL) {
		p = line + strspn(line, " \t");
		len = strcspn(p, " \t\r\n");
		found = len != 0 && p[0] != '#';
	}
	if (path != NULL)
		fclose(f);
	for (i = 0; found && i < len; i++)
		found = strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
			       "-_.~+/=", p[i]) != NULL;
	if (!found || len < 16 || len > 128) {
		fprintf(stderr, "%s: token hash: no token (16 to 128 of A-Z a-z 0-9 - _ . ~ + "
			"/ =) in %s\n", prog, path != NULL ? path : "stdin");
		sodium_memzero(line, sizeof(line));
		return EXIT_UNREACHABLE;
	}
	crypto_generichash(h, sizeof(h), (const uint8_t *)p, len, NULL, 0);
	sodium_bin2hex(hex, sizeof(hex), h, sizeof(h));
	printf("blake2b:%s\n", hex);
	sodium_memzero(line, sizeof(line));
	return 0;
}

/* The request line: the words as a JSON array of strings (ctl.h), "\n" ended. Returns the
 * malloc'ed line, or NULL (a word is not UTF-8: errno EILSEQ; too long: EMSGSIZE). */
static char *
build_request(int argc, char **argv, size_t *len)
{
	json_t *a = json_array();
	char *line = NULL, *nl;
	int i;

	errno = ENOMEM;
	for (i = 0; a != NULL && i < argc; i++) {
		if (json_array_append_new(a, json_string(argv[i])) != 0) {
			errno = EILSEQ;
			goto out;
		}
	}
	if (a == NULL)
		goto out;
	line = json_dumps(a, JSON_COMPACT);
	if (line == NULL)
		goto out;
	*len = strlen(line);
	if (*len + 1 > REQ_MAX) {
		free(line);
		line = NULL;
		errno = EMSGSIZE;
		goto out;
	}
	nl = realloc(line, *len + 2);
	if (nl == NULL) {
		free(line);
		line = NULL;
		goto out;
	}
	line = nl;
	line[(*len)++] = '\n';
	line[*len] = '\0';
out:
	json_decref(a);
	return line;
}

static char *
read_reply(int fd, size_t *len)
{
	size_t cap = 4096, l = 0;
	char *buf = malloc(cap), *nb;
	ssize_t n;

	if (buf == NULL)
		return NULL;
	for (;;) {
		if (l + 1 == cap) {
			nb = realloc(buf, cap * 2);
			if (nb == NULL) {
				free(buf);
				errno = ENOMEM;
				return NULL;
			}
			buf = nb;
			cap *= 2;
		}
		n = read(fd, buf + l, cap - 1 - l);
		if (n > 0) {
			l += (size_t)n;
			continue;
		}
		if (n == 0 || (errno == ECONNRESET && l > 0))
			break;
		if (errno == EINTR)
			continue;
		free(buf);
		return NULL;
	}
	buf[l] = '\0';
	*len = l;
	return buf;
}

int
main(int argc, char **argv)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	struct timeval tv = { .tv_sec = REPLY_TIMEOUT_S };
	const char *path = getenv("SLUICE_CTL");
	char *req = NULL, *reply = NULL;
	json_t *doc = NULL, *err;
	json_error_t je;
	size_t len = 0, rlen = 0, off;
	int raw = 0, fd = -1, i, ret = EXIT_UNREACHABLE;
	ssize_t n;

	if (path == NULL || path[0] == '\0')
		path = DEFAULT_SOCKET;
	for (i = 1; i < argc && argv[i][0] == '-'; i++) {
		if (strcmp(argv[i], "--") == 0) {
			i++;
			break;
		} else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
			usage(stdout);
			return 0;
		} else if (strcmp(argv[i], "--json") == 0) {
			raw = 1;
		} else if (strcmp(argv[i], "-s") == 0 || strcmp(argv[i], "--socket") == 0) {
			if (++i == argc) {
				fprintf(stderr, "%s: %s needs a socket path\n", prog, argv[i - 1]);
				return EXIT_UNREACHABLE;
			}
			path = argv[i];
		} else if (strncmp(argv[i], "--socket=", 9) == 0) {
			path = argv[i] + 9;
		} else {
			fprintf(stderr, "%s: unknown option '%s'\n", prog, argv[i]);
			usage(stderr);
			return EXIT_UNREACHABLE;
		}
	}
	if (i == argc) {
		usage(stderr);
		return EXIT_UNREACHABLE;
	}
	if (strcmp(argv[i], "keygen") == 0) {
		if (i + 2 != argc) {
			usage(stderr);
			return EXIT_UNREACHABLE;
		}
		return keygen(argv[i + 1]);
	}
	/* token gen and token hash run here; token list and token reload go to the daemon */
	if (strcmp(argv[i], "token") == 0 && i + 1 < argc && i + 3 >= argc &&
	    (strcmp(argv[i + 1], "gen") == 0 || strcmp(argv[i + 1], "hash") == 0))
		return strcmp(argv[i + 1], "gen") == 0 ? keygen(argv[i + 2]) :
							  token_hash(argv[i + 2]);
	req = build_request(argc - i, argv + i, &len);
	if (req == NULL) {
		fprintf(stderr, "%s: %s\n", prog, errno == EILSEQ ? "arguments must be UTF-8" :
			errno == EMSGSIZE ? "command longer than the control socket takes" :
			strerror(errno));
		return EXIT_UNREACHABLE;
	}

	if (strlen(path) >= sizeof(addr.sun_path)) {
		fprintf(stderr, "%s: socket path too long: %s\n", prog, path);
		return EXIT_UNREACHABLE;
	}
	memcpy(addr.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
		fprintf(stderr, "%s: cannot connect to %s: %s; is sluiced running? "
			"(-s to choose the socket)\n", prog, path, strerror(errno));
		goto out;
	}
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	for (off = 0; off < len; off += (size_t)n) {
		n = send(fd, req + off, len - off, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR) {
			n = 0;
			continue;
		}
		if (n < 0) {
			fprintf(stderr, "%s: sending to %s: %s\n", prog, path, strerror(errno));
			goto out;
		}
	}
	shutdown(fd, SHUT_WR);
	reply = read_reply(fd, &rlen);
	if (reply == NULL) {
		fprintf(stderr, "%s: reading the reply from %s: %s\n", prog, path,
			errno == EAGAIN || errno == EWOULDBLOCK ? "timed out" : strerror(errno));
		goto out;
	}
	while (rlen > 0 && (reply[rlen - 1] == '\n' || reply[rlen - 1] == '\r'))
		reply[--rlen] = '\0';
	if (rlen == 0) {
		fprintf(stderr, "%s: empty reply from %s\n", prog, path);
		goto out;
	}
	doc = json_loadb(reply, rlen, 0, &je);
	if (raw || doc == NULL) {
		printf("%s\n", reply);
	} else {
		json_dumpf(doc, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
		putchar('\n');
	}
	fflush(stdout);
	if (doc == NULL) {
		fprintf(stderr, "%s: the reply from %s is not JSON: %s\n", prog, path, je.text);
		goto out;
	}
	ret = 0;
	err = json_is_object(doc) ? json_object_get(doc, "error") : NULL;
	if (err != NULL) {
		fprintf(stderr, "%s: %s\n", prog,
			json_is_string(err) ? json_string_value(err) : "error");
		ret = EXIT_ERR_REPLY;
	}
out:
	json_decref(doc);
	free(req);
	free(reply);
	if (fd >= 0)
		close(fd);
	return ret;
}
