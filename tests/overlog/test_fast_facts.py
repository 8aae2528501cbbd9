"""Facts standing alone on a line are read without the LALR parser: the program, every node's
span, and every error must be what the parser alone gives."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from overlog.errors import ParseError
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
    assert spans(fast) == spans(slow), text


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
