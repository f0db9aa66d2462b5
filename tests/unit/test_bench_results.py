"""The benchmark's pure result logic: runs by pair, rates, and the client's consume bound."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from _produce_consume_results import ConsumeCeilingResult, Results, WorkloadResult  # noqa: E402
from harness.table import Row  # noqa: E402


def run(broker: str, produce_s: float, consume_s: float = 1.0, cpu_s: float = 0.5, size: int = 100) -> WorkloadResult:
    return WorkloadResult(broker, size, 1000, produce_s, consume_s, 1000, cpu_s)


def test_by_pair_gives_each_run_of_one_broker_and_size_by_its_pair() -> None:
    results = Results()
    results.workloads += [WorkloadResult("rafka", 100, 1000, 1.0, 1.0, 1000, pair=1),
                          WorkloadResult("tansu", 100, 1000, 2.0, 1.0, 1000, pair=1),
                          WorkloadResult("rafka", 100, 1000, 4.0, 1.0, 1000, pair=2),
                          WorkloadResult("rafka", 1024, 1000, 8.0, 1.0, 1000, pair=1)]
    assert results.by_pair("rafka", 100, "produce_rps") == {1: 1000.0, 2: 250.0}
    assert results.by_pair("tansu", 1024, "produce_rps") == {}


def test_consume_cpu_bound_uses_the_most_efficient_run_times_the_cores() -> None:
    results = Results()
    results.workloads += [run("tansu", 1.0, consume_s=1.0, cpu_s=1.0),    # 1000 rec per CPU-second
                          run("rafka", 1.0, consume_s=1.0, cpu_s=0.25),   # 4000 rec per CPU-second
                          run("rafka", 1.0, consume_s=1.0, cpu_s=0.0)]    # no CPU figure: ignored
    assert results.consume_cpu_bound(100, cores=2) == pytest.approx(8000)
    assert results.consume_cpu_bound(1024, cores=2) is None


def test_ratio_rows_print_two_decimals() -> None:
    row = Row("paired", 0.91234, 1.0, "ratio", (">=", 0.85))
    assert row.cells()[1:] == ["0.91", "1.00", "0.91x", ">= 0.85x", "yes"]


def test_consume_ceiling_takes_the_best_run_of_each_setting() -> None:
    results = Results()
    results.consume_ceiling += [ConsumeCeilingResult(100, 1000, 1.0, 1.2, 1000, 5.0),
                                ConsumeCeilingResult(100, 1000, 2.0, 1.2, 1000, 4.0),
                                ConsumeCeilingResult(1024, 1000, 0.5, 1.2, 1000, 4.0)]
    assert results.consume_ceiling_rps(100) == pytest.approx(1000)
    assert results.consume_ceiling_rps(100, defaults=True) == pytest.approx(250)
    assert results.consume_ceiling_rps(1024) == pytest.approx(2000)
    assert results.consume_ceiling_rps(4096) is None


def test_produce_rate_leaves_out_the_untimed_warm_up_records() -> None:
    """The producer's warm-up records were acknowledged before the clock started."""
    warmed = WorkloadResult("rafka", 100, 1001, 2.0, 1.0, 1001, 0.5, produce_untimed=1)
    assert warmed.produce_rps == pytest.approx(500.0)
    assert warmed.produce_mbps == pytest.approx(500.0 * 100 / 1e6)
    assert warmed.consume_rps == pytest.approx(1001.0)
