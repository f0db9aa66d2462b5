"""`Cluster`: bring up rafka brokers on Ray from Python (what `rafka up` does).

    with Cluster(data_dir="/tmp/rafka", brokers=1) as cluster:
        print(cluster.bootstrap_servers)       # 127.0.0.1:9092

With no `zookeeper_connect` it starts a private standalone ZooKeeper in the data dir;
with no running Ray it starts a private local Ray on 127.0.0.1. Everything it starts,
`stop()` stops.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rafka.actors import ray_env  # sets Ray's loopback environment before ray is imported
from rafka.actors.naming import DEFAULT_NAMESPACE, coordinator_name
from rafka.actors.supervisor import start_service, stop_service
from rafka.common.config import BrokerConfig

log = logging.getLogger(__name__)

DEFAULT_FIRST_PORT = 9092


def start_broker(config: BrokerConfig, namespace: str, node_id: str | None = None,
                 stale_registration_wait_s: float = 0.0, timeout_s: float = 120.0) -> tuple[Any, dict]:
    """Start one broker (its `BrokerCoordinator`, which starts the rest) and wait until it
    serves; StartupError with the broker's own reason."""
    from rafka.actors.ray_env import current_node_id
    from rafka.coordinator.coordinator_actor import BrokerCoordinator

    node = node_id or current_node_id()
    return start_service(BrokerCoordinator, coordinator_name(config.broker_id), namespace,
                         config, namespace, node, stale_registration_wait_s,
                         node_id=node, label=f"broker {config.broker_id}", timeout_s=timeout_s)


@dataclass(frozen=True)
class BrokerHandle:
    broker_id: int
    host: str
    port: int
    actor: Any

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"


def broker_status(namespace: str, broker_ids: list[int], timeout_s: float = 10.0) -> dict[int, dict]:
    """Ask each broker's coordinator for its status, from any Ray driver of the cluster; a
    broker that does not answer in time is reported with its error."""
    ray = ray_env.ray
    out: dict[int, dict] = {}
    for broker_id in broker_ids:
        try:
            actor = ray.get_actor(coordinator_name(broker_id), namespace=namespace)
            out[broker_id] = ray.get(actor.status.remote(), timeout=timeout_s)
        except Exception as e:  # noqa: BLE001 - a dead or hung broker is part of the report
            out[broker_id] = {"broker_id": broker_id, "error": f"{type(e).__name__}: {e}"}
    return out


class Cluster:
    def __init__(self, data_dir: str | Path, brokers: int = 1, *, first_port: int = DEFAULT_FIRST_PORT,
                 config: BrokerConfig | None = None, namespace: str = DEFAULT_NAMESPACE,
                 ray_address: str | None = None) -> None:
        self.data_dir = Path(data_dir).absolute()
        self.broker_count = brokers
        self.first_port = first_port
        self.namespace = namespace
        self._base = config or BrokerConfig()
        self._ray_address = ray_address
        self._zookeeper: Any = None
        self._started_ray = False
        self.brokers: dict[int, BrokerHandle] = {}
        self.cluster_id = ""

    # -- lifecycle -------------------------------------------------------------------
    def start(self) -> "Cluster":
        started = time.monotonic()
        self.data_dir.mkdir(parents=True, exist_ok=True)
        zk_connect = self._base.zookeeper_connect or self._start_zookeeper()
        if not ray_env.ray.is_initialized():
            if self._ray_address:
                ray_env.join_ray(self._ray_address, self.namespace)
            else:
                ray_env.start_local_ray(self.namespace)
                self._started_ray = True
        try:
            for index in range(self.broker_count):
                self.start_broker(self._broker_config(index, zk_connect))
        except BaseException:
            self.stop()
            raise
        log.info("cluster serving at %s after %.1f s", self.bootstrap_servers, time.monotonic() - started)
        return self

    def start_broker(self, config: BrokerConfig, stale_registration_wait_s: float = 0.0) -> BrokerHandle:
        actor, info = start_broker(config, self.namespace, stale_registration_wait_s=stale_registration_wait_s)
        handle = BrokerHandle(config.broker_id, info["host"], info["port"], actor)
        self.brokers[config.broker_id] = handle
        self.cluster_id = info["cluster_id"]
        return handle

    @property
    def ray_address(self) -> str:
        """The address of the Ray cluster the brokers run on (for `ray.init(address=...)`)."""
        return ray_env.ray.get_runtime_context().gcs_address

    def broker_status(self, timeout_s: float = 10.0) -> dict[int, dict]:
        """Each broker's own report (`BrokerCoordinator.status`): role, replicas, offline replicas."""
        return broker_status(self.namespace, list(self.brokers), timeout_s)

    def stop_broker(self, broker_id: int) -> None:
        handle = self.brokers.pop(broker_id)
        stop_service(handle.actor)

    def stop(self) -> None:
        for broker_id in sorted(self.brokers, reverse=True):
            self.stop_broker(broker_id)
        if self._started_ray:
            ray_env.ray.shutdown()
            self._started_ray = False
        if self._zookeeper is not None:
            self._zookeeper.stop()
            self._zookeeper = None

    def __enter__(self) -> "Cluster":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # -- facts -----------------------------------------------------------------------
    @property
    def bootstrap_servers(self) -> str:
        return ",".join(b.address for b in self.brokers.values())

    @property
    def zookeeper_connect(self) -> str:
        return self._base.zookeeper_connect or (self._zookeeper.connect_string if self._zookeeper else "")

    def broker_config(self, index: int) -> BrokerConfig:
        return self._broker_config(index, self.zookeeper_connect)

    def _broker_config(self, index: int, zk_connect: str) -> BrokerConfig:
        """Broker `index`'s config: ids, ports and log dirs step from the base config."""
        base = self._base
        broker_id = base.broker_id + index
        explicit = base.listeners != BrokerConfig().listeners
        if explicit and self.broker_count == 1:
            listeners, log_dirs = base.listeners, base.log_dirs
        else:
            port = self.first_port + index if self.first_port else 0
            listeners = (f"PLAINTEXT://127.0.0.1:{port}",)
            log_dirs = (str(self.data_dir / f"broker-{broker_id}" / "logs"),)
        if base.log_dirs != BrokerConfig().log_dirs and self.broker_count == 1:
            log_dirs = base.log_dirs
        return base.replace(broker_id=broker_id, listeners=listeners, log_dirs=log_dirs,
                            advertised_listeners=base.advertised_listeners if self.broker_count == 1 else (),
                            zookeeper_connect=zk_connect)

    def _start_zookeeper(self) -> str:
        from rafka.coordinator.zk.zk_server import EmbeddedZooKeeper

        self._zookeeper = EmbeddedZooKeeper(self.data_dir / "zookeeper")
        self._zookeeper.start()
        # Nobody else can be connected to a ZooKeeper we just started: registrations left
        # by a killed run are stale, so clear them instead of waiting for session expiry.
        from rafka.coordinator.zk.zk_session import clear_stale_ephemerals
        clear_stale_ephemerals(self._zookeeper.connect_string)
        return self._zookeeper.connect_string
