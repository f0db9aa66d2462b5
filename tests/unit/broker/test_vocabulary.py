"""Pure pieces under the actors: names, config, log-dir identity, replica arithmetic."""
from __future__ import annotations

import pytest

from rafka.actors.naming import coordinator_name, frontend_name, parse_actor_name, replica_name
from rafka.common.config import BrokerConfig, LogConfig, read_properties
from rafka.common.errors import ErrorCode, InvalidConfigError, StartupError
from rafka.common.types import Endpoint, TopicPartition, topic_name_problem
from rafka.partition_worker.log_dirs import check_meta_properties, choose_log_dir
from rafka.partition_worker.replica_state import LeaderAndIsr, ReplicaState


@pytest.mark.parametrize("tp", [TopicPartition("orders", 3), TopicPartition("a-b-c", 0),
                                TopicPartition("__consumer_offsets", 49)], ids=str)
def test_actor_names_round_trip(tp):
    assert parse_actor_name(replica_name(7, tp)).tp == tp
    assert parse_actor_name(replica_name(7, tp)).broker_id == 7
    assert parse_actor_name(coordinator_name(2)).kind == "coordinator"
    assert parse_actor_name(frontend_name(2)).broker_id == 2


@pytest.mark.parametrize("name", ["replica:x:orders-1", "replica:1:orders", "worker:1", "frontend:x", "nocolon"])
def test_foreign_actor_names_are_refused(name):
    with pytest.raises(ValueError):
        parse_actor_name(name)


def test_topic_partition_prints_like_kafka():
    assert str(TopicPartition("orders", 3)) == "orders-3"
    assert TopicPartition.parse("my-topic-12") == TopicPartition("my-topic", 12)


@pytest.mark.parametrize("name,legal", [("orders", True), ("a.b_c-d", True), ("", False), ("..", False),
                                       ("bad/name", False), ("x" * 250, False), ("x" * 249, True)])
def test_topic_name_rules_follow_kafka(name, legal):
    assert (topic_name_problem(name) is None) == legal


def test_server_properties_are_read_with_kafkas_names(tmp_path):
    path = tmp_path / "server.properties"
    path.write_text("# comment\nbroker.id=3\nlisteners=PLAINTEXT://127.0.0.1:19092\n"
                    "log.dirs=/a,/b\nnum.partitions = 6\nauto.create.topics.enable=false\n"
                    "log.segment.bytes: 1048576\nsome.unknown.key=1\nzookeeper.connect=127.0.0.1:2181/\\\nchroot\n")
    config = BrokerConfig.from_properties(path)
    assert config.broker_id == 3 and config.num_partitions == 6 and config.log_dirs == ("/a", "/b")
    assert config.auto_create_topics_enable is False and config.log_segment_bytes == 1 << 20
    assert config.zookeeper_connect == "127.0.0.1:2181/chroot"
    assert config.unused == ("some.unknown.key",)
    assert Endpoint.parse(config.listeners[0]) == Endpoint("PLAINTEXT", "127.0.0.1", 19092)


def test_bad_config_values_are_refused_with_the_key_name():
    with pytest.raises(InvalidConfigError, match="num.partitions"):
        BrokerConfig.from_mapping({"num.partitions": "zero"})
    with pytest.raises(InvalidConfigError, match="log.segment.bytes"):
        BrokerConfig.from_mapping({"log.segment.bytes": "10"})


def test_topic_overrides_use_topic_names():
    config = LogConfig().with_overrides({"segment.bytes": "1048576", "cleanup.policy": "delete"})
    assert config.segment_bytes == 1 << 20
    with pytest.raises(InvalidConfigError):
        LogConfig().with_overrides({"no.such.config": "1"})


def test_storage_topic_configs_parse_and_refuse_like_kafka():
    config = LogConfig().with_overrides({
        "cleanup.policy": "compact,delete", "min.cleanable.dirty.ratio": "0.01", "segment.ms": "100",
        "message.timestamp.type": "LogAppendTime", "retention.bytes": "4096", "delete.retention.ms": "0"})
    assert config.compact and config.delete and config.log_append_time
    assert config.min_cleanable_dirty_ratio == 0.01 and config.segment_ms == 100 and config.retention_bytes == 4096
    with pytest.raises(InvalidConfigError, match="cleanup.policy: String must be one of: compact, delete"):
        LogConfig().with_overrides({"cleanup.policy": "shred"})
    with pytest.raises(InvalidConfigError, match="message.timestamp.type"):
        LogConfig().with_overrides({"message.timestamp.type": "NowTime"})


def test_broker_defaults_become_topic_defaults():
    config = BrokerConfig.from_mapping({"log.cleanup.policy": "compact", "log.cleaner.delete.retention.ms": "5",
                                        "log.retention.check.interval.ms": "7", "log.roll.jitter.ms": "3"})
    log_config = config.log_config()
    assert log_config.cleanup_policy == ("compact",) and log_config.delete_retention_ms == 5
    assert log_config.retention_check_interval_ms == 7 and log_config.segment_jitter_ms == 3


@pytest.mark.parametrize("props,retention_ms", [
    ({}, 7 * 24 * 3600 * 1000),
    ({"log.retention.hours": "2"}, 2 * 3600 * 1000),
    ({"log.retention.minutes": "3", "log.retention.hours": "2"}, 3 * 60_000),
    ({"log.retention.ms": "5", "log.retention.minutes": "3", "log.retention.hours": "2"}, 5),
    ({"log.retention.hours": "-1"}, -1),
])
def test_retention_in_hours_or_minutes_stands_in_for_ms(props, retention_ms):
    config = BrokerConfig.from_mapping(props)
    assert config.log_retention_ms == retention_ms and config.unused == ()


def test_properties_reader_handles_separators_and_comments():
    assert read_properties("a=1\n! bang\nb : 2\nc 3\n") == {"a": "1", "b": "2", "c": "3"}


# Java's Properties.load, case by case (each expected value as Java 17 reads the text).
@pytest.mark.parametrize("text,expected", [
    ("greeting=caf\\u00e9\n", {"greeting": "caf\u00e9"}),
    ("smile=\\ud83d\\ude00\n", {"smile": "\U0001F600"}),                      # a surrogate pair
    ("k\\u0065y=v\n", {"key": "v"}),                                             # escapes in keys too
    ("a\\=b=c\n", {"a=b": "c"}),
    ("host\\:port : 9092\n", {"host:port": "9092"}),
    ("my\\ key = v\n", {"my key": "v"}),
    ("listeners=PLAINTEXT://a:9092,\\\n    PLAINTEXT://b:9093\n",
     {"listeners": "PLAINTEXT://a:9092,PLAINTEXT://b:9093"}),
    ("path=c:\\\\\nnext=2\n", {"path": "c:\\", "next": "2"}),   # an even run of backslashes ends the line
    ("! a comment\n  ! indented too\n# and this\na=1\n", {"a": "1"}),
    ("# a comment ending in a backslash \\\na=1\n", {"a": "1"}),             # comments do not continue
    ("tab=a\\tb\nempty\n", {"tab": "a\tb", "empty": ""}),
    ("a=1\ra=2\r\n", {"a": "2"}),                                               # CR line ends; the last key wins
], ids=["u-escape", "surrogate-pair", "u-escape-in-key", "escaped-equals-in-key", "escaped-colon-in-key",
        "escaped-space-in-key", "continuation", "even-backslashes", "bang-and-hash-comments",
        "comment-no-continuation", "tab-escape-and-key-only", "cr-and-repeated-key"])
def test_properties_are_read_as_java_reads_them(text, expected):
    assert read_properties(text) == expected


def test_properties_values_are_trimmed_as_kafka_trims_config_values():
    assert read_properties("num.partitions = 3   \n") == {"num.partitions": "3"}


def test_a_malformed_unicode_escape_is_a_config_error():
    with pytest.raises(InvalidConfigError, match="escape"):
        read_properties("a=\\u12\n")


def test_broker_config_reads_a_properties_file(tmp_path):
    path = tmp_path / "server.properties"
    path.write_text("broker.id=7\nlog.dirs=/tmp/a,\\\n  /tmp/b\nlog.segment.bytes : 1048576\n")
    config = BrokerConfig.from_properties(path)
    assert (config.broker_id, config.log_dirs, config.log_segment_bytes) == (7, ("/tmp/a", "/tmp/b"), 1048576)


def test_log_dir_of_another_broker_or_cluster_is_refused(tmp_path):
    check_meta_properties(tmp_path, 1, "cluster-A")
    check_meta_properties(tmp_path, 1, "cluster-A")  # same identity: fine
    assert "broker.id=1" in (tmp_path / "meta.properties").read_text()
    with pytest.raises(StartupError, match="^Stored node id 1 doesn't match previous node id 2 in "):
        check_meta_properties(tmp_path, 2, "cluster-A")
    with pytest.raises(StartupError, match="Cluster ID"):
        check_meta_properties(tmp_path, 1, "cluster-B")


def test_new_partition_goes_to_the_emptiest_log_dir(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    (a / "t-0").mkdir(parents=True)
    (a / "t-1").mkdir()
    (b / "u-0").mkdir(parents=True)
    assert choose_log_dir((str(a), str(b)), TopicPartition("v", 0)) == str(b)
    assert choose_log_dir((str(a), str(b)), TopicPartition("t", 1)) == str(a)  # where it already is


def test_leader_high_watermark_is_the_smallest_isr_end_offset():
    state = ReplicaState(broker_id=1)
    assert state.apply(LeaderAndIsr(1, 0, (1, 2), (1, 2), 1), log_end_offset=10) is ErrorCode.NONE
    assert state.high_watermark == 0  # follower 2 has fetched nothing yet
    assert state.follower_fetched(2, 6, 10, now_ms=0, lag_time_max_ms=30000) == 6
    assert state.follower_fetched(2, 4, 10, now_ms=0, lag_time_max_ms=30000) == 6  # never moves backwards


def test_single_replica_leader_high_watermark_follows_the_log_end():
    state = ReplicaState(broker_id=0)
    state.apply(LeaderAndIsr(0, 0, (0,), (0,), 1), log_end_offset=5)
    assert state.high_watermark == 5 and state.advance_high_watermark(9) == 9


def test_stale_controller_or_leader_epoch_is_refused():
    state = ReplicaState(broker_id=0)
    state.apply(LeaderAndIsr(0, 3, (0,), (0,), 5), log_end_offset=0)
    assert state.apply(LeaderAndIsr(0, 4, (0,), (0,), 4), 0) is ErrorCode.STALE_CONTROLLER_EPOCH
    assert state.apply(LeaderAndIsr(0, 2, (0,), (0,), 5), 0) is ErrorCode.FENCED_LEADER_EPOCH
    assert state.leader_epoch == 3
