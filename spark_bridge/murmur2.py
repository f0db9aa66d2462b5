"""Kafka's default partitioner for keyed records: murmur2 of the key bytes.

The same arithmetic as Kafka's `Utils.murmur2` and `BuiltInPartitioner.partitionForKey`
(Java client), kafka-python's `DefaultPartitioner` and librdkafka's `murmur2_random`, so a
row the Spark bridge writes with a key lands on the partition any of those clients would
choose for that key. Pure Python: no Spark, no Ray, no sockets.
"""
from __future__ import annotations

import struct

_SEED = 0x9747B28C
_M = 0x5BD1E995
_MASK = 0xFFFFFFFF


def murmur2(data: bytes) -> int:
    """Kafka's 32-bit murmur2 of `data`, as a signed int (what Java's `int` holds)."""
    length = len(data)
    h = (_SEED ^ length) & _MASK
    words = length // 4
    for (k,) in struct.iter_unpack("<I", data[: words * 4]):
        k = (k * _M) & _MASK
        k ^= k >> 24
        k = (k * _M) & _MASK
        h = ((h * _M) & _MASK) ^ k
    tail = length & 3
    if tail:
        base = words * 4
        if tail == 3:
            h ^= data[base + 2] << 16
        if tail >= 2:
            h ^= data[base + 1] << 8
        h ^= data[base]
        h = (h * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def partition_for_key(key: bytes, num_partitions: int) -> int:
    """The partition Kafka's default partitioner picks for a non-null key:
    `toPositive(murmur2(key)) % numPartitions`, where toPositive clears the sign bit."""
    if num_partitions <= 0:
        raise ValueError(f"a topic has at least one partition, got {num_partitions}")
    return (murmur2(key) & 0x7FFFFFFF) % num_partitions
