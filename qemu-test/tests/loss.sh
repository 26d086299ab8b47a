#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# RC recovery on a lossy link: node 1 drops 1% of what it sends and
# reorders some of it (tc netem), then the nodes move 100 MiB each way with
# ibv_rc_pingpong -c (every byte of every message checked) and a 1 MiB
# RDMA READ stream. Afterwards the retry and sequence-error counters must
# show that recovery happened, and both devices must still work on a clean
# link.
#
#   qemu-test/run --drivers rs,c qemu-test/tests/loss.sh [MIB]
set -euo pipefail
# shellcheck source=qemu-test/lib.sh
. "$REPO/qemu-test/lib.sh"

mib=${1:-100}
gidx=$(roce_gid_index v4) || fail "no IPv4 RoCE v2 GID on $RXE_DEV"
counters=(sent_pkts rcvd_pkts completer_retry_err rcvd_seq_err out_of_seq_request duplicate_request retry_exceeded_err)
snap() { local c; for c in "${counters[@]}"; do printf '%s=%s ' "$c" "$(hw_counter "$c")"; done; }
before=$(snap)

if is_client; then
	# Delay 1 ms on every packet, 1% lost, and a quarter sent at once
	# (ahead of delayed ones): losses and reordering in both the
	# requests and the ACKs this node sends.
	tc qdisc add dev eth0 root netem delay 1ms loss 1% reorder 25% 50%
	tc qdisc show dev eth0
fi
barrier netem

port=18600
run_pp() { # SIZE ITERS
	local args=(-d "$RXE_DEV" -g "$gidx" -s "$1" -n "$2" -c -p "$port")
	local log=$OUT_DIR/pp-$1.log rc=0
	if is_server; then
		timeout 600 ibv_rc_pingpong "${args[@]}" >"$log" 2>&1 &
		local srv=$!
		wait_listen "$port"
		barrier "pp-$1"
		wait "$srv" || rc=$?
	else
		barrier "pp-$1"
		timeout 600 ibv_rc_pingpong "${args[@]}" "$(server_ip)" >"$log" 2>&1 || rc=$?
	fi
	cat "$log"
	[ "$rc" = 0 ] || fail "ibv_rc_pingpong -s $1 -n $2 on the lossy link: exit $rc"
	port=$((port + 1))
	barrier "pp-$1-done"
}

# 64 KiB messages: 64 packets each, so most messages see a loss or a
# reordering somewhere; MIB * 16 of them move MIB MiB each way.
run_pp 65536 $((mib * 16))
# A few 1 MiB messages: go-back-N over long messages.
run_pp 1048576 8

# Reads: the responder's read replay under loss.
rlog=$OUT_DIR/read.log
rc=0
if is_server; then
	timeout 600 ib_read_bw -d "$RXE_DEV" -F -x "$gidx" -p $port -s 1048576 -n 16 >"$rlog" 2>&1 &
	srv=$!
	wait_listen $port
	barrier read
	wait "$srv" || rc=$?
else
	barrier read
	timeout 600 ib_read_bw -d "$RXE_DEV" -F -x "$gidx" -p $port -s 1048576 -n 16 "$(server_ip)" >"$rlog" 2>&1 || rc=$?
fi
cat "$rlog"
[ "$rc" = 0 ] || fail "ib_read_bw on the lossy link: exit $rc"
barrier read-done

if is_client; then
	tc qdisc del dev eth0 root
fi
after=$(snap)
note "counters before: $before"
note "counters after:  $after"
delta() { # NAME
	local b a
	b=$(sed -n "s/.*\b$1=\([0-9]*\).*/\1/p" <<<"$before")
	a=$(sed -n "s/.*\b$1=\([0-9]*\).*/\1/p" <<<"$after")
	echo $((a - b))
}
retries=$(delta completer_retry_err)
seq=$(delta rcvd_seq_err)
oos=$(delta out_of_seq_request)
dups=$(delta duplicate_request)
exceeded=$(delta retry_exceeded_err)
note "recovery: completer_retry_err +$retries, rcvd_seq_err +$seq, out_of_seq_request +$oos, duplicate_request +$dups"
publish "recovery.$NODE_INDEX" "$((retries + seq + oos + dups))"
((exceeded == 0)) || fail "retry_exceeded_err rose by $exceeded"
barrier counted
total=$(($(fetch recovery.1) + $(fetch recovery.2)))
((total > 0)) || fail "no retry, sequence-error or duplicate counter moved: was anything lost?"

# The devices still move data on the clean link.
run_pp 4096 100
note "loss: ok ($mib MiB each way with 1% loss and reordering)"
