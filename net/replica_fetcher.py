"""Followers' fetching, in the follower broker's front end (Kafka's ReplicaFetcherManager and
ReplicaFetcherThread).

One `ReplicaFetcher` per leader broker fetches every partition this broker follows from
that leader with one Kafka Fetch request at a time, carrying this broker's id as replica
id, over the leader's own listener: the leader's front end serves it from its replica's
files with sendfile, the same path as a consumer's (`RequestDispatcher._fetch`). Each
partition's batches go, unchanged, to the local follower replica over its data socket
(FOLLOWER_APPEND); its new log end is the next fetch offset, so each fetch acknowledges
everything before it. Strictly one fetch at a time per leader: offsets never race.

Before fetching under a new leader epoch, a partition first asks the leader where the
follower's log stops agreeing (OffsetForLeaderEpoch with the follower's latest epoch) and
truncates there. A fetch answered OFFSET_OUT_OF_RANGE restarts the log at the leader's log
start (DeleteRecords or retention moved past it) or truncates it to the leader's log end.
A dormant follower (no process: `dormant_channel.py`) is fetched for all the same, from its
log end: an empty answer keeps it dormant, batches wake it. Its position carries over when it
goes dormant or wakes under the same leader epoch (its log end is the same); one that would
have to truncate first (a new epoch, a log out of the leader's range) is woken for that.
A partition the leader fences (FENCED_LEADER_EPOCH: this broker follows an older epoch) waits
for the next metadata, as does one whose local log dir failed (found before its first fetch
under each epoch, so the leader never counts it caught up); one the leader cannot serve yet
(not its leader yet, its replica not up, an epoch it has not heard of) backs off
replica.fetch.backoff.ms and tries again, as Kafka's fetcher does, so a transient answer never
stops a follower for good. Async; runs on the front end's event loop.
"""
from __future__ import annotations

import asyncio
import itertools
import logging
import struct
from dataclasses import dataclass
from typing import Any

from rafka.common.errors import ErrorCode
from rafka.common.logging_util import Prefixed
from rafka.common.metadata import ClusterMetadata
from rafka.common.types import TopicPartition
from rafka.net.dormant_channel import DormantChannel
from rafka.net.protocol import apis, codec

log = logging.getLogger(__name__)

FETCH, OFFSET_FOR_LEADER_EPOCH = apis.FETCH.key, apis.OFFSET_FOR_LEADER_EPOCH.key
FETCH_VERSION, EPOCH_VERSION = 12, 4
# Kafka's replica fetcher defaults (replica.fetch.*).
FETCH_MAX_WAIT_MS = 500
FETCH_MIN_BYTES = 1
FETCH_MAX_BYTES = 1_048_576            # replica.fetch.max.bytes (per partition)
FETCH_RESPONSE_MAX_BYTES = 10_485_760  # replica.fetch.response.max.bytes
FETCH_BACKOFF_S = 1.0                  # replica.fetch.backoff.ms
_SIZE = struct.Struct(">i")
_FENCED = (ErrorCode.FENCED_LEADER_EPOCH,)
_RETRIABLE = (ErrorCode.UNKNOWN_LEADER_EPOCH, ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
              ErrorCode.LEADER_NOT_AVAILABLE, ErrorCode.KAFKA_STORAGE_ERROR, ErrorCode.REQUEST_TIMED_OUT)


@dataclass
class FollowedPartition:
    """A partition this broker follows: the leader epoch it follows under, its local replica's
    channel and actor, where to fetch next, and whether it must first truncate."""

    tp: TopicPartition
    leader_epoch: int
    channel: Any            # net.data_plane.ReplicaChannel of the local follower replica
    fetch_offset: int = -1  # -1: ask the replica
    truncating: bool = True
    fenced: bool = False
    retry_at: float = 0.0   # loop time before which it is not fetched (backing off after an error)

    def back_off(self) -> None:
        self.retry_at = asyncio.get_running_loop().time() + FETCH_BACKOFF_S


class LeaderConnection:
    """One Kafka-protocol connection to a leader broker; one request in flight at a time."""

    def __init__(self, host: str, port: int, client_id: str) -> None:
        self._host, self._port, self._client_id = host, port, client_id
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._ids = itertools.count()

    async def request(self, api_key: int, version: int, body: dict, timeout_s: float) -> dict:
        if self._writer is None or self._writer.is_closing():
            self._reader, self._writer = await asyncio.wait_for(
                asyncio.open_connection(self._host, self._port), timeout_s)
        correlation_id = next(self._ids) & 0x7FFFFFFF
        self._writer.write(codec.encode_request(api_key, version, correlation_id, self._client_id, body))
        await self._writer.drain()
        (size,) = _SIZE.unpack(await asyncio.wait_for(self._reader.readexactly(4), timeout_s))
        frame = await asyncio.wait_for(self._reader.readexactly(size), timeout_s)
        got, answer = codec.decode_response(api_key, version, frame)
        if got != correlation_id:
            raise ConnectionError(f"response to correlation id {got}, expected {correlation_id}")
        return answer

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None


class ReplicaFetcher:
    """Fetches every partition this broker follows from one leader broker."""

    def __init__(self, broker_id: int, leader_id: int, host: str, port: int) -> None:
        self.broker_id, self.leader_id = broker_id, leader_id
        self.address = (host, port)
        self.partitions: dict[TopicPartition, FollowedPartition] = {}
        self._connection = LeaderConnection(host, port, f"broker-{broker_id}-fetcher-{leader_id}")
        self._log = Prefixed(log, f"[ReplicaFetcher broker={broker_id} leader={leader_id}]")
        self._changed = asyncio.Event()
        self._task = asyncio.ensure_future(self._run())

    def assign(self, partitions: dict[TopicPartition, FollowedPartition]) -> None:
        """The partitions to follow from this leader now; those with a new leader epoch (or new
        here) truncate first, the others keep their place."""
        merged = {}
        for tp, new in partitions.items():
            old = self.partitions.get(tp)
            if old is not None and old.leader_epoch == new.leader_epoch and old.channel is new.channel:
                merged[tp] = old
            elif (old is not None and old.leader_epoch == new.leader_epoch and not old.truncating
                  and _dormant(old.channel) != _dormant(new.channel)):
                # Gone dormant or woken: the log end did not move (a restart after a crash may
                # have). The same entry goes on, so an append under way moves it on when done.
                old.channel = new.channel
                merged[tp] = old
            else:
                merged[tp] = new
        self.partitions = merged
        self._changed.set()

    def stop(self) -> None:
        self._task.cancel()
        self._connection.close()

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            waiting = [p for p in self.partitions.values() if not p.fenced]
            now = loop.time()
            active = [p for p in waiting if p.retry_at <= now]
            if not active:
                self._changed.clear()
                backoff = min((p.retry_at for p in waiting), default=None)
                try:
                    await asyncio.wait_for(self._changed.wait(), None if backoff is None else backoff - now)
                except asyncio.TimeoutError:
                    pass
                continue
            try:
                truncating = [p for p in active if p.truncating]
                if truncating:
                    await self._truncate(truncating)
                fetching = [p for p in active if not p.truncating and not p.fenced]
                if fetching:
                    await self._fetch(fetching)
            except asyncio.CancelledError:
                raise
            except Exception as e:  # noqa: BLE001 - the leader is unreachable: back off and retry
                self._log.warning("fetch from %s:%d failed: %r", *self.address, e)
                self._connection.close()
                await asyncio.sleep(FETCH_BACKOFF_S)

    async def _truncate(self, partitions: list[FollowedPartition]) -> None:
        """OffsetForLeaderEpoch for the follower's latest epoch, then truncate to where the
        leader's log and this one stop agreeing (KIP-101/279). A dormant follower with an empty
        log has nothing to truncate; any other is woken for it."""
        live = []
        for p in partitions:
            if not _dormant(p.channel):
                live.append(p)
            elif p.channel.closed is not None and p.channel.closed.log_end_offset == 0:
                p.fetch_offset, p.truncating = 0, False
            else:
                p.channel.wake_now()
                p.back_off()
        ends = await asyncio.gather(*[p.channel.actor.status.remote() for p in live])
        partitions, statuses = [], []
        for p, status in zip(live, ends):
            if status.log_offline:
                # Not even one fetch: the leader would count it caught up, and wait for it.
                self._stop_offline(p)
            else:
                partitions.append(p)
                statuses.append(status)
        if not partitions:
            return
        latest = await asyncio.gather(*[p.channel.actor.latest_leader_epoch.remote() for p in partitions])
        by_topic: dict[str, list] = {}
        for p, epoch in zip(partitions, latest):
            by_topic.setdefault(p.tp.topic, []).append(
                {"partition": p.tp.partition, "current_leader_epoch": p.leader_epoch, "leader_epoch": epoch})
        answer = await self._connection.request(OFFSET_FOR_LEADER_EPOCH, EPOCH_VERSION, {
            "replica_id": self.broker_id, "topics": [{"topic": t, "partitions": ps} for t, ps in by_topic.items()]},
            timeout_s=30)
        results = {TopicPartition(t["topic"], r["partition"]): r for t in answer["topics"] for r in t["partitions"]}
        for p, epoch, status in zip(partitions, latest, statuses):
            r = results.get(p.tp)
            error = ErrorCode(r["error_code"]) if r else ErrorCode.UNKNOWN_SERVER_ERROR
            if error in _FENCED:
                p.fenced = True
                continue
            if error is not ErrorCode.NONE:
                p.back_off()
                continue
            end = status.log_end_offset
            if epoch < 0 or r["end_offset"] < 0:
                target = status.high_watermark   # no epochs to compare: keep only what was committed
            else:
                target = r["end_offset"]
            if target < end:
                end = await p.channel.actor.truncate_to.remote(target)
                self._log.info("%s truncated to %d under leader epoch %d", p.tp, end, p.leader_epoch)
            p.fetch_offset, p.truncating = end, False

    async def _fetch(self, partitions: list[FollowedPartition]) -> None:
        by_topic: dict[str, list] = {}
        for p in partitions:
            by_topic.setdefault(p.tp.topic, []).append({
                "partition": p.tp.partition, "current_leader_epoch": p.leader_epoch, "fetch_offset": p.fetch_offset,
                "last_fetched_epoch": -1, "log_start_offset": -1, "partition_max_bytes": FETCH_MAX_BYTES})
        answer = await self._connection.request(FETCH, FETCH_VERSION, {
            "replica_id": self.broker_id, "max_wait_ms": FETCH_MAX_WAIT_MS, "min_bytes": FETCH_MIN_BYTES,
            "max_bytes": FETCH_RESPONSE_MAX_BYTES, "isolation_level": 0, "session_id": 0, "session_epoch": -1,
            "rack_id": "", "forgotten_topics_data": [],
            "topics": [{"topic": t, "partitions": ps} for t, ps in by_topic.items()]},
            timeout_s=FETCH_MAX_WAIT_MS / 1000 + 30)
        wanted = {p.tp: p for p in partitions}
        appends = []
        for topic in answer["responses"]:
            for r in topic["partitions"]:
                p = wanted.get(TopicPartition(topic["topic"], r["partition_index"]))
                if p is not None:
                    appends.append(self._take(p, r))
        await asyncio.gather(*appends)

    async def _take(self, p: FollowedPartition, r: dict) -> None:
        """Hand one partition's answer to its local follower replica."""
        error = ErrorCode(r["error_code"])
        if error is ErrorCode.OFFSET_OUT_OF_RANGE:
            await self._out_of_range(p, r)
            return
        if error in _FENCED:
            p.fenced = True
            self._log.info("%s: %s from the leader; waiting for new metadata", p.tp, error.name)
            return
        if error is not ErrorCode.NONE:
            if error not in _RETRIABLE:
                self._log.warning("%s: %s from the leader; retrying", p.tp, error.name)
            p.back_off()
            return
        result = await p.channel.follower_append(r["records"] or b"", r["high_watermark"], r["log_start_offset"])
        if result.error is ErrorCode.NONE:
            p.fetch_offset = result.log_end_offset
        elif result.error is ErrorCode.KAFKA_STORAGE_ERROR:
            self._stop_offline(p)
        else:
            self._log.warning("%s: the follower refused batches at %d: %s", p.tp, p.fetch_offset, result.error.name)
            p.truncating = True

    def _stop_offline(self, p: FollowedPartition) -> None:
        """The follower's log dir failed (Kafka removes the fetchers of offline partitions):
        fetch for it again only when new metadata comes, by which time the controller has
        heard of it; a follower still offline then stops again before its first fetch."""
        self._log.warning("%s: the follower's log dir is offline; not fetching until new metadata", p.tp)
        p.fenced = True

    async def _out_of_range(self, p: FollowedPartition, r: dict) -> None:
        """The leader's log does not hold `fetch_offset`: restart at its log start when this
        log is behind it, else truncate to the leader's end (Kafka's handleOutOfRangeError)."""
        leader_start, leader_end = r["log_start_offset"], r["high_watermark"]
        if _dormant(p.channel):
            p.channel.wake_now()
            p.truncating = True
            p.back_off()
            return
        if 0 <= leader_start and p.fetch_offset < leader_start:
            p.fetch_offset = await p.channel.actor.truncate_fully_and_start_at.remote(leader_start)
        else:
            p.fetch_offset = await p.channel.actor.truncate_to.remote(max(leader_end, 0))
        self._log.info("%s: out of the leader's range; fetching from %d", p.tp, p.fetch_offset)


def _dormant(channel: Any) -> bool:
    """Whether a follower's channel stands for a dormant replica (no actor to call)."""
    return isinstance(channel, DormantChannel)


class ReplicaFetcherManager:
    """The front end's fetchers: one per leader broker this broker follows partitions of."""

    def __init__(self, broker_id: int) -> None:
        self._broker_id = broker_id
        self._fetchers: dict[int, ReplicaFetcher] = {}

    def update(self, metadata: ClusterMetadata, followers: dict[TopicPartition, Any]) -> None:
        """Follow `followers` (tp -> the local follower replica's channel) from their leaders."""
        wanted: dict[int, dict[TopicPartition, FollowedPartition]] = {}
        for tp, channel in followers.items():
            info = metadata.partition(tp.topic, tp.partition)
            if info is None or info.leader < 0 or info.leader == self._broker_id or info.leader not in metadata.brokers:
                continue
            wanted.setdefault(info.leader, {})[tp] = FollowedPartition(tp, info.leader_epoch, channel)
        for leader_id in list(self._fetchers):
            fetcher = self._fetchers[leader_id]
            broker = metadata.brokers.get(leader_id)
            if leader_id not in wanted or broker is None or fetcher.address != (broker.host, broker.port):
                fetcher.stop()
                del self._fetchers[leader_id]
        for leader_id, partitions in wanted.items():
            fetcher = self._fetchers.get(leader_id)
            if fetcher is None:
                broker = metadata.brokers[leader_id]
                fetcher = self._fetchers[leader_id] = ReplicaFetcher(self._broker_id, leader_id, broker.host,
                                                                     broker.port)
            fetcher.assign(partitions)

    def stop(self) -> None:
        for fetcher in self._fetchers.values():
            fetcher.stop()
        self._fetchers.clear()
