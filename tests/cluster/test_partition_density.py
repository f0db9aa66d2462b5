"""1,000 partitions on one broker (issue 24): created in one CreateTopics burst while a real
client produces to and consumes from another topic without a failed request; afterwards only
partitions with traffic keep a process, and every one of the 1,000 can be written (the
produce wakes it) and read back: written all at once, with never more replica processes
than replica.max.live.processes."""
from __future__ import annotations

import threading
import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.waiting import wait_until

TOPICS, PER_TOPIC = 100, 10
DORMANT_AFTER_MS = 10000   # long enough for wakes to pile up to the cap below
LIVE_MAX = 32   # replica.max.live.processes in the test (128 by default)


class SteadyClient:
    """acks=1 producer at ~200 records/s to `busy`, and a consumer reading it all along."""

    def __init__(self, bootstrap: str) -> None:
        self.producer = Producer({"bootstrap.servers": bootstrap, "acks": 1, "linger.ms": 0,
                                  "message.timeout.ms": 30000})
        self.consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "density-steady",
                                  "enable.auto.commit": False, "fetch.wait.max.ms": 100})
        self.consumer.assign([TopicPartition("busy", 0, 0)])
        self.sent, self.failed, self.latencies, self.read = 0, 0, [], []
        self._stop, self._stop_reading = threading.Event(), threading.Event()
        self._threads = [threading.Thread(target=self._produce), threading.Thread(target=self._consume)]

    def __enter__(self) -> "SteadyClient":
        for t in self._threads:
            t.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._threads[0].join()
        assert self.producer.flush(60) == 0
        wait_until(lambda: len(self.read) >= self.sent, timeout_s=60, message="the steady consumer caught up")
        self._stop_reading.set()
        self._threads[1].join()
        self.consumer.close()

    def _produce(self) -> None:
        while not self._stop.is_set():
            sent_at = time.monotonic()
            value = b"%d" % self.sent
            self.producer.produce("busy", value, partition=0, on_delivery=self._delivered(sent_at))
            self.sent += 1
            self.producer.poll(0.005)

    def _delivered(self, sent_at: float):
        def callback(err, msg) -> None:
            if err is not None:
                self.failed += 1
            else:
                self.latencies.append(time.monotonic() - sent_at)
        return callback

    def _consume(self) -> None:
        while not self._stop_reading.is_set():
            self.read.extend(int(m.value()) for m in self.consumer.consume(500, timeout=0.2) if m.error() is None)


@pytest.mark.alone
def test_a_thousand_partitions_on_one_broker(tmp_path):
    from rafka.cluster import Cluster
    from rafka.common.config import BrokerConfig

    # No retry horizon: this test is of the cap itself. With one (the default, 30.1 s), each
    # replica just written stays live that long, and a burst of writes to 1,000 dormant
    # partitions goes over the cap rather than rest replicas a producer may still retry to.
    config = BrokerConfig.from_mapping({"replica.dormant.after.ms": str(DORMANT_AFTER_MS),
                                        "replica.max.live.processes": str(LIVE_MAX),
                                        "replica.dormant.retry.horizon.ms": "0"})
    cluster = Cluster(tmp_path / "density", brokers=1, first_port=0, config=config, namespace="rafka-density")
    cluster.start()
    try:
        bootstrap = cluster.bootstrap_servers
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_topics([NewTopic("busy", 1, 1)])["busy"].result(60)
        names = [f"dense-{i}" for i in range(TOPICS)]
        with SteadyClient(bootstrap) as steady:
            wait_until(lambda: len(steady.read) > 100, timeout_s=60, message="the steady client under way")
            started = time.monotonic()
            for future in admin.create_topics([NewTopic(n, PER_TOPIC, 1) for n in names],
                                              request_timeout=120, operation_timeout=120).values():
                future.result(180)
            created_s = time.monotonic() - started
        assert steady.failed == 0 and steady.read == list(range(steady.sent))   # none lost, none out of order
        p99 = sorted(steady.latencies)[int(len(steady.latencies) * 0.99)]
        print(f"1,000 partitions created in {created_s:.1f} s; the steady client's p99 produce latency {p99 * 1000:.0f} ms")

        status = cluster.broker_status()[0]
        assert status["dormant_replicas"] >= TOPICS * PER_TOPIC   # new partitions start without a process
        wait_until(lambda: set(cluster.broker_status(memory=False)[0]["replicas"]) <= {"busy-0"}, timeout_s=60,
                   message="only the partition with traffic live")

        # Every partition takes a write (which wakes it) and gives it back, all at once: the
        # wakes take turns under replica.max.live.processes, the idlest replicas resting first.
        producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5, "enable.idempotence": True,
                             "message.timeout.ms": 300000})
        acked: dict[tuple[str, int], int] = {}
        errors: dict[str, int] = {}

        def delivered(err, msg) -> None:
            if err is None:
                acked[(msg.topic(), msg.partition())] = msg.offset()
            else:
                errors[err.name()] = errors.get(err.name(), 0) + 1
        for n in names:
            for p in range(PER_TOPIC):
                producer.produce(n, b"%s/%d" % (n.encode(), p), partition=p, on_delivery=delivered)
        started = time.monotonic()
        most_live, deadline = 0, started + 600
        while producer.flush(1) > 0 and time.monotonic() < deadline:
            most_live = max(most_live, len(cluster.broker_status(memory=False)[0]["replicas"]))
        print(f"1,000 dormant partitions written at once in {time.monotonic() - started:.1f} s,"
              f" at most {most_live} live replicas (replica.max.live.processes={LIVE_MAX})")
        assert producer.flush(0) == 0 and errors == {}
        assert len(acked) == TOPICS * PER_TOPIC and set(acked.values()) == {0}
        assert most_live <= LIVE_MAX, most_live
        reader = Consumer({"bootstrap.servers": bootstrap, "group.id": "density-reader", "enable.auto.commit": False})
        reader.assign([TopicPartition(n, p, 0) for n in names for p in range(PER_TOPIC)])
        got: dict[tuple[str, int], bytes] = {}
        wait_until(lambda: got.update({(m.topic(), m.partition()): m.value()
                                       for m in reader.consume(1000, timeout=0.5) if m.error() is None})
                   or len(got) >= TOPICS * PER_TOPIC, timeout_s=300, message="every partition read back")
        reader.close()
        assert got == {(n, p): b"%s/%d" % (n.encode(), p) for n in names for p in range(PER_TOPIC)}
    finally:
        cluster.stop()
