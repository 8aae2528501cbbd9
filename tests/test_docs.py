"""The docs' tables of built-in functions list exactly the registry's, and their examples
hold: each "`f_x(...)` is `value`" is evaluated in its dialect."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import overlog
from overlog.functions import BUILTIN_FUNCTIONS, P2_FUNCTIONS

DOCS = Path(__file__).parents[1] / "docs"
_ROW = re.compile(r"^\| `(f_\w+)(?:\([^`]*\))?`(?:, `(f_\w+)`)? \|(.*)$", re.M)
_EXAMPLE = re.compile(r"`(f_[^`]*)` is `([^`]*)`")


def _section(path: Path, heading: str) -> str:
    text = path.read_text(encoding="utf-8")
    start = text.index(heading)
    end = text.find("\n#", start + len(heading))
    return text[start:end if end >= 0 else None]


def _tables() -> dict[str, tuple[str, set[str], list[tuple[str, str]]]]:
    found = {}
    for dialect, path, heading in (
            ("canonical", DOCS / "language.md", "## Built-in functions"),
            ("p2", DOCS / "dialects.md", "### Built-in functions")):
        text = _section(path, heading)
        names = {name for row in _ROW.finditer(text) for name in row.groups()[:2] if name}
        found[dialect] = (text, names, _EXAMPLE.findall(text))
    return found


def test_the_tables_list_every_built_in_function() -> None:
    tables = _tables()
    assert tables["canonical"][1] == set(BUILTIN_FUNCTIONS)
    assert tables["p2"][1] == set(P2_FUNCTIONS) - set(BUILTIN_FUNCTIONS)


@pytest.mark.parametrize(("dialect", "call", "value"), [
    (dialect, call, value) for dialect, (_, _, examples) in _tables().items()
    for call, value in examples])
def test_the_examples_hold(dialect: str, call: str, value: str) -> None:
    expected = overlog.parse(f"v({value}).\n").facts[0].atom.args[0]
    engine = overlog.Engine(f"go[1].\nr[V] :- go[_], V := {call}.\n", dialect=dialect)
    seen: list[tuple] = []
    engine.register_listener("r", None, seen.append)
    engine.run()
    assert seen == [(_python(expected),)]


def _python(term: object) -> object:
    if isinstance(term, overlog.syntax.ListExpr):  # type: ignore[attr-defined]
        return tuple(_python(item) for item in term.items)
    return term.value  # type: ignore[attr-defined]


def test_the_api_reference_examples_run() -> None:
    """docs/api.md: every example, as a doctest (exact output)."""
    import doctest

    failed, tried = doctest.testfile(str(DOCS / "api.md"), module_relative=False,
                                     optionflags=doctest.ELLIPSIS, verbose=False)
    assert (failed, tried > 30) == (0, True)
