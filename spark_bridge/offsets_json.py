"""Spark's JSON for Kafka partitions and offsets, read and written exactly as Spark does.

    assign:                       {"topicA":[0,1],"topicB":[2,4]}
    startingOffsets/endingOffsets: {"topicA":{"0":23,"1":-1},"topicB":{"0":-2}}
    ...ByTimestamp:                {"topicA":{"0":1000,"1":1000}}

The streaming offset the bridge checkpoints is the same per-partition map as Spark's
`KafkaSourceOffset`: `{"topic":{"partition":offset}}`. In offset maps -2 means earliest and
-1 latest (Kafka's ListOffsets sentinels, and Spark's).
"""
from __future__ import annotations

import json
from typing import Mapping

from rafka.common.types import TopicPartition

EARLIEST = -2
LATEST = -1

_OFFSETS_EXAMPLE = '{"topicA":{"0":23,"1":-1},"topicB":{"0":-2}}'
_ASSIGN_EXAMPLE = '{"topicA":[0,1],"topicB":[2,4]}'


class OffsetJsonError(ValueError):
    """A JSON option that is not in Spark's shape; the message shows the shape expected."""


def _load(text: str, example: str) -> object:
    try:
        return json.loads(text)
    except ValueError:
        raise OffsetJsonError(f"Expected e.g. {example}, got {text}") from None


def parse_assign(text: str) -> list[TopicPartition]:
    """The `assign` option: topic → list of partition numbers."""
    data = _load(text, _ASSIGN_EXAMPLE)
    if not isinstance(data, dict) or not all(
            isinstance(parts, list) and all(type(p) is int for p in parts) for parts in data.values()):
        raise OffsetJsonError(f"Expected e.g. {_ASSIGN_EXAMPLE}, got {text}")
    return sorted(TopicPartition(topic, p) for topic, parts in data.items() for p in parts)


def parse_partition_numbers(text: str, what: str = "offsets") -> dict[TopicPartition, int]:
    """A per-partition map `{"topic":{"0":n}}` (offsets or timestamps) → {TopicPartition: n}."""
    data = _load(text, _OFFSETS_EXAMPLE)
    out: dict[TopicPartition, int] = {}
    if isinstance(data, dict):
        for topic, parts in data.items():
            if not isinstance(parts, dict):
                break
            for partition, number in parts.items():
                if not (isinstance(partition, str) and partition.lstrip("-").isdigit()) or type(number) is not int:
                    raise OffsetJsonError(f"Expected e.g. {_OFFSETS_EXAMPLE}, got {text} (bad {what} entry "
                                          f"{topic!r}: {partition!r} → {number!r})")
                out[TopicPartition(topic, int(partition))] = number
        else:
            return out
    raise OffsetJsonError(f"Expected e.g. {_OFFSETS_EXAMPLE}, got {text}")


def to_offset_dict(offsets: Mapping[TopicPartition, int]) -> dict[str, dict[str, int]]:
    """{TopicPartition: offset} → Spark's nested dict, topics and partitions in order."""
    out: dict[str, dict[str, int]] = {}
    for tp in sorted(offsets):
        out.setdefault(tp.topic, {})[str(tp.partition)] = offsets[tp]
    return out


def from_offset_dict(data: Mapping[str, Mapping[str, int]]) -> dict[TopicPartition, int]:
    """Inverse of `to_offset_dict` (what Spark hands back from its checkpoint)."""
    return {TopicPartition(topic, int(p)): int(o) for topic, parts in data.items() for p, o in parts.items()}


def format_partition_offsets(offsets: Mapping[TopicPartition, int]) -> str:
    """Spark's compact JSON text for an offset map: `{"t":{"0":5,"1":7}}`."""
    return json.dumps(to_offset_dict(offsets), separators=(",", ":"))
