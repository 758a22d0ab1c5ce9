#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The sluice authors
#
# nsqjs (npm, pinned), unchanged, against sluice-nsqd in front of a replicated topic: the
# three-node static cluster of cluster.sh (topic `r`, one partition, replicas 1,2,3, leader
# 1), the gateway given a follower first. nsqjs_e2e.js publishes (PUB, MPUB) through the
# gateway and consumes with a lookupd-discovering Reader (RDY > 1, TOUCH, REQ, FIN): every
# message the Writer got acknowledged must reach the Reader, and all three nodes must hold
# them. No failover here (nsq_cluster.sh kills the leader under a raw NSQ client).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/nsq_lib.sh"

NS=sl-njsc-$$
SUBNET=10.89.$(( $$ % 200 ))
N=${NSQJS_CLUSTER_N:-2000}

. "$(dirname "$0")/cluster.sh"

need_nsqjs
start_cluster
ctl n1 partition show r 0 > "$TMP/part.json" || fail "partition show: $(cat "$TMP/part.json")"
python3 - "$TMP/part.json" <<'PY' || fail "topic r is not on 3 replicas, ISR 3"
import json, sys
p = json.load(open(sys.argv[1]))["partitions"][0]
print("[nsq_nsqjs_cluster] partition show r 0: replicas %s, ISR %s, leader %s"
      % (p["replicas"], p["isr"], p["leader"]))
sys.exit(0 if len(p["replicas"]) == 3 and len(p["isr"]) == 3 else 1)
PY

log "sluice-nsqd --sluice $SUBNET.12,$SUBNET.11,$SUBNET.13 (a follower first)"
start_gw "$SUBNET.12,$SUBNET.11,$SUBNET.13" "$LOOKUPD_HTTP"
run_nsqjs r "$N"

wait_counts
log "messages in r on nodes 1, 2, 3: $c1 $c2 $c3"
[ "$c1" -ge "$N" ] || fail "the nodes hold $c1 messages, fewer than the $N published"
stop_pid "$GW_PID" || fail "sluice-nsqd exited with $? on SIGTERM"
log "PASS"
