#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# RC recovery on a lossy link: one node drops 1% of what it sends and
# reorders some of it (tc netem), then MIB MiB (default 100) each of RC
# SEND and RDMA WRITE and half that of RDMA READ must come through, and the
# data-integrity test (every byte checked) must pass on the same link.
# Afterwards the retry and sequence-error counters must show that recovery
# happened, and both devices must still work on the clean link.
#
#   qemu-test/run --drivers rs,c qemu-test/tests/datapath/loss.sh [MIB [TIMEOUT [LOSSY [PROFILE]]]]
#
# TIMEOUT is the local ACK timeout exponent given to perftest (-u; the
# timeout is 4.096 us << TIMEOUT), 10 by default. LOSSY is the node whose
# egress is lossy: 1 (the default) spoils the requests of the perftest
# client (node 1), 2 spoils the ACKs and read responses of the server,
# "both" spoils both directions. PROFILE is "light" (the default: 1% loss,
# 2% reordering) or "heavy" (10% loss, 5% reordering, 1%
# duplication), where the integrity test runs LOSS_INTEGRITY_OPS (default
# 2000, about 100 MiB every byte of which is checked) operations; `make
# loss-heavy` runs the heavy profile rs-rs and rs-c in both directions.
set -euo pipefail
# shellcheck source=qemu-test/lib/lib.sh
. "$REPO/qemu-test/lib/lib.sh"

mib=${1:-100}
ack_timeout=${2:-10}
lossy=${3:-1}
profile=${4:-light}
case $profile in
light) netem=(delay 1ms reorder 2% loss 1%) what="1% loss and reordering" ;;
heavy)
	netem=(delay 1ms reorder 5% duplicate 1% loss 10%)
	what="10% loss, 5% reordering, 1% duplication"
	: "${LOSS_INTEGRITY_OPS:=2000}"
	;;
*) fail "PROFILE is light or heavy, not '$profile'" ;;
esac
is_lossy() { [ "$lossy" = both ] || [ "$NODE_INDEX" = "$lossy" ]; }
gidx=$(roce_gid_index v4) || fail "no IPv4 RoCE v2 GID on $RXE_DEV"
counters=(sent_pkts rcvd_pkts completer_retry_err rcvd_seq_err out_of_seq_request duplicate_request retry_exceeded_err)
snap() { local c; for c in "${counters[@]}"; do printf '%s=%s ' "$c" "$(hw_counter "$c")"; done; }
before=$(snap)

if is_lossy; then
	# Every packet waits 1 ms except 2% (5%) that go at once, ahead of
	# the others; 1% (10%) are lost (and 1% duplicated). Node 1 is the
	# requester below. Each program ends with a handshake on its TCP
	# connection, so a peer never leaves while the other still recovers
	# its last exchange.
	tc qdisc add dev eth0 root netem "${netem[@]}"
	tc qdisc show dev eth0
fi
barrier netem

port=18600
# perf PROGRAM OPTIONS...: one perftest program, node 2 serving.
perf() {
	local log=$OUT_DIR/$1-$port.log rc=0
	# A 4 ms local ACK timeout (-u 10) instead of 67 ms by default: on a
	# LAN that is plenty, and every loss of a retransmission costs one
	# timeout.
	# Line-buffered, so a run the timeout kills still shows how far it got.
	local cmd=(stdbuf -oL "$@" -d "$RXE_DEV" -F -x "$gidx" -u "$ack_timeout" -p "$port")
	if is_server; then
		timeout 900 "${cmd[@]}" >"$log" 2>&1 &
		local srv=$!
		wait_listen "$port"
		barrier "perf-$port"
		wait "$srv" || rc=$?
	else
		barrier "perf-$port"
		timeout 900 "${cmd[@]}" "$(server_ip)" >"$log" 2>&1 || rc=$?
	fi
	grep -E '^ *[0-9]+ +[0-9]+ +[0-9.]+' "$log" || cat "$log"
	if [ "$rc" != 0 ]; then
		cat "$log"
		# Where the QPs stand, for the post-mortem.
		rdma -d res show qp || true
		note "counters: $(snap)"
		fail "$* on the lossy link: exit $rc"
	fi
	port=$((port + 1))
	barrier "perf-$port-done"
}

# MIB MiB each of SEND, RDMA WRITE and RDMA READ.
perf ib_send_bw -s 65536 -n $((mib * 16))
# (perftest wants at least 5 iterations.) Under the heavy profile a 1 MiB
# message (1024 packets) loses some 100 of them, each of which has a
# go-back-N peer (rdma_rxe) resend the rest of the message: more than the
# program's 900 s for MIB/2 of them. 64 KiB messages keep the same volume
# inside it.
if [ "$profile" = heavy ]; then
	perf ib_write_bw -s 65536 -n $((mib * 16))
	perf ib_read_bw -s 65536 -n $((mib * 8))
else
	perf ib_write_bw -s 1048576 -n $((mib < 5 ? 5 : mib))
	perf ib_read_bw -s 1048576 -n $((mib < 10 ? 5 : (mib + 1) / 2))
fi
# Every byte checked: the data-integrity test on the same link.
integrity=$REPO/qemu-test/tests/datapath/integrity.py
if [ -x "$integrity" ]; then
	# rdma_rxe's responder replays a duplicate RDMA READ that follows a
	# zero-length request without its MR: a WARN in rxe_mr_copy and a NAK
	# (docs/known-issues.md). Heavy loss duplicates enough requests to hit
	# it, so with rdma_rxe on either node that run has no empty operations.
	publish "loss-driver.node$NODE_INDEX" "$RXE_DRIVER"
	min_size=0
	if [ "$profile" = heavy ]; then
		for ((n = 1; n <= NODE_COUNT; n++)); do
			[ "$(fetch "loss-driver.node$n")" = rs ] || min_size=1
		done
	fi
	INTEGRITY_MIN_SIZE=$min_size "$integrity" "${LOSS_INTEGRITY_OPS:-60}" ||
		fail "integrity.py on the lossy link"
fi

if is_lossy; then
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
perf ib_write_bw -s 65536 -n 100
note "loss: ok ($mib MiB of SEND and of RDMA WRITE, half that of READ, and integrity, with $what; $SECONDS s)"
