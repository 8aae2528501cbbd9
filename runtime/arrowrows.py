"""Rows from Arrow tables (what DuckDB and Spark hand back) as engine rows in which each
distinct value of a column is one Python object, shared by every row holding it, as in rows
the local backend derives: a value per row would take memory, and make every later pass over
the rows (sorting them, printing them, indexing them) slower for want of locality."""

from __future__ import annotations

from collections.abc import Callable
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
