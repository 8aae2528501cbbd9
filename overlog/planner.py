"""Checked program -> ProgramPlan: join order, index keys, and every variant a rule runs as.

Join order is greedy: after the driver, the atom with the most bound columns next (index
lookups over scans), ties in source order; filters, assignments and anti-joins are placed as
soon as their variables are bound, except that one that may fail (arithmetic, a function
call, an ordering) stays where the body's written order puts it: after what comes before
it, before the tests and atoms after it (docs/engine.md). Each rule gets the variants the
fixpoint executes, by kind:

- a trigger per positive atom (and, for views, per negated atom): semi-naive insertion on its
  new rows, and for views DRed's over-deletion on its removed rows;
- views: a rederivation plan seeded with head rows; a rule with no positive atom: a plan for
  the first step; aggregates: a group plan and, for `count` triggered by events, the count-0
  probe.
"""

from __future__ import annotations

import heapq
import math
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import replace

from overlog import plan as p
from overlog import syntax as s
from overlog.analysis import CheckedProgram, RuleInfo
from overlog.analysis.catalog import NATIVE_HANDLER, PERIODIC
from overlog.functions import builtin_functions
from overlog.printer import format_statement
from overlog.values import TRUE, internal, internal_row


def lower(term: s.Term) -> p.Expr:
    """An AST term as a plan expression."""
    if type(term) is s.Const:  # the most common term (facts are made of them)
        return p.Const(value=internal(term.value))
    match term:
        case s.Var(name=name):
            return p.Var(name=name)
        case s.BinOp(op=op, left=left, right=right, span=span):
            return p.Arith(op=op, left=lower(left), right=lower(right), span=span)
        case s.Neg(operand=operand, span=span):
            return p.Negate(operand=lower(operand), span=span)
        case s.Call(name=name, args=args, span=span):
            return p.Call(function=name, args=tuple(lower(a) for a in args), span=span)
        case s.ListExpr(items=items, span=span):
            return p.MakeList(items=tuple(lower(i) for i in items), span=span)
        case s.Logic(op=op, left=left, right=right, span=span) \
                | s.Comparison(op=op, left=left, right=right, span=span):
            return p.Test(op=op, args=(lower(left), lower(right)), span=span)
        case s.Not(operand=operand, span=span):
            return p.Test(op="!", args=(lower(operand),), span=span)
        case s.InRange(value=value, low=low, high=high, span=span):
            ends = ("[" if term.low_closed else "(") + ("]" if term.high_closed else ")")
            return p.Test(op=f"in{ends}", args=(lower(value), lower(low), lower(high)),
                          span=span)
    raise TypeError(f"not an expression: {term!r}")


def _head_terms(head: s.Atom) -> tuple[p.Expr, ...]:
    """The head's terms, an aggregate standing for its argument (null for `count<*>`)."""
    return tuple((p.Var(name=a.arg.name) if a.arg is not None else p.Const(value=None))
                 if isinstance(a, s.Agg) else lower(a) for a in head.args)


class _Terms:
    """The variables and plan expression of each AST term, computed once (planning a wide
    rule meets each of its terms in every one of its plans)."""

    def __init__(self) -> None:
        self._vars: dict[int, frozenset[str]] = {}
        self._lowered: dict[int, p.Expr] = {}
        self._orders: dict[int, list[int]] = {}
        self._keep: list[object] = []  # the terms keyed by id stay alive

    def vars(self, term: object) -> frozenset[str]:
        found = self._vars.get(id(term))
        if found is None:
            found = self._vars[id(term)] = frozenset(v.name for v in s.variables(term))
            self._keep.append(term)
        return found

    def lower(self, term: s.Term) -> p.Expr:
        found = self._lowered.get(id(term))
        if found is None:
            found = self._lowered[id(term)] = lower(term)
            self._keep.append(term)
        return found

    def order(self, body: tuple[s.Literal, ...]) -> list[int]:
        """The body's literal indexes in the order the body evaluates them as written:
        left to right, a comparison, `notin` or assignment whose variables are not bound
        yet as soon as they are (so the reference evaluator: tests/runtime/reference.py)."""
        found = self._orders.get(id(body))
        if found is None:
            found = self._orders[id(body)] = _written_order(body, self)
            self._keep.append(body)
        return found


class _Builder:
    """Accumulates the operators of one plan, tracking bound variables. Columns that need a
    variable bound later are bound to a fresh `#n` variable (a name no program can write)
    and compared once it is ready.

    Readiness is tracked incrementally (each waiting item counts its unbound variables, and
    each positive atom its fully bound arguments), so a plan costs about the size of the
    body, whatever its width."""

    def __init__(self, body: tuple[s.Literal, ...], terms: _Terms) -> None:
        self.terms = terms
        self.bound: set[str] = set()
        self.ops: list[p.Operator] = []
        self.fresh = 0
        self.missing: dict[tuple[str, int], int] = {}  # waiting item -> unbound variables
        self.waiting: dict[str, list[tuple[str, int]]] = defaultdict(list)
        self.ready: dict[str, list[int]] = {"pending": [], "filter": [], "negation": [],
                                           "let": []}
        self.pending: list[p.Filter] = []  # fresh-variable comparisons, in creation order
        self.items: dict[str, dict[int, object]] = {"pending": {}, "filter": {}, "negation": {},
                                                     "let": {}}
        # positive atoms: how many arguments are bound (the greedy join order's score)
        self.score: dict[int, int] = {}
        self.heap: list[tuple[int, int]] = []  # (-score, body index): best first
        self.arg_missing: dict[tuple[int, int], int] = {}
        self.arg_waiting: dict[str, list[tuple[int, int]]] = defaultdict(list)
        # An expression that may fail (p.may_fail: in an assignment, a test, a `notin`, an
        # atom's column) is evaluated where the body puts it (_written_order): after every
        # literal before it there, before every test (comparison, `notin`), atom and
        # expression that may fail after it. So its literal is a barrier: it waits for the
        # literals since the barrier before it (a joined atom binds `@i`, a placed literal
        # `!i`: names no program can write), and what comes after it waits for it; between
        # barriers, the literals are placed as soon as they can be (joins in greedy order,
        # tests as early as they are ready, to filter early).
        self.held: dict[int, int] = {}  # atom -> how many names it waits for
        self.after: dict[str, list[int]] = defaultdict(list)  # name -> atoms waiting for it
        # a literal -> what it waits for besides its variables (an atom: to be joined; its
        # columns' checks, where it drives the plan, to be tested)
        self.extra: dict[int, frozenset[str]] = {}
        self.barriers: set[int] = set()  # the atoms that are barriers
        self.driver_checks: set[int] = set()  # a barrier atom driving the plan: its checks
        self.driver_name = ""  # ... and the name it binds once they are placed
        barrier: frozenset[str] = frozenset()  # the last barrier's name
        since: set[str] = set()  # what the literals since the last barrier bind
        known: set[str] = set()  # the variables bound at this point of the written order
        for i in terms.order(body):
            lit = body[i]
            if isinstance(lit, s.Atom):
                # an atom whose columns compute what may fail, from variables bound before
                # it, is a barrier too (`b(10 / X)`)
                exprs = _failing_args(lit, terms)
                if exprs and all(terms.vars(t) <= known for t in exprs):
                    self.barriers.add(i)
                    self.extra[i] = frozenset(since | barrier)
                    barrier, since = frozenset((f"@{i}",)), set()
                else:
                    self.extra[i] = barrier
                    since.add(f"@{i}")
                self._hold(i, self.extra[i])
                known.update(t.name for t in lit.args if isinstance(t, s.Var))
                continue
            if isinstance(lit, s.Assign):
                kind, names = "let", terms.vars(lit.expr)
            else:
                kind = "filter" if isinstance(lit, s.Comparison) else "negation"
                names = terms.vars(lit)
            if _fallible(lit, terms):
                self.extra[i] = frozenset(since | barrier)
                barrier, since = frozenset((f"!{i}",)), set()
            else:
                self.extra[i] = barrier if kind != "let" else frozenset()
                since.add(f"!{i}")
            self._wait(kind, i, lit, names | self.extra[i])
            if isinstance(lit, s.Assign):
                known.add(lit.var.name)

    def _hold(self, atom: int, names: Iterable[str]) -> None:
        """Keep ``atom`` from being joined until ``names`` are bound."""
        for name in names:
            self.held[atom] = self.held.get(atom, 0) + 1
            self.after[name].append(atom)

    def _wait(self, kind: str, index: int, item: object, names: frozenset[str]) -> None:
        self.items[kind][index] = item
        unbound = names - self.bound
        if not unbound:
            heapq.heappush(self.ready[kind], index)
            return
        self.missing[(kind, index)] = len(unbound)
        for name in unbound:
            self.waiting[name].append((kind, index))

    def candidates(self, atoms: list[tuple[int, s.Atom]]) -> None:
        """Start scoring the atoms left to join."""
        for i, atom in atoms:
            score = 0
            for j, term in enumerate(atom.args):
                if isinstance(term, s.Wildcard):
                    continue
                unbound = self.terms.vars(term) - self.bound
                if not unbound:
                    score += 1
                    continue
                self.arg_missing[(i, j)] = len(unbound)
                for name in unbound:
                    self.arg_waiting[name].append((i, j))
            self.score[i] = score
            if i not in self.held:
                heapq.heappush(self.heap, (-score, i))

    def best(self) -> int:
        """The atom with the most bound arguments, the first in the body among equals (of
        those no barrier holds)."""
        while True:
            negative, i = heapq.heappop(self.heap)
            if self.score.get(i) == -negative:
                del self.score[i]
                return i

    def bind(self, names: Iterable[str]) -> None:
        for name in names:
            if name in self.bound:
                continue
            self.bound.add(name)
            for key in self.waiting.pop(name, ()):
                self.missing[key] -= 1
                if not self.missing[key]:
                    del self.missing[key]
                    heapq.heappush(self.ready[key[0]], key[1])
            for arg in self.arg_waiting.pop(name, ()):
                self.arg_missing[arg] -= 1
                if not self.arg_missing[arg] and arg[0] in self.score:
                    self.score[arg[0]] += 1
                    if arg[0] not in self.held:
                        heapq.heappush(self.heap, (-self.score[arg[0]], arg[0]))
            for i in self.after.pop(name, ()):  # atoms that waited for it
                self.held[i] -= 1
                if not self.held[i]:
                    del self.held[i]
                    if i in self.score:
                        heapq.heappush(self.heap, (-self.score[i], i))

    def columns(self, atom: s.Atom, extra: frozenset[str] = frozenset(),
                ) -> tuple[list, list, list]:
        """Split an atom's columns into (keys, binds, checks) given what is bound; a check
        of a column whose term needs a variable bound later, or may fail, also waits for
        ``extra`` (what the atom's place in the body puts before it)."""
        keys: list[tuple[int, p.Expr]] = []
        binds: list[tuple[int, str]] = []
        checks: list[tuple[int, p.Expr]] = []
        local = set(self.bound)
        for c, term in enumerate(atom.args):
            if isinstance(term, s.Var) and term.name not in local:
                binds.append((c, term.name))
                local.add(term.name)
        bound_here = {v for _, v in binds}
        for c, term in enumerate(atom.args):
            if isinstance(term, s.Wildcard) or (c, getattr(term, "name", None)) in binds:
                continue
            names = self.terms.vars(term)
            lowered = self.terms.lower(term)
            waits = bool(extra) and p.may_fail(lowered)
            if names <= self.bound and not waits:
                keys.append((c, lowered))
            elif names <= self.bound | bound_here and not waits:
                checks.append((c, lowered))
            else:
                self.fresh += 1
                name = f"#{self.fresh}"
                binds.append((c, name))
                check = p.Filter(op="==", left=p.Var(name=name), right=lowered)
                self.pending.append(check)
                self._wait("pending", len(self.pending) - 1, check, names | {name} | extra)
        return keys, binds, checks

    def scan(self, atom: s.Atom, extra: frozenset[str] = frozenset(), name: str = "",
             ) -> p.Scan:
        """The driver's scan; its columns' checks that wait for later variables also wait
        for ``extra``; ``name`` (a barrier atom's) is bound once they are all placed."""
        keys, binds, checks = self.columns(atom, extra)  # a driver row has no key: all are
        # checks
        if name:  # (the builder's first atom: the pending checks are its own)
            self.driver_checks = set(range(len(self.pending)))
            self.driver_name = name
        self.bind(v for _, v in binds)
        if name and not self.driver_checks:
            self.bind((name,))
        return p.Scan(relation=atom.name, binds=tuple(binds), checks=tuple(keys + checks))

    def join(self, atom: s.Atom, version: p.Version) -> None:
        keys, binds, checks = self.columns(atom)
        self.ops.append(p.Join(relation=atom.name, version=version,
                               key=tuple(c for c, _ in keys), key_terms=tuple(t for _, t in keys),
                               binds=tuple(binds), checks=tuple(checks)))
        self.bind(v for _, v in binds)

    def place_ready(self) -> None:
        """Place what became ready: fresh-variable comparisons, then filters and anti-joins
        in body order, then assignments in body order, until one readies more of the
        others, which go first (so that a `notin` guards what comes after it)."""
        ready = self.ready
        while any(ready.values()):
            while ready["pending"]:
                index = heapq.heappop(ready["pending"])
                self.ops.append(self.pending[index])
                if index in self.driver_checks:  # (a barrier atom driving the plan)
                    self.driver_checks.discard(index)
                    if not self.driver_checks and self.driver_name:
                        self.bind((self.driver_name,))
            # (a `notin` before a comparison guards it: `notin zero(Y), X / Y > 0`)
            while ready["filter"] or ready["negation"]:
                if ready["filter"] and not (ready["negation"]
                                            and ready["negation"][0] < ready["filter"][0]):
                    index = heapq.heappop(ready["filter"])
                    c = self.items["filter"].pop(index)
                    self.ops.append(p.Filter(op=c.op, span=c.span,
                                             left=self.terms.lower(c.left),
                                             right=self.terms.lower(c.right)))
                    self.bind((f"!{index}",))
                    continue
                index = heapq.heappop(ready["negation"])
                n = self.items["negation"].pop(index)
                key = [(i, t) for i, t in enumerate(n.atom.args) if not isinstance(t, s.Wildcard)]
                self.ops.append(p.AntiJoin(relation=n.atom.name, key=tuple(i for i, _ in key),
                                           key_terms=tuple(self.terms.lower(t) for _, t in key)))
                self.bind((f"!{index}",))
            later: list[int] = []  # assignments readied by one placed after them: next pass
            while ready["let"]:
                index = heapq.heappop(ready["let"])
                a = self.items["let"].pop(index)
                if a.var.name in self.bound:  # pre-bound (rederivation): a test
                    self.ops.append(p.Filter(op="==", left=p.Var(name=a.var.name),
                                             right=self.terms.lower(a.expr)))
                    self.bind((f"!{index}",))
                    continue
                self.ops.append(p.Let(var=a.var.name, expr=self.terms.lower(a.expr)))
                lets = ready["let"]
                ready["let"] = []
                self.bind((a.var.name, f"!{index}"))
                for other in ready["let"]:
                    heapq.heappush(later if other < index else lets, other)
                ready["let"] = lets
                if ready["pending"] or ready["filter"] or ready["negation"]:
                    break  # what it readied first: a `notin` it readied guards the rest
            for index in later:
                heapq.heappush(ready["let"], index)

    @property
    def done(self) -> bool:
        return not (self.missing or any(self.ready.values()) or self.score)


def _written_order(body: tuple[s.Literal, ...], terms: _Terms) -> list[int]:
    """See _Terms.order."""

    def ready(lit: s.Literal) -> bool:
        return isinstance(lit, s.Atom) or (
            terms.vars(lit.expr if isinstance(lit, s.Assign) else lit) <= bound)

    bound: set[str] = set()
    left = list(range(len(body)))
    order: list[int] = []
    while left:
        k = next((k for k, i in enumerate(left) if ready(body[i])), None)
        if k is None:  # (the rule is unsafe: the analysis refuses it first)
            return order + left
        i = left.pop(k)
        lit = body[i]
        if isinstance(lit, s.Atom):
            bound.update(t.name for t in lit.args if isinstance(t, s.Var))
        elif isinstance(lit, s.Assign):
            bound.add(lit.var.name)
        order.append(i)
    return order


def _fallible(literal: s.Literal, terms: _Terms) -> bool:
    """Whether computing an assignment, testing a comparison or looking up a `notin` may
    fail (p.may_fail: arithmetic, a function call, an ordering of values that do not
    compare): not so for plain terms (variables, constants, lists of them), two of them
    compared for (in)equality, nor a `notin` of them."""
    if isinstance(literal, s.Assign):
        return p.may_fail(terms.lower(literal.expr))
    if isinstance(literal, s.Negation):
        return bool(_failing_args(literal.atom, terms))
    return p.comparison_may_fail(literal.op, terms.lower(literal.left),  # type: ignore[union-attr]
                                 terms.lower(literal.right))  # type: ignore[union-attr]


def _failing_args(atom: s.Atom, terms: _Terms) -> list[s.Term]:
    """The arguments of ``atom`` whose computing may fail (p.may_fail)."""
    return [t for t in atom.args if not isinstance(t, s.Wildcard) and p.may_fail(terms.lower(t))]


def plan_body(body: tuple[s.Literal, ...], driver: int | None, project: p.Project,
              prebound: tuple[tuple[str, int], ...] | None = None,
              semi_naive: bool = True, terms: _Terms | None = None) -> p.Plan:
    """The plan of a rule body driven by literal ``driver`` (a positive or negated atom),
    by seed values of ``prebound`` (variable, column) pairs, or, with neither, by one empty
    binding. With ``semi_naive``, positive atoms before a positive driver read their old
    version (each combination of new rows is then derived by one driver only)."""
    builder = _Builder(body, terms or _Terms())
    atoms = [(i, lit) for i, lit in enumerate(body) if isinstance(lit, s.Atom)]
    before = -1
    source: p.Driver
    if driver is not None:
        literal = body[driver]
        if isinstance(literal, s.Atom):
            before = driver if semi_naive else -1
            atoms = [(i, a) for i, a in atoms if i != driver]
            if driver in builder.barriers:  # what comes after it waits for its checks
                source = builder.scan(literal, builder.extra[driver], f"@{driver}")
            else:
                source = builder.scan(literal)
                builder.bind((f"@{driver}",))
        else:  # a `notin`'s: its columns' expressions are tested where the `notin` is
            source = builder.scan(literal.atom, builder.extra[driver])  # type: ignore[union-attr]
    elif prebound is not None:
        source = p.Seed(vars=tuple(v for v, _ in prebound),
                        columns=tuple(c for _, c in prebound))
        builder.bind(v for v, _ in prebound)
    else:
        source = p.Unit()
    by_index = dict(atoms)
    builder.candidates(atoms)
    builder.place_ready()
    for _ in atoms:
        best = builder.best()
        builder.join(by_index[best], p.Version.OLD if best < before else p.Version.FULL)
        builder.bind((f"@{best}",))
        builder.place_ready()
    assert builder.done, "unsafe rule planned"
    return p.Plan(driver=source, operators=tuple(builder.ops), project=project)


def over_deletion(plan: p.Plan) -> p.Plan:
    """DRed's over-approximation of ``plan``: every join reads the prior version (rows
    removed in the step included), anti-joins are dropped, every row is emitted; it finds
    rows (``finds``: a binding failing on an operator is passed over)."""
    ops = tuple(replace(op, version=p.Version.PRIOR) if isinstance(op, p.Join) else op
                for op in plan.operators if not isinstance(op, p.AntiJoin))
    return replace(plan, operators=ops, project=replace(plan.project, unless_in=None),
                   finds=True)


def _first_occurrences(terms: tuple[s.Term, ...]) -> tuple[tuple[str, int], ...]:
    """(variable, position) of each distinct plain variable among ``terms``."""
    seen: dict[str, int] = {}
    for i, term in enumerate(terms):
        if isinstance(term, s.Var) and term.name not in seen:
            seen[term.name] = i
    return tuple(seen.items())


def _zero_probe(rule: s.Rule, group: tuple[int, ...], terms: _Terms) -> tuple[p.Plan, ...]:
    """For `count` triggered by events (P2): plans yielding each event binding's group key,
    so that a binding with no match still yields a row with count 0. An event binding is
    what the body has when it first reaches another atom, as written (_Terms.order): the
    events, the tests and assignments before that atom (a test there filters the events),
    not its `notin` atoms. Where its group needs assignments written later, the body is
    followed on, as written, until the group is known: those assignments, and the tests
    before them that the event's variables decide."""
    events = [lit for lit in rule.body if isinstance(lit, s.Atom) and lit.event]
    if not events:
        return ()
    body: list[s.Literal] = list(events)
    bound = {v.name for a in events for v in s.variables(a)}
    later: list[s.Literal] = []  # the tests and assignments past the first other atom
    reached = False
    for i in terms.order(rule.body):
        lit = rule.body[i]
        if isinstance(lit, s.Atom):
            reached = reached or not lit.event
        elif isinstance(lit, (s.Assign, s.Comparison)):
            if reached:
                later.append(lit)
                continue
            body.append(lit)
            if isinstance(lit, s.Assign):
                bound.add(lit.var.name)
    group_terms = tuple(rule.head.args[i] for i in group)
    group_vars = set().union(*map(terms.vars, group_terms))
    needed = group_vars - bound
    for lit in reversed(later):  # (what the group needs, and what they need in turn)
        if isinstance(lit, s.Assign) and lit.var.name in needed:
            needed |= terms.vars(lit.expr)
    assigned = {lit.var.name for lit in later if isinstance(lit, s.Assign)}
    for lit in later:
        if not needed & assigned:
            break  # (the group is known)
        if isinstance(lit, s.Assign):
            if lit.var.name in needed and terms.vars(lit.expr) <= bound:
                body.append(lit)
                bound.add(lit.var.name)
                needed.discard(lit.var.name)
        elif terms.vars(lit) <= bound:
            body.append(lit)
    if not group_vars <= bound:
        return ()
    project = p.Project(terms=tuple(lower(t) for t in group_terms))
    probe = tuple(body)
    # they find keys (``finds``): an event binding whose group fails on an operator gets no
    # row of 0 (what the body evaluates as written, the plan driven by the event reports)
    return tuple(replace(plan_body(probe, i, project, semi_naive=False, terms=terms),
                         finds=True)
                 for i, lit in enumerate(probe) if isinstance(lit, s.Atom))


# the aggregates an event's binding that matches nothing gets a row of (count: 0); in the
# P2 dialect min and max too (null), as P2's event aggregates do
EMPTY_AGGREGATES = {"canonical": ("count", "countdistinct"),
                    "p2": ("count", "countdistinct", "min", "max")}


def _aggregation(rule: s.Rule, position: int, function: str, terms: _Terms,
                 with_every: bool = True, dialect: str = "canonical") -> p.Aggregation:
    """``with_every``: also the plan of every group at once (not for a recursive min/max,
    nor for a deferred rule, which never use it)."""
    head = rule.head
    group = tuple(i for i in range(head.arity) if i != position)
    output = p.Project(terms=_head_terms(head))
    aggregate = p.Aggregate(function=function, position=position)
    first = next((i for i, lit in enumerate(rule.body) if isinstance(lit, s.Atom)), None)

    def whole() -> p.Plan:  # the whole rule, from all rows of its first atom
        return replace(plan_body(rule.body, first, output, terms=terms), aggregate=aggregate)

    every = None
    if all(isinstance(head.args[i], s.Var) for i in group):
        seeds = _first_occurrences(tuple(head.args[i] for i in group))
        groups = replace(plan_body(rule.body, None, output, seeds, terms=terms),
                         aggregate=aggregate)
        if with_every and first is not None:
            every = whole()
    else:  # a group column is an expression: evaluate the whole rule
        groups = whole()
    empty = EMPTY_AGGREGATES.get(dialect, EMPTY_AGGREGATES["canonical"])
    zero = _zero_probe(rule, group, terms) if function in empty else ()
    return p.Aggregation(function=function, position=position, group=group,
                         groups=groups, zero=zero, every=every)


def plan_rule(info: RuleInfo, relations: dict, monotone: bool = False,
              own: frozenset[str] = frozenset(), dialect: str = "canonical") -> p.RulePlan:
    """A rule's plans; ``monotone`` for a rule of a recursive min/max stratum, whose
    aggregate triggers emit candidate head rows (the aggregate's argument in its column).
    ``own``: the relations its stratum's views both derive and read, which its
    rederivation plan reads in their old version (the fixpoint may exclude the rows born
    after the row it rederives)."""
    rule = info.rule
    terms = _Terms()
    head = rule.head
    view = info.kind == "view" and not info.deferred
    agg = next(((i, a.func if a.k is None else f"{a.func}:{a.k}")
                for i, a in enumerate(head.args) if isinstance(a, s.Agg)), None)
    if agg is not None:  # triggers only say which groups to recompute
        project = p.Project(terms=tuple(lower(t) for i, t in enumerate(head.args)
                                        if i != agg[0]))
    else:
        novel = None if info.deferred or relations[head.name].keyed else head.name
        project = p.Project(terms=_head_terms(head), unless_in=novel)
    # over-deletion for views, and for aggregates in the fixpoint (a group that loses rows
    # is recomputed); only views follow the rows leaving a negated relation
    deleting = view or (agg is not None and not info.deferred)
    # a recursive min/max: triggers emit candidate head rows (the fixpoint keeps each
    # group's best), over-deletion the candidates removed rows took away
    candidates = p.Project(terms=_head_terms(head), best=p.Best(function=agg[1],
                                                                position=agg[0])) \
        if monotone and agg is not None else None
    types = relations[head.name].types if agg is None else ()
    triggers = []
    for i, literal in enumerate(rule.body):
        negated = isinstance(literal, s.Negation)
        if not isinstance(literal, s.Atom) and not (negated and view):
            continue
        insert = _typed(plan_body(rule.body, i, candidates or project, terms=terms), types,
                        head.name)
        atom = literal.atom if negated else literal  # type: ignore[union-attr]
        triggers.append(p.Trigger(relation=atom.name, literal=i, negated=negated, insert=insert,
                                  delete=over_deletion(insert) if deleting else None))
    start = None
    if info.fires_at_start:
        start = _typed(plan_body(rule.body, None, candidates or project, terms=terms), types,
                       head.name)
    rederive = None
    if view and agg is None:
        rederive = plan_body(rule.body, None, replace(project, unless_in=None),
                             _first_occurrences(head.args), terms=terms)
        rederive = replace(rederive, finds=True, operators=tuple(
            replace(op, version=p.Version.OLD)
            if isinstance(op, p.Join) and op.relation in own else op
            for op in rederive.operators))
    return p.RulePlan(
        index=info.index, name=rule.name, kind=info.kind, remote=info.remote,
        stratum=info.stratum, head=head.name, head_event=head.event,
        location=head.locs[0] if head.locs else None, triggers=tuple(triggers), start=start,
        rederive=rederive,
        aggregation=_aggregation(rule, *agg, terms,
                                 with_every=not (monotone or info.deferred), dialect=dialect)
        if agg else None,
        text=format_statement(replace(rule, name=None)), span=rule.span)


def _typed(plan: p.Plan, types: tuple[tuple[int, str], ...], relation: str) -> p.Plan:
    """``plan`` checking that the rows it writes fit the typed key fields of ``relation``
    (P2's ``keys(2:str)``): a row that does not fails the rule (E301)."""
    if not types:
        return plan
    checks = tuple(p.Filter(op="==", left=p.Test(op="type", args=(
        plan.project.terms[column], p.Const(value=kind),
        p.Const(value=f"{column + 1} of `{relation}`"))), right=p.Const(value=TRUE))
        for column, kind in types)
    return replace(plan, operators=(*plan.operators, *checks))


def _timers(program: s.Program) -> tuple[tuple[float, float], ...]:
    """(period, count) of every distinct periodic atom in the program's rule bodies."""
    found: dict[tuple, tuple[float, float]] = {}
    for rule in program.rules:
        for literal in rule.body:
            if isinstance(literal, s.Atom) and literal.name == PERIODIC:
                period = literal.args[2].value  # type: ignore[union-attr]
                count = literal.args[3].value if literal.arity == 4 else math.inf  # type: ignore
                # periods 1 and 1.0 are two timers, as they are two values
                found.setdefault(internal_row((period, count)), (period, count))
    return tuple(found.values())


def _fact_plan(fact: s.Fact | s.FactRows) -> p.FactPlan | p.FactRowsPlan:
    """Facts of values as their rows; a fact with expressions as the expressions."""
    if isinstance(fact, s.FactRows):
        return p.FactRowsPlan(relation=fact.name, event=fact.event,
                              location=fact.locs[0] if fact.locs else None,
                              rows=tuple(map(internal_row, fact.rows)), span=fact.span,
                              lines=tuple(place[0] for place in fact.places))
    atom = fact.atom
    location = atom.locs[0] if atom.locs else None
    if fact.values_only:
        return p.FactRowsPlan(relation=atom.name, event=atom.event, location=location,
                              rows=(internal_row(tuple(a.value for a in atom.args)),),
                              span=fact.span)
    return p.FactPlan(relation=atom.name, event=atom.event, location=location,
                      values=tuple(lower(a) for a in atom.args), span=fact.span)


def _own(checked: CheckedProgram) -> dict[int, frozenset[str]]:
    """Each stratum's relations that its views both derive and read (positively): those a
    rederivation reads in their old version. A recursive min/max's are left out (its
    fixpoint checks support per group)."""
    views = [info for info in checked.rules
             if info.kind == "view" and not info.deferred
             and not any(isinstance(a, s.Agg) for a in info.rule.head.args)]
    heads: dict[int, set[str]] = defaultdict(set)
    for info in views:
        heads[info.stratum].add(info.rule.head.name)  # type: ignore[index]
    read: dict[int, set[str]] = defaultdict(set)
    for info in views:
        read[info.stratum].update(  # type: ignore[index]
            lit.name for lit in info.rule.body
            if isinstance(lit, s.Atom) and lit.name in heads[info.stratum])  # type: ignore[index]
    return {index: frozenset(names) for index, names in read.items()
            if names and not checked.strata[index].monotone}


def plan_program(checked: CheckedProgram) -> p.ProgramPlan:
    program = checked.program
    own = _own(checked)
    facts = tuple(_fact_plan(f) for f in program.statements
                  if isinstance(f, s.FactRows) or (isinstance(f, s.Fact)
                                                   and f.atom.name != NATIVE_HANDLER))
    calls = tuple((node.name, node.span) for statement in program.statements
                  if not isinstance(statement, s.FactRows)  # values only: no call
                  and not (isinstance(statement, s.Fact) and statement.values_only)
                  for node in s.walk(statement)
                  if isinstance(node, s.Call)
                  and node.name not in builtin_functions(checked.dialect))
    return p.ProgramPlan(
        path=checked.source.path, relations=checked.relations,
        rules=tuple(plan_rule(info, checked.relations, info.stratum is not None
                              and checked.strata[info.stratum].monotone,
                              own.get(info.stratum, frozenset()),  # type: ignore[arg-type]
                              checked.dialect)
                    for info in checked.rules),
        strata=tuple(p.StratumPlan(index=st.index, relations=st.relations, rules=st.rules,
                                   monotone=st.monotone, strict=st.strict,
                                   own=own.get(st.index, frozenset()))
                     for st in checked.strata),
        facts=facts, timers=_timers(program),
        handlers=tuple(p.NativeHandler(relation=f.atom.args[0].value,  # type: ignore
                                       target=f.atom.args[1].value,  # type: ignore
                                       span=f.atom.args[1].span)
                       for f in program.statements
                       if isinstance(f, s.Fact) and f.atom.name == NATIVE_HANDLER),
        watched=checked.watched, calls=calls, checked=checked)
