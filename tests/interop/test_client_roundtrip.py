"""Real Kafka clients produce keyed records with headers under every codec and read them back.

Each (client, codec) pair gets its own topic. Besides comparing what the consumer saw
with what was sent, the test reads the stored batches from the broker's log and checks
the codec bits, so a client that silently fell back to no compression fails.
"""
from __future__ import annotations

import shutil

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


def stored_codecs(cluster, topic: str, partition: int = 0) -> dict[str, set[str]]:
    """The compression codec of every batch stored in each replica's log segments, by broker dir."""
    found = {}
    for part_dir in clients.replica_dirs(cluster.data_dir, topic, partition):
        codecs = set()
        for segment in sorted(part_dir.glob("*.log")):
            data = segment.read_bytes()
            codecs |= {Compression(h.compression).name.lower() for h in iter_batches(memoryview(data))}
        found[part_dir.parent.parent.name] = codecs
    return found


# On three brokers, one client per codec and one codec per client (5 runs, not the 20 of the
# whole matrix, which the single broker covers): the codec's bytes are replicated as sent.
REPLICATED = {("kafka-python", None), ("confluent-kafka", "gzip"), ("aiokafka", "snappy"), ("kcat", "lz4"),
              ("confluent-kafka", "zstd")}
PAIRS = [pytest.param(client, codec, id=f"{client}-{codec or 'none'}",
                      marks=[pytest.mark.replicated] if (client, codec) in REPLICATED else [])
         for client in CLIENTS for codec in CODECS]


@pytest.mark.parametrize("client, codec", PAIRS)
def test_client_round_trips_records_under_codec(rafka_cluster, client, codec):
    if client == "kcat" and shutil.which("kcat") is None:
        pytest.fail("kcat is not installed: run `make test`, which installs it")
    topic = f"interop-{client}-{codec or 'none'}"
    bootstrap = rafka_cluster.bootstrap_servers
    clients.create_topic(bootstrap, topic)
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
    # Every replica holds the client's batches, still compressed with its codec.
    assert stored_codecs(rafka_cluster, topic) == {f"broker-{b}": {codec or "none"}
                                                   for b in range(rafka_cluster.broker_count)}
