/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * Unit test of the replica link envelope (dataplane/rlink.c), format version 3: round
 * trip, golden header bytes, every truncation, bad magic, name lengths and versions; the
 * tag (the documented XChaCha20-Poly1305 construction and nonce; any flipped bit, another
 * key, another direction, another boot, no tag at all are refused); the replay window.
 */
#include <errno.h>
#include <string.h>

#include "check.h"
#include "rlink.h"

static const uint8_t key_a[SL_RLINK_KEY_LEN] = "0123456789abcdef0123456789abcdef";
static const uint8_t key_b[SL_RLINK_KEY_LEN] = "another key, 32 bytes long......";

static int
sealed(uint8_t *buf, uint32_t cap, const struct sl_rlink_env *e, const char *dgram,
       const struct sl_rlink_key *k)
{
	int len = sl_rlink_encode(buf, cap, e);

	if (len < 0)
		return len;
	memcpy(buf + len, dgram, strlen(dgram));
	return sl_rlink_seal(buf, (uint32_t)len + (uint32_t)strlen(dgram), cap, k);
}

static void
test_format(void)
{
	uint8_t buf[256];
	struct sl_rlink_env e = {.from = 3, .to = 0x01020304, .partition = 513, .name = "orders",
				 .name_len = 6, .lane = 2, .key_id = 0x5a,
				 .seq = 0x1122334455667788ull, .boot = 0xa1b2c3d4e5f60718ull}, d;
	static const uint8_t golden[SL_RLINK_HDR_LEN] = {
		'S', 'L', 'R', 'P', 3, 6, 0x02, 0x01, 0, 0, 0, 3, 1, 2, 3, 4,
		2, 0x5a, 0, 0, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88,
		0xa1, 0xb2, 0xc3, 0xd4, 0xe5, 0xf6, 0x07, 0x18};
	uint32_t n, i, bad = 0;
	int len;

	len = sl_rlink_encode(buf, sizeof(buf), &e);
	CHECK(len == SL_RLINK_HDR_LEN + 6, "envelope of a 6-byte name is %d bytes", len);
	CHECK(memcmp(buf, golden, sizeof(golden)) == 0,
	      "header bytes as rlink.h documents them (magic, version 3, lane, key id, seq, boot)");
	memcpy(buf + len, "DATAGRAM", 8);
	n = (uint32_t)sl_rlink_seal(buf, (uint32_t)len + 8, sizeof(buf), NULL);
	CHECK(n == (uint32_t)len + 8 + SL_RLINK_TAG_LEN, "the tag adds 16 bytes");
	CHECK(sl_rlink_decode(buf, n, &d) == 0 && d.from == 3 && d.to == 0x01020304 &&
		      d.partition == 513 && d.name_len == 6 &&
		      memcmp(d.name, "orders", 6) == 0 && d.payload_len == 8 &&
		      memcmp(d.payload, "DATAGRAM", 8) == 0 && d.lane == 2 && d.key_id == 0x5a &&
		      d.seq == 0x1122334455667788ull && d.boot == 0xa1b2c3d4e5f60718ull,
	      "round trip: addresses, partition, lane, key id, seq, boot, name, datagram");
	for (i = 0; i < (uint32_t)len + SL_RLINK_TAG_LEN; i++)
		bad += sl_rlink_decode(buf, i, &d) != -EBADMSG;
	CHECK(bad == 0, "every truncation inside the envelope and tag is -EBADMSG");
	CHECK(sl_rlink_decode(buf, (uint32_t)len + SL_RLINK_TAG_LEN, &d) == 0 &&
		      d.payload_len == 0,
	      "an empty datagram is still an envelope");
	buf[4] = 1;
	CHECK(sl_rlink_decode(buf, n, &d) == -EPROTONOSUPPORT,
	      "version 1 (no tag) is refused");
	buf[4] = 2;
	CHECK(sl_rlink_decode(buf, n, &d) == -EPROTONOSUPPORT,
	      "version 2 (BLAKE2b tag, no boot) is refused");
	buf[4] = SL_RLINK_VERSION;
	buf[18] = 1;
	CHECK(sl_rlink_decode(buf, n, &d) == -EBADMSG, "a reserved byte set is refused");
	buf[18] = 0;
	buf[5] = 0;
	CHECK(sl_rlink_decode(buf, n, &d) == -EBADMSG, "an empty name is refused");
	buf[5] = 65;
	CHECK(sl_rlink_decode(buf, sizeof(buf), &d) == -EBADMSG, "a 65-byte name is refused");
	buf[0] = 'X';
	CHECK(sl_rlink_decode(buf, n, &d) == -EBADMSG, "bad magic");
	CHECK(sl_rlink_encode(buf, 10, &e) == -ENOSPC, "encode into a short buffer: -ENOSPC");
	CHECK(sl_rlink_seal(buf, 250, sizeof(buf), NULL) == -ENOSPC,
	      "seal without room for the tag: -ENOSPC");
	CHECK(sl_rlink_seal(buf, SL_RLINK_HDR_LEN - 1, sizeof(buf), NULL) == -EINVAL,
	      "seal of less than a header (no nonce): -EINVAL");
	e.name_len = 0;
	CHECK(sl_rlink_encode(buf, sizeof(buf), &e) == -EINVAL, "encode without a name: -EINVAL");
}

static void
test_tag(void)
{
	struct sl_rlink_key ab, ab2, ba, other;
	struct sl_rlink_env e = {.from = 1, .to = 2, .partition = 0, .name = "r",
				 .name_len = 1, .seq = 77}, d;
	uint8_t buf[256], copy[256];
	uint32_t i, flips = 0;
	int n;

	sl_rlink_key_derive(&ab, key_a, 1, 2);
	sl_rlink_key_derive(&ab2, key_a, 1, 2);
	sl_rlink_key_derive(&ba, key_a, 2, 1);
	sl_rlink_key_derive(&other, key_b, 1, 2);
	CHECK(ab.id == sl_rlink_key_id(key_a) && ab.id != 0 && ab.id != other.id,
	      "a key id names the cluster key (%u, other key %u)", ab.id, other.id);
	e.key_id = ab.id;
	n = sealed(buf, sizeof(buf), &e, "WRITE commit=5 body", &ab);
	CHECK(n > 0 && sl_rlink_decode(buf, (uint32_t)n, &d) == 0 &&
		      sl_rlink_verify(buf, (uint32_t)n, &ab2) == 0,
	      "a sealed datagram verifies with the same link key");
	CHECK(sl_rlink_verify(buf, (uint32_t)n, &other) == -EBADMSG,
	      "another cluster key does not verify it");
	CHECK(sl_rlink_verify(buf, (uint32_t)n, &ba) == -EBADMSG,
	      "the reverse direction's key does not verify it (no reflection)");
	for (i = 0; i < (uint32_t)n * 8; i++) {
		memcpy(copy, buf, (size_t)n);
		copy[i / 8] ^= (uint8_t)(1u << (i % 8));
		flips += sl_rlink_verify(copy, (uint32_t)n, &ab) == 0;
	}
	CHECK(flips == 0, "every one of the %d bits flipped is refused (header, name, body, tag)",
	      n * 8);
	/* the construction rlink.h documents, computed here from its parts */
	{
		uint8_t link[32], msg[23], nonce[24] = {0}, tag[16], none = 0;
		unsigned long long tl;

		memcpy(msg, "sluice rlink v3", 15);
		memcpy(msg + 15, "\0\0\0\1\0\0\0\2", 8);
		crypto_generichash(link, sizeof(link), msg, sizeof(msg), key_a, sizeof(key_a));
		memcpy(nonce, buf + 28, 8);		/* boot */
		nonce[8] = buf[16];			/* lane */
		memcpy(nonce + 16, buf + 20, 8);	/* seq */
		crypto_aead_xchacha20poly1305_ietf_encrypt_detached(
			&none, tag, &tl, &none, 0, buf, (unsigned long long)n - 16, NULL, nonce,
			link);
		CHECK(memcmp(tag, buf + n - 16, 16) == 0,
		      "the tag is XChaCha20-Poly1305's over the envelope, nonce boot|lane|seq");
	}
	e.boot = 1;
	n = sealed(copy, sizeof(copy), &e, "WRITE commit=5 body", &ab);
	CHECK(memcmp(copy + n - 16, buf + n - 16, 16) != 0,
	      "another boot (a restarted sender), same seq: another nonce, another tag");
	memcpy(copy + 28, buf + 28, 8);
	CHECK(sl_rlink_verify(copy, (uint32_t)n, &ab) == -EBADMSG,
	      "a tag moved to the first boot's header is refused");
	e.boot = 0;
	n = sealed(buf, sizeof(buf), &e, "WRITE commit=5 body", NULL);
	CHECK(sl_rlink_verify(buf, (uint32_t)n, &ab) == -EBADMSG,
	      "a datagram without a tag (insecure sender) is refused by a keyed receiver");
	n = sealed(buf, sizeof(buf), &e, "", &ab);
	CHECK(sl_rlink_verify(buf, (uint32_t)n, &ab) == 0, "an empty datagram is tagged too");
}

static void
test_replay(void)
{
	struct sl_rlink_replay w = {0};
	uint64_t base = 1700000000000000000ull;
	int fresh = 0, i;

	CHECK(sl_rlink_replay_check(&w, base) == 0, "the first sequence is new");
	sl_rlink_replay_mark(&w, base);
	CHECK(sl_rlink_replay_check(&w, base) == -EALREADY, "the same sequence again: replay");
	sl_rlink_replay_mark(&w, base + 5);
	CHECK(sl_rlink_replay_check(&w, base + 3) == 0,
	      "an earlier sequence not seen yet (reordered) is new");
	sl_rlink_replay_mark(&w, base + 3);
	CHECK(sl_rlink_replay_check(&w, base + 3) == -EALREADY &&
		      sl_rlink_replay_check(&w, base + 5) == -EALREADY &&
		      sl_rlink_replay_check(&w, base) == -EALREADY,
	      "every sequence seen stays refused inside the window");
	sl_rlink_replay_mark(&w, base + 5 + 63);
	CHECK(sl_rlink_replay_check(&w, base + 5) == -EALREADY &&
		      sl_rlink_replay_check(&w, base + 4) == -EALREADY,
	      "the window's last slot and what fell out of it are refused");
	CHECK(sl_rlink_replay_check(&w, base + 6) == 0, "inside the window, unseen: new");
	sl_rlink_replay_mark(&w, base + 10000);
	CHECK(sl_rlink_replay_check(&w, base + 5 + 63) == -EALREADY,
	      "a jump ahead forgets nothing older: all refused");
	for (i = 1; i <= 100; i++) {
		fresh += sl_rlink_replay_check(&w, base + 10000 + (uint64_t)i) == 0;
		sl_rlink_replay_mark(&w, base + 10000 + (uint64_t)i);
	}
	CHECK(fresh == 100, "a stream in order is accepted datagram by datagram");
}

int
main(void)
{
	if (sodium_init() < 0) {
		CHECK(0, "sodium_init");
		return check_report();
	}
	test_format();
	test_tag();
	test_replay();
	return check_report();
}
