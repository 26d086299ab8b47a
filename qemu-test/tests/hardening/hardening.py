#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
"""Sizes and user-space behaviour the driver must survive, from the
hardening issue:

- a QP at the device's max_qp_wr (2^20 send and receive WRs) is created,
  as rdma_rxe creates it, and with no allocation WARN;
- an MR over 2 GiB (per-page arrays of several MiB; a small memfd mapped
  over and over, so the guest needs little memory). Skipped on rdma_rxe:
  6.12.117 kmallocs its per-page array (__alloc_mr_page_info), which fails
  with ENOMEM and a page allocator WARN at that size;
- the receive-queue flush of a QP in ERR while another process keeps the
  mapped RQ full by moving its producer index: the flush goes on in
  bounded steps, RESET stops it, no soft lockup. The endless loop this
  guards against needs the process to run on a second CPU while the
  kernel flushes; qemu-test/run's --smp guests see one CPU (no ACPI, and
  SeaBIOS's MP table lists the boot CPU only), so on one vCPU this only
  exercises the bounded flush. rdma_rxe 6.12 loops like the old code;
- rings that user space never maps, made with raw uverbs commands (the rxe
  provider maps every ring it creates): create/destroy and CQ/SRQ resize
  in a loop leave VmallocUsed flat.

    qemu-test/run --debug --nodes 1 --drivers rs|c qemu-test/tests/hardening/hardening.py [RACE_SECONDS]
"""
import ctypes
import errno
import glob
import os
import struct
import sys
import time

from pyverbs.cq import CQ
from pyverbs.device import Context
from pyverbs.mr import MR
from pyverbs.pd import PD
from pyverbs.pyverbs_error import PyverbsError
from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr
import pyverbs.enums as e

from testlib import (CONS, DEV, DRIVER, INDEX_MASK, PROD, check, kernel_problems, meminfo, summary, u32,
                     uverbs_maps)

MAX_QP_WR = 1 << 20


def attempt(name, fn):
    """Runs fn; a verbs error is a failed check and gives None."""
    try:
        return fn()
    except (PyverbsError, OSError) as err:
        check(name, False, f"{type(err).__name__}: {err}")
        return None


# --- a QP at max_qp_wr --------------------------------------------------------

def test_max_wr_qp(ctx, pd):
    cq = CQ(ctx, 16)
    cap = QPCap(max_send_wr=MAX_QP_WR, max_recv_wr=MAX_QP_WR, max_send_sge=1, max_recv_sge=1)
    t0 = time.time()
    qp = attempt("qp with 2^20 send and recv WRs", lambda: QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC,
                                                                          scq=cq, rcq=cq, cap=cap)))
    if qp is not None:
        _, init = qp.query(e.IBV_QP_CAP)
        got = (init.cap.max_send_wr, init.cap.max_recv_wr)
        # rdma_rxe: 2^20 + 1 slots rounded up to 2^21, one kept free.
        want = ((1 << 21) - 1, (1 << 21) - 1)
        check("qp with 2^20 send and recv WRs", got == want, f"caps {got}, want {want}")
        # The requester's per-slot state works across the whole ring:
        # through INIT to ERR, which flushes both (empty) queues.
        attempt("big qp to INIT", lambda: to_init(qp))
        attempt("big qp to ERR", lambda: qp.modify(QPAttr(qp_state=e.IBV_QPS_ERR), e.IBV_QP_STATE))
        qp.close()
        print(f"  created and destroyed in {time.time() - t0:.1f}s")
    # 2^20 WQEs of 32 SGEs: a send queue larger than the guest's RAM. It
    # fails without the allocator's "exceeds total pages" warning
    # (found by misuse_walk.py; the harness fails the boot on it).
    if DRIVER == "c":
        print("SKIP qp larger than RAM: rdma_rxe 6.12 vmalloc_user()s its ring (a vmalloc WARN)")
        cq.close()
        return
    cap = QPCap(max_send_wr=MAX_QP_WR, max_recv_wr=1, max_send_sge=32, max_recv_sge=1)
    try:
        QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq, cap=cap)).close()
        check("qp with 2^20 WQEs of 32 SGEs (larger than RAM) refused", False, "created")
    except PyverbsError as err:
        check("qp with 2^20 WQEs of 32 SGEs (larger than RAM) refused", True, str(err))
    cq.close()


def to_init(qp):
    a = QPAttr(qp_state=e.IBV_QPS_INIT)
    a.pkey_index = 0
    a.port_num = 1
    a.qp_access_flags = e.IBV_ACCESS_REMOTE_WRITE
    qp.modify(a, e.IBV_QP_STATE | e.IBV_QP_PKEY_INDEX | e.IBV_QP_PORT | e.IBV_QP_ACCESS_FLAGS)


# --- an MR over 2 GiB ---------------------------------------------------------

PROT_READ, PROT_WRITE = 1, 2
MAP_SHARED, MAP_PRIVATE, MAP_FIXED, MAP_ANONYMOUS, MAP_NORESERVE = 1, 2, 0x10, 0x20, 0x4000


def libc():
    lib = ctypes.CDLL(None, use_errno=True)
    lib.mmap.restype = ctypes.c_void_p
    lib.mmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                         ctypes.c_long)
    lib.munmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t)
    return lib


def test_big_mr(pd):
    """2 GiB of address space, 64 MiB of memory: the MR's per-page arrays
    (512 Ki pages) are far past the largest kmalloc (4 MiB)."""
    if DRIVER == "c":
        print("SKIP 2 GiB MR: rdma_rxe 6.12 kmallocs its page array (ENOMEM and a WARN)")
        return
    lib = libc()
    total, chunk = 2 << 30, 64 << 20
    fd = os.memfd_create("rxe-big-mr")
    os.ftruncate(fd, chunk)
    base = lib.mmap(None, total, 0, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0)
    if base in (None, ctypes.c_void_p(-1).value):
        check("2 GiB address range", False, f"mmap: errno {ctypes.get_errno()}")
        return
    for off in range(0, total, chunk):
        got = lib.mmap(base + off, chunk, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0)
        if got != base + off:
            check("memfd mapped over 2 GiB", False, f"mmap: errno {ctypes.get_errno()}")
            lib.munmap(base, total)
            os.close(fd)
            return
    access = e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE | e.IBV_ACCESS_REMOTE_READ
    t0 = time.time()
    mr = attempt("2 GiB MR", lambda: MR(pd, total, access, address=base))
    if mr is not None:
        check("2 GiB MR", mr.length == total, f"length {mr.length}")
        mr.close()
        print(f"  registered and deregistered in {time.time() - t0:.1f}s")
    lib.munmap(base, total)
    os.close(fd)


# --- RQ flush against a moving producer index --------------------------------

def keep_ring_full(ring, mask, stop_fd, seconds):
    """Child: sets the producer index to a full ring, over and over."""
    prod, cons = u32(ring + PROD), u32(ring + CONS)
    os.set_blocking(stop_fd, False)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for _ in range(2000):
            prod.value = (cons.value + mask) & mask
        try:
            if os.read(stop_fd, 1) == b"":
                break
        except BlockingIOError:
            pass
    os._exit(0)


def test_rq_flush_race(ctx, pd, seconds):
    if DRIVER == "c" and (os.cpu_count() or 1) > 1:
        print("SKIP rq flush race: rdma_rxe 6.12 flush_recv_queue() loops while the ring looks non-empty")
        return
    cq = CQ(ctx, 64)
    before = uverbs_maps()
    qp = QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq,
                           cap=QPCap(max_send_wr=1, max_recv_wr=1023, max_send_sge=1, max_recv_sge=1)))
    rings = [lo for lo, _ in sorted(uverbs_maps() - before) if u32(lo + INDEX_MASK).value == 1023]
    if len(rings) != 1:
        check("rq flush race: the RQ mapping", False, f"{len(rings)} candidates")
        return
    to_init(qp)
    stop_r, stop_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(stop_w)
        keep_ring_full(rings[0], 1023, stop_r, seconds)
    os.close(stop_r)
    time.sleep(0.5)
    # ERR: the responder flushes the RQ, which never looks empty while the
    # child runs. With two CPUs, a flush that loops until the ring is empty
    # keeps one stuck, and the watchdog reports it after 20 s.
    qp.modify(QPAttr(qp_state=e.IBV_QPS_ERR), e.IBV_QP_STATE)
    time.sleep(max(seconds - 2, 1))
    t0 = time.time()
    qp.modify(QPAttr(qp_state=e.IBV_QPS_RESET), e.IBV_QP_STATE)
    took = time.time() - t0
    os.close(stop_w)
    os.waitpid(pid, 0)
    flushed = 0
    while True:
        n, wcs = cq.poll(16)
        if n <= 0:
            break
        flushed += sum(1 for wc in wcs if wc.status == e.IBV_WC_WR_FLUSH_ERR)
    print(f"  reset after {seconds} s of flushing took {took:.1f}s; {flushed} flush completions")
    check("rq flush race: completions flushed", flushed > 0)
    problems = [p for p in kernel_problems() if "lockup" in p or "stall" in p]
    check("rq flush race: no soft lockup or RCU stall", not problems, "; ".join(problems[:3]))
    qp.close()
    cq.close()


# --- rings user space never maps ----------------------------------------------

CMD_GET_CONTEXT, CMD_ALLOC_PD, CMD_DEALLOC_PD = 0, 3, 4
CMD_CREATE_CQ, CMD_RESIZE_CQ, CMD_DESTROY_CQ = 18, 19, 20
CMD_CREATE_QP, CMD_DESTROY_QP = 24, 27
CMD_CREATE_SRQ, CMD_MODIFY_SRQ, CMD_DESTROY_SRQ = 32, 33, 35
IB_SRQ_MAX_WR = 1
IB_QPT_RC = 2


class RawVerbs:
    """The uverbs write() commands, without the rxe provider: the driver's
    responses (the rings' mmap info) are read and the rings left unmapped."""

    def __init__(self, dev):
        path = None
        for d in glob.glob("/sys/class/infiniband_verbs/uverbs*"):
            with open(f"{d}/ibdev") as f:
                if f.read().strip() == dev:
                    path = "/dev/infiniband/" + os.path.basename(d)
        if path is None:
            raise RuntimeError(f"no uverbs device for {dev}")
        self.fd = os.open(path, os.O_RDWR)
        resp = self.cmd(CMD_GET_CONTEXT, b"", 8)
        self.async_fd = struct.unpack_from("=I", resp)[0]
        self.pd = struct.unpack_from("=I", self.cmd(CMD_ALLOC_PD, b"", 4))[0]

    def cmd(self, command, body, resp_len, has_resp=True):
        """One command; `resp_len` counts the core's and the driver's response."""
        resp = ctypes.create_string_buffer(max(resp_len, 8))
        payload = (struct.pack("=Q", ctypes.addressof(resp)) if has_resp else b"") + body
        hdr = struct.pack("=IHH", command, (8 + len(payload)) // 4, resp_len // 4)
        os.write(self.fd, hdr + payload)
        return resp.raw[:resp_len]

    def create_cq(self, cqe):
        resp = self.cmd(CMD_CREATE_CQ, struct.pack("=QIIiI", 0, cqe, 0, -1, 0), 8 + 16)
        return struct.unpack_from("=I", resp)[0]

    def resize_cq(self, cq, cqe):
        self.cmd(CMD_RESIZE_CQ, struct.pack("=II", cq, cqe), 8 + 16)

    def destroy_cq(self, cq):
        self.cmd(CMD_DESTROY_CQ, struct.pack("=II", cq, 0), 8)

    def create_srq(self, max_wr):
        resp = self.cmd(CMD_CREATE_SRQ, struct.pack("=QIIII", 0, self.pd, max_wr, 1, 0), 16 + 24)
        return struct.unpack_from("=I", resp)[0]

    def resize_srq(self, srq, max_wr):
        # The driver writes the new ring's mmap info where the command says.
        mi = ctypes.create_string_buffer(16)
        body = struct.pack("=IIIIQ", srq, IB_SRQ_MAX_WR, max_wr, 0, ctypes.addressof(mi))
        self.cmd(CMD_MODIFY_SRQ, body, 0, has_resp=False)

    def destroy_srq(self, srq):
        self.cmd(CMD_DESTROY_SRQ, struct.pack("=II", srq, 0), 4)

    def create_qp(self, cq, wr):
        body = struct.pack("=QIIIIIIIIIBBBB", 0, self.pd, cq, cq, 0, wr, wr, 1, 1, 0, 0, IB_QPT_RC, 0, 0)
        return struct.unpack_from("=I", self.cmd(CMD_CREATE_QP, body, 32 + 32))[0]

    def destroy_qp(self, qp):
        self.cmd(CMD_DESTROY_QP, struct.pack("=II", qp, 0), 4)

    def close(self):
        self.cmd(CMD_DEALLOC_PD, struct.pack("=I", self.pd), 0, has_resp=False)
        os.close(self.fd)
        os.close(self.async_fd)


def flat(name, rounds, leak_kb, fn):
    """Runs fn `rounds` times; VmallocUsed must grow by less than a quarter
    of what keeping each round's unmapped rings would cost."""
    for _ in range(2):
        fn()
    before = meminfo("VmallocUsed")
    for _ in range(rounds):
        fn()
    grew = meminfo("VmallocUsed") - before
    limit = rounds * leak_kb // 4
    print(f"  {name}: VmallocUsed {before} kB, grew {grew} kB over {rounds} rounds")
    check(f"unmapped rings: {name} keeps vmalloc flat", grew < limit,
          f"grew {grew} kB, a leak would be {rounds * leak_kb} kB")


def test_unmapped_rings(rounds=30):
    try:
        v = RawVerbs(DEV)
    except OSError as err:
        check("raw uverbs context", False, str(err))
        return
    try:
        # CQ of 32767 CQEs: 32768 slots of 32 bytes, 1 MiB.
        def cq_round():
            v.destroy_cq(v.create_cq(32767))
        flat("cq create/destroy", rounds, 1024, cq_round)

        cq = v.create_cq(1023)

        def cq_resize_round():
            v.resize_cq(cq, 32767)
            v.resize_cq(cq, 16383)
        flat("cq resize", rounds, 1024 + 512, cq_resize_round)
        v.destroy_cq(cq)

        # SRQ of 8191 WQEs of one SGE: 8192 slots of 64 bytes, 512 KiB.
        def srq_round():
            v.destroy_srq(v.create_srq(8191))
        flat("srq create/destroy", rounds, 512, srq_round)

        srq = v.create_srq(1023)

        def srq_resize_round():
            v.resize_srq(srq, 8191)
            v.resize_srq(srq, 4095)
        flat("srq resize", rounds, 512 + 256, srq_resize_round)
        v.destroy_srq(srq)

        # RC QP of 1023 + 1023 WRs: an SQ of 256 KiB, an RQ of 64 KiB.
        cq = v.create_cq(64)

        def qp_round():
            v.destroy_qp(v.create_qp(cq, 1023))
        flat("qp create/destroy", rounds, 256 + 64, qp_round)
        v.destroy_cq(cq)
    except OSError as err:
        check("unmapped rings: uverbs command", False, f"{err} ({errno.errorcode.get(err.errno)})")
    v.close()


def main():
    ctx = Context(name=DEV)
    pd = PD(ctx)
    print(f"device {DEV} ({DRIVER}), {os.cpu_count()} CPUs")
    test_max_wr_qp(ctx, pd)
    test_big_mr(pd)
    test_unmapped_rings()
    test_rq_flush_race(ctx, pd, int(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1] else 25)
    problems = kernel_problems()
    check("kernel log has no WARN, BUG, lockup or stall", not problems, "; ".join(problems[:3]))
    pd.close()
    ctx.close()
    return summary("hardening")


if __name__ == "__main__":
    sys.exit(main())
