#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The module that `dkms install` put into a system's module tree, loaded by
# modprobe from there (dependencies from the dkms run's depmod) in place of
# the C driver, then ib_send_bw between the two nodes. ROOT is the system
# dkms installed into (scripts/debian-kernel's chroot); run it on nodes
# whose kernel is that system's, with the C driver (the harness loads
# rdma_rxe, which this script replaces):
#
#   qemu-test/run --kernel debian-7.3 --drivers c qemu-test/tests/dkms.sh ROOT
set -euo pipefail
. "$REPO/qemu-test/lib.sh"

root=${1:?usage: dkms.sh ROOT}
krel=$(uname -r)

ko=$(/usr/sbin/modinfo -b "$root" -k "$krel" -n rdma_rxe_rs) || fail "no rdma_rxe_rs in $root/lib/modules/$krel"
echo "node$NODE_INDEX: dkms installed $ko"
[[ $ko == */updates/dkms/* ]] || fail "rdma_rxe_rs is not dkms's ($ko)"
step rdma link delete "$RXE_DEV"
step modprobe -r rdma_rxe
step /usr/sbin/modprobe -d "$root" -S "$krel" rdma_rxe_rs
[ -d /sys/module/rdma_rxe_rs ] || fail "rdma_rxe_rs did not load"
[ ! -d /sys/module/rdma_rxe ] || fail "rdma_rxe is still loaded"
echo "node$NODE_INDEX: taint $(cat /proc/sys/kernel/tainted) ($(cat /sys/module/rdma_rxe_rs/taint))"
step rdma link add "$RXE_DEV" type rxe netdev eth0
for ((i = 0; i < 150; i++)); do
	[[ $(cat "/sys/class/infiniband/$RXE_DEV/ports/1/state") == *ACTIVE* ]] && break
	sleep 0.2
done
step ibv_devinfo -d "$RXE_DEV"
barrier ready

ib_send_bw_pair "over dkms's rdma_rxe_rs" -n 200
step rdma link delete "$RXE_DEV"
step /usr/sbin/modprobe -d "$root" -S "$krel" -r rdma_rxe_rs
[ ! -d /sys/module/rdma_rxe_rs ] || fail "rdma_rxe_rs did not unload"
