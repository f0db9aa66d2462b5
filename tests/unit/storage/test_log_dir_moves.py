"""Moving a partition's log between log dirs: names, sizes, copy rounds under appends, the swap,
and what a broker does at start with what an interrupted move left."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from rafka.common.types import TopicPartition
from rafka.partition_worker import log_dir_moves as m
from rafka.partition_worker.checkpoints import LeaderEpochCache
from rafka.partition_worker.log import PartitionLog
from tests.unit.storage.replica_logs import ROLLING, append_all, open_log, workload

TP = TopicPartition("orders.v1", 3)
ID = "0123456789abcdef0123456789abcdef"


@pytest.mark.parametrize("name, expected", [
    ("orders.v1-3", m.PartitionDir(TP, m.DirKind.CURRENT)),
    (f"orders.v1-3.{ID}-future", m.PartitionDir(TP, m.DirKind.FUTURE, ID)),
    (f"orders.v1-3.{ID}-delete", m.PartitionDir(TP, m.DirKind.DELETE, ID)),
    ("a-b-12", m.PartitionDir(TopicPartition("a-b", 12), m.DirKind.CURRENT)),
    ("meta.properties", None), ("orders", None), (f"orders-x.{ID}-future", None),
], ids=["current", "future", "delete", "dashes", "file", "no-partition", "bad-partition"])
def test_partition_dir_names_parse_and_print_as_kafka_writes_them(name, expected):
    assert m.parse_partition_dir(name) == expected
    if expected is not None:
        assert expected.name == name


def test_new_move_ids_are_32_hex_digits():
    ids = {m.new_move_id() for _ in range(3)}
    assert len(ids) == 3 and all(len(i) == 32 and int(i, 16) >= 0 for i in ids)


def test_log_size_counts_segment_log_files_only():
    listing = {"00000000000000000000.log": 100, "00000000000000000050.log": 20, "00000000000000000000.index": 8,
               "00000000000000000000.timeindex": 12, "00000000000000000010.log.deleted": 5,
               "00000000000000000010.log.cleaned": 7, "leader-epoch-checkpoint": 9, "x.log": 3}
    assert m.log_size(listing) == 120


def test_scan_log_dir_lists_partition_dirs_with_their_sizes(tmp_path):
    (tmp_path / "t-0").mkdir()
    (tmp_path / "t-0" / "00000000000000000000.log").write_bytes(b"x" * 10)
    (tmp_path / "t-0" / "00000000000000000000.index").write_bytes(b"x" * 99)
    (tmp_path / f"t-1.{ID}-future").mkdir()
    (tmp_path / f"t-1.{ID}-future" / "00000000000000000005.log").write_bytes(b"x" * 4)
    (tmp_path / "meta.properties").write_text("broker.id=0\n")
    (tmp_path / "not-a-partition").mkdir()
    got = [(e.dir.name, e.dir.kind, e.size_bytes) for e in m.scan_log_dir(tmp_path)]
    assert got == [("t-0", m.DirKind.CURRENT, 10), (f"t-1.{ID}-future", m.DirKind.FUTURE, 4)]


def test_volume_space_is_the_filesystems(tmp_path):
    space = m.volume_space(tmp_path)
    st = os.statvfs(tmp_path)
    assert space.total_bytes == st.f_blocks * st.f_frsize and 0 <= space.usable_bytes <= space.total_bytes


def _files(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir()) if p.is_file()}


def test_copy_rounds_under_appends_then_final_round_and_swap_give_the_same_log(tmp_path):
    source_dir, target_dir = tmp_path / "a", tmp_path / "b"
    source = source_dir / str(TP)
    log = open_log(source, ROLLING)
    epochs = LeaderEpochCache(source)
    batches = workload(240)
    append_all(log, batches[:80], epochs, leader_epoch=lambda n: 0)
    future = target_dir / m.future_dir(TP, ID).name
    copier = m.DirCopier(source, future)
    first = copier.copy_round()
    assert first.bytes_copied > 0
    assert copier.copy_round().bytes_copied == 0          # nothing changed, nothing copied
    append_all(log, batches[80:160], epochs, leader_epoch=lambda n: 0)
    second = copier.copy_round()
    assert 0 < second.bytes_copied < first.bytes_copied + sum(len(b.data) for b in batches[80:160])

    append_all(log, batches[160:], epochs, leader_epoch=lambda n: 1)
    end = log.log_end_offset
    log.close()
    copier.copy_round(final=True)
    assert _files(future) == _files(source)
    assert m.log_end_offset(future) == end
    deleted = m.swap_in_future(source_dir, target_dir, TP, ID)
    assert deleted == source_dir / f"{TP}.{ID}-delete" and deleted.is_dir() and not source.exists()
    assert not future.exists()
    moved = PartitionLog.open(target_dir / str(TP), ROLLING)
    try:
        assert moved.log_end_offset == end
        assert moved.read(0, 1 << 30).regions
    finally:
        moved.close()


def test_a_file_gone_from_the_source_goes_from_the_target_and_a_replaced_one_is_copied_whole(tmp_path):
    source, target = tmp_path / "src", tmp_path / "dst"
    source.mkdir()
    (source / "00000000000000000000.log").write_bytes(b"a" * 5000)
    (source / "00000000000000000010.log").write_bytes(b"b" * 100)
    copier = m.DirCopier(source, target)
    copier.copy_round()
    (source / "00000000000000000000.log").rename(source / "00000000000000000000.log.deleted")
    replaced = source / "00000000000000000010.log"
    replaced.unlink()
    replaced.write_bytes(b"c" * 300)   # a compaction swap: a new file (inode) at the same name
    done = copier.copy_round()
    assert done.files_removed == ["00000000000000000000.log"]
    assert _files(target) == {"00000000000000000010.log": b"c" * 300}


def test_a_grown_segment_gets_only_its_new_bytes_unless_its_copied_part_changed(tmp_path):
    source, target = tmp_path / "src", tmp_path / "dst"
    source.mkdir()
    seg = source / "00000000000000000000.log"
    seg.write_bytes(b"a" * 1000)
    copier = m.DirCopier(source, target)
    copier.copy_round()
    with open(seg, "ab") as f:
        f.write(b"b" * 10)
    assert copier.copy_round().bytes_copied == 10
    with open(seg, "r+b") as f:   # a follower's truncation, then other batches: same inode, rewritten tail
        f.truncate(990)
        f.seek(990)
        f.write(b"c" * 30)
    assert copier.copy_round().bytes_copied == 1020
    assert _files(target) == _files(source)


def test_a_new_copier_after_a_restart_skips_files_already_copied(tmp_path):
    source, target = tmp_path / "src", tmp_path / "dst"
    source.mkdir()
    (source / "00000000000000000000.log").write_bytes(b"a" * 4000)
    (source / "00000000000000000040.log").write_bytes(b"b" * 40)
    m.DirCopier(source, target).copy_round()
    with open(source / "00000000000000000040.log", "ab") as f:
        f.write(b"c")
    done = m.DirCopier(source, target).copy_round()
    assert done.files_copied == ["00000000000000000040.log"] and done.bytes_copied == 41


def test_active_segment_indexes_wait_for_the_final_round(tmp_path):
    source, target = tmp_path / "src", tmp_path / "dst"
    source.mkdir()
    for name in ("00000000000000000000.log", "00000000000000000000.index", "00000000000000000000.timeindex",
                 "leader-epoch-checkpoint"):
        (source / name).write_bytes(b"x" * 8)
    copier = m.DirCopier(source, target)
    assert sorted(copier.copy_round().files_copied) == ["00000000000000000000.log", "leader-epoch-checkpoint"]
    assert sorted(copier.copy_round(final=True).files_copied) == sorted(p.name for p in source.iterdir())


def test_the_throttle_keeps_a_rate_after_a_second_of_burst():
    now = [0.0]
    slept = []
    throttle = m.IoThrottle(1000, clock=lambda: now[0], sleep=lambda s: (slept.append(s), now.__setitem__(0, now[0] + s)))
    for _ in range(30):
        throttle.take(100)
    assert throttle.chunk_bytes == 4096
    assert now[0] == pytest.approx(2.0)   # 3000 bytes at 1000/s, the first second's worth free


def test_recovery_completes_a_cut_swap_resumes_a_copy_and_removes_leftovers():
    other = TopicPartition("t", 0)
    listing = {
        "/a": [f"{TP}.{ID}-delete", "t-0", "t-1", "meta.properties"],
        "/b": [f"{TP}.{ID}-future", f"t-0.{'1' * 32}-future", f"t-1.{'2' * 32}-future", f"gone-0.{'3' * 32}-future"],
        "/c": [f"t-0.{'4' * 32}-future"],
    }
    plan = m.plan_move_recovery(listing)
    assert plan.complete == (("/b", m.PartitionDir(TP, m.DirKind.FUTURE, ID)),)
    assert plan.resume == (("/b", m.PartitionDir(other, m.DirKind.FUTURE, "1" * 32)),
                           ("/b", m.PartitionDir(TopicPartition("t", 1), m.DirKind.FUTURE, "2" * 32)))
    assert sorted(p.name for _, p in plan.remove) == sorted(
        [f"{TP}.{ID}-delete", f"gone-0.{'3' * 32}-future", f"t-0.{'4' * 32}-future"])


def test_recover_moves_on_disk(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    (a / f"{TP}.{ID}-delete").mkdir(parents=True)
    (b / f"{TP}.{ID}-future").mkdir(parents=True)
    (b / f"{TP}.{ID}-future" / "00000000000000000000.log").write_bytes(b"x")
    plan = m.recover_moves([str(a), str(b)])
    assert len(plan.complete) == 1
    assert sorted(os.listdir(a)) == [] and sorted(os.listdir(b)) == [str(TP)]
    assert (b / str(TP) / "00000000000000000000.log").read_bytes() == b"x"
