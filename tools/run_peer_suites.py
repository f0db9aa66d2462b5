#!/usr/bin/env python
"""Run the Kafka clients' own test suites against a fresh one-broker rafka, each suite twice,
and say which tests failed every time (failures) and which only sometimes (flakes).

The suites come from the clients' repositories (docs/peer-suites.md); this script does
not fetch them. Give each checkout's path and a virtualenv that has the client and its test
requirements installed (docs/peer-suites.md says how these were made):

    .venv/bin/python tools/run_peer_suites.py \\
        --kafka-python /tmp/peer/kp:/tmp/peer/kpvenv \\
        --aiokafka /tmp/peer/aio:/tmp/peer/aiovenv \\
        --confluent-kafka /tmp/peer/ck:/tmp/peer/ckvenv \\
        --franz-go /tmp/peer/kgo.test --runs 2

Per run: a fresh data dir and broker (`rafka up --detach`, a minimal server.properties with
the suite's keys), the suite's pytest with a JUnit XML report, then `rafka down`; meanwhile the
cluster's peak PSS (the `rafka up` process tree), its peak number of Ray worker processes and
the machine's peak load average. franz-go's suite is its `pkg/kgo` test binary (`go test -c`,
built as docs/peer-suites.md says), run with `-test.v` and KGO_SEEDS pointing at the broker; its
outcomes are read from go test's verbose output.
aiokafka has no switch for an external broker: its tests/conftest.py gets the fixtures of
tools/peer_suites/aiokafka_conftest_tail.py appended (once), active with AIOKAFKA_BROKER set.
Both suites delete each test's topics when it ends (kafka-python's through the plugin
tools/peer_suites/rafka_delete_topics.py): a partition written to keeps a replica process
until it has been idle for replica.dormant.after.ms.

Progress goes to stderr; the result to stdout (text, or --output json). Exit 0 when every
suite ran and no test failed in every run, 1 when some test did, 2 when a suite could not run.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import threading
import time
import xml.etree.ElementTree as ET
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rafka.cli.state import read_state  # noqa: E402
from rafka.common.ports import unused_port  # noqa: E402
from rafka.common.process_memory import pss_bytes  # noqa: E402
from rafka.common.process_tree import descendants  # noqa: E402

AIOKAFKA_TAIL = ROOT / "tools" / "peer_suites" / "aiokafka_conftest_tail.py"
PLUGINS = ROOT / "tools" / "peer_suites"   # rafka_delete_topics.py, for kafka-python's suite
TAIL_MARK = "# --- rafka: run against a running broker"


@dataclass(frozen=True)
class Suite:
    """How to run one client's suite: broker properties, environment, pytest arguments."""

    name: str
    properties: dict[str, str]
    pytest_args: tuple[str, ...]
    # Test files wholly about what issue 23 puts out of scope (transactions, SASL), left out
    # unless --all: each of their tests waits out its timeouts, which costs the run many minutes.
    out_of_scope: tuple[str, ...] = ()

    def environment(self, bootstrap: str, work: Path) -> dict[str, str]:
        (work / "kroot").mkdir(parents=True, exist_ok=True)  # kafka-python's fixture wants it to exist
        plugins = os.pathsep.join(filter(None, [str(PLUGINS), os.environ.get("PYTHONPATH")]))
        env = {"kafka-python": {"KAFKA_VERSION": "4.1.0", "KAFKA_URI": f"PLAINTEXT://{bootstrap}",
                                "KAFKA_ROOT": str(work / "kroot"), "PYTHONPATH": plugins},
               "aiokafka": {"AIOKAFKA_BROKER": bootstrap},
               "confluent-kafka": {"BROKERS": bootstrap}}[self.name]
        return {**os.environ, **env}


COMMON_PROPERTIES = {"auto.create.topics.enable": "true", "group.min.session.timeout.ms": "1000",
                     "group.initial.rebalance.delay.ms": "0", "offsets.topic.num.partitions": "8"}
SUITES = {
    "kafka-python": Suite("kafka-python", {**COMMON_PROPERTIES, "num.partitions": "4"},
                          ("test/integration", "--timeout", "300", "-p", "rafka_delete_topics")),
    "aiokafka": Suite("aiokafka", {**COMMON_PROPERTIES, "num.partitions": "2"},
                      ("tests", "--docker-image", "aiolibs/kafka:2.13_2.8.1", "--no-pull", "--timeout", "120"),
                      ("tests/test_transactional_producer.py", "tests/test_transactional_consumer.py",
                       "tests/test_sasl.py")),
    "confluent-kafka": Suite("confluent-kafka", {**COMMON_PROPERTIES, "num.partitions": "4"},
                             ("tests/integration/admin", "tests/integration/consumer", "tests/integration/producer",
                              "tests/integration/integration_test.py", "tests/integration/serialization",
                              "--timeout", "300"),
                             ("tests/integration/producer/test_transactions.py",
                              "tests/integration/admin/test_user_scram_credentials.py")),
}
FRANZ_GO = "franz-go"
FRANZ_GO_PROPERTIES = {**COMMON_PROPERTIES, "num.partitions": "4"}
# Without transactions (issue 23) TestTxnEtl retries forever and holds the semaphore the group
# tests share: skipped unless --all.
KGO_OUT_OF_SCOPE = "^TestTxnEtl$"
KGO_KILL_AFTER_S = 120   # past its own -test.timeout (which panics naming the tests running), the binary is killed

RunOnce = Callable[[int], tuple[dict[str, str], dict[str, float]]]   # run number -> outcomes, peaks


# The raylet's agents, titled like its workers (`ray::<actor class>`, `ray::IDLE` between tasks).
RAY_AGENT_TITLES = (b"ray::DashboardAgent", b"ray::RuntimeEnvAgent")


def is_ray_worker(cmdline: bytes) -> bool:
    """Whether a process with this /proc/<pid>/cmdline is a Ray worker: titled `ray::...` by
    Ray and not one of the raylet's agents, or still running default_worker.py (not titled yet)."""
    title = cmdline.split(b"\0", 1)[0].strip()
    if title.startswith(b"ray::"):
        return not title.startswith(RAY_AGENT_TITLES)
    return b"default_worker.py" in cmdline


def ray_workers(pids: list[int]) -> int:
    """How many of `pids` (one cluster's processes: never matched by name across the machine)
    are Ray workers; those gone meanwhile are not counted."""
    count = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                count += is_ray_worker(f.read())
        except OSError:
            pass
    return count


class PeakSampler:
    """Every `interval_s`, the PSS of the whole rafka cluster (the `rafka up` process and every
    process below it: Ray, ZooKeeper, the brokers' actors), how many of those processes are Ray
    workers (the raylet's children but its agents, and any it orphaned: `rafka up` adopts
    them) and the machine's 1-minute load average; keeps the peaks (issue 24: a client suite
    under 4 GiB and a load below 8)."""

    def __init__(self, up_pid: int, interval_s: float = 2.0) -> None:
        self.up_pid, self.interval_s = up_pid, interval_s
        self.peak_pss_bytes, self.peak_load, self.peak_ray_workers = 0, 0.0, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> "PeakSampler":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def sample(self) -> None:
        pids = [self.up_pid, *descendants(self.up_pid)]
        self.peak_pss_bytes = max(self.peak_pss_bytes, sum(pss_bytes(pid) for pid in pids))
        self.peak_ray_workers = max(self.peak_ray_workers, ray_workers(pids))
        self.peak_load = max(self.peak_load, os.getloadavg()[0])

    def _run(self) -> None:
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(self.interval_s)

    def peaks(self) -> dict[str, float]:
        return {"peak_pss_mib": round(self.peak_pss_bytes / (1 << 20)), "peak_load_1m": round(self.peak_load, 1),
                "peak_ray_workers": self.peak_ray_workers}


@dataclass
class SuiteResult:
    """Each run's outcome per test id ('passed', 'failed', 'error', 'skipped'), and the
    cluster's peak memory and Ray workers and the machine's peak load during it."""

    suite: str
    runs: list[dict[str, str]] = field(default_factory=list)
    peaks: list[dict[str, float]] = field(default_factory=list)
    problem: str | None = None

    def failures(self) -> list[str]:
        """Tests that failed or erred in every run."""
        return sorted(t for t in self._bad() if all(run.get(t) in ("failed", "error") for run in self.runs))

    def flakes(self) -> list[str]:
        """Tests that failed in some runs and passed in others."""
        return sorted(set(self._bad()) - set(self.failures()))

    def _bad(self) -> set[str]:
        return {t for run in self.runs for t, outcome in run.items() if outcome in ("failed", "error")}

    def counts(self) -> list[dict[str, int]]:
        return [{o: sum(1 for v in run.values() if v == o) for o in ("passed", "failed", "error", "skipped")}
                for run in self.runs]


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def write_properties(path: Path, overrides: dict[str, str]) -> None:
    """A minimal server.properties: broker 0 with `overrides`, Kafka's defaults for the rest.
    Not deploy/server.properties, which writes many defaults out: DescribeConfigs would then
    report them as STATIC_BROKER_CONFIG, where the suites (written against brokers configured
    like their own templates) expect DEFAULT_CONFIG."""
    lines = ["broker.id=0"] + [f"{k}={v}" for k, v in overrides.items()]
    path.write_text("\n".join(lines) + "\n")


def outcomes(junit_xml: Path) -> dict[str, str]:
    """test id -> outcome from a pytest JUnit XML report."""
    found: dict[str, str] = {}
    for case in ET.parse(junit_xml).getroot().iter("testcase"):
        test = f"{case.get('classname')}::{case.get('name')}"
        kinds = {child.tag for child in case}
        found[test] = ("failed" if "failure" in kinds else "error" if "error" in kinds
                       else "skipped" if "skipped" in kinds else "passed")
    return found


_VERBOSE_LINE = re.compile(r"^(\S+::\S+) (PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)\b")


def outcomes_from_log(pytest_log: Path) -> dict[str, str]:
    """test id -> outcome from pytest's verbose lines: what a run cut short (no JUnit report) did."""
    found: dict[str, str] = {}
    lines = pytest_log.read_text(errors="replace").splitlines()
    for line in lines:
        if m := _VERBOSE_LINE.match(line):
            kind = m.group(2)
            found[m.group(1)] = {"PASSED": "passed", "XPASS": "passed", "FAILED": "failed", "ERROR": "error"}.get(
                kind, "skipped")
    # The test that never ended (it hung; pytest-timeout may have written its banner after it).
    started = [m.group(1) for line in lines if (m := re.match(r"^(\S+::\S+)(?: |$)", line))]
    if started and started[-1] not in found:
        found[started[-1]] = "failed"
    return found


def prepare_aiokafka(checkout: Path) -> None:
    conftest = checkout / "tests" / "conftest.py"
    text = conftest.read_text()
    if TAIL_MARK in text:  # an older tail: replaced by the current one
        text = text[:text.index(TAIL_MARK)].rstrip("\n") + "\n"
    conftest.write_text(text + AIOKAFKA_TAIL.read_text())


@dataclass
class Broker:
    """One run's broker: its data dir, its bootstrap address, and the sampler of its peaks."""

    data: Path
    bootstrap: str
    sampler: PeakSampler


@contextmanager
def fresh_broker(name: str, properties: dict[str, str], work: Path, run: int) -> Iterator[Broker]:
    """A fresh data dir and one-broker rafka (`rafka up --detach` on a free loopback port), its
    peaks sampled while the block runs; `rafka down` when it ends, however it ends."""
    data = work / f"{name}-run{run}"
    subprocess.run(["rm", "-rf", str(data)], check=True)
    data.mkdir(parents=True)
    port = unused_port()   # written into server.properties, bound later (rafka/common/ports.py)
    bootstrap = f"127.0.0.1:{port}"
    props = data / "server.properties"
    write_properties(props, {**properties, "listeners": f"PLAINTEXT://{bootstrap}",
                             "advertised.listeners": f"PLAINTEXT://{bootstrap}",
                             "log.dirs": str(data / "broker-0" / "logs")})
    rafka = Path(sys.executable).with_name("rafka")
    up = subprocess.run([str(rafka), "up", "--config", str(props), "--data-dir", str(data), "--port", str(port),
                         "--detach"], capture_output=True, text=True)
    if up.returncode != 0:
        raise RuntimeError(f"rafka up failed: {up.stderr.strip()[-2000:]}")
    sampler = PeakSampler((read_state(data) or {}).get("pid", os.getpid()))
    try:
        with sampler:
            yield Broker(data, bootstrap, sampler)
    finally:
        subprocess.run([str(rafka), "down", "--data-dir", str(data)], capture_output=True)
        peaks = sampler.peaks()
        log(f"{name} run {run}: the cluster's peak PSS {peaks['peak_pss_mib']} MiB, peak Ray workers"
            f" {peaks['peak_ray_workers']}, the machine's peak load average {peaks['peak_load_1m']}")


def run_once(suite: Suite, checkout: Path, venv: Path, work: Path, run: int, everything: bool,
             limit_s: float) -> tuple[dict[str, str], dict[str, float]]:
    """One fresh broker, one pytest run of the suite; the outcomes by test id, and the peaks."""
    with fresh_broker(suite.name, suite.properties, work, run) as broker:
        data = broker.data
        report = data / "junit.xml"
        log(f"{suite.name} run {run}: broker at {broker.bootstrap}, pytest in {checkout}")
        started = time.monotonic()
        try:
            with (data / "pytest.log").open("w") as out:
                ignored = [] if everything else [f"--ignore={path}" for path in suite.out_of_scope]
                subprocess.run([str(venv / "bin" / "python"), "-m", "pytest", *suite.pytest_args, *ignored,
                                "-p", "no:cacheprovider",
                                "-v", "-rA", f"--junitxml={report}"],
                               cwd=checkout, env=suite.environment(broker.bootstrap, work), stdout=out,
                               stderr=subprocess.STDOUT, timeout=limit_s)
            log(f"{suite.name} run {run}: pytest ended after {time.monotonic() - started:.0f} s"
                f" (log {data / 'pytest.log'})")
        except subprocess.TimeoutExpired:   # a test that hangs past pytest-timeout's reach (a thread it joins)
            log(f"{suite.name} run {run}: pytest killed after {limit_s:.0f} s (--suite-timeout);"
                f" log {data / 'pytest.log'}")
    if report.exists():
        return outcomes(report), broker.sampler.peaks()
    found = outcomes_from_log(data / "pytest.log")
    if not found:
        raise RuntimeError(f"pytest ran no test; see {data / 'pytest.log'}")
    log(f"{suite.name} run {run}: no JUnit report (cut short?); {len(found)} outcomes read from its log")
    return found, broker.sampler.peaks()


_GO_RUN = re.compile(r"^=== RUN\s+(\S+)")
_GO_END = re.compile(r"--- (PASS|FAIL|SKIP): (\S+) \(")


def outcomes_from_go_test(go_log: Path) -> dict[str, str]:
    """Top-level test name -> outcome from `go test -v` output: 'passed', 'failed', 'skipped',
    and 'error' for a test that started and never ended (the binary panicked, in it or in a
    test running beside it, or hit -test.timeout). Subtests (`Parent/sub`) are left out: their
    parent fails with them. An end line is found anywhere in its line, for a test's output
    without a final newline runs into it."""
    found: dict[str, str] = {}
    for line in go_log.read_text(errors="replace").splitlines():
        if (m := _GO_RUN.match(line)) and "/" not in m.group(1):
            found.setdefault(m.group(1), "error")
        elif (m := _GO_END.search(line)) and "/" not in m.group(2):
            found[m.group(2)] = {"PASS": "passed", "FAIL": "failed", "SKIP": "skipped"}[m.group(1)]
    return found


def go_panic(go_log: Path) -> str | None:
    """The first `panic:` line of a go test binary's output, if it panicked (or timed out)."""
    for line in go_log.read_text(errors="replace").splitlines():
        if line.startswith("panic: "):
            return line
    return None


def go_duration(seconds: float) -> str:
    """`seconds` as a Go duration flag: whole minutes as such (2400 -> '40m')."""
    return f"{int(seconds) // 60}m" if seconds % 60 == 0 else f"{seconds:g}s"


def kgo_command(binary: Path, everything: bool, only: str | None, limit_s: float) -> list[str]:
    """The kgo test binary's command line: verbose, its own timeout, TestTxnEtl skipped unless
    `everything`, and only the tests matching `only` (go's -test.run) when given."""
    command = [str(binary), "-test.v", "-test.timeout", go_duration(limit_s)]
    if only:
        command += ["-test.run", only]
    if not everything:
        command += ["-test.skip", KGO_OUT_OF_SCOPE]
    return command


def run_kgo_once(binary: Path, work: Path, run: int, everything: bool, only: str | None,
                 limit_s: float) -> tuple[dict[str, str], dict[str, float]]:
    """One fresh broker, one run of franz-go's kgo test binary against it (KGO_SEEDS, replication
    factor 1); the outcomes by test name, and the peaks."""
    with fresh_broker(FRANZ_GO, FRANZ_GO_PROPERTIES, work, run) as broker:
        go_log = broker.data / "go-test.log"
        command = kgo_command(binary, everything, only, limit_s)
        log(f"{FRANZ_GO} run {run}: broker at {broker.bootstrap}: {' '.join(command)}")
        env = {**os.environ, "KGO_SEEDS": broker.bootstrap, "KGO_TEST_RF": "1"}
        started = time.monotonic()
        try:
            with go_log.open("w") as out:
                done = subprocess.run(command, cwd=broker.data, env=env, stdout=out, stderr=subprocess.STDOUT,
                                      timeout=limit_s + KGO_KILL_AFTER_S)
            log(f"{FRANZ_GO} run {run}: the binary exited {done.returncode} after"
                f" {time.monotonic() - started:.0f} s (log {go_log})")
        except subprocess.TimeoutExpired:
            log(f"{FRANZ_GO} run {run}: the binary killed {KGO_KILL_AFTER_S} s past its -test.timeout; log {go_log}")
    if panic := go_panic(go_log):
        log(f"{FRANZ_GO} run {run}: {panic}")
    found = outcomes_from_go_test(go_log)
    if not found:
        raise RuntimeError(f"the kgo test binary ran no test; see {go_log}")
    return found, broker.sampler.peaks()


def text_report(results: list[SuiteResult]) -> str:
    lines = []
    for r in results:
        if r.problem:
            lines.append(f"{r.suite}: could not run: {r.problem}")
            continue
        counts = "; ".join(f"run {i}: " + ", ".join(f"{n} {o}" for o, n in c.items()) for i, c in
                           enumerate(r.counts(), 1))
        lines.append(f"{r.suite}: {counts}")
        lines += [f"  run {i}: the cluster's peak PSS {p['peak_pss_mib']} MiB, peak Ray workers"
                  f" {p['peak_ray_workers']}, peak load average {p['peak_load_1m']}"
                  for i, p in enumerate(r.peaks, 1)]
        lines += [f"  failed every run: {t}" for t in r.failures()]
        lines += [f"  flaky (failed in some runs): {t}" for t in r.flakes()]
    return "\n".join(lines)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    for name in SUITES:
        parser.add_argument(f"--{name}", metavar="CHECKOUT:VENV",
                            help=f"run {name}'s suite from this checkout with this virtualenv")
    parser.add_argument(f"--{FRANZ_GO}", metavar="KGO_TEST_BINARY", type=Path,
                        help="run franz-go's pkg/kgo suite: its test binary, built with `go test -c`")
    parser.add_argument(f"--{FRANZ_GO}-run", metavar="REGEX",
                        help="only the kgo tests this matches (the binary's -test.run), e.g. '^(TestPing)$'")
    parser.add_argument("--runs", type=int, default=2, help="runs of each suite, to tell flakes (default 2)")
    parser.add_argument("--work", type=Path, default=Path("/tmp/rafka-peer"),
                        help="brokers' data and the suites' logs (default /tmp/rafka-peer)")
    parser.add_argument("--suite-timeout", type=float, default=2400,
                        help="seconds one pytest run may take before it is killed and read from its log; the kgo"
                             " binary's -test.timeout (default 2400: 40m)")
    parser.add_argument("--all", action="store_true",
                        help="also run the tests that are wholly out of scope (aiokafka's transactions and SASL,"
                             " confluent-kafka's transactions and SCRAM, kgo's TestTxnEtl)")
    parser.add_argument("--output", choices=("text", "json"), default="text", help="stdout format (default text)")
    args = parser.parse_args(argv)
    if not any(getattr(args, n.replace("-", "_")) for n in [*SUITES, FRANZ_GO]):
        parser.error("name at least one suite: " + ", ".join(f"--{n} CHECKOUT:VENV" for n in SUITES)
                     + f", --{FRANZ_GO} KGO_TEST_BINARY")
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    return args


def suite_runs(name: str, args: argparse.Namespace) -> RunOnce:
    """What one run of suite `name` is, as the arguments give it; raises RuntimeError (or
    OSError) when the suite cannot run: no virtualenv, no test binary."""
    if name == FRANZ_GO:
        binary = args.franz_go.resolve()
        if not (binary.is_file() and os.access(binary, os.X_OK)):
            raise RuntimeError(f"no executable kgo test binary at {args.franz_go}")
        return lambda run: run_kgo_once(binary, args.work, run, args.all, args.franz_go_run, args.suite_timeout)
    checkout, _, venv = getattr(args, name.replace("-", "_")).partition(":")
    if not (Path(venv) / "bin" / "python").exists():
        raise RuntimeError(f"no virtualenv at {venv}")
    if name == "aiokafka":
        prepare_aiokafka(Path(checkout))
    return lambda run: run_once(SUITES[name], Path(checkout).resolve(), Path(venv).resolve(), args.work, run,
                                args.all, args.suite_timeout)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    results: list[SuiteResult] = []
    for name in [*SUITES, FRANZ_GO]:
        if not getattr(args, name.replace("-", "_")):
            continue
        result = SuiteResult(name)
        results.append(result)
        try:
            run_once_of_suite = suite_runs(name, args)
            for run in range(1, args.runs + 1):
                found, peaks = run_once_of_suite(run)
                result.runs.append(found)
                result.peaks.append(peaks)
                log(f"{name} run {run}: " + ", ".join(f"{n} {o}" for o, n in result.counts()[-1].items()))
        except (RuntimeError, OSError, ET.ParseError) as e:
            result.problem = str(e)
            log(f"{name}: {e}")
    if args.output == "json":
        print(json.dumps([{"suite": r.suite, "problem": r.problem, "counts": r.counts(), "failures": r.failures(),
                           "flakes": r.flakes(), "peaks": r.peaks, "runs": r.runs} for r in results], indent=2))
    else:
        print(text_report(results))
    if any(r.problem for r in results):
        return 2
    return 1 if any(r.failures() for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
