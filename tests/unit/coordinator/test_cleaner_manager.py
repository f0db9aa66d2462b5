"""CleanerManager: the dirtiest logs above min.cleanable.dirty.ratio first, max.compaction.lag.ms,
uncleanable partitions skipped, checkpoints kept by the caller."""
from __future__ import annotations

from rafka.common.types import TopicPartition
from rafka.coordinator.broker.cleaner_manager import CleanerManager, LogToClean, cleaner_summary
from rafka.partition_worker.cleaner import CleanableInfo, CleanResult

A, B, C, D = (TopicPartition("t", i) for i in range(4))


def cand(tp: TopicPartition, clean: int, dirty: int, ratio: float = 0.5, delay_ms: int = 0,
         first_dirty: int = 0, reset: bool = False) -> LogToClean:
    return LogToClean(tp, CleanableInfo(first_dirty, 100, clean, dirty, delay_ms, reset), ratio)


def test_dirtiest_logs_above_the_ratio_are_chosen_first():
    m = CleanerManager()
    checkpoints: dict[TopicPartition, int] = {}
    chosen = m.choose([cand(A, 50, 50), cand(B, 10, 90), cand(C, 30, 70), cand(D, 0, 0)], 2, checkpoints)
    assert [c.tp for c in chosen] == [B, C]  # A's 0.5 is not above 0.5 (Kafka compares strictly)
    assert m.in_progress == {B, C}
    # While in progress they are not offered again.
    assert [c.tp for c in m.choose([cand(B, 10, 90), cand(A, 40, 60)], 2, checkpoints)] == [A]


def test_max_compaction_lag_forces_a_log_below_the_ratio():
    m = CleanerManager()
    chosen = m.choose([cand(A, 99, 1, delay_ms=5), cand(B, 99, 1), cand(C, 100, 0, delay_ms=5)], 3, {})
    assert [c.tp for c in chosen] == [A]  # C has nothing cleanable


def test_failed_cleaning_marks_partition_uncleanable_until_forgotten():
    m = CleanerManager()
    checkpoints: dict[TopicPartition, int] = {}
    m.choose([cand(A, 0, 100), cand(B, 0, 100)], 2, checkpoints)
    m.done(A, CleanResult(0, error="CleanerError: too small"), checkpoints)
    m.done(B, CleanResult(42), checkpoints)
    assert checkpoints == {B: 42} and m.uncleanable == {A}
    assert [c.tp for c in m.choose([cand(A, 0, 100), cand(B, 0, 100)], 2, checkpoints)] == [B]
    m.done(B, None, checkpoints)  # the call itself failed
    assert m.uncleanable == {A, B}
    m.forget(B, checkpoints)
    assert B not in checkpoints and m.eligible(B)


def test_checkpoint_reset_by_the_log_is_written_back():
    m = CleanerManager()
    checkpoints = {A: 10**9}
    m.choose([cand(A, 0, 10, first_dirty=7, reset=True)], 1, checkpoints)
    assert checkpoints[A] == 7


def test_summary_reads_like_kafkas():
    text = cleaner_summary(0, A, 0, CleanResult(120, bytes_read=2 << 20, bytes_written=1 << 20, records_read=100,
                                                records_removed=75, elapsed_ms=500, buffer_utilization=0.25))
    assert "Log cleaner thread 0 cleaned log t-0 (dirty section = [0, 120])" in text
    assert "50.0% size reduction (75.0% fewer messages)" in text and "Buffer utilization: 25.0%" in text
