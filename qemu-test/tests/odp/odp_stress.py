#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
"""On-demand-paging MRs under memory changes, one node, two RC QPs of the
node's own rxe device talking to each other:

  qemu-test/run --nodes 1 --drivers rs qemu-test/tests/odp/odp_stress.py

1. untouched: RDMA WRITE, SEND and RDMA READ into and out of freshly mapped
   memory no one has touched, with the data checked;
2. zap: a thread drops the pages of the target (MADV_DONTNEED) in a loop
   while WRITEs, READs and atomics run on it; every one must complete
   successfully (the contents are not checked: the thread zeroes them);
3. fork: a thread forks short-lived children (every fork write-protects
   the parent's pages, an invalidation) while checked WRITEs and READs run;
4. unmapped: the target is unmapped under the MR: a WRITE then fails as a
   remote access error after the bounded retries, the QP goes to error.
"""

import ctypes
import mmap
import os
import sys
import threading
import time

from pyverbs.cq import CQ
from pyverbs.device import Context
from pyverbs.mr import MR
from pyverbs.pd import PD
from pyverbs.wr import RecvWR, SendWR, SGE
import pyverbs.enums as e

import rc_lib as r
from testlib import DEV, NODE_IP

ODP = e.IBV_ACCESS_ON_DEMAND
SIZE = 256 * 1024
libc = ctypes.CDLL(None, use_errno=True)
libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
MADV_DONTNEED = 4


def addr_of(m):
    return ctypes.addressof(ctypes.c_char.from_buffer(m))


class Side:
    def __init__(self, ctx, pd):
        self.cq = CQ(ctx, 64)
        self.qp = r.make_qp(pd, self.cq, self.cq, wr=64, sge=1)


def post_rdma(qp, op, mr, off, n, rmr, roff, wr_id=1):
    wr = SendWR(wr_id=wr_id, opcode=op, num_sge=1,
                sg=[SGE(mr.buf + off, n, mr.lkey)],
                send_flags=e.IBV_SEND_SIGNALED)
    wr.set_wr_rdma(rmr.rkey, rmr.buf + roff)
    qp.post_send(wr)


def expect_ok(wcs, what):
    for wc in wcs:
        if wc.status != e.IBV_WC_SUCCESS:
            raise r.TestFailure(f"{what}: {r.status_name(wc.status)}")


def main():
    ctx = Context(name=DEV)
    pd = PD(ctx)
    idx, gid = r.gid_index(NODE_IP)
    a, b = Side(ctx, pd), Side(ctx, pd)
    acc = r.ACC_ALL
    r.connect(a.qp, acc, idx, gid, b.qp.qp_num, 100, 200)
    r.connect(b.qp, acc, idx, gid, a.qp.qp_num, 200, 100)

    maps = [mmap.mmap(-1, SIZE) for _ in range(3)]
    src_m, dst_m, back_m = maps
    # src is written by the CPU first (present), dst and back never touched.
    src_m.write(bytes((i * 7) & 0xff for i in range(SIZE)))
    src = MR(pd, SIZE, acc | ODP, address=addr_of(src_m))
    dst = MR(pd, SIZE, acc | ODP, address=addr_of(dst_m))
    back = MR(pd, SIZE, acc | ODP, address=addr_of(back_m))
    want = src_m[:]

    # 1. untouched memory
    post_rdma(a.qp, e.IBV_WR_RDMA_WRITE, src, 0, SIZE // 2, dst, 0)
    expect_ok(r.poll(a.cq, 1), "write into untouched")
    if dst_m[:SIZE // 2] != want[:SIZE // 2]:
        raise r.TestFailure(f"write into untouched: differs at {r.first_diff(dst_m[:SIZE // 2], want[:SIZE // 2])}")
    b.qp.post_recv(RecvWR(wr_id=7, num_sge=1, sg=[SGE(dst.buf + SIZE // 2, 8192, dst.lkey)]))
    a.qp.post_send(SendWR(wr_id=8, num_sge=1, sg=[SGE(src.buf, 5000, src.lkey)],
                          send_flags=e.IBV_SEND_SIGNALED))
    expect_ok(r.poll(a.cq, 1) + r.poll(b.cq, 1), "send into untouched")
    if dst_m[SIZE // 2:SIZE // 2 + 5000] != want[:5000]:
        raise r.TestFailure("send into untouched: data differs")
    post_rdma(a.qp, e.IBV_WR_RDMA_READ, back, 0, SIZE, dst, 0)
    expect_ok(r.poll(a.cq, 1), "read into untouched")
    if back_m[:] != dst_m[:]:
        raise r.TestFailure("read into untouched: data differs")
    r.log("untouched: ok")

    # 2. zap the target while traffic runs on it
    stop = threading.Event()
    zaps = [0]

    def zapper():
        while not stop.is_set():
            libc.madvise(addr_of(dst_m), SIZE, MADV_DONTNEED)
            zaps[0] += 1
            time.sleep(0.002)

    t = threading.Thread(target=zapper)
    t.start()
    try:
        deadline = time.monotonic() + 20
        n = 0
        while time.monotonic() < deadline:
            post_rdma(a.qp, e.IBV_WR_RDMA_WRITE, src, 0, SIZE, dst, 0, wr_id=n)
            post_rdma(a.qp, e.IBV_WR_RDMA_READ, back, 0, SIZE, dst, 0, wr_id=n)
            wr = SendWR(wr_id=n, opcode=e.IBV_WR_ATOMIC_FETCH_AND_ADD, num_sge=1,
                        sg=[SGE(back.buf, 8, back.lkey)], send_flags=e.IBV_SEND_SIGNALED)
            wr.set_wr_atomic(dst.rkey, dst.buf + 4096 * (n % 64), 1, 0)
            a.qp.post_send(wr)
            expect_ok(r.poll(a.cq, 3), f"zap round {n}")
            n += 1
    finally:
        stop.set()
        t.join()
    r.log(f"zap: {n} rounds, {zaps[0]} zaps: ok")

    # 3. fork while checked traffic runs
    stop.clear()
    forks = [0]

    def forker():
        while not stop.is_set():
            pid = os.fork()
            if pid == 0:
                os._exit(0)
            os.waitpid(pid, 0)
            forks[0] += 1

    t = threading.Thread(target=forker)
    t.start()
    try:
        deadline = time.monotonic() + 20
        n = 0
        while time.monotonic() < deadline:
            seed = (n * 13 + 1) & 0xff
            chunk = bytes(((i + seed) * 7) & 0xff for i in range(4096))
            src_m[0:4096] = chunk
            post_rdma(a.qp, e.IBV_WR_RDMA_WRITE, src, 0, 4096, dst, 8192)
            expect_ok(r.poll(a.cq, 1), f"fork write {n}")
            post_rdma(a.qp, e.IBV_WR_RDMA_READ, back, 0, 4096, dst, 8192)
            expect_ok(r.poll(a.cq, 1), f"fork read {n}")
            if dst_m[8192:8192 + 4096] != chunk or back_m[0:4096] != chunk:
                raise r.TestFailure(f"fork round {n}: data differs")
            n += 1
    finally:
        stop.set()
        t.join()
    r.log(f"fork: {n} rounds, {forks[0]} forks: ok")

    # 4. unmapped under the MR: a mapping of its own, made and unmapped
    # here (not a Python mmap object, which would unmap it again later)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int,
                          ctypes.c_int, ctypes.c_int, ctypes.c_long]
    libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    gone = libc.mmap(None, SIZE, 3, 0x22, -1, 0)  # RW, private anonymous
    if gone in (None, ctypes.c_void_p(-1).value):
        raise r.TestFailure("mmap failed")
    ctypes.memset(gone, 0x5a, SIZE)
    lost = MR(pd, SIZE, acc | ODP, address=gone)
    if libc.munmap(gone, SIZE) != 0:
        raise r.TestFailure("munmap failed")
    post_rdma(a.qp, e.IBV_WR_RDMA_WRITE, src, 0, 4096, lost, 0)
    wcs = r.poll(a.cq, 1, timeout=60)
    st = wcs[0].status
    r.log(f"unmapped: write completed with {r.status_name(st)}")
    if st == e.IBV_WC_SUCCESS:
        raise r.TestFailure("write into unmapped memory succeeded")
    lost.close()
    for m in (src, back, dst):
        m.close()
    a.qp.close()
    b.qp.close()
    r.log("PASS")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except r.TestFailure as err:
        r.log(f"FAIL: {err}")
        sys.exit(1)
