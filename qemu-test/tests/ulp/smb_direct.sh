#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# SMB Direct (SMB 3 over RDMA) between two kernel ULPs: node 2 runs the
# in-kernel server ksmbd (ksmbd.mountd from ksmbd-tools answers its user and
# share questions) sharing a tmpfs; node 1 mounts it with the in-kernel
# client, cifs, with "rdma" (SMB 3.1.1 over the RDMA CM, port 445). Node 1
# writes files of several sizes (1 byte to 12 MiB) buffered and with
# O_DIRECT, drops its page cache and reads them back both ways, comparing
# SHA-256 sums; node 2 checks the same sums on the bytes that reached its
# tmpfs; node 1 reads files node 2 wrote. The mount must be an SMB Direct
# one (/proc/fs/cifs/DebugData) and the rdma device's packet counters must
# have carried the data.
#
# Requests and small reads and writes travel in RDMA SENDs; reads and
# writes above 4 KiB are done by the server with RDMA WRITE and RDMA READ
# on pages the client registers with FRWR (and invalidates, remotely by the
# server's send with invalidate or locally).
#
#   qemu-test/run --drivers rs,rs qemu-test/tests/ulp/smb_direct.sh [quick] [lossy] [yank]
#
# quick: files up to 4 MiB (the test command's short form).
# lossy: eth0 drops 1% and reorders 2% of the packets on both nodes, from
# the start (lib.sh lossy_link).
# yank: first, while node 1 writes 48 MiB with O_DIRECT to the share
# (mounted "hard" for it), node 2's rdma device is deleted and added back 5 s
# later (lib.sh yank_client, yank_device): cifs must reconnect over SMB
# Direct, the write finish and read back intact, and the rest of the test
# run on the same mount.
set -euo pipefail
# shellcheck source=qemu-test/lib/lib.sh
. "$REPO/qemu-test/lib/lib.sh"
# shellcheck source=qemu-test/lib/ulp.sh
. "$REPO/qemu-test/lib/ulp.sh"

ulp_start "$@"

share_dir=/run/rxe-smb
conf_dir=/run/rxe-ksmbd
mnt=/run/rxe-smb-mnt
user=rxe
pass=rxe-smb-direct
sizes=(1 4095 4096 65537 1048576 4194317 12582919)
[ "$quick" ] && sizes=(1 4095 4096 65537 1048576 4194317)

# --- server (node 2) ----------------------------------------------------------
server_up() {
	modprobe ksmbd || fail "modprobe ksmbd"
	mkdir -p "$share_dir" "$conf_dir"
	mount -t tmpfs -o size=256M rxe-smb "$share_dir"
	chmod 1777 "$share_dir"
	cat >"$conf_dir/ksmbd.conf" <<-EOF
		[global]
		server min protocol = SMB3
		bind interfaces only = yes
		interfaces = eth0
		[share]
		path = $share_dir
		read only = no
		writeable = yes
		force user = root
		valid users = $user
	EOF
	ksmbd.adduser -c "$conf_dir/ksmbd.conf" -i "$conf_dir/ksmbdpwd.db" -a "$user" -p "$pass" ||
		fail "ksmbd.adduser"
	ksmbd.mountd -c "$conf_dir/ksmbd.conf" -u "$conf_dir/ksmbdpwd.db" || fail "ksmbd.mountd"
	wait_listen 445 30
	mkdir "$share_dir/s"
	make_files "$share_dir/s" s "$SHARED_DIR/smb.server.sums"
	note "server: sharing $share_dir; $(wc -l <"$SHARED_DIR/smb.server.sums") files of its own in s/"
}

server_down() {
	ksmbd.control --shutdown >/dev/null 2>&1 || true
	pkill -x ksmbd.mountd || true
	wait_until 30 bash -c '! pgrep -x ksmbd.mountd >/dev/null' || fail "ksmbd.mountd does not stop"
	umount "$share_dir"
	note "server: stopped"
}

# --- client (node 1) ----------------------------------------------------------
client_mount() {
	local line opts="rdma,vers=3.1.1,username=$user,password=$pass,uid=0,noperm"
	# "hard": I/O waits for a reconnection instead of failing (the yank).
	[ -z "$yank" ] || opts+=",hard"
	mkdir -p "$mnt"
	mount -t cifs "//$(server_ip)/share" "$mnt" -o "$opts" || fail "mount -t cifs -o rdma"
	line=$(grep " $mnt cifs" /proc/mounts) || fail "no $mnt in /proc/mounts"
	note "client: $line"
	[[ $line == *rdma* ]] || fail "the cifs mount has no rdma option: $line"
}

# --- the test -----------------------------------------------------------------
if is_server; then
	server_up
	meet server-up
	[ -z "$yank" ] || yank_device
	meet client-written 900
	check_files "$share_dir/c" "$SHARED_DIR/smb.client.sums" 0 "server: the client's files in its tmpfs"
	meet server-checked
	meet client-done 300
	server_down
elif is_client; then
	modprobe cifs || fail "modprobe cifs"
	meet server-up
	client_mount
	if [ "$yank" ]; then
		yank_client "$mnt/yank" 48
		rm "$mnt/yank"
	fi
	packets_mark
	t0=$SECONDS
	write_files "$mnt/c" "$SHARED_DIR/smb.client.sums" client
	check_files "$mnt/s" "$SHARED_DIR/smb.server.sums" 1 "client: the server's files"
	note "client: workload done in $((SECONDS - t0)) s"
	# About 2 x 18 MiB written and read back and 18 MiB of the server's
	# read: far more than 10000 packets each way.
	packets_check "client: rdma packets during the workload"
	# cifs says per session which transport it took.
	debug=$(cat /proc/fs/cifs/DebugData)
	grep -A2 "SMBDirect" <<<"$debug" || true
	# 7.x names the state, 6.12 prints its number (2: connected).
	grep -q -E "SMBDirect .*transport status: (CONNECTED|2)( |\$)" <<<"$debug" ||
		fail "no connected SMBDirect transport in /proc/fs/cifs/DebugData"
	meet client-written 900
	meet server-checked
	umount "$mnt" || fail "umount"
	note "client: unmounted"
	meet client-done
else
	ulp_bystander server-up client-written:900 server-checked client-done:300
fi
# cifs tries SMB Direct's iWARP port (5445) before 445; on RoCE the first
# attempt finds nothing there (6.12 and 7.x word it differently). 6.12's
# ksmbd notes each SMB Direct disconnect, the unmount's included; the data
# checks above catch one that came too early.
ok="connect to [0-9.]+:5445 failed|rdma_connect failed port=5445$|ksmbd: smb_direct: disconnected$"
# The yank: the client's receive sees the connection go, its reconnection
# attempts fail while the server's device is away, the server's sends in
# flight are flushed.
[ -z "$yank" ] || ok+="|CIFS: VFS: smbd_recv:[0-9]+ disconnected$|rdma_connect failed port=445$|ksmbd: smb_direct: Send error. status='WR flushed \\(5\\)'"
ulp_end "SMB Direct" 'cifs|smb|ksmbd|rdma|rxe' 'error|fail|timed out|disconnect|reconnect' "$ok"
note "smb-direct ok"
