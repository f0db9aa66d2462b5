"""Ports chosen ahead of the process that binds them.

A port the kernel hands out for a bind to port 0 lies in its ephemeral range
(`/proc/sys/net/ipv4/ip_local_port_range`, 32768-60999 by default), the same range it takes
every outgoing connection's local port from. A port picked there but bound only later (the
private ZooKeeper's, bound by a JVM a second on; a broker's written into a server.properties or
kept for its restart) can be taken meanwhile by any connection on the machine, and the bind
then fails. A port below that range and above Ray's worker ports (10002-19999) is never handed
out that way: only a process that asks for it by its number can take it.
"""
from __future__ import annotations

import random
import socket
from pathlib import Path

# Above Ray's default worker ports (min/max_worker_port 10002-19999).
LOWEST = 20000
EPHEMERAL_RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")
DEFAULT_EPHEMERAL = (32768, 60999)
ATTEMPTS = 200


def ephemeral_range(path: Path = EPHEMERAL_RANGE_FILE) -> tuple[int, int]:
    """The kernel's ephemeral port range (Linux's default when it cannot be read)."""
    try:
        low, high = (int(n) for n in path.read_text().split())
    except (OSError, ValueError):
        return DEFAULT_EPHEMERAL
    return low, high


def port_is_free(host: str, port: int) -> bool:
    """True when nothing listens on host:port (a bind test with SO_REUSEADDR, as servers bind)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def kernel_port(host: str = "127.0.0.1") -> int:
    """A port nobody listens on right now, the kernel's choice (from its ephemeral range)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def unused_port(host: str = "127.0.0.1", *, ephemeral: tuple[int, int] | None = None,
                pick: random.Random | None = None) -> int:
    """A port nobody listens on, below the ephemeral range (see the module doc), picked at
    random so two callers at once rarely pick the same; the kernel's choice when that range is
    empty or full."""
    highest = (ephemeral or ephemeral_range())[0] - 1
    pick = pick or random.SystemRandom()
    if highest >= LOWEST:
        for _ in range(ATTEMPTS):
            port = pick.randint(LOWEST, highest)
            if port_is_free(host, port):
                return port
    return kernel_port(host)
