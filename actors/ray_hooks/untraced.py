"""Calls inside an actor without Ray's tracing wrappers.

`ray.remote` wraps every method of an actor class (private ones too) in a span wrapper for
Ray's tracing, which checks whether tracing is on at each call. rafka never turns it on, and an
actor calling its own methods pays the wrapper at every call: in a replica at 2,000 records/s
that was 3.7% of its CPU, spread over the ~10 of its methods each record goes through (and
1.3% of the front end's, whose requests look their channels up on the actor).
`drop_tracing_wrappers` puts the plain functions back on the class Ray made, once the actor
exists and only while tracing is off. Remote calls are unchanged (Ray keeps its own references
for them, and without tracing it passes them no trace context). A Ray the gate does not support
(`gate.supported_ray`, checked in the actor's own process) keeps its wrappers.
"""
from __future__ import annotations

from typing import Any

from rafka.actors.ray_hooks import gate


def fits() -> bool:
    """Whether this Ray tells if its tracing is on where Ray 2.60 does (`_is_tracing_enabled`)."""
    try:
        from ray.util.tracing.tracing_helper import _is_tracing_enabled
    except ImportError:
        return False
    return callable(_is_tracing_enabled)


def tracing_enabled() -> bool:
    """Whether Ray's tracing is on in this process (True when that cannot be told: keep the wrappers)."""
    try:
        from ray.util.tracing.tracing_helper import _is_tracing_enabled
    except ImportError:
        return True
    return _is_tracing_enabled()


def drop_tracing_wrappers(instance: Any) -> int:
    """Give `instance`'s class its methods unwrapped where Ray wrapped them for tracing and
    tracing is off; the number of methods unwrapped."""
    cls = type(instance)
    wrapped = {name: value.__wrapped__ for name, value in vars(cls).items()
               if getattr(value, "__ray_tracing_wrapped__", False) and hasattr(value, "__wrapped__")}
    if not wrapped or tracing_enabled() or not gate.supported_ray():   # (not an actor: no Ray to ask)
        return 0
    for name, function in wrapped.items():
        setattr(cls, name, function)
    return len(wrapped)
