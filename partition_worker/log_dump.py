"""Kafka 3.9's DumpLogSegments (`kafka-dump-log.sh`) for our partition files: the core of `rafka dump-log`.

Each dumper yields `DumpLine`s whose text is Kafka's, character for character, so an operator
can diff our dump against Kafka's tool run on the same files:

    .log        "Log starting offset: N", one line per batch, with deep iteration one "| offset: ..."
                line per record; "Found N invalid bytes at the end of F" for a torn or garbage tail
    .index      "offset: O position: P" per entry; entries not pointing at the batch that holds
                their offset are listed after them ("Mismatches in :F" / "  Index offset: ...")
    .timeindex  "timestamp: T offset: O" per entry, then Kafka's time index errors
    .snapshot   one line per producer, as Kafka's `dumpProducerIdSnapshot`
    .txnindex   one line per aborted transaction, as Kafka's `dumpTxnIndex`

Lines Kafka prints to stderr are `diagnostic`; lines reporting damage (a bad CRC, invalid bytes,
an index entry that misses the log, an unreadable or unknown file) are `failed`.

Where Kafka's tool would stop with a stack trace, the dump goes on and says why instead:
records that do not decode, a codec id above 4, an index whose `.log` is missing, a file name
that is not a base offset. Deliberate differences: magic v0/v1 batches are not decoded (the dump
ends there with "Found N invalid bytes"); KRaft snapshot control records print only their type;
KRaft `.checkpoint` files are "unknown"; an
aborted-transaction entry of an unknown version is a failed line; index problems are listed in file
order right after each file, where Kafka lists them after the last file (`.index` mismatches
newest first).
"""
from __future__ import annotations

import mmap
import os
import struct
from bisect import bisect_left
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Generator, Iterable, Iterator, Sequence

from rafka.common.errors import KafkaError
from rafka.partition_worker.producer_state import (
    SNAPSHOT_SUFFIX, CorruptSnapshotError, ProducerStateEntry, ProducerStateManager, increment_sequence,
)
from rafka.partition_worker.record_batch import (
    MAGIC_V2, NO_SEQUENCE, BatchHeader, Compression, Record, TimestampType, compute_crc, decode_records,
    iter_batches,
)
from rafka.partition_worker.segment import INDEX_SUFFIX, LOG_SUFFIX, TIME_INDEX_SUFFIX
from rafka.partition_worker.txn_index import TXN_INDEX_SUFFIX, CorruptTxnIndexError, decode_entries

DELETE_HORIZON_FLAG_MASK = 0x40  # attributes bit 6 (KIP-534): baseTimestamp is the delete horizon
RECORD_INDENT = "|"

_OFFSET_ENTRY = struct.Struct(">ii")   # relative offset, position
_TIME_ENTRY = struct.Struct(">qi")     # timestamp, relative offset
_CONTROL_KEY = struct.Struct(">hh")    # version, type
_END_TXN_VALUE = struct.Struct(">hi")  # version, coordinator epoch

# Java's TimestampType.toString and CompressionType.name.
_TIMESTAMP_TYPE_NAMES = {TimestampType.CREATE_TIME: "CreateTime", TimestampType.LOG_APPEND_TIME: "LogAppendTime"}
_CODEC_NAMES = {Compression.NONE: "none", Compression.GZIP: "gzip", Compression.SNAPPY: "snappy",
                Compression.LZ4: "lz4", Compression.ZSTD: "zstd"}
# Kafka's ControlRecordType ids.
_CONTROL_TYPES = {0: "ABORT", 1: "COMMIT", 2: "LEADER_CHANGE", 3: "SNAPSHOT_HEADER", 4: "SNAPSHOT_FOOTER",
                  5: "KRAFT_VERSION", 6: "KRAFT_VOTERS"}


@dataclass(frozen=True, slots=True)
class DumpLine:
    """One line of a dump. `diagnostic`: Kafka's tool prints it to stderr. `failed`: it reports
    damage, so the dump as a whole failed."""

    text: str
    diagnostic: bool = False
    failed: bool = False


def _problem(text: str) -> DumpLine:
    return DumpLine(text, diagnostic=True, failed=True)


# -- files -------------------------------------------------------------------------------

class NotASegmentFileError(ValueError):
    """A `.log`/`.index`/`.timeindex` whose name does not start with its base offset."""


def dump_file(path: str | os.PathLike, *, print_data_log: bool = False, deep_iteration: bool = False,
              verify_index_only: bool = False, max_bytes: int | None = None) -> Iterator[DumpLine]:
    """Dump one file, chosen by its suffix, starting with Kafka's "Dumping <path>".

    `print_data_log` implies `deep_iteration` (record lines) and adds keys and values as UTF-8.
    `verify_index_only` checks `.index`/`.timeindex` files against their `.log` without listing
    entries. `max_bytes` reads at most that many bytes of a `.log`; a batch cut by the limit
    is not shown and not reported as invalid (Kafka's `--max-bytes`). Never raises for a
    missing, unreadable or corrupt file: it yields a failed line instead.
    """
    name = os.fspath(path)  # as given, like Kafka's `new File(arg)`
    yield DumpLine(f"Dumping {name}")
    path = Path(path)
    try:
        if path.suffix == LOG_SUFFIX:
            yield from _dump_log_file(path, deep_iteration or print_data_log, print_data_log, max_bytes)
        elif path.suffix == INDEX_SUFFIX:
            yield from _dump_offset_index_file(path, verify_index_only)
        elif path.suffix == TIME_INDEX_SUFFIX:
            yield from _dump_time_index_file(path, verify_index_only)
        elif path.suffix == SNAPSHOT_SUFFIX:
            yield from snapshot_lines(path.read_bytes(), path)
        elif path.suffix == TXN_INDEX_SUFFIX:
            yield from txn_index_lines(path.read_bytes(), path)
        else:
            yield _problem(f"Ignoring unknown file {name}")
    except OSError as e:
        yield _problem(f"Cannot read {e.filename or path}: {e.strerror or e}")
    except NotASegmentFileError as e:
        yield _problem(str(e))


def base_offset_of(path: Path) -> int:
    """The offset a segment file is named after (Kafka: the name up to the first dot)."""
    stem = path.name.split(".")[0]
    if not stem.isdigit():
        raise NotASegmentFileError(f"Cannot dump {path}: its name does not start with a base offset")
    return int(stem)


@contextmanager
def _mapped(path: Path) -> Iterator[memoryview]:
    """A file's bytes, memory-mapped read-only: a segment can be 1 GiB. Empty files give b"".

    A file truncated by another process while mapped (a broker's recovery) can kill this
    process with SIGBUS, which Kafka's tool, reading through a FileChannel, does not risk.
    """
    with open(path, "rb") as f:
        if os.fstat(f.fileno()).st_size == 0:
            yield memoryview(b"")
            return
        mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    view = memoryview(mm)
    try:
        yield view
    finally:
        try:
            view.release()
            mm.close()
        except BufferError:
            pass  # a slice outlives the dump (an exception's traceback holds it): the GC unmaps it


def _dump_log_file(path: Path, deep: bool, print_data_log: bool, max_bytes: int | None) -> Iterator[DumpLine]:
    yield DumpLine(f"Log starting offset: {base_offset_of(path)}")
    with _mapped(path) as buf:
        yield from log_lines(buf, path, deep_iteration=deep, print_data_log=print_data_log, max_bytes=max_bytes)


def _dump_offset_index_file(path: Path, verify_only: bool) -> Iterator[DumpLine]:
    base_offset, data = base_offset_of(path), path.read_bytes()
    batches = yield from _batches_of_log_for(path)
    yield from offset_index_lines(data, base_offset, batches, path, verify_only=verify_only)


def _dump_time_index_file(path: Path, verify_only: bool) -> Iterator[DumpLine]:
    base_offset, data = base_offset_of(path), path.read_bytes()
    batches = yield from _batches_of_log_for(path)
    yield from time_index_lines(data, base_offset, batches, path, verify_only=verify_only)


def _batches_of_log_for(index_path: Path) -> Generator[DumpLine, None, list[BatchHeader] | None]:
    """The batches of an index's `.log` (same directory and base name); when it is missing,
    yields a failed line and returns None."""
    log_path = index_path.with_name(index_path.name.split(".")[0] + LOG_SUFFIX)
    if not log_path.exists():
        yield _problem(f"Cannot check {index_path}: its log {log_path} does not exist")
        return None
    with _mapped(log_path) as buf:
        return list(_batches(buf))


# -- .log --------------------------------------------------------------------------------

def _batches(buf: memoryview) -> Iterator[BatchHeader]:
    """Whole v2 batches from the start of `buf`, up to the first cut, short or non-v2 one."""
    for header in iter_batches(buf):
        if header.magic != MAGIC_V2:
            return
        yield header


def log_lines(buf: bytes | bytearray | memoryview, path: str | os.PathLike, *, deep_iteration: bool = False,
              print_data_log: bool = False, max_bytes: int | None = None) -> Iterator[DumpLine]:
    """Batch lines (and with `deep_iteration`, record lines) of a `.log` file's bytes.

    `path` names the file in messages. Bytes after the last whole v2 batch are reported as
    Kafka does ("Found N invalid bytes at the end of <name>"), except under `max_bytes`.
    With deep iteration, offsets that do not follow each other are listed at the end
    (normal in a compacted log, so not a failure).
    """
    mv = buf if isinstance(buf, memoryview) else memoryview(buf)
    if max_bytes is not None:
        mv = mv[:max(max_bytes, 0)]
    valid_bytes = 0
    gaps: list[tuple[int, int]] = []
    last_offset = -1
    for header in _batches(mv):
        is_valid = compute_crc(mv, header.position, header.size) == header.crc
        yield DumpLine(batch_line(header, is_valid), failed=not is_valid or header.compression not in _CODEC_NAMES)
        if deep_iteration:
            try:  # like Kafka, records of a batch with a bad CRC are shown if they parse
                records = decode_records(mv, header.position, verify_crc=False)[1]
            except KafkaError as e:  # where Kafka's tool stops with a stack trace
                yield _problem(f"Cannot read the records of the batch at position {header.position}: {e}")
                records = []
            for record in records:
                if last_offset >= 0 and record.offset != last_offset + 1:
                    gaps.append((last_offset, record.offset))
                last_offset = record.offset
                yield DumpLine(record_line(header, record, print_data_log=print_data_log))
        valid_bytes = header.position + header.size
    trailing = len(mv) - valid_bytes
    if trailing and max_bytes is None:
        yield DumpLine(f"Found {trailing} invalid bytes at the end of {Path(path).name}", failed=True)
    if gaps:
        yield DumpLine(f"Non-consecutive offsets in {os.path.abspath(path)}", diagnostic=True)
        for first, second in gaps:
            yield DumpLine(f"  {first} is followed by {second}", diagnostic=True)


def batch_line(h: BatchHeader, is_valid: bool) -> str:
    """Kafka's `printBatchLevel` line for a v2 batch; `is_valid`: its CRC-32C matches."""
    return (f"baseOffset: {h.base_offset} lastOffset: {h.last_offset} count: {h.records_count} "
            f"baseSequence: {h.base_sequence} lastSequence: {last_sequence(h)} "
            f"producerId: {h.producer_id} producerEpoch: {h.producer_epoch} "
            f"partitionLeaderEpoch: {h.partition_leader_epoch} isTransactional: {_java(h.is_transactional)} "
            f"isControl: {_java(h.is_control)} deleteHorizonMs: {_optional_long(delete_horizon_ms(h))} "
            f"position: {h.position} {_TIMESTAMP_TYPE_NAMES[h.timestamp_type]}: {h.max_timestamp} "
            f"size: {h.size} magic: {h.magic} compresscodec: {_codec_name(h.compression)} crc: {h.crc} "
            f"isvalid: {_java(is_valid)}")


def record_line(h: BatchHeader, record: Record, *, print_data_log: bool = False) -> str:
    """Kafka's deep-iteration line for one record of batch `h`.

    Keys and values are shown as UTF-8 (undecodable bytes replaced, as Java's StringDecoder)
    only with `print_data_log`, never for control records, which get their marker instead.
    """
    sequence = (NO_SEQUENCE if h.base_sequence < 0
                else increment_sequence(h.base_sequence, record.offset - h.base_offset))
    text = (f"{RECORD_INDENT} offset: {record.offset} {_TIMESTAMP_TYPE_NAMES[h.timestamp_type]}: "
            f"{record.timestamp} keySize: {_size(record.key)} valueSize: {_size(record.value)} "
            f"sequence: {sequence} headerKeys: [{','.join(key for key, _ in record.headers)}]")
    if h.is_control:
        return text + _control_text(record)
    if print_data_log and record.key is not None:
        text += f" key: {record.key.decode('utf-8', errors='replace')}"
    if print_data_log and record.value is not None:
        text += f" payload: {record.value.decode('utf-8', errors='replace')}"
    return text


def last_sequence(h: BatchHeader) -> int:
    """Kafka's `DefaultRecordBatch.lastSequence`: -1 without a base sequence, wraps at Int32 max."""
    if h.base_sequence == NO_SEQUENCE:
        return NO_SEQUENCE
    return increment_sequence(h.base_sequence, h.last_offset_delta)


def delete_horizon_ms(h: BatchHeader) -> int | None:
    """The batch's delete horizon (its baseTimestamp when attribute bit 6 is set), else None."""
    return h.base_timestamp if h.attributes & DELETE_HORIZON_FLAG_MASK else None


def _control_text(record: Record) -> str:
    """What Kafka appends for a control record: the transaction marker, or just its type."""
    key, value = record.key or b"", record.value or b""
    type_id = _CONTROL_KEY.unpack_from(key)[1] if len(key) >= _CONTROL_KEY.size else -1
    name = _CONTROL_TYPES.get(type_id, "UNKNOWN")
    if name in ("ABORT", "COMMIT") and len(value) >= _END_TXN_VALUE.size:
        return f" endTxnMarker: {name} coordinatorEpoch: {_END_TXN_VALUE.unpack_from(value)[1]}"
    return f" controlType: {name}({type_id})"


def _codec_name(codec: int) -> str:
    return _CODEC_NAMES.get(codec, f"unknown({codec})")  # Kafka's tool throws on ids 5-7


def _java(flag: bool) -> str:
    return "true" if flag else "false"


def _optional_long(value: int | None) -> str:
    """Java's `OptionalLong.toString`."""
    return "OptionalLong.empty" if value is None else f"OptionalLong[{value}]"


def _size(data: bytes | None) -> int:
    return -1 if data is None else len(data)


# -- .index and .timeindex ---------------------------------------------------------------

def _index_entries(data: bytes, entry: struct.Struct) -> Iterator[tuple[int, ...]]:
    """Entries of an index file; a partial last entry is ignored, as Kafka's index does.

    The zero tail of a preallocated index (megabytes) is skipped except for its first entry:
    the listing stops at that entry anyway, and an all-zero file still shows it as Kafka does.
    """
    whole = len(data) - len(data) % entry.size
    used = -(-len(data[:whole].rstrip(b"\0")) // entry.size) * entry.size  # up to the last non-zero entry
    return entry.iter_unpack(data[:min(whole, used + entry.size)])


def offset_index_lines(data: bytes, base_offset: int, batches: Sequence[BatchHeader] | None,
                       path: str | os.PathLike, *, verify_only: bool = False) -> Iterator[DumpLine]:
    """Entries of a `.index` file's bytes, then the entries that miss the log.

    An entry is right when a batch of the log (`batches`, None: not checked) starts at its
    position and holds its offset, and its offset is above the previous entry's. Kafka asks
    for the batch's last offset to equal it, which holds for every index we or Kafka write.
    Listing stops at the first later entry naming the base offset again: the zero tail of a
    preallocated index.
    """
    entries = list(_index_entries(data, _OFFSET_ENTRY))
    if not entries:
        yield DumpLine(f"{os.fspath(path)} is empty.")
        return
    by_position = {h.position: h for h in batches or ()}
    mismatches: list[tuple[int, int]] = []
    not_increasing: list[tuple[int, int]] = []
    previous = -1
    for i, (relative, position) in enumerate(entries):
        if i > 0 and relative == 0:
            break
        offset = base_offset + relative
        batch = by_position.get(position)
        if batches is not None and (batch is None or not batch.base_offset <= offset <= batch.last_offset):
            mismatches.append((offset, batch.last_offset if batch else -1))
        if i > 0 and offset <= previous:
            not_increasing.append((offset, previous))
        previous = offset
        if not verify_only:
            yield DumpLine(f"offset: {offset} position: {position}")
    where = os.path.abspath(path)
    yield from _problems(f"Mismatches in :{where}", "  Index offset: {}, log offset: {}", mismatches)
    yield from _problems(f"Offsets not increasing in :{where}", "  Index offset: {}, previous index offset: {}",
                         not_increasing)


def time_index_lines(data: bytes, base_offset: int, batches: Sequence[BatchHeader] | None,
                     path: str | os.PathLike, *, verify_only: bool = False) -> Iterator[DumpLine]:
    """Entries of a `.timeindex` file's bytes, then Kafka's checks against the log.

    Each entry must name the last offset of a batch (`batches`, None: not checked) whose max
    timestamp is the entry's (Kafka takes the largest record timestamp; the header's is the
    same for every batch a broker wrote), and timestamps must increase. Listing stops at the
    zero tail as for `.index`.
    """
    last_offsets = [h.last_offset for h in batches or ()]
    not_found: list[tuple[int, int]] = []
    mismatches: list[tuple[int, int]] = []
    out_of_order: list[tuple[int, int]] = []
    previous_ts = -1
    for i, (timestamp, relative) in enumerate(_index_entries(data, _TIME_ENTRY)):
        if i > 0 and relative == 0:
            break
        offset = base_offset + relative
        if batches is not None:
            j = bisect_left(last_offsets, offset)
            batch = batches[j] if j < len(batches) else None
            if batch is None or batch.last_offset != offset:
                not_found.append((offset, batch.last_offset if batch else -1))
            else:
                if batch.max_timestamp != timestamp:
                    mismatches.append((timestamp, batch.max_timestamp))
                if previous_ts >= timestamp:
                    out_of_order.append((timestamp, previous_ts))
        previous_ts = timestamp
        if not verify_only:
            yield DumpLine(f"timestamp: {timestamp} offset: {offset}")
    where = os.path.abspath(path)
    yield from _problems(f"Found timestamp mismatch in :{where}", "  Index timestamp: {}, log timestamp: {}",
                         mismatches)
    yield from _problems(f"Found out of order timestamp in :{where}",
                         "  Index timestamp: {}, Previously indexed timestamp: {}", out_of_order)
    yield from _problems("The following indexed offsets are not found in the log.",
                         "Indexed offset: {}, found log offset: {}", not_found)


def _problems(heading: str, line: str, pairs: Iterable[tuple[int, int]]) -> Iterator[DumpLine]:
    pairs = list(pairs)
    if pairs:
        yield _problem(heading)
        for first, second in pairs:
            yield _problem(line.format(first, second))


# -- .snapshot ---------------------------------------------------------------------------

def snapshot_lines(data: bytes, path: str | os.PathLike) -> Iterator[DumpLine]:
    """One line per producer of a producer snapshot's bytes; a failed line if it is corrupt."""
    try:
        entries = ProducerStateManager.decode_snapshot(data)
    except CorruptSnapshotError as e:
        yield _problem(f"Corrupt producer snapshot {os.fspath(path)}: {e}")
        return
    for entry in entries:
        yield DumpLine(producer_line(entry))


# -- .txnindex ---------------------------------------------------------------------------

def txn_index_lines(data: bytes, path: str | os.PathLike) -> Iterator[DumpLine]:
    """Kafka's `dumpTxnIndex`: one line per whole entry (a torn last entry is skipped, as
    Kafka's reader skips it); a failed line for an entry of an unknown version."""
    try:
        entries = decode_entries(data)
    except CorruptTxnIndexError as e:
        yield _problem(f"Corrupt transaction index {os.fspath(path)}: {e}")
        return
    for txn in entries:
        yield DumpLine(f"version: 0 producerId: {txn.producer_id} firstOffset: {txn.first_offset} "
                       f"lastOffset: {txn.last_offset} lastStableOffset: {txn.last_stable_offset}")


def producer_line(entry: ProducerStateEntry) -> str:
    """Kafka's `dumpProducerIdSnapshot` line. Without batch metadata it ends after
    "lastTimestamp: T " with the trailing space, as Kafka's does."""
    text = (f"producerId: {entry.producer_id} producerEpoch: {entry.producer_epoch} "
            f"coordinatorEpoch: {entry.coordinator_epoch} "
            f"currentTxnFirstOffset: {_optional_long(entry.current_txn_first_offset)} "
            f"lastTimestamp: {entry.last_timestamp} ")
    if entry.batches:
        batch = entry.batches[0]
        text += (f"firstSequence: {batch.first_seq} lastSequence: {batch.last_seq} "
                 f"lastOffset: {batch.last_offset} offsetDelta: {batch.offset_delta} timestamp: {batch.timestamp}")
    return text
