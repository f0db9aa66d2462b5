"""Offset planning as Spark's Kafka source does it."""
from __future__ import annotations

import pytest

from rafka.common.types import TopicPartition as TP
from rafka.spark_bridge.options import OffsetSpec, OptionError
from rafka.spark_bridge.planning import (OffsetRange, Watermarks, admits, batch_ranges, rate_limit,
                                         resolve_offsets, split_ranges, stream_ranges, timestamps_to_look_up)

A0, A1, B0 = TP("a", 0), TP("a", 1), TP("b", 0)
MARKS = {A0: Watermarks(0, 100), A1: Watermarks(10, 20), B0: Watermarks(5, 5)}


def test_earliest_latest_and_sentinels_resolve_to_watermarks() -> None:
    assert resolve_offsets(OffsetSpec("earliest"), MARKS, side="starting") == {A0: 0, A1: 10, B0: 5}
    assert resolve_offsets(OffsetSpec("latest"), MARKS, side="ending") == {A0: 100, A1: 20, B0: 5}
    spec = OffsetSpec("offsets", {A0: 42, A1: -2, B0: -1})
    assert resolve_offsets(spec, MARKS, side="starting") == {A0: 42, A1: 10, B0: 5}


def test_per_partition_offsets_must_name_every_partition_read() -> None:
    with pytest.raises(OptionError, match="you must specify all TopicPartitions"):
        resolve_offsets(OffsetSpec("offsets", {A0: 1}), MARKS, side="starting")


def test_timestamps_resolve_to_found_offsets_or_latest_or_an_error() -> None:
    spec = OffsetSpec("timestamp", timestamp_ms=1000)
    assert timestamps_to_look_up(spec, [A0, B0]) == {A0: 1000, B0: 1000}
    found = {A0: 40, A1: None, B0: 5}
    assert resolve_offsets(spec, MARKS, found, side="ending") == {A0: 40, A1: 20, B0: 5}
    assert resolve_offsets(spec, MARKS, found, side="starting", timestamp_strategy="latest") == {A0: 40, A1: 20, B0: 5}
    with pytest.raises(OptionError, match="No offset matched from request of topic-partition a-1 and timestamp 1000"):
        resolve_offsets(spec, MARKS, found, side="starting")


def test_batch_start_below_the_log_start_is_data_loss() -> None:
    ranges, problems = batch_ranges({A1: 3}, {A1: 20}, MARKS, fail_on_data_loss=False)
    assert ranges == [OffsetRange(A1, 10, 20)] and "earliest available offset is 10" in problems[0]
    ranges, problems = batch_ranges({A1: 3}, {A1: 20}, MARKS, fail_on_data_loss=True)
    assert ranges == [OffsetRange(A1, 3, 20)] and problems


def test_batch_start_after_end_is_refused() -> None:
    with pytest.raises(OptionError, match="Beginning offset 50 is after the ending offset 40"):
        batch_ranges({A0: 50}, {A0: 40}, MARKS, fail_on_data_loss=True)


def test_split_keeps_ranges_when_there_are_enough() -> None:
    ranges = [OffsetRange(A0, 0, 100), OffsetRange(A1, 10, 10), OffsetRange(B0, 0, 5)]
    assert split_ranges(ranges, min_partitions=2) == [ranges[0], ranges[2]]


def test_split_cuts_large_ranges_in_proportion_and_leaves_small_ones_whole() -> None:
    # Spark's KafkaOffsetRangeCalculatorSuite: sizes 10000 and 1 with minPartitions 3.
    ranges = [OffsetRange(A0, 0, 10_000), OffsetRange(B0, 0, 1)]
    assert split_ranges(ranges, min_partitions=3) == [
        OffsetRange(A0, 0, 5000), OffsetRange(A0, 5000, 10_000), OffsetRange(B0, 0, 1)]


def test_split_pieces_are_contiguous_and_cover_the_range() -> None:
    pieces = split_ranges([OffsetRange(A0, 7, 1007)], min_partitions=7)
    assert len(pieces) == 7 and pieces[0].from_offset == 7 and pieces[-1].until_offset == 1007
    assert all(p.until_offset == q.from_offset for p, q in zip(pieces, pieces[1:]))
    assert max(p.size for p in pieces) - min(p.size for p in pieces) <= 1


def test_max_records_per_partition_cuts_before_min_partitions() -> None:
    assert [p.size for p in split_ranges([OffsetRange(A0, 0, 25)], max_records_per_partition=10)] == [8, 8, 9]


def test_rate_limit_shares_in_proportion_without_starving_small_partitions() -> None:
    start = {A0: 0, A1: 10, B0: 0}
    latest = {A0: 1000, A1: 11, B0: 0}
    assert rate_limit(start, latest, 100) == {A0: 99, A1: 11, B0: 0}
    assert rate_limit(start, latest, 10_000) == latest


def test_min_offsets_wait_for_enough_or_for_the_delay() -> None:
    assert admits(5, None, 0, 1000)
    assert not admits(5, 10, 999, 1000)
    assert admits(5, 10, 1000, 1000) and admits(10, 10, 0, 1000)


def test_stream_ranges_cover_new_partitions_from_their_start() -> None:
    ranges, problems = stream_ranges({A0: 10}, {A0: 50, A1: 20}, {A0: Watermarks(0, 50), A1: Watermarks(0, 20)})
    assert ranges == [OffsetRange(A0, 10, 50), OffsetRange(A1, 0, 20)] and problems == []


def test_stream_ranges_report_every_kind_of_loss() -> None:
    marks = {A0: Watermarks(30, 50), A1: Watermarks(4, 20), B0: Watermarks(0, 3)}
    ranges, problems = stream_ranges({A0: 10, B0: 8, TP("gone", 0): 1}, {A0: 50, A1: 20, B0: 3}, marks)
    assert ranges == [OffsetRange(A0, 30, 50), OffsetRange(A1, 4, 20)]
    text = " | ".join(problems)
    for expected in ("gone-0 is gone", "Added partition a-1 starts from 4 instead of 0",
                     "a-0's offset was changed from 10 to 30", "b-0's offset was changed from 8 to 3"):
        assert expected in text
