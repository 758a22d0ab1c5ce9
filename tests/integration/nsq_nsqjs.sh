#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The sluice authors
#
# A real NSQ client, nsqjs from npm (pinned), unchanged, against sluice-nsqd in front of
# a real sluiced: publish (PUB, MPUB), discovery through the lookupd API, consume with
# RDY > 1, TOUCH, REQ (redelivered with attempts + 1), FIN (nsqjs_e2e.js). nsqjs is
# installed once into build/nsqjs-cache (npm's cache beside it), so reruns are offline;
# skipped (77) only when it is not there and npm cannot reach its registry.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/nsq_lib.sh"

need_nsqjs
start_nsq_stack
run_nsqjs nsqjs_topic 2000
stop_pid "$GW_PID" || fail "sluice-nsqd exited with $? on SIGTERM"
log "PASS"
