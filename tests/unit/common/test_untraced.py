"""`drop_tracing_wrappers`: an actor's calls to its own methods skip Ray's tracing wrappers
while tracing is off; nothing changes while it is on, or for a class Ray never wrapped."""
from __future__ import annotations

import ray
from ray.util.tracing import tracing_helper

from rafka.actors.ray_hooks.untraced import drop_tracing_wrappers


class Counter:
    def __init__(self) -> None:
        self.calls = 0

    def bump(self) -> int:
        return self._add(1)

    def _add(self, n: int) -> int:
        self.calls += n
        return self.calls

    async def later(self) -> int:
        return self.bump()


def ray_made_class() -> type:
    """The class `ray.remote` makes for an actor (its methods wrapped for tracing), as a worker has it."""
    return ray.remote(Counter).__ray_metadata__.modified_class


def wrapped_names(cls: type) -> set[str]:
    return {name for name, value in vars(cls).items() if getattr(value, "__ray_tracing_wrapped__", False)}


def test_with_tracing_off_the_class_ray_made_gets_its_plain_methods_back() -> None:
    cls = ray_made_class()
    assert {"bump", "_add", "later"} <= wrapped_names(cls)   # Ray wraps private methods too
    actor = cls.__new__(cls)
    actor.__init__()
    unwrapped = drop_tracing_wrappers(actor)
    assert wrapped_names(cls) == set() and unwrapped >= 3
    assert cls.bump is Counter.bump and cls._add is Counter._add and cls.later is Counter.later
    assert actor.bump() == 1 and actor.bump() == 2   # and they still work


def test_with_tracing_on_the_wrappers_stay(monkeypatch) -> None:
    monkeypatch.setattr(tracing_helper, "_global_is_tracing_enabled", True)
    cls = ray_made_class()
    actor = cls.__new__(cls)
    actor.__init__()
    assert drop_tracing_wrappers(actor) == 0
    assert {"bump", "_add", "later"} <= wrapped_names(cls)


def test_a_plain_object_is_left_alone() -> None:
    counter = Counter()
    assert drop_tracing_wrappers(counter) == 0
    assert Counter.bump.__qualname__ == "Counter.bump"
