#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
"""FLUSH over a large sparse on-demand-paging MR, one node, two RC QPs of
the node's rxe device talking to each other:

  qemu-test/run --debug --nodes 1 --drivers rs qemu-test/tests/odp/odp_flush.py [GIB [ROUNDS]]

GIB GiB (default 64) of anonymous MAP_NORESERVE memory, never touched, is
registered as an ODP MR with flush rights, and whole-region FLUSHes go to
it ROUNDS times (default 32), several in flight at once:

1. with FLUSH_GLOBAL | FLUSH_PERSISTENT the registration fails with
   EINVAL: DRAM is not persistent memory, the rule rdma_rxe and rxe_rs
   apply to pinned MRs. rdma_rxe 7.3 accepts it; where a driver does, the
   test times whole-region persistent FLUSHes on that MR (each walked the
   whole page table under the MR's spinlocks in one go: 64 GiB took long
   enough for the soft-lockup watchdog);
2. with FLUSH_GLOBAL the registration succeeds, and every whole-region
   global FLUSH completes successfully, quickly;
3. re-registering an ODP MR to add FLUSH_PERSISTENT fails with EINVAL, as
   does adding it to a pinned DRAM MR (rdma_rxe accepts both), and a
   pinned DRAM MR cannot be registered with it (both drivers). Debian
   12's provider has no `rereg_mr`: the test calls the kernel's command
   with libibverbs' `ibv_cmd_rereg_mr`;
4. a whole-region persistent FLUSH to the MR without the right fails with
   REM_ACCESS_ERR, the error rdma_rxe gives;
5. a 2 TiB ODP registration fails with ENOMEM before the core allocates
   its per-page arrays (4 GiB each, past what kvmalloc gives, INT_MAX).
6. an ODP MR with FLUSH_PERSISTENT over 4 MiB the process has written
   (every page present at registration, so the driver checks each one for
   persistent memory) fails with EINVAL too: the check runs where it may
   sleep (the debug kernel reports any sleeping call under a spinlock).

Debian 12's rxe provider (rdma-core 44) cannot post a FLUSH (it has no
`wr_flush`), so the test writes the FLUSH into the send queue itself: the
extended-QP API builds an ATOMIC WRITE, which the test turns into a FLUSH
in its ring slot (the `rxe_send_wqe` layout of rdma_user_rxe.h) before
`wr_complete` publishes it and rings the doorbell.
"""

import ctypes
import sys
import time

from pyverbs.cq import CQ
from pyverbs.device import Context
from pyverbs.mr import MR
from pyverbs.pd import PD
from pyverbs.pyverbs_error import PyverbsError, PyverbsRDMAError
from pyverbs.qp import QPCap, QPEx, QPInitAttrEx
import pyverbs.enums as e

import rc_lib as r
from testlib import (DATA, DEV, DRIVER, INDEX_MASK, KERNEL, LOG2_ELEM, NODE_IP, PROD, Libibverbs,
                     check, kernel_problems, name_of, summary, u32, u64, uverbs_maps)

GIB = int(sys.argv[1]) if len(sys.argv) > 1 else 64
ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 32
SIZE = GIB << 30
# rxe_rs holds this driver to the rules below; rdma_rxe is run to see what
# it does.
STRICT = DRIVER != "c"

ACC_FLUSH_GLOBAL = 1 << 8
ACC_FLUSH_PERSISTENT = 1 << 9
ODP = e.IBV_ACCESS_ON_DEMAND
MR_ACC = e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE | e.IBV_ACCESS_REMOTE_READ
QP_ACC = r.ACC_ALL | ACC_FLUSH_GLOBAL | ACC_FLUSH_PERSISTENT
FLUSH_GLOBAL, FLUSH_PERSISTENT = 1, 2
LEVEL_RANGE, LEVEL_MR = 0, 1
IB_WR_FLUSH, IB_WR_ATOMIC_WRITE = 14, 15
# struct rxe_send_wqe: wr.opcode, wr.wr.flush.{remote_addr, length, rkey,
# type, level}, iova, dma.{length, resid, num_sge}.
OPCODE, FL_ADDR, FL_LEN, FL_RKEY, FL_TYPE, FL_LEVEL = 12, 24, 32, 36, 40, 41
IOVA, DMA_LENGTH, DMA_RESID, DMA_NUM_SGE = 152, 184, 188, 196
IN_FLIGHT = 8

libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                      ctypes.c_long]
PROT_RW = 0x1 | 0x2
MAP_PRIVATE, MAP_ANONYMOUS, MAP_NORESERVE = 0x02, 0x20, 0x4000


def u8(addr):
    return ctypes.c_uint8.from_address(addr)


def outcome(fn):
    """'ok', or the errno name of the verbs call's failure."""
    try:
        fn()
        return "ok"
    except PyverbsRDMAError as err:
        return name_of(err.error_code)
    except PyverbsError as err:
        return f"error {err}"


class Side:
    """An RC QP on the extended API, with its CQ and its mapped send queue."""

    def __init__(self, ctx, pd):
        self.cq = CQ(ctx, 2 * IN_FLIGHT)
        before = uverbs_maps()
        cap = QPCap(max_send_wr=2 * IN_FLIGHT, max_recv_wr=1, max_send_sge=1, max_recv_sge=1)
        attr = QPInitAttrEx(qp_type=e.IBV_QPT_RC, scq=self.cq, rcq=self.cq, cap=cap, pd=pd,
                            comp_mask=e.IBV_QP_INIT_ATTR_PD | e.IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
                            send_ops_flags=e.IBV_QP_EX_WITH_ATOMIC_WRITE)
        self.qp = QPEx(ctx, attr)
        # The send queue is the larger of the QP's two new rings.
        rings = sorted(uverbs_maps() - before, key=lambda m: u32(m[0] + INDEX_MASK).value)
        if len(rings) != 2:
            sys.exit(f"expected the QP's two rings, found {len(rings)} new mappings")
        self.sq = rings[-1][0]

    def post_flush(self, wr_id, rkey, va, length, ptype, level):
        """One FLUSH WQE, signaled."""
        qp, sq = self.qp, self.sq
        qp.wr_start()
        qp.wr_id = wr_id
        qp.wr_flags = e.IBV_SEND_SIGNALED
        qp.wr_atomic_write(rkey, va, bytes(8))
        mask, shift = u32(sq + INDEX_MASK).value, u32(sq + LOG2_ELEM).value
        slot = sq + DATA + ((u32(sq + PROD).value & mask) << shift)
        if u32(slot + OPCODE).value != IB_WR_ATOMIC_WRITE:
            qp.wr_abort()
            sys.exit("the provider's WQE is not where the ring header says")
        u32(slot + OPCODE).value = IB_WR_FLUSH
        u64(slot + FL_ADDR).value = va
        u32(slot + FL_LEN).value = length
        u32(slot + FL_RKEY).value = rkey
        u8(slot + FL_TYPE).value = ptype
        u8(slot + FL_LEVEL).value = level
        u64(slot + IOVA).value = va
        u32(slot + DMA_LENGTH).value = length
        u32(slot + DMA_RESID).value = length
        u32(slot + DMA_NUM_SGE).value = 0
        qp.wr_complete()


def flush_rounds(side, mr, ptype, what, rounds=ROUNDS):
    """rounds whole-region FLUSHes of mr, IN_FLIGHT at a time: the
    statuses seen, and the longest wait for one completion (s)."""
    statuses, longest, posted, done = {}, 0.0, 0, 0
    while done < rounds:
        while posted < rounds and posted - done < IN_FLIGHT:
            side.post_flush(posted, mr.rkey, 0, 0, ptype, LEVEL_MR)
            posted += 1
        t0 = time.monotonic()
        try:
            wc = r.poll(side.cq, 1, timeout=600, what=what)[0]
        except r.TestFailure as err:
            statuses["TIMEOUT"] = statuses.get("TIMEOUT", 0) + 1
            print(f"INFO {what}: {err}", flush=True)
            break
        longest = max(longest, time.monotonic() - t0)
        name = r.status_name(wc.status)
        statuses[name] = statuses.get(name, 0) + 1
        done += 1
        if wc.status != e.IBV_WC_SUCCESS:
            # The QP is in error: the rest complete flushed.
            done += len(r.poll_upto(side.cq, posted - done, timeout=30))
            break
    return statuses, longest


class IbvMr(ctypes.Structure):
    _fields_ = [("context", ctypes.c_void_p), ("pd", ctypes.c_void_p), ("addr", ctypes.c_void_p),
                ("length", ctypes.c_size_t), ("handle", ctypes.c_uint32),
                ("lkey", ctypes.c_uint32), ("rkey", ctypes.c_uint32)]


def rereg_rules():
    """FLUSH_PERSISTENT on DRAM through re-registration. Debian 12's
    provider has no `rereg_mr` (libibverbs answers EOPNOTSUPP itself), so
    this calls the kernel's command with libibverbs' `ibv_cmd_rereg_mr`,
    as a provider with the op does."""
    vp = ctypes.c_void_p
    v = Libibverbs(DEV, more=(
        ("ibv_reg_mr", ctypes.POINTER(IbvMr), [vp, vp, ctypes.c_size_t, ctypes.c_int]),
        ("ibv_dereg_mr", ctypes.c_int, [vp]),
        ("ibv_cmd_rereg_mr", ctypes.c_int,
         [vp, ctypes.c_uint32, vp, ctypes.c_size_t, ctypes.c_uint64, ctypes.c_int, vp, vp,
          ctypes.c_size_t, vp, ctypes.c_size_t]),
    ))
    lib = v.lib
    pd = lib.ibv_alloc_pd(v.ctx)
    size = 64 << 20
    odp_mem = libc.mmap(None, size, PROT_RW, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0)
    pinned_mem = libc.mmap(None, 1 << 20, PROT_RW, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)

    def reg(addr, n, access):
        mr = lib.ibv_reg_mr(pd, addr, n, access)
        return mr, ("ok" if mr else name_of(ctypes.get_errno()))

    def rereg(mr, access):
        # struct ibv_rereg_mr (command header and ib_uverbs_rereg_mr) and
        # struct ib_uverbs_rereg_mr_resp.
        cmd, resp = ctypes.create_string_buffer(56), ctypes.create_string_buffer(8)
        rc = lib.ibv_cmd_rereg_mr(mr, e.IBV_REREG_MR_CHANGE_ACCESS, None, 0, 0, access, pd,
                                  cmd, 56, resp, 8)
        return "ok" if rc == 0 else name_of(rc)

    _, got = reg(pinned_mem, 1 << 20, MR_ACC | ACC_FLUSH_PERSISTENT)
    check("pinned DRAM MR with FLUSH_PERSISTENT refused (EINVAL)", got == "EINVAL", got)
    for what, addr, n, base in (("ODP MR", odp_mem, size, MR_ACC | ODP | ACC_FLUSH_GLOBAL),
                                ("pinned DRAM MR", pinned_mem, 1 << 20, MR_ACC | ACC_FLUSH_GLOBAL)):
        mr, got = reg(addr, n, base)
        check(f"{what} with FLUSH_GLOBAL registered", got == "ok", got)
        if not mr:
            continue
        got = rereg(mr, base | e.IBV_ACCESS_REMOTE_ATOMIC)
        check(f"rereg of the {what}'s rights (no FLUSH_PERSISTENT)", got == "ok", got)
        got = rereg(mr, base | ACC_FLUSH_PERSISTENT)
        print(f"INFO adding FLUSH_PERSISTENT to the {what}: {got}", flush=True)
        if STRICT:
            check(f"rereg adding FLUSH_PERSISTENT to the {what} refused (EINVAL)",
                  got == "EINVAL", got)
        lib.ibv_dereg_mr(mr)
    lib.ibv_dealloc_pd(pd)
    v.close()


def connect(ctx, pd, idx, gid):
    a, b = Side(ctx, pd), Side(ctx, pd)
    r.connect(a.qp, QP_ACC, idx, gid, b.qp.qp_num, 100, 200)
    r.connect(b.qp, QP_ACC, idx, gid, a.qp.qp_num, 200, 100)
    return a, b


def main():
    ctx = Context(name=DEV)
    pd = PD(ctx)
    idx, gid = r.gid_index(NODE_IP)
    mem = libc.mmap(None, SIZE, PROT_RW, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0)
    if mem in (None, ctypes.c_void_p(-1).value):
        sys.exit(f"mmap of {GIB} GiB failed")

    # 1. Persistent flushes on DRAM under ODP.
    t0 = time.monotonic()
    pmr = []
    got = outcome(lambda: pmr.append(
        MR(pd, SIZE, MR_ACC | ODP | ACC_FLUSH_GLOBAL | ACC_FLUSH_PERSISTENT, address=mem)))
    print(f"INFO {GIB} GiB ODP MR with FLUSH_PERSISTENT: {got} ({time.monotonic() - t0:.1f}s)",
          flush=True)
    if got in ("EOPNOTSUPP", "EPROTONOSUPPORT"):
        print(f"INFO {DRIVER} on {KERNEL}: no ODP MRs with flush rights ({got})")
        check("no ODP flush only where expected (rdma_rxe)", DRIVER == "c", f"driver {DRIVER}")
        sys.exit(summary("odp_flush"))
    if STRICT:
        check("ODP MR on DRAM with FLUSH_PERSISTENT refused (EINVAL)", got == "EINVAL", got)
    if pmr:
        a, _ = connect(ctx, pd, idx, gid)
        t0 = time.monotonic()
        # A few: each may take long (it did, before the rule).
        n = min(ROUNDS, 4)
        st, longest = flush_rounds(a, pmr[0], FLUSH_PERSISTENT, "persistent FLUSH on DRAM", n)
        print(f"INFO {n} whole-region persistent FLUSHes of {GIB} GiB on DRAM: {st}, "
              f"{time.monotonic() - t0:.1f}s, longest wait {longest:.1f}s", flush=True)
        pmr[0].close()

    # 2. Global flushes, whole region, in a loop.
    t0 = time.monotonic()
    gmr = []
    got = outcome(lambda: gmr.append(MR(pd, SIZE, MR_ACC | ODP | ACC_FLUSH_GLOBAL, address=mem)))
    print(f"INFO {GIB} GiB ODP MR with FLUSH_GLOBAL: {got} ({time.monotonic() - t0:.1f}s)",
          flush=True)
    check(f"{GIB} GiB ODP MR with FLUSH_GLOBAL registered", got == "ok", got)
    if not gmr:
        sys.exit(summary("odp_flush"))
    mr = gmr[0]
    a, _ = connect(ctx, pd, idx, gid)
    t0 = time.monotonic()
    st, longest = flush_rounds(a, mr, FLUSH_GLOBAL, "global FLUSH")
    took = time.monotonic() - t0
    print(f"INFO {ROUNDS} whole-region global FLUSHes: {st}, {took:.1f}s, "
          f"longest wait {longest:.2f}s", flush=True)
    check(f"{ROUNDS} whole-region global FLUSHes of {GIB} GiB succeed", st == {"SUCCESS": ROUNDS},
          str(st))
    check("no global FLUSH waits long", longest < 10, f"{longest:.1f}s")

    # 3. The right cannot be added later, nor had on pinned DRAM.
    rereg_rules()

    # 4. A persistent FLUSH without the right.
    a, _ = connect(ctx, pd, idx, gid)
    a.post_flush(1, mr.rkey, 0, 0, FLUSH_PERSISTENT, LEVEL_MR)
    wc = r.poll(a.cq, 1, timeout=60, what="persistent FLUSH without the right")[0]
    check("whole-region persistent FLUSH without the right: REM_ACCESS_ERR",
          wc.status == e.IBV_WC_REM_ACCESS_ERR, r.status_name(wc.status))
    mr.close()

    # 5. Per-page arrays past kvmalloc's limit.
    got = outcome(lambda: MR(pd, 2 << 40, MR_ACC | ODP | ACC_FLUSH_GLOBAL, address=mem).close())
    print(f"INFO 2 TiB ODP MR: {got}", flush=True)
    if STRICT:
        check("2 TiB ODP MR refused before the core allocates (ENOMEM)", got == "ENOMEM", got)

    # 6. Present pages at registration.
    small = 4 << 20
    touched = libc.mmap(None, small, PROT_RW, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
    if touched in (None, ctypes.c_void_p(-1).value):
        sys.exit("mmap of 4 MiB failed")
    ctypes.memset(touched, 0x5a, small)
    tmr = []
    got = outcome(lambda: tmr.append(
        MR(pd, small, MR_ACC | ODP | ACC_FLUSH_GLOBAL | ACC_FLUSH_PERSISTENT, address=touched)))
    print(f"INFO ODP MR with FLUSH_PERSISTENT over written DRAM: {got}", flush=True)
    if STRICT:
        check("ODP MR on written DRAM with FLUSH_PERSISTENT refused (EINVAL)", got == "EINVAL", got)
    for m in tmr:
        m.close()
    libc.munmap(ctypes.c_void_p(touched), ctypes.c_size_t(small))

    problems = kernel_problems()
    check("no kernel problem report", not problems, "; ".join(problems[:3]))
    sys.exit(summary("odp_flush"))


main()
