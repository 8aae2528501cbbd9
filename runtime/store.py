"""The local store: tables of rows, hash indexes maintained incrementally, assertions, and
per-step net changes; ``LocalStore`` is the ``Store`` of ``runtime/backend.py`` over them.

Every mutation goes through ``Table.add`` / ``Table.remove``, their batch forms ``add_new`` /
``remove_many`` (and ``assert_row`` / ``retract_row``), which keep the indexes, the step's net
changes and the undo journal in step. Rows are only added when absent and removed when
present: the callers check.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Collection, Iterable, Mapping
from functools import lru_cache
from operator import itemgetter
from types import CodeType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from overlog.analysis import Relation

Row = tuple
EMPTY: frozenset = frozenset()


def index_key(row: Row, cols: tuple[int, ...]) -> Any:
    """The index key of a row: the bare value for one column, else a tuple."""
    if len(cols) == 1:
        return row[cols[0]]
    return tuple(row[c] for c in cols)


class _SetBucket(set):
    """A large index bucket: a set (O(1) removal) that also takes ``append``, like the list
    buckets of small ones."""

    __slots__ = ()
    append = set.add


# Buckets are lists (appending is cheaper than hashing a tuple into a set) up to this size,
# so that removing one row by scanning stays cheap; larger ones become _SetBuckets.
BIG_BUCKET = 2048


def _key_source(cols: tuple[int, ...]) -> str:
    if len(cols) == 1:
        return f"row[{cols[0]}]"
    return "(" + "".join(f"row[{c}], " for c in cols) + ")"


def _make_indexer(indexes: dict[tuple[int, ...], dict]) -> Callable[[Iterable[Row]], None]:
    """A function adding rows to all of a table's indexes in one pass (a hot loop: the
    bucket lookups are inlined per index). Its globals hold the index dicts as ``ix0``,
    ``ix1``, ... in the order of ``indexes``: ``_rebind`` points it at others. Its
    ``bulk`` does the same for indexes that were empty, testing the buckets' sizes once at
    the end rather than at each row."""
    if not indexes:
        return _index_nothing
    namespace: dict[str, Any] = {"_SetBucket": _SetBucket, "_grown": _grown}
    for i, idx in enumerate(indexes.values()):
        namespace[f"ix{i}"] = idx
    exec(_indexer_code(tuple(indexes), BIG_BUCKET), namespace)
    add_rows = namespace["add_rows"]
    add_rows.bulk = namespace["add_bulk"]
    return add_rows


@lru_cache(maxsize=256)
def _indexer_code(layout: tuple[tuple[int, ...], ...], big: int) -> CodeType:
    """The compiled definitions of an indexer for indexes on ``layout``'s columns, whose
    buckets become sets past ``big`` rows (tables indexed alike, in this engine or
    another, share it)."""
    lines = ["def add_rows(rows):", "    for row in rows:"]
    for i, cols in enumerate(layout):
        lines += [f"        b = ix{i}[{_key_source(cols)}]",
                  "        b.append(row)",
                  f"        if len(b) > {big} and b.__class__ is list:",
                  f"            ix{i}[{_key_source(cols)}] = _SetBucket(b)"]
    lines += ["def add_bulk(rows):", "    for row in rows:"]
    lines += [f"        ix{i}[{_key_source(cols)}].append(row)" for i, cols in enumerate(layout)]
    lines += [f"    _grown(ix{i}, {big})" for i in range(len(layout))]
    return compile("\n".join(lines), "<indexer>", "exec")


def _grown(idx: dict[Any, list[Row]], big: int) -> None:
    """Make the buckets of ``idx`` past ``big`` rows sets (after a bulk load)."""
    if idx and max(map(len, idx.values())) > big:
        for key, bucket in idx.items():
            if len(bucket) > big and bucket.__class__ is list:
                idx[key] = _SetBucket(bucket)


def _index_nothing(rows: Iterable[Row]) -> None:
    """The indexer of a table without indexes."""


_index_nothing.bulk = _index_nothing  # type: ignore[attr-defined]


def _rebind(indexer: Callable, indexes: dict[tuple[int, ...], dict]) -> None:
    """Point an indexer made for indexes on the same columns, in the same order, at
    ``indexes`` (no new code: a table of events gets new indexes every step)."""
    namespace = indexer.__globals__
    for i, idx in enumerate(indexes.values()):
        namespace[f"ix{i}"] = idx


def _unindex(idx: dict[Any, list | _SetBucket], key: Any, row: Row) -> None:
    bucket = idx[key]
    if len(bucket) == 1:
        del idx[key]
    elif bucket.__class__ is _SetBucket:
        bucket.discard(row)
    elif bucket[-1] is row:  # the newest row (as when a step is rolled back)
        bucket.pop()
    else:
        bucket.remove(row)  # a scan of at most BIG_BUCKET rows


def _unindex_many(idx: dict[Any, list | _SetBucket], cols: tuple[int, ...],
                  gone: set[Row]) -> None:
    """Remove rows from an index bucket by bucket: a list bucket is filtered once, not
    scanned once per row."""
    by_key: defaultdict[Any, list[Row]] = defaultdict(list)
    key_of = itemgetter(*cols)  # the bare value for one column, like index_key
    for row in gone:
        by_key[key_of(row)].append(row)
    for key, rows in by_key.items():
        bucket = idx[key]
        if len(rows) == len(bucket):
            del idx[key]
        elif bucket.__class__ is list:
            if len(rows) == 1:
                _unindex(idx, key, rows[0])
            else:
                idx[key] = [row for row in bucket if row not in gone]
        else:
            bucket.difference_update(rows)


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

    def rollback_to(self, mark: int) -> None:
        """Undo what was journaled since ``mark`` (a length of ``entries``)."""
        kept, tail = self.entries[:mark], self.entries[mark:]
        self.entries = tail
        self.rollback()
        self.entries = kept


class Table:
    """One relation's tuples. ``rows`` is what is visible; ``asserted`` what facts, inserts and
    event rules put there (the rest is derived by view rules).

    A table whose rows a recursive stratum derives may also keep ``gens``, when its rows were
    born (``LocalStore.track``): [clock, rows added then, whether the set is the table's
    own], oldest first. The fixpoint ticks the store's clock before each round adds its
    rows, so a derived row has a derivation from rows born before it, or asserted. The
    round's own sets are kept (no cost per row); a row's birth is the newest generation
    holding it (rows removed since stay in theirs for a while). ``ordered`` says that
    every derived row has a generation and a derivation from rows of its generation or
    older: not so once rows came back from elsewhere (Spark)."""

    def __init__(self, name: str, arity: int, event: bool, keys: tuple[int, ...],
                 journal: Journal) -> None:
        self.name = name
        self.arity = arity
        self.event = event
        self.keys = keys
        self.keyed = not event and len(keys) < arity
        self.rows: set[Row] = set()
        self.asserted: set[Row] = set()
        # index columns -> key -> bucket of rows: a list (rows are only added when absent),
        # or a _SetBucket once it grows past BIG_BUCKET rows
        self.indexes: dict[tuple[int, ...], defaultdict[Any, list[Row]]] = {}
        self._index_rows = _make_indexer(self.indexes)
        # net changes of the current step: insertions are kept as the single rows added
        # plus the batches of the fixpoint's rounds, merged only when read (``added``)
        self._added: set[Row] = set()
        self._batches: list[set[Row]] = []
        self.removed: set[Row] = set()
        self.journal = journal
        self.gens: list[list] | None = None  # None: not tracked
        self.now = 0  # the store's clock, for ``gens``
        self.ordered = True
        if self.keyed:
            self.index(keys)

    def __repr__(self) -> str:
        return f"Table({self.name}, {len(self.rows)} rows)"

    def index(self, cols: tuple[int, ...]) -> dict[Any, list[Row]]:
        """The hash index on ``cols``, built on first use and maintained afterwards. Read it
        with ``get`` (a missing key must not create an empty bucket)."""
        found = self.indexes.get(cols)
        if found is None:
            found = defaultdict(list)
            _make_indexer({cols: found}).bulk(self.rows)  # type: ignore[attr-defined]
            self.indexes[cols] = found
            self._index_rows = _make_indexer(self.indexes)
        return found

    @property
    def added(self) -> set[Row]:
        """The rows added in the current step (and not removed since)."""
        if self._batches:
            self._merge_batches()
        return self._added

    def added_parts(self) -> list[set[Row]]:
        """``added`` as disjoint sets, without merging them."""
        return [part for part in (self._added, *self._batches) if part]

    def _merge_batches(self) -> None:
        for batch in self._batches:
            self._added |= batch
        self._batches = []

    def holder(self, row: Row) -> Row | None:
        """The visible row holding ``row``'s key, if the table is keyed."""
        if not self.keyed:
            return row if row in self.rows else None
        bucket = self.indexes[self.keys].get(index_key(row, self.keys))
        return next(iter(bucket)) if bucket else None

    # -- mutations (journaled) ------------------------------------------------------------

    def add(self, row: Row) -> None:
        self.rows.add(row)
        self._index_rows((row,))
        gens = self.gens
        if gens is not None:
            last = gens[-1] if gens else None
            if last is not None and last[0] == self.now and last[2]:
                last[1].add(row)
            else:
                gens.append([self.now, {row}, True])
        if self.event or row not in self.removed:
            self._added.add(row)
        else:
            self.removed.discard(row)
        self.journal.entries.append((self.remove, row))

    def remove(self, row: Row) -> None:
        self.rows.discard(row)
        for cols, idx in self.indexes.items():
            _unindex(idx, index_key(row, cols), row)
        if row in self._added:
            self._added.discard(row)
        elif self._batches and any(row in batch for batch in self._batches):
            self._merge_batches()
            self._added.discard(row)
        elif not self.event:  # an event table's rows are all added in the step
            self.removed.add(row)
        self.journal.entries.append((self.add, row))

    def add_new(self, new: set[Row], order: Iterable[Row] | None = None) -> None:
        """Add rows known to be absent, as set operations (the fixpoint's hot path);
        indexed in ``order`` (the same rows) where given."""
        self.rows |= new
        if len(self.rows) == len(new):  # (it was empty, and so were its indexes)
            self._index_rows.bulk(new if order is None else order)  # type: ignore[attr-defined]
        else:
            self._index_rows(new if order is None else order)
        if self.gens is not None:
            self.gens.append([self.now, new, False])
        back = self.removed & new if (self.removed and not self.event) else None
        batch = new
        if back:
            self.removed -= back
            batch = new - back
        if batch:
            self._batches.append(batch)
        self.journal.entries.append((self._undo_add_new, (new, batch, back)))

    def fill(self, generations: list[set[Row]],
             indexes: dict[tuple[int, ...], dict[Any, list[Row]]],
             tick: Callable[[], None]) -> None:
        """``add_new`` of each of ``generations`` (rows absent, born together; ``tick``
        before each: born after every row there), with ``indexes`` (for each of the
        table's index columns: key -> a list of the new rows holding it) merged into the
        table's own, instead of indexing the rows one by one. A bucket the new rows join
        is copied (a rollback puts the old indexes back as they were)."""
        assert set(indexes) == set(self.indexes)
        built = {}
        for cols, old in self.indexes.items():
            idx = built[cols] = defaultdict(list, old)
            for key, bucket in indexes[cols].items():
                held = old.get(key)
                if held is not None:
                    bucket = [*held, *bucket]
                idx[key] = _SetBucket(bucket) if len(bucket) > BIG_BUCKET else bucket
        self.journal.entries.append((self._set_indexes, self.indexes))
        self._set_indexes({})  # (a rollback takes the rows out of no index, then puts the
        for rows in generations:  # old ones back)
            tick()
            self.add_new(rows)
        self.journal.entries.append((self._set_indexes, {}))
        self._set_indexes(built)

    def _undo_add_new(self, args: tuple[set[Row], set[Row], set[Row] | None]) -> None:
        new, batch, back = args
        self._drop(new)
        if self._batches and self._batches[-1] is batch:
            self._batches.pop()
        else:  # rows of the batch were removed since (which merged the batches)
            self._added -= batch
        if back:
            self.removed |= back

    def remove_many(self, gone: set[Row]) -> None:
        """Remove rows known to be present, as set operations."""
        self._drop(gone)
        was_added = gone & self.added if self._added or self._batches else EMPTY
        if was_added:
            self._added -= was_added
        now_removed = EMPTY if self.event else gone - was_added
        if now_removed:
            self.removed |= now_removed
        self.journal.entries.append((self._undo_remove_many, (gone, was_added, now_removed)))

    def _drop(self, gone: set[Row]) -> None:
        """Take rows known to be present out of ``rows`` and the indexes (the step's net
        changes are the caller's). When most rows go, the rest are copied into a fresh set
        (a set emptied in place keeps its size, and lookups of absent rows probe through
        what was removed) and the indexes are rebuilt."""
        if len(gone) * 2 > len(self.rows):
            self.rows = self.rows - gone
        else:
            self.rows -= gone
        if len(gone) > len(self.rows):
            for idx in self.indexes.values():
                idx.clear()
            self._index_rows.bulk(self.rows)  # type: ignore[attr-defined]
        else:
            for cols, idx in self.indexes.items():
                _unindex_many(idx, cols, gone)

    def _undo_remove_many(self, args: tuple[set[Row], set[Row], set[Row]]) -> None:
        gone, was_added, now_removed = args
        self.rows |= gone
        self._index_rows(gone)
        self._added |= was_added
        self.removed -= now_removed

    def assert_row(self, row: Row) -> None:
        self.asserted.add(row)
        self.journal.entries.append((self.asserted.discard, row))

    def assert_many(self, rows: Collection[Row]) -> None:
        """Assert rows, adding those not visible yet (a batch of inserts)."""
        given = rows
        rows = set(rows)
        fresh = rows - self.asserted if self.asserted else rows  # (no set is changed
        if fresh:                                                # in place: shared)
            self.asserted |= fresh
            self.journal.entries.append((self.asserted.difference_update, fresh))
        if not self.rows:  # (indexed in the order given: the rows lie in memory so)
            if rows:
                self.add_new(rows, given if len(given) == len(rows) else None)
            return
        unseen = rows - self.rows
        if unseen:
            self.add_new(unseen)

    def retract_row(self, row: Row) -> None:
        self.asserted.discard(row)
        self.journal.entries.append((self.asserted.add, row))

    def assert_keyed(self, rows: list[Row]) -> bool:
        """Assert rows of a keyed table, each replacing (retracting and removing) the row
        holding its key, as set operations. False, having done nothing, when two of the
        rows share a key (applied one by one, the later one wins)."""
        keys = self.keys
        index = self.indexes[keys]
        column = keys[0] if len(keys) == 1 else None
        by_key = {row[column] if column is not None else tuple(row[c] for c in keys): row
                  for row in rows}
        if len(by_key) < len(rows):
            return False
        get = index.get
        replaced = set()
        for key, row in by_key.items():
            bucket = get(key)
            if bucket:
                holder = next(iter(bucket))
                if holder != row:
                    replaced.add(holder)
        if replaced:
            retracted = replaced & self.asserted
            if retracted:
                self.asserted -= retracted
                self.journal.entries.append((self.asserted.update, retracted))
            self.remove_many(replaced)
        self.assert_many(rows)
        return True

    MAX_GENS = 64

    def drop_removed(self) -> None:
        """Drop from ``gens`` the rows removed since they were born, when they are as many
        as the rows present (until then they cost only memory: a birth is looked up only
        for rows present)."""
        gens = self.gens
        if gens and sum(len(gen[1]) for gen in gens) > 2 * len(self.rows) + 4096:
            rows = self.rows
            gens[:] = [[tick, kept, True] for tick, members, _ in gens
                       if (kept := members & rows)]

    def merge_gens(self, start_of: Mapping[int, int]) -> None:
        """Merge ``gens`` by the intervals of the clock that ``start_of`` maps each tick to
        (the tick its interval starts at): the births of every tracked table move by the
        same order-keeping map, so that a row is never born after one derived from it."""
        merged: dict[int, list[list]] = {}
        for gen in self.gens:  # type: ignore[union-attr]
            merged.setdefault(start_of[gen[0]], []).append(gen)
        self.gens = [[tick, group[0][1], group[0][2]] if len(group) == 1 else
                     [tick, set().union(*(gen[1] for gen in group)), True]
                     for tick, group in merged.items()]

    def clear_step(self) -> None:
        """Forget the net changes of the last step (not journaled: done between steps)."""
        self._added = set()
        self._batches = []
        self.removed = set()

    def release(self, asserted: bool = False) -> None:
        """Let go of every row (and with ``asserted``, of the asserted rows too): they live
        elsewhere now (in Spark). Not a change of the step: its change sets stay."""
        if not self.rows and not (asserted and self.asserted):
            return
        before = (self.rows, self.indexes, self.asserted, self.ordered)
        self._take((set(), {cols: defaultdict(list) for cols in self.indexes},
                    set() if asserted else self.asserted, False))
        self.journal.entries.append((self._take, before))

    def drop_indexes(self) -> None:
        """Forget every index but the key's: each is built again when a plan next reads it
        (rows about to arrive in bulk from elsewhere are not indexed for nothing);
        journaled."""
        keep = {cols: idx for cols, idx in self.indexes.items()
                if self.keyed and cols == self.keys}
        if len(keep) < len(self.indexes):
            self.journal.entries.append((self._set_indexes, self.indexes))
            self._set_indexes(keep)

    def take_back(self, rows: set[Row], asserted: bool = False) -> None:
        """Hold ``rows`` again after ``release`` (all asserted, with ``asserted``): not a
        change of the step."""
        before = (self.rows, self.indexes, self.asserted, self.ordered)
        # only the key's index now: the others are built when a plan next reads them
        self._take((rows, {cols: defaultdict(list) for cols in self.indexes
                           if self.keyed and cols == self.keys},
                    set(rows) if asserted else self.asserted, False))
        self._index_rows(rows)
        self.journal.entries.append((self._take, before))

    def _take(self, state: tuple[set[Row], dict, set[Row], bool]) -> None:
        """Replace the rows (when they were born is not known: not ``ordered``)."""
        self.rows, indexes, self.asserted, self.ordered = state
        self._set_indexes(indexes)

    def _set_indexes(self, indexes: dict) -> None:
        if not indexes:
            self.indexes = indexes
            self._index_rows = _index_nothing
            return
        same = list(indexes) == list(self.indexes)
        self.indexes = indexes
        if same:
            _rebind(self._index_rows, indexes)
        else:
            self._index_rows = _make_indexer(indexes)

    @property
    def changed(self) -> bool:
        """Whether the table holds or lost rows (an event table: events to end)."""
        return bool(self.rows or self.removed or self._batches or self._added)

    def end_events(self) -> tuple:
        """Start a step for an event table: last step's events become ``removed`` (views
        that negate them react), and the table is emptied (not journaled). Returns what
        ``restore_events`` needs to undo it."""
        before = (self.rows, self.removed, self._added, self._batches, self.indexes)
        self.removed = self.rows
        self.rows = set()
        self._added = set()
        self._batches = []
        if self.indexes:
            self._set_indexes({cols: defaultdict(list) for cols in self.indexes})
        else:
            self.indexes = {}  # (a new dict: ``before`` keeps the old one)
        return before

    def restore_events(self, before: tuple) -> None:
        """Undo ``end_events`` (a step that never happened)."""
        self.rows, self.removed, self._added, self._batches, indexes = before
        for cols in self.indexes.keys() - indexes.keys():  # made in the step: build them
            indexes[cols] = defaultdict(list)
            _make_indexer({cols: indexes[cols]})(self.rows)
        self._set_indexes(indexes)


class LocalStore:
    """The ``Store`` protocol over one ``Table`` per relation, with one journal."""

    def __init__(self, relations: Mapping[str, Relation]) -> None:
        self.journal = Journal()
        self.tables = {name: Table(name, rel.arity, rel.event, rel.keys, self.journal)
                       for name, rel in relations.items()}
        self._events = [t for t in self.tables.values() if t.event]
        self._persistent = [t for t in self.tables.values() if not t.event]
        self._events_before: list[tuple[Table, tuple]] = []
        self.clock = 0  # ticks: see Table.gens
        self._tracked: list[Table] = []
        self._step_clock = 0  # the clock just before the step began
        self._marks: dict[int, int] = {}  # mark -> the clock then

    def table(self, relation: str) -> Table:
        return self.tables[relation]

    def rows(self, relation: str) -> set[Row]:
        return self.tables[relation].rows

    def asserted(self, relation: str) -> set[Row]:
        return self.tables[relation].asserted

    def matching(self, relation: str, columns: tuple[int, ...], key: Any,
                 ) -> Collection[Row] | None:
        index = self.tables[relation].indexes.get(columns)
        return None if index is None else index.get(key, EMPTY)

    def added(self, relation: str) -> set[Row]:
        return set().union(*self.tables[relation].added_parts())

    def changes(self, relations: Iterable[str]) -> tuple[dict[str, set[Row]], dict[str, set[Row]]]:
        added, removed = {}, {}
        tables = self.tables
        for name in relations:
            table = tables[name]
            added[name] = table._added.union(*table._batches)  # (a copy)
            removed[name] = table.removed.copy()
        return added, removed

    def removed(self, relation: str) -> set[Row]:
        return self.tables[relation].removed

    def step_changes(self) -> tuple[dict[str, list[set[Row]]], dict[str, list[set[Row]]],
                                    dict[str, list[set[Row]]]]:
        events = {table.name: [table.rows] for table in self._events if table.rows}
        inserted, deleted = {}, {}
        for table in self._persistent:
            if table._added or table._batches:
                inserted[table.name] = table.added_parts()
            if table.removed:
                deleted[table.name] = [table.removed]
        return events, inserted, deleted

    def holder(self, relation: str, row: Row) -> Row | None:
        return self.tables[relation].holder(row)

    def add(self, relation: str, row: Row) -> None:
        self.tables[relation].add(row)

    def add_many(self, relation: str, rows: set[Row]) -> None:
        self.tables[relation].add_new(rows)

    def remove(self, relation: str, row: Row) -> None:
        self.tables[relation].remove(row)

    def remove_many(self, relation: str, rows: set[Row]) -> None:
        self.tables[relation].remove_many(rows)

    def assert_row(self, relation: str, row: Row) -> None:
        self.tables[relation].assert_row(row)

    def assert_many(self, relation: str, rows: Collection[Row]) -> None:
        self.tables[relation].assert_many(rows)

    def retract_row(self, relation: str, row: Row) -> None:
        self.tables[relation].retract_row(row)

    def assert_keyed(self, relation: str, rows: list[Row]) -> bool:
        return self.tables[relation].assert_keyed(rows)

    def release(self, relation: str, asserted: bool = False) -> None:
        self.tables[relation].release(asserted)

    def take_back(self, relation: str, rows: set[Row], asserted: bool = False) -> None:
        self.tables[relation].take_back(rows, asserted)

    def drop_indexes(self, relation: str) -> None:
        self.tables[relation].drop_indexes()

    def index_columns(self, relation: str) -> list[tuple[int, ...]]:
        return list(self.tables[relation].indexes)

    def fill(self, relation: str, generations: list[set[Row]],
             indexes: dict[tuple[int, ...], dict[Any, list[Row]]]) -> None:
        self.tables[relation].fill(generations, indexes, self.tick)

    def on_rollback(self, undo: Callable[[Any], Any], arg: Any) -> None:
        self.journal.entries.append((undo, arg))

    def track(self, relation: str) -> None:
        """Keep when each row of ``relation`` is added (``Table.gens``); the rows it has now
        were added before: it is not ``ordered`` if some of them are derived."""
        table = self.tables[relation]
        if table.gens is None:
            table.gens = []
            table.now = self.clock
            table.ordered = table.rows <= table.asserted
            self._tracked.append(table)

    def tick(self) -> None:
        """Advance the clock: rows added from now on are born after every row there."""
        self.clock += 1
        for table in self._tracked:
            table.now = self.clock

    def births(self, relation: str) -> list[tuple[int, set[Row]]]:
        """A tracked relation's generations, oldest first: (clock, rows added then). A row
        present was born in the newest one holding it (none: asserted before tracking)."""
        gens = self.tables[relation].gens
        assert gens is not None, f"{relation} is not tracked"
        return [(gen[0], gen[1]) for gen in gens]

    def reset_births(self, relation: str) -> None:
        """Forget every generation (all the derived rows are about to go); journaled."""
        table = self.tables[relation]
        if table.gens:
            self.journal.entries.append((self._set_gens, (table, table.gens)))
            table.gens = []

    @staticmethod
    def _set_gens(args: tuple[Table, list[list]]) -> None:
        table, gens = args
        table.gens = gens

    def rebirth(self, relation: str, rows: set[Row]) -> None:
        """Rows present are born again now (a derivation younger than they are holds them);
        the store keeps ``rows``. Undone by a rollback, as every generation since."""
        gens = self.tables[relation].gens
        if gens is not None:
            gens.append([self.clock, rows, True])

    def ordered(self, relation: str) -> bool:
        return self.tables[relation].ordered

    def set_ordered(self, relation: str, ordered: bool) -> None:
        table = self.tables[relation]
        if table.ordered != ordered:
            table.ordered = ordered
            self.journal.entries.append((self._reorder, (table, not ordered)))

    @staticmethod
    def _reorder(args: tuple[Table, bool]) -> None:
        table, ordered = args
        table.ordered = ordered

    def rollback(self) -> None:
        self.journal.rollback()
        self._unborn(self._step_clock)

    def mark(self) -> int:
        mark = len(self.journal.entries)
        self._marks[mark] = self.clock
        self.tick()  # what is added after the mark is born after it
        return mark

    def rollback_to(self, mark: int) -> None:
        self.journal.rollback_to(mark)
        self._unborn(self._marks[mark])

    def _unborn(self, clock: int) -> None:
        """Forget the generations born after ``clock`` (rows removed and added again since
        are born when they were before)."""
        for table in self._tracked:
            gens = table.gens
            while gens and gens[-1][0] > clock:  # type: ignore[index]
                gens.pop()  # type: ignore[union-attr]

    def commit(self) -> None:
        self.journal.entries.clear()
        self._marks.clear()

    def begin_step(self) -> None:
        self._step_clock = self.clock
        self.tick()  # what the step adds is born after it began
        self._events_before = [(table, table.end_events()) for table in self._events
                               if table.changed]

    def abort_step(self) -> None:
        self.rollback()
        for table, before in self._events_before:
            table.restore_events(before)
        self._events_before = []

    def end_step(self) -> None:
        for table in self._persistent:
            if table._added or table._batches or table.removed:  # (others have nothing)
                table.clear_step()
        self._compact()

    def _compact(self) -> None:
        """Keep generations few: past Table.MAX_GENS in a table, the clock is cut into
        about half as many intervals holding about as many rows each (over every tracked
        table), and each table's generations in one interval merge, born at its start. A
        row may then rest on rows of its own generation, which the fixpoint allows for."""
        if not self._tracked:
            return
        tables = [table for table in self._tracked if table.gens]
        for table in tables:
            table.drop_removed()
        if not any(len(table.gens) > Table.MAX_GENS for table in tables):  # type: ignore
            return
        sizes: Counter = Counter()
        for table in tables:
            for tick, members, _ in table.gens:  # type: ignore[union-attr]
                sizes[tick] += len(members)
        share = sum(sizes.values()) / (Table.MAX_GENS // 2)
        start_of: dict[int, int] = {}
        first, size = 0, share
        for tick in sorted(sizes):
            if size >= share:
                first, size = tick, 0
            start_of[tick] = first
            size += sizes[tick]
        for table in tables:
            table.merge_gens(start_of)
