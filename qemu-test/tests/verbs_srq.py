#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
"""Shared receive queues through the rxe user ABI: create/query/modify/destroy
with the sizes and errnos rdma_rxe gives, the limit rules, the ring layout
user space maps, resize carrying posted WQEs over (and refusing to drop
any), indices user space scribbles over, and create/destroy in a loop
without leaking memory.

    qemu-test/run --nodes 1 --drivers c|rs qemu-test/tests/verbs_srq.py [LOOPS]
"""
import ctypes
import errno
import os
import sys
import time

from pyverbs.device import Context
from pyverbs.pd import PD
from pyverbs.pyverbs_error import PyverbsError, PyverbsRDMAError
from pyverbs.srq import SRQ, SrqAttr, SrqInitAttr
from pyverbs.wr import SGE, RecvWR

DEV = os.environ.get("RXE_DEV", "rxe0")
LOOPS = int(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1] else 2000

IBV_SRQ_MAX_WR, IBV_SRQ_LIMIT = 1, 2

passed = 0
failed = 0


def check(cond, what):
    global passed, failed
    if cond:
        passed += 1
        print(f"ok   {what}")
    else:
        failed += 1
        print(f"FAIL {what}")
    sys.stdout.flush()


def expect_errno(err, what, fn, *args):
    try:
        fn(*args)
    except PyverbsRDMAError as e:
        check(e.error_code == err, f"{what}: errno {e.error_code}, want {err}")
        return
    except PyverbsError as e:
        check(False, f"{what}: {e} (no errno)")
        return
    check(False, f"{what}: succeeded, want errno {err}")


def capacity(n):
    slots = 1
    while slots < n + 1:
        slots *= 2
    return slots - 1


def make_srq(pd, max_wr, max_sge, limit=0):
    return SRQ(pd, SrqInitAttr(SrqAttr(max_wr, max_sge, limit)))


def modify(srq, mask, max_wr=0, limit=0):
    srq.modify(SrqAttr(max_wr, 1, limit), mask)


def q(srq):
    a = srq.query()
    return (a.max_wr, a.max_sge, a.srq_limit)


def uverbs_maps():
    out = set()
    with open("/proc/self/maps") as f:
        for line in f:
            if "/dev/infiniband/uverbs" in line:
                a, b = line.split()[0].split("-")
                out.add((int(a, 16), int(b, 16)))
    return out


def u32(addr):
    return ctypes.c_uint32.from_address(addr)


def u64(addr):
    return ctypes.c_uint64.from_address(addr)


# struct rxe_queue_buf, struct rxe_recv_wqe and struct rxe_sge offsets.
LOG2_ELEM, INDEX_MASK, PROD, CONS, DATA = 0, 4, 128, 256, 384
WQE_WR_ID, WQE_DMA_LENGTH, WQE_NUM_SGE, WQE_SGE = 0, 16, 28, 40


def ring_of(maps, index_mask):
    """The one mapping whose queue header has this index mask."""
    found = [a for a, _ in maps if u32(a + INDEX_MASK).value == index_mask]
    return found[0] if len(found) == 1 else None


def meminfo(key):
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def kmemleak(cmd):
    try:
        with open("/sys/kernel/debug/kmemleak", "w") as f:
            f.write(cmd)
        return True
    except OSError:
        return False


def kmemleak_report():
    try:
        with open("/sys/kernel/debug/kmemleak") as f:
            return f.read()
    except OSError:
        return ""


ctx = Context(name=DEV)
attr = ctx.query_device()
pd = PD(ctx)
max_wr, max_sge = attr.max_srq_wr, attr.max_srq_sge
print(f"device {DEV} driver {os.environ.get('RXE_DRIVER')}: max_srq {attr.max_srq}, "
      f"max_srq_wr {max_wr}, max_srq_sge {max_sge}")
check((max_wr, max_sge) == (1 << 20, 27), "SRQ limits as rdma_rxe")

# --- sizes --------------------------------------------------------------------
for wr, sge in ((1, 1), (1, 0), (100, 4), (128, 27), (4096, 2)):
    srq = make_srq(pd, wr, sge)
    got = q(srq)
    want = (capacity(wr), max(sge, 1), 0)
    check(got == want, f"SRQ({wr}, {sge}) queries {got}, want {want}")
    srq.close()
srq = make_srq(pd, 100, 1, 500)
check(q(srq) == (127, 1, 500), f"a create-time limit above max_wr is kept: {q(srq)}")
srq.close()

# --- refused creates ----------------------------------------------------------
expect_errno(errno.EINVAL, "max_wr 0", make_srq, pd, 0, 1)
expect_errno(errno.EINVAL, "max_wr over max_srq_wr", make_srq, pd, max_wr + 1, 1)
expect_errno(errno.EINVAL, "max_sge over max_srq_sge", make_srq, pd, 16, max_sge + 1)

# --- modify: limit and resize rules --------------------------------------------
srq = make_srq(pd, 100, 4)
modify(srq, IBV_SRQ_LIMIT, limit=50)
check(q(srq) == (127, 4, 50), f"limit armed: {q(srq)}")
expect_errno(errno.EINVAL, "limit above the ring (128 > 127)", modify, srq, IBV_SRQ_LIMIT, 0, 128)
expect_errno(errno.EINVAL, "limit above max_srq_wr", modify, srq, IBV_SRQ_LIMIT, 0, max_wr + 1)
modify(srq, IBV_SRQ_LIMIT, limit=127)
check(q(srq)[2] == 127, "limit equal to the ring accepted")
modify(srq, IBV_SRQ_LIMIT, limit=50)
expect_errno(errno.EINVAL, "max_wr below the armed limit", modify, srq, IBV_SRQ_MAX_WR, 49)
expect_errno(errno.EINVAL, "max_wr 0", modify, srq, IBV_SRQ_MAX_WR, 0)
expect_errno(errno.EINVAL, "max_wr over max_srq_wr", modify, srq, IBV_SRQ_MAX_WR, max_wr + 1)
check(q(srq) == (127, 4, 50), f"refused modifies change nothing: {q(srq)}")
modify(srq, IBV_SRQ_MAX_WR, 200)
check(q(srq) == (255, 4, 50), f"resize to 200: {q(srq)}")
expect_errno(errno.EINVAL, "resize and limit: limit checked against the old ring",
             modify, srq, IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT, 1000, 300)
check(q(srq) == (255, 4, 50), f"... and nothing applied: {q(srq)}")
modify(srq, IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT, 1000, 200)
check(q(srq) == (1023, 4, 200), f"resize and limit at once: {q(srq)}")
modify(srq, IBV_SRQ_LIMIT, limit=0)
modify(srq, IBV_SRQ_MAX_WR, 10)
check(q(srq) == (15, 4, 0), f"limit disarmed, shrunk to 10: {q(srq)}")
srq.close()

# --- posted WQEs survive a resize ----------------------------------------------
before = uverbs_maps()
srq = make_srq(pd, 100, 4)
maps = uverbs_maps() - before
check(len(maps) == 1, f"one new uverbs mapping for the SRQ ({len(maps)})")
base = ring_of(maps, 127)
check(base is not None, "the mapping is a 128-slot ring")
if base is not None:
    check(u32(base + LOG2_ELEM).value == 7, f"log2_elem_size {u32(base + LOG2_ELEM).value}, want 7")
    posted = 100
    for i in range(posted):
        sges = [SGE(0x10000 * i, 64 + i, 0x100 + i), SGE(0x10000 * i + 0x8000, 8, 0x200 + i)]
        srq.post_recv(RecvWR(0x7000 + i, 2, sges))
    check(u32(base + PROD).value == posted and u32(base + CONS).value == 0,
          f"producer {u32(base + PROD).value} after {posted} posts")
    expect_errno(errno.EINVAL, f"resize below the {posted} posted (50)", modify, srq, IBV_SRQ_MAX_WR, 50)
    check(q(srq)[0] == 127 and u32(base + PROD).value == posted, "refused resize kept ring and WQEs")
    modify(srq, IBV_SRQ_MAX_WR, 150)
    check(q(srq)[0] == 255, f"resize to 150: {q(srq)}")
    nb = ring_of(uverbs_maps() - before, 255)
    check(nb is not None, "the new ring is mapped")
    if nb is not None:
        check(u32(nb + PROD).value == posted and u32(nb + CONS).value == 0,
              f"new ring: producer {u32(nb + PROD).value}, consumer {u32(nb + CONS).value}")
        ok = True
        for i in range(posted):
            s = nb + DATA + i * 128
            ok &= u64(s + WQE_WR_ID).value == 0x7000 + i
            ok &= u32(s + WQE_NUM_SGE).value == 2
            ok &= u32(s + WQE_DMA_LENGTH).value == 64 + i + 8
            ok &= u64(s + WQE_SGE).value == 0x10000 * i
            ok &= u32(s + WQE_SGE + 12).value == 0x100 + i
            ok &= u32(s + WQE_SGE + 16 + 12).value == 0x200 + i
        check(ok, "all WQEs carried over in order")
        # The provider keeps posting into the new ring.
        srq.post_recv(RecvWR(0x9999, 1, [SGE(0, 1, 1)]))
        check(u32(nb + PROD).value == posted + 1, "posting continues on the new ring")
srq.close()
check(not (uverbs_maps() - before), "destroy unmapped the ring")

# --- scribbled indices ----------------------------------------------------------
before = uverbs_maps()
srq = make_srq(pd, 100, 1)
base = ring_of(uverbs_maps() - before, 127)
check(base is not None, "found the ring to scribble on")
if base is not None:
    # The kernel consumes, so it owns the consumer index and must read the
    # producer masked: 0xdeadbeef & 127 = 111 WQEs "posted".
    u32(base + PROD).value = 0xdeadbeef
    u32(base + CONS).value = 0x55555555
    u32(base + LOG2_ELEM).value = 0xffffffff
    u32(base + INDEX_MASK).value = 0x7fffffff
    expect_errno(errno.EINVAL, "resize below 111 scribbled WQEs", modify, srq, IBV_SRQ_MAX_WR, 60)
    modify(srq, IBV_SRQ_MAX_WR, 111)
    check(q(srq) == (127, 1, 0), f"resize to the 111 scribbled WQEs: {q(srq)}")
    nb = ring_of(uverbs_maps() - before, 127)
    check(nb is not None and u32(nb + PROD).value == 111, "the new ring holds 111")
    modify(srq, IBV_SRQ_LIMIT, limit=127)
    check(q(srq)[2] == 127, "limit after the scribbled resize")
srq.close()

# --- create/destroy loop: no memory left behind -------------------------------
for _ in range(100):
    make_srq(pd, 64, 2).close()
have_kmemleak = kmemleak("scan") and kmemleak("clear")
time.sleep(1)
slab0, vmalloc0 = meminfo("Slab"), meminfo("VmallocUsed")
t0 = time.monotonic()
for i in range(LOOPS):
    srq = make_srq(pd, 64 if i % 2 else 1000, 2)
    if i % 3 == 0:
        modify(srq, IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT, 300, 10)
    srq.close()
dt = time.monotonic() - t0
time.sleep(1)
slab1, vmalloc1 = meminfo("Slab"), meminfo("VmallocUsed")
print(f"{LOOPS} SRQs in {dt:.1f}s: Slab {slab0} -> {slab1} kB, VmallocUsed {vmalloc0} -> {vmalloc1} kB")
slab_bound = 32768 if os.environ.get("RXE_FLAVOUR") == "debug" else 2048
check(slab1 - slab0 < slab_bound, f"Slab grew {slab1 - slab0} kB over {LOOPS} SRQs (bound {slab_bound})")
check(vmalloc1 - vmalloc0 < 1024, f"VmallocUsed grew {vmalloc1 - vmalloc0} kB over {LOOPS} SRQs")
if have_kmemleak:
    time.sleep(6)
    kmemleak("scan")
    kmemleak("scan")
    report = kmemleak_report()
    check(not report, "kmemleak reports nothing")
    if report:
        print(report[:4000])

pd.close()
ctx.close()
print(f"verbs_srq: {passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
