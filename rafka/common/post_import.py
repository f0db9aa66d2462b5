"""`when_imported`: run a function once a module has been imported, now if it already has been.

For set-up that only matters once a library is in use (Ray's serializers for pyarrow tables,
for instance) and that should not import the library itself: a process that never imports it
pays nothing.
"""
from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import threading
import types
from typing import Callable

from rafka.common.deferred_imports import DeferredModule

_lock = threading.Lock()


class _Loaded(importlib.abc.Loader):
    """The module's own loader, then the callbacks waiting for that module. The module keeps its
    own loader as `__loader__` and `__spec__.loader`: it runs with this one only once."""

    def __init__(self, loader: importlib.abc.Loader, callbacks: list[Callable[[types.ModuleType], None]]) -> None:
        self._loader = loader
        self._callbacks = callbacks

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType | None:
        return self._loader.create_module(spec)

    def exec_module(self, module: types.ModuleType) -> None:
        module.__loader__ = self._loader
        if module.__spec__ is not None:
            module.__spec__.loader = self._loader
        self._loader.exec_module(module)
        for callback in self._callbacks:
            callback(module)


class _Watcher(importlib.abc.MetaPathFinder):
    """First on `sys.meta_path` while callbacks wait: finds a watched module through the finders
    after it and runs the callbacks once that module has run."""

    def __init__(self) -> None:
        self.waiting: dict[str, list[Callable[[types.ModuleType], None]]] = {}

    def find_spec(self, fullname: str, path, target=None) -> importlib.machinery.ModuleSpec | None:  # noqa: ANN001 - importlib's
        if fullname not in self.waiting:
            return None
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            if finder is self or find is None:
                continue
            spec = find(fullname, path, target)
            if spec is not None:
                break
        else:
            return None
        if spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec   # (a namespace package, or a loader of the old protocol: left as it is)
        with _lock:
            callbacks = self.waiting.pop(fullname, [])
        if callbacks:
            spec.loader = _Loaded(spec.loader, callbacks)
        return spec


_watcher = _Watcher()


def when_imported(name: str, callback: Callable[[types.ModuleType], None]) -> None:
    """Call `callback(module)` once the module `name` (dotted for a submodule) has been imported
    in this process: now if it has been, else right after its import runs (in the importing
    thread). A module deferred (`deferred_imports`) has not been imported yet. Not for a module
    that another thread is importing at this moment: its callback would wait for a next import."""
    module = sys.modules.get(name)
    if module is not None and not isinstance(module, DeferredModule) and \
            not getattr(getattr(module, "__spec__", None), "_initializing", False):
        callback(module)
        return
    with _lock:
        _watcher.waiting.setdefault(name, []).append(callback)
        if _watcher not in sys.meta_path:
            sys.meta_path.insert(0, _watcher)
