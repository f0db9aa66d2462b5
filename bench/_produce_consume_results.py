"""Result records of bench/produce_consume.py: each measurement a small frozen dataclass, and
`Results`, everything one run measured (its table is bench/_produce_consume_table.py)."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from _procmem import MemoryResult
from _rafka import StartupResult
from harness.machine import CpuSpeedResult, RateResult, WakeCostResult
from harness.stats import MB


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
    pair: int = 0  # which interleaved pair of runs this one belongs to (bench/harness/pairs.py)
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
