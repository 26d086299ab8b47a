#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# iSCSI Extensions for RDMA between two kernel ULPs: node 2 runs the LIO
# iSCSI target with its iSER portal (ib_isert; a 64 MiB RAM disk, one LUN,
# port 3260 on the RDMA CM), node 1 logs in with open-iscsi over the iser
# transport (ib_iser) and gets a SCSI disk. Node 1 writes random data at
# several block sizes with O_DIRECT, and once buffered, reads it back and
# compares; then it logs out, logs in again and reads everything once more
# (the data came from the target, not from node 1's memory).
#
# ib_iser registers each command's pages with fast registration (and
# invalidates them, or has the target's send with invalidate do it); the
# target moves the data with RDMA READ (writes) and RDMA WRITE (reads).
#
#   qemu-test/run --drivers rs,rs qemu-test/tests/ulp/iser.sh [quick] [lossy] [yank]
#
# quick: 4 MiB of 1 MiB blocks and 2 MiB buffered where the whole test
# writes 12 and 8 (the test command's short form).
# lossy: eth0 drops 1% and reorders 2% of the packets on both nodes, from
# the start (lib.sh lossy_link).
# yank: after the first login, while node 1 writes 60 MiB to the disk with
# O_DIRECT, node 1's own rdma device is deleted and added back 5 s later
# (lib.sh yank_client): the session must recover (open-iscsi reconnects
# once the device is back), the write finish and read back intact, and the
# rest of the test run on the same session.
set -euo pipefail
# shellcheck source=qemu-test/lib/lib.sh
. "$REPO/qemu-test/lib/lib.sh"
# shellcheck source=qemu-test/lib/ulp.sh
. "$REPO/qemu-test/lib/ulp.sh"

ulp_start "$@"

port=3260
disk_mib=64
cfg=/sys/kernel/config/target
iqn=iqn.2026-12.org.rxe-rs:iser-target
# MiB written in 1 MiB blocks, and buffered.
big_mib=12 buf_mib=8
[ "$quick" ] && big_mib=4 buf_mib=2

# --- target (node 2) ----------------------------------------------------------
rd=$cfg/core/rd_mcp_1/iserdisk
tpg=$cfg/iscsi/$iqn/tpgt_1
np=
target_up() {
	modprobe iscsi_target_mod || fail "modprobe iscsi_target_mod"
	modprobe ib_isert || fail "modprobe ib_isert"
	grep -q ' /sys/kernel/config ' /proc/mounts || mount -t configfs none /sys/kernel/config
	mkdir -p "$rd"
	echo "rd_pages=$((disk_mib * 256))" >"$rd/control"
	echo 1 >"$rd/enable" || fail "enabling the RAM disk"
	mkdir -p "$tpg/lun/lun_0"
	ln -s "$rd" "$tpg/lun/lun_0/iserdisk"
	# Any initiator, no CHAP: ACLs made on login, writable LUNs.
	echo 1 >"$tpg/attrib/generate_node_acls"
	echo 1 >"$tpg/attrib/cache_dynamic_acls"
	echo 0 >"$tpg/attrib/demo_mode_write_protect"
	echo 0 >"$tpg/attrib/authentication"
	np=$tpg/np/$(server_ip):$port
	mkdir "$np" || fail "no portal $(server_ip):$port"
	# The portal becomes an iSER one (an RDMA CM listener) instead of TCP.
	echo 1 >"$np/iser" || fail "the portal refuses iser"
	[ "$(cat "$np/iser")" = 1 ] || fail "the portal is not iser"
	echo 1 >"$tpg/enable" || fail "enabling the target portal group"
	note "target: $iqn on iser portal $(server_ip):$port, ${disk_mib} MiB RAM disk"
}

target_down() {
	echo 0 >"$tpg/enable"
	rmdir "$tpg/np/$(server_ip):$port"
	rm "$tpg/lun/lun_0/iserdisk"
	rmdir "$tpg/lun/lun_0" "$tpg" "$cfg/iscsi/$iqn"
	rmdir "$rd" "$cfg/core/rd_mcp_1"
	note "target: torn down"
}

# --- initiator (node 1) -------------------------------------------------------
dev=
iscsid_pid=
iscsi_up() {
	modprobe ib_iser || fail "modprobe ib_iser"
	# open-iscsi keeps its node records in /etc/iscsi: on the read-only
	# root, a tmpfs over it with this node's name and the stock settings.
	local conf
	conf=$(cat /etc/iscsi/iscsid.conf)
	mount -t tmpfs iscsi /etc/iscsi || fail "tmpfs on /etc/iscsi"
	echo "$conf" >/etc/iscsi/iscsid.conf
	echo "InitiatorName=iqn.2026-12.org.rxe-rs:node$NODE_INDEX" >/etc/iscsi/initiatorname.iscsi
	mkdir -p /run/lock/iscsi
	# In the foreground, its messages to a log, in a session of its own:
	# on its way out it signals its whole process group.
	setsid iscsid -f >/tmp/iscsid.log 2>&1 &
	iscsid_pid=$!
	sleep 1
	kill -0 "$iscsid_pid" 2>/dev/null || fail "iscsid exited: $(cat /tmp/iscsid.log)"
}

iscsi_down() {
	iscsiadm -m node -o delete >/dev/null 2>&1 || true
	kill "$iscsid_pid" 2>/dev/null || true
	wait "$iscsid_pid" 2>/dev/null || true
	umount /etc/iscsi
}

# iser_disks: the SCSI disks of the iSCSI sessions, one name a line.
iser_disks() {
	local f
	for f in /sys/class/iscsi_session/session*/device/target*/*/block/*; do
		if [ -e "$f" ]; then echo "${f##*/}"; fi
	done
}

login() {
	local p=$(server_ip):$port
	iscsiadm -m node -T "$iqn" -p "$p" -o new >/dev/null || fail "iscsiadm: new node record"
	iscsiadm -m node -T "$iqn" -p "$p" -o update -n iface.transport_name -v iser ||
		fail "iscsiadm: the iser transport"
	iscsiadm -m node -T "$iqn" -p "$p" -l || fail "iscsiadm login over iser"
	iscsiadm -m session -P 1 | grep -q "Iface Transport: iser" || {
		iscsiadm -m session -P 1
		fail "the session is not over iser"
	}
	disk_wait iser_disks "no iSER disk 60 s after the login" "over iser"
}

logout() {
	iscsiadm -m node -T "$iqn" -p "$(server_ip):$port" -u || fail "iscsiadm logout"
	wait_until 60 test ! -b "/dev/$dev" || fail "/dev/$dev still there 60 s after the logout"
	note "initiator: logged out"
}

# --- the test -----------------------------------------------------------------
if is_server; then
	target_up
	meet target-up
	[ -z "$yank" ] || yank_others
	meet initiator-done "$done_wait"
	target_down
elif is_client; then
	iscsi_up
	meet target-up
	packets_mark
	login
	if [ "$yank" ]; then
		yank_client "/dev/$dev" 60 here
		# A new device: new counters.
		packets_mark
	fi
	disk_rounds /tmp/iser.sums "$big_mib" "$buf_mib"
	# 28 MiB written, read back twice and more: far more than 10000
	# packets each way.
	packets_check "initiator: rdma packets"
	iscsi_down
	meet initiator-done
else
	ulp_bystander target-up "initiator-done:$done_wait"
fi
ulp_end iSER 'iser|isert|iscsi|rdma|rxe' 'error|fail|timed out|abort|reset|reconnect'
note "iser ok"
