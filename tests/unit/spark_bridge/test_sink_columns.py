"""Spark's KafkaWriter column rules."""
from __future__ import annotations

import pytest

from rafka.spark_bridge.sink_columns import SinkColumns, SinkSchemaError, sink_columns

HEADERS = "array<struct<key:string,value:binary>>"


def test_every_column_found_by_position_case_insensitively() -> None:
    types = {"Key": "string", "other": "int", "value": "binary", "TOPIC": "string", "partition": "int",
             "headers": HEADERS}
    assert sink_columns(types, None) == SinkColumns(value=2, key=0, topic=3, partition=4, headers=5)


def test_value_alone_with_the_topic_option() -> None:
    assert sink_columns({"value": "string"}, "t") == SinkColumns(value=0)


@pytest.mark.parametrize("types,topic,message", [
    ({"key": "string"}, "t", "Required attribute 'value' not found"),
    ({"value": "string"}, None, "topic option required"),
    ({"value": "int"}, "t", "value attribute type must be string or binary"),
    ({"value": "string", "partition": "bigint"}, "t", "partition attribute type must be int"),
    ({"value": "string", "topic": "binary"}, None, "topic attribute type must be string"),
    ({"value": "string", "headers": "array<string>"}, "t", "headers attribute type"),
], ids=["no-value", "no-topic", "value-int", "partition-long", "topic-binary", "headers-shape"])
def test_unusable_dataframes_are_refused_naming_the_column(types: dict, topic: str | None, message: str) -> None:
    with pytest.raises(SinkSchemaError, match=message):
        sink_columns(types, topic)
