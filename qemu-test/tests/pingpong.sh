#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# A libibverbs example pingpong between node 2 (server) and node 1 (client)
# over the IPv4 RoCEv2 GID, with payload checks (-c).
#
#   qemu-test/run --drivers rs,c qemu-test/tests/pingpong.sh ibv_rc_pingpong 1 4096 65536
#
# Arguments: the program, then one or more message sizes; each size is one
# pingpong run of -n ITERS (PINGPONG_ITERS, default 100) exchanges.
set -euo pipefail
# shellcheck source=qemu-test/lib.sh
. "$REPO/qemu-test/lib.sh"

prog=${1:?program}
shift
[ $# -gt 0 ] || fail "no sizes given"
iters=${PINGPONG_ITERS:-100}

gidx=$(roce_gid_index v4) || fail "no IPv4 RoCE v2 GID on $RXE_DEV"
note "$prog: gid index $gidx"

port=18515
for size in "$@"; do
	args=(-d "$RXE_DEV" -g "$gidx" -n "$iters" -s "$size" -c -p "$port")
	if is_server; then
		log="$OUT_DIR/$prog-$size.server.log"
		timeout "${PINGPONG_TIMEOUT:-60}" "$prog" "${args[@]}" >"$log" 2>&1 &
		pp=$!
		wait_listen "$port"
		barrier "pp-up-$size"
		wait "$pp" || { cat "$log"; grep -H . /sys/class/infiniband/"$RXE_DEV"/ports/1/hw_counters/* || true; fail "$prog -s $size: server failed"; }
		cat "$log"
	elif is_client; then
		barrier "pp-up-$size"
		log="$OUT_DIR/$prog-$size.client.log"
		if ! timeout "${PINGPONG_TIMEOUT:-60}" "$prog" "${args[@]}" "$(server_ip)" >"$log" 2>&1; then
			cat "$log"
			grep -H . /sys/class/infiniband/"$RXE_DEV"/ports/1/hw_counters/* || true
			fail "$prog -s $size: client failed"
		fi
		cat "$log"
	else
		barrier "pp-up-$size"
	fi
	barrier "pp-done-$size"
	note "$prog -s $size ok"
	port=$((port + 1))
done
note "pingpong ok"
