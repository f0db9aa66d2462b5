"""Runs Ray's worker (the `default_worker.py` Ray named, unchanged) with rafka's lean imports (`lean_imports`).

The raylet starts its Python workers as `python setup_worker.py <worker_path> <Ray's worker
arguments>`, `worker_path` being what Ray passed its `start_raylet`. The raylet of a private Ray
(`services.broker_services_only`) is given instead a script written into that Ray's session
directory (`write_script`), which calls `run_worker` with the path Ray passed: the worker runs
exactly the file Ray would have run, with the same `sys.path[0]` and `sys.argv`. Every actor of
a broker (coordinator, front end, each replica as it starts or wakes) is such a worker, and most
of its start was imports it never uses.
"""
from __future__ import annotations

import os
import runpy
import sys

SCRIPT_NAME = "rafka_lean_worker.py"
_SCRIPT = '''\
# Written by rafka (rafka.actors.ray_hooks.lean_worker) for this Ray session: the raylet runs it
# in place of Ray's worker, which it then runs with rafka's lean imports.
from rafka.actors.ray_hooks.lean_worker import run_worker

run_worker({worker!r})
'''


def write_script(worker_path: str, directory: str) -> str:
    """Write the script that runs `worker_path` lean into `directory` (a Ray session's) and
    return its path. OSError when it cannot be written."""
    path = os.path.join(directory, SCRIPT_NAME)
    with open(path, "w", encoding="utf-8") as f:
        f.write(_SCRIPT.format(worker=worker_path))
    return path


def run_worker(worker_path: str) -> None:
    """Run Ray's worker script `worker_path` as `python <worker_path>` would, imports lean."""
    from rafka.actors.ray_hooks.lean_imports import lean_ray_imports

    sys.path[0] = os.path.dirname(worker_path)   # as when Python runs the worker itself (run_path sets argv[0])
    lean_ray_imports()
    runpy.run_path(worker_path, run_name="__main__")
