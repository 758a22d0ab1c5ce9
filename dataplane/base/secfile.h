/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * secfile: open a file that holds secrets (the cluster key file, --cluster-key; the client
 * token file, --token-file) only if nobody else could have read or changed it: a regular
 * file, not a symbolic link, owned by the user the process runs as, with no permission bit
 * for the group or others (mode 0600 or 0400). Pure C (POSIX), any thread.
 */
#ifndef SL_SECFILE_H
#define SL_SECFILE_H

#include <stddef.h>

/**
 * Open path read-only under the rule above. Returns the file descriptor, or a negative
 * errno with `err` holding "PATH: what is wrong" (and what to do): -ENOENT and the like
 * from open(2), -ELOOP for a symbolic link, -EINVAL for a file that is not regular, -EPERM
 * for the wrong owner or mode. Calling context: any thread (control plane).
 */
int
sl_secfile_open(const char *path, char *err, size_t err_len);

#endif /* SL_SECFILE_H */
