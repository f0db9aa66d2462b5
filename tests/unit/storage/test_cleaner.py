"""Log compaction: the cleaner keeps the latest record per key, KIP-534 tombstones, producer
batches, refuses keyless appends, and swaps segments crash-safely."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from rafka.common.config import LogConfig
from rafka.common.errors import InvalidRecordError
from rafka.partition_worker.cleaner import (
    CLEANED_FILE_SUFFIX, DELETED_FILE_SUFFIX, SWAP_FILE_SUFFIX, group_segments_by_size,
)
from rafka.partition_worker.log import PartitionLog
from rafka.partition_worker.offset_map import OffsetMap
from rafka.partition_worker.record_batch import (
    DELETE_HORIZON_FLAG_MASK, Compression, Record, TimestampType, compute_crc, decode_records, encode_batch,
    iter_batches,
)

MAX = 1 << 20
NOW = 1_700_000_000_000
COMPACT = LogConfig(segment_bytes=2048, index_interval_bytes=128, cleanup_policy=("compact",),
                    delete_retention_ms=1000, file_delete_delay_ms=0)
CODECS = [Compression.NONE, Compression.GZIP, Compression.SNAPPY, Compression.LZ4, Compression.ZSTD]


def produce(log: PartitionLog, pairs: list[tuple[bytes | None, bytes | None]], *, codec: int = Compression.NONE,
            ts: int = NOW - 10_000, producer_id: int = -1, epoch: int = -1, sequence: int = -1,
            timestamp_type: int = TimestampType.CREATE_TIME) -> int:
    records = [Record(i, ts + i, k, v) for i, (k, v) in enumerate(pairs)]
    batch = bytearray(encode_batch(records, compression=codec, producer_id=producer_id, producer_epoch=epoch,
                                   base_sequence=sequence, timestamp_type=timestamp_type))
    return log.append(batch, leader_epoch=1, max_batch_bytes=MAX).base_offset


def batches(log: PartitionLog, segments=None) -> list:
    """(header, records) of every batch of the given segments (default: the log's), in order."""
    out = []
    for seg in log.segments if segments is None else segments:
        data = seg.read_bytes(0, seg.size)
        for h in iter_batches(data):
            out.append(decode_records(data, h.position))  # verifies the CRC
    return out


def latest(log: PartitionLog) -> dict[bytes, tuple[int, bytes | None]]:
    """key -> (offset, value) of the last record of each key, read from offset 0 through `read`."""
    found: dict[bytes, tuple[int, bytes | None]] = {}
    offset, last = 0, -1
    while offset < log.log_end_offset:
        result = log.read(offset, 1 << 16)
        for region in result.regions:
            data = log.read_bytes(region)
            for h in iter_batches(data):
                for r in decode_records(data, h.position)[1]:
                    if r.offset < offset:
                        continue
                    assert r.offset > last, "offsets must strictly increase"
                    last = r.offset
                    found[r.key] = (r.offset, r.value)
        if result.next_offset == offset:
            break
        offset = result.next_offset
    return found


def fill_keys(log: PartitionLog, rounds: int, keys: int = 10, codec: int = Compression.NONE,
              value_size: int = 30) -> dict[bytes, bytes]:
    """`rounds` x `keys` updates, one batch of 5 records each; returns the last value of each key."""
    expected: dict[bytes, bytes] = {}
    pending: list[tuple[bytes, bytes]] = []
    for r in range(rounds):
        for k in range(keys):
            key, value = f"key-{k}".encode(), f"v{r}-{k}-".encode().ljust(value_size, b"x")
            pending.append((key, value))
            expected[key] = value
            if len(pending) == 5:
                produce(log, pending, codec=codec)
                pending = []
    if pending:
        produce(log, pending, codec=codec)
    return expected


def roll(log: PartitionLog) -> None:
    """Make every segment so far non-active: append a filler that does not fit the active one."""
    produce(log, [(b"filler", b"f" * (COMPACT.segment_bytes - 200))])


def filled_log(directory: Path, rounds: int = 12, **overrides) -> tuple[PartitionLog, dict[bytes, bytes]]:
    """A compacted log with `rounds` x 10 key updates in non-active segments, and the latest values."""
    log = PartitionLog.open(directory, LogConfig(**{**COMPACT.__dict__, **overrides}))
    expected = fill_keys(log, rounds=rounds)
    roll(log)
    return log, expected


@pytest.mark.parametrize("codec", CODECS, ids=[c.name.lower() for c in CODECS])
def test_cleaning_keeps_latest_value_per_key(tmp_path, codec):
    log = PartitionLog.open(tmp_path / "t-0", COMPACT)
    expected = fill_keys(log, rounds=12, codec=codec)
    roll(log)
    before_records = sum(len(rs) for _, rs in batches(log))
    info = log.cleanable(NOW)
    assert info.first_dirty_offset == 0 and info.first_uncleanable_offset == log.segments[-1].base_offset
    assert 0.9 < info.dirty_ratio <= 1.0

    result = log.clean(1 << 20, NOW, None)

    assert result.ok, result.error
    assert result.first_dirty_offset == info.first_uncleanable_offset
    assert result.records_removed > 0 and result.bytes_written < result.bytes_read
    got = latest(log)
    assert {k: v for k, (_, v) in got.items() if k != b"filler"} == expected
    after = batches(log)
    assert sum(len(rs) for _, rs in after) < before_records
    assert all(h.compression == codec for h, rs in after if rs and h.base_offset < result.first_dirty_offset)
    # Every batch keeps its base offset and the original last offset delta.
    log.close()
    reopened = PartitionLog.open(tmp_path / "t-0", COMPACT)
    assert {k: v for k, (_, v) in latest(reopened).items() if k != b"filler"} == expected
    reopened.close()


def test_cleaned_batches_keep_offsets_and_producer_fields(tmp_path):
    log = PartitionLog.open(tmp_path / "t-0", COMPACT)
    produce(log, [(b"a", b"1"), (b"b", b"1"), (b"c", b"1")], producer_id=7, epoch=3, sequence=0)
    produce(log, [(b"a", b"2"), (b"b", b"2")], producer_id=7, epoch=3, sequence=3, codec=Compression.LZ4)
    produce(log, [(b"b", b"3")], producer_id=9, epoch=0, sequence=0)
    roll(log)
    original = {h.base_offset: h for h, _ in batches(log)}

    result = log.clean(1 << 20, NOW, None)

    assert result.ok, result.error
    cleaned = batches(log)
    by_base = {h.base_offset: (h, [(r.offset, r.key, r.value) for r in rs]) for h, rs in cleaned}
    # Batch 0 keeps only c@2 but its base offset, last offset delta and producer fields.
    h0, rs0 = by_base[0]
    assert rs0 == [(2, b"c", b"1")]
    assert (h0.last_offset_delta, h0.producer_id, h0.producer_epoch, h0.base_sequence) == (2, 7, 3, 0)
    assert h0.crc == compute_crc(log.segments[0].read_bytes(h0.position, h0.size), 0, h0.size)
    # Batch 3 (the last batch of producer 7) keeps a@3 only; codec kept.
    h3, rs3 = by_base[3]
    assert rs3 == [(3, b"a", b"2")] and h3.compression == Compression.LZ4
    assert (h3.last_offset_delta, h3.base_sequence) == (original[3].last_offset_delta, 3)
    assert by_base[5][1] == [(5, b"b", b"3")]
    bases = [h.base_offset for h, _ in cleaned]
    assert bases == sorted(set(bases))


def test_last_batch_of_active_producer_is_kept_empty(tmp_path):
    log = PartitionLog.open(tmp_path / "t-0", COMPACT)
    produce(log, [(b"a", b"1"), (b"b", b"1")], producer_id=7, epoch=2, sequence=0)   # 0-1: last of pid 7
    produce(log, [(b"a", b"1")], producer_id=8, epoch=0, sequence=0)                 # 2: replaced, pid 8 has later
    produce(log, [(b"a", b"2"), (b"b", b"2")], producer_id=8, epoch=0, sequence=1)   # 3-4
    roll(log)

    assert log.clean(1 << 20, NOW, None).ok

    kept = {h.base_offset: (h, rs) for h, rs in batches(log)}
    h, rs = kept[0]
    assert rs == [] and h.records_count == 0 and h.size == 61
    assert (h.producer_id, h.producer_epoch, h.base_sequence, h.last_offset_delta) == (7, 2, 0, 1)
    assert 2 not in kept  # an older batch of producer 8 is dropped outright
    # The producer state rebuilt from the cleaned log still knows producer 7's last sequence.
    log.close()
    for snap in (tmp_path / "t-0").glob("*.snapshot"):
        snap.unlink()
    reopened = PartitionLog.open(tmp_path / "t-0", COMPACT, now_ms=NOW)
    entry = reopened.producer_state.last_entry(7)
    assert entry is not None and entry.last_seq == 1 and entry.last_data_offset == 1
    reopened.close()


def test_tombstones_kept_until_delete_horizon_then_removed(tmp_path):
    log = PartitionLog.open(tmp_path / "t-0", COMPACT)
    produce(log, [(b"a", b"1"), (b"b", b"1")])
    produce(log, [(b"a", None), (b"c", b"1")], codec=Compression.GZIP)
    roll(log)

    first = log.clean(1 << 20, NOW, None)

    assert first.ok
    got = latest(log)
    assert got[b"a"] == (2, None) and got[b"b"] == (1, b"1") and got[b"c"] == (3, b"1")
    h = next(h for h, rs in batches(log) if any(r.key == b"a" for r in rs))
    assert h.attributes & DELETE_HORIZON_FLAG_MASK and h.delete_horizon_ms == NOW + COMPACT.delete_retention_ms
    assert [r.timestamp for r in decode_records(log.segments[0].read_bytes(h.position, h.size))[1]] == \
        [NOW - 10_000, NOW - 10_000 + 1]  # record timestamps survive the new base timestamp

    # Before the horizon a new cleaning (from the log start) keeps it; at the horizon it goes.
    assert log.clean(1 << 20, NOW + 999, None).ok
    assert latest(log)[b"a"] == (2, None)
    assert log.clean(1 << 20, NOW + 1000, None).ok
    got = latest(log)
    assert b"a" not in got and got[b"c"] == (3, b"1")


def test_keyless_records_in_log_are_dropped_by_cleaner(tmp_path):
    delete_log = PartitionLog.open(tmp_path / "t-0", COMPACT.__class__(**{**COMPACT.__dict__,
                                                                          "cleanup_policy": ("delete",)}))
    produce(delete_log, [(None, b"x"), (b"a", b"1")])
    produce(delete_log, [(b"filler", b"f" * 1900)])
    delete_log.close()
    log = PartitionLog.open(tmp_path / "t-0", COMPACT)  # the topic became compacted

    result = log.clean(1 << 20, NOW, None)

    assert result.ok and result.invalid_records == 1
    assert [(r.key, r.value) for _, rs in batches(log) for r in rs][:1] == [(b"a", b"1")]


def test_compacted_topic_refuses_keyless_record_and_writes_nothing(tmp_path):
    log = PartitionLog.open(tmp_path / "orders-3", COMPACT)
    produce(log, [(b"a", b"1")])
    size = log.size_bytes
    with pytest.raises(InvalidRecordError, match="Compacted topic cannot accept message without key in topic "
                                                 r"partition orders-3\."):
        produce(log, [(b"b", b"1"), (None, b"2")], codec=Compression.ZSTD)
    assert log.size_bytes == size and log.log_end_offset == 1


def test_dedupe_buffer_too_small_for_one_segment_changes_nothing(tmp_path):
    log = PartitionLog.open(tmp_path / "t-0", COMPACT)
    fill_keys(log, rounds=3, keys=30)
    roll(log)
    before = {p.name: p.read_bytes() for p in (tmp_path / "t-0").iterdir()}

    result = log.clean(24 * 10, NOW, None)  # 10 slots, 9 usable: fewer than the first segment's keys

    assert not result.ok and result.first_dirty_offset == 0
    assert "increase log.cleaner.dedupe.buffer.size or decrease log.cleaner.threads" in result.error
    assert {p.name: p.read_bytes() for p in (tmp_path / "t-0").iterdir()} == before


def test_small_buffer_stops_at_a_segment_boundary(tmp_path):
    log = PartitionLog.open(tmp_path / "t-0", COMPACT)
    expected = {}
    for seg in range(4):  # each segment gets its own 8 keys
        for i in range(8):
            key = f"s{seg}-k{i}".encode()
            for v in range(3):
                produce(log, [(key, f"{v}".encode() * 40)])
                expected[key] = f"{v}".encode() * 40
    roll(log)
    first_segment_keys = len({r.key for _, rs in batches(log, log.segments[:1]) for r in rs})

    result = log.clean(24 * int((first_segment_keys + 2) / 0.9 + 1), NOW, None)

    assert result.ok
    bases = [s.base_offset for s in log.segments]
    assert 0 < result.first_dirty_offset < log.segments[-1].base_offset and result.first_dirty_offset in bases
    assert {k: v for k, (_, v) in latest(log).items() if k != b"filler"} == expected
    # The next cleaning goes on from the checkpoint.
    nxt = log.clean(1 << 20, NOW, result.first_dirty_offset)
    assert nxt.ok and nxt.first_dirty_offset == log.segments[-1].base_offset
    assert {k: v for k, (_, v) in latest(log).items() if k != b"filler"} == expected


def test_min_compaction_lag_and_cleanable_range(tmp_path):
    log, _ = filled_log(tmp_path / "t-0", rounds=6, min_compaction_lag_ms=5_000)
    segs = log.segments
    # Every record is 10 s old at NOW: all non-active segments are cleanable ...
    assert log.cleanable(NOW).first_uncleanable_offset == segs[-1].base_offset
    # ... but at NOW - 8 s they are only 2 s old: none is.
    early = log.cleanable(NOW - 8_000)
    assert early.first_uncleanable_offset == 0 and early.dirty_ratio == 0.0
    # A checkpoint past the log end is reset to the log start.
    assert log.cleanable(NOW, 10**9).first_dirty_offset == 0 and log.cleanable(NOW, 10**9).checkpoint_reset
    # The high watermark bounds the range (rounded down to its segment's base).
    assert log.cleanable(NOW, max_offset=segs[1].base_offset + 1).first_uncleanable_offset == segs[1].base_offset
    lagging = LogConfig(**{**COMPACT.__dict__, "max_compaction_lag_ms": 1_000})
    log.config = lagging
    assert log.cleanable(NOW).needs_compaction_now


def _leave_cleaning_half_done(tmp_path, stop_after: str) -> tuple[Path, dict]:
    """Clean, but stop the swap after `stop_after`; returns the dir and the expected latest values."""
    d = tmp_path / "t-0"
    log, expected = filled_log(d)
    cleaning = log.start_clean(1 << 20, NOW, None)
    assert cleaning.run().ok
    group = cleaning.groups[0]
    if stop_after in ("cleaned→swap", "old→deleted", "swap→log (log only)", "log→swap (log only)"):
        if stop_after == "log→swap (log only)":
            group.cleaned.log_path.rename(str(group.cleaned.log_path)[:-len(CLEANED_FILE_SUFFIX)] + SWAP_FILE_SUFFIX)
        else:
            group.cleaned.change_file_suffixes(CLEANED_FILE_SUFFIX, SWAP_FILE_SUFFIX)
    if stop_after in ("old→deleted", "swap→log (log only)"):
        group.old[0].change_file_suffixes("", DELETED_FILE_SUFFIX)
    if stop_after == "swap→log (log only)":
        for seg in group.old[1:]:
            seg.change_file_suffixes("", DELETED_FILE_SUFFIX)
        os.rename(group.cleaned.log_path, str(group.cleaned.log_path)[:-len(SWAP_FILE_SUFFIX)])
    for seg in log.segments:  # a crash: nothing closed cleanly, no marker
        seg.close()
    for g in cleaning.groups:
        g.cleaned.close()
    return d, expected


@pytest.mark.parametrize("stop_after", ["written", "log→swap (log only)", "cleaned→swap", "old→deleted",
                                        "swap→log (log only)"])
def test_crash_during_swap_recovers_a_consistent_log(tmp_path, stop_after):
    d, expected = _leave_cleaning_half_done(tmp_path, stop_after)

    log = PartitionLog.open(d, COMPACT)

    names = [p.name for p in d.iterdir()]
    assert not [n for n in names if n.endswith((CLEANED_FILE_SUFFIX, SWAP_FILE_SUFFIX, DELETED_FILE_SUFFIX))]
    assert {k: v for k, (_, v) in latest(log).items() if k != b"filler"} == expected
    bases = [s.base_offset for s in log.segments]
    assert bases == sorted(set(bases))
    rolled_forward = stop_after in ("cleaned→swap", "old→deleted", "swap→log (log only)")
    records = sum(len(rs) for _, rs in batches(log))
    assert (records < 12 * 10) == rolled_forward
    # And it can still be cleaned afterwards.
    assert log.clean(1 << 20, NOW, None).ok
    assert {k: v for k, (_, v) in latest(log).items() if k != b"filler"} == expected
    log.close()


def test_reads_taken_before_the_swap_still_see_their_own_batches(tmp_path):
    log, _ = filled_log(tmp_path / "t-0", file_delete_delay_ms=60_000)
    snapshot = log.segments
    before = [(h.base_offset, [(r.offset, r.key, r.value) for r in rs]) for h, rs in batches(log, snapshot)]

    assert log.clean(1 << 20, NOW, None).ok

    # The old segments are renamed `.deleted` but still open: a reader holding them is unaffected.
    assert any(p.name.endswith(DELETED_FILE_SUFFIX) for p in (tmp_path / "t-0").iterdir())
    after = [(h.base_offset, [(r.offset, r.key, r.value) for r in rs]) for h, rs in batches(log, snapshot)]
    assert after == before
    assert log.segments is not snapshot and len(batches(log)) < len(before)
    # After file.delete.delay.ms the files go.
    assert log.delete_swapped_out_segments(NOW) == 0
    assert log.delete_swapped_out_segments(NOW + 10**12) > 0
    assert not any(p.name.endswith(DELETED_FILE_SUFFIX) for p in (tmp_path / "t-0").iterdir())
    log.close()


def test_appends_between_start_and_finish_are_kept(tmp_path):
    log, expected = filled_log(tmp_path / "t-0")
    cleaning = log.start_clean(1 << 20, NOW, None)
    result = cleaning.run()
    for i in range(40):  # the owner keeps appending meanwhile, rolling new segments
        produce(log, [(b"late", f"{i}".encode() * 50)])
    log.finish_clean(cleaning, result)

    got = latest(log)
    assert {k: v for k, (_, v) in got.items() if k not in (b"filler", b"late")} == expected
    assert got[b"late"] == (log.log_end_offset - 1, b"39" * 50)


def test_group_segments_by_size_respects_segment_bytes(tmp_path):
    log = PartitionLog.open(tmp_path / "t-0", COMPACT)
    fill_keys(log, rounds=20)
    segs = log.segments[:-1]
    groups = group_segments_by_size(segs, 3000, 1 << 20, log.segments[-1].base_offset)
    assert [s for g in groups for s in g] == list(segs)
    assert all(sum(s.size for s in g) <= 3000 or len(g) == 1 for g in groups)
    assert len(groups) > 1


def test_offset_map_rollback_restores_earlier_state():
    m = OffsetMap(24 * 100)
    for i in range(20):
        assert m.put(f"k{i}".encode(), i)
    m.commit()
    for i in range(10, 60):
        m.put(f"k{i}".encode(), 100 + i)
    assert m.get(b"k15") == 115
    m.rollback()
    assert m.size == 20 and m.get(b"k15") == 15 and m.get(b"k40") == -1
    assert all(m.get(f"k{i}".encode()) == i for i in range(20))
    full = OffsetMap(24 * 10)
    assert sum(full.put(f"x{i}".encode(), i) for i in range(20)) == full.max_entries == 9
    assert full.put(b"x0", 99) and full.get(b"x0") == 99  # an existing key may still move
