"""The embedded ZooKeeper launcher: starts fast, binds 127.0.0.1 only, stops by pid."""
from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from rafka.common.errors import StartupError
from rafka.coordinator.zk import zk_server
from rafka.coordinator.zk.zk_server import EmbeddedZooKeeper, is_zookeeper_process, read_pid_file, stop_from_pid_file


def listening_addresses(pid: int) -> set[tuple[str, int]]:
    """(address, port) of every TCP socket `pid` listens on, from /proc (no external tools)."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    found = set()
    for table, width in (("/proc/net/tcp", 8), ("/proc/net/tcp6", 32)):
        for line in Path(table).read_text().splitlines()[1:]:
            cols = line.split()
            local, state, inode = cols[1], cols[3], cols[9]
            if state != "0A" or inode not in inodes:  # 0A = LISTEN
                continue
            addr_hex, port_hex = local.split(":")
            raw = bytes.fromhex(addr_hex)
            # /proc prints each 32-bit word in host (little-endian) order
            words = [raw[i:i + 4][::-1] for i in range(0, len(raw), 4)]
            addr = b"".join(words)
            if width == 8:
                text = ".".join(str(b) for b in addr)
            elif addr[:12] == b"\0" * 10 + b"\xff\xff":
                text = ".".join(str(b) for b in addr[12:])  # v4-mapped
            else:
                text = ":".join(addr[i:i + 2].hex() for i in range(0, 16, 2))
            found.add((text, int(port_hex, 16)))
    return found


def test_starts_fast_binds_loopback_only_and_stops_by_pid(tmp_path):
    zk = EmbeddedZooKeeper(tmp_path / "zk")
    started = time.monotonic()
    zk.start(timeout_s=20)
    try:
        assert time.monotonic() - started < 20
        pid = zk.pid
        assert pid and read_pid_file(tmp_path / "zk") == pid and is_zookeeper_process(pid)
        assert os.getpgid(pid) == os.getpgid(0)  # stays in our group: killing the group stops it too
        assert listening_addresses(pid) == {("127.0.0.1", zk.port)}  # no 0.0.0.0:8080 admin server
        client = KazooClient(hosts=zk.connect_string)
        client.start(timeout=10)
        client.create("/x", b"1")
        client.stop()
        client.close()
        out = (tmp_path / "zk" / "zookeeper.out").read_text()
        assert "ZooKeeperServer" in out  # its log goes to the data dir
        cfg = (tmp_path / "zk" / "zoo.cfg").read_text()
        assert "clientPortAddress=127.0.0.1" in cfg and "admin.enableServer=false" in cfg
    finally:
        zk.stop()
    assert not is_zookeeper_process(pid)
    assert read_pid_file(tmp_path / "zk") is None


def test_data_survives_restart_and_detached_server_stops_from_pid_file(tmp_path):
    data = tmp_path / "zk"
    zk = EmbeddedZooKeeper(data).start()
    client = KazooClient(hosts=zk.connect_string)
    client.start(timeout=10)
    client.create("/kept", b"v")
    client.stop()
    client.close()
    zk.stop()
    zk2 = EmbeddedZooKeeper(data, port=zk.port).start()
    pid = zk2.pid
    client = KazooClient(hosts=zk2.connect_string)
    client.start(timeout=10)
    assert client.get("/kept")[0] == b"v"
    client.stop()
    client.close()
    with pytest.raises(StartupError, match="already runs"):
        EmbeddedZooKeeper(data).start()
    # `rafka down` knows only the data dir
    assert stop_from_pid_file(data, timeout_s=10)
    assert not is_zookeeper_process(pid) and read_pid_file(data) is None
    zk2.stop()  # idempotent after an external stop


def test_missing_zookeeper_is_a_clear_startup_error(tmp_path, monkeypatch):
    monkeypatch.setattr(zk_server, "ZOOKEEPER_JAR", tmp_path / "nope.jar")
    with pytest.raises(StartupError, match=r"ZooKeeper not found: install Debian's zookeeper package "
                                           r"\(apt-get install zookeeper\)"):
        EmbeddedZooKeeper(tmp_path / "zk").start()


def test_port_in_use_fails_with_the_log_tail(tmp_path, zk_server):
    port = int(zk_server.rsplit(":", 1)[1])
    with pytest.raises(StartupError, match="already in use"):
        EmbeddedZooKeeper(tmp_path / "zk", port=port).start(timeout_s=20)
