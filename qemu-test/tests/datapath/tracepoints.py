#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
"""The rxe_rs trace events (/sys/kernel/tracing/events/rxe_rs/), between two
rs nodes (node 2 serves, node 1 is the client), over the IPv4 RoCE v2 GID:

  qemu-test/run --debug qemu-test/tests/datapath/tracepoints.py [require]

Each node enables every rxe_rs event, then the two run, phase by phase,
and each node reads its own trace after each phase and checks that the
events it must have are there with their fields:

1. exchange: three 100-byte SENDs and a 2500-byte RDMA WRITE (MTU 1024:
   FIRST, MIDDLE, LAST) from the client; pkt_send on the client and
   pkt_recv on the server with the server QP's QPN, each opcode, PSN and
   payload length; the ACKs the other way; the QPs' qp_state moves
   RESET -> INIT -> RTR -> RTS (cause modify).
2. RNR: a SEND while the server has no receive posted (posted 0.3 s
   later): nak_send / nak_recv with an RNR syndrome at its PSN, retransmit
   cause rnr on the client, then the SEND completes.
3. drops: hand-made datagrams from the client (UDP, lib/roce_packet.py makes
   them): an RC SEND_ONLY to the server's QP with a wrong ICRC (pkt_drop
   reason bad_icrc with its QPN, opcode and PSN) and a datagram with BTH
   version 1 (reason bad_hdr, headers not parsed: QPN 0, opcode 0xff).
4. remote access error: an RDMA WRITE with a bad rkey: nak_send /
   nak_recv with syndrome 0x62, cqe_error REM_ACCESS_ERR on the client's
   send queue, qp_state RTS -> ERR on both (cause completion with that
   status on the client, receive on the server), the server's posted
   receive flushed (cqe_error WR_FLUSH_ERR, queue recv).
5. retry exceeded: a new QP pair whose server side is destroyed at once;
   the client's SEND is dropped by the server (pkt_drop reason no_qp, the
   gone QPN, at each try), retransmitted after each timeout (retransmit
   cause timeout, from its PSN), and fails: cqe_error RETRY_EXC_ERR,
   qp_state RTS -> ERR cause completion.

On a kernel without tracing (the plain 6.12 test kernel) it prints SKIP
and the reason, and passes; given `require` (the debug and 7.3 lines of
LIST, whose kernels have tracing) it fails instead. Exits non-zero on any failure.
"""

import os
import re
import subprocess
import sys
import time

from pyverbs.cq import CQ
from pyverbs.device import Context
from pyverbs.mr import MR
from pyverbs.pd import PD
from pyverbs.wr import RecvWR, SendWR, SGE
import pyverbs.enums as e

import rc_lib as rl
from rc_lib import TestFailure, log
from roce_packet import RC_SEND_ONLY, Path, bth, ud
from testlib import DEV, NODE_IP, PEER_IPS, check, summary

TRACEFS = "/sys/kernel/tracing"
EVENTS = f"{TRACEFS}/events/rxe_rs"
NAMES = ("qp_state", "pkt_send", "pkt_recv", "retransmit", "nak_send",
         "nak_recv", "cqe_error", "pkt_drop")
LINE = re.compile(r":\s+(" + "|".join(NAMES) + r"):\s+(.*)$")

# PSNs: client -> server from C_PSN, server -> client from S_PSN; the
# second pair's client from B_PSN.
C_PSN, S_PSN, B_PSN = 0x200, 0x300, 0x400
SEND_LEN, WRITE_LEN, MTU = 100, 2500, 1024
SENDS = 3
BUF = 64 * 1024
BAD_ICRC_PSN = 0x123


# --- tracefs -------------------------------------------------------------
def tracing_available():
    """None when the rxe_rs events can be used, else why not."""
    if not os.path.isdir(TRACEFS):
        return f"the kernel has no tracing (no {TRACEFS}: CONFIG_TRACING off)"
    if not os.path.isdir(f"{TRACEFS}/events"):
        subprocess.run(["mount", "-t", "tracefs", "nodev", TRACEFS],
                       capture_output=True)
    if not os.path.isdir(f"{TRACEFS}/events"):
        return f"tracefs does not mount on {TRACEFS}"
    if not os.path.isdir(EVENTS):
        return f"no {EVENTS} (the module was built without CONFIG_TRACEPOINTS)"
    return None


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


def start_tracing():
    write(f"{TRACEFS}/tracing_on", "0")
    try:
        write(f"{TRACEFS}/buffer_size_kb", "4096")
    except OSError:
        pass
    for n in NAMES:
        check(f"event {n} exists", os.path.isfile(f"{EVENTS}/{n}/format"))
    write(f"{EVENTS}/enable", "1")
    write(f"{TRACEFS}/trace", "")
    write(f"{TRACEFS}/tracing_on", "1")


def stop_tracing():
    write(f"{EVENTS}/enable", "0")
    write(f"{TRACEFS}/trace", "")


_pipe = None


def read_pipe():
    """The events traced since the last read, taken off trace_pipe (each
    read consumes what it returns: nothing is lost between two reads)."""
    global _pipe
    if _pipe is None:
        _pipe = os.open(f"{TRACEFS}/trace_pipe", os.O_RDONLY | os.O_NONBLOCK)
    text = b""
    while True:
        try:
            chunk = os.read(_pipe, 65536)
        except BlockingIOError:
            break
        if not chunk:
            break
        text += chunk
    out = []
    for line in text.decode(errors="replace").splitlines():
        m = LINE.search(line)
        if m:
            out.append((m.group(1), dict(re.findall(r"(\w+)=(\S+)", m.group(2)))))
    return out


def find(events, name, **want):
    """The events `name` whose fields include want (values compared as
    text)."""
    want = {k: str(v) for k, v in want.items()}
    return [f for n, f in events if n == name and all(f.get(k) == v for k, v in want.items())]


def want(name, count=1, **fields):
    return (name, count, fields)


def gather(phase, wants, timeout=20.0):
    """The events of a phase: read until every want is met (events come
    from softirqs and timers after the verbs calls return) or timeout;
    then checks each want."""
    events = []
    deadline = time.monotonic() + timeout
    while True:
        events += read_pipe()
        met = all(len(find(events, n, **f)) >= c for n, c, f in wants)
        if met or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    counts = {}
    for n, _ in events:
        counts[n] = counts.get(n, 0) + 1
    log(f"{phase}: events {counts}")
    for n, c, f in wants:
        got = find(events, n, **f)
        fields = " ".join(f"{k}={v}" for k, v in f.items())
        sample = [e for m, e in events if m == n][:4]
        check(f"{phase}: {n} {fields}" + (f" (x{c})" if c > 1 else ""),
              len(got) >= c, f"found {len(got)}; {n} events: {sample}")
    return events


# --- verbs ---------------------------------------------------------------
class Side:
    def __init__(self):
        self.gidx, self.gid = rl.gid_index(NODE_IP)
        self.ctx = Context(name=DEV)
        self.pd = PD(self.ctx)
        self.cq = CQ(self.ctx, 256)
        self.mr = MR(self.pd, BUF, rl.ACC_ALL)
        self.qps = []

    def qp(self):
        qp = rl.make_qp(self.pd, self.cq, self.cq)
        self.qps.append(qp)
        return qp

    def info(self, qp):
        return {"qpn": qp.qp_num, "gid": self.gid, "addr": self.mr.buf, "rkey": self.mr.rkey}

    def send(self, qp, wr_id, off, n):
        qp.post_send(SendWR(wr_id=wr_id, opcode=e.IBV_WR_SEND, num_sge=1,
                            sg=[SGE(self.mr.buf + off, n, self.mr.lkey)],
                            send_flags=e.IBV_SEND_SIGNALED))

    def write(self, qp, wr_id, off, n, rkey, addr):
        wr = SendWR(wr_id=wr_id, opcode=e.IBV_WR_RDMA_WRITE, num_sge=1,
                    sg=[SGE(self.mr.buf + off, n, self.mr.lkey)],
                    send_flags=e.IBV_SEND_SIGNALED)
        wr.set_wr_rdma(rkey, addr)
        qp.post_send(wr)

    def recv(self, qp, wr_id, off, n):
        qp.post_recv(RecvWR(wr_id=wr_id, num_sge=1, sg=[SGE(self.mr.buf + off, n, self.mr.lkey)]))

    def close(self):
        rl.poll_none(self.cq, 0.05)
        for obj in (*self.qps, self.mr, self.cq, self.pd, self.ctx):
            obj.close()


def statuses(wcs):
    return [(w.wr_id, rl.status_name(w.status)) for w in wcs]


# --- the two sides -------------------------------------------------------
def connected(qpn):
    gather("connect", [want("qp_state", qpn=qpn, old=o, new=n, cause="modify", status="SUCCESS")
                       for o, n in (("RESET", "INIT"), ("INIT", "RTR"), ("RTR", "RTS"))])


def client(ctl, s, qp, peer):
    me = qp.qp_num
    them = peer["qpn"]
    connected(me)

    # 1. exchange
    ctl.recv()  # receives posted
    for k in range(SENDS):
        s.send(qp, k, k * SEND_LEN, SEND_LEN)
    s.write(qp, 10, 0, WRITE_LEN, peer["rkey"], peer["addr"])
    got = rl.poll(s.cq, SENDS + 1, what="exchange completions")
    if any(w.status != e.IBV_WC_SUCCESS for w in got):
        raise TestFailure(f"exchange: {statuses(got)}")
    w = C_PSN + SENDS
    ev = gather("exchange", [
        *[want("pkt_send", qpn=them, opcode="RC_SEND_ONLY", psn=C_PSN + k, len=SEND_LEN)
          for k in range(SENDS)],
        want("pkt_send", qpn=them, opcode="RC_WRITE_FIRST", psn=w, len=MTU),
        want("pkt_send", qpn=them, opcode="RC_WRITE_MIDDLE", psn=w + 1, len=MTU),
        want("pkt_send", qpn=them, opcode="RC_WRITE_LAST", psn=w + 2, len=WRITE_LEN - 2 * MTU),
        want("pkt_recv", qpn=me, opcode="RC_ACK", psn=w + 2, len=0),
    ])
    check("exchange: no drop, NAK, error or state change", not [n for n, _ in ev if n in
          ("pkt_drop", "nak_send", "nak_recv", "cqe_error", "qp_state")], f"{ev[:8]}")
    ctl.send({"sent": True})
    ctl.recv()

    # 2. RNR: the server posts its receive 0.3 s after this SEND.
    rnr = w + 3
    s.send(qp, 20, 0, SEND_LEN)
    ctl.send({"rnr_sent": True})
    got = rl.poll(s.cq, 1, what="the SEND that met RNR")
    if got[0].status != e.IBV_WC_SUCCESS:
        raise TestFailure(f"RNR: {statuses(got)}")
    gather("rnr", [
        want("nak_recv", qpn=me, psn=rnr, nak="RNR"),
        want("retransmit", qpn=me, cause="rnr", psn=rnr),
        want("pkt_send", count=2, qpn=them, opcode="RC_SEND_ONLY", psn=rnr),
    ])
    ctl.recv()

    # 3. drops at the server: hand-made datagrams.
    p = Path(False, NODE_IP, PEER_IPS[0])
    good = p.icrc(bth(RC_SEND_ONLY, them, psn=BAD_ICRC_PSN) + b"trace me" + bytes(4))
    p.send(good[:-4] + bytes(b ^ 0xFF for b in good[-4:]))
    p.send(p.icrc(ud(b"x" * 8, tver=1)))
    ctl.send({"dropped": True})
    ctl.recv()

    # 4. remote access error: a bad rkey.
    bad = rnr + 1
    ctl.recv()  # the server's receive is posted
    s.write(qp, 0x77, 0, 64, peer["rkey"] ^ 0x80, peer["addr"])
    got = rl.poll(s.cq, 1, what="the bad WRITE")
    check("remote access error: completion", statuses(got) == [(0x77, "REM_ACCESS_ERR")], f"{statuses(got)}")
    gather("access error", [
        want("nak_recv", qpn=me, psn=bad, syndrome="0x62", nak="REM_ACCESS_ERR"),
        want("cqe_error", qpn=me, queue="send", wr_id="0x77", status="REM_ACCESS_ERR", vendor_err=0),
        want("qp_state", qpn=me, old="RTS", new="ERR", cause="completion", status="REM_ACCESS_ERR"),
    ])
    ctl.send({"failed": True})
    ctl.recv()

    # 5. retry exceeded: the server destroys its QP of the new pair.
    qp2 = s.qp()
    ctl.send(s.info(qp2))
    peer2 = ctl.recv()
    rl.connect(qp2, rl.ACC_ALL, s.gidx, peer2["gid"], peer2["qpn"], S_PSN, B_PSN, timeout=12, retry=2)
    me2 = qp2.qp_num
    connected(me2)
    ctl.send({"rts": True})
    ctl.recv()  # gone
    s.send(qp2, 0x99, 0, SEND_LEN)
    got = rl.poll(s.cq, 1, timeout=60, what="the SEND to a QP that is gone")
    check("retry exceeded: completion", statuses(got) == [(0x99, "RETRY_EXC_ERR")], f"{statuses(got)}")
    gather("retry exceeded", [
        want("pkt_send", count=3, qpn=peer2["qpn"], opcode="RC_SEND_ONLY", psn=B_PSN),
        want("retransmit", count=2, qpn=me2, cause="timeout", psn=B_PSN),
        want("cqe_error", qpn=me2, queue="send", wr_id="0x99", status="RETRY_EXC_ERR"),
        want("qp_state", qpn=me2, old="RTS", new="ERR", cause="completion", status="RETRY_EXC_ERR"),
    ])
    ctl.send({"failed": True})
    ctl.recv()


def server(ctl, s, qp, peer):
    me = qp.qp_num
    them = peer["qpn"]
    connected(me)

    # 1. exchange
    for k in range(SENDS):
        s.recv(qp, k, 8192 + k * 128, 128)
    ctl.send({"posted": True})
    got = rl.poll(s.cq, SENDS, what="exchange receives")
    if any(w.status != e.IBV_WC_SUCCESS for w in got):
        raise TestFailure(f"exchange: {statuses(got)}")
    w = C_PSN + SENDS
    gather("exchange", [
        *[want("pkt_recv", qpn=me, opcode="RC_SEND_ONLY", psn=C_PSN + k, len=SEND_LEN)
          for k in range(SENDS)],
        want("pkt_recv", qpn=me, opcode="RC_WRITE_FIRST", psn=w, len=MTU),
        want("pkt_recv", qpn=me, opcode="RC_WRITE_MIDDLE", psn=w + 1, len=MTU),
        want("pkt_recv", qpn=me, opcode="RC_WRITE_LAST", psn=w + 2, len=WRITE_LEN - 2 * MTU),
        want("pkt_send", qpn=them, opcode="RC_ACK", psn=w + 2, len=0),
    ])
    ctl.recv()
    ctl.send({"ok": True})

    # 2. RNR
    rnr = w + 3
    ctl.recv()
    time.sleep(0.3)
    s.recv(qp, 20, 8192, 128)
    got = rl.poll(s.cq, 1, what="the receive after RNR")
    if got[0].status != e.IBV_WC_SUCCESS:
        raise TestFailure(f"RNR: {statuses(got)}")
    gather("rnr", [
        want("nak_send", qpn=me, psn=rnr, nak="RNR"),
        want("pkt_recv", count=2, qpn=me, opcode="RC_SEND_ONLY", psn=rnr),
    ])
    ctl.send({"ok": True})

    # 3. drops
    ctl.recv()
    gather("drops", [
        want("pkt_drop", reason="bad_icrc", qpn=me, opcode="RC_SEND_ONLY", psn=BAD_ICRC_PSN),
        want("pkt_drop", reason="bad_hdr", qpn=0, opcode="0xff", psn=0),
    ])
    ctl.send({"ok": True})

    # 4. remote access error
    bad = rnr + 1
    s.recv(qp, 0x55, 8192, 128)
    ctl.send({"posted": True})
    got = rl.poll(s.cq, 1, what="the flushed receive")
    check("remote access error: receive flushed", statuses(got) == [(0x55, "WR_FLUSH_ERR")], f"{statuses(got)}")
    gather("access error", [
        want("pkt_recv", qpn=me, opcode="RC_WRITE_ONLY", psn=bad, len=64),
        want("nak_send", qpn=me, psn=bad, syndrome="0x62", nak="REM_ACCESS_ERR"),
        want("pkt_send", qpn=them, opcode="RC_ACK", psn=bad, len=0),
        want("qp_state", qpn=me, old="RTS", new="ERR", cause="receive"),
        want("cqe_error", qpn=me, queue="recv", wr_id="0x55", status="WR_FLUSH_ERR"),
    ])
    ctl.recv()
    ctl.send({"ok": True})

    # 5. retry exceeded: this side's QP goes at once.
    qp2 = s.qp()
    ctl.send(s.info(qp2))
    peer2 = ctl.recv()
    rl.connect(qp2, rl.ACC_ALL, s.gidx, peer2["gid"], peer2["qpn"], B_PSN, S_PSN)
    gone = qp2.qp_num
    connected(gone)
    ctl.recv()
    s.qps.remove(qp2)
    qp2.close()
    ctl.send({"gone": True})
    ctl.recv()
    gather("retry exceeded", [
        want("pkt_drop", count=3, reason="no_qp", qpn=gone, opcode="RC_SEND_ONLY", psn=B_PSN),
    ])
    ctl.send({"ok": True})


def body(ctl):
    start_tracing()
    s = Side()
    try:
        qp = s.qp()
        ctl.send(s.info(qp))
        peer = ctl.recv()
        if rl.is_client():
            rl.connect(qp, rl.ACC_ALL, s.gidx, peer["gid"], peer["qpn"], S_PSN, C_PSN)
        else:
            rl.connect(qp, rl.ACC_ALL, s.gidx, peer["gid"], peer["qpn"], C_PSN, S_PSN)
        ctl.send({"rts": True})
        ctl.recv()
        if rl.is_client():
            client(ctl, s, qp, peer)
        else:
            server(ctl, s, qp, peer)
    finally:
        stop_tracing()
        s.close()


def main():
    why = tracing_available()
    if why and "require" in sys.argv[1:]:
        print(f"FAIL tracepoints: {why}")
        return 1
    if why:
        print(f"SKIP tracepoints: {why}")
        return 0
    rc = rl.run_main(body)
    return summary("tracepoints") or rc


if __name__ == "__main__":
    sys.exit(main())
