#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
"""Routes of QPs that send from the GIDs of a namespace that goes away.

    qemu-test/run --debug --nodes 1 --drivers rs qemu-test/tests/netns/netns_routes.py

The rxe device is on eth0, in the initial namespace; a VLAN of eth0
(eth0.10, ifindex 10) is moved into namespace nsR and given two IPv6 and
two IPv4 addresses there, which become GIDs of the device. This process
stays in the initial namespace (so it does not hold nsR) and, over those
GIDs, which route inside nsR (all four addresses are local there):

1. connects two RC QP pairs (IPv6 and IPv4), runs SENDs both ways, then
   leaves one SEND of each requester retrying on RNR (no receive posted),
   so that the requester and the responder (its RNR NAKs) both cache a
   route of nsR; two UD QPs send a datagram over each family through an
   address handle, which is then destroyed (the UD QPs keep their routes).
2. `ip netns del nsR`. The retrying requesters meet the missing GID and
   complete their SEND in error; the RC QPs are destroyed. The RDMA core
   holds the netdev of a GID for as long as a QP's path or an AH uses the
   GID, so the namespace's teardown waits for these QPs; once they are
   gone nothing holds it, and the test waits some seconds for the
   namespace to be freed.
3. Makes nsR again the same way (same VLAN ifindex, same addresses, so
   the same GID indices): the UD QPs, alive throughout, send over the same
   path again and must be delivered.

A route held past its namespace's end (an IPv6 route's `dst_ops` live in
the namespace) would be a use-after-free at the UD QPs' reuse of the path
(the cached route's validity check) or at their destroy, which KASAN on
the debug kernel reports and the harness fails the boot on. This test
does not show it for a driver that keeps such routes: the cleanup of a
namespace leaves the free of its `struct net` to the next cleanup, which
here comes only with the last `ip netns del`, after the UD QPs are gone.
netns_route_free.py makes that free happen while the QPs live. Also
checked: nothing leaks (kmemleak).
"""

import subprocess
import sys
import time

from pyverbs.addr import AH
from pyverbs.device import Context
from pyverbs.pd import PD
import pyverbs.enums as e

from netns_lib import (GRH, MSG, RC, UD, Side, ah_attr, gid_index, gid_of, log, ok, poll,
                       rc_connect, run, ud_connect, wait_for)
from testlib import (DEV, check, kernel_problems, kmemleak_clean, kmemleak_clear,
                     summary)

NS = "nsR"
VLAN = "eth0.10"
IFINDEX = 10
ADDRS = {6: ("fd10::1", "fd10::2"), 4: ("10.110.0.1", "10.110.0.2")}


def make_ns():
    """nsR with eth0.10 (created here, then moved) and the four addresses;
    returns {ip: GID index} once all four are in the GID table."""
    run(f"ip netns add {NS}")
    run(f"ip link add link eth0 name {VLAN} index {IFINDEX} type vlan id 10")
    run(f"ip link set {VLAN} netns {NS}")
    run(f"ip -n {NS} link set lo up")
    for fam in (6, 4):
        for ip in ADDRS[fam]:
            plen = 64 if fam == 6 else 24
            extra = " nodad" if fam == 6 else ""
            run(f"ip -n {NS} addr add {ip}/{plen} dev {VLAN}{extra}")
    run(f"ip -n {NS} link set {VLAN} up")
    ips = [ip for fam in (6, 4) for ip in ADDRS[fam]]
    wait_for("the GIDs of nsR", lambda: all(gid_index(ip) is not None for ip in ips))
    return {ip: gid_index(ip) for ip in ips}


def del_ns():
    """Deletes nsR; returns once its GIDs are gone."""
    run(f"ip netns del {NS}")
    ips = [ip for fam in (6, 4) for ip in ADDRS[fam]]
    wait_for("the GIDs of nsR to go", lambda: all(gid_index(ip) is None for ip in ips))


def settle_ns():
    """Waits for the end of a deleted namespace that nothing holds any more:
    its devices' unregistration, its exit handlers, an RCU barrier, then
    its memory is freed (seconds on a debug guest)."""
    time.sleep(10)


def main():
    subprocess.run(f"ip netns del {NS} 2>/dev/null", shell=True)
    kmemleak_clear()
    gids = make_ns()
    log("GIDs:", gids)
    ctx = Context(name=DEV)
    pd = PD(ctx)

    log("1. RC pairs and UD QPs over the GIDs of", NS)
    rc = {}
    for fam in (6, 4):
        a_ip, b_ip = ADDRS[fam]
        a, b = Side(ctx, pd, RC), Side(ctx, pd, RC)
        rc_connect(a.qp, gids[a_ip], gid_of(b_ip), b.qp.qp_num)
        rc_connect(b.qp, gids[b_ip], gid_of(a_ip), a.qp.qp_num)
        b.recv()
        a.recv()
        a.send()
        b.send()
        check(f"IPv{fam} RC: SENDs both ways", ok(poll(a.cq, 2), 2) and ok(poll(b.cq, 2), 2))
        # No receive posted at b: a's SEND is NAKed (RNR) and retried.
        a.send()
        rc[fam] = (a, b)
    ud = {}
    for fam in (6, 4):
        a_ip, b_ip = ADDRS[fam]
        u1, u2 = Side(ctx, pd, UD), Side(ctx, pd, UD)
        ud_connect(u1.qp)
        ud_connect(u2.qp)
        u2.recv(MSG + GRH)
        ah = AH(pd, attr=ah_attr(gids[a_ip], gid_of(b_ip)))
        u1.send(ah, u2.qp.qp_num)
        check(f"IPv{fam} UD: datagram delivered", ok(poll(u1.cq, 1), 1) and ok(poll(u2.cq, 1), 1))
        # Nothing but u1's cached route refers to nsR now.
        ah.close()
        ud[fam] = (u1, u2)
    time.sleep(1)
    for fam, (a, _) in rc.items():
        check(f"IPv{fam} RC: SEND without a receive still retrying", not poll(a.cq, 1, 0.1))

    log("2. the namespace goes; the retrying requesters, then destroy")
    del_ns()
    for fam, (a, b) in rc.items():
        wcs = poll(a.cq, 1, 30)
        check(f"IPv{fam} RC: the retried SEND completes in error once its GID is gone",
              len(wcs) == 1 and wcs[0].status != e.IBV_WC_SUCCESS,
              f"{[w.status for w in wcs]}")
        a.close()
        b.close()
    settle_ns()
    problems = kernel_problems()
    check("no kernel report after the RC QPs' destroy", not problems, "; ".join(problems[:3]))

    log("3. the same namespace again: the UD QPs reuse the path")
    again = make_ns()
    check("the same GID indices", again == gids, f"{again} != {gids}")
    for fam, (u1, u2) in ud.items():
        a_ip, b_ip = ADDRS[fam]
        u2.recv(MSG + GRH)
        u1.send(AH(pd, attr=ah_attr(again[a_ip], gid_of(b_ip))), u2.qp.qp_num)
        check(f"IPv{fam} UD: delivered in the new namespace",
              ok(poll(u1.cq, 1), 1) and ok(poll(u2.cq, 1), 1))
    for u1, u2 in ud.values():
        u1.close()
        u2.close()
    pd.close()
    ctx.close()
    del_ns()
    settle_ns()
    problems = kernel_problems()
    check("no kernel report after the UD QPs' reuse and destroy", not problems,
          "; ".join(problems[:3]))
    check("kmemleak: nothing leaked", kmemleak_clean())
    return summary("netns_routes")


if __name__ == "__main__":
    sys.exit(main())
