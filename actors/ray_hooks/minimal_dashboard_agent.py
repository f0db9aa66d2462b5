"""Runs Ray's dashboard agent as a Ray without the dashboard's dependencies runs it: no modules.

The raylet of a private Ray (`services.broker_services_only`) starts its dashboard agent
through this module: `python -u -m rafka.actors.ray_hooks.minimal_dashboard_agent <Ray's agent.py> <its
arguments>`. An agent loads every module it can import (metrics reporter, job, log and event
agents, ...) unless `ray.dashboard.optional_deps` fails to import, which is how the agent of a
minimal Ray install (`pip install ray`) runs. A broker uses none of them, and one fails outright
without the API server a private Ray no longer starts: the event agent looks for the dashboard's
address every second and logs a traceback each time. So this module makes that one import fail
and then runs the agent unchanged, with rafka's lean imports (`lean_imports`). The agent still
fate-shares with the raylet as before.
"""
from __future__ import annotations

import importlib.util
import runpy
import sys

OPTIONAL_DEPENDENCIES = "ray.dashboard.optional_deps"


def fits() -> bool:
    """Whether this Ray has the module whose failed import makes its agent minimal (Ray 2.60's name)."""
    return importlib.util.find_spec(OPTIONAL_DEPENDENCIES) is not None


def main(argv: list[str]) -> None:
    """Run the agent script `argv[1]` with the arguments after it, its optional modules off."""
    if len(argv) < 2:
        raise SystemExit("usage: python -m rafka.actors.ray_hooks.minimal_dashboard_agent <agent.py> [args...]")
    from rafka.actors.ray_hooks.lean_imports import lean_ray_imports

    sys.modules[OPTIONAL_DEPENDENCIES] = None   # `import` of it now raises ImportError
    lean_ray_imports()
    sys.argv = argv[1:]
    runpy.run_path(argv[1], run_name="__main__")


if __name__ == "__main__":
    main(sys.argv)
