"""The cluster's registry: one small named actor that tells any driver what the cluster is.

`rafka.Cluster.start` creates it as the actor `cluster` in the cluster's Ray namespace before
anything else, so a second cluster in the same namespace is refused at once (the name is taken)
and `rafka.Cluster.connect` from another driver finds, through it alone, the ZooKeeper, the
data dir, the base config and each broker (id, address, node, rack). It also hosts the private
ZooKeeper when the cluster has one: the java process is its child (it dies with it, by
`PR_SET_PDEATHSIG`), so ZooKeeper lives exactly as long as the cluster does, whichever driver
started it, and `shutdown` stops it by pid.

The record is a frozen value (`ClusterRecord`); the facade reads it, changes a copy and puts it
back (`put`), one driver at a time being the expected use. A sync actor: calls run one after
another, and a ZooKeeper start (seconds) holds the others up, which only happens while the
cluster starts.
"""
from __future__ import annotations

import dataclasses
import logging
import shutil
from dataclasses import dataclass
from pathlib import Path

from rafka.common.config import BrokerConfig

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class BrokerEntry:
    """One broker of the cluster as its drivers see it."""

    broker_id: int
    host: str
    port: int
    node_id: str
    rack: str | None = None

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"


@dataclass(frozen=True)
class ClusterRecord:
    """What a driver needs to use and manage a running cluster. `config` is the base every
    broker's config steps from (ids, ports and log dirs per broker, `rafka.cluster.Cluster`),
    with `zookeeper.connect` set; `slots` is how many broker places were handed out (the next
    `add_broker` takes the next); `owns_data_dir`: `data_dir` was made for this cluster and goes
    with it."""

    namespace: str
    data_dir: str
    owns_data_dir: bool
    config: BrokerConfig
    first_port: int
    host: str
    detached: bool
    slots: int
    brokers: tuple[BrokerEntry, ...] = ()
    cluster_id: str = ""

    @property
    def zookeeper_connect(self) -> str:
        return self.config.zookeeper_connect

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(b.address for b in self.brokers)

    def with_broker(self, entry: BrokerEntry) -> "ClusterRecord":
        others = tuple(b for b in self.brokers if b.broker_id != entry.broker_id)
        return dataclasses.replace(self, brokers=tuple(sorted(others + (entry,), key=lambda b: b.broker_id)))

    def without_broker(self, broker_id: int) -> "ClusterRecord":
        return dataclasses.replace(self, brokers=tuple(b for b in self.brokers if b.broker_id != broker_id))


class ClusterRegistry:
    """The `cluster` actor (see the module's docstring): holds the record and the private ZooKeeper."""

    def __init__(self) -> None:
        self._record: ClusterRecord | None = None
        self._zookeeper = None   # EmbeddedZooKeeper when the cluster runs its own

    def start_zookeeper(self, data_dir: str, timeout_s: float = 60.0) -> str:
        """Start the cluster's private ZooKeeper in `data_dir` (on this actor's node) and return its
        connect string; StartupError when it does not serve in time."""
        from rafka.coordinator.zk.zk_server import EmbeddedZooKeeper

        if self._zookeeper is None:
            self._zookeeper = EmbeddedZooKeeper(Path(data_dir))
            self._zookeeper.start(timeout_s=timeout_s)
        return self._zookeeper.connect_string

    def zookeeper_pid(self) -> int | None:
        """The private ZooKeeper's java pid, None without one."""
        return self._zookeeper.pid if self._zookeeper is not None else None

    def record(self) -> ClusterRecord | None:
        return self._record

    def put(self, record: ClusterRecord) -> None:
        self._record = record

    def shutdown(self) -> None:
        """Stop the private ZooKeeper (by pid) and remove a data dir made for the cluster; the
        brokers are stopped before this by the facade. Idempotent."""
        if self._zookeeper is not None:
            self._zookeeper.stop()
            self._zookeeper = None
        if self._record is not None and self._record.owns_data_dir:
            shutil.rmtree(self._record.data_dir, ignore_errors=True)
