"""The Overlog AST: frozen, slotted dataclasses; children are tuples.

Every node has a ``span`` that is excluded from equality, so that ``parse(print(p)) == p``.
Derived facts (arities, strata) live in analyses, never in nodes.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, fields, replace
from typing import Union

from overlog.source import Span

INFINITY = math.inf

_span = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True, kw_only=True)
class Var:
    name: str
    span: Span | None = _span


@dataclass(frozen=True, slots=True, kw_only=True)
class Wildcard:
    """``_``: matches anything, binds nothing; each occurrence is distinct."""

    span: Span | None = _span


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class Const:
    """A literal: int, float (``infinity`` is math.inf), str, bool or None (``null``).

    Equality also compares the Python type, so ``true`` != ``1`` and ``1`` != ``1.0``.
    """

    value: int | float | str | bool | None
    span: Span | None = _span

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Const)
            and type(self.value) is type(other.value)
            and self.value == other.value
        )

    def __hash__(self) -> int:
        return hash((type(self.value), self.value))


@dataclass(frozen=True, slots=True, kw_only=True)
class Call:
    """A function call ``f_name(args)``."""

    name: str
    args: tuple[Term, ...]
    span: Span | None = _span


@dataclass(frozen=True, slots=True, kw_only=True)
class BinOp:
    op: str  # + - * / %
    left: Term
    right: Term
    span: Span | None = _span


@dataclass(frozen=True, slots=True, kw_only=True)
class Neg:
    """Unary minus of a non-literal (``-3`` parses as the constant -3)."""

    operand: Term
    span: Span | None = _span


@dataclass(frozen=True, slots=True, kw_only=True)
class ListExpr:
    items: tuple[Term, ...]
    span: Span | None = _span


@dataclass(frozen=True, slots=True, kw_only=True)
class Agg:
    """A head aggregate ``func<Var>`` or ``count<*>`` (``arg`` is None for ``*``).

    ``func`` is the canonical lower-case name; ``spelling`` keeps what the user wrote
    (``a_MIN``) for messages and is not part of equality.
    """

    func: str
    arg: Var | None
    spelling: str = field(default="", compare=False)
    k: int | None = None  # JOL's topk<X, K> and bottomk<X, K>: how many
    span: Span | None = _span


@dataclass(frozen=True, slots=True, kw_only=True)
class Logic:
    """``left && right`` or ``left || right``: booleans, the right one evaluated only when
    the left one does not decide."""

    op: str  # && ||
    left: Term
    right: Term
    span: Span | None = _span


@dataclass(frozen=True, slots=True, kw_only=True)
class Not:
    """``!operand``: the negation of a boolean."""

    operand: Term
    span: Span | None = _span


@dataclass(frozen=True, slots=True, kw_only=True)
class InRange:
    """``value in (low, high]`` and the other three forms: membership of an interval that
    wraps around when ``low`` is not below ``high`` (P2's identifier ring)."""

    value: Term
    low: Term
    high: Term
    low_closed: bool
    high_closed: bool
    span: Span | None = _span


Term = Union[
    Var, Wildcard, Const, Call, BinOp, Neg, ListExpr, Agg, Logic, Not, InRange, "Comparison"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Atom:
    """``name(args)`` (persistent) or ``name[args]`` (event).

    ``locs`` holds the positions of arguments marked ``@``; a well-formed atom has at most one.
    """

    name: str
    args: tuple[Term, ...]
    event: bool = False
    locs: tuple[int, ...] = ()
    span: Span | None = _span

    @property
    def arity(self) -> int:
        return len(self.args)

    @property
    def loc(self) -> Term | None:
        """The location-specified argument, if any."""
        return self.args[self.locs[0]] if self.locs else None


@dataclass(frozen=True, slots=True, kw_only=True)
class Negation:
    """``notin atom``."""

    atom: Atom
    span: Span | None = _span


@dataclass(frozen=True, slots=True, kw_only=True)
class Comparison:
    """A body literal that filters; inside an expression, the comparison's truth (a
    boolean). A body condition that is not a comparison (``A || B``) is held as
    ``condition == true``."""

    op: str  # == != < <= > >=
    left: Term
    right: Term
    span: Span | None = _span


@dataclass(frozen=True, slots=True, kw_only=True)
class Assign:
    """``Var := expr``."""

    var: Var
    expr: Term
    span: Span | None = _span


Literal = Union[Atom, Negation, Comparison, Assign]  # noqa: UP007


@dataclass(frozen=True, slots=True, kw_only=True)
class Rule:
    head: Atom
    body: tuple[Literal, ...]
    name: str | None = None
    delete: bool = False
    span: Span | None = _span


@dataclass(frozen=True, slots=True, kw_only=True)
class Fact:
    atom: Atom
    span: Span | None = _span

    @property
    def values_only(self) -> bool:
        """Every argument a literal (no call, no arithmetic, nothing nested)."""
        return all(type(a) is Const for a in self.atom.args)


@dataclass(frozen=True, slots=True, kw_only=True)
class Materialize:
    """``materialize(name, lifetime, size, keys(k1, ...)).`` Keys are 1-based positions."""

    name: str
    lifetime: int | float  # seconds, or math.inf
    size: int | float  # rows, or math.inf
    keys: tuple[int, ...]
    key_types: tuple[str | None, ...] = ()  # per key: its declared type (P2's `keys(2:str)`)
    span: Span | None = _span


@dataclass(frozen=True, slots=True, kw_only=True)
class Watch:
    """``watch(name).``, or P2's ``watchmod(name, "modes").`` (``modes`` is then a string)."""

    name: str
    modes: str | None = None
    span: Span | None = _span


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class FactRows:
    """Facts of literals of one relation and one shape, one a line, with nothing but blank
    lines between them: the parser's compact form of them (a program of facts loads as fast
    as a CSV file). ``rows`` holds their values (Python values, as in ``Const``); ``places``
    each fact's line, first column, columns after its atom and after its dot, then the
    first and end column of each value. ``facts()`` gives them as Fact nodes (programs are
    compared so: ``Program.__eq__``). The parser keeps built-in relations, several or
    misplaced `@` out."""

    name: str
    event: bool
    locs: tuple[int, ...]  # at most one, on a string
    rows: tuple[tuple, ...]
    places: tuple[tuple[int, ...], ...]
    span: Span | None = _span  # the first fact's

    @property
    def arity(self) -> int:
        return len(self.rows[0])

    def atom_span(self, index: int) -> Span:
        line, column, atom_end = self.places[index][:3]
        return Span(line, column, line, atom_end)

    def facts(self) -> tuple[Fact, ...]:
        found = []
        for row, place in zip(self.rows, self.places, strict=True):
            line, column, atom_end, dot_end = place[:4]
            args = tuple(Const(value=value, span=Span(line, place[4 + 2 * i], line,
                                                      place[5 + 2 * i]))
                         for i, value in enumerate(row))
            atom = Atom(name=self.name, args=args, event=self.event, locs=self.locs,
                        span=Span(line, column, line, atom_end))
            found.append(Fact(atom=atom, span=Span(line, column, line, dot_end)))
        return tuple(found)


Statement = Union[Rule, Fact, FactRows, Materialize, Watch]  # noqa: UP007


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class Program:
    """A parsed program. Equality compares the statements with each FactRows as its facts."""

    statements: tuple[Statement, ...]
    path: str = "<input>"

    @property
    def rules(self) -> tuple[Rule, ...]:
        return tuple(s for s in self.statements if isinstance(s, Rule))

    @property
    def facts(self) -> tuple[Fact, ...]:
        """Every fact, FactRows given one by one (slow for big programs: read the
        statements)."""
        return tuple(f for s in self.statements if isinstance(s, (Fact, FactRows))
                     for f in (s.facts() if isinstance(s, FactRows) else (s,)))

    def expanded(self) -> tuple[Statement, ...]:
        """The statements, each FactRows as its facts."""
        return tuple(f for s in self.statements
                     for f in (s.facts() if isinstance(s, FactRows) else (s,)))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Program) and self.expanded() == other.expanded()

    __hash__ = None  # type: ignore[assignment]


Node = Union[Term, Literal, Statement, Program]  # noqa: UP007


_FIELDS: dict[type, tuple[str, ...]] = {}


def children(node: object) -> Iterator[object]:
    """The direct child nodes of an AST node, in source order (a FactRows: its facts)."""
    if type(node) is FactRows:
        yield from node.facts()
        return
    names = _FIELDS.get(type(node))
    if names is None:
        names = _FIELDS[type(node)] = tuple(
            f.name for f in fields(node) if f.name != "span")  # type: ignore[arg-type]
    for name in names:
        value = getattr(node, name)
        if isinstance(value, tuple):
            yield from (v for v in value if hasattr(v, "__dataclass_fields__"))
        elif hasattr(value, "__dataclass_fields__"):
            yield value


def walk(node: object) -> Iterator[object]:
    """Every node below ``node`` (included), depth first, in source order."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(list(children(current))))


def rebuild(node: object, change: Callable[[object], object]) -> object:
    """``node`` with ``change`` applied to every node below it (included), children first.
    (``change`` returns the node it is given where it changes nothing: then nothing above
    it is copied.)"""
    if type(node) is FactRows or not hasattr(node, "__dataclass_fields__"):
        return change(node)
    changes = {}
    for f in fields(node):  # type: ignore[arg-type]
        if f.name == "span":
            continue
        value = getattr(node, f.name)
        if isinstance(value, tuple):
            new = tuple(rebuild(v, change) if hasattr(v, "__dataclass_fields__") else v
                        for v in value)
            if any(a is not b for a, b in zip(new, value, strict=True)):
                changes[f.name] = new
        elif hasattr(value, "__dataclass_fields__"):
            new = rebuild(value, change)
            if new is not value:
                changes[f.name] = new
    return change(replace(node, **changes) if changes else node)  # type: ignore[type-var]


def variables(node: object) -> Iterator[Var]:
    """Every variable occurrence below ``node``, in source order."""
    return (n for n in walk(node) if isinstance(n, Var))
