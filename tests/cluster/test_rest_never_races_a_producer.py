"""A rest never races a producer (issue 56): a replica that appended within
`replica.dormant.retry.horizon.ms` is not put to rest, neither by `replica.dormant.after.ms`
nor to make room under `replica.max.live.processes`; a wake that needs room goes over the cap
instead. Real broker, real client."""
from __future__ import annotations

import time

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from tests.waiting import wait_until

HORIZON_MS = 20_000        # longer than the cap's wait for room (10 s), so the wake goes over
DORMANT_AFTER_MS = 500     # without the horizon, the written replica would rest half a second later


def produce_one(bootstrap: str, topic: str, partition: int) -> int:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0,
                         "enable.idempotence": True, "message.timeout.ms": 60000})
    offsets: list[int] = []
    producer.produce(topic, b"x", partition=partition,
                     on_delivery=lambda err, msg: offsets.append(msg.offset() if err is None else -1))
    assert producer.flush(90) == 0
    return offsets[0]


def test_a_replica_written_inside_the_retry_horizon_is_not_rested_even_for_room(rafka_cluster, tmp_path):
    from rafka.cluster import Cluster
    from rafka.common.config import BrokerConfig

    config = BrokerConfig.from_mapping({"replica.dormant.after.ms": str(DORMANT_AFTER_MS),
                                        "replica.dormant.retry.horizon.ms": str(HORIZON_MS),
                                        "replica.max.live.processes": "1"})
    cluster = Cluster(tmp_path / "horizon", brokers=1, first_port=0, config=config, namespace="rafka-horizon")
    cluster.start()
    try:
        bootstrap = cluster.bootstrap_servers
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_topics([NewTopic("horizon", 2, 1)])["horizon"].result(60)

        def live() -> set[str]:
            return {r for r in cluster.broker_status(memory=False)[0]["replicas"] if r.startswith("horizon-")}
        assert live() == set()                       # both dormant: new partitions start so

        sent = time.monotonic()
        assert produce_one(bootstrap, "horizon", 0) == 0      # wakes horizon-0: the cap is full
        assert produce_one(bootstrap, "horizon", 1) == 0      # its wake needs room; none is given
        status = cluster.broker_status()[0]
        assert time.monotonic() - sent < HORIZON_MS / 1000, "too slow to tell: the horizon passed"
        assert {"horizon-0", "horizon-1"} <= set(status["replicas"])
        assert status["wakes_over_the_cap"] >= 1

        # Each rests once its horizon has passed (dormancy after 0.5 s would have come long before).
        wait_until(lambda: "horizon-0" not in live(), timeout_s=HORIZON_MS / 1000 + 60, interval_s=0.2,
                   message="horizon-0 dormant after its retry horizon")
        assert time.monotonic() - sent >= HORIZON_MS / 1000
        wait_until(lambda: live() == set(), timeout_s=60, interval_s=0.2, message="horizon-1 dormant too")
        admin.delete_topics(["horizon"])["horizon"].result(60)
    finally:
        cluster.stop()
