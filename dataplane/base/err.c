/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 */
#include <string.h>

#include "err.h"

static const char *const texts[SL_E_MAX - SL_E_BASE] = {
	[0] = "no error",
	[SL_E_MALFORMED - SL_E_BASE] = "malformed packet",
	[SL_E_VERSION - SL_E_BASE] = "unsupported protocol version",
	[SL_E_OPCODE - SL_E_BASE] = "unknown opcode",
	[SL_E_SESSION - SL_E_BASE] = "unknown or expired session",
	[SL_E_TOPIC - SL_E_BASE] = "unknown topic",
	[SL_E_PARTITION - SL_E_BASE] = "partition out of range",
	[SL_E_CHANNEL - SL_E_BASE] = "unknown channel or subscription",
	[SL_E_FULL - SL_E_BASE] = "partition log full",
	[SL_E_TOO_BIG - SL_E_BASE] = "message too large",
	[SL_E_SEQ_OLD - SL_E_BASE] = "sequence older than the idempotency window",
	[SL_E_NOT_LEADER - SL_E_BASE] = "not the partition leader",
	[SL_E_WRITE_DISABLED - SL_E_BASE] = "writes disabled",
	[SL_E_QUORUM - SL_E_BASE] = "not enough in-sync replicas",
	[SL_E_EPOCH - SL_E_BASE] = "epoch mismatch",
	[SL_E_MSG_ID - SL_E_BASE] = "message not in flight",
	[SL_E_EXISTS - SL_E_BASE] = "already exists",
	[SL_E_LIMIT - SL_E_BASE] = "limit reached",
	[SL_E_NAME - SL_E_BASE] = "invalid name",
	[SL_E_IO - SL_E_BASE] = "storage I/O error",
	[SL_E_PUB_ARG - SL_E_BASE] = "inconsistent publish arguments",
	[SL_E_INTERNAL - SL_E_BASE] = "internal error",
	[SL_E_INVAL - SL_E_BASE] = "invalid argument",
	[SL_E_TIMEOUT - SL_E_BASE] = "timed out",
	[SL_E_CAPACITY - SL_E_BASE] = "no room for another topic (topic limit or memory budget)",
	[SL_E_AUTH - SL_E_BASE] = "no valid client token (HELLO without a known token)",
	[SL_E_DENIED - SL_E_BASE] = "the client token lacks the right for this topic",
	[SL_E_OUT_OF_ORDER - SL_E_BASE] =
		"an earlier publish of this session was refused: retry it first",
};

const char *
sl_strerror(int err)
{
	if (err < 0)
		err = -err;
	if (err == 0)
		return texts[0];
	if (err > SL_E_BASE && err < SL_E_MAX && texts[err - SL_E_BASE] != NULL)
		return texts[err - SL_E_BASE];
	if (err < SL_E_BASE)
		return strerror(err);
	return "unknown error";
}
