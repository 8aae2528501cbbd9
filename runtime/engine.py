"""The Engine: timesteps of inputs -> fixpoint -> commit -> sends -> callbacks (design.md 3.1).

The engine runs a ProgramPlan on a backend (the local one) and talks to the outside through
the event API only (``runtime/events.py``): listeners, ``generate_event``, ``insert`` and
``delete`` from its own thread, ``deliver`` from any thread, and outbound tuples that leave as
``send`` events for the handlers (transports) installed on it. Which handlers are installed
is the caller's choice: ``overlog.Engine`` installs the standard library's.

A step is atomic: a failure rolls back every change of the step (the store's journal), the
input that made it fail is quarantined (reported, then delivered as
``error[Step, Relation, Row, Message]`` events), and the step runs again without it.
"""

from __future__ import annotations

import gc
import itertools
import math
import random
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence, Set
from operator import itemgetter
from typing import TYPE_CHECKING, Any

from overlog.analysis import Relation
from overlog.compile import NativeResolver, compile_program, natives_check
from overlog.diagnostics import Diagnostic
from overlog.dialect import read_program
from overlog.errors import DeliveryError, SemanticError, StepError
from overlog.functions import P2_MEANINGS
from overlog.limits import recursion_room
from overlog.plan import (
    FactPlan,
    FactRowsPlan,
    ProgramPlan,
    RulePlan,
    expr_calls,
    format_expr,
    where,
)
from overlog.printer import format_tuple
from overlog.runtime.arrowrows import sorted_batches, sorted_table
from overlog.runtime.backend import BackendFactory, FrameInput, InputFailure, PlanFailure
from overlog.runtime.builtins import make_functions
from overlog.runtime.clock import Clock, make_clock
from overlog.runtime.events import ANY, EventQueue, Handler, Inbox, Listener, Outbound, matches
from overlog.runtime.local import LocalBackend
from overlog.runtime.profile import Profile
from overlog.runtime.provenance import UNREPEATABLE, Explainer, Explanation, Log, unrepeatable
from overlog.runtime.report import StepReport, sorted_rows, sorted_tuples
from overlog.runtime.seminaive import (
    MAX_ROUNDS,
    MAX_TUPLES,
    EvaluationError,
    Fixpoint,
    Limits,
    Offload,
)
from overlog.runtime.softstate import SoftState
from overlog.runtime.store import Row
from overlog.source import Span
from overlog.values import NotAValue, internal, internal_row, python, python_row, type_fault

if TYPE_CHECKING:
    from overlog.runtime.spark import SparkStrata
    from overlog.runtime.vector import VectorStrata

ERROR_RELATION = "error"
_ERROR = Relation(name=ERROR_RELATION, arity=4, event=True, keys=(), builtin=True)
# rows() collects a relation held in Spark up to this many rows unless told otherwise
ROWS_LIMIT = 1_000_000
# allocations between young garbage collections during a step (Python's default: 700):
# the cyclic garbage a step may leave for a while, for 16-20% of SSSP on 10,000 nodes
YOUNG_GC = 50_000

_KIND, _RELATION, _ROW = itemgetter(0), itemgetter(1), itemgetter(2)  # of an input


def _inputs(due: list[tuple[str, Row]], expiries: list[tuple[str, str, Row]],
            taken: list[tuple[str, str, Row]]) -> list[tuple[str, str, Row]]:
    """A step's inputs, in order: the events due (sets within a step: a repeated event is
    one input), the soft-state expiries, the inserts and deletes queued."""
    inputs = [("event", r, row) for r, row in dict.fromkeys(due)]
    inputs += expiries
    inputs += taken
    return inputs


def typed_fault(rel: Relation, row: Row) -> str | None:
    """Why ``row`` does not fit ``rel``'s typed key fields (P2's ``keys(2:str)``), or None."""
    for column, kind in rel.types:
        fault = type_fault(row[column], kind)
        if fault is not None:
            return f"field {column + 1} of `{rel.name}` {fault}"
    return None


class _LenientFunctions(Mapping):
    """Function arities for analysis: built-ins, registered ones, and any other `f_` name
    (checked when the engine first runs, once registration had its chance)."""

    def __init__(self, known: Mapping[str, tuple[int, float]]) -> None:
        self.known = known

    @property
    def registered(self) -> Mapping[str, tuple[int, float]]:
        """The functions registered so far: they come before the dialect's built-ins, which
        come before any other name (overlog.analysis.analyze)."""
        return self.known

    def __getitem__(self, name: str) -> tuple[int, float]:
        return self.known.get(name, (0, math.inf))

    def get(self, name: str, default: Any = None) -> tuple[int, float]:
        return self[name]

    def __iter__(self):
        return iter(self.known)

    def __len__(self) -> int:
        return len(self.known)


class _Failure(Exception):
    """A failed attempt at a step: its error, and where the failing bindings show it, the
    rows that drove them: (relation, row, error) each."""

    def __init__(self, error: StepError,
                 drivers: list[tuple[str, Row, StepError]] | None = None,
                 rule: RulePlan | None = None) -> None:
        self.error = error
        self.drivers = drivers or []
        self.rule = rule  # the rule that failed, where one did


def _first_failing(size: int, fails: Callable[[int], _Failure | None],
                   failure: _Failure) -> tuple[int, _Failure]:
    """The least k whose prefix of k items fails (``fails(k)``: its failure, or None), by
    bisection, given that all ``size`` items fail, with ``failure``, and the empty prefix
    passes."""
    lo, hi, found = 0, size, failure
    while hi - lo > 1:
        mid = (lo + hi) // 2
        attempt = fails(mid)
        if attempt is not None:
            hi, found = mid, attempt
        else:
            lo = mid
    return hi, found


class Engine:
    """One Overlog node running a program. See docs/engine.md for the contract.

    ``source`` is program text (compiled here) or a ProgramPlan. ``handlers`` install
    listeners (timers, transports) through the event API; ``natives`` resolves the targets
    of ``registerNativeEventHandler``; ``clock`` is "sim", "real" or a Clock. A step that
    derives more than ``max_tuples`` new tuples, runs more than ``max_rounds`` rounds in a
    stratum, or runs longer than ``step_timeout`` seconds is stopped and rolled back (E307);
    ``progress(round, new tuples so far, relation -> tuples the round added)`` is called
    after each round of a step's insertion. Facts located at another address are sent there
    at the first step; ``send_facts`` False sends none (the node there runs the same
    program and loads them itself), a function sends those whose address it accepts.
    """

    def __init__(self, source: str | ProgramPlan, path: str | None = None, *,
                 address: str = "localhost", clock: str | Clock = "sim", seed: int = 0,
                 functions: Mapping[str, Callable] | None = None,
                 defines: Mapping[str, Any] | None = None,
                 dialect: str | None = None,
                 handlers: Sequence[Handler] = (),
                 natives: NativeResolver | None = None,
                 backend: str | BackendFactory = "auto",
                 spark_master: str = "local[2]", spark_conf: Mapping[str, str] | None = None,
                 spark_threshold: int | None = None, vector_threshold: int | None = None,
                 max_tuples: int = MAX_TUPLES, max_rounds: int = MAX_ROUNDS,
                 step_timeout: float | None = None,
                 progress: Callable[[int, int, dict[str, int]], None] | None = None,
                 send_facts: bool | Callable[[Any], bool] = True,
                 profile: bool = False, provenance: bool = False) -> None:
        self.user_functions: dict[str, Callable] = dict(functions or {})
        for name, value in (("max_tuples", max_tuples), ("max_rounds", max_rounds)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, not {value!r}")
        if step_timeout is not None and not (isinstance(step_timeout, (int, float))
                                             and step_timeout > 0):
            raise ValueError(f"step_timeout must be a positive number, not {step_timeout!r}")
        self.limits = Limits(max_tuples, max_rounds, step_timeout)
        self.progress = progress
        if isinstance(source, ProgramPlan):
            if defines or dialect:
                raise ValueError("defines and dialect apply when compiling: pass them to "
                                 "compile_program")
            plan = source
        else:
            known = {n: (0, math.inf) for n in self.user_functions}
            plan = compile_program(source, path, _LenientFunctions(known), defines=defines,
                                   natives=natives_check(natives) if natives else None,
                                   dialect=dialect)
        self.plan = plan
        self.path = plan.path
        self._labels = [rule.label for rule in plan.rules]  # by rule index
        # where the time goes, per rule and stratum (runtime/profile.py), if asked
        self.profile: Profile | None = Profile.of(plan) if profile else None
        # what why() and why_not() read (runtime/provenance.py), if asked
        self.provenance: Log | None = Log() if provenance else None
        self._fact_where: dict[tuple[str, Row], Any] = {}  # fact rows -> line (or span)
        # the program's text and its lines' origins, as explanations name places (the REPL
        # names the lines of its session)
        self.source = plan.checked.source if plan.checked is not None else None
        self._writes: list[tuple[RulePlan, Row]] = []  # the last attempt's deferred writes
        self._explained: Explainer | None = None  # why()'s, until the next step
        self.address = address
        self.clock = make_clock(clock)
        self.rng = random.Random(seed)
        self.now = self.clock.now()
        self.step_count = 0
        self._started = False  # a step has stood: the rules without atoms have fired
        self._dropped: list[int] = []  # rules without atoms the step took out of the program
        relations = {**plan.relations}
        relations.setdefault(ERROR_RELATION, _ERROR)
        self.relations: dict[str, Relation] = relations
        # every function the program may call; user functions may be added until step 1
        dialect = plan.dialect.name if plan.dialect is not None else "canonical"
        self._functions = make_functions(lambda: self.now, self.rng, dialect)
        self._functions.update(self.user_functions)
        self.backend = _backend_factory(backend)(relations, self._functions,
                                                 self.user_functions.keys())
        for name, value in (("spark_threshold", spark_threshold),
                            ("vector_threshold", vector_threshold)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                      or value < 0):
                raise ValueError(f"{name} must be an int >= 0, not {value!r}")
            if value is not None and backend != "auto":
                raise ValueError(f"{name} goes with backend 'auto', not {backend!r}")
        # with backend "spark" or "auto": the strata Spark runs (runtime/spark.py)
        self.spark: SparkStrata | None = None
        if backend in ("spark", "auto"):
            from overlog.runtime.spark import THRESHOLD, SparkStrata

            # functions a dialect means otherwise than Spark's built-ins: as user functions
            shadowing = {name: self._functions[name] for name in P2_MEANINGS} \
                if dialect == "p2" else {}
            self.spark = SparkStrata(plan, relations, spark_master, spark_conf,
                                     {**shadowing, **self.user_functions},
                                     None if backend == "spark"
                                     else THRESHOLD if spark_threshold is None
                                     else spark_threshold, now=self._functions["f_now"])
        # with backend "vector" or "auto": the strata DuckDB runs (runtime/vector.py)
        self.vector: VectorStrata | None = None
        if backend in ("vector", "auto"):
            from overlog.runtime import memory, vector

            # with auto, a relation DuckDB derives stays there from Spark's threshold (the
            # rows that would fill a quarter of memory in the store)
            self.vector = vector.VectorStrata(
                plan, relations, None if backend == "vector" else vector.THRESHOLD
                if vector_threshold is None else vector_threshold,
                hold=None if backend == "vector" else memory.THRESHOLD
                if spark_threshold is None else spark_threshold)
        self._offload: Offload | None = self.spark if backend == "spark" else self.vector
        if backend == "auto":
            from overlog.runtime.placement import Placement

            self._offload = Placement(self.spark, self.vector)
        self.store = self.backend.store
        self.soft = {name: SoftState(self.store, rel.lifetime, rel.size)
                     for name, rel in relations.items()
                     if not rel.event and (rel.lifetime != math.inf or rel.size != math.inf)}
        # persistent relations with neither keys nor soft state: inserts apply as sets
        self._plain = {name for name, rel in relations.items()
                       if not rel.event and not rel.keyed and name not in self.soft}
        self.queue = EventQueue()
        self.pending: list[tuple[str, str, Row]] = []
        self._frames_queued = False  # a DataFrame was queued as an input (_queue_frame)
        self._committed = False  # the current step has committed (its callbacks run)
        self.listeners: list[Listener] = []
        self._phase: dict[str, list[Listener]] = {"pre": [], "post": [], "send": []}
        self._sent_hooks: list[Callable[[], None]] = []  # after each step's sends
        self._inbox = Inbox()
        self._waiting = self._inbox.items  # (its truth: a delivery waits)
        self._outbox: list[Outbound] = []  # located facts for other nodes: sent at step 1
        self._fixpoint: Fixpoint | None = None
        # (pending inputs, event queue, listeners) as the step's current attempt began
        self._attempt_mark = (0, 0, 0)
        self._stepping = False
        self._fires_at_start = any(rule.start is not None for rule in plan.rules)
        with recursion_room():  # a fact's values may nest MAX_NESTING deep
            self._load_facts(send_facts)
        for handler in handlers:
            handler(self)
        self._bind_natives(natives)
        if provenance:  # explanations read rows: Spark's and DuckDB's strata send them back
            for offload in (self.spark, self.vector):
                for name, rel in relations.items():
                    if offload is not None and not rel.event:
                        offload.keep_local(name, self.store)
            self.store.commit()

    @classmethod
    def from_file(cls, path: str, **options: Any) -> Engine:
        # UTF-8, a byte-order mark skipped (a P2 program: Latin-1 in comments too)
        return cls(read_program(path, options.get("dialect"))[0], path, **options)

    @property
    def checked(self):
        """The analysed program (relations, rules, strata, warnings) the plan came from."""
        return self.plan.checked

    # -- the event API ------------------------------------------------------------------

    def register_listener(self, relation: str, pattern: tuple | None = None,
                          callback: Callable[[tuple], Any] | None = None, *,
                          phase: str = "post", op: str | None = None) -> None:
        """Call ``callback(row)`` for each row of ``relation`` matching ``pattern``:
        ``post`` (after the step: its events and net changes), ``pre`` (a step's input
        events, before its fixpoint) or ``send`` (tuples the step sends, after commit)."""
        rel = self._relation(relation)
        if callback is None:
            raise TypeError("register_listener needs a callback")
        if phase not in ("pre", "post", "send"):
            raise ValueError(f"phase must be 'pre', 'post' or 'send', not {phase!r}")
        if op == "retract" and phase == "send":  # a remote view's row no longer derived
            pass
        elif op not in (None, "insert", "delete"):
            raise ValueError(f"op must be 'insert' or 'delete', not {op!r}")
        if op is not None and rel.event:
            raise ValueError(f"`{relation}` is an event relation: listeners on it take no op")
        if phase == "pre" and not rel.event:
            raise ValueError("phase='pre' listeners see input events; "
                             f"`{relation}` is persistent")
        if pattern is not None:
            if len(pattern) != rel.arity:
                raise ValueError(f"pattern has {len(pattern)} fields; `{relation}` has "
                                 f"{rel.arity}")
            pattern = tuple(v if v is ANY else python(internal(v)) for v in pattern)
        offloads = [o for o in (self.spark, self.vector) if o is not None and not rel.event]
        for offload in offloads:  # its rows must come to Python
            offload.keep_local(relation, self.store)
        if offloads and (not self._stepping or self._committed):  # (no later rollback)
            self.store.commit()
        listener = Listener(relation, pattern, callback, phase, op)
        self.listeners.append(listener)
        self._phase[phase].append(listener)

    registerListener = register_listener

    def generate_event(self, relation: str, row: tuple, when: float | None = None) -> None:
        rel = self._relation(relation)
        if not rel.event:
            raise ValueError(f"`{relation}` is persistent: use insert()")
        if when is not None and (isinstance(when, bool) or not isinstance(when, (int, float))
                                 or not math.isfinite(when)):
            raise ValueError(f"when must be a finite number of seconds, not {when!r}")
        self.queue.push(self.now if when is None else when, relation, self._row(rel, row))

    generateEvent = generate_event

    def insert(self, relation: str, row: tuple) -> None:
        self.pending.append(("insert", relation, self._row(self._persistent(relation), row)))

    def _queue_frame(self, rel: Relation, found: FrameInput) -> None:
        """A DataFrame that stays in Spark as an input of the next step (inserts)."""
        self.pending.append(("insert", rel.name, found))  # type: ignore[arg-type]
        self._frames_queued = True

    def _queue(self, rel: Relation, rows: list[Row]) -> None:
        """Checked rows as inputs of the next step: events now, or inserts."""
        if rel.event:
            for row in rows:
                self.queue.push(self.now, rel.name, row)
        else:
            self.pending.extend(("insert", rel.name, row) for row in rows)

    def delete(self, relation: str, row: tuple) -> None:
        self.pending.append(("delete", relation, self._row(self._persistent(relation), row)))

    def deliver(self, relation: str, row: tuple, op: str | None = None) -> None:
        """Take a tuple that arrived from elsewhere (a transport): an event, or with ``op``
        "insert" (the default) or "delete" a change of a persistent relation. It is an input
        of the next step. Safe to call from any thread; wakes a waiting ``run``. Raises
        DeliveryError for an unknown or built-in relation, a wrong number of fields, or a
        value that is not an Overlog value (int, float, str, bool, null, list)."""
        self._inbox.put(*self._delivery(relation, row, op))
        self.clock.wake()

    def deliver_many(self, items: Iterable[tuple[str, tuple, str | None]]) -> None:
        """``deliver`` of (relation, row, op) items at once, in order: all of them, or
        none and DeliveryError for the first bad one."""
        checked = []
        for item in items:
            if not isinstance(item, (tuple, list)) or len(item) != 3:
                raise DeliveryError(f"an item to deliver is (relation, row, op), not {item!r}")
            checked.append(self._delivery(*item))
        if checked:
            self._inbox.put_many(checked)
            self.clock.wake()

    def _delivery(self, relation: str, row: tuple, op: str | None) -> tuple[str, str, Row]:
        rel = self.relations.get(relation) if isinstance(relation, str) else None
        if rel is None or rel.builtin:
            raise DeliveryError(f"no relation `{relation}` to deliver to")
        if rel.event:
            if op not in (None, "event"):
                raise DeliveryError(f"`{relation}` is an event relation: no op {op!r}")
            kind = "event"
        else:
            kind = op or "insert"
            if kind not in ("insert", "delete"):
                raise DeliveryError(f"op must be 'insert' or 'delete', not {op!r}")
        if not isinstance(row, (tuple, list)) or len(row) != rel.arity:
            raise DeliveryError(f"`{relation}` has {rel.arity} fields; got "
                                f"{len(row) if isinstance(row, (tuple, list)) else row!r}")
        try:
            checked = internal_row(row)
        except (TypeError, ValueError) as error:
            raise DeliveryError(str(error)) from None
        fault = typed_fault(rel, checked)
        if fault is not None:
            raise DeliveryError(fault)
        return kind, relation, checked

    def on_sent(self, hook: Callable[[], None]) -> None:
        """Call ``hook()`` after the ``send`` listeners of each step that sent anything:
        a transport that batches a step's tuples sends the batch then."""
        self._sent_hooks.append(hook)

    def register_function(self, name: str, fn: Callable) -> None:
        if not name.startswith("f_"):
            raise ValueError(f"function names start with `f_`: {name!r}")
        if self._fixpoint is not None:
            raise RuntimeError("register functions before the first step")
        self.user_functions[name] = fn
        self._functions[name] = fn
        if self.spark is not None:
            self.spark.functions_changed()

    def rows(self, relation: str, *, max_rows: int | None = ROWS_LIMIT) -> list[Row]:
        """A relation's rows, sorted. A relation held in Spark or DuckDB (``holder``) is
        collected only up to ``max_rows`` rows (None: whatever its size); above,
        ValueError."""
        self._relation(relation)
        holder = self.holder(relation)
        if holder is not None:
            count = holder.held[relation]
            if max_rows is not None and count > max_rows:
                raise ValueError(
                    f"`{relation}` holds {count:,} rows in {holder.name}, more than rows() "
                    f"collects (max_rows={max_rows:,}): pass max_rows=None to collect them "
                    "all" + (", or read them with dataframe()" if holder is self.spark
                             else ""))
            return sorted_rows(holder.collect(relation))
        return sorted_rows(self.store.rows(relation))

    def sorted_table(self, relation: str) -> Any | None:
        """A relation's rows, sorted as ``rows`` sorts them, as a pyarrow Table with columns
        c0, c1, ..., when each column holds 64-bit ints alone or strings alone (what
        ``overlog run`` prints in bulk); else, or without pyarrow, None: read ``rows``. A
        relation held in Spark or DuckDB is collected whole, as Arrow."""
        rel = self._relation(relation)
        holder = self.holder(relation)
        if holder is None:
            return sorted_table(self.store.rows(relation), rel.arity)
        return sorted_batches(holder.batches(relation), rel.arity)

    def why(self, relation: str, row: tuple) -> Explanation:
        """How a tuple came to be (``Engine(provenance=True)``; docs/why.md): a tree of the
        rules and bindings that derive it, down to the facts, inputs and events it rests
        on, each with its step. A row of a persistent relation now, or an event of the
        latest step that had it. ValueError for a tuple that is not there."""
        rel = self._relation(relation)
        log = self._log("why")
        checked = self._row(rel, row)
        shown = format_tuple(relation, python_row(checked), event=rel.event)
        if rel.event:
            steps = [step for step, events in log.events.items()
                     if checked in events.get(relation, ())]
            if not steps:
                raise ValueError(f"{shown} was not an event of any step")
            step = max(steps)
        else:
            if checked not in self._current(relation):
                raise ValueError(f"{shown} is not in `{relation}` now (why-not says what "
                                 "is missing)")
            step = self.step_count
        with recursion_room():  # (a derivation as deep as MAX_DEPTH)
            found = self._explainer(log).why(relation, checked, step)
        if found is None:  # (a function whose value changed since: f_now, f_rand, ...)
            return Explanation(relation, python_row(checked), rel.event, "missing",
                               text=f"{shown}: no derivation found over the tables now")
        return found

    def why_not(self, relation: str, row: tuple) -> list[Explanation]:
        """Why a tuple is not there (``Engine(provenance=True)``): for each rule that could
        derive or write it, the first body atom (or condition) that no binding of the
        closest kind gets past, with that binding. ValueError for a tuple that is there."""
        rel = self._relation(relation)
        log = self._log("why_not")
        checked = self._row(rel, row)
        shown = format_tuple(relation, python_row(checked), event=rel.event)
        if not rel.event and checked in self._current(relation):
            raise ValueError(f"{shown} is in `{relation}` (why explains it)")
        with recursion_room():
            found = self._explainer(log).why_not(relation, checked)
        if not found:
            found = [Explanation(relation, python_row(checked), rel.event, "missing",
                                 text=f"no rule derives `{relation}`: only facts and "
                                 "inputs put rows there")]
        return found

    def _log(self, what: str) -> Log:
        if self.provenance is None:
            raise ValueError(f"{what}() reads what the engine records with "
                             "Engine(..., provenance=True)")
        return self.provenance

    def _current(self, relation: str) -> Set[Row]:
        holder = self.holder(relation)
        return set(holder.collect(relation)) if holder is not None else \
            self.store.rows(relation)

    def _explainer(self, log: Log) -> Explainer:
        """The explainer of the tables as they are (kept until the next step: its indexes
        serve every question until then)."""
        kept = self._explained
        if kept is None or kept.step != self.step_count:
            # functions that draw from the engine's generator would change what the program
            # computes next: a binding calling one is not re-evaluated (no derivation)
            functions = {**self._functions, **dict.fromkeys(UNREPEATABLE, unrepeatable)}
            kept = self._explained = Explainer(
                self.plan, log, self.step_count, self._current, functions, self._fact_where,
                lambda place: where(self.plan, place, self.source),
                lambda relation, key: None if self.holder(relation)
                else self.store.tables[relation].indexes.get(key),
                self._fixpoint.dropped if self._fixpoint is not None else ())
        return kept

    def holder(self, relation: str) -> SparkStrata | VectorStrata | None:
        """Spark's or DuckDB's strata when ``relation`` lives there only (its rows are not
        in the store), else None."""
        for offload in (self.spark, self.vector):
            if offload is not None and relation in offload.held:
                return offload
        return None

    def count(self, relation: str) -> int:
        """How many rows a persistent relation holds now (wherever it lives)."""
        self._relation(relation)
        holder = self.holder(relation)
        return holder.held[relation] if holder is not None else len(self.store.rows(relation))

    def next_time(self) -> float | None:
        """When the next timed input is due: a queued event or a soft-state expiry."""
        if not self.soft:
            return self.queue.next_time()
        times = [self.queue.next_time(), *(s.next_expiry() for s in self.soft.values())]
        return min((t for t in times if t is not None), default=None)

    @property
    def idle(self) -> bool:
        """Nothing to do now: no pending change or delivery, no due event, and no rule
        without positive atoms waiting for the first step to fire it."""
        return not self._due(self.next_time())

    def _due(self, upcoming: float | None) -> bool:
        """Whether a step has something to do now; ``upcoming`` is ``next_time()``."""
        if self.pending or self._waiting or (self.step_count == 0 and self._fires_at_start):
            return True
        return upcoming is not None and upcoming <= max(self.now, self.clock.now())

    # -- running ------------------------------------------------------------------------

    def run(self, steps: int | None = None, until: float | None = None) -> list[StepReport]:
        """Run steps until idle (no due inputs, and no timed ones), ``steps`` steps, or
        clock time ``until``. Idle with a timed input ahead, it waits on the clock (the sim
        clock jumps; a delivery ends a real wait early)."""
        if self._stepping:
            self._refuse_reentry()
        reports = []
        while steps is None or len(reports) < steps:
            upcoming = self.next_time()
            if not self._due(upcoming):
                if upcoming is None or (until is not None and upcoming > until):
                    break
                self.clock.wait(upcoming)
                self.now = max(self.now, self.clock.now())
                continue
            reports.append(self.step())
        return reports

    def step(self) -> StepReport:
        """Run one timestep at the current clock time."""
        if self._stepping:
            self._refuse_reentry()
        self._stepping = True
        try:
            with recursion_room():  # values may nest MAX_NESTING deep
                return self._step()
        finally:
            self._stepping = False

    @staticmethod
    def _refuse_reentry() -> None:
        """step() or run() while a step runs."""
        raise RuntimeError("step() or run() called while a step runs (from a listener or "
                           "a function of the program): queue inputs instead, with "
                           "generate_event, insert, delete or deliver")

    def _step(self) -> StepReport:
        self._committed = False
        if self._fixpoint is None:
            self._fixpoint = self._start()
        self.now = max(self.now, self.clock.now())
        self.step_count += 1
        report = StepReport(self.step_count, self.now)
        if self.profile is not None:
            self.profile.step_started()
        store = self.store
        # what the step takes from its queues (put back, should it end unfinished)
        due: list[tuple[str, Row]] = []
        expiries: list[tuple[str, str, Row]] = []
        taken: list[tuple[str, str, Row]] = []
        began = False
        quarantined: list[tuple[tuple[str, str, Row], StepError]] = []
        failed: list[StepError] = []  # failures no input can be blamed for
        self._dropped = []
        rolled_back = False  # the step does nothing: every attempt failed
        # No full garbage collection while the step evaluates. A large step grows the
        # tracked containers (tables, index buckets) many times over, and the collector
        # runs a full collection, visiting every row of every table, each time they grow by
        # a quarter; after the step, one does. Young collections run every YOUNG_GC
        # allocations, not every 700: each visits the step's large young containers
        # (candidate lists, delta sets, a table's new index) again, until they are old.
        thresholds = gc.get_threshold()
        try:
            if self._waiting:  # (no call in a step of local inputs alone)
                self._take_deliveries()
            store.begin_step()
            began = True
            self._attempt_mark = (len(self.pending), self.queue.mark(), len(self.listeners))
            due = self.queue.pop_due(self.now)
            for name, soft in self.soft.items():  # first: a refresh below wins
                expiries += [("delete", name, row) for row in soft.expired(self.now)]
            taken, self.pending = self.pending, []
            inputs = _inputs(due, expiries, taken)
            gc.set_threshold(thresholds[0] and max(thresholds[0], YOUNG_GC), thresholds[1],
                             2**31 - 1)
            while True:
                try:
                    changes, sends = self._attempt(inputs)
                    break
                except _Failure as failure:
                    self._rollback()
                    if failure.error.code != "E307":  # past a limit: no input to single out
                        if self._refused(failure.rule, failure, failed):
                            continue
                        blamed = self._blame(failure, inputs)
                        if blamed:  # the failing bindings name their inputs: no search
                            quarantined += blamed
                            gone = {id(i) for i, _ in blamed}
                            inputs = [i for i in inputs if id(i) not in gone]
                            continue
                        culprit, found = self._culprit(failure, inputs)
                        if culprit is None:  # (the first step: a rule without atoms?)
                            rule, culprit, found = self._start_culprit(failure, inputs)
                            if self._refused(rule, found, failed):
                                continue
                        if culprit is not None:
                            quarantined.append((culprit, found.error))
                            inputs = [i for i in inputs if i is not culprit]
                            continue
                    # it fails whatever its inputs, or ran past a limit: the step does nothing
                    quarantined += [(i, failure.error) for i in inputs]
                    if not inputs:
                        failed.append(failure.error)
                    changes, sends = [], []
                    self._fixpoint.firings.clear()  # (the failed attempt's) # type: ignore
                    rolled_back = True
                    break
        except BaseException:  # a bug of ours, or an interrupt: as if the step never ran
            if began:
                self._rollback(abort=True)
            self._unstep(_inputs(due, expiries, taken))
            self._fixpoint.restore_starts(self._dropped)  # type: ignore[union-attr]
            raise
        finally:
            gc.set_threshold(*thresholds)
        if expiries and quarantined:  # a tuple whose expiry fails stays, and expires no more
            # (else it would fail again at every step, and the engine never be idle)
            failing = {id(item) for item, _ in quarantined}
            for item in expiries:
                if id(item) in failing:
                    self.soft[item[1]].forget(item[2])
        store.commit()
        self._committed = True
        self._started = self._started or not rolled_back
        try:  # the step stands: an interrupt in a callback below ends it as it is
            self._callbacks(report, changes, sends, quarantined, failed)
        finally:
            store.end_step()  # the report keeps this step's change sets
        if self.profile is not None:
            self.profile.step_ended(None if rolled_back else self._fixpoint.firings)  # type: ignore[union-attr]
        if self.provenance is not None:
            raw = report._raw  # (the step's change sets, as the report keeps them)
            thresholds = gc.get_threshold()  # (no full collections meanwhile: see above)
            gc.set_threshold(thresholds[0], thresholds[1], 2**31 - 1)
            try:
                self.provenance.record(self.step_count, raw["events"], raw["inserted"],
                                       raw["deleted"], inputs, self._writes if changes else [])
            finally:
                gc.set_threshold(*thresholds)
        return report

    def _callbacks(self, report: StepReport, changes: list, sends: list,
                   quarantined: list[tuple[tuple[str, str, Row], StepError]],
                   failed: list[StepError]) -> None:
        """After commit: queue the changes for the next step, send, report, call back."""
        firings: dict[str, int] = {}  # by rule label (rules sharing a name: summed)
        labels = self._labels
        for rule, count in self._fixpoint.firings.items():  # type: ignore[union-attr]
            label = labels[rule] if rule.__class__ is int else rule
            firings[label] = firings.get(label, 0) + count  # type: ignore[index]
        report.firings = firings
        spark = self.spark
        if spark is not None:  # relations held in Spark at the end: inputs first
            report.held = {name: change for name, change in spark.input_changes.items()
                           if any(change) and name in spark.held}
        if self._fixpoint.held:  # type: ignore[union-attr]
            report.held.update((name, (change.added, change.removed))  # then the rest
                               for name, change in self._fixpoint.held.items()  # type: ignore[union-attr]
                               if (change.added or change.removed) and self.holder(name))
        if changes:  # (ahead of what listeners and functions queued during the step)
            self.pending[:0] = changes
        if sends or self._outbox:
            self._send(report, sends)
        for (kind, relation, row), error in quarantined:
            if row.__class__ is FrameInput:  # a DataFrame: named, not listed
                row = repr(row)
            error.quarantined += ((kind, relation, python_row(row)
                                   if row.__class__ is tuple else row),)
            if relation != ERROR_RELATION:  # (an error event that fails: reported, and no
                # new one, which would fail in turn, step after step)
                self.queue.push(self.now, ERROR_RELATION,
                                (error.step, relation, row, error.message))
        if quarantined or failed:
            seen = set()
            for error in [*(error for _, error in quarantined), *failed]:
                if id(error) not in seen:
                    seen.add(id(error))
                    report.errors.append(error)
        self._report(report)
        self._post_listeners(report)

    def _unstep(self, inputs: list[tuple[str, str, Row]]) -> None:
        """Put a step's inputs back, in order, for the next step to take."""
        self.step_count -= 1
        for kind, relation, row in reversed(inputs):
            if kind == "event":
                self.queue.push_front(self.now, relation, row)
        self.pending[:0] = [i for i in inputs if i[0] != "event"]

    def _attempt(self, inputs: list[tuple[str, str, Row]]):
        # what listeners and functions queue or register from here goes if the attempt is
        # rolled back
        self._attempt_mark = (len(self.pending), self.queue.mark(), len(self.listeners))
        try:
            if self._offload is not None:
                self._offload.begin_step()
            self._apply_inputs(inputs)
            if self._phase["pre"]:
                self._pre_listeners(inputs)
            deferred = self._fixpoint.run(initial=not self._started)  # type: ignore[union-attr]
            self._writes = deferred.writes
            if not deferred.writes and not deferred.deletes:
                return [], deferred.sends
            return self._commit(deferred, inputs)
        except EvaluationError as error:
            drivers = [(error.source, row,
                        self._step_error(code, message, error.rule, binding, expr))
                       for row, code, message, binding, expr in error.failures]
            raise _Failure(self._step_error(error.code, error.message, error.rule,
                                            error.binding, error.expr), drivers,
                           error.rule) from error
        except InputFailure as error:  # the input to blame is found by bisection
            raise _Failure(self._step_error("E308", str(error))) from error

    def _step_error(self, code: str, message: str, rule: RulePlan | None = None,
                    binding: dict | None = None, expr: Any = None) -> StepError:
        """The error of a failed step; located at the expression that failed (``expr``)
        where the backend knows it, else at the rule."""
        path = self.path
        span = expr.span if expr is not None and expr.span is not None else \
            rule.span if rule else None
        if span is not None and self.plan.checked is not None:  # (a line #include brought)
            path, line = self.plan.checked.source.where(span.line)
            span = Span(line, span.column, line + span.end_line - span.line, span.end_column)
        return StepError(code, message, step=self.step_count, time=self.now, path=path,
                         rule=_rule_name(rule) if rule else None, span=span,
                         binding={name: python(value) for name, value in (binding or {}).items()},
                         expression=format_expr(expr) if expr is not None else None)

    @staticmethod
    def _blame(failure: _Failure, inputs: list[tuple[str, str, Row]],
               ) -> list[tuple[tuple[str, str, Row], StepError]]:
        """The inputs to quarantine when every failing binding was driven by an input row
        (an event, or a row inserted or deleted): each of those, with its own error.
        Nothing when some failure cannot be traced to an input: then the step bisects."""
        if not failure.drivers:
            return []
        by_row = _positions(inputs)
        blamed: dict[int, StepError] = {}
        for relation, row, error in failure.drivers:
            position = by_row.get((relation, row))
            if position is None:
                return []
            blamed.setdefault(position, error)
        return [(inputs[position], blamed[position]) for position in sorted(blamed)]

    def _culprit(self, failure: _Failure, inputs: list) -> tuple[tuple | None, _Failure]:
        """The input to quarantine: the first, in queue order, whose prefix of the inputs
        fails (bisection; deterministic, unlike which failing binding is met first). Returns
        it with the failure to report, or None if the step fails even with no input (at
        the first step, the rules without positive atoms firing make the state the inputs
        come to, as at later steps)."""
        if not inputs or self._fails([]) is not None:
            return None, failure
        hi, found = _first_failing(len(inputs), lambda k: self._fails(inputs[:k]), failure)
        return inputs[hi - 1], found

    def _start_culprit(self, failure: _Failure, inputs: list,
                       ) -> tuple[RulePlan | None, tuple | None, _Failure]:
        """At the first step, where the rules without positive atoms fail the step with no
        input, what to blame: (a rule of them, None, the failure to report) or (None, an
        input or None, the failure to report; None: the inputs fail with none of them firing
        but no input alone does). The rule is the first, in program order,
        without whose firing the step passes with all its inputs (what it derives may fail
        on a fact that only the others let pass); else, where the inputs pass without any
        of them firing, the first whose firing with those before it fails the step
        (bisection; a step limit passed is never such a failure). Where the inputs fail on
        their own, the input is ``_culprit``'s with none of them firing."""
        fixpoint = self._fixpoint
        assert fixpoint is not None
        if self._started or not fixpoint.starts:
            return None, None, failure
        order = list(fixpoint.starts)

        def fails(firing: Collection[int]) -> _Failure | None:  # (a limit passed: None)
            fixpoint.fire_only(firing)
            found = self._fails(inputs)
            return found if found is not None and found.error.code != "E307" else None

        try:
            for index in order:
                fixpoint.fire_only([i for i in order if i != index])
                if self._fails(inputs) is None:
                    return fixpoint.rules[index].plan, None, failure
            alone = fails(())
            if alone is None:
                hi, found = _first_failing(len(order), lambda k: fails(order[:k]), failure)
                return fixpoint.rules[order[hi - 1]].plan, None, found
            culprit, found = self._culprit(alone, inputs)  # (none of them firing)
            return None, culprit, found
        finally:
            fixpoint.fire_only(order)

    def _refused(self, rule: RulePlan | None, failure: _Failure,
                 failed: list[StepError]) -> bool:
        """Whether ``rule``, to blame for the failure, is a rule without positive atoms at
        the first step (itself failing, by any of its plans, or found by
        ``_start_culprit``): it is then taken out of the program for good and reported
        (there is no input to quarantine), and the step runs again without it."""
        fixpoint = self._fixpoint
        assert fixpoint is not None
        if rule is None or self._started or rule.index not in fixpoint.starts:
            return False
        fixpoint.refuse_start(rule.index)
        self._dropped.append(rule.index)
        failure.error.dropped = _rule_name(rule)
        failed.append(failure.error)
        return True

    def _fails(self, inputs: list) -> _Failure | None:
        try:
            self._attempt(inputs)
            return None
        except _Failure as failure:
            return failure
        finally:
            self._rollback()

    def _rollback(self, abort: bool = False) -> None:
        """Undo the step's attempt (``abort``: and its events' turnover), with the inputs
        its listeners and functions queued and the listeners they registered (each attempt
        calls them again)."""
        if abort:
            self.store.abort_step()
        else:
            self.store.rollback()
        pending, events, listeners = self._attempt_mark
        del self.pending[pending:]
        self.queue.forget_since(events)
        for listener in self.listeners[listeners:]:
            self._phase[listener.phase].remove(listener)
        del self.listeners[listeners:]

    def _apply_inputs(self, inputs: list[tuple[str, str, Row]]) -> None:
        store = self.store
        spark = self.spark
        if spark is not None and (spark.held or self._frames_queued):
            inputs = spark.take_inputs(inputs, store)  # those held in Spark apply there
        vector = self.vector
        if vector is not None and vector.held:  # those held in DuckDB: back in the store
            for name in {relation for _, relation, _ in inputs} & vector.held.keys():
                vector.unhold(name, store)
        if len(inputs) == 1:  # (a step of one event, most often: no grouping)
            ((kind, relation, row),) = inputs
            runs: Iterable[tuple[tuple[str, str], Sequence[Row]]] = [((kind, relation), (row,))]
        else:  # (by relation, then kind: keys that are the inputs' own strings, not pairs)
            runs = (((kind, relation), list(map(_ROW, run)))
                    for relation, same in itertools.groupby(inputs, _RELATION)
                    for kind, run in itertools.groupby(same, _KIND))
        for (kind, relation), rows in runs:
            if kind == "event":  # distinct already: events are sets within a step
                if len(rows) == 1:
                    if rows[0] not in store.rows(relation):
                        store.add(relation, rows[0])
                    continue
                new = set(rows).difference(store.rows(relation))
                if new:
                    store.add_many(relation, new)
            elif kind == "delete":  # of the row holding its key, in a keyed table
                keyed = self.relations[relation].keyed
                for row in rows:
                    if keyed:
                        row = store.holder(relation, row) or row
                    self._retract(relation, row)
            elif relation in self._plain:  # no keys, no soft state: a set of inserts
                store.assert_many(relation, rows)
            elif len(rows) > 1 and relation not in self.soft and store.assert_keyed(
                    relation, rows):  # keyed, no soft state, distinct keys: in bulk
                continue
            else:
                soft = self.soft.get(relation)
                for row in rows:
                    holder = store.holder(relation, row)
                    if holder is not None and holder != row:
                        self._retract(relation, holder)
                    if row not in store.asserted(relation):
                        store.assert_row(relation, row)
                    if row not in store.rows(relation):
                        store.add(relation, row)
                    if soft is not None:
                        soft.stamp(row, self.now)
        for name, soft in self.soft.items():
            for row in soft.over_cap():
                self._retract(name, row)

    def _retract(self, relation: str, row: Row) -> None:
        store = self.store
        if row in store.asserted(relation):
            store.retract_row(relation, row)
        if row in store.rows(relation):
            store.remove(relation, row)
        soft = self.soft.get(relation)
        if soft is not None:
            soft.forget(row)

    def _pre_listeners(self, inputs: list[tuple[str, str, Row]]) -> None:
        pre = [*self._phase["pre"]]  # (those registered meanwhile: from the next time)
        for kind, relation, row in inputs:
            if kind != "event":
                continue
            row = python_row(row)
            for listener in pre:
                if listener.relation == relation and matches(listener.pattern, row):
                    try:
                        listener.callback(row)
                    except Exception as error:
                        raise _Failure(self._step_error(
                            "E304", f"pre listener on `{relation}` raised "
                            f"{type(error).__name__}: {error}")) from error

    def _conflict(self, conflicts: dict[tuple[str, Any], dict[Row, RulePlan]],
                  inputs: list[tuple[str, str, Row]]) -> _Failure:
        """The failure of a step that wrote two rows to one key (E303). Where the writing
        rules show which input rows of their triggers derived each conflicting row (the
        trigger row, not rows it joined), the inputs are taken in queue order, as the step
        would have met them: an input whose row clashes with one an earlier, unblamed input
        wrote is to blame, with its own error; the others' rows stand. Otherwise (a row not
        derived from inputs, or one input deriving two rows for one key, which rows it
        joined decide) the step bisects."""

        def error(rule: RulePlan, rows: tuple[Row, Row]) -> StepError:
            first, second = sorted_tuples(rule.head, rows)
            return self._step_error("E303", f"key conflict: {first} and {second} written to "
                                    "the same key in one step", rule)

        first, (second, rule) = itertools.islice(next(iter(conflicts.values())).items(), 2)
        failure = _Failure(error(rule, (first[0], second)))
        position = _positions(inputs)
        written: dict[int, tuple[RulePlan, list[tuple[Any, Row]]]] = {}  # by rule index
        for key, rows in conflicts.items():
            for row, rule in rows.items():
                written.setdefault(rule.index, (rule, []))[1].append((key, row))
        by_input: dict[int, dict[Any, tuple[Row, RulePlan]]] = {}
        for rule, pairs in written.values():
            found = self._fixpoint.sources(rule, [row for _, row in pairs])  # type: ignore
            for key, row in pairs:
                places = [position.get(source) for source in (found or {}).get(row, ())]
                if not places or None in places:
                    return failure  # not all from inputs: bisect
                for place in places:
                    mine = by_input.setdefault(place, {})  # type: ignore[arg-type]
                    if mine.setdefault(key, (row, rule))[0] != row:
                        return failure  # one input, two rows for one key: bisect
        standing: dict[Any, Row] = {}
        blamed: dict[int, StepError] = {}
        for place in sorted(by_input):
            mine = by_input[place]
            clash = next(((standing[key], row, rule) for key, (row, rule) in mine.items()
                          if standing.get(key, row) != row), None)
            if clash is not None:
                blamed[place] = error(clash[2], clash[:2])
            else:
                for key, (row, _) in mine.items():
                    standing.setdefault(key, row)
        failure.drivers = [(inputs[place][1], inputs[place][2], blamed[place])
                           for place in sorted(blamed)]
        return failure

    def _commit(self, deferred, inputs: list[tuple[str, str, Row]]) -> tuple[list, list]:
        """The step's buffered changes, checked: (pending changes for the next step, sends).
        Deletions come first, then writes (with key replacement when applied). Called when
        there are writes or deletions."""
        store = self.store
        writes: dict[tuple[str, Any], Row] = {}
        writers: dict[tuple[str, Any], RulePlan] = {}
        conflicts: dict[tuple[str, Any], dict[Row, RulePlan]] = {}
        for rule, row in deferred.writes:
            keys = self.relations[rule.head].keys
            key = (rule.head, tuple(row[k] for k in keys))
            other = writes.get(key)
            if other is None:
                writers[key] = rule
            elif other != row:
                conflicts.setdefault(key, {other: writers[key]}).setdefault(row, rule)
            writes[key] = row
        if conflicts:
            raise self._conflict(conflicts, inputs)
        changes: list[tuple[str, str, Row]] = []
        deleted: set[tuple[str, Row]] = set()
        for rule, row in deferred.deletes:
            stored = store.holder(rule.head, row)
            if stored is not None and stored in store.asserted(rule.head):
                changes.append(("delete", rule.head, stored))
                deleted.add((rule.head, stored))
        for (relation, _), row in writes.items():
            if (row not in store.asserted(relation) or (relation, row) in deleted
                    or store.holder(relation, row) != row
                    or relation in self.soft):  # a write refreshes a soft tuple
                changes.append(("insert", relation, row))
        return changes, deferred.sends

    def _send(self, report: StepReport, sends: Iterable[tuple[RulePlan, Row, str]]) -> None:
        """The step's outbound tuples leave as ``send`` events: rule by rule, retractions
        before insertions, each rule's rows sorted (so what leaves does not depend on the
        order of sets). Called when there is something to send."""
        outbound, self._outbox = self._outbox, []
        by_rule: dict[tuple[int, bool, str], tuple[RulePlan, list[Row]]] = {}
        for rule, row, op in sends:
            by_rule.setdefault((rule.index, op != "retract", op), (rule, []))[1].append(row)
        for (_, _, op), (rule, rows) in sorted(by_rule.items(), key=lambda item: item[0][:2]):
            outbound += [Outbound(row[rule.location], rule.head, op, row)  # type: ignore
                         for row in sorted_rows(rows)]
        report.sent = outbound
        listeners: dict[tuple[str, str], list[Listener]] = {}  # (relation, op) -> listeners
        for listener in self._phase["send"]:
            for op in ("event", "insert", "delete", "retract") if listener.op is None \
                    else (listener.op,):
                listeners.setdefault((listener.relation, op), []).append(listener)
        for message in outbound:
            for listener in listeners.get((message.relation, message.op), ()):
                if listener.pattern is None or matches(listener.pattern, message.row):
                    try:
                        listener.callback(message.row)
                    except Exception as error:
                        report.errors.append(StepError(
                            "E306", f"send listener on `{listener.relation}` raised "
                            f"{type(error).__name__}: {error}", step=report.step,
                            time=report.time, path=self.path))
        for hook in self._sent_hooks:
            try:
                hook()
            except Exception as error:
                report.errors.append(StepError(
                    "E306", f"transport raised {type(error).__name__}: {error}",
                    step=report.step, time=report.time, path=self.path))
        self._take_deliveries()  # what was delivered to this node keeps its place in line

    def _take_deliveries(self) -> None:
        if not self._waiting:
            return
        for kind, relation, row in self._inbox.take():
            if kind == "event":
                self.queue.push(self.now, relation, row)
            else:
                self.pending.append((kind, relation, row))

    def _report(self, report: StepReport) -> None:
        raw = report._raw
        raw["events"], raw["inserted"], raw["deleted"] = self.store.step_changes()

    def _post_listeners(self, report: StepReport) -> None:
        for listener in [*self._phase["post"]]:  # (those registered meanwhile: next time)
            batches = []
            if self.relations[listener.relation].event:
                batches.append(report.rows("events", listener.relation))
            else:
                if listener.op in (None, "delete"):
                    batches.append(report.rows("deleted", listener.relation))
                if listener.op in (None, "insert"):
                    batches.append(report.rows("inserted", listener.relation))
            for rows in batches:
                for row in rows:
                    if listener.pattern is None or matches(listener.pattern, row):
                        try:
                            listener.callback(row)
                        except Exception as error:
                            report.errors.append(StepError(
                                "E305", f"post listener on `{listener.relation}` raised "
                                f"{type(error).__name__}: {error}", step=report.step,
                                time=report.time, path=self.path))

    # -- set-up -------------------------------------------------------------------------

    def _unknown_functions(self, functions: Mapping[str, Callable], calls) -> None:
        missing = [(name, span) for name, span in calls if name not in functions]
        if missing:
            raise SemanticError([Diagnostic("E208", f"unknown function `{name}`", span)
                                 for name, span in missing], self.plan.checked.source)

    def _start(self) -> Fixpoint:
        self._unknown_functions(self._functions, self.plan.calls)
        return Fixpoint(self.plan, self.backend, self.limits, self.progress, self._offload,
                        self.profile)

    def _load_facts(self, send: bool | Callable[[Any], bool]) -> None:
        """Queue the program's facts; those located at another address are sent there at
        the first step if ``send`` (True, or a function of the address) says so."""
        if not callable(send):
            send = (lambda address: True) if send else (lambda address: False)
        for fact in self.plan.facts:
            rows: Sequence[Row] = (fact.rows if isinstance(fact, FactRowsPlan) else
                                   (self._fact_row(fact),))
            location, relation = fact.location, fact.relation
            if self.provenance is not None:
                lines = getattr(fact, "lines", ()) or [fact.span] * len(rows)
                self._fact_where.update(zip(((relation, row) for row in rows), lines,
                                            strict=True))
            if location is not None:
                here = [row for row in rows if row[location] == self.address]
                self._outbox += [Outbound(row[location], relation,
                                          "event" if fact.event else "insert", python_row(row))
                                 for row in rows
                                 if row[location] != self.address and send(row[location])]
                rows = here
            if fact.event:
                for row in rows:
                    self.queue.push(0.0, relation, row)
            else:
                self.pending += [("insert", relation, row) for row in rows]

    def _fact_row(self, fact: FactPlan) -> Row:
        """The values of a fact whose arguments are expressions."""
        self._unknown_functions(self._functions, [(call.function, call.span)
                                                  for value in fact.values
                                                  for call in expr_calls(value)])
        try:
            return self.backend.values(fact.values)
        except PlanFailure as failure:
            where = failure.expr.span if failure.expr is not None else None
            raise SemanticError([Diagnostic(
                "E225", f"cannot evaluate fact: {failure.cause}", where or fact.span)],
                self.plan.checked.source) from None

    def _bind_natives(self, natives: NativeResolver | None) -> None:
        problems, found = [], []
        for handler in self.plan.handlers:
            try:
                if natives is None:
                    raise LookupError(f"native handler `{handler.target}`: this engine "
                                      "resolves no native handlers")
                found.append((handler.relation, natives(handler.target)))
            except LookupError as error:
                problems.append(Diagnostic("E218", str(error.args[0]), handler.span))
        if problems:
            raise SemanticError(problems, self.plan.checked.source)
        for relation, handler in found:
            self.register_listener(relation, None, handler)

    def _relation(self, relation: str) -> Relation:
        rel = self.relations.get(relation)
        if rel is None:
            raise KeyError(f"unknown relation `{relation}`")
        return rel

    def _persistent(self, relation: str) -> Relation:
        rel = self._relation(relation)
        if rel.event:
            raise ValueError(f"`{relation}` is an event relation: use generate_event()")
        return rel

    @staticmethod
    def _row(rel: Relation, row: tuple) -> Row:
        """A row given through the API, checked: a tuple or list of Overlog values (lists
        become tuples); TypeError or ValueError otherwise, before anything is queued."""
        if not isinstance(row, (tuple, list)):
            raise TypeError(f"a row is a tuple of values, not {type(row).__name__}")
        if len(row) != rel.arity:
            raise ValueError(f"`{rel.name}` has {rel.arity} fields, got {len(row)}")
        try:
            checked = internal_row(row)
        except NotAValue as error:
            raise TypeError(f"`{rel.name}`: {error}") from None
        except ValueError as error:
            raise ValueError(f"`{rel.name}`: {error}") from None
        fault = typed_fault(rel, checked)
        if fault is not None:
            raise TypeError(fault)
        return checked


def _positions(inputs: list[tuple[str, str, Row]]) -> dict[tuple[str, Row], int]:
    """(relation, row) -> the last place in the step's inputs that gives it: the last input
    of a row decides whether it came or went (a delete then an insert of one row: the
    insert)."""
    return {(relation, row): place for place, (_, relation, row) in enumerate(inputs)}


def _backend_factory(backend: str | BackendFactory) -> BackendFactory:
    """The backend that holds the tables: the local one (with "spark", "vector" and "auto",
    the strata that go to Spark or DuckDB are evaluated there, and their results kept here
    too)."""
    if backend in ("local", "auto", "spark", "vector"):
        return LocalBackend.create
    if isinstance(backend, str):
        raise ValueError("backend must be 'local', 'auto', 'spark', 'vector' or a "
                         f"BackendFactory, not {backend!r}")
    return backend


def _rule_name(rule: RulePlan) -> str:
    return f"`{rule.name}`" if rule.name else f"{rule.index + 1}"


__all__ = ["ANY", "Engine", "StepReport"]
