"""A dormant replica's log: a replica served from its files, with no process.

Whether a partition can start dormant (without a process) is decided from its files: a new
replica (nothing to recover, any role), or a leader whose log was closed cleanly with the
high watermark at its end (or the only replica). A leader that stays dormant through a new
leader epoch gets the epoch written as its replica's `become` would. Blocking file reads:
callers run these in a thread.
"""
from __future__ import annotations

import uuid
from dataclasses import replace
from pathlib import Path

from rafka.common.types import TopicPartition
from rafka.partition_worker.broker_checkpoints import PartitionCheckpoint
from rafka.partition_worker.checkpoints import LeaderEpochCache, check_topic_id
from rafka.partition_worker.closed_log import ClosedLog, read_closed_log
from rafka.partition_worker.replica_state import LeaderAndIsr


def open_dormant_log(broker_id: int, tp: TopicPartition, topic_id: uuid.UUID | None, role: LeaderAndIsr,
                     checkpoint: PartitionCheckpoint, directory: Path, new: bool) -> ClosedLog | None:
    """The closed log of `tp` in `directory` if its replica can be dormant in `role`, else None
    (start the replica: a log to recover, a high watermark not known). Raises when the
    directory belongs to another topic id, as the replica would."""
    check_topic_id(directory, tp, topic_id)
    hw = checkpoint.high_watermark
    if not new and hw is None and role.replicas != (broker_id,):
        return None   # the high watermark is not known: the replica learns it from its followers
    closed = read_closed_log(directory, log_start_offset=checkpoint.log_start_offset, high_watermark=hw)
    if closed is None or (not new and closed.high_watermark < closed.log_end_offset):
        return None
    return with_leader_epoch(broker_id, closed, role)


def with_leader_epoch(broker_id: int, closed: ClosedLog, role: LeaderAndIsr) -> ClosedLog:
    """As the replica's `become`: a leader's new epoch starts at its log end (written to its
    leader-epoch-checkpoint)."""
    if role.leader != broker_id or role.leader_epoch < 0 or closed.latest_epoch == role.leader_epoch:
        return closed
    cache = LeaderEpochCache(closed.directory)
    cache.assign(role.leader_epoch, closed.log_end_offset)
    return replace(closed, leader_epochs=cache.entries)
