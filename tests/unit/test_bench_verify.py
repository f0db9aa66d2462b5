"""The benchmark's check of consumed records: each record once, each partition in produce order.
A duplicate, a gap, a reordering and a foreign record must each be caught."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from _verify import SequenceCheck, check_sequences, heads, stamp  # noqa: E402

# Records 0..11 as a sticky partitioner spreads them: runs of three per partition.
P0, P1 = [0, 1, 2, 6, 7, 8], [3, 4, 5, 9, 10, 11]


def batch_of(pairs: list[tuple[int, int]]) -> tuple[list[int], list[int]]:
    """(numbers, partitions) from (partition, number) pairs in read order."""
    return [n for _, n in pairs], [p for p, _ in pairs]


def clean_batches() -> list[tuple[list[int], list[int]]]:
    """Both partitions read interleaved, in two batches: what a correct broker returns."""
    first = [(0, 0), (0, 1), (1, 3), (0, 2), (1, 4), (1, 5)]
    second = [(1, 9), (0, 6), (0, 7), (1, 10), (1, 11), (0, 8)]
    return [batch_of(first), batch_of(second)]


def test_every_record_once_in_partition_order_passes() -> None:
    assert check_sequences(clean_batches(), 12) == []


def test_a_duplicate_within_a_partition_is_caught() -> None:
    batches = clean_batches()
    numbers, partitions = batches[1]
    batches[1] = (numbers + [8], partitions + [0])  # record 8 again, right after itself
    problems = check_sequences(batches, 12)
    assert any("record 8 read after record 8 (duplicate)" in p for p in problems), problems
    assert any("1 duplicate records" in p for p in problems), problems


def test_a_duplicate_from_an_earlier_batch_is_caught() -> None:
    batches = clean_batches() + [batch_of([(0, 1)])]  # record 1 re-read at the end
    problems = check_sequences(batches, 12)
    assert any("record 1 read after record 8 (duplicate)" in p for p in problems), problems


def test_a_duplicate_in_another_partition_is_caught() -> None:
    """Record 9 appears in both partitions: each partition alone still rises."""
    batches = clean_batches()
    batches.append(batch_of([(0, 9)]))  # partition 0 ends at 8, so 9 rises there; but 9 is partition 1's
    problems = check_sequences(batches, 12)
    assert problems == ["1 duplicate records (read 13 of 12 distinct)"]


def test_a_gap_is_caught_and_the_missing_records_named() -> None:
    numbers, partitions = clean_batches()[1]
    drop = numbers.index(7)
    del numbers[drop], partitions[drop]
    problems = check_sequences([clean_batches()[0], (numbers, partitions)], 12)
    assert problems == ["gap: 1 of 12 records never read (first: 7)"]


def test_records_never_read_at_the_end_are_a_gap() -> None:
    assert check_sequences(clean_batches()[:1], 12) == ["gap: 6 of 12 records never read (first: 6, 7, 8, 9, 10)"]


def test_a_reordering_within_a_partition_is_caught() -> None:
    first = batch_of([(0, 0), (0, 2), (0, 1), (1, 3), (1, 4), (1, 5)])
    problems = check_sequences([first, clean_batches()[1]], 12)
    assert any("partition 0: record 1 read after record 2 (out of order)" in p for p in problems), problems
    assert not any("duplicate" in p or "gap" in p for p in problems), problems


def test_a_reordering_across_batches_is_caught() -> None:
    first = batch_of([(0, 0), (0, 1), (0, 2), (0, 7), (1, 3), (1, 4), (1, 5)])
    second = batch_of([(0, 6), (0, 8), (1, 9), (1, 10), (1, 11)])
    problems = check_sequences([first, second], 12)
    assert any("partition 0: record 6 read after record 7 (out of order)" in p for p in problems), problems


def test_records_of_different_partitions_may_interleave_in_any_order() -> None:
    """Only each partition's own order counts: partition 1's records may come first."""
    first = batch_of([(1, 3), (1, 4), (1, 5), (1, 9), (0, 0), (0, 1)])
    second = batch_of([(1, 10), (0, 2), (0, 6), (1, 11), (0, 7), (0, 8)])
    assert check_sequences([first, second], 12) == []


def test_a_record_numbered_outside_the_run_is_caught() -> None:
    batches = clean_batches() + [batch_of([(1, 12)]), batch_of([(0, 2**64 - 1)])]
    problems = check_sequences(batches, 12)
    assert any("record numbered 12, not one of the 12 produced" in p for p in problems), problems
    assert any("2 records in all were not produced by this run" in p for p in problems), problems


def test_heads_reads_the_stamps_of_joined_values() -> None:
    for size in (8, 100, 1024):  # 100 is not a multiple of 8
        tail = b"\xff" * (size - 8)
        values = [stamp(n, tail) for n in (0, 1, 2**40, 2**64 - 1)]
        assert heads(b"".join(values), 4, size).tolist() == [0, 1, 2**40, 2**64 - 1]


def test_heads_refuses_values_of_another_size() -> None:
    with pytest.raises(ValueError):
        heads(stamp(0, b"x" * 92) + stamp(1, b"x" * 91), 2, 100)


def test_many_batches_with_numpy_arrays() -> None:
    """The consumer's shape: uint64 numbers, int32 partitions, a million records in batches."""
    count, partitions = 1_000_000, 6
    numbers = np.arange(count, dtype=np.uint64)
    owner = ((numbers // 1000) % partitions).astype(np.int32)  # sticky runs of 1,000
    check = SequenceCheck(count)
    for start in range(0, count, 10_000):
        check.add_batch(numbers[start:start + 10_000], owner[start:start + 10_000])
    assert check.finish() == []
    check.add_batch(numbers[:1], owner[:1])
    assert "1 duplicate records" in " ".join(check.finish())


def test_a_read_of_the_first_records_only_is_not_a_gap_but_still_checked() -> None:
    first = clean_batches()[:1]   # records 0-5 of 12, as a consume that stops early reads them
    check = SequenceCheck(12, whole=False)
    for numbers, partitions in first:
        check.add_batch(np.asarray(numbers, dtype=np.uint64), np.asarray(partitions, dtype=np.int32))
    assert check.finish() == []
    assert any("gap" in p for p in check_sequences(first, 12))   # the same read, when all was to be read
    again = SequenceCheck(12, whole=False)
    numbers, partitions = first[0]
    again.add_batch(np.asarray(numbers + [2], dtype=np.uint64), np.asarray(partitions + [0], dtype=np.int32))
    assert any("duplicate" in p for p in again.finish())
