"""`BrokerCoordinator`: one per broker; the actor that wires the broker's control plane.

It owns the collaborators below, hands them its timers and ZooKeeper watches, and turns
actor calls into calls on them; the decisions are theirs (coordinator/broker/):
- `Registration`: `/brokers/ids/<id>`, across ZooKeeper sessions;
- `ControllerLink`: this broker's `Controller` (rounds, orders to every broker, the death
  watch, leader rebalance), and requests only the controller decides;
- `ReplicaReconciler` with `RayReplicaLauncher`: this broker's replica actors, toward what
  the controller ordered; `ProcessPool`: the live cap and lending idle replicas' processes;
  `Dormancy`: replicas resting and waking;
- `MetadataPublisher`: what the front end (`FrontendClient`) is told, as numbered snapshots;
- `LogUpkeep` and `LogMaintenance`: checkpoints, the cleaner, failed log dirs;
  `ReplicaLogDirs`: DescribeLogDirs and moves between log dirs; `TopicConfigs`;
- `OfflineReplicaReport`: replicas that failed here, for the controller;
- `AdminService`: the topic admin APIs its front end forwards.

Async actor: ZooKeeper and other blocking calls run in threads; kazoo's watch callbacks only
schedule work on the actor's loop. State-changing calls are idempotent: a restarted
controller sends them again.
"""
from __future__ import annotations

import asyncio
import logging
import os
from functools import partial
from typing import Any, Awaitable, Callable

import ray

from rafka.actors.actor_lookup import find_actor
from rafka.actors.naming import coordinator_name
from rafka.common.collector import freeze_startup_objects, watch_long_collections
from rafka.common.config import BrokerConfig
from rafka.common.errors import ErrorCode
from rafka.common.logging_util import Prefixed
from rafka.common.metadata import ClusterMetadata
from rafka.common.types import Endpoint, TopicPartition
from rafka.coordinator.admin.admin_service import AdminService
from rafka.coordinator.broker.background import BackgroundTasks
from rafka.coordinator.broker.broker_status import BrokerStatus
from rafka.coordinator.broker.control_calls import CONTROL_CALL_TIMEOUT_S
from rafka.coordinator.broker.controller_link import ControllerLink
from rafka.coordinator.broker.death_watch import BrokerDeathWatch
from rafka.coordinator.broker.dormancy import Dormancy
from rafka.coordinator.broker.frontend_client import FrontendClient
from rafka.coordinator.broker.log_dir_failure import FailedLogDirs, replicas_to_report
from rafka.coordinator.broker.log_dir_lock import LogDirLocks
from rafka.coordinator.broker.log_dir_mover import ReplicaLogDirs
from rafka.coordinator.broker.log_maintenance import LogMaintenance
from rafka.coordinator.broker.log_upkeep import LogUpkeep
from rafka.coordinator.broker.metadata_publisher import MetadataPublisher
from rafka.coordinator.broker.offline_report import OfflineReplicaReport
from rafka.coordinator.broker.process_pool import ProcessPool
from rafka.coordinator.broker.reconciler import ReplicaReconciler
from rafka.coordinator.broker.registration import Registration
from rafka.coordinator.broker.replica_launcher import RayReplicaLauncher
from rafka.coordinator.broker.topic_configs import TopicConfigs
from rafka.coordinator.controller.controller import Controller
from rafka.coordinator.zk.zk_data import BrokerRegistration
from rafka.coordinator.zk.zk_store import ZkStore
from rafka.partition_worker.log_dirs import check_meta_properties
from rafka.partition_worker.messages import AlterIsr

log = logging.getLogger(__name__)
SERVE_WAIT_MS = 30000          # how long `start` waits for metadata that lists this broker


def forward(collaborator: str, method: str) -> Callable[..., Awaitable[Any]]:
    """An actor method that is `self.<collaborator>.<method>` (documented there)."""
    async def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        return await getattr(getattr(self, collaborator), method)(*args, **kwargs)
    call.__name__ = call.__qualname__ = method
    return call


class BrokerCoordinator:
    def __init__(self, config: BrokerConfig, namespace: str, node_id: str | None = None,
                 stale_registration_wait_s: float = 0.0) -> None:
        self._config, self._id, self._namespace, self._node_id = config, config.broker_id, namespace, node_id
        self._stale_wait_s = stale_registration_wait_s
        self._log = Prefixed(log, f"[BrokerCoordinator broker={self._id}]")
        self._zk: ZkStore | None = None
        self._link: ControllerLink | None = None
        self._admin: AdminService | None = None
        self._registration: Registration | None = None
        self._offline_report: OfflineReplicaReport | None = None
        self._cluster_id = ""
        self._stopping = False
        self._stopped = asyncio.Event()
        self._retry: asyncio.TimerHandle | None = None
        self._locks = LogDirLocks(())   # taken at start, once the log dirs are checked
        self._tasks = BackgroundTasks(self._log)
        self._frontend = FrontendClient(self._id, self._log)
        self._maintenance = LogMaintenance(config, self._log)
        self._failed_dirs = FailedLogDirs()
        self._launcher = launcher = RayReplicaLauncher(
            self._id, config.log_dirs, namespace, node_id, coordinator=coordinator_name(self._id),
            failed_dirs=self._failed_dirs, spares=config.replica_spare_processes,
            quiet_after_s=config.replica_dormant_after_ms / 1000 if config.replica_dormant_after_ms >= 0 else None)
        running = lambda: self._reconciler.replicas   # noqa: E731 - the running replicas, as they are now
        self._pool = ProcessPool(config.replica_max_live_processes, config.replica_spare_processes, running,
                                 launcher.idle_for_ms, lambda tp, pid: self._dormancy.rest(tp, pid),
                                 lambda: self._reconciler.ticking, self._log,
                                 retry_horizon_ms=config.replica_dormant_retry_horizon_ms)
        launcher.rests_coming, launcher.borrow = self._pool.rests_coming, self._pool.lend_a_process
        self._topic_configs = TopicConfigs(config, lambda: self._zk, self._maintenance, running,
                                           launcher.update_config, self._log)
        self._reconciler = ReplicaReconciler(
            self._id, launcher, self._maintenance, self._topic_configs.get, self._log,
            on_replica_lost=self._replica_lost, on_leader_ready=lambda tp: self._publisher.leader_ready(tp),
            dormancy=config.replica_dormant_after_ms >= 0, cap=self._pool.cap)
        self._publisher = MetadataPublisher(self._id, self._reconciler.local_replicas, self._frontend, self._log,
                                            after_publication=self._after_publication)
        self._upkeep = LogUpkeep(config, self._maintenance, self._failed_dirs, running, launcher.mark_log_dir_offline,
                                 self._report_offline, self._log)
        self._dormancy = Dormancy(self._reconciler, self._frontend.quiesce, self._publisher, self._maintenance,
                                  self._tasks, cleaner_enabled=config.log_cleaner_enable,
                                  topic_config=self._topic_configs.get, topic_id=self._topic_id,
                                  report_offline=self._report_offline, skip_dirs=self._upkeep.skip_dirs, log=self._log)
        self._log_dirs = ReplicaLogDirs(
            config.log_dirs, self._reconciler, self._maintenance, self._log, topic_id=self._topic_id,
            known=lambda tp: self._publisher.metadata.partition(tp.topic, tp.partition) is not None,
            hosted=self._hosts, publish=self._replica_lost, prefer=launcher.prefer,
            io_max_bytes_per_s=config.replica_alter_log_dirs_io_max_bytes_per_second,
            file_delete_delay_ms=config.log_segment_delete_delay_ms, offline_dirs=lambda: frozenset(self._failed_dirs))
        self._status = BrokerStatus(self._id, config.rack_id, node_id, self._reconciler, launcher, self._frontend,
                                    self._pool.cap, self._failed_dirs, lambda: self._publisher.metadata,
                                    lambda: self._link is not None and self._link.is_active)
        self._death_watch = BrokerDeathWatch(self._id, namespace, lambda b, s: self._link.broker_died(b, s), self._log)

    # -- lifecycle -------------------------------------------------------------------
    async def start(self) -> dict:
        """Connect to ZooKeeper, check log dirs, start the front end, register the broker."""
        config = self._config
        self._zk = zk = ZkStore(config.zookeeper_connect, config.zookeeper_session_timeout_ms)
        await asyncio.to_thread(zk.start)
        self._link = ControllerLink(self._id, zk, Controller(self._id, zk, config.unclean_leader_election_enable),
                                    lambda: self._publisher.metadata, self._find_coordinator, self._death_watch,
                                    self._log)
        self._admin = AdminService(config, zk, partial(self._publisher.await_metadata, settled=True), self._log)
        self._cluster_id = await asyncio.to_thread(zk.ensure_cluster_id)
        for d in config.log_dirs:
            check_meta_properties(d, self._id, self._cluster_id)
        self._locks = LogDirLocks(config.log_dirs)
        self._locks.acquire()
        await self._log_dirs.recover(config.log_dirs)
        listener = Endpoint.parse(config.listeners[0])
        advertised = Endpoint.parse(config.advertised_listeners[0]) if config.advertised_listeners else listener
        self._frontend.create(config, self._namespace, self._node_id, listener,
                              ray.get_runtime_context().current_actor)
        port = await self._frontend.start()
        if advertised.port == 0 or advertised == listener:
            advertised = Endpoint(advertised.listener, advertised.host, port, advertised.security_protocol)
        self._status.endpoint, self._status.cluster_id = str(advertised), self._cluster_id
        # A previous incarnation's report of offline replicas goes before this one is live.
        self._offline_report = OfflineReplicaReport(self._id, zk, self._log)
        await self._offline_report.clear_previous()
        self._registration = Registration(zk, self._locks, config.zookeeper_session_timeout_ms, self._tasks,
                                          self._log, on_lost=self._link.session_lost,
                                          on_registered_again=self._link.wake)
        await self._registration.register(BrokerRegistration(self._id, (advertised,), config.rack_id),
                                          self._stale_wait_s)
        self._log.info("registered at /brokers/ids/%d with endpoint %s (cluster %s)",
                       self._id, advertised, self._cluster_id)
        await self._link.watch_zookeeper()
        self._topic_configs.watch(self._tasks.spawn)
        self._start_timers()
        self._link.wake()
        # Serve only once the controller has sent metadata that lists this broker, so a
        # client's first Metadata request already sees it (Kafka's broker waits likewise).
        if not await self._publisher.await_metadata(lambda m: self._id in m.brokers, SERVE_WAIT_MS):
            self._log.warning("no metadata from a controller after %d s; serving anyway", SERVE_WAIT_MS // 1000)
        # Spare replica processes, started in the background: the broker serves without them.
        self._launcher.refill()
        freeze_startup_objects()
        watch_long_collections(self._log)
        return {"broker_id": self._id, "host": advertised.host, "port": port, "cluster_id": self._cluster_id,
                "pid": os.getpid()}

    def _start_timers(self) -> None:
        config, link, tasks = self._config, self._link, self._tasks
        tasks.spawn(link.run(self._cluster_id), "the controller's rounds")
        tasks.spawn(self._upkeep.checkpoint_periodically(), "writing checkpoints")
        if config.log_cleaner_enable and config.log_cleaner_threads > 0:
            tasks.spawn(self._upkeep.clean_periodically(), "the log cleaner")
        if config.auto_leader_rebalance_enable:
            tasks.every(config.leader_imbalance_check_interval_seconds,
                        lambda: link.rebalance_leaders(config.leader_imbalance_per_broker_percentage),
                        "the leader rebalance")
        if config.replica_dormant_after_ms >= 0:
            tasks.every(config.log_retention_check_interval_ms / 1000, self._dormancy.upkeep,
                        "checking the dormant replicas' logs")

    async def shutdown(self) -> None:
        """Clean stop: close replicas (flush, clean-shutdown marker), front end, ZooKeeper session."""
        self._stopping = True
        self._stopped.set()
        for part in (self._death_watch, self._log_dirs, self._offline_report, self._registration, self._link,
                     self._tasks, self._publisher, self._dormancy, self._pool, self._upkeep):
            if part is not None:
                part.stop()
        await self._frontend.stop()
        self._launcher.stop_spares()
        replicas = dict(self._reconciler.replicas)
        closed = await asyncio.gather(*[asyncio.wait_for(self._launcher.close(r), CONTROL_CALL_TIMEOUT_S)
                                        for r in replicas.values()], return_exceptions=True)
        self._maintenance.take_statuses(list(replicas), closed)
        await self._maintenance.write_checkpoints(self._upkeep.replica_actors(), ask_replicas=False,
                                                  skip_dirs=self._upkeep.skip_dirs())
        for r in replicas.values():
            self._launcher.kill(r)
        self._reconciler.forget_all()
        self._frontend.kill()
        if self._zk is not None:
            await asyncio.to_thread(self._zk.stop)
        self._locks.release()

    async def status(self, memory: bool = True) -> dict:
        """What `rafka status` shows of this broker (`BrokerStatus`); `memory=False` leaves out
        the processes' PSS (a read of /proc per process: what a frequent poll need not pay)."""
        return await self._status.report(memory)

    async def await_stop(self) -> None:
        """Returns when this broker begins a clean stop. The controller keeps this call
        outstanding: if it fails instead, this broker's process died (`BrokerDeathWatch`)."""
        await self._stopped.wait()

    def zk_session_id(self) -> int:
        """The ZooKeeper session that owns this broker's registration."""
        return self._zk.session_id

    def zk_session_credentials(self) -> tuple[int, bytes]:
        """(session id, password) of this broker's ZooKeeper session, for fault drills that expire
        it as ZooKeeper's own tests do (another client joins the session and closes it)."""
        return self._zk.client.client_id

    async def processes(self) -> dict:
        """This broker's node and the pids of its actors: what kill -9 of the broker needs."""
        return {"node_id": self._node_id, "pids": await self._status.pids()}

    replica_pids = forward("_status", "pids")   # process ids of this broker's actors, by actor name

    def _find_coordinator(self, broker_id: int) -> Any:
        return find_actor(coordinator_name(broker_id), self._namespace)

    # -- orders from the controller (LeaderAndIsr, UpdateMetadata, settled) -----------
    async def apply_metadata(self, metadata: ClusterMetadata, publish: bool = True) -> ErrorCode:
        """LeaderAndIsr: move this broker's replicas toward the metadata; with `publish`, then
        UpdateMetadata too. If the controller's UpdateMetadata came while this was under way,
        or came first and showed partitions whose replicas have started since, the front end
        gets the metadata again with its local leaders once this is done."""
        published = self._publisher.published
        code = await self._reconciler.apply(metadata)
        await self._upkeep.fence_failed_dirs()
        self._report_offline(metadata)
        if code != ErrorCode.NONE:
            return code
        if publish:
            await self._publisher.publish(metadata)
        elif self._publisher.outdated_since(published):
            await self._publisher.publish()
        else:   # the front end serves its new leaderships at once, before any metadata shows them
            await self._publisher.serve_leaders()
        return ErrorCode.NONE

    async def publish_metadata(self, metadata: ClusterMetadata) -> ErrorCode:
        """UpdateMetadata: hand the front end the metadata and its local leaders."""
        if metadata.controller_epoch < self._reconciler.controller_epoch:
            return ErrorCode.STALE_CONTROLLER_EPOCH
        await self._publisher.publish(metadata)
        return ErrorCode.NONE

    async def settle_metadata(self, metadata: ClusterMetadata) -> ErrorCode:
        """The brokers have acted on `metadata`'s LeaderAndIsr: admin requests waiting for it
        (new topics' replicas, deleted topics' removal) can answer."""
        if metadata.controller_epoch < self._reconciler.controller_epoch:
            return ErrorCode.STALE_CONTROLLER_EPOCH
        self._publisher.settle(metadata)
        return ErrorCode.NONE

    def _after_publication(self) -> None:
        """Each publication: watch for deaths by the new metadata; retry failed replicas when due."""
        if self._link is not None:
            self._link.watch_for_deaths()
        delay = self._reconciler.retry_in_s()
        if delay is not None and not self._stopping and self._retry is None:
            self._retry = self._tasks.later(delay, self._retry_failed_replicas, "retrying failed replicas")

    async def _retry_failed_replicas(self) -> None:
        self._retry = None
        await self.apply_metadata(self._publisher.newest)

    async def _replica_lost(self) -> None:
        """A replica's process died: the front end stops serving it (offline) until the
        reconciler's retry starts it again, and the controller is told, so that leadership
        moves to a live ISR member and the replica leaves the ISR meanwhile."""
        if not self._stopping:
            self._report_offline()
            await self._publisher.publish()

    def _report_offline(self, metadata: ClusterMetadata | None = None) -> None:
        """Hand the reconciler's offline replicas to the report (written only if they changed),
        with the replicas on failed log dirs that another in-sync replica can take over (by
        `metadata`, default the last published)."""
        if self._offline_report is not None and not self._stopping:
            on_failed = self._failed_dirs.replicas_on_failed_dirs(
                {tp: r.log_dir for tp, r in self._reconciler.replicas.items()})
            self._offline_report.report({o.tp for o in self._reconciler.offline()} | replicas_to_report(
                metadata or self._publisher.metadata, self._id, on_failed))

    # -- calls from replicas and the front end ----------------------------------------
    async def replica_idle(self, tp: TopicPartition, pid: int) -> None:
        """A replica has had no writes for replica.dormant.after.ms: it rests (in the background;
        the replica's own call returns at once, as this closes it)."""
        self._dormancy.replica_idle(tp, pid)

    async def wake_replica(self, tp: TopicPartition) -> bool:
        """A request for a dormant replica needs its process: True once it runs."""
        return await self._dormancy.wake(tp)

    async def log_dir_failed(self, log_dir: str, reason: str) -> None:
        """A write to `log_dir` failed (Kafka's LogDirFailureChannel; see `LogUpkeep`)."""
        await self._upkeep.dir_failed(log_dir, reason)

    async def alter_isr(self, request: AlterIsr) -> tuple[ErrorCode, tuple[int, ...] | None, int]:
        """A local leader replica's ISR change (AlterPartition), decided by the controller."""
        return await self._link.alter_isr(request)

    async def elect_leaders(self, election_type: int, partitions: list[tuple[str, int]] | None
                            ) -> dict[tuple[str, int], ErrorCode]:
        """ElectLeaders, decided by the controller: the outcome per partition."""
        return await self._link.elect_leaders(election_type, partitions)

    describe_log_dirs = forward("_log_dirs", "describe")        # DescribeLogDirs: `ReplicaLogDirs`
    alter_replica_log_dirs = forward("_log_dirs", "alter")      # AlterReplicaLogDirs

    def _topic_id(self, tp: TopicPartition) -> Any:
        info = self._publisher.metadata.topics.get(tp.topic)
        return None if info is None else info.topic_id

    def _hosts(self, tp: TopicPartition) -> bool | None:
        """Whether the metadata gives `tp` a replica on this broker (None: no metadata yet)."""
        metadata = self._publisher.metadata
        if metadata.controller_epoch < 0:
            return None
        info = metadata.partition(tp.topic, tp.partition)
        return info is not None and self._id in info.replicas

    # -- admin (any broker; the controller acts on what lands in ZooKeeper): `AdminService`
    claim_producer_id_block = forward("_admin", "claim_producer_id_block")
    create_topics = forward("_admin", "create_topics")
    delete_topics = forward("_admin", "delete_topics")
    create_partitions = forward("_admin", "create_partitions")
    topic_overrides = forward("_admin", "topic_overrides")
    describe_configs = forward("_admin", "describe_configs")
    alter_topic_configs = forward("_admin", "alter_topic_configs")
