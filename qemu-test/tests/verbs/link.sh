#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# `rdma link add/delete` and the netdev events a device must follow:
# duplicate/missing/bad names and netdevs fail cleanly and leave the first
# device working; link down/up, MTU changes and netdev removal show up in
# the port attributes; a device's removal with a user holding it open
# (disassociated at once, or waiting for the user: per driver). One node is
# enough; run it on rs and on c.
#
#   qemu-test/run --nodes 1 --drivers rs qemu-test/tests/verbs/link.sh
set -euo pipefail
. "$REPO/qemu-test/lib/lib.sh"

port_attr() { # DEV ATTR: one field of ibv_devinfo's port 1
	ibv_devinfo -v -d "$1" -i 1 | sed -nE "s/^\s+$2:\s+(.*)$/\1/p" | head -1
}

port_state_is() { [[ $(port_attr "$1" state) == "$2"* ]]; }
dev_exists() { [ -e "/sys/class/infiniband/$1" ]; }
dev_gone() { ! dev_exists "$1"; }

must_fail() { # WHAT CMD...: CMD must fail
	local what=$1
	shift
	if "$@" 2>"$OUT_DIR/err.txt"; then
		fail "$what: succeeded"
	fi
	note "$what: failed as expected: $(tr '\n' ' ' <"$OUT_DIR/err.txt")"
}

still_fine() {
	dev_exists "$RXE_DEV" || fail "$RXE_DEV vanished"
	port_state_is "$RXE_DEV" PORT_ACTIVE || fail "$RXE_DEV not active: $(port_attr "$RXE_DEV" state)"
}

note "bad requests"
must_fail "second device on eth0" rdma link add rxe_dup type rxe netdev eth0
still_fine
must_fail "missing netdev" rdma link add rxe_none type rxe netdev nosuch0
must_fail "name with %" rdma link add 'bad%d' type rxe netdev eth0
must_fail "name too long" rdma link add "$(printf 'x%.0s' {1..80})" type rxe netdev eth0
must_fail "existing name" rdma link add "$RXE_DEV" type rxe netdev lo
ip link add link eth0 name eth0.7 type vlan id 7
must_fail "device on a VLAN" rdma link add rxe_vlan type rxe netdev eth0.7
ip link del eth0.7
still_fine
if ! { dev_gone rxe_dup && dev_gone rxe_none && dev_gone rxe_vlan; }; then fail "a failed add left a device"; fi

note "link down/up"
ip link set eth0 down
wait_until 10 port_state_is "$RXE_DEV" PORT_DOWN || fail "port not DOWN after link down"
[[ $(port_attr "$RXE_DEV" phys_state) == DISABLED* ]] || fail "phys_state $(port_attr "$RXE_DEV" phys_state)"
rdma link show "$RXE_DEV/1" | grep -q 'state DOWN' || fail "rdma link show: $(rdma link show "$RXE_DEV/1")"
ip link set eth0 up
wait_until 10 port_state_is "$RXE_DEV" PORT_ACTIVE || fail "port not ACTIVE after link up"
[[ $(port_attr "$RXE_DEV" phys_state) == LINK_UP* ]] || fail "phys_state $(port_attr "$RXE_DEV" phys_state)"
rdma link show "$RXE_DEV/1" | grep -q 'state ACTIVE' || fail "rdma link show: $(rdma link show "$RXE_DEV/1")"

note "carrier loss"
ip link add rxv0 type veth peer name rxv1
ip link set rxv0 up
rdma link add rxe_veth type rxe netdev rxv0
wait_until 10 dev_exists rxe_veth || fail "rxe_veth not created"
# The peer is down, so the veth has no carrier: the port must not be active.
port_state_is rxe_veth PORT_DOWN || fail "rxe_veth without carrier: $(port_attr rxe_veth state)"
ip link set rxv1 up
wait_until 10 port_state_is rxe_veth PORT_ACTIVE || fail "rxe_veth not ACTIVE with carrier"
ip link set rxv1 down
wait_until 10 port_state_is rxe_veth PORT_DOWN || fail "rxe_veth not DOWN after carrier loss"

note "MTU"
for pair in 1200:1024 2200:2048 4200:4096 9000:4096 600:512 1500:1024; do
	ip link set eth0 mtu "${pair%%:*}"
	mtu=$(port_attr "$RXE_DEV" active_mtu)
	[[ $mtu == "${pair##*:} "* ]] || fail "netdev mtu ${pair%%:*}: active_mtu $mtu, want ${pair##*:}"
done
[[ $(port_attr "$RXE_DEV" max_mtu) == "4096 "* ]] || fail "max_mtu $(port_attr "$RXE_DEV" max_mtu)"

note "GID table follows the addresses"
has_gid() { ibv_devinfo -v -d "$RXE_DEV" | grep -q "GID\[.*\]:.*$1"; }
ip addr add 10.99.0.1/24 dev eth0
ip addr add fd99::1/64 dev eth0 nodad
wait_until 10 has_gid '::ffff:10.99.0.1' || fail "no GID for a new IPv4 address"
wait_until 10 has_gid 'fd99::1' || fail "no GID for a new IPv6 address"
ip addr del 10.99.0.1/24 dev eth0
ip addr del fd99::1/64 dev eth0
wait_until 10 eval '! has_gid ::ffff:10.99.0.1' || fail "GID of a removed IPv4 address stays"
wait_until 10 eval '! has_gid fd99::1' || fail "GID of a removed IPv6 address stays"

note "netdev removal"
ip link del rxv0
wait_until 10 dev_gone rxe_veth || fail "rxe_veth survived the removal of its netdev"
ip link add rxd0 type dummy
ip link set rxd0 up
rdma link add rxe_dummy type rxe netdev rxd0
wait_until 10 dev_exists rxe_dummy || fail "rxe_dummy not created"
ip link del rxd0
wait_until 10 dev_gone rxe_dummy || fail "rxe_dummy survived the removal of its netdev"
still_fine

note "removal with a user holding the device open"
# With disassociate_ucontext (rxe_rs; rdma_rxe from 7.x on) the core tears
# the user's context down and the device goes at once; the user's verbs
# then fail with EIO. Without it (rdma_rxe 6.12) the removal waits for the
# user to close the device.
ip link add rxd1 type dummy
ip link set rxd1 up
rdma link add rxe_held type rxe netdev rxd1
wait_until 10 dev_exists rxe_held || fail "rxe_held not created"
if disassociates; then
	holder_start rxe_held gone
	timeout 60 rdma link delete rxe_held || fail "rdma link delete with a user: status $?"
	dev_gone rxe_held || fail "rxe_held stays after its delete"
	holder_alive || fail "the holder exited before it was told to go on"
	holder_finish
	rdma link add rxe_held type rxe netdev rxd1
	wait_until 10 dev_exists rxe_held || fail "rxe_held not created again"
	holder_start rxe_held gone
	timeout 60 ip link del rxd1 || fail "ip link del with a user: status $?"
	wait_until 10 dev_gone rxe_held || fail "rxe_held survived the removal of its netdev"
	holder_alive || fail "the holder exited before it was told to go on"
	holder_finish
else
	holder_start rxe_held live
	rdma link delete rxe_held &
	del=$!
	sleep 3
	kill -0 "$del" 2>/dev/null || fail "rdma link delete returned while a user holds the device"
	dev_exists rxe_held || fail "rxe_held gone while a user holds it"
	holder_finish
	wait "$del" || fail "rdma link delete with a user: failed"
	wait_until 10 dev_gone rxe_held || fail "rxe_held stays after its user closed it"
	ip link del rxd1
fi
still_fine

note "delete and add again"
rdma link delete "$RXE_DEV"
wait_until 10 dev_gone "$RXE_DEV" || fail "$RXE_DEV not deleted"
must_fail "deleting it twice" rdma link delete "$RXE_DEV"
rdma link add "$RXE_DEV" type rxe netdev eth0
wait_until 10 port_state_is "$RXE_DEV" PORT_ACTIVE || fail "re-added device not ACTIVE"
ibv_devices | grep -qw "$RXE_DEV" || fail "ibv_devices does not list the re-added device"
note "link ok"
