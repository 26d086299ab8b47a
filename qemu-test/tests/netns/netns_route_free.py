#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
"""QPs that cached a route of a namespace, alive after that namespace is freed.

    qemu-test/run --debug --nodes 1 --drivers rs qemu-test/tests/netns/netns_route_free.py

An IPv6 route points into its namespace (its `dst_ops`, which the route's
check, release and destroy read) and holds no reference on it, so a route
kept past the namespace's end is a use-after-free at its next use. The
RDMA core holds the netdev of a QP's or an AH's source GID, which holds the
namespace's teardown back; so the QPs here stop using the namespace's GID
first, and keep only the route they cached from it:

1. The rxe device is on eth0, in the initial namespace; a VLAN of eth0
   (eth0.10) is moved into namespace nsF and given two IPv6 addresses
   there (fd11::1, fd11::2), which become GIDs of the device. Over them:
   three UD QPs send a datagram each through an address handle, which is
   then destroyed; an RC pair runs SENDs both ways, then both QPs go
   through RESET and connect again over the GIDs of eth0's own addresses
   in the initial namespace (the core lets go of the nsF GIDs, the
   requesters keep their nsF routes).
2. `ip netns del nsF`, then the test makes sure the namespace's memory is
   freed. A namespace's cleanup leaves its `struct net` to the next
   cleanup to free, so the test makes and drops scratch namespaces
   (`unshare -n true`) until the `net_namespace` slab, shrunk each time
   (under KASAN that frees what the quarantine holds of it), is back to
   the count it settled at before nsF was made.
3. Each QP then uses or drops its route of nsF, one step at a time, with
   the kernel log checked after each: the first UD QP sends over eth0's
   GID (its cached route is replaced), the RC pair sends both ways over
   its new path, the second UD QP is destroyed with its route; the third
   sends over nsF's GID index once nsF is made again (same ifindex, same
   addresses), so its cached route is checked for validity first.

A driver that keeps such a route reads freed memory at each of these
steps; KASAN on the debug kernel reports it and the harness fails the
boot. The test passes when no step makes a report, every send completes,
and nothing leaks (kmemleak). Only IPv6 is used: an IPv4 route's
`dst_ops` are global, so a kept IPv4 route refers to nothing of the
namespace once its device has been moved off.

On c nodes: rdma_rxe 7.3 keeps an RC QP's route in the QP's socket across
RESET and a new path, and its next packet calls through the freed
namespace's `dst_ops` (Debian's kernel has no KASAN: run it with
RXE_RS_GUEST_CMDLINE="slub_debug=P,net_namespace" so that the freed
memory is poisoned and the call faults). rdma_rxe 6.12 looks every route
up in the initial namespace, so its sends over nsF's GIDs are not
delivered and it never holds a route of nsF.
"""

import os
import subprocess
import sys
import time

from pyverbs.addr import AH
from pyverbs.device import Context
from pyverbs.pd import PD
import pyverbs.enums as e

from netns_lib import (GRH, MSG, RC, RESET, UD, Side, ah_attr, gid_index, gid_of, log,
                       modify, ok, poll, rc_connect, run, ud_connect, wait_for)
from testlib import (DEV, NODE_IP, NODE_IP6, check, kernel_problems, kmemleak_clean,
                     kmemleak_clear, summary)

NS = "nsF"
VLAN = "eth0.10"
IFINDEX = 10
NS_ADDRS = ("fd11::1", "fd11::2")
SLAB = "/sys/kernel/slab/net_namespace"


def make_ns():
    """nsF with eth0.10 and its two addresses; {ip: GID index} once both
    are in the GID table."""
    run(f"ip netns add {NS}")
    run(f"ip link add link eth0 name {VLAN} index {IFINDEX} type vlan id 10")
    run(f"ip link set {VLAN} netns {NS}")
    run(f"ip -n {NS} link set lo up")
    for ip in NS_ADDRS:
        run(f"ip -n {NS} addr add {ip}/64 dev {VLAN} nodad")
    run(f"ip -n {NS} link set {VLAN} up")
    wait_for("the GIDs of nsF", lambda: all(gid_index(ip) is not None for ip in NS_ADDRS))
    return {ip: gid_index(ip) for ip in NS_ADDRS}


def net_objects():
    """Objects of the slab cache struct net comes from, after a shrink
    (under KASAN, the shrink frees what the quarantine holds of it)."""
    try:
        with open(f"{SLAB}/shrink", "w") as f:
            f.write("1")
    except OSError:
        pass
    with open(f"{SLAB}/objects") as f:
        return int(f.read().split()[0])


def scratch_cycles(until, limit=90.0):
    """Makes and drops namespaces (each a new cleanup of namespaces, which
    frees the struct nets the cleanup before it left) until until(count of
    net_namespace objects) holds; the last count, and whether it held."""
    deadline = time.monotonic() + limit
    n = net_objects()
    while time.monotonic() < deadline:
        subprocess.run(["unshare", "-n", "true"], check=True)
        time.sleep(2)
        n = net_objects()
        if until(n):
            return n, True
    return n, False


def settled_count():
    """The count of net_namespace objects once nothing but live namespaces
    and the last scratch one (whose struct net waits for the next cleanup)
    holds any: two scratch cycles in a row leave the same count."""
    last = [None]

    def same(n):
        done = n == last[0]
        last[0] = n
        return done

    n, _ = scratch_cycles(same, 60.0)
    return n


def ud_send(pd, u, sink, sgid, dgid_str):
    """One datagram from u to sink; whether both ends completed it."""
    sink.recv(MSG + GRH)
    ah = AH(pd, attr=ah_attr(sgid, dgid_str))
    u.send(ah, sink.qp.qp_num)
    good = ok(poll(u.cq, 1), 1) and ok(poll(sink.cq, 1), 1)
    ah.close()
    return good


def rc_both_ways(a, b):
    b.recv()
    a.recv()
    a.send()
    b.send()
    return ok(poll(a.cq, 2), 2) and ok(poll(b.cq, 2), 2)


def no_report(step):
    # A route's last release frees it after an RCU grace period.
    time.sleep(1)
    problems = kernel_problems()
    check(f"no kernel report: {step}", not problems, "; ".join(problems[:3]))


def main():
    subprocess.run(f"ip netns del {NS} 2>/dev/null", shell=True)
    if not os.path.exists(SLAB):
        print(f"SKIP {SLAB} is missing (the kernel has no SLUB_DEBUG)")
        return summary("netns_route_free")
    kmemleak_clear()
    home = {ip: gid_index(ip) for ip in (NODE_IP6, NODE_IP)}
    check("eth0's GIDs found", all(i is not None for i in home.values()), f"{home}")
    base = settled_count()
    gids = make_ns()
    log("GIDs of nsF:", gids, "of eth0:", home, "net_namespace objects", base)
    s_ip, d_ip = NS_ADDRS
    ctx = Context(name=DEV)
    pd = PD(ctx)

    log("1. UD QPs and an RC pair cache routes of", NS)
    sink = Side(ctx, pd, UD)
    ud_connect(sink.qp)
    uds = []
    for i in range(3):
        u = Side(ctx, pd, UD)
        ud_connect(u.qp)
        check(f"UD {i}: datagram over nsF delivered",
              ud_send(pd, u, sink, gids[s_ip], gid_of(d_ip)))
        uds.append(u)
    a, b = Side(ctx, pd, RC), Side(ctx, pd, RC)
    rc_connect(a.qp, gids[s_ip], gid_of(d_ip), b.qp.qp_num, min_rnr_timer=1)
    rc_connect(b.qp, gids[d_ip], gid_of(s_ip), a.qp.qp_num, min_rnr_timer=1)
    check("RC over nsF: SENDs both ways", rc_both_ways(a, b))
    for q in (a, b):
        modify(q.qp, RESET, e.IBV_QP_STATE)
    rc_connect(a.qp, home[NODE_IP6], gid_of(NODE_IP6), b.qp.qp_num, min_rnr_timer=1)
    rc_connect(b.qp, home[NODE_IP6], gid_of(NODE_IP6), a.qp.qp_num, min_rnr_timer=1)

    log("2. the namespace goes and its memory is freed")
    run(f"ip netns del {NS}")
    wait_for("the GIDs of nsF to go", lambda: all(gid_index(ip) is None for ip in NS_ADDRS))
    # Its cleanup defers the free of its struct net to the next cleanup:
    # scratch namespaces make more cleanups until the count is back to
    # what it was before nsF (the last scratch namespace's object).
    n, freed = scratch_cycles(lambda n: n <= base)
    log(f"net_namespace objects {n} (before nsF: {base})")
    check("nsF's struct net is freed while the QPs live", freed,
          f"{n} objects, {base} before nsF")
    no_report("nsF deleted")

    log("3. each QP uses or drops its route of nsF")
    check("UD 0: datagram over eth0 delivered",
          ud_send(pd, uds[0], sink, home[NODE_IP6], gid_of(NODE_IP6)))
    no_report("UD 0's route of nsF replaced")
    check("RC over eth0 after RESET: SENDs both ways", rc_both_ways(a, b))
    no_report("the RC pair's routes of nsF replaced")
    uds[1].close()
    time.sleep(1)
    no_report("UD 1 destroyed with its route of nsF")
    again = make_ns()
    check("nsF again: the same GID indices", again == gids, f"{again} != {gids}")
    check("UD 2: datagram over the new nsF delivered",
          ud_send(pd, uds[2], sink, again[s_ip], gid_of(d_ip)))
    no_report("UD 2's route of the old nsF checked")

    for q in (a, b, uds[0], uds[2], sink):
        q.close()
    pd.close()
    ctx.close()
    run(f"ip netns del {NS}")
    wait_for("the GIDs of nsF to go", lambda: all(gid_index(ip) is None for ip in NS_ADDRS))
    time.sleep(5)
    no_report("the QPs destroyed, nsF deleted")
    check("kmemleak: nothing leaked", kmemleak_clean())
    return summary("netns_route_free")


if __name__ == "__main__":
    sys.exit(main())
