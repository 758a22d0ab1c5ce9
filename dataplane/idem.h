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
 * between went to other workers, or were never sent). Clients keep fewer than
 * SL_IDEM_WINDOW requests in flight (the broker announces a smaller window in WELCOME),
 * so a live retry is always still in the window.
 *
 * Owner: one worker lcore per (session slot, worker) pair; no locks, no atomics.
 */
#ifndef SL_IDEM_H
#define SL_IDEM_H

#include <stdint.h>

#define SL_IDEM_WINDOW 128

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

struct sl_idem {
	uint64_t session;	/* owner session id; a different id resets the window */
	uint64_t top;		/* highest seq recorded (0: none) */
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

#endif /* SL_IDEM_H */
