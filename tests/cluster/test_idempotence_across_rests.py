"""Idempotence survives a replica's rest and a broker's restart (issue 56), with a real client.

A confluent-kafka idempotent producer (`max.in.flight.requests.per.connection=5`, one record
per batch) has five batches in flight to one partition; a proxy drops their answers, so the
records are stored but the client never hears of it. The partition's replica then rests (its
process exits after a snapshot) and is woken by the client's retries, or the broker restarts.
Each retry must be answered with the offset its batch was first written at, and the log must
hold every record once: the snapshot keeps each producer's last five batches, not only its
last one (Kafka's), whose older retries got OUT_OF_ORDER_SEQUENCE_NUMBER and made clients
write them again under a new epoch.
"""
from __future__ import annotations

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.answer_dropper import AnswerDropper
from tests.waiting import wait_until

TOPIC = "retried"
IN_FLIGHT = 5               # the client's max.in.flight.requests.per.connection, and the dedupe window
DORMANT_AFTER_MS = 1000
REQUEST_TIMEOUT_MS = 5000   # the client's: its retries come this soon after the lost answers


class Deliveries:
    """Each record's outcome as the producer reports it: value -> offset (or error name)."""

    def __init__(self) -> None:
        self.outcomes: dict[bytes, object] = {}

    def __call__(self, err, msg) -> None:
        self.outcomes[msg.value()] = err.name() if err is not None else msg.offset()

    def check(self, values: list[bytes], first_offset: int) -> None:
        """Each of `values` delivered without an error, at its own offset in order from
        `first_offset`. (None, an offset not known: librdkafka reports a batch whose request
        timed out as persisted, without resending it, once a later batch of the producer is
        acknowledged in sequence after it, e.g. when its retry waited too long for the wake and
        got REQUEST_TIMED_OUT; the log read back shows it is there once.)"""
        outcomes = [self.outcomes.get(v) for v in values]
        assert all(o is None or isinstance(o, int) for o in outcomes), outcomes
        assert [o for o in outcomes if o is not None] == [
            first_offset + i for i, o in enumerate(outcomes) if o is not None], outcomes
        assert any(o is not None for o in outcomes), outcomes   # the retries' answers: their first offsets


def read_back(bootstrap: str) -> list[bytes]:
    """Every record of the partition, by a fresh consumer, up to its log end."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "retried-reader", "enable.auto.commit": False})
    try:
        _, end = consumer.get_watermark_offsets(TopicPartition(TOPIC, 0), timeout=30)
        consumer.assign([TopicPartition(TOPIC, 0, 0)])
        got: list[bytes] = []
        wait_until(lambda: got.extend(m.value() for m in consumer.consume(100, timeout=0.5) if m.error() is None)
                   or len(got) >= end, timeout_s=60, message=f"{end} records read back")
        return got
    finally:
        consumer.close()


def lose_answers_then(proxy: AnswerDropper, producer: Producer, deliveries: Deliveries, values: list[bytes],
                      meanwhile) -> None:
    """Send `values` (one batch each, all in flight at once), drop their answers, run
    `meanwhile()` while the client's retries are held back, then let them through."""
    proxy.drop_produce_answers(len(values))
    for value in values:
        producer.produce(TOPIC, value, partition=0, on_delivery=deliveries)
    producer.poll(0)
    wait_until(lambda: producer.poll(0.1) is not None and proxy.dropped == len(values), timeout_s=60,
               message=f"the answers to {len(values)} produce requests dropped")
    assert deliveries.outcomes.keys().isdisjoint(values)     # none acknowledged yet
    meanwhile()
    proxy.release()
    assert producer.flush(120) == 0


def test_retried_in_flight_batches_get_their_first_offsets_after_a_rest_and_a_restart(rafka_cluster, tmp_path):
    from rafka.cluster import Cluster
    from rafka.common.config import BrokerConfig

    proxy = AnswerDropper()
    # No retry horizon: the replica is let rest while the client still retries (the race of
    # issue 56), which the default horizon (30.1 s) would not allow (test_rest_never_races_a_producer.py).
    config = BrokerConfig.from_mapping({"replica.dormant.after.ms": str(DORMANT_AFTER_MS),
                                        "replica.dormant.retry.horizon.ms": "0",
                                        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{proxy.port}"})
    cluster = Cluster(tmp_path / "retried", brokers=1, first_port=0, config=config, namespace="rafka-retried")
    cluster.start()
    producer = None
    try:
        broker_id = next(iter(cluster.brokers))
        proxy.upstream = ("127.0.0.1", cluster.ports[broker_id])
        bootstrap = f"127.0.0.1:{proxy.port}"
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_topics([NewTopic(TOPIC, 1, 1)])[TOPIC].result(60)

        def live() -> bool:
            return f"{TOPIC}-0" in cluster.broker_status(memory=False)[broker_id]["replicas"]

        deliveries = Deliveries()
        producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all",
                             "max.in.flight.requests.per.connection": IN_FLIGHT, "linger.ms": 0,
                             "batch.num.messages": 1, "request.timeout.ms": REQUEST_TIMEOUT_MS,
                             "socket.timeout.ms": REQUEST_TIMEOUT_MS,   # (librdkafka times produce requests out by this)
                             "retry.backoff.ms": 100, "message.timeout.ms": 120000})
        producer.produce(TOPIC, b"first", partition=0, on_delivery=deliveries)
        assert producer.flush(60) == 0 and deliveries.outcomes == {b"first": 0}

        # 1. Answers lost, the replica rests (its process exits), the retries wake it.
        rested = [b"rest-%d" % i for i in range(IN_FLIGHT)]
        lose_answers_then(proxy, producer, deliveries, rested, meanwhile=lambda: wait_until(
            lambda: not live(), timeout_s=60, interval_s=0.2, message=f"{TOPIC}-0 at rest"))
        deliveries.check(rested, first_offset=1)
        assert live()                                                   # woken by the retries
        assert read_back(bootstrap) == [b"first", *rested]             # each record once

        # 2. Answers lost, the broker restarts (a clean stop), the retries reach the new one.
        restarted = [b"restart-%d" % i for i in range(IN_FLIGHT)]

        def restart() -> None:
            cluster.stop_broker(broker_id)
            cluster.restart_broker(broker_id)
        lose_answers_then(proxy, producer, deliveries, restarted, meanwhile=restart)
        deliveries.check(restarted, first_offset=1 + IN_FLIGHT)
        assert read_back(bootstrap) == [b"first", *rested, *restarted]
        admin = AdminClient({"bootstrap.servers": bootstrap})   # (the first one's connection went with the broker)
        admin.delete_topics([TOPIC])[TOPIC].result(60)
    finally:
        if producer is not None:
            producer.flush(0)
        proxy.close()
        cluster.stop()
