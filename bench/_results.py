"""Result records of the throughput benchmark, and the table that compares them.

Each measurement is a small frozen dataclass; `Row` is one line of the final table
(metric, rafka, peer/limit, ratio, target, met?).
"""
from __future__ import annotations

import math
import statistics
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any, Callable

MIB = 1024 * 1024
MB = 1_000_000


@dataclass(frozen=True)
class WorkloadResult:
    """Produce then consume `records` records of `record_size` bytes through one broker."""

    broker: str
    record_size: int
    records: int
    produce_s: float
    consume_s: float
    consumed: int
    consume_client_cpu_s: float = 0.0  # CPU of the consuming process (librdkafka + Python loop)
    consume_defaults_s: float = 0.0  # the same consume again, with librdkafka's default settings
    consumed_defaults: int | None = None  # records that consume read (its first ones); None: `consumed`
    produce_untimed: int = 0  # of `records`, those produced and acknowledged before the clock started
    pair: int = 0  # which interleaved pair of runs this one belongs to (bench/_pairs.py)
    # The untimed first writes of a new producer to a new topic, one record to each partition,
    # until all were acknowledged (bench/_kafka.py `produce`): a new topic's start, not its rate.
    first_writes_s: float = 0.0
    # The consume's fetches, from the consumer's own statistics (bench/_fetch_stats.py): how many,
    # their mean answer, their mean request round trip and the worst 250 ms interval's p99.
    consume_fetches: int = 0
    consume_kib_per_fetch: float = 0.0
    consume_rtt_avg_ms: float = 0.0
    consume_rtt_p99_ms: float = 0.0
    # Cores the other broker's processes used meanwhile (idle, but not free: it skews this run).
    background_cores: float | None = None

    @property
    def consume_client_core_share(self) -> float:
        """How much of one core the consuming client used: near 1.0 means the client is the limit."""
        return self.consume_client_cpu_s / self.consume_s if self.consume_s else 0.0

    @property
    def produce_rps(self) -> float:
        return (self.records - self.produce_untimed) / self.produce_s

    @property
    def produce_mbps(self) -> float:
        return self.produce_rps * self.record_size / MB

    @property
    def consume_rps(self) -> float:
        return self.consumed / self.consume_s

    @property
    def consume_mbps(self) -> float:
        return self.consumed * self.record_size / self.consume_s / MB

    @property
    def consume_defaults_rps(self) -> float:
        read = self.consumed if self.consumed_defaults is None else self.consumed_defaults
        return read / self.consume_defaults_s if self.consume_defaults_s else 0.0


@dataclass(frozen=True)
class LatencyResult:
    """End to end: records sent at `rate` records/s, each timed from its produce() call until
    the consumer, polling all along, read it; percentiles in ms."""

    broker: str
    pair: int
    records: int
    rate: float
    sent_rps: float  # the rate produce() was actually called at
    p50_ms: float
    p99_ms: float
    p999_ms: float
    max_ms: float


@dataclass(frozen=True)
class EnqueueResult:
    """confluent-kafka `produce()` calls/s into its local queue, with no broker reachable."""

    record_size: int
    records: int
    seconds: float

    @property
    def rps(self) -> float:
        return self.records / self.seconds

    @property
    def mbps(self) -> float:
        return self.records * self.record_size / self.seconds / MB


@dataclass(frozen=True)
class ConsumeCeilingResult:
    """The consumer against a stand-in broker that answers every fetch at once from memory:
    the most any broker could get out of this client here, with the benchmark's consumer
    settings and with librdkafka's defaults."""

    record_size: int
    consumed: int
    seconds: float
    cpu_s: float
    consumed_defaults: int
    seconds_defaults: float

    @property
    def rps(self) -> float:
        return self.consumed / self.seconds

    @property
    def defaults_rps(self) -> float:
        return self.consumed_defaults / self.seconds_defaults

    @property
    def client_core_share(self) -> float:
        return self.cpu_s / self.seconds


@dataclass(frozen=True)
class RateResult:
    """Bytes moved in seconds: loopback TCP or sequential disk writes."""

    what: str
    bytes: int
    seconds: float
    detail: str = ""

    @property
    def mbps(self) -> float:
        return self.bytes / self.seconds / MB


@dataclass(frozen=True)
class MemoryResult:
    """Proportional set size of the idle cluster's processes."""

    total_bytes: int
    processes: tuple[tuple[int, str, int], ...]  # (pid, name, pss bytes)
    driver_bytes: int  # the benchmark process itself (not in total_bytes)

    @property
    def total_mib(self) -> float:
        return self.total_bytes / MIB


@dataclass(frozen=True)
class StartupResult:
    """Seconds `rafka up --detach` took to print its bootstrap address."""

    seconds: float
    bootstrap: str


@dataclass(frozen=True)
class WakeCostResult:
    """The CPU of one fixed piece of Python work run back to back, and run once after each
    sleep of `gap_ms`: what being woken costs a process on this machine (medians, µs). A
    process woken every few ms (a replica at a steady rate) pays the slower figure per record."""

    hot_us: float
    after_sleep_us: dict[float, float]   # ms asleep before the work -> its CPU in µs

    def slowdown(self, gap_ms: float) -> float:
        """How many times the back-to-back CPU the work costs after `gap_ms` asleep."""
        return self.after_sleep_us[gap_ms] / self.hot_us

    def describe(self) -> str:
        after = ", ".join(f"{self.slowdown(gap):.1f}x after {gap:g} ms" for gap in sorted(self.after_sleep_us))
        return f"Python work woken from sleep: {self.hot_us:.0f} µs of CPU back to back, {after} asleep"


@dataclass(frozen=True)
class Spread:
    """Median, lowest and highest of some runs' values, and their spread around the median."""

    values: tuple[float, ...]

    @property
    def median(self) -> float:
        return statistics.median(self.values)

    @property
    def low(self) -> float:
        return min(self.values)

    @property
    def high(self) -> float:
        return max(self.values)

    @property
    def spread(self) -> float:
        """(highest - lowest) / median: 0.3 means the runs lie within 30% of the median."""
        return (self.high - self.low) / self.median if self.median else float("inf")

    def to_json(self) -> dict[str, float | int]:
        return {"n": len(self.values), "median": self.median, "min": self.low, "max": self.high,
                "spread": self.spread}


def spread_of(values: Iterable[float]) -> Spread | None:
    """The Spread of `values`, or None when there are none."""
    found = tuple(values)
    return Spread(found) if found else None


@dataclass(frozen=True)
class CpuSpeedResult:
    """The thread CPU, in ms, of one fixed piece of Python run `len(cpu_ms)` times back to back,
    `when` in the benchmark. The work never changes, so its spread is the machine's own: on a
    VM the same code runs faster or slower from one second to the next as the host's other
    guests come and go, and every rate measured beside it moves with it."""

    when: str
    cpu_ms: tuple[float, ...]

    @property
    def runs(self) -> Spread:
        """The runs' CPU times; their spread is judged as the consume spread is."""
        return Spread(self.cpu_ms)

    def describe(self) -> str:
        runs = self.runs
        return (f"CPU speed ({self.when}): one fixed piece of Python, {len(self.cpu_ms)} runs back to back,"
                f" took {runs.low:.0f}-{runs.high:.0f} ms of CPU (median {runs.median:.0f}):"
                f" spread {runs.spread:.0%}, the fastest run {runs.median / runs.low:.2f}x the median's speed")


def cpu_speed_spread(results: list[CpuSpeedResult]) -> float | None:
    """The spread of every run of `results` together (None when none ran)."""
    runs = spread_of(ms for r in results for ms in r.cpu_ms)
    return runs.spread if runs else None


@dataclass
class Results:
    """Everything one run measured, plus the phases that failed (name -> error text)."""

    workloads: list[WorkloadResult] = field(default_factory=list)  # every run, in order
    enqueue: dict[int, EnqueueResult] = field(default_factory=dict)
    consume_ceiling: list[ConsumeCeilingResult] = field(default_factory=list)  # every run
    loopback: RateResult | None = None
    disk: RateResult | None = None
    wake: WakeCostResult | None = None
    cpu_speed: list[CpuSpeedResult] = field(default_factory=list)  # before the pairs and after them
    memory: MemoryResult | None = None
    startup: StartupResult | None = None
    latency: list[LatencyResult] = field(default_factory=list)  # every end-to-end latency run
    failures: dict[str, str] = field(default_factory=dict)
    load_average: dict[str, tuple[float, float, float]] = field(default_factory=dict)  # "start"/"end"
    settings: dict[str, Any] = field(default_factory=dict)  # what ran: pairs, records, versions

    def runs(self, broker: str, record_size: int) -> list[WorkloadResult]:
        """Every run of one broker and record size, in the order they ran."""
        return [w for w in self.workloads if w.broker == broker and w.record_size == record_size]

    def by_pair(self, broker: str, record_size: int, attribute: str) -> dict[int, float]:
        """`attribute` (e.g. consume_rps) of each run of one broker and record size, by pair number."""
        return {w.pair: getattr(w, attribute) for w in self.runs(broker, record_size)}

    def latency_by_pair(self, broker: str, attribute: str) -> dict[int, float]:
        """`attribute` (e.g. p99_ms) of each end-to-end latency run of one broker, by pair number."""
        return {r.pair: getattr(r, attribute) for r in self.latency if r.broker == broker}

    def consume_cpu_bound(self, record_size: int, cores: int) -> float | None:
        """The most records/s a consuming client could reach on `cores` cores if the broker cost
        no CPU: records per client core-second (the best run of any broker) times the cores.
        An upper bound: it assumes the client's threads spread over every core."""
        rates = [w.consume_rps / w.consume_client_core_share for w in self.workloads
                 if w.record_size == record_size and w.consume_client_core_share > 0]
        return max(rates) * cores if rates else None

    def consume_ceiling_rps(self, record_size: int, defaults: bool = False) -> float | None:
        """The best consume rate from the stand-in instant broker (with librdkafka's defaults
        when `defaults`), or None when it did not run."""
        rates = [c.defaults_rps if defaults else c.rps for c in self.consume_ceiling if c.record_size == record_size]
        return max(rates) if rates else None

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict of the raw measurements and their derived rates."""
        def workload(w: WorkloadResult) -> dict[str, Any]:
            return {**asdict(w), "produce_rps": w.produce_rps, "produce_mbps": w.produce_mbps,
                    "consume_rps": w.consume_rps, "consume_mbps": w.consume_mbps,
                    "consume_defaults_rps": w.consume_defaults_rps}
        return {
            "settings": self.settings,
            "workloads": [workload(w) for w in self.workloads],
            "latency": [asdict(r) for r in self.latency],
            "enqueue": [{**asdict(e), "rps": e.rps, "mbps": e.mbps} for e in self.enqueue.values()],
            "consume_ceiling": [{**asdict(c), "rps": c.rps, "defaults_rps": c.defaults_rps}
                                for c in self.consume_ceiling],
            "loopback": {**asdict(self.loopback), "mbps": self.loopback.mbps} if self.loopback else None,
            "disk": {**asdict(self.disk), "mbps": self.disk.mbps} if self.disk else None,
            "wake_cost": asdict(self.wake) if self.wake else None,
            "cpu_speed": [{**asdict(c), "median_ms": c.runs.median, "spread": c.runs.spread} for c in self.cpu_speed],
            "memory": {**asdict(self.memory), "total_mib": self.memory.total_mib} if self.memory else None,
            "startup": asdict(self.startup) if self.startup else None,
            "failures": self.failures,
            "load_average": self.load_average,
        }


@dataclass(frozen=True)
class Row:
    """One line of the final table. `target` is (op, value) with op '>=' or '<=' on the ratio.

    A row of paired runs also carries each side's [min, max] range and the median of the
    per-pair ratios (`given_ratio`, with `ratio_given`), which is its ratio; `unjudged`, when
    set, is shown instead of the verdict (too few runs to judge).
    """

    metric: str
    rafka: float | None
    peer: float | None
    unit: str = ""
    target: tuple[str, float] | None = None
    rafka_range: tuple[float, float] | None = None
    peer_range: tuple[float, float] | None = None
    given_ratio: float | None = None
    ratio_given: bool = False
    unjudged: str = ""

    @property
    def ratio(self) -> float | None:
        if self.ratio_given:
            return self.given_ratio
        if self.rafka is None or self.peer is None or self.peer == 0:
            return None
        return self.rafka / self.peer

    @property
    def met(self) -> str:
        if self.target is None:
            return ""
        if self.ratio is None:
            return "n/a"
        if self.unjudged:
            return self.unjudged
        op, value = self.target
        ok = self.ratio >= value if op == ">=" else self.ratio <= value
        return "yes" if ok else "NO"

    def cells(self) -> list[str]:
        target = f"{self.target[0]} {self.target[1]:g}x" if self.target else ""
        ratio = "-" if self.ratio is None else f"{self.ratio:.2f}x"
        return [self.metric, _with_range(self.rafka, self.rafka_range, self.unit),
                _with_range(self.peer, self.peer_range, self.unit), ratio, target, self.met]

    def to_json(self) -> dict[str, Any]:
        return {"metric": self.metric, "rafka": self.rafka, "rafka_range": self.rafka_range, "peer": self.peer,
                "peer_range": self.peer_range, "unit": self.unit, "ratio": self.ratio, "target": self.target,
                "met": self.met}


def _with_range(value: float | None, span: tuple[float, float] | None, unit: str) -> str:
    """`value`, then ` [low-high]` when a range is given."""
    text = _fmt(value, unit)
    return f"{text} [{_fmt(span[0], unit)}-{_fmt(span[1], unit)}]" if span and value is not None else text


def _fmt(value: float | None, unit: str) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if unit == "rec/s":
        return f"{value:,.0f}"
    if unit in ("MB/s", "MiB"):
        return f"{value:,.1f}"
    if unit == "s":
        return f"{value:.1f}"
    if unit == "ms":
        return f"{value:,.1f}"
    if unit == "ratio":
        return f"{value:.2f}"
    return f"{value:g}"


def render_table(rows: list[Row], headers: tuple[str, ...] = ("metric", "rafka", "peer/limit", "ratio",
                                                               "target", "met?")) -> str:
    """Rows as a fixed-width text table (numbers right-aligned)."""
    cells = [list(headers)] + [row.cells() for row in rows]
    widths = [max(len(line[i]) for line in cells) for i in range(len(headers))]
    align: list[Callable[[str, int], str]] = [str.ljust] + [str.rjust] * 3 + [str.ljust] * 2
    lines = []
    for n, line in enumerate(cells):
        lines.append("  ".join(align[i](c, widths[i]) for i, c in enumerate(line)).rstrip())
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)
