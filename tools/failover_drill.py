"""Failover drill: real clients produce with acks=all to RF=3 topics on 3 brokers while
brokers are killed -9 in turn and restarted on their data; afterwards every acknowledged record
must read back, in order per partition with no offset gaps, and every replica's log must be a
prefix of its leader's, batch for batch byte-identical but for the partitionLeaderEpoch field
(checked with all brokers stopped). Two producers run side by side: a plain one (topic
`drill`, where a retried batch may be written twice) and an idempotent one (topic
`drill-idempotent`, where no record may appear twice).

Each cycle: kill -9 every process of one broker (the next in turn, the controller too when its
turn comes); wait until every partition has a live leader again and each producer has had a
record sent after the kill acknowledged on every partition; restart the broker on its data and
port; wait until every partition's ISR holds all 3 replicas again. Each cycle prints the time
from the kill (when its signals were sent) to that last first acknowledgement (`first_ack_s`),
and from the restart to the full ISR (`isr_full_s`); the end
prints their medians and maxima (with `--output json`, one JSON document).

With `--cli` the cluster is driven as an operator drives one, through the `rafka` command
(`rafka up --detach`, `rafka broker stop ID --kill`, `rafka broker start ID`, `rafka status`,
`rafka down`; tools/cli_cluster.py), and any command that exits non-zero fails the drill;
without it, through `rafka.cluster.Cluster` in this process.

The test suite runs this drill through the command with 10 cycles
(tests/cluster/test_failover.py); the soak is this script with 50:

    .venv/bin/python tools/failover_drill.py --cycles 50 --cli
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from functools import partial
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
    first_ack_s: float   # kill -> a record sent after it acknowledged on every partition, by every producer
    isr_full_s: float    # restart called -> every partition's ISR full again


@dataclass
class DrillResult:
    cycles: list[Cycle] = field(default_factory=list)
    acknowledged: int = 0
    read_back: int = 0
    failed_deliveries: dict[str, int] = field(default_factory=dict)
    leaders: dict[str, int] = field(default_factory=dict)   # "topic-partition" -> its leader at the end
    problems: list[str] = field(default_factory=list)

    def figures(self) -> dict[str, dict[str, float] | None]:
        """Median and maximum of each cycle's figures."""
        def spread(values: list[float]) -> dict[str, float] | None:
            return {"median": statistics.median(values), "max": max(values)} if values else None
        return {"first_ack_s": spread([c.first_ack_s for c in self.cycles]),
                "isr_full_s": spread([c.isr_full_s for c in self.cycles])}

    @property
    def ok(self) -> bool:
        return not self.problems


def drill_properties(**overrides: str) -> dict[str, str]:
    """The brokers' properties: RF=3 by default, ZooKeeper sessions of 6 s, min.insync.replicas=2."""
    props = {"default.replication.factor": "3", "min.insync.replicas": "2",
             "offsets.topic.replication.factor": "3", "zookeeper.session.timeout.ms": "6000",
             "auto.create.topics.enable": "false"}
    props.update(overrides)
    return props


def drill_config(**overrides: str) -> Any:
    """`drill_properties` as a BrokerConfig, for `rafka.cluster.Cluster`."""
    from rafka.common.config import BrokerConfig

    return BrokerConfig.from_mapping(drill_properties(**overrides))


# The paced producer's client settings: a lost leader is looked up again within ~100 ms and a
# retried request does not wait long, so the time from a kill to the next acknowledgement is
# the broker's failover, not the client's back-off.
ACKED_PRODUCER_CONFIG = {"acks": "all", "linger.ms": 5, "message.timeout.ms": 120000, "request.timeout.ms": 10000,
                         "retry.backoff.ms": 100, "topic.metadata.refresh.interval.ms": 1000, "log_level": 3}


class AckedProducer:
    """A confluent-kafka producer on its own thread sending `rate_per_s` records/s: acks=all,
    records numbered in order, keyed over 97 keys (so every partition gets some), every
    acknowledgement noted as (partition, offset) -> value; after `mark(since)`, each record
    sent from `since` on also noted as (partition, sent, acknowledged), time.monotonic().
    The drill checks the first against what it reads back; the drill and bench/replication.py
    time a failover with the second (`first_acks`)."""

    def __init__(self, bootstrap: str, topic: str, idempotence: bool, rate_per_s: int) -> None:
        from confluent_kafka import Producer

        self.topic = topic
        self._producer = Producer({"bootstrap.servers": bootstrap, **ACKED_PRODUCER_CONFIG,
                                   "enable.idempotence": idempotence})
        self._rate = rate_per_s
        self.acked: dict[tuple[int, int], bytes] = {}
        self._since = float("inf")
        self._acks_since: list[tuple[int, float, float]] = []   # (partition, sent, acknowledged) after `mark`
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

    def mark(self, since: float) -> None:
        """From `since` (time.monotonic()) on, note when each record sent is acknowledged."""
        with self._lock:
            self._since, self._acks_since = since, []

    def first_acks(self, after: float) -> dict[int, float]:
        """Partition -> when its first record sent at `after` or later (after the mark) was acknowledged."""
        first: dict[int, float] = {}
        with self._lock:
            for partition, sent, acknowledged in self._acks_since:
                if sent >= after:
                    first[partition] = min(acknowledged, first.get(partition, acknowledged))
        return first

    def _on_delivery(self, sent: float, err: Any, msg: Any) -> None:
        with self._lock:
            if err is None:
                self.acked[(msg.partition(), msg.offset())] = msg.value()
                if sent >= self._since:
                    self._acks_since.append((msg.partition(), sent, time.monotonic()))
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
                                       on_delivery=partial(self._on_delivery, time.monotonic()))
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
            was_controller = controller_id(admin) == victim
            asked = time.monotonic()
            for p in producers:
                p.mark(asked)
            cluster.kill_broker(victim)
            killed = kill_moment(cluster, asked)
            _wait_or_describe(lambda: _led_without(admin, victim, partitions)
                              and all(len(p.first_acks(killed)) == partitions for p in producers),
                              step_timeout_s, f"cycle {i}: failover away from broker {victim}", cluster, admin,
                              partitions)
            first_ack = max(t for p in producers for t in p.first_acks(killed).values()) - killed
            restarted = time.monotonic()
            cluster.restart_broker(victim)
            _wait_or_describe(lambda: _all_isr_full(admin, full, partitions), step_timeout_s,
                              f"cycle {i}: broker {victim} back in every ISR", cluster, admin, partitions)
            cycle = Cycle(victim, was_controller, round(first_ack, 2), round(time.monotonic() - restarted, 2))
            result.cycles.append(cycle)
            progress(f"cycle {i + 1}/{cycles}: killed broker {victim}{' (controller)' if was_controller else ''}, "
                     f"kill to first ack on every partition {cycle.first_ack_s:.1f} s, every ISR full "
                     f"{cycle.isr_full_s:.1f} s after restart; {acked()} records acknowledged")
        result.leaders = {f"{t}-{p}": leader for (t, p), (leader, _) in (partition_view(admin, partitions=partitions)
                                                                         or {}).items()}
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


def controller_id(admin: Any) -> int | None:
    """The controller's broker id as the cluster's Metadata names it (what an operator's Kafka
    tools read; cheaper than `rafka status`, a process that joins Ray), None when not known."""
    try:
        controller = admin.describe_cluster(request_timeout=10).result(15).controller
    except Exception:  # noqa: BLE001 - a cluster between controllers: not known
        return None
    return controller.id if controller is not None else None


def kill_moment(cluster: Any, asked: float) -> float:
    """When (time.monotonic()) the last kill sent its signals: the `rafka` command reports it
    (`killed_at`, wall-clock); in this process it is when the kill was asked for (a call, then
    the signals, within milliseconds)."""
    kills = getattr(cluster, "kills", None)
    if kills:
        return max(asked, time.monotonic() - (time.time() - kills[-1]["killed_at"]))
    return asked


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


def compare_replica_logs(data_dir: Path, partitions: int = PARTITIONS,
                         leaders: dict[str, int] | None = None) -> list[str]:
    """Each partition's replicas, all brokers stopped: every log (segments concatenated) must be
    a prefix of its leader's (`leaders`: "topic-partition" -> broker; the longest log where it
    is not known), batch for batch byte-identical but for the partitionLeaderEpoch field."""
    problems = []
    for topic in TOPICS:
        for p in range(partitions):
            logs = {}
            for broker in range(BROKERS):
                part = data_dir / f"broker-{broker}" / "logs" / f"{topic}-{p}"
                logs[broker] = b"".join(f.read_bytes() for f in sorted(part.glob("*.log")))
            leader = (leaders or {}).get(f"{topic}-{p}", -1)
            reference = logs[leader] if leader in logs else max(logs.values(), key=len)
            whose = f"leader {leader}'s" if leader in logs else "the longest"
            masked = _without_leader_epochs(reference)
            for broker, data in logs.items():
                if not data or not masked.startswith(_without_leader_epochs(data)):
                    problems.append(f"{topic}-{p}: broker {broker}'s log ({len(data)} B) is not a prefix of "
                                    f"{whose} ({len(reference)} B)")
    return problems


# A record batch (magic v2): baseOffset int64, batchLength int32, partitionLeaderEpoch int32, ...
_BATCH_LENGTH_AT, _LEADER_EPOCH_AT, _LOG_OVERHEAD = 8, 12, 12


def _without_leader_epochs(log: bytes) -> bytes:
    """`log` with each batch's partitionLeaderEpoch zeroed (a truncated last batch kept as it is)."""
    out = bytearray(log)
    position = 0
    while position + _LEADER_EPOCH_AT + 4 <= len(out):
        out[position + _LEADER_EPOCH_AT:position + _LEADER_EPOCH_AT + 4] = bytes(4)
        position += _LOG_OVERHEAD + int.from_bytes(out[position + _BATCH_LENGTH_AT:position + _LEADER_EPOCH_AT], "big")
    return bytes(out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cycles", type=int, default=50, help="kill/restart cycles (default 50)")
    parser.add_argument("--partitions", type=int, default=PARTITIONS, help=f"per topic (default {PARTITIONS})")
    parser.add_argument("--rate", type=int, default=300, help="records per second the client sends (default 300)")
    parser.add_argument("--data-dir", help="where the brokers keep their data (default: a new temporary dir)")
    parser.add_argument("--cli", action="store_true",
                        help="drive the cluster through the `rafka` command (up, broker stop --kill, broker start, "
                             "status, down) instead of rafka.cluster.Cluster in this process")
    parser.add_argument("--output", choices=("text", "json"), default="text")
    args = parser.parse_args()

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
    from harness.phases import stdout_to_stderr

    data_dir = Path(args.data_dir or tempfile.mkdtemp(prefix="rafka-drill-"))
    print(f"starting {BROKERS} brokers in {data_dir}{' with `rafka up`' if args.cli else ''}...", file=sys.stderr)
    with stdout_to_stderr():   # Ray forwards its workers' logs to stdout: keep stdout for the result
        cluster = start_cluster(data_dir, args.cli)
        try:
            result = run_drill(cluster, args.cycles, partitions=args.partitions, rate_per_s=args.rate,
                               progress=lambda line: print(line, file=sys.stderr, flush=True))
        except AssertionError as e:   # a step that timed out, or a command that failed
            result = DrillResult(problems=[str(e)])
        finally:
            cluster.stop()
    result.problems += compare_replica_logs(data_dir, args.partitions, result.leaders)
    summary = {**asdict(result), "ok": result.ok, **result.figures()}
    if args.output == "json":
        print(json.dumps(summary, indent=2))
    else:
        print(f"{len(result.cycles)} cycles; {result.acknowledged} records acknowledged, {result.read_back} read back; "
              f"kill to first ack {_spread_text(summary['first_ack_s'])}, every ISR full after restart "
              f"{_spread_text(summary['isr_full_s'])}; failed deliveries {result.failed_deliveries}")
        print("OK" if result.ok else "PROBLEMS:\n  " + "\n  ".join(result.problems))
    return 0 if result.ok else 1


def start_cluster(data_dir: Path, cli: bool) -> Any:
    """The drill's 3 brokers, started through the `rafka` command (`cli`) or in this process."""
    if cli:
        from tools.cli_cluster import CliCluster

        return CliCluster(data_dir, BROKERS, drill_properties()).start()
    from rafka.cluster import Cluster

    return Cluster(data_dir, brokers=BROKERS, first_port=0, config=drill_config()).start()


def _spread_text(spread: dict[str, float] | None) -> str:
    return f"median {spread['median']:.1f} s, max {spread['max']:.1f} s" if spread else "(no cycle)"


if __name__ == "__main__":
    sys.exit(main())
