# SPDX-License-Identifier: GPL-2.0
"""Hand-made RoCE v2 packets sent from a UDP socket: BTH and DETH headers,
UD SEND_ONLY packets, and a Path (one address family) that fills in the
ICRC and sends them to port 4791. net_raw.py, tracepoints.py and
remote_errors.py build their packets with it."""
import socket
import struct
import zlib

ROCE_PORT = 4791
SPORT = 0xC0DE
MCAST_QPN = 0xFFFFFF
GSI_QKEY = 0x80010000
UD_SEND_ONLY = 0x64
RC_SEND_ONLY = 0x04


def bth(opcode, qpn, psn=0, pad=0, tver=0, pkey=0xFFFF):
    return struct.pack(">BBHII", opcode, (pad << 4) | tver, pkey, qpn & 0xFFFFFF, psn & 0xFFFFFF)


def deth(qkey=GSI_QKEY, sqpn=1):
    return struct.pack(">II", qkey, sqpn)


def ud(payload, qpn=MCAST_QPN, qkey=GSI_QKEY, **kw):
    """UD SEND_ONLY with room for the ICRC."""
    pad = -len(payload) % 4
    return bth(UD_SEND_ONLY, qpn, pad=pad, **kw) + deth(qkey) + payload + bytes(pad) + bytes(4)


class Path:
    """One family: addresses, a DF socket (IPv4 id 0, so the ICRC is known)."""

    def __init__(self, v6, src, dst):
        self.v6, self.src, self.dst = v6, src, dst
        fam = socket.AF_INET6 if v6 else socket.AF_INET
        self.sock = socket.socket(fam, socket.SOCK_DGRAM)
        if not v6:
            self.sock.setsockopt(socket.IPPROTO_IP, 10, 2)  # IP_MTU_DISCOVER = DO
        self.sock.bind((src, SPORT))
        self.bsrc = socket.inet_pton(fam, src)
        if not v6:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_BROADCAST, 1)
            self.bcast = src.rsplit(".", 1)[0] + ".255"

    def gid(self, addr):
        if self.v6:
            return socket.inet_pton(socket.AF_INET6, addr)
        return bytes(10) + b"\xff\xff" + socket.inet_pton(socket.AF_INET, addr)

    def icrc(self, ib, dst=None):
        """ib with its last 4 bytes set to the ICRC for this path."""
        dst = socket.inet_pton(socket.AF_INET6 if self.v6 else socket.AF_INET, dst or self.dst)
        udp_len = 8 + len(ib)
        if self.v6:
            ip = b"\x6f\xff\xff\xff" + struct.pack(">HBB", udp_len, 17, 0xFF) + self.bsrc + dst
        else:
            ip = struct.pack(">BBHHHBBH", 0x45, 0xFF, 20 + udp_len, 0, 0x4000, 0xFF, 17, 0xFFFF)
            ip += self.bsrc + dst
        udp = struct.pack(">HHHH", SPORT, ROCE_PORT, udp_len, 0xFFFF)
        b = bytearray(ib[:12])
        b[4] = 0xFF
        crc = zlib.crc32(b"\xff" * 8 + ip + udp + bytes(b) + ib[12:-4])
        return ib[:-4] + struct.pack("<I", crc)

    def send(self, data, dst=None):
        self.sock.sendto(data, (dst or self.dst, ROCE_PORT))
