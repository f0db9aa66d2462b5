"""`Cluster`: bring up rafka brokers on Ray from Python (what `rafka up` does, and what the
public `rafka.Cluster` of `rafka/facade/` uses underneath to start and stop brokers).

    with Cluster(data_dir="/tmp/rafka", brokers=1) as cluster:
        print(cluster.bootstrap_servers)       # 127.0.0.1:9092

With no `zookeeper_connect` it starts a private standalone ZooKeeper in the data dir;
with no running Ray it starts a private local Ray on 127.0.0.1, in the environment rafka gives
its own Ray (`ray_env.start_local_ray`); a Ray it joins (`ray_address`) keeps its own.
Everything it starts, `stop()` stops. Importing this module imports no Ray and changes
nothing in the process: the Ray plumbing below is imported when first used.
"""
from __future__ import annotations

import logging
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rafka.actors import ray_env   # (imports Ray when `ray_env.ray` is first used)
from rafka.actors.naming import DEFAULT_NAMESPACE, coordinator_name
from rafka.common.config import BrokerConfig
from rafka.common.types import Endpoint

log = logging.getLogger(__name__)

DEFAULT_FIRST_PORT = 9092
STARTS_AT_ONCE = 4   # brokers started in parallel by `Cluster.start`


def start_broker(config: BrokerConfig, namespace: str, node_id: str | None = None,
                 stale_registration_wait_s: float = 0.0, timeout_s: float = 120.0,
                 detached: bool = False) -> tuple[Any, dict]:
    """Start one broker (its `BrokerCoordinator`, which starts the rest) and wait until it
    serves; StartupError with the broker's own reason, InvalidConfigError for a broker.id
    Kafka would refuse. broker.id=-1: the broker's id is resolved first, on its node
    (`resolve_broker_id`), and its actors are named by that."""
    from rafka.actors.ray_env import current_node_id
    from rafka.actors.supervisor import start_service
    from rafka.coordinator.coordinator_actor import BrokerCoordinator

    node = node_id or current_node_id()
    config.check_broker_id()
    if config.broker_id < 0:
        config = config.replace(broker_id=resolve_broker_id(config, node, timeout_s))
    return start_service(BrokerCoordinator, coordinator_name(config.broker_id), namespace,
                         config, namespace, node, stale_registration_wait_s,
                         node_id=node, label=f"broker {config.broker_id}", timeout_s=timeout_s, detached=detached)


def resolve_broker_id(config: BrokerConfig, node_id: str, timeout_s: float = 60.0) -> int:
    """The id a broker of `config` (broker.id=-1) starts under: the one in its log dirs'
    meta.properties, else a new one from ZooKeeper (Kafka's getOrGenerateBrokerId). Runs as a
    Ray task on `node_id`, where the log dirs are; StartupError when it cannot be had."""
    from rafka.actors.supervisor import run_on_node
    from rafka.coordinator.broker import broker_id

    return run_on_node(broker_id.resolve_broker_id, config, node_id=node_id, label="broker.id resolution",
                       timeout_s=timeout_s)


def find_broker(namespace: str, broker_id: int) -> Any | None:
    """The running coordinator actor of `broker_id`, or None (`find_actor`)."""
    from rafka.actors.actor_lookup import find_actor

    return find_actor(coordinator_name(broker_id), namespace)


def broker_running(namespace: str, broker_id: int, timeout_s: float = 10.0) -> bool:
    """Whether `broker_id`'s coordinator exists and is not dead (`named_actor_alive`)."""
    from rafka.actors.actor_lookup import named_actor_alive

    return named_actor_alive(coordinator_name(broker_id), namespace, timeout_s)


def await_broker_released(namespace: str, broker_id: int, timeout_s: float = 10.0) -> bool:
    """Wait until Ray has released the name of `broker_id`'s stopped or killed coordinator, so
    the broker can start again under it; False when it is still taken after `timeout_s`. A
    detached actor's name is freed within half a second of its death (measured with Ray 2.60);
    a non-detached one's only once its owner drops every handle to it."""
    deadline = time.monotonic() + timeout_s
    while find_broker(namespace, broker_id) is not None:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def kill_broker(namespace: str, broker_id: int, timeout_s: float = 30.0) -> dict[str, int]:
    """kill -9 of every process of one broker (coordinator, front end, replicas) at once, as a
    machine losing power: nothing is flushed or closed, and its ZooKeeper session expires on
    its own after zookeeper.session.timeout.ms. Returns the pids killed, by actor name, once
    each is gone (`kill_processes`); LookupError when the broker does not run,
    ProcessesSurvivedError when one of its processes outlived the kill."""
    from rafka.actors.supervisor import kill_processes

    actor = find_broker(namespace, broker_id)
    if actor is None:
        raise LookupError(f"broker {broker_id} is not running")
    processes = ray_env.ray.get(actor.processes.remote(), timeout=timeout_s)
    del actor   # a handle held would keep a non-detached actor's name taken
    pids = processes["pids"]
    kill_processes(pids, namespace, processes["node_id"], timeout_s)
    log.info("killed broker %d: %d processes", broker_id, len(pids))
    return pids


@dataclass(frozen=True)
class BrokerHandle:
    broker_id: int
    host: str
    port: int
    actor: Any

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"


def broker_status(namespace: str, broker_ids: list[int], timeout_s: float = 10.0, *,
                  memory: bool = True) -> dict[int, dict]:
    """Ask each broker's coordinator for its status, from any Ray driver of the cluster; a
    broker that does not answer in time is reported with its error. `memory=False`: without
    the processes' PSS, for a caller that polls."""
    ray = ray_env.ray
    out: dict[int, dict] = {}
    for broker_id in broker_ids:
        try:
            actor = find_broker(namespace, broker_id)
            if actor is None:
                out[broker_id] = {"broker_id": broker_id, "error": "not running"}
                continue
            out[broker_id] = ray.get(actor.status.remote(memory), timeout=timeout_s)
        except Exception as e:  # noqa: BLE001 - a dead or hung broker is part of the report
            out[broker_id] = {"broker_id": broker_id, "error": f"{type(e).__name__}: {e}"}
    return out


class Cluster:
    """`brokers` brokers whose ids, ports and log dirs step from `config`'s (see the module's
    docstring). With broker.id=-1 in `config` each broker takes Kafka's id instead (its log
    dirs' meta.properties, else 1001, 1002, ... from ZooKeeper); its log dir is then named
    by its place in the cluster (`slot-<index>`), not by its id. `detached`: they are Ray
    detached actors, so that another driver (`rafka broker`) can stop, kill and start them
    by name. A non-detached actor's name stays taken after its death for as long as its owner
    (this driver) holds a handle, and a detached one outlives the driver that made it (a
    broker started by a command that then exits). `stop()` stops them either way, by name; a
    Ray this object started stops with everything on it."""

    def __init__(self, data_dir: str | Path, brokers: int = 1, *, first_port: int = DEFAULT_FIRST_PORT,
                 config: BrokerConfig | None = None, namespace: str = DEFAULT_NAMESPACE,
                 ray_address: str | None = None, detached: bool = False, host: str = "127.0.0.1") -> None:
        self.data_dir = Path(data_dir).absolute()
        self.host = host   # where brokers listen unless `config` names listeners (one broker)
        self.broker_count = brokers
        self.first_port = first_port
        self.namespace = namespace
        self.detached = detached
        self._base = config or BrokerConfig()
        self._ray_address = ray_address
        self._zookeeper: Any = None
        self._started_ray = False
        self.brokers: dict[int, BrokerHandle] = {}
        self.ports: dict[int, int] = {}   # each broker's listener port, kept across restarts
        self.cluster_id = ""

    # -- lifecycle -------------------------------------------------------------------
    def start(self) -> "Cluster":
        started = time.monotonic()
        self.data_dir.mkdir(parents=True, exist_ok=True)
        zk_connect = self._base.zookeeper_connect or self._start_zookeeper()
        if not ray_env.ray_initialized():
            if self._ray_address:
                ray_env.join_ray(self._ray_address, self.namespace)
            else:
                ray_env.start_local_ray(self.namespace)
                self._started_ray = True
        try:
            self._start_brokers([self._broker_config(index, zk_connect) for index in range(self.broker_count)])
        except BaseException:
            self.stop()
            raise
        log.info("cluster serving at %s after %.1f s", self.bootstrap_servers, time.monotonic() - started)
        return self

    def _start_brokers(self, configs: list[BrokerConfig]) -> None:
        """Start a broker of each config, up to STARTS_AT_ONCE at a time: a start mostly waits
        (a process to spawn, ZooKeeper, the controller's first metadata): three brokers came up
        in 11.6 s one after another and in 9.3 s at once, on 2 cores. Brokers whose id is generated (broker.id=-1) start
        one after another, so that the slots take the generated ids in order. Raises the first
        failure once every start has ended; `brokers` lists them by id."""
        at_once = STARTS_AT_ONCE if all(c.broker_id >= 0 for c in configs) else 1
        if at_once == 1 or len(configs) == 1:
            for config in configs:
                self.start_broker(config, detached=self.detached)
            return
        with ThreadPoolExecutor(max_workers=min(at_once, len(configs)), thread_name_prefix="broker-start") as pool:
            starts = [pool.submit(self.start_broker, config, detached=self.detached) for config in configs]
        self.brokers = dict(sorted(self.brokers.items()))
        failures = [start.exception() for start in starts if start.exception() is not None]
        if failures:
            raise failures[0]

    def start_broker(self, config: BrokerConfig, stale_registration_wait_s: float = 0.0,
                     detached: bool = False, timeout_s: float = 120.0, node_id: str | None = None) -> BrokerHandle:
        """Start the broker of `config` on `node_id` (this driver's node by default) and wait until it serves."""
        actor, info = start_broker(config, self.namespace, node_id=node_id,
                                   stale_registration_wait_s=stale_registration_wait_s,
                                   timeout_s=timeout_s, detached=detached)
        handle = BrokerHandle(info["broker_id"], info["host"], info["port"], actor)
        self.brokers[handle.broker_id] = handle
        self.ports[handle.broker_id] = handle.port
        self.cluster_id = info["cluster_id"]
        return handle

    def restart_broker(self, broker_id: int, *, port: int | None = None, detached: bool | None = None,
                       timeout_s: float = 120.0) -> BrokerHandle:
        """Start a stopped or killed broker again, on its own data and its own port (`port`,
        or the one it had), detached as the cluster's brokers are unless `detached` says.
        A killed broker's ZooKeeper registration lives until its session expires, unless the
        broker finds that session in its log dirs' locks and removes it at once
        (`coordinator.broker.log_dir_lock`); otherwise it waits, up to twice the session
        timeout, within `timeout_s`.
        StartupError with the broker's own reason."""
        config = self.restart_config(broker_id, port)
        return self.start_broker(config, stale_registration_wait_s=2 * config.zookeeper_session_timeout_ms / 1000,
                                 detached=self.detached if detached is None else detached, timeout_s=timeout_s)

    def kill_broker(self, broker_id: int) -> dict[str, int]:
        """kill -9 of one broker's processes (see `kill_broker`); `restart_broker` brings it back."""
        pids = kill_broker(self.namespace, broker_id)
        self.brokers.pop(broker_id, None)
        return pids

    @property
    def ray_address(self) -> str:
        """The address of the Ray cluster the brokers run on (for `ray.init(address=...)`)."""
        return ray_env.ray.get_runtime_context().gcs_address

    def broker_status(self, timeout_s: float = 10.0, *, memory: bool = True) -> dict[int, dict]:
        """Each broker's own report (`BrokerCoordinator.status`): role, replicas, offline replicas;
        the processes' memory too unless `memory=False` (a poll's choice: it costs a read of
        /proc per process)."""
        return broker_status(self.namespace, list(self.brokers), timeout_s, memory=memory)

    def stop_broker(self, broker_id: int) -> None:
        """Clean stop of one broker (replicas flushed and closed, registration removed). The
        broker is found by name, so one restarted by another driver (`rafka broker start`) stops too."""
        from rafka.actors.supervisor import stop_service

        handle = self.brokers.pop(broker_id, None)
        actor = find_broker(self.namespace, broker_id) if ray_env.ray_initialized() else None
        if actor is None and handle is not None:
            actor = handle.actor
        if actor is not None:
            stop_service(actor)

    def stop(self) -> None:
        first = self._base.broker_id
        numbered = range(first, first + self.broker_count) if first >= 0 else ()
        for broker_id in sorted(set(self.brokers) | set(numbered), reverse=True):
            self.stop_broker(broker_id)
        if self._started_ray:
            ray_env.stop_local_ray()
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

    def restart_config(self, broker_id: int, port: int | None = None) -> BrokerConfig:
        """The config `restart_broker` starts `broker_id` with: the one it started with, on
        `port` or the port it had (`ports`; a broker of `first_port=0` had an ephemeral one)."""
        config = self.broker_config(self._index_of(broker_id))
        port = port if port is not None else self.ports.get(broker_id)
        if port:
            host = Endpoint.parse(config.listeners[0]).host
            config = config.replace(listeners=(f"PLAINTEXT://{host}:{port}",))
        return config

    def _index_of(self, broker_id: int) -> int:
        """The place in the cluster of `broker_id`. A broker of a generated id is found by the
        meta.properties in its slot's log dirs; LookupError when no slot holds it."""
        if self._base.broker_id >= 0:
            return broker_id - self._base.broker_id
        from rafka.partition_worker.log_dirs import stored_broker_ids

        slots = {int(p.name.removeprefix("slot-")) for p in self.data_dir.glob("slot-*")
                 if p.name.removeprefix("slot-").isdigit()}
        for index in sorted(slots | set(range(self.broker_count))):
            if broker_id in stored_broker_ids(self.broker_config(index).log_dirs).values():
                return index
        raise LookupError(f"no log dir of this cluster holds broker {broker_id}'s meta.properties")

    def _broker_config(self, index: int, zk_connect: str) -> BrokerConfig:
        """Broker `index`'s config: ids, ports and log dirs step from the base config (a
        broker.id of -1 stays -1: the broker resolves its own)."""
        base = self._base
        broker_id = base.broker_id + index if base.broker_id >= 0 else base.broker_id
        explicit = base.listeners != BrokerConfig().listeners
        if explicit and self.broker_count == 1:
            listeners, log_dirs = base.listeners, base.log_dirs
        else:
            port = self.first_port + index if self.first_port else 0
            listeners = (f"PLAINTEXT://{self.host}:{port}",)
            slot = f"broker-{broker_id}" if broker_id >= 0 else f"slot-{index}"
            log_dirs = (str(self.data_dir / slot / "logs"),)
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
