#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
"""Module unload while the network stack still holds packets of the
driver, from the hardening issue: their destructor is module code, so
`rmmod` must wait for them.

The packets are held by a neighbour entry waiting for its address: an RC
QP is connected towards an address nobody answers (the core resolves the
path's MAC from a static entry, which is then deleted), and its SENDs
queue on the new, unresolved entry for ~9 s (6 ARP probes) before
the stack frees them. Meanwhile the QP is destroyed, rxe0 deleted and the
module removed: rmmod must not return before the neighbour gave up.
rxe_rs waits in module exit until the last one is freed; without the
wait their destructor ran in freed module memory (an oops in the ARP
timer). A netem delay does not keep them: netem orphans every
packet it delays, which runs the destructor at once.

rdma_rxe 6.12 has no such wait (rxe_module_exit), so this is skipped on
`c` nodes. It unloads the driver: run it last in a boot.

    qemu-test/run --debug --nodes 1 --drivers rs qemu-test/tests/hardening_unload.py
"""
import ipaddress
import os
import subprocess
import sys
import time

from pyverbs.cq import CQ
from pyverbs.device import Context
from pyverbs.mr import MR
from pyverbs.pd import PD
from pyverbs.wr import SendWR, SGE
import pyverbs.enums as e

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rc_lib as rl  # noqa: E402

DEV = rl.DEV
DRIVER = rl.DRIVER
MODULE = "rdma_rxe_rs"
RETRANS = "/proc/sys/net/ipv4/neigh/eth0/retrans_time_ms"


def sh(cmd):
    print(f"+ {cmd}")
    sys.stdout.flush()
    return subprocess.run(cmd, shell=True, capture_output=True, text=True)


def dmesg():
    return subprocess.run(["dmesg"], capture_output=True, text=True).stdout.splitlines()


def kernel_problems():
    keys = ("WARNING:", "BUG:", "Oops", "KASAN", "general protection")
    return [line for line in dmesg() if any(k in line for k in keys)]


def neigh_state(ip):
    out = subprocess.run(["ip", "neigh", "show", ip], capture_output=True, text=True).stdout.split()
    return out[-1] if out else "none"


def main():
    with open(RETRANS) as f:
        retrans = f.read().strip()
    try:
        return unload_test()
    finally:
        with open(RETRANS, "w") as f:
            f.write(retrans)


def unload_test():
    if DRIVER == "c":
        print("SKIP unload with queued packets: rdma_rxe 6.12 does not wait for them")
        return 0
    node_ip = os.environ.get("NODE_IP", "")
    ghost = node_ip.rsplit(".", 1)[0] + ".99"
    ctx = Context(name=DEV)
    gidx, gid = rl.gid_index(node_ip)
    # Six probes 1.5 s apart: the packets stay queued ~9 s, well past the
    # link delete (rmmod then waits for the rest).
    with open(RETRANS, "w") as f:
        f.write("1500")
    sh(f"ip neigh replace {ghost} lladdr 02:00:00:00:00:99 dev eth0 nud permanent")
    pd = PD(ctx)
    cq = CQ(ctx, 64)
    mr = MR(pd, 4096, e.IBV_ACCESS_LOCAL_WRITE)
    qp = rl.make_qp(pd, cq, cq, wr=16, sge=1, inline=0)
    dgid = ipaddress.IPv6Address("::ffff:" + ghost).exploded
    rl.connect(qp, 0, gidx, dgid, 17, 0, 0, timeout=20, retry=1)
    r = sh(f"ip neigh del {ghost} dev eth0")
    if r.returncode:
        print(f"FAIL ip neigh del: {r.stderr.strip()}")
        return 1
    for i in range(8):
        qp.post_send(SendWR(wr_id=i, opcode=e.IBV_WR_SEND, num_sge=1, sg=[SGE(mr.buf, 64, mr.lkey)]))
    time.sleep(0.3)
    print(f"  neighbour {neigh_state(ghost)}")
    qp.close()
    mr.close()
    cq.close()
    pd.close()
    ctx.close()
    t0 = time.time()
    r = sh(f"rdma link delete {DEV}")
    if r.returncode:
        print(f"FAIL rdma link delete: {r.stderr.strip()}")
        return 1
    before = neigh_state(ghost)
    r = sh(f"rmmod {MODULE}")
    took = time.time() - t0
    if r.returncode:
        print(f"FAIL rmmod: {r.stderr.strip()}")
        return 1
    after = neigh_state(ghost)
    print(f"  link delete and rmmod took {took:.1f}s; neighbour {before} before rmmod, {after} after")
    ok = True
    if before != "INCOMPLETE":
        print("FAIL the neighbour gave up before rmmod: nothing was queued during the unload")
        ok = False
    # The neighbour frees what it queued when it gives up: with a module
    # that did not wait for its packets, that is when it oopses. (Packets
    # the IP layer had to copy for want of link-header room are no longer
    # the module's: rmmod need not wait for those.)
    deadline = time.time() + 15
    while neigh_state(ghost) == "INCOMPLETE" and time.time() < deadline:
        time.sleep(0.5)
    waited = [line for line in dmesg() if "waiting for" in line and "packets" in line]
    print("  " + (waited[-1] if waited else "(no wait reported)"))
    problems = kernel_problems()
    if problems:
        print("FAIL kernel report after unload: " + "; ".join(problems[:3]))
        ok = False
    if ok:
        print("PASS unload with packets queued on an unresolved neighbour")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
