#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
"""A FUSE file system that answers everything the kernel asks but READ,
which it reads and never answers, so that a page fault on its file stays
stuck until the connection is aborted (fusectl). odp_stuck.py and
net_raw.py make ODP faults that never return with it:

  python3 qemu-test/lib/fuse_hold.py

mounts it on MNT (one file, FILE, of FILE_SIZE bytes) through /dev/fuse
and mount(2), prints "daemon: READ held (N)" for each READ it holds and
"daemon: done ..." when the connection goes.
"""

import ctypes
import os
import struct
import sys

MNT = "/tmp/fuse_hold"
FILE = "file"
FILE_SIZE = 1 << 20
PAGE = 4096

FUSE_LOOKUP, FUSE_FORGET, FUSE_GETATTR = 1, 2, 3
FUSE_OPEN, FUSE_READ, FUSE_RELEASE, FUSE_FLUSH = 14, 15, 18, 25
FUSE_INIT, FUSE_OPENDIR, FUSE_RELEASEDIR = 26, 27, 29
FUSE_INTERRUPT, FUSE_DESTROY, FUSE_BATCH_FORGET = 36, 38, 42
ENOENT, ENOSYS = 2, 38
IN_HEADER = struct.Struct("<IIQQIIIHH")    # struct fuse_in_header
OUT_HEADER = struct.Struct("<IiQ")         # struct fuse_out_header
ATTR = struct.Struct("<QQQQQQIIIIIIIIII")  # struct fuse_attr


def attr_of(nodeid):
    if nodeid == 1:
        return ATTR.pack(1, 0, 0, 0, 0, 0, 0, 0, 0, 0o40755, 2, 0, 0, 0, PAGE, 0)
    return ATTR.pack(2, FILE_SIZE, FILE_SIZE // 512, 0, 0, 0, 0, 0, 0, 0o100644, 1,
                     0, 0, 0, PAGE, 0)


def daemon():
    """Serves MNT until the connection goes; holds every READ."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mount.argtypes = [ctypes.c_char_p] * 3 + [ctypes.c_ulong, ctypes.c_char_p]
    fd = os.open("/dev/fuse", os.O_RDWR)
    opts = f"fd={fd},rootmode=40000,user_id=0,group_id=0".encode()
    if libc.mount(b"rxe_odp_stuck", MNT.encode(), b"fuse", 2 | 4, opts) != 0:
        print(f"daemon: mount: {os.strerror(ctypes.get_errno())}", flush=True)
        return 1
    held = []

    def reply(unique, err=0, payload=b""):
        os.write(fd, OUT_HEADER.pack(OUT_HEADER.size + len(payload), err, unique) + payload)

    while True:
        try:
            buf = os.read(fd, 256 * 1024)
        except OSError as err:
            # ENODEV: the connection was aborted or unmounted.
            print(f"daemon: done ({err.strerror}), {len(held)} READs held", flush=True)
            return 0
        _, op, unique, nodeid, *_ = IN_HEADER.unpack_from(buf)
        body = buf[IN_HEADER.size:]
        if op == FUSE_INIT:
            major, minor, readahead, _flags = struct.unpack_from("<IIII", body)
            # struct fuse_init_out (64 bytes): protocol 7.31, no flags.
            reply(unique, 0, struct.pack("<IIIIHHIIHHII24x", 7, 31, readahead, 0,
                                         0, 0, 128 * 1024, 1, 0, 0, 0, 0))
        elif op == FUSE_LOOKUP:
            name = body.split(b"\0", 1)[0]
            if nodeid == 1 and name == FILE.encode():
                # struct fuse_entry_out
                reply(unique, 0, struct.pack("<QQQQII", 2, 0, 60, 60, 0, 0) + attr_of(2))
            else:
                reply(unique, -ENOENT)
        elif op == FUSE_GETATTR:
            reply(unique, 0, struct.pack("<QII", 60, 0, 0) + attr_of(nodeid))
        elif op in (FUSE_OPEN, FUSE_OPENDIR):
            reply(unique, 0, struct.pack("<QIi", 1, 0, 0))
        elif op == FUSE_READ:
            held.append(unique)
            print(f"daemon: READ held ({len(held)})", flush=True)
        elif op in (FUSE_FORGET, FUSE_BATCH_FORGET, FUSE_INTERRUPT):
            pass
        elif op in (FUSE_FLUSH, FUSE_RELEASE, FUSE_RELEASEDIR, FUSE_DESTROY):
            reply(unique)
        else:
            reply(unique, -ENOSYS)


if __name__ == "__main__":
    sys.exit(daemon())
