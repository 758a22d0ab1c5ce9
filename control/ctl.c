/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * Control socket server, see ctl.h for the wire protocol.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "ctl.h"
#include "err.h"

#define LISTEN_BACKLOG 64
#define DRAIN_MAX (64 * 1024)	/* unread request bytes discarded before close */

struct cmd {
	char *name;
	char *help;
	sl_ctl_handler_t fn;
	void *arg;
};

struct sl_ctl {
	int fd;
	char *path;
	dev_t dev;		/* identity of the socket file we created */
	ino_t ino;
	const char *(*strerror)(int err);
	size_t reply_max;
	char *reply;
	struct cmd *cmds;
	unsigned int n_cmds;
	unsigned int cap_cmds;
	char req[SL_CTL_REQ_MAX + 1];
	char args[SL_CTL_REQ_MAX + 1];	/* the words of a JSON request, NUL-separated */
};

static int64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Wait for `events` on fd until the deadline. Returns 0 when ready, -ETIMEDOUT or -errno. */
static int
wait_fd(int fd, short events, int64_t deadline)
{
	struct pollfd pfd = { .fd = fd, .events = events };
	int64_t left;
	int r;

	for (;;) {
		left = deadline - now_ms();
		if (left <= 0)
			return -ETIMEDOUT;
		r = poll(&pfd, 1, (int)left);
		if (r > 0)
			return 0;
		if (r == 0)
			return -ETIMEDOUT;
		if (errno != EINTR)
			return -errno;
	}
}

/* mkdir -p of the directories above path, each created with mode 0700. */
static int
make_parents(const char *path)
{
	char tmp[sizeof(((struct sockaddr_un *)0)->sun_path)];
	char *p;

	snprintf(tmp, sizeof(tmp), "%s", path);
	for (p = tmp + 1; *p != '\0'; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(tmp, 0700) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	return 0;
}

/* Is a server listening at addr? Returns 1 live, 0 stale/absent, or -errno. */
static int
probe_live(const struct sockaddr_un *addr)
{
	int s, r, ret;

	s = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -errno;
	r = connect(s, (const struct sockaddr *)addr, sizeof(*addr));
	if (r == 0 || errno == EAGAIN || errno == EINPROGRESS)
		ret = 1;	/* accepted, or backlog full: someone is listening */
	else if (errno == ECONNREFUSED || errno == ENOENT)
		ret = 0;
	else
		ret = -errno;
	close(s);
	return ret;
}

struct sl_ctl *
sl_ctl_open(const struct sl_ctl_conf *conf)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	struct sl_ctl *c = NULL;
	int bound = 0, err, r;
	struct stat st;

	if (conf == NULL || conf->path == NULL || conf->path[0] == '\0') {
		err = EINVAL;
		goto fail;
	}
	if (strlen(conf->path) >= sizeof(addr.sun_path)) {
		err = ENAMETOOLONG;
		goto fail;
	}
	memcpy(addr.sun_path, conf->path, strlen(conf->path) + 1);

	c = calloc(1, sizeof(*c));
	if (c == NULL) {
		err = ENOMEM;
		goto fail;
	}
	c->fd = -1;
	c->strerror = conf->strerror;
	c->reply_max = conf->reply_max != 0 ? conf->reply_max : SL_CTL_REPLY_DEFAULT;
	if (c->reply_max < SL_CTL_REPLY_MIN)
		c->reply_max = SL_CTL_REPLY_MIN;
	c->path = strdup(conf->path);
	c->reply = malloc(c->reply_max);
	if (c->path == NULL || c->reply == NULL) {
		err = ENOMEM;
		goto fail;
	}

	r = make_parents(c->path);
	if (r < 0) {
		err = -r;
		goto fail;
	}
	c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (c->fd < 0) {
		err = errno;
		goto fail;
	}
	if (bind(c->fd, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
		if (errno != EADDRINUSE) {
			err = errno;
			goto fail;
		}
		/* The file exists: replace it only if it is a socket nobody listens on. */
		if (lstat(c->path, &st) == 0 && !S_ISSOCK(st.st_mode)) {
			err = EEXIST;
			goto fail;
		}
		r = probe_live(&addr);
		if (r != 0) {
			err = r > 0 ? EADDRINUSE : -r;
			goto fail;
		}
		if (unlink(c->path) < 0 && errno != ENOENT) {
			err = errno;
			goto fail;
		}
		if (bind(c->fd, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
			err = errno;
			goto fail;
		}
	}
	bound = 1;
	/* chmod before listen(): nobody can connect while the mode is still the umask's */
	if (chmod(c->path, 0600) < 0 || stat(c->path, &st) < 0) {
		err = errno;
		goto fail;
	}
	c->dev = st.st_dev;
	c->ino = st.st_ino;
	if (listen(c->fd, LISTEN_BACKLOG) < 0) {
		err = errno;
		goto fail;
	}
	return c;

fail:
	if (c != NULL) {
		if (c->fd >= 0)
			close(c->fd);
		if (bound)
			unlink(c->path);
		free(c->reply);
		free(c->path);
		free(c);
	}
	errno = err;
	return NULL;
}

static struct cmd *
find_cmd(struct sl_ctl *c, const char *name)
{
	unsigned int i;

	for (i = 0; i < c->n_cmds; i++)
		if (strcmp(c->cmds[i].name, name) == 0)
			return &c->cmds[i];
	return NULL;
}

int
sl_ctl_register(struct sl_ctl *c, const char *cmd, sl_ctl_handler_t fn, void *arg,
		const char *help)
{
	struct cmd *cmds, *e;
	const char *p;

	if (c == NULL || cmd == NULL || cmd[0] == '\0' || fn == NULL)
		return -EINVAL;
	for (p = cmd; *p != '\0'; p++)
		if ((unsigned char)*p <= ' ' || *p == '"' || *p == 0x7f)
			return -EINVAL;
	if (strcmp(cmd, "help") == 0 || find_cmd(c, cmd) != NULL)
		return -EEXIST;
	if (c->n_cmds == c->cap_cmds) {
		unsigned int cap = c->cap_cmds != 0 ? c->cap_cmds * 2 : 16;

		cmds = realloc(c->cmds, cap * sizeof(*cmds));
		if (cmds == NULL)
			return -ENOMEM;
		c->cmds = cmds;
		c->cap_cmds = cap;
	}
	e = &c->cmds[c->n_cmds];
	e->name = strdup(cmd);
	e->help = strdup(help != NULL ? help : cmd);
	if (e->name == NULL || e->help == NULL) {
		free(e->name);
		free(e->help);
		return -ENOMEM;
	}
	e->fn = fn;
	e->arg = arg;
	c->n_cmds++;
	return 0;
}

int
sl_ctl_fd(const struct sl_ctl *c)
{
	return c->fd;
}

void
sl_ctl_set_error(struct sl_json *out, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(out->err, sizeof(out->err), fmt, ap);
	va_end(ap);
}

/*
 * Read one request line into c->req (NUL-terminated, "\n" stripped).
 * Returns its length, -ENODATA when the client closed without sending anything,
 * -ETIMEDOUT, -EMSGSIZE, or another -errno (connection broken: no reply possible).
 */
static int
read_line(struct sl_ctl *c, int fd)
{
	int64_t deadline = now_ms() + SL_CTL_DEADLINE_MS;
	size_t len = 0;
	char *nl;
	ssize_t n;
	int r;

	for (;;) {
		if (len == SL_CTL_REQ_MAX)
			return -EMSGSIZE;
		n = recv(fd, c->req + len, SL_CTL_REQ_MAX - len, 0);
		if (n > 0) {
			nl = memchr(c->req + len, '\n', (size_t)n);
			if (nl != NULL) {
				*nl = '\0';
				return (int)(nl - c->req);
			}
			len += (size_t)n;
			continue;
		}
		if (n == 0) {	/* EOF also ends the line */
			if (len == 0)
				return -ENODATA;
			c->req[len] = '\0';
			return (int)len;
		}
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			return -errno;
		r = wait_fd(fd, POLLIN, deadline);
		if (r < 0)
			return r;
	}
}

/* Split line[0..len) into words in place. Returns argc, or a negative errno with err set. */
static int
split_words(char *line, size_t len, char **argv, char *err, size_t errsz)
{
	char *p = line, *end = line + len, *o;
	int argc = 0, inq;

	if (len > 0 && line[len - 1] == '\r')
		end--;
	if (memchr(line, '\0', (size_t)(end - line)) != NULL) {
		snprintf(err, errsz, "request contains a NUL byte");
		return -EINVAL;
	}
	for (;;) {
		while (p < end && (*p == ' ' || *p == '\t'))
			p++;
		if (p == end)
			break;
		if (argc == SL_CTL_ARGC_MAX) {
			snprintf(err, errsz, "too many words (max %d)", SL_CTL_ARGC_MAX);
			return -E2BIG;
		}
		o = p;
		argv[argc++] = o;
		inq = 0;
		while (p < end && (inq || (*p != ' ' && *p != '\t'))) {
			if (*p == '"') {
				inq = !inq;
				p++;
			} else if (inq && *p == '\\' && p + 1 < end &&
				   (p[1] == '"' || p[1] == '\\')) {
				*o++ = p[1];
				p += 2;
			} else {
				*o++ = *p++;
			}
		}
		if (inq) {
			snprintf(err, errsz, "unterminated quote");
			return -EINVAL;
		}
		if (p < end)
			p++;	/* skip the separator; o < p, so the NUL cannot clobber input */
		*o = '\0';
	}
	argv[argc] = NULL;
	if (argc == 0) {
		snprintf(err, errsz, "empty request");
		return -EINVAL;
	}
	return argc;
}

/*
 * A JSON request: line[0..len) is an array of 1..SL_CTL_ARGC_MAX strings (jansson parses
 * it). The words are copied NUL-terminated into c->args: decoded JSON strings are never
 * longer than their encoding, which also holds the quotes a NUL takes the place of.
 * Returns argc, or a negative errno with err set.
 */
static int
json_words(struct sl_ctl *c, const char *line, size_t len, char **argv, char *err,
	   size_t errsz)
{
	json_error_t je;
	json_t *a, *v;
	size_t i, n, o = 0;
	int rc;

	a = json_loadb(line, len, 0, &je);
	if (a == NULL) {
		snprintf(err, errsz, "bad JSON request: %.120s (column %d)", je.text, je.column);
		return -EINVAL;
	}
	if (!json_is_array(a) || json_array_size(a) == 0) {
		snprintf(err, errsz, "a JSON request is an array of strings, the command first");
		rc = -EINVAL;
		goto out;
	}
	if (json_array_size(a) > SL_CTL_ARGC_MAX) {
		snprintf(err, errsz, "too many words (max %d)", SL_CTL_ARGC_MAX);
		rc = -E2BIG;
		goto out;
	}
	json_array_foreach(a, i, v) {
		if (!json_is_string(v)) {
			snprintf(err, errsz, "word %zu of the JSON request is not a string", i);
			rc = -EINVAL;
			goto out;
		}
		n = json_string_length(v);
		if (memchr(json_string_value(v), '\0', n) != NULL) {
			snprintf(err, errsz, "request contains a NUL byte");
			rc = -EINVAL;
			goto out;
		}
		if (o + n + 1 > sizeof(c->args)) {	/* cannot happen (see above): be sure */
			snprintf(err, errsz, "request too long");
			rc = -EMSGSIZE;
			goto out;
		}
		memcpy(c->args + o, json_string_value(v), n + 1);
		argv[i] = c->args + o;
		o += n + 1;
	}
	argv[json_array_size(a)] = NULL;
	rc = (int)json_array_size(a);
out:
	json_decref(a);
	return rc;
}

/* Replace whatever was written to j by an error object. */
static void
error_reply(struct sl_ctl *c, struct sl_json *j, int ret)
{
	char text[SL_JSON_ERR_MAX];

	if (j->err[0] != '\0')
		memcpy(text, j->err, sizeof(text));
	else if (c->strerror != NULL)
		snprintf(text, sizeof(text), "%s", c->strerror(ret));
	else
		snprintf(text, sizeof(text), "error %" PRId64, -(int64_t)ret);
	sl_json_free(j);
	sl_json_init(j, c->reply, c->reply_max);
	sl_json_obj_open(j, NULL);
	sl_json_str(j, "error", text);
	sl_json_i64(j, "code", -(int64_t)ret);
	sl_json_obj_close(j);
	/* reply_max >= SL_CTL_REPLY_MIN, which fits the largest escaped error text */
	sl_json_finish(j);
}

static void
help_reply(struct sl_ctl *c, struct sl_json *j)
{
	unsigned int i;

	sl_json_arr_open(j, "commands");
	sl_json_obj_open(j, NULL);
	sl_json_str(j, "name", "help");
	sl_json_str(j, "help", "help");
	sl_json_obj_close(j);
	for (i = 0; i < c->n_cmds; i++) {
		sl_json_obj_open(j, NULL);
		sl_json_str(j, "name", c->cmds[i].name);
		sl_json_str(j, "help", c->cmds[i].help);
		sl_json_obj_close(j);
	}
	sl_json_arr_close(j);
}

/* Build the reply for the request line in c->req (len bytes, or -errno from read_line). */
static void
dispatch(struct sl_ctl *c, struct sl_json *j, int len)
{
	char *argv[SL_CTL_ARGC_MAX + 1];
	struct cmd *cmd;
	int argc, ret;

	sl_json_init(j, c->reply, c->reply_max);
	if (len < 0) {
		if (len == -ETIMEDOUT)
			sl_ctl_set_error(j, "no complete request line within %d ms",
					 SL_CTL_DEADLINE_MS);
		else if (len == -EMSGSIZE)
			sl_ctl_set_error(j, "request line too long (max %d bytes)",
					 SL_CTL_REQ_MAX);
		error_reply(c, j, len);
		return;
	}
	{
		size_t k = 0;

		while (k < (size_t)len && (c->req[k] == ' ' || c->req[k] == '\t'))
			k++;
		if (k < (size_t)len && c->req[k] == '[')
			argc = json_words(c, c->req, (size_t)len, argv, j->err, sizeof(j->err));
		else
			argc = split_words(c->req, (size_t)len, argv, j->err, sizeof(j->err));
	}
	if (argc < 0) {
		error_reply(c, j, argc);
		return;
	}
	sl_json_obj_open(j, NULL);
	if (strcmp(argv[0], "help") == 0) {
		help_reply(c, j);
	} else {
		cmd = find_cmd(c, argv[0]);
		if (cmd == NULL) {
			sl_ctl_set_error(j, "unknown command '%.64s'", argv[0]);
			error_reply(c, j, -ENOSYS);
			return;
		}
		ret = cmd->fn(cmd->arg, argc, argv, j);
		if (ret < 0) {
			error_reply(c, j, ret);
			return;
		}
		if (!j->overflow && j->depth != 1) {
			sl_ctl_set_error(j, "handler '%.64s' left unbalanced JSON", argv[0]);
			error_reply(c, j, -SL_E_INTERNAL);
			return;
		}
	}
	sl_json_obj_close(j);
	if (sl_json_finish(j) < 0) {
		sl_ctl_set_error(j, "reply too large (max %zu bytes)", c->reply_max);
		error_reply(c, j, -ENOSPC);
	}
}

/* Write buf[0..len) within the deadline. Errors are ignored: the client went away. */
static void
write_all(int fd, const char *buf, size_t len)
{
	int64_t deadline = now_ms() + SL_CTL_DEADLINE_MS;
	ssize_t n;

	while (len > 0) {
		n = send(fd, buf, len, MSG_NOSIGNAL);
		if (n > 0) {
			buf += n;
			len -= (size_t)n;
		} else if (n < 0 && errno == EINTR) {
			continue;
		} else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			if (wait_fd(fd, POLLOUT, deadline) < 0)
				return;
		} else {
			return;
		}
	}
}

/* Serve one accepted client. Returns 1 when a reply was sent, 0 otherwise. */
static int
serve(struct sl_ctl *c, int fd)
{
	struct sl_json j;
	char sink[1024];
	size_t drained = 0;
	ssize_t n;
	int len;

	len = read_line(c, fd);
	if (len == -ENODATA || (len < 0 && len != -ETIMEDOUT && len != -EMSGSIZE))
		return 0;
	dispatch(c, &j, len);
	c->reply[j.len] = '\n';	/* the NUL slot: j.len < reply_max */
	write_all(fd, c->reply, j.len + 1);
	/*
	 * Discard unread input: closing a Unix socket with unread data makes the peer's read
	 * fail with ECONNRESET instead of returning the reply's EOF.
	 */
	shutdown(fd, SHUT_WR);
	while (drained < DRAIN_MAX) {
		n = recv(fd, sink, sizeof(sink), 0);
		if (n <= 0)
			break;
		drained += (size_t)n;
	}
	return 1;
}

int
sl_ctl_poll(struct sl_ctl *c, int timeout_ms)
{
	struct pollfd pfd = { .fd = c->fd, .events = POLLIN };
	int served = 0, i, fd, r;

	r = poll(&pfd, 1, timeout_ms);
	if (r < 0)
		return errno == EINTR ? 0 : -errno;
	if (r == 0)
		return 0;
	for (i = 0; i < SL_CTL_BATCH_MAX; i++) {
		fd = accept4(c->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				break;
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			return served > 0 ? served : -errno;
		}
		served += serve(c, fd);
		close(fd);
	}
	return served;
}

void
sl_ctl_close(struct sl_ctl *c)
{
	struct stat st;
	unsigned int i;

	if (c == NULL)
		return;
	close(c->fd);
	/* unlink only our own socket, not one a newer server put in its place */
	if (lstat(c->path, &st) == 0 && S_ISSOCK(st.st_mode) && st.st_dev == c->dev &&
	    st.st_ino == c->ino)
		unlink(c->path);
	for (i = 0; i < c->n_cmds; i++) {
		free(c->cmds[i].name);
		free(c->cmds[i].help);
	}
	free(c->cmds);
	free(c->reply);
	free(c->path);
	free(c);
}
