/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * admin: the operator commands of sluiced, served on the control socket (sluicectl) and,
 * for the read-only statistics, through DPDK telemetry (/sluice/... commands, usable with
 * dpdk-telemetry.py). docs/operations.md lists them.
 *
 * Telemetry callbacks run on DPDK's telemetry thread, which is not an RCU reader: they
 * only read the per-worker counters and a snapshot of partition and channel statistics
 * that the control thread refreshes every second (sl_admin_tick).
 */
#ifndef SL_ADMIN_H
#define SL_ADMIN_H

#include "broker.h"
#include "ctl.h"
#include "membership.h"
#include "metrics.h"
#include "persist.h"

/** Register the control socket commands and the telemetry commands; `partition set` goes
 * through the membership seam m. Control thread. */
int
sl_admin_register(struct sl_ctl *ctl, struct sl_broker *b, struct sl_persist *p,
		  struct sl_membership *m);

/** Refresh the telemetry snapshot when due. Control thread (online RCU reader). */
void
sl_admin_tick(struct sl_broker *b);

/**
 * Write the Prometheus exposition of the node (control/metrics.h render callback, arg: the
 * broker): node, workers (busy ratio, drops and errors by cause), persistence (sync latency
 * histogram), and per partition and channel the telemetry snapshot sl_admin_tick refreshes
 * every second. docs/operations.md lists the metrics. Control thread. Returns 0.
 */
int
sl_admin_metrics(void *arg, struct sl_metrics_buf *out);

/** Stop serving telemetry from the snapshot (before the broker is freed). */
void
sl_admin_unregister(void);

#endif /* SL_ADMIN_H */
