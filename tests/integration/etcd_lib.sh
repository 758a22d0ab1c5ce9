#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The sluice authors
#
# Start a real etcd (Debian's etcd-server) for a test, after lib.sh: a fresh data directory
# under the test's $TMP, loopback ports nobody holds, readiness awaited on /health; lib.sh's
# cleanup stops it (its PID is in PIDS) and removes the directory with $TMP. Sourced.

ETCD=$(command -v etcd || true)

# skip_without_etcd: exit 77 (meson: skipped) when etcd-server is not installed.
skip_without_etcd() {
	if [ -z "$ETCD" ] || ! command -v curl > /dev/null; then
		echo "[$TEST_NAME] SKIP: etcd (etcd-server) or curl not installed"
		exit 77
	fi
}

# free_port [ADDR]: a TCP port nobody listens on at ADDR (default 127.0.0.1) right now.
free_port() {
	python3 -c 'import socket,sys
s = socket.socket()
s.bind((sys.argv[1], 0))
print(s.getsockname()[1])' "${1:-127.0.0.1}"
}

# etcd_data_dir NAME: ETCD_DATA, where etcd NAME keeps its data: on tmpfs (/dev/shm) when
# there is one, removed at exit. etcd fsyncs every write: on a shared machine's disk that can
# stall it for seconds, longer than the 2 s leases the tests run with (production etcd has a
# disk of its own).
etcd_data_dir() {
	if [ -d /dev/shm ] && [ -w /dev/shm ]; then
		ETCD_DATA=/dev/shm/sluice-etcd-$1-$$
		[ -d "$ETCD_DATA" ] || CLEANUP_HOOKS+=("rm -rf '$ETCD_DATA'")
	else
		ETCD_DATA=$TMP/$1.etcd
	fi
	mkdir -p "$ETCD_DATA"
	chmod 700 "$ETCD_DATA"
}

# start_etcd NAME [NS [ADDR]]: start etcd NAME (in namespace NS, listening on ADDR, default
# 127.0.0.1), wait until /health says true. Sets ETCD_URL and ETCD_PID.
start_etcd() {
	local name=$1 ns=${2:-} addr=${3:-127.0.0.1} cport pport i
	local pre=()
	[ -n "$ns" ] && pre=(ip netns exec "$ns")
	cport=$("${pre[@]}" python3 -c 'import socket,sys
s = socket.socket(); s.bind((sys.argv[1], 0)); print(s.getsockname()[1])' "$addr")
	pport=$("${pre[@]}" python3 -c 'import socket,sys
s = socket.socket(); s.bind((sys.argv[1], 0)); print(s.getsockname()[1])' "$addr")
	ETCD_URL=http://$addr:$cport
	etcd_data_dir "$name"
	"${pre[@]}" "$ETCD" --name "$name" --data-dir "$ETCD_DATA" \
		--listen-client-urls "$ETCD_URL" --advertise-client-urls "$ETCD_URL" \
		--listen-peer-urls "http://$addr:$pport" \
		--initial-advertise-peer-urls "http://$addr:$pport" \
		--initial-cluster "$name=http://$addr:$pport" \
		--listen-metrics-urls "" > "$TMP/$name.log" 2>&1 &
	ETCD_PID=$!
	PIDS+=("$ETCD_PID")
	for i in $(seq 200); do
		"${pre[@]}" curl -s -m 1 "$ETCD_URL/health" 2>/dev/null | grep -q '"true"' &&
			return 0
		kill -0 "$ETCD_PID" 2>/dev/null || fail "etcd $name exited during start"
		sleep 0.05
	done
	fail "etcd $name not healthy after 10 s"
}
