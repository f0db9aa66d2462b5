"""Spark's Kafka source and sink options: names, defaults, precedence and refusals."""
from __future__ import annotations

import pytest

from rafka.common.types import TopicPartition as TP
from rafka.spark_bridge.options import (OffsetSpec, OptionError, Subscription, parse_read_options,
                                        parse_write_options)

BASE = {"kafka.bootstrap.servers": "127.0.0.1:9092", "subscribe": "t"}


def read(streaming: bool = False, **options: str):
    return parse_read_options({**BASE, **options}, streaming=streaming)


def test_batch_defaults_are_sparks() -> None:
    o = read()
    assert o.subscription == Subscription(topics=("t",))
    assert (o.starting, o.ending) == (OffsetSpec("earliest"), OffsetSpec("latest"))
    assert o.fail_on_data_loss and not o.include_headers
    assert o.group_id_prefix == "spark-kafka-relation"
    assert o.poll_timeout_ms == 120_000 and o.max_trigger_delay_ms == 15 * 60_000


def test_stream_defaults_start_at_latest() -> None:
    o = read(streaming=True)
    assert o.starting == OffsetSpec("latest") and o.group_id_prefix == "spark-kafka-source"


def test_option_names_are_case_insensitive_and_values_parsed() -> None:
    o = parse_read_options({"KAFKA.BOOTSTRAP.SERVERS": "h:1", "SubscribePattern": "t.*", "MINPARTITIONS": "8",
                            "maxoffsetspertrigger": "100", "minOffsetsPerTrigger": "10", "maxTriggerDelay": "30s",
                            "includeHeaders": "TRUE", "failOnDataLoss": "false", "groupIdPrefix": "g",
                            "kafka.client.id": "c", "kafkaConsumer.pollTimeoutMs": "5000"}, streaming=True)
    assert o.subscription == Subscription(pattern="t.*")
    assert (o.min_partitions, o.max_offsets_per_trigger, o.min_offsets_per_trigger) == (8, 100, 10)
    assert o.max_trigger_delay_ms == 30_000 and o.include_headers and not o.fail_on_data_loss
    assert o.group_id_prefix == "g" and o.client == {"client.id": "c"} and o.poll_timeout_ms == 5000


def test_assign_and_per_partition_offsets() -> None:
    o = parse_read_options({"kafka.bootstrap.servers": "h:1", "assign": '{"t":[0,1]}',
                            "startingOffsets": '{"t":{"0":5,"1":-2}}', "endingOffsets": '{"t":{"0":-1,"1":9}}'},
                           streaming=False)
    assert o.subscription.assigned == (TP("t", 0), TP("t", 1))
    assert o.starting == OffsetSpec("offsets", {TP("t", 0): 5, TP("t", 1): -2})
    assert o.ending == OffsetSpec("offsets", {TP("t", 0): -1, TP("t", 1): 9})


def test_timestamp_options_win_over_offsets_in_sparks_order() -> None:
    o = read(startingOffsets="earliest", startingOffsetsByTimestamp='{"t":{"0":5}}', startingTimestamp="1000",
             endingOffsetsByTimestamp='{"t":{"0":7}}')
    assert o.starting == OffsetSpec("timestamp", timestamp_ms=1000)
    assert o.ending == OffsetSpec("timestamps", {TP("t", 0): 7})


@pytest.mark.parametrize("options,message", [
    ({"startingOffset": "earliest"}, "Unknown option 'startingOffset'.*did you mean 'startingOffsets'"),
    ({"failOnDataLos": "false"}, "Unknown option 'failOnDataLos'"),
    ({"colour": "blue"}, "Unknown option 'colour'"),
    ({"startingOffsets": "latest"}, "starting offset can't be latest for batch queries"),
    ({"startingOffsets": '{"t":{"0":-1}}'}, "startingOffsets for t-0 can't be latest"),
    ({"endingOffsets": "earliest"}, "ending offset can't be earliest"),
    ({"endingOffsets": '{"t":{"0":-2}}'}, "endingOffsets for t-0 can't be earliest"),
    ({"startingOffsets": "sometime"}, "Option 'startingOffsets': Expected e.g."),
    ({"minPartitions": "0"}, "'minPartitions', must be a positive integer"),
    ({"failOnDataLoss": "maybe"}, "'failOnDataLoss' must be true or false"),
    ({"subscribePattern": "x"}, "Only one of the following options"),
    ({"subscribe": " , "}, "No topics to subscribe to"),
    ({"kafka.auto.offset.reset": "earliest"}, "Kafka option 'auto.offset.reset' is not supported"),
    ({"kafka.value.deserializer": "x"}, "'value.deserializer' is not supported"),
    ({"startingOffsetsByTimestampStrategy": "first"}, "'error' or 'latest'"),
    ({"maxTriggerDelay": "soon"}, "'maxTriggerDelay' must be a duration"),
], ids=lambda v: next(iter(v)) if isinstance(v, dict) else None)
def test_refusals_name_the_option(options: dict, message: str) -> None:
    with pytest.raises(OptionError, match=message):
        read(**options)


@pytest.mark.parametrize("name", ["endingOffsets", "endingTimestamp", "endingOffsetsByTimestamp"])
def test_ending_options_are_refused_in_streams(name: str) -> None:
    with pytest.raises(OptionError, match=f"{name} option not valid in streaming queries"):
        read(streaming=True, **{name: "1"})


def test_a_subscription_and_the_bootstrap_servers_are_required() -> None:
    with pytest.raises(OptionError, match="One of the following options must be specified"):
        parse_read_options({"kafka.bootstrap.servers": "h:1"}, streaming=False)
    with pytest.raises(OptionError, match="'kafka.bootstrap.servers' must be specified"):
        parse_read_options({"subscribe": "t"}, streaming=False)


def test_pattern_matches_whole_names_and_never_internal_topics() -> None:
    s = Subscription(pattern="orders.*")
    assert s.matches("orders-eu") and not s.matches("old-orders") and not Subscription(pattern=".*").matches(
        "__consumer_offsets")


def test_write_options_take_the_read_options_of_the_same_table() -> None:
    w = parse_write_options({**BASE, "topic": "out", "kafka.acks": "1", "checkpointLocation": "/tmp/c"})
    assert (w.topic, w.client) == ("out", {"acks": "1"})
    with pytest.raises(OptionError, match="'key.serializer' is not supported"):
        parse_write_options({**BASE, "kafka.key.serializer": "x"})
    with pytest.raises(OptionError, match="Unknown option 'topics'"):
        parse_write_options({**BASE, "topics": "x"})


def test_kafka_max_block_ms_bounds_the_sinks_wait_for_metadata_and_is_not_a_librdkafka_setting() -> None:
    assert parse_write_options({**BASE, "topic": "out"}).max_block_ms == 60_000  # Kafka's default
    w = parse_write_options({**BASE, "topic": "out", "kafka.max.block.ms": "1500", "kafka.retry.backoff.ms": "50"})
    assert (w.max_block_ms, w.client) == (1500, {"retry.backoff.ms": "50"})
    with pytest.raises(ValueError, match="kafka.max.block.ms must be a whole number"):
        parse_write_options({**BASE, "topic": "out", "kafka.max.block.ms": "soon"})
