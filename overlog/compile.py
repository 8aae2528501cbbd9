"""Source text -> checked program: parse, then analyze."""

from __future__ import annotations

from collections.abc import Mapping

from overlog.analysis import CheckedProgram, analyze
from overlog.parser import parse
from overlog.source import Source


def compile_program(source: str, path: str | None = None,
                    functions: Mapping[str, tuple[int, float]] | None = None) -> CheckedProgram:
    """Parse and check an Overlog program.

    Raises ParseError or SemanticError (both CompileError) carrying every diagnostic found.
    ``functions`` names user functions the program may call: name -> (fewest, most) arguments.
    """
    path = path or "<input>"
    program = parse(source, path)
    return analyze(program, Source(source, path), functions)
