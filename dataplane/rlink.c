/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 */
#include <errno.h>
#include <string.h>

#include "bytes.h"
#include "rlink.h"

#define KDF_LABEL "sluice rlink v3"

uint8_t
sl_rlink_key_id(const uint8_t key[SL_RLINK_KEY_LEN])
{
	uint8_t h[16];

	crypto_generichash(h, sizeof(h), (const uint8_t *)"sluice key id", 13, key,
			   SL_RLINK_KEY_LEN);
	return h[0] != 0 ? h[0] : 1;
}

void
sl_rlink_key_derive(struct sl_rlink_key *k, const uint8_t key[SL_RLINK_KEY_LEN],
		    uint32_t from, uint32_t to)
{
	uint8_t msg[sizeof(KDF_LABEL) - 1 + 8], link[32];

	memcpy(msg, KDF_LABEL, sizeof(KDF_LABEL) - 1);
	sl_bytes_put_be32(msg + sizeof(KDF_LABEL) - 1, from);
	sl_bytes_put_be32(msg + sizeof(KDF_LABEL) + 3, to);
	crypto_generichash(link, sizeof(link), msg, sizeof(msg), key, SL_RLINK_KEY_LEN);
	_Static_assert(sizeof(link) == sizeof(k->k), "a link key is 32 bytes");
	memcpy(k->k, link, sizeof(k->k));
	k->id = sl_rlink_key_id(key);
	sodium_memzero(link, sizeof(link));
}

int
sl_rlink_encode(uint8_t *buf, uint32_t cap, const struct sl_rlink_env *env)
{
	uint32_t len = SL_RLINK_HDR_LEN + env->name_len;

	if (env->name_len == 0 || env->name_len > SL_RLINK_NAME_MAX || env->name == NULL)
		return -EINVAL;
	if (cap < len)
		return -ENOSPC;
	sl_bytes_put_be32(buf, SL_RLINK_MAGIC);
	buf[4] = SL_RLINK_VERSION;
	buf[5] = env->name_len;
	sl_bytes_put_be16(buf + 6, env->partition);
	sl_bytes_put_be32(buf + 8, env->from);
	sl_bytes_put_be32(buf + 12, env->to);
	buf[16] = env->lane;
	buf[17] = env->key_id;
	buf[18] = 0;
	buf[19] = 0;
	sl_bytes_put_be64(buf + 20, env->seq);
	sl_bytes_put_be64(buf + 28, env->boot);
	memcpy(buf + SL_RLINK_HDR_LEN, env->name, env->name_len);
	return (int)len;
}

/* The nonce of the datagram whose header is at buf: boot || lane || 0 x 7 || seq. */
static void
nonce_of(uint8_t n[crypto_aead_xchacha20poly1305_ietf_NPUBBYTES], const uint8_t *buf)
{
	memcpy(n, buf + 28, 8);
	n[8] = buf[16];
	memset(n + 9, 0, 7);
	memcpy(n + 16, buf + 20, 8);
}

/* The AEAD's tag over an empty message with buf as associated data: a MAC of buf. */
static void
tag_of(uint8_t tag[SL_RLINK_TAG_LEN], const uint8_t *buf, uint32_t len,
       const struct sl_rlink_key *k)
{
	uint8_t n[crypto_aead_xchacha20poly1305_ietf_NPUBBYTES], none = 0;
	unsigned long long tlen;

	nonce_of(n, buf);
	crypto_aead_xchacha20poly1305_ietf_encrypt_detached(&none, tag, &tlen, &none, 0, buf, len,
							    NULL, n, k->k);
}

int
sl_rlink_seal(uint8_t *buf, uint32_t len, uint32_t cap, const struct sl_rlink_key *k)
{
	if (len < SL_RLINK_HDR_LEN)
		return -EINVAL;
	if (cap < len || cap - len < SL_RLINK_TAG_LEN)
		return -ENOSPC;
	if (k == NULL)
		memset(buf + len, 0, SL_RLINK_TAG_LEN);
	else
		tag_of(buf + len, buf, len, k);
	return (int)(len + SL_RLINK_TAG_LEN);
}

int
sl_rlink_decode(const uint8_t *buf, uint32_t len, struct sl_rlink_env *env)
{
	if (len < SL_RLINK_HDR_LEN || sl_bytes_get_be32(buf) != SL_RLINK_MAGIC)
		return -EBADMSG;
	if (buf[4] != SL_RLINK_VERSION)
		return -EPROTONOSUPPORT;
	env->name_len = buf[5];
	if (env->name_len == 0 || env->name_len > SL_RLINK_NAME_MAX || buf[18] != 0 ||
	    buf[19] != 0 ||
	    len < SL_RLINK_HDR_LEN + (uint32_t)env->name_len + SL_RLINK_TAG_LEN)
		return -EBADMSG;
	env->partition = sl_bytes_get_be16(buf + 6);
	env->from = sl_bytes_get_be32(buf + 8);
	env->to = sl_bytes_get_be32(buf + 12);
	env->lane = buf[16];
	env->key_id = buf[17];
	env->seq = sl_bytes_get_be64(buf + 20);
	env->boot = sl_bytes_get_be64(buf + 28);
	env->name = (const char *)buf + SL_RLINK_HDR_LEN;
	env->payload = buf + SL_RLINK_HDR_LEN + env->name_len;
	env->payload_len = len - SL_RLINK_HDR_LEN - env->name_len - SL_RLINK_TAG_LEN;
	return 0;
}

int
sl_rlink_verify(const uint8_t *buf, uint32_t len, const struct sl_rlink_key *k)
{
	uint8_t tag[SL_RLINK_TAG_LEN];

	if (len < SL_RLINK_HDR_LEN + SL_RLINK_TAG_LEN)
		return -EBADMSG;
	tag_of(tag, buf, len - SL_RLINK_TAG_LEN, k);
	return crypto_verify_16(tag, buf + len - SL_RLINK_TAG_LEN) == 0 ? 0 : -EBADMSG;
}

int
sl_rlink_replay_check(const struct sl_rlink_replay *r, uint64_t seq)
{
	if (seq > r->top)
		return 0;
	if (r->top - seq >= 64)
		return -EALREADY;
	return (r->seen >> (r->top - seq)) & 1 ? -EALREADY : 0;
}

void
sl_rlink_replay_mark(struct sl_rlink_replay *r, uint64_t seq)
{
	if (seq > r->top) {
		uint64_t shift = seq - r->top;

		r->seen = shift >= 64 ? 0 : r->seen << shift;
		r->seen |= 1;
		r->top = seq;
	} else if (r->top - seq < 64) {
		r->seen |= UINT64_C(1) << (r->top - seq);
	}
}
