#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The Soft-RoCE experiment of every RoCE how-to, on two nodes: load the
# driver, `rdma link add`, look at the device, then ib_send_bw with the
# server on node2 and the client on node1. Extra arguments go to ib_send_bw.
set -euo pipefail
. "$REPO/qemu-test/lib.sh"

step() { echo; echo "node$NODE_INDEX \$ $*"; "$@"; }

# The harness already loaded the driver and ran `rdma link add`; show it.
if [ "$RXE_DRIVER" = rs ]; then
	step modinfo -F description "$RXE_RS_KO"
	step lsmod
fi
step rdma link show
step ibv_devices
step ibv_devinfo -d "$RXE_DEV"
barrier ready

port=18515
if is_server; then
	step ib_send_bw -d "$RXE_DEV" -p $port "$@" | tee "$OUT_DIR/ib_send_bw.txt" &
	server=$!
	wait_listen $port
	barrier listening
	wait "$server"
else
	barrier listening
	step ib_send_bw -d "$RXE_DEV" -p $port "$@" "$(server_ip)" | tee "$OUT_DIR/ib_send_bw.txt"
	bw=$(awk '/^ *[0-9]+ +[0-9]+/ { print $4 }' "$OUT_DIR/ib_send_bw.txt" | tail -1)
	[ -n "$bw" ] || fail "ib_send_bw printed no result"
	echo
	echo "ib_send_bw ${RXE_DRIVER}: BW average ${bw} MB/sec"
fi
barrier finished
