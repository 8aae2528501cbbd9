"""A final table held as Arrow columns (``Engine.sorted_table``), printed in bulk: each
distinct value of a column formatted once, in Python, by the same functions that format a
row (and padded there, for the text format), then the lines put together by Arrow and
written a chunk at a time. ``overlog run`` prints a large table several times faster this
way than row by row."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TextIO

from overlog.csvio import format_cells
from overlog.printer import format_values


def write_text(out: TextIO, table: Any, chunk: int) -> None:
    """The text format's lines of a table's rows: two spaces, then the values as Overlog
    writes them, each column but the last padded to its widest, two spaces apart."""
    columns = [_distinct(column, format_values) for column in table.columns]
    for i, (texts, indices) in enumerate(columns[:-1]):
        width = max(map(len, texts))
        columns[i] = ([text.ljust(width) for text in texts], indices)
    _write(out, "", columns, "  ", chunk)


def write_csv(out: TextIO, table: Any, prefix: str | None, chunk: int) -> None:
    """The CSV format's lines of a table's rows: ``prefix`` (if given), then a cell a
    value."""
    _write(out, prefix, [_distinct(column, format_cells) for column in table.columns], ",",
           chunk)


def _distinct(column: Any, formatter: Callable[[list], list[str]]) -> tuple[list[str], Any]:
    """A column as its distinct values' texts (``formatter``'s) and, for each row, the
    index of its value's."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(column, pa.ChunkedArray):
        if pa.types.is_string(column.type):  # (joined, past 2 GiB: 64-bit offsets)
            column = column.cast(pa.large_string())
        column = column.combine_chunks()
    encoded = pc.dictionary_encode(column, null_encoding="encode")  # (a null is a value)
    return formatter(encoded.dictionary.to_pylist()), encoded.indices


def _write(out: TextIO, first: str | None, columns: list[tuple[list[str], Any]],
           separator: str, chunk: int) -> None:
    """Each row's line, ``first`` (if given) and its columns' texts ``separator`` apart,
    and a newline; ``chunk`` lines a write."""
    import pyarrow as pa
    import pyarrow.compute as pc

    def text(value: str) -> Any:
        return pa.scalar(value, pa.large_string())

    texts = [(pa.array(values, pa.large_string()), indices) for values, indices in columns]
    rows = len(columns[0][1])
    for start in range(0, rows, chunk):
        lines = pc.binary_join_element_wise(
            *(() if first is None else (text(first),)),
            *(values.take(indices.slice(start, chunk)) for values, indices in texts),
            text(separator))
        lines = pc.binary_join_element_wise(lines, text("\n"), text(""))
        _, offsets, data = lines.buffers()
        offsets = memoryview(offsets).cast("q")  # (a large string's: 64-bit)
        out.write(str(memoryview(data)[offsets[0]:offsets[len(lines)]], "utf-8"))
