"""`rafka topics` as a script uses it, against the session's broker: create with configs,
list, describe (text like kafka-topics.sh, and JSON), delete, and the refusals' exit codes."""
from __future__ import annotations

import json
import subprocess
import sys

RAFKA = [sys.executable, "-m", "rafka.cli.main"]


def topics(bootstrap: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*RAFKA, "topics", "--bootstrap-server", bootstrap, *args],
                          capture_output=True, text=True, timeout=120)


def test_create_describe_list_and_delete_a_topic(bootstrap):
    created = topics(bootstrap, "create", "cli-topic", "--partitions", "3", "--config", "retention.ms=3600000")
    assert created.returncode == 0, created.stderr
    try:
        assert "cli-topic" in topics(bootstrap, "list", "--output", "json").stdout
        described = topics(bootstrap, "--output", "json", "describe", "cli-topic")
        assert described.returncode == 0, described.stderr
        [topic] = json.loads(described.stdout)
        assert (topic["topic"], topic["partition_count"], topic["replication_factor"]) == ("cli-topic", 3, 1)
        assert topic["configs"] == {"retention.ms": "3600000"}
        assert [p["partition"] for p in topic["partitions"]] == [0, 1, 2]
        assert all(p["leader"] == p["replicas"][0] and p["isr"] == p["replicas"] for p in topic["partitions"])
        text = topics(bootstrap, "describe", "cli-topic").stdout.splitlines()
        assert text[0].startswith("Topic: cli-topic\tTopicId: ") and "PartitionCount: 3" in text[0]
        assert "Configs: retention.ms=3600000" in text[0]
        assert text[1].startswith("\tTopic: cli-topic\tPartition: 0\tLeader: ")
        again = topics(bootstrap, "create", "cli-topic")
        assert again.returncode == 1 and "TOPIC_ALREADY_EXISTS" in again.stderr
    finally:
        deleted = topics(bootstrap, "delete", "cli-topic")
    assert deleted.returncode == 0, deleted.stderr
    assert "cli-topic" not in json.loads(topics(bootstrap, "list", "--output", "json").stdout)


def test_refusals_exit_1_and_usage_errors_exit_2(bootstrap):
    missing = topics(bootstrap, "describe", "no-such-topic")
    assert missing.returncode == 1 and "no-such-topic" in missing.stderr
    assert topics(bootstrap, "delete", "no-such-topic").returncode == 1
    bad_config = topics(bootstrap, "create", "x", "--config", "oops")
    assert bad_config.returncode == 1 and "KEY=VALUE" in bad_config.stderr
    assert topics(bootstrap).returncode == 2
    assert "example" in topics(bootstrap, "--help").stdout
