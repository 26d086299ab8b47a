#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Diagnosis: ROUNDS rounds of one mckey sender on node 1 and one mckey
# receiver on node 2 in one boot, counters printed after each.
set -uo pipefail
. "$REPO/qemu-test/lib.sh"
rounds=${1:-4}
count=20
counters() {
	local c out=""
	for c in sent_pkts rcvd_pkts send_err rcvd_seq_err qkey_violation bad_pkey; do
		out+=" $c=$(hw_counter $c)"
	done
	echo "node$NODE_INDEX $1:$out"
	ip -s link show eth0 | sed -n '3,6p'
	ip maddr show dev eth0 | tr '\n' ' '; echo
	grep -i mc /proc/net/dev_mcast 2>/dev/null; cat /proc/net/dev_mcast
	cat /proc/net/igmp
	nstat -az 2>/dev/null | grep -E "Udp(In|No|InErr|RcvbufErr)|IpInAddrErrors|IpInDiscards|InMcast|IpExtInNoRoutes" | tr -s ' ' | tr '\n' ' '; echo
}
for r in $(seq 1 "$rounds"); do
	log=$OUT_DIR/mckey-$r.log
	if ((NODE_INDEX != 1)); then
		timeout 45 stdbuf -oL mckey -m 239.1.1.7 -b "$NODE_IP" -C $count >"$log" 2>&1 &
		pid=$!
		wait_until 30 grep -q "^mckey: joined" "$log" || { cat "$log"; }
		counters "round $r joined"
		barrier "j$r"
		wait "$pid"; rc=$?
		note "round $r receiver rc=$rc"
		cat "$log"
	else
		barrier "j$r"
		sleep 1
		timeout 60 stdbuf -oL mckey -m 239.1.1.7 -s -b "$NODE_IP" -C $count >"$log" 2>&1
		note "round $r sender rc=$?"
		cat "$log"
	fi
	barrier "d$r" 120
	counters "round $r done"
done
dmesg | tail -20
