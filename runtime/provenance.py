"""Why a tuple is there, and why another is not (``Engine.why``, ``Engine.why_not``,
``overlog run --why/--why-not``; docs/why.md).

With ``Engine(provenance=True)`` the engine keeps a log (``Log``) after each committed step:
when each row of a persistent relation was added and removed, the step's events, which rows
came from outside (facts, inserts, deliveries, input events) and which a deferred rule wrote
(with the rule). Nothing else is recorded while rules run: a derivation is found when it is
asked for, by running the rules' own plans (``overlog.plan``) backwards from the tuple over
the tables as they stood, here with an interpreter that keeps the rows each binding used.

A derivation is well founded: it is searched for with a bound on its depth that grows
(iterative deepening), so the tree found is one of the least deep, and never a tuple that
holds because it holds (a cycle of a recursive view). Leaves are what the program did not
derive: facts, inputs, events from outside. A row a deferred rule wrote (state, delete,
remote) is explained by that rule's body in the step before it arrived.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from overlog import plan as p
from overlog.printer import format_tuple, format_value
from overlog.runtime.builtins import COMPARE
from overlog.runtime.local import ExpressionFailed, evaluate
from overlog.values import python, python_row

Row = tuple
MAX_DEPTH = 2_000  # a derivation deeper than this is not searched for
EXACT_DEPTH = 16  # searched depth by depth up to this; then in steps of half again
SHOWN_BINDINGS = 3  # the bindings of an aggregate's group shown in its explanation
FEW_CHANGES = 64  # a relation changed in as few steps is searched step by step, not indexed


@dataclass
class Explanation:
    """One node of a derivation tree: a tuple and how it came to be. ``how`` is "fact",
    "input" (inserted, delivered, or an event from outside), "derived" (by ``rule``, from
    ``children``), "written" (by the deferred ``rule`` at ``step``), "aggregate" (``rule``
    over ``count`` bindings, the first ``children`` shown) or "missing" (why-not)."""

    relation: str
    row: tuple  # plain Python values
    event: bool
    how: str
    step: int | None = None
    rule: str | None = None  # its label
    text: str = ""  # the rule as written, or what is missing
    where: str = ""  # path:line of the rule or fact
    binding: dict[str, Any] = field(default_factory=dict)
    children: list[Explanation] = field(default_factory=list)
    count: int = 0  # an aggregate's bindings

    def format(self) -> str:
        """The tree, one node a line, children indented under their parent."""
        lines: list[str] = []
        self._format(lines, "", "")
        return "\n".join(lines) + "\n"

    def _format(self, lines: list[str], lead: str, rest: str) -> None:
        lines.append(lead + self._line())
        for i, child in enumerate(self.children):
            last = i == len(self.children) - 1
            child._format(lines, rest + ("└─ " if last else "├─ "),
                          rest + ("   " if last else "│  "))
        if self.how == "aggregate" and self.count > len(self.children):
            lines.append(f"{rest}└─ ... {self.count - len(self.children):,} more")

    def _line(self) -> str:
        tuple_ = format_tuple(self.relation, self.row, event=self.event)
        at = f" at step {self.step}" if self.step is not None else ""
        bound = ", ".join(f"{name}={format_value(value)}" for name, value in
                          self.binding.items() if not name.startswith("_"))
        by = f"{self.rule} ({self.where})" if self.where else str(self.rule)
        if self.how == "fact":
            return f"{tuple_}  [fact, {self.where}]"
        if self.how == "input":
            return f"{tuple_}  [{'event' if self.event else 'inserted'}{at}]"
        if self.how == "derived":
            return f"{tuple_}  [{by}{at}: {self.text}]" + (f"  {bound}" if bound else "")
        if self.how == "written":
            return f"{tuple_}  [written by {by} at step {self.step}: {self.text}]" + (
                f"  {bound}" if bound else "")
        if self.how == "aggregate":
            return f"{tuple_}  [{by}{at}, over {self.count:,} binding" \
                   f"{'s' if self.count != 1 else ''}: {self.text}]"
        return f"{self.text}" + (f"  {bound}" if bound else "")  # missing


class Log:
    """What the engine keeps for explanations, step by step (``Engine(provenance=True)``):
    the step's sets of changes themselves (the store makes new ones for the next step and
    never changes these again), indexed by row only when a question is asked."""

    def __init__(self) -> None:
        # relation -> (step, the rows it added then) / (step, the rows it removed then)
        self.added: dict[str, list[tuple[int, set[Row]]]] = defaultdict(list)
        self.removed: dict[str, list[tuple[int, set[Row]]]] = defaultdict(list)
        self.events: dict[int, dict[str, set[Row]]] = {}  # step -> relation -> events
        self.inputs: dict[int, set[tuple[str, Row]]] = {}  # step -> (relation, row) given
        self.written: dict[int, dict[tuple[str, Row], p.RulePlan]] = {}  # step -> writer
        # relation -> row -> [born, died, born, died...] (steps; an open life last): built
        # from ``added`` and ``removed`` when first asked, until the next step
        self._lives: dict[str, dict[Row, list[int]]] = {}

    def record(self, step: int, events: Mapping[str, list[set[Row]]],
               added: Mapping[str, list[set[Row]]],
               removed: Mapping[str, list[set[Row]]],
               inputs: Iterable[tuple[str, str, Row]],
               writes: Iterable[tuple[p.RulePlan, Row]]) -> None:
        """A committed step: its events, the rows persistent relations gained and lost
        (each as disjoint sets, kept as they are), the inputs it took and the writes of its
        deferred rules."""
        self._lives = {}
        for changes, log in ((added, self.added), (removed, self.removed)):
            for relation, parts in changes.items():
                log[relation] += [(step, rows) for rows in parts if rows]
        if events:
            self.events[step] = {name: parts[0] if len(parts) == 1 else set().union(*parts)
                                 for name, parts in events.items()}
        given = {(relation, row) for kind, relation, row in inputs if kind != "delete"
                 and row.__class__ is tuple}
        if given:
            self.inputs[step] = given
        written = {(rule.head, row): rule for rule, row in writes}
        if written:
            self.written[step] = written

    def lives(self, relation: str) -> dict[Row, list[int]]:
        """Each row the relation ever held, with the steps that added and removed it."""
        found = self._lives.get(relation)
        if found is None:
            found = self._lives[relation] = {}
            changes = [(step, True, rows) for step, rows in self.added.get(relation, ())]
            changes += [(step, False, rows) for step, rows in self.removed.get(relation, ())]
            changes.sort(key=lambda change: change[0])  # (in one step: disjoint sets)
            for step, adds, rows in changes:
                for row in rows:
                    life = found.get(row)
                    if life is None:
                        if adds:
                            found[row] = [step]
                    elif len(life) % 2 != adds:  # (an open life ends, a closed one starts)
                        life.append(step)
        return found

    def born(self, relation: str, row: Row, step: int) -> int | None:
        """The step that added ``row`` to a persistent relation, of the life that holds it at
        the end of ``step`` (None: not there then)."""
        added = self.added.get(relation, ())
        if relation not in self._lives and len(added) <= FEW_CHANGES:  # (no index needed)
            born = next((when for when, rows in reversed(added) if when <= step and row in rows),
                        None)
            if born is None or any(born < when <= step and row in rows
                                   for when, rows in self.removed.get(relation, ())):
                return None
            return born
        life = self.lives(relation).get(row)
        if life is None:
            return None
        for i in range(0, len(life), 2):
            died = life[i + 1] if i + 1 < len(life) else math.inf
            if life[i] <= step < died:
                return life[i]
        return None

    def rows_at(self, relation: str, step: int) -> set[Row]:
        """The rows a persistent relation held at the end of ``step``."""
        return {row for row in self.lives(relation)
                if self.born(relation, row, step) is not None}


class _State:
    """The tables as they stood during one step, for matching a rule's body: the current
    store for the last step, else the log; events of that step from the log."""

    def __init__(self, step: int, log: Log, current: Callable[[str], Any] | None,
                 event: Callable[[str], bool],
                 indexes: Callable[[str, tuple[int, ...]], Mapping | None] | None = None,
                 ) -> None:
        """``indexes``: the store's own index of a relation on some columns, if it keeps one
        (the current step's tables)."""
        self.step = step
        self.log = log
        self.current = current
        self.is_event = event
        self.indexes = indexes
        self._rows: dict[str, set[Row]] = {}
        self._index: dict[tuple[str, tuple[int, ...]], dict[tuple, list[Row]]] = {}

    def rows(self, relation: str) -> set[Row]:
        found = self._rows.get(relation)
        if found is None:
            if self.is_event(relation):
                found = set(self.log.events.get(self.step, {}).get(relation, ()))
            elif self.current is not None:
                found = self.current(relation)
            else:
                found = self.log.rows_at(relation, self.step)
            self._rows[relation] = found
        return found

    def matching(self, relation: str, key: tuple[int, ...], values: tuple) -> list[Row]:
        rows = self.rows(relation)
        if rows and len(key) == len(next(iter(rows))):  # the whole row: a lookup
            whole = [None] * len(key)
            for column, value in zip(key, values, strict=True):
                whole[column] = value
            row = tuple(whole)
            return [row] if row in rows else []
        if self.indexes is not None and not self.is_event(relation):
            kept = self.indexes(relation, key)  # (keyed by the bare value for one column)
            if kept is not None:
                return list(kept.get(values[0] if len(key) == 1 else values, ()))
        index = self._index.get((relation, key))
        if index is None:
            index = defaultdict(list)
            for row in self.rows(relation):
                index[tuple(row[k] for k in key)].append(row)
            self._index[(relation, key)] = index
        return index.get(values, [])


class _Skip(Exception):
    """An expression failed for a binding: the binding does not match."""


# functions whose values are draws from the engine's generator: not called again to explain
UNREPEATABLE = ("f_rand", "f_drand", "f_coinFlip", "f_idgen", "f_rowid")


def unrepeatable(*args: Any) -> Any:
    raise ValueError("a random draw is not repeated to explain a tuple")


def _value(expr: p.Expr, env: Mapping[str, Any], functions: Mapping[str, Callable]) -> Any:
    try:
        return evaluate(expr, functions, env)
    except ExpressionFailed as failed:
        raise _Skip from failed.cause


@dataclass
class _Reach:
    """How far the bindings of a plan got (why-not): the operator index reached, the first
    operator none passed, and a binding that stopped there."""

    depth: int = -1
    blocked: Any = None
    env: dict[str, Any] = field(default_factory=dict)
    used: list[tuple[str, Row]] = field(default_factory=list)


def _bindings(plan: p.Plan, seeds: Iterable[tuple], state: _State,
              functions: Mapping[str, Callable], reach: _Reach | None = None,
              ) -> Iterator[tuple[dict[str, Any], list[tuple[str, Row]], Row]]:
    """Each binding of ``plan`` over ``state``: (variables, the rows of positive atoms it
    used, the projected row)."""
    driver = plan.driver
    starts: Iterable[tuple[dict[str, Any], list[tuple[str, Row]]]]
    if isinstance(driver, p.Scan):
        starts = _scan(driver, seeds, state, functions)
    elif isinstance(driver, p.Seed):
        starts = ((dict(zip(driver.vars, seed, strict=True)), []) for seed in seeds)
    else:
        starts = [({}, [])]
    for env, used in starts:
        yield from _operators(plan, 0, env, used, state, functions, reach)


def _scan(driver: p.Scan, seeds: Iterable[Row], state: _State,
          functions: Mapping[str, Callable]) -> Iterator[tuple[dict, list]]:
    for row in seeds:
        env = {var: row[column] for column, var in driver.binds}
        if _checked(driver.checks, row, env, functions):
            yield env, [(driver.relation, row)]


def _checked(checks: p.Checks, row: Row, env: Mapping[str, Any],
             functions: Mapping[str, Callable]) -> bool:
    try:
        return all(row[column] == _value(expr, env, functions) for column, expr in checks)
    except _Skip:
        return False


def _operators(plan: p.Plan, i: int, env: dict[str, Any], used: list[tuple[str, Row]],
               state: _State, functions: Mapping[str, Callable], reach: _Reach | None,
               ) -> Iterator[tuple[dict[str, Any], list[tuple[str, Row]], Row]]:
    if reach is not None and i > reach.depth:
        reach.depth, reach.env, reach.used = i, dict(env), list(used)
        reach.blocked = plan.operators[i] if i < len(plan.operators) else None
    if i == len(plan.operators):
        try:
            head = tuple(_value(t, env, functions) for t in plan.project.terms)
        except _Skip:
            return
        yield env, used, head
        return
    op = plan.operators[i]
    try:
        match op:
            case p.Join(relation=relation, key=key, key_terms=terms, binds=binds,
                        checks=checks):
                values = tuple(_value(t, env, functions) for t in terms)
                for row in state.matching(relation, key, values):
                    inner = {**env, **{var: row[column] for column, var in binds}}
                    if _checked(checks, row, inner, functions):
                        yield from _operators(plan, i + 1, inner, [*used, (relation, row)],
                                              state, functions, reach)
            case p.AntiJoin(relation=relation, key=key, key_terms=terms):
                values = tuple(_value(t, env, functions) for t in terms)
                if not state.matching(relation, key, values):
                    yield from _operators(plan, i + 1, env, used, state, functions, reach)
            case p.Filter(op=compare, left=left, right=right):
                if COMPARE[compare](_value(left, env, functions), _value(right, env, functions)):
                    yield from _operators(plan, i + 1, env, used, state, functions, reach)
            case p.Let(var=var, expr=expr):
                yield from _operators(plan, i + 1, {**env, var: _value(expr, env, functions)},
                                      used, state, functions, reach)
    except _Skip:
        return


class Explainer:
    """Finds derivations over an engine's log and tables (one question at a time)."""

    def __init__(self, plan: p.ProgramPlan, log: Log, step: int,
                 current: Callable[[str], Any], functions: Mapping[str, Callable],
                 facts: Mapping[tuple[str, Row], Any], where: Callable[[Any], str],
                 indexes: Callable[[str, tuple[int, ...]], Mapping | None] | None = None,
                 dropped: Collection[int] = (),
                 ) -> None:
        """``current``: a relation's rows now (``indexes``: the store's index of a relation
        on some columns, where it keeps one); ``facts``: the line (or span) of each fact's
        row, ``where`` a line's or span's name (path:line); ``dropped``: the plan indexes of
        rules the engine took out of the program (they derive nothing)."""
        self.plan = plan
        self.log = log
        self.step = step  # the last committed step
        self.current = current
        self.indexes = indexes
        self.functions = functions
        self.facts = facts
        self.where = where
        self.events = {name for name, rel in plan.relations.items() if rel.event}
        # head relation -> the rules writing it, fixpoint ones and deferred ones apart
        self.rules: dict[str, list[p.RulePlan]] = defaultdict(list)
        self.deferred: dict[str, list[p.RulePlan]] = defaultdict(list)
        for rule in plan.rules:
            if rule.index not in dropped:
                (self.deferred if rule.deferred else self.rules)[rule.head].append(rule)
        self._states: dict[int, _State] = {}
        # tuples not derived within a depth: (that depth, whether it cut the search: a
        # deeper one may find it; else there is no derivation at all)
        self._failed: dict[tuple[str, Row, int], tuple[int, bool]] = {}
        self._grew = False  # the search was cut by its depth (deeper may find more)

    def state(self, step: int) -> _State:
        found = self._states.get(step)
        if found is None:
            now = step == self.step
            found = self._states[step] = _State(
                step, self.log, self.current if now else None, self.events.__contains__,
                self.indexes if now else None)
        return found

    # -- why ---------------------------------------------------------------------------------

    def why(self, relation: str, row: Row, step: int) -> Explanation | None:
        """A derivation of ``row`` in ``relation`` during ``step``: the least deep, when it
        is at most EXACT_DEPTH deep, else at most half again as deep as the least (a search
        deepened one level at a time would cost the square of a long chain's length)."""
        depth = 1
        while depth <= MAX_DEPTH:
            self._grew = False
            found = self._prove(relation, row, step, depth)
            if found is not None or not self._grew:
                return found
            depth = depth + 1 if depth < EXACT_DEPTH else depth * 3 // 2
        return None

    def _prove(self, relation: str, row: Row, step: int, depth: int) -> Explanation | None:
        if relation in self.events:
            if (relation, row) in self.log.inputs.get(step, ()):
                return Explanation(relation, python_row(row), True, "input", step)
        else:
            born = self.log.born(relation, row, step)
            if born is None:
                return None
            writer = self.log.written.get(born - 1, {}).get((relation, row))
            if writer is not None:  # (an earlier step: the search ends)
                return self._by_rule(writer, relation, row, born - 1, depth, "written")
            if (relation, row) in self.log.inputs.get(born, ()):
                line = self.facts.get((relation, row)) if born == 1 else None
                if line is not None:
                    return Explanation(relation, python_row(row), False, "fact",
                                       where=self.where(line))
                return Explanation(relation, python_row(row), False, "input", born)
        if depth <= 0:
            self._grew = True  # (a deeper search may find it)
            return None
        key = (relation, row, step)
        failed = self._failed.get(key)
        if failed is not None and (failed[0] >= depth or not failed[1]):
            self._grew = self._grew or failed[1]
            return None
        grew, self._grew = self._grew, False
        try:
            for rule in self.rules.get(relation, ()):
                found = self._by_rule(rule, relation, row, step, depth, "derived")
                if found is not None:
                    return found
            self._failed[key] = (depth, self._grew)
            return None
        finally:
            self._grew = grew or self._grew

    def _by_rule(self, rule: p.RulePlan, relation: str, row: Row, step: int, depth: int,
                 how: str) -> Explanation | None:
        state = self.state(step)
        event = relation in self.events
        if rule.aggregation is not None:
            return self._aggregate(rule, relation, row, step, depth, how)
        for env, used, head in self._instances(rule, row, state):
            if head != row:
                continue
            children = []
            for body_relation, body_row in used:
                child = self._prove(body_relation, body_row, step, depth - 1)
                if child is None:
                    break
                children.append(child)
            else:
                return Explanation(relation, python_row(row), event, how, step,
                                   rule.label, rule.text, self.where(rule.span),
                                   {k: python(v) for k, v in env.items()}, children)
        return None

    def _aggregate(self, rule: p.RulePlan, relation: str, row: Row, step: int, depth: int,
                   how: str) -> Explanation | None:
        aggregation = rule.aggregation
        assert aggregation is not None
        key = tuple(row[i] for i in aggregation.group)
        groups = aggregation.groups
        if isinstance(groups.driver, p.Seed):
            seeds: Iterable[tuple] = [tuple(key[c] for c in groups.driver.columns)]
        elif isinstance(groups.driver, p.Scan):
            seeds = self.state(step).rows(groups.driver.relation)
        else:
            seeds = ()
        found = [(env, used, head) for env, used, head in
                 _bindings(groups, seeds, self.state(step), self.functions)
                 if tuple(head[i] for i in aggregation.group) == key]
        # the bindings that give a min or max its value first (those are its reasons)
        value = row[aggregation.position]
        found.sort(key=lambda binding: aggregation.function in ("min", "max")
                   and binding[2][aggregation.position] != value)
        instances = [(env, used) for env, used, _ in found]
        if not instances and aggregation.function != "count":
            return None
        children = []
        for _, used in instances[:SHOWN_BINDINGS]:
            for body_relation, body_row in used:
                child = self._prove(body_relation, body_row, step, depth - 1)
                if child is None:  # (not within this depth: a deeper search may find it)
                    return None
                children.append(child)
        return Explanation(relation, python_row(row), relation in self.events, "aggregate",
                           step, rule.label, rule.text, self.where(rule.span),
                           children=children, count=len(instances))

    def _instances(self, rule: p.RulePlan, row: Row, state: _State,
                   reach: _Reach | None = None) -> Iterator[tuple[dict, list, Row]]:
        """The bindings of ``rule``'s body over ``state`` that may project ``row``: from
        the head row where the rule has a rederivation plan, else from each of its first
        atom's rows (or once, for a rule without one)."""
        if rule.rederive is not None:
            columns = rule.rederive.driver.columns  # type: ignore[union-attr]
            return _bindings(rule.rederive, [tuple(row[c] for c in columns)], state,
                             self.functions, reach)
        positive = [t for t in rule.triggers if not t.negated]
        if positive:
            plan = positive[0].insert
            return _bindings(plan, state.rows(positive[0].relation), state, self.functions,
                             reach)
        if rule.start is not None:
            return _bindings(rule.start, (), state, self.functions, reach)
        return iter(())

    # -- why not -------------------------------------------------------------------------------

    def why_not(self, relation: str, row: Row) -> list[Explanation]:
        """For each rule that could write ``row``: what its closest binding lacks."""
        state = self.state(self.step)
        found = []
        writers = [rule for rule in self.deferred.get(relation, ()) if rule.kind != "delete"]
        for rule in [*self.rules.get(relation, ()), *writers]:
            if rule.aggregation is not None:
                at = self.where(rule.span)
                found.append(Explanation(
                    relation, python_row(row), relation in self.events, "missing",
                    rule=rule.label, where=at, text=f"{rule.label} ({at}): {rule.text}\n  "
                    "an aggregate: its row for this group holds another value, or the group "
                    "has no binding"))
                continue
            fixed = _head_constant(rule, row)
            if fixed is not None:
                at = self.where(rule.span)
                column, value = fixed
                found.append(Explanation(
                    relation, python_row(row), relation in self.events, "missing",
                    rule=rule.label, where=at, text=f"{rule.label} ({at}): {rule.text}\n  "
                    f"its head writes {format_value(value)} in field {column + 1}, not "
                    f"{format_value(row[column])}"))
                continue
            reach = _Reach()
            heads = [head for _, _, head in self._instances(rule, row, state, reach)]
            found.append(self._missing(rule, relation, row, reach, heads))
        return found

    def _missing(self, rule: p.RulePlan, relation: str, row: Row, reach: _Reach,
                 heads: list[Row]) -> Explanation:
        by = f"{rule.label} ({self.where(rule.span)}): {rule.text}"
        binding = {k: python(v) for k, v in reach.env.items()}
        blocked = reach.blocked
        if row in heads:
            what = "it derives this tuple: the tuple is there" if rule.deferred is False else \
                "it writes this tuple at the end of the step: it arrives in the next one"
        elif reach.depth < 0:
            what = "no binding of its body matches"
        elif isinstance(blocked, p.Join):
            arity = self.plan.relations[blocked.relation].arity
            what = f"no {_join_text(blocked, arity, reach.env, self.functions)} matches"
        elif isinstance(blocked, p.AntiJoin):
            what = f"notin {blocked.relation}: a matching row is there"
        elif isinstance(blocked, p.Filter):
            what = f"{p.format_expr(blocked)} is false"
        elif blocked is None:
            what = "its bindings project other rows"
        else:
            what = "an expression fails"
        used = ", ".join(format_tuple(r, python_row(x), event=r in self.events)
                         for r, x in reach.used)
        text = f"{by}\n  {what}" + (f" (after {used})" if used else "")
        return Explanation(relation, python_row(row), relation in self.events, "missing",
                           rule=rule.label, where=self.where(rule.span), text=text,
                           binding=binding)


def _head_constant(rule: p.RulePlan, row: Row) -> tuple[int, Any] | None:
    """A field the rule's head writes as a constant other than ``row``'s: (column, value)."""
    plan = rule.rederive or next((t.insert for t in rule.triggers), None) or rule.start
    if plan is None:
        return None
    for column, term in enumerate(plan.project.terms):
        if isinstance(term, p.Const) and column < len(row) and term.value != row[column]:
            return column, term.value
    return None


def _join_text(join: p.Join, arity: int, env: Mapping[str, Any],
               functions: Mapping[str, Callable]) -> str:
    """The atom a join looks for, its known values filled in: ``reach("b", Z)``."""
    names = dict.fromkeys(range(arity), "_")
    for column, var in join.binds:
        names[column] = var if not var.startswith("#") else "_"
    for column, term in zip(join.key, join.key_terms, strict=True):
        try:
            names[column] = format_value(_value(term, env, functions))
        except _Skip:
            names[column] = "?"
    for column, expr in join.checks:
        try:
            names[column] = format_value(_value(expr, env, functions))
        except _Skip:
            names[column] = "?"
    return f"{join.relation}({', '.join(names[c] for c in sorted(names))})"
