#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
"""Routes of QPs that send from the GIDs of a namespace that goes away.

    qemu-test/run --debug --nodes 1 --drivers rs qemu-test/tests/netns_routes.py

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

from pyverbs.addr import AH, AHAttr, GID, GlobalRoute
from pyverbs.cq import CQ
from pyverbs.device import Context
from pyverbs.mr import MR
from pyverbs.pd import PD
from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr
from pyverbs.wr import RecvWR, SendWR, SGE
import pyverbs.enums as e

from testlib import (DEV, check, kernel_problems, kmemleak_clean, kmemleak_clear,
                     summary)

NS = "nsR"
VLAN = "eth0.10"
IFINDEX = 10
ADDRS = {6: ("fd10::1", "fd10::2"), 4: ("10.110.0.1", "10.110.0.2")}
QKEY = 0x11111111
MSG = 64
GRH = 40
RC, UD = e.IBV_QPT_RC, e.IBV_QPT_UD
RESET, INIT, RTR, RTS = e.IBV_QPS_RESET, e.IBV_QPS_INIT, e.IBV_QPS_RTR, e.IBV_QPS_RTS


def log(*args):
    print(f"[{time.monotonic():8.2f}]", *args, flush=True)


def run(cmd):
    log("+", cmd)
    r = subprocess.run(cmd, shell=True, capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError(f"{cmd}: {r.stderr.strip()}")
    return r.stdout


def gid_of(ip):
    """The GID string of address ip (IPv4 as v4-mapped)."""
    import ipaddress

    a = ipaddress.ip_address(ip)
    if a.version == 4:
        a = ipaddress.IPv6Address("::ffff:" + ip)
    return a.exploded


def gid_index(ip):
    """The RoCE v2 GID index of ip on the device, or None."""
    base = f"/sys/class/infiniband/{DEV}/ports/1"
    want = gid_of(ip)
    for i in range(32):
        try:
            with open(f"{base}/gids/{i}") as f:
                if f.read().strip() != want:
                    continue
            with open(f"{base}/gid_attrs/types/{i}") as f:
                if f.read().strip() == "RoCE v2":
                    return i
        except OSError:
            continue
    return None


def wait_for(what, cond, limit=60.0):
    deadline = time.monotonic() + limit
    while not cond():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        time.sleep(0.3)


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


def ah_attr(sgid, dgid_str):
    return AHAttr(gr=GlobalRoute(dgid=GID(dgid_str), sgid_index=sgid, hop_limit=64),
                  is_global=1, port_num=1)


def modify(qp, state, mask, **kw):
    a = QPAttr(qp_state=state)
    for k, v in kw.items():
        setattr(a, k, v)
    qp.modify(a, mask)


def rc_connect(qp, sgid, dgid_str, dqpn):
    modify(qp, INIT, e.IBV_QP_STATE | e.IBV_QP_PKEY_INDEX | e.IBV_QP_PORT |
           e.IBV_QP_ACCESS_FLAGS, pkey_index=0, port_num=1,
           qp_access_flags=e.IBV_ACCESS_LOCAL_WRITE)
    a = QPAttr(qp_state=RTR)
    a.path_mtu = e.IBV_MTU_1024
    a.dest_qp_num = dqpn
    a.rq_psn = 0
    a.max_dest_rd_atomic = 1
    # The longest RNR delay (491 ms): a requester without a receive to
    # send to retries slowly, for ever (rnr_retry 7).
    a.min_rnr_timer = 31
    a.ah_attr = ah_attr(sgid, dgid_str)
    qp.modify(a, e.IBV_QP_STATE | e.IBV_QP_AV | e.IBV_QP_PATH_MTU | e.IBV_QP_DEST_QPN |
              e.IBV_QP_RQ_PSN | e.IBV_QP_MAX_DEST_RD_ATOMIC | e.IBV_QP_MIN_RNR_TIMER)
    modify(qp, RTS, e.IBV_QP_STATE | e.IBV_QP_TIMEOUT | e.IBV_QP_RETRY_CNT |
           e.IBV_QP_RNR_RETRY | e.IBV_QP_SQ_PSN | e.IBV_QP_MAX_QP_RD_ATOMIC,
           timeout=14, retry_cnt=7, rnr_retry=7, sq_psn=0, max_rd_atomic=1)


def ud_connect(qp):
    modify(qp, INIT, e.IBV_QP_STATE | e.IBV_QP_PKEY_INDEX | e.IBV_QP_PORT | e.IBV_QP_QKEY,
           pkey_index=0, port_num=1, qkey=QKEY)
    modify(qp, RTR, e.IBV_QP_STATE)
    modify(qp, RTS, e.IBV_QP_STATE | e.IBV_QP_SQ_PSN, sq_psn=0)


def poll(cq, n, limit=30.0):
    wcs = []
    deadline = time.monotonic() + limit
    while len(wcs) < n and time.monotonic() < deadline:
        nc, got = cq.poll(n - len(wcs))
        if nc:
            wcs.extend(got[:nc])
        else:
            time.sleep(0.01)
    return wcs


class Side:
    """A QP with its own CQ and a registered buffer."""

    def __init__(self, ctx, pd, qpt):
        self.cq = CQ(ctx, 64)
        self.mr = MR(pd, 4096, e.IBV_ACCESS_LOCAL_WRITE)
        cap = QPCap(max_send_wr=16, max_recv_wr=16, max_send_sge=1, max_recv_sge=1)
        self.qp = QP(pd, QPInitAttr(qp_type=qpt, scq=self.cq, rcq=self.cq, cap=cap,
                                     sq_sig_all=1))

    def recv(self, n=MSG):
        self.qp.post_recv(RecvWR(num_sge=1, sg=[SGE(self.mr.buf, n, self.mr.lkey)]))

    def send(self, ah=None, rqpn=0):
        wr = SendWR(opcode=e.IBV_WR_SEND, num_sge=1,
                    sg=[SGE(self.mr.buf + 2048, MSG, self.mr.lkey)])
        if ah is not None:
            wr.set_wr_ud(ah, rqpn, QKEY)
        self.qp.post_send(wr)

    def close(self):
        self.qp.close()
        self.mr.close()
        self.cq.close()


def ok(wcs, n):
    return len(wcs) == n and all(w.status == e.IBV_WC_SUCCESS for w in wcs)


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
