#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
"""Request-response TCP bursts, for tests/integration/retrans_cause.sh (tail loss probes).

  tcpburst.py server PORT BURST   listen on [::]:PORT (IPv4 too, v4-mapped); on each
                                  connection send one byte once accepted (the handshake is
                                  complete on this side too), then read BURST bytes and answer
                                  one byte, until EOF. Prints "listening".
  tcpburst.py client ADDR PORT BURST ROUNDS CONNS
                                  CONNS connections to ADDR:PORT one after another, each
                                  waiting for the server's first byte, then ROUNDS times: write
                                  BURST bytes at once, wait for the answer.
                                  Between rounds nothing is in flight, so a burst's last segment
                                  lost is followed by nothing new to send: the sender's loss
                                  probe resends it.

Exit status 1 when a connection fails or an answer does not come within 10 s.
"""
import socket
import sys
import threading


def serve(port, burst):
    s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    s.bind(("::", port))
    s.listen(64)
    print("listening", flush=True)

    def answer(c):
        try:
            c.sendall(b"h")
            while True:
                got = 0
                while got < burst:
                    b = c.recv(burst - got)
                    if not b:
                        return
                    got += len(b)
                c.sendall(b"k")
        except OSError:
            pass
        finally:
            c.close()

    while True:
        c, _ = s.accept()
        threading.Thread(target=answer, args=(c,), daemon=True).start()


def client(addr, port, burst, rounds, conns):
    fam = socket.AF_INET6 if ":" in addr else socket.AF_INET
    data = b"x" * burst
    for _ in range(conns):
        with socket.socket(fam, socket.SOCK_STREAM) as c:
            c.settimeout(10)
            c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            c.connect((addr, port))
            if c.recv(1) != b"h":
                print("tcpburst: no greeting", file=sys.stderr)
                return 1
            for _ in range(rounds):
                c.sendall(data)
                if c.recv(1) != b"k":
                    print("tcpburst: no answer", file=sys.stderr)
                    return 1
    return 0


def main(argv):
    try:
        if len(argv) == 4 and argv[1] == "server":
            serve(int(argv[2]), int(argv[3]))
            return 0
        if len(argv) == 7 and argv[1] == "client":
            return client(argv[2], int(argv[3]), *(int(a) for a in argv[4:7]))
    except OSError as e:
        print(f"tcpburst: {e}", file=sys.stderr)
        return 1
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
