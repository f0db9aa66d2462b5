"""`lean_ray_imports`: a process of rafka's own imports Ray without what it never uses from it.

`import ray` loads libraries a broker never calls, and every Ray worker or driver, as it connects,
imports more to register Ray's serializers for their types. Measured on this 2-core machine, from
a request to a new actor's first answer: ~1.0-1.2 s -> ~0.5 s, most of a replica's start, and so
of a dormant partition's first produce. Two changes, both invisible to code that uses them:

- the modules `import ray` loads and a broker never calls (`requests`, `jsonschema`, `yaml`)
  are imported on their first use (`deferred_imports`): ~0.3 s of ~1.0 s of a worker's imports
  (whatever the Ray: a deferred module loads when anything first uses it, so no gate);
- Ray's serializers for other libraries' types (pydantic's model fields, starlette's state,
  pyarrow's tables: `ray.util.serialization_addons.apply`) are registered once their library is
  imported (`post_import.when_imported`) instead of by importing each library at every start:
  ~0.4 s (pyarrow with numpy, pydantic) and their memory. An object of those types can only
  exist once its library is imported, so the serializers are in place whenever one is
  serialized, as before. If this Ray is not the one the gate supports (`gate`), or its
  add-ons are not the ones known here, Ray applies them itself.

For the processes rafka starts (its Ray's workers, through `lean_worker`, its dashboard agent
and log monitor; the `rafka` command), not for a program that imports rafka: a library must not
change what `import` means in its user's program. Code that runs as a task or actor on rafka's
own Ray finds these modules as before, loaded when first used.
"""
from __future__ import annotations

import sys
from typing import Any

from rafka.actors.ray_hooks import gate
from rafka.common.deferred_imports import UNUSED_BY_RAY_AT_START, defer
from rafka.common.post_import import when_imported

# The names `serialization_addons.apply` uses in Ray 2.60 (what is replaced when they match).
RAY_ADDONS_NAMES = frozenset({
    "ray._common.pydantic_compat", "register_pydantic_serializers", "register_starlette_serializer", "sys",
    "platform", "ray._private.arrow_serialization", "_register_custom_datasets_serializers"})


def apply_addons_when_imported(context: Any) -> None:
    """`serialization_addons.apply(context)`, each add-on registered once its library is imported."""
    from ray.util import serialization_addons

    def pydantic(_module: object) -> None:
        from ray._common.pydantic_compat import register_pydantic_serializers
        register_pydantic_serializers(context)

    def pyarrow(_module: object) -> None:
        from ray._private.arrow_serialization import _register_custom_datasets_serializers
        _register_custom_datasets_serializers(context)

    when_imported("pydantic", pydantic)
    when_imported("starlette.datastructures", lambda _module: serialization_addons.register_starlette_serializer(context))
    if sys.platform != "win32":
        when_imported("pyarrow", pyarrow)


def fits() -> bool:
    """Whether this Ray's `serialization_addons.apply` is the one known here (the names it uses
    are Ray 2.60's), or already replaced by it: what `addons_when_imported` replaces only then."""
    from ray.util import serialization_addons

    apply = getattr(serialization_addons, "apply", None)
    if apply is apply_addons_when_imported:
        return True
    return getattr(apply, "__code__", None) is not None and set(apply.__code__.co_names) == RAY_ADDONS_NAMES


def addons_when_imported() -> bool:
    """Replace Ray's `serialization_addons.apply` with `apply_addons_when_imported` if this Ray
    passes the gate (`gate.supported_ray`) and its `apply` is the one known here (`fits`);
    True if replaced."""
    from ray.util import serialization_addons

    if not (gate.supported_ray() and fits()):
        return False
    serialization_addons.apply = apply_addons_when_imported
    return True


def lean_ray_imports() -> None:
    """Defer Ray's unused imports and, once Ray's add-ons module is imported, replace its
    `apply` (`addons_when_imported`). Call before `import ray`."""
    defer(*UNUSED_BY_RAY_AT_START)
    when_imported("ray.util.serialization_addons", lambda _module: addons_when_imported())
