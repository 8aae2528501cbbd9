"""Source text -> ProgramPlan: parse, substitute defines, analyze, plan."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import fields, replace
from typing import Any

from overlog import syntax as s
from overlog.analysis import NativesCheck, analyze
from overlog.diagnostics import Diagnostic
from overlog.dialect import (
    DialectError,
    choose,
    code_of,
    lower_p2,
    p2_unsupported,
    p2_watchmods,
    read_program,
)
from overlog.errors import CompileError, ParseError, SemanticError
from overlog.jol import lower_jol, read_jol
from overlog.limits import recursion_room
from overlog.parser import parse
from overlog.plan import ProgramPlan
from overlog.planner import plan_program
from overlog.preprocess import PreprocessError, preprocess
from overlog.printer import format_value
from overlog.source import Source, Span
from overlog.values import internal

NativeResolver = Callable[[str], Callable]  # "module:function" -> callable, or LookupError


def compile_program(source: str, path: str | None = None,
                    functions: Mapping[str, tuple[int, float]] | None = None, *,
                    defines: Mapping[str, Any] | None = None,
                    natives: NativesCheck | None = None,
                    dialect: str | None = None) -> ProgramPlan:
    """Parse, check and plan an Overlog program.

    Raises ParseError or SemanticError (both CompileError) carrying every diagnostic found.
    ``functions`` names user functions the program may call: name -> (fewest, most)
    arguments. ``defines`` replaces every variable of a given name by a value (``--define``;
    in the P2 dialect, a macro, as cpp's ``-D``). ``natives`` checks that each native
    handler's ``module:function`` resolves (the layer that owns handlers supplies it;
    without it only the form is checked). ``dialect`` is "canonical", "p2" or "jol"; None
    reads the program's pragma or detects it (``overlog.dialect.choose``); an unknown name
    raises DialectError (a ValueError).
    """
    path = path or "<input>"
    for name, value in (defines or {}).items():
        try:
            internal(value)
        except (TypeError, ValueError) as error:
            raise ValueError(f"define {name}: {error}") from None
    try:
        choice = choose(source, dialect)
    except DialectError as error:
        if not error.line:  # the caller's
            raise
        line = Source(source).line_text(error.line)
        raise ParseError([Diagnostic("E112", str(error), Span(
            error.line, 1, error.line, max(1, len(line))))], Source(source, path)) from None
    notes = [note] if (note := choice.note()) is not None else []
    text, origins, jol, watches = source, None, None, []
    if choice.name == "jol":
        jol, errors = read_jol(source, code_of(source, percent=False))
        if jol is None:
            raise ParseError([*notes, *errors], Source(source, path))
        text = jol.text
    if choice.name == "p2":
        macros = {name: format_value(internal(value)) for name, value in (defines or {}).items()}
        try:
            expanded = preprocess(source, path, macros,
                                  lambda included: read_program(included, "p2")[0])
        except PreprocessError as error:
            raise ParseError([error.diagnostic], error.source) from None
        text, origins, defines = expanded.text, expanded.origins, None
        notes += expanded.warnings
        unsupported = p2_unsupported(text)
        if unsupported:
            raise ParseError([*notes, *unsupported], Source(text, path, origins))
        text, watches = p2_watchmods(text)
    try:
        program = parse(text, path, origins=origins)
        if choice.name == "p2" and watches:
            program = s.Program(statements=(*program.statements, *watches), path=path)
        with recursion_room():  # terms may nest MAX_NESTING deep
            if choice.name == "p2":
                program, lowered = lower_p2(program)
                if any(d.is_error for d in lowered):  # (the notes join it below)
                    raise SemanticError(lowered, Source(text, path, origins))
                notes += lowered
            elif jol is not None:
                program = lower_jol(program, jol)
            if defines:
                program = apply_defines(program, defines)
            checked = analyze(program, Source(text, path, origins), functions, natives,
                              choice.name)
    except CompileError as error:  # (with the note saying which dialect it was read as)
        raise type(error)([*notes, *error.diagnostics], error.source) from None
    with recursion_room():
        if notes:
            checked = replace(checked, warnings=(*notes, *checked.warnings))
        return replace(plan_program(checked), dialect=choice)


def apply_defines(program: s.Program, defines: Mapping[str, Any]) -> s.Program:
    """The program with every variable named in ``defines`` replaced by its value."""

    def substitute(node: Any) -> Any:
        if isinstance(node, s.Var):
            return s.Const(value=defines[node.name], span=node.span) \
                if node.name in defines else node
        if isinstance(node, s.Assign):  # the assigned variable is not a value
            return replace(node, expr=substitute(node.expr))
        if isinstance(node, (s.Agg, s.Const, s.Wildcard, s.FactRows)):
            return node
        changes = {}
        for f in fields(node):
            if f.name == "span":
                continue
            value = getattr(node, f.name)
            if isinstance(value, tuple):  # children, or plain data (positions, keys)
                changes[f.name] = tuple(substitute(v) if _is_node(v) else v for v in value)
            elif _is_node(value):
                changes[f.name] = substitute(value)
        return replace(node, **changes)

    return substitute(program)


def natives_check(resolve: NativeResolver) -> NativesCheck:
    """The analysis check of native handler targets that a resolver implies."""

    def check(target: str) -> str | None:
        try:
            resolve(target)
        except LookupError as error:
            return str(error.args[0]) if error.args else str(error)
        return None

    return check


def _is_node(value: Any) -> bool:
    return hasattr(value, "__dataclass_fields__")
