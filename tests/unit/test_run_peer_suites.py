"""The peer-suite runner's bookkeeping: outcomes from JUnit XML, from verbose logs and from go
test's verbose output, failures told from flakes across runs, the minimal broker properties, the
kgo binary's command line, and the cluster's peak memory and Ray workers."""
from __future__ import annotations

from pathlib import Path

from tests.waiting import wait_until
from tools.run_peer_suites import (PeakSampler, SuiteResult, go_duration, go_panic, is_ray_worker, kgo_command,
                                   outcomes, outcomes_from_go_test, outcomes_from_log, ray_workers,
                                   write_properties)


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


def test_go_test_outcomes_are_the_top_level_tests(tmp_path: Path) -> None:
    log = tmp_path / "go-test.log"
    log.write_text("=== RUN   TestPing\n"
                   "=== PAUSE TestPing\n"
                   "=== RUN   TestGroupSimple\n"
                   "=== PAUSE TestGroupSimple\n"
                   "=== RUN   TestShareGroup\n"
                   "=== CONT  TestPing\n"
                   "=== CONT  TestGroupSimple\n"
                   "=== RUN   TestGroupSimple/classic\n"
                   "=== RUN   TestGroupSimple/848\n"
                   "    consumer_test.go:915: broker does not support KIP-848\n"
                   "    client_test.go:357: broker does not support share groups\n"
                   "--- SKIP: TestShareGroup (0.00s)\n"
                   "--- PASS: TestPing (0.00s)\n"
                   "=== NAME  TestGroupSimple/classic\n"
                   "    consumer_test.go:950: unexpected record\n"
                   "--- FAIL: TestGroupSimple (2.31s)\n"
                   "    --- SKIP: TestGroupSimple/848 (0.00s)\n"
                   "    --- FAIL: TestGroupSimple/classic (2.31s)\n"
                   "=== RUN   TestIssue325\n"
                   "a line without its newline--- PASS: TestIssue325 (1.02s)\n"
                   "FAIL\n")
    assert outcomes_from_go_test(log) == {"TestPing": "passed", "TestGroupSimple": "failed",
                                          "TestShareGroup": "skipped", "TestIssue325": "passed"}
    assert go_panic(log) is None


def test_go_tests_a_panic_cut_short_are_errors(tmp_path: Path) -> None:
    log = tmp_path / "go-test.log"
    log.write_text("=== RUN   TestGroupETL\n"
                   "=== PAUSE TestGroupETL\n"
                   "=== RUN   TestIssue337\n"
                   "=== PAUSE TestIssue337\n"
                   "=== CONT  TestGroupETL\n"
                   "=== CONT  TestIssue337\n"
                   "--- FAIL: TestGroupETL (61.20s)\n"
                   "panic: duplicate record at offset 12 [recovered]\n"
                   "\tpanic: duplicate record at offset 12\n"
                   "goroutine 123 [running]:\n")
    assert outcomes_from_go_test(log) == {"TestGroupETL": "failed", "TestIssue337": "error"}
    assert go_panic(log) == "panic: duplicate record at offset 12 [recovered]"


def test_the_kgo_command_skips_txn_etl_unless_all_and_keeps_go_durations() -> None:
    assert go_duration(2400) == "40m" and go_duration(90) == "90s"
    assert kgo_command(Path("/b/kgo.test"), False, None, 2400) == [
        "/b/kgo.test", "-test.v", "-test.timeout", "40m", "-test.skip", "^TestTxnEtl$"]
    assert kgo_command(Path("/b/kgo.test"), True, "^(TestPing)$", 600) == [
        "/b/kgo.test", "-test.v", "-test.timeout", "10m", "-test.run", "^(TestPing)$"]


def test_ray_workers_are_titled_by_ray_and_not_its_agents() -> None:
    assert is_ray_worker(b"ray::PartitionReplica" + b" " * 40)
    assert is_ray_worker(b"ray::IDLE\x00")
    assert is_ray_worker(b"/venv/bin/python\x00-u\x00/venv/lib/ray/_private/workers/default_worker.py\x00--node-ip")
    assert not is_ray_worker(b"ray::DashboardAgent" + b" " * 40)
    assert not is_ray_worker(b"ray::RuntimeEnvAgent\x00")
    assert not is_ray_worker(b"/venv/lib/ray/core/src/ray/raylet/raylet\x00--raylet_socket_name=/tmp/ray/s")
    assert not is_ray_worker(b"/usr/bin/java\x00-Xmx256m")


def test_peak_ray_workers_are_those_of_the_sampled_tree() -> None:
    import os
    import subprocess

    # Two processes of this tree titled as Ray titles a worker and an agent.
    worker = subprocess.Popen(["bash", "-c", "exec -a ray::IDLE sleep 60"])
    agent = subprocess.Popen(["bash", "-c", "exec -a ray::DashboardAgent sleep 60"])
    try:
        sampler = PeakSampler(os.getpid())
        wait_until(lambda: open(f"/proc/{worker.pid}/cmdline", "rb").read().startswith(b"ray::")
                   and open(f"/proc/{agent.pid}/cmdline", "rb").read().startswith(b"ray::"),
                   timeout_s=20, message="the children's titles")
        assert ray_workers([worker.pid, agent.pid]) == 1
        sampler.sample()
        with_worker = sampler.peaks()["peak_ray_workers"]
        assert with_worker >= 1   # and whatever Ray workers this test process may have below it
    finally:
        for child in (worker, agent):
            child.kill()
            child.wait()
    sampler.sample()
    assert sampler.peaks()["peak_ray_workers"] == with_worker   # a peak, not the last sample
