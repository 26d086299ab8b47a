# SPDX-License-Identifier: GPL-2.0
# Helpers for test scripts run by qemu-test/run, sourced in the guest:
#
#   . "$REPO/qemu-test/lib/lib.sh"
#
# Conventions: node 2 is the server, node 1 the client (so on two nodes,
# `ib_send_bw -d "$RXE_DEV"` runs on node 2 and `ib_send_bw -d "$RXE_DEV"
# "$(server_ip)"` on node 1). Everything here works with NODE_COUNT >= 1.
# shellcheck shell=bash

: "${NODE_INDEX:?lib.sh: not in a qemu-test guest (NODE_INDEX unset)}"
: "${RXE_NET4:=10.77.0}" "${RXE_NET6:=fd77:}"

# Seconds a barrier or wait helper waits before it fails the test.
: "${RXE_WAIT_TIMEOUT:=300}"

# fail MSG...: print MSG on stderr and end the script with status 1.
fail() {
	echo "FAIL (node$NODE_INDEX): $*" >&2
	exit 1
}

# note MSG...: a timestamped progress line, on stdout.
note() {
	echo "[$(cut -d' ' -f1 /proc/uptime)] $*"
}

# node_ip N / node_ip6 N: node N's addresses.
node_ip() { echo "$RXE_NET4.$1"; }
node_ip6() { echo "$RXE_NET6:$1"; }

# is_server / is_client: this node's role in a client-server test.
is_server() { [ "$NODE_INDEX" = 2 ]; }
is_client() { [ "$NODE_INDEX" = 1 ]; }
server_ip() { node_ip 2; }
server_ip6() { node_ip6 2; }
client_ip() { node_ip 1; }

# step CMD...: print "nodeN $ CMD", then run it. A script may define its
# own (demo.sh puts a blank line first); the helpers here call the script's.
step() {
	echo "node$NODE_INDEX \$ $*"
	"$@"
}

# barrier NAME [TIMEOUT]: wait until all NODE_COUNT nodes reached barrier
# NAME. The same NAME may be used again: each use is a new barrier, as long
# as every node passes the same sequence of barriers. Fails the script
# (exit 1) after TIMEOUT seconds (default $RXE_WAIT_TIMEOUT).
declare -A _rxe_barrier_seq=()
barrier() {
	local name=${1:?barrier NAME} limit=${2:-$RXE_WAIT_TIMEOUT} seq tag arrived start
	[[ $name =~ ^[A-Za-z0-9_.-]+$ ]] || fail "barrier name '$name': use [A-Za-z0-9_.-]"
	seq=$((${_rxe_barrier_seq[$name]:-0} + 1))
	_rxe_barrier_seq[$name]=$seq
	tag=$SHARED_DIR/barrier.$name.$seq
	: >"$tag.node$NODE_INDEX" || fail "barrier $name: cannot write $SHARED_DIR"
	start=$SECONDS
	while :; do
		arrived=("$tag".node*)
		[ -e "${arrived[0]}" ] || arrived=()
		((${#arrived[@]} >= NODE_COUNT)) && return 0
		((SECONDS - start < limit)) ||
			fail "barrier $name (#$seq): ${#arrived[@]}/$NODE_COUNT nodes after ${limit}s (here: ${arrived[*]##*.})"
		sleep 0.2
	done
}

# meet NAME [LIMIT]: like barrier, but once a node's script has failed
# (meet_on_exit, its EXIT trap, leaves an abort mark) the wait ends at once
# on every other node instead of at the timeout. Each NAME is met once per
# script; a script that meets sets `trap meet_on_exit EXIT`.
meet() {
	local name=${1:?meet NAME} limit=${2:-$RXE_WAIT_TIMEOUT} start=$SECONDS n f
	: >"$SHARED_DIR/meet.$name.node$NODE_INDEX"
	for ((n = 1; n <= NODE_COUNT; n++)); do
		until [ -e "$SHARED_DIR/meet.$name.node$n" ]; do
			for f in "$SHARED_DIR"/meet-abort.node*; do
				[ -e "$f" ] && fail "at $name: ${f##*.} failed: $(cat "$f")"
			done
			((SECONDS - start < limit)) || fail "at $name: node$n not there after ${limit}s"
			sleep 0.2
		done
	done
}

meet_on_exit() {
	local rc=$?
	((rc == 0)) || echo "exit $rc" >"$SHARED_DIR/meet-abort.node$NODE_INDEX"
}

# A device removal under a kernel RDMA user's I/O (the "yank" mode of its
# test), met by every node: yank_client TARGET MIB [here] [may-fail]
# [bs=SIZE] on node 1, yank_device on node 2, yank_others on the rest. Node
# 1 writes MIB MiB of random data with O_DIRECT to TARGET (a file on a
# network mount or a block device) in blocks of SIZE (1M; smaller ones make
# a slower write, one that is surely still under way when a slow removal
# reaches the protocol); a second into the write, node 2's rdma device (node 1's own
# with "here", and node 2 then calls yank_others) is deleted (`rdma link
# delete`: the core disassociates its users, the protocol sees its device
# go) and added back 5 s later. The write must still be under way when the
# device goes, end within 300 s of its return, and read back intact, with
# O_DIRECT and through the page cache. With "may-fail" the write may
# instead fail with an I/O error (a protocol that fails its I/O once its
# own timeout runs out); YANK_WRITE tells the caller which: "intact" or
# "eio".
yank_client() { # TARGET MIB [here] [may-fail] [bs=SIZE]
	local target=$1 mib=$2 here='' may_fail='' bs=1M a src=/tmp/yank.src want pid t0 limit=300
	for a in "${@:3}"; do
		case $a in
		here) here=1 ;;
		may-fail) may_fail=1 ;;
		bs=*) bs=${a#bs=} ;;
		*) fail "yank_client: unknown argument $a" ;;
		esac
	done
	head -c $((mib << 20)) /dev/urandom >"$src"
	want=$(sha256sum <"$src" | cut -d' ' -f1)
	dd if="$src" of="$target" bs="$bs" oflag=direct conv=notrunc status=none 2>/tmp/yank.err &
	pid=$!
	if [ "$here" ]; then
		yank_device "$pid"
	else
		meet yank-go
		meet yank-deleted 120
		kill -0 "$pid" 2>/dev/null || fail "the write ended before the device went: nothing was in flight"
		meet yank-back 120
	fi
	t0=$SECONDS
	while kill -0 "$pid" 2>/dev/null && ((SECONDS - t0 < limit)); do
		sleep 0.5
	done
	kill -0 "$pid" 2>/dev/null && fail "the write is still blocked ${limit} s after the device came back"
	if ! wait "$pid"; then
		[ "$may_fail" ] && grep -q 'Input/output error' /tmp/yank.err ||
			fail "the O_DIRECT write across the device removal failed: $(cat /tmp/yank.err)"
		note "client: the write across the device removal failed with an I/O error $((SECONDS - t0)) s after the device came back: $(head -1 /tmp/yank.err)"
		YANK_WRITE=eio
		rm -f "$src"
		return 0
	fi
	note "client: the write across the device removal ended $((SECONDS - t0)) s after the device came back"
	echo 3 >/proc/sys/vm/drop_caches
	[ "$(dd if="$target" bs=1M count="$mib" iflag=direct status=none | sha256sum | cut -d' ' -f1)" = "$want" ] ||
		fail "the data written across the device removal differs (O_DIRECT read)"
	[ "$(dd if="$target" bs=1M count="$mib" status=none | sha256sum | cut -d' ' -f1)" = "$want" ] ||
		fail "the data written across the device removal differs (buffered read)"
	rm -f "$src"
	YANK_WRITE=intact
	note "client: $mib MiB written across the device removal read back intact"
}

# yank_device [PID [CMD...]]: the part of the node whose device goes; PID
# (may be empty), the write's, must still run when the device has gone;
# CMD, if given, runs once the device is back, before the other nodes hear
# it (a target that must be set up again on the new device).
yank_device() {
	local writer=${1:-}
	shift || true
	meet yank-go
	sleep 1
	rdma link delete "$RXE_DEV" || fail "rdma link delete $RXE_DEV"
	note "$RXE_DEV deleted under the client's I/O"
	[ -z "$writer" ] || kill -0 "$writer" 2>/dev/null ||
		fail "the write ended before the device went: nothing was in flight"
	meet yank-deleted
	sleep 5
	rdma link add "$RXE_DEV" type rxe netdev eth0 || fail "rdma link add $RXE_DEV"
	roce_gid_index v4 >/dev/null || fail "$RXE_DEV has no RoCE v2 GID 30 s after it came back"
	note "$RXE_DEV back"
	if (($#)); then "$@"; fi
	meet yank-back
}

yank_others() {
	meet yank-go
	meet yank-deleted 120
	meet yank-back 120
}

# publish NAME VALUE / fetch NAME [TIMEOUT]: pass a small value between
# nodes. fetch waits until some node published NAME, then prints it.
publish() {
	local f=$SHARED_DIR/value.${1:?publish NAME VALUE}
	printf '%s\n' "${2-}" >"$f.tmp.$NODE_INDEX" && mv "$f.tmp.$NODE_INDEX" "$f"
}
fetch() {
	local f=$SHARED_DIR/value.${1:?fetch NAME} limit=${2:-$RXE_WAIT_TIMEOUT} start=$SECONDS
	until [ -e "$f" ]; do
		((SECONDS - start < limit)) || fail "fetch $1: nothing published after ${limit}s"
		sleep 0.2
	done
	cat "$f"
}

# wait_tcp_port IP PORT [TIMEOUT]: wait until a TCP connect to IP:PORT
# succeeds. It connects (and closes at once), so the server sees one empty
# connection: fine for iperf3 or sshd, not for perftest's servers, which
# take their first connection as the client. For those, have the server
# node call wait_listen and then a barrier.
wait_tcp_port() {
	local ip=${1:?wait_tcp_port IP PORT} port=${2:?wait_tcp_port IP PORT}
	local limit=${3:-$RXE_WAIT_TIMEOUT} start=$SECONDS
	until (exec 9<>"/dev/tcp/$ip/$port") 2>/dev/null; do
		((SECONDS - start < limit)) || fail "wait_tcp_port $ip $port: no listener after ${limit}s"
		sleep 0.2
	done
}

# wait_listen PORT [TIMEOUT]: wait until something on this node listens on
# TCP PORT (any address), without connecting to it.
wait_listen() {
	local port=${1:?wait_listen PORT} limit=${2:-$RXE_WAIT_TIMEOUT} start=$SECONDS
	until [ -n "$(ss -Hltn "sport = :$port" 2>/dev/null)" ]; do
		((SECONDS - start < limit)) || fail "wait_listen $port: nothing listens after ${limit}s"
		sleep 0.2
	done
}

# wait_until SECONDS CMD...: run CMD every 0.1 s until it succeeds (0), or
# return 1 after SECONDS.
wait_until() {
	local limit=${1:?wait_until SECONDS CMD...} start=$SECONDS
	shift
	until "$@"; do
		((SECONDS - start < limit)) || return 1
		sleep 0.1
	done
}

# ib_send_bw_pair LABEL [ARG...]: ib_send_bw with ARGs, from node 1 to
# node 2, the server; each node's output goes to $OUT_DIR/ib_send_bw.txt.
# The client fails unless the run printed a result, and ends with the line
# "ib_send_bw LABEL: BW average N MB/sec". Passes the barriers `listening`
# and `finished`: call it on both nodes once each has its device.
ib_send_bw_pair() {
	local label=${1:?ib_send_bw_pair LABEL [ARG...]} port=18515 server bw
	shift
	if is_server; then
		step ib_send_bw -d "$RXE_DEV" -p $port "$@" | tee "$OUT_DIR/ib_send_bw.txt" &
		server=$!
		wait_listen $port
		barrier listening
		wait "$server"
	else
		barrier listening
		step ib_send_bw -d "$RXE_DEV" -p $port "$@" "$(server_ip)" | tee "$OUT_DIR/ib_send_bw.txt"
		bw=$(awk '/^ *[0-9]+ +[0-9]+/ { print $4 }' "$OUT_DIR/ib_send_bw.txt" | tail -1)
		[ -n "$bw" ] || fail "ib_send_bw printed no result"
		echo
		echo "ib_send_bw $label: BW average ${bw} MB/sec"
	fi
	barrier finished
}

# same_on_all_nodes NAME WHAT: every node wrote $SHARED_DIR/NAME.node<N>;
# node 1 fails unless each other node's is the same as its own (WHAT says
# what they hold, for the message). A barrier for all nodes.
same_on_all_nodes() {
	local name=${1:?same_on_all_nodes NAME WHAT} what=${2:?same_on_all_nodes NAME WHAT} n
	publish "driver.node$NODE_INDEX" "$RXE_DRIVER"
	barrier "same.$name"
	((NODE_INDEX == 1)) || return 0
	for ((n = 2; n <= NODE_COUNT; n++)); do
		note "node1 ($RXE_DRIVER) vs node$n ($(fetch "driver.node$n"))"
		diff -u "$SHARED_DIR/$name.node1" "$SHARED_DIR/$name.node$n" ||
			fail "$what of node1 and node$n differ"
	done
}

# kmemleak_scan: run kmemleak now and print what it suspects. Returns 1 when
# it reports leaks (and copies the report to the kernel log, where
# qemu-test/run flags it), 0 when it has none or the kernel has no kmemleak.
# Objects are only reported once they are a few seconds old, so wait a
# little after the last teardown before calling it.
kmemleak_scan() {
	local k=/sys/kernel/debug/kmemleak report line
	[ -e "$k" ] || return 0
	# A second scan catches objects the first saw as still too young.
	if ! { echo scan >"$k" && echo scan >"$k"; }; then
		echo "kmemleak_scan: scan failed" >&2
		return 0
	fi
	report=$(cat "$k")
	[ -n "$report" ] || return 0
	echo "kmemleak report (node$NODE_INDEX):"
	echo "$report"
	while IFS= read -r line; do
		echo "kmemleak_scan: $line" >/dev/kmsg
	done <<<"$report"
	return 1
}

# kmemleak_check: on a kernel with kmemleak, wait 5 s (so the last
# teardown's objects are old enough to be reported), then fail the script if
# kmemleak_scan reports leaks.
kmemleak_check() {
	[ -e /sys/kernel/debug/kmemleak ] || return 0
	sleep 5
	kmemleak_scan || fail "kmemleak reports leaks"
}

# kmemleak_clear: forget every leak suspected so far (boot-time ones, say),
# so that a later kmemleak_scan reports only what came after.
kmemleak_clear() {
	local k=/sys/kernel/debug/kmemleak
	[ -e "$k" ] || return 0
	echo scan >"$k" && echo clear >"$k"
}

# lossy_link: the light impairment of loss.sh on this node's eth0 (1%
# loss, 2% reordering behind a 1 ms delay), for the rest of a script; the
# restore between scripts takes it away. The kernel RDMA users' tests take
# a "lossy" argument that calls it on both nodes before they start.
lossy_link() {
	tc qdisc add dev eth0 root netem delay 1ms reorder 2% loss 1% || fail "cannot add netem to eth0"
	note "eth0: 1% loss, 2% reordering"
}

# roce_gid_index v4|v6 [TIMEOUT]: the GID table index of this node's
# RoCE v2 GID for NODE_IP (v4, as an IPv4-mapped GID) or NODE_IP6 (v6).
# The core fills the table shortly after `rdma link add` and an address
# change, so this waits for the entry.
roce_gid_index() {
	local fam=${1:?roce_gid_index v4|v6} limit=${2:-30} want dir i gid start=$SECONDS
	local port=/sys/class/infiniband/$RXE_DEV/ports/1
	case "$fam" in
	v4) want=$(printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x' ${NODE_IP//./ }) ;;
	v6) want=$(python3 -c 'import ipaddress,sys; e=ipaddress.IPv6Address(sys.argv[1]).exploded; print(":".join(e.split(":")))' "$NODE_IP6") ;;
	*) fail "roce_gid_index: v4 or v6, not $fam" ;;
	esac
	while :; do
		for dir in "$port"/gids/*; do
			i=${dir##*/}
			gid=$(cat "$dir" 2>/dev/null) || continue
			[ "$gid" = "$want" ] || continue
			[ "$(cat "$port/gid_attrs/types/$i" 2>/dev/null)" = "RoCE v2" ] || continue
			echo "$i"
			return 0
		done
		((SECONDS - start < limit)) || return 1
		sleep 0.5
	done
}

# hw_counter NAME: this device's port counter NAME (0 when absent).
hw_counter() {
	cat "/sys/class/infiniband/$RXE_DEV/ports/1/hw_counters/${1:?hw_counter NAME}" 2>/dev/null || echo 0
}

# hwc_read VAR: "name=value ..." of the device's port counters, into VAR
# (bash builtins only: cheap around a measured program).
hwc_read() {
	local _f _v _s=
	for _f in /sys/class/infiniband/"$RXE_DEV"/ports/1/hw_counters/*; do
		read -r _v <"$_f" 2>/dev/null || continue
		_s+="${_f##*/}=$_v "
	done
	printf -v "$1" '%s' "$_s"
}

# hwc_json BEFORE AFTER: of two "name=value ..." snapshots of the port
# counters, those that moved, as a JSON object (bash builtins only).
hwc_json() {
	local -A _b=()
	local _kv _out=
	for _kv in $1; do _b[${_kv%%=*}]=${_kv#*=}; done
	for _kv in $2; do
		local _k=${_kv%%=*} _v=${_kv#*=}
		[[ $_v =~ ^[0-9]+$ && ${_b[$_k]:-0} =~ ^[0-9]+$ ]] || continue
		((_v != ${_b[$_k]:-0})) || continue
		_out+="${_out:+, }\"$_k\": $((_v - ${_b[$_k]:-0}))"
	done
	printf '{%s}' "$_out"
}

# disassociates: whether this node's driver tears a device's user contexts
# down under their processes (disassociate_ucontext: rxe_rs, and rdma_rxe
# from 7.x on) instead of making the device's removal wait for them.
disassociates() { [ "$RXE_DRIVER" = rs ] || [ "${RXE_KERNEL%%.*}" != 6 ]; }

# holder_start DEV gone|live [NS]: a process holding DEV open with mapped
# queues (qemu-test/lib/uverbs_holder.py; in namespace NS if given),
# ready on return; HOLDER is its pid. The mode is what it must find when
# holder_finish lets it go on: gone (its context was disassociated: verbs
# fail with EIO) or live (the device still works).
holder_start() {
	local dev=${1:?holder_start DEV MODE [NS]} mode=${2:?holder_start DEV MODE [NS]} ns=${3:-}
	local run=()
	[ -z "$ns" ] || run=(ip netns exec "$ns")
	HOLDER_DIR=$(mktemp -d "$OUT_DIR/holder.XXXX")
	"${run[@]}" /usr/bin/python3 "$REPO/qemu-test/lib/uverbs_holder.py" "$dev" "$HOLDER_DIR" "$mode" \
		>"$HOLDER_DIR/log" 2>&1 &
	HOLDER=$!
	wait_until 60 test -e "$HOLDER_DIR/ready" || {
		cat "$HOLDER_DIR/log"
		fail "holder on $dev: not ready"
	}
}

# holder_alive: the holder has not exited yet.
holder_alive() { kill -0 "$HOLDER" 2>/dev/null; }

# holder_finish: lets the holder go on and waits for it; fails the script
# unless every check of the holder passed.
holder_finish() {
	local rc=0
	: >"$HOLDER_DIR/go"
	wait "$HOLDER" || rc=$?
	sed 's/^/  holder: /' "$HOLDER_DIR/log"
	[ "$rc" = 0 ] || fail "holder: exit status $rc"
}
