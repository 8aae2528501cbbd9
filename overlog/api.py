"""The public API (``import overlog``): the engine with the standard library installed, and
``compile_program`` checking native handlers against it.

This is the top layer: language <- runtime <- stdlib <- this module and the CLI.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from overlog import compile as _compile
from overlog import csvio, parquetio
from overlog.compile import NativeResolver
from overlog.plan import ProgramPlan
from overlog.runtime import engine as _engine
from overlog.runtime.events import Handler
from overlog.stdlib import Natives, default_handlers


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
        elif hasattr(frame, "isna") and hasattr(frame, "columns"):  # pandas
            columns = [frame[name].astype(object).where(frame[name].notna(), None).tolist()
                       for name in frame.columns]
        else:
            raise TypeError(f"insert_dataframe takes a Spark or pandas DataFrame, not "
                            f"{type(frame).__name__}")
        if len(columns) != rel.arity:
            raise ValueError(f"`{relation}` has {rel.arity} fields; the DataFrame has "
                             f"{len(columns)} columns")
        rows = [self._row(rel, row) for row in zip(*columns, strict=True)]
        self._queue(rel, rows)
        return len(rows)

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
