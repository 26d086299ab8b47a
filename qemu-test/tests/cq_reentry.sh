#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Issue 11, defect 8: a kernel consumer's CQ completion handler may call
# back into the QP whose completion it handles. The test client
# qemu-test/selftest/cq_reentry.c (built by qemu-test/run) runs RC (two QPs
# connected over the port's own GID) and UD loopback chains in which every
# handler run posts a receive and a send on its own QP and finally moves
# that QP to ERR (ib_modify_qp), whose flush comes back through the same
# handler. On rxe_rs the handler also polls and re-arms its own CQ; on
# rdma_rxe it cannot (rdma_rxe calls handlers under its CQ lock, which
# ib_poll_cq and ib_req_notify_cq take), so there this script loads it with
# poll=0 and the CQ is polled and re-armed from process context.
# Before the fix, receive handlers ran under the QP's responder lock, so the
# handler's modify_qp deadlocked on it (lockdep: recursive locking).
#
#   qemu-test/run --debug --nodes 1 --drivers rs qemu-test/tests/cq_reentry.sh
set -euo pipefail
. "$REPO/qemu-test/lib.sh"

ko=${RXE_TESTMOD_DIR:?no test modules (qemu-test/run builds them)}/cq_reentry.ko
[ -f "$ko" ] || fail "no $ko"
poll=1
[ "$RXE_DRIVER" = rs ] || poll=0
kmemleak_clear

start=$SECONDS
rc=0
insmod "$ko" devname="$RXE_DEV" poll="$poll" || rc=$?
log=$(dmesg | grep 'cq_reentry: ' || true)
echo "$log"
# insmod fails with the test's error when it failed, and leaves nothing
# loaded; after a pass the module has nothing left to do.
if ((rc == 0)); then
	rmmod cq_reentry
fi
((rc == 0)) || fail "cq_reentry failed (insmod status $rc)"
[ "$(grep -c ': PASS ' <<<"$log")" = 2 ] || fail "want RC and UD PASS lines"
sleep 5
kmemleak_scan || fail "kmemleak reports leaks"
note "cq_reentry ok (poll in handler $poll) in $((SECONDS - start)) s"
