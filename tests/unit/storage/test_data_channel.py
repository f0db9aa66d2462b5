"""The front end ↔ replica data-plane format round-trips and refuses overruns."""
from __future__ import annotations

import pytest

from rafka.common.errors import ErrorCode
from rafka.partition_worker import data_channel as dc
from rafka.partition_worker.messages import (AbortedTransaction, DeleteRecordsResult, FetchIsolation, FetchResult,
                                             FollowerAppendResult, OffsetLookup, ProduceResult, Region)

HW, COMMITTED, LOG_END = FetchIsolation.HIGH_WATERMARK, FetchIsolation.TXN_COMMITTED, FetchIsolation.LOG_END


def body_of(parts) -> memoryview:
    return memoryview(b"".join(bytes(p) for p in parts))


def test_append_round_trip():
    acks, timeout_ms, sets = dc.decode_append(body_of(dc.encode_append([b"abc", b"", b"x" * 1000], -1, 1500)))
    assert acks == -1 and [bytes(s) for s in sets] == [b"abc", b"", b"x" * 1000]


def test_append_that_runs_past_the_frame_is_refused():
    body = body_of(dc.encode_append([b"abcdef"], 1))[:-2]
    with pytest.raises(ValueError):
        dc.decode_append(body)


def test_produce_results_round_trip():
    results = [ProduceResult(ErrorCode.NONE, 10, -1, 0), ProduceResult(ErrorCode.CORRUPT_MESSAGE, -1, -1, -1, "bad crc"),
               ProduceResult(ErrorCode.INVALID_TIMESTAMP, -1, -1, 0, "rejected",
                             ((0, "Timestamp 1 of message with offset 0 is out of range"), (7, "é")))]
    assert dc.decode_produce_results(memoryview(dc.encode_produce_results(results))) == results


def test_read_and_fetch_result_round_trip():
    assert dc.decode_read(memoryview(dc.encode_read(42, 1 << 20, 500))) == (42, 1 << 20, 500, HW, 0)
    assert dc.decode_read(memoryview(dc.encode_read(42, 1 << 20, 0, LOG_END))) == (42, 1 << 20, 0, LOG_END, 0)
    assert dc.decode_read(memoryview(dc.encode_read(42, 1 << 20, 9, COMMITTED))) == (42, 1 << 20, 9, COMMITTED, 0)
    assert dc.decode_read(memoryview(dc.encode_read(42, 1 << 20, 500, follow_id=2**32 - 1))) == (
        42, 1 << 20, 500, HW, 2**32 - 1)
    result = FetchResult(ErrorCode.NONE, 100, 100, 0, (Region("/data/t-0/00000000000000000000.log", 0, 4096, 7),
                                                      Region("/data/t-0/00000000000000000090.log", 12, 99, 2**40)),
                         next_offset=95, committed_end=4096)
    for followed in (False, True):
        body = memoryview(dc.encode_fetch_result(result, followed))
        assert dc.decode_fetch_result(body) == result
        assert dc.fetch_result_followed(body) is followed


@pytest.mark.parametrize("aborted", [None, (), (AbortedTransaction(4000, 2), AbortedTransaction(2**62, 2**40))],
                         ids=["read_uncommitted", "read_committed, none aborted", "read_committed, two aborted"])
def test_a_fetch_result_carries_its_last_stable_offset_and_aborted_transactions(aborted):
    result = FetchResult(ErrorCode.NONE, 100, 40, 0, (Region("/data/t-0/00000000000000000000.log", 0, 4096, 7),),
                         next_offset=40, committed_end=4096, aborted_transactions=aborted,
                         stable_window=aborted is not None and not aborted)
    for followed in (False, True):
        body = memoryview(dc.encode_fetch_result(result, followed))
        assert dc.decode_fetch_result(body) == result
        assert dc.fetch_result_followed(body) is followed

def test_a_read_is_followed_only_when_it_brought_data_up_to_the_high_watermark():
    region = (Region("/data/t-0/00000000000000000000.log", 0, 70, 7),)
    assert dc.follows(FetchResult(ErrorCode.NONE, 10, 10, 0, region, next_offset=10))
    assert not dc.follows(FetchResult(ErrorCode.NONE, 12, 12, 0, region, next_offset=10))   # more to read
    assert not dc.follows(FetchResult(ErrorCode.NONE, 10, 10, 0))                              # nothing came
    assert not dc.follows(FetchResult(ErrorCode.OFFSET_OUT_OF_RANGE, 10, 10, 0))
    held = FetchResult(ErrorCode.NONE, 12, 10, 0, region, next_offset=10)   # an open transaction from 10
    assert dc.follows(held, COMMITTED) and not dc.follows(held)             # read_committed has caught up


def test_socket_paths_fit_the_unix_limit_even_for_long_topic_names():
    path = dc.socket_path("rafka", "replica:0:" + "t" * 249 + "-0")
    assert len(path.encode()) < 107
    assert path != dc.socket_path("rafka", "replica:1:" + "t" * 249 + "-0")


def test_socket_paths_differ_by_cluster_log_dir_and_topic_incarnation():
    """Actor names repeat in every cluster: two clusters on one machine in the same namespace
    (each broker 0 with a replica of topic t) must not share a socket, nor a topic deleted and
    created again (a new topic id) its old replica's."""
    name, first, second = "replica:0:t-0", "11111111-1111-1111-1111-111111111111", "2222"
    path = dc.socket_path("rafka", name, "/data/a/broker-0/logs", first)
    assert path == dc.socket_path("rafka", name, "/data/a/broker-0/logs", first)
    assert path != dc.socket_path("rafka", name, "/data/b/broker-0/logs", first)
    assert path != dc.socket_path("rafka", name, "/data/a/broker-0/logs", second)
    assert len(dc.socket_path("rafka", "replica:0:" + "t" * 249 + "-0", "/d" * 2000, first).encode()) < 107


# -- the op table: each op's request and answer, encoded by one end and decoded by the other ----------
def plain(value):
    """Decoded values with their memoryviews as bytes, to compare."""
    if isinstance(value, memoryview):
        return bytes(value)
    if isinstance(value, (tuple, list)):
        return type(value)(plain(v) for v in value)
    return value


FETCHED = FetchResult(ErrorCode.NONE, 100, 100, 0, (Region("/data/t-0/00000000000000000000.log", 0, 4096, 7),),
                      next_offset=95, committed_end=4096)
# op: (the front end's request arguments, what the replica decodes, the replica's answer)
EXAMPLES = {
    dc.Op.APPEND: (([b"abc", b"x" * 100], -1, 1500), (-1, 1500, [b"abc", b"x" * 100]),
                   [ProduceResult(ErrorCode.NONE, 10, -1, 0)]),
    dc.Op.READ: ((42, 1 << 20, 500), (42, 1 << 20, 500, HW, 0), FETCHED),
    dc.Op.READ_LOG_END: ((42, 1 << 20, 0), (42, 1 << 20, 0, LOG_END, 0), FETCHED),
    dc.Op.READ_COMMITTED: ((42, 1 << 20, 500), (42, 1 << 20, 500, COMMITTED, 0),
                           FetchResult(ErrorCode.NONE, 100, 60, 0, FETCHED.regions, 95,
                                       aborted_transactions=(AbortedTransaction(7, 50),))),
    dc.Op.REPLICA_READ: ((2, 5, 42, 1 << 20, 500), (2, 5, 42, 1 << 20, 500), FETCHED),
    dc.Op.FOLLOWER_APPEND: ((b"batches", 10, 3), (10, 3, b"batches"), FollowerAppendResult(ErrorCode.NONE, 12, 10)),
    dc.Op.RELEASE: ((7,), 7, None),
    dc.Op.LIST_OFFSET: ((-1, 1), (-1, 1), OffsetLookup(ErrorCode.NONE, -1, 9, 3)),
    dc.Op.WRITE_TXN_MARKER: ((4000, 2, 5, True, 30_000), (4000, 2, 5, True, 30_000),
                             [ProduceResult(ErrorCode.TRANSACTION_COORDINATOR_FENCED, error_message="zombie")]),
    dc.Op.DELETE_RECORDS: ((5,), 5, DeleteRecordsResult(ErrorCode.NONE, 5)),
}
OP_NAMES = {value: name for name, value in vars(dc.Op).items() if not name.startswith("_")}


def test_the_table_has_every_op_once():
    assert sorted(dc.EXCHANGES) == sorted(OP_NAMES) == sorted(EXAMPLES)


@pytest.mark.parametrize("op", sorted(EXAMPLES), ids=OP_NAMES.get)
def test_each_op_round_trips_from_one_end_to_the_other(op):
    arguments, decoded, answer = EXAMPLES[op]
    exchange = dc.EXCHANGES[op]
    request = exchange.encode_request(*arguments)
    body = body_of(request if isinstance(request, list) else [request])
    assert body[0] == op                                        # the table's key is the op it sends
    assert plain(exchange.decode_request(body)) == decoded
    if answer is None:
        assert exchange.encode_answer is None and exchange.decode_answer is None   # (a RELEASE has none)
    else:
        assert exchange.decode_answer(memoryview(exchange.encode_answer(answer))) == answer
