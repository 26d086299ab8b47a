#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Test of the harness's helpers (qemu-test/lib/lib.sh) on any number of nodes, and
# an example of the client/server pattern: node 2 serves, node 1 connects,
# any other node only keeps step through the barriers.
#
#   qemu-test/run --nodes 3 --drivers c qemu-test/tests/selftest/harness.sh
set -euo pipefail
# shellcheck source=qemu-test/lib/lib.sh
. "$REPO/qemu-test/lib/lib.sh"

kmemleak_clear
echo "node$NODE_INDEX was here" >"$OUT_DIR/hello.txt"

# A barrier name can be used again and again.
for _ in 1 2 3; do barrier loop; done
note "barriers ok"

publish "ip.$NODE_INDEX" "$NODE_IP"
for ((n = 1; n <= NODE_COUNT; n++)); do
	got=$(fetch "ip.$n")
	[ "$got" = "$(node_ip "$n")" ] || fail "fetch ip.$n gave '$got', want $(node_ip "$n")"
done
note "publish/fetch ok"

# TCP: iperf3's server survives wait_tcp_port's probe connection.
if is_server; then
	iperf3 -s -p 5201 >/dev/null 2>&1 &
	iperf=$!
	wait_listen 5201
	barrier iperf-up
	barrier iperf-done
	kill "$iperf"
elif is_client; then
	barrier iperf-up
	wait_tcp_port "$(server_ip)" 5201
	iperf3 -c "$(server_ip)" -p 5201 -t 3 -f m | tail -n 4
	barrier iperf-done
else
	barrier iperf-up
	barrier iperf-done
fi
note "tcp ok"

# RDMA: ibv_rc_pingpong's server takes its first TCP connection as the
# client, so the client must not probe it: the server says when it listens.
if is_server; then
	ibv_rc_pingpong -d "$RXE_DEV" -g 0 -n 100 >"$OUT_DIR/pingpong.log" 2>&1 &
	pp=$!
	wait_listen 18515
	barrier pingpong-up
	wait "$pp" || { cat "$OUT_DIR/pingpong.log"; fail "ibv_rc_pingpong server failed"; }
	cat "$OUT_DIR/pingpong.log"
elif is_client; then
	barrier pingpong-up
	ibv_rc_pingpong -d "$RXE_DEV" -g 0 -n 100 "$(server_ip)" || fail "ibv_rc_pingpong client failed"
else
	barrier pingpong-up
fi
barrier pingpong-done
note "rdma ok"

kmemleak_check
note "selftest ok"
