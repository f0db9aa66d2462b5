"""`rafka log-dirs` pure parts: arguments, kafka-log-dirs.sh's JSON, where a partition's logs are."""
from __future__ import annotations

import pytest

from rafka.cli.log_dirs import log_dirs_json, parse_partition, placement
from rafka.cli.main import build_parser

ANSWER = {"error_code": 0, "results": [
    {"error_code": 0, "log_dir": "/a", "total_bytes": 100, "usable_bytes": 40, "topics": [
        {"name": "t", "partitions": [{"partition_index": 0, "partition_size": 10, "offset_lag": 0,
                                      "is_future_key": False}]},
        {"name": "u", "partitions": []}]},
    {"error_code": 0, "log_dir": "/b", "total_bytes": 100, "usable_bytes": 40, "topics": [
        {"name": "t", "partitions": [{"partition_index": 0, "partition_size": 4, "offset_lag": 6,
                                      "is_future_key": True}]}]},
    {"error_code": 56, "log_dir": "/c", "total_bytes": -1, "usable_bytes": -1, "topics": []}]}


def test_partition_argument_is_topic_colon_partition():
    assert parse_partition("orders.v1:3") == ("orders.v1", 3)
    for bad in ("orders", "orders:", ":3", "orders:x"):
        with pytest.raises(ValueError):
            parse_partition(bad)


def test_json_is_kafka_log_dirs_sh_shape_with_volume_space():
    report = log_dirs_json({0: ANSWER})
    assert report["version"] == 1 and report["brokers"][0]["broker"] == 0
    a, b, c = report["brokers"][0]["logDirs"]
    assert a == {"logDir": "/a", "error": None, "totalBytes": 100, "usableBytes": 40,
                 "partitions": [{"partition": "t-0", "size": 10, "offsetLag": 0, "isFuture": False}]}
    assert b["partitions"][0]["isFuture"] and c["error"] == "KAFKA_STORAGE_ERROR"


def test_placement_lists_the_current_and_future_logs_of_a_partition():
    assert placement(ANSWER, "t", 0) == {"/a": [False], "/b": [True]}
    assert placement(ANSWER, "t", 1) == {}


def test_move_parses_with_trailing_options():
    args = build_parser().parse_args(["log-dirs", "move", "t:0", "/b", "--broker", "2", "--wait", "--output", "json"])
    assert (args.partition, args.log_dir, args.broker, args.wait, args.output) == ("t:0", "/b", 2, True, "json")
