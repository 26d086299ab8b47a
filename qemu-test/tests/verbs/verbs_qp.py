#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
"""QP verbs through pyverbs (and raw libibverbs where pyverbs is too kind),
checked against rdma_rxe's behaviour.

In a qemu-test guest (one node is enough), with the GSI QP the MAD layer
creates checked too:

    qemu-test/run --nodes 1 --drivers rs qemu-test/tests/verbs/verbs_qp.py
    qemu-test/run --nodes 1 --drivers c  qemu-test/tests/verbs/verbs_qp.py [LOOPS]

Every case records "ok" or the errno the verb failed with; the expected
outcomes are rdma_rxe's (with the core's checks in front of it). Prints
one line per check and "N passed, N failed" at the end; exits non-zero on
any failure. LOOPS sets the create/destroy loop length (default 10000).
On the debug kernel the memory bound is looser (KASAN's quarantine) and
kmemleak must find nothing afterwards.
"""

import ctypes
import errno
import subprocess
import sys
import time

from pyverbs.addr import AH, AHAttr, GlobalRoute
from pyverbs.cq import CQ
from pyverbs.device import Context
from pyverbs.pd import PD
from pyverbs.pyverbs_error import PyverbsError
from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr, QPInitAttrEx
from pyverbs.srq import SRQ, SrqAttr, SrqInitAttr
from pyverbs.wr import SendWR, SGE
import pyverbs.enums as e

from testlib import (DEBUG_KERNEL, DEV, V4_MAPPED, IbvCap, IbvInitAttr, Libibverbs, capacity, check, expect,
                     check_flat_memory, first_gids, kmemleak_clean, kmemleak_clear, name_of, next_async_event,
                     summary)

RC, UC, UD = e.IBV_QPT_RC, e.IBV_QPT_UC, e.IBV_QPT_UD
RESET, INIT, RTR, RTS = e.IBV_QPS_RESET, e.IBV_QPS_INIT, e.IBV_QPS_RTR, e.IBV_QPS_RTS
SQD, ERR = e.IBV_QPS_SQD, e.IBV_QPS_ERR

M_STATE = e.IBV_QP_STATE
M_CUR = e.IBV_QP_CUR_STATE
M_SQD_NOTIFY = e.IBV_QP_EN_SQD_ASYNC_NOTIFY
M_ACCESS = e.IBV_QP_ACCESS_FLAGS
M_PKEY = e.IBV_QP_PKEY_INDEX
M_PORT = e.IBV_QP_PORT
M_QKEY = e.IBV_QP_QKEY
M_AV = e.IBV_QP_AV
M_MTU = e.IBV_QP_PATH_MTU
M_TIMEOUT = e.IBV_QP_TIMEOUT
M_RETRY = e.IBV_QP_RETRY_CNT
M_RNR_RETRY = e.IBV_QP_RNR_RETRY
M_RQ_PSN = e.IBV_QP_RQ_PSN
M_RD_ATOMIC = e.IBV_QP_MAX_QP_RD_ATOMIC
M_RNR_TIMER = e.IBV_QP_MIN_RNR_TIMER
M_SQ_PSN = e.IBV_QP_SQ_PSN
M_DEST_RD_ATOMIC = e.IBV_QP_MAX_DEST_RD_ATOMIC
M_CAP = e.IBV_QP_CAP
M_DEST_QPN = e.IBV_QP_DEST_QPN

INIT_RC = M_STATE | M_PKEY | M_PORT | M_ACCESS
INIT_UD = M_STATE | M_PKEY | M_PORT | M_QKEY
RTR_RC = M_STATE | M_AV | M_MTU | M_DEST_QPN | M_RQ_PSN | M_DEST_RD_ATOMIC | M_RNR_TIMER
RTR_UC = M_STATE | M_AV | M_MTU | M_DEST_QPN | M_RQ_PSN
RTS_RC = M_STATE | M_TIMEOUT | M_RETRY | M_RNR_RETRY | M_SQ_PSN | M_RD_ATOMIC
RTS_UC = M_STATE | M_SQ_PSN
ALL_QUERY = (1 << 21) - 1

# Limits rdma_rxe reports (rxe_param.h).
MAX_QP_WR = 1 << 20
MAX_SGE = 32
MAX_INLINE = 512

def sq_caps(wr, sge, inline):
    """The send caps rdma_rxe gives for a request (rxe_init_sq)."""
    area = max(sge * 16, inline)
    return capacity(wr), area // 16, area


def rq_wr(wr):
    return capacity(wr)


class Env:
    def __init__(self, dev):
        self.ctx = Context(name=dev)
        self.pd = PD(self.ctx)
        self.cq = CQ(self.ctx, 256)
        self.gid_index, self.gid = self.find_gid()

    def close(self):
        self.cq.close()
        self.pd.close()
        self.ctx.close()

    def find_gid(self):
        """The RoCE v2 GID of the node's IPv4 address (v4-mapped)."""
        found = first_gids(self.ctx, [V4_MAPPED]).get(V4_MAPPED)
        if found is None:
            raise RuntimeError("no IPv4 GID on port 1")
        return found

    def init_attr(self, qpt, wr=8, sge=1, inline=0, rwr=8, rsge=1, srq=None):
        cap = QPCap(max_send_wr=wr, max_recv_wr=rwr, max_send_sge=sge,
                    max_recv_sge=rsge, max_inline_data=inline)
        return QPInitAttr(qp_type=qpt, scq=self.cq, rcq=self.cq, cap=cap, srq=srq)

    def qp(self, qpt, **kw):
        return QP(self.pd, self.init_attr(qpt, **kw))

    def ah_attr(self, flow_label=0, hop_limit=64, tclass=0, sl=0):
        gr = GlobalRoute(dgid=self.gid, sgid_index=self.gid_index, flow_label=flow_label,
                         hop_limit=hop_limit, traffic_class=tclass)
        return AHAttr(gr=gr, is_global=1, port_num=1, sl=sl)


def state_of(qp):
    attr, _ = qp.query(M_STATE)
    return attr.qp_state


def attr(state, **kw):
    a = QPAttr(qp_state=state)
    for k, v in kw.items():
        setattr(a, k, v)
    return a


def to_init(qp, qpt):
    if qpt == UD:
        qp.modify(attr(INIT, pkey_index=0, port_num=1, qkey=0x11111111), INIT_UD)
    else:
        qp.modify(attr(INIT, pkey_index=0, port_num=1,
                       qp_access_flags=e.IBV_ACCESS_REMOTE_WRITE | e.IBV_ACCESS_LOCAL_WRITE), INIT_RC)


def rtr_attr(env, qp, **kw):
    fields = dict(path_mtu=e.IBV_MTU_1024, dest_qp_num=qp.qp_num, rq_psn=0x123456,
                  max_dest_rd_atomic=3, min_rnr_timer=12)
    fields.update(kw)
    a = attr(RTR, **fields)
    a.ah_attr = env.ah_attr(flow_label=0x1234, hop_limit=32, tclass=8, sl=2)
    return a


def test_create_types(env):
    qps = []
    for name, qpt in (("rc", RC), ("uc", UC), ("ud", UD)):
        qp = expect(f"create {name}", lambda: env.qp(qpt), "ok")
        if qp is None:
            continue
        qps.append(qp)
        check(f"{name} qpn above the reserved range", qp.qp_num >= 16, f"{qp.qp_num}")
        check(f"{name} starts in RESET", state_of(qp) == RESET)
        check(f"{name} query type", qp.query(M_STATE)[1].qp_type == qpt)
    nums = [q.qp_num for q in qps]
    check("qpns distinct", len(set(nums)) == len(nums), f"{nums}")
    for q in qps:
        q.close()
    expect("create raw packet", lambda: env.qp(e.IBV_QPT_RAW_PACKET), "EOPNOTSUPP")
    ex = QPInitAttrEx(qp_type=RC, scq=env.cq, rcq=env.cq, pd=env.pd,
                      cap=QPCap(max_send_wr=4, max_recv_wr=4, max_send_sge=1, max_recv_sge=1),
                      comp_mask=e.IBV_QP_INIT_ATTR_PD | e.IBV_QP_INIT_ATTR_CREATE_FLAGS,
                      create_flags=e.IBV_QP_CREATE_BLOCK_SELF_MCAST_LB)
    expect("create with create_flags", lambda: QP(env.ctx, ex), "EOPNOTSUPP")


def test_caps(env):
    cases = [
        ("wr=10 sge=3", dict(wr=10, sge=3), "ok"),
        ("inline 100 sge 1", dict(wr=1, sge=1, inline=100), "ok"),
        ("zero send wr", dict(wr=0, sge=0), "ok"),
        ("max send sge", dict(sge=MAX_SGE), "ok"),
        ("max inline", dict(inline=MAX_INLINE), "ok"),
        ("max recv sge", dict(rsge=MAX_SGE), "ok"),
        ("send wr 4096", dict(wr=4096, rwr=4096), "ok"),
        ("send sge over", dict(sge=MAX_SGE + 1), "EINVAL"),
        ("recv sge over", dict(rsge=MAX_SGE + 1), "EINVAL"),
        ("inline over", dict(inline=MAX_INLINE + 1), "EINVAL"),
        ("send wr over", dict(wr=MAX_QP_WR + 1), "EINVAL"),
        ("recv wr over", dict(rwr=MAX_QP_WR + 1), "EINVAL"),
    ]
    for qpt_name, qpt in (("rc", RC), ("ud", UD)):
        for name, kw, want in cases:
            qp = expect(f"caps {qpt_name} {name}", lambda: env.qp(qpt, **kw), want)
            if qp is None:
                continue
            _, init = qp.query(M_CAP)
            full = dict(wr=8, sge=1, inline=0, rwr=8, rsge=1)
            full.update(kw)
            swr, ssge, sinl = sq_caps(full["wr"], full["sge"], full["inline"])
            got = (init.cap.max_send_wr, init.cap.max_send_sge, init.cap.max_inline_data,
                   init.cap.max_recv_wr, init.cap.max_recv_sge)
            want_caps = (swr, ssge, sinl, rq_wr(full["rwr"]), full["rsge"])
            check(f"caps {qpt_name} {name} returned", got == want_caps, f"got {got}, want {want_caps}")
            a, _ = qp.query(M_CAP)
            got = (a.cap.max_send_wr, a.cap.max_send_sge, a.cap.max_inline_data)
            check(f"caps {qpt_name} {name} attr cap", got == (swr, ssge, sinl), f"{got}")
            qp.close()


def wait_drained(qp, limit=10.0):
    end = time.time() + limit
    while time.time() < end:
        a, _ = qp.query(M_STATE)
        if not a.sq_draining:
            return True
        time.sleep(0.01)
    return False


def test_rc_state_machine(env, qpt):
    tn = "rc" if qpt == RC else "uc"
    qp = env.qp(qpt)
    n = qp.qp_num

    # Transitions that do not exist, or lack required attributes.
    expect(f"{tn} reset->rtr", lambda: qp.modify(rtr_attr(env, qp), RTR_RC if qpt == RC else RTR_UC), "EINVAL")
    expect(f"{tn} reset->init without port", lambda: qp.modify(attr(INIT), M_STATE | M_PKEY | M_ACCESS), "EINVAL")
    expect(f"{tn} reset->init with sq_psn", lambda: qp.modify(attr(INIT, sq_psn=1), INIT_RC | M_SQ_PSN), "EINVAL")
    expect(f"{tn} reset->init with qkey", lambda: qp.modify(attr(INIT, qkey=1), INIT_RC | M_QKEY), "EINVAL")
    expect(f"{tn} reset->init bad port", lambda: qp.modify(attr(INIT, port_num=2), INIT_RC), "EINVAL")
    expect(f"{tn} reset->init zero-based access",
           lambda: qp.modify(attr(INIT, qp_access_flags=e.IBV_ACCESS_ZERO_BASED), INIT_RC), "EINVAL")
    check(f"{tn} still RESET", state_of(qp) == RESET)

    access = e.IBV_ACCESS_REMOTE_WRITE | e.IBV_ACCESS_LOCAL_WRITE
    if qpt == RC:
        access |= e.IBV_ACCESS_REMOTE_READ | e.IBV_ACCESS_REMOTE_ATOMIC
    expect(f"{tn} reset->init", lambda: qp.modify(attr(INIT, pkey_index=0, port_num=1, qp_access_flags=access),
                                                 INIT_RC), "ok")
    a, _ = qp.query(ALL_QUERY)
    check(f"{tn} init state", a.qp_state == INIT)
    check(f"{tn} init access", a.qp_access_flags == access, f"{a.qp_access_flags:#x}")
    check(f"{tn} init port", a.port_num == 1, f"{a.port_num}")
    check(f"{tn} init path_mtu default 256", a.path_mtu == e.IBV_MTU_256, f"{a.path_mtu}")
    expect(f"{tn} init->init access", lambda: qp.modify(attr(INIT, qp_access_flags=e.IBV_ACCESS_LOCAL_WRITE),
                                                         M_STATE | M_ACCESS), "ok")
    expect(f"{tn} init->rts", lambda: qp.modify(attr(RTS, sq_psn=1, timeout=14, retry_cnt=7, rnr_retry=7,
                                                     max_rd_atomic=1), RTS_RC if qpt == RC else RTS_UC), "EINVAL")

    rtr_mask = RTR_RC if qpt == RC else RTR_UC
    expect(f"{tn} init->rtr without dest_qpn", lambda: qp.modify(rtr_attr(env, qp), rtr_mask & ~M_DEST_QPN), "EINVAL")
    expect(f"{tn} init->rtr mtu 4096+1",
           lambda: qp.modify(rtr_attr(env, qp, path_mtu=6), rtr_mask), "EINVAL")
    if qpt == UC:
        expect("uc init->rtr with rnr timer", lambda: qp.modify(rtr_attr(env, qp), RTR_RC), "EINVAL")
    expect(f"{tn} init->rtr", lambda: qp.modify(rtr_attr(env, qp), rtr_mask), "ok")
    a, init = qp.query(ALL_QUERY)
    check(f"{tn} rtr state", a.qp_state == RTR)
    check(f"{tn} rtr mtu", a.path_mtu == e.IBV_MTU_1024, f"{a.path_mtu}")
    check(f"{tn} rtr dest qpn", a.dest_qp_num == n, f"{a.dest_qp_num}")
    check(f"{tn} rtr rq_psn", a.rq_psn == 0x123456, f"{a.rq_psn:#x}")
    if qpt == RC:
        check("rc rtr max_dest_rd_atomic rounded", a.max_dest_rd_atomic == 4, f"{a.max_dest_rd_atomic}")
        check("rc rtr min_rnr_timer", a.min_rnr_timer == 12, f"{a.min_rnr_timer}")
    ah = a.ah_attr
    check(f"{tn} rtr ah global", ah.is_global == 1)
    check(f"{tn} rtr ah dgid", str(ah.dgid) == str(env.gid.gid), f"{ah.dgid} vs {env.gid.gid}")
    check(f"{tn} rtr ah sgid index", ah.sgid_index == env.gid_index, f"{ah.sgid_index}")
    check(f"{tn} rtr ah flow label", ah.flow_label == 0x1234, f"{ah.flow_label:#x}")
    # The core replaces the hop limit with the one of the route it resolved.
    check(f"{tn} rtr ah hop limit from the route", ah.hop_limit == 64, f"{ah.hop_limit}")
    check(f"{tn} rtr ah traffic class", ah.traffic_class == 8, f"{ah.traffic_class}")
    check(f"{tn} rtr ah port", ah.port_num == 1, f"{ah.port_num}")
    check(f"{tn} rtr ah sl not kept", ah.sl == 0, f"{ah.sl}")
    check(f"{tn} init attr type", init.qp_type == qpt)

    if qpt == RC:
        rts = attr(RTS, sq_psn=0xabcdef, timeout=14, retry_cnt=7, rnr_retry=6, max_rd_atomic=3)
        expect("rc rtr->rts timeout 32", lambda: qp.modify(attr(RTS, sq_psn=1, timeout=32, retry_cnt=1,
                                                                 rnr_retry=1, max_rd_atomic=1), RTS_RC), "EINVAL")
        expect("rc rtr->rts rd_atomic 129", lambda: qp.modify(attr(RTS, sq_psn=1, timeout=1, retry_cnt=1,
                                                                    rnr_retry=1, max_rd_atomic=129), RTS_RC), "EINVAL")
        expect("rc rtr->rts without timeout", lambda: qp.modify(rts, RTS_RC & ~M_TIMEOUT), "EINVAL")
        expect("rc rtr->rts", lambda: qp.modify(rts, RTS_RC), "ok")
    else:
        expect("uc rtr->rts with timeout", lambda: qp.modify(attr(RTS, sq_psn=1, timeout=1), RTS_UC | M_TIMEOUT),
               "EINVAL")
        expect("uc rtr->rts", lambda: qp.modify(attr(RTS, sq_psn=0xabcdef), RTS_UC), "ok")
    a, _ = qp.query(ALL_QUERY)
    check(f"{tn} rts state", a.qp_state == RTS)
    check(f"{tn} rts sq_psn", a.sq_psn == 0xabcdef, f"{a.sq_psn:#x}")
    check(f"{tn} rts rq_psn kept", a.rq_psn == 0x123456, f"{a.rq_psn:#x}")
    if qpt == RC:
        check("rc rts timeout", a.timeout == 14, f"{a.timeout}")
        check("rc rts retry_cnt", a.retry_cnt == 7, f"{a.retry_cnt}")
        check("rc rts rnr_retry", a.rnr_retry == 6, f"{a.rnr_retry}")
        check("rc rts max_rd_atomic rounded", a.max_rd_atomic == 4, f"{a.max_rd_atomic}")
        expect("rc rts->rts min_rnr_timer", lambda: qp.modify(attr(RTS, min_rnr_timer=20), M_STATE | M_RNR_TIMER),
               "ok")
        check("rc rts->rts stored", qp.query(M_RNR_TIMER)[0].min_rnr_timer == 20)
        expect("rc rts->rts path_mtu not allowed", lambda: qp.modify(attr(RTS, path_mtu=e.IBV_MTU_512),
                                                                      M_STATE | M_MTU), "EINVAL")
    # Attributes without a state change: no transition rules apply.
    expect(f"{tn} modify without state", lambda: qp.modify(attr(RTS, path_mtu=e.IBV_MTU_512), M_MTU), "ok")
    check(f"{tn} mtu stored without state", qp.query(M_MTU)[0].path_mtu == e.IBV_MTU_512)
    expect(f"{tn} cur_state from RTS asserted", lambda: qp.modify(attr(RTS, cur_qp_state=RTS), M_STATE | M_CUR), "ok")
    expect(f"{tn} rts->init", lambda: qp.modify(attr(INIT), M_STATE), "EINVAL")

    expect(f"{tn} rts->sqd", lambda: qp.modify(attr(SQD, en_sqd_async_notify=1), M_STATE | M_SQD_NOTIFY), "ok")
    check(f"{tn} sqd drained", wait_drained(qp))
    ev = next_async_event(env.ctx)
    check(f"{tn} sq drained event", ev == e.IBV_EVENT_SQ_DRAINED, f"{ev}")
    check(f"{tn} sqd state", state_of(qp) == SQD)
    expect(f"{tn} sqd->sqd", lambda: qp.modify(attr(SQD), M_STATE), "ok")
    check(f"{tn} sqd drained again", wait_drained(qp))
    ev = next_async_event(env.ctx)
    check(f"{tn} sq drained event again", ev == e.IBV_EVENT_SQ_DRAINED, f"{ev}")
    expect(f"{tn} sqd->rts", lambda: qp.modify(attr(RTS), M_STATE), "ok")
    check(f"{tn} back in rts", state_of(qp) == RTS)
    expect(f"{tn} rts->err", lambda: qp.modify(attr(ERR), M_STATE), "ok")
    check(f"{tn} err state", state_of(qp) == ERR)
    expect(f"{tn} err->rts", lambda: qp.modify(attr(RTS), M_STATE), "EINVAL")
    expect(f"{tn} err->err", lambda: qp.modify(attr(ERR), M_STATE), "ok")
    expect(f"{tn} err->reset", lambda: qp.modify(attr(RESET), M_STATE), "ok")
    a, _ = qp.query(ALL_QUERY)
    check(f"{tn} reset state", a.qp_state == RESET)
    check(f"{tn} reset keeps dest qpn", a.dest_qp_num == n, f"{a.dest_qp_num}")
    check(f"{tn} reset keeps sq_psn", a.sq_psn == 0xabcdef, f"{a.sq_psn:#x}")
    expect(f"{tn} reset->init again", lambda: to_init(qp, qpt), "ok")
    qp.close()


def test_ud_state_machine(env):
    qp = env.qp(UD)
    expect("ud reset->init without qkey", lambda: qp.modify(attr(INIT, port_num=1), M_STATE | M_PKEY | M_PORT),
           "EINVAL")
    expect("ud reset->init with access", lambda: qp.modify(attr(INIT, qkey=5, qp_access_flags=1),
                                                          INIT_UD | M_ACCESS), "EINVAL")
    expect("ud reset->init", lambda: qp.modify(attr(INIT, pkey_index=0, port_num=1, qkey=0x1234), INIT_UD), "ok")
    check("ud qkey", qp.query(M_QKEY)[0].qkey == 0x1234)
    expect("ud init->init qkey", lambda: qp.modify(attr(INIT, qkey=0x5678), M_STATE | M_QKEY), "ok")
    check("ud qkey changed", qp.query(M_QKEY)[0].qkey == 0x5678)
    expect("ud init->rtr with av", lambda: qp.modify(rtr_attr(env, qp), M_STATE | M_AV), "EINVAL")
    expect("ud init->rtr", lambda: qp.modify(attr(RTR), M_STATE), "ok")
    expect("ud rtr->rts without sq_psn", lambda: qp.modify(attr(RTS), M_STATE), "EINVAL")
    expect("ud rtr->rts", lambda: qp.modify(attr(RTS, sq_psn=77), M_STATE | M_SQ_PSN), "ok")
    a, _ = qp.query(ALL_QUERY)
    check("ud rts", a.qp_state == RTS and a.sq_psn == 77, f"{a.qp_state} {a.sq_psn}")
    expect("ud rts->sqd", lambda: qp.modify(attr(SQD), M_STATE), "ok")
    check("ud sqd drained", wait_drained(qp))
    ev = next_async_event(env.ctx)
    check("ud sq drained event", ev == e.IBV_EVENT_SQ_DRAINED, f"{ev}")
    expect("ud sqd->rts qkey", lambda: qp.modify(attr(RTS, qkey=9), M_STATE | M_QKEY), "ok")
    expect("ud rts->reset", lambda: qp.modify(attr(RESET), M_STATE), "ok")
    qp.close()


def post_one_send(qp, ah=None):
    wr = SendWR(opcode=e.IBV_WR_SEND, num_sge=1, sg=[SGE(0, 0, 0)])
    if ah is not None:
        # The provider copies the AH into UD WQEs: it must be there.
        wr.set_wr_ud(ah, qp.qp_num, 0x11111111)
    qp.post_send(wr)


def test_post_before_rts(env):
    """The send doorbell is refused before RTS. Each case uses a QP of its
    own: the provider leaves the WQE in the ring when the doorbell fails."""
    ah = AH(env.pd, attr=env.ah_attr())
    for tn, qpt in (("rc", RC), ("ud", UD)):
        for sn, steps in (("RESET", 0), ("INIT", 1), ("RTR", 2)):
            qp = env.qp(qpt)
            if steps >= 1:
                to_init(qp, qpt)
            if steps >= 2:
                if qpt == UD:
                    qp.modify(attr(RTR), M_STATE)
                else:
                    qp.modify(rtr_attr(env, qp), RTR_RC)
            expect(f"{tn} post_send in {sn}", lambda: post_one_send(qp, ah if qpt == UD else None), "EINVAL")
            qp.close()
    ah.close()


def test_srq(env):
    srq = expect("create srq", lambda: SRQ(env.pd, SrqInitAttr(SrqAttr(max_wr=16, max_sge=2))), "ok")
    if srq is None:
        return
    # With an SRQ the receive caps are not checked nor changed.
    qp = expect("qp with srq", lambda: env.qp(RC, rwr=MAX_QP_WR + 5, rsge=MAX_SGE + 5, srq=srq), "ok")
    if qp is not None:
        # The receive caps a query returns for an SRQ QP are not defined (C
        # leaves them uninitialised); the send caps are.
        a, _ = qp.query(M_CAP)
        check("srq qp send caps", (a.cap.max_send_wr, a.cap.max_send_sge) == sq_caps(8, 1, 0)[:2],
              f"{a.cap.max_send_wr} {a.cap.max_send_sge}")
        expect("srq qp to init", lambda: to_init(qp, RC), "ok")
        expect("srq qp to rtr", lambda: qp.modify(rtr_attr(env, qp), RTR_RC), "ok")
        qp.close()
    qp = expect("ud qp with srq", lambda: env.qp(UD, srq=srq), "ok")
    if qp is not None:
        qp.close()
    srq.close()


def test_destroy_order(dev):
    # pyverbs would never destroy in this order (it closes children first).
    v = Libibverbs(dev)
    lib = v.lib
    pd = lib.ibv_alloc_pd(v.ctx)
    cq = lib.ibv_create_cq(v.ctx, 16, None, None, 0)
    ia = IbvInitAttr(send_cq=cq, recv_cq=cq, cap=IbvCap(4, 4, 1, 1, 0), qp_type=RC)
    qp = lib.ibv_create_qp(pd, ctypes.byref(ia))
    check("raw create qp", bool(pd and cq and qp))
    if qp:
        rc = lib.ibv_destroy_cq(cq)
        check("destroy cq with live qp", rc == errno.EBUSY, f"got {name_of(rc)}")
        rc = lib.ibv_dealloc_pd(pd)
        check("dealloc pd with live qp", rc == errno.EBUSY, f"got {name_of(rc)}")
        check("destroy qp", lib.ibv_destroy_qp(qp) == 0)
    check("destroy cq after qp", lib.ibv_destroy_cq(cq) == 0)
    check("dealloc pd after qp", lib.ibv_dealloc_pd(pd) == 0)
    v.close()


def test_create_destroy_loop(env, loops):
    # Warm up caches (slabs, uverbs objects) before measuring.
    for _ in range(50):
        env.qp(RC).close()
    qps = []
    errors = 0

    def one(i):
        nonlocal qps, errors
        try:
            qps.append(env.qp(RC if i % 3 else UD, wr=16, rwr=16))
        except PyverbsError:
            errors += 1
        if len(qps) >= 100 or i == loops - 1:
            for q in qps:
                q.close()
            qps = []

    # KASAN parks freed objects in a quarantine (up to 1/32 of memory)
    # before they return to the slabs, so on the debug kernel this only
    # bounds gross leaks; kmemleak (main) is precise there. Slab and
    # VmallocUsed together stay under 32 MiB (debug) or 4 MiB.
    check_flat_memory("QP creates/destroys", loops, one, slab_kb=(32768 if DEBUG_KERNEL else 4096) - 1024)
    check(f"{loops} create/destroy without error", errors == 0, f"{errors} errors")


def gsi_qps():
    """The lines of `rdma res show qp` for this device's port."""
    res = subprocess.run(["rdma", "res", "show", "qp", "link", f"{DEV}/1"],
                         capture_output=True, text=True, check=True).stdout
    return [line for line in res.splitlines() if "lqpn" in line]


def main():
    loops = int(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1] else 10000
    # The MAD layer creates QP1 at registration and brings it to RTS.
    qps = gsi_qps()
    print("\n".join(qps))
    check("GSI QP in RTS", any("lqpn 1 type GSI state RTS" in line for line in qps))
    kmemleak_clear()
    env = Env(DEV)
    print(f"device {DEV}, IPv4 GID index {env.gid_index} ({env.gid.gid})")
    test_create_types(env)
    test_caps(env)
    test_rc_state_machine(env, RC)
    test_rc_state_machine(env, UC)
    test_ud_state_machine(env)
    test_post_before_rts(env)
    test_srq(env)
    test_destroy_order(DEV)
    test_create_destroy_loop(env, loops)
    env.close()
    left = gsi_qps()
    check("only the GSI QP is left", len(left) == 1, f"{len(left)} QPs")
    check("kmemleak reports nothing", kmemleak_clean())
    return summary("verbs_qp")


if __name__ == "__main__":
    sys.exit(main())
