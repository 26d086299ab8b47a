#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# SRP between two kernel ULPs over RDMA/CM: node 2 runs the LIO target
# with ib_srpt (a 64 MiB RAM disk, one LUN, listening on RDMA/CM port
# 5555), node 1 logs in with ib_srp through its sysfs add_target file
# (no srptools needed) and gets a SCSI disk. Node 1 writes random data
# at several block sizes with O_DIRECT, and once buffered, reads it back
# and compares; then it logs out, logs in again and reads everything once
# more (the data came from the target, not from node 1's memory).
#
# ib_srp registers each request's pages with fast registration and the
# target moves the data with RDMA READ (writes) and RDMA WRITE (reads).
#
#   qemu-test/run --drivers rs,rs qemu-test/tests/ulp/srp_rdma.sh [quick] [lossy] [yank]
#
# quick: 4 MiB of 1 MiB blocks and 2 MiB buffered where the whole test
# writes 12 and 8 (the test command's short form).
# lossy: eth0 drops 1% and reorders 2% of the packets on both nodes, from
# the start (lib.sh lossy_link).
# yank: after the first login, while node 1 writes 56 MiB to the disk with
# O_DIRECT in 64 KiB blocks (at 1 MiB it may be over before the removal
# reaches ib_srpt), node 2's rdma device is deleted and added back 5 s
# later (lib.sh yank_client, yank_device). ib_srpt lets go of its port
# with the device, so node 2 sets its srpt port up again on the new one
# (the RAM disk and its data stay). ib_srp sees the target disconnect and
# reconnects every reconnect_delay (set short here, with fast_io_fail_tmo
# and dev_loss_tmo): the write must finish and read back intact, or fail
# with an I/O error (fast_io_fail_tmo ran out first); then the disk must
# work again, on the same SCSI host or, should dev_loss_tmo have removed
# it, after a new login, and the rest of the test run on it.
set -euo pipefail
# shellcheck source=qemu-test/lib/lib.sh
. "$REPO/qemu-test/lib/lib.sh"
# shellcheck source=qemu-test/lib/ulp.sh
. "$REPO/qemu-test/lib/ulp.sh"

ulp_start "$@"

cm_port=5555
disk_mib=64
cfg=/sys/kernel/config/target
# The SRP transport's timers under the yank, in seconds: a reconnection
# attempt every reconnect_delay, outstanding I/O failed after
# fast_io_fail_tmo, the remote port removed after dev_loss_tmo.
reconnect_delay=1 fast_io_fail_tmo=15 dev_loss_tmo=60
# MiB written in 1 MiB blocks, and buffered.
big_mib=12 buf_mib=8
[ "$quick" ] && big_mib=4 buf_mib=2

# The port's GUID as ib_srpt names it: the interface id of GID 0.
port_guid() {
	local gid
	gid=$(cat "/sys/class/infiniband/$RXE_DEV/ports/1/gids/0")
	echo "${gid#*:*:*:*:}"
}

# --- target (node 2) ----------------------------------------------------------
rd=$cfg/core/rd_mcp_0/srpdisk
target_up() {
	modprobe ib_srpt || fail "modprobe ib_srpt"
	grep -q ' /sys/kernel/config ' /proc/mounts || mount -t configfs none /sys/kernel/config
	mkdir -p "$rd"
	# LIO loads a fabric's configfs directory when it is made.
	mkdir -p "$cfg/srpt"
	echo "rd_pages=$((disk_mib * 256))" >"$rd/control"
	echo 1 >"$rd/enable" || fail "enabling the RAM disk"
	echo "$cm_port" >"$cfg/srpt/discovery_auth/rdma_cm_port" || fail "RDMA/CM listener on port $cm_port"
	port_up
	note "target: srpt port $(port_guid), RDMA/CM port $cm_port, ${disk_mib} MiB RAM disk"
}

# port_up / port_down: the srpt port of this node's rdma device, its LUN
# and ACLs.
port_up() {
	local port tpg a
	port=$(port_guid)
	tpg=$cfg/srpt/$port/$port
	mkdir -p "$tpg" || fail "no srpt port $port"
	mkdir "$tpg/lun/lun_0"
	ln -s "$rd" "$tpg/lun/lun_0/srpdisk"
	# Over RDMA/CM the session is named by an address of the connection:
	# an ACL for each node's address.
	for a in "$(client_ip)" "$(server_ip)"; do
		mkdir "$tpg/acls/$a"
		mkdir "$tpg/acls/$a/lun_0"
		ln -s "$tpg/lun/lun_0" "$tpg/acls/$a/lun_0/lun_0"
	done
	echo 1 >"$tpg/enable" || fail "enabling the srpt port"
	publish srp-guid "$port"
}

port_down() {
	local port tpg a
	port=$(port_guid)
	tpg=$cfg/srpt/$port/$port
	echo 0 >"$tpg/enable"
	for a in "$(client_ip)" "$(server_ip)"; do
		rm "$tpg/acls/$a/lun_0/lun_0"
		rmdir "$tpg/acls/$a/lun_0" "$tpg/acls/$a"
	done
	rm "$tpg/lun/lun_0/srpdisk"
	rmdir "$tpg/lun/lun_0" "$tpg" "$cfg/srpt/$port"
}

# After the yank: the port's configfs entries still hold the srpt port of
# the deleted device; made again, they take the new device's.
port_again() {
	port_down
	port_up
	note "target: srpt port $(port_guid) set up again on the new $RXE_DEV"
}

target_down() {
	port_down
	echo 0 >"$cfg/srpt/discovery_auth/rdma_cm_port"
	rmdir "$rd" "$cfg/core/rd_mcp_0"
	note "target: torn down"
}

# --- initiator (node 1) -------------------------------------------------------
dev=
# srp_disks: the SCSI disks of the ib_srp SCSI hosts, one name a line.
srp_disks() {
	local host f
	for host in /sys/class/scsi_host/host*; do
		[ "$(cat "$host/proc_name" 2>/dev/null)" = ib_srp ] || continue
		for f in /sys/class/scsi_host/"${host##*/}"/device/target*/*/block/*; do
			if [ -e "$f" ]; then echo "${f##*/}"; fi
		done
	done
}

login() {
	local guid f i
	guid=$(fetch srp-guid)
	guid=0x${guid//:/}
	modprobe ib_srp || fail "modprobe ib_srp"
	f=/sys/class/infiniband_srp/srp-$RXE_DEV-1/add_target
	[ -e "$f" ] || fail "no $f"
	# A logout finishes in a work item after the disk is gone; until then
	# the same target is refused (EEXIST): retry for a while.
	for ((i = 0; ; i++)); do
		echo "id_ext=$guid,ioc_guid=$guid,dest=$(server_ip):$cm_port" >"$f" 2>/tmp/srp.add.err && break
		((i < 100)) && grep -q 'File exists' /tmp/srp.add.err ||
			fail "add_target refused ($(cat /tmp/srp.add.err)); see dmesg"
		sleep 0.2
	done
	disk_wait srp_disks "no SRP disk 60 s after add_target" \
		"on $(cat /sys/class/srp_remote_ports/port-*/device/../proc_name 2>/dev/null || echo ib_srp)"
}

# srp_port_state: the state of the SRP remote port (running, blocked,
# fail-fast, lost), empty when there is none.
srp_port_state() {
	local p
	for p in /sys/class/srp_remote_ports/port-*; do
		[ -e "$p/state" ] && cat "$p/state" && return 0
	done
	return 0
}

# set_tmo: the remote port's transport timers for the yank.
set_tmo() {
	local p=(/sys/class/srp_remote_ports/port-*)
	[ -e "${p[0]}" ] || fail "no SRP remote port to set the timers of"
	# dev_loss_tmo first: fast_io_fail_tmo must stay below it.
	echo "$dev_loss_tmo" >"${p[0]}/dev_loss_tmo" &&
		echo "$fast_io_fail_tmo" >"${p[0]}/fast_io_fail_tmo" &&
		echo "$reconnect_delay" >"${p[0]}/reconnect_delay" ||
		fail "setting the SRP transport timers of ${p[0]##*/}"
	note "initiator: reconnect_delay $reconnect_delay s, fast_io_fail_tmo $fast_io_fail_tmo s, dev_loss_tmo $dev_loss_tmo s"
}

# after_yank: the disk works again: its remote port running (ib_srp
# reconnected), or removed (dev_loss_tmo) and the target logged in anew.
after_yank() {
	local state t0=$SECONDS
	while :; do
		state=$(srp_port_state)
		case $state in
		running) break ;;
		'')
			note "initiator: the remote port was removed; logging in again"
			wait_until 60 srp_hosts_gone || fail "an ib_srp SCSI host is still there 60 s after its remote port went"
			login
			break
			;;
		esac
		((SECONDS - t0 < dev_loss_tmo + 60)) ||
			fail "the SRP remote port is still $state $((SECONDS - t0)) s after the write ended"
		sleep 0.5
	done
	note "initiator: remote port running $((SECONDS - t0)) s after the write ended; $(dmesg | grep -c 'ib_srp: reconnect succeeded' || true) reconnection(s) in the kernel log"
	[ -b "/dev/$dev" ] || fail "/dev/$dev is gone though its remote port runs"
}

srp_hosts_gone() {
	local host
	for host in /sys/class/scsi_host/host*; do
		[ "$(cat "$host/proc_name" 2>/dev/null)" != ib_srp ] || return 1
	done
}

logout() {
	local p
	for p in /sys/class/srp_remote_ports/port-*; do
		[ -e "$p/delete" ] && echo 1 >"$p/delete"
	done
	wait_until 60 test ! -b "/dev/$dev" || fail "/dev/$dev still there 60 s after the logout"
	wait_until 60 srp_hosts_gone || fail "an ib_srp SCSI host is still there 60 s after the logout"
	note "initiator: logged out"
}

# --- the test -----------------------------------------------------------------
if is_server; then
	target_up
	meet target-up
	[ -z "$yank" ] || yank_device "" port_again
	meet initiator-done "$done_wait"
	target_down
elif is_client; then
	meet target-up
	packets_mark
	login
	if [ "$yank" ]; then
		set_tmo
		yank_client "/dev/$dev" 56 may-fail bs=64K
		after_yank
	fi
	disk_rounds /tmp/srp.sums "$big_mib" "$buf_mib"
	packets_check "initiator: rdma packets"
	meet initiator-done
else
	ulp_bystander target-up "initiator-done:$done_wait"
fi
# ib_srpt reports each receive flushed (status 5, IB_WC_WR_FLUSH_ERR)
# when a channel closes at the logout, and a response it was still sending
# then (over a lossy link, one may still be waiting for its ACK): expected,
# not trouble.
ok='ib_srpt (receiving|sending response for ioctx 0x[0-9a-f]+) failed (for ioctx [0-9a-f]+ )?with status 5$|srpt_recv_done: [0-9]+ callbacks suppressed'
# The yank: the target's transfers in flight are flushed; the initiator
# gets the target's DREQ, its receives are flushed, it reconnects (after
# failed attempts while the target is away).
[ -z "$yank" ] || ok+='|ib_srpt RDMA_(READ|WRITE) for ioctx 0x[0-9a-f]+ failed with status 5$|ib_srp: received DREQ$|ib_srp: failed [A-Z ]+ status WR flushed \(5\) for CQE|ib_srp: reconnect succeeded$|reconnect attempt [0-9]+ failed'
ulp_end SRP 'srp|scsi|rdma|rxe' 'error|fail|timed out|abort|reset|reconnect' "$ok"
note "srp-rdma ok"
