#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The benchmark's guest half: run every row once for the driver this boot
# loaded, node 2 serving and node 1 the client, and append one JSON line per
# row to RESULTS (the client writes it). scripts/bench boots rs,rs and c,c
# alternately and runs this in each boot; run it by hand with e.g.
#
#   qemu-test/run --drivers rs qemu-test/guest/bench.sh --rows 'write_bw_65536|tcp_lat'
#
# Options:
#   --results FILE    JSON lines go here (default $OUT_DIR/bench.jsonl, which
#                     the host finds in the run directory, nodeN/out/; the
#                     host's /tmp, /run/host-tmp here, is read-only)
#   --rep N           repetition number, recorded in each line (default 1)
#   --rows REGEX      only rows whose id matches REGEX (grep -E)
#   --scale F         multiply every iteration count / duration by F (default 1)
#   --no-tcp          skip the TCP rows
#   --profile DIR     perf record -a -g on both nodes during each row, and save
#                     `perf report` of each to DIR/<row>-node<N>.txt
#   --row-timeout S   a row's programs are killed after S seconds (default 120)
#   --insns PREFIX    guest instruction counts per row (scripts/insns): the
#                     tbprof plugin is loaded with out=PREFIX (a guest path);
#                     its attribution is switched on with the guest's
#                     kallsyms, its counts are zeroed on both nodes before
#                     each row and dumped after it to PREFIX.<row>.txt,
#                     beside the port counters before and after in
#                     $OUT_DIR/insns/<row>.hwc.{before,after}. Every perftest
#                     row runs twice: first as <row>-base with 5 iterations
#                     (perftest's least), then in full; the difference is
#                     the packets' cost without the programs' set-up and
#                     teardown. No TCP rows.
#
# The link's MTU is the run's (qemu-test/run --mtu, RXE_MTU): both nodes
# check at the start that eth0 has it and that the rdma device reports the
# active MTU the drivers derive from it (4096 at 9000, 1024 at 1500); every
# line records the client's eth0 MTU (read again per row) as "mtu" and the
# device's as "active_mtu", and a row run at another MTU than the one asked
# for, or with another active MTU, fails.
#
# Per row, both nodes read /proc/stat before and after: the non-idle jiffies
# (user+nice+system+irq+softirq+steal) and the kernel part of them
# (system+irq+softirq) go into the line as seconds, for the client (cli_*)
# and the server (srv_*). A row that fails gives a line with "ok": false, the
# command and the end of what it printed, and the run goes on.
#
# In the perftest bandwidth rows read at the client (kind bw: the RC rows,
# message rate, atomic bandwidth) the server also samples its CPU and its
# link's byte counters (received plus sent) every 0.1 s while its program
# runs; other rows poll every 0.25 s, unsampled. The transfer is the span
# from the first to the last interval that moved at least a tenth of the
# row's peak rate; its non-idle CPU and bytes (srv_xfer_cpu_s,
# srv_xfer_bytes, against srv_link_bytes over the whole row) give the
# server's CPU per byte while data moves, without the programs' start-up
# (buffer fill, registration, connection), which the whole-row figures
# include.
set -euo pipefail
# shellcheck source=qemu-test/lib/lib.sh
. "$REPO/qemu-test/lib/lib.sh"

results=$OUT_DIR/bench.jsonl
rep=1
rows_re=.
scale=1
tcp=1
profile=
row_timeout=120
insns=
while (($#)); do
	case "$1" in
	--results) results=$2; shift 2 ;;
	--rep) rep=$2; shift 2 ;;
	--rows) rows_re=$2; shift 2 ;;
	--scale) scale=$2; shift 2 ;;
	--no-tcp) tcp=0; shift ;;
	--profile) profile=$2; shift 2 ;;
	--row-timeout) row_timeout=$2; shift 2 ;;
	--insns) insns=$2; tcp=0; shift 2 ;;
	*) fail "unknown option $1" ;;
	esac
done
((NODE_COUNT == 2)) || fail "bench.sh runs on two nodes"
logs=$OUT_DIR/bench-logs
mkdir -p "$logs"
[ -z "$profile" ] || mkdir -p "$profile"
is_client && mkdir -p "$(dirname "$results")"

# perftest's default GID 0 is the link-local IPv6 one: use the RoCE v2 GID
# of this node's IPv4 address.
gidx=$(roce_gid_index v4) || fail "no IPv4 RoCE v2 GID on $RXE_DEV"

# The MTUs (see the top). Both drivers take the largest IB MTU that fits
# the netdev MTU less 80 bytes of headers (at least 256).
want_mtu=${RXE_MTU:-1500}
want_active=256
for m in 4096 2048 1024 512; do
	if ((want_mtu - 80 >= m)); then want_active=$m && break; fi
done
read -r my_mtu </sys/class/net/eth0/mtu
my_active=$(ibv_devinfo -d "$RXE_DEV" 2>/dev/null | awk '$1 == "active_mtu:" { print $2; exit }')
my_active=${my_active:-0}

# Everything below runs between and around the measured programs, on one
# emulated CPU: it sticks to bash builtins (no sleep, cat, awk per step).
nap_fifo=$(mktemp -u /tmp/bench-nap.XXXXXX)
mkfifo "$nap_fifo"
exec {nap_fd}<>"$nap_fifo"
nap() { read -r -t "$1" -u "$nap_fd" _ || true; }

# cpu_jiffies VAR: "NONIDLE KERNEL" jiffies from the first line of /proc/stat.
cpu_jiffies() {
	local _cpu user nice system _idle _iowait irq softirq steal _rest
	read -r _cpu user nice system _idle _iowait irq softirq steal _rest </proc/stat
	printf -v "$1" '%s %s' $((user + nice + system + irq + softirq + steal)) $((system + irq + softirq))
}
hz=$(getconf CLK_TCK)
# secs VAR JIFFIES: as seconds with two decimals.
secs() {
	local c=$(($2 * 100 / hz))
	printf -v "$1" '%d.%02d' $((c / 100)) $((c % 100))
}
# uptime_cs VAR: guest uptime in centiseconds.
uptime_cs() {
	local up _rest
	read -r up _rest </proc/uptime
	up=${up/./}
	printf -v "$1" '%d' $((10#$up))
}
# link_bytes VAR: bytes eth0 received and sent so far.
link_bytes() {
	local _rx _tx
	read -r _rx </sys/class/net/eth0/statistics/rx_bytes
	read -r _tx </sys/class/net/eth0/statistics/tx_bytes
	printf -v "$1" '%d' $((_rx + _tx))
}
# xfer_sample: appends "UPTIME_CS NONIDLE LINK_BYTES" to the array xfer.
xfer_sample() {
	local _t _c _b
	uptime_cs _t
	cpu_jiffies _c
	link_bytes _b
	xfer+=("$_t ${_c%% *} $_b")
}
# xfer_sum VAR: "CPU_JIFFIES BYTES ROW_BYTES" of the transfer in xfer (see
# the top): from the first to the last interval whose rate was at least a
# tenth of the highest one, and the bytes of the whole sampled span.
xfer_sum() {
	local -a t=() c=() b=() rate=()
	local i=0 n=${#xfer[@]} s peak=0 first=0 last=0
	for s in "${xfer[@]}"; do
		read -r t[i] c[i] b[i] <<<"$s"
		i=$((i + 1))
	done
	for ((i = 1; i < n; i++)); do
		rate[i]=0
		((t[i] <= t[i - 1])) || rate[i]=$(((b[i] - b[i - 1]) * 100 / (t[i] - t[i - 1])))
		((rate[i] <= peak)) || peak=${rate[i]}
	done
	for ((i = 1; i < n; i++)); do
		((peak > 0 && rate[i] * 10 >= peak)) || continue
		((first > 0)) || first=$i
		last=$i
	done
	if ((first == 0)); then
		printf -v "$1" '0 0 0'
		return
	fi
	printf -v "$1" '%d %d %d' $((c[last] - c[first - 1])) $((b[last] - b[first - 1])) $((b[n - 1] - b[0]))
}
say() {
	local up _rest
	read -r up _rest </proc/uptime
	echo "[$up] $*"
}

# --scale as thousandths; scaled VAR N: N times --scale, at least 5
# (perftest's minimum).
scale_milli=$(awk -v f="$scale" 'BEGIN { printf "%d", f * 1000 + 0.5 }')
((scale_milli > 0)) || fail "--scale $scale"
scaled() {
	local v=$((($2 * scale_milli + 500) / 1000))
	((v >= 5)) || v=5
	printf -v "$1" '%d' "$v"
}

# Values between the nodes: files in the shared directory, written under a
# temporary name and renamed (mv is the one exec here), read with builtins.
put() { # NAME VALUE
	printf '%s\n' "$2" >"$SHARED_DIR/value.$1.tmp" && mv "$SHARED_DIR/value.$1.tmp" "$SHARED_DIR/value.$1"
}
get() { # VAR NAME TIMEOUT_S
	local f=$SHARED_DIR/value.$2 i
	for ((i = 0; i < $3 * 20; i++)); do
		if [ -e "$f" ]; then
			IFS= read -r "$1" <"$f"
			return 0
		fi
		nap 0.05
	done
	fail "nothing published as $2 after $3 s"
}

# listening PID PORT: wait until something listens on TCP PORT (IPv4 or
# IPv6 wildcard); fail (1) when PID dies first or after 60 s.
listening() {
	local hex i f _sl laddr _rem st _rest
	printf -v hex '%04X' "$2"
	for ((i = 0; i < 1200; i++)); do
		for f in /proc/net/tcp /proc/net/tcp6; do
			while read -r _sl laddr _rem st _rest; do
				[[ $st == 0A && $laddr == *":$hex" ]] && return 0
			done <"$f"
		done
		kill -0 "$1" 2>/dev/null || return 1
		nap 0.05
	done
	return 1
}

# The tbprof plugin's control files (qemu-test/tbprof/tbprof.c): it looks
# for them every 2^18 blocks and removes each one it acted on. Keep the
# vCPU busy with builtins (no system calls) until FILE is gone (bounded).
spin_until_gone() { # FILE
	local i
	for ((i = 0; i < 2000000; i++)); do
		((i % 1000)) || [ -e "$1" ] || return 0
	done
	say "bench: $1 still there: is the tbprof plugin loaded (scripts/insns)?"
}
# Zero the counts before a row, dump them after it with the port counters.
insns_start() { # ROW
	[ -n "$insns" ] && [ "$1" != warmup ] || return 0
	local h
	hwc_read h
	printf '%s\n' $h >"$OUT_DIR/insns/$1.hwc.before"
	# Created aside and renamed: the plugin must not remove a file that
	# QEMU's 9p server is still creating (its set-up after the open fails).
	: >"$insns.reset.tmp"
	mv "$insns.reset.tmp" "$insns.reset"
	spin_until_gone "$insns.reset"
}
insns_stop() { # ROW
	[ -n "$insns" ] && [ "$1" != warmup ] || return 0
	local h
	hwc_read h
	printf '%s\n' $h >"$OUT_DIR/insns/$1.hwc.after"
	# Written whole, then renamed (as above).
	printf '%s\n' "$1" >"$insns.dump.tmp"
	mv "$insns.dump.tmp" "$insns.dump"
	spin_until_gone "$insns.dump"
}
if [ -n "$insns" ]; then
	mkdir -p "$OUT_DIR/insns"
	cat /proc/kallsyms >"$OUT_DIR/kallsyms"
	grep -i ' t ' "$OUT_DIR/kallsyms" >"$insns.syms.tmp"
	mv "$insns.syms.tmp" "$insns.syms"
	spin_until_gone "$insns.syms"
fi

perf_pid=
perf_start() { # ROW
	[ -n "$profile" ] || return 0
	perf record -a -g -e cpu-clock -F 999 -m 1024 -o "$logs/$1.perf.data" >"$logs/$1.perf-record.log" 2>&1 &
	perf_pid=$!
	nap 3 # perf's own start-up is slow under TCG; do not profile it
}
# The reports: per object, then the kernel's and the driver's symbols (the
# percentages are of all samples), then their call graphs.
perf_stop() { # ROW
	[ -n "$perf_pid" ] || return 0
	kill -INT "$perf_pid" 2>/dev/null || true
	wait "$perf_pid" || true
	perf_pid=
	local data=$logs/$1.perf.data role=client dsos='[kernel.kallsyms],[rdma_rxe_rs],[rdma_rxe]'
	is_server && role=server
	{
		echo "### $1, node$NODE_INDEX ($role), driver $RXE_DRIVER: samples per object"
		perf report -i "$data" --stdio --no-children -g none --sort dso --percent-limit 0.5 2>&1
		echo "### $1, node$NODE_INDEX ($role), driver $RXE_DRIVER: kernel and driver symbols"
		perf report -i "$data" --stdio --no-children -g none --sort dso,sym --dsos "$dsos" --percent-limit 0.2 2>&1
	} >"$profile/$1-node$NODE_INDEX.txt"
	perf report -i "$data" --stdio --no-children -g graph,1 --sort dso,sym --dsos "$dsos" \
		--percent-limit 2 >"$profile/$1-node$NODE_INDEX-callgraph.txt" 2>&1 || true
	# Who calls the copy and clear routines (spread over many callers,
	# each below the call graph's 2%).
	perf report -i "$data" --stdio --no-children -G --sort sym --symbols memcpy_orig,memset_orig \
		-g caller,0.5,callee,function,percent --percent-limit 0.1 \
		>"$profile/$1-node$NODE_INDEX-copies.txt" 2>&1 || true
	# Samples per instruction of the driver (symbol+offset, most first):
	# inlining puts most of the driver into a few symbols, and only this
	# shows where inside them the time goes. scripts/bench-annotate maps
	# the offsets onto the module's disassembly.
	perf script -i "$data" -G --no-demangle -F ip,sym,symoff,dso --dsos '[rdma_rxe_rs],[rdma_rxe]' 2>/dev/null |
		awk '{ print $2 }' | sort | uniq -c | sort -rn | head -400 \
		>"$profile/$1-node$NODE_INDEX-offsets.txt" 2>&1 || true
}

# mtu_err: why every row of this boot fails, or empty.
mtu_err=
put "mtu.node$NODE_INDEX" "$my_mtu $my_active"
if is_client; then
	get peer_mtus "mtu.node2" 120
	read -r peer_mtu peer_active <<<"$peer_mtus"
	for v in "node1 $my_mtu $my_active" "node2 $peer_mtu $peer_active"; do
		read -r nd m a <<<"$v"
		if [ "$m" != "$want_mtu" ]; then
			mtu_err+="$nd: eth0 MTU $m, not $want_mtu; "
		elif [ "$a" != "$want_active" ]; then
			mtu_err+="$nd: $RXE_DEV active MTU $a at netdev MTU $m, not $want_active; "
		fi
	done
	[ -z "$mtu_err" ] || say "bench: WARNING: every row fails: $mtu_err"
fi

server_addr=$(server_ip)
rowno=0
port_base=19000 # the same on both nodes

# row ID KIND SERVER_CMD... -- CLIENT_CMD...
# KIND: bw (perftest bandwidth, the client's figures), bw_rx (the same from
# the server's output: the receiver's, for UD), lat (perftest latency),
# iperf, tcplat.
# @PORT@ in either command becomes the row's port, @SERVER@ the server's
# address. Protocol: the server publishes ready.TAG (1 when its program
# listens, 0 when it died) and takes its first CPU reading; the client
# waits for it, runs its program between two readings, publishes abort.TAG
# when it failed (so the server is killed rather than waiting for its
# timeout); the server publishes srv.TAG (exit code, CPU, end of its log)
# when its program is gone, and the client, which waits for that, writes
# the row's line. No barrier: the next row's ready.TAG orders the next row.
row() {
	local id=$1 kind=$2
	shift 2
	[[ ${id%-base} =~ $rows_re ]] || return 0
	rowno=$((rowno + 1))
	local srv=() cli=()
	while (($#)) && [ "$1" != -- ]; do srv+=("$1"); shift; done
	shift
	cli=("$@")
	local port=$((port_base + rowno)) tag="$id.$rowno"
	srv=("${srv[@]//@PORT@/$port}")
	cli=("${cli[@]//@PORT@/$port}")
	cli=("${cli[@]//@SERVER@/$server_addr}")
	local slog=$logs/$id.server.log clog=$logs/$id.client.log a b a1 a2 b1 b2 rc=0 h0= h1= row_hwc={}
	if is_server; then
		local pid ok=1 tail= xfer=() xs step=0.25
		[ "$kind" != bw ] || step=0.1
		perf_start "$id"
		insns_start "$id"
		timeout -k 5 "$row_timeout" "${srv[@]}" >"$slog" 2>&1 &
		pid=$!
		listening "$pid" "$port" || ok=0
		cpu_jiffies a
		[ "$kind" != bw ] || xfer_sample
		put "ready.$tag" "$ok"
		while kill -0 "$pid" 2>/dev/null; do
			if [ -e "$SHARED_DIR/value.abort.$tag" ]; then
				kill "$pid" 2>/dev/null || true
				break
			fi
			nap "$step"
			[ "$kind" != bw ] || xfer_sample
		done
		wait "$pid" || rc=$?
		insns_stop "$id"
		cpu_jiffies b
		[ "$kind" != bw ] || xfer_sample
		xfer_sum xs
		perf_stop "$id"
		read -r a1 a2 <<<"$a"
		read -r b1 b2 <<<"$b"
		((rc == 0)) || tail=$(tail -n 3 "$slog" | jstr)
		[ "$kind" != bw_rx ] || cp "$slog" "$SHARED_DIR/server-log.$tag"
		put "srv.$tag" "$rc $((b1 - a1)) $((b2 - a2)) $xs $tail"
	else
		local ok t0 t1 srv_line srv_rc srv_all srv_k srv_xc srv_xb srv_rb srv_tail
		perf_start "$id"
		insns_start "$id"
		get ok "ready.$tag" $((row_timeout + 60))
		cpu_jiffies a
		hwc_read h0
		uptime_cs t0
		if [ "$ok" = 1 ]; then
			timeout -k 5 "$row_timeout" "${cli[@]}" >"$clog" 2>&1 || rc=$?
		else
			echo "the server did not start listening" >"$clog"
			rc=255
		fi
		uptime_cs t1
		insns_stop "$id"
		hwc_read h1
		row_hwc=$(hwc_json "$h0" "$h1")
		cpu_jiffies b
		((rc == 0)) || put "abort.$tag" 1
		perf_stop "$id"
		get srv_line "srv.$tag" $((row_timeout + 60))
		read -r srv_rc srv_all srv_k srv_xc srv_xb srv_rb srv_tail <<<"$srv_line"
		read -r a1 a2 <<<"$a"
		read -r b1 b2 <<<"$b"
		local flog=$clog
		if [ "$kind" = bw_rx ]; then
			flog=$logs/$id.server.log
			cp "$SHARED_DIR/server-log.$tag" "$flog" 2>/dev/null || : >"$flog"
		fi
		emit "$id" "$kind" "$rc" "$srv_rc" "$((b1 - a1))" "$((b2 - a2))" "$srv_all" "$srv_k" \
			"$((t1 - t0))" "$flog" "${srv_tail:-}" "${cli[*]}" "$srv_xc $srv_xb $srv_rb"
	fi
}

# JSON string contents (stdin): no quotes, backslashes or control characters.
jstr() { tr -d '"\\' | tr '\t\r\n' '   ' | tr -cd '[:print:]'; }

# The figures of a client log, as JSON members (without braces), or nothing
# when it holds none.
figures() { # KIND LOG
	case "$1" in
	bw_rx)
		# as bw, from a -D run: what moved is the rate times the duration
		awk -v d="$ud_d" '/^[ \t]*[0-9]+[ \t]+[0-9]+[ \t]+[0-9.]+[ \t]+[0-9.]+[ \t]+[0-9.]+/ { l = $0 } END {
			if (l == "") exit; split(l, f)
			printf "\"size\": %d, \"iters\": %d, \"duration_s\": %d, \"bytes\": %d, \"mib_s\": %s, \"mpps\": %s", f[1], f[2], d, f[4] * 1048576 * d, f[4], f[5] }' "$2"
		;;
	bw)
		# #bytes #iterations BW peak[MB/sec] BW average[MB/sec] MsgRate[Mpps]
		awk '/^[ \t]*[0-9]+[ \t]+[0-9]+[ \t]+[0-9.]+[ \t]+[0-9.]+[ \t]+[0-9.]+/ { l = $0 } END {
			if (l == "") exit; split(l, f)
			printf "\"size\": %d, \"iters\": %d, \"bytes\": %d, \"mib_s\": %s, \"mpps\": %s", f[1], f[2], f[1] * f[2], f[4], f[5] }' "$2"
		;;
	lat)
		# #bytes #iterations t_min t_max t_typical t_avg t_stdev 99% 99.9%
		awk '/^[ \t]*[0-9]+[ \t]+[0-9]+[ \t]+[0-9.]+[ \t]+[0-9.]+[ \t]+[0-9.]+[ \t]+[0-9.]+/ { l = $0 } END {
			if (l == "") exit; split(l, f)
			printf "\"size\": %d, \"iters\": %d, \"usec\": %s, \"usec_min\": %s, \"usec_avg\": %s, \"usec_p99\": %s", f[1], f[2], f[5], f[3], f[6], f[8] }' "$2"
		;;
	iperf)
		# [SUM] or [  5]  0.00-3.00 sec  NN.N MBytes  NNN KBytes/sec  receiver
		# (-f K fixes the rate unit, not the transfer's)
		awk '/receiver/ { l = $0 } END {
			if (l == "") exit; n = split(l, f)
			for (i = 1; i <= n; i++) if (f[i] == "sec") break
			u = f[i + 2]; m = u ~ /^G/ ? 2^30 : u ~ /^M/ ? 2^20 : u ~ /^K/ ? 2^10 : 1
			printf "\"bytes\": %d, \"mib_s\": %.2f", f[i + 1] * m, f[i + 3] / 1024 }' "$2"
		;;
	tcplat)
		# one JSON object; the round trip in usec (one way is for the report to derive)
		sed -n 's/.*"req_bytes": \([0-9]*\), "resp_bytes": \([0-9]*\), "iters": \([0-9]*\), "rtt_min_us": \([0-9.]*\), "rtt_typical_us": \([0-9.]*\), "rtt_avg_us": \([0-9.]*\), "rtt_p99_us": \([0-9.]*\).*/"size": \2, "req_size": \1, "iters": \3, "rtt_usec": \5, "rtt_usec_min": \4, "rtt_usec_avg": \6, "rtt_usec_p99": \7/p' "$2"
		;;
	esac
}

emit() { # ID KIND RC SRV_RC CLI_ALL CLI_K SRV_ALL SRV_K CENTISECONDS CLOG SRV_TAIL CMD XFER
	local id=$1 kind=$2 rc=$3 srv_rc=$4 fig ok=true err="" drv=$RXE_DRIVER c1 c2 s1 s2 el cmd xc xb rb x1
	fig=$(figures "$kind" "${10}")
	if [ "$kind" = bw_rx ] && [ -n "$fig" ]; then
		# and what the sender managed, for the record
		fig+=$(awk '/^[ \t]*[0-9]+[ \t]+[0-9]+[ \t]+[0-9.]+[ \t]+[0-9.]+[ \t]+[0-9.]+/ { l = $0 } END {
			if (l != "") { split(l, f); printf ", \"tx_iters\": %d, \"tx_mib_s\": %s, \"tx_mpps\": %s", f[2], f[4], f[5] } }' "$logs/$id.client.log")
	fi
	local row_mtu
	read -r row_mtu </sys/class/net/eth0/mtu
	if [ -n "$mtu_err" ] || [ "$row_mtu" != "$want_mtu" ]; then
		ok=false
		err="MTU: ${mtu_err:-node1: eth0 MTU $row_mtu during the row, not $want_mtu}"
	elif [ "$rc" != 0 ] || [ "$srv_rc" != 0 ] || [ -z "$fig" ]; then
		ok=false
		err="client exit $rc, server exit $srv_rc: client: $(tail -n 4 "${10}" | jstr) | server: ${11}"
	elif grep -q 'Correlation coefficient' "${10}"; then
		# perftest could not calibrate its cycle counter: its figures are 0 or junk
		ok=false
		err="perftest clock calibration failed (guest clocksource $clocksource): $(grep -m1 'Correlation' "${10}" | jstr)"
	fi
	case "$id" in tcp_*) drv=tcp ;; esac
	secs c1 "$5"
	secs c2 "$6"
	secs s1 "$7"
	secs s2 "$8"
	printf -v el '%d.%02d' $(($9 / 100)) $(($9 % 100))
	cmd=${12//\"/}
	{
		printf '{"driver": "%s", "boot": "%s", "rep": %s, "row": "%s", "kind": "%s", "ok": %s, "clocksource": "%s"' \
			"$drv" "$RXE_DRIVER" "$rep" "$id" "$kind" "$ok" "$clocksource"
		printf ', "mtu": %d, "active_mtu": %d' "$row_mtu" "$my_active"
		[ -z "$fig" ] || printf ', %s' "$fig"
		printf ', "cli_cpu_s": %s, "cli_kcpu_s": %s, "srv_cpu_s": %s, "srv_kcpu_s": %s, "seconds": %s' \
			"$c1" "$c2" "$s1" "$s2" "$el"
		read -r xc xb rb <<<"${13}"
		if [[ $xc =~ ^[0-9]+$ && $xb =~ ^[0-9]+$ && $rb =~ ^[0-9]+$ ]] && ((xb > 0)); then
			secs x1 "$xc"
			printf ', "srv_xfer_cpu_s": %s, "srv_xfer_bytes": %s, "srv_link_bytes": %s' "$x1" "$xb" "$rb"
		fi
		printf ', "cli_hwc": %s' "$row_hwc"
		printf ', "cmd": "%s"' "$cmd"
		[ -z "$err" ] || printf ', "error": "%s"' "$err"
		printf '}\n'
	} >>"$results"
	if [ "$ok" = true ]; then
		say "$id: $fig (${el}s, cpu cli $c1 srv $s1)"
	else
		say "$id FAILED: $cmd: $err"
	fi
}

# --- the rows -----------------------------------------------------------------
# perftest ID KIND N PROGRAM OPTIONS...
perftest() {
	local id=$1 kind=$2 n
	scaled n "$3"
	shift 3
	# Line-buffered, so a program killed by the row timeout leaves its output.
	local base=(stdbuf -oL "$1" -d "$RXE_DEV" -F -x "$gidx" -p @PORT@ -n "$n" "${@:2}")
	if [ -n "$insns" ] && [ "$id" != warmup ]; then
		local b5=(stdbuf -oL "$1" -d "$RXE_DEV" -F -x "$gidx" -p @PORT@ -n 5 "${@:2}")
		row "$id-base" "$kind" "${b5[@]}" -- "${b5[@]}" @SERVER@
	fi
	row "$id" "$kind" "${base[@]}" -- "${base[@]}" @SERVER@
}

# perftest times with the cycle counter, calibrated against gettimeofday:
# that needs the TSC as the clocksource (qemu-test/run passes tsc=reliable).
read -r clocksource </sys/devices/system/clocksource/clocksource0/current_clocksource
say "bench: driver $RXE_DRIVER, rep $rep, GID index $gidx, scale $scale, clocksource $clocksource, MTU $my_mtu (active $my_active), results $results"
[ "$clocksource" = tsc ] || say "bench: WARNING: clocksource $clocksource, not tsc: perftest's figures will be wrong"

# Warm-up, not recorded: binaries and libraries into the page cache.
if [ -z "$profile" ]; then
	saved_re=$rows_re rows_re=.
	saved_results=$results results=/dev/null
	perftest warmup bw 5 ib_write_bw -s 4096
	results=$saved_results rows_re=$saved_re
fi

# Iteration counts give each row a few seconds of guest time on TCG
# (~20-30 MB/s for large messages).
for s in 64 4096 65536 1048576; do
	case $s in 64) n=20000 ;; 4096) n=8000 ;; 65536) n=800 ;; 1048576) n=60 ;; esac
	perftest "send_bw_$s" bw "$n" ib_send_bw -s "$s"
	perftest "write_bw_$s" bw "$n" ib_write_bw -s "$s"
	perftest "read_bw_$s" bw "$n" ib_read_bw -s "$s"
done
perftest msgrate_64_q4 bw 20000 ib_write_bw -s 64 -q 4
for s in 2 4096; do
	perftest "send_lat_$s" lat 5000 ib_send_lat -s "$s"
	perftest "write_lat_$s" lat 5000 ib_write_lat -s "$s"
	perftest "read_lat_$s" lat 5000 ib_read_lat -s "$s"
done
perftest atomic_bw bw 20000 ib_atomic_bw
perftest atomic_lat lat 5000 ib_atomic_lat
# UD loses what the receiver has no buffer for, and perftest's server waits
# for every message of -n: UD bandwidth runs for a duration instead (-D,
# measured after a -f margin at each end), and the figure is the receiver's.
ud_d=$(((5 * scale_milli + 500) / 1000))
((ud_d >= 3)) || ud_d=3
ud_base() { # ID SIZE: the -base row of --insns
	[ -n "$insns" ] || return 0
	local c=(stdbuf -oL ib_send_bw -d "$RXE_DEV" -F -x "$gidx" -p @PORT@ -n 5 -c UD -s "$2")
	row "$1-base" bw_rx "${c[@]}" -- "${c[@]}" @SERVER@
}
ud_base ud_send_bw_64 64
row ud_send_bw_64 bw_rx stdbuf -oL ib_send_bw -d "$RXE_DEV" -F -x "$gidx" -p @PORT@ -D "$ud_d" -f 1 -c UD -s 64 -- \
	stdbuf -oL ib_send_bw -d "$RXE_DEV" -F -x "$gidx" -p @PORT@ -D "$ud_d" -f 1 -c UD -s 64 @SERVER@
ud_base ud_send_bw_1024 1024
row ud_send_bw_1024 bw_rx stdbuf -oL ib_send_bw -d "$RXE_DEV" -F -x "$gidx" -p @PORT@ -D "$ud_d" -f 1 -c UD -s 1024 -- \
	stdbuf -oL ib_send_bw -d "$RXE_DEV" -F -x "$gidx" -p @PORT@ -D "$ud_d" -f 1 -c UD -s 1024 @SERVER@
perftest ud_send_lat_2 lat 5000 ib_send_lat -c UD -s 2

if ((tcp)); then
	t=$(((3 * scale_milli + 500) / 1000))
	((t >= 1)) || t=1
	for p in 1 4; do
		row "tcp_bw_p$p" iperf iperf3 -s -1 -p @PORT@ -- iperf3 -c @SERVER@ -p @PORT@ -t "$t" -P "$p" -f K
	done
	# The C ping-pong when scripts/bench built it, else the Python one (whose
	# interpreter adds to every round trip).
	pp=("$REPO/build/bench/tcp_pingpong")
	[ -x "${pp[0]}" ] || pp=(python3 "$REPO/qemu-test/guest/tcp_pingpong.py")
	scaled n 5000
	row tcp_lat_2 tcplat "${pp[@]}" server @PORT@ -- "${pp[@]}" client @SERVER@ @PORT@ 2 2 "$n"
	row tcp_lat_4096 tcplat "${pp[@]}" server @PORT@ -- "${pp[@]}" client @SERVER@ @PORT@ 4096 4096 "$n"
	row tcp_rr_16_4096 tcplat "${pp[@]}" server @PORT@ -- "${pp[@]}" client @SERVER@ @PORT@ 16 4096 "$n"
fi
say "bench: $rowno rows done"
