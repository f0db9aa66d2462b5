"""Modules imported on first use instead of at `import`: cheaper starts for rafka's own processes.

`import ray` (what every Ray worker does before it runs an actor, and every `rafka` command)
imports three libraries it almost never uses: `requests` (for a TPU probe, usage statistics and
the state API), `jsonschema` (to validate runtime-env plugins) and `yaml` (node labels from a
file). Measured on this 2-core machine they are ~0.3 s of the ~1.0 s a worker spends importing
before it serves: a third of the start of every replica, and so of the first produce to a
dormant partition. `defer` puts a stand-in in `sys.modules` for each: `import requests` binds
the stand-in, and the first attribute read imports the real module and answers from it.

Only for processes rafka starts itself (`rafka.actors.ray_hooks.lean_imports` says which): a library must
not change what `import` means in its user's program.
"""
from __future__ import annotations

import importlib
import importlib.util
import sys
import threading
import types
from typing import Any

# Imported by `import ray` and used by a broker's processes rarely or never.
UNUSED_BY_RAY_AT_START = ("requests", "jsonschema", "yaml")

_load_lock = threading.RLock()


class DeferredModule(types.ModuleType):
    """Stands in `sys.modules` for a module not imported yet; reading any attribute it lacks
    imports the real module (once, under a lock: Ray's workers run several threads) and
    answers from it."""

    def __getattr__(self, attr: str) -> Any:
        return getattr(self.real_module(), attr)

    def real_module(self) -> types.ModuleType:
        with _load_lock:
            real = self.__dict__.get("_deferred_real")
            if real is None:
                if sys.modules.get(self.__name__) is self:
                    del sys.modules[self.__name__]
                real = importlib.import_module(self.__name__)
                self.__dict__["_deferred_real"] = real
            return real


def defer(*names: str) -> list[str]:
    """Stand-ins for the top-level modules `names` that are installed and not imported yet (a
    missing module stays missing: `import` still raises ImportError, as optional imports
    expect). Returns the names deferred."""
    deferred = []
    for name in names:
        spec = None if "." in name or name in sys.modules else importlib.util.find_spec(name)
        if spec is None:
            continue
        stand_in = DeferredModule(name)
        # What `importlib.util.find_spec` answers for a module in sys.modules (a library asking
        # whether an optional one is installed), without loading it.
        stand_in.__spec__, stand_in.__loader__, stand_in.__package__ = spec, spec.loader, spec.parent
        sys.modules[name] = stand_in
        deferred.append(name)
    return deferred
