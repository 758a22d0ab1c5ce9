#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The sluice authors
#
# peers.sh: measure the peers sluice is compared with, on loopback, with the workload and
# output format of sluice-bench. Starts its own nats-server (JetStream, file store in a
# temporary directory, random port) and redis-server (a free port, AOF appendfsync everysec
# so that, like JetStream's file store, every message is written to a file and synced about
# once a second), runs
#   jetstream pub, nats-core pub, redis pub, jetstream pubsub, nats-core pubsub, redis pubsub
# with the same parameters, prints the table on stderr and the JSON lines on stdout (and
# appends them to --json FILE), then stops only the servers it started, by PID, and removes
# its temporary directory, on any exit. Every generator runs under a timeout.
#
# usage: tools/bench/peers/peers.sh BUILD_DIR [--size N] [--count N] [--window N] [--batch N]
#            [--rate R] [--warmup N] [--json FILE] [--cdf FILE] [--timeout S] [--redis-aof yes|no]
# Exit status: 0 when every run acknowledged all its messages, 1 otherwise, 2 setup failure.
set -euo pipefail

prog=peers.sh

usage() {
	sed -n 's/^# usage: /usage: /p; s/^#            /       /p' "$0" >&2
	exit 2
}

die() {
	echo "$prog: $*" >&2
	exit 2
}

[ $# -ge 1 ] || usage
build=$1
shift
gen_args=()
json=
cdf=
gen_timeout=120
redis_aof=yes
while [ $# -gt 0 ]; do
	case $1 in
	--size | --count | --window | --batch | --rate | --warmup)
		[ $# -ge 2 ] || usage
		gen_args+=("$1" "$2")
		shift 2
		;;
	--json)
		[ $# -ge 2 ] || usage
		json=$2
		shift 2
		;;
	--cdf)
		[ $# -ge 2 ] || usage
		cdf=$2
		shift 2
		;;
	--timeout)
		[ $# -ge 2 ] || usage
		gen_timeout=$2
		shift 2
		;;
	--redis-aof)
		[ $# -ge 2 ] || usage
		redis_aof=$2
		shift 2
		;;
	-h | --help) usage ;;
	*) die "unknown option '$1' (try --help)" ;;
	esac
done
[[ $gen_timeout =~ ^[1-9][0-9]*$ ]] || die "--timeout wants whole seconds"
[[ $redis_aof =~ ^(yes|no)$ ]] || die "--redis-aof is yes or no"
[ -z "$cdf" ] || gen_args+=(--cdf "$cdf")

bench_nats=$build/tools/bench/peers/bench_nats
bench_redis=$build/tools/bench/peers/bench_redis
for b in "$bench_nats" "$bench_redis"; do
	[ -x "$b" ] || die "$b not built: install libnats-dev and libhiredis-dev," \
		"then meson setup --reconfigure $build && ninja -C $build"
done

# The servers: Debian's packages, installed when missing (root, or sudo without a password).
find_prog() {
	PATH=$PATH:/usr/sbin:/sbin command -v "$1" || true
}
missing=()
[ -n "$(find_prog nats-server)" ] || missing+=(nats-server)
[ -n "$(find_prog redis-server)" ] || missing+=(redis-server)
if [ ${#missing[@]} -gt 0 ]; then
	if [ "$(id -u)" -eq 0 ]; then
		sudo=()
	elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
		sudo=(sudo -n)
	else
		die "missing ${missing[*]}: run 'sudo apt-get install ${missing[*]}'"
	fi
	echo "$prog: installing ${missing[*]}" >&2
	export DEBIAN_FRONTEND=noninteractive
	if ! timeout 600 "${sudo[@]}" apt-get install -y -q "${missing[@]}" >&2; then
		timeout 600 "${sudo[@]}" apt-get update -q >&2 || true
		timeout 600 "${sudo[@]}" apt-get install -y -q "${missing[@]}" >&2 ||
			die "could not install ${missing[*]}"
	fi
fi
nats_server=$(find_prog nats-server)
redis_server=$(find_prog redis-server)

tmp=$(mktemp -d "${TMPDIR:-/tmp}/sluice-peers.XXXXXX")
nats_pid=
redis_pid=
gen_pid=

# Stop one server we started: SIGTERM, then SIGKILL if it is still there after 10 s.
stop_server() {
	local pid=$1 dog

	kill -TERM "$pid" 2>/dev/null || return 0
	sleep 10 &
	dog=$!
	wait -n "$pid" "$dog" 2>/dev/null || true
	if kill -0 "$pid" 2>/dev/null; then
		echo "$prog: server $pid ignored SIGTERM for 10 s, killing it" >&2
		kill -KILL "$pid" 2>/dev/null || true
	fi
	wait "$pid" 2>/dev/null || true
	kill "$dog" 2>/dev/null || true
	wait "$dog" 2>/dev/null || true
}

# shellcheck disable=SC2317 # invoked by the trap
cleanup() {
	local rc=$?

	trap - EXIT INT TERM
	if [ -n "$gen_pid" ]; then
		kill -TERM "$gen_pid" 2>/dev/null || true
		wait "$gen_pid" 2>/dev/null || true
	fi
	[ -z "$redis_pid" ] || stop_server "$redis_pid"
	[ -z "$nats_pid" ] || stop_server "$nats_pid"
	rm -rf "$tmp"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Wait until FILE has a line matching PATTERN, or PID exits, or SECONDS pass.
wait_for_line() {
	local file=$1 pattern=$2 pid=$3 secs=$4 fd tailpid rc=0

	exec {fd}< <(exec timeout "$secs" tail -n +1 -F --pid="$pid" "$file" 2>/dev/null)
	tailpid=$!
	grep -q -m1 -e "$pattern" <&"$fd" || rc=1
	exec {fd}<&-
	kill "$tailpid" 2>/dev/null || true
	return "$rc"
}

# nats-server picks a free port itself (-p -1) and logs it.
mkdir "$tmp/nats"
"$nats_server" -js -sd "$tmp/nats" -a 127.0.0.1 -p -1 -m 0 >"$tmp/nats.log" 2>&1 &
nats_pid=$!
if ! wait_for_line "$tmp/nats.log" 'Server is ready' "$nats_pid" 20; then
	cat "$tmp/nats.log" >&2
	die "nats-server did not start"
fi
nats_port=$(sed -n 's/.*Listening for client connections on 127\.0\.0\.1:\([0-9]*\).*/\1/p' \
	"$tmp/nats.log" | head -n1)
[ -n "$nats_port" ] || die "cannot find nats-server's port in its log"

# redis-server needs a port: try free-looking ones until one binds.
mkdir "$tmp/redis"
port_free() {
	! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}
redis_port=
for try in 1 2 3 4 5 6 7 8; do
	p=$((20000 + (RANDOM * 32768 + RANDOM) % 40000))
	port_free "$p" || continue
	"$redis_server" --port "$p" --bind 127.0.0.1 --protected-mode yes --daemonize no \
		--dir "$tmp/redis" --save '' --appendonly "$redis_aof" \
		--appendfsync everysec --logfile '' >"$tmp/redis.$try.log" 2>&1 &
	redis_pid=$!
	if wait_for_line "$tmp/redis.$try.log" 'Ready to accept connections' "$redis_pid" 20; then
		redis_port=$p
		break
	fi
	stop_server "$redis_pid"
	redis_pid=
done
if [ -z "$redis_port" ]; then
	cat "$tmp"/redis.*.log >&2 || true
	die "redis-server did not start"
fi
echo "$prog: nats-server $nats_pid on 127.0.0.1:$nats_port, redis-server $redis_pid on" \
	"127.0.0.1:$redis_port (AOF $redis_aof)" >&2

# Run one generator under a timeout; its JSON line goes to stdout and --json.
failed=0
header=()
run() {
	local name=$1 rc=0
	shift
	# In the background so that a signal reaches our trap at once (wait is interruptible).
	timeout -k 5 $((gen_timeout + 15)) "$@" "${gen_args[@]}" "${header[@]}" \
		--timeout "$gen_timeout" >"$tmp/out.json" &
	gen_pid=$!
	wait "$gen_pid" || rc=$?
	gen_pid=
	header=(--no-header)
	if [ -s "$tmp/out.json" ]; then
		cat "$tmp/out.json"
		[ -z "$json" ] || cat "$tmp/out.json" >>"$json"
	fi
	if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
		echo "$prog: $name killed after $((gen_timeout + 15)) s" >&2
		failed=1
	elif [ "$rc" -ne 0 ]; then
		echo "$prog: $name failed (exit $rc)" >&2
		failed=1
	fi
}

nats=(--url "nats://127.0.0.1:$nats_port" --server-pid "$nats_pid")
redis=(--host 127.0.0.1 --port "$redis_port" --server-pid "$redis_pid")
for w in pub pubsub; do
	run "jetstream $w" "$bench_nats" --system jetstream --workload "$w" "${nats[@]}"
	run "nats-core $w" "$bench_nats" --system nats-core --workload "$w" "${nats[@]}"
	run "redis $w" "$bench_redis" --workload "$w" "${redis[@]}"
done
exit "$failed"
