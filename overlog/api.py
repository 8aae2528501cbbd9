"""The public API (``import overlog``): the engine with the standard library installed, and
``compile_program`` checking native handlers against it.

This is the top layer: language <- runtime <- stdlib <- this module and the CLI.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, Sequence
from operator import itemgetter
from typing import Any

from overlog import compile as _compile
from overlog import csvio, parquetio
from overlog.compile import NativeResolver
from overlog.plan import ProgramPlan
from overlog.runtime import engine as _engine
from overlog.runtime.events import ANY, Handler
from overlog.runtime.report import HTML_ROWS, first_rows, html_tables, sorted_rows
from overlog.stdlib import Natives, default_handlers
from overlog.values import internal, internal_row


class Engine(_engine.Engine):
    """One Overlog node (docs/engine.md). ``handlers`` default to the standard library's
    (the ``periodic`` timers, the loopback transport). A program may bind the standard
    library's native handlers, and those of ``native_modules`` (the CLI's ``--native``;
    looked for on the import path, then in the current directory); ``natives`` replaces
    that policy with a resolver of your own."""

    def __init__(self, source: str | ProgramPlan, path: str | None = None, *,
                 handlers: Sequence[Handler] | None = None,
                 native_modules: Iterable[str] = (),
                 natives: NativeResolver | None = None, **options: Any) -> None:
        super().__init__(source, path,
                         handlers=default_handlers() if handlers is None else handlers,
                         natives=natives or Natives(native_modules, [os.getcwd()]), **options)

    def load(self, relation: str, path: str, *, header: bool = False) -> int:
        """Queue the rows of a CSV or Parquet file (by its extension; docs/csv.md) as inputs
        of the next step: inserts into a table, events of an event relation. Returns how
        many. Nothing is queued if any row is bad: CsvError or ParquetError (ValueErrors
        naming the file), UnreadableSource, TypeError or ValueError for a value. A file for
        a table Spark may hold is read by Spark, its rows staying there (docs/spark.md,
        "Relations held in Spark")."""
        rel = self._relation(relation)
        ext = os.path.splitext(path)[1]
        if ext in (".csv", ".parquet") and self.spark is not None and not rel.event:
            found = self.spark.file_input(relation, path, header)
            if found is not None:
                self._queue_frame(rel, found)
                return found.count
        if ext == ".csv":
            found = csvio.read_rows(path, rel.arity, header)
        elif ext == ".parquet":
            found = parquetio.read_rows(path, rel.arity)
        else:
            raise ValueError(f"{path}: load reads .csv and .parquet files")
        try:
            rows = [self._row(rel, row) for row in found]
        except (TypeError, ValueError) as error:
            if isinstance(error, (csvio.CsvError, parquetio.ParquetError)):
                raise
            raise type(error)(f"{path}: {error}") from None
        self._queue(rel, rows)
        return len(rows)

    def insert_dataframe(self, relation: str, frame: Any) -> int:
        """Queue the rows of a Spark or pandas DataFrame, its columns in order as the
        relation's fields, as inputs of the next step (inserts, or events of an event
        relation); pandas' missing values (None, NaN, NA, NaT) are null. Returns how many.
        Nothing is queued if any row is bad (TypeError or ValueError). A Spark DataFrame
        for a table Spark may hold stays in Spark (docs/spark.md, "Relations held in
        Spark")."""
        rel = self._relation(relation)
        if hasattr(frame, "toArrow") and self.spark is not None and not rel.event:
            found = self.spark.frame_input(relation, frame)
            if found is not None:
                self._queue_frame(rel, found)
                return found.count
        if hasattr(frame, "toArrow"):  # Spark
            columns = [column.to_pylist() for column in frame.toArrow().columns]
        elif hasattr(frame, "column_names") and hasattr(frame, "to_pylist"):  # pyarrow
            columns = [column.to_pylist() for column in frame.columns]
        elif hasattr(frame, "isna") and hasattr(frame, "columns"):  # pandas
            columns = [frame[name].astype(object).where(frame[name].notna(), None).tolist()
                       for name in frame.columns]
        else:
            raise TypeError(f"insert_dataframe takes a Spark or pandas DataFrame or a "
                            f"pyarrow Table, not {type(frame).__name__}")
        if len(columns) != rel.arity:
            raise ValueError(f"`{relation}` has {rel.arity} fields; the DataFrame has "
                             f"{len(columns)} columns")
        rows = [self._row(rel, row) for row in zip(*columns, strict=True)]
        self._queue(rel, rows)
        return len(rows)

    def query(self, query: str, pattern: Sequence[Any] | None = None) -> list[tuple]:
        """The rows of a relation that match, sorted. ``query`` names the relation, and
        ``pattern`` is a tuple of values and ``ANY`` (None: every row); or ``query`` is an
        atom as a rule body writes one, ``reach("a", X)``: values, variables and ``_``
        (a variable written twice matches the same value twice). A relation held in Spark
        or DuckDB is collected as ``rows`` does."""
        equal: list[tuple[int, int]] = []
        if pattern is None and not _NAME.fullmatch(query.strip()):
            query, pattern, equal = _atom_pattern(query)
        rel = self._relation(query.strip())
        if pattern is None:
            return self.rows(rel.name)
        if len(pattern) != rel.arity:
            raise ValueError(f"`{rel.name}` has {rel.arity} fields; the pattern has "
                             f"{len(pattern)}")
        wanted = [(i, internal(v)) for i, v in enumerate(pattern) if v is not ANY]
        if self.holder(rel.name) is not None:  # (held elsewhere: collected as rows() does)
            rows: Iterable[tuple] = map(internal_row, self.rows(rel.name))
        else:
            rows = self.store.rows(rel.name)
        # matched before sorting, the values compared as the engine holds them (1, 1.0
        # and true are three values)
        if wanted:
            key = itemgetter(*(i for i, _ in wanted))
            target = wanted[0][1] if len(wanted) == 1 else tuple(v for _, v in wanted)
            rows = [row for row in rows if key(row) == target]
        if equal:
            rows = [row for row in rows if all(row[i] == row[j] for i, j in equal)]
        return sorted_rows(rows)

    def insert_many(self, relation: str, rows: Any) -> int:
        """Queue inserts of many rows into a persistent relation: an iterable of tuples, or
        a pandas DataFrame, a pyarrow Table or a Spark DataFrame (its columns in order as
        the fields; see ``insert_dataframe``). Nothing is queued if any row is bad
        (TypeError or ValueError). Returns how many."""
        rel = self._persistent(relation)
        if _is_frame(rows):
            return self.insert_dataframe(relation, rows)
        if isinstance(rows, (str, bytes)) or not hasattr(rows, "__iter__"):
            raise TypeError(f"insert_many takes rows (an iterable of tuples) or a DataFrame, "
                            f"not {type(rows).__name__}")
        checked = [self._row(rel, row) for row in rows]
        self._queue(rel, checked)
        return len(checked)

    def to_pandas(self, relation: str, columns: Sequence[str] | None = None, *,
                  max_rows: int | None = _engine.ROWS_LIMIT) -> Any:
        """A relation's rows (sorted, as ``rows`` gives them) as a pandas DataFrame with
        columns ``c0``, ``c1``, ... or ``columns``; values are Python's (a list a tuple),
        in columns of dtype object unless all of one type. Needs pandas."""
        try:
            import pandas
        except ImportError:
            raise ImportError("to_pandas needs pandas: pip install pandas") from None
        rel = self._relation(relation)
        names = [f"c{i}" for i in range(rel.arity)] if columns is None else list(columns)
        if len(names) != rel.arity:
            raise ValueError(f"`{relation}` has {rel.arity} fields; {len(names)} column "
                             "names given")
        rows = self.rows(relation, max_rows=max_rows)
        columns = [[row[i] for row in rows] for i in range(rel.arity)]
        return pandas.DataFrame({name: _series(pandas, column)
                                 for name, column in zip(names, columns, strict=True)})

    def __repr__(self) -> str:
        count = len(self.plan.relations)
        return (f"<Engine {self.path}: {count} relation{'s' if count != 1 else ''}, step "
                f"{self.step_count}, time {self.now:g}>")

    def _repr_html_(self) -> str:
        """Jupyter's view: each relation's rows (the first ``HTML_ROWS``) as a table."""
        return html_tables(f"{self.path}: step {self.step_count}, time {self.now:g}", [
            (name, "event" if rel.event else "table", self.count(name) if not rel.event
             else len(self.store.rows(name)),
             self._preview(name))
            for name, rel in self.plan.relations.items() if not rel.builtin])

    def _preview(self, relation: str) -> list[tuple]:
        """The first HTML_ROWS rows, without sorting the relation."""
        holder = self.holder(relation)
        if holder is not None:  # (not collected to be shown, unless it is small)
            return self.rows(relation)[:HTML_ROWS] if holder.held[relation] <= HTML_ROWS \
                else []
        return first_rows(self.store.rows(relation), HTML_ROWS)

    def dataframe(self, relation: str) -> Any:
        """A persistent relation's rows now, as a Spark DataFrame with columns c0, c1, ...
        (one Spark type a column): a stratum's table that stays in Spark as it is, any
        other crossing as Arrow (one held in DuckDB through Python). Starts the Spark
        session (this engine's master and settings) if it is not running; ValueError for a
        table Spark cannot hold as it is (a column mixing types, a list, an int past 64
        bits)."""
        from overlog.runtime import spark

        rel = self._persistent(relation)
        strata = self.spark
        frame = strata.resident_frame(relation) if strata is not None else None
        if frame is None:
            session = spark.session(*((strata.master, strata.conf) if strata else ()))
            vector = self.vector  # (a relation held in DuckDB crosses through Python)
            rows = vector.collect(relation) if vector and relation in vector.held else \
                self.store.rows(relation)
            try:
                frame = spark.frame_of(session, rows, rel.arity)
            except spark.Unsupported as why:
                raise ValueError(f"`{relation}` cannot be a Spark DataFrame as it is: "
                                 f"{why}") from None
        if spark.has_lists(frame):  # (Spark holds them as bytes only the engine reads)
            raise ValueError(f"`{relation}` cannot be a Spark DataFrame as it is: a list "
                             "value")
        return frame


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _series(pandas: Any, values: list) -> Any:
    """A DataFrame column of values as rows() gives them: of pandas' type for a column of
    ints (that fit in 64 bits), floats, strings or booleans, else of objects (a null, a
    list, an int too large, mixed types: each value as it is)."""
    kinds = set(map(type, values))
    if len(kinds) == 1:
        kind = next(iter(kinds))
        if kind in (float, str, bool) or (kind is int and all(
                -2**63 <= v < 2**63 for v in values)):
            return pandas.Series(values, dtype=None if kind is not str else object)
    return pandas.Series(values, dtype=object)


def _is_frame(rows: Any) -> bool:
    """A Spark or pandas DataFrame or a pyarrow Table."""
    return hasattr(rows, "toArrow") or (hasattr(rows, "isna") and hasattr(rows, "columns")) \
        or (hasattr(rows, "column_names") and hasattr(rows, "to_pylist"))


def atom_values(text: str) -> tuple[str, tuple]:
    """The relation and row of an atom of values, ``link("a", "b")`` or ``ping["a"]`` (a
    trailing ``.`` allowed): what ``--why``, the REPL's inputs and questions name.
    ValueError for anything else (variables, expressions)."""
    from overlog import syntax as s
    from overlog.errors import CompileError
    from overlog.parser import parse
    from overlog.printer import format_term

    atom = text.strip().removesuffix(".").rstrip()
    try:
        program = parse(atom + ".", "<tuple>")
    except CompileError:
        program = None
    if program is None or len(program.statements) != 1 or len(program.facts) != 1:
        raise ValueError(f"not an atom of values: {atom} (write one as a fact has it: "
                         'link("a", "b"))')

    def value(term: Any) -> Any:
        if isinstance(term, s.Const):
            return term.value
        if isinstance(term, s.ListExpr):
            return tuple(value(item) for item in term.items)
        what = "a variable" if isinstance(term, (s.Var, s.Wildcard)) else "not a value"
        raise ValueError(f"`{format_term(term)}` is {what}: write a tuple of values")

    found = program.facts[0].atom
    return found.name, tuple(value(term) for term in found.args)


def _atom_pattern(text: str) -> tuple[str, tuple, list[tuple[int, int]]]:
    """A query atom's relation, pattern (values and ANY) and the pairs of fields a repeated
    variable makes equal. ValueError for anything but one atom of values, variables and
    ``_``."""
    from overlog import syntax as s
    from overlog.errors import CompileError
    from overlog.parser import parse

    try:
        rules = parse(f"__query() :- {text.strip().removesuffix('?')}.", "<query>").rules
    except CompileError:
        rules = []
    atom = rules[0].body[0] if len(rules) == 1 and len(rules[0].body) == 1 else None
    if not isinstance(atom, s.Atom) or atom.locs:
        raise ValueError(f"not a query: {text!r} (write an atom, such as reach(\"a\", X))")
    pattern: list[Any] = []
    first: dict[str, int] = {}
    equal = []
    for i, term in enumerate(atom.args):
        if isinstance(term, s.Var):
            pattern.append(ANY)
            if term.name in first:
                equal.append((first[term.name], i))
            first.setdefault(term.name, i)
        elif isinstance(term, s.Wildcard):
            pattern.append(ANY)
        else:
            pattern.append(_constant(term, text))
    return atom.name, tuple(pattern), equal


def _constant(term: Any, text: str) -> Any:
    from overlog import syntax as s

    if isinstance(term, s.Const):
        return term.value
    if isinstance(term, s.ListExpr):
        return tuple(_constant(item, text) for item in term.items)
    raise ValueError(f"not a query: {text!r} (its arguments are values, variables and _)")


def compile_program(source: str, path: str | None = None,
                    functions: Mapping[str, tuple[int, float]] | None = None, *,
                    defines: Mapping[str, Any] | None = None,
                    native_modules: Iterable[str] = (),
                    natives: NativeResolver | None = None,
                    dialect: str | None = None) -> ProgramPlan:
    """Parse, check and plan a program (see ``overlog.compile.compile_program``). Native
    handlers must be the standard library's or come from ``native_modules`` (which are not
    imported here), unless ``natives`` says otherwise. ``dialect``: "canonical", "p2",
    "jol", or None to read the program's pragma or detect it (docs/dialects.md)."""
    check = Natives(native_modules).check if natives is None else \
        _compile.natives_check(natives)
    return _compile.compile_program(source, path, functions, defines=defines, natives=check,
                                    dialect=dialect)
