"""The peer-suite runner's bookkeeping: outcomes from JUnit XML and from verbose logs, failures
told from flakes across runs, the minimal broker properties, and the cluster's peak memory."""
from __future__ import annotations

from pathlib import Path

from tests.waiting import wait_until
from tools.run_peer_suites import PeakSampler, SuiteResult, outcomes, outcomes_from_log, write_properties


def test_junit_outcomes_by_test_id(tmp_path: Path) -> None:
    report = tmp_path / "junit.xml"
    report.write_text("""<testsuites><testsuite>
      <testcase classname="tests.test_a.T" name="test_ok"/>
      <testcase classname="tests.test_a.T" name="test_bad"><failure message="x"/></testcase>
      <testcase classname="tests.test_a" name="test_setup"><error message="y"/></testcase>
      <testcase classname="tests.test_a" name="test_skip"><skipped/></testcase>
    </testsuite></testsuites>""")
    assert outcomes(report) == {"tests.test_a.T::test_ok": "passed", "tests.test_a.T::test_bad": "failed",
                                "tests.test_a::test_setup": "error", "tests.test_a::test_skip": "skipped"}


def test_a_cut_short_run_is_read_from_its_verbose_lines(tmp_path: Path) -> None:
    log = tmp_path / "pytest.log"
    log.write_text("tests/test_a.py::T::test_ok PASSED   [  1%]\n"
                   "tests/test_a.py::test_bad FAILED     [  2%]\n"
                   "tests/test_a.py::test_skip SKIPPED (needs docker)  [  3%]\n"
                   "FAILED tests/test_a.py::test_bad - AssertionError\n"
                   "tests/test_b.py::T::test_hangs +++++ Timeout +++++\n"
                   "Traceback lines of the timeout\n")
    assert outcomes_from_log(log) == {"tests/test_a.py::T::test_ok": "passed", "tests/test_a.py::test_bad": "failed",
                                      "tests/test_a.py::test_skip": "skipped", "tests/test_b.py::T::test_hangs": "failed"}


def test_failing_every_run_is_a_failure_and_sometimes_a_flake() -> None:
    result = SuiteResult("s", runs=[{"a": "failed", "b": "failed", "c": "passed"},
                                    {"a": "error", "b": "passed", "c": "passed"}])
    assert result.failures() == ["a"]
    assert result.flakes() == ["b"]
    assert result.counts()[0] == {"passed": 1, "failed": 2, "error": 0, "skipped": 0}


def test_properties_are_the_suites_keys_over_kafkas_defaults(tmp_path: Path) -> None:
    props = tmp_path / "server.properties"
    write_properties(props, {"num.partitions": "2", "listeners": "PLAINTEXT://127.0.0.1:1"})
    assert props.read_text().splitlines() == ["broker.id=0", "num.partitions=2", "listeners=PLAINTEXT://127.0.0.1:1"]


def test_peaks_count_the_whole_process_tree_and_keep_the_highest() -> None:
    import os
    import subprocess
    import sys

    from rafka.common.process_memory import pss_bytes

    child = subprocess.Popen([sys.executable, "-c", "import signal\nb = bytearray(64 << 20)\nwhile True:\n    signal.pause()"])
    try:
        sampler = PeakSampler(os.getpid())
        wait_until(lambda: pss_bytes(child.pid) > 60 << 20, timeout_s=20, message="the child's memory")
        sampler.sample()
        with_child = sampler.peak_pss_bytes
        assert with_child >= pss_bytes(os.getpid()) + (60 << 20)
    finally:
        child.kill()
        child.wait()
    sampler.sample()
    assert sampler.peak_pss_bytes == with_child   # a peak, not the last sample
    assert sampler.peaks()["peak_load_1m"] >= 0 and sampler.peaks()["peak_pss_mib"] >= 60
