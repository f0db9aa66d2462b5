#!/usr/bin/env python
"""Consumer-group costs of rafka, from one run (confluent-kafka, one broker started with
`rafka up --detach` and its defaults):

  1. rebalance time for 2, 4 and 8 members: from the moment they all subscribe to the moment
     every member has fetched a record, beside `group.initial.rebalance.delay.ms` (Kafka's
     default 3 s: the first rebalance of an empty group waits that long for more members);
  2. offset-commit latency p50/p99 and commits/s of one consumer committing synchronously.

Progress goes to stderr, results to stdout (--output json: one JSON document). Exit 0 when
every phase ran, 1 otherwise.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import _kafka
import _rafka
from confluent_kafka import Consumer, Producer, TopicPartition
from harness.phases import PhaseError, log, run_phase
from harness.report import add_output_options, finish
from harness.results_file import Recording
from harness.stats import percentile, spread_of
from harness.table import Row

MEMBER_COUNTS = (2, 4, 8)
PARTITIONS = 16
INITIAL_REBALANCE_DELAY_MS = 3000  # rafka's default, as Kafka's
REBALANCE_TIMEOUT_S = 120.0


@dataclass
class Results:
    """Seconds of each rebalance by member count, each commit's latency in seconds, the commits'
    total time, and the phases that failed (name -> error text)."""

    rebalances: dict[int, list[float]] = field(default_factory=dict)
    commit_latencies: list[float] = field(default_factory=list)
    commits_s: float = 0.0
    failures: dict[str, str] = field(default_factory=dict)

    def commits(self) -> dict[str, float] | None:
        """The commits' count, p50, p99 and mean latency in ms, and their rate; None if none ran."""
        ordered = sorted(self.commit_latencies)
        if not ordered:
            return None
        return {"count": len(ordered), "p50_ms": 1000 * percentile(ordered, 0.5),
                "p99_ms": 1000 * percentile(ordered, 0.99), "mean_ms": 1000 * statistics.mean(ordered),
                "commits_per_s": len(ordered) / self.commits_s}

    def to_json(self) -> dict[str, Any]:
        return {"initial_rebalance_delay_ms": INITIAL_REBALANCE_DELAY_MS,
                "rebalance_s": {str(m): runs for m, runs in self.rebalances.items()}, "commits": self.commits(),
                "failures": self.failures}


def fill(bootstrap: str, topic: str) -> None:
    """Create `topic` and put records in every partition, so every member has something to fetch."""
    _kafka.create_topic(bootstrap, topic, partitions=PARTITIONS)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i in range(PARTITIONS * 50):
        producer.produce(topic, b"x" * 100, partition=i % PARTITIONS)
    producer.flush(30)


def rebalance_seconds(bootstrap: str, members: int, timeout_s: float = REBALANCE_TIMEOUT_S) -> float:
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
                raise PhaseError(f"{members} members: not all fetched within {timeout_s:.0f} s")
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


def rows(results: Results) -> list[Row]:
    """The table: each member count's rebalance (median [min-max] of the runs) beside the
    initial rebalance delay, and the commits' latency and rate."""
    table = []
    for members, runs in results.rebalances.items():
        found = spread_of(runs)
        table.append(Row(f"rebalance of {members} members, s, median of {len(runs)} runs vs initial delay",
                         found.median if found else None, INITIAL_REBALANCE_DELAY_MS / 1000, "s",
                         rafka_range=(found.low, found.high) if found else None))
    commits = results.commits()
    if commits:
        table += [Row(f"offset commit {q} ms (one consumer, synchronous, {commits['count']:,} commits)",
                      commits[f"{q}_ms"], None, "ms") for q in ("p50", "p99")]
        table.append(Row("offset commits/s, one consumer, synchronous", commits["commits_per_s"], None, "commits/s"))
    return table


def runs_text(results: Results) -> str:
    """The runs, one line each (the table follows)."""
    lines = [f"group.initial.rebalance.delay.ms: {INITIAL_REBALANCE_DELAY_MS} ms (default)",
             f"{'members':>8} {'best rebalance s':>17} {'all runs s':>24} {'minus initial delay s':>22}"]
    for members, runs in results.rebalances.items():
        best = min(runs)
        lines.append(f"{members:>8} {best:>17.2f} {', '.join(f'{r:.2f}' for r in runs):>24}"
                     f" {best - INITIAL_REBALANCE_DELAY_MS / 1000:>22.2f}")
    commits = results.commits()
    if commits:
        lines.append(f"offset commit (one consumer, synchronous, {commits['count']} commits):"
                     f" p50 {commits['p50_ms']:.2f} ms, p99 {commits['p99_ms']:.2f} ms,"
                     f" mean {commits['mean_ms']:.2f} ms, {commits['commits_per_s']:,.0f} commits/s")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="example: .venv/bin/python bench/groups.py --commits 2000")
    parser.add_argument("--commits", type=int, default=2000, help="synchronous commits to time (default 2000)")
    parser.add_argument("--repeat", type=int, default=2, help="rebalances per member count (default 2)")
    add_output_options(parser)
    args = parser.parse_args(argv)
    recording = Recording.start(__file__, __doc__, argv)
    results = Results()
    with tempfile.TemporaryDirectory(prefix="rafka-bench-groups-") as tmp:
        log("starting rafka (rafka up --detach)")
        with _rafka.rafka_cluster(Path(tmp) / "rafka") as cluster:
            bootstrap = cluster.bootstrap_servers
            for members in MEMBER_COUNTS:
                for run in range(1, args.repeat + 1):
                    took = run_phase(results, f"rebalance of {members} members (run {run}/{args.repeat})",
                                     lambda members=members: rebalance_seconds(bootstrap, members),
                                     REBALANCE_TIMEOUT_S + 120)
                    if took is not None:
                        results.rebalances.setdefault(members, []).append(took)
            timed = run_phase(results, f"{args.commits} synchronous offset commits",
                              lambda: commit_latencies(bootstrap, args.commits), 600)
            if timed is not None:
                results.commit_latencies, results.commits_s = timed
    table = rows(results)
    finish(recording, args, table, {**results.to_json(), "table": [row.to_json() for row in table]},
           results.failures, runs_text(results))
    return 1 if results.failures else 0


if __name__ == "__main__":
    sys.exit(main())
