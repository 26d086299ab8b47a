#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
"""AH verbs, UD QPs sending through AHs, and multicast attach/detach,
through pyverbs (and raw libibverbs where pyverbs is too kind), checked
against rdma_rxe's behaviour.

In a qemu-test guest (one node is enough):

    qemu-test/run --nodes 1 --drivers rs qemu-test/tests/verbs/verbs_ah.py
    qemu-test/run --nodes 1 --drivers c  qemu-test/tests/verbs/verbs_ah.py [quick]

Prints one line per check and "N passed, N failed" at the end; exits
non-zero on any failure. On the debug kernel kmemleak must find nothing
afterwards. "quick" leaves out the device-wide group limit (8192 groups, about a minute on the debug kernel: the netdev
reprograms its filter on every join). RXE_DRIVER=c accepts that rdma_rxe
keeps a group's Ethernet address after the group is gone.
"""

import ctypes
import errno
import sys
import time

from pyverbs.addr import AH, AHAttr, GID, GlobalRoute
from pyverbs.cq import CQ
from pyverbs.device import Context
from pyverbs.pd import PD
from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr
from pyverbs.wr import SendWR, SGE
import pyverbs.enums as e

from testlib import (DEV, DRIVER, V4_MAPPED, IbvCap, IbvInitAttr, Libibverbs, check, expect, first_gids,
                     kmemleak_clean, kmemleak_clear, name_of, outcome, summary)

UD, RC = e.IBV_QPT_UD, e.IBV_QPT_RC

# rdma_rxe's multicast limits (rxe_param.h).
MAX_MCAST_QP_ATTACH = 56
MAX_MCAST_GRP = 8192


def mgid(n):
    """ff0e::<n>, a global-scope IPv6 multicast GID."""
    return GID(f"ff0e:0000:0000:0000:0000:0000:{(n >> 16) & 0xffff:04x}:{n & 0xffff:04x}")


def mcast_mac(n):
    """The Ethernet address rxe joins for mgid(n): 33:33 and the last 4 bytes."""
    return f"3333{n & 0xffffffff:08x}"


def joined_macs(ifname):
    macs = set()
    with open("/proc/net/dev_mcast") as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 5 and parts[1] == ifname:
                macs.add(parts[4])
    return macs


class Env:
    def __init__(self, dev):
        self.dev = dev
        self.driver = DRIVER or "rs"
        self.ctx = Context(name=dev)
        self.pd = PD(self.ctx)
        self.cq = CQ(self.ctx, 256)
        with open(f"/sys/class/infiniband/{dev}/parent") as f:
            self.ifname = f.read().strip()
        gids = first_gids(self.ctx, [V4_MAPPED, "fd77:"])
        self.v4, self.v6 = gids.get(V4_MAPPED), gids.get("fd77:")
        if self.v4 is None or self.v6 is None:
            raise RuntimeError("need the node's IPv4 and IPv6 GIDs")

    def close(self):
        self.cq.close()
        self.pd.close()
        self.ctx.close()

    def ah_attr(self, gid, sgid_index, port=1, is_global=1, **kw):
        gr = GlobalRoute(dgid=gid, sgid_index=sgid_index, hop_limit=kw.pop("hop_limit", 64), **kw)
        return AHAttr(gr=gr, is_global=is_global, port_num=port)

    def ud_qp(self):
        cap = QPCap(max_send_wr=16, max_recv_wr=16, max_send_sge=1, max_recv_sge=1)
        return QP(self.pd, QPInitAttr(qp_type=UD, scq=self.cq, rcq=self.cq, cap=cap))

    def rc_qp(self):
        cap = QPCap(max_send_wr=4, max_recv_wr=4, max_send_sge=1, max_recv_sge=1)
        return QP(self.pd, QPInitAttr(qp_type=RC, scq=self.cq, rcq=self.cq, cap=cap))


def ud_to_rts(qp):
    a = QPAttr(qp_state=e.IBV_QPS_INIT)
    a.pkey_index, a.port_num, a.qkey = 0, 1, 0x11111111
    qp.modify(a, e.IBV_QP_STATE | e.IBV_QP_PKEY_INDEX | e.IBV_QP_PORT | e.IBV_QP_QKEY)
    qp.modify(QPAttr(qp_state=e.IBV_QPS_RTR), e.IBV_QP_STATE)
    a = QPAttr(qp_state=e.IBV_QPS_RTS)
    a.sq_psn = 0
    qp.modify(a, e.IBV_QP_STATE | e.IBV_QP_SQ_PSN)


def test_ah(env):
    i4, g4 = env.v4
    i6, g6 = env.v6
    ah = expect("ah ipv4", lambda: AH(env.pd, attr=env.ah_attr(g4, i4)), "ok")
    if ah:
        ah.close()
    ah = expect("ah ipv6", lambda: AH(env.pd, attr=env.ah_attr(g6, i6, flow_label=0x12345, traffic_class=0x20)),
                "ok")
    if ah:
        ah.close()
    ah = expect("ah multicast dgid", lambda: AH(env.pd, attr=env.ah_attr(mgid(7), i6)), "ok")
    if ah:
        ah.close()
    # The core finds no GID at that index.
    expect("ah empty sgid index", lambda: AH(env.pd, attr=env.ah_attr(g4, 200)), "ENODATA")
    expect("ah bad port", lambda: AH(env.pd, attr=env.ah_attr(g4, i4, port=2)), "EINVAL")
    expect("ah without grh", lambda: AH(env.pd, attr=env.ah_attr(g4, i4, is_global=0)), "EINVAL")

    # Many AHs at once, then all gone; numbers are distinct.
    ahs = []
    t0 = time.time()
    for k in range(500):
        res, ah = outcome(lambda: AH(env.pd, attr=env.ah_attr(g4, i4, hop_limit=1 + k % 200)))
        if ah is None:
            check("500 ahs", False, f"create {k}: {res}")
            break
        ahs.append(ah)
    check("500 ahs live", len(ahs) == 500, f"{len(ahs)}")
    for ah in ahs:
        ah.close()
    print(f"INFO 500 AHs in {time.time() - t0:.1f}s")


def test_ud_send(env):
    i4, g4 = env.v4
    qp = env.ud_qp()
    ah = AH(env.pd, attr=env.ah_attr(g4, i4))
    ud_to_rts(qp)
    wr = SendWR(opcode=e.IBV_WR_SEND, num_sge=1, sg=[SGE(0, 0, 0)])
    wr.set_wr_ud(ah, qp.qp_num, 0x11111111)
    # The doorbell of a UD QP in RTS with an AH of its PD.
    expect("ud post_send through ah", lambda: qp.post_send(wr), "ok")
    # Let a datapath that has one deliver it before the QP goes.
    time.sleep(0.5)
    qp.close()
    ah.close()


class IbvGid(ctypes.Structure):
    _fields_ = [("raw", ctypes.c_uint8 * 16)]


class IbvGlobalRoute(ctypes.Structure):
    _fields_ = [("dgid", IbvGid), ("flow_label", ctypes.c_uint32), ("sgid_index", ctypes.c_uint8),
                ("hop_limit", ctypes.c_uint8), ("traffic_class", ctypes.c_uint8)]


class IbvAhAttr(ctypes.Structure):
    _fields_ = [("grh", IbvGlobalRoute), ("dlid", ctypes.c_uint16), ("sl", ctypes.c_uint8),
                ("src_path_bits", ctypes.c_uint8), ("static_rate", ctypes.c_uint8),
                ("is_global", ctypes.c_uint8), ("port_num", ctypes.c_uint8)]


def gid_struct(gid):
    raw = bytes.fromhex(str(gid.gid).replace(":", ""))
    return IbvGid((ctypes.c_uint8 * 16)(*raw))


class Raw(Libibverbs):
    """Raw libibverbs: this pyverbs has no multicast calls, and it would
    destroy children before their PD."""

    def __init__(self, dev):
        vp = ctypes.c_void_p
        super().__init__(dev, (
            ("ibv_attach_mcast", ctypes.c_int, [vp, ctypes.POINTER(IbvGid), ctypes.c_uint16]),
            ("ibv_detach_mcast", ctypes.c_int, [vp, ctypes.POINTER(IbvGid), ctypes.c_uint16]),
            ("ibv_create_ah", vp, [vp, ctypes.POINTER(IbvAhAttr)]),
            ("ibv_destroy_ah", ctypes.c_int, [vp]),
        ))
        self.pd = self.lib.ibv_alloc_pd(self.ctx)
        self.cq = self.lib.ibv_create_cq(self.ctx, 64, None, None, 0)

    def qp(self, qpt=UD):
        ia = IbvInitAttr(send_cq=self.cq, recv_cq=self.cq, cap=IbvCap(4, 4, 1, 1, 0), qp_type=qpt)
        qp = self.lib.ibv_create_qp(self.pd, ctypes.byref(ia))
        if not qp:
            raise RuntimeError(f"create qp: errno {ctypes.get_errno()}")
        return qp

    def destroy_qp(self, qp):
        return self.lib.ibv_destroy_qp(qp)

    def attach(self, qp, n):
        rc = self.lib.ibv_attach_mcast(qp, ctypes.byref(mgid_struct(n)), 0)
        return "ok" if rc == 0 else name_of(rc)

    def detach(self, qp, n):
        rc = self.lib.ibv_detach_mcast(qp, ctypes.byref(mgid_struct(n)), 0)
        return "ok" if rc == 0 else name_of(rc)

    def close(self):
        self.lib.ibv_destroy_cq(self.cq)
        self.lib.ibv_dealloc_pd(self.pd)
        super().close()


def left_check(env, name, cond):
    """rdma_rxe never leaves the Ethernet address of a group it tears down
    on the last detach (only a failed first attach does); rxe_rs does."""
    if env.driver == "c":
        print(f"INFO {name}: {cond} (rdma_rxe keeps the address)")
    else:
        check(name, cond)


def mgid_struct(n):
    return gid_struct(mgid(n))


def test_attach_detach(env, raw):
    qp1, qp2 = raw.qp(), raw.qp()
    g = 0x11234
    mac = mcast_mac(g)
    check("attach", raw.attach(qp1, g) == "ok")
    check("mac joined", mac in joined_macs(env.ifname), f"{mac} not in {sorted(joined_macs(env.ifname))}")
    check("attach again", raw.attach(qp1, g) == "ok")
    check("attach second qp", raw.attach(qp2, g) == "ok")
    check("detach first", raw.detach(qp1, g) == "ok")
    check("mac kept while a qp is attached", mac in joined_macs(env.ifname))
    res = raw.detach(qp1, g)
    check("detach first again", res == "EINVAL", res)
    check("detach second", raw.detach(qp2, g) == "ok")
    left_check(env, "mac left with the group", mac not in joined_macs(env.ifname))
    res = raw.detach(qp2, 0x999)
    check("detach from no group", res == "EINVAL", res)
    i4, g4 = env.v4
    rc = raw.lib.ibv_attach_mcast(qp1, ctypes.byref(gid_struct(g4)), 0)
    check("attach unicast gid", rc == errno.EINVAL, name_of(rc))
    rcqp = raw.qp(RC)
    res = raw.attach(rcqp, g)
    check("attach rc qp", res == "EINVAL", res)
    raw.destroy_qp(rcqp)

    # User space must detach before it destroys (the core says EBUSY).
    check("attach before destroy", raw.attach(qp1, 0x2222) == "ok")
    rc = raw.destroy_qp(qp1)
    check("destroy attached qp", rc == errno.EBUSY, name_of(rc))
    check("detach then destroy", raw.detach(qp1, 0x2222) == "ok" and raw.destroy_qp(qp1) == 0)
    left_check(env, "group gone with its qp", mcast_mac(0x2222) not in joined_macs(env.ifname))
    check("group usable again", raw.attach(qp2, 0x2222) == "ok")
    check("and left again", raw.detach(qp2, 0x2222) == "ok")
    raw.destroy_qp(qp2)


def test_per_group_limit(env, raw):
    qps = [raw.qp() for _ in range(MAX_MCAST_QP_ATTACH + 1)]
    g = 0x3333
    ok = sum(raw.attach(qp, g) == "ok" for qp in qps[:MAX_MCAST_QP_ATTACH])
    check(f"{MAX_MCAST_QP_ATTACH} qps in one group", ok == MAX_MCAST_QP_ATTACH, f"{ok}")
    res = raw.attach(qps[-1], g)
    check(f"qp {MAX_MCAST_QP_ATTACH + 1} in one group", res == "ENOMEM", res)
    check("room again after a detach", raw.detach(qps[0], g) == "ok" and raw.attach(qps[-1], g) == "ok")
    detached = sum(raw.detach(qp, g) == "ok" for qp in qps[1:])
    check("detach all", detached == MAX_MCAST_QP_ATTACH, f"{detached}")
    for qp in qps:
        raw.destroy_qp(qp)
    left_check(env, "group gone with its qps", mcast_mac(g) not in joined_macs(env.ifname))


def test_group_limit(env, raw):
    qp = raw.qp()
    t0 = time.time()
    ok = 0
    last = ""
    for n in range(MAX_MCAST_GRP):
        res = raw.attach(qp, 0x100000 + n)
        if res != "ok":
            last = f"group {n}: {res}"
            break
        ok += 1
    check(f"{MAX_MCAST_GRP} groups", ok == MAX_MCAST_GRP, last)
    res = raw.attach(qp, 0x100000 + MAX_MCAST_GRP)
    check(f"group {MAX_MCAST_GRP + 1}", res == "ENOMEM", res)
    detached = sum(raw.detach(qp, 0x100000 + n) == "ok" for n in range(ok))
    check("detach from all groups", detached == ok, f"{detached}")
    check("destroy after detach", raw.destroy_qp(qp) == 0)
    left_check(env, "all groups gone", not any(m.startswith("33330010") for m in joined_macs(env.ifname)))
    print(f"INFO {MAX_MCAST_GRP} groups in {time.time() - t0:.1f}s")


def test_pd_busy(env, raw):
    """Dealloc of a PD with a live AH is refused by the core."""
    lib = raw.lib
    pd = lib.ibv_alloc_pd(raw.ctx)
    i4, g4 = env.v4
    attr = IbvAhAttr(grh=IbvGlobalRoute(dgid=gid_struct(g4), sgid_index=i4, hop_limit=64),
                     is_global=1, port_num=1)
    ah = lib.ibv_create_ah(pd, ctypes.byref(attr))
    check("raw create ah", bool(ah), f"errno {ctypes.get_errno()}")
    if ah:
        rc = lib.ibv_dealloc_pd(pd)
        check("dealloc pd with live ah", rc == errno.EBUSY, f"got {name_of(rc)}")
        check("destroy ah", lib.ibv_destroy_ah(ah) == 0)
    check("dealloc pd after ah", lib.ibv_dealloc_pd(pd) == 0)


def main():
    # "quick" leaves out the device-wide group limit (8192 groups).
    quick = len(sys.argv) > 1 and sys.argv[1] == "quick"
    kmemleak_clear()
    env = Env(DEV)
    print(f"device {env.dev} on {env.ifname}; IPv4 GID {env.v4[0]}, IPv6 GID {env.v6[0]}")
    test_ah(env)
    test_ud_send(env)
    raw = Raw(env.dev)
    test_pd_busy(env, raw)
    test_attach_detach(env, raw)
    test_per_group_limit(env, raw)
    if not quick:
        test_group_limit(env, raw)
    raw.close()
    env.close()
    check("kmemleak reports nothing", kmemleak_clean())
    return summary("verbs_ah")


if __name__ == "__main__":
    sys.exit(main())
