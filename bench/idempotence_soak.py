"""Idempotence soak (issue 56): retrying idempotent producers never store a duplicate while the
live-replica cap forces rests and wakes.

One broker (in this process's Ray, its own ZooKeeper and data dir), --topics topics of
--partitions partitions, all dormant at first. For --minutes, an idempotent producer (acks=all,
`max.in.flight.requests.per.connection=5`, a short `request.timeout.ms`, so that requests held
by a wake or a busy machine time out and are retried) writes in waves: each wave of --wave-s
writes the next few topics (`_soak_check.per_wave`: the run goes round all of them), so
replicas written in older waves fall idle and are put to rest to make room under
`replica.max.live.processes` (--live-max), and are woken when their topics come round again.
`replica.dormant.after.ms` stays long (5 min, the default): rests come from the cap, which
must never pick a replica written within `replica.dormant.retry.horizon.ms` (the default,
30.1 s). Then every partition is read back and checked (`_soak_check.check_partition`): zero
duplicates, zero gaps, every acknowledged record at its offset. Prints the records sent and
acknowledged, the errors the producer reported, the rests, wakes and wakes over the cap the
broker counted, and the findings; exits 0 when the findings are clean, 1 otherwise.

A short run to see it work: `python bench/idempotence_soak.py --topics 12 --minutes 2`.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness.phases import log  # noqa: E402
from _soak_check import Findings, check_partition, per_wave, wave_topics  # noqa: E402

from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec  # noqa: E402


@dataclass
class Results:
    topics: int = 0
    partitions: int = 0
    minutes: float = 0.0
    sent: int = 0
    acknowledged: int = 0
    errors: dict[str, int] = field(default_factory=dict)
    rests: int = 0
    wakes: int = 0
    wakes_over_the_cap: int = 0
    most_live: int = 0
    findings: dict[str, int] = field(default_factory=dict)
    clean: bool = False


class Deliveries:
    """What the producer reported, per partition: value -> offset (None: not told)."""

    def __init__(self) -> None:
        self.acked: dict[tuple[str, int], dict[bytes, int | None]] = defaultdict(dict)
        self.errors: Counter[str] = Counter()

    def __call__(self, err, msg) -> None:
        if err is not None:
            self.errors[err.name()] += 1
        else:
            offset = msg.offset()
            self.acked[(msg.topic(), msg.partition())][msg.value()] = offset if offset is not None and offset >= 0 else None


def topic_name(index: int) -> str:
    return f"soak-{index}"


def produce_waves(bootstrap: str, args: argparse.Namespace, deliveries: Deliveries, results: Results,
                  stop: threading.Event) -> None:
    """Write the waves for --minutes at about --rate records per second, then flush."""
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all",
                         "max.in.flight.requests.per.connection": 5, "linger.ms": 5,
                         "request.timeout.ms": args.request_timeout_ms, "socket.timeout.ms": args.request_timeout_ms,
                         "retry.backoff.ms": 100, "message.timeout.ms": 600_000})
    count = per_wave(args.topics, args.wave_s, args.minutes * 60)
    started = time.monotonic()
    end = started + args.minutes * 60
    sequence = 0
    tick_s = 0.1
    next_tick = started
    while not stop.is_set() and time.monotonic() < end:
        wave = int((time.monotonic() - started) // args.wave_s)
        targets = [(topic_name(t), p) for t in wave_topics(args.topics, wave, count) for p in range(args.partitions)]
        for _ in range(max(1, int(args.rate * tick_s))):
            topic, partition = targets[sequence % len(targets)]
            value = b"%s/%d/%d" % (topic.encode(), partition, sequence)
            while True:
                try:
                    producer.produce(topic, value, partition=partition, on_delivery=deliveries)
                    break
                except BufferError:   # the client's queue is full: a wake holds its batches
                    producer.poll(0.1)
            sequence += 1
        next_tick += tick_s     # (pacing: --rate records a second; poll returns at each delivery report)
        while (left := next_tick - time.monotonic()) > 0:
            producer.poll(left)
    results.sent = sequence
    log(f"sent {sequence} records; flushing...")
    left = producer.flush(args.flush_timeout_s)
    if left:
        log(f"{left} records still unacknowledged after {args.flush_timeout_s} s")


def watch_live(cluster, broker_id: int, results: Results, stop: threading.Event) -> None:
    """The most live replicas the broker reported, every 5 s (a status reads every process's
    memory: asked each second, it took a tenth of a core from the broker it measures)."""
    while not stop.wait(5.0):
        try:
            results.most_live = max(results.most_live, len(cluster.broker_status(memory=False)[broker_id]["replicas"]))
        except Exception:  # noqa: BLE001 - a slow status call: the next one counts
            pass


def read_back(bootstrap: str, args: argparse.Namespace, deliveries: Deliveries) -> Findings:
    """Every partition from offset 0 to its end, checked against what was acknowledged."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    wanted = {TopicPartition(topic_name(t), p): OffsetSpec.latest()
              for t in range(args.topics) for p in range(args.partitions)}
    ends = {(tp.topic, tp.partition): future.result(60).offset
            for tp, future in admin.list_offsets(wanted, request_timeout=60).items()}
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "soak-reader", "enable.auto.commit": False,
                         "fetch.wait.max.ms": 100})
    consumer.assign([TopicPartition(t, p, 0) for (t, p), end in ends.items() if end > 0])
    read: dict[tuple[str, int], list[tuple[int, bytes]]] = defaultdict(list)
    behind = {key for key, end in ends.items() if end > 0}
    deadline = time.monotonic() + args.read_timeout_s
    while behind and time.monotonic() < deadline:
        for msg in consumer.consume(1000, timeout=0.5):
            if msg.error() is not None:
                continue
            key = (msg.topic(), msg.partition())
            read[key].append((msg.offset(), msg.value()))
            if msg.offset() + 1 >= ends[key]:
                behind.discard(key)
    consumer.close()
    if behind:
        log(f"{len(behind)} partitions not read to their end within {args.read_timeout_s} s")
    findings = Findings()
    for key in ends:
        findings.add(check_partition(read.get(key, []), deliveries.acked.get(key, {})))
    return findings


def run(args: argparse.Namespace, data_dir: Path) -> Results:
    from rafka.cluster import Cluster
    from rafka.common.config import BrokerConfig

    results = Results(topics=args.topics, partitions=args.partitions, minutes=args.minutes)
    config = BrokerConfig.from_mapping({"replica.max.live.processes": str(args.live_max),
                                        "replica.dormant.after.ms": str(args.dormant_after_ms)})
    cluster = Cluster(data_dir, brokers=1, first_port=0, config=config, namespace="rafka-soak")
    cluster.start()
    stop = threading.Event()
    try:
        bootstrap = cluster.bootstrap_servers
        broker_id = next(iter(cluster.brokers))
        admin = AdminClient({"bootstrap.servers": bootstrap})
        names = [topic_name(t) for t in range(args.topics)]
        log(f"creating {len(names)} topics of {args.partitions} partitions...")
        for future in admin.create_topics([NewTopic(n, args.partitions, 1) for n in names],
                                          request_timeout=300, operation_timeout=300).values():
            future.result(600)
        deliveries = Deliveries()
        watcher = threading.Thread(target=watch_live, args=(cluster, broker_id, results, stop), daemon=True)
        watcher.start()
        log(f"writing for {args.minutes} min ({per_wave(args.topics, args.wave_s, args.minutes * 60)} topics "
            f"a wave of {args.wave_s} s, replica.max.live.processes={args.live_max})...")
        produce_waves(bootstrap, args, deliveries, results, stop)
        stop.set()
        status = cluster.broker_status()[broker_id]
        results.rests, results.wakes = status.get("rests", 0), status.get("wakes", 0)
        results.wakes_over_the_cap = status.get("wakes_over_the_cap", 0)
        results.acknowledged = sum(len(v) for v in deliveries.acked.values())
        results.errors = dict(deliveries.errors)
        log("reading every partition back...")
        findings = read_back(bootstrap, args, deliveries)
        results.findings = asdict(findings)
        results.clean = findings.clean and not results.errors and results.acknowledged == results.sent
        if args.keep_topics:
            log(f"keeping the topics in {args.data_dir or '(a temporary dir)'} for dump-log")
            names = []
        try:   # (tidying up: a slow or failed deletion does not lose the findings above)
            for future in (admin.delete_topics(names, request_timeout=300, operation_timeout=300).values()
                           if names else ()):
                future.result(600)
        except Exception as e:  # noqa: BLE001 - the broker is stopped next anyway
            log(f"could not delete the soak's topics: {e!r}")
    finally:
        stop.set()
        cluster.stop()
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     epilog="example: python bench/idempotence_soak.py --topics 12 --minutes 2")
    parser.add_argument("--topics", type=int, default=200)
    parser.add_argument("--partitions", type=int, default=6)
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--wave-s", type=float, default=15.0, help="seconds each wave writes its topics")
    parser.add_argument("--rate", type=int, default=300, help="records per second in all")
    parser.add_argument("--live-max", type=int, default=32, help="replica.max.live.processes")
    parser.add_argument("--dormant-after-ms", type=int, default=300_000, help="replica.dormant.after.ms")
    parser.add_argument("--request-timeout-ms", type=int, default=5000, help="the producer's request.timeout.ms")
    parser.add_argument("--flush-timeout-s", type=float, default=600.0)
    parser.add_argument("--read-timeout-s", type=float, default=600.0)
    parser.add_argument("--data-dir", help="the broker's data dir (default: a temporary one)")
    parser.add_argument("--keep-topics", action="store_true",
                        help="leave the topics in --data-dir after the run, to read them with `rafka dump-log`")
    parser.add_argument("--output", choices=("text", "json"), default="text")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="rafka-soak-") as tmp:
        results = run(args, Path(args.data_dir or tmp))
    if args.output == "json":
        print(json.dumps(asdict(results), indent=2))
    else:
        print(f"idempotence soak: {results.topics} topics x {results.partitions} partitions, {results.minutes:g} min")
        print(f"  records sent {results.sent}, acknowledged {results.acknowledged}, errors {results.errors or 'none'}")
        print(f"  rests {results.rests}, wakes {results.wakes}, wakes over the cap {results.wakes_over_the_cap},"
              f" most live replicas {results.most_live}")
        print(f"  read back {results.findings.get('records', 0)} records: duplicates {results.findings.get('duplicates')},"
              f" gaps {results.findings.get('gaps')}, missing {results.findings.get('missing')},"
              f" re-reads of one offset {results.findings.get('rereads')}"
              f" -> {'clean' if results.clean else 'NOT CLEAN'}")
        for example in results.findings.get("examples", []):
            print(f"    duplicate: {example}")
    return 0 if results.clean else 1


if __name__ == "__main__":
    sys.exit(main())
