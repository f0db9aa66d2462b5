"""Ports picked ahead of their bind come from below the kernel's ephemeral range, free when
picked; the kernel's own choice when that range leaves no room."""
from __future__ import annotations

import socket

from rafka.common.ports import LOWEST, ephemeral_range, port_is_free, unused_port


def test_a_port_below_the_ephemeral_range_that_nobody_listens_on() -> None:
    low, _ = ephemeral_range()
    for _ in range(20):
        port = unused_port()
        assert LOWEST <= port < low
        assert port_is_free("127.0.0.1", port)


class Picks:
    """A stand-in for random: the ports given, in turn."""

    def __init__(self, *ports: int) -> None:
        self._ports = iter(ports)

    def randint(self, low: int, high: int) -> int:
        port = next(self._ports)
        assert low <= port <= high
        return port


def test_a_port_someone_listens_on_is_passed_over() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", LOWEST + 1000 if port_is_free("127.0.0.1", LOWEST + 1000) else 0))
        taken.listen()
        busy = taken.getsockname()[1]
        free = next(p for p in range(busy - 1, LOWEST, -1) if port_is_free("127.0.0.1", p))
        assert not port_is_free("127.0.0.1", busy)
        assert unused_port(ephemeral=(busy + 1, 60999), pick=Picks(busy, free)) == free


def test_the_kernels_choice_when_the_range_below_the_ephemeral_one_is_empty() -> None:
    port = unused_port(ephemeral=(LOWEST, 60999))   # nothing between LOWEST and LOWEST - 1
    low, high = ephemeral_range()
    assert low <= port <= high


def test_the_range_is_read_from_the_kernel_or_linuxs_default(tmp_path) -> None:
    sysctl = tmp_path / "ip_local_port_range"
    sysctl.write_text("40000\t50000\n")
    assert ephemeral_range(sysctl) == (40000, 50000)
    assert ephemeral_range(tmp_path / "missing") == (32768, 60999)
