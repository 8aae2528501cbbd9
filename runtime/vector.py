"""The vectorized backend: strata of view rules evaluated in DuckDB, in this process.

A stratum of view rules runs its whole semi-naive loop as SQL over DuckDB tables (``--backend
vector``), with the local backend's meaning: every plan of the IR becomes one ``SELECT``
(joins, ``notin`` as ``NOT EXISTS``, filters, assignments inlined), each round keeps the
candidate rows not derived before (an anti-join with the head's table), and only the new rows
cross back to Python, where the store keeps them as it keeps the local backend's. A linear
stratum evaluated afresh is one ``WITH RECURSIVE`` query instead (``_recursive``). The
tables a stratum reads and writes stay in DuckDB between steps (``resident``): a step that
only adds rows continues from them, semi-naive; one that removes rows, or changes a negated
relation, evaluates the stratum afresh. With ``--backend vector``, a head no other stratum
reads never crosses back at all: it is held in DuckDB (``holdable``, ``held``).

What DuckDB cannot evaluate with the local meaning runs on the local backend instead, its
reason kept in ``local`` (by stratum): whatever the data (``static_reason``: functions, lists,
division, aggregates, keyed heads, recursive min/max), or for these rows (``Unsupported``:
nulls, a column of mixed types, ints past 64 bits, -0.0, comparing an int with a float,
whose tie order Overlog defines; a plan the local backend could fail on with these types,
``_check``). An error inside DuckDB (an overflow) also sends the stratum to the local
backend, which reports it as it reports its own.

Values cross as Arrow columns (pyarrow) both ways; floats come back as the engine's floats
(``IntFloat`` when integral), booleans as ``Bool``, each distinct value of a column as one
Python object.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Set
from dataclasses import dataclass
from operator import itemgetter
from typing import Any

from overlog import plan as p
from overlog.limits import MAX_ROUNDS, recursion_room
from overlog.runtime.arrowrows import indexed_rows, shared_rows
from overlog.runtime.memory import THRESHOLD as HOLD
from overlog.runtime.memory import VECTOR_THRESHOLD as THRESHOLD
from overlog.runtime.placement import holdable, stratum_views
from overlog.runtime.seminaive import Filled, Held
from overlog.values import Bool, IntFloat, RingId, internal

Row = tuple
_TYPES = {int: "BIGINT", float: "DOUBLE", IntFloat: "DOUBLE", str: "VARCHAR",
          Bool: "BOOLEAN"}
_NAMES = {"BIGINT": "int", "DOUBLE": "float", "VARCHAR": "string", "BOOLEAN": "boolean"}


class VectorUnavailable(RuntimeError):
    """DuckDB (or pyarrow) is not installed: what to install."""


class Unsupported(Exception):
    """DuckDB cannot evaluate this with the local meaning: the local backend does."""


def connect() -> Any:
    """A new in-memory DuckDB database (raises VectorUnavailable with what to install)."""
    try:
        import duckdb
        import numpy  # noqa: F401  (rows cross into DuckDB as Arrow built from numpy)
        import pyarrow  # noqa: F401
    except ImportError as error:
        raise VectorUnavailable(
            f"the vector backend needs DuckDB, pyarrow and numpy ({error.name} is not "
            "installed): "
            "pip install 'overlog[vector]'") from None
    con = duckdb.connect(":memory:")
    # rows are sets: the order they were written in need not be kept (faster writes)
    con.execute("SET preserve_insertion_order = false")
    return con


# -- what DuckDB can run -----------------------------------------------------------------------

def static_reason(plan: p.ProgramPlan, index: int) -> str | None:
    """Why a stratum's view rules never run on DuckDB, whatever the data (None: they may, or
    it has none)."""
    views, reason = stratum_views(plan, index)
    if not views or reason is not None:
        return reason
    relations = plan.relations
    for rule in views:
        head = relations[rule.head]
        if head.keyed or head.lifetime != math.inf or head.size != math.inf:
            return f"`{rule.head}` has keys or soft state"
        for _, each in rule.plans():
            if isinstance(each.driver, p.Seed) and each is not rule.rederive:
                return "a plan seeded with bindings"
            for name in {rule.head, *p.plan_relations(each)}:
                if relations[name].arity == 0:
                    return f"`{name}` has no fields"
            for expr in p.plan_exprs(each):
                reason = _expr_reason(expr)
                if reason is not None:
                    return reason
    return None


def _expr_reason(expr: p.Expr) -> str | None:
    match expr:
        case p.Call(function=function):
            return f"{function}() has no DuckDB equivalent yet"
        case p.MakeList():
            return "a list"
        case p.Const(value=value):
            return "a list" if value.__class__ is tuple else \
                "a P2 identifier (its arithmetic wraps)" if value.__class__ is RingId else None
        case p.Arith(op=op, left=left, right=right):
            if op in ("/", "%"):
                return "/ and % do not run on DuckDB yet"
            if op in ("<<", ">>"):
                return "<< and >> do not run on DuckDB yet"
            return _expr_reason(left) or _expr_reason(right)
        case p.Test():
            return "boolean expressions (&&, ||, !, a comparison's value, an interval) do " \
                "not run on DuckDB yet"
        case p.Negate(operand=operand):
            return _expr_reason(operand)
    return None


# -- values ------------------------------------------------------------------------------------

Types = tuple[str, ...]  # a relation's column types (DuckDB's); None: it holds no rows


def columns(rows: Set[Row] | list[Row], arity: int,
            known: Types | None = None) -> tuple[Types | None, Any]:
    """The DuckDB type of each column of ``rows`` (and of the rows ``known`` describes; None
    for no rows), and the rows as an Arrow table (None for no rows); Unsupported for a value
    DuckDB would not give back as it is."""
    if not rows:
        return known, None
    import numpy as np
    import pyarrow as pa

    arrow = {"BIGINT": pa.int64(), "DOUBLE": pa.float64(), "VARCHAR": pa.string(),
             "BOOLEAN": pa.bool_()}
    found: list[str | None] = list(known) if known is not None else [None] * arity
    arrays = {}
    for i in range(arity):
        column = list(map(itemgetter(i), rows))
        kinds = set(map(type, column))
        types = {_TYPES.get(kind) for kind in kinds}
        if None in types:
            odd = next(kind for kind in kinds if kind not in _TYPES)
            raise Unsupported("a null" if odd is type(None) else "a list value"
                              if odd is tuple else f"a {odd.__name__} value")
        if found[i] is not None:
            types.add(found[i])
        if len(types) > 1:
            raise Unsupported("a column holding " + " and ".join(
                sorted(_NAMES[t] for t in types)) + " values")
        (kind,) = types
        found[i] = kind
        if kind == "BIGINT":
            try:
                values = np.fromiter(column, np.int64, len(column))
            except OverflowError:
                raise Unsupported("an int past 64 bits") from None
        elif kind == "DOUBLE":
            values = np.fromiter(column, np.float64, len(column))
            if np.any(np.signbit(values) & (values == 0)):
                raise Unsupported("-0.0")
        elif kind == "BOOLEAN":
            values = [v.truth for v in column]
        else:
            if not all(map(str.isascii, column)):
                for value in column:
                    try:
                        value.encode("utf-8")
                    except UnicodeEncodeError:
                        raise Unsupported("a string that is not Unicode text (a lone "
                                          "surrogate)") from None
            values = column
        arrays[f"c{i}"] = pa.array(values, type=arrow[kind])
    return tuple(found), pa.table(arrays)  # type: ignore[arg-type]

def _converter(types: Types) -> Callable[[Any, Any], Any] | None:
    """How DuckDB's values of these column types become the engine's (None: as they are;
    runtime/arrowrows.py)."""
    plain = all(kind in ("BIGINT", "VARCHAR") for kind in types)
    return None if plain else lambda _, value: internal(value)


def _literal(value: Any) -> tuple[str, str]:
    kind = _TYPES.get(value.__class__)
    if kind is None:
        raise Unsupported("a null" if value is None else "a list value")
    if kind == "BIGINT" and not -(2**63) <= value < 2**63:
        raise Unsupported("an int past 64 bits")
    if kind == "DOUBLE" and not value and math.copysign(1, value) < 0:
        raise Unsupported("-0.0")
    if kind == "BIGINT":
        return f"CAST({value} AS BIGINT)", kind
    if kind == "DOUBLE":
        text = repr(float(value)) if math.isfinite(value) else (
            "'inf'" if value > 0 else "'-inf'")
        return f"CAST({text} AS DOUBLE)", kind
    if kind == "BOOLEAN":
        return ("TRUE" if value else "FALSE"), kind
    if "\x00" in value:
        raise Unsupported("a string holding NUL")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise Unsupported("a string that is not Unicode text (a lone surrogate)") from None
    return "'" + value.replace("'", "''") + "'", kind


# -- plans as SQL ------------------------------------------------------------------------------

class _Empty(Exception):
    """A plan reads a relation that holds no rows: it has no output."""


class Translator:
    """A plan as one SQL ``SELECT DISTINCT`` over the stratum's tables: ``tables`` maps a
    relation to its table, ``types`` to its column types (None: no rows)."""

    def __init__(self, tables: Mapping[str, str], types: Mapping[str, Types | None],
                 arity: Mapping[str, int] | None = None) -> None:
        self.tables = tables
        self.types = types
        self.arity = arity or {}
        self.checking = False  # see ``check``
        self.seed: Types | None = None

    def select(self, plan: p.Plan, driver: str | None = None, distinct: bool = True,
               ) -> tuple[str, Types] | None:
        """The SQL giving ``plan``'s output rows (without duplicates, unless not
        ``distinct``), and their types, with ``driver`` the table of its seed rows (a
        Scan's; the relation's own table by default); None when it has none (it reads a
        relation without rows)."""
        try:
            return self._select(plan, driver, distinct)
        except _Empty:
            return None

    def check(self, plan: p.Plan, seed: Types | None = None) -> None:
        """Unsupported when the local backend could fail on ``plan`` with these types (a
        comparison, or arithmetic, of values of two types), wherever its bindings come
        from: a relation without rows has columns of no type yet, which fail nothing.
        ``seed``: the types of the columns a Seed driver takes its values from."""
        self.checking, self.seed = True, seed
        try:
            self._select(plan, "")
        finally:
            self.checking = False

    def _select(self, plan: p.Plan, driver: str | None,
                distinct: bool = True) -> tuple[str, Types]:
        names: dict[str, tuple[str, str]] = {}  # variable -> SQL, type
        where: list[str] = []
        counter = itertools.count()
        match plan.driver:
            case p.Seed(vars=seeded, columns=columns) if self.checking:
                sources = []
                names.update((var, ("s", self.seed[column] if self.seed else None))
                             for var, column in zip(seeded, columns, strict=True))
            case p.Scan(relation=relation, binds=binds, checks=checks):
                types = self._types(relation)
                sources = [f"{driver or self.tables[relation]} AS a0"]
                next(counter)
                names.update((var, (f"a0.c{column}", types[column])) for column, var in binds)
                where += [self._equal((f"a0.c{column}", types[column]), self.expr(expr, names))
                          for column, expr in checks]
            case p.Unit():
                sources = ["(SELECT 1) AS a0"]
                next(counter)
            case _:
                raise Unsupported("a plan seeded with bindings")
        for op in plan.operators:
            match op:
                case p.Join(relation=relation, key=key, key_terms=terms, binds=binds,
                            checks=checks):
                    alias = f"a{next(counter)}"
                    types = self._types(relation)
                    tests = [self._equal((f"{alias}.c{column}", types[column]),
                                         self.expr(term, names))
                             for column, term in zip(key, terms, strict=True)]
                    names.update((var, (f"{alias}.c{column}", types[column]))
                                 for column, var in binds)
                    tests += [self._equal((f"{alias}.c{column}", types[column]),
                                          self.expr(expr, names)) for column, expr in checks]
                    sources.append(f"JOIN {self.tables[relation]} AS {alias} ON "
                                   + (" AND ".join(tests) or "TRUE"))
                case p.AntiJoin(relation=relation, key=key, key_terms=terms):
                    if self.types.get(relation) is None and not self.checking:
                        continue  # nothing to exclude
                    alias = f"a{next(counter)}"
                    types = self._types(relation)
                    tests = [self._equal((f"{alias}.c{column}", types[column]),
                                         self.expr(term, names))
                             for column, term in zip(key, terms, strict=True)]
                    where.append(f"NOT EXISTS (SELECT 1 FROM {self.tables[relation]} AS "
                                 f"{alias} WHERE {' AND '.join(tests) or 'TRUE'})")
                case p.Filter(op=cmp, left=left, right=right):
                    where.append(self._compare(cmp, self.expr(left, names),
                                               self.expr(right, names)))
                case p.Let(var=var, expr=expr):
                    names[var] = self.expr(expr, names)
        outputs = [self.expr(term, names) for term in plan.project.terms]
        text = (("SELECT DISTINCT " if distinct else "SELECT ")
                + ", ".join(f"{sql} AS c{i}" for i, (sql, _) in enumerate(outputs))
                + " FROM " + " ".join(sources))
        if where:
            text += " WHERE " + " AND ".join(where)
        return text, tuple(kind for _, kind in outputs)

    def _types(self, relation: str) -> Types:
        types = self.types.get(relation)
        if types is None and self.checking:
            return (None,) * self.arity[relation]  # type: ignore[return-value]
        if types is None:
            raise _Empty
        return types

    def expr(self, expr: p.Expr, names: Mapping[str, tuple[str, str]]) -> tuple[str, str]:
        match expr:
            case p.Var(name=name):
                return names[name]
            case p.Const(value=value):
                return _literal(value)
            case p.Negate(operand=operand):
                text, kind = self.expr(operand, names)
                if kind not in ("BIGINT", None):
                    raise Unsupported(f"negating a {_NAMES[kind]} value")
                return f"(- {text})", kind
            case p.Arith(op=op, left=left, right=right):
                (a, ta), (b, tb) = self.expr(left, names), self.expr(right, names)
                if ta is None or tb is None:  # (no rows: nothing to fail on)
                    return f"({a} {op} {b})", ta or tb
                if ta == tb == "VARCHAR" and op == "+":
                    return f"({a} || {b})", ta
                if ta == tb == "BIGINT" and op in ("+", "-", "*"):
                    return f"({a} {op} {b})", ta  # DuckDB fails on overflow
                raise Unsupported(f"{op} of {_NAMES[ta]} and {_NAMES[tb]} values")
        raise Unsupported("an expression DuckDB does not evaluate yet")

    @staticmethod
    def _equal(left: tuple[str, str], right: tuple[str, str]) -> str:
        return Translator._compare("==", left, right)

    @staticmethod
    def _compare(op: str, left: tuple[str, str], right: tuple[str, str]) -> str:
        (a, ta), (b, tb) = left, right
        if ta is None or tb is None:  # (no rows: nothing to compare)
            return "TRUE"
        if ta != tb:  # values of two types are never equal; their order is not SQL's
            if op in ("==", "!="):
                return "FALSE" if op == "==" else "TRUE"
            raise Unsupported(f"comparing {_NAMES[ta]} with {_NAMES[tb]} values")
        sql = {"==": "=", "!=": "<>"}.get(op, op)
        return f"({a} {sql} {b})"


# -- strata ------------------------------------------------------------------------------------

@dataclass(slots=True)
class _Resident:
    """What a stratum left in DuckDB after its last evaluation: a table per relation it
    reads or writes, as the store held it then, and the tables' column types."""

    tables: dict[str, str]
    types: dict[str, Types | None]


class VectorStrata:
    """Evaluates strata of view rules in DuckDB, for the fixpoint (its ``Offload``); see the
    module's docstring. Aggregate rules run locally (``groups`` gives None).

    ``threshold`` None runs every stratum it can in DuckDB (``--backend vector``); a number
    (``--backend auto``) runs a stratum there in a step when the tables it reads and writes
    hold that many rows and its rounds are large (see ``_wanted``), moving it in the middle
    of the step when a local round gets there (``moved``: what ran there last, at what
    size; ``transitions``: every move there and back). Then DuckDB missing is not an
    error: ``unavailable`` says why. With a threshold, a head that could be held here
    (``holdable``) and comes out of an evaluation with ``hold`` rows or more stays here,
    rather than filling Python's memory (``--backend vector`` holds them at any size)."""

    name = "DuckDB"

    def __init__(self, plan: p.ProgramPlan, relations: Mapping[str, Any],
                 threshold: int | None = None, hold: int | None = None) -> None:
        self.plan = plan
        self.threshold = threshold
        self.hold = hold
        self.moved: dict[str, int] = {}
        self.transitions: list[tuple[str, int, bool]] = []
        self.unavailable: str | None = None
        self._tables: dict[int, list[str]] = {}  # stratum -> the tables its size counts
        self._arrived: set[str] = set()  # what moved to DuckDB in this step
        self.arity = {name: rel.arity for name, rel in relations.items()}
        self.local: dict[int, str] = {}  # stratum -> why it last ran locally
        self.local_rules: dict[int, str] = {}  # (aggregate rules: always local)
        self.resident: dict[int, _Resident] = {}
        self.incremental = 0  # evaluations that continued from resident tables
        self.recursive = 0  # evaluations afresh as one recursive query
        self._checked: set[tuple] = set()  # (stratum, types) whose plans fail on nothing
        # relations held in DuckDB (their rows never cross to Python; the store released
        # them) -> how many rows, and their tables; see ``holdable``
        self.held: dict[str, int] = {}
        self._holding: dict[str, str] = {}
        self._started: dict[str, str | None] = {}  # held heads' tables as the step started
        self._stale: set[str] = set()  # tables a rollback may still want: dropped next step
        self._holdable: dict[str, int] | None = None
        self._kept_local: set[str] = set()  # relations Python reads (listeners)
        self._reasons: dict[int, str] | None = None  # see ``never``
        self._con: Any = None
        self._names = itertools.count()

    @property
    def never(self) -> dict[int, str]:
        """Why strata never run in DuckDB, whatever the data (worked out when first asked)."""
        if self._reasons is None:
            with recursion_room():  # (expressions nest as deep as programs write them)
                self._reasons = {stratum.index: reason for stratum in self.plan.strata
                                 if (reason := static_reason(self.plan, stratum.index))}
        return self._reasons

    @property
    def con(self) -> Any:
        if self._con is None:
            self._con = connect()
        return self._con

    def start(self) -> None:
        """Open the database now (raises VectorUnavailable with what to install)."""
        _ = self.con

    # -- the Offload protocol (runtime/seminaive.py) -------------------------------------------

    def watches(self, rules: list[p.RulePlan]) -> bool:
        """Whether a stratum running locally may move to DuckDB in the middle of a step:
        with a threshold, when it can run there."""
        return (self.threshold is not None and self.unavailable is None
                and rules[0].stratum not in self.never)

    def moves(self, rules: list[p.RulePlan], store: Any, grown: int) -> bool:
        """Whether that stratum moves now, after a local round that added ``grown`` rows."""
        return self._wanted(rules, store, grown)

    def _wanted(self, rules: list[p.RulePlan], store: Any, work: int) -> bool:
        """Whether a stratum goes to DuckDB now: always without a threshold; with one, when
        its tables hold that many rows and ``work`` (the rows that seed its evaluation, or
        that its last local round added) is at least a sixteenth of it: a round in DuckDB
        costs a few milliseconds whatever its size, so small rounds stay in Python. Once a
        stratum moved in a step, until the step ends."""
        threshold = self.threshold
        if threshold is None:
            return True
        stratum = rules[0].stratum
        label = f"stratum {stratum}"
        if label in self._arrived:
            return True
        if self.unavailable is not None:
            return False
        names = self._tables.get(stratum)  # type: ignore[arg-type]
        if names is None:
            names = self._tables[stratum] = sorted({rule.head for rule in rules}.union(  # type: ignore[index]
                *(p.plan_relations(each) for rule in rules for _, each in rule.plans())))
        held = self.held
        size = sum(held[name] if name in held else len(store.rows(name)) for name in names)
        # (a stratum whose head is held here stays: its rows are not in the store)
        wanted = (size >= threshold and work >= threshold // 16) \
            or not held.keys().isdisjoint(names)
        if wanted:
            try:
                self.start()
            except VectorUnavailable as error:
                self.unavailable = str(error)
                return False
            self._arrived.add(label)
            if label not in self.moved:
                self.transitions.append((label, size, True))
            self.moved[label] = size
        elif label in self.moved:
            del self.moved[label]
            self.transitions.append((label, size, False))
        return wanted

    def begin_step(self) -> None:
        if self._arrived:
            self._arrived = set()
        if self._started:
            self._started = {}
        if self._stale:  # (the last step stands, or was undone: what it left goes now)
            used = set(self._holding.values()).union(
                *(resident.tables.values() for resident in self.resident.values()))
            self._drop(self._stale - used)
            self._stale = set()

    # -- relations held in DuckDB --------------------------------------------------------------

    @property
    def holdable(self) -> dict[str, int]:
        """The relations that may live only in DuckDB, each with the stratum deriving it: a
        head that only its own stratum reads, which Spark could hold too (persistent, no
        keys or soft state, derived only by view rules of a stratum DuckDB may run, which
        reads no events); not those a listener reads. With ``--backend vector`` (no
        threshold) they are held from their first evaluation; with a threshold, once one
        gives them ``hold`` rows."""
        if self._holdable is None:
            self._holdable = held_here(self.plan, self.never)
        return {name: stratum for name, stratum in self._holdable.items()
                if name not in self._kept_local}

    def keep_local(self, relation: str, store: Any) -> None:
        """Python reads ``relation`` from now on (a listener): it is never held, and if it
        is, its rows come back to the store (journaled: a listener registered in a step
        attempt that is rolled back goes with it)."""
        if relation not in self._kept_local:
            self._kept_local.add(relation)
            store.on_rollback(self._kept_local.discard, relation)
        if relation in self.held:
            self.unhold(relation, store)

    def unhold(self, relation: str, store: Any, undo: bool = False) -> None:
        """Put a held relation's rows back in the store (journaled; not a change of the
        step): as they are, or with ``undo``, as they were before this step's evaluation
        (which the fixpoint did not take)."""
        table = self._started.get(relation, self._holding[relation]) if undo else \
            self._holding[relation]
        if table is not None:  # (None: it was not held then, and the store has its rows)
            store.take_back(relation, self._fetch(table, self._types(table)))
        self._stale.add(self._holding[relation])
        self._set_holding(relation, None, None, store)
        # its stratum starts afresh: its table is kept as it is, for a rollback
        self._discard(self._holdable[relation])  # type: ignore[index]

    def collect(self, relation: str) -> set[Row]:
        """A held relation's rows, in Python."""
        table = self._holding[relation]
        return self._fetch(table, self._types(table))

    BATCH = 1_000_000  # rows of a held relation that come to Python at once

    def batches(self, relation: str) -> Iterator[Any]:
        """A held relation's rows as Arrow tables of at most ``BATCH`` rows, sorted as
        ``Engine.rows`` sorts them (one type a column)."""
        import pyarrow as pa

        query = self.con.sql(f"SELECT * FROM {self._holding[relation]} ORDER BY ALL")
        reader = getattr(query, "to_arrow_reader", None)  # (DuckDB 2; 1.x: the other)
        for batch in (reader or query.fetch_arrow_reader)(self.BATCH):
            yield pa.Table.from_batches([batch])

    def _set_holding(self, relation: str, table: str | None, count: int | None,
                     store: Any) -> None:
        """Journaled: ``relation`` is held in ``table`` with ``count`` rows (None: not)."""
        before = (self._holding.get(relation), self.held.get(relation))
        self._restore_holding((relation, (table, count)))
        store.on_rollback(self._restore_holding, (relation, before))

    def _restore_holding(self, args: tuple[str, tuple[str | None, int | None]]) -> None:
        relation, (table, count) = args
        if table is None:
            self._holding.pop(relation, None)
            self.held.pop(relation, None)
        else:
            self._holding[relation] = table
            self.held[relation] = count  # type: ignore[assignment]

    def _types(self, table: str) -> Types:
        found = self.con.execute(
            "SELECT data_type FROM duckdb_columns() WHERE table_name = ? ORDER BY "
            "column_index", [table]).fetchall()
        return tuple(kind for (kind,) in found)

    def changed(self, relations: Iterable[str]) -> bool:
        return False

    def groups(self, rule: p.RulePlan, store: Any) -> None:
        return None

    def monotone(self, rules: list[p.RulePlan], store: Any, max_rounds: int,
                 plus: Mapping[str, set[Row]], minus: Mapping[str, set[Row]],
                 cap: int) -> None:
        return None  # (see ``never``)

    def evaluate(self, rules: list[p.RulePlan], store: Any, max_rounds: int,
                 plus: Mapping[str, set[Row]], minus: Mapping[str, set[Row]],
                 cap: int) -> dict[str, tuple[set[Row], set[Row]] | Held | Filled] | None:
        """What the views' evaluation changes, given the step's changes so far: each
        head's rows to add and rows no longer derived; or None: the stratum runs locally
        (see ``local``), which also happens past ``max_rounds`` rounds or ``cap`` new rows
        (the local backend reports it). Raises VectorUnavailable without DuckDB (only
        without a threshold: with one, the stratum runs locally)."""
        stratum = rules[0].stratum
        assert stratum is not None  # deferred rules run locally
        if self.threshold is not None and (stratum in self.never or not self._wanted(
                rules, store, sum(len(rows) for rows in plus.values()))):
            self.forget(stratum, store)  # (with a threshold, reasons of the moved only)
            return None
        return self._attempt(stratum, store, lambda: self._evaluate(
            stratum, rules, store, max_rounds, plus, minus, cap))

    def continues(self, rules: list[p.RulePlan], store: Any, max_rounds: int,
                  delta: Mapping[str, set[Row]], cap: int,
                  ) -> dict[str, tuple[set[Row], set[Row]] | Held | Filled] | None:
        """After ``moves`` said yes in the middle of a step: the rows the views derive
        beyond the store's, from its tables as they are, the local rounds having derived
        all but what ``delta`` (their last round's new rows) derives; None: the stratum
        starts over (see ``evaluate``)."""
        stratum = rules[0].stratum
        assert stratum is not None
        if f"stratum {stratum}" not in self._arrived:
            return None
        return self._attempt(stratum, store, lambda: self._evaluate(
            stratum, rules, store, max_rounds, {}, {}, cap, delta))

    def _attempt(self, stratum: int, store: Any,
                 work: Callable[[], dict[str, tuple[set[Row], set[Row]] | Held | Filled]],
                 ) -> dict[str, tuple[set[Row], set[Row]] | Held | Filled] | None:
        """``work()``, or None when the stratum runs locally: its reason in ``local``."""
        reason = self.never.get(stratum)
        if reason is None:
            self.start()
            import duckdb

            try:
                with recursion_room():
                    found = work()
            except Unsupported as why:
                reason = str(why)
            except duckdb.Error as error:
                reason = f"DuckDB failed ({type(error).__name__}: {_first_line(error)})"
        if reason is not None:
            self.local[stratum] = reason
            self.forget(stratum, store)
            return None
        self.local.pop(stratum, None)
        return found

    def forget(self, stratum: int, store: Any) -> None:
        """The stratum's result was not taken, or it ran locally: afresh next time. Its
        held heads come back to the store as they were when the step started."""
        for name, writer in self.holdable.items():
            if writer == stratum and name in self.held:
                self.unhold(name, store, undo=True)
        self._discard(stratum)

    def _discard(self, stratum: int) -> None:
        resident = self.resident.pop(stratum, None)
        if resident is not None:  # (not a held relation's table: a rollback may want it)
            self._drop(set(resident.tables.values()) - set(self._holding.values())
                       - self._stale)

    # -- evaluation --------------------------------------------------------------------------

    def _evaluate(self, stratum: int, rules: list[p.RulePlan], store: Any, max_rounds: int,
                  plus: Mapping[str, set[Row]], minus: Mapping[str, set[Row]],
                  cap: int, seeds: Mapping[str, set[Row]] | None = None,
                  ) -> dict[str, tuple[set[Row], set[Row]] | Held | Filled]:
        """From the resident tables and the step's new rows (incremental), or afresh from
        the store's tables and the heads' asserted rows, or, with ``seeds``, continuing
        from the store's tables with ``seeds`` (rows of them) as the new rows."""
        heads = sorted({rule.head for rule in rules})
        reads = set().union(*(p.plan_relations(each) for rule in rules for _, each in rule.plans()))
        names = sorted(reads - set(heads))
        negated = {t.relation for rule in rules for t in rule.triggers if t.negated}
        before = self.resident.pop(stratum, None)
        # the tables are changed in place: a rollback of the step drops them (afresh then)
        store.on_rollback(self._discard, stratum)
        incremental = seeds is None and before is not None and not any(
            minus.get(name) for name in (*names, *heads)) and not any(
            plus.get(name) for name in negated)
        if before is not None and not incremental:
            self._drop(set(before.tables.values()) - set(self._holding.values()))
        # what a failure leaves behind is dropped with it (``forget``)
        resident = self.resident[stratum] = before if incremental else _Resident({}, {})
        tables, types = resident.tables, resident.types  # type: ignore[union-attr]
        holdable = self.holdable
        # (rows staying here: with a threshold, only those held already, before the
        # evaluation; see ``_big`` for the others)
        hold = [head for head in heads if head in holdable
                and (self.threshold is None or head in self.held)]
        delta: dict[str, str] = {}  # relation -> the table of its new rows this round
        try:
            if incremental:
                for head in hold:  # a held table is never changed in place (rollbacks)
                    if tables[head] == self._holding.get(head) or tables[head] in self._stale:
                        tables[head] = self._copy(tables[head])
                for name in (*names, *heads):
                    if plus.get(name):
                        delta[name] = self._new_rows(name, plus[name], tables, types)
            else:
                if seeds is None:  # afresh: the rows derived again that the heads held
                    # before are not new (a deletion from a relation larger than the
                    # step's tuple limit is not refused); the fixpoint counts what is
                    cap += sum(self.held[head] if head in self.held else
                               len(store.rows(head)) - len(store.asserted(head))
                               for head in heads)
                for name in names:
                    self._load(name, store.rows(name), tables, types)
                for head in heads:
                    self._load(head, store.asserted(head) if seeds is None
                               else store.rows(head), tables, types)
                for name, rows in (seeds or {}).items():
                    if rows:
                        kinds, arrow = columns(rows, self.arity[name], types[name])
                        delta[name] = self._create(kinds)  # type: ignore[arg-type]
                        self._insert(delta[name], arrow)
            translate = Translator(tables, types, self.arity)
            self._check(stratum, rules, translate)
            queries: dict[str, list[tuple[str, Types]]] = {head: [] for head in heads}
            one = False  # whether one recursive query did it all
            if incremental or seeds is not None:
                self._triggered(rules, delta, translate, queries)
            elif self._recursive(rules, heads, translate, max_rounds, cap):
                one = True
            else:
                for rule in rules:
                    if rule.start is not None:
                        self._add(queries, rule.head, translate.select(rule.start))
                    first = next((t for t in rule.triggers if not t.negated), None)
                    if first is not None:  # its plan reads every other atom in full
                        self._add(queries, rule.head, translate.select(first.insert))
            # a head whose rows come back with the store's indexes on them, built from
            # DuckDB's columns, and born as the rounds derived them: with auto, whose
            # small steps run in Python (decision 61); evaluated afresh from no rows, or
            # continuing from the local rounds
            filled = [head for head in heads if head not in hold and store.index_columns(head)
                      and (seeds is not None or not store.rows(head))] \
                if len(heads) == 1 and not incremental and self.threshold is not None else []
            # heads that may be held from this evaluation on (with a threshold): their new
            # rows stay a table until ``_big`` says whether they come to Python
            tabled = [head for head in heads if head in holdable and head not in hold
                      and head not in filled] \
                if self.threshold is not None and (incremental or seeds is not None) else []
            gained = self._rounds(heads, rules, queries, delta, translate, max_rounds, cap,
                                  incremental or seeds is not None, filled, tabled)
        finally:
            self._drop(delta.values())
        self.incremental += incremental
        changes: dict[str, tuple[set[Row], set[Row]] | Held | Filled] = {}
        for head in heads:
            if head not in hold and head in holdable and self._big(head, tables[head], store,
                                                                   incremental):
                if head in filled or head in tabled:  # (rows not wanted in Python now)
                    table = gained[head] if isinstance(gained[head], str) else None
                    gained[head] = self._count(table) if table else 0
                    if table:
                        self._drop([table])
                hold.append(head)
            elif head in tabled:  # (not held: its new rows come to Python)
                table = gained[head]
                gained[head] = self._fetch(table, types[head]) if table else set()
                if table:
                    self._drop([table])
            if head in hold:
                changes[head] = self._held(head, tables[head], gained[head], incremental,
                                           store, seeds is not None)
                continue
            stored = store.rows(head)
            if head in filled:
                changes[head] = self._filled(tables[head] if one else gained[head], types[head],
                                             store.index_columns(head), not one)
                continue
            if incremental or seeds is not None:  # what is new
                changes[head] = (gained[head], set())  # type: ignore[assignment]
                continue
            rows = self._fetch(tables[head], types[head])  # derived and asserted
            changes[head] = (rows - stored, stored - rows) if stored else (rows, set())
        return changes

    def _big(self, head: str, table: str | None, store: Any, incremental: bool) -> bool:
        """With a threshold, whether ``head``'s rows in ``table`` (the evaluation's result,
        the store's rows included when ``incremental``) reach ``hold``: too many to bring
        back to Python's store, where they would fill a quarter of its memory."""
        if self.hold is None or table is None:
            return False
        if incremental and len(store.rows(head)) >= self.hold:
            return True
        return self._count(table) >= self.hold

    def _filled(self, table: str | None, types: Types | None,
                indexes: list[tuple[int, ...]], born: bool,
                ) -> Filled | tuple[set[Row], set[Row]]:
        """A head's new rows in ``table`` (with ``born``: the rounds' table of them, each
        with its round, which goes after), with the store's indexes on them."""
        if table is None or types is None:  # (none)
            return set(), set()
        try:
            arrow = self.con.sql(f"SELECT * FROM {table}").to_arrow_table()
        finally:
            if born:
                self._drop([table])
        rounds = None
        if born:
            rounds = arrow.column(arrow.num_columns - 1).to_numpy()
            arrow = arrow.remove_column(arrow.num_columns - 1)
        generations, built = indexed_rows(arrow, _converter(types), indexes, rounds)
        if built is None or not generations:  # (a row twice: not from these tables)
            return set().union(*generations), set()
        return Filled(generations, built, born)

    def _check(self, stratum: int, rules: list[p.RulePlan], translate: Translator) -> None:
        """Unsupported when a plan the local backend could run in this step could fail on
        values of these types (the local backend then reports it, as E301): DuckDB runs
        fewer plans, and would miss it. Once for each set of types."""
        types = translate.types
        key = (stratum, tuple(sorted(types.items())))
        if key in self._checked:
            return
        for rule in rules:
            for _, plan in rule.plans():
                translate.check(plan, types.get(rule.head))
        self._checked.add(key)

    def _recursive(self, rules: list[p.RulePlan], heads: list[str], translate: Translator,
                   max_rounds: int, cap: int) -> bool:
        """Evaluate the stratum afresh as one recursive query of DuckDB's (``WITH
        RECURSIVE ... UNION``: semi-naive over one head, its seen rows kept in one hash
        table, several times faster than rounds of anti-joins), when it is one head with
        one linear rule whose recursive plan makes no new values (so that it ends, as the
        rounds would: every row it can derive is made of values already there); False
        when it is not, having done nothing. It cannot count its rounds: only with the
        default round limit (docs/vector.md says what that leaves out)."""
        if len(heads) != 1 or max_rounds < MAX_ROUNDS:  # (it cannot count its rounds)
            return False
        (head,) = heads
        recursive = [(rule, trigger) for rule in rules for trigger in rule.triggers
                     if trigger.relation == head]
        if len(recursive) != 1:
            return False
        rule, trigger = recursive[0]
        plan = trigger.insert
        if trigger.negated or sum(t.relation == head for t in rule.triggers) != 1 or any(
                isinstance(op, p.Let) for op in plan.operators) or not all(
                isinstance(term, (p.Var, p.Const)) for term in plan.project.terms):
            return False
        base = []
        for each in rules:
            if each.start is not None:
                base.append(translate.select(each.start))
            first = next((t for t in each.triggers if not t.negated), None)
            if each is not rule and first is not None:
                base.append(translate.select(first.insert))
        tables, types = translate.tables, translate.types
        if types[head] is not None:  # its asserted rows
            base.append((f"SELECT * FROM {tables[head]}", types[head]))
        found = [query for query in base if query is not None]
        if not found:
            return False
        kinds = found[0][1]
        if any(other != kinds for _, other in found):
            return False  # (the rounds say which types clash)
        asserted = types[head] is not None
        types[head] = kinds  # (the recursive plan's driver is the query's own rows)
        step = translate.select(plan, "r", distinct=False)  # (UNION keeps rows once)
        if step is None or step[1] != kinds:
            types[head] = kinds if asserted else None
            return False
        names = ", ".join(f"c{i}" for i in range(len(kinds)))
        anchor = " UNION ALL ".join(f"({query})" for query, _ in found)
        table = self._fresh()
        ((count,),) = self.con.execute(
            f"CREATE TEMP TABLE {table} AS WITH RECURSIVE r({names}) AS (SELECT * FROM "
            f"({anchor}) UNION {step[0]}) SELECT * FROM r").fetchall()
        before = tables[head]
        tables[head] = table
        self._drop([before])
        self.recursive += 1
        if count > cap:
            raise Unsupported("more rows than a step may derive (the local backend reports "
                              "it)")
        return True

    def _held(self, head: str, table: str, gained: set[Row] | int, incremental: bool,
              store: Any, grown: bool = False) -> Held:
        """``head`` is held in ``table`` now (journaled): how many rows it gained and
        lost, from the rows it held, or the store did, before (with ``grown``, ``table``
        holds those and more: an evaluation continuing from the store's rows)."""
        old = self._holding.get(head)
        count = self._count(table)
        if old is not None:
            before = self.held[head]  # (its count, kept with it)
        else:  # the store's rows until now (in a table only where they are compared)
            before = len(store.rows(head))
            if before and not (incremental or grown):
                kinds, arrow = columns(store.rows(head), self.arity[head])
                old = self._create(kinds)  # type: ignore[arg-type]
                self._insert(old, arrow)
        if incremental:  # (rows when it was not held as the evaluation started)
            added, removed = gained if isinstance(gained, int) else len(gained), 0
        elif grown:
            added, removed = count - before, 0
        elif not (count and before) or self._types(table) != self._types(old):  # type: ignore[arg-type]
            added, removed = count, before  # (values of two types are never equal)
        else:
            added, removed = (self._count(f"(SELECT * FROM {a} EXCEPT SELECT * FROM {b})")
                              for a, b in ((table, old), (old, table)))
        self._started.setdefault(head, old if head in self.held else None)
        if old is not None:
            self._stale.add(old)
        self._set_holding(head, table, count, store)
        return Held(added, removed)  # type: ignore[arg-type]

    def _count(self, table: str) -> int:
        """How many rows ``table`` (or a parenthesized query) holds."""
        return self.con.execute(f"SELECT count(*) FROM {table}").fetchall()[0][0]

    def _copy(self, table: str) -> str:
        copy = self._fresh()
        self.con.execute(f"CREATE TEMP TABLE {copy} AS SELECT * FROM {table}")
        return copy

    def _fetch(self, table: str, types: Types | None) -> set[Row]:
        if types is None:
            return set()
        return shared_rows(self.con.sql(f"SELECT * FROM {table}").to_arrow_table(),
                           _converter(types))

    def _rounds(self, heads: list[str], rules: list[p.RulePlan],
                queries: dict[str, list[tuple[str, Types]]], delta: dict[str, str],
                translate: Translator, max_rounds: int, cap: int, gain: bool,
                born: Iterable[str] = (), tabled: Iterable[str] = (),
                ) -> dict[str, Any]:
        """Semi-naive rounds from ``queries`` (reading ``delta``, the tables of new rows)
        until nothing is new: with ``gain``, each head's new rows (how many, for a head
        held here; a table of them, for a head in ``tabled``); for a head in ``born``, a
        table of its new rows, each with the round that derived it in a last column (None:
        no rows; the caller drops the tables). The tables of new rows are dropped as the
        rounds go (``delta`` holds those left)."""
        tables, types = translate.tables, translate.types
        gained: dict[str, str] = {}  # head -> a table of every row it gained
        born = set(born)
        tabled = set(tabled)
        counts = dict.fromkeys(heads, 0)
        count = 0
        kept = False
        try:
            for turn in range(max_rounds + 1):  # the last finds nothing new
                used = dict(delta)  # the tables the queries read: dropped once run
                delta.clear()
                try:
                    news = {head: self._round(head, found, tables, types)
                            for head, found in queries.items() if found}
                    for head, (table, new) in news.items():  # (no query saw another's)
                        if new:
                            self.con.execute(f"INSERT INTO {tables[head]} SELECT * FROM {table}")
                    for head, (table, new) in news.items():
                        if new:
                            delta[head] = table
                            count += new
                            counts[head] += new
                            tagged = f", {turn} AS g" if head in born else ""
                            if (gain or head in born) and head in gained:
                                self.con.execute(f"INSERT INTO {gained[head]} SELECT *"
                                                 f"{tagged} FROM {table}")
                            elif (gain or head in born) and head not in self._holding:
                                gained[head] = self._fresh()
                                self.con.execute(f"CREATE TEMP TABLE {gained[head]} AS "
                                                 f"SELECT *{tagged} FROM {table}")
                        else:
                            self._drop([table])
                finally:
                    self._drop(used.values())
                if count > cap:
                    raise Unsupported("more rows than a step may derive (the local backend "
                                      "reports it)")
                if not delta:
                    break
                queries = {head: [] for head in heads}
                self._triggered(rules, delta, translate, queries)
            else:
                raise Unsupported("more rounds than a step may take (the local backend "
                                  "reports it)")
            found: dict[str, Any] = {}
            for head in heads:
                if head in self._holding:
                    found[head] = counts[head]
                elif head in born or head in tabled:
                    found[head] = gained.get(head)
                else:
                    found[head] = self._fetch(gained[head], types[head]) if head in gained \
                        else set()
            kept = True
            return found
        finally:
            self._drop([table for head, table in gained.items()
                        if not (kept and (head in born or head in tabled))])

    def _triggered(self, rules: list[p.RulePlan], delta: Mapping[str, str],
                   translate: Translator, queries: dict[str, list[tuple[str, Types]]]) -> None:
        """The queries of the rules' triggers on the relations in ``delta`` (their new
        rows' tables)."""
        for rule in rules:
            for trigger in rule.triggers:
                if not trigger.negated and trigger.relation in delta:
                    self._add(queries, rule.head,
                              translate.select(trigger.insert, delta[trigger.relation]))

    @staticmethod
    def _add(queries: dict[str, list[tuple[str, Types]]], head: str,
             found: tuple[str, Types] | None) -> None:
        if found is not None:
            queries[head].append(found)

    def _round(self, head: str, queries: list[tuple[str, Types]], tables: dict[str, str],
               types: dict[str, Types | None]) -> tuple[str, int]:
        """The candidate rows of ``queries`` not in ``head`` yet: a table holding them, and
        how many (the caller adds them to the head's table)."""
        con = self.con
        kinds = queries[0][1]
        known = types.get(head)
        for _, other in [*queries[1:], *([("", known)] if known is not None else [])]:
            if other != kinds:  # SQL would cast one to the other
                raise Unsupported(f"a column of `{head}` holding " + " and ".join(sorted(
                    {_NAMES[a] for a, b in zip(kinds, other, strict=True) if a != b}
                    | {_NAMES[b] for a, b in zip(kinds, other, strict=True) if a != b}))
                    + " values")
        if known is None:  # its first rows: the table is typed now
            self._drop([tables[head]])
            tables[head] = self._create(kinds)
            types[head] = kinds
        table = tables[head]
        new = self._fresh()
        union = " UNION ALL ".join(f"({query})" for query, _ in queries)
        test = " AND ".join(f"t.c{i} = n.c{i}" for i in range(len(kinds)))
        distinct = "DISTINCT " if len(queries) > 1 else ""  # (each query's rows are)
        ((count,),) = con.execute(  # (DuckDB answers how many rows it wrote)
            f"CREATE TEMP TABLE {new} AS SELECT {distinct}n.* FROM ({union}) AS n "
            f"ANTI JOIN {table} AS t ON {test}").fetchall()
        return new, count

    def _create(self, kinds: Types) -> str:
        table = self._fresh()
        self.con.execute(f"CREATE TEMP TABLE {table} (" + ", ".join(
            f"c{i} {kind}" for i, kind in enumerate(kinds)) + ")")
        return table

    def _load(self, name: str, rows: Set[Row], tables: dict[str, str],
              types: dict[str, Types | None]) -> None:
        """A table holding ``rows`` for ``name`` (an untyped one for no rows: typed when
        rows come)."""
        found, arrow = columns(rows, self.arity[name])
        types[name] = found
        tables[name] = self._create(found or ("BIGINT",))
        if arrow is not None:
            self._insert(tables[name], arrow)

    def _new_rows(self, name: str, rows: set[Row], tables: dict[str, str],
                  types: dict[str, Types | None]) -> str:
        """Add ``rows`` to ``name``'s table (those it lacks): a table holding all of
        them."""
        known = types.get(name)
        found, arrow = columns(rows, self.arity[name], known)
        assert found is not None
        if known is None:
            self._drop([tables[name]])
            tables[name] = self._create(found)
            types[name] = found
        new = self._create(found)
        self._insert(new, arrow)
        test = " AND ".join(f"t.c{i} = n.c{i}" for i in range(len(found)))
        self.con.execute(f"INSERT INTO {tables[name]} SELECT n.* FROM {new} AS n ANTI JOIN "
                         f"{tables[name]} AS t ON {test}")
        return new

    def _insert(self, table: str, arrow: Any) -> None:
        view = self._fresh()
        self.con.register(view, arrow)
        try:
            self.con.execute(f"INSERT INTO {table} SELECT * FROM {view}")
        finally:
            self.con.unregister(view)

    def _fresh(self) -> str:
        return f"t{next(self._names)}"

    def _drop(self, tables: Iterable[str]) -> None:
        for table in tables:
            self.con.execute(f"DROP TABLE IF EXISTS {table}")


def _first_line(error: BaseException, limit: int = 160) -> str:
    line = (str(error).strip().splitlines() or [""])[0]
    return line if len(line) <= limit else line[:limit - 3] + "..."


def held_here(plan: p.ProgramPlan, never: Mapping[int, str]) -> dict[str, int]:
    """The relations ``--backend vector`` holds in DuckDB, each with the stratum deriving
    it: those Spark could hold (``holdable``) that no other stratum reads."""
    found, readers = holdable(plan, never)
    return {name: stratum for name, stratum in found.items()
            if stratum is not None and readers.get(name, set()) <= {stratum}}


def placement(plan: p.ProgramPlan, threshold: int = THRESHOLD,
              hold: int = HOLD) -> dict[int, list[str]]:
    """Where each stratum's views run with ``--backend vector`` (with auto: from
    ``threshold`` rows), as ``overlog explain`` says it: stratum -> lines, and which
    relations live only in DuckDB (with auto: from ``hold`` rows)."""
    notes: dict[int, list[str]] = {}
    never = {}
    for stratum in plan.strata:
        rules = [plan.rules[i] for i in stratum.rules]
        if any(not r.head_event and r.aggregation is None for r in rules):
            with recursion_room():
                reason = static_reason(plan, stratum.index)
            if reason is not None:
                never[stratum.index] = reason
            notes[stratum.index] = [
                f"views run on DuckDB with --backend vector (auto: at {threshold:,} rows)"
                if reason is None else f"views run locally with --backend vector ({reason})"]
    for name, writer in sorted(held_here(plan, never).items()):
        if name not in plan.watched:  # (`overlog run` prints it from a listener)
            notes[writer].append(f"{name} lives only in DuckDB with --backend vector (auto: "
                                 f"from {hold:,} rows), unless a listener reads it")
    return notes
