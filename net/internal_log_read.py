"""Reading an internal topic's partition (`__consumer_offsets`, `__transaction_state`) from its
start to its log end, as its coordinator loads it on takeover: the batches' bytes, chunk by
chunk, straight from the segment files the replica names (no copy through the replica)."""
from __future__ import annotations

from typing import Any, AsyncIterator

from rafka.common.errors import ErrorCode
from rafka.partition_worker.segment_reader import next_offset_after, read_region

CHUNK_BYTES = 1 << 20   # asked for at a time


async def read_to_log_end(channel: Any, name: str) -> AsyncIterator[bytes]:
    """The record batches of `channel`'s partition (`name` for errors) from its log start to its
    log end; RuntimeError when the replica answers an error."""
    offset = 0
    while True:
        result = await channel.read_log_end(offset, CHUNK_BYTES)
        if result.error is ErrorCode.OFFSET_OUT_OF_RANGE and offset < result.log_start_offset:
            offset = result.log_start_offset
            continue
        if result.error is not ErrorCode.NONE:
            raise RuntimeError(f"reading {name} at {offset}: {result.error.name}")
        if not result.regions:
            return
        for region in result.regions:
            data = read_region(region.path, region.position, region.length, region.inode)
            offset = next_offset_after(data, offset)
            yield data
