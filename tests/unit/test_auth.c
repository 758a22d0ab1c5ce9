/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * Unit test of the client token table (dataplane/auth.c), no EAL: the token file's format
 * and its "FILE:LINE: ..." errors, the owner-only check of the file, lookups by token and
 * by uid (uids kept across a reload, a removed token gone), the rights per topic pattern.
 * (HELLO's token field: test_wire.c.)
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

#include "auth.h"
#include "check.h"
#include "err.h"

#define TOK_A "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define TOK_B "tok-B.base64url_~+/=ABCDEFGHIJ"
#define TOK_C "cccccccccccccccccccccccccccccccc"

static struct sl_auth_table *
parse(const char *text, const struct sl_auth_table *prev, char *err, size_t len)
{
	FILE *f = fmemopen((void *)text, strlen(text), "r");
	struct sl_auth_table *t;

	if (f == NULL)
		return NULL;
	err[0] = '\0';
	t = sl_auth_parse(f, "tokens.conf", prev, err, len);
	fclose(f);
	return t;
}

static uint32_t
rights(const struct sl_auth_table *t, const char *tok, const char *topic)
{
	int i = sl_auth_find(t, tok, strlen(tok));

	return i < 0 ? 0xFFu : sl_auth_rights(t, (uint32_t)i, topic, strlen(topic));
}

/* A file in the documented format: rights per pattern, adding up. */
static void
test_format(void)
{
	char err[512], hashform[80], hex[2 * SL_AUTH_HASH_LEN + 1], rule[128];
	uint8_t h[SL_AUTH_HASH_LEN];
	struct sl_auth_table *t;
	char text[2048];
	int i;

	sl_auth_hash(TOK_C, strlen(TOK_C), h);
	sodium_bin2hex(hex, sizeof(hex), h, sizeof(h));
	snprintf(hashform, sizeof(hashform), SL_AUTH_HASH_PREFIX "%s", hex);
	snprintf(text, sizeof(text),
		 "# client tokens: one line per token, then its rules, as many as needed\n"
		 "\n"
		 "   # an indented comment\n"
		 "token writer " TOK_A "\n"
		 "allow writer pub orders\n"
		 "allow writer pub,sub billing.*\n"
		 "token reader\t" TOK_B "  \n"
		 "allow reader sub *\n"
		 "allow writer admin billing.eu\n"
		 "token ops %s\n"
		 "allow ops all *\n"
		 "token idle " "dddddddddddddddddddddddd" "\n", hashform);
	t = parse(text, NULL, err, sizeof(err));
	CHECK(t != NULL, "a valid file parses (%s)", err);
	if (t == NULL)
		return;
	CHECK(sl_auth_count(t) == 4 && sl_auth_gen(t) == 1, "4 tokens, generation 1");
	CHECK(rights(t, TOK_A, "orders") == SL_AUTH_PUB, "exact pattern: pub on orders");
	CHECK(rights(t, TOK_A, "orders2") == 0 && rights(t, TOK_A, "order") == 0,
	      "an exact pattern matches only that name");
	CHECK(rights(t, TOK_A, "billing.us") == (SL_AUTH_PUB | SL_AUTH_SUB),
	      "prefix pattern: pub,sub on billing.us");
	CHECK(rights(t, TOK_A, "billing.eu") == SL_AUTH_ALL,
	      "rules add up: billing.* (pub,sub) + billing.eu (admin)");
	CHECK(rights(t, TOK_A, "billing") == 0 && rights(t, TOK_A, "billingX") == 0,
	      "the prefix 'billing.' does not match 'billing' or 'billingX'");
	CHECK(rights(t, TOK_B, "anything") == SL_AUTH_SUB && rights(t, TOK_B, "orders") ==
	      SL_AUTH_SUB, "'*' matches every topic");
	CHECK(rights(t, TOK_C, "x") == SL_AUTH_ALL, "a token given by its blake2b: hash is found "
	      "by the token itself");
	CHECK(rights(t, "dddddddddddddddddddddddd", "orders") == 0,
	      "a token without allow lines has no right");
	CHECK(sl_auth_find(t, TOK_A "x", strlen(TOK_A) + 1) < 0 &&
	      sl_auth_find(t, TOK_A, strlen(TOK_A) - 1) < 0 && sl_auth_find(t, "", 0) < 0,
	      "a longer, shorter or empty token is unknown");
	CHECK(sl_auth_find(t, hashform, strlen(hashform)) < 0,
	      "the hash form is not itself a token");
	i = sl_auth_find(t, TOK_A, strlen(TOK_A));
	CHECK(i >= 0 && strcmp(sl_auth_name(t, (uint32_t)i), "writer") == 0 &&
	      sl_auth_nrules(t, (uint32_t)i) == 3, "writer has its 3 rules");
	sl_auth_rule_str(t, (uint32_t)i, 1, rule, sizeof(rule));
	CHECK(strcmp(rule, "pub,sub billing.*") == 0, "rule text: %s", rule);
	sl_auth_free(t);
}

struct bad {
	const char *text;
	const char *want;	/* in the error message */
};

/* Every mistake is refused with FILE:LINE and what is wrong. */
static void
test_errors(void)
{
	static const struct bad cases[] = {
		{"", "tokens.conf: no token in it"},
		{"# nothing\n", "tokens.conf: no token in it"},
		{"token a " TOK_A "\nfoo a pub x\n", "tokens.conf:2: unknown keyword 'foo'"},
		{"token a\n", "tokens.conf:1: expected: token NAME SECRET"},
		{"token a " TOK_A " extra\n", "tokens.conf:1: expected: token NAME SECRET"},
		{"token a short\n", "tokens.conf:1: token 'a': the secret"},
		{"token a " TOK_A "\xc3\xa9\n", "tokens.conf:1: token 'a': the secret"},
		{"token a blake2b:1234\n", "tokens.conf:1: token 'a': the secret"},
		{"token .a " TOK_A "\n", "tokens.conf:1: token name '.a'"},
		{"token a " TOK_A "\ntoken a " TOK_B "\n",
		 "tokens.conf:2: token 'a' declared twice (first at line 1)"},
		{"token a " TOK_A "\n\ntoken b " TOK_A "\n",
		 "tokens.conf:3: token 'b' is the same token as 'a' (line 1)"},
		{"allow a pub x\ntoken a " TOK_A "\n",
		 "tokens.conf:1: no token 'a' declared above"},
		{"token a " TOK_A "\nallow a pub\n", "tokens.conf:2: expected: allow NAME RIGHTS"},
		{"token a " TOK_A "\nallow a write x\n", "tokens.conf:2: rights 'write'"},
		{"token a " TOK_A "\nallow a pub,,sub x\n", NULL},	/* empty words skipped */
		{"token a " TOK_A "\nallow a pub x/y\n", "tokens.conf:2: pattern 'x/y'"},
		{"token a " TOK_A "\nallow a pub .x*\n", "tokens.conf:2: pattern '.x*'"},
		{"token a " TOK_A "\nallow a pub x**\n", "tokens.conf:2: pattern 'x**'"},
		{"token a " TOK_A "\nallow a pub *x\n", "tokens.conf:2: pattern '*x'"},
	};
	char err[512];
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct sl_auth_table *t = parse(cases[i].text, NULL, err, sizeof(err));

		if (cases[i].want == NULL) {
			CHECK(t != NULL, "case %zu parses (%s)", i, err);
		} else {
			CHECK(t == NULL && errno != 0 && strstr(err, cases[i].want) == err,
			      "case %zu refused: %s", i, err);
		}
		sl_auth_free(t);
	}
}

/* A reload keeps the uid of every token still in the file, gives a new token a new uid
 * (never one used before) and finds nothing for a removed one. */
static void
test_reload(void)
{
	char err[512];
	struct sl_auth_table *t1, *t2, *t3;
	uint32_t ua, ub, uc;
	int ia, ib;

	t1 = parse("token a " TOK_A "\nallow a pub x\ntoken b " TOK_B "\nallow b sub *\n", NULL,
		   err, sizeof(err));
	CHECK(t1 != NULL, "first table (%s)", err);
	if (t1 == NULL)
		return;
	ua = sl_auth_uid(t1, (uint32_t)sl_auth_find(t1, TOK_A, strlen(TOK_A)));
	ub = sl_auth_uid(t1, (uint32_t)sl_auth_find(t1, TOK_B, strlen(TOK_B)));
	CHECK(ua != 0 && ub != 0 && ua != ub, "uids %u and %u", ua, ub);
	/* b removed, a renamed with new rights, c new */
	t2 = parse("token c " TOK_C "\nallow c pub *\ntoken a2 " TOK_A "\nallow a2 sub x\n", t1,
		   err, sizeof(err));
	CHECK(t2 != NULL && sl_auth_gen(t2) == 2, "second table, generation 2 (%s)", err);
	if (t2 == NULL)
		goto out1;
	ia = sl_auth_by_uid(t2, ua);
	CHECK(ia >= 0 && sl_auth_rights(t2, (uint32_t)ia, "x", 1) == SL_AUTH_SUB,
	      "a's session finds its token by uid, with its new rights");
	CHECK(sl_auth_by_uid(t2, ub) < 0, "b's uid finds nothing: removed");
	uc = sl_auth_uid(t2, (uint32_t)sl_auth_find(t2, TOK_C, strlen(TOK_C)));
	CHECK(uc != ua && uc != ub && uc != 0, "c gets a new uid (%u)", uc);
	/* b back: a new uid, not its old one */
	t3 = parse("token b " TOK_B "\n", t2, err, sizeof(err));
	CHECK(t3 != NULL, "third table (%s)", err);
	if (t3 == NULL)
		goto out2;
	ib = sl_auth_find(t3, TOK_B, strlen(TOK_B));
	CHECK(ib >= 0 && sl_auth_uid(t3, (uint32_t)ib) != ub &&
	      sl_auth_uid(t3, (uint32_t)ib) != uc, "a token added again gets a fresh uid");
	CHECK(sl_auth_by_uid(t3, ua) < 0, "a's uid gone in the third table");
	sl_auth_free(t3);
out2:
	sl_auth_free(t2);
out1:
	sl_auth_free(t1);
}

/* sl_auth_load refuses what others could read or change, a link, another's file. */
static void
test_load(void)
{
	char dir[] = "/tmp/sl-test-auth.XXXXXX", path[128], link[128], err[512];
	struct sl_auth_table *t;
	FILE *f;

	if (mkdtemp(dir) == NULL) {
		CHECK(0, "mkdtemp: %s", strerror(errno));
		return;
	}
	snprintf(path, sizeof(path), "%s/tokens", dir);
	snprintf(link, sizeof(link), "%s/link", dir);
	f = fopen(path, "w");
	if (f != NULL) {
		fputs("token a " TOK_A "\nallow a pub *\n", f);
		fclose(f);
	}
	chmod(path, 0644);
	t = sl_auth_load(path, NULL, err, sizeof(err));
	CHECK(t == NULL && errno == EPERM && strstr(err, "readable by no one else") != NULL &&
	      strncmp(err, path, strlen(path)) == 0, "mode 0644 refused: %s", err);
	chmod(path, 0640);
	t = sl_auth_load(path, NULL, err, sizeof(err));
	CHECK(t == NULL && errno == EPERM, "mode 0640 refused");
	chmod(path, 0600);
	t = sl_auth_load(path, NULL, err, sizeof(err));
	CHECK(t != NULL && sl_auth_count(t) == 1, "mode 0600 loads (%s)", t ? "" : err);
	sl_auth_free(t);
	chmod(path, 0400);
	t = sl_auth_load(path, NULL, err, sizeof(err));
	CHECK(t != NULL, "mode 0400 loads (%s)", t ? "" : err);
	sl_auth_free(t);
	CHECK(symlink(path, link) == 0, "symlink");
	t = sl_auth_load(link, NULL, err, sizeof(err));
	CHECK(t == NULL && errno == ELOOP && strstr(err, "symbolic link") != NULL,
	      "a symbolic link refused: %s", err);
	if (geteuid() == 0) {
		CHECK(chown(path, 65534, 65534) == 0, "chown to nobody");
		t = sl_auth_load(path, NULL, err, sizeof(err));
		CHECK(t == NULL && errno == EPERM, "a file owned by another user refused: %s",
		      err);
	}
	t = sl_auth_load(dir, NULL, err, sizeof(err));
	CHECK(t == NULL, "a directory refused: %s", err);
	snprintf(link, sizeof(link), "%s/none", dir);
	t = sl_auth_load(link, NULL, err, sizeof(err));
	CHECK(t == NULL && errno == ENOENT, "a missing file refused: %s", err);
	unlink(path);
	snprintf(link, sizeof(link), "%s/link", dir);
	unlink(link);
	rmdir(dir);
}

static void
test_texts(void)
{
	char buf[32];

	CHECK(SL_E_AUTH == 1025 && SL_E_DENIED == 1026 && SL_E_DENIED < SL_E_MAX,
	      "SL_E_AUTH 1025, SL_E_DENIED 1026");
	CHECK(strstr(sl_strerror(-SL_E_AUTH), "token") != NULL &&
	      strstr(sl_strerror(SL_E_DENIED), "right") != NULL, "texts: %s / %s",
	      sl_strerror(SL_E_AUTH), sl_strerror(SL_E_DENIED));
	sl_auth_rights_str(SL_AUTH_PUB | SL_AUTH_ADMIN, buf, sizeof(buf));
	CHECK(strcmp(buf, "pub,admin") == 0, "rights text %s", buf);
	sl_auth_rights_str(0, buf, sizeof(buf));
	CHECK(strcmp(buf, "none") == 0, "no rights: %s", buf);
}

int
main(void)
{
	test_format();
	test_errors();
	test_reload();
	test_load();
	test_texts();
	return check_report();
}
