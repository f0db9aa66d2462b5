"""The benchmarks' harness: a table row survives its results file, one table renders as text and
as Markdown, a results file says when, where and on which commit, RESULTS.md is rendered from
the files, the machine's figures are read, and a phase that fails or overruns is recorded."""
from __future__ import annotations

import argparse
import contextlib
import json
import sys
import threading
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from harness import machine, results_file, results_page  # noqa: E402
from harness.pairs import paired_row  # noqa: E402
from harness.phases import print_failures, run_directory, run_phase, scenario_run  # noqa: E402
from harness.report import add_output_options, finish  # noqa: E402
from harness.results_file import Recording  # noqa: E402
from harness.table import Row, render_markdown, render_table, size_label  # noqa: E402

FIGURES = {"cores": 2, "cpu": "Test CPU", "memory_gib": 7.8, "system": "Linux 6.1", "python": "3.11.7",
           "load_average_1m": 0.5, "sched_autogroup": True}


def paired() -> Row:
    """A paired row with ranges, a target and too few pairs to judge it."""
    return paired_row("consume 100 B rec/s vs tansu", {1: 900.0, 2: 1100.0}, {1: 1000.0, 2: 1000.0}, "rec/s",
                      (">=", 1.0))


@pytest.fixture
def recording(monkeypatch: pytest.MonkeyPatch) -> Recording:
    monkeypatch.setattr(results_file, "git_commit", lambda repo=None: ("0123456789abcdef0123", True))
    return Recording("produce_consume", "Throughput and latency of rafka", ["--pairs", "2"],
                     date="2026-12-07T16:00:00Z", machine=dict(FIGURES))


# -- rows and tables ------------------------------------------------------------------------

@pytest.mark.parametrize("row", [
    paired(),
    Row("idle cluster PSS MiB vs 1.2 GiB", 800.0, 1228.8, "MiB", ("<=", 1.0)),
    Row("no figure", None, 5.0, "ms"),
], ids=["paired-with-ranges", "plain-ratio", "missing-value"])
def test_a_row_read_back_from_its_json_renders_as_the_row_that_wrote_it(row: Row) -> None:
    back = Row.from_json(json.loads(json.dumps(row.to_json())))
    assert back.cells() == row.cells()
    assert back.met == row.met


def test_a_row_read_back_keeps_its_ratio_and_does_not_divide_again() -> None:
    back = Row.from_json(paired().to_json())
    assert back.ratio == pytest.approx(1.0)   # the median of 0.9 and 1.1, not 1000 / 1000 by chance
    assert back.met == "n/a (<5 pairs)"


def test_text_and_markdown_tables_show_the_same_cells() -> None:
    rows = [paired(), Row("a | b", 2.0, 1.0, "s", ("<=", 1.0))]
    text = render_table(rows)
    markdown = render_markdown(rows).splitlines()
    assert markdown[0] == "| metric | rafka | peer/limit | ratio | target | met? |"
    assert markdown[1] == "| --- | ---: | ---: | ---: | --- | --- |"
    assert markdown[2] == ("| consume 100 B rec/s vs tansu, median of 2 pairs | 1,000 [900-1,100] | 1,000 [1,000-1,000]"
                           " | 1.00x | >= 1x | n/a (<5 pairs) |")
    assert markdown[3] == "| a \\| b | 2.0 | 1.0 | 2.00x | <= 1x | NO |"
    assert "1,000 [900-1,100]" in text and text.splitlines()[1].startswith("------")


def test_size_labels_name_kibibytes() -> None:
    assert (size_label(100), size_label(1024)) == ("100 B", "1 KiB")


# -- the results file and the page --------------------------------------------------------

def test_a_results_file_says_when_where_and_on_which_commit(recording: Recording, tmp_path: Path) -> None:
    path = recording.write(tmp_path / "results", [paired()], {"settings": {"pairs": 2}}, {"tansu start": "boom"})
    doc = json.loads(path.read_text())
    assert path.name == "produce_consume.json"
    assert doc["commit"] == "0123456789abcdef0123" and doc["uncommitted_changes"] is True
    assert doc["date"] == "2026-12-07T16:00:00Z" and doc["machine"] == FIGURES
    assert doc["command"] == "bench/produce_consume.py --pairs 2"
    assert doc["failures"] == ["tansu start"] and doc["results"] == {"settings": {"pairs": 2}}
    assert [Row.from_json(r).cells() for r in doc["table"]] == [paired().cells()]


def test_writing_a_results_file_renders_the_page_beside_its_folder(recording: Recording, tmp_path: Path) -> None:
    recording.write(tmp_path / "results", [paired()], {}, {})
    page = (tmp_path / "RESULTS.md").read_text()
    assert "## produce_consume: Throughput and latency of rafka" in page
    assert "at commit `0123456789ab` with uncommitted changes, on 2 cores (Test CPU), 7.8 GiB" in page
    assert "`bench/produce_consume.py --pairs 2`" in page
    assert "| consume 100 B rec/s vs tansu, median of 2 pairs | 1,000 [900-1,100] |" in page


def test_a_new_run_replaces_its_scenarios_file_and_leaves_the_others(recording: Recording, tmp_path: Path) -> None:
    results = tmp_path / "results"
    Recording("groups", "Consumer-group costs", [], machine=dict(FIGURES)).write(
        results, [Row("commit p99 ms", 3.0, None, "ms")], {}, {})
    recording.write(results, [Row("old", 1.0, 2.0)], {}, {})
    recording.write(results, [Row("new", 1.0, 2.0)], {}, {})
    assert sorted(p.name for p in results.iterdir()) == ["groups.json", "produce_consume.json"]
    page = (tmp_path / "RESULTS.md").read_text()
    assert "| new |" in page and "| old |" not in page
    assert page.index("## produce_consume") < page.index("## groups")   # the page's order, not the alphabet's


def test_the_page_names_a_results_file_it_cannot_read(tmp_path: Path) -> None:
    (tmp_path / "broken.json").write_text("{not json")
    page = results_page.render_page(*results_page.load_documents(tmp_path))
    assert "No measurement recorded yet" in page
    assert "- broken.json: JSONDecodeError" in page


def finished(recording: Recording, argv: list[str], failures: dict[str, str] | None = None) -> None:
    parser = argparse.ArgumentParser()
    add_output_options(parser)
    finish(recording, parser.parse_args(argv), [Row("a rate", 2.0, 1.0, "rec/s")], {"rate": 2.0}, failures or {},
           "the measurements")


def test_a_scenario_records_unless_told_not_to(recording: Recording, tmp_path: Path) -> None:
    finished(recording, ["--no-record", "--results-dir", str(tmp_path)])
    assert list(tmp_path.iterdir()) == []
    finished(recording, ["--results-dir", str(tmp_path / "r")])
    assert (tmp_path / "r" / "produce_consume.json").exists() and (tmp_path / "RESULTS.md").exists()


def test_a_scenario_prints_its_text_table_and_failures_or_its_json_document(
        recording: Recording, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    finished(recording, ["--no-record"], {"dd": "PhaseError: dd failed\ntraceback"})
    out = capsys.readouterr().out
    assert out.startswith("the measurements\n\n" + render_table([Row("a rate", 2.0, 1.0, "rec/s")]) + "\n")
    assert out.endswith("failed phases (tracebacks on stderr):\n  dd: PhaseError: dd failed\n")
    finished(recording, ["--no-record", "--output", "json"])
    assert json.loads(capsys.readouterr().out) == {"rate": 2.0}


def test_a_results_file_that_cannot_be_written_is_said_not_raised(
        recording: Recording, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "file").write_text("")
    finished(recording, ["--results-dir", str(tmp_path / "file" / "results")])
    assert "results file not written" in capsys.readouterr().err


def test_a_recording_is_titled_by_its_scenarios_docstring() -> None:
    started = Recording.start("/x/bench/groups.py", "Consumer-group costs of rafka.\n\nMore.", ["--repeat", "1"])
    assert (started.scenario, started.title, started.argv) == ("groups", "Consumer-group costs of rafka.",
                                                               ["--repeat", "1"])


@pytest.mark.parametrize("doc, title", [
    ("What replication costs: produce\nthroughput, and failover.\nMore of it.", "What replication costs: produce"
     " throughput, and failover."),
    ("Consumer-group costs (one broker):\n  1. rebalances", "Consumer-group costs (one broker)"),
    ("No full stop\nat all\n\nnext paragraph.", "No full stop at all"),
    (None, ""),
], ids=["wrapped-sentence", "list-after-a-colon", "first-paragraph", "no-docstring"])
def test_a_title_is_the_docstrings_opening_sentence_on_one_line(doc: str | None, title: str) -> None:
    assert results_file.title_of(doc) == title


def test_outside_a_git_checkout_the_commit_is_unknown(tmp_path: Path) -> None:
    assert results_file.git_commit(tmp_path) == (None, False)


# -- the machine --------------------------------------------------------------------------

def test_the_machines_figures_come_from_proc(tmp_path: Path) -> None:
    (tmp_path / "cpuinfo").write_text("processor\t: 0\nmodel name\t: AMD EPYC 7B13\nprocessor\t: 1\n")
    (tmp_path / "meminfo").write_text("MemTotal:        8152000 kB\nMemFree:  1 kB\n")
    figures = machine.machine_figures(tmp_path / "cpuinfo", tmp_path / "meminfo")
    assert figures["cpu"] == "AMD EPYC 7B13" and figures["memory_gib"] == pytest.approx(7.8)
    assert figures["cores"] >= 1 and figures["python"].count(".") == 2
    missing = machine.machine_figures(tmp_path / "absent", tmp_path / "absent")
    assert missing["memory_gib"] is None


def test_loopback_throughput_moves_every_byte_through_a_receiver_process() -> None:
    rate = machine.loopback_throughput(total=1 << 20, chunk=64 * 1024)
    assert (rate.what, rate.bytes) == ("loopback TCP", 1 << 20) and rate.mbps > 0


def test_the_disk_write_rate_comes_from_dd_and_leaves_no_file(tmp_path: Path) -> None:
    rate = machine.disk_write_rate(tmp_path, count_mib=1, flags=("conv=fdatasync",))
    assert rate.bytes == 1 << 20 and rate.detail == "dd bs=1M count=1 conv=fdatasync"
    assert list(tmp_path.iterdir()) == []


def test_the_wake_cost_times_the_same_work_back_to_back_and_after_each_sleep() -> None:
    cost = machine.wake_cost((0.1, 1.0), chunks=3)
    assert sorted(cost.after_sleep_us) == [0.1, 1.0] and cost.hot_us > 0
    assert cost.slowdown(1.0) == cost.after_sleep_us[1.0] / cost.hot_us


def test_the_machine_in_one_line() -> None:
    assert machine.describe_machine(FIGURES) == ("2 cores (Test CPU), 7.8 GiB, Linux 6.1, Python 3.11.7, load 0.5"
                                                " at the start")


# -- phases -------------------------------------------------------------------------------

class Failures:
    def __init__(self) -> None:
        self.failures: dict[str, str] = {}


def test_a_failed_phase_is_recorded_and_the_run_goes_on() -> None:
    results = Failures()
    assert run_phase(results, "broken", lambda: 1 / 0, timeout_s=10) is None
    assert run_phase(results, "fine", lambda: 42, timeout_s=10) == 42
    assert results.failures == {"broken": "ZeroDivisionError: division by zero"}


def test_a_phase_past_its_deadline_is_recorded_as_timed_out() -> None:
    results = Failures()
    never = threading.Event()
    assert run_phase(results, "hung", lambda: never.wait(30), timeout_s=0.05) is None
    assert results.failures["hung"].startswith("PhaseTimeout: phase took longer than")


def test_failed_phases_are_listed_one_line_each(capsys: pytest.CaptureFixture[str]) -> None:
    print_failures({"tansu start": "PhaseError: not listening\nmore", "dd": ""})
    assert capsys.readouterr().out.splitlines() == ["", "failed phases (tracebacks on stderr):",
                                                    "  tansu start: PhaseError: not listening", "  dd: "]
    print_failures({})
    assert capsys.readouterr().out == ""


def test_a_given_run_directory_is_made_and_kept_and_a_temporary_one_removed(tmp_path: Path) -> None:
    with contextlib.ExitStack() as stack:
        given = run_directory(stack, tmp_path / "a" / "b", "unused-")
        temporary = run_directory(stack, None, "rafka-test-")
        assert given.is_dir() and temporary.is_dir()
    assert given.is_dir() and not temporary.exists()


class Run:
    def __init__(self) -> None:
        self.load_average: dict[str, tuple[float, float, float]] = {}


def test_a_scenario_run_notes_the_load_at_its_start_and_end_and_keeps_stdout_for_results(
        tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    run = Run()
    with scenario_run(run, tmp_path / "data", "unused-") as (stack, directory):
        print("a forwarded log line")
        assert directory == tmp_path / "data" and directory.is_dir()
        assert list(run.load_average) == ["start"]
    assert list(run.load_average) == ["start", "end"]
    out, err = capfd.readouterr()
    assert out == "" and "a forwarded log line" in err and "finished in" in err
