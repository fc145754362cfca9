#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""A bounded TCP transfer with a checksum, for the IP-beside-VIA tests
(ipcoexist.sh): the client sends BYTES pseudo-random bytes of SEED, the
server receives them; each prints "sha256 HEX bytes N MB/s R" and the
script compares the two lines' digests. Every socket operation has a
timeout, so a lost path ends the run instead of hanging it.

  tcp_stream.py server ADDR PORT BYTES [TIMEOUT_S]
  tcp_stream.py client ADDR PORT BYTES SEED [TIMEOUT_S]
"""
import hashlib
import random
import socket
import sys
import time

CHUNK = 64 * 1024


def server(addr, port, nbytes, timeout):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as ls:
        ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        ls.bind((addr, port))
        ls.listen(1)
        ls.settimeout(timeout)
        conn, _ = ls.accept()
        with conn:
            conn.settimeout(timeout)
            h = hashlib.sha256()
            got = 0
            t0 = time.monotonic()
            while got < nbytes:
                b = conn.recv(min(CHUNK, nbytes - got))
                if not b:
                    break
                h.update(b)
                got += len(b)
            dt = time.monotonic() - t0
            conn.sendall(b"k")  # the client's send is done only when all arrived
    report(h, got, dt)
    return 0 if got == nbytes else 1


def client(addr, port, nbytes, seed, timeout):
    rng = random.Random(seed)
    h = hashlib.sha256()
    deadline = time.monotonic() + timeout
    while True:  # the server may not listen yet
        try:
            s = socket.create_connection((addr, port), timeout=timeout)
            break
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)
    with s:
        s.settimeout(timeout)
        sent = 0
        t0 = time.monotonic()
        while sent < nbytes:
            b = rng.randbytes(min(CHUNK, nbytes - sent))
            s.sendall(b)
            h.update(b)
            sent += len(b)
        s.recv(1)
        dt = time.monotonic() - t0
    report(h, sent, dt)
    return 0


def report(h, n, dt):
    print("sha256 %s bytes %d MB/s %.1f" % (h.hexdigest(), n, n / 1e6 / max(dt, 1e-9)))


def main(argv):
    if len(argv) < 5:
        print(__doc__, file=sys.stderr)
        return 2
    role, addr, port, nbytes = argv[1], argv[2], int(argv[3]), int(argv[4])
    if role == "server":
        return server(addr, port, nbytes, float(argv[5]) if len(argv) > 5 else 60)
    return client(addr, port, nbytes, int(argv[5]), float(argv[6]) if len(argv) > 6 else 60)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
