"""Driver-side questions to Kafka: which partitions a subscription covers, their watermarks,
and offsets by timestamp. One librdkafka consumer that never joins a group or commits.
"""
from __future__ import annotations

import logging
import time
import uuid
from typing import Callable, Iterable, Mapping, TypeVar

from confluent_kafka import Consumer, KafkaException
from confluent_kafka import TopicPartition as CkTopicPartition

from rafka.common.types import TopicPartition
from rafka.spark_bridge.options import ReadOptions, Subscription
from rafka.spark_bridge.planning import Watermarks

log = logging.getLogger(__name__)
T = TypeVar("T")
# Errors worth another try although librdkafka does not mark them retriable.
_TRANSIENT = frozenset({"_TIMED_OUT", "_TRANSPORT", "LEADER_NOT_AVAILABLE"})


def consumer_settings(options: ReadOptions, role: str) -> dict[str, object]:
    """librdkafka settings for a consumer that reads ranges by hand: a private group id (as
    Spark's `groupIdPrefix-<uuid>`) that is never joined or committed, no offset reset
    (an offset out of range is reported, not skipped), read_uncommitted as the Java client's
    default, and a short queue backoff (librdkafka's 1 s pause stalls bulk reads; docs/compatibility.md)."""
    settings: dict[str, object] = {
        "group.id": f"{options.group_id_prefix}-{uuid.uuid4()}-{role}",
        "enable.auto.commit": False, "enable.auto.offset.store": False,
        "auto.offset.reset": "error", "isolation.level": "read_uncommitted",
        "fetch.queue.backoff.ms": 20, "queued.min.messages": 200_000,
        # A task reads one partition: let one fetch carry as much as a whole-consumer fetch
        # of several partitions would (librdkafka's default is 1 MiB per partition).
        "max.partition.fetch.bytes": 8 << 20,
        "socket.timeout.ms": min(options.poll_timeout_ms, 60_000),
    }
    settings.update(options.client)
    settings["bootstrap.servers"] = options.bootstrap_servers
    return settings


class KafkaLookup:
    """Partitions, watermarks and offsets for times, with Spark's retry policy
    (`fetchOffset.numRetries`, `fetchOffset.retryIntervalMs`). Not thread-safe."""

    def __init__(self, options: ReadOptions) -> None:
        self._options = options
        self._timeout_s = min(options.poll_timeout_ms, 30_000) / 1000
        self._consumer = Consumer(consumer_settings(options, "driver"))

    def close(self) -> None:
        self._consumer.close()

    def __enter__(self) -> "KafkaLookup":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def partitions(self, subscription: Subscription) -> list[TopicPartition]:
        """The partitions the subscription covers now (topics that do not exist have none,
        as with Spark's subscribe; assigned partitions must exist)."""
        metadata = self._retry(lambda: self._consumer.list_topics(timeout=self._timeout_s))
        found = []
        for name, topic in metadata.topics.items():
            if topic.error is not None or not subscription.matches(name):
                continue
            found += [TopicPartition(name, p) for p in topic.partitions]
        if subscription.assigned:
            missing = sorted(set(subscription.assigned) - set(found))
            if missing:
                raise ValueError(f"assigned partitions do not exist: {', '.join(map(str, missing))}")
            return sorted(subscription.assigned)
        return sorted(found)

    def watermarks(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, Watermarks]:
        """Log start offset and high watermark of each partition (ListOffsets, not cached)."""
        out = {}
        for tp in partitions:
            low, high = self._retry(lambda: self._consumer.get_watermark_offsets(
                CkTopicPartition(tp.topic, tp.partition), timeout=self._timeout_s, cached=False))
            out[tp] = Watermarks(low, high)
        return out

    def offsets_for_times(self, questions: Mapping[TopicPartition, int]) -> dict[TopicPartition, int | None]:
        """First offset with a timestamp ≥ the one asked, per partition; None when no record is that new."""
        if not questions:
            return {}
        asked = [CkTopicPartition(tp.topic, tp.partition, ts) for tp, ts in sorted(questions.items())]
        answers = self._retry(lambda: self._consumer.offsets_for_times(asked, timeout=self._timeout_s))
        out: dict[TopicPartition, int | None] = {}
        for answer in answers:
            if answer.error is not None:
                raise KafkaException(answer.error)
            out[TopicPartition(answer.topic, answer.partition)] = answer.offset if answer.offset >= 0 else None
        return out

    def _retry(self, call: Callable[[], T]) -> T:
        for attempt in range(self._options.fetch_offset_retries + 1):
            try:
                return call()
            except KafkaException as e:
                transient = e.args[0].retriable() or e.args[0].name() in _TRANSIENT
                if attempt == self._options.fetch_offset_retries or not transient:
                    raise
                log.warning("Kafka lookup failed (%s), retrying in %d ms", e,
                            self._options.fetch_offset_retry_interval_ms)
                time.sleep(self._options.fetch_offset_retry_interval_ms / 1000)
        raise AssertionError("unreachable")
