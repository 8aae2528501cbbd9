"""Backend-neutral rule plans: pure, picklable dataclasses of relational operators.

A rule becomes one plan per *driver*: the body literal whose new (or removed) tuples trigger
it in semi-naive evaluation. A plan is a pipeline of operators applied to each driver tuple;
every later operator reads a relation's full version. Expressions are AST terms.
"""

from __future__ import annotations

from dataclasses import dataclass

from overlog import syntax as s
from overlog.printer import format_term


@dataclass(frozen=True, slots=True)
class Scan:
    """Read the driver: each tuple of ``relation``'s ``version`` ("delta", "removed", or
    "bound" for values of pre-bound variables). Binds ``binds`` (column, var); the other
    columns must equal ``checks`` (column, term)."""

    relation: str
    version: str
    binds: tuple[tuple[int, str], ...]
    checks: tuple[tuple[int, s.Term], ...]


@dataclass(frozen=True, slots=True)
class Join:
    """Index lookup into ``relation`` on ``key`` columns = ``key_terms``; binds ``binds`` and
    checks ``checks`` on the other columns. ``old`` reads the version without the driver's
    delta (the atom comes before the driver in the body), so that a combination of several
    new tuples is derived once, by the variant of its first new atom."""

    relation: str
    key: tuple[int, ...]
    key_terms: tuple[s.Term, ...]
    binds: tuple[tuple[int, str], ...]
    checks: tuple[tuple[int, s.Term], ...]
    old: bool = False


@dataclass(frozen=True, slots=True)
class AntiJoin:
    """``notin``: keep the binding if no tuple of ``relation`` matches on ``key``."""

    relation: str
    key: tuple[int, ...]
    key_terms: tuple[s.Term, ...]


@dataclass(frozen=True, slots=True)
class Filter:
    op: str
    left: s.Term
    right: s.Term


@dataclass(frozen=True, slots=True)
class Let:
    var: str
    expr: s.Term


Operator = Scan | Join | AntiJoin | Filter | Let


@dataclass(frozen=True, slots=True)
class Plan:
    """One way to evaluate a rule: ``driver`` names what triggers it."""

    rule: int
    driver: str  # "pos:i" | "neg:i" (body literal index) | "bound"
    operators: tuple[Operator, ...]
    head: tuple[s.Term, ...]  # head argument terms (aggregate args as their input var)


@dataclass(frozen=True, slots=True)
class RulePlans:
    rule: int
    relation: str  # head relation
    aggregate: tuple[int, str, str | None] | None  # (head position, function, var)
    group: tuple[int, ...]  # head positions outside the aggregate
    triggers: tuple[Plan, ...]  # one per positive atom (and per negated atom for views)
    full: Plan  # no driver: for rederivation and group recomputation with pre-bound vars


def format_operator(op: Operator) -> str:
    def binding(binds, checks) -> str:
        parts = [f"${c}->{v}" for c, v in binds] + [
            f"${c}=={format_term(t)}" for c, t in checks]
        return f" [{', '.join(parts)}]" if parts else ""

    match op:
        case Scan():
            return f"scan {op.relation}.{op.version}{binding(op.binds, op.checks)}"
        case Join():
            key = ", ".join(f"${c}={format_term(t)}" for c, t in zip(op.key, op.key_terms,
                                                                         strict=True))
            version = ".old" if op.old else ""
            return f"join {op.relation}{version} on ({key}){binding(op.binds, op.checks)}"
        case AntiJoin():
            key = ", ".join(f"${c}={format_term(t)}" for c, t in zip(op.key, op.key_terms,
                                                                         strict=True))
            return f"antijoin {op.relation} on ({key})"
        case Filter():
            return (f"filter {format_term(op.left)} {op.op} "
                    f"{format_term(op.right)}")
        case Let():
            return f"let {op.var} := {format_term(op.expr)}"
    raise TypeError(op)


def format_plan(plan: Plan) -> str:
    lines = [f"driver {plan.driver}:"]
    lines += [f"  {format_operator(op)}" for op in plan.operators]
    lines.append(f"  emit ({', '.join(format_term(t) for t in plan.head)})")
    return "\n".join(lines)
