"""Failover drill: real clients produce with acks=all to RF=3 topics on 3 brokers while
brokers are killed -9 in turn and restarted on their data; afterwards every acknowledged record
must read back, in order per partition with no offset gaps, and every replica's log must be a
byte-identical prefix of the longest one. Two producers run side by side: a plain one (topic
`drill`, where a retried batch may be written twice) and an idempotent one (topic
`drill-idempotent`, where no record may appear twice).

Each cycle: kill -9 every process of one broker (the next in turn, the controller too when its
turn comes); wait until every partition has a live leader again and the producer has been
acknowledged since the kill; restart the broker on its data and port; wait until every
partition's ISR holds all 3 replicas again. The figures per cycle (failover and rejoin times)
are printed, and with `--output json` written as one JSON document.

The test suite runs this drill with a few cycles (tests/cluster/test_failover.py); the soak is
this script with 50:

    .venv/bin/python tools/failover_drill.py --cycles 50
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))   # run as a script: the repo's tests/ helpers

from tests.waiting import wait_until  # noqa: E402

TOPICS = {"drill": False, "drill-idempotent": True}   # topic -> its producer is idempotent
PARTITIONS = 3
BROKERS = 3


@dataclass
class Cycle:
    victim: int
    was_controller: bool
    failover_s: float   # kill -> every partition led by a live broker and a new record acknowledged
    rejoin_s: float     # restart called -> every partition's ISR full again


@dataclass
class DrillResult:
    cycles: list[Cycle] = field(default_factory=list)
    acknowledged: int = 0
    read_back: int = 0
    failed_deliveries: dict[str, int] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def drill_config(**overrides: str) -> Any:
    """The brokers' config: RF=3 by default, ZooKeeper sessions of 6 s, min.insync.replicas=2."""
    from rafka.common.config import BrokerConfig

    props = {"default.replication.factor": "3", "min.insync.replicas": "2",
             "offsets.topic.replication.factor": "3", "zookeeper.session.timeout.ms": "6000",
             "auto.create.topics.enable": "false"}
    props.update(overrides)
    return BrokerConfig.from_mapping(props)


class AckedProducer:
    """A confluent-kafka producer on its own thread: acks=all, records numbered in order, every
    acknowledgement noted as (partition, offset) -> value."""

    def __init__(self, bootstrap: str, topic: str, idempotence: bool, rate_per_s: int) -> None:
        from confluent_kafka import Producer

        self.topic = topic
        self._producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5,
                                   "enable.idempotence": idempotence, "message.timeout.ms": 120000,
                                   "request.timeout.ms": 10000, "retry.backoff.ms": 100,
                                   "topic.metadata.refresh.interval.ms": 1000, "log_level": 3})
        self._rate = rate_per_s
        self.acked: dict[tuple[int, int], bytes] = {}
        self.errors: dict[str, int] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"drill-producer-{topic}", daemon=True)

    def start(self) -> "AckedProducer":
        self._thread.start()
        return self

    def count(self) -> int:
        with self._lock:
            return len(self.acked)

    def _on_delivery(self, err: Any, msg: Any) -> None:
        with self._lock:
            if err is None:
                self.acked[(msg.partition(), msg.offset())] = msg.value()
            else:
                self.errors[err.name()] = self.errors.get(err.name(), 0) + 1

    def _run(self) -> None:
        n = 0
        started = time.monotonic()
        while not self._stop.is_set():
            due = started + n / self._rate
            if time.monotonic() < due:
                self._producer.poll(min(0.05, max(0.0, due - time.monotonic())))   # a negative timeout waits for ever
                continue
            try:
                self._producer.produce(self.topic, b"record-%08d" % n, key=b"k%d" % (n % 97),
                                       on_delivery=self._on_delivery)
                n += 1
            except BufferError:
                self._producer.poll(0.1)
            self._producer.poll(0)

    def stop(self, timeout_s: float) -> int:
        """Stop producing and wait for every record's outcome; the number still unsettled."""
        self._stop.set()
        self._thread.join()
        return self._producer.flush(timeout_s)


PartitionView = dict[tuple[str, int], tuple[int, tuple[int, ...]]]


def partition_view(admin: Any, names: Iterable[str] = tuple(TOPICS),
                   partitions: int = PARTITIONS) -> PartitionView | None:
    """(topic, partition) -> (leader, isr) of the topics `names`, each of `partitions` partitions,
    as a client sees them in Metadata; None if any is unknown."""
    try:
        topics = admin.list_topics(timeout=5).topics
    except Exception:  # noqa: BLE001 - a broker is going down: ask again
        return None
    view = {}
    for name in names:
        topic = topics.get(name)
        if topic is None or topic.error is not None or len(topic.partitions) != partitions:
            return None
        view.update({(name, p): (m.leader, tuple(sorted(m.isrs))) for p, m in topic.partitions.items()})
    return view


def run_drill(cluster: Any, cycles: int, *, partitions: int = PARTITIONS, rate_per_s: int = 300,
              step_timeout_s: float = 90.0, progress: Callable[[str], None] = lambda _: None) -> DrillResult:
    """Run the drill on a started 3-broker `cluster` (rafka.cluster.Cluster) with topics of
    `partitions` partitions; see the module doc."""
    from confluent_kafka.admin import AdminClient, NewTopic

    result = DrillResult()
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers, "log_level": 3})
    for future in admin.create_topics([NewTopic(t, partitions, BROKERS, config={"min.insync.replicas": "2"})
                                       for t in TOPICS]).values():
        future.result(60)
    full = tuple(range(BROKERS))
    wait_until(lambda: _all_isr_full(admin, full, partitions), step_timeout_s, message="every ISR full after creation")
    producers = [AckedProducer(cluster.bootstrap_servers, t, idempotent, rate_per_s).start()
                 for t, idempotent in TOPICS.items()]

    def acked() -> int:
        return sum(p.count() for p in producers)
    try:
        wait_until(lambda: all(p.count() > 0 for p in producers), step_timeout_s, message="a first acknowledged record")
        for i in range(cycles):
            victim = i % BROKERS
            was_controller = bool(cluster.broker_status().get(victim, {}).get("controller"))
            before = [p.count() for p in producers]
            killed = time.monotonic()
            cluster.kill_broker(victim)
            _wait_or_describe(lambda: _led_without(admin, victim, partitions)
                              and all(p.count() > n + 10 for p, n in zip(producers, before)),
                              step_timeout_s, f"cycle {i}: failover away from broker {victim}", cluster, admin,
                              partitions)
            failover = time.monotonic() - killed
            restarted = time.monotonic()
            cluster.restart_broker(victim)
            _wait_or_describe(lambda: _all_isr_full(admin, full, partitions), step_timeout_s,
                              f"cycle {i}: broker {victim} back in every ISR", cluster, admin, partitions)
            cycle = Cycle(victim, was_controller, round(failover, 2), round(time.monotonic() - restarted, 2))
            result.cycles.append(cycle)
            progress(f"cycle {i + 1}/{cycles}: killed broker {victim}{' (controller)' if was_controller else ''}, "
                     f"failover {cycle.failover_s:.1f} s, back in every ISR {cycle.rejoin_s:.1f} s "
                     f"after restart; {acked()} records acknowledged")
    finally:
        unsettled = sum(p.stop(120) for p in producers)
    if unsettled:
        result.problems.append(f"{unsettled} records never settled")
    for p in producers:
        result.acknowledged += len(p.acked)
        for name, n in p.errors.items():
            result.failed_deliveries[f"{p.topic}: {name}"] = n
        read = read_back(cluster.bootstrap_servers, p.topic, partitions)
        result.read_back += sum(len(v) for v in read.values())
        result.problems += [f"{p.topic}: {problem}" for problem in check_read_back(p.acked, read, TOPICS[p.topic])]
    return result


def _wait_or_describe(condition: Callable[[], Any], timeout_s: float, message: str, cluster: Any, admin: Any,
                      partitions: int) -> None:
    """`wait_until`; when it gives up, the error also says what the cluster looked like then:
    each partition's leader and ISR as clients see them, and each broker's own status."""
    try:
        wait_until(condition, timeout_s, message=message)
    except AssertionError as e:
        try:
            brokers = cluster.broker_status()
        except Exception as status_error:  # noqa: BLE001 - the report must not hide the timeout
            brokers = f"unavailable: {status_error!r}"
        raise AssertionError(f"{e}; partitions (leader, ISR): {partition_view(admin, partitions=partitions)};"
                             f" brokers: {brokers}") from None


def _all_isr_full(admin: Any, full: tuple[int, ...], partitions: int) -> bool:
    view = partition_view(admin, partitions=partitions)
    return view is not None and all(leader >= 0 and isr == full for leader, isr in view.values())


def _led_without(admin: Any, victim: int, partitions: int) -> bool:
    view = partition_view(admin, partitions=partitions)
    return view is not None and all(leader >= 0 and leader != victim for leader, _ in view.values())


def read_back(bootstrap: str, topic: str, partitions: int = PARTITIONS) -> dict[int, list[tuple[int, bytes]]]:
    """Every record of `topic`, per partition, as (offset, value), read up to each high watermark."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "drill-check", "enable.auto.commit": False,
                         "auto.offset.reset": "earliest", "log_level": 3})
    try:
        ends = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1] for p in range(partitions)}
        consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        got: dict[int, list[tuple[int, bytes]]] = {p: [] for p in range(partitions)}
        deadline = time.monotonic() + 120
        while any((got[p][-1][0] + 1 if got[p] else 0) < ends[p] for p in got) and time.monotonic() < deadline:
            for msg in consumer.consume(1000, timeout=1):
                if msg.error() is None:
                    got[msg.partition()].append((msg.offset(), msg.value()))
        return got
    finally:
        consumer.close()


def check_read_back(acked: dict[tuple[int, int], bytes], read: dict[int, list[tuple[int, bytes]]],
                    idempotence: bool) -> list[str]:
    """What is wrong with what was read back, given what was acknowledged."""
    problems = []
    stored = {(p, offset): value for p, records in read.items() for offset, value in records}
    lost = [key for key, value in acked.items() if stored.get(key) != value]
    if lost:
        problems.append(f"{len(lost)} acknowledged records not read back as acknowledged, e.g. {sorted(lost)[:5]}")
    for p, records in read.items():
        offsets = [o for o, _ in records]
        if offsets != list(range(len(offsets))):
            problems.append(f"partition {p}: offsets are not 0, 1, 2, ... without gaps")
    if idempotence:
        values = [v for records in read.values() for _, v in records]
        duplicates = len(values) - len(set(values))
        if duplicates:
            problems.append(f"{duplicates} duplicate records with the idempotent producer")
    return problems


def compare_replica_logs(data_dir: Path, partitions: int = PARTITIONS) -> list[str]:
    """Each partition's replicas, all brokers stopped: every log (segments concatenated) must be
    a byte-identical prefix of the longest."""
    problems = []
    for topic in TOPICS:
        for p in range(partitions):
            logs = {}
            for broker in range(BROKERS):
                part = data_dir / f"broker-{broker}" / "logs" / f"{topic}-{p}"
                logs[broker] = b"".join(f.read_bytes() for f in sorted(part.glob("*.log")))
            longest = max(logs.values(), key=len)
            for broker, data in logs.items():
                if not data or not longest.startswith(data):
                    problems.append(f"{topic}-{p}: broker {broker}'s log ({len(data)} B) is not a prefix of the "
                                    f"longest ({len(longest)} B)")
    return problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cycles", type=int, default=50, help="kill/restart cycles (default 50)")
    parser.add_argument("--partitions", type=int, default=PARTITIONS, help=f"per topic (default {PARTITIONS})")
    parser.add_argument("--rate", type=int, default=300, help="records per second the client sends (default 300)")
    parser.add_argument("--data-dir", help="where the brokers keep their data (default: a new temporary dir)")
    parser.add_argument("--output", choices=("text", "json"), default="text")
    args = parser.parse_args()

    from rafka.cluster import Cluster

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
    from _phases import stdout_to_stderr

    data_dir = Path(args.data_dir or tempfile.mkdtemp(prefix="rafka-drill-"))
    print(f"starting {BROKERS} brokers in {data_dir}...", file=sys.stderr)
    with stdout_to_stderr():   # Ray forwards its workers' logs to stdout: keep stdout for the result
        cluster = Cluster(data_dir, brokers=BROKERS, first_port=0, config=drill_config()).start()
        try:
            result = run_drill(cluster, args.cycles, partitions=args.partitions, rate_per_s=args.rate,
                               progress=lambda line: print(line, file=sys.stderr, flush=True))
        finally:
            cluster.stop()
    result.problems += compare_replica_logs(data_dir, args.partitions)
    failovers = sorted(c.failover_s for c in result.cycles)
    rejoins = sorted(c.rejoin_s for c in result.cycles)
    summary = {**asdict(result), "ok": result.ok,
               "failover_s": {"median": failovers[len(failovers) // 2], "max": failovers[-1]} if failovers else None,
               "rejoin_s": {"median": rejoins[len(rejoins) // 2], "max": rejoins[-1]} if rejoins else None}
    if args.output == "json":
        print(json.dumps(summary, indent=2))
    else:
        print(f"{len(result.cycles)} cycles; {result.acknowledged} records acknowledged, {result.read_back} read back; "
              f"failover median {summary['failover_s']}, rejoin {summary['rejoin_s']}; "
              f"failed deliveries {result.failed_deliveries}")
        print("OK" if result.ok else "PROBLEMS:\n  " + "\n  ".join(result.problems))
    return 0 if result.ok else 1


if __name__ == "__main__":
    sys.exit(main())
