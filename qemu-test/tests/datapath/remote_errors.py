#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
"""Remote access errors over RC between two nodes (node 2 serves, node 1
is the client), over the IPv4 RoCE v2 GID:

  qemu-test/run --drivers rs,c qemu-test/tests/datapath/remote_errors.py [CASE...]

Each case gets a new QP pair. The client posts one bad request (bad rkey,
outside the MR, an MR or a responder QP without the access right, a
misaligned atomic, a send longer than the receive, a remote invalidation
rxe refuses) followed by a good RDMA WRITE and a SEND, and one more SEND
once the error completion is in. Expected, as rdma_rxe does it (runs with
--drivers c,c): the bad request completes with the status in CASES, the
requester QP is in ERR, every later request completes with WR_FLUSH_ERR
(see LATER for the exceptions); the responder QP is in ERR too and its
posted receive flushes, or completes with the status in CASES. The
responder's memory, including the unregistered pages around each MR, is
unchanged. Zero-length reads and writes need no valid rkey and succeed.

The rxe provider refuses misaligned atomics at post time, so hand-made
requests (raw UDP, with the PSN the responder QP expects) carry them to
the responder; its ACK or NAK is read off the wire.

Each case's QPs are made together with a second pair on the same
devices, which must move data correctly (write, read back, send) after
the error; a last pair made after all cases must too.

On an rs client, `rdma resource show qp -dd` names the error completion
as the QP's last error.

Exits non-zero on any failure; prints "remote_errors: N cases ok".
"""

import ctypes
import errno
import mmap
import random
import socket
import struct
import sys
import time

from pyverbs.cq import CQ
from pyverbs.device import Context
from pyverbs.mr import MR
from pyverbs.pd import PD
from pyverbs.pyverbs_error import PyverbsRDMAError
from pyverbs.wr import RecvWR, SendWR, SGE
import pyverbs.enums as e

import rc_lib as rl
from rc_lib import TestFailure, log
from testlib import DEV, DRIVER, NODE_IP, WC_STATUS_MSG, rdma_res_entry

PAGE = 4096
MR_SIZE = 4 * PAGE
GUARD = PAGE

W, R, A = e.IBV_WR_RDMA_WRITE, e.IBV_WR_RDMA_READ, e.IBV_WR_ATOMIC_FETCH_AND_ADD
CAS, SEND, WIMM = e.IBV_WR_ATOMIC_CMP_AND_SWP, e.IBV_WR_SEND, e.IBV_WR_RDMA_WRITE_WITH_IMM

ACC = rl.ACC_ALL
ACC_WO = e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE
ACC_RO = e.IBV_ACCESS_REMOTE_READ
ACC_NOATOMIC = e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE | e.IBV_ACCESS_REMOTE_READ
MRS = {"all": ACC, "wo": ACC_WO, "ro": ACC_RO, "noatomic": ACC_NOATOMIC}

ACCESS_ERR = "REM_ACCESS_ERR"
INV_REQ = "REM_INV_REQ_ERR"
RAW_FA, RAW_CAS = "raw fetch-add", "raw cas"
SINV = e.IBV_WR_SEND_WITH_INV
# The status of the request after the bad one where it is neither
# WR_FLUSH_ERR (after an error) nor SUCCESS (after a success).
LATER = {
    "send-with-inv-user-mr": "RETRY_EXC_ERR",
    "send-with-inv-bad-rkey": "RETRY_EXC_ERR",
}
# A good request (opcode, length) posted before the bad one, at LEAD_OFF
# of MR "all": it must complete successfully, with its data.
LEAD = {
    "read-then-bad-write": (R, 8192),
    "write-then-bad-read": (W, 8192),
    "read-then-read-past-end": (R, 8192),
    "fetch-add-then-bad-fetch-add": (A, 8),
}
LEAD_OFF = 4096
# The responder QP's access flags where a case needs other than ACC.
QP_ACCESS = {
    "write-qp-no-remote-write": ACC & ~e.IBV_ACCESS_REMOTE_WRITE,
    "read-qp-no-remote-read": ACC & ~e.IBV_ACCESS_REMOTE_READ,
    "fetch-add-qp-no-remote-atomic": ACC & ~e.IBV_ACCESS_REMOTE_ATOMIC,
}
# RC opcodes and AETH syndromes of hand-made packets.
OP_RC_ACK, OP_RC_ATOMIC_ACK, OP_RC_CAS, OP_RC_FA = 0x11, 0x12, 0x13, 0x14
NAK_NAME = {0x60: "NAK:PSN_SEQ", 0x61: "NAK:INV_REQ", 0x62: "NAK:REM_ACCESS", 0x63: "NAK:REM_OP"}

# name: (opcode, target MR, offset from the MR's start, length, rkey
# change, requester status, responder receive status)
# The statuses are rdma_rxe's (runs with --drivers c,c).
CASES = {
    "write-bad-rkey":        (W, "all", 0, 64, 0x80, ACCESS_ERR, "WR_FLUSH_ERR"),
    "read-bad-rkey":         (R, "all", 0, 64, 0x80, ACCESS_ERR, "WR_FLUSH_ERR"),
    "fetch-add-bad-rkey":    (A, "all", 0, 8, 0x80, ACCESS_ERR, "WR_FLUSH_ERR"),
    "cas-bad-rkey":          (CAS, "all", 0, 8, 0x80, ACCESS_ERR, "WR_FLUSH_ERR"),
    "write-imm-bad-rkey":    (WIMM, "all", 0, 64, 0x80, ACCESS_ERR, ACCESS_ERR),
    "write-unknown-index":   (W, "all", 0, 64, "index", ACCESS_ERR, "WR_FLUSH_ERR"),
    "write-past-end":        (W, "all", MR_SIZE - 32, 64, 0, ACCESS_ERR, "WR_FLUSH_ERR"),
    "write-past-end-multi":  (W, "all", MR_SIZE - 2048, 4096, 0, ACCESS_ERR, "WR_FLUSH_ERR"),
    "write-one-past-end":    (W, "all", 0, MR_SIZE + 1, 0, ACCESS_ERR, "WR_FLUSH_ERR"),
    "write-at-end":          (W, "all", MR_SIZE, 1, 0, ACCESS_ERR, "WR_FLUSH_ERR"),
    "write-before-start":    (W, "all", -8, 64, 0, ACCESS_ERR, "WR_FLUSH_ERR"),
    "read-past-end":         (R, "all", MR_SIZE - 32, 64, 0, ACCESS_ERR, "WR_FLUSH_ERR"),
    "read-past-end-multi":   (R, "all", MR_SIZE - 2048, 4096, 0, ACCESS_ERR, "WR_FLUSH_ERR"),
    "read-before-start":     (R, "all", -8, 64, 0, ACCESS_ERR, "WR_FLUSH_ERR"),
    "fetch-add-past-end":    (A, "all", MR_SIZE, 8, 0, ACCESS_ERR, "WR_FLUSH_ERR"),
    "fetch-add-before-start": (A, "all", -8, 8, 0, ACCESS_ERR, "WR_FLUSH_ERR"),
    "read-write-only-mr":    (R, "wo", 0, 64, 0, ACCESS_ERR, "WR_FLUSH_ERR"),
    "write-read-only-mr":    (W, "ro", 0, 64, 0, ACCESS_ERR, "WR_FLUSH_ERR"),
    "fetch-add-no-atomic-mr": (A, "noatomic", 0, 8, 0, ACCESS_ERR, "WR_FLUSH_ERR"),
    "cas-read-only-mr":      (CAS, "ro", 0, 8, 0, ACCESS_ERR, "WR_FLUSH_ERR"),
    # The rxe provider refuses misaligned atomics at post time...
    "fetch-add-misaligned":  (A, "all", 4, 8, 0, "post:EINVAL", None),
    "cas-misaligned":        (CAS, "all", 8 + 2, 8, 0, "post:EINVAL", None),
    # ... so hand-made requests take them to the responder, which answers
    # with an Invalid Request NAK.
    "raw-fetch-add-misaligned": (RAW_FA, "all", 4, 8, 0, "NAK:INV_REQ", "WR_FLUSH_ERR"),
    "raw-cas-misaligned":    (RAW_CAS, "all", 8 + 2, 8, 0, "NAK:INV_REQ", "WR_FLUSH_ERR"),
    # And a hand-made aligned one is executed (the path works).
    "raw-fetch-add-aligned": (RAW_FA, "all", 8, 8, 0, "ACK", None),
    "send-too-long":         (SEND, None, 0, 256, 0, "REM_OP_ERR", "LOC_QP_OP_ERR"),
    # The responder QP lacks the remote right (its MR has it).
    "write-qp-no-remote-write": (W, "all", 0, 64, 0, INV_REQ, "WR_FLUSH_ERR"),
    "read-qp-no-remote-read":  (R, "all", 0, 64, 0, INV_REQ, "WR_FLUSH_ERR"),
    "fetch-add-qp-no-remote-atomic": (A, "all", 0, 8, 0, INV_REQ, "WR_FLUSH_ERR"),
    # Remote invalidation of a user MR (rxe invalidates only fast-reg MRs),
    # and of an rkey nobody has: rdma_rxe fails the receive and moves its
    # QP to ERR but still ACKs the send, so the requester learns of it only
    # when its next request times out (LATER).
    "send-with-inv-user-mr": (SINV, "all", 0, 16, 0, "SUCCESS", INV_REQ),
    "send-with-inv-bad-rkey": (SINV, "all", 0, 16, 0x80, "SUCCESS", INV_REQ),
    # Zero-length requests need no valid rkey or address (C9-88).
    # A good request still in flight when the bad one fails (LEAD).
    "read-then-bad-write":   (W, "all", 0, 64, 0x80, ACCESS_ERR, "WR_FLUSH_ERR"),
    "write-then-bad-read":   (R, "all", 0, 64, 0x80, ACCESS_ERR, "WR_FLUSH_ERR"),
    "read-then-read-past-end": (R, "all", MR_SIZE - 32, 64, 0, ACCESS_ERR, "WR_FLUSH_ERR"),
    "fetch-add-then-bad-fetch-add": (A, "all", 0, 8, 0x80, ACCESS_ERR, "WR_FLUSH_ERR"),
    "write-0-bad-rkey":      (W, "all", 0, 0, 0x80, "SUCCESS", "SUCCESS"),
    "read-0-bad-rkey":       (R, "all", 0, 0, 0x80, "SUCCESS", "SUCCESS"),
}

# Arguments: only these cases (the names above).
if [a for a in sys.argv[1:] if a]:
    CASES = {n: CASES[n] for n in sys.argv[1:] if n}

RECV_LEN = 64        # the responder's posted receive
# Local ACK timeout (4.096 us * 2^16 = 268 ms) and retries: rxe retries
# forever with retry_cnt 7, so a request nobody answers must meet fewer.
TIMEOUT, RETRY = 16, 3
GOOD_SEND = 16


class Region:
    """A registered MR with an unregistered guard page on each side, all
    in one private mapping."""

    def __init__(self, pd, access, fill):
        self.map = mmap.mmap(-1, GUARD + MR_SIZE + GUARD)
        self.base = ctypes.addressof(ctypes.c_char.from_buffer(self.map))
        self.addr = self.base + GUARD
        self.fill = fill
        self.map[:] = fill
        self.mr = MR(pd, MR_SIZE, access, address=self.addr)

    def check(self):
        """Problems with the mapping's content (MR and guards)."""
        got = bytes(self.map)
        i = rl.first_diff(got, self.fill)
        if i is None:
            return []
        part = "MR" if GUARD <= i < GUARD + MR_SIZE else "guard page"
        return [f"MISMATCH at MR offset {i - GUARD} ({part}): expected {self.fill[i]:#04x}, "
                f"got {got[i]:#04x}; {rl.count_diff(got, self.fill)} bytes differ"]

    def restore(self):
        self.map[:] = self.fill


def fresh_data(name):
    """What the other pair writes after case name (differs between cases)."""
    seed = sum(name.encode())
    period = bytes((i * 31 + seed) & 0xFF for i in range(253))
    return (period * (MR_SIZE // 253 + 1))[:MR_SIZE]


def lead_data(n):
    period = bytes((i * 101 + 7) & 0xFF for i in range(241))
    return (period * (n // 241 + 1))[:n]


def all_fill():
    """The content of the server's MR "all" (its fill, without the guards)."""
    return fill_pattern(GUARD + MR_SIZE + GUARD, 1)[GUARD:GUARD + MR_SIZE]


def check_lead(lk, lead):
    """What a leading read or fetch-and-add brought back."""
    lop, llen = lead
    if lop == W:
        return []
    got = rl.get(lk, MR_SIZE, llen)
    want = all_fill()[LEAD_OFF:LEAD_OFF + llen]
    i = rl.first_diff(got, want)
    if i is None:
        return []
    return [f"leading {'read' if lop == R else 'fetch-and-add'}: MISMATCH at offset {i}: "
            f"expected {want[i]:#04x}, got {got[i]:#04x}"]


def fill_pattern(n, seed):
    base = bytes((i * 13 + seed) & 0xFF for i in range(251))
    return (base * (n // 251 + 1))[:n]


class Env:
    def __init__(self):
        self.ctx = Context(name=DEV)
        self.pd = PD(self.ctx)
        self.local = MR(self.pd, 2 * MR_SIZE, ACC)
        self.regions = {}
        self.gidx, self.gid = rl.gid_index(NODE_IP)

    def server_regions(self):
        size = GUARD + MR_SIZE + GUARD
        for i, (name, acc) in enumerate(MRS.items()):
            self.regions[name] = Region(self.pd, acc, fill_pattern(size, 17 * i + 1))

    def new_pairs(self, ctl, specs):
        """QPs with a CQ each, connected to the peer's through the control
        channel: one per (post a receive, access flags) in specs. Returns
        (qp, cq, peer's details) per QP; remembers the first one's PSN."""
        made = []
        for _ in specs:
            cq = CQ(self.ctx, 64)
            qp = rl.make_qp(self.pd, cq, cq, wr=16, sge=1, inline=0)
            made.append((qp, cq, random.getrandbits(24)))
        self.last_psn = made[0][2]
        me = [{"qpn": qp.qp_num, "psn": psn, "gid": self.gid} for qp, _, psn in made]
        if rl.is_server():
            for m in me:
                m["mrs"] = {n: [r.addr, r.mr.rkey] for n, r in self.regions.items()}
        ctl.send({"qps": me})
        peers = ctl.recv()["qps"]
        out = []
        for (qp, cq, psn), peer, (recv, access) in zip(made, peers, specs):
            rl.connect(qp, access, self.gidx, peer["gid"], peer["qpn"], rq_psn=peer["psn"],
                       sq_psn=psn, timeout=TIMEOUT, retry=RETRY)
            if recv:
                qp.post_recv(RecvWR(wr_id=0x5E, num_sge=1,
                                    sg=[SGE(self.local.buf, RECV_LEN, self.local.lkey)]))
            out.append((qp, cq, peer))
        ctl.send({"rts": True})
        ctl.recv()
        return out


def close_pairs(pairs):
    for qp, cq, _ in pairs:
        qp.close()
        cq.close()


def wait_state(qp, want, limit=5.0):
    deadline = time.monotonic() + limit
    while True:
        st = rl.qp_state(qp)
        if st == want or time.monotonic() > deadline:
            return st
        time.sleep(0.02)


def post(qp, wr_id, opcode, sge, raddr=0, rkey=0, imm=None):
    wr = SendWR(wr_id=wr_id, opcode=opcode, num_sge=1, sg=[sge])
    if opcode == SINV:
        # imm_data shares its place with invalidate_rkey.
        wr.imm_data = rkey
    elif opcode in (A, CAS):
        wr.set_wr_atomic(rkey, raddr, 1, 0)
    elif opcode in (W, R, WIMM):
        wr.set_wr_rdma(rkey, raddr)
    if imm is not None:
        wr.imm_data = imm
    qp.post_send(wr)


def bad_rkey(rkey, change):
    if change == "index":
        # An MR index nobody has (the key byte kept).
        return ((rkey >> 8) ^ 0x7FFF) << 8 | (rkey & 0xFF)
    return rkey ^ change


# ---------------------------------------------------------------------------
# Client (node 1).

def sniff_ack(sock, src_ip, dqpn, limit=5.0):
    """The first RC ACK (or atomic ACK) from src_ip to dqpn seen on the
    packet socket: (opcode, syndrome, msn, psn, original value), or None."""
    deadline = time.monotonic() + limit
    src = socket.inet_aton(src_ip)
    while time.monotonic() < deadline:
        sock.settimeout(max(0.01, deadline - time.monotonic()))
        try:
            frame = sock.recv(65535)
        except socket.timeout:
            return None
        if len(frame) < 14 + 20 + 8 + 12 + 4 or frame[12:14] != b"\x08\x00":
            continue
        ip = frame[14:]
        ihl = (ip[0] & 0xF) * 4
        if ip[9] != 17 or ip[12:16] != src:
            continue
        udp = ip[ihl:]
        if struct.unpack(">H", udp[2:4])[0] != 4791:
            continue
        ib = udp[8:]
        opcode = ib[0]
        qpn = struct.unpack(">I", ib[4:8])[0] & 0xFFFFFF
        psn = struct.unpack(">I", ib[8:12])[0] & 0xFFFFFF
        if qpn != dqpn or opcode not in (OP_RC_ACK, OP_RC_ATOMIC_ACK):
            continue
        aeth = struct.unpack(">I", ib[12:16])[0]
        orig = struct.unpack(">Q", ib[16:24])[0] if opcode == OP_RC_ATOMIC_ACK else None
        return opcode, aeth >> 24, aeth & 0xFFFFFF, psn, orig
    return None


def raw_atomic(env, peer, opcode, target, off, client_qpn):
    """Sends node 2's QP a hand-made atomic request with the PSN it
    expects, and returns what its ACK says ("ACK", "NAK:...", "none")."""
    from roce_packet import Path, bth
    addr, rkey = peer["mrs"][target]
    path = Path(False, NODE_IP, rl.server_ip())
    sniff = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0003))
    sniff.bind(("eth0", 0))
    op = OP_RC_FA if opcode == RAW_FA else OP_RC_CAS
    # BTH with AckReq, AtomicETH (VA, rkey, swap or add, compare), ICRC.
    pkt = (bth(op, peer["qpn"], 0) [:8] + struct.pack(">I", (1 << 31) | env.last_psn)
           + struct.pack(">QIQQ", addr + off, rkey, 1, 0) + bytes(4))
    path.send(path.icrc(pkt))
    got = sniff_ack(sniff, rl.server_ip(), client_qpn)
    sniff.close()
    path.sock.close()
    if got is None:
        return "none", None
    opc, syn, _, psn, orig = got
    if psn != env.last_psn:
        return f"ACK for PSN {psn:#x}, sent {env.last_psn:#x}", None
    if syn >> 5 == 0 and opc == OP_RC_ATOMIC_ACK:
        return "ACK", orig
    return NAK_NAME.get(syn, f"syndrome {syn:#x}"), None


def client_raw_case(env, ctl, name, pairs):
    qp, cq, peer = pairs[0]
    opcode, target, off, _, _, want_status, _ = CASES[name]
    probs = []
    first, orig = raw_atomic(env, peer, opcode, target, off, qp.qp_num)
    if first != want_status:
        probs.append(f"the responder answered {first}, want {want_status}")
    if first == "ACK":
        # The region's fill is known: the word at off, little-endian.
        reg_fill = fill_pattern(GUARD + MR_SIZE + GUARD, 17 * list(MRS).index(target) + 1)
        want = struct.unpack("<Q", reg_fill[GUARD + off:GUARD + off + 8])[0]
        if orig != want:
            probs.append(f"fetched {orig:#x}, the word held {want:#x}")
    # The requester never sent that PSN: it must be unaffected.
    st = rl.qp_state(qp)
    if st != rl.RTS:
        probs.append(f"requester QP in {rl.QP_STATE.get(st, st)} after the foreign ACK, want RTS")
    extra = rl.poll_none(cq, 0.05)
    if extra:
        probs.append(f"requester completions {[(w.wr_id, rl.status_name(w.status)) for w in extra]}")
    return client_finish(env, ctl, name, pairs, first, probs)


def client_case(env, ctl, name):
    opcode, target, off, length, change, want_status, _ = CASES[name]
    ctl.send({"case": name})
    # The case's pair, and a bystander pair that must work afterwards.
    pairs = env.new_pairs(ctl, [(False, ACC), (False, ACC)])
    qp, cq, peer = pairs[0]
    if opcode in (RAW_FA, RAW_CAS):
        return client_raw_case(env, ctl, name, pairs)
    lk = env.local
    probs = []
    lead = LEAD.get(name)
    if lead:
        lop, llen = lead
        addr, rkey = peer["mrs"]["all"]
        rl.put(lk, 0, lead_data(llen))
        rl.put(lk, MR_SIZE, b"\0" * llen)
        src = lk.buf if lop == W else lk.buf + MR_SIZE
        post(qp, 0, lop, SGE(src, llen, lk.lkey), addr + LEAD_OFF, rkey)
    try:
        if opcode == SEND:
            post(qp, 1, SEND, SGE(lk.buf, length, lk.lkey))
        elif opcode == SINV:
            rkey = peer["mrs"][target][1]
            post(qp, 1, SINV, SGE(lk.buf, length, lk.lkey), rkey=bad_rkey(rkey, change) if change else rkey)
        else:
            addr, rkey = peer["mrs"][target]
            if change:
                rkey = bad_rkey(rkey, change)
            post(qp, 1, opcode, SGE(lk.buf, length, lk.lkey), addr + off, rkey,
                 imm=0x1234 if opcode == WIMM else None)
    except PyverbsRDMAError as err:
        # Refused at post time: nothing went out.
        first = f"post:{errno.errorcode.get(err.error_code, err.error_code)}"
        ctl.send({"client": [], "first": first})
        reply = ctl.recv()
        probs = [] if first == want_status else [f"posting the request failed ({first}), want {want_status}"]
        probs += client_fresh_pair(env, ctl, name, pairs[1])
        close_pairs(pairs)
        return first, reply["responder"], probs
    good_addr, good_rkey = peer["mrs"]["all"]
    post(qp, 2, W, SGE(lk.buf, 32, lk.lkey), good_addr + 64, good_rkey)
    post(qp, 3, SEND, SGE(lk.buf, GOOD_SEND, lk.lkey))
    wcs = rl.poll_upto(cq, 4 if lead else 3, timeout=20)
    if lead:
        probs += check_lead(lk, lead)
    after = LATER.get(name, "SUCCESS" if want_status == "SUCCESS" else "WR_FLUSH_ERR")
    if after == "SUCCESS":
        want = [(1, want_status), (2, "SUCCESS"), (3, "SUCCESS")]
        want_state = rl.RTS
    else:
        st = wait_state(qp, rl.ERR, 1)
        if st != rl.ERR:
            probs.append(f"requester QP in {rl.QP_STATE.get(st, st)} after the error, want ERR")
        post(qp, 4, SEND, SGE(lk.buf, GOOD_SEND, lk.lkey))
        wcs += rl.poll_upto(cq, 1, timeout=10)
        want = [(1, want_status), (2, after), (3, "WR_FLUSH_ERR"), (4, "WR_FLUSH_ERR")]
        want_state = rl.ERR
    if lead:
        want = [(0, "SUCCESS")] + want
    got = [(wc.wr_id, rl.status_name(wc.status)) for wc in wcs]
    if got != want:
        probs.append(f"requester completions {got}, want {want}")
    extra = rl.poll_none(cq, 0.05)
    if extra:
        probs.append(f"extra requester completions {[(w.wr_id, rl.status_name(w.status)) for w in extra]}")
    st = rl.qp_state(qp)
    if st != want_state:
        probs.append(f"requester QP in {rl.QP_STATE.get(st, st)}, want {rl.QP_STATE[want_state]}")
    first = next((st for wr_id, st in got if wr_id == 1), "none")
    if DRIVER == "rs" and first in WC_STATUS_MSG:
        # The error is what `rdma resource show qp` gives as the last one.
        ent = rdma_res_entry("qp", "lqpn", qp.qp_num)
        if ent is None or ent.get("last_err") != WC_STATUS_MSG[first]:
            probs.append(f"rdma resource show qp: last_err {ent and ent.get('last_err')!r}, "
                         f"want {WC_STATUS_MSG[first]!r}")
    return client_finish(env, ctl, name, pairs, first, probs)


def client_finish(env, ctl, name, pairs, first, probs):
    """Ends a client case: sends its findings, adds the server's, checks that
    the second pair still moves data and closes both."""
    ctl.send({"client": probs, "first": first})
    reply = ctl.recv()
    probs += [f"responder: {p}" for p in reply["server"]]
    probs += client_fresh_pair(env, ctl, name, pairs[1])
    close_pairs(pairs)
    return first, reply["responder"], probs


def client_fresh_pair(env, ctl, name, pair):
    """Another QP pair moves data correctly: write, read back, send."""
    qp, cq, peer = pair
    lk = env.local
    addr, rkey = peer["mrs"]["all"]
    data = fresh_data(name)
    rl.put(lk, 0, data)
    rl.put(lk, MR_SIZE, b"\0" * MR_SIZE)
    post(qp, 11, W, SGE(lk.buf, MR_SIZE, lk.lkey), addr, rkey)
    post(qp, 12, R, SGE(lk.buf + MR_SIZE, MR_SIZE, lk.lkey), addr, rkey)
    post(qp, 13, SEND, SGE(lk.buf, RECV_LEN, lk.lkey))
    wcs = rl.poll(cq, 3, timeout=30, what=f"{name}: other pair completions")
    probs = []
    got = [(wc.wr_id, rl.status_name(wc.status)) for wc in wcs]
    if got != [(11, "SUCCESS"), (12, "SUCCESS"), (13, "SUCCESS")]:
        probs.append(f"other pair: completions {got}")
    back = rl.get(lk, MR_SIZE, MR_SIZE)
    i = rl.first_diff(back, data)
    if i is not None:
        probs.append(f"other pair: read back MISMATCH at offset {i}: expected {data[i]:#04x}, got {back[i]:#04x}")
    ctl.send({"fresh": probs, "name": name})
    probs += [f"other pair, responder: {p}" for p in ctl.recv()["server"]]
    return probs


def client(ctl, env):
    failed = []
    log(f"{'case':24} {'requester':16} {'responder recv':16} result")
    for name in CASES:
        t0 = time.monotonic()
        first, resp, probs = client_case(env, ctl, name)
        print(f"  {name:24} {first:16} {resp:16} {'ok' if not probs else 'FAIL'} "
              f"({time.monotonic() - t0:.1f}s)", flush=True)
        for p in probs:
            print(f"      {p}", flush=True)
        if probs:
            failed.append(name)
    # And a pair made after all that.
    ctl.send({"final": True})
    pairs = env.new_pairs(ctl, [(False, ACC)])
    probs = client_fresh_pair(env, ctl, "final", pairs[0])
    close_pairs(pairs)
    print(f"  {'new pair at the end':24} {'':16} {'':16} {'ok' if not probs else 'FAIL'}", flush=True)
    for p in probs:
        print(f"      {p}", flush=True)
    if probs:
        failed.append("final")
    ctl.send({"end": True})
    ctl.recv()
    if failed:
        raise TestFailure(f"{len(failed)} of {len(CASES)} cases failed: {' '.join(failed)}")
    print(f"remote_errors: {len(CASES)} cases ok", flush=True)


# ---------------------------------------------------------------------------
# Server (node 2).

def server_case(env, ctl, name):
    _, _, _, _, _, want_status, want_recv = CASES[name]
    pairs = env.new_pairs(ctl, [(True, QP_ACCESS.get(name, ACC)), (True, ACC)])
    qp, cq, _ = pairs[0]
    rl.put(env.local, 0, b"\xcc" * RECV_LEN)
    msg = ctl.recv()
    probs = []
    refused = want_recv is None
    ok = want_status == "SUCCESS" and name not in LATER   # the good write landed
    want_state = rl.RTS if want_recv in ("SUCCESS", None) else rl.ERR
    st = wait_state(qp, want_state, 5)
    if st != want_state:
        probs.append(f"QP in {rl.QP_STATE.get(st, st)}, want {rl.QP_STATE[want_state]}")
    if refused and st != rl.ERR:
        wcs = rl.poll_none(cq, 0.1)
    else:
        wcs = rl.poll_upto(cq, 1, timeout=10)
    got = [(wc.wr_id, rl.status_name(wc.status)) for wc in wcs]
    resp = got[0][1] if got else "none"
    want = [] if refused else [(0x5E, want_recv)]
    if CASES[name][0] == RAW_FA and want_status == "ACK":
        # The fetch-and-add of 1 on the word at its offset.
        reg = env.regions[CASES[name][1]]
        o = GUARD + CASES[name][2]
        old = struct.unpack("<Q", reg.fill[o:o + 8])[0]
        now = struct.unpack("<Q", bytes(reg.map[o:o + 8]))[0]
        if now != (old + 1) & ((1 << 64) - 1):
            probs.append(f"the word after the fetch-and-add: {now:#x}, want {old + 1:#x}")
        reg.map[o:o + 8] = reg.fill[o:o + 8]
    if got != want:
        probs.append(f"receive completions {got}, want {want}")
    extra = rl.poll_none(cq, 0.05)
    if extra:
        probs.append(f"extra completions {[(w.wr_id, rl.status_name(w.status)) for w in extra]}")
    # Memory is unchanged, but for the good write (32 bytes at offset 64)
    # when the bad request was harmless.
    lead = LEAD.get(name)
    if lead and lead[0] in (W, A):
        reg, o, n = env.regions["all"], GUARD + LEAD_OFF, lead[1]
        if lead[0] == W:
            want_b = lead_data(n)
        else:
            old = struct.unpack("<Q", reg.fill[o:o + 8])[0]
            want_b = struct.pack("<Q", (old + 1) & ((1 << 64) - 1))
        got_b = bytes(reg.map[o:o + n])
        i = rl.first_diff(got_b, want_b)
        if i is not None:
            probs.append(f"the leading request's target: MISMATCH at offset {i}: "
                         f"expected {want_b[i]:#04x}, got {got_b[i]:#04x}")
        reg.map[o:o + n] = reg.fill[o:o + n]
    for rname, reg in env.regions.items():
        if ok and rname == "all":
            reg.map[GUARD + 64:GUARD + 96] = reg.fill[GUARD + 64:GUARD + 96]
        probs += [f"MR {rname}: {p}" for p in reg.check()]
        reg.restore()
    ctl.send({"server": probs, "responder": resp})
    server_fresh_pair(env, ctl, pairs[1])
    close_pairs(pairs)


def server_fresh_pair(env, ctl, pair):
    qp, cq, _ = pair
    msg = ctl.recv()
    probs = []
    wcs = rl.poll(cq, 1, timeout=10, what="other pair: receive")
    got = [(wc.wr_id, rl.status_name(wc.status), wc.byte_len) for wc in wcs]
    if got != [(0x5E, "SUCCESS", RECV_LEN)]:
        probs.append(f"receive completions {got}")
    data = fresh_data(msg["name"])
    recvd = rl.get(env.local, 0, RECV_LEN)
    if recvd != data[:RECV_LEN]:
        probs.append(f"received {recvd.hex()}, sent {data[:RECV_LEN].hex()}")
    reg = env.regions["all"]
    want = bytearray(reg.fill)
    want[GUARD:GUARD + MR_SIZE] = data
    got = bytes(reg.map)
    i = rl.first_diff(got, want)
    if i is not None:
        probs.append(f"MR 'all' after the write: MISMATCH at MR offset {i - GUARD}: "
                     f"expected {want[i]:#04x}, got {got[i]:#04x}")
    for rname, other in env.regions.items():
        if rname != "all":
            probs += [f"MR {rname}: {p}" for p in other.check()]
    reg.restore()
    st = rl.qp_state(qp)
    if st != rl.RTS:
        probs.append(f"QP in {rl.QP_STATE.get(st, st)}")
    ctl.send({"server": probs})


def server(ctl, env):
    env.server_regions()
    while True:
        msg = ctl.recv()
        if "end" in msg:
            ctl.send({"ok": True})
            break
        if "final" in msg:
            pairs = env.new_pairs(ctl, [(True, ACC)])
            server_fresh_pair(env, ctl, pairs[0])
            close_pairs(pairs)
            continue
        server_case(env, ctl, msg["case"])


def body(ctl):
    env = Env()
    log(f"remote_errors on {DEV} ({DRIVER}), GID index {env.gidx}")
    if rl.is_client():
        client(ctl, env)
    else:
        server(ctl, env)
    env.ctx.close()


if __name__ == "__main__":
    sys.exit(rl.run_main(body))
