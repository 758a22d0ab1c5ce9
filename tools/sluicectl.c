/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * sluicectl: send one command to sluiced's control socket and print the JSON reply.
 * Standalone on purpose (no sluice library): the wire is described in control/ctl.h.
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

static int
needs_quotes(const char *w)
{
	return w[0] == '\0' || strpbrk(w, " \t\r\"") != NULL;
}

/* Append word w to req (len bytes used), quoting when needed. Returns 0 or -1 (too long). */
static int
append_word(char *req, size_t *len, const char *w)
{
	size_t l = *len;
	int quote = needs_quotes(w);

	if (l > 0) {
		if (l + 1 >= REQ_MAX)
			return -1;
		req[l++] = ' ';
	}
	if (quote)
		req[l++] = '"';
	for (; *w != '\0'; w++) {
		if (l + 3 >= REQ_MAX)
			return -1;
		if (quote && (*w == '"' || *w == '\\'))
			req[l++] = '\\';
		req[l++] = *w;
	}
	if (quote) {
		if (l + 1 >= REQ_MAX)
			return -1;
		req[l++] = '"';
	}
	*len = l;
	return 0;
}

static void
indent(FILE *f, int depth)
{
	fputc('\n', f);
	while (depth-- > 0)
		fputs("  ", f);
}

static size_t
skip_ws(const char *s, size_t n, size_t i)
{
	while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r'))
		i++;
	return i;
}

/* Re-indent JSON (2 spaces). Not a validator: anything odd is printed as it comes. */
static void
pretty(FILE *f, const char *s, size_t n)
{
	int depth = 0, instr = 0, esc = 0;
	size_t i, k;
	char c;

	for (i = 0; i < n; i++) {
		c = s[i];
		if (instr) {
			fputc(c, f);
			if (esc)
				esc = 0;
			else if (c == '\\')
				esc = 1;
			else if (c == '"')
				instr = 0;
			continue;
		}
		switch (c) {
		case '"':
			instr = 1;
			fputc(c, f);
			break;
		case '{':
		case '[':
			k = skip_ws(s, n, i + 1);
			if (k < n && s[k] == (c == '{' ? '}' : ']')) {
				fputc(c, f);
				fputc(s[k], f);
				i = k;
				break;
			}
			fputc(c, f);
			indent(f, ++depth);
			break;
		case '}':
		case ']':
			if (depth > 0)
				depth--;
			indent(f, depth);
			fputc(c, f);
			break;
		case ',':
			fputc(c, f);
			indent(f, depth);
			break;
		case ':':
			fputs(": ", f);
			break;
		case ' ':
		case '\t':
		case '\n':
		case '\r':
			break;
		default:
			fputc(c, f);
		}
	}
	fputc('\n', f);
}

static size_t
put_utf8(char *out, size_t o, size_t cap, unsigned long cp)
{
	char tmp[4];
	size_t n, k;

	if (cp < 0x80) {
		tmp[0] = (char)cp;
		n = 1;
	} else if (cp < 0x800) {
		tmp[0] = (char)(0xc0 | (cp >> 6));
		tmp[1] = (char)(0x80 | (cp & 0x3f));
		n = 2;
	} else if (cp < 0x10000) {
		tmp[0] = (char)(0xe0 | (cp >> 12));
		tmp[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		tmp[2] = (char)(0x80 | (cp & 0x3f));
		n = 3;
	} else {
		tmp[0] = (char)(0xf0 | (cp >> 18));
		tmp[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
		tmp[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
		tmp[3] = (char)(0x80 | (cp & 0x3f));
		n = 4;
	}
	if (o + n >= cap)	/* no room for the whole sequence: drop it */
		return o;
	for (k = 0; k < n; k++)
		out[o++] = tmp[k];
	return o;
}

static int
hex4(const char *s, size_t n, size_t i, unsigned long *v)
{
	size_t k;
	char *end;
	char tmp[5];

	if (i + 4 > n)
		return -1;
	for (k = 0; k < 4; k++)
		tmp[k] = s[i + k];
	tmp[4] = '\0';
	*v = strtoul(tmp, &end, 16);
	return end == tmp + 4 ? 0 : -1;
}

/*
 * Parse the JSON string starting at s[*i] == '"', unescaping into out (may be NULL).
 * Advances *i past the closing quote.
 */
static void
parse_str(const char *s, size_t n, size_t *i, char *out, size_t cap)
{
	size_t p = *i + 1, o = 0;
	unsigned long cp, lo;
	char c;

	while (p < n && s[p] != '"') {
		c = s[p++];
		if (c == '\\' && p < n) {
			c = s[p++];
			switch (c) {
			case 'b':
				c = '\b';
				break;
			case 'f':
				c = '\f';
				break;
			case 'n':
				c = '\n';
				break;
			case 'r':
				c = '\r';
				break;
			case 't':
				c = '\t';
				break;
			case 'u':
				if (hex4(s, n, p, &cp) < 0)
					break;
				p += 4;
				if (cp >= 0xd800 && cp < 0xdc00 && p + 6 <= n && s[p] == '\\' &&
				    s[p + 1] == 'u' && hex4(s, n, p + 2, &lo) == 0 &&
				    lo >= 0xdc00 && lo < 0xe000) {
					cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
					p += 6;
				}
				if (out != NULL)
					o = put_utf8(out, o, cap, cp);
				continue;
			default:
				break;	/* \" \\ \/ and unknown escapes: the char itself */
			}
		}
		if (out != NULL && o + 1 < cap)
			out[o++] = c;
	}
	if (out != NULL && cap > 0)
		out[o] = '\0';
	*i = p < n ? p + 1 : p;
}

/* Does the top-level object have an "error" member? Copies its text to text[]. */
static int
find_top_error(const char *s, size_t n, char *text, size_t cap)
{
	int depth = 0, top_obj = 0, keypos = 0;
	char key[16];
	size_t i = 0;

	while (i < n) {
		char c = s[i];

		if (c == '"') {
			if (!(depth == 1 && top_obj && keypos)) {
				parse_str(s, n, &i, NULL, 0);
				continue;
			}
			parse_str(s, n, &i, key, sizeof(key));
			keypos = 0;
			i = skip_ws(s, n, i);
			if (i < n && s[i] == ':')
				i = skip_ws(s, n, i + 1);
			if (strcmp(key, "error") != 0)
				continue;
			if (i < n && s[i] == '"')
				parse_str(s, n, &i, text, cap);
			else
				snprintf(text, cap, "error");
			return 1;
		}
		if (c == '{' || c == '[') {
			depth++;
			if (depth == 1)
				top_obj = c == '{';
			keypos = depth == 1 && top_obj;
		} else if (c == '}' || c == ']') {
			depth--;
		} else if (c == ',') {
			keypos = depth == 1;
		}
		i++;
	}
	return 0;
}

/* Read until EOF. Returns the malloc'ed reply (NUL-terminated), NULL with errno on error. */
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
	char req[REQ_MAX + 1], *reply = NULL;
	char errtext[1024];
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
	for (; i < argc; i++) {
		if (strchr(argv[i], '\n') != NULL) {
			fprintf(stderr, "%s: arguments cannot contain a newline\n", prog);
			return EXIT_UNREACHABLE;
		}
		if (append_word(req, &len, argv[i]) < 0) {
			fprintf(stderr, "%s: command longer than %d bytes\n", prog, REQ_MAX - 1);
			return EXIT_UNREACHABLE;
		}
	}
	req[len++] = '\n';

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
	if (raw)
		printf("%s\n", reply);
	else
		pretty(stdout, reply, rlen);
	fflush(stdout);
	ret = 0;
	if (find_top_error(reply, rlen, errtext, sizeof(errtext))) {
		fprintf(stderr, "%s: %s\n", prog, errtext);
		ret = EXIT_ERR_REPLY;
	}
out:
	free(reply);
	if (fd >= 0)
		close(fd);
	return ret;
}
