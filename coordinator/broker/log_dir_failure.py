"""A broker's failed log dirs, and which of its replicas the controller must hear about (pure).

Kafka's broker, when a write to a log dir fails (`LogDirFailureChannel`), stops serving every
log in that dir, notes `/log_dir_event_notification`, and the controller moves the
leaderships of those replicas to other in-sync replicas and takes them out of the ISR. rafka
does the same, with one difference the issue asks for (every acknowledged record stays
readable): a replica on a failed dir keeps serving reads of what is on disk, and it is
reported offline to the controller only when its partition has another live in-sync replica
to take over. A partition whose only in-sync replica is on the failed dir keeps that leader,
read-only: produce gets KAFKA_STORAGE_ERROR, fetches are served up to the high watermark.
(Kafka would make such a partition offline, LEADER_NOT_AVAILABLE, until the broker restarts.)

A failed dir stays failed until the broker restarts (as Kafka's); new partitions are placed on
the broker's other dirs.
"""
from __future__ import annotations

from typing import Collection, Mapping

from rafka.common.metadata import ClusterMetadata
from rafka.common.types import TopicPartition


class FailedLogDirs:
    """The log dirs of one broker that failed, with the reason each failed."""

    def __init__(self) -> None:
        self.reasons: dict[str, str] = {}

    def __contains__(self, log_dir: object) -> bool:
        return log_dir in self.reasons

    def __iter__(self):
        return iter(self.reasons)

    def fail(self, log_dir: str, reason: str) -> bool:
        """Mark `log_dir` failed; True the first time (the caller then acts on it)."""
        if log_dir in self.reasons:
            return False
        self.reasons[log_dir] = reason
        return True

    def replicas_on_failed_dirs(self, placement: Mapping[TopicPartition, str]) -> set[TopicPartition]:
        """The partitions of `placement` (partition -> its log dir) that live on a failed dir."""
        return {tp for tp, log_dir in placement.items() if log_dir in self.reasons}


def replicas_to_report(metadata: ClusterMetadata, broker_id: int,
                       on_failed_dirs: Collection[TopicPartition]) -> set[TopicPartition]:
    """Which of this broker's replicas on failed dirs go to the controller as offline: those
    whose partition has another in-sync replica on a live broker, which can lead (or already
    does). The others stay this broker's, read-only (see the module docstring)."""
    report = set()
    for tp in on_failed_dirs:
        topic = metadata.topics.get(tp.topic)
        info = None if topic is None else topic.partitions.get(tp.partition)
        if info is not None and any(b != broker_id and b in metadata.brokers for b in info.isr):
            report.add(tp)
    return report


def replicas_to_fence(placement: Mapping[TopicPartition, str], failed: FailedLogDirs,
                      told: Collection[TopicPartition]) -> list[TopicPartition]:
    """The running replicas (`placement`: partition -> its log dir) on a failed dir that have not
    been told so yet (`told`: those told, in their current process)."""
    return [tp for tp, log_dir in placement.items() if log_dir in failed and tp not in told]
