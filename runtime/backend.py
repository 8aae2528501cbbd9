"""The seam between the fixpoint and the executors: a ``Store`` of relations and a ``Backend``
that evaluates plans on it, both set-at-a-time.

The fixpoint (``runtime/seminaive.py``) and the timestep (``runtime/engine.py``) use only
these protocols. The local backend (``runtime/local.py`` over ``runtime/store.py``) keeps
rows in Python sets with hash indexes; a Spark backend keeps them as DataFrames.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Collection, Iterable, Mapping, Set
from typing import TYPE_CHECKING, Any, Protocol

from overlog.plan import Expr, Plan
from overlog.runtime.builtins import ValueFault
from overlog.values import internal, python

if TYPE_CHECKING:
    from overlog.analysis import Relation

Row = tuple
UNCAPPED = sys.maxsize  # an evaluator's cap when its rows are not the step's new tuples


class FrameInput:
    """Rows held elsewhere (a Spark DataFrame, columns c0, c1, ... of Overlog's types), as
    one input of a step: inserts into a relation held in Spark."""

    __slots__ = ("count", "frame")

    def __init__(self, frame: Any, count: int) -> None:
        self.frame = frame
        self.count = count

    def __repr__(self) -> str:
        return f"a DataFrame of {self.count:,} rows"


class InputFailure(Exception):
    """Applying a step's inputs failed where they are held (Spark): the message says how."""


class PlanFailure(Exception):
    """An expression failed while evaluating a plan: carries the cause (the exception the
    expression raised, or that a user function raised), the binding at that point and the
    expression that failed (``expr``, where the backend knows it), and ``failures``: every
    seed whose work failed in the batch, as (seed, cause, binding, expression or None)."""

    def __init__(self, cause: BaseException, binding: dict[str, Any],
                 failures: list[tuple[tuple, BaseException, dict[str, Any], Any]] | None = None,
                 expr: Any = None):
        super().__init__(str(cause))
        self.cause = cause
        self.binding = binding
        self.failures = failures or []
        self.expr = expr


class Overflow(Exception):
    """A plan's output grew past the cap it was given (the step's tuple budget): raised
    between seeds, so that one evaluation cannot take all the memory there is."""

    def __init__(self, rows: int) -> None:
        super().__init__(f"{rows:,} rows")
        self.rows = rows


class Incomparable(Exception):
    """Two values a recursive min/max compares do not compare (an evaluator's ``improve``):
    the message is the TypeError's. Not a TypeError, which in generated code would be the
    engine's own bug."""


class FunctionError(Exception):
    """A user function raised: ``cause`` is what it raised. Backends wrap user functions so
    that only their errors, not every exception, count as the program's."""

    def __init__(self, name: str, cause: BaseException) -> None:
        super().__init__(str(cause) if isinstance(cause, ValueFault) else
                         f"{name} raised {type(cause).__name__}: {cause}")
        self.name = name
        self.cause = cause


class Store(Protocol):
    """Every relation's rows for the current step. Views of rows are live sets: read them,
    never mutate them. Mutations are journaled until ``commit`` (or undone by ``rollback``);
    callers add only absent rows and remove only present ones."""

    def rows(self, relation: str) -> Set[Row]: ...

    def asserted(self, relation: str) -> Set[Row]:
        """Rows put there by facts, inserts and event rules (the rest is derived)."""

    def added(self, relation: str) -> set[Row]:
        """A new set of the rows added in the step so far (and not removed since)."""

    def matching(self, relation: str, columns: tuple[int, ...], key: Any,
                 ) -> Collection[Row] | None:
        """The rows whose ``columns`` hold ``key`` (a bare value for one column, else a
        tuple), where an index on those columns has them at hand; else None."""

    def changes(self, relations: Iterable[str]) -> tuple[dict[str, set[Row]], dict[str, set[Row]]]:
        """New sets of the rows each relation gained and lost in the step so far (``added``
        and ``removed``, in one call)."""

    def removed(self, relation: str) -> Set[Row]:
        """The rows removed in the step so far (for an event relation: last step's)."""

    def step_changes(self) -> tuple[dict[str, list[Set[Row]]], dict[str, list[Set[Row]]],
                                    dict[str, list[Set[Row]]]]:
        """The step's events, and the rows added to and removed from persistent relations,
        each relation's as disjoint live sets (only relations with any; for reports)."""

    def assert_keyed(self, relation: str, rows: list[Row]) -> bool:
        """Assert rows of a keyed relation, each replacing the row holding its key; False,
        having done nothing, when two of them share a key."""

    def holder(self, relation: str, row: Row) -> Row | None:
        """The row holding ``row``'s key (keyed relations), else ``row`` if present."""

    def add(self, relation: str, row: Row) -> None: ...

    def add_many(self, relation: str, rows: set[Row]) -> None:
        """Add rows known to be absent; the store keeps ``rows``: do not mutate it after."""

    def remove(self, relation: str, row: Row) -> None: ...

    def remove_many(self, relation: str, rows: set[Row]) -> None: ...

    def assert_row(self, relation: str, row: Row) -> None: ...

    def assert_many(self, relation: str, rows: Collection[Row]) -> None:
        """Assert rows, adding those not visible yet (for relations without keys)."""

    def retract_row(self, relation: str, row: Row) -> None: ...

    def release(self, relation: str, asserted: bool = False) -> None:
        """Drop every row of a relation whose rows now live elsewhere (Spark), and with
        ``asserted`` its asserted rows, keeping the step's changes; journaled."""

    def take_back(self, relation: str, rows: set[Row], asserted: bool = False) -> None:
        """Hold a released relation's rows again (all asserted, with ``asserted``): not a
        change of the step; journaled."""

    def drop_indexes(self, relation: str) -> None:
        """Forget a relation's indexes (but its key's) until a plan reads them; journaled."""

    def index_columns(self, relation: str) -> list[tuple[int, ...]]:
        """The columns of each index a relation keeps (each a tuple)."""

    def fill(self, relation: str, generations: list[set[Row]],
             indexes: dict[tuple[int, ...], dict[Any, list[Row]]]) -> None:
        """``add_many`` of each of ``generations`` (rows born together, the oldest first,
        each after a ``tick``), with the new rows' indexes built elsewhere (for each of
        ``index_columns``: key, a column's value or a tuple of several, -> a list of the
        new rows holding it); journaled."""

    def on_rollback(self, undo: Callable[[Any], Any], arg: Any) -> None:
        """Journal ``undo(arg)`` to run if the step rolls back (for state kept beside the
        store, such as aggregate groups)."""

    def track(self, relation: str) -> None:
        """Keep, from now on, when each row of ``relation`` is added (``births``)."""

    def tick(self) -> None:
        """Advance the clock of ``births``: rows added from now on are born after every
        row there now."""

    def births(self, relation: str) -> list[tuple[int, Set[Row]]]:
        """A tracked relation's generations, oldest first: (clock, rows added then). A row
        present was born in the newest one holding it."""

    def reset_births(self, relation: str) -> None:
        """Forget when a tracked relation's rows were born (its derived rows are about to
        be evaluated afresh); journaled."""

    def rebirth(self, relation: str, rows: set[Row]) -> None:
        """Rows present are born again now, as if added; undone by a rollback."""

    def ordered(self, relation: str) -> bool:
        """Whether every derived row of a tracked relation has a derivation from asserted
        rows or rows born before it or with it (not so once rows came back from
        elsewhere)."""

    def set_ordered(self, relation: str, ordered: bool) -> None:
        """Say that it does, or no longer does; journaled."""

    def rollback(self) -> None: ...

    def mark(self) -> int:
        """A point of the step to roll back to (``rollback_to``)."""

    def rollback_to(self, mark: int) -> None:
        """Undo what the step did since ``mark``."""

    def commit(self) -> None:
        """The step's changes are fixed: forget the journal."""

    def begin_step(self) -> None:
        """Event relations lose last step's rows (they become ``removed``)."""

    def abort_step(self) -> None:
        """Undo the step, ``begin_step`` included, as if it had never started."""

    def end_step(self) -> None:
        """Forget the step's added and removed rows of persistent relations."""


class Evaluator(Protocol):
    def __call__(self, seed: Iterable[tuple], exclude: Mapping[str, Set[Row]] = ...,
                 cap: int = ...) -> Collection[Row]:
        """The plan's output over ``seed`` (rows of the driver's relation, seed values, or
        ignored for a ``Unit`` driver); ``old`` joins skip the rows in ``exclude``.
        A set of rows (where the projection is a bag, they may repeat), or for a plan with an
        ``Aggregate``, one row per group. Raises PlanFailure when an expression fails,
        Overflow when the output passes ``cap`` (distinct rows).

        Where the plan's rows are a recursive min/max's candidates (its projection has
        ``best``), the evaluator also has ``improve(seed, exclude, cap, best, before,
        improved)``: each row, as it is derived, replaces its group's row in ``best`` (group
        -> row) where it is better, and in ``improved``; ``before`` keeps each such group's
        row from before (None: none). Returns ``improved``, and raises Overflow when it
        passes ``cap``, Incomparable when two values do not compare."""


class Backend(Protocol):
    store: Store

    def prepare(self, plan: Plan) -> Evaluator:
        """Compile ``plan`` once; the evaluator reads the store as it is when called."""

    def create_indexes(self, plan: Plan) -> None:
        """Create the indexes ``plan`` reads now (they are maintained from then on)."""

    def values(self, exprs: tuple[Expr, ...]) -> tuple:
        """The values of ground expressions (a fact's arguments). Raises PlanFailure."""


# (relations, functions, names of the user's functions) -> a Backend on a new store holding
# those relations. ``functions`` is live (functions may be registered until the first step):
# read it when preparing plans, not before.
BackendFactory = Callable[["Mapping[str, Relation]", Mapping[str, Callable], Collection[str]],
                          Backend]


def guard_functions(functions: Mapping[str, Callable], user: Collection[str],
                    ) -> dict[str, Callable]:
    """``functions`` with each user function wrapped: it is called with plain Python values
    and its result becomes a value (``overlog.values``); what it raises, or a result that is
    not a value, becomes a FunctionError (an error of the program), distinct from a bug of
    the engine's."""

    def guarded(name: str, fn: Callable) -> Callable:
        def call(*args: Any) -> Any:
            try:
                result = fn(*(python(a) for a in args))
            except Exception as error:
                raise FunctionError(name, error) from error
            try:
                return internal(result)
            except (TypeError, ValueError) as error:
                raise FunctionError(name, ValueFault(f"the result of {name}: {error}")) \
                    from None
        return call

    return {name: guarded(name, fn) if name in user else fn for name, fn in functions.items()}
