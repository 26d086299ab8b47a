#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Smoke test of the bench itself: every node has its rdma device and reaches
# every other node over IPv4 and IPv6.
#
#   qemu-test/run [--nodes N] [--drivers ...] qemu-test/tests/datapath/smoke.sh
set -euo pipefail
# shellcheck source=qemu-test/lib/lib.sh
. "$REPO/qemu-test/lib/lib.sh"

note "node$NODE_INDEX of $NODE_COUNT, driver $RXE_DRIVER, $NODE_IP $NODE_IP6"
rdma link show
ibv_devices
ibv_devices | grep -qw "$RXE_DEV" || fail "ibv_devices does not list $RXE_DEV"
rdma link show "$RXE_DEV/1" | grep -q 'state ACTIVE' || fail "$RXE_DEV port 1 not ACTIVE"

# Everyone is up before anyone pings.
barrier up

for ip in $PEER_IPS; do
	ping -c 3 -i 0.2 -W 5 "$ip" || fail "no IPv4 reply from $ip"
done
for ip in $PEER_IP6S; do
	ping -6 -c 3 -i 0.2 -W 5 "$ip" || fail "no IPv6 reply from $ip"
done

barrier finished
note "smoke ok"
