"""Real Kafka clients produce keyed records with headers under every codec and read them back.

Each (client, codec) pair gets its own topic. Besides comparing what the consumer saw
with what was sent, the test reads the stored batches from the broker's log and checks
the codec bits, so a client that silently fell back to no compression fails.
"""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.interop import clients
from rafka.partition_worker.record_batch import Compression, iter_batches

RECORDS = 10_000
CODECS = [None, "gzip", "snappy", "lz4", "zstd"]
CLIENTS = {
    "kafka-python": (clients.kafka_python_produce, clients.kafka_python_consume),
    "confluent-kafka": (clients.confluent_produce, clients.confluent_consume),
    "aiokafka": (clients.aiokafka_produce, clients.aiokafka_consume),
    "kcat": (clients.kcat_produce, clients.kcat_consume),
}


def create_topic(bootstrap: str, topic: str, partitions: int = 1) -> None:
    from rafka.net.client import KafkaConnection

    with KafkaConnection.to(bootstrap) as conn:
        body = conn.request(19, 5, {"topics": [{"name": topic, "num_partitions": partitions,
                                                "replication_factor": 1, "assignments": [], "configs": []}],
                                    "timeout_ms": 30000, "validate_only": False})
    assert body["topics"][0]["error_code"] == 0, body


def stored_codecs(cluster, topic: str, partition: int = 0) -> set[str]:
    """The compression codec of every batch stored in the partition's log segments."""
    part_dir = next(Path(cluster.data_dir).glob(f"broker-*/logs/{topic}-{partition}"))
    codecs = set()
    for segment in sorted(part_dir.glob("*.log")):
        data = segment.read_bytes()
        codecs |= {Compression(h.compression).name.lower() for h in iter_batches(memoryview(data))}
    return codecs


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c or "none")
@pytest.mark.parametrize("client", list(CLIENTS))
def test_client_round_trips_records_under_codec(rafka_cluster, client, codec):
    if client == "kcat" and shutil.which("kcat") is None:
        pytest.fail("kcat is not installed: run `make test`, which installs it")
    topic = f"interop-{client}-{codec or 'none'}"
    bootstrap = rafka_cluster.bootstrap_servers
    create_topic(bootstrap, topic)
    produce, consume = CLIENTS[client]
    sent = clients.make_records(RECORDS)
    if client == "kcat":  # kcat gives every record the same headers and stamps the time itself
        sent = [clients.Sent(r.key, r.value, sent[0].headers, r.timestamp_ms) for r in sent]
    produce(bootstrap, topic, sent, codec)

    got = consume(bootstrap, topic, RECORDS)

    assert len(got) == RECORDS
    assert [r.offset for r in got] == list(range(RECORDS))
    assert [(r.key, r.value, r.headers) for r in got] == [(s.key, s.value, s.headers) for s in sent]
    if client != "kcat":
        assert [r.timestamp_ms for r in got] == [s.timestamp_ms for s in sent]
    else:
        assert all(r.timestamp_ms > 0 for r in got)
    assert stored_codecs(rafka_cluster, topic) == {codec or "none"}
