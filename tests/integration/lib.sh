#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The sluice authors
#
# Helpers for the integration and fault tests: start real sluiced processes (optionally
# inside a network namespace the test creates), wait for them, and clean up everything the
# test made (processes by PID, namespaces, temp files) on any exit. Sourced.

set -u
# shellcheck source=../../tools/sl-common.sh
. "$(dirname "${BASH_SOURCE[0]}")/../../tools/sl-common.sh"	# sl_have_pmd
BUILD=${1:?usage: $0 BUILD_DIR}
BUILD=$(cd "$BUILD" && pwd)
SLUICED=$BUILD/control/sluiced
CTL=$BUILD/tools/sluicectl
PUB=$BUILD/tools/sluice-pub
SUB=$BUILD/tools/sluice-sub
# EAL options from the test runner (tools/sluice-test); safe defaults otherwise.
: "${SLUICE_EAL:=--no-pci --no-huge -m 512 --lcores 0@0,1@1,2@0}"
TEST_NAME=$(basename "$0" .sh)
TMP=$(mktemp -d "/tmp/sluice-$TEST_NAME.XXXXXX")
PIDS=()
NETNS=()
CLEANUP_HOOKS=()	# commands run after the processes are gone (e.g. umount)
FAILED=0	# set by fail: with SLUICE_TEST_KEEP=1 a failed test's $TMP is kept

log() { echo "[$TEST_NAME] $*"; }

dump_logs() {
	local f
	for f in "$TMP"/*.log; do
		[ -f "$f" ] || continue
		echo "----- $f (last 40 lines)"
		tail -n 40 "$f"
	done
}

fail() {
	echo "FAIL [$TEST_NAME]: $*"
	dump_logs
	FAILED=1
	exit 1
}

cleanup() {
	local p i
	for p in "${PIDS[@]}"; do
		kill -TERM "$p" 2>/dev/null || continue
		for i in $(seq 50); do
			kill -0 "$p" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "$p" 2>/dev/null || true
	done
	wait 2>/dev/null
	for p in "${CLEANUP_HOOKS[@]}"; do
		eval "$p"
	done
	for p in "${NETNS[@]}"; do
		ip netns del "$p" 2>/dev/null || true
	done
	# the EAL runtime directories of this test's processes (file prefix sl-*-$$): DPDK
	# leaves them behind, a SIGKILLed process always
	rm -rf /var/run/dpdk/sl-*-"$$" 2>/dev/null
	if [ "$FAILED" = 1 ] && [ "${SLUICE_TEST_KEEP:-0}" = 1 ]; then
		echo "[$TEST_NAME] SLUICE_TEST_KEEP=1: kept $TMP"
		# a mount inside it is gone (its hook ran): only the files are kept
	else
		rm -rf "$TMP"
	fi
}
trap cleanup EXIT

# make_netns NAME: a fresh namespace with loopback up, deleted at exit.
make_netns() {
	ip netns del "$1" 2>/dev/null || true
	ip netns add "$1" || fail "ip netns add $1"
	NETNS+=("$1")
	ip netns exec "$1" ip link set lo up
}

# in_ns NS CMD...: run CMD in namespace NS (or here when NS is empty).
in_ns() {
	local ns=$1
	shift
	if [ -n "$ns" ]; then
		ip netns exec "$ns" "$@"
	else
		"$@"
	fi
}

# start_sluiced NAME NS EAL_EXTRA -- SLUICED_ARGS...: start sluiced in the background and
# wait until it serves (its --ready-file appears) or dies. Sets SLUICED_PID.
start_sluiced() {
	local name=$1 ns=$2 eal_extra=$3 i
	shift 3
	[ "${1:-}" = "--" ] && shift
	rm -f "$TMP/$name.ready"
	local pre=() eal=$SLUICE_EAL
	[ -n "$ns" ] && pre=(ip netns exec "$ns")
	# a test that lays out its own lcores replaces the runner's
	case " $eal_extra " in
	*" --lcores "*) eal=$(sed -E 's/--lcores [^ ]+//' <<< "$eal") ;;
	esac
	# a plain command in the background (not a function), so $! is sluiced itself
	# (ip netns exec execs it)
	# shellcheck disable=SC2086
	"${pre[@]}" "$SLUICED" $eal $eal_extra --file-prefix "sl-$name-$$" -- \
		--control "$TMP/$name.sock" --ready-file "$TMP/$name.ready" "$@" \
		> "$TMP/$name.log" 2>&1 &
	SLUICED_PID=$!
	PIDS+=("$SLUICED_PID")
	for i in $(seq 300); do
		[ -s "$TMP/$name.ready" ] && return 0
		kill -0 "$SLUICED_PID" 2>/dev/null || fail "sluiced $name exited during start"
		sleep 0.1
	done
	fail "sluiced $name not ready after 30 s"
}

# stop_pid PID: SIGTERM and wait for exit; returns its exit status.
stop_pid() {
	local p=$1 rc
	kill -TERM "$p" 2>/dev/null
	wait "$p"
	rc=$?
	return $rc
}

# publish_until NS ADDR TOPIC IN ACKED N [PUB_ARGS...]: publish the lines of IN in the
# background (sluice-pub -A ACKED logs each acknowledged line), return once N are
# acknowledged; sets PUBPID.
publish_until() {
	local ns=$1 addr=$2 topic=$3 in=$4 acked=$5 n=$6 i
	shift 6
	: > "$acked"
	ip netns exec "$ns" "$PUB" -a "$addr" -A "$acked" "$@" "$topic" < "$in" \
		> /dev/null 2> "$acked.log" &
	PUBPID=$!
	PIDS+=("$PUBPID")
	for i in $(seq 600); do
		[ "$(wc -l < "$acked")" -ge "$n" ] && return 0
		if ! kill -0 "$PUBPID" 2>/dev/null; then
			# it may have acknowledged the last lines and ended since the count above
			[ "$(wc -l < "$acked")" -ge "$n" ] && return 0
			fail "sluice-pub ended early: $(cat "$acked.log")"
		fi
		sleep 0.1
	done
	fail "fewer than $n publishes acknowledged in 60 s"
}

ctl() {
	local name=$1
	shift
	"$CTL" -s "$TMP/$name.sock" "$@"
}

# small_fs DIR: a 3 MiB tmpfs mounted on DIR (made here), unmounted at exit: a disk that
# fills; grown with `mount -o remount,size=64m DIR`
small_fs() {
	mkdir -p "$1"
	mount -t tmpfs -o size=3m sluice-test "$1" || fail "mount tmpfs on $1"
	CLEANUP_HOOKS+=("umount '$1' 2>/dev/null")
}

# storage_failed NODE TOPIC: NODE's (start_sluiced's name) store of TOPIC's partition 0
# is failed, for lack of space
storage_failed() {
	ctl "$1" storage status "$2" > "$TMP/st-$1.json" || fail "storage status on $1"
	python3 - "$TMP/st-$1.json" "$1" <<'PY' || fail "$1's status: $(cat "$TMP/st-$1.json")"
import json, sys
st = json.load(open(sys.argv[1]))["partitions"][0]["storage"]
assert st["state"] == "failed", st
assert "space" in st["error"].lower(), st["error"]
print("%s storage status: %s - %s" % (sys.argv[2], st["state"], st["error"]))
PY
}
