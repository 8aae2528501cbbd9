"""The one fixpoint loop: stratum by stratum, semi-naive, with views maintained under deletion.

Per stratum (its inputs, lower strata and this step's input changes, are complete):
  A. aggregate rules recompute the groups their inputs touched;
  B. over-deletion (DRed): everything with a derivation through a removed tuple (or through a
     `notin` whose tuple appeared) is removed, reading the tables as they were before; in a
     recursive stratum, a tuple is first checked for a derivation from tuples born before
     it that remain, and stays if it has one (``_overdelete_checked``);
  C. rederivation: removed tuples that still have a derivation come back;
  D. insertion: semi-naive from the new tuples (and from tuples that left a negated relation).
Deferred rules (buffered writes, deletes, remote heads) then run once on what is new in the
step. Nothing here knows about time, queues or listeners (runtime/engine.py does), nor how
rows are stored or plans evaluated: it runs the ProgramPlan's plans through a Backend over a
Store (runtime/backend.py).
"""

from __future__ import annotations

import heapq
import math
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Collection, Iterable, Mapping, Set
from dataclasses import dataclass, replace
from functools import partial
from operator import itemgetter
from time import perf_counter
from typing import Any, Protocol

from overlog import plan as p
from overlog.limits import MAX_ROUNDS, MAX_TUPLES
from overlog.printer import format_tuple
from overlog.runtime.backend import (
    UNCAPPED,
    Backend,
    Evaluator,
    FunctionError,
    Incomparable,
    Overflow,
    PlanFailure,
    Row,
)
from overlog.runtime.builtins import ValueFault
from overlog.runtime.profile import Profile, RuleStats, StratumStats
from overlog.values import IntFloat, comparison_error, type_name

NOTHING: Mapping[str, Set[Row]] = {}


class EvaluationError(Exception):
    """A rule failed while evaluating: carries the runtime error code (E301 evaluation, E302
    division by zero, E303 key conflict of a derived row, E307 step limit), the rule, its
    binding and the expression that failed (where known). When the plan was driven by rows
    of a relation (``source``), ``failures`` holds every failing one of the batch with its
    own (code, message, binding, expression): the inputs to blame."""

    def __init__(self, code: str, rule: p.RulePlan, message: str,
                 binding: dict[str, Any] | None = None, source: str | None = None,
                 failures: list[tuple[tuple, str, str, dict[str, Any], Any]] | None = None,
                 expr: p.Expr | None = None):
        super().__init__(message)
        self.code = code
        self.rule = rule
        self.message = message
        self.binding = binding or {}
        self.source = source
        self.failures = failures or []
        self.expr = expr


def _described(cause: BaseException) -> tuple[str, str]:
    """The code and message of what an expression raised."""
    if isinstance(cause, ZeroDivisionError):
        return "E302", str(cause)
    if isinstance(cause, (ValueFault, FunctionError)):  # (the latter: a user function's)
        return "E301", str(cause)
    if isinstance(cause, TypeError):
        unordered = comparison_error(str(cause))
        if unordered is not None:
            return "E301", unordered
    return "E301", f"{type(cause).__name__}: {cause}"


@dataclass(slots=True)
class _Budget:
    """How many more tuples the current step may derive (its rules' evaluations are capped
    by it)."""

    max_tuples: int
    left: int


class _Lazy:
    """A plan prepared on the backend when first evaluated: most plans a program has
    (deletion, rederivation, regrouping) never run in most steps, and compiling them is
    most of a small program's first step."""

    __slots__ = ("evaluator", "plan", "prepare", "replace")

    def __init__(self, prepare: Callable[[p.Plan], Evaluator], plan: p.Plan) -> None:
        self.prepare = prepare
        self.plan = plan
        # puts the evaluator where this stood, once prepared (a trigger's insertion plan,
        # run every round: one call less)
        self.replace: Callable[[Evaluator], None] | None = None
        self.evaluator: Evaluator | None = None

    def __call__(self, seed: Iterable[tuple], exclude: Mapping[str, Set[Row]] = NOTHING,
                 cap: int = UNCAPPED) -> Collection[Row]:
        return (self.evaluator or self._prepared())(seed, exclude, cap)

    def improve(self, *args: Any) -> dict[Any, Row]:
        """The evaluator's ``improve`` (a recursive min/max's candidates: see Evaluator)."""
        return (self.evaluator or self._prepared()).improve(*args)  # type: ignore[attr-defined]

    def _prepared(self) -> Evaluator:
        evaluator = self.evaluator
        if evaluator is None:
            evaluator = self.evaluator = self.prepare(self.plan)
            if self.replace is not None:
                self.replace(evaluator)
        return evaluator


@dataclass(slots=True)
class _Trigger:
    relation: str
    negated: bool
    insert: Evaluator
    delete: Evaluator | None


class _Rule:
    """A rule's plans prepared on the backend, and what evaluating them needs."""

    def __init__(self, plan: p.RulePlan, backend: Backend, arity: int,
                 budget: _Budget, cycle: Set[str] | None = None) -> None:
        """``cycle``: the relations of the recursive min/max whose rule this is, if it is
        one. Its groups are recomputed only after removals, and the plans of its triggers
        outside the cycle run mostly when those relations change in a later step (the
        first step, and a step that changes the cycle's own rows, evaluate it afresh from
        each rule's first positive atom, most often one of the cycle's): the indexes of
        those plans are built when they first run, not kept up to date from the start (on
        SSSP, the distances' index on their node: a fifth of the query on a loaded
        graph)."""
        self.plan = plan
        self.budget = budget
        self.name = f"rule `{plan.name}`" if plan.name else plan.label
        self.label = plan.label
        self.index = plan.index  # what its firings are counted under
        self.stats: RuleStats | None = None  # profiled: where its time is added
        self.triggered_by = frozenset(t.relation for t in plan.triggers)
        self.reads = self.triggered_by | {plan.head}
        self.head = plan.head
        self.head_event = plan.head_event

        def prepare(each: p.Plan, indexed: bool = True) -> Evaluator:
            if indexed:  # now, so that they are kept up to date from the start
                backend.create_indexes(each)
            return _Lazy(backend.prepare, each)  # compiled when it first runs

        self.triggers = []
        for t in plan.triggers:
            eager = cycle is None or t.relation in cycle
            trigger = _Trigger(t.relation, t.negated, prepare(t.insert, eager),
                               prepare(t.delete, eager) if t.delete is not None else None)
            trigger.insert.replace = partial(setattr, trigger, "insert")  # type: ignore
            self.triggers.append(trigger)
        self.start = prepare(plan.start) if plan.start is not None else None
        self._start = self.start
        self.offered = plan  # the plan offloads evaluate: without ``start`` if it may not fire
        self.rederive = prepare(plan.rederive) if plan.rederive is not None else None
        # insertion into a set-semantics table: the plans emit only the rows it lacks
        self.novel_only = any(t.insert.project.unless_in for t in plan.triggers)
        self.rederive_columns: tuple[int, ...] | None = None  # None: the head rows as they are
        if plan.rederive is not None:
            columns = plan.rederive.driver.columns  # type: ignore[union-attr]
            if columns != tuple(range(arity)):
                self.rederive_columns = columns
        aggregation = self.aggregation = plan.aggregation
        self.groups: Evaluator | None = None
        self.zero: list[tuple[str, Evaluator]] = []
        self.every: Evaluator | None = None
        if aggregation is not None:
            self.groups = prepare(aggregation.groups, indexed=cycle is None)
            if aggregation.every is not None:
                self.every = prepare(aggregation.every)
            self.zero = [(z.driver.relation, prepare(z))  # type: ignore[union-attr]
                         for z in aggregation.zero]

    def fire(self, start: bool) -> None:
        """Whether the rule fires without atoms (it has no positive atom), here and where an
        offload evaluates it."""
        self.start = self._start if start else None
        self.offered = self.plan if start else replace(self.plan, start=None)

    def run(self, evaluator: Evaluator, seed: Iterable[tuple],
            exclude: Mapping[str, Set[Row]] = NOTHING, source: str | None = None,
            capped: bool = True) -> Collection[Row]:
        """The evaluator's rows; ``source`` names the relation the seed rows come from.
        Plans that derive the step's new tuples are capped by the tuple budget; plans that
        only find rows (groups to recompute, over-deletion, rederivation, sources) are
        not: their rows are not new tuples."""
        stats = self.stats
        start = perf_counter() if stats is not None else 0.0
        try:
            return evaluator(seed, exclude, self.budget.left if capped else UNCAPPED)
        except Overflow as overflow:
            raise EvaluationError(
                "E307", self.plan, f"step limit: more than {self.budget.max_tuples:,} new "
                f"tuples in one step ({self.name} keeps deriving `{self.head}` tuples: "
                f"{overflow.rows:,} from one evaluation)") from None
        except PlanFailure as failure:
            code, message = _described(failure.cause)
            failures = [(seed_row, *_described(cause), binding, expr)
                        for seed_row, cause, binding, expr in failure.failures]
            raise EvaluationError(code, self.plan, message, failure.binding, source,
                                  failures if source else None, failure.expr) \
                from failure.cause
        finally:
            if stats is not None:
                stats.seconds += perf_counter() - start
                stats.evaluations += 1

    def rederive_seeds(self, rows: set[Row]) -> Iterable[tuple]:
        """The rederivation plan's seeds for head rows (the rows themselves when the head
        is distinct variables in order)."""
        columns = self.rederive_columns
        if columns is None:
            return rows
        return {tuple(row[i] for i in columns) for row in rows}

    def evaluate_groups(self, keys: Iterable[tuple], store) -> dict[tuple, Row]:
        """Group key -> aggregated head row, over all current bindings of those groups."""
        aggregation = self.aggregation
        assert aggregation is not None and self.groups is not None
        wanted = set(keys)
        driver = aggregation.groups.driver
        if isinstance(driver, p.Seed):
            columns = driver.columns
            rows = self.run(self.groups, [tuple(key[c] for c in columns) for key in wanted],
                            capped=False)
        elif isinstance(driver, p.Scan):  # the whole rule, from all rows of its first atom
            rows = self.run(self.groups, store.rows(driver.relation), source=driver.relation,
                            capped=False)
        else:
            rows = self.run(self.groups, (), capped=False)
        group = aggregation.group
        result = {}
        for row in rows:
            key = tuple(row[i] for i in group)
            if key in wanted:
                result[key] = row
        return result

    def zero_rows(self, store, found: Mapping[tuple, Row]) -> list[Row]:
        """The rows of this step's event bindings that matched nothing: a count of 0, a
        min or max of null (P2)."""
        keys: dict[tuple, None] = {}
        for relation, evaluator in self.zero:
            seed = store.added(relation)
            if seed:
                keys.update(dict.fromkeys(self.run(evaluator, seed, source=relation,
                                                   capped=False)))
        position = self.aggregation.position  # type: ignore[union-attr]
        empty = 0 if "count" in self.aggregation.function else None  # type: ignore[union-attr]
        return [(*key[:position], empty, *key[position:]) for key in keys if key not in found]


def _group_of(row: Row, position: int) -> Any:
    """A recursive min/max's group of a row: every column but ``position``; the bare value
    where that is one column (as an index key is), else a tuple."""
    if len(row) == 2:
        return row[1 - position]
    return row[:position] + row[position + 1:]


def _restore_groups(args: tuple[dict, dict]) -> None:
    groups, before = args
    for key, row in before.items():
        if row is None:
            groups.pop(key, None)
        else:
            groups[key] = row


def _restore_best(args: tuple[dict, str, dict]) -> None:
    best, head, groups = args
    best[head] = groups


_NUMBERS = frozenset({int, float, IntFloat})


class _Younger:
    """The rows of a relation born at or after a point, given its generations from then on,
    and those over-deleted: what the support check of ``_overdelete_checked`` excludes, as a
    set to a plan."""

    __slots__ = ("gens", "gone")

    def __init__(self, gens: list[Set[Row]], gone: Set[Row]) -> None:
        self.gens = gens
        self.gone = gone

    def __contains__(self, row: object) -> bool:
        if row in self.gone:
            return True
        for members in self.gens:  # noqa: SIM110 (a loop: no generator per probe)
            if row in members:
                return True
        return False

    def __bool__(self) -> bool:
        return True


def _arithmetic(expr: p.Expr) -> bool:
    """Whether ``expr`` adds or subtracts."""
    match expr:
        case p.Arith(op=op, left=left, right=right):
            return op in "+-" or _arithmetic(left) or _arithmetic(right)
        case p.Negate(operand=operand):
            return _arithmetic(operand)
        case p.Call(args=args) | p.MakeList(items=args) | p.Test(args=args):
            return any(map(_arithmetic, args))
    return False


def _better(rule: _Rule, value: Any, than: Any) -> bool:
    """Whether ``value`` is strictly better than ``than`` for a recursive min/max; values
    that do not compare fail the rule (E301)."""
    try:
        if rule.aggregation.function == "min":  # type: ignore[union-attr]
            return value < than
        return value > than
    except TypeError as error:
        raise EvaluationError("E301", rule.plan, comparison_error(str(error))
                              or str(error)) from None


def _count(args: tuple[Counter, Row, int]) -> None:
    support, row, delta = args
    support[row] += delta
    if support[row] <= 0:
        del support[row]




@dataclass(frozen=True, slots=True)
class Limits:
    """How far one step may go before it is stopped, rolled back and reported (E307): a
    program that derives without end (``n(Y) :- n(X), Y := X + 1.``) must not take the
    machine with it."""

    max_tuples: int = MAX_TUPLES  # new tuples derived in one step
    max_rounds: int = MAX_ROUNDS  # semi-naive rounds of one stratum in one step
    step_seconds: float | None = None  # wall-clock time of one step's fixpoint


class _Moved(Exception):
    """The views being evaluated move to the offload (see ``Fixpoint._views``), after
    ``rounds`` rounds, the last of which added ``delta`` (relation -> its new rows)."""

    def __init__(self, delta: dict[str, set[Row]], rounds: int) -> None:
        super().__init__()
        self.delta = delta
        self.rounds = rounds


@dataclass(frozen=True, slots=True)
class Held:
    """A head whose rows the offload holds (they never come back): how many rows its
    evaluation added and removed."""

    added: int
    removed: int


@dataclass(frozen=True, slots=True)
class Filled:
    """A head's rows to add (nothing removed), one set a generation (``births``: in the
    order its rounds derived them, as the local rounds do; else one set), with the store's
    indexes on them (``Store.fill``): the offload groups them from its columns for less
    than the store would pay indexing them one by one."""

    generations: list[set[Row]]
    indexes: dict[tuple[int, ...], dict[Any, list[Row]]]
    births: bool


class Offload(Protocol):
    """Evaluates rules elsewhere (Spark or DuckDB: ``name``); None leaves them here.
    ``evaluate``: a stratum's view rules, given the step's changes so far (relation -> rows
    added, rows removed) and how many new rows the step may still take (``cap``): each head's
    rows to add and rows no longer derived, or Held for a head whose rows stay there
    (the store releases them), or Filled for rows it adds with their indexes; ``forget``:
    the result was not taken (evaluate that stratum afresh next time). ``monotone``:
    ``evaluate`` for a recursive min/max. ``groups``: an aggregate rule's groups, group key
    (the head's other columns) -> row. ``held``: the relations whose rows it holds;
    ``changed``: whether the step changed any of them among ``relations``. When
    ``evaluate`` returns None it has put the held relations the stratum touches back in the
    store first, with the step's changes."""

    name: str
    held: Mapping[str, int]

    def begin_step(self) -> None:
        """A step starts (before its inputs apply)."""

    def watches(self, rules: list[p.RulePlan]) -> bool:
        """Whether a stratum's views evaluated here may move to the offload mid-step."""

    def moves(self, rules: list[p.RulePlan], store: Any, grown: int) -> bool:
        """Whether they move now (their tables have grown; the last local round added
        ``grown`` rows): evaluated there instead."""

    def changed(self, relations: Iterable[str]) -> bool: ...

    def continues(self, rules: list[p.RulePlan], store: Any, max_rounds: int,
                  delta: Mapping[str, set[Row]], cap: int,
                  ) -> dict[str, tuple[set[Row], set[Row]]] | None:
        """After ``moves`` said yes: the rows the views derive beyond the store's, the
        rounds here having derived everything but what ``delta`` (the last round's new
        rows) derives; None to start over (see ``evaluate``)."""

    def evaluate(self, rules: list[p.RulePlan], store: Any, max_rounds: int,
                 plus: Mapping[str, set[Row]], minus: Mapping[str, set[Row]],
                 cap: int) -> dict[str, tuple[set[Row], set[Row]] | Held | Filled] | None: ...

    def monotone(self, rules: list[p.RulePlan], store: Any, max_rounds: int,
                 plus: Mapping[str, set[Row]], minus: Mapping[str, set[Row]],
                 cap: int) -> dict[str, tuple[set[Row], set[Row]]] | None:
        """A recursive min/max stratum's rules (as ``evaluate`` takes views): each head's
        rows to add and rows no longer derived, the stratum evaluated afresh."""

    def forget(self, stratum: int, store: Any) -> None: ...

    def groups(self, rule: p.RulePlan, store: Any) -> dict[tuple, Row] | None: ...


@dataclass(slots=True)
class DeferredOutput:
    writes: list[tuple[p.RulePlan, Row]]
    deletes: list[tuple[p.RulePlan, Row]]
    # (rule, row, op): op "event", "insert", "delete", or "retract" (a remote view's row
    # no longer derived)
    sends: list[tuple[p.RulePlan, Row, str]]


def _forget_sent(args: tuple[set[Row], Counter, set[Row], set[Row]]) -> None:
    derived, rules, added, gone = args
    derived.difference_update(added)
    derived.update(gone)
    rules.subtract(added)
    rules.update(gone)
    for row in added:
        if not rules[row]:
            del rules[row]


class Fixpoint:
    """Evaluates one ProgramPlan on a backend's store, one step at a time."""

    # over-deletion of at most this many rows never switches to evaluating afresh
    RECOMPUTE_MIN = 1000
    # a support check of over-deletion past this many generations goes on without checks
    CHECK_GENERATIONS = 64

    def __init__(self, plan: p.ProgramPlan, backend: Backend, limits: Limits | None = None,
                 progress: Callable[[int, int, dict[str, int]], None] | None = None,
                 offload: Offload | None = None, profile: Profile | None = None) -> None:
        self.store = backend.store
        self.offload = offload
        self.limits = limits or Limits()
        # called after each round of insertion: (round, new tuples in the step so far,
        # relation -> tuples the round added)
        self.progress = progress
        self.new_rows = 0
        self.deadline: float | None = None
        relations = plan.relations
        self.budget = _Budget(self.limits.max_tuples, self.limits.max_tuples)
        monotone = {stratum.index for stratum in plan.strata if stratum.monotone}
        cycles = {stratum.index: stratum.relations for stratum in plan.strata
                  if stratum.monotone}
        self.rules = [_Rule(r, backend, relations[r.head].arity, self.budget,
                            cycles.get(r.stratum)) for r in plan.rules]  # type: ignore[arg-type]
        # each stratum's rules by role: views, event heads, aggregates; and the deferred
        # rules (see ``_arrange``)
        self._layers = [stratum.rules for stratum in plan.strata]
        self.dropped: set[int] = set()  # rules taken out of the program (``refuse_start``)
        self.strata: list[tuple[list[_Rule], list[_Rule], list[_Rule]]] = []
        self.deferred: list[_Rule] = []
        self._arrange()
        self.monotone = monotone
        self.strict = {stratum.index for stratum in plan.strata if stratum.strict}
        # recursive min/max strata that compute with + or -: their values must be numbers
        # (a string or list grows by `+` out of order: "a" < "ab" but "az" > "abz")
        self.adds = {stratum.index for stratum in plan.strata if stratum.monotone and any(
            _arithmetic(expr) for i in stratum.rules for _, planned in plan.rules[i].plans()
            for expr in (*planned.project.terms,
                         *(op.expr for op in planned.operators if isinstance(op, p.Let))))}
        # recursive min/max strata whose views each have at most one atom over the
        # stratum's relations: the rows a replaced row derived are found by over-deleting
        # from it
        self.linear = {stratum.index for stratum in plan.strata if stratum.monotone and all(
            sum(t.relation in stratum.relations for t in self.rules[i].triggers
                if not t.negated) <= 1
            for i in stratum.rules if self.rules[i].aggregation is None)}
        # recursive min/max strata each of whose rules reads at most one of the stratum's
        # relations: once the loop's first round has run its plans (those of triggers
        # outside the stratum join the heads' tables, before any improvement), no plan
        # reads the heads' tables, only the rows that propagate, as seeds; so the
        # improvements go into the store once, when the loop ends, rather than row by row
        # as they replace each other
        self.solo = {stratum.index for stratum in plan.strata if stratum.monotone and all(
            sum(t.relation in stratum.relations for t in self.rules[i].triggers) <= 1
            for i in stratum.rules)}
        # a view of such a stratum that, of the stratum's rules, only its min/max rules
        # read -> those rules and their triggers on it: its new rows are candidates in the
        # round that derives them, not the next (any order of propagation is exact:
        # _best_first), so that candidates compete as soon as they are found, as in the
        # recursive min's own rule (views of a recursive min/max have no keys: E228)
        self.feeds: dict[str, list[tuple[_Rule, _Trigger]]] = {}
        for stratum in plan.strata:
            if stratum.index in self.solo:
                rules = [self.rules[i] for i in stratum.rules]
                for head in {rule.head for rule in rules if rule.aggregation is None}:
                    readers = [(rule, trigger) for rule in rules for trigger in rule.triggers
                               if trigger.relation == head]
                    if readers and all(rule.aggregation is not None and not trigger.negated
                                       for rule, trigger in readers):
                        self.feeds[head] = readers
        # the head of each recursive min/max: group (_group_of) -> its row now (derived only)
        self.best: dict[str, dict[Any, Row]] = {
            r.head: {} for r in self.rules
            if r.aggregation is not None and r.plan.stratum in self.monotone}
        # each such head's value column, and whether greater is better
        self.ordering = {
            r.head: (r.aggregation.position, r.aggregation.function == "max")
            for r in self.rules if r.head in self.best}  # type: ignore[union-attr]
        self._floor: dict[str, dict[Any, Any]] = {}  # group -> best asserted value
        # the rows a recursive min/max replaced in this evaluation (once seen by its rules)
        self._replaced: dict[str, set[Row]] = defaultdict(set)
        # a view rule with a remote head: the rows it derives now (see _remote_view), the
        # relations it reads positively and negatively, and for each such head how many of
        # its rules derive each row (a row is sent while one does)
        self.sent: dict[int, set[Row]] = {}
        self.remote_reads: dict[int, tuple[set[str], set[str]]] = {}
        self.sent_by: dict[str, Counter] = {}
        for rule in self.deferred:
            if rule.plan.remote and rule.plan.kind == "view":
                plans = [t.insert for t in rule.plan.triggers]
                plans += [rule.plan.start] if rule.plan.start is not None else []
                self.sent[rule.plan.index] = set()
                self.sent_by.setdefault(rule.head, Counter())
                self.remote_reads[rule.plan.index] = (
                    {t.relation for t in rule.triggers},
                    {op.relation for plan in plans for op in plan.operators
                     if isinstance(op, p.AntiJoin)})
        self.keyed = {name: rel.keyed for name, rel in relations.items()}
        self.arity = {name: rel.arity for name, rel in relations.items()}
        self.aggregate_state: dict[int, dict[tuple, Row]] = {
            r.plan.index: {} for r in self.rules if r.aggregation and not r.head_event}
        self.view_heads = {r.head for r in self.rules
                           if r.plan.kind == "view" and not r.plan.deferred}
        # each recursive stratum's relations that its views both derive and read: the store
        # keeps when their rows were born, for the support check of over-deletion
        self.own = {stratum.index: stratum.own for stratum in plan.strata if stratum.own}
        for names in self.own.values():
            for name in names:
                self.store.track(name)
        # rows of each relation supported by aggregate groups (an aggregate row is derived,
        # and may also be derived by another rule)
        self.aggregate_support: dict[str, Counter] = defaultdict(Counter)
        # new head tuples each rule (by its index) derived in the current step, and each
        # stratum an offload ran ("stratum N on DuckDB"): for --trace; reset per step
        self.firings: defaultdict[int | str, int] = defaultdict(int)
        # rows over-deletion removed in the step (those rederived too): what deletions cost
        self.overdeleted_rows = 0
        self.held: dict[str, Held] = {}  # heads held in Spark: what the step changed there
        self._moving: list[p.RulePlan] | None = None  # views that may move mid-evaluation
        self.initial = False  # the current step is the first: rules without atoms fire
        # the rules without positive atoms whose firing is not dropped (their plan indexes,
        # in program order; see ``refuse_start``)
        self.starts = [rule.plan.index for rule in self.rules if rule.start is not None]
        self.profile = profile  # where time goes (runtime/profile.py), or None
        self._rounds: StratumStats | None = None  # profiled: the stratum running
        if profile is not None:
            for rule in self.rules:
                rule.stats = profile.rules[rule.plan.index]

    # -- one step -----------------------------------------------------------------------

    def run(self, initial: bool = False) -> DeferredOutput:
        """One step's fixpoint and deferred rules; ``initial`` for the engine's first step."""
        self.firings = defaultdict(int)
        self.held = {}
        self.initial = initial
        self.new_rows = 0
        self.overdeleted_rows = 0
        self.budget.left = self.limits.max_tuples
        seconds = self.limits.step_seconds
        self.deadline = None if seconds is None else time.monotonic() + seconds
        profile = self.profile
        for index, (views, events, aggregates) in enumerate(self.strata):
            if profile is not None:
                self._rounds = stats = profile.strata[index]
                start = perf_counter()
            try:
                if index in self.monotone:
                    self._monotone(views, aggregates)
                else:
                    self._stratum(views, events, aggregates)
            finally:
                if profile is not None:
                    stats.seconds += perf_counter() - start
        if profile is None:
            return self._deferred()
        start = perf_counter()
        try:
            return self._deferred()
        finally:
            profile.strata[None].seconds += perf_counter() - start

    def refuse_start(self, index: int) -> None:
        """Take out of the program the rule of plan index ``index`` (of ``starts``), a rule
        without positive atoms that failed the first step: it derives nothing from then
        on, by any plan, here or on an offload (which is given the strata's rules)."""
        self.starts.remove(index)
        self.dropped.add(index)
        self._arrange()

    def restore_starts(self, indexes: Collection[int]) -> None:
        """Undo ``refuse_start`` (the step that dropped them never ran)."""
        self.dropped.difference_update(indexes)
        self.starts = sorted({*self.starts, *indexes})
        self._arrange()

    def _arrange(self) -> None:
        """Each stratum's rules by role (views, event heads, aggregates) and the deferred
        rules, those dropped left out."""
        self.strata = []
        for indexes in self._layers:
            rules = [self.rules[i] for i in indexes if i not in self.dropped]
            self.strata.append((
                [r for r in rules if not r.head_event and r.aggregation is None],
                [r for r in rules if r.head_event and r.aggregation is None],
                [r for r in rules if r.aggregation is not None]))
        self.deferred = [r for r in self.rules
                         if r.plan.deferred and r.index not in self.dropped]

    def fire_only(self, indexes: Collection[int]) -> None:
        """Let only the rules of these plan indexes (of ``starts``) fire without atoms, until
        called again with all of them (a search for the one whose firing fails)."""
        for index in self.starts:
            self.rules[index].fire(index in indexes)

    def _snapshot(self, rules: list[_Rule]) -> tuple[dict, dict]:
        """The step's changes so far to the relations ``rules`` read and write."""
        reads = rules[0].reads if len(rules) == 1 else set().union(*(r.reads for r in rules))
        return self.store.changes(reads)

    def _stratum(self, views: list[_Rule], events: list[_Rule],
                 aggregates: list[_Rule]) -> None:
        if not views and not aggregates:  # only event heads: they read the step as it is
            if events:
                self._insert(events, *self._snapshot(events))
            return
        rules = [*views, *events, *aggregates]
        plus, minus = self._snapshot(rules)
        offload = self.offload is not None and (
            any(plus.values()) or any(minus.values()) or self.initial
            or self.offload.changed(plus))
        for rule in aggregates:
            if not (offload and self._offloaded_groups(rule)):
                self._aggregate(rule, plus, minus)
        if aggregates:  # aggregate heads changed: they seed this stratum's other rules
            grown, shrunk = self.store.changes({r.head for r in aggregates})
            plus.update(grown)
            minus.update(shrunk)
        if offload and views:
            held = self.offload.held.keys() & plus.keys()  # type: ignore[union-attr]
            if self._offloaded(views, plus, minus):
                if events:
                    self._insert(events, *self._snapshot(events))
                return
            if held:  # back in the store, with the step's changes
                plus, minus = self._snapshot(rules)
        self._views(views, plus, minus)
        if events:  # they fire on what is new in the step: rederived rows are not
            self._insert(events, *self._snapshot(events))

    def _views(self, views: list[_Rule], plus: dict, minus: dict) -> None:
        """Evaluate the views here. With an offload that takes a stratum once its tables
        grow past a size (``--backend auto``), a stratum whose tables grow past it in this
        evaluation moves there at once: the offload continues from where the rounds here
        stopped (``Offload.continues``), or what they did is undone and it starts over."""
        offload = self.offload
        plans = [r.offered for r in views]
        if not views or offload is None or not offload.watches(plans):
            self._views_here(views, plus, minus)
            return
        mark = self.store.mark()
        saved = (self.firings.copy(), self.new_rows, self.budget.left)
        self._moving = plans
        try:
            self._views_here(views, dict(plus), minus)
            return
        except _Moved as moved:
            if self._offloaded(views, plus, minus, moved.delta, moved.rounds):
                return
            self.store.rollback_to(mark)
            self.firings, self.new_rows, self.budget.left = saved
        finally:
            self._moving = None
        if not self._offloaded(views, plus, minus):
            self._views_here(views, *self._snapshot(views))

    def _views_here(self, views: list[_Rule], plus: dict, minus: dict) -> None:
        store = self.store
        own = self.own.get(views[0].plan.stratum, ()) if views else ()  # type: ignore[arg-type]
        if own and all(store.ordered(name) for name in own):
            overdeleted = self._overdelete_checked(views, plus, minus, own)
        else:
            overdeleted = self._overdelete(views, plus, minus)
        if overdeleted is None:  # cheaper to evaluate the stratum's views afresh
            for name in own:  # every derived row is born anew, in order
                store.reset_births(name)
                store.set_ordered(name, True)
            self._insert(views, {}, {}, self._recompute(views))
        else:
            for name, rows in self._rederive(views, overdeleted).items():
                plus[name] = plus.get(name, set()) | rows
            self._insert(views, plus, minus)

    def _offloaded(self, views: list[_Rule], plus: dict, minus: dict,
                   delta: dict[str, set[Row]] | None = None, rounds: int = 0) -> bool:
        """Evaluate the views on the offload (Spark, DuckDB) and put what changed in the
        store; with ``delta``, continuing from the store as it is, after ``rounds`` rounds
        here, the last of which added ``delta``. False when the offload leaves the stratum
        to this fixpoint."""
        offload = self.offload
        assert offload is not None
        rules = [r.offered for r in views]
        found = (offload.evaluate(rules, self.store, self.limits.max_rounds, plus, minus,
                                  self.budget.left) if delta is None else
                 offload.continues(rules, self.store, self.limits.max_rounds - rounds,
                                   delta, self.budget.left))
        return found is not None and self._apply(views[0].plan.stratum, found)  # type: ignore[arg-type]

    def _offloaded_monotone(self, rules: list[_Rule], plus: dict, minus: dict) -> bool:
        """Evaluate a recursive min/max on the offload (Spark) and put what changed in the
        store, each head's groups following its derived rows; False when the offload
        leaves it to this fixpoint."""
        offload = self.offload
        assert offload is not None
        found = offload.monotone([r.offered for r in rules], self.store, self.limits.max_rounds,
                                 plus, minus, self.budget.left)
        if found is None or not self._apply(rules[0].plan.stratum, found):  # type: ignore[arg-type]
            return False
        store = self.store
        for rule in rules:
            if rule.aggregation is not None:
                head = rule.head
                position = rule.aggregation.position
                store.on_rollback(_restore_best, (self.best, head, self.best[head]))
                self.best[head] = {_group_of(row, position): row
                                   for row in store.rows(head) - store.asserted(head)}
        return True

    def _apply(self, stratum: int,
               found: Mapping[str, tuple[set[Row], set[Row]] | Held | Filled]) -> bool:
        """Put what the offload's evaluation of a stratum changed in the store; False (the
        offload told to forget it) when it passes a step limit."""
        offload = self.offload
        assert offload is not None
        count = sum(change.added if isinstance(change, Held) else
                    sum(map(len, change.generations)) if isinstance(change, Filled) else
                    len(change[0]) for change in found.values())
        if count > self.budget.left or (self.deadline is not None
                                        and time.monotonic() > self.deadline):
            offload.forget(stratum, self.store)
            return False  # past a step limit: evaluated here, which reports it (E307)
        self.budget.left -= count
        self.new_rows += count
        store = self.store
        for name in self.own.get(stratum, ()):  # rows derived there come here all at once,
            change = found.get(name)           # unless born as they were derived
            if not (isinstance(change, Filled) and change.births):
                store.set_ordered(name, False)
            elif not store.rows(name):  # (all of its rows now have their births)
                store.reset_births(name)
                store.set_ordered(name, True)
        label = f"stratum {stratum} on {offload.name}"
        for head, change in found.items():
            if isinstance(change, Held):  # its rows stay there
                store.release(head)
                self.firings[label] += change.added  # (0 too: it says where it ran)
                self.held[head] = change
                continue
            if isinstance(change, Filled):  # with its indexes
                store.fill(head, change.generations, change.indexes)
                self.firings[label] += sum(map(len, change.generations))
                continue
            new, old = change
            gone = self._derived_only(head, old)
            if gone:
                store.remove_many(head, gone)
            if new:
                if len(new) > len(store.rows(head)):  # indexed when a plan reads them
                    store.drop_indexes(head)
                store.add_many(head, new)
                self.firings[label] += len(new)
        return True

    def _monotone(self, views: list[_Rule], aggregates: list[_Rule]) -> None:
        """A recursive min/max: semi-naive on each group's improvements, from the step's new
        rows. When rows it reads went, what rested on them goes first (the groups they
        reach lose their rows, DRed-style) and those groups are recomputed from what
        remains; afresh at the first step, when that would remove a quarter of the
        stratum, or when asserted rows of its relations changed. At the end, what the
        stratum's views derived from rows since improved goes (over-deleted from those
        rows and rederived, or the views evaluated again when one reads two of the
        stratum's relations): they would otherwise keep what the worse values derived."""
        rules = [*views, *aggregates]
        plus, minus = self._snapshot(rules)
        if self.offload is not None and (
                any(plus.values()) or any(minus.values()) or self.initial
                or self.offload.changed(plus)):
            held = self.offload.held.keys() & plus.keys()
            if self._offloaded_monotone(rules, plus, minus):
                return
            if held:  # back in the store, with the step's changes
                plus, minus = self._snapshot(rules)
        heads = {rule.head for rule in rules}
        store = self.store
        self._floor = {}
        for rule in aggregates:
            position = rule.aggregation.position  # type: ignore[union-attr]
            floor = self._floor.setdefault(rule.head, {})
            for row in store.asserted(rule.head):
                key = _group_of(row, position)
                if key not in floor or _better(rule, row[position], floor[key]):
                    floor[key] = row[position]
        self._replaced = defaultdict(set)
        afresh = self.initial or any(plus.get(head) or minus.get(head) for head in heads)
        if not afresh and any((plus if trigger.negated else minus).get(trigger.relation)
                              for rule in rules for trigger in rule.triggers):
            found = self._monotone_removals(views, aggregates, plus, minus)
            if found is None:
                afresh = True
            else:
                self._insert(rules, {}, {}, found)
        if afresh:
            for head in {rule.head for rule in aggregates}:
                store.on_rollback(_restore_best, (self.best, head, self.best[head]))
                self.best[head] = {}
            self._insert(rules, {}, {}, self._recompute(rules))
        else:
            self._insert(rules, plus, minus)
        if self._replaced and views:  # what the views derived from replaced rows goes
            # (afresh too: the better part propagating first, few rows are replaced)
            if views[0].plan.stratum in self.linear:
                initial, self.initial = self.initial, False  # (the rules without atoms
                try:                                         # fired already)
                    self._views_here(views, {}, self._replaced)
                finally:
                    self.initial = initial
            else:
                self._insert(views, {}, {}, self._recompute(views))

    def _monotone_removals(self, views: list[_Rule], aggregates: list[_Rule], plus: dict,
                           minus: dict) -> dict[_Rule, Collection[Row]] | None:
        """Remove what rests on the rows that went (and on the negated rows that came): the
        view rows derived through them, and the row of every group that was one of the
        candidates derived through them (of every group they reach, in a loose stratum:
        overlog/analysis/monotone.py), transitively; then what remains derives again:
        each such group's best candidate, each such view row that still has a derivation
        (the first round of the semi-naive loop that follows). None, having removed
        nothing, when that reaches a quarter of the stratum's rows (evaluating it afresh
        is then cheaper)."""
        store = self.store
        rules = [*views, *aggregates]
        heads = {rule.head for rule in rules}
        size = sum(len(store.rows(head)) - len(store.asserted(head)) for head in heads)
        budget = max(self.RECOMPUTE_MIN, size // 4)
        mark = store.mark()
        gone: dict[str, set[Row]] = defaultdict(set)  # view rows removed
        groups: dict[str, set[Any]] = defaultdict(set)  # groups whose rows were removed
        delta, first = minus, True
        while delta or first:
            found: dict[_Rule, set] = defaultdict(set)
            for rule in rules:
                for trigger in rule.triggers:
                    seed = (plus.get(trigger.relation) if first else None) \
                        if trigger.negated else delta.get(trigger.relation)
                    if seed and trigger.delete is not None:
                        found[rule].update(rule.run(trigger.delete, seed,
                                                    source=trigger.relation, capped=False))
            first, delta = False, {}
            for rule, rows in found.items():
                head = rule.head
                if rule.aggregation is None:
                    rows = self._derived_only(head, rows & store.rows(head))
                    gone[head] |= rows
                else:  # candidates: a group whose row one of them was loses it (any
                    # group they reach, where its row may rest on itself alone)
                    best = self.best[head]
                    position = rule.aggregation.position  # type: ignore[union-attr]
                    strict = rule.plan.stratum in self.strict
                    keys = {key for row in rows
                            if (held := best.get(key := _group_of(row, position)))
                            is not None and (held == row or not strict)}
                    store.on_rollback(_restore_groups, (best, {key: best[key] for key in keys}))
                    rows = {best.pop(key) for key in keys} - store.asserted(head)
                    groups[head] |= keys
                if rows:
                    store.remove_many(head, rows)
                    delta[head] = delta.get(head, set()) | rows
                    budget -= len(rows)
            if budget < 0:
                store.rollback_to(mark)
                return None
        found = {}
        for rule in aggregates:
            if groups.get(rule.head):
                keys = groups[rule.head]
                if self.arity[rule.head] == 2:  # (bare values: see _group_of)
                    keys = {(key,) for key in keys}
                found[rule] = rule.evaluate_groups(keys, store).values()
        for rule in views:
            candidates = gone.get(rule.head)
            if candidates and rule.rederive is not None:
                found[rule] = {row for row in rule.run(rule.rederive,
                                                       rule.rederive_seeds(candidates),
                                                       capped=False) if row in candidates}
        return found

    def _improve(self, rule: _Rule, rows: Collection[Row] | None, waiting: dict[Any, Row],
                 pending: tuple[set[Row], set[Row]] | None = None,
                 plans: list[tuple[Evaluator, Collection[tuple], Mapping, str]] | None = None,
                 ) -> None:
        """Each group's candidate ``rows`` of a recursive min/max replace its row where the
        best of them is better (and better than its asserted rows); the new rows wait in
        ``waiting`` (group -> row) until they propagate. With ``pending`` (the rows added
        and replaced, for the store when the stratum's loop ends), the store is left as it
        is. With ``plans`` (triggers' insertion plans, each with its seed, what it excludes
        and the seed's relation) instead of ``rows``, the plans compare each candidate as
        they derive it (``improve``: no list of them)."""
        head = rule.head
        position = rule.aggregation.position  # type: ignore[union-attr]
        best = self.best[head]
        current = best.get
        improved: dict[Any, Row] = {}  # group -> its new row
        before: dict[Any, Row | None] = {}  # group -> its row until then (None: none)
        store = self.store
        store.on_rollback(_restore_groups, (best, before))
        minimum = rule.aggregation.function == "min"  # type: ignore[union-attr]
        incomparable = None  # (raised once every plan ran: an expression's failure first)
        for evaluator, seed, exclude, source in plans or ():
            found: dict[Any, Row] = {}  # (this evaluation's: what a step limit counts)
            try:
                rule.run(partial(_improving, evaluator, best, before, found), seed, exclude,
                         source)
            except Incomparable as error:
                incomparable = incomparable or error
            improved.update(found)
        if incomparable is not None:
            raise EvaluationError("E301", rule.plan, comparison_error(str(incomparable))
                                  or str(incomparable)) from None
        try:  # (one pass: a group's later candidates compare with its earlier ones)
            if rows is not None:  # (else the plans compared them)
                pair = self.arity[head] == 2  # the group one column: its bare value
                column = 1 - position
                for row in rows:
                    key = row[column] if pair else row[:position] + row[position + 1:]
                    held = current(key)
                    if held is None or (row[position] < held[position] if minimum
                                        else row[position] > held[position]):
                        if key not in before:
                            before[key] = held
                        best[key] = improved[key] = row
            floor = self._floor.get(head)
            if floor:  # no better than the group's asserted rows: as it was (the smaller
                for key in floor.keys() & improved.keys():  # of the two is iterated)
                    if not _better(rule, improved[key][position], floor[key]):
                        del improved[key]
                        held = before.pop(key)
                        if held is None:
                            del best[key]
                        else:
                            best[key] = held
        except TypeError as error:
            raise EvaluationError("E301", rule.plan, comparison_error(str(error))
                                  or str(error)) from None
        if not improved:
            return
        if rule.plan.stratum in self.adds:  # what enters the relation (all that propagates)
            for row in improved.values():
                if row[position].__class__ not in _NUMBERS:
                    raise EvaluationError(
                        "E301", rule.plan, f"a recursive {rule.aggregation.function} that "  # type: ignore[union-attr]
                        f"adds takes numbers, not {type_name(row[position])} values")
        replaced = {row for row in before.values() if row is not None}
        if replaced:
            if pending is None:
                store.remove_many(head, replaced - store.asserted(head))  # asserted rows stay
            else:
                pending[1].update(replaced)
            # rows of the stratum's views may rest on them: on those that propagated, or
            # on any where a view reads two of the stratum's relations (the second atom
            # joins every row there, waiting or not)
            stratum = rule.plan.stratum
            if self.strata[stratum][0]:
                if stratum in self.linear:
                    replaced -= {waiting[key] for key in improved if key in waiting}
                if replaced:
                    self._replaced[head] |= replaced
        waiting.update(improved)
        self.firings[rule.index] += len(improved)
        if pending is not None:
            pending[0].update(improved.values())
        elif self.keyed[head]:
            for row in improved.values():
                self._add_derived(rule, row)
        else:
            store.add_many(head, set(improved.values()))

    def _aggregate(self, rule: _Rule, plus: dict, minus: dict) -> None:
        store = self.store
        # (an event trigger's rows are all new at every step: event heads, whose groups
        # are the step's, keep the path below)
        if rule.every is not None and not rule.head_event and any(
                not trigger.negated and plus.get(trigger.relation)
                and len(plus[trigger.relation]) == len(store.rows(trigger.relation))
                for trigger in rule.triggers):  # every binding is new: every group
            relation = rule.aggregation.every.driver.relation  # type: ignore[union-attr]
            group = rule.aggregation.group  # type: ignore[union-attr]
            fresh = {tuple(row[i] for i in group): row for row in rule.run(
                rule.every, store.rows(relation), source=relation, capped=False)}
            self.firings[rule.index] += len(fresh)
            self._set_groups(rule, set(self.aggregate_state[rule.plan.index]) | set(fresh),
                             fresh)
            return
        touched: set[tuple] = set()
        if self.initial and rule.start is not None:
            touched.update(rule.run(rule.start, (), capped=False))
        for trigger in rule.triggers:
            grow, shrink = (minus, plus) if trigger.negated else (plus, minus)
            if grow.get(trigger.relation):
                touched.update(rule.run(trigger.insert, grow[trigger.relation],
                                        source=trigger.relation, capped=False))
            if shrink.get(trigger.relation) and trigger.delete is not None:
                touched.update(rule.run(trigger.delete, shrink[trigger.relation],
                                        source=trigger.relation, capped=False))
        if not touched and not rule.zero:
            return
        fresh = rule.evaluate_groups(touched, store)
        self.firings[rule.index] += len(fresh)
        head = rule.head
        if rule.head_event:
            rows = store.rows(head)
            for row in [*fresh.values(), *rule.zero_rows(store, fresh)]:
                if row not in rows:
                    store.add(head, row)
            return
        self._set_groups(rule, touched, fresh)

    def _offloaded_groups(self, rule: _Rule) -> bool:
        """Evaluate an aggregate rule's groups on the offload (Spark), all of them, and set
        what changed; False when the offload leaves the rule to this fixpoint."""
        if rule.head_event:
            return False
        fresh = self.offload.groups(rule.offered, self.store)  # type: ignore[union-attr]
        if fresh is None:
            return False
        state = self.aggregate_state[rule.plan.index]
        label = f"stratum {rule.plan.stratum} on {self.offload.name}"  # type: ignore[union-attr]
        self.firings[label] += sum(state.get(key) != row for key, row in fresh.items())
        self._set_groups(rule, set(state) | set(fresh), fresh)
        return True

    def _set_groups(self, rule: _Rule, touched: set[tuple], fresh: dict[tuple, Row]) -> None:
        """Each touched group's row becomes its ``fresh`` one (or goes), with its support:
        every old row goes before any new one comes (so that a keyed head's key freed by one
        group can be taken by another, whatever the order of the groups)."""
        store = self.store
        head = rule.head
        state = self.aggregate_state[rule.plan.index]
        support = self.aggregate_support[head]
        changed = [key for key in touched if state.get(key) != fresh.get(key)]
        for key in changed:
            old = state.get(key)
            store.on_rollback(_restore_groups, (state, {key: old}))
            if old is not None:
                del state[key]
                store.on_rollback(_count, (support, old, 1))
                _count((support, old, -1))
                if (not support.get(old) and old in store.rows(head)
                        and old not in store.asserted(head)):
                    store.remove(head, old)  # another rule may rederive it
        for key in changed:
            new = fresh.get(key)
            if new is not None:
                state[key] = new
                store.on_rollback(_count, (support, new, -1))
                _count((support, new, 1))
                self._add_derived(rule, new)

    def _add_derived(self, rule: _Rule, row: Row) -> bool:
        """Add a derived row to a keyed head, or one of a set-semantics head; a key held by
        another row is a conflict."""
        head = rule.head
        if row in self.store.rows(head):
            return False
        if self.keyed[head]:
            holder = self.store.holder(head, row)
            if holder is not None:
                raise EvaluationError(
                    "E303", rule.plan, f"key conflict: derived {format_tuple(head, row)} but "
                    f"{format_tuple(head, holder)} holds the same key")
        self.store.add(head, row)
        return True

    def _through(self, views: list[_Rule], plus: Mapping[str, set[Row]],
                 minus: Mapping[str, set[Row]]) -> dict[str, set[Row]]:
        """Each view head's rows with a derivation through the rows in ``minus`` or through
        the rows in ``plus`` of a relation it negates, read as the tables were before the
        step (the over-deletion plans)."""
        found: dict[str, set[Row]] = defaultdict(set)
        for rule in views:
            for trigger in rule.triggers:
                seed = (plus if trigger.negated else minus).get(trigger.relation)
                if seed and trigger.delete is not None:
                    found[rule.head].update(rule.run(trigger.delete, seed,
                                                     source=trigger.relation, capped=False))
        return found

    def _limit(self, heads: Iterable[str], removed: int = 0) -> int:
        """How many rows over-deletion may remove before evaluating afresh is cheaper: a
        quarter of the heads' derived rows (``removed`` of them gone already)."""
        derived = removed + sum(len(self.store.rows(h)) - len(self.store.asserted(h))
                                for h in heads)
        return max(self.RECOMPUTE_MIN, derived // 4)

    def _overdelete(self, views: list[_Rule], plus: Mapping[str, set[Row]],
                    minus: Mapping[str, set[Row]],
                    overdeleted: dict[str, set[Row]] | None = None, removed: int = 0,
                    ) -> dict[str, set[Row]] | None:
        """DRed's first phase: remove every derived row with a derivation through a removed
        row (or through a negated row that appeared). Returns what it removed, or None when
        that grew past ``_limit`` (in a cycle, over-deletion removes nearly everything;
        evaluating afresh is then cheaper). ``overdeleted`` and ``removed``: what an
        over-deletion that goes on here removed already."""
        store = self.store
        heads = {r.head for r in views} & self.view_heads
        if overdeleted is None:
            overdeleted = {h: set(minus.get(h, ())) for h in heads}
        limit: int | None = None  # counted when something is first over-deleted
        found = self._through(views, plus, minus)
        while found:
            delta = {}
            for name, rows in found.items():
                gone = self._derived_only(name, rows & store.rows(name))
                if gone:
                    if limit is None:
                        limit = self._limit(heads, removed)
                    store.remove_many(name, gone)
                    overdeleted.setdefault(name, set()).update(gone)
                    delta[name] = gone
                    removed += len(gone)
                    self.overdeleted_rows += len(gone)
            if limit is not None and removed > limit:
                return None
            found = self._through(views, NOTHING, delta) if delta else {}
        return overdeleted

    def _overdelete_checked(self, views: list[_Rule], plus: dict, minus: dict,
                            own: Collection[str]) -> dict[str, set[Row]] | None:
        """``_overdelete`` for a recursive stratum, with a support check that stops most of
        it. The rows reached from the step's changes are taken in the order they were born
        (``Store.births``), a generation at a time: a row that still has a derivation from
        rows born before its generation that remain (its rederivation plan, excluding its
        own relations' younger rows and the rows marked) stays; the others are marked
        over-deleted, and what they reach from their generation on is checked in turn. A
        derivation from older rows cannot go round a cycle back to the row, and the older
        rows have all been decided when it is checked (a marked row reaches only rows of
        its generation or younger), so what stays is derivable. Marked rows stay in the
        store until ``_rederive`` decides: what has a derivation from the rest stays, the
        others go. A check that goes past CHECK_GENERATIONS generations, or past 8 without
        keeping a row, is following a long chain or cycle, where it rarely stops anything:
        the rows marked and those still to check are removed, and ``_overdelete`` goes on
        from them. Returns the rows over-deleted, or None as ``_overdelete`` does."""
        store = self.store
        heads = {r.head for r in views} & self.view_heads
        overdeleted: dict[str, set[Row]] = {h: set(minus.get(h, ())) for h in heads}
        births = {name: store.births(name) for name in own}
        pending: dict[float, dict[str, set[Row]]] = {}  # birth -> relation -> rows to check
        order: list[float] = []  # the births in ``pending``, a heap
        self._reached(self._through(views, plus, minus), births, None, pending, order,
                      overdeleted)
        limit: int | None = None  # counted when something is first marked
        removed = checked = kept = 0
        while order:
            checked += 1
            if checked > self.CHECK_GENERATIONS or (checked > 8 and not kept):
                return self._overdelete_unchecked(views, overdeleted, pending, removed)
            bound = heapq.heappop(order)
            batch = pending.pop(bound)
            exclude = {name: _Younger([members for tick, members in gens if tick >= bound],
                                      overdeleted[name])
                       for name, gens in births.items()}
            for rule in views:
                rows = batch.get(rule.head)
                if rows and rule.rederive is not None:
                    before = len(rows)
                    rows.difference_update(rule.run(rule.rederive, rule.rederive_seeds(rows),
                                                    exclude, capped=False))
                    kept += before - len(rows)
            delta = {name: rows for name, rows in batch.items() if rows}
            for name, rows in delta.items():
                if limit is None:
                    limit = self._limit(heads)
                overdeleted[name] |= rows
                removed += len(rows)
                self.overdeleted_rows += len(rows)
            if limit is not None and removed > limit:
                return None
            if delta:
                self._reached(self._through(views, NOTHING, delta), births, bound, pending,
                              order, overdeleted)
        return overdeleted

    def _overdelete_unchecked(self, views: list[_Rule], overdeleted: dict[str, set[Row]],
                              pending: dict[float, dict[str, set[Row]]], removed: int,
                              ) -> dict[str, set[Row]] | None:
        """Go on from ``_overdelete_checked`` without checks: remove the rows marked and
        those still to check (present, derived, none of them marked), then over-delete
        from them."""
        for batch in pending.values():
            for name, rows in batch.items():
                overdeleted.setdefault(name, set()).update(rows)
                removed += len(rows)
                self.overdeleted_rows += len(rows)
        store = self.store
        gone = {name: rows & store.rows(name) for name, rows in overdeleted.items()}
        for name, rows in gone.items():
            if rows:
                store.remove_many(name, rows)
        return self._overdelete(views, NOTHING, gone, overdeleted, removed)

    def _reached(self, found: dict[str, set[Row]],
                 births: dict[str, list[tuple[int, Set[Row]]]], after: float | None,
                 pending: dict[float, dict[str, set[Row]]], order: list[float],
                 gone: dict[str, set[Row]]) -> None:
        """Queue in ``pending``, by birth, the rows ``found`` present, derived and not in
        ``gone`` that were born at or after ``after``: the older ones have a derivation
        from rows older than those. A relation the views do not read is checked last,
        once what it is derived from is decided."""
        store = self.store

        def queue(birth: float, name: str, rows: set[Row]) -> None:
            batch = pending.get(birth)
            if batch is None:
                pending[birth] = batch = {}
                heapq.heappush(order, birth)
            if name in batch:
                batch[name] |= rows
            else:
                batch[name] = rows

        for name, rows in found.items():
            rows = self._derived_only(name, (rows & store.rows(name)) - gone[name])
            gens = births.get(name)
            if gens is None:
                if rows:
                    queue(math.inf, name, rows)
                continue
            for tick, members in reversed(gens):  # a row was born in the newest holding it
                if not rows:
                    break
                hit = rows & members
                if hit:
                    rows -= hit
                    if after is None or tick >= after:
                        queue(tick, name, hit)

    def _derived_only(self, name: str, rows: set[Row]) -> set[Row]:
        """``rows`` without those asserted or supported by an aggregate group."""
        rows -= self.store.asserted(name)
        kept = self.aggregate_support.get(name)
        if kept:
            rows -= kept.keys()
        return rows

    def _recompute(self, views: list[_Rule]) -> dict[_Rule, set[Row]]:
        """Remove every derived row of the views' heads, and derive anew from the current
        tables: the first round of a from-scratch evaluation (semi-naive goes on from it)."""
        store = self.store
        for head in {r.head for r in views} & self.view_heads:
            gone = self._derived_only(head, set(store.rows(head)))
            if gone:
                store.remove_many(head, gone)
        found: dict[_Rule, set[Row]] = defaultdict(set)
        for rule in views:
            if rule.start is not None:
                found[rule].update(rule.run(rule.start, ()))
            # the first positive atom's plan reads every other atom in full
            first = next((i for i, t in enumerate(rule.triggers) if not t.negated), None)
            if first is not None:
                trigger = rule.triggers[first]
                found[rule].update(rule.run(trigger.insert, self._all_rows(
                    trigger.relation, rule.plan.triggers[first].insert), source=trigger.relation))
        return found

    def _all_rows(self, relation: str, plan: p.Plan) -> list[Row]:
        """The rows of ``relation`` that ``plan`` (driven by them) can take: those holding
        the constants its atom has in some columns, where an index on those columns has
        them (``edge(0, Y, C)``: the arcs from 0, not all of them); else all of them."""
        constants = sorted(((column, term.value) for column, term in getattr(
            plan.driver, "checks", ()) if isinstance(term, p.Const)), key=itemgetter(0))
        if constants:
            columns = tuple(column for column, _ in constants)
            key = constants[0][1] if len(constants) == 1 else \
                tuple(value for _, value in constants)
            try:
                found = self.store.matching(relation, columns, key)
            except TypeError:  # (a value no index can hold: the plan's check decides)
                found = None
            if found is not None:
                return list(found)
        return list(self.store.rows(relation))

    def _rederive(self, views: list[_Rule], overdeleted: dict[str, set[Row]],
                  ) -> dict[str, set[Row]]:
        """DRed's second phase: the over-deleted rows with a derivation from the rest (the
        rederivation plans, excluding the over-deleted rows wherever they are still in the
        store). Those ``_overdelete_checked`` left in the store stay there, born anew (the
        derivation may be younger than they are), and the others of them go; those already
        removed come back. Returns the rows rederived, which seed insertion."""
        store = self.store
        store.tick()
        back: dict[str, set[Row]] = defaultdict(set)
        absent: list[tuple[_Rule, Row]] = []
        for rule in views:
            candidates = overdeleted.get(rule.head)
            if not candidates or rule.rederive is None:
                continue
            found = back[rule.head]
            held = store.rows(rule.head)
            for row in rule.run(rule.rederive, rule.rederive_seeds(candidates), overdeleted,
                                capped=False):
                if row in candidates and row not in found:
                    found.add(row)
                    if row not in held:
                        absent.append((rule, row))
        for name, rows in overdeleted.items():
            held = rows & store.rows(name)
            stay = held & back[name]
            if len(stay) < len(held):
                store.remove_many(name, held - stay)
            if stay:
                store.rebirth(name, stay)
        for rule, row in absent:
            self._add_derived(rule, row)
        return {name: rows for name, rows in back.items() if rows}

    def _insert(self, rules: list[_Rule], plus: dict, minus: dict,
                found: dict[_Rule, Collection[Row]] | None = None) -> None:
        """Semi-naive insertion from the new rows ``plus`` (and, for views, the rows that
        left a negated relation, ``minus``); ``found`` replaces the first round. The
        aggregate rules among ``rules`` are a recursive min/max's: their candidate rows go
        to ``_improve``."""
        store = self.store
        delta = plus
        first = True
        rounds = 0
        # a recursive min/max's heads: group -> its row improved and not yet propagated
        waiting: dict[str, dict[Any, Row]] = {}
        # those of them that go into the store when the loop ends (``solo``): the rows
        # improvements added, and those they replaced
        pending: dict[str, tuple[set[Row], set[Row]]] = {}
        for rule in rules:
            if rule.aggregation is not None:
                waiting[rule.head] = {}
                if rule.plan.stratum in self.solo and not self.keyed[rule.head]:
                    pending[rule.head] = (set(), set())
        while True:
            rounds += 1
            if self._rounds is not None:
                self._rounds.rounds += 1
            # a min/max whose rows go into the store when the loop ends: its plans compare
            # their candidates as they derive them (no other plan reads its table), after
            # the views' rows of the round went in and fed it, as its listed candidates are
            compared: list[tuple[_Rule, list]] = []
            if found is None:
                found = {}
                for rule in rules:
                    if first and self.initial and rule.start is not None:
                        _gather(found, rule, rule.run(rule.start, ()))
                    plans = [] if rule.aggregation is not None and rule.head in pending \
                        else None
                    for trigger in rule.triggers:
                        seed = (minus.get(trigger.relation) if first else None) \
                            if trigger.negated else delta.get(trigger.relation)
                        if not seed:
                            continue
                        if plans is not None:
                            plans.append((trigger.insert, seed, delta, trigger.relation))
                        else:
                            _gather(found, rule, rule.run(trigger.insert, seed, delta,
                                                          trigger.relation))
                    if plans:
                        compared.append((rule, plans))
            first = False
            delta = {}
            fed: dict[str, set[Row]] = {}  # view rows that fed a min/max in the round
            store.tick()  # the round's rows are born after those they come from
            for rule, rows in found.items():
                head = rule.head
                if rule.aggregation is not None:  # a recursive min/max
                    self._improve(rule, rows, waiting[head], pending.get(head))
                    continue
                if self.keyed[head]:
                    for row in rows:
                        if self._add_derived(rule, row):
                            self.firings[rule.index] += 1
                            delta.setdefault(head, set()).add(row)
                    continue
                # another rule may have added some of these rows in this round
                new = rows if rule.novel_only and head not in delta and head not in fed \
                    else rows - store.rows(head)
                self.firings[rule.index] += len(new)
                if new:
                    store.add_many(head, new)  # the store keeps ``new``: not mutated after
                    feeds = self.feeds.get(head)  # (its readers' heads are in ``waiting``
                    # when this evaluation runs the stratum's min/max rules, all of them)
                    if feeds is not None and feeds[0][0].head in waiting:
                        fed[head] = fed[head] | new if head in fed else new
                        for reader, trigger in feeds:
                            self._improve(reader, None, waiting[reader.head],
                                          pending.get(reader.head),
                                          [(trigger.insert, new, delta, head)])
                    elif head in delta:
                        delta[head] = delta[head] | new
                    else:
                        delta[head] = new
            for rule, plans in compared:
                self._improve(rule, None, waiting[rule.head], pending[rule.head], plans)
            found = None
            for head, rows in waiting.items():
                if rows:
                    delta[head] = _best_first(rows, self.ordering[head])
            if not delta and not fed:
                break
            limits = self.limits
            grown = self.new_rows + sum(map(len, delta.values()))
            if fed:
                grown += sum(map(len, fed.values()))
            if (grown <= limits.max_tuples and rounds <= limits.max_rounds
                    and self.deadline is None and self.progress is None
                    and self._moving is None):  # within limits, nothing to tell: at once
                self.new_rows = grown
                self.budget.left = limits.max_tuples - grown
            else:
                self._within_limits(rounds, {**fed, **delta}, rules, grown)
            if not delta:  # (the round's view rows fed the min/max, which they did not improve)
                break
            if rounds == 1 and not waiting:
                for rule in rules:
                    if not rule.triggered_by.isdisjoint(delta):
                        break
                else:
                    break  # no rule reads what the round added (event heads, most often)
        for head, (added, replaced) in pending.items():
            if replaced:  # (each replaced row was in the store before the step, or added in it)
                gone = replaced - added - store.asserted(head)
                if gone:
                    store.remove_many(head, gone)
                added -= replaced
            if added:
                store.add_many(head, added)

    def _within_limits(self, rounds: int, delta: dict[str, set[Row]],
                       rules: list[_Rule], grown: int) -> None:
        """After a round that added ``delta`` (the step now has ``grown`` new rows): the step
        may go on, or it has run past a limit (E307, naming the rule that added the most in
        the round); or, within them, the stratum moves to the offload (``_Moved``; never a
        recursive min/max's, whose ``delta`` is what propagates in the next round, not
        every row the round added: a row improved again before it propagated is not
        counted)."""
        limits = self.limits
        self.new_rows = grown
        self.budget.left = max(0, limits.max_tuples - self.new_rows)
        problem = None
        if rounds > limits.max_rounds:
            problem = f"more than {limits.max_rounds:,} rounds in one stratum"
        elif self.new_rows > limits.max_tuples:
            problem = f"more than {limits.max_tuples:,} new tuples in one step"
        elif self.deadline is not None and time.monotonic() > self.deadline:
            problem = f"the step ran longer than {limits.step_seconds:g} s"
        if self.progress is not None:
            self.progress(rounds, self.new_rows, {n: len(rows) for n, rows in delta.items()})
        if problem is None:
            if self._moving is not None and self.offload.moves(  # type: ignore[union-attr]
                    self._moving, self.store, sum(map(len, delta.values()))):
                raise _Moved(delta, rounds)
            return
        busiest = max(rules, key=lambda r: len(delta.get(r.head, ())))
        raise EvaluationError(
            "E307", busiest.plan, f"step limit: {problem} ({busiest.name} keeps deriving "
            f"`{busiest.head}` tuples: {len(delta.get(busiest.head, ())):,} in the last round)")

    def _deferred(self) -> DeferredOutput:
        out = DeferredOutput([], [], [])
        if not self.deferred:
            return out
        store = self.store
        # remote views' rows whose count of deriving rules changed: (head, row) -> (the
        # count before, a rule of that head)
        counted: dict[tuple[str, Row], tuple[int, p.RulePlan]] = {}
        for rule in self.deferred:
            if rule.plan.index in self.sent:
                self._remote_view(rule, counted)
                continue
            rows = self._on_new(rule)
            if rule.aggregation is not None:
                fresh = rule.evaluate_groups(rows, store) if rows else {}
                rows = [*fresh.values(), *rule.zero_rows(store, fresh)]
            if not rows:
                continue
            self.firings[rule.index] += len(rows)
            if rule.plan.remote:
                op = ("event" if rule.head_event else
                      "delete" if rule.plan.kind == "delete" else "insert")
                out.sends.extend((rule.plan, row, op) for row in dict.fromkeys(rows))
            else:
                target = out.deletes if rule.plan.kind == "delete" else out.writes
                target.extend((rule.plan, row) for row in dict.fromkeys(rows))
        for (head, row), (before, plan) in counted.items():  # sent while a rule derives it
            now = self.sent_by[head][row]
            if now and not before:
                out.sends.append((plan, row, "insert"))
            elif before and not now:
                out.sends.append((plan, row, "retract"))
                del self.sent_by[head][row]
        return out

    def _remote_view(self, rule: _Rule,
                     counted: dict[tuple[str, Row], tuple[int, p.RulePlan]]) -> None:
        """A view rule whose head is sent elsewhere (design.md 3.7): its rows are a view
        kept at the receiver. A step that only adds rows to what it reads evaluates it on
        the new rows; one that removes rows from what it reads, or changes a relation it
        negates, evaluates it whole and compares with what it derived before. The rows
        it derives anew or no longer are counted for its head in ``counted``: a row is
        sent when the first rule of the head derives it, retracted when the last stops."""
        store = self.store
        index = rule.plan.index
        sent = self.sent[index]
        reads, negated = self.remote_reads[index]
        if not (self.initial or any(store.added(name) or store.removed(name)
                                    for name in reads | negated)):
            return
        whole = (rule.aggregation is not None
                 or any(store.removed(name) for name in reads)
                 or any(store.added(name) or store.removed(name) for name in negated))
        if whole:
            rows = set(self._whole(rule))
            added, gone = rows - sent, sent - rows
        else:
            added, gone = set(self._on_new(rule)) - sent, set()
        if not added and not gone:
            return
        rules = self.sent_by[rule.head]
        for row in added | gone:
            counted.setdefault((rule.head, row), (rules[row], rule.plan))
        sent.update(added)
        sent.difference_update(gone)
        rules.update(added)
        rules.subtract(gone)
        store.on_rollback(_forget_sent, (sent, rules, added, gone))
        self.firings[rule.index] += len(added)

    def _on_new(self, rule: _Rule) -> list[Row]:
        """What a deferred rule derives from the step's new rows (and, at the first step,
        what a rule without atoms derives)."""
        store = self.store
        rows: list[Row] = []
        new = {t.relation: store.added(t.relation) for t in rule.triggers}
        if self.initial and rule.start is not None:
            rows.extend(rule.run(rule.start, ()))
        for trigger in rule.triggers:
            seed = new[trigger.relation]
            if seed:
                rows.extend(rule.run(trigger.insert, seed, new, trigger.relation))
        return rows

    def _whole(self, rule: _Rule) -> Iterable[Row]:
        """Every row a deferred rule derives from the current tables."""
        if not rule.triggers:
            return rule.run(rule.start, ()) if rule.start is not None else ()
        first = rule.triggers[0]
        seed = self.store.rows(first.relation)
        rows = rule.run(first.insert, seed, source=first.relation) if seed else ()
        if rule.aggregation is None:
            return rows
        return rule.evaluate_groups(rows, self.store).values()

    def sources(self, plan: p.RulePlan, rows: Collection[Row],
                ) -> dict[Row, list[tuple[str, Row]]] | None:
        """Which rows of its triggers derive each of ``rows``, written by the deferred rule
        ``plan`` in this step's deferred output: (relation, row) each, found by running its
        plans on one trigger row at a time. None when that cannot tell (the rule aggregates,
        or fires at the first step with no trigger row)."""
        rule = next(r for r in self.deferred if r.plan is plan)
        if rule.aggregation is not None or (self.initial and rule.start is not None):
            return None
        wanted = set(rows)
        found: defaultdict[Row, list[tuple[str, Row]]] = defaultdict(list)
        new = {t.relation: self.store.added(t.relation) for t in rule.triggers}
        for trigger in rule.triggers:
            for seed in new[trigger.relation]:
                for row in rule.run(trigger.insert, (seed,), new, trigger.relation,
                                    capped=False):
                    if row in wanted:
                        found[row].append((trigger.relation, seed))
        return found


def _best_first(waiting: dict[Any, Row], ordering: tuple[int, bool]) -> set[Row]:
    """Of the improved rows that have not propagated yet (``waiting``, each group's latest),
    those that propagate in the next round: the better part by value (those at least as good
    as the mean; where the values have no finite mean, strings or infinities say, as the
    upper median: 2 of 3, 3 of 4), taken out of ``waiting``. The others wait: they may
    improve again before they propagate, as in Dijkstra's algorithm or delta-stepping, so
    that a round of shortest paths does about half the work of propagating every improvement
    at once, for a few more rounds. The order of propagation changes no result: the stratum
    is monotone, every improvement propagates before the fixpoint ends, and what views
    derived from replaced rows goes at its end. ``ordering`` is the value's column and
    whether greater is better (max)."""
    position, greater = ordering
    if len(waiting) > 2:
        now: set[Row] = set()
        later: dict[Any, Row] = {}
        values = map(itemgetter(position), waiting.values())
        try:
            try:  # (the mean: no sort, and measured as good a split on shortest paths)
                middle = sum(values) / len(waiting)
                finite = math.isfinite(middle)
            except (TypeError, OverflowError):
                finite = False
            if not finite:
                ordered = sorted(map(itemgetter(position), waiting.values()),
                                 reverse=greater)
                middle = ordered[len(ordered) // 2]
            for key, row in waiting.items():
                if (row[position] >= middle) if greater else (row[position] <= middle):
                    now.add(row)
                else:
                    later[key] = row
        except TypeError:  # values of kinds that do not compare: all of them now
            later = {}
        if now and later:  # (none now, as when float rounding puts the mean below every
            # value: all of them then)
            waiting.clear()
            waiting.update(later)
            return now
    rows = set(waiting.values())
    waiting.clear()
    return rows


def _improving(evaluator: Evaluator, best: dict, before: dict, improved: dict,
               seed: Collection[tuple], exclude: Mapping[str, Set[Row]], cap: int,
               ) -> dict[Any, Row]:
    """``evaluator``'s ``improve`` as an evaluator (for ``_Rule.run``)."""
    return evaluator.improve(seed, exclude, cap, best, before, improved)  # type: ignore[attr-defined]


def _gather(found: dict[_Rule, Collection[Row]], rule: _Rule, rows: Collection[Row]) -> None:
    """Collect a rule's output of a round (the first batch is kept as it is)."""
    if not rows:
        return
    have = found.get(rule)
    if have is None:
        found[rule] = rows  # type: ignore[assignment]
    elif isinstance(have, list):  # (a bag: a recursive min/max's candidates)
        have.extend(rows)
    else:
        have.update(rows)  # type: ignore[attr-defined]
