"""The Spark executor: strata of view rules, and aggregate rules, evaluated by Spark, from
the same plans.

A stratum runs here when its placement says so (``--backend spark``: every stratum that can);
its semi-naive loop runs in Spark, every relation it reads crossing once as Arrow: each round
joins the new rows of the stratum's relations (the delta) with the others, keeps only rows not
derived before (a set difference in Spark: only new rows come back), and grows each head's
table by them, cutting its lineage (a local checkpoint) every few rounds so that rounds stay
cheap. The fixpoint puts the new rows in its store.

Spark is an accelerator, never the reference: a stratum it cannot run as the local backend
would (a value Spark cannot hold with the same meaning, an expression without a Spark
equivalent, a failure inside Spark such as a division by zero) runs on the local backend,
which reports errors binding by binding; ``reason`` says why.

Types: each column of a relation is one Spark type (int -> long, float -> double, string,
boolean); a column mixing types, a list, an int past 64 bits, or an expression mixing types
keeps the stratum local. Equality is null-safe (`null == null` holds in Overlog).
"""

from __future__ import annotations

import itertools
import logging
import math
import os
import re
import shutil
import subprocess
import sys
import threading
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping, Set
from dataclasses import dataclass
from importlib import resources
from operator import itemgetter
from typing import TYPE_CHECKING, Any

from overlog import plan as p
from overlog.runtime import sparklist
from overlog.runtime.arrowrows import shared_rows
from overlog.runtime.backend import FrameInput, InputFailure

# with --backend auto, a stratum moves to Spark once the tables it reads and writes hold
# THRESHOLD rows (a quarter of the machine's memory as local rows)
from overlog.runtime.memory import THRESHOLD
from overlog.runtime.placement import holdable, stratum_views
from overlog.runtime.seminaive import Fixpoint, Held
from overlog.values import Bool, IntFloat, RingId, internal

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

Row = tuple
_LONG = (-(2**63), 2**63 - 1)
_UDF_NAMES = itertools.count(1)  # registered Python UDFs: unique in the process's session


class SparkUnavailable(RuntimeError):
    """Spark cannot start here: says what to install or fix."""


class Unsupported(Exception):
    """This stratum cannot run on Spark with Overlog's meaning (the reason is the message)."""


# -- the session ---------------------------------------------------------------------------

_session_lock = threading.Lock()
_sessions: dict[tuple, SparkSession] = {}


def session(master: str = "local[2]", conf: Mapping[str, str] | None = None) -> SparkSession:
    """The process's SparkSession for ``master`` (started on first use, then kept)."""
    key = (master, tuple(sorted((conf or {}).items())))
    with _session_lock:
        found = _sessions.get(key)
        if found is None:
            if _sessions:  # Spark runs one session a process
                (running, _), = _sessions
                raise SparkUnavailable(f"this process already runs Spark on {running} with "
                                       "other settings: one master and one set of settings "
                                       "a process")
            found = _sessions[key] = _start(master, conf or {})
        return found


# settings Overlog's meaning depends on: overflow is an error; string literals as written
_FIXED = {"spark.sql.ansi.enabled": "true", "spark.sql.parser.escapedStringLiterals": "false"}


def _start(master: str, conf: Mapping[str, str]) -> SparkSession:
    if master.startswith("sc://"):  # Spark Connect: a server's session, no JVM here
        from overlog.runtime import sparkconnect

        return sparkconnect.start(master, conf, _FIXED)
    try:
        import pyarrow  # noqa: F401
        from pyspark.sql import SparkSession
    except ImportError:
        raise SparkUnavailable("the Spark backend needs pyspark and pyarrow: "
                               "pip install 'overlog[spark]'") from None
    _check_java()
    for name in conf:
        if name in _FIXED:
            raise SparkUnavailable(f"{name} is set by overlog ({_FIXED[name]}): the meaning "
                                   "of programs depends on it")
    given = os.environ.get("PYSPARK_SUBMIT_ARGS")
    if given is None:  # Spark's own start-up chatter off
        logging_file = resources.files("overlog.runtime").joinpath("spark-log4j2.properties")
        os.environ["PYSPARK_SUBMIT_ARGS"] = (
            f'--driver-java-options "-Dlog4j2.configurationFile=file:{logging_file}" '
            "--conf spark.ui.showConsoleProgress=false pyspark-shell")
    builder = (SparkSession.builder.master(master).appName("overlog")
               .config("spark.sql.shuffle.partitions", "4")
               .config("spark.ui.enabled", "false")
               .config("spark.sql.execution.arrow.pyspark.enabled", "true")
               # checkpoints of past rounds and steps go once unreferenced: the JVM collects
               # garbage (and Spark drops their blocks) every minute, not every 30
               .config("spark.cleaner.periodicGC.interval", "1min"))
    for name, value in {**conf, **_FIXED}.items():
        builder = builder.config(name, value)
    # the workers' Python (for the aggregates of runtime/sparkudf.py): as the user chose it,
    # else this one (pyspark would take the first `python3` on the PATH)
    python = os.environ.get("PYSPARK_PYTHON")
    if python is None:
        os.environ["PYSPARK_PYTHON"] = conf.get("spark.pyspark.python", sys.executable)
    try:
        spark = builder.getOrCreate()
    except Exception as error:  # the JVM did not start, or the master is unreachable
        raise SparkUnavailable(f"Spark did not start ({master}): {error}") from error
    finally:
        if given is None:
            os.environ.pop("PYSPARK_SUBMIT_ARGS", None)
        if python is None:
            os.environ.pop("PYSPARK_PYTHON", None)
    spark.sparkContext.setLogLevel("ERROR")
    # a failure inside Spark is handled (the stratum runs locally): no report of it
    logging.getLogger("SQLQueryContextLogger").setLevel(logging.CRITICAL)
    return spark


def _check_java() -> None:
    java = shutil.which("java")
    if java is None:
        raise SparkUnavailable("the Spark backend needs Java 17 or later, and there is no "
                               "`java` on the PATH: install a JRE (Debian: apt install "
                               "openjdk-17-jre-headless), or run with --backend local")
    try:
        shown = subprocess.run([java, "-version"], capture_output=True, text=True,
                               timeout=30).stderr
    except (OSError, subprocess.SubprocessError) as error:
        raise SparkUnavailable(f"`java -version` failed: {error}") from None
    version = shown.split('"')[1] if '"' in shown else ""
    major = version.split(".")[0] if not version.startswith("1.") else version.split(".")[1]
    if not major.isdigit() or int(major) < 17:
        raise SparkUnavailable(f"the Spark backend needs Java 17 or later, found "
                               f"{version or shown.strip()!r}: install a newer JRE, or run "
                               "with --backend local")


_RAISED = re.compile(r"[\w.]*(Error|Exception): ")


def first_line(error: BaseException, limit: int = 160) -> str:
    """The first line of an error's message (Spark's run long), cut at ``limit``; for an
    error py4j passes on from the JVM, the Java exception's message; for one a Python UDF
    raised, what it raised."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    if len(lines) > 1 and lines[0].startswith("An error occurred while calling"):
        kind, colon, message = lines[1].lstrip(": ").partition(": ")
        lines = [message if colon and "." in kind and " " not in kind else lines[1]]
    if lines and lines[0].startswith("An exception was thrown from the Python worker"):
        raised = [line for line in lines if _RAISED.match(line)]  # the traceback's last
        lines = raised[-1:] or lines
    return (lines[0] if lines else type(error).__name__)[:limit]


# -- types ---------------------------------------------------------------------------------

_TYPES = {int: "bigint", float: "double", IntFloat: "double", str: "string", Bool: "boolean",
          tuple: "binary"}  # a list: its encoding (runtime/sparklist.py)


def column_types(rows: Iterable[Row], arity: int) -> list[str | None]:
    """The Spark type of each column of ``rows`` (None: only nulls, or no rows); raises
    Unsupported for a column mixing types or holding what Spark cannot hold as it is."""
    found: list[set[type]] = [set() for _ in range(arity)]
    for row in rows:
        for kinds, value in zip(found, row, strict=True):
            kinds.add(value.__class__)
            _check_value(value)
    types: list[str | None] = []
    for kinds in found:
        kinds.discard(type(None))
        names = {_TYPES[kind] for kind in kinds}
        if len(names) > 1:
            raise Unsupported(f"a column holding {' and '.join(sorted(names))} values")
        types.append(names.pop() if names else None)
    return types


def _check_value(value: Any) -> None:
    """Unsupported for a value Spark would not give back as it is."""
    kind = value.__class__
    if kind is int:
        if not _LONG[0] <= value <= _LONG[1]:
            raise Unsupported(f"an int past 64 bits ({value})")
    elif kind is RingId:
        raise Unsupported("a P2 identifier (its arithmetic wraps around the ring)")
    elif kind is str:
        if not value.isascii():
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                raise Unsupported("a string that is not Unicode text (a lone surrogate)") \
                    from None
    elif (kind is float or kind is IntFloat) and not value and math.copysign(1, value) < 0:
        raise Unsupported("-0.0 (Spark writes it 0.0)")
    elif kind is tuple:
        try:
            sparklist.encode(value)
        except ValueError as error:
            raise Unsupported(f"a list Spark cannot hold as it is ({error})") from None


def static_reason(rules: list[p.RulePlan], arity: Mapping[str, int],
                  user: Mapping[str, Callable] | None = None) -> str | None:
    """Why these rules can never run on Spark with the local meaning, whatever the data
    (None: they may). ``user``: the engine's user functions (they may shadow built-ins)."""
    user = user or {}
    for rule in rules:
        aggregation = rule.aggregation
        if aggregation is not None and aggregation.function not in (
                "count", "sum", "min", "max", "avg"):
            return f"{aggregation.function.partition(':')[0]}<> has no Spark equivalent yet"
        if aggregation is not None and aggregation.zero:
            return "a count over events (count 0 for an event that matches nothing)"
        if aggregation is not None and isinstance(aggregation.groups.driver, p.Unit):
            return "an aggregate over no atom"
        for _, plan in rule.plans():
            if isinstance(plan.driver, p.Seed) and plan is not rule.rederive and (
                    aggregation is None or plan is not aggregation.groups):
                return "a plan seeded with bindings"
            for relation in {rule.head, *p.plan_relations(plan)}:
                if arity[relation] == 0:
                    return f"`{relation}` has no fields"
            for expr in p.plan_exprs(plan):
                for call in p.expr_calls(expr):
                    if call.function in user:
                        if return_type(user[call.function]) is None:
                            return (f"{call.function}() has no return annotation Spark can "
                                    "use (int, float, str or bool)")
                    elif call.function not in SPARK_FUNCTIONS:
                        return f"{call.function}() has no Spark equivalent yet"
    return None


def return_type(fn: Callable) -> str | None:
    """The Spark type of a user function's results, from its return annotation: int,
    float, str or bool, each maybe with None (``int | None``); None for any other."""
    import types
    import typing

    try:
        hint = typing.get_type_hints(fn).get("return")
    except Exception:  # not a function, or an annotation that does not resolve
        return None
    union = typing.get_origin(hint) in (typing.Union, types.UnionType)
    kinds = set(typing.get_args(hint)) - {type(None)} if union else {hint}
    found = {int: "bigint", float: "double", str: "string", bool: "boolean"}
    return found.get(kinds.pop()) if len(kinds) == 1 else None


def stratum_reason(plan: p.ProgramPlan, index: int,
                   user: Mapping[str, Callable] | None = None) -> str | None:
    """Why a stratum's view rules (a recursive min/max: all its rules) never run on Spark
    (None: they may, or it has none)."""
    arity = {name: rel.arity for name, rel in plan.relations.items()}
    if plan.strata[index].monotone:
        rules = [plan.rules[i] for i in plan.strata[index].rules]
        for rule in rules:
            if plan.relations[rule.head].keyed:
                return f"`{rule.head}` has keys (in a recursive min/max)"
        return static_reason(rules, arity, user)
    views, reason = stratum_views(plan, index)
    if not views or reason is not None:
        return reason
    return static_reason(views, arity, user)


def placement(plan: p.ProgramPlan, threshold: int = THRESHOLD) -> dict[int, list[str]]:
    """Where each stratum runs, as ``overlog explain`` says it: stratum -> lines (``auto:
    at N rows``: once the tables the rules read and write hold N rows), and which relations
    may live only in Spark."""
    arity = {name: rel.arity for name, rel in plan.relations.items()}
    where = f"on Spark with --backend spark (auto: at {threshold:,} rows)"
    notes: dict[int, list[str]] = {}
    never: dict[int, str] = {}  # strata whose views never run on Spark
    for stratum in plan.strata:
        rules = [plan.rules[i] for i in stratum.rules]
        lines = []
        if stratum.monotone:
            reason = stratum_reason(plan, stratum.index)
            if reason is not None:
                never[stratum.index] = reason
            notes[stratum.index] = ["the recursive min/max runs " + (
                where if reason is None else f"locally ({reason})")]
            continue
        if any(not r.head_event and r.aggregation is None for r in rules):
            reason = stratum_reason(plan, stratum.index)
            if reason is not None:
                never[stratum.index] = reason
            lines.append("views run " + (where if reason is None else f"locally ({reason})"))
        for rule in rules:
            if rule.aggregation is not None and not rule.head_event:
                reason = static_reason([rule], arity)
                lines.append(f"{rule.label} runs " + (where if reason is None
                                                      else f"locally ({reason})"))
        notes[stratum.index] = lines or ["event rules run locally"]
    held, readers = holdable(plan, never)
    for name, writer in sorted(held.items()):
        if name in plan.watched:  # `overlog run` prints it from a listener
            continue
        if writer is not None:
            notes[writer].append(f"{name} lives only in Spark with --backend spark (auto: "
                                 f"from {threshold:,} rows), unless a listener reads it")
        else:  # said at the first stratum reading it
            notes[min(r for r in readers[name] if r is not None)].append(
                f"{name} lives only in Spark when loaded from a file or a Spark DataFrame "
                f"(auto: of {threshold:,} rows), unless a listener reads it")
    return notes


def _makes_list(expr: p.Expr) -> bool:
    """Whether ``expr`` makes a list (f_concat: of lists, seen in the data). Iterative:
    expressions nest 1,000 deep."""
    todo = [expr]
    while todo:
        match todo.pop():
            case p.MakeList():
                return True
            case p.Const(value=value) if value.__class__ is tuple:
                return True
            case p.Arith(left=left, right=right):
                todo += (left, right)
            case p.Negate(operand=operand):
                todo.append(operand)
            case p.Call(function=function, args=args):
                if function in ("f_cons", "f_append", "f_cdr"):
                    return True
                todo += args
    return False


# functions that fail on no value Spark gives them (their arguments still may)
_SAFE_CALLS = frozenset({"f_concat", "f_tostr", "f_now"})


def _raises(expr: p.Expr) -> bool:
    """Whether evaluating ``expr`` on Spark can fail (arithmetic: on null, by zero, to NaN;
    a function: on what it does not take)."""
    return p.may_fail(expr, _SAFE_CALLS)


# -- plans as DataFrame operations -------------------------------------------------------------

_NUMERIC = ("bigint", "double")


def _type(spark_type: str) -> str | None:
    return None if spark_type in ("void", "null") else spark_type


def _literal(value: Any) -> tuple[str, str | None]:
    """A value as Spark SQL, with its type."""
    if value is None:
        return "NULL", None
    _check_value(value)  # (first: a P2 identifier has no Spark type)
    kind = _TYPES[value.__class__]
    if kind == "binary":
        return f"X'{sparklist.encode(value).hex()}'", kind
    if kind == "bigint":
        return f"CAST({value} AS BIGINT)", kind
    if kind == "double":
        return f"CAST('{float(value)!r}' AS DOUBLE)", kind
    if kind == "boolean":
        return ("true" if value else "false"), kind
    text = "".join(c if c.isalnum() or c in " _-.,:;/@#" else f"\\u{ord(c):04x}"
                   if ord(c) < 0x10000 else c for c in value)
    return f"'{text}'", kind


# each DataFrame's column names and Spark types: asking the JVM costs an analysis of the
# whole plan (milliseconds), and a frame's schema never changes; frames built here are
# entered with the types the translation gave them
_SCHEMAS: weakref.WeakKeyDictionary[DataFrame, list[tuple[str, str]]] = \
    weakref.WeakKeyDictionary()


def _dtypes(frame: DataFrame) -> list[tuple[str, str]]:
    found = _SCHEMAS.get(frame)
    if found is None:
        found = _SCHEMAS[frame] = frame.dtypes
    return found


def _typed(frame: DataFrame, types: Iterable[tuple[str, str | None]]) -> DataFrame:
    """``frame``, whose columns have these types (None: void), as Spark gives them."""
    _SCHEMAS[frame] = [(name, kind or "void") for name, kind in types]
    return frame


class _Frame:
    """Bindings as a DataFrame: a column per bound variable, and each column's type (as
    the translation made them; the frame's own schema when not given)."""

    def __init__(self, frame: DataFrame, names: dict[str, str],
                 types: dict[str, str | None] | None = None) -> None:
        self.frame = frame
        self.names = names  # plan variable -> column
        self.types = types if types is not None else {
            name: _type(kind) for name, kind in _dtypes(frame)}


class Translator:
    """Runs plans as DataFrame operations: ``run(plan, driver, frames)`` gives the projected
    rows (columns c0, c1, ...). Expressions are Spark SQL with Overlog's meaning, or
    Unsupported."""

    def __init__(self, spark: SparkSession,
                 udf: Callable[[str], tuple[str, str] | None] = lambda name: None,
                 now: Callable[[], Any] | None = None) -> None:
        self.spark = spark
        self.udf = udf  # a function's registered Python UDF, and its Spark type (or None)
        self.now = now  # f_now: the step's time (a constant in a step)
        self.counter = 0

    def fresh(self) -> str:
        self.counter += 1
        return f"x{self.counter}"

    def expr(self, expr: p.Expr, frame: _Frame) -> tuple[str, str | None]:
        match expr:
            case p.Var(name=name):
                column = frame.names[name]
                return f"`{column}`", frame.types[column]
            case p.Const(value=value):
                return _literal(value)
            case p.Negate(operand=operand):
                text, kind = self.expr(operand, frame)
                if kind not in _NUMERIC:
                    raise Unsupported(f"negating a {kind or 'null'} value")
                return _not_null(f"(- {text})"), kind
            case p.Arith(op=op) if op in ("<<", ">>"):
                raise Unsupported(f"the shift {op}")
            case p.Arith(op=op, left=left, right=right):
                return _arith(op, *self.expr(left, frame), *self.expr(right, frame))
            case p.Test():
                raise Unsupported("a boolean expression (&&, ||, !, a comparison's value or "
                                  "an interval)")
            case p.Call(function=function, args=args):
                values = [self.expr(arg, frame) for arg in args]
                found = self.udf(function)
                if found is not None:  # a user function
                    if any(kind == "binary" for _, kind in values):
                        raise Unsupported(f"a list passed to {function}()")
                    name, kind = found
                    return f"{name}({', '.join(text for text, _ in values)})", kind
                if function == "f_now":
                    if self.now is None:
                        raise Unsupported("f_now() without the engine's clock")
                    return _literal(self.now())
                return _call(function, values, self.udf)
            case p.MakeList(items=items):
                values = [self.expr(item, frame) for item in items]
                if not values:
                    return _literal(())
                return _udf_call(self.udf, sparklist.MAKE, values), "binary"
        raise AssertionError(f"an expression the planner does not make: {expr!r}")

    def condition(self, op: str, left: str, ta: str | None, right: str, tb: str | None) -> str:
        if ta is not None and tb is not None and ta != tb:
            raise Unsupported(f"comparing {ta} with {tb} values")
        if "binary" in (ta, tb) and op not in ("==", "!="):  # (Spark orders the encodings)
            raise Unsupported("ordering lists")
        if op in ("==", "!="):  # null-safe; a void column (nulls only) never matches <=>
            same = ("TRUE" if ta is None and tb is None else f"({right} IS NULL)"
                    if ta is None else f"({left} IS NULL)" if tb is None
                    else f"({left} <=> {right})")
            return same if op == "==" else f"(NOT {same})"
        return f"coalesce({left} {op} {right}, raise_error('cannot compare null'))"

    def run(self, plan: p.Plan, driver: DataFrame | None,
            frames: Mapping[str, DataFrame]) -> DataFrame:
        from pyspark.sql import functions as F

        match plan.driver:
            case p.Scan(binds=binds, checks=checks):
                assert driver is not None
                frame = self._bind(driver, binds, checks)
            case p.Unit():
                frame = _Frame(self.spark.range(1).drop("id"), {}, {})
            case p.Seed(vars=names):  # ``driver`` has a column s0, s1, ... a variable
                assert driver is not None
                frame = _Frame(driver, {var: f"s{i}" for i, var in enumerate(names)})
        for op in plan.operators:
            match op:
                case p.Join(relation=relation, key=key, key_terms=terms, binds=binds,
                            checks=checks):
                    frame = self._join(frame, frames[relation], key, terms, binds, checks)
                case p.AntiJoin(relation=relation, key=key, key_terms=terms):
                    frame = self._join(frame, frames[relation], key, terms, (), (), "left_anti")
                case p.Filter(op=cmp, left=left, right=right):
                    test = self.condition(cmp, *self.expr(left, frame), *self.expr(right, frame))
                    frame = _Frame(frame.frame.filter(F.expr(test)), frame.names, frame.types)
                case p.Let(var=var, expr=expr):
                    text, kind = self.expr(expr, frame)
                    name = self.fresh()
                    frame = _Frame(frame.frame.withColumn(name, F.expr(text)),
                                   {**frame.names, var: name}, {**frame.types, name: kind})
            if _can_fail(op):  # evaluated on every binding that reaches it, as locally
                frame = _Frame(frame.frame.localCheckpoint(eager=True), frame.names,
                               frame.types)
        columns = [self.expr(term, frame) for term in plan.project.terms]
        projected = _typed(frame.frame.select(*(F.expr(text).alias(f"c{i}")
                                                for i, (text, _) in enumerate(columns))),
                           [(f"c{i}", kind) for i, (_, kind) in enumerate(columns)])
        if plan.aggregate is None:
            return projected
        return _aggregate(projected, plan.aggregate)

    def _bind(self, rows: DataFrame, binds: p.Columns, checks: p.Checks) -> _Frame:
        """``rows`` (columns c0, c1, ...) as bindings: its columns renamed apart, ``binds``
        naming the variables they hold, ``checks`` applied."""
        from pyspark.sql import functions as F

        prefix = self.fresh()
        schema = _dtypes(rows)
        renamed = rows.select(*(F.col(c).alias(f"{prefix}_{c}") for c, _ in schema))
        names = {var: f"{prefix}_c{column}" for column, var in binds}
        frame = _Frame(renamed, names, {f"{prefix}_{c}": _type(kind) for c, kind in schema})
        for column, expr in checks:
            test = self.condition("==", f"`{prefix}_c{column}`",
                                  frame.types[f"{prefix}_c{column}"], *self.expr(expr, frame))
            frame = _Frame(frame.frame.filter(F.expr(test)), names, frame.types)
        if any(_raises(expr) for _, expr in checks):  # evaluated on every row, as locally
            frame = _Frame(frame.frame.localCheckpoint(eager=True), names, frame.types)
        return frame

    def _join(self, left: _Frame, right: DataFrame, key: tuple[int, ...],
              terms: tuple[p.Expr, ...], binds: p.Columns, checks: p.Checks,
              how: str = "inner") -> _Frame:
        from pyspark.sql import functions as F

        keys = list(terms)
        computed = [(i, t) for i, t in enumerate(keys) if not isinstance(t, (p.Var, p.Const))]
        if computed:  # key expressions: columns of the bindings, evaluated first, as locally
            frame, names, types = left.frame, dict(left.names), dict(left.types)
            for i, term in computed:
                name = self.fresh()
                text, types[name] = self.expr(term, left)
                frame = frame.withColumn(name, F.expr(text))
                names[f"#spark{name}"] = name
                keys[i] = p.Var(name=f"#spark{name}")
            if any(_raises(term) for _, term in computed):
                frame = frame.localCheckpoint(eager=True)
            left = _Frame(frame, names, types)
        prefix = self.fresh()
        schema = _dtypes(right)
        other = right.select(*(F.col(c).alias(f"{prefix}_{c}") for c, _ in schema))
        other_types = {f"{prefix}_{c}": _type(kind) for c, kind in schema}
        tests = []
        for column, term in zip(key, keys, strict=True):
            text, kind = self.expr(term, left)
            tests.append(self.condition("==", f"`{prefix}_c{column}`",
                                        other_types[f"{prefix}_c{column}"], text, kind))
        condition = F.expr(" AND ".join(tests)) if tests else F.lit(True)
        joined = left.frame.join(other, condition, how)
        if how == "left_anti":
            return _Frame(joined, left.names, left.types)
        names = {**left.names, **{var: f"{prefix}_c{column}" for column, var in binds}}
        frame = _Frame(joined, names, {**left.types, **other_types})
        for column, expr in checks:
            test = self.condition("==", f"`{prefix}_c{column}`",
                                  frame.types[f"{prefix}_c{column}"], *self.expr(expr, frame))
            frame = _Frame(frame.frame.filter(F.expr(test)), names, frame.types)
        keep = sorted(set(names.values()))
        return _Frame(frame.frame.select(*keep), names, {c: frame.types[c] for c in keep})


def _aggregate(rows: DataFrame, aggregate: p.Aggregate) -> DataFrame:
    """One row per group of the bag ``rows`` (every column but the aggregate's), with the
    aggregate's meaning: ``sum`` of ints fails on a null, as ``min`` and ``max`` do when
    there is something to compare it with; a float ``sum`` and ``avg`` run as the local
    backend computes them, in Python."""
    from pyspark.sql import functions as F

    column = f"c{aggregate.position}"
    kind = _type(dict(_dtypes(rows))[column])
    function = aggregate.function
    nulls = f"count_if(`{column}` IS NULL) > 0"
    if function == "count":
        value = "count(1)"
    elif function in ("min", "max") and kind == "binary":
        raise Unsupported(f"{function}<> of lists")
    elif function in ("min", "max"):
        value = (f"CASE WHEN {nulls} AND count(1) > 1 THEN raise_error('cannot compare "
                 f"null') ELSE {function}(`{column}`) END")
    elif function == "sum" and kind == "bigint":
        value = (f"CASE WHEN {nulls} THEN raise_error('sum<> of null') "
                 f"ELSE sum(`{column}`) END")
    elif kind in _NUMERIC:  # floats summed in any order, an avg divided once: in Python
        return _python_aggregate(rows, column, function, kind)
    else:
        raise Unsupported(f"{function}<> of {kind or 'null'} values")
    group = [c for c in rows.columns if c != column]
    result = rows.groupBy(*group).agg(F.expr(value).alias(column),
                                      F.expr("count(1)").alias("bindings"))
    # with no group column Spark aggregates nothing to one row; there is no group then
    return result.filter("bindings > 0").select(*rows.columns)


def _python_aggregate(rows: DataFrame, column: str, function: str, kind: str) -> DataFrame:
    """``sum`` of floats or ``avg`` as the local backend computes them, by a pandas UDF
    (runtime/sparkudf.py) on each group."""
    from pyspark.sql import functions as F

    from overlog.runtime import sparkudf

    work = {("sum", "double"): sparkudf.sum_of_floats, ("avg", "double"):
            sparkudf.avg_of_floats, ("avg", "bigint"): sparkudf.avg_of_ints}[function, kind]
    group = [c for c in rows.columns if c != column]
    # a constant group column: no rows make no group (Spark gives one without a column)
    result = rows.groupBy(F.lit(0).alias("_all"), *group).agg(
        F.pandas_udf(work, "double")(column).alias(column))  # type: ignore[call-overload]
    return result.select(*rows.columns)


def _can_fail(op: p.Operator) -> bool:
    """Whether an operator evaluates an expression that can fail: Spark would skip it where
    its result is not used (an unused assignment, a join with nothing), so it is evaluated
    to the end (checkpointed) before going on."""
    match op:
        case p.Filter(op=cmp, left=left, right=right):
            return p.comparison_may_fail(cmp, left, right, _SAFE_CALLS)
        case p.Let(expr=expr):
            return _raises(expr)
        case p.Join(checks=checks):  # (key expressions are evaluated before the join)
            return any(_raises(expr) for _, expr in checks)
    return False


def _arith(op: str, a: str, ta: str | None, b: str, tb: str | None) -> tuple[str, str]:
    kind = ta or tb  # a null column takes the other's type; its nulls fail below
    if (ta and tb and ta != tb) or kind not in (*_NUMERIC, "string") or (
            kind == "string" and op != "+"):
        raise Unsupported(f"{op} of {ta or 'null'} and {tb or 'null'} values")
    # Spark gives null for null operands (an error: coalesce evaluates its second argument
    # only then), and, in ANSI mode, fails on overflow and division by zero
    if kind == "string":
        return _not_null(f"concat({a}, {b})"), kind
    text = _not_null(f"({a} div {b})" if op == "/" and kind == "bigint" else f"({a} {op} {b})")
    if kind == "double":  # not a number is an error, as it is locally
        text = f"nanvl({text}, CAST(raise_error('not a number') AS DOUBLE))"
    return text, kind


# built-in functions Spark runs with the local meaning (for the argument types _call takes)
SPARK_FUNCTIONS = frozenset({"f_size", "f_concat", "f_tostr", "f_min", "f_max", "f_now",
                             *sparklist.FUNCTIONS})


def _call(function: str, args: list[tuple[str, str | None]],
          udf: Callable[[str], tuple[str, str] | None]) -> tuple[str, str | None]:
    """A built-in function call as Spark SQL (runtime/builtins.py has the local meaning);
    those of lists (f_size and f_concat: when they take only lists) as Python UDFs."""
    if function == "f_concat" and not args:  # (of no lists: the empty list)
        return _literal(())
    kinds = [kind for _, kind in args]
    lists = "binary" in kinds and (function == "f_size" or set(kinds) == {"binary"})
    if function in sparklist.FUNCTIONS and (function not in ("f_size", "f_concat") or lists):
        return _udf_call(udf, function, args), sparklist.FUNCTIONS[function]
    if function == "f_size":  # of a string: its length in code points
        ((text, kind),) = args
        if kind != "string":
            raise Unsupported(f"f_size() of {kind or 'null'} values")
        return (f"CAST(coalesce(char_length({text}), raise_error('f_size of null')) AS BIGINT)",
                "bigint")
    if function in ("f_concat", "f_tostr"):  # values as Overlog writes them; null: "null"
        parts = [_text(text, kind, udf) for text, kind in args]
        return f"concat({', '.join(parts)})", "string"
    (a, ta), (b, tb) = args  # f_min, f_max: of two values of one type, neither null
    if ta is None or tb is None or ta != tb or ta == "binary":
        raise Unsupported(f"{function}() of {ta or 'null'} and {tb or 'null'} values")
    pick = "least" if function == "f_min" else "greatest"
    return (f"(CASE WHEN {a} IS NULL OR {b} IS NULL THEN raise_error('cannot compare null') "
            f"ELSE {pick}({a}, {b}) END)"), ta


def _text(text: str, kind: str | None, udf: Callable[[str], tuple[str, str] | None]) -> str:
    """A value as f_tostr writes it, in Spark SQL."""
    if kind in ("double", "binary"):  # Python's shortest repr, as Overlog writes floats
        return _udf_call(udf, sparklist.TOSTR, [(text, kind)])
    return f"coalesce(CAST({text} AS STRING), 'null')"


def _udf_call(udf: Callable[[str], tuple[str, str] | None], function: str,
              args: list[tuple[str, str | None]]) -> str:
    """A call of the Python UDF of a built-in function (runtime/sparklist.py)."""
    found = udf(f"<{function}>")
    if found is None:
        raise Unsupported(f"{function}() without the engine's UDFs")
    return f"{found[0]}({', '.join(text for text, _ in args)})"


def _not_null(text: str) -> str:
    return f"coalesce({text}, raise_error('a null operand'))"


# -- a stratum -------------------------------------------------------------------------------

def frame_of(spark: SparkSession, rows: Set[Row] | list[Row], arity: int) -> DataFrame:
    """``rows`` (engine values) as a DataFrame with columns c0, c1, ... through Arrow."""
    import pyarrow as pa
    from pyspark.sql.pandas.types import from_arrow_schema

    kinds = column_types(rows, arity)
    arrow = {"bigint": pa.int64(), "double": pa.float64(), "string": pa.string(),
             "boolean": pa.bool_(), "binary": pa.binary(), None: pa.null()}
    columns = list(zip(*rows, strict=True)) if rows else [() for _ in range(arity)]
    table = pa.table({f"c{i}": pa.array([_plain(v) for v in column], type=arrow[kind])
                      for i, (column, kind) in enumerate(zip(columns, kinds, strict=True))}
                     if arity else {"c": pa.array([0] * len(rows), type=pa.int8())})
    # the schema given: Spark Connect cannot infer it from an empty table
    frame = spark.createDataFrame(table, schema=from_arrow_schema(table.schema))
    return frame.drop("c") if not arity else frame


def _plain(value: Any) -> Any:
    if value.__class__ is Bool:
        return value.truth
    if value.__class__ is tuple:
        return sparklist.encode(value)
    return float(value) if value.__class__ is IntFloat else value


def rows_of(frame: DataFrame) -> set[Row]:
    """A DataFrame's rows as engine values (through Arrow)."""
    import pyarrow as pa

    table = frame.toArrow()
    if not table.num_columns:
        return {()} if table.num_rows else set()
    return shared_rows(table, lambda kind, value: internal(
        sparklist.decode(value) if value is not None and pa.types.is_binary(kind)
        else value))


def has_lists(frame: DataFrame) -> bool:
    """Whether a frame holds lists (their encoding): such a relation does not stay in Spark,
    whose DataFrames, CSV and Parquet files and sorted batches would hold the encoding."""
    return any(kind == "binary" for _, kind in _dtypes(frame))


def overlog_columns(frame: DataFrame, relation: str, arity: int) -> DataFrame:
    """A user's DataFrame as a relation's table: its columns, in order, as c0, c1, ...,
    each of an Overlog type (ints of any width as 64-bit, floats as doubles, strings,
    booleans, nulls). ValueError for another number of columns, a column of another type,
    or NaN (no Overlog value)."""
    from pyspark.sql import functions as F

    if len(frame.columns) != arity:
        raise ValueError(f"`{relation}` has {arity} fields; the DataFrame has "
                         f"{len(frame.columns)} columns")
    frame = frame.toDF(*(f"c{i}" for i in range(arity)))  # by position
    columns = []
    for i, (name, kind) in enumerate(frame.dtypes):
        target = {"tinyint": "bigint", "smallint": "bigint", "int": "bigint",
                  "float": "double"}.get(kind, kind)
        if target not in ("bigint", "double", "string", "boolean", "void"):
            raise ValueError(f"`{relation}` field {i + 1}: a {kind} column; Overlog's "
                             "values are ints, floats, strings, booleans and null")
        columns.append(F.col(name).cast(target).alias(name) if target != kind
                       else F.col(name))
    frame = frame.select(*columns)
    floats = [name for name, kind in frame.dtypes if kind == "double"]
    if floats and not frame.filter(" OR ".join(f"isnan({c})" for c in floats)).isEmpty():
        raise ValueError(f"`{relation}`: NaN, in a float column, is no Overlog value")
    return frame


def _difference(rows: DataFrame, other: DataFrame) -> DataFrame:
    """The distinct rows of ``rows`` not in ``other``."""
    return _matched(rows, other, "left_anti")


def _intersect(rows: DataFrame, other: DataFrame) -> DataFrame:
    """The distinct rows of ``rows`` also in ``other``."""
    return _matched(rows, other, "left_semi")


def _matched(rows: DataFrame, other: DataFrame, how: str) -> DataFrame:
    """The distinct rows of ``rows`` in ``other`` (left_semi) or not (left_anti). Spark's
    subtract and intersect never match a column holding only nulls (typed void, its
    null-safe test never holds); such a column is equal everywhere, so the test leaves it
    out."""
    from pyspark.sql import functions as F

    void = [c for c, kind in _dtypes(rows) if _type(kind) is None]
    if void:  # a column void here and typed in ``other`` takes its type
        rows, other = _unify([rows, other], "a relation")
        void = [c for c, kind in _dtypes(rows) if _type(kind) is None]
    if not void:  # Spark gives a void column of ``other`` this side's type
        return _typed(rows.subtract(other) if how == "left_anti" else rows.intersect(other),
                      _dtypes(rows))
    keys = [c for c in rows.columns if c not in void]
    theirs = other.select(*(F.col(c).alias(f"other_{c}") for c in keys))
    test = (F.expr(" AND ".join(f"(`{c}` <=> `other_{c}`)" for c in keys)) if keys
            else F.lit(True))
    return rows.join(theirs, test, how).distinct()


def _improvements(head: str, held: DataFrame, candidates: list[DataFrame], position: int,
                  function: str) -> DataFrame:
    """A recursive min/max's improvements (checkpointed): for each group (every column but
    ``position``) of the ``candidates``, the best of them, where it is strictly better
    than every row the group holds (``held``). Numbers only, never null (Spark fails on a
    null, and the local backend reports it); Unsupported for other values."""
    from pyspark.sql import functions as F

    typed = _unify([held, *candidates], head)
    held, rows = typed[0], _union(typed[1:], head)
    value = f"c{position}"
    kind = _type(dict(_dtypes(rows))[value])
    if kind not in (*_NUMERIC, None):  # (None: no rows, or nulls, which fail below)
        raise Unsupported(f"a recursive {function} of {kind} values")
    group = [c for c in rows.columns if c != value]
    pick = (f"CASE WHEN count_if(`{value}` IS NULL) > 0 THEN raise_error('cannot compare "
            f"null') ELSE {function}(`{value}`) END")
    # (with no group column Spark aggregates no rows to one: it is no group)
    ours = rows.groupBy(*group).agg(F.expr(pick).alias(value), F.count(F.lit(1)).alias("n"))
    theirs = held.groupBy(*group).agg(F.expr(pick).alias("held"),
                                      F.count(F.lit(1)).alias("n")).filter("n > 0")
    theirs = theirs.select(*(F.col(c).alias(f"held_{c}") for c in group), "held")
    test = " AND ".join(f"(`{c}` <=> `held_{c}`)" for c in group) or "TRUE"
    better = "<" if function == "min" else ">"
    return (ours.filter("n > 0").join(theirs, F.expr(test), "left")
            .filter(f"held IS NULL OR `{value}` {better} held")
            .select(*rows.columns).localCheckpoint(eager=True))


def _novel(total: DataFrame, outputs: list[DataFrame], head: str,
           ) -> tuple[DataFrame, DataFrame]:
    """A head's table and the rows of ``outputs`` not in it (checkpointed), typed alike."""
    typed = _unify([total, *outputs], head)
    return typed[0], _checkpoint(_difference(_union(typed[1:], head), typed[0]))


def _in_full(translate: Translator, rules: list[p.RulePlan], frames: Mapping[str, DataFrame],
             sizes: Mapping[str, int]) -> dict[str, list[DataFrame]]:
    """Each head's rows derived from the whole tables (``frames``): the first round of an
    evaluation afresh (the rules without atoms fire, and the first positive atom's plan
    reads every other atom in full)."""
    found: dict[str, list[DataFrame]] = {rule.head: [] for rule in rules}
    for rule in rules:
        if rule.start is not None:
            found[rule.head] += _derive(translate, rule.start, None, frames, sizes)
        first = next((t for t in rule.triggers if not t.negated), None)
        if first is not None:
            found[rule.head] += _derive(translate, first.insert, frames[first.relation],
                                        frames, sizes)
    return found


def _triggered(translate: Translator, rules: list[p.RulePlan], delta: Mapping[str, DataFrame],
               left: Mapping[str, DataFrame], frames: Mapping[str, DataFrame],
               sizes: Mapping[str, int]) -> dict[str, list[DataFrame]]:
    """Each head's rows derived from the new rows of its rules' atoms (``delta``) and from
    the rows that left a relation they negate (``left``): a round of insertion."""
    found: dict[str, list[DataFrame]] = {rule.head: [] for rule in rules}
    for rule in rules:
        for trigger in rule.triggers:
            seeds = left if trigger.negated else delta
            if trigger.relation in seeds:
                found[rule.head] += _derive(translate, trigger.insert, seeds[trigger.relation],
                                            frames, sizes)
    return found


def _derive(translate: Translator, plan: p.Plan, driver: DataFrame | None,
            frames: Mapping[str, DataFrame], sizes: Mapping[str, int]) -> list[DataFrame]:
    """``plan``'s rows (``Translator.run``), or none when it reads a relation that
    ``sizes`` (rows of relations, where known) says is empty (its driver, when ``driver``
    is that relation's table, or a join before anything that can fail): it derives
    nothing then, and that relation's columns have no type to translate with."""
    scan = plan.driver.relation if isinstance(plan.driver, p.Scan) else None
    if scan is not None and driver is frames.get(scan) and sizes.get(scan) == 0:
        return []
    if isinstance(plan.driver, p.Scan) and any(_raises(e) for _, e in plan.driver.checks):
        return [translate.run(plan, driver, frames)]
    for op in plan.operators:
        if isinstance(op, (p.Join, p.AntiJoin)) and any(map(_raises, op.key_terms)):
            break  # (key expressions are evaluated before the join)
        if isinstance(op, p.Join) and sizes.get(op.relation) == 0:
            return []
        if _can_fail(op):
            break
    return [translate.run(plan, driver, frames)]


def _other_groups(rows: DataFrame, groups: DataFrame, position: int) -> DataFrame:
    """The rows of ``rows`` whose group (every column but ``position``) has no row in
    ``groups``."""
    from pyspark.sql import functions as F

    rows, groups = _unify([rows, groups], "a relation")
    keys = [c for c in rows.columns if c != f"c{position}"]
    theirs = groups.select(*(F.col(c).alias(f"other_{c}") for c in keys))
    test = " AND ".join(f"(`{c}` <=> `other_{c}`)" for c in keys) or "TRUE"
    return rows.join(theirs, F.expr(test), "left_anti")


def _compact(frame: DataFrame, partitions: int) -> DataFrame:
    """``frame`` in ``partitions`` partitions, checkpointed (its lineage cut)."""
    return _checkpoint(frame.coalesce(partitions), _dtypes(frame))


def _checkpoint(frame: DataFrame, types: list[tuple[str, str]] | None = None) -> DataFrame:
    """``frame`` computed now and checkpointed (its lineage cut), its types kept."""
    return _typed(frame.localCheckpoint(eager=True), types or _dtypes(frame))


def _unify(frames: list[DataFrame], head: str) -> list[DataFrame]:
    """Frames of one relation with their column types made one (a column with only nulls
    takes the others' type; two types in a column keep the stratum local)."""
    from pyspark.sql import functions as F

    kinds: list[str | None] = [None] * len(_dtypes(frames[0]))
    for frame in frames:
        for i, (_, kind) in enumerate(_dtypes(frame)):
            kind = _type(kind)
            if kind is not None:
                if kinds[i] not in (None, kind):
                    raise Unsupported(f"`{head}` gets {kinds[i]} and {kind} values in "
                                      f"field {i + 1}")
                kinds[i] = kind
    if all(_type(kind) == want for frame in frames
           for (_, kind), want in zip(_dtypes(frame), kinds, strict=True)):
        return frames
    columns = [c for c, _ in _dtypes(frames[0])]
    return [_typed(frame.select(*(F.col(c).cast(kind) if kind else F.col(c)
                                  for c, kind in zip(columns, kinds, strict=True))),
                   [(c, kind) if kind else (c, theirs) for c, kind, (_, theirs)
                    in zip(columns, kinds, _dtypes(frame), strict=True)])
            for frame in frames]


def _union(frames: list[DataFrame], head: str) -> DataFrame:
    """The rows of several frames of one relation, as one (see ``_unify``)."""
    typed = _unify(frames, head)
    result = typed[0]
    for frame in typed[1:]:
        result = result.union(frame)
    return _typed(result, _dtypes(typed[0])) if len(typed) > 1 else result


@dataclass(frozen=True, slots=True)
class _Change:
    """What a step changed in a held relation: the rows that came and the rows that went
    (None: none), checkpointed."""

    gained: DataFrame | None
    lost: DataFrame | None


@dataclass(slots=True)
class _Resident:
    """What a stratum left in Spark at the end of its last evaluation there: the relations
    it reads and its heads, as the store held them then (checkpointed DataFrames)."""

    inputs: dict[str, DataFrame]
    totals: dict[str, DataFrame]


class SparkStrata:
    """Evaluates on Spark, for the fixpoint (its ``Offload``): a stratum's view rules
    (``evaluate``) and aggregate rules (``groups``). A stratum's tables stay in Spark between
    steps (``resident``): a step that only adds rows it reads is evaluated from those rows
    (semi-naive, as locally), one that removes rows (or adds rows to a negated relation)
    afresh. What Spark cannot run with the local meaning runs locally, its reason kept in
    ``local`` (by stratum) or ``local_rules`` (by rule); a reason that holds whatever the
    data is kept for good.

    ``threshold`` None runs everything it can on Spark (``--backend spark``); a number
    (``--backend auto``) moves a stratum, or an aggregate rule, to Spark once the tables it
    reads and writes hold that many rows (``moved``: what is there, and at what size),
    and back once they hold less than a quarter of it (``transitions``: every move); the
    session starts in the background at half of it. Spark unavailable then is
    not an error: everything runs locally (``unavailable`` says why)."""

    name = "Spark"
    PARTITIONS = 4  # what each round's result is coalesced to (rounds stay cheap)
    COMPACT = 4  # rounds a head's table takes in between two checkpoints of all of it

    def __init__(self, plan: p.ProgramPlan, relations: Mapping[str, Any],
                 master: str = "local[2]", conf: Mapping[str, str] | None = None,
                 user: Mapping[str, Callable] | None = None,
                 threshold: int | None = None, now: Callable[[], Any] | None = None) -> None:
        self.plan = plan
        self.arity = {name: rel.arity for name, rel in relations.items()}
        self.events = {name for name, rel in relations.items() if rel.event}
        self.keys = {name: rel.keys for name, rel in relations.items() if rel.keyed}
        self.relations = relations
        self.user = {} if user is None else user  # the engine's, as they are registered
        self._udfs: dict[str, tuple[str, str]] = {}  # function -> its UDF's name, type
        self.now = now  # the engine's f_now
        self.master = master
        self.conf = dict(conf or {})
        self.threshold = threshold
        self.local: dict[int, str] = {}  # stratum -> why it last ran locally
        # why strata (and aggregate rules) cannot run on Spark whatever the data: worked out
        # at the first step (user functions may be registered until then)
        self._never: tuple[dict[int, str], dict[int, str]] | None = None
        self.local_rules: dict[int, str] = {}  # aggregate rule -> why it last ran locally
        self.resident: dict[int, _Resident] = {}  # stratum -> its tables in Spark
        self.incremental = 0  # evaluations that started from the step's new rows
        self.moved: dict[str, int] = {}  # "stratum N" / a rule's label -> rows when it moved
        # every move, in order: what, its tables' rows then, and whether it went to Spark
        self.transitions: list[tuple[str, int, bool]] = []
        self._arrived: set[str] = set()  # what moved to Spark in this step
        self.unavailable: str | None = None  # with a threshold: why Spark could not start
        self._warming: threading.Thread | None = None
        self._tables: dict[str, list[str]] = {}  # label -> the tables its size counts
        # relations held in Spark (their rows never cross to Python; the store released
        # them) -> how many rows; see ``holdable``
        self.held: dict[str, int] = {}
        self._holdable: dict[str, int] | None = None  # relation -> the stratum deriving it
        # relations Python reads (listeners), and those that hold lists (see has_lists):
        # the heads of rules that make lists, and those found to hold some
        self._kept_local: set[str] = {
            rule.head for rule in plan.rules
            if any(_makes_list(expr) for _, planned in rule.plans()
                   for expr in p.plan_exprs(planned))}
        self._readers: dict[str, set[int | None]] = {}  # relation -> strata reading it
        # this step: held relations it changed -> their new rows (None: rows also went),
        # and their rows before it
        self._changed: dict[str, _Change | None] = {}  # (None: readers evaluate afresh)
        self._started: dict[str, DataFrame] = {}
        self._bases: dict[str, DataFrame] = {}  # held input relations' tables
        self.input_changes: dict[str, tuple[int, int]] = {}  # this step's, rows +/-

    def start(self) -> None:
        """Start the Spark session now (raises SparkUnavailable with what to do)."""
        session(self.master, self.conf)

    # -- relations held in Spark -------------------------------------------------------------

    @property
    def holdable(self) -> dict[str, int | None]:
        """The relations that may live only in Spark, each with the stratum deriving it
        (None: an input relation, derived by no rule): persistent, without keys or soft
        state, derived only by view rules of a stratum that may run on Spark and reads no
        events, and read only by such rules; not those with a listener (``keep_local``)."""
        if self._holdable is None:
            self._holdable, self._readers = holdable(self.plan, self.never[0])
        return {name: stratum for name, stratum in self._holdable.items()
                if name not in self._kept_local}

    def functions_changed(self) -> None:
        """A user function was registered: what may run on Spark is worked out again."""
        self._never = self._holdable = None
        self._udfs = {}

    def begin_step(self) -> None:
        if self._arrived:
            self._arrived = set()
        if self._changed:
            self._changed = {}
        if self._started:
            self._started = {}
        if self.input_changes:
            self.input_changes = {}

    def watches(self, rules: list[p.RulePlan]) -> bool:
        """Whether a stratum running locally may move to Spark in the middle of a step:
        with a threshold, when it can run there and has not moved."""
        stratum = rules[0].stratum
        return (self.threshold is not None and self.unavailable is None
                and stratum not in self.never[0] and f"stratum {stratum}" not in self.moved)

    def moves(self, rules: list[p.RulePlan], store: Any, grown: int) -> bool:
        """Whether that stratum moves now: its tables have grown past the threshold."""
        return self._wanted(f"stratum {rules[0].stratum}", rules, store)

    def continues(self, rules: list[p.RulePlan], store: Any, max_rounds: int,
                  delta: Mapping[str, set[Row]], cap: int) -> None:
        """A stratum moving mid-step starts over on Spark (from its resident tables)."""
        return None

    def changed(self, relations: Iterable[str]) -> bool:
        """Whether this step changed a held relation among ``relations``."""
        return any(name in self._changed for name in relations)

    def current(self, relation: str) -> DataFrame:
        """A held relation's rows now: its stratum's table, or the input table."""
        assert self._holdable is not None
        writer = self._holdable[relation]
        if writer is None:
            return self._bases[relation]
        return self.resident[writer].totals[relation]

    # -- input relations held in Spark

    def frame_input(self, relation: str, frame: DataFrame, count: int | None = None,
                    ) -> FrameInput | None:
        """A Spark DataFrame (its columns in order as the relation's fields) as an input
        that stays in Spark, if ``relation`` is an input relation Spark may hold and, with a
        threshold, the frame has that many rows (``count``: its rows, if known); else None
        (its rows go through Python). ValueError for a column of a type Overlog has not, or
        a float column holding NaN."""
        if self.holdable.get(relation, 0) is not None:
            return None
        if self.threshold is not None:
            count = frame.count() if count is None else count
            if count < self.threshold and relation not in self.held:
                return None
        frame = overlog_columns(frame, relation, self.arity[relation])
        return FrameInput(frame, frame.count() if count is None else count)

    def _hold_input(self, relation: str, store: Any) -> None:
        """Hold an input relation in Spark from now on, with the rows the store held (which
        lets go of them). Unsupported for rows Spark cannot hold as they are."""
        rows = store.rows(relation)
        before = frame_of(session(self.master, self.conf), rows, self.arity[relation])
        if has_lists(before):
            raise Unsupported(f"a list in `{relation}` (it stays in the store)")
        before = _compact(before, self.PARTITIONS)
        store.release(relation, asserted=True)
        self._started.setdefault(relation, before)
        self._changed[relation] = None  # its readers evaluate afresh
        self._set_held(relation, len(rows), store, before)

    def put(self, relation: str, frames: list[DataFrame], store: Any) -> None:
        """Add rows to a held input relation: the step's change there. Unsupported for rows
        of another type than those held."""
        before = self.current(relation)
        gained = self._gained(before, frames, relation)
        if has_lists(gained):
            raise Unsupported(f"a list in `{relation}` (it goes to the store)")
        count = gained.count()
        if count:
            total = _compact(_union([before, gained], relation), self.PARTITIONS)
            self._step_change(relation, before, _Change(gained, None), count, 0)
            self._set_held(relation, self.held[relation] + count, store, total)

    @staticmethod
    def _gained(before: DataFrame, frames: list[DataFrame], relation: str) -> DataFrame:
        """The rows of ``frames`` not in ``before`` (Unsupported: of another type)."""
        typed = _unify([before, *frames], relation)
        return _difference(_union(typed[1:], relation), typed[0]).localCheckpoint(eager=True)

    def file_input(self, relation: str, path: str, header: bool = False,
                   ) -> FrameInput | None:
        """A Parquet or CSV file (by its extension) as an input that stays in Spark, read
        by Spark (see ``frame_input``); None: read it through Python (as a CSV file Spark
        would not read as the Python reader does: runtime/sparkcsv.py)."""
        from overlog import parquetio
        from overlog.runtime import sparkcsv

        if self.holdable.get(relation, 0) is not None:
            return None
        parquet = path.endswith(".parquet")
        if parquet:
            pa = parquetio.require()
            try:
                count = pa.parquet.ParquetFile(path).metadata.num_rows
            except (OSError, pa.ArrowException) as error:
                raise parquetio.ParquetError(f"{path}: {error}") from None
        else:
            count = sparkcsv.lines(path, header)  # about its rows
            if count is None:
                return None
        if self.threshold is not None:  # auto: from the threshold on, if Spark starts
            if count < self.threshold and relation not in self.held:
                return None
            self._warm()
            if self.unavailable is not None:
                return None
        spark = session(self.master, self.conf)
        if not parquet:
            try:
                found = sparkcsv.read(spark, os.path.abspath(path), self.arity[relation],
                                      header)
            except Exception as error:  # Spark failed on it: the Python reader says why
                if type(error).__module__.startswith(("pyspark", "py4j")):
                    return None
                raise
            return None if found is None else FrameInput(*found)
        try:
            return self.frame_input(relation, spark.read.parquet(os.path.abspath(path)), count)
        except ValueError as error:
            raise parquetio.ParquetError(f"{path}: {error}") from None

    def take_inputs(self, inputs: list[tuple[str, str, Any]], store: Any,
                    ) -> list[tuple[str, str, Row]]:
        """A step's inputs, in order: inserts and deletes of an input relation held in
        Spark (or given a DataFrame in this step) apply there; those of a held derived
        relation bring it back to the store first. Returns the inputs for the store (a
        DataFrame's rows among them when its relation cannot stay in Spark). InputFailure
        when Spark fails on them."""
        holdable = self.holdable
        there = {name for name in self.held if holdable.get(name, 0) is None} | {
            relation for _, relation, row in inputs
            if row.__class__ is FrameInput and holdable.get(relation, 0) is None}
        rest: list[tuple[str, str, Row]] = []
        for (kind, relation), run in itertools.groupby(inputs, key=itemgetter(0, 1)):
            items = [row for _, _, row in run]
            if relation in self.held and relation not in there:
                self.unhold(relation, store)  # derived: inputs apply in the store
            elif relation in there:
                try:
                    self._take(kind, relation, items, store)
                    continue
                except Unsupported:  # these rows and those in Spark: in the store
                    there.discard(relation)
                    if relation in self.held:
                        self.unhold(relation, store)
                except Exception as error:
                    if type(error).__module__.startswith(("pyspark", "py4j")):
                        raise InputFailure(f"Spark failed on the inputs of `{relation}`: "
                                           f"{first_line(error)}") from error
                    raise
            rest += [(kind, relation, row) for item in items
                     for row in (rows_of(item.frame) if item.__class__ is FrameInput
                                 else (item,))]
        return rest

    def _take(self, kind: str, relation: str, items: list[Any], store: Any) -> None:
        if relation not in self.held:
            self._hold_input(relation, store)
        rows = [row for row in items if row.__class__ is not FrameInput]
        if kind == "delete":
            self._delete(relation, rows, store)
            return
        frames = [row.frame for row in items if row.__class__ is FrameInput]
        if rows:
            frames.append(frame_of(session(self.master, self.conf), set(rows),
                                   self.arity[relation]))
        self.put(relation, frames, store)

    def _delete(self, relation: str, rows: list[Row], store: Any) -> None:
        """Delete rows from a held input relation: the step's change there."""
        frame = frame_of(session(self.master, self.conf), set(rows), self.arity[relation])
        before = self.current(relation)
        gone = _intersect(before, frame).localCheckpoint(eager=True)
        lost = gone.count()
        if lost:
            total = _compact(_difference(before, gone), self.PARTITIONS)
            self._step_change(relation, before, _Change(None, gone), 0, lost)
            self._set_held(relation, self.held[relation] - lost, store, total)

    def _step_change(self, relation: str, before: DataFrame, change: _Change,
                     added: int, removed: int) -> None:
        """Note what the step changed in a held input relation."""
        self._started.setdefault(relation, before)
        # changed twice: its readers evaluate afresh
        self._changed[relation] = None if relation in self._changed else change
        was = self.input_changes.get(relation, (0, 0))
        self.input_changes[relation] = (was[0] + added, was[1] + removed)

    # -- holding and giving back

    def keep_local(self, relation: str, store: Any) -> None:
        """Python reads ``relation`` from now on (a listener): it is never held, and if it
        is, its rows come back to the store (journaled: a listener registered in a step
        attempt that is rolled back goes with it)."""
        if relation not in self._kept_local:
            self._kept_local.add(relation)
            store.on_rollback(self._kept_local.discard, relation)
        if relation in self.held:
            self.unhold(relation, store, changes=False)

    def unhold(self, relation: str, store: Any, changes: bool = True) -> None:
        """Put a held relation's rows back in the store (journaled); with ``changes``, what
        this step changed in it counts as the step's changes there."""
        now = rows_of(self.current(relation))
        started = self._started.get(relation) if changes else None
        assert self._holdable is not None
        base = self._holdable[relation] is None  # an input relation: its rows are asserted
        if started is None:
            store.take_back(relation, now, asserted=base)
        else:
            before = rows_of(started)
            store.take_back(relation, before, asserted=base)
            if before - now:
                if base:
                    for row in before - now:
                        store.retract_row(relation, row)
                store.remove_many(relation, before - now)
            if now - before:
                if base:
                    store.assert_many(relation, now - before)
                else:
                    store.add_many(relation, now - before)
        self._changed.pop(relation, None)
        self._set_held(relation, None, store)

    def collect(self, relation: str) -> set[Row]:
        """A held relation's rows, in Python."""
        return rows_of(self.current(relation))

    BATCH = 1_000_000  # rows of a held relation that come to the driver at once

    def batches(self, relation: str) -> Iterator[Any]:
        """A held relation's rows as Arrow tables of about ``BATCH`` rows, sorted as
        ``Engine.rows`` sorts them (one type a column: nulls first, then by value): never
        all of them in Python at once. (Sorted into ranges, one partition each, taken one
        after the other.)"""
        from pyspark.sql import functions as F

        frame = self.current(relation)
        parts = max(1, math.ceil(self.held[relation] / self.BATCH))
        ranges = (frame.repartitionByRange(parts, *frame.columns)
                  .sortWithinPartitions(*frame.columns)
                  .withColumn("part", F.spark_partition_id())
                  .localCheckpoint(eager=True))
        for part in range(parts):
            yield ranges.filter(f"part = {part}").drop("part").toArrow()

    def _set_held(self, relation: str, count: int | None, store: Any,
                  base: DataFrame | None = None) -> None:
        """Journaled: ``relation`` holds ``count`` rows in Spark (None: it is not held), in
        the table ``base`` for an input relation."""
        before = (self.held.get(relation), self._bases.get(relation))
        self._restore_held((relation, (count, base)))
        if before != (count, base):
            store.on_rollback(self._restore_held, (relation, before))

    def _restore_held(self, args: tuple[str, tuple[int | None, DataFrame | None]]) -> None:
        relation, (count, base) = args
        if count is None:
            self.held.pop(relation, None)
        else:
            self.held[relation] = count
        if base is None:
            self._bases.pop(relation, None)
        else:
            self._bases[relation] = base

    def _unhold_all(self, names: Iterable[str], store: Any) -> None:
        for name in names:
            if name in self.held:
                self.unhold(name, store)

    def size(self, relation: str, store: Any) -> int:
        held = self.held.get(relation)
        return len(store.rows(relation)) if held is None else held

    def evaluate(self, rules: list[p.RulePlan], store: Any, max_rounds: int,
                 plus: Mapping[str, set[Row]], minus: Mapping[str, set[Row]],
                 cap: int) -> dict[str, tuple[set[Row], set[Row]] | Held] | None:
        """What the views' evaluation changes, given the step's changes so far (``plus``,
        ``minus``): each head's rows to add and rows no longer derived; or None: the
        stratum runs locally (see ``local``). The stratum's resident tables follow (back
        again if the store rolls back); the fixpoint calls ``forget`` when it does not
        take the result, which it checks against the step's budget (Spark does not stop at
        ``cap``)."""
        stratum = rules[0].stratum
        assert stratum is not None  # deferred rules run locally
        found = None
        if self._possible(stratum, self.never[0], self.local) and self._wanted(
                f"stratum {stratum}", rules, store):
            found = self._attempt(stratum, self.local, lambda spark: (
                self._evaluate(spark, rules, store, max_rounds, plus, minus)))
        if found is None:
            self.forget(stratum, store)
            return None
        changes, resident, held = found
        self._keep(stratum, resident, store)
        for head, (count, new, started) in held.items():
            self._set_held(head, count, store)
            if started is not None:
                self._changed[head] = new
                self._started[head] = started
        return changes

    def monotone(self, rules: list[p.RulePlan], store: Any, max_rounds: int,
                 plus: Mapping[str, set[Row]], minus: Mapping[str, set[Row]],
                 cap: int) -> dict[str, tuple[set[Row], set[Row]]] | None:
        """A recursive min/max stratum evaluated on Spark (``_improve``: afresh, or from
        the step's new rows): each head's rows to add and rows no longer derived; or None:
        it runs locally (see ``local``)."""
        stratum = rules[0].stratum
        assert stratum is not None
        found = None
        if self._possible(stratum, self.never[0], self.local) and self._wanted(
                f"stratum {stratum}", rules, store):
            found = self._attempt(stratum, self.local, lambda spark: self._improve(
                spark, rules, store, max_rounds, cap, plus, minus))
        if found is None:
            self.forget(stratum, store)
        return found

    def _improve(self, spark: SparkSession, rules: list[p.RulePlan], store: Any,
                 max_rounds: int, cap: int, plus: Mapping[str, set[Row]],
                 minus: Mapping[str, set[Row]]) -> dict[str, tuple[set[Row], set[Row]]]:
        """Semi-naive on each group's improvements: each round a min/max head's candidates
        keep, for each group, the best of them where it beats the group's row (derived or
        asserted); the improvements replace the groups' derived rows and propagate, as the
        views' new rows do. Every improvement propagates at once (the local backend
        propagates the better part first: the result is the same, the stratum being
        monotone). Views that read a row since replaced are evaluated again at the end,
        from the final rows of the min/max heads, as locally. Every improvement counts
        against the step's new rows (``cap``), as locally.

        A stratum without views whose step only added rows to the relations it reads
        (``plus``; none to its heads, none taken from anything it reads, nothing read held
        in Spark) continues from the groups' rows in the store, seeded by those new rows
        (``incremental``); otherwise it is evaluated afresh."""
        views = [rule for rule in rules if rule.aggregation is None]
        orders = {rule.head: (rule.aggregation.position, rule.aggregation.function)
                  for rule in rules if rule.aggregation is not None}
        heads = sorted({rule.head for rule in rules})
        reads = set().union(*(p.plan_relations(plan) for rule in rules
                              for _, plan in rule.plans()))
        negated = {trigger.relation for rule in rules for trigger in rule.triggers
                   if trigger.negated}
        onward = (not views and all(rule.start is None for rule in rules)
                  and not any(plus.get(head) for head in heads)
                  and not any(minus.get(name) for name in reads)
                  and not any(plus.get(name) for name in negated)
                  and not reads & self.held.keys()
                  and any(plus.get(name) for name in reads))
        frames = self._inputs(spark, sorted(reads - set(heads)), store, None, {}, {})
        asserted = {head: frame_of(spark, store.asserted(head), self.arity[head])
                    for head in heads}
        translate = Translator(spark, self._udf, self.now)
        best = {head: frame_of(spark, store.rows(head) - store.asserted(head)
                               if onward else set(), self.arity[head]) for head in orders}
        total = {head: asserted[head] for head in heads if head not in orders}
        sizes = {name: self.size(name, store) for name in frames}
        sizes.update((head, len(store.rows(head) if onward else store.asserted(head)))
                     for head in heads)
        delta = None
        if onward:
            self.incremental += 1
            delta = {name: frame_of(spark, plus[name], self.arity[name])
                     for name in sorted(reads) if plus.get(name)}
        improved = self._rounds(translate, rules, frames, total, best, asserted, orders,
                                sizes, max_rounds, delta)
        if improved > cap:
            raise Unsupported("more new tuples than a step may take (the local backend "
                              "reports it)")
        groups = {head: frame.count() for head, frame in best.items()}
        if views and improved > sum(groups.values()):
            fixed = {**frames, **{head: _union([asserted[head], best[head]], head)
                                  for head in orders}}
            total = {head: asserted[head] for head in total}
            sizes.update((head, len(store.asserted(head)) + groups.get(head, 0))
                         for head in heads)
            self._rounds(translate, views, fixed, total, {}, asserted, {}, sizes,
                         max_rounds)
        changes = {}
        for head in heads:
            rows = rows_of(best[head] if head in orders else total[head])
            rows |= store.asserted(head)
            stored = store.rows(head)
            changes[head] = (rows - stored, stored - rows)
        return changes

    def _rounds(self, translate: Translator, rules: list[p.RulePlan],
                frames: Mapping[str, DataFrame], total: dict[str, DataFrame],
                best: dict[str, DataFrame], asserted: Mapping[str, DataFrame],
                orders: Mapping[str, tuple[int, str]], sizes: dict[str, int],
                max_rounds: int, delta: Mapping[str, DataFrame] | None = None) -> int:
        """``_improve``'s semi-naive loop, from every rule's full evaluation, or from the
        new rows ``delta`` (relation -> its rows added): the views' heads grow in
        ``total``, the min/max heads' derived rows are ``best`` (a row a group);
        ``frames`` holds the other relations. ``sizes`` (rows of each relation, kept up to
        date) skips the plans that join an empty relation: they derive nothing, and its
        columns have no type yet. Returns how many improvements there were."""
        heads = {rule.head for rule in rules}

        def tables() -> dict[str, DataFrame]:
            return {**frames, **total, **{head: _union([asserted[head], rows], head)
                                          for head, rows in best.items()}}

        every = tables()
        found = _in_full(translate, rules, every, sizes) if delta is None else \
            _triggered(translate, rules, delta, {}, every, sizes)
        improved = 0
        parts = dict.fromkeys(heads, 0)  # rounds each table took in since its checkpoint
        for _ in range(max_rounds + 1):  # the last finds nothing new
            delta = {}
            for head, outputs in found.items():
                if not outputs:
                    continue
                if head in orders:
                    new_rows = _improvements(head, every[head], outputs, *orders[head])
                    count = new_rows.count()
                    improved += count
                    if count:
                        best[head] = _union([_other_groups(best[head], new_rows,
                                                           orders[head][0]), new_rows], head)
                        sizes[head] += count  # (at least one group now: not empty)
                else:
                    before, new_rows = _novel(total[head], outputs, head)
                    count = new_rows.count()
                    if count:
                        total[head] = _union([before, new_rows], head)
                        sizes[head] += count
                if not count:
                    continue
                delta[head] = new_rows
                parts[head] += 1
                if parts[head] == self.COMPACT:
                    grown = best if head in orders else total
                    grown[head] = _compact(grown[head], self.PARTITIONS)
                    parts[head] = 0
            if not delta:
                return improved
            every = tables()
            found = _triggered(translate, rules, delta, {}, every, sizes)
        raise Unsupported("more rounds than a step may take (the local backend reports it)")

    def _wanted(self, label: str, rules: list[p.RulePlan], store: Any) -> bool:
        """Whether ``rules`` go to Spark now: always without a threshold; with one, once
        the tables they read and write hold that many rows."""
        threshold = self.threshold
        if threshold is None:
            return True
        if self.unavailable is not None:
            return False
        names = self._tables.get(label)
        if names is None:
            names = self._tables[label] = sorted({rule.head for rule in rules}.union(
                *(p.plan_relations(plan) for rule in rules for _, plan in rule.plans())))
        size = sum(self.size(name, store) for name in names)
        if label in self.moved:  # back once its tables shrink to a quarter of it
            if size >= threshold // 4 or label in self._arrived:
                return True
            del self.moved[label]
            self.transitions.append((label, size, False))
            return False
        if self.held.keys() & names:  # a stratum that reads a held relation runs on Spark
            return True
        if size < threshold // 2:
            return False
        if self._warming is None:  # the session starts beside the steps
            self._warming = threading.Thread(target=self._warm, name="overlog-spark-start",
                                             daemon=True)
            self._warming.start()
        if size < threshold:
            return False
        self._warming.join()
        if self.unavailable is not None:
            return False
        self.moved[label] = size
        self._arrived.add(label)  # (its tables as the step started: not back before it ends)
        self.transitions.append((label, size, True))
        return True

    def _warm(self) -> None:
        try:
            self.start()
        except SparkUnavailable as error:
            self.unavailable = str(error)

    def resident_frame(self, relation: str) -> DataFrame | None:
        """A relation as a stratum left it in Spark (the store's rows, between steps)."""
        if relation in self.held:
            return self.current(relation)
        for resident in self.resident.values():
            if relation in resident.totals:
                return resident.totals[relation]
        for resident in self.resident.values():
            if relation in resident.inputs:
                return resident.inputs[relation]
        return None

    def forget(self, stratum: int, store: Any) -> None:
        """The stratum runs locally in this step (its result here not taken): evaluate it
        afresh next time. Its held heads come back to the store as they were before the
        step, the held relations it reads as they are now (the step's changes counting)."""
        for name, writer in (self._holdable or {}).items():
            if writer == stratum and name in self.held:
                started = self._started.pop(name, None)
                store.take_back(name, rows_of(started if started is not None
                                              else self.current(name)))
                self._changed.pop(name, None)
                self._set_held(name, None, store)
        rules = [self.plan.rules[i] for i in self.plan.strata[stratum].rules]
        self._unhold_all(set().union(*(p.plan_relations(plan) for rule in rules
                                       for _, plan in rule.plans())), store)
        self._keep(stratum, None, store)

    def _keep(self, stratum: int, resident: _Resident | None, store: Any) -> None:
        before = self.resident.pop(stratum, None)
        if resident is not None:
            self.resident[stratum] = resident
        if before is not resident:
            store.on_rollback(self._restore, (stratum, before))

    def _restore(self, args: tuple[int, _Resident | None]) -> None:
        stratum, before = args
        self.resident.pop(stratum, None)
        if before is not None:
            self.resident[stratum] = before

    @property
    def never(self) -> tuple[dict[int, str], dict[int, str]]:
        """Why strata, and aggregate rules, never run on Spark whatever the data."""
        if self._never is None:
            arity = self.arity
            self._never = (
                {stratum.index: reason for stratum in self.plan.strata
                 if (reason := stratum_reason(self.plan, stratum.index, self.user))},
                {rule.index: reason for rule in self.plan.rules if rule.aggregation
                 if (reason := "it runs with its recursive min/max"
                     if rule.stratum is not None and self.plan.strata[rule.stratum].monotone
                     else static_reason([rule], arity, self.user))})
        return self._never

    @staticmethod
    def _possible(key: int, never: Mapping[int, str], reasons: dict[int, str]) -> bool:
        reason = never.get(key)
        if reason is not None:
            reasons[key] = reason
        return reason is None

    def _attempt(self, key: int, reasons: dict[int, str], work: Any) -> Any:
        """``work(spark)`` for a stratum's views or an aggregate rule (``key``), or None
        when they run locally for this step: why goes into ``reasons``."""
        try:
            found = work(session(self.master, self.conf))
        except Unsupported as why:  # these tables, this step: tried again when they change
            reasons[key] = str(why)
            return None
        except Exception as error:  # a failure inside Spark: the local backend reports it
            if type(error).__module__.startswith(("pyspark", "py4j")):
                reasons[key] = f"Spark failed ({type(error).__name__}: {first_line(error)})"
                return None
            raise
        reasons.pop(key, None)
        return found

    def _inputs(self, spark: SparkSession, names: list[str], store: Any,
                before: _Resident | None, plus: Mapping[str, set[Row]],
                minus: Mapping[str, set[Row]]) -> dict[str, DataFrame]:
        """The relations the stratum reads, as the store holds them now: held in Spark,
        what stayed resident with the step's changes applied, or crossed from the store."""
        frames = {}
        for name in names:
            if name in self.held:
                frames[name] = self.current(name)
                continue
            frame = before.inputs.get(name) if before is not None else None
            if frame is None:
                frames[name] = frame_of(spark, store.rows(name), self.arity[name])
                continue
            frames[name] = self._applied(spark, frame, name, plus, minus)
        return frames

    def _applied(self, spark: SparkSession, frame: DataFrame, name: str,
                 plus: Mapping[str, set[Row]], minus: Mapping[str, set[Row]],
                 compact: bool = True) -> DataFrame:
        """A resident table with the step's changes to it applied (checkpointed with
        ``compact``; else evaluated only when used)."""
        if minus.get(name):
            frame = _difference(frame, frame_of(spark, minus[name], self.arity[name]))
        if plus.get(name):
            frame = _union([frame, frame_of(spark, plus[name], self.arity[name])], name)
        if compact and (minus.get(name) or plus.get(name)):
            frame = _compact(frame, self.PARTITIONS)
        return frame

    def _evaluate(self, spark: SparkSession, rules: list[p.RulePlan], store: Any,
                  max_rounds: int, plus: Mapping[str, set[Row]],
                  minus: Mapping[str, set[Row]]) -> tuple[
            dict[str, tuple[set[Row], set[Row]] | Held], _Resident | None,
            dict[str, tuple[int, DataFrame | None, DataFrame | None]]]:
        """The heads' changes, what stays resident, and for each head held in Spark: its
        rows, and if they changed, its new rows (None: rows also went) and its rows before."""
        stratum = rules[0].stratum
        heads = sorted({rule.head for rule in rules})
        reads = set().union(*(p.plan_relations(plan) for rule in rules for _, plan in rule.plans()))
        names = sorted(reads - set(heads))
        negated = {t.relation for rule in rules for t in rule.triggers if t.negated}
        before = self.resident.get(stratum)  # type: ignore[arg-type]
        frames = self._inputs(spark, names, store, before, plus, minus)
        # heads whose rows stay in Spark: all that may with --backend spark; with auto,
        # those held already, and those reaching the threshold in this evaluation. Not
        # while a stratum reading one runs locally (it would take them back every step).
        may = self.holdable
        holdable = {head for head in heads if head in may
                    and not (self._readers.get(head, set()) - {stratum}) & self.local.keys()}
        holding = {head for head in holdable if self.threshold is None or head in self.held}
        growing = holdable - holding
        started: dict[str, DataFrame] = {}  # each held head's rows before the evaluation
        for head in sorted(holding):
            if not self._starts(spark, head, started, before, store, plus, minus):
                holding.discard(head)
        translate = Translator(spark, self._udf, self.now)
        sizes = {name: self.size(name, store) for name in names}  # (of the heads: afresh)
        held_changes = {name: self._changed[name] for name in names if name in self._changed}
        # from the resident tables, unless a held relation it reads changed in a way not
        # kept (newly held, changed twice): semi-naive from the new rows when none went
        # (nor came to a negated relation), else DRed
        incremental = before is not None and None not in held_changes.values()
        gained = {name: change.gained for name, change in held_changes.items()
                  if change is not None and change.gained is not None}
        lost = {name: change.lost for name, change in held_changes.items()
                if change is not None and change.lost is not None}
        gained.update((name, frame_of(spark, plus[name], self.arity[name]))
                      for name in names if plus.get(name))
        lost.update((name, frame_of(spark, minus[name], self.arity[name]))
                    for name in (*names, *heads) if minus.get(name))
        came = {name: frame for name, frame in gained.items() if name in negated}
        removed = rederived = None
        if incremental and (lost or came):
            assert before is not None
            removed = self._overdelete(spark, translate, rules, before, came, lost, store)
            incremental = removed is not None
        if incremental:  # what is new derives from the step's new rows (semi-naive)
            assert before is not None
            self.incremental += 1
            total = {head: before.totals[head] for head in heads}
            new = {**gained, **{head: frame_of(spark, plus[head], self.arity[head])
                                for head in heads if plus.get(head)}}
            if removed is not None:  # what is left, and the removed rows derived still
                total = {head: _difference(total[head], removed[head]) for head in heads}
                rederived = self._rederive(translate, rules, removed, {**frames, **total})
                for head, rows in rederived.items():
                    new[head] = _union([new[head], rows], head) if head in new else rows
            total = {head: _compact(_union([total[head], new[head]], head), self.PARTITIONS)
                     if head in new else total[head] for head in heads}
            every = {**frames, **total}
            left = {name: lost[name] for name in negated if name in lost}  # (now let by)
            found = _triggered(translate, rules, new, left, every, sizes)
        else:  # afresh, from the rows asserted in the heads
            total = {head: frame_of(spark, store.asserted(head), self.arity[head])
                     for head in heads}
            sizes.update((head, len(store.asserted(head))) for head in heads)
            every = {**frames, **total}
            found = _in_full(translate, rules, every, sizes)
        derived: dict[str, set[Row]] = {head: set() for head in heads}
        deltas: dict[str, list[DataFrame]] = {head: [] for head in heads}
        added = dict.fromkeys(heads, 0)
        parts = dict.fromkeys(heads, 0)  # rounds each table took in since its checkpoint
        for _ in range(max_rounds + 1):  # the last finds nothing new
            delta = {}
            for head, outputs in found.items():
                if not outputs:
                    continue
                before_rows, new_rows = _novel(total[head], outputs, head)
                if head in holding:  # its rows stay here
                    count = new_rows.count()
                else:
                    rows = rows_of(new_rows)
                    count = len(rows)
                    derived[head] |= rows
                if not count:
                    continue
                added[head] += count
                if head in sizes:
                    sizes[head] += count
                if head in growing and (len(store.rows(head)) + added[head]
                                        >= self.threshold) and self._starts(  # type: ignore[operator]
                        spark, head, started, before, store, plus, minus):
                    growing.discard(head)
                    holding.add(head)  # from now on (the rows collected are let go)
                    derived[head] = set()
                deltas[head].append(new_rows)
                delta[head] = new_rows
                total[head] = _union([before_rows, new_rows], head)
                parts[head] += 1  # a union of a few checkpointed parts, compacted now and then
                if parts[head] == self.COMPACT:
                    total[head] = _compact(total[head], self.PARTITIONS)
                    parts[head] = 0
            if not delta:
                break
            every = {**frames, **total}
            found = _triggered(translate, rules, delta, {}, every, sizes)
        else:
            raise Unsupported("more rounds than a step may take (the local backend reports "
                              "it)")
        total = {head: _compact(frame, self.PARTITIONS) if parts[head] else frame
                 for head, frame in total.items()}  # what stays resident: whole again
        for head in holding:  # a relation holding lists never stays in Spark (see has_lists)
            if has_lists(total[head]):
                self._kept_local.add(head)
                raise Unsupported(f"a list in `{head}` (it stays in the store from now on)")
        for head in heads:  # two rows with one key: the local backend reports it (E303)
            if head in self.keys and not total[head].groupBy(
                    *(f"c{k}" for k in self.keys[head])).count().filter("count > 1").isEmpty():
                raise Unsupported(f"a key conflict in `{head}` (reported locally)")
        resident = None if reads & self.events else _Resident(frames, total)
        changes: dict[str, tuple[set[Row], set[Row]] | Held] = {}
        held: dict[str, tuple[int, _Change | None, DataFrame | None]] = {}
        for head in holding:
            gone = None
            if incremental and removed is None:
                gained = _union(deltas[head], head) if deltas[head] else None
                gains, lost = added[head], 0
            else:  # what the evaluation changes, from the rows before it
                gained = _difference(total[head], started[head]).localCheckpoint(eager=True)
                gone = _difference(started[head], total[head]).localCheckpoint(eager=True)
                gains, lost = gained.count(), gone.count()
            changes[head] = Held(gains, lost)
            newly = head not in self.held
            count = total[head].count() if newly else self.held[head] + gains - lost
            if newly:  # readers evaluate afresh
                held[head] = (count, None, started[head])
            elif gains or lost:
                held[head] = (count, _Change(gained if gains else None,
                                             gone if lost else None), started[head])
            else:
                held[head] = (count, None, None)
        if incremental:
            for head, rows in derived.items():
                if head in holding:
                    continue
                if removed is None:
                    changes[head] = (rows, set())
                    continue
                assert rederived is not None
                back = rows_of(rederived[head]) if head in rederived else set()
                gone = rows_of(removed[head]) - minus.get(head, set())  # the store has them
                changes[head] = ((rows | back) - gone, gone - rows - back)
            return changes, resident, held
        for head, rows in derived.items():
            if head in holding:
                continue
            rows |= store.asserted(head)
            stored = store.rows(head)
            changes[head] = (rows - stored, stored - rows)
        return changes, resident, held

    def _overdelete(self, spark: SparkSession, translate: Translator,
                    rules: list[p.RulePlan], before: _Resident, came: Mapping[str, DataFrame],
                    lost: Mapping[str, DataFrame], store: Any) -> dict[str, DataFrame] | None:
        """DRed's first phase, on the resident tables as they were before the step: every
        head row with a derivation through a removed row (``lost``: relation -> the rows
        that went), or through a row that came to a relation a rule negates (``came``);
        the removed rows of the heads among them; asserted rows stay. None when that
        passes a quarter of the heads' rows (in a cycle it removes nearly everything:
        evaluating afresh is cheaper)."""
        heads = sorted({rule.head for rule in rules})
        prior = {**before.inputs, **before.totals}
        removed = {head: lost[head] if head in lost else frame_of(spark, set(),
                                                                  self.arity[head])
                   for head in heads}
        delta = {name: frame for name, frame in lost.items() if name in prior}
        asserted = {head: frame_of(spark, store.asserted(head), self.arity[head])
                    for head in heads if store.asserted(head)}
        budget = max(Fixpoint.RECOMPUTE_MIN, sum(  # as the local backend counts
            self.held.get(head, len(store.rows(head)) - len(store.asserted(head)))
            for head in heads) // 4)
        while delta or came:
            found: dict[str, list[DataFrame]] = {head: [] for head in heads}
            for rule in rules:
                for trigger in rule.triggers:
                    seeds = came if trigger.negated else delta
                    if trigger.delete is not None and trigger.relation in seeds:
                        found[rule.head].append(translate.run(
                            trigger.delete, seeds[trigger.relation], prior))
            delta, came = {}, {}
            for head, outputs in found.items():
                if not outputs:
                    continue
                typed = _unify([prior[head], removed[head], *outputs], head)
                rows = _intersect(_union(typed[2:], head), typed[0])
                rows = _difference(rows, typed[1])
                if head in asserted:
                    rows = _difference(rows, asserted[head])
                rows = rows.localCheckpoint(eager=True)
                count = rows.count()
                if count:
                    budget -= count
                    delta[head] = rows
                    removed[head] = _compact(_union([typed[1], rows], head), self.PARTITIONS)
            if budget < 0:
                return None
        return removed

    def _rederive(self, translate: Translator, rules: list[p.RulePlan],
                  removed: Mapping[str, DataFrame], every: Mapping[str, DataFrame],
                  ) -> dict[str, DataFrame]:
        """DRed's second phase: the removed rows that a rule derives still, from what is
        left (``every``)."""
        from pyspark.sql import functions as F

        found: dict[str, list[DataFrame]] = {}
        some = {head for head, frame in removed.items() if not frame.isEmpty()}
        for rule in rules:
            plan = rule.rederive
            if plan is None or rule.head not in some:
                continue
            seed = plan.driver
            assert isinstance(seed, p.Seed)
            seeds = removed[rule.head].select(
                *(F.col(f"c{column}").alias(f"s{i}") for i, column in enumerate(seed.columns)))
            rows = translate.run(plan, seeds.distinct(), every)
            typed = _unify([removed[rule.head], rows], rule.head)
            found.setdefault(rule.head, []).append(_intersect(typed[1], typed[0]))
        return {head: _union(frames, head).distinct().localCheckpoint(eager=True)
                for head, frames in found.items()}

    def _starts(self, spark: SparkSession, head: str, started: dict[str, DataFrame],
                before: _Resident | None, store: Any, plus: Mapping[str, set[Row]],
                minus: Mapping[str, set[Row]]) -> bool:
        """Put in ``started`` a head's rows before this evaluation (a DataFrame evaluated
        only when used); False when Spark cannot hold them as they are."""
        try:
            if head in self.held:
                started[head] = self.current(head)
            elif before is not None:
                started[head] = self._applied(spark, before.totals[head], head, plus, minus,
                                              False)
            else:
                started[head] = frame_of(spark, store.rows(head), self.arity[head])
        except Unsupported:
            return False
        return True

    def groups(self, rule: p.RulePlan, store: Any) -> dict[tuple, Row] | None:
        """An aggregate rule's groups (key -> row) evaluated on Spark, or None: the rule
        runs locally (see ``local_rules``)."""
        assert rule.aggregation is not None
        if not (self._possible(rule.index, self.never[1], self.local_rules)
                and self._wanted(rule.label, [rule], store)):
            return None
        rows = self._attempt(rule.index, self.local_rules,
                             lambda spark: self._groups(spark, rule, store))
        if rows is None:
            return None
        group = rule.aggregation.group
        return {tuple(row[i] for i in group): row for row in rows}

    def _udf(self, function: str) -> tuple[str, str] | None:
        """The registered Python UDF (its SQL name and Spark type) of a user function, or
        of a built-in run as one (``<name>``: runtime/sparklist.py); None for a built-in
        Spark SQL has. A user function runs on Spark's workers: docs/spark.md says what
        that asks of it."""
        from overlog.runtime import sparkudf

        builtin = function.startswith("<")
        if not builtin and function not in self.user:
            return None
        found = self._udfs.get(function)
        if found is None:
            if builtin:
                bare = function[1:-1]
                kind = {sparklist.MAKE: "binary", sparklist.TOSTR: "string"}.get(
                    bare) or sparklist.FUNCTIONS[bare]
                work = sparklist.udf(bare, kind)
            else:
                kind = return_type(self.user[function])  # type: ignore[assignment]
                assert kind is not None  # see static_reason
                work = sparkudf.scalar(function, self.user[function], kind)
            name = f"overlog_udf{next(_UDF_NAMES)}"
            session(self.master, self.conf).udf.register(name, work, kind)
            found = self._udfs[function] = (name, kind)
        return found

    def _groups(self, spark: SparkSession, rule: p.RulePlan, store: Any) -> set[Row]:
        from pyspark.sql import functions as F

        aggregation = rule.aggregation
        assert aggregation is not None
        reads = set().union(*(p.plan_relations(plan) for _, plan in rule.plans()))
        frames = {name: frame_of(spark, store.rows(name), self.arity[name])
                  for name in sorted(reads)}
        translate = Translator(spark, self._udf, self.now)
        driver = aggregation.groups.driver
        if isinstance(driver, p.Scan):  # a group column is an expression: the whole rule
            seeds = frames[driver.relation]
        else:  # the group keys of every binding, as the seeds' variables
            assert isinstance(driver, p.Seed)
            first = next((t for t in rule.triggers if not t.negated), None)
            if first is None:
                raise Unsupported("an aggregate over no atom")
            keys = translate.run(first.insert, frames[first.relation], frames).distinct()
            seeds = keys.select(*(F.col(f"c{column}").alias(f"s{i}")
                                  for i, column in enumerate(driver.columns)))
        return rows_of(translate.run(aggregation.groups, seeds, frames))
