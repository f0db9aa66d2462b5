"""A Spark Kafka job's `kafka.` options become librdkafka settings."""
from __future__ import annotations

import pytest

from rafka.spark_bridge.client_settings import ClientSettingError, max_block_ms, strip_prefix, to_librdkafka


def test_prefix_is_stripped_and_other_options_left_out() -> None:
    assert strip_prefix({"kafka.client.id": "x", "subscribe": "t"}) == {"client.id": "x"}


def test_java_names_are_renamed_dropped_or_translated() -> None:
    settings = to_librdkafka({
        "fetch.max.wait.ms": "100", "receive.buffer.bytes": "65536", "max.request.size": "2000000",
        "buffer.memory": "33554432", "max.poll.records": "500", "default.api.timeout.ms": "60000",
        "client.id": "job", "ssl.endpoint.identification.algorithm": "",
        "partitioner.class": "org.apache.kafka.clients.producer.internals.DefaultPartitioner"})
    assert settings == {"fetch.wait.max.ms": "100", "socket.receive.buffer.bytes": "65536",
                        "message.max.bytes": "2000000", "queue.buffering.max.kbytes": "32768",
                        "client.id": "job", "ssl.endpoint.identification.algorithm": "none"}


def test_plain_jaas_line_becomes_username_and_password() -> None:
    line = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="alice" '
            'password="s3\\"cret";')
    assert to_librdkafka({"sasl.jaas.config": line}) == {"sasl.username": "alice", "sasl.password": 's3"cret'}


@pytest.mark.parametrize("settings,word", [
    ({"sasl.jaas.config": "com.sun.security.auth.module.Krb5LoginModule required;"}, "PlainLoginModule"),
    ({"sasl.jaas.config": "x.PlainLoginModule required username=\"a\";"}, "password"),
    ({"partitioner.class": "org.example.MyPartitioner"}, "kafka.partitioner.class"),
], ids=["kerberos", "no-password", "custom-partitioner"])
def test_untranslatable_settings_are_errors_naming_them(settings: dict, word: str) -> None:
    with pytest.raises(ClientSettingError, match=word):
        to_librdkafka(settings)


def test_max_block_ms_is_read_by_the_bridge_and_kept_from_librdkafka_without_a_warning(caplog) -> None:
    with caplog.at_level("WARNING"):
        assert to_librdkafka({"max.block.ms": "5000", "acks": "all"}) == {"acks": "all"}
    assert caplog.records == []
    assert (max_block_ms({"max.block.ms": "5000"}), max_block_ms({}), max_block_ms({"max.block.ms": "0"})) == (
        5000, 60_000, 0)
    with pytest.raises(ClientSettingError, match="kafka.max.block.ms"):
        max_block_ms({"max.block.ms": "-1"})
