#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# What an idle RDMA driver costs TCP. Node 1 sends MIB MiB (default 64) of
# TCP to node 2 with iperf3: after a warm-up, twice with the driver loaded
# and rxe0 on both nodes (no RDMA traffic), then twice with rxe0 deleted and
# the driver unloaded. Around each transfer each node zeroes and dumps the
# tbprof plugin's counts (labels tcp-loaded, tcp-loaded2, tcp-unloaded,
# tcp-unloaded2), from which
# scripts/tcp-idle computes the kernel instructions per MiB on each side.
#
#   qemu-test/run --nodes 2 --drivers rs,rs qemu-test/guest/tcp_idle.sh PREFIX [MIB]
#
# PREFIX is the plugin's control path in the guest, as for bench.sh --insns
# (scripts/tcp-idle passes /run/rxe/node/out/tbprof and loads the plugin).
set -euo pipefail
. "$REPO/qemu-test/lib/lib.sh"

prefix=${1:?usage: tcp_idle.sh PREFIX [MIB]}
mib=${2:-64}
port=5301
[[ $mib =~ ^[1-9][0-9]*$ ]] || fail "MIB must be a positive number"
((NODE_COUNT == 2)) || fail "needs two nodes"

# The plugin acts on its control files every 2^18 blocks and removes them:
# keep the vCPU busy with builtins until the file is gone (bounded).
spin_until_gone() { # FILE
	local i
	for ((i = 0; i < 2000000; i++)); do
		((i % 1000)) || [ -e "$1" ] || return 0
	done
	fail "$1 still there: is the tbprof plugin loaded (scripts/tcp-idle)?"
}
control() { # reset|dump [LABEL]
	printf '%s\n' "${2-}" >"$prefix.$1.tmp"
	mv "$prefix.$1.tmp" "$prefix.$1"
	spin_until_gone "$prefix.$1"
}

# The symbols go beside the dumps, for the report.
cat /proc/kallsyms >"${prefix%/*}/kallsyms"
grep -i ' t ' "${prefix%/*}/kallsyms" >"$prefix.syms.tmp"
mv "$prefix.syms.tmp" "$prefix.syms"
spin_until_gone "$prefix.syms"

transfer() { # LABEL
	local pid
	if is_server; then
		iperf3 -s -1 -p "$port" >"$OUT_DIR/iperf3-$1.server.log" 2>&1 &
		pid=$!
		wait_listen "$port" 60
	fi
	barrier "ready-$1"
	control reset
	barrier "counting-$1"
	if is_client; then
		iperf3 -c "$(server_ip)" -p "$port" -n "${mib}M" -f M >"$OUT_DIR/iperf3-$1.client.log" 2>&1 ||
			fail "iperf3 client ($1): $(tail -3 "$OUT_DIR/iperf3-$1.client.log")"
	else
		wait "$pid" || fail "iperf3 server ($1): $(tail -3 "$OUT_DIR/iperf3-$1.server.log")"
	fi
	barrier "moved-$1"
	control dump "tcp-$1"
	note "tcp-$1: $mib MiB moved, counts dumped"
}

[ -d "/sys/class/infiniband/$RXE_DEV" ] || fail "$RXE_DEV missing at the start"
# A first transfer warms TCP and the page cache up; its counts are not used.
transfer warmup
transfer loaded
transfer loaded2
step rdma link delete "$RXE_DEV"
case "$RXE_DRIVER" in
rs) step rmmod rdma_rxe_rs ;;
c) step rmmod rdma_rxe ;;
esac
[ ! -d /sys/module/rdma_rxe_rs ] && [ ! -d /sys/module/rdma_rxe ] || fail "the driver is still loaded"
transfer unloaded
transfer unloaded2
echo "tcp-idle ok"
