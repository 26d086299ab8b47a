#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Diagnosis: ROUNDS rounds, in one boot, of a multicast sender on node 1
# (mckey, or mcast_cm.py with SENDER=cm) and an mckey receiver on every
# other node, to 239.1.1.7; counters printed after each round.
#
#   qemu-test/run --nodes 3 --drivers c,rs,c --dump qemu-test/tests/mckey_repro.sh [ROUNDS] [mckey|cm]
set -uo pipefail
. "$REPO/qemu-test/lib.sh"
rounds=${1:-4}
sender=${2:-mckey}
count=20
counters() {
	local c out=""
	for c in sent_pkts rcvd_pkts send_err qkey_violation bad_pkey; do
		out+=" $c=$(hw_counter $c)"
	done
	echo "node$NODE_INDEX $1:$out"
	ip -s link show eth0 | sed -n '4p;6p' | tr -s ' ' | tr '\n' ' '
	echo
	nstat -az 2>/dev/null | grep -E "^(UdpInDatagrams|UdpNoPorts|UdpInErrors|IpInAddrErrors|IpInDiscards|IpExtInMcastPkts|IpExtOutMcastPkts) " | tr -s ' ' | cut -d' ' -f1,2 | tr '\n' ' '
	echo
}
ip maddr show dev eth0
for r in $(seq 1 "$rounds"); do
	log=$OUT_DIR/mckey-$sender-$r.log
	if ((NODE_INDEX != 1)); then
		timeout 45 stdbuf -oL mckey -m 239.1.1.7 -b "$NODE_IP" -C $count >"$log" 2>&1 &
		pid=$!
		wait_until 30 grep -q "^mckey: joined" "$log" || cat "$log"
		barrier "j$r"
		wait "$pid"
		rc=$?
		note "round $r receiver rc=$rc: $(grep -c . "$log") lines"
		grep -E "complete|status" "$log"
	else
		barrier "j$r"
		sleep 1
		if [ "$sender" = cm ]; then
			timeout 60 /usr/bin/python3 "$REPO/qemu-test/tests/mcast_cm.py" send 239.1.1.7 "$NODE_IP" $count r$r >"$log" 2>&1
		else
			timeout 60 stdbuf -oL mckey -m 239.1.1.7 -s -b "$NODE_IP" -C $count >"$log" 2>&1
		fi
		note "round $r sender rc=$?"
		cat "$log"
	fi
	barrier "d$r" 120
	counters "round $r done"
done
ip maddr show dev eth0
