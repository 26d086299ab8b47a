#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""UD multicast through the RDMA CM, one member of a group: a receiver
that checks every message, or a sender that waits for each send's
completion before it leaves.

    mcast_cm.py recv GROUP BIND COUNT TAG
    mcast_cm.py send GROUP BIND COUNT TAG
    mcast_cm.py probe GROUP BIND 0 -

Both join GROUP (an IPv4 or IPv6 multicast address) from the RDMA device
of BIND (a local address) through librdmacm, which attaches the CM's UD QP
to the group; both print "joined" once the join event came. The receiver
posts COUNT receives first, each into its own buffer, then expects COUNT
messages "TAG:i:" (i = 0..COUNT-1, padded), in order, each once, from the
multicast QPN with the CM's Q_Key, and prints "received N/COUNT" after each.
The sender sends the COUNT messages signaled and takes each completion
before the next: a UD send's completion means the packet left, so no
message is lost to the sender's own teardown (mckey posts its sends
unsignaled and leaves right away; a driver that sends from a worker can
then still be holding some when the AH and QP go).

probe only joins and leaves. Exit 0 when all went through, 1 on a failure (the reason on stderr), 4
when the CM refuses the group (ENOTSUPP/EOPNOTSUPP: IPv6 groups on RoCE v2
in the kernels tested).
"""
import errno
import sys

from pyverbs.addr import AH
from pyverbs.cmid import CMID, AddrInfo, CMEventChannel, CMEvent, UDParam
from pyverbs.pyverbs_error import PyverbsError, PyverbsRDMAError
from pyverbs.qp import QPCap, QPInitAttr
import pyverbs.cm_enums as ce
import pyverbs.enums as e

GRH = 40
MSG = 64
MCAST_QPN = 0xFFFFFF
UDP_QKEY = 0x01234567


def fail(msg):
    print(f"mcast_cm: FAIL: {msg}", file=sys.stderr, flush=True)
    sys.exit(1)


def event(chan, want):
    ev = CMEvent(chan)
    got = ev.event_type
    param = UDParam(ev) if got == ce.RDMA_CM_EVENT_MULTICAST_JOIN else None
    text = ev.event_str()
    ev.ack_cm_event()
    if got != want:
        fail(f"CM event {text}, expected {want}")
    return param


def message(tag, i):
    return f"{tag}:{i}:".encode().ljust(MSG, b".")


def main():
    if len(sys.argv) != 6 or sys.argv[1] not in ("send", "recv", "probe"):
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    role, group, bind, count, tag = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
    chan = CMEventChannel()
    cmid = CMID(creator=chan, port_space=ce.RDMA_PS_UDP)
    ai = AddrInfo(src=bind, dst=group, port_space=ce.RDMA_PS_UDP)
    cmid.bind_addr(ai)
    cmid.resolve_addr(ai, 2000)
    event(chan, ce.RDMA_CM_EVENT_ADDR_RESOLVED)
    count = max(count, 1)
    cap = QPCap(max_send_wr=count, max_recv_wr=count, max_send_sge=1, max_recv_sge=1)
    cmid.create_qp(QPInitAttr(qp_type=e.IBV_QPT_UD, cap=cap))
    mrs = [cmid.reg_msgs(GRH + MSG) for _ in range(count if role == "recv" else 1)]
    if role == "recv":
        for mr in mrs:
            cmid.post_recv(mr, GRH + MSG)
    try:
        cmid.join_multicast(addr=AddrInfo(src=group, port_space=ce.RDMA_PS_UDP))
    except PyverbsRDMAError as ex:
        if ex.error_code in (errno.EOPNOTSUPP, 524):  # 524: the kernel's ENOTSUPP
            print(f"mcast_cm: the CM refuses group {group}: {ex}", flush=True)
            sys.exit(4)
        raise
    ud = event(chan, ce.RDMA_CM_EVENT_MULTICAST_JOIN)
    print(f"mcast_cm: joined {group} qpn {cmid.qpn} (group qpn {ud.qp_num:#x} qkey {ud.qkey:#x})", flush=True)
    if ud.qp_num != MCAST_QPN or ud.qkey != UDP_QKEY:
        fail(f"join gave qpn {ud.qp_num:#x} qkey {ud.qkey:#x}")
    if role == "probe":
        pass
    elif role == "send":
        ah = AH(cmid.pd, attr=ud.ah_attr)
        for i in range(count):
            mrs[0].write(message(tag, i), MSG)
            cmid.post_ud_send(mrs[0], ah, rqpn=ud.qp_num, flags=e.IBV_SEND_SIGNALED, length=MSG)
            wc = cmid.get_send_comp()
            if wc is None or wc.status != e.IBV_WC_SUCCESS:
                fail(f"send {i}: completion {wc.status if wc else None}")
        print(f"mcast_cm: sent {count} to {group}", flush=True)
    else:
        for i in range(count):
            wc = cmid.get_recv_comp()
            if wc is None or wc.status != e.IBV_WC_SUCCESS:
                fail(f"receive {i}: completion {wc.status if wc else None}")
            if wc.byte_len != GRH + MSG:
                fail(f"receive {i}: {wc.byte_len} bytes, expected {GRH + MSG}")
            got = mrs[i].read(MSG, GRH)
            if got != message(tag, i):
                fail(f"receive {i}: got {got[:24]!r}, expected {message(tag, i)[:24]!r}")
            print(f"mcast_cm: received {i + 1}/{count}", flush=True)
    cmid.leave_multicast(AddrInfo(src=group, port_space=ce.RDMA_PS_UDP))
    cmid.close()
    chan.close()


if __name__ == "__main__":
    try:
        main()
    except PyverbsError as ex:
        fail(str(ex))
