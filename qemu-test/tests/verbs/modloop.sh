#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Module lifetime: unloading with a user holding a device open (goes ahead
# under it, or is refused: per driver) and with devices present removes
# them; load, add, delete and unload in a loop leaves nothing behind
# (kmemleak, slab totals).
#
#   qemu-test/run --nodes 1 [--debug] qemu-test/tests/verbs/modloop.sh [ROUNDS]
set -euo pipefail
. "$REPO/qemu-test/lib/lib.sh"

rounds=${1:-100}
case "$RXE_DRIVER" in
rs) mod=rdma_rxe_rs load=(insmod "$RXE_RS_KO") ;;
c) mod=rdma_rxe load=(modprobe rdma_rxe) ;;
esac

slab_kb() { sed -nE 's/^Slab:\s+([0-9]+) kB/\1/p' /proc/meminfo; }

note "unload with a user holding the device open"
if disassociates; then
	# uverbs holds no module reference for a driver with
	# disassociate_ucontext: the unload goes ahead and the user's context
	# is torn down under it.
	holder_start "$RXE_DEV" gone
	timeout 120 rmmod "$mod" || fail "rmmod with a user: status $?"
	[ ! -e "/sys/class/infiniband/$RXE_DEV" ] || fail "$RXE_DEV survived rmmod"
	holder_alive || fail "the holder exited before it was told to go on"
	holder_finish
	"${load[@]}"
	rdma link add "$RXE_DEV" type rxe netdev eth0
else
	# uverbs holds the module while a user has the device open.
	holder_start "$RXE_DEV" live
	! rmmod "$mod" 2>/dev/null || fail "rmmod went ahead while a user holds $RXE_DEV"
	holder_finish
fi

note "unload with two devices present"
ip link add rxd0 type dummy
ip link set rxd0 up
rdma link add rxe_extra type rxe netdev rxd0
rmmod "$mod"
[ ! -e "/sys/class/infiniband/$RXE_DEV" ] || fail "$RXE_DEV survived rmmod"
[ ! -e /sys/class/infiniband/rxe_extra ] || fail "rxe_extra survived rmmod"
ip link del rxd0

# Warm up once so caches the stack fills on first use are not counted.
"${load[@]}"
rdma link add "$RXE_DEV" type rxe netdev eth0
ibv_devinfo -d "$RXE_DEV" >/dev/null
rdma link delete "$RXE_DEV"
rmmod "$mod"
kmemleak_clear
echo 3 >/proc/sys/vm/drop_caches
before=$(slab_kb)

note "$rounds rounds of load/add/query/delete/unload"
for ((i = 1; i <= rounds; i++)); do
	"${load[@]}"
	rdma link add "$RXE_DEV" type rxe netdev eth0
	ibv_devinfo -d "$RXE_DEV" >/dev/null || fail "round $i: ibv_devinfo failed"
	# Every other round leaves the device for rmmod to remove.
	((i % 2)) && rdma link delete "$RXE_DEV"
	rmmod "$mod" || fail "round $i: rmmod failed"
done

echo 3 >/proc/sys/vm/drop_caches
after=$(slab_kb)
note "slab before ${before} kB, after ${after} kB"
# Slab totals move with unrelated activity, and on the debug kernel KASAN's
# quarantine holds several MB of freed objects back; kmemleak below is the
# exact check there. A leaked device per round would be far above either.
limit=2048
[ "${RXE_FLAVOUR:-plain}" = debug ] && limit=16384
((after - before < limit)) || fail "slab grew by $((after - before)) kB over $rounds rounds"

# Leave the node as the harness made it.
"${load[@]}"
rdma link add "$RXE_DEV" type rxe netdev eth0
kmemleak_check
note "modloop ok"
