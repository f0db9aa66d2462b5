"""`rafka.Cluster`: a rafka cluster in the Ray you are connected to, from Python.

    import ray, rafka

    ray.init(address="auto")                        # your Ray (or none: rafka starts a private one)
    with rafka.Cluster.start(brokers=3) as cluster:
        cluster.admin.create_topic("orders", partitions=6, replication_factor=3)
        print(cluster.bootstrap_servers)            # give this to any Kafka client

    cluster = rafka.Cluster.connect()               # from another driver of the same Ray

Every actor of the cluster lives in its own Ray namespace (`namespace`, "rafka" by default),
under names a second driver finds: the registry `cluster` (`rafka.facade.registry`: the record of
the cluster, and the host of its private ZooKeeper) and each broker's `coordinator:<id>`.

Starting rafka in your Ray changes nothing of that Ray or of your process: no environment
variable, Ray setting or hook (rafka's lean workers and quiet Ray timers are for the private
Ray it starts itself, `rafka.actors.ray_env`); its actors ask for no CPU (`num_cpus=0`), so your
tasks' resources are unchanged. Only when no Ray is connected and none is named does
`start` start a private local Ray on 127.0.0.1, which `shutdown` stops.

Not yet: brokers on several Ray nodes each need a ZooKeeper they can reach (the private one
listens on 127.0.0.1 of the registry's node), so `add_broker(node=...)` elsewhere needs
`zookeeper=` a shared one.
"""
from __future__ import annotations

import dataclasses
import logging
import tempfile
import time
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Mapping

from rafka.actors import ray_env
from rafka.actors.naming import CLUSTER_REGISTRY_NAME, DEFAULT_NAMESPACE
from rafka.common.config import BrokerConfig
from rafka.common.errors import ClusterNotFoundError, StartupError
from rafka.facade.registry import BrokerEntry, ClusterRecord, ClusterRegistry

if TYPE_CHECKING:
    from rafka.facade.admin import Admin

log = logging.getLogger(__name__)

CALL_TIMEOUT_S = 60.0   # every call on the registry; a ZooKeeper start is the longest


class Cluster:
    """A handle on a running rafka cluster: from `Cluster.start` (which made it) or
    `Cluster.connect` (which found it). Any handle can grow, shrink or shut the cluster down;
    `shutdown` by one ends it for all. Not thread-safe: one driver thread at a time.

    Used as a context manager, leaving the block shuts the cluster down."""

    def __init__(self, registry: Any, record: ClusterRecord, *, started_ray: bool = False,
                 joined_ray: bool = False) -> None:
        """Use `Cluster.start` or `Cluster.connect`."""
        self._registry = registry
        self._record = record
        self._started_ray = started_ray
        self._joined_ray = joined_ray
        self._admin: Any = None
        # Handles on the brokers this driver started: Ray ends a non-detached actor once its
        # owner holds no handle on it, name or not.
        self._handles: dict[int, Any] = {}
        self.start_time_s: float | None = None   # how long `start` took, for the one that started it

    # -- making and finding ----------------------------------------------------------------------
    @classmethod
    def start(cls, brokers: int = 1, *, zookeeper: str | None = None, data_dir: str | Path | None = None,
              config: Mapping[str, Any] | None = None, namespace: str = DEFAULT_NAMESPACE, port: int = 0,
              detached: bool = False, ray_address: str | None = None, timeout_s: float = 120.0) -> "Cluster":
        """Start `brokers` brokers on this driver's Ray node and return once each serves.

        - `zookeeper`: a ZooKeeper connect string ("host:port[/chroot]"); None starts a private
          one in the data dir, hosted by the cluster's registry actor and stopped with the cluster.
        - `data_dir`: where brokers keep their logs (`broker-<id>/logs`) and ZooKeeper its data;
          None makes a temporary directory, removed by `shutdown`.
        - `config`: Kafka broker configs by Kafka's names (`{"num.partitions": 6}`), common to
          every broker; ids step from `broker.id` (0), each broker on its own port from `port`
          (0: free ports; `bootstrap_servers` names them).
        - `namespace`: the Ray namespace of the cluster's actors; one cluster per namespace.
        - `detached`: the cluster outlives this driver (Ray's detached actors) until a
          `shutdown` from any driver; otherwise it ends with this driver.
        - `ray_address`: the Ray to join when this driver is not connected to one (`"auto"`, or
          `"host:port"`); with neither, a private local Ray is started.

        StartupError when a cluster already runs in `namespace` or a broker cannot start
        (anything started by then is stopped); InvalidConfigError for a config Kafka refuses.
        """
        started = time.monotonic()
        base = BrokerConfig.from_mapping({str(k): v for k, v in (config or {}).items()})
        owns_data_dir = data_dir is None
        path = Path(tempfile.mkdtemp(prefix="rafka-") if data_dir is None else data_dir).absolute()
        started_ray, joined_ray = _ensure_ray(ray_address, namespace)
        ray = ray_env.ray
        node_id = ray_env.current_node_id()
        try:
            registry = _create_registry(namespace, node_id, detached)
        except BaseException:
            _leave_ray(started_ray, joined_ray)
            raise
        record = ClusterRecord(namespace, str(path), owns_data_dir, base, port, _node_address(node_id), detached,
                               brokers)
        cluster = cls(registry, record, started_ray=started_ray, joined_ray=joined_ray)
        try:
            cluster._put(record)   # first, so that a failed start removes a temporary data dir
            path.mkdir(parents=True, exist_ok=True)
            if zookeeper is None:
                zookeeper = ray.get(registry.start_zookeeper.remote(str(path / "zookeeper")), timeout=CALL_TIMEOUT_S)
            record = cluster._put(dataclasses.replace(record, config=base.replace(zookeeper_connect=zookeeper)))
            engine = cluster._engine(record)
            engine.start()
            cluster._handles.update({b.broker_id: b.actor for b in engine.brokers.values()})
            entries = [BrokerEntry(b.broker_id, b.host, b.port, node_id, base.rack_id) for b in engine.brokers.values()]
            for entry in entries:
                record = record.with_broker(entry)
            cluster._put(dataclasses.replace(record, cluster_id=engine.cluster_id))
        except BaseException:
            cluster.shutdown()
            raise
        cluster.start_time_s = time.monotonic() - started
        log.info("rafka cluster in namespace %s serving at %s after %.1f s", namespace, cluster.bootstrap_servers,
                 cluster.start_time_s)
        return cluster

    @classmethod
    def connect(cls, namespace: str = DEFAULT_NAMESPACE, *, ray_address: str | None = "auto") -> "Cluster":
        """The cluster running in `namespace` of this driver's Ray (joining `ray_address` first
        when this driver is not connected). ClusterNotFoundError when none runs there."""
        from rafka.actors.actor_lookup import find_actor

        joined_ray = False
        if not ray_env.ray_initialized():
            if ray_address is None:
                raise ClusterNotFoundError("this driver is not connected to a Ray; pass ray_address")
            ray_env.join_ray(ray_address)
            joined_ray = True
        registry = find_actor(CLUSTER_REGISTRY_NAME, namespace)
        record = ray_env.ray.get(registry.record.remote(), timeout=CALL_TIMEOUT_S) if registry is not None else None
        if record is None:
            _leave_ray(False, joined_ray)
            raise ClusterNotFoundError(f"no rafka cluster runs in the Ray namespace {namespace!r}")
        return cls(registry, record, joined_ray=joined_ray)

    # -- facts -------------------------------------------------------------------------------------
    @property
    def namespace(self) -> str:
        return self._record.namespace

    @property
    def bootstrap_servers(self) -> str:
        """"host:port,host:port" of every running broker, for any Kafka client."""
        return self._refresh().bootstrap_servers

    @property
    def brokers(self) -> dict[int, BrokerEntry]:
        """The running brokers by id."""
        return {b.broker_id: b for b in self._refresh().brokers}

    @property
    def zookeeper_connect(self) -> str:
        return self._record.zookeeper_connect

    @property
    def cluster_id(self) -> str:
        return self._record.cluster_id

    @property
    def data_dir(self) -> Path:
        return Path(self._record.data_dir)

    @property
    def admin(self) -> "Admin":
        """Topics, configs and consumer groups (`rafka.facade.admin.Admin`), over the Kafka
        protocol; one object, which `add_broker` and `stop_broker` of this handle point at the
        brokers running then, and `shutdown` closes."""
        from rafka.facade.admin import Admin

        if self._admin is None:
            self._admin = Admin(self.bootstrap_servers)
        return self._admin

    def broker_status(self, timeout_s: float = 10.0, *, memory: bool = True) -> dict[int, dict]:
        """Each broker's own report (role, replicas, offline replicas), as `rafka status` shows it;
        `memory=False` leaves out the processes' PSS, which a frequent poll need not pay for."""
        from rafka.cluster import broker_status

        return broker_status(self.namespace, sorted(self.brokers), timeout_s, memory=memory)

    # -- growing and shrinking -------------------------------------------------------------------
    def add_broker(self, *, node: str | None = None, rack: str | None = None, timeout_s: float = 120.0) -> BrokerEntry:
        """Start one more broker, with the next id, on Ray node `node` (a node id; this driver's
        node by default), in `rack` (broker.rack) if given; returns it once it serves. It takes
        no partition until topics are created or partitions added (no reassignment yet)."""
        record = self._refresh()
        node_id = node or ray_env.current_node_id()
        engine = self._engine(record, slots=record.slots + 1, host=_node_address(node_id))
        config = engine.broker_config(record.slots)
        if rack is not None:
            config = config.replace(broker_rack=rack)
        handle = engine.start_broker(config, detached=record.detached, timeout_s=timeout_s, node_id=node_id)
        self._handles[handle.broker_id] = handle.actor
        entry = BrokerEntry(handle.broker_id, handle.host, handle.port, node_id, config.rack_id)
        self._put(dataclasses.replace(record, slots=record.slots + 1).with_broker(entry))
        self._reconnect_admin()
        return entry

    def stop_broker(self, broker_id: int) -> None:
        """Clean stop of one broker (replicas flushed and closed, registration removed); its
        partitions' leadership moves to the other replicas in their ISR."""
        record = self._refresh()
        self._engine(record).stop_broker(broker_id)
        self._handles.pop(broker_id, None)   # held, it would keep the stopped broker's name taken
        self._put(record.without_broker(broker_id))
        self._reconnect_admin()

    def shutdown(self) -> None:
        """Stop every broker, the private ZooKeeper and the registry, remove a temporary data
        dir, and stop the private Ray if `start` started one. Idempotent; after it, this handle
        and every other one on the cluster are spent."""
        ray = ray_env.ray
        self._close_admin()
        if self._registry is not None:
            try:
                record = self._refresh()
            except Exception as e:  # noqa: BLE001 - a registry already gone: stop what this handle knows
                log.warning("the cluster's registry did not answer (%s); stopping the brokers this handle knows", e)
                record = self._record
            self._engine(record).stop()
            self._handles.clear()
            try:
                ray.get(self._registry.shutdown.remote(), timeout=CALL_TIMEOUT_S)
            except Exception as e:  # noqa: BLE001 - its ZooKeeper dies with it (PR_SET_PDEATHSIG)
                log.warning("the cluster's registry did not shut down cleanly: %s", e)
            ray.kill(self._registry)
            self._registry = None
        _leave_ray(self._started_ray, self._joined_ray)
        self._started_ray = self._joined_ray = False

    def __enter__(self) -> "Cluster":
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.shutdown()

    def __repr__(self) -> str:
        return f"rafka.Cluster(namespace={self.namespace!r}, bootstrap_servers={self._record.bootstrap_servers!r})"

    # -- inside ------------------------------------------------------------------------------------
    def _refresh(self) -> ClusterRecord:
        if self._registry is not None:
            record = ray_env.ray.get(self._registry.record.remote(), timeout=CALL_TIMEOUT_S)
            if record is not None:
                self._record = record
        return self._record

    def _put(self, record: ClusterRecord) -> ClusterRecord:
        ray_env.ray.get(self._registry.put.remote(record), timeout=CALL_TIMEOUT_S)
        self._record = record
        return record

    def _engine(self, record: ClusterRecord, slots: int | None = None, host: str | None = None) -> Any:
        """The broker-level machinery of `rafka.cluster` for this record (it holds no state that
        matters: brokers are found by name)."""
        from rafka.cluster import Cluster as BrokerSet

        engine = BrokerSet(record.data_dir, brokers=slots if slots is not None else record.slots,
                           first_port=record.first_port, config=record.config, namespace=record.namespace,
                           detached=record.detached, host=host or record.host)
        engine.ports.update({b.broker_id: b.port for b in record.brokers})
        return engine

    def _reconnect_admin(self) -> None:
        """The admin, once there is one, through the brokers running now (it stays the same object)."""
        if self._admin is not None:
            self._admin.reconnect(self._record.bootstrap_servers)

    def _close_admin(self) -> None:
        if self._admin is not None:
            self._admin.close()
            self._admin = None


def _ensure_ray(address: str | None, namespace: str) -> tuple[bool, bool]:
    """Connect this driver to a Ray unless it is: (started a private one, joined one)."""
    if ray_env.ray_initialized():
        return False, False
    if address is not None:
        ray_env.join_ray(address, namespace)
        return False, True
    ray_env.start_local_ray(namespace)
    return True, False


def _leave_ray(started: bool, joined: bool) -> None:
    """Stop the private Ray this driver started, or disconnect from the one it joined."""
    if started:
        ray_env.stop_local_ray()
    elif joined:
        ray_env.ray.shutdown()


def _create_registry(namespace: str, node_id: str, detached: bool) -> Any:
    """The `cluster` actor of `namespace` on `node_id`; StartupError when the name is taken."""
    ray = ray_env.ray
    try:
        registry = ray.remote(ClusterRegistry).options(
            name=CLUSTER_REGISTRY_NAME, namespace=namespace, num_cpus=0, max_restarts=0,
            **({"lifetime": "detached"} if detached else {}), **ray_env.pin_to_node(node_id)).remote()
    except ValueError as e:   # Ray: "The name ... is already taken"
        raise StartupError(f"a rafka cluster already runs in the Ray namespace {namespace!r}: "
                           f"rafka.Cluster.connect(namespace={namespace!r}) joins it ({e})") from None
    ray.get(registry.__ray_ready__.remote(), timeout=CALL_TIMEOUT_S)
    return registry


def _node_address(node_id: str) -> str:
    """The address of Ray node `node_id`, where its brokers listen (127.0.0.1 on rafka's own Ray)."""
    for node in ray_env.ray.nodes():
        if node["NodeID"] == node_id:
            return node["NodeManagerAddress"]
    raise StartupError(f"no live Ray node {node_id}")
