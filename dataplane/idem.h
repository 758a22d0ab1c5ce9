/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * idem: the idempotency window of one session on one worker lcore. Every request carries
 * (session, seq); the worker that executes it records its answer here, keyed by
 * seq % SL_IDEM_WINDOW. A retry of a recorded seq gets the recorded answer again and is
 * never executed twice. The window is the last SL_IDEM_WINDOW sequence numbers up to the
 * highest one recorded (top - WINDOW + 1 .. top, docs/protocol.md section 8.4): a seq
 * below it (top - seq >= WINDOW), or older than its slot's current occupant, is refused
 * (SL_E_SEQ_OLD) and never executed, even when its slot was never used (the requests in
 * between went to other workers, or were never sent). Clients keep their new seqs less
 * than WELCOME's window (< SL_IDEM_WINDOW) above the oldest one still unanswered, not
 * only that many requests in flight (docs/protocol.md section 8, rule 5), so a live retry
 * is always still in the window.
 *
 * Order across retryable refusals (docs/protocol.md section 8, rule 10): per partition,
 * the window also keeps the hole a retryable refusal leaves in the session's sequence of
 * publishes. The hole of (session, partition) is the set R of that session's seqs to that
 * partition refused and not accepted since (a bitmap of SL_IDEM_WINDOW seqs from its
 * lowest, base). While R is not empty every publish of the session to the partition with
 * a seq above base is refused (SL_E_OUT_OF_ORDER) and joins R; base itself (or a seq
 * below it) executes, and when base is accepted the next seq of R becomes base. So the
 * refused publishes are accepted exactly in seq order, whatever order their retries
 * arrive in. A hole closes when R empties, when base has not been retried for
 * SL_IDEM_HOLE_NS (the client gave up on it), when a publish comes SL_IDEM_WINDOW seqs
 * past base (base is out of the window: its retry would be SL_E_SEQ_OLD anyway), or
 * when the session ends (sl_idem_bind of another session). A session keeps at most
 * SL_IDEM_HOLES holes per worker; a refusal that finds no free hole is not tracked.
 *
 * Owner: one worker lcore per (session slot, worker) pair; no locks, no atomics.
 */
#ifndef SL_IDEM_H
#define SL_IDEM_H

#include <stdint.h>

#define SL_IDEM_WINDOW 128
#define SL_IDEM_HOLES 8		/* partitions with an open hole, per session and worker */
/* a hole whose lowest refused seq is not retried for this long closes: three times
 * libsluice's longest retransmission interval (1 s) */
#define SL_IDEM_HOLE_NS 3000000000ull

enum sl_idem_verdict {
	SL_IDEM_NEW = 0,	/* never seen: execute, then sl_idem_record() */
	SL_IDEM_DUP = 1,	/* seen: answer with *hit, do not execute */
	SL_IDEM_PENDING = 2,	/* seen, answer not known yet: ignore the retry */
	SL_IDEM_OLD = 3,	/* older than the window: answer SL_E_SEQ_OLD */
};

/* A recorded answer: enough to rebuild the OK or ERR frame. */
struct sl_idem_entry {
	uint64_t seq;		/* 0 = empty */
	uint8_t opcode;		/* request opcode */
	uint8_t pending;	/* executed, answer not final yet (durability/replication) */
	uint16_t code;		/* 0 = OK, else SL_E_* */
	uint16_t partition;
	uint32_t count;
	uint64_t id;
	uint64_t offset;
	uint64_t aux;
};

enum sl_idem_order {
	SL_IDEM_ORDER_GO = 0,		/* execute it */
	SL_IDEM_ORDER_BLOCK = 1,	/* refuse it (SL_E_OUT_OF_ORDER): an earlier seq of
					 * the session to this partition was refused */
	SL_IDEM_ORDER_CLOSED = 2,	/* execute it: the partition's hole timed out or fell
					 * out of the window and was closed */
};

/* The hole of one (session, partition): refused seqs not accepted since. */
struct sl_idem_hole {
	const void *part;	/* the partition; NULL = free */
	uint64_t base;		/* lowest refused seq */
	uint64_t bits[2];	/* bit i: seq base + i is refused (bit 0 always set) */
	uint64_t since_ns;	/* when base was last refused (or became base) */
};

struct sl_idem {
	uint64_t session;	/* owner session id; a different id resets the window */
	uint64_t top;		/* highest seq recorded (0: none) */
	uint32_t nholes;	/* holes in use */
	struct sl_idem_hole holes[SL_IDEM_HOLES];
	struct sl_idem_entry e[SL_IDEM_WINDOW];
};

/** Bind the window to session (clears it if it belonged to another session). Owner. */
void
sl_idem_bind(struct sl_idem *w, uint64_t session);

/** Classify seq (>= 1). On DUP/PENDING *hit points at the entry. Owner. */
enum sl_idem_verdict
sl_idem_check(const struct sl_idem *w, uint64_t seq, const struct sl_idem_entry **hit);

/** Record the answer of seq (after executing it); e->seq is set from seq. Owner. */
void
sl_idem_record(struct sl_idem *w, uint64_t seq, const struct sl_idem_entry *e);

/**
 * Before executing a publish of seq to partition part (after sl_idem_check said NEW):
 * GO or CLOSED (execute), or BLOCK (refuse it with SL_E_OUT_OF_ORDER; with join, seq
 * joined the hole: 0 for a publish the client will not send again, NOACK). now_ns: the
 * caller's monotonic clock. Owner (per publish; O(1) without holes).
 */
enum sl_idem_order
sl_idem_order_check(struct sl_idem *w, const void *part, uint64_t seq, int join,
		    uint64_t now_ns);

/**
 * After executing a publish of seq to part: refused != 0 when it was refused with an
 * error the client retries with the same seq (it joins the hole: opened, or its base
 * moves down), 0 when it was accepted (a base accepted passes the hole to the next
 * refused seq). Returns 0, or -1 when a refusal could not be tracked (every hole in use).
 * Owner (per publish).
 */
int
sl_idem_order_note(struct sl_idem *w, const void *part, uint64_t seq, int refused,
		   uint64_t now_ns);

#endif /* SL_IDEM_H */
