"""`BrokerCoordinator`: one per broker; the only owner of its broker's lifecycle.

It registers the broker in ZooKeeper (`/brokers/ids/<id>`, ephemeral: the ZooKeeper
session is the broker's liveness), starts the broker's front end, and competes for
`/controller`. The winner is the controller: it watches brokers and topics, elects
partition leaders, writes partition state with conditional updates, and sends every live
broker's coordinator the new metadata (Kafka's LeaderAndIsr + UpdateMetadata in one
message). Each coordinator then reconciles its own replicas toward that target: it starts
missing `PartitionReplica` actors, tells them their role, stops the ones no longer
assigned, and hands the front end the metadata and its local leaders.

Async actor. ZooKeeper calls block, so they run in a thread (`asyncio.to_thread`); kazoo
watch callbacks only set an event, and one reconcile task does the work, so reconciles
never overlap. State-changing calls are idempotent: a restarted controller sends them again.
"""
from __future__ import annotations

import asyncio
import logging
import os
import shutil
import time
import uuid
from pathlib import Path
from typing import Any

import ray

from rafka.actors.naming import coordinator_name, frontend_name, replica_name
from rafka.actors.ray_env import pin_to_node
from rafka.common.config import BrokerConfig, LogConfig
from rafka.common.errors import (ErrorCode, InvalidPartitionsError, InvalidReplicationFactorError,
                                 InvalidTopicError, KafkaError, TopicAlreadyExistsError)
from rafka.common.logging_util import Prefixed
from rafka.common.types import Endpoint, TopicPartition, topic_name_problem
from rafka.common.topic_configs import ConfigEntry, describe_broker, describe_topic
from rafka.coordinator.controller import assignment as assign
from rafka.partition_worker.broker_checkpoints import BrokerCheckpoints, PartitionCheckpoint
from rafka.coordinator.broker.cleaner_manager import CleanerManager, LogToClean, cleaner_summary
from rafka.coordinator.controller.election import build_metadata_snapshot, elect_partition_states
from rafka.coordinator.group.group_coordinator import GroupSettings
from rafka.coordinator.group.group_state import GroupConfig
from rafka.coordinator.messages import TopicResult, TopicSpec
from rafka.coordinator.zk.zk_data import BrokerRegistration, ProducerIdBlock, TopicAssignment
from rafka.coordinator.zk.zk_store import ZkStore
from rafka.net.frontend_actor import Frontend
from rafka.common.metadata import ClusterMetadata
from rafka.partition_worker.data_channel import socket_path
from rafka.partition_worker.log_dirs import check_meta_properties, choose_log_dir, find_partition_dir
from rafka.partition_worker.messages import ReplicaStatus
from rafka.partition_worker.replica_actor import PartitionReplica
from rafka.partition_worker.replica_state import LeaderAndIsr

log = logging.getLogger(__name__)
state_change = logging.getLogger("rafka.state_change")

ReplicaActor = ray.remote(PartitionReplica)
TOPIC_RESOURCE, BROKER_RESOURCE = 2, 4  # DescribeConfigs/AlterConfigs resource types
# Until followers replicate (see `_plan_topic`), every partition has a single replica.
MAX_REPLICATION_FACTOR = 1
FrontendActor = ray.remote(Frontend)


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
        self._cluster_id = ""
        self._frontend: Any = None
        self._endpoint: Endpoint | None = None
        self._replicas: dict[TopicPartition, Any] = {}
        self._sockets: dict[TopicPartition, str] = {}
        self._roles: dict[TopicPartition, LeaderAndIsr] = {}
        self._metadata = ClusterMetadata()
        self._metadata_changed = asyncio.Event()
        self._wake = asyncio.Event()
        self._controller_epoch: int | None = None   # set while this broker is the controller
        self._known_controller_epoch = -1
        self._task: asyncio.Task | None = None
        self._checkpoint_task: asyncio.Task | None = None
        self._checkpoints = BrokerCheckpoints(config.log_dirs)
        self._topic_configs: dict[str, LogConfig] = {}
        # Log cleaner: per-partition topic configs, cleaner checkpoints (first dirty offsets; the
        # lead persists them as cleaner-offset-checkpoint) and the choice of logs to clean.
        self._log_configs: dict[TopicPartition, LogConfig] = {}
        self._cleaner_checkpoints: dict[TopicPartition, int] = {}
        self._cleaner = CleanerManager()
        self._cleaner_task: asyncio.Task | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping = False

    # -- lifecycle -------------------------------------------------------------------
    async def start(self) -> dict:
        """Connect to ZooKeeper, check log dirs, start the front end, register the broker."""
        self._loop = asyncio.get_running_loop()
        self._zk = ZkStore(self._config.zookeeper_connect, self._config.zookeeper_session_timeout_ms)
        await asyncio.to_thread(self._zk.start)
        self._cluster_id = await asyncio.to_thread(self._zk.ensure_cluster_id)
        for d in self._config.log_dirs:
            check_meta_properties(d, self._id, self._cluster_id)
        listener = Endpoint.parse(self._config.listeners[0])
        advertised = Endpoint.parse(self._config.advertised_listeners[0]) if self._config.advertised_listeners \
            else listener
        self._frontend = FrontendActor.options(
            name=frontend_name(self._id), namespace=self._namespace, num_cpus=0, max_concurrency=10000,
            **pin_to_node(self._node_id)).remote(
                self._id, listener.host, listener.port, ray.get_runtime_context().current_actor,
                auto_create_topics=self._config.auto_create_topics_enable,
                producer_id_memory_ms=self._config.transactional_id_expiration_ms,
                group_settings=group_settings(self._config),
                offsets_topic_configs={"cleanup.policy": "compact", "compression.type": "producer",
                                       "segment.bytes": str(self._config.offsets_topic_segment_bytes)})
        port = await self._frontend.start.remote()
        if advertised.port == 0 or advertised == listener:
            advertised = Endpoint(advertised.listener, advertised.host, port, advertised.security_protocol)
        self._endpoint = advertised
        registration = BrokerRegistration(self._id, (advertised,), self._config.rack_id)
        await asyncio.to_thread(self._zk.register_broker, registration, self._stale_wait_s)
        self._log.info("registered at /brokers/ids/%d with endpoint %s (cluster %s)",
                       self._id, advertised, self._cluster_id)
        self._zk.watch_controller(self._kick_threadsafe)
        self._zk.watch_brokers(self._kick_threadsafe)
        self._zk.watch_topics(self._kick_threadsafe)
        self._zk.watch_delete_topics(self._kick_threadsafe)
        self._zk.watch_config_changes(self._config_changed_threadsafe)
        self._task = asyncio.create_task(self._run())
        self._checkpoint_task = asyncio.create_task(self._checkpoint_periodically())
        if self._config.log_cleaner_enable and self._config.log_cleaner_threads > 0:
            self._cleaner_task = asyncio.create_task(self._run_cleaner())
        self._wake.set()
        # Serve only once the controller has sent metadata that lists this broker, so a
        # client's first Metadata request already sees it (Kafka's broker waits likewise).
        if not await self._await_metadata(lambda m: self._id in m.brokers, 30000):
            self._log.warning("no metadata from a controller after 30 s; serving anyway")
        return {"broker_id": self._id, "host": advertised.host, "port": port, "cluster_id": self._cluster_id,
                "pid": os.getpid()}

    async def shutdown(self) -> None:
        """Clean stop: close replicas (flush, clean-shutdown marker), front end, ZooKeeper session."""
        self._stopping = True
        for task in (self._task, self._checkpoint_task, self._cleaner_task):
            if task is not None:
                task.cancel()
        if self._frontend is not None:
            try:
                await self._frontend.stop.remote()
            except Exception:  # noqa: BLE001 - already gone
                pass
        closed = await asyncio.gather(*[r.close.remote() for r in self._replicas.values()], return_exceptions=True)
        self._take_statuses(list(self._replicas), closed)
        for tp, offset in self._cleaner_checkpoints.items():
            self._checkpoints.update(tp, cleaner_offset=offset)
        await asyncio.to_thread(self._checkpoints.write)
        for r in self._replicas.values():
            ray.kill(r)
        self._replicas.clear()
        if self._frontend is not None:
            ray.kill(self._frontend)
        if self._zk is not None:
            await asyncio.to_thread(self._zk.stop)

    def status(self) -> dict:
        return {"broker_id": self._id, "controller": self._controller_epoch is not None,
                "controller_epoch": self._known_controller_epoch, "cluster_id": self._cluster_id,
                "endpoint": str(self._endpoint), "replicas": sorted(str(tp) for tp in self._replicas),
                "pid": os.getpid()}

    async def replica_pids(self) -> dict[str, int]:
        """Process ids of this broker's actors (coordinator, front end, replicas), by actor name."""
        pids = {coordinator_name(self._id): os.getpid(),
                frontend_name(self._id): await self._frontend.pid.remote()}
        for tp, actor in self._replicas.items():
            pids[replica_name(self._id, tp)] = (await actor.ready.remote())["pid"]
        return pids

    # -- log dir checkpoints -------------------------------------------------------------
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
                await self.write_checkpoints(recovery_points=chosen.get("recovery_points", False),
                                             log_start_offsets=chosen.get("log_start_offsets", False))
            except Exception:  # noqa: BLE001 - a full disk must not stop the broker; the next round retries
                self._log.exception("writing the log dir checkpoints failed")

    async def write_checkpoints(self, *, recovery_points: bool = True, log_start_offsets: bool = True,
                                cleaner_offsets: bool = True) -> None:
        """Collect the replicas' recovery points and log start offsets and rewrite the files."""
        tps = list(self._replicas)
        statuses = await asyncio.gather(*[self._replicas[tp].status.remote() for tp in tps], return_exceptions=True)
        self._take_statuses(tps, statuses)
        for tp, offset in self._cleaner_checkpoints.items():
            self._checkpoints.update(tp, cleaner_offset=offset)
        await asyncio.to_thread(self._checkpoints.write, recovery_points=recovery_points,
                                log_start_offsets=log_start_offsets, cleaner_offsets=cleaner_offsets)

    def _place(self, tp: TopicPartition, log_dir: str) -> PartitionCheckpoint:
        """Note where `tp` lives; its checkpointed values (the cleaner's is kept for the cleaner)."""
        checkpoint = self._checkpoints.place(tp, log_dir)
        if checkpoint.cleaner_offset is not None:
            self._cleaner_checkpoints.setdefault(tp, checkpoint.cleaner_offset)
        return checkpoint

    def _take_statuses(self, tps: list[TopicPartition], statuses: list[Any]) -> None:
        for tp, status in zip(tps, statuses):
            if isinstance(status, ReplicaStatus):
                self._checkpoints.update(tp, recovery_point=status.recovery_point,
                                         log_start_offset=status.log_start_offset)

    # -- topic configs ---------------------------------------------------------------------
    async def topic_overrides(self, topic: str) -> dict[str, str] | None:
        """A topic's config overrides from `/config/topics/<t>`; None for an unknown topic."""
        zk = self._zk
        assert zk is not None
        if not await asyncio.to_thread(zk.topic_exists, topic):
            return None
        return await asyncio.to_thread(zk.topic_config, topic)

    async def describe_configs(self, resource_type: int, name: str,
                               keys: list[str] | None) -> list[ConfigEntry] | None:
        """DescribeConfigs of a topic (2) or of this broker (4); None when there is no such resource."""
        if resource_type == TOPIC_RESOURCE:
            overrides = await self.topic_overrides(name)
            return None if overrides is None else describe_topic(self._config, overrides, keys)
        if resource_type == BROKER_RESOURCE and name in ("", str(self._id)):
            return describe_broker(self._config, keys)
        return None

    async def alter_topic_configs(self, changes: dict[str, dict[str, str]],
                                  validate_only: bool) -> dict[str, tuple[ErrorCode, str | None]]:
        """Replace topics' overrides (validated as CreateTopics does) and notify every broker."""
        zk = self._zk
        assert zk is not None
        out: dict[str, tuple[ErrorCode, str | None]] = {}
        for topic, overrides in changes.items():
            if not await asyncio.to_thread(zk.topic_exists, topic):
                out[topic] = (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Topic {topic} does not exist")
                continue
            try:
                self._config.log_config().with_overrides(overrides)
            except KafkaError as e:
                out[topic] = (e.code, str(e))
                continue
            if not validate_only:
                await asyncio.to_thread(zk.set_topic_config, topic, overrides)
                self._log.info("updated the config of topic %s: %s", topic, overrides)
            out[topic] = (ErrorCode.NONE, None)
        return out

    def _config_changed_threadsafe(self, *_: Any) -> None:
        if self._loop is not None and not self._stopping:
            self._loop.call_soon_threadsafe(lambda: asyncio.ensure_future(self._apply_topic_configs()))

    async def _apply_topic_configs(self) -> None:
        """A config change notification: hand replicas whose topic config changed the new one."""
        zk = self._zk
        if zk is None:
            return
        base = self._config.log_config()
        for topic in sorted({tp.topic for tp in self._replicas}):
            try:
                config = base.with_overrides(await asyncio.to_thread(zk.topic_config, topic))
            except Exception:  # noqa: BLE001 - a topic deleted meanwhile, or a bad znode
                self._log.exception("could not read the config of topic %s", topic)
                continue
            if self._topic_configs.get(topic) == config:
                continue
            self._topic_configs[topic] = config
            for tp in self._replicas:
                if tp.topic == topic:
                    self._log_configs[tp] = config
            replicas = [actor for tp, actor in self._replicas.items() if tp.topic == topic]
            await asyncio.gather(*[r.update_config.remote(config) for r in replicas], return_exceptions=True)
            self._log.info("applied the new config of topic %s to %d replicas", topic, len(replicas))

    def _kick_threadsafe(self, *_: Any) -> None:
        if self._loop is not None and not self._stopping:
            self._loop.call_soon_threadsafe(self._wake.set)

    async def _run(self) -> None:
        while not self._stopping:
            await self._wake.wait()
            self._wake.clear()
            try:
                await self._reconcile_controller()
            except Exception:  # keep the broker alive; the next event retries
                self._log.exception("controller reconcile failed")
                await asyncio.sleep(0.5)
                self._wake.set()

    # -- controller ------------------------------------------------------------------
    async def _reconcile_controller(self) -> None:
        zk = self._zk
        assert zk is not None
        current = await asyncio.to_thread(zk.controller_id)
        if current is None:
            epoch = await asyncio.to_thread(zk.try_become_controller, self._id)
            if epoch is not None:
                self._controller_epoch = epoch
                state_change.info("[Controller id=%d epoch=%d] became the controller", self._id, epoch)
        elif current != self._id and self._controller_epoch is not None:
            state_change.info("[Controller id=%d] resigned: broker %d is the controller", self._id, current)
            self._controller_epoch = None
        if self._controller_epoch is not None:
            await self._controller_tick()

    async def _controller_tick(self) -> None:
        """Read the cluster from ZooKeeper, elect leaders, write state, tell every broker."""
        zk = self._zk
        epoch = self._controller_epoch
        assert zk is not None and epoch is not None
        brokers = await asyncio.to_thread(zk.live_brokers)
        for topic in await asyncio.to_thread(zk.pending_topic_deletions):
            await asyncio.to_thread(zk.remove_topic_paths, topic)
            state_change.info("[Controller id=%d epoch=%d] deleted topic %s", self._id, epoch, topic)
        topics = await asyncio.to_thread(zk.topics)
        all_states = {}
        for name, topic in topics.items():
            states = await asyncio.to_thread(zk.partition_states, name)
            for p, state in elect_partition_states(topic, states, set(brokers), epoch).items():
                old = states.get(p)
                states[p] = await asyncio.to_thread(zk.write_partition_state, name, p, state,
                                                    None if old is None else old.zk_version)
                state_change.info("[Controller id=%d epoch=%d] %s-%d leader=%d leader_epoch=%d isr=%s",
                                  self._id, epoch, name, p, state.leader, state.leader_epoch, list(state.isr))
            all_states[name] = states
        metadata = build_metadata_snapshot(self._cluster_id, self._id, epoch, brokers, topics, all_states)
        calls = []
        for b in brokers:
            try:
                target = ray.get_actor(coordinator_name(b), namespace=self._namespace)
            except ValueError:
                continue
            calls.append(target.apply_metadata.remote(metadata))
        await asyncio.gather(*calls, return_exceptions=True)

    # -- every broker ----------------------------------------------------------------
    async def apply_metadata(self, metadata: ClusterMetadata) -> ErrorCode:
        """LeaderAndIsr + UpdateMetadata: move this broker's replicas toward the metadata."""
        if metadata.controller_epoch < self._known_controller_epoch:
            self._log.warning("ignoring metadata from stale controller epoch %d < %d",
                              metadata.controller_epoch, self._known_controller_epoch)
            return ErrorCode.STALE_CONTROLLER_EPOCH
        self._known_controller_epoch = metadata.controller_epoch
        wanted: dict[TopicPartition, LeaderAndIsr] = {}
        for topic in metadata.topics.values():
            for p in topic.partitions.values():
                if self._id in p.replicas:
                    wanted[TopicPartition(topic.name, p.partition)] = LeaderAndIsr(
                        p.leader, p.leader_epoch, p.isr, p.replicas, metadata.controller_epoch)
        await self._start_replicas([tp for tp in wanted if tp not in self._replicas], metadata)
        await self._stop_deleted([tp for tp in self._replicas if tp not in wanted])
        changed = [tp for tp, order in wanted.items() if self._roles.get(tp) != order]
        results = await asyncio.gather(*[self._replicas[tp].become.remote(wanted[tp]) for tp in changed])
        for tp, code in zip(changed, results):
            if code == ErrorCode.NONE:
                self._roles[tp] = wanted[tp]
        leaders = {tp: (self._replicas[tp], self._sockets[tp]) for tp, order in wanted.items()
                   if order.leader == self._id}
        await self._frontend.update_metadata.remote(metadata, leaders)
        self._metadata = metadata
        self._metadata_changed.set()
        self._metadata_changed = asyncio.Event()
        return ErrorCode.NONE

    async def _start_replicas(self, tps: list[TopicPartition], metadata: ClusterMetadata) -> None:
        """Start the replica actors in parallel and wait until their logs are open."""
        if not tps:
            return
        log_config = self._config.log_config()
        topic_configs: dict[str, LogConfig] = {}
        started = {}
        for tp in tps:
            if tp.topic not in topic_configs:
                overrides = await asyncio.to_thread(self._zk.topic_config, tp.topic)
                topic_configs[tp.topic] = log_config.with_overrides(overrides)
                self._topic_configs[tp.topic] = topic_configs[tp.topic]
            name = replica_name(self._id, tp)
            try:  # a replica that outlived a coordinator restart is reused
                actor = ray.get_actor(name, namespace=self._namespace)
            except ValueError:
                log_dir = choose_log_dir(self._config.log_dirs, tp)
                topic = metadata.topics.get(tp.topic)
                actor = ReplicaActor.options(
                    name=name, namespace=self._namespace, num_cpus=0, max_concurrency=1000,
                    **pin_to_node(self._node_id)).remote(
                        self._id, tp, log_dir, topic_configs[tp.topic], socket_path(self._namespace, name),
                        checkpoint=self._place(tp, log_dir),
                        topic_id=None if topic is None else topic.topic_id)
            else:
                log_dir = find_partition_dir(self._config.log_dirs, tp)
                if log_dir is not None:
                    self._place(tp, log_dir)
            started[tp] = actor
        answers = await asyncio.gather(*[a.ready.remote() for a in started.values()])
        for tp, answer in zip(started, answers):
            self._sockets[tp] = answer["socket"]
            self._log_configs[tp] = topic_configs[tp.topic]
        self._replicas.update(started)
        self._log.info("started %d partition replicas", len(started))

    async def _stop_deleted(self, tps: list[TopicPartition]) -> None:
        """Stop replicas of deleted topics and remove their directories."""
        for tp in tps:
            actor = self._replicas.pop(tp)
            self._roles.pop(tp, None)
            self._sockets.pop(tp, None)
            self._log_configs.pop(tp, None)
            self._cleaner.forget(tp, self._cleaner_checkpoints)
            try:
                await actor.close.remote()
            except Exception:  # noqa: BLE001
                pass
            ray.kill(actor)
            self._checkpoints.forget(tp)
            d = find_partition_dir(self._config.log_dirs, tp)
            if d is not None:
                shutil.rmtree(Path(d) / str(tp), ignore_errors=True)
            self._log.info("removed replica %s of a deleted topic", tp)

    # -- log cleaner ---------------------------------------------------------------------
    async def _run_cleaner(self) -> None:
        """Kafka's cleaner threads: clean the dirtiest compacted logs; when none needs it,
        wait log.cleaner.backoff.ms."""
        backoff_s = self._config.log_cleaner_backoff_ms / 1000
        while not self._stopping:
            try:
                cleaned = await self._clean_dirtiest_logs()
            except Exception:  # noqa: BLE001 - keep the cleaner alive
                self._log.exception("log cleaner round failed")
                cleaned = 0
            if not cleaned:
                await asyncio.sleep(backoff_s)

    async def _clean_dirtiest_logs(self) -> int:
        """One round: ask each compacted replica for its dirty range, clean up to
        log.cleaner.threads of the dirtiest at once, each with its share of the dedupe buffer."""
        threads = self._config.log_cleaner_threads
        buffer_bytes = self._config.log_cleaner_dedupe_buffer_size // threads
        tps = [tp for tp, cfg in self._log_configs.items()
               if cfg.compact and tp in self._replicas and self._cleaner.eligible(tp)]
        infos = await asyncio.gather(*[self._replicas[tp].cleanable.remote(self._cleaner_checkpoints.get(tp))
                                       for tp in tps], return_exceptions=True)
        candidates = [LogToClean(tp, info, self._log_configs[tp].min_cleanable_dirty_ratio)
                      for tp, info in zip(tps, infos) if not isinstance(info, BaseException)]
        chosen = self._cleaner.choose(candidates, threads, self._cleaner_checkpoints)
        if not chosen:
            return 0
        results = await asyncio.gather(*[self._replicas[c.tp].clean.remote(buffer_bytes, c.info.first_dirty_offset)
                                         for c in chosen], return_exceptions=True)
        for thread_id, (c, result) in enumerate(zip(chosen, results)):
            if c.tp not in self._replicas:  # the partition left this broker meanwhile
                self._cleaner.forget(c.tp, self._cleaner_checkpoints)
                continue
            if isinstance(result, BaseException) or not result.ok:
                error = result if isinstance(result, BaseException) else result.error
                self._log.error("Unexpected exception thrown when cleaning log %s. Marking its partition (%s) as "
                                "uncleanable: %s", c.tp, c.tp, error)
                self._cleaner.done(c.tp, None, self._cleaner_checkpoints)
                continue
            self._cleaner.done(c.tp, result, self._cleaner_checkpoints)
            self._log.info("%s", cleaner_summary(thread_id, c.tp, c.info.first_dirty_offset, result))
        return len(chosen)

    # -- topic admin (any broker; the controller acts on what lands in ZooKeeper) ---------
    async def claim_producer_id_block(self) -> ProducerIdBlock:
        """Claim this broker's next 1,000 producer ids in `/latest_producer_id_block`."""
        assert self._zk is not None
        return await asyncio.to_thread(self._zk.claim_producer_id_block, self._id)

    async def create_topics(self, specs: list[TopicSpec], validate_only: bool, timeout_ms: int) -> list[TopicResult]:
        zk = self._zk
        assert zk is not None
        brokers = sorted(await asyncio.to_thread(zk.live_brokers))
        existing = await asyncio.to_thread(zk.topic_names)
        results: list[TopicResult] = []
        created: list[str] = []
        for spec in specs:
            try:
                result = self._plan_topic(spec, brokers, existing)
                if not validate_only:
                    await asyncio.to_thread(
                        zk.create_topic, TopicAssignment(spec.name, result.topic_id, dict(result_assignment(
                            spec, brokers, result))), dict(spec.configs))
                    created.append(spec.name)
                    state_change.info("[BrokerCoordinator broker=%d] created topic %s with %d partitions, "
                                      "replication factor %d", self._id, spec.name, result.num_partitions,
                                      result.replication_factor)
                results.append(result)
            except KafkaError as e:
                results.append(TopicResult(spec.name, e.code, str(e)))
        if created:  # a timeout of 0 (auto-creation) still waits briefly, so the caller sees leaders
            await self._await_metadata(lambda m: all(_has_leaders(m, t) for t in created),
                                       timeout_ms if timeout_ms > 0 else 5000)
        return results

    def _plan_topic(self, spec: TopicSpec, brokers: list[int], existing: set[str]) -> TopicResult:
        problem = topic_name_problem(spec.name)
        if problem:
            raise InvalidTopicError(problem)
        if spec.name in existing:
            raise TopicAlreadyExistsError(f"Topic '{spec.name}' already exists.")
        self._config.log_config().with_overrides(spec.configs)  # refuses unknown or bad configs
        if spec.assignments:
            partitions = len(spec.assignments)
            rf = len(next(iter(spec.assignments.values())))
        else:
            partitions = spec.num_partitions if spec.num_partitions != -1 else self._config.num_partitions
            rf = spec.replication_factor if spec.replication_factor != -1 else self._config.default_replication_factor
            if partitions < 1:
                raise InvalidPartitionsError("Number of partitions must be larger than 0.")
            if rf < 1:
                raise InvalidReplicationFactorError("Replication factor must be larger than 0.")
            if rf > len(brokers):
                raise InvalidReplicationFactorError(
                    f"Replication factor: {rf} larger than available brokers: {len(brokers)}.")
        if rf > MAX_REPLICATION_FACTOR:
            # Followers do not fetch from leaders yet: a second replica would sit in the ISR
            # with no data, and a failover to it would lose what was acknowledged. Refuse
            # rather than pretend (README: "Not yet").
            raise InvalidReplicationFactorError(
                f"Replication factor: {rf} is not supported yet: this rafka version does not replicate "
                f"between brokers; use replication factor {MAX_REPLICATION_FACTOR}.")
        return TopicResult(spec.name, ErrorCode.NONE, None, uuid.uuid4(), partitions, rf, dict(spec.configs))

    async def delete_topics(self, names: list[str], timeout_ms: int) -> list[TopicResult]:
        zk = self._zk
        assert zk is not None
        topics = await asyncio.to_thread(zk.topics)
        results, deleting = [], []
        for name in names:
            topic = topics.get(name)
            if topic is None:
                results.append(TopicResult(name, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                           "This server does not host this topic-partition."))
                continue
            await asyncio.to_thread(zk.delete_topic, name)
            deleting.append(name)
            results.append(TopicResult(name, ErrorCode.NONE, None, topic.topic_id))
        if deleting:
            ok = await self._await_metadata(lambda m: not any(n in m.topics for n in deleting),
                                            timeout_ms or 30000)
            if not ok:
                results = [TopicResult(r.name, ErrorCode.REQUEST_TIMED_OUT, "Deletion is still in progress.",
                                       r.topic_id) if r.name in deleting else r for r in results]
        return results

    async def _await_metadata(self, condition, timeout_ms: int) -> bool:
        deadline = time.monotonic() + timeout_ms / 1000
        while not condition(self._metadata):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            try:
                await asyncio.wait_for(self._metadata_changed.wait(), remaining)
            except asyncio.TimeoutError:
                return condition(self._metadata)
        return True


def group_settings(config: BrokerConfig) -> GroupSettings:
    """The group coordinator's settings from the broker config. `__consumer_offsets` gets at
    most the replication factor this version supports (no follower replication yet)."""
    return GroupSettings(
        partitions=config.offsets_topic_num_partitions,
        replication_factor=min(config.offsets_topic_replication_factor, MAX_REPLICATION_FACTOR),
        retention_ms=config.offsets_retention_minutes * 60_000,
        retention_check_interval_ms=config.offsets_retention_check_interval_ms,
        commit_timeout_ms=config.offsets_commit_timeout_ms,
        metadata_max_bytes=config.offset_metadata_max_bytes,
        group=GroupConfig(min_session_timeout_ms=config.group_min_session_timeout_ms,
                          max_session_timeout_ms=config.group_max_session_timeout_ms,
                          initial_rebalance_delay_ms=config.group_initial_rebalance_delay_ms,
                          max_size=config.group_max_size))


def _has_leaders(metadata: ClusterMetadata, topic: str) -> bool:
    info = metadata.topics.get(topic)
    return info is not None and all(p.leader >= 0 for p in info.partitions.values())


def result_assignment(spec: TopicSpec, brokers: list[int], result: TopicResult) -> dict[int, tuple[int, ...]]:
    if spec.assignments:
        return {p: tuple(r) for p, r in spec.assignments.items()}
    return assign.assign_replicas(brokers, result.num_partitions, result.replication_factor)
