#!/usr/bin/env python
"""Consumer-group costs of rafka, from one run (confluent-kafka, one broker started with
`rafka up --detach` and its defaults):

  1. rebalance time for 2, 4 and 8 members: from the moment they all subscribe to the moment
     every member has fetched a record, beside `group.initial.rebalance.delay.ms` (Kafka's
     default 3 s: the first rebalance of an empty group waits that long for more members);
  2. offset-commit latency p50/p99 and commits/s of one consumer committing synchronously.

Progress goes to stderr, results to stdout. Exit 0 when every phase ran, 1 otherwise.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import _kafka
import _rafka
from confluent_kafka import Consumer, Producer, TopicPartition

MEMBER_COUNTS = (2, 4, 8)
PARTITIONS = 16
INITIAL_REBALANCE_DELAY_MS = 3000  # rafka's default, as Kafka's


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def fill(bootstrap: str, topic: str) -> None:
    """Create `topic` and put records in every partition, so every member has something to fetch."""
    _kafka.create_topic(bootstrap, topic, partitions=PARTITIONS)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i in range(PARTITIONS * 50):
        producer.produce(topic, b"x" * 100, partition=i % PARTITIONS)
    producer.flush(30)


def rebalance_seconds(bootstrap: str, members: int, timeout_s: float = 120) -> float:
    """Seconds from `members` consumers subscribing together to all of them holding a record."""
    topic = f"bench-groups-{members}-{int(time.time() * 1000)}"
    fill(bootstrap, topic)
    group = f"bench-group-{members}-{int(time.time() * 1000)}"
    got = [threading.Event() for _ in range(members)]
    consumers = [Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                           "enable.auto.commit": False}) for _ in range(members)]
    stop = threading.Event()

    def poll(i: int) -> None:
        while not stop.is_set():
            msg = consumers[i].poll(0.05)
            if msg is not None and msg.error() is None:
                got[i].set()

    started = time.perf_counter()
    for c in consumers:
        c.subscribe([topic])
    threads = [threading.Thread(target=poll, args=(i,)) for i in range(members)]
    for t in threads:
        t.start()
    try:
        deadline = time.monotonic() + timeout_s
        for event in got:
            if not event.wait(max(0.0, deadline - time.monotonic())):
                raise _kafka.PhaseError(f"{members} members: not all fetched within {timeout_s:.0f} s")
        return time.perf_counter() - started
    finally:
        stop.set()
        for t in threads:
            t.join()
        for c in consumers:
            c.close()


def commit_latencies(bootstrap: str, commits: int) -> tuple[list[float], float]:
    """Latency of each of `commits` synchronous commits by one group member, and their total time."""
    topic = f"bench-commits-{int(time.time() * 1000)}"
    fill(bootstrap, topic)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-commit-{time.time()}",
                         "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    while not consumer.assignment():
        consumer.poll(0.1)
    latencies = []
    started = time.perf_counter()
    for i in range(commits):
        offsets = [TopicPartition(topic, i % PARTITIONS, i + 1)]
        t0 = time.perf_counter()
        consumer.commit(offsets=offsets, asynchronous=False)
        latencies.append(time.perf_counter() - t0)
    total = time.perf_counter() - started
    consumer.close()
    return latencies, total


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="example: .venv/bin/python bench/groups.py --commits 2000")
    parser.add_argument("--commits", type=int, default=2000, help="synchronous commits to time (default 2000)")
    parser.add_argument("--repeat", type=int, default=2, help="rebalances per member count (default 2)")
    args = parser.parse_args(argv)
    failures = 0
    rebalances: dict[int, list[float]] = {}
    latencies: list[float] = []
    total = 0.0
    with tempfile.TemporaryDirectory(prefix="rafka-bench-groups-") as tmp:
        log("starting rafka (rafka up --detach)")
        with _rafka.rafka_cluster(Path(tmp) / "rafka") as cluster:
            bootstrap = cluster.bootstrap_servers
            for members in MEMBER_COUNTS:
                for run in range(1, args.repeat + 1):
                    log(f"rebalance of {members} members (run {run}/{args.repeat})")
                    try:
                        rebalances.setdefault(members, []).append(rebalance_seconds(bootstrap, members))
                    except Exception as e:  # noqa: BLE001 - reported, the other phases go on
                        failures += 1
                        log(f"  failed: {e}")
            log(f"{args.commits} synchronous offset commits")
            try:
                latencies, total = commit_latencies(bootstrap, args.commits)
            except Exception as e:  # noqa: BLE001
                failures += 1
                log(f"  failed: {e}")
    print(f"group.initial.rebalance.delay.ms: {INITIAL_REBALANCE_DELAY_MS} ms (default)")
    print(f"{'members':>8} {'best rebalance s':>17} {'all runs s':>24} {'minus initial delay s':>22}")
    for members, runs in rebalances.items():
        best = min(runs)
        print(f"{members:>8} {best:>17.2f} {', '.join(f'{r:.2f}' for r in runs):>24}"
              f" {best - INITIAL_REBALANCE_DELAY_MS / 1000:>22.2f}")
    if latencies:
        print(f"offset commit (one consumer, synchronous, {len(latencies)} commits):"
              f" p50 {percentile(latencies, 0.5) * 1000:.2f} ms, p99 {percentile(latencies, 0.99) * 1000:.2f} ms,"
              f" mean {statistics.mean(latencies) * 1000:.2f} ms, {len(latencies) / total:,.0f} commits/s")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
