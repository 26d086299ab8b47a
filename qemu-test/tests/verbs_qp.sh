#!/usr/bin/env bash
# QP verbs on one node (types, capabilities, the state machine with its
# attributes, query, destroy order, SRQ, a create/destroy loop watching
# memory) plus the GSI QP the MAD layer creates; passes on rs and c. On the
# debug kernel kmemleak must find nothing of the driver's afterwards.
#
#   qemu-test/run --nodes 1 --drivers rs qemu-test/tests/verbs_qp.sh
#   qemu-test/run ... qemu-test/tests/verbs_qp.sh 1000   (a shorter loop)
set -euo pipefail
. "$REPO/qemu-test/lib.sh"

note "verbs_qp on $RXE_DEV ($RXE_DRIVER)"

# The MAD layer creates QP1 at registration and brings it to RTS.
rdma res show qp link "$RXE_DEV/1" | tee "$OUT_DIR/res-qp.txt"
grep -Eq 'lqpn 1 type GSI state RTS' "$OUT_DIR/res-qp.txt" || fail "no GSI QP in RTS on $RXE_DEV"

status=0
RXE_DEV=$RXE_DEV QP_LOOPS=${1:-10000} RXE_FLAVOUR=${RXE_FLAVOUR:-} /usr/bin/python3 "$REPO/qemu-test/tests/verbs_qp.py" \
	>"$OUT_DIR/verbs_qp.txt" 2>&1 || status=$?
cat "$OUT_DIR/verbs_qp.txt"
((status == 0)) || fail "verbs_qp.py failed (status $status)"

# Only the GSI QP is left.
n=$(rdma res show qp link "$RXE_DEV/1" | grep -c lqpn || true)
((n == 1)) || fail "$n QPs left on $RXE_DEV after the test"

leaks=/sys/kernel/debug/kmemleak
if [ ! -e "$leaks" ] && [ -d /sys/kernel/debug ]; then
	mount -t debugfs none /sys/kernel/debug 2>/dev/null || true
fi
if [ -w "$leaks" ]; then
	# Objects younger than a few seconds are not reported yet.
	sleep 6
	echo scan >"$leaks"
	echo scan >"$leaks"
	cp "$leaks" "$OUT_DIR/kmemleak.txt"
	if grep -E 'rdma_rxe|rxe_|ib_uverbs|ib_core' "$OUT_DIR/kmemleak.txt" >/dev/null; then
		cat "$OUT_DIR/kmemleak.txt"
		fail "kmemleak reports driver objects"
	fi
	note "kmemleak: nothing of the driver ($(grep -c '^unreferenced' "$OUT_DIR/kmemleak.txt" || true) other reports)"
fi
echo "verbs_qp: ok"
