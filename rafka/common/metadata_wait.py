"""Waiting for a topic's metadata before writing to it, as Kafka's producer does.

Kafka's `KafkaProducer.send` first waits (`waitOnMetadata`) until the metadata of the record's
topic shows its partitions (and the record's partition, when one is given), asking again with
backoff, for at most `max.block.ms`. A topic that a Metadata request has just auto-created
answers LEADER_NOT_AVAILABLE until its partitions have leaders, and a missing topic with
`auto.create.topics.enable=false` answers UNKNOWN_TOPIC_OR_PARTITION: both are waited out, and
only when `max.block.ms` has passed is the write refused, with Kafka's message
("Topic t not present in metadata after 60000 ms.") and the topic's last error. An invalid
topic name or a topic the client may not write fails at once, as Kafka's
`Metadata.maybeThrowExceptionForTopic` makes it.

Pure: the metadata comes from a callable and time from an injected clock, so every writer
(the Spark sink, Ray ingestion) shares this one policy and unit tests drive it without a broker.
"""
from __future__ import annotations

import logging
import math
import random
import time
from dataclasses import dataclass
from typing import Callable

from rafka.common.errors import ErrorCode, KafkaError

log = logging.getLogger(__name__)

# The Java producer's names and defaults (ProducerConfig / CommonClientConfigs, Kafka 3.9).
MAX_BLOCK_MS_DEFAULT = 60_000
RETRY_BACKOFF_MS_DEFAULT = 100
RETRY_BACKOFF_MAX_MS_DEFAULT = 1_000
# CommonClientConfigs.RETRY_BACKOFF_EXP_BASE and RETRY_BACKOFF_JITTER (KIP-580).
_BACKOFF_BASE = 2
_BACKOFF_JITTER = 0.2
# One metadata request never waits longer than the Java client's request.timeout.ms default.
_REQUEST_TIMEOUT_MS = 30_000
# Topic errors that no wait cures: Kafka's producer throws them at once.
_FATAL = frozenset({ErrorCode.INVALID_TOPIC_EXCEPTION, ErrorCode.TOPIC_AUTHORIZATION_FAILED})
# What a request with no answer reports: it says nothing about the topic, so the error an
# earlier answer gave stays the one reported (Kafka keeps the topic's error from the last response).
_NO_ANSWER = frozenset({ErrorCode.REQUEST_TIMED_OUT, ErrorCode.NETWORK_EXCEPTION})


@dataclass(frozen=True)
class TopicMetadata:
    """One Metadata answer for one topic: its error (NONE when known) and how many partitions
    it showed. A request that got no answer at all (timeout, lost connection) is reported as
    REQUEST_TIMED_OUT or NETWORK_EXCEPTION with no partitions."""

    error: ErrorCode
    partitions: int = 0


class MetadataTimeoutError(KafkaError):
    """The topic (or the record's partition) was not in metadata within `max.block.ms`:
    Kafka's TimeoutException, whose cause is the topic's last error (`cause`)."""

    code = ErrorCode.REQUEST_TIMED_OUT

    def __init__(self, message: str, cause: ErrorCode) -> None:
        super().__init__(message)
        self.cause = cause


def backoff_ms(attempt: int, retry_backoff_ms: int, retry_backoff_max_ms: int, jitter: float) -> float:
    """Kafka's `ExponentialBackoff(retry.backoff.ms, 2, retry.backoff.max.ms, 0.2).backoff(attempt)`:
    retry.backoff.ms doubling with each attempt (0 first), times a random factor in
    [0.8, 1.2) (`jitter` in [0, 1) picks it), never above retry.backoff.max.ms."""
    if retry_backoff_max_ms <= retry_backoff_ms:
        return float(retry_backoff_ms)
    exp_max = math.log(retry_backoff_max_ms / max(retry_backoff_ms, 1)) / math.log(_BACKOFF_BASE)
    term = retry_backoff_ms * _BACKOFF_BASE ** min(attempt, exp_max)
    factor = 1 - _BACKOFF_JITTER + 2 * _BACKOFF_JITTER * jitter
    return min(factor * term, float(retry_backoff_max_ms))


class MetadataWait:
    """Asks `fetch(topic, timeout_ms)` until the topic shows its partitions, backing off as
    Kafka's producer does between asks, for at most `max_block_ms` in all.

    `monotonic` and `sleep` are seconds, as `time.monotonic` and `time.sleep`; `jitter` gives
    numbers in [0, 1) for the backoff's random factor. Not thread-safe; holds no cache (the
    writer caches what it learnt)."""

    def __init__(self, fetch: Callable[[str, int], TopicMetadata], *, max_block_ms: int = MAX_BLOCK_MS_DEFAULT,
                 retry_backoff_ms: int = RETRY_BACKOFF_MS_DEFAULT,
                 retry_backoff_max_ms: int = RETRY_BACKOFF_MAX_MS_DEFAULT,
                 monotonic: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep,
                 jitter: Callable[[], float] = random.random) -> None:
        if max_block_ms < 0 or retry_backoff_ms < 0 or retry_backoff_max_ms < 0:
            raise ValueError("max.block.ms, retry.backoff.ms and retry.backoff.max.ms must not be negative")
        self._fetch = fetch
        self.max_block_ms = max_block_ms
        self._retry_backoff_ms = retry_backoff_ms
        self._retry_backoff_max_ms = retry_backoff_max_ms
        self._monotonic = monotonic
        self._sleep = sleep
        self._jitter = jitter

    def partition_count(self, topic: str, partition: int | None = None) -> int:
        """The topic's partition count once metadata shows the topic (and `partition`, when
        given, below that count). Raises `MetadataTimeoutError` after `max_block_ms`, or at once
        a `KafkaError` with the topic's code for an invalid or unauthorized topic."""
        started = self._monotonic()
        attempt = 0
        reported: TopicMetadata | None = None
        while True:
            elapsed_ms = (self._monotonic() - started) * 1000
            answer = self._fetch(topic, round(min(max(self.max_block_ms - elapsed_ms, 1), _REQUEST_TIMEOUT_MS)))
            if reported is None or answer.error not in _NO_ANSWER:
                reported = answer
            if answer.error is ErrorCode.NONE and answer.partitions > 0 and (
                    partition is None or partition < answer.partitions):
                if attempt:
                    log.info("topic %s in metadata with %d partition(s) after %d retries", topic,
                             answer.partitions, attempt)
                return answer.partitions
            if answer.error in _FATAL:
                raise KafkaError(f"{answer.error.name} for topic {topic}", answer.error)
            remaining_ms = self.max_block_ms - (self._monotonic() - started) * 1000
            pause_ms = backoff_ms(attempt, self._retry_backoff_ms, self._retry_backoff_max_ms, self._jitter())
            if remaining_ms <= pause_ms:  # no time left to ask again after the pause
                if remaining_ms > 0:
                    self._sleep(remaining_ms / 1000)
                raise self._timeout(topic, partition, reported)
            log.debug("topic %s not ready in metadata (%s), asking again in %.0f ms", topic, answer.error.name,
                      pause_ms)
            self._sleep(pause_ms / 1000)
            attempt += 1

    def _timeout(self, topic: str, partition: int | None, last: TopicMetadata) -> MetadataTimeoutError:
        """Kafka's TimeoutException text, with the topic's last error named after it."""
        if last.error is ErrorCode.NONE and last.partitions > 0:
            what = (f"Partition {partition} of topic {topic} with partition count {last.partitions} "
                    f"is not present in metadata after {self.max_block_ms} ms.")
            return MetadataTimeoutError(what, ErrorCode.NONE)
        what = f"Topic {topic} not present in metadata after {self.max_block_ms} ms."
        cause = last.error if last.error is not ErrorCode.NONE else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        return MetadataTimeoutError(f"{what} Last error: {cause.name}", cause)
