"""The tables of the smaller scenarios, from their results alone: groups' rebalances and commits,
density's targets, the Spark bridge's pairs. Each is what the results file records."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import density  # noqa: E402
import groups  # noqa: E402
import spark  # noqa: E402


def by_metric(rows, start: str):
    found = [r for r in rows if r.metric.startswith(start)]
    assert len(found) == 1, [r.metric for r in rows]
    return found[0]


def test_groups_show_each_rebalances_median_and_range_beside_the_initial_delay() -> None:
    results = groups.Results(rebalances={2: [3.4, 3.1, 3.9]}, commit_latencies=[0.002] * 99 + [0.010],
                             commits_s=0.5)
    rebalance = by_metric(groups.rows(results), "rebalance of 2 members")
    assert (rebalance.rafka, rebalance.rafka_range, rebalance.peer) == (3.4, (3.1, 3.9), 3.0)
    assert by_metric(groups.rows(results), "offset commit p99").rafka == pytest.approx(2.0)   # nearest rank
    assert by_metric(groups.rows(results), "offset commits/s").rafka == pytest.approx(200.0)


def test_groups_without_commits_have_no_commit_rows() -> None:
    results = groups.Results(failures={"commits": "PhaseError: no group coordinator"})
    assert groups.rows(results) == [] and results.to_json()["commits"] is None


def test_density_judges_its_targets_on_the_last_idle_reading() -> None:
    results = density.Results(load_average=0.1, idle=[density.Idle(0, 10 << 30, 9, 0.5),
                                                      density.Idle(1000, 1 << 30, 40, 0.04)],
                              first_produce_s=[0.4, 1.7], restart_available_s=12.0)
    rows = density.target_rows(results, 1000)
    assert [r.met for r in rows] == ["yes", "yes", "NO", "yes"]
    assert by_metric(rows, "1,000 idle partitions: PSS").rafka == pytest.approx(1.0)


def test_density_without_readings_judges_nothing() -> None:
    assert {r.met for r in density.target_rows(density.Results(load_average=0.0), 1000)} == {"n/a"}


def test_the_spark_ratio_is_the_median_of_each_runs_ratio() -> None:
    runs = [{"spark read": 60.0, "plain read": 100.0, "bridge read": 90.0,
             "spark write": 30.0, "plain write": 100.0, "bridge write": 80.0},
            {"spark read": 40.0, "plain read": 50.0, "bridge read": 45.0,
             "spark write": 45.0, "plain write": 50.0, "bridge write": 40.0}]
    rows = spark.rows(runs)
    read = by_metric(rows, "batch read, spark")
    assert read.ratio == pytest.approx(0.7) and read.met == "yes"   # (0.6 + 0.8) / 2, not 50 / 75
    write = by_metric(rows, "batch write, spark")
    assert write.ratio == pytest.approx(0.6) and write.met == "yes"
    assert by_metric(rows, "batch read, bridge").target is None
