#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
"""Work requests the driver must refuse or survive, on each node alone
(QPs in loopback over the node's IPv4 RoCE v2 GID), from the hardening
issue:

- a type 2 window bound to QP A keeps A's last reference once A is
  destroyed; a LOCAL_INV of the window posted on QP B drops it under B's
  requester lock, where nothing may sleep: no "sleeping function called
  from invalid context" (rxe_rs used to release A's sockets there);
- LOCAL_INV and SEND_WITH_INV check the window's PD and, for a type 2
  window, its QP, as the IB specification asks: a LOCAL_INV from a QP of
  another PD, or from another QP of the same PD, completes with
  MW_BIND_ERR and leaves the window bound; a SEND_WITH_INV that reaches a
  QP the window is not bound to is NAKed (the sender sees REM_ACCESS_ERR).
  rdma_rxe (6.12 and today's) checks neither: on `c` nodes the same
  requests succeed, and the script expects that;
- a UD WQE with an embedded address vector (what providers without AH
  numbers send; here the provider's AH is edited to look like one) must
  name a source address that is the GID table entry at its sgid_index:
  a correct one is sent, one whose source is another local address of
  the host (not a GID of the device) completes with LOC_QP_OP_ERR.
  rdma_rxe sends it from that address.

    qemu-test/run --debug --nodes 1 --drivers rs|c qemu-test/tests/hardening/hardening_wr.py
"""
import ctypes
import socket
import struct
import subprocess
import sys

from pyverbs.addr import AH, AHAttr, GID, GlobalRoute
from pyverbs.cq import CQ
from pyverbs.device import Context
from pyverbs.mr import MR, MW, MWBindInfo
from pyverbs.pd import PD
from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr
from pyverbs.wr import RecvWR, SendWR, SGE
import pyverbs.enums as e

import rc_lib as rl
from testlib import DEV, DRIVER, NODE_IP, check, kernel_problems, summary

STRICT = DRIVER != "c"
ACC = e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE | e.IBV_ACCESS_REMOTE_READ
MR_ACC = ACC | e.IBV_ACCESS_MW_BIND



class Node:
    def __init__(self):
        self.ctx = Context(name=DEV)
        self.gidx, self.gid = rl.gid_index(NODE_IP)
        self.cq = CQ(self.ctx, 64)

    def qp(self, pd):
        """An RC QP, to connect with `connect`."""
        return rl.make_qp(pd, self.cq, self.cq, wr=8, sge=1, inline=0)

    def connect(self, a, b):
        rl.connect(a, ACC, self.gidx, self.gid, b.qp_num, 0, 0, timeout=10, retry=1)
        if a is not b:
            rl.connect(b, ACC, self.gidx, self.gid, a.qp_num, 0, 0, timeout=10, retry=1)

    def status(self, what):
        wc = rl.poll(self.cq, 1, timeout=10, what=what)[0]
        return wc.status, wc.wr_id


def bind(node, qp, mw, mr, wr_id=1):
    """Binds type 2 window mw to mr through qp; returns the new rkey."""
    wr = SendWR(wr_id=wr_id, opcode=e.IBV_WR_BIND_MW)
    wr.set_bind_wr(mw, MWBindInfo(mr, mr.buf, 4096, e.IBV_ACCESS_REMOTE_WRITE))
    qp.post_send(wr)
    st, _ = node.status("bind")
    check(f"bind window on QP {qp.qp_num}", st == e.IBV_WC_SUCCESS, rl.status_name(st))
    return wr.rkey


def local_inv(node, qp, rkey, wr_id=2):
    wr = SendWR(wr_id=wr_id, opcode=e.IBV_WR_LOCAL_INV, num_sge=0)
    # imm_data shares its place with invalidate_rkey.
    wr.imm_data = rkey
    qp.post_send(wr)
    st, _ = node.status("local invalidate")
    return st


def want(strict_status):
    return strict_status if STRICT else e.IBV_WC_SUCCESS


def test_last_ref_in_atomic(node, pd):
    """The last reference of a destroyed QP, dropped under another QP's
    requester lock (before the PD/QP check, the LOCAL_INV from B went
    through; now it is refused and the window's dealloc drops it)."""
    if not STRICT:
        # 6.12's destroy_qp waits for the window's reference, then WARNs.
        print("SKIP window bound to a destroyed QP: rdma_rxe 6.12 WARNs in destroy_qp")
        return
    mr = MR(pd, 8192, MR_ACC)
    mw = MW(pd, e.IBV_MW_TYPE_2)
    a, b = node.qp(pd), node.qp(pd)
    node.connect(a, a)
    node.connect(b, b)
    rkey = bind(node, a, mw, mr)
    a.close()
    st = local_inv(node, b, rkey)
    check("LOCAL_INV on B of a window bound to destroyed A",
          st == want(e.IBV_WC_MW_BIND_ERR), rl.status_name(st))
    b.close()
    # The window's binding (and A's last reference) goes here, in process
    # context.
    mw.close()
    mr.close()
    problems = [p for p in kernel_problems() if "sleeping" in p or "BUG:" in p]
    check("no sleep in atomic context", not problems, "; ".join(problems[:3]))


def test_local_inv_checks(node, pd, pd2):
    mr = MR(pd, 8192, MR_ACC)
    mw = MW(pd, e.IBV_MW_TYPE_2)
    bound, same_pd, other_pd = node.qp(pd), node.qp(pd), node.qp(pd2)
    for q in (bound, same_pd, other_pd):
        node.connect(q, q)
    rkey = bind(node, bound, mw, mr)
    st = local_inv(node, other_pd, rkey)
    check("LOCAL_INV from a QP of another PD", st == want(e.IBV_WC_MW_BIND_ERR), rl.status_name(st))
    if STRICT:
        st = local_inv(node, same_pd, rkey)
        check("LOCAL_INV from another QP of the window's PD", st == e.IBV_WC_MW_BIND_ERR,
              rl.status_name(st))
        st = local_inv(node, bound, rkey)
        check("LOCAL_INV from the window's QP", st == e.IBV_WC_SUCCESS, rl.status_name(st))
    for q in (bound, same_pd, other_pd):
        q.close()
    mw.close()
    mr.close()


def test_send_with_inv_checks(node, pd):
    mr = MR(pd, 8192, MR_ACC)
    buf = MR(pd, 4096, ACC)
    mw = MW(pd, e.IBV_MW_TYPE_2)
    bound = node.qp(pd)
    node.connect(bound, bound)
    x, y = node.qp(pd), node.qp(pd)
    node.connect(x, y)
    rkey = bind(node, bound, mw, mr)
    y.post_recv(RecvWR(wr_id=10, num_sge=1, sg=[SGE(buf.buf, 64, buf.lkey)]))
    wr = SendWR(wr_id=11, opcode=e.IBV_WR_SEND_WITH_INV, num_sge=1, sg=[SGE(buf.buf + 1024, 16, buf.lkey)])
    wr.imm_data = rkey
    x.post_send(wr)
    wcs = rl.poll_upto(node.cq, 2, timeout=10)
    got = {wc.wr_id: wc.status for wc in wcs}
    sender = got.get(11)
    print("  SEND_WITH_INV: " + ", ".join(f"wr {k} {rl.status_name(v)}" for k, v in sorted(got.items())))
    check("SEND_WITH_INV to a QP the window is not bound to",
          sender == want(e.IBV_WC_REM_ACCESS_ERR),
          f"sender {rl.status_name(sender) if sender is not None else 'none'}, "
          f"receiver {rl.status_name(got[10]) if 10 in got else 'none'}")
    if STRICT:
        # The window is still bound: an RDMA WRITE through it reaches the
        # QP it is bound to (connected to itself).
        wr = SendWR(wr_id=12, opcode=e.IBV_WR_RDMA_WRITE, num_sge=1, sg=[SGE(buf.buf, 16, buf.lkey)])
        wr.set_wr_rdma(rkey, mr.buf)
        bound.post_send(wr)
        st, _ = node.status("write through the window")
        check("window still bound after the refused SEND_WITH_INV", st == e.IBV_WC_SUCCESS,
              rl.status_name(st))
    for q in (bound, x, y):
        q.close()
    mw.close()
    buf.close()
    mr.close()


# struct rxe_ah of rdma-core 44's rxe provider: struct ibv_ah (24 bytes),
# struct rxe_av, int ah_num. With ah_num 0 the provider copies the AV into
# each UD WQE (and the kernel uses it) instead of naming the AH.
AH_AV, AH_NUM = 24, 112
# struct rxe_av (rdma_user_rxe.h).
AV_PORT, AV_NET, AV_DMAC, AV_DGID, AV_SGID_INDEX, AV_HOP = 0, 1, 2, 8, 28, 29
AV_SGID_ADDR, AV_DGID_ADDR, AV_LEN = 32, 60, 88
NET_IPV4 = 1
QKEY = 0x11111111


def word(addr):
    return ctypes.c_uint64.from_address(addr).value


def ibv_ah_of(ah):
    """The struct ibv_ah * a pyverbs AH wraps: the pointer field of the
    object whose target starts with (context, pd) and whose pd starts with
    the same context."""
    base = id(ah)
    for off in range(16, sys.getsizeof(ah), 8):
        w = word(base + off)
        if w < 1 << 16 or w & 7:
            continue
        ctx, pd = word(w), word(w + 8)
        if ctx < 1 << 16 or ctx & 7 or pd < 1 << 16 or pd & 7:
            continue
        if word(pd) == ctx and ctypes.c_uint32.from_address(w + 16).value < 1 << 20:
            return w
    return None


def sockaddr_in(ip):
    return struct.pack("=HH4s", socket.AF_INET, 0, socket.inet_aton(ip)) + bytes(16)


def embed_av(ah_ptr, src_ip, dst_ip, sgid_index, dmac):
    av = bytearray(AV_LEN)
    av[AV_PORT] = 1
    av[AV_NET] = NET_IPV4
    av[AV_DMAC:AV_DMAC + 6] = dmac
    av[AV_DGID:AV_DGID + 16] = bytes(10) + b"\xff\xff" + socket.inet_aton(dst_ip)
    av[AV_SGID_INDEX] = sgid_index
    av[AV_HOP] = 64
    av[AV_SGID_ADDR:AV_SGID_ADDR + 28] = sockaddr_in(src_ip)
    av[AV_DGID_ADDR:AV_DGID_ADDR + 28] = sockaddr_in(dst_ip)
    ctypes.memmove(ah_ptr + AH_AV, bytes(av), AV_LEN)
    ctypes.c_int32.from_address(ah_ptr + AH_NUM).value = 0


def ud_qp(node, pd):
    qp = QP(pd, QPInitAttr(qp_type=e.IBV_QPT_UD, scq=node.cq, rcq=node.cq,
                           cap=QPCap(max_send_wr=8, max_recv_wr=8, max_send_sge=1, max_recv_sge=1)))
    a = QPAttr(qp_state=e.IBV_QPS_INIT)
    a.pkey_index, a.port_num, a.qkey = 0, 1, QKEY
    qp.modify(a, e.IBV_QP_STATE | e.IBV_QP_PKEY_INDEX | e.IBV_QP_PORT | e.IBV_QP_QKEY)
    qp.modify(QPAttr(qp_state=e.IBV_QPS_RTR), e.IBV_QP_STATE)
    a = QPAttr(qp_state=e.IBV_QPS_RTS)
    a.sq_psn = 0
    qp.modify(a, e.IBV_QP_STATE | e.IBV_QP_SQ_PSN)
    return qp


def ud_send(node, qp, ah, buf, wr_id):
    wr = SendWR(wr_id=wr_id, opcode=e.IBV_WR_SEND, num_sge=1, sg=[SGE(buf.buf, 32, buf.lkey)])
    wr.set_wr_ud(ah, qp.qp_num, QKEY)
    qp.post_send(wr)
    return node.status("UD send")[0]


def test_embedded_av(node, pd):
    node_ip = NODE_IP
    with open("/sys/class/net/eth0/address") as f:
        mac = bytes.fromhex(f.read().strip().replace(":", ""))
    buf = MR(pd, 4096, ACC)
    qp = ud_qp(node, pd)
    ah = AH(pd, attr=AHAttr(gr=GlobalRoute(dgid=GID(node.gid), sgid_index=node.gidx, hop_limit=64),
                            is_global=1, port_num=1))
    ptr = ibv_ah_of(ah)
    if ptr is None:
        check("embedded AV: the provider's AH found", False)
        return
    embed_av(ptr, node_ip, node_ip, node.gidx, mac)
    st = ud_send(node, qp, ah, buf, 20)
    check("UD send with a correct embedded AV", st == e.IBV_WC_SUCCESS, rl.status_name(st))
    # Another address of this host, not a GID of the device.
    other = "192.168.77.1"
    subprocess.run(["ip", "addr", "add", f"{other}/32", "dev", "lo"], check=False)
    embed_av(ptr, other, node_ip, node.gidx, mac)
    st = ud_send(node, qp, ah, buf, 21)
    check("UD send with an embedded AV whose source is not the sgid_index's GID",
          st == want(e.IBV_WC_LOC_QP_OP_ERR), rl.status_name(st))
    subprocess.run(["ip", "addr", "del", f"{other}/32", "dev", "lo"], check=False)
    # A source GID index past the table.
    if STRICT:
        qp.close()
        qp = ud_qp(node, pd)
        embed_av(ptr, node_ip, node_ip, 200, mac)
        st = ud_send(node, qp, ah, buf, 22)
        check("UD send with an embedded AV naming no GID entry", st == e.IBV_WC_LOC_QP_OP_ERR,
              rl.status_name(st))
    ah.close()
    qp.close()
    buf.close()


def main():
    node = Node()
    pd, pd2 = PD(node.ctx), PD(node.ctx)
    print(f"device {DEV} ({DRIVER}), GID {node.gidx} {node.gid}")
    test_last_ref_in_atomic(node, pd)
    test_local_inv_checks(node, pd, pd2)
    test_send_with_inv_checks(node, pd)
    test_embedded_av(node, pd)
    problems = kernel_problems()
    check("kernel log has no WARN or BUG", not problems, "; ".join(problems[:3]))
    pd2.close()
    pd.close()
    node.ctx.close()
    return summary()


if __name__ == "__main__":
    sys.exit(main())
