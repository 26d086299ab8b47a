#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
"""Soak: MINUTES of mixed traffic between two nodes, both ways at once over
several QPs, every byte checked; afterwards slab and vmalloc usage must be
where a warm-up left them, the device's objects gone and kmemleak clean.

  qemu-test/run --debug --drivers rs,rs --timeout SECS \\
      qemu-test/tests/datapath/soak.py [MINUTES [SEED [RC_LANES]]]
  make soak      # SOAK_MINUTES=30 on the debug kernel (not in make test)

Each node runs lanes: worker processes, each paired with one on the other
node over a TCP control channel of its own, one node the requester:

- RC_LANES (default 2) RC lanes each way: integrity.py's client and server
  halves in rounds, one address family a round (IPv4 with PSNs across the
  2^24 wrap, then IPv6), a new QP pair each round: batches of RDMA WRITE,
  WRITE WITH IMMEDIATE, READ and SEND (with and without immediate data,
  inline, several SGEs on either side) of 0 B to 256 KiB, 200 a round,
  then fetch-and-add and compare-and-swap from both sides (the server's
  through a loopback QP pair), checked as integrity.py checks them.
- one datagram lane each way: a UC QP (SEND, SEND WITH IMMEDIATE, RDMA
  WRITE WITH IMMEDIATE, 0 B to 8 KiB, several packets) and a UD QP (SEND,
  SEND WITH IMMEDIATE, 0 B to the MTU, through an address handle; received
  on an SRQ), new QPs every minute. The receiver keeps its queues posted;
  the sender sends a batch that fits, waits for its completions and tells
  the receiver the last sequence numbers. Each message follows from the
  round's seed and its sequence number (carried as immediate data or in
  the payload's first bytes), so the receiver checks every byte, length,
  opcode, immediate and order. UC and UD may drop messages: more than 1%
  (plus 2) lost over the lane fails it.

A warm-up (a tenth of the run, 60 s to 2 min) runs the same lanes; then
every worker ends (all its verbs objects destroyed), the nodes settle
(testlib.settle_memory: a few seconds, drop caches, shrink the slab caches,
which on the debug kernel empties KASAN's quarantine) and record Slab,
VmallocUsed and the device's object counts (`rdma resource`). MINUTES of
traffic follow, the same teardown and settling, and the records again:
Slab may grow less than 8 MiB on the debug kernel (the settling emptied
KASAN's quarantine, for which testlib's bound allows 32 MiB) and 2 MiB on
the plain one, VmallocUsed less than 1 MiB (testlib.check_memory_growth),
the object counts must be the warm-up's and kmemleak (rc_lib.run_main)
must report nothing. qemu-test/run fails the run on any kernel problem
report. A lane that fails stops the others on both nodes. Each node prints
what its lanes did ("soak: node1 ... requester ..., responder ...").
"""

import multiprocessing
import os
import queue
import random
import select
import struct
import sys
import time
import traceback

from pyverbs.cq import CQ
from pyverbs.device import Context
from pyverbs.mr import MR
from pyverbs.pd import PD
from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr
from pyverbs.srq import SRQ, SrqAttr, SrqInitAttr
from pyverbs.wr import RecvWR, SendWR, SGE
import pyverbs.enums as e

import integrity
import rc_lib as rl
import testlib
from rc_lib import TestFailure, log
from testlib import (DEV, DRIVER, NODE, check, check_memory_growth, memory_usage,
                     rdma_resources, settle_memory)

MINUTES = float(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1] else 30.0
SEED = int(sys.argv[2], 0) if len(sys.argv) > 2 and sys.argv[2] else None
RC_LANES = int(sys.argv[3]) if len(sys.argv) > 3 and sys.argv[3] else 2
SECONDS = MINUTES * 60
WARMUP = min(120.0, max(60.0, SECONDS / 10))

# Slab growth allowed over the soak. testlib's debug bound (32 MiB) allows
# for KASAN's quarantine, which settle_memory empties where it can shrink
# the slab caches (the debug kernel): 8 MiB there (a 3-minute run moved
# Slab by tens of kB). None: testlib's bound (2 MiB on the plain kernel).
SLAB_KB = 8192 if os.path.isdir("/sys/kernel/slab") else None

FAMILIES = ("ipv4", "ipv6")
RC_ROUND_OPS = 200      # integrity.py's default per family

# The datagram lane.
UC_MAX = 8192
UD_MAX = integrity.MTU
GRH = 40
DEPTH = 32              # receive WQEs kept posted on each QP
BATCH = 8               # most messages a QP sends per batch
WSLOTS = 16             # UC write targets, by sequence number
QKEY = 0x50A4C0DE
DG_ROUND_S = 60.0
LOSS_FRACTION = 0.01
RX_UD_SLOT = 2048
RX_UD = DEPTH * UC_MAX
WAREA = RX_UD + DEPTH * RX_UD_SLOT
RX_LEN = WAREA + WSLOTS * UC_MAX
TX_LEN = 2 * BATCH * (UC_MAX + 64)
KINDS = ("uc", "ud")
DG_OPS = {"uc": ("send", "send_imm", "write_imm"), "ud": ("send", "send_imm")}
WR_OPCODE = {"send": e.IBV_WR_SEND, "send_imm": e.IBV_WR_SEND_WITH_IMM,
             "write_imm": e.IBV_WR_RDMA_WRITE_WITH_IMM}
SEND_WC = {"send": e.IBV_WC_SEND, "send_imm": e.IBV_WC_SEND,
           "write_imm": e.IBV_WC_RDMA_WRITE}


def lanes():
    """(name, kind, requester node, control port) of every lane, the same
    list on both nodes: rc1a is RC lane a with node 1 as requester."""
    out = []
    for req in (1, 2):
        out += [(f"rc{req}{chr(ord('a') + i)}", "rc", req) for i in range(RC_LANES)]
        out.append((f"dg{req}", "dg", req))
    return [(name, kind, req, rl.Ctl.PORT + 1 + i) for i, (name, kind, req) in enumerate(out)]


# ---------------------------------------------------------------------------
# RC lanes: integrity.py's halves, round after round.

def rounds(ctl, requester, rng, stop):
    """The rounds of a lane, as messages {"seed", "fam"}: the requester draws
    each one (IPv4 and IPv6 in turn) and tells its peer, until stop() says
    the time is up; the peer follows."""
    r = 0
    while True:
        if requester:
            msg = None if stop() else {"seed": rng.getrandbits(32), "fam": FAMILIES[r % 2]}
            ctl.send({"round": msg})
        else:
            msg = ctl.recv()["round"]
        if msg is None:
            return
        yield msg
        r += 1


def rc_lane(ctl, requester, rng, stop, stats):
    env = integrity.Env()
    for msg in rounds(ctl, requester, rng, stop):
        st = {"data": 0, "atomics": 0, "bytes": 0}
        if requester:
            integrity.client(ctl, msg["fam"], env, msg["seed"], random.Random(msg["seed"] * 3),
                             st, RC_ROUND_OPS, stop)
        else:
            integrity.server(ctl, msg["fam"], env, msg["seed"], random.Random(msg["seed"] * 5), st)
        for k in ("data", "atomics", "bytes"):
            stats[k] += st[k]
        stats["rounds"] += 1
    env.ctx.close()


# ---------------------------------------------------------------------------
# Datagram lanes: UC and UD.

def dgram_msg(seed, kind, seq):
    """(operation, payload) of message seq of QP kind in a round of seed;
    a SEND without immediate data carries seq in its first 4 bytes."""
    rng = random.Random((seed << 33) | (seq << 1) | (kind == "ud"))
    op = rng.choice(DG_OPS[kind])
    n = min(integrity.pick_size(rng), UC_MAX if kind == "uc" else UD_MAX)
    if op == "send":
        n = max(n, 4)
        return op, struct.pack("<I", seq) + rng.randbytes(n - 4)
    return op, rng.randbytes(n)


class DgNode:
    """One side of a datagram lane: its device, PD, CQ and buffer; QPs
    (and the receiver's SRQ) are made anew each round."""

    def __init__(self, requester):
        self.ctx = Context(name=DEV)
        self.pd = PD(self.ctx)
        self.cq = CQ(self.ctx, 4 * DEPTH)
        self.mr = MR(self.pd, TX_LEN if requester else RX_LEN, rl.ACC_ALL)
        self.srq = None

    def qp(self, qp_type, srq=None):
        cap = QPCap(max_send_wr=2 * BATCH, max_recv_wr=DEPTH, max_send_sge=3,
                    max_recv_sge=2, max_inline_data=integrity.INLINE)
        attr = QPInitAttr(qp_type=qp_type, scq=self.cq, rcq=self.cq, cap=cap, sq_sig_all=0)
        if srq is not None:
            attr.srq = srq
        return QP(self.pd, attr)

    def open_round(self, ctl, fam, rng, receiver):
        """This side's UC and UD QPs of a round, connected to the peer's;
        returns (QPs by kind, the peer's info, sgid index)."""
        gidx, gid = rl.gid_index(integrity.family_ip(fam))
        if receiver:
            self.srq = SRQ(self.pd, SrqInitAttr(SrqAttr(max_wr=DEPTH, max_sge=2)))
        qps = {"uc": self.qp(e.IBV_QPT_UC), "ud": self.qp(e.IBV_QPT_UD, self.srq)}
        psn = 0xFFFFFF - rng.randint(0, 40) if fam == "ipv4" else rng.getrandbits(24)
        ctl.send({"qpn": {k: q.qp_num for k, q in qps.items()}, "gid": gid, "psn": psn,
                  "rkey": self.mr.rkey, "va": self.mr.buf})
        peer = ctl.recv()
        rl.connect_uc(qps["uc"], gidx, peer["gid"], peer["qpn"]["uc"], peer["psn"], psn)
        rl.connect_ud(qps["ud"], QKEY, psn)
        return qps, peer, gidx

    def close_round(self, qps):
        """Destroys the round's QPs (and SRQ), which must be in RTS. The
        receiver's UC QP goes to ERR first, which must flush the DEPTH
        receives it holds, and nothing else."""
        for k, q in qps.items():
            st = rl.qp_state(q)
            if st != rl.RTS:
                raise TestFailure(f"{k} QP in state {rl.QP_STATE.get(st)} at the end of a round")
        if self.srq is not None:
            qps["uc"].modify(QPAttr(qp_state=rl.ERR), e.IBV_QP_STATE)
            wcs = rl.poll(self.cq, DEPTH, what="flushed UC receives")
            wcs += rl.poll_none(self.cq, 0.2)
            slots = sorted(wc.wr_id for wc in wcs if wc.status == e.IBV_WC_WR_FLUSH_ERR
                           and wc.qp_num == qps["uc"].qp_num)
            if slots != list(range(DEPTH)):
                raise TestFailure(f"UC QP to ERR: {len(wcs)} completions, "
                                  f"{[(wc.wr_id, rl.status_name(wc.status)) for wc in wcs]}; "
                                  f"want a flush of receive slots 0..{DEPTH - 1}")
        for q in qps.values():
            q.close()
        if self.srq is not None:
            self.srq.close()
            self.srq = None


def dg_sender_round(node, ctl, fam, seed, rng, stop, stats):
    qps, peer, gidx = node.open_round(ctl, fam, rng, receiver=False)
    ah = rl.make_ah(node.pd, gidx, peer["gid"])
    ctl.recv()  # the receiver is in RTS with its queues posted
    seq = {k: 0 for k in KINDS}
    t_end = time.monotonic() + DG_ROUND_S
    while time.monotonic() < t_end and not stop():
        posted, off = [], 0
        for kind in KINDS:
            for _ in range(rng.randint(1, BATCH)):
                op, data = dgram_msg(seed, kind, seq[kind])
                sgl = []
                for part in integrity.split(rng, len(data), rng.choice([1, 1, 2, 3])):
                    off += rng.choice([0, 1, 8])
                    sgl.append([off, part])
                    off += part
                sges = integrity.gather(node.mr, data, sgl)
                flags = e.IBV_SEND_SIGNALED
                if len(data) <= integrity.INLINE and rng.random() < 0.5:
                    flags |= e.IBV_SEND_INLINE
                wr_id = (KINDS.index(kind) << 32) | seq[kind]
                wr = SendWR(wr_id=wr_id, opcode=WR_OPCODE[op], num_sge=len(sges), sg=sges,
                            send_flags=flags)
                if op != "send":
                    wr.imm_data = seq[kind]
                if op == "write_imm":
                    wr.set_wr_rdma(peer["rkey"], peer["va"] + WAREA + (seq[kind] % WSLOTS) * UC_MAX)
                if kind == "ud":
                    wr.set_wr_ud(ah, peer["qpn"]["ud"], QKEY)
                qps[kind].post_send(wr)
                posted.append((wr_id, op, len(data)))
                seq[kind] += 1
                stats[kind] += 1
                stats["bytes"] += len(data)
        wcs = rl.poll(node.cq, len(posted), timeout=60, what="UC/UD send completions")
        # Completions keep each QP's order; the two QPs' interleave.
        for kind in KINDS:
            mine = [p for p in posted if p[0] >> 32 == KINDS.index(kind)]
            got = [wc for wc in wcs if wc.wr_id >> 32 == KINDS.index(kind)]
            for (wr_id, op, n), wc in zip(mine, got):
                if (wc.status != e.IBV_WC_SUCCESS or wc.wr_id != wr_id
                        or wc.opcode != SEND_WC[op]):
                    raise TestFailure(f"{kind} {op} of {n} B, seq {wr_id & 0xFFFFFFFF}: completion "
                                      f"wr_id {wc.wr_id:#x} status {rl.status_name(wc.status)} "
                                      f"opcode {wc.opcode}")
            if len(got) != len(mine):
                raise TestFailure(f"{kind}: {len(got)} send completions for {len(mine)} sends")
        ctl.send({"sent": seq})
        integrity.expect_ok(ctl, f"UC/UD batch up to {seq}")
    ctl.send({"end": seq})
    integrity.expect_ok(ctl, "the end of a UC/UD round")
    ah.close()
    node.close_round(qps)


class DgReceiver:
    """The receiving side of a datagram lane over one round."""

    def __init__(self, node, qps, peer, seed, stats):
        self.node, self.qps, self.peer, self.seed, self.stats = node, qps, peer, seed, stats
        self.kind_of = {q.qp_num: k for k, q in qps.items()}
        self.next = {k: 0 for k in KINDS}
        self.lost = {k: 0 for k in KINDS}
        self.rng = random.Random(seed)
        rl.put(node.mr, WAREA, bytes(RX_LEN - WAREA))
        for slot in range(DEPTH):
            self.post("uc", slot)
            self.post("ud", slot)

    def slot_off(self, kind, slot):
        return slot * UC_MAX if kind == "uc" else RX_UD + slot * RX_UD_SLOT

    def post(self, kind, slot):
        """A receive WQE on slot, in two adjacent SGEs split at random."""
        size = UC_MAX if kind == "uc" else RX_UD_SLOT
        base = self.node.mr.buf + self.slot_off(kind, slot)
        cut = self.rng.randint(0, size)
        sges = [SGE(base, cut, self.node.mr.lkey), SGE(base + cut, size - cut, self.node.mr.lkey)]
        wr = RecvWR(wr_id=(KINDS.index(kind) << 32) | slot, num_sge=2, sg=sges)
        if kind == "ud":
            self.node.srq.post_recv(wr)
        else:
            self.qps["uc"].post_recv(wr)

    def take(self, wc):
        """Checks one receive completion and posts its WQE again; returns
        the problems found."""
        kind = self.kind_of.get(wc.qp_num)
        slot = wc.wr_id & 0xFFFFFFFF
        if kind is None or wc.wr_id >> 32 != KINDS.index(kind) or slot >= DEPTH:
            return [f"receive completion on QPN {wc.qp_num:#x}, wr_id {wc.wr_id:#x}"]
        try:
            return self.check(kind, slot, wc)
        finally:
            self.post(kind, slot)

    def check(self, kind, slot, wc):
        if wc.status != e.IBV_WC_SUCCESS:
            return [f"{kind} receive: status {rl.status_name(wc.status)}"]
        off = self.slot_off(kind, slot) + (GRH if kind == "ud" else 0)
        n = wc.byte_len - (GRH if kind == "ud" else 0)
        with_imm = bool(wc.wc_flags & e.IBV_WC_WITH_IMM)
        if with_imm:
            seq = wc.imm_data
        elif n >= 4:
            seq = struct.unpack("<I", rl.get(self.node.mr, off, 4))[0]
        else:
            return [f"{kind}: a SEND of {n} B without immediate data (none is shorter than 4)"]
        if seq < self.next[kind] or seq >= self.sent[kind]:
            return [f"{kind}: message seq {seq}, expected {self.next[kind]}.."
                    f"{self.sent[kind] - 1} (duplicate, out of order or corrupt)"]
        op, data = dgram_msg(self.seed, kind, seq)
        prob = []
        want_op = e.IBV_WC_RECV_RDMA_WITH_IMM if op == "write_imm" else e.IBV_WC_RECV
        if wc.opcode != want_op:
            prob.append(f"opcode {wc.opcode} (want {want_op})")
        if with_imm != (op != "send"):
            prob.append(f"with_imm {with_imm}")
        if n != len(data):
            prob.append(f"length {n} (want {len(data)})")
        if kind == "ud":
            if wc.src_qp != self.peer["qpn"]["ud"]:
                prob.append(f"source QPN {wc.src_qp:#x}")
            if not wc.wc_flags & e.IBV_WC_GRH:
                prob.append("no GRH flag")
        if not prob:
            if op == "write_imm":
                off = WAREA + (seq % WSLOTS) * UC_MAX
            got = rl.get(self.node.mr, off, len(data))
            i = rl.first_diff(got, data)
            if i is not None:
                prob.append(f"data differs from byte {i} on ({rl.count_diff(got, data)} bytes)")
            if op == "write_imm":
                rl.put(self.node.mr, off, bytes(len(data)))
        if prob:
            return [f"{kind} {op} seq {seq}: " + ", ".join(prob)]
        self.lost[kind] += seq - self.next[kind]
        self.next[kind] = seq + 1
        self.stats[kind] += 1
        self.stats["bytes"] += len(data)
        return []

    def batch(self, sent):
        """Takes the completions of the messages before sent (next sequence
        numbers by kind); what does not come within 10 s counts as lost."""
        self.sent = sent
        errs = []
        deadline = time.monotonic() + 10
        while any(self.next[k] < sent[k] for k in KINDS) and time.monotonic() < deadline:
            nc, wcs = self.node.cq.poll(16)
            for wc in wcs[:nc]:
                errs += self.take(wc)
            if not nc:
                time.sleep(0.002)
        for k in KINDS:
            if self.next[k] < sent[k]:
                self.lost[k] += sent[k] - self.next[k]
                self.next[k] = sent[k]
        return errs


def dg_receiver_round(node, ctl, fam, seed, rng, stats):
    qps, peer, _ = node.open_round(ctl, fam, rng, receiver=True)
    rx = DgReceiver(node, qps, peer, seed, stats)
    ctl.send({"ready": True})
    while True:
        msg = ctl.recv()
        last = "end" in msg
        errs = rx.batch(msg["end"] if last else msg["sent"])
        if last:
            if not any(rx.lost.values()):
                # Nothing lost, so every UC write was checked and cleared.
                i = rl.first_diff(rl.get(node.mr, WAREA, RX_LEN - WAREA), bytes(RX_LEN - WAREA))
                if i is not None:
                    errs.append(f"UC write area: stray data at byte {i}")
            extra = rl.poll_none(node.cq, 0.2)
            if extra:
                errs.append(f"{len(extra)} receive completions after the last message")
        for m in errs:
            log(m)
        ctl.send({"errors": errs})
        if errs:
            raise TestFailure(f"{len(errs)} problems in UC/UD receives")
        if last:
            break
    for k in KINDS:
        stats["lost_" + k] += rx.lost[k]
    node.close_round(qps)


def dg_lane(ctl, requester, rng, stop, stats):
    node = DgNode(requester)
    for msg in rounds(ctl, requester, rng, stop):
        rrng = random.Random(msg["seed"] * 7 + requester)
        if requester:
            dg_sender_round(node, ctl, msg["fam"], msg["seed"], rrng, stop, stats)
        else:
            dg_receiver_round(node, ctl, msg["fam"], msg["seed"], rrng, stats)
        stats["rounds"] += 1
    node.ctx.close()
    if not requester:
        for k in KINDS:
            total = stats[k] + stats["lost_" + k]
            if stats["lost_" + k] > LOSS_FRACTION * total + 2:
                raise TestFailure(f"{k}: {stats['lost_' + k]} of {total} messages lost")


# ---------------------------------------------------------------------------
# Lanes as processes, phases, the memory records.

def lane_main(index, lane, seed, seconds, stop_ev, results):
    """A lane's process: runs it for seconds (as requester) or until the
    requester ends; puts its stats (and error) into results."""
    name, kind, req, port = lane
    rl.LOG_TAG = f" {name}"
    requester = NODE == req
    stats = {"rounds": 0, "data": 0, "atomics": 0, "bytes": 0,
             "uc": 0, "ud": 0, "lost_uc": 0, "lost_ud": 0}
    ctl = None
    err = None
    try:
        ctl = rl.Ctl.open(port, listen=not requester)
        deadline = time.monotonic() + seconds

        def stop():
            return stop_ev.is_set() or time.monotonic() >= deadline

        rng = random.Random((seed << 8) + index)
        (rc_lane if kind == "rc" else dg_lane)(ctl, requester, rng, stop, stats)
        ctl.send({"bye": True})
        ctl.recv()
    except Exception as exc:  # noqa: BLE001 - every failure ends the lane
        err = f"{type(exc).__name__}: {exc}"
        log(f"FAIL: {err}")
        if ctl is not None:
            ctl.abort(f"node{NODE} {name}: {exc}")
        traceback.print_exc(file=sys.stdout)
        sys.stdout.flush()
    results.put({"lane": name, "kind": kind, "requester": requester, "stats": stats,
                 "error": err})
    sys.exit(1 if err else 0)


def phase(ctl, what, seconds, seed):
    """Runs every lane of this node for seconds; returns their results. A
    lane that fails stops the others, here and (through ctl) on the peer;
    then this raises."""
    mp = multiprocessing.get_context("fork")
    stop_ev, results = mp.Event(), mp.Queue()
    all_lanes = lanes()
    log(f"{what}: {len(all_lanes)} lanes for {seconds:.0f}s "
        f"({', '.join(name for name, _, _, _ in all_lanes)})")
    procs = [mp.Process(target=lane_main, args=(i, lane, seed, seconds, stop_ev, results),
                        name=lane[0]) for i, lane in enumerate(all_lanes)]
    got, peer_done, told = {}, None, False
    t0 = time.monotonic()
    try:
        for p in procs:
            p.start()
        while True:
            try:
                while True:
                    item = results.get_nowait()
                    got[item["lane"]] = item
            except queue.Empty:
                pass
            bad = [p.name for p in procs if p.exitcode not in (None, 0)]
            if bad and not told:
                log(f"{what}: lanes {bad} failed; stopping the others")
                stop_ev.set()
                ctl.send({"stop": f"node{NODE}: lanes {bad} failed"})
                told = True
            if all(p.exitcode is not None for p in procs):
                break
            r, _, _ = select.select([ctl.sock], [], [], 1.0)
            if r:
                msg = ctl.recv()
                if "stop" in msg:
                    log(f"{what}: the peer says {msg['stop']}; stopping")
                    stop_ev.set()
                elif "phase_done" in msg:
                    peer_done = msg
    finally:
        for p in procs:
            if p.exitcode is None:
                p.terminate()
            p.join()
    try:
        while len(got) < len(procs):
            item = results.get(timeout=5)
            got[item["lane"]] = item
    except queue.Empty:
        pass
    bad = sorted(p.name for p in procs if p.exitcode != 0 or got.get(p.name, {}).get("error"))
    ctl.send({"phase_done": what, "failed": bad})
    while peer_done is None:
        msg = ctl.recv()
        if "phase_done" in msg:
            peer_done = msg
    log(f"{what}: lanes done in {time.monotonic() - t0:.0f}s")
    report(what, got)
    if bad or peer_done["failed"]:
        raise TestFailure(f"{what}: lanes failed here {bad}, on the peer {peer_done['failed']}")
    return got


def report(what, got):
    """Prints what this node's lanes did, as requester and as responder."""
    for role, req in (("requester", True), ("responder", False)):
        rc = [g["stats"] for g in got.values() if g["kind"] == "rc" and g["requester"] == req]
        dg = [g["stats"] for g in got.values() if g["kind"] == "dg" and g["requester"] == req]

        def total(lst, k):
            return sum(s[k] for s in lst)
        verb = "sent" if req else "received"
        line = (f"soak: node{NODE} {what} {role}: RC {total(rc, 'rounds')} rounds, "
                f"{total(rc, 'data')} data ops, {total(rc, 'atomics')} atomics")
        if req:
            line += f", {total(rc, 'bytes') / 1e6:.1f} MB"
        line += (f"; UC/UD {total(dg, 'rounds')} rounds, {total(dg, 'uc')} UC and "
                 f"{total(dg, 'ud')} UD messages {verb}, {total(dg, 'bytes') / 1e6:.1f} MB")
        if not req:
            line += f", lost {total(dg, 'lost_uc')} UC and {total(dg, 'lost_ud')} UD"
        print(line, flush=True)


def records(what):
    """Settles, then (Slab, VmallocUsed) and the device's object counts."""
    t0 = time.monotonic()
    unsettled = memory_usage()
    settle_memory()
    mem, res = memory_usage(), rdma_resources()
    log(f"{what}: Slab {mem[0]} kB, VmallocUsed {mem[1]} kB, objects {res} "
        f"(settled in {time.monotonic() - t0:.1f}s from Slab {unsettled[0]} kB, "
        f"VmallocUsed {unsettled[1]} kB)")
    return mem, res


def body(ctl):
    if rl.is_client():
        seed = SEED if SEED is not None else random.SystemRandom().getrandbits(32)
        ctl.send({"seed": seed, "minutes": MINUTES, "rc_lanes": RC_LANES})
        ctl.recv()
    else:
        hello = ctl.recv()
        seed = hello["seed"]
        if (hello["minutes"], hello["rc_lanes"]) != (MINUTES, RC_LANES):
            raise TestFailure(f"node 1 runs {hello}, this node {MINUTES} minutes, {RC_LANES} lanes")
        ctl.send({"ok": True})
    log(f"soak on {DEV} ({DRIVER}): {MINUTES:g} min after a {WARMUP:.0f}s warm-up, "
        f"{RC_LANES} RC lanes and a UC/UD lane each way, seed {seed:#x} "
        f"(replay: soak.py {MINUTES:g} {seed:#x} {RC_LANES})")
    phase(ctl, "warm-up", WARMUP, seed)
    mem0, res0 = records("after the warm-up")
    ctl.send({"settled": True})
    ctl.recv()
    t0 = time.monotonic()
    phase(ctl, "soak", SECONDS, seed + 1)
    dt = time.monotonic() - t0
    mem1, res1 = records("after the soak")
    print(f"soak: node{NODE} {dt:.0f}s of traffic: Slab {mem0[0]} -> {mem1[0]} kB, "
          f"VmallocUsed {mem0[1]} -> {mem1[1]} kB", flush=True)
    check_memory_growth(f"{dt:.0f}s of soak", mem0, mem1, slab_kb=SLAB_KB)
    check(f"the device's object counts are the warm-up's ({res1})", res0 == res1, f"was {res0}")
    ctl.send({"failed": testlib.failed})
    peer = ctl.recv()
    if testlib.failed or peer["failed"]:
        raise TestFailure(f"{testlib.failed} checks failed here, {peer['failed']} on the peer")
    print(f"soak: node{NODE} ok", flush=True)


if __name__ == "__main__":
    sys.exit(rl.run_main(body))
