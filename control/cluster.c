/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

#include "cluster.h"
#include "name.h"
#include "secfile.h"

int
sl_cluster_parse_ids(const char *s, uint32_t *ids, int max)
{
	int n = 0;

	while (*s != '\0') {
		char *end;
		unsigned long v;

		errno = 0;
		v = strtoul(s, &end, 10);
		if (errno != 0 || end == s || v == 0 || v > UINT32_MAX || n == max)
			return -EINVAL;
		ids[n++] = (uint32_t)v;
		if (*end == ',')
			end++;
		else if (*end != '\0')
			return -EINVAL;
		s = end;
	}
	return n > 0 ? n : -EINVAL;
}

int
sl_cluster_has(const uint32_t *ids, int n, uint32_t id)
{
	int i;

	for (i = 0; i < n; i++)
		if (ids[i] == id)
			return 1;
	return 0;
}

int
sl_cluster_check_meta(const struct sl_part_meta *m, char *err, size_t err_len)
{
	int i;

	if (m->nreplicas == 0) {
		snprintf(err, err_len, "no replicas");
		return -EINVAL;
	}
	for (i = 0; i < m->nreplicas; i++) {
		if (sl_cluster_has(m->replicas, i, m->replicas[i])) {
			snprintf(err, err_len, "replica %u listed twice", m->replicas[i]);
			return -EINVAL;
		}
	}
	for (i = 0; i < m->nisr; i++) {
		if (!sl_cluster_has(m->replicas, m->nreplicas, m->isr[i]) ||
		    sl_cluster_has(m->isr, i, m->isr[i])) {
			snprintf(err, err_len, "ISR member %u is not a replica, or listed twice",
				 m->isr[i]);
			return -EINVAL;
		}
	}
	if (!sl_cluster_has(m->replicas, m->nreplicas, m->leader)) {
		snprintf(err, err_len, "leader %u is not a replica", m->leader);
		return -EINVAL;
	}
	if (!sl_cluster_has(m->isr, m->nisr, m->leader)) {
		snprintf(err, err_len, "leader %u is not in the ISR", m->leader);
		return -EINVAL;
	}
	if (m->epoch == 0) {
		snprintf(err, err_len, "epoch must be >= 1");
		return -EINVAL;
	}
	return 0;
}

const struct sl_cluster_node *
sl_cluster_node(const struct sl_cluster *c, uint32_t id)
{
	uint32_t i;

	for (i = 0; i < c->nnodes; i++)
		if (c->nodes[i].id == id)
			return &c->nodes[i];
	return NULL;
}

static int
parse_u64(const char *s, uint64_t lo, uint64_t hi, uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi || s[0] == '-')
		return -1;
	*out = v;
	return 0;
}

static int
parse_node(struct sl_cluster *c, char **tok, int ntok, char *why, size_t wl)
{
	struct sl_cluster_node *n;
	struct in_addr a;
	uint64_t v;

	if (ntok < 3 || ntok > 4) {
		snprintf(why, wl, "expected: node <id> <ipv4> [replica-udp-port]");
		return -EINVAL;
	}
	if (c->nnodes == SL_CLUSTER_MAX_NODES) {
		snprintf(why, wl, "more than %d nodes", SL_CLUSTER_MAX_NODES);
		return -EINVAL;
	}
	n = &c->nodes[c->nnodes];
	if (parse_u64(tok[1], 1, UINT32_MAX, &v) != 0) {
		snprintf(why, wl, "bad node id '%s'", tok[1]);
		return -EINVAL;
	}
	if (sl_cluster_node(c, (uint32_t)v) != NULL) {
		snprintf(why, wl, "node %s declared twice", tok[1]);
		return -EINVAL;
	}
	n->id = (uint32_t)v;
	if (inet_pton(AF_INET, tok[2], &a) != 1) {
		snprintf(why, wl, "bad IPv4 address '%s'", tok[2]);
		return -EINVAL;
	}
	n->ip = ntohl(a.s_addr);
	n->port = SL_CLUSTER_REPL_PORT;
	if (ntok == 4) {
		if (parse_u64(tok[3], 1, 65535, &v) != 0) {
			snprintf(why, wl, "bad port '%s'", tok[3]);
			return -EINVAL;
		}
		n->port = (uint16_t)v;
	}
	c->nnodes++;
	return 0;
}

static int
ids_known(const struct sl_cluster *c, const uint32_t *ids, int n, char *why, size_t wl)
{
	int i;

	for (i = 0; i < n; i++) {
		if (sl_cluster_node(c, ids[i]) == NULL) {
			snprintf(why, wl, "node %u is not declared (node lines come first)", ids[i]);
			return -EINVAL;
		}
	}
	return 0;
}

static int
parse_part(struct sl_cluster *c, char **tok, int ntok, char *why, size_t wl)
{
	struct sl_cluster_part *p;
	struct sl_part_meta *m;
	uint32_t ids[SL_COORD_MAX_REPLICAS];
	int i, n, have_r = 0, have_l = 0, have_i = 0;
	uint64_t v;

	if (ntok < 6) {
		snprintf(why, wl, "expected: partition <topic> <n> replicas=.. leader=.. isr=..");
		return -EINVAL;
	}
	if (c->nparts == SL_CLUSTER_MAX_PARTS) {
		snprintf(why, wl, "more than %d partition lines", SL_CLUSTER_MAX_PARTS);
		return -EINVAL;
	}
	p = &c->parts[c->nparts];
	memset(p, 0, sizeof(*p));
	m = &p->meta;
	if (sl_name_check_str(tok[1]) != 0) {
		snprintf(why, wl, "bad topic name '%.80s': %s", tok[1], SL_NAME_RULE);
		return -EINVAL;
	}
	snprintf(p->topic, sizeof(p->topic), "%s", tok[1]);
	if (parse_u64(tok[2], 0, SL_COORD_MAX_PARTS - 1, &v) != 0) {
		snprintf(why, wl, "bad partition '%s'", tok[2]);
		return -EINVAL;
	}
	p->partition = (uint16_t)v;
	m->epoch = 1;
	m->leader_session = 1;
	for (i = 3; i < ntok; i++) {
		char *eq = strchr(tok[i], '=');
		const char *k = tok[i], *val;

		if (eq == NULL) {
			snprintf(why, wl, "expected key=value, got '%s'", tok[i]);
			return -EINVAL;
		}
		*eq = '\0';
		val = eq + 1;
		if (strcmp(k, "replicas") == 0 || strcmp(k, "isr") == 0) {
			n = sl_cluster_parse_ids(val, ids, SL_COORD_MAX_REPLICAS);
			if (n < 0 || ids_known(c, ids, n, why, wl) != 0) {
				if (n < 0)
					snprintf(why, wl, "bad %s '%s' (ids, comma separated, at "
						 "most %d)", k, val, SL_COORD_MAX_REPLICAS);
				return -EINVAL;
			}
			if (k[0] == 'r') {
				memcpy(m->replicas, ids, sizeof(ids[0]) * (size_t)n);
				m->nreplicas = (uint8_t)n;
				have_r = 1;
			} else {
				memcpy(m->isr, ids, sizeof(ids[0]) * (size_t)n);
				m->nisr = (uint8_t)n;
				have_i = 1;
			}
		} else if (strcmp(k, "leader") == 0) {
			if (parse_u64(val, 1, UINT32_MAX, &v) != 0 ||
			    ids_known(c, (uint32_t[]){(uint32_t)v}, 1, why, wl) != 0) {
				if (why[0] == '\0')
					snprintf(why, wl, "bad leader '%s'", val);
				return -EINVAL;
			}
			m->leader = (uint32_t)v;
			have_l = 1;
		} else if (strcmp(k, "epoch") == 0) {
			if (parse_u64(val, 1, UINT32_MAX, &v) != 0) {
				snprintf(why, wl, "bad epoch '%s'", val);
				return -EINVAL;
			}
			m->epoch = (uint32_t)v;
		} else if (strcmp(k, "session") == 0) {
			if (parse_u64(val, 1, UINT64_MAX, &m->leader_session) != 0) {
				snprintf(why, wl, "bad session '%s'", val);
				return -EINVAL;
			}
		} else if (strcmp(k, "writes") == 0) {
			if (strcmp(val, "on") != 0 && strcmp(val, "off") != 0) {
				snprintf(why, wl, "writes must be on or off");
				return -EINVAL;
			}
			m->writes_disabled = strcmp(val, "off") == 0;
		} else {
			snprintf(why, wl, "unknown key '%s'", k);
			return -EINVAL;
		}
	}
	if (!have_r || !have_l || !have_i) {
		snprintf(why, wl, "replicas=, leader= and isr= are required");
		return -EINVAL;
	}
	if (sl_cluster_check_meta(m, why, wl) != 0)
		return -EINVAL;
	for (i = 0; i < (int)c->nparts; i++) {
		if (strcmp(c->parts[i].topic, p->topic) == 0 &&
		    c->parts[i].partition == p->partition) {
			snprintf(why, wl, "partition %s/%u listed twice", p->topic, p->partition);
			return -EINVAL;
		}
	}
	c->nparts++;
	return 0;
}

int
sl_cluster_load(const char *path, struct sl_cluster *c, char *err, size_t err_len)
{
	char line[1024], why[200];
	unsigned int lineno = 0;
	FILE *f = fopen(path, "r");
	int rc = 0;

	memset(c, 0, sizeof(*c));
	if (f == NULL) {
		snprintf(err, err_len, "%s: %s", path, strerror(errno));
		return -errno;
	}
	while (rc == 0 && fgets(line, sizeof(line), f) != NULL) {
		char *tok[40], *save = NULL, *t, *hash = strchr(line, '#');
		int ntok = 0;

		lineno++;
		if (hash != NULL)
			*hash = '\0';
		for (t = strtok_r(line, " \t\r\n", &save); t != NULL && ntok < 40;
		     t = strtok_r(NULL, " \t\r\n", &save))
			tok[ntok++] = t;
		if (ntok == 0)
			continue;
		why[0] = '\0';
		if (strcmp(tok[0], "node") == 0)
			rc = parse_node(c, tok, ntok, why, sizeof(why));
		else if (strcmp(tok[0], "partition") == 0)
			rc = parse_part(c, tok, ntok, why, sizeof(why));
		else {
			snprintf(why, sizeof(why), "unknown line '%s' (node or partition)", tok[0]);
			rc = -EINVAL;
		}
		if (rc != 0)
			snprintf(err, err_len, "%s:%u: %s", path, lineno, why);
	}
	fclose(f);
	return rc;
}

/* One key line: 64 hex digits, surrounding blanks allowed. 0 or -EINVAL. */
static int
key_line(const char *line, uint8_t key[SL_CLUSTER_KEY_LEN])
{
	size_t n;
	const char *end;

	if (sodium_hex2bin(key, SL_CLUSTER_KEY_LEN, line, strlen(line), " \t", &n, &end) != 0 ||
	    n != SL_CLUSTER_KEY_LEN)
		return -EINVAL;
	while (*end == ' ' || *end == '\t' || *end == '\r' || *end == '\n')
		end++;
	return *end == '\0' ? 0 : -EINVAL;
}

int
sl_cluster_key_load(const char *path, uint8_t keys[][SL_CLUSTER_KEY_LEN], int max, char *err,
		    size_t err_len)
{
	char line[256];
	int fd, n = 0, rc = 0, lineno = 0;
	FILE *f = NULL;

	fd = sl_secfile_open(path, err, err_len);
	if (fd < 0) {
		rc = fd;
		goto out;
	}
	f = fdopen(fd, "r");
	if (f == NULL) {
		rc = -errno;
		snprintf(err, err_len, "%s: %s", path, strerror(errno));
		goto out;
	}
	fd = -1;
	while (fgets(line, sizeof(line), f) != NULL) {
		char *p = line;

		lineno++;
		while (*p == ' ' || *p == '\t')
			p++;
		if (*p == '#' || *p == '\n' || *p == '\r' || *p == '\0')
			continue;
		if (n == max) {
			rc = -EINVAL;
			snprintf(err, err_len, "%s:%d: more than %d keys", path, lineno, max);
			goto out;
		}
		if (key_line(p, keys[n]) != 0) {
			rc = -EINVAL;
			snprintf(err, err_len, "%s:%d: a key is 64 hex digits (32 bytes)", path,
				 lineno);
			goto out;
		}
		n++;
	}
	if (n == 0) {
		rc = -EINVAL;
		snprintf(err, err_len, "%s: no key in it", path);
	}
out:
	sodium_memzero(line, sizeof(line));
	if (f != NULL)
		fclose(f);
	if (fd >= 0)
		close(fd);
	return rc != 0 ? rc : n;
}
