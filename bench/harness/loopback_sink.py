"""Receiver half of the loopback TCP test, run as its own process (so it has its own core).

usage: python _loopback_sink.py BYTES BUFFER_BYTES
Binds 127.0.0.1 on a kernel-chosen port, prints the port on stdout, accepts one
connection, reads BYTES bytes, answers b"ok" and exits.
"""
from __future__ import annotations

import socket
import sys


def main(total: int, buffer_size: int) -> int:
    with socket.socket() as server:
        server.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, buffer_size)
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        print(server.getsockname()[1], flush=True)
        conn, _ = server.accept()
        with conn:
            buf = bytearray(buffer_size)
            view = memoryview(buf)
            received = 0
            while received < total:
                n = conn.recv_into(view)
                if n == 0:
                    return 1
                received += n
            conn.sendall(b"ok")
    return 0


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]), int(sys.argv[2])))
