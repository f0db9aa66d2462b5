"""Values exchanged with a `PartitionReplica` actor (frozen, cheap to pickle)."""
from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from typing import NamedTuple

from rafka.common.errors import ErrorCode


class FetchIsolation(IntEnum):
    """How far a read may go (Kafka's `FetchIsolation`): a read_uncommitted consumer's up to
    the high watermark, a read_committed consumer's up to the last stable offset (KIP-98),
    the broker's own (and a follower's) up to the log end."""

    HIGH_WATERMARK = 0
    TXN_COMMITTED = 1
    LOG_END = 2


class AbortedTransaction(NamedTuple):
    """One aborted transaction a read_committed fetch reports (FetchResponse's
    `AbortedTransaction`): the consumer drops `producer_id`'s records from `first_offset` on,
    up to that producer's ABORT marker."""

    producer_id: int
    first_offset: int


@dataclass(frozen=True)
class ProduceResult:
    """The outcome of appending one produce request's records to one partition."""

    error: ErrorCode
    base_offset: int = -1
    log_append_time_ms: int = -1
    log_start_offset: int = -1
    error_message: str | None = None
    record_errors: tuple[tuple[int, str], ...] = ()  # (batch index, message), e.g. INVALID_TIMESTAMP's


@dataclass(frozen=True)
class Region:
    """Bytes of whole record batches inside one segment file; `inode` identifies the file
    (0: unknown), so a reader never sends another file that took its name (segment_files.py)."""

    path: str
    position: int
    length: int
    inode: int = 0  # the segment file's identity (0: unknown, not checked)


@dataclass(frozen=True)
class FetchResult:
    error: ErrorCode
    high_watermark: int = -1
    last_stable_offset: int = -1
    log_start_offset: int = -1
    regions: tuple[Region, ...] = ()
    next_offset: int = -1  # the offset after the last batch in `regions` (-1: no regions)
    # Where the committed whole batches end in the last region's file (-1: not known): the
    # front end reads on from `regions` up to there itself (net/data_plane.py).
    committed_end: int = -1
    # A read_committed read's aborted transactions overlapping its records (None: another
    # isolation, which reports none; Kafka sends null then).
    aborted_transactions: tuple[AbortedTransaction, ...] | None = None
    # The committed window (up to `committed_end`) is also below the last stable offset and no
    # aborted transaction overlaps it: read_committed reads may be served from it too.
    stable_window: bool = False

    @property
    def size(self) -> int:
        return sum(r.length for r in self.regions)


@dataclass(frozen=True)
class OffsetLookup:
    error: ErrorCode
    timestamp: int = -1
    offset: int = -1
    leader_epoch: int = -1


@dataclass(frozen=True)
class DeleteRecordsResult:
    """DeleteRecords on one partition: the new low watermark (-1 with an error)."""

    error: ErrorCode
    low_watermark: int = -1


@dataclass(frozen=True)
class FollowerAppendResult:
    """A follower's append of batches fetched from its leader: its log end and high watermark after."""

    error: ErrorCode
    log_end_offset: int = -1
    high_watermark: int = -1


@dataclass(frozen=True)
class AlterIsr:
    """A leader's request to change its partition's ISR (Kafka's AlterPartition, KIP-497):
    valid only under the leader epoch and partition state version it was decided at."""

    topic: str
    partition: int
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    partition_epoch: int   # the partition state's znode version the leader last saw


@dataclass(frozen=True)
class ReplicaStatus:
    topic: str
    partition: int
    broker_id: int
    leader: int
    leader_epoch: int
    log_start_offset: int
    log_end_offset: int
    high_watermark: int
    pid: int
    recovery_point: int = -1
    log_offline: bool = False   # its log dir failed: reads only, and a follower fetches nothing


# Special timestamps of ListOffsets (Kafka's ListOffsetsRequest).
LATEST_TIMESTAMP = -1
EARLIEST_TIMESTAMP = -2
MAX_TIMESTAMP = -3
EARLIEST_LOCAL_TIMESTAMP = -4

# DeleteRecords' offset meaning "up to the high watermark" (Kafka's DeleteRecordsRequest.HIGH_WATERMARK).
HIGH_WATERMARK_OFFSET = -1
