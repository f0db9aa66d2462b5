"""`broker_services_only`: Ray's six functions are replaced only while a private Ray starts, and
a hook whose Ray function is missing or differs stands down alone; the dashboard agent's wrapper
hides the dashboard's optional dependencies from the agent it runs; the lean worker runs the
worker Ray named. No Ray is started here (the cluster tests check the processes a `rafka up`
runs; `test_ray_hooks_gate` the gate)."""
from __future__ import annotations

import os
import subprocess
import sys

from ray._private import node as ray_node
from ray._private import services as ray_services_commands
from ray._private import utils as ray_utils

from rafka.actors.ray_hooks import lean_worker
from rafka.actors.ray_hooks import services as ray_services
from rafka.actors.ray_hooks.services import broker_services_only


class FakeNode:
    """What the replaced hooks touch of Ray's Node."""
    _webui_url = "http://127.0.0.1:8265"


def test_the_hooks_are_replaced_while_ray_starts_and_restored_after():
    originals = (ray_node.Node.start_api_server, ray_node.Node.start_monitor,
                 ray_utils.get_dashboard_dependency_error)
    with broker_services_only() as stood_down:
        assert stood_down == []
        node = FakeNode()
        ray_node.Node.start_api_server(node, include_dashboard=False, raise_on_failure=False)
        assert node._webui_url is None                       # no dashboard URL to advertise
        assert ray_node.Node.start_monitor(node) is None
        assert isinstance(ray_utils.get_dashboard_dependency_error(), ImportError)   # agent --minimal
        build = ray_services_commands._build_python_executable_command_memory_profileable
        assert build("dashboard_agent", "/tmp/session") == [
            sys.executable, "-u", "-m", "rafka.actors.ray_hooks.minimal_dashboard_agent"]
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
    run = subprocess.run([sys.executable, "-m", ray_services.MINIMAL_DASHBOARD_AGENT, str(script), "--node-id=7"],
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


def test_a_ray_without_one_hooked_function_starts_that_part_as_usual(monkeypatch):
    monkeypatch.delattr(ray_node.Node, "start_monitor")
    original = ray_node.Node.start_api_server
    with broker_services_only() as stood_down:
        assert stood_down == ["no_autoscaler_monitor"]
        assert not hasattr(ray_node.Node, "start_monitor")
        assert ray_node.Node.start_api_server is not original   # the other hooks are in place
    assert ray_node.Node.start_api_server is original


def test_the_raylet_starts_its_python_workers_through_a_lean_worker_running_the_worker_ray_named(
        monkeypatch, tmp_path):
    """Ray's `default_worker.py` becomes a script in the session directory that runs that very
    file; another worker path (a Ray started for something else) is passed on as given."""
    started: list[dict] = []

    def start_raylet(redis_address, gcs_address, worker_path, setup_worker_path, session_dir, use_valgrind=False):
        started.append({"worker_path": worker_path, "setup": setup_worker_path, "valgrind": use_valgrind})
        return "process info"

    monkeypatch.setattr(ray_services_commands, "start_raylet", start_raylet)
    default = "/elsewhere/ray/_private/workers/default_worker.py"   # not where this Ray has it: used as given
    with broker_services_only() as stood_down:
        assert stood_down == []
        assert ray_services_commands.start_raylet("r", "g", default, "/setup_worker.py", str(tmp_path),
                                                  use_valgrind=True) == "process info"
        ray_services_commands.start_raylet("r", "g", worker_path="/my/worker.py", setup_worker_path="/s.py",
                                           session_dir=str(tmp_path))
    assert ray_services_commands.start_raylet is start_raylet
    script = tmp_path / lean_worker.SCRIPT_NAME
    assert started == [{"worker_path": str(script), "setup": "/setup_worker.py", "valgrind": True},
                       {"worker_path": "/my/worker.py", "setup": "/s.py", "valgrind": False}]
    assert repr(default) in script.read_text()


def test_the_lean_worker_script_runs_the_worker_it_names_as_python_would(tmp_path):
    worker = tmp_path / "workers" / "default_worker.py"
    worker.parent.mkdir()
    worker.write_text("import sys\nprint(__name__, sys.argv, sys.path[0] == %r, 'ray' in sys.modules)\n"
                      % str(worker.parent))
    script = lean_worker.write_script(str(worker), str(tmp_path))
    run = subprocess.run([sys.executable, script, "--node-ip-address=127.0.0.1"], capture_output=True, text=True,
                         timeout=60)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["__main__", f"['{worker}',", "'--node-ip-address=127.0.0.1']", "True", "False"]


def test_a_raylet_start_without_a_worker_path_leaves_ray_as_it_is(monkeypatch):
    def start_raylet(redis_address, gcs_address):
        return None

    monkeypatch.setattr(ray_services_commands, "start_raylet", start_raylet)
    with broker_services_only() as stood_down:
        assert stood_down == ["lean_worker"]
        assert ray_services_commands.start_raylet is start_raylet


def test_the_log_monitor_starts_through_the_quiet_wrapper_and_nothing_else_does(monkeypatch):
    started: list[tuple[list[str], str]] = []

    def start_ray_process(command, process_type, fate_share, env_updates=None):
        started.append((command, process_type))

    monkeypatch.setattr(ray_services_commands, "start_ray_process", start_ray_process)
    monitor = [sys.executable, "-u", "/site-packages/ray/_private/log_monitor.py", "--logs-dir=/tmp/l"]
    with broker_services_only():
        ray_services_commands.start_ray_process(monitor, "log_monitor", fate_share=True)
        ray_services_commands.start_ray_process([sys.executable, "-u", "/x/gcs.py"], "gcs_server", True)
        ray_services_commands.start_ray_process(["valgrind", *monitor], "log_monitor", True)
    assert started == [
        ([sys.executable, "-u", "-m", ray_services.QUIET_LOG_MONITOR, *monitor[2:]], "log_monitor"),
        ([sys.executable, "-u", "/x/gcs.py"], "gcs_server"),
        (["valgrind", *monitor], "log_monitor")]


def test_the_quiet_log_monitor_changes_rays_idle_poll_only_and_runs_the_script_as_main(tmp_path):
    from ray._private import log_monitor

    from rafka.actors.ray_hooks.quiet_log_monitor import IDLE_POLL_S, quieter

    with open(log_monitor.__file__, encoding="utf-8") as f:
        rays = f.read()
    quiet = quieter(rays)
    assert quiet.count(f"time.sleep({IDLE_POLL_S})") == 1 and "time.sleep(0.1)" not in quiet
    assert quiet.count("\n") == rays.count("\n")   # same lines: tracebacks point at Ray's
    compile(quiet, log_monitor.__file__, "exec")
    assert quieter("time.sleep(0.1)\ntime.sleep(0.1)\n") == "time.sleep(0.1)\ntime.sleep(0.1)\n"   # not Ray's: as is
    script = tmp_path / "log_monitor.py"
    script.write_text("import sys, time\nprint(__name__, sys.argv[1:], sys.path[0] == %r)\n" % str(tmp_path))
    run = subprocess.run([sys.executable, "-u", "-m", ray_services.QUIET_LOG_MONITOR, str(script), "--logs-dir=/l"],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "__main__ ['--logs-dir=/l'] True"
