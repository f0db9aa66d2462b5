"""Log compaction end to end: confluent-kafka produces repeated keys to a compacted topic, the
broker's cleaner compacts it while a consumer reads, and a fresh consumer from offset 0 then
sees exactly the latest value of every key in fewer records than were produced."""
from __future__ import annotations

import os
import threading
import time

import pytest

from tests.waiting import wait_until

TOPIC = "compacted"
KEYS = 40
ROUNDS = 40


@pytest.fixture(scope="module")
def compaction_bootstrap(tmp_path_factory):
    """A broker of its own whose cleaner wakes every 100 ms (log.cleaner.backoff.ms)."""
    from rafka.cluster import Cluster
    from rafka.common.config import BrokerConfig

    config = BrokerConfig().replace(log_cleaner_backoff_ms=100, log_cleaner_dedupe_buffer_size=1 << 20)
    cluster = Cluster(tmp_path_factory.mktemp("compaction"), brokers=1, first_port=0, config=config,
                      namespace="rafka-compaction")
    cluster.start()
    yield cluster
    cluster.stop()


def read_all(bootstrap: str, group: str) -> list[tuple[int, bytes, bytes | None]]:
    """(offset, key, value) of every record from offset 0 to the high watermark."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        _, high = consumer.get_watermark_offsets(TopicPartition(TOPIC, 0), timeout=10)
        consumer.assign([TopicPartition(TOPIC, 0, 0)])
        out: list[tuple[int, bytes, bytes | None]] = []
        deadline = time.monotonic() + 60
        while (not out or out[-1][0] < high - 1) and time.monotonic() < deadline:
            for m in consumer.consume(1000, timeout=0.5):
                assert m.error() is None, m.error()
                out.append((m.offset(), m.key(), m.value()))
        return out
    finally:
        consumer.close()


def test_compaction_keeps_latest_value_per_key_while_consumers_read(compaction_bootstrap):
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    bootstrap = compaction_bootstrap.bootstrap_servers
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(TOPIC, 1, 1, config={
        "cleanup.policy": "compact", "segment.bytes": "16384", "min.cleanable.dirty.ratio": "0.01",
        "segment.ms": "100", "delete.retention.ms": "60000"})])[TOPIC].result(30)

    # A consumer that keeps reading from offset 0 while the log is produced to and compacted.
    stop = threading.Event()
    seen: list[tuple[int, bytes, bytes | None]] = []
    errors: list = []

    def follow() -> None:
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "follower", "enable.auto.commit": False,
                             "max.partition.fetch.bytes": 16384})
        consumer.assign([TopicPartition(TOPIC, 0, 0)])
        while not stop.is_set():
            for m in consumer.consume(100, timeout=0.2):
                if m.error() is not None:
                    errors.append(m.error())
                else:
                    seen.append((m.offset(), m.key(), m.value()))
        consumer.close()

    follower = threading.Thread(target=follow, daemon=True)
    follower.start()

    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 5,
                         "compression.type": "lz4", "batch.num.messages": 20})
    expected: dict[bytes, bytes] = {}
    failures: list = []
    for r in range(ROUNDS):
        for k in range(KEYS):
            # Incompressible values: segments fill by size (segment.bytes), so the active segment,
            # which the cleaner leaves alone, holds a few batches whatever the timing of the rolls.
            key, value = b"key-%03d" % k, b"round-%03d-" % r + os.urandom(200)
            producer.produce(TOPIC, key=key, value=value, partition=0,
                             on_delivery=lambda err, msg: err and failures.append(err))
            expected[key] = value
        producer.poll(0)
        producer.flush(30)
    assert producer.flush(60) == 0 and not failures, failures[:3]
    produced = KEYS * ROUNDS

    # The cleaner compacts the non-active segments: a fresh reader sees far fewer records.
    tries: list[tuple[int, int | None]] = []   # (records read, last offset) per try, for the failure message

    def compacted() -> list | None:
        rs = read_all(bootstrap, "fresh")
        tries.append((len(rs), rs[-1][0] if rs else None))
        return rs if rs and len(rs) < produced / 2 else None

    try:
        records = wait_until(compacted, timeout_s=60, interval_s=0.3, message="the log was compacted")
    except AssertionError as e:
        raise AssertionError(f"{e}; a fresh reader's (records, last offset) per try: {tries}") from None

    offsets = [o for o, _, _ in records]
    assert offsets == sorted(set(offsets))
    assert offsets[-1] == produced - 1
    latest = {}
    for _, key, value in records:
        latest[key] = value
    assert latest == expected
    # Keys whose last update is in cleaned segments appear once; the active segment may repeat some.
    assert len(records) < produced

    wait_until(lambda: seen and seen[-1][0] == produced - 1, timeout_s=60, message="the follower read to the end")
    stop.set()
    follower.join(10)
    assert not errors, errors[:3]
    follower_offsets = [o for o, _, _ in seen]
    assert follower_offsets == sorted(set(follower_offsets))
    follower_latest = {}
    for _, key, value in seen:
        follower_latest[key] = value
    assert follower_latest == expected
