"""The final tables are sorted and formatted a column at a time (fast paths for columns of
one plain type, and Arrow's for tables of 64-bit ints and strings): the output must be
exactly what sorting by the total order of values and formatting row by row gives, for any
mix of values."""

from __future__ import annotations

import io
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from overlog import columnar
from overlog.cli_run import Printer
from overlog.csvio import format_row
from overlog.printer import format_value
from overlog.runtime.arrowrows import sorted_table
from overlog.runtime.report import sorted_rows
from overlog.values import TRUE, internal_row, python_row, sort_key
from tests.goldens import run_cli

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


# columns Arrow sorts and the bulk printer writes: 64-bit ints alone, or strings alone
words = st.one_of(st.text(max_size=3), st.sampled_from(
    ['a"b', "x\\y", "t\tab", "1", "-2", "1.5", "1e5", "true", "null", " s", "s ", "",
     "[1]", "a,b", "l\nf", "é", "日本"]))
int64s = st.one_of(st.integers(-5, 5), st.integers(-(2**63), 2**63 - 1),
                   st.sampled_from([-(2**63), 2**63 - 1]))


@st.composite
def plain_tables(draw) -> list[tuple]:
    width = draw(st.integers(1, 3))
    kinds = [draw(st.sampled_from([int64s, words])) for _ in range(width)]
    rows = draw(st.lists(st.tuples(*kinds), min_size=1, max_size=12))
    return list(dict.fromkeys(rows))


def _final(fmt: str, rows) -> str:
    """The final table of ``rows``: a list of tuples, or an Arrow table."""
    out = io.StringIO()
    printer = Printer(fmt, out, node="n1" if fmt == "csv" else None)
    (printer.final if isinstance(rows, list) else printer.final_table)("t", rows, 3, 1.5)
    return out.getvalue()


@settings(max_examples=300, deadline=None)
@given(plain_tables())
def test_a_table_of_ints_and_strings_is_sorted_and_printed_by_arrow_as_by_rows(rows) -> None:
    table = sorted_table(rows, len(rows[0]))
    ordered = sorted_rows(rows)
    assert table is not None
    assert [tuple(row.values()) for row in table.to_pylist()] == ordered
    for fmt in ("text", "csv"):
        assert _final(fmt, table) == _final(fmt, ordered)
    bulk, by_row = io.StringIO(), io.StringIO()  # (-D's CSV: no prefix)
    columnar.write_csv(bulk, table, None, 5)
    by_row.writelines(format_row(row) + "\n" for row in ordered)
    assert bulk.getvalue() == by_row.getvalue()


@settings(max_examples=200, deadline=None)
@given(tables())
def test_only_tables_of_ints_and_strings_are_sorted_by_arrow(rows) -> None:
    width = len(rows[0]) if rows else 0
    plain = bool(rows) and width > 0 and all(
        all(type(row[i]) is int and -(2**63) <= row[i] < 2**63 for row in rows)
        or all(type(row[i]) is str for row in rows) for i in range(width))
    assert (sorted_table(rows, width) is not None) == plain


def test_what_arrow_would_change_stays_with_rows() -> None:
    assert sorted_table([(2**63,)], 1) is None  # past 64 bits
    assert sorted_table([("\ud800",)], 1) is None  # not Unicode text
    assert sorted_table([(1,), ("a",)], 1) is None  # two types in a column
    assert sorted_table([(TRUE,)], 1) is None  # a boolean
    assert sorted_table([(1.5,)], 1) is None
    assert sorted_table([], 2) is None and sorted_table([()], 0) is None
    table = sorted_table([(2**63 - 1, "b"), (-(2**63), "é"), (-(2**63), "a")], 2)
    assert table.to_pylist() == [{"c0": -(2**63), "c1": "a"}, {"c0": -(2**63), "c1": "é"},
                                 {"c0": 2**63 - 1, "c1": "b"}]


def test_overlog_run_prints_and_writes_tables_of_ints_and_strings_by_arrow(
        tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "p.olg").write_text('p(2, "b"). p(10, "a\\"q"). p(2, "a"). q(1.5). q(1).\n')
    used = []
    write = columnar._write
    monkeypatch.setattr(columnar, "_write", lambda out, first, columns, *rest: (
        used.append([texts for texts, _ in columns]), write(out, first, columns, *rest)))
    code, out, err = run_cli(["run", "p.olg", "-D", "out"], cwd=tmp_path)
    assert (code, out, err) == (0, 'p (3 rows)\n  2   "a"\n  2   "b"\n  10  "a\\"q"\n'
                                   "q (2 rows)\n  1\n  1.5\n", "")
    assert (tmp_path / "out" / "p.csv").read_text() == '2,a\n2,b\n10,"a""q"\n'
    assert (tmp_path / "out" / "q.csv").read_text() == "1\n1.5\n"
    # p by Arrow, printed and written; q (an int and a float) row by row
    assert used == [[["2 ", "10"], ['"a"', '"b"', '"a\\"q"']],  # (distinct, in order)
                    [["2", "10"], ["a", "b", '"a""q"']]]
