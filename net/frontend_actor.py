"""`Frontend`: the Ray actor that accepts Kafka clients for one broker.

It owns a `KafkaServer` (sockets) and a `RequestDispatcher` (API logic). The broker's
coordinator pushes cluster metadata to it (`update_metadata`) and tells it which local
replica actors lead which partitions; create/delete topic requests go to that
coordinator. Async actor: everything runs on one event loop.
"""
from __future__ import annotations

import asyncio
import logging
import os
from typing import Any, AsyncIterator

from rafka.actors.ray_hooks.untraced import drop_tracing_wrappers
from rafka.common.collector import freeze_startup_objects, watch_long_collections
from rafka.common.loop_watchdog import LoopWatchdog
from rafka.common.errors import ErrorCode, KafkaError
from rafka.common.logging_util import Prefixed
from rafka.common.types import TopicPartition
from rafka.coordinator.group.group_coordinator import OFFSETS_TOPIC, GroupCoordinator, GroupSettings
from rafka.coordinator.messages import PartitionsSpec, TopicResult, TopicSpec
from rafka.coordinator.transaction.producer_ids import ProducerIdManager, ProducerIdSource
from rafka.coordinator.transaction.transaction_coordinator import TransactionCoordinator, TxnSettings
from rafka.coordinator.transaction.transaction_log import TRANSACTION_STATE_TOPIC
from rafka.net.data_plane import ReplicaChannel
from rafka.net.dormant_channel import DormantChannel
from rafka.partition_worker.closed_log import ClosedLog
from rafka.net.replica_fetcher import ReplicaFetcherManager
from rafka.net.internal_log_read import read_to_log_end
from rafka.net.handlers import RequestDispatcher
from rafka.common.metadata import ClusterMetadata
from rafka.net.routing import STARTING_WAIT_MS
from rafka.net.server import KafkaServer
from rafka.net.starting_leaders import StartingLeaders
from rafka.net.socket_settings import SocketServerSettings
from rafka.net.txn_produce import NO_VERIFICATION
from rafka.net.txn_storage import TxnStorage
from rafka.net.txn_verifier import CoordinatorVerifier

log = logging.getLogger(__name__)

# The bound of a call to the broker's coordinator, beyond the wait its request asks for: the
# client gets REQUEST_TIMED_OUT instead of a connection held (and closed) by a hung call.
DEFAULT_CONTROL_TIMEOUT_MS = 30_000
# What a create or delete with timeout_ms 0 waits for at most in the coordinator (AdminService).
_ADMIN_WAIT_MS = 30_000
# How long a replica going dormant may take to answer the requests under way (acks=all ones
# wait for followers); if it takes longer it stays live.
QUIESCE_TIMEOUT_S = 5.0
# What a wake may take beyond the control timeout: starts queue behind each other in a burst.
WAKE_WAIT_MS = 60_000
# A first write to a never-written partition wakes at most this many of its topic's other
# never-written partitions with it (`_wake_new_siblings`): a new topic of 1,000 partitions
# written by key to a few of them does not start a thousand processes.
NEW_SIBLING_WAKES = 16

Channel = ReplicaChannel | DormantChannel


class CoordinatorCallError(KafkaError):
    """A call to the broker's coordinator failed (its actor gone, ZooKeeper lost inside it) or
    outlived its bound (`code` REQUEST_TIMED_OUT); the handlers answer `code` (Kafka answers an
    unexpected failure with UNKNOWN_SERVER_ERROR)."""

    code = ErrorCode.UNKNOWN_SERVER_ERROR


class Frontend:
    def __init__(self, broker_id: int, host: str, port: int, coordinator: Any, *,
                 auto_create_topics: bool = True,
                 socket_settings: SocketServerSettings | None = None,
                 producer_id_memory_ms: int = 604_800_000,
                 group_settings: GroupSettings | None = None,
                 offsets_topic_configs: dict[str, str] | None = None,
                 txn_settings: TxnSettings | None = None,
                 control_timeout_ms: int = DEFAULT_CONTROL_TIMEOUT_MS) -> None:
        drop_tracing_wrappers(self)   # each produce and fetch looks its partitions' channels up here
        self.broker_id = broker_id
        self._control_timeout_s = control_timeout_ms / 1000
        self.metadata = ClusterMetadata()
        self.auto_create_topics = auto_create_topics
        self._coordinator = coordinator
        self._channels: dict[TopicPartition, Channel] = {}
        self._follower_channels: dict[TopicPartition, Channel] = {}
        self.starting = StartingLeaders()   # led here, replica not running yet: requests wait
        self._fetchers = ReplicaFetcherManager(broker_id)
        self._log = Prefixed(log, f"[Frontend broker={broker_id}]")
        self._producer_ids = ProducerIdSource(ProducerIdManager(broker_id, remember_ms=producer_id_memory_ms),
                                              claim=lambda: coordinator.claim_producer_id_block.remote())
        self._group_settings = group_settings or GroupSettings()
        self.groups = GroupCoordinator(broker_id, self._group_settings, storage=self)
        self._offsets_topic_configs = dict(offsets_topic_configs or {})
        txn_settings = txn_settings or TxnSettings()
        self._txn_storage = TxnStorage(self, txn_settings.write_timeout_ms)
        self.txns = TransactionCoordinator(broker_id, txn_settings, self._txn_storage,
                                           new_producer_id=self._new_producer_id)
        self.verifier = CoordinatorVerifier(self) if txn_settings.verification_enable else None
        self._dispatcher = RequestDispatcher(self, self.verifier or NO_VERIFICATION)
        self._server = KafkaServer(self._dispatcher, host=host, port=port, broker_id=broker_id,
                                   settings=socket_settings)

    async def start(self) -> int:
        """Bind the listener; returns the bound port (useful when asked for port 0)."""
        self.groups.start()
        self.txns.start()
        port = await self._server.start()
        self._log.info("serving Kafka clients on port %d", port)
        freeze_startup_objects()
        watch_long_collections(self._log)
        self._watchdog = LoopWatchdog(self._log)   # (a held loop answers no client: say where)
        self._watchdog.start(asyncio.get_running_loop())
        return port

    async def stop(self) -> None:
        if getattr(self, "_watchdog", None) is not None:
            self._watchdog.stop()
        self._fetchers.stop()
        await self._server.stop()
        await self.groups.stop()
        await self.txns.stop()
        self._txn_storage.close()
        if self.verifier is not None:
            self.verifier.close()

    def pid(self) -> int:
        return os.getpid()

    def connections(self) -> dict:
        """The listener's open connections and request memory (for status and tests)."""
        memory = self._server.memory
        return {"connections": self._server.connection_count, "request_bytes": memory.total,
                "request_bytes_peak": memory.peak, "waiting_for_memory": memory.waiting,
                "queued_max_request_bytes": memory.limit_bytes}

    # -- pushed by the broker's coordinator -----------------------------------------
    def update_leaders(self, leaders: dict[TopicPartition, tuple[Any, str]],
                       dormant_leaders: dict[TopicPartition, ClosedLog | None] | None = None) -> None:
        """LeaderAndIsr's part: the local leaders change now, the metadata later (UpdateMetadata)."""
        self._channels = self._reuse_channels(self._channels, leaders, dormant_leaders)
        self.starting.changed()
        self._lead_offsets_partitions()

    def update_metadata(self, metadata: ClusterMetadata, leaders: dict[TopicPartition, tuple[Any, str]],
                        followers: dict[TopicPartition, tuple[Any, str]] | None = None,
                        starting: frozenset[TopicPartition] = frozenset(),
                        dormant_leaders: dict[TopicPartition, ClosedLog | None] | None = None,
                        dormant_followers: dict[TopicPartition, ClosedLog | None] | None = None) -> None:
        """Swap in a new metadata snapshot, the local leaders and the local followers: each a
        (replica actor, data socket path). Followers are fetched for from their leaders.
        `starting`: partitions the metadata says this broker leads whose replica does not run yet.
        `dormant_*`: replicas without a process, served from their closed logs (None: closing)."""
        self._channels = self._reuse_channels(self._channels, leaders, dormant_leaders)
        self._follower_channels = self._reuse_channels(self._follower_channels, followers or {}, dormant_followers,
                                                        leaders=False)
        self.metadata = metadata
        self.starting.update(starting)
        self._lead_offsets_partitions()
        self._fetchers.update(metadata, self._follower_channels)

    def update_replicas(self, changed: frozenset[TopicPartition], leaders: dict[TopicPartition, tuple[Any, str]],
                        followers: dict[TopicPartition, tuple[Any, str]],
                        dormant_leaders: dict[TopicPartition, ClosedLog | None],
                        dormant_followers: dict[TopicPartition, ClosedLog | None]) -> None:
        """`update_metadata` for the replicas of `changed` alone (a wake or a rest), the metadata
        and the other partitions' replicas as they are: a burst of wakes costs each one its own
        partition, not all of the broker's."""
        self._channels = self._reuse_channels(self._channels, leaders, dormant_leaders, only=changed)
        before = self._follower_channels
        self._follower_channels = self._reuse_channels(before, followers, dormant_followers, only=changed,
                                                        leaders=False)
        self._lead_offsets_partitions()
        if any(before.get(tp) is not self._follower_channels.get(tp) for tp in changed):
            self._fetchers.update(self.metadata, self._follower_channels)

    def _lead_offsets_partitions(self) -> None:
        """The group coordinator owns the `__consumer_offsets` partitions led here, those whose
        replica still starts included: their groups answer COORDINATOR_LOAD_IN_PROGRESS
        (clients retry it in place) until loaded, not NOT_COORDINATOR, which FindCoordinator,
        naming this broker, would contradict."""
        self.groups.set_led_partitions({tp.partition for tp in (*self._channels, *self.starting)
                                        if tp.topic == OFFSETS_TOPIC})
        # The transaction coordinator likewise, each partition with its leader epoch (the coordinator epoch).
        if self.verifier is not None:
            self.verifier.keep_only(self._channels)
        led = {tp.partition for tp in (*self._channels, *self.starting) if tp.topic == TRANSACTION_STATE_TOPIC}
        self.txns.set_led_partitions({p: getattr(self.metadata.partition(TRANSACTION_STATE_TOPIC, p), "leader_epoch", 0)
                                      for p in led})

    def _reuse_channels(self, current: dict[TopicPartition, Channel], wanted: dict[TopicPartition, tuple[Any, str]],
                        dormant: dict[TopicPartition, ClosedLog | None] | None,
                        only: frozenset[TopicPartition] | None = None, *,
                        leaders: bool = True) -> dict[TopicPartition, Channel]:
        """Channels to the `wanted` replicas, keeping the open ones whose socket is unchanged, and
        to the `dormant` ones; closes the rest. A dormant channel whose replica runs again hands
        the calls it holds to the new channel. With `only`, just those partitions change (the
        others keep their channels), and `wanted` and `dormant` name no other. `leaders`: these are
        the partitions led here (a first write to a new one wakes its new siblings)."""
        channels: dict[TopicPartition, Channel] = {} if only is None else {
            tp: channel for tp, channel in current.items() if tp not in only}
        for tp, (actor, socket_path) in wanted.items():
            existing = current.get(tp)
            if isinstance(existing, ReplicaChannel) and existing.socket_path == socket_path:
                existing.forget_windows()   # (a LeaderAndIsr may have changed what its windows assume)
                channels[tp] = existing
            else:
                channels[tp] = ReplicaChannel(actor, socket_path)
        for tp, closed in (dormant or {}).items():
            existing = current.get(tp)
            if isinstance(existing, DormantChannel) and not existing.ended:
                if closed is not None:
                    existing.rested(closed)
                channels[tp] = existing
            else:
                channels[tp] = DormantChannel(tp, closed, self._wake_replica, self._isr,
                                              self._wake_new_siblings if leaders else None)
        for tp, channel in current.items():
            replacement = channels.get(tp)
            if replacement is channel or (only is not None and tp not in only):
                continue
            if isinstance(channel, DormantChannel):
                channel.woke(replacement if isinstance(replacement, ReplicaChannel) else None)
            else:
                channel.close()
        return channels

    async def quiesce(self, tp: TopicPartition) -> bool:
        """The replica of `tp` goes dormant: requests for it wait from now on (a closing
        `DormantChannel` takes its place), and those under way are answered first (parked reads
        at once). False, with the replica's channel back in place, when that takes longer than
        QUIESCE_TIMEOUT_S; True when it is not served here."""
        for followers in (False, True):
            table = self._follower_channels if followers else self._channels
            channel = table.get(tp)
            if not isinstance(channel, ReplicaChannel):
                continue
            closing = DormantChannel(tp, None, self._wake_replica, self._isr,
                                     None if followers else self._wake_new_siblings)
            self._swap_channel(tp, closing, followers)
            if await channel.drain(QUIESCE_TIMEOUT_S):
                channel.close()
                return True
            self._log.info("%s stays live: requests to it were still under way after %.0f s", tp, QUIESCE_TIMEOUT_S)
            self._swap_channel(tp, channel, followers)
            closing.woke(channel)
            return False
        return True

    def _swap_channel(self, tp: TopicPartition, channel: Channel, follower: bool) -> None:
        if follower:
            self._follower_channels = {**self._follower_channels, tp: channel}
            self._fetchers.update(self.metadata, self._follower_channels)
        else:
            self._channels = {**self._channels, tp: channel}

    def _isr(self, tp: TopicPartition) -> tuple[int, ...]:
        info = self.metadata.partition(tp.topic, tp.partition)
        return () if info is None else tuple(info.isr)

    def _wake_replica(self, tp: TopicPartition) -> None:
        """A request for a dormant replica needs its process: ask the broker to start it."""
        asyncio.ensure_future(self._ask_to_wake(tp))

    def _wake_new_siblings(self, tp: TopicPartition) -> None:
        """The first write to `tp`, a partition led here and never written: wake the other
        never-written dormant partitions of its topic led here too (up to NEW_SIBLING_WAKES,
        those after `tp` first, as a round-robin partitioner goes), so that a producer spreading
        a new topic's records waits for their wakes at once, not one after another
        (dormant_channel.py)."""
        siblings = sorted((other for other, channel in self._channels.items()
                           if other.topic == tp.topic and other != tp and isinstance(channel, DormantChannel)
                           and channel.never_written),
                          key=lambda other: (other.partition <= tp.partition, other.partition))
        for other in siblings[:NEW_SIBLING_WAKES]:
            self._channels[other].wake_now()

    async def _ask_to_wake(self, tp: TopicPartition) -> None:
        timed_out = False
        try:
            await self._ask_coordinator("wake_replica", tp, wait_ms=WAKE_WAIT_MS)
        except CoordinatorCallError as e:
            timed_out = e.code is ErrorCode.REQUEST_TIMED_OUT
        for table in (self._channels, self._follower_channels):
            channel = table.get(tp)
            if isinstance(channel, DormantChannel) and not channel.ended and not channel.pending:
                if timed_out:
                    channel.wake_timed_out()   # (a wake queued behind others: its callers wait on, bounded)
                else:
                    channel.wake_failed()   # (not woken, and no publication said why: its callers retry)

    # -- BrokerServices --------------------------------------------------------------
    def channel(self, tp: TopicPartition) -> Channel | None:
        return self._channels.get(tp)

    async def _ask_coordinator(self, method: str, *args: Any, wait_ms: int = 0) -> Any:
        """`method` of the broker's coordinator, bounded by `wait_ms` (what the request itself
        waits for there) plus the control timeout. Raises CoordinatorCallError (REQUEST_TIMED_OUT
        when the bound passes, else UNKNOWN_SERVER_ERROR), never Ray's or ZooKeeper's exceptions:
        every handler can answer it with an error code."""
        try:
            return await asyncio.wait_for(getattr(self._coordinator, method).remote(*args),
                                          wait_ms / 1000 + self._control_timeout_s)
        except asyncio.TimeoutError:
            self._log.warning("the broker's coordinator did not answer %s in time", method)
            raise CoordinatorCallError(f"{method} timed out", ErrorCode.REQUEST_TIMED_OUT) from None
        except Exception as e:  # noqa: BLE001 - a dead actor, or an error raised by its method
            self._log.warning("the broker's coordinator failed %s: %r", method, e)
            raise CoordinatorCallError(f"{method} failed: {type(e).__name__}") from e

    async def elect_leaders(self, election_type: int,
                            partitions: list[tuple[str, int]] | None) -> dict[tuple[str, int], ErrorCode] | ErrorCode:
        """ElectLeaders through the broker's coordinator: the outcome per partition, or one
        error for the whole request when the coordinator cannot be asked."""
        try:
            return await self._ask_coordinator("elect_leaders", election_type, partitions)
        except CoordinatorCallError as e:
            return e.code

    async def create_topics(self, specs: list[TopicSpec], validate_only: bool, timeout_ms: int) -> list[TopicResult]:
        try:
            return await self._ask_coordinator("create_topics", specs, validate_only, timeout_ms,
                                               wait_ms=timeout_ms if timeout_ms > 0 else _ADMIN_WAIT_MS)
        except CoordinatorCallError as e:
            return [TopicResult(spec.name, e.code, str(e)) for spec in specs]

    async def delete_topics(self, names: list[str], timeout_ms: int) -> list[TopicResult]:
        try:
            return await self._ask_coordinator("delete_topics", names, timeout_ms,
                                               wait_ms=timeout_ms if timeout_ms > 0 else _ADMIN_WAIT_MS)
        except CoordinatorCallError as e:
            return [TopicResult(name, e.code, str(e)) for name in names]

    async def create_partitions(self, specs: list[PartitionsSpec], validate_only: bool,
                                timeout_ms: int) -> list[TopicResult]:
        try:
            return await self._ask_coordinator("create_partitions", specs, validate_only, timeout_ms,
                                               wait_ms=max(timeout_ms, 0))
        except CoordinatorCallError as e:
            return [TopicResult(spec.name, e.code, str(e)) for spec in specs]

    async def describe_configs(self, resource_type: int, name: str, keys: list[str] | None) -> list | None:
        """Raises CoordinatorCallError."""
        return await self._ask_coordinator("describe_configs", resource_type, name, keys)

    async def topic_overrides(self, topic: str) -> dict[str, str] | None:
        """Raises CoordinatorCallError."""
        return await self._ask_coordinator("topic_overrides", topic)

    async def alter_topic_configs(self, changes: dict[str, dict[str, str]],
                                  validate_only: bool) -> dict[str, tuple[ErrorCode, str | None]]:
        try:
            return await self._ask_coordinator("alter_topic_configs", changes, validate_only)
        except CoordinatorCallError as e:
            return {name: (e.code, str(e)) for name in changes}

    async def describe_log_dirs(self, partitions: set[TopicPartition] | None) -> list:
        """Raises CoordinatorCallError."""
        return await self._ask_coordinator("describe_log_dirs", partitions)

    async def alter_replica_log_dirs(self, moves: dict[TopicPartition, str]) -> dict[TopicPartition, ErrorCode]:
        """Raises CoordinatorCallError."""
        return await self._ask_coordinator("alter_replica_log_dirs", moves)

    async def init_producer_id(self, producer_id: int, producer_epoch: int) -> tuple[ErrorCode, int, int]:
        """(error, id, epoch) for an idempotent producer; ids come from blocks the broker's
        coordinator claims in ZooKeeper. When none can be claimed the answer is retriable."""
        answer = await self._producer_ids.init_producer(producer_id, producer_epoch)
        if answer is None:
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, -1, -1
        return ErrorCode.NONE, answer.producer_id, answer.producer_epoch

    async def _new_producer_id(self) -> int | None:
        """A fresh producer id for a transactional id (None when no id block can be claimed)."""
        answer = await self._producer_ids.init_producer(-1, -1)
        return None if answer is None else answer.producer_id

    async def ensure_txn_topic(self) -> None:
        """Create `__transaction_state` on first use, as Kafka does (see `ensure_offsets_topic`)."""
        settings = self.txns.settings
        spec = TopicSpec(TRANSACTION_STATE_TOPIC, settings.partitions, settings.replication_factor,
                         configs=settings.topic_configs())
        results = await self.create_topics([spec], False, 30000)
        if results[0].error not in (ErrorCode.NONE, ErrorCode.TOPIC_ALREADY_EXISTS):
            self._log.warning("could not create %s: %s %s", TRANSACTION_STATE_TOPIC, results[0].error.name,
                              results[0].message)

    async def ensure_offsets_topic(self) -> None:
        """Create `__consumer_offsets` on first use, as Kafka does (a race with another broker
        creating it is harmless: TOPIC_ALREADY_EXISTS). When the broker's coordinator is
        gone (stopping, or restarting) the topic stays missing and FindCoordinator answers
        COORDINATOR_NOT_AVAILABLE, which clients retry."""
        settings = self.groups.settings
        spec = TopicSpec(OFFSETS_TOPIC, settings.partitions, settings.replication_factor,
                         configs=dict(self._offsets_topic_configs))
        results = await self.create_topics([spec], False, 30000)
        if results[0].error not in (ErrorCode.NONE, ErrorCode.TOPIC_ALREADY_EXISTS):
            self._log.warning("could not create %s: %s %s", OFFSETS_TOPIC, results[0].error.name, results[0].message)

    # -- OffsetsStorage: __consumer_offsets through the local leader replicas ---------------
    async def _offsets_channel(self, partition: int, wait_s: float | None) -> Channel | None:
        """The local leader of an offsets partition, waiting up to `wait_s` (None: as long as it
        starts) for one whose replica still starts."""
        tp = TopicPartition(OFFSETS_TOPIC, partition)
        return self.channel(tp) or await self.starting.wait(tp, self.channel, wait_s)   # (_channels is replaced)

    async def append(self, partition: int, batch: bytes) -> ErrorCode:
        channel = await self._offsets_channel(partition, STARTING_WAIT_MS / 1000)
        if channel is None:
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        # Kafka writes group metadata and commits with acks=all, bounded by offsets.commit.timeout.ms;
        # a resting replica's wake may take that long too (a failed group metadata write makes
        # the group rebalance again, so it is not given up on at half, as a client's produce is).
        timeout_ms = self._group_settings.commit_timeout_ms
        try:
            return (await channel.append(batch, -1, timeout_ms, wake_wait_ms=timeout_ms)).error
        except Exception as e:  # noqa: BLE001 - the replica is gone: this broker cannot write there now
            self._log.warning("appending to %s-%d failed: %r", OFFSETS_TOPIC, partition, e)
            return ErrorCode.NOT_LEADER_OR_FOLLOWER

    def warm(self, partition: int) -> bool:
        """A group of this offsets partition is about to write (a member looks for its
        coordinator or joins): wake its replica now if it rests, so the write finds it running.
        False while it rests (or wakes)."""
        channel = self.channel(TopicPartition(OFFSETS_TOPIC, partition))
        if isinstance(channel, DormantChannel):
            channel.wake_now()
            return False
        return True

    async def read(self, partition: int) -> AsyncIterator[bytes]:
        # The group coordinator's load: it waits for a starting replica however long it takes
        # (a burst of starts under load can take longer than any bound a client request has);
        # the load is cancelled if the partition stops being led here.
        channel = await self._offsets_channel(partition, None)
        if channel is None:
            raise RuntimeError(f"{OFFSETS_TOPIC}-{partition} is not led here")
        async for data in read_to_log_end(channel, f"{OFFSETS_TOPIC}-{partition}"):
            yield data
