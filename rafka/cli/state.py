"""The run-state file of a detached `rafka up`: where it serves, which process to stop, and
what a later command needs to join the cluster's Ray and rebuild a broker's config."""
from __future__ import annotations

import json
import os
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

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


@contextmanager
def joined_ray(state: dict) -> Iterator[str]:
    """Join the Ray of the cluster `state` describes as one more driver, and leave it on exit;
    yields the cluster's namespace. Actors' logs stay out of the command's output. A local Ray
    enables token auth by itself, so RAY_AUTH_MODE is taken from the state: Ray reads it when it
    is first imported, so nothing of the command may import ray before this. Raises what
    `ray.init` raises when the cluster's Ray is gone."""
    if state.get("ray_auth_mode"):
        os.environ.setdefault("RAY_AUTH_MODE", state["ray_auth_mode"])
    from rafka.actors import ray_env

    namespace = state.get("namespace", "rafka")
    ray_env.join_ray(state["ray_address"], namespace, log_to_driver=False)
    try:
        yield namespace
    finally:
        ray_env.ray.shutdown()
