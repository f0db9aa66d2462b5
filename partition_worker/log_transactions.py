"""Transactions in one partition log: batches applied to the producer state as they are
written, each segment's aborted-transaction index, the last stable offset, and the aborted
transactions a read_committed fetch reports (KIP-98; Kafka 3.9's `UnifiedLog.append`,
`LogSegment.updateTxnIndex`, `LocalLog.collectAbortedTransactions`).

`PartitionLog` owns one and hands it every batch it writes, copies or replays
(`on_written`): data batches update the producer state (opening a transaction when
transactional), an end-transaction marker closes its producer's transaction and, for an abort,
appends (producer id, first offset, marker offset, LSO) to the `.txnindex` of the segment the
marker is in. Replaying from a producer snapshot first cuts every index at the snapshot's
offset (`truncate_indexes_to`), so the entries of the replayed markers are written again,
once: that is how the indexes are rebuilt on recovery, and after a truncation.

The LSO needs the high watermark, which the replica knows and the log does not:
`last_stable_offset(high_watermark)` is the earliest first offset of a transaction still open,
or completed with its marker at or above the high watermark, else the high watermark.

Not safe for concurrent use: the owning replica serialises calls.
"""
from __future__ import annotations

from bisect import bisect_right
from pathlib import Path
from typing import Iterable

from rafka.partition_worker.control_records import EndTransactionMarker, marker_of_batch
from rafka.partition_worker.producer_state import CompletedTxn, ProducerStateManager
from rafka.partition_worker.record_batch import BatchHeader
from rafka.partition_worker.txn_index import (
    AbortedTxn,
    TransactionIndex,
    collect_aborted_txns,
    txn_index_file_name,
)


class LogTransactions:
    """The transaction side of one `PartitionLog`: its producer state and `.txnindex` files."""

    def __init__(self, directory: Path, producer_state: ProducerStateManager) -> None:
        self.directory = Path(directory)
        self.producer_state = producer_state
        self._indexes: dict[int, TransactionIndex] = {}   # segment base offset -> its index

    # -- segments ------------------------------------------------------------------------
    def open_indexes(self, bases: Iterable[int]) -> None:
        """Open the `.txnindex` of each segment (those that have one); forget any other."""
        self._indexes = {}
        for base in bases:
            path = self.directory / txn_index_file_name(base)
            if path.exists():
                self._indexes[base] = TransactionIndex(base, path)

    def _index(self, base: int) -> TransactionIndex:
        index = self._indexes.get(base)
        if index is None:
            index = self._indexes[base] = TransactionIndex(base, self.directory / txn_index_file_name(base))
        return index

    def retain(self, bases: Iterable[int]) -> None:
        """Forget the indexes of segments no longer in the log (their files went with them)."""
        keep = set(bases)
        for base in [b for b in self._indexes if b not in keep]:
            del self._indexes[base]

    def truncate_indexes_to(self, offset: int) -> None:
        """Drop every index entry whose marker is at or above `offset`."""
        for index in self._indexes.values():
            if index.last_offset is not None and index.last_offset >= offset:
                index.truncate_to(offset)

    def flush(self) -> None:
        for index in self._indexes.values():
            index.flush()

    # -- writing ---------------------------------------------------------------------------
    def check_marker(self, producer_id: int, producer_epoch: int, marker: EndTransactionMarker) -> None:
        """A coordinator's marker, before it is written: raises INVALID_PRODUCER_EPOCH or
        TRANSACTION_COORDINATOR_FENCED (`ProducerStateManager.check_marker`)."""
        self.producer_state.check_marker(producer_id, producer_epoch, marker.coordinator_epoch)

    def on_written(self, buf: bytes | bytearray | memoryview, header: BatchHeader,
                   segment_base: int) -> CompletedTxn | None:
        """Apply a batch just written at `header.base_offset` into the segment starting at
        `segment_base` (`buf` holds it at `header.position`). Returns the transaction a marker
        closed, if any. Batches without a producer id change nothing."""
        if not header.has_producer_id:
            return None
        state = self.producer_state
        if not header.is_control:
            state.update(header, header.base_offset)
            return None
        marker = marker_of_batch(buf, header)
        if marker is None:
            return None
        completed = state.update_marker(header.producer_id, header.producer_epoch, marker,
                                        header.base_offset, header.max_timestamp)
        if completed is not None:
            if completed.is_aborted:
                # fsynced at once: aborts are rare, and a replay from a producer snapshot above
                # this marker (written at the next roll) would not index it again.
                self._index(segment_base).append(AbortedTxn(
                    completed.producer_id, completed.first_offset, completed.last_offset,
                    state.last_stable_offset(completed)), fsync=True)
            state.complete_txn(completed)
        return completed

    # -- reading -----------------------------------------------------------------------------
    def last_stable_offset(self, high_watermark: int) -> int:
        """The LSO: the first offset of the earliest transaction not yet decided, or decided
        with its marker at or above `high_watermark`; the high watermark when there is none."""
        self.producer_state.on_high_watermark_updated(high_watermark)
        first = self.producer_state.first_unstable_offset()
        return high_watermark if first is None else min(first, high_watermark)

    def has_aborts_from(self, base_offset: int) -> bool:
        """Whether the segment starting at `base_offset` or a later one indexes an aborted
        transaction (a read_committed read of those segments may have to report one)."""
        return any(base >= base_offset and index.entries for base, index in self._indexes.items())

    def aborted_txns(self, bases: tuple[int, ...], fetch_offset: int, upper_bound_offset: int) -> list[AbortedTxn]:
        """The aborted transactions overlapping [fetch_offset, upper_bound_offset) of the log
        whose segments start at `bases`, for a read_committed fetch."""
        if upper_bound_offset <= fetch_offset or not self._indexes:
            return []
        start = max(0, bisect_right(bases, fetch_offset) - 1)
        segments = [(base, self._indexes[base].entries) for base in bases[start:] if base in self._indexes]
        if not segments:
            return []
        return collect_aborted_txns(segments, fetch_offset, upper_bound_offset)


__all__ = ["LogTransactions"]
