#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The sluice authors
#
# A leader SIGKILL loop on three sluiced nodes joined through etcd (issue 13, points 4 and
# 5): tools/bench/failover --quick --check. A publisher runs throughout and follows the
# leader (it reads the views with `partition show`); five times the current leader is
# SIGKILLed, the test waits for the first write acknowledged by a new leader (at most
# 20 s), restarts the killed node with the same arguments and waits (at most 60 s) until it
# is back in the ISR with no command (it reads its view from etcd, truncates, catches up).
# At the end every message of the last leader's log is read back: every acknowledged
# message is there, none twice, in the order sent. Prints the failover and restart-to-ISR
# distributions. Skipped (77) without etcd-server.
set -u
BUILD=${1:?usage: $0 BUILD_DIR}
exec python3 "$(dirname "$0")/../../tools/bench/failover" --build "$BUILD" --quick --check
