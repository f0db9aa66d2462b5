"""Offsets committed inside transactions (TxnOffsetCommit, KIP-98/KIP-447), held until the
transaction ends: a COMMIT marker on the group's `__consumer_offsets` partition makes them
the group's committed offsets, an ABORT drops them (Kafka's `pendingTransactionalOffsetCommits`
and `onTransactionCompleted`).

Also the sequence numbers of the transactional batches the coordinator writes for a producer
to one partition: the leader checks them as a client's (consecutive from 0 for each epoch).

Pure, no I/O; not thread-safe (the group coordinator's event loop serialises calls).
"""
from __future__ import annotations

from collections.abc import Mapping

from rafka.coordinator.group import offsets_records as records
from rafka.coordinator.group.group_messages import CommittedOffset
from rafka.partition_worker.record_batch import iter_batches

OffsetKey = tuple[str, str, int]   # (group, topic, partition)


class PendingTxnOffsets:
    """Per producer id: the offsets its open transaction committed, by partition of
    `__consumer_offsets` (a transaction may commit for groups of several partitions)."""

    def __init__(self) -> None:
        self._pending: dict[int, dict[int, dict[OffsetKey, CommittedOffset]]] = {}
        self._sequences: dict[tuple[int, int], tuple[int, int]] = {}   # (partition, pid) -> (epoch, next seq)

    def add(self, partition: int, producer_id: int, group: str,
            offsets: Mapping[tuple[str, int], CommittedOffset]) -> None:
        """Offsets whose transactional batch is now in the log; the latest per key wins."""
        held = self._pending.setdefault(producer_id, {}).setdefault(partition, {})
        for (topic, index), offset in offsets.items():
            held[(group, topic, index)] = offset

    def load(self, partition: int, open_transactions: Mapping[int, list[tuple[bytes, bytes | None]]]) -> int:
        """The commits of transactions still open in a partition's log when it was loaded
        (`offsets_topic.replay`'s `open_transactions`): held again, so that the marker a
        transaction coordinator sends later commits or drops them. Returns how many; records
        that are not offset commits are skipped."""
        count = 0
        for producer_id, pairs in open_transactions.items():
            for key, value in pairs:
                try:
                    decoded = records.decode_key(key)
                    if not isinstance(decoded, records.OffsetKey) or value is None:
                        continue
                    offset = records.decode_offset_value(value)
                except records.OffsetsRecordError:
                    continue
                self.add(partition, producer_id, decoded.group, {(decoded.topic, decoded.partition): offset})
                count += 1
        return count

    def complete(self, partition: int, producer_id: int, commit: bool) -> dict[str, dict[tuple[str, int], CommittedOffset]]:
        """The marker of `producer_id`'s transaction is written on `partition`: its held offsets
        there, by group, to commit (empty after an abort, or when none are held)."""
        held = self._pending.get(producer_id, {}).pop(partition, {})
        if not self._pending.get(producer_id, True):
            del self._pending[producer_id]
        if not commit:
            return {}
        by_group: dict[str, dict[tuple[str, int], CommittedOffset]] = {}
        for (group, topic, index), offset in held.items():
            by_group.setdefault(group, {})[(topic, index)] = offset
        return by_group

    def has_pending(self, group: str, topic: str, partition: int) -> bool:
        """Whether an open transaction holds an offset of `group` for the partition (an
        OffsetFetch that requires stable offsets is answered UNSTABLE_OFFSET_COMMIT, KIP-447)."""
        key = (group, topic, partition)
        return any(key in held for partitions in self._pending.values() for held in partitions.values())

    def unload_partition(self, partition: int) -> None:
        """The partition moved away: forget what is held there and its sequences."""
        for producer_id in list(self._pending):
            self._pending[producer_id].pop(partition, None)
            if not self._pending[producer_id]:
                del self._pending[producer_id]
        for key in [k for k in self._sequences if k[0] == partition]:
            del self._sequences[key]

    def next_sequence(self, partition: int, producer_id: int, producer_epoch: int) -> int:
        """The base sequence of the next batch for this producer and epoch on `partition`."""
        epoch, seq = self._sequences.get((partition, producer_id), (producer_epoch, 0))
        return seq if epoch == producer_epoch else 0

    def seen_batches(self, partition: int, batches: bytes | bytearray | memoryview) -> None:
        """A load read these batches of the partition: its transactional batches set where
        each producer's sequence goes on (a coordinator that takes over mid-transaction)."""
        mv = batches if isinstance(batches, memoryview) else memoryview(batches)
        for header in iter_batches(mv):
            if header.is_transactional and not header.is_control and header.base_sequence >= 0:
                self._sequences[(partition, header.producer_id)] = (
                    header.producer_epoch, (header.base_sequence + header.last_offset_delta + 1) & 0x7FFFFFFF)

    def written(self, partition: int, producer_id: int, producer_epoch: int, records: int) -> None:
        """A batch of `records` records with the sequence `next_sequence` gave is in the log."""
        base = self.next_sequence(partition, producer_id, producer_epoch)
        self._sequences[(partition, producer_id)] = (producer_epoch, (base + records) & 0x7FFFFFFF)
