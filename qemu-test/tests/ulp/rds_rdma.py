#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""RDS over RDMA (rds_rdma) between two nodes:

  qemu-test/run --drivers rs,c qemu-test/tests/ulp/rds_rdma.py [MESSAGES [SEED]] [keep] [lossy] [yank|yank-client]

Both nodes load rds_rdma and open an RDS socket bound to their own
address with the transport forced to InfiniBand (SO_RDS_TRANSPORT), so a
message either goes over the rdma device or fails. Node 1 sends MESSAGES
messages (default 200) of sizes from 0 bytes to RDS's largest (1 MiB),
a few at a time; each carries its sequence number, its length and the
SHA-256 of its payload. Node 2 checks every message (order, length,
checksum) and sends it back; node 1 checks each echo against what it
sent. Afterwards RDS's own view must agree: an "infiniband" connection
between the two addresses (RDS_INFO_CONNECTIONS), its IB receive
completions grown by at least the messages received (RDS_INFO_COUNTERS),
and the rdma device's packet counters grown with the bytes. With lossy,
eth0 drops 1% and reorders 2% of the packets on both nodes (lib.sh
lossy_link).

With yank, first node 1 keeps WINDOW messages of random sizes in flight
while node 2's rdma device (node 1's with yank-client) is deleted and
added back 5 s later (lib.sh yank_device, through testlib.yank_start):
RDS must reconnect by itself and deliver every message once, in order
and intact, both ways, going on until YANK_AFTER more have been echoed
after the device came back; then the exchange above runs on the new
device. RDS frees its last objects of a device from a work item that may
run after the device's removal returned, and rdma_rxe's pool cleanup and
the core's resource tracking warn then: the device yanked must be
rxe_rs's.

Both nodes unload rds_rdma at the end, before the rdma device goes; with
"keep" they leave it loaded, and the script must be the last of its boot
(the device then stays until the guest powers off): Linux 7.3's RDS crashes
when rds_rdma is unloaded after a transfer, whatever the rdma driver
(docs/known-issues.md).
"""

import ctypes
import errno
import hashlib
import os
import random
import socket
import struct
import subprocess
import sys
import time

from testlib import DEV, NODE, kmemleak_clean, meet, met, yank_start
from ulp_lib import NET, fail, libc, logger, packets, packets_since, start, yank_done

SOL_RDS = 276
SO_RDS_TRANSPORT = 8
RDS_TRANS_IB = 0
RDS_INFO_COUNTERS = 10000
RDS_INFO_CONNECTIONS = 10001
PORT = 18600
MAX_MSG = 1 << 20
HDR = struct.Struct("!II32s")
# Sizes every run has; the others are drawn at random below 1 MiB.
FIXED = [0, 1, 100, 1023, 1024, 4095, 4096, 4097, 8192, 65536, 131075,
         MAX_MSG - HDR.size]
WINDOW = 4
# Messages echoed after the device came back before the yank's exchange ends.
YANK_AFTER = 20
# The sequence number of the message that ends the yank's exchange.
END = 0xFFFFFFFF

log = logger("rds")


def unload():
    """Unloads rds_rdma before the test bench deletes the rdma device.

    RDS drops its last reference to a device from a work item: when the
    device goes away under a loaded rds_rdma, that work can free RDS's PD
    and MR pools after the device itself is gone (the core's and rdma_rxe's
    leak checks warn). Unloading the module removes RDS from the device and
    waits for that work while the device still exists."""
    for _ in range(50):
        r = subprocess.run(["rmmod", "rds_rdma"], capture_output=True, text=True)
        if r.returncode == 0:
            break
        time.sleep(0.2)
    else:
        fail(f"rmmod rds_rdma: {r.stderr.strip()}")
    log("rds_rdma unloaded")


def info(sock, which, item):
    """The RDS_INFO_* table WHICH as a list of ITEM-sized records (through
    libc: Python's getsockopt takes at most 1024 bytes)."""
    size = 1 << 16
    while True:
        buf = ctypes.create_string_buffer(size)
        ln = ctypes.c_uint32(size)
        if libc.getsockopt(sock.fileno(), SOL_RDS, which, buf, ctypes.byref(ln)) >= 0:
            break
        err = ctypes.get_errno()
        # ENOSPC: the table is larger; ln holds the length it needs.
        if err != errno.ENOSPC or size >= 1 << 24:
            fail(f"RDS_INFO {which}: {os.strerror(err)}")
        size = max(size * 2, ln.value)
    data = buf.raw[:ln.value]
    return [data[i:i + item] for i in range(0, len(data) - item + 1, item)]


def ib_counters(sock):
    out = {}
    for rec in info(sock, RDS_INFO_COUNTERS, 40):
        name = rec[:32].split(b"\0", 1)[0].decode()
        out[name] = struct.unpack("<Q", rec[32:40])[0]
    return out


def connections(sock):
    out = []
    for rec in info(sock, RDS_INFO_CONNECTIONS, 42):
        tx, rx, laddr, faddr, trans, flags, _tos = struct.unpack("<QQ4s4s16sBB", rec)
        out.append((socket.inet_ntoa(laddr), socket.inet_ntoa(faddr),
                    trans.split(b"\0", 1)[0].decode(), flags, tx, rx))
    return out


def message(seq, size, rng):
    payload = rng.randbytes(size)
    return HDR.pack(seq, size, hashlib.sha256(payload).digest()) + payload


def check(seq, data, who):
    if len(data) < HDR.size:
        fail(f"{who}: message {seq}: {len(data)} bytes, shorter than its header")
    got_seq, size, digest = HDR.unpack_from(data)
    payload = data[HDR.size:]
    if got_seq != seq:
        fail(f"{who}: message {got_seq} where {seq} was due")
    if len(payload) != size:
        fail(f"{who}: message {seq}: {len(payload)} payload bytes, sent {size}")
    if hashlib.sha256(payload).digest() != digest:
        fail(f"{who}: message {seq} ({size} bytes): payload differs from what was sent")
    return size


def yank_exchange(s, peer, seed, node):
    """The yank's exchange: node 1 keeps WINDOW messages in flight across
    the removal of node NODE's device until YANK_AFTER have been echoed
    after the device came back, then sends END; node 2 checks and echoes
    each until END. Returns the number of messages."""
    proc = yank_start(NODE == node)
    rng = random.Random(seed + 1)
    if NODE == 2:
        seq = 0
        while True:
            data, addr = s.recvfrom(MAX_MSG + 4096)
            if addr != (peer, PORT):
                fail(f"yank: message {seq} from {addr}, want {(peer, PORT)}")
            if HDR.unpack_from(data)[0] == END:
                s.sendto(data, addr)
                break
            check(seq, data, "server (yank)")
            s.sendto(data, addr)
            seq += 1
    else:
        sent = {}
        seq = nxt = 0
        deleted, back = False, None
        last, gap = time.monotonic(), 0.0
        while True:
            ending = back is not None and seq >= back + YANK_AFTER
            while not ending and nxt < seq + WINDOW:
                sent[nxt] = message(nxt, rng.randrange(MAX_MSG - HDR.size), rng)
                s.sendto(sent[nxt], (peer, PORT))
                nxt += 1
            if seq == nxt:
                break
            data, addr = s.recvfrom(MAX_MSG + 4096)
            now = time.monotonic()
            if addr != (peer, PORT):
                fail(f"yank: echo {seq} from {addr}")
            check(seq, data, "client (yank)")
            if data != sent.pop(seq):
                fail(f"yank: echo {seq} differs from the message sent")
            seq += 1
            gap = max(gap, now - last)
            last = now
            if not deleted and met("yank-deleted"):
                deleted = True
                if seq < 2:
                    fail(f"yank: {seq} message(s) echoed before the device went: the exchange had not begun")
                log(f"yank: node {node}'s {DEV} deleted after {seq} echoes, {nxt - seq} messages in flight")
            if back is None and met("yank-back"):
                back = seq
                log(f"yank: node {node}'s {DEV} back after {seq} echoes")
        end = HDR.pack(END, 0, bytes(32))
        s.sendto(end, (peer, PORT))
        data, _ = s.recvfrom(MAX_MSG + 4096)
        if data != end:
            fail("yank: the end marker's echo differs")
        log(f"yank: {seq} messages echoed intact across the device removal; the longest wait "
            f"for an echo (the device's absence and RDS's reconnection) {gap:.1f} s")
    yank_done(proc)
    return seq


def main():
    words = {"keep", "lossy", "yank", "yank-client"}
    args = [a for a in sys.argv[1:] if a not in words]
    keep = "keep" in sys.argv[1:]
    yank = 2 if "yank" in sys.argv[1:] else 1 if "yank-client" in sys.argv[1:] else 0
    count = int(args[0]) if args else 200
    seed = int(args[1]) if len(args) > 1 else random.randrange(1 << 30)
    me, peer = f"{NET}.{NODE}", f"{NET}.{3 - NODE}"
    if NODE > 2:
        meet("ready")
        if yank:
            yank_done(yank_start(False))
        meet("done", 900)
        return
    start(["rds_rdma"])
    for k in ("wmem_max", "rmem_max"):
        with open(f"/proc/sys/net/core/{k}", "w") as f:
            f.write(str(16 << 20))
    s = socket.socket(socket.AF_RDS, socket.SOCK_SEQPACKET, 0)
    s.setsockopt(SOL_RDS, SO_RDS_TRANSPORT, RDS_TRANS_IB)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 8 << 20)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    s.bind((me, PORT))
    if s.getsockopt(SOL_RDS, SO_RDS_TRANSPORT) != RDS_TRANS_IB:
        fail("the socket is not on the InfiniBand transport")
    s.settimeout(120)
    log(f"bound {me}:{PORT} on the IB transport; {count} messages, seed {seed}")
    meet("ready")
    if yank:
        yank_exchange(s, peer, seed, yank)
    # After the yank, of the new device.
    before = ib_counters(s)
    hw0 = packets()
    rng = random.Random(seed)
    sizes = [FIXED[i] if i < len(FIXED) else rng.randrange(MAX_MSG - HDR.size)
             for i in range(count)]
    total = HDR.size * count + sum(sizes)
    t0 = time.monotonic()
    if NODE == 2:
        for seq in range(count):
            data, addr = s.recvfrom(MAX_MSG + 4096)
            if addr != (peer, PORT):
                fail(f"message {seq} from {addr}, want {(peer, PORT)}")
            check(seq, data, "server")
            s.sendto(data, addr)
        log(f"received, checked and echoed {count} messages ({total} bytes)")
    else:
        sent = {}
        nxt = 0
        for seq in range(count):
            while nxt < count and nxt < seq + WINDOW:
                sent[nxt] = message(nxt, sizes[nxt], rng)
                s.sendto(sent[nxt], (peer, PORT))
                nxt += 1
            data, addr = s.recvfrom(MAX_MSG + 4096)
            if addr != (peer, PORT):
                fail(f"echo {seq} from {addr}")
            check(seq, data, "client")
            if data != sent.pop(seq):
                fail(f"echo {seq} differs from the message sent")
        log(f"sent {count} messages ({total} bytes), every echo matches")
    secs = time.monotonic() - t0
    log(f"{2 * total / secs / 1e6:.2f} MB/s both ways together, {secs:.1f} s")
    after = ib_counters(s)
    grown = {k: after[k] - before.get(k, 0) for k in after
             if k.startswith("ib_") and after[k] != before.get(k, 0)}
    log(f"IB counters that moved: {grown}")
    # A completion per fragment received (ib_rx_total_incs counts only the
    # message records RDS allocates, none once its cache is warm).
    if grown.get("ib_rx_cq_event", 0) < count:
        fail(f"ib_rx_cq_event grew by {grown.get('ib_rx_cq_event', 0)}, "
             f"fewer than the {count} messages received")
    conns = connections(s)
    log(f"connections: {conns}")
    if not any(c[0] == me and c[1] == peer and c[2] == "infiniband" for c in conns):
        fail(f"no infiniband connection {me} -> {peer} in RDS_INFO_CONNECTIONS")
    moved = packets_since(hw0)
    log(f"{DEV} packets during the exchange: {moved}")
    # The payload alone is total bytes each way, in 4 KiB fragments at
    # most per packet.
    if min(moved.values()) < total // 4096:
        fail(f"{DEV} carried too few packets for {total} bytes: {moved}")
    meet("done", 900)
    s.close()
    meet("closed")
    if keep:
        log("rds_rdma left loaded (keep): the boot ends with this script")
    else:
        unload()
    if not kmemleak_clean():
        fail("kmemleak reports leaks")
    log("rds-rdma ok")


if __name__ == "__main__":
    try:
        main()
    except OSError as e:
        # A receive that timed out, a send refused: the other nodes stop
        # waiting at their next meet.
        fail(f"{type(e).__name__}: {e}")
