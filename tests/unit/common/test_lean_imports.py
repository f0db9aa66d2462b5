"""`lean_ray_imports` in a fresh interpreter (no Ray started): `import ray` and a serialization
context's add-ons leave pyarrow, pydantic, requests and jsonschema unimported; Ray's serializers
for pyarrow tables and pydantic's fields are in place once those are imported; a Ray whose
add-ons differ keeps its own."""
from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

import pytest

from rafka.actors.ray_hooks import lean_imports

PROBE = r"""
import json, sys
from rafka.actors.ray_hooks.lean_imports import lean_ray_imports
lean_ray_imports()
import ray
from ray._private.serialization import SerializationContext
from ray import cloudpickle

class Context:   # what the add-ons use of Ray's SerializationContext (it needs a worker to build)
    _register_cloudpickle_reducer = SerializationContext._register_cloudpickle_reducer
    _register_cloudpickle_serializer = SerializationContext._register_cloudpickle_serializer

def loaded(names):
    return sorted(n for n in names if type(sys.modules.get(n)).__name__ == "module")

from ray.util import serialization_addons
serialization_addons.apply(Context())
from rafka.actors.ray_hooks.lean_imports import fits
report = {"replaced": serialization_addons.apply.__module__, "fits_once_replaced": fits(),
          "at_start": loaded(["pyarrow", "pydantic", "numpy", "requests", "jsonschema", "yaml"])}
import pyarrow as pa
table = pa.table({"a": list(range(100000))}).slice(0, 10)
report["arrow_reducer"] = pa.Table in cloudpickle.CloudPickler.dispatch
report["slice_bytes"] = len(cloudpickle.dumps(table))
import pydantic
from ray._common.pydantic_compat import _iter_model_field_types
report["pydantic_fields"] = all(t in cloudpickle.CloudPickler.dispatch for t in _iter_model_field_types())
import requests
report["requests"] = requests.codes.ok
print(json.dumps(report))
"""


def test_ray_imports_lean_and_registers_its_serializers_when_their_libraries_arrive():
    if importlib.util.find_spec("pyarrow") is None or importlib.util.find_spec("pydantic") is None:
        pytest.skip("needs pyarrow and pydantic (the spark and Ray default extras)")
    run = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-3000:]
    report = json.loads(run.stdout.strip().splitlines()[-1])
    assert report["replaced"] == "rafka.actors.ray_hooks.lean_imports"
    assert report["fits_once_replaced"]   # (a private Ray's start in this process does not report it down)
    assert report["at_start"] == []
    assert report["arrow_reducer"] and report["slice_bytes"] < 10_000   # Ray's reducer: not the whole 800 kB buffer
    assert report["pydantic_fields"]
    assert report["requests"] == 200


def test_the_add_ons_of_another_ray_are_left_alone(monkeypatch):
    """(That this Ray's are replaced, the test above shows: `replaced`.)"""
    from ray.util import serialization_addons

    def other_apply(context):   # a Ray with another add-on
        serialization_addons.register_starlette_serializer(context)
        serialization_addons.register_something_new(context)

    monkeypatch.setattr(serialization_addons, "apply", other_apply)
    assert lean_imports.addons_when_imported() is False
    assert serialization_addons.apply is other_apply
