"""Tables: rows, hash indexes maintained incrementally, assertions, and per-step net changes.

Every mutation goes through ``Table.add`` / ``Table.remove`` (and ``assert_row`` /
``retract_row``), which keep the indexes, the step's net changes and the undo journal in step.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

Row = tuple
EMPTY: frozenset = frozenset()


def index_key(row: Row, cols: tuple[int, ...]) -> Any:
    """The index key of a row: the bare value for one column, else a tuple."""
    if len(cols) == 1:
        return row[cols[0]]
    return tuple(row[c] for c in cols)


def _index_rows(idx: dict[Any, set[Row]], cols: tuple[int, ...], rows: Iterable[Row]) -> None:
    """Add ``rows`` to the index ``idx`` on ``cols`` (a hot loop: one column is special-cased)."""
    get = idx.get
    if len(cols) == 1:
        c = cols[0]
        for row in rows:
            k = row[c]
            bucket = get(k)
            if bucket is None:
                idx[k] = {row}
            else:
                bucket.add(row)
    else:
        for row in rows:
            k = tuple(row[i] for i in cols)
            bucket = get(k)
            if bucket is None:
                idx[k] = {row}
            else:
                bucket.add(row)


class Journal:
    """Undo log of one step: a list of inverse operations, replayed backwards on rollback."""

    __slots__ = ("entries",)

    def __init__(self) -> None:
        self.entries: list[tuple[Callable[[Any], Any], Any]] = []

    def rollback(self) -> None:
        entries, self.entries = self.entries, []
        for undo, arg in reversed(entries):  # the undos journal into a list thrown away
            undo(arg)
        self.entries = []


class Table:
    """One relation's tuples. ``rows`` is what is visible; ``asserted`` what facts, inserts and
    event rules put there (the rest is derived by view rules)."""

    def __init__(self, name: str, arity: int, event: bool, keys: tuple[int, ...],
                 journal: Journal) -> None:
        self.name = name
        self.arity = arity
        self.event = event
        self.keys = keys
        self.keyed = not event and len(keys) < arity
        self.rows: set[Row] = set()
        self.asserted: set[Row] = set()
        self.indexes: dict[tuple[int, ...], dict[Any, set[Row]]] = {}
        self.added: set[Row] = set()  # net changes of the current step
        self.removed: set[Row] = set()
        self.journal = journal
        if self.keyed:
            self.index(keys)

    def __repr__(self) -> str:
        return f"Table({self.name}, {len(self.rows)} rows)"

    def index(self, cols: tuple[int, ...]) -> dict[Any, set[Row]]:
        """The hash index on ``cols``, built on first use and maintained afterwards."""
        found = self.indexes.get(cols)
        if found is None:
            found = {}
            _index_rows(found, cols, self.rows)
            self.indexes[cols] = found
        return found

    def holder(self, row: Row) -> Row | None:
        """The visible row holding ``row``'s key, if the table is keyed."""
        if not self.keyed:
            return row if row in self.rows else None
        bucket = self.indexes[self.keys].get(index_key(row, self.keys))
        return next(iter(bucket)) if bucket else None

    # -- mutations (journaled) ------------------------------------------------------------

    def add(self, row: Row) -> None:
        self.rows.add(row)
        for cols, idx in self.indexes.items():
            _index_rows(idx, cols, (row,))
        if self.event or row not in self.removed:
            self.added.add(row)
        else:
            self.removed.discard(row)
        self.journal.entries.append((self.remove, row))

    def remove(self, row: Row) -> None:
        self.rows.discard(row)
        for cols, idx in self.indexes.items():
            k = index_key(row, cols)
            bucket = idx[k]
            bucket.discard(row)
            if not bucket:
                del idx[k]
        if self.event or row in self.added:
            self.added.discard(row)
        else:
            self.removed.add(row)
        self.journal.entries.append((self.add, row))

    def add_new(self, new: set[Row]) -> None:
        """Add rows known to be absent, as set operations (the fixpoint's hot path)."""
        self.rows |= new
        for cols, idx in self.indexes.items():
            _index_rows(idx, cols, new)
        back = self.removed & new if (self.removed and not self.event) else None
        if back:
            self.removed -= back
            self.added |= new - back
        else:
            self.added |= new
        self.journal.entries.append((self._remove_each, new))

    def _remove_each(self, rows: Iterable[Row]) -> None:
        for row in rows:
            self.remove(row)

    def assert_row(self, row: Row) -> None:
        self.asserted.add(row)
        self.journal.entries.append((self.asserted.discard, row))

    def retract_row(self, row: Row) -> None:
        self.asserted.discard(row)
        self.journal.entries.append((self.asserted.add, row))

    def clear_step(self) -> None:
        """Forget the net changes of the last step (not journaled: done between steps)."""
        self.added = set()
        self.removed = set()

    def end_events(self) -> None:
        """Start a step for an event table: last step's events become ``removed`` (views
        that negate them react), and the table is emptied (not journaled)."""
        self.removed = self.rows
        self.rows = set()
        self.added = set()
        self.indexes = {cols: {} for cols in self.indexes}
