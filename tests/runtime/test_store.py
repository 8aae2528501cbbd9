"""The table store against a model: after any sequence of journaled mutations, every index
equals one rebuilt from the rows, the step's net changes are exact, and a rollback restores
the table exactly."""

from __future__ import annotations

from collections import defaultdict

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from overlog.analysis import Relation
from overlog.runtime import store
from overlog.runtime.store import Journal, LocalStore, Table

COLUMNS = ((0,), (1,), (0, 2))
values = st.integers(0, 2)
rows = st.tuples(st.integers(0, 1), st.integers(0, 20), values)  # big buckets on column 0
operations = st.lists(st.one_of(
    st.tuples(st.just("add"), rows),
    st.tuples(st.just("remove"), rows),
    st.tuples(st.just("add_new"), st.sets(rows, max_size=30)),
    st.tuples(st.just("remove_many"), st.sets(rows, max_size=60)),
    st.tuples(st.just("assert_many"), st.lists(rows, max_size=30)),  # (repeats, too)
), max_size=40)


def _snapshot(table: Table) -> tuple:
    indexes = {cols: {k: sorted(v) for k, v in idx.items()}
               for cols, idx in table.indexes.items()}
    return set(table.rows), indexes, set(table.added), set(table.removed), set(table.asserted)


def check_indexes(table: Table) -> None:
    """Every index of ``table`` is the one built row by row from its rows."""
    for cols, idx in table.indexes.items():
        rebuilt = defaultdict(list)
        for row in table.rows:
            rebuilt[row[cols[0]] if len(cols) == 1 else tuple(row[c] for c in cols)].append(row)
        assert {k: sorted(v) for k, v in idx.items()} == {k: sorted(v) for k, v in
                                                          rebuilt.items()}
        assert all(len(bucket) == len(set(bucket)) for bucket in idx.values())


def _apply(table: Table, operation: str, arg) -> None:
    if operation == "add":
        if arg not in table.rows:
            table.add(arg)
    elif operation == "remove":
        if arg in table.rows:
            table.remove(arg)
    elif operation == "assert_many":
        table.assert_many(arg)
        assert set(arg) <= table.asserted & table.rows
    elif operation == "add_new":
        new = arg - table.rows
        if new:
            table.add_new(new)
    else:
        gone = arg & table.rows
        if gone:
            table.remove_many(gone)


@pytest.mark.parametrize("big_bucket", [3, store.BIG_BUCKET])
@settings(max_examples=300, deadline=None)
@given(st.sets(rows, max_size=40), operations, operations)
def test_store_matches_model(big_bucket, initial, step, failing_step) -> None:
    """With ``big_bucket`` 3, most buckets are sets; with the default, lists."""
    journal = Journal()
    default, store.BIG_BUCKET = store.BIG_BUCKET, big_bucket
    try:
        table = Table("t", 3, False, (0, 1, 2), journal)
        for cols in COLUMNS:
            table.index(cols)
    finally:
        store.BIG_BUCKET = default
    for row in initial:
        table.add(row)
    journal.entries.clear()
    table.clear_step()

    before = set(table.rows)
    for operation, arg in step:
        _apply(table, operation, arg)
        check_indexes(table)
    assert table.added == table.rows - before
    assert table.removed == before - table.rows
    journal.entries.clear()
    table.clear_step()

    saved = _snapshot(table)
    for operation, arg in failing_step:
        _apply(table, operation, arg)
    journal.rollback()
    assert _snapshot(table) == saved
    check_indexes(table)


def test_a_bucket_past_the_limit_becomes_a_set() -> None:
    journal = Journal()
    table = Table("t", 2, False, (0, 1), journal)
    index = table.index((0,))
    table.add_new({(1, i) for i in range(store.BIG_BUCKET)})
    table.add((2, 0))
    assert type(index[1]) is list and type(index[2]) is list
    table.add((1, -1))
    assert isinstance(index[1], set) and len(index[1]) == store.BIG_BUCKET + 1
    table.remove((1, 5))
    table.remove_many({(1, 6), (1, 7)})
    assert sorted(index[1]) == sorted({(1, i) for i in range(-1, store.BIG_BUCKET)}
                                      - {(1, 5), (1, 6), (1, 7)})
    # rows added at once to an empty table: its buckets are sized at the end
    table = Table("t", 2, False, (0, 1), journal)
    index, other = table.index((0,)), table.index((1,))
    table.add_new({(1, i) for i in range(store.BIG_BUCKET + 1)} | {(2, 0)})
    assert isinstance(index[1], set) and len(index[1]) == store.BIG_BUCKET + 1
    assert (index[2], type(other[0])) == ([(2, 0)], list)
    assert sorted(other[0]) == [(1, 0), (2, 0)]


def test_tables_indexed_alike_share_code_and_keep_their_own_rows() -> None:
    journal = Journal()
    one, two = (Table(name, 2, False, (0, 1), journal) for name in ("one", "two"))
    for table in (one, two):
        table.index((0,))
        table.index((1,))
    one.add_new({(1, 2), (1, 3)})
    two.add_new({(1, 4)})
    two.add((5, 2))
    assert _snapshot(one)[1] == {(0,): {1: [(1, 2), (1, 3)]},
                                 (1,): {2: [(1, 2)], 3: [(1, 3)]}}
    assert _snapshot(two)[1] == {(0,): {1: [(1, 4)], 5: [(5, 2)]},
                                 (1,): {2: [(5, 2)], 4: [(1, 4)]}}
    assert one._index_rows.__code__ is two._index_rows.__code__


def test_rows_filled_with_their_indexes_are_the_rows_added() -> None:
    """``fill`` adds generations of rows, ticking between them, and merges the indexes
    built elsewhere over them into the table's (a bucket past the limit becoming a set);
    they are kept up to date, and a rollback takes the rows out and puts the indexes back
    as they were."""
    relations = {"t": Relation(name="t", arity=2, event=False, keys=(0, 1))}
    tables = LocalStore(relations)
    tables.track("t")
    table = tables.tables["t"]
    table.index((0,))
    tables.add("t", (9, 9))
    tables.add("t", (1, -1))
    tables.commit()
    first = {(1, i) for i in range(store.BIG_BUCKET + 1)}
    tables.fill("t", [first, {(2, 0), (9, 8)}],
                {(0,): {1: sorted(first), 2: [(2, 0)], 9: [(9, 8)]}})
    index = table.indexes[(0,)]
    assert table.rows == first | {(9, 9), (1, -1), (2, 0), (9, 8)}
    assert isinstance(index[1], set) and len(index[1]) == store.BIG_BUCKET + 2
    assert (index[2], sorted(index[9])) == ([(2, 0)], [(9, 8), (9, 9)])
    births = tables.births("t")
    assert [rows for _, rows in births] == [{(9, 9), (1, -1)}, first, {(2, 0), (9, 8)}]
    assert births[1][0] < births[2][0]  # (ticked between them)
    tables.add("t", (3, 3))
    tables.remove("t", (1, 0))
    check_indexes(table)
    tables.rollback()
    assert (table.rows, table.added, table.removed) == ({(9, 9), (1, -1)},) * 2 + (set(),)
    assert {key: sorted(bucket) for key, bucket in table.indexes[(0,)].items()} == {
        1: [(1, -1)], 9: [(9, 9)]}
    tables.add("t", (1, 7))  # (the indexes put back are kept up to date)
    check_indexes(table)


def test_filled_rows_join_an_index_of_several_columns() -> None:
    journal = Journal()
    table = Table("t", 3, False, (0, 1, 2), journal)
    table.index((0, 2))
    table.add((1, 5, 2))
    table.fill([{(1, 6, 2), (2, 6, 2)}], {(0, 2): {(1, 2): [(1, 6, 2)], (2, 2): [(2, 6, 2)]}},
               lambda: None)
    check_indexes(table)
    assert sorted(table.indexes[(0, 2)][(1, 2)]) == [(1, 5, 2), (1, 6, 2)]


def test_an_aborted_step_restores_last_steps_events() -> None:
    store = LocalStore({"e": Relation(name="e", arity=2, event=True, keys=())})
    store.begin_step()
    store.add_many("e", {(1, "a"), (2, "b")})
    store.commit()
    store.end_step()
    store.begin_step()  # the next step: last step's events are its removed rows
    assert (store.rows("e"), store.removed("e")) == (set(), {(1, "a"), (2, "b")})
    store.table("e").index((1,))
    store.add("e", (3, "c"))
    store.abort_step()
    assert (store.rows("e"), store.added("e")) == ({(1, "a"), (2, "b")}, {(1, "a"), (2, "b")})
    assert store.table("e").index((1,)) == {"a": [(1, "a")], "b": [(2, "b")]}
    store.begin_step()  # and the step can start again
    assert store.removed("e") == {(1, "a"), (2, "b")}
