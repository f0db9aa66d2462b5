"""The aborted-transaction index of a segment (`<base offset>.txnindex`), Kafka's format.

Mirrors Kafka 3.9's `AbortedTxn` and `TransactionIndex` (storage module). One entry per
transaction whose ABORT marker is in the segment, in the order the markers were written,
34 bytes each, big-endian:

    int16 version = 0 | int64 producer_id | int64 first_offset | int64 last_offset |
    int64 last_stable_offset

`first_offset` is the transaction's first record in this partition (possibly in an earlier
segment), `last_offset` its marker's offset, `last_stable_offset` the partition's LSO just
after the marker: the first offset of the next still-open transaction of another producer, or
the marker's offset + 1 (`ProducerStateManager.last_stable_offset`). A read_committed fetch
(`collect_aborted_txns`) answers each aborted transaction overlapping its range with
(producer_id, first_offset), and stops at the first segment whose entry's LSO passes the end of
the range: a later segment's entries can only belong to transactions that started after it.

The file is created on the first append (most segments never see an abort), grows by whole
entries, and a trailing partial entry (a crash mid-write) is ignored by readers and cut by
`truncate_to`. Kafka reads the version as one byte (`buffer.get(0)`); a version above 0 is
refused here as there. Not safe for concurrent use: the owning replica serialises calls.
"""
from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple, Sequence

from rafka.common.errors import ErrorCode, KafkaError

TXN_INDEX_SUFFIX = ".txnindex"
ABORTED_TXN_VERSION = 0
_ENTRY = struct.Struct(">hqqqq")
ENTRY_SIZE = _ENTRY.size  # 34


class CorruptTxnIndexError(KafkaError):
    """An entry of an unknown version, or one that ends before the segment starts (Kafka's
    `sanityCheck`): the index is rebuilt from the log."""

    code = ErrorCode.CORRUPT_MESSAGE


class AbortedTxn(NamedTuple):
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int

    def to_bytes(self) -> bytes:
        return _ENTRY.pack(ABORTED_TXN_VERSION, *self)

    @staticmethod
    def from_bytes(data: bytes | memoryview, pos: int = 0) -> AbortedTxn:
        version, *fields = _ENTRY.unpack_from(data, pos)
        if version >> 8 > ABORTED_TXN_VERSION:  # Kafka reads the version's first byte only
            raise CorruptTxnIndexError(f"unexpected aborted transaction version {version}")
        return AbortedTxn(*fields)


@dataclass(frozen=True)
class TxnIndexSearchResult:
    """Aborted transactions of one segment in a fetch range; `is_complete`: no later segment
    can add any (Kafka's `TxnIndexSearchResult`)."""

    aborted: list[AbortedTxn]
    is_complete: bool


def txn_index_file_name(base_offset: int) -> str:
    """`00000000000000000042.txnindex`, as Kafka's `LogFileUtils.transactionIndexFile`."""
    return f"{base_offset:020d}{TXN_INDEX_SUFFIX}"


def decode_entries(data: bytes | memoryview) -> list[AbortedTxn]:
    """The whole entries of an index file's bytes (a trailing partial entry is ignored).
    Raises `CorruptTxnIndexError` for an entry of an unknown version."""
    whole = len(data) - len(data) % ENTRY_SIZE
    return [AbortedTxn.from_bytes(data, pos) for pos in range(0, whole, ENTRY_SIZE)]


def collect_from(entries: Sequence[AbortedTxn], fetch_offset: int, upper_bound_offset: int) -> TxnIndexSearchResult:
    """Kafka's `collectAbortedTxns` over one segment's entries: those with last offset >=
    `fetch_offset` and first offset < `upper_bound_offset` (exclusive); complete as soon as
    an entry's LSO reaches `upper_bound_offset`."""
    found = []
    for txn in entries:
        if txn.last_offset >= fetch_offset and txn.first_offset < upper_bound_offset:
            found.append(txn)
        if txn.last_stable_offset >= upper_bound_offset:
            return TxnIndexSearchResult(found, True)
    return TxnIndexSearchResult(found, False)


def collect_aborted_txns(segments: Sequence[tuple[int, Sequence[AbortedTxn]]], fetch_offset: int,
                         upper_bound_offset: int) -> list[AbortedTxn]:
    """The aborted transactions a read_committed fetch of [fetch_offset, upper_bound_offset)
    must report (Kafka's `LocalLog.collectAbortedTransactions`): `segments` are (base offset,
    entries) of every segment in offset order; the search starts at the segment holding
    `fetch_offset` and goes on through later ones until a result is complete."""
    start = 0
    for i, (base_offset, _) in enumerate(segments):
        if base_offset <= fetch_offset:
            start = i
    found: list[AbortedTxn] = []
    for _, entries in segments[start:]:
        result = collect_from(entries, fetch_offset, upper_bound_offset)
        found.extend(result.aborted)
        if result.is_complete:
            break
    return found


class TransactionIndex:
    """The `.txnindex` file of the segment starting at `start_offset` (format in the module
    docstring); its entries are also kept in memory, since they are few."""

    def __init__(self, start_offset: int, path: str | os.PathLike) -> None:
        self.start_offset = start_offset
        self.path = Path(path)
        self._entries: list[AbortedTxn] = []
        if self.path.exists():
            data = self.path.read_bytes()
            self._entries = decode_entries(data)
            if len(data) % ENTRY_SIZE:
                with open(self.path, "r+b") as f:   # a crash cut the last entry: drop it
                    f.truncate(len(self._entries) * ENTRY_SIZE)

    @property
    def entries(self) -> list[AbortedTxn]:
        """Every entry, in file order; callers must not modify it."""
        return self._entries

    @property
    def last_offset(self) -> int | None:
        return self._entries[-1].last_offset if self._entries else None

    def append(self, txn: AbortedTxn, *, fsync: bool = False) -> None:
        """Add an entry; its last offset must be above the previous one's (ValueError)."""
        if self._entries and self._entries[-1].last_offset >= txn.last_offset:
            raise ValueError(f"the last offset of appended transactions must increase: {txn.last_offset} is "
                             f"not above {self._entries[-1].last_offset} in {self.path}")
        with open(self.path, "ab") as f:
            f.write(txn.to_bytes())
            if fsync:
                f.flush()
                os.fsync(f.fileno())
        self._entries.append(txn)

    def flush(self) -> None:
        if self.path.exists():
            fd = os.open(self.path, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)

    def truncate_to(self, offset: int) -> None:
        """Drop the entries whose marker is at or above `offset` (the log was truncated there)."""
        keep = 0
        while keep < len(self._entries) and self._entries[keep].last_offset < offset:
            keep += 1
        if keep == len(self._entries):
            return
        del self._entries[keep:]
        with open(self.path, "r+b") as f:
            f.truncate(keep * ENTRY_SIZE)

    def reset(self) -> None:
        """Remove every entry (the index is rebuilt from the log)."""
        self._entries.clear()
        if self.path.exists():
            with open(self.path, "r+b") as f:
                f.truncate(0)

    def delete_if_exists(self) -> bool:
        self._entries.clear()
        try:
            self.path.unlink()
            return True
        except FileNotFoundError:
            return False

    def collect(self, fetch_offset: int, upper_bound_offset: int) -> TxnIndexSearchResult:
        return collect_from(self._entries, fetch_offset, upper_bound_offset)

    def sanity_check(self) -> None:
        """Kafka's check: every entry's marker is at or after the segment's start."""
        for txn in self._entries:
            if txn.last_offset < self.start_offset:
                raise CorruptTxnIndexError(
                    f"last offset of aborted transaction {txn} in index {self.path} is less than "
                    f"start offset {self.start_offset}")


__all__ = [
    "ABORTED_TXN_VERSION", "AbortedTxn", "CorruptTxnIndexError", "ENTRY_SIZE", "TXN_INDEX_SUFFIX",
    "TransactionIndex", "TxnIndexSearchResult", "collect_aborted_txns", "collect_from", "decode_entries",
    "txn_index_file_name",
]
