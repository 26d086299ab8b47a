#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The rxe-rs-dkms package as a Debian 13 system has it: which module
# `rdma link add ... type rxe` makes the kernel load, with no modprobe by
# hand. ROOT is that system (scripts/debian-kernel's chroot, where the
# package was installed, or removed again); the kernel's module requests
# go to ROOT's own modprobe, with ROOT's modprobe.d and module tree, as on
# the real system. Run on nodes of the system's kernel with the C driver
# (the harness loads rdma_rxe and adds rxe0; node 1 unloads it first):
#
#   qemu-test/run --kernel debian-7.3 --drivers c qemu-test/guest/deb.sh ROOT installed
#     node 1: rdma_rxe_rs loads (the one DKMS built), rdma_rxe stays out
#     and cannot be loaded beside it; then ib_send_bw against node 2's
#     rdma_rxe
#   qemu-test/run --kernel debian-7.3 --drivers c --nodes 1 qemu-test/guest/deb.sh ROOT removed
#     rdma_rxe loads, and ROOT has no rdma_rxe_rs left
set -euo pipefail
. "$REPO/qemu-test/lib/lib.sh"

root=${1:?usage: deb.sh ROOT installed|removed}
state=${2:?usage: deb.sh ROOT installed|removed}
[[ $state == installed || $state == removed ]] || fail "unknown state '$state'"
krel=$(uname -r)
[ -d "$root/lib/modules/$krel" ] || fail "$root has no modules of $krel"

in_root() { chroot "$root" "$@"; }

# The system's view of the kernel, and its modprobe for the kernel's
# requests (/proc/sys/kernel/modprobe), in place of the harness's.
mount -t proc proc "$root/proc"
mount -t sysfs sysfs "$root/sys"
mount --rbind /dev "$root/dev"
printf '#!/bin/sh\nexec /usr/sbin/chroot %s /usr/sbin/modprobe "$@"\n' "$root" >/run/root-modprobe
chmod +x /run/root-modprobe
echo /run/root-modprobe >/proc/sys/kernel/modprobe

wait_active() {
	local i
	for ((i = 0; i < 150; i++)); do
		[[ $(cat "/sys/class/infiniband/$RXE_DEV/ports/1/state") == *ACTIVE* ]] && return 0
		sleep 0.2
	done
	fail "$RXE_DEV did not become ACTIVE"
}

# Node 1 starts from a kernel with neither driver.
if ((NODE_INDEX == 1)); then
	step rdma link delete "$RXE_DEV"
	step modprobe -r rdma_rxe
	[ ! -d /sys/module/rdma_rxe ] || fail "rdma_rxe did not unload"
	[ ! -d /sys/module/rdma_rxe_rs ] || fail "rdma_rxe_rs is loaded before the test"
	note "node1: what the system's modprobe makes of the alias rdma-link-rxe"
	in_root modprobe -R rdma-link-rxe | tee "$OUT_DIR/resolve.txt"
fi

if [ "$state" = installed ]; then
	if ((NODE_INDEX == 1)); then
		[ "$(cat "$OUT_DIR/resolve.txt")" = rdma_rxe_rs ] ||
			fail "rdma-link-rxe resolves to '$(tr '\n' ' ' <"$OUT_DIR/resolve.txt")', not rdma_rxe_rs alone"
		ko=$(in_root modinfo -n rdma_rxe_rs) || fail "no rdma_rxe_rs in $root/lib/modules/$krel"
		[[ $ko == */updates/dkms/* ]] || fail "rdma_rxe_rs is not DKMS's ($ko)"
		note "node1: rdma link add, no modprobe by hand"
		step rdma link add "$RXE_DEV" type rxe netdev eth0
		[ -d /sys/module/rdma_rxe_rs ] || fail "rdma link add did not load rdma_rxe_rs"
		[ ! -d /sys/module/rdma_rxe ] || fail "rdma link add loaded rdma_rxe"
		# The module loaded is the file DKMS installed: the same build ID.
		case "$ko" in
		*.xz) xz -dc "$root$ko" >/tmp/rdma_rxe_rs.ko ;;
		*.zst) zstd -qdc "$root$ko" >/tmp/rdma_rxe_rs.ko ;;
		*) cp "$root$ko" /tmp/rdma_rxe_rs.ko ;;
		esac
		id_file=$(readelf -n /tmp/rdma_rxe_rs.ko | sed -n 's/^ *Build ID: *//p')
		id_loaded=$(od -An -v -tx1 /sys/module/rdma_rxe_rs/notes/.note.gnu.build-id | tr -d ' \n' | tail -c 40)
		note "node1: build ID of $ko: $id_file, of the loaded module: $id_loaded"
		[ -n "$id_file" ] && [ "$id_file" = "$id_loaded" ] || fail "the loaded rdma_rxe_rs is not $ko"
		[ "$(cat "/sys/class/infiniband/$RXE_DEV/ports/1/link_layer")" = Ethernet ] ||
			fail "$RXE_DEV is not an Ethernet (RoCE) device"
		note "node1: rdma_rxe must not load beside rdma_rxe_rs"
		if in_root modprobe rdma_rxe; then fail "modprobe rdma_rxe succeeded beside rdma_rxe_rs"; fi
		[ ! -d /sys/module/rdma_rxe ] || fail "rdma_rxe got loaded beside rdma_rxe_rs"
		wait_active
		step ibv_devinfo -d "$RXE_DEV"
	else
		[ -d /sys/module/rdma_rxe ] && [ ! -d /sys/module/rdma_rxe_rs ] ||
			fail "node$NODE_INDEX should run rdma_rxe alone"
	fi
	barrier ready
	ib_send_bw_pair "rdma_rxe_rs (rxe-rs-dkms) to rdma_rxe" -n 200
	if ((NODE_INDEX == 1)); then
		step rdma link delete "$RXE_DEV"
		step in_root modprobe -r rdma_rxe_rs
		[ ! -d /sys/module/rdma_rxe_rs ] || fail "rdma_rxe_rs did not unload"
	fi
else
	((NODE_INDEX == 1)) || exit 0
	[ "$(cat "$OUT_DIR/resolve.txt")" = rdma_rxe ] ||
		fail "rdma-link-rxe resolves to '$(tr '\n' ' ' <"$OUT_DIR/resolve.txt")', not rdma_rxe"
	if ko=$(in_root modinfo -n rdma_rxe_rs 2>/dev/null); then fail "rdma_rxe_rs is still in $root: $ko"; fi
	note "node1: rdma link add, no modprobe by hand"
	step rdma link add "$RXE_DEV" type rxe netdev eth0
	[ -d /sys/module/rdma_rxe ] || fail "rdma link add did not load rdma_rxe"
	[ ! -d /sys/module/rdma_rxe_rs ] || fail "rdma link add loaded rdma_rxe_rs"
	wait_active
	step ibv_devinfo -d "$RXE_DEV"
fi
echo "node$NODE_INDEX: deb.sh $state: PASS"
