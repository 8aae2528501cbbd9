"""Dialects: which Overlog a program is written in, and P2's mapped onto the canonical one.

``choose(text, requested)`` decides: the caller's choice (``--dialect``,
``Engine(dialect=...)``), else a pragma on one of the first lines (``// dialect: p2``),
else what the text leaves no doubt about (a JOL ``program name;`` header; P2-only syntax:
a preprocessor directive, ``watchmod``, ``periodic(...)`` in parentheses, ``%%``
comments), else canonical. A canonical program never changes meaning: each sign of P2 is
something the canonical dialect rejects.

``lower_p2(program)`` gives a parsed P2 program its canonical meaning (docs/dialects.md):
every relation that is not materialized is an event, ``periodic(...)`` is the timer event.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from overlog import syntax as s
from overlog.diagnostics import Diagnostic, Note

DIALECTS = ("canonical", "p2", "jol")
PRAGMA_LINES = 5  # a pragma is on one of the first lines

_PRAGMA = re.compile(r"[ \t]*(?://|%%|/\*)[ \t]*dialect[ \t]*[:=][ \t]*([A-Za-z0-9_]*)")
_JOL_HEADER = re.compile(r"\s*program\s+[A-Za-z_][\w:]*\s*;")
_P2_SIGNS = (  # (pattern, what it is): each is an error in the canonical dialect
    (re.compile(r"^[ \t]*#[ \t]*(define|include|ifdef|ifndef)\b", re.M), "`#{0}`"),
    (re.compile(r"^[ \t]*watchmod[ \t]*\(", re.M), "`watchmod`"),
    (re.compile(r"\bperiodic[ \t]*\("), "`periodic(...)` in parentheses"),
    (re.compile(r"^[ \t]*%%", re.M), "`%%` comments"),
)


class DialectError(ValueError):
    """An unknown dialect name (given, or in a pragma)."""


@dataclass(frozen=True, slots=True)
class Choice:
    """The dialect a program is read as, and why (for ``explain`` and the note)."""

    name: str
    how: str  # "given" | "pragma" | "detected" | "default"
    reason: str = ""  # what showed it (detected), or where (pragma)
    line: int = 0  # the line that showed it

    def describe(self) -> str:
        if self.how == "given":
            return f"{self.name} (chosen)"
        if self.how == "pragma":
            return f"{self.name} (its pragma, line {self.line})"
        if self.how == "detected":
            return f"{self.name} (detected: {self.reason}, line {self.line})"
        return self.name

    def note(self) -> Diagnostic | None:
        """A note saying the dialect was detected (None when chosen or canonical)."""
        if self.how != "detected":
            return None
        return Diagnostic(
            "N201", f"read as the {self.name.upper()} dialect: the program uses {self.reason} "
            f"(line {self.line})", severity="note",
            notes=(Note("choose with --dialect canonical|p2|jol, or a first line "
                        f"`// dialect: {self.name}`"),))


def check_name(name: str) -> str:
    if name not in DIALECTS:
        raise DialectError(f"unknown dialect {name!r} (known: {', '.join(DIALECTS)})")
    return name


def choose(text: str, requested: str | None = None) -> Choice:
    """The dialect of ``text``: ``requested`` if given, else its pragma, else detected."""
    if requested is not None:
        return Choice(check_name(requested), "given")
    for number, line in enumerate(text.split("\n", PRAGMA_LINES)[:PRAGMA_LINES], start=1):
        found = _PRAGMA.match(line)
        if found is not None:
            return Choice(check_name(found.group(1)), "pragma", line=number)
    rest = _without_comments(text)
    if _JOL_HEADER.match(rest):
        line = text.count("\n", 0, len(text) - len(rest)) + 1
        return Choice("jol", "detected", "a `program name;` header", line)
    best = None
    for pattern, what in _P2_SIGNS:
        found = pattern.search(text)
        if found is not None and (best is None or found.start() < best[0]):
            best = (found.start(), what.format(*found.groups()))
    if best is not None:
        return Choice("p2", "detected", best[1], text.count("\n", 0, best[0]) + 1)
    return Choice("canonical", "default")


def _without_comments(text: str) -> str:
    """``text`` with leading comments and blank lines taken off (for the JOL header)."""
    while True:
        stripped = text.lstrip()
        if stripped.startswith("//"):
            text = stripped.partition("\n")[2]
        elif stripped.startswith("/*") and "*/" in stripped:
            text = stripped.partition("*/")[2]
        else:
            return stripped


# -- P2 -------------------------------------------------------------------------------------


def _string_plus(node: object) -> object:
    """P2's ``"id" + 5``: a ``+`` with a string written on one side joins text (f_concat, the
    number written as Overlog writes it); a ``+`` of two variables is the canonical one."""
    if isinstance(node, s.BinOp) and node.op == "+" and any(
            _is_text(side) for side in (node.left, node.right)):
        return s.Call(name="f_concat", args=(node.left, node.right), span=node.span)
    return node


def _is_text(term: s.Term) -> bool:
    return (isinstance(term, s.Const) and isinstance(term.value, str)) or (
        isinstance(term, s.Call) and term.name == "f_concat")


def lower_p2(program: s.Program) -> tuple[s.Program, list[Diagnostic]]:
    """A parsed P2 program with its canonical meaning, and the warnings that P2 gives where
    the canonical dialect has errors: atoms of relations no ``materialize`` declares are
    events (``name(...)`` is ``name[...]``); a ``watch`` of a relation the program does
    not use is a warning (W205), not E220."""
    tables = {st.name for st in program.statements if isinstance(st, s.Materialize)}
    used = {node.name for node in s.walk(program) if isinstance(node, s.Atom)} | {
        st.name for st in program.statements if isinstance(st, s.FactRows)}
    warnings = []

    def atom(a: s.Atom) -> s.Atom:
        return a if a.event or a.name in tables else replace(a, event=True)

    def literal(lit: s.Literal) -> s.Literal:
        if isinstance(lit, s.Atom):
            return atom(lit)
        if isinstance(lit, s.Negation):
            return replace(lit, atom=atom(lit.atom))
        return lit

    statements: list[s.Statement] = []
    for st in program.statements:
        st = s.rebuild(st, _string_plus)  # type: ignore[assignment]
        if isinstance(st, s.Rule):
            st = replace(st, head=atom(st.head), body=tuple(literal(b) for b in st.body))
        elif isinstance(st, s.Fact):
            st = replace(st, atom=atom(st.atom))
        elif isinstance(st, s.FactRows) and not st.event and st.name not in tables:
            st = s.FactRows(name=st.name, event=True, locs=st.locs, rows=st.rows,
                            places=st.places, span=st.span)
        elif isinstance(st, s.Watch) and st.name not in used:
            warnings.append(Diagnostic(
                "W205", f"`watch` names relation `{st.name}`, which the program does not use "
                "(nothing to print)", st.span, severity="warning"))
            continue
        statements.append(st)
    return s.Program(statements=tuple(statements), path=program.path), warnings
