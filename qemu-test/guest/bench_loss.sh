#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The loss benchmark's guest half (scripts/bench-loss): RC goodput on a
# lossy link. For each level both nodes spoil their own egress with tc
# netem (so loss hits requests, responses and ACKs alike), then node 1 runs
# each row against node 2 for a fixed time with perftest's default ACK
# timeout, and the data-integrity test checks every byte of a short run on
# the same link. Node 1 appends one JSON line per row and level to
# $OUT_DIR/bench-loss.jsonl: pairing (node 1's driver, then node 2's),
# row, loss_pct, reorder_pct, mib_s (perftest's average, 0 when the row
# failed), ok (false when perftest failed, or its clock calibration three
# times: then clock is "bad"), verified (the level's integrity run passed), secs, and the
# port counters that moved on each node (cli_hwc, srv_hwc).
#
#   qemu-test/run --drivers rs,c qemu-test/guest/bench_loss.sh [options]
#
# Options:
#   --levels "L:R ..."  loss and reordering percentages per level (default
#                       "0:0 1:0 5:0 10:0 0:5"); loss alone is `netem loss
#                       L%`, reordering `netem delay 1ms reorder R%` (R% of
#                       the packets overtake the others, delayed by 1 ms)
#   --rows REGEX        only rows whose id matches (grep -E); the rows are
#                       {write,send,read}_bw_{65536,1048576}
#   --secs S            seconds per row (perftest -D; default 6)
#   --verify OPS        integrity.py operations per address family at each
#                       level (default 8; 0: none)
set -euo pipefail
# shellcheck source=qemu-test/lib/lib.sh
. "$REPO/qemu-test/lib/lib.sh"

levels="0:0 1:0 5:0 10:0 0:5"
rows_re=.
secs=6
verify=8
while (($#)); do
	case "$1" in
	--levels) levels=$2; shift 2 ;;
	--rows) rows_re=$2; shift 2 ;;
	--secs) secs=$2; shift 2 ;;
	--verify) verify=$2; shift 2 ;;
	*) fail "unknown option $1" ;;
	esac
done
((NODE_COUNT == 2)) || fail "bench_loss.sh runs on two nodes"
gidx=$(roce_gid_index v4) || fail "no IPv4 RoCE v2 GID on $RXE_DEV"
results=$OUT_DIR/bench-loss.jsonl
logs=$OUT_DIR/bench-loss-logs
mkdir -p "$logs"
publish "driver.node$NODE_INDEX" "$RXE_DRIVER"
barrier drivers
pairing="$(fetch driver.node1)-$(fetch driver.node2)"

rows=()
for verb in write send read; do
	for size in 65536 1048576; do
		id=${verb}_bw_$size
		grep -qE "$rows_re" <<<"$id" && rows+=("$id")
	done
done
((${#rows[@]})) || fail "no row matches '$rows_re'"

port=18800
level_no=0
for level in $levels; do
	loss=${level%%:*} reorder=${level#*:}
	[[ $loss =~ ^[0-9]+$ && $reorder =~ ^[0-9]+$ ]] || fail "level '$level' is not LOSS:REORDER"
	level_no=$((level_no + 1))
	tc qdisc del dev eth0 root 2>/dev/null || true
	if ((reorder > 0)); then
		tc qdisc add dev eth0 root netem delay 1ms reorder "$reorder%" loss "$loss%"
	elif ((loss > 0)); then
		tc qdisc add dev eth0 root netem loss "$loss%"
	fi
	barrier "level-$level_no"
	lines=()
	for row in "${rows[@]}"; do
		verb=${row%%_*} size=${row##*_}
		prog=ib_${verb}_bw
		log=$logs/$row-$loss-$reorder.log
		# perftest's clock calibration fails now and then under TCG
		# ("Correlation coefficient r^2 < 0.9", a figure of 0.00): up to
		# three tries.
		for try in 1 2 3; do
			cmd=(stdbuf -oL "$prog" -d "$RXE_DEV" -F -x "$gidx" -p "$port" -s "$size" -D "$secs")
			rc=0
			hwc_read before
			if is_server; then
				timeout $((secs + 120)) "${cmd[@]}" >"$log" 2>&1 &
				srv=$!
				wait_listen "$port"
				barrier "row-$port"
				wait "$srv" || rc=$?
			else
				barrier "row-$port"
				timeout $((secs + 120)) "${cmd[@]}" "$(server_ip)" >"$log" 2>&1 || rc=$?
			fi
			hwc_read after
			publish "hwc.$port.node$NODE_INDEX" "$(hwc_json "$before" "$after")"
			if is_client; then
				calib=ok
				grep -q 'Correlation coefficient' "$log" && calib=bad
				publish "calib.$port" "$calib"
			fi
			calib=$(fetch "calib.$port")
			barrier "row-$port-done"
			port=$((port + 1))
			[ "$calib" = bad ] || break
		done
		if is_client; then
			mib=$(awk -v s="$size" '$1 == s && NF >= 4 { v = $4 } END { print v + 0 }' "$log")
			ok=true
			[ "$rc" = 0 ] && [ "$calib" = ok ] || ok=false
			echo "$row loss $loss% reorder $reorder%: $mib MiB/s (exit $rc, clock $calib, try $try)"
			lines+=("\"pairing\": \"$pairing\", \"row\": \"$row\", \"loss_pct\": $loss, \"reorder_pct\": $reorder, \"mib_s\": $mib, \"ok\": $ok, \"clock\": \"$calib\", \"secs\": $secs, \"cli_hwc\": $(fetch "hwc.$((port - 1)).node1"), \"srv_hwc\": $(fetch "hwc.$((port - 1)).node2")")
		fi
	done
	verified=null
	if ((verify > 0)); then
		vrc=0
		"$REPO/qemu-test/tests/datapath/integrity.py" "$verify" >"$logs/integrity-$loss-$reorder.log" 2>&1 || vrc=$?
		publish "verified.$level_no.node$NODE_INDEX" "$vrc"
		barrier "verified-$level_no"
		verified=true
		for n in 1 2; do
			[ "$(fetch "verified.$level_no.node$n")" = 0 ] || verified=false
		done
	fi
	if is_client; then
		echo "loss $loss% reorder $reorder%: integrity $verified"
		for l in "${lines[@]}"; do
			echo "{$l, \"verified\": $verified}" >>"$results"
		done
	fi
	barrier "level-$level_no-done"
done
tc qdisc del dev eth0 root 2>/dev/null || true
note "bench_loss: ${#rows[@]} rows at levels $levels, pairing $pairing, $SECONDS s"
