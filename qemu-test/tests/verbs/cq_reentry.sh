#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# A kernel consumer's CQ completion handler may call
# back into the QP whose completion it handles. The test client
# qemu-test/testmod/cq_reentry.c (built by qemu-test/run) runs RC (two QPs
# connected over the port's own GID) and UD loopback chains in which every
# handler run posts a receive and a send on its own QP and finally moves
# that QP to ERR (ib_modify_qp), whose flush comes back through the same
# handler; the handler also polls and re-arms its own CQ.
# Before 7997f3e receive handlers ran under the QP's responder lock, so the
# handler's modify_qp deadlocked on it (lockdep: recursive locking); until
# the CQ producers stopped taking the CQ link, a handler (which runs under
# the link) that modified its QP inverted resp/req -> rxe_cq_link (lockdep:
# circular dependency).
#
# rdma_rxe (6.12) fails this test, so on a c node it is skipped unless the
# argument is "c": rdma_rxe calls handlers under its CQ lock (a handler may
# not poll or re-arm its own CQ; there the module runs with poll=0,
# polling and re-arming from process context), and it flushes a
# receive queue with the QP's state_lock held, so a handler that posts a
# receive to that QP deadlocks (lockdep: circular state_lock/cq_lock on RC;
# the UD chain hangs).
#
#   qemu-test/run --debug --nodes 1 --drivers rs qemu-test/tests/verbs/cq_reentry.sh
#   qemu-test/run --debug --nodes 1 --drivers c qemu-test/tests/verbs/cq_reentry.sh c
set -euo pipefail
. "$REPO/qemu-test/lib/lib.sh"

if [ "$RXE_DRIVER" != rs ] && [ "${1:-}" != c ]; then
	note "SKIP on rdma_rxe: its handlers deadlock on re-entry (see the header; argument c runs it)"
	exit 0
fi

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
kmemleak_check
note "cq_reentry ok (poll in handler $poll) in $((SECONDS - start)) s"
