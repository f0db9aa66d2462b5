"""A new topic's partitions are dormant until written; the first write to one of them wakes
the topic's other never-written partitions with it, so that a producer spreading a new topic's
records over its partitions waits for their wakes at once rather than one after another
(franz-go's TestPauseIssue489 under its whole suite's load: a wake took seconds to a minute,
three in a row outlasted the test's 10 s). Real broker, real client."""
from __future__ import annotations

from confluent_kafka.admin import AdminClient, NewTopic

from tests.cluster.test_rest_never_races_a_producer import produce_one
from tests.waiting import wait_until


def live(cluster, topic: str) -> set[int]:
    return {int(r.rsplit("-", 1)[1]) for r in cluster.broker_status(memory=False)[0]["replicas"]
            if r.rsplit("-", 1)[0] == topic}


def test_the_first_write_to_a_new_topic_wakes_its_other_new_partitions(rafka_cluster):
    bootstrap = rafka_cluster.bootstrap_servers
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic("fresh", 3, 1)])["fresh"].result(60)
    assert live(rafka_cluster, "fresh") == set()          # new partitions start dormant

    assert produce_one(bootstrap, "fresh", 0) == 0        # wakes fresh-0, and with it 1 and 2
    wait_until(lambda: live(rafka_cluster, "fresh") == {0, 1, 2}, timeout_s=60, interval_s=0.1,
               message="fresh-1 and fresh-2 woken by the first write to fresh-0")
    assert [produce_one(bootstrap, "fresh", p) for p in (1, 2)] == [0, 0]
