#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""SMC-R between two nodes: TCP sockets upgraded to RDMA by the kernel.

  qemu-test/run --drivers rs,c qemu-test/tests/ulp/smc_r.py [MIB [CONNS]] [lossy] [yank]

Node 2 listens on an AF_SMC stream socket, node 1 connects CONNS times
(default 2) to it through eth0's address, so the SMC handshake (CLC over
TCP) chooses the rdma device under eth0. On each connection node 1 sends
MIB MiB (default 16) of seeded random data in writes of varied sizes
while node 2 echoes every byte back; node 1 compares the echo with what
it sent and node 2 the SHA-256 of what it received with the one node 1
announced. While the connections are open both nodes ask the kernel
(sock_diag for AF_SMC) how each socket runs: it must be SMC-R, not the
TCP fallback, on a link of their rdma device; and the device's packet
counters must have carried the data. With lossy, eth0 drops 1% and
reorders 2% of the packets on both nodes (lib.sh lossy_link).

With yank, first one connection (SMC-R on the device, by sock_diag)
carries YANK_MIB MiB the same way while node 2's rdma device is deleted
and added back 5 s later (lib.sh yank_device, through testlib.yank_start).
SMC-R cannot move a connection off its only link: the connection must end
with an error (or EOF) on both nodes within YANK_LIMIT seconds, what was
echoed up to then matching what was sent (or, should it ride the removal
out, whole and intact). Then the connections above must run SMC-R on the
new device.
"""

import ctypes
import errno
import hashlib
import os
import random
import socket
import struct
import sys
import threading
import time

from testlib import DEV, NODE, kmemleak_clean, meet, met, yank_start
from ulp_lib import NET, fail, libc, logger, packets, packets_since, start, yank_done

AF_SMC = 43
SMCPROTO_SMC = 0
NETLINK_SOCK_DIAG = 4
SOCK_DIAG_BY_FAMILY = 20
NLM_F_REQUEST, NLM_F_DUMP = 0x1, 0x300
NLMSG_DONE, NLMSG_ERROR = 3, 2
SMC_DIAG_LGRINFO, SMC_DIAG_FALLBACK = 2, 5
MODES = {0: "SMC-R", 1: "TCP fallback", 2: "SMC-D"}
PORT = 18700
# The yank's connection: its port, the MiB it carries (more than it can
# move before the device goes) and how long it may last from the yank's
# start (SMC-R's own link checks end a dead one well within it).
YANK_PORT = PORT + 1
YANK_MIB = 64
YANK_LIMIT = 120

log = logger("smc")


def sockaddr_in(ip, port):
    # sin_family in host order, the port and address in network order.
    return struct.pack("=H", socket.AF_INET) + struct.pack("!H4s8x", port, socket.inet_aton(ip))


def oscall(what, ret):
    if ret < 0:
        err = ctypes.get_errno()
        fail(f"{what}: {os.strerror(err)}")
    return ret


def smc_socket():
    # Python's socket module has no addresses for AF_SMC: the fd comes
    # from libc, bind/connect/accept go through libc, the rest (send,
    # recv, close) through a socket object made from the fd.
    return oscall("socket(AF_SMC)", libc.socket(AF_SMC, socket.SOCK_STREAM, SMCPROTO_SMC))


def smc_listen(ip, port):
    fd = smc_socket()
    one = ctypes.c_int(1)
    oscall("SO_REUSEADDR", libc.setsockopt(fd, socket.SOL_SOCKET, socket.SO_REUSEADDR,
                                           ctypes.byref(one), 4))
    sa = sockaddr_in(ip, port)
    oscall(f"bind {ip}:{port}", libc.bind(fd, sa, len(sa)))
    oscall("listen", libc.listen(fd, 8))
    return fd


def smc_accept(lfd):
    fd = oscall("accept", libc.accept(lfd, None, None))
    return socket.socket(fileno=fd)


def smc_connect(ip, port):
    fd = smc_socket()
    sa = sockaddr_in(ip, port)
    oscall(f"connect {ip}:{port}", libc.connect(fd, sa, len(sa)))
    return socket.socket(fileno=fd)


def smc_diag():
    """[(sport, dport, mode, ibname, fallback reason)] of this node's AF_SMC
    sockets, from sock_diag."""
    nl = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_SOCK_DIAG)
    ext = (1 << (SMC_DIAG_LGRINFO - 1)) | (1 << (SMC_DIAG_FALLBACK - 1))
    req = struct.pack("BBBB", AF_SMC, 0, 0, ext) + bytes(48)
    hdr = struct.pack("=IHHII", 16 + len(req), SOCK_DIAG_BY_FAMILY, NLM_F_REQUEST | NLM_F_DUMP, 1, 0)
    nl.send(hdr + req)
    out = []
    done = False
    while not done:
        data = nl.recv(1 << 16)
        off = 0
        while off + 16 <= len(data):
            ln, typ, _flags, _seq, _pid = struct.unpack_from("=IHHII", data, off)
            if typ == NLMSG_DONE:
                done = True
                break
            if typ == NLMSG_ERROR:
                fail(f"smc_diag: netlink error {struct.unpack_from('=i', data, off + 16)[0]}")
            msg = data[off + 16:off + ln]
            _fam, _state, mode, _shut = struct.unpack_from("BBBB", msg, 0)
            sport, dport = struct.unpack_from("!HH", msg, 4)
            ibname, reason = "", None
            a = 64
            while a + 4 <= len(msg):
                alen, atyp = struct.unpack_from("=HH", msg, a)
                if alen < 4:
                    break
                body = msg[a + 4:a + alen]
                if atyp == SMC_DIAG_LGRINFO:
                    ibname = body[1:65].split(b"\0", 1)[0].decode()
                elif atyp == SMC_DIAG_FALLBACK:
                    reason = struct.unpack_from("=II", body)
                a += (alen + 3) & ~3
            out.append((sport, dport, MODES.get(mode, mode), ibname, reason))
            off += (ln + 3) & ~3
    nl.close()
    return out


def genl_request(sock, family, cmd, attrs, flags=0x5):
    """Sends a generic netlink request (NLM_F_REQUEST | NLM_F_ACK by default)
    with ATTRS [(type, bytes)]; the replies' payloads, failing on an error
    other than those the caller accepts (returned as ("error", errno))."""
    body = struct.pack("BBH", cmd, 1, 0)
    for typ, data in attrs:
        body += struct.pack("=HH", 4 + len(data), typ) + data + bytes((-len(data)) % 4)
    sock.send(struct.pack("=IHHII", 16 + len(body), family, flags, 1, 0) + body)
    out = []
    while True:
        data = sock.recv(1 << 16)
        off = 0
        while off + 16 <= len(data):
            ln, typ, _f, _s, _p = struct.unpack_from("=IHHII", data, off)
            if typ == NLMSG_ERROR:
                err = struct.unpack_from("=i", data, off + 16)[0]
                if err:
                    out.append(("error", -err))
                return out
            if typ == NLMSG_DONE:
                return out
            out.append(data[off + 16:off + ln])
            off += (ln + 3) & ~3


def smc_add_ueid(eid):
    """Adds EID to SMC's user-defined EID table: SMC-Rv2 (the version a
    RoCE v2 device can run) is only proposed when the table is not empty."""
    nl = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 16)  # NETLINK_GENERIC
    # nlctrl CTRL_CMD_GETFAMILY(CTRL_ATTR_FAMILY_NAME): the family's id.
    reply = genl_request(nl, 0x10, 3, [(2, b"SMC_GEN_NETLINK\0")])
    fam = None
    for msg in reply:
        if isinstance(msg, tuple):
            fail(f"genetlink family SMC_GEN_NETLINK: {os.strerror(msg[1])}")
        a = 4
        while a + 4 <= len(msg):
            alen, atyp = struct.unpack_from("=HH", msg, a)
            if atyp == 1:  # CTRL_ATTR_FAMILY_ID
                fam = struct.unpack_from("=H", msg, a + 4)[0]
            a += (max(alen, 4) + 3) & ~3
    if fam is None:
        fail("no SMC_GEN_NETLINK family id")
    # SMC_NETLINK_ADD_UEID with SMC_NLA_EID_TABLE_ENTRY: 32 characters,
    # blank-padded, and a NUL.
    res = genl_request(nl, fam, 10, [(1, eid.ljust(32).encode() + b"\0")])
    for msg in res:
        if isinstance(msg, tuple) and msg[1] != errno.EEXIST:
            fail(f"adding UEID {eid}: {os.strerror(msg[1])}")
    nl.close()
    log(f"UEID {eid} added")


def check_diag(ports, role, count):
    """COUNT connected sockets of this node on PORTS (local ports) run SMC-R
    on DEV (a listening socket, with no peer port, does not count)."""
    diag = smc_diag()
    log(f"smc_diag: {diag}")
    conns = [d for d in diag if d[0] in ports and d[1] != 0]
    if len(conns) != count:
        fail(f"{role}: {len(conns)} connected AF_SMC sockets on ports {ports} in smc_diag, want {count}")
    for p in ports:
        mine = [d for d in conns if d[0] == p]
        for sport, dport, mode, ibname, reason in mine:
            if mode != "SMC-R":
                fail(f"{role}: connection {sport}->{dport} runs {mode} (fallback reason {reason})")
            if ibname != DEV:
                fail(f"{role}: connection {sport}->{dport} is on rdma device '{ibname}', not {DEV}")
    log(f"{role}: {count} connection(s) run SMC-R on {DEV}")


def recv_exact(s, n):
    buf = bytearray()
    while len(buf) < n:
        chunk = s.recv(min(n - len(buf), 1 << 20))
        if not chunk:
            fail(f"connection closed after {len(buf)} of {n} bytes")
        buf += chunk
    return bytes(buf)


def serve(conn, results, i):
    # Echo with the expected length and digest announced up front.
    size, digest = struct.unpack("!Q32s", recv_exact(conn, 40))
    h = hashlib.sha256()
    got = 0
    while got < size:
        chunk = conn.recv(min(size - got, 1 << 20))
        if not chunk:
            results[i] = f"closed after {got} of {size} bytes"
            return
        h.update(chunk)
        conn.sendall(chunk)
        got += len(chunk)
    results[i] = "ok" if h.digest() == digest else f"the {size} bytes received differ from the ones sent"


def client(conn, size, seed, results, i):
    rng = random.Random(seed)
    data = rng.randbytes(size)
    conn.sendall(struct.pack("!Q32s", size, hashlib.sha256(data).digest()))

    def writer():
        off = 0
        while off < size:
            n = min(size - off, rng.choice((1, 100, 4095, 4096, 65536, 200000, 1 << 20)))
            conn.sendall(data[off:off + n])
            off += n

    t = threading.Thread(target=writer)
    t.start()
    echo = recv_exact(conn, size)
    t.join()
    results[i] = "ok" if echo == data else "the echo differs from the data sent"


def yank_conn():
    """The yank: one SMC-R connection carrying YANK_MIB MiB (node 1 sends,
    node 2 echoes) while node 2's device goes and comes back. Either the
    connection ends with an error or EOF on both sides, or it carries
    everything intact; what was echoed must match what was sent."""
    size = YANK_MIB << 20
    if NODE == 1:
        # Made before the connection (a guest under TCG takes seconds to
        # draw 64 MiB at random): 4 MiB of random bytes, rotated by a
        # different offset for each 4 MiB of the stream.
        block = random.Random(2000).randbytes(4 << 20)
        data = b"".join(block[i * 4099:] + block[:i * 4099] for i in range(size // len(block)))
    if NODE == 2:
        lfd = smc_listen(f"{NET}.2", YANK_PORT)
        meet("yank-listening")
        c = smc_accept(lfd)
        meet("yank-connected")
        check_diag([YANK_PORT], "server (yank)", 1)
    else:
        meet("yank-listening")
        c = smc_connect(f"{NET}.2", YANK_PORT)
        meet("yank-connected")
        check_diag([local_port(c)], "client (yank)", 1)
    proc = yank_start(NODE == 2)
    # No socket timeout (a non-blocking SMC socket is another path): a
    # watchdog ends the test should the connection outlive YANK_LIMIT.
    watchdog = threading.Timer(YANK_LIMIT, fail, (f"yank: the connection still runs {YANK_LIMIT} s after the "
                                                   "yank began, neither ended nor done",))
    watchdog.start()
    t0 = time.monotonic()
    if NODE == 2:
        got, end = 0, "EOF"
        try:
            while True:
                chunk = c.recv(1 << 20)
                if not chunk:
                    break
                c.sendall(chunk)
                got += len(chunk)
        except OSError as e:
            end = f"{type(e).__name__}: {e}"
        log(f"yank: the server's connection ended ({end}) after {got} bytes echoed, "
            f"{time.monotonic() - t0:.1f} s after the yank began")
    else:
        sent = [0, None]

        def writer():
            try:
                off = 0
                while off < size:
                    n = min(size - off, 1 << 16)
                    c.sendall(data[off:off + n])
                    off += n
                    sent[0] = off
            except OSError as e:
                sent[1] = f"{type(e).__name__}: {e}"

        t = threading.Thread(target=writer)
        t.start()
        got, end, deleted = 0, None, None
        try:
            while got < size:
                chunk = c.recv(min(size - got, 1 << 20))
                if not chunk:
                    end = "EOF"
                    break
                if chunk != data[got:got + len(chunk)]:
                    fail(f"yank: the echo differs from the data sent within bytes {got}..{got + len(chunk)}")
                got += len(chunk)
                if deleted is None and met("yank-deleted"):
                    deleted = time.monotonic()
                    log(f"yank: node 2's {DEV} deleted after {got} of {size} bytes echoed")
        except OSError as e:
            end = f"{type(e).__name__}: {e}"
        now = time.monotonic()
        if deleted is None and met("yank-deleted"):
            deleted = now
        if deleted is None or got == size and now - deleted < 0.5:
            fail(f"yank: the transfer ({got} bytes echoed) was over before the device went")
        if end:
            # Unblocks the writer, should the end not have reached it.
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        t.join(YANK_LIMIT)
        if t.is_alive():
            fail(f"yank: the writer is still blocked {YANK_LIMIT} s after the receiver ended ({end})")
        if end:
            log(f"yank: the client's connection ended ({end}; the writer, after {sent[0]} bytes: "
                f"{sent[1] or 'done'}) {now - t0:.1f} s after the yank began, {got} bytes of {size} echoed intact")
        else:
            log(f"yank: the connection rode the device removal out: {size} bytes echoed intact, "
                f"{now - t0:.1f} s after the yank began")
    watchdog.cancel()
    c.close()
    if NODE == 2:
        os.close(lfd)
    yank_done(proc)


def main():
    args = [a for a in sys.argv[1:] if a not in ("lossy", "yank")]
    mib = int(args[0]) if args else 16
    nconn = int(args[1]) if len(args) > 1 else 2
    yank = "yank" in sys.argv[1:]
    if NODE > 2:
        if yank:
            meet("yank-listening")
            meet("yank-connected")
            yank_done(yank_start(False))
        meet("listening")
        meet("done", 900)
        return
    start(["smc", "smc_diag"])
    smc_add_ueid("RXE-RS-TEST")
    if yank:
        yank_conn()
    # After the yank, of the new device.
    hw0 = packets()
    size = mib << 20
    results = [None] * nconn
    threads = []
    t0 = time.monotonic()
    if NODE == 2:
        lfd = smc_listen(f"{NET}.2", PORT)
        meet("listening")
        conns = []
        for i in range(nconn):
            c = smc_accept(lfd)
            conns.append(c)
            threads.append(threading.Thread(target=serve, args=(c, results, i)))
            threads[-1].start()
        meet("connected")
        check_diag([PORT], "server", nconn)
        meet("diag-checked")
    else:
        meet("listening")
        conns = [smc_connect(f"{NET}.2", PORT) for _ in range(nconn)]
        meet("connected")
        check_diag([local_port(c) for c in conns], "client", nconn)
        meet("diag-checked")
        for i, c in enumerate(conns):
            threads.append(threading.Thread(target=client, args=(c, size, 1000 + i, results, i)))
            threads[-1].start()
    for t in threads:
        t.join()
    secs = time.monotonic() - t0
    for i, r in enumerate(results):
        if r != "ok":
            fail(f"connection {i}: {r}")
    log(f"{nconn} connection(s), {mib} MiB each way on each, data intact ({secs:.1f} s)")
    for c in conns:
        c.close()
    if NODE == 2:
        os.close(lfd)
    moved = packets_since(hw0)
    log(f"{DEV} packets during the test: {moved}")
    # SMC-R moves the data with RDMA WRITEs: at most 4 KiB per packet.
    if min(moved.values()) < nconn * size // 4096:
        fail(f"{DEV} carried too few packets for {nconn} x {size} bytes each way: {moved}")
    meet("done", 900)
    if not kmemleak_clean():
        fail("kmemleak reports leaks")
    log("smc-r ok")


def local_port(conn):
    """The local TCP port of an AF_SMC socket (getsockname through libc)."""
    buf = ctypes.create_string_buffer(128)
    ln = ctypes.c_uint32(128)
    oscall("getsockname", libc.getsockname(conn.fileno(), buf, ctypes.byref(ln)))
    return struct.unpack_from("!H", buf.raw, 2)[0]


if __name__ == "__main__":
    main()
