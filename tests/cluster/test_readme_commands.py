"""The README's commands work as written: its first session (up, topics, produce and consume
with kcat, status, down) runs in order on a fresh broker, each command printing what a user
is told to expect and exiting 0. The commands are read from the README itself, and every `sh`
block is pinned here, so a command changed there fails this test until it follows."""
from __future__ import annotations

from pathlib import Path

import pytest

from rafka.common.ports import unused_port
from tests.doc_commands import REPO, DocSession, markdown_commands

QUICK_START = ["make demo", "make test"]   # what `make test` itself runs: pinned, not run here
FIRST_SESSION = [
    ".venv/bin/rafka up --detach",
    ".venv/bin/rafka topics create orders --partitions 6 --config retention.ms=86400000",
    ".venv/bin/rafka topics alter orders --partitions 8",
    ".venv/bin/rafka topics describe",
    r"printf 'k1:first\nk2:second\n' | kcat -P -b 127.0.0.1:9092 -t orders -K:",
    r"kcat -C -b 127.0.0.1:9092 -t orders -e -f '%k %s\n'",
    ".venv/bin/rafka status",
    ".venv/bin/rafka down",
]
# Pinned, not run here: tests/cluster/test_cli.py runs three brokers with `broker stop 1 --kill`
# and `broker start 1`, and `up --config` with a properties file of its own, on ports and dirs of
# its own. The foreground `rafka up` and deploy/server.properties itself (port 9092, /tmp/rafka)
# are run by no test.
MORE_COMMANDS = [
    ".venv/bin/rafka up",
    ".venv/bin/rafka up --brokers 3 --detach",
    ".venv/bin/rafka broker stop 1 --kill",
    ".venv/bin/rafka broker start 1",
    ".venv/bin/rafka up --config deploy/server.properties",
]


def test_every_sh_block_of_the_readme_is_the_one_tested() -> None:
    assert markdown_commands(REPO / "README.md") == [QUICK_START, FIRST_SESSION, MORE_COMMANDS]


@pytest.mark.slow
def test_the_readmes_first_session_runs_as_written(tmp_path: Path) -> None:
    session = DocSession(port=unused_port(), data_dir=tmp_path / "rafka")
    commands = markdown_commands(REPO / "README.md")[1]
    assert commands == FIRST_SESSION
    try:
        outputs = [session.run(command, timeout_s=180) for command in commands]
    finally:
        session.stop_broker()
    failed = [(r.command, r.returncode, r.stderr[-2000:]) for r in outputs if r.returncode != 0]
    assert not failed, failed
    up, create, alter, describe, produce, consume, status, down = outputs
    assert up.stdout == f"127.0.0.1:{session.port}\n"
    assert create.stdout == "Created topic orders.\n"
    assert alter.stdout == "Topic orders now has 8 partitions.\n"
    head, *partitions = describe.stdout.splitlines()
    assert head.startswith("Topic: orders\t") and "PartitionCount: 8" in head, describe.stdout
    assert head.endswith("Configs: retention.ms=86400000"), describe.stdout
    assert [line.split("\t")[2] for line in partitions] == [f"Partition: {p}" for p in range(8)], describe.stdout
    assert all("Leader: 0" in line for line in partitions), describe.stdout
    assert produce.stdout == ""
    assert sorted(consume.stdout.splitlines()) == ["k1 first", "k2 second"]
    assert status.stdout.startswith("rafka is running") and f"bootstrap servers: 127.0.0.1:{session.port}" in (
        status.stdout), status.stdout
    assert "stopped" in down.stderr
    gone = session.run(".venv/bin/rafka status")   # nothing is left running: status says so, exit 1
    assert gone.returncode == 1 and gone.stdout.startswith("rafka is not running"), (gone.stdout, gone.stderr)
