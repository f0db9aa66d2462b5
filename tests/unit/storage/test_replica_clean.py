"""PartitionReplica.clean: the rewrite runs on a worker thread while appends go on; the swap
lands on the event loop and the next cleaning starts from the returned checkpoint."""
from __future__ import annotations

import asyncio
import time

from rafka.common.config import LogConfig
from rafka.common.types import TopicPartition
from rafka.partition_worker.record_batch import Record, decode_records, encode_batch, iter_batches
from rafka.partition_worker.replica_actor import PartitionReplica
from rafka.partition_worker.replica_state import LeaderAndIsr

CONFIG = LogConfig(segment_bytes=2048, index_interval_bytes=128, cleanup_policy=("compact",),
                   file_delete_delay_ms=0)


def batch(key: bytes, value: bytes) -> bytearray:
    return bytearray(encode_batch([Record(0, int(time.time() * 1000), key, value)]))


async def read_all(replica: PartitionReplica) -> list[Record]:
    out, offset = [], 0
    while True:
        result = await replica.read(offset, 1 << 16)
        if not result.regions:
            return out
        for region in result.regions:
            with open(region.path, "rb") as f:
                f.seek(region.position)
                data = f.read(region.length)
            for h in iter_batches(data):
                out += [r for r in decode_records(data, h.position)[1] if r.offset >= offset]
                offset = h.next_offset


def test_clean_runs_beside_appends_and_returns_the_checkpoint(tmp_path):
    async def scenario() -> None:
        replica = PartitionReplica(0, TopicPartition("t", 0), str(tmp_path), CONFIG)
        assert replica.become(LeaderAndIsr(0, 1, (0,), (0,), 1)).name == "NONE"
        expected: dict[bytes, bytes] = {}
        for i in range(200):
            key, value = b"k%d" % (i % 10), b"v%03d" % i * 10
            assert replica.append([batch(key, value)], acks=1)[0].error.name == "NONE"
            expected[key] = value
        info = replica.cleanable()
        assert info.first_dirty_offset == 0 and info.dirty_ratio > 0.5

        cleaning = asyncio.ensure_future(replica.clean(1 << 20))
        for i in range(200, 260):  # appends while the worker thread rewrites
            key, value = b"k%d" % (i % 10), b"v%03d" % i * 10
            replica.append([batch(key, value)], acks=1)
            expected[key] = value
            await asyncio.sleep(0)
        result = await cleaning

        assert result.ok and result.records_removed > 0
        assert result.first_dirty_offset == info.first_uncleanable_offset
        records = await read_all(replica)
        assert [r.offset for r in records] == sorted({r.offset for r in records})
        assert records[-1].offset == 259
        assert {r.key: r.value for r in records} == expected
        assert len(records) < 260
        again = await replica.clean(1 << 20, result.first_dirty_offset)
        assert again.ok and again.first_dirty_offset >= result.first_dirty_offset
        replica.close()

    asyncio.run(scenario())
