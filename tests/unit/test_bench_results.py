"""The benchmark's pure result logic: paired idempotence ratios and the client's consume bound."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from _results import ConsumeCeilingResult, Results, Row, WorkloadResult  # noqa: E402


def run(broker: str, produce_s: float, consume_s: float = 1.0, cpu_s: float = 0.5, size: int = 100) -> WorkloadResult:
    return WorkloadResult(broker, size, 1000, produce_s, consume_s, 1000, cpu_s)


def test_paired_ratio_is_the_median_of_back_to_back_runs() -> None:
    results = Results()
    # run 1: idempotent at half the plain rate; runs 2 and 3: at 0.9 and 1.1 of it.
    for plain_s, idem_s in ((1.0, 2.0), (1.0, 1 / 0.9), (2.0, 2 / 1.1)):
        results.workloads += [run("rafka", plain_s), run("rafka-idempotent", idem_s)]
    assert results.paired_produce_ratio("rafka-idempotent", "rafka", 100) == pytest.approx(0.9)
    assert results.paired_produce_ratio("rafka-idempotent", "rafka", 1024) is None


def test_paired_ratio_differs_from_the_ratio_of_best_runs() -> None:
    """The best plain run came at a quiet moment its idempotent partner did not share."""
    results = Results()
    for plain_s, idem_s in ((1.0, 1.25), (2.0, 2.0), (2.0, 2.0)):
        results.workloads += [run("rafka", plain_s), run("rafka-idempotent", idem_s)]
    best = results.summary("rafka-idempotent", 100).produce_rps / results.summary("rafka", 100).produce_rps
    assert best == pytest.approx(0.8)
    assert results.paired_produce_ratio("rafka-idempotent", "rafka", 100) == pytest.approx(1.0)


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


def test_the_defaults_consume_rate_is_summarised_like_the_others() -> None:
    results = Results()
    results.workloads += [WorkloadResult("rafka", 100, 1000, 1.0, 1.0, 1000, 0.5, consume_defaults_s=4.0),
                          WorkloadResult("rafka", 100, 1000, 1.0, 1.0, 1000, 0.5, consume_defaults_s=2.0)]
    assert results.summary("rafka", 100).consume_defaults_rps == pytest.approx(500)


def test_produce_rate_leaves_out_the_untimed_warm_up_records() -> None:
    """The producer's warm-up records were acknowledged before the clock started."""
    warmed = WorkloadResult("rafka", 100, 1001, 2.0, 1.0, 1001, 0.5, produce_untimed=1)
    assert warmed.produce_rps == pytest.approx(500.0)
    assert warmed.produce_mbps == pytest.approx(500.0 * 100 / 1e6)
    assert warmed.consume_rps == pytest.approx(1001.0)
