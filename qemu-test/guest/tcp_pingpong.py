#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
# TCP request/response latency, the sockets analogue of ib_*_lat:
#
#   tcp_pingpong.py server PORT
#   tcp_pingpong.py client HOST PORT REQ_BYTES RESP_BYTES ITERS
#
# The client sends REQ_BYTES, the server answers RESP_BYTES as soon as it has
# the whole request, ITERS times (after ITERS/10 warm-up rounds, not timed).
# TCP_NODELAY on both ends. The client prints one JSON object: the round
# trips' minimum, median (typical), average, 99th percentile (usec) and the
# number of rounds. The server serves one client, then exits.
import json
import socket
import struct
import sys
import time


def recv_exact(sock, view, n):
    got = 0
    while got < n:
        k = sock.recv_into(view[got:n])
        if k == 0:
            raise EOFError("peer closed")
        got += k


def server(port):
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("0.0.0.0", port))
    ls.listen(1)
    s, _ = ls.accept()
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    hdr = bytearray(12)
    recv_exact(s, memoryview(hdr), 12)
    req, resp, rounds = struct.unpack("!III", hdr)
    rbuf = bytearray(max(req, 1))
    rview = memoryview(rbuf)
    out = bytes(resp)
    for _ in range(rounds):
        recv_exact(s, rview, req)
        s.sendall(out)
    s.close()


def client(host, port, req, resp, iters):
    warm = max(iters // 10, 10)
    s = socket.create_connection((host, port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    s.sendall(struct.pack("!III", req, resp, warm + iters))
    out = bytes(req)
    rbuf = bytearray(max(resp, 1))
    rview = memoryview(rbuf)
    clock = time.perf_counter_ns
    rtt = []
    for i in range(warm + iters):
        t0 = clock()
        s.sendall(out)
        recv_exact(s, rview, resp)
        t1 = clock()
        if i >= warm:
            rtt.append(t1 - t0)
    s.close()
    rtt.sort()
    n = len(rtt)
    us = lambda ns: round(ns / 1000.0, 2)
    print(json.dumps({
        "req_bytes": req, "resp_bytes": resp, "iters": n,
        "rtt_min_us": us(rtt[0]), "rtt_typical_us": us(rtt[n // 2]),
        "rtt_avg_us": us(sum(rtt) / n), "rtt_p99_us": us(rtt[min(n - 1, n * 99 // 100)]),
    }))


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "server":
        server(int(sys.argv[2]))
    elif len(sys.argv) == 7 and sys.argv[1] == "client":
        client(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6]))
    else:
        sys.exit(__doc__ if __doc__ else "usage: tcp_pingpong.py server PORT | client HOST PORT REQ RESP ITERS")
