"""A pytest plugin for kafka-python's integration suite run against rafka: the topics a test
made are deleted when it ends (`-p rafka_delete_topics`, with this folder on PYTHONPATH).

kafka-python's suite never deletes its topics. On Kafka a partition costs a few files; on
rafka it is, today, a replica process of ~50 MiB (issue 24: dormant replicas). Kept, they
reached ~235 processes and a load average of 80 on 2 cores, and tests that give a brand-new
topic's first delivery 1–5 s failed on the load alone. The aiokafka suite's fixtures
(aiokafka_conftest_tail.py) delete their topics the same way.
"""
from __future__ import annotations

import os

import pytest

INTERNAL = {"__consumer_offsets", "__transaction_state"}


def _bootstrap() -> str | None:
    uri = os.environ.get("KAFKA_URI", "")
    return uri.split("://", 1)[-1] or None


def _admin(bootstrap: str):  # noqa: ANN202 - kafka-python's KafkaAdminClient
    from kafka import KafkaAdminClient

    return KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=30000)


@pytest.fixture(autouse=True)
def _rafka_delete_the_tests_topics():
    bootstrap = _bootstrap()
    if bootstrap is None:
        yield
        return
    try:
        admin = _admin(bootstrap)
        before = set(admin.list_topics())
    except Exception:  # noqa: BLE001 - the broker unreachable: leave the test alone
        yield
        return
    try:
        yield
        made = set(admin.list_topics()) - before - INTERNAL
        if made:
            admin.delete_topics(sorted(made), timeout_ms=30000)
    except Exception as e:  # noqa: BLE001 - cleanup only: never fail the test for it
        print(f"rafka: could not delete topics after the test: {e}")
    finally:
        admin.close()
