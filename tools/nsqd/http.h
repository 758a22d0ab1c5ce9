/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * sluice-nsqd: the HTTP front ends (libevent evhttp): nsqd's HTTP API (/ping, /info,
 * /pub, /mpub, /stats, /topic/..., /channel/...) and an nsqlookupd-compatible API
 * (/ping, /info, /lookup, /topics, /channels, /nodes) that points consumers at this
 * gateway. Every function runs on the gateway's loop thread.
 */
#ifndef SL_NSQHTTP_H
#define SL_NSQHTTP_H

#include "gw.h"

/** Serve the nsqd API on conf.http_address and the lookupd API on
 * conf.lookupd_http_address (either may be "" = off). Returns 0 or -1 (message on
 * stderr). Calling context: main thread, after sl_nsqtcp_open, before the loop runs. */
int
sl_nsqhttp_open(struct sl_gw *gw);

/** Stop both servers. Calling context: main thread, loop stopped. */
void
sl_nsqhttp_close(struct sl_gw *gw);

#endif /* SL_NSQHTTP_H */
