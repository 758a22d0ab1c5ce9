/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * Unit test: the JSON replies (control/json.c over jansson) and the control socket server
 * (control/ctl.c), both request forms.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ctl.h"
#include "json.h"

static int passed, failed;

#define CHECK(cond, ...) do {						\
	if (cond) {							\
		passed++;						\
		printf("ok   - ");					\
	} else {							\
		failed++;						\
		printf("FAIL - %s:%d: ", __FILE__, __LINE__);		\
	}								\
	printf(__VA_ARGS__);						\
	printf("\n");							\
} while (0)

#define CHECK_STR(got, want, name) do {					\
	CHECK(strcmp((got), (want)) == 0, "%s", name);			\
	if (strcmp((got), (want)) != 0)					\
		printf("       got  '%s'\n       want '%s'\n", (got), (want)); \
} while (0)

/* ---- JSON replies ---- */

static void
test_json_nested(void)
{
	char buf[256];
	struct sl_json j;

	sl_json_init(&j, buf, sizeof(buf));
	sl_json_obj_open(&j, NULL);
	sl_json_u64(&j, "a", 1);
	sl_json_arr_open(&j, "b");
	sl_json_u64(&j, NULL, 1);
	sl_json_i64(&j, NULL, -2);
	sl_json_obj_open(&j, NULL);
	sl_json_str(&j, "c", "x");
	sl_json_obj_close(&j);
	sl_json_arr_open(&j, NULL);
	sl_json_arr_close(&j);
	sl_json_arr_close(&j);
	sl_json_obj_open(&j, "d");
	sl_json_obj_close(&j);
	sl_json_bool(&j, "t", 1);
	sl_json_bool(&j, "f", 0);
	sl_json_null(&j, "n");
	sl_json_str(&j, "s", NULL);
	sl_json_obj_close(&j);
	CHECK(sl_json_finish(&j) == 0, "nested document finishes with 0");
	CHECK_STR(buf, "{\"a\":1,\"b\":[1,-2,{\"c\":\"x\"},[]],\"d\":{},\"t\":true,\"f\":false,"
		  "\"n\":null,\"s\":null}", "nested objects and arrays");
	CHECK(j.len == strlen(buf), "len matches the output length");
	CHECK(j.depth == 0, "depth back to 0 after closing everything");
}

static void
test_json_numbers(void)
{
	char buf[256];
	struct sl_json j;

	sl_json_init(&j, buf, sizeof(buf));
	sl_json_arr_open(&j, NULL);
	sl_json_u64(&j, NULL, UINT64_MAX);
	sl_json_i64(&j, NULL, INT64_MIN);
	sl_json_i64(&j, NULL, 0);
	sl_json_double(&j, NULL, 0.1);
	sl_json_double(&j, NULL, 1.5);
	sl_json_double(&j, NULL, -2.0);
	sl_json_double(&j, NULL, 1.0 / 3.0);
	sl_json_double(&j, NULL, NAN);
	sl_json_double(&j, NULL, INFINITY);
	sl_json_arr_close(&j);
	CHECK(sl_json_finish(&j) == 0, "numbers finish with 0");
	CHECK_STR(buf, "[1.8446744073709552e19,-9223372036854775808,0,0.10000000000000001,1.5,"
		  "-2.0,0.33333333333333331,null,null]",
		  "u64 above INT64_MAX as a double, INT64_MIN, doubles (17 digits), NaN/inf "
		  "as null");

	sl_json_init(&j, buf, sizeof(buf));
	sl_json_arr_open(&j, NULL);
	sl_json_u64(&j, NULL, INT64_MAX);
	sl_json_arr_close(&j);
	CHECK(sl_json_finish(&j) == 0 && strcmp(buf, "[9223372036854775807]") == 0,
	      "u64 up to INT64_MAX stays an integer");
}

static void
test_json_escape(void)
{
	static const char raw[] = { 'n', 'u', 'l', 0, 'x' };
	char buf[256];
	struct sl_json j;

	sl_json_init(&j, buf, sizeof(buf));
	sl_json_obj_open(&j, NULL);
	sl_json_str(&j, "k\"ey", "q\"b\\s/\n\t\x01\x1f\x7f caf\xc3\xa9");
	sl_json_strn(&j, "raw", raw, sizeof(raw));
	sl_json_strn(&j, "cut", "abcdef", 3);
	sl_json_str(&j, "latin1", "caf\xe9 \xc3");
	sl_json_obj_close(&j);
	CHECK(sl_json_finish(&j) == 0, "escaped document finishes with 0");
	CHECK_STR(buf, "{\"k\\\"ey\":\"q\\\"b\\\\s/\\n\\t\\u0001\\u001F\x7f caf\xc3\xa9\","
		  "\"raw\":\"nul\\u0000x\",\"cut\":\"abc\",\"latin1\":\"caf? ?\"}",
		  "quotes, backslash, control chars escaped, UTF-8 passed through, bytes of "
		  "a string that is not UTF-8 as '?'");

	sl_json_init(&j, buf, sizeof(buf));
	sl_json_obj_open(&j, NULL);
	sl_json_u64(&j, "z", 1);
	sl_json_u64(&j, "a", 2);
	sl_json_u64(&j, "m", 3);
	sl_json_u64(&j, "a", 4);
	sl_json_obj_close(&j);
	CHECK(sl_json_finish(&j) == 0 && strcmp(buf, "{\"z\":1,\"a\":4,\"m\":3}") == 0,
	      "members in insertion order; a repeated key keeps its place, last value (%s)",
	      buf);

	sl_json_init(&j, buf, sizeof(buf));
	sl_json_obj_open(&j, NULL);
	sl_json_u64(&j, NULL, 1);
	sl_json_obj_close(&j);
	CHECK(sl_json_finish(&j) == -ENOSPC && buf[0] == '\0', "a value without key in an object "
	      "voids the document");
	sl_json_init(&j, buf, sizeof(buf));
	sl_json_arr_open(&j, NULL);
	sl_json_u64(&j, "k", 1);
	sl_json_arr_close(&j);
	CHECK(sl_json_finish(&j) == -ENOSPC, "a key in an array voids the document");
	sl_json_init(&j, buf, sizeof(buf));
	sl_json_arr_open(&j, NULL);
	sl_json_obj_close(&j);
	CHECK(sl_json_finish(&j) == -ENOSPC, "closing an array as an object voids the document");
	sl_json_init(&j, buf, sizeof(buf));
	CHECK(sl_json_finish(&j) == -ENOSPC, "an empty document is an error");
}

static void
test_json_overflow(void)
{
	char buf[16];
	struct sl_json j;

	memset(buf, 'Z', sizeof(buf));
	sl_json_init(&j, buf, 10);
	sl_json_obj_open(&j, NULL);
	sl_json_str(&j, "key", "a long value");
	sl_json_u64(&j, "more", 1);
	sl_json_obj_close(&j);
	CHECK(sl_json_finish(&j) == -ENOSPC, "overflow: finish returns -ENOSPC");
	CHECK(j.overflow != 0, "overflow flag set");
	CHECK(buf[0] == '\0', "overflow: the output is the empty string");
	CHECK(buf[10] == 'Z', "overflow: nothing written past cap");

	/* exact fit: 7 characters + NUL in 8 bytes */
	sl_json_init(&j, buf, 8);
	sl_json_str(&j, NULL, "abcde");
	CHECK(sl_json_finish(&j) == 0 && strcmp(buf, "\"abcde\"") == 0,
	      "exact fit (len == cap - 1) is not an overflow");
	sl_json_init(&j, buf, 7);
	sl_json_str(&j, NULL, "abcde");
	CHECK(sl_json_finish(&j) == -ENOSPC && buf[0] == '\0', "one byte short is an overflow");

	/* overflow inside an escape sequence */
	sl_json_init(&j, buf, 5);
	sl_json_str(&j, NULL, "\x01");
	CHECK(sl_json_finish(&j) == -ENOSPC && buf[0] == '\0', "overflow inside an escape");

	sl_json_init(&j, buf, 1);
	sl_json_u64(&j, NULL, 7);
	CHECK(sl_json_finish(&j) == -ENOSPC && buf[0] == '\0', "cap 1: empty string, -ENOSPC");
}

static void
test_json_depth(void)
{
	char buf[256];
	struct sl_json j;
	int i;

	sl_json_init(&j, buf, sizeof(buf));
	for (i = 0; i < SL_JSON_DEPTH_MAX - 1; i++)
		sl_json_arr_open(&j, NULL);
	for (i = 0; i < SL_JSON_DEPTH_MAX - 1; i++)
		sl_json_arr_close(&j);
	CHECK(sl_json_finish(&j) == 0 && strlen(buf) == 2 * (SL_JSON_DEPTH_MAX - 1),
	      "%d nested arrays are fine", SL_JSON_DEPTH_MAX - 1);

	sl_json_init(&j, buf, sizeof(buf));
	for (i = 0; i < SL_JSON_DEPTH_MAX; i++)
		sl_json_arr_open(&j, NULL);
	CHECK(sl_json_finish(&j) == -ENOSPC, "nesting deeper than SL_JSON_DEPTH_MAX: -ENOSPC");

	sl_json_init(&j, buf, sizeof(buf));
	sl_json_obj_close(&j);
	CHECK(sl_json_finish(&j) == -ENOSPC && buf[0] == '\0', "unbalanced close is reported");
}

/* ---- control socket ---- */

static int
h_echo(void *arg, int argc, char **argv, struct sl_json *out)
{
	int i;

	(*(int *)arg)++;
	sl_json_arr_open(out, "argv");
	for (i = 0; i < argc; i++)
		sl_json_str(out, NULL, argv[i]);
	sl_json_arr_close(out);
	return argv[argc] == NULL ? 0 : -EFAULT;
}

static int
h_fail(void *arg, int argc, char **argv, struct sl_json *out)
{
	sl_json_u64(out, "partial", 1);	/* must be discarded */
	if (argc > 1)
		sl_ctl_set_error(out, "no such topic '%s'", argv[1]);
	return argc > 2 ? -1005 : -ENOENT;
}

static int
h_big(void *arg, int argc, char **argv, struct sl_json *out)
{
	int i;

	sl_json_arr_open(out, "data");
	for (i = 0; i < 500; i++)
		sl_json_str(out, NULL, "0123456789");
	sl_json_arr_close(out);
	return 0;
}

static int
h_unbalanced(void *arg, int argc, char **argv, struct sl_json *out)
{
	sl_json_arr_open(out, "oops");
	return 0;
}

static const char *
hook_strerror(int err)
{
	return err == -ENOENT ? "hooked enoent" : "hooked other";
}

static int
connect_to(const char *path)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	int fd;

	snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", path);
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	if (fd < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static int last_read_errno;	/* 0 when the last read_all() ended on a clean EOF */

static size_t
read_all(int fd, char *out, size_t cap)
{
	size_t len = 0;
	ssize_t n;

	last_read_errno = 0;
	while (len + 1 < cap) {
		n = read(fd, out + len, cap - 1 - len);
		if (n < 0)
			last_read_errno = errno;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	out[len] = '\0';
	return len;
}

/*
 * In-process request: connect (completes against the listen backlog), send, let the server
 * serve it, read the reply. Returns what sl_ctl_poll() returned.
 */
static int
request(struct sl_ctl *c, const char *path, const char *line, size_t len, int eof,
	char *out, size_t cap)
{
	int fd, served;

	out[0] = '\0';
	fd = connect_to(path);
	if (fd < 0)
		return -1000;
	if (send(fd, line, len, MSG_NOSIGNAL) != (ssize_t)len) {
		close(fd);
		return -1001;
	}
	if (eof)
		shutdown(fd, SHUT_WR);
	served = sl_ctl_poll(c, 1000);
	read_all(fd, out, cap);
	close(fd);
	return served;
}

#define REQ(c, path, s, out) request((c), (path), (s), strlen(s), 0, (out), sizeof(out))

static int64_t
mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void
test_ctl_fork_round_trip(struct sl_ctl *c, const char *path)
{
	static const char line[] = "echo a \"b c\"\n";
	char reply[512];
	int pfd[2], status, served;
	size_t len;
	pid_t pid;

	if (pipe(pfd) < 0) {
		CHECK(0, "pipe: %s", strerror(errno));
		return;
	}
	pid = fork();
	if (pid == 0) {
		int fd = connect_to(path);

		close(pfd[0]);
		if (fd < 0 || write(fd, line, sizeof(line) - 1) != (ssize_t)sizeof(line) - 1)
			_exit(1);
		len = read_all(fd, reply, sizeof(reply));
		if (write(pfd[1], reply, len) != (ssize_t)len)
			_exit(1);
		_exit(0);
	}
	close(pfd[1]);
	served = sl_ctl_poll(c, 10000);	/* blocks until the child connects */
	CHECK(served == 1, "fork: sl_ctl_poll served the child's request (%d)", served);
	read_all(pfd[0], reply, sizeof(reply));
	close(pfd[0]);
	CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "fork: child exited cleanly");
	CHECK_STR(reply, "{\"argv\":[\"echo\",\"a\",\"b c\"]}\n",
		  "fork: echo a \"b c\" round trip");
}

static void
test_ctl(void)
{
	char dir[] = "/tmp/sl_test_json.XXXXXX";
	char path[256], path2[256], path3[256], want[256], reply[8192], big[5000];
	struct sl_ctl_conf conf = { 0 };
	struct sl_ctl *c, *c2;
	int echo_calls = 0, fd, r;
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	struct stat st;
	int64_t t0, dt;

	if (mkdtemp(dir) == NULL) {
		CHECK(0, "mkdtemp: %s", strerror(errno));
		return;
	}
	snprintf(path, sizeof(path), "%s/run/sluice/ctl.sock", dir);
	conf.path = path;
	c = sl_ctl_open(&conf);
	CHECK(c != NULL, "sl_ctl_open in a missing directory (%s)", c ? "ok" : strerror(errno));
	if (c == NULL)
		return;
	CHECK(lstat(path, &st) == 0 && S_ISSOCK(st.st_mode) && (st.st_mode & 07777) == 0600,
	      "socket file exists with mode 0600 (%o)", (unsigned int)(st.st_mode & 07777));
	snprintf(path2, sizeof(path2), "%s/run/sluice", dir);
	CHECK(stat(path2, &st) == 0 && S_ISDIR(st.st_mode) && (st.st_mode & 07777) == 0700,
	      "missing parent directory created with mode 0700");
	CHECK(sl_ctl_fd(c) >= 0, "sl_ctl_fd returns the listen fd");
	CHECK(sl_ctl_poll(c, 0) == 0, "sl_ctl_poll with nobody waiting returns 0");

	CHECK(sl_ctl_register(c, "echo", h_echo, &echo_calls, "echo [words...]") == 0,
	      "register echo");
	CHECK(sl_ctl_register(c, "fail", h_fail, NULL, "fail [topic [x]]") == 0, "register fail");
	CHECK(sl_ctl_register(c, "big", h_big, NULL, NULL) == 0, "register big (help NULL)");
	CHECK(sl_ctl_register(c, "unbal", h_unbalanced, NULL, "unbal") == 0, "register unbal");
	CHECK(sl_ctl_register(c, "echo", h_echo, NULL, "x") == -EEXIST, "duplicate -> -EEXIST");
	CHECK(sl_ctl_register(c, "help", h_echo, NULL, "x") == -EEXIST, "help -> -EEXIST");
	CHECK(sl_ctl_register(c, "two words", h_echo, NULL, "x") == -EINVAL,
	      "command with a space -> -EINVAL");
	CHECK(sl_ctl_register(c, "", h_echo, NULL, "x") == -EINVAL, "empty command -> -EINVAL");

	test_ctl_fork_round_trip(c, path);
	CHECK(echo_calls == 1, "handler ran once with its arg");

	r = REQ(c, path, "echo  a\"b c\"d \"x\\\"y\\\\z\" \"\" back\\slash\t\n", reply);
	CHECK(r == 1, "in-process request served");
	CHECK_STR(reply, "{\"argv\":[\"echo\",\"ab cd\",\"x\\\"y\\\\z\",\"\",\"back\\\\slash\"]}\n",
		  "quotes mid-word, \\\" and \\\\ in quotes, empty word, literal backslash");
	REQ(c, path, "echo a\r\n", reply);
	CHECK_STR(reply, "{\"argv\":[\"echo\",\"a\"]}\n", "CRLF line ending");
	request(c, path, "echo eof", 8, 1, reply, sizeof(reply));
	CHECK_STR(reply, "{\"argv\":[\"echo\",\"eof\"]}\n", "EOF ends the request line");
	REQ(c, path, "echo one\necho two\n", reply);
	CHECK_STR(reply, "{\"argv\":[\"echo\",\"one\"]}\n", "only the first line is served");

	/* the JSON form of a request (sluicectl's) */
	REQ(c, path, " [\"echo\",\"a b\",\"\",\"q\\\"\\\\\\u00e9\"]\r\n", reply);
	CHECK_STR(reply, "{\"argv\":[\"echo\",\"a b\",\"\",\"q\\\"\\\\\xc3\xa9\"]}\n",
		  "JSON array request: spaces, empty word, escapes");
	REQ(c, path, "[\"echo\",1]\n", reply);
	snprintf(want, sizeof(want), "{\"error\":\"word 1 of the JSON request is not a string\","
		 "\"code\":%d}\n", EINVAL);
	CHECK_STR(reply, want, "JSON request with a number -> EINVAL");
	REQ(c, path, "[]\n", reply);
	CHECK(strstr(reply, "array of strings") != NULL, "empty JSON array -> error (%s)", reply);
	REQ(c, path, "[\"echo\",\"a\\u0000b\"]\n", reply);
	CHECK(strncmp(reply, "{\"error\":", 9) == 0, "JSON request with a NUL -> error (%s)",
	      reply);
	REQ(c, path, "[\"echo\" \"x\"]\n", reply);
	CHECK(strncmp(reply, "{\"error\":\"bad JSON request", 26) == 0,
	      "malformed JSON request -> error (%s)", reply);
	/* hostile JSON requests: each gets an error object, none reaches a handler */
	REQ(c, path, "[[\"echo\"]]\n", reply);
	CHECK(strstr(reply, "word 0 of the JSON request is not a string") != NULL,
	      "JSON request nested array -> error (%s)", reply);
	REQ(c, path, "[\"echo\",null]\n", reply);
	CHECK(strstr(reply, "word 1 of the JSON request is not a string") != NULL,
	      "JSON request with null -> error (%s)", reply);
	REQ(c, path, "[\"echo\",{\"a\":\"b\"}]\n", reply);
	CHECK(strstr(reply, "word 1 of the JSON request is not a string") != NULL,
	      "JSON request with an object -> error (%s)", reply);
	REQ(c, path, "[\"echo\",\"x\"] [\"echo\",\"y\"]\n", reply);
	CHECK(strncmp(reply, "{\"error\":\"bad JSON request", 26) == 0,
	      "JSON request with trailing data -> error (%s)", reply);
	REQ(c, path, "[\"echo\",\"\xff\xfe\"]\n", reply);
	CHECK(strncmp(reply, "{\"error\":\"bad JSON request", 26) == 0,
	      "JSON request with invalid UTF-8 -> error (%s)", reply);
	REQ(c, path, "[\"echo\",\"\\ud800\"]\n", reply);
	CHECK(strncmp(reply, "{\"error\":\"bad JSON request", 26) == 0,
	      "JSON request with a lone surrogate -> error (%s)", reply);
	REQ(c, path, "[\"echo\",\"unterminated]\n", reply);
	CHECK(strncmp(reply, "{\"error\":\"bad JSON request", 26) == 0,
	      "JSON request with an unterminated string -> error (%s)", reply);
	REQ(c, path, "[\"\\u00e9cho\"]\n", reply);
	snprintf(want, sizeof(want), "{\"error\":\"unknown command '\xc3\xa9" "cho'\",\"code\":%d}\n",
		 ENOSYS);
	CHECK_STR(reply, want, "JSON request: unknown command with an escape -> ENOSYS");
	{
		/* 4,000 nested arrays: jansson's depth limit refuses it, no stack overflow */
		char deep[SL_CTL_REQ_MAX];
		int k;

		for (k = 0; k < 4000; k++)
			deep[k] = '[';
		deep[k++] = '\n';
		deep[k] = '\0';
		REQ(c, path, deep, reply);
		CHECK(strncmp(reply, "{\"error\":\"bad JSON request", 26) == 0,
		      "JSON request nested 4,000 deep -> error (%.60s)", reply);
	}
	{
		char many[1024];
		size_t o = 0;
		int k;

		o += (size_t)snprintf(many + o, sizeof(many) - o, "[\"echo\"");
		for (k = 0; k < SL_CTL_ARGC_MAX; k++)
			o += (size_t)snprintf(many + o, sizeof(many) - o, ",\"w\"");
		snprintf(many + o, sizeof(many) - o, "]\n");
		REQ(c, path, many, reply);
		snprintf(want, sizeof(want), "{\"error\":\"too many words (max %d)\",\"code\":%d}\n",
			 SL_CTL_ARGC_MAX, E2BIG);
		CHECK_STR(reply, want, "JSON request with too many words -> E2BIG");
	}

	REQ(c, path, "help\n", reply);
	CHECK_STR(reply, "{\"commands\":[{\"name\":\"help\",\"help\":\"help\"},"
		  "{\"name\":\"echo\",\"help\":\"echo [words...]\"},"
		  "{\"name\":\"fail\",\"help\":\"fail [topic [x]]\"},"
		  "{\"name\":\"big\",\"help\":\"big\"},"
		  "{\"name\":\"unbal\",\"help\":\"unbal\"}]}\n", "built-in help");

	REQ(c, path, "nope x\n", reply);
	snprintf(want, sizeof(want), "{\"error\":\"unknown command 'nope'\",\"code\":%d}\n",
		 ENOSYS);
	CHECK_STR(reply, want, "unknown command -> error object");
	REQ(c, path, "fail orders\n", reply);
	snprintf(want, sizeof(want), "{\"error\":\"no such topic 'orders'\",\"code\":%d}\n",
		 ENOENT);
	CHECK_STR(reply, want, "handler error with sl_ctl_set_error text, partial output dropped");
	REQ(c, path, "fail \"a\\\"q\" x\n", reply);
	CHECK_STR(reply, "{\"error\":\"no such topic 'a\\\"q'\",\"code\":1005}\n",
		  "error text is JSON-escaped");
	REQ(c, path, "fail\n", reply);
	snprintf(want, sizeof(want), "{\"error\":\"error %d\",\"code\":%d}\n", ENOENT, ENOENT);
	CHECK_STR(reply, want, "handler error without text -> \"error N\"");
	REQ(c, path, "echo \"abc\n", reply);
	snprintf(want, sizeof(want), "{\"error\":\"unterminated quote\",\"code\":%d}\n", EINVAL);
	CHECK_STR(reply, want, "unterminated quote -> EINVAL");
	REQ(c, path, "  \t\n", reply);
	snprintf(want, sizeof(want), "{\"error\":\"empty request\",\"code\":%d}\n", EINVAL);
	CHECK_STR(reply, want, "blank line -> EINVAL");
	REQ(c, path, "unbal\n", reply);
	CHECK(strncmp(reply, "{\"error\":\"handler 'unbal' left unbalanced JSON\"", 47) == 0,
	      "handler leaving an open array -> error");

	memset(big, 'a', sizeof(big));
	r = request(c, path, big, sizeof(big), 0, reply, sizeof(reply));
	snprintf(want, sizeof(want), "{\"error\":\"request line too long (max %d bytes)\","
		 "\"code\":%d}\n", SL_CTL_REQ_MAX, EMSGSIZE);
	CHECK(r == 1, "over-long line answered");
	CHECK(last_read_errno == 0, "reply ends with a clean EOF, not ECONNRESET (%s)",
	      strerror(last_read_errno));
	CHECK_STR(reply, want, "over-long line -> EMSGSIZE, reply readable despite unread input");
	memset(big, 'b', SL_CTL_REQ_MAX - 1);
	memcpy(big, "echo ", 5);
	big[SL_CTL_REQ_MAX - 1] = '\n';
	request(c, path, big, SL_CTL_REQ_MAX, 0, reply, sizeof(reply));
	CHECK(strncmp(reply, "{\"argv\":[\"echo\",\"bbb", 20) == 0 &&
	      strlen(reply) == 17 + SL_CTL_REQ_MAX - 6 + 4,
	      "a line of exactly SL_CTL_REQ_MAX bytes (newline included) is accepted");

	/* silent client: answered with ETIMEDOUT after the deadline */
	fd = connect_to(path);
	t0 = mono_ms();
	r = sl_ctl_poll(c, 1000);
	dt = mono_ms() - t0;
	read_all(fd, reply, sizeof(reply));
	close(fd);
	snprintf(want, sizeof(want), "{\"error\":\"no complete request line within %d ms\","
		 "\"code\":%d}\n", SL_CTL_DEADLINE_MS, ETIMEDOUT);
	CHECK(r == 1, "silent client answered");
	CHECK_STR(reply, want, "silent client -> ETIMEDOUT error");
	CHECK(dt >= SL_CTL_DEADLINE_MS - 50 && dt < SL_CTL_DEADLINE_MS + 1500,
	      "silent client held the control thread for the deadline only (%lld ms)",
	      (long long)dt);

	/* client closing without a request: no reply, not counted */
	fd = connect_to(path);
	close(fd);
	CHECK(sl_ctl_poll(c, 1000) == 0, "connect+close without a request is not served");

	/* a second server on the same live path fails and leaves the first alone */
	errno = 0;
	c2 = sl_ctl_open(&conf);
	CHECK(c2 == NULL && errno == EADDRINUSE, "second sl_ctl_open on a live path: EADDRINUSE");
	sl_ctl_close(c2);
	r = REQ(c, path, "echo still\n", reply);
	CHECK(r == 1, "first server still serves (the probe connection is not counted)");
	CHECK_STR(reply, "{\"argv\":[\"echo\",\"still\"]}\n", "first server reply after the probe");

	sl_ctl_close(c);
	CHECK(lstat(path, &st) < 0 && errno == ENOENT, "sl_ctl_close removes the socket file");
	CHECK(connect_to(path) < 0, "nothing listens after close");

	/* stale socket file (bound, never listening, owner gone) is replaced */
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	memcpy(addr.sun_path, path, strlen(path) + 1);	/* fits: sl_ctl_open accepted it */
	CHECK(fd >= 0 && bind(fd, (struct sockaddr *)&addr, sizeof(addr)) == 0,
	      "created a stale socket file");
	close(fd);
	CHECK(lstat(path, &st) == 0 && S_ISSOCK(st.st_mode), "stale socket file present");
	conf.reply_max = 100;	/* raised to SL_CTL_REPLY_MIN */
	conf.strerror = hook_strerror;
	c = sl_ctl_open(&conf);
	CHECK(c != NULL, "sl_ctl_open replaces a stale socket (%s)", c ? "ok" : strerror(errno));
	if (c == NULL)
		return;
	sl_ctl_register(c, "big", h_big, NULL, NULL);
	sl_ctl_register(c, "fail", h_fail, NULL, NULL);
	REQ(c, path, "big\n", reply);
	snprintf(want, sizeof(want), "{\"error\":\"reply too large (max %d bytes)\",\"code\":%d}\n",
		 SL_CTL_REPLY_MIN, ENOSPC);
	CHECK_STR(reply, want, "reply larger than reply_max -> ENOSPC error object");
	REQ(c, path, "fail\n", reply);
	snprintf(want, sizeof(want), "{\"error\":\"hooked enoent\",\"code\":%d}\n", ENOENT);
	CHECK_STR(reply, want, "conf.strerror supplies the text of a bare error");

	/* close only unlinks its own socket file */
	unlink(path);
	conf.strerror = NULL;
	c2 = sl_ctl_open(&conf);
	CHECK(c2 != NULL, "new server on the unlinked path");
	sl_ctl_close(c);
	CHECK(lstat(path, &st) == 0 && S_ISSOCK(st.st_mode),
	      "closing the old server keeps the newer server's socket file");
	sl_ctl_close(c2);
	CHECK(lstat(path, &st) < 0, "closing the newer server removes it");

	/* a non-socket file is never replaced */
	snprintf(path3, sizeof(path3), "%s/plain", dir);
	fd = open(path3, O_CREAT | O_WRONLY, 0644);
	close(fd);
	conf.path = path3;
	errno = 0;
	c = sl_ctl_open(&conf);
	CHECK(c == NULL && errno == EEXIST, "existing regular file -> EEXIST");
	CHECK(lstat(path3, &st) == 0 && S_ISREG(st.st_mode), "regular file left alone");
	unlink(path3);

	memset(big, 'p', 200);
	big[0] = '/';
	big[200] = '\0';
	conf.path = big;
	errno = 0;
	CHECK(sl_ctl_open(&conf) == NULL && errno == ENAMETOOLONG, "path too long -> ENAMETOOLONG");
	conf.path = NULL;
	errno = 0;
	CHECK(sl_ctl_open(&conf) == NULL && errno == EINVAL, "NULL path -> EINVAL");

	snprintf(path2, sizeof(path2), "%s/run/sluice", dir);
	rmdir(path2);
	snprintf(path2, sizeof(path2), "%s/run", dir);
	rmdir(path2);
	CHECK(rmdir(dir) == 0, "temporary directory left empty");
}

int
main(void)
{
	test_json_nested();
	test_json_numbers();
	test_json_escape();
	test_json_overflow();
	test_json_depth();
	test_ctl();
	printf("%d passed, %d failed\n", passed, failed);
	return failed == 0 ? 0 : 1;
}
