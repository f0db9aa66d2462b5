"""The confluent-kafka workload: create a topic, produce N records, consume them back.

The same functions drive rafka and Tansu, so both see exactly the same client settings.
"""
from __future__ import annotations

import os
import socket
import time

from _instant_broker import instant_broker
from _results import ConsumeCeilingResult, EnqueueResult, WorkloadResult
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

PARTITIONS = 6
PRODUCER_CONFIG = {
    "acks": 1,
    "linger.ms": 5,
    "enable.idempotence": False,
    "queue.buffering.max.messages": 1_000_000,
    "queue.buffering.max.kbytes": 1_048_576,  # 1 GiB
    "delivery.report.only.error": True,  # count failures only: keeps Python out of the hot path
    "message.timeout.ms": 120_000,
}
# The idempotent variant (KIP-98): what librdkafka needs for it (acks=all, at most 5 in flight).
IDEMPOTENT_PRODUCER_CONFIG = {**PRODUCER_CONFIG, "enable.idempotence": True, "acks": "all"}
# What a user's consumer gets without tuning: librdkafka's own defaults.
DEFAULT_CONSUMER_CONFIG = {
    "group.id": "rafka-bench",  # required by librdkafka; assign() with explicit offsets, no commits
    "enable.auto.commit": False,
    "auto.offset.reset": "earliest",
}
CONSUMER_CONFIG = {
    **DEFAULT_CONSUMER_CONFIG,
    # librdkafka backs every partition off for fetch.queue.backoff.ms (default 1,000 ms) once its
    # local queue holds queued.min.messages (100,000): with a fast broker that pause, not the
    # broker, sets the pace, and a faster broker fills the queue sooner and waits more. Both
    # brokers get the same shorter backoff so the broker is measured; the defaults run too.
    "fetch.queue.backoff.ms": 20,
}
CONSUME_BATCH = 10_000
# Records a producer sends and has acknowledged before it is timed (see `produce`).
WARM_UP_RECORDS = 1


class PhaseError(RuntimeError):
    """A benchmark phase could not finish (a broker error, a timeout, a count mismatch)."""


def create_topic(bootstrap: str, name: str, partitions: int = PARTITIONS, timeout_s: float = 60.0,
                 replication_factor: int = 1, config: dict[str, str] | None = None) -> None:
    """Create `name` with `partitions` partitions, `replication_factor` replicas each and the topic
    `config`; wait for the broker's answer and for every partition to have a leader."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    _wait_for_controller(admin, timeout_s)
    futures = admin.create_topics([NewTopic(name, partitions, replication_factor, config=config or {})],
                                  operation_timeout=timeout_s, request_timeout=timeout_s)
    futures[name].result(timeout=timeout_s)
    _wait_for_leaders(admin, name, partitions, timeout_s)


def delete_topic(bootstrap: str, name: str, timeout_s: float = 60.0) -> None:
    """Delete `name` and wait for the broker's answer.

    Each workload deletes its topic when done: a rafka partition replica is a Ray actor, and
    an idle Ray actor still costs about 1% of a core (Ray's own timers), so topics left behind
    would slow every later run on this 2-core machine, and rafka's more than Tansu's.
    """
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.delete_topics([name], operation_timeout=timeout_s, request_timeout=timeout_s)
    futures[name].result(timeout=timeout_s)


def _wait_for_controller(admin: AdminClient, timeout_s: float) -> None:
    """Poll metadata until the broker names a controller.

    librdkafka's admin client looks the controller up once and then waits for the whole
    request timeout if the first metadata answer said "no controller" (ControllerId -1),
    which a broker that has just started may say.
    """
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        metadata = admin.list_topics(timeout=10)
        if metadata.controller_id >= 0 and metadata.brokers:
            return
        time.sleep(0.1)
    raise PhaseError(f"no controller in the broker's metadata after {timeout_s:.0f} s")


def _wait_for_leaders(admin: AdminClient, name: str, partitions: int, timeout_s: float) -> None:
    """Poll metadata until every partition of `name` has a leader."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        topic = admin.list_topics(name, timeout=10).topics.get(name)
        if topic and topic.error is None and len(topic.partitions) == partitions \
                and all(p.leader >= 0 for p in topic.partitions.values()):
            return
        time.sleep(0.2)
    raise PhaseError(f"topic {name}: not all {partitions} partitions have a leader after {timeout_s:.0f} s")


def produce(bootstrap: str, topic: str, records: int, record_size: int, timeout_s: float,
            idempotent: bool = False) -> tuple[int, float]:
    """Produce `records` values of `record_size` bytes; return how many of them were timed and the
    seconds from the first timed send to the last ack.

    The producer first sends `WARM_UP_RECORDS` of them and waits for their ack, untimed, so the
    time is the broker's produce path and not the client's start-up: librdkafka's idempotent
    producer asks for its producer id only once a broker connection is up, and looks again 500 ms
    after a first look that found none (its PID timer). Measured here: an idempotent producer's
    first record is acknowledged 0.50 s after the producer is made, by Tansu and rafka alike,
    which on 500,000 records of 100 B was most of the idempotent run. Every producer (both
    variants, both brokers) is warmed the same way; the topic holds `records` in all.
    """
    errors: list[str] = []

    def on_delivery(err: object, _msg: object) -> None:
        if err is not None:
            errors.append(str(err))

    config = IDEMPOTENT_PRODUCER_CONFIG if idempotent else PRODUCER_CONFIG
    producer = Producer({"bootstrap.servers": bootstrap, **config, "on_delivery": on_delivery})
    payload = os.urandom(record_size)
    warm_up = min(WARM_UP_RECORDS, records)
    _send_all(producer, topic, payload, warm_up)
    if producer.flush(timeout_s):
        raise PhaseError(f"produce to {topic}: the warm-up record was not acknowledged after {timeout_s:.0f} s")
    timed = records - warm_up
    started = time.perf_counter()
    _send_all(producer, topic, payload, timed)
    remaining = producer.flush(timeout_s)
    elapsed = time.perf_counter() - started
    if remaining:
        raise PhaseError(f"produce to {topic}: {remaining} records unacknowledged after {timeout_s:.0f} s")
    if errors:
        raise PhaseError(f"produce to {topic}: {len(errors)} records failed, first: {errors[0]}")
    return timed, elapsed


def _send_all(producer: Producer, topic: str, payload: bytes, records: int) -> None:
    """Call `produce()` `records` times, serving callbacks when the local queue is full."""
    send = producer.produce
    for _ in range(records):
        try:
            send(topic, payload)
        except BufferError:
            producer.poll(0.05)
            send(topic, payload)
    producer.poll(0)


def consume(bootstrap: str, topic: str, expected: int, idle_timeout_s: float,
            config: dict | None = None) -> tuple[int, float, float]:
    """Read all partitions of `topic` from offset 0 until `expected` records arrived, with the
    benchmark's consumer settings or `config`.

    Returns (records consumed, seconds from assign to the last record, CPU seconds this
    process spent meanwhile). Stops early when nothing arrives for `idle_timeout_s`; the
    caller compares the count. The CPU figure shows whether the client was the limit.
    """
    consumer = Consumer({"bootstrap.servers": bootstrap, **(config or CONSUMER_CONFIG)})
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
        count = 0
        cpu_started = time.process_time()
        started = last = time.perf_counter()
        while count < expected:
            batch = consumer.consume(CONSUME_BATCH, 0.2)
            now = time.perf_counter()
            if not batch:
                if now - last > idle_timeout_s:
                    break
                continue
            for msg in batch:
                if msg.error() is not None:
                    raise KafkaException(msg.error())
            count += len(batch)
            last = now
        return count, last - started, time.process_time() - cpu_started
    finally:
        consumer.close()


def consume_ceiling(record_size: int, records: int, idle_timeout_s: float = 20.0) -> ConsumeCeilingResult:
    """The consumer's own ceiling: the same consume, with the benchmark's settings and with the
    client's defaults, from a stand-in broker that answers every fetch at once from memory."""
    topic = "bench-ceiling"
    with instant_broker(topic, PARTITIONS, records, record_size) as bootstrap:
        consumed, seconds, cpu_s = consume(bootstrap, topic, records, idle_timeout_s)
        consumed_defaults, seconds_defaults, _ = consume(bootstrap, topic, records, idle_timeout_s,
                                                         DEFAULT_CONSUMER_CONFIG)
    _check_count("instant broker", record_size, consumed, records, idle_timeout_s)
    _check_count("instant broker", record_size, consumed_defaults, records, idle_timeout_s)
    return ConsumeCeilingResult(record_size, consumed, seconds, cpu_s, consumed_defaults, seconds_defaults)


def warm_group_coordinator(bootstrap: str, topic: str, timeout_s: float = 60.0) -> None:
    """Ask once for the committed offsets of the benchmark's consumer group.

    librdkafka looks up the group coordinator of any consumer with a `group.id`, and a broker
    creates `__consumer_offsets` on that first lookup (rafka: 8 partition actors). Doing it
    here, before anything is timed, keeps that one-time cost out of the first consume run.
    """
    consumer = Consumer({"bootstrap.servers": bootstrap, **CONSUMER_CONFIG})
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                consumer.committed([TopicPartition(topic, 0)], timeout=10)
                return
            except KafkaException:
                if time.monotonic() > deadline:
                    raise PhaseError(f"no group coordinator after {timeout_s:.0f} s") from None
                time.sleep(0.5)
    finally:
        consumer.close()


def run_workload(broker: str, bootstrap: str, record_size: int, records: int,
                 timeout_s: float, idle_timeout_s: float = 20.0, idempotent: bool = False) -> WorkloadResult:
    """Create a fresh topic, produce `records`, consume them back and check the count."""
    topic = f"bench-{record_size}-{int(time.time() * 1000)}"
    create_topic(bootstrap, topic)
    try:
        timed, produce_s = produce(bootstrap, topic, records, record_size, timeout_s, idempotent)
        consumed, consume_s, consume_cpu_s = consume(bootstrap, topic, records, idle_timeout_s)
        _check_count(broker, record_size, consumed, records, idle_timeout_s)
        consumed_defaults, consume_defaults_s, _ = consume(bootstrap, topic, records, idle_timeout_s,
                                                           DEFAULT_CONSUMER_CONFIG)
        _check_count(broker, record_size, consumed_defaults, records, idle_timeout_s)
    finally:
        delete_topic(bootstrap, topic)
    return WorkloadResult(broker, record_size, records, produce_s, consume_s, consumed, consume_cpu_s,
                          consume_defaults_s, produce_untimed=records - timed)


def _check_count(broker: str, record_size: int, consumed: int, records: int, idle_timeout_s: float) -> None:
    if consumed != records:
        raise PhaseError(f"{broker} {record_size} B: consumed {consumed} of {records} produced records"
                         f" (nothing new for {idle_timeout_s:.0f} s)")


def unused_port() -> int:
    """A loopback port with nothing listening (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def enqueue_ceiling(record_size: int, records: int) -> EnqueueResult:
    """Time `records` `produce()` calls against a loopback port where nothing listens.

    The queue is sized to hold every record, so this measures the client alone:
    Python's call overhead plus librdkafka's enqueue, with no network or broker.
    """
    producer = Producer({
        "bootstrap.servers": f"127.0.0.1:{unused_port()}",
        **PRODUCER_CONFIG,
        "queue.buffering.max.messages": max(records, 1_000),
        "queue.buffering.max.kbytes": 2_097_151,
        "log_level": 0,
        "logger": lambda *_: None,
    })
    payload = os.urandom(record_size)
    send = producer.produce
    started = time.perf_counter()
    for _ in range(records):
        send("bench-ceiling", payload)
    elapsed = time.perf_counter() - started
    producer.purge()
    producer.flush(0)
    return EnqueueResult(record_size, records, elapsed)
