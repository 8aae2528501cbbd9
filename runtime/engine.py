"""The Engine facade: timesteps of inputs -> fixpoint -> commit -> callbacks (design.md 3.1).

A step is atomic: a failure rolls back every table change of the step (the journal), the
input that made it fail is quarantined (reported, then delivered as
``error[Step, Relation, Row, Message]`` events), and the step runs again without them.
"""

from __future__ import annotations

import gc
import itertools
import math
import random
import time as wallclock
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any

from overlog import syntax as s
from overlog.analysis import CheckedProgram, analyze
from overlog.diagnostics import Diagnostic
from overlog.errors import OverlogError, SemanticError, StepError
from overlog.functions import BUILTIN_FUNCTIONS
from overlog.parser import parse
from overlog.plan import Plan, Scan
from overlog.printer import format_tuple
from overlog.source import Source
from runtime.builtins import make_functions
from runtime.events import ANY, EventQueue, Listener, matches
from runtime.local import PlanFailure, compile_plan
from runtime.seminaive import EvaluationError, Fixpoint
from runtime.softstate import SoftState
from runtime.store import Journal, Row, Table

ERROR_RELATION = "error"


@dataclass
class StepReport:
    """What a step did: its events and net table changes (relation -> sorted rows), and the
    errors reported. Rows are sorted when first read, so an unread report costs nothing."""

    step: int
    time: float
    errors: list[OverlogError] = field(default_factory=list)
    firings: dict[str, int] = field(default_factory=dict)  # rule label -> new tuples derived
    # kind -> relation -> the rows, as disjoint sets (merged and sorted only when read)
    _raw: dict[str, dict[str, list[set[Row]]]] = field(default_factory=lambda: {
        "events": {}, "inserted": {}, "deleted": {}}, repr=False)
    _sorted: dict[tuple[str, str], list[Row]] = field(default_factory=dict, repr=False)

    def rows(self, kind: str, relation: str) -> list[Row]:
        """Sorted rows of ``relation`` for ``kind`` ("events", "inserted" or "deleted")."""
        found = self._sorted.get((kind, relation))
        if found is None:
            found = sorted_rows(itertools.chain.from_iterable(
                self._raw[kind].get(relation, ())))
            self._sorted[(kind, relation)] = found
        return found

    def counts(self, kind: str) -> dict[str, int]:
        """How many rows of each relation the step has for ``kind``, without sorting."""
        return {name: sum(map(len, parts)) for name, parts in self._raw[kind].items()}

    def _all(self, kind: str) -> dict[str, list[Row]]:
        return {name: self.rows(kind, name) for name in self._raw[kind]}

    @property
    def events(self) -> dict[str, list[Row]]:
        return self._all("events")

    @property
    def inserted(self) -> dict[str, list[Row]]:
        return self._all("inserted")

    @property
    def deleted(self) -> dict[str, list[Row]]:
        return self._all("deleted")


class _LenientFunctions(Mapping):
    """Function arities for analysis: built-ins, registered ones, and any other `f_` name
    (checked when the engine first runs, once registration had its chance)."""

    def __init__(self, known: Mapping[str, tuple[int, float]]) -> None:
        self.known = known

    def __getitem__(self, name: str) -> tuple[int, float]:
        return self.known.get(name, (0, math.inf))

    def get(self, name: str, default: Any = None) -> tuple[int, float]:
        return self[name]

    def __iter__(self):
        return iter(self.known)

    def __len__(self) -> int:
        return len(self.known)


class _Failure(Exception):
    def __init__(self, error: StepError) -> None:
        self.error = error


def sort_key(value: Any) -> tuple:
    """A total order over Overlog values (for deterministic output)."""
    if value is None:
        return (0, 0)
    if isinstance(value, bool):
        return (1, value)
    if isinstance(value, (int, float)):
        return (2, value)
    if isinstance(value, str):
        return (3, value)
    if isinstance(value, tuple):
        return (4, tuple(sort_key(v) for v in value))
    return (5, repr(value))


def sorted_rows(rows) -> list[Row]:
    try:
        return sorted(rows)  # same-typed columns: the common, fast case
    except TypeError:
        return sorted(rows, key=lambda row: tuple(sort_key(v) for v in row))


class Engine:
    """One Overlog node. See design.md section 5 for the contract."""

    def __init__(self, source: str, path: str | None = None, *, address: str = "localhost",
                 clock: str = "sim", seed: int = 0,
                 functions: Mapping[str, Callable] | None = None,
                 defines: Mapping[str, Any] | None = None) -> None:
        if clock not in ("sim", "real"):
            raise ValueError(f"clock must be 'sim' or 'real', not {clock!r}")
        self.path = path or "<input>"
        self.address = address
        self.clock = clock
        self.user_functions: dict[str, Callable] = dict(functions or {})
        known = {**BUILTIN_FUNCTIONS, **{n: (0, math.inf) for n in self.user_functions}}
        program = parse(source, self.path)
        if defines:
            program = _apply_defines(program, defines)
        checked = analyze(program, Source(source, self.path), _LenientFunctions(known))
        self.checked: CheckedProgram = checked
        self.rng = random.Random(seed)
        self.now = 0.0
        self._start = wallclock.monotonic()
        self.step_count = 0
        self.journal = Journal()
        self.tables: dict[str, Table] = {
            name: Table(name, rel.arity, rel.event, rel.keys, self.journal)
            for name, rel in checked.relations.items()}
        if ERROR_RELATION not in self.tables:
            self.tables[ERROR_RELATION] = Table(ERROR_RELATION, 4, True, (), self.journal)
        self.soft = {name: SoftState(self.tables[name], rel.lifetime, rel.size, self.journal)
                     for name, rel in checked.relations.items()
                     if not rel.event and (rel.lifetime != math.inf or rel.size != math.inf)}
        self.queue = EventQueue()
        self.pending: list[tuple[str, str, Row]] = []
        self.listeners: list[Listener] = []
        self.undeliverable = 0
        self.outbound: Callable[[str, str, Row], None] | None = None
        self._fixpoint: Fixpoint | None = None
        self._fires_at_start = any(info.fires_at_start for info in checked.rules)
        self._load_facts()
        self._install_handlers()

    @classmethod
    def from_file(cls, path: str, **options: Any) -> Engine:
        with open(path, encoding="utf-8") as f:
            return cls(f.read(), path, **options)

    # -- the event API ------------------------------------------------------------------

    def register_listener(self, relation: str, pattern: tuple | None = None,
                          callback: Callable[[tuple], Any] | None = None, *,
                          phase: str = "post", op: str | None = None) -> None:
        table = self._table(relation)
        if callback is None:
            raise TypeError("register_listener needs a callback")
        if phase not in ("pre", "post"):
            raise ValueError(f"phase must be 'pre' or 'post', not {phase!r}")
        if op not in (None, "insert", "delete"):
            raise ValueError(f"op must be 'insert' or 'delete', not {op!r}")
        if op is not None and table.event:
            raise ValueError(f"`{relation}` is an event relation: listeners on it take no op")
        if phase == "pre" and not table.event:
            raise ValueError("phase='pre' listeners see input events; "
                             f"`{relation}` is persistent")
        if pattern is not None and len(pattern) != table.arity:
            raise ValueError(f"pattern has {len(pattern)} fields; `{relation}` has "
                             f"{table.arity}")
        self.listeners.append(Listener(relation, pattern, callback, phase, op))

    registerListener = register_listener

    def generate_event(self, relation: str, row: tuple, when: float | None = None) -> None:
        table = self._table(relation)
        if not table.event:
            raise ValueError(f"`{relation}` is persistent: use insert()")
        self.queue.push(self.now if when is None else when, relation,
                        self._row(table, row))

    generateEvent = generate_event

    def insert(self, relation: str, row: tuple) -> None:
        self.pending.append(("insert", relation, self._row(self._persistent(relation), row)))

    def delete(self, relation: str, row: tuple) -> None:
        self.pending.append(("delete", relation, self._row(self._persistent(relation), row)))

    def register_function(self, name: str, fn: Callable) -> None:
        if not name.startswith("f_"):
            raise ValueError(f"function names start with `f_`: {name!r}")
        if self._fixpoint is not None:
            raise RuntimeError("register functions before the first step")
        self.user_functions[name] = fn

    def rows(self, relation: str) -> list[Row]:
        return sorted_rows(self._table(relation).rows)

    def next_time(self) -> float | None:
        """When the next timed input is due: a queued event or a soft-state expiry."""
        times = [self.queue.next_time(), *(s.next_expiry() for s in self.soft.values())]
        return min((t for t in times if t is not None), default=None)

    @property
    def idle(self) -> bool:
        """Nothing to do now: no pending change, no due event, and no rule without positive
        atoms waiting for the first step to fire it."""
        upcoming = self.next_time()
        return (not self.pending and (upcoming is None or upcoming > self.now)
                and (self.step_count > 0 or not self._fires_at_start))

    # -- running ------------------------------------------------------------------------

    def run(self, steps: int | None = None, until: float | None = None) -> list[StepReport]:
        """Run steps until idle (no due inputs, and in `sim` no future ones), ``steps``
        steps, or clock time ``until``."""
        reports = []
        while steps is None or len(reports) < steps:
            if self.idle:
                upcoming = self.next_time()
                if upcoming is None or (until is not None and upcoming > until):
                    break
                if self.clock == "sim":
                    self.now = upcoming
                else:
                    wallclock.sleep(max(0.0, upcoming - self._wall()))
                    self.now = max(upcoming, self._wall())
            reports.append(self.step())
        return reports

    def _wall(self) -> float:
        return wallclock.monotonic() - self._start

    def step(self) -> StepReport:
        """Run one timestep at the current clock time."""
        if self._fixpoint is None:
            self._fixpoint = self._compile()
        if self.clock == "real":
            self.now = max(self.now, self._wall())
        self.step_count += 1
        report = StepReport(self.step_count, self.now)
        # events are sets within a step: a repeated event is one input
        inputs: list[tuple[str, str, Row]] = [
            ("event", r, row) for r, row in dict.fromkeys(self.queue.pop_due(self.now))]
        for name, soft in self.soft.items():  # expiry first: a refresh below wins
            inputs += [("delete", name, row) for row in soft.expired(self.now)]
        inputs += self.pending
        self.pending = []
        for table in self.tables.values():
            if table.event:
                table.end_events()
        quarantined: list[tuple[tuple[str, str, Row], StepError]] = []
        # No full garbage collection while the step evaluates. A large step grows the
        # tracked containers (tables, index buckets) many times over, and the collector
        # runs a full collection, visiting every row of every table, each time they grow by
        # a quarter; after the step, one does. Young collections go on as usual.
        thresholds = gc.get_threshold()
        gc.set_threshold(thresholds[0], thresholds[1], 2**31 - 1)
        try:
            while True:
                try:
                    changes, sends = self._attempt(inputs)
                    break
                except _Failure as failure:
                    self.journal.rollback()
                    culprit, failure = self._culprit(failure, inputs)
                    if culprit is None:  # fails whatever its inputs: drop them all
                        quarantined += [(i, failure.error) for i in inputs]
                        inputs = []
                    else:
                        quarantined.append((culprit, failure.error))
                        inputs = [i for i in inputs if i is not culprit]
        finally:
            gc.set_threshold(*thresholds)
        self.journal.entries.clear()
        report.firings = dict(self._fixpoint.firings)
        self.pending += changes
        for head, row in sends:
            self._send(head, row)
        for (kind, relation, row), error in quarantined:
            error.quarantined += ((kind, relation, row),)
            self.queue.push(self.now, ERROR_RELATION,
                            (error.step, relation, row, error.message))
        seen = set()
        for _, error in quarantined:
            if id(error) not in seen:
                seen.add(id(error))
                report.errors.append(error)
        self._report(report)
        self._post_listeners(report)
        for table in self.tables.values():  # the report keeps this step's change sets
            if not table.event:
                table.clear_step()
        return report

    def _attempt(self, inputs: list[tuple[str, str, Row]]):
        try:
            self._apply_inputs(inputs)
            self._pre_listeners(inputs)
            return self._commit(self._fixpoint.run(  # type: ignore[union-attr]
                initial=self.step_count == 1))
        except EvaluationError as error:
            rule = error.rule
            raise _Failure(StepError(
                error.code, error.message, step=self.step_count, time=self.now, path=self.path,
                rule=_rule_name(rule), span=rule.rule.span, binding=error.binding)) from error

    def _culprit(self, failure: _Failure, inputs: list) -> tuple[tuple | None, _Failure]:
        """The input to quarantine: the first, in queue order, whose prefix of the inputs
        fails (bisection; deterministic, unlike which failing binding is met first). Returns
        it with the failure to report, or None if the step fails even with no input."""
        if self._fails([]) is not None:
            return None, failure
        lo, hi, found = 0, len(inputs), failure
        while hi - lo > 1:
            mid = (lo + hi) // 2
            attempt = self._fails(inputs[:mid])
            if attempt is not None:
                hi, found = mid, attempt
            else:
                lo = mid
        return inputs[hi - 1], found

    def _fails(self, inputs: list) -> _Failure | None:
        try:
            self._attempt(inputs)
            return None
        except _Failure as failure:
            return failure
        finally:
            self.journal.rollback()

    def _apply_inputs(self, inputs: list[tuple[str, str, Row]]) -> None:
        for kind, relation, row in inputs:
            table = self.tables[relation]
            if kind == "event":
                if row not in table.rows:
                    table.add(row)
            elif kind == "delete":
                self._retract(relation, table, row)
            else:
                holder = table.holder(row) if table.keyed else None
                if holder is not None and holder != row:
                    self._retract(relation, table, holder)
                if row not in table.asserted:
                    table.assert_row(row)
                if row not in table.rows:
                    table.add(row)
                soft = self.soft.get(relation)
                if soft is not None:
                    soft.stamp(row, self.now)
        for name, soft in self.soft.items():
            for row in soft.over_cap():
                self._retract(name, self.tables[name], row)

    def _retract(self, relation: str, table: Table, row: Row) -> None:
        if row in table.asserted:
            table.retract_row(row)
        if row in table.rows:
            table.remove(row)
        soft = self.soft.get(relation)
        if soft is not None:
            soft.forget(row)

    def _pre_listeners(self, inputs: list[tuple[str, str, Row]]) -> None:
        pre = [listener for listener in self.listeners if listener.phase == "pre"]
        if not pre:
            return
        for kind, relation, row in inputs:
            if kind != "event":
                continue
            for listener in pre:
                if listener.relation == relation and matches(listener.pattern, row):
                    try:
                        listener.callback(row)
                    except Exception as error:
                        raise _Failure(StepError(
                            "E304", f"pre listener on `{relation}` raised "
                            f"{type(error).__name__}: {error}", step=self.step_count,
                            time=self.now, path=self.path)) from error

    def _commit(self, deferred) -> tuple[list, list]:
        """The step's buffered changes, checked: (pending changes for the next step, sends).
        Deletions come first, then writes (with key replacement when applied)."""
        writes: dict[tuple[str, Any], Row] = {}
        for rule, row in deferred.writes:
            table = self.tables[rule.head]
            key = (rule.head, tuple(row[k] for k in table.keys))
            other = writes.get(key)
            if other is not None and other != row:
                first, second = sorted_tuples(rule.head, (other, row))
                raise _Failure(StepError(
                    "E303", f"key conflict: {first} and {second} written to the same key in "
                    "one step", step=self.step_count, time=self.now, path=self.path,
                    rule=_rule_name(rule.info), span=rule.info.rule.span))
            writes[key] = row
        changes: list[tuple[str, str, Row]] = []
        deleted: set[tuple[str, Row]] = set()
        for rule, row in deferred.deletes:
            table = self.tables[rule.head]
            stored = table.holder(row) if table.keyed else row
            if stored is not None and stored in table.asserted:
                changes.append(("delete", rule.head, stored))
                deleted.add((rule.head, stored))
        for (relation, _), row in writes.items():
            table = self.tables[relation]
            if (row not in table.asserted or (relation, row) in deleted
                    or (table.keyed and table.holder(row) != row)
                    or relation in self.soft):  # a write refreshes a soft tuple
                changes.append(("insert", relation, row))
        sends = [(rule.info.rule.head, row) for rule, row in deferred.sends]
        return changes, sends

    def _send(self, head: s.Atom, row: Row) -> None:
        address = row[head.locs[0]]
        if address == self.address:
            if head.event:
                self.queue.push(self.now, head.name, row)
            else:
                self.pending.append(("insert", head.name, row))
        elif self.outbound is not None:
            self.outbound(address, head.name, row)
        else:
            self.undeliverable += 1

    def _report(self, report: StepReport) -> None:
        raw = report._raw
        for name, table in self.tables.items():
            if table.event:
                if table.rows:
                    raw["events"][name] = [table.rows]
            else:
                added = table.added_parts()
                if added:
                    raw["inserted"][name] = added
                if table.removed:
                    raw["deleted"][name] = [table.removed]

    def _post_listeners(self, report: StepReport) -> None:
        for listener in self.listeners:
            if listener.phase != "post":
                continue
            table = self.tables[listener.relation]
            batches = []
            if table.event:
                batches.append(report.rows("events", listener.relation))
            else:
                if listener.op in (None, "delete"):
                    batches.append(report.rows("deleted", listener.relation))
                if listener.op in (None, "insert"):
                    batches.append(report.rows("inserted", listener.relation))
            for rows in batches:
                for row in rows:
                    if matches(listener.pattern, row):
                        try:
                            listener.callback(row)
                        except Exception as error:
                            report.errors.append(StepError(
                                "E305", f"post listener on `{listener.relation}` raised "
                                f"{type(error).__name__}: {error}", step=report.step,
                                time=report.time, path=self.path))

    # -- set-up -------------------------------------------------------------------------

    def _compile(self) -> Fixpoint:
        functions = make_functions(lambda: self.now, self.rng)
        functions.update(self.user_functions)
        missing = [call for call in s.walk(self.checked.program)
                   if isinstance(call, s.Call) and call.name not in functions]
        if missing:
            raise SemanticError([Diagnostic("E208", f"unknown function `{c.name}`", c.span)
                                 for c in missing], self.checked.source)
        return Fixpoint(self.checked, self.tables, functions)

    def _load_facts(self) -> None:
        functions = make_functions(lambda: self.now, self.rng)
        for fact in self.checked.program.facts:
            atom = fact.atom
            if atom.name == "registerNativeEventHandler":
                continue
            try:
                row = tuple(_constant(arg, functions) for arg in atom.args)
            except PlanFailure as failure:
                raise SemanticError([Diagnostic(
                    "E225", f"cannot evaluate fact: {failure.cause}", fact.span)],
                    self.checked.source) from None
            if atom.locs and row[atom.locs[0]] != self.address:
                self._send(atom, row)
            elif atom.event:
                self.queue.push(0.0, atom.name, row)
            else:
                self.pending.append(("insert", atom.name, row))

    def _install_handlers(self) -> None:
        import importlib

        from stdlib import periodic

        periodic.install(self)
        for relation, target in self.checked.handlers:
            module_name, _, function = target.partition(":")
            handler = getattr(importlib.import_module(module_name), function)
            self.register_listener(relation, None, handler)

    def _table(self, relation: str) -> Table:
        table = self.tables.get(relation)
        if table is None:
            raise KeyError(f"unknown relation `{relation}`")
        return table

    def _persistent(self, relation: str) -> Table:
        table = self._table(relation)
        if table.event:
            raise ValueError(f"`{relation}` is an event relation: use generate_event()")
        return table

    @staticmethod
    def _row(table: Table, row: tuple) -> Row:
        row = tuple(_freeze(v) for v in row)
        if len(row) != table.arity:
            raise ValueError(f"`{table.name}` has {table.arity} fields, got {len(row)}")
        return row


def sorted_tuples(relation: str, rows) -> list[str]:
    return [format_tuple(relation, row) for row in sorted_rows(rows)]


def _rule_name(info) -> str:
    return f"`{info.rule.name}`" if info.rule.name else f"{info.index + 1}"


def _freeze(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_freeze(v) for v in value)
    return value


def _constant(term: s.Term, functions: dict[str, Callable]) -> Any:
    """The value of a ground term (a fact's argument)."""
    if isinstance(term, s.Const):
        return term.value
    plan = Plan(rule=-1, driver="bound", operators=(Scan("", "bound", (), ()),), head=(term,))
    out: list = []
    compile_plan(plan, {}, functions)([()], out.append)
    return out[0][0]


def _apply_defines(program: s.Program, defines: Mapping[str, Any]) -> s.Program:
    """The program with every variable named in ``defines`` replaced by its value."""

    def substitute(node: Any) -> Any:
        if isinstance(node, s.Var):
            return s.Const(value=defines[node.name], span=node.span) \
                if node.name in defines else node
        if isinstance(node, s.Assign):  # the assigned variable is not a value
            return replace(node, expr=substitute(node.expr))
        if isinstance(node, (s.Agg, s.Const, s.Wildcard)):
            return node
        changes = {}
        for f in fields(node):
            value = getattr(node, f.name)
            if isinstance(value, tuple):
                changes[f.name] = tuple(substitute(v) for v in value)
            elif hasattr(value, "__dataclass_fields__") and f.name != "span":
                changes[f.name] = substitute(value)
        return replace(node, **changes)

    return substitute(program)


__all__ = ["ANY", "Engine", "StepReport"]
