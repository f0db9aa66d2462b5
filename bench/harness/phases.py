"""Running a benchmark's phases: progress lines on stderr, a deadline per phase, and a failed
phase recorded instead of ending the run; stdout kept for the results."""
from __future__ import annotations

import contextlib
import os
import signal
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Protocol, TypeVar

T = TypeVar("T")


class HasFailures(Protocol):
    """A run's results: the phases that failed, name -> error text."""

    failures: dict[str, str]


class HasLoadAverage(Protocol):
    """A run's results: the load averages at its "start" and "end"."""

    load_average: dict[str, tuple[float, float, float]]


def log(message: str) -> None:
    """A timestamped progress line on stderr."""
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# -- running phases ----------------------------------------------------------------------

class PhaseError(RuntimeError):
    """A benchmark phase could not finish (a broker error, a timeout, a count mismatch)."""


class PhaseTimeout(Exception):
    """A phase ran past its deadline (raised from SIGALRM)."""


@contextlib.contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Raise PhaseTimeout in the main thread if the block runs longer than `seconds`."""
    def on_alarm(_signum: int, _frame: object) -> None:
        raise PhaseTimeout(f"phase took longer than {seconds:.0f} s")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def run_phase(results: HasFailures, name: str, fn: Callable[[], T], timeout_s: float) -> T | None:
    """Run one phase; on error record it in `results.failures`, print the traceback, return None."""
    log(f"{name}...")
    started = time.perf_counter()
    try:
        with deadline(timeout_s):
            value = fn()
    except Exception as e:  # noqa: BLE001 - a failed phase must not stop the others
        results.failures[name] = f"{type(e).__name__}: {e}"
        log(f"{name} FAILED after {time.perf_counter() - started:.1f} s:\n{traceback.format_exc()}")
        return None
    log(f"{name} done in {time.perf_counter() - started:.1f} s")
    return value


def print_failures(failures: Mapping[str, str]) -> None:
    """The phases that failed (name -> error), one line each on stdout (their tracebacks went to stderr)."""
    if failures:
        print("\nfailed phases (tracebacks on stderr):")
        for name, error in failures.items():
            print(f"  {name}: {error.splitlines()[0] if error else ''}")


@contextlib.contextmanager
def stdout_to_stderr() -> Iterator[None]:
    """Send everything written to stdout (Ray's forwarded worker logs, child processes) to stderr.

    Keeps stdout for the results alone, so `--output json` stays parseable.
    """
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    try:
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


def run_directory(stack: contextlib.ExitStack, given: Path | None, prefix: str) -> Path:
    """Where a run keeps its data and logs: `given` (made if missing, and kept), or else a fresh
    temporary directory named `prefix`..., removed when `stack` closes."""
    if given:
        given = given.absolute()
        given.mkdir(parents=True, exist_ok=True)
        return given
    return Path(stack.enter_context(tempfile.TemporaryDirectory(prefix=prefix)))


@contextlib.contextmanager
def scenario_run(results: HasLoadAverage, given: Path | None, prefix: str) -> Iterator[tuple[contextlib.ExitStack, Path]]:
    """A scenario's run: stdout kept for its results (`stdout_to_stderr`), its directory
    (`run_directory`), the load average at its start and end in `results.load_average`, and how
    long it took on stderr. Yields the run's ExitStack (for what must stop with it) and its
    directory."""
    started = time.perf_counter()
    with contextlib.ExitStack() as stack:
        stack.enter_context(stdout_to_stderr())
        directory = run_directory(stack, given, prefix)
        results.load_average["start"] = os.getloadavg()
        yield stack, directory
    results.load_average["end"] = os.getloadavg()
    log(f"finished in {time.perf_counter() - started:.0f} s")
