#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
"""Shared receive queues through the rxe user ABI: create/query/modify/destroy
with the sizes and errnos rdma_rxe gives, the limit rules, the ring layout
user space maps, resize carrying posted WQEs over (and refusing to drop
any), indices user space scribbles over, and create/destroy in a loop
without leaking memory.

    qemu-test/run --nodes 1 --drivers c|rs qemu-test/tests/verbs/verbs_srq.py [LOOPS]
"""
import sys

from pyverbs.device import Context
from pyverbs.pd import PD
from pyverbs.srq import SRQ, SrqAttr, SrqInitAttr
from pyverbs.wr import SGE, RecvWR

from testlib import (CONS, DATA, DEV, DRIVER, INDEX_MASK, LOG2_ELEM, PROD, capacity, check,
                     check_flat_memory, expect, kmemleak_clean, kmemleak_clear, ring_of, summary, u32, u64,
                     uverbs_maps)

LOOPS = int(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1] else 2000

IBV_SRQ_MAX_WR, IBV_SRQ_LIMIT = 1, 2

# struct rxe_recv_wqe and struct rxe_sge offsets (rdma_user_rxe.h).
WQE_WR_ID, WQE_DMA_LENGTH, WQE_NUM_SGE, WQE_SGE = 0, 16, 28, 40


def make_srq(pd, max_wr, max_sge, limit=0):
    return SRQ(pd, SrqInitAttr(SrqAttr(max_wr, max_sge, limit)))


def modify(srq, mask, max_wr=0, limit=0):
    srq.modify(SrqAttr(max_wr, 1, limit), mask)


def q(srq):
    a = srq.query()
    return (a.max_wr, a.max_sge, a.srq_limit)


kmemleak_clear()
ctx = Context(name=DEV)
attr = ctx.query_device()
pd = PD(ctx)
max_wr, max_sge = attr.max_srq_wr, attr.max_srq_sge
print(f"device {DEV} driver {DRIVER}: max_srq {attr.max_srq}, "
      f"max_srq_wr {max_wr}, max_srq_sge {max_sge}")
check("SRQ limits as rdma_rxe", (max_wr, max_sge) == (1 << 20, 27))

# --- sizes --------------------------------------------------------------------
for wr, sge in ((1, 1), (1, 0), (100, 4), (128, 27), (4096, 2)):
    srq = make_srq(pd, wr, sge)
    got = q(srq)
    want = (capacity(wr), max(sge, 1), 0)
    check(f"SRQ({wr}, {sge}) queries {got}, want {want}", got == want)
    srq.close()
srq = make_srq(pd, 100, 1, 500)
check(f"a create-time limit above max_wr is kept: {q(srq)}", q(srq) == (127, 1, 500))
srq.close()

# --- refused creates ----------------------------------------------------------
expect("max_wr 0", lambda: make_srq(pd, 0, 1), "EINVAL")
expect("max_wr over max_srq_wr", lambda: make_srq(pd, max_wr + 1, 1), "EINVAL")
expect("max_sge over max_srq_sge", lambda: make_srq(pd, 16, max_sge + 1), "EINVAL")

# --- modify: limit and resize rules --------------------------------------------
srq = make_srq(pd, 100, 4)
modify(srq, IBV_SRQ_LIMIT, limit=50)
check(f"limit armed: {q(srq)}", q(srq) == (127, 4, 50))
expect("limit above the ring (128 > 127)", lambda: modify(srq, IBV_SRQ_LIMIT, 0, 128), "EINVAL")
expect("limit above max_srq_wr", lambda: modify(srq, IBV_SRQ_LIMIT, 0, max_wr + 1), "EINVAL")
modify(srq, IBV_SRQ_LIMIT, limit=127)
check("limit equal to the ring accepted", q(srq)[2] == 127)
modify(srq, IBV_SRQ_LIMIT, limit=50)
expect("max_wr below the armed limit", lambda: modify(srq, IBV_SRQ_MAX_WR, 49), "EINVAL")
expect("max_wr 0", lambda: modify(srq, IBV_SRQ_MAX_WR, 0), "EINVAL")
expect("max_wr over max_srq_wr", lambda: modify(srq, IBV_SRQ_MAX_WR, max_wr + 1), "EINVAL")
check(f"refused modifies change nothing: {q(srq)}", q(srq) == (127, 4, 50))
modify(srq, IBV_SRQ_MAX_WR, 200)
check(f"resize to 200: {q(srq)}", q(srq) == (255, 4, 50))
expect("resize and limit: limit checked against the old ring",
       lambda: modify(srq, IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT, 1000, 300), "EINVAL")
check(f"... and nothing applied: {q(srq)}", q(srq) == (255, 4, 50))
modify(srq, IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT, 1000, 200)
check(f"resize and limit at once: {q(srq)}", q(srq) == (1023, 4, 200))
modify(srq, IBV_SRQ_LIMIT, limit=0)
modify(srq, IBV_SRQ_MAX_WR, 10)
check(f"limit disarmed, shrunk to 10: {q(srq)}", q(srq) == (15, 4, 0))
srq.close()

# --- posted WQEs survive a resize ----------------------------------------------
before = uverbs_maps()
srq = make_srq(pd, 100, 4)
maps = uverbs_maps() - before
check(f"one new uverbs mapping for the SRQ ({len(maps)})", len(maps) == 1)
base = ring_of(maps, 127)
check("the mapping is a 128-slot ring", base is not None)
if base is not None:
    check(f"log2_elem_size {u32(base + LOG2_ELEM).value}, want 7", u32(base + LOG2_ELEM).value == 7)
    posted = 100
    for i in range(posted):
        sges = [SGE(0x10000 * i, 64 + i, 0x100 + i), SGE(0x10000 * i + 0x8000, 8, 0x200 + i)]
        srq.post_recv(RecvWR(0x7000 + i, 2, sges))
    check(f"producer {u32(base + PROD).value} after {posted} posts",
          u32(base + PROD).value == posted and u32(base + CONS).value == 0)
    expect(f"resize below the {posted} posted (50)", lambda: modify(srq, IBV_SRQ_MAX_WR, 50), "EINVAL")
    check("refused resize kept ring and WQEs", q(srq)[0] == 127 and u32(base + PROD).value == posted)
    modify(srq, IBV_SRQ_MAX_WR, 150)
    check(f"resize to 150: {q(srq)}", q(srq)[0] == 255)
    nb = ring_of(uverbs_maps() - before, 255)
    check("the new ring is mapped", nb is not None)
    if nb is not None:
        check(f"new ring: producer {u32(nb + PROD).value}, consumer {u32(nb + CONS).value}",
              u32(nb + PROD).value == posted and u32(nb + CONS).value == 0)
        ok = True
        for i in range(posted):
            s = nb + DATA + i * 128
            ok &= u64(s + WQE_WR_ID).value == 0x7000 + i
            ok &= u32(s + WQE_NUM_SGE).value == 2
            ok &= u32(s + WQE_DMA_LENGTH).value == 64 + i + 8
            ok &= u64(s + WQE_SGE).value == 0x10000 * i
            ok &= u32(s + WQE_SGE + 12).value == 0x100 + i
            ok &= u32(s + WQE_SGE + 16 + 12).value == 0x200 + i
        check("all WQEs carried over in order", ok)
        # The provider keeps posting into the new ring.
        srq.post_recv(RecvWR(0x9999, 1, [SGE(0, 1, 1)]))
        check("posting continues on the new ring", u32(nb + PROD).value == posted + 1)
srq.close()
check("destroy unmapped the ring", not (uverbs_maps() - before))

# --- scribbled indices ----------------------------------------------------------
before = uverbs_maps()
srq = make_srq(pd, 100, 1)
base = ring_of(uverbs_maps() - before, 127)
check("found the ring to scribble on", base is not None)
if base is not None:
    # The kernel consumes, so it owns the consumer index and must read the
    # producer masked: 0xdeadbeef & 127 = 111 WQEs "posted".
    u32(base + PROD).value = 0xdeadbeef
    u32(base + CONS).value = 0x55555555
    u32(base + LOG2_ELEM).value = 0xffffffff
    u32(base + INDEX_MASK).value = 0x7fffffff
    expect("resize below 111 scribbled WQEs", lambda: modify(srq, IBV_SRQ_MAX_WR, 60), "EINVAL")
    modify(srq, IBV_SRQ_MAX_WR, 111)
    check(f"resize to the 111 scribbled WQEs: {q(srq)}", q(srq) == (127, 1, 0))
    nb = ring_of(uverbs_maps() - before, 127)
    check("the new ring holds 111", nb is not None and u32(nb + PROD).value == 111)
    modify(srq, IBV_SRQ_LIMIT, limit=127)
    check("limit after the scribbled resize", q(srq)[2] == 127)
srq.close()

# --- create/destroy loop: no memory left behind -------------------------------
def one_srq(i):
    srq = make_srq(pd, 64 if i % 2 else 1000, 2)
    if i % 3 == 0:
        modify(srq, IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT, 300, 10)
    srq.close()


check_flat_memory("SRQs", LOOPS, one_srq, warmup=100)

pd.close()
ctx.close()
check("kmemleak reports nothing", kmemleak_clean())
sys.exit(summary("verbs_srq"))
