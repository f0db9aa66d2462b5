"""The unit tier never starts Ray: pure logic only."""
import pytest


@pytest.fixture(autouse=True)
def _no_ray(monkeypatch):
    import ray

    def refuse(*args, **kwargs):
        raise RuntimeError("unit tests must not start Ray")

    monkeypatch.setattr(ray, "init", refuse)
