"""Kafka's checkpoint files: exact bytes, atomic replacement, refusal of malformed content."""
from __future__ import annotations

import uuid

import pytest

from rafka.common.types import TopicPartition
from rafka.partition_worker.checkpoints import (
    CLEANER_OFFSET_CHECKPOINT, LEADER_EPOCH_CHECKPOINT, LOG_START_OFFSET_CHECKPOINT, RECOVERY_POINT_CHECKPOINT,
    CorruptCheckpointError, EpochEntry, LeaderEpochCache, LogDirCheckpoints, parse_topic_id,
    read_offset_checkpoint, read_partition_metadata, topic_id_text, write_offset_checkpoint,
    write_partition_metadata,
)


def test_offset_checkpoint_has_kafkas_bytes(tmp_path):
    path = tmp_path / RECOVERY_POINT_CHECKPOINT
    write_offset_checkpoint(path, {TopicPartition("orders", 1): 42, TopicPartition("orders", 0): 7,
                                   TopicPartition("__consumer_offsets", 3): 0})
    assert path.read_text() == "0\n3\n__consumer_offsets 3 0\norders 0 7\norders 1 42\n"
    assert read_offset_checkpoint(path) == {TopicPartition("orders", 1): 42, TopicPartition("orders", 0): 7,
                                            TopicPartition("__consumer_offsets", 3): 0}
    assert not (tmp_path / (RECOVERY_POINT_CHECKPOINT + ".tmp")).exists()


def test_empty_and_missing_checkpoints(tmp_path):
    assert read_offset_checkpoint(tmp_path / "nothing") == {}
    write_offset_checkpoint(tmp_path / "empty", {})
    assert (tmp_path / "empty").read_text() == "0\n0\n"
    assert read_offset_checkpoint(tmp_path / "empty") == {}


def test_topic_names_with_dashes_and_dots_round_trip(tmp_path):
    offsets = {TopicPartition("a-b.c_d-7", 12): 1 << 40}
    write_offset_checkpoint(tmp_path / "c", offsets)
    assert read_offset_checkpoint(tmp_path / "c") == offsets


@pytest.mark.parametrize("text,problem", [
    ("", "version or count"),
    ("1\n0\n", "version"),
    ("0\nx\n", "count"),
    ("0\n2\norders 0 1\n", "expected 2 entries"),
    ("0\n1\norders 0\n", "malformed line"),
    ("0\n1\norders zero 1\n", "malformed line"),
])
def test_malformed_offset_checkpoints_are_refused(tmp_path, text, problem):
    path = tmp_path / "bad"
    path.write_text(text)
    with pytest.raises(CorruptCheckpointError, match=problem):
        read_offset_checkpoint(path)


def test_log_dir_checkpoints_write_and_load_each_file(tmp_path):
    tp = TopicPartition("t", 0)
    cps = LogDirCheckpoints(tmp_path, recovery_points={tp: 10}, log_start_offsets={tp: 3}, cleaner_offsets={tp: 5})
    cps.write(cleaner_offsets=False)
    assert (tmp_path / RECOVERY_POINT_CHECKPOINT).exists() and (tmp_path / LOG_START_OFFSET_CHECKPOINT).exists()
    assert not (tmp_path / CLEANER_OFFSET_CHECKPOINT).exists()
    cps.write()
    loaded = LogDirCheckpoints.load(tmp_path)
    assert (loaded.recovery_points, loaded.log_start_offsets, loaded.cleaner_offsets) == ({tp: 10}, {tp: 3}, {tp: 5})
    loaded.forget(tp)
    assert loaded.recovery_points == loaded.log_start_offsets == loaded.cleaner_offsets == {}


def test_a_corrupt_log_dir_checkpoint_is_ignored_not_fatal(tmp_path, caplog):
    (tmp_path / RECOVERY_POINT_CHECKPOINT).write_text("0\n5\ngarbage")
    write_offset_checkpoint(tmp_path / LOG_START_OFFSET_CHECKPOINT, {TopicPartition("t", 0): 9})
    loaded = LogDirCheckpoints.load(tmp_path)
    assert loaded.recovery_points == {} and loaded.log_start_offsets == {TopicPartition("t", 0): 9}
    assert "ignoring recovery-point-offset-checkpoint" in caplog.text


def test_partition_metadata_is_kafkas_format(tmp_path):
    topic_id = uuid.UUID("0b6d7c3e-2a4f-4d0e-9d3c-5a7e2f1b9c8d")
    write_partition_metadata(tmp_path, topic_id)
    text = (tmp_path / "partition.metadata").read_text()
    assert text == f"version: 0\ntopic_id: {topic_id_text(topic_id)}\n"
    assert len(topic_id_text(topic_id)) == 22 and "=" not in topic_id_text(topic_id)
    assert read_partition_metadata(tmp_path) == topic_id
    assert parse_topic_id(topic_id_text(topic_id)) == topic_id
    assert read_partition_metadata(tmp_path / "missing") is None
    (tmp_path / "partition.metadata").write_text("version: 0\ntopic_id: !!\n")
    with pytest.raises(CorruptCheckpointError):
        read_partition_metadata(tmp_path)


def test_leader_epoch_cache_follows_kafkas_assign_rules(tmp_path):
    cache = LeaderEpochCache(tmp_path)
    assert cache.latest_epoch is None and cache.end_offset_for(0, 10) == (-1, -1)
    assert cache.assign(0, 0)
    assert not cache.assign(0, 5)                    # same epoch, later start: nothing to do
    assert cache.assign(2, 100)
    assert cache.assign(3, 150)
    assert (tmp_path / LEADER_EPOCH_CHECKPOINT).read_text() == "0\n3\n0 0\n2 100\n3 150\n"
    assert cache.end_offset_for(1, 200) == (0, 100)  # epoch 1 never led: answered by epoch 0
    assert cache.end_offset_for(2, 200) == (2, 150)
    assert cache.end_offset_for(9, 200) == (-1, -1)  # above the latest epoch: undefined, as Kafka
    assert cache.assign(3, 120)                      # same epoch, earlier start replaces it
    assert cache.entries == (EpochEntry(0, 0), EpochEntry(2, 100), EpochEntry(3, 120))
    assert cache.assign(1, 110)                      # a lower epoch drops everything at or above it
    assert cache.entries == (EpochEntry(0, 0), EpochEntry(1, 110))
    reopened = LeaderEpochCache(tmp_path)
    assert reopened.entries == cache.entries
    with pytest.raises(ValueError):
        cache.assign(-1, 0)


def test_leader_epoch_cache_truncation(tmp_path):
    cache = LeaderEpochCache(tmp_path)
    for epoch, start in ((0, 0), (1, 50), (2, 90)):
        cache.assign(epoch, start)
    cache.truncate_from_end(90)
    assert cache.entries == (EpochEntry(0, 0), EpochEntry(1, 50))
    cache.truncate_from_start(60)
    assert cache.entries == (EpochEntry(1, 60),)
    cache.truncate_from_start(10)                    # below the first entry: nothing changes
    assert LeaderEpochCache(tmp_path).entries == (EpochEntry(1, 60),)


def test_corrupt_leader_epoch_checkpoint_starts_empty(tmp_path):
    (tmp_path / LEADER_EPOCH_CHECKPOINT).write_text("0\n2\n1 0\n")
    assert LeaderEpochCache(tmp_path).entries == ()
