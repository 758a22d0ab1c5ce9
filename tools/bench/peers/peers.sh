#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The sluice authors
#
# peers.sh: measure the peers sluice is compared with, on loopback, with the workload and
# output format of sluice-bench, under each durability a peer offers, with single messages
# and with batches:
#   redis-server Streams (XADD; batch N: N XADDs pipelined in one write), restarted for each
#     durability: none (appendonly no), page-cache (AOF, appendfsync everysec: written at
#     once, synced about once a second), fsync (AOF, appendfsync always: the reply waits
#     for the fsync of the event loop's writes, a group commit);
#   nats-server JetStream (js_PublishAsync; batch N: N publishes due together, window * N
#     in flight): none (memory storage), page-cache (file storage: synced by the server's
#     sync interval, 2 minutes by default), fsync (sync_interval always: nats-server 2.10
#     and later; skipped, with a line saying so, on older servers);
#   core NATS (no ack, no storage): a reference, never a peer in a ratio.
# PUB+SUB runs for Redis and JetStream with page-cache durability, batch 1. --producers
# "2 4": Redis rows with that many publishing connections (durability none, batch 1), the
# peers of sluice's rows with several kernel-UDP producers. Prints the table
# on stderr and the JSON lines on stdout (and appends them to --json FILE), then stops
# only the servers it started, by PID, and removes its temporary directory, on any exit.
# Every generator runs under a timeout. While a generator runs, tools/bench/placement.py
# watches it and the server: its JSON lines get transport tcp-loopback, the durability, rf
# 1, --run N, the placement, and the server's whole-process CPU per message (measured by
# the generator from /proc/PID/stat over its measured phase) as proc_cpu_ns_per_msg.
#
# usage: tools/bench/peers/peers.sh BUILD_DIR [--size N] [--count N] [--window N]
#            [--batches "1 32"] [--rate R] [--warmup N] [--json FILE] [--cdf FILE]
#            [--timeout S] [--run N] [--producers "2 4"] [--refuse-shared]
# Exit status: 0 when every run acknowledged all its messages, 1 otherwise, 2 setup failure
# (3 with --refuse-shared when a busy thread shared a core).
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
batches="1 32"
producers=
run_no=1
refuse=
while [ $# -gt 0 ]; do
	case $1 in
	--size | --count | --window | --rate | --warmup)
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
	--batches | --batch)
		[ $# -ge 2 ] || usage
		batches=$2
		shift 2
		;;
	--producers)
		[ $# -ge 2 ] || usage
		producers=$2
		shift 2
		;;
	--run)
		[ $# -ge 2 ] || usage
		run_no=$2
		shift 2
		;;
	--refuse-shared)
		refuse=--refuse-shared
		shift
		;;
	-h | --help) usage ;;
	*) die "unknown option '$1' (try --help)" ;;
	esac
done
[[ $gen_timeout =~ ^[1-9][0-9]*$ ]] || die "--timeout wants whole seconds"
[[ $batches =~ ^[1-9][0-9]*( [1-9][0-9]*)*$ ]] || die "--batches wants numbers: \"1 32\""
[[ $run_no =~ ^[1-9][0-9]*$ ]] || die "--run wants a number"
[[ $producers =~ ^([1-9][0-9]?( [1-9][0-9]?)*)?$ ]] || die "--producers wants numbers: \"2 4\""
placement=$(cd "$(dirname "$0")/.." && pwd)/placement.py

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

# start_nats DIR [CONFIG]: a nats-server with JetStream storing in DIR, on a port it picks
# itself (-p -1) and logs; sets nats_pid and nats_port. Returns 1 when it does not start.
start_nats() {
	local dir=$1 conf=${2:-} args

	mkdir -p "$dir"
	args=(-js -sd "$dir" -a 127.0.0.1 -p -1 -m 0)
	[ -z "$conf" ] || args+=(-c "$conf")
	"$nats_server" "${args[@]}" >"$dir.log" 2>&1 &
	nats_pid=$!
	if ! wait_for_line "$dir.log" 'Server is ready' "$nats_pid" 20; then
		cat "$dir.log" >&2
		stop_server "$nats_pid"
		nats_pid=
		return 1
	fi
	nats_port=$(sed -n 's/.*Listening for client connections on 127\.0\.0\.1:\([0-9]*\).*/\1/p' \
		"$dir.log" | head -n1)
	[ -n "$nats_port" ] || die "cannot find nats-server's port in its log"
	echo "$prog: nats-server $nats_pid on 127.0.0.1:$nats_port${conf:+ ($conf)}" >&2
}

# start_redis DURABILITY: redis-server with that durability on a free port; sets redis_pid
# and redis_port. redis-server needs a port: try free-looking ones until one binds.
port_free() {
	! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}
start_redis() {
	local aof=(--appendonly no) try p

	case $1 in
	page-cache) aof=(--appendonly yes --appendfsync everysec) ;;
	fsync) aof=(--appendonly yes --appendfsync always) ;;
	esac
	rm -rf "$tmp/redis"
	mkdir "$tmp/redis"
	redis_port=
	for try in 1 2 3 4 5 6 7 8; do
		p=$((20000 + (RANDOM * 32768 + RANDOM) % 40000))
		port_free "$p" || continue
		"$redis_server" --port "$p" --bind 127.0.0.1 --protected-mode yes --daemonize no \
			--dir "$tmp/redis" --save '' "${aof[@]}" --logfile '' \
			>"$tmp/redis.$try.log" 2>&1 &
		redis_pid=$!
		if wait_for_line "$tmp/redis.$try.log" 'Ready to accept connections' "$redis_pid" 20
		then
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
	echo "$prog: redis-server $redis_pid on 127.0.0.1:$redis_port (${aof[*]})" >&2
}

# Run one generator under a timeout while placement.py watches it and the server (PID
# server_pid, durability dur); its JSON line, tagged, goes to stdout and --json.
failed=0
header=()
run() {
	local name=$1 rc=0 wpid cdf_arg=()
	shift
	rm -f "$tmp/out.json" "$tmp/placement.json" "$tmp/placement.ready"
	touch "$tmp/out.json"
	: >"$tmp/placement.labels"
	# the watcher first (python can take seconds to start on a loaded machine), then the
	# generator, named to it through the labels file
	python3 "$placement" watch --state "$tmp/placement.json" --ready "$tmp/placement.ready" \
		--labels-file "$tmp/placement.labels" "server=$server_pid" &
	wpid=$!
	while [ ! -e "$tmp/placement.ready" ] && kill -0 "$wpid" 2>/dev/null; do
		sleep 0.05
	done
	# In the background so that a signal reaches our trap at once (wait is interruptible).
	# each run's CDF goes to a file of its own first: its label (SYSTEM-WORKLOAD, xBATCH,
	# -Np) gets the run's durability before it joins --cdf (below)
	[ -z "$cdf" ] || cdf_arg=(--cdf "$tmp/cdf.one")
	timeout -k 5 $((gen_timeout + 15)) "$@" "${gen_args[@]}" "${header[@]}" "${cdf_arg[@]}" \
		--timeout "$gen_timeout" --json "$tmp/out.json" >/dev/null &
	gen_pid=$!
	echo "client=$gen_pid" >>"$tmp/placement.labels"
	wait "$gen_pid" || rc=$?
	gen_pid=
	kill -TERM "$wpid" 2>/dev/null || true
	wait "$wpid" 2>/dev/null || true
	header=(--no-header)
	if [ -s "$tmp/out.json" ] && [ -s "$tmp/placement.json" ]; then
		python3 "$placement" tag --state "$tmp/placement.json" --results "$tmp/out.json" \
			--from 0 --generator-cpu --broker server --set transport=tcp-loopback --set "durability=$dur" \
			--set rf=1 --set "run=$run_no" --set "ack=$ack" --title "$name" $refuse ||
			{ echo "$prog: $name: a busy thread shared a core" >&2; exit 3; }
	fi
	if [ -s "$tmp/out.json" ]; then
		cat "$tmp/out.json"
		[ -z "$json" ] || cat "$tmp/out.json" >>"$json"
	fi
	if [ -n "$cdf" ] && [ -s "$tmp/cdf.one" ]; then
		awk -v d="$dur" 'NF == 3 { $1 = $1 "-" d } { print }' "$tmp/cdf.one" >>"$cdf"
	fi
	rm -f "$tmp/cdf.one"
	if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
		echo "$prog: $name killed after $((gen_timeout + 15)) s" >&2
		failed=1
	elif [ "$rc" -ne 0 ]; then
		echo "$prog: $name failed (exit $rc)" >&2
		failed=1
	fi
}

ack=yes
# Redis Streams under each durability, batch 1 and N
for dur in none page-cache fsync; do
	start_redis "$dur"
	server_pid=$redis_pid
	redis=(--host 127.0.0.1 --port "$redis_port" --server-pid "$redis_pid")
	for b in $batches; do
		run "redis pub, $dur, batch $b" "$bench_redis" --workload pub --batch "$b" "${redis[@]}"
	done
	if [ "$dur" = none ]; then
		for n in $producers; do
			run "redis pub, $dur, batch 1, $n producers" "$bench_redis" --workload pub \
				--batch 1 --producers "$n" "${redis[@]}"
		done
	fi
	[ "$dur" != page-cache ] ||
		run "redis pubsub, $dur" "$bench_redis" --workload pubsub --batch 1 "${redis[@]}"
	stop_server "$redis_pid"
	redis_pid=
done

# JetStream: memory storage (none) and file storage (page cache) on one server
start_nats "$tmp/nats" || die "nats-server did not start"
server_pid=$nats_pid
nats=(--url "nats://127.0.0.1:$nats_port" --server-pid "$nats_pid")
for dur in none page-cache; do
	st="file"
	[ "$dur" = page-cache ] || st=memory
	for b in $batches; do
		run "jetstream pub, $st storage, batch $b" "$bench_nats" --system jetstream \
			--workload pub --storage "$st" --batch "$b" "${nats[@]}"
	done
done
dur=page-cache
run "jetstream pubsub, file storage" "$bench_nats" --system jetstream --workload pubsub \
	--batch 1 "${nats[@]}"
# core NATS: no ack, no storage; a reference for a plain server on loopback
ack=no
dur=none
for w in pub pubsub; do
	run "nats-core $w" "$bench_nats" --system nats-core --workload "$w" --batch 1 "${nats[@]}"
done
ack=yes
stop_server "$nats_pid"
nats_pid=

# JetStream with fsync before the PubAck: sync_interval always (nats-server >= 2.10)
ver=$("$nats_server" --version 2>/dev/null | sed -n 's/.*v\([0-9]*\)\.\([0-9]*\).*/\1 \2/p')
read -r vmaj vmin <<<"${ver:-0 0}"
if [ "$vmaj" -gt 2 ] || { [ "$vmaj" -eq 2 ] && [ "$vmin" -ge 10 ]; }; then
	printf 'jetstream {\n\tsync_interval: always\n}\n' >"$tmp/nats-sync.conf"
	if start_nats "$tmp/nats-sync" "$tmp/nats-sync.conf"; then
		server_pid=$nats_pid
		nats=(--url "nats://127.0.0.1:$nats_port" --server-pid "$nats_pid")
		dur=fsync
		for b in $batches; do
			run "jetstream pub, file storage, sync always, batch $b" "$bench_nats" \
				--system jetstream --workload pub --storage file --batch "$b" "${nats[@]}"
		done
		stop_server "$nats_pid"
		nats_pid=
	else
		echo "$prog: nats-server did not take sync_interval always: no JetStream fsync rows" >&2
	fi
else
	echo "$prog: nats-server $vmaj.$vmin has no sync_interval always (2.10 and later):" \
		"no JetStream rows with fsync before the ack" >&2
fi
exit "$failed"
