"""The table of bench/produce_consume.py: rafka against Tansu in interleaved pairs, against the
client's ceilings and the machine's limits, with issue 25's targets. Pure: from `Results` only."""
from __future__ import annotations

from _produce_consume_results import Results
from harness.machine import cpu_speed_spread
from harness.pairs import MIN_PAIRS, paired_row, spread_row
from harness.stats import spread_of
from harness.table import Row, size_label

RECORD_SIZES = (100, 1024)
BROKERS = ("rafka", "tansu")
# Workload kinds, and the suffix of their runs' labels (rafka with idle topics: "rafka-idle-topics").
PLAIN, IDEMPOTENT, IDLE, LATENCY = "plain", "idempotent", "idle topics", "latency"
SUFFIX = {PLAIN: "", IDEMPOTENT: "-idempotent", IDLE: "-idle-topics", LATENCY: ""}
LATENCY_RATE = 2_000
LATENCY_TARGET_MS = 10.0
SPREAD_TARGET = 0.30
PSS_TARGET_MIB = 1.2 * 1024
UP_TARGET_S = 15.0
PRODUCE_TARGET = 0.9
CONSUME_TARGET = 1.0
IDEMPOTENT_TARGET = 0.85
RATES = (("produce", "produce_rps", "rec/s", PRODUCE_TARGET), ("produce", "produce_mbps", "MB/s", None),
         ("consume", "consume_rps", "rec/s", CONSUME_TARGET), ("consume", "consume_mbps", "MB/s", None),
         ("consume, librdkafka defaults,", "consume_defaults_rps", "rec/s", CONSUME_TARGET))


def median(results: Results, label: str, size: int, attribute: str) -> float | None:
    """The median over pairs of `attribute` of `label`'s runs at `size`, or None if none ran."""
    found = spread_of(results.by_pair(label, size, attribute).values())
    return found.median if found else None


def broker_rows(results: Results, kind: str) -> list[Row]:
    """rafka against Tansu for one kind of workload (plain or with idle topics), each size."""
    rows: list[Row] = []
    how = f" with {results.settings.get('idle_topics', '')} idle topics" if kind == IDLE else ""
    for size in RECORD_SIZES:
        for what, attribute, unit, target in RATES:
            rows.append(paired_row(f"{what} {size_label(size)} {unit}{how} vs tansu",
                                   results.by_pair("rafka" + SUFFIX[kind], size, attribute),
                                   results.by_pair("tansu" + SUFFIX[kind], size, attribute), unit,
                                   (">=", target) if target else None))
    return rows


def idempotent_rows(results: Results) -> list[Row]:
    """Each broker's idempotent producer against its plain one, in the same pairs. The same
    client against Tansu shows what idempotence costs the client itself here."""
    rows: list[Row] = []
    for size in RECORD_SIZES:
        for broker, target in (("rafka", (">=", IDEMPOTENT_TARGET)), ("tansu", None)):
            rows.append(paired_row(f"{broker}: idempotent vs non-idempotent produce {size_label(size)} rec/s",
                                   results.by_pair(broker + SUFFIX[IDEMPOTENT], size, "produce_rps"),
                                   results.by_pair(broker, size, "produce_rps"), "rec/s", target))
    return rows


def latency_rows(results: Results) -> list[Row]:
    """End-to-end latency at LATENCY_RATE: rafka beside Tansu, and rafka's p99 against its target."""
    rows = [paired_row(f"end-to-end {q} ms at {LATENCY_RATE:,} rec/s vs tansu", results.latency_by_pair("rafka", a),
                       results.latency_by_pair("tansu", a), "ms") for q, a in (("p50", "p50_ms"), ("p99", "p99_ms"))]
    p99 = spread_of(results.latency_by_pair("rafka", "p99_ms").values())
    count = len(p99.values) if p99 else 0
    rows.append(Row(f"rafka end-to-end p99 ms at {LATENCY_RATE:,} rec/s vs {LATENCY_TARGET_MS:g} ms, median of {count}"
                    " runs", p99.median if p99 else None, LATENCY_TARGET_MS, "ms", ("<=", 1.0),
                    rafka_range=(p99.low, p99.high) if p99 else None,
                    unjudged=f"n/a (<{MIN_PAIRS} runs)" if count < MIN_PAIRS else ""))
    return rows


def spread_rows(results: Results) -> list[Row]:
    """(max - min) / median of rafka's consume runs of each workload, against 30%; and the
    machine's own spread for one fixed piece of Python beside them, unjudged."""
    rows = [spread_row(f"rafka consume {size_label(size)}{' with idle topics' if kind == IDLE else ''} spread"
                       f" (max-min)/median vs {SPREAD_TARGET:.0%}",
                       results.by_pair("rafka" + SUFFIX[kind], size, "consume_rps").values(), SPREAD_TARGET)
            for kind in (PLAIN, IDLE) for size in RECORD_SIZES if kind == PLAIN or results.runs("rafka" + SUFFIX[IDLE], size)]
    runs = sum(len(c.cpu_ms) for c in results.cpu_speed)
    machine = cpu_speed_spread(results.cpu_speed)
    return rows + [Row(f"the machine: CPU time of one fixed piece of Python, spread (max-min)/median vs"
                       f" {SPREAD_TARGET:.0%}, {runs} runs", machine, SPREAD_TARGET, "ratio")]


def ceiling_rows(results: Results) -> list[Row]:
    """What any broker could get out of this client here: rafka's medians against the client's
    ceilings, and whether the consume target lies within them (a ratio above 1: no broker
    could meet the target)."""
    rows: list[Row] = []
    for size in RECORD_SIZES:
        label = size_label(size)
        for defaults, how in ((False, ""), (True, ", librdkafka defaults")):
            attribute = "consume_defaults_rps" if defaults else "consume_rps"
            ceiling = results.consume_ceiling_rps(size, defaults)
            rows.append(Row(f"consume {label} rec/s{how}, median vs client consume ceiling",
                            median(results, "rafka", size, attribute), ceiling, "rec/s"))
            peer = median(results, "tansu", size, attribute)
            rows.append(Row(f"consume target ({CONSUME_TARGET:g}x tansu median) {label}{how} vs client consume"
                            " ceiling", CONSUME_TARGET * peer if peer else None, ceiling, "rec/s"))
    for size in RECORD_SIZES:
        ceiling = results.enqueue.get(size)
        rows.append(Row(f"produce {size_label(size)} rec/s, median vs client enqueue ceiling",
                        median(results, "rafka", size, "produce_rps"), ceiling.rps if ceiling else None, "rec/s"))
    return rows


def machine_rows(results: Results) -> list[Row]:
    """rafka's 1 KiB medians against the machine's limits, its idle memory and its start-up."""
    loopback = results.loopback.mbps if results.loopback else None
    produce, consume = (median(results, "rafka", 1024, a) for a in ("produce_mbps", "consume_mbps"))
    return [
        Row("produce 1 KiB MB/s, median vs loopback TCP", produce, loopback, "MB/s"),
        Row("consume 1 KiB MB/s, median vs loopback TCP", consume, loopback, "MB/s"),
        Row("produce 1 KiB MB/s, median vs disk write (dd)", produce, results.disk.mbps if results.disk else None,
            "MB/s"),
        Row("idle cluster PSS MiB (Ray + ZooKeeper) vs 1.2 GiB", results.memory.total_mib if results.memory else None,
            PSS_TARGET_MIB, "MiB", ("<=", 1.0)),
        Row("`rafka up` seconds to serve vs 15 s", results.startup.seconds if results.startup else None,
            UP_TARGET_S, "s", ("<=", 1.0)),
    ]


def comparison_rows(results: Results) -> list[Row]:
    """The final table: rafka against Tansu, the client's ceilings, the machine, and targets."""
    rows = broker_rows(results, PLAIN) + idempotent_rows(results) + latency_rows(results)
    if any(w.broker.endswith(SUFFIX[IDLE]) for w in results.workloads):
        rows += broker_rows(results, IDLE)
    return rows + spread_rows(results) + ceiling_rows(results) + machine_rows(results)
