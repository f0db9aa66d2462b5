"""Per-session conveniences that Spark's Python data source registry cannot express.

- Spark refuses to register a Python data source as `kafka` (a built-in short name) and,
  with no Kafka jar, fails any `format("kafka")`. A session that opts in gets
  `format("kafka")` mapped to `rafka` on its readers and writers, batch and streaming.
- Spark's Kafka sink accepts the default save mode (ErrorIfExists) as append, but Spark
  refuses that mode for every Python data source; a `rafka` batch writer therefore starts
  in Append mode, which a later `.mode(...)` still overrides.

Both patch `format` on PySpark's four reader/writer classes once, and act only for the
sessions `enable()` was called on (classic PySpark; Spark Connect sessions are untouched).
"""
from __future__ import annotations

from typing import Any, Callable

_ATTRIBUTE = "_rafka_formats"  # on a SparkSession: {name as written: data source name}
_installed = False


def enable(spark: Any, names: dict[str, str]) -> None:
    """Map each `format(name)` of `spark` to its data source name."""
    mapping = dict(getattr(spark, _ATTRIBUTE, {}))
    mapping.update({k.lower(): v for k, v in names.items()})
    setattr(spark, _ATTRIBUTE, mapping)
    _install()


def _install() -> None:
    global _installed
    if _installed:
        return
    from pyspark.sql.readwriter import DataFrameReader, DataFrameWriter
    from pyspark.sql.streaming.readwriter import DataStreamReader, DataStreamWriter

    for cls in (DataFrameReader, DataStreamReader, DataStreamWriter):
        cls.format = _mapped(cls.format, append=False)  # type: ignore[method-assign]
    DataFrameWriter.format = _mapped(DataFrameWriter.format, append=True)  # type: ignore[method-assign]
    _installed = True


def _mapped(original: Callable, append: bool) -> Callable:
    def format(self: Any, source: str) -> Any:  # noqa: A001 - PySpark's method name
        mapping = getattr(getattr(self, "_spark", None), _ATTRIBUTE, {})
        target = mapping.get(source.lower()) if isinstance(source, str) else None
        if target is None:
            return original(self, source)
        result = original(self, target)
        return result.mode("append") if append else result

    format.__doc__ = original.__doc__
    return format
