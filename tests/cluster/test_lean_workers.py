"""A worker of the broker's Ray starts lean (`lean_imports`) and still serializes as Ray does:
pyarrow, pydantic, requests and jsonschema are not imported at its start; once the actor
imports pyarrow, Ray's reducer for its tables is in place (a slice of a table is pickled as its
10 rows, not its whole 800 kB buffer), and pydantic's fields get Ray's serializers as well."""
from __future__ import annotations

import importlib.util

import pytest


def test_a_new_actor_starts_without_rays_unused_imports_and_serializes_as_ray_does(rafka_cluster):
    if importlib.util.find_spec("pyarrow") is None or importlib.util.find_spec("pydantic") is None:
        pytest.skip("needs pyarrow and pydantic (the spark and Ray default extras)")
    import ray

    @ray.remote(num_cpus=0)
    class Probe:
        def loaded(self) -> list[str]:
            import sys
            return sorted(name for name in ("pyarrow", "pydantic", "numpy", "requests", "jsonschema")
                          if type(sys.modules.get(name)).__name__ == "module")

        def pickled_slice_bytes(self) -> int:
            import pyarrow as pa
            from ray import cloudpickle
            return len(cloudpickle.dumps(pa.table({"a": list(range(100_000))}).slice(0, 10)))

        def pydantic_fields_registered(self) -> bool:
            import pydantic  # noqa: F401
            from ray import cloudpickle
            from ray._common.pydantic_compat import _iter_model_field_types
            return all(t in cloudpickle.CloudPickler.dispatch for t in _iter_model_field_types())

    probe = Probe.remote()
    try:
        assert ray.get(probe.loaded.remote(), timeout=60) == []
        assert ray.get(probe.pickled_slice_bytes.remote(), timeout=60) < 10_000
        assert ray.get(probe.pydantic_fields_registered.remote(), timeout=60)
    finally:
        ray.kill(probe)
