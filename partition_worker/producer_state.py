"""Idempotent-producer state of one partition log (KIP-98, KIP-360): the pure core.

Mirrors Apache Kafka 3.9's `ProducerStateManager`, `ProducerAppendInfo` and
`ProducerStateEntry` (storage module): data batches, and the transactions they open (KIP-98).
Batches a follower copies from its leader, and batches replayed from the log at load or after
a truncation (`truncate_and_reload`), go to `update` alone: no duplicate or sequence check
(Kafka's AppendOrigin.REPLICATION), the same bookkeeping.

Transactions. A transactional data batch of a producer with no open transaction opens one at
its first offset (`current_txn_first_offset`, an *ongoing* transaction). An end-transaction
marker (a control batch, `update_marker`) closes it and returns the `CompletedTxn`; the log
then records an abort in the segment's `.txnindex` with `last_stable_offset(completed)` and
calls `complete_txn(completed)`, as Kafka's `UnifiedLog.append` does. A completed transaction
stays *unreplicated* until the high watermark passes its marker (`on_high_watermark_updated`).
`first_unstable_offset` is the earliest first offset of an ongoing or unreplicated
transaction; the partition's LSO is the smaller of it and the high watermark. Open
transactions survive in snapshots (the entry's `current_txn_first_offset`) and are rebuilt at
load; a producer with an open transaction never expires.

The broker uses it in two steps around every write:

    check = state.check_append(header)      # before writing; may raise
    if check.is_duplicate:
        answer with (check.first_offset, check.last_offset), write nothing
    else:
        write the batch at first_offset, then state.update(header, first_offset)

Several batches of one producer in one request: call `check_append` and `update` batch by
batch, in order, because each check is made against the state the previous batch left
(Kafka accumulates them in one `ProducerAppendInfo`).

Rules (verified against Kafka's `ProducerAppendInfo.checkSequence`/`checkProducerEpoch` and
`UnifiedLog.analyzeAndValidateProducerState`):

- Batches with `producer_id == -1` are not tracked: always "append", `update` ignores them.
- Duplicate check comes first: a batch with the producer's *current* epoch whose
  (first_seq, last_seq) equals one of the last five cached batches is answered with that
  batch's original offsets and not appended.
- Epoch below the current one: `InvalidProducerEpochError` (INVALID_PRODUCER_EPOCH; Kafka 2.7+
  returns this instead of PRODUCER_FENCED for produce).
- New (higher) epoch of a known producer must start at sequence 0, else
  `OutOfOrderSequenceError` (OUT_OF_ORDER_SEQUENCE_NUMBER).
- Same epoch: first_seq must be last_seq + 1, or 0 after Int32 max (`incrementSequence`
  wrap), else OUT_OF_ORDER_SEQUENCE_NUMBER. A retry of a batch older than the five cached
  ones fails this test too, so it gets OUT_OF_ORDER_SEQUENCE_NUMBER, not
  DUPLICATE_SEQUENCE_NUMBER (the 3.9 broker never returns that code for produce).
- A non-transactional batch of a producer whose transaction is open: `InvalidTxnStateError`
  (INVALID_TXN_STATE), after the epoch and sequence checks, as Kafka's `appendDataBatch`.
- A marker with an epoch below the producer's: INVALID_PRODUCER_EPOCH; with a coordinator
  epoch below the producer's last marker's: `TransactionCoordinatorFencedError`
  (TRANSACTION_COORDINATOR_FENCED). Markers replayed or copied from the leader are not checked.
- Unknown producer id (no state, e.g. expired or its records deleted): *any* first sequence
  is accepted. Before KIP-360 (Kafka < 2.5) a non-zero first sequence there was refused with
  UNKNOWN_PRODUCER_ID; since KIP-360 the broker accepts it and the client recovers by itself.
  (Kafka 4.x additionally refuses a non-zero sequence for a transactions-v2 producer whose
  partition was just verified by the transaction coordinator; 3.9 has no transactions v2.)

Not safe for concurrent use: the owning actor serialises calls.
"""
from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple, Protocol

from rafka.common.errors import ErrorCode, KafkaError
from rafka.partition_worker import producer_snapshot as snapshots
from rafka.partition_worker.producer_entries import (
    INT32_MAX, NO_PRODUCER_EPOCH, NO_PRODUCER_ID, NO_SEQUENCE, NO_TIMESTAMP, NUM_BATCHES_TO_RETAIN, BatchMetadata,
    ProducerStateEntry, decrement_sequence, increment_sequence,
)
from rafka.partition_worker.producer_snapshot import (
    SNAPSHOT_SUFFIX, CorruptSnapshotError, list_snapshots, snapshot_file_name,
)

log = logging.getLogger(__name__)

DEFAULT_PRODUCER_ID_EXPIRATION_MS = 86_400_000  # producer.id.expiration.ms (KIP-854)


class OutOfOrderSequenceError(KafkaError):
    code = ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER


class InvalidProducerEpochError(KafkaError):
    code = ErrorCode.INVALID_PRODUCER_EPOCH


class InvalidTxnStateError(KafkaError):
    code = ErrorCode.INVALID_TXN_STATE


class TransactionCoordinatorFencedError(KafkaError):
    code = ErrorCode.TRANSACTION_COORDINATOR_FENCED


class HeaderLike(Protocol):
    """What the checks read from a batch; `record_batch.BatchHeader` fits."""

    producer_id: int
    producer_epoch: int
    base_sequence: int
    last_offset_delta: int
    max_timestamp: int
    is_transactional: bool


class MarkerLike(Protocol):
    """What `update_marker` reads from an end-transaction marker; `EndTransactionMarker` fits."""

    coordinator_epoch: int

    @property
    def is_abort(self) -> bool: ...


class CompletedTxn(NamedTuple):
    """A transaction a marker closed: its first offset in this partition, the marker's offset."""

    producer_id: int
    first_offset: int
    last_offset: int
    is_aborted: bool


@dataclass
class TxnMetadata:
    """An ongoing transaction (`last_offset` None) or one completed but not yet below the
    high watermark (`last_offset`: its marker's offset). Kafka's `TxnMetadata`."""

    producer_id: int
    first_offset: int
    last_offset: int | None = None


def _in_sequence(last_seq: int, next_seq: int) -> bool:
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == INT32_MAX)


@dataclass(frozen=True)
class AppendCheck:
    """Outcome of `check_append`: append the batch, or answer a duplicate with the offsets
    it was first written at."""

    is_duplicate: bool
    first_offset: int = -1
    last_offset: int = -1

    @staticmethod
    def duplicate(first_offset: int, last_offset: int) -> AppendCheck:
        return AppendCheck(True, first_offset, last_offset)


APPEND = AppendCheck(False)


class ProducerStateManager:
    """Producer id -> `ProducerStateEntry` for one partition log; its snapshots are
    `producer_snapshot.py`'s files (each producer's last five batches, in Kafka's format)."""

    def __init__(self, producer_id_expiration_ms: int = DEFAULT_PRODUCER_ID_EXPIRATION_MS) -> None:
        self.producer_id_expiration_ms = producer_id_expiration_ms
        self._producers: dict[int, ProducerStateEntry] = {}
        # first offset -> transaction; few at a time (one per producer at most), so the
        # earliest is found by min() rather than kept in a sorted map as Kafka's TreeMap.
        self._ongoing: dict[int, TxnMetadata] = {}
        self._unreplicated: dict[int, TxnMetadata] = {}

    # ----------------------------------------------------------------- queries
    @property
    def producers(self) -> dict[int, ProducerStateEntry]:
        """Live view of the active producers; callers must not modify it."""
        return self._producers

    def last_entry(self, producer_id: int) -> ProducerStateEntry | None:
        return self._producers.get(producer_id)

    @property
    def ongoing_transactions(self) -> list[TxnMetadata]:
        """Open transactions, earliest first offset first."""
        return [self._ongoing[k] for k in sorted(self._ongoing)]

    def first_undecided_offset(self) -> int | None:
        """First offset of the earliest open transaction (None: none is open)."""
        return min(self._ongoing, default=None)

    def first_unstable_offset(self) -> int | None:
        """First offset of the earliest transaction open or completed above the high
        watermark (None: none). The LSO is min(this, high watermark)."""
        return min(self._ongoing.keys() | self._unreplicated.keys(), default=None)

    def last_stable_offset(self, completed: CompletedTxn) -> int:
        """The LSO right after `completed`'s marker, before `complete_txn`: the first offset of
        the earliest open transaction of another producer, else the marker's offset + 1. It is
        what the `.txnindex` entry of an abort records."""
        others = [k for k, txn in self._ongoing.items() if txn.producer_id != completed.producer_id]
        return min(others) if others else completed.last_offset + 1

    def complete_txn(self, completed: CompletedTxn) -> None:
        """Move the transaction from ongoing to unreplicated (ValueError if it was not open)."""
        txn = self._ongoing.pop(completed.first_offset, None)
        if txn is None:
            raise ValueError(f"attempted to complete transaction {completed} which was not started")
        txn.last_offset = completed.last_offset
        self._unreplicated[completed.first_offset] = txn

    def on_high_watermark_updated(self, high_watermark: int) -> None:
        """Forget completed transactions whose marker is below the high watermark."""
        self._drop_unreplicated_below(high_watermark)

    def _drop_unreplicated_below(self, offset: int) -> None:
        done = [k for k, txn in self._unreplicated.items() if txn.last_offset is not None and txn.last_offset < offset]
        for k in done:
            del self._unreplicated[k]

    # ------------------------------------------------------------------ append
    def check_append(self, header: HeaderLike) -> AppendCheck:
        """Validate a client batch before it is written. Returns `APPEND` or a duplicate with
        original offsets; raises `InvalidProducerEpochError` or `OutOfOrderSequenceError`
        (rules in the module docstring). Changes nothing."""
        producer_id = header.producer_id
        if producer_id == NO_PRODUCER_ID:
            return APPEND
        epoch = header.producer_epoch
        first_seq = header.base_sequence
        last_seq = increment_sequence(first_seq, header.last_offset_delta)
        entry = self._producers.get(producer_id)
        if entry is None:
            return APPEND  # KIP-360: unknown producer, any sequence accepted
        duplicate = entry.find_duplicate(epoch, first_seq, last_seq)
        if duplicate is not None:
            return AppendCheck.duplicate(duplicate.first_offset, duplicate.last_offset)
        if epoch < entry.producer_epoch:
            raise InvalidProducerEpochError(
                f"Epoch of producer {producer_id} is {epoch}, which is smaller than the last "
                f"seen epoch {entry.producer_epoch}")
        if epoch != entry.producer_epoch:
            if first_seq != 0 and entry.producer_epoch != NO_PRODUCER_EPOCH:
                raise OutOfOrderSequenceError(
                    f"Invalid sequence number for new epoch of producer {producer_id}: {epoch} "
                    f"(request epoch), {first_seq} (seq. number), {entry.producer_epoch} "
                    f"(current producer epoch)")
        elif entry.producer_epoch != NO_PRODUCER_EPOCH and not _in_sequence(entry.last_seq, first_seq):
            raise OutOfOrderSequenceError(
                f"Out of order sequence number for producer {producer_id}: {first_seq} "
                f"(incoming seq. number), {entry.last_seq} (current end sequence number)")
        if entry.current_txn_first_offset is not None and not header.is_transactional:
            raise InvalidTxnStateError(
                f"Expected transactional write from producer {producer_id} (its transaction is open "
                f"since offset {entry.current_txn_first_offset})")
        return APPEND

    def check_marker(self, producer_id: int, producer_epoch: int, coordinator_epoch: int) -> None:
        """Validate an end-transaction marker from the coordinator before it is written:
        raises `InvalidProducerEpochError` for an epoch below the producer's and
        `TransactionCoordinatorFencedError` for a coordinator epoch below the last marker's.
        A marker for an unknown producer passes (Kafka writes it; it ends nothing)."""
        entry = self._producers.get(producer_id)
        if entry is None:
            return
        if producer_epoch < entry.producer_epoch:
            raise InvalidProducerEpochError(
                f"Epoch of producer {producer_id} is {producer_epoch}, which is smaller than the last "
                f"seen epoch {entry.producer_epoch}")
        if entry.coordinator_epoch > coordinator_epoch:
            raise TransactionCoordinatorFencedError(
                f"Invalid coordinator epoch for producer {producer_id}: {coordinator_epoch} (zombie), "
                f"{entry.coordinator_epoch} (current)")

    def update(self, header: HeaderLike, first_offset: int) -> None:
        """Record a batch just written at `first_offset` (its last offset is first_offset +
        last_offset_delta; its timestamp is max_timestamp). Keeps the last five batches of
        the current epoch. Batches without a producer id are ignored. Does not validate:
        call `check_append` first."""
        producer_id = header.producer_id
        if producer_id == NO_PRODUCER_ID:
            return
        first_seq = header.base_sequence
        batch = BatchMetadata(
            first_seq=first_seq,
            last_seq=increment_sequence(first_seq, header.last_offset_delta),
            first_offset=first_offset,
            last_offset=first_offset + header.last_offset_delta,
            timestamp=header.max_timestamp)
        entry = self._producers.get(producer_id)
        if entry is None:
            entry = self._producers[producer_id] = ProducerStateEntry(producer_id)
        entry.add_batch(header.producer_epoch, batch)
        if header.is_transactional and entry.current_txn_first_offset is None:
            entry.current_txn_first_offset = first_offset
            self._ongoing[first_offset] = TxnMetadata(producer_id, first_offset)

    def update_marker(self, producer_id: int, producer_epoch: int, marker: MarkerLike, offset: int,
                      timestamp: int) -> CompletedTxn | None:
        """Record an end-transaction marker written at `offset` (Kafka's `appendEndTxnMarker`
        without its checks: call `check_marker` first for a coordinator's marker). Returns the
        transaction it closes, None when the producer had none open. The caller then indexes an
        abort and calls `complete_txn`. A new epoch drops the producer's cached batches."""
        entry = self._producers.get(producer_id)
        if entry is None:
            entry = self._producers[producer_id] = ProducerStateEntry(producer_id)
        completed = None
        if entry.current_txn_first_offset is not None:
            completed = CompletedTxn(producer_id, entry.current_txn_first_offset, offset, marker.is_abort)
        if producer_epoch != entry.producer_epoch:
            entry.batches.clear()
            entry.producer_epoch = producer_epoch
        entry.current_txn_first_offset = None
        entry.coordinator_epoch = marker.coordinator_epoch
        entry.last_timestamp = timestamp
        return completed

    # ------------------------------------------------------ expiry, truncation
    def _is_expired(self, entry: ProducerStateEntry, now_ms: int, expiration_ms: int) -> bool:
        # Kafka: idle for at least expiration_ms, and no open transaction.
        return entry.current_txn_first_offset is None and now_ms - entry.last_timestamp >= expiration_ms

    def remove_expired(self, now_ms: int, expiration_ms: int | None = None) -> list[int]:
        """Drop producers whose last timestamp is `expiration_ms` (default
        producer.id.expiration.ms) or more before `now_ms`; returns the ids dropped."""
        if expiration_ms is None:
            expiration_ms = self.producer_id_expiration_ms
        expired = [pid for pid, entry in self._producers.items()
                   if self._is_expired(entry, now_ms, expiration_ms)]
        for pid in expired:
            del self._producers[pid]
        return expired

    def truncate_fully(self, snapshot_dir: str | os.PathLike | None = None) -> None:
        """Forget every producer (log truncated to nothing). With `snapshot_dir`, also delete
        its snapshots, as Kafka's `truncateFullyAndStartAt`."""
        self._producers.clear()
        self._ongoing.clear()
        self._unreplicated.clear()
        if snapshot_dir is not None:
            for _, path in list_snapshots(snapshot_dir):
                path.unlink(missing_ok=True)

    def on_log_start_offset(self, log_start_offset: int) -> list[int]:
        """Drop producers whose last batch ends below the new log start offset; returns them.
        Completed transactions whose marker is below it are forgotten too (Kafka's
        `onLogStartOffsetIncremented`).

        Deliberately stricter than Kafka 3.9, which (since KIP-360) keeps such producers in
        memory and only loses them on restart; the pre-2.5 `evictUnretainedProducers` did this.
        A producer with an open transaction stays: its marker is still to come, and the LSO
        waits for it either way.
        """
        self._drop_unreplicated_below(log_start_offset)
        gone = [pid for pid, entry in self._producers.items()
                if entry.last_data_offset < log_start_offset and entry.current_txn_first_offset is None]
        for pid in gone:
            del self._producers[pid]
        return gone

    # -- snapshots (producer_snapshot.py) ---------------------------------------------------
    def encode_snapshot(self) -> bytes:
        """The snapshot bytes of the current state."""
        return snapshots.encode_snapshot(self._producers)

    decode_snapshot = staticmethod(snapshots.decode_snapshot)
    decode_producers = staticmethod(snapshots.decode_producers)
    delete_snapshots_after = staticmethod(snapshots.delete_snapshots_after)
    delete_snapshots_before = staticmethod(snapshots.delete_snapshots_before)

    def write_snapshot(self, snapshot_dir: str | os.PathLike, offset: int) -> Path:
        """Write the current state as `<offset>.snapshot` in `snapshot_dir`, durably; its path."""
        return snapshots.write_snapshot(self._producers, snapshot_dir, offset)

    def load_latest_snapshot(self, snapshot_dir: str | os.PathLike,
                             now_ms: int | None = None) -> int | None:
        """Replace the state with the newest readable snapshot (each producer's retained
        batches, see `decode_producers`) and return its offset, or `None` (state left empty) if
        there is none. A corrupt or truncated snapshot is logged and skipped for the next older
        one; unlike Kafka, it is not deleted, leaving that to `delete_snapshots_before`/an
        operator. With `now_ms`, expired producers are not
        loaded, as Kafka's `loadFromSnapshot`. Open transactions come back as ongoing ones;
        completed ones awaiting the high watermark are forgotten (the log end a snapshot is
        loaded for is at or below the high watermark, as Kafka assumes)."""
        self._producers.clear()
        self._ongoing.clear()
        self._unreplicated.clear()
        for offset, path in reversed(list_snapshots(snapshot_dir)):
            try:
                producers = self.decode_producers(path.read_bytes())
            except (CorruptSnapshotError, OSError) as e:
                log.warning("Failed to load producer snapshot from '%s': %s", path, e)
                continue
            for pid, entry in producers.items():
                if now_ms is None or not self._is_expired(entry, now_ms, self.producer_id_expiration_ms):
                    self._producers[pid] = entry
                    if entry.current_txn_first_offset is not None:
                        self._ongoing[entry.current_txn_first_offset] = TxnMetadata(pid, entry.current_txn_first_offset)
            return offset
        return None

    def truncate_and_reload(self, snapshot_dir: str | os.PathLike, log_end_offset: int,
                            now_ms: int | None = None) -> int | None:
        """The log was truncated to `log_end_offset` (or lost its tail): delete the snapshots
        above it and replace the state with the newest remaining one, as Kafka's
        `truncateAndReload`. Returns that snapshot's offset (None: none left, state empty); the
        log then replays its batches from there. A snapshot at exactly `log_end_offset` stays:
        it describes the batches below it, which the truncation kept."""
        gone = self.delete_snapshots_after(snapshot_dir, log_end_offset)
        if gone:
            log.info("deleted producer snapshots %s of %s above the log end offset %d",
                     gone, snapshot_dir, log_end_offset)
        return self.load_latest_snapshot(snapshot_dir, now_ms)



__all__ = [   # (with the entries' and snapshots' names its callers take from here)
    "APPEND", "INT32_MAX", "NO_PRODUCER_EPOCH", "NO_PRODUCER_ID", "NO_SEQUENCE", "NO_TIMESTAMP", "NUM_BATCHES_TO_RETAIN",
    "SNAPSHOT_SUFFIX", "AppendCheck", "BatchMetadata", "CompletedTxn", "CorruptSnapshotError",
    "InvalidProducerEpochError", "InvalidTxnStateError", "OutOfOrderSequenceError", "TransactionCoordinatorFencedError",
    "TxnMetadata", "ProducerStateEntry", "ProducerStateManager", "decrement_sequence", "increment_sequence",
    "list_snapshots", "snapshot_file_name",
]
