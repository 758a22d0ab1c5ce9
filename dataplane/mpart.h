/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * mpart: a worker's reassembly of MPUB_PART fragments (docs/protocol.md "MPUB_PART") into
 * one MPUB, all or none. A fixed pool of SL_MPART_SLOTS slots, each the fragments of one
 * (session, seq) so far in a buffer as large as the largest MPUB a fragmented one may be.
 * The pool is one block the caller allocates (sizeof(struct sl_mpart), hugepage memory on
 * a worker, calloc in the unit test): nothing is allocated per fragment.
 *
 * Bounds: at most conf->per_source slots per client IPv4 address; a slot not completed
 * within conf->expiry_ns of its first fragment is dropped (checked at every fragment:
 * an O(slots) scan). A full pool or a source at its cap refuses new MPUBs (SL_E_FULL,
 * the client retries); fragments of an MPUB already started are always taken.
 *
 * Rules a fragment must keep with the slot's first one (else the slot is dropped and
 * the fragment is answered SL_E_MALFORMED): the same partition, topic, flags, trace id,
 * nfrag, count and total_len; an index not held yet whose range [off, off + chunk_len)
 * overlaps no held fragment's. A second copy of a held fragment (same index, offset,
 * length and bytes: a retransmission) changes nothing; a different one is a conflict
 * (malformed). When all nfrag are held their ranges cover the element area exactly (they
 * are disjoint and inside it: their lengths add up to total_len), and the whole is
 * decoded as an MPUB body (every element length checked).
 *
 * Calling context: a pool belongs to one worker lcore; every call on its owner. Pure logic:
 * no DPDK, no allocation, no syscall.
 */
#ifndef SL_MPART_H
#define SL_MPART_H

#include <stdint.h>

#include "wire.h"

#define SL_MPART_SLOTS 32		/* MPUBs in reassembly per worker */
#define SL_MPART_PER_SOURCE 8		/* ... per client address (default) */
#define SL_MPART_EXPIRY_NS 1000000000ull	/* 1 s to complete one (default) */
/* MPUB body prefix: partition, topic_len, flags, topic, trace id, count */
#define SL_MPART_PREFIX_MAX (4 + SL_WIRE_NAME_MAX + 8 + 2)
#define SL_MPART_BUF (SL_MPART_PREFIX_MAX + SL_WIRE_MPART_TOTAL_MAX)

/* sl_mpart_add results besides -SL_E_* */
#define SL_MPART_MORE 0		/* taken, the MPUB waits for more fragments */
#define SL_MPART_DONE 1		/* the MPUB is complete: publish it, then release */
#define SL_MPART_DUP 2		/* a copy of a held fragment: nothing to do */

struct sl_mpart_conf {
	uint32_t per_source;		/* 1..SL_MPART_SLOTS; 0 = SL_MPART_PER_SOURCE */
	uint64_t expiry_ns;		/* 0 = SL_MPART_EXPIRY_NS */
};

struct sl_mpart_stats {
	uint64_t started;		/* MPUBs whose first fragment took a slot */
	uint64_t completed;		/* ... complete and valid (SL_MPART_DONE) */
	uint64_t expired;		/* ... dropped incomplete after expiry_ns */
	uint64_t refused;		/* first fragments refused: pool full or source cap */
	uint64_t malformed;		/* fragments (and their MPUB) refused as malformed */
	uint64_t dups;			/* copies of held fragments */
};

struct sl_mpart_slot {
	uint8_t used;
	uint8_t nfrag;
	uint8_t flags;
	uint8_t topic_len;
	uint16_t count;
	uint16_t partition;
	uint16_t have;			/* bit i: fragment i held */
	uint32_t src_ip;
	uint32_t total_len;
	uint32_t got;			/* bytes held */
	uint32_t base;			/* offset of the element area in buf */
	uint64_t session;
	uint64_t seq;
	uint64_t trace_id;
	uint64_t t0_ns;			/* first fragment */
	uint32_t off[SL_WIRE_MPART_FRAGS];
	uint32_t len[SL_WIRE_MPART_FRAGS];
	uint8_t buf[SL_MPART_BUF];	/* the MPUB body being rebuilt */
};

struct sl_mpart {
	uint32_t per_source;
	uint64_t expiry_ns;
	uint32_t nused;
	struct sl_mpart_stats st;
	struct sl_mpart_slot slot[SL_MPART_SLOTS];
};

/** Set up pool mp (sizeof(struct sl_mpart) bytes, any content) from conf: 0, or
 * -SL_E_INVAL for a per_source above SL_MPART_SLOTS. Owner (at setup). */
int
sl_mpart_init(struct sl_mpart *mp, const struct sl_mpart_conf *conf);

/**
 * Take fragment f of the MPUB (session, seq) sent from src_ip (network order) at now_ns
 * (monotonic). Returns SL_MPART_MORE, SL_MPART_DUP, or SL_MPART_DONE with *out the decoded
 * MPUB (pointing into the pool: valid until sl_mpart_release(*handle)), or -SL_E_FULL
 * (no slot for a new MPUB: nothing kept) or -SL_E_MALFORMED (f breaks a rule: the MPUB's
 * fragments are dropped), or the MPUB decoder's error for a complete element area that is
 * not count elements (-SL_E_MALFORMED). f's bytes are copied. Owner.
 */
int
sl_mpart_add(struct sl_mpart *mp, uint64_t session, uint64_t seq, uint32_t src_ip,
	     const struct sl_wire_mpart *f, uint64_t now_ns, struct sl_wire_pub *out,
	     uint32_t *handle);

/** Free the slot of a completed MPUB (after it was published). Owner. */
void
sl_mpart_release(struct sl_mpart *mp, uint32_t handle);

/** Drop the slots older than the expiry (also done by sl_mpart_add). Owner. */
void
sl_mpart_expire(struct sl_mpart *mp, uint64_t now_ns);

#endif /* SL_MPART_H */
