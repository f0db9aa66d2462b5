"""tools/fuzz_codec.py: a short run finds nothing, and an exception other than our decode errors
is counted, shown and turns the exit code to 1."""
from __future__ import annotations

from tests.tools import load_tool


def test_a_short_run_decodes_some_frames_refuses_others_and_finds_nothing_unexpected():
    result = load_tool("fuzz_codec").run(3000, seed=7, progress_s=0)
    assert result["unexpected_exceptions"] == 0, result["examples"]
    assert result["outcomes"]["request ok"] > 0 and result["outcomes"]["response protocol"] > 0
    assert sum(result["mutations"].values()) == 3000


def test_an_unexpected_exception_is_reported_and_fails_the_run(monkeypatch, capsys):
    tool = load_tool("fuzz_codec")

    def broken(frame):
        raise IndexError("a decoder bug")

    monkeypatch.setattr(tool.codec, "decode_request", broken)
    assert tool.main(["--frames", "500", "--progress", "0"]) == 1
    out = capsys.readouterr().out
    assert "unexpected exceptions: " in out and "IndexError" in out
