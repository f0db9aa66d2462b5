"""The run-state file of a detached `rafka up`: where it serves and which process to stop."""
from __future__ import annotations

import json
import os
from pathlib import Path

DEFAULT_DATA_DIR = "/tmp/rafka"
STATE_FILE = "rafka.state.json"


def state_path(data_dir: str | Path) -> Path:
    return Path(data_dir) / STATE_FILE


def write_state(data_dir: str | Path, state: dict) -> None:
    path = state_path(data_dir)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(state, indent=2) + "\n")
    os.replace(tmp, path)


def read_state(data_dir: str | Path) -> dict | None:
    try:
        return json.loads(state_path(data_dir).read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return None


def clear_state(data_dir: str | Path) -> None:
    try:
        state_path(data_dir).unlink()
    except FileNotFoundError:
        pass


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie child is not alive
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return True
