#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
"""A user process that holds an rxe device open while a shell test takes
the device away (rdma link delete, netdev removal, rmmod, namespace
deletion, rdma dev set netns): not a test of its own.

    uverbs_holder.py DEV DIR gone|live

It opens DEV with a PD, a completion channel, a CQ, an MR and an RC QP in
INIT (its CQ and QP rings mapped), writes DIR/ready and waits for DIR/go.
Then, with "gone" (the core disassociated its context: the driver has
disassociate_ucontext), every verb that reaches the kernel must fail with
EIO, the async event queue must hold IBV_EVENT_DEVICE_FATAL and the mapped
rings must still read; with "live" (the removal waits for this process:
a driver without disassociate_ucontext) the same verbs must work. Either
way every object must close cleanly and leave no mapping behind. The exit
status is 0 when all checks passed.
"""
import os
import signal
import sys
import time

from pyverbs.cq import CQ, CompChannel
from pyverbs.device import Context
from pyverbs.mr import MR
from pyverbs.pd import PD
import pyverbs.enums as e

import rc_lib as rl
from testlib import check, expect, outcome, summary, u32, uverbs_maps


def wait_for(path, timeout):
    deadline = time.time() + timeout
    while not os.path.exists(path):
        if time.time() > deadline:
            return False
        time.sleep(0.1)
    return True


def fatal_event(ctx):
    """Reads async events until IBV_EVENT_DEVICE_FATAL; the types read
    before it (port and GID changes may come first), and whether it came
    within 20 s."""
    def timeout(_sig, _frame):
        raise TimeoutError

    seen = []
    old = signal.signal(signal.SIGALRM, timeout)
    signal.alarm(20)
    try:
        while True:
            ev = ctx.get_async_event()
            kind = ev.event_type
            ev.ack()
            if kind == e.IBV_EVENT_DEVICE_FATAL:
                return seen, True
            seen.append(kind)
    except TimeoutError:
        return seen, False
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def main():
    dev, state_dir, mode = sys.argv[1], sys.argv[2], sys.argv[3]
    want = "EIO" if mode == "gone" else "ok"
    ctx = Context(name=dev)
    pd = PD(ctx)
    ch = CompChannel(ctx)
    cq = CQ(ctx, 64, None, ch, 0)
    mr = MR(pd, 4096, e.IBV_ACCESS_LOCAL_WRITE)
    qp = rl.make_qp(pd, cq, cq, wr=16, sge=1, inline=0)
    qp.modify(rl._attr(rl.INIT, pkey_index=0, port_num=1, qp_access_flags=0),
              e.IBV_QP_STATE | e.IBV_QP_PKEY_INDEX | e.IBV_QP_PORT | e.IBV_QP_ACCESS_FLAGS)
    maps = uverbs_maps()
    check(f"{dev}: rings mapped", len(maps) >= 2, f"{len(maps)} uverbs mappings")
    with open(os.path.join(state_dir, "ready"), "w"):
        pass
    if not wait_for(os.path.join(state_dir, "go"), 600):
        check("told to go on", False, "no go file within 600 s")
        return summary("uverbs_holder")

    expect(f"{mode}: query_device", ctx.query_device, want)
    expect(f"{mode}: alloc_pd", lambda: PD(ctx).close(), want)
    expect(f"{mode}: query_qp", lambda: qp.query(e.IBV_QP_STATE), want)
    expect(f"{mode}: req_notify_cq", lambda: cq.req_notify(), want)
    # The rings stay mapped until the library unmaps them at destroy; they
    # must read, whatever the driver did with its own references.
    res, _ = outcome(lambda: [u32(a).value for a, _ in maps])
    check(f"{mode}: the mapped rings read", res == "ok", res)
    if mode == "gone":
        seen, fatal = fatal_event(ctx)
        check("gone: async event DEVICE_FATAL", fatal, f"only {seen}")
    for name, obj in (("QP", qp), ("MR", mr), ("CQ", cq), ("channel", ch), ("PD", pd),
                      ("context", ctx)):
        expect(f"{mode}: close {name}", obj.close, "ok")
    left = uverbs_maps()
    check(f"{mode}: no uverbs mapping left", not left, f"{len(left)} left")
    return summary("uverbs_holder")


if __name__ == "__main__":
    sys.exit(main())
