#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
"""Module unload while the network stack still holds packets of the
driver, from the hardening issue: their destructor is module code, so
`rmmod` must wait for them.

The packets are held by a neighbour entry waiting for its address: an RC
QP is connected towards an address nobody answers (the core resolves the
path's MAC from a static entry, which is then deleted), and its SENDs
queue on the new, unresolved entry for ~24 s (6 ARP probes) before
the stack frees them. Meanwhile the QP is destroyed, rxe0 deleted and the
module removed: rmmod must not return before the neighbour gave up.
rxe_rs waits in module exit until the last one is freed; without the
wait their destructor ran in freed module memory (an oops in the ARP
timer). A netem delay does not keep them: netem orphans every
packet it delays, which runs the destructor at once.

rdma_rxe 6.12 has no such wait (rxe_module_exit), so this is skipped on
`c` nodes. It unloads the driver: run it last in a boot.

    qemu-test/run --debug --nodes 1 --drivers rs qemu-test/tests/hardening/hardening_unload.py
"""
import ipaddress
import subprocess
import sys
import time

from pyverbs.cq import CQ
from pyverbs.device import Context
from pyverbs.mr import MR
from pyverbs.pd import PD
from pyverbs.wr import SendWR, SGE
import pyverbs.enums as e

import rc_lib as rl
from testlib import DEV, DRIVER, NODE_IP, check, dmesg, kernel_problems, sh, summary

MODULE = "rdma_rxe_rs"
RETRANS = "/proc/sys/net/ipv4/neigh/eth0/retrans_time_ms"


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
    node_ip = NODE_IP
    ghost = node_ip.rsplit(".", 1)[0] + ".99"
    ctx = Context(name=DEV)
    gidx, gid = rl.gid_index(node_ip)
    # Six probes 4 s apart: the packets stay queued ~24 s, well past the
    # link delete even on a loaded host, where the debug kernel's link
    # delete alone has taken 6 s (rmmod then waits for the rest).
    with open(RETRANS, "w") as f:
        f.write("4000")
    sh(f"ip neigh replace {ghost} lladdr 02:00:00:00:00:99 dev eth0 nud permanent")
    pd = PD(ctx)
    cq = CQ(ctx, 64)
    mr = MR(pd, 4096, e.IBV_ACCESS_LOCAL_WRITE)
    qp = rl.make_qp(pd, cq, cq, wr=16, sge=1, inline=0)
    dgid = ipaddress.IPv6Address("::ffff:" + ghost).exploded
    rl.connect(qp, 0, gidx, dgid, 17, 0, 0, timeout=20, retry=1)
    r = sh(f"ip neigh del {ghost} dev eth0")
    check("ip neigh del", r.returncode == 0, r.stderr.strip())
    if r.returncode:
        return summary("hardening_unload")
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
    check(f"rdma link delete {DEV}", r.returncode == 0, r.stderr.strip())
    if r.returncode:
        return summary("hardening_unload")
    before = neigh_state(ghost)
    r = sh(f"rmmod {MODULE}")
    took = time.time() - t0
    check(f"rmmod {MODULE}", r.returncode == 0, r.stderr.strip())
    if r.returncode:
        return summary("hardening_unload")
    after = neigh_state(ghost)
    print(f"  link delete and rmmod took {took:.1f}s; neighbour {before} before rmmod, {after} after")
    check("packets were queued on the neighbour during the unload", before == "INCOMPLETE",
          f"the neighbour was {before} before rmmod, not INCOMPLETE")
    # The neighbour frees what it queued when it gives up: with a module
    # that did not wait for its packets, that is when it oopses. (Packets
    # the IP layer had to copy for want of link-header room are no longer
    # the module's: rmmod need not wait for those.)
    deadline = time.time() + 40
    while neigh_state(ghost) == "INCOMPLETE" and time.time() < deadline:
        time.sleep(0.5)
    waited = [line for line in dmesg() if "waiting for" in line and "packets" in line]
    print("  " + (waited[-1] if waited else "(no wait reported)"))
    problems = kernel_problems()
    check("unload with packets queued on an unresolved neighbour: no kernel report", not problems,
          "; ".join(problems[:3]))
    return summary("hardening_unload")


if __name__ == "__main__":
    sys.exit(main())
