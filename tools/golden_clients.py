"""What each real client does while `tools/record_golden.py` records it: its ordinary work.

Each scenario takes the bootstrap address (the recording proxy) and names of its own for the
topic and the group, and goes through: topic creation with a config, metadata, describe and
alter configs, produce with every codec (none, gzip, snappy, lz4, zstd), an idempotent and an
acks=0 producer, a group consumer (join, sync, heartbeat, fetch, commit, committed offsets,
leave), list offsets, group listing/description/deletion, topic deletion. A step the broker or
the client refuses is logged and skipped: the recording keeps whatever was exchanged.
"""
from __future__ import annotations

import asyncio
import logging
import subprocess
import time
from typing import Callable

log = logging.getLogger("golden_clients")

CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
RECORDS_PER_BATCH = 4  # small messages keep the golden files small
VALUE = b"golden-value-" + b"x" * 16


def _step(name: str, fn: Callable[[], object]) -> None:
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - a refused step is part of what we record
        log.warning("  step %s failed: %r", name, e)


def expected_records() -> int:
    return len(CODECS) * RECORDS_PER_BATCH


def kafka_python(bootstrap: str, topic: str, group: str) -> None:
    from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
    from kafka.admin import ConfigResource, ConfigResourceType, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="golden-kafka-python")
    _step("create_topics", lambda: admin.create_topics(
        [NewTopic(topic, 2, 1, topic_configs={"retention.ms": "3600000"})], timeout_ms=30000))
    _step("describe_topics", lambda: admin.describe_topics([topic]))
    _step("describe_cluster", admin.describe_cluster)
    resource = ConfigResource(ConfigResourceType.TOPIC, topic)
    _step("describe_configs", lambda: admin.describe_configs([resource]))
    _step("alter_configs", lambda: admin.alter_configs(
        [ConfigResource(ConfigResourceType.TOPIC, topic, configs={"retention.ms": "7200000"})]))
    for codec in CODECS:
        producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5,
                                 compression_type=None if codec == "none" else codec)
        for i in range(RECORDS_PER_BATCH):
            producer.send(topic, key=b"k%d" % i, value=VALUE, headers=[("codec", codec.encode())], partition=0)
        producer.flush(timeout=30)
        producer.close()
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks=0, enable_idempotence=False)
    producer.send(topic, value=b"acks0", partition=1)
    producer.flush(timeout=30)
    producer.close()

    consumer = KafkaConsumer(topic, group_id=group, bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                             enable_auto_commit=False, consumer_timeout_ms=20000)
    seen = 0
    for _ in consumer:
        seen += 1
        if seen >= expected_records():
            break
    log.info("  kafka-python consumed %d records", seen)
    _step("commit", consumer.commit)
    tps = [TopicPartition(topic, 0), TopicPartition(topic, 1)]
    _step("committed", lambda: consumer.committed(tps[0]))
    _step("end_offsets", lambda: consumer.end_offsets(tps))
    _step("beginning_offsets", lambda: consumer.beginning_offsets(tps))
    _step("offsets_for_times", lambda: consumer.offsets_for_times({tps[0]: int(time.time() * 1000) - 60000}))
    consumer.close()
    _step("list_groups", admin.list_groups)
    _step("describe_groups", lambda: admin.describe_groups([group]))
    _step("list_group_offsets", lambda: admin.list_group_offsets(group))
    _step("delete_records", lambda: admin.delete_records({tps[0]: 1}))
    _step("delete_groups", lambda: admin.delete_groups([group]))
    _step("delete_topics", lambda: admin.delete_topics([topic], timeout_ms=30000))
    admin.close()


def confluent(bootstrap: str, topic: str, group: str) -> None:
    from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, Producer, TopicPartition
    from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic,
                                       OffsetSpec)

    base = {"bootstrap.servers": bootstrap, "client.id": "golden-confluent"}
    admin = AdminClient(base)

    def wait(futures: dict) -> None:
        for f in futures.values():
            f.result(timeout=30)

    _step("create_topics", lambda: wait(admin.create_topics(
        [NewTopic(topic, 2, 1, config={"retention.ms": "3600000"})])))
    _step("list_topics", lambda: admin.list_topics(timeout=30))
    _step("describe_cluster", lambda: admin.describe_cluster().result(timeout=30))
    _step("describe_configs", lambda: wait(admin.describe_configs([ConfigResource("topic", topic)])))
    _step("incremental_alter_configs", lambda: wait(admin.incremental_alter_configs([ConfigResource(
        "topic", topic, incremental_configs=[ConfigEntry("retention.ms", "7200000",
                                                         incremental_operation=AlterConfigOpType.SET)])])))
    _step("alter_configs", lambda: wait(admin.alter_configs(
        [ConfigResource("topic", topic, set_config={"retention.ms": "5400000"})])))
    for codec in CODECS:
        producer = Producer({**base, "compression.type": codec, "linger.ms": 5})
        for i in range(RECORDS_PER_BATCH):
            producer.produce(topic, key=b"k%d" % i, value=VALUE, headers=[("codec", codec.encode())], partition=0)
        producer.flush(30)
    producer = Producer({**base, "acks": 0, "enable.idempotence": False})
    producer.produce(topic, value=b"acks0", partition=1)
    producer.flush(30)
    producer = Producer({**base, "enable.idempotence": True})
    producer.produce(topic, value=b"idempotent", partition=1)
    producer.flush(30)

    consumer = Consumer({**base, "group.id": group, "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe([topic])
    seen, deadline = 0, time.monotonic() + 30
    while seen < expected_records() and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is not None and msg.error() is None and msg.partition() == 0:
            seen += 1
    log.info("  confluent consumed %d records", seen)
    _step("commit", lambda: consumer.commit(asynchronous=False))
    tps = [TopicPartition(topic, 0), TopicPartition(topic, 1)]
    _step("committed", lambda: consumer.committed(tps, timeout=30))
    _step("watermarks", lambda: consumer.get_watermark_offsets(tps[0], timeout=30))
    _step("offsets_for_times", lambda: consumer.offsets_for_times(
        [TopicPartition(topic, 0, int(time.time() * 1000) - 60000)], timeout=30))
    consumer.close()
    _step("list_offsets", lambda: wait(admin.list_offsets({TopicPartition(topic, 0): OffsetSpec.latest()})))
    _step("list_consumer_groups", lambda: admin.list_consumer_groups().result(timeout=30))
    _step("describe_consumer_groups", lambda: wait(admin.describe_consumer_groups([group])))
    _step("list_consumer_group_offsets", lambda: wait(admin.list_consumer_group_offsets(
        [ConsumerGroupTopicPartitions(group)])))
    _step("delete_records", lambda: wait(admin.delete_records([TopicPartition(topic, 0, 1)])))
    _step("delete_consumer_groups", lambda: wait(admin.delete_consumer_groups([group])))
    _step("delete_topics", lambda: wait(admin.delete_topics([topic])))


def aiokafka(bootstrap: str, topic: str, group: str) -> None:
    asyncio.run(_aiokafka(bootstrap, topic, group))


async def _astep(name: str, coro: object) -> None:
    try:
        await coro  # type: ignore[misc]
    except Exception as e:  # noqa: BLE001
        log.warning("  step %s failed: %r", name, e)


async def _aiokafka(bootstrap: str, topic: str, group: str) -> None:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic, RecordsToDelete
    from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, client_id="golden-aiokafka")
    await admin.start()
    await _astep("create_topics", admin.create_topics(
        [NewTopic(topic, 2, 1, topic_configs={"retention.ms": "3600000"})], timeout_ms=30000))
    await _astep("describe_topics", admin.describe_topics([topic]))
    await _astep("describe_cluster", admin.describe_cluster())
    await _astep("describe_configs", admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)]))
    await _astep("alter_configs", admin.alter_configs(
        [ConfigResource(ConfigResourceType.TOPIC, topic, configs={"retention.ms": "7200000"})]))
    for codec in CODECS:
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=5,
                                    compression_type=None if codec == "none" else codec)
        await producer.start()
        try:
            batch = [producer.send(topic, key=b"k%d" % i, value=VALUE, headers=[("codec", codec.encode())],
                                   partition=0) for i in range(RECORDS_PER_BATCH)]
            for f in await asyncio.gather(*batch):
                await f
        finally:
            await producer.stop()
    for options in ({"acks": 0}, {"enable_idempotence": True}):
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, **options)
        await producer.start()
        try:
            await producer.send_and_wait(topic, value=b"other", partition=1)
        finally:
            await producer.stop()

    consumer = AIOKafkaConsumer(topic, group_id=group, bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                                enable_auto_commit=False)
    await consumer.start()
    seen, deadline = 0, time.monotonic() + 30
    while seen < expected_records() and time.monotonic() < deadline:
        batches = await consumer.getmany(timeout_ms=500)
        seen += sum(len(v) for tp, v in batches.items() if tp.partition == 0)
    log.info("  aiokafka consumed %d records", seen)
    tps = [TopicPartition(topic, 0), TopicPartition(topic, 1)]
    await _astep("commit", consumer.commit())
    await _astep("committed", consumer.committed(tps[0]))
    await _astep("end_offsets", consumer.end_offsets(tps))
    await _astep("beginning_offsets", consumer.beginning_offsets(tps))
    await _astep("offsets_for_times", consumer.offsets_for_times({tps[0]: int(time.time() * 1000) - 60000}))
    await consumer.stop()
    await _astep("list_consumer_groups", admin.list_consumer_groups())
    await _astep("describe_consumer_groups", admin.describe_consumer_groups([group]))
    await _astep("list_consumer_group_offsets", admin.list_consumer_group_offsets(group))
    await _astep("delete_records", admin.delete_records({tps[0]: RecordsToDelete(1)}))
    await _astep("delete_topics", admin.delete_topics([topic], timeout_ms=30000))
    await admin.close()


def kcat(bootstrap: str, topic: str, group: str) -> None:
    def run(*args: str, stdin: bytes = b"") -> None:
        try:
            done = subprocess.run(["kcat", "-b", bootstrap, *args], input=stdin, capture_output=True, timeout=60)
        except subprocess.TimeoutExpired:
            log.warning("  kcat %s: no exit within 60 s", " ".join(args))
            return
        if done.returncode != 0:
            log.warning("  kcat %s: exit %d %s", " ".join(args), done.returncode, done.stderr.decode()[-300:])

    lines = b"".join(b"k%d:%s\n" % (i, VALUE) for i in range(RECORDS_PER_BATCH))
    for codec in CODECS:
        run("-P", "-t", topic, "-p", "0", "-K", ":", "-z", codec, "-H", f"codec={codec}", stdin=lines)
    run("-L", "-t", topic)
    run("-C", "-t", topic, "-p", "0", "-o", "beginning", "-e", "-q")
    run("-Q", "-t", f"{topic}:0:{int(time.time() * 1000) - 60000}")
    run("-C", "-G", group, topic, "-c", str(expected_records()), "-e", "-q", "-X", "auto.offset.reset=earliest")


SCENARIOS: dict[str, Callable[[str, str, str], None]] = {
    "kafka-python": kafka_python, "confluent-kafka": confluent, "aiokafka": aiokafka, "kcat": kcat}
