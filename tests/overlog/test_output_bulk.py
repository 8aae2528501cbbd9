"""The final tables are sorted and formatted a column at a time (fast paths for columns of
one plain type): the output must be exactly what sorting by the total order of values and
formatting row by row gives, for any mix of values."""

from __future__ import annotations

import io

from hypothesis import given, settings
from hypothesis import strategies as st

from overlog.cli_run import Printer
from overlog.csvio import format_row
from overlog.printer import format_value
from overlog.runtime.report import sorted_rows
from overlog.values import internal_row, python_row, sort_key

huge = st.integers(0, 2).map(lambda k: 10**5000 + k)  # past str()'s digits
scalars = st.one_of(
    st.integers(-5, 5), st.integers(-(10**30), 10**30), huge,
    st.sampled_from([0.5, -2.25, 1.0, 3.0, float("inf")]), st.booleans(), st.none(),
    st.text(max_size=3), st.sampled_from(['a"b', "x\\y", "t\tab", "1", "true", " s"]))
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=2).map(tuple),
                      max_leaves=3)


@st.composite
def tables(draw) -> list[tuple]:
    """Rows of one width whose columns are each of one kind, or mixed."""
    width = draw(st.integers(0, 3))
    kinds = [draw(st.sampled_from([st.integers(-50, 50), st.text(max_size=3),
                                   huge,
                                   st.floats(-10, 10, allow_nan=False), values]))
             for _ in range(width)]
    rows = draw(st.lists(st.tuples(*kinds), max_size=12))
    return list({internal_row(row): None for row in rows})  # a set of rows, as a table


def _reference_sorted(rows: list[tuple]) -> list[tuple]:
    return [python_row(row) for row in sorted(rows, key=lambda r: tuple(map(sort_key, r)))]


@settings(max_examples=300, deadline=None)
@given(tables())
def test_sorted_rows_is_the_total_order(rows) -> None:
    assert sorted_rows(rows) == _reference_sorted(rows)


@settings(max_examples=300, deadline=None)
@given(tables())
def test_bulk_text_and_csv_are_row_by_row(rows) -> None:
    rows = _reference_sorted(rows)
    text, csv = io.StringIO(), io.StringIO()
    Printer("text", text).final("t", rows)
    Printer("csv", csv, node="n1").final("t", rows)
    cells = [[format_value(v) for v in row] for row in rows]
    widths = [max((len(c[i]) for c in cells), default=0) for i in
              range(len(cells[0]) if cells else 0)]
    expected = [f"t ({len(rows)} row{'' if len(rows) == 1 else 's'})"]
    expected += ["  " + "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True))
                 .rstrip() for row in cells]
    assert text.getvalue() == "\n".join(expected) + "\n"
    assert csv.getvalue() == "".join(format_row(("n1", 0, 0.0, "t", "final", *row)) + "\n"
                                     for row in rows)
