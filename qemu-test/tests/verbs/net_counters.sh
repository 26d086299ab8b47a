#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The hardware counters look the same on rs and c: `rdma statistic` and sysfs
# list the same names in the same order, and the port-down path counts
# link_downed the same way (on a dummy netdev, so eth0 keeps its addresses).
# sent_bytes and rcvd_bytes, which 7.3's rdma_rxe has and 6.12's lacks, are
# left out of the comparison against 6.12's rdma_rxe; an RC pingpong checks
# them wherever they exist, against the peer's counts when it has them too.
# rxe_rs's own counters (rcvd_drop_*, dropped packets by reason, and the
# loss recovery's completer_gap_retry, resp_reorder_held, comp_reorder_held,
# completer_probe_retry and resend_skipped, after rdma_rxe's) are left out
# of the comparison.
#
#   qemu-test/run --drivers rs,c qemu-test/tests/verbs/net_counters.sh
set -euo pipefail
. "$REPO/qemu-test/lib/lib.sh"

# `rdma statistic show link DEV/1` prints "link DEV/1 name value name value ...".
stat_names() { # DEV
	rdma statistic show link "$1/1" | tr ' ' '\n' | sed -n '3~2p' | grep -v '^$'
}
stat_value() { # DEV NAME
	rdma statistic show link "$1/1" | tr ' ' '\n' | grep -A1 -x "$2" | tail -n 1
}

# Whether this node's device has sent_bytes and rcvd_bytes.
has_bytes() { [ "$RXE_DRIVER" = rs ] || [ "${RXE_KERNEL:-6.12}" != 6.12 ]; }

# Against 6.12's rdma_rxe the two byte counters are left out, and rxe_rs's
# own counters always.
mask_bytes() {
	local own=(-e '^rcvd_drop_' -e '^completer_gap_retry$' -e '^resp_reorder_held$' -e '^comp_reorder_held$' -e '^completer_probe_retry$' -e '^resend_skipped$')
	[ "${RXE_KERNEL:-6.12}" != 6.12 ] || own+=(-e '^sent_bytes$' -e '^rcvd_bytes$')
	grep -v "${own[@]}"
}

# rxe_rs's own counters: dropped packets by reason (8), loss recovery (5).
OWN_COUNTERS=13

snapshot() {
	echo "--- rdma statistic"
	stat_names "$RXE_DEV" | mask_bytes
	echo "--- sysfs hw_counters"
	ls "/sys/class/infiniband/$RXE_DEV/ports/1/hw_counters" | mask_bytes
}

rdma statistic show link "$RXE_DEV/1"
snapshot >"$SHARED_DIR/counters.node$NODE_INDEX"
want=15
! has_bytes || want=17
[ "$RXE_DRIVER" != rs ] || want=$((want + OWN_COUNTERS))
[ "$(stat_names "$RXE_DEV" | wc -l)" -eq "$want" ] || fail "expected $want counters"
for name in $(stat_names "$RXE_DEV"); do
	v=$(cat "/sys/class/infiniband/$RXE_DEV/ports/1/hw_counters/$name")
	[[ $v =~ ^[0-9]+$ ]] || fail "sysfs counter $name reads '$v'"
done

# sent_bytes/rcvd_bytes: 50 round trips of 2000 bytes (two packets each
# way at the 1024-byte IB MTU of a 1500-byte link) between nodes 1 and 2.
# A packet counts from its IP header on: at least a bare IPv4 ACK (48
# bytes), at most the link MTU.
if ((NODE_INDEX <= 2)); then
	gid=$(roce_gid_index v4) || fail "no RoCE v2 IPv4 GID"
	b0=$(hw_counter sent_pkts):$(hw_counter sent_bytes):$(hw_counter rcvd_pkts):$(hw_counter rcvd_bytes)
	pp=(ibv_rc_pingpong -d "$RXE_DEV" -g "$gid" -n 50 -s 2000 -p 18999)
	if is_server; then
		timeout 120 "${pp[@]}" >"$OUT_DIR/pingpong.log" 2>&1 &
		srv=$!
		wait_listen 18999 60
		barrier pp-up
		wait "$srv" || { cat "$OUT_DIR/pingpong.log"; fail "ibv_rc_pingpong server failed"; }
	else
		barrier pp-up
		timeout 120 "${pp[@]}" "$(server_ip)" >"$OUT_DIR/pingpong.log" 2>&1 ||
			{ cat "$OUT_DIR/pingpong.log"; fail "ibv_rc_pingpong client failed"; }
	fi
	barrier pp-done
	sleep 1
	IFS=: read -r sp0 sb0 rp0 rb0 <<<"$b0"
	sp=$(($(hw_counter sent_pkts) - sp0)) sb=$(($(hw_counter sent_bytes) - sb0))
	rp=$(($(hw_counter rcvd_pkts) - rp0)) rb=$(($(hw_counter rcvd_bytes) - rb0))
	echo "pingpong: sent $sp packets $sb bytes, received $rp packets $rb bytes"
	if has_bytes; then
		((sp >= 100 && rp >= 100)) || fail "only $sp packets sent, $rp received"
		((sb >= 48 * sp && sb <= 1500 * sp)) || fail "$sb bytes in $sp sent packets"
		((rb >= 48 * rp && rb <= 1500 * rp)) || fail "$rb bytes in $rp received packets"
		publish "bytes.node$NODE_INDEX" "$sb:$rb"
	else
		publish "bytes.node$NODE_INDEX" none
	fi
	barrier pp-published
	peer=$(fetch "bytes.node$((3 - NODE_INDEX))" 10)
	if has_bytes && [ "$peer" != none ]; then
		IFS=: read -r psb _ <<<"$peer"
		[ "$rb" = "$psb" ] || fail "received $rb bytes, the peer counts $psb sent"
		note "byte counters agree with the peer's ($sb sent, $rb received)"
	fi
fi

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
