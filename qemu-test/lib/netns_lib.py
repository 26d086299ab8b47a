# SPDX-License-Identifier: GPL-2.0
"""Helpers of the network-namespace route tests (netns_routes.py,
netns_route_free.py): commands, the GID table, QPs over one path, polling.
Run in a qemu-test guest, next to testlib."""

import ipaddress
import subprocess
import time

from pyverbs.addr import AHAttr, GID, GlobalRoute
from pyverbs.cq import CQ
from pyverbs.mr import MR
from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr
from pyverbs.wr import RecvWR, SendWR, SGE
import pyverbs.enums as e

from testlib import DEV

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


def wait_for(what, cond, limit=60.0, step=0.3):
    deadline = time.monotonic() + limit
    while not cond():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        time.sleep(step)


def ah_attr(sgid, dgid_str):
    return AHAttr(gr=GlobalRoute(dgid=GID(dgid_str), sgid_index=sgid, hop_limit=64),
                  is_global=1, port_num=1)


def modify(qp, state, mask, **kw):
    a = QPAttr(qp_state=state)
    for k, v in kw.items():
        setattr(a, k, v)
    qp.modify(a, mask)


def rc_connect(qp, sgid, dgid_str, dqpn, min_rnr_timer=31):
    """RESET to RTS on one path. The default RNR delay is the longest
    (491 ms): a requester without a receive to send to retries slowly, for
    ever (rnr_retry 7)."""
    modify(qp, INIT, e.IBV_QP_STATE | e.IBV_QP_PKEY_INDEX | e.IBV_QP_PORT |
           e.IBV_QP_ACCESS_FLAGS, pkey_index=0, port_num=1,
           qp_access_flags=e.IBV_ACCESS_LOCAL_WRITE)
    a = QPAttr(qp_state=RTR)
    a.path_mtu = e.IBV_MTU_1024
    a.dest_qp_num = dqpn
    a.rq_psn = 0
    a.max_dest_rd_atomic = 1
    a.min_rnr_timer = min_rnr_timer
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
