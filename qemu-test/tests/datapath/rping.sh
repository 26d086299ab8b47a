#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# librdmacm's rping with data validation between node 2 (server) and node
# 1 (client): over a connection the RDMA CM sets up, each ping sends the
# server a buffer that it RDMA READs and RDMA WRITEs back, and the client
# compares every byte with what it sent.
#
#   qemu-test/run --drivers rs,c qemu-test/tests/datapath/rping.sh [PINGS [SIZE]]
#
# PINGS defaults to 1000, SIZE to 65535 (rping's largest).
set -euo pipefail
# shellcheck source=qemu-test/lib/lib.sh
. "$REPO/qemu-test/lib/lib.sh"

pings=${1:-1000}
size=${2:-65535}
args=(-V -S "$size" -C "$pings" -a "$(server_ip)" -p 7174)
log=$OUT_DIR/rping.log
if is_server; then
	timeout 300 rping -s "${args[@]}" >"$log" 2>&1 &
	rp=$!
	# It listens through the RDMA CM, which `rdma resource` shows (ss does not).
	start=$SECONDS
	until rdma resource show cm_id 2>/dev/null | grep -q "LISTEN.*:7174"; do
		((SECONDS - start < 60)) || fail "rping -s does not listen after 60 s"
		kill -0 "$rp" 2>/dev/null || { cat "$log"; fail "rping server exited"; }
		sleep 0.5
	done
	barrier rping-up
	wait "$rp" || { cat "$log"; fail "rping server"; }
else
	barrier rping-up
	start=$SECONDS
	timeout 300 rping -c "${args[@]}" >"$log" 2>&1 || { cat "$log"; fail "rping -c -V: exit or data mismatch"; }
	note "rping: $pings pings of $size bytes read and written back, every byte compared, $((SECONDS - start)) s"
fi
barrier rping-done
