"""Rows from Arrow tables (what DuckDB and Spark hand back) as engine rows in which each
distinct value of a column is one Python object, shared by every row holding it, as in rows
the local backend derives: a value per row would take memory, and make every later pass over
the rows (sorting them, printing them, indexing them) slower for want of locality."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Collection
from typing import Any

Row = tuple


def shared_rows(table: Any, convert: Callable[[Any, Any], Any] | None = None) -> set[Row]:
    """``table``'s rows (a pyarrow Table of at least one column); ``convert(column_type,
    value)`` turns each distinct value (Python's, from Arrow; None for a null) into the
    engine's, where given."""
    import numpy as np
    import pyarrow.compute as pc

    if not table.num_rows:
        return set()
    columns = []
    for column in table.columns:
        # one dictionary for every chunk (the chunks are not joined: a string column past
        # 2 GiB could not be one array); a null is a value of the dictionary
        chunks = pc.dictionary_encode(column, null_encoding="encode").chunks
        values = chunks[0].dictionary.to_pylist()
        if convert is not None:
            values = [convert(column.type, value) for value in values]
        objects = np.fromiter(values, dtype=object, count=len(values))  # (tuples as items)
        indices = np.concatenate([chunk.indices.to_numpy(zero_copy_only=False)
                                  for chunk in chunks])
        columns.append(objects.take(indices).tolist())
    return set(zip(*columns, strict=True))


def sorted_table(rows: Collection[Row], width: int) -> Any | None:
    """``rows`` (of ``width`` fields) as a pyarrow Table with columns c0, c1, ..., sorted
    as ``report.sorted_rows`` sorts them, when each column holds ints of 64 bits alone or
    strings alone (the common case, sorted here several times faster than in Python); else,
    or without pyarrow, None. Strings sort alike: UTF-8's bytes are in code point order."""
    if not rows or not width:
        return None
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
