"""`OffsetStore`: the committed offsets and stored group metadata of the `__consumer_offsets`
partitions one broker leads, in memory. Pure: no I/O, no clock (times are arguments)."""
from __future__ import annotations

import struct
from collections.abc import Callable, Collection, Iterable, Mapping

from rafka.coordinator.group import offsets_records as rec
from rafka.coordinator.group import offsets_topic
from rafka.coordinator.group.group_messages import (
    NO_EXPIRE_TIMESTAMP,
    CommittedOffset,
    GroupSnapshot,
)

TopicPartitionKey = tuple[str, int]
Tombstone = tuple[bytes, None]

CONSUMER_PROTOCOL_TYPE = "consumer"   # ConsumerProtocol.PROTOCOL_TYPE


class OffsetStore:
    """What the log of this broker's `__consumer_offsets` partitions says: per group, the
    committed offset of each topic-partition and the latest `GroupSnapshot`.

    The state is a function of the records: `apply` replays one (loading a partition),
    `commit`/`store_group` record what the host has just written, and the removing methods
    (`delete_group`, `delete_offsets`, `expire`) change memory at once and return the
    tombstones for the host to write. As in Kafka, losing those writes is harmless for
    expiry (the next run or the next leader expires again). A group tombstone removes the
    group's metadata only; each offset has its own tombstone.

    A group is known while it has offsets or metadata. Not safe for concurrent use: the
    coordinator actor serialises calls.
    """

    def __init__(self) -> None:
        self._offsets: dict[str, dict[TopicPartitionKey, CommittedOffset]] = {}
        self._groups: dict[str, GroupSnapshot] = {}

    # -- replay and updates ----------------------------------------------------------------

    def apply(self, key: bytes, value: bytes | None) -> bool:
        """Replay one record of `__consumer_offsets` in log order (the latest per key wins).

        Returns False, changing nothing, for a key of an unknown version (a record of Kafka's
        new coordinator; Kafka's loader skips these with a warning). Raises OffsetsRecordError
        for a truncated key or a value it cannot read.
        """
        try:
            decoded = rec.decode_key(key)
        except rec.UnknownRecordVersionError:
            return False
        if isinstance(decoded, rec.GroupKey):
            if value is None:
                self._groups.pop(decoded.group, None)
            else:
                self._groups[decoded.group] = rec.decode_group_value(decoded.group, value)
        elif value is None:
            self._remove_offsets(decoded.group, [(decoded.topic, decoded.partition)])
        else:
            self._offsets.setdefault(decoded.group, {})[(decoded.topic, decoded.partition)] = (
                rec.decode_offset_value(value))
        return True

    def commit(self, group: str, offsets: Mapping[TopicPartitionKey, CommittedOffset]) -> None:
        """Record offsets whose records (`records_for_commit`) are now in the log."""
        if offsets:
            self._offsets.setdefault(group, {}).update(offsets)

    def store_group(self, snapshot: GroupSnapshot) -> None:
        """Record a group's metadata whose record (`records_for_group`) is now in the log."""
        self._groups[snapshot.group_id] = snapshot

    # -- reads -------------------------------------------------------------------------------

    def fetch(self, group: str, partitions: Iterable[TopicPartitionKey] | None = None,
              ) -> dict[TopicPartitionKey, CommittedOffset]:
        """The group's committed offsets: all of them for `partitions=None`, else those of the
        asked partitions that have one (a partition without a commit is absent; OffsetFetch
        answers -1 for it). An unknown group gives {}."""
        offsets = self._offsets.get(group, {})
        if partitions is None:
            return dict(offsets)
        return {tp: offsets[tp] for tp in partitions if tp in offsets}

    def groups(self) -> set[str]:
        """Groups with offsets or stored metadata."""
        return set(self._offsets) | set(self._groups)

    def group_snapshot(self, group: str) -> GroupSnapshot | None:
        """The group's latest stored metadata; None when it has none (never rebalanced, a
        simple consumer's group, or deleted)."""
        return self._groups.get(group)

    def has_offsets(self, group: str) -> bool:
        return bool(self._offsets.get(group))

    # -- removal ------------------------------------------------------------------------------

    def delete_group(self, group: str) -> list[Tombstone]:
        """Forget a group (DeleteGroups) and return its tombstones: one per committed offset,
        then the group record's if its metadata is stored. The caller checks first that the
        group may be deleted (Empty or Dead, else NON_EMPTY_GROUP). An unknown group gives [].

        Kafka skips the group tombstone for generation 0 groups because it never stored
        them; here we write one exactly when a group record is stored, whatever its generation.
        """
        offsets = self._offsets.pop(group, {})
        tombstones = offsets_topic.offset_tombstones(group, offsets)
        if self._groups.pop(group, None) is not None:
            tombstones.append(offsets_topic.group_tombstone(group))
        return tombstones

    def delete_offsets(self, group: str, partitions: Iterable[TopicPartitionKey], *,
                       group_is_empty: bool = False) -> list[Tombstone]:
        """Forget some committed offsets (OffsetDelete) and return tombstones for those that
        existed. The caller has refused partitions of topics the group subscribes to
        (GROUP_SUBSCRIBED_TO_TOPIC). As Kafka's `cleanupGroupMetadata` does, an Empty group
        (`group_is_empty`) left without offsets dies: its group record's tombstone follows."""
        removed = self._remove_offsets(group, partitions)
        tombstones = offsets_topic.offset_tombstones(group, removed)
        if group_is_empty:
            tombstones += self._maybe_dead(group)
        return tombstones

    def expire(self, now_ms: int, retention_ms: int, is_empty: Callable[[str], bool], *,
               is_stable: Callable[[str], bool] | None = None,
               has_pending_commit: Callable[[str, TopicPartitionKey], bool] | None = None,
               ) -> list[Tombstone]:
        """Expire offsets as Kafka 3.9's `GroupMetadata.removeExpiredOffsets` does, drop the
        Empty groups left without offsets, and return the tombstones (offsets first, then a
        group record's tombstone per group that died).

        The live state comes from the host: `is_empty(group)` is True when the group has no
        members (Empty, or unknown to its state machine, as a simple consumer's group is),
        `is_stable(group)` when it is Stable, and `has_pending_commit(group, tp)` when a commit
        of that offset is being written (Kafka's pendingOffsetCommits: such an offset is never
        expired, else the tombstone could land after the commit). An offset expires when:

        - it has an explicit expire timestamp (a v1 record): `now_ms >= expire_timestamp`,
          whatever the rule below measures from;
        - otherwise `now_ms - base >= retention_ms`, where `base` is, by group:
          - no protocol type (no stored metadata, or an empty protocol type: a group used
            only for offsets) and no members: the offset's commit timestamp;
          - a protocol type and Empty: the time the group became Empty (the stored
            `current_state_timestamp_ms`, which is why the host must store the group when
            it empties), or the commit timestamp when the record has none (v0/v1);
          - "consumer" protocol and Stable (`is_stable` given): the commit timestamp, and
            only for topics no member subscribes to (read from the stored subscriptions,
            the v0 prefix of ConsumerProtocolSubscription, like Kafka's
            `computeSubscribedTopics`; unreadable subscriptions expire nothing);
          - otherwise (rebalancing, other protocols, members but no stored metadata yet):
            nothing expires.

        An Empty group that has no offsets left dies: its metadata is dropped and, when a
        group record is stored, its tombstone returned (the host then drops the group from
        its state machine). A group whose offsets all expired without stored metadata just
        disappears from `groups()`.
        """
        tombstones: list[Tombstone] = []
        dead: list[Tombstone] = []
        for group in sorted(self.groups()):
            empty = is_empty(group)
            expired = self._expired(group, now_ms, retention_ms, empty, is_stable, has_pending_commit)
            tombstones += offsets_topic.offset_tombstones(group, self._remove_offsets(group, expired))
            if empty:
                dead += self._maybe_dead(group)
        return tombstones + dead

    def unload_partition(self, partition: int, partitions_count: int) -> list[str]:
        """Forget the groups of one `__consumer_offsets` partition (leadership moved away);
        returns them sorted."""
        gone = sorted(g for g in self.groups() if offsets_topic.partition_for(g, partitions_count) == partition)
        for group in gone:
            self._offsets.pop(group, None)
            self._groups.pop(group, None)
        return gone

    # -- internals -----------------------------------------------------------------------------

    def _remove_offsets(self, group: str, partitions: Iterable[TopicPartitionKey]) -> list[TopicPartitionKey]:
        offsets = self._offsets.get(group)
        if offsets is None:
            return []
        removed = [tp for tp in partitions if offsets.pop(tp, None) is not None]
        if not offsets:
            del self._offsets[group]
        return removed

    def _maybe_dead(self, group: str) -> list[Tombstone]:
        """An Empty group without offsets dies (Kafka: `group.is(Empty) && !group.hasOffsets`)."""
        if self.has_offsets(group) or self._groups.pop(group, None) is None:
            return []
        return [offsets_topic.group_tombstone(group)]

    def _expired(self, group: str, now_ms: int, retention_ms: int, empty: bool,
                 is_stable: Callable[[str], bool] | None,
                 has_pending_commit: Callable[[str, TopicPartitionKey], bool] | None,
                 ) -> list[TopicPartitionKey]:
        offsets = self._offsets.get(group)
        if not offsets:
            return []
        snapshot = self._groups.get(group)
        protocol_type = snapshot.protocol_type if snapshot is not None and snapshot.protocol_type else None
        subscribed: Collection[str] = ()
        base_of: Callable[[CommittedOffset], int]
        if protocol_type is None:
            if not empty:
                return []   # members joining, first generation not stored yet: Kafka knows the type
            base_of = _commit_timestamp
        elif empty:
            empty_since = snapshot.current_state_timestamp_ms
            base_of = (_commit_timestamp if empty_since < 0 else (lambda _o: empty_since))
        elif (protocol_type == CONSUMER_PROTOCOL_TYPE and is_stable is not None and is_stable(group)
              and (topics := subscribed_topics(snapshot)) is not None):
            base_of, subscribed = _commit_timestamp, topics
        else:
            return []
        expired = []
        for tp, o in offsets.items():
            if tp[0] in subscribed or (has_pending_commit is not None and has_pending_commit(group, tp)):
                continue
            if o.expire_timestamp_ms != NO_EXPIRE_TIMESTAMP:
                gone = now_ms >= o.expire_timestamp_ms     # old per-commit retention (v1 records)
            else:
                gone = now_ms - base_of(o) >= retention_ms
            if gone:
                expired.append(tp)
        return expired


def _commit_timestamp(o: CommittedOffset) -> int:
    return o.commit_timestamp_ms


def subscribed_topics(snapshot: GroupSnapshot) -> set[str] | None:
    """The topics the members of a stored "consumer" group subscribe to, or None when Kafka's
    `computeSubscribedTopics` would not know them: not the consumer protocol, no members, no
    protocol chosen, or a subscription that does not parse. Each subscription is read as its
    version-0 prefix (int16 version >= 0, then an int32-counted array of int16-length
    topic names), which every ConsumerProtocolSubscription version starts with."""
    if snapshot.protocol_type != CONSUMER_PROTOCOL_TYPE or not snapshot.members or snapshot.protocol_name is None:
        return None
    topics: set[str] = set()
    for member in snapshot.members:
        parsed = _subscription_topics(member.subscription)
        if parsed is None:
            return None
        topics.update(parsed)
    return topics


def _subscription_topics(data: bytes) -> list[str] | None:
    try:
        version, count = struct.unpack_from(">hi", data, 0)
        if version < 0 or count < 0 or count > len(data):
            return None
        pos, topics = 6, []
        for _ in range(count):
            (n,) = struct.unpack_from(">h", data, pos)
            if n < 0 or pos + 2 + n > len(data):
                return None
            topics.append(data[pos + 2:pos + 2 + n].decode("utf-8"))
            pos += 2 + n
        return topics
    except (struct.error, UnicodeDecodeError):
        return None
