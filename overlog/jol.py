"""The JOL dialect (BOOM's Java Overlog), read as the canonical language (docs/dialects.md).

``read_jol(text)`` turns a JOL program into canonical text of the same shape (every line and
column where it was: statements end with ``.`` instead of ``;``, ``1L`` is ``1``, the
``program`` header, imports, ``public`` and the declarations blanked) and the declarations
as canonical statements: ``define(name, keys(...), {Types})`` a table (keys 0-based in JOL),
``define(name, {Types})`` an event relation, ``timer(...)`` a timer event fed by
``periodic``, ``watch(name, flags)`` a watch. ``lower_jol`` then gives the parsed program
its meaning: relations no ``define`` with keys declares are events, as in JOL.

Java interop (``new``, method calls, ``generic<...>``, ``#insert``, ``async`` rules) is a
located error (E111) naming it.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from overlog import syntax as s
from overlog.diagnostics import Diagnostic, Note
from overlog.dialect import as_canonical, mask_strings
from overlog.source import Span, span_at

_HEADER = re.compile(r"\bprogram\s+[A-Za-z_][\w:]*\s*;")
_IMPORT = re.compile(r"\bimport\s+[\w.*]+\s*;")
_PUBLIC = re.compile(r"\bpublic\b")
_DEFINE = re.compile(r"\bdefine\s*\(\s*([A-Za-z_]\w*)\s*,\s*(?:keys\s*\(([^()]*)\)\s*,\s*)?"
                     r"\{([^{}]*)\}\s*\)\s*;")
_TIMER = re.compile(r"\btimer\s*\(\s*([A-Za-z_]\w*)\s*,\s*(physical|logical)\s*,\s*(\w+)\s*,"
                    r"\s*(\w+)\s*,\s*(\w+)\s*\)\s*;")
_WATCH = re.compile(r"\bwatch\s*\(\s*([A-Za-z_]\w*)\s*(?:,\s*([A-Za-z]*)\s*)?\)\s*;")
_LONG = re.compile(r"\b([0-9]+)[lL]\b")
_FUNCTIONS = "write it with the built-in functions, or register a Python function (functions=)"
_JAVA = (  # (pattern, what, what to do instead): Java interop, which the engine cannot run
    (re.compile(r"\bnew\s+[A-Za-z_][\w.]*"), "a Java object (`new`)", _FUNCTIONS),
    (re.compile(r"\b[A-Za-z_]\w*(?:\s*\.\s*[A-Za-z_]\w*)+\s*\("), "a Java method call",
     _FUNCTIONS),
    (re.compile(r"\bgeneric\s*<"), "a `generic<...>` aggregate (Java code)",
     "use count, sum, min, max, avg, set, list, topk or bottomk"),
    (re.compile(r"\b[A-Za-z_]\w*#(?:insert|delete)\b"), "a `#insert`/`#delete` modifier",
     "a rule fires on the rows new in a step; read deletions with a listener"),
    (re.compile(r"\basync\b"), "an `async` rule",
     "drop `async`: a rule triggered by an event writes tables at the end of the step"),
    (re.compile(r"\b(?:stasis|load)\s*\("), "a `stasis`/`load` table",
     "load files with `overlog run -F DIR` or Engine.load"),
)
# JOL watch flags -> P2's watchmod letters (overlog.analysis reads those)
_WATCH_FLAGS = {"a": "i", "i": "i", "e": "d", "d": "d", "r": "c", "s": "s", "t": ""}


@dataclass(frozen=True, slots=True)
class JolProgram:
    text: str  # canonical text, every line and column where it was
    declarations: tuple[s.Statement, ...]  # what define, timer and watch declare


def read_jol(text: str, code: str) -> tuple[JolProgram | None, list[Diagnostic]]:
    """The canonical form of JOL ``text`` (``code``: the text with its comments blanked,
    same lines and columns), or the errors that stop it."""
    blanked = _Blanked(text, code)
    errors = []
    for pattern, what, instead in _JAVA:
        for found in pattern.finditer(blanked.unquoted()):
            errors.append(Diagnostic(
                "E111", f"{what} is not supported: the engine runs no Java",
                blanked.span(found.start(), found.end()), notes=(Note(instead),)))
    if errors:
        return None, errors
    for pattern in (_HEADER, _IMPORT, _PUBLIC):
        for found in pattern.finditer(blanked.unquoted()):
            blanked.blank(found.start(), found.end())
    declarations: list[s.Statement] = []
    for found in _DEFINE.finditer(blanked.unquoted()):
        name, keys, types = found.groups()
        span = blanked.span(found.start(), found.end())
        arity = len([t for t in types.split(",") if t.strip()])
        if keys is not None:  # (without keys: an event relation, as undeclared ones are)
            positions = [k.strip() for k in keys.split(",") if k.strip()]
            bad = [k for k in positions if not k.isdigit() or int(k) >= arity]
            if bad:
                errors.append(Diagnostic(
                    "E203", f"key position {bad[0]} is out of range for `{name}`, which has "
                    f"{arity} field{'s' if arity != 1 else ''} (JOL's positions are 0-based)",
                    span))
                continue
            declarations.append(s.Materialize(
                name=name, lifetime=math.inf, size=math.inf,
                keys=tuple(int(k) + 1 for k in positions), span=span))
        blanked.blank(found.start(), found.end())
    for found in _TIMER.finditer(blanked.unquoted()):
        timer = _timer(*found.groups(), span=blanked.span(found.start(), found.end()))
        if isinstance(timer, Diagnostic):
            errors.append(timer)
        else:
            declarations.append(timer)
        blanked.blank(found.start(), found.end())
    for found in _WATCH.finditer(blanked.unquoted()):
        name, flags = found.groups()
        modes = None if flags is None else "".join(_WATCH_FLAGS.get(f, "") for f in flags)
        if flags is not None and "t" in flags:
            modes = ""
        declarations.append(s.Watch(name=name, modes=modes,
                                    span=blanked.span(found.start(), found.end())))
        blanked.blank(found.start(), found.end())
    if errors:
        return None, errors
    blanked.terminators()
    return JolProgram("".join(blanked.chars), tuple(declarations)), []


def _timer(name: str, kind: str, period: str, ttl: str, delay: str,
           span: Span) -> s.Rule | Diagnostic:
    """``timer(name, physical|logical, Period, TTL, Delay)`` as the rule feeding event
    ``name[Period, TTL, Delay]`` from a ``periodic`` of the period (physical: milliseconds;
    logical: fixpoints, here seconds of the clock) that fires TTL times."""
    values = []
    for text in (period, ttl, delay):
        if text == "infinity":
            values.append(math.inf)
        elif text.isdigit():
            values.append(int(text))
        else:
            return Diagnostic("E215", f"timer `{name}`: period, TTL and delay are whole "
                              "numbers (or `infinity`)", span)
    every, times, wait = values
    if not (0 < every < math.inf) or not times >= 1:
        return Diagnostic("E215", f"timer `{name}` needs a period above 0 and a TTL of at "
                          "least 1", span)
    seconds = every / 1000 if kind == "physical" else every
    head = s.Atom(name=name, args=tuple(s.Const(value=v, span=span) for v in values),
                  event=True, span=span)
    tick = s.Atom(name="periodic", args=(
        s.Wildcard(span=span), s.Wildcard(span=span),
        s.Const(value=seconds, span=span), s.Const(value=times, span=span)),
        event=True, span=span)
    del wait  # the first firing comes one period after the start (docs/dialects.md)
    return s.Rule(head=head, body=(tick,), name=f"timer_{name}", span=span)


class _Blanked:
    """A program's characters, with statements blanked out in place."""

    def __init__(self, text: str, code: str) -> None:
        self.chars = list(text)
        self.code = list(code)
        self.text = text

    def unquoted(self) -> str:
        """The code (no comments), strings masked: what the patterns search."""
        return mask_strings("".join(self.code))

    def blank(self, start: int, end: int) -> None:
        for i in range(start, end):
            if self.chars[i] != "\n":
                self.chars[i] = self.code[i] = " "

    def span(self, start: int, end: int) -> Span:
        return span_at(self.text, start, end)

    def terminators(self) -> None:
        """``;`` ends statements (``.`` in the canonical dialect); ``1L`` is ``1``."""
        unquoted = self.unquoted()
        for i, c in enumerate(unquoted):
            if c == ";":
                self.chars[i] = "."
        for found in _LONG.finditer(unquoted):
            self.chars[found.end() - 1] = " "


def lower_jol(program: s.Program, jol: JolProgram) -> s.Program:
    """The parsed program with JOL's meaning: its declarations added, then as the P2
    dialect's (``overlog.dialect.as_canonical``): relations no ``define`` with keys declares
    are events, and so on."""
    return as_canonical(s.Program(statements=(*jol.declarations, *program.statements),
                                  path=program.path), argmin=False)
