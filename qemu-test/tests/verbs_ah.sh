#!/usr/bin/env bash
# AH verbs, UD sends through AHs and multicast attach/detach (with the
# netdev's multicast filter) on one node; passes on rs and c. On the debug
# kernel kmemleak must find nothing of the driver's afterwards.
#
#   qemu-test/run --nodes 1 --drivers rs qemu-test/tests/verbs_ah.sh
#   qemu-test/run ... qemu-test/tests/verbs_ah.sh quick   (without the 8192-group limit)
set -euo pipefail
. "$REPO/qemu-test/lib.sh"

note "verbs_ah on $RXE_DEV ($RXE_DRIVER)"
groups=1
[ "${1:-}" = quick ] && groups=0
status=0
RXE_DEV=$RXE_DEV RXE_DRIVER=$RXE_DRIVER MCAST_GROUPS=$groups /usr/bin/python3 "$REPO/qemu-test/tests/verbs_ah.py" \
	>"$OUT_DIR/verbs_ah.txt" 2>&1 || status=$?
cat "$OUT_DIR/verbs_ah.txt"
((status == 0)) || fail "verbs_ah.py failed (status $status)"

leaks=/sys/kernel/debug/kmemleak
if [ ! -e "$leaks" ] && [ -d /sys/kernel/debug ]; then
	mount -t debugfs none /sys/kernel/debug 2>/dev/null || true
fi
if [ -w "$leaks" ]; then
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
echo "verbs_ah: ok"
