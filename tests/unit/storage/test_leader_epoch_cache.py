"""LeaderEpochCache answers OffsetForLeaderEpoch as Kafka 3.9's LeaderEpochFileCache (the cases
of Kafka's LeaderEpochFileCacheTest), and truncates from the end as a follower needs."""
from __future__ import annotations

import pytest

from rafka.partition_worker.checkpoints import (
    LEADER_EPOCH_CHECKPOINT, UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET, EpochEntry, LeaderEpochCache,
)

UNDEFINED = (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)


@pytest.fixture
def cache(tmp_path) -> LeaderEpochCache:
    """Epochs 2, 3 and 6 starting at offsets 10, 25 and 40 (4 and 5 never wrote)."""
    c = LeaderEpochCache(tmp_path)
    for epoch, start in ((2, 10), (3, 25), (6, 40)):
        c.assign(epoch, start)
    return c


@pytest.mark.parametrize("epoch, expected", [
    (6, (6, 100)),                # the latest epoch ends at the log end
    (3, (3, 40)),                 # a known epoch ends where the next known one starts
    (2, (2, 25)),
    (4, (3, 40)),                 # unknown, between known ones: the epoch below it, the next one's start
    (5, (3, 40)),
    (1, (1, 10)),                 # below the first: the first's start (Kafka 2.x+; not UNDEFINED)
    (0, (0, 10)),
    (7, UNDEFINED),               # above the latest
    (UNDEFINED_EPOCH, UNDEFINED),  # a follower that knows no epoch
], ids=["latest", "known", "first", "gap-4", "gap-5", "below-first", "zero", "above-latest", "undefined"])
def test_end_offset_for_follows_kafka(cache, epoch, expected):
    assert cache.end_offset_for(epoch, 100) == expected


def test_empty_cache_knows_no_epoch(tmp_path):
    c = LeaderEpochCache(tmp_path)
    assert c.end_offset_for(0, 10) == UNDEFINED and c.end_offset_for(UNDEFINED_EPOCH, 10) == UNDEFINED


def test_matching_epoch_with_an_earlier_start_moves_the_ends(tmp_path):
    """Kafka's shouldTruncateIfMatchingEpochButEarlierStartingOffset."""
    c = LeaderEpochCache(tmp_path)
    for epoch, start in ((5, 11), (6, 12), (7, 13), (7, 12)):
        c.assign(epoch, start)
    assert c.entries == (EpochEntry(5, 11), EpochEntry(7, 12))
    assert c.end_offset_for(5, 0) == (5, 12) and c.end_offset_for(6, 0) == (5, 12)


def test_truncate_from_end_drops_epochs_starting_at_or_after_the_new_log_end(cache, tmp_path):
    cache.truncate_from_end(100)  # past every start: nothing
    cache.truncate_from_end(-1)   # Kafka ignores a negative end offset
    assert cache.entries == (EpochEntry(2, 10), EpochEntry(3, 25), EpochEntry(6, 40))
    cache.truncate_from_end(25)
    assert cache.entries == (EpochEntry(2, 10),)
    assert LeaderEpochCache(tmp_path).entries == cache.entries
    assert (tmp_path / LEADER_EPOCH_CHECKPOINT).read_text() == "0\n1\n2 10\n"
    # The end of epoch 2 is now the log end the follower truncated to.
    assert cache.end_offset_for(2, 25) == (2, 25) and cache.end_offset_for(3, 25) == UNDEFINED
