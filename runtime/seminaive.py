"""The one fixpoint loop: stratum by stratum, semi-naive, with views maintained under deletion.

Per stratum (its inputs, lower strata and this step's input changes, are complete):
  A. aggregate rules recompute the groups their inputs touched;
  B. over-deletion (DRed): everything with a derivation through a removed tuple (or through a
     `notin` whose tuple appeared) is removed, reading the tables as they were before;
  C. rederivation: removed tuples that still have a derivation come back;
  D. insertion: semi-naive from the new tuples (and from tuples that left a negated relation).
Deferred rules (buffered writes, deletes, remote heads) then run once on what is new in the
step. Nothing here knows about time, queues or listeners (runtime/engine.py does).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from overlog import syntax as s
from overlog.analysis import CheckedProgram, RuleInfo
from overlog.plan import RulePlans
from overlog.planner import plan_rule, plan_variant
from overlog.printer import format_tuple
from runtime.builtins import aggregate
from runtime.local import PlanFailure, Runner, compile_plan
from runtime.store import Row, Table


class EvaluationError(Exception):
    """A rule failed while evaluating: carries the runtime error code (E301 evaluation, E302
    division by zero, E303 key conflict), the rule and its binding."""

    def __init__(self, code: str, rule: RuleInfo, message: str,
                 binding: dict[str, Any] | None = None):
        super().__init__(message)
        self.code = code
        self.rule = rule
        self.message = message
        self.binding = binding or {}


@dataclass(slots=True)
class Trigger:
    kind: str  # "pos" | "neg"
    relation: str
    insert: Runner
    delete: Runner


class CompiledRule:
    """A rule's plans compiled for the local backend, and what evaluating it needs."""

    def __init__(self, info: RuleInfo, plans: RulePlans, tables: dict[str, Table],
                 functions: dict[str, Callable]) -> None:
        self.info = info
        self.plans = plans
        rule = info.rule
        self.head = rule.head.name
        self.head_event = rule.head.event
        self.aggregate = plans.aggregate
        self.group = plans.group
        # insertion into a set-semantics table needs only the rows it lacks: the plans
        # test that themselves (buffered writes and aggregates see every row)
        self.novel_only = (not info.deferred and self.aggregate is None
                           and not tables[self.head].keyed)
        novel = self.head if self.novel_only else None
        self.triggers: list[Trigger] = []
        for plan in plans.triggers:
            kind, _, position = plan.driver.partition(":")
            literal = rule.body[int(position)]
            atom = literal if isinstance(literal, s.Atom) else literal.atom  # type: ignore
            self.triggers.append(Trigger(
                kind, atom.name, compile_plan(plan, tables, functions, "insert", novel),
                compile_plan(plan, tables, functions, "delete")))
        self.full = compile_plan(plans.full, tables, functions, "insert")
        # a rule with no positive atom has nothing new to fire it: it fires at the first
        # step (its one, empty combination is new then), and views follow their negations
        self.unit = compile_plan(plan_variant(info.index, rule, "bound"), tables, functions,
                                 "insert", novel) if info.fires_at_start else None
        # How to pre-bind the full plan's variables from a head row (rederivation, groups).
        prebound: list[str] = []
        positions: list[int] = []
        for i, arg in enumerate(rule.head.args):
            if isinstance(arg, s.Var) and arg.name not in prebound:
                prebound.append(arg.name)
                positions.append(i)
        self.seed_positions = tuple(positions)
        self.group_is_plain = all(isinstance(rule.head.args[i], s.Var) for i in self.group)
        self.zero_probe = self._zero_probe(tables, functions)

    def _zero_probe(self, tables: dict[str, Table], functions: dict[str, Callable],
                    ) -> list[tuple[str, Runner]] | None:
        """For `count` triggered by events (P2): plans yielding each event binding's group,
        so that a binding with no match still yields a row with count 0."""
        rule = self.info.rule
        if self.aggregate is None or self.aggregate[1] != "count":
            return None
        events = [lit for lit in rule.body if isinstance(lit, s.Atom) and lit.event]
        if not events:
            return None
        body: list[s.Literal] = list(events)
        bound = {v.name for a in events for v in s.variables(a)}
        others = [lit for lit in rule.body if isinstance(lit, (s.Assign, s.Comparison))]
        changed = True
        while changed:
            changed = False
            for lit in list(others):
                inputs = lit.expr if isinstance(lit, s.Assign) else lit
                if {v.name for v in s.variables(inputs)} <= bound:
                    body.append(lit)
                    others.remove(lit)
                    if isinstance(lit, s.Assign):
                        bound.add(lit.var.name)
                    changed = True
        group_terms = tuple(rule.head.args[i] for i in self.group)
        if not {v.name for t in group_terms for v in s.variables(t)} <= bound:
            return None
        probe = s.Rule(head=s.Atom(name=rule.head.name, args=group_terms, event=True),
                       body=tuple(body))
        runners = []
        for i, lit in enumerate(probe.body):
            if isinstance(lit, s.Atom):
                plan = plan_variant(self.info.index, probe, f"pos:{i}")
                runners.append((lit.name, compile_plan(plan, tables, functions, "insert")))
        return runners

    def zero_rows(self, tables: dict[str, Table], found: dict[tuple, Row]) -> list[Row]:
        """count-0 rows for this step's event bindings that matched nothing."""
        keys: list[tuple] = []
        for relation, runner in self.zero_probe or ():
            seed = tables[relation].added
            if seed:
                try:
                    runner(list(seed), keys.append)
                except PlanFailure as failure:
                    raise self.failure(failure) from failure.cause
        position = self.aggregate[0]  # type: ignore[index]
        rows = []
        for key in dict.fromkeys(keys):
            if key not in found:
                row = list(key)
                row.insert(position, 0)
                rows.append(tuple(row))
        return rows

    def run(self, runner: Runner, seed: Iterable[tuple], emit: Callable) -> None:
        try:
            runner(seed, emit)
        except PlanFailure as failure:
            raise self.failure(failure) from failure.cause

    def failure(self, failure: PlanFailure) -> EvaluationError:
        cause = failure.cause
        message = (str(cause) if isinstance(cause, ZeroDivisionError)
                   else f"{type(cause).__name__}: {cause}")
        code = "E302" if isinstance(cause, ZeroDivisionError) else "E301"
        return EvaluationError(code, self.info, message, failure.binding)

    def run_trigger(self, trigger: Trigger, mode: str, seed: Iterable[Row],
                    emit: Callable, exclude: dict[str, set[Row]] | None = None) -> None:
        try:
            (trigger.insert if mode == "insert" else trigger.delete)(seed, emit, exclude or {})
        except PlanFailure as failure:
            raise self.failure(failure) from failure.cause

    def seeds_of(self, rows: set[Row]) -> Iterable[tuple]:
        """The full plan's pre-bound values for each head row (the rows themselves when
        the head is distinct variables in order)."""
        positions = self.seed_positions
        if positions == tuple(range(len(self.info.rule.head.args))):
            return rows
        return {tuple(row[i] for i in positions) for row in rows}

    def evaluate_groups(self, groups: Iterable[tuple], tables: dict[str, Table]) -> dict:
        """Group key -> aggregated head row, over all current bindings of those groups."""
        bags: dict[tuple, list] = defaultdict(list)
        group, (position, func, _) = self.group, self.aggregate  # type: ignore[misc]

        def collect(row: Row) -> None:
            bags[tuple(row[i] for i in group)].append(row[position])

        wanted = set(groups)
        if self.group_is_plain:
            seeds = [tuple(self._group_seed(g)) for g in wanted]
            self.run(self.full, seeds, collect)
        elif self.unit is not None:  # no positive atom: evaluate the whole rule
            self.run(self.unit, [()], collect)
        else:  # group columns are expressions: evaluate the whole rule
            first = next(t for t in self.triggers if t.kind == "pos")
            self.run_trigger(first, "insert", list(tables[first.relation].rows), collect)
        result = {}
        for key in wanted:
            values = bags.get(key)
            if values:
                try:
                    value = aggregate(func, values)
                except TypeError as error:
                    raise EvaluationError("E301", self.info, f"TypeError: {error}") from error
                row = list(key)
                row.insert(position, value)
                result[key] = tuple(row)
        return result

    def _group_seed(self, key: tuple) -> list:
        by_position = dict(zip(self.group, key, strict=True))
        return [by_position[i] for i in self.seed_positions]


def _restore_group(args: tuple[dict, tuple, Row | None]) -> None:
    state, key, row = args
    if row is None:
        state.pop(key, None)
    else:
        state[key] = row


def _count(args: tuple[Counter, Row, int]) -> None:
    support, row, delta = args
    support[row] += delta
    if support[row] <= 0:
        del support[row]


@dataclass(slots=True)
class DeferredOutput:
    writes: list[tuple[CompiledRule, Row]]
    deletes: list[tuple[CompiledRule, Row]]
    sends: list[tuple[CompiledRule, Row]]


class Fixpoint:
    """Evaluates one checked program over a set of tables, one step at a time."""

    # over-deletion of at most this many rows never switches to evaluating afresh
    RECOMPUTE_MIN = 1000

    def __init__(self, checked: CheckedProgram, tables: dict[str, Table],
                 functions: dict[str, Callable]) -> None:
        self.tables = tables
        self.rules: list[CompiledRule] = []
        for info in checked.rules:
            view = info.kind == "view" and not info.remote
            plans = plan_rule(info.index, info.rule, with_negation_drivers=view)
            self.rules.append(CompiledRule(info, plans, tables, functions))
        self.strata = [[self.rules[i] for i in stratum.rules] for stratum in checked.strata]
        self.deferred = [r for r in self.rules if r.info.deferred]
        self.aggregate_state: dict[int, dict[tuple, Row]] = {
            r.info.index: {} for r in self.rules if r.aggregate and not r.head_event}
        self.view_heads = {r.head for r in self.rules
                           if r.info.kind == "view" and not r.info.deferred}
        # rows of each relation supported by aggregate groups (an aggregate row is derived,
        # and may also be derived by another rule)
        self.aggregate_support: dict[str, Counter] = defaultdict(Counter)
        # new head tuples each rule derived in the current step (for --trace); reset per step
        self.firings: Counter = Counter()
        self.initial = False  # the current step is the first: rules without atoms fire

    # -- one step -----------------------------------------------------------------------

    def run(self, initial: bool = False) -> DeferredOutput:
        """One step's fixpoint and deferred rules; ``initial`` for the engine's first step."""
        self.firings = Counter()
        self.initial = initial
        for rules in self.strata:
            self._stratum(rules)
        return self._deferred()

    def _snapshot(self, rules: list[CompiledRule]) -> tuple[dict, dict]:
        reads = {t.relation for r in rules for t in r.triggers} | {r.head for r in rules}
        plus = {name: self._net_added(name) for name in reads}
        minus = {name: set(self.tables[name].removed) for name in reads}
        return plus, minus

    def _net_added(self, name: str) -> set[Row]:
        """A copy of the rows ``name`` gained in the step so far (its batches unmerged)."""
        return set().union(*self.tables[name].added_parts())

    def _stratum(self, rules: list[CompiledRule]) -> None:
        views = [r for r in rules if not r.head_event and r.aggregate is None]
        events = [r for r in rules if r.head_event and r.aggregate is None]
        aggregates = [r for r in rules if r.aggregate is not None]
        plus, minus = self._snapshot(rules)
        for rule in aggregates:
            self._aggregate(rule, plus, minus)
        if aggregates:  # aggregate heads changed: they seed this stratum's other rules
            for name in {r.head for r in aggregates}:
                plus[name] = self._net_added(name)
                minus[name] = set(self.tables[name].removed)
        overdeleted = self._overdelete(views, plus, minus)
        if overdeleted is None:  # cheaper to evaluate the stratum's views afresh
            self._insert(views, {}, {}, self._recompute(views))
        else:
            rederived = self._rederive(views, overdeleted)
            for name, rows in rederived.items():
                plus[name] = plus.get(name, set()) | rows
            self._insert(views, plus, minus)
        if events:  # they fire on what is new in the step: rederived rows are not
            self._insert(events, *self._snapshot(events))

    def _aggregate(self, rule: CompiledRule, plus: dict, minus: dict) -> None:
        touched: set[tuple] = set()
        group = rule.group

        def touch(row: Row) -> None:
            touched.add(tuple(row[i] for i in group))

        if self.initial and rule.unit is not None:
            rule.run(rule.unit, [()], touch)
        for trigger in rule.triggers:
            grow, shrink = ((plus, minus) if trigger.kind == "pos" else (minus, plus))
            if grow.get(trigger.relation):
                rule.run_trigger(trigger, "insert", grow[trigger.relation], touch)
            if shrink.get(trigger.relation):
                rule.run_trigger(trigger, "delete", shrink[trigger.relation], touch)
        if not touched and not rule.zero_probe:
            return
        fresh = rule.evaluate_groups(touched, self.tables)
        self.firings[rule.info.label] += len(fresh)
        table = self.tables[rule.head]
        if rule.head_event:
            for row in [*fresh.values(), *rule.zero_rows(self.tables, fresh)]:
                if row not in table.rows:
                    table.add(row)
            return
        state = self.aggregate_state[rule.info.index]
        support = self.aggregate_support[rule.head]
        journal = table.journal.entries
        for key in touched:
            old, new = state.get(key), fresh.get(key)
            if old == new:
                continue
            journal.append((_restore_group, (state, key, old)))
            if old is not None:
                del state[key]
                journal.append((_count, (support, old, 1)))
                _count((support, old, -1))
                if (not support.get(old) and old in table.rows
                        and old not in table.asserted):
                    table.remove(old)  # another rule may rederive it
            if new is not None:
                state[key] = new
                journal.append((_count, (support, new, -1)))
                _count((support, new, 1))
                self._add_derived(rule, table, new)

    def _add_derived(self, rule: CompiledRule, table: Table, row: Row) -> bool:
        if row in table.rows:
            return False
        if table.keyed:
            holder = table.holder(row)
            if holder is not None:
                raise EvaluationError(
                    "E303", rule.info, f"key conflict: derived {format_tuple(table.name, row)} but "
                    f"{format_tuple(table.name, holder)} holds the same key")
        table.add(row)
        return True

    def _overdelete(self, views: list[CompiledRule], plus: dict, minus: dict,
                    ) -> dict[str, set[Row]] | None:
        """DRed's first phase: remove every derived row with a derivation through a removed
        row (or through a negated row that appeared). Returns what it removed, or None when
        that grew past a quarter of the stratum's derived rows (in a cycle, over-deletion
        removes nearly everything; evaluating afresh is then cheaper)."""
        heads = {r.head for r in views} & self.view_heads
        overdeleted: dict[str, set[Row]] = {h: set(minus.get(h, ())) for h in heads}
        derived = sum(len(self.tables[h].rows) - len(self.tables[h].asserted) for h in heads)
        budget = max(self.RECOMPUTE_MIN, derived // 4)
        delta = minus
        first = True
        while True:
            found: dict[str, list[Row]] = defaultdict(list)
            for rule in views:
                for trigger in rule.triggers:
                    seed = (delta.get(trigger.relation) if trigger.kind == "pos"
                            else plus.get(trigger.relation) if first else None)
                    if seed:
                        rule.run_trigger(trigger, "delete", seed, found[rule.head].append)
            first = False
            delta = {}
            for name, rows in found.items():
                gone = self._derived_only(name, set(rows) & self.tables[name].rows)
                if gone:
                    self.tables[name].remove_many(gone)
                    overdeleted[name] |= gone
                    delta[name] = gone
                    budget -= len(gone)
            if not delta:
                return overdeleted
            if budget < 0:
                return None

    def _derived_only(self, name: str, rows: set[Row]) -> set[Row]:
        """``rows`` without those asserted or supported by an aggregate group."""
        rows -= self.tables[name].asserted
        kept = self.aggregate_support.get(name)
        if kept:
            rows -= kept.keys()
        return rows

    def _recompute(self, views: list[CompiledRule]) -> dict[CompiledRule, set[Row]]:
        """Remove every derived row of the views' heads, and derive anew from the current
        tables: the first round of a from-scratch evaluation (semi-naive goes on from it)."""
        for head in {r.head for r in views} & self.view_heads:
            table = self.tables[head]
            gone = self._derived_only(head, set(table.rows))
            if gone:
                table.remove_many(gone)
        found: dict[CompiledRule, set[Row]] = defaultdict(set)
        for rule in views:
            if rule.unit is not None:
                rule.run(rule.unit, [()], found[rule].add)
            # the first positive atom's plan reads every other atom in full
            first = next((t for t in rule.triggers if t.kind == "pos"), None)
            if first is not None:
                rule.run_trigger(first, "insert", list(self.tables[first.relation].rows),
                                 found[rule].add)
        return found

    def _rederive(self, views: list[CompiledRule], overdeleted: dict[str, set[Row]],
                  ) -> dict[str, set[Row]]:
        rederived: dict[str, set[Row]] = {}
        for rule in views:
            candidates = overdeleted.get(rule.head)
            if not candidates:
                continue
            table = self.tables[rule.head]
            back: list[Row] = []
            rule.run(rule.full, rule.seeds_of(candidates), back.append)
            for row in back:
                if row in candidates and row not in table.rows:
                    table.add(row)
                    rederived.setdefault(rule.head, set()).add(row)
        return rederived

    def _insert(self, rules: list[CompiledRule], plus: dict, minus: dict,
                found: dict[CompiledRule, set[Row]] | None = None) -> None:
        """Semi-naive insertion from the new rows ``plus`` (and, for views, the rows that
        left a negated relation, ``minus``); ``found`` replaces the first round."""
        delta = plus
        first = True
        while True:
            if found is None:
                found = defaultdict(set)
                for rule in rules:
                    if first and self.initial and rule.unit is not None:
                        rule.run(rule.unit, [()], found[rule].add)
                    for trigger in rule.triggers:
                        seed = (delta.get(trigger.relation) if trigger.kind == "pos"
                                else minus.get(trigger.relation) if first else None)
                        if seed:
                            rule.run_trigger(trigger, "insert", seed, found[rule].add, delta)
            first = False
            delta = {}
            for rule, rows in found.items():
                table = self.tables[rule.head]
                if table.keyed:
                    for row in rows:
                        if self._add_derived(rule, table, row):
                            self.firings[rule.info.label] += 1
                            delta.setdefault(rule.head, set()).add(row)
                    continue
                # another rule may have added some of these rows in this round
                new = rows if rule.novel_only and rule.head not in delta else \
                    rows - table.rows
                self.firings[rule.info.label] += len(new)
                if new:
                    table.add_new(new)  # journals ``new``: not to be mutated from here on
                    if rule.head in delta:
                        delta[rule.head] = delta[rule.head] | new
                    else:
                        delta[rule.head] = new
            found = None
            if not delta:
                return

    def _deferred(self) -> DeferredOutput:
        out = DeferredOutput([], [], [])
        for rule in self.deferred:
            rows: list[Row] = []
            new = {t.relation: self.tables[t.relation].added for t in rule.triggers}
            if self.initial and rule.unit is not None:
                rule.run(rule.unit, [()], rows.append)
            for trigger in rule.triggers:
                seed = new[trigger.relation]
                if seed:
                    rule.run_trigger(trigger, "insert", list(seed), rows.append, new)
            if rule.aggregate is not None:
                fresh = rule.evaluate_groups({tuple(r[i] for i in rule.group) for r in rows},
                                             self.tables) if rows else {}
                rows = [*fresh.values(), *rule.zero_rows(self.tables, fresh)]
            if not rows:
                continue
            self.firings[rule.info.label] += len(rows)
            target = (out.sends if rule.info.remote else
                      out.deletes if rule.info.kind == "delete" else out.writes)
            target.extend((rule, row) for row in dict.fromkeys(rows))
        return out
