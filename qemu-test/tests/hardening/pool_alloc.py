#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
"""Index allocation on a full pool: the cost of taking a memory window's key
index when the MW pool is full but for a few, and the device's MW limit.

In a qemu-test guest (one node):

    qemu-test/run --nodes 1 --drivers rs qemu-test/tests/hardening/pool_alloc.py [COUNT]

Times ten allocate/free rounds of a type-1 MW on the empty pool, fills the
pool with COUNT type-1 MWs (default and at most the device's max_mw), checks
that one more fails with EINVAL when COUNT is max_mw, frees the one in the
middle, then times ten allocate/free rounds again: the median allocation
must stay under 2 ms (10 ms on the debug kernel) however full the pool is.
On the debug kernel kmemleak must find nothing afterwards.
Also prints what the windows cost the kernel (slab and vmalloc growth per
MW, and for max_mw of them). With COUNT below max_mw the pool keeps free
indices after the cursor, so only the full pool shows the cost of the
search; a smaller COUNT runs the same paths faster (the debug kernel).
"""

import statistics
import sys
import time

from pyverbs.device import Context
from pyverbs.mr import MW
from pyverbs.pd import PD
import pyverbs.enums as e

from testlib import (DEBUG_KERNEL, DEV, DRIVER, check, expect, kmemleak_clean, kmemleak_clear, memory_usage,
                     settle_memory, summary)

# Key index range of the MW pool (RXE_MIN/MAX_MW_INDEX): the top 24 bits of
# an rkey.
MW_INDEX = (0x80001, 0x100000)
ROUNDS = 10
BOUND_MS = 10.0 if DEBUG_KERNEL else 2.0
# Kernel memory one type-1 MW may cost (uverbs object, ib_mw, the driver's
# window and its pool node); max_mw of them stay within the guest's memory.
PER_MW_BYTES = 4096 if DEBUG_KERNEL else 1024


def rounds(pd):
    """ROUNDS allocate/free rounds of a type-1 MW: (allocation times in ms,
    free times in ms, key indices)."""
    alloc_ms, free_ms, indices = [], [], []
    for _ in range(ROUNDS):
        t0 = time.perf_counter()
        mw = MW(pd, e.IBV_MW_TYPE_1)
        t1 = time.perf_counter()
        indices.append(mw.rkey >> 8)
        mw.close()
        t2 = time.perf_counter()
        alloc_ms.append((t1 - t0) * 1e3)
        free_ms.append((t2 - t1) * 1e3)
    return alloc_ms, free_ms, indices


def report(what, alloc_ms, free_ms):
    print(f"{what}: allocation median {statistics.median(alloc_ms):.3f} ms max {max(alloc_ms):.3f} ms, "
          f"free median {statistics.median(free_ms):.3f} ms")


def main():
    count = int(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1] else None
    kmemleak_clear()
    ctx = Context(name=DEV)
    pd = PD(ctx)
    max_mw = ctx.query_device().max_mw
    check("max_mw is rdma_rxe's", max_mw == 524287, f"max_mw {max_mw}")
    target = max_mw if count is None else min(count, max_mw)

    alloc_ms, free_ms, _ = rounds(pd)
    report("empty pool", alloc_ms, free_ms)
    empty_median = statistics.median(alloc_ms)

    settle_memory()
    before = memory_usage()
    mws = []
    t0 = time.perf_counter()
    for _ in range(target):
        mws.append(MW(pd, e.IBV_MW_TYPE_1))
    fill_s = time.perf_counter() - t0
    after = memory_usage()
    grown = (after[0] - before[0] + after[1] - before[1]) * 1024
    per_mw = grown / max(target, 1)
    print(f"filled {target} MWs in {fill_s:.1f} s; kernel memory +{grown // 1024} kB "
          f"(slab {after[0] - before[0]} kB, vmalloc {after[1] - before[1]} kB): "
          f"{per_mw:.0f} bytes per MW, {per_mw * max_mw / 2**20:.0f} MiB for max_mw ({max_mw})")
    check(f"kernel memory per MW under {PER_MW_BYTES} bytes", per_mw < PER_MW_BYTES, f"{per_mw:.0f}")

    indices = [m.rkey >> 8 for m in mws]
    check("key indices unique", len(set(indices)) == len(indices))
    check("key indices in the MW range", all(MW_INDEX[0] <= i <= MW_INDEX[1] for i in indices))
    if target == max_mw:
        expect("MW beyond max_mw", lambda: MW(pd, e.IBV_MW_TYPE_1), "EINVAL")
        expect("type-2 MW beyond max_mw", lambda: MW(pd, e.IBV_MW_TYPE_2), "EINVAL")

    # Free the middle one: with the pool full, the next allocations search
    # from the cursor past every held index.
    mid = len(mws) // 2
    freed = indices[mid]
    mws[mid].close()
    mws[mid] = None
    alloc_ms, free_ms, got = rounds(pd)
    report(f"{target} held, one freed", alloc_ms, free_ms)
    median = statistics.median(alloc_ms)
    check(f"allocation median under {BOUND_MS} ms", median < BOUND_MS,
          f"{median:.3f} ms (empty pool {empty_median:.3f} ms)")
    held = set(indices)
    held.discard(freed)
    check("round indices free and in the MW range",
          all(MW_INDEX[0] <= i <= MW_INDEX[1] and i not in held for i in got), str(got))
    if target < max_mw:
        # Cyclic: a freed index is not reused while others are free.
        check("freed index not reused at once", got[0] != freed, f"{got[0]:#x}")
    expect("MW after the rounds", lambda: mws.__setitem__(mid, MW(pd, e.IBV_MW_TYPE_1)), "ok")

    t0 = time.perf_counter()
    for m in mws:
        if m is not None:
            m.close()
    print(f"freed {target} MWs in {time.perf_counter() - t0:.1f} s")
    pd.close()
    ctx.close()
    check("kmemleak reports nothing", kmemleak_clean())
    return summary(f"pool_alloc ({DRIVER or 'rs'})")


if __name__ == "__main__":
    sys.exit(main())
