"""Commands that user documentation shows (a program's docstring, the README's `sh` blocks),
read from the text itself and run as a user would type them, with the few substitutions a
test needs so that it collides with nothing on a shared machine: its own port for the
broker's 127.0.0.1:9092, its own `--data-dir` for `rafka up`/`rafka down` (default /tmp/rafka),
its own paths for the ones the text names, and this checkout's virtualenv for `.venv/bin/`.

A test asserts that the commands read equal the ones it expects, so a command changed in the
docs without its test failing is impossible; then it runs them in order through bash.
"""
from __future__ import annotations

import ast
import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
_COMMENT = re.compile(r"\s{2,}#.*$")   # the docs' comments stand two or more spaces after a command
_FENCE = re.compile(r"^```(\w*)\s*$")


def _joined(lines: list[str]) -> list[str]:
    """Lines with backslash continuations joined and comments removed; blank lines dropped."""
    commands: list[str] = []
    pending = ""
    for line in lines:
        text = _COMMENT.sub("", line).rstrip()
        if text.endswith("\\"):
            pending += text[:-1].strip() + " "
            continue
        command = (pending + text.strip()).strip()
        pending = ""
        if command:
            commands.append(command)
    return commands


def docstring_commands(program: Path) -> list[str]:
    """The commands of a program's module docstring: its indented (4-space) lines."""
    doc = ast.get_docstring(ast.parse(program.read_text()), clean=True) or ""
    return _joined([line for line in doc.splitlines() if line.startswith("    ")])


def markdown_commands(document: Path) -> list[list[str]]:
    """The commands of each ```sh block of a Markdown file, block by block."""
    blocks: list[list[str]] = []
    language: str | None = None   # of the fenced block we are in; None outside one
    lines: list[str] = []
    for line in document.read_text().splitlines():
        fence = _FENCE.match(line)
        if fence is None:
            lines.append(line)
        elif language is None:
            language, lines = fence.group(1), []
        else:
            if language == "sh":
                blocks.append(_joined(lines))
            language = None
    return blocks


@dataclass
class Ran:
    command: str
    returncode: int
    stdout: str
    stderr: str
    seconds: float


@dataclass
class DocSession:
    """Runs documented commands in order from the repository's root, substituted for this test."""

    port: int
    data_dir: Path
    paths: dict[str, str] = field(default_factory=dict)   # a path the text names -> the test's own
    ran: list[Ran] = field(default_factory=list)

    def substitute(self, command: str) -> str:
        text = command.replace(".venv/bin/", f"{Path(sys.executable).parent}/")
        text = text.replace("127.0.0.1:9092", f"127.0.0.1:{self.port}")
        for documented, own in self.paths.items():
            text = text.replace(documented, own)
        text = re.sub(r"(rafka up\b[^|;&]*)", rf"\1 --data-dir {self.data_dir} --port {self.port}", text, count=1)
        text = re.sub(r"(rafka (?:down|status|broker \w+ ?\d*)\b[^|;&]*)", rf"\1 --data-dir {self.data_dir}", text,
                      count=1)
        if "--bootstrap-server" not in text:   # `rafka topics` asks 127.0.0.1:9092 by default
            text = text.replace("rafka topics ", f"rafka topics --bootstrap-server 127.0.0.1:{self.port} ", 1)
        return text

    def run(self, command: str, timeout_s: float = 300) -> Ran:
        """One documented command through bash; its output and exit code, kept in `ran`. A
        command still running after `timeout_s` is killed with everything it started (its own
        process group) and reported with exit code -9 and what it printed until then."""
        started = time.monotonic()
        proc = subprocess.Popen(["bash", "-c", self.substitute(command)], cwd=REPO, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, start_new_session=True)
        try:
            stdout, stderr = proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)   # the group this call made, by its leader's pid
            stdout, stderr = proc.communicate()
            stderr += f"\n[killed: still running after {timeout_s:.0f} s]"
        ran = Ran(command, proc.returncode, stdout, stderr, time.monotonic() - started)
        self.ran.append(ran)
        return ran

    def stop_broker(self) -> None:
        """`rafka down` for this session's data dir, whatever the documented commands did."""
        subprocess.run([str(Path(sys.executable).parent / "rafka"), "down", "--data-dir", str(self.data_dir)],
                       capture_output=True, text=True, timeout=180)
