#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The guest half of a host-time profile (qemu-test/tbprof, README "Host-time
# profile"): on both nodes, zero the plugin's counts, run one perftest
# program as perftest.sh does (node 2 serves, node 1 is the client), then
# have the counts written to $OUT_DIR/tbprof.0.txt beside the guest's
# /proc/kallsyms. Run it with the plugin loaded:
#
#   RXE_RS_QEMU_EXTRA="-plugin build/tbprof.so,out=@DIR@/out/tbprof" \
#       qemu-test/run --drivers rs,rs --keep qemu-test/tests/tbprof.sh ib_write_bw -s 4096 -n 6000
#   scripts/tbprof-report symbols RUN/node1/out
#
# shellcheck source=qemu-test/lib.sh
. "$REPO/qemu-test/lib.sh"

# The plugin looks for its control files every 2^18 blocks: keep the vCPU
# busy until it has.
spin() { local i; for ((i = 0; i < 300000; i++)); do :; done; }

cat /proc/kallsyms >"$OUT_DIR/kallsyms"
: >"$OUT_DIR/tbprof.reset"
spin
rc=0
bash "$REPO/qemu-test/tests/perftest.sh" "$@" || rc=$?
: >"$OUT_DIR/tbprof.dump"
spin
spin
[ -f "$OUT_DIR/tbprof.0.txt" ] || echo "tbprof: no counts written (is the plugin loaded? see RXE_RS_QEMU_EXTRA)" >&2
exit "$rc"
