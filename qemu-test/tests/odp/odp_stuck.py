#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
"""An ODP fault that never returns, one node (LIST: odp-stuck-rs):

  qemu-test/run --debug --nodes 1 qemu-test/tests/odp/odp_stuck.py

A FUSE file system (qemu-test/lib/fuse_hold.py) answers everything the
kernel asks but READ, which it reads and never answers. An owner process
(this script as `owner`) maps a file of it MAP_PRIVATE without touching it, registers an ODP MR over the mapping and
makes two faults on it: a SEND from it (the requester of its QP A faults)
and an RDMA READ of it by its QP B (A's responder faults). Both faults wait
for the daemon for good. Then, while they do:

1. a bystander pair of RC QPs on ordinary memory (in this process) moves
   checked SENDs, WRITEs and READs;
2. deregistering the MR returns within seconds, and destroying QP A (the
   owner calls ibv_destroy_qp) gets past the
   destroy ioctl within seconds (the owner then waits in the provider's
   munmap of the rings: the core holds its mmap_lock during the fault);
3. the owner, killed, exits within seconds (its QPs, MR and PD stay
   until the faults end: the core's fault holds its mm, whose mappings of
   the uverbs file keep that file open);
4. the bystander pair still works.
Then the FUSE connection is aborted (fusectl), which ends the faults; the
owner's objects must then go, and `rdma link delete` and `rmmod` must
complete within their limits.

The faults stay stuck for well under the hung-task timeout (60 s), so a
report means a task hung on something else than the fault itself.
"""

import ctypes
import json
import os
import select
import signal
import subprocess
import sys
import time

import fuse_hold
from fuse_hold import FILE, FILE_SIZE, MNT, PAGE

SYS_MUNMAP = 11  # x86-64


# --- the owner of the stuck faults -------------------------------------------

def owner(path):
    """Makes the faults, reports, then destroys QP A when told."""
    from pyverbs.cq import CQ
    from pyverbs.device import Context
    from pyverbs.mr import MR
    from pyverbs.pd import PD
    from pyverbs.wr import RecvWR, SendWR, SGE
    import pyverbs.enums as e

    import rc_lib as r
    from testlib import DEV, NODE_IP

    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int,
                          ctypes.c_int, ctypes.c_int, ctypes.c_long]
    ctx = Context(name=DEV)
    pd = PD(ctx)
    idx, gid = r.gid_index(NODE_IP)
    cq = CQ(ctx, 64)
    qa = r.make_qp(pd, cq, cq, wr=16, sge=1)
    qb = r.make_qp(pd, cq, cq, wr=16, sge=1)
    r.connect(qa, r.ACC_ALL, idx, gid, qb.qp_num, 10, 20)
    r.connect(qb, r.ACC_ALL, idx, gid, qa.qp_num, 20, 10)
    fd = os.open(path, os.O_RDONLY)
    # Never touched by this process: only the driver faults it.
    addr = libc.mmap(None, FILE_SIZE, 3, 0x02, fd, 0)  # RW, MAP_PRIVATE
    if addr in (None, ctypes.c_void_p(-1).value):
        raise r.TestFailure(f"mmap: {os.strerror(ctypes.get_errno())}")
    odp = MR(pd, FILE_SIZE, e.IBV_ACCESS_ON_DEMAND | e.IBV_ACCESS_LOCAL_WRITE |
             e.IBV_ACCESS_REMOTE_READ, address=addr)
    sink = MR(pd, 2 * PAGE, e.IBV_ACCESS_LOCAL_WRITE)
    qb.post_recv(RecvWR(wr_id=1, num_sge=1, sg=[SGE(sink.buf, PAGE, sink.lkey)]))
    # The requester of A faults (SEND from the FUSE pages) ...
    qa.post_send(SendWR(wr_id=2, num_sge=1, sg=[SGE(odp.buf, PAGE, odp.lkey)],
                        send_flags=e.IBV_SEND_SIGNALED))
    # ... and A's responder (B reads the FUSE pages half a MiB further).
    rd = SendWR(wr_id=3, opcode=e.IBV_WR_RDMA_READ, num_sge=1,
                sg=[SGE(sink.buf + PAGE, PAGE, sink.lkey)], send_flags=e.IBV_SEND_SIGNALED)
    rd.set_wr_rdma(odp.rkey, odp.buf + FILE_SIZE // 2)
    qb.post_send(rd)
    # From here on this process allocates as little as it can: a fault
    # holds its mmap_lock, and a new mapping would wait for it.
    os.write(1, f"posted {qa.qp_num} {qb.qp_num}\n".encode())
    os.read(0, 64)
    odp.close()
    os.write(1, b"deregistered\n")
    qa.close()
    os.write(1, b"closed\n")
    os.read(0, 64)
    return 0


# --- the test ---------------------------------------------------------------

def main():
    from pyverbs.cq import CQ
    from pyverbs.device import Context
    from pyverbs.mr import MR
    from pyverbs.pd import PD
    from pyverbs.wr import RecvWR, SendWR, SGE
    import pyverbs.enums as e

    import rc_lib as r
    from testlib import DEV, DRIVER, NODE_IP, check, kernel_problems, rdma_resources, sh, summary

    module = "rdma_rxe_rs" if DRIVER == "rs" else "rdma_rxe"
    me = os.path.abspath(__file__)

    def qpns():
        out = subprocess.run(["rdma", "-j", "resource", "show", "qp"],
                             capture_output=True, text=True).stdout
        try:
            return {q.get("lqpn") for q in json.loads(out or "[]") if q.get("ifname") == DEV}
        except ValueError:
            return set()

    def wait_for(what, cond, limit):
        t0 = time.monotonic()
        while time.monotonic() - t0 < limit:
            if cond():
                r.log(f"{what}: {time.monotonic() - t0:.1f} s")
                return True
            time.sleep(0.1)
        r.log(f"{what}: not within {limit} s")
        return False

    def where(pid):
        """Logs where a process and the kernel's blocked tasks wait."""
        for f in ("wchan", "stack"):
            try:
                with open(f"/proc/{pid}/{f}") as fh:
                    r.log(f"owner {f}: {fh.read().strip()}")
            except OSError as err:
                r.log(f"owner {f}: {err.strerror}")
        try:
            with open("/proc/sysrq-trigger", "w") as fh:
                fh.write("w")
        except OSError:
            pass

    def syscall_of(pid):
        """The number of the system call pid waits in (-1: none, or gone)."""
        try:
            with open(f"/proc/{pid}/syscall") as fh:
                word = fh.read().split()[0]
        except (OSError, IndexError):
            return -1
        return int(word) if word.lstrip("-").isdigit() else -1

    def line_of(proc, limit):
        """A line of a child's stdout within limit seconds ('' if none)."""
        ready, _, _ = select.select([proc.stdout], [], [], limit)
        return proc.stdout.readline().decode().strip() if ready else ""

    # The bystander: a pair on ordinary memory, in this process.
    ctx = Context(name=DEV)
    pd = PD(ctx)
    idx, gid = r.gid_index(NODE_IP)
    cq = CQ(ctx, 64)
    qx = r.make_qp(pd, cq, cq, wr=16, sge=1)
    qy = r.make_qp(pd, cq, cq, wr=16, sge=1)
    r.connect(qx, r.ACC_ALL, idx, gid, qy.qp_num, 30, 40)
    r.connect(qy, r.ACC_ALL, idx, gid, qx.qp_num, 40, 30)
    mx = MR(pd, 4 * PAGE, r.ACC_ALL)
    my = MR(pd, 4 * PAGE, r.ACC_ALL)

    def bystander(n):
        data = bytes(((i + n) * 13) & 0xff for i in range(PAGE))
        r.put(mx, 0, data)
        qy.post_recv(RecvWR(wr_id=n, num_sge=1, sg=[SGE(my.buf, PAGE, my.lkey)]))
        qx.post_send(SendWR(wr_id=n, num_sge=1, sg=[SGE(mx.buf, PAGE, mx.lkey)],
                            send_flags=e.IBV_SEND_SIGNALED))
        w = SendWR(wr_id=n, opcode=e.IBV_WR_RDMA_WRITE, num_sge=1,
                   sg=[SGE(mx.buf, PAGE, mx.lkey)], send_flags=e.IBV_SEND_SIGNALED)
        w.set_wr_rdma(my.rkey, my.buf + PAGE)
        qx.post_send(w)
        rd = SendWR(wr_id=n, opcode=e.IBV_WR_RDMA_READ, num_sge=1,
                    sg=[SGE(mx.buf + 2 * PAGE, PAGE, mx.lkey)], send_flags=e.IBV_SEND_SIGNALED)
        rd.set_wr_rdma(my.rkey, my.buf + PAGE)
        qx.post_send(rd)
        try:
            wcs = r.poll(cq, 4, timeout=20)
        except r.TestFailure as err:
            return str(err)
        bad = [r.status_name(w.status) for w in wcs if w.status != e.IBV_WC_SUCCESS]
        if bad:
            return f"completions {bad}"
        if r.get(my, 0, PAGE) != data or r.get(my, PAGE, PAGE) != data or \
                r.get(mx, 2 * PAGE, PAGE) != data:
            return "data differs"
        return ""

    err = bystander(0)
    check("bystander before", not err, err)
    base = rdma_resources()
    base_qps = qpns()

    os.makedirs(MNT, exist_ok=True)
    if not os.path.ismount("/sys/fs/fuse/connections"):
        sh("mount -t fusectl fusectl /sys/fs/fuse/connections")
    fuse = subprocess.Popen([sys.executable, fuse_hold.__file__], stdout=subprocess.PIPE)
    path = os.path.join(MNT, FILE)
    if not wait_for("FUSE file visible", lambda: os.path.exists(path), 20):
        check("FUSE mount", False)
        fuse.kill()
        return summary("odp_stuck")
    own = subprocess.Popen([sys.executable, me, "owner", path],
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    posted = line_of(own, 60).split()
    check("owner posted its faulting work", len(posted) == 3, " ".join(posted))
    held = line_of(fuse, 20)
    check("the daemon holds a READ (a fault is stuck)", held.startswith("daemon: READ held"), held)
    t_stuck = time.monotonic()

    # Rounds for a few seconds, at least three.
    n, errs = 0, []
    while n < 3 or time.monotonic() - t_stuck < 5:
        n += 1
        err = bystander(n)
        if err:
            errs.append(f"round {n}: {err}")
    check(f"bystander during the stuck faults ({n} rounds)", not errs, "; ".join(errs[:3]))

    own.stdin.write(b"destroy\n")
    own.stdin.flush()
    said = line_of(own, 10)
    if said != "deregistered":
        where(own.pid)
    check("deregistration of the faulting MR completes", said == "deregistered", said)
    # The QP leaves `rdma resource` before the driver's destroy runs, so
    # that says nothing. The owner's system call does: ibv_destroy_qp is
    # the destroy ioctl, then the provider's munmap of the rings, which
    # waits for the mmap_lock the fault holds (or "closed" if it does not).
    said = []

    def destroyed():
        if not said and select.select([own.stdout], [], [], 0)[0]:
            said.append(own.stdout.readline().decode().strip())
        return said == ["closed"] or syscall_of(own.pid) == SYS_MUNMAP

    gone = wait_for("QP A destroyed (the owner is past the destroy ioctl)", destroyed, 10)
    if not gone:
        where(own.pid)
    check("destroy of the faulting QP completes", gone,
          f"the owner is in system call {syscall_of(own.pid)}")

    own.send_signal(signal.SIGKILL)
    exited = wait_for("owner exit", lambda: own.poll() is not None, 10)
    if not exited:
        where(own.pid)
    check("the owner exits when killed", exited)
    # Its objects stay until the faults end: the core's fault holds a
    # reference on its mm (mmget), whose mappings of the uverbs file keep
    # that file open.
    r.log(f"objects while the faults are stuck: {rdma_resources()} (before the owner: {base})")

    err = bystander(n + 1)
    check("bystander after the owner's exit", not err, err)
    r.log(f"faults stuck for {time.monotonic() - t_stuck:.1f} s; aborting the FUSE connection")

    for c in os.listdir("/sys/fs/fuse/connections"):
        with open(f"/sys/fs/fuse/connections/{c}/abort", "w") as f:
            f.write("1")
    check("the daemon ends after the abort",
          wait_for("daemon exit", lambda: fuse.poll() is not None, 10))
    r.log(line_of(fuse, 0) or "(no word from the daemon)")
    sh(f"umount -l {MNT}")
    own.wait()
    check("the owner's objects are gone once the faults ended",
          wait_for("owner's objects gone", lambda: qpns() <= base_qps and rdma_resources() == base, 20),
          f"{rdma_resources()} (before: {base}), QPs {qpns()}")

    for o in (mx, my, qx, qy, cq, pd, ctx):
        o.close()
    t0 = time.monotonic()
    try:
        res = subprocess.run(["rdma", "link", "delete", DEV], timeout=60,
                             capture_output=True, text=True)
        check(f"rdma link delete {DEV}", res.returncode == 0, res.stderr.strip())
        res = subprocess.run(["rmmod", module], timeout=60, capture_output=True, text=True)
        check(f"rmmod {module}", res.returncode == 0, res.stderr.strip())
    except subprocess.TimeoutExpired as err:
        check("device removal and rmmod", False, f"{err.cmd} still running after 60 s")
    r.log(f"link delete and rmmod: {time.monotonic() - t0:.1f} s")
    problems = kernel_problems()
    check("no kernel problem reported", not problems, "; ".join(problems[:3]))
    return summary("odp_stuck")


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "owner":
        sys.exit(owner(sys.argv[2]))
    sys.exit(main())
