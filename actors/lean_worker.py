"""Runs Ray's worker (`default_worker.py`, unchanged) with rafka's lean imports (`lean_imports`).

The raylet of a private Ray (`ray_services.broker_services_only`) starts its Python workers as
`python <this file> <Ray's worker arguments>` instead of `python default_worker.py ...`. Every
actor of a broker (coordinator, front end, each replica as it starts or wakes) is such a worker,
and most of its start was imports it never uses. Everything else runs as `python
default_worker.py` would: same `sys.path[0]`, same `sys.argv`.
"""
from __future__ import annotations

import importlib.util
import os
import runpy
import sys


def ray_default_worker() -> str:
    """The path of Ray's `default_worker.py`, found without importing Ray."""
    spec = importlib.util.find_spec("ray")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("rafka's lean worker: Ray is not installed")
    return os.path.join(list(spec.submodule_search_locations)[0], "_private", "workers", "default_worker.py")


def main() -> None:
    worker = ray_default_worker()
    sys.path[0] = os.path.dirname(worker)   # as when Python runs default_worker.py itself

    from rafka.actors.lean_imports import lean_ray_imports

    lean_ray_imports()
    runpy.run_path(worker, run_name="__main__")


if __name__ == "__main__":
    main()
