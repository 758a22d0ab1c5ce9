/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * etcd: the etcd v3 JSON gateway client (etcd.h).
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>
#include <jansson.h>
#include <sodium.h>

#include <rte_common.h>
#include <rte_errno.h>
#include <rte_log.h>

#include "etcd.h"

RTE_LOG_REGISTER_SUFFIX(sl_etcd_logtype, etcd, INFO);
#define ELOG(level, fmt, ...) \
	rte_log(RTE_LOG_##level, sl_etcd_logtype, "etcd: " fmt "\n", ##__VA_ARGS__)

#define B64 sodium_base64_VARIANT_ORIGINAL
#define WATCH_RETRY_NS 100000000ull	/* a broken watch tries the next endpoint after this */

/* gRPC status codes the gateway reports in {"code": N} */
#define GRPC_INVALID_ARGUMENT 3
#define GRPC_DEADLINE_EXCEEDED 4
#define GRPC_NOT_FOUND 5
#define GRPC_OUT_OF_RANGE 11
#define GRPC_UNAVAILABLE 14

struct buf {
	char *p;
	size_t len;
	size_t cap;
	size_t max;
	int too_big;
};

struct sl_etcd {
	struct sl_etcd_conf conf;
	char ep[SL_ETCD_MAX_ENDPOINTS][SL_ETCD_ENDPOINT_MAX];
	int nep;
	int cur;			/* the endpoint that answered last */
	uint8_t down[SL_ETCD_MAX_ENDPOINTS];	/* the last call to it failed (logged once) */
	int refused;			/* the last call failed, every endpoint refused */
	CURL *h;
	struct curl_slist *hdrs;
	struct buf rx;
};

struct sl_etcd_watch {
	struct sl_etcd *e;
	char *key;
	size_t key_len;
	char *end;			/* range_end (NULL: one key) */
	size_t end_len;
	int64_t next_rev;		/* resume from here (0: from now) */
	int ep;				/* endpoint of the current stream */
	CURLM *multi;
	CURL *h;			/* NULL: between streams */
	char *body;			/* the create request of the current stream */
	uint64_t retry_ns;		/* earliest reconnect */
	int ready;
	int failing;			/* a stream ended and none delivered since (logged) */
	int err;			/* sticky: -ERANGE, -EMSGSIZE, -ENOMEM */
	struct buf line;		/* bytes of the stream not parsed yet */
	struct sl_etcd_event *q;	/* parsed events, q[qhead..qn) not handed out */
	size_t qhead, qn, qcap;
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static int curl_ok;

static void
curl_init_once(void)
{
	curl_ok = curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK;
}

static uint64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- buffers, base64, numbers ---- */

static size_t
buf_write(char *data, size_t size, size_t nmemb, void *arg)
{
	struct buf *b = arg;
	size_t n = size * nmemb;
	char *p;

	if (b->len + n + 1 > b->max) {
		b->too_big = 1;
		return 0;
	}
	if (b->len + n + 1 > b->cap) {
		size_t cap = RTE_MAX(b->cap * 2, b->len + n + 1);

		cap = RTE_MAX(cap, (size_t)4096);
		p = realloc(b->p, cap);
		if (p == NULL)
			return 0;
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, data, n);
	b->len += n;
	b->p[b->len] = '\0';
	return n;
}

static char *
b64_enc(const void *bin, size_t len)
{
	size_t n = sodium_base64_ENCODED_LEN(len, B64);
	char *s = malloc(n);

	if (s != NULL)
		sodium_bin2base64(s, n, bin, len, B64);
	return s;
}

/* Decode a base64 JSON string into a NUL-terminated copy. 0, -EINVAL or -ENOMEM. */
static int
b64_dec(const json_t *s, char **out, size_t *out_len)
{
	const char *in = s != NULL ? json_string_value(s) : "";
	size_t in_len, max, len = 0;
	char *p;

	if (in == NULL)
		return -EINVAL;
	in_len = strlen(in);
	max = in_len / 4 * 3 + 3;
	p = malloc(max + 1);
	if (p == NULL)
		return -ENOMEM;
	if (in_len > 0 && sodium_base642bin((unsigned char *)p, max, in, in_len, NULL, &len, NULL,
					    B64) != 0) {
		free(p);
		return -EINVAL;
	}
	p[len] = '\0';
	*out = p;
	*out_len = len;
	return 0;
}

/* A 64-bit field: the gateway writes them as strings, leaves out zeros. 0 or -EINVAL. */
static int
get_i64(const json_t *o, const char *name, int64_t *v)
{
	const json_t *f = json_object_get(o, name);
	const char *s;
	char *end;

	*v = 0;
	if (f == NULL)
		return 0;
	if (json_is_integer(f)) {
		*v = json_integer_value(f);
		return 0;
	}
	s = json_string_value(f);
	if (s == NULL || s[0] == '\0')
		return -EINVAL;
	errno = 0;
	*v = strtoll(s, &end, 10);
	return errno != 0 || *end != '\0' ? -EINVAL : 0;
}

static json_t *
i64_str(int64_t v)
{
	char s[24];

	snprintf(s, sizeof(s), "%lld", (long long)v);
	return json_string(s);
}

static json_t *
b64_json(const void *bin, size_t len)
{
	char *s = b64_enc(bin, len);
	json_t *j = s != NULL ? json_string(s) : NULL;

	free(s);
	return j;
}

/* The range_end of every key under prefix: the prefix with its last byte below 0xff
 * incremented (and what follows dropped); "\0" (every key from prefix on) if none is. */
static char *
prefix_end(const char *key, size_t len, size_t *end_len)
{
	char *p = malloc(len + 1);

	if (p == NULL)
		return NULL;
	memcpy(p, key, len);
	while (len > 0 && (unsigned char)p[len - 1] == 0xff)
		len--;
	if (len == 0) {
		p[0] = '\0';
		*end_len = 1;
		return p;
	}
	p[len - 1]++;
	*end_len = len;
	return p;
}

/* Add "key" (and "range_end" for a prefix) to o. 0 or -ENOMEM. */
static int
set_key(json_t *o, const char *key, int prefix)
{
	size_t len = strlen(key), end_len;
	char *end;
	int rc = json_object_set_new(o, "key", b64_json(key, len));

	if (rc == 0 && prefix) {
		end = prefix_end(key, len, &end_len);
		rc = end == NULL ? -1 : json_object_set_new(o, "range_end", b64_json(end, end_len));
		free(end);
	}
	return rc == 0 ? 0 : -ENOMEM;
}

/* ---- key-values ---- */

static void
kv_free(struct sl_etcd_kv *kv)
{
	free(kv->key);
	free(kv->value);
	memset(kv, 0, sizeof(*kv));
}

static int
kv_parse(const json_t *o, struct sl_etcd_kv *kv)
{
	int rc;

	memset(kv, 0, sizeof(*kv));
	if (!json_is_object(o) || json_object_get(o, "key") == NULL)
		return -EINVAL;
	rc = b64_dec(json_object_get(o, "key"), &kv->key, &kv->key_len);
	if (rc == 0)
		rc = b64_dec(json_object_get(o, "value"), &kv->value, &kv->value_len);
	if (rc == 0 && (get_i64(o, "create_revision", &kv->create_revision) != 0 ||
			get_i64(o, "mod_revision", &kv->mod_revision) != 0 ||
			get_i64(o, "version", &kv->version) != 0 ||
			get_i64(o, "lease", &kv->lease) != 0))
		rc = -EINVAL;
	if (rc != 0)
		kv_free(kv);
	return rc;
}

void
sl_etcd_kvs_free(struct sl_etcd_kvs *kvs)
{
	size_t i;

	for (i = 0; kvs->kv != NULL && i < kvs->n; i++)
		kv_free(&kvs->kv[i]);
	free(kvs->kv);
	memset(kvs, 0, sizeof(*kvs));
}

void
sl_etcd_event_free(struct sl_etcd_event *ev)
{
	kv_free(&ev->kv);
}

/* A range response (also one inside a txn): kvs, more, header.revision. */
static int
kvs_parse(const json_t *r, struct sl_etcd_kvs *out)
{
	const json_t *arr = json_object_get(r, "kvs"), *more = json_object_get(r, "more");
	size_t i, n = json_array_size(arr);
	int rc = 0;

	memset(out, 0, sizeof(*out));
	if (arr != NULL && !json_is_array(arr))
		return -EINVAL;
	if (get_i64(json_object_get(r, "header"), "revision", &out->revision) != 0)
		return -EINVAL;
	out->more = json_is_true(more);
	if (n == 0)
		return 0;
	out->kv = calloc(n, sizeof(*out->kv));
	if (out->kv == NULL)
		return -ENOMEM;
	for (i = 0; i < n && rc == 0; i++) {
		rc = kv_parse(json_array_get(arr, i), &out->kv[i]);
		if (rc == 0)
			out->n++;
	}
	if (rc != 0)
		sl_etcd_kvs_free(out);
	return rc;
}

/* ---- handle and requests ---- */

static int
parse_endpoints(struct sl_etcd *e, const char *list)
{
	const char *p = list, *comma;
	size_t len;

	while (p != NULL && *p != '\0') {
		const char *host;

		comma = strchr(p, ',');
		len = comma != NULL ? (size_t)(comma - p) : strlen(p);
		if (e->nep == SL_ETCD_MAX_ENDPOINTS || len >= SL_ETCD_ENDPOINT_MAX)
			return -EINVAL;
		memcpy(e->ep[e->nep], p, len);
		e->ep[e->nep][len] = '\0';
		while (len > 0 && e->ep[e->nep][len - 1] == '/')
			e->ep[e->nep][--len] = '\0';
		if (strncmp(e->ep[e->nep], "http://", 7) == 0)
			host = e->ep[e->nep] + 7;
		else if (strncmp(e->ep[e->nep], "https://", 8) == 0)
			host = e->ep[e->nep] + 8;
		else
			return -EINVAL;
		if (*host == '\0' || *host == ':' || strpbrk(host, " \t/?#@") != NULL)
			return -EINVAL;
		e->nep++;
		p = comma != NULL ? comma + 1 : NULL;
	}
	return e->nep > 0 ? 0 : -EINVAL;
}

struct sl_etcd *
sl_etcd_open(const struct sl_etcd_conf *conf)
{
	struct sl_etcd *e = NULL;
	int rc = -EINVAL;

	if (conf == NULL || conf->endpoints == NULL)
		goto out;
	pthread_once(&curl_once, curl_init_once);
	rc = -ENOMEM;
	if (!curl_ok || sodium_init() < 0)
		goto out;
	e = calloc(1, sizeof(*e));
	if (e == NULL)
		goto out;
	e->conf = *conf;
	if (e->conf.connect_timeout_ms == 0)
		e->conf.connect_timeout_ms = SL_ETCD_CONNECT_TIMEOUT_MS;
	if (e->conf.request_timeout_ms == 0)
		e->conf.request_timeout_ms = SL_ETCD_REQUEST_TIMEOUT_MS;
	if (e->conf.max_response == 0)
		e->conf.max_response = SL_ETCD_MAX_RESPONSE;
	e->conf.endpoints = NULL;	/* not kept: the caller's string */
	rc = parse_endpoints(e, conf->endpoints);
	if (rc != 0) {
		ELOG(ERR, "bad endpoint list '%s': http://HOST:PORT, comma separated, at most %d",
		     conf->endpoints, SL_ETCD_MAX_ENDPOINTS);
		goto out;
	}
	rc = -ENOMEM;
	e->h = curl_easy_init();
	e->hdrs = curl_slist_append(NULL, "Content-Type: application/json");
	if (e->h == NULL || e->hdrs == NULL)
		goto out;
	e->rx.max = e->conf.max_response;
	rc = 0;
out:
	if (rc != 0) {
		sl_etcd_close(e);
		rte_errno = -rc;
		errno = -rc;
		return NULL;
	}
	return e;
}

void
sl_etcd_close(struct sl_etcd *e)
{
	if (e == NULL)
		return;
	if (e->h != NULL)
		curl_easy_cleanup(e->h);
	curl_slist_free_all(e->hdrs);
	free(e->rx.p);
	free(e);
}

const char *
sl_etcd_endpoint(const struct sl_etcd *e)
{
	return e->ep[e->cur];
}

int
sl_etcd_refused(const struct sl_etcd *e)
{
	return e->refused;
}

static int
grpc_errno(int code)
{
	switch (code) {
	case GRPC_INVALID_ARGUMENT:
		return -EINVAL;
	case GRPC_DEADLINE_EXCEEDED:
		return -ETIMEDOUT;
	case GRPC_NOT_FOUND:
		return -ENOENT;
	case GRPC_OUT_OF_RANGE:
		return -ERANGE;
	case GRPC_UNAVAILABLE:
		return -ENOTCONN;
	default:
		return -EIO;
	}
}

/*
 * POST req (consumed) to path on the current endpoint, moving along the list while one
 * cannot be reached. *resp: the parsed answer (an object with a header, or for keepalive a
 * "result" holding one). 0 or a negative errno.
 */
static int
post(struct sl_etcd *e, const char *path, json_t *req, json_t **resp)
{
	char url[SL_ETCD_ENDPOINT_MAX + 32], *body = NULL;
	json_t *j = NULL;
	int rc = -ENOMEM, tries, idx = e->cur, refused = 0;

	*resp = NULL;
	e->refused = 0;
	if (req != NULL)
		body = json_dumps(req, JSON_COMPACT);
	json_decref(req);
	if (body == NULL)
		goto out;
	for (tries = 0; tries < e->nep; tries++) {
		const json_t *hdr;
		CURLcode cc;
		long status = 0;
		json_error_t jerr;

		idx = (e->cur + tries) % e->nep;
		snprintf(url, sizeof(url), "%s%s", e->ep[idx], path);
		e->rx.len = 0;
		e->rx.too_big = 0;
		curl_easy_reset(e->h);
		curl_easy_setopt(e->h, CURLOPT_URL, url);
		curl_easy_setopt(e->h, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(e->h, CURLOPT_HTTPHEADER, e->hdrs);
		curl_easy_setopt(e->h, CURLOPT_WRITEFUNCTION, buf_write);
		curl_easy_setopt(e->h, CURLOPT_WRITEDATA, &e->rx);
		curl_easy_setopt(e->h, CURLOPT_CONNECTTIMEOUT_MS, (long)e->conf.connect_timeout_ms);
		curl_easy_setopt(e->h, CURLOPT_TIMEOUT_MS, (long)e->conf.request_timeout_ms);
		curl_easy_setopt(e->h, CURLOPT_NOSIGNAL, 1L);
		curl_easy_setopt(e->h, CURLOPT_PROTOCOLS_STR, "http,https");
		cc = curl_easy_perform(e->h);
		if (cc == CURLE_WRITE_ERROR && e->rx.too_big) {
			ELOG(ERR, "%s: answer larger than %zu bytes", url, e->conf.max_response);
			rc = -EMSGSIZE;
			goto out;
		}
		if (cc != CURLE_OK) {
			/* once per endpoint going down, not once per call */
			rte_log(e->down[idx] ? RTE_LOG_DEBUG : RTE_LOG_WARNING, sl_etcd_logtype,
				"etcd: %s: %s\n", url, curl_easy_strerror(cc));
			e->down[idx] = 1;
			refused += cc == CURLE_COULDNT_CONNECT;
			rc = -ENOTCONN;
			continue;
		}
		if (e->down[idx]) {
			ELOG(NOTICE, "%s answers again", e->ep[idx]);
			e->down[idx] = 0;
		}
		curl_easy_getinfo(e->h, CURLINFO_RESPONSE_CODE, &status);
		j = json_loadb(e->rx.p != NULL ? e->rx.p : "", e->rx.len, 0, &jerr);
		if (!json_is_object(j)) {
			ELOG(ERR, "%s: HTTP %ld, not a JSON object: %s", url, status, jerr.text);
			rc = status == 503 ? -ENOTCONN : -EINVAL;
			json_decref(j);
			j = NULL;
			if (rc == -ENOTCONN)
				continue;
			goto out;
		}
		if (status != 200 || json_object_get(j, "error") != NULL) {
			json_int_t code = json_integer_value(json_object_get(j, "code"));
			const char *msg = json_string_value(json_object_get(j, "message"));

			rc = grpc_errno((int)code);
			rte_log(rc == -ENOTCONN ? RTE_LOG_WARNING : RTE_LOG_DEBUG, sl_etcd_logtype,
				"etcd: %s: HTTP %ld, code %d: %s\n", url, status, (int)code,
				msg != NULL ? msg : "?");
			json_decref(j);
			j = NULL;
			if (rc == -ENOTCONN)
				continue;
			goto out;
		}
		hdr = json_object_get(j, "header");
		if (hdr == NULL && json_is_object(json_object_get(j, "result")))
			hdr = json_object_get(json_object_get(j, "result"), "header");
		if (!json_is_object(hdr) || json_object_get(hdr, "revision") == NULL) {
			ELOG(ERR, "%s: answer without a header revision", url);
			rc = -EINVAL;
			goto out;
		}
		rc = 0;
		break;
	}
	if (rc == 0 && idx != e->cur) {
		ELOG(NOTICE, "now talking to %s", e->ep[idx]);
		e->cur = idx;
	}
out:
	e->refused = rc == -ENOTCONN && refused == e->nep;
	free(body);
	if (rc == 0)
		*resp = j;
	else
		json_decref(j);
	return rc;
}

int
sl_etcd_range(struct sl_etcd *e, const char *key, int prefix, int64_t limit,
	      struct sl_etcd_kvs *out)
{
	json_t *req = json_object(), *r = NULL;
	int rc;

	memset(out, 0, sizeof(*out));
	if (req == NULL || key == NULL || limit < 0) {
		json_decref(req);
		return req == NULL ? -ENOMEM : -EINVAL;
	}
	rc = set_key(req, key, prefix);
	if (rc == 0 && limit > 0 && json_object_set_new(req, "limit", i64_str(limit)) != 0)
		rc = -ENOMEM;
	if (rc != 0) {
		json_decref(req);
		return rc;
	}
	rc = post(e, "/v3/kv/range", req, &r);
	if (rc == 0)
		rc = kvs_parse(r, out);
	json_decref(r);
	return rc;
}

int
sl_etcd_put(struct sl_etcd *e, const char *key, const void *value, size_t value_len,
	    int64_t lease, int64_t *rev)
{
	json_t *req = json_object(), *r = NULL;
	int64_t v;
	int rc;

	if (req == NULL || key == NULL || (value == NULL && value_len > 0)) {
		json_decref(req);
		return req == NULL ? -ENOMEM : -EINVAL;
	}
	rc = set_key(req, key, 0);
	if (rc == 0 && (json_object_set_new(req, "value", b64_json(value, value_len)) != 0 ||
			(lease != 0 && json_object_set_new(req, "lease", i64_str(lease)) != 0)))
		rc = -ENOMEM;
	if (rc != 0) {
		json_decref(req);
		return rc;
	}
	rc = post(e, "/v3/kv/put", req, &r);
	if (rc == 0 && get_i64(json_object_get(r, "header"), "revision", &v) != 0)
		rc = -EINVAL;
	if (rc == 0 && rev != NULL)
		*rev = v;
	json_decref(r);
	return rc;
}

int
sl_etcd_delete(struct sl_etcd *e, const char *key, int prefix, int64_t *deleted)
{
	json_t *req = json_object(), *r = NULL;
	int64_t v;
	int rc;

	if (req == NULL || key == NULL) {
		json_decref(req);
		return req == NULL ? -ENOMEM : -EINVAL;
	}
	rc = set_key(req, key, prefix);
	if (rc != 0) {
		json_decref(req);
		return rc;
	}
	rc = post(e, "/v3/kv/deleterange", req, &r);
	if (rc == 0 && get_i64(r, "deleted", &v) != 0)
		rc = -EINVAL;
	if (rc == 0 && deleted != NULL)
		*deleted = v;
	json_decref(r);
	return rc;
}

static json_t *
cmp_json(const struct sl_etcd_cmp *c)
{
	static const char *const targets[] = {"VERSION", "CREATE", "MOD", "VALUE"};
	static const char *const fields[] = {"version", "create_revision", "mod_revision"};
	static const char *const results[] = {"EQUAL", "GREATER", "LESS", "NOT_EQUAL"};
	json_t *o = json_object();

	if (o == NULL || c->key == NULL || (unsigned int)c->target > SL_ETCD_CMP_VALUE ||
	    (unsigned int)c->result > SL_ETCD_NOT_EQUAL ||
	    (c->target == SL_ETCD_CMP_VALUE && c->value == NULL && c->value_len > 0))
		goto fail;
	if (set_key(o, c->key, 0) != 0 ||
	    json_object_set_new(o, "target", json_string(targets[c->target])) != 0 ||
	    json_object_set_new(o, "result", json_string(results[c->result])) != 0)
		goto fail;
	if (c->target == SL_ETCD_CMP_VALUE) {
		if (json_object_set_new(o, "value", b64_json(c->value, c->value_len)) != 0)
			goto fail;
	} else if (json_object_set_new(o, fields[c->target], i64_str(c->num)) != 0) {
		goto fail;
	}
	return o;
fail:
	json_decref(o);
	return NULL;
}

static json_t *
op_json(const struct sl_etcd_op *op)
{
	json_t *o = json_object(), *inner = json_object();
	const char *name;

	if (o == NULL || inner == NULL || op->key == NULL)
		goto fail;
	switch (op->kind) {
	case SL_ETCD_OP_PUT:
		name = "request_put";
		if (set_key(inner, op->key, 0) != 0 || (op->value == NULL && op->value_len > 0) ||
		    json_object_set_new(inner, "value", b64_json(op->value, op->value_len)) != 0 ||
		    (op->lease != 0 &&
		     json_object_set_new(inner, "lease", i64_str(op->lease)) != 0))
			goto fail;
		break;
	case SL_ETCD_OP_DELETE:
		name = "request_delete_range";
		if (set_key(inner, op->key, op->prefix) != 0)
			goto fail;
		break;
	case SL_ETCD_OP_GET:
		name = "request_range";
		if (set_key(inner, op->key, op->prefix) != 0)
			goto fail;
		break;
	default:
		goto fail;
	}
	if (json_object_set_new(o, name, inner) != 0) {
		inner = NULL;
		goto fail;
	}
	return o;
fail:
	json_decref(inner);
	json_decref(o);
	return NULL;
}

static int
ops_json(json_t *req, const char *name, const struct sl_etcd_op *ops, size_t n)
{
	json_t *arr = json_array();
	size_t i;

	if (arr == NULL || json_object_set_new(req, name, arr) != 0)
		return -ENOMEM;
	for (i = 0; i < n; i++)
		if (json_array_append_new(arr, op_json(&ops[i])) != 0)
			return -EINVAL;
	return 0;
}

int
sl_etcd_txn(struct sl_etcd *e, const struct sl_etcd_cmp *cmp, size_t ncmp,
	    const struct sl_etcd_op *success, size_t nsuccess,
	    const struct sl_etcd_op *failure, size_t nfailure, int64_t *rev,
	    struct sl_etcd_kvs *got)
{
	json_t *req = json_object(), *arr = json_array(), *r = NULL, *resps;
	int64_t v;
	size_t i;
	int rc = -ENOMEM, ok;

	if (got != NULL)
		memset(got, 0, sizeof(*got));
	if (req == NULL || arr == NULL || json_object_set_new(req, "compare", arr) != 0) {
		json_decref(req);
		return -ENOMEM;
	}
	for (i = 0; i < ncmp; i++)
		if (json_array_append_new(arr, cmp_json(&cmp[i])) != 0)
			goto bad;
	if (ops_json(req, "success", success, nsuccess) != 0 ||
	    ops_json(req, "failure", failure, nfailure) != 0)
		goto bad;
	rc = post(e, "/v3/kv/txn", req, &r);
	if (rc != 0)
		return rc;
	ok = json_is_true(json_object_get(r, "succeeded"));
	resps = json_object_get(r, "responses");
	if (get_i64(json_object_get(r, "header"), "revision", &v) != 0 ||
	    (resps != NULL && !json_is_array(resps))) {
		rc = -EINVAL;
		goto out;
	}
	if (rev != NULL)
		*rev = v;
	rc = ok;
	for (i = 0; got != NULL && i < json_array_size(resps); i++) {
		const json_t *rr = json_object_get(json_array_get(resps, i), "response_range");
		int prc;

		if (rr == NULL)
			continue;
		prc = kvs_parse(rr, got);
		if (prc != 0)
			rc = prc;
		break;
	}
out:
	json_decref(r);
	return rc;
bad:
	json_decref(req);
	return -EINVAL;
}

int
sl_etcd_lease_grant(struct sl_etcd *e, int64_t ttl_s, int64_t *id, int64_t *granted)
{
	json_t *req = json_object(), *r = NULL;
	int64_t v, ttl;
	int rc;

	if (req == NULL || ttl_s <= 0 || json_object_set_new(req, "TTL", i64_str(ttl_s)) != 0) {
		json_decref(req);
		return ttl_s <= 0 ? -EINVAL : -ENOMEM;
	}
	rc = post(e, "/v3/lease/grant", req, &r);
	if (rc == 0 && (get_i64(r, "ID", &v) != 0 || get_i64(r, "TTL", &ttl) != 0 || v == 0))
		rc = -EINVAL;
	if (rc == 0) {
		*id = v;
		if (granted != NULL)
			*granted = ttl;
	}
	json_decref(r);
	return rc;
}

int
sl_etcd_lease_keepalive(struct sl_etcd *e, int64_t id, int64_t *ttl)
{
	json_t *req = json_object(), *r = NULL, *res;
	int64_t v;
	int rc;

	if (req == NULL || json_object_set_new(req, "ID", i64_str(id)) != 0) {
		json_decref(req);
		return -ENOMEM;
	}
	rc = post(e, "/v3/lease/keepalive", req, &r);
	res = json_object_get(r, "result");
	if (rc == 0 && (!json_is_object(res) || get_i64(res, "TTL", &v) != 0))
		rc = -EINVAL;
	if (rc == 0 && v <= 0)
		rc = -ENOENT;		/* an expired lease answers with no TTL */
	if (rc == 0 && ttl != NULL)
		*ttl = v;
	json_decref(r);
	return rc;
}

int
sl_etcd_lease_revoke(struct sl_etcd *e, int64_t id)
{
	json_t *req = json_object(), *r = NULL;
	int rc;

	if (req == NULL || json_object_set_new(req, "ID", i64_str(id)) != 0) {
		json_decref(req);
		return -ENOMEM;
	}
	rc = post(e, "/v3/lease/revoke", req, &r);
	json_decref(r);
	return rc;
}

/* ---- watch ---- */

static size_t
watch_write(char *data, size_t size, size_t nmemb, void *arg)
{
	struct sl_etcd_watch *w = arg;

	return buf_write(data, size, nmemb, &w->line);
}

static void
watch_drop_stream(struct sl_etcd_watch *w)
{
	if (w->h != NULL) {
		curl_multi_remove_handle(w->multi, w->h);
		curl_easy_cleanup(w->h);
		w->h = NULL;
	}
	free(w->body);
	w->body = NULL;
	w->line.len = 0;
	w->line.too_big = 0;
	w->ready = 0;
}

/* Start a stream on endpoint w->ep from w->next_rev. 0 or -ENOMEM. */
static int
watch_connect(struct sl_etcd_watch *w)
{
	const struct sl_etcd *e = w->e;
	char url[SL_ETCD_ENDPOINT_MAX + 32];
	json_t *req = json_object(), *cr = json_object();
	int rc = -ENOMEM;

	if (req == NULL || cr == NULL || json_object_set_new(req, "create_request", cr) != 0) {
		json_decref(cr);
		goto out;
	}
	if (json_object_set_new(cr, "key", b64_json(w->key, w->key_len)) != 0 ||
	    (w->end != NULL &&
	     json_object_set_new(cr, "range_end", b64_json(w->end, w->end_len)) != 0) ||
	    (w->next_rev > 0 &&
	     json_object_set_new(cr, "start_revision", i64_str(w->next_rev)) != 0))
		goto out;
	w->body = json_dumps(req, JSON_COMPACT);
	w->h = curl_easy_init();
	if (w->body == NULL || w->h == NULL)
		goto out;
	snprintf(url, sizeof(url), "%s/v3/watch", e->ep[w->ep]);
	curl_easy_setopt(w->h, CURLOPT_URL, url);
	curl_easy_setopt(w->h, CURLOPT_POSTFIELDS, w->body);
	curl_easy_setopt(w->h, CURLOPT_HTTPHEADER, e->hdrs);
	curl_easy_setopt(w->h, CURLOPT_WRITEFUNCTION, watch_write);
	curl_easy_setopt(w->h, CURLOPT_WRITEDATA, w);
	curl_easy_setopt(w->h, CURLOPT_CONNECTTIMEOUT_MS, (long)e->conf.connect_timeout_ms);
	curl_easy_setopt(w->h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(w->h, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(w->h, CURLOPT_TCP_KEEPIDLE, 2L);
	curl_easy_setopt(w->h, CURLOPT_TCP_KEEPINTVL, 1L);
	curl_easy_setopt(w->h, CURLOPT_PROTOCOLS_STR, "http,https");
	if (curl_multi_add_handle(w->multi, w->h) != CURLM_OK)
		goto out;
	rc = 0;
out:
	json_decref(req);
	if (rc != 0)
		watch_drop_stream(w);
	return rc;
}

static int
queue_event(struct sl_etcd_watch *w, const json_t *jev)
{
	struct sl_etcd_event *ev;
	const char *type = json_string_value(json_object_get(jev, "type"));
	int rc;

	if (w->qhead > 0 && w->qhead == w->qn)
		w->qhead = w->qn = 0;
	if (w->qn == w->qcap) {
		size_t cap = w->qcap != 0 ? w->qcap * 2 : 16;
		struct sl_etcd_event *q = realloc(w->q, cap * sizeof(*q));

		if (q == NULL)
			return -ENOMEM;
		w->q = q;
		w->qcap = cap;
	}
	ev = &w->q[w->qn];
	ev->type = type != NULL && strcmp(type, "DELETE") == 0 ? SL_ETCD_EV_DELETE :
								  SL_ETCD_EV_PUT;
	rc = kv_parse(json_object_get(jev, "kv"), &ev->kv);
	if (rc != 0)
		return rc;
	/* a stream starts at next_rev, and one revision's events come in one answer: a
	 * reconnect neither repeats nor skips one */
	w->next_rev = ev->kv.mod_revision + 1;
	w->qn++;
	return 0;
}

/* One line of the stream. 0, a negative errno to report, or 1: the stream is unusable. */
static int
watch_line(struct sl_etcd_watch *w, const char *s, size_t len)
{
	json_error_t jerr;
	json_t *j = json_loadb(s, len, 0, &jerr), *res, *evs;
	int64_t rev, compact;
	size_t i;
	int rc = 0;

	res = json_object_get(j, "result");
	if (!json_is_object(res)) {
		ELOG(WARNING, "watch on %s: %s", w->e->ep[w->ep],
		     j != NULL ? "error from the gateway" : jerr.text);
		json_decref(j);
		return 1;
	}
	if (get_i64(json_object_get(res, "header"), "revision", &rev) != 0 ||
	    get_i64(res, "compact_revision", &compact) != 0) {
		rc = 1;
		goto out;
	}
	if (json_is_true(json_object_get(res, "canceled")) || compact != 0) {
		ELOG(WARNING, "watch from revision %lld cancelled by etcd (compacted at %lld)",
		     (long long)w->next_rev, (long long)compact);
		rc = -ERANGE;
		goto out;
	}
	if (json_is_true(json_object_get(res, "created"))) {
		w->ready = 1;
		w->failing = 0;
		if (w->next_rev == 0)
			w->next_rev = rev + 1;
	}
	evs = json_object_get(res, "events");
	for (i = 0; i < json_array_size(evs) && rc == 0; i++)
		rc = queue_event(w, json_array_get(evs, i));
	if (rc == -EINVAL)
		rc = 1;
out:
	json_decref(j);
	return rc;
}

/* Parse every complete line received. */
static int
watch_parse(struct sl_etcd_watch *w)
{
	size_t start = 0;
	char *nl;
	int rc = 0;

	while (rc == 0 && start < w->line.len &&
	       (nl = memchr(w->line.p + start, '\n', w->line.len - start)) != NULL) {
		size_t len = (size_t)(nl - (w->line.p + start));

		if (len > 0)
			rc = watch_line(w, w->line.p + start, len);
		start += len + 1;
	}
	if (rc == 0 && start > 0) {
		memmove(w->line.p, w->line.p + start, w->line.len - start);
		w->line.len -= start;
	}
	return rc;
}

struct sl_etcd_watch *
sl_etcd_watch_open(struct sl_etcd *e, const char *key, int prefix, int64_t start_rev)
{
	struct sl_etcd_watch *w = NULL;
	int rc = -EINVAL;

	if (e == NULL || key == NULL || start_rev < 0)
		goto out;
	rc = -ENOMEM;
	w = calloc(1, sizeof(*w));
	if (w == NULL)
		goto out;
	w->e = e;
	w->key_len = strlen(key);
	w->key = strdup(key);
	w->multi = curl_multi_init();
	if (w->key == NULL || w->multi == NULL)
		goto out;
	if (prefix) {
		w->end = prefix_end(key, w->key_len, &w->end_len);
		if (w->end == NULL)
			goto out;
	}
	w->next_rev = start_rev;
	w->ep = e->cur;
	w->line.max = e->conf.max_response;
	rc = watch_connect(w);
out:
	if (rc != 0) {
		sl_etcd_watch_close(w);
		rte_errno = -rc;
		errno = -rc;
		return NULL;
	}
	return w;
}

int
sl_etcd_watch_poll(struct sl_etcd_watch *w, struct sl_etcd_event *ev)
{
	CURLMsg *msg;
	int running, left, rc;

	if (w->qhead < w->qn)
		goto take;
	if (w->err != 0)
		return w->err;
	if (w->h == NULL) {
		if (now_ns() < w->retry_ns)
			return 0;
		if (watch_connect(w) != 0)
			return -ENOMEM;
	}
	curl_multi_perform(w->multi, &running);
	rc = watch_parse(w);
	if (rc < 0) {
		w->err = rc;
		watch_drop_stream(w);
	} else if (rc > 0 || w->line.too_big) {
		if (w->line.too_big) {
			ELOG(ERR, "watch: a line longer than %zu bytes", w->line.max);
			w->err = -EMSGSIZE;
		}
		goto broken;
	}
	while (w->h != NULL && (msg = curl_multi_info_read(w->multi, &left)) != NULL) {
		if (msg->msg != CURLMSG_DONE)
			continue;
		/* once per outage: a stream that cannot open is retried every 100 ms */
		rte_log(w->failing ? RTE_LOG_DEBUG : RTE_LOG_WARNING, sl_etcd_logtype,
			"etcd: watch on %s ended: %s\n", w->e->ep[w->ep],
			curl_easy_strerror(msg->data.result));
		w->failing = 1;
		goto broken;
	}
	goto take;
broken:
	watch_drop_stream(w);
	w->ep = (w->ep + 1) % w->e->nep;
	w->retry_ns = now_ns() + WATCH_RETRY_NS;
take:
	if (w->qhead < w->qn) {
		*ev = w->q[w->qhead++];
		return 1;
	}
	return w->err;
}

int
sl_etcd_watch_wait_fd(struct sl_etcd_watch *w, int fd, int timeout_ms)
{
	struct curl_waitfd extra = { .fd = fd, .events = CURL_WAIT_POLLIN };

	if (w->qhead < w->qn || w->err != 0)
		return 0;
	if (w->h == NULL) {
		uint64_t now = now_ns();
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		struct timespec ts;

		if (now >= w->retry_ns)
			return 0;
		ts.tv_sec = 0;
		ts.tv_nsec = (long)RTE_MIN(w->retry_ns - now, (uint64_t)timeout_ms * 1000000ull);
		if (fd >= 0)
			poll(&pfd, 1, (int)(ts.tv_nsec / 1000000));
		else
			nanosleep(&ts, NULL);
		return 0;
	}
	return curl_multi_poll(w->multi, fd >= 0 ? &extra : NULL, fd >= 0 ? 1 : 0, timeout_ms,
			       NULL) == CURLM_OK ? 0 : -EIO;
}

int
sl_etcd_watch_wait(struct sl_etcd_watch *w, int timeout_ms)
{
	return sl_etcd_watch_wait_fd(w, -1, timeout_ms);
}

int
sl_etcd_watch_ready(const struct sl_etcd_watch *w)
{
	return w->ready;
}

int64_t
sl_etcd_watch_next_rev(const struct sl_etcd_watch *w)
{
	return w->next_rev;
}

void
sl_etcd_watch_close(struct sl_etcd_watch *w)
{
	if (w == NULL)
		return;
	watch_drop_stream(w);
	while (w->qhead < w->qn)
		kv_free(&w->q[w->qhead++].kv);
	free(w->q);
	if (w->multi != NULL)
		curl_multi_cleanup(w->multi);
	free(w->line.p);
	free(w->key);
	free(w->end);
	free(w);
}
