#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Network namespaces on one node: rxe devices on netdevs of other
# namespaces, each namespace with its own RoCE UDP sockets (port 4791).
#
#   qemu-test/run --debug --nodes 1 --drivers rs qemu-test/tests/netns/netns.sh
#
# 1. Two namespaces joined by a veth pair, a device made in each with
#    `ip netns exec NS rdma link add`: RC and UD pingpongs over IPv4 and
#    IPv6 GIDs; each namespace has its sockets while it has a device.
# 2. A device in the initial namespace and one in a third namespace, with
#    the same addresses as the first pair (still there): RC and UD.
# 3. Namespace deletion with devices in it; with user processes (in the
#    initial namespace) holding a device open with mapped queues, which no
#    longer hold the deletion back: their contexts are disassociated, their
#    verbs fail with EIO, they exit cleanly (or die by SIGKILL); and with
#    the process inside the namespace, which keeps it until it exits.
# 4. The RDMA core in exclusive netns mode: a device made in a namespace
#    belongs to it; `rdma dev set DEV netns NS` moves a device there and
#    back (its netdev stays), disassociating a process that holds it open,
#    and RC runs from its new namespace; in shared mode the core refuses
#    the move (EOPNOTSUPP).
# 5. Module unload, then kmemleak.
#
# rdma_rxe 6.12 has one socket pair in the initial namespace only, so this
# runs on rs only.
set -euo pipefail
. "$REPO/qemu-test/lib/lib.sh"

[ "$RXE_DRIVER" = rs ] || {
	note "netns: rdma_rxe 6.12 has no network namespace support; rs only"
	exit 0
}

iters=${NETNS_ITERS:-50}
port=18600
kmemleak_clear

# in_ns NS CMD...: CMD in namespace NS ("init": the initial one).
in_ns() {
	local ns=$1
	shift
	if [ "$ns" = init ]; then "$@"; else ip netns exec "$ns" "$@"; fi
}

dev_exists() { in_ns "${2:-init}" test -e "/sys/class/infiniband/$1"; }
dev_gone() { ! dev_exists "$@"; }

# roce_sockets NS: how many UDP sockets listen on 4791 in NS.
roce_sockets() { in_ns "$1" ss -Hlun 'sport = :4791' | wc -l; }

# gid_index NS DEV IP: sets GID to DEV's RoCE v2 GID index of address IP
# (10.88.0.N or fd88::N), seen from NS; remembered per device and address.
declare -A gid_seen=()
gid_index() {
	local ns=$1 dev=$2 ip=$3 want f i start=$SECONDS
	local port=/sys/class/infiniband/$dev/ports/1
	GID=${gid_seen[$dev/$ip]:-}
	[ -z "$GID" ] || return 0
	case "$ip" in
	fd88::*) want=$(printf 'fd88:0000:0000:0000:0000:0000:0000:%04x' "${ip#fd88::}") ;;
	*) want=$(printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x' ${ip//./ }) ;;
	esac
	while ((SECONDS - start < 30)); do
		# The first 16 of the 1024 entries hold this test's addresses
		# (reading all of them takes ~10 s on the debug kernel).
		i=$(in_ns "$ns" sh -c "for f in \$(grep -lx '$want' $port/gids/[0-9] $port/gids/1[0-5] 2>/dev/null); do
			i=\${f##*/}
			[ \"\$(cat $port/gid_attrs/types/\$i 2>/dev/null)\" = 'RoCE v2' ] && { echo \$i; break; }
		done; true")
		[ -n "$i" ] && { gid_seen[$dev/$ip]=$i; GID=$i; return 0; }
		sleep 0.5
	done
	return 1
}

# has TEXT CMD...: CMD's output contains TEXT.
has() {
	local text=$1 out
	shift
	out=$("$@" 2>&1) || true
	[[ $out == *"$text"* ]]
}

listening() { [ -n "$(in_ns "$1" ss -Hltn "sport = :$2")" ]; }

# pp PROG SNS SDEV SIP CNS CDEV CIP: PROG's server on SDEV in SNS, its
# client on CDEV in CNS, over the GIDs of SIP and CIP (both IPv4 or both
# IPv6, 10.88.0.N or fd88::N); the TCP exchange goes over IPv4.
pp() {
	local prog=$1 sns=$2 sdev=$3 sip=$4 cns=$5 cdev=$6 cip=$7 sg cg srv size=64
	local tcp=${sip/fd88::/10.88.0.} t0=$SECONDS
	[ "$prog" = ibv_ud_pingpong ] && size=512
	port=$((port + 1))
	gid_index "$sns" "$sdev" "$sip" || fail "no RoCE v2 GID for $sip on $sdev ($sns)"
	sg=$GID
	gid_index "$cns" "$cdev" "$cip" || fail "no RoCE v2 GID for $cip on $cdev ($cns)"
	cg=$GID
	local tg=$((SECONDS - t0))
	local log="$OUT_DIR/$prog-$sdev-$cdev-$port"
	in_ns "$sns" timeout 60 "$prog" -d "$sdev" -g "$sg" -n "$iters" -s "$size" -c -p "$port" >"$log.server" 2>&1 &
	srv=$!
	wait_until 30 listening "$sns" "$port" || { cat "$log.server"; fail "$prog server on $sdev does not listen"; }
	if ! in_ns "$cns" timeout 60 "$prog" -d "$cdev" -g "$cg" -n "$iters" -s "$size" -c -p "$port" "$tcp" >"$log.client" 2>&1; then
		cat "$log.client" "$log.server"
		fail "$prog $cdev ($cns, $cip) -> $sdev ($sns, $sip): client failed"
	fi
	wait "$srv" || { cat "$log.server"; fail "$prog $cdev -> $sdev: server failed"; }
	note "$prog $cdev ($cns, $cip) -> $sdev ($sns, $sip): $(grep -m1 'bytes in' "$log.client") (gids ${tg}s, all $((SECONDS - t0))s)"
}

# setup_if NS IF ADDR4 ADDR6: move IF into NS (unless "init"), address it, up.
setup_if() {
	local ns=$1 dev=$2 a4=$3 a6=$4
	[ "$ns" = init ] || ip link set "$dev" netns "$ns"
	in_ns "$ns" ip link set lo up
	in_ns "$ns" ip addr add "$a4/24" dev "$dev"
	in_ns "$ns" ip -6 addr add "$a6/64" dev "$dev" nodad
	in_ns "$ns" ip link set "$dev" up
}

note "1. two namespaces, a device in each"
ip netns add nsA
ip netns add nsB
ip link add va type veth peer name vb
setup_if nsA va 10.88.0.1 fd88::1
setup_if nsB vb 10.88.0.2 fd88::2
[ "$(roce_sockets nsA)" = 0 ] || fail "nsA has RoCE sockets before any device"
ip netns exec nsA rdma link add rxeA type rxe netdev va
ip netns exec nsB rdma link add rxeB type rxe netdev vb
[ "$(roce_sockets nsA)" = 2 ] || fail "nsA: $(roce_sockets nsA) RoCE sockets with a device, want 2"
[ "$(roce_sockets nsB)" = 2 ] || fail "nsB: $(roce_sockets nsB) RoCE sockets with a device, want 2"
# Shared mode (the default): every namespace sees every device; the netdev
# is named only where it lives.
has 'netdev va' ip netns exec nsA rdma link show rxeA/1 || fail "nsA: $(ip netns exec nsA rdma link show rxeA/1)"
! has netdev rdma link show rxeA/1 || fail "init_net names nsA's netdev: $(rdma link show rxeA/1)"
has rxeA ip netns exec nsB rdma dev show || fail "nsB does not see rxeA in shared mode"
pp ibv_rc_pingpong nsB rxeB 10.88.0.2 nsA rxeA 10.88.0.1
pp ibv_rc_pingpong nsB rxeB fd88::2 nsA rxeA fd88::1
pp ibv_ud_pingpong nsB rxeB 10.88.0.2 nsA rxeA 10.88.0.1
pp ibv_ud_pingpong nsB rxeB fd88::2 nsA rxeA fd88::1

note "2. the initial namespace to a third one, same addresses as nsA and nsB"
ip netns add nsC
ip link add vi type veth peer name vc
setup_if init vi 10.88.0.1 fd88::1
setup_if nsC vc 10.88.0.2 fd88::2
rdma link add rxeI type rxe netdev vi
ip netns exec nsC rdma link add rxeC type rxe netdev vc
pp ibv_rc_pingpong nsC rxeC 10.88.0.2 init rxeI 10.88.0.1
pp ibv_ud_pingpong init rxeI fd88::1 nsC rxeC fd88::2
# The last device of a namespace takes its sockets along.
ip netns exec nsC rdma link delete rxeC
wait_until 10 dev_gone rxeC || fail "rxeC not deleted"
[ "$(roce_sockets nsC)" = 0 ] || fail "nsC keeps $(roce_sockets nsC) RoCE sockets after its last device"
[ "$(roce_sockets init)" = 2 ] || fail "init_net: $(roce_sockets init) RoCE sockets, want 2"
ip link del vi
wait_until 10 dev_gone rxeI || fail "rxeI survived the removal of its netdev"
dev_exists "$RXE_DEV" || fail "$RXE_DEV vanished"

note "3. namespace deletion"
ip netns del nsA
# The veth pair goes with nsA, and so do both devices.
wait_until 30 dev_gone rxeA || fail "rxeA survived the deletion of nsA"
wait_until 30 dev_gone rxeB || fail "rxeB survived the deletion of its netdev's peer"
ip netns del nsB
ip netns del nsC

# lone_device NS VETH DEV: a new namespace NS with a veth pair of its own
# (VETH and VETH1, both up) and an rxe device DEV on VETH.
lone_device() {
	ip netns add "$1"
	ip netns exec "$1" ip link add "$2" type veth peer name "${2}1"
	ip netns exec "$1" ip link set "${2}1" up
	ip netns exec "$1" ip link set "$2" up
	ip netns exec "$1" rdma link add "$3" type rxe netdev "$2"
}

# Processes in the initial namespace hold a device of nsD open (QPs and
# CQs with their rings mapped) while nsD goes: the device goes at once, its
# contexts disassociated. One process then finds its verbs failing with
# EIO and closes everything cleanly; the other dies by SIGKILL with its
# rings still mapped.
lone_device nsD vd rxeD
holder_start rxeD gone
ibv_rc_pingpong -d rxeD -g 0 -p 18700 >"$OUT_DIR/holder-kill.log" 2>&1 &
killed=$!
wait_until 30 listening init 18700 || fail "rc_pingpong on rxeD does not listen"
ip netns del nsD
wait_until 60 dev_gone rxeD || fail "rxeD stays while its users run"
holder_alive || fail "the holder of rxeD exited before it was told to go on"
kill -0 "$killed" || fail "rc_pingpong on rxeD exited on its own"
holder_finish
kill -9 "$killed"
wait "$killed" || true

# With the process inside the namespace: it keeps the namespace, and so the
# device, until it exits; the device works meanwhile.
lone_device nsE ve rxeE
holder_start rxeE live nsE
ip netns del nsE
sleep 1
dev_exists rxeE || fail "rxeE gone while its namespace is still held"
holder_finish
wait_until 60 dev_gone rxeE || fail "rxeE survived its namespace"
[ "$(roce_sockets init)" = 2 ] || fail "init_net: $(roce_sockets init) RoCE sockets, want 2"

note "4. exclusive mode"
must_fail_with() { # WHAT TEXT CMD...: CMD must fail saying TEXT
	local what=$1 text=$2
	shift 2
	if "$@" >"$OUT_DIR/err.txt" 2>&1; then fail "$what: succeeded"; fi
	grep -q "$text" "$OUT_DIR/err.txt" || fail "$what: $(cat "$OUT_DIR/err.txt"), want '$text'"
	note "$what: failed as expected: $(tr '\n' ' ' <"$OUT_DIR/err.txt")"
}
ip netns add nsX
# The core moves devices only in exclusive mode.
must_fail_with "rdma dev set netns, shared mode" "Operation not supported" rdma dev set "$RXE_DEV" netns nsX
ip netns del nsX
# The core switches modes only while no other namespace exists; the ones
# deleted above go away in the background.
wait_until 60 rdma system set netns exclusive 2>/dev/null || fail "rdma system set netns exclusive: $(rdma system set netns exclusive 2>&1)"
has 'netns exclusive' rdma system show || fail "rdma system: $(rdma system show)"
ip netns add nsX
ip link add vx type veth peer name vy
setup_if nsX vx 10.88.0.2 fd88::2
setup_if init vy 10.88.0.1 fd88::1
ip netns exec nsX rdma link add rxeX type rxe netdev vx
rdma link add rxeY type rxe netdev vy
has rxeX ip netns exec nsX rdma dev show || fail "nsX does not see its own rxeX"
! has "$RXE_DEV" ip netns exec nsX rdma dev show || fail "nsX sees init_net's $RXE_DEV in exclusive mode"
! has rxeX rdma dev show || fail "init_net sees nsX's rxeX in exclusive mode"
pp ibv_rc_pingpong nsX rxeX fd88::2 init rxeY fd88::1

# rdma dev set moves rxeY to nsX (its netdev stays in init_net), under a
# process that holds it open: the process's context is disassociated.
holder_start rxeY gone
rdma dev set rxeY netns nsX
! has rxeY rdma dev show || fail "init_net still sees rxeY after its move: $(rdma dev show)"
has rxeY ip netns exec nsX rdma dev show || fail "nsX does not see rxeY after its move"
holder_finish
unset 'gid_seen[rxeY/fd88::1]'
pp ibv_rc_pingpong nsX rxeX fd88::2 nsX rxeY fd88::1
# And back, from nsX, to the initial namespace under a name of its own.
ip netns attach init1 1
ip netns exec nsX rdma dev set rxeY netns init1
ip netns del init1
has rxeY rdma dev show || fail "init_net does not see rxeY after its move back"
! has rxeY ip netns exec nsX rdma dev show || fail "nsX still sees rxeY after its move back"
unset 'gid_seen[rxeY/fd88::1]'
pp ibv_rc_pingpong nsX rxeX fd88::2 init rxeY fd88::1
# When a namespace exits, the core moves its devices back to init_net:
# rxeY goes back there, then with its netdev, the peer of nsX's veth.
rdma dev set rxeY netns nsX
ip netns del nsX
wait_until 60 dev_gone rxeX || fail "rxeX survived nsX"
wait_until 30 dev_gone rxeY || fail "rxeY survived the removal of its netdev's peer"
wait_until 60 rdma system set netns shared 2>/dev/null || fail "rdma system set netns shared: $(rdma system set netns shared 2>&1)"

note "5. unload"
rmmod rdma_rxe_rs
dev_gone "$RXE_DEV" || fail "$RXE_DEV survived rmmod"
[ "$(roce_sockets init)" = 0 ] || fail "init_net keeps $(roce_sockets init) RoCE sockets after unload"
kmemleak_check
note "netns ok"
