#!/usr/bin/env bash
# MR and MW verbs (registration, access rules, keys, rereg, windows, a
# reg/dereg loop watching slab memory) on one node; passes on rs and c.
# On the debug kernel, kmemleak must find nothing of the driver's or of
# pinned user memory afterwards.
#
#   qemu-test/run --nodes 1 --drivers rs qemu-test/tests/verbs_mr.sh
set -euo pipefail
. "$REPO/qemu-test/lib.sh"

note "verbs_mr on $RXE_DEV ($RXE_DRIVER)"
status=0
RXE_DEV=$RXE_DEV /usr/bin/python3 "$REPO/qemu-test/tests/verbs_mr.py" >"$OUT_DIR/verbs_mr.txt" 2>&1 || status=$?
cat "$OUT_DIR/verbs_mr.txt"
((status == 0)) || fail "verbs_mr.py failed (status $status)"

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
	if grep -E 'rdma_rxe|ib_umem|rxe_' "$OUT_DIR/kmemleak.txt" >/dev/null; then
		cat "$OUT_DIR/kmemleak.txt"
		fail "kmemleak reports driver or umem objects"
	fi
	note "kmemleak: nothing of the driver ($(grep -c '^unreferenced' "$OUT_DIR/kmemleak.txt" || true) other reports)"
fi
echo "verbs_mr: ok"
