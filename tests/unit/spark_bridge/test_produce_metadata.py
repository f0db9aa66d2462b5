"""The writer's side of waiting for metadata: librdkafka's errors as Kafka's codes, and a
writer that gets no metadata at all fails after max.block.ms with Kafka's message."""
from __future__ import annotations

import time

import pyarrow as pa
import pytest
from confluent_kafka import KafkaError as CkKafkaError

from rafka.common.errors import ErrorCode
from rafka.common.ports import unused_port
from rafka.spark_bridge.produce import KafkaWriteError, RowWriter, arrow_sink_columns, error_code


@pytest.mark.parametrize("librdkafka,kafka", [
    (CkKafkaError.UNKNOWN_TOPIC_OR_PART, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
    (CkKafkaError.LEADER_NOT_AVAILABLE, ErrorCode.LEADER_NOT_AVAILABLE),
    (CkKafkaError.TOPIC_AUTHORIZATION_FAILED, ErrorCode.TOPIC_AUTHORIZATION_FAILED),
    (CkKafkaError.UNKNOWN, ErrorCode.UNKNOWN_SERVER_ERROR),
    (CkKafkaError._TIMED_OUT, ErrorCode.REQUEST_TIMED_OUT),
    (CkKafkaError._TRANSPORT, ErrorCode.NETWORK_EXCEPTION),
    (CkKafkaError._ALL_BROKERS_DOWN, ErrorCode.NETWORK_EXCEPTION),
], ids=lambda v: v.name if isinstance(v, ErrorCode) else str(v))
def test_librdkafka_errors_become_kafkas_codes(librdkafka: int, kafka: ErrorCode) -> None:
    assert error_code(CkKafkaError(librdkafka)) is kafka


@pytest.mark.parametrize("keyed", [True, False], ids=["keyed", "keyless"])
def test_a_writer_without_metadata_fails_after_max_block_ms_before_queueing_a_row(keyed: bool) -> None:
    batch = pa.RecordBatch.from_pydict({"key": pa.array(["k" if keyed else None], pa.string()), "value": ["v"]})
    writer = RowWriter(f"127.0.0.1:{unused_port()}", {}, arrow_sink_columns(batch.schema, "t"), "t",
                       max_block_ms=400)
    started = time.monotonic()
    with pytest.raises(KafkaWriteError, match=r"^Topic t not present in metadata after 400 ms\. Last error: "):
        writer.write(batch)
    assert 0.4 <= time.monotonic() - started < 5
    assert writer.rows == 0
    writer.abandon()
