"""The programs in examples/ run as their docstrings tell a user to: the docstring's commands,
read from the program itself, in order, on a fresh broker that `rafka up --detach` starts (no
topic made beforehand: the docstrings make none), each on a port and data dir of its own.
The commands are pinned here, so a docstring changed without its test fails."""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from rafka.common.ports import unused_port
from tests.doc_commands import REPO, DocSession, Ran, docstring_commands

pytestmark = pytest.mark.slow

WORD_COUNT = [
    ".venv/bin/rafka up --detach",
    r"printf 'the quick brown fox\njumps over the lazy dog\nThe dog sleeps\n' | kcat -P -b 127.0.0.1:9092 -t lines",
    ".venv/bin/python examples/streaming_word_count.py --bootstrap-server 127.0.0.1:9092 "
    "--input-topic lines --output-topic word-counts --checkpoint /tmp/wc-checkpoint --available-now",
    r"kcat -C -b 127.0.0.1:9092 -t word-counts -e -f '%k=%s\n'",
    ".venv/bin/rafka down",
]
PARQUET_TO_TOPIC = [
    ".venv/bin/rafka up --detach",
    ".venv/bin/python examples/parquet_to_topic.py --bootstrap-server 127.0.0.1:9092 --topic events "
    "--key-column user_id /data/events/*.parquet",
    r"kcat -C -b 127.0.0.1:9092 -t events -e -f '%k %s\n'",
    ".venv/bin/rafka down",
]


def run_documented(program: str, expected: list[str], tmp_path: Path, paths: dict[str, str]) -> list[Ran]:
    """The program's docstring commands (asserted to be `expected`), run in order; the broker is
    stopped afterwards even when a command failed. Each must exit 0."""
    commands = docstring_commands(REPO / "examples" / program)
    assert commands == expected
    session = DocSession(port=unused_port(), data_dir=tmp_path / "rafka", paths=paths)
    try:
        # A bound, not an estimate: ~30-90 s each here, but minutes on a machine loaded 30 deep.
        outputs = [session.run(command, timeout_s=600) for command in commands]
    finally:
        session.stop_broker()
    print("\n".join(f"{r.seconds:6.1f} s  {r.command}" for r in outputs))
    failed = [(r.command, r.returncode, r.stderr[-3000:]) for r in outputs if r.returncode != 0]
    assert not failed, failed
    assert outputs[0].stdout == f"127.0.0.1:{session.port}\n"   # `rafka up --detach` prints the bootstrap servers
    assert "stopped" in outputs[-1].stderr
    return outputs


def assert_no_error(ran: Ran) -> None:
    assert "Traceback" not in ran.stderr and " ERROR " not in ran.stderr, ran.stderr[-3000:]


def test_streaming_word_count_runs_as_its_docstring_says(tmp_path: Path) -> None:
    outputs = run_documented("streaming_word_count.py", WORD_COUNT, tmp_path,
                             {"/tmp/wc-checkpoint": str(tmp_path / "wc-checkpoint")})
    _, produce, example, consume, _ = outputs
    assert_no_error(example)
    lines = "the quick brown fox\njumps over the lazy dog\nThe dog sleeps\n"   # what the printf sends
    expected = Counter(word for line in lines.lower().splitlines() for word in line.split())
    assert expected["the"] == 3 and expected["dog"] == 2
    counts = [line.split("=") for line in consume.stdout.splitlines()]
    # One micro-batch in complete mode: each word's count exactly once, and exact.
    assert sorted(word for word, _ in counts) == sorted(expected)
    assert {word: int(count) for word, count in counts} == expected


def test_parquet_to_topic_runs_as_its_docstring_says(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    files = tmp_path / "events"
    files.mkdir()
    rows = [{"user_id": i % 5, "event": f"click-{i}"} for i in range(40)]
    pq.write_table(pa.Table.from_pylist(rows[:25]), files / "a.parquet")
    pq.write_table(pa.Table.from_pylist(rows[25:]), files / "b.parquet")
    outputs = run_documented("parquet_to_topic.py", PARQUET_TO_TOPIC, tmp_path,
                             {"/data/events/*.parquet": f"{files}/*.parquet"})
    _, example, consume, _ = outputs
    assert_no_error(example)
    assert example.stdout == "wrote 40 records to events\n"
    got = [line.split(" ", 1) for line in consume.stdout.splitlines()]
    assert sorted((key, json.loads(value)["event"]) for key, value in got) == sorted(
        (str(r["user_id"]), r["event"]) for r in rows)
    assert all(json.loads(value)["user_id"] == int(key) for key, value in got)
