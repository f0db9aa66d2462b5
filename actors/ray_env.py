"""Starting and joining Ray on loopback only, with broker actors at normal CPU priority.

Importing this module changes nothing in the process (not even `import ray`, which sets
RAY_CLIENT_MODE: `ray` here is imported on first use). What a private Ray needs, rafka sets when
it starts one (`start_local_ray`, and `rafka up` before anything imports Ray):
`use_private_ray_environment` puts `PRIVATE_RAY_ENVIRONMENT` into this process's environment,
which Ray's processes inherit. Ray picks the machine's non-loopback address unless
RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0 is in the environment before `import ray`; a Ray that
rafka joins (`join_ray`) is the user's, and keeps its own environment.
"""
from __future__ import annotations

import logging
import os
import sys
from typing import Any

from rafka.actors.naming import DEFAULT_NAMESPACE
from rafka.common.process_tree import Processes, StopReport, descendants, running, start_time, stop_processes

# What a private Ray runs with, unless this process's environment says otherwise.
PRIVATE_RAY_ENVIRONMENT: dict[str, str] = {
    "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",
    "RAY_USAGE_STATS_ENABLED": "0",
    # Ray starts its workers at nice 15 so that drivers win the CPU. A broker's actors are the
    # service, not background work: at nice 15 on a busy machine (the clients on the same cores)
    # every produce and fetch waits for the scheduler, which caps idempotent producers (five
    # requests in flight) and consumers (one fetch in flight). Workers of the Ray this process
    # starts run at normal priority; a cluster started with `ray start` needs the same variable.
    "RAY_worker_niceness": "0",
    # Ray starts at most as many worker processes at once as there are CPUs, and warns ("... 4x the
    # maximum expected startup concurrency ... tasks blocked in ray.get()?") once 4x that many are
    # alive. A replica actor per partition is this design, not a leak: on 2 cores creating
    # `__consumer_offsets` (8 partitions) printed that warning in the middle of `make demo`. Eight
    # at once start as fast here (measured: 10 actors in 3.1 s at 2, 3.5 s at 16) and move the
    # warning to 32 processes.
    "RAY_worker_maximum_startup_concurrency": "8",

    # rafka reads no Ray metrics. Without their collection the workers export none and the raylet
    # and dashboard agent aggregate none: an idle one-broker cluster measured 619 MiB PSS and 4.1% of
    # a core with it off against 627 MiB and 5.1% with it on (Ray 2.60, 2 cores).
    "RAY_enable_metrics_collection": "0",

    # Ray's log monitor (it forwards the workers' output to the driver: the actors' log lines in
    # `rafka up`'s output) lists the session's log directory ten times a second while it holds
    # fewer than 1,000 files: 0.8% of a core on an idle broker, more than the broker itself. Listed
    # every 2 s instead (a new process's first lines arrive up to 2 s late; none is lost: a file is
    # read from its start once found), it costs 0.3%.
    "RAY_LOG_MONITOR_MANY_FILES_THRESHOLD": "0",
    "LOG_NAME_UPDATE_INTERVAL_S": "2",

    # Observability rafka does not read: the per-handler statistics of every Ray event loop (for
    # Ray's debug_state.txt dumps) and the task events every worker reports each second (`ray list
    # tasks`, the dashboard's task view, timelines). Each worker and the raylet did this work on an
    # idle broker too: about 0.2% of a core in all on an idle one-broker cluster (within the noise of
    # a 30 s reading; two interleaved pairs: 5.87 and 6.43% with them on, 5.57 and 6.30% off).
    "RAY_event_stats": "0",
    "RAY_task_events_report_interval_ms": "0",

    # The raylet's own timers, slower: its resource report to the GCS and its look whether workers
    # should collect garbage (10 times a second each), its memory monitor (4 times a second: it
    # stays, Ray's out-of-memory killer acts within a second instead of 250 ms), and the debug
    # state dump every 10 s (debug_state.txt, for Ray's developers), off. Actors here are placed by
    # node affinity, so a resource view up to a second old changes no placement. Measured on an
    # idle settled one-broker `rafka up`, three interleaved pairs: 5.32-5.42% of a core -> 4.92-5.15%.
    "RAY_raylet_report_resources_period_milliseconds": "1000",
    "RAY_raylet_check_gc_period_milliseconds": "1000",
    "RAY_memory_monitor_refresh_ms": "1000",
    "RAY_debug_dump_period_milliseconds": "0",
}

LOOPBACK = "127.0.0.1"
log = logging.getLogger(__name__)


def __getattr__(name: str) -> Any:
    """`ray_env.ray`: Ray, imported on first use, so that importing this module imports no Ray."""
    if name == "ray":
        import ray

        return ray
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def ray_initialized() -> bool:
    """Whether this process is connected to a Ray, asked without importing Ray (an import
    before `use_private_ray_environment` would miss RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER)."""
    imported = sys.modules.get("ray")
    return imported is not None and imported.is_initialized()


def use_private_ray_environment() -> dict[str, str]:
    """Put `PRIVATE_RAY_ENVIRONMENT` into this process's environment where it holds no value of
    its own, for a Ray this process is about to start; the variables it set. Only when rafka
    starts its own Ray: before `import ray` for RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER to reach this
    process's Ray too (`rafka up` calls it first thing), else at least before `ray.init`, whose
    processes inherit the environment (`start_local_ray`)."""
    added = {name: value for name, value in PRIVATE_RAY_ENVIRONMENT.items() if name not in os.environ}
    os.environ.update(added)
    return added


def start_local_ray(namespace: str = DEFAULT_NAMESPACE, num_cpus: int | None = None) -> None:
    """Start a private Ray on this machine, bound to 127.0.0.1 (never attaches to another Ray),
    in `PRIVATE_RAY_ENVIRONMENT` and with only the Ray services a broker uses
    (`ray_hooks.services.broker_services_only`, which logs one warning if any of its hooks
    stands down)."""
    if ray_initialized():
        return
    use_private_ray_environment()
    import ray

    from rafka.actors.ray_hooks.services import broker_services_only

    with broker_services_only():
        ray.init(
            address="local",
            _node_ip_address=LOOPBACK,
            namespace=namespace,
            include_dashboard=False,
            num_cpus=num_cpus,
            logging_level=logging.WARNING,
            log_to_driver=True,
            configure_logging=False,
        )
    ip = ray.util.get_node_ip_address()
    if ip != LOOPBACK:
        ray.shutdown()
        raise RuntimeError(f"Ray started on {ip}, not on loopback; "
                           "is RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0 set before Ray is first imported?")


def local_ray_processes() -> Processes:
    """Every process of the Ray this driver started (GCS, raylet, dashboard, monitors, and
    below the raylet its agents and workers), pid -> start time; empty when this driver
    joined a Ray instead. Read from the driver's own record of what it started (Ray's node
    object, private: an unknown Ray version gives nothing rather than a wrong answer)."""
    import ray

    node = getattr(ray._private.worker, "_global_node", None)
    found: Processes = {}
    for infos in dict(getattr(node, "all_processes", None) or {}).values():
        for info in infos:
            pid = info.process.pid
            started = start_time(pid)
            if started is not None:
                found[pid] = started
                found.update(descendants(pid))
    return found


def local_session_dir() -> str | None:
    """The session directory of the Ray this driver started (every process of it is started
    with this path on its command line), or None when this driver joined a Ray instead."""
    import ray

    node = getattr(ray._private.worker, "_global_node", None)
    if node is None or not getattr(node, "all_processes", None):
        return None
    return node.get_session_dir_path()


def stop_local_ray(grace_s: float = 5.0) -> StopReport:
    """`ray.shutdown()` of the Ray this driver started, then SIGTERM and SIGKILL to whatever of
    it still runs. Ray gives its raylet one second to stop before killing it, and a raylet
    killed under load (a burst of actor starts) leaves its dashboard and runtime-env agents
    and its workers running, reparented to init, for a minute or more (measured here)."""
    import ray

    processes = local_ray_processes()
    ray.shutdown()
    report = stop_processes(running(processes), grace_s=grace_s)
    if report.stopped:
        log.warning("stopped %d processes Ray left running after its shutdown (%d with SIGKILL)",
                    len(report.stopped), len(report.killed))
    return report


def join_ray(address: str, namespace: str = DEFAULT_NAMESPACE, *, log_to_driver: bool = True) -> None:
    """Join an existing Ray cluster (a `ray up` cluster or Ray-on-Spark); a command that only
    asks the cluster something passes `log_to_driver=False` so actors' logs stay out of its output.
    The Ray and this process's environment are left as they are: that Ray is not rafka's."""
    import ray

    if not ray.is_initialized():
        ray.init(address=address, namespace=namespace, logging_level=logging.WARNING, configure_logging=False,
                 log_to_driver=log_to_driver)


def pin_to_node(node_id: str | None) -> dict:
    """Actor options that place it on `node_id` (hard affinity), or anywhere when None."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    if node_id is None:
        return {}
    return {"scheduling_strategy": NodeAffinitySchedulingStrategy(node_id=node_id, soft=False)}


def current_node_id() -> str:
    import ray

    return ray.get_runtime_context().get_node_id()
