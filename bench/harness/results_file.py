"""A scenario's results file: bench/results/<scenario>.json, one per scenario, replaced by each
run that records, so bench/RESULTS.md (rendered from these files by bench/render_results.py)
always shows the latest measurement of each scenario.

A file holds the scenario's name and title, when it ran (UTC), the git commit of the code it
measured (and whether the tree had uncommitted changes), the command line, the machine's
figures at the start, the phases that failed, the table (`Row.to_json`, with its headers) and
the scenario's whole `--output json` document under "results".
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.machine import machine_figures
from harness.results_page import render_results_page
from harness.table import HEADERS, Row

BENCH = Path(__file__).resolve().parents[1]
REPO = BENCH.parent
DEFAULT_RESULTS_DIR = BENCH / "results"


def git_commit(repo: Path = REPO) -> tuple[str | None, bool]:
    """(the commit checked out in `repo`, whether its tree has uncommitted changes); (None, False)
    outside a git checkout."""
    try:
        commit = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True,
                                timeout=30, check=True).stdout.strip()
        changes = subprocess.run(["git", "-C", str(repo), "status", "--porcelain", "--untracked-files=no"],
                                 capture_output=True, text=True, timeout=30, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None, False
    return commit, bool(changes)


@dataclass
class Recording:
    """One run of a scenario, from its start (when the machine's figures are read, before the
    benchmark loads it) to `write`."""

    scenario: str
    title: str
    argv: list[str]
    date: str = field(default_factory=lambda: time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
    machine: dict[str, Any] = field(default_factory=machine_figures)

    @classmethod
    def start(cls, script: str, doc: str | None, argv: Sequence[str] | None = None) -> Recording:
        """A recording for the scenario in file `script` (its name without .py), titled by the
        first sentence of its docstring `doc` (`title_of`)."""
        return cls(Path(script).stem, title_of(doc) or Path(script).stem,
                   list(sys.argv[1:] if argv is None else argv))

    def document(self, rows: Sequence[Row], results: dict[str, Any], failures: dict[str, str] | Sequence[str],
                 headers: Sequence[str] = HEADERS) -> dict[str, Any]:
        """The results file's content (see the module doc)."""
        commit, dirty = git_commit()
        return {"scenario": self.scenario, "title": self.title, "date": self.date, "commit": commit,
                "uncommitted_changes": dirty, "command": " ".join([f"bench/{self.scenario}.py", *self.argv]),
                "machine": self.machine, "failures": list(failures), "headers": list(headers),
                "table": [row.to_json() for row in rows], "results": results}

    def write(self, results_dir: Path, rows: Sequence[Row], results: dict[str, Any],
              failures: dict[str, str] | Sequence[str], headers: Sequence[str] = HEADERS) -> Path:
        """Write <results_dir>/<scenario>.json (replacing it whole, never half-written) and render
        RESULTS.md beside `results_dir`; the file's path."""
        results_dir.mkdir(parents=True, exist_ok=True)
        path = results_dir / f"{self.scenario}.json"
        partial = path.with_suffix(".json.partial")
        partial.write_text(json.dumps(self.document(rows, results, failures, headers), indent=2, default=str) + "\n")
        os.replace(partial, path)
        render_results_page(results_dir)
        return path


def title_of(doc: str | None) -> str:
    """A docstring's opening sentence on one line: its first lines up to one that ends with "."
    or ":" (the colon dropped), or up to the first blank line."""
    lines: list[str] = []
    for line in (doc or "").strip().splitlines():
        if not line.strip():
            break
        lines.append(line.strip())
        if line.rstrip().endswith((".", ":")):
            break
    return " ".join(lines).rstrip(":")
