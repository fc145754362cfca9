#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""
Write the seed corpus of the fuzz targets that take binary input
(tests/fuzz/corpus/TARGET/seed-*): well-formed control streams, frames of
every opcode, request streams and hostile segments, so that each fuzzer
starts past the first checks. The text targets (conf, hosts) take the
files of config/ and hand-written seeds. Run from anywhere; rewrites only
seed-* files (crash-* regression inputs stay).

The layouts are those of abi/via_ctl.h, daemon/wire.h and the harnesses'
own input formats (the comment at the top of each tests/fuzz/fuzz_*.c).
"""
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ABI = 13
COOKIE = 0x56494100 | ABI

# op: (request body size, reply body size), abi/via_ctl.c
OPS = {
    1: (72, 160), 2: (0, 8), 3: (8, 0), 4: (48, 8), 5: (16, 0), 6: (16, 8),
    7: (24, 0), 8: (8, 16), 9: (16, 0), 10: (8, 0), 11: (8, 16), 12: (8, 0),
    13: (32, 24), 14: (8, 0), 15: (8, 32), 16: (24, 0), 17: (264, 8),
    18: (8, 256), 19: (0, 224), 20: (0, 128), 21: (152, 96), 22: (8, 0),
    23: (8, 0), 24: (152, 16), 25: (8, 0), 26: (152, 0), 27: (8, 16),
    28: (8, 16), 29: (16, 16), 30: (0, 0), 31: (8, 0), 32: (8, 32),
}


def ctl_msg(op, reply=False, seq=1, status=0, body=None):
    size = OPS[op][1 if reply else 0]
    if body is None:
        body = b""
    body = body[:size].ljust(size, b"\0")
    hdr = struct.pack("<IHHIiII", COOKIE, op, 1 if reply else 0, seq, status, size, 0)
    return hdr + body


def open_req(name=b"via0"):
    return name.ljust(64, b"\0") + struct.pack("<II", ABI, 0)


def write(target, name, data):
    d = os.path.join(HERE, "corpus", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "seed-" + name), "wb") as f:
        f.write(data)


def mem_reg_body(addr, length, ptag=1, rdma_w=0, rdma_r=0, placement=0, reason=1, offset=0,
                 shmid=0, flags=0):
    # struct via_ctl_mem_register_req (abi/via_ctl.h)
    return struct.pack("<QQIBBxxIIQiI", addr, length, ptag, rdma_w, rdma_r, placement, reason,
                       offset, shmid, flags)


def seeds_ctl():
    # control byte (bit 0: replies), chunk size, fd mask, fd kinds, then the stream
    reqs = b"".join([
        ctl_msg(1, body=open_req()),
        ctl_msg(2, seq=2),
        ctl_msg(4, seq=3, body=mem_reg_body(0x500000000000, 4096, reason=0)),
        ctl_msg(11, seq=4, body=struct.pack("<II", 64, 0)),
        ctl_msg(31, seq=5, body=struct.pack("<II", 2, 0)),
    ])
    write("ctl", "requests", bytes([0, 0, 0, 0]) + reqs)
    write("ctl", "requests-chunked-fd", bytes([0, 7, 0x5, 1]) + reqs)
    write("ctl", "requests-two-fds", bytes([0, 24, 0x3, 0x82]) + reqs)
    reps = b"".join([
        ctl_msg(1, reply=True),
        ctl_msg(8, reply=True, seq=2),
        ctl_msg(19, reply=True, seq=3),
        ctl_msg(3, reply=True, seq=4, status=-2),
    ])
    write("ctl", "replies-fd", bytes([1, 0, 0x1, 0]) + reps)
    write("ctl", "bad-cookie", bytes([0, 0, 0, 0]) + b"\0" * 24)


WIRE_VERSION = 2                    # daemon/wire.h VIA_WIRE_VERSION


def crc32c(data, crc=0xffffffff):
    # rte_hash_crc(): CRC32C without the final inversion
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc


def frame(op, payload=b"", flags=0, dst_vi=1, src_vi=2, conn=0x1234, seq=0, msg_id=1,
          msg_len=None, offset=0, imm=0):
    if msg_len is None:
        msg_len = len(payload)
    eth = bytes([2, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 1]) + struct.pack(">H", 0x88B5)
    hdr = struct.pack(">BBHIIIIIIIIHHII", WIRE_VERSION, op, flags, dst_vi, src_vi, conn, seq, msg_id,
                      msg_len, offset, imm, len(payload), 0, 0, 0)
    pcrc = crc32c(payload)
    hdr = hdr[:40] + struct.pack(">I", pcrc) + hdr[44:]
    hcrc = crc32c(hdr)
    hdr = hdr[:44] + struct.pack(">I", hcrc)
    return eth + hdr + payload


def conn_payload(fp=1452, dst=b"server", src=b"client"):
    return (struct.pack(">HBBIIBBH", 2, 1, 1, 65536, 0, len(dst), len(src), fp)
            + dst.ljust(64, b"\0") + src.ljust(64, b"\0"))


def seeds_wire():
    # control byte: 0x1 seal, 0x2 VIA frame to our MAC; the frames below
    # are sealed already (control 0: checked as they are)
    rdma = struct.pack(">QII", 0x600000001000, 7, 0)
    frames = {
        "conn_req": frame(1, conn_payload(), dst_vi=0, imm=0x5eed),
        "conn_accept": frame(2, conn_payload(dst=b"", src=b"")),
        "conn_reject": frame(3),
        "conn_nomatch": frame(4),
        "disc": frame(5),
        "reset": frame(6),
        "send": frame(7, bytes(range(200)), msg_len=1000, offset=400, flags=1, imm=7),
        "ack": frame(8, seq=5),
        "nak": frame(9, imm=0x40),
        "rdma_write": frame(10, rdma + b"x" * 100, msg_len=100),
        "rdma_read_req": frame(11, rdma, msg_len=4096),
        "rdma_read_resp": frame(12, b"y" * 64, msg_len=64),
        "conn_ack": frame(13),
        "conn_cookie": frame(14, dst_vi=2, src_vi=0, imm=0x5eed),
    }
    for name, f in frames.items():
        write("wire", name, bytes([0]) + f)
    write("wire", "send-padded-reseal", bytes([3]) + frame(7, b"z" * 3) + b"\0" * 40)
    write("wire", "short", bytes([2]) + frame(5)[:30])


CLIENT_VA = 0x500000000000          # tests/fuzz/fuzz_dispatch.c


def req(op, body=b""):
    return bytes([op]) + body.ljust(OPS[op][0], b"\0")[:OPS[op][0]]


def mem_reg(addr, length, ptag=1, rdma_w=0, rdma_r=0, placement=0, reason=1, offset=0, shmid=0,
            flags=0):
    return req(4, mem_reg_body(addr, length, ptag, rdma_w, rdma_r, placement, reason, offset,
                               shmid, flags))


# tests/fuzz/fuzz_dispatch.c: an fd with the next request, of a kind (enum fd_kind)
OP_FD = 0xf2
FD_SHARE_FILE, FD_MEMFD_SEALED, FD_MEMFD_READ_ONLY, FD_MEMFD_UNSEALED, FD_HUGETLB = range(5)
FD_EVENTFD, FD_PIPE_READ, FD_PIPE_WRITE, FD_SOCKET, FD_DIRECTORY, FD_DEV_NULL = range(5, 11)
FD_PROC_MEM, FD_PROC_MEM_READ_ONLY, FD_O_PATH = range(11, 14)


def fd(kind):
    return bytes([OP_FD, kind])


def client_fd(kind):
    return req(31, struct.pack("<II", kind, 0))


def vi_attr(rel=1, rdma_w=0, rdma_r=0, max_transfer=4096, qos=0, ptag=1):
    return struct.pack("<HBBIII", rel, rdma_w, rdma_r, max_transfer, qos, ptag)


def ident(i):
    return struct.pack("<II", i, 0)


def seeds_dispatch():
    # setup byte (0x1 /proc/self/mem given, 0x2 share file given), then
    # records: op byte + request body; 0xf0 produce (u32 cq, u8 n),
    # 0xf1 client writes a CQ's cons (u32 cq, u32 value), 0xf2 an fd (u8 kind)
    # with the next request
    opn = req(1, open_req())
    copied = b"".join([
        opn, req(2), mem_reg(CLIENT_VA + 0x100, 8192),
        req(6, struct.pack("<QII", CLIENT_VA + 0x100, 1, 0)),
        req(7, struct.pack("<QIIIBBxx", CLIENT_VA + 0x100, 1, 0, 1, 1, 0)),
        req(11, struct.pack("<II", 64, 0)),
        req(13, vi_attr() + struct.pack("<IIII", 1, 0, 7, 0)),
        bytes([0xf0]) + struct.pack("<IB", 1, 10),
        bytes([0xf1]) + struct.pack("<II", 1, 3),
        req(29, struct.pack("<IIII", 1, 128, 3, 0)),
        req(15, ident(1)), req(14, ident(1)), req(12, ident(1)),
        req(5, struct.pack("<QII", CLIENT_VA + 0x100, 1, 0)), req(3, ident(1)),
    ])
    write("dispatch", "copied-cq-vi", bytes([1]) + copied)
    pmem_va = 0x510000000000
    pmem = b"".join([
        opn, req(2), req(8, struct.pack("<Q", 4096)),
        req(9, struct.pack("<QII", pmem_va, 1, 0)),
        mem_reg(pmem_va + 64, 1000), req(10, ident(1)),
        req(13, vi_attr(rel=2, rdma_w=1, rdma_r=1, max_transfer=65536) +
            struct.pack("<IIII", 0, 0, 9, 0)),
        req(16, vi_attr(rel=4, max_transfer=1024) + struct.pack("<II", 1, 0)),
    ])
    write("dispatch", "pmem-vi", bytes([0]) + pmem)
    inplace = b"".join([
        opn, req(2), mem_reg(CLIENT_VA, 4096, placement=1, reason=0),
        mem_reg(CLIENT_VA + 0xff000, 4096, flags=1),
    ])
    write("dispatch", "in-place", bytes([3]) + inplace)
    # the client's fds: given, refused, with objects (placement 2) and SysV (3)
    fds = b"".join([
        opn, req(2), fd(FD_SHARE_FILE), client_fd(1), fd(FD_PROC_MEM), client_fd(2),
        fd(FD_PIPE_READ), client_fd(3),
        fd(FD_EVENTFD), client_fd(1), fd(FD_PIPE_WRITE), client_fd(3),
        fd(FD_MEMFD_SEALED), mem_reg(CLIENT_VA + 8192, 8192, placement=2, reason=0, offset=4096),
        fd(FD_MEMFD_READ_ONLY), mem_reg(CLIENT_VA + 65536, 4096, placement=2, reason=0),
        fd(FD_MEMFD_UNSEALED), mem_reg(CLIENT_VA + 131072, 4096, placement=2, reason=0),
        fd(FD_SOCKET), mem_reg(CLIENT_VA + 196608, 4096, placement=2, reason=0),
        fd(FD_DEV_NULL), req(2),
        fd(FD_MEMFD_SEALED), fd(FD_MEMFD_SEALED), mem_reg(CLIENT_VA, 4096, placement=2),
        mem_reg(CLIENT_VA + 262144, 4096, placement=3, reason=0, shmid=0),
    ])
    write("dispatch", "client-fds", bytes([0]) + fds)
    write("dispatch", "not-open", bytes([1]) + req(2) + req(11, struct.pack("<II", 8, 0)))


# tests/fuzz/fuzz_ring.c: op, vi, queue, then the op's operands
(R_MEM, R_SEG, R_POST, R_DESC, R_POLL, R_RECV, R_STATE, R_FLUSH, R_FETCH, R_EMPTY, R_TABLE,
 R_CHECK) = range(12)
SHARE = 0x40        # an address mode: in place (the share file), u16 offset
TABLE_REGION = 5    # handles[5]: the table's entry 0, the share file's first 32 KiB


def r_op(op, vi=0, q=0, rest=b""):
    return bytes([op, vi, q]) + rest


def r_desc(off, control, segs, length, imm=0):
    # mode 0: an address in provider memory (u16 offset); each segment:
    # mode 0, u16 offset, u8 region, u16 length
    body = struct.pack("<BHHHII", 0, off, len(segs), control, length, imm) + bytes([len(segs)])
    for buf_off, region, n in segs:
        body += struct.pack("<BHBH", 0, buf_off, region, n)
    return r_op(R_DESC, rest=body)


def r_wqe(off, region=0):
    return struct.pack("<BHB", 0, off, region)


def r_line(off, mode, segs, length, data=b"\x00" * 64):
    # post's mode 0 (its own sequence word), the entry's descriptor address
    # (r_wqe), then read_line(): mode (VIA_WQE_DESC 4, VIA_WQE_INLINE 8), u16
    # control, u8 segment count, u8 length, u32 immediate data, two segments
    # (mode 0, u16 offset, u8 region, u8 length), then the entry's inline line
    body = bytes([0]) + r_wqe(off) + struct.pack("<BHBBI", mode, 0, len(segs), length, 0)
    for buf_off, region, n in (segs + [(0, 0, 0)] * 2)[:2]:
        body += struct.pack("<BHBB", 0, buf_off, region, n)
    return body + data


def seeds_ring():
    recv_send = b"".join([
        r_desc(0x100, 0, [(0x1000, 0, 100)], 100),
        r_op(R_POST, 0, 1, r_wqe(0x100)),
        r_op(R_RECV, 0, 1),
        r_desc(0x200, 0, [(0x2000, 0, 60), (0x3000, 0, 40)], 100),
        r_op(R_POST, 0, 0, r_wqe(0x200)),
        r_op(R_POLL),
        r_op(R_FETCH, 0, 0, r_wqe(0x200)),
        r_op(R_STATE, 0, 0, b"\x01"),
        r_op(R_POST, 0, 1, r_wqe(0x100)),
        r_op(R_POLL),
        r_op(R_FLUSH, 0, 0),
    ])
    write("ring", "recv-send-flush", recv_send)
    rdma = b"".join([
        r_desc(0x400, 2, [(0x5000, 0, 0), (0x6000, 0, 256)], 256),
        r_op(R_FETCH, 1, 0, r_wqe(0x400)),
        r_desc(0x500, 1 | 4, [(0x5000, 0, 0), (0x7000, 0, 32)], 32, imm=7),
        r_op(R_POST, 1, 0, r_wqe(0x500)),
        r_op(R_POLL),
        r_op(R_EMPTY, 1, 0),
    ])
    write("ring", "rdma", rdma)
    hostile = b"".join([
        r_op(R_SEG, 0, 0, struct.pack("<IB", 0x1000, 4) + b"\xff\xff\xff\x7f"),
        r_op(R_POST, 2, 1, r_wqe(0x9000, 1)),
        r_op(R_RECV, 2, 1),
        r_op(R_POLL),
        r_op(R_EMPTY, 0, 1),
        r_op(R_MEM, 0, 0, b"\x08" + b"\xaa" * 8 + b"\x00\x00\x01"),
    ])
    write("ring", "hostile", hostile)
    # vis[3]: line entries with 64 bytes inline (issue 30): a receive and an
    # inlined Send, each descriptor in its entry, then the poll, a fetch of
    # the entry taken last, and the flush
    lines = b"".join([
        r_op(R_POST, 3, 1, r_line(0x100, 4, [(0x1000, 0, 64)], 64)),
        r_op(R_RECV, 3, 1),
        r_op(R_POST, 3, 0, r_line(0x200, 4 | 8, [(0x2000, 0, 64)], 64, b"\x5a" * 64)),
        r_op(R_POLL),
        r_op(R_FETCH, 3, 0, r_wqe(0x200) + r_line(0x200, 4 | 8, [(0x2000, 0, 64)], 64)[1:-64]),
        r_op(R_FLUSH, 3, 0),
    ])
    write("ring", "lines", lines)
    # the client's table (issue 29): a descriptor and its data in place,
    # named by a table handle; then the client rewrites the entry
    def seg(off, n):
        return struct.pack("<BHBH", SHARE, off, TABLE_REGION, n)
    desc = struct.pack("<BHHHII", SHARE, 0x100, 2, 0, 300, 0) + bytes([2]) + \
        seg(0x1000, 200) + seg(0x2000, 100)
    table = b"".join([
        r_op(R_DESC, rest=desc),
        r_op(R_FETCH, 0, 0, struct.pack("<BHB", SHARE, 0x100, TABLE_REGION)),
        r_op(R_POST, 0, 1, struct.pack("<BHB", SHARE, 0x100, TABLE_REGION)),
        r_op(R_RECV, 0, 1),
        # entry 0: a range past its window, then a lying window index
        r_op(R_TABLE, rest=struct.pack("<BBQHBB", 1, 0, 0x520000000000 - 8, 0xffff, 1, 0)
             + struct.pack("<BBH", 0, 3, 0)),
        r_op(R_FETCH, 0, 0, struct.pack("<BHB", SHARE, 0x100, TABLE_REGION)),
        r_op(R_CHECK, rest=struct.pack("<BHHBBB", SHARE, 0x10, 64, TABLE_REGION, 0, 0xf)),
    ])
    write("ring", "table", table)


def main():
    seeds_ctl()
    seeds_wire()
    seeds_dispatch()
    seeds_ring()
    return 0


if __name__ == "__main__":
    sys.exit(main())
