/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * sluice wire protocol v1: the codec shared by the broker and the clients.
 * Pure functions over byte buffers: no DPDK, no allocation, no syscalls.
 *
 * Every datagram is one frame: a 32-byte header then a body. All integers are
 * big-endian (network byte order). docs/protocol.md is the byte-by-byte reference.
 *
 * Header (32 bytes):
 *   off size field
 *     0    2 magic        0x534C ("SL")
 *     2    1 version      1
 *     3    1 opcode       SL_OP_*
 *     4    2 flags        SL_WIRE_F_*
 *     6    2 body_len     bytes after the header (must equal datagram length - 32)
 *     8    8 session      session id (0 in HELLO)
 *    16    8 seq          request sequence, per session, starts at 1
 *    24    8 cookie       opaque client value, echoed verbatim in the answer
 *
 * Address block (SUB, RDY, FIN, REQ, TOUCH, CLS, SET_OFFSET):
 *     0    2 partition
 *     2    1 topic_len    1..64
 *     3    1 channel_len  1..64 (0 only in CLS, meaning "the whole session")
 *     4    n topic, then channel (no terminator)
 *
 * Bodies are described next to each struct below.
 */
#ifndef SL_WIRE_H
#define SL_WIRE_H

#include <stddef.h>
#include <stdint.h>

#define SL_WIRE_MAGIC 0x534C
#define SL_WIRE_VERSION 1
#define SL_WIRE_HDR_LEN 32
#define SL_WIRE_NAME_MAX 64
/* Largest UDP payload a frame may use on a 1500-byte MTU: 1500 - 20 (IPv4) - 8 (UDP). */
#define SL_WIRE_DGRAM_MAX_STD 1472
/* Largest UDP payload with 9000-byte jumbo frames. */
#define SL_WIRE_DGRAM_MAX_JUMBO 8972
/* Maximum messages in one MPUB and message ids in one FIN. */
#define SL_WIRE_MPUB_MAX 256
#define SL_WIRE_FIN_MAX 128
/* partition value in PUB/MPUB meaning "any partition: the broker chooses". */
#define SL_WIRE_PART_ANY 0xFFFF
/* Default UDP port of client traffic. */
#define SL_WIRE_UDP_PORT 5150

enum sl_wire_op {
	SL_OP_HELLO = 0x01,
	SL_OP_PUB = 0x02,
	SL_OP_MPUB = 0x03,
	SL_OP_SUB = 0x04,
	SL_OP_RDY = 0x05,
	SL_OP_FIN = 0x06,
	SL_OP_REQ = 0x07,
	SL_OP_TOUCH = 0x08,
	SL_OP_CLS = 0x09,
	SL_OP_NOP = 0x0A,
	SL_OP_SET_OFFSET = 0x0B,
	SL_OP_METADATA = 0x0C,	/* leader discovery: no session needed (like HELLO) */
	SL_OP_MPUB_PART = 0x0D,	/* one fragment of an MPUB larger than a datagram */
	/* broker -> client */
	SL_OP_OK = 0x80,
	SL_OP_ERR = 0x81,
	SL_OP_MSG = 0x82,
	SL_OP_WELCOME = 0x83,
	SL_OP_META = 0x84,	/* the answer to METADATA */
};
/* Request opcodes are below this (a table indexed by opcode has this many entries). */
#define SL_WIRE_OP_MAX (SL_OP_MPUB_PART + 1)

/* header flags */
#define SL_WIRE_F_NOACK 0x0001 /* PUB/MPUB/FIN: fire and forget, no OK (ERR still sent) */
#define SL_WIRE_F_RETRY 0x0002 /* retransmission of an earlier request (informational) */
#define SL_WIRE_F_PRODUCER 0x0004 /* HELLO: the body ends with a u64 producer id */
/* PUB/MPUB: the client does not send it again after a busy answer (it reports the answer
 * to its application): a busy refusal opens no hole in the session's order (protocol.md
 * section 8, rule 10). Ignored on other requests and by brokers that predate it. */
#define SL_WIRE_F_NORESEND 0x0008
/* METADATA: the client reads META v2 (ignored by brokers that predate it, which answer
 * the META of before). META: this META is v2: entry bytes 14..15 carry max_record. */
#define SL_WIRE_F_META2 0x0010
/* Any frame: it may share its datagram with other frames, back to back (a bundle,
 * docs/protocol.md section 1). On WELCOME: the broker takes bundles and bundles its answers
 * to the requests that carry the flag. On a request: the client reads bundled answers. */
#define SL_WIRE_F_BUNDLE 0x0020
/* Most frames in one bundle. */
#define SL_WIRE_BUNDLE_MAX 64

/* PUB / MPUB body flags */
#define SL_WIRE_PUB_TRACE 0x01 /* a u64 trace id follows the topic name */

/* SUB flags */
#define SL_WIRE_SUB_ORDERED 0x01   /* deliver one message at a time per partition */
#define SL_WIRE_SUB_EPHEMERAL 0x02 /* channel disappears with its last subscriber */

/* SET_OFFSET kinds */
enum sl_wire_off_kind {
	SL_OFF_OFFSET = 0,    /* a queue byte offset (must be a message boundary) */
	SL_OFF_COUNT = 1,     /* a message count: position before message id count+1 */
	SL_OFF_TIMESTAMP = 2, /* first message with timestamp >= value (ns since epoch) */
	SL_OFF_END = 3,	      /* the current end of the partition */
};

struct sl_wire_hdr {
	uint8_t version;
	uint8_t opcode;
	uint16_t flags;
	uint16_t body_len;
	uint64_t session;
	uint64_t seq;
	uint64_t cookie;
};

/* Topic/partition/channel address. Name pointers point into the decoded buffer. */
struct sl_wire_addr {
	uint16_t partition;
	uint8_t topic_len;
	uint8_t channel_len;
	const char *topic;
	const char *channel;
};

/*
 * HELLO body: u32 client_version_info (free form, e.g. library version),
 *             u32 requested window (0 = broker default),
 *             optionally a client token: u8 token_len (1..SL_WIRE_TOKEN_MAX), then
 *             token_len bytes, then with header flag SL_WIRE_F_PRODUCER a u64 producer
 *             id (not 0: the client's idempotent producer, kept across sessions and
 *             brokers, docs/protocol.md section 8). Body length exactly 8 (no token) or
 *             9 + token_len, plus 8 with SL_WIRE_F_PRODUCER.
 */
#define SL_WIRE_TOKEN_MAX 128
struct sl_wire_hello {
	uint32_t client_info;
	uint32_t window;
	uint8_t token_len;		/* 0: no token */
	const uint8_t *token;		/* token_len bytes (decoded: points into the body) */
	uint64_t producer;		/* 0: none (no SL_WIRE_F_PRODUCER) */
};

/*
 * WELCOME body (24 bytes): u64 session, u32 window (max requests in flight),
 * u32 max_msg (largest message body), u32 heartbeat_ms, u32 timeout_ms.
 */
struct sl_wire_welcome {
	uint64_t session;
	uint32_t window;
	uint32_t max_msg;
	uint32_t heartbeat_ms;
	uint32_t timeout_ms;
};

/*
 * PUB body: u16 partition, u8 topic_len, u8 flags, topic, [u64 trace id],
 *           u32 msg_len, msg bytes.
 * MPUB body: u16 partition, u8 topic_len, u8 flags, topic, [u64 trace id],
 *            u16 count (1..SL_WIRE_MPUB_MAX), count x (u32 len, bytes).
 * For MPUB, msgs[] is not filled by the decoder: iterate with sl_wire_mpub_next().
 */
struct sl_wire_pub {
	uint16_t partition;
	uint8_t topic_len;
	uint8_t flags;
	const char *topic;
	uint64_t trace_id;
	uint16_t count;	      /* 1 for PUB */
	uint32_t msg_len;     /* PUB: message length; MPUB: total bytes of all messages */
	const uint8_t *msg;   /* PUB: message; MPUB: first (u32 len, bytes) element */
	uint32_t msgs_len;    /* MPUB: bytes of the element area */
	/* not on the wire: the broker fills them from the session (0: none, the decoder's
	 * value) and writes them with the record (ptab.h) */
	uint64_t producer;    /* the session's producer id */
	uint64_t pseq;        /* the request's seq */
};

/*
 * MPUB_PART body: one fragment of an MPUB too large for one datagram (docs/protocol.md
 * "MPUB_PART"). The MPUB's prefix, then the fragment's place, then a piece of the MPUB's
 * element area (count x (u32 len, bytes), total_len bytes in all):
 *   u16 partition, u8 topic_len, u8 flags, topic, [u64 trace id]   (as in MPUB, and the
 *                                                same in every fragment of the MPUB)
 *   u8 index (0..nfrag-1), u8 nfrag (1..SL_WIRE_MPART_FRAGS), u16 count (1..256),
 *   u32 total_len (4 x count..SL_WIRE_MPART_TOTAL_MAX), u32 off, chunk bytes (the rest
 *   of the body, at least 1, off + chunk_len <= total_len).
 * Every fragment carries the session, seq and cookie of the MPUB in its header. The broker
 * keeps the fragments of (session, seq) until all nfrag are there, without overlap and
 * covering the element area exactly, then publishes them as one MPUB (all or none).
 */
#define SL_WIRE_MPART_FRAGS 16		/* most fragments of one MPUB */
#define SL_WIRE_MPART_TOTAL_MAX 24576	/* largest element area of a fragmented MPUB */
#define SL_WIRE_MPART_FIXED 12		/* index, nfrag, count, total_len, off */
struct sl_wire_mpart {
	uint16_t partition;
	uint8_t topic_len;
	uint8_t flags;
	const char *topic;
	uint64_t trace_id;
	uint8_t index;
	uint8_t nfrag;
	uint16_t count;
	uint32_t total_len;
	uint32_t off;
	uint32_t chunk_len;
	const uint8_t *chunk;
};

/* SUB body: address, u8 flags, u8 reserved, u32 rdy (initial credit). */
struct sl_wire_sub {
	struct sl_wire_addr addr;
	uint8_t flags;
	uint32_t rdy;
};

/*
 * RDY body: address, u32 count.
 * TOUCH body: address, u64 msg id.
 * REQ body: address, u64 msg id, u32 delay_ms.
 * FIN body: address, u16 count (1..SL_WIRE_FIN_MAX), count x u64 msg id.
 * CLS body: address (channel_len 0 and topic_len 0: close the session).
 * SET_OFFSET body: address, u8 kind, 7 reserved, u64 value.
 * NOP body: empty.
 * One struct carries all of these; fields not in the opcode are zero.
 */
struct sl_wire_chan_op {
	struct sl_wire_addr addr;
	uint32_t count;	       /* RDY: credit; FIN: number of ids */
	uint64_t msg_id;       /* REQ, TOUCH; FIN: first id */
	uint32_t delay_ms;     /* REQ */
	uint8_t kind;	       /* SET_OFFSET */
	uint64_t value;	       /* SET_OFFSET */
	const uint8_t *ids;    /* FIN: count big-endian u64 ids */
};

/*
 * OK body (32 bytes): u8 req_opcode, u8 reserved, u16 partition, u32 count,
 *                     u64 id, u64 offset, u64 aux.
 *   PUB/MPUB: id = first message id, offset = its queue offset, count = messages,
 *             aux = partition message count after the write.
 *   SUB: id = subscription id, offset = channel consume position, aux = partition end count.
 *   FIN: count = ids finished.  SET_OFFSET: offset = new position, aux = message count.
 *   others: zero.
 */
struct sl_wire_ok {
	uint8_t req_opcode;
	uint16_t partition;
	uint32_t count;
	uint64_t id;
	uint64_t offset;
	uint64_t aux;
};

/* ERR body: u16 code (SL_E_*), u8 req_opcode, u8 reserved, u16 partition, u16 text_len,
 *           text (not terminated, at most 128 bytes). */
struct sl_wire_err {
	uint16_t code;
	uint8_t req_opcode;
	uint16_t partition;
	uint16_t text_len;
	const char *text;
};

/*
 * MSG body (48 + len bytes): u64 sub_id, u16 partition, u16 attempts, u32 len,
 *                            u64 msg_id, u64 offset, u64 timestamp_ns, u64 trace_id, bytes.
 */
struct sl_wire_msg {
	uint64_t sub_id;
	uint16_t partition;
	uint16_t attempts;
	uint32_t len;
	uint64_t msg_id;
	uint64_t offset;
	uint64_t timestamp_ns;
	uint64_t trace_id;
	const uint8_t *data;
};

/*
 * METADATA body (3 + topic_len bytes): u16 first_partition, u8 topic_len (1..64), topic.
 * Sent with session 0 (or a session: needed when the node has a token file).
 */
struct sl_wire_metareq {
	uint16_t first_partition;
	uint8_t topic_len;
	const char *topic;
};

/*
 * META body (8 + 20 x count bytes): u16 nparts (the topic's partition count),
 * u16 first_partition, u16 count (0..SL_WIRE_META_MAX), u16 reserved (0), then count
 * entries for partitions first_partition, first_partition + 1, ...:
 *   off size
 *     0    2 partition
 *     2    2 flags       SL_WIRE_META_F_*
 *     4    4 leader      leader's node id (0: no leader known)
 *     8    4 leader_ip   IPv4, network order as on the wire (0: unknown)
 *    12    2 leader_port its client UDP port (0: unknown)
 *    14    2 reserved    0; in META v2 (header flag SL_WIRE_F_META2, sent only to a
 *                        METADATA with that flag) max_record: the largest replica record
 *                        one PUB/MPUB to the partition may make, the sum over its
 *                        messages of SL_WIRE_META_REC_SIZE(len); 0 = no such bound (not
 *                        replicated: only the datagram, WELCOME's max_msg, bounds it)
 *    16    4 epoch       write epoch of the partition's current view
 * A client pages with first_partition = first_partition + count while that is < nparts.
 */
#define SL_WIRE_META_HDR_LEN 8
#define SL_WIRE_META_ENTRY_LEN 20
#define SL_WIRE_META_MAX 64		/* entries per META: 8 + 64 x 20 = 1288 body bytes */
#define SL_WIRE_META_F_WRITABLE 0x0001	/* the answering node leads and takes writes */
#define SL_WIRE_META_F_LEADER 0x0002	/* the answering node leads the partition */
#define SL_WIRE_META_F_REPLICA 0x0004	/* the answering node is one of its replicas */
#define SL_WIRE_META_F_ALL 0x0007
/* a message's share of a replica record (its log encoding, docs/storage.md): 32 bytes
 * and the length rounded up to 8 */
#define SL_WIRE_META_REC_SIZE(len) (32 + (((uint64_t)(len) + 7) & ~(uint64_t)7))

struct sl_wire_meta_entry {
	uint16_t partition;
	uint16_t flags;
	uint32_t leader;
	uint32_t leader_ip;		/* network byte order */
	uint16_t leader_port;		/* host byte order */
	uint16_t max_record;		/* v2 only (0 in v1): see above */
	uint32_t epoch;
};

struct sl_wire_meta {
	uint16_t nparts;
	uint16_t first_partition;
	uint16_t count;
	uint8_t v2;			/* META v2 (header flag SL_WIRE_F_META2) */
	const uint8_t *entries;		/* count entries: read with sl_wire_meta_get */
};

#define SL_WIRE_OK_LEN 32
#define SL_WIRE_WELCOME_LEN 24
#define SL_WIRE_MSG_HDR_LEN 48
#define SL_WIRE_ERR_HDR_LEN 8
#define SL_WIRE_ERR_TEXT_MAX 128

/**
 * Decode and validate a frame header. buf/len is the UDP payload.
 * Returns 0, or -SL_E_MALFORMED (short, bad magic, body_len != len - 32),
 * -SL_E_VERSION, -SL_E_OPCODE (opcode not in enum sl_wire_op).
 * Calling context: any thread.
 */
int
sl_wire_decode_hdr(const uint8_t *buf, size_t len, struct sl_wire_hdr *hdr);

/**
 * Whether the datagram buf/len is a bundle: its first frame carries SL_WIRE_F_BUNDLE and
 * ends before the datagram does (docs/protocol.md section 1). Only the first header is
 * read; sl_wire_bundle_split checks the framing. Any thread.
 */
int
sl_wire_is_bundle(const uint8_t *buf, size_t len);

/**
 * The frames of a datagram of len bytes: fills off[i] and flen[i] of each (at most max) and
 * returns how many, or -SL_E_MALFORMED. A datagram whose first frame lacks SL_WIRE_F_BUNDLE
 * or fills it alone is one frame (off 0, len bytes: sl_wire_decode_hdr judges it). Else it is
 * a bundle: frames back to back, each at least a header with the magic and the flag, its
 * body_len inside the datagram, the last ending exactly at len, at most max of them. Only
 * the frames' framing is checked here: decode each with sl_wire_decode_hdr. Any thread.
 */
int
sl_wire_bundle_split(const uint8_t *buf, size_t len, uint16_t *off, uint16_t *flen,
		     unsigned int max);

/** Encode a header into buf (at least SL_WIRE_HDR_LEN bytes). Any thread. */

void
sl_wire_encode_hdr(uint8_t *buf, const struct sl_wire_hdr *hdr);

/*
 * Body decoders: body/len is the body after the header. They validate every length
 * against len, name lengths (1..64, channel may be 0 only for CLS) and counts, and
 * return 0 or -SL_E_MALFORMED / -SL_E_NAME. Pointers in the result point into body.
 * Any thread.
 */
/* HELLO also needs the header's flags (SL_WIRE_F_PRODUCER) */
int
sl_wire_decode_hello(const uint8_t *body, size_t len, uint16_t hdr_flags,
		     struct sl_wire_hello *out);
int
sl_wire_decode_welcome(const uint8_t *body, size_t len, struct sl_wire_welcome *out);
int
sl_wire_decode_pub(const uint8_t *body, size_t len, int mpub, struct sl_wire_pub *out);
int
sl_wire_decode_mpart(const uint8_t *body, size_t len, struct sl_wire_mpart *out);
int
sl_wire_decode_sub(const uint8_t *body, size_t len, struct sl_wire_sub *out);
/* opcode: SL_OP_RDY, FIN, REQ, TOUCH, CLS, SET_OFFSET */
int
sl_wire_decode_chan_op(uint8_t opcode, const uint8_t *body, size_t len,
		       struct sl_wire_chan_op *out);
int
sl_wire_decode_ok(const uint8_t *body, size_t len, struct sl_wire_ok *out);
int
sl_wire_decode_err(const uint8_t *body, size_t len, struct sl_wire_err *out);
int
sl_wire_decode_msg(const uint8_t *body, size_t len, struct sl_wire_msg *out);
int
sl_wire_decode_metareq(const uint8_t *body, size_t len, struct sl_wire_metareq *out);
/* META: count <= SL_WIRE_META_MAX, first_partition + count <= nparts, entries numbered
 * first_partition, first_partition + 1, ..., known flags only, reserved bytes 0. hdr_flags:
 * the header's; with SL_WIRE_F_META2 it is v2 (out->v2 = 1: max_record read, any value) */
int
sl_wire_decode_meta(const uint8_t *body, size_t len, uint16_t hdr_flags,
		    struct sl_wire_meta *out);

/** The i-th entry (i < count) of a decoded META. Any thread. */
void
sl_wire_meta_get(const struct sl_wire_meta *m, uint16_t i, struct sl_wire_meta_entry *e);

/**
 * Iterate the messages of a decoded MPUB. *pos starts at 0. Returns 1 with
 * data/len set, 0 at the end. The decoder already validated every element.
 */
int
sl_wire_mpub_next(const struct sl_wire_pub *p, uint32_t *pos, const uint8_t **data,
		  uint32_t *len);

/** i-th message id of a decoded FIN (i < count). */
uint64_t
sl_wire_fin_id(const struct sl_wire_chan_op *op, uint32_t i);

/*
 * Encoders: write the whole frame (header + body) into buf of size cap, setting
 * hdr->opcode and hdr->body_len themselves. Return the frame length, or
 * -SL_E_TOO_BIG when it does not fit in cap, -SL_E_NAME for bad names. Any thread.
 */
int
sl_wire_encode_hello(uint8_t *buf, size_t cap, struct sl_wire_hdr *hdr,
		     const struct sl_wire_hello *h);
int
sl_wire_encode_welcome(uint8_t *buf, size_t cap, struct sl_wire_hdr *hdr,
		       const struct sl_wire_welcome *w);
/* PUB: msgs[0]/lens[0]; MPUB (count > 1 or mpub != 0): count messages */
int
sl_wire_encode_pub(uint8_t *buf, size_t cap, struct sl_wire_hdr *hdr, int mpub,
		   uint16_t partition, const char *topic, uint8_t flags, uint64_t trace_id,
		   uint16_t count, const void *const *msgs, const uint32_t *lens);
/* MPUB_PART: one fragment (f->chunk of f->chunk_len bytes), checked as the decoder does */
int
sl_wire_encode_mpart(uint8_t *buf, size_t cap, struct sl_wire_hdr *hdr,
		     const struct sl_wire_mpart *f);
/* The largest chunk one MPUB_PART of a datagram of dgram bytes carries for a topic of
 * topic_len bytes (flags: the PUB flags), or 0 when none fits. */
uint32_t
sl_wire_mpart_chunk_max(size_t dgram, uint8_t topic_len, uint8_t flags);
int
sl_wire_encode_sub(uint8_t *buf, size_t cap, struct sl_wire_hdr *hdr,
		   const struct sl_wire_sub *s);
/* opcode: SL_OP_RDY, FIN (ids[] of op->count), REQ, TOUCH, CLS, SET_OFFSET, NOP */
int
sl_wire_encode_chan_op(uint8_t *buf, size_t cap, struct sl_wire_hdr *hdr, uint8_t opcode,
		       const struct sl_wire_chan_op *op, const uint64_t *ids);
int
sl_wire_encode_ok(uint8_t *buf, size_t cap, struct sl_wire_hdr *hdr,
		  const struct sl_wire_ok *ok);
int
sl_wire_encode_err(uint8_t *buf, size_t cap, struct sl_wire_hdr *hdr, uint16_t code,
		   uint8_t req_opcode, uint16_t partition, const char *text);
/* MSG: data of m->len bytes copied after the 48-byte body header */
int
sl_wire_encode_msg(uint8_t *buf, size_t cap, struct sl_wire_hdr *hdr,
		   const struct sl_wire_msg *m);

/* METADATA for topic (NUL-terminated), from partition first */
int
sl_wire_encode_metareq(uint8_t *buf, size_t cap, struct sl_wire_hdr *hdr, uint16_t first,
		       const char *topic);
/* META with m->count entries of e[] (e[i].partition must be m->first_partition + i).
 * m->v2: a META v2 (sets SL_WIRE_F_META2 in hdr->flags, writes max_record), only for a
 * METADATA that had that flag; else the flag is cleared and max_record must be 0. */
int
sl_wire_encode_meta(uint8_t *buf, size_t cap, struct sl_wire_hdr *hdr,
		    const struct sl_wire_meta *m, const struct sl_wire_meta_entry *e);

/** Validate a topic or channel name: sl_name_check() of dataplane/base/name.h (1..64 bytes
 * of [A-Za-z0-9._-#], not starting with '.'). Returns 0 or -SL_E_NAME. */
int
sl_wire_check_name(const char *name, size_t len);

/** Name of an opcode for logs and tools ("PUB"), or "?". */
const char *
sl_wire_op_name(uint8_t opcode);

#endif /* SL_WIRE_H */
