"""`ClosedLog`: what a broker keeps of a cleanly closed partition log, and reads of it without
its replica process (a dormant replica: `replica.dormant.after.ms`).

A replica that has been idle closes its log cleanly (clean-shutdown marker, producer-state
snapshot, indexes trimmed) and its process exits. The partition stays online: its broker
answers Fetch, ListOffsets (earliest, latest) and OffsetForLeaderEpoch from the files and
from the few numbers here, and starts the replica again for anything that changes the log.
A new partition whose directory holds no segment yet is a closed log too (empty).

read_committed reads (KIP-98) stop at the last stable offset, taken at close from the producer
snapshot the replica wrote at its log end (the transactions still open), and report the
aborted transactions among their records from the segments' `.txnindex` files. When the LSO
cannot be known so (no snapshot at the log end; a high watermark below the log end, where a
transaction's marker above it would hold the LSO back), it is None and such reads need the
replica.

Reads open the segment that holds the offset read-only (`LogSegment.open(read_only=True)`:
an index that fails its checks raises instead of being rebuilt, since only the replica
writes) and keep the last few open; nothing is held for a partition nobody reads.
Pure file I/O, no Ray; the coordinator builds a `ClosedLog` in a thread.
"""
from __future__ import annotations

import os
from bisect import bisect_right
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

from rafka.common.config import LogConfig
from rafka.common.errors import ErrorCode
from rafka.partition_worker import retention
from rafka.partition_worker.cleaner import cleanable_info
from rafka.partition_worker.checkpoints import LEADER_EPOCH_CHECKPOINT, EpochEntry, LeaderEpochCache, epoch_end_offset
from rafka.partition_worker.index import CorruptIndexError
from rafka.partition_worker.log import CLEAN_SHUTDOWN_FILE
from rafka.partition_worker.messages import AbortedTransaction, FetchIsolation, FetchResult, Region
from rafka.partition_worker.producer_state import CorruptSnapshotError, ProducerStateManager, snapshot_file_name
from rafka.partition_worker.txn_index import AbortedTxn, CorruptTxnIndexError, collect_aborted_txns, decode_entries, \
    txn_index_file_name
from rafka.partition_worker.segment import LOG_SUFFIX, LogSegment

# Files that say a cleaner swap was cut short: only the replica's recovery may finish it.
_UNFINISHED_SUFFIXES = (".cleaned", ".swap")
# Segments a dormant partition's reader keeps open (consumers read one or two at a time).
OPEN_SEGMENTS = 2


class ClosedLogError(Exception):
    """The closed log cannot be read without its replica (a corrupt index, a file gone):
    the broker starts the replica, whose recovery deals with it."""


@dataclass(frozen=True)
class ClosedLog:
    """A cleanly closed log: its segments' base offsets and the offsets that bound it (what
    the broker keeps of a dormant replica; a few hundred bytes, sent to the front end)."""

    directory: str
    bases: tuple[int, ...]
    log_start_offset: int
    log_end_offset: int
    high_watermark: int
    size_bytes: int
    leader_epochs: tuple[EpochEntry, ...]
    last_stable_offset: int | None = None   # None: not known without the replica (module docstring)

    @property
    def latest_epoch(self) -> int:
        """The leader epoch of the log's latest epoch entry (-1: none)."""
        return self.leader_epochs[-1].epoch if self.leader_epochs else -1

    def end_offset_for(self, leader_epoch: int) -> tuple[int, int]:
        """OffsetForLeaderEpoch's (epoch, end offset) from the epochs kept at close."""
        return epoch_end_offset(self.leader_epochs, leader_epoch, self.log_end_offset)


class ClosedLogReader:
    """Reads of one closed log, keeping the last `OPEN_SEGMENTS` segments it read open."""

    def __init__(self, log: ClosedLog) -> None:
        self.log = log
        self._open: OrderedDict[int, LogSegment] = OrderedDict()
        self._txn_indexes: dict[int, list[AbortedTxn]] = {}   # segment base -> its aborts

    # -- reads -----------------------------------------------------------------------------
    def read(self, fetch_offset: int, max_bytes: int, *,
             isolation: FetchIsolation = FetchIsolation.HIGH_WATERMARK) -> FetchResult:
        """Whole batches from `fetch_offset` up to the high watermark (read_committed: the last
        stable offset, with the aborted transactions among them; LOG_END: the log end) as file
        regions, as the replica answers a consumer's read; OFFSET_OUT_OF_RANGE outside the log.
        Raises ClosedLogError when the files do not read as the replica left them, or for a
        read_committed read when the LSO is not known."""
        log = self.log
        hw, start = log.high_watermark, log.log_start_offset
        committed = isolation is FetchIsolation.TXN_COMMITTED
        if committed and log.last_stable_offset is None:
            raise ClosedLogError(f"the last stable offset of {log.directory} is not known without its replica")
        lso = hw if log.last_stable_offset is None else log.last_stable_offset
        if fetch_offset > log.log_end_offset or fetch_offset < start:
            return FetchResult(ErrorCode.OFFSET_OUT_OF_RANGE, hw, lso, start)
        end = log.log_end_offset if isolation is FetchIsolation.LOG_END else (lso if committed else hw)
        nothing = FetchResult(ErrorCode.NONE, hw, lso, start, aborted_transactions=() if committed else None)
        if fetch_offset >= end:
            return nothing
        regions: list[Region] = []
        next_offset, budget = fetch_offset, max_bytes
        i = max(0, bisect_right(log.bases, fetch_offset) - 1)
        for base in log.bases[i:]:
            if next_offset >= end:
                break
            segment = self._segment(base)
            try:
                got, seg_next, size = segment.read(next_offset, budget, end, min_one=not regions)
            except OSError as e:
                raise ClosedLogError(f"reading {segment.log_path}: {e}") from e
            if not got:
                if regions or (segment.size and segment.next_offset > next_offset):
                    break
                continue   # (emptied by the cleaner: skipped, as the replica does)
            regions.extend(Region(r.path, r.position, r.length, r.inode) for r in got)
            next_offset, budget = seg_next, budget - size
            if budget <= 0 or next_offset < segment.next_offset:
                break
        if not regions:
            return nothing
        aborted = self._aborted(fetch_offset, next_offset) if committed else None
        return FetchResult(ErrorCode.NONE, hw, lso, start, tuple(regions), next_offset, aborted_transactions=aborted)

    def _aborted(self, fetch_offset: int, upper_bound_offset: int) -> tuple[AbortedTransaction, ...]:
        """The aborted transactions overlapping [fetch_offset, upper_bound_offset), from the
        `.txnindex` files of the segments from the one holding `fetch_offset` on (each read
        once per reader: a closed log's do not change)."""
        bases = self.log.bases
        i = max(0, bisect_right(bases, fetch_offset) - 1)
        segments = [(base, self._txn_entries(base)) for base in bases[i:]]
        return tuple(AbortedTransaction(t.producer_id, t.first_offset)
                     for t in collect_aborted_txns(segments, fetch_offset, upper_bound_offset))

    def _txn_entries(self, base: int) -> list[AbortedTxn]:
        entries = self._txn_indexes.get(base)
        if entries is None:
            try:
                data = (Path(self.log.directory) / txn_index_file_name(base)).read_bytes()
            except FileNotFoundError:
                data = b""   # (most segments never see an abort)
            except OSError as e:
                raise ClosedLogError(f"reading the transaction index of segment {base}: {e}") from e
            try:
                entries = self._txn_indexes[base] = decode_entries(data)
            except CorruptTxnIndexError as e:
                raise ClosedLogError(f"transaction index of segment {base}: {e}") from e
        return entries

    def close(self) -> None:
        """Close the segments a read left open (the partition woke or left this broker)."""
        while self._open:
            _, segment = self._open.popitem()
            segment.close()

    def _segment(self, base: int) -> LogSegment:
        segment = self._open.get(base)
        if segment is not None:
            self._open.move_to_end(base)
            return segment
        try:
            segment = LogSegment.open(Path(self.log.directory), base, read_only=True)
        except (CorruptIndexError, OSError) as e:
            raise ClosedLogError(f"opening segment {base} of {self.log.directory}: {e}") from e
        self._open[base] = segment
        while len(self._open) > OPEN_SEGMENTS:
            _, oldest = self._open.popitem(last=False)
            oldest.close()
        return segment


def read_closed_log(directory: Path, *, log_start_offset: int | None = None,
                    high_watermark: int | None = None) -> ClosedLog | None:
    """The closed log in `directory`, or None when it was not closed cleanly (no clean-shutdown
    marker while segments exist, a cleaner swap cut short, an index that fails its checks):
    then only the replica, recovering it, may open it. A directory without segments (a new
    partition) is an empty closed log.

    `log_start_offset` is the log dir checkpoint's (clamped to the segments); `high_watermark`
    the last known one (None: unknown, taken as the log end, which holds only when every
    replica had everything: the caller decides)."""
    directory = Path(directory)
    try:
        names = os.listdir(directory)
    except FileNotFoundError:
        names = []
    if any(n.endswith(_UNFINISHED_SUFFIXES) for n in names):
        return None
    bases = sorted(int(n[:-len(LOG_SUFFIX)]) for n in names
                   if n.endswith(LOG_SUFFIX) and n[:-len(LOG_SUFFIX)].isdigit())
    if bases and CLEAN_SHUTDOWN_FILE not in names:
        return None
    if not bases:
        end, size = 0, 0
        bases = [0]
    else:
        try:
            last = LogSegment.open(directory, bases[-1], read_only=True)
        except (CorruptIndexError, OSError):
            return None
        end = last.next_offset
        last.close()
        size = sum(_size(directory / f"{b:020d}{LOG_SUFFIX}") for b in bases)
    start = bases[0] if log_start_offset is None else min(max(log_start_offset, bases[0]), end)
    hw = end if high_watermark is None else min(max(high_watermark, 0), end)
    epochs = LeaderEpochCache(directory).entries if (directory / LEADER_EPOCH_CHECKPOINT).exists() else ()
    return ClosedLog(str(directory), tuple(bases), start, end, hw, size, tuple(epochs),
                     _last_stable_offset(directory, end, hw))


def _last_stable_offset(directory: Path, log_end_offset: int, high_watermark: int) -> int | None:
    """The LSO of a closed log: the first offset of the earliest transaction its producer
    snapshot at the log end says is open, else the high watermark. None when that snapshot
    is missing or unreadable, or the high watermark is below the log end (a transaction whose
    marker lies above it would still hold the LSO back, and no snapshot says which)."""
    if high_watermark < log_end_offset:
        return None
    if log_end_offset == 0:
        return 0
    try:
        producers = ProducerStateManager.decode_producers((directory / snapshot_file_name(log_end_offset)).read_bytes())
    except (OSError, CorruptSnapshotError):
        return None
    first = min((e.current_txn_first_offset for e in producers.values() if e.current_txn_first_offset is not None),
                default=None)
    return high_watermark if first is None else min(first, high_watermark)


def upkeep_due(log: ClosedLog, config: LogConfig, cleaner_offset: int | None, now_ms: int) -> str | None:
    """Why the replica of a closed log must wake for its upkeep (the rules of its own
    retention pass and of the cleaner's choice, applied to its segments), or None:
    a segment below the log start offset, or past retention.bytes or retention.ms (with
    `delete` in cleanup.policy), or enough dirty bytes to compact (with `compact`).
    Raises ClosedLogError when the segments cannot be read."""
    if len(log.bases) < 2:
        return None   # only the active segment: nothing is deleted or cleaned
    segments: list[LogSegment] = []
    try:
        for base in log.bases:
            segments.append(LogSegment.open(Path(log.directory), base, read_only=True))
        hw = log.high_watermark
        plans = [retention.log_start_offset_breached(segments, log.log_start_offset, hw)]
        if config.delete:
            plans += [retention.retention_size_breached(segments, config.retention_bytes, hw),
                      retention.retention_ms_breached(segments, config.retention_ms, now_ms, hw)]
        for plan in plans:
            if plan.segments:
                return plan.reason
        if config.compact:
            info = cleanable_info(segments, config, cleaner_offset, now_ms, log_start_offset=log.log_start_offset,
                                  max_offset=hw)
            if info.worth_cleaning(config.min_cleanable_dirty_ratio):
                return f"dirty ratio {info.dirty_ratio:.2f} to compact"
        return None
    except (CorruptIndexError, OSError) as e:
        raise ClosedLogError(f"reading the segments of {log.directory}: {e}") from e
    finally:
        for segment in segments:
            segment.close()


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0
