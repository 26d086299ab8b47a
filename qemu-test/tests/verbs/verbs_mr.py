#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
"""MR and MW verbs through pyverbs, checked against rdma_rxe's behaviour.

In a qemu-test guest (one node is enough):

    qemu-test/run --nodes 1 --drivers rs qemu-test/tests/verbs/verbs_mr.py
    qemu-test/run --nodes 1 --drivers c  qemu-test/tests/verbs/verbs_mr.py [LOOPS]

Every case records "ok" or the errno the verb failed with; the expected
outcomes are rdma_rxe's (with the core's checks in front of it). Prints
one line per check and "N passed, N failed" at the end; exits non-zero on
any failure. LOOPS sets the reg/dereg loop length (default 10000). On the
debug kernel kmemleak must find nothing of the driver's or of pinned user
memory afterwards.
"""

import ctypes
import mmap
import sys

from pyverbs.device import Context
from pyverbs.mr import MR, MW
from pyverbs.pd import PD
import pyverbs.enums as e

from testlib import (DEBUG_KERNEL, DEV, DRIVER, KERNEL, check, check_flat_memory, kmemleak_clean, kmemleak_clear,
                     outcome, summary)

LW = e.IBV_ACCESS_LOCAL_WRITE
RW = e.IBV_ACCESS_REMOTE_WRITE
RR = e.IBV_ACCESS_REMOTE_READ
RA = e.IBV_ACCESS_REMOTE_ATOMIC
BIND = e.IBV_ACCESS_MW_BIND
ZERO_BASED = e.IBV_ACCESS_ZERO_BASED
ON_DEMAND = e.IBV_ACCESS_ON_DEMAND
HUGETLB = e.IBV_ACCESS_HUGETLB
RELAXED = e.IBV_ACCESS_RELAXED_ORDERING
FLUSH_GLOBAL = 1 << 8
FLUSH_PERSISTENT = 1 << 9

PAGE = mmap.PAGESIZE
# Key index ranges of rdma_rxe's MR and MW pools (RXE_MIN/MAX_*_INDEX).
MR_INDEX = (1, 0x7FFFF)
MW_INDEX = (0x80001, 0xFFFFF)

class Buffer:
    """Anonymous memory at a known address, for registrations at chosen
    offsets and lengths."""

    def __init__(self, pages):
        self.map = mmap.mmap(-1, pages * PAGE)
        self.addr = ctypes.addressof(ctypes.c_char.from_buffer(self.map))

    def close(self):
        # Drop the exported pointer before closing the mapping.
        self.addr = None
        try:
            self.map.close()
        except BufferError:
            pass


def reg(pd, length, access, addr):
    return MR(pd, length, access, address=addr)


def expected_basic(access):
    if access & (RW | RA) and not access & LW:
        return "EINVAL"
    return "ok"


def test_access_combos(ctx, pd, buf):
    bits = [LW, RW, RR, RA, BIND]
    for combo in range(1 << len(bits)):
        access = sum(b for i, b in enumerate(bits) if combo & (1 << i))
        res, mr = outcome(lambda: reg(pd, PAGE, access, buf.addr))
        want = expected_basic(access)
        check(f"reg access={access:#x}", res == want, f"got {res}, want {want}")
        if mr is not None:
            check(f"reg access={access:#x} lkey==rkey", mr.lkey == mr.rkey,
                  f"{mr.lkey:#x} {mr.rkey:#x}")
            mr.close()
    # Rights outside the basic five: the core's and rdma_rxe's answers.
    extra = [
        ("zero_based", LW | ZERO_BASED, "EOPNOTSUPP"),
        ("hugetlb", LW | HUGETLB, "EOPNOTSUPP"),
        # rxe_rs has on-demand paging; rdma_rxe has it from 6.15 on.
        ("on_demand", LW | ON_DEMAND, "ok" if DRIVER == "rs" or KERNEL != "6.12" else "EOPNOTSUPP"),
        ("relaxed_ordering", LW | RELAXED, "ok"),
        ("flush_global", LW | FLUSH_GLOBAL, "ok"),
        ("flush_persistent", LW | FLUSH_PERSISTENT, "EINVAL"),
        ("unknown_bit10", LW | (1 << 10), "EINVAL"),
        ("remote_atomic_only", RA, "EINVAL"),
    ]
    for name, access, want in extra:
        res, mr = outcome(lambda: reg(pd, PAGE, access, buf.addr))
        check(f"reg {name}", res == want, f"got {res}, want {want}")
        if mr is not None:
            mr.close()


def test_ranges(ctx, pd, buf):
    cases = [
        ("page", buf.addr, PAGE, "ok"),
        ("unaligned_start", buf.addr + 1, 100, "ok"),
        ("unaligned_cross_page", buf.addr + PAGE - 8, 16, "ok"),
        ("unaligned_many_pages", buf.addr + 3, 3 * PAGE, "ok"),
        ("one_byte_last", buf.addr + 4 * PAGE - 1, 1, "ok"),
        ("huge", buf.addr, 1 << 44, None),
        ("wrap", buf.addr, (1 << 64) - buf.addr + PAGE, "EINVAL"),
    ]
    for name, addr, length, want in cases:
        res, mr = outcome(lambda: reg(pd, length, LW | RR | RW, addr))
        if want is None:
            check(f"reg {name} fails", res != "ok", f"got {res}")
        else:
            check(f"reg {name}", res == want, f"got {res}, want {want}")
        if mr is not None:
            mr.close()
    # A zero-length registration: the verbs layer or the kernel refuses it;
    # both drivers must agree, so record what happened.
    res, mr = outcome(lambda: reg(pd, 0, LW, buf.addr))
    print(f"INFO reg zero_length -> {res}")
    check("reg zero_length refused", res != "ok", f"got {res}")
    if mr is not None:
        mr.close()
    # Memory that is not mapped cannot be pinned.
    hole = mmap.mmap(-1, PAGE)
    hole_addr = ctypes.addressof(ctypes.c_char.from_buffer(hole))
    res, mr = outcome(lambda: reg(pd, 64 * PAGE, LW, hole_addr))
    check("reg past a mapping fails", res != "ok", f"got {res}")
    if mr is not None:
        mr.close()


def test_keys(ctx, pd, buf):
    mrs = []
    for _ in range(200):
        mrs.append(reg(pd, PAGE, LW | RR, buf.addr))
    keys = [m.lkey for m in mrs]
    check("200 MRs: keys unique", len(set(keys)) == len(keys))
    check("200 MRs: indices unique", len({k >> 8 for k in keys}) == len(keys))
    check("MR key indices in the MR range",
          all(MR_INDEX[0] <= k >> 8 <= MR_INDEX[1] for k in keys),
          str([hex(k) for k in keys[:4]]))
    old = mrs[0].lkey
    mrs[0].close()
    again = reg(pd, PAGE, LW | RR, buf.addr)
    check("re-registered MR gets a new key", again.lkey != old and again.lkey not in keys,
          f"{old:#x} -> {again.lkey:#x}")
    again.close()
    for m in mrs[1:]:
        m.close()


def test_rereg(ctx, pd, buf):
    # rdma-core's rxe provider has no rereg_mr: libibverbs answers before the
    # kernel is asked, the same for both drivers. The kernel op is there for
    # providers that forward it.
    pd2 = PD(ctx)
    mr = reg(pd, PAGE, LW | RR, buf.addr)
    key = mr.lkey
    res, _ = outcome(lambda: mr.rereg(e.IBV_REREG_MR_CHANGE_PD, pd2, 0, 0, 0))
    check("rereg pd (not in the provider)", res == "EOPNOTSUPP", f"got {res}")
    res, _ = outcome(lambda: mr.rereg(e.IBV_REREG_MR_CHANGE_ACCESS, pd, 0, 0, LW | RW | RR))
    check("rereg access (not in the provider)", res == "EOPNOTSUPP", f"got {res}")
    res, _ = outcome(lambda: mr.rereg(e.IBV_REREG_MR_CHANGE_TRANSLATION, pd,
                                      buf.addr + PAGE, PAGE, LW))
    check("rereg translation refused", res in ("EINVAL", "EOPNOTSUPP"), f"got {res}")
    check("failed rereg keeps the keys", mr.lkey == key and mr.rkey == key, f"{key:#x} {mr.lkey:#x}")
    mr.close()
    pd2.close()


def test_mw(ctx, pd):
    mws = []
    for t in (e.IBV_MW_TYPE_1, e.IBV_MW_TYPE_2):
        res, mw = outcome(lambda: MW(pd, t))
        check(f"alloc mw type {t}", res == "ok", f"got {res}")
        if mw is not None:
            mws.append(mw)
    for _ in range(20):
        mws.append(MW(pd, e.IBV_MW_TYPE_2))
    keys = [m.rkey for m in mws]
    check("MW rkeys unique", len(set(keys)) == len(keys))
    check("MW key indices in the MW range",
          all(MW_INDEX[0] <= k >> 8 <= MW_INDEX[1] for k in keys), str([hex(k) for k in keys[:4]]))
    res, _ = outcome(lambda: MW(pd, 3))
    check("alloc mw type 3 refused", res != "ok", f"got {res}")
    for m in mws:
        m.close()
    check("dealloc mw", True)


def test_loop(ctx, pd, buf, n):
    def one(i):
        reg(pd, 2 * PAGE, LW | RW | RR, buf.addr + (i % PAGE)).close()

    # KASAN parks freed objects in a quarantine (up to 1/32 of memory) before
    # they return to the slabs, so a debug kernel only bounds gross leaks;
    # kmemleak (main) checks it precisely there.
    check_flat_memory("reg/dereg", n, one, slab_kb=16384 if DEBUG_KERNEL else 2048, warmup=200)


def main():
    loops = int(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1] else 10000
    kmemleak_clear()
    ctx = Context(name=DEV)
    pd = PD(ctx)
    buf = Buffer(8)
    test_access_combos(ctx, pd, buf)
    test_ranges(ctx, pd, buf)
    test_keys(ctx, pd, buf)
    test_rereg(ctx, pd, buf)
    test_mw(ctx, pd)
    test_loop(ctx, pd, buf, loops)
    pd.close()
    ctx.close()
    buf.close()
    check("kmemleak reports nothing", kmemleak_clean())
    return summary("verbs_mr")


if __name__ == "__main__":
    sys.exit(main())
