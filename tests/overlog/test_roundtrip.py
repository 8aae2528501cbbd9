"""parse(print(p)) == p for generated programs, and for every golden and example program."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from overlog.errors import ParseError
from overlog.parser import parse
from overlog.printer import format_program
from tests.overlog.strategies import programs

ROOT = Path(__file__).parents[2]


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(programs)
def test_print_then_parse_is_identity(program) -> None:
    text = format_program(program)
    assert parse(text) == program, text


def _parsable_sources() -> list[Path]:
    paths = sorted((ROOT / "programs").glob("*.olg"))
    paths += sorted((ROOT / "tests" / "golden").glob("*/*.olg"))
    result = []
    for path in paths:
        try:
            parse(path.read_text(encoding="utf-8"))
        except ParseError:
            continue
        result.append(path)
    return result


@pytest.mark.parametrize("path", _parsable_sources(), ids=lambda p: p.name)
def test_files_round_trip(path: Path) -> None:
    program = parse(path.read_text(encoding="utf-8"))
    assert parse(format_program(program)) == program
