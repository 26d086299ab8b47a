#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The task and timer wrappers' load-time self-test (rxe/selftest.rs) passes.
# Only a module built with the self-test has one, so build it that way:
#
#   RXE_RS_SELFTEST=1 qemu-test/run --nodes 1 --debug qemu-test/tests/selftest/module.sh
#
# (the next plain build of the module drops the self-test again).
set -euo pipefail
. "$REPO/qemu-test/lib/lib.sh"

[ "$RXE_DRIVER" = rs ] || fail "the self-test is part of the rs module only"
log=$(dmesg | grep -E 'rdma_rxe_rs: selftest: ' || true)
[ -n "$log" ] || fail "no self-test verdict in the kernel log (module built without RXE_RS_SELFTEST=1?)"
echo "$log"
if grep -q FAILED <<<"$log"; then
	fail "self-test failed"
fi
note "module self-test ok"
