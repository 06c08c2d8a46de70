#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Drive one kind of TCP reset over loopback, both ends in this process.

Usage: tcpreset.py CASE FAMILY   (FAMILY 4 or 6; run it inside the namespace under test)

  closed     connect to a port nothing listens on: the kernel answers the SYN with a RST
             without a socket (NO_SOCKET); the client receives it in SYN_SENT.
  abort      the server closes an accepted connection with unread data: RST from the server
             (TCP_ABORT_ON_CLOSE); the client receives it in ESTABLISHED.
  linger0    the client closes with SO_LINGER {1, 0}: RST from the client; the server
             receives it in ESTABLISHED.
  timewait   the client closes first; once its socket is a TIME_WAIT socket (FIN_WAIT2
             substate) the server sends data: the TIME_WAIT socket answers with a RST
             (TCP_TIMEWAIT_SOCKET); the server receives it in CLOSE_WAIT.

Each case sends one reset and has one received (it waits for the error the reset causes, so
the kernel has processed it when this returns). Prints "ok CASE" and exits 0, or says what went
wrong and exits 1.
"""
import select
import socket
import struct
import sys
import time


def addr(fam):
    return ("127.0.0.1", socket.AF_INET) if fam == "4" else ("::1", socket.AF_INET6)


def listener(fam):
    host, af = addr(fam)
    s = socket.socket(af, socket.SOCK_STREAM)
    s.bind((host, 0))
    s.listen(4)
    return s, host, af, s.getsockname()[1]


def pair(fam):
    lst, host, af, port = listener(fam)
    c = socket.socket(af, socket.SOCK_STREAM)
    c.connect((host, port))
    srv, _ = lst.accept()
    lst.close()
    return c, srv


def expect_reset(sock, what):
    sock.settimeout(5)
    try:
        data = sock.recv(100)
    except ConnectionResetError:
        return
    sys.exit(f"{what}: expected a reset, got {data!r}")


def tw_substate_fin_wait2(fam, port):
    """True once the socket bound to local port is listed with state FIN_WAIT2 (5)."""
    path = "/proc/net/tcp" if fam == "4" else "/proc/net/tcp6"
    with open(path) as f:
        for line in f.readlines()[1:]:
            fields = line.split()
            local, state = fields[1], fields[3]
            if int(local.split(":")[1], 16) == port and state == "05":
                return True
    return False


def main():
    case, fam = sys.argv[1], sys.argv[2]
    if case == "closed":
        lst, host, af, port = listener(fam)
        lst.close()  # nothing listens on port now
        c = socket.socket(af, socket.SOCK_STREAM)
        try:
            c.connect((host, port))
        except ConnectionRefusedError:
            print("ok closed")
            return
        sys.exit("closed: connect did not fail")
    elif case == "abort":
        c, srv = pair(fam)
        c.sendall(b"x" * 100)
        # The data is in the server's receive queue before it closes.
        select.select([srv], [], [], 5)
        srv.close()
        expect_reset(c, "abort")
    elif case == "linger0":
        c, srv = pair(fam)
        c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        c.close()
        expect_reset(srv, "linger0")
    elif case == "timewait":
        c, srv = pair(fam)
        port = c.getsockname()[1]
        c.close()
        srv.settimeout(5)
        if srv.recv(100) != b"":
            sys.exit("timewait: expected the client's FIN")
        # The FIN's ACK may be delayed: wait until the client is a FIN_WAIT2 TIME_WAIT socket.
        for _ in range(500):
            if tw_substate_fin_wait2(fam, port):
                break
            time.sleep(0.01)
        else:
            sys.exit("timewait: the client socket never reached FIN_WAIT2")
        srv.send(b"x")
        # A reset in CLOSE_WAIT is EPIPE, which recv() does not report after the FIN: wait
        # for the socket to be closed (tcpi_state, the first byte of TCP_INFO).
        for _ in range(500):
            if srv.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 1)[0] == 7:
                break
            time.sleep(0.01)
        else:
            sys.exit("timewait: the server socket was not reset")
    else:
        sys.exit(f"unknown case {case}")
    print(f"ok {case}")


if __name__ == "__main__":
    main()
