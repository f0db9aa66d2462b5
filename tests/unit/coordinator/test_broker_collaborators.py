"""The broker coordinator's small collaborators: background tasks, dormant upkeep's config,
checkpoint schedule, failed-dir fencing and status figures (pure or stand-ins; no Ray)."""
from __future__ import annotations

import asyncio
import logging
import uuid

import pytest

from rafka.common.config import LogConfig
from rafka.common.metadata import BrokerInfo, ClusterMetadata, PartitionInfo, TopicInfo
from rafka.common.types import TopicPartition
from rafka.coordinator.broker.background import BackgroundTasks
from rafka.coordinator.broker.broker_status import partition_health
from rafka.coordinator.broker.dormancy import upkeep_config
from rafka.coordinator.broker.log_dir_failure import FailedLogDirs, replicas_to_fence
from rafka.coordinator.broker.log_upkeep import due_checkpoints

log = logging.getLogger("test.broker_collaborators")


def test_a_failing_background_task_is_logged_with_what_it_was_for(caplog: pytest.LogCaptureFixture) -> None:
    async def fail() -> None:
        raise RuntimeError("boom")

    async def main() -> int:
        tasks = BackgroundTasks(log)
        task = tasks.spawn(fail(), "resting replica t-0")
        await asyncio.wait([task])
        return len(tasks)

    with caplog.at_level(logging.ERROR):
        assert asyncio.run(main()) == 0   # (not kept once done)
    assert "resting replica t-0 failed: RuntimeError('boom')" in caplog.text


def test_stop_cancels_tasks_and_timers_and_refuses_new_ones() -> None:
    async def main() -> tuple[bool, bool, object]:
        tasks = BackgroundTasks(log)
        forever = tasks.spawn(asyncio.Event().wait(), "waiting")
        fired: list = []

        async def mark() -> None:
            fired.append(1)
        tasks.later(0.01, mark, "marking")
        tasks.stop()
        await asyncio.sleep(0.05)
        return forever.cancelled(), bool(fired), tasks.spawn(mark(), "late")

    cancelled, fired, late = asyncio.run(main())
    assert cancelled and not fired and late is None


def test_a_periodic_round_that_fails_does_not_end_the_loop(caplog: pytest.LogCaptureFixture) -> None:
    async def main() -> int:
        tasks = BackgroundTasks(log)
        rounds: list = []
        done = asyncio.Event()

        async def action() -> None:
            rounds.append(1)
            if len(rounds) == 3:
                done.set()
            raise RuntimeError("round failed")
        tasks.every(0.001, action, "the upkeep")
        await asyncio.wait_for(done.wait(), 5)
        tasks.stop()
        return len(rounds)

    with caplog.at_level(logging.ERROR):
        assert asyncio.run(main()) >= 3
    assert "the upkeep failed" in caplog.text


def test_without_a_cleaner_dormant_upkeep_ignores_compaction() -> None:
    config = LogConfig(cleanup_policy=("compact", "delete"))
    assert upkeep_config(config, cleaner_enabled=False).cleanup_policy == ("delete",)
    assert upkeep_config(config, cleaner_enabled=True) is config


def test_checkpoints_come_due_on_their_own_intervals() -> None:
    chosen, due = due_checkpoints({"recovery_points": 10.0, "log_start_offsets": 15.0},
                                  {"recovery_points": 60.0, "log_start_offsets": 60.0}, 12.0)
    assert chosen == {"recovery_points"} and due == {"recovery_points": 72.0, "log_start_offsets": 15.0}


def test_replicas_on_a_failed_dir_are_fenced_once_per_process() -> None:
    failed = FailedLogDirs()
    failed.fail("/d1", "disk error")
    a, b, c = (TopicPartition("t", p) for p in range(3))
    assert replicas_to_fence({a: "/d1", b: "/d2", c: "/d1"}, failed, told={c}) == [a]


def test_partition_health_counts_what_kafka_metrics_count() -> None:
    partitions = {0: PartitionInfo(0, 1, 0, (1, 2), (1, 2)), 1: PartitionInfo(1, 1, 0, (1, 2), (1,)),
                  2: PartitionInfo(2, -1, 0, (1, 2), ()), 3: PartitionInfo(3, 2, 0, (1, 2), (2,))}
    metadata = ClusterMetadata("c", 1, 1, {1: BrokerInfo(1, "h", 1)}, {"t": TopicInfo("t", uuid.uuid4(), partitions)})
    assert partition_health(metadata, 1, controller=True) == {
        "leaders": 2, "under_replicated_partitions": ["t-1"], "offline_partitions": ["t-2"]}
    assert partition_health(metadata, 1, controller=False)["offline_partitions"] == []
