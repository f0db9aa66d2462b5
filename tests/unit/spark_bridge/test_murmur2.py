"""Kafka's murmur2 and default partitioner, against Kafka's own test vectors (UtilsTest)
and kafka-python's independent implementation."""
from __future__ import annotations

import random

import pytest
from kafka.partitioner.default import murmur2 as kafka_python_murmur2

from rafka.spark_bridge.murmur2 import murmur2, partition_for_key

# Kafka's clients/src/test/java/org/apache/kafka/common/utils/UtilsTest.java, testMurmur2.
JAVA_VECTORS = {
    b"21": -973932308,
    b"foobar": -790332482,
    b"a-little-bit-long-string": -985981536,
    b"a-little-bit-longer-string": -1486304829,
    b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
    b"abc": 479470107,
}


@pytest.mark.parametrize("data,expected", JAVA_VECTORS.items(), ids=[k.decode() for k in JAVA_VECTORS])
def test_murmur2_matches_kafka_java_vectors(data: bytes, expected: int) -> None:
    assert murmur2(data) == expected


def test_murmur2_agrees_with_kafka_python_on_random_keys_of_every_tail_length() -> None:
    rng = random.Random(26)
    for length in list(range(0, 40)) + [255, 1024]:
        for _ in range(20):
            key = bytes(rng.getrandbits(8) for _ in range(length))
            assert murmur2(key) & 0xFFFFFFFF == kafka_python_murmur2(key)


@pytest.mark.parametrize("partitions", [1, 3, 4, 12])
def test_partition_for_key_is_kafka_pythons_default_partitioner_choice(partitions: int) -> None:
    # kafka-python's DefaultPartitioner.partition: murmur2(key) & 0x7fffffff % len(all_partitions).
    # The Spark write test checks the partitions its real producer picks.
    for i in range(500):
        key = b"key-%d" % i
        assert partition_for_key(key, partitions) == (kafka_python_murmur2(key) & 0x7FFFFFFF) % partitions


def test_partition_for_key_refuses_a_topic_without_partitions() -> None:
    with pytest.raises(ValueError):
        partition_for_key(b"k", 0)
