"""The table of bench/produce_consume.py from made-up results: medians of pairs, never the best
run; the idempotent, latency, idle-topics and spread rows; the ceilings and the machine, with
what a wake-up costs and how steady the CPU's speed is."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from _produce_consume_table import comparison_rows  # noqa: E402
from _produce_consume_results import ConsumeCeilingResult, LatencyResult, Results, WorkloadResult  # noqa: E402
from harness.machine import CpuSpeedResult, WakeCostResult  # noqa: E402


def run(broker: str, pair: int, consume_rps: float, produce_rps: float = 1000.0, size: int = 100) -> WorkloadResult:
    """1,000 records produced at `produce_rps` and consumed at `consume_rps`."""
    return WorkloadResult(broker, size, 1000, 1000 / produce_rps, 1000 / consume_rps, 1000, pair=pair)


def row(results: Results, metric_start: str):
    found = [r for r in comparison_rows(results) if r.metric.startswith(metric_start)]
    assert len(found) == 1, [r.metric for r in comparison_rows(results)]
    return found[0]


def paired_results(pairs: int = 5) -> Results:
    """rafka consumes at 900, 1000, 1100, 1200, 5000 (one lucky run); Tansu at 1000 each time."""
    results = Results(settings={"idle_topics": 20})
    rafka = [900.0, 1000.0, 1100.0, 1200.0, 5000.0]
    for pair in range(1, pairs + 1):
        results.workloads += [run("rafka", pair, rafka[pair - 1]), run("tansu", pair, 1000.0)]
    return results


def test_consume_row_is_the_median_of_pairs_with_ranges_not_the_best_run() -> None:
    r = row(paired_results(), "consume 100 B rec/s vs tansu")
    assert (r.rafka, r.peer) == (1100.0, 1000.0)
    assert r.rafka_range == (900.0, 5000.0) and r.peer_range == (1000.0, 1000.0)
    assert r.ratio == pytest.approx(1.1) and r.met == "yes"
    assert r.metric.endswith("median of 5 pairs")


def test_the_spread_row_shows_a_lucky_run() -> None:
    r = row(paired_results(), "rafka consume 100 B spread")
    assert r.rafka == pytest.approx((5000 - 900) / 1100)
    assert r.met == "NO"


def test_with_four_pairs_the_targets_are_not_judged() -> None:
    assert row(paired_results(4), "consume 100 B rec/s vs tansu").met == "n/a (<5 pairs)"


def test_idempotent_rows_pair_each_brokers_variants() -> None:
    results = Results()
    for pair in range(1, 6):
        results.workloads += [run("rafka", pair, 1000.0, produce_rps=1000.0),
                              run("tansu", pair, 1000.0, produce_rps=2000.0),
                              run("rafka-idempotent", pair, 1000.0, produce_rps=800.0),
                              run("tansu-idempotent", pair, 1000.0, produce_rps=1900.0)]
    ours = row(results, "rafka: idempotent vs non-idempotent produce 100 B")
    assert ours.ratio == pytest.approx(0.8) and ours.met == "NO"
    theirs = row(results, "tansu: idempotent vs non-idempotent produce 100 B")
    assert theirs.ratio == pytest.approx(0.95) and theirs.met == ""


def test_latency_rows_put_tansu_beside_and_judge_rafkas_p99() -> None:
    results = Results()
    for pair, p99 in enumerate((4.0, 5.0, 6.0, 30.0, 7.0), start=1):
        results.latency += [LatencyResult("rafka", pair, 2000, 2000, 2000, 1.0, p99, p99, p99),
                            LatencyResult("tansu", pair, 2000, 2000, 2000, 20.0, 300.0, 300.0, 300.0)]
    beside = row(results, "end-to-end p99 ms")
    assert (beside.rafka, beside.peer) == (6.0, 300.0)
    target = row(results, "rafka end-to-end p99 ms")
    assert (target.rafka, target.peer, target.rafka_range, target.met) == (6.0, 10.0, (4.0, 30.0), "yes")


def test_idle_topic_rows_appear_only_when_those_pairs_ran() -> None:
    results = paired_results()
    assert not [r for r in comparison_rows(results) if "idle topics" in r.metric]
    for pair in range(1, 6):
        results.workloads += [run("rafka-idle-topics", pair, 500.0), run("tansu-idle-topics", pair, 1000.0)]
    r = row(results, "consume 100 B rec/s with 20 idle topics vs tansu")
    assert r.ratio == pytest.approx(0.5) and r.met == "NO"
    assert row(results, "rafka consume 100 B with idle topics spread").rafka == 0.0


def test_ceiling_rows_compare_rafkas_median_with_the_best_ceiling() -> None:
    results = paired_results()
    results.consume_ceiling += [ConsumeCeilingResult(100, 1000, 1000 / 2000, 0.4, 1000, 1.0),
                                ConsumeCeilingResult(100, 1000, 1000 / 3000, 0.4, 1000, 1.0)]
    r = row(results, "consume 100 B rec/s, median vs client consume ceiling")
    assert (r.rafka, r.peer) == (1100.0, 3000.0)
    target = row(results, "consume target (1x tansu median) 100 B vs client consume ceiling")
    assert target.rafka == 1000.0


def test_machine_rows_stay() -> None:
    metrics = [r.metric for r in comparison_rows(Results())]
    for expected in ("produce 1 KiB MB/s, median vs loopback TCP", "produce 1 KiB MB/s, median vs disk write (dd)",
                     "idle cluster PSS MiB (Ray + ZooKeeper) vs 1.2 GiB", "`rafka up` seconds to serve vs 15 s",
                     "produce 100 B rec/s, median vs client enqueue ceiling"):
        assert expected in metrics


def test_the_wake_cost_line_gives_each_sleep_as_a_multiple_of_the_work_run_back_to_back() -> None:
    wake = WakeCostResult(hot_us=50.0, after_sleep_us={20.0: 175.0, 0.5: 80.0, 3.0: 150.0})
    assert wake.slowdown(3.0) == 3.0
    assert wake.describe() == ("Python work woken from sleep: 50 µs of CPU back to back, 1.6x after 0.5 ms,"
                               " 3.0x after 3 ms, 3.5x after 20 ms asleep")
    assert Results(wake=wake).to_json()["wake_cost"] == {"hot_us": 50.0,
                                                         "after_sleep_us": {20.0: 175.0, 0.5: 80.0, 3.0: 150.0}}


def test_the_machines_own_spread_stands_beside_rafkas_over_every_cpu_speed_run() -> None:
    results = paired_results()
    results.cpu_speed = [CpuSpeedResult("before the pairs", (100.0, 100.0, 60.0)),
                         CpuSpeedResult("after the pairs", (100.0, 110.0))]
    machine = row(results, "the machine: CPU time of one fixed piece of Python")
    assert machine.rafka == pytest.approx((110 - 60) / 100)   # all five runs together
    assert machine.peer == 0.30 and machine.target is None     # shown, not judged
    assert machine.metric.endswith("5 runs")
    assert results.cpu_speed[0].describe() == (
        "CPU speed (before the pairs): one fixed piece of Python, 3 runs back to back, took 60-100 ms of CPU"
        " (median 100): spread 40%, the fastest run 1.67x the median's speed")
    assert results.to_json()["cpu_speed"][1] == {"when": "after the pairs", "cpu_ms": (100.0, 110.0),
                                                 "median_ms": 105.0, "spread": pytest.approx(10 / 105)}


def test_without_cpu_speed_runs_the_machine_row_is_empty() -> None:
    assert row(Results(), "the machine: CPU time of one fixed piece of Python").rafka is None


def test_the_consume_with_librdkafkas_defaults_is_timed_over_the_records_it_read() -> None:
    w = WorkloadResult("rafka", 100, 3000, 1.0, 1.0, 3000, consume_defaults_s=2.0, consumed_defaults=1000)
    assert w.consume_defaults_rps == 500.0 and w.consume_rps == 3000.0
    assert WorkloadResult("rafka", 100, 3000, 1.0, 1.0, 3000, consume_defaults_s=2.0).consume_defaults_rps == 1500.0


def test_cpu_speed_times_the_same_work_each_run() -> None:
    from harness.machine import cpu_speed

    speed = cpu_speed("now", runs=3, calls=30)
    assert speed.when == "now" and len(speed.cpu_ms) == 3
    assert all(0.1 < ms < 200 for ms in speed.cpu_ms)   # 1-3 ms each here
