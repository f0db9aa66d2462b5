"""Consumer groups with real clients, each member its own process (tests/interop/group_member.py):
members split a 6-partition topic with no overlap, a third joins and the load spreads, one
leaves cleanly, one is killed (its share moves after the session timeout), every record is
consumed at least once, and a restarted group resumes right after its last commit."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading

import pytest

from tests.interop.clients import create_topic
from tests.waiting import wait_until

PARTITIONS = 6
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class Member:
    """A group member process and what it printed."""

    def __init__(self, client: str, bootstrap: str, topic: str, group: str, assignor: str | None = None,
                 instance_id: str | None = None) -> None:
        args = [sys.executable, "-m", "tests.interop.group_member", client, bootstrap, topic, group]
        if assignor:
            args += ["--assignor", assignor]
        if instance_id:
            args += ["--instance-id", instance_id]
        self.proc = subprocess.Popen(args, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.assignment: list[int] | None = None
        self.assignments: list[list[int]] = []
        self.records: list[tuple[int, int, str]] = []
        self.events: list[dict] = []
        self.closed = False
        self._lock = threading.Lock()
        threading.Thread(target=self._read, daemon=True).start()
        self._stderr: list[str] = []
        threading.Thread(target=lambda: self._stderr.extend(self.proc.stderr), daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            event = json.loads(line)
            with self._lock:
                self.events.append(event)
                if event["event"] == "assigned":
                    self.assignment = event["partitions"]
                    self.assignments.append(event["partitions"])
                elif event["event"] == "records":
                    self.records += [tuple(r) for r in event["records"]]
                elif event["event"] == "closed":
                    self.closed = True

    def leave(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(30)
        assert self.proc.returncode == 0, "".join(self._stderr)[-2000:]

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait(10)

    def stop_quietly(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


def produce(bootstrap: str, topic: str, start: int, count: int) -> list[str]:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    values = [f"v-{i:06d}" for i in range(start, start + count)]
    for i, value in enumerate(values):
        producer.produce(topic, value.encode(), partition=i % PARTITIONS)
    assert producer.flush(30) == 0
    return values


def split_evenly(members: list[Member]) -> bool:
    """True when the members' current assignments cover every partition exactly once and
    every member has some."""
    owned = [p for m in members for p in (m.assignment or [])]
    return sorted(owned) == list(range(PARTITIONS)) and all(m.assignment for m in members)


def consumed(members: list[Member]) -> set[str]:
    return {value for m in members for _, _, value in m.records}


CLIENTS = ["kafka-python", "confluent-kafka", "aiokafka"]


# On three brokers one client (kafka-python: the coordinator found, joined and committed to by
# FindCoordinator/JoinGroup/SyncGroup/OffsetCommit on whichever broker leads the group's partition).
@pytest.mark.parametrize("client", [pytest.param(c, marks=pytest.mark.replicated) if c == "kafka-python" else c
                                    for c in CLIENTS])
def test_group_splits_rebalances_and_resumes_after_commits(rafka_cluster, client):
    bootstrap = rafka_cluster.bootstrap_servers
    topic, group = f"groups-{client}", f"group-{client}"
    create_topic(bootstrap, topic, partitions=PARTITIONS)
    sent = produce(bootstrap, topic, 0, 600)
    members: list[Member] = []
    try:
        a, b = Member(client, bootstrap, topic, group), Member(client, bootstrap, topic, group)
        members += [a, b]
        wait_until(lambda: split_evenly([a, b]), 60, message="two members split the partitions")
        c = Member(client, bootstrap, topic, group)
        members.append(c)
        wait_until(lambda: split_evenly([a, b, c]), 60, message="a third member gets a share")

        a.leave()
        wait_until(lambda: split_evenly([b, c]), 60, message="the leaver's share moves")
        b.kill()
        wait_until(lambda: split_evenly([c]), 60, message="the killed member's share moves after its session")

        sent += produce(bootstrap, topic, 600, 600)
        wait_until(lambda: consumed(members) >= set(sent), 60, message="every record consumed at least once")
        c.leave()

        # A restarted group resumes right after the last commit: nothing old is read again.
        d = Member(client, bootstrap, topic, group)
        members.append(d)
        wait_until(lambda: d.assignment is not None and sorted(d.assignment) == list(range(PARTITIONS)), 60,
                   message="the restarted member owns every partition")
        fresh = produce(bootstrap, topic, 1200, 60)
        wait_until(lambda: consumed([d]) >= set(fresh), 60, message="the restarted member reads new records")
        # An old record read again would sit below the new ones in its partition, so it would
        # have arrived before them: what was read now is all there is to check.
        assert {value for _, _, value in d.records} == set(fresh)
        assert sorted(offset for p, offset, _ in d.records if p == 0) == list(range(200, 210))
    finally:
        for m in members:
            m.stop_quietly()


def test_cooperative_sticky_group_rebalances_incrementally(rafka_cluster):
    bootstrap = rafka_cluster.bootstrap_servers
    topic, group = "groups-cooperative", "group-cooperative"
    create_topic(bootstrap, topic, partitions=PARTITIONS)
    members: list[Member] = []
    try:
        a = Member("confluent-kafka", bootstrap, topic, group, assignor="cooperative-sticky")
        members.append(a)
        wait_until(lambda: split_evenly([a]), 60, message="one member owns everything")
        b = Member("confluent-kafka", bootstrap, topic, group, assignor="cooperative-sticky")
        members.append(b)
        wait_until(lambda: split_evenly([a, b]), 60, message="the second member gets a share")
        # Incremental: the first member only ever gave partitions up, it never dropped to none.
        after_first = a.assignments[a.assignments.index(list(range(PARTITIONS))):]
        assert all(after for after in after_first), a.assignments
    finally:
        for m in members:
            m.stop_quietly()


def test_kcat_consumes_in_a_group(rafka_cluster):
    if shutil.which("kcat") is None:
        pytest.fail("kcat is not installed: run `make test`, which installs it")
    bootstrap = rafka_cluster.bootstrap_servers
    topic = "groups-kcat"
    create_topic(bootstrap, topic, partitions=PARTITIONS)
    sent = produce(bootstrap, topic, 0, 300)
    out = subprocess.run(["kcat", "-b", bootstrap, "-G", "group-kcat", "-o", "beginning", "-e",
                          "-f", "%p %o %s\n", topic], capture_output=True, text=True, timeout=120)
    lines = [line.split() for line in out.stdout.splitlines() if line.strip()]
    assert sorted(value for _, _, value in lines) == sorted(sent), out.stderr[-2000:]
