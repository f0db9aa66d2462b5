"""Dicts that count their changes, so that a view derived from several of them is kept until
one of them changes (a broker's replica tables, asked for after every wake and rest)."""
from __future__ import annotations

from typing import Any


class ChangeCount:
    """The number of changes made so far to the `TrackedDict`s that share it."""

    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value = 0


class TrackedDict(dict):
    """A dict whose every change (set, delete, pop, clear, update, setdefault) adds one to a
    shared `ChangeCount`. Reading costs what a dict's does."""

    __slots__ = ("_count",)

    def __init__(self, count: ChangeCount) -> None:
        super().__init__()
        self._count = count

    def __setitem__(self, key: Any, value: Any) -> None:
        dict.__setitem__(self, key, value)
        self._count.value += 1

    def __delitem__(self, key: Any) -> None:
        dict.__delitem__(self, key)
        self._count.value += 1

    def pop(self, *args: Any) -> Any:
        self._count.value += 1
        return dict.pop(self, *args)

    def popitem(self) -> tuple:
        self._count.value += 1
        return dict.popitem(self)

    def clear(self) -> None:
        dict.clear(self)
        self._count.value += 1

    def update(self, *args: Any, **kwargs: Any) -> None:
        dict.update(self, *args, **kwargs)
        self._count.value += 1

    def setdefault(self, key: Any, default: Any = None) -> Any:
        self._count.value += 1
        return dict.setdefault(self, key, default)

    def __ior__(self, other: Any) -> "TrackedDict":
        self.update(other)
        return self
