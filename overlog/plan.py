"""The plan IR: the program the runtime runs, as pure, picklable dataclasses.

``compile_program(source) -> ProgramPlan`` (``overlog/compile.py``). A ProgramPlan holds the
relations, the strata, and for every rule each plan variant the fixpoint executes; a backend
(``runtime/local.py``, and ``runtime/spark.py`` for whole strata) only evaluates plans, and
``overlog explain`` prints exactly this structure (``format_program_plan``).

A ``Plan`` is set-at-a-time friendly: a driver (the seed batch the fixpoint hands in: rows
of a relation, values of pre-bound variables, or one empty binding), then joins on key
columns, anti-joins, filters and assignments, then a projection, optionally followed by a
group-aggregate. Expressions are a small typed tree (``Expr``) that a backend translates.

Versions of a relation that a join reads:
- ``full``: the relation now;
- ``old``: full without the rows the fixpoint excludes: the current delta (the atoms before
  the driver in the body, so that a combination of several new tuples is derived once, by
  the variant of its first new atom), or, in a rederivation plan, the stratum's own rows
  born after the row it checks (a support check that cannot go round a cycle);
- ``prior``: full plus the rows removed in this step (DRed's over-deletion reads every
  derivation that existed at any point of the step).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any, Union

from overlog.printer import format_bound, format_value, plural
from overlog.source import Span

if TYPE_CHECKING:
    from overlog.analysis import CheckedProgram, Relation
    from overlog.dialect import Choice

_span = field(default=None, compare=False, repr=False)


class Version(Enum):
    FULL = "full"
    OLD = "old"
    PRIOR = "prior"


# -- expressions ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Var:
    name: str


def _identical(a: Any, b: Any) -> bool:
    if type(a) is not type(b):
        return False
    if type(a) is tuple:
        return len(a) == len(b) and all(map(_identical, a, b))
    if isinstance(a, float):
        return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)
    return a == b


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class Const:
    """A value; equality also compares its Python type (``true`` != ``1``, ``1`` != ``1.0``),
    the types within a list, and the sign of a zero (``0.0`` != ``-0.0``: they print apart)."""

    value: Any

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Const) and _identical(self.value, other.value)

    def __hash__(self) -> int:
        return hash((type(self.value), self.value))


@dataclass(frozen=True, slots=True, kw_only=True)
class Arith:
    op: str  # + - * / %
    left: Expr
    right: Expr
    span: Span | None = _span


@dataclass(frozen=True, slots=True, kw_only=True)
class Negate:
    operand: Expr
    span: Span | None = _span


@dataclass(frozen=True, slots=True, kw_only=True)
class Call:
    function: str
    args: tuple[Expr, ...]
    span: Span | None = _span


@dataclass(frozen=True, slots=True, kw_only=True)
class MakeList:
    items: tuple[Expr, ...]
    span: Span | None = _span


@dataclass(frozen=True, slots=True, kw_only=True)
class Test:
    """A boolean: ``op`` over ``args``. ``&&`` and ``||`` (two booleans, the second evaluated
    only if the first does not decide), ``!`` (one boolean), a comparison ``== != < <= > >=``
    (two values), an interval ``in()``, ``in(]``, ``in[)``, ``in[]`` (value, low, high;
    the interval wraps around when low is not below high), or ``type`` (value, key type,
    the field it is written to: true, or the rule fails; P2's typed keys)."""

    op: str
    args: tuple[Expr, ...]
    span: Span | None = _span


RANGES = ("in()", "in(]", "in[)", "in[]")  # Test ops of intervals: which ends are closed

Expr = Union[Var, Const, Arith, Negate, Call, MakeList, Test]  # noqa: UP007


def expr_vars(expr: Expr) -> set[str]:
    """The variables an expression reads."""
    match expr:
        case Var(name=name):
            return {name}
        case Const():
            return set()
        case Arith(left=left, right=right):
            return expr_vars(left) | expr_vars(right)
        case Negate(operand=operand):
            return expr_vars(operand)
        case Call(args=items) | MakeList(items=items) | Test(args=items):
            return set().union(*(expr_vars(i) for i in items))
    raise TypeError(expr)


def expr_calls(expr: Expr) -> Iterator[Call]:
    """The function calls in an expression, outermost first."""
    match expr:
        case Call(args=args):
            yield expr
            for arg in args:
                yield from expr_calls(arg)
        case Arith(left=left, right=right):
            yield from expr_calls(left)
            yield from expr_calls(right)
        case Negate(operand=operand):
            yield from expr_calls(operand)
        case MakeList(items=items) | Test(args=items):
            for item in items:
                yield from expr_calls(item)


# -- drivers: where a plan's bindings start ------------------------------------------------

Columns = tuple[tuple[int, str], ...]  # (column, variable) bound by a row
Checks = tuple[tuple[int, Expr], ...]  # (column, expression) a row's column must equal


@dataclass(frozen=True, slots=True, kw_only=True)
class Scan:
    """Each seed row of ``relation`` (the fixpoint hands in its delta, its removed rows or
    all its rows): binds ``binds``; the columns in ``checks`` must equal their expression."""

    relation: str
    binds: Columns
    checks: Checks


@dataclass(frozen=True, slots=True, kw_only=True)
class Seed:
    """Each seed tuple holds the values of ``vars``; the fixpoint builds it from a row by
    taking ``columns`` (of a head row for rederivation, of a group key for aggregates)."""

    vars: tuple[str, ...]
    columns: tuple[int, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class Unit:
    """One empty binding: a rule with no positive atom, or a fact's values."""


Driver = Union[Scan, Seed, Unit]  # noqa: UP007


# -- operators -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Join:
    """Rows of ``relation`` (``version``) whose ``key`` columns equal ``key_terms``; binds
    ``binds``, and the columns in ``checks`` must equal their expression."""

    relation: str
    version: Version
    key: tuple[int, ...]
    key_terms: tuple[Expr, ...]
    binds: Columns
    checks: Checks


@dataclass(frozen=True, slots=True, kw_only=True)
class AntiJoin:
    """``notin``: keep the binding if no row of ``relation`` has ``key`` = ``key_terms``."""

    relation: str
    key: tuple[int, ...]
    key_terms: tuple[Expr, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class Filter:
    op: str  # == != < <= > >=
    left: Expr
    right: Expr
    span: Span | None = _span


@dataclass(frozen=True, slots=True, kw_only=True)
class Let:
    var: str
    expr: Expr


Operator = Union[Join, AntiJoin, Filter, Let]  # noqa: UP007


@dataclass(frozen=True, slots=True, kw_only=True)
class Best:
    """What a recursive min/max keeps of its candidate rows: each group's best, by the value
    in column ``position`` (``function``: min or max); the group is every other column."""

    function: str  # min | max
    position: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Project:
    """The output row of each binding; with ``unless_in``, only rows that relation does not
    hold yet (semi-naive insertion into a set-semantics table). The rows are a set, or with
    ``best`` a bag (a recursive min/max's candidates, of which only each group's best is
    kept: no need to find the duplicates first, and a backend may compare each with its
    group's row as it is derived)."""

    terms: tuple[Expr, ...]
    unless_in: str | None = None
    best: Best | None = None

    @property
    def bag(self) -> bool:
        return self.best is not None


@dataclass(frozen=True, slots=True, kw_only=True)
class Aggregate:
    """Group the projected rows (a bag: one per binding) on every column but ``position``
    and aggregate that column with ``function``; one output row per group."""

    function: str  # count | sum | min | max | avg
    position: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Plan:
    """``finds``: the plan finds rows that may exist (over-deletion, rederivation; the
    count-0 probes' group keys) rather than deriving new ones. Its operators may be ordered
    so that an expression meets bindings a guard of the rule (a negation, a comparison)
    keeps from it when rows are derived: a binding on which an expression of operators
    fails (arithmetic, comparisons: the same values fail every time) derived nothing, and
    is passed over, not an error. A failing function call stays an error (a function may
    fail where it did not)."""

    driver: Driver
    operators: tuple[Operator, ...]
    project: Project
    aggregate: Aggregate | None = None
    finds: bool = False


def may_fail(expr: Expr, safe: frozenset[str] = frozenset()) -> bool:
    """Whether evaluating ``expr`` can fail: arithmetic (by zero, on values of the wrong
    kind), a comparison of values that do not compare, a function on what it does not take
    (not those named in ``safe``, whose arguments still count); not a variable, a constant,
    nor a list of such."""
    match expr:
        case Arith() | Negate() | Test():
            return True
        case Call(function=function, args=args):
            return function not in safe or any(may_fail(a, safe) for a in args)
        case MakeList(items=items):
            return any(may_fail(i, safe) for i in items)
    return False


def comparison_may_fail(op: str, left: Expr, right: Expr,
                        safe: frozenset[str] = frozenset()) -> bool:
    """Whether testing ``left op right`` can fail: an ordering (values that do not
    compare), or (in)equality of terms that may fail themselves (``may_fail``)."""
    return op not in ("==", "!=") or may_fail(left, safe) or may_fail(right, safe)


def plan_relations(plan: Plan) -> set[str]:
    """The relations a plan reads (its driver's and its joins' and anti-joins')."""
    found = {plan.driver.relation} if isinstance(plan.driver, Scan) else set()
    return found | {op.relation for op in plan.operators if isinstance(op, (Join, AntiJoin))}


def plan_exprs(plan: Plan) -> list[Expr]:
    """Every expression a plan evaluates: its projection, checks, join keys, filters and
    assignments."""
    found: list[Expr] = list(plan.project.terms)
    if isinstance(plan.driver, Scan):
        found += [expr for _, expr in plan.driver.checks]
    for op in plan.operators:
        match op:
            case Join(key_terms=terms, checks=checks):
                found += [*terms, *(expr for _, expr in checks)]
            case AntiJoin(key_terms=terms):
                found += terms
            case Filter(left=left, right=right):
                found += [left, right]
            case Let(expr=expr):
                found.append(expr)
    return found


# -- rules and the program -----------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Trigger:
    """A body literal whose changes fire the rule. ``insert`` runs on the rows ``relation``
    gained (lost, when ``negated``); ``delete`` is DRed's over-deletion, on the rows it lost
    (gained, when ``negated``): views only."""

    relation: str
    literal: int  # position in the body, 0-based
    negated: bool
    insert: Plan
    delete: Plan | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Aggregation:
    """A head aggregate. The triggers project group keys (the head's ``group`` columns);
    ``groups`` recomputes groups: seeded with group keys (driver ``Seed``), or over the whole
    rule (driver ``Unit``, or ``Scan`` handed all rows of its relation) when a group column is
    an expression (``every`` evaluates every group, from all rows of the first atom).
    ``zero`` (``count`` triggered by events, P2): per event atom, the group keys of the
    step's event bindings, which get a count of 0 when nothing matched."""

    function: str
    position: int  # head column of the aggregate
    group: tuple[int, ...]  # head columns grouped on
    groups: Plan
    zero: tuple[Plan, ...] = ()
    # for a step in which all rows of an atom's relation are new (so every group is touched)
    every: Plan | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class RulePlan:
    index: int  # position among the program's rules
    name: str | None
    kind: str  # view | state | event | delete (overlog.analysis.strata)
    remote: bool  # the head is sent to another address
    stratum: int | None  # None: deferred (after the fixpoint; written at commit or sent)
    head: str
    head_event: bool
    location: int | None  # the head's location column
    triggers: tuple[Trigger, ...]
    start: Plan | None = None  # no positive atom: fires at the first step
    rederive: Plan | None = None  # views: which removed head rows still have a derivation
    aggregation: Aggregation | None = None
    text: str = field(default="", compare=False)  # the rule as source text
    span: Span | None = _span

    @property
    def label(self) -> str:
        return self.name or f"rule {self.index + 1}"

    @property
    def deferred(self) -> bool:
        return self.stratum is None

    def plans(self) -> Iterator[tuple[str, Plan]]:
        """Every plan of the rule with what it is for, in a fixed order."""
        for trigger in self.triggers:
            yield describe_trigger(trigger, False), trigger.insert
            if trigger.delete is not None:
                yield describe_trigger(trigger, True), trigger.delete
        if self.start is not None:
            yield "at the first step (no positive atom)", self.start
        if self.rederive is not None:
            yield "rederive", self.rederive
        if self.aggregation is not None:
            yield "recompute groups", self.aggregation.groups
            if self.aggregation.every is not None:
                yield "every group (all rows of a relation new)", self.aggregation.every
            for plan in self.aggregation.zero:
                relation = plan.driver.relation  # type: ignore[union-attr]
                yield f"count 0 for {relation} events that match nothing", plan


@dataclass(frozen=True, slots=True, kw_only=True)
class StratumPlan:
    index: int
    relations: tuple[str, ...]
    rules: tuple[int, ...]  # rule indexes
    # a recursive min/max: its aggregate rules' triggers emit candidate head rows, of which
    # the fixpoint keeps each group's best
    monotone: bool = False
    # ... where a group's best row never rests on the group alone: a removal that took a
    # worse candidate spares the group (overlog/analysis/monotone.py, STRICT)
    strict: bool = False
    # the relations its views both derive and read: the fixpoint keeps when their rows were
    # born, and over-deletion checks a row's support from older rows before removing it
    own: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True, kw_only=True)
class FactPlan:
    """A fact with expressions (calls, arithmetic): evaluated when the engine loads it."""

    relation: str
    event: bool
    location: int | None
    values: tuple[Expr, ...]
    span: Span | None = _span


@dataclass(frozen=True, slots=True, kw_only=True)
class FactRowsPlan:
    """Facts of values of one relation (a FactRows, or one fact): their rows, in the engine's
    values."""

    relation: str
    event: bool
    location: int | None
    rows: tuple[tuple, ...]
    span: Span | None = _span  # the first fact's
    lines: tuple[int, ...] = field(default=(), compare=False)  # each row's line, if known


@dataclass(frozen=True, slots=True, kw_only=True)
class NativeHandler:
    """``registerNativeEventHandler[relation, target]``: ``target`` is "module:function"."""

    relation: str
    target: str
    span: Span | None = _span


@dataclass(frozen=True, slots=True, kw_only=True)
class ProgramPlan:
    path: str
    relations: Mapping[str, Relation]
    rules: tuple[RulePlan, ...]
    strata: tuple[StratumPlan, ...]
    facts: tuple[FactPlan | FactRowsPlan, ...]  # in program order
    timers: tuple[tuple[float, float], ...]  # (period, count) of each distinct periodic
    handlers: tuple[NativeHandler, ...]
    watched: tuple[str, ...]
    calls: tuple[tuple[str, Span | None], ...]  # calls of functions that are not built in
    checked: CheckedProgram = field(compare=False, repr=False)  # for diagnostics and tools
    dialect: Choice | None = field(default=None, compare=False)  # what it was read as, and why

    @property
    def deferred(self) -> tuple[RulePlan, ...]:
        return tuple(rule for rule in self.rules if rule.deferred)

    def plans(self) -> Iterator[tuple[RulePlan, str, Plan]]:
        for rule in self.rules:
            for purpose, plan in rule.plans():
                yield rule, purpose, plan


def describe_trigger(trigger: Trigger, deleting: bool) -> str:
    gains = deleting == trigger.negated
    what = f"when {trigger.relation} {'gains' if gains else 'loses'} rows"
    where = f"{'notin, ' if trigger.negated else ''}literal {trigger.literal + 1}"
    return f"{what} ({where}{', over-deletion' if deleting else ''})"


# -- printing ------------------------------------------------------------------------------

_PRECEDENCE = {"<<": 0, ">>": 0, "+": 1, "-": 1, "*": 2, "/": 2, "%": 2}


def format_expr(expr: Expr, context: int = 0) -> str:
    match expr:
        case Var(name=name):
            return name
        case Const(value=value):
            return format_value(value)
        case Arith(op=op, left=left, right=right):
            level = _PRECEDENCE[op]
            text = f"{format_expr(left, level)} {op} {format_expr(right, level + 1)}"
            return f"({text})" if level < context else text
        case Negate(operand=operand):
            return f"-{format_expr(operand, 3)}"
        case Call(function=function, args=args):
            return f"{function}({', '.join(format_expr(a) for a in args)})"
        case MakeList(items=items):
            return f"[{', '.join(format_expr(i) for i in items)}]"
        case Test(op="!", args=(operand,)):
            return f"(!{format_expr(operand, 3)})"
        case Test(op="type", args=(value, kind, _)):
            return f"({format_expr(value)} is {kind.value})"  # type: ignore[union-attr]
        case Test(op=op, args=(value, low, high)) if op in RANGES:
            return (f"({format_expr(value)} in {op[2]}{format_expr(low)}, "
                    f"{format_expr(high)}{op[3]})")
        case Test(op=op, args=(left, right)):
            return f"({format_expr(left)} {op} {format_expr(right)})"
        case Filter(op=op, left=left, right=right):  # (a body comparison, as written)
            return f"{format_expr(left)} {op} {format_expr(right)}"
    raise TypeError(expr)


def _columns(binds: Columns, checks: Checks) -> str:
    parts = [f"${c}->{v}" for c, v in binds] + [f"${c}=={format_expr(t)}" for c, t in checks]
    return f" [{', '.join(parts)}]" if parts else ""


def _key(key: tuple[int, ...], terms: tuple[Expr, ...]) -> str:
    return ", ".join(f"${c}={format_expr(t)}" for c, t in zip(key, terms, strict=True))


def format_step(step: Driver | Operator | Project | Aggregate) -> str:
    match step:
        case Scan():
            return f"scan {step.relation}{_columns(step.binds, step.checks)}"
        case Seed():
            return f"seed ({', '.join(step.vars)}) from columns " + ", ".join(
                f"${c}" for c in step.columns)
        case Unit():
            return "unit"
        case Join():
            version = "" if step.version is Version.FULL else f".{step.version.value}"
            return (f"join {step.relation}{version} on ({_key(step.key, step.key_terms)})"
                    f"{_columns(step.binds, step.checks)}")
        case AntiJoin():
            return f"antijoin {step.relation} on ({_key(step.key, step.key_terms)})"
        case Filter():
            return f"filter {format_expr(step.left)} {step.op} {format_expr(step.right)}"
        case Let():
            return f"let {step.var} := {format_expr(step.expr)}"
        case Project():
            unless = f" unless in {step.unless_in}" if step.unless_in else ""
            return f"project ({', '.join(format_expr(t) for t in step.terms)}){unless}"
        case Aggregate():
            return f"aggregate {step.function} of ${step.position}"
    raise TypeError(step)


def format_plan(plan: Plan) -> str:
    steps: list[Any] = [plan.driver, *plan.operators, plan.project]
    if plan.aggregate is not None:
        steps.append(plan.aggregate)
    return "\n".join(format_step(step) for step in steps)


def format_rule_plan(rule: RulePlan) -> str:
    kind = rule.kind + (", remote" if rule.remote else "")
    lines = [f"{rule.label} [{kind}]  {rule.text}"]
    if rule.aggregation is not None:
        group = ", ".join(f"${c}" for c in rule.aggregation.group) or "nothing"
        lines.append(f"    {rule.aggregation.function} of ${rule.aggregation.position}, "
                     f"grouped on {group}")
    for purpose, plan in rule.plans():
        lines.append(f"    {purpose}:")
        lines += [f"      {line}" for line in format_plan(plan).split("\n")]
    return "\n".join(lines)


def where(plan: ProgramPlan, span: Span | int | None, source: Any = None) -> str:
    """``path:line`` of a span (or a line) of the program (a line an ``#include`` brought:
    that file's), as ``source`` names its lines (default: the program's)."""
    source = source or (plan.checked.source if plan.checked is not None else None)
    if span is None or source is None:
        return plan.path
    path, line = source.where(span if isinstance(span, int) else span.line)
    return f"{path}:{line}"


def summary(plan: ProgramPlan) -> str:
    return (f"{plural(len(plan.relations), 'relation')}, {plural(len(plan.rules), 'rule')}, "
            f"{plural(len(plan.strata), 'stratum', 'strata')}")


def format_program_plan(plan: ProgramPlan,
                        placement: Mapping[int, list[str]] | None = None) -> str:
    """The whole plan, deterministically: relations, then each stratum's rules with every
    plan they run (after where the stratum runs, when ``placement`` says), then the
    deferred rules (``overlog explain``)."""
    lines = [f"program {plan.path}: {summary(plan)}"]
    if plan.dialect is not None and plan.dialect.name != "canonical":
        lines.append(f"dialect: {plan.dialect.describe()}")
    lines += ["", "relations:"]
    width = max((len(name) for name in plan.relations), default=0)
    for relation in plan.relations.values():
        kind = "event" if relation.event else "persistent"
        text = f"  {relation.name:<{width}}  {kind:<10}  arity {relation.arity}"
        if not relation.event:
            text += f"  keys({', '.join(str(k + 1) for k in relation.keys)})"
            if relation.lifetime != math.inf or relation.size != math.inf:
                text += (f"  lifetime {format_bound(relation.lifetime)}"
                         f"  size {format_bound(relation.size)}")
        if relation.location is not None:
            text += f"  @{relation.location + 1}"
        if relation.builtin:
            text += "  (built-in)"
        lines.append(text.rstrip())
    for stratum in plan.strata:
        kind = " (recursive min/max)" if stratum.monotone else ""
        lines += ["", f"stratum {stratum.index}: {', '.join(stratum.relations)}{kind}"]
        lines += [f"  {line}" for line in (placement or {}).get(stratum.index, ())]
        lines += [_indent(format_rule_plan(plan.rules[i])) for i in stratum.rules]
    if plan.deferred:
        lines += ["", "deferred (after the fixpoint, written at commit or sent):"]
        lines += [_indent(format_rule_plan(rule)) for rule in plan.deferred]
    if plan.timers:
        lines += ["", "timers: " + ", ".join(
            f"every {format_bound(period)} s, {format_bound(count)} times"
            for period, count in plan.timers)]
    return "\n".join(lines)


def _indent(text: str) -> str:
    return "\n".join("  " + line for line in text.split("\n"))
