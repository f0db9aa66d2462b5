"""The benchmark's instant stand-in broker: it answers whole batches from memory, and a real
confluent-kafka consumer reads every record back from it, in order."""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from _instant_broker import build_partition, instant_broker
from confluent_kafka import Consumer, TopicPartition
from rafka.partition_worker.record_batch import decode_records, iter_batches


def test_a_read_is_whole_batches_from_the_one_holding_the_offset() -> None:
    data = build_partition(records=10_000, record_size=1000)  # batches of about 256 KiB
    batches = list(iter_batches(data.blob))
    assert [b.base_offset for b in batches] == list(data.base_offsets)
    assert batches[-1].next_offset == data.end_offset == 10_000

    second = batches[1]
    view = data.read(second.base_offset + 3, 1 << 20)
    read = list(iter_batches(view))
    assert read[0].base_offset == second.base_offset  # the batch holding the offset, from its start
    assert sum(b.size for b in read) == len(view) <= 1 << 20
    assert len(view) + batches[len(read) + 1].size > 1 << 20  # as many whole batches as fit

    assert len(data.read(0, 10)) == batches[0].size  # at least one batch, however small the limit
    assert len(data.read(10_000, 1 << 20)) == 0  # at the end: nothing


def test_a_real_consumer_reads_every_record_in_order() -> None:
    with instant_broker("ceiling", partitions=3, records=3000, record_size=100) as bootstrap:
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "g", "enable.auto.commit": False})
        try:
            consumer.assign([TopicPartition("ceiling", p, 0) for p in range(3)])
            offsets: dict[int, list[int]] = {0: [], 1: [], 2: []}
            for _ in range(100):
                for message in consumer.consume(1000, 0.2):
                    assert message.error() is None
                    assert len(message.value()) == 100
                    offsets[message.partition()].append(message.offset())
                if sum(map(len, offsets.values())) >= 3000:
                    break
        finally:
            consumer.close()
    assert offsets == {p: list(range(1000)) for p in range(3)}


def test_records_decode_with_valid_checksums() -> None:
    data = build_partition(records=5, record_size=7)
    _, records = decode_records(data.blob)  # verifies the CRC
    assert [r.offset for r in records] == [0, 1, 2, 3, 4]
    assert all(r.key is None and len(r.value) == 7 for r in records)


def test_values_carry_the_sequence_numbers_the_producer_would_stamp() -> None:
    """Partition 1 of 3 holds records 1, 4, 7, ...: the consume ceiling checks them as a run's."""
    data = build_partition(records=4, record_size=100, first=1, step=3)
    _, records = decode_records(data.blob)
    assert [int.from_bytes(r.value[:8], "big") for r in records] == [1, 4, 7, 10]
    assert {len(r.value) for r in records} == {100}


def test_the_consume_ceiling_reads_and_checks_every_record() -> None:
    import _kafka

    result = _kafka.consume_ceiling(100, 30_000, idle_timeout_s=10)
    assert result.consumed == result.consumed_defaults == 30_000
