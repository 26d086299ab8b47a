#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The datapath between two nodes, in one boot: the libibverbs example
# pingpongs with payload checks (-c) from 1 byte to many MTUs, and every
# perftest program, RC and where perftest allows UC and UD, over the IPv4
# and the IPv6 RoCE v2 GIDs. Node 2 serves, node 1 is the client.
#
#   qemu-test/run --drivers rs,c qemu-test/tests/datapath/datapath.sh [pingpong] [perftest] [quick]
#
# With no argument pingpong and perftest run; quick is a short selection of
# both for the slow debug kernel. Each perftest result becomes one line
#
#   FIGURE <client driver>-<server driver> <program> <options> <value> <unit>
#
# on the client's output, which scripts/test collects into its summary.
set -euo pipefail
# shellcheck source=qemu-test/lib/lib.sh
. "$REPO/qemu-test/lib/lib.sh"

parts=("$@")
[ ${#parts[@]} -gt 0 ] || parts=(pingpong perftest)
want() {
	local p
	for p in "${parts[@]}"; do [ "$p" = "$1" ] && return 0; done
	return 1
}

gid4=$(roce_gid_index v4) || fail "no IPv4 RoCE v2 GID on $RXE_DEV"
gid6=$(roce_gid_index v6) || fail "no IPv6 RoCE v2 GID on $RXE_DEV"
publish "driver.$NODE_INDEX" "$RXE_DRIVER"
pairing="$(fetch driver.1)-$(fetch driver.2)"
note "datapath $pairing: GID index v4 $gid4, v6 $gid6; parts: ${parts[*]}"

port=18515
step=0
failures=0

# pair LIMIT CMD...: runs CMD on the server (node 2) and, once it listens,
# CMD plus the server's address on the client (node 1). Both must exit 0
# within LIMIT seconds. The client's output is left in $OUT_DIR/last.log.
pair() {
	local limit=$1 rc=0
	shift
	step=$((step + 1))
	local log=$OUT_DIR/step$step.log
	if is_server; then
		timeout "$limit" "$@" >"$log" 2>&1 &
		local srv=$!
		wait_listen "$port" 60 || true
		barrier "up-$step"
		wait "$srv" || rc=$?
	elif is_client; then
		barrier "up-$step"
		timeout "$limit" "$@" "$(server_ip)" >"$log" 2>&1 || rc=$?
	else
		barrier "up-$step"
	fi
	cp "$log" "$OUT_DIR/last.log" 2>/dev/null || true
	publish "rc.$step.$NODE_INDEX" "$rc"
	barrier "done-$step"
	port=$((port + 1))
	local peer=$((3 - NODE_INDEX)) prc
	prc=$(fetch "rc.$step.$peer" 10)
	if [ "$rc" != 0 ] || [ "$prc" != 0 ]; then
		echo "---- step $step: $* (here $rc, peer $prc)"
		cat "$log"
		failures=$((failures + 1))
		return 1
	fi
	return 0
}

# --- pingpong: payload-checked exchanges ----------------------------------
pingpong() { # PROGRAM GID_INDEX ITERS SIZE
	local prog=$1 gidx=$2 iters=$3 size=$4
	if pair 180 "$prog" -d "$RXE_DEV" -g "$gidx" -n "$iters" -s "$size" -c -p "$port"; then
		note "ok  $prog -s $size -n $iters (gid $gidx)"
	else
		note "FAIL $prog -s $size -n $iters (gid $gidx)"
	fi
}

if want pingpong; then
	for size in 1 1023 4096 65536; do pingpong ibv_rc_pingpong "$gid4" 100 "$size"; done
	pingpong ibv_rc_pingpong "$gid4" 10 1048576
	pingpong ibv_rc_pingpong "$gid6" 50 65536
	for size in 1 4096 65536; do pingpong ibv_uc_pingpong "$gid4" 100 "$size"; done
	for size in 1 1024; do pingpong ibv_ud_pingpong "$gid4" 100 "$size"; done
	pingpong ibv_ud_pingpong "$gid6" 50 512
	for size in 1 4096 65536; do pingpong ibv_srq_pingpong "$gid4" 50 "$size"; done
fi

# --- perftest: every program, RC/UC/UD, IPv4 and IPv6 ----------------------
perf() { # GID_INDEX PROGRAM OPTIONS...
	local gidx=$1 prog=$2
	shift 2
	local label="$prog $* gid$([ "$gidx" = "$gid6" ] && echo 6 || echo 4)"
	if ! pair 300 "$prog" -d "$RXE_DEV" -F -x "$gidx" -p "$port" "$@"; then
		note "FAIL $label"
		return 0
	fi
	is_client || { note "ok  $label"; return 0; }
	local row value unit
	row=$(grep -E '^ *[0-9]+ +[0-9]+ +[0-9.]+' "$OUT_DIR/last.log" | tail -1)
	if [ -z "$row" ]; then
		cat "$OUT_DIR/last.log"
		note "FAIL $label: no result row"
		failures=$((failures + 1))
		return 0
	fi
	case "$prog" in
	*_lat) value=$(awk '{ print $5 }' <<<"$row"); unit=usec-typical ;;
	*) value=$(awk '{ print $4 }' <<<"$row"); unit=MB/s ;;
	esac
	note "ok  $label: $row"
	# Debug-kernel figures say nothing about speed.
	if [ "${RXE_FLAVOUR:-plain}" = plain ]; then
		echo "FIGURE $pairing $prog ${*// /_} gid$([ "$gidx" = "$gid6" ] && echo 6 || echo 4) $value $unit"
	fi
}

if want perftest; then
	for g in "$gid4" "$gid6"; do
		perf "$g" ib_send_bw -n 200
		perf "$g" ib_write_bw -n 200
		perf "$g" ib_read_bw -n 200
		perf "$g" ib_atomic_bw -n 500
		perf "$g" ib_send_lat -n 200
		perf "$g" ib_write_lat -n 200
		perf "$g" ib_read_lat -n 200
		perf "$g" ib_atomic_lat -n 200
		perf "$g" ib_send_bw -c UD -s 1024 -n 500
	done
	# No ib_send_bw -c UC: an unthrottled UC sender overruns a TCG guest's
	# receive ring (QEMU drops at the tap), the lost messages are UC's to
	# lose, and perftest's server then waits for them forever. UC sends
	# are checked by ibv_uc_pingpong and ib_send_lat -c UC.
	perf "$gid4" ib_write_bw -c UC -n 200
	perf "$gid4" ib_send_lat -c UC -n 200
	perf "$gid4" ib_write_lat -c UC -n 200
	perf "$gid4" ib_send_lat -c UD -s 1024 -n 200
	perf "$gid4" ib_atomic_bw -A CMP_AND_SWAP -n 500
	perf "$gid4" ib_atomic_lat -A CMP_AND_SWAP -n 200
	perf "$gid4" ib_write_bw -s 4096 -q 4 -n 200
	perf "$gid4" ib_read_bw -s 1048576 -n 20
fi

if want quick; then
	pingpong ibv_rc_pingpong "$gid4" 20 1
	pingpong ibv_rc_pingpong "$gid4" 20 4096
	pingpong ibv_uc_pingpong "$gid4" 20 4096
	pingpong ibv_ud_pingpong "$gid4" 20 1024
	pingpong ibv_srq_pingpong "$gid4" 10 4096
	perf "$gid4" ib_send_bw -s 16384 -n 50
	perf "$gid4" ib_write_bw -s 16384 -n 50
	perf "$gid6" ib_read_bw -s 16384 -n 50
	perf "$gid4" ib_atomic_bw -n 100
	perf "$gid4" ib_send_bw -c UD -s 1024 -n 100
fi

# Every step left both nodes' devices quiet and usable.
barrier end
((failures == 0)) || fail "$failures datapath steps failed ($pairing)"
note "datapath $pairing ok ($step steps)"
