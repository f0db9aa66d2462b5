"""Group coordinator failover, as Kafka does it: the coordinator of a group is the leader of the
group's `__consumer_offsets` partition and moves with that leadership; the new leader loads the
group and its committed offsets from its replica of the log. 3 brokers, `__consumer_offsets`
replicated 3 ways (1 partition, so one broker coordinates every group), kill -9 of the
coordinator's broker, then a restart that brings it back into every ISR."""
from __future__ import annotations

import time
from typing import Any

from rafka.net.client import KafkaConnection
from tests.waiting import wait_until
from tools.failover_drill import BROKERS, drill_config, partition_view

FIND_COORDINATOR, OFFSET_FETCH = 10, 9
OFFSETS_TOPIC = "__consumer_offsets"
TOPIC, GROUP, LIVE_GROUP, PARTITIONS, PER_PARTITION = "gc-orders", "gc-app", "gc-live", 2, 100
NONE, COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR = 0, 14, 15, 16


def find_coordinator(address: str, group: str = GROUP) -> tuple[int, int, str]:
    """(error, node id, "host:port") of `group`'s coordinator, as the broker at `address` answers."""
    with KafkaConnection.to(address) as conn:
        body = conn.request(FIND_COORDINATOR, 3, {"key": group, "key_type": 0})
    return body["error_code"], body["node_id"], f"{body['host']}:{body['port']}"


def committed(address: str, group: str = GROUP) -> tuple[int, dict[int, int]]:
    """(group error, committed offset by partition of TOPIC) as OffsetFetch v7 at `address` answers."""
    with KafkaConnection.to(address) as conn:
        body = conn.request(OFFSET_FETCH, 7, {"group_id": group, "require_stable": False,
                                              "topics": [{"name": TOPIC, "partition_indexes": list(range(PARTITIONS))}]})
    offsets = {p["partition_index"]: p["committed_offset"] for t in body["topics"] for p in t["partitions"]}
    return body["error_code"], offsets


def coordinator_agreed(addresses: list[str], unlike: int | None = None) -> tuple[int, str] | None:
    """(node, address) of the coordinator every broker at `addresses` names, once they agree (and
    it is not `unlike`); None meanwhile."""
    answers = set()
    for address in addresses:
        try:
            error, node, where = find_coordinator(address)
        except OSError:
            return None
        if error != NONE:
            return None
        answers.add((node, where))
    if len(answers) != 1:
        return None
    node, where = answers.pop()
    return None if node == unlike else (node, where)


def committed_at(address: str, group: str = GROUP) -> dict[int, int] | None:
    """The committed offsets the coordinator at `address` answers once it has loaded the group."""
    error, offsets = committed(address, group)
    if error in (COORDINATOR_LOAD_IN_PROGRESS, NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE):
        return None
    assert error == NONE, error
    return offsets


class Member:
    """A confluent-kafka group member that commits what it consumed after each poll (a commit
    refused while the coordinator moves is made again, with later positions, after the next poll)."""

    def __init__(self, bootstrap: str, group: str = GROUP) -> None:
        from confluent_kafka import Consumer

        self.consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
                                  "auto.offset.reset": "earliest", "session.timeout.ms": 10000,
                                  "heartbeat.interval.ms": 500, "topic.metadata.refresh.interval.ms": 1000,
                                  "log_level": 0})
        self.assignments: list[list[int]] = []   # every assignment the member was given, in order
        self.revocations = 0
        self.consumer.subscribe([TOPIC], on_assign=lambda _c, tps: self.assignments.append(
            sorted(tp.partition for tp in tps)), on_revoke=lambda _c, _tps: self._revoked())
        self.records: list[tuple[int, int, bytes]] = []   # (partition, offset, value) in arrival order
        self._uncommitted: dict[int, int] = {}

    def _revoked(self) -> None:
        self.revocations += 1

    def poll(self, cap: dict[int, int] | None = None) -> None:
        """One poll; with `cap`, only records below that offset per partition are taken (the rest
        is left for later: the position is committed, not the fetch)."""
        from confluent_kafka import KafkaException, TopicPartition

        held_back: set[int] = set()
        for m in self.consumer.consume(100, timeout=0.2):
            if m.error() is not None or m.partition() in held_back:
                continue
            if cap is not None and m.offset() >= cap.get(m.partition(), 0):
                held_back.add(m.partition())   # read it again later: back to the first one not taken
                self.consumer.seek(TopicPartition(TOPIC, m.partition(), m.offset()))
                continue
            self.records.append((m.partition(), m.offset(), m.value()))
            self._uncommitted[m.partition()] = m.offset() + 1
        if self._uncommitted:
            try:
                self.consumer.commit(offsets=[TopicPartition(TOPIC, p, o) for p, o in sorted(self._uncommitted.items())],
                                     asynchronous=False)
                self._uncommitted.clear()
            except KafkaException:
                pass   # the coordinator moving (or a rebalance): committed after the next poll

    def all_committed(self) -> bool:
        """Whether every record taken so far is committed."""
        return not self._uncommitted

    def assignment(self) -> list[int]:
        return sorted(tp.partition for tp in self.consumer.assignment())

    def close(self) -> None:
        self.consumer.close()


def first_offsets(records: list[tuple[int, int, bytes]]) -> dict[int, int]:
    out: dict[int, int] = {}
    for partition, offset, _ in records:
        out.setdefault(partition, offset)
    return out


def poll_until(members: list[Member], condition: Any, timeout_s: float, message: str,
               cap: dict[int, int] | None = None) -> None:
    """Poll every member in turn (a rebalance waits for each of them) until `condition()`."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{message} not met within {timeout_s} s")
        for m in members:
            m.poll(cap)


def test_group_coordinator_fails_over_with_its_offsets_partition(rafka_cluster, tmp_path):
    from confluent_kafka import ElectionType, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    from rafka.cluster import Cluster

    cluster = Cluster(tmp_path / "gc", brokers=BROKERS, first_port=0, namespace="rafka-gc-failover",
                      config=drill_config(**{"offsets.topic.num.partitions": "1"}))
    cluster.start()
    members: list[Member] = []
    try:
        bootstrap = cluster.bootstrap_servers
        addresses = {b: h.address for b, h in cluster.brokers.items()}
        admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
        admin.create_topics([NewTopic(TOPIC, PARTITIONS, BROKERS)])[TOPIC].result(60)
        producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5, "log_level": 3})
        for i in range(PARTITIONS * PER_PARTITION):
            producer.produce(TOPIC, b"r-%d-%03d" % (i % PARTITIONS, i // PARTITIONS), partition=i % PARTITIONS)
        assert producer.flush(60) == 0
        del producer

        # A member consumes and commits 30 records of each partition, then leaves: the group is
        # Empty, with its offsets in __consumer_offsets-0 on all three brokers.
        first = Member(bootstrap)
        members.append(first)
        poll_until([first], lambda: len(first.records) == 30 * PARTITIONS, 60, "30 records of each partition",
                   cap={p: 30 for p in range(PARTITIONS)})
        first.close()
        members.remove(first)
        victim, victim_address = wait_until(lambda: coordinator_agreed(list(addresses.values())), 30,
                                            message="every broker names one coordinator")
        assert committed_at(victim_address) == {0: 30, 1: 30}
        offsets_view = wait_until(lambda: partition_view(admin, [OFFSETS_TOPIC], 1), 30,
                                  message="__consumer_offsets in metadata")
        assert offsets_view[(OFFSETS_TOPIC, 0)] == (victim, (0, 1, 2))   # the coordinator leads it, RF=3
        # ... as its preferred replica, which a preferred-leader election makes leader again below.
        assert admin.list_topics(timeout=10).topics[OFFSETS_TOPIC].partitions[0].replicas[0] == victim

        # A second group keeps a member through the failover. It reads and commits 20 records of
        # each partition, and the coordinator dies at once: the followers have these commits
        # (acks=all) but not yet the high watermark that covers them (they learn it at their
        # next fetch), so the new coordinator finds them only past its high watermark.
        live = Member(bootstrap, LIVE_GROUP)
        members.append(live)
        poll_until([live], lambda: len(live.records) == 20 * PARTITIONS and live.all_committed(), 60,
                   "the live member's first records", cap={p: 20 for p in range(PARTITIONS)})
        cluster.kill_broker(victim)
        survivors = [a for b, a in addresses.items() if b != victim]

        # FindCoordinator names another broker: the new leader of __consumer_offsets-0, which
        # answers the committed offsets once it has loaded them from its replica of the log.
        coordinator, coordinator_address = wait_until(lambda: coordinator_agreed(survivors, unlike=victim), 60,
                                                      interval_s=0.2, message="a new coordinator")
        assert partition_view(admin, [OFFSETS_TOPIC], 1)[(OFFSETS_TOPIC, 0)][0] == coordinator
        assert wait_until(lambda: committed_at(coordinator_address), 30, message="the group loaded") == {0: 30, 1: 30}
        assert committed_at(coordinator_address, LIVE_GROUP) == {0: 20, 1: 20}

        # The live member carries on at the new coordinator, which loaded its group Stable with its
        # member and generation: its heartbeats and commits go on, and nothing is rebalanced.
        poll_until([live], lambda: committed_at(coordinator_address, LIVE_GROUP) == {0: 60, 1: 60}, 60,
                   "the live member's commits at the new coordinator", cap={p: 60 for p in range(PARTITIONS)})
        assert live.assignments == [list(range(PARTITIONS))] and live.revocations == 0
        assert sorted((p, o) for p, o, _ in live.records) == [(p, o) for p in range(PARTITIONS) for o in range(60)]
        live.close()
        members.remove(live)

        # A new member resumes right after the commits: nothing read again, nothing skipped.
        second = Member(",".join(survivors))
        members.append(second)
        poll_until([second], lambda: len(second.records) >= 20 * PARTITIONS
                   and set(first_offsets(second.records)) == set(range(PARTITIONS)), 60,
                   "the new member reads every partition", cap={p: 50 for p in range(PARTITIONS)})
        assert first_offsets(second.records) == {0: 30, 1: 30}
        assert sorted((p, o) for p, o, _ in second.records) == [(p, o) for p in range(PARTITIONS) for o in range(30, 50)]
        assert committed_at(coordinator_address) == {0: 50, 1: 50}

        # The group rebalances over two members on the new coordinator, and they commit the rest.
        third = Member(",".join(survivors))
        members.append(third)
        poll_until([second, third], lambda: second.assignment() and third.assignment()
                   and sorted(second.assignment() + third.assignment()) == list(range(PARTITIONS)), 60,
                   "the partitions split over two members")
        ends = {p: PER_PARTITION for p in range(PARTITIONS)}
        poll_until([second, third], lambda: committed_at(coordinator_address) == ends, 60,
                   "every record committed after the rebalance")
        read = {(p, o) for m in (second, third) for p, o, _ in m.records}
        assert read == {(p, o) for p in range(PARTITIONS) for o in range(30, PER_PARTITION)}

        # The killed broker comes back on its data and rejoins every ISR; its replica of
        # __consumer_offsets-0 has the commits made while it was down, as a preferred-leader
        # election that moves the coordinator back to it shows.
        cluster.restart_broker(victim)
        wait_until(lambda: (v := partition_view(admin, [OFFSETS_TOPIC], 1)) and v[(OFFSETS_TOPIC, 0)][1] == (0, 1, 2)
                   and (t := partition_view(admin, [TOPIC], PARTITIONS))
                   and all(isr == (0, 1, 2) for _, isr in t.values()), 90,
                   message="the restarted broker back in every ISR")
        for m in members:
            m.close()
        members.clear()
        elected = admin.elect_leaders(ElectionType.PREFERRED, [TopicPartition(OFFSETS_TOPIC, 0)]).result(60)
        assert all(error is None for error in elected.values()), elected
        back, back_address = wait_until(lambda: coordinator_agreed(list(addresses.values()), unlike=coordinator),
                                        60, interval_s=0.2, message="the coordinator back on the restarted broker")
        assert back == victim
        assert wait_until(lambda: committed_at(back_address), 30, message="the group loaded again") == ends
    finally:
        for m in members:
            m.close()
        cluster.stop()
