/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * sluice-nsqd: the gateway's Prometheus metrics (GET /metrics on the nsqd HTTP port), in
 * the text exposition format 0.0.4. The families and their labels are listed in
 * docs/nsq-gateway.md ("Metrics").
 */
#ifndef SL_NSQMETRICS_H
#define SL_NSQMETRICS_H

#include <event2/buffer.h>

#include "gw.h"

/** Content-Type of the exposition. */
#define SL_NSQMETRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/**
 * Append every metric of the gateway to out. Returns 0, or -1 when out could not grow.
 * Calling context: loop thread (reads the gateway's counters and its clients' stats).
 */
int
sl_nsqmetrics_render(struct sl_gw *gw, struct evbuffer *out);

#endif /* SL_NSQMETRICS_H */
