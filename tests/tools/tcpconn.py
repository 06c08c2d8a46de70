#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
"""TCP connections that end in a chosen way, for tests/integration/connections.sh.

  tcpconn.py server PORT [BACKLOG]
                                  listen on [::]:PORT (IPv4 too, v4-mapped) with BACKLOG (128);
                                  each connection is read until EOF or an error, then closed.
                                  Prints "listening".
  tcpconn.py client MODE ADDR PORT N
                                  N connections to ADDR:PORT at once, each ending as MODE says:
      close     send a byte, shut down writing, read until the server's EOF, close: both ends
                go through FIN states (outcome closed on both sides)
      reset     close with SO_LINGER 0 once established: this end sends a reset (reset here),
                the server receives it (reset there)
      refused   nothing listens: the connect must fail with ECONNREFUSED
      timeout   the SYN-ACK never arrives: with TCP_SYNCNT 1 the connect must fail with ETIMEDOUT
      abandon   a non-blocking connect that is still pending (no SYN-ACK) is closed after 0.2 s
      stall     established, then data that never arrives (the test drops it): TCP_USER_TIMEOUT
                500 ms must end the connection with ETIMEDOUT

  tcpconn.py clients ADDR MODE:PORT:N...
                                  the same for each MODE:PORT:N in turn, in one process (the
                                  kernel matrix's guests pay seconds per Python start)
  tcpconn.py churn ADDR PORT SECONDS THREADS
                                  THREADS loops of mode close for SECONDS; prints the number of
                                  connections made (for tests/bench/connections.sh)

Exit status 1 when a connection did not end as its mode says, with the reason on stderr.
"""
import errno
import socket
import struct
import sys
import threading
import time


def serve(port, backlog=128):
    s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    s.bind(("::", port))
    s.listen(backlog)
    print("listening", flush=True)

    def drain(c):
        try:
            while c.recv(65536):
                pass
        except OSError:
            pass
        c.close()

    while True:
        c, _ = s.accept()
        threading.Thread(target=drain, args=(c,), daemon=True).start()


def family(addr):
    return socket.AF_INET6 if ":" in addr else socket.AF_INET


def one(mode, addr, port):
    """One connection; None when it ended as mode says, else why not."""
    s = socket.socket(family(addr), socket.SOCK_STREAM)
    try:
        if mode == "abandon":
            s.setblocking(False)
            err = s.connect_ex((addr, port))
            if err != errno.EINPROGRESS:
                return f"connect returned {errno.errorcode.get(err, err)}, not EINPROGRESS"
            time.sleep(0.2)
            return None
        if mode == "timeout":
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_SYNCNT, 1)
        try:
            s.connect((addr, port))
        except OSError as e:
            want = {"refused": errno.ECONNREFUSED, "timeout": errno.ETIMEDOUT}.get(mode)
            return None if e.errno == want else f"connect: {e}"
        if mode in ("refused", "timeout"):
            return "connect succeeded"
        if mode == "reset":
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            return None
        if mode == "close":
            s.sendall(b"x")
            s.shutdown(socket.SHUT_WR)
            while s.recv(65536):
                pass
            return None
        if mode == "stall":
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_USER_TIMEOUT, 500)
            s.sendall(b"y" * 1000)
            s.settimeout(10)
            try:
                s.recv(1)
            except OSError as e:
                return None if e.errno == errno.ETIMEDOUT else f"recv: {e}"
            return "recv returned"
        return f"unknown mode {mode}"
    finally:
        s.close()


def client(mode, addr, port, n):
    errors = []

    def run():
        err = one(mode, addr, port)
        if err:
            errors.append(err)

    threads = [threading.Thread(target=run) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for e in errors:
        print(f"{mode} {addr}:{port}: {e}", file=sys.stderr)
    return 1 if errors else 0


def churn(addr, port, seconds, threads):
    counts = [0] * threads
    end = time.monotonic() + seconds

    def run(i):
        while time.monotonic() < end:
            if one("close", addr, port) is None:
                counts[i] += 1

    ts = [threading.Thread(target=run, args=(i,)) for i in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    print(sum(counts))


if __name__ == "__main__":
    if len(sys.argv) in (3, 4) and sys.argv[1] == "server":
        serve(*map(int, sys.argv[2:]))
    elif len(sys.argv) == 6 and sys.argv[1] == "client":
        sys.exit(client(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])))
    elif len(sys.argv) >= 4 and sys.argv[1] == "clients":
        rc = 0
        for spec in sys.argv[3:]:
            mode, port, n = spec.split(":")
            rc |= client(mode, sys.argv[2], int(port), int(n))
        sys.exit(rc)
    elif len(sys.argv) == 6 and sys.argv[1] == "churn":
        churn(sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5]))
    else:
        sys.exit(__doc__)
