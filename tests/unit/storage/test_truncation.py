"""PartitionLog.truncate_to and truncate_fully_and_start_at: a truncated log equals a log that
never had the removed batches, in its files, reads, index and time lookups, producer state and
recovery, and appends on from the right offset (no Ray)."""
from __future__ import annotations

import dataclasses
import os

import pytest

from rafka.partition_worker.checkpoints import LeaderEpochCache
from rafka.partition_worker.follower_append import UnexpectedAppendOffsetError
from rafka.partition_worker.log import PartitionLog
from rafka.partition_worker.producer_state import list_snapshots
from rafka.partition_worker.record_batch import Record, encode_batch, parse_header
from rafka.partition_worker.segment import LogSegment
from tests.unit.storage.log_checks import crash, whole_batches
from tests.unit.storage.replica_logs import (
    MAX, NOW, ROLL_ON, ROLLING, append_all, client_batch, first_at_or_after, last_batches, log_files, producer_state,
    open_log, records_by_offset, replicate, snapshot_files, workload,
)
from tests.unit.storage.replica_logs import close_logs  # noqa: F401 (the fixture closing every log opened)

COUNT = 150
LATER = NOW + 10**7  # the clock while truncating and appending afterwards (producers stay unexpired)


def epoch_of(n: int) -> int:
    return 1 if n < 50 else (2 if n < 100 else 5)


@pytest.fixture
def leader(tmp_path):
    """A leader log of 150 client batches in about a dozen segments, and what each append got."""
    log = open_log(tmp_path / "leader" / "t-0", ROLLING)
    batches = workload(COUNT)
    infos = append_all(log, batches, LeaderEpochCache(tmp_path / "leader"), leader_epoch=epoch_of)
    assert len(log.segments) >= 10
    return log, batches, infos


def replica(leader_log: PartitionLog, path, up_to: int | None = None) -> PartitionLog:
    log = open_log(path, ROLLING)
    replicate(leader_log, log, fetch_bytes=1500, up_to=up_to)
    return log


def non_empty(log: PartitionLog) -> list[tuple[int, bytes]]:
    return [(s.base_offset, s.log_path.read_bytes()) for s in log.segments if s.size]


def assert_same_log(log: PartitionLog, reference: PartitionLog) -> None:
    """`log` (truncated) holds what `reference` (never had the rest) holds, and finds it alike."""
    assert log.log_end_offset == reference.log_end_offset
    assert non_empty(log) == non_empty(reference)
    whole_batches(log)  # every file is whole batches with good CRCs; `read` finds each of them
    for seg in log.segments:
        assert all(offset < seg.next_offset and position < seg.size for offset, position in seg.index.entries())
        assert all(offset < seg.next_offset for _, offset in seg.time_index.entries())
        assert (seg.max_timestamp, seg.offset_of_max_timestamp) == next(
            ((s.max_timestamp, s.offset_of_max_timestamp) for s in reference.segments if s.base_offset == seg.base_offset),
            (-1, -1))
    ref_entries = {s.base_offset: s.index.entries() for s in reference.segments}
    assert {s.base_offset: s.index.entries() for s in log.segments if s.size} == {
        base: entries for base, entries in ref_entries.items() if base < log.log_end_offset}
    for offset in range(log.log_start_offset, log.log_end_offset, 3):
        assert ([log.read_bytes(r) for r in log.read(offset, 700).regions]
                == [reference.read_bytes(r) for r in reference.read(offset, 700).regions])
    records = records_by_offset(reference)
    for ts in range(NOW - 1, NOW + 1000 * COUNT + 2, 1777):
        assert log.offset_for_timestamp(ts) == first_at_or_after(records, ts)
    assert log.max_timestamp_offset() == reference.max_timestamp_offset()
    assert last_batches(log) == last_batches(reference)
    assert all(offset <= log.log_end_offset for offset, _ in list_snapshots(log.directory))
    assert log.recovery_point <= log.log_end_offset and log.log_start_offset <= log.log_end_offset


def truncation_targets(log: PartitionLog, infos) -> dict[str, tuple[int, int]]:
    """Scenario -> (target offset, the log end offset truncation must leave)."""
    seg = log.segments[5]
    in_seg5 = [i for i in infos if seg.base_offset < i.base_offset and i.last_offset < seg.next_offset]
    middle = in_seg5[len(in_seg5) // 2]
    straddled = next(i for i in in_seg5 if i.last_offset > i.base_offset)
    in_seg0 = [i for i in infos if 0 < i.base_offset < log.segments[1].base_offset]
    return {
        "mid-segment": (middle.base_offset, middle.base_offset),
        "inside-a-batch": (straddled.base_offset + 1, straddled.base_offset),  # the batch goes whole
        "segment-boundary": (seg.base_offset, seg.base_offset),
        "across-many-segments": (in_seg0[-1].base_offset, in_seg0[-1].base_offset),
        "to-zero": (0, 0),
        "last-batch-only": (infos[-1].base_offset + 1, infos[-1].base_offset),
    }


SCENARIOS = ["mid-segment", "inside-a-batch", "segment-boundary", "across-many-segments", "to-zero", "last-batch-only"]


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_truncated_log_equals_a_log_that_never_had_the_tail(tmp_path, leader, scenario):
    leader_log, batches, infos = leader
    target, end = truncation_targets(leader_log, infos)[scenario]
    log = replica(leader_log, tmp_path / "truncated" / "t-0")
    reference = replica(leader_log, tmp_path / "reference" / "t-0", up_to=end)
    assert reference.log_end_offset == end
    rp_before = log.recovery_point

    assert log.truncate_to(target, now_ms=LATER)
    assert log.log_end_offset == end
    assert log.recovery_point == min(rp_before, end)
    assert_same_log(log, reference)
    assert [s.base_offset for s in log.segments][-1] <= target
    assert not any(s.base_offset > target for s in log.segments)
    gone = {r.value for o, r in records_by_offset(leader_log).items() if o >= end}
    assert not gone & {r.value for r in records_by_offset(log).values()}

    # Producers: a retry of a producer's last kept batch is a duplicate with its old offsets; its
    # first removed batch is new again and goes at the new log end.
    for pid in {b.producer_id for b in batches if b.producer_id >= 0}:
        mine = [(b, i) for b, i in zip(batches, infos) if b.producer_id == pid]
        kept = [(b, i) for b, i in mine if i.last_offset < end]
        removed = [(b, i) for b, i in mine if i.last_offset >= end]
        if kept:
            b, i = kept[-1]
            for each in (log, reference):
                again = each.append(bytearray(b.data), leader_epoch=7, max_batch_bytes=MAX, now_ms=LATER)
                assert again.duplicate and (again.base_offset, again.last_offset) == (i.base_offset, i.last_offset)
        if removed:
            b, _ = removed[0]
            resent = [each.append(bytearray(b.data), leader_epoch=7, max_batch_bytes=MAX, now_ms=LATER)
                      for each in (log, reference)]
            assert not resent[0].duplicate and resent[0] == resent[1]
    # Appending on: the same offsets and, past the truncation point, the same segments and files.
    for n in range(40):
        infos_after = [each.append(bytearray(client_batch(1000 + n).data), leader_epoch=7, max_batch_bytes=MAX,
                                   now_ms=LATER + n) for each in (log, reference)]
        assert infos_after[0] == infos_after[1]
    assert log_files(log) == log_files(reference)
    assert producer_state(log).keys() == producer_state(reference).keys()
    assert last_batches(log) == last_batches(reference)


@pytest.mark.parametrize("shutdown", ["clean", "unclean", "unclean-no-checkpoint"])
@pytest.mark.parametrize("scenario", ["inside-a-batch", "segment-boundary", "to-zero"])
def test_truncation_survives_a_restart(tmp_path, leader, scenario, shutdown):
    leader_log, _, infos = leader
    target, end = truncation_targets(leader_log, infos)[scenario]
    path = tmp_path / "truncated" / "t-0"
    log = replica(leader_log, path)
    log.flush()
    reference = replica(leader_log, tmp_path / "reference" / "t-0", up_to=end)
    log.truncate_to(target, now_ms=LATER)
    recovery_point, log_start = log.recovery_point, log.log_start_offset
    if shutdown == "clean":
        log.close()
    else:
        crash(log)
    reopened = open_log(path, ROLLING, now_ms=LATER, log_start_offset=log_start,
                                 recovery_point=None if shutdown == "unclean-no-checkpoint" else recovery_point)
    assert not [p.name for p in path.iterdir() if p.name.endswith(".deleted")]
    assert_same_log(reopened, reference)
    info = reopened.append(bytearray(client_batch(2000).data), leader_epoch=7, max_batch_bytes=MAX, now_ms=LATER)
    assert info.base_offset == end


def test_truncating_at_or_past_the_log_end_changes_nothing(tmp_path, leader):
    leader_log, _, _ = leader
    log = replica(leader_log, tmp_path / "f" / "t-0")
    before = (log.log_end_offset, log.recovery_point, log_files(log), producer_state(log),
              snapshot_files(log.directory), sorted(os.listdir(log.directory)))
    assert not log.truncate_to(log.log_end_offset, now_ms=LATER)
    assert not log.truncate_to(log.log_end_offset + 100, now_ms=LATER)
    assert before == (log.log_end_offset, log.recovery_point, log_files(log), producer_state(log),
                      snapshot_files(log.directory), sorted(os.listdir(log.directory)))
    with pytest.raises(ValueError):
        log.truncate_to(-1)


def test_truncating_below_the_first_segment_starts_afresh(tmp_path):
    log = open_log(tmp_path / "t-0", ROLLING)
    log.truncate_fully_and_start_at(100, now_ms=NOW)
    assert (log.log_start_offset, log.log_end_offset, log.recovery_point) == (100, 100, 100)
    assert log.delete_pending_files(NOW + ROLLING.file_delete_delay_ms) == 1  # the empty segment 0
    for n, b in enumerate(workload(40)):
        log.append(bytearray(b.data), leader_epoch=3, max_batch_bytes=MAX, now_ms=NOW + n)
    assert len(log.segments) > 2 and log.producer_state.producers and list_snapshots(log.directory)
    old = [s.log_path.name for s in log.segments]

    assert log.truncate_to(40, now_ms=LATER)
    assert (log.log_start_offset, log.log_end_offset, log.recovery_point) == (40, 40, 40)
    assert [(s.base_offset, s.size) for s in log.segments] == [(40, 0)]
    assert log.producer_state.producers == {} and list_snapshots(log.directory) == []
    names = set(os.listdir(log.directory))
    assert "00000000000000000040.log" in names and not names & set(old)
    assert {name + ".deleted" for name in old} <= names  # removed after file.delete.delay.ms
    assert log.delete_pending_files(LATER + ROLLING.file_delete_delay_ms) == len(old)
    assert not [n for n in os.listdir(log.directory) if n.endswith(".deleted")]
    assert log.append(bytearray(client_batch(0).data), leader_epoch=4, max_batch_bytes=MAX,
                      now_ms=LATER).base_offset == 40
    assert log.read(40, 1 << 20).regions and whole_batches(log)


def test_start_afresh_at_an_existing_segments_base(tmp_path, leader):
    """The new active segment takes the name of an old one: the old one's files are renamed
    first, and its readers keep their bytes."""
    leader_log, _, _ = leader
    log = replica(leader_log, tmp_path / "f" / "t-0")
    clash = log.segments[3]
    region = log.read(clash.base_offset, 1 << 20).regions[0]
    old_bytes = log.read_bytes(region)
    log.truncate_fully_and_start_at(clash.base_offset, now_ms=LATER)
    assert [(s.base_offset, s.size) for s in log.segments] == [(clash.base_offset, 0)]
    assert log.read_bytes(region) == old_bytes  # found as .deleted by its inode
    assert (log.log_start_offset, log.log_end_offset) == (clash.base_offset, clash.base_offset)
    log.append_as_follower(leader_log.read_bytes(leader_log.read(clash.base_offset, 1 << 20).regions[0]),
                           now_ms=LATER)
    log.delete_pending_files(LATER + ROLLING.file_delete_delay_ms)
    whole_batches(log)
    assert log.segments[0].log_path.exists()


def test_removed_segments_stay_readable_until_the_delayed_delete(tmp_path, leader):
    leader_log, _, infos = leader
    log = replica(leader_log, tmp_path / "f" / "t-0")
    doomed = log.segments[-3]
    region = log.read(doomed.base_offset, 1 << 20).regions[0]
    data = log.read_bytes(region)
    log.truncate_to(log.segments[-4].base_offset + 1, now_ms=LATER)
    assert log.read_bytes(region) == data
    assert (doomed.log_path.parent / (doomed.log_path.name + ".deleted")).exists()
    assert log.next_file_deletion_ms == LATER + ROLLING.file_delete_delay_ms
    log.delete_pending_files(LATER + ROLLING.file_delete_delay_ms)
    with pytest.raises(FileNotFoundError):
        log.read_bytes(region)


def test_refilling_reuses_segment_names_of_files_awaiting_deletion(tmp_path, leader):
    """After a truncation at a segment boundary the same batches roll at the same offsets again:
    the delayed delete of the old `.deleted` files must leave the new segments alone."""
    leader_log, _, _ = leader
    log = replica(leader_log, tmp_path / "f" / "t-0")
    files = log_files(log)
    log.truncate_to(log.segments[4].base_offset, now_ms=LATER)
    replicate(leader_log, log, fetch_bytes=900, now_ms=LATER)
    assert log_files(log) == files == log_files(leader_log)
    log.delete_pending_files(LATER + ROLLING.file_delete_delay_ms)
    assert log_files(log) == files
    whole_batches(log)


def test_divergent_tail_of_an_old_leader_disappears(tmp_path):
    """Broker A leads epoch 1 and writes batches its follower B never fetches; B becomes leader
    of epoch 2 and takes the producers' retries. A asks B where epoch 1 ends
    (OffsetForLeaderEpoch), truncates there and fetches: A's log is B's, byte for byte."""
    a = open_log(tmp_path / "a" / "t-0", ROLLING)
    b = open_log(tmp_path / "b" / "t-0", ROLLING)
    a_epochs, b_epochs = LeaderEpochCache(tmp_path / "a"), LeaderEpochCache(tmp_path / "b")
    batches = workload(120)
    append_all(a, batches[:80], a_epochs, leader_epoch=lambda n: 1)
    replicate(a, b, fetch_bytes=1000, epochs=b_epochs)
    replicated_end = b.log_end_offset
    append_all(a, batches[80:], a_epochs, leader_epoch=lambda n: 1, first_now=NOW + 80 * 1500)  # never replicated
    divergent = {r.value for o, r in records_by_offset(a).items() if o >= replicated_end}

    b_epochs.assign(2, b.log_end_offset)  # B leads epoch 2; the producers send their unacknowledged batches again
    for n, batch in enumerate(batches[80:]):
        info = b.append(bytearray(batch.data), leader_epoch=2, max_batch_bytes=MAX, now_ms=NOW + 10**6 + n)
        assert not info.duplicate
    for n in range(30):  # and more, so B's log is longer than A's
        b.append(bytearray(client_batch(500 + n).data), leader_epoch=2, max_batch_bytes=MAX, now_ms=NOW + 10**6 + n)

    epoch, end = b_epochs.end_offset_for(a_epochs.latest_epoch, b.log_end_offset)
    assert (epoch, end) == (1, replicated_end)
    assert a.truncate_to(end, now_ms=LATER)
    a_epochs.truncate_from_end(a.log_end_offset)
    replicate(b, a, fetch_bytes=1200, epochs=a_epochs, now_ms=LATER)

    assert log_files(a) == log_files(b)
    assert a_epochs.entries == b_epochs.entries
    assert producer_state(a).keys() == producer_state(b).keys() and last_batches(a) == last_batches(b)
    values = {r.value for r in records_by_offset(a).values()}
    assert not {v for v in divergent if v not in {r.value for r in records_by_offset(b).values()}} & values
    # A leads again (epoch 3): the retry of a batch B took is answered with B's offsets.
    last_7001 = max(n for n, batch in enumerate(batches) if batch.producer_id == 7001)
    offsets = b.append(bytearray(batches[last_7001].data), leader_epoch=2, max_batch_bytes=MAX, now_ms=LATER)
    again = a.append(bytearray(batches[last_7001].data), leader_epoch=3, max_batch_bytes=MAX, now_ms=LATER)
    assert offsets.duplicate and again.duplicate and again.base_offset == offsets.base_offset


def test_compacted_follower_truncates_inside_a_gap(tmp_path):
    """In a compacted log the target may fall where the cleaner left a gap: nothing of the
    segment holding the gap's start goes, and the log end stays at its last batch."""
    log = open_log(tmp_path / "t-0", dataclasses.replace(ROLLING, cleanup_policy=("compact",)))
    log.append_as_follower(encode_batch([Record(0, NOW, b"a", b"1")], base_offset=0)
                           + encode_batch([Record(10, NOW, b"b", b"2")], base_offset=10), now_ms=NOW)
    assert log.truncate_to(5, now_ms=LATER)
    assert log.log_end_offset == 1 and log.size_bytes == len(encode_batch([Record(0, NOW, b"a", b"1")]))
    with pytest.raises(UnexpectedAppendOffsetError):
        log.append_as_follower(encode_batch([Record(0, NOW, b"a", b"1")]), now_ms=LATER)


def test_segment_truncation_removes_a_straddling_batch_whole(tmp_path):
    seg = LogSegment.create(tmp_path, 100, index_interval_bytes=1)
    for base in (100, 103, 106):
        data = bytearray(encode_batch([Record(base + i, NOW + base + i, None, b"x" * 30) for i in range(3)],
                                      base_offset=base))
        seg.append(data, [parse_header(data, 0)])
    size = seg.size // 3
    assert seg.truncate_to(104) == 2 * size  # 103-105 holds 104: it goes with 106-108
    assert (seg.next_offset, seg.size, os.path.getsize(seg.log_path)) == (103, size, size)
    assert (seg.max_timestamp, seg.offset_of_max_timestamp) == (NOW + 102, 102)
    assert seg.index.entries() == [] and seg.time_index.entries() == []
    assert seg.truncate_to(103) == 0 and seg.truncate_to(500) == 0
    assert seg.truncate_to(100) == size and (seg.next_offset, seg.size, seg.max_timestamp) == (100, 0, -1)
    seg.close()


def test_time_roll_restarts_from_the_new_first_batch_of_a_truncated_segment(tmp_path):
    """segment.ms counts from a segment's first batch: once truncation removed it, the next
    first batch counts, not the one that was cut (Kafka resets rollingBasedTimestamp)."""
    config = ROLL_ON["time"]
    log = open_log(tmp_path / "t-0", config)
    log.append(bytearray(client_batch(0, ts=NOW).data), leader_epoch=0, max_batch_bytes=MAX, now_ms=NOW)
    log.append(bytearray(client_batch(1, ts=NOW + 1).data), leader_epoch=0, max_batch_bytes=MAX, now_ms=NOW)
    assert log.truncate_to(0, now_ms=LATER)
    later = NOW + 10 * config.segment_ms
    for n in range(3):
        log.append(bytearray(client_batch(2 + n, ts=later + n).data), leader_epoch=1, max_batch_bytes=MAX,
                   now_ms=later)
    assert [s.base_offset for s in log.segments] == [0]
