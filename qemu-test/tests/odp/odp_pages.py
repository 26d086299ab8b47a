#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
"""On-demand-paging MRs over memory the kernel must not touch, one node, RC
QP pairs of the node's own rxe device (loopback):

  qemu-test/run --debug --nodes 1 --drivers rs qemu-test/tests/odp/odp_pages.py

Secret memory (`memfd_secret`, syscall 447 on x86_64) is removed from the
kernel's direct map: GUP refuses it (a plain MR over it fails), but an ODP
MR over it registers, and hmm_range_fault hands its pages out. The driver
must refuse such pages when they enter its page table, so that every access
ends in the IB error for it and never in a kernel fault:

1. a SEND from a secret ODP MR: LOC_PROT_ERR, the requester QP in ERR, a
   later request WR_FLUSH_ERR; nothing reached the responder, which stays
   in RTS with its receive still posted;
2. an RDMA WRITE into it, an RDMA READ from it and a FETCH_AND_ADD on it,
   on pages touched before the registration (recorded by the registration)
   and on a page never touched (faulted in by the access): REM_ACCESS_ERR,
   both QPs in ERR, a later request WR_FLUSH_ERR, the secret bytes
   unchanged (read back by the process, which may);
3. a receive into it: LOC_QP_OP_ERR for the receive and REM_OP_ERR for
   the SEND (rdma_rxe's statuses for a receive buffer it cannot write),
   both QPs in ERR; an RDMA READ response into it: LOC_PROT_ERR, the
   requester in ERR (the completer gives up once the fault failed instead
   of retrying the read forever), and the same for a READ into an ODP MR
   whose memory was mapped away (PROT_NONE); the secret bytes unchanged;
4. an MR over [ordinary page | secret page] (the second mapped over the
   first mapping with MAP_FIXED): a WRITE into the ordinary page works, one
   into the secret page fails with REM_ACCESS_ERR;
5. the same operations on an ODP MR over an ordinary shared memfd succeed
   with the data checked, as does an RDMA READ of never-touched private
   anonymous memory (the shared zero page: zeros).

A last QP pair moves data correctly after all of it. Before the driver
refused such pages, case 1 oopsed the guest (the copy out of a page
absent from the direct map), under the QP and MR locks.
"""

import ctypes
import errno
import os
import sys

from pyverbs.cq import CQ
from pyverbs.device import Context
from pyverbs.mr import MR
from pyverbs.pd import PD
from pyverbs.pyverbs_error import PyverbsError
from pyverbs.wr import RecvWR, SendWR, SGE
import pyverbs.enums as e

import rc_lib as r
from testlib import DEV, DRIVER, KERNEL, NODE_IP, check, summary

PAGE = 4096
SIZE = 4 * PAGE
ODP = e.IBV_ACCESS_ON_DEMAND
ACC = r.ACC_ALL
SYS_MEMFD_SECRET = 447

vp = ctypes.c_void_p
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
libc.mmap.restype = vp
libc.mmap.argtypes = [vp, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
PROT_RW = 0x1 | 0x2
MAP_SHARED, MAP_PRIVATE, MAP_FIXED, MAP_ANON = 0x01, 0x02, 0x10, 0x20
MAP_FAILED = ctypes.c_void_p(-1).value


def mmap(length, flags, fd=-1, addr=None):
    p = libc.mmap(addr, length, PROT_RW, flags, fd, 0)
    if p in (None, MAP_FAILED):
        raise r.TestFailure(f"mmap: {os.strerror(ctypes.get_errno())}")
    return p


def secret_fd(size):
    fd = libc.syscall(SYS_MEMFD_SECRET, 0)
    if fd < 0:
        raise r.TestFailure(f"memfd_secret: {errno.errorcode.get(ctypes.get_errno())} "
                            "(the test kernel needs CONFIG_SECRETMEM)")
    os.ftruncate(fd, size)
    return fd


def pattern(seed, n=SIZE):
    return bytes(((i + seed) * 7) & 0xff for i in range(n))


class Pair:
    """Two connected RC QPs of the one device: a requests, b responds."""

    psn = 100

    def __init__(self, ctx, pd, gidx, gid):
        self.cq_a = CQ(ctx, 32)
        self.cq_b = CQ(ctx, 32)
        self.a = r.make_qp(pd, self.cq_a, self.cq_a, wr=16, sge=1)
        self.b = r.make_qp(pd, self.cq_b, self.cq_b, wr=16, sge=1)
        p = Pair.psn
        Pair.psn += 100
        r.connect(self.a, ACC, gidx, gid, self.b.qp_num, p, p + 50)
        r.connect(self.b, ACC, gidx, gid, self.a.qp_num, p + 50, p)

    def close(self):
        for o in (self.a, self.b, self.cq_a, self.cq_b):
            o.close()


def post(qp, op, mr, off, n, rmr=None, roff=0, wr_id=1, add=1):
    wr = SendWR(wr_id=wr_id, opcode=op, num_sge=1, sg=[SGE(mr.buf + off, n, mr.lkey)],
                send_flags=e.IBV_SEND_SIGNALED)
    if op == e.IBV_WR_ATOMIC_FETCH_AND_ADD:
        wr.set_wr_atomic(rmr.rkey, rmr.buf + roff, add, 0)
    elif rmr is not None:
        wr.set_wr_rdma(rmr.rkey, rmr.buf + roff)
    qp.post_send(wr)


def recv(qp, mr, off, n, wr_id=9):
    qp.post_recv(RecvWR(wr_id=wr_id, num_sge=1, sg=[SGE(mr.buf + off, n, mr.lkey)]))


def one_status(cq, what):
    wcs = r.poll_upto(cq, 1, timeout=60)
    check(f"{what}: completes", len(wcs) == 1)
    return wcs[0].status if wcs else None


def expect_status(cq, want, what):
    st = one_status(cq, what)
    check(f"{what}: {r.status_name(want)}", st == want,
          f"got {r.status_name(st) if st is not None else 'nothing'}")


def expect_after_error(pair, normal, what, responder_err):
    """The IB rules once the requester has its error completion: its QP is
    in ERR and flushes later requests; the responder is in ERR after a
    remote error (a NAK) and untouched after a local one."""
    check(f"{what}: requester in ERR", r.qp_state(pair.a) == r.ERR)
    post(pair.a, e.IBV_WR_RDMA_WRITE, normal, 0, 64, normal, PAGE, wr_id=77)
    expect_status(pair.cq_a, e.IBV_WC_WR_FLUSH_ERR, f"{what}: later request")
    want = r.ERR if responder_err else r.RTS
    got = r.qp_state(pair.b)
    check(f"{what}: responder in {r.QP_STATE[want]}", got == want,
          f"got {r.QP_STATE.get(got, got)}")


def unchanged(addr, want, what):
    got = ctypes.string_at(addr, len(want))
    check(f"{what}: secret bytes unchanged", got == want,
          f"first difference at {r.first_diff(got, want)}")


def main():
    ctx = Context(name=DEV)
    pd = PD(ctx)
    gidx, gid = r.gid_index(NODE_IP)

    # Ordinary memory for the other end of every transfer.
    normal_addr = mmap(SIZE, MAP_PRIVATE | MAP_ANON)
    ctypes.memmove(normal_addr, pattern(3), SIZE)
    normal = MR(pd, SIZE, ACC, address=normal_addr)
    try:
        MR(pd, SIZE, ACC | ODP, address=normal_addr).close()
    except PyverbsError as err:
        # rdma_rxe has ODP MRs from Linux 6.15 on.
        print(f"INFO {DRIVER} on {KERNEL}: no ODP MRs ({err})")
        check("no ODP MRs only where expected (rdma_rxe)", DRIVER == "c", f"driver {DRIVER}")
        return summary("odp_pages")

    # Secret memory: pages 0..2 touched before the registration, page 3 not.
    sfd = secret_fd(SIZE)
    secret_addr = mmap(SIZE, MAP_SHARED, sfd)
    secret_bytes = pattern(11, 3 * PAGE)
    ctypes.memmove(secret_addr, secret_bytes, len(secret_bytes))
    try:
        MR(pd, SIZE, ACC, address=secret_addr).close()
        check("plain MR over secret memory refused", False, "registered")
    except PyverbsError:
        check("plain MR over secret memory refused", True)
    secret = MR(pd, SIZE, ACC | ODP, address=secret_addr)
    check("ODP MR over secret memory registers", True)

    # 1. local SEND from secret memory
    p = Pair(ctx, pd, gidx, gid)
    recv(p.b, normal, 2 * PAGE, PAGE)
    post(p.a, e.IBV_WR_SEND, secret, 0, 256)
    expect_status(p.cq_a, e.IBV_WC_LOC_PROT_ERR, "send from secret")
    expect_after_error(p, normal, "send from secret", responder_err=False)
    check("send from secret: receive still posted", not r.poll_none(p.cq_b, 0.3))
    p.close()

    # 2. remote WRITE, READ and atomic on secret memory
    for name, op, roff, n in (
            ("write into secret", e.IBV_WR_RDMA_WRITE, 100, 512),
            ("read from secret", e.IBV_WR_RDMA_READ, PAGE, 2 * PAGE),
            ("atomic on secret", e.IBV_WR_ATOMIC_FETCH_AND_ADD, 2 * PAGE, 8),
            ("write into untouched secret", e.IBV_WR_RDMA_WRITE, 3 * PAGE, 64)):
        before = ctypes.string_at(normal_addr, SIZE)
        p = Pair(ctx, pd, gidx, gid)
        post(p.a, op, normal, 0, n, secret, roff)
        expect_status(p.cq_a, e.IBV_WC_REM_ACCESS_ERR, name)
        expect_after_error(p, normal, name, responder_err=True)
        unchanged(secret_addr, secret_bytes, name)
        if op != e.IBV_WR_RDMA_WRITE:
            check(f"{name}: local buffer unchanged",
                  ctypes.string_at(normal_addr, SIZE) == before)
        p.close()

    # 3. a receive and a READ response into secret memory
    p = Pair(ctx, pd, gidx, gid)
    recv(p.b, secret, 0, PAGE)
    post(p.a, e.IBV_WR_SEND, normal, 0, 300)
    st_b = one_status(p.cq_b, "recv into secret (responder)")
    st_a = one_status(p.cq_a, "recv into secret (requester)")
    r.log(f"recv into secret: responder {r.status_name(st_b)}, requester {r.status_name(st_a)}")
    # rdma_rxe's statuses for a receive buffer it cannot write (class A:
    # a remote operational error NAK).
    check("recv into secret: receive LOC_QP_OP_ERR", st_b == e.IBV_WC_LOC_QP_OP_ERR)
    check("recv into secret: send REM_OP_ERR", st_a == e.IBV_WC_REM_OP_ERR)
    check("recv into secret: both QPs in ERR",
          r.qp_state(p.a) == r.ERR and r.qp_state(p.b) == r.ERR)
    unchanged(secret_addr, secret_bytes, "recv into secret")
    p.close()
    p = Pair(ctx, pd, gidx, gid)
    post(p.a, e.IBV_WR_RDMA_READ, secret, 0, 2 * PAGE, normal, 0)
    expect_status(p.cq_a, e.IBV_WC_LOC_PROT_ERR, "read into secret")
    check("read into secret: requester in ERR", r.qp_state(p.a) == r.ERR)
    unchanged(secret_addr, secret_bytes, "read into secret")
    p.close()
    # The same for a READ into an ODP MR whose memory was taken away: the
    # fault fails there too. (Mapped PROT_NONE rather than unmapped, so
    # that no later mapping, such as a new QP's rings, takes its place.)
    gone_addr = mmap(SIZE, MAP_PRIVATE | MAP_ANON)
    gone = MR(pd, SIZE, ACC | ODP, address=gone_addr)
    if libc.mmap(gone_addr, SIZE, 0, MAP_PRIVATE | MAP_ANON | MAP_FIXED, -1, 0) != gone_addr:
        raise r.TestFailure("mmap PROT_NONE failed")
    p = Pair(ctx, pd, gidx, gid)
    post(p.a, e.IBV_WR_RDMA_READ, gone, 0, 2 * PAGE, normal, 0)
    expect_status(p.cq_a, e.IBV_WC_LOC_PROT_ERR, "read into inaccessible")
    check("read into inaccessible: requester in ERR", r.qp_state(p.a) == r.ERR)
    p.close()
    gone.close()
    secret.close()

    # 4. an MR over an ordinary page followed by a secret page
    mixed_addr = mmap(2 * PAGE, MAP_PRIVATE | MAP_ANON)
    mfd = secret_fd(PAGE)
    mmap(PAGE, MAP_SHARED | MAP_FIXED, mfd, addr=mixed_addr + PAGE)
    ctypes.memmove(mixed_addr + PAGE, secret_bytes[:PAGE], PAGE)
    mixed = MR(pd, 2 * PAGE, ACC | ODP, address=mixed_addr)
    p = Pair(ctx, pd, gidx, gid)
    post(p.a, e.IBV_WR_RDMA_WRITE, normal, 0, PAGE, mixed, 0)
    expect_status(p.cq_a, e.IBV_WC_SUCCESS, "mixed: write into the ordinary page")
    check("mixed: data written", ctypes.string_at(mixed_addr, PAGE) == pattern(3, PAGE))
    post(p.a, e.IBV_WR_RDMA_WRITE, normal, 0, 64, mixed, PAGE - 32)
    expect_status(p.cq_a, e.IBV_WC_REM_ACCESS_ERR, "mixed: write across into the secret page")
    unchanged(mixed_addr + PAGE, secret_bytes[:PAGE], "mixed")
    p.close()
    mixed.close()

    # 5. the same on ordinary shared memory, and the zero page
    ofd = os.memfd_create("odp_pages")
    os.ftruncate(ofd, SIZE)
    shm_addr = mmap(SIZE, MAP_SHARED, ofd)
    ctypes.memmove(shm_addr, secret_bytes, len(secret_bytes))
    shm = MR(pd, SIZE, ACC | ODP, address=shm_addr)
    zero_addr = mmap(SIZE, MAP_PRIVATE | MAP_ANON)
    zero = MR(pd, SIZE, ACC | ODP, address=zero_addr)
    p = Pair(ctx, pd, gidx, gid)
    recv(p.b, normal, 2 * PAGE, PAGE)
    post(p.a, e.IBV_WR_SEND, shm, 0, 256)
    expect_status(p.cq_a, e.IBV_WC_SUCCESS, "shm: send")
    expect_status(p.cq_b, e.IBV_WC_SUCCESS, "shm: receive")
    check("shm: data sent", ctypes.string_at(normal_addr + 2 * PAGE, 256) == secret_bytes[:256])
    post(p.a, e.IBV_WR_RDMA_WRITE, normal, 0, 512, shm, 100)
    expect_status(p.cq_a, e.IBV_WC_SUCCESS, "shm: write")
    check("shm: data written", ctypes.string_at(shm_addr + 100, 512) == pattern(3, 512))
    post(p.a, e.IBV_WR_RDMA_READ, normal, 0, PAGE, shm, 3 * PAGE)
    expect_status(p.cq_a, e.IBV_WC_SUCCESS, "shm: read of the untouched page")
    check("shm: read zeros", ctypes.string_at(normal_addr, PAGE) == bytes(PAGE))
    ctypes.memmove(shm_addr + 2 * PAGE, (41).to_bytes(8, "little"), 8)
    post(p.a, e.IBV_WR_ATOMIC_FETCH_AND_ADD, normal, 8, 8, shm, 2 * PAGE, add=1)
    expect_status(p.cq_a, e.IBV_WC_SUCCESS, "shm: atomic")
    check("shm: atomic result",
          int.from_bytes(ctypes.string_at(shm_addr + 2 * PAGE, 8), "little") == 42
          and int.from_bytes(ctypes.string_at(normal_addr + 8, 8), "little") == 41)
    ctypes.memset(normal_addr + PAGE, 0x5a, 2 * PAGE)
    post(p.a, e.IBV_WR_RDMA_READ, normal, PAGE, 2 * PAGE, zero, PAGE)
    expect_status(p.cq_a, e.IBV_WC_SUCCESS, "zero page: read")
    check("zero page: zeros", ctypes.string_at(normal_addr + PAGE, 2 * PAGE) == bytes(2 * PAGE))
    check("zero page: still in RTS", r.qp_state(p.a) == r.RTS and r.qp_state(p.b) == r.RTS)
    p.close()

    # The device still moves data after all of it.
    p = Pair(ctx, pd, gidx, gid)
    ctypes.memmove(normal_addr, pattern(5, PAGE), PAGE)
    post(p.a, e.IBV_WR_RDMA_WRITE, normal, 0, PAGE, shm, 0)
    post(p.a, e.IBV_WR_RDMA_READ, normal, PAGE, PAGE, shm, 0, wr_id=2)
    wcs = r.poll_upto(p.cq_a, 2, timeout=60)
    check("last pair: write and read back",
          [w.status for w in wcs] == [e.IBV_WC_SUCCESS] * 2
          and ctypes.string_at(normal_addr + PAGE, PAGE) == pattern(5, PAGE))
    p.close()
    for m in (shm, zero, normal):
        m.close()
    pd.close()
    ctx.close()
    return summary("odp_pages")


if __name__ == "__main__":
    try:
        sys.exit(main())
    except r.TestFailure as err:
        r.log(f"FAIL: {err}")
        sys.exit(1)
