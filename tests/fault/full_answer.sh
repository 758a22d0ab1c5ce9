#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The sluice authors
#
# A full partition answers every refused write at once (issue 14, point 4): a node in memory
# only with --log-mb 1 and a durable channel that never reads. sluice-bench (libsluice with
# fail_busy, its default) sends 3,000 MPUBs of 10 into it: every request ends acked or
# refused SL_E_FULL, none times out (libsluice's time-out set to 60 s, so a refusal that
# waited for it would count). Then full_answer.py checks the raw answers, and the NORESEND
# flag (no order hole, the refusal remembered). First, sluice-bench itself refuses hostile
# values of its numeric flags (signed, wrapping, out of range, trailing junk, empty).
. "$(dirname "$0")/../integration/lib.sh"

NS=sl-fa-$$
NET=10.82.$(( $$ % 200 ))
BROKER=$NET.2
BENCH=$BUILD/tools/bench/sluice-bench

# 0. the bench's own input: each refused with exit 2 and the bound named; the bounds taken
for v in -1 10001 4294967296 18446744073709551616 5x abc "" " 5" +5 0x10; do
	"$BENCH" --client-idle-us "$v" --help > /dev/null 2> "$TMP/arg.err"
	rc=$?
	[ "$rc" = 2 ] || fail "--client-idle-us '$v' gave exit $rc, not 2"
	grep -qF -- "bad --client-idle-us '$v' (want a whole number in 0..10000)" \
		"$TMP/arg.err" || fail "--client-idle-us '$v': $(cat "$TMP/arg.err")"
done
for v in 0 10000; do
	"$BENCH" --client-idle-us "$v" --help > /dev/null || fail "--client-idle-us $v refused"
done
# and its other numbers: no wrap-around ('-1' as 2^64 - 1), no cut ('5x' as 5), no junk
# taken as 0 (strtoul and atoi did all three before)
for fv in count=-1 count=0 window=5x window=4097 batch=257 size=abc mtu=70000 \
	producers=0 broker-port=0 partition=65536 rate=-1 rate=inf rate=nan rate=1e99 \
	fsync-rate=0x10 retry-ms=1.5 timeout-ms=; do
	"$BENCH" "--${fv%%=*}" "${fv#*=}" --help > /dev/null 2> "$TMP/arg.err"
	rc=$?
	[ "$rc" = 2 ] || fail "--${fv%%=*} '${fv#*=}' gave exit $rc, not 2"
	grep -qF -- "bad --${fv%%=*} '${fv#*=}' (want " "$TMP/arg.err" ||
		fail "--${fv%%=*} '${fv#*=}': $(cat "$TMP/arg.err")"
done
for fv in count=1 window=4096 batch=256 rate=0 rate=2.5e5 fsync-rate=3000.5 broker-port=65535; do
	"$BENCH" "--${fv%%=*}" "${fv#*=}" --help > /dev/null ||
		fail "--${fv%%=*} ${fv#*=} refused"
done
make_netns "$NS"
IF=slfa$$
IF=${IF:0:15}
start_sluiced fa "$NS" "" -- --port "net_tap0,iface=$IF" --ip "$BROKER/24" --log-mb 1 \
	--topic full:1
in_ns "$NS" ip addr add "$NET.1/24" dev "$IF" || fail "address"
in_ns "$NS" ip link set "$IF" up || fail "link up"
in_ns "$NS" ping -c 1 -W 2 "$BROKER" > /dev/null || fail "broker unreachable"
ctl fa channel create full slow > /dev/null || fail "channel create"

# 1. libsluice: 3,000 requests, each answered (acked or refused full), no time-out
in_ns "$NS" timeout 280 "$BENCH" -a "$BROKER" --topic full --workload mpub --batch 10 \
	--size 100 --count 30000 --warmup 0 --window 16 --timeout-ms 60000 --no-header \
	> "$TMP/bench.out" 2> "$TMP/bench.err"
cat "$TMP/bench.out"
line=$(grep '^answers:' "$TMP/bench.out") || fail "no answers line: $(cat "$TMP/bench.err")"
# the five counts in their order: acked, refused full, refused busy, other, time-outs
read -r acked full busy other tmo < <(grep -oE '[0-9]+' <<< "$line" | head -5 | tr '\n' ' ')
log "acked $acked, refused full $full, refused busy $busy, other $other, time-outs $tmo"
[ "$tmo" = 0 ] || fail "$tmo requests timed out instead of being answered"
[ "$((acked + full))" = 3000 ] || fail "acked $acked + refused full $full != 3000 requests"
[ "$full" -gt 0 ] || fail "the partition never refused: not full?"
[ "$busy" = 0 ] && [ "$other" = 0 ] || fail "other answers than OK and SL_E_FULL"

# 2. raw frames: answers at once, NORESEND
in_ns "$NS" python3 "$(dirname "$0")/full_answer.py" "$BROKER" full || fail "raw answers"
kill -0 "$SLUICED_PID" || fail "sluiced died"
stop_pid "$SLUICED_PID" || fail "sluiced exited with $? on SIGTERM"
log "PASS"
