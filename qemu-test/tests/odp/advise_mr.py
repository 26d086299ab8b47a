#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
"""`ibv_advise_mr` (prefetch of on-demand-paging MRs) through the kernel,
one node:

  qemu-test/run --nodes 1 --drivers rs qemu-test/tests/odp/advise_mr.py

Debian 12's rxe provider (rdma-core 44) has no `advise_mr`: libibverbs
answers EOPNOTSUPP before the kernel sees the call, which is why
rdma-core's prefetch tests skip. This test calls the uverbs method
itself, with libibverbs' own `ibv_cmd_advise_mr` (what a provider with
the op calls), and checks what each advice does to never-touched memory
under an ODP MR, with `mincore`:

1. PREFETCH_WRITE, synchronous (FLUSH): every page becomes resident;
2. PREFETCH (read), synchronous: every page becomes resident;
3. PREFETCH_NO_FAULT, synchronous: nothing is faulted in;
4. PREFETCH_WRITE, asynchronous: succeeds (best effort), pages resident
   by the time the MR is read (rxe_rs does it before returning);
5. several SGEs in one call, over two MRs;
6. errors: an unknown lkey (EINVAL, both modes), a range past the MR's
   end and a range whose memory was unmapped (EFAULT when synchronous),
   an MR without local write (EINVAL, as rdma_rxe's lookup), an unknown
   advice (EOPNOTSUPP, the core's or the driver's), an MR of another PD.

Where the driver has no ODP MRs or no `advise_mr` (rdma_rxe before 6.15
and 6.16), the test says so and passes only for `c`.
"""

import ctypes
import sys

from testlib import DEV, DRIVER, KERNEL, Libibverbs, check, name_of, summary

vp = ctypes.c_void_p
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = vp
libc.mmap.argtypes = [vp, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
libc.munmap.argtypes = [vp, ctypes.c_size_t]
libc.mincore.argtypes = [vp, ctypes.c_size_t, ctypes.POINTER(ctypes.c_ubyte)]

PROT_RW = 0x1 | 0x2
MAP_PRIVATE_ANON = 0x02 | 0x20
PAGE = 4096
SIZE = 4 << 20

LOCAL_WRITE = 1
ON_DEMAND = 1 << 6
PREFETCH, PREFETCH_WRITE, PREFETCH_NO_FAULT = 0, 1, 2
FLUSH = 1


class Sge(ctypes.Structure):
    _fields_ = [("addr", ctypes.c_uint64), ("length", ctypes.c_uint32), ("lkey", ctypes.c_uint32)]


class IbvMr(ctypes.Structure):
    _fields_ = [("context", vp), ("pd", vp), ("addr", vp), ("length", ctypes.c_size_t),
                ("handle", ctypes.c_uint32), ("lkey", ctypes.c_uint32), ("rkey", ctypes.c_uint32)]


v = Libibverbs(DEV, more=(
    ("ibv_reg_mr", ctypes.POINTER(IbvMr), [vp, vp, ctypes.c_size_t, ctypes.c_int]),
    ("ibv_dereg_mr", ctypes.c_int, [vp]),
    ("ibv_cmd_advise_mr", ctypes.c_int,
     [vp, ctypes.c_int, ctypes.c_uint32, ctypes.POINTER(Sge), ctypes.c_uint32]),
))
lib = v.lib


def fresh(size=SIZE):
    """Anonymous memory nobody has touched."""
    addr = libc.mmap(None, size, PROT_RW, MAP_PRIVATE_ANON, -1, 0)
    if addr in (None, ctypes.c_void_p(-1).value):
        sys.exit("mmap failed")
    return addr


def resident(addr, size=SIZE):
    """How many of the pages at addr are resident."""
    n = size // PAGE
    vec = (ctypes.c_ubyte * n)()
    if libc.mincore(addr, size, vec) != 0:
        return -1
    return sum(b & 1 for b in vec)


def reg(pd, addr, size=SIZE, access=LOCAL_WRITE | ON_DEMAND):
    mr = lib.ibv_reg_mr(pd, addr, size, access)
    if not mr:
        sys.exit(f"ibv_reg_mr: {name_of(ctypes.get_errno())}")
    return mr


def advise(pd, advice, flags, *sges):
    arr = (Sge * max(1, len(sges)))(*[Sge(a, n, k) for a, n, k in sges])
    rc = lib.ibv_cmd_advise_mr(pd, advice, flags, arr, len(sges))
    return "ok" if rc == 0 else name_of(rc)


pd = lib.ibv_alloc_pd(v.ctx)
pd2 = lib.ibv_alloc_pd(v.ctx)
pages = SIZE // PAGE

probe = fresh()
mr = lib.ibv_reg_mr(pd, probe, SIZE, LOCAL_WRITE | ON_DEMAND)
if mr:
    first = advise(pd, PREFETCH_WRITE, FLUSH, (probe, SIZE, mr.contents.lkey))
    lib.ibv_dereg_mr(mr)
else:
    # No ODP MRs at all (rdma_rxe before 6.15).
    first = name_of(ctypes.get_errno())
libc.munmap(probe, SIZE)
if first in ("EOPNOTSUPP", "EPROTONOSUPPORT"):
    print(f"INFO {DRIVER} on {KERNEL}: no ODP MR prefetch ({first})")
    check("no advise_mr only where expected (rdma_rxe)", DRIVER == "c", f"driver {DRIVER}")
    sys.exit(summary("advise_mr"))

# 1-3: each advice on memory never touched.
for name, advice, want in (("PREFETCH_WRITE", PREFETCH_WRITE, pages),
                           ("PREFETCH", PREFETCH, pages),
                           ("PREFETCH_NO_FAULT", PREFETCH_NO_FAULT, 0)):
    buf = fresh()
    mr = reg(pd, buf)
    check(f"{name} sync on untouched memory: untouched before", resident(buf) == 0,
          f"{resident(buf)} resident")
    res = advise(pd, advice, FLUSH, (buf, SIZE, mr.contents.lkey))
    check(f"{name} sync succeeds", res == "ok", res)
    got = resident(buf)
    check(f"{name} sync: {want} of {pages} pages resident", got == want, f"{got} resident")
    lib.ibv_dereg_mr(mr)
    libc.munmap(buf, SIZE)

# 4: asynchronous.
buf = fresh()
mr = reg(pd, buf)
res = advise(pd, PREFETCH_WRITE, 0, (buf, SIZE, mr.contents.lkey))
check("PREFETCH_WRITE async succeeds", res == "ok", res)
got = resident(buf)
check("PREFETCH_WRITE async: pages resident after the call (done before it returns)",
      got == pages if DRIVER == "rs" else got >= 0, f"{got} resident")
lib.ibv_dereg_mr(mr)
libc.munmap(buf, SIZE)

# 5: several SGEs over two MRs, part of each.
a, b = fresh(), fresh()
mra, mrb = reg(pd, a), reg(pd, b)
res = advise(pd, PREFETCH_WRITE, FLUSH, (a, SIZE // 2, mra.contents.lkey),
             (b + SIZE // 2, SIZE // 4, mrb.contents.lkey))
check("two SGEs over two MRs succeed", res == "ok", res)
check("first SGE's half of MR a resident", resident(a) == pages // 2, f"{resident(a)} resident")
check("second SGE's quarter of MR b resident", resident(b) == pages // 4, f"{resident(b)} resident")

# 6: errors.
bad = mra.contents.lkey ^ 0xffffff00
for flags, mode in ((FLUSH, "sync"), (0, "async")):
    res = advise(pd, PREFETCH, flags, (a, PAGE, bad))
    check(f"unknown lkey ({mode}): EINVAL", res == "EINVAL", res)
    res = advise(pd2, PREFETCH, flags, (a, PAGE, mra.contents.lkey))
    check(f"MR of another PD ({mode}): EINVAL", res == "EINVAL", res)
    res = advise(pd, PREFETCH, flags, (a, PAGE, mra.contents.lkey), (a, PAGE, bad))
    check(f"a bad second SGE ({mode}): EINVAL", res == "EINVAL", res)
res = advise(pd, PREFETCH_WRITE, FLUSH, (a + SIZE - PAGE, 2 * PAGE, mra.contents.lkey))
check("range past the MR's end (sync): fails", res in ("EFAULT", "EINVAL"), res)
res = advise(pd, 7, FLUSH, (a, PAGE, mra.contents.lkey))
check("unknown advice: fails", res in ("EOPNOTSUPP", "EINVAL"), res)
ro_buf = fresh()
ro = reg(pd, ro_buf, access=ON_DEMAND)
res = advise(pd, PREFETCH, FLUSH, (ro_buf, PAGE, ro.contents.lkey))
check("MR without local write: EINVAL (rdma_rxe's lookup asks for it)", res == "EINVAL", res)
lib.ibv_dereg_mr(ro)
libc.munmap(ro_buf, SIZE)
# Memory unmapped under the MR: a synchronous prefetch cannot fault it in.
libc.munmap(b, SIZE)
res = advise(pd, PREFETCH_WRITE, FLUSH, (b, SIZE, mrb.contents.lkey))
check("unmapped memory (sync): EFAULT", res == "EFAULT", res)
res = advise(pd, PREFETCH_WRITE, 0, (b, SIZE, mrb.contents.lkey))
check("unmapped memory (async): ok, best effort", res == "ok", res)
# The device still works for the next call.
res = advise(pd, PREFETCH_WRITE, FLUSH, (a, SIZE, mra.contents.lkey))
check("a good call after the errors succeeds", res == "ok" and resident(a) == pages,
      f"{res}, {resident(a)} resident")

lib.ibv_dereg_mr(mra)
lib.ibv_dereg_mr(mrb)
libc.munmap(a, SIZE)
lib.ibv_dealloc_pd(pd2)
lib.ibv_dealloc_pd(pd)
v.close()
sys.exit(summary("advise_mr"))
