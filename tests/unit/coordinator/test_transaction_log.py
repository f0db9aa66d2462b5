"""The records of `__transaction_state`: Kafka 3.9's key and value bytes, written out field by
field from its JSON schemas, both value versions, the refusals, and the id -> partition hash."""
from __future__ import annotations

import struct

import pytest
from rafka.common.types import TopicPartition
from rafka.coordinator.transaction import transaction_log as tl
from rafka.coordinator.transaction.transaction_metadata import (
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    TransactionState,
    TxnTransitMetadata,
)
from rafka.partition_worker.record_batch import decode_records, iter_batches

S = TransactionState


def s16(text: str) -> bytes:
    data = text.encode()
    return struct.pack(">h", len(data)) + data


def transit(state: TransactionState, partitions=(), start: int = 1_700_000_000_000) -> TxnTransitMetadata:
    return TxnTransitMetadata(producer_id=4000, last_producer_id=-1, producer_epoch=3, last_producer_epoch=-1,
                              txn_timeout_ms=60_000, txn_state=state, topic_partitions=frozenset(partitions),
                              txn_start_timestamp_ms=start, txn_last_update_timestamp_ms=1_700_000_000_500)


def value_v0_head(state: int) -> bytes:
    # version 0, producer_id int64, producer_epoch int16, timeout int32, status int8
    return struct.pack(">hqhib", 0, 4000, 3, 60_000, state)


def test_key_is_version_zero_and_a_classic_string():
    assert tl.key_bytes("my-txn") == b"\x00\x00" + s16("my-txn")
    assert tl.decode_key(b"\x00\x00" + s16("my-txn") + b"extra") == "my-txn"


def test_an_unknown_key_version_is_its_own_error():
    with pytest.raises(tl.UnknownKeyVersionError) as e:
        tl.decode_key(b"\x00\x01" + s16("x"))
    assert e.value.version == 1


@pytest.mark.parametrize("data", [b"", b"\x00", b"\x00\x00\x00\x05ab"], ids=["empty", "half-version", "short"])
def test_a_truncated_key_is_refused(data):
    with pytest.raises(tl.TransactionLogError):
        tl.decode_key(data)


def test_ongoing_value_v0_bytes_group_partitions_by_topic():
    t = transit(S.ONGOING, [TopicPartition("b", 2), TopicPartition("a", 1), TopicPartition("b", 0)])
    expected = (value_v0_head(1)
                + struct.pack(">i", 2)                                  # two topics
                + s16("a") + struct.pack(">ii", 1, 1)
                + s16("b") + struct.pack(">iii", 2, 0, 2)
                + struct.pack(">qq", 1_700_000_000_500, 1_700_000_000_000))
    assert tl.value_bytes(t) == expected
    v = tl.decode_value(expected)
    assert v.state is S.ONGOING and v.topic_partitions == t.topic_partitions
    assert (v.producer_id, v.producer_epoch, v.txn_timeout_ms) == (4000, 3, 60_000)
    assert (v.txn_last_update_timestamp_ms, v.txn_start_timestamp_ms) == (1_700_000_000_500, 1_700_000_000_000)


def test_empty_value_has_null_partitions():
    expected = value_v0_head(0) + struct.pack(">i", -1) + struct.pack(">qq", 1_700_000_000_500, -1)
    assert tl.value_bytes(transit(S.EMPTY, start=-1)) == expected
    assert tl.decode_value(expected).topic_partitions == frozenset()


def test_empty_with_partitions_is_not_written():
    with pytest.raises(tl.TransactionLogError):
        tl.value_bytes(transit(S.EMPTY, [TopicPartition("a", 0)]))


def test_an_empty_value_read_with_partitions_ignores_them():
    data = (value_v0_head(0) + struct.pack(">i", 1) + s16("a") + struct.pack(">ii", 1, 7)
            + struct.pack(">qq", 5, -1))
    assert tl.decode_value(data).topic_partitions == frozenset()


def test_complete_commit_value_has_an_empty_partition_list():
    expected = value_v0_head(4) + struct.pack(">i", 0) + struct.pack(">qq", 1_700_000_000_500, 1_700_000_000_000)
    assert tl.value_bytes(transit(S.COMPLETE_COMMIT)) == expected


def test_flexible_value_v1_bytes():
    t = transit(S.PREPARE_ABORT, [TopicPartition("a", 1)])
    expected = (struct.pack(">hqhib", 1, 4000, 3, 60_000, 3)
                + b"\x02"                      # compact array: 1 topic
                + b"\x02a"                     # compact string "a"
                + b"\x02" + struct.pack(">i", 1)
                + b"\x00"                      # the topic struct's tagged fields
                + struct.pack(">qq", 1_700_000_000_500, 1_700_000_000_000)
                + b"\x00")                     # the value's tagged fields
    assert tl.value_bytes(t, version=1) == expected
    assert tl.decode_value(expected).topic_partitions == {TopicPartition("a", 1)}


def test_a_tombstone_decodes_as_none():
    assert tl.decode_value(None) is None


@pytest.mark.parametrize("data,match", [
    (struct.pack(">h", 2) + b"\x00" * 40, "version 2"),
    (value_v0_head(8) + struct.pack(">i", -1) + struct.pack(">qq", 0, 0), "state id 8"),
    (value_v0_head(1) + struct.pack(">i", 1), "truncated"),
], ids=["version", "state", "truncated"])
def test_bad_values_are_refused(data, match):
    with pytest.raises(tl.TransactionLogError, match=match):
        tl.decode_value(data)


def test_reload_gives_metadata_without_last_epoch():
    t = transit(S.PREPARE_COMMIT, [TopicPartition("a", 0)])
    m = tl.decode_value(tl.value_bytes(t)).to_metadata("my-txn")
    assert (m.transactional_id, m.producer_id, m.producer_epoch, m.state) == ("my-txn", 4000, 3, S.PREPARE_COMMIT)
    assert (m.last_producer_id, m.last_producer_epoch, m.pending_state) == (NO_PRODUCER_ID, NO_PRODUCER_EPOCH, None)
    assert m.topic_partitions == {TopicPartition("a", 0)} and m.txn_start_timestamp_ms == 1_700_000_000_000


def test_a_transition_is_one_uncompressed_record_batch():
    batch = tl.encode_transaction_batch("my-txn", transit(S.ONGOING, [TopicPartition("a", 0)]), 1234)
    (header,) = list(iter_batches(batch))
    assert header.compression == 0 and not header.is_transactional and header.producer_id == -1
    _, records = decode_records(batch, 0)
    assert [(r.key, r.timestamp) for r in records] == [(tl.key_bytes("my-txn"), 1234)]
    assert tl.decode_value(records[0].value).state is S.ONGOING
    _, (tomb,) = decode_records(tl.tombstone_batch("my-txn", 5), 0)
    assert tomb.value is None and tl.decode_key(tomb.key) == "my-txn"


@pytest.mark.parametrize("txn_id,partitions,expected", [
    ("hello", 50, 99162322 % 50),                 # "hello".hashCode() == 99162322
    ("polygenelubricants", 50, 0),                # hashCode() == Integer.MIN_VALUE: Utils.abs gives 0
    ("my-group", 50, 12),                         # hashCode() == -1906497762: abs, not the 0x7fffffff mask
    ("Aa", 7, 2112 % 7), ("BB", 7, 2112 % 7),     # both hash to 2112
])
def test_partition_for_is_utils_abs_of_java_hash(txn_id, partitions, expected):
    assert tl.partition_for(txn_id, partitions) == expected
