#!/usr/bin/env python
"""Throughput of rafka beside Tansu (a Rust Kafka-compatible broker) and the machine's limits.

From one run it measures, with confluent-kafka (acks=1, linger.ms=5, no idempotence,
6 partitions, one broker):
  1. produce and consume records/s and MB/s for 100 B and 1 KiB records, on rafka and on
     Tansu (in-memory storage), checking that every produced record is consumed back;
     each workload runs --repeat times and the table takes the best rate of each kind; each
     producer is timed from its first acknowledged record (bench/_kafka.py says why);
  2. the client's own ceiling: produce() calls/s into the local queue, no broker reachable;
  3. machine limits: loopback TCP throughput and dd's sequential disk write rate;
  4. the PSS of the idle rafka cluster (Ray session + ZooKeeper), against 1.2 GiB;
  5. the seconds `rafka up --detach` takes to serve, against 15 s;
  6. an idempotent producer (enable.idempotence=true, acks=all), run by run beside the plain
     workload, against 85% of its produce rate (idempotence should cost < 15%); the same pair
     on Tansu shows what idempotence costs the client itself on this machine; besides the
     best-of-runs ratio, the median of the per-run ratios (each pair ran back to back);
  7. the client's consume ceiling: the same consumer against a stand-in broker that answers
     every fetch at once from batches in memory (bench/_instant_broker.py), the most any
     broker could get out of this client on this machine; beside it, the consumer's CPU bound
     (records per CPU-second times the cores);
  8. every consume once more with librdkafka's default settings, as an untuned user's
     consumer runs: there its 1 s queue backoff (fetch.queue.backoff.ms), not the broker,
     sets the pace, so the table shows both.
and prints a table: metric, rafka, peer/limit, ratio, target, met?

Progress goes to stderr, results to stdout. Exit 0 when every phase ran, 1 otherwise.
Everything binds to 127.0.0.1.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import _kafka
import _machine
import _procmem
import _rafka
import _tansu
from _phases import log, print_failures, run_phase, size_label, stdout_to_stderr
from _results import MIB, MemoryResult, Results, Row, WorkloadSummary, render_table

RECORD_SIZES = (100, 1024)
DEFAULT_RECORDS = 500_000
DEFAULT_REPEAT = 3
PSS_TARGET_MIB = 1.2 * 1024
UP_TARGET_S = 15.0
PRODUCE_TARGET = 1.0
CONSUME_TARGET = 2.0
IDEMPOTENT_TARGET = 0.85
IDEMPOTENT_SUFFIX = "-idempotent"
IDLE_SETTLE_S = 3.0
# The benchmark's own helper topics are deleted once used. Each partition replica is a Ray actor,
# and Ray wakes every idle actor 100 times a second (its core worker checks for signals every
# 10 ms); on 2 cores those wakeups preempt the client being measured. Measured: consume 1 KiB
# median 734k rec/s with only the workload's topic and `__consumer_offsets`, 534k with two
# more idle 6-partition topics beside them.
IDLE_TOPIC = "bench-idle"
WARM_UP_TOPIC = "bench-warm-up"


# -- the phases --------------------------------------------------------------------------

def machine_phases(results: Results, data_dir: Path) -> None:
    """Loopback TCP and disk write limits."""
    results.loopback = run_phase(results, "loopback TCP", _machine.loopback_throughput, 120)
    results.disk = run_phase(results, "disk write (dd)", lambda: _machine.disk_write_rate(data_dir), 180)


def ceiling_phases(results: Results, records: int, repeat: int) -> None:
    """confluent-kafka's enqueue rate with no broker and its consume rate from the instant
    stand-in broker, per record size; `repeat` runs of each."""
    for size in RECORD_SIZES:
        runs = [run_phase(results, f"client enqueue ceiling {size_label(size)} (run {run}/{repeat})",
                          lambda: _kafka.enqueue_ceiling(size, records), 120) for run in range(1, repeat + 1)]
        done = [r for r in runs if r is not None]
        if done:
            results.enqueue[size] = max(done, key=lambda r: r.rps)
    for run in range(1, repeat + 1):
        for size in RECORD_SIZES:
            value = run_phase(results, f"client consume ceiling {size_label(size)} (run {run}/{repeat})",
                              lambda: _kafka.consume_ceiling(size, records), 180)
            if value is not None:
                results.consume_ceiling.append(value)
                log(f"  instant broker {size_label(size)}: consume {value.rps:,.0f} rec/s"
                    f" (librdkafka defaults {value.defaults_rps:,.0f})")


def workload_phases(results: Results, broker: str, bootstrap: str, records: int, repeat: int,
                    with_idempotent: bool = False) -> None:
    """The produce/consume workload, `repeat` times for every record size, against one broker;
    with `with_idempotent`, each run is followed by the same workload with an idempotent producer,
    so both see the same machine load."""
    variants = [(broker, False)] + ([(broker + IDEMPOTENT_SUFFIX, True)] if with_idempotent else [])

    def warm() -> None:
        _kafka.create_topic(bootstrap, WARM_UP_TOPIC)
        _kafka.warm_group_coordinator(bootstrap, WARM_UP_TOPIC)
        _kafka.delete_topic(bootstrap, WARM_UP_TOPIC)

    run_phase(results, f"{broker} group coordinator warm-up", warm, 120)
    for run in range(1, repeat + 1):
        for size in RECORD_SIZES:
            for label, idempotent in variants:
                value = run_phase(
                    results, f"{label} produce/consume {size_label(size)} (run {run}/{repeat})",
                    lambda: _kafka.run_workload(label, bootstrap, size, records, timeout_s=300,
                                                idempotent=idempotent), 420)
                if value is None:
                    continue
                results.workloads.append(value)
                log(f"  {label} {size_label(size)}: produce {value.produce_rps:,.0f} rec/s"
                    f" {value.produce_mbps:.1f} MB/s, consume {value.consume_rps:,.0f} rec/s"
                    f" {value.consume_mbps:.1f} MB/s (librdkafka defaults {value.consume_defaults_rps:,.0f} rec/s)")


def tansu_phases(results: Results, data_dir: Path, records: int, repeat: int) -> None:
    """Start Tansu, run the workload, stop it."""
    stack = contextlib.ExitStack()
    bootstrap = run_phase(results, "tansu start",
                          lambda: stack.enter_context(_tansu.tansu_broker(data_dir / "tansu.log")), 60)
    with stack:
        if bootstrap:
            log(f"  tansu serving at {bootstrap}")
            workload_phases(results, "tansu", bootstrap, records, repeat, with_idempotent=True)


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


def rafka_phases(results: Results, data_dir: Path, records: int, repeat: int) -> None:
    """Start rafka with `rafka up --detach`, measure its idle PSS, run the workload, stop it."""
    stack = contextlib.ExitStack()
    cluster = run_phase(results, "rafka cluster start",
                        lambda: stack.enter_context(_rafka.rafka_cluster(data_dir / "rafka-cluster")), 180)
    with stack:
        if cluster is None:
            return
        bootstrap = cluster.bootstrap_servers
        log(f"  rafka serving at {bootstrap}")
        results.memory = run_phase(results, "rafka idle memory (PSS)",
                                   lambda: idle_memory(bootstrap, cluster.pid), 120)
        if results.memory:
            log(f"  idle PSS {results.memory.total_mib:,.0f} MiB over {len(results.memory.processes)} processes")
        workload_phases(results, "rafka", bootstrap, records, repeat, with_idempotent=True)
    log("rafka cluster stopped")


def startup_phase(results: Results, data_dir: Path) -> None:
    """Time the real `rafka up --detach` command."""
    results.startup = run_phase(results, "rafka up --detach",
                                lambda: _rafka.time_rafka_up(data_dir / "rafka-up"), 300)


# -- reporting ---------------------------------------------------------------------------

def _rate(summary: WorkloadSummary | None, kind: str, unit: str) -> float | None:
    """`summary.<kind>_<unit>` (e.g. produce_rps), or None when the workload did not run."""
    return getattr(summary, f"{kind}_{unit}") if summary else None


def comparison_rows(results: Results) -> list[Row]:
    """The final table: rafka against Tansu, the client's ceiling, the machine, and targets."""
    rows: list[Row] = []
    for size in RECORD_SIZES:
        ours, peer = results.summary("rafka", size), results.summary("tansu", size)
        label = size_label(size)
        for kind, target in (("produce", PRODUCE_TARGET), ("consume", CONSUME_TARGET)):
            rows.append(Row(f"{kind} {label} rec/s vs tansu", _rate(ours, kind, "rps"), _rate(peer, kind, "rps"),
                            "rec/s", (">=", target)))
            rows.append(Row(f"{kind} {label} MB/s vs tansu", _rate(ours, kind, "mbps"), _rate(peer, kind, "mbps"),
                            "MB/s"))
        rows.append(Row(f"consume {label} rec/s vs tansu, librdkafka defaults", _rate(ours, "consume_defaults", "rps"),
                        _rate(peer, "consume_defaults", "rps"), "rec/s", (">=", CONSUME_TARGET)))
    for size in RECORD_SIZES:
        # The same client against Tansu shows what idempotence costs the client itself here.
        for broker, target in (("rafka", (">=", IDEMPOTENT_TARGET)), ("tansu", None)):
            plain, idempotent = results.summary(broker, size), results.summary(broker + IDEMPOTENT_SUFFIX, size)
            rows.append(Row(f"{broker}: idempotent produce {size_label(size)} rec/s vs non-idempotent",
                            _rate(idempotent, "produce", "rps"), _rate(plain, "produce", "rps"), "rec/s", target))
            paired = results.paired_produce_ratio(broker + IDEMPOTENT_SUFFIX, broker, size)
            rows.append(Row(f"{broker}: idempotent/non-idempotent produce {size_label(size)}, median of"
                            f" {len(results.runs(broker, size))} paired runs", paired, 1.0 if paired else None,
                            "ratio", target))
    for size in RECORD_SIZES:
        # What any broker could get out of this client here; the last row says whether the
        # consume target lies within it (a ratio above 1: no broker could meet the target).
        ours, peer, label = results.summary("rafka", size), results.summary("tansu", size), size_label(size)
        for defaults, how in ((False, ""), (True, ", librdkafka defaults")):
            kind, ceiling = ("consume_defaults" if defaults else "consume"), results.consume_ceiling_rps(size, defaults)
            rows.append(Row(f"consume {label} rec/s vs client consume ceiling{how}", _rate(ours, kind, "rps"),
                            ceiling, "rec/s"))
            target = CONSUME_TARGET * _rate(peer, kind, "rps") if peer else None
            rows.append(Row(f"consume target ({CONSUME_TARGET:g}x tansu) {label}{how} vs client consume ceiling",
                            target, ceiling, "rec/s"))
    for size in RECORD_SIZES:
        ours, ceiling = results.summary("rafka", size), results.enqueue.get(size)
        rows.append(Row(f"produce {size_label(size)} rec/s vs client enqueue ceiling",
                        ours.produce_rps if ours else None, ceiling.rps if ceiling else None, "rec/s"))
    big = results.summary("rafka", 1024)
    loopback = results.loopback.mbps if results.loopback else None
    rows.append(Row("produce 1 KiB MB/s vs loopback TCP", big.produce_mbps if big else None, loopback, "MB/s"))
    rows.append(Row("consume 1 KiB MB/s vs loopback TCP", big.consume_mbps if big else None, loopback, "MB/s"))
    rows.append(Row("produce 1 KiB MB/s vs disk write (dd)", big.produce_mbps if big else None,
                    results.disk.mbps if results.disk else None, "MB/s"))
    rows.append(Row("idle cluster PSS MiB (Ray + ZooKeeper) vs 1.2 GiB",
                    results.memory.total_mib if results.memory else None, PSS_TARGET_MIB, "MiB", ("<=", 1.0)))
    rows.append(Row("`rafka up` seconds to serve vs 15 s",
                    results.startup.seconds if results.startup else None, UP_TARGET_S, "s", ("<=", 1.0)))
    return rows


def measurements_text(results: Results) -> str:
    """The raw figures behind the table: every broker workload and every limit."""
    lines = ["workload runs (confluent-kafka, acks=1, linger.ms=5, 6 partitions, 1 broker;"
             f" *{IDEMPOTENT_SUFFIX}: enable.idempotence=true, acks=all; the table below takes the best run"
             " of each rate):",
             f"  {'broker':<17} {'size':>6} {'records':>9} {'produce rec/s':>14} {'MB/s':>7}"
             f" {'consume rec/s':>14} {'MB/s':>7} {'consumer CPU':>13} {'consume, defaults':>18}"]
    for w in results.workloads:
        lines.append(f"  {w.broker:<17} {size_label(w.record_size):>6} {w.records:>9,} {w.produce_rps:>14,.0f}"
                     f" {w.produce_mbps:>7.1f} {w.consume_rps:>14,.0f} {w.consume_mbps:>7.1f}"
                     f" {w.consume_client_core_share:>12.0%} {w.consume_defaults_rps:>18,.0f}")
    lines.append("  (consume, defaults: the same consume with librdkafka's default settings, whose 1 s"
                 " fetch.queue.backoff.ms sets the pace)")
    lines.append("limits:")
    if results.load_average:
        load = ", ".join(f"{k} {v[0]:.1f}" for k, v in results.load_average.items())
        lines.append(f"  1-min load average ({os.cpu_count()} cores): {load}  (other work on the machine skews rates)")
    for size in RECORD_SIZES:
        bound, peer = results.consume_cpu_bound(size, os.cpu_count() or 1), results.summary("tansu", size)
        if bound:
            target = f"; the consume target, {CONSUME_TARGET:g}x tansu, is {CONSUME_TARGET * peer.consume_rps:,.0f}" \
                if peer else ""
            lines.append(f"  client consume CPU bound {size_label(size):>6}: {bound:,.0f} rec/s (the consumer's records"
                         f" per CPU-second, best run, x {os.cpu_count()} cores: a broker costing no CPU){target}")
    for c in results.consume_ceiling:
        lines.append(f"  client consume ceiling {size_label(c.record_size):>6}: {c.rps:,.0f} rec/s"
                     f" (consumer CPU {c.client_core_share:.0%}), {c.defaults_rps:,.0f} rec/s with librdkafka"
                     f" defaults; instant in-memory stand-in broker")
    for e in results.enqueue.values():
        lines.append(f"  client enqueue ceiling {size_label(e.record_size):>6}: {e.rps:,.0f} rec/s"
                     f" ({e.mbps:,.1f} MB/s), {e.records:,} produce() calls, no broker, best run")
    for r in (results.loopback, results.disk):
        if r:
            lines.append(f"  {r.what}: {r.mbps:,.0f} MB/s ({r.detail})")
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


def print_report(results: Results, output: str) -> None:
    """Results to stdout, as text tables or as one JSON document."""
    rows = comparison_rows(results)
    if output == "json":
        doc = results.to_json()
        doc["table"] = [dict(zip(("metric", "rafka", "peer", "ratio", "target", "met"),
                                 (r.metric, r.rafka, r.peer, r.ratio, r.target, r.met))) for r in rows]
        print(json.dumps(doc, indent=2))
        return
    print(measurements_text(results))
    print()
    print(render_table(rows))
    print_failures(results)


# -- command line ------------------------------------------------------------------------

def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="example:\n  .venv/bin/python bench/produce_consume.py --records 100000\n"
               "  .venv/bin/python bench/produce_consume.py --only tansu --output json")
    parser.add_argument("--records", type=int, default=DEFAULT_RECORDS,
                        help=f"records per workload and per enqueue test (default {DEFAULT_RECORDS:,})")
    parser.add_argument("--repeat", type=int, default=DEFAULT_REPEAT,
                        help=f"runs of each workload; the table shows the best rate of each (default {DEFAULT_REPEAT})")
    parser.add_argument("--skip-tansu", action="store_true", help="do not run the Tansu workload")
    parser.add_argument("--only", choices=("rafka", "tansu"),
                        help="run only this broker's phases (machine limits and client ceiling always run)")
    parser.add_argument("--output", choices=("text", "json"), default="text", help="stdout format (default text)")
    parser.add_argument("--data-dir", type=Path,
                        help="where logs and the dd file go (default: a fresh temporary directory, removed)")
    args = parser.parse_args(argv)
    if args.records < 1 or args.repeat < 1:
        parser.error("--records and --repeat must be at least 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    run_tansu = args.only != "rafka" and not args.skip_tansu
    run_rafka = args.only != "tansu"
    results = Results()
    started = time.perf_counter()
    with contextlib.ExitStack() as stack:
        stack.enter_context(stdout_to_stderr())
        if args.data_dir:
            data_dir = args.data_dir.absolute()
            data_dir.mkdir(parents=True, exist_ok=True)
        else:
            data_dir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="rafka-bench-")))
        results.load_average["start"] = os.getloadavg()
        log(f"data dir {data_dir}, {args.records:,} records per workload, load average {os.getloadavg()[0]:.1f}")
        machine_phases(results, data_dir)
        ceiling_phases(results, args.records, args.repeat)
        if run_tansu:
            tansu_phases(results, data_dir, args.records, args.repeat)
        if run_rafka:
            rafka_phases(results, data_dir, args.records, args.repeat)
            startup_phase(results, data_dir)
    results.load_average["end"] = os.getloadavg()
    log(f"finished in {time.perf_counter() - started:.0f} s")
    print_report(results, args.output)
    return 1 if results.failures else 0


if __name__ == "__main__":
    sys.exit(main())
