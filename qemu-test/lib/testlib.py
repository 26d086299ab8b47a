# SPDX-License-Identifier: GPL-2.0
"""Helpers shared by every Python test: the guest's environment, counted
checks with errno expectations, memory and kmemleak checks, kernel log and
port counter reads, GID lookups, the mapped ring layout and raw
libibverbs. rc_lib.py builds the two-node tests on it.

The guest's root is the host's, shared over 9p, and guest-init puts this
folder (qemu-test/lib) on PYTHONPATH, so a test under qemu-test/tests
imports it by name (`import testlib`). It keeps one count of passed and
failed checks per process:

    from testlib import check, expect, summary
    check("CQ(1) holds 1", cq.cqe == 1)
    expect("CQ(0)", lambda: CQ(ctx, 0), "EINVAL")
    sys.exit(summary("verbs_cq"))

The kmemleak helpers run qemu-test/lib/lib.sh's kmemleak_clear and
kmemleak_scan, so shell and Python tests scan the same way. pyverbs is
imported only where needed, so tests that do without it (net_raw.py) can
use this module too.
"""
import ctypes
import errno
import os
import re
import select
import subprocess
import sys
import time

# What qemu-test/run and guest-init tell each guest (qemu-test/run,
# write_guest_env).
NODE = int(os.environ.get("NODE_INDEX", "0"))
NODE_COUNT = int(os.environ.get("NODE_COUNT", "0"))
NODE_IP = os.environ.get("NODE_IP", "")
NODE_IP6 = os.environ.get("NODE_IP6", "")
PEER_IPS = os.environ.get("PEER_IPS", "").split()
PEER_IP6S = os.environ.get("PEER_IP6S", "").split()
SHARED_DIR = os.environ.get("SHARED_DIR", "/tmp")
DEV = os.environ.get("RXE_DEV", "rxe0")
DRIVER = os.environ.get("RXE_DRIVER", "")
KERNEL = os.environ.get("RXE_KERNEL", "6.12")
DEBUG_KERNEL = os.environ.get("RXE_FLAVOUR") == "debug"
LIB_SH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib.sh")

passed = 0
failed = 0


def check(name, cond, detail=""):
    """Counts and prints one check: PASS NAME, or FAIL NAME DETAIL."""
    global passed, failed
    if cond:
        passed += 1
        print(f"PASS {name}")
    else:
        failed += 1
        print(f"FAIL {name} {detail}".rstrip())
    sys.stdout.flush()


def summary(what=""):
    """Prints the counts; the exit status for them (1 on any failure)."""
    print(f"{what + ': ' if what else ''}{passed} passed, {failed} failed")
    sys.stdout.flush()
    return 1 if failed else 0


def name_of(code):
    """errno's name for code (EOPNOTSUPP rather than its alias ENOTSUP)."""
    return {errno.EOPNOTSUPP: "EOPNOTSUPP"}.get(code) or errno.errorcode.get(code, str(code))


def outcome(fn):
    """Runs fn; returns ("ok", result) or (errno name, None)."""
    from pyverbs.pyverbs_error import PyverbsError, PyverbsRDMAError

    try:
        return "ok", fn()
    except PyverbsRDMAError as err:
        return name_of(err.error_code), None
    except PyverbsError as err:
        return f"pyverbs: {err}", None


def expect(name, fn, want):
    """fn must end as want ("ok" or an errno name); returns its result."""
    res, val = outcome(fn)
    check(name, res == want, f"got {res}, want {want}")
    return val


def capacity(n):
    """What a ring asked for n entries holds: n + 1 slots rounded up to a
    power of two, one of them kept free."""
    slots = 1
    while slots < n + 1:
        slots *= 2
    return slots - 1


def meminfo(key):
    """The /proc/meminfo value of key, in kB (0 when absent)."""
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def hw_counters(names):
    """{name: value} of this device's port counters among names (lib.sh's
    hw_counter reads one); a counter the device lacks is left out."""
    out = {}
    for name in names:
        try:
            with open(f"/sys/class/infiniband/{DEV}/ports/1/hw_counters/{name}") as f:
                out[name] = int(f.read())
        except OSError:
            pass
    return out


def rdma_resources():
    """{kind: count} of this device's objects as `rdma resource show` counts
    them (pd, cq, qp, cm_id, mr, ctx, srq), the kernel's own included;
    empty when the tool shows no line for the device."""
    out = subprocess.run(["rdma", "resource", "show"], capture_output=True, text=True).stdout
    for line in out.splitlines():
        parts = line.split()
        if len(parts) > 2 and parts[1] == f"{DEV}:":
            return {k: int(v) for k, v in zip(parts[2::2], parts[3::2]) if v.isdigit()}
    return {}


def rdma_res_entry(kind, key, value, raw=False):
    """The JSON entry `rdma resource show KIND` prints for this device's
    object with KEY VALUE (e.g. "qp", "lqpn", 17), with the driver details
    (-dd) also under their bare names, or the raw record (-r); None when it
    shows no such entry."""
    # QPs are filtered by link: all ports for the details (a QP in RESET
    # has none yet), port 1 for the raw record (which the tool shows only
    # for a port); the other objects by device.
    where = ["dev", DEV] if kind != "qp" else ["link", f"{DEV}/1" if raw else DEV]
    args = ["rdma", "-j", "-r" if raw else "-dd", "resource", "show", kind, *where, key, str(value)]
    out = subprocess.run(args, capture_output=True, text=True)
    if out.returncode != 0 or not out.stdout.strip():
        return None
    import json
    entries = json.loads(out.stdout)
    if not entries:
        return None
    # The tool prints driver attributes as drv_NAME; the core's own use
    # hyphens, so the bare names do not collide.
    ent = entries[0]
    ent.update({k[len("drv_"):]: v for k, v in list(ent.items()) if k.startswith("drv_")})
    return ent


def res_int(entry, name):
    """An integer attribute of an `rdma -j` entry, printed as a number or as
    a hex string."""
    v = entry[name]
    return int(v, 0) if isinstance(v, str) else int(v)


# The kernel's names of work completion statuses (ib_wc_status_msg), by
# the pyverbs name without IBV_WC_, as `rdma resource show` prints them.
WC_STATUS_MSG = {
    "LOC_LEN_ERR": "local length error", "LOC_QP_OP_ERR": "local QP operation error",
    "LOC_PROT_ERR": "local protection error", "WR_FLUSH_ERR": "WR flushed",
    "MW_BIND_ERR": "memory bind operation error", "BAD_RESP_ERR": "bad response error",
    "LOC_ACCESS_ERR": "local access error", "REM_INV_REQ_ERR": "remote invalid request error",
    "REM_ACCESS_ERR": "remote access error", "REM_OP_ERR": "remote operation error",
    "RETRY_EXC_ERR": "transport retry counter exceeded", "RNR_RETRY_EXC_ERR": "RNR retry counter exceeded",
    "REM_ABORT_ERR": "operation aborted", "FATAL_ERR": "fatal error", "GENERAL_ERR": "general error",
}


def res_raw_bytes(entry):
    """The raw record of an `rdma -j -r` entry, as bytes."""
    data = entry["data"]
    if isinstance(data, str):
        return bytes.fromhex(data.replace(" ", "").replace(":", ""))
    return bytes(int(b, 0) if isinstance(b, str) else b for b in data)


def first_gids(ctx, prefixes, port=1, count=16):
    """{prefix: (index, GID)}: for each prefix, the first of the port's
    first count GIDs whose text starts with it (absent when none does)."""
    from pyverbs.pyverbs_error import PyverbsError

    found = {}
    for i in range(count):
        try:
            g = ctx.query_gid(port, i)
        except PyverbsError:
            continue
        for p in prefixes:
            if p not in found and str(g.gid).startswith(p):
                found[p] = (i, g)
    return found


# The start of an IPv4-mapped GID (a node's RoCE GID of its IPv4 address).
V4_MAPPED = "0000:0000:0000:0000:0000:ffff:"


def sh(cmd):
    """Runs a shell command line, echoed first; its CompletedProcess
    (text stdout and stderr)."""
    print(f"+ {cmd}")
    sys.stdout.flush()
    return subprocess.run(cmd, shell=True, capture_output=True, text=True)


def dmesg():
    """The kernel log's lines."""
    return subprocess.run(["dmesg"], capture_output=True, text=True).stdout.splitlines()


# Kernel reports a test checks for after one of its steps, to name the step
# that caused them. qemu-test/run scans the whole boot's log (with a wider
# net) whatever the tests find.
PROBLEM_RE = re.compile(r"WARNING:|BUG:|Oops|KASAN|UBSAN|general protection|soft lockup"
                        r"|rcu_\w+ detected stall|sleeping function called from invalid context"
                        r"|possible circular locking|inconsistent lock state")


def kernel_problems():
    """The kernel log's lines that report a kernel problem."""
    return [line for line in dmesg() if PROBLEM_RE.search(line)]


# struct rxe_queue_buf (rdma_user_rxe.h): the header of every mapped ring.
LOG2_ELEM, INDEX_MASK, PROD, CONS, DATA = 0, 4, 128, 256, 384


def uverbs_maps():
    """(start, end) of every mapping of the uverbs device in this process."""
    out = set()
    with open("/proc/self/maps") as f:
        for line in f:
            if "/dev/infiniband/uverbs" in line:
                a, b = line.split()[0].split("-")
                out.add((int(a, 16), int(b, 16)))
    return out


def ring_of(maps, index_mask):
    """The one mapping whose queue header has this index mask, or None."""
    found = [a for a, _ in maps if u32(a + INDEX_MASK).value == index_mask]
    return found[0] if len(found) == 1 else None


def u32(addr):
    return ctypes.c_uint32.from_address(addr)


def u64(addr):
    return ctypes.c_uint64.from_address(addr)


def _lib_sh(function):
    """Runs a qemu-test/lib/lib.sh function; its exit status."""
    return subprocess.run(["bash", "-c", '. "$1" && ' + function, "lib.sh", LIB_SH]).returncode


def kmemleak_clear():
    """Forgets the leaks kmemleak suspects so far (lib.sh kmemleak_clear)."""
    sys.stdout.flush()
    _lib_sh("kmemleak_clear")


def lossy_link():
    """lib.sh's lossy_link: 1% loss and 2% reordering on this node's eth0."""
    sys.stdout.flush()
    if _lib_sh("lossy_link") != 0:
        sys.exit("FAIL: cannot make eth0 lossy")


def meet_abort(msg):
    """Marks this node's script as failed for the other nodes' meet (lib.sh
    meet_on_exit does the same for shell scripts)."""
    with open(os.path.join(SHARED_DIR, f"meet-abort.node{NODE}"), "w") as f:
        f.write(msg)


def meet(name, limit=300):
    """lib.sh's meet: waits until every node reached NAME (once per script),
    or ends at once (SystemExit) when another node marked itself failed. The
    same files as lib.sh's, so a Python test meets the lib.sh helpers it
    runs (yank_device)."""
    open(os.path.join(SHARED_DIR, f"meet.{name}.node{NODE}"), "w").close()
    start = time.monotonic()
    for n in range(1, NODE_COUNT + 1):
        while not os.path.exists(os.path.join(SHARED_DIR, f"meet.{name}.node{n}")):
            for m in range(1, NODE_COUNT + 1):
                if os.path.exists(os.path.join(SHARED_DIR, f"meet-abort.node{m}")):
                    sys.exit(f"FAIL (node{NODE}): at {name}: node{m} failed")
            if time.monotonic() - start > limit:
                meet_abort(f"at {name}: node{n} not there after {limit}s")
                sys.exit(f"FAIL (node{NODE}): at {name}: node{n} not there after {limit}s")
            time.sleep(0.2)


def met(name):
    """Whether every node has reached meet NAME (without waiting)."""
    return all(os.path.exists(os.path.join(SHARED_DIR, f"meet.{name}.node{n}"))
               for n in range(1, NODE_COUNT + 1))


def yank_start(here):
    """Starts this node's half of lib.sh's device removal (the yank) in the
    background: yank_device (this node's rdma device deleted a second after
    every node met yank-go, added back 5 s later) when HERE, yank_others
    otherwise. The caller's I/O runs meanwhile; meet("yank-deleted") and
    meet("yank-back") follow the removal; yank_finish waits for the half."""
    sys.stdout.flush()
    half = "yank_device" if here else "yank_others"
    return subprocess.Popen(["bash", "-c", '. "$1" && trap meet_on_exit EXIT && ' + half,
                             "lib.sh", LIB_SH])


def yank_finish(proc):
    """Waits for yank_start's half; False when it failed (it says why)."""
    return proc.wait() == 0


def kmemleak_clean(settle=6):
    """After settle seconds (kmemleak reports only objects a few seconds
    old), scans (lib.sh kmemleak_scan); True when nothing leaked since the
    last kmemleak_clear, or the kernel has no kmemleak. A report is printed
    and copied to the kernel log, which fails the boot."""
    if not os.path.exists("/sys/kernel/debug/kmemleak"):
        print("INFO no kmemleak on this kernel")
        return True
    time.sleep(settle)
    sys.stdout.flush()
    clean = _lib_sh("kmemleak_scan") == 0
    print(f"INFO kmemleak scanned: {'nothing' if clean else 'leaks'}")
    return clean


# libibverbs through ctypes, where pyverbs is too kind (it destroys children
# before their parents) or lacks a call (multicast attach).
class IbvCap(ctypes.Structure):
    _fields_ = [(n, ctypes.c_uint32) for n in
                ("max_send_wr", "max_recv_wr", "max_send_sge", "max_recv_sge", "max_inline_data")]


class IbvInitAttr(ctypes.Structure):
    _fields_ = [("qp_context", ctypes.c_void_p), ("send_cq", ctypes.c_void_p),
                ("recv_cq", ctypes.c_void_p), ("srq", ctypes.c_void_p),
                ("cap", IbvCap), ("qp_type", ctypes.c_int), ("sq_sig_all", ctypes.c_int)]


class Libibverbs:
    """libibverbs (`lib`) with a context of dev open (`ctx`): the calls to
    open it, PDs, CQs and QPs, and the (name, restype, argtypes) of `more`."""

    def __init__(self, dev, more=()):
        vp = ctypes.c_void_p
        lib = ctypes.CDLL("libibverbs.so.1", use_errno=True)
        for fn, res, args in (
            ("ibv_get_device_list", vp, [ctypes.POINTER(ctypes.c_int)]),
            ("ibv_get_device_name", ctypes.c_char_p, [vp]),
            ("ibv_open_device", vp, [vp]),
            ("ibv_close_device", ctypes.c_int, [vp]),
            ("ibv_free_device_list", None, [vp]),
            ("ibv_alloc_pd", vp, [vp]),
            ("ibv_dealloc_pd", ctypes.c_int, [vp]),
            ("ibv_create_cq", vp, [vp, ctypes.c_int, vp, vp, ctypes.c_int]),
            ("ibv_destroy_cq", ctypes.c_int, [vp]),
            ("ibv_create_qp", vp, [vp, ctypes.POINTER(IbvInitAttr)]),
            ("ibv_destroy_qp", ctypes.c_int, [vp]),
            *more,
        ):
            f = getattr(lib, fn)
            f.restype = res
            f.argtypes = args
        self.lib = lib
        n = ctypes.c_int()
        lst = lib.ibv_get_device_list(ctypes.byref(n))
        devs = ctypes.cast(lst, ctypes.POINTER(vp))
        self.ctx = None
        for i in range(n.value):
            if lib.ibv_get_device_name(devs[i]).decode() == dev:
                self.ctx = lib.ibv_open_device(devs[i])
        lib.ibv_free_device_list(lst)
        if not self.ctx:
            raise RuntimeError(f"cannot open {dev}")

    def close(self):
        self.lib.ibv_close_device(self.ctx)


def memory_usage():
    """(Slab, VmallocUsed) of /proc/meminfo, in kB."""
    return meminfo("Slab"), meminfo("VmallocUsed")


def check_memory_growth(what, before, after, slab_kb=None, vmalloc_kb=1024):
    """Checks the growth from before to after (memory_usage() pairs) over
    what: Slab less than slab_kb (by default 2 MiB, 32 MiB on the debug
    kernel, where KASAN keeps freed objects in quarantine a while),
    VmallocUsed less than vmalloc_kb. True when both hold."""
    if slab_kb is None:
        slab_kb = 32768 if DEBUG_KERNEL else 2048
    slab, vmalloc = after[0] - before[0], after[1] - before[1]
    check(f"Slab grew {slab} kB over {what} (bound {slab_kb})", slab < slab_kb)
    check(f"VmallocUsed grew {vmalloc} kB over {what} (bound {vmalloc_kb})", vmalloc < vmalloc_kb)
    return slab < slab_kb and vmalloc < vmalloc_kb


def settle_memory(wait=3):
    """Lets memory that lingers after a teardown go before memory_usage()
    reads it: waits (deferred frees, RCU), drops the page cache and the
    reclaimable slab objects, and shrinks every slab cache, which on the
    debug kernel also empties KASAN's quarantine of that cache (only with
    slab sysfs: not on SLUB_TINY, the plain kernel)."""
    time.sleep(wait)
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")
    base = "/sys/kernel/slab"
    if os.path.isdir(base):
        for name in sorted(os.listdir(base)):
            path = os.path.join(base, name)
            if os.path.islink(path):    # an alias of a merged cache
                continue
            try:
                with open(os.path.join(path, "shrink"), "w") as f:
                    f.write("1\n")
            except OSError:
                pass
    time.sleep(1)


def check_flat_memory(what, loops, one, slab_kb=None, vmalloc_kb=1024, warmup=0):
    """Runs one(i) for i in range(warmup) to warm the caches, then for i in
    range(loops), and checks the growth over the loops (check_memory_growth).
    kmemleak, precise where these bounds are loose, is the test's to check
    over its whole run: kmemleak_clear first, kmemleak_clean last."""
    for i in range(warmup):
        one(i)
    time.sleep(1)
    before = memory_usage()
    t0 = time.monotonic()
    for i in range(loops):
        one(i)
    dt = time.monotonic() - t0
    time.sleep(1)
    after = memory_usage()
    print(f"{loops} {what} in {dt:.1f}s: Slab {before[0]} -> {after[0]} kB, "
          f"VmallocUsed {before[1]} -> {after[1]} kB")
    check_memory_growth(f"{loops} {what}", before, after, slab_kb, vmalloc_kb)


def event_fds():
    """The uverbs event files open in this process (the async event file of
    each context; no completion channels are used here)."""
    fds = []
    for name in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{name}") == "anon_inode:[infinibandevent]":
                fds.append(int(name))
        except OSError:
            pass
    return fds


def next_async_event(ctx, limit=10.0):
    """The type of the context's next async event, or None after `limit`
    seconds. Waits for the event file to be readable first, so a missing
    event cannot hang the test; the event is acknowledged here, as
    destroying its QP waits for that."""
    ready, _, _ = select.select(event_fds(), [], [], limit)
    if not ready:
        return None
    ev = ctx.get_async_event()
    kind = ev.event_type
    ev.ack()
    return kind
