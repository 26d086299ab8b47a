#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# NFS over RDMA between two kernel ULPs: node 2 runs nfsd (with rpc.mountd
# and rpcbind) exporting a tmpfs and listening for RPC/RDMA on port 20049;
# node 1 mounts it twice, NFSv3 and NFSv4.2, both with proto=rdma. On each
# mount node 1 writes files of several sizes (1 byte to 12 MiB, none a
# multiple of the page size but one) buffered and with O_DIRECT, drops its
# page cache and reads them back both ways, comparing SHA-256 sums; node 2
# checks the same sums on the bytes that reached its tmpfs. The other way,
# node 2 writes files into the export that node 1 reads over both mounts.
# The mounts must show proto=rdma and an rdma transport in mountstats, and
# the rdma device's packet counters must have carried the data.
#
# Small requests travel inline in RDMA SENDs; large reads come back by RDMA
# WRITE into the client's registered pages and large writes are pulled by
# the server with RDMA READ (FRWR registration and invalidation on the
# client, send with invalidate from the server).
#
#   qemu-test/run --drivers rs,rs qemu-test/tests/ulp/nfs_rdma.sh [quick] [lossy] [yank]
#
# quick: NFSv4.2 only, files up to 4 MiB (the test command's short form).
# lossy: eth0 drops 1% and reorders 2% of the packets on both nodes, from
# the start (lib.sh lossy_link).
# yank: first, while node 1 writes 48 MiB with O_DIRECT to the last
# version's mount, node 2's rdma device is deleted and added back 5 s later
# (lib.sh yank_client, yank_device): the hard mount must ride it out, the
# write finish and read back intact, and the rest of the test run on the
# same mount.
set -euo pipefail
# shellcheck source=qemu-test/lib/lib.sh
. "$REPO/qemu-test/lib/lib.sh"
# shellcheck source=qemu-test/lib/ulp.sh
. "$REPO/qemu-test/lib/ulp.sh"

ulp_start "$@"

port=20049
export_dir=/run/rxe-nfs
# The export is NFSv4's root (fsid=0): v4 clients mount it as "/" and
# need no pseudo file system through the guest's / (9p, not exportable).
fsid=0
# Sizes in bytes: tiny (inline), around a page, odd sizes that span
# several chunks, and large ones that need many pages per registration.
sizes=(1 4095 4096 65537 1048576 4194317 12582919)
vers=(3 4.2)
if [ "$quick" ]; then
	sizes=(1 4095 4096 65537 1048576 4194317)
	vers=(4.2)
fi

# --- server (node 2) ----------------------------------------------------------
server_up() {
	modprobe nfsd || fail "modprobe nfsd"
	modprobe rpcrdma || fail "modprobe rpcrdma"
	# The root file system is the host's, read-only: nfs-utils' state
	# directory goes on a tmpfs.
	mount -t tmpfs nfsstate /var/lib/nfs || fail "tmpfs on /var/lib/nfs"
	mkdir -p /var/lib/nfs/v4recovery /var/lib/nfs/rpc_pipefs
	touch /var/lib/nfs/etab /var/lib/nfs/rmtab
	mount -t nfsd nfsd /proc/fs/nfsd || fail "mount nfsd"
	mkdir -p "$export_dir"
	mount -t tmpfs -o size=256M rxe-nfs "$export_dir"
	chmod 1777 "$export_dir"
	rpcbind || fail "rpcbind"
	exportfs -o rw,no_root_squash,insecure,no_subtree_check,fsid=$fsid "$(client_ip):$export_dir" ||
		fail "exportfs"
	rpc.mountd || fail "rpc.mountd"
	# A short grace period: NFSv4 opens wait it out after nfsd starts.
	rpc.nfsd -G 10 -L 10 4 || fail "rpc.nfsd"
	echo "rdma $port" >/proc/fs/nfsd/portlist || fail "adding the rdma listener on port $port"
	note "server: nfsd ports: $(tr '\n' ' ' </proc/fs/nfsd/portlist), versions: $(cat /proc/fs/nfsd/versions)"
	grep -q "^rdma $port\$" /proc/fs/nfsd/portlist || fail "no rdma $port in /proc/fs/nfsd/portlist"
	mkdir "$export_dir/s"
	make_files "$export_dir/s" s "$SHARED_DIR/nfs.server.sums"
	note "server: exporting $export_dir; $(wc -l <"$SHARED_DIR/nfs.server.sums") files of its own in s/"
}

server_down() {
	rpc.nfsd 0 || fail "rpc.nfsd 0"
	exportfs -ua || fail "exportfs -ua"
	pkill -x rpc.mountd || true
	pkill -x rpcbind || true
	umount /proc/fs/nfsd || fail "umount nfsd"
	umount "$export_dir"
	umount /var/lib/nfs
	note "server: stopped"
}

# --- client (node 1) ----------------------------------------------------------
mnt_of() { echo "/run/rxe-nfs-v$1"; }

client_mount() { # VERS
	local v=$1 mnt opts line path
	mnt=$(mnt_of "$v")
	mkdir -p "$mnt"
	opts="vers=$v,proto=rdma,port=$port"
	# NFSv3 locking would need rpc.statd on both sides; the test takes none.
	[ "$v" = 3 ] && opts+=",nolock"
	path=$export_dir
	[ "$v" = 3 ] || path=/
	mount -t nfs -o "$opts" "$(server_ip):$path" "$mnt" || fail "mount -o $opts"
	line=$(grep " $mnt nfs" /proc/mounts) || fail "no $mnt in /proc/mounts"
	note "client: $line"
	[[ $line == *proto=rdma* ]] || fail "v$v mount is not proto=rdma: $line"
	[[ $line == *port=$port* ]] || fail "v$v mount is not on port $port: $line"
}

# The mount's RPC transport line from /proc/self/mountstats.
xprt_of() { # MNT
	awk -v m="$1" '$1 == "device" { cur = ($5 == m) } cur && $1 == "xprt:" { print; exit }' /proc/self/mountstats
}

# --- the test -----------------------------------------------------------------
if is_server; then
	server_up
	meet server-up
	[ -z "$yank" ] || yank_device
	meet client-written 900
	for v in "${vers[@]}"; do
		check_files "$export_dir/c$v" "$SHARED_DIR/nfs.client-v$v.sums" 0 "server: v$v client's files in its tmpfs"
	done
	meet server-checked
	meet client-done 300
	server_down
elif is_client; then
	modprobe nfs || fail "modprobe nfs"
	modprobe rpcrdma || fail "modprobe rpcrdma"
	meet server-up
	if [ "$yank" ]; then
		client_mount "${vers[-1]}"
		yank_client "$(mnt_of "${vers[-1]}")/yank" 48
		rm "$(mnt_of "${vers[-1]}")/yank"
	fi
	packets_mark
	for v in "${vers[@]}"; do
		[ -n "$yank" ] && [ "$v" = "${vers[-1]}" ] || client_mount "$v"
		t0=$SECONDS
		mnt=$(mnt_of "$v")
		write_files "$mnt/c$v" "$SHARED_DIR/nfs.client-v$v.sums" "client v$v"
		check_files "$mnt/s" "$SHARED_DIR/nfs.server.sums" 1 "client v$v: the server's files"
		note "client v$v: workload done in $((SECONDS - t0)) s"
	done
	# Each version wrote and read back about 2 x 18 MiB (quick: 2 x 5) and
	# read the server's files: more than 10000 packets each way on a 1024
	# or 4096-byte path MTU.
	packets_check "client: rdma packets during the workload"
	for v in "${vers[@]}"; do
		x=$(xprt_of "$(mnt_of "$v")")
		note "client v$v mountstats: $x"
		[[ $x =~ xprt:[[:space:]]+rdma[[:space:]] ]] ||
			fail "v$v mount's transport is not rdma: '$x'"
	done
	meet client-written 900
	meet server-checked
	for v in "${vers[@]}"; do
		umount "$(mnt_of "$v")" || fail "umount v$v"
	done
	note "client: unmounted"
	meet client-done
else
	ulp_bystander server-up client-written:900 server-checked client-done:300
fi
ulp_end NFS/RDMA 'rpcrdma|svcrdma|nfs|rpc|rdma|rxe' 'error|fail|timed out|flushed|not responding|reconnect'
note "nfs-rdma ok"
