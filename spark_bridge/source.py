"""The `rafka` PySpark data source: Spark's Kafka source and sink in Python.

Thin: options are parsed by `options`, offsets planned by `planning`, Kafka asked by
`kafka_lookup` (driver) and read by `fetch` / written by `produce` (executors). Readers
and writers are pickled to Spark's Python workers, so they hold options, never clients.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Iterator, Sequence

import pyarrow as pa
from pyspark.sql.datasource import (DataSource, DataSourceArrowWriter, DataSourceReader,
                                    DataSourceStreamArrowWriter, DataSourceStreamReader, InputPartition,
                                    WriterCommitMessage)
from pyspark.sql.streaming.datasource import (ReadAllAvailable, ReadLimit, ReadMaxRows, ReadMinRows,
                                              SupportsTriggerAvailableNow)
from pyspark.sql.types import StructType

from rafka.common.types import TopicPartition
from rafka.spark_bridge import planning
from rafka.spark_bridge.fetch import read_range
from rafka.spark_bridge.kafka_lookup import KafkaLookup
from rafka.spark_bridge.offsets_json import from_offset_dict, to_offset_dict
from rafka.spark_bridge.options import OptionError, ReadOptions, parse_read_options, parse_write_options
from rafka.spark_bridge.produce import RowWriter
from rafka.spark_bridge.schema import includes_headers, kafka_schema
from rafka.spark_bridge.sink_columns import SinkColumns, sink_columns

log = logging.getLogger(__name__)


class RangePartition(InputPartition):
    """One Spark task: one offset range of one partition (its `value`)."""

    def __init__(self, rng: planning.OffsetRange) -> None:
        super().__init__(rng)


def _read(partition: InputPartition, options: ReadOptions, schema: pa.Schema) -> Iterator[pa.RecordBatch]:
    # With nothing to read Spark still runs one task, with a bare InputPartition(None).
    if not isinstance(partition.value, planning.OffsetRange):
        return iter(())
    return read_range(partition.value, options, schema)


def _arrow_schema(schema: StructType) -> pa.Schema:
    # Exactly the Arrow schema PySpark checks a reader's batches against.
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(schema, timezone="UTC")


def _resolve(lookup: KafkaLookup, options: ReadOptions, spec: planning.OffsetSpec,
             marks: dict[TopicPartition, planning.Watermarks], side: str) -> dict[TopicPartition, int]:
    found = lookup.offsets_for_times(planning.timestamps_to_look_up(spec, marks))
    return planning.resolve_offsets(spec, marks, found, side=side, timestamp_strategy=options.timestamp_strategy)


def _partitions(ranges: Sequence[planning.OffsetRange], options: ReadOptions) -> list[InputPartition]:
    split = planning.split_ranges(ranges, options.min_partitions, options.max_records_per_partition)
    return [RangePartition(r) for r in split]


def _report_loss(problems: list[str], fail: bool) -> None:
    if not problems:
        return
    if fail:
        raise planning.DataLossError(planning.data_loss_message(problems, failing=True))
    log.warning(planning.data_loss_message(problems, failing=False))


class KafkaBatchReader(DataSourceReader):
    """Plans on the driver (one range per partition, split for minPartitions); each task
    reads its range on an executor."""

    def __init__(self, options: ReadOptions, schema: StructType) -> None:
        self.options = options
        self.arrow_schema = _arrow_schema(schema)

    def partitions(self) -> list[InputPartition]:
        with KafkaLookup(self.options) as lookup:
            tps = lookup.partitions(self.options.subscription)
            marks = lookup.watermarks(tps)
            start = _resolve(lookup, self.options, self.options.starting, marks, "starting")
            end = _resolve(lookup, self.options, self.options.ending, marks, "ending")
        ranges, problems = planning.batch_ranges(start, end, marks, self.options.fail_on_data_loss)
        _report_loss(problems, self.options.fail_on_data_loss)
        return _partitions(ranges, self.options)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return _read(partition, self.options, self.arrow_schema)


class KafkaStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Offsets are Spark's KafkaSourceOffset map; new partitions (and, with a pattern, new
    topics) join at their earliest offset; `maxOffsetsPerTrigger` is the default read limit."""

    def __init__(self, options: ReadOptions, schema: StructType) -> None:
        self.options = options
        self.arrow_schema = _arrow_schema(schema)
        self._lookup: KafkaLookup | None = None
        self._target: dict[TopicPartition, int] | None = None  # Trigger.AvailableNow's end
        self._last_trigger = time.monotonic()

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_lookup": None}

    def _client(self) -> KafkaLookup:
        if self._lookup is None:
            self._lookup = KafkaLookup(self.options)
        return self._lookup

    def _watermarks(self) -> dict[TopicPartition, planning.Watermarks]:
        lookup = self._client()
        return lookup.watermarks(lookup.partitions(self.options.subscription))

    def initialOffset(self) -> dict:
        marks = self._watermarks()
        return to_offset_dict(_resolve(self._client(), self.options, self.options.starting, marks, "starting"))

    def prepareForTriggerAvailableNow(self) -> None:
        self._target = {tp: m.latest for tp, m in self._watermarks().items()}

    def getDefaultReadLimit(self) -> ReadLimit:
        if self.options.max_offsets_per_trigger:
            return ReadMaxRows(self.options.max_offsets_per_trigger)
        if self.options.min_offsets_per_trigger:
            return ReadMinRows(self.options.min_offsets_per_trigger)
        return ReadAllAvailable()

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        begin = from_offset_dict(start)
        marks = self._watermarks()
        latest = {tp: m.latest for tp, m in marks.items()}
        if self._target is not None:
            latest = {tp: min(offset, latest.get(tp, offset)) for tp, offset in self._target.items()}
        frm = {tp: begin.get(tp, marks[tp].earliest if tp in marks else 0) for tp in latest}
        if self._target is None and not isinstance(limit, ReadAllAvailable):
            waiting = planning.pending(frm, latest)
            since_ms = int((time.monotonic() - self._last_trigger) * 1000)
            if not planning.admits(waiting, self.options.min_offsets_per_trigger, since_ms,
                                   self.options.max_trigger_delay_ms):
                return start
        if isinstance(limit, ReadMaxRows):
            latest = planning.rate_limit(frm, latest, limit.max_rows)
        if latest != begin:
            self._last_trigger = time.monotonic()
        return to_offset_dict(latest)

    def partitions(self, start: dict, end: dict) -> Sequence[InputPartition]:
        marks = self._watermarks()
        ranges, problems = planning.stream_ranges(from_offset_dict(start), from_offset_dict(end), marks)
        _report_loss(problems, self.options.fail_on_data_loss)
        return _partitions(ranges, self.options)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return _read(partition, self.options, self.arrow_schema)

    def commit(self, end: dict) -> None:
        """Nothing to do: like Spark's Kafka source, offsets live in the checkpoint, not in Kafka."""

    def stop(self) -> None:
        if self._lookup is not None:
            self._lookup.close()
            self._lookup = None


@dataclass
class WriteReport(WriterCommitMessage):
    rows: int


class _ArrowRowsWriter:
    """What a batch and a streaming write task do alike: every batch to Kafka, then wait."""

    def __init__(self, options: dict, schema: StructType) -> None:
        self.options = parse_write_options(options)
        self.columns: SinkColumns = sink_columns({f.name: f.dataType.simpleString() for f in schema.fields},
                                                 self.options.topic)

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriteReport:
        writer = RowWriter(self.options.bootstrap_servers, self.options.client, self.columns, self.options.topic,
                           max_block_ms=self.options.max_block_ms)
        try:
            for batch in iterator:
                writer.write(batch)
        except BaseException:
            writer.abandon()
            raise
        return WriteReport(writer.close())


class KafkaBatchWriter(_ArrowRowsWriter, DataSourceArrowWriter):
    def commit(self, messages: list) -> None:
        log.info("wrote %d rows to Kafka", sum(m.rows for m in messages if m is not None))


class KafkaStreamWriter(_ArrowRowsWriter, DataSourceStreamArrowWriter):
    """Kafka's sink is at-least-once, as Spark's: rows are in Kafka once a task ends."""

    def commit(self, messages: list, batchId: int) -> None:
        log.info("micro-batch %d: wrote %d rows to Kafka", batchId, sum(m.rows for m in messages if m is not None))

    def abort(self, messages: list, batchId: int) -> None:
        log.warning("micro-batch %d aborted; rows written by its finished tasks stay in Kafka", batchId)


class RafkaDataSource(DataSource):
    """`spark.read.format("rafka")`: Spark's Kafka source schema and options."""

    @classmethod
    def name(cls) -> str:
        return "rafka"

    def schema(self) -> str:
        return kafka_schema(includes_headers(self.options))

    def reader(self, schema: StructType) -> DataSourceReader:
        return KafkaBatchReader(parse_read_options(self.options, streaming=False), schema)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return KafkaStreamReader(parse_read_options(self.options, streaming=True), schema)

    def writer(self, schema: StructType, overwrite: bool) -> KafkaBatchWriter:
        _refuse_overwrite(overwrite)
        return KafkaBatchWriter(dict(self.options), schema)

    def streamWriter(self, schema: StructType, overwrite: bool) -> KafkaStreamWriter:
        return KafkaStreamWriter(dict(self.options), schema)


def _refuse_overwrite(overwrite: bool) -> None:
    if overwrite:
        raise OptionError("Save mode Overwrite not allowed for Kafka. Allowed save modes are Append and "
                          "ErrorIfExists (default).")
