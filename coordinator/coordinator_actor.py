"""`BrokerCoordinator`: one per broker; the thin actor that owns the broker's control plane.

It holds no decisions of its own. It owns, and drives from its timers and ZooKeeper watches:
- the ZooKeeper session (`ZkStore`): `/brokers/ids/<id>` is ephemeral, so the session is the
  broker's liveness; when it expires (the broker was cut off from ZooKeeper too long) the
  broker gives up the controller role and, once kazoo has a new session, registers again,
  as Kafka's broker does; its replicas then learn their roles from the controller;
- the broker's front end actor, which it starts and hands metadata and local leaders;
- `Controller` (coordinator/controller/): campaigns for `/controller` and, while it holds
  it, elects leaders and builds the metadata this actor then sends every broker's coordinator;
- `BrokerDeathWatch` (coordinator/broker/): learns of a broker's death from Ray at once (the
  controller watches every broker, the others the controller), so failover and controller
  election do not wait for the dead broker's ZooKeeper session to expire;
- `ReplicaReconciler` (coordinator/broker/): moves this broker's replicas toward the
  metadata it receives, one isolated step per partition;
- `OfflineReplicaReport` (coordinator/broker/): keeps the reconciler's offline replicas (dead
  or failing to start) in ZooKeeper for the controller, which moves leadership off them and
  takes them out of the ISR until they run again; and those on a failed log dir
  (`FailedLogDirs`, coordinator/broker/log_dir_failure.py) where another in-sync replica can lead;
- `AdminService` (coordinator/admin/): the topic admin APIs its front end forwards;
- `ReplicaLogDirs` (coordinator/broker/): DescribeLogDirs, and moving replicas between this
  broker's log dirs (AlterReplicaLogDirs), which its front end forwards;
- `LogMaintenance` (coordinator/broker/): checkpoint files and the log cleaner's rounds.

Async actor. ZooKeeper and other blocking calls run in threads; kazoo watch callbacks only
wake the controller task, so controller rounds never overlap. State-changing calls are
idempotent: a restarted controller sends them again.
"""
from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
import time
from functools import partial
from typing import Any, Awaitable, Callable

import ray

from rafka.actors.actor_lookup import find_actor
from rafka.actors.naming import coordinator_name, frontend_name, replica_name
from rafka.actors.ray_env import pin_to_node
from rafka.common.collector import freeze_startup_objects, watch_long_collections
from rafka.common.config import BrokerConfig, LogConfig
from rafka.common.errors import ErrorCode
from rafka.common.logging_util import Prefixed
from rafka.common.metadata import ClusterMetadata
from rafka.common.process_memory import broker_memory
from rafka.common.topic_configs import ConfigEntry
from rafka.common.types import Endpoint, TopicPartition
from rafka.coordinator.admin.admin_service import AdminService
from rafka.coordinator.broker.control_calls import (CONTROL_CALL_TIMEOUT_S, FRONTEND_CALL_TIMEOUT_S, bounded,
                                                    fan_out_metadata)
from rafka.coordinator.broker.death_watch import BrokerDeathWatch
from rafka.coordinator.broker.live_cap import LiveReplicaCap
from rafka.coordinator.broker.log_dir_failure import FailedLogDirs, replicas_to_report
from rafka.coordinator.broker.log_dir_lock import LogDirLocks
from rafka.coordinator.broker.log_dir_mover import ReplicaLogDirs
from rafka.coordinator.broker.log_dir_plan import LogDirDescription
from rafka.coordinator.broker.log_maintenance import LogMaintenance
from rafka.coordinator.broker.offline_report import REPORT_TIMEOUT_S, OfflineReplicaReport
from rafka.coordinator.broker.reconciler import DEFAULT_MAX_PARALLEL_STARTS, ReplicaReconciler
from rafka.coordinator.broker.replica_launcher import RayReplicaLauncher
from rafka.coordinator.broker.replica_plan import LocalReplicas, changed_partitions, with_offline_replicas
from rafka.coordinator.controller.controller import Controller
from rafka.coordinator.group.group_coordinator import GroupSettings
from rafka.coordinator.messages import PartitionsSpec, TopicResult, TopicSpec
from rafka.coordinator.zk.zk_data import BrokerRegistration, ProducerIdBlock
from rafka.coordinator.zk.zk_store import ZkStore
from rafka.net.frontend_actor import Frontend
from rafka.net.socket_settings import SocketServerSettings
from rafka.partition_worker.closed_log import ClosedLogError, upkeep_due
from rafka.partition_worker.log_dir_moves import recover_moves
from rafka.partition_worker.log_dirs import check_meta_properties
from rafka.partition_worker.messages import AlterIsr

log = logging.getLogger(__name__)
state_change = logging.getLogger("rafka.state_change")

FrontendActor = ray.remote(Frontend)
SERVE_WAIT_MS = 30000          # how long `start` waits for metadata that lists this broker
IDLENESS_TIMEOUT_S = 5.0       # a live replica's answer to how long it has been idle
# A replica rested to make room has been idle this long at least: one just woken has its
# held writes on their way (resting it first would answer them NOT_LEADER_OR_FOLLOWER).
MIN_IDLE_TO_MAKE_ROOM_MS = 250
# A wake that finds no spare process ready rests a replica idle at least this long for its
# process rather than wait ~1 s of a core for a new one (below the cap: no pressure, so only
# replicas that have clearly stopped being written to).
MIN_IDLE_TO_LEND_MS = 5000
REST_CHECKPOINT_DELAY_S = 1.0  # checkpoints are written this soon after replicas went dormant


class BrokerCoordinator:
    def __init__(self, config: BrokerConfig, namespace: str, node_id: str | None = None,
                 stale_registration_wait_s: float = 0.0) -> None:
        self._config = config
        self._id = config.broker_id
        self._namespace = namespace
        self._node_id = node_id
        self._stale_wait_s = stale_registration_wait_s
        self._log = Prefixed(log, f"[BrokerCoordinator broker={self._id}]")
        self._zk: ZkStore | None = None
        self._controller: Controller | None = None
        self._admin: AdminService | None = None
        self._cluster_id = ""
        self._frontend: Any = None
        self._endpoint: Endpoint | None = None
        self._metadata = ClusterMetadata()   # the front end's (the last published)
        self._newest = self._metadata         # the newest heard, published next
        self._publishing = asyncio.Lock()
        self._next_publication: asyncio.Future | None = None   # the shared one callers of `_republish` wait for
        self._settled: ClusterMetadata | None = None   # the last the brokers have acted on (replicas started)
        self._metadata_changed = asyncio.Event()
        self._publications = 0   # front-end metadata updates so far
        self._published_starting: set[TopicPartition] = set()   # led here, replica not started: requests wait
        self._led_here_cache: tuple[ClusterMetadata | None, frozenset[TopicPartition]] = (None, frozenset())
        self._republishing: asyncio.Task | None = None
        self._published_replicas: tuple = ()   # `_local_replicas()` as the last publication saw them
        self._published_offline: set[TopicPartition] = set()
        self._checkpoint_after_rest: asyncio.TimerHandle | None = None
        self._wake = asyncio.Event()
        self._topic_configs: dict[str, LogConfig] = {}
        self._maintenance = LogMaintenance(config, self._log)
        self._failed_dirs = FailedLogDirs()
        self._fenced: dict[TopicPartition, Any] = {}   # replicas on failed dirs told so (their handles)
        launcher = RayReplicaLauncher(self._id, config.log_dirs, namespace, node_id,
                                      coordinator=coordinator_name(self._id), failed_dirs=self._failed_dirs,
                                      spares=config.replica_spare_processes,
                                      quiet_after_s=(config.replica_dormant_after_ms / 1000
                                                     if config.replica_dormant_after_ms >= 0 else None))
        self._launcher = launcher
        self._live_cap = LiveReplicaCap(config.replica_max_live_processes, lambda: len(self._reconciler.replicas),
                                        self._make_room)
        # Near the cap, wakes take the processes of the replicas rested to make room for them.
        spares = config.replica_spare_processes
        launcher.rests_coming = lambda: 0 <= self._live_cap.limit <= self._live_cap.in_use() + spares
        launcher.borrow = self._lend_a_process
        self._lending = asyncio.Lock()
        self._reconciler = ReplicaReconciler(self._id, launcher, self._maintenance, self._topic_config, self._log,
                                             on_replica_lost=self._replica_lost,
                                             on_leader_ready=self._leader_ready,
                                             dormancy=config.replica_dormant_after_ms >= 0, cap=self._live_cap)
        self._log_dirs = ReplicaLogDirs(
            config.log_dirs, self._reconciler, self._maintenance, self._log, topic_id=self._topic_id,
            known=lambda tp: self._metadata.partition(tp.topic, tp.partition) is not None,
            hosted=self._hosts, publish=self._replica_lost, prefer=launcher.prefer,
            io_max_bytes_per_s=config.replica_alter_log_dirs_io_max_bytes_per_second,
            file_delete_delay_ms=config.log_segment_delete_delay_ms,
            offline_dirs=lambda: frozenset(self._failed_dirs))
        self._death_watch = BrokerDeathWatch(self._id, namespace, self._broker_died, self._log)
        self._offline_report: OfflineReplicaReport | None = None
        self._stopped = asyncio.Event()
        self._registration: BrokerRegistration | None = None
        self._session_lost = False
        self._tasks: list[asyncio.Task] = []
        self._retry: asyncio.TimerHandle | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping = False
        self._locks = LogDirLocks(())   # taken at start, once the log dirs are checked

    # -- lifecycle -------------------------------------------------------------------
    async def start(self) -> dict:
        """Connect to ZooKeeper, check log dirs, start the front end, register the broker."""
        self._loop = asyncio.get_running_loop()
        self._zk = ZkStore(self._config.zookeeper_connect, self._config.zookeeper_session_timeout_ms)
        await asyncio.to_thread(self._zk.start)
        self._controller = Controller(self._id, self._zk, self._config.unclean_leader_election_enable)
        self._admin = AdminService(self._config, self._zk, partial(self._await_metadata, settled=True), self._log)
        self._cluster_id = await asyncio.to_thread(self._zk.ensure_cluster_id)
        for d in self._config.log_dirs:
            check_meta_properties(d, self._id, self._cluster_id)
        self._locks = LogDirLocks(self._config.log_dirs)
        self._locks.acquire()
        # Moves between log dirs that a stop cut short: swaps finished, copies resumed once running.
        recovery = await asyncio.to_thread(recover_moves, self._config.log_dirs)
        for log_dir, future in recovery.complete:
            self._maintenance.moved(future.tp, log_dir)
        if recovery.complete or recovery.resume or recovery.remove:
            self._log.info("log dir moves left by the last run: %d swaps finished, %d resumed, %d dirs removed",
                           len(recovery.complete), len(recovery.resume), len(recovery.remove))
        self._log_dirs.resume(recovery)
        listener = Endpoint.parse(self._config.listeners[0])
        advertised = Endpoint.parse(self._config.advertised_listeners[0]) if self._config.advertised_listeners \
            else listener
        self._frontend = FrontendActor.options(
            name=frontend_name(self._id), namespace=self._namespace, num_cpus=0, max_concurrency=10000,
            **pin_to_node(self._node_id)).remote(
                self._id, listener.host, listener.port, ray.get_runtime_context().current_actor,
                auto_create_topics=self._config.auto_create_topics_enable,
                producer_id_memory_ms=self._config.transactional_id_expiration_ms,
                group_settings=GroupSettings.from_config(self._config),
                socket_settings=SocketServerSettings.from_config(self._config),
                offsets_topic_configs={"cleanup.policy": "compact", "compression.type": "producer",
                                       "segment.bytes": str(self._config.offsets_topic_segment_bytes)})
        port = await self._frontend.start.remote()
        if advertised.port == 0 or advertised == listener:
            advertised = Endpoint(advertised.listener, advertised.host, port, advertised.security_protocol)
        self._endpoint = advertised
        registration = BrokerRegistration(self._id, (advertised,), self._config.rack_id)
        self._registration = registration
        # A previous incarnation's report of offline replicas goes before this one is live.
        self._offline_report = OfflineReplicaReport(self._id, self._zk, self._log)
        self._offline_report.report(())
        if not await self._offline_report.settled(2 * REPORT_TIMEOUT_S):
            self._log.warning("could not clear this broker's offline replica report yet; still trying")
        await self._remove_registration_of_previous_incarnation()
        await asyncio.to_thread(self._zk.register_broker, registration, self._stale_wait_s)
        self._locks.note_session(self._zk.session_id)
        self._zk.on_session_state(lambda state: self._loop.call_soon_threadsafe(self._session_changed, state))
        self._log.info("registered at /brokers/ids/%d with endpoint %s (cluster %s)",
                       self._id, advertised, self._cluster_id)
        for watch in (self._zk.watch_controller, self._zk.watch_brokers, self._zk.watch_topics,
                      self._zk.watch_delete_topics):
            watch(self._threadsafe(self._wake.set))
        wake = self._threadsafe(self._wake.set)
        self._zk.watch_log_dir_events(lambda events: wake() if events else None)   # not when they are taken
        # CreatePartitions rewrites a topic's znode; one data watch per topic (in a thread: many topics).
        await asyncio.to_thread(self._zk.watch_partition_modifications, wake)
        self._zk.watch_config_changes(self._threadsafe(lambda: asyncio.ensure_future(self._apply_topic_configs())))
        self._tasks = [asyncio.create_task(self._run_controller()), asyncio.create_task(self._checkpoint_periodically())]
        if self._config.log_cleaner_enable and self._config.log_cleaner_threads > 0:
            self._tasks.append(asyncio.create_task(self._run_cleaner()))
        if self._config.auto_leader_rebalance_enable:
            self._tasks.append(asyncio.create_task(self._rebalance_leaders_periodically()))
        if self._config.replica_dormant_after_ms >= 0:
            self._tasks.append(asyncio.create_task(self._upkeep_dormant_periodically()))
        self._wake.set()
        # Serve only once the controller has sent metadata that lists this broker, so a
        # client's first Metadata request already sees it (Kafka's broker waits likewise).
        if not await self._await_metadata(lambda m: self._id in m.brokers, SERVE_WAIT_MS):
            self._log.warning("no metadata from a controller after %d s; serving anyway", SERVE_WAIT_MS // 1000)
        # Spare replica processes, so the first writes to new or dormant partitions need not wait
        # for a process to start. Started in the background: the broker serves without them.
        self._launcher.refill()
        freeze_startup_objects()
        watch_long_collections(self._log)
        return {"broker_id": self._id, "host": advertised.host, "port": port, "cluster_id": self._cluster_id,
                "pid": os.getpid()}

    async def shutdown(self) -> None:
        """Clean stop: close replicas (flush, clean-shutdown marker), front end, ZooKeeper session."""
        self._stopping = True
        self._stopped.set()
        self._death_watch.stop()
        self._log_dirs.stop()
        if self._offline_report is not None:
            self._offline_report.stop()
        for task in self._tasks:
            task.cancel()
        for timer in (self._retry, self._checkpoint_after_rest):
            if timer is not None:
                timer.cancel()
        if self._frontend is not None:
            try:
                await self._frontend.stop.remote()
            except Exception:  # noqa: BLE001 - already gone
                pass
        self._launcher.stop_spares()
        replicas = dict(self._reconciler.replicas)
        closed = await asyncio.gather(*[r.actor.close.remote() for r in replicas.values()], return_exceptions=True)
        self._maintenance.take_statuses(list(replicas), closed)
        await self._maintenance.write_checkpoints(self._replica_actors(), ask_replicas=False,
                                                  skip_dirs=set(self._failed_dirs))
        for r in replicas.values():
            ray.kill(r.actor)
        self._reconciler.forget_all()
        if self._frontend is not None:
            ray.kill(self._frontend)
        if self._zk is not None:
            await asyncio.to_thread(self._zk.stop)
        self._locks.release()

    async def status(self) -> dict:
        """What `rafka status` shows of this broker: its role, the pids of its processes and
        their memory (PSS: in total, of the replicas, of the services), its replicas, the
        partitions it leads with an ISR short of their replicas
        (UnderReplicatedPartitions), replicas that are offline here, its failed log dirs
        (OfflineLogDirectoryCount), and, on the controller, partitions without a leader
        (OfflinePartitionsCount)."""
        metadata, me = self._metadata, self._id
        led = [info for _, info in _partitions(metadata) if info.leader == me]
        controller = self._controller is not None and self._controller.is_active
        try:
            pids = await asyncio.wait_for(self.replica_pids(), 10)
            replicas = {replica_name(me, tp) for tp in self._reconciler.replicas}
            memory = await asyncio.to_thread(broker_memory, pids, replicas)   # this node's /proc
        except Exception as e:  # noqa: BLE001 - the front end is busy or gone: report without its pid
            pids, memory = {"error": repr(e)}, {}
        return {**memory, "broker_id": me, "rack": self._config.rack_id, "controller": controller,
                "controller_id": metadata.controller_id,
                "controller_epoch": self._reconciler.controller_epoch, "cluster_id": self._cluster_id,
                "endpoint": str(self._endpoint), "pid": os.getpid(), "node_id": self._node_id, "pids": pids,
                "replicas": sorted(str(tp) for tp in self._reconciler.replicas),
                "dormant_replicas": len(self._reconciler.dormant),
                "spare_replica_processes": self._launcher.spares,
                "spare_replica_processes_starting": self._launcher.spares_starting,
                "max_live_replica_processes": self._live_cap.limit, "wakes_over_the_cap": self._live_cap.over_cap,
                "leaders": len(led), "rests": self._reconciler.rests, "wakes": self._reconciler.wakes,
                "under_replicated_partitions": sorted(f"{t}-{i.partition}" for t, i in _partitions(metadata)
                                                      if i.leader == me and len(i.isr) < len(i.replicas)),
                "offline_partitions": sorted(f"{t}-{i.partition}" for t, i in _partitions(metadata)
                                             if i.leader < 0) if controller else [],
                "offline_replicas": [{"partition": str(o.tp), "error": o.error, "failures": o.failures,
                                      "retry_in_ms": round(o.retry_in_ms)} for o in self._reconciler.offline()],
                "offline_log_dirs": dict(self._failed_dirs.reasons)}

    async def await_stop(self) -> None:
        """Returns when this broker begins a clean stop. The controller keeps this call
        outstanding: if it fails instead, this broker's process died (`BrokerDeathWatch`)."""
        await self._stopped.wait()

    def zk_session_id(self) -> int:
        """The ZooKeeper session that owns this broker's registration."""
        return self._zk.session_id

    def zk_session_credentials(self) -> tuple[int, bytes]:
        """(session id, password) of this broker's ZooKeeper session, for fault drills that
        expire it the way ZooKeeper's own tests do (another client joins the session and
        closes it)."""
        return self._zk.client.client_id

    async def processes(self) -> dict:
        """This broker's node and the pids of its actors: what kill -9 of the broker needs."""
        return {"node_id": self._node_id, "pids": await self.replica_pids()}

    async def replica_pids(self) -> dict[str, int]:
        """Process ids of this broker's actors (coordinator, front end, replicas), by actor name."""
        pids = {coordinator_name(self._id): os.getpid(),
                frontend_name(self._id): await self._frontend.pid.remote()}
        for tp, replica in self._reconciler.replicas.items():
            pids[replica_name(self._id, tp)] = replica.pid
        for i, pid in enumerate(await self._launcher.spare_pids()):
            pids[f"replica-spare:{self._id}:{i}"] = pid
        return pids

    def _replica_actors(self) -> dict:
        return {tp: r.actor for tp, r in self._reconciler.replicas.items()}

    def _threadsafe(self, action: Callable[[], Any]) -> Callable[..., None]:
        """A kazoo watch callback (kazoo's thread) that runs `action` on this actor's loop."""
        def callback(*_: Any) -> None:
            if self._loop is not None and not self._stopping:
                self._loop.call_soon_threadsafe(action)
        return callback

    # -- timers ----------------------------------------------------------------------
    async def _checkpoint_periodically(self) -> None:
        """Rewrite each log dir's recovery-point and log-start-offset checkpoints, every
        log.flush.offset.checkpoint.interval.ms and log.flush.start.offset.checkpoint.interval.ms
        (Kafka's LogManager tasks; 0 leaves a file to shutdown)."""
        intervals = {"recovery_points": self._config.log_flush_offset_checkpoint_interval_ms,
                     "log_start_offsets": self._config.log_flush_start_offset_checkpoint_interval_ms}
        due = {name: time.monotonic() + ms / 1000 for name, ms in intervals.items() if ms > 0}
        while due:
            await asyncio.sleep(max(0.0, min(due.values()) - time.monotonic()))
            now = time.monotonic()
            chosen = {name: at <= now for name, at in due.items()}
            for name, is_due in chosen.items():
                if is_due:
                    due[name] = now + intervals[name] / 1000
            try:
                failed = await self._maintenance.write_checkpoints(
                    self._replica_actors(), recovery_points=chosen.get("recovery_points", False),
                    log_start_offsets=chosen.get("log_start_offsets", False), skip_dirs=set(self._failed_dirs))
            except Exception:  # noqa: BLE001 - keep the broker alive; the next round retries
                self._log.exception("writing the log dir checkpoints failed")
                continue
            for log_dir, reason in failed.items():
                await self.log_dir_failed(log_dir, f"writing its checkpoint files failed: {reason}")

    async def _run_cleaner(self) -> None:
        """Kafka's cleaner threads: clean the dirtiest compacted logs; when none needs it,
        wait log.cleaner.backoff.ms."""
        backoff_s = self._config.log_cleaner_backoff_ms / 1000
        while not self._stopping:
            try:
                cleaned = await self._maintenance.clean_dirtiest_logs(self._replica_actors())
            except Exception:  # noqa: BLE001 - keep the cleaner alive
                self._log.exception("log cleaner round failed")
                cleaned = 0
            if not cleaned:
                await asyncio.sleep(backoff_s)

    async def _rebalance_leaders_periodically(self) -> None:
        """auto.leader.rebalance.enable: every leader.imbalance.check.interval.seconds, the
        controller moves leadership back to preferred replicas where a broker is imbalanced."""
        while not self._stopping:
            await asyncio.sleep(self._config.leader_imbalance_check_interval_seconds)
            if self._controller is None or not self._controller.is_active:
                continue
            try:
                moved = await asyncio.to_thread(self._controller.rebalance_leaders,
                                                self._config.leader_imbalance_per_broker_percentage)
            except Exception:  # noqa: BLE001 - the next check tries again
                self._log.exception("leader rebalance failed")
                continue
            if moved:
                self._log.info("moved %d partitions back to their preferred leader", len(moved))
                self._wake.set()

    # -- controller ------------------------------------------------------------------
    async def _run_controller(self) -> None:
        """One controller round per wake-up (a watch fired); a failed round retries soon."""
        while not self._stopping:
            await self._wake.wait()
            self._wake.clear()
            try:
                metadata = await asyncio.to_thread(self._controller.run_round, self._cluster_id)
                if metadata is not None:
                    await self._send_metadata(metadata)
                self._watch_for_deaths()
            except Exception:  # keep the broker alive; the next event retries
                self._log.exception("controller round failed")
                await asyncio.sleep(0.5)
                self._wake.set()

    # -- the ZooKeeper session -------------------------------------------------------
    def _session_changed(self, state: str) -> None:
        """kazoo's session states, on this actor's loop. LOST: the session expired, and with it
        the registration and any controller role; CONNECTED after that: a new session."""
        if self._stopping:
            return
        if state == "LOST":
            self._session_lost = True
            if self._controller is not None and self._controller.is_active:
                self._controller.epoch = None   # its ephemeral /controller went with the session
            self._death_watch.stop()
            self._log.warning("ZooKeeper session expired: not registered until a new session starts")
        elif state == "CONNECTED" and self._session_lost:
            self._session_lost = False
            asyncio.ensure_future(self._register_again())

    async def _register_again(self) -> None:
        """Register on the new session (Kafka's broker re-registration); the controller then
        sends this broker its replicas' roles, and its leaders that lost their role step down."""
        try:
            await asyncio.to_thread(self._zk.register_broker, self._registration,
                                    2 * self._config.zookeeper_session_timeout_ms / 1000)
        except Exception:  # noqa: BLE001 - the session went again: its next CONNECTED retries
            self._log.exception("registering again after the session expired failed")
            self._session_lost = True
            return
        self._locks.note_session(self._zk.session_id)
        self._log.info("registered again at /brokers/ids/%d on a new ZooKeeper session", self._id)
        self._wake.set()

    async def _remove_registration_of_previous_incarnation(self) -> None:
        """This broker's last process wrote its ZooKeeper session into the log dirs' locks
        (`LogDirLocks`); holding them now proves that process gone, so a registration its
        session left (killed, not stopped) goes now rather than when the session expires."""
        for session_id in self._locks.previous_sessions():
            removed = await asyncio.to_thread(self._zk.remove_dead_session_nodes, self._id, session_id)
            if removed:
                self._log.info("removed %s of this broker's previous process (ZooKeeper session 0x%x), which "
                               "held the log dirs' locks before this one", ", ".join(removed), session_id)

    def _watch_for_deaths(self) -> None:
        """The controller watches every broker; the others watch the controller."""
        if self._stopping:
            return
        if self._controller is not None and self._controller.is_active:
            self._death_watch.watch(self._metadata.brokers)
        elif self._metadata.controller_id >= 0:
            self._death_watch.watch((self._metadata.controller_id,))

    async def _broker_died(self, broker_id: int, session_id: int) -> None:
        """A broker's process died (`BrokerDeathWatch`): remove the registration and controller
        role its session left behind; the ZooKeeper watches then move its leaderships, or
        start a controller election."""
        removed = await asyncio.to_thread(self._zk.remove_dead_session_nodes, broker_id, session_id)
        if removed:
            state_change.info("[Broker id=%d] broker %d died: removed %s of its expiring session",
                              self._id, broker_id, ", ".join(removed))
            self._wake.set()

    async def _send_metadata(self, metadata: ClusterMetadata) -> None:
        """The controller's orders for `metadata` to every live broker (`fan_out_metadata`).
        UpdateMetadata follows LeaderAndIsr at once, without waiting for the replicas to start:
        starting a replica takes 0.3 s idle and seconds under load, and holding the metadata
        back for it kept a new topic out of every broker's Metadata that long (clients with
        short timeouts gave up). Each broker's front end holds requests for a partition it
        leads whose replica still starts, and is told as each one starts."""
        def coordinators() -> list[tuple[int, Any]]:
            found = ((b, find_actor(coordinator_name(b), self._namespace)) for b in metadata.brokers)
            return [(b, actor) for b, actor in found if actor is not None]

        found = await asyncio.to_thread(coordinators)
        await fan_out_metadata({f"broker {b}": actor for b, actor in found}, metadata, self._log)

    # -- every broker ----------------------------------------------------------------
    async def apply_metadata(self, metadata: ClusterMetadata, publish: bool = True) -> ErrorCode:
        """LeaderAndIsr: move this broker's replicas toward the metadata; with `publish`, then
        UpdateMetadata too. If the controller's UpdateMetadata came while this was under way,
        or came first and showed partitions whose replicas have started since, the front end
        gets the metadata again with its local leaders once this is done."""
        publications = self._publications
        code = await self._reconciler.apply(metadata)
        await self._fence_failed_dirs()
        self._report_offline(metadata)
        if code != ErrorCode.NONE:
            return code
        if publish:
            await self._publish(metadata)
        elif (self._publications != publications
              or self._published_starting != self._starting(self._metadata, self._reconciler.local_replicas())):
            await self._publish()
        else:   # the front end serves its new leaderships at once, before any metadata shows them
            local = self._reconciler.local_replicas()
            await bounded(self._frontend.update_leaders.remote(
                {tp: (r.actor, r.socket) for tp, r in local.leaders.items()}, local.dormant_leaders),
                FRONTEND_CALL_TIMEOUT_S, "the front end's update_leaders", self._log)
        return ErrorCode.NONE

    def _leader_ready(self, tp: TopicPartition) -> None:
        """A leader replica runs (or is dormant) now: if the front end was told it still starts,
        publish again, so that partitions are served one by one as they start, not when a whole
        burst has (requests for them wait meanwhile). Publications are coalesced."""
        if tp in self._published_starting:
            self._republish_if_stale()

    def _local_replicas(self, local: LocalReplicas | None = None) -> tuple:
        """What a publication tells the front end of this broker's replicas, to compare."""
        local = local or self._reconciler.local_replicas()
        return ({tp: (x.socket, x.pid) for tp, x in local.leaders.items()},
                {tp: (x.socket, x.pid) for tp, x in local.followers.items()},
                local.dormant_leaders, local.dormant_followers)

    def _republish_if_stale(self) -> None:
        """Publish again (coalesced) while the front end's replicas differ from the broker's:
        a publication takes its snapshot before it awaits the front end, and a replica that
        started, woke, rested or was born dormant meanwhile (a LeaderAndIsr applied while an
        UpdateMetadata was under way, say) is not in it. A follower missing there is never
        fetched for, and its leader's acks=all produces wait until it leaves the ISR."""
        if self._republishing is None and not self._stopping and self._published_replicas != self._local_replicas():
            self._republishing = asyncio.ensure_future(self._publish_stale())

    async def _publish_stale(self) -> None:
        try:
            while not self._stopping and self._published_replicas != self._local_replicas():
                await self._publish()
        except Exception as e:  # noqa: BLE001 - the front end is gone (stopping); the next publish retries
            self._log.warning("could not publish the broker's replicas: %r", e)
        finally:
            self._republishing = None

    # -- dormant replicas (replica.dormant.after.ms) -----------------------------------
    async def replica_idle(self, tp: TopicPartition, pid: int) -> None:
        """A replica has had no writes for replica.dormant.after.ms: close it (in the background;
        the replica's own call returns at once, as this closes it)."""
        if not self._stopping:
            asyncio.ensure_future(self._rest(tp, pid))

    async def _rest(self, tp: TopicPartition, pid: int) -> bool:
        """Close the idle replica of `tp` (process `pid`) and serve its partition dormant; True if it rested."""
        before = self._reconciler.replicas.get(tp)
        try:
            rested = await self._reconciler.rest(tp, pid, quiesce=lambda: self._frontend.quiesce.remote(tp))
            if rested or self._reconciler.replicas.get(tp) is not before:   # (dormant, restarted or failed)
                self._report_offline()
                await self._republish()
                self._checkpoint_soon()
            return rested
        except Exception as e:  # noqa: BLE001 - the front end is gone (stopping): nothing to do
            self._log.warning("could not make replica %s dormant: %r", tp, e)
            return False

    async def _make_room(self, count: int) -> int:
        """replica.max.live.processes is reached and wakes wait: rest up to `count` of the live
        replicas idle longest (quiet ones only, as a replica reports them); how many rested."""
        chosen, live = await self._idlest(count, MIN_IDLE_TO_MAKE_ROOM_MS)
        self._log.info("%d replicas run (replica.max.live.processes=%d) and %d wakes wait: resting %d idle ones",
                       live, self._live_cap.limit, self._live_cap.waiting, len(chosen))
        rested = await asyncio.gather(*[self._rest(tp, pid) for tp, pid in chosen])
        return sum(rested)

    async def _lend_a_process(self) -> bool:
        """A replica starts and no spare process is ready: rest the live replica idle longest, if
        one has been idle for MIN_IDLE_TO_LEND_MS, so that the start takes its process (~0.1 s)
        instead of a new one (~1 s of a core; seconds under load). One at a time: each rest
        frees one process, for the start waiting longest. Not during a tick (no rest runs then)."""
        if self._stopping or self._reconciler.ticking:
            return False
        async with self._lending:
            chosen, _ = await self._idlest(1, MIN_IDLE_TO_LEND_MS)
            if chosen and await self._rest(*chosen[0]):
                self._log.info("no spare process was ready: replica %s rested early (idle) to lend its process",
                               chosen[0][0])
                return True
            return False

    async def _idlest(self, count: int, min_idle_ms: int) -> tuple[list[tuple[TopicPartition, int]], int]:
        """Up to `count` live replicas idle at least `min_idle_ms` (quiet ones only, as each replica
        reports it), idlest first, as (partition, pid); and how many replicas run. Only those open
        that long are asked (in a storm of wakes most were just woken, and every lend asks)."""
        running = self._reconciler.replicas
        live, opened_before = len(running), time.monotonic() - min_idle_ms / 1000
        replicas = {tp: r for tp, r in running.items() if r.opened_at <= opened_before}
        idle = await asyncio.gather(*[asyncio.wait_for(r.actor.idle_for_ms.remote(), IDLENESS_TIMEOUT_S)
                                      for r in replicas.values()], return_exceptions=True)
        ranked = sorted(((ms, tp) for tp, ms in zip(replicas, idle)
                         if isinstance(ms, (int, float)) and ms >= min_idle_ms), key=lambda pair: -pair[0])
        return [(tp, replicas[tp].pid) for _, tp in ranked[:count]], live

    async def wake_replica(self, tp: TopicPartition) -> bool:
        """A request for a dormant replica needs its process (a produce, a follower behind):
        start it; the front end hears of it with the next publication. True once it runs."""
        if tp not in self._reconciler.dormant:
            return tp in self._reconciler.replicas
        woke = await self._reconciler.wake(tp, self._topic_id(tp))
        if not woke:
            self._report_offline()
        await self._republish()
        return woke

    async def _upkeep_dormant_periodically(self) -> None:
        """Every log.retention.check.interval.ms, wake the dormant replicas whose logs need
        upkeep (a retention pass would delete a segment, the cleaner would compact them): they
        do it as any replica does, and go dormant again after replica.dormant.after.ms."""
        interval_s = self._config.log_retention_check_interval_ms / 1000
        while not self._stopping:
            await asyncio.sleep(interval_s)
            try:
                await self._upkeep_dormant()
            except Exception:  # noqa: BLE001 - keep the task alive; the next round tries again
                self._log.exception("checking the dormant replicas' logs failed")

    async def _upkeep_dormant(self) -> None:
        now_ms = int(time.time() * 1000)
        configs: dict[str, LogConfig] = {}
        due: list[tuple[TopicPartition, str]] = []
        for tp, closed in list(self._reconciler.dormant.items()):
            if tp.topic not in configs:
                config = await self._topic_config(tp.topic)
                if not self._config.log_cleaner_enable:   # no cleaner: nothing to compact
                    config = dataclasses.replace(config, cleanup_policy=tuple(
                        p for p in config.cleanup_policy if p != "compact"))
                configs[tp.topic] = config
            try:
                reason = await asyncio.to_thread(upkeep_due, closed, configs[tp.topic],
                                                 self._maintenance.cleaner_offset(tp), now_ms)
            except ClosedLogError as e:   # its replica's recovery deals with it
                reason = str(e)
            if reason is not None:
                due.append((tp, reason))
        starts = asyncio.Semaphore(DEFAULT_MAX_PARALLEL_STARTS)

        async def wake(tp: TopicPartition, reason: str) -> None:
            async with starts:
                self._log.info("waking dormant replica %s for its log's upkeep: %s", tp, reason)
                await self.wake_replica(tp)
        await asyncio.gather(*(wake(tp, reason) for tp, reason in due))

    def _checkpoint_soon(self) -> None:
        """Write the checkpoints shortly after replicas went dormant (coalesced): a broker killed
        later restarts them dormant only with their final high watermark on disk."""
        if self._checkpoint_after_rest is None and not self._stopping:
            self._checkpoint_after_rest = asyncio.get_running_loop().call_later(
                REST_CHECKPOINT_DELAY_S, lambda: asyncio.ensure_future(self._write_rest_checkpoints()))

    async def _write_rest_checkpoints(self) -> None:
        self._checkpoint_after_rest = None
        try:
            await self._maintenance.write_checkpoints({}, ask_replicas=False, skip_dirs=set(self._failed_dirs))
        except Exception:  # noqa: BLE001 - the periodic write tries again
            self._log.exception("writing the checkpoints after replicas went dormant failed")

    async def _replica_lost(self) -> None:
        """A replica's process died: the front end stops serving it (offline) until the
        reconciler's retry starts it again, and the controller is told, so that leadership
        moves to a live ISR member and the replica leaves the ISR meanwhile."""
        if not self._stopping:
            self._report_offline()
            await self._publish()

    def _report_offline(self, metadata: ClusterMetadata | None = None) -> None:
        """Hand the reconciler's offline replicas to the report (written only if they changed),
        with the replicas on failed log dirs that another in-sync replica can take over (by
        `metadata`, default the last published)."""
        if self._offline_report is not None and not self._stopping:
            on_failed = self._failed_dirs.replicas_on_failed_dirs(
                {tp: r.log_dir for tp, r in self._reconciler.replicas.items()})
            self._offline_report.report({o.tp for o in self._reconciler.offline()}
                                        | replicas_to_report(metadata or self._metadata, self._id, on_failed))

    # -- failed log dirs (Kafka's LogDirFailureChannel; see log_dir_failure.py) --------
    async def log_dir_failed(self, log_dir: str, reason: str) -> None:
        """A write to `log_dir` failed (a replica's, or a checkpoint's): every replica of this
        broker in that dir stops taking writes, the controller hears of those another in-sync
        replica can take over, and new partitions go to the other dirs. Idempotent."""
        if self._stopping or not self._failed_dirs.fail(log_dir, reason):
            return
        self._log.error("Stopping serving logs in dir %s: %s (its replicas serve reads only; other log dirs "
                        "go on)", log_dir, reason)
        await self._fence_failed_dirs()
        self._report_offline()

    async def _fence_failed_dirs(self) -> None:
        """Tell each running replica on a failed dir (once per process) that its dir failed."""
        running = self._reconciler.replicas
        due = {tp: r for tp, r in running.items() if r.log_dir in self._failed_dirs and self._fenced.get(tp) is not r}
        if not due:
            return
        tps = list(due)
        told = await asyncio.gather(*[due[tp].actor.mark_log_dir_offline.remote(
            f"log dir {due[tp].log_dir} failed: {self._failed_dirs.reasons[due[tp].log_dir]}") for tp in tps],
            return_exceptions=True)
        for tp, outcome in zip(tps, told):
            if not isinstance(outcome, BaseException):
                self._fenced[tp] = due[tp]

    async def publish_metadata(self, metadata: ClusterMetadata) -> ErrorCode:
        """UpdateMetadata: hand the front end the metadata and its local leaders."""
        if metadata.controller_epoch < self._reconciler.controller_epoch:
            return ErrorCode.STALE_CONTROLLER_EPOCH
        await self._publish(metadata)
        return ErrorCode.NONE

    async def settle_metadata(self, metadata: ClusterMetadata) -> ErrorCode:
        """The brokers have acted on `metadata`'s LeaderAndIsr: admin requests waiting for it
        (new topics' replicas, deleted topics' removal) can answer."""
        if metadata.controller_epoch < self._reconciler.controller_epoch:
            return ErrorCode.STALE_CONTROLLER_EPOCH
        self._settled = metadata
        self._notify_metadata_changed()
        return ErrorCode.NONE

    def _notify_metadata_changed(self) -> None:
        self._metadata_changed.set()
        self._metadata_changed = asyncio.Event()

    def _starting(self, metadata: ClusterMetadata, local: LocalReplicas) -> set[TopicPartition]:
        """Partitions `metadata` says this broker leads whose replica neither runs nor failed."""
        return self._led_here(metadata) - local.leaders.keys() - local.dormant_leaders.keys() - local.offline

    def _led_here(self, metadata: ClusterMetadata) -> frozenset[TopicPartition]:
        """The partitions `metadata` says this broker leads; kept for the newest metadata, as
        every publication asks (one per wake or rest) and metadata changes far less often."""
        if self._led_here_cache[0] is not metadata:
            self._led_here_cache = (metadata, frozenset(
                TopicPartition(name, info.partition) for name, info in _partitions(metadata) if info.leader == self._id))
        return self._led_here_cache[1]

    async def _publish(self, metadata: ClusterMetadata | None = None, *, queued: bool = False) -> None:
        """Hand the front end `metadata` (None: the newest this broker has) with its local
        leaders, followers and starting leaders. Publications run one at a time, each with
        the newest metadata at its turn, so neither the front end nor `_metadata` ever goes
        back to an older one (a republish begun before the controller's next push)."""
        if metadata is not None:
            self._newest = metadata
        async with self._publishing:
            if queued:
                self._next_publication = None   # from here on, a change needs the next one
            metadata = self._newest
            local = self._reconciler.local_replicas()
            offline = set(local.offline)
            leaders = {tp: (r.actor, r.socket) for tp, r in local.leaders.items()}
            followers = {tp: (r.actor, r.socket) for tp, r in local.followers.items()}
            starting = self._starting(metadata, local)
            snapshot = self._local_replicas(local)
            dormant_leaders, dormant_followers = snapshot[2], snapshot[3]
            if (metadata is self._metadata and starting == self._published_starting
                    and offline == self._published_offline and self._published_replicas):
                # Only replicas changed (wakes and rests): send those alone.
                changed = changed_partitions(self._published_replicas, snapshot)
                if changed:
                    call = self._frontend.update_replicas.remote(
                        changed, _only(leaders, changed), _only(followers, changed),
                        _only(dormant_leaders, changed), _only(dormant_followers, changed))
                    await self._to_frontend(call, "update_replicas")
            else:
                call = self._frontend.update_metadata.remote(with_offline_replicas(metadata, self._id, offline),
                                                             leaders, followers, frozenset(starting),
                                                             dormant_leaders, dormant_followers)
                await self._to_frontend(call, "update_metadata")
            self._metadata = metadata
            self._published_starting = starting
            self._published_offline = offline
            self._published_replicas = snapshot
        self._publications += 1
        self._notify_metadata_changed()
        self._schedule_retry()
        self._watch_for_deaths()
        self._republish_if_stale()

    async def _to_frontend(self, call: Any, what: str) -> None:
        """A publication's call to the front end, bounded (`control_calls.bounded`). One that fails
        or runs out leaves what the front end holds unknown: the next publication is then a whole
        one, and one is scheduled (the lock is released first, as the error passes through it)."""
        try:
            await bounded(call, FRONTEND_CALL_TIMEOUT_S, f"the front end's {what}", self._log)
        except Exception:
            self._published_replicas = ()   # (a whole publication next)
            asyncio.get_running_loop().call_soon(self._republish_if_stale)
            raise

    async def _republish(self) -> None:
        """`_publish()` of the newest state, shared: callers that come while a publication is
        queued wait for that one (it starts after their change), so a burst of wakes and rests
        (each changes one partition) costs a few publications, not one per partition."""
        if self._next_publication is None:
            self._next_publication = asyncio.ensure_future(self._publish(queued=True))
        await asyncio.shield(self._next_publication)

    def _schedule_retry(self) -> None:
        """Run the reconciler again when a failed replica is due for its next start."""
        delay = self._reconciler.retry_in_s()
        if delay is None or self._stopping or self._retry is not None:
            return
        self._retry = asyncio.get_running_loop().call_later(delay, self._retry_now)

    def _retry_now(self) -> None:
        self._retry = None
        asyncio.ensure_future(self.apply_metadata(self._newest))

    async def _await_metadata(self, condition: Callable[[ClusterMetadata], bool], timeout_ms: int, *,
                              settled: bool = False) -> bool:
        """Whether the published metadata (with `settled`: the settled metadata) meets
        `condition` within `timeout_ms`."""
        def met() -> bool:
            metadata = self._settled if settled else self._metadata
            return metadata is not None and condition(metadata)   # (none settled yet: not met)

        deadline = time.monotonic() + timeout_ms / 1000
        while not met():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            try:
                await asyncio.wait_for(self._metadata_changed.wait(), remaining)
            except asyncio.TimeoutError:
                return met()
        return True

    # -- ElectLeaders -----------------------------------------------------------------
    async def elect_leaders(self, election_type: int, partitions: list[tuple[str, int]] | None
                            ) -> dict[tuple[str, int], ErrorCode]:
        """ElectLeaders: the controller (this broker's, or the one the metadata names) elects,
        and the new leaders then reach every broker. The outcome per partition."""
        async def here(controller: Controller) -> dict[tuple[str, int], ErrorCode]:
            outcome = await asyncio.to_thread(controller.elect_leaders, election_type, partitions)
            if any(code == ErrorCode.NONE for code in outcome.values()):
                self._wake.set()
            return outcome

        failed = {tp: ErrorCode.NOT_CONTROLLER for tp in partitions or ()}
        return await self._on_controller("a leader election", here,
                                          lambda c: c.elect_leaders.remote(election_type, partitions), failed)

    # -- ISR changes (AlterPartition) ------------------------------------------------
    async def alter_isr(self, request: AlterIsr) -> tuple[ErrorCode, tuple[int, ...] | None, int]:
        """A local leader replica's ISR change: the controller (this broker's, or the one the
        metadata names) decides and writes it; the new metadata then reaches every broker.
        Returns (error, the ISR in force, its partition epoch)."""
        async def here(controller: Controller) -> tuple[ErrorCode, tuple[int, ...] | None, int]:
            decided = await asyncio.to_thread(controller.alter_isr, request)
            if isinstance(decided, ErrorCode):
                return decided, None, -1
            self._wake.set()   # a controller round sends the new ISR to every broker
            return ErrorCode.NONE, decided.isr, decided.zk_version

        return await self._on_controller("an ISR change", here, lambda c: c.alter_isr.remote(request),
                                          (ErrorCode.NOT_CONTROLLER, None, -1))

    async def _on_controller(self, what: str, here: Callable[[Controller], Awaitable[Any]],
                             remote: Callable[[Any], Any], not_controller: Any) -> Any:
        """Run a controller request: `here` when this broker is the controller, else `remote`
        on the coordinator of the controller the metadata names, bounded in time.
        `not_controller` when there is none, or it moved or died (the caller retries)."""
        controller = self._controller
        if controller is not None and controller.is_active:
            return await here(controller)
        controller_id = self._metadata.controller_id
        if controller_id < 0 or controller_id == self._id:
            return not_controller
        try:
            target = await asyncio.to_thread(find_actor, coordinator_name(controller_id), self._namespace)
            if target is None:
                self._log.info("controller %d is not running, for %s", controller_id, what)
                return not_controller
            return await asyncio.wait_for(remote(target), CONTROL_CALL_TIMEOUT_S)
        except Exception as e:  # noqa: BLE001 - the controller moved or died: the caller retries
            self._log.info("could not reach controller %d for %s: %r", controller_id, what, e)
            return not_controller

    # -- topic configs ---------------------------------------------------------------
    async def _topic_config(self, topic: str) -> LogConfig:
        """The log config of `topic`: the broker's, with the topic's overrides from ZooKeeper."""
        overrides = await asyncio.to_thread(self._zk.topic_config, topic)
        config = self._config.log_config().with_overrides(overrides)
        self._topic_configs[topic] = config
        return config

    async def _apply_topic_configs(self) -> None:
        """A config change notification: hand replicas whose topic config changed the new one."""
        replicas = self._reconciler.replicas
        for topic in sorted({tp.topic for tp in replicas}):
            previous = self._topic_configs.get(topic)
            try:
                config = await self._topic_config(topic)
            except Exception:  # noqa: BLE001 - a topic deleted meanwhile, or a bad znode
                self._log.exception("could not read the config of topic %s", topic)
                continue
            if previous == config:
                continue
            mine = [tp for tp in list(replicas) if tp.topic == topic]
            for tp in mine:
                self._maintenance.config_changed(tp, config)
            await asyncio.gather(*[replicas[tp].actor.update_config.remote(config) for tp in mine if tp in replicas],
                                 return_exceptions=True)
            self._log.info("applied the new config of topic %s to %d replicas", topic, len(mine))

    # -- log dirs (DescribeLogDirs, AlterReplicaLogDirs) ------------------------------
    async def describe_log_dirs(self, partitions: set[TopicPartition] | None) -> list[LogDirDescription]:
        return await self._log_dirs.describe(partitions)

    async def alter_replica_log_dirs(self, moves: dict[TopicPartition, str]) -> dict[TopicPartition, ErrorCode]:
        return await self._log_dirs.alter(moves)

    def _topic_id(self, tp: TopicPartition) -> Any:
        info = self._metadata.topics.get(tp.topic)
        return None if info is None else info.topic_id

    def _hosts(self, tp: TopicPartition) -> bool | None:
        """Whether the metadata gives `tp` a replica on this broker (None: no metadata yet)."""
        if self._metadata.controller_epoch < 0:
            return None
        info = self._metadata.partition(tp.topic, tp.partition)
        return info is not None and self._id in info.replicas

    # -- admin (any broker; the controller acts on what lands in ZooKeeper) -----------
    async def claim_producer_id_block(self) -> ProducerIdBlock:
        return await self._admin.claim_producer_id_block()

    async def create_topics(self, specs: list[TopicSpec], validate_only: bool, timeout_ms: int) -> list[TopicResult]:
        return await self._admin.create_topics(specs, validate_only, timeout_ms)

    async def delete_topics(self, names: list[str], timeout_ms: int) -> list[TopicResult]:
        return await self._admin.delete_topics(names, timeout_ms)

    async def create_partitions(self, specs: list[PartitionsSpec], validate_only: bool,
                                timeout_ms: int) -> list[TopicResult]:
        return await self._admin.create_partitions(specs, validate_only, timeout_ms)

    async def topic_overrides(self, topic: str) -> dict[str, str] | None:
        return await self._admin.topic_overrides(topic)

    async def describe_configs(self, resource_type: int, name: str,
                               keys: list[str] | None) -> list[ConfigEntry] | None:
        return await self._admin.describe_configs(resource_type, name, keys)

    async def alter_topic_configs(self, changes: dict[str, dict[str, str]],
                                  validate_only: bool) -> dict[str, tuple[ErrorCode, str | None]]:
        return await self._admin.alter_topic_configs(changes, validate_only)


def _partitions(metadata: ClusterMetadata) -> list[tuple[str, Any]]:
    """(topic, PartitionInfo) of every partition in `metadata`."""
    return [(name, info) for name, topic in metadata.topics.items() for info in topic.partitions.values()]


def _only(table: dict[TopicPartition, Any], partitions: frozenset[TopicPartition]) -> dict[TopicPartition, Any]:
    return {tp: table[tp] for tp in partitions if tp in table}
