"""Spark's JSON for assign and per-partition offsets, both ways."""
from __future__ import annotations

import pytest

from rafka.common.types import TopicPartition as TP
from rafka.spark_bridge.offsets_json import (OffsetJsonError, format_partition_offsets, from_offset_dict,
                                             parse_assign, parse_partition_numbers, to_offset_dict)


def test_assign_lists_every_topic_partition_sorted() -> None:
    assert parse_assign('{"topicB":[2,4],"topicA":[1,0]}') == [TP("topicA", 0), TP("topicA", 1),
                                                                TP("topicB", 2), TP("topicB", 4)]


@pytest.mark.parametrize("text", ['["a"]', '{"a":0}', '{"a":["0"]}', "not json"],
                         ids=["list", "number", "string-partitions", "garbage"])
def test_assign_refuses_other_shapes_showing_the_expected_one(text: str) -> None:
    with pytest.raises(OffsetJsonError, match=r'\{"topicA":\[0,1\]'):
        parse_assign(text)


def test_partition_offsets_keep_earliest_and_latest_sentinels() -> None:
    assert parse_partition_numbers('{"topicA":{"0":23,"1":-1},"topicB":{"0":-2}}') == {
        TP("topicA", 0): 23, TP("topicA", 1): -1, TP("topicB", 0): -2}


@pytest.mark.parametrize("text", ['{"a":{"x":1}}', '{"a":{"0":"1"}}', '{"a":[0]}', '[1]', '{"a":{"0":1.5}}'],
                         ids=["partition-not-number", "offset-string", "list", "top-list", "float"])
def test_partition_offsets_refuse_other_shapes(text: str) -> None:
    with pytest.raises(OffsetJsonError, match="Expected e.g."):
        parse_partition_numbers(text)


def test_offset_dict_round_trips_in_sparks_compact_format() -> None:
    offsets = {TP("b", 10): 7, TP("a", 2): 5, TP("a", 0): 0}
    assert to_offset_dict(offsets) == {"a": {"0": 0, "2": 5}, "b": {"10": 7}}
    assert from_offset_dict(to_offset_dict(offsets)) == offsets
    assert format_partition_offsets(offsets) == '{"a":{"0":0,"2":5},"b":{"10":7}}'
