#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Hand-made RoCEv2 datagrams from node 1 to node 2's port 4791: valid ones,
# bad ICRCs, truncated, garbage, a 60 KB one, wrong keys, QP types and
# states, an address of node 2 that is none of its GIDs. Node 2 must survive (the run
# fails on any kernel report) and count exactly the valid ones in rcvd_pkts,
# whichever driver it runs (rdma_rxe crashes on short IPv6 datagrams; those
# cases are skipped when node 2 runs c). When node 2 runs rxe_rs built with
# RXE_RS_NETTEST=1, pings also exercise its transmit and loopback paths.
# RECEIVER (1 or 2, default 2) swaps the roles: with 1, node 2 sends to
# node 1, so a boot of rxe_rs on node 1 and rdma_rxe on node 2 can run it.
#
#   qemu-test/run --debug --drivers c,rs qemu-test/tests/hardening/net_raw.sh
#   qemu-test/run --debug --drivers rs,c qemu-test/tests/hardening/net_raw.sh 1
#   RXE_RS_NETTEST=1 qemu-test/run --debug --drivers c,rs qemu-test/tests/hardening/net_raw.sh
set -euo pipefail
. "$REPO/qemu-test/lib/lib.sh"

receiver=${1:-2}
case $receiver in
1) sender=2 ;;
2) sender=1 ;;
*) fail "RECEIVER is 1 or 2, not '$receiver'" ;;
esac
py=$REPO/qemu-test/tests/hardening/net_raw.py
# net_raw.py's NOT_OURS4.
not_ours=${RXE_NET4%.*}.99.2
if [ "$NODE_INDEX" = "$receiver" ]; then
	echo=0
	if [ "$RXE_DRIVER" = rs ] && grep -q nettest /proc/kallsyms; then
		echo=1
	fi
	publish echo "$echo"
	publish driver2 "$RXE_DRIVER"
	# An address of this node that is none of its rdma device's GIDs.
	ip addr add "$not_ours/32" dev lo
	barrier ready
	/usr/bin/python3 "$py" serve
	ip addr del "$not_ours/32" dev lo
	rdma statistic show link "$RXE_DEV/1"
elif [ "$NODE_INDEX" = "$sender" ]; then
	barrier ready
	ip route add "$not_ours/32" via "$(node_ip "$receiver")" dev eth0
	echo=$(fetch echo)
	driver2=$(fetch driver2)
	note "node$sender (sender) runs $RXE_DRIVER, node$receiver (receiver) $driver2; echo tests: $echo"
	/usr/bin/python3 "$py" send "$echo" "$driver2" || fail "some cases failed"
	ip route del "$not_ours/32"
	rdma statistic show link "$RXE_DEV/1"
else
	barrier ready
fi
barrier done
