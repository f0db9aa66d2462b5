"""`broker_services_only`: Ray's four hooks are replaced only while a private Ray starts, and
left alone when this Ray lacks one of them; the dashboard agent's wrapper hides the dashboard's
optional dependencies from the agent it runs. No Ray is started here (the cluster tests check
the processes a `rafka up` runs)."""
from __future__ import annotations

import subprocess
import sys

from ray._private import node as ray_node
from ray._private import services as ray_services_commands
from ray._private import utils as ray_utils

from rafka.actors import ray_services
from rafka.actors.ray_services import broker_services_only


class FakeNode:
    """What the replaced hooks touch of Ray's Node."""
    _webui_url = "http://127.0.0.1:8265"


def test_the_hooks_are_replaced_while_ray_starts_and_restored_after():
    originals = (ray_node.Node.start_api_server, ray_node.Node.start_monitor,
                 ray_utils.get_dashboard_dependency_error)
    with broker_services_only() as replaced:
        assert replaced
        node = FakeNode()
        ray_node.Node.start_api_server(node, include_dashboard=False, raise_on_failure=False)
        assert node._webui_url is None                       # no dashboard URL to advertise
        assert ray_node.Node.start_monitor(node) is None
        assert isinstance(ray_utils.get_dashboard_dependency_error(), ImportError)   # agent --minimal
        build = ray_services_commands._build_python_executable_command_memory_profileable
        assert build("dashboard_agent", "/tmp/session") == [
            sys.executable, "-u", "-m", "rafka.actors.minimal_dashboard_agent"]
        assert build("log_monitor", "/tmp/session") == [sys.executable, "-u"]   # the others as Ray builds them
    assert (ray_node.Node.start_api_server, ray_node.Node.start_monitor,
            ray_utils.get_dashboard_dependency_error) == originals
    assert "rafka" not in " ".join(
        ray_services_commands._build_python_executable_command_memory_profileable("dashboard_agent", "/tmp/s"))


def test_an_agent_command_under_rays_memory_profiler_is_left_as_ray_builds_it():
    profiled = ray_services._agent_without_modules(lambda component, session_dir: [sys.executable, "-u", "-m", "memray"],
                                                  "dashboard_agent")
    assert profiled("dashboard_agent", "/tmp/session") == [sys.executable, "-u", "-m", "memray"]


def test_the_agent_wrapper_runs_the_script_with_its_arguments_and_without_the_optional_dependencies(tmp_path):
    script = tmp_path / "agent.py"
    script.write_text(
        "import sys\n"
        "try:\n"
        "    import ray.dashboard.optional_deps\n"
        "    print('imported', sys.argv[1:])\n"
        "except ImportError:\n"
        "    print('missing', sys.argv[1:])\n")
    run = subprocess.run([sys.executable, "-m", "rafka.actors.minimal_dashboard_agent", str(script), "--node-id=7"],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "missing ['--node-id=7']"
    plain = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
    assert plain.stdout.startswith("imported"), plain.stderr   # installed: only the wrapper hides them


def test_the_hooks_are_restored_when_ray_fails_to_start():
    original = ray_node.Node.start_api_server
    try:
        with broker_services_only():
            raise RuntimeError("ray.init failed")
    except RuntimeError:
        pass
    assert ray_node.Node.start_api_server is original


def test_a_ray_without_one_hook_starts_as_usual(monkeypatch):
    monkeypatch.delattr(ray_node.Node, "start_monitor")
    original = ray_node.Node.start_api_server
    with broker_services_only() as replaced:
        assert not replaced
        assert ray_node.Node.start_api_server is original
        assert ray_utils.get_dashboard_dependency_error is not ray_services._no_dashboard_dependencies
