"""The idempotence soak's check of what it read back, and its waves: a duplicate, a gap and a
missing or misplaced acknowledged record must each be caught; the waves go round every topic."""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from _soak_check import Findings, check_partition, per_wave, wave_topics  # noqa: E402

ACKED = {b"a": 0, b"b": 1, b"c": 2}


def test_a_clean_partition_has_no_findings():
    found = check_partition([(0, b"a"), (1, b"b"), (2, b"c")], ACKED)
    assert found == Findings(records=3) and found.clean


def test_an_acknowledged_offset_not_known_to_the_client_is_found_anywhere():
    assert check_partition([(0, b"a"), (1, b"b")], {b"a": None, b"b": 1}).clean


def test_a_record_stored_twice_is_a_duplicate():
    found = check_partition([(0, b"a"), (1, b"b"), (2, b"c"), (3, b"b"), (4, b"c")], ACKED)
    assert (found.duplicates, found.gaps, found.missing) == (2, 0, 0)
    assert not found.clean


def test_a_hole_in_the_offsets_is_a_gap():
    found = check_partition([(0, b"a"), (2, b"c")], {b"a": 0, b"c": 2})
    assert (found.duplicates, found.gaps, found.missing) == (0, 1, 0)
    assert check_partition([(1, b"b")], {b"b": 1}).gaps == 1   # offset 0 never read


def test_an_acknowledged_record_not_read_back_or_read_elsewhere_is_missing():
    found = check_partition([(0, b"a")], ACKED)
    assert found.missing == 2 and not found.clean
    assert check_partition([(0, b"b"), (1, b"a")], {b"a": 0, b"b": 1}).missing == 2


def test_findings_add_up():
    total = Findings()
    total.add(Findings(records=3, duplicates=1))
    total.add(Findings(records=2, gaps=2, missing=1))
    assert total == Findings(records=5, duplicates=1, gaps=2, missing=1)


def test_the_waves_go_round_every_topic_in_the_run():
    count = per_wave(topics=200, wave_s=15, duration_s=600)
    assert count == 5
    written = {t for wave in range(600 // 15) for t in wave_topics(200, wave, count)}
    assert written == set(range(200))
    assert wave_topics(12, 5, 5) == [1, 2, 3, 4, 5]        # round the topics
    assert wave_topics(3, 0, 5) == [0, 1, 2]               # never more than there are
    assert per_wave(topics=12, wave_s=15, duration_s=10) == 12   # a run shorter than a wave: all at once


def test_one_offset_read_twice_is_a_reread_not_a_stored_duplicate():
    found = check_partition([(0, b"a"), (1, b"b"), (1, b"b"), (2, b"c")], ACKED)
    assert (found.duplicates, found.rereads, found.records) == (0, 1, 3)
    assert found.clean


def test_a_duplicate_is_shown_with_its_offsets():
    found = check_partition([(0, b"a"), (1, b"b"), (2, b"b")], {b"a": 0, b"b": 1})
    assert found.examples == ["b'b' at offsets [1, 2]"]
