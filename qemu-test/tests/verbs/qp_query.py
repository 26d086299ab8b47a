#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
"""ibv_query_qp on QPs that have moved traffic, rxe_rs against rdma_rxe:

  qemu-test/run --drivers rs,c qemu-test/tests/verbs/qp_query.py

Both nodes do the same: an RC QP towards the peer whose send and receive
PSNs start just below the 24-bit wrap, and a UD QP. Each queries both QPs
with every attribute bit after each transition and after each round of
traffic (SENDs of one and several packets, RDMA WRITE, RDMA READ of
several response packets, atomics, then UD SENDs), in SQD, ERR and after
RESET. rdma_rxe reports the live PSNs (the requester's next one as
sq_psn, the one the responder expects as rq_psn), not the ones last set
by modify_qp; the test checks them against the packet counts on either
driver. The nodes then swap their query results: with the peer's QPN and
GID written as "peer", every field must be the same on both (with --drivers
rs,c: rxe_rs reports what rdma_rxe reports).

On an rs node each query is also compared with what `rdma resource show qp
-dd` prints of the QP's transport state (the driver details: next and
unacknowledged send PSN, expected receive PSN, outstanding WQEs and reads,
the retry limits) and with the raw record of `-r`; and the CQ's entry with
its fill level while completions wait.

Exits non-zero on any difference; prints "qp_query: N queries equal".
"""

import json
import os
import struct
import subprocess
import sys
import time

from pyverbs.addr import AH, AHAttr, GID, GlobalRoute
from pyverbs.cq import CQ
from pyverbs.device import Context
from pyverbs.mr import MR
from pyverbs.pd import PD
from pyverbs.qp import QP, QPCap, QPInitAttr
from pyverbs.wr import RecvWR, SendWR, SGE
import pyverbs.enums as e

import rc_lib as rl
from rc_lib import TestFailure, log
from testlib import DEV, DRIVER, NODE_IP, rdma_res_entry, res_int, res_raw_bytes

ALL_QUERY = (1 << 21) - 1
PSN_MASK = (1 << 24) - 1
MTU = 1024
# The send and receive PSNs of the RC QPs: the traffic wraps them.
START_PSN = PSN_MASK - 6
UD_PSN = 0x123
QKEY = 0x11111111
BUF = 64 * 1024

RTS, SQD, ERR, RESET = rl.RTS, e.IBV_QPS_SQD, rl.ERR, rl.RESET
SEND, WRITE, READ = e.IBV_WR_SEND, e.IBV_WR_RDMA_WRITE, e.IBV_WR_RDMA_READ
FADD, CAS, SEND_IMM = e.IBV_WR_ATOMIC_FETCH_AND_ADD, e.IBV_WR_ATOMIC_CMP_AND_SWP, e.IBV_WR_SEND_WITH_IMM

# Each round: (opcode, length) requests on the RC QP. The PSNs each takes
# are ceil(length / MTU), at least one (a READ counts its responses).
ROUNDS = [
    [(SEND, 10), (SEND, 3 * MTU - 5), (SEND_IMM, 0)],
    [(WRITE, 5 * MTU), (WRITE, 0), (READ, 4 * MTU + 1)],
    [(FADD, 8), (CAS, 8), (READ, 16), (SEND, MTU)],
]


def npkts(length):
    return max(1, -(-length // MTU))


def ah_dict(ah, peer_gid):
    d = {k: getattr(ah, k) for k in ("dlid", "sl", "src_path_bits", "static_rate", "is_global", "port_num",
                                     "flow_label", "sgid_index", "hop_limit", "traffic_class")}
    gid = str(ah.dgid)
    d["dgid"] = "peer" if gid == peer_gid else gid
    return d


def cap_dict(cap):
    return {k: getattr(cap, k) for k in ("max_send_wr", "max_recv_wr", "max_send_sge", "max_recv_sge",
                                         "max_inline_data")}


def query(qp, peer_qpn, peer_gid):
    """Every field ibv_query_qp returns, as a dict (the peer's QPN and GID
    as "peer")."""
    a, init = qp.query(ALL_QUERY)
    d = {k: getattr(a, k) for k in ("qp_state", "cur_qp_state", "path_mtu", "path_mig_state", "qkey",
                                    "rq_psn", "sq_psn", "qp_access_flags", "pkey_index", "alt_pkey_index",
                                    "en_sqd_async_notify", "sq_draining", "max_rd_atomic",
                                    "max_dest_rd_atomic", "min_rnr_timer", "port_num", "timeout",
                                    "retry_cnt", "rnr_retry", "alt_port_num", "alt_timeout", "rate_limit")}
    d["dest_qp_num"] = "peer" if a.dest_qp_num == peer_qpn and peer_qpn else a.dest_qp_num
    d["cap"] = cap_dict(a.cap)
    d["ah_attr"] = ah_dict(a.ah_attr, peer_gid)
    d["alt_ah_attr"] = ah_dict(a.alt_ah_attr, peer_gid)
    d["init.qp_type"] = init.qp_type
    d["init.sq_sig_all"] = init.sq_sig_all
    d["init.cap"] = cap_dict(init.cap)
    return d


class Node:
    def __init__(self):
        self.gid_index, self.gid = rl.gid_index(NODE_IP)
        self.ctx = Context(name=DEV)
        self.pd = PD(self.ctx)
        self.cq = CQ(self.ctx, 256)
        self.mr = MR(self.pd, BUF, rl.ACC_ALL)
        cap = QPCap(max_send_wr=16, max_recv_wr=16, max_send_sge=2, max_recv_sge=2, max_inline_data=64)
        self.rc = QP(self.pd, QPInitAttr(qp_type=rl.RC, scq=self.cq, rcq=self.cq, cap=cap, sq_sig_all=1))
        self.ud = QP(self.pd, QPInitAttr(qp_type=e.IBV_QPT_UD, scq=self.cq, rcq=self.cq, cap=cap,
                                         sq_sig_all=1))
        self.snaps = []
        self.expect = []
        self.res_checks = 0
        self._cqn = self.cqn() if DRIVER == "rs" else -1

    def snap(self, label, qp, peer_qpn, sq_psn=None, rq_psn=None):
        d = query(qp, peer_qpn, self.peer_gid)
        self.snaps.append((label, d))
        for name, want in (("sq_psn", sq_psn), ("rq_psn", rq_psn)):
            if want is not None and d[name] != want & PSN_MASK:
                self.expect.append(f"{label}: {name} {d[name]:#x}, expected {want & PSN_MASK:#x}")
        if DRIVER == "rs":
            self.check_res(label, qp, d)

    def check_res(self, label, qp, d):
        """The driver details `rdma resource show qp` prints agree with the
        query and with a QP whose every WQE has completed."""
        self.res_checks += 1
        ent = rdma_res_entry("qp", "lqpn", qp.qp_num)
        if ent is None or "sq_psn" not in ent:
            self.expect.append(f"{label}: rdma resource show qp lqpn {qp.qp_num} -dd: no driver details ({ent})")
            return
        want = {"sq_psn": d["sq_psn"], "rq_psn": d["rq_psn"], "sq_wqes": 0, "rq_wqes": 0,
                "rd_atomic_out": 0, "resp_queue": 0, "comp_queue": 0}
        if d["qp_state"] in (RTS, SQD) and qp.qp_type == rl.RC:
            # Every WQE completed: all was acknowledged, no read is out.
            want.update(unacked_psn=d["sq_psn"], retry_cnt=d["retry_cnt"], rnr_retry=d["rnr_retry"],
                        max_rd_atomic=d["max_rd_atomic"], max_dest_rd_atomic=d["max_dest_rd_atomic"],
                        retrans_timer=0, rnr_timer=0)
        for name, v in want.items():
            got = res_int(ent, name)
            if got != v:
                self.expect.append(f"{label}: restrack {name} {got:#x}, expected {v:#x}")
        if ent.get("last_err") != "none":
            self.expect.append(f"{label}: restrack last_err {ent.get('last_err')!r}, expected 'none'")
        if d["qp_state"] == RESET:
            return
        raw = rdma_res_entry("qp", "lqpn", qp.qp_num, raw=True)
        data = res_raw_bytes(raw) if raw and "data" in raw else b""
        # Version 1, then the attributes in order as little-endian u32s.
        if len(data) != 1 + 4 * 19 or data[0] != 1:
            self.expect.append(f"{label}: raw record of {len(data)} bytes, version {data[:1].hex()}")
        else:
            sq, unacked, rq = struct.unpack_from("<3I", data, 1)
            if (sq, rq) != (d["sq_psn"], d["rq_psn"]):
                self.expect.append(f"{label}: raw sq/rq psn {sq:#x}/{rq:#x}, "
                                   f"expected {d['sq_psn']:#x}/{d['rq_psn']:#x}")

    def check_cq(self, label, waiting):
        """The CQ's driver details count the completions not yet polled."""
        if DRIVER != "rs":
            return
        ent = rdma_res_entry("cq", "cqn", self._cqn)
        if ent is None or "cqe_used" not in ent:
            self.expect.append(f"{label}: rdma resource show cq -dd: no driver details ({ent})")
            return
        self.res_checks += 1
        if res_int(ent, "cqe_used") != waiting or res_int(ent, "cqe_max") < 256:
            self.expect.append(f"{label}: restrack cq cqe_used {ent['cqe_used']} cqe_max {ent['cqe_max']}, "
                               f"expected {waiting} and at least 256")

    def cqn(self):
        """The CQ's restrack id: this process's one CQ on the device."""
        out = subprocess.run(["rdma", "-j", "resource", "show", "cq", "dev", DEV], capture_output=True,
                             text=True).stdout
        mine = [c for c in json.loads(out or "[]") if c.get("pid") == os.getpid()]
        return mine[0]["cqn"] if len(mine) == 1 else -1

    def cq_waiting(self, n):
        """Whether n completions wait, without polling them (a short sleep
        otherwise)."""
        ent = rdma_res_entry("cq", "cqn", self._cqn) if self._cqn >= 0 else None
        if ent and res_int(ent, "cqe_used") >= n:
            return True
        time.sleep(0.01)
        return False

    def wait(self, n, what):
        for wc in rl.poll(self.cq, n, what=what):
            if wc.status != e.IBV_WC_SUCCESS:
                raise TestFailure(f"{what}: wr {wc.wr_id} completed with {rl.status_name(wc.status)}")


def rc_round(node, ctl, ops, raddr, rkey):
    """Posts the receives the peer's sends need, then the requests, and
    waits for both sides' completions."""
    sends = sum(1 for op, _ in ops if op in (SEND, SEND_IMM))
    for i in range(sends):
        node.rc.post_recv(RecvWR(wr_id=100 + i, num_sge=1, sg=[SGE(node.mr.buf + 32768, 16384, node.mr.lkey)]))
    ctl.send({"posted": True})
    ctl.recv()
    for i, (op, length) in enumerate(ops):
        sge = SGE(node.mr.buf + 64 * i, length, node.mr.lkey)
        if op in (FADD, CAS):
            sge = SGE(node.mr.buf + 8 * i, 8, node.mr.lkey)
        wr = SendWR(wr_id=i, opcode=op, num_sge=1, sg=[sge],
                    imm_data=7 if op == SEND_IMM else 0)
        if op in (WRITE, READ):
            wr.set_wr_rdma(rkey, raddr + 16384)
        elif op in (FADD, CAS):
            wr.set_wr_atomic(rkey, raddr + 8 * i, 1, 0)
        node.rc.post_send(wr)
    # Every send is signalled: once the peer's requests are done, all of
    # this side's completions wait in the CQ together.
    want = len(ops) + sends
    if DRIVER == "rs":
        for _ in range(500):
            if node.cq_waiting(want):
                break
        node.check_cq("cq before polling", want)
    node.wait(want, "rc round")
    node.check_cq("cq after polling", 0)
    ctl.send({"done": True})
    ctl.recv()


def body(ctl):
    node = Node()
    ctl.send({"rc": node.rc.qp_num, "ud": node.ud.qp_num, "gid": node.gid,
              "addr": node.mr.buf, "rkey": node.mr.rkey})
    peer = ctl.recv()
    node.peer_gid = str(GID(peer["gid"]))
    rc, ud = node.rc, node.ud
    prc, pud = peer["rc"], peer["ud"]

    node.snap("rc reset", rc, prc)
    rl.connect(rc, rl.ACC_ALL, node.gid_index, peer["gid"], prc, START_PSN, START_PSN)
    node.snap("rc rts", rc, prc, START_PSN, START_PSN)

    ud.modify(rl._attr(rl.INIT, pkey_index=0, port_num=1, qkey=QKEY),
              e.IBV_QP_STATE | e.IBV_QP_PKEY_INDEX | e.IBV_QP_PORT | e.IBV_QP_QKEY)
    ud.modify(rl._attr(rl.RTR), e.IBV_QP_STATE)
    ud.modify(rl._attr(RTS, sq_psn=UD_PSN), e.IBV_QP_STATE | e.IBV_QP_SQ_PSN)
    node.snap("ud rts", ud, pud, UD_PSN)

    psn = START_PSN
    for k, ops in enumerate(ROUNDS):
        rc_round(node, ctl, ops, peer["addr"], peer["rkey"])
        psn += sum(npkts(n) for _, n in ops)
        # The peer sent the same requests: it is at the same PSN.
        node.snap(f"rc after round {k}", rc, prc, psn, psn)

    # UD: three sends each way.
    ah = AH(node.pd, attr=AHAttr(gr=GlobalRoute(dgid=GID(peer["gid"]), sgid_index=node.gid_index, hop_limit=64),
                                 is_global=1, port_num=1))
    for i in range(3):
        ud.post_recv(RecvWR(wr_id=200 + i, num_sge=1, sg=[SGE(node.mr.buf + 32768, 4096, node.mr.lkey)]))
    ctl.send({"posted": True})
    ctl.recv()
    for i in range(3):
        wr = SendWR(wr_id=300 + i, opcode=SEND, num_sge=1, sg=[SGE(node.mr.buf, 100 + i, node.mr.lkey)])
        wr.set_wr_ud(ah, pud, QKEY)
        ud.post_send(wr)
    node.wait(6, "ud sends")
    ctl.send({"done": True})
    ctl.recv()
    node.snap("ud after sends", ud, pud, UD_PSN + 3)

    rc.modify(rl._attr(SQD), e.IBV_QP_STATE)
    for _ in range(200):
        if rc.query(e.IBV_QP_STATE)[0].sq_draining == 0:
            break
        rl.poll_none(node.cq, 0.02)
    node.snap("rc sqd", rc, prc, psn, psn)
    rc.modify(rl._attr(RTS), e.IBV_QP_STATE)
    # Both sides in RTS again before either moves to ERR.
    ctl.send({"rts": True})
    ctl.recv()
    rc.modify(rl._attr(ERR), e.IBV_QP_STATE)
    node.snap("rc err", rc, prc, psn, psn)
    ud.modify(rl._attr(ERR), e.IBV_QP_STATE)
    node.snap("ud err", ud, pud, UD_PSN + 3)
    rc.modify(rl._attr(RESET), e.IBV_QP_STATE)
    node.snap("rc reset again", rc, prc, psn, psn)
    ud.modify(rl._attr(RESET), e.IBV_QP_STATE)
    node.snap("ud reset again", ud, pud, UD_PSN + 3)
    # A new sq_psn in RTS replaces the live one; rq_psn in RTR likewise.
    rl.connect(rc, rl.ACC_ALL, node.gid_index, peer["gid"], prc, 0x42, 0x4242)
    node.snap("rc rts again", rc, prc, 0x4242, 0x42)

    ctl.send({"snaps": node.snaps, "driver": DRIVER})
    theirs = ctl.recv()
    diffs = list(node.expect)
    if len(theirs["snaps"]) != len(node.snaps):
        diffs.append(f"{len(node.snaps)} queries here, {len(theirs['snaps'])} on the peer")
    for (label, mine), (plabel, other) in zip(node.snaps, theirs["snaps"]):
        for key in mine:
            if mine[key] != other.get(key):
                diffs.append(f"{label}: {key} {mine[key]} here ({DRIVER}), "
                             f"{other.get(key)} on the peer ({theirs['driver']})")
    for d in diffs:
        log("DIFF", d)
    ctl.send({"diffs": len(diffs)})
    peer_diffs = ctl.recv()["diffs"]
    rl.poll_none(node.cq, 0.05)
    for obj in (ah, ud, rc, node.mr, node.cq, node.pd, node.ctx):
        obj.close()
    if diffs or peer_diffs:
        raise TestFailure(f"{len(diffs)} differences here, {peer_diffs} on the peer")
    log(f"qp_query: {len(node.snaps)} queries equal ({DRIVER} and {theirs['driver']}); "
        f"{node.res_checks} resource entries checked")


if __name__ == "__main__":
    sys.exit(rl.run_main(body))
