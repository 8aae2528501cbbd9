"""Parquet facts in and out (docs/csv.md, "Parquet"): `-F` loads `TABLE.parquet`, `-D` with
`--output-format parquet` writes each table so. Needs pyarrow (the `spark` extra).

A table's fields are the file's columns, by position (written as `c1`, `c2`, ...). A column
has one type, so a field holding values of two types (`1` and `"a"`, or `1` and `1.0`, which
Parquet would merge into a float) cannot be written: the error says which table and field.
Ints are 64-bit; lists are Parquet lists of one item type.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from typing import Any

from overlog.printer import plural


class ParquetError(ValueError):
    """A Parquet file that cannot be read or written as a table (the message says why)."""


def require() -> Any:
    try:
        import pyarrow
        import pyarrow.parquet
    except ImportError:
        raise ParquetError("Parquet needs pyarrow: pip install 'overlog[spark]'") from None
    return pyarrow


def read_rows(path: str, arity: int) -> Iterator[tuple]:
    """The rows of a Parquet file, as Python values (lists as lists)."""
    pa = require()
    try:
        table = pa.parquet.read_table(path)
    except (OSError, pa.ArrowException) as error:
        raise ParquetError(f"{path}: {error}") from None
    if table.num_columns != arity:
        raise ParquetError(f"{path}: {plural(table.num_columns, 'column')}; the table has "
                           f"{plural(arity, 'field')}")
    columns = [column.to_pylist() for column in table.columns]
    return zip(*columns, strict=True) if columns else iter([()] * table.num_rows)


def write_table(path: str, name: str, rows: Iterable[tuple], arity: int) -> None:
    """``rows`` (plain Python values) as a Parquet file at ``path``."""
    pa = require()
    rows = list(rows)
    columns = list(zip(*rows, strict=True)) if rows else [() for _ in range(arity)]
    arrays = []
    for i, column in enumerate(columns):
        kind = _kind(column, f"`{name}` field {i + 1}")
        try:
            arrays.append(pa.array(list(column), type=kind(pa) if kind else pa.null()))
        except (pa.ArrowException, OverflowError) as error:
            raise ParquetError(f"`{name}` field {i + 1}: {error}") from None
    table = pa.table({f"c{i + 1}": array for i, array in enumerate(arrays)}) if arity else \
        pa.table({})
    pa.parquet.write_table(table, path)


def write_arrow(path: str, tables: Iterable[Any]) -> None:
    """Arrow tables of one schema (a table's fields in order) as one Parquet file at
    ``path``, written as they come."""
    pa = require()
    writer = None
    try:
        for table in tables:
            table = table.rename_columns([f"c{i + 1}" for i in range(table.num_columns)])
            if writer is None:
                writer = pa.parquet.ParquetWriter(path, table.schema)
            writer.write_table(table)
    finally:
        if writer is not None:
            writer.close()


_SCALARS = {int: lambda pa: pa.int64(), float: lambda pa: pa.float64(),
            str: lambda pa: pa.string(), bool: lambda pa: pa.bool_()}


def _kind(values: Iterable[Any], where: str) -> Any:
    """The Arrow type (as a function of the pyarrow module) of a column of values, or None
    for only nulls; ParquetError for values of two types."""
    kinds = {v.__class__ for v in values if v is not None}
    if not kinds:
        return None
    if len(kinds) > 1:
        names = sorted(_NAMES.get(k, k.__name__) for k in kinds)
        raise ParquetError(f"{where} holds {' and '.join(names)} values, and a Parquet column "
                           "has one type (write CSV instead)")
    (kind,) = kinds
    if kind is tuple:
        item = _kind((x for v in values if v is not None for x in v), f"{where}'s lists")
        return lambda pa: pa.list_(item(pa) if item else pa.null())
    if kind is int and any(v is not None and not -(2**63) <= v < 2**63 for v in values):
        raise ParquetError(f"{where} holds an int past 64 bits (write CSV instead)")
    if kind is float and any(v is not None and math.isnan(v) for v in values):
        raise ParquetError(f"{where} holds NaN")
    return _SCALARS[kind]


_NAMES = {int: "int", float: "float", str: "string", bool: "boolean", tuple: "list"}
