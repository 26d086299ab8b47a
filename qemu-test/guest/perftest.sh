#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# One perftest program between two nodes over the IPv4 RoCEv2 GID: node 2
# serves, node 1 is the client. Arguments: the program, then its options
# (both sides get them), e.g.
#
#   qemu-test/run --debug --drivers c,rs qemu-test/guest/perftest.sh ib_write_bw -s 65536 -n 200
#
# The client must print a result line and both sides must exit 0.
#
# Empty arguments are dropped: perftest takes its last non-option argument
# as the server's name, so an empty one turns the server into a client of
# host "" ("Name or service not known for :18515", "Problem in resolving
# basic address and port").
set -euo pipefail
# shellcheck source=qemu-test/lib/lib.sh
. "$REPO/qemu-test/lib/lib.sh"

args=()
for a in "$@"; do
	[ -n "$a" ] && args+=("$a")
done
[ "${#args[@]}" -ge 1 ] || fail "usage: perftest.sh PROGRAM [OPTIONS...]"
prog=${args[0]}
case "$prog" in
ib_send_bw | ib_write_bw | ib_read_bw | ib_atomic_bw | ib_send_lat | ib_write_lat | ib_read_lat | ib_atomic_lat) ;;
*) fail "not a perftest program: $prog" ;;
esac
opts=("${args[@]:1}")
port=18515

# perftest's default GID 0 is the link-local IPv6 one: use the RoCE v2 GID
# of this node's IPv4 address.
gidx=$(roce_gid_index v4) || fail "no IPv4 RoCE v2 GID on $RXE_DEV"
note "$prog: GID index $gidx, options: ${opts[*]:-}"

cmd=("$prog" -d "$RXE_DEV" -F -x "$gidx" -p "$port" "${opts[@]}")
log=$OUT_DIR/$prog.log
if is_server; then
	"${cmd[@]}" >"$log" 2>&1 &
	server=$!
	wait_listen "$port"
	barrier listening
	rc=0
	wait "$server" || rc=$?
	cat "$log"
	[ "$rc" = 0 ] || fail "$prog server exited with $rc"
elif is_client; then
	barrier listening
	rc=0
	timeout 600 "${cmd[@]}" "$(server_ip)" >"$log" 2>&1 || rc=$?
	cat "$log"
	[ "$rc" = 0 ] || fail "$prog client exited with $rc"
	# A result row: message size and iterations, then the figures.
	grep -Eq '^ *[0-9]+ +[0-9]+ +[0-9.]+' "$log" || fail "$prog printed no result line"
	note "$prog result: $(grep -E '^ *[0-9]+ +[0-9]+ +[0-9.]+' "$log" | tail -1)"
else
	barrier listening
fi
barrier finished
note "perftest $prog ok"
