"""Offset arithmetic of a Kafka read, as Spark's Kafka source does it: resolving where a read
starts and ends, splitting ranges for `minPartitions`, limiting a micro-batch to
`maxOffsetsPerTrigger`, and noticing offsets that retention (or a deleted topic) took away.

Pure: the Kafka lookups (watermarks, offsets for timestamps) are done by the caller and
passed in as maps, so every decision here is testable without a broker.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable, Mapping

from rafka.common.types import TopicPartition
from rafka.spark_bridge.offsets_json import EARLIEST, LATEST
from rafka.spark_bridge.options import OffsetSpec, OptionError


@dataclass(frozen=True, order=True)
class OffsetRange:
    """Offsets [from_offset, until_offset) of one partition: what one Spark task reads."""

    tp: TopicPartition
    from_offset: int
    until_offset: int

    @property
    def size(self) -> int:
        return self.until_offset - self.from_offset


@dataclass(frozen=True)
class Watermarks:
    """A partition's log start offset and high watermark, as ListOffsets answers them."""

    earliest: int
    latest: int


class DataLossError(RuntimeError):
    """Offsets a query needed are gone (retention, DeleteRecords, a deleted topic)."""


_LOSS_TAIL_FAIL = ('Some data may have been lost because they are not available in Kafka any more; either the data '
                   'was aged out by Kafka or the topic may have been deleted before all the data in the topic was '
                   'processed. If you don\'t want your streaming query to fail on such cases, set the source option '
                   '"failOnDataLoss" to "false".')
_LOSS_TAIL_WARN = ('Some data may have been lost because they are not available in Kafka any more; either the data '
                   'was aged out by Kafka or the topic may have been deleted before all the data in the topic was '
                   'processed. If you want your streaming query to fail on such cases, set the source option '
                   '"failOnDataLoss" to "true".')


def data_loss_message(problems: Iterable[str], failing: bool) -> str:
    """Spark's data-loss text, preceded by what exactly went missing."""
    return "; ".join(problems) + ". " + (_LOSS_TAIL_FAIL if failing else _LOSS_TAIL_WARN)


# -- resolving the option --------------------------------------------------------------------
def resolve_offsets(spec: OffsetSpec, marks: Mapping[TopicPartition, Watermarks],
                    found_by_time: Mapping[TopicPartition, int | None] | None = None, *,
                    side: str, timestamp_strategy: str = "error") -> dict[TopicPartition, int]:
    """Concrete offsets for every partition in `marks` from a starting/ending option.

    `found_by_time[tp]` is the first offset whose timestamp is ≥ the asked one (Kafka's
    ListOffsets by time), or None when no record is that new: a start then fails
    (`startingOffsetsByTimestampStrategy=error`, Spark's default) or takes latest; an end
    takes latest. Per-partition JSON must name exactly the partitions read, as in Spark.
    """
    if spec.kind == "earliest":
        return {tp: m.earliest for tp, m in marks.items()}
    if spec.kind == "latest":
        return {tp: m.latest for tp, m in marks.items()}
    if spec.kind in ("offsets", "timestamps") and set(spec.per_partition) != set(marks):
        given = ", ".join(map(str, sorted(spec.per_partition)))
        assigned = ", ".join(map(str, sorted(marks)))
        raise OptionError(f"If {side}Offsets{'ByTimestamp' if spec.kind == 'timestamps' else ''} contains specific "
                          f"offsets, you must specify all TopicPartitions. Use -1 for latest, -2 for earliest. "
                          f"Specified: {given} Assigned: {assigned}")
    if spec.kind == "offsets":
        return {tp: _sentinel(spec.per_partition[tp], m) for tp, m in marks.items()}
    out: dict[TopicPartition, int] = {}
    for tp, m in marks.items():
        found = (found_by_time or {}).get(tp)
        if found is None or found < 0:
            if side == "starting" and timestamp_strategy == "error":
                wanted = spec.timestamp_ms if spec.kind == "timestamp" else spec.per_partition[tp]
                raise OptionError(f"No offset matched from request of topic-partition {tp} and timestamp {wanted}.")
            found = m.latest
        out[tp] = found
    return out


def timestamps_to_look_up(spec: OffsetSpec, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
    """The (partition → timestamp) questions a timestamp option asks Kafka; {} for the others."""
    if spec.kind == "timestamp":
        return {tp: int(spec.timestamp_ms or 0) for tp in partitions}
    if spec.kind == "timestamps":
        return dict(spec.per_partition)
    return {}


def _sentinel(offset: int, marks: Watermarks) -> int:
    return marks.earliest if offset == EARLIEST else marks.latest if offset == LATEST else offset


# -- batch ranges --------------------------------------------------------------------------------
def batch_ranges(start: Mapping[TopicPartition, int], end: Mapping[TopicPartition, int],
                 marks: Mapping[TopicPartition, Watermarks],
                 fail_on_data_loss: bool) -> tuple[list[OffsetRange], list[str]]:
    """One range per partition; a start below the log start is data loss (moved up when
    not failing). Returns the ranges and the data-loss problems found."""
    ranges, problems = [], []
    for tp in sorted(end):
        begin, until = start[tp], end[tp]
        if begin < marks[tp].earliest:
            problems.append(f"Cannot fetch offset {begin} of {tp}: the earliest available offset is "
                            f"{marks[tp].earliest}")
            begin = min(marks[tp].earliest, until) if not fail_on_data_loss else begin
        if begin > until:
            raise OptionError(f"Beginning offset {begin} is after the ending offset {until} for topic {tp.topic} "
                              f"partition {tp.partition}. You either provided an invalid fromOffset, or the Kafka "
                              "topic has been damaged")
        ranges.append(OffsetRange(tp, begin, until))
    return ranges, problems


def split_ranges(ranges: Iterable[OffsetRange], min_partitions: int | None = None,
                 max_records_per_partition: int | None = None) -> list[OffsetRange]:
    """Spark's KafkaOffsetRangeCalculator: drop empty ranges, cut any range above
    `max_records_per_partition`, then, while there are fewer than `min_partitions`, split the
    large ranges in proportion to their size (small ones stay whole)."""
    out = [r for r in ranges if r.size > 0]
    if max_records_per_partition:
        out = [piece for r in out for piece in _split_evenly(r, math.ceil(r.size / max_records_per_partition))]
    if not min_partitions or len(out) >= min_partitions:
        return out
    total = sum(r.size for r in out)
    unsplit = [r for r in out if _part_count(r.size, total, min_partitions) == 1]
    split_total = total - sum(r.size for r in unsplit)
    split_min = max(min_partitions - len(unsplit), 1)
    return [piece for r in out for piece in _split_evenly(r, _part_count(r.size, split_total, split_min))]


def _part_count(size: int, total: int, min_parts: int) -> int:
    # Scala's math.round rounds halves up.
    return max(math.floor(size / total * min_parts + 0.5), 1) if total else 1


def _split_evenly(r: OffsetRange, parts: int) -> list[OffsetRange]:
    """`parts` consecutive pieces; integer division, the last piece takes the remainder."""
    pieces, remaining, begin = [], r.size, r.from_offset
    for part in range(max(parts, 1)):
        this = remaining // (parts - part)
        remaining -= this
        end = min(begin + this, r.until_offset)
        pieces.append(OffsetRange(r.tp, begin, end))
        begin = end
    return [p for p in pieces if p.size > 0]


# -- micro-batches ---------------------------------------------------------------------------------
def rate_limit(start: Mapping[TopicPartition, int], latest: Mapping[TopicPartition, int],
               limit: int) -> dict[TopicPartition, int]:
    """Spark's `rateLimit`: share `limit` offsets among the partitions in proportion to
    what each has waiting; a partition's share is floored, but never starved to 0 when it
    has something (a share under 1 is rounded up). `start` holds every partition of
    `latest` (a new partition's start is its earliest offset)."""
    sizes = {tp: end - start[tp] for tp, end in latest.items() if end - start[tp] > 0}
    total = sum(sizes.values())
    if total < 1:
        return dict(latest)
    out = {}
    for tp, end in latest.items():
        if tp not in sizes:
            out[tp] = end
            continue
        share = limit * (sizes[tp] / total)
        out[tp] = min(end, start[tp] + (math.ceil(share) if share < 1 else math.floor(share)))
    return out


def pending(start: Mapping[TopicPartition, int], latest: Mapping[TopicPartition, int]) -> int:
    """How many offsets wait between `start` and `latest`."""
    return sum(max(0, end - start.get(tp, end)) for tp, end in latest.items())


def admits(waiting: int, min_offsets: int | None, since_last_trigger_ms: int, max_trigger_delay_ms: int) -> bool:
    """`minOffsetsPerTrigger`: run a batch once enough offsets wait, or once `maxTriggerDelay`
    has passed since the last batch (Spark's KafkaMicroBatchStream.delayBatch)."""
    if not min_offsets or waiting >= min_offsets:
        return True
    return since_last_trigger_ms >= max_trigger_delay_ms


def stream_ranges(start: Mapping[TopicPartition, int], end: Mapping[TopicPartition, int],
                  marks: Mapping[TopicPartition, Watermarks]) -> tuple[list[OffsetRange], list[str]]:
    """The ranges of one micro-batch and the data-loss problems on the way (Spark's
    KafkaMicroBatchStream.planInputPartitions): a partition missing from `end` was deleted;
    a new partition should start at 0; a start below the log start or an end below the start
    (topic recreated) lost offsets. Ranges start no lower than the log start."""
    problems = [f"{tp} is gone (deleted topic or partition) at offset {off}"
                for tp, off in sorted(start.items()) if tp not in end]
    ranges = []
    for tp in sorted(end):
        if tp in start:
            begin = start[tp]
        else:
            begin = marks[tp].earliest if tp in marks else 0
            if begin != 0:
                problems.append(f"Added partition {tp} starts from {begin} instead of 0")
        if tp in marks and begin < marks[tp].earliest:
            problems.append(f"Partition {tp}'s offset was changed from {begin} to {marks[tp].earliest} "
                            f"(offsets {begin}..{marks[tp].earliest - 1} are gone)")
            begin = marks[tp].earliest
        if end[tp] < begin:
            problems.append(f"Partition {tp}'s offset was changed from {begin} to {end[tp]}")
            continue
        ranges.append(OffsetRange(tp, begin, end[tp]))
    return ranges, problems
