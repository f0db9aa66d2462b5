"""What a follower checks before it stores batches copied from its leader: the pure part of
Kafka 3.9's `UnifiedLog.appendAsFollower` (`analyzeAndValidateRecords`, and `append` with
validateAndAssignOffsets=false). `PartitionLog.append_as_follower` writes what passes.

The bytes are the leader's and stay so: offsets, partition leader epochs, LogAppendTime
stamps and compression are never rewritten. Checked, with nothing written on a refusal:
- every batch is whole, magic 2, its CRC-32C matches and its codec is known
  (`validate_batches` without the client-only rules, and without max.message.bytes, which the
  leader enforced: Kafka's ignoreRecordSize for replication);
- lastOffsetDelta is not negative (the offsets below depend on it);
- the first batch starts exactly at the follower's log end offset and each later batch right
  after the one before. Kafka refuses a first offset below the log end
  (UnexpectedAppendOffsetException) and offsets that do not increase
  (OffsetsOutOfOrderException), and lets a gap through; rafka refuses a gap too, since in a
  log that is not compacted it means the fetch and the log disagree. A compacted log has gaps
  where the cleaner removed batches, so there a batch may start anywhere after the one before
  (`allow_gaps`), as in Kafka.
"""
from __future__ import annotations

from typing import Sequence

from rafka.common.errors import CorruptRecordError, ErrorCode, KafkaError
from rafka.partition_worker.checkpoints import EpochEntry
from rafka.partition_worker.record_batch import BatchHeader


class UnexpectedAppendOffsetError(KafkaError):
    """The first batch of a follower append does not start at the log end offset (Kafka's
    UnexpectedAppendOffsetException; UNKNOWN_SERVER_ERROR on the wire).

    `first_offset` and `last_offset` are the append's, so the caller can do what Kafka's
    `Partition.appendRecordsToFollowerOrFutureReplica` does when a fetch from the leader's log
    start offset begins inside a batch (after DeleteRecords): on an empty log whose end is
    inside [first_offset, last_offset], `truncate_fully_and_start_at(first_offset)` and append
    again.
    """

    code = ErrorCode.UNKNOWN_SERVER_ERROR

    def __init__(self, message: str, first_offset: int, last_offset: int) -> None:
        super().__init__(message)
        self.first_offset = first_offset
        self.last_offset = last_offset


class OffsetsOutOfOrderError(KafkaError):
    """A batch of a follower append does not follow the one before it (Kafka's
    OffsetsOutOfOrderException; UNKNOWN_SERVER_ERROR on the wire)."""

    code = ErrorCode.UNKNOWN_SERVER_ERROR


def check_follower_offsets(headers: Sequence[BatchHeader], log_end_offset: int, *, allow_gaps: bool,
                           partition: str) -> tuple[EpochEntry, ...]:
    """Refuse batches whose offsets do not continue the log at `log_end_offset` (rules in the
    module docstring); return where each leader epoch starts in them.

    The result holds (epoch, base offset) of the first batch and of every batch whose
    partitionLeaderEpoch differs from the batch before it, in log order; batches without an
    epoch (-1) are left out. Feeding each to `LeaderEpochCache.assign` gives the cache Kafka's
    follower builds by assigning every batch's epoch (an assign of the latest epoch at a later
    offset changes nothing).
    """
    if not headers:
        return ()
    first, last = headers[0].base_offset, headers[-1].base_offset + headers[-1].last_offset_delta
    expected = log_end_offset
    epochs: list[EpochEntry] = []
    for i, h in enumerate(headers):
        if h.last_offset_delta < 0:
            raise CorruptRecordError(
                f"Record batch at offset {h.base_offset} in the append to {partition} has a negative "
                f"lastOffsetDelta {h.last_offset_delta}")
        if h.base_offset != expected and not (allow_gaps and h.base_offset > expected):
            if i == 0:
                relation = "less than" if h.base_offset < expected else "above"
                raise UnexpectedAppendOffsetError(
                    f"Unexpected offset in append to {partition}. First offset {h.base_offset} is {relation} "
                    f"the next offset {expected}. Last offset in append: {last}.", first, last)
            raise OffsetsOutOfOrderError(
                f"Out of order offsets found in append to {partition}: batch {i} starts at {h.base_offset}, "
                f"but the batch before it ends at {expected - 1}")
        expected = h.next_offset
        epoch = h.partition_leader_epoch
        if epoch >= 0 and (not epochs or epochs[-1].epoch != epoch):
            epochs.append(EpochEntry(epoch, h.base_offset))
    return tuple(epochs)
