"""Shared by the follower tests: a leader log fed client batches, a follower fed what a fetch
from the leader returns, and views of two logs that must agree."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from rafka.common.config import LogConfig
from rafka.partition_worker.checkpoints import EpochEntry, LeaderEpochCache
from rafka.partition_worker.log import AppendInfo, PartitionLog
from rafka.partition_worker.record_batch import Compression, Record, decode_records, encode_batch, iter_batches

NOW = 1_700_000_000_000
MAX = 1 << 20
# A few hundred batches of 60-400 bytes roll a segment every 10-40 batches, on each of the
# leader's rules in turn: segment.bytes, a full index (segment.index.bytes 96: 12 offset entries,
# 8 time entries) and message time (segment.ms 40 s; batches are 1-1.5 s apart).
ROLL_ON = {
    "size": LogConfig(segment_bytes=2048, index_interval_bytes=96),
    "index": LogConfig(segment_bytes=1 << 20, index_interval_bytes=96, segment_index_bytes=96),
    "time": LogConfig(segment_bytes=1 << 20, index_interval_bytes=96, segment_ms=40_000),
}
ROLLING = ROLL_ON["size"]
PRODUCERS = (7001, 7002, -1, 7003)  # -1: a plain (non-idempotent) producer


_opened: list[PartitionLog] = []


def open_log(path: Path, config: LogConfig = ROLLING, **kwargs) -> PartitionLog:
    """`PartitionLog.open` (now_ms=NOW unless given) for a test using the `close_logs` fixture."""
    log = PartitionLog.open(path, config, **{"now_ms": NOW, **kwargs})
    _opened.append(log)
    return log


@pytest.fixture(autouse=True)
def close_logs():
    """Release every file descriptor of the logs a test opened with `open_log` (garbage
    collection does not: a session of leaked descriptors passes 1024 and breaks select())."""
    yield
    while _opened:
        log = _opened.pop()
        for seg in log.segments:
            seg.close()
        log.delete_pending_files(1 << 62)


@dataclass(frozen=True)
class ClientBatch:
    """One produce request's batch as a client built it, and where it came from."""

    data: bytes
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records: int


def client_batch(i: int, *, producer_id: int = -1, producer_epoch: int = -1, base_sequence: int = -1,
                 records: int = 3, ts: int | None = None, codec: int = Compression.NONE) -> ClientBatch:
    """Batch number `i`: `records` records with distinct values, timestamps NOW + i seconds."""
    ts = NOW + 1000 * i if ts is None else ts
    recs = [Record(k, ts + k, f"key-{i}-{k}".encode(), f"value-{i}-{k}-".encode() * (1 + (i * 7 + k) % 9))
            for k in range(records)]
    data = encode_batch(recs, compression=codec, producer_id=producer_id, producer_epoch=producer_epoch,
                        base_sequence=base_sequence)
    return ClientBatch(data, producer_id, producer_epoch, base_sequence, records)


def workload(count: int, first: int = 0) -> list[ClientBatch]:
    """`count` batches from four producers (three idempotent, one plain), every codec, 1-4
    records each; producer 7002 bumps its epoch halfway (its sequence restarts at 0)."""
    sequences: dict[tuple[int, int], int] = {}
    out = []
    for i in range(first, first + count):
        pid = PRODUCERS[i % len(PRODUCERS)]
        epoch = -1 if pid < 0 else (1 if pid == 7002 and i >= first + count // 2 else 0)
        records = 1 + i % 4
        seq = -1
        if pid >= 0:
            seq = sequences.get((pid, epoch), 0)
            sequences[(pid, epoch)] = seq + records
        out.append(client_batch(i, producer_id=pid, producer_epoch=epoch, base_sequence=seq, records=records,
                                codec=Compression(i % 5)))
    return out


def append_all(log: PartitionLog, batches: list[ClientBatch], epochs: LeaderEpochCache, *, leader_epoch,
               first_now: int = NOW) -> list[AppendInfo]:
    """Append client batches as a leader would, the n-th at now = first_now + 1.5 n seconds;
    `leader_epoch(n)` gives the epoch of the n-th, assigned to `epochs` where it changes
    (Kafka's makeLeader assigns the new epoch at the log end)."""
    infos = []
    for n, b in enumerate(batches):
        epoch = leader_epoch(n)
        if epochs.latest_epoch != epoch:
            epochs.assign(epoch, log.log_end_offset)
        infos.append(log.append(bytearray(b.data), leader_epoch=epoch, max_batch_bytes=MAX,
                                now_ms=first_now + 1500 * n))
    return infos


def replicate(leader: PartitionLog, follower: PartitionLog, *, fetch_bytes: int, epochs: LeaderEpochCache | None = None,
              now_ms: int = NOW, up_to: int | None = None) -> list[EpochEntry]:
    """Fetch from the follower's log end until it reaches the leader's (or `up_to`), `fetch_bytes`
    at a time, appending each answer as a fetch delivers it: whole batches, across segments.
    The epoch starts reported go to `epochs` when given; all are returned."""
    seen: list[EpochEntry] = []
    end = leader.log_end_offset if up_to is None else up_to
    while follower.log_end_offset < end:
        result = leader.read(follower.log_end_offset, fetch_bytes, max_offset=end)
        assert result.regions
        data = b"".join(leader.read_bytes(r) for r in result.regions)
        info = follower.append_as_follower(memoryview(data), now_ms=now_ms)
        assert info.last_offset == result.next_offset - 1
        for entry in info.epoch_starts:
            seen.append(entry)
            if epochs is not None:
                epochs.assign(entry.epoch, entry.start_offset)
    return seen


def log_files(log: PartitionLog) -> dict[str, bytes]:
    """The `.log` files of the log's segments by name."""
    return {s.log_path.name: s.log_path.read_bytes() for s in log.segments}


def snapshot_files(path: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(Path(path).glob("*.snapshot"))}


def producer_state(log: PartitionLog) -> dict[int, tuple]:
    """Everything the producer state holds: epoch, last timestamp and the cached batches."""
    return {pid: (e.producer_epoch, e.last_timestamp, tuple(e.batches))
            for pid, e in log.producer_state.producers.items()}


def last_batches(log: PartitionLog) -> dict[int, tuple]:
    """Per producer: epoch and its last batch (what a snapshot keeps, Kafka's last seq/offset)."""
    return {pid: (e.producer_epoch, e.batches[-1] if e.batches else None)
            for pid, e in log.producer_state.producers.items()}


def records_by_offset(log: PartitionLog) -> dict[int, Record]:
    """Every record of the log, read from its segment files, by offset."""
    out = {}
    for seg in log.segments:
        data = seg.log_path.read_bytes()
        for h in iter_batches(data):
            for r in decode_records(data, h.position)[1]:
                out[r.offset] = r
    return out


def first_at_or_after(records: dict[int, Record], timestamp: int) -> tuple[int, int] | None:
    """The answer `offset_for_timestamp` must give, by brute force over the records."""
    for offset in sorted(records):
        if records[offset].timestamp >= timestamp:
            return offset, records[offset].timestamp
    return None
