"""Checking what a consumer read back: every record exactly once, each partition in produce order.

The producer stamps each value's first 8 bytes with the record's sequence number, big-endian,
0 to N-1 in produce() order (`stamp`). The producer leaves the partition to the client's
partitioner, so a partition holds an increasing, not contiguous, run of sequence numbers. The
consumer hands each batch to `SequenceCheck.add_batch`, which checks, per partition, that the
numbers only rise (a repeat is a duplicate, a fall a reordering or a duplicate of an earlier
record), and notes each number in a bitmap; `finish` then finds the duplicates across
partitions (records counted minus distinct numbers) and the gaps (numbers never read). A
consumer that reads only the first records it is given (`whole=False`) is checked for order,
duplicates and foreign records, not for gaps: it leaves records unread on purpose.

The checks are vectorised with numpy, so the consumer keeps most of its speed: per record it
costs two C-level method calls (value and partition), an 8-byte copy and a few numpy element
operations, against the Python loop over `msg.error()` it replaces.
"""
from __future__ import annotations

import struct
from collections.abc import Sequence

import numpy as np

HEAD = struct.Struct(">Q")
HEAD_BYTES = HEAD.size
# How many problems of each kind are described; the rest are counted.
SHOWN = 5


def stamp(sequence: int, tail: bytes) -> bytes:
    """A record value: `sequence` as 8 big-endian bytes, then `tail`."""
    return HEAD.pack(sequence) + tail


def heads(values: bytes, count: int, record_size: int) -> np.ndarray:
    """The sequence numbers of `count` values of `record_size` bytes each, joined in `values`."""
    if record_size < HEAD_BYTES or len(values) != count * record_size:
        raise ValueError(f"{len(values)} bytes are not {count} values of {record_size} bytes")
    table = np.frombuffer(values, dtype=np.uint8).reshape(count, record_size)
    return np.ascontiguousarray(table[:, :HEAD_BYTES]).view(">u8").ravel()


class SequenceCheck:
    """Consumed records against the `expected` stamped records produced (see the module doc);
    with `whole`, every one of them must have been read."""

    def __init__(self, expected: int, whole: bool = True) -> None:
        self.expected = expected
        self.whole = whole
        self.count = 0
        self.foreign = 0  # records whose number is not one the producer stamped
        self.disorder = 0  # records whose number did not rise within their partition
        self.problems: list[str] = []
        self._seen = np.zeros(expected, dtype=bool)
        self._last: dict[int, int] = {}  # partition -> the last number read from it

    def add_batch(self, numbers: np.ndarray, partitions: np.ndarray) -> None:
        """One consumed batch: `numbers[i]` read from partition `partitions[i]`, in order."""
        if not len(numbers):
            return
        self.count += len(numbers)
        numbers = numbers.astype(np.int64)  # stamps above 2**63 are foreign anyway
        valid = (numbers >= 0) & (numbers < self.expected)
        all_valid = bool(valid.all())
        if not all_valid:
            self._note_foreign(numbers[~valid], partitions[~valid])
        for partition in np.flatnonzero(np.bincount(partitions)).tolist():  # the partitions present, O(n)
            mine = numbers[partitions == partition]
            previous = self._last.get(partition, -1)
            if mine[0] <= previous or (len(mine) > 1 and not (mine[1:] > mine[:-1]).all()):
                self._note_disorder(partition, previous, mine)
            self._last[partition] = int(mine[-1])
        self._seen[numbers if all_valid else numbers[valid]] = True

    def _note_foreign(self, numbers: np.ndarray, partitions: np.ndarray) -> None:
        self.foreign += len(numbers)
        for number, partition in list(zip(numbers.tolist(), partitions.tolist()))[:SHOWN]:
            self._problem(f"partition {partition}: record numbered {number}, not one of the"
                          f" {self.expected:,} produced")

    def _note_disorder(self, partition: int, previous: int, numbers: np.ndarray) -> None:
        """Describe each record of `numbers` (one partition's, in read order) that did not rise."""
        before = np.concatenate(([previous], numbers[:-1]))
        for index in np.flatnonzero(numbers <= before).tolist():
            self.disorder += 1
            number, prior = int(numbers[index]), int(before[index])
            repeated = number == prior or (0 <= number < self.expected and bool(self._seen[number])) \
                or number in numbers[:index]
            kind = "duplicate" if repeated else "out of order"
            self._problem(f"partition {partition}: record {number:,} read after record {prior:,} ({kind})")

    def _problem(self, text: str) -> None:
        if len(self.problems) < SHOWN * 4:
            self.problems.append(text)

    def finish(self) -> list[str]:
        """Every problem found: the per-partition ones, then duplicates and (when the whole
        topic was to be read) gaps overall. Empty when each record read was read exactly once,
        in order, and with `whole` every one of the `expected` records was."""
        distinct = int(self._seen.sum())
        found = list(self.problems)
        if self.disorder:
            found.append(f"{self.disorder:,} records in all did not follow their partition's order")
        if self.foreign:
            found.append(f"{self.foreign:,} records in all were not produced by this run")
        duplicates = self.count - self.foreign - distinct
        if duplicates:
            found.append(f"{duplicates:,} duplicate records (read {self.count - self.foreign:,} of"
                         f" {distinct:,} distinct)")
        if self.whole and distinct < self.expected:
            missing = np.flatnonzero(~self._seen)
            first = ", ".join(f"{n:,}" for n in missing[:SHOWN].tolist())
            found.append(f"gap: {self.expected - distinct:,} of {self.expected:,} records never read"
                         f" (first: {first})")
        return found


def check_sequences(batches: Sequence[tuple[Sequence[int], Sequence[int]]], expected: int) -> list[str]:
    """`SequenceCheck` over (numbers, partitions) batches; its problems (empty: all good)."""
    check = SequenceCheck(expected)
    for numbers, partitions in batches:
        check.add_batch(np.asarray(numbers, dtype=np.uint64), np.asarray(partitions, dtype=np.int32))
    return check.finish()
