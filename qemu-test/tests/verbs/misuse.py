#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""User-space misuse must not hurt the kernel: processes that hold live
verbs objects (PD, CQ, QP with mapped rings, MR, SRQ, AH) are killed with
SIGKILL mid-use, or simply exit without destroying anything, and one
scribbles over its mapped queues first. Afterwards the device still works
and, on the debug kernel, kmemleak finds nothing.

  qemu-test/run --nodes 1 [--drivers rs|c] qemu-test/tests/verbs/misuse.py [ROUNDS]
"""
import ctypes
import os
import signal
import subprocess
import sys

from pyverbs.device import Context
from pyverbs.pd import PD
from pyverbs.cq import CQ
from pyverbs.mr import MR
from pyverbs.srq import SRQ, SrqInitAttr, SrqAttr
from pyverbs.qp import QP, QPInitAttr, QPCap
import pyverbs.enums as e

from testlib import DEV, check, kmemleak_clean, kmemleak_clear, summary

ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1] else 30


def make_objects():
    """Every object kind, left alive."""
    ctx = Context(name=DEV)
    pd = PD(ctx)
    cq = CQ(ctx, 64)
    mr = MR(pd, 1 << 16, e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE)
    srq = SRQ(pd, SrqInitAttr(SrqAttr(max_wr=16, max_sge=1)))
    qps = [QP(pd, QPInitAttr(qp_type=t, scq=cq, rcq=cq,
                             cap=QPCap(max_send_wr=16, max_recv_wr=16)))
           for t in (e.IBV_QPT_RC, e.IBV_QPT_UC, e.IBV_QPT_UD)]
    return ctx, pd, cq, mr, srq, qps


def scribble_rings():
    """Writes garbage over every rxe ring this process has mapped."""
    libc = ctypes.CDLL(None)
    n = 0
    with open("/proc/self/maps") as maps:
        for line in maps:
            if "uverbs" not in line:
                continue
            lo, hi = (int(x, 16) for x in line.split()[0].split("-"))
            if "w" not in line.split()[1]:
                continue
            ctypes.memset(lo, 0xA5, hi - lo)
            n += 1
    del libc
    return n


def child(mode):
    objs = make_objects()
    if mode == "scribble":
        scribble_rings()
    if mode in ("kill", "scribble"):
        os.kill(os.getpid(), signal.SIGKILL)
    # mode "exit": leave without destroying anything.
    os._exit(0)


if len(sys.argv) > 2:
    child(sys.argv[2])

kmemleak_clear()
for mode in ("kill", "exit", "scribble"):
    want = -signal.SIGKILL if mode in ("kill", "scribble") else 0
    ends = [subprocess.run([sys.executable, __file__, "1", mode]).returncode for _ in range(ROUNDS)]
    wrong = [(i, rc) for i, rc in enumerate(ends) if rc != want]
    check(f"{ROUNDS} children ({mode}) held live objects and went away", not wrong,
          f"(round, exit) {wrong}, want exit {want}")

# The device is still usable afterwards.
ctx, pd, cq, mr, srq, qps = make_objects()
for qp in qps:
    qp.close()
srq.close()
mr.close()
cq.close()
pd.close()
ctx.close()
check("device still works", True)

check("kmemleak reports nothing", kmemleak_clean())
sys.exit(summary("misuse"))
