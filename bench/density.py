"""What a partition costs: memory and idle CPU of one rafka broker with 0, 100 and 1,000 idle
partitions, how long creating them and restarting with them takes, and the first produce to a
dormant partition (issue 24).

One broker, started as users start it (`rafka up --detach`, with `replica.dormant.after.ms`
of --dormant-after-ms so woken partitions go back to sleep within the run). Each idle reading
waits first until the broker has settled as it does after a quiet spell of that delay: no live
replica and no spare process. In order:
  1. PSS of the whole rafka process tree (Ray, ZooKeeper, the broker) and its CPU over
     --idle-seconds, with no topic of ours;
  2. one CreateTopics of 10 topics x 10 partitions: seconds until it is answered and until
     Metadata names a leader for every partition; then PSS and idle CPU;
  3. one CreateTopics of 90 more topics x 10 (1,000 partitions in all), while a producer sends
     to an existing topic at --rate records/s (acks=1): its p99 latency of the records sent
     while the CreateTopics ran and its failed sends (the burst begins once its first record,
     which wakes the topic, is acknowledged; that time is printed apart); then PSS and idle CPU;
  4. the first acks=1 produce to each of --first-produces dormant partitions (a connected
     producer that already has the metadata): median and max from produce() to the ack;
  5. `rafka down` and `rafka up` on the same data dir: seconds until `rafka up` says it serves,
     and until Metadata names a leader for every one of the 1,000 partitions;
  6. the live and dormant replica counts `rafka status` reports.
Targets (issue 24): 1,000 idle partitions under 2 GiB PSS and under 5% of a core in total; a
restart with 1,000 partitions serving in <= 15 s; the first produce to a dormant partition
acknowledged in <= 1.5 s. Run it on a quiet machine; it prints the load average it began at.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _cpu_profile import process_cpu_s  # noqa: E402
from _procmem import descendants, tree_pss  # noqa: E402
from _rafka import rafka_down, rafka_executable, rafka_up  # noqa: E402
from confluent_kafka import Producer  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402
from harness.phases import log  # noqa: E402
from harness.report import add_output_options, finish  # noqa: E402
from harness.results_file import Recording  # noqa: E402
from harness.stats import MIB, percentile  # noqa: E402
from harness.table import Row  # noqa: E402

from rafka.common.ports import unused_port  # noqa: E402

GIB = 1 << 30
TARGET_PSS_GIB = 2.0
TARGET_IDLE_CORES = 0.05
TARGET_RESTART_S = 15.0
TARGET_FIRST_PRODUCE_S = 1.5
PARTITIONS_PER_TOPIC = 10


@dataclass
class Idle:
    partitions: int
    pss_bytes: int
    processes: int
    cores: float


@dataclass
class Results:
    load_average: float
    idle: list[Idle] = field(default_factory=list)
    create_s: dict[str, float] = field(default_factory=dict)      # "100", "1000": answered
    available_s: dict[str, float] = field(default_factory=dict)   # ... every leader in Metadata
    burst_first_ack_s: float | None = None   # the traffic topic's first produce (it wakes) before the burst
    burst_p99_ms: float | None = None        # ... its records sent while the burst's CreateTopics ran
    burst_sent: int = 0
    burst_failed: int = 0
    first_produce_s: list[float] = field(default_factory=list)
    restart_serving_s: float | None = None
    restart_available_s: float | None = None
    status: dict = field(default_factory=dict)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n  .venv/bin/python bench/density.py\n"
               "  .venv/bin/python bench/density.py --partitions 200 --idle-seconds 5 --first-produces 2 --no-record"
               "   # a quick look")
    parser.add_argument("--partitions", type=int, default=1000, help="partitions in all (default 1000)")
    parser.add_argument("--dormant-after-ms", type=int, default=5000, help="replica.dormant.after.ms (default 5000)")
    parser.add_argument("--idle-seconds", type=float, default=30.0, help="CPU window of each idle reading")
    parser.add_argument("--rate", type=int, default=500, help="records/s of the producer during the burst")
    parser.add_argument("--first-produces", type=int, default=5, help="dormant partitions produced to first")
    add_output_options(parser, data_dir="rafka's data and the properties file")
    args = parser.parse_args(argv)
    recording = Recording.start(__file__, __doc__, argv)

    results = Results(load_average=os.getloadavg()[0])
    with tempfile.TemporaryDirectory(prefix="rafka-density-") as tmp:
        data_dir = Path(args.data_dir or tmp)
        config = data_dir / "server.properties"
        data_dir.mkdir(parents=True, exist_ok=True)
        config.write_text(f"replica.dormant.after.ms={args.dormant_after_ms}\n")
        run(results, args, data_dir, config)
    rows = target_rows(results, args.partitions)
    finish(recording, args, rows, {**asdict(results), "table": [row.to_json() for row in rows]}, {},
           readings_text(results, args))
    return 0


def run(results: Results, args: argparse.Namespace, data_dir: Path, config: Path) -> None:
    port = unused_port()
    bootstrap, pid, _ = up(data_dir, config, port)
    try:
        settle(data_dir, live=0)
        results.idle.append(idle(pid, 0, args.idle_seconds))
        admin = AdminClient({"bootstrap.servers": bootstrap})
        first = min(100, args.partitions)
        create(admin, results, "density-a", 0, first // PARTITIONS_PER_TOPIC, str(first))
        settle(data_dir, live=0)
        results.idle.append(idle(pid, first, args.idle_seconds))

        create(admin, results, "traffic", 0, 1, None, partitions=1)
        burst = Burst(bootstrap, args.rate)
        burst.start()
        # The client produces to an existing topic in use (issue 24): its first records, which
        # wake the new partition, are acknowledged before the burst begins, and timed apart.
        results.burst_first_ack_s = burst.wait_first_ack(timeout_s=60)
        rest = (args.partitions - first) // PARTITIONS_PER_TOPIC
        began = time.monotonic()
        create(admin, results, "density-b", 0, rest, str(args.partitions))
        ended = time.monotonic()
        burst.stop()
        results.burst_p99_ms = burst.p99_ms(began, ended)
        results.burst_sent, results.burst_failed = burst.sent, burst.failed
        log(f"  burst: {burst.sent} records sent, {burst.failed} failed, p99 {results.burst_p99_ms} ms of those"
            f" sent during the CreateTopics; the first ack took {results.burst_first_ack_s:.2f} s")
        settle(data_dir, live=0)   # (the traffic topic's too: its producer has stopped)
        results.idle.append(idle(pid, args.partitions, args.idle_seconds))
        results.first_produce_s = first_produces(bootstrap, args.first_produces)
    finally:
        rafka_down(data_dir)
    started = time.monotonic()
    bootstrap, pid, serving_s = up(data_dir, config, port)
    try:
        results.restart_serving_s = serving_s
        admin = AdminClient({"bootstrap.servers": bootstrap})
        wait_leaders(admin, {f"density-{s}-{i}" for s, n in (("a", first // PARTITIONS_PER_TOPIC),
                                                             ("b", (args.partitions - first) // PARTITIONS_PER_TOPIC))
                             for i in range(n)})
        results.restart_available_s = time.monotonic() - started
        log(f"  restart: serving in {serving_s:.1f} s, every leader in {results.restart_available_s:.1f} s")
        results.status = status(data_dir)
    finally:
        rafka_down(data_dir)


# -- rafka --------------------------------------------------------------------------------
def up(data_dir: Path, config: Path, port: int) -> tuple[str, int, float]:
    """`rafka up --detach`: (bootstrap servers, server pid, seconds until it served)."""
    log("rafka up...")
    running, elapsed = rafka_up(data_dir, port=port, config=config, timeout_s=300)
    log(f"  serving at {running.bootstrap_servers} after {elapsed:.1f} s")
    return running.bootstrap_servers, running.pid, elapsed


def status(data_dir: Path) -> dict:
    out = subprocess.run([rafka_executable(), "status", "--data-dir", str(data_dir), "--output", "json"],
                         capture_output=True, text=True, timeout=120)
    broker = next(iter(json.loads(out.stdout)["brokers"].values()))
    return {k: broker.get(k) for k in ("live_replicas", "dormant_replicas", "spare_replica_processes",
                                       "spare_replica_processes_starting", "pss_bytes")}


def idle(pid: int, partitions: int, seconds: float) -> Idle:
    """PSS of the rafka process tree and its CPU over `seconds` of idleness."""
    pids = [pid, *descendants(pid)]
    before = {p: process_cpu_s(p) for p in pids}
    time.sleep(seconds)
    used = sum((after - before[p]) for p in pids
               if before[p] is not None and (after := process_cpu_s(p)) is not None)
    memory = tree_pss(pid, include_root=True)
    reading = Idle(partitions, memory.total_bytes, len(pids), used / seconds)
    log(f"  {partitions} idle partitions: PSS {reading.pss_bytes / MIB:,.0f} MiB over {reading.processes} "
        f"processes, {reading.cores * 100:.1f}% of a core")
    return reading


def create(admin: AdminClient, results: Results, prefix: str, first: int, topics: int, label: str | None, *,
           partitions: int = PARTITIONS_PER_TOPIC) -> None:
    """One CreateTopics of `topics` topics; times until answered and until every leader is known."""
    names = [f"{prefix}-{i}" for i in range(first, first + topics)]
    if not names:
        return
    log(f"creating {len(names) * partitions} partitions in one CreateTopics...")
    started = time.monotonic()
    futures = admin.create_topics([NewTopic(n, partitions, 1) for n in names], request_timeout=300,
                                  operation_timeout=300)
    for future in futures.values():
        future.result(600)
    answered = time.monotonic() - started
    wait_leaders(admin, set(names))
    available = time.monotonic() - started
    log(f"  answered in {answered:.1f} s, every leader known in {available:.1f} s")
    if label is not None:
        results.create_s[label], results.available_s[label] = answered, available


def wait_leaders(admin: AdminClient, names: set[str], timeout_s: float = 600) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        topics = admin.list_topics(timeout=30).topics
        if all(n in topics and topics[n].error is None and topics[n].partitions
               and all(p.leader >= 0 for p in topics[n].partitions.values()) for n in names):
            return
        time.sleep(0.2)
    raise SystemExit(f"leaders of {len(names)} topics not known within {timeout_s} s")


def settle(data_dir: Path, live: int, timeout_s: float = 300) -> None:
    """Until the broker is as idle as after a quiet spell of replica.dormant.after.ms: at most
    `live` live replicas (those with traffic) and no spare process, ready or starting (a quiet
    broker ends them, `spare_demand.py`)."""
    log(f"waiting for the broker to settle ({live} live replicas, no spare process)...")
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        now = status(data_dir)
        if (now.get("live_replicas") or 0) <= live and not now.get("spare_replica_processes") \
                and not now.get("spare_replica_processes_starting"):
            return
        time.sleep(1)
    log(f"  not settled after {timeout_s:.0f} s: {status(data_dir)}")


def first_produces(bootstrap: str, count: int) -> list[float]:
    """Seconds from produce() to the ack for one record to each of `count` dormant partitions."""
    log(f"first produce to {count} dormant partitions...")
    producer = Producer({"bootstrap.servers": bootstrap, "acks": 1, "linger.ms": 0})
    producer.list_topics(timeout=30)
    out = []
    for i in range(count):
        done = threading.Event()
        started = time.monotonic()
        took: list[float] = []
        producer.produce("density-b-0", b"wake", partition=i % PARTITIONS_PER_TOPIC,
                         on_delivery=lambda err, msg: (took.append(time.monotonic() - started), done.set()))
        while not done.is_set():
            producer.poll(0.01)
        out.append(took[0])
        log(f"  partition {i}: {took[0] * 1000:.0f} ms")
    producer.flush(30)
    return out


class Burst:
    """A steady acks=1 producer to the `traffic` topic, timing each record."""

    def __init__(self, bootstrap: str, rate: int) -> None:
        self._producer = Producer({"bootstrap.servers": bootstrap, "acks": 1, "linger.ms": 0,
                                   "message.timeout.ms": 30000})
        self._rate = rate
        self._latencies: list[tuple[float, float]] = []   # (sent at, seconds to the ack)
        self._started_at = 0.0
        self._first_ack = threading.Event()
        self.sent = self.failed = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> None:
        self._started_at = time.monotonic()
        self._thread.start()

    def wait_first_ack(self, timeout_s: float) -> float:
        """Seconds from the start until the first record was acknowledged."""
        if not self._first_ack.wait(timeout_s):
            raise SystemExit(f"no record to the traffic topic acknowledged within {timeout_s} s")
        return min(sent_at + took for sent_at, took in self._latencies) - self._started_at

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        self._producer.flush(60)

    def _run(self) -> None:
        interval = 1 / self._rate
        next_at = time.monotonic()
        while not self._stop.is_set():
            sent_at = time.monotonic()
            self._producer.produce("traffic", b"x" * 100, partition=0, on_delivery=self._delivered(sent_at))
            self.sent += 1
            self._producer.poll(0)
            next_at += interval
            time.sleep(max(0.0, next_at - time.monotonic()))

    def _delivered(self, sent_at: float):
        def callback(err, msg) -> None:
            if err is not None:
                self.failed += 1
            else:
                self._latencies.append((sent_at, time.monotonic() - sent_at))
                self._first_ack.set()
        return callback

    def p99_ms(self, began: float, ended: float) -> float | None:
        """p99 latency of the records sent between `began` and `ended`."""
        ordered = sorted(took for sent_at, took in self._latencies if began <= sent_at <= ended)
        return round(percentile(ordered, 0.99) * 1000, 1) if ordered else None


def target_rows(r: Results, partitions: int) -> list[Row]:
    """Issue 24's targets: idle PSS and CPU with every partition, the first produce to a dormant
    partition, and a restart until every leader is known."""
    last = r.idle[-1] if r.idle else None
    first = max(r.first_produce_s) if r.first_produce_s else None
    return [
        Row(f"{partitions:,} idle partitions: PSS GiB vs {TARGET_PSS_GIB:g} GiB",
            last.pss_bytes / GIB if last else None, TARGET_PSS_GIB, "GiB", ("<=", 1.0)),
        Row(f"{partitions:,} idle partitions: CPU, cores vs {TARGET_IDLE_CORES:g}",
            last.cores if last else None, TARGET_IDLE_CORES, "ratio", ("<=", 1.0)),
        Row(f"first produce to a dormant partition, max s vs {TARGET_FIRST_PRODUCE_S:g} s", first,
            TARGET_FIRST_PRODUCE_S, "s", ("<=", 1.0)),
        Row(f"restart with {partitions:,} partitions, s until every leader is known vs {TARGET_RESTART_S:g} s",
            r.restart_available_s, TARGET_RESTART_S, "s", ("<=", 1.0)),
    ]


def readings_text(r: Results, args: argparse.Namespace) -> str:
    """The readings, one line each (the targets are judged in the table after them)."""
    lines = [f"rafka partition density (1 broker; replica.dormant.after.ms={args.dormant_after_ms}; "
             f"load average at start {r.load_average:.1f})",
             f"{'idle partitions':>16} {'PSS MiB':>9} {'processes':>10} {'CPU % of a core':>16}"]
    lines += [f"{i.partitions:>16,} {i.pss_bytes / MIB:>9,.0f} {i.processes:>10} {i.cores * 100:>16.1f}" for i in r.idle]
    lines += [f"  create {label} partitions: answered in {r.create_s[label]:.1f} s, every leader known in "
              f"{r.available_s[label]:.1f} s" for label in r.create_s]
    if r.burst_first_ack_s is not None:
        lines.append(f"  a producer during the burst ({args.rate} rec/s, acks=1, to a topic in use): p99"
                     f" {r.burst_p99_ms} ms, {r.burst_failed} of {r.burst_sent} sends failed (its first record, to the"
                     f" new topic: acknowledged in {r.burst_first_ack_s:.2f} s)")
    if r.first_produce_s:
        lines.append(f"  first produce to a dormant partition: median {statistics.median(r.first_produce_s) * 1000:.0f}"
                     f" ms, max {max(r.first_produce_s) * 1000:.0f} ms")
    if r.restart_serving_s is not None and r.restart_available_s is not None:
        lines.append(f"  restart with {args.partitions:,} partitions on disk: serving in {r.restart_serving_s:.1f} s,"
                     f" every leader known in {r.restart_available_s:.1f} s")
    lines.append(f"  after the restart `rafka status`: {r.status}")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
