"""Rows from Arrow tables (what DuckDB and Spark hand back) as engine rows in which each
distinct value of a column is one Python object, shared by every row holding it, as in rows
the local backend derives: a value per row would take memory, and make every later pass over
the rows (sorting them, printing them, indexing them) slower for want of locality. With
them, if asked, the store's indexes on them and their generations (``indexed_rows``). And
the other way, a table's rows sorted as an Arrow table, for printing (``sorted_table``)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Collection, Iterable, Sequence
from typing import Any

Row = tuple


def shared_rows(table: Any, convert: Callable[[Any, Any], Any] | None = None) -> set[Row]:
    """``table``'s rows (a pyarrow Table of at least one column); ``convert(column_type,
    value)`` turns each distinct value (Python's, from Arrow; None for a null) into the
    engine's, where given."""
    if not table.num_rows:
        return set()
    return set(zip(*(objects.take(codes).tolist()
                     for objects, codes in _decoded(table, convert)), strict=True))


def indexed_rows(table: Any, convert: Callable[[Any, Any], Any] | None,
                 indexes: Sequence[tuple[int, ...]], born: Any = None,
                 ) -> tuple[list[set[Row]], dict | None]:
    """``shared_rows`` (as a list of that one set), and the rows grouped as a store's hash
    indexes on ``indexes`` (each a tuple of columns) group them: columns -> key (a
    column's value, or a tuple of several) -> list of rows; None if the table holds a row
    twice. Grouped here, from the columns' codes, while the new rows lie in memory in the
    order they were made: grouping them later, one by one, costs several times more
    (decision 61). With ``born`` (a numpy array of ints: each row's generation), the rows
    come as one set a generation, the oldest first (a row twice in one generation is
    found; the caller keeps generations disjoint)."""
    import numpy as np

    if not table.num_rows:
        return [], {cols: {} for cols in indexes}
    decoded = _decoded(table, convert)
    built: dict[tuple[int, ...], dict] = {}
    listed: list[Row] = []
    for cols in indexes:
        order, first = _groups([decoded[c] for c in cols])
        if not listed:  # the rows are made in the first index's order
            decoded = [(objects, codes[order]) for objects, codes in decoded]
            listed = _made(decoded)
            if born is not None:
                born = born[order]
            ordered, keys = listed, [decoded[c] for c in cols]
        else:
            rows = np.fromiter(listed, dtype=object, count=len(listed))  # (tuples as items)
            ordered = rows.take(order).tolist()
            keys = [(decoded[c][0], decoded[c][1][order]) for c in cols]
        starts = np.flatnonzero(first)
        values = [objects.take(codes[starts]).tolist() for objects, codes in keys]
        ends = [*starts[1:].tolist(), len(ordered)]
        built[cols] = {key: ordered[start:end] for key, start, end in zip(
            values[0] if len(cols) == 1 else zip(*values, strict=True), starts.tolist(),
            ends, strict=True)}
    if not listed:
        listed = _made(decoded)
    if born is None:
        found = [set(listed)]
    else:
        generations, dense = np.unique(born, return_inverse=True)
        by = np.argsort(dense.astype(np.uint16) if len(generations) <= 1 << 16 else dense,
                        kind="stable")
        rows = np.fromiter(listed, dtype=object, count=len(listed)).take(by)
        bounds = [0, *np.cumsum(np.bincount(dense)).tolist()]
        found = [set(rows[start:end].tolist()) for start, end in itertools.pairwise(bounds)]
    return found, (built if sum(map(len, found)) == len(listed) else None)


def _made(decoded: list[tuple[Any, Any]]) -> list[Row]:
    return list(zip(*(objects.take(codes).tolist() for objects, codes in decoded),
                    strict=True))


DENSE = 1 << 62  # a group's values get one int64 code below this many combinations


def _groups(columns: list[tuple[Any, Any]]) -> tuple[Any, Any]:
    """An order of the rows grouping them by the values of ``columns`` (``_decoded``'s),
    and, in that order, whether each row starts a group."""
    import numpy as np

    sizes = [len(objects) for objects, _ in columns]
    if math.prod(sizes) < DENSE:  # one code for the values of a group
        key = columns[0][1].astype(np.int64)
        for (_, codes), size in zip(columns[1:], sizes[1:], strict=True):
            key = key * size + codes
        # (a stable sort of 16-bit codes is a radix sort: several times faster)
        order = np.argsort(key.astype(np.uint16) if math.prod(sizes) <= 1 << 16 else key,
                           kind="stable")
        keys = [key[order]]
    else:
        order = np.lexsort([codes for _, codes in reversed(columns)])
        keys = [codes[order] for _, codes in columns]
    first = np.zeros(len(order), dtype=bool)
    first[0] = True
    for key in keys:
        first[1:] |= key[1:] != key[:-1]
    return order, first


def _decoded(table: Any, convert: Callable[[Any, Any], Any] | None) -> list[tuple[Any, Any]]:
    """Each column of ``table`` as its distinct values (engine values, in a numpy array of
    objects) and, for each row, the index of its value there."""
    import numpy as np
    import pyarrow.compute as pc

    columns = []
    for column in table.columns:
        # one dictionary for every chunk (the chunks are not joined: a string column past
        # 2 GiB could not be one array); a null is a value of the dictionary
        chunks = pc.dictionary_encode(column, null_encoding="encode").chunks
        values = chunks[0].dictionary.to_pylist()
        if convert is not None:
            values = [convert(column.type, value) for value in values]
        objects = np.fromiter(values, dtype=object, count=len(values))  # (tuples as items)
        codes = np.concatenate([chunk.indices.to_numpy(zero_copy_only=False)
                                for chunk in chunks])
        columns.append((objects, codes))
    return columns


_PLAIN = frozenset({int, str})


def sorted_batches(batches: Iterable[Any], width: int) -> Any | None:
    """Arrow tables (or record batches) of a relation of ``width`` fields, sorted as
    ``report.sorted_rows`` sorts rows (as Spark and DuckDB hand back a relation they
    hold), as one table with columns c0, c1, ..., when each column holds 64-bit ints alone
    or strings alone, without nulls; else (or no rows) None, having read no batch past the
    first of another kind."""
    import pyarrow as pa

    if not width:
        return None
    names = [f"c{i}" for i in range(width)]
    tables = []
    for each in batches:
        each = each if isinstance(each, pa.Table) else pa.Table.from_batches([each])
        if not all((pa.types.is_int64(column.type) or pa.types.is_string(column.type)
                    or pa.types.is_large_string(column.type)) and not column.null_count
                   for column in each.columns):
            return None
        tables.append(each.rename_columns(names))
    table = pa.concat_tables(tables, promote_options="permissive") if tables else None
    return table if table is not None and table.num_rows else None


def sorted_table(rows: Collection[Row], width: int) -> Any | None:
    """``rows`` (of ``width`` fields) as a pyarrow Table with columns c0, c1, ..., sorted
    as ``report.sorted_rows`` sorts them, when each column holds ints of 64 bits alone or
    strings alone (the common case, sorted here several times faster than in Python); else,
    or without pyarrow, None. Strings sort alike: UTF-8's bytes are in code point order."""
    if not rows or not width or not _PLAIN.issuperset(map(type, next(iter(rows)))):
        return None  # (a first row of another type: no pass over the rows for nothing)
    try:
        import pyarrow as pa
        import pyarrow.compute as pc
    except ImportError:
        return None
    flat = list(itertools.chain.from_iterable(rows))  # (the one pass over the rows)
    arrays = []
    for i in range(width):
        column = flat[i::width]
        kinds = set(map(type, column))  # (exactly: not a bool, a RingId, a subclass)
        kind = pa.int64() if kinds == {int} else pa.large_string() if kinds == {str} \
            else None
        if kind is None:
            return None
        try:
            arrays.append(pa.array(column, type=kind))
        except (OverflowError, UnicodeError, pa.ArrowException):  # past 64 bits; surrogates
            return None
    del flat, column  # (before the sort: memory)
    names = [f"c{i}" for i in range(width)]
    table = pa.Table.from_arrays(arrays, names=names)
    return table.take(pc.sort_indices(table, sort_keys=[(name, "ascending")
                                                        for name in names]))
