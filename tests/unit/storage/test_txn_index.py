"""The aborted-transaction index: Kafka's 34-byte entries, TransactionIndexTest's scenarios,
a torn last entry, truncation, and the search across segments a read_committed fetch makes."""
from __future__ import annotations

import struct

import pytest
from rafka.partition_worker.txn_index import (
    ENTRY_SIZE,
    AbortedTxn,
    CorruptTxnIndexError,
    TransactionIndex,
    collect_aborted_txns,
    decode_entries,
    txn_index_file_name,
)

TXNS = [AbortedTxn(0, 0, 10, 11), AbortedTxn(1, 5, 15, 13), AbortedTxn(2, 18, 35, 25), AbortedTxn(3, 32, 50, 40)]


def test_entry_is_34_bytes_of_kafkas_layout():
    data = AbortedTxn(983493, 137, 299, 200).to_bytes()
    assert ENTRY_SIZE == 34
    assert data == struct.pack(">hqqqq", 0, 983493, 137, 299, 200)
    assert AbortedTxn.from_bytes(data) == (983493, 137, 299, 200)


def test_file_name_is_kafkas():
    assert txn_index_file_name(42) == "00000000000000000042.txnindex"


@pytest.fixture
def index(tmp_path):
    return TransactionIndex(0, tmp_path / txn_index_file_name(0))


def test_no_file_until_the_first_append(index):
    assert not index.path.exists() and index.entries == [] and index.last_offset is None
    index.append(TXNS[0])
    assert index.path.read_bytes() == TXNS[0].to_bytes()


@pytest.mark.parametrize("fetch,upper,expected,complete", [
    (0, 100, TXNS, False), (0, 32, TXNS[:3], True), (0, 35, TXNS, True), (10, 35, TXNS, True),
    (11, 35, TXNS[1:], True), (20, 41, TXNS[2:], False),
])
def test_collect_aborted_transactions(index, fetch, upper, expected, complete):
    for txn in TXNS:
        index.append(txn)
    result = index.collect(fetch, upper)
    assert (result.aborted, result.is_complete) == (expected, complete)


def test_entries_survive_a_reopen_and_a_torn_last_entry_is_cut(tmp_path, index):
    for txn in TXNS[:2]:
        index.append(txn, fsync=True)
    with open(index.path, "ab") as f:
        f.write(TXNS[2].to_bytes()[:20])
    reopened = TransactionIndex(0, index.path)
    assert reopened.entries == TXNS[:2] and index.path.stat().st_size == 2 * ENTRY_SIZE
    reopened.append(TXNS[2])
    assert decode_entries(index.path.read_bytes()) == TXNS[:3]


def test_last_offset_must_increase(index):
    index.append(AbortedTxn(0, 0, 10, 11))
    for last in (10, 9):
        with pytest.raises(ValueError):
            index.append(AbortedTxn(1, 5, last, 11))


def test_truncate_drops_entries_with_markers_at_or_above(index):
    for txn in TXNS:
        index.append(txn)
    index.truncate_to(35)
    assert index.entries == TXNS[:2] and decode_entries(index.path.read_bytes()) == TXNS[:2]
    index.append(TXNS[2])           # the last offset went back with the truncation
    index.truncate_to(0)
    assert index.entries == [] and index.path.stat().st_size == 0


def test_reset_and_delete(index):
    index.append(TXNS[0])
    index.reset()
    assert index.entries == [] and index.path.stat().st_size == 0
    assert index.delete_if_exists() and not index.delete_if_exists()


def test_sanity_check_refuses_a_marker_before_the_segment(tmp_path):
    idx = TransactionIndex(20, tmp_path / txn_index_file_name(20))
    idx.append(AbortedTxn(0, 0, 10, 11))
    with pytest.raises(CorruptTxnIndexError):
        idx.sanity_check()
    TransactionIndex(0, tmp_path / "x.txnindex").sanity_check()


def test_an_unknown_version_is_refused():
    with pytest.raises(CorruptTxnIndexError):
        decode_entries(struct.pack(">hqqqq", 0x0100, 1, 2, 3, 4))


def test_search_starts_at_the_fetch_segment_and_stops_when_complete():
    segments = [
        (0, [AbortedTxn(1, 0, 5, 6)]),
        (10, [AbortedTxn(2, 8, 12, 13)]),          # began in the previous segment
        (20, [AbortedTxn(3, 21, 25, 30)]),
        (30, [AbortedTxn(4, 31, 33, 34)]),
    ]
    # from offset 11, up to 26: segment 10 (LSO 13 < 26, go on), segment 20 (LSO 30 >= 26, done)
    assert collect_aborted_txns(segments, 11, 26) == [AbortedTxn(2, 8, 12, 13), AbortedTxn(3, 21, 25, 30)]
    assert collect_aborted_txns(segments, 0, 6) == [AbortedTxn(1, 0, 5, 6)]
    assert collect_aborted_txns(segments, 34, 40) == []
    assert collect_aborted_txns([], 0, 10) == []
