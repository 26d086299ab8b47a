# SPDX-License-Identifier: GPL-2.0
"""Helpers shared by the Python tests of the kernel's RDMA users
(qemu-test/tests/ulp: rds_rdma.py, smc_r.py), on top of testlib: the test
network, libc, the log and fail lines, the start on nodes 1 and 2, the end
of a node's part of the yank and the rdma device's packet counters.

    from ulp_lib import NET, fail, logger, start
    log = logger("rds")
"""
import ctypes
import os
import subprocess
import sys
import time

from testlib import NODE, hw_counters, kmemleak_clear, lossy_link, meet, meet_abort, yank_finish

# The nodes' eth0 network: node N is NET.N.
NET = os.environ.get("RXE_NET4", "10.77.0")

# libc, for the calls Python's socket module does not make.
libc = ctypes.CDLL(None, use_errno=True)


def logger(name):
    """A log(msg) function for the test NAME: it prints
    "[SECONDS] NAME(nodeN): MSG" on stdout (SECONDS of the monotonic
    clock)."""

    def log(msg):
        print(f"[{time.monotonic():.2f}] {name}(node{NODE}): {msg}", flush=True)

    return log


def fail(msg):
    """Prints "FAIL (nodeN): MSG" on stderr, marks this node failed for the
    other nodes' meet (meet_abort) and ends the process with status 1 at
    once, from any of its threads (os._exit, after flushing stdout)."""
    sys.stdout.flush()
    print(f"FAIL (node{NODE}): {msg}", file=sys.stderr, flush=True)
    meet_abort(msg)
    os._exit(1)


def start(modules):
    """The start of the test on nodes 1 and 2: forgets the leaks kmemleak
    suspects so far (kmemleak_clear), makes eth0 lossy when the script has
    the argument "lossy" (lossy_link), and loads MODULES with modprobe (an
    exception if one fails)."""
    kmemleak_clear()
    if "lossy" in sys.argv[1:]:
        lossy_link()
    for module in modules:
        subprocess.run(["modprobe", module], check=True)


def yank_done(proc):
    """Waits for this node's half of the yank, PROC from testlib.yank_start,
    failing the test if the device removal failed; then meets the other
    nodes at "yank-done"."""
    if not yank_finish(proc):
        fail("yank: the device removal failed")
    meet("yank-done")


def packets():
    """This node's rdma device's packet counters, {"sent_pkts": N,
    "rcvd_pkts": N} (testlib.hw_counters)."""
    return hw_counters(["sent_pkts", "rcvd_pkts"])


def packets_since(before):
    """How much each counter of packets() grew since BEFORE, an earlier
    packets()."""
    now = packets()
    return {k: now[k] - before[k] for k in now}
