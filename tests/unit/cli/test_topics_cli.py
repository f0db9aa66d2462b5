"""`rafka topics alter`'s pure parts: kafka-topics.sh's --replica-assignment form, and usage errors."""
from __future__ import annotations

import pytest

from rafka.cli.main import main
from rafka.cli.topics import parse_replica_assignment


def test_replica_assignment_lists_every_partition_in_order():
    assert parse_replica_assignment("0:1, 1:2,2 : 0") == [[0, 1], [1, 2], [2, 0]]
    assert parse_replica_assignment("3") == [[3]]


@pytest.mark.parametrize("text, message", [
    ("0:1,1:1", "Partition replica lists may not contain duplicate entries: 1"),
    ("0:1,2", "Partition 1 has different replication factor: [2]"),
    ("0:x", "is not a list of broker ids"),
], ids=["duplicate", "replication-factor", "not-a-number"])
def test_replica_assignment_refusals(text, message):
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        parse_replica_assignment(text)


def test_alter_needs_partitions_and_says_how_in_its_help(capsys):
    with pytest.raises(SystemExit) as usage:
        main(["topics", "alter", "orders"])
    assert usage.value.code == 2 and "--partitions" in capsys.readouterr().err
    with pytest.raises(SystemExit) as shown:
        main(["topics", "alter", "--help"])
    assert shown.value.code == 0 and "example: rafka topics alter orders --partitions" in capsys.readouterr().out
