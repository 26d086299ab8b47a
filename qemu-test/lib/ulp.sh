# SPDX-License-Identifier: GPL-2.0
# Helpers for the kernel-ULP test scripts (qemu-test/tests/ulp), sourced in
# the guest after lib.sh, whose helpers they call:
#
#   . "$REPO/qemu-test/lib/lib.sh"
#   . "$REPO/qemu-test/lib/ulp.sh"
#
# Node 2 is the server (target), node 1 the client (initiator); further
# nodes only meet the others (ulp_bystander).
# shellcheck shell=bash

# ulp_start ARG...: the start of a ULP test, on every node: sets
# meet_on_exit as the EXIT trap; takes the test's arguments: quick, lossy
# and yank set the variables of those names to 1 (they are empty
# otherwise), any other argument fails the script; with lossy, eth0 of
# nodes 1 and 2 drops and reorders from here on, set-up and login included
# (lossy_link), and done_wait, the seconds the target waits for the
# initiator's I/O, grows from 900 to 1150 (RC recovers from each loss after
# its retransmit timer, and an rdma_rxe requester loses seconds there: the
# short forms of the block tests took 15-20 min rs-c under 1% loss, while
# a script may take 1200 s); last, forgets the leaks kmemleak suspects so
# far (kmemleak_clear).
ulp_start() {
	local a
	trap meet_on_exit EXIT
	quick="" lossy="" yank=""
	for a in "$@"; do
		case $a in
		quick) quick=1 ;;
		lossy) lossy=1 ;;
		yank) yank=1 ;;
		*) fail "unknown argument $a" ;;
		esac
	done
	[ -z "$lossy" ] || ((NODE_INDEX > 2)) || lossy_link
	done_wait=900
	[ -z "$lossy" ] || done_wait=1150
	kmemleak_clear
}

# packets_mark: remembers this node's rdma device's sent and received
# packet counters for packets_check.
packets_mark() {
	_ulp_sent0=$(hw_counter sent_pkts) _ulp_rcvd0=$(hw_counter rcvd_pkts)
}

# packets_check WHAT: notes "WHAT: S sent, R received", the packets the
# rdma device sent and received since packets_mark, and fails unless both
# are above 10000.
packets_check() {
	local sent rcvd
	sent=$(($(hw_counter sent_pkts) - _ulp_sent0)) rcvd=$(($(hw_counter rcvd_pkts) - _ulp_rcvd0))
	note "$1: $sent sent, $rcvd received"
	((sent > 10000 && rcvd > 10000)) || fail "the rdma device carried too little: $sent sent, $rcvd received"
}

# ulp_bystander FIRST [NAME[:LIMIT]...]: the part of a node other than 1
# and 2: meets FIRST, then the yank's meetings when yank is set
# (yank_others), then each NAME in turn, waiting LIMIT seconds at most
# (meet's default without one).
ulp_bystander() {
	local m
	meet "$1"
	[ -z "$yank" ] || yank_others
	for m in "${@:2}"; do
		if [[ $m == *:* ]]; then
			meet "${m%:*}" "${m##*:}"
		else
			meet "$m"
		fi
	done
}

# ulp_end PROTO GREP TROUBLE [OK]: the end of a ULP test, on every node.
# Prints the kernel log's lines that match GREP (grep -E -i) and fails
# ("kernel log reports PROTO trouble") if one of them matches TROUBLE
# (grep -E -i) and not OK (grep -E, the lines expected); then meets the
# other nodes at "checked" and fails on kmemleak's reports
# (kmemleak_check).
ulp_end() {
	local proto=$1 pattern=$2 trouble=$3 ok=${4:-} lines bad
	lines=$(dmesg | grep -E -i "$pattern" || true)
	echo "--- kernel log (${pattern//|//} lines)"
	echo "$lines"
	bad=$lines
	[ -z "$ok" ] || bad=$(grep -v -E "$ok" <<<"$bad" || true)
	bad=$(grep -E -i "$trouble" <<<"$bad" || true)
	[ -z "$bad" ] || fail "kernel log reports $proto trouble: $bad"
	meet checked
	kmemleak_check
}

# --- a disk (iser.sh, srp_rdma.sh) -------------------------------------------
# The functions below read and write /dev/$dev, the SCSI disk the script's
# login found; a list of regions has a line "NAME OFFSET LENGTH BS SUM"
# (bytes; SUM is the SHA-256 of the region's data).

# disk_wait FIND MISSING VIA: after a login, waits up to 60 s for the disk:
# dev becomes the last name FIND prints (a function of the script that
# lists its protocol's SCSI disks in sysfs) once /dev has it; fails with
# MISSING when none came. The disk must hold disk_mib MiB (the script's);
# a note gives its size and largest I/O, and VIA.
disk_wait() {
	local find=$1 missing=$2 via=$3 i bytes
	dev=
	for ((i = 0; i < 300; i++)); do
		dev=$("$find" | tail -n 1)
		if [ -n "$dev" ] && [ -b "/dev/$dev" ]; then break; fi
		sleep 0.2
	done
	if [ -z "$dev" ] || [ ! -b "/dev/$dev" ]; then fail "$missing"; fi
	bytes=$(($(cat "/sys/block/$dev/size") * 512))
	((bytes == disk_mib << 20)) || fail "/dev/$dev has $bytes bytes, want $((disk_mib << 20))"
	note "initiator: /dev/$dev ($bytes bytes, max I/O $(cat "/sys/block/$dev/queue/max_hw_sectors_kb") KiB) $via"
}

# disk_sum OFF LEN BS [direct]: the SHA-256 of the LEN bytes at OFF of the
# disk, read in blocks of BS (with O_DIRECT when the fourth argument is
# given).
disk_sum() {
	dd if="/dev/$dev" bs="$3" skip=$(($1 / $3)) count=$(($2 / $3)) ${4:+iflag=direct} status=none |
		sha256sum | cut -d' ' -f1
}

# disk_write LIST BIG_MIB BUF_MIB: writes random data with O_DIRECT to
# regions of the disk in blocks of 4 KiB (2 MiB), 12 KiB (1.5 MiB), 64 KiB
# (4 MiB) and 1 MiB (BIG_MIB MiB), each read back with O_DIRECT and
# compared at once, then BUF_MIB MiB buffered at 40 MiB; LIST gets every
# region's line. Then the page cache is dropped and disk_check reads them
# all.
disk_write() {
	local list=$1 big=$2 buf=$3 mib=$((1 << 20)) r name off len bs want
	local -a regions=(
		"r4k 0 $((2 * mib)) 4096"
		"r12k $((2 * mib + 12288)) $((3 * mib / 2)) 12288"
		"r64k $((8 * mib)) $((4 * mib)) 65536"
		"r1m $((16 * mib)) $((big * mib)) 1048576"
	)
	: >"$list"
	for r in "${regions[@]}"; do
		read -r name off len bs <<<"$r"
		head -c "$len" /dev/urandom >"/tmp/$name"
		dd if="/tmp/$name" of="/dev/$dev" bs="$bs" seek=$((off / bs)) oflag=direct conv=notrunc,fsync status=none ||
			fail "O_DIRECT write of $name"
		want=$(sha256sum <"/tmp/$name" | cut -d' ' -f1)
		[ "$(disk_sum "$off" "$len" "$bs" direct)" = "$want" ] || fail "$name reads back different data (O_DIRECT)"
		echo "$name $off $len $bs $want" >>"$list"
		rm "/tmp/$name"
	done
	# Buffered: through the page cache, written back at fsync.
	head -c $((buf * mib)) /dev/urandom >/tmp/buf
	dd if=/tmp/buf of="/dev/$dev" bs=1M seek=40 conv=notrunc,fsync status=none || fail "buffered write"
	echo "buf $((40 * mib)) $((buf * mib)) 1048576 $(sha256sum </tmp/buf | cut -d' ' -f1)" >>"$list"
	rm /tmp/buf
	echo 3 >/proc/sys/vm/drop_caches
	disk_check "$list"
}

# disk_check LIST: every region of LIST must have its sum, read with
# O_DIRECT and through the page cache.
disk_check() {
	local name off len bs want n=0
	while read -r name off len bs want; do
		[ "$(disk_sum "$off" "$len" "$bs" direct)" = "$want" ] || fail "$name differs (O_DIRECT read)"
		[ "$(disk_sum "$off" "$len" "$bs")" = "$want" ] || fail "$name differs (buffered read)"
		n=$((n + 1))
	done <"$1"
	note "initiator: $n regions match"
}

# disk_rounds LIST BIG_MIB BUF_MIB: node 1's I/O once logged in:
# disk_write, then the script's logout and login, disk_check again (the
# data now comes from the target, not from node 1's memory) and logout.
disk_rounds() {
	disk_write "$@"
	logout
	login
	disk_check "$1"
	logout
}

# --- file trees (nfs_rdma.sh, smb_direct.sh) ---------------------------------
# Files of each size of the script's array sizes (bytes); a list of files
# has a line "NAME SUM" for each, SUM its SHA-256.

# file_sum FILE: the SHA-256 of FILE, read through the page cache.
file_sum() { sha256sum <"$1" | cut -d' ' -f1; }

# file_sum_direct FILE: the SHA-256 of FILE, read with O_DIRECT.
file_sum_direct() {
	dd if="$1" bs=1M iflag=direct status=none | sha256sum | cut -d' ' -f1
}

# make_files DIR PREFIX LIST: fresh random files of each size in DIR,
# named PREFIX and the size, and their list in LIST.
make_files() {
	local s
	: >"$3"
	for s in "${sizes[@]}"; do
		head -c "$s" /dev/urandom >"$1/$2$s"
		echo "$2$s $(file_sum "$1/$2$s")" >>"$3"
	done
}

# check_files DIR LIST DIRECT WHAT: every file of LIST in DIR must have its
# sum (read buffered, and with O_DIRECT when DIRECT is 1); LIST must name
# one at least. WHAT starts the messages.
check_files() {
	local name want n=0
	while read -r name want; do
		[ "$(file_sum "$1/$name")" = "$want" ] || fail "$4: $1/$name (buffered read) differs"
		if (($3)); then
			[ "$(file_sum_direct "$1/$name")" = "$want" ] || fail "$4: $1/$name (O_DIRECT read) differs"
		fi
		n=$((n + 1))
	done <"$2"
	((n > 0)) || fail "$4: $2 lists no files"
	note "$4: $n files match"
}

# write_files DIR LIST WHO: node 1's files on its mount: makes DIR and
# writes a fresh random file of each size into it twice, as bSIZE buffered
# and as dSIZE with O_DIRECT; syncs, drops the page cache and reads them
# back both ways (check_files, "WHO: read back its own files"). LIST then
# lists them, for the server's check.
write_files() {
	local dir=$1 s list=/tmp/written.sums
	mkdir "$dir"
	mkdir -p /tmp/src
	make_files /tmp/src "" /tmp/src.sums
	: >"$list"
	for s in "${sizes[@]}"; do
		# Buffered: page cache, written back by the flusher and fsync.
		cp /tmp/src/$s "$dir/b$s"
		# O_DIRECT: each write goes to the server as it is.
		dd if=/tmp/src/$s of="$dir/d$s" bs=1M oflag=direct status=none || fail "O_DIRECT write of $dir/d$s"
		echo "b$s $(file_sum /tmp/src/$s)" >>"$list"
		echo "d$s $(file_sum /tmp/src/$s)" >>"$list"
	done
	sync
	echo 3 >/proc/sys/vm/drop_caches
	check_files "$dir" "$list" 1 "$3: read back its own files"
	cp "$list" "$2"
	rm -rf /tmp/src
}
