#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# UD multicast through the RDMA CM, in both directions, ROUNDS times each
# in one boot: every round the receiving node starts two members of the
# group (two processes, two QPs attached to it) that join afresh, the
# other node joins as a sender and sends COUNT messages once, every
# receiver must get every one, and all leave again. Group 239.1.1.7, then
# ff0e::1:7 where the kernel's CM takes IPv6 groups on RoCE v2 (6.12's
# cma_iboe_join_multicast refuses them with ENOTSUPP, whichever the driver:
# the script says so and skips them).
#
#   qemu-test/run --drivers rs,c qemu-test/tests/datapath/mckey.sh [COUNT [ROUNDS]]
#
# COUNT defaults to 20 messages, ROUNDS to 4.
#
# The members: librdmacm's mckey, and mcast_cm.py, which checks the
# content and order of every message. The sender is mcast_cm.py, which
# takes each send's completion before it leaves; on rxe_rs, every second
# round sends with mckey instead (two mckey receivers then). mckey posts
# its sends unsignaled and tears its AH and QP down right after: rdma_rxe
# 6.12 sends a user QP's work requests from a worker (rxe_sched_task), so
# the last ones can still be queued when the AH goes, and never leave the
# node (a capture shows them missing on the sender's own link, and both
# drivers' receivers miss the same ones). rxe_rs sends in the post_send
# call itself, so mckey loses nothing there.
set -euo pipefail
# shellcheck source=qemu-test/lib/lib.sh
. "$REPO/qemu-test/lib/lib.sh"

count=${1:-20}
rounds=${2:-4}
if ((NODE_INDEX > 2)); then
	exit 0
fi
cm=(/usr/bin/python3 "$REPO/qemu-test/tests/datapath/mcast_cm.py")

# librdmacm attaches the CM's QP to the group before it hands over the
# join event, and both programs print "joined" after that: from then on
# the sender may start. (The CM's IGMP join comes earlier, at the join
# call: a sender started on that sees its first messages dropped.)
joined() {
	grep -q "joined" "$1"
}

# round TAG RECEIVER GROUP BIND SENDER: one round, SENDER mckey or cm.
round() {
	local tag=$1 receiver=$2 group=$3 bind=$4 sender=$5 log pids=() logs=() i start
	log=$OUT_DIR/$tag
	if ((NODE_INDEX == receiver)); then
		if [ "$sender" = mckey ]; then
			timeout 40 stdbuf -oL mckey -m "$group" -b "$bind" -C "$count" >"$log-a.log" 2>&1 &
			pids+=($!) logs+=("$log-a.log")
			timeout 40 stdbuf -oL mckey -m "$group" -b "$bind" -C "$count" >"$log-b.log" 2>&1 &
			pids+=($!) logs+=("$log-b.log")
		else
			timeout 40 stdbuf -oL mckey -m "$group" -b "$bind" -C "$count" >"$log-a.log" 2>&1 &
			pids+=($!) logs+=("$log-a.log")
			timeout 40 "${cm[@]}" recv "$group" "$bind" "$count" "$tag" >"$log-b.log" 2>&1 &
			pids+=($!) logs+=("$log-b.log")
		fi
		start=$SECONDS
		for i in 0 1; do
			until joined "${logs[i]}"; do
				((SECONDS - start < 30)) || { cat "${logs[i]}"; fail "$tag: receiver $i did not join $group in 30 s"; }
				kill -0 "${pids[i]}" 2>/dev/null || { cat "${logs[i]}"; fail "$tag: receiver $i exited"; }
				sleep 0.2
			done
		done
		barrier "mckey-$tag-joined"
		for i in 0 1; do
			if ! wait "${pids[i]}"; then
				cat "${logs[i]}"
				fail "$tag: receiver $i ($RXE_DRIVER) did not get $count messages to $group (port rcvd_pkts $(hw_counter rcvd_pkts))"
			fi
		done
		note "$tag: $count messages to $group received twice ($RXE_DRIVER, sent with $sender)"
	else
		barrier "mckey-$tag-joined"
		# The receivers' joins add the group's MAC address at once in the
		# kernel, but virtio-net programs its receive filter from a work
		# item (6.12's rx_mode work): on a loaded host the first frames
		# can reach the device before the filter does.
		sleep 1
		log=$log-send.log
		if [ "$sender" = mckey ]; then
			timeout 40 stdbuf -oL mckey -m "$group" -b "$bind" -s -C "$count" >"$log" 2>&1 ||
				{ cat "$log"; fail "$tag: mckey sender ($RXE_DRIVER) failed"; }
		else
			timeout 40 "${cm[@]}" send "$group" "$bind" "$count" "$tag" >"$log" 2>&1 ||
				{ cat "$log"; fail "$tag: mcast_cm.py sender ($RXE_DRIVER) failed"; }
		fi
	fi
	barrier "mckey-$tag-done" 60
}

# rounds_of FAMILY RECEIVER GROUP BIND: ROUNDS rounds to RECEIVER.
rounds_of() {
	local fam=$1 receiver=$2 group=$3 bind=$4 r sender=cm driver
	publish "driver-$NODE_INDEX" "$RXE_DRIVER"
	driver=$(fetch "driver-$((3 - receiver))")
	for r in $(seq 1 "$rounds"); do
		if [ "$driver" = rs ] && ((r % 2 == 0)); then
			sender=mckey
		else
			sender=cm
		fi
		round "$fam-to-node$receiver-$r" "$receiver" "$group" "$bind" "$sender"
	done
}

rounds_of ipv4 2 239.1.1.7 "$NODE_IP"
rounds_of ipv4 1 239.1.1.7 "$NODE_IP"

# IPv6: only where both nodes' CM takes the group.
v6=yes
if ! "${cm[@]}" probe ff0e::1:7 "$NODE_IP6" 0 - >"$OUT_DIR/probe6.log" 2>&1; then
	grep -q "refuses" "$OUT_DIR/probe6.log" || { cat "$OUT_DIR/probe6.log"; fail "IPv6 group probe failed"; }
	v6=no
fi
publish "v6-$NODE_INDEX" "$v6"
if [ "$(fetch v6-1)" = yes ] && [ "$(fetch v6-2)" = yes ]; then
	rounds_of ipv6 2 ff0e::1:7 "$NODE_IP6"
	rounds_of ipv6 1 ff0e::1:7 "$NODE_IP6"
else
	note "IPv6 groups skipped: the CM refuses ff0e::1:7 on RoCE v2 ($(cat "$OUT_DIR/probe6.log"))"
fi
echo "mckey: ok"
