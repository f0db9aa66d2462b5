"""The confluent-kafka workload: create a topic, produce N records, consume them back.

The same functions drive rafka and Tansu, so both see exactly the same client settings.
"""
from __future__ import annotations

import os
import struct
import threading
import time

import numpy as np
from _fetch_stats import STATS_INTERVAL_MS, FetchStats
from _instant_broker import instant_broker
from _latency import pause_s, records_due, serve_then_wait
from _produce_consume_results import ConsumeCeilingResult, EnqueueResult, LatencyResult, WorkloadResult
from _verify import HEAD, SequenceCheck, heads
from confluent_kafka import Consumer, KafkaException, Message, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from harness.phases import PhaseError
from harness.stats import percentile

from rafka.common.ports import unused_port

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
# The consume with librdkafka's defaults reads only a run's first records: their 1 s
# fetch.queue.backoff.ms, not the broker, paces it (~140k records/s of 100 B here), so reading
# all of a 6,000,000-record run would take ~40 s for the same rate.
DEFAULTS_READ = {100: 1_000_000, 1024: 300_000}
# End-to-end latency: each record leaves at once (linger.ms=0), acks=1.
LATENCY_PRODUCER_CONFIG = {**PRODUCER_CONFIG, "linger.ms": 0}
# A latency run's paced stream starts this long before its records are timed. A new topic's
# creation goes on in the background after the broker answered it (rafka's coordinator and
# ZooKeeper: 0.2-0.3 s of a core each), and a stream timed from its first record also timed the
# end of that, not the steady stream the run measures.
LATENCY_LEAD_IN_S = 1.0
# After the sequence number, a latency record's value holds its produce() time (perf_counter).
SENT_AT = struct.Struct(">d")


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
            idempotent: bool = False) -> tuple[int, float, float]:
    """Produce `records` values of `record_size` bytes; return how many of them were timed, the
    seconds from the first timed send to the last ack, and the seconds the untimed first writes
    took.

    The producer first sends one record to each partition and waits for their acks, untimed, so
    the time is the broker's produce path, not the client's start-up nor the topic's:
    - librdkafka's idempotent producer asks for its producer id only once a broker connection is
      up, and looks again 500 ms after a first look that found none (its PID timer). Measured
      here: an idempotent producer's first record is acknowledged 0.50 s after the producer is
      made, by Tansu and rafka alike, which on 500,000 records of 100 B was most of the run;
    - a new topic's partition takes its first write once its replica serves: rafka starts a
      process per replica (one from its spare processes, or a new one, 0.7-0.8 s here for the
      first topic on a quiet broker, which keeps none), so a pair's first run timed the start
      of its replicas as produce time.
    Those first writes are reported on their own (`first_writes_s`, from the first of them to the
    last ack). Every producer (both variants, both brokers) is warmed the same way; the topic
    holds `records` in all.

    Each value starts with the record's sequence number, 0 to `records` - 1 in produce() order
    (bench/_verify.py), so the consumer can check that it read each record once, in order.
    """
    errors: list[str] = []

    def on_delivery(err: object, _msg: object) -> None:
        if err is not None:
            errors.append(str(err))

    config = IDEMPOTENT_PRODUCER_CONFIG if idempotent else PRODUCER_CONFIG
    producer = Producer({"bootstrap.servers": bootstrap, **config, "on_delivery": on_delivery})
    tail = os.urandom(record_size - HEAD.size)
    warm_up = min(PARTITIONS, records)
    started = time.perf_counter()
    for partition in range(warm_up):   # numbered 0 .. warm_up - 1, one to each partition
        producer.produce(topic, HEAD.pack(partition) + tail, partition=partition)
    if producer.flush(timeout_s):
        raise PhaseError(f"produce to {topic}: the first writes were not acknowledged after {timeout_s:.0f} s")
    first_writes_s = time.perf_counter() - started
    timed = records - warm_up
    started = time.perf_counter()
    _send_all(producer, topic, tail, warm_up, timed)
    remaining = producer.flush(timeout_s)
    elapsed = time.perf_counter() - started
    if remaining:
        raise PhaseError(f"produce to {topic}: {remaining} records unacknowledged after {timeout_s:.0f} s")
    if errors:
        raise PhaseError(f"produce to {topic}: {len(errors)} records failed, first: {errors[0]}")
    return timed, elapsed, first_writes_s


def _send_all(producer: Producer, topic: str, tail: bytes, first: int, records: int) -> None:
    """Call `produce()` `records` times with values numbered from `first` (then `tail`), serving
    callbacks when the local queue is full."""
    send, pack = producer.produce, HEAD.pack
    for sequence in range(first, first + records):
        value = pack(sequence) + tail
        try:
            send(topic, value)
        except BufferError:   # the local queue is full: serve it until this record fits
            while True:
                producer.poll(0.05)
                try:
                    send(topic, value)
                    break
                except BufferError:
                    continue
    producer.poll(0)


def consume(bootstrap: str, topic: str, expected: int, record_size: int, idle_timeout_s: float,
            config: dict | None = None, fetch_stats: bool = False,
            read: int | None = None) -> tuple[int, float, float, list[str], FetchStats]:
    """Read all partitions of `topic` from offset 0 until `expected` records arrived (or only the
    first `read` of them to arrive, checked for order and duplicates but not gaps), with the
    benchmark's consumer settings or `config`, checking each record's sequence number.

    Returns (records consumed, seconds from assign to the last record, CPU seconds this
    process spent meanwhile, problems found in what was read: duplicates, gaps, records out of
    their partition's order; empty when none; with `fetch_stats`, the consumer's fetches from its
    own statistics, else none counted). Stops early when nothing arrives for `idle_timeout_s`;
    the caller compares the count. The CPU figure shows whether the client was the limit, the
    fetches whether the broker was.
    """
    stats = FetchStats()
    watched = {"statistics.interval.ms": STATS_INTERVAL_MS, "stats_cb": stats.on_stats} if fetch_stats else {}
    consumer = Consumer({"bootstrap.servers": bootstrap, **(config or CONSUMER_CONFIG), **watched})
    wanted = expected if read is None else min(read, expected)
    check = SequenceCheck(expected, whole=wanted == expected)
    value_of, partition_of = Message.value, Message.partition
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
        count = 0
        cpu_started = time.process_time()
        started = last = time.perf_counter()
        while count < wanted:
            batch = consumer.consume(min(CONSUME_BATCH, wanted - count), 0.2)
            now = time.perf_counter()
            if not batch:
                if now - last > idle_timeout_s:
                    break
                continue
            n = len(batch)
            try:
                numbers = heads(b"".join(map(value_of, batch)), n, record_size)
            except (TypeError, ValueError):  # an error event, or a record of the wrong size
                raise_odd_message(batch, record_size)
            check.add_batch(numbers, np.fromiter(map(partition_of, batch), np.int32, n))
            count += n
            last = now
        seconds, cpu_s = last - started, time.process_time() - cpu_started
        if fetch_stats:
            _await_next_stats(consumer, stats)
        return count, seconds, cpu_s, check.finish(), stats
    finally:
        consumer.close()


def _await_next_stats(consumer: Consumer, stats: FetchStats) -> None:
    """Serve the consumer until its next statistics interval (untimed): the totals then cover
    the whole run, not only up to the interval before its end."""
    seen, deadline = stats.intervals, time.monotonic() + 3 * STATS_INTERVAL_MS / 1000
    while stats.intervals == seen and time.monotonic() < deadline:
        consumer.poll(0.05)


def raise_odd_message(batch: list[Message], record_size: int) -> None:
    """Raise for the first message of `batch` that is an error or not a `record_size`-byte record."""
    for msg in batch:
        if msg.error() is not None:
            raise KafkaException(msg.error())
        if msg.value() is None or len(msg.value()) != record_size:
            size = None if msg.value() is None else len(msg.value())
            raise PhaseError(f"partition {msg.partition()} offset {msg.offset()}: a value of {size} bytes,"
                             f" not {record_size}")
    raise PhaseError("a consumed batch could not be read, though each message looks right")


def consume_ceiling(record_size: int, records: int, idle_timeout_s: float = 20.0) -> ConsumeCeilingResult:
    """The consumer's own ceiling: the same consume (checks included), with the benchmark's
    settings and with the client's defaults, from a stand-in broker that answers every fetch at
    once from memory."""
    topic = "bench-ceiling"
    with instant_broker(topic, PARTITIONS, records, record_size) as bootstrap:
        consumed, seconds, cpu_s, problems, _ = consume(bootstrap, topic, records, record_size, idle_timeout_s)
        _check_read("instant broker", record_size, consumed, records, idle_timeout_s, problems)
        read = _defaults_read(records, record_size)
        consumed_defaults, seconds_defaults, _, problems, _ = consume(bootstrap, topic, records, record_size,
                                                                      idle_timeout_s, DEFAULT_CONSUMER_CONFIG,
                                                                      read=read)
        _check_read("instant broker", record_size, consumed_defaults, read, idle_timeout_s, problems)
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


def run_workload(broker: str, bootstrap: str, record_size: int, records: int, timeout_s: float,
                 idle_timeout_s: float = 20.0, idempotent: bool = False, pair: int = 0) -> WorkloadResult:
    """Create a fresh topic, produce `records`, consume them back (twice: the benchmark's
    settings, then librdkafka's defaults) and check that each read returned every record once,
    in order."""
    topic = f"bench-{record_size}-{int(time.time() * 1000)}"
    create_topic(bootstrap, topic)
    try:
        timed, produce_s, first_writes_s = produce(bootstrap, topic, records, record_size, timeout_s, idempotent)
        consumed, consume_s, consume_cpu_s, problems, fetches = consume(bootstrap, topic, records, record_size,
                                                                        idle_timeout_s, fetch_stats=True)
        _check_read(broker, record_size, consumed, records, idle_timeout_s, problems)
        read = _defaults_read(records, record_size)
        consumed_defaults, consume_defaults_s, _, problems, _ = consume(bootstrap, topic, records, record_size,
                                                                        idle_timeout_s, DEFAULT_CONSUMER_CONFIG,
                                                                        read=read)
        _check_read(broker, record_size, consumed_defaults, read, idle_timeout_s, problems, "librdkafka defaults")
    finally:
        delete_topic(bootstrap, topic)
    return WorkloadResult(broker, record_size, records, produce_s, consume_s, consumed, consume_cpu_s,
                          consume_defaults_s, consumed_defaults=consumed_defaults,
                          produce_untimed=records - timed, pair=pair,
                          first_writes_s=first_writes_s, consume_fetches=fetches.fetches,
                          consume_kib_per_fetch=fetches.kib_per_fetch, consume_rtt_avg_ms=fetches.rtt_avg_ms,
                          consume_rtt_p99_ms=fetches.rtt_p99_max_ms)


def _defaults_read(records: int, record_size: int) -> int:
    """How many records of a run of `records` the consume with librdkafka's defaults reads."""
    return min(records, DEFAULTS_READ.get(record_size, records))


def _check_read(broker: str, record_size: int, consumed: int, records: int, idle_timeout_s: float,
                problems: list[str], how: str = "") -> None:
    """Raise when a consume read a wrong count or found its records wrong (duplicates, gaps, order)."""
    what = f"{broker} {record_size} B" + (f" ({how})" if how else "")
    if problems:
        raise PhaseError(f"{what}: records read back wrong: " + "; ".join(problems))
    if consumed != records:
        raise PhaseError(f"{what}: consumed {consumed} of {records} produced records"
                         f" (nothing new for {idle_timeout_s:.0f} s)")


def end_to_end_latency(broker: str, bootstrap: str, rate_per_s: float, seconds: float, record_size: int = 100,
                       pair: int = 0, timeout_s: float = 60.0, lead_in_s: float = LATENCY_LEAD_IN_S) -> LatencyResult:
    """Send `rate_per_s` records/s for `seconds` (acks=1, linger.ms=0) to a fresh topic while a
    consumer on another thread reads it from the start; each record is timed from its produce()
    call (its value carries the time) until the consumer has it. Its reads are checked as the
    workload's are (every record once, in order).

    A first record for each partition is sent, and read back, before the clock starts, so
    connections, metadata and the consumer's first fetches are up, and each partition has taken
    its first write (a new partition's replica opens then: its first-write latency is
    bench/density.py's to measure, not a steady stream's); the paced records follow, as
    bench/replication.py paces its producer. Those sent in the first `lead_in_s` are read
    and checked but not timed: the stream is steady by then (LATENCY_LEAD_IN_S says why).
    """
    topic = f"bench-latency-{int(time.time() * 1000)}"
    lead_in = int(rate_per_s * lead_in_s)
    timed = max(1, int(rate_per_s * seconds))
    records = lead_in + timed
    create_topic(bootstrap, topic)
    try:
        reader = _LatencyReader(bootstrap, topic, PARTITIONS + records, record_size, first_timed=PARTITIONS + lead_in)
        reader.start()
        try:
            producer = Producer({"bootstrap.servers": bootstrap, **LATENCY_PRODUCER_CONFIG})
            tail = os.urandom(record_size - HEAD.size - SENT_AT.size)
            clock, send, poll, pack_at = time.perf_counter, producer.produce, producer.poll, SENT_AT.pack
            for partition in range(PARTITIONS):   # numbered 0..PARTITIONS-1: not timed
                send(topic, HEAD.pack(partition) + pack_at(clock()) + tail, partition=partition)
            if producer.flush(timeout_s):
                raise PhaseError(f"{broker} latency: the warm-up records were not acknowledged after {timeout_s:.0f} s")
            reader.wait_for(PARTITIONS, timeout_s)
            started = clock()
            sent = 0
            while sent < records:
                elapsed = clock() - started
                if sent >= records_due(elapsed, rate_per_s, records):
                    serve_then_wait(poll, pause_s(elapsed, sent, rate_per_s))
                    continue
                send(topic, HEAD.pack(PARTITIONS + sent) + pack_at(clock()) + tail)
                sent += 1
                poll(0)
            sent_rps = records / (clock() - started)
            if producer.flush(timeout_s):
                raise PhaseError(f"{broker} latency: records unacknowledged after {timeout_s:.0f} s")
            reader.wait_for(PARTITIONS + records, timeout_s)
        finally:
            latencies, problems = reader.stop()
    finally:
        delete_topic(bootstrap, topic)
    if problems:
        raise PhaseError(f"{broker} latency: records read back wrong: " + "; ".join(problems))
    latencies.sort()
    return LatencyResult(broker, pair, timed, rate_per_s, sent_rps,
                         *(1000 * percentile(latencies, q) for q in (0.5, 0.99, 0.999, 1.0)))


class _LatencyReader:
    """A consumer on its own thread reading a topic from offset 0, noting for each record numbered
    `first_timed` or later the seconds since its produce() call, and checking the sequence
    numbers of all."""

    def __init__(self, bootstrap: str, topic: str, expected: int, record_size: int, first_timed: int) -> None:
        self._consumer = Consumer({"bootstrap.servers": bootstrap, **CONSUMER_CONFIG})
        self._consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
        self._check = SequenceCheck(expected)
        self._record_size = record_size
        self._first_timed = first_timed
        self._latencies: list[float] = []
        self._read = 0
        self._error: BaseException | None = None
        self._progress = threading.Condition()
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"bench-latency-{topic}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        clock, unpack_at, first_timed = time.perf_counter, SENT_AT.unpack_from, self._first_timed
        poll, consume = self._consumer.poll, self._consumer.consume
        try:
            while not self._stopping.is_set():
                # poll() returns with the first record to arrive; consume(n, timeout) would wait
                # until n records or the timeout (up to 50 ms added to every record's latency).
                # What else has arrived is taken with it, without waiting.
                first = poll(0.05)
                now = clock()
                if first is None:
                    continue
                batch = [first, *consume(1000, 0)]
                for msg in batch:
                    if msg.error() is not None:
                        raise KafkaException(msg.error())
                numbers = heads(b"".join(msg.value() for msg in batch), len(batch), self._record_size)
                self._check.add_batch(numbers, np.fromiter((m.partition() for m in batch), np.int32, len(batch)))
                self._latencies.extend(now - unpack_at(msg.value(), HEAD.size)[0]
                                       for msg, number in zip(batch, numbers.tolist()) if number >= first_timed)
                with self._progress:
                    self._read += len(batch)
                    self._progress.notify_all()
        except BaseException as e:  # noqa: BLE001 - handed to the waiting thread
            with self._progress:
                self._error = e
                self._progress.notify_all()

    def wait_for(self, records: int, timeout_s: float) -> None:
        """Block until `records` records were read; raise if the reader failed or took too long."""
        with self._progress:
            if not self._progress.wait_for(lambda: self._read >= records or self._error is not None, timeout_s):
                raise PhaseError(f"the latency consumer read {self._read} of {records} records in {timeout_s:.0f} s")
            if self._error is not None:
                raise PhaseError(f"the latency consumer failed: {self._error}") from self._error

    def stop(self) -> tuple[list[float], list[str]]:
        """Stop reading; the latencies (s) and the problems found in what was read."""
        self._stopping.set()
        self._thread.join(30)
        self._consumer.close()
        return self._latencies, self._check.finish()


# librdkafka's largest queue (its limit, INT_MAX KiB): 2 GiB (2,097,151) filled up with 2,400,000 x 1 KiB.
ENQUEUE_QUEUE_KBYTES = 2_147_483_647


def enqueue_ceiling(record_size: int, records: int) -> EnqueueResult:
    """Time `records` `produce()` calls against a loopback port where nothing listens.

    The queue is sized to hold every record, so this measures the client alone:
    Python's call overhead plus librdkafka's enqueue, with no network or broker.
    """
    producer = Producer({
        "bootstrap.servers": f"127.0.0.1:{unused_port()}",
        **PRODUCER_CONFIG,
        "queue.buffering.max.messages": max(records, 1_000),
        "queue.buffering.max.kbytes": ENQUEUE_QUEUE_KBYTES,
        "log_level": 0,
        "logger": lambda *_: None,
    })
    tail = os.urandom(record_size - HEAD.size)
    send, pack = producer.produce, HEAD.pack
    started = time.perf_counter()
    for sequence in range(records):  # numbered values, as the workload's producer sends them
        send("bench-ceiling", pack(sequence) + tail)
    elapsed = time.perf_counter() - started
    producer.purge()
    producer.flush(0)
    return EnqueueResult(record_size, records, elapsed)
