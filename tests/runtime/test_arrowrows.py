"""Rows from Arrow tables, grouped as the store's indexes group them (runtime/arrowrows.py):
the same rows and buckets as building the indexes row by row, for any columns."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pa = pytest.importorskip("pyarrow")
np = pytest.importorskip("numpy")

from overlog.runtime import arrowrows  # noqa: E402
from overlog.runtime.arrowrows import indexed_rows, shared_rows  # noqa: E402

cells = [st.integers(-3, 3), st.sampled_from(["a", "b", "é", ""]), st.none()]


@st.composite
def tables(draw) -> list[tuple]:
    width = draw(st.integers(1, 3))
    kinds = [draw(st.sampled_from(cells)) for _ in range(width)]
    return draw(st.lists(st.tuples(*kinds), max_size=30))


def _naive(rows, cols) -> dict:
    found: dict = {}
    for row in rows:
        key = row[cols[0]] if len(cols) == 1 else tuple(row[c] for c in cols)
        found.setdefault(key, []).append(row)
    return {key: sorted(bucket, key=repr) for key, bucket in found.items()}


@settings(max_examples=200, deadline=None)
@given(tables(), st.booleans(), st.lists(st.integers(0, 3), min_size=30, max_size=30),
       st.booleans())
def test_indexed_rows_are_the_rows_and_their_buckets(rows, dense, rounds, born) -> None:
    if born:  # (the generations of a table are disjoint: its rounds' new rows)
        rows = list(dict.fromkeys(rows))
    width = len(rows[0]) if rows else 2
    table = pa.table({f"c{i}": [row[i] for row in rows] for i in range(width)}) if rows \
        else pa.table({f"c{i}": pa.array([], pa.int64()) for i in range(width)})
    indexes = [cols for n in range(1, width + 1)
               for cols in itertools.combinations(range(width), n)]
    births = np.array([2 * r for r in rounds[:len(rows)]]) if born else None
    before = arrowrows.DENSE
    arrowrows.DENSE = arrowrows.DENSE if dense else 1  # (one code a group, or lexsort)
    try:
        found, built = indexed_rows(table, None, indexes, births)
    finally:
        arrowrows.DENSE = before
    if born:  # a set a generation, the oldest first
        assert found == [{row for row, r in zip(rows, rounds, strict=False) if r == each}
                         for each in sorted(set(rounds[:len(rows)]))]
    else:
        assert found == ([set(rows)] if rows else []) == \
            ([shared_rows(table)] if rows else [])
    if len(set(rows)) < len(rows):  # a row twice: no indexes
        assert built is None
        return
    assert built is not None and list(built) == indexes
    for cols in indexes:
        assert {key: sorted(bucket, key=repr) for key, bucket in built[cols].items()} == \
            _naive(rows, cols)
        assert all(type(bucket) is list for bucket in built[cols].values())


def test_indexed_rows_convert_their_values_first() -> None:
    table = pa.table({"c0": [1, 2, 1], "c1": ["x", "y", "z"]})
    found, built = indexed_rows(table, lambda kind, value: value * 2, [(0,)])
    assert found == [{(2, "xx"), (4, "yy"), (2, "zz")}]
    assert {key: sorted(bucket) for key, bucket in built[(0,)].items()} == {
        2: [(2, "xx"), (2, "zz")], 4: [(4, "yy")]}


def test_groups_of_many_combinations_sort_64_bit_codes() -> None:
    """Past 65,536 combinations of the key's values, the codes are sorted as 64-bit ints
    (below, as 16-bit ones: a radix sort)."""
    rows = [(i, (7 * i) % 300, i % 2) for i in range(300)]  # 300 x 300 combinations
    table = pa.table({f"c{i}": [row[i] for row in rows] for i in range(3)})
    [found], built = indexed_rows(table, None, [(0, 1), (2,)])
    assert found == set(rows)
    assert {key: sorted(bucket) for key, bucket in built[(0, 1)].items()} == \
        _naive(rows, (0, 1))
    assert {key: sorted(bucket, key=repr) for key, bucket in built[(2,)].items()} == \
        _naive(rows, (2,))
