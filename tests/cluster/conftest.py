"""Cluster tier: one real ZooKeeper per session, a fresh chroot per test."""
from __future__ import annotations

import uuid
from typing import Iterator

import pytest
from kazoo.client import KazooClient

from rafka.coordinator.zk.zk_server import EmbeddedZooKeeper


@pytest.fixture(scope="session")
def zk_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Connect string ("127.0.0.1:<port>") of one real ZooKeeper for the whole session,
    started by our launcher and stopped by pid at the end."""
    zk = EmbeddedZooKeeper(tmp_path_factory.mktemp("zookeeper"))
    zk.start(timeout_s=20)
    try:
        yield zk.connect_string
    finally:
        zk.stop()


@pytest.fixture
def zk_connect(zk_server: str) -> Iterator[str]:
    """Connect string with a fresh chroot (`127.0.0.1:<port>/t-<hex>`), removed after the test,
    so tests never see each other's znodes."""
    chroot = f"/t-{uuid.uuid4().hex[:12]}"
    yield zk_server + chroot
    client = KazooClient(hosts=zk_server)
    client.start(timeout=10)
    try:
        client.delete(chroot, recursive=True)
    except Exception:  # noqa: BLE001 - nothing to clean
        pass
    finally:
        client.stop()
        client.close()


@pytest.fixture
def zk_raw(zk_connect: str) -> Iterator[KazooClient]:
    """A plain kazoo client inside the test's chroot, for reading znodes raw."""
    hosts, _, chroot = zk_connect.partition("/")
    boot = KazooClient(hosts=hosts)
    boot.start(timeout=10)
    boot.ensure_path("/" + chroot)
    boot.stop()
    boot.close()
    client = KazooClient(hosts=zk_connect)
    client.start(timeout=10)
    yield client
    client.stop()
    client.close()
