"""AST -> canonical .olg text. ``parse(format_program(p)) == p`` for every program."""

from __future__ import annotations

import contextlib
import math
import re

from overlog import syntax as s
from overlog.limits import int_text
from overlog.values import FALSE, TRUE, RingId

_PRECEDENCE = {"<<": 0, ">>": 0, "+": 1, "-": 1, "*": 2, "/": 2, "%": 2}
_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t", "\r": "\\r"}


def format_value(value: object) -> str:
    """A runtime value as an Overlog literal."""
    if value is None:
        return "null"
    if value is True or value is TRUE:
        return "true"
    if value is False or value is FALSE:
        return "false"
    if isinstance(value, float):
        if math.isinf(value):
            return "infinity" if value > 0 else "-infinity"
        text = repr(value)
        return text if ("." in text or "e" in text or "n" in text) else text + ".0"
    if isinstance(value, int):
        return repr(value) if value.__class__ is RingId else int_text(value)
    if isinstance(value, str):
        return '"' + "".join(_escape(c) for c in value) + '"'
    if isinstance(value, (tuple, list)):
        return "[" + ", ".join(format_value(v) for v in value) + "]"
    return repr(value)


_SPECIAL = re.compile(r'[\\"\x00-\x1f\x7f]')  # what a string literal escapes


def format_values(values: list) -> list[str]:
    """``format_value`` of each of ``values`` (a column of a table: often of one type, which
    this formats in bulk)."""
    kinds = set(map(type, values))
    if kinds == {int}:
        with contextlib.suppress(ValueError):  # past str()'s digits: one by one below
            return list(map(str, values))
    elif kinds == {str}:
        special = _SPECIAL.search
        return [format_value(v) if special(v) else '"' + v + '"' for v in values]
    return list(map(format_value, values))


def plural(n: int, word: str, many: str | None = None) -> str:
    """``1 rule``, ``2 rules``, ``3 strata`` (with ``many``)."""
    return f"{n} {word if n == 1 else many or word + 's'}"


def format_tuple(name: str, row: tuple, event: bool = False) -> str:
    """A stored tuple as Overlog text: ``name(v1, v2)`` or ``name[v1, v2]``."""
    args = ", ".join(format_value(v) for v in row)
    return f"{name}[{args}]" if event else f"{name}({args})"


def _escape(c: str) -> str:
    if c in _ESCAPES:
        return _ESCAPES[c]
    if ord(c) < 0x20 or ord(c) == 0x7F:
        return f"\\u{ord(c):04x}"
    return c


def format_term(term: s.Term, context: int = 0) -> str:
    """A term as text; ``context`` is the binding strength the surrounding operator needs."""
    match term:
        case s.Var(name=name):
            return name
        case s.Wildcard():
            return "_"
        case s.Const(value=value):
            text = format_value(value)
            # A negative literal binds like unary minus: parenthesize it under * / %.
            return f"({text})" if text.startswith("-") and context >= 2 else text
        case s.Call(name=name, args=args):
            return f"{name}({', '.join(format_term(a) for a in args)})"
        case s.BinOp(op=op, left=left, right=right):
            level = _PRECEDENCE[op]
            text = f"{format_term(left, level)} {op} {format_term(right, level + 1)}"
            return f"({text})" if level < context else text
        case s.Neg(operand=operand):
            return f"-{format_term(operand, 3)}"
        case s.ListExpr(items=items):
            return f"[{', '.join(format_term(i) for i in items)}]"
        case s.Agg(func=func, arg=arg, k=k):
            return f"{func}<{'*' if arg is None else arg.name}{'' if k is None else f', {k}'}>"
        # boolean terms: always parenthesized, so that they read back the same anywhere
        case s.Comparison(op=op, left=left, right=right):
            return f"({format_term(left)} {op} {format_term(right)})"
        case s.Logic(op=op, left=left, right=right):
            return f"({format_term(left)} {op} {format_term(right)})"
        case s.Not(operand=operand):
            return f"(!{format_term(operand, 3)})"
        case s.InRange(value=value, low=low, high=high, low_closed=lc, high_closed=hc):
            return (f"({format_term(value)} in {'[' if lc else '('}{format_term(low)}, "
                    f"{format_term(high)}{']' if hc else ')'})")
    raise TypeError(f"not a term: {term!r}")


_BOOLEAN_TERMS = (s.Comparison, s.Logic, s.Not, s.InRange)


def format_atom(atom: s.Atom) -> str:
    args = ", ".join(
        f"{a.func}<@{a.arg.name}>" if i in atom.locs and isinstance(a, s.Agg) and a.arg
        else ("@" if i in atom.locs else "") + format_term(a) for i, a in enumerate(atom.args)
    )
    return f"{atom.name}[{args}]" if atom.event else f"{atom.name}({args})"


def format_literal(literal: s.Literal) -> str:
    match literal:
        case s.Atom():
            return format_atom(literal)
        case s.Negation(atom=atom):
            return f"notin {format_atom(atom)}"
        case s.Comparison(op="==", left=left, right=s.Const(value=right)) \
                if right is True and isinstance(left, _BOOLEAN_TERMS):
            return format_term(left)  # a condition
        case s.Comparison(op=op, left=left, right=right):
            return f"{format_term(left)} {op} {format_term(right)}"
        case s.Assign(var=var, expr=expr):
            return f"{var.name} := {format_term(expr)}"
    raise TypeError(f"not a body literal: {literal!r}")


def format_bound(value: int | float) -> str:
    """A lifetime or size: a number, or `infinity`."""
    return "infinity" if value == math.inf else format_value(value)


def format_statement(statement: s.Statement) -> str:
    match statement:
        case s.Rule(head=head, body=body, name=name, delete=delete):
            prefix = (f"{name} " if name else "") + ("delete " if delete else "")
            literals = ", ".join(format_literal(b) for b in body)
            return f"{prefix}{format_atom(head)} :- {literals}."
        case s.Fact(atom=atom):
            return f"{format_atom(atom)}."
        case s.FactRows():
            return "\n".join(format_statement(fact) for fact in statement.facts())
        case s.Materialize(name=name, lifetime=lifetime, size=size, keys=keys,
                           key_types=types):
            key_text = ", ".join(str(k) + (f":{kind}" if kind else "")
                                 for k, kind in zip(keys, types or (None,) * len(keys),
                                                    strict=True))
            return (f"materialize({name}, {format_bound(lifetime)}, {format_bound(size)}, "
                    f"keys({key_text})).")
        case s.Watch(name=name, modes=None):
            return f"watch({name})."
        case s.Watch(name=name, modes=modes):
            return f"watchmod({name}, {format_value(modes)})."
    raise TypeError(f"not a statement: {statement!r}")


def format_program(program: s.Program) -> str:
    return "".join(format_statement(st) + "\n" for st in program.statements)
