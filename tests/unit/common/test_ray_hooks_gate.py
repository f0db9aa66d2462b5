"""The gate of rafka's hooks into Ray's internals: with another Ray than the one they were written
for, or a Ray function that differs from what a hook replaces, that hook stands down, Ray's own
stays in place, and one warning names every hook that stood down. Importing rafka changes
nothing in the process's environment, and only a Ray rafka starts gets rafka's. No Ray starts
here (`tests/cluster/test_ray_hooks_standing_down.py` starts a broker with every hook down)."""
from __future__ import annotations

import json
import logging
import os
import subprocess
import sys

import pytest
from ray._private import node as ray_node
from ray._private import services as ray_process_commands
from ray._private import utils as ray_utils

from rafka.actors import ray_env
from rafka.actors.ray_hooks import gate, lean_imports, untraced
from rafka.actors.ray_hooks.services import broker_services_only

GATE_LOGGER = "rafka.actors.ray_hooks.gate"


# Each function of Ray's that a hook replaces, and that hook's name.
HOOKED = [(ray_node.Node, "start_api_server", "no_api_server"),
          (ray_node.Node, "start_monitor", "no_autoscaler_monitor"),
          (ray_utils, "get_dashboard_dependency_error", "minimal_dashboard_agent"),
          (ray_process_commands, "_build_python_executable_command_memory_profileable", "minimal_dashboard_agent"),
          (ray_process_commands, "start_raylet", "lean_worker"),
          (ray_process_commands, "start_ray_process", "quiet_log_monitor")]


def hooked_functions() -> list:
    return [getattr(owner, name) for owner, name, _ in HOOKED]


def warnings_of(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == GATE_LOGGER and r.levelno == logging.WARNING]


@pytest.mark.parametrize("version, supported", [
    ("2.60.0", True), ("2.60.3", True), ("2.61.0", False), ("2.6.0", False),
    ("2.600.0", False), ("3.60.0", False)])
def test_the_gate_supports_the_release_the_hooks_were_written_for_only(monkeypatch, version, supported):
    monkeypatch.setattr(gate, "ray_version", lambda: version)
    assert gate.supported_ray() is supported


def test_the_installed_ray_is_the_pinned_one():
    """pyproject.toml pins `ray[default]==2.60.*`: the hooks run in this project's environment."""
    assert gate.supported_ray(), gate.ray_version()


def test_with_another_ray_every_hook_stands_down_with_one_warning_naming_them(monkeypatch, caplog):
    monkeypatch.setattr(gate, "ray_version", lambda: "2.61.0")
    originals = hooked_functions()
    with caplog.at_level(logging.WARNING, logger=GATE_LOGGER):
        with broker_services_only() as stood_down:
            assert stood_down == list(gate.HOOKS)
            assert hooked_functions() == originals   # Ray's own, every one
    assert hooked_functions() == originals
    assert warnings_of(caplog) == [
        "Ray 2.61.0 is not the 2.60 these hooks were written for; using Ray's own: no_api_server, "
        "no_autoscaler_monitor, minimal_dashboard_agent, lean_worker, quiet_log_monitor, lean_imports, untraced "
        "(rafka runs as before, slower to start actors)"]


def test_with_the_pinned_ray_no_hook_stands_down_and_nothing_is_logged(caplog):
    with caplog.at_level(logging.DEBUG, logger=GATE_LOGGER):
        with broker_services_only() as stood_down:
            assert stood_down == []
    assert warnings_of(caplog) == []


def _other_api_server(self, *, include_dashboard, raise_on_failure, new_option):  # noqa: ANN001
    self._webui_url = None


def _other_monitor(self, autoscaler):  # noqa: ANN001
    return None


def _other_dependency_error(strict):  # noqa: ANN001
    return None


def _other_command_builder(session_dir, component):  # noqa: ANN001
    return [sys.executable, "-u"]


def _other_raylet(redis_address, gcs_address, worker_paths, session_dir):  # noqa: ANN001
    return None


def _other_process_start(process_type, command, fate_share):  # noqa: ANN001
    return None


@pytest.mark.parametrize("owner, name, changed, hook", [
    (ray_node.Node, "start_api_server", _other_api_server, "no_api_server"),
    (ray_node.Node, "start_monitor", _other_monitor, "no_autoscaler_monitor"),
    (ray_utils, "get_dashboard_dependency_error", _other_dependency_error, "minimal_dashboard_agent"),
    (ray_process_commands, "_build_python_executable_command_memory_profileable", _other_command_builder,
     "minimal_dashboard_agent"),
    (ray_process_commands, "start_raylet", _other_raylet, "lean_worker"),
    (ray_process_commands, "start_ray_process", _other_process_start, "quiet_log_monitor"),
], ids=lambda value: value if isinstance(value, str) else None)
def test_a_hook_whose_ray_function_changed_its_signature_stands_down_alone(
        monkeypatch, caplog, owner, name, changed, hook):
    monkeypatch.setattr(owner, name, changed)
    before = hooked_functions()
    with caplog.at_level(logging.WARNING, logger=GATE_LOGGER):
        with broker_services_only() as stood_down:
            assert stood_down == [hook]
            assert getattr(owner, name) is changed   # Ray's own (as it now is) runs
            for (_, _, of_hook), ray_s, now in zip(HOOKED, before, hooked_functions()):
                assert (now is ray_s) is (of_hook == hook), f"{of_hook}: only {hook} stands down"
    (message,) = warnings_of(caplog)
    assert message.endswith(f"using Ray's own: {hook} (rafka runs as before, slower to start actors)")
    assert "internals differ" in message


def test_an_api_server_start_that_no_longer_sets_the_dashboard_url_is_left_to_ray(monkeypatch):
    def start_api_server(self, *, include_dashboard, raise_on_failure):  # noqa: ANN001 - same signature
        self._dashboard_url = "http://x"

    monkeypatch.setattr(ray_node.Node, "start_api_server", start_api_server)
    with broker_services_only() as stood_down:
        assert stood_down == ["no_api_server"]
        assert ray_node.Node.start_api_server is start_api_server


def test_a_check_that_raises_counts_as_not_fitting(monkeypatch):
    def broken() -> bool:
        raise AttributeError("moved in this Ray")

    assert gate.stood_down({"a": lambda: True, "b": broken}) == ["b"]


def test_with_another_ray_the_add_ons_and_the_tracing_wrappers_are_rays(monkeypatch):
    """The hooks that act in other processes check the gate there too."""
    import ray
    from ray.util import serialization_addons

    monkeypatch.setattr(gate, "ray_version", lambda: "2.59.1")
    apply = serialization_addons.apply
    assert lean_imports.addons_when_imported() is False
    assert serialization_addons.apply is apply

    class Counter:
        def bump(self) -> int:
            return 1

    cls = ray.remote(Counter).__ray_metadata__.modified_class
    actor = cls.__new__(cls)
    assert untraced.drop_tracing_wrappers(actor) == 0
    assert getattr(vars(cls)["bump"], "__ray_tracing_wrapped__", False)


def test_importing_rafka_changes_no_environment_variable_and_imports_no_ray():
    probe = ("import json, os, sys; before = set(os.environ)\n"
             "import rafka, rafka.cluster\n"
             "print(json.dumps([sorted(set(os.environ) - before), 'ray' in sys.modules]))")
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout) == [[], False]


@pytest.fixture
def bare_environment(monkeypatch):
    """This process's environment without rafka's private-Ray variables (restored after)."""
    for name in ray_env.PRIVATE_RAY_ENVIRONMENT:
        monkeypatch.delenv(name, raising=False)


def test_the_private_ray_environment_is_set_where_the_user_set_nothing(bare_environment, monkeypatch):
    monkeypatch.setenv("RAY_worker_niceness", "5")
    added = ray_env.use_private_ray_environment()
    assert "RAY_worker_niceness" not in added and os.environ["RAY_worker_niceness"] == "5"
    assert added == {k: v for k, v in ray_env.PRIVATE_RAY_ENVIRONMENT.items() if k != "RAY_worker_niceness"}
    assert all(os.environ[k] == v for k, v in added.items())


def test_starting_a_private_ray_sets_rafkas_environment_and_joining_one_does_not(bare_environment, monkeypatch):
    import ray

    monkeypatch.setattr(ray, "is_initialized", lambda: False)   # (a cluster test in this process may have joined one)
    before = dict(os.environ)
    with pytest.raises(RuntimeError, match="must not start Ray"):   # (the unit tier's ray.init)
        ray_env.join_ray("127.0.0.1:6379")
    assert dict(os.environ) == before
    with pytest.raises(RuntimeError, match="must not start Ray"):
        ray_env.start_local_ray()
    assert {k: os.environ.get(k) for k in ray_env.PRIVATE_RAY_ENVIRONMENT} == ray_env.PRIVATE_RAY_ENVIRONMENT


def test_a_ray_whose_private_modules_moved_starts_every_service_as_ray_does(monkeypatch, caplog):
    from rafka.actors.ray_hooks import services

    monkeypatch.setattr(services, "node_hooks", lambda: {})   # `ray._private.node` & co. not found
    originals = hooked_functions()
    with caplog.at_level(logging.WARNING, logger=GATE_LOGGER):
        with broker_services_only() as stood_down:
            assert stood_down == ["no_api_server", "no_autoscaler_monitor", "minimal_dashboard_agent", "lean_worker",
                                  "quiet_log_monitor"]
            assert hooked_functions() == originals
    assert len(warnings_of(caplog)) == 1
