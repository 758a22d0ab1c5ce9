/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * name: the one rule for topic and channel names, checked at every entry: the wire
 * decoders (PUB, MPUB, SUB and the channel operations), the control socket, the cluster
 * file, --topic, and the recovery of a data directory (storage/tstore.c). A topic name is
 * also a directory name under --data-dir, so the rule keeps every name a single, plain path
 * component (docs/protocol.md, "General rules"):
 *
 *   - 1 to SL_NAME_MAX bytes;
 *   - each byte one of  A-Z a-z 0-9 . _ - #   (so no '/', NUL, space or control byte);
 *   - not starting with '.': this refuses ".", ".." and hidden names.
 *
 * NSQ allows [.a-zA-Z0-9_-] plus a "#ephemeral" suffix; sluice takes '#' anywhere (a
 * channel name ending in "#ephemeral" is ephemeral) and refuses the leading dot.
 * Pure C, any thread.
 */
#ifndef SL_NAME_H
#define SL_NAME_H

#include <stddef.h>

#define SL_NAME_MAX 64

/* The rule in words, for error messages. */
#define SL_NAME_RULE "1 to 64 of A-Z a-z 0-9 . _ - #, not starting with '.'"

/** Check the len bytes at name (no terminator needed; a NUL among them is refused).
 * Returns 0 or -SL_E_NAME. */
int
sl_name_check(const char *name, size_t len);

/** Check a NUL-terminated name (NULL refused). Returns 0 or -SL_E_NAME. */
int
sl_name_check_str(const char *name);

#endif /* SL_NAME_H */
