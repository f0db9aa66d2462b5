"""A broker's checkpoint writes come from several places at once (the periodic task, replicas
going dormant, log dir moves, shutdown); each runs in a thread and writes `<file>.tmp` then
renames it. They must take turns: two at once renamed each other's file away (ENOENT), and the
broker took the log dir offline."""
from __future__ import annotations

import asyncio
import logging

from rafka.common.config import BrokerConfig
from rafka.common.types import TopicPartition
from rafka.coordinator.broker.log_maintenance import LogMaintenance
from rafka.partition_worker.checkpoints import RECOVERY_POINT_CHECKPOINT, read_offset_checkpoint
from rafka.partition_worker.messages import ReplicaStatus

WRITERS = 40


def test_checkpoint_writes_started_together_all_succeed_and_the_last_values_stay(tmp_path):
    log_dir = tmp_path / "logs"
    log_dir.mkdir()
    tps = [TopicPartition("t", p) for p in range(50)]
    for tp in tps:
        (log_dir / str(tp)).mkdir()
    maintenance = LogMaintenance(BrokerConfig.from_mapping({"broker.id": "0", "log.dirs": str(log_dir)}),
                                 logging.getLogger("test"))
    for tp in tps:
        maintenance.place(tp, str(log_dir))

    async def main() -> list[dict[str, str]]:
        writes = []
        for round_ in range(WRITERS):
            maintenance.take_statuses([tps[0]], [ReplicaStatus("t", 0, 0, 0, 0, 0, round_, round_, 1, round_)])
            writes.append(asyncio.ensure_future(maintenance.write_checkpoints({}, ask_replicas=False)))
        return await asyncio.gather(*writes)

    assert asyncio.run(main()) == [{}] * WRITERS
    assert read_offset_checkpoint(log_dir / RECOVERY_POINT_CHECKPOINT)[tps[0]] == WRITERS - 1
    assert not list(log_dir.glob("*.tmp"))
