/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * sluice-nsqd: NSQ TCP protocol V2 (docs/nsq-gateway.md). One struct conn per client.
 *
 * Frames to the client are [u32 size][u32 type][data]: type 0 response, 1 error,
 * 2 message. Responses and errors leave in the order of the commands that caused them
 * (NSQ clients match them in order): a command answered later (a publish waiting for
 * sluice's OK) holds a slot in the connection's reply queue, and later answers wait
 * behind it. Messages and heartbeats are written at once.
 *
 * NSQ message ids are 16 ASCII bytes; the gateway writes the sluice partition in the
 * first 4 hex digits and the sluice message id (per partition, < 2^48) in the other 12.
 *
 * Bounds per connection: a command line of LINE_MAX bytes; a body of max_body_size (the
 * input buffer's high watermark is line + size + body); max_pending publishes awaiting
 * their answer (then the connection is not read until one is answered); max_output_bytes
 * queued toward the client (then messages wait in the gateway, within the credit the
 * client gave, and the connection is not read); in flight = the client's RDY.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <time.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/listener.h>
#include <event2/util.h>

#include "err.h"
#include "tcp.h"
#include "wire.h"

#define LINE_MAX_LEN 16384		/* nsqd's bufio reader size: a longer line ends it */
#define PARAMS_MAX 8
#define FRAME_RESPONSE 0
#define FRAME_ERROR 1
#define FRAME_MESSAGE 2
#define DEF_HEARTBEAT_MS 30000		/* nsqd: client timeout / 2 */
#define DEF_OBUF_SIZE 16384
#define DEF_OBUF_TIMEOUT_MS 250
#define MIN_OBUF_TIMEOUT_MS 25
#define MAX_OBUF_TIMEOUT_MS 30000
#define MAX_OBUF_SIZE 65536
#define SWEEP_MS 1000
#define READ_MAX (256 * 1024)	/* bytes read (written) per callback */
#define ID_BITS 48
#define ID_MASK ((UINT64_C(1) << ID_BITS) - 1)

enum { ST_INIT, ST_SUBSCRIBED, ST_CLOSING };
enum { SLOT_FREE, SLOT_WAIT, SLOT_DONE };

struct conn;

/* One partition of a consumer's topic: its own session (started at the partition's
 * leader, following it), so a consumer receives from every leader. */
struct sub {
	struct conn *c;
	uint64_t sub_id;
	uint16_t partition;
	struct sl_gw_sess *sess;
};

struct infl {
	uint64_t key;		/* partition << 48 | id; 0 = empty */
	uint64_t t_ms;		/* delivered or touched */
};

struct pend {
	struct pend *next;
	uint16_t partition;
	uint16_t attempts;
	uint64_t id;
	uint64_t ts;
	uint32_t len;
	uint8_t data[];
};

struct slot {
	struct conn *c;
	uint8_t state;
	uint8_t ftype;
	uint8_t fatal;
	uint8_t mpub;
	uint32_t left;		/* sluice publishes not answered yet */
	int err;
	char *text;		/* NULL = "OK" */
};

struct conn {
	struct tcp *srv;
	struct conn *next, *prev;
	struct bufferevent *bev;
	struct event *hb;
	struct event *kill;	/* closes the connection from the loop */
	int state;
	int magic_ok;
	int closing;		/* no more commands: close once the replies are out */
	int dead;		/* socket gone; the struct waits for its publishes */
	int freeing;
	uint32_t refs;		/* publishes in flight */
	char remote[64];
	char client_id[64], hostname[64], user_agent[96];
	int32_t hb_ms, msg_timeout_ms, obuf_size, obuf_timeout_ms, sample_rate;
	int deflate, snappy, tls;
	uint64_t connect_ts;
	/* consumer */
	char topic[SL_WIRE_NAME_MAX + 1], channel[SL_WIRE_NAME_MAX + 1];
	struct sl_gw_channel *ch;
	int waiting;		/* SUB of a topic that does not exist yet */
	uint32_t nsubs;
	struct sub subs[SL_GW_PARTS_MAX];
	uint32_t rdy, sub_rdy;
	struct infl *tab;
	uint32_t tab_cap, inflight;
	struct pend *ph, *pt;
	uint32_t npend;
	uint64_t msg_count, fin_count, req_count;
	uint64_t sampled_out;	/* skipped by sample_rate */
	/* producer */
	uint64_t pub_count;
	char pub_topic[SL_WIRE_NAME_MAX + 1];
	/* reply queue */
	struct slot *q;
	uint32_t qh, qt, qcap;
};

struct tcp {
	struct sl_gw *gw;
	struct evconnlistener *lis;
	struct conn *conns;
	uint32_t nconns;
	struct event *sweep;
	struct event *retry;	/* SUBs waiting for a topic try again */
	const void **datas;	/* MPUB scratch */
	uint32_t *lens;
	uint32_t scratch_cap;
};

static void conn_free(struct conn *c);
static void drain_pending(struct conn *c);

/* ---- helpers ---- */

static uint32_t
be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void
put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

/* Go's %q of a short byte string, enough for names: printable ASCII as is, the rest
 * escaped. */
static void
quote(char *out, size_t cap, const char *s, size_t len)
{
	size_t o = 0, i;

	if (cap < 3)
		return;
	out[o++] = '"';
	for (i = 0; i < len && o + 6 < cap; i++) {
		unsigned char ch = (unsigned char)s[i];

		if (ch == '"' || ch == '\\')
			o += (size_t)snprintf(out + o, cap - o, "\\%c", ch);
		else if (ch >= 0x20 && ch < 0x7f)
			out[o++] = (char)ch;
		else
			o += (size_t)snprintf(out + o, cap - o, "\\x%02x", ch);
	}
	out[o++] = '"';
	out[o] = '\0';
}

/* nsqd's ByteToBase10: decimal digits only. */
static int
base10(const char *s, uint64_t *out)
{
	uint64_t v = 0;

	if (*s == '\0')
		return -1;
	for (; *s != '\0'; s++) {
		if (*s < '0' || *s > '9' || v > (UINT64_MAX - 9) / 10)
			return -1;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	*out = v;
	return 0;
}

static void
frame_write(struct conn *c, uint32_t type, const void *data, uint32_t len)
{
	struct evbuffer *out;
	uint8_t h[8];

	if (c->dead)
		return;
	out = bufferevent_get_output(c->bev);
	put32(h, len + 4);
	put32(h + 4, type);
	evbuffer_add(out, h, 8);
	evbuffer_add(out, data, len);
}

static int
over_output(const struct conn *c)
{
	return c->dead || evbuffer_get_length(bufferevent_get_output(c->bev)) >=
		c->srv->gw->conf.max_output_bytes;
}

/* Close once what is queued toward the client is written. Never frees c at once: the
 * connection ends from the loop (the write callback or the kill timer), so that no
 * caller, and no libsluice call in progress, sees it go. */
static void
finish(struct conn *c)
{
	struct timeval now = { 0, 0 };

	c->closing = 1;
	if (c->dead)
		return;
	bufferevent_disable(c->bev, EV_READ);
	if (evbuffer_get_length(bufferevent_get_output(c->bev)) == 0)
		evtimer_add(c->kill, &now);
	else
		bufferevent_setwatermark(c->bev, EV_WRITE, 0, 0);
}

/* Write the answered slots at the head of the queue. Returns 1 if the connection was
 * freed. */
static int
flush_queue(struct conn *c)
{
	struct slot *s;
	const char *text;
	int fatal = 0;

	while (c->qh != c->qt) {
		s = &c->q[c->qh % c->qcap];
		if (s->state != SLOT_DONE)
			break;
		text = s->text != NULL ? s->text : "OK";
		if (s->ftype == FRAME_ERROR)
			sl_gw_count_error(c->srv->gw, text, strcspn(text, " "));
		frame_write(c, s->ftype, text, (uint32_t)strlen(text));
		fatal |= s->fatal;
		free(s->text);
		s->text = NULL;
		s->state = SLOT_FREE;
		c->qh++;
	}
	if (fatal && !c->dead) {
		finish(c);
		return 1;
	}
	return c->dead;
}

static struct slot *
slot_take(struct conn *c)
{
	struct slot *s;

	if (c->qt - c->qh == c->qcap)
		return NULL;
	s = &c->q[c->qt++ % c->qcap];
	memset(s, 0, sizeof(*s));
	s->c = c;
	s->state = SLOT_WAIT;
	return s;
}

/* Answer now (behind earlier answers still awaited). fmt NULL = "OK". A fatal answer
 * ends the connection once it is written, as nsqd's FatalClientErr does. */
static void
reply(struct conn *c, int ftype, int fatal, const char *fmt, ...)
{
	struct slot *s = slot_take(c);
	char buf[512];
	va_list ap;

	if (fmt != NULL) {
		va_start(ap, fmt);
		vsnprintf(buf, sizeof(buf), fmt, ap);
		va_end(ap);
	}
	if (fatal)
		c->closing = 1; /* nothing after this command is read */
	if (s == NULL) { /* cannot happen: reading stops while the queue is full */
		finish(c);
		return;
	}
	s->ftype = (uint8_t)ftype;
	s->fatal = (uint8_t)fatal;
	s->text = fmt != NULL ? strdup(buf) : NULL;
	s->state = SLOT_DONE;
}

#define ERR_FATAL(c, ...) reply((c), FRAME_ERROR, 1, __VA_ARGS__)
#define ERR_SOFT(c, ...) reply((c), FRAME_ERROR, 0, __VA_ARGS__)

/* ---- in-flight table (open addressing, backward-shift delete) ---- */

static uint32_t
hash64(uint64_t k, uint32_t cap)
{
	k ^= k >> 33;
	k *= UINT64_C(0xff51afd7ed558ccd);
	k ^= k >> 33;
	return (uint32_t)k & (cap - 1);
}

static struct infl *
infl_find(struct conn *c, uint64_t key)
{
	uint32_t i;

	if (c->tab == NULL)
		return NULL;
	for (i = hash64(key, c->tab_cap); c->tab[i].key != 0; i = (i + 1) & (c->tab_cap - 1))
		if (c->tab[i].key == key)
			return &c->tab[i];
	return NULL;
}

static int
infl_add(struct conn *c, uint64_t key, uint64_t now)
{
	uint32_t i;

	if (c->inflight + 1 > c->tab_cap / 2)
		return -1;
	for (i = hash64(key, c->tab_cap); c->tab[i].key != 0; i = (i + 1) & (c->tab_cap - 1))
		if (c->tab[i].key == key) {
			c->tab[i].t_ms = now;
			return 0;
		}
	c->tab[i].key = key;
	c->tab[i].t_ms = now;
	c->inflight++;
	return 0;
}

static void
infl_del(struct conn *c, struct infl *e)
{
	uint32_t i = (uint32_t)(e - c->tab), j = i, h, mask = c->tab_cap - 1;

	c->tab[i].key = 0;
	c->inflight--;
	for (;;) {
		j = (j + 1) & mask;
		if (c->tab[j].key == 0)
			return;
		h = hash64(c->tab[j].key, c->tab_cap);
		/* move j back to i unless its home lies cyclically in (i, j] */
		if ((i <= j) ? (h <= i || h > j) : (h <= i && h > j)) {
			c->tab[i] = c->tab[j];
			c->tab[j].key = 0;
			i = j;
		}
	}
}

/* ---- consuming ---- */

static void
msg_write(struct conn *c, uint16_t partition, uint64_t id, uint16_t attempts, uint64_t ts,
	  const uint8_t *data, uint32_t len)
{
	struct evbuffer *out = bufferevent_get_output(c->bev);
	uint8_t h[8 + 8 + 2 + 16];
	char hex[17];

	put32(h, 4 + 8 + 2 + 16 + len);
	put32(h + 4, FRAME_MESSAGE);
	put32(h + 8, (uint32_t)(ts >> 32));
	put32(h + 12, (uint32_t)ts);
	h[16] = (uint8_t)(attempts >> 8);
	h[17] = (uint8_t)attempts;
	snprintf(hex, sizeof(hex), "%04x%012" PRIx64, partition, id & ID_MASK);
	memcpy(h + 18, hex, 16);
	evbuffer_add(out, h, sizeof(h));
	evbuffer_add(out, data, len);
	c->msg_count++;
	if (c->ch != NULL)
		c->ch->message_count++;
}

static int
may_send(const struct conn *c)
{
	return c->state == ST_SUBSCRIBED && c->inflight < c->rdy && !over_output(c);
}

static int
on_msg(void *arg, const struct sl_client_msg *m)
{
	struct sub *s = arg;
	struct conn *c = s->c;
	uint64_t key = (uint64_t)m->partition << ID_BITS | (m->id & ID_MASK);
	struct pend *p;

	if (c->dead || c->freeing)
		return 1; /* requeued by the CLS that is on its way */
	if (c->state == ST_CLOSING || m->id > ID_MASK) {
		(void)sl_client_req(s->sess->c, s->sub_id, m->id, 0);
		return 1;
	}
	/* IDENTIFY's sample_rate, as nsqd's messagePump applies it: a first delivery the
	 * sample skips is consumed for this client (finished), never sent */
	if (c->sample_rate > 0 && m->attempts <= 1 && infl_find(c, key) == NULL &&
	    (int32_t)(random() % 100) > c->sample_rate) {
		c->sampled_out++;
		return 0; /* libsluice FINs it */
	}
	if (infl_find(c, key) != NULL || (c->ph == NULL && may_send(c))) {
		/* a redelivery of what the client holds (its timeout passed at the broker)
		 * goes out again at once, as nsqd would send the new attempt */
		if (infl_add(c, key, sl_gw_now_ms()) == 0) {
			msg_write(c, m->partition, m->id, m->attempts, m->timestamp_ns,
				  m->data, m->len);
			return 1;
		}
	}
	/* over the client's credit (the sluice credit is per partition): wait here */
	for (p = c->ph; p != NULL; p = p->next)
		if (p->partition == m->partition && p->id == m->id) {
			p->attempts = m->attempts;
			return 1;
		}
	if (c->npend >= (c->rdy + 1) * (c->nsubs + 1))
		return 1; /* left in flight: the broker's timeout redelivers it */
	p = malloc(sizeof(*p) + m->len);
	if (p == NULL)
		return 1;
	p->next = NULL;
	p->partition = m->partition;
	p->attempts = m->attempts;
	p->id = m->id;
	p->ts = m->timestamp_ns;
	p->len = m->len;
	memcpy(p->data, m->data, m->len);
	if (c->pt != NULL)
		c->pt->next = p;
	else
		c->ph = p;
	c->pt = p;
	c->npend++;
	return 1;
}

static void
drain_pending(struct conn *c)
{
	struct pend *p;
	uint64_t now = sl_gw_now_ms();

	while (c->ph != NULL && may_send(c)) {
		p = c->ph;
		if (infl_add(c, (uint64_t)p->partition << ID_BITS | p->id, now) != 0)
			break;
		c->ph = p->next;
		if (c->ph == NULL)
			c->pt = NULL;
		c->npend--;
		msg_write(c, p->partition, p->id, p->attempts, p->ts, p->data, p->len);
		free(p);
	}
}

/* Give back what waits in the gateway (CLS, close). */
static void
pending_requeue(struct conn *c)
{
	struct pend *p;

	while ((p = c->ph) != NULL) {
		c->ph = p->next;
		if (p->partition < c->nsubs && !c->dead && !c->freeing)
			(void)sl_client_req(c->subs[p->partition].sess->c,
					    c->subs[p->partition].sub_id, p->id, 0);
		free(p);
	}
	c->pt = NULL;
	c->npend = 0;
}

static void
subs_rdy(struct conn *c, uint32_t rdy)
{
	uint32_t i;

	if (rdy == c->sub_rdy)
		return;
	c->sub_rdy = rdy;
	for (i = 0; i < c->nsubs; i++)
		(void)sl_client_rdy(c->subs[i].sess->c, c->subs[i].sub_id, rdy);
}

/*
 * Subscribe the partitions of the topic not subscribed yet, each through a session of its
 * own started at its leader (METADATA). Returns 0, 1 when the topic does not exist yet
 * (the connection waits for it), or a negative error.
 */
static int
subscribe(struct conn *c)
{
	struct sl_gw *gw = c->srv->gw;
	struct sl_gw_sess *ss;
	struct sl_gw_meta m;
	uint8_t flags = 0;
	size_t clen = strlen(c->channel);
	uint32_t p, nparts;
	int64_t rc;

	if (clen > 10 && strcmp(c->channel + clen - 10, "#ephemeral") == 0)
		flags |= SL_WIRE_SUB_EPHEMERAL;
	rc = sl_gw_meta(gw, c->topic, &m);
	if (rc == -SL_E_TOPIC && c->nsubs == 0)
		return 1;
	if (rc != 0)
		return c->nsubs > 0 ? 0 : (int)rc;
	nparts = m.nparts < SL_GW_PARTS_MAX ? m.nparts : SL_GW_PARTS_MAX;
	for (p = c->nsubs; p < nparts; p++) {
		ss = sl_gw_sess_open(gw, &m, (uint16_t)p);
		if (ss == NULL)
			return p > 0 ? 0 : -SL_E_TIMEOUT;
		c->subs[p].c = c;
		c->subs[p].partition = (uint16_t)p;
		c->subs[p].sess = ss;
		rc = sl_client_sub(ss->c, c->topic, (uint16_t)p, c->channel, flags, c->sub_rdy,
				   on_msg, &c->subs[p]);
		if (rc <= 0 || c->freeing || c->dead) {
			c->subs[p].sess = NULL;
			sl_gw_sess_close(gw, ss);
			if (c->freeing || c->dead)
				return -ECONNRESET;
			if (p == 0 && rc == -SL_E_TOPIC)
				return 1;
			return p > 0 ? 0 : (int)rc;
		}
		c->subs[p].sub_id = (uint64_t)rc;
		c->nsubs = p + 1;
	}
	return 0;
}

/* Close the partitions' sessions: the node requeues what the client held. */
static void
unsubscribe(struct conn *c)
{
	struct sl_gw *gw = c->srv->gw;
	uint32_t i;

	for (i = 0; i < c->nsubs; i++) {
		sl_gw_sess_close(gw, c->subs[i].sess);
		c->subs[i].sess = NULL;
	}
	c->nsubs = 0;
}

/* SUBs waiting for their topic try again (from the loop, not from the publish callback
 * that learnt the topic exists: subscribing blocks on libsluice). */
static void
retry_waiting(struct tcp *srv)
{
	struct sl_gw_topic *t;
	struct conn *c;

	for (c = srv->conns; c != NULL; c = c->next) {
		if (c->dead || !c->waiting || subscribe(c) != 0)
			continue;
		c->waiting = 0;
		t = sl_gw_topic_get(srv->gw, c->topic, 0);
		if (t != NULL && t->waiting_subs > 0)
			t->waiting_subs--;
	}
}

static void
on_retry(evutil_socket_t fd, short what, void *arg)
{
	retry_waiting(arg);
}

void
sl_nsqtcp_topic_exists(struct sl_gw *gw, const char *topic)
{
	struct tcp *srv = gw->tcp;
	struct sl_gw_topic *t = sl_gw_topic_get(gw, topic, 0);
	struct timeval now = { 0, 0 };

	if (srv == NULL || t == NULL || t->waiting_subs == 0)
		return;
	evtimer_add(srv->retry, &now);
}

/* Every SWEEP_MS: messages the client held past its msg_timeout are no longer its
 * (nsqd's in-flight timeout; sluice redelivers them by its own timeout), and SUBs
 * waiting for their topic try again. */
static void
on_sweep(evutil_socket_t fd, short what, void *arg)
{
	struct tcp *srv = arg;
	struct conn *c, *next;
	uint64_t now = sl_gw_now_ms();
	uint32_t i;

	retry_waiting(srv);
	for (c = srv->conns; c != NULL; c = next) {
		next = c->next;
		if (c->dead)
			continue;
		if (c->tab == NULL || c->inflight == 0)
			continue;
		for (i = 0; i < c->tab_cap; i++) {
			if (c->tab[i].key == 0 ||
			    now - c->tab[i].t_ms < (uint64_t)c->msg_timeout_ms)
				continue;
			infl_del(c, &c->tab[i]);
			if (c->ch != NULL)
				c->ch->timeout_count++;
			i--; /* a shifted entry now sits here */
		}
		drain_pending(c);
	}
	sl_gw_kick(srv->gw);
}

/* ---- commands ---- */

static int
name_checks(struct conn *c, const char *cmd, const char *what, const char *code,
	    const char *name, const char *prefix)
{
	char q[300];
	size_t len = strlen(name);

	quote(q, sizeof(q), name, len);
	if (!sl_gw_nsq_name_ok(name, len)) {
		ERR_FATAL(c, "%s %s%s %s name %s is not valid", code, prefix, cmd, what, q);
		return -1;
	}
	if (!sl_gw_sluice_name_ok(name, len)) {
		ERR_FATAL(c, "%s %s%s %s name %s is not valid in sluice (no leading '.')", code,
			  prefix, cmd, what, q);
		return -1;
	}
	return 0;
}

static const char *
pub_reason(int err)
{
	return sl_strerror(err);
}

/* A sluice publish of slot s answered. */
static void
on_published(void *arg, int err)
{
	struct slot *s = arg;
	struct conn *c = s->c;

	if (err != 0 && s->err == 0)
		s->err = err;
	c->refs--;
	if (--s->left == 0) {
		if (s->err != 0) {
			char buf[256];

			snprintf(buf, sizeof(buf), "%s %s failed %s",
				 s->mpub ? "E_MPUB_FAILED" : "E_PUB_FAILED",
				 s->mpub ? "MPUB" : "PUB", pub_reason(s->err));
			s->text = strdup(buf);
			s->ftype = FRAME_ERROR;
			s->fatal = 1;
		}
		s->state = SLOT_DONE;
	}
	if (c->dead) {
		if (c->refs == 0 && !c->freeing)
			conn_free(c); /* only releases the memory: the socket is gone */
		return;
	}
	if (s->state == SLOT_DONE && !c->freeing)
		(void)flush_queue(c);
	/* a full queue stopped reading: read again */
	if (!c->closing && !c->freeing && c->qt - c->qh < c->qcap)
		bufferevent_enable(c->bev, EV_READ);
}

static void
publish(struct conn *c, const char *topic, int mpub, uint32_t n, const void **datas,
	uint32_t *lens)
{
	struct sl_gw *gw = c->srv->gw;
	struct slot *s = slot_take(c);
	uint32_t i = 0, k;
	int rc;

	if (s == NULL) {
		finish(c);
		return;
	}
	s->mpub = (uint8_t)mpub;
	s->left = 1; /* held until every chunk is issued */
	c->refs++;
	while (i < n) {
		k = sl_gw_chunk(gw, topic, lens + i, n - i);
		s->left++;
		c->refs++;
		rc = sl_gw_publish(gw, topic, k, datas + i, lens + i, on_published, s);
		if (rc != 0) {
			s->left--;
			c->refs--;
			s->err = rc;
			break;
		}
		i += k;
	}
	c->pub_count += i;
	snprintf(c->pub_topic, sizeof(c->pub_topic), "%s", topic);
	on_published(s, 0);
}

/* The body size of a command with one, checked the way nsqd checks it. Returns 0, or
 * -1 after a fatal error. */
static int
body_size_ok(struct conn *c, const char *cmd, int32_t size)
{
	struct sl_gw *gw = c->srv->gw;

	if (strcmp(cmd, "PUB") == 0 || strcmp(cmd, "DPUB") == 0) {
		if (size <= 0) {
			ERR_FATAL(c, "E_BAD_MESSAGE %s invalid message body size %d", cmd, size);
			return -1;
		}
		if ((uint32_t)size > gw->max_msg) {
			ERR_FATAL(c, "E_BAD_MESSAGE %s message too big %d > %u", cmd, size,
				  gw->max_msg);
			return -1;
		}
		return 0;
	}
	if ((int64_t)size > (int64_t)gw->conf.max_body_size) {
		ERR_FATAL(c, "E_BAD_BODY %s body too big %d > %u", cmd, size,
			  gw->conf.max_body_size);
		return -1;
	}
	if (size <= 0) {
		ERR_FATAL(c, "E_BAD_BODY %s invalid body size %d", cmd, size);
		return -1;
	}
	return 0;
}

static int
json_int(json_t *o, const char *key, int64_t *v)
{
	json_t *x = json_object_get(o, key);

	if (x == NULL || json_is_null(x))
		return 0;
	if (!json_is_integer(x))
		return -1;
	*v = json_integer_value(x);
	return 0;
}

static int
json_bool(json_t *o, const char *key, int *v)
{
	json_t *x = json_object_get(o, key);

	if (x == NULL || json_is_null(x))
		return 0;
	if (!json_is_boolean(x))
		return -1;
	*v = json_is_true(x);
	return 0;
}

static int
json_str(json_t *o, const char *key, char *out, size_t cap)
{
	json_t *x = json_object_get(o, key);

	if (x == NULL || json_is_null(x))
		return 0;
	if (!json_is_string(x))
		return -1;
	snprintf(out, cap, "%s", json_string_value(x));
	return 0;
}

static void
timers_apply(struct conn *c)
{
	struct timeval rd = { 0 }, hb = { 0 };

	if (c->hb_ms > 0) {
		rd.tv_sec = (2 * (int64_t)c->hb_ms) / 1000;
		rd.tv_usec = ((2 * (int64_t)c->hb_ms) % 1000) * 1000;
		hb.tv_sec = c->hb_ms / 1000;
		hb.tv_usec = (c->hb_ms % 1000) * 1000;
		bufferevent_set_timeouts(c->bev, &rd, NULL);
		evtimer_add(c->hb, &hb);
	} else {
		bufferevent_set_timeouts(c->bev, NULL, NULL);
		evtimer_del(c->hb);
	}
}

static void
cmd_identify(struct conn *c, const uint8_t *body, uint32_t len)
{
	struct sl_gw *gw = c->srv->gw;
	int64_t hb = 0, obs = 0, obt = 0, mt = 0, sr = 0, dl = 0;
	int fn = 0, tls = 0, defl = 0, snap = 0;
	json_t *o, *r;
	char *txt;
	int bad;

	o = json_loadb((const char *)body, len, 0, NULL);
	if (o == NULL || !json_is_object(o)) {
		json_decref(o);
		ERR_FATAL(c, "E_BAD_BODY IDENTIFY failed to decode JSON body");
		return;
	}
	bad = json_str(o, "client_id", c->client_id, sizeof(c->client_id)) |
	      json_str(o, "hostname", c->hostname, sizeof(c->hostname)) |
	      json_str(o, "user_agent", c->user_agent, sizeof(c->user_agent)) |
	      json_int(o, "heartbeat_interval", &hb) |
	      json_int(o, "output_buffer_size", &obs) |
	      json_int(o, "output_buffer_timeout", &obt) |
	      json_int(o, "msg_timeout", &mt) | json_int(o, "sample_rate", &sr) |
	      json_int(o, "deflate_level", &dl) |
	      json_bool(o, "feature_negotiation", &fn) | json_bool(o, "tls_v1", &tls) |
	      json_bool(o, "deflate", &defl) | json_bool(o, "snappy", &snap);
	json_decref(o);
	if (bad) {
		ERR_FATAL(c, "E_BAD_BODY IDENTIFY failed to decode JSON body");
		return;
	}
	if (hb == -1) {
		c->hb_ms = 0;
	} else if (hb != 0) {
		if (hb < 1000 || hb > gw->conf.max_heartbeat_ms) {
			ERR_FATAL(c, "E_BAD_BODY IDENTIFY heartbeat interval (%" PRId64
				  ") is invalid", hb);
			return;
		}
		c->hb_ms = (int32_t)hb;
	}
	if (obt == -1) {
		c->obuf_timeout_ms = 0;
	} else if (obt != 0) {
		if (obt < MIN_OBUF_TIMEOUT_MS || obt > MAX_OBUF_TIMEOUT_MS) {
			ERR_FATAL(c, "E_BAD_BODY IDENTIFY output buffer timeout (%" PRId64
				  ") is invalid", obt);
			return;
		}
		c->obuf_timeout_ms = (int32_t)obt;
	}
	if (obs == -1) {
		c->obuf_size = 1;
		c->obuf_timeout_ms = 0;
	} else if (obs != 0) {
		if (obs < 64 || obs > MAX_OBUF_SIZE) {
			ERR_FATAL(c, "E_BAD_BODY IDENTIFY output buffer size (%" PRId64
				  ") is invalid", obs);
			return;
		}
		c->obuf_size = (int32_t)obs;
	}
	if (sr < 0 || sr > 99) {
		ERR_FATAL(c, "E_BAD_BODY IDENTIFY sample rate (%" PRId64 ") is invalid", sr);
		return;
	}
	c->sample_rate = (int32_t)sr;
	if (mt != 0) {
		if (mt < 1000 || mt > gw->conf.max_msg_timeout_ms) {
			ERR_FATAL(c, "E_BAD_BODY IDENTIFY msg timeout (%" PRId64 ") is invalid",
				  mt);
			return;
		}
		c->msg_timeout_ms = (int32_t)mt;
	}
	timers_apply(c);
	if (!fn) {
		reply(c, FRAME_RESPONSE, 0, NULL);
		return;
	}
	/* TLS, snappy, deflate and auth are not offered: declined as an nsqd without them
	 * declines them (false in the answer, the connection goes on in plain text) */
	r = json_pack("{s:I, s:s, s:I, s:I, s:b, s:b, s:i, s:i, s:b, s:i, s:b, s:i, s:I, "
		      "s:s, s:s}",
		      "max_rdy_count", (json_int_t)gw->conf.max_rdy_count,
		      "version", SL_GW_VERSION,
		      "max_msg_timeout", (json_int_t)gw->conf.max_msg_timeout_ms,
		      "msg_timeout", (json_int_t)c->msg_timeout_ms,
		      "tls_v1", 0, "deflate", 0, "deflate_level", 6, "max_deflate_level", 6,
		      "snappy", 0, "sample_rate", c->sample_rate, "auth_required", 0,
		      "output_buffer_size", c->obuf_size,
		      "output_buffer_timeout", (json_int_t)c->obuf_timeout_ms,
		      "topology_region", "", "topology_zone", "");
	txt = r != NULL ? json_dumps(r, JSON_COMPACT) : NULL;
	json_decref(r);
	if (txt == NULL) {
		ERR_FATAL(c, "E_IDENTIFY_FAILED IDENTIFY failed out of memory");
		return;
	}
	reply(c, FRAME_RESPONSE, 0, "%s", txt);
	free(txt);
}

static void
cmd_sub(struct conn *c, char **pv, int pc)
{
	struct sl_gw *gw = c->srv->gw;
	struct sl_gw_topic *t;
	uint32_t cap;
	int rc;

	if (c->state != ST_INIT) {
		ERR_FATAL(c, "E_INVALID cannot SUB in current state");
		return;
	}
	if (c->hb_ms <= 0) {
		ERR_FATAL(c, "E_INVALID cannot SUB with heartbeats disabled");
		return;
	}
	if (pc < 3) {
		ERR_FATAL(c, "E_INVALID SUB insufficient number of parameters");
		return;
	}
	if (name_checks(c, "SUB", "topic", "E_BAD_TOPIC", pv[1], "") != 0 ||
	    name_checks(c, "SUB", "channel", "E_BAD_CHANNEL", pv[2], "") != 0)
		return;
	t = sl_gw_topic_get(gw, pv[1], 1);
	if (t == NULL || (c->ch = sl_gw_channel_get(t, pv[2], 1)) == NULL) {
		ERR_FATAL(c, "E_SUB_FAILED SUB failed too many topics or channels");
		return;
	}
	for (cap = 16; cap < 2 * (gw->conf.max_rdy_count + 1); cap <<= 1)
		;
	c->tab = calloc(cap, sizeof(*c->tab));
	if (c->tab == NULL) {
		ERR_FATAL(c, "E_SUB_FAILED SUB failed out of memory");
		return;
	}
	c->tab_cap = cap;
	strcpy(c->topic, pv[1]);
	strcpy(c->channel, pv[2]);
	rc = subscribe(c);
	if (rc < 0) {
		if (!c->dead && !c->freeing)
			ERR_FATAL(c, "E_SUB_FAILED SUB failed %s", sl_strerror(rc));
		return;
	}
	if (rc == 1) { /* nsqd creates the topic; sluice creates it on its first publish */
		c->waiting = 1;
		t->waiting_subs++;
	}
	c->ch->clients++;
	c->state = ST_SUBSCRIBED;
	reply(c, FRAME_RESPONSE, 0, NULL);
}

static void
cmd_rdy(struct conn *c, char **pv, int pc)
{
	struct sl_gw *gw = c->srv->gw;
	uint64_t n = 1;

	if (c->state == ST_CLOSING)
		return;
	if (c->state != ST_SUBSCRIBED) {
		ERR_FATAL(c, "E_INVALID cannot RDY in current state");
		return;
	}
	if (pc > 1 && base10(pv[1], &n) != 0) {
		ERR_FATAL(c, "E_INVALID RDY could not parse count %s", pv[1]);
		return;
	}
	if (n > gw->conf.max_rdy_count) {
		ERR_FATAL(c, "E_INVALID RDY count %" PRIu64 " out of range 0-%u", n,
			  gw->conf.max_rdy_count);
		return;
	}
	c->rdy = (uint32_t)n;
	subs_rdy(c, c->rdy);
	drain_pending(c);
}

/* Parse an NSQ message id of this gateway. Returns 0, -1 bad length (fatal), -2 not
 * one of ours (not in flight). */
static int
msg_id(const char *s, uint16_t *part, uint64_t *id, uint64_t *key)
{
	uint64_t v = 0;
	int i;

	if (strlen(s) != 16)
		return -1;
	for (i = 0; i < 16; i++) {
		char ch = s[i];
		int d = ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 :
			-1;

		if (d < 0)
			return -2;
		v = v << 4 | (uint64_t)d;
	}
	*part = (uint16_t)(v >> ID_BITS);
	*id = v & ID_MASK;
	*key = v;
	return 0;
}

/* FIN, REQ, TOUCH: the common checks; returns the in-flight entry or NULL (answered). */
static struct infl *
msg_cmd(struct conn *c, char **pv, int pc, int need, const char *cmd, const char *code,
	uint16_t *part, uint64_t *id)
{
	struct infl *e = NULL;
	uint64_t key = 0;
	int rc;

	if (c->state != ST_SUBSCRIBED && c->state != ST_CLOSING) {
		ERR_FATAL(c, "E_INVALID cannot %s in current state", cmd);
		return NULL;
	}
	if (pc < need) {
		ERR_FATAL(c, "E_INVALID %s insufficient number of params", cmd);
		return NULL;
	}
	rc = msg_id(pv[1], part, id, &key);
	if (rc == -1) {
		ERR_FATAL(c, "E_INVALID invalid message ID");
		return NULL;
	}
	if (rc == 0)
		e = infl_find(c, key);
	if (e == NULL || *part >= c->nsubs)
		ERR_SOFT(c, "%s %s %s failed ID not in flight", code, cmd, pv[1]);
	return e != NULL && *part < c->nsubs ? e : NULL;
}

static void
cmd_fin(struct conn *c, char **pv, int pc)
{
	struct infl *e;
	uint16_t part;
	uint64_t id;

	e = msg_cmd(c, pv, pc, 2, "FIN", "E_FIN_FAILED", &part, &id);
	if (e == NULL)
		return;
	infl_del(c, e);
	(void)sl_client_fin(c->subs[part].sess->c, c->subs[part].sub_id, id);
	c->fin_count++;
	if (c->ch != NULL)
		c->ch->finish_count++;
	drain_pending(c);
}

static void
cmd_req(struct conn *c, char **pv, int pc)
{
	struct sl_gw *gw = c->srv->gw;
	struct infl *e;
	uint64_t ms = 0;
	uint16_t part;
	uint64_t id;

	if ((c->state == ST_SUBSCRIBED || c->state == ST_CLOSING) && pc >= 3 &&
	    strlen(pv[1]) == 16 && base10(pv[2], &ms) != 0) {
		ERR_FATAL(c, "E_INVALID REQ could not parse timeout %s", pv[2]);
		return;
	}
	e = msg_cmd(c, pv, pc, 3, "REQ", "E_REQ_FAILED", &part, &id);
	if (e == NULL)
		return;
	if (ms > gw->conf.max_req_timeout_ms)
		ms = gw->conf.max_req_timeout_ms; /* clamped, as nsqd does */
	infl_del(c, e);
	(void)sl_client_req(c->subs[part].sess->c, c->subs[part].sub_id, id,
			    (uint32_t)ms);
	c->req_count++;
	if (c->ch != NULL)
		c->ch->requeue_count++;
	drain_pending(c);
}

static void
cmd_touch(struct conn *c, char **pv, int pc)
{
	struct infl *e;
	uint16_t part;
	uint64_t id;

	e = msg_cmd(c, pv, pc, 2, "TOUCH", "E_TOUCH_FAILED", &part, &id);
	if (e == NULL)
		return;
	e->t_ms = sl_gw_now_ms();
	(void)sl_client_touch(c->subs[part].sess->c, c->subs[part].sub_id, id);
}

static void
cmd_cls(struct conn *c)
{
	if (c->state != ST_SUBSCRIBED) {
		ERR_FATAL(c, "E_INVALID cannot CLS in current state");
		return;
	}
	c->state = ST_CLOSING;
	subs_rdy(c, 0);
	pending_requeue(c);
	reply(c, FRAME_RESPONSE, 0, "CLOSE_WAIT");
}

static void
cmd_mpub(struct conn *c, const char *topic, const uint8_t *b, uint32_t len)
{
	struct tcp *srv = c->srv;
	struct sl_gw *gw = srv->gw;
	uint32_t off = 4, i, n, sz;
	int32_t count;
	void *x;

	if (len < 4) {
		ERR_FATAL(c, "E_BAD_BODY MPUB failed to read message count");
		return;
	}
	count = (int32_t)be32(b);
	if (count <= 0 || (int64_t)count > ((int64_t)gw->conf.max_body_size - 4) / 5) {
		ERR_FATAL(c, "E_BAD_BODY MPUB invalid message count %d", count);
		return;
	}
	n = (uint32_t)count;
	if (n > srv->scratch_cap) {
		x = realloc(srv->datas, n * sizeof(*srv->datas));
		if (x == NULL)
			goto nomem;
		srv->datas = x;
		x = realloc(srv->lens, n * sizeof(*srv->lens));
		if (x == NULL)
			goto nomem;
		srv->lens = x;
		srv->scratch_cap = n;
	}
	for (i = 0; i < n; i++) {
		if (len - off < 4) {
			ERR_FATAL(c, "E_BAD_MESSAGE MPUB failed to read message(%u) body size", i);
			return;
		}
		sz = be32(b + off);
		off += 4;
		if ((int32_t)sz <= 0) {
			ERR_FATAL(c, "E_BAD_MESSAGE MPUB invalid message(%u) body size %d", i,
				  (int32_t)sz);
			return;
		}
		if (sz > gw->max_msg) {
			ERR_FATAL(c, "E_BAD_MESSAGE MPUB message too big %u > %u", sz, gw->max_msg);
			return;
		}
		if (len - off < sz) {
			ERR_FATAL(c, "E_BAD_MESSAGE MPUB failed to read message body");
			return;
		}
		srv->datas[i] = b + off;
		srv->lens[i] = sz;
		off += sz;
	}
	if (off != len) {
		ERR_FATAL(c, "E_BAD_BODY MPUB invalid body size %u", len);
		return;
	}
	publish(c, topic, 1, n, srv->datas, srv->lens);
	return;
nomem:
	ERR_FATAL(c, "E_MPUB_FAILED MPUB failed out of memory");
}

/* A command with a body: its checks before the body is read, as nsqd orders them.
 * Returns 0 to go on, -1 answered. */
static int
pre_body(struct conn *c, char **pv, int pc, uint64_t *defer_ms)
{
	struct sl_gw *gw = c->srv->gw;
	const char *cmd = pv[0];

	if (strcmp(cmd, "IDENTIFY") == 0) {
		if (c->state != ST_INIT) {
			ERR_FATAL(c, "E_INVALID cannot IDENTIFY in current state");
			return -1;
		}
		return 0;
	}
	if (strcmp(cmd, "AUTH") == 0) {
		if (c->state != ST_INIT) {
			ERR_FATAL(c, "E_INVALID cannot AUTH in current state");
			return -1;
		}
		if (pc != 1) {
			ERR_FATAL(c, "E_INVALID AUTH invalid number of parameters");
			return -1;
		}
		return 0;
	}
	if (pc < (strcmp(cmd, "DPUB") == 0 ? 3 : 2)) {
		ERR_FATAL(c, "E_INVALID %s insufficient number of parameters", cmd);
		return -1;
	}
	if (name_checks(c, cmd, "topic", "E_BAD_TOPIC", pv[1],
			strcmp(cmd, "MPUB") == 0 ? "E_BAD_TOPIC " : "") != 0)
		return -1;
	if (strcmp(cmd, "DPUB") == 0) {
		if (base10(pv[2], defer_ms) != 0) {
			ERR_FATAL(c, "E_INVALID DPUB could not parse timeout %s", pv[2]);
			return -1;
		}
		if (*defer_ms > gw->conf.max_req_timeout_ms) {
			ERR_FATAL(c, "E_INVALID DPUB timeout %" PRIu64 " out of range 0-%u",
				  *defer_ms, gw->conf.max_req_timeout_ms);
			return -1;
		}
	}
	return 0;
}

static void
body_cmd(struct conn *c, char **pv, const uint8_t *body, uint32_t len, uint64_t defer_ms)
{
	const char *cmd = pv[0];
	const void *d = body;

	if (strcmp(cmd, "IDENTIFY") == 0) {
		cmd_identify(c, body, len);
	} else if (strcmp(cmd, "AUTH") == 0) {
		ERR_FATAL(c, "E_AUTH_DISABLED AUTH disabled");
	} else if (strcmp(cmd, "MPUB") == 0) {
		cmd_mpub(c, pv[1], body, len);
	} else if (strcmp(cmd, "DPUB") == 0 && defer_ms > 0) {
		/* sluice has no deferred publish: refused, never held in the gateway */
		ERR_FATAL(c, "E_DPUB_FAILED DPUB failed deferred publish is not supported "
			  "by sluice (use DPUB 0, or REQ with a delay)");
	} else {
		publish(c, pv[1], 0, 1, &d, &len);
	}
}

static int
has_body(const char *cmd)
{
	return strcmp(cmd, "IDENTIFY") == 0 || strcmp(cmd, "PUB") == 0 ||
	       strcmp(cmd, "MPUB") == 0 || strcmp(cmd, "DPUB") == 0 || strcmp(cmd, "AUTH") == 0;
}

/* Handle one complete command at the head of in, if there is one. Returns 1 when one
 * was handled, 0 when more bytes are needed. */
static int
one_command(struct conn *c, struct evbuffer *in)
{
	char line[LINE_MAX_LEN + 1], *pv[PARAMS_MAX], *p;
	struct evbuffer_ptr eol;
	uint64_t defer_ms = 0;
	size_t n, have, eol_len;
	uint8_t szb[4];
	int32_t size = 0;
	int pc = 0;

	eol = evbuffer_search_eol(in, NULL, &eol_len, EVBUFFER_EOL_LF);
	have = evbuffer_get_length(in);
	if (eol.pos < 0) {
		if (have > LINE_MAX_LEN)
			finish(c); /* nsqd: "failed to read command - bufio: buffer full" */
		return 0;
	}
	n = (size_t)eol.pos;
	if (n > LINE_MAX_LEN) {
		finish(c);
		return 0;
	}
	evbuffer_copyout(in, line, n);
	line[n] = '\0';
	if (n > 0 && line[n - 1] == '\r')
		line[--n] = '\0';
	for (p = line; pc < PARAMS_MAX; ) {
		pv[pc++] = p;
		p = strchr(p, ' ');
		if (p == NULL)
			break;
		*p++ = '\0';
	}
	if (!has_body(pv[0])) {
		evbuffer_drain(in, (size_t)eol.pos + eol_len);
		if (strcmp(pv[0], "NOP") == 0)
			;
		else if (strcmp(pv[0], "RDY") == 0)
			cmd_rdy(c, pv, pc);
		else if (strcmp(pv[0], "FIN") == 0)
			cmd_fin(c, pv, pc);
		else if (strcmp(pv[0], "REQ") == 0)
			cmd_req(c, pv, pc);
		else if (strcmp(pv[0], "TOUCH") == 0)
			cmd_touch(c, pv, pc);
		else if (strcmp(pv[0], "SUB") == 0)
			cmd_sub(c, pv, pc);
		else if (strcmp(pv[0], "CLS") == 0)
			cmd_cls(c);
		else
			ERR_FATAL(c, "E_INVALID invalid command %s", pv[0]);
		return 1;
	}
	if (pre_body(c, pv, pc, &defer_ms) != 0)
		return 1;
	if (have < (size_t)eol.pos + eol_len + 4)
		return 0;
	{
		struct evbuffer_ptr at;

		evbuffer_ptr_set(in, &at, (size_t)eol.pos + eol_len, EVBUFFER_PTR_SET);
		evbuffer_copyout_from(in, &at, szb, 4);
	}
	size = (int32_t)be32(szb);
	if (body_size_ok(c, pv[0], size) != 0)
		return 1;
	if (have < (size_t)eol.pos + eol_len + 4 + (size_t)size)
		return 0;
	{
		size_t hdr = (size_t)eol.pos + eol_len + 4;
		uint8_t *all = evbuffer_pullup(in, (ssize_t)(hdr + (size_t)size));

		if (all == NULL) {
			finish(c);
			return 0;
		}
		body_cmd(c, pv, all + hdr, (uint32_t)size, defer_ms);
		evbuffer_drain(in, hdr + (size_t)size);
	}
	return 1;
}

/* ---- connection events ---- */

static void
on_read(struct bufferevent *bev, void *arg)
{
	struct conn *c = arg;
	struct evbuffer *in = bufferevent_get_input(bev);
	char magic[4];

	if (!c->magic_ok) {
		if (evbuffer_get_length(in) < 4)
			return;
		evbuffer_remove(in, magic, 4);
		if (memcmp(magic, "  V2", 4) != 0) {
			sl_gw_count_error(c->srv->gw, "E_BAD_PROTOCOL", 14);
			frame_write(c, FRAME_ERROR, "E_BAD_PROTOCOL", 14);
			finish(c);
			return;
		}
		c->magic_ok = 1;
	}
	while (!c->closing && !c->dead) {
		if (c->qt - c->qh == c->qcap || over_output(c)) {
			bufferevent_disable(bev, EV_READ); /* back pressure */
			break;
		}
		if (one_command(c, in) == 0)
			break;
	}
	if (c->dead || c->freeing)
		return;
	if (flush_queue(c))
		return;
	if (c->closing)
		finish(c);
	/* the commands' publishes leave as batches, their FINs, REQs, RDYs with them, once
	 * every connection readable in this turn has been read */
	sl_gw_kick(c->srv->gw);
}

static void
on_write(struct bufferevent *bev, void *arg)
{
	struct conn *c = arg;

	if (c->closing) {
		if (evbuffer_get_length(bufferevent_get_output(bev)) == 0)
			conn_free(c);
		return;
	}
	drain_pending(c);
	if (c->qt - c->qh < c->qcap && !over_output(c)) {
		bufferevent_enable(bev, EV_READ);
		if (evbuffer_get_length(bufferevent_get_input(bev)) > 0)
			on_read(bev, c);
	}
}

static void
on_event(struct bufferevent *bev, short what, void *arg)
{
	struct conn *c = arg;

	/* EOF, error, or no command within two heartbeat intervals (nsqd's read
	 * deadline): the connection ends */
	if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR | BEV_EVENT_TIMEOUT))
		conn_free(c);
}

static void
on_kill(evutil_socket_t fd, short what, void *arg)
{
	conn_free(arg);
}

static void
on_heartbeat(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;

	frame_write(c, FRAME_RESPONSE, "_heartbeat_", 11);
}

static void
conn_free(struct conn *c)
{
	struct tcp *srv = c->srv;
	struct sl_gw_topic *t;

	if (c->freeing)
		return;
	c->freeing = 1;
	if (!c->dead) {
		c->dead = 1;
		event_free(c->hb);
		event_free(c->kill);
		c->hb = NULL;
		c->kill = NULL;
		bufferevent_free(c->bev);
		c->bev = NULL;
		pending_requeue(c);
		unsubscribe(c); /* requeues what the client held */
		if (c->ch != NULL && c->ch->clients > 0)
			c->ch->clients--;
		if (c->waiting && (t = sl_gw_topic_get(srv->gw, c->topic, 0)) != NULL &&
		    t->waiting_subs > 0)
			t->waiting_subs--;
		c->waiting = 0;
		if (c->prev != NULL)
			c->prev->next = c->next;
		else
			srv->conns = c->next;
		if (c->next != NULL)
			c->next->prev = c->prev;
		srv->nconns--;
		sl_gw_kick(srv->gw); /* the requeues and CLS leave */
	}
	c->freeing = 0;
	if (c->refs > 0)
		return; /* publishes in flight: freed by the last answer */
	while (c->qh != c->qt)
		free(c->q[c->qh++ % c->qcap].text);
	free(c->q);
	free(c->tab);
	free(c);
}

static void
on_accept(struct evconnlistener *lis, evutil_socket_t fd, struct sockaddr *sa, int salen,
	  void *arg)
{
	struct tcp *srv = arg;
	struct sl_gw *gw = srv->gw;
	struct sockaddr_in *sin = (struct sockaddr_in *)sa;
	struct conn *c;
	int one = 1;

	if (srv->nconns >= gw->conf.max_connections) {
		evutil_closesocket(fd);
		return;
	}
	c = calloc(1, sizeof(*c));
	if (c == NULL) {
		evutil_closesocket(fd);
		return;
	}
	c->srv = srv;
	c->qcap = gw->conf.max_pending;
	c->q = calloc(c->qcap, sizeof(*c->q));
	c->bev = bufferevent_socket_new(gw->base, fd, BEV_OPT_CLOSE_ON_FREE);
	c->hb = evtimer_new(gw->base, on_heartbeat, c);
	c->kill = evtimer_new(gw->base, on_kill, c);
	if (c->q == NULL || c->bev == NULL || c->hb == NULL || c->kill == NULL) {
		if (c->bev != NULL)
			bufferevent_free(c->bev);
		else
			evutil_closesocket(fd);
		if (c->hb != NULL)
			event_free(c->hb);
		if (c->kill != NULL)
			event_free(c->kill);
		free(c->q);
		free(c);
		return;
	}
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (sa->sa_family == AF_INET) {
		char ip[INET_ADDRSTRLEN];

		inet_ntop(AF_INET, &sin->sin_addr, ip, sizeof(ip));
		snprintf(c->remote, sizeof(c->remote), "%s:%u", ip, ntohs(sin->sin_port));
	}
	c->hb_ms = DEF_HEARTBEAT_MS;
	c->msg_timeout_ms = (int32_t)gw->conf.msg_timeout_ms;
	c->obuf_size = DEF_OBUF_SIZE;
	c->obuf_timeout_ms = DEF_OBUF_TIMEOUT_MS;
	c->connect_ts = (uint64_t)time(NULL);
	c->next = srv->conns;
	if (srv->conns != NULL)
		srv->conns->prev = c;
	srv->conns = c;
	srv->nconns++;
	gw->m.conns_total++;
	bufferevent_setcb(c->bev, on_read, on_write, on_event, c);
	/* input: one command line, its size and the largest body */
	bufferevent_setwatermark(c->bev, EV_READ, 0,
				 LINE_MAX_LEN + 8 + (size_t)gw->conf.max_body_size);
	bufferevent_setwatermark(c->bev, EV_WRITE, gw->conf.max_output_bytes / 2, 0);
	/* libevent reads 16 KiB per callback by default: more commands per turn of the
	 * loop fill the publish batches better */
	(void)bufferevent_set_max_single_read(c->bev, READ_MAX);
	(void)bufferevent_set_max_single_write(c->bev, READ_MAX);
	timers_apply(c);
	bufferevent_enable(c->bev, EV_READ | EV_WRITE);
}

/* ---- stats ---- */

json_t *
sl_nsqtcp_clients_json(struct sl_gw *gw, const char *topic, const char *channel)
{
	struct tcp *srv = gw->tcp;
	json_t *a = json_array(), *o;
	struct conn *c;

	for (c = srv != NULL ? srv->conns : NULL; c != NULL && a != NULL; c = c->next) {
		if (channel != NULL ? (c->state == ST_INIT || strcmp(c->topic, topic) != 0 ||
				       strcmp(c->channel, channel) != 0)
				    : c->pub_count == 0)
			continue;
		o = json_pack("{s:s, s:s, s:s, s:s, s:i, s:I, s:I, s:I, s:I, s:I, s:I, s:i, "
			      "s:b, s:b, s:s, s:b}",
			      "client_id", c->client_id, "hostname", c->hostname,
			      "version", "V2", "remote_address", c->remote,
			      "state", c->state == ST_INIT ? 2 : c->state == ST_SUBSCRIBED ? 3 : 4,
			      "ready_count", (json_int_t)c->rdy,
			      "in_flight_count", (json_int_t)c->inflight,
			      "message_count", (json_int_t)c->msg_count,
			      "finish_count", (json_int_t)c->fin_count,
			      "requeue_count", (json_int_t)c->req_count,
			      "connect_ts", (json_int_t)c->connect_ts,
			      "sample_rate", c->sample_rate, "deflate", 0, "snappy", 0,
			      "user_agent", c->user_agent, "tls", 0);
		if (o != NULL && channel == NULL)
			json_object_set_new(o, "pub_counts",
					    json_pack("[{s:s, s:I}]", "topic", c->pub_topic,
						      "count", (json_int_t)c->pub_count));
		json_array_append_new(a, o);
	}
	return a;
}

uint64_t
sl_nsqtcp_in_flight(struct sl_gw *gw, const char *topic, const char *channel)
{
	struct tcp *srv = gw->tcp;
	struct conn *c;
	uint64_t n = 0;

	for (c = srv != NULL ? srv->conns : NULL; c != NULL; c = c->next)
		if (c->state != ST_INIT && strcmp(c->topic, topic) == 0 &&
		    strcmp(c->channel, channel) == 0)
			n += c->inflight;
	return n;
}

uint32_t
sl_nsqtcp_conns(struct sl_gw *gw)
{
	const struct tcp *srv = gw->tcp;

	return srv != NULL ? srv->nconns : 0;
}

/* ---- listener ---- */

int
sl_nsqtcp_open(struct sl_gw *gw)
{
	struct sockaddr_storage ss;
	struct timeval tv = { SWEEP_MS / 1000, (SWEEP_MS % 1000) * 1000 };
	int sslen = sizeof(ss);
	struct tcp *srv;

	srv = calloc(1, sizeof(*srv));
	if (srv == NULL)
		return -1;
	srv->gw = gw;
	if (evutil_parse_sockaddr_port(gw->conf.tcp_address, (struct sockaddr *)&ss,
				       &sslen) != 0) {
		fprintf(stderr, "sluice-nsqd: bad --tcp-address \"%s\"\n", gw->conf.tcp_address);
		free(srv);
		return -1;
	}
	srv->lis = evconnlistener_new_bind(gw->base, on_accept, srv,
					   LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE, 128,
					   (struct sockaddr *)&ss, sslen);
	if (srv->lis == NULL) {
		fprintf(stderr, "sluice-nsqd: cannot listen on %s: %s\n", gw->conf.tcp_address,
			strerror(errno));
		free(srv);
		return -1;
	}
	if (ss.ss_family == AF_INET) {
		struct sockaddr_in bound;
		socklen_t bl = sizeof(bound);

		getsockname(evconnlistener_get_fd(srv->lis), (struct sockaddr *)&bound, &bl);
		gw->tcp_port = ntohs(bound.sin_port);
		inet_ntop(AF_INET, &bound.sin_addr, gw->tcp_host, sizeof(gw->tcp_host));
	}
	srv->sweep = event_new(gw->base, -1, EV_PERSIST, on_sweep, srv);
	srv->retry = evtimer_new(gw->base, on_retry, srv);
	if (srv->sweep == NULL || srv->retry == NULL || event_add(srv->sweep, &tv) != 0) {
		evconnlistener_free(srv->lis);
		free(srv);
		return -1;
	}
	gw->tcp = srv;
	gw->on_topic_exists = sl_nsqtcp_topic_exists;
	return 0;
}

void
sl_nsqtcp_close(struct sl_gw *gw)
{
	struct tcp *srv = gw->tcp;

	if (srv == NULL)
		return;
	while (srv->conns != NULL)
		conn_free(srv->conns);
	/* connections whose publishes are still in flight */
	sl_gw_poll(gw);
	event_free(srv->sweep);
	event_free(srv->retry);
	evconnlistener_free(srv->lis);
	free(srv->datas);
	free(srv->lens);
	free(srv);
	gw->tcp = NULL;
	gw->on_topic_exists = NULL;
}
