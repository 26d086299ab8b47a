#!/bin/sh
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
# rdma-core's ODP tests (tests.test_odp, RUNS times, 1 by default: the
# suite draws random sizes) against this node's rxe device. The whole suite
# (with these tests) also runs in rdma_core_suite.py on the plain kernel;
# this runs them on the debug kernel:
#   qemu-test/run --nodes 1 --drivers rs qemu-test/tests/verbs/odp_suite.sh [RUNS]
set -e
T=$(mktemp -d)
# The suite unpacked as rdma_core_suite.py unpacks it.
/usr/bin/python3 -B -c 'import sys; sys.path.insert(0, sys.argv[1]); import rdma_core_suite; rdma_core_suite.unpack(sys.argv[2])' \
	"$REPO/qemu-test/tests/verbs" "$T"
cd "$T/tests"
echo "driver $RXE_DRIVER dev $RXE_DEV"
cat /sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages 2>/dev/null || true
ibv_devinfo -v -d "$RXE_DEV" | grep -i -A12 odp || true
runs=${1:-1}
i=0
while [ "$i" -lt "$runs" ]; do
  i=$((i + 1))
  timeout 600 /usr/bin/python3 run_tests.py --dev "$RXE_DEV" -v tests.test_odp 2>&1 | tee -a "$OUT_DIR/odp.log"
done
grep -E "^(FAILED|OK)" "$OUT_DIR/odp.log"
! grep -qE "^FAILED" "$OUT_DIR/odp.log"
