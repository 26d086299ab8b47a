#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
"""Data integrity over RC between two nodes (node 2 serves, node 1 is the
client), once over the IPv4 RoCE v2 GID and once over the IPv6 one:

  qemu-test/run --drivers rs,c qemu-test/tests/datapath/integrity.py [OPS [SEED]]

For OPS data operations per address family (default 200) a seeded RNG
(the seed is printed; pass it back to replay a run) draws batches of up
to 8 requests in flight: RDMA WRITE and READ (1-4 local SGEs), SEND (1-4
SGEs on each side, zero-length ones among them, some inline, some with
immediate data) and RDMA WRITE WITH IMMEDIATE, some unsignaled, with
sizes from 0 up to 256 KiB (MTU 1024 and its neighbours among them) at
random offsets of the registered buffers. The IPv4 QPs start just below
the PSN wrap. Every byte is checked: each side compares what it must
hold with the buffer around a batch's regions, and with the whole buffer
every 8 batches (so stray writes show too); the checksums of what was
written are exchanged; completions are checked for status, opcode,
order, length and immediate data.

Atomics: node 2 hosts the counters. Node 1 issues fetch-and-adds over
the wire while node 2 issues its own through a loopback QP pair (two QPs
of its device connected through its own GID); the final value must be
the exact sum and every fetched value must be distinct. Compare-and-swap
is checked on its own and as concurrent CAS increments from both sides.

Exits non-zero on any failure; prints "integrity: N ops ok" at the end.
soak.py runs its client and server halves in rounds, both ways at once.
"""

import os
import random
import struct
import sys
import time
import zlib

from pyverbs.cq import CQ
from pyverbs.device import Context
from pyverbs.mr import MR
from pyverbs.pd import PD
from pyverbs.wr import RecvWR, SendWR, SGE
import pyverbs.enums as e

import rc_lib as rl
from rc_lib import TestFailure, log
from testlib import DEV, DRIVER, NODE_IP, NODE_IP6

# The arguments (read in main, so that soak.py can import this file).
OPS = 200
SEED = None

BUF = 1 << 20           # each data buffer
MAXSZ = 256 * 1024      # largest message
MTU = 1024
INLINE = 64
# Reads and atomics in flight per QP, both ways: fewer than a batch or
# an atomic run has outstanding on IPv6, so the requester must wait.
RD_ATOMIC = {"ipv4": 8, "ipv6": 2}
ATOMIC_N = 128          # fetch-adds from each side
CAS_K = 24              # successful CAS increments from each side
ATOM_BUF = 4096
RES_BUF = 8 * 1024

BOUNDARY = [0, 1, 2, 3, 4, 5, 7, 8, 63, 64, 65, 511, 512, 513, 1023, 1024,
            1025, 2047, 2048, 2049, 3071, 3072, 3073, 4095, 4096, 4097, 8191,
            8192, 8193, 65535, 65536, 65537, 131072, 262143, 262144]

M64 = (1 << 64) - 1


def pattern(period, n, shift=0):
    base = bytes((i * 7 + shift) & 0xFF for i in range(period))
    return (base * (n // period + 2))[:n]


BG_W = pattern(251, BUF, 1)    # server write target, between ops
BG_V = pattern(241, BUF, 2)    # server receive buffer
BG_D = pattern(239, BUF, 3)    # client read destination


_RAND = {}


def op_data(seed, k, n):
    """Op k's payload: a slice of a random block at an offset of its own,
    so that stale data of another op does not pass for it. Only the last
    seed's block is kept (soak.py goes through many seeds)."""
    block = _RAND.get(seed)
    if block is None:
        _RAND.clear()
        block = _RAND[seed] = random.Random(seed * 1000003).randbytes(2 * MAXSZ)
    start = (k * 7919 + seed) % MAXSZ
    return block[start:start + n]


def read_source(seed):
    return random.Random(seed ^ 0x5EED).randbytes(BUF)


# INTEGRITY_MIN_SIZE=1 (both nodes alike: the sizes come from the shared
# seed): no zero-length operations. loss.sh sets it under heavy loss when
# rdma_rxe takes part: rdma_rxe's responder replays a duplicate RDMA READ
# that follows a zero-length request without its MR (docs/known-issues.md).
MIN_SIZE = int(os.environ.get("INTEGRITY_MIN_SIZE", "0") or 0)


def pick_size(rng):
    r = rng.random()
    if r < 0.35:
        s = rng.choice(BOUNDARY)
    elif r < 0.6:
        s = rng.randint(0, 3 * MTU + 16)
    else:
        s = int(2 ** rng.uniform(0, 18))
    return max(min(s, MAXSZ), MIN_SIZE)


def split(rng, n, parts):
    """n cut into parts pieces (zero-length pieces allowed)."""
    cuts = sorted(rng.randint(0, n) for _ in range(parts - 1))
    edges = [0] + cuts + [n]
    return [edges[i + 1] - edges[i] for i in range(parts)]


class Placer:
    """Non-overlapping regions of one buffer, at random gaps."""

    def __init__(self, rng, size):
        self.rng, self.size, self.cur = rng, size, 0

    def alloc(self, n):
        start = self.cur + self.rng.choice([0, 1, 3, 8, self.rng.randint(0, 3 * MTU)])
        if start + n > self.size:
            return None
        self.cur = start + n
        return start


def where(regions, off):
    for name, start, n in regions:
        if start <= off < start + n:
            return f"{name} byte {off - start}"
    return "outside every op's region"


def check_buffer(label, got, want, regions, base=0):
    """Compares got with want (which start at offset base of a buffer);
    returns error strings, empty when equal."""
    i = rl.first_diff(got, want)
    if i is None:
        return []
    bad = rl.count_diff(got, want)
    msg = (f"{label}: MISMATCH at offset {base + i} ({where(regions, base + i)}): expected "
           f"{want[i]:#04x}, got {got[i]:#04x}; {bad} bytes differ")
    errs = [msg]
    shown = 0
    for j in range(i + 1, len(want)):
        if got[j] != want[j]:
            errs.append(f"  also offset {base + j} ({where(regions, base + j)}): "
                        f"expected {want[j]:#04x}, got {got[j]:#04x}")
            shown += 1
            if shown == 7:
                break
    return errs


SPAN = 16 * 1024   # around a batch's regions, checked with them


def verify(label, mr, bg, fills, full):
    """Checks buffer mr against its background bg overlaid with fills, a
    list of (region name, offset, expected bytes, region length): the
    whole buffer when full, else the span of the fills and SPAN bytes
    around it. Returns (errors, base offset, bytes read from base)."""
    if full or not fills:
        lo, hi = (0, BUF) if full else (0, 0)
    else:
        lo = max(0, min(o for _, o, _, _ in fills) - SPAN)
        hi = min(BUF, max(o + ln for _, o, _, ln in fills) + SPAN)
    want = bytearray(bg[lo:hi])
    for _, o, d, _ in fills:
        want[o - lo:o - lo + len(d)] = d
    got = rl.get(mr, lo, hi - lo)
    regions = [(name, o, ln) for name, o, _, ln in fills]
    return check_buffer(label, got, want, regions, lo), lo, got


def expect_ok(ctl, what):
    """The peer's verdict on a step: a list of errors, empty when fine."""
    errs = ctl.recv()["errors"]
    for m in errs:
        log(f"peer: {m}")
    if errs:
        raise TestFailure(f"{what}: the peer found {len(errs)} problems")


def sha(b):
    return f"{zlib.crc32(b):08x}"


# ---------------------------------------------------------------------------
# Objects both roles use.

class Env:
    def __init__(self):
        self.ctx = Context(name=DEV)
        self.pd = PD(self.ctx)
        self.scq = CQ(self.ctx, 256)
        self.rcq = CQ(self.ctx, 256)
        self.lcq = CQ(self.ctx, 256)   # the server's loopback pair
        acc = rl.ACC_ALL
        self.mr = {}
        for name in ("W", "R", "V", "S", "D"):
            self.mr[name] = MR(self.pd, BUF, acc)
        self.mr["A"] = MR(self.pd, ATOM_BUF, acc)
        self.mr["res"] = MR(self.pd, RES_BUF, acc)
        rl.put(self.mr["D"], 0, BG_D)   # the client's read destination

    def desc(self, name):
        m = self.mr[name]
        return [m.buf, m.rkey]


def family_ip(fam):
    return NODE_IP if fam == "ipv4" else NODE_IP6


def connect_pair(env, ctl, fam, rng_psn):
    """The family's data QP, connected to the peer's; returns (qp, peer)."""
    gidx, gid = rl.gid_index(family_ip(fam))
    qp = rl.make_qp(env.pd, env.scq, env.rcq, wr=64, sge=4, inline=INLINE)
    psn = rng_psn
    me = {"qpn": qp.qp_num, "psn": psn, "gid": gid,
          "mrs": {n: env.desc(n) for n in env.mr}}
    ctl.send(me)
    peer = ctl.recv()
    log(f"{fam}: GID index {gidx} ({gid}), rd_atomic {RD_ATOMIC[fam]}, qpn {qp.qp_num} psn {psn:#x} -> "
        f"peer qpn {peer['qpn']} psn {peer['psn']:#x} gid {peer['gid']}")
    rl.connect(qp, rl.ACC_ALL, gidx, peer["gid"], peer["qpn"],
               rq_psn=peer["psn"], sq_psn=psn, rd_atomic=RD_ATOMIC[fam])
    ctl.send({"rts": fam})
    ctl.recv()
    return qp, peer, gidx, gid


# ---------------------------------------------------------------------------
# Client (node 1).

def client_batch(rng, seed, k0, budget):
    """Draws a batch of up to budget operations with their placements."""
    nops = min(budget, rng.choice([1, 1, 1, 2, 3, 4, 6, 8]))
    pl = {n: Placer(rng, BUF) for n in ("W", "S", "D", "V")}
    ops = []
    for i in range(nops):
        k = k0 + i
        t = rng.choices(["w", "r", "s", "wi"], weights=[30, 30, 25, 15])[0]
        n = pick_size(rng)
        op = {"t": t, "k": k, "n": n}
        if t in ("w", "wi", "r"):
            # The local side: 1-4 SGEs, gathered or scattered.
            lsg = []
            for part in split(rng, n, rng.choice([1, 1, 2, 3, 4])):
                o = pl["S" if t != "r" else "D"].alloc(part)
                if o is None:
                    break
                lsg.append([o, part])
            if sum(p for _, p in lsg) != n:
                break
            roff = pl["W"].alloc(n) if t != "r" else rng.randint(0, BUF - n)
            if roff is None:
                break
            op.update(lsg=lsg, roff=roff)
        if t == "s":
            ssg = []
            for part in split(rng, n, rng.randint(1, 4)):
                o = pl["S"].alloc(part)
                if o is None:
                    break
                ssg.append([o, part])
            cap = n + rng.choice([0, 0, 1, 3, rng.randint(0, 2 * MTU)])
            rsg = []
            for part in split(rng, cap, rng.randint(1, 4)):
                o = pl["V"].alloc(part)
                if o is None:
                    break
                rsg.append([o, part])
            if sum(p for _, p in ssg) != n or sum(p for _, p in rsg) != cap:
                break
            op.update(ssg=ssg, rsg=rsg)
        if t == "wi":
            # The receive a write with immediate consumes: its buffer must
            # stay untouched.
            rlen = rng.choice([0, 1, 16])
            o = pl["V"].alloc(rlen)
            if o is None:
                break
            op["rsg"] = [[o, rlen]]
        if t in ("s", "wi"):
            op["imm"] = rng.getrandbits(32) if (t == "wi" or rng.random() < 0.4) else None
        if t in ("w", "s") and n <= INLINE and rng.random() < 0.5:
            op["inline"] = True
        op["sig"] = rng.random() < 0.75
        ops.append(op)
    if ops:
        ops[-1]["sig"] = True   # the last completion covers the others
    return ops


WC_OF = {"w": e.IBV_WC_RDMA_WRITE, "wi": e.IBV_WC_RDMA_WRITE, "r": e.IBV_WC_RDMA_READ,
         "s": e.IBV_WC_SEND}


def gather(mr, data, sgl):
    """Lays DATA out in MR along the (offset, length) list SGL; returns the SGEs."""
    sges, pos = [], 0
    for o, ln in sgl:
        rl.put(mr, o, data[pos:pos + ln])
        pos += ln
        sges.append(SGE(mr.buf + o, ln, mr.lkey))
    return sges


def client_run_batch(env, qp, peer, ctl, seed, ops, rsrc, stats, full):
    S, D = env.mr["S"], env.mr["D"]
    wbuf, wkey = peer["mrs"]["W"]
    rbuf, rkey = peer["mrs"]["R"]
    t0 = time.monotonic()
    ctl.send({"batch": ops, "full": full})
    ctl.recv()  # the server posted its receives
    t1 = time.monotonic()
    sums = {}
    for op in ops:
        k, n, t = op["k"], op["n"], op["t"]
        flags = ((e.IBV_SEND_SIGNALED if op["sig"] else 0)
                 | (e.IBV_SEND_INLINE if op.get("inline") else 0))
        if t in ("w", "wi"):
            data = op_data(seed, k, n)
            sums[k] = sha(data)
            sges = gather(S, data, op["lsg"])
            opcode = e.IBV_WR_RDMA_WRITE if t == "w" else e.IBV_WR_RDMA_WRITE_WITH_IMM
            wr = SendWR(wr_id=k, opcode=opcode, num_sge=len(sges), sg=sges, send_flags=flags)
            if t == "wi":
                wr.imm_data = op["imm"]
            wr.set_wr_rdma(wkey, wbuf + op["roff"])
        elif t == "r":
            sges = [SGE(D.buf + o, ln, D.lkey) for o, ln in op["lsg"]]
            wr = SendWR(wr_id=k, opcode=e.IBV_WR_RDMA_READ, num_sge=len(sges), sg=sges,
                        send_flags=flags)
            wr.set_wr_rdma(rkey, rbuf + op["roff"])
        else:
            data = op_data(seed, k, n)
            sums[k] = sha(data)
            sges = gather(S, data, op["ssg"])
            opcode = e.IBV_WR_SEND if op["imm"] is None else e.IBV_WR_SEND_WITH_IMM
            wr = SendWR(wr_id=k, opcode=opcode, num_sge=len(sges), sg=sges, send_flags=flags)
            if op["imm"] is not None:
                wr.imm_data = op["imm"]
        qp.post_send(wr)
        stats["bytes"] += n
    errs = []
    t2 = time.monotonic()
    signaled = [op for op in ops if op["sig"]]
    wcs = rl.poll(env.scq, len(signaled), timeout=60,
                  what=f"send completions of ops {ops[0]['k']}..")
    t3 = time.monotonic()
    for op, wc in zip(signaled, wcs):
        if wc.status != e.IBV_WC_SUCCESS or wc.wr_id != op["k"] or wc.opcode != WC_OF[op["t"]]:
            errs.append(f"op {op['k']} ({op['t']}, {op['n']} B): completion wr_id {wc.wr_id} "
                        f"status {rl.status_name(wc.status)} opcode {wc.opcode}, want wr_id "
                        f"{op['k']} SUCCESS opcode {WC_OF[op['t']]}")
        elif op["t"] == "r" and wc.byte_len != op["n"]:
            errs.append(f"op {op['k']} (read): byte_len {wc.byte_len}, want {op['n']}")
    # Reads: the destination buffer, all of it now and then.
    fills = []
    for op in ops:
        if op["t"] == "r":
            pos, n, roff = 0, op["n"], op["roff"]
            for o, ln in op["lsg"]:
                fills.append((f"op {op['k']} (read of {n} B from server offset {roff}, "
                              f"sge at {o} len {ln})", o, rsrc[roff + pos:roff + pos + ln], ln))
                pos += ln
    errs += verify("client read buffer", D, BG_D, fills, full)[0]
    for _, o, _, n in fills:
        rl.put(D, o, BG_D[o:o + n])
    t4 = time.monotonic()
    ctl.send({"done": [op["k"] for op in ops], "errors": errs})
    reply = ctl.recv()
    t5 = time.monotonic()
    for name, dt in (("ready", t1 - t0), ("post", t2 - t1), ("wait", t3 - t2),
                     ("check", t4 - t3), ("verdict", t5 - t4)):
        stats["t_" + name] = stats.get("t_" + name, 0.0) + dt
    errs += reply["errors"]
    for k, s in sums.items():
        if reply["sha"].get(str(k)) != s:
            errs.append(f"op {k}: checksum on the server {reply['sha'].get(str(k))}, sent {s}")
    if errs:
        for m in errs:
            log(m)
        raise TestFailure(f"{len(errs)} problems in ops {ops[0]['k']}..{ops[-1]['k']}")


def fetch_add_run(qp, cq, res, raddr, rkey, count, add=1, depth=4):
    """count fetch-and-adds of add at raddr, depth in flight; returns the
    fetched values in posting order."""
    rl.put(res, 0, b"\xa5" * (8 * count))
    posted = done = 0
    while done < count:
        while posted < count and posted - done < depth:
            wr = SendWR(wr_id=posted, opcode=e.IBV_WR_ATOMIC_FETCH_AND_ADD, num_sge=1,
                        sg=[SGE(res.buf + 8 * posted, 8, res.lkey)])
            wr.set_wr_atomic(rkey, raddr, add, 0)
            qp.post_send(wr)
            posted += 1
        wc = rl.poll(cq, 1, what="fetch-and-add completion")[0]
        if wc.status != e.IBV_WC_SUCCESS or wc.wr_id != done or wc.opcode != e.IBV_WC_FETCH_ADD:
            raise TestFailure(f"fetch-and-add {done}: wr_id {wc.wr_id} status "
                              f"{rl.status_name(wc.status)} opcode {wc.opcode}")
        done += 1
    return list(struct.unpack(f"<{count}Q", rl.get(res, 0, 8 * count)))


def atomic_one(qp, cq, res, raddr, rkey, opcode, compare_add, swap=0, slot=0):
    rl.put(res, 8 * slot, b"\x5a" * 8)
    wr = SendWR(wr_id=1000 + slot, opcode=opcode, num_sge=1,
                sg=[SGE(res.buf + 8 * slot, 8, res.lkey)])
    wr.set_wr_atomic(rkey, raddr, compare_add, swap)
    qp.post_send(wr)
    wc = rl.poll(cq, 1, what="atomic completion")[0]
    want_op = e.IBV_WC_COMP_SWAP if opcode == e.IBV_WR_ATOMIC_CMP_AND_SWP else e.IBV_WC_FETCH_ADD
    if wc.status != e.IBV_WC_SUCCESS or wc.opcode != want_op:
        raise TestFailure(f"atomic {opcode}: status {rl.status_name(wc.status)} opcode {wc.opcode}")
    return struct.unpack("<Q", rl.get(res, 8 * slot, 8))[0]


def cas_increments(qp, cq, res, raddr, rkey, k):
    """k successful increments by compare-and-swap; returns the values
    each success replaced, and the number of attempts."""
    olds, guess, tries = [], 0, 0
    while len(olds) < k:
        tries += 1
        got = atomic_one(qp, cq, res, raddr, rkey, e.IBV_WR_ATOMIC_CMP_AND_SWP,
                         guess, (guess + 1) & M64)
        if got == guess:
            olds.append(got)
            guess = (guess + 1) & M64
        else:
            guess = got
    return olds, tries


def client_atomics(env, qp, peer, ctl, stats):
    abuf, akey = peer["mrs"]["A"]
    res = env.mr["res"]
    msg = ctl.recv()
    init = msg["init"]
    vals = fetch_add_run(qp, env.scq, res, abuf + msg["off"], akey, ATOMIC_N)
    stats["atomics"] += ATOMIC_N
    ctl.send({"vals": vals})
    expect_ok(ctl, "fetch-and-add")
    log(f"fetch-and-add: {ATOMIC_N} from here, first {vals[0]:#x}, init {init:#x}")

    # Compare-and-swap on its own, 64-bit values with high bits set.
    msg = ctl.recv()
    raddr = abuf + msg["off"]
    x0, x1, x2 = msg["x0"], 0xFEDCBA9876543210, 0x0F0F0F0F0F0F0F0F
    errs = []
    got = atomic_one(qp, env.scq, res, raddr, akey, e.IBV_WR_ATOMIC_CMP_AND_SWP, x0, x1)
    if got != x0:
        errs.append(f"CAS (match): returned {got:#x}, want {x0:#x}")
    got = atomic_one(qp, env.scq, res, raddr, akey, e.IBV_WR_ATOMIC_CMP_AND_SWP, x0, x2, slot=1)
    if got != x1:
        errs.append(f"CAS (no match): returned {got:#x}, want {x1:#x}")
    add = 0x8000000000000001
    got = atomic_one(qp, env.scq, res, raddr, akey, e.IBV_WR_ATOMIC_FETCH_AND_ADD, add, slot=2)
    if got != x1:
        errs.append(f"fetch-and-add (wrapping): returned {got:#x}, want {x1:#x}")
    # The last 8 bytes of the counter MR.
    lastaddr = abuf + ATOM_BUF - 8
    got = atomic_one(qp, env.scq, res, lastaddr, akey, e.IBV_WR_ATOMIC_CMP_AND_SWP,
                     msg["last"], x2, slot=3)
    if got != msg["last"]:
        errs.append(f"CAS at the MR's last word: returned {got:#x}, want {msg['last']:#x}")
    stats["atomics"] += 4
    ctl.send({"errors": errs, "want": (x1 + add) & M64, "last": x2})
    reply = ctl.recv()
    errs += reply["errors"]
    if errs:
        for m in errs:
            log(m)
        raise TestFailure("compare-and-swap checks")

    # Concurrent CAS increments.
    msg = ctl.recv()
    olds, tries = cas_increments(qp, env.scq, res, abuf + msg["off"], akey, CAS_K)
    stats["atomics"] += tries
    ctl.send({"olds": olds, "tries": tries})
    expect_ok(ctl, "CAS increments")
    log(f"CAS increments: {CAS_K} in {tries} tries from here")


def client(ctl, fam, env, seed, rng, stats, ops, stop=None):
    """The client's half over one address family: ops data operations
    (fewer when stop(), checked between batches, says so), then the
    atomics."""
    rsrc = read_source(seed)
    psn = 0xFFFFFF - rng.randint(0, 40) if fam == "ipv4" else rng.getrandbits(24)
    qp, peer, _, _ = connect_pair(env, ctl, fam, psn)
    t0 = time.monotonic()
    k = 0
    nb = 0
    by_type = {}
    while k < ops and not (stop and stop()):
        batch = client_batch(rng, seed, k, ops - k)
        full = nb % 8 == 7 or k + len(batch) >= ops or bool(stop and stop())
        client_run_batch(env, qp, peer, ctl, seed, batch, rsrc, stats, full)
        for op in batch:
            by_type[op["t"]] = by_type.get(op["t"], 0) + 1
        k += len(batch)
        nb += 1
    stats["data"] += k
    log(f"{fam}: {k} data ops in {nb} batches ({by_type}), {time.monotonic() - t0:.1f}s; "
        + ", ".join(f"{n[2:]} {v:.1f}s" for n, v in stats.items() if n.startswith("t_")))
    ctl.send({"atomics": True})
    client_atomics(env, qp, peer, ctl, stats)
    ctl.send({"end": fam})
    expect_ok(ctl, "after the data ops")
    if rl.qp_state(qp) != rl.RTS:
        raise TestFailure(f"data QP in state {rl.QP_STATE.get(rl.qp_state(qp))} at the end")
    qp.close()


# ---------------------------------------------------------------------------
# Server (node 2).

def server_batch(env, qp, ctl, seed, msg):
    W, V = env.mr["W"], env.mr["V"]
    ops = msg["batch"]
    recv_ops = [op for op in ops if op["t"] in ("s", "wi")]
    for op in recv_ops:
        sges = [SGE(V.buf + o, ln, V.lkey) for o, ln in op["rsg"]]
        qp.post_recv(RecvWR(wr_id=op["k"], num_sge=len(sges), sg=sges))
    ctl.send({"ready": True})
    done = ctl.recv()
    errs = []
    wcs = rl.poll(env.rcq, len(recv_ops), timeout=60, what="receive completions")
    for op, wc in zip(recv_ops, wcs):
        t, n = op["t"], op["n"]
        want_op = e.IBV_WC_RECV if t == "s" else e.IBV_WC_RECV_RDMA_WITH_IMM
        with_imm = bool(wc.wc_flags & e.IBV_WC_WITH_IMM)
        prob = []
        if wc.status != e.IBV_WC_SUCCESS:
            prob.append(f"status {rl.status_name(wc.status)}")
        if wc.wr_id != op["k"]:
            prob.append(f"wr_id {wc.wr_id}")
        if wc.opcode != want_op:
            prob.append(f"opcode {wc.opcode} (want {want_op})")
        if wc.byte_len != n:
            prob.append(f"byte_len {wc.byte_len} (want {n})")
        if wc.qp_num != qp.qp_num:
            prob.append(f"qp_num {wc.qp_num}")
        if with_imm != (op["imm"] is not None):
            prob.append(f"with_imm {with_imm}")
        elif with_imm and wc.imm_data != op["imm"]:
            prob.append(f"imm {wc.imm_data:#x} (want {op['imm']:#x})")
        if prob:
            errs.append(f"op {op['k']} ({t}, {n} B): receive completion: " + ", ".join(prob))
    sums = {}
    fill_w, fill_v = [], []
    for op in ops:
        t, k, n = op["t"], op["k"], op["n"]
        if t in ("w", "wi"):
            fill_w.append((f"op {k} ({t} of {n} B)", op["roff"], op_data(seed, k, n), n))
        elif t == "s":
            data, pos = op_data(seed, k, n), 0
            for o, ln in op["rsg"]:
                take = max(0, min(ln, n - pos))
                fill_v.append((f"op {k} (send of {n} B, sge at {o} len {ln})", o,
                               data[pos:pos + take], ln))
                pos += take
        if t in ("s", "wi"):
            for o, ln in op["rsg"]:
                if t == "wi":
                    fill_v.append((f"op {k} (the receive of a write with immediate)", o, b"", ln))
    full = msg["full"]
    e_w, lo_w, got_w = verify("server write buffer", W, BG_W, fill_w, full)
    e_v, lo_v, got_v = verify("server receive buffer", V, BG_V, fill_v, full)
    errs += e_w + e_v
    for op in ops:
        t, k, n = op["t"], op["k"], op["n"]
        if t in ("w", "wi"):
            o = op["roff"] - lo_w
            sums[str(k)] = sha(got_w[o:o + n])
        elif t == "s":
            parts, pos = [], 0
            for o, ln in op["rsg"]:
                take = max(0, min(ln, n - pos))
                parts.append(got_v[o - lo_v:o - lo_v + take])
                pos += take
            sums[str(k)] = sha(b"".join(parts))
    for _, o, _, n in fill_w:
        rl.put(W, o, BG_W[o:o + n])
    for _, o, _, n in fill_v:
        rl.put(V, o, BG_V[o:o + n])
    for m in errs:
        log(m)
    ctl.send({"errors": errs, "sha": sums})
    if errs or done["errors"]:
        raise TestFailure(f"{len(errs) + len(done['errors'])} problems in ops "
                          f"{ops[0]['k']}..{ops[-1]['k']}")


def loopback_pair(env, gidx, gid, rd):
    """Two QPs of this device connected to each other through its own GID."""
    a = rl.make_qp(env.pd, env.lcq, env.lcq, wr=16, sge=1, inline=0)
    b = rl.make_qp(env.pd, env.lcq, env.lcq, wr=16, sge=1, inline=0)
    rl.connect(a, rl.ACC_ALL, gidx, gid, b.qp_num, rq_psn=0x100, sq_psn=0x200, rd_atomic=rd)
    rl.connect(b, rl.ACC_ALL, gidx, gid, a.qp_num, rq_psn=0x200, sq_psn=0x100, rd_atomic=rd)
    return a, b


def server_atomics(env, ctl, rng, gidx, gid, stats, fam):
    A, res = env.mr["A"], env.mr["res"]
    la, lb = loopback_pair(env, gidx, gid, RD_ATOMIC[fam])
    errs = []

    # Fetch-and-add from both sides on one counter; the carry out of the
    # low 32 bits happens on the way.
    off = 8 * rng.randint(0, ATOM_BUF // 8 - 2)
    init = 0xFFFFFFFF - rng.randint(0, ATOMIC_N)
    rl.put(A, off, struct.pack("<Q", init))
    ctl.send({"init": init, "off": off})
    mine = fetch_add_run(la, env.lcq, res, A.buf + off, A.rkey, ATOMIC_N)
    stats["atomics"] += ATOMIC_N
    theirs = ctl.recv()["vals"]
    final = struct.unpack("<Q", rl.get(A, off, 8))[0]
    total = 2 * ATOMIC_N
    if final != init + total:
        errs.append(f"fetch-and-add: final counter {final:#x}, want {init + total:#x} "
                    f"(init {init:#x} + {total})")
    allv = sorted(mine + theirs)
    if allv != list(range(init, init + total)):
        dup = len(allv) - len(set(allv))
        errs.append(f"fetch-and-add: fetched values are not {init:#x}..+{total}: "
                    f"{dup} duplicates, min {allv[0]:#x} max {allv[-1]:#x}")
    for name, v in (("loopback", mine), ("wire", theirs)):
        if any(b <= a for a, b in zip(v, v[1:])):
            errs.append(f"fetch-and-add: the {name} side's values are not increasing")
    # How much the two streams interleaved (information only).
    switches = sum(1 for a, b in zip(allv, allv[1:]) if (a in set(mine)) != (b in set(mine)))
    log(f"fetch-and-add: final {final:#x} = {init:#x} + {total}; "
        f"{switches} switches between loopback and wire values")
    ctl.send({"errors": errs})
    if errs:
        for m in errs:
            log(m)
        raise TestFailure("fetch-and-add")

    # Compare-and-swap checked alone.
    off = 8 * rng.randint(0, ATOM_BUF // 8 - 2)
    x0 = 0x8123456789ABCDEF
    last = 0x1122334455667788
    rl.put(A, off, struct.pack("<Q", x0))
    rl.put(A, ATOM_BUF - 8, struct.pack("<Q", last))
    ctl.send({"off": off, "x0": x0, "last": last})
    msg = ctl.recv()
    got = struct.unpack("<Q", rl.get(A, off, 8))[0]
    got_last = struct.unpack("<Q", rl.get(A, ATOM_BUF - 8, 8))[0]
    if got != msg["want"]:
        errs.append(f"after CAS/fetch-and-add: counter {got:#x}, want {msg['want']:#x}")
    if got_last != msg["last"]:
        errs.append(f"CAS at the last word: {got_last:#x}, want {msg['last']:#x}")
    ctl.send({"errors": errs})
    if errs or msg["errors"]:
        for m in errs:
            log(m)
        raise TestFailure("compare-and-swap checks")

    # Concurrent CAS increments.
    off = 8 * rng.randint(0, ATOM_BUF // 8 - 2)
    rl.put(A, off, struct.pack("<Q", 0))
    ctl.send({"off": off})
    mine, tries = cas_increments(la, env.lcq, res, A.buf + off, A.rkey, CAS_K)
    stats["atomics"] += tries
    msg = ctl.recv()
    final = struct.unpack("<Q", rl.get(A, off, 8))[0]
    allv = sorted(mine + msg["olds"])
    if final != 2 * CAS_K or allv != list(range(2 * CAS_K)):
        errs.append(f"CAS increments: final {final}, want {2 * CAS_K}; replaced values "
                    f"{allv}")
    log(f"CAS increments: final {final}; tries here {tries}, there {msg['tries']}")
    ctl.send({"errors": errs})
    if errs:
        for m in errs:
            log(m)
        raise TestFailure("CAS increments")
    for q in (la, lb):
        if rl.qp_state(q) != rl.RTS:
            raise TestFailure(f"loopback QP in state {rl.QP_STATE.get(rl.qp_state(q))}")
        q.close()


def server(ctl, fam, env, seed, rng, stats):
    rl.put(env.mr["W"], 0, BG_W)
    rl.put(env.mr["V"], 0, BG_V)
    rl.put(env.mr["R"], 0, read_source(seed))
    psn = 0xFFFFFF - rng.randint(0, 40) if fam == "ipv4" else rng.getrandbits(24)
    qp, _, gidx, gid = connect_pair(env, ctl, fam, psn)
    while True:
        msg = ctl.recv()
        if "batch" in msg:
            server_batch(env, qp, ctl, seed, msg)
            stats["data"] += len(msg["batch"])
        elif "atomics" in msg:
            server_atomics(env, ctl, rng, gidx, gid, stats, fam)
        elif "end" in msg:
            break
    # The read source must be untouched.
    errs = check_buffer("server read source", rl.get(env.mr["R"], 0, BUF), read_source(seed), [])
    st = rl.qp_state(qp)
    if st != rl.RTS:
        errs.append(f"data QP in state {rl.QP_STATE.get(st)} at the end")
    ctl.send({"errors": errs})
    if errs:
        for m in errs:
            log(m)
        raise TestFailure("after the data ops")
    qp.close()


def body(ctl):
    if rl.is_client():
        seed = SEED if SEED is not None else random.SystemRandom().getrandbits(32)
        ctl.send({"seed": seed, "ops": OPS})
        ctl.recv()
    else:
        hello = ctl.recv()
        seed = hello["seed"]
        ctl.send({"ok": True})
    log(f"integrity on {DEV} ({DRIVER}), seed {seed} "
        f"(replay: integrity.py {OPS} {seed})")
    env = Env()
    stats = {"data": 0, "atomics": 0, "bytes": 0}
    t0 = time.monotonic()
    for i, fam in enumerate(("ipv4", "ipv6")):
        rng = random.Random(seed * 3 + i)
        if rl.is_client():
            client(ctl, fam, env, seed + i, rng, stats, OPS)
        else:
            server(ctl, fam, env, seed + i, random.Random(seed * 5 + i), stats)
    n = stats["data"] + stats["atomics"]
    extra = f", {stats['bytes'] / 1e6:.1f} MB sent" if rl.is_client() else ""
    log(f"{stats['data']} data ops, {stats['atomics']} atomics from this node{extra}, "
        f"{time.monotonic() - t0:.1f}s")
    env.ctx.close()
    print(f"integrity: {n} ops ok", flush=True)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1]:
        OPS = int(sys.argv[1])
    if len(sys.argv) > 2 and sys.argv[2]:
        SEED = int(sys.argv[2])
    sys.exit(rl.run_main(body))
