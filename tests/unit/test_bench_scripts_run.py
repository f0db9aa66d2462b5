"""Every script in bench/ starts: its `--help` exits 0 and prints its usage. A script that
imports a module the harness moved (or any other import error) fails here, not on the day
someone runs the benchmark."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
SCRIPTS = sorted(p.name for p in BENCH.glob("*.py") if not p.name.startswith("_"))


def test_the_scripts_are_found() -> None:
    assert {"produce_consume.py", "replication.py", "idempotence_soak.py", "render_results.py"} <= set(SCRIPTS)


@pytest.mark.parametrize("script", SCRIPTS)
def test_help_exits_0(script: str) -> None:
    run = subprocess.run([sys.executable, str(BENCH / script), "--help"], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.startswith("usage:"), run.stdout[:500]
