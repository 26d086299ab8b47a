#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Hand-made RoCEv2 datagrams against a receiver, rs or c (run by net_raw.sh).

  net_raw.py serve          the receiver: answer counter queries until told to stop
  net_raw.py send ECHO DRV  the sender: send the cases below to the receiver,
                            which runs driver DRV (rs or c); ECHO=1 when it
                            runs rxe_rs built with RXE_RS_NETTEST=1

Every case says how much the receiver's rcvd_pkts must grow: that counter moves
only for packets that pass the header and ICRC checks and reach a QP or the
multicast path (QPN 0xffffff, which needs no QP on either driver). An rxe_rs
receiver must also count every other packet in one of its rcvd_drop_*
counters, and the cases with one clear cause in that one (DROP_REASON).
The receiver also holds a UD QP in RTS (Q_Key QKEY), one left in INIT and an
RC QP in RTS, and an address of its own that is none of its device's GIDs
(NOT_OURS4 on lo), for the drops by key, QP type, QP state and address. With ECHO,
pings make the receiver answer through its transmit path, checked by the
sender's (or the receiver's own, looped back) receive path.

An rxe_rs receiver also holds a UD QP whose one receive buffer lies in an
ODP MR over a file of a FUSE file system that never answers a READ
(qemu-test/lib/fuse_hold.py), owned by a process of its own (`stuck`): the first
datagram for it starts a page fault that stays stuck, the datagrams behind
it wait in the QP's packet queue, and a burst of more than the queue holds
must be counted in rcvd_drop_queue_full. Aborting the FUSE connection ends
the fault; the owner must then exit.

rdma_rxe (6.12) crashes on IPv6 datagrams shorter than a BTH: rxe_rcv drops
them before it clears pkt->qp, which then is whatever IP6CB left in skb->cb,
and rxe_put()s it. Those cases are skipped when the receiver runs c.
"""
import json
import os
import random
import socket
import struct
import sys
import time

import fuse_hold
from roce_packet import MCAST_QPN, RC_SEND_ONLY, ROCE_PORT, SPORT, UD_SEND_ONLY, Path, bth, deth, ud
from testlib import DEV, DRIVER, NODE_IP, NODE_IP6, PEER_IP6S, PEER_IPS, hw_counters

PING = b"rxe_rs ping\0"
QKEY = 0x1111
# The receiver's address on lo: its IP stack takes it, its rdma device has
# no GID for it. net_raw.sh adds it and the sender's route to it.
NOT_OURS4 = os.environ.get("RXE_NET4", "10.77.0").rsplit(".", 1)[0] + ".99.2"


def rcvd_pkts():
    return hw_counters(["rcvd_pkts"])["rcvd_pkts"]


def drop_counters():
    """rxe_rs's rcvd_drop_* counters ({} on rdma_rxe)."""
    names = [n for n in os.listdir(f"/sys/class/infiniband/{DEV}/ports/1/hw_counters")
             if n.startswith("rcvd_drop_")]
    return hw_counters(names) if names else {}


# The drop counter a case's packets must land in on an rxe_rs receiver.
DROP_REASON = {
    "bad ICRC": "rcvd_drop_bad_icrc",
    "payload bit flipped": "rcvd_drop_bad_icrc",
    "QPN 0": "rcvd_drop_no_qp",
    "no such QP": "rcvd_drop_no_qp",
    "unknown opcode": "rcvd_drop_bad_hdr",
    "opcode 0x15 (reserved)": "rcvd_drop_bad_hdr",
    "tver 1": "rcvd_drop_bad_hdr",
    "empty datagram": "rcvd_drop_bad_hdr",
    "4 bytes": "rcvd_drop_bad_hdr",
    "11 bytes": "rcvd_drop_bad_hdr",
    "BTH only": "rcvd_drop_bad_hdr",
    "UD QP, wrong Q_Key": "rcvd_drop_bad_key",
    "UD QP, wrong P_Key": "rcvd_drop_bad_key",
    "RC SEND_ONLY to the UD QP": "rcvd_drop_qp_state",
    "UD QP in INIT": "rcvd_drop_qp_state",
    "UD SEND_ONLY to the RC QP": "rcvd_drop_qp_state",
    "to an address of no GID": "rcvd_drop_not_ours",
}
# Cases whose datagrams need not reach the driver at all.
NOT_DELIVERED = {"valid, to the broadcast address"}


# --- counter queries over TCP -------------------------------------------------
# A query is a line on one TCP connection between the nodes (eth0, not port
# 4791, so it never moves rcvd_pkts); polling files on the shared 9p
# directory cost a debug guest seconds per query.
CTRL_PORT = 18490


class Targets:
    """The receiver's QPs for the cases that need one (see the docstring)."""

    def __init__(self):
        import pyverbs.enums as e
        from pyverbs.cq import CQ
        from pyverbs.device import Context
        from pyverbs.mr import MR
        from pyverbs.pd import PD
        from pyverbs.qp import QP, QPCap, QPInitAttr
        from pyverbs.wr import SGE, RecvWR

        import rc_lib as rl

        self.ctx = Context(name=DEV)
        self.pd = PD(self.ctx)
        self.cq = CQ(self.ctx, 16)

        def qp(kind):
            cap = QPCap(max_send_wr=4, max_recv_wr=4, max_send_sge=1, max_recv_sge=1)
            return QP(self.pd, QPInitAttr(qp_type=kind, scq=self.cq, rcq=self.cq, cap=cap))

        self.ud, self.ud_init, self.rc = qp(e.IBV_QPT_UD), qp(e.IBV_QPT_UD), qp(e.IBV_QPT_RC)
        rl.connect_ud(self.ud, QKEY)
        # Room for the valid datagrams of both families (GRH included).
        self.mr = MR(self.pd, 4 * 256, e.IBV_ACCESS_LOCAL_WRITE)
        for i in range(4):
            self.ud.post_recv(RecvWR(wr_id=i, num_sge=1, sg=[SGE(self.mr.buf + 256 * i, 256, self.mr.lkey)]))
        rl.init_ud(self.ud_init, QKEY)
        sgid, gid = rl.gid_index(NODE_IP)
        # Towards a QP of its own that never answers: only its state matters.
        rl.connect(self.rc, rl.ACC_ALL, sgid, gid, self.ud.qp_num, 0, 0)

    def info(self):
        return {"ud": self.ud.qp_num, "ud_init": self.ud_init.qp_num, "rc": self.rc.qp_num}


# The stuck UD QP's burst: more datagrams than a QP's packet queue holds
# (PKT_QUEUE_LIMIT, 8192 in rxe/qp/mod.rs).
QUEUE_BURST = 8192 + 1024


def stuck(path):
    """The owner of the stuck UD QP: prints its QPN, waits for stdin to close.

    Once the fault is stuck it holds this process's mmap_lock: from then on
    it only blocks in read(2), which allocates nothing."""
    import ctypes

    import pyverbs.enums as e
    from pyverbs.cq import CQ
    from pyverbs.device import Context
    from pyverbs.mr import MR
    from pyverbs.pd import PD
    from pyverbs.qp import QP, QPCap, QPInitAttr
    from pyverbs.wr import SGE, RecvWR

    import rc_lib as rl

    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int,
                          ctypes.c_int, ctypes.c_int, ctypes.c_long]
    size = 1 << 20
    fd = os.open(path, os.O_RDONLY)
    addr = libc.mmap(None, size, 3, 0x02, fd, 0)  # RW, MAP_PRIVATE: never touched here
    if addr in (None, ctypes.c_void_p(-1).value):
        print(f"mmap: {os.strerror(ctypes.get_errno())}", flush=True)
        return 1
    ctx = Context(name=DEV)
    pd = PD(ctx)
    cq = CQ(ctx, 16)
    cap = QPCap(max_send_wr=1, max_recv_wr=4, max_send_sge=1, max_recv_sge=1)
    qp = QP(pd, QPInitAttr(qp_type=e.IBV_QPT_UD, scq=cq, rcq=cq, cap=cap))
    rl.connect_ud(qp, QKEY)
    mr = MR(pd, size, e.IBV_ACCESS_ON_DEMAND | e.IBV_ACCESS_LOCAL_WRITE, address=addr)
    qp.post_recv(RecvWR(wr_id=1, num_sge=1, sg=[SGE(mr.buf, 4096, mr.lkey)]))
    os.write(1, f"{qp.qp_num}\n".encode())
    while os.read(0, 64):
        pass
    return 0


class Stuck:
    """The stuck UD QP of an rxe_rs receiver: the FUSE daemon and the owner."""

    def __init__(self):
        import subprocess

        from fuse_hold import FILE, MNT
        from testlib import sh

        self.qpn = None
        os.makedirs(MNT, exist_ok=True)
        if not os.path.ismount("/sys/fs/fuse/connections"):
            sh("mount -t fusectl fusectl /sys/fs/fuse/connections")
        self.mnt = MNT
        self.fuse = subprocess.Popen([sys.executable, fuse_hold.__file__], stdout=subprocess.PIPE)
        path = os.path.join(MNT, FILE)
        deadline = time.monotonic() + 20
        while not os.path.exists(path) and time.monotonic() < deadline:
            time.sleep(0.1)
        self.owner = subprocess.Popen([sys.executable, os.path.abspath(__file__), "stuck", path],
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        line = self.line(self.owner, 60)
        if line.isdigit():
            self.qpn = int(line)
        else:
            print(f"stuck QP owner: {line!r}", flush=True)

    @staticmethod
    def line(proc, limit):
        import select
        ready, _, _ = select.select([proc.stdout], [], [], limit)
        return proc.stdout.readline().decode().strip() if ready else ""

    def held(self):
        """Whether the daemon holds a READ: the QP's fault is stuck."""
        return self.line(self.fuse, 20).startswith("daemon: READ held")

    def release(self):
        """Ends the fault, then the owner; whether both went in time."""
        import subprocess
        for c in os.listdir("/sys/fs/fuse/connections"):
            with open(f"/sys/fs/fuse/connections/{c}/abort", "w") as f:
                f.write("1")
        ok = True
        for proc, close in ((self.fuse, False), (self.owner, True)):
            if close:
                proc.stdin.close()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                print(f"pid {proc.pid} still running 30 s after the abort", flush=True)
                proc.kill()
                proc.wait()
                ok = False
        subprocess.run(["umount", "-l", self.mnt], check=False)
        return ok


def serve():
    targets = Targets()
    stuck_qp = Stuck() if DRIVER == "rs" else None
    with socket.create_server(("", CTRL_PORT)) as srv:
        srv.settimeout(300)
        conn, _ = srv.accept()
    with conn, conn.makefile("rw") as f:
        for line in f:
            if line.strip() == "stop":
                if stuck_qp:
                    stuck_qp.release()
                return
            # Let softirqs and the loopback path settle.
            time.sleep(0.3)
            if line.strip() == "drops":
                f.write(json.dumps(drop_counters()) + "\n")
            elif line.strip() == "qps":
                info = targets.info()
                if stuck_qp and stuck_qp.qpn is not None:
                    info["stuck"] = stuck_qp.qpn
                f.write(json.dumps(info) + "\n")
            elif line.strip() == "held":
                f.write(json.dumps(bool(stuck_qp and stuck_qp.held())) + "\n")
            elif line.strip() == "release":
                f.write(json.dumps(bool(stuck_qp and stuck_qp.release())) + "\n")
                stuck_qp = None
            else:
                f.write(f"{rcvd_pkts()}\n")
            f.flush()


class Peer:
    def __init__(self, addr):
        deadline = time.monotonic() + 120
        while True:
            try:
                self.conn = socket.create_connection((addr, CTRL_PORT), timeout=120)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise SystemExit("peer does not listen")
                time.sleep(0.2)
        self.f = self.conn.makefile("rw")

    def ask(self, cmd="count"):
        self.f.write(cmd + "\n")
        self.f.flush()
        if cmd == "stop":
            self.conn.close()
            return None
        line = self.f.readline()
        if not line:
            raise SystemExit("peer does not answer")
        return json.loads(line) if cmd in ("drops", "qps", "held", "release") else int(line)


def cases(p, echo, me, peer, c_peer, qps):
    """(name, packets, expected rcvd delta on the receiver, on the sender);
    qps: the receiver's Targets.info()."""
    rng = random.Random(4791 + p.v6)
    # See the module docstring: rdma_rxe's short-IPv6 crash.
    crashes_c = c_peer and p.v6
    min_len = 12 if crashes_c else 0
    good = p.icrc(ud(b"hello, rxe" * 3))
    bad = bytearray(good)
    bad[-1] ^= 1
    flipped = bytearray(good)
    flipped[30] ^= 0x40
    yield "valid UD to the multicast QPN", [good], 1, 0
    yield "valid, 5 times", [good] * 5, 5, 0
    yield "valid RC SEND_ONLY to the multicast QPN", [p.icrc(bth(RC_SEND_ONLY, MCAST_QPN) + b"abcd" + bytes(4))], 1, 0
    yield "bad ICRC", [bytes(bad)], 0, 0
    yield "payload bit flipped", [bytes(flipped)], 0, 0
    yield "QPN 0", [p.icrc(ud(b"x" * 8, qpn=0))], 0, 0
    yield "no such QP", [p.icrc(ud(b"x" * 8, qpn=0x123))], 0, 0
    yield "unknown opcode", [p.icrc(struct.pack(">B", 0xFF) + good[1:-4] + bytes(4))], 0, 0
    yield "opcode 0x15 (reserved)", [p.icrc(struct.pack(">B", 0x15) + good[1:-4] + bytes(4))], 0, 0
    yield "tver 1", [p.icrc(ud(b"x" * 8, tver=1))], 0, 0
    yield "bad P_Key still reaches multicast", [p.icrc(ud(b"x" * 8, pkey=0x1234))], 1, 0
    if not crashes_c:
        yield "empty datagram", [b""], 0, 0
        yield "4 bytes", [good[:4]], 0, 0
        yield "11 bytes", [good[:11]], 0, 0
    yield "BTH only", [good[:12]], 0, 0
    yield "BTH+DETH, no ICRC", [good[:20]], 0, 0
    yield "UD QP, right Q_Key", [p.icrc(ud(b"x" * 8, qpn=qps["ud"], qkey=QKEY))], 1, 0
    yield "UD QP, wrong Q_Key", [p.icrc(ud(b"x" * 8, qpn=qps["ud"], qkey=QKEY + 1))], 0, 0
    yield "UD QP, wrong P_Key", [p.icrc(ud(b"x" * 8, qpn=qps["ud"], qkey=QKEY, pkey=0x1234))], 0, 0
    yield "RC SEND_ONLY to the UD QP", [p.icrc(bth(RC_SEND_ONLY, qps["ud"]) + b"abcd" + bytes(4))], 0, 0
    yield "UD QP in INIT", [p.icrc(ud(b"x" * 8, qpn=qps["ud_init"], qkey=QKEY))], 0, 0
    yield "UD SEND_ONLY to the RC QP", [p.icrc(ud(b"x" * 8, qpn=qps["rc"], qkey=QKEY))], 0, 0
    if not p.v6:
        yield "to an address of no GID", [("other", p.icrc(ud(b"x" * 8), dst=NOT_OURS4), NOT_OURS4)], 0, 0
    yield "truncated by one", [good[:-1]], 0, 0
    yield "headers only with valid ICRC", [p.icrc(ud(b""))], 1, 0
    yield "pad count, no pad bytes", [p.icrc(bth(UD_SEND_ONLY, MCAST_QPN, pad=3) + deth() + bytes(4))], 0, 0
    yield "pad bytes, no payload", [p.icrc(bth(UD_SEND_ONLY, MCAST_QPN, pad=3) + deth() + bytes(3 + 4))], 1, 0
    yield "garbage x200", [bytes(rng.getrandbits(8) for _ in range(rng.randrange(min_len, 300))) for _ in range(200)], 0, 0
    yield "garbage BTHs x200", [
        bytes([rng.choice([0x00, 0x04, 0x11, 0x64, 0x65, 0x1C, 0xFF])]) + bytes(rng.getrandbits(8) for _ in range(rng.randrange(11, 120)))
        for _ in range(200)
    ], 0, 0
    big = ud(bytes(rng.getrandbits(8) for _ in range(60000)))
    if p.v6:
        # Fragmented and reassembled; IPv6 has no id, so the ICRC is known.
        yield "60 KB datagram, valid ICRC", [p.icrc(big)], 1, 0
    else:
        yield "60 KB datagram (fragmented, ICRC unknown)", [("frag", big)], 0, 0
    if not p.v6:
        yield "valid, to the broadcast address", [("bcast", p.icrc(ud(b"bcast"), dst=p.bcast))], 0, 0
    if echo:
        yield "ping, answer to the sender", [p.icrc(ud(PING + p.gid(me) + b"payload"))], 1, 1
        yield "ping, answer looped back on the receiver", [p.icrc(ud(PING + p.gid(peer) + b"loop"))], 2, 0
        yield "ping x20", [p.icrc(ud(PING + p.gid(me) + bytes(i)) ) for i in range(20)], 20, 20
        yield "ping with 1000 B payload", [p.icrc(ud(PING + p.gid(me) + bytes(range(250)) * 4))], 1, 1


def send(echo, peer_driver):
    me4, me6 = NODE_IP, NODE_IP6
    peer4 = PEER_IPS[0]
    peer = Peer(peer4)
    peer6 = PEER_IP6S[0]
    failures = 0
    qps = peer.ask("qps")
    frag4 = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    frag4.setsockopt(socket.IPPROTO_IP, 10, 0)  # IP_MTU_DISCOVER = DONT
    frag4.bind((me4, SPORT + 1))
    for p, me, them in ((Path(False, me4, peer4), me4, peer4), (Path(True, me6, peer6), me6, peer6)):
        fam = "IPv6" if p.v6 else "IPv4"
        for name, pkts, want_peer, want_me in cases(p, echo, me, them, peer_driver == "c", qps):
            t0 = time.monotonic()
            drops0 = peer.ask("drops") if peer_driver == "rs" else {}
            before_peer, before_me = peer.ask(), rcvd_pkts()
            for pkt in pkts:
                if isinstance(pkt, tuple) and pkt[0] == "frag":
                    frag4.sendto(pkt[1], (them, ROCE_PORT))
                elif isinstance(pkt, tuple) and pkt[0] == "other":
                    p.send(pkt[1], dst=pkt[2])
                elif isinstance(pkt, tuple):
                    p.send(pkt[1], dst=p.bcast)
                else:
                    p.send(pkt)
                # A little pacing keeps the virtual NIC from dropping bursts
                # of packets that must be counted. Those that must not go at
                # once: a short sleep can take 0.3 s on a debug guest late in
                # a boot, 60 s for 200 garbage packets.
                if want_peer or want_me:
                    time.sleep(0.002)
            got_peer, got_me = peer.ask() - before_peer, rcvd_pkts() - before_me
            ok = (got_peer, got_me) == (want_peer, want_me)
            drop_note = ""
            if peer_driver == "rs":
                drops1 = peer.ask("drops")
                delta = {k: v - drops0.get(k, 0) for k, v in drops1.items() if v != drops0.get(k, 0)}
                dropped = len(pkts) - want_peer
                want_drops = {DROP_REASON[name]: dropped} if name in DROP_REASON else None
                if name in NOT_DELIVERED:
                    pass
                elif sum(delta.values()) != dropped or (want_drops is not None and delta != want_drops):
                    ok = False
                    drop_note = f"; drops {delta}, want {want_drops or dropped}"
                else:
                    drop_note = f"; drops {delta}" if delta else ""
            failures += not ok
            print(f"{'ok  ' if ok else 'FAIL'} {fam} {name}: receiver +{got_peer} (want +{want_peer}), "
                  f"sender +{got_me} (want +{want_me}){drop_note}; {time.monotonic() - t0:.1f} s", flush=True)
    if "stuck" in qps:
        failures += queue_full(Path(False, me4, peer4), peer, qps["stuck"])
    elif peer_driver == "rs":
        print("FAIL the receiver has no stuck QP for the queue_full case", flush=True)
        failures += 1
    peer.ask("stop")
    return failures


def queue_full(p, peer, qpn):
    """The stuck UD QP: one datagram starts its fault, a burst behind it
    overflows its packet queue (see the module docstring). 1 on failure."""
    t0 = time.monotonic()
    drops0, before = peer.ask("drops"), peer.ask()
    pkt = p.icrc(ud(b"q" * 64, qpn=qpn, qkey=QKEY))
    p.send(pkt)
    held = peer.ask("held")
    # Not paced (a short sleep can take most of a second on a debug guest):
    # what the virtual NIC drops does not reach the driver and is not
    # counted; the burst leaves room for that.
    for _ in range(QUEUE_BURST):
        p.send(pkt)
    # Until the receiver's count stops moving (each query waits 0.3 s).
    got, prev = peer.ask() - before, -1
    for _ in range(100):
        if got == prev:
            break
        got, prev = peer.ask() - before, got
    drops1 = peer.ask("drops")
    delta = {k: v - drops0.get(k, 0) for k, v in drops1.items() if v != drops0.get(k, 0)}
    released = peer.ask("release")
    full = delta.pop("rcvd_drop_queue_full", 0)
    # Counted in rcvd_pkts when they reached the QP, then dropped by the
    # full queue: all but the one at the head and the 8192 queued behind it
    # (more if the queue could not grow that far).
    want = got - 1 - 8192
    ok = held and released and not delta and want >= 1 and full >= want
    print(f"{'ok  ' if ok else 'FAIL'} IPv4 burst of {QUEUE_BURST + 1} to a QP stuck in a fault: "
          f"fault stuck {held}, receiver +{got}, rcvd_drop_queue_full +{full} "
          f"(want >= {want}), other drops {delta}, "
          f"fault and owner ended {released}; {time.monotonic() - t0:.1f} s", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        serve()
    elif sys.argv[1] == "stuck":
        sys.exit(stuck(sys.argv[2]))
    else:
        sys.exit(1 if send(sys.argv[2] == "1", sys.argv[3]) else 0)
