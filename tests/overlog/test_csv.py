"""CSV facts round-trip: writing rows and reading them back gives the same values, for every
value type, and the format reads as documented (docs/csv.md)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from overlog.csvio import CsvError, format_row, parse_records, read_rows
from overlog.values import same

TRICKY = ["nan", "007", "-3", "2.5", "1e3", "true", "false", "null", "infinity", "-infinity",
          "[1]", "", " x", "x ", "a,b", 'say "hi"', "line\nbreak", "cr\r\nlf", "[", "]", "\\n",
          "é"]
huge = st.sampled_from([5000, -4400]).map(lambda d: d // abs(d) * 10 ** abs(d))  # no repr
scalars = st.one_of(
    st.integers(-(10**30), 10**30), huge, st.floats(allow_nan=False), st.booleans(), st.none(),
    st.text(max_size=6), st.sampled_from(TRICKY))
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3).map(tuple),
                      max_leaves=6)
rows = st.lists(values, min_size=1, max_size=4).map(tuple)


@settings(max_examples=400)
@given(st.lists(rows, min_size=1, max_size=5))
def test_written_rows_read_back_the_same(tmp_path_factory, table) -> None:
    arity = len(table[0])
    table = [row for row in table if len(row) == arity]
    path = tmp_path_factory.mktemp("csv") / "t.csv"
    path.write_text("".join(format_row(row) + "\n" for row in table), encoding="utf-8")
    back = list(read_rows(str(path), arity))
    assert len(back) == len(table)
    assert all(same(a, b) for a, b in zip(back, table, strict=True)), (table, back)


def test_cells_read_as_documented() -> None:
    text = ('1,-2,2.5,1e3,infinity,-infinity,true,false,null,[1, "a,b", [true]],'
            'plain text,"007","two\nlines",""\n\n3,x,\n')
    assert list(parse_records(text)) == [
        (1, [1, -2, 2.5, 1000.0, math.inf, -math.inf, True, False, None, (1, "a,b", (True,)),
             "plain text", "007", "two\nlines", ""]),
        (4, [3, "x", ""])]


@pytest.mark.parametrize(("text", "message"), [
    ('"open', "t.csv:1: unterminated quoted cell"),
    ('"a"b', "t.csv:1: text after a closing quote or bracket"),
    ("[1, 2", "t.csv:1: a list without its closing `]`"),
    ("[1, X]", "t.csv:1: not a list of values: [1, X]"),
    ('1\n[1, "x]', "t.csv:2: unterminated string in a list"),
    ("1\n" + "7" * 100_002, "t.csv:2: an integer of 100,002 digits (the limit is 100,000)"),
    ("-" + "7" * 100_001, "t.csv:1: an integer of 100,001 digits (the limit is 100,000)"),
])
def test_malformed_cells_are_located(text: str, message: str) -> None:
    with pytest.raises(CsvError) as caught:
        list(parse_records(text, "t.csv"))
    assert str(caught.value) == message


def test_a_header_is_skipped_and_arity_checked(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("a,b\n1,2\n3\n", encoding="utf-8")
    rows = read_rows(str(path), 2, header=True)
    assert next(rows) == (1, 2)
    with pytest.raises(CsvError, match=r"t.csv:3: expected 2 fields, got 1"):
        next(rows)


def test_a_string_of_many_digits_is_written_quoted_and_read_back() -> None:
    """A string that would read as an integer past the digit limit is still a string that
    reads as one: quoted, and read back as the string."""
    digits = "7" * 100_002
    assert format_row((digits, "-" + "7" * 100_000)) == f'"{digits}","-{"7" * 100_000}"'
    assert list(parse_records(format_row((digits,)))) == [(1, [digits])]
