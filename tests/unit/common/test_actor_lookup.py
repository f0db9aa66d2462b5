"""`find_actor`: every error Ray raises for a missing, dead or half-registered actor is
"absent"; any other error goes through. Ray's lookup is replaced, so no Ray runs."""
from __future__ import annotations

import logging
from types import SimpleNamespace
from typing import Any, Callable

import pytest
import ray
from ray._private.function_manager import FunctionActorManager

from rafka.actors import actor_lookup
from rafka.actors.actor_lookup import find_actor, is_absent_actor_error, named_actor_alive


def _half_registered_lookup(*_: Any, **__: Any) -> None:
    """What `ray.get_actor` does for an actor killed a moment ago: the GCS still lists it, but
    its class is gone from the function table, and Ray's own class loading fails on the
    missing entry (the AssertionError of issue 57, raised by Ray's real code here)."""
    gcs = SimpleNamespace(internal_kv_get=lambda *a, **k: None)
    manager = SimpleNamespace(_worker=SimpleNamespace(gcs_client=gcs))
    descriptor = SimpleNamespace(function_id=SimpleNamespace(binary=lambda: b"\x00" * 28))
    FunctionActorManager._load_actor_class_from_gcs(manager, ray.JobID.from_int(1), descriptor)


def _raising(error: BaseException) -> Callable[..., None]:
    def lookup(*_: Any, **__: Any) -> None:
        raise error
    return lookup


ABSENT = {
    "no such name": _raising(ValueError("Failed to look up actor with name 'coordinator:2'")),
    "handle not found": _raising(ray.exceptions.ActorHandleNotFoundError("gone")),
    "actor died": _raising(ray.exceptions.ActorDiedError()),
    "actor unavailable": _raising(ray.exceptions.ActorUnavailableError("unreachable", None)),
    "half registered": _half_registered_lookup,
}


@pytest.mark.parametrize("lookup", ABSENT.values(), ids=ABSENT.keys())
def test_every_error_for_a_missing_or_dead_actor_is_absent(monkeypatch: pytest.MonkeyPatch,
                                                           caplog: pytest.LogCaptureFixture,
                                                           lookup: Callable[..., None]) -> None:
    monkeypatch.setattr(actor_lookup.ray, "get_actor", lookup)
    with caplog.at_level(logging.DEBUG, logger=actor_lookup.__name__):
        assert find_actor("coordinator:2", "rafka") is None
    assert "coordinator:2" in caplog.text   # Ray's own error, at DEBUG


def test_the_half_registered_case_is_the_error_of_the_issue() -> None:
    """The simulation raises what `rafka broker stop --kill` met (so the test above covers it)."""
    with pytest.raises(AssertionError, match="Expected str or bytes, got <class 'NoneType'>") as raised:
        _half_registered_lookup()
    assert is_absent_actor_error(raised.value)


OTHER = {
    "ray not connected": RuntimeError("Ray has not been started yet. You can start Ray with 'ray.init()'."),
    "gcs timeout": ray.exceptions.GetTimeoutError("GCS did not answer"),
    "rpc error": ray.exceptions.RpcError("connection refused"),
    "a bug of ours": AssertionError("not raised by Ray's class loading"),
}


@pytest.mark.parametrize("error", OTHER.values(), ids=OTHER.keys())
def test_other_errors_go_through(monkeypatch: pytest.MonkeyPatch, error: BaseException) -> None:
    monkeypatch.setattr(actor_lookup.ray, "get_actor", _raising(error))
    with pytest.raises(type(error)):
        find_actor("coordinator:2", "rafka")


def test_a_found_actor_is_returned(monkeypatch: pytest.MonkeyPatch) -> None:
    handle = object()
    monkeypatch.setattr(actor_lookup.ray, "get_actor", lambda name, namespace: handle)
    assert find_actor("coordinator:2", "rafka") is handle


class _Handle:
    """An actor handle whose readiness call ends in `outcome` (raised by `ray.get`)."""

    def __init__(self, outcome: BaseException | None) -> None:
        self.__ray_ready__ = SimpleNamespace(remote=lambda: outcome)


@pytest.mark.parametrize("outcome, alive", [
    (None, True),
    (ray.exceptions.GetTimeoutError("busy"), True),           # busy is alive: only death proves anything
    (ray.exceptions.ActorDiedError(), False),
    (ray.exceptions.ActorUnavailableError("unreachable", None), False),
], ids=["answers", "busy", "died", "unavailable"])
def test_named_actor_alive(monkeypatch: pytest.MonkeyPatch, outcome: BaseException | None, alive: bool) -> None:
    monkeypatch.setattr(actor_lookup.ray, "get_actor", lambda name, namespace: _Handle(outcome))

    def get(ref: BaseException | None, timeout: float) -> None:
        if ref is not None:
            raise ref
    monkeypatch.setattr(actor_lookup.ray, "get", get)
    assert named_actor_alive("coordinator:2", "rafka") is alive


def test_named_actor_alive_of_a_half_registered_actor(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(actor_lookup.ray, "get_actor", _half_registered_lookup)
    assert named_actor_alive("coordinator:2", "rafka") is False
