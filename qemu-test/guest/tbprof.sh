#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The guest half of a host-time profile (qemu-test/tbprof, docs/benchmark.md,
# "Profiles"): on both nodes, zero the plugin's counts, run one perftest
# program as perftest.sh does (node 2 serves, node 1 is the client), then
# have the counts written to $OUT_DIR/tbprof.0.txt beside the guest's
# /proc/kallsyms. Run it with the plugin loaded:
#
#   RXE_RS_QEMU_EXTRA="-plugin build/tbprof.so,out=@DIR@/out/tbprof" \
#       qemu-test/run --drivers rs,rs --keep qemu-test/guest/tbprof.sh ib_write_bw -s 4096 -n 6000
#   scripts/tbprof-report symbols RUN/node1/out
#
# shellcheck source=qemu-test/lib/lib.sh
. "$REPO/qemu-test/lib/lib.sh"

# The plugin looks for its control files every 2^18 blocks and removes
# each one it acts on: keep the vCPU busy until FILE is gone (bounded).
# The loop's own blocks fall into the profile (after a reset, before a
# dump): it stops as soon as the plugin has acted, and a bash loop of
# builtins makes no system calls.
spin_until_gone() { # FILE
	local i
	for ((i = 0; i < 2000000; i++)); do
		((i % 1000)) || [ -e "$1" ] || return 0
	done
}

# The port counters before and after (tbprof-report split divides by the
# packets sent and received).
counters() { # FILE
	local f
	for f in /sys/class/infiniband/"$RXE_DEV"/ports/1/hw_counters/*; do
		echo "${f##*/} $(cat "$f")"
	done >"$1"
}

cat /proc/kallsyms >"$OUT_DIR/kallsyms"
counters "$OUT_DIR/hw_counters.before"
: >"$OUT_DIR/tbprof.reset.tmp"
mv "$OUT_DIR/tbprof.reset.tmp" "$OUT_DIR/tbprof.reset"
spin_until_gone "$OUT_DIR/tbprof.reset"
rc=0
bash "$REPO/qemu-test/guest/perftest.sh" "$@" || rc=$?
counters "$OUT_DIR/hw_counters.after"
: >"$OUT_DIR/tbprof.dump.tmp"
mv "$OUT_DIR/tbprof.dump.tmp" "$OUT_DIR/tbprof.dump"
spin_until_gone "$OUT_DIR/tbprof.dump"
[ -f "$OUT_DIR/tbprof.0.txt" ] || echo "tbprof: no counts written (is the plugin loaded? see RXE_RS_QEMU_EXTRA)" >&2
exit "$rc"
