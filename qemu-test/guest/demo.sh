#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The Soft-RoCE experiment of every RoCE how-to, on two nodes: load the
# driver, `rdma link add`, look at the device, then ib_send_bw with the
# server on node2 and the client on node1. Extra arguments go to ib_send_bw.
set -euo pipefail
. "$REPO/qemu-test/lib/lib.sh"

# lib.sh's step, with a blank line between the steps.
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

ib_send_bw_pair "$RXE_DRIVER" "$@"
