/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * sluice-nsqd: NSQ TCP protocol V2 front end (nsqd's protocol_v2.go, re-done in C over
 * libevent bufferevents). Every function runs on the gateway's loop thread.
 */
#ifndef SL_NSQTCP_H
#define SL_NSQTCP_H

#include <jansson.h>

#include "gw.h"

/** Listen on gw->conf.tcp_address. Returns 0 or -1 (message on stderr). Calling
 * context: main thread, after sl_gw_open, before the loop runs. */
int
sl_nsqtcp_open(struct sl_gw *gw);

/** Close every connection and the listener. Calling context: main thread, loop stopped. */
void
sl_nsqtcp_close(struct sl_gw *gw);

/** A publish to topic succeeded: SUBs waiting for the topic to exist retry now. Calling
 * context: loop thread (from a publish callback). */
void
sl_nsqtcp_topic_exists(struct sl_gw *gw, const char *topic);

/** The clients of (topic, channel) as nsqd's /stats lists them (a new JSON array), or
 * the producers when channel is NULL. Calling context: loop thread. */
json_t *
sl_nsqtcp_clients_json(struct sl_gw *gw, const char *topic, const char *channel);

/** Messages in flight to the clients of (topic, channel). Calling context: loop. */
uint64_t
sl_nsqtcp_in_flight(struct sl_gw *gw, const char *topic, const char *channel);

/** NSQ TCP connections open. Calling context: loop thread. */
uint32_t
sl_nsqtcp_conns(struct sl_gw *gw);

#endif /* SL_NSQTCP_H */
