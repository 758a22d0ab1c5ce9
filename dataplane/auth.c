/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sodium.h>

#include "auth.h"
#include "name.h"
#include "secfile.h"

#define LINE_MAX_LEN 512
#define SPACE " \t\r\n"

enum pat_kind {
	PAT_EXACT = 0,
	PAT_PREFIX,		/* the pattern without its '*' starts the topic */
	PAT_ANY,
};

struct rule {
	uint8_t rights;
	uint8_t kind;
	uint8_t len;			/* of pat */
	char pat[SL_NAME_MAX];
};

struct entry {
	uint8_t hash[SL_AUTH_HASH_LEN];
	uint32_t uid;
	uint32_t first;			/* its rules: r[first .. first + nrules) */
	uint32_t nrules;
	uint32_t line;			/* of its token line (messages) */
	char name[SL_AUTH_NAME_MAX + 1];
};

struct sl_auth_table {
	uint32_t gen;
	uint32_t next_uid;		/* the uid the next new token gets */
	uint32_t n;
	uint32_t nr;
	struct entry *e;		/* [SL_AUTH_MAX_TOKENS] */
	struct rule *r;			/* [nr], grouped by token */
};

/* A rule while parsing: whose it is. */
struct prule {
	uint32_t owner;
	struct rule r;
};

struct parser {
	const char *file;
	uint32_t line;
	char *err;
	size_t err_len;
	struct prule *pr;
	uint32_t npr, cap;
};

static void __attribute__((format(printf, 2, 3)))
perr(struct parser *ps, const char *fmt, ...)
{
	char msg[384];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (ps->line != 0)
		snprintf(ps->err, ps->err_len, "%s:%u: %s", ps->file, ps->line, msg);
	else
		snprintf(ps->err, ps->err_len, "%s: %s", ps->file, msg);
}

void
sl_auth_hash(const void *token, size_t len, uint8_t out[SL_AUTH_HASH_LEN])
{
	crypto_generichash(out, SL_AUTH_HASH_LEN, token, len, NULL, 0);
}

static int
token_char_ok(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '-' || c == '_' || c == '.' || c == '~' || c == '+' || c == '/' || c == '=';
}

/* SECRET of a token line into hash: the token itself, or blake2b:<64 hex>. */
static int
secret_parse(const char *s, uint8_t hash[SL_AUTH_HASH_LEN])
{
	size_t plen = strlen(SL_AUTH_HASH_PREFIX), len = strlen(s), i, n;
	const char *end;

	if (strncmp(s, SL_AUTH_HASH_PREFIX, plen) == 0) {
		if (len - plen != 2 * SL_AUTH_HASH_LEN ||
		    sodium_hex2bin(hash, SL_AUTH_HASH_LEN, s + plen, len - plen, NULL, &n,
				   &end) != 0 || n != SL_AUTH_HASH_LEN || *end != '\0')
			return -1;
		return 0;
	}
	if (len < SL_AUTH_TOKEN_MIN || len > SL_AUTH_TOKEN_MAX)
		return -1;
	for (i = 0; i < len; i++)
		if (!token_char_ok(s[i]))
			return -1;
	sl_auth_hash(s, len, hash);
	return 0;
}

/* "pub,sub" into a mask; 0 when a word is not a right. */
static uint32_t
rights_parse(char *s)
{
	uint32_t m = 0;
	char *save = NULL, *w;

	for (w = strtok_r(s, ",", &save); w != NULL; w = strtok_r(NULL, ",", &save)) {
		if (strcmp(w, "pub") == 0)
			m |= SL_AUTH_PUB;
		else if (strcmp(w, "sub") == 0)
			m |= SL_AUTH_SUB;
		else if (strcmp(w, "admin") == 0)
			m |= SL_AUTH_ADMIN;
		else if (strcmp(w, "all") == 0)
			m |= SL_AUTH_ALL;
		else
			return 0;
	}
	return m;
}

/* A pattern: "*", a prefix ending in '*' (its characters those of a topic name, not
 * starting with '.'), or a topic name. */
static int
pattern_parse(const char *s, struct rule *r)
{
	size_t len = strlen(s);
	char tmp[SL_NAME_MAX + 1];

	if (strcmp(s, "*") == 0) {
		r->kind = PAT_ANY;
		r->len = 0;
		return 0;
	}
	if (len > 1 && s[len - 1] == '*') {
		/* the prefix plus one character must be able to make a valid name */
		if (len > SL_NAME_MAX)
			return -1;
		memcpy(tmp, s, len - 1);
		tmp[len - 1] = 'x';
		if (sl_name_check(tmp, len) != 0)
			return -1;
		r->kind = PAT_PREFIX;
		r->len = (uint8_t)(len - 1);
		memcpy(r->pat, s, len - 1);
		return 0;
	}
	if (sl_name_check(s, len) != 0)
		return -1;
	r->kind = PAT_EXACT;
	r->len = (uint8_t)len;
	memcpy(r->pat, s, len);
	return 0;
}

static int
find_name(const struct sl_auth_table *t, const char *name)
{
	uint32_t i;

	for (i = 0; i < t->n; i++)
		if (strcmp(t->e[i].name, name) == 0)
			return (int)i;
	return -1;
}

static int
line_token(struct parser *ps, struct sl_auth_table *t, char **w, int nw)
{
	struct entry *e;
	uint32_t i;
	int dup;

	if (nw != 3) {
		perr(ps, "expected: token NAME SECRET");
		return -EINVAL;
	}
	if (sl_name_check_str(w[1]) != 0) {
		perr(ps, "token name '%s': " SL_NAME_RULE, w[1]);
		return -EINVAL;
	}
	dup = find_name(t, w[1]);
	if (dup >= 0) {
		perr(ps, "token '%s' declared twice (first at line %u)", w[1], t->e[dup].line);
		return -EINVAL;
	}
	if (t->n == SL_AUTH_MAX_TOKENS) {
		perr(ps, "more than %d tokens", SL_AUTH_MAX_TOKENS);
		return -E2BIG;
	}
	e = &t->e[t->n];
	memset(e, 0, sizeof(*e));
	if (secret_parse(w[2], e->hash) != 0) {
		perr(ps, "token '%s': the secret is the token itself, %d to %d of A-Z a-z 0-9 "
			 "- _ . ~ + / = (`sluicectl token gen` makes one), or " SL_AUTH_HASH_PREFIX
			 " and the 64 hex digits of its hash (`sluicectl token hash`)", w[1],
		     SL_AUTH_TOKEN_MIN, SL_AUTH_TOKEN_MAX);
		return -EINVAL;
	}
	for (i = 0; i < t->n; i++) {
		if (sodium_memcmp(t->e[i].hash, e->hash, SL_AUTH_HASH_LEN) == 0) {
			perr(ps, "token '%s' is the same token as '%s' (line %u)", w[1],
			     t->e[i].name, t->e[i].line);
			return -EINVAL;
		}
	}
	snprintf(e->name, sizeof(e->name), "%s", w[1]);
	e->line = ps->line;
	t->n++;
	return 0;
}

static int
line_allow(struct parser *ps, struct sl_auth_table *t, char **w, int nw)
{
	struct prule pr;
	uint32_t i, n = 0;
	int owner;

	if (nw != 4) {
		perr(ps, "expected: allow NAME RIGHTS PATTERN (e.g. allow billing pub,sub "
			 "orders.*)");
		return -EINVAL;
	}
	owner = find_name(t, w[1]);
	if (owner < 0) {
		perr(ps, "no token '%s' declared above (token NAME SECRET first)", w[1]);
		return -EINVAL;
	}
	memset(&pr, 0, sizeof(pr));
	pr.owner = (uint32_t)owner;
	pr.r.rights = (uint8_t)rights_parse(w[2]);
	if (pr.r.rights == 0) {
		perr(ps, "rights '%s': pub, sub, admin (comma-separated) or all", w[2]);
		return -EINVAL;
	}
	if (pattern_parse(w[3], &pr.r) != 0) {
		perr(ps, "pattern '%s': a topic name (" SL_NAME_RULE "), a prefix ending in "
			 "'*', or '*'", w[3]);
		return -EINVAL;
	}
	for (i = 0; i < ps->npr; i++)
		n += ps->pr[i].owner == pr.owner;
	if (n == SL_AUTH_MAX_RULES) {
		perr(ps, "more than %d allow lines for token '%s'", SL_AUTH_MAX_RULES, w[1]);
		return -E2BIG;
	}
	if (ps->npr == ps->cap) {
		uint32_t cap = ps->cap ? ps->cap * 2 : 64;
		struct prule *np = realloc(ps->pr, cap * sizeof(*np));

		if (np == NULL) {
			perr(ps, "out of memory");
			return -ENOMEM;
		}
		ps->pr = np;
		ps->cap = cap;
	}
	ps->pr[ps->npr++] = pr;
	return 0;
}

/* One line (modified in place). */
static int
parse_line(struct parser *ps, struct sl_auth_table *t, char *line)
{
	char *w[5], *save = NULL, *p = line + strspn(line, SPACE);
	int nw = 0;

	if (*p == '#')
		return 0;
	for (p = strtok_r(line, SPACE, &save); p != NULL; p = strtok_r(NULL, SPACE, &save)) {
		if (nw == 5) {
			perr(ps, "too many words");
			return -EINVAL;
		}
		w[nw++] = p;
	}
	if (nw == 0)
		return 0;
	if (strcmp(w[0], "token") == 0)
		return line_token(ps, t, w, nw);
	if (strcmp(w[0], "allow") == 0)
		return line_allow(ps, t, w, nw);
	perr(ps, "unknown keyword '%s' (token or allow; '#' starts a comment line)", w[0]);
	return -EINVAL;
}

/* Group the parsed rules by token into t->r; give every token its uid. */
static int
finish(struct parser *ps, struct sl_auth_table *t, const struct sl_auth_table *prev)
{
	uint32_t i, j, k = 0;

	t->nr = ps->npr;
	t->r = calloc(t->nr ? t->nr : 1, sizeof(*t->r));
	if (t->r == NULL) {
		perr(ps, "out of memory");
		return -ENOMEM;
	}
	for (i = 0; i < t->n; i++) {
		struct entry *e = &t->e[i];

		e->first = k;
		for (j = 0; j < ps->npr; j++)
			if (ps->pr[j].owner == i)
				t->r[k++] = ps->pr[j].r;
		e->nrules = k - e->first;
		e->uid = 0;
		for (j = 0; prev != NULL && j < prev->n; j++)
			if (memcmp(prev->e[j].hash, e->hash, SL_AUTH_HASH_LEN) == 0)
				e->uid = prev->e[j].uid;
		if (e->uid == 0)
			e->uid = t->next_uid++;
	}
	return 0;
}

struct sl_auth_table *
sl_auth_parse(FILE *f, const char *name, const struct sl_auth_table *prev, char *err,
	      size_t err_len)
{
	struct parser ps = {.file = name, .err = err, .err_len = err_len};
	struct sl_auth_table *t = NULL;
	char line[LINE_MAX_LEN];
	int rc = -ENOMEM;

	if (sodium_init() < 0) {
		perr(&ps, "libsodium cannot start");
		errno = EIO;
		return NULL;
	}
	t = calloc(1, sizeof(*t));
	if (t != NULL)
		t->e = calloc(SL_AUTH_MAX_TOKENS, sizeof(*t->e));
	if (t == NULL || t->e == NULL) {
		perr(&ps, "out of memory");
		goto fail;
	}
	t->gen = prev != NULL ? prev->gen + 1 : 1;
	t->next_uid = prev != NULL ? prev->next_uid : 1;
	while (fgets(line, sizeof(line), f) != NULL) {
		ps.line++;
		if (strchr(line, '\n') == NULL && !feof(f)) {
			perr(&ps, "line longer than %d bytes", LINE_MAX_LEN - 2);
			rc = -EINVAL;
			goto fail;
		}
		rc = parse_line(&ps, t, line);
		if (rc != 0)
			goto fail;
	}
	ps.line = 0;
	if (ferror(f)) {
		perr(&ps, "read error");
		rc = -EIO;
		goto fail;
	}
	if (t->n == 0) {
		perr(&ps, "no token in it: every client would be refused (a line "
			  "'token NAME SECRET', docs/operations.md)");
		rc = -EINVAL;
		goto fail;
	}
	rc = finish(&ps, t, prev);
	if (rc != 0)
		goto fail;
	sodium_memzero(line, sizeof(line));
	free(ps.pr);
	return t;
fail:
	sodium_memzero(line, sizeof(line));
	free(ps.pr);
	sl_auth_free(t);
	errno = -rc;
	return NULL;
}

struct sl_auth_table *
sl_auth_load(const char *path, const struct sl_auth_table *prev, char *err, size_t err_len)
{
	struct sl_auth_table *t;
	FILE *f;
	int fd, e;

	fd = sl_secfile_open(path, err, err_len);
	if (fd < 0) {
		errno = -fd;
		return NULL;
	}
	f = fdopen(fd, "r");
	if (f == NULL) {
		e = errno;
		snprintf(err, err_len, "%s: %s", path, strerror(e));
		close(fd);
		errno = e;
		return NULL;
	}
	t = sl_auth_parse(f, path, prev, err, err_len);
	e = errno;
	fclose(f);
	errno = e;
	return t;
}

void
sl_auth_free(struct sl_auth_table *t)
{
	if (t == NULL)
		return;
	if (t->e != NULL)
		sodium_memzero(t->e, SL_AUTH_MAX_TOKENS * sizeof(*t->e));
	free(t->e);
	free(t->r);
	free(t);
}

int
sl_auth_find(const struct sl_auth_table *t, const void *token, size_t len)
{
	uint8_t h[SL_AUTH_HASH_LEN];
	uint32_t i;
	int found = -1;

	sl_auth_hash(token, len, h);
	/* every entry is compared, each in constant time: the time says nothing of where
	 * (or whether) the token is */
	for (i = 0; i < t->n; i++)
		if (sodium_memcmp(t->e[i].hash, h, SL_AUTH_HASH_LEN) == 0)
			found = (int)i;
	return found;
}

int
sl_auth_by_uid(const struct sl_auth_table *t, uint32_t uid)
{
	uint32_t i;

	for (i = 0; i < t->n; i++)
		if (t->e[i].uid == uid)
			return (int)i;
	return -1;
}

uint32_t
sl_auth_rights(const struct sl_auth_table *t, uint32_t idx, const char *topic, size_t len)
{
	const struct entry *e;
	uint32_t i, m = 0;

	if (idx >= t->n)
		return 0;
	e = &t->e[idx];
	for (i = 0; i < e->nrules; i++) {
		const struct rule *r = &t->r[e->first + i];

		if (r->kind == PAT_ANY ||
		    (r->kind == PAT_PREFIX && len >= r->len &&
		     memcmp(topic, r->pat, r->len) == 0) ||
		    (r->kind == PAT_EXACT && len == r->len && memcmp(topic, r->pat, len) == 0))
			m |= r->rights;
	}
	return m;
}

uint32_t
sl_auth_gen(const struct sl_auth_table *t)
{
	return t->gen;
}

uint32_t
sl_auth_count(const struct sl_auth_table *t)
{
	return t->n;
}

uint32_t
sl_auth_uid(const struct sl_auth_table *t, uint32_t idx)
{
	return idx < t->n ? t->e[idx].uid : 0;
}

const char *
sl_auth_name(const struct sl_auth_table *t, uint32_t idx)
{
	return idx < t->n ? t->e[idx].name : "";
}

uint32_t
sl_auth_nrules(const struct sl_auth_table *t, uint32_t idx)
{
	return idx < t->n ? t->e[idx].nrules : 0;
}

void
sl_auth_rights_str(uint32_t rights, char *buf, size_t len)
{
	snprintf(buf, len, "%s%s%s%s%s%s", rights & SL_AUTH_PUB ? "pub" : "",
		 (rights & SL_AUTH_PUB) && (rights & (SL_AUTH_SUB | SL_AUTH_ADMIN)) ? "," : "",
		 rights & SL_AUTH_SUB ? "sub" : "",
		 (rights & SL_AUTH_SUB) && (rights & SL_AUTH_ADMIN) ? "," : "",
		 rights & SL_AUTH_ADMIN ? "admin" : "", rights == 0 ? "none" : "");
}

void
sl_auth_rule_str(const struct sl_auth_table *t, uint32_t idx, uint32_t r, char *buf,
		 size_t len)
{
	const struct rule *ru;
	char rights[32];

	if (idx >= t->n || r >= t->e[idx].nrules) {
		snprintf(buf, len, "?");
		return;
	}
	ru = &t->r[t->e[idx].first + r];
	sl_auth_rights_str(ru->rights, rights, sizeof(rights));
	snprintf(buf, len, "%s %.*s%s", rights, (int)ru->len, ru->pat,
		 ru->kind == PAT_EXACT ? "" : "*");
}
