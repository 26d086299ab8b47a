#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
"""`rdma -dd resource show` on a QP that runs out of transport retries, on one
rs node:

  qemu-test/run --nodes 1 --drivers rs qemu-test/tests/verbs/res_show.py

An RC QP is connected to a QPN nobody owns on the node's own GID (every
packet it sends is dropped at the receiver as for an unknown QP), with a
short local ACK timeout and two retries. Before the SEND the entry shows
the QP's set-up (PSNs, limits, nothing outstanding); while the message is
retried, the outstanding WQE, an armed retransmit timer and the retries
left; once it fails, the QP in ERR with no retry left and "transport retry
counter exceeded" as its last error, the send CQ holding the error
completion (`cqe_used`) until it is polled. The raw record (`rdma -r`) carries
the same PSNs. The entries are printed, as docs/observing.md shows them.

Exits non-zero on any difference.
"""

import json
import os
import struct
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
from rc_lib import log
from testlib import DEV, DRIVER, NODE_IP, check, rdma_res_entry, res_int, res_raw_bytes, summary

SQ_PSN = 0x10000
RQ_PSN = 0x20000
# 4.096 us * 2^16: about 0.27 s per try, long enough to look at it.
TIMEOUT = 16
RETRIES = 2
NOBODY = 0xFFFF00


def show(what, qpn):
    out = subprocess.run(["rdma", "-dd", "resource", "show", "qp", "link", f"{DEV}/1", "lqpn", str(qpn)],
                         capture_output=True, text=True).stdout.strip()
    log(f"{what}:\n{out}")


def my_cqn():
    out = subprocess.run(["rdma", "-j", "resource", "show", "cq", "dev", DEV], capture_output=True,
                         text=True).stdout
    mine = [c for c in json.loads(out or "[]") if c.get("pid") == os.getpid()]
    return mine[0]["cqn"] if len(mine) == 1 else -1


def main():
    if DRIVER != "rs":
        log("res_show: rs only")
        return 0
    gidx, gid = rl.gid_index(NODE_IP)
    ctx = Context(name=DEV)
    pd = PD(ctx)
    cq = CQ(ctx, 64)
    mr = MR(pd, 4096, e.IBV_ACCESS_LOCAL_WRITE)
    qp = rl.make_qp(pd, cq, cq, wr=8, sge=1, inline=0)
    rl.connect(qp, rl.ACC_ALL, gidx, gid, NOBODY, RQ_PSN, SQ_PSN, timeout=TIMEOUT, retry=RETRIES)
    qpn, cqn = qp.qp_num, my_cqn()
    check("the CQ's restrack entry is found", cqn >= 0, f"cqn {cqn}")

    ent = rdma_res_entry("qp", "lqpn", qpn) or {}
    show("connected", qpn)
    for name, want in (("sq_psn", SQ_PSN), ("unacked_psn", SQ_PSN), ("rq_psn", RQ_PSN), ("sq_wqes", 0),
                       ("retry_left", RETRIES), ("retry_cnt", RETRIES), ("rnr_retry", 7),
                       ("retrans_timer", 0), ("rd_atomic_out", 0), ("max_rd_atomic", 8)):
        got = res_int(ent, name) if name in ent else None
        check(f"connected: {name} {want:#x}", got == want, f"got {got}")
    check("connected: no last error", ent.get("last_err") == "none", repr(ent.get("last_err")))
    raw = rdma_res_entry("qp", "lqpn", qpn, raw=True) or {}
    data = res_raw_bytes(raw) if "data" in raw else b""
    check("raw record: version 1 and 19 words", len(data) == 77 and data[:1] == b"\x01", data.hex())
    if len(data) == 77:
        check("raw record: the PSNs", struct.unpack_from("<3I", data, 1) == (SQ_PSN, SQ_PSN, RQ_PSN),
              data[1:13].hex())

    qp.post_send(SendWR(wr_id=1, opcode=e.IBV_WR_SEND, num_sge=1, sg=[SGE(mr.buf, 64, mr.lkey)]))
    # While it is retried: one WQE out, the timer armed, one packet sent.
    seen = None
    deadline = time.monotonic() + 2
    while time.monotonic() < deadline:
        ent = rdma_res_entry("qp", "lqpn", qpn) or {}
        if ent.get("state") == "RTS" and res_int(ent, "sq_wqes") == 1 and res_int(ent, "retrans_timer") == 1:
            seen = ent
            break
    check("retrying: one WQE outstanding with the retransmit timer armed", seen is not None, repr(ent))
    if seen:
        check("retrying: sq_psn one past, unacked_psn at the SEND",
              (res_int(seen, "sq_psn"), res_int(seen, "unacked_psn")) == (SQ_PSN + 1, SQ_PSN),
              f"{seen.get('sq_psn')} {seen.get('unacked_psn')}")
        check("retrying: retries left within the limit", 0 <= res_int(seen, "retry_left") <= RETRIES,
              str(seen.get("retry_left")))

    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        ent = rdma_res_entry("qp", "lqpn", qpn) or {}
        if ent.get("state") == "ERR":
            break
        time.sleep(0.01)
    show("failed", qpn)
    check("failed: QP in ERR", ent.get("state") == "ERR", repr(ent.get("state")))
    check("failed: last_err names the retry exhaustion",
          ent.get("last_err") == "transport retry counter exceeded", repr(ent.get("last_err")))
    check("failed: no retry left", "retry_left" in ent and res_int(ent, "retry_left") == 0,
          str(ent.get("retry_left")))
    check("failed: retransmit timer stopped", "retrans_timer" in ent and res_int(ent, "retrans_timer") == 0,
          str(ent.get("retrans_timer")))
    cqe = rdma_res_entry("cq", "cqn", cqn) or {}
    log(f"cq entry: {cqe}")
    check("the error completion waits in the CQ", "cqe_used" in cqe and res_int(cqe, "cqe_used") == 1,
          str(cqe.get("cqe_used")))
    wcs = rl.poll(cq, 1, timeout=5, what="the error completion")
    check("it is RETRY_EXC_ERR", wcs[0].status == e.IBV_WC_RETRY_EXC_ERR, rl.status_name(wcs[0].status))
    cqe = rdma_res_entry("cq", "cqn", cqn) or {}
    check("polled: cqe_used 0", "cqe_used" in cqe and res_int(cqe, "cqe_used") == 0, str(cqe.get("cqe_used")))
    for obj in (qp, mr, cq, pd, ctx):
        obj.close()
    return summary("res_show")


if __name__ == "__main__":
    sys.exit(main())
