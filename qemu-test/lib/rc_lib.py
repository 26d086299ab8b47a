# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
"""Shared pieces of the pyverbs tests that run RC traffic (integrity.py,
remote_errors.py, qp_query.py, fuzz_vm.py, soak.py, ...), on testlib.py:
roles, the RoCE v2 GID of an address, a TCP control channel between the
nodes, RC QP setup (and UC, UD and address handles), CQ polling and buffer
access.

Node 2 is the server, node 1 the client. The control channel is a TCP
connection over eth0's IPv4 addresses (node 2 listens, unless told
otherwise: soak.py runs both ways at once); it carries JSON lines (QPN,
PSN, GID, rkeys and addresses, then whatever the test needs to stay in
step). A side that fails sends {"abort": reason} first, so the other side
stops with that reason instead of waiting for its timeout.
"""

import ctypes
import errno
import gc
import ipaddress
import json
import socket
import sys
import time

from pyverbs.addr import AH, AHAttr, GID, GlobalRoute
from pyverbs.pyverbs_error import PyverbsRDMAError
from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr
import pyverbs.enums as e

from testlib import DEV, NODE, NODE_IP, kmemleak_clean, kmemleak_clear

RC = e.IBV_QPT_RC
RESET, INIT, RTR, RTS, ERR = (e.IBV_QPS_RESET, e.IBV_QPS_INIT, e.IBV_QPS_RTR,
                              e.IBV_QPS_RTS, e.IBV_QPS_ERR)

ACC_ALL = (e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE |
           e.IBV_ACCESS_REMOTE_READ | e.IBV_ACCESS_REMOTE_ATOMIC)

WC_STATUS = {getattr(e, n): n[len("IBV_WC_"):] for n in dir(e)
             if n.startswith("IBV_WC_") and n.endswith(("_ERR", "SUCCESS"))}
QP_STATE = {RESET: "RESET", INIT: "INIT", RTR: "RTR", RTS: "RTS",
            e.IBV_QPS_SQD: "SQD", e.IBV_QPS_SQE: "SQE", ERR: "ERR"}


def status_name(st):
    return WC_STATUS.get(st, str(st))


# Set by a test that runs several workers on a node (soak.py's lanes), so
# their lines tell apart.
LOG_TAG = ""


def log(*args):
    print(f"[node{NODE}{LOG_TAG} {time.monotonic():8.2f}]", *args, flush=True)


class TestFailure(Exception):
    pass


def is_server():
    return NODE == 2


def is_client():
    return NODE == 1


def server_ip():
    """Node 2's IPv4 address, on the client's subnet."""
    return NODE_IP.rsplit(".", 1)[0] + ".2"


def peer_ip():
    """The other node's IPv4 address: node 2's on node 1, node 1's on node 2."""
    return NODE_IP.rsplit(".", 1)[0] + (".1" if NODE == 2 else ".2")


def gid_index(ip, wait=30.0):
    """(index, gid string) of the RoCE v2 GID of this node's address ip
    (IPv4, as a v4-mapped GID, or IPv6). The table fills in shortly after
    the address appears, so it is polled for a while."""
    addr = ipaddress.ip_address(ip)
    if addr.version == 4:
        addr = ipaddress.IPv6Address("::ffff:" + ip)
    want = addr.exploded
    base = f"/sys/class/infiniband/{DEV}/ports/1"
    deadline = time.monotonic() + wait
    while True:
        for i in range(64):
            try:
                with open(f"{base}/gids/{i}") as f:
                    gid = f.read().strip()
                if gid != want:
                    continue
                with open(f"{base}/gid_attrs/types/{i}") as f:
                    typ = f.read().strip()
            except OSError:
                continue
            if typ == "RoCE v2":
                return i, gid
        if time.monotonic() > deadline:
            raise TestFailure(f"no RoCE v2 GID for {ip} ({want}) on {DEV}")
        time.sleep(0.5)


class Ctl:
    """The control channel: JSON objects, one a line."""

    PORT = 18620

    def __init__(self, sock):
        sock.settimeout(300)
        self.sock = sock
        self.f = sock.makefile("rwb")

    @classmethod
    def open(cls, port=PORT, listen=None):
        """The channel on TCP port: this node listens when listen (by
        default on the server), else it connects to the other node."""
        if listen is None:
            listen = is_server()
        if listen:
            ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            ls.bind(("", port))
            ls.listen(1)
            ls.settimeout(300)
            sock, _ = ls.accept()
            ls.close()
        else:
            deadline = time.monotonic() + 300
            while True:
                try:
                    sock = socket.create_connection((peer_ip(), port), timeout=5)
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.3)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return cls(sock)

    def send(self, obj):
        self.f.write(json.dumps(obj).encode() + b"\n")
        self.f.flush()

    def recv(self):
        line = self.f.readline()
        if not line:
            raise TestFailure("the peer closed the control channel")
        obj = json.loads(line)
        if isinstance(obj, dict) and "abort" in obj:
            raise TestFailure(f"the peer failed: {obj['abort']}")
        return obj

    def abort(self, why):
        try:
            self.send({"abort": why})
        except OSError:
            pass


def make_qp(pd, scq, rcq, wr=32, sge=4, inline=64):
    cap = QPCap(max_send_wr=wr, max_recv_wr=wr, max_send_sge=sge,
                max_recv_sge=sge, max_inline_data=inline)
    # Only requests flagged IBV_SEND_SIGNALED complete (pyverbs' WRs are,
    # unless told otherwise).
    return QP(pd, QPInitAttr(qp_type=RC, scq=scq, rcq=rcq, cap=cap, sq_sig_all=0))


def _attr(state, **kw):
    a = QPAttr(qp_state=state)
    for k, v in kw.items():
        setattr(a, k, v)
    return a


def ah_attr(sgid_index, dgid):
    """The global route of port 1 towards dgid (a GID string) from
    sgid_index, as QP paths and address handles take it."""
    return AHAttr(gr=GlobalRoute(dgid=GID(dgid), sgid_index=sgid_index, hop_limit=64),
                  is_global=1, port_num=1)


def modify_with_path(qp, attr, mask, tries=10):
    """qp.modify with an address vector: the kernel resolves the peer's MAC
    for it (ARP or neighbour discovery), which a lossy link (loss.sh) can
    time out (ETIMEDOUT); each try asks again."""
    for i in range(tries):
        try:
            qp.modify(attr, mask)
            return
        except PyverbsRDMAError as err:
            if err.error_code != errno.ETIMEDOUT or i == tries - 1:
                raise
            time.sleep(1)


def connect(qp, access, sgid_index, dgid, dqpn, rq_psn, sq_psn,
            mtu=e.IBV_MTU_1024, rd_atomic=8, timeout=14, retry=7):
    """RESET -> INIT -> RTR -> RTS of an RC QP towards (dgid, dqpn)."""
    qp.modify(_attr(INIT, pkey_index=0, port_num=1, qp_access_flags=access),
              e.IBV_QP_STATE | e.IBV_QP_PKEY_INDEX | e.IBV_QP_PORT |
              e.IBV_QP_ACCESS_FLAGS)
    a = _attr(RTR, path_mtu=mtu, dest_qp_num=dqpn, rq_psn=rq_psn,
              max_dest_rd_atomic=rd_atomic, min_rnr_timer=1)
    a.ah_attr = ah_attr(sgid_index, dgid)
    modify_with_path(qp, a, e.IBV_QP_STATE | e.IBV_QP_AV | e.IBV_QP_PATH_MTU |
                     e.IBV_QP_DEST_QPN | e.IBV_QP_RQ_PSN |
                     e.IBV_QP_MAX_DEST_RD_ATOMIC | e.IBV_QP_MIN_RNR_TIMER)
    qp.modify(_attr(RTS, timeout=timeout, retry_cnt=retry, rnr_retry=7,
                    sq_psn=sq_psn, max_rd_atomic=rd_atomic),
              e.IBV_QP_STATE | e.IBV_QP_TIMEOUT | e.IBV_QP_RETRY_CNT |
              e.IBV_QP_RNR_RETRY | e.IBV_QP_SQ_PSN | e.IBV_QP_MAX_QP_RD_ATOMIC)


def connect_uc(qp, sgid_index, dgid, dqpn, rq_psn, sq_psn, mtu=e.IBV_MTU_1024,
               access=e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE):
    """RESET -> INIT -> RTR -> RTS of a UC QP towards (dgid, dqpn)."""
    qp.modify(_attr(INIT, pkey_index=0, port_num=1, qp_access_flags=access),
              e.IBV_QP_STATE | e.IBV_QP_PKEY_INDEX | e.IBV_QP_PORT |
              e.IBV_QP_ACCESS_FLAGS)
    a = _attr(RTR, path_mtu=mtu, dest_qp_num=dqpn, rq_psn=rq_psn)
    a.ah_attr = ah_attr(sgid_index, dgid)
    modify_with_path(qp, a, e.IBV_QP_STATE | e.IBV_QP_AV | e.IBV_QP_PATH_MTU |
                     e.IBV_QP_DEST_QPN | e.IBV_QP_RQ_PSN)
    qp.modify(_attr(RTS, sq_psn=sq_psn), e.IBV_QP_STATE | e.IBV_QP_SQ_PSN)


def init_ud(qp, qkey):
    """RESET -> INIT of a UD QP with Q_Key qkey."""
    qp.modify(_attr(INIT, pkey_index=0, port_num=1, qkey=qkey),
              e.IBV_QP_STATE | e.IBV_QP_PKEY_INDEX | e.IBV_QP_PORT | e.IBV_QP_QKEY)


def connect_ud(qp, qkey, sq_psn=0):
    """RESET -> INIT -> RTR -> RTS of a UD QP with Q_Key qkey."""
    init_ud(qp, qkey)
    qp.modify(_attr(RTR), e.IBV_QP_STATE)
    qp.modify(_attr(RTS, sq_psn=sq_psn), e.IBV_QP_STATE | e.IBV_QP_SQ_PSN)


def make_ah(pd, sgid_index, dgid):
    """An address handle towards dgid (a GID string) from sgid_index."""
    return AH(pd, attr=ah_attr(sgid_index, dgid))


def qp_state(qp):
    attr, _ = qp.query(e.IBV_QP_STATE)
    return attr.qp_state


def poll(cq, n, timeout=30.0, what="completions"):
    """n work completions from cq, in order; fails after timeout seconds."""
    wcs = []
    deadline = time.monotonic() + timeout
    idle = 0.0002
    while len(wcs) < n:
        nc, got = cq.poll(n - len(wcs))
        if nc:
            wcs.extend(got[:nc])
            idle = 0.0002
            continue
        if time.monotonic() > deadline:
            err = TestFailure(f"{what}: {len(wcs)} of {n} after {timeout:.0f}s")
            err.partial = wcs
            raise err
        time.sleep(idle)
        idle = min(idle * 2, 0.005)
    return wcs


def poll_upto(cq, n, timeout=30.0):
    """Up to n work completions from cq: those that arrive within timeout
    seconds (all n, unless something is wrong)."""
    try:
        return poll(cq, n, timeout)
    except TestFailure as err:
        return err.partial


def poll_none(cq, wait=0.3):
    """The completions that arrive within wait seconds (usually none)."""
    got_all = []
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        nc, got = cq.poll(16)
        got_all.extend(got[:nc])
        if not nc:
            time.sleep(0.01)
    return got_all


def put(mr, off, data):
    ctypes.memmove(mr.buf + off, bytes(data), len(data))


def get(mr, off, n):
    return ctypes.string_at(mr.buf + off, n)


def first_diff(got, want):
    """Index of the first byte where got and want differ, or None."""
    if got == want:
        return None
    n = min(len(got), len(want))
    step = 4096
    for i in range(0, n, step):
        if got[i:i + step] != want[i:i + step]:
            for j in range(i, min(i + step, n)):
                if got[j] != want[j]:
                    return j
    return None if len(got) == len(want) else n


def count_diff(got, want):
    return sum(1 for a, b in zip(got, want) if a != b) + abs(len(got) - len(want))


def run_main(body):
    """Runs body(ctl) on nodes 1 and 2; other nodes have nothing to do.
    Then, on a kernel with kmemleak, nothing may leak.
    Exits 1 on a failure, after telling the peer."""
    if NODE not in (1, 2):
        log("not part of this two-node test")
        return 0
    kmemleak_clear()
    ctl = None
    try:
        ctl = Ctl.open()
        body(ctl)
        # Both sides have destroyed their objects when the peer's last
        # message arrives; the channel's end says so.
        ctl.send({"bye": True})
        ctl.recv()
        gc.collect()
        if not kmemleak_clean():
            log("FAIL: kmemleak reports leaks")
            return 1
        return 0
    except Exception as err:  # noqa: BLE001 - every failure ends the test
        log(f"FAIL: {type(err).__name__}: {err}")
        if ctl is not None:
            ctl.abort(f"node{NODE}: {err}")
        import traceback
        traceback.print_exc(file=sys.stdout)
        sys.stdout.flush()
        return 1
