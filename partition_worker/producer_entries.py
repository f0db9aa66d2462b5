"""A producer's state in one partition: its epoch and its last five batches (Kafka 3.9's
`ProducerStateEntry` and `BatchMetadata`), and the sequence arithmetic they use. The pure
data of `producer_state.py` (the checks) and `producer_snapshot.py` (the files)."""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import NamedTuple

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_TIMESTAMP = -1
INT32_MAX = 2**31 - 1

NUM_BATCHES_TO_RETAIN = 5                     # ProducerStateEntry.NUM_BATCHES_TO_RETAIN


def increment_sequence(sequence: int, increment: int) -> int:
    """Kafka's `DefaultRecordBatch.incrementSequence`: wraps from Int32 max to 0."""
    if sequence > INT32_MAX - increment:
        return increment - (INT32_MAX - sequence) - 1
    return sequence + increment


def decrement_sequence(sequence: int, decrement: int) -> int:
    """Kafka's `DefaultRecordBatch.decrementSequence`, the inverse of `increment_sequence`."""
    if sequence < decrement:
        return INT32_MAX - (decrement - sequence) + 1
    return sequence - decrement


class BatchMetadata(NamedTuple):
    """One appended batch: sequences and offsets are inclusive; `offset_delta` is
    last_offset - first_offset (Kafka stores lastSeq, lastOffset, offsetDelta, timestamp).
    A named tuple rather than a frozen dataclass: a wake decodes five per producer (measured:
    a snapshot of 1,000 producers in 4.7-5.0 ms of CPU rather than 6.6-7.1)."""

    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int
    timestamp: int

    @property
    def offset_delta(self) -> int:
        return self.last_offset - self.first_offset


@dataclass
class ProducerStateEntry:
    """State of one producer id: its epoch and the last five batches of that epoch, oldest
    first. A new epoch clears the batches (Kafka's `maybeUpdateProducerEpoch`)."""

    producer_id: int
    producer_epoch: int = NO_PRODUCER_EPOCH
    coordinator_epoch: int = -1
    last_timestamp: int = NO_TIMESTAMP
    current_txn_first_offset: int | None = None  # first offset of its open transaction
    batches: deque[BatchMetadata] = field(default_factory=deque)

    @property
    def is_empty(self) -> bool:
        return not self.batches

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else NO_SEQUENCE

    @property
    def last_data_offset(self) -> int:
        """Last offset of the last batch, -1 when there is none."""
        return self.batches[-1].last_offset if self.batches else -1

    def find_duplicate(self, epoch: int, first_seq: int, last_seq: int) -> BatchMetadata | None:
        if epoch != self.producer_epoch:
            return None
        for batch in self.batches:
            if batch.first_seq == first_seq and batch.last_seq == last_seq:
                return batch
        return None

    def add_batch(self, epoch: int, batch: BatchMetadata) -> None:
        if epoch != self.producer_epoch:
            self.batches.clear()
            self.producer_epoch = epoch
        if len(self.batches) == NUM_BATCHES_TO_RETAIN:
            self.batches.popleft()
        self.batches.append(batch)
        self.last_timestamp = batch.timestamp
