#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
"""Completion queues through the rxe user ABI, as rdma-core's provider and
pyverbs use them: create/resize/destroy with the sizes and errnos rdma_rxe
gives, arming through a completion channel, the ring layout user space maps,
resize carrying over completions (planted by writing the mapped ring, which
also checks that indices user space scribbles over are masked, not trusted),
and create/destroy in a loop without leaking memory.

    qemu-test/run --nodes 1 --drivers c|rs qemu-test/tests/verbs/verbs_cq.py [LOOPS]
"""
import ctypes
import sys

from pyverbs.cq import CQ, CompChannel
from pyverbs.device import Context
from pyverbs.pyverbs_error import PyverbsError, PyverbsRDMAError

from testlib import (CONS, DATA, DEV, DRIVER, INDEX_MASK, LOG2_ELEM, PROD, capacity, check,
                     check_flat_memory, expect, kmemleak_clean, kmemleak_clear, summary, u32, u64, uverbs_maps)

LOOPS = int(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1] else 10000

# struct ib_uverbs_wc offsets (rdma_user_rxe.h).
WC_WR_ID, WC_STATUS, WC_OPCODE, WC_BYTE_LEN, WC_QP_NUM = 0, 8, 12, 20, 28
IBV_WC_RECV = 128


kmemleak_clear()
ctx = Context(name=DEV)
attr = ctx.query_device()
max_cqe = attr.max_cqe
print(f"device {DEV} driver {DRIVER}: max_cqe {max_cqe}, "
      f"max_cq {attr.max_cq}, comp vectors {ctx.num_comp_vectors}")
check(f"max_cqe is {max_cqe}", max_cqe == 32767)

# --- sizes --------------------------------------------------------------------
for n in (1, 2, 3, 100, 127, 128, 4096, max_cqe):
    cq = CQ(ctx, n)
    check(f"CQ({n}) holds {cq.cqe}, want {capacity(n)}", cq.cqe == capacity(n))
    cq.close()

# --- refused creates ----------------------------------------------------------
expect(f"CQ({max_cqe + 1}) over max_cqe", lambda: CQ(ctx, max_cqe + 1), "EINVAL")
expect("CQ(0)", lambda: CQ(ctx, 0), "EINVAL")
expect("CQ(-1)", lambda: CQ(ctx, -1), "EINVAL")
expect(f"comp_vector {ctx.num_comp_vectors} (out of range)",
       lambda: CQ(ctx, 10, None, None, ctx.num_comp_vectors), "EINVAL")
cq = CQ(ctx, 10, None, None, ctx.num_comp_vectors - 1)
check("last comp_vector accepted", cq.cqe == 15)
cq.close()

# --- resize -------------------------------------------------------------------
cq = CQ(ctx, 10)
cq.resize(100)
check(f"resize 10 -> 100 holds {cq.cqe}", cq.cqe == 127)
cq.resize(1)
check(f"resize 100 -> 1 (empty) holds {cq.cqe}", cq.cqe == 1)
cq.resize(max_cqe)
check(f"resize to max_cqe holds {cq.cqe}", cq.cqe == max_cqe)
expect("resize over max_cqe", lambda: cq.resize(max_cqe + 1), "EINVAL")
expect("resize to 0", lambda: cq.resize(0), "EINVAL")
check("failed resizes keep the size", cq.cqe == max_cqe)
check("an unused CQ polls empty", cq.poll(4)[0] == 0)
cq.close()

# --- arming through a completion channel ---------------------------------------
ch = CompChannel(ctx)
cq = CQ(ctx, 16, None, ch, 0)
for solicited in (0, 1, 0, 0):
    try:
        cq.req_notify(solicited)
        check(f"req_notify(solicited_only={solicited})", True)
    except PyverbsError as e:
        check(f"req_notify(solicited_only={solicited}): {e}", False)
cq.close()
ch.close()
cq = CQ(ctx, 16)
cq.req_notify()
check("req_notify on a CQ without channel", True)
cq.close()

# --- the mapped ring: layout, scribbles, resize carrying completions ---------
before = uverbs_maps()
cq = CQ(ctx, 200)
new = sorted(uverbs_maps() - before)
check(f"one new uverbs mapping for the CQ ({len(new)})", len(new) == 1)
if len(new) == 1:
    base, end = new[0]
    check(f"mapping is {end - base} bytes", end - base >= DATA + 256 * 128)
    check(f"log2_elem_size {u32(base + LOG2_ELEM).value}, want 7", u32(base + LOG2_ELEM).value == 7)
    check(f"index_mask {u32(base + INDEX_MASK).value}, want 255", u32(base + INDEX_MASK).value == 255)
    check("indices start at 0", u32(base + PROD).value == 0 and u32(base + CONS).value == 0)

    # Plant 17 completions: the kernel's producer index is 0, so a consumer
    # index of -17 (mod 256) makes 17 waiting. Write it with garbage in the
    # high bits, and garbage in the header fields the kernel must not read.
    cons = 0xdeadbeef
    planted = ((0 - cons) & 255)
    check("17 completions planted", planted == 17)
    for i in range(planted):
        slot = base + DATA + ((cons + i) & 255) * 128
        ctypes.memset(slot, 0, 128)
        u64(slot + WC_WR_ID).value = 0x5000 + i
        u32(slot + WC_STATUS).value = 0
        u32(slot + WC_OPCODE).value = IBV_WC_RECV
        u32(slot + WC_BYTE_LEN).value = 10 * i
        u32(slot + WC_QP_NUM).value = 0x11
    u32(base + CONS).value = cons
    u32(base + LOG2_ELEM).value = 0xffffffff
    u32(base + INDEX_MASK).value = 0x7fffffff

    expect("resize below the 17 waiting (10)", lambda: cq.resize(10), "EINVAL")
    expect("resize below the 17 waiting (16)", lambda: cq.resize(16), "EINVAL")
    cq.resize(17)
    check(f"resize to the 17 waiting holds {cq.cqe}", cq.cqe == 31)
    n, wcs = cq.poll(40)
    check(f"{n} completions carried over, want {planted}", n == planted)
    ids = [wc.wr_id for wc in wcs]
    check("in order, wr_ids intact", ids == [0x5000 + i for i in range(planted)])
    check("fields intact", all(wc.byte_len == 10 * i and wc.opcode == IBV_WC_RECV and wc.qp_num == 0x11
              and wc.status == 0 for i, wc in enumerate(wcs)))
    check("then empty", cq.poll(4)[0] == 0)

    # Scribble the new ring too, then resize again and destroy.
    after = sorted(uverbs_maps() - before)
    if len(after) == 1:
        nb = after[0][0]
        u32(nb + CONS).value = 0xffffffff
        u32(nb + PROD).value = 0x12345678
    try:
        cq.resize(1000)
        check("resize after scribbling the new ring", cq.cqe == 1023)
    except PyverbsRDMAError as e:
        check(f"resize after scribbling the new ring: {e}", False)
cq.close()
check("destroy unmapped the ring", not (uverbs_maps() - before))

# --- create/destroy loop: no memory left behind -------------------------------
def one_cq(i):
    CQ(ctx, 64 if i % 2 else 1000).close()


check_flat_memory("CQs", LOOPS, one_cq, warmup=200)

ctx.close()
check("kmemleak reports nothing", kmemleak_clean())
sys.exit(summary("verbs_cq"))
