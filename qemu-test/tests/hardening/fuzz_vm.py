#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
"""In-VM packet fuzzer: node 1 sends structured mutations of valid RoCEv2
packets, with a correct ICRC, over a raw AF_PACKET socket at live QPs of
node 2, then both check that those QPs still work.

  fuzz_vm.py [PACKETS [SEED]]     (default 2000 packets)

Node 2 (the target) has an MR with every remote access, a shared receive
CQ, an SRQ, and four QPs connected to node 1's: RC with its own RQ, RC on
the SRQ, UC, and UD. While node 1 fuzzes, node 2 keeps the receive queues
full, drains the CQs, brings QPs that fell into ERR back to RTS (so the
fuzz stays stateful) and publishes each QP's expected PSN, which node 1
aims its PSNs around (in order, duplicates, far ahead, across the 2^24
wrap: the QPs start at PSN 0xfffff0).

Each packet is a valid request for its QP (every opcode of its transport,
multi-packet sends and writes in sequence, reads and atomics at the MR),
then 0-3 structured mutations: PSN, QPN, rkey, VA, RETH length, payload
length (vs. MTU and RETH), pad count and bytes, BTH flag and reserved bits,
P_Key, TVer, Q_Key and source QPN of DETH, the headers of another opcode,
an opcode of another transport or none at all, truncation or extension of
the IB part (the ICRC recomputed over what remains), random bytes in the
headers, a UDP length shorter than the datagram (the rest trailing junk)
or longer, an IP total length shorter or longer, IPv6 instead of IPv4, and
now and then a bad ICRC. The ICRC is computed as the receiver does (over
the IP and UDP headers as sent), so the packets reach the transport checks.

Then each side resets its QPs, they reconnect and exchange real traffic
on every QP (RC sends on the RQ and the SRQ, RDMA WRITE and READ, UC send,
UD send, and a send from node 2 back), every byte checked. The harness
fails the run on any kernel report on either node.

The packets per second are printed; the long mode is `make fuzz-vm`.
"""

import os
import random
import select
import socket
import struct
import sys
import time
import zlib

from pyverbs.cq import CQ
from pyverbs.device import Context
from pyverbs.mr import MR
from pyverbs.pyverbs_error import PyverbsRDMAError
from pyverbs.pd import PD
from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr
from pyverbs.srq import SRQ, SrqInitAttr, SrqAttr
from pyverbs.wr import RecvWR, SendWR, SGE
import pyverbs.enums as e

import rc_lib as rl
from rc_lib import TestFailure, log
from testlib import DEV, NODE_IP, NODE_IP6, PEER_IP6S, SHARED_DIR, hw_counters

PACKETS = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
SEED = int(sys.argv[2], 0) if len(sys.argv) > 2 else 0xF022
STATUS = f"{SHARED_DIR}/fuzz_vm.status"
STATUS_LEN = 256

START_PSN = 0xFFFFF0
QKEY = 0x11111111
MR_LEN = 1 << 17
REMOTE_LEN = 1 << 16  # first half: remote targets; second half: receive buffers
RECV_LEN = 2048
MTU = 1024
NAMES = ("rc", "rcs", "uc", "ud")
TYPES = {"rc": e.IBV_QPT_RC, "rcs": e.IBV_QPT_RC, "uc": e.IBV_QPT_UC,
         "ud": e.IBV_QPT_UD}

# --- verbs side ---------------------------------------------------------------


def recv_off(n, wr_id):
    """Where receive WQE wr_id of QP n points: 8 buffers per QP."""
    return REMOTE_LEN + (NAMES.index(n) * 8 + wr_id % 8) * RECV_LEN


class Node:
    def __init__(self, with_srq):
        self.ctx = Context(name=DEV)
        self.pd = PD(self.ctx)
        self.mr = MR(self.pd, MR_LEN, rl.ACC_ALL)
        self.scq = CQ(self.ctx, 1024)
        self.rcq = CQ(self.ctx, 4096)
        self.srq = None
        if with_srq:
            self.srq = SRQ(self.pd, SrqInitAttr(SrqAttr(max_wr=256, max_sge=1)))
        self.qps = {}
        for n in NAMES:
            cap = QPCap(max_send_wr=64, max_recv_wr=128, max_send_sge=2,
                        max_recv_sge=2, max_inline_data=64)
            attr = QPInitAttr(qp_type=TYPES[n], scq=self.scq, rcq=self.rcq,
                              cap=cap, sq_sig_all=1)
            if n == "rcs" and self.srq is not None:
                attr.srq = self.srq
            self.qps[n] = QP(self.pd, attr)
        self.sgid, self.gid = rl.gid_index(NODE_IP)
        self.wr_id = 0

    def info(self):
        return {"qpn": {n: q.qp_num for n, q in self.qps.items()},
                "gid": self.gid, "rkey": self.mr.rkey, "va": self.mr.buf}

    def connect(self, n, peer, psn=START_PSN):
        """RESET -> RTS of QP n towards the peer's QP n."""
        qp = self.qps[n]
        qp.modify(QPAttr(qp_state=rl.RESET), e.IBV_QP_STATE)
        if n == "ud":
            rl.connect_ud(qp, QKEY, psn)
            return
        if n == "uc":
            rl.connect_uc(qp, self.sgid, peer["gid"], peer["qpn"][n], psn, psn)
            return
        rl.connect(qp, rl.ACC_ALL, self.sgid, peer["gid"], peer["qpn"][n], psn, psn,
                   timeout=10, retry=3)

    def post_recv(self, n):
        """One receive WQE on QP n's RQ (or the SRQ); False when full."""
        self.wr_id += 1
        sge = SGE(self.mr.buf + recv_off(n, self.wr_id), RECV_LEN, self.mr.lkey)
        wr = RecvWR(wr_id=self.wr_id, num_sge=1, sg=[sge])
        try:
            if n == "rcs" and self.srq is not None:
                self.srq.post_recv(wr)
            else:
                self.qps[n].post_recv(wr)
        except Exception:  # noqa: BLE001 - the ring is full
            return False
        return True

    def fill(self, n, limit=256):
        for _ in range(limit):
            if not self.post_recv(n):
                return

    def drain(self):
        k = 0
        for cq in (self.scq, self.rcq):
            while True:
                nc, _ = cq.poll(64)
                k += nc
                if not nc:
                    break
        return k


COUNTERS = ("rcvd_pkts", "sent_pkts", "duplicate_request", "out_of_seq_request",
            "rcvd_seq_err", "send_rnr_err", "rdma_recvs")


def counters():
    return hw_counters(COUNTERS)


def revive(node, n, peer, tries=5):
    """Brings QP n back from ERR. From RTR on, the QP answers the fuzz: a bad
    request can fail it again before RTS, and then ERR refuses the next
    transition (EINVAL); start over from RESET."""
    for i in range(tries):
        node.drain()
        try:
            node.connect(n, peer, psn=START_PSN)
            return
        except PyverbsRDMAError as ex:
            if i == tries - 1:
                raise
            log(f"target: {n} failed again while being brought up ({ex}); again")


def target(ctl, node):
    """Node 2 during the fuzz: keeps the QPs alive until node 1 is done."""
    before = counters()
    peer = ctl.recv()
    ctl.send(node.info())
    for n in NAMES:
        node.connect(n, peer)
        node.fill(n)
    ctl.send({"ready": True})
    revived = {n: 0 for n in NAMES}
    completions = 0
    last_check = 0.0
    while True:
        r, _, _ = select.select([ctl.sock], [], [], 0.05)
        if r:
            msg = ctl.recv()
            if msg.get("done"):
                break
        completions += node.drain()
        now = time.monotonic()
        if now - last_check < 0.25:
            continue
        last_check = now
        status = {}
        for n in NAMES:
            attr, _ = node.qps[n].query(e.IBV_QP_STATE | e.IBV_QP_RQ_PSN)
            if attr.qp_state != rl.RTS:
                revive(node, n, peer)
                revived[n] += 1
                attr, _ = node.qps[n].query(e.IBV_QP_STATE | e.IBV_QP_RQ_PSN)
            node.fill(n)
            status[n] = attr.rq_psn
        # Always STATUS_LEN bytes: a reader whose guest still holds the
        # replaced file's size must never get a short read (on a 9p mount
        # with cache=none, 6.12's netfs retries a short read by recursing
        # until the stack overflows).
        tmp = STATUS + ".tmp"
        with open(tmp, "w") as f:
            f.write(" ".join(f"{n}={status[n]}" for n in NAMES).ljust(STATUS_LEN))
        os.rename(tmp, STATUS)
    after = counters()
    log(f"target: {completions} completions polled, QPs revived from ERR: {revived}")
    log("target counters: " + ", ".join(f"{c} +{after[c] - before.get(c, 0)}" for c in after))
    if PACKETS >= 100 and after.get("rcvd_pkts", 0) - before.get("rcvd_pkts", 0) == 0:
        raise TestFailure("no fuzz packet reached a QP (ICRC or addressing wrong?)")


# --- packets ------------------------------------------------------------------

# Extension headers in wire order, per opcode (proto/opcode.rs).
RDETH, DETH, RETH, AETH, ATMETH, ATMACK, IETH, IMMDT, FETH = range(9)
HLEN = {RDETH: 4, DETH: 8, RETH: 16, AETH: 4, ATMETH: 28, ATMACK: 8, IETH: 4,
        IMMDT: 4, FETH: 4}
OPS = {
    0x00: [], 0x01: [], 0x02: [], 0x03: [IMMDT], 0x04: [], 0x05: [IMMDT],
    0x06: [RETH], 0x07: [], 0x08: [], 0x09: [IMMDT], 0x0a: [RETH], 0x0b: [RETH, IMMDT],
    0x0c: [RETH], 0x0d: [AETH], 0x0e: [], 0x0f: [AETH], 0x10: [AETH], 0x11: [AETH],
    0x12: [AETH, ATMACK], 0x13: [ATMETH], 0x14: [ATMETH], 0x16: [IETH], 0x17: [IETH],
    0x1c: [FETH, RETH], 0x1d: [RETH],
    0x20: [], 0x21: [], 0x22: [], 0x23: [IMMDT], 0x24: [], 0x25: [IMMDT],
    0x26: [RETH], 0x27: [], 0x28: [], 0x29: [IMMDT], 0x2a: [RETH], 0x2b: [RETH, IMMDT],
    0x40: [RDETH, DETH], 0x44: [RDETH, DETH], 0x4c: [RDETH, DETH, RETH],
    0x53: [RDETH, DETH, ATMETH],
    0x64: [DETH], 0x65: [DETH, IMMDT],
}
PAYLOAD_OPS = {0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b,
               0x0d, 0x0e, 0x0f, 0x10, 0x16, 0x17, 0x1d,
               0x20, 0x21, 0x22, 0x23, 0x24, 0x25, 0x26, 0x27, 0x28, 0x29, 0x2a, 0x2b,
               0x40, 0x44, 0x64, 0x65}
RC_REQ = [0x04, 0x05, 0x0a, 0x0b, 0x0c, 0x13, 0x14, 0x16, 0x17, 0x1c, 0x1d,
          0x00, 0x01, 0x02, 0x03, 0x06, 0x07, 0x08, 0x09]
RC_RESP = [0x0d, 0x0e, 0x0f, 0x10, 0x11, 0x12]
UC_REQ = [0x24, 0x25, 0x2a, 0x2b, 0x20, 0x21, 0x22, 0x23, 0x26, 0x27, 0x28, 0x29]
UD_REQ = [0x64, 0x65]
ALL_OPS = sorted(OPS)
FIRST_OF = {0x00: (0x01, 0x02), 0x06: (0x07, 0x08), 0x20: (0x21, 0x22), 0x26: (0x27, 0x28)}

M24 = 0xFFFFFF


class Fuzzer:
    def __init__(self, peer, me, seed):
        self.rng = random.Random(seed)
        self.peer = peer
        self.sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
        self.sock.bind(("eth0", 0))
        self.smac = bytes.fromhex(open("/sys/class/net/eth0/address").read().strip().replace(":", ""))
        self.dmac = self.peer_mac()
        self.src4 = socket.inet_pton(socket.AF_INET, NODE_IP)
        self.dst4 = socket.inet_pton(socket.AF_INET, rl.server_ip())
        self.src6 = socket.inet_pton(socket.AF_INET6, NODE_IP6)
        self.dst6 = socket.inet_pton(socket.AF_INET6, PEER_IP6S[0])
        self.me_qpn = me["qpn"]
        self.exp = {n: START_PSN for n in NAMES}
        self.status_seen = ""
        self.junk = os.urandom(8192)
        self.stats = {"sent": 0, "mutated": 0, "v6": 0, "seq": 0, "bad_icrc": 0, "errors": 0}

    def peer_mac(self):
        ip = rl.server_ip()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with open("/proc/net/arp") as f:
                for line in f.readlines()[1:]:
                    p = line.split()
                    if p[0] == ip and p[3] != "00:00:00:00:00:00":
                        return bytes.fromhex(p[3].replace(":", ""))
            os.system(f"ping -c 1 -W 1 {ip} >/dev/null 2>&1")
        raise TestFailure(f"no ARP entry for {ip}")

    def bytes_(self, n):
        o = self.rng.randrange(0, len(self.junk) - n) if n < len(self.junk) else 0
        return self.junk[o:o + n]

    def read_status(self):
        try:
            with open(STATUS) as f:
                s = f.read()
        except OSError:
            return
        if s == self.status_seen:
            return
        self.status_seen = s
        for kv in s.split():
            n, v = kv.split("=")
            self.exp[n] = int(v) & M24

    # Field choosers.
    def psn(self, n):
        r = self.rng.random()
        x = self.exp[n]
        if r < 0.55:
            return x
        if r < 0.75:
            return (x + self.rng.randint(-3, 3)) & M24
        if r < 0.85:
            return (x + self.rng.choice([1 << 23, -(1 << 23), (1 << 23) - 1, -(1 << 23) + 1])) & M24
        if r < 0.93:
            return self.rng.choice([0, 1, M24, M24 - 1, START_PSN])
        return self.rng.getrandbits(24)

    def va(self, length, atomic=False):
        base = self.peer["va"]
        r = self.rng.random()
        if r < 0.7:
            off = self.rng.randrange(0, max(1, REMOTE_LEN - length))
            return base + (off & ~7 if atomic else off)
        return self.rng.choice([base + REMOTE_LEN - max(length, 1) + 1, base - 8, base + MR_LEN,
                                0, (1 << 64) - 8, base + 3, (base + MR_LEN - 8) & ~7,
                                self.rng.getrandbits(64)])

    def rkey(self):
        k = self.peer["rkey"]
        r = self.rng.random()
        if r < 0.85:
            return k
        return self.rng.choice([k ^ 1, k ^ 0x100, k + 0x100, 0, 0xFFFFFFFF, self.rng.getrandbits(32)])

    def paylen(self, op, first_or_middle):
        if first_or_middle and self.rng.random() < 0.8:
            return MTU
        return self.rng.choice([0, 1, 3, 4, 8, 16, 64, 255, 256, MTU - 1, MTU, MTU + 1,
                                self.rng.randrange(0, 1400)])

    def build(self, n, op, psn, paylen, reth_len=None, se=0, ackreq=0):
        """BTH + extension headers + payload + pad, no ICRC; and the fields."""
        rng = self.rng
        hdrs = b""
        for h in OPS[op]:
            if h == RETH:
                ln = paylen if reth_len is None else reth_len
                if op == 0x0c:
                    ln = rng.choice([0, 1, 8, 256, MTU, 2 * MTU, 4000])
                hdrs += struct.pack(">QII", self.va(ln), self.rkey(), ln & 0xFFFFFFFF)
            elif h == ATMETH:
                hdrs += struct.pack(">QIQQ", self.va(8, atomic=True), self.rkey(),
                                    rng.getrandbits(64), rng.getrandbits(64))
            elif h == DETH:
                qk = QKEY if rng.random() < 0.85 else rng.choice([0, 0x80010000, rng.getrandbits(32)])
                hdrs += struct.pack(">II", qk, self.me_qpn["ud"] if rng.random() < 0.8 else rng.getrandbits(24))
            elif h == IETH:
                hdrs += struct.pack(">I", self.rkey())
            elif h == AETH:
                hdrs += struct.pack(">I", rng.choice([0, 0x1F, 0x60, 0x61, 0x63, 0x20]) << 24 | rng.getrandbits(24))
            elif h == FETH:
                hdrs += struct.pack(">I", rng.getrandbits(6))
            else:
                hdrs += bytes(rng.getrandbits(8) for _ in range(HLEN[h]))
        if op == 0x1d:
            paylen = 8
        payload = self.bytes_(paylen) if op in PAYLOAD_OPS else b""
        pad = -len(payload) % 4
        qpn = self.peer["qpn"][n]
        b = struct.pack(">BBHII", op, (se << 7) | (pad << 4), 0xFFFF, qpn, (ackreq << 31) | psn)
        return bytearray(b + hdrs + payload + bytes(pad))

    def mutate(self, ib, n):
        """0-3 structured mutations of the IB part (without ICRC)."""
        rng = self.rng
        k = rng.choice([0, 0, 1, 1, 1, 2, 3])
        if k:
            self.stats["mutated"] += 1
        for _ in range(k):
            m = rng.randrange(12)
            if len(ib) < 12 and m != 8:
                continue
            if m == 0:  # QPN: another target QP, GSI, none, random
                qpn = rng.choice(list(self.peer["qpn"].values()) + [0, 1, 0xFFFFFF, rng.getrandbits(24)])
                ib[5:8] = qpn.to_bytes(3, "big")
            elif m == 1:  # pad count disagrees with the bytes
                ib[1] = (ib[1] & 0xCF) | (rng.randrange(4) << 4)
            elif m == 2:  # BTH flags, TVer, reserved bits, migreq
                ib[1] ^= 1 << rng.randrange(8)
            elif m == 3:  # P_Key
                ib[2:4] = rng.choice([b"\x7f\xff", b"\x00\x00", b"\x80\x01", os.urandom(2)])
            elif m == 4:  # reserved byte / ackreq / resv7
                ib[rng.choice([4, 8])] ^= 1 << rng.randrange(8)
            elif m == 5:  # opcode of another transport, or anything
                ib[0] = rng.choice(ALL_OPS) if rng.random() < 0.8 else rng.getrandbits(8)
            elif m == 6 and len(ib) > 12:  # random bytes in the headers
                for _ in range(rng.randint(1, 4)):
                    i = rng.randrange(12, min(len(ib), 60))
                    ib[i] = rng.getrandbits(8)
            elif m == 7:  # truncate anywhere
                del ib[rng.randrange(0, len(ib) + 1):]
            elif m == 8:  # extend
                ib += self.bytes_(rng.choice([1, 2, 3, 4, 8, 64, 300]))
            elif m == 9 and len(ib) > 12:  # payload cut to a non-multiple of 4
                del ib[max(12, len(ib) - rng.randint(1, 7)):]
            elif m == 10:  # PSN off the expected one
                ib[9:12] = self.psn(n).to_bytes(3, "big")
            elif m == 11:  # SE bit and ackreq
                ib[1] ^= 0x80
                ib[8] ^= 0x80
        return ib

    def icrc(self, v6, ib, ip_len, udp_len):
        """The ICRC of ib (IB part without ICRC, as much as the UDP length
        covers) behind IP and UDP headers with these length fields."""
        if v6:
            ip = b"\x6f\xff\xff\xff" + struct.pack(">HBB", ip_len, 17, 0xFF) + self.src6 + self.dst6
        else:
            ip = struct.pack(">BBHHHBBH", 0x45, 0xFF, ip_len, 0, 0x4000, 0xFF, 17, 0xFFFF)
            ip += self.src4 + self.dst4
        udp = struct.pack(">HHHH", 0xC0DE, 4791, udp_len, 0xFFFF)
        b = bytearray(ib[:12])
        if len(b) > 4:
            b[4] = 0xFF
        return struct.pack("<I", zlib.crc32(b"\xff" * 8 + ip + udp + bytes(b) + bytes(ib[12:])))

    @staticmethod
    def csum(data):
        if len(data) % 2:
            data += b"\0"
        s = sum(struct.unpack(f"!{len(data) // 2}H", data))
        while s >> 16:
            s = (s & 0xFFFF) + (s >> 16)
        return ~s & 0xFFFF

    def frame(self, ib, v6):
        """Ethernet frame around ib (no ICRC yet), with maybe bad lengths."""
        rng = self.rng
        r = rng.random()
        udp_extra = ip_extra = udp_lie = ip_lie = 0
        if r < 0.03:
            udp_extra = rng.randint(1, 16)   # junk inside UDP's IP datagram, past the UDP length
        elif r < 0.05:
            ip_extra = rng.randint(1, 16)    # junk past the IP total length
        elif r < 0.06:
            udp_lie = rng.choice([-4, 1, 4, 100])  # UDP length wrong, ICRC over the stated part
        elif r < 0.07:
            ip_lie = rng.choice([1, 8, 200])       # IP total length beyond the frame
        udp_len = 8 + len(ib) + 4 + udp_lie
        ip_payload = 8 + len(ib) + 4 + udp_extra
        ip_len = (ip_payload if v6 else 20 + ip_payload) + ip_lie
        covered = ib[:max(0, udp_len - 8 - 4)]
        crc = self.icrc(v6, covered, ip_len, udp_len)
        if rng.random() < 0.02:
            crc = bytes([crc[0] ^ 1]) + crc[1:]
            self.stats["bad_icrc"] += 1
        body = bytes(covered) + crc + bytes(ib[len(covered):]) + self.bytes_(udp_extra)
        if v6:
            udp = struct.pack(">HHHH", 0xC0DE, 4791, udp_len & 0xFFFF, 0)
            pseudo = self.src6 + self.dst6 + struct.pack(">IxxxB", udp_len & 0xFFFF, 17)
            c = self.csum((pseudo + udp + body)[:len(pseudo) + udp_len]) or 0xFFFF
            udp = udp[:6] + struct.pack(">H", c)
            ip = struct.pack(">IHBB", 0x60000000, ip_len & 0xFFFF, 17, 64) + self.src6 + self.dst6
            eth = self.dmac + self.smac + b"\x86\xdd"
        else:
            udp = struct.pack(">HHHH", 0xC0DE, 4791, udp_len & 0xFFFF, 0)
            h = struct.pack(">BBHHHBBH", 0x45, 0, ip_len & 0xFFFF, 0, 0x4000, 64, 17, 0) + self.src4 + self.dst4
            ip = h[:10] + struct.pack(">H", self.csum(h)) + h[12:]
            eth = self.dmac + self.smac + b"\x08\x00"
        return eth + ip + udp + body + self.bytes_(ip_extra)

    def send(self, ib, v6=None):
        del ib[1400:]  # the frame fits eth0's MTU
        if v6 is None:
            v6 = self.rng.random() < 0.1
        self.stats["v6"] += v6
        try:
            self.sock.send(self.frame(ib, v6))
        except OSError:
            self.stats["errors"] += 1
        self.stats["sent"] += 1

    def one(self):
        """A valid request (or a short valid message), then mutations."""
        rng = self.rng
        n = rng.choice(NAMES)
        kind = {"rc": RC_REQ, "rcs": RC_REQ, "uc": UC_REQ, "ud": UD_REQ}[n]
        r = rng.random()
        if r < 0.2 and n != "ud":
            # A multi-packet send or write in sequence at the expected PSN.
            first = rng.choice([op for op in FIRST_OF if (op < 0x20) == (n != "uc")])
            mid, last = FIRST_OF[first]
            k = rng.randint(0, 2)
            total = MTU * (k + 1) + rng.randint(1, MTU)
            psn = self.exp[n]
            seq = [(first, MTU), *[(mid, MTU)] * k, (last, total - MTU * (k + 1))]
            self.stats["seq"] += 1
            for op, ln in seq:
                ib = self.build(n, op, psn, ln, reth_len=total)
                if rng.random() < 0.15:
                    ib = self.mutate(ib, n)
                self.send(ib, v6=False)
                psn = (psn + 1) & M24
            self.exp[n] = psn
            return
        if r < 0.25:
            op = rng.choice(RC_RESP)
        elif r < 0.3:
            op = rng.choice(ALL_OPS)
        else:
            op = rng.choice(kind)
        psn = self.psn(n)
        ib = self.build(n, op, psn, self.paylen(op, op in (0x00, 0x01, 0x06, 0x07, 0x20, 0x21, 0x26, 0x27)),
                        se=rng.getrandbits(1), ackreq=rng.getrandbits(1))
        ib = self.mutate(ib, n)
        self.send(ib)
        if psn == self.exp[n] and n != "ud":
            self.exp[n] = (psn + 1) & M24

    def run(self, count):
        t0 = time.monotonic()
        while self.stats["sent"] < count:
            if self.stats["sent"] % 100 == 0:
                self.read_status()
            self.one()
            if self.stats["sent"] % 5000 < 1 and self.stats["sent"]:
                dt = time.monotonic() - t0
                log(f"fuzz: {self.stats['sent']} packets, {self.stats['sent'] / dt:.0f}/s")
        dt = max(time.monotonic() - t0, 1e-6)
        log(f"fuzz: {self.stats} in {dt:.1f}s ({self.stats['sent'] / dt:.0f} packets/s)")


# --- the exchange after the fuzz ------------------------------------------------


def exchange(ctl, node, peer):
    """Both sides reset and reconnect every QP, then real traffic on each."""
    node.drain()
    for n in NAMES:
        node.connect(n, peer, psn=0x100)
    if rl.is_server():
        for n in NAMES:
            node.fill(n)
        node.drain()
        rl.put(node.mr, 0, bytes(REMOTE_LEN))
    ctl.send({"reconnected": True})
    ctl.recv()
    if rl.is_client():
        client_exchange(ctl, node, peer)
    else:
        server_exchange(ctl, node, peer)


def _send(node, n, off, length, opcode=e.IBV_WR_SEND, remote=None, ah=None, peer_qpn=0):
    node.wr_id += 1
    sge = SGE(node.mr.buf + off, length, node.mr.lkey)
    wr = SendWR(wr_id=node.wr_id, opcode=opcode, num_sge=1, sg=[sge],
                send_flags=e.IBV_SEND_SIGNALED)
    if remote is not None:
        wr.set_wr_rdma(remote[0], remote[1])
    if ah is not None:
        wr.set_wr_ud(ah, peer_qpn, QKEY)
    node.qps[n].post_send(wr)


def _check_wcs(wcs, what):
    for wc in wcs:
        if wc.status != e.IBV_WC_SUCCESS:
            raise TestFailure(f"{what}: completion {rl.status_name(wc.status)} "
                              f"(opcode {wc.opcode}, QPN {wc.qp_num:#x})")


def client_exchange(ctl, node, peer):
    rng = random.Random(7)
    pat = {n: bytes(rng.getrandbits(8) for _ in range(3000)) for n in NAMES}
    for i, n in enumerate(NAMES):
        rl.put(node.mr, i * 4096, pat[n])
    # Sends on each QP (UD through an AH; UD carries at most the MTU).
    ah = rl.make_ah(node.pd, node.sgid, peer["gid"])
    lens = {"rc": 2000, "rcs": 1500, "uc": 1800, "ud": 1000}
    for i, n in enumerate(NAMES):
        if n == "ud":
            _send(node, n, i * 4096, lens[n], ah=ah, peer_qpn=peer["qpn"]["ud"])
        else:
            _send(node, n, i * 4096, lens[n])
        _check_wcs(rl.poll(node.scq, 1, what=f"{n} send"), f"{n} send")
    ctl.send({"sent": {n: pat[n][:lens[n]].hex() for n in NAMES}})
    ctl.recv()
    # RDMA WRITE then READ back on RC; WRITE on UC.
    wpat = bytes(rng.getrandbits(8) for _ in range(5000))
    rl.put(node.mr, 20000, wpat)
    _send(node, "rc", 20000, 5000, e.IBV_WR_RDMA_WRITE, remote=(peer["rkey"], peer["va"] + 100))
    _send(node, "uc", 20000, 3000, e.IBV_WR_RDMA_WRITE, remote=(peer["rkey"], peer["va"] + 9000))
    _check_wcs(rl.poll(node.scq, 2, what="writes"), "writes")
    # The RC write is acknowledged, so placed: read it back through another QP.
    _send(node, "rcs", 30000, 5000, e.IBV_WR_RDMA_READ, remote=(peer["rkey"], peer["va"] + 100))
    _check_wcs(rl.poll(node.scq, 1, what="read"), "read")
    got = rl.get(node.mr, 30000, 5000)
    if got != wpat:
        raise TestFailure(f"RDMA READ back differs at byte {rl.first_diff(got, wpat)}")
    ctl.send({"written": True})
    msg = ctl.recv()
    if not msg.get("uc_ok"):
        raise TestFailure("UC write not seen by node 2")
    # A send back from node 2 on RC.
    node.drain()
    node.fill("rc", 4)
    ctl.send({"post_back": True})
    wcs = rl.poll(node.rcq, 1, what="send from node 2")
    _check_wcs(wcs, "send from node 2")
    log("exchange after the fuzz: ok (sends on RC, RC+SRQ, UC, UD; RDMA WRITE on RC and UC; "
        "RDMA READ; a send back)")


def server_exchange(ctl, node, peer):
    msg = ctl.recv()
    sent = {n: bytes.fromhex(v) for n, v in msg["sent"].items()}
    wcs = rl.poll(node.rcq, 4, what="receives after the fuzz")
    _check_wcs(wcs, "receives after the fuzz")
    by_qp = {q.qp_num: n for n, q in node.qps.items()}
    for wc in wcs:
        n = by_qp[wc.qp_num]
        want = sent[n]
        extra = 40 if n == "ud" else 0
        if wc.byte_len != len(want) + extra:
            raise TestFailure(f"{n}: received {wc.byte_len} bytes, want {len(want) + extra}")
        got = rl.get(node.mr, recv_off(n, wc.wr_id) + extra, len(want))
        if got != want:
            raise TestFailure(f"{n}: received data differs at byte {rl.first_diff(got, want)}")
    ctl.send({"ok": True})
    ctl.recv()
    deadline = time.monotonic() + 10
    while True:
        uc_ok = rl.get(node.mr, 9000, 16) != bytes(16)
        if uc_ok or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    ctl.send({"uc_ok": uc_ok})
    ctl.recv()
    rl.put(node.mr, 40000, b"back" * 64)
    _send(node, "rc", 40000, 256)
    _check_wcs(rl.poll(node.scq, 1, what="send back"), "send back")


def body(ctl):
    node = Node(with_srq=rl.is_server())
    if rl.is_server():
        target(ctl, node)
        peer = ctl.recv()
        exchange(ctl, node, peer)
        return
    ctl.send(node.info())
    peer = ctl.recv()
    for n in NAMES:
        node.connect(n, peer)
    ctl.recv()  # ready
    f = Fuzzer(peer, node.info(), SEED)
    f.run(PACKETS)
    time.sleep(1)
    ctl.send({"done": True})
    ctl.send(node.info())
    exchange(ctl, node, peer)


if __name__ == "__main__":
    sys.exit(rl.run_main(body))
