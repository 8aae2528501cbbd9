"""Parquet facts (overlog/parquetio.py): tables written and read back are the same, value for
value and type for type; a column of two types is refused with the table and field; `-D`
with `--output-format parquet` then `-F` round-trips through the CLI."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from overlog import parquetio
from overlog.values import internal, python, same
from tests.goldens import run_cli

KINDS = {
    "int": st.integers(-(2**63), 2**63 - 1),
    "float": st.floats(allow_nan=False),
    "string": st.text(max_size=5),
    "boolean": st.booleans(),
    "list": st.lists(st.integers(-5, 5), max_size=3).map(tuple),
}


@st.composite
def tables(draw) -> tuple[int, list[tuple]]:
    kinds = draw(st.lists(st.sampled_from(sorted(KINDS)), min_size=1, max_size=4))
    rows = draw(st.lists(st.tuples(*(st.one_of(st.none(), KINDS[k]) for k in kinds)),
                         max_size=6))
    return len(kinds), rows


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tables())
def test_written_tables_read_back_the_same(tmp_path: Path, table) -> None:
    arity, rows = table
    path = str(tmp_path / "t.parquet")
    parquetio.write_table(path, "t", rows, arity)
    back = [python(internal(row)) for row in parquetio.read_rows(path, arity)]
    assert len(back) == len(rows)
    assert all(same(a, b) for a, b in zip(back, rows, strict=True)), (rows, back)


@pytest.mark.parametrize(("rows", "message"), [
    ([(1,), (1.0,)], "`t` field 1 holds float and int values, and a Parquet column has one "
                     "type (write CSV instead)"),
    ([(1,), ("a",)], "`t` field 1 holds int and string values, and a Parquet column has one "
                     "type (write CSV instead)"),
    ([(2**70,)], "`t` field 1 holds an int past 64 bits (write CSV instead)"),
    ([((1, "a"),)], "`t` field 1's lists holds int and string values, and a Parquet column "
                    "has one type (write CSV instead)"),
])
def test_a_column_of_two_types_is_refused(tmp_path: Path, rows, message) -> None:
    with pytest.raises(parquetio.ParquetError) as caught:
        parquetio.write_table(str(tmp_path / "t.parquet"), "t", rows, 1)
    assert str(caught.value) == message


PROGRAM = ('p(1, 2.5, "a", true, [1, 2]). p(2, -1.0, "b", null, []).\n'
           "q(X, S) :- p(X, _, S, _, _).\n")


def test_output_then_facts_round_trip_through_the_cli(tmp_path: Path) -> None:
    (tmp_path / "prog.olg").write_text(PROGRAM)
    code, _, err = run_cli(["run", "prog.olg", "-D", "out", "--output-format", "parquet"],
                           cwd=tmp_path)
    assert (code, err) == (0, "")
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["p.parquet", "q.parquet"]
    (tmp_path / "empty.olg").write_text("q(X, S) :- p(X, _, S, _, _).\n")
    code, loaded, err = run_cli(["run", "empty.olg", "-F", "out", "--print", "p",
                                 "--format", "jsonl"], cwd=tmp_path)
    assert (code, err) == (0, "")  # no W201 for `p`: -F supplies it
    assert loaded.splitlines()[-2:] == [
        '{"table": "p", "row": [1, 2.5, "a", true, [1, 2]]}',
        '{"table": "p", "row": [2, -1.0, "b", null, []]}']


def test_bad_parquet_facts_are_usage_errors(tmp_path: Path) -> None:
    parquetio.write_table(str(tmp_path / "p.parquet"), "p", [(1, 2)], 2)
    (tmp_path / "prog.olg").write_text("q(X) :- p(X).\n")
    code, out, err = run_cli(["run", "prog.olg", "-F", "."], cwd=tmp_path)
    assert (code, out, err.splitlines()[-1]) == (
        2, "", "overlog: error: ./p.parquet: 2 columns; the table has 1 field")
    code, out, err = run_cli(["run", "prog.olg", "-D", "out", "--output-format", "parquet"],
                             cwd=tmp_path)
    assert code == 0
    (tmp_path / "two.olg").write_text("p(1). p(\"a\").\n")
    code, out, err = run_cli(["run", "two.olg", "-D", "two", "--output-format", "parquet"],
                             cwd=tmp_path)
    assert (code, err) == (2, "overlog: error: -D: `p` field 1 holds int and string values, "
                              "and a Parquet column has one type (write CSV instead)\n")
    assert list((tmp_path / "two").iterdir()) == []
