#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Teardown under traffic: while perftest runs between the two
# nodes, node 1 pulls the device from under it, three ways in turn:
#   1. `rdma link delete` of its device (then adds it again);
#   2. `ip link set eth0 down` (then up; the device stays);
#   3. `rmmod` of its driver during ib_read_bw: with disassociate_ucontext
#      (rxe_rs; rdma_rxe from 7.x on) it goes ahead under perftest, then the
#      driver and device come back; without it (rdma_rxe 6.12) it is
#      refused, as user space holds the device, and the traffic goes on.
# Each time perftest may fail on node 1 (its device went away) and must
# end on node 2 (its peer went silent: perftest's own timeout or the QP's
# retry limit), nothing may oops or warn, and afterwards a clean
# ib_write_bw must pass and kmemleak must report nothing on either node.
#
#   qemu-test/run --debug --drivers rs,rs qemu-test/tests/hardening/teardown.sh
set -euo pipefail
. "$REPO/qemu-test/lib/lib.sh"

gidx=$(roce_gid_index v4) || fail "no IPv4 RoCE v2 GID on $RXE_DEV"
kmemleak_clear
port=18700

unload() {
	case "$RXE_DRIVER" in
	rs) rmmod rdma_rxe_rs ;;
	c) rmmod rdma_rxe ;;
	esac
}

load() {
	case "$RXE_DRIVER" in
	rs) insmod "$RXE_RS_KO" ;;
	c) modprobe rdma_rxe ;;
	esac
	rdma link add "$RXE_DEV" type rxe netdev eth0
}

# round NAME PROGRAM ACTION RESTORE: PROGRAM runs (node 2 serves) for a
# while; after 3 s node 1 runs ACTION, waits for its perftest to end, then
# RESTORE.
round() {
	local name=$1 prog=$2 action=$3 restore=$4 log pid rc=0
	log=$OUT_DIR/$name.log
	local cmd=("$prog" -d "$RXE_DEV" -F -x "$gidx" -p "$port" -D 30 -s 65536)
	if is_server; then
		timeout 120 "${cmd[@]}" >"$log" 2>&1 &
		pid=$!
		wait_listen "$port"
		barrier "td-$name"
		wait "$pid" || rc=$?
		note "$name: server perftest ended with $rc"
	else
		barrier "td-$name"
		timeout 120 "${cmd[@]}" "$(server_ip)" >"$log" 2>&1 &
		pid=$!
		sleep 3
		note "$name: $action"
		eval "$action" || fail "$name: '$action' failed"
		wait "$pid" || rc=$?
		note "$name: client perftest ended with $rc"
		eval "$restore" || fail "$name: '$restore' failed"
	fi
	port=$((port + 1))
	barrier "td-$name-done" 200
	# The GID table fills again after the device came back.
	gidx=$(roce_gid_index v4) || fail "no IPv4 RoCE v2 GID on $RXE_DEV after $name"
}

round link-delete ib_send_bw "rdma link delete $RXE_DEV" \
	"rdma link add $RXE_DEV type rxe netdev eth0"
round netdev-down ib_write_bw "ip link set eth0 down" \
	"ip link set eth0 up && sleep 2"
# rmmod while user space holds the device (perftest running). uverbs
# holds the module of a driver without disassociate_ucontext, so the
# unload is refused and the traffic goes on to its end; with it, the unload
# disassociates perftest's context (its verbs fail with EIO).
if disassociates; then
	round rmmod ib_read_bw "unload" "load"
else
	round rmmod ib_read_bw "! unload 2>/dev/null" "true"
fi

# The device carries data again.
log=$OUT_DIR/after.log
if is_server; then
	timeout 120 ib_write_bw -d "$RXE_DEV" -F -x "$gidx" -p "$port" -n 200 >"$log" 2>&1 &
	pid=$!
	wait_listen "$port"
	barrier after
	wait "$pid" || { cat "$log"; fail "ib_write_bw after the teardowns"; }
else
	barrier after
	timeout 120 ib_write_bw -d "$RXE_DEV" -F -x "$gidx" -p "$port" -n 200 "$(server_ip)" >"$log" 2>&1 ||
		{ cat "$log"; fail "ib_write_bw after the teardowns"; }
fi
kmemleak_check
note "teardown: ok ($SECONDS s)"
