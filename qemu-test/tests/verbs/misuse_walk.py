#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Verbs misuse walker: several processes at once make random
sequences of verbs calls with random, valid and invalid, attributes
(PD, CQ with resize and arming, QP of every type in random states with
random modify masks and values, MR reg/rereg/dereg with bad access flags
and sizes and over memory unmapped afterwards, MW alloc and bind, SRQ
with modify and limits, AH, post_send with random opcodes, SGEs, keys and
lengths on loopback-connected QPs, post_recv, poll), and are SIGKILLed at
random points, by themselves or by the parent; a killed worker is
replaced until the call budget is spent. The walk is seeded: the seed is
printed and a run repeats with the same SEED (up to the kill timing).

Pass: no kernel problem report (qemu-test/run checks), every worker ends
by SIGKILL, normally, or by SIGSEGV in user space (pyverbs and the rxe
provider dereference objects the walk closed out of order), the device still
carries a checked RC loopback SEND afterwards, and kmemleak is clean.

  qemu-test/run --debug --nodes 1 qemu-test/tests/verbs/misuse_walk.py [CALLS [PROCS [SEED]]]

CALLS is the total call budget over all workers (default 800, the short
mode of the test command, ~40 s on the debug kernel); `make misuse-long` runs the long mode.
"""
import ctypes
import mmap
import os
import random
import signal
import struct
import sys
import time

from pyverbs.addr import AH, AHAttr, GID, GlobalRoute
from pyverbs.cq import CQ
from pyverbs.device import Context
from pyverbs.mr import MR, MW, MWBind, MWBindInfo
from pyverbs.pd import PD
from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr
from pyverbs.srq import SRQ, SrqAttr, SrqInitAttr
from pyverbs.wr import RecvWR, SendWR, SGE
import pyverbs.enums as e

from testlib import DEV, check, kmemleak_clean, kmemleak_clear, summary
import rc_lib

CALLS = int(sys.argv[1]) if len(sys.argv) > 1 else 800
PROCS = int(sys.argv[2]) if len(sys.argv) > 2 else 4
SEED = int(sys.argv[3], 0) if len(sys.argv) > 3 else int.from_bytes(os.urandom(4), "little")

LW, RW, RR, RA, BIND = (e.IBV_ACCESS_LOCAL_WRITE, e.IBV_ACCESS_REMOTE_WRITE,
                        e.IBV_ACCESS_REMOTE_READ, e.IBV_ACCESS_REMOTE_ATOMIC,
                        e.IBV_ACCESS_MW_BIND)
QP_TYPES = (e.IBV_QPT_RC, e.IBV_QPT_UC, e.IBV_QPT_UD)
STATES = (e.IBV_QPS_RESET, e.IBV_QPS_INIT, e.IBV_QPS_RTR, e.IBV_QPS_RTS,
          e.IBV_QPS_SQD, e.IBV_QPS_SQE, e.IBV_QPS_ERR)
MASK_BITS = [getattr(e, n) for n in dir(e) if n.startswith("IBV_QP_") and
             isinstance(getattr(e, n), int) and n not in ("IBV_QP_RATE_LIMIT",)]
OPCODES = (e.IBV_WR_SEND, e.IBV_WR_SEND_WITH_IMM, e.IBV_WR_RDMA_WRITE,
           e.IBV_WR_RDMA_WRITE_WITH_IMM, e.IBV_WR_RDMA_READ,
           e.IBV_WR_ATOMIC_CMP_AND_SWP, e.IBV_WR_ATOMIC_FETCH_AND_ADD,
           e.IBV_WR_LOCAL_INV, e.IBV_WR_SEND_WITH_INV, e.IBV_WR_BIND_MW)


class Walker:
    """One worker's objects and its random calls on them."""

    def __init__(self, rng, counters, slot):
        self.r = rng
        self.counters = counters
        self.slot = slot
        self.ctx = Context(name=DEV)
        self.gid = self.ctx.query_gid(1, 0)
        self.pds, self.cqs, self.mrs, self.mws = [], [], [], []
        self.srqs, self.qps, self.ahs, self.maps = [], [], [], []
        # MRs over pyverbs' own buffers: the only memory the provider may
        # read inline data from (it copies it in user space).
        self.own = []
        self.calls = self.errors = 0

    # -- helpers ---------------------------------------------------------
    def pick(self, lst):
        return self.r.choice(lst) if lst else None

    def drop(self, lst):
        if lst:
            obj = lst.pop(self.r.randrange(len(lst)))
            obj.close()

    def size(self):
        return self.r.choice((0, 1, 7, 64, 4096, 4097, 65536, 1 << 20,
                              self.r.randrange(1 << 16), 1 << 31, 1 << 40))

    def count(self):
        return self.r.choice((0, 1, 2, 16, 255, 256, 4096, 1 << 15, 1 << 17,
                              1 << 20, 1 << 21, -1, self.r.randrange(600)))

    def access(self):
        if self.r.random() < 0.7:
            return self.r.choice((0, LW, LW | RW, LW | RR, LW | RW | RR | RA,
                                  LW | BIND, LW | RW | RR | RA | BIND))
        return self.r.randrange(1 << 12)  # invalid bits and combinations

    def key(self):
        keys = [m.lkey for m in self.mrs] + [m.rkey for m in self.mrs] + \
            [w.rkey for w in self.mws]
        if keys and self.r.random() < 0.8:
            k = self.r.choice(keys)
            return k if self.r.random() < 0.9 else k ^ self.r.randrange(1, 256)
        return self.r.randrange(1 << 32)

    def sges(self, max_n=5):
        out = []
        for _ in range(self.r.randrange(max_n + 1)):
            mr = self.pick(self.mrs)
            if mr is not None and self.r.random() < 0.7:
                try:
                    base, ln = mr.buf, mr.length
                except Exception:
                    base, ln = 0, 0
                off = self.r.randrange(ln + 1) if ln else 0
                out.append(SGE(base + off, self.r.randrange(max(ln - off, 0) + 64),
                               mr.lkey if self.r.random() < 0.9 else self.key()))
            else:
                out.append(SGE(self.r.randrange(1 << 47), self.size() & 0xffffffff, self.key()))
        return out

    # -- actions ---------------------------------------------------------
    def a_pd(self):
        if len(self.pds) < 4 or self.r.random() < 0.3:
            self.pds.append(PD(self.ctx))
        else:
            self.drop(self.pds)

    def a_cq(self):
        x = self.r.random()
        if x < 0.4 or not self.cqs:
            self.cqs.append(CQ(self.ctx, self.count()))
        elif x < 0.7:
            self.pick(self.cqs).resize(self.count())
        elif x < 0.8:
            self.pick(self.cqs).req_notify(self.r.random() < 0.5)
        else:
            self.drop(self.cqs)

    def a_poll(self):
        cq = self.pick(self.cqs)
        if cq is not None:
            cq.poll(self.r.choice((1, 4, 16, 64)))

    def a_mr(self):
        x = self.r.random()
        pd = self.pick(self.pds)
        if pd is None:
            return
        if x < 0.35:
            # Up to 256 MiB: six workers at once pinning 1 GiB each filled
            # the 2 GiB debug guest, and a killed worker then took minutes
            # to unpin (registering 1 GiB alone takes 34-41 s there, with
            # rdma_rxe as with rxe_rs).
            mr = MR(pd, self.r.choice((1, 64, 4096, 65536, 1 << 20, 0, 1 << 28)), self.access())
            self.mrs.append(mr)
            self.own.append(mr)
        elif x < 0.5:
            # Over memory of our own, unmapped afterwards (sometimes).
            ln = self.r.choice((4096, 65536, 1 << 20))
            m = mmap.mmap(-1, ln)
            buf = ctypes.c_char.from_buffer(m)
            addr = ctypes.addressof(buf)
            del buf
            self.mrs.append(MR(pd, ln, self.access(), address=addr))
            if self.r.random() < 0.5:
                self.maps.append(m)
            else:
                # The MR keeps the pages; the mapping goes away.
                m.close()
        elif x < 0.7 and self.mrs:
            mr = self.pick(self.mrs)
            mr.rereg(self.r.randrange(1, 16), self.pick(self.pds) or pd, 0,
                     self.size(), self.access())
        else:
            self.drop(self.mrs)

    def a_mw(self):
        x = self.r.random()
        pd = self.pick(self.pds)
        if pd is None:
            return
        if x < 0.4:
            self.mws.append(MW(pd, self.r.choice((e.IBV_MW_TYPE_1, e.IBV_MW_TYPE_2, 3))))
        elif x < 0.8 and self.mws and self.mrs and self.qps:
            mr, mw, qp = self.pick(self.mrs), self.pick(self.mws), self.pick(self.qps)
            info = MWBindInfo(mr, mr.buf + self.r.randrange(64), self.size() & 0xffffffff,
                              self.access())
            if self.r.random() < 0.5:
                qp.bind_mw(mw, MWBind(info, e.IBV_SEND_SIGNALED))
            else:
                wr = SendWR(opcode=e.IBV_WR_BIND_MW, num_sge=0, sg=[])
                wr.set_bind_wr(mw, info)
                qp.post_send(wr)
        else:
            self.drop(self.mws)

    def a_srq(self):
        x = self.r.random()
        pd = self.pick(self.pds)
        if pd is None:
            return
        if x < 0.35 or not self.srqs:
            attr = SrqAttr(max_wr=self.count() & 0xffffffff, max_sge=self.r.choice((0, 1, 4, 32, 33)),
                           srq_limit=self.r.randrange(64))
            self.srqs.append(SRQ(pd, SrqInitAttr(attr)))
        elif x < 0.6:
            srq = self.pick(self.srqs)
            mask = self.r.choice((e.IBV_SRQ_MAX_WR, e.IBV_SRQ_LIMIT,
                                  e.IBV_SRQ_MAX_WR | e.IBV_SRQ_LIMIT, self.r.randrange(8)))
            srq.modify(SrqAttr(max_wr=self.count() & 0xffffffff,
                               srq_limit=self.r.choice((0, 1, 16, 4096, 1 << 20))), mask)
        elif x < 0.7:
            self.pick(self.srqs).query()
        elif x < 0.9:
            srq = self.pick(self.srqs)
            srq.post_recv(self.recv_wr())
        else:
            self.drop(self.srqs)

    def recv_wr(self):
        sg = self.sges()
        return RecvWR(self.r.randrange(1 << 16), len(sg), sg)

    def a_qp(self):
        x = self.r.random()
        pd = self.pick(self.pds)
        if pd is None or not self.cqs:
            return
        if x < 0.5 or not self.qps:
            cap = QPCap(max_send_wr=self.count() & 0xffffffff, max_recv_wr=self.count() & 0xffffffff,
                        max_send_sge=self.r.choice((0, 1, 4, 32, 33)),
                        max_recv_sge=self.r.choice((0, 1, 4, 32, 33)),
                        max_inline_data=self.r.choice((0, 64, 4096, 1 << 20)))
            srq = self.pick(self.srqs) if self.r.random() < 0.3 else None
            attr = QPInitAttr(qp_type=self.r.choice(QP_TYPES), scq=self.pick(self.cqs),
                              rcq=self.pick(self.cqs), srq=srq, cap=cap,
                              sq_sig_all=self.r.randrange(2))
            self.qps.append(QP(pd, attr))
        elif x < 0.8:
            self.connect(self.pick(self.qps), self.pick(self.qps))
        else:
            self.drop(self.qps)

    def connect(self, a, b):
        """Loopback connection of a to b over GID 0 (UD: just to RTS)."""
        if a.qp_type == e.IBV_QPT_UD:
            a.to_rts(QPAttr(qp_state=e.IBV_QPS_RTS))
            return
        rc_lib.connect(a, LW | RW | RR | RA, 0, str(self.gid), b.qp_num,
                       self.r.randrange(1 << 24), self.r.randrange(1 << 24),
                       timeout=self.r.choice((1, 8, 14)), retry=self.r.randrange(8))

    def a_modify(self):
        qp = self.pick(self.qps)
        if qp is None:
            return
        mask = 0
        for b in MASK_BITS:
            if self.r.random() < 0.2:
                mask |= b
        if self.r.random() < 0.8:
            mask |= e.IBV_QP_STATE
        a = QPAttr(qp_state=self.r.choice(STATES))
        a.pkey_index = self.r.choice((0, 0, 1, 200))
        a.port_num = self.r.choice((1, 1, 0, 2))
        a.qkey = self.r.randrange(1 << 32)
        a.qp_access_flags = self.access()
        a.path_mtu = self.r.choice((1, 2, 3, 4, 5, 6, 0))
        a.dest_qp_num = self.r.randrange(1 << 24)
        a.rq_psn = self.r.randrange(1 << 25)
        a.sq_psn = self.r.randrange(1 << 25)
        a.max_rd_atomic = self.r.choice((0, 1, 16, 128, 255))
        a.max_dest_rd_atomic = self.r.choice((0, 1, 16, 128, 255))
        a.min_rnr_timer = self.r.randrange(40)
        a.timeout = self.r.randrange(40)
        a.retry_cnt = self.r.randrange(10)
        a.rnr_retry = self.r.randrange(10)
        a.sq_draining = self.r.randrange(2)
        a.en_sqd_async_notify = self.r.randrange(2)
        a.cap = QPCap(max_send_wr=self.count() & 0xffffffff, max_recv_wr=self.count() & 0xffffffff)
        if self.r.random() < 0.5:
            a.ah_attr = AHAttr(gr=GlobalRoute(dgid=self.gid if self.r.random() < 0.7 else
                                              GID("fe80::1"),
                                              sgid_index=self.r.choice((0, 1, 2, 200)),
                                              hop_limit=64, flow_label=self.r.randrange(1 << 20)),
                               is_global=self.r.choice((1, 1, 0)), port_num=self.r.choice((1, 1, 2)))
        qp.modify(a, mask)

    def a_query(self):
        qp = self.pick(self.qps)
        if qp is not None:
            qp.query(self.r.randrange(1 << 26))

    def a_ah(self):
        pd = self.pick(self.pds)
        if pd is None:
            return
        if self.r.random() < 0.6 or not self.ahs:
            gid = self.gid if self.r.random() < 0.6 else GID("ff0e::%x" % self.r.randrange(1 << 16))
            attr = AHAttr(gr=GlobalRoute(dgid=gid, sgid_index=self.r.choice((0, 1, 3, 255)),
                                         hop_limit=self.r.randrange(256)),
                          is_global=self.r.choice((1, 1, 0)), port_num=self.r.choice((1, 1, 0, 2)))
            self.ahs.append(AH(pd, attr=attr))
        else:
            self.drop(self.ahs)

    def readable(self, sg):
        """Whether user space may read the SGEs' memory (inline data)."""
        live = [m for m in self.own if m in self.mrs]
        return all(any(m.buf <= g.addr and g.addr + g.length <= m.buf + m.length for m in live)
                   for g in sg)

    def a_send(self):
        qp = self.pick(self.qps)
        # The provider itself dereferences a UD WR's AH.
        if qp is None or (qp.qp_type == e.IBV_QPT_UD and not self.ahs):
            return
        wrs = []
        for _ in range(self.r.choice((1, 1, 2, 8))):
            sg = self.sges()
            op = self.r.choice(OPCODES) if self.r.random() < 0.95 else self.r.randrange(64)
            flags = self.r.choice((0, e.IBV_SEND_SIGNALED, e.IBV_SEND_INLINE | e.IBV_SEND_SIGNALED,
                                   e.IBV_SEND_FENCE | e.IBV_SEND_SOLICITED, self.r.randrange(64)))
            if not self.readable(sg):
                flags &= ~e.IBV_SEND_INLINE
            wr = SendWR(wr_id=self.r.randrange(1 << 16), opcode=op, num_sge=len(sg), sg=sg,
                        send_flags=flags)
            if op in (e.IBV_WR_RDMA_WRITE, e.IBV_WR_RDMA_WRITE_WITH_IMM, e.IBV_WR_RDMA_READ):
                mr = self.pick(self.mrs)
                addr = mr.buf + self.r.randrange(mr.length + 1) if mr is not None and \
                    self.r.random() < 0.7 else self.r.randrange(1 << 64)
                wr.set_wr_rdma(self.key(), addr)
            elif op in (e.IBV_WR_ATOMIC_CMP_AND_SWP, e.IBV_WR_ATOMIC_FETCH_AND_ADD):
                mr = self.pick(self.mrs)
                addr = mr.buf + 8 * self.r.randrange(4) + self.r.choice((0, 0, 1)) if mr is not None \
                    else self.r.randrange(1 << 64)
                wr.set_wr_atomic(self.key(), addr, self.r.randrange(1 << 64), self.r.randrange(1 << 64))
            if qp.qp_type == e.IBV_QPT_UD:
                wr.set_wr_ud(self.pick(self.ahs), self.pick(self.qps).qp_num, self.r.randrange(1 << 32))
            wrs.append(wr)
        for a, b in zip(wrs, wrs[1:]):
            a.set_next_wr(b)
        qp.post_send(wrs[0])

    def a_recv(self):
        qp = self.pick(self.qps)
        if qp is not None:
            qp.post_recv(self.recv_wr())

    def a_kill(self):
        # A random point of death, with everything alive.
        os.kill(os.getpid(), signal.SIGKILL)

    ACTIONS = (
        ("a_pd", 4), ("a_cq", 8), ("a_poll", 10), ("a_mr", 8), ("a_mw", 5),
        ("a_srq", 6), ("a_qp", 10), ("a_modify", 10), ("a_query", 3),
        ("a_ah", 4), ("a_send", 16), ("a_recv", 8),
    )

    def step(self):
        names = [a for a, _ in self.ACTIONS]
        weights = [w for _, w in self.ACTIONS]
        name = self.r.choices(names, weights)[0]
        self.calls += 1
        self.counters.tick(self.slot)
        try:
            getattr(self, name)()
        except Exception:  # every refusal is fine; the kernel is what is tested
            self.errors += 1


class Counters:
    """Calls made, in a shared page: one u32 per worker slot."""

    def __init__(self, n):
        self.m = mmap.mmap(-1, 4096)
        self.n = n

    def tick(self, slot):
        v = struct.unpack_from("I", self.m, 4 * slot)[0]
        struct.pack_into("I", self.m, 4 * slot, v + 1)

    def get(self, slot):
        return struct.unpack_from("I", self.m, 4 * slot)[0]


def worker(seed, budget, counters, slot):
    rng = random.Random(seed)
    w = Walker(rng, counters, slot)
    # A point of death of its own, often before the budget ends.
    die_at = rng.randrange(budget * 2) if rng.random() < 0.6 else None
    for i in range(budget):
        if i == die_at:
            w.a_kill()
        w.step()
    if rng.random() < 0.5:
        os._exit(0)  # leave everything to the kernel's cleanup
    for lst in (w.qps, w.ahs, w.mws, w.mrs, w.srqs, w.cqs, w.pds):
        for o in lst:
            try:
                o.close()
            except Exception:
                pass
    os._exit(0)


def device_works():
    """A checked RC SEND between two QPs over GID 0 of this node."""
    ctx = Context(name=DEV)
    gid = ctx.query_gid(1, 0)
    pd = PD(ctx)
    cq = CQ(ctx, 16)
    mr = MR(pd, 8192, LW)
    a, b = (rc_lib.make_qp(pd, cq, cq) for _ in range(2))
    rc_lib.connect(a, LW, 0, str(gid), b.qp_num, 100, 200)
    rc_lib.connect(b, LW, 0, str(gid), a.qp_num, 200, 100)
    data = os.urandom(4096)
    mr.write(data, len(data), 0)
    b.post_recv(RecvWR(1, 1, [SGE(mr.buf + 4096, 4096, mr.lkey)]))
    a.post_send(SendWR(wr_id=2, opcode=e.IBV_WR_SEND, num_sge=1, sg=[SGE(mr.buf, 4096, mr.lkey)],
                       send_flags=e.IBV_SEND_SIGNALED))
    wcs = rc_lib.poll(cq, 2, 10)
    ok = all(w.status == e.IBV_WC_SUCCESS for w in wcs) and mr.read(4096, 4096) == data
    for o in (a, b, mr, cq, pd, ctx):
        o.close()
    return ok


def main():
    print(f"misuse_walk: seed {SEED:#x}, {CALLS} calls over {PROCS} workers at a time", flush=True)
    master = random.Random(SEED)
    kmemleak_clear()
    counters = Counters(1024)
    t0 = time.monotonic()
    running = {}  # pid -> slot
    started = made = kills_self = kills_parent = normal = segv = 0
    bad, hung = [], []
    killed_at = {}  # pid -> when the 120 s limit killed it
    slot = 0
    per = max(CALLS // (PROCS * 4), 20)
    while True:
        made = sum(counters.get(s) for s in range(slot))
        while len(running) < PROCS and made + per * len(running) < CALLS and slot < 1024:
            seed = master.randrange(1 << 32)
            pid = os.fork()
            if pid == 0:
                try:
                    worker(seed, per, counters, slot)
                finally:
                    os._exit(3)
            running[pid] = (slot, time.monotonic())
            slot += 1
            started += 1
        if not running:
            break
        # The parent kills a random worker now and then.
        time.sleep(master.uniform(0.01, 0.3))
        # A worker still running after 120 s is killed and named. A system
        # call may legitimately take that long (a queue of 2^20 WQEs is
        # allocated and cleared in one, slowly on a loaded debug kernel);
        # not dying within 240 s of SIGKILL is what counts as a hang.
        now = time.monotonic()
        for pid, (_, t) in list(running.items()):
            if now - t > 120 and pid not in killed_at:
                print(f"INFO worker {pid} still running after 120 s: killed", flush=True)
                killed_at[pid] = now
                os.kill(pid, signal.SIGKILL)
            elif pid in killed_at and now - killed_at[pid] > 240 and pid not in hung:
                print(f"INFO worker {pid} still alive 240 s after SIGKILL", flush=True)
                hung.append(pid)
        if master.random() < 0.3:
            victim = master.choice(list(running))
            try:
                os.kill(victim, signal.SIGKILL)
                kills_parent += 1
            except ProcessLookupError:
                pass
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            running.pop(pid, None)
            if pid in killed_at:
                print(f"INFO worker {pid} died {time.monotonic() - killed_at.pop(pid):.1f} s after SIGKILL", flush=True)
            if os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL:
                kills_self += 1
            elif os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGSEGV:
                # pyverbs and the provider dereference objects the walk
                # closed out of order: a user-space crash, whose cleanup
                # the kernel does as for a kill.
                segv += 1
            elif os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0:
                normal += 1
            else:
                bad.append((pid, status))
    made = sum(counters.get(s) for s in range(slot))
    dt = time.monotonic() - t0
    # kills_self counts every SIGKILL death, the parent's included.
    print(f"misuse_walk: {made} calls by {started} workers in {dt:.1f}s: "
          f"{kills_self} ended by SIGKILL ({kills_parent} SIGKILLs sent by the parent, "
          f"some to workers already ending; the rest by themselves), {normal} ended normally, "
          f"{segv} crashed in user space (SIGSEGV)", flush=True)
    check("every worker ended by itself, a SIGKILL or a SIGSEGV, none hung", not bad and not hung,
          f"ended otherwise: {bad}, hung: {hung}")
    check("device still carries a checked RC loopback SEND", device_works())
    check("kmemleak reports nothing", kmemleak_clean())
    return summary(f"misuse_walk (seed {SEED:#x})")


if __name__ == "__main__":
    sys.exit(main())
