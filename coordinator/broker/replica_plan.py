"""The broker's replica reconciler, its decisions: what each local replica should be, and
the next step toward that (pure: no Ray, no ZooKeeper, time passed in).

The controller's metadata says, per partition, which brokers hold a replica and who leads
(Kafka's LeaderAndIsr). From it this module derives the *target* of every replica this
broker hosts, and compares it with the *book*: what the reconciler knows of each replica it
has tried to run. Each partition moves independently, one step per tick:

- no entry, or an entry that failed and whose retry is due: START (open the log, then BECOME);
- running with a role other than its target: BECOME;
- an entry no target names any more (the topic was deleted): STOP and delete its files;
- dormant (its process closed after `replica.dormant.after.ms` without writes) with a role
  other than its target: BECOME too, which the reconciler takes without a process when it
  can (`dormant_takes`) and otherwise by starting the replica again.

A failed start is kept in the book with its reason and retried with exponential backoff
(`RETRY_BACKOFF_MS` doubling up to `RETRY_BACKOFF_MAX_MS`), so one partition that cannot open
(a corrupt directory, a topic id that does not match) never holds up the others.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field, replace
from typing import Any, Collection, Mapping

from rafka.common.metadata import ClusterMetadata
from rafka.common.types import TopicPartition
from rafka.partition_worker.replica_state import LeaderAndIsr

RETRY_BACKOFF_MS = 1_000
RETRY_BACKOFF_MAX_MS = 30_000


class Phase(enum.Enum):
    RUNNING = "running"   # the replica's log is open and its data socket listens
    FAILED = "failed"     # the last start failed; retried at `retry_at_ms`
    DORMANT = "dormant"   # closed cleanly while idle; its broker serves reads from its files


@dataclass(frozen=True)
class ReplicaEntry:
    """What the reconciler knows of one local replica."""

    phase: Phase
    role: LeaderAndIsr | None = None   # the last order the replica accepted
    failures: int = 0                  # consecutive failed starts
    retry_at_ms: float = 0.0
    error: str | None = None


@dataclass(frozen=True)
class Plan:
    """One tick's steps; each partition appears in at most one list."""

    start: tuple[TopicPartition, ...] = ()
    become: tuple[TopicPartition, ...] = ()
    stop: tuple[TopicPartition, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.start or self.become or self.stop)


def replica_targets(metadata: ClusterMetadata, broker_id: int) -> dict[TopicPartition, LeaderAndIsr]:
    """The role of every replica `broker_id` hosts, from the controller's metadata."""
    targets: dict[TopicPartition, LeaderAndIsr] = {}
    for topic in metadata.topics.values():
        for p in topic.partitions.values():
            if broker_id in p.replicas:
                targets[TopicPartition(topic.name, p.partition)] = LeaderAndIsr(
                    p.leader, p.leader_epoch, p.isr, p.replicas, metadata.controller_epoch, p.partition_epoch)
    return targets


def plan(targets: Mapping[TopicPartition, LeaderAndIsr], book: Mapping[TopicPartition, ReplicaEntry],
         now_ms: float) -> Plan:
    """The steps that move the book toward the targets at `now_ms`."""
    start, become = [], []
    for tp, target in sorted(targets.items()):
        entry = book.get(tp)
        if entry is None or (entry.phase is Phase.FAILED and entry.retry_at_ms <= now_ms):
            start.append(tp)
        elif entry.phase in (Phase.RUNNING, Phase.DORMANT) and entry.role != target:
            become.append(tp)
    stop = [tp for tp in sorted(book) if tp not in targets]
    return Plan(tuple(start), tuple(become), tuple(stop))


def started(role: LeaderAndIsr | None) -> ReplicaEntry:
    """The entry of a replica whose log opened; `role` is None if it refused its order."""
    return ReplicaEntry(Phase.RUNNING, role=role)


def dormant(role: LeaderAndIsr | None) -> ReplicaEntry:
    """The entry of a replica that closed while idle (or was never started: a new partition)."""
    return ReplicaEntry(Phase.DORMANT, role=role)


def dormant_takes(role: LeaderAndIsr | None, target: LeaderAndIsr, broker_id: int) -> bool:
    """Whether a dormant replica can take `target` without its process: a leader's new epoch
    is one line in its leader-epoch-checkpoint, and an ISR change or an offline partition
    changes nothing in its log. A follower under a new leader or epoch may have to truncate
    first (OffsetForLeaderEpoch), which takes the replica."""
    if target.leader in (broker_id, -1):
        return True
    return role is not None and (role.leader, role.leader_epoch) == (target.leader, target.leader_epoch)


def failed(previous: ReplicaEntry | None, error: str, now_ms: float) -> ReplicaEntry:
    """The entry after a failed start: the failure counted and the next try scheduled."""
    failures = (previous.failures if previous is not None and previous.phase is Phase.FAILED else 0) + 1
    return ReplicaEntry(Phase.FAILED, failures=failures, error=error,
                        retry_at_ms=now_ms + retry_backoff_ms(failures))


def accepted(entry: ReplicaEntry, role: LeaderAndIsr) -> ReplicaEntry:
    """The entry after the replica accepted a new order."""
    return replace(entry, role=role)


def retry_backoff_ms(failures: int) -> int:
    """Exponential backoff after `failures` consecutive failed starts (1 s, 2 s, 4 s ... 30 s)."""
    return min(RETRY_BACKOFF_MS << max(0, failures - 1), RETRY_BACKOFF_MAX_MS)


def next_retry_ms(book: Mapping[TopicPartition, ReplicaEntry]) -> float | None:
    """When the earliest failed replica is due again; None when nothing waits for a retry."""
    due = [e.retry_at_ms for e in book.values() if e.phase is Phase.FAILED]
    return min(due) if due else None


@dataclass(frozen=True)
class OfflineReplica:
    """A local replica that is not running, as `status` and the front end's metadata show it."""

    tp: TopicPartition
    error: str
    failures: int
    retry_in_ms: float = field(default=0.0)


def offline(book: Mapping[TopicPartition, ReplicaEntry], now_ms: float) -> list[OfflineReplica]:
    """The failed replicas of `book`, by partition."""
    return [OfflineReplica(tp, e.error or "", e.failures, max(0.0, e.retry_at_ms - now_ms))
            for tp, e in sorted((tp, e) for tp, e in book.items() if e.phase is Phase.FAILED)]


@dataclass(frozen=True)
class LocalReplicas:
    """A broker's replicas as its front end is told of them, by role: running leaders and
    followers (the launcher's handles), dormant ones (their `ClosedLog`; None while still
    closing) and the partitions whose replica failed (`offline` for the details)."""

    leaders: dict[TopicPartition, Any]
    followers: dict[TopicPartition, Any]
    dormant_leaders: dict[TopicPartition, Any]
    dormant_followers: dict[TopicPartition, Any]
    offline: frozenset[TopicPartition]


def local_replicas(book: Mapping[TopicPartition, ReplicaEntry], running: Mapping[TopicPartition, Any],
                   dormant: Mapping[TopicPartition, Any], closing: Collection[TopicPartition],
                   broker_id: int) -> LocalReplicas:
    """One pass over `book` (a broker publishes after every wake and rest, with 1,000s of
    partitions: one pass, not one per table). A replica with no order yet, or whose partition
    has no leader, is in neither role; one closing to rest is both running and dormant (None)."""
    leaders: dict[TopicPartition, Any] = {}
    followers: dict[TopicPartition, Any] = {}
    dormant_leaders: dict[TopicPartition, Any] = {}
    dormant_followers: dict[TopicPartition, Any] = {}
    failed: list[TopicPartition] = []
    for tp, e in book.items():
        if e.phase is Phase.FAILED:
            failed.append(tp)
        if e.role is None or e.role.leader == -1:
            continue
        live, rest = (leaders, dormant_leaders) if e.role.leader == broker_id else (followers, dormant_followers)
        if (replica := running.get(tp)) is not None:
            live[tp] = replica
        if tp in dormant:
            rest[tp] = dormant[tp]
        elif tp in closing:
            rest[tp] = None
    return LocalReplicas(leaders, followers, dormant_leaders, dormant_followers, frozenset(failed))


def with_offline_replicas(metadata: ClusterMetadata, broker_id: int, offline_tps: set[TopicPartition]
                          ) -> ClusterMetadata:
    """The metadata a broker's front end serves: the controller's, with this broker listed
    among the `offline_replicas` of each partition whose local replica failed (Kafka lists a
    replica on an offline log dir the same way). A partition it leads whose replica is offline
    shows no leader (LEADER_NOT_AVAILABLE, which clients retry) until the replica runs again,
    rather than a leader that would answer NOT_LEADER_OR_FOLLOWER. A replica that is only
    starting keeps its leadership: the front end holds produce for it (starting_leaders.py)."""
    if not offline_tps:
        return metadata
    topics = dict(metadata.topics)
    for tp in offline_tps:
        info = topics.get(tp.topic)
        if info is None or tp.partition not in info.partitions:
            continue
        partitions = dict(info.partitions)
        p = partitions[tp.partition]
        if broker_id not in p.offline_replicas:
            p = replace(p, offline_replicas=p.offline_replicas + (broker_id,))
        if p.leader == broker_id:
            p = replace(p, leader=-1)
        partitions[tp.partition] = p
        topics[tp.topic] = replace(info, partitions=partitions)
    return replace(metadata, topics=topics)


def changed_partitions(before: tuple[Mapping, ...], after: tuple[Mapping, ...]) -> frozenset[TopicPartition]:
    """The partitions whose entry differs between two snapshots of a broker's replica tables
    (added, removed or changed in any of them): what a publication of wakes and rests sends.
    Identity is checked first: a dataclass's generated __eq__ compares every field even of the
    same object."""
    return frozenset(tp for old, new in zip(before, after) for tp in old.keys() | new.keys()
                     if (o := old.get(tp, _ABSENT)) is not (n := new.get(tp, _ABSENT)) and o != n)


_ABSENT = object()
