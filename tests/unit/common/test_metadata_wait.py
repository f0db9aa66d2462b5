"""Waiting for a topic's metadata as Kafka's producer does: retried errors, backoff, max.block.ms."""
from __future__ import annotations

import pytest

from rafka.common.errors import ErrorCode, KafkaError
from rafka.common.metadata_wait import MetadataTimeoutError, MetadataWait, TopicMetadata, backoff_ms

LEADER_NOT_AVAILABLE = TopicMetadata(ErrorCode.LEADER_NOT_AVAILABLE)
UNKNOWN = TopicMetadata(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)


class FakeClock:
    """Seconds that pass only when someone sleeps (or a metadata request takes time)."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.sleeps_ms: list[float] = []

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps_ms.append(round(seconds * 1000, 6))
        self.now += seconds


class FakeMetadata:
    """Answers from a script (the last one repeats); each request takes `request_ms`."""

    def __init__(self, clock: FakeClock, answers: list[TopicMetadata], request_ms: float = 0) -> None:
        self.clock, self.answers, self.request_ms = clock, list(answers), request_ms
        self.asked: list[tuple[str, int]] = []

    def __call__(self, topic: str, timeout_ms: int) -> TopicMetadata:
        self.asked.append((topic, timeout_ms))
        self.clock.now += self.request_ms / 1000
        return self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]


def waiter(clock: FakeClock, metadata: FakeMetadata, **kwargs: int) -> MetadataWait:
    return MetadataWait(metadata, monotonic=clock.monotonic, sleep=clock.sleep, jitter=lambda: 0.5, **kwargs)


def test_a_known_topic_answers_at_once_without_sleeping() -> None:
    clock = FakeClock()
    metadata = FakeMetadata(clock, [TopicMetadata(ErrorCode.NONE, 3)])
    assert waiter(clock, metadata).partition_count("orders") == 3
    assert clock.sleeps_ms == [] and metadata.asked == [("orders", 30_000)]


def test_an_auto_created_topic_is_waited_for_through_leader_not_available() -> None:
    """The first Metadata request creates the topic; the next ones say LEADER_NOT_AVAILABLE
    (and once UNKNOWN_TOPIC_OR_PARTITION) until its partitions have leaders."""
    clock = FakeClock()
    metadata = FakeMetadata(clock, [LEADER_NOT_AVAILABLE, UNKNOWN, LEADER_NOT_AVAILABLE, LEADER_NOT_AVAILABLE,
                                    LEADER_NOT_AVAILABLE, LEADER_NOT_AVAILABLE, TopicMetadata(ErrorCode.NONE, 2)])
    assert waiter(clock, metadata).partition_count("word-counts") == 2
    # retry.backoff.ms 100 doubling, capped at retry.backoff.max.ms 1000 (no jitter here).
    assert clock.sleeps_ms == [100, 200, 400, 800, 1000, 1000]
    assert len(metadata.asked) == 7


def test_a_missing_topic_fails_after_max_block_ms_with_unknown_topic_or_partition() -> None:
    clock = FakeClock()
    metadata = FakeMetadata(clock, [UNKNOWN], request_ms=5)
    with pytest.raises(MetadataTimeoutError) as failed:
        waiter(clock, metadata, max_block_ms=3000).partition_count("absent")
    assert str(failed.value) == ("Topic absent not present in metadata after 3000 ms. "
                                 "Last error: UNKNOWN_TOPIC_OR_PARTITION")
    assert failed.value.cause is ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert failed.value.code is ErrorCode.REQUEST_TIMED_OUT
    assert clock.now - 1000.0 == pytest.approx(3.0)  # the whole max.block.ms, and not a moment more
    # Each request may wait only for what is left of max.block.ms.
    assert [t for _, t in metadata.asked][:3] == [3000, 2895, 2690]


def test_a_partition_beyond_the_count_is_waited_for_then_named() -> None:
    clock = FakeClock()
    grown = FakeMetadata(clock, [TopicMetadata(ErrorCode.NONE, 2), TopicMetadata(ErrorCode.NONE, 4)])
    assert waiter(clock, grown).partition_count("orders", partition=3) == 4
    clock = FakeClock()
    never = FakeMetadata(clock, [TopicMetadata(ErrorCode.NONE, 2)])
    with pytest.raises(MetadataTimeoutError, match=r"^Partition 5 of topic orders with partition count 2 is not "
                                                   r"present in metadata after 500 ms\.$"):
        waiter(clock, never, max_block_ms=500).partition_count("orders", partition=5)


@pytest.mark.parametrize("error", [ErrorCode.INVALID_TOPIC_EXCEPTION, ErrorCode.TOPIC_AUTHORIZATION_FAILED],
                         ids=lambda e: e.name)
def test_an_invalid_or_unauthorized_topic_fails_at_once(error: ErrorCode) -> None:
    clock = FakeClock()
    metadata = FakeMetadata(clock, [TopicMetadata(error)])
    with pytest.raises(KafkaError, match=error.name) as failed:
        waiter(clock, metadata).partition_count("bad name!")
    assert failed.value.code is error and not isinstance(failed.value, MetadataTimeoutError)
    assert clock.sleeps_ms == []


def test_requests_without_an_answer_are_retried_like_errors() -> None:
    clock = FakeClock()
    metadata = FakeMetadata(clock, [TopicMetadata(ErrorCode.REQUEST_TIMED_OUT), TopicMetadata(ErrorCode.NONE, 1)])
    assert waiter(clock, metadata).partition_count("orders") == 1


def test_a_request_without_an_answer_does_not_hide_the_topics_error() -> None:
    """The last answer said UNKNOWN_TOPIC_OR_PARTITION; a later request that timed out says
    nothing about the topic, so the error reported is still the topic's."""
    clock = FakeClock()
    metadata = FakeMetadata(clock, [UNKNOWN, TopicMetadata(ErrorCode.REQUEST_TIMED_OUT)], request_ms=50)
    with pytest.raises(MetadataTimeoutError, match="UNKNOWN_TOPIC_OR_PARTITION$"):
        waiter(clock, metadata, max_block_ms=1000).partition_count("absent")


def test_max_block_ms_zero_asks_once_and_fails_at_once() -> None:
    clock = FakeClock()
    metadata = FakeMetadata(clock, [LEADER_NOT_AVAILABLE])
    with pytest.raises(MetadataTimeoutError, match="LEADER_NOT_AVAILABLE"):
        waiter(clock, metadata, max_block_ms=0).partition_count("new")
    assert len(metadata.asked) == 1 and clock.sleeps_ms == []


@pytest.mark.parametrize("attempt,jitter,expected", [
    (0, 0.5, 100), (1, 0.5, 200), (3, 0.5, 800), (4, 0.5, 1000), (40, 0.5, 1000),
    (0, 0.0, 80), (0, 0.999999, 120), (3, 0.999999, 960), (4, 0.0, 800),
], ids=lambda v: str(v))
def test_backoff_grows_as_kafkas_exponential_backoff(attempt: int, jitter: float, expected: float) -> None:
    assert backoff_ms(attempt, 100, 1000, jitter) == pytest.approx(expected, abs=1e-3)


def test_backoff_is_flat_when_its_maximum_is_not_above_its_start() -> None:
    assert backoff_ms(5, 250, 100, 0.9) == 250
