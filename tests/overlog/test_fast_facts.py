"""Facts standing alone on a line are read without the LALR parser (runs of them as FactRows):
the program, every node's span (FactRows given as their facts), and every error must be what
the parser alone gives."""

from __future__ import annotations

import re
from dataclasses import fields
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from overlog import compile_program, parser
from overlog import syntax as s
from overlog.errors import ParseError, SemanticError
from overlog.parser import parse
from overlog.printer import format_program
from tests.overlog.strategies import programs

ROOT = Path(__file__).parents[2]
PIECES = st.sampled_from(["p(1).", " q[@\"a\", -2, 3.5e2] . ", "r().", "s(X) :-", " t(2).",
                          "u(\"x\\ty\")." , "v(true, null, infinity, - 7).", "// c", "/* c */",
                          "w(1,", " 2).", "x(f_now()).", "y(1). z(2).", "materialize(p, 1, 1,"
                          " keys(1)).", "   ", "q(1) :- p(1).", "k(0x).", "n(" + "9" * 40 + ").",
                          "true(1).", "e[1, 2, 3].", "t(\t1,\t\"é\").", "c(1).\r",
                          "i(-infinity, - infinity).", "s(\"a.b // c\").", "p(1). q(X) :-",
                          "\u00a0p(1).", "d(\"\\n\")."])


def spans(node: object) -> list:
    """Every span below ``node``, depth first (spans are not part of equality)."""
    found = [getattr(node, "span", None)]
    for f in fields(node):  # type: ignore[arg-type]
        value = getattr(node, f.name)
        for child in value if isinstance(value, tuple) else (value,):
            if hasattr(child, "__dataclass_fields__"):
                found += spans(child)
    return found


def same(text: str) -> None:
    try:
        fast = parse(text)
    except ParseError as error:
        fast = error.render()  # type: ignore[assignment]
    try:
        slow = parse(text, fast_facts=False)
    except ParseError as error:
        slow = error.render()  # type: ignore[assignment]
    assert fast == slow, text
    if isinstance(fast, str):
        return
    assert ([spans(st) for st in fast.expanded()]  # type: ignore[union-attr]
            == [spans(st) for st in slow.expanded()]), text  # type: ignore[union-attr]


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(programs)
def test_generated_programs_parse_alike(program) -> None:
    same(format_program(program))


@settings(max_examples=500)
@given(st.lists(st.tuples(PIECES, st.sampled_from(["\n", " ", "\n\n"])), max_size=8))
def test_lines_of_facts_and_statements_parse_alike(pieces) -> None:
    same("".join(piece + end for piece, end in pieces))


def test_goldens_and_examples_parse_alike() -> None:
    paths = [*(ROOT / "programs").glob("*.olg"), *(ROOT / "tests" / "golden").glob("*/*.olg")]
    for path in sorted(paths):
        same(path.read_text(encoding="utf-8"))


def test_runs_of_facts_are_one_node_and_the_same_program() -> None:
    text = ('p(1, "a").\np(2, "b")  .\n\n  p(-3, "c").\np(4.5, "d").\np(5, "e\\n").\n'
            'p(6, "f").\nq[@"n", true].\nq[@"m", null].\np(7, "g").\nr(X) :- p(X, _).\n'
            'p(8, "h").\n')
    program = parse(text)
    runs = [(st.name, st.rows, [place[0] for place in st.places])
            for st in program.statements if isinstance(st, s.FactRows)]
    assert runs == [
        ("p", ((1, "a"), (2, "b"), (-3, "c"), (4.5, "d")), [1, 2, 4, 5]),
        ("p", ((6, "f"),), [7]),  # after a fact the parser reads (an escape)
        ("q", (("n", True), ("m", None)), [8, 9]),
        ("p", ((7, "g"),), [10]),
        ("p", ((8, "h"),), [12])]
    same(text)


def test_a_run_of_facts_is_checked_as_one() -> None:
    """A problem all facts of a run share is reported once, at the first."""
    with pytest.raises(SemanticError) as caught:
        compile_program("q(X) :- p[X].\np(1).\np(2).\np(3, 4).\n", "t.olg")
    assert [(d.code, d.span.line) for d in caught.value.diagnostics] == [
        ("E202", 2), ("E202", 4)]


@settings(max_examples=300)
@given(st.text(alphabet='"/*\\\nab ', max_size=16))
def test_the_comment_scan_is_the_same_on_python_3_10(text: str) -> None:
    """Comments are found past strings by one pattern, possessive on Python 3.11+; the
    pattern Python 3.10 uses instead stops at the same places."""
    older = re.compile(parser.NO_COMMENT_310)
    for i in range(len(text) + 1):
        assert parser._NO_COMMENT.match(text, i).end() == older.match(text, i).end()
