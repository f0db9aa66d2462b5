"""`defer`: a deferred module runs at its first attribute read, once, even when threads race
for it; a missing or already imported module is left as it is."""
from __future__ import annotations

import importlib.util
import sys
import threading
import types

import pytest

from rafka.common.deferred_imports import DeferredModule, defer

MODULE = """
import time
import rafka_test_counter
rafka_test_counter.runs += 1
time.sleep({pause})
ANSWER = 42
def ask():
    return ANSWER
"""


@pytest.fixture
def module_dir(tmp_path, monkeypatch):
    """A directory on sys.path for throwaway modules; they leave sys.modules afterwards."""
    monkeypatch.syspath_prepend(str(tmp_path))
    counter = types.ModuleType("rafka_test_counter")
    counter.runs = 0
    monkeypatch.setitem(sys.modules, "rafka_test_counter", counter)
    before = set(sys.modules)
    yield tmp_path, counter
    for name in set(sys.modules) - before:
        del sys.modules[name]


def test_a_deferred_module_runs_at_its_first_attribute_read(module_dir):
    directory, counter = module_dir
    (directory / "rafka_lazy_a.py").write_text(MODULE.format(pause=0))
    assert defer("rafka_lazy_a") == ["rafka_lazy_a"]
    import rafka_lazy_a
    assert isinstance(rafka_lazy_a, DeferredModule) and counter.runs == 0   # bound, not run
    assert importlib.util.find_spec("rafka_lazy_a").origin == str(directory / "rafka_lazy_a.py")
    assert counter.runs == 0                                                 # asked for, not run
    assert rafka_lazy_a.ask() == 42 and counter.runs == 1
    assert rafka_lazy_a.ANSWER == 42 and counter.runs == 1                  # once
    assert not isinstance(sys.modules["rafka_lazy_a"], DeferredModule)       # the real one now
    from rafka_lazy_a import ask
    assert ask() == 42 and counter.runs == 1


def test_a_missing_or_imported_module_is_not_deferred(module_dir):
    directory, _ = module_dir
    assert defer("rafka_no_such_module", "json", "os.path") == []
    with pytest.raises(ImportError):
        import rafka_no_such_module  # noqa: F401 - optional imports still see it missing


def test_threads_racing_for_a_deferred_module_run_it_once_and_all_see_it(module_dir):
    directory, counter = module_dir
    (directory / "rafka_lazy_b.py").write_text(MODULE.format(pause=0.2))
    defer("rafka_lazy_b")
    import rafka_lazy_b
    answers: list[int] = []
    threads = [threading.Thread(target=lambda: answers.append(rafka_lazy_b.ask())) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert answers == [42] * 8 and counter.runs == 1
