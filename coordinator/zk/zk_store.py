"""The ZooKeeper session of a broker (or tool) and the one object through which it reads and
writes Kafka's ZooKeeper state: `ZkStore` connects (creating the chroot and Kafka's persistent
paths), closes, and reports session changes; what it reads and writes comes from its mixins:
`ZkBrokers` (zk_brokers.py: cluster id, registration, controller election),
`ZkTopics` (zk_topics.py: topics, configs, partition states, deletion),
`ZkNotifications` (zk_notifications.py: ISR changes, log dir events, offline replicas),
`ZkProducerIdBlocks` (zk_producer_ids.py) and `ZkWatches` (zk_watches.py). The JSON and paths
come from `zk_data.py`, the conflict errors from `zk_errors.py`;
`zk_session.clear_stale_ephemerals` clears a stale run's nodes.

The session is the broker's liveness (its ephemeral `/brokers/ids/<id>` and, when it is the
controller, `/controller` vanish when it ends). Calls block the calling thread on ZooKeeper
round trips; callbacks given to the watch helpers and to `on_session_state` run on kazoo's own
event thread: keep them short and hand work to the owner (the coordinator actor) rather than
calling back into ZooKeeper synchronously from many of them.

A connect string may end with a chroot (`127.0.0.1:2181/kafka`); it is created if missing,
as Kafka does.
"""
from __future__ import annotations

from typing import Callable

from kazoo.client import KazooClient, KazooState
from kazoo.handlers.threading import KazooTimeoutError

from rafka.common.errors import StartupError
from rafka.coordinator.zk import zk_data as zd
from rafka.coordinator.zk.zk_brokers import ZkBrokers
from rafka.coordinator.zk.zk_notifications import ZkNotifications
from rafka.coordinator.zk.zk_producer_ids import ZkProducerIdBlocks
from rafka.coordinator.zk.zk_topics import ZkTopics
from rafka.coordinator.zk.zk_watches import ZkWatches


def split_chroot(connect: str) -> tuple[str, str]:
    hosts, slash, chroot = connect.partition("/")
    return hosts, (("/" + chroot).rstrip("/") if slash else "")


class ZkStore(ZkBrokers, ZkTopics, ZkNotifications, ZkWatches, ZkProducerIdBlocks):
    """One broker's (or tool's) view of Kafka's ZooKeeper state. Thread-safe as kazoo is."""

    def __init__(self, connect: str, session_timeout_ms: int = 18000, *, connect_timeout_s: float = 15.0) -> None:
        self.connect = connect
        self.session_timeout_ms = session_timeout_ms
        self.connect_timeout_s = connect_timeout_s
        self._client: KazooClient | None = None
        self.controller_epoch_zk_version: int | None = None  # set when this store won /controller

    # ---- lifecycle -----------------------------------------------------------------------
    @property
    def client(self) -> KazooClient:
        if self._client is None:
            raise RuntimeError("ZkStore is not started")
        return self._client

    def start(self) -> "ZkStore":
        """Connect, create the chroot and Kafka's persistent paths. StartupError when
        ZooKeeper cannot be reached within `connect_timeout_s`."""
        if self._client is not None:
            return self
        hosts, chroot = split_chroot(self.connect)
        if chroot:
            bootstrap = self._connect(hosts)
            try:
                bootstrap.ensure_path(chroot)
            finally:
                bootstrap.stop()
                bootstrap.close()
        self._client = self._connect(self.connect)
        for path in zd.PERSISTENT_PATHS:
            self._client.ensure_path(path)
        return self

    def _connect(self, hosts: str) -> KazooClient:
        client = KazooClient(hosts=hosts, timeout=self.session_timeout_ms / 1000.0)
        try:
            client.start(timeout=self.connect_timeout_s)
        except KazooTimeoutError as e:
            client.close()
            raise StartupError(f"Cannot connect to ZooKeeper at {self.connect} within "
                               f"{self.connect_timeout_s:.0f} s: is it running? (zookeeper.connect)") from e
        return client

    def stop(self) -> None:
        """Close the session: this broker's ephemeral znodes disappear at once."""
        client, self._client = self._client, None
        if client is not None:
            client.stop()
            client.close()

    def __enter__(self) -> "ZkStore":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def session_id(self) -> int:
        return self.client.client_id[0] if self.client.client_id else 0

    def on_session_state(self, callback: Callable[[str], None]) -> None:
        """Call `callback("LOST" | "SUSPENDED" | "CONNECTED")` on session changes (kazoo
        thread). After LOST, kazoo reconnects with a new session: ephemeral znodes are gone
        and the owner must register again."""
        def listener(state: KazooState) -> None:
            callback(str(state))
        self.client.add_listener(listener)
