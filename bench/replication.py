#!/usr/bin/env python
"""What replication costs rafka: produce throughput and ack latency by acks and replication
factor, and how long a partition is unwritable when its leader's broker is killed -9.

From one run on 3 brokers (rafka.cluster.Cluster in a private local Ray, this process its
driver; zookeeper.session.timeout.ms=6000, min.insync.replicas=2) it measures, with
confluent-kafka (linger.ms=5, no idempotence, a fresh 3-partition topic per case, deleted
after it):
  1. produce records/s and MB/s, and ack latency p50/p99/p99.9 (produce() call to its delivery
     callback, every 8th record stamped with time.perf_counter, the rest counted in the
     topic afterwards) for acks=1 RF=1, acks=1 RF=3 and
     acks=all RF=3, at 100 B and 1 KiB records; each producer is timed from its first
     acknowledged record (bench/_kafka.py says why) and its queue holds at most 100,000 records
     (librdkafka's default), so latency at full speed is mostly time spent queued;
  2. acks=all RF=3 once more, paced at half the rate it reached at full speed (the median of
     the --repeat runs): its latency there is the figure that matters;
  3. failover: while an acks=all producer sends 1,000 records/s (--failover-rate) to the 3
     partitions of an RF=3 topic (the failover drill's producer, tools/failover_drill.py), kill -9 the broker leading a partition
     (Cluster.kill_broker), first a broker that is not the controller, then, after the first is
     restarted and every ISR is full again, the controller's broker; failover is the time
     from the kill to the first acknowledged record produced after the kill on each partition
     that moved (the latest of them when several moved); beside it, when Metadata first named
     the new leader, when every partition (moved or not) had acknowledged a record produced
     after the kill, and how long the restarted broker took to rejoin every ISR;
  4. memory: the PSS of each replica process of an RF=3 topic after 20,000 acks=all records
     of 1 KiB, by role (leader or follower), beside each broker's front end and coordinator
     (issue 22 asks that followers cost no more than one actor per replica);
and prints the figures, then a table of the issue's targets (issue 22):
  - acks=all RF=3 produce rate >= 0.5x acks=1 RF=1 (Kafka's 2014 benchmark on three machines,
    100 B records, one producer thread: 421,823 rec/s with 3x synchronous replication against
    821,557 with none, 0.51x; 786,980 with 3x asynchronous replication, acks=1);
  - p99 ack latency at half load <= 20 ms;
  - failover < 3 s (rafka learns of a dead broker process from Ray; ~0.5 s expected).

The client runs in this process, which is also Ray's driver (Cluster.kill_broker needs one);
everything shares the machine's cores, so read the load average printed with the figures.
Progress goes to stderr, results to stdout. Exit 0 when every phase ran, 1 otherwise.
Everything binds to 127.0.0.1.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")  # Ray on 127.0.0.1, before ray is imported
sys.path.append(str(Path(__file__).resolve().parent.parent))  # for tools.failover_drill

import _cpu_profile
import _kafka
import _procmem
from _latency import pause_s, records_due, serve_then_wait
from confluent_kafka import Producer, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec
from harness.phases import PhaseError, log, run_phase, scenario_run
from harness.report import add_output_options, finish
from harness.results_file import Recording
from harness.stats import MB, MIB, Spread, percentile, spread_of
from harness.table import Row, size_label

from tests.waiting import wait_until
from tools.failover_drill import ACKED_PRODUCER_CONFIG, AckedProducer, drill_config, kill_moment, partition_view

BROKERS = 3
PARTITIONS = 3
RECORD_SIZES = (100, 1024)
DEFAULT_RECORDS = {100: 200_000, 1024: 50_000}
DEFAULT_FAILOVER_RATE = 1_000
MIN_INSYNC_REPLICAS = 2
# (label, acks, replication factor); the first is the ratio's base, the last is paced at half load.
CASES = (("acks=1 RF=1", "1", 1), ("acks=1 RF=3", "1", 3), ("acks=all RF=3", "all", 3))
BASE_CASE, REPLICATED_CASE = CASES[0][0], CASES[-1][0]
HALF_LOAD = 0.5
# One record in this many carries a delivery callback that notes its latency.
LATENCY_SAMPLE_EVERY = 8
HALF_LOAD_SUFFIX = " @ half load"
THROUGHPUT_TARGET = 0.5
LATENCY_TARGET_MS = 20.0
FAILOVER_TARGET_S = 3.0
PRODUCER_CONFIG = {
    "linger.ms": 5,
    "enable.idempotence": False,
    # librdkafka's default. A larger queue only adds queued time to the full-speed latency.
    "queue.buffering.max.messages": 100_000,
    "message.timeout.ms": 120_000,
    "log_level": 3,
}
STEP_TIMEOUT_S = 90.0
METADATA_POLL_S = 0.05


# -- results -----------------------------------------------------------------------------

@dataclass(frozen=True)
class ProduceRun:
    """One producer run: `records` timed records of `record_size` bytes, acknowledged in
    `seconds` (first timed produce() to the last ack), with ack latency percentiles in ms.
    `offered_rps` is the paced rate asked for (None: as fast as the client goes) and
    `sent_rps` the rate at which produce() was actually called."""

    case: str
    acks: str
    replication_factor: int
    record_size: int
    records: int
    seconds: float
    sent_rps: float
    p50_ms: float
    p99_ms: float
    p999_ms: float
    max_ms: float
    offered_rps: float | None = None

    @property
    def rps(self) -> float:
        return self.records / self.seconds

    @property
    def mbps(self) -> float:
        return self.rps * self.record_size / MB


@dataclass(frozen=True)
class CaseSummary:
    """The runs of one case and record size: median and range of the rate, median of each
    latency percentile over the runs."""

    case: str
    record_size: int
    runs: tuple[ProduceRun, ...]

    def spread(self, attribute: str) -> Spread:
        """`attribute` (e.g. rps) over the runs."""
        return Spread(tuple(getattr(r, attribute) for r in self.runs))

    def median(self, attribute: str) -> float:
        return self.spread(attribute).median


@dataclass(frozen=True)
class Failover:
    """One kill -9 of a leader's broker under an acks=all producer. Times are seconds from the
    call to Cluster.kill_broker (which first asks the broker for its pids, a few ms) and None
    when not seen within the step's timeout."""

    victim: int
    was_controller: bool
    moved: tuple[int, ...]                  # partitions the victim led
    first_ack_s: dict[int, float | None]    # partition -> first ack of a record produced after the kill
    metadata_leader_s: float | None         # Metadata first named a live leader for every moved partition
    rejoin_s: float | None                  # restart_broker called -> every ISR full again

    @property
    def failover_s(self) -> float | None:
        """The latest first ack among the moved partitions (the issue's failover time)."""
        times = [self.first_ack_s.get(p) for p in self.moved]
        return None if not times or None in times else max(times)

    @property
    def every_partition_s(self) -> float | None:
        times = list(self.first_ack_s.values())
        return None if len(times) < PARTITIONS or None in times else max(times)


@dataclass
class Results:
    """Everything one run measured, plus the phases that failed (name -> error text)."""

    runs: list[ProduceRun] = field(default_factory=list)
    failovers: list[Failover] = field(default_factory=list)
    failover_errors: dict[str, int] = field(default_factory=dict)  # failed deliveries, by error name
    failures: dict[str, str] = field(default_factory=dict)
    load_average: dict[str, tuple[float, float, float]] = field(default_factory=dict)  # "start"/"end"
    settings: dict[str, Any] = field(default_factory=dict)
    memory_mib: dict[str, list[float]] = field(default_factory=dict)  # role -> PSS of each process, MiB
    profiles: list["Profile"] = field(default_factory=list)

    def summary(self, case: str, record_size: int) -> CaseSummary | None:
        runs = tuple(r for r in self.runs if r.case == case and r.record_size == record_size)
        return CaseSummary(case, record_size, runs) if runs else None

    def failover(self, controller: bool) -> Failover | None:
        return next((f for f in self.failovers if f.was_controller == controller), None)

    def to_json(self) -> dict[str, Any]:
        def run(r: ProduceRun) -> dict[str, Any]:
            return {**asdict(r), "rps": r.rps, "mbps": r.mbps}

        def summary(s: CaseSummary) -> dict[str, Any]:
            return {"case": s.case, "record_size": s.record_size, "runs": len(s.runs),
                    **{f"{a}_{k}": getattr(s.spread(a), attribute) for a in ("rps", "mbps") for k, attribute in
                       (("median", "median"), ("min", "low"), ("max", "high"))},
                    **{f"{a}_median": s.median(a) for a in ("p50_ms", "p99_ms", "p999_ms", "max_ms")}}

        def failover(f: Failover) -> dict[str, Any]:
            return {**asdict(f), "first_ack_s": {str(p): s for p, s in f.first_ack_s.items()},
                    "failover_s": f.failover_s, "every_partition_s": f.every_partition_s}
        return {
            "settings": self.settings,
            "runs": [run(r) for r in self.runs],
            "summaries": [summary(s) for s in summaries(self)],
            "failovers": [failover(f) for f in self.failovers],
            "failover_failed_deliveries": self.failover_errors,
            "memory_pss_mib": self.memory_mib,
            "profiles": [profile_json(p) for p in self.profiles],
            "cores": os.cpu_count(),
            "load_average": self.load_average,
            "failures": self.failures,
        }


def summaries(results: Results) -> list[CaseSummary]:
    """Every case that ran, by record size, in the order of CASES (half load last)."""
    labels = [c[0] for c in CASES] + [REPLICATED_CASE + HALF_LOAD_SUFFIX]
    found = (results.summary(label, size) for size in RECORD_SIZES for label in labels)
    return [s for s in found if s is not None]


# -- produce -----------------------------------------------------------------------------

def produce_run(bootstrap: str, topic: str, case: tuple[str, str, int], record_size: int, records: int,
                rate_per_s: float | None = None, timeout_s: float = 300.0) -> ProduceRun:
    """Produce `records` records to `topic`, as fast as the client goes or paced at
    `rate_per_s`, noting each record's ack latency.

    Every LATENCY_SAMPLE_EVERY-th produce() passes its own perf_counter stamp to its delivery
    callback (a functools.partial, no lookup table), and the callback appends the difference;
    the other records carry no callback, so the client spends no Python on them (Kafka's
    ProducerPerformance samples its latencies too). That nothing unsampled was lost is checked
    apart: the topic's high watermarks must add up to every record sent. The loop serves
    callbacks every 1,024 records, and while paced whenever it waits, so a callback runs within
    about a millisecond of its ack.
    """
    label, acks, replication_factor = case
    clock = time.perf_counter
    latencies: list[float] = []
    failed: list[str] = []
    keep = latencies.append

    def delivered(sent: float, err: Any, _msg: Any) -> None:
        if err is None:
            keep(clock() - sent)
        else:
            failed.append(str(err))

    producer = Producer({"bootstrap.servers": bootstrap, **PRODUCER_CONFIG, "acks": acks})
    send, poll = producer.produce, producer.poll
    payload = os.urandom(record_size)
    send(topic, payload)  # untimed: the connection and metadata are up before the clock starts
    if producer.flush(timeout_s):
        raise PhaseError(f"produce to {topic}: the warm-up record was not acknowledged after {timeout_s:.0f} s")
    timed = records - 1
    started = clock()
    i = 0
    while i < timed:
        if rate_per_s is None:
            due = timed
        else:
            due = records_due(clock() - started, rate_per_s, timed)
            if i >= due:
                serve_then_wait(poll, pause_s(clock() - started, i, rate_per_s))
                continue
        while i < due:
            try:
                if i % LATENCY_SAMPLE_EVERY:
                    send(topic, payload)
                else:
                    send(topic, payload, on_delivery=partial(delivered, clock()))
            except BufferError:
                poll(0.005)
                continue
            i += 1
            if not i & 1023:
                poll(0)
        poll(0)
    last_sent = clock()
    remaining = producer.flush(timeout_s)
    elapsed = clock() - started
    if remaining:
        raise PhaseError(f"produce to {topic}: {remaining} records unacknowledged after {timeout_s:.0f} s")
    if failed:
        raise PhaseError(f"produce to {topic}: {len(failed)} records failed, first: {failed[0]}")
    check_all_stored(bootstrap, topic, records)
    latencies.sort()
    ms = [1000 * percentile(latencies, q) for q in (0.5, 0.99, 0.999, 1.0)]
    name = label + (HALF_LOAD_SUFFIX if rate_per_s is not None else "")
    return ProduceRun(name, acks, replication_factor, record_size, timed, elapsed, timed / (last_sent - started),
                      *ms, offered_rps=rate_per_s)


def high_watermarks(bootstrap: str, topic: str) -> int:
    """The sum of `topic`'s partitions' high watermarks (records in a fresh topic)."""
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 3})
    # ListOffsets, not a consumer: a consumer's group would create __consumer_offsets, whose
    # replicas would cost the later cases CPU.
    asked = {TopicPartition(topic, p): OffsetSpec.latest() for p in range(PARTITIONS)}
    return sum(f.result().offset for f in admin.list_offsets(asked, request_timeout=10).values())


def check_all_stored(bootstrap: str, topic: str, records: int) -> None:
    """Every record sent to the fresh `topic` is in it: unsampled records have no callback to
    report a failure, so their count is checked here (a follower may still be catching up
    after acks=1, hence the wait)."""
    try:
        wait_until(lambda: high_watermarks(bootstrap, topic) >= records, 60, interval_s=0.5,
                   message="every record stored")
    except AssertionError:
        raise PhaseError(f"produce to {topic}: only {high_watermarks(bootstrap, topic):,} of {records:,} records"
                         " are in the topic") from None


def isr_full(admin: AdminClient, topic: str, replication_factor: int) -> bool:
    view = partition_view(admin, [topic], PARTITIONS)
    return view is not None and all(leader >= 0 and len(isr) == replication_factor for leader, isr in view.values())


@contextlib.contextmanager
def fresh_topic(bootstrap: str, name: str, replication_factor: int) -> Iterator[str]:
    """A new topic of PARTITIONS partitions, every ISR full before it is used; deleted afterwards:
    each replica is a Ray actor, and idle actors left behind would cost the later cases CPU."""
    config = {"min.insync.replicas": str(MIN_INSYNC_REPLICAS)} if replication_factor >= MIN_INSYNC_REPLICAS else {}
    _kafka.create_topic(bootstrap, name, PARTITIONS, replication_factor=replication_factor, config=config)
    try:
        admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 3})
        wait_until(lambda: isr_full(admin, name, replication_factor), STEP_TIMEOUT_S,
                   message=f"{name}: every ISR full")
        yield name
    finally:
        _kafka.delete_topic(bootstrap, name)


def produce_case(bootstrap: str, case: tuple[str, str, int], record_size: int, records: int,
                 rate_per_s: float | None = None) -> ProduceRun:
    label, _, replication_factor = case
    slug = label.replace("=", "").replace(" ", "-").lower()
    with fresh_topic(bootstrap, f"bench-repl-{slug}-{record_size}-{int(time.time() * 1000)}",
                     replication_factor) as topic:
        try:
            return produce_run(bootstrap, topic, case, record_size, records, rate_per_s)
        except PhaseError as e:
            # Records time out when a partition cannot take them: say which, while the topic exists.
            admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 3})
            raise PhaseError(f"{e}; now {describe_partitions(partition_view(admin, [topic], PARTITIONS))}") from e


def describe_partitions(view: dict[tuple[str, int], tuple[int, tuple[int, ...]]] | None) -> str:
    """'partition 0: leader 0, ISR [0]; ...' from `partition_view`, or that Metadata did not say."""
    if view is None:
        return "leaders and ISRs unknown (no Metadata)"
    return "; ".join(f"partition {p}: leader {leader}, ISR {list(isr)}" for (_, p), (leader, isr) in sorted(view.items()))


def throughput_phases(results: Results, bootstrap: str, records: dict[int, int], repeat: int) -> None:
    """Every case at full speed, `repeat` runs each (cases interleaved within a run, so each
    run's cases see about the same machine load), then acks=all RF=3 paced at half the median
    rate it reached, `repeat` runs."""
    replicated = CASES[-1]
    for size in RECORD_SIZES:
        for run in range(1, repeat + 1):
            for case in CASES:
                value = run_phase(results, f"{case[0]} {size_label(size)} (run {run}/{repeat})",
                                  lambda case=case, size=size: produce_case(bootstrap, case, size, records[size]), 420)
                if value is not None:
                    results.runs.append(value)
                    log(f"  {value.rps:,.0f} rec/s {value.mbps:.1f} MB/s, ack latency p50 {value.p50_ms:.1f}"
                        f" p99 {value.p99_ms:.1f} p99.9 {value.p999_ms:.1f} ms")
        full = results.summary(replicated[0], size)
        if full is None:
            continue
        rate = HALF_LOAD * full.median("rps")
        for run in range(1, repeat + 1):
            value = run_phase(results, f"{replicated[0]} {size_label(size)} at {rate:,.0f} rec/s (half load;"
                                       f" run {run}/{repeat})",
                              lambda size=size, rate=rate: produce_case(bootstrap, replicated, size, records[size], rate),
                              600)
            if value is not None:
                results.runs.append(value)
                log(f"  sent {value.sent_rps:,.0f} rec/s, ack latency p50 {value.p50_ms:.1f} p99 {value.p99_ms:.1f}"
                    f" p99.9 {value.p999_ms:.1f} max {value.max_ms:.1f} ms")


# -- failover ----------------------------------------------------------------------------

def leaders(admin: AdminClient, topic: str) -> dict[int, int]:
    """partition -> leader broker of `topic`, from Metadata."""
    view = wait_until(lambda: partition_view(admin, [topic], PARTITIONS), STEP_TIMEOUT_S,
                      message=f"{topic}: metadata")
    return {p: leader for (_, p), (leader, _) in view.items()}


def controller_id(cluster: Any) -> int | None:
    return next((b for b, s in cluster.broker_status().items() if s.get("controller")), None)


def kill_and_measure(cluster: Any, admin: AdminClient, producer: AckedProducer, victim: int,
                     was_controller: bool) -> Failover:
    """Kill -9 `victim`, wait until every partition has acknowledged a record produced after the
    kill (watching Metadata for the new leaders meanwhile), restart it and wait for full ISRs.
    Times are time.monotonic(), the producer's clock."""
    topic = producer.topic
    moved = tuple(sorted(p for p, leader in leaders(admin, topic).items() if leader == victim))
    if not moved:
        raise PhaseError(f"broker {victim} leads no partition of {topic}: nothing would move")
    asked = time.monotonic()
    producer.mark(asked)
    cluster.kill_broker(victim)
    killed = kill_moment(cluster, asked)
    log(f"  killed broker {victim}{' (controller)' if was_controller else ''}, leader of partitions"
        f" {list(moved)}; Cluster.kill_broker returned after {time.monotonic() - asked:.2f} s")
    first_ack: dict[int, float] = {}
    metadata_leader: float | None = None
    deadline = killed + STEP_TIMEOUT_S
    while len(first_ack) < PARTITIONS and time.monotonic() < deadline:
        first_ack = {p: acked - killed for p, acked in producer.first_acks(killed).items()}
        if metadata_leader is None:
            view = partition_view(admin, [topic], PARTITIONS)
            if view is not None and all(view[(topic, p)][0] not in (-1, victim) for p in moved):
                metadata_leader = time.monotonic() - killed
        time.sleep(METADATA_POLL_S)
    restarted = time.monotonic()
    cluster.restart_broker(victim)
    try:
        wait_until(lambda: isr_full(admin, topic, BROKERS), STEP_TIMEOUT_S,
                   message=f"broker {victim} back in every ISR")
        rejoin: float | None = time.monotonic() - restarted
    except AssertionError:   # wait_until's timeout
        rejoin = None
    result = Failover(victim, was_controller, moved, {p: first_ack.get(p) for p in range(PARTITIONS)},
                      metadata_leader, rejoin)
    if result.failover_s is None:
        raise PhaseError(f"no record produced after the kill of broker {victim} was acknowledged on partitions"
                         f" {list(moved)} within {STEP_TIMEOUT_S:.0f} s")
    return result


def failover_phase(results: Results, cluster: Any, rate_per_s: int) -> None:
    """Kill a non-controller leader, then the controller's broker, under one acks=all producer."""
    bootstrap = cluster.bootstrap_servers
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 3})

    def run() -> None:
        with fresh_topic(bootstrap, "bench-repl-failover", BROKERS) as topic:
            producer = AckedProducer(bootstrap, topic, idempotence=False, rate_per_s=rate_per_s).start()
            try:
                wait_until(lambda: producer.count() > rate_per_s, STEP_TIMEOUT_S,
                           message="a first second of acks")
                for controller in (False, True):
                    current = controller_id(cluster)
                    if controller:
                        victim = current
                    else:
                        led = set(leaders(admin, topic).values())
                        victim = min((b for b in led if b != current), default=None)
                    if victim is None:
                        raise PhaseError(f"no {'controller' if controller else 'non-controller leader'} to kill")
                    failover = kill_and_measure(cluster, admin, producer, victim, controller)
                    results.failovers.append(failover)
                    log(f"  failover {failover.failover_s:.2f} s (first acks after the kill by partition:"
                        f" {fmt_seconds(failover.first_ack_s)}); new leader in Metadata after"
                        f" {fmt_s(failover.metadata_leader_s)}; back in every ISR {fmt_s(failover.rejoin_s)}"
                        f" after restart")
            finally:
                unsettled = producer.stop(120)
                results.failover_errors.update(producer.errors)
                if unsettled:
                    results.failover_errors["unsettled"] = unsettled

    run_phase(results, "failover", run, 2 * 3 * STEP_TIMEOUT_S + 120)


# -- where the time goes ------------------------------------------------------------------

PROFILE_WINDOW_S = 10.0
PROFILE_WARMUP_S = 2.0
# The roles whose CPU is summed; py-spy samples one process of each of the first four.
PROFILED_ROLES = ("leader front end", "leader replica", "follower front end", "follower replica")


@dataclass(frozen=True)
class Profile:
    """acks=all RF=3 paced at `rate` records/s of `record_size` B: CPU by role over a window
    (no profiler attached), then the hottest frames of one process per role (py-spy attached)."""

    record_size: int
    rate: float
    cpu: _cpu_profile.CpuWindow
    latency: ProduceRun
    frames: dict[str, _cpu_profile.HotFrames]
    latency_sampled: ProduceRun | None


def cpu_roles(cluster: Any, topic: str, leader_of: dict[int, int]) -> tuple[dict[str, list[int]], dict[str, int]]:
    """Every process of the run by role (the machine's rest is 'other'), and for partition 0 one
    pid per PROFILED_ROLES entry: its leader broker's front end and replica, a follower's."""
    from rafka.actors import ray_env
    from rafka.actors.naming import parse_actor_name

    roles: dict[str, list[int]] = {"client (producer + Ray driver)": [os.getpid()]}
    chosen: dict[str, int] = {}
    known = {os.getpid()}
    for broker_id, handle in cluster.brokers.items():
        pids = ray_env.ray.get(handle.actor.replica_pids.remote(), timeout=30)
        for name, pid in pids.items():
            actor = parse_actor_name(name)
            if actor.kind == "replica" and actor.tp.topic == topic:
                role = "replicas of the topic"
                if actor.tp.partition == 0:
                    chosen["leader replica" if leader_of[0] == broker_id else "follower replica"] = pid
            elif actor.kind == "replica":
                role = "other replicas"
            elif actor.kind == "frontend":
                role = "front ends"
                if leader_of[0] == broker_id:
                    chosen["leader front end"] = pid
                elif "follower front end" not in chosen:
                    chosen["follower front end"] = pid
            else:
                role = "coordinators"
            roles.setdefault(role, []).append(pid)
            known.add(pid)
    roles["Ray services and ZooKeeper"] = [pid for pid in _procmem.descendants(os.getpid()) if pid not in known]
    return roles, chosen


def profile_case(cluster: Any, record_size: int, rate: float, workdir: Path) -> Profile:
    """Two paced acks=all runs on a fresh RF=3 topic: the first with /proc CPU sampling only,
    the second with py-spy on the chosen processes (its latency shows py-spy's own cost)."""
    bootstrap = cluster.bootstrap_servers
    records = int(rate * (PROFILE_WARMUP_S + PROFILE_WINDOW_S + 2))
    case = CASES[-1]
    with fresh_topic(bootstrap, f"bench-repl-profile-{record_size}-{int(time.time() * 1000)}", BROKERS) as topic:
        admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 3})
        roles, chosen = cpu_roles(cluster, topic, leaders(admin, topic))
        sampler = _cpu_profile.CpuSampler(roles)
        window: list[_cpu_profile.CpuWindow] = []

        def sample_cpu() -> None:
            time.sleep(PROFILE_WARMUP_S)  # the producer's ramp: measure the steady rate only
            sampler.start()
            time.sleep(PROFILE_WINDOW_S)
            window.append(sampler.stop())

        sampling = threading.Thread(target=sample_cpu, daemon=True)
        sampling.start()
        latency = produce_run(bootstrap, topic, case, record_size, records, rate)
        sampling.join()
        if not window:
            raise PhaseError("the CPU window did not close before the paced run ended")
        spies: dict[str, tuple[Any, Path]] = {}

        def sample_stacks() -> None:
            time.sleep(PROFILE_WARMUP_S)
            for role in PROFILED_ROLES:
                out = workdir / f"{role.replace(' ', '-')}-{record_size}.txt"
                spy = _cpu_profile.start_py_spy(chosen[role], PROFILE_WINDOW_S, out) if role in chosen else None
                if spy is not None:
                    spies[role] = (spy, out)

        stacks = threading.Thread(target=sample_stacks, daemon=True)
        stacks.start()
        sampled = produce_run(bootstrap, topic, case, record_size, records, rate)
        stacks.join()
        frames = {}
        for role, (spy, out) in spies.items():
            spy.wait(timeout=PROFILE_WINDOW_S + 30)
            if (hot := _cpu_profile.read_hot_frames(out)) is not None:
                frames[role] = hot
        return Profile(record_size, rate, window[0], latency, frames, sampled if spies else None)


def profile_phase(results: Results, cluster: Any) -> None:
    """Where the time goes at half load: for each record size, half the median rate of this
    run's full-speed acks=all runs, or of a full-speed run made here when the throughput phase
    did not run."""
    for size in RECORD_SIZES:
        def run(size: int = size) -> Profile:
            full = results.summary(REPLICATED_CASE, size)
            if full is None:
                full_run = produce_case(cluster.bootstrap_servers, CASES[-1], size, DEFAULT_RECORDS[size])
                log(f"  full speed {full_run.rps:,.0f} rec/s")
                rate = HALF_LOAD * full_run.rps
            else:
                rate = HALF_LOAD * full.median("rps")
            with tempfile.TemporaryDirectory(prefix="rafka-bench-profile-") as workdir:
                return profile_case(cluster, size, rate, Path(workdir))

        profile = run_phase(results, f"where the time goes, {REPLICATED_CASE} {size_label(size)} at half load", run,
                            600)
        if profile is not None:
            results.profiles.append(profile)
            log(f"  {profile.rate:,.0f} rec/s: machine {100 * profile.cpu.machine_busy:.0f}% busy, ack p99"
                f" {profile.latency.p99_ms:.1f} ms")


def profile_json(p: Profile) -> dict[str, Any]:
    return {"record_size": p.record_size, "rate": p.rate, "window_s": p.cpu.seconds,
            "machine_busy": p.cpu.machine_busy, "cores_by_role": {r: p.cpu.cores(r) for r in p.cpu.by_role},
            "latency": asdict(p.latency), "latency_with_py_spy": asdict(p.latency_sampled) if p.latency_sampled else None,
            "hot_frames": {role: asdict(hot) for role, hot in p.frames.items()}}


def profile_text(results: Results) -> list[str]:
    lines: list[str] = []
    cores = os.cpu_count() or 1
    for p in results.profiles:
        lines.append(f"where the time goes: {REPLICATED_CASE}, {size_label(p.record_size)} paced at {p.rate:,.0f} rec/s;"
                     f" CPU over {p.cpu.seconds:.0f} s of it: machine {100 * p.cpu.machine_busy:.0f}% busy"
                     f" ({p.cpu.machine_busy * cores:.2f} of {cores} cores); ack latency p50 {p.latency.p50_ms:.1f}"
                     f" p99 {p.latency.p99_ms:.1f} p99.9 {p.latency.p999_ms:.1f} ms")
        accounted = 0.0
        for role in p.cpu.by_role:
            accounted += p.cpu.cores(role)
            lines.append(f"  {role:<32} {p.cpu.cores(role):5.2f} cores over {p.cpu.processes.get(role, 0)} processes")
        lines.append(f"  {'anything else on the machine':<32} {max(0.0, p.cpu.machine_busy * cores - accounted):5.2f}"
                     " cores")
        if p.latency_sampled is not None:
            lines.append(f"  py-spy (100 Hz, nonblocking) on partition 0's leader and a follower, a second run: ack p99"
                         f" {p.latency_sampled.p99_ms:.1f} ms with it attached")
        for role, hot in p.frames.items():
            lines.append(f"  {role}: {hot.samples} samples; self: " +
                         ", ".join(f"{f} {100 * s:.0f}%" for f, s in hot.self_share[:6]))
            lines.append(f"  {'':<{len(role)}}  inclusive: " +
                         ", ".join(f"{f} {100 * s:.0f}%" for f, s in hot.inclusive_share[:6]))
    return lines


# -- memory ------------------------------------------------------------------------------

MEMORY_RECORDS = 20_000
MEMORY_ROLES = ("leader replica", "follower replica", "front end", "coordinator")


def memory_phase(results: Results, cluster: Any) -> None:
    """PSS of every process of the brokers, by role, with an RF=3 topic that has taken data."""
    from rafka.actors.naming import parse_actor_name
    from rafka.actors import ray_env

    def run() -> None:
        bootstrap = cluster.bootstrap_servers
        with fresh_topic(bootstrap, "bench-repl-memory", BROKERS) as topic:
            produce_run(bootstrap, topic, ("memory", "all", BROKERS), 1024, MEMORY_RECORDS)
            admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 3})
            wait_until(lambda: isr_full(admin, topic, BROKERS), STEP_TIMEOUT_S, message=f"{topic}: every ISR full")
            led = leaders(admin, topic)
            by_role: dict[str, list[float]] = {role: [] for role in MEMORY_ROLES}
            for broker_id, handle in cluster.brokers.items():
                pids = ray_env.ray.get(handle.actor.replica_pids.remote(), timeout=30)
                for name, pid in pids.items():
                    actor = parse_actor_name(name)
                    if actor.kind == "replica":
                        if actor.tp.topic != topic:
                            continue
                        role = "leader replica" if led.get(actor.tp.partition) == broker_id else "follower replica"
                    else:
                        role = "front end" if actor.kind == "frontend" else "coordinator"
                    by_role[role].append(_procmem.pss_bytes(pid) / MIB)
            results.memory_mib = by_role
            log("  " + "; ".join(f"{role} {statistics.median(v):.1f} MiB" for role, v in by_role.items() if v))

    run_phase(results, "memory by role (PSS)", run, 2 * STEP_TIMEOUT_S + 120)


def memory_text(results: Results) -> list[str]:
    if not results.memory_mib:
        return []
    lines = [f"memory (PSS of each process after {MEMORY_RECORDS:,} acks=all records of 1 KiB to an RF={BROKERS}"
             f" topic of {PARTITIONS} partitions; median [min-max]):"]
    for role, values in results.memory_mib.items():
        if found := spread_of(values):
            lines.append(f"  {role:<17} {found.median:6.1f} MiB [{found.low:.1f}-{found.high:.1f}]"
                         f" over {len(values)} processes")
    return lines


def fmt_s(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds:.2f} s"


def fmt_seconds(by_partition: dict[int, float | None]) -> str:
    return ", ".join(f"{p}: {fmt_s(s)}" for p, s in sorted(by_partition.items()))


# -- reporting ---------------------------------------------------------------------------

def target_rows(results: Results) -> list[Row]:
    rows: list[Row] = []
    for size in RECORD_SIZES:
        base, replicated = results.summary(BASE_CASE, size), results.summary(REPLICATED_CASE, size)
        rows.append(Row(f"{REPLICATED_CASE} vs {BASE_CASE} produce rec/s, {size_label(size)}",
                        replicated.median("rps") if replicated else None, base.median("rps") if base else None,
                        "rec/s", (">=", THROUGHPUT_TARGET)))
    for size in RECORD_SIZES:
        half = results.summary(REPLICATED_CASE + HALF_LOAD_SUFFIX, size)
        rows.append(Row(f"{REPLICATED_CASE} p99 ack latency at half load, {size_label(size)}, ms vs"
                        f" {LATENCY_TARGET_MS:g} ms", half.median("p99_ms") if half else None, LATENCY_TARGET_MS,
                        "ms", ("<=", 1.0)))
    for controller in (False, True):
        f = results.failover(controller)
        rows.append(Row(f"failover, {'controller' if controller else 'non-controller'} leader killed, ms vs"
                        f" {FAILOVER_TARGET_S:g} s", 1000 * f.failover_s if f and f.failover_s is not None else None,
                        1000 * FAILOVER_TARGET_S, "ms", ("<=", 1.0)))
    return rows


def measurements_text(results: Results) -> str:
    s = results.settings
    repeat = s.get("repeat", 1)
    lines = [(f"produce (confluent-kafka, linger.ms=5, {PARTITIONS} partitions, {BROKERS} brokers,"
              f" min.insync.replicas={MIN_INSYNC_REPLICAS}; rate: median of {repeat} run(s) [min-max];"
              " latency: produce() to delivery callback, median over runs of each percentile):"),
             (f"  {'case':<27} {'size':>6} {'records':>8} {'rec/s':>9} {'[min-max]':>19} {'MB/s':>6}"
              f" {'p50 ms':>7} {'p99 ms':>7} {'p99.9 ms':>8} {'max ms':>7}")]
    for summary in summaries(results):
        runs = summary.runs
        rate = summary.spread("rps")
        span = f"[{rate.low:,.0f}-{rate.high:,.0f}]" if len(runs) > 1 else ""
        lines.append(f"  {summary.case:<27} {size_label(summary.record_size):>6} {runs[0].records:>8,}"
                     f" {summary.median('rps'):>9,.0f} {span:>19} {summary.median('mbps'):>6.1f}"
                     f" {summary.median('p50_ms'):>7.1f} {summary.median('p99_ms'):>7.1f}"
                     f" {summary.median('p999_ms'):>8.1f} {summary.median('max_ms'):>7.1f}")
        if runs[0].offered_rps:
            lines.append(f"  {'':<27} {'':>6} paced at {runs[0].offered_rps:,.0f} rec/s, produce() called at"
                         f" {statistics.median(r.sent_rps for r in runs):,.0f} rec/s")
    lines.append(f"failover (acks=all producer at {s.get('failover_rate', DEFAULT_FAILOVER_RATE):,} rec/s round-robin"
                 f" on an RF={BROKERS} topic of {PARTITIONS} partitions; seconds from Cluster.kill_broker):")
    for f in results.failovers:
        lines.append(f"  killed broker {f.victim} ({'controller' if f.was_controller else 'not controller'}),"
                     f" leader of partition(s) {', '.join(map(str, f.moved))}: first ack on the moved partition(s)"
                     f" {fmt_s(f.failover_s)}; new leader in Metadata {fmt_s(f.metadata_leader_s)}; every partition"
                     f" {fmt_s(f.every_partition_s)} ({fmt_seconds(f.first_ack_s)}); back in every ISR"
                     f" {fmt_s(f.rejoin_s)} after restart_broker")
    if results.failover_errors:
        lines.append(f"  failed deliveries meanwhile: {results.failover_errors}")
    lines.extend(memory_text(results))
    lines.extend(profile_text(results))
    lines.append("limits:")
    if results.load_average:
        load = ", ".join(f"{k} {v[0]:.1f}" for k, v in results.load_average.items())
        lines.append(f"  1-min load average ({os.cpu_count()} cores): {load}  (other work on the machine skews rates)")
    return "\n".join(lines)


TARGET_HEADERS = ("target", "measured", "against", "ratio", "target", "met?")


def json_document(results: Results, rows: list[Row]) -> dict[str, Any]:
    """The `--output json` document: every measurement, and the targets."""
    return {**results.to_json(), "targets": [dict(zip(("metric", "measured", "against", "ratio", "target", "met"),
                                                      (r.metric, r.rafka, r.peer, r.ratio, r.target, r.met)))
                                             for r in rows]}


# -- command line ------------------------------------------------------------------------

def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="example:\n  .venv/bin/python bench/replication.py\n"
               "  .venv/bin/python bench/replication.py --repeat 3 --records 100000 --output json")
    parser.add_argument("--records", type=int, default=DEFAULT_RECORDS[100],
                        help=f"records per 100 B case (default {DEFAULT_RECORDS[100]:,})")
    parser.add_argument("--records-1kib", type=int, default=DEFAULT_RECORDS[1024],
                        help=f"records per 1 KiB case (default {DEFAULT_RECORDS[1024]:,})")
    parser.add_argument("--repeat", type=int, default=1,
                        help="runs of each produce case; the figures show the median and range (default 1)")
    parser.add_argument("--failover-rate", type=int, default=DEFAULT_FAILOVER_RATE,
                        help=f"records/s of the producer during failover (default {DEFAULT_FAILOVER_RATE:,})")
    parser.add_argument("--only", choices=("throughput", "failover", "memory", "profile"),
                        help="run only this phase (profile runs only when named here or with --profile)")
    parser.add_argument("--profile", action="store_true",
                        help="after the other phases (or the throughput phase alone), show where the time goes at"
                             " half load: CPU by process role"
                             " and, when py-spy is installed, the hottest frames of leader and follower")
    add_output_options(parser, data_dir="the brokers' and ZooKeeper's data")
    args = parser.parse_args(argv)
    if min(args.records, args.records_1kib) < 2 or args.repeat < 1 or args.failover_rate < 10:
        parser.error("--records and --records-1kib must be at least 2, --repeat 1, --failover-rate 10")
    return args


def main(argv: list[str] | None = None) -> int:
    recording = Recording.start(__file__, __doc__, argv)   # the machine's figures before the run loads it
    args = parse_args(argv)
    records = {100: args.records, 1024: args.records_1kib}
    results = Results(settings={"records": {str(k): v for k, v in records.items()}, "repeat": args.repeat,
                                "failover_rate": args.failover_rate, "brokers": BROKERS, "partitions": PARTITIONS,
                                "producer": PRODUCER_CONFIG, "failover_producer": ACKED_PRODUCER_CONFIG})
    with scenario_run(results, args.data_dir, "rafka-bench-repl-") as (stack, data_dir):
        import rafka.partition_worker  # where the brokers' code comes from (a worktree's, or not)
        log(f"data dir {data_dir}, rafka from {Path(rafka.partition_worker.__file__).resolve().parent.parent},"
            f" load average {os.getloadavg()[0]:.1f}")
        cluster = run_phase(results, f"start {BROKERS} brokers", lambda: start_cluster(data_dir / "cluster"), 300)
        if cluster is not None:
            stack.callback(lambda: run_phase(results, "stop the cluster", cluster.stop, 120))
            log(f"  serving at {cluster.bootstrap_servers}")
            if args.only in (None, "throughput"):
                throughput_phases(results, cluster.bootstrap_servers, records, args.repeat)
            if args.only in (None, "memory"):
                memory_phase(results, cluster)
            if args.only in (None, "failover"):
                failover_phase(results, cluster, args.failover_rate)
            if args.only == "profile" or (args.profile and args.only in (None, "throughput")):
                profile_phase(results, cluster)
    rows = target_rows(results)
    finish(recording, args, rows, json_document(results, rows), results.failures, measurements_text(results),
           TARGET_HEADERS)
    return 1 if results.failures else 0


def start_cluster(data_dir: Path) -> Any:
    from rafka.cluster import Cluster

    return Cluster(data_dir, brokers=BROKERS, first_port=0, config=drill_config()).start()


if __name__ == "__main__":
    sys.exit(main())
