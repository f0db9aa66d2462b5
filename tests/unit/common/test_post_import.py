"""`when_imported`: the callback runs right after the module's import (not before, once), now
when it is already imported, for a submodule, and when a deferred module is first used; the
module keeps its own loader."""
from __future__ import annotations

import importlib
import importlib.machinery
import sys

import pytest

from rafka.common.deferred_imports import defer
from rafka.common.post_import import when_imported


@pytest.fixture
def module_dir(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    before = set(sys.modules)
    yield tmp_path
    for name in set(sys.modules) - before:
        del sys.modules[name]


def test_the_callback_runs_once_after_the_module_has_run(module_dir):
    (module_dir / "rafka_watched_a.py").write_text("VALUE = 'set by the module'\n")
    seen: list[str] = []
    when_imported("rafka_watched_a", lambda module: seen.append(module.VALUE))
    assert seen == []
    import rafka_watched_a
    assert seen == ["set by the module"]
    assert isinstance(rafka_watched_a.__loader__, importlib.machinery.SourceFileLoader)
    assert rafka_watched_a.__spec__.loader is rafka_watched_a.__loader__
    importlib.reload(rafka_watched_a)
    assert seen == ["set by the module"]


def test_an_imported_module_gets_the_callback_now(module_dir):
    seen: list[str] = []
    when_imported("json", lambda module: seen.append(module.__name__))
    assert seen == ["json"]


def test_a_submodule_and_a_deferred_module(module_dir):
    package = module_dir / "rafka_watched_pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "inner.py").write_text("NAME = 'inner'\n")
    (module_dir / "rafka_watched_lazy.py").write_text("NAME = 'lazy'\n")
    seen: list[str] = []
    when_imported("rafka_watched_pkg.inner", lambda module: seen.append(module.NAME))
    import rafka_watched_pkg
    assert seen == []
    import rafka_watched_pkg.inner  # noqa: F401
    assert seen == ["inner"]
    defer("rafka_watched_lazy")
    when_imported("rafka_watched_lazy", lambda module: seen.append(module.NAME))
    import rafka_watched_lazy
    assert seen == ["inner"]                       # deferred: not run yet
    assert rafka_watched_lazy.NAME == "lazy" and seen == ["inner", "lazy"]
    assert rafka_watched_pkg.inner.NAME == "inner"
