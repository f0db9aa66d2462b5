"""The end of every scenario, the same for each: its options for output, stdout as `--output`
asks (one JSON document, or the scenario's text, its table and the phases that failed), then
its results file (bench/results/<scenario>.json, and bench/RESULTS.md rendered again)."""
from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from harness.phases import print_failures
from harness.results_file import DEFAULT_RESULTS_DIR, Recording
from harness.table import HEADERS, Row, render_table


def add_output_options(parser: argparse.ArgumentParser, data_dir: str = "") -> None:
    """The options every scenario has for its output: what stdout holds (`--output`), and where
    its results file goes, or none; and `--data-dir` when the scenario keeps `data_dir` (what it
    keeps there) on disk."""
    if data_dir:
        parser.add_argument("--data-dir", type=Path,
                            help=f"where {data_dir} go (default: a fresh temporary directory, removed)")
    parser.add_argument("--output", choices=("text", "json"), default="text",
                        help="stdout format: text tables, or one JSON document (default text)")
    parser.add_argument("--results-dir", type=Path, default=DEFAULT_RESULTS_DIR,
                        help="where the results file <scenario>.json goes; RESULTS.md is rendered beside that"
                             " folder (default bench/results, rendering bench/RESULTS.md)")
    parser.add_argument("--no-record", action="store_true",
                        help="write no results file (a trial run that should not replace the recorded figures)")


def finish(recording: Recording, args: argparse.Namespace, rows: Sequence[Row], document: dict[str, Any],
           failures: Mapping[str, str], text: str = "", headers: Sequence[str] = HEADERS) -> None:
    """Print the results (`document` as JSON with `--output json`; else `text`, the table of
    `rows` and the failed phases) and record them unless `--no-record`. A results file that
    cannot be written is said on stderr, not raised: the figures are on stdout all the same."""
    if args.output == "json":
        print(json.dumps(document, indent=2, default=str))
    else:
        if text:
            print(text)
            print()
        print(render_table(rows, headers))
        print_failures(failures)
    if args.no_record:
        return
    try:
        path = recording.write(args.results_dir, rows, document, failures, headers)
    except OSError as e:
        print(f"results file not written: {e}", file=sys.stderr)
        return
    print(f"results recorded in {path}; {args.results_dir.parent / 'RESULTS.md'} rendered", file=sys.stderr)
