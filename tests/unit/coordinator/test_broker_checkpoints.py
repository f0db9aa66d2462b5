"""The broker's per-log-dir checkpoint bookkeeping (files on disk, no Ray)."""
from __future__ import annotations

from rafka.common.types import TopicPartition
from rafka.partition_worker.broker_checkpoints import BrokerCheckpoints, PartitionCheckpoint
from rafka.partition_worker.checkpoints import (
    CLEANER_OFFSET_CHECKPOINT, LOG_START_OFFSET_CHECKPOINT, RECOVERY_POINT_CHECKPOINT, read_offset_checkpoint,
)

A, B, C = TopicPartition("a", 0), TopicPartition("b", 1), TopicPartition("c", 2)


def test_values_go_to_the_partitions_own_log_dir_and_come_back_after_a_restart(tmp_path):
    d1, d2 = tmp_path / "d1", tmp_path / "d2"
    for d, tp in ((d1, A), (d2, B)):
        (d / str(tp)).mkdir(parents=True)
    cps = BrokerCheckpoints((str(d1), str(d2)))
    assert cps.place(A, str(d1)) == PartitionCheckpoint()
    cps.place(B, str(d2))
    cps.update(A, recovery_point=10, log_start_offset=2)
    cps.update(B, recovery_point=7, cleaner_offset=5)
    cps.update(B, log_start_offset=-1)  # unknown values leave the entry alone
    cps.write()
    assert read_offset_checkpoint(d1 / RECOVERY_POINT_CHECKPOINT) == {A: 10}
    assert read_offset_checkpoint(d2 / RECOVERY_POINT_CHECKPOINT) == {B: 7}
    assert read_offset_checkpoint(d2 / CLEANER_OFFSET_CHECKPOINT) == {B: 5}
    assert read_offset_checkpoint(d2 / LOG_START_OFFSET_CHECKPOINT) == {}

    again = BrokerCheckpoints((str(d1), str(d2)))
    assert again.place(A, str(d1)) == PartitionCheckpoint(10, 2, None)
    assert again.place(B, str(d2)) == PartitionCheckpoint(7, None, 5)
    assert again.cleaner_offset(B) == 5 and again.cleaner_offset(C) is None


def test_forgotten_or_removed_partitions_leave_the_files(tmp_path):
    for tp in (A, B):
        (tmp_path / str(tp)).mkdir()
    cps = BrokerCheckpoints((str(tmp_path),))
    cps.place(A, str(tmp_path))
    cps.place(B, str(tmp_path))
    cps.update(A, recovery_point=1)
    cps.update(B, recovery_point=2)
    cps.write()
    assert read_offset_checkpoint(tmp_path / RECOVERY_POINT_CHECKPOINT) == {A: 1, B: 2}
    cps.forget(A)
    (tmp_path / str(B)).rmdir()  # a directory deleted behind our back is dropped too
    cps.write(log_start_offsets=False, cleaner_offsets=False)
    assert read_offset_checkpoint(tmp_path / RECOVERY_POINT_CHECKPOINT) == {}


def test_update_of_an_unplaced_partition_is_ignored(tmp_path):
    cps = BrokerCheckpoints((str(tmp_path),))
    cps.update(C, recovery_point=4)
    cps.write()
    assert read_offset_checkpoint(tmp_path / RECOVERY_POINT_CHECKPOINT) == {}


def test_a_moved_partition_takes_its_checkpointed_values_to_its_new_dir(tmp_path):
    from rafka.common.types import TopicPartition
    from rafka.partition_worker.broker_checkpoints import BrokerCheckpoints, PartitionCheckpoint
    from rafka.partition_worker.checkpoints import read_offset_checkpoint

    a, b = tmp_path / "a", tmp_path / "b"
    tp = TopicPartition("t", 0)
    for d in (a, b):
        d.mkdir()
    (a / "t-0").mkdir()
    cps = BrokerCheckpoints((str(a), str(b)))
    cps.place(tp, str(a))
    cps.update(tp, recovery_point=50, log_start_offset=20, cleaner_offset=10)
    cps.write()
    (a / "t-0").rename(b / "t-0")
    cps.move(tp, str(b))
    cps.write()
    assert read_offset_checkpoint(b / "log-start-offset-checkpoint") == {tp: 20}
    assert read_offset_checkpoint(a / "log-start-offset-checkpoint") == {}
    # A swap finished at the next start, before the partition is placed: loaded from the old dir's files.
    (b / "t-0").rename(a / "t-0")
    again = BrokerCheckpoints((str(a), str(b)))
    again.move(tp, str(a))
    assert again.place(tp, str(a)) == PartitionCheckpoint(50, 20, 10)


def test_a_snapshot_written_elsewhere_lets_the_tables_change_meanwhile(tmp_path):
    """The broker writes a snapshot in a thread while its loop goes on placing partitions (the
    write once iterated the live tables there: "dictionary changed size during iteration")."""
    import threading

    for tp in (A, B):
        (tmp_path / str(tp)).mkdir()
    cps = BrokerCheckpoints((str(tmp_path),))
    cps.place(A, str(tmp_path))
    cps.update(A, recovery_point=3)
    snapshot = cps.snapshot()
    others = [TopicPartition("many", i) for i in range(2000)]
    adding = threading.Thread(target=lambda: [(cps.place(tp, str(tmp_path)), cps.update(tp, recovery_point=1))
                                              for tp in others])
    adding.start()
    failed, gone = BrokerCheckpoints.write_snapshot(snapshot)
    adding.join()
    assert failed == {} and gone == {str(tmp_path): set()}
    assert read_offset_checkpoint(tmp_path / RECOVERY_POINT_CHECKPOINT) == {A: 3}   # as of the snapshot

    cps.place(B, str(tmp_path))
    cps.update(B, recovery_point=9)
    failed, gone = BrokerCheckpoints.write_snapshot(cps.snapshot())   # the "many" dirs do not exist
    assert gone[str(tmp_path)] == set(others)
    (tmp_path / str(others[0])).mkdir()    # back before the prune: its entry stays
    cps.prune(gone)
    cps.write()
    assert read_offset_checkpoint(tmp_path / RECOVERY_POINT_CHECKPOINT) == {A: 3, B: 9, others[0]: 1}
