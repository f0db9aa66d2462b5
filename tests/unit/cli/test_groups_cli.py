"""`rafka groups` pure parts: the reset plan, the consumer assignment bytes, times."""
from __future__ import annotations

import struct

import pytest

from rafka.cli.groups import parse_consumer_assignment, parse_datetime_ms, plan_reset
from rafka.cli.main import main

T0, T1 = ("t", 0), ("t", 1)
EARLIEST = {T0: 10, T1: 0}
LATEST = {T0: 100, T1: 50}


@pytest.mark.parametrize("mode, value, expected", [
    ("to-earliest", None, {T0: 10, T1: 0}),
    ("to-latest", None, {T0: 100, T1: 50}),
    ("to-offset", 40, {T0: 40, T1: 40}),
    ("to-offset", 5, {T0: 10, T1: 5}),          # clamped to the log start
    ("to-offset", 70, {T0: 70, T1: 50}),        # clamped to the log end
    ("shift-by", -5, {T0: 25, T1: 45}),         # T1 has no commit: shift from the end
    ("shift-by", 500, {T0: 100, T1: 50}),
])
def test_reset_plan_is_clamped_like_kafkas(mode, value, expected):
    assert plan_reset([T0, T1], mode, value, {T0: 30}, EARLIEST, LATEST) == expected


def test_reset_to_datetime_uses_the_looked_up_offsets_or_the_end():
    assert plan_reset([T0, T1], "to-datetime", None, {}, EARLIEST, LATEST, {T0: 60, T1: -1}) == {T0: 60, T1: 50}


def test_consumer_assignment_bytes_are_parsed():
    data = struct.pack(">hi", 0, 2) + struct.pack(">h", 1) + b"a" + struct.pack(">iii", 2, 0, 3) \
        + struct.pack(">h", 2) + b"bb" + struct.pack(">ii", 1, 7) + struct.pack(">i", -1)
    assert parse_consumer_assignment(data) == {"a": [0, 3], "bb": [7]}
    assert parse_consumer_assignment(b"") == {}


def test_datetime_without_zone_is_utc():
    assert parse_datetime_ms("1970-01-01T00:00:01") == 1000
    assert parse_datetime_ms("1970-01-01T01:00:00+01:00") == 0
    assert parse_datetime_ms("2026-11-22T10:00:00Z") == 1795341600000


def test_groups_needs_an_action_and_refuses_two_reset_modes(capsys):
    with pytest.raises(SystemExit) as e:
        main(["groups"])
    assert e.value.code == 2
    with pytest.raises(SystemExit) as e:
        main(["groups", "reset-offsets", "g", "--topic", "t", "--to-earliest", "--to-latest"])
    assert e.value.code == 2


def test_unreachable_broker_is_a_clean_failure(capsys):
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    assert main(["groups", "--bootstrap-server", f"127.0.0.1:{port}", "list"]) == 1
    assert "Error:" in capsys.readouterr().err


def test_group_requests_are_retried_while_the_coordinator_loads_the_group(monkeypatch):
    """After a restart the coordinator answers COORDINATOR_LOAD_IN_PROGRESS (or NOT_COORDINATOR)
    until it has loaded the group; the CLI retries, as Kafka's admin client does."""
    from rafka.cli.groups import GroupAdmin
    from rafka.common.errors import ErrorCode

    answers = [ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.NOT_COORDINATOR, ErrorCode.NONE]

    class Coordinator:
        def request(self, api_key, version, body):
            code = answers.pop(0)
            return {"groups": [{"error_code": code, "group_id": "g", "group_state": "Empty"}]}

    admin = GroupAdmin("127.0.0.1:1", retry_timeout_s=10)
    monkeypatch.setattr(admin, "coordinator", lambda group: Coordinator())
    monkeypatch.setattr("rafka.cli.groups.time.sleep", lambda s: None)
    assert admin.describe("g")["group_state"] == "Empty" and answers == []
