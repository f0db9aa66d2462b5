"""Who imports whom (ARCHITECTURE.md): a module imports from its own layer or below, never up.

Every module of the package is read with `ast` (imports inside functions count too) and
given a layer by the most specific rule below; each import of `rafka.*` must go to a layer
at or below the importer's, and the pure cores that sit side by side must not import each
other. A failure names the importing file, line and module.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# Folders and the package names they install as (pyproject.toml, [tool.setuptools.package-dir]).
FOLDERS = {"rafka": "rafka", "actors": "rafka.actors", "partition_worker": "rafka.partition_worker",
           "net": "rafka.net", "coordinator": "rafka.coordinator", "spark_bridge": "rafka.spark_bridge"}

COMMON, STORAGE, PROTOCOL, COORDINATION, RAY_PLUMBING, ACTORS, TOP = (
    "common", "storage", "protocol", "coordination", "ray plumbing", "actors", "top")
RANK = {COMMON: 1, STORAGE: 2, PROTOCOL: 2, COORDINATION: 3, RAY_PLUMBING: 4, ACTORS: 5, TOP: 6}
# Module prefix -> layer; the longest matching prefix wins.
LAYERS = {
    "rafka": TOP,                                   # the facade, the CLI, the demo
    "rafka.common": COMMON,                         # Kafka's shared vocabulary
    "rafka.partition_worker": STORAGE,              # the storage engine and replica state
    "rafka.net.protocol": PROTOCOL,                 # schemas and codec
    "rafka.coordinator": COORDINATION,              # controller, group, admin and broker decisions
    "rafka.actors": RAY_PLUMBING,                   # naming, placement, supervision
    "rafka.partition_worker.replica_actor": ACTORS,
    "rafka.net": ACTORS,                            # the front end, its server, data plane and handlers
    "rafka.coordinator.coordinator_actor": ACTORS,
    "rafka.coordinator.broker.replica_launcher": ACTORS,
    "rafka.coordinator.broker.death_watch": ACTORS,   # calls on other brokers' coordinator actors
    "rafka.coordinator.broker.frontend_client": ACTORS,   # the Ray calls to the broker's front end
    "rafka.coordinator.broker.broker_status": ACTORS,     # actor names and pids of the broker's processes
    "rafka.spark_bridge": TOP,
}
# Cores of one rank that stay independent of each other.
SIDE_BY_SIDE = {(STORAGE, PROTOCOL), (PROTOCOL, STORAGE)}
# Folders whose every module, actor included, stays clear of others: the storage engine and its
# replica actor know nothing of coordination or of the Kafka front end.
NEVER_IMPORTS = {"rafka.partition_worker": ("rafka.coordinator", "rafka.net")}
# The front end reaches segment files only through these partition_worker modules (closed_log:
# the reads of a dormant replica's closed log).
FRONT_END_DOORS = {"rafka.partition_worker.messages", "rafka.partition_worker.data_channel",
                   "rafka.partition_worker.file_cache", "rafka.partition_worker.segment_reader",
                   "rafka.partition_worker.closed_log"}


def layer_of(module: str) -> str:
    best = max((prefix for prefix in LAYERS if module == prefix or module.startswith(prefix + ".")), key=len)
    return LAYERS[best]


def modules() -> list[tuple[str, Path]]:
    found = []
    for folder, package in FOLDERS.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            parts = path.relative_to(ROOT / folder).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found.append((".".join((package, *parts)), path))
    return found


def imports(module: str, path: Path) -> list[tuple[int, str]]:
    """(line, imported module) for every import of one of our modules."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names if a.name.split(".")[0] == "rafka"]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                target = f"{base}.{node.module}" if node.module else base
            else:
                target = node.module or ""
            if target.split(".")[0] == "rafka":  # `from pkg import name`: name may be a module
                out += [(node.lineno, f"{target}.{a.name}") for a in node.names]
    return out


def violations() -> list[str]:
    problems = []
    for module, path in modules():
        mine = layer_of(module)
        for line, target in imports(module, path):
            theirs = layer_of(target)
            where = f"{path.relative_to(ROOT)}:{line} ({mine}) imports {target} ({theirs})"
            if RANK[theirs] > RANK[mine]:
                problems.append(f"{where}: upward")
            elif (mine, theirs) in SIDE_BY_SIDE:
                problems.append(f"{where}: side-by-side cores must stay independent")
            elif any(module.startswith(src + ".") and target.startswith(banned)
                     for src, bans in NEVER_IMPORTS.items() for banned in bans):
                problems.append(f"{where}: upward, out of its folder's reach")
            elif (mine == ACTORS and module.startswith("rafka.net.") and target.startswith("rafka.partition_worker")
                  and not any(target == d or target.startswith(d + ".") for d in FRONT_END_DOORS)):
                problems.append(f"{where}: the front end reads segment files only through {sorted(FRONT_END_DOORS)}")
    return problems


def test_no_module_imports_a_layer_above_its_own():
    assert violations() == []


def test_every_module_is_seen():
    names = {m for m, _ in modules()}
    assert {"rafka.coordinator.coordinator_actor", "rafka.net.protocol.codec", "rafka.partition_worker.log",
            "rafka.actors.supervisor", "rafka.common.errors", "rafka.cli.main"} <= names


@pytest.mark.parametrize("module, target, problem", [
    ("rafka.actors.supervisor", "rafka.coordinator.coordinator_actor", "upward"),
    ("rafka.partition_worker.replica_actor", "rafka.coordinator.zk.zk_store", "upward"),
    ("rafka.partition_worker.log", "rafka.net.protocol.codec", "side-by-side"),
    ("rafka.common.types", "rafka.partition_worker.log", "upward"),
    ("rafka.net.data_plane", "rafka.partition_worker.segment", "only through"),
], ids=["actors->actor", "replica->coordinator", "storage->protocol", "common->storage", "front-end->segment"])
def test_the_check_catches_each_kind_of_violation(tmp_path, monkeypatch, module, target, problem):
    folder, _, rest = module.removeprefix("rafka.").partition(".")
    fake = tmp_path / folder / (rest.replace(".", "/") + ".py")
    fake.parent.mkdir(parents=True)
    fake.write_text(f"import {target}\n")
    monkeypatch.setattr("tests.unit.test_layers.ROOT", tmp_path)
    monkeypatch.setattr("tests.unit.test_layers.FOLDERS", {folder: f"rafka.{folder}"})
    [found] = violations()
    assert problem in found and target in found
