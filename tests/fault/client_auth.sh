#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The sluice authors
#
# Client tokens (sluiced --token-file) against live nodes on net_tap in a namespace (see
# client_auth.py): a token file that others can read, a link or one with an error stops the
# start; without the file the start log says the node is open; with it, HELLO needs a known
# token, each request its token's right on its topic (admin for auto-creation, durable
# channels by SUB and SET_OFFSET), auto-created topics are limited per address, and
# `sluicectl token reload` revokes a removed token's live session.
. "$(dirname "$0")/../integration/lib.sh"

NS=sl-ca-$$
NET=10.82.$(( $$ % 200 ))
BROKER=$NET.2
TOK=$TMP/tok
mkdir -m 0700 "$TOK"
make_netns "$NS"

tap_up() {
	local ifc=$1
	in_ns "$NS" ip addr add "$NET.1/24" dev "$ifc" || fail "address"
	in_ns "$NS" ip addr add "$NET.3/24" dev "$ifc" || fail "address .3"
	in_ns "$NS" ip link set "$ifc" up || fail "link up"
	in_ns "$NS" ping -c 1 -W 2 "$BROKER" > /dev/null || fail "broker unreachable"
}

# tokens: made by sluicectl token gen (files of mode 0600); "hashed" is listed in the
# node's file by its blake2b: form only
for t in pubonly billing reader admin hashed victim; do
	"$CTL" token gen "$TOK/$t.token" || fail "token gen $t"
done
[ "$(stat -c %a "$TOK/admin.token")" = 600 ] || fail "token gen: mode $(stat -c %a "$TOK/admin.token")"
grep -Eqx '[0-9a-f]{64}' "$TOK/admin.token" || fail "token gen: not 64 hex digits"
HASHED=$("$CTL" token hash "$TOK/hashed.token") || fail "token hash"
[ "$HASHED" = "$("$CTL" token hash < "$TOK/hashed.token")" ] || fail "token hash: stdin differs"
grep -q "$(cat "$TOK/hashed.token")" <<< "$HASHED" && fail "token hash shows the token"
cat > "$TOK/tokens.base" <<EOF
# client tokens of the client_auth test
token pubonly $(cat "$TOK/pubonly.token")
allow pubonly pub orders
token billing $(cat "$TOK/billing.token")
allow billing pub,sub billing.*
token reader $(cat "$TOK/reader.token")
allow reader sub *
token admin $(cat "$TOK/admin.token")
allow admin all *
token hashed $HASHED
allow hashed pub audit
EOF
write_tokens() {	# FILE CONTENT...: mode 0600 from the start
	( umask 077 && cat > "$1" )
}
write_tokens "$TOK/tokens.conf" < <(cat "$TOK/tokens.base"; printf 'token victim %s\nallow victim pub,sub orders\n' "$(cat "$TOK/victim.token")")

# 1. files the node must refuse: it does not start, and says why
bad_start() {	# NAME WANT ARGS...: sluiced exits non-zero and its log holds WANT
	local name=$1 want=$2 rc
	shift 2
	# shellcheck disable=SC2086
	timeout 60 "$SLUICED" $SLUICE_EAL --file-prefix "sl-$name-$$" -- \
		--control "$TMP/$name.sock" --port net_null0 --ip 192.0.2.1 "$@" \
		> "$TMP/$name.log" 2>&1
	rc=$?
	[ $rc -ne 0 ] && [ $rc -ne 124 ] || fail "$name: sluiced exited with $rc"
	grep -qF -- "$want" "$TMP/$name.log" || fail "$name: no '$want' in its log"
	log "refused at start: $name ($(grep -F -- "$want" "$TMP/$name.log" | head -1 | sed 's/^.*sluiced: //'))"
}
cp "$TOK/tokens.conf" "$TOK/open.conf"
chmod 0644 "$TOK/open.conf"
bad_start mode644 "readable by no one else" --token-file "$TOK/open.conf"
ln -s "$TOK/tokens.conf" "$TOK/link.conf"
bad_start symlink "symbolic link" --token-file "$TOK/link.conf"
write_tokens "$TOK/syntax.conf" <<EOF
token a $(cat "$TOK/admin.token")
allow a publish orders
EOF
bad_start syntax "syntax.conf:2: rights 'publish'" --token-file "$TOK/syntax.conf"
bad_start anon "--anon-publish cannot go with --token-file" --token-file "$TOK/tokens.conf" \
	--anon-publish

# 2. no token file: open, and the start log says so
IF=slcaa$$
IF=${IF:0:15}
start_sluiced caopen "$NS" "" -- --port "net_tap0,iface=$IF" --ip "$BROKER/24" --topic orders:1
grep -qF "no --token-file: any client that reaches the port may publish and consume" \
	"$TMP/caopen.log" || fail "the open mode is not in the start log"
tap_up "$IF"
AUTH_MODE=open in_ns "$NS" python3 "$(dirname "$0")/client_auth.py" "$BROKER" "$CTL" \
	"$TMP/caopen.sock" "$TOK" "$PUB" "$SUB" "$NET.1" "$NET.3" || fail "open mode"
stop_pid "$SLUICED_PID" || fail "sluiced exited with $? on SIGTERM"

# 3. with the token file
IF=slcab$$
IF=${IF:0:15}
start_sluiced catok "$NS" "" -- --port "net_tap0,iface=$IF" --ip "$BROKER/24" \
	--token-file "$TOK/tokens.conf" --auto-create --auto-topics-per-source 2 --log-mb 4 \
	--topic orders:1 --topic billing.eu:1 --topic billing.us:1 --topic audit:1
grep -qF "client tokens: 6 token(s) from $TOK/tokens.conf" "$TMP/catok.log" ||
	fail "the token count is not in the start log"
grep -qF "no --token-file" "$TMP/catok.log" && fail "open-mode line with a token file"
tap_up "$IF"
ctl catok channel create orders opchan > /dev/null || fail "channel create"
ctl catok channel create orders toolchan > /dev/null || fail "channel create"
ctl catok channel create billing.eu opchan > /dev/null || fail "channel create"
in_ns "$NS" python3 "$(dirname "$0")/client_auth.py" "$BROKER" "$CTL" "$TMP/catok.sock" \
	"$TOK" "$PUB" "$SUB" "$NET.1" "$NET.3" || fail "client tokens"
kill -0 "$SLUICED_PID" || fail "sluiced died"
stop_pid "$SLUICED_PID" || fail "sluiced exited with $? on SIGTERM"
log "PASS"
