"""A result row and the one way to render rows: as a fixed-width text table on stdout, or as a
Markdown table in bench/RESULTS.md, from the same cells. A row read back from a results file
(`Row.from_json`) renders as the row that wrote it."""
from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

HEADERS = ("metric", "rafka", "peer/limit", "ratio", "target", "met?")
# Per column: the metric left, the three numbers right, target and verdict left.
_ALIGN: tuple[Callable[[str, int], str], ...] = (str.ljust, str.rjust, str.rjust, str.rjust, str.ljust, str.ljust)


@dataclass(frozen=True)
class Row:
    """One line of a table: a measured figure (`rafka`) against a peer or a limit (`peer`), their
    ratio, and `target`, (op, value) with op '>=' or '<=' on the ratio, judged in `met`.

    A row of paired runs also carries each side's [min, max] range and the median of the
    per-pair ratios (`given_ratio`, with `ratio_given`), which is its ratio; `unjudged`, when
    set, is shown instead of the verdict (too few runs to judge).
    """

    metric: str
    rafka: float | None
    peer: float | None
    unit: str = ""
    target: tuple[str, float] | None = None
    rafka_range: tuple[float, float] | None = None
    peer_range: tuple[float, float] | None = None
    given_ratio: float | None = None
    ratio_given: bool = False
    unjudged: str = ""

    @property
    def ratio(self) -> float | None:
        if self.ratio_given:
            return self.given_ratio
        if self.rafka is None or self.peer is None or self.peer == 0:
            return None
        return self.rafka / self.peer

    @property
    def met(self) -> str:
        if self.target is None:
            return ""
        if self.ratio is None:
            return "n/a"
        if self.unjudged:
            return self.unjudged
        op, value = self.target
        ok = self.ratio >= value if op == ">=" else self.ratio <= value
        return "yes" if ok else "NO"

    def cells(self) -> list[str]:
        target = f"{self.target[0]} {self.target[1]:g}x" if self.target else ""
        ratio = "-" if self.ratio is None else f"{self.ratio:.2f}x"
        return [self.metric, _with_range(self.rafka, self.rafka_range, self.unit),
                _with_range(self.peer, self.peer_range, self.unit), ratio, target, self.met]

    def to_json(self) -> dict[str, Any]:
        return {"metric": self.metric, "rafka": self.rafka, "rafka_range": self.rafka_range, "peer": self.peer,
                "peer_range": self.peer_range, "unit": self.unit, "ratio": self.ratio, "target": self.target,
                "met": self.met, "unjudged": self.unjudged}

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> Row:
        """The row `to_json` wrote (its ratio as written, not divided again)."""
        def pair(value: Sequence[Any] | None) -> tuple[Any, Any] | None:
            return (value[0], value[1]) if value else None
        return cls(doc["metric"], doc.get("rafka"), doc.get("peer"), doc.get("unit", ""), pair(doc.get("target")),
                   pair(doc.get("rafka_range")), pair(doc.get("peer_range")), doc.get("ratio"), True,
                   doc.get("unjudged", ""))


def _with_range(value: float | None, span: tuple[float, float] | None, unit: str) -> str:
    """`value`, then ` [low-high]` when a range is given."""
    text = _fmt(value, unit)
    return f"{text} [{_fmt(span[0], unit)}-{_fmt(span[1], unit)}]" if span and value is not None else text


def _fmt(value: float | None, unit: str) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if unit in ("rec/s", "rows/s", "commits/s"):
        return f"{value:,.0f}"
    if unit in ("MB/s", "MiB", "ms"):
        return f"{value:,.1f}"
    if unit == "s":
        return f"{value:.1f}"
    if unit in ("ratio", "GiB"):
        return f"{value:.2f}"
    return f"{value:g}"


def size_label(size: int) -> str:
    """A record size as the tables name it: "100 B", "1 KiB"."""
    return "1 KiB" if size == 1024 else f"{size} B"


def render_table(rows: Sequence[Row], headers: Sequence[str] = HEADERS) -> str:
    """Rows as a fixed-width text table (numbers right-aligned), for stdout."""
    cells = [list(headers)] + [row.cells() for row in rows]
    widths = [max(len(line[i]) for line in cells) for i in range(len(headers))]
    lines = []
    for n, line in enumerate(cells):
        lines.append("  ".join(_ALIGN[i](c, widths[i]) for i, c in enumerate(line)).rstrip())
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def render_markdown(rows: Sequence[Row], headers: Sequence[str] = HEADERS) -> str:
    """Rows as a Markdown table (numbers right-aligned), for bench/RESULTS.md."""
    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"
    rule = ["---:" if align is str.rjust else "---" for align in _ALIGN[:len(headers)]]
    return "\n".join([line(headers), line(rule)] + [line(row.cells()) for row in rows])
