/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * crec: the commit record (the brief's CommitLogData), one per PUB or MPUB per
 * partition, and its one codec. The disk log (storage/disklog.h: each record of a .clog
 * file, followed there by its magic and CRC) and replication (replication/repl.h: WRITE,
 * FETCH_RESP and the catch-up datagrams) carry it in this layout; this is the only place
 * it is encoded, decoded and described. Format version 1 of both containers.
 *
 * The 56-byte body, little-endian, byte by byte:
 *
 *   offset size field            meaning
 *        0    8 log_id           id of the first message of the PUB/MPUB
 *        8    8 epoch            write epoch of the leader that wrote it: view epoch
 *                                << 32 | the leader's rollback generation in that epoch
 *       16    8 last_msg_log_id  id of the last message (= log_id for a PUB)
 *       24    8 msg_offset       queue byte offset of the first message
 *       32    8 msg_cnt          total message count of the partition after the write
 *                                (= last_msg_log_id: ids are consecutive from 1)
 *       40    8 timestamp_ns     the first message's timestamp (ns since the epoch)
 *       48    4 msg_size         bytes of the encoded message records (8-byte multiple)
 *       52    4 msg_num          messages in the record (= last - first + 1)
 *
 * On disk the record is 80 bytes: these 56, the record's producer tag (u64 producer id,
 * u64 seq), then u32 magic "CLOG" (0x474F4C43) and a u32 CRC32C of bytes 0..75 (segment
 * version 3; 64 bytes without the tag in the version 1 and 2 segments of earlier builds:
 * storage/disklog.h, docs/storage.md). In a replication datagram
 * the 56 bytes are followed by the record's producer tag (u64 producer id, u64 seq; with
 * the datagram flag F_PTAG) and msg_size bytes of message records (repl.c).
 */
#ifndef SL_CREC_H
#define SL_CREC_H

#include <stdint.h>

#define SL_CREC_LEN 56

struct sl_crec {
	uint64_t log_id;
	uint64_t epoch;
	uint64_t last_msg_log_id;
	uint64_t msg_offset;
	uint64_t msg_cnt;
	uint64_t timestamp_ns;
	uint32_t msg_size;
	uint32_t msg_num;
	/* Not in the 56 bytes: the record's producer tag (ptab.h), 0 0 = none. Replication
	 * carries it after the crec (repl.c, flag F_PTAG), the disk log after it in its
	 * commit record. sl_crec_decode sets both to 0. */
	uint64_t producer;
	uint64_t pseq;
};

/** Write c's SL_CREC_LEN bytes at p (any alignment). Any thread. */
void
sl_crec_encode(uint8_t *p, const struct sl_crec *c);

/** Read SL_CREC_LEN bytes at p into *c (no check). Any thread. */
void
sl_crec_decode(const uint8_t *p, struct sl_crec *c);

/** Is c consistent in itself (ids in order, msg_cnt = last id, msg_num = the id span,
 * msg_size a multiple of 8 holding msg_num records of at least min_rec bytes)? 0 or
 * -EBADMSG. Any thread. */
int
sl_crec_check(const struct sl_crec *c, uint32_t min_rec);

#endif /* SL_CREC_H */
