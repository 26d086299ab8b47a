#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
"""SQD with messages in flight, between two nodes (node 1 sends, node 2
receives), over the IPv4 RoCE v2 GID:

  qemu-test/run --drivers rs,c qemu-test/tests/datapath/sqd_drain.py [ROUNDS]

Each round the client posts a long RDMA WRITE (1024 packets) and a few
single-packet SENDs behind it, and 2 ms later, with the WRITE on its way,
moves its QP to SQD with en_sqd_async_notify. What the IB specification asks of the drain, as
rdma_rxe does it (--drivers c,c): a message whose first packet went out is
sent whole and completes; the drain ends (sq_draining clears, one
IBV_EVENT_SQ_DRAINED) once every message begun has completed, so the long
WRITE's completion is in when it does; a SEND posted while in SQD does not
go out. Back in RTS the rest is sent: rxe_rs sends it at once, rdma_rxe
only at the next doorbell (one more SEND is posted for it); every request
completes with success, in order, and the peer received the written bytes
and every SEND.

Exits non-zero on any failure; prints "sqd_drain: N rounds ok".
"""

import sys
import time

from pyverbs.cq import CQ
from pyverbs.device import Context
from pyverbs.mr import MR
from pyverbs.pd import PD
from pyverbs.qp import QP, QPCap, QPInitAttr
from pyverbs.wr import RecvWR, SendWR, SGE
import pyverbs.enums as e

import rc_lib as rl
from rc_lib import TestFailure, log
from testlib import DEV, DRIVER, NODE_IP, next_async_event

WRITE_LEN = 1024 * 1024
SENDS = 3
SEND_LEN = 64
BUF = WRITE_LEN + 64 * 1024
# SENDs: SENDS behind the WRITE, one posted in SQD, one after RTS.
ALL_SENDS = SENDS + 2
SQD = e.IBV_QPS_SQD


def pattern(k, n, salt):
    return bytes((i * 7 + k * 13 + salt) & 0xff for i in range(n))


def client(ctl, ctx, pd, cq, mr, qp, peer, rounds):
    for k in range(rounds):
        data = pattern(k, WRITE_LEN, 1)
        rl.put(mr, 0, data)
        for j in range(ALL_SENDS):
            rl.put(mr, WRITE_LEN + j * SEND_LEN, pattern(k, SEND_LEN, 2 + j))
        ctl.send({"round": k})
        ctl.recv()  # the peer's receives are posted
        wr = SendWR(wr_id=k * 100, opcode=e.IBV_WR_RDMA_WRITE, num_sge=1,
                    sg=[SGE(mr.buf, WRITE_LEN, mr.lkey)], send_flags=e.IBV_SEND_SIGNALED)
        wr.set_wr_rdma(peer["rkey"], peer["addr"])
        qp.post_send(wr)
        for j in range(SENDS):
            qp.post_send(SendWR(wr_id=k * 100 + 1 + j, opcode=e.IBV_WR_SEND, num_sge=1,
                                sg=[SGE(mr.buf + WRITE_LEN + j * SEND_LEN, SEND_LEN, mr.lkey)],
                                send_flags=e.IBV_SEND_SIGNALED))
        time.sleep(0.002)
        qp.modify(rl._attr(SQD, en_sqd_async_notify=1), e.IBV_QP_STATE | e.IBV_QP_EN_SQD_ASYNC_NOTIFY)
        # Posted in SQD: must wait for RTS.
        late = k * 100 + 1 + SENDS
        qp.post_send(SendWR(wr_id=late, opcode=e.IBV_WR_SEND, num_sge=1,
                            sg=[SGE(mr.buf + WRITE_LEN + SENDS * SEND_LEN, SEND_LEN, mr.lkey)],
                            send_flags=e.IBV_SEND_SIGNALED))
        ev = next_async_event(ctx, 60.0)
        if ev != e.IBV_EVENT_SQ_DRAINED:
            raise TestFailure(f"round {k}: async event {ev} instead of SQ_DRAINED")
        a, _ = qp.query(e.IBV_QP_STATE)
        if a.sq_draining or a.qp_state != SQD:
            raise TestFailure(f"round {k}: after the event: state {a.qp_state}, sq_draining {a.sq_draining}")
        got = rl.poll_none(cq, 0.3)
        ids = [w.wr_id for w in got]
        # The WRITE had begun: it must be done.
        if not ids or ids[0] != k * 100:
            raise TestFailure(f"round {k}: drained without the WRITE's completion (have {ids})")
        if late in ids:
            raise TestFailure(f"round {k}: a SEND posted in SQD completed before RTS")
        ctl.send({"drained": ids})
        heard = ctl.recv()["received"]
        if heard != len(ids) - 1:
            raise TestFailure(f"round {k}: the peer got {heard} SENDs, {len(ids) - 1} completed here")
        qp.modify(rl._attr(rl.RTS), e.IBV_QP_STATE)
        if DRIVER == "rs":
            got += rl.poll(cq, SENDS + 2 - len(got), what=f"round {k} completions after RTS, no doorbell")
        kick = late + 1
        qp.post_send(SendWR(wr_id=kick, opcode=e.IBV_WR_SEND, num_sge=1,
                            sg=[SGE(mr.buf + WRITE_LEN + (SENDS + 1) * SEND_LEN, SEND_LEN, mr.lkey)],
                            send_flags=e.IBV_SEND_SIGNALED))
        got += rl.poll(cq, ALL_SENDS + 1 - len(got), what=f"round {k} completions after RTS")
        want = [k * 100 + j for j in range(ALL_SENDS + 1)]
        if [w.wr_id for w in got] != want:
            raise TestFailure(f"round {k}: completions {[w.wr_id for w in got]}, want {want}")
        bad = [(w.wr_id, rl.status_name(w.status)) for w in got if w.status != e.IBV_WC_SUCCESS]
        if bad:
            raise TestFailure(f"round {k}: failed completions {bad}")
        ctl.send({"sent": True})
        if not ctl.recv()["ok"]:
            raise TestFailure(f"round {k}: the peer saw wrong data")
    log(f"sqd_drain: {rounds} rounds ok")


def server(ctl, cq, mr, qp, rounds):
    for k in range(rounds):
        ctl.recv()
        for j in range(ALL_SENDS):
            qp.post_recv(RecvWR(wr_id=j, num_sge=1,
                                sg=[SGE(mr.buf + WRITE_LEN + j * SEND_LEN, SEND_LEN, mr.lkey)]))
        ctl.send({"posted": True})
        ctl.recv()  # drained
        early = rl.poll_none(cq, 0.3)
        ctl.send({"received": len(early)})
        ctl.recv()  # all sent
        got = early + rl.poll(cq, ALL_SENDS - len(early), what=f"round {k} receives")
        ok = all(w.status == e.IBV_WC_SUCCESS and w.byte_len == SEND_LEN for w in got)
        ok = ok and rl.get(mr, 0, WRITE_LEN) == pattern(k, WRITE_LEN, 1)
        for j in range(ALL_SENDS):
            ok = ok and rl.get(mr, WRITE_LEN + j * SEND_LEN, SEND_LEN) == pattern(k, SEND_LEN, 2 + j)
        if not ok:
            log(f"round {k}: receives {[(w.wr_id, rl.status_name(w.status), w.byte_len) for w in got]}")
        ctl.send({"ok": ok})
        rl.put(mr, 0, bytes(BUF))


def body(ctl):
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    gidx, gid = rl.gid_index(NODE_IP)
    ctx = Context(name=DEV)
    pd = PD(ctx)
    cq = CQ(ctx, 64)
    mr = MR(pd, BUF, rl.ACC_ALL)
    qp = QP(pd, QPInitAttr(qp_type=rl.RC, scq=cq, rcq=cq, sq_sig_all=0,
                           cap=QPCap(max_send_wr=16, max_recv_wr=16, max_send_sge=1, max_recv_sge=1)))
    ctl.send({"qpn": qp.qp_num, "gid": gid, "addr": mr.buf, "rkey": mr.rkey})
    peer = ctl.recv()
    rl.connect(qp, rl.ACC_ALL, gidx, peer["gid"], peer["qpn"], 0x100, 0x100)
    ctl.send({"rts": True})
    ctl.recv()
    try:
        if rl.is_client():
            client(ctl, ctx, pd, cq, mr, qp, peer, rounds)
        else:
            server(ctl, cq, mr, qp, rounds)
    finally:
        rl.poll_none(cq, 0.05)
        for obj in (qp, mr, cq, pd, ctx):
            obj.close()


if __name__ == "__main__":
    sys.exit(rl.run_main(body))
