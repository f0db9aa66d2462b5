"""The benchmark's pairs: the A B A B order, medians and ranges, per-pair ratios, the spread,
and the table rows built from them; and the shared pacing and percentile helpers."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from _latency import pause_s, records_due  # noqa: E402
from harness.pairs import Slot, interleave, paired, paired_ratios, paired_row, spread_row  # noqa: E402
from harness.stats import percentile, spread_of  # noqa: E402
from harness.table import Row  # noqa: E402


def test_interleave_alternates_brokers_within_each_pair() -> None:
    order = interleave(2, ["w1", "w2"], ["rafka", "tansu"])
    assert [(s.pair, s.workload, s.broker) for s in order] == [
        (1, "w1", "rafka"), (1, "w1", "tansu"), (1, "w2", "rafka"), (1, "w2", "tansu"),
        (2, "w1", "rafka"), (2, "w1", "tansu"), (2, "w2", "rafka"), (2, "w2", "tansu")]


def test_interleave_never_runs_one_broker_twice_in_a_row() -> None:
    brokers = [s.broker for s in interleave(5, [("plain", 100), ("plain", 1024)], ["rafka", "tansu"])]
    assert brokers == ["rafka", "tansu"] * 10


def test_interleave_with_one_broker_is_its_runs_in_order() -> None:
    assert interleave(2, ["w"], ["rafka"]) == [Slot(1, "w", "rafka"), Slot(2, "w", "rafka")]


def test_spread_is_median_min_max_and_their_span() -> None:
    found = spread_of([5.0, 1.0, 4.0, 2.0, 3.0])
    assert (found.median, found.low, found.high) == (3.0, 1.0, 5.0)
    assert found.spread == pytest.approx((5 - 1) / 3)
    assert spread_of([1.0, 2.0, 3.0, 10.0]).median == 2.5  # even count: the mean of the middle two
    assert spread_of([]) is None


def test_the_median_is_not_the_best_run() -> None:
    assert spread_of([100.0, 900.0, 110.0, 120.0, 130.0]).median == 120.0


def test_pairs_match_by_number_and_skip_a_side_that_failed() -> None:
    ours, peer = {1: 10.0, 2: 20.0, 3: 30.0}, {1: 5.0, 3: 60.0, 4: 1.0}
    assert paired(ours, peer) == [(10.0, 5.0), (30.0, 60.0)]
    assert paired_ratios(ours, peer).values == (2.0, 0.5)


def test_the_ratio_is_the_median_of_per_pair_ratios_not_of_medians() -> None:
    """Pair 1 ran at a quiet moment for both: the ratio of medians would say 1.0."""
    ours = {1: 300.0, 2: 100.0, 3: 100.0}
    peer = {1: 100.0, 2: 100.0, 3: 110.0}
    row = paired_row("consume", ours, peer, "rec/s", (">=", 1.0), min_pairs=3)
    assert (row.rafka, row.peer) == (100.0, 100.0)
    assert row.ratio == pytest.approx(1.0)  # ratios 3.0, 1.0, 0.909: the median is 1.0
    row = paired_row("consume", {1: 90.0, 2: 100.0, 3: 95.0}, {1: 100.0, 2: 100.0, 3: 100.0}, "rec/s",
                     (">=", 1.0), min_pairs=3)
    assert row.ratio == pytest.approx(0.95) and row.met == "NO"


def test_a_paired_row_shows_each_side_with_its_range() -> None:
    row = paired_row("consume 100 B rec/s vs tansu", {1: 1_000_000.0, 2: 1_200_000.0, 3: 1_100_000.0},
                     {1: 1_000_000.0, 2: 1_000_000.0, 3: 1_000_000.0}, "rec/s", (">=", 1.0), min_pairs=3)
    assert row.cells() == ["consume 100 B rec/s vs tansu, median of 3 pairs", "1,100,000 [1,000,000-1,200,000]",
                           "1,000,000 [1,000,000-1,000,000]", "1.10x", ">= 1x", "yes"]


def test_with_fewer_pairs_than_required_the_target_is_not_judged() -> None:
    row = paired_row("consume", {1: 2.0, 2: 2.0}, {1: 1.0, 2: 1.0}, "rec/s", (">=", 1.0))
    assert row.ratio == 2.0 and row.met == "n/a (<5 pairs)"
    five = paired_row("consume", {n: 0.5 for n in range(5)}, {n: 1.0 for n in range(5)}, "rec/s", (">=", 1.0))
    assert five.met == "NO"


def test_a_paired_row_without_runs_shows_dashes() -> None:
    row = paired_row("consume", {}, {1: 1.0}, "rec/s", (">=", 1.0))
    assert row.cells()[1:] == ["-", "1 [1-1]", "-", ">= 1x", "n/a"]


def test_spread_row_compares_the_span_with_the_limit() -> None:
    within = spread_row("spread", [100.0, 110.0, 120.0, 105.0, 115.0], 0.30)
    assert within.rafka == pytest.approx(20 / 110) and within.met == "yes"
    beyond = spread_row("spread", [60.0, 100.0, 160.0, 100.0, 100.0], 0.30)
    assert beyond.rafka == pytest.approx(1.0) and beyond.met == "NO"
    assert spread_row("spread", [], 0.30).met == "n/a"
    assert spread_row("spread", [60.0, 100.0, 160.0], 0.30).met == "n/a (<5 runs)"


def test_a_plain_row_still_divides() -> None:
    assert Row("x", 3.0, 2.0).ratio == 1.5
    assert Row("x", 3.0, None).ratio is None


def test_percentile_is_nearest_rank() -> None:
    ordered = [float(n) for n in range(1, 101)]
    assert [percentile(ordered, q) for q in (0.5, 0.99, 1.0)] == [50.0, 99.0, 100.0]
    assert percentile([7.0], 0.99) == 7.0


def test_pacing_sends_at_the_rate_and_waits_at_most_a_millisecond() -> None:
    assert records_due(0.0, 2000, 100) == 1  # the first record goes at once
    assert records_due(0.0105, 2000, 100) == 22
    assert records_due(60.0, 2000, 100) == 100
    assert pause_s(0.0, 1, 2000) == pytest.approx(0.0005)  # record 1 is due at 0.5 ms
    assert pause_s(0.0, 10, 2000) == pytest.approx(0.001)  # due later: look again within 1 ms
    assert pause_s(1.0, 10, 2000) == 0.0  # overdue
