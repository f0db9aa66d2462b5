"""`MetadataPublisher`: what a broker's front end is told, as numbered snapshots.

The front end serves the controller's metadata with this broker's replicas beside it:
running leaders and followers (their actors and data sockets), dormant ones, leaders still
starting (requests for them wait) and replicas that failed (shown offline). Every change —
new metadata from the controller, a replica started, woken, rested or lost — asks for a
publication by number (`request`); one runner publishes the newest state whenever the
number asked for is ahead of the one done, so a burst of changes costs a few publications,
callers wait for the number they asked for (`publish`), and nothing reaches the front end
out of order. A publication whose replicas changed while it was sent asks for the next one;
one that failed (a front end hung or gone) leaves the front end's state unknown, so the
next is whole, after a short backoff.

The decision of what to send is pure (`next_publication`): the whole metadata when it, the
starting leaders or the offline replicas changed, else only the partitions whose replicas
changed (a wake or a rest touches one of thousands), else nothing.
"""
from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from typing import Any, Callable, Protocol

from rafka.common.metadata import ClusterMetadata
from rafka.common.types import TopicPartition
from rafka.coordinator.broker.replica_plan import LocalReplicas, changed_partitions, with_offline_replicas

RETRY_BACKOFF_S = 0.5       # after a failed publication, before the next (whole) one ...
RETRY_BACKOFF_MAX_S = 5.0   # ... doubling while they keep failing


@dataclass(frozen=True)
class Snapshot:
    """What one publication told the front end: its number, the metadata, the leaders still
    starting, the failed replicas and the replicas' view (`replica_view`)."""

    version: int
    metadata: ClusterMetadata
    starting: frozenset[TopicPartition]
    offline: frozenset[TopicPartition]
    replicas: tuple


@dataclass(frozen=True)
class Publication:
    """The next publication: `whole`, or only `changed` partitions (none: nothing to send)."""

    snapshot: Snapshot
    whole: bool
    changed: frozenset[TopicPartition] = frozenset()

    @property
    def sends(self) -> bool:
        return self.whole or bool(self.changed)


def replica_view(local: LocalReplicas) -> tuple:
    """The replicas as a publication compares them: (data socket, pid) of running leaders and
    followers, and the dormant leaders' and followers' closed logs."""
    return ({tp: (r.socket, r.pid) for tp, r in local.leaders.items()},
            {tp: (r.socket, r.pid) for tp, r in local.followers.items()},
            local.dormant_leaders, local.dormant_followers)


def led_here(metadata: ClusterMetadata, broker_id: int) -> frozenset[TopicPartition]:
    """The partitions `metadata` says `broker_id` leads."""
    return frozenset(TopicPartition(name, info.partition) for name, topic in metadata.topics.items()
                     for info in topic.partitions.values() if info.leader == broker_id)


def starting_leaders(led: frozenset[TopicPartition], local: LocalReplicas) -> frozenset[TopicPartition]:
    """Partitions led here whose replica neither runs, nor is dormant, nor failed: it starts."""
    return frozenset(led - local.leaders.keys() - local.dormant_leaders.keys() - local.offline)


def next_publication(last: Snapshot | None, version: int, metadata: ClusterMetadata, local: LocalReplicas,
                     led: frozenset[TopicPartition]) -> Publication:
    """What to send the front end, which holds `last` (None: unknown, after a failure or at first)."""
    snapshot = Snapshot(version, metadata, starting_leaders(led, local), local.offline, replica_view(local))
    if (last is None or metadata is not last.metadata or snapshot.starting != last.starting
            or snapshot.offline != last.offline):
        return Publication(snapshot, whole=True)
    return Publication(snapshot, whole=False, changed=changed_partitions(last.replicas, snapshot.replicas))


class FrontEnd(Protocol):
    """The front end's calls a publication makes (`FrontendClient`, bounded in time)."""

    async def update_metadata(self, metadata: ClusterMetadata, leaders: dict, followers: dict,
                              starting: frozenset[TopicPartition], dormant_leaders: dict,
                              dormant_followers: dict) -> None: ...

    async def update_replicas(self, changed: frozenset[TopicPartition], leaders: dict, followers: dict,
                              dormant_leaders: dict, dormant_followers: dict) -> None: ...

    async def update_leaders(self, leaders: dict, dormant_leaders: dict) -> None: ...


def as_sent(replicas: dict[TopicPartition, Any]) -> dict[TopicPartition, tuple[Any, str]]:
    """Running replicas as the front end is told of them: (handle, data socket), each handle as
    pickled once at the replica's start (`SentHandle`: the front end unpickles only those it
    has no channel to yet)."""
    return {tp: (r.sent, r.socket) for tp, r in replicas.items()}


def _only(table: dict[TopicPartition, Any], partitions: frozenset[TopicPartition]) -> dict[TopicPartition, Any]:
    return {tp: table[tp] for tp in partitions if tp in table}


class MetadataPublisher:
    """Publishes one broker's metadata and replicas to its front end (see the module's docstring)."""

    def __init__(self, broker_id: int, local_replicas: Callable[[], LocalReplicas], frontend: FrontEnd,
                 log: logging.Logger | logging.LoggerAdapter, after_publication: Callable[[], None] = lambda: None,
                 retry_backoff_s: float = RETRY_BACKOFF_S) -> None:
        self._id = broker_id
        self._local = local_replicas
        self._frontend = frontend
        self._log = log
        self._after = after_publication
        self._backoff_s = retry_backoff_s
        self.newest = ClusterMetadata()      # the newest heard from the controller, published next
        self.metadata = ClusterMetadata()    # the last published
        self.settled: ClusterMetadata | None = None   # the last the brokers have acted on
        self.published = 0                   # publications done so far
        self._last: Snapshot | None = None   # what the front end holds (None: unknown)
        self._led: tuple[ClusterMetadata | None, frozenset[TopicPartition]] = (None, frozenset())
        self._requested = 0
        self._done = 0
        self._waiting: list[tuple[int, asyncio.Future]] = []
        self._runner: asyncio.Task | None = None
        self._changed = asyncio.Event()
        self._stopped = False

    # -- asking for publications --------------------------------------------------------
    def request(self) -> int:
        """Ask for a publication of the newest state; its number."""
        self._requested += 1
        if not self._stopped and (self._runner is None or self._runner.done()):
            self._runner = asyncio.ensure_future(self._run())
        return self._requested

    async def publish(self, metadata: ClusterMetadata | None = None) -> None:
        """Publish `metadata` (None: the newest held) with the replicas as they are now, and return
        once the front end has it; raises as the front end's call did if that publication failed."""
        if metadata is not None:
            self.newest = metadata
        version = self.request()
        waiter = asyncio.get_running_loop().create_future()
        self._waiting.append((version, waiter))
        await waiter

    def leader_ready(self, tp: TopicPartition) -> None:
        """A leader replica runs (or is dormant) now: if the front end holds its requests as
        starting, publish, so that partitions are served one by one as they start."""
        if self._last is not None and tp in self._last.starting:
            self.request()

    def outdated_since(self, published: int) -> bool:
        """Whether a LeaderAndIsr applied since publication `published` needs a publication: one
        came meanwhile (it may have missed replicas started since), or leaders started or stopped
        starting since the last."""
        return (self.published != published or self._last is None
                or self._last.starting != starting_leaders(self._led_here(self.metadata), self._local()))

    async def serve_leaders(self) -> None:
        """Hand the front end this broker's running and dormant leaders at once, before metadata
        that shows their leadership is published (a LeaderAndIsr that changed no metadata)."""
        local = self._local()
        await self._frontend.update_leaders(as_sent(local.leaders), local.dormant_leaders)

    # -- the runner ----------------------------------------------------------------------
    async def _run(self) -> None:
        failures = 0
        while self._done < self._requested and not self._stopped:
            target = self._requested
            error: BaseException | None = None
            try:
                await self._publish_once(target)
            except Exception as e:  # noqa: BLE001 - logged by the front end's client; retried below
                error = e
                self._last = None   # what the front end holds is unknown: the next one is whole
            self._done = target
            self._resolve(target, error)
            if error is not None:
                failures += 1
                await asyncio.sleep(min(self._backoff_s * 2 ** (failures - 1), RETRY_BACKOFF_MAX_S))
                self._requested += 1
                continue
            failures = 0
            self._after()
            if self._last is not None and self._last.replicas != replica_view(self._local()):
                self._requested += 1   # a replica changed while this one was sent

    async def _publish_once(self, version: int) -> None:
        metadata, local = self.newest, self._local()
        publication = next_publication(self._last, version, metadata, local, self._led_here(metadata))
        leaders, followers = as_sent(local.leaders), as_sent(local.followers)
        if publication.whole:
            await self._frontend.update_metadata(with_offline_replicas(metadata, self._id, set(local.offline)),
                                                 leaders, followers, publication.snapshot.starting,
                                                 local.dormant_leaders, local.dormant_followers)
        elif publication.changed:
            changed = publication.changed
            await self._frontend.update_replicas(changed, _only(leaders, changed), _only(followers, changed),
                                                 _only(local.dormant_leaders, changed),
                                                 _only(local.dormant_followers, changed))
        self._last = publication.snapshot
        self.metadata = metadata
        self.published += 1
        self._notify()

    def _resolve(self, version: int, error: BaseException | None) -> None:
        due = [waiter for v, waiter in self._waiting if v <= version]
        self._waiting = [(v, waiter) for v, waiter in self._waiting if v > version]
        for waiter in due:
            if waiter.done():
                continue
            if error is None:
                waiter.set_result(None)
            else:
                waiter.set_exception(error)

    def _led_here(self, metadata: ClusterMetadata) -> frozenset[TopicPartition]:
        """`led_here`, kept for the newest metadata (every publication asks; metadata changes rarely)."""
        if self._led[0] is not metadata:
            self._led = (metadata, led_here(metadata, self._id))
        return self._led[1]

    # -- waiting for metadata ------------------------------------------------------------
    def settle(self, metadata: ClusterMetadata) -> None:
        """The brokers have acted on `metadata`'s LeaderAndIsr."""
        self.settled = metadata
        self._notify()

    def _notify(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    async def await_metadata(self, condition: Callable[[ClusterMetadata], bool], timeout_ms: int, *,
                             settled: bool = False) -> bool:
        """Whether the published metadata (with `settled`: the settled metadata) meets
        `condition` within `timeout_ms`."""
        def met() -> bool:
            metadata = self.settled if settled else self.metadata
            return metadata is not None and condition(metadata)   # (none settled yet: not met)

        deadline = time.monotonic() + timeout_ms / 1000
        while not met():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            try:
                await asyncio.wait_for(self._changed.wait(), remaining)
            except asyncio.TimeoutError:
                return met()
        return True

    def stop(self) -> None:
        """No more publications; callers still waiting are cancelled."""
        self._stopped = True
        if self._runner is not None:
            self._runner.cancel()
        for _, waiter in self._waiting:
            waiter.cancel()
        self._waiting.clear()
