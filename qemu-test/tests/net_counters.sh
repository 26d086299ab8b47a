#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The hardware counters look the same on rs and c: `rdma statistic` and sysfs
# list the same names in the same order, and the port-down path counts
# link_downed the same way (on a dummy netdev, so eth0 keeps its addresses).
#
#   qemu-test/run --drivers rs,c qemu-test/tests/net_counters.sh
set -euo pipefail
. "$REPO/qemu-test/lib.sh"

# `rdma statistic show link DEV/1` prints "link DEV/1 name value name value ...".
stat_names() { # DEV
	rdma statistic show link "$1/1" | tr ' ' '\n' | sed -n '3~2p' | grep -v '^$'
}
stat_value() { # DEV NAME
	rdma statistic show link "$1/1" | tr ' ' '\n' | grep -A1 -x "$2" | tail -n 1
}

snapshot() {
	echo "--- rdma statistic"
	stat_names "$RXE_DEV"
	echo "--- sysfs hw_counters"
	ls "/sys/class/infiniband/$RXE_DEV/ports/1/hw_counters"
}

rdma statistic show link "$RXE_DEV/1"
snapshot >"$SHARED_DIR/counters.node$NODE_INDEX"
[ "$(stat_names "$RXE_DEV" | wc -l)" -eq 15 ] || fail "expected 15 counters"
for name in $(stat_names "$RXE_DEV"); do
	v=$(cat "/sys/class/infiniband/$RXE_DEV/ports/1/hw_counters/$name")
	[[ $v =~ ^[0-9]+$ ]] || fail "sysfs counter $name reads '$v'"
done

# link_downed: a second device on a dummy netdev, taken down twice.
ip link add rxtdummy type dummy
ip link set rxtdummy up
rdma link add rxt0 type rxe netdev rxtdummy
sleep 0.5
before=$(stat_value rxt0 link_downed)
for _ in 1 2; do
	ip link set rxtdummy down
	sleep 0.3
	ip link set rxtdummy up
	sleep 0.3
done
after=$(stat_value rxt0 link_downed)
echo "--- link_downed delta over two down/up cycles: $((after - before))" | tee -a "$SHARED_DIR/counters.node$NODE_INDEX"
[ "$((after - before))" -ge 2 ] || fail "link_downed went from $before to $after"
rdma link delete rxt0
ip link del rxtdummy

same_on_all_nodes counters "counters"
((NODE_INDEX != 1)) || note "counters identical"
barrier done
