"""Over-deletion with a support check in recursive strata (runtime/seminaive.py,
``_overdelete_checked``): a row whose derivation from older rows remains is not removed, so a
deletion in a strongly connected closure removes little; and the births it relies on
survive rolled-back steps and the compaction of long histories."""

from __future__ import annotations

import random

import pytest

from overlog import Engine
from overlog.analysis import Relation
from overlog.runtime.store import LocalStore, Table

TC = "reach(X, Y) :- link(X, Y).\nreach(X, Z) :- link(X, Y), reach(Y, Z).\n"
# the same closure read twice in one rule (non-linear), and a view over it in the stratum
TC2 = ("path(X, Y) :- link(X, Y).\npath(X, Z) :- path(X, Y), path(Y, Z).\n"
       "two(X, Z) :- path(X, Y), link(Y, Z), X != Z.\n")


def _closure(edges: set[tuple]) -> set[tuple]:
    reach = set(edges)
    while True:
        more = {(x, w) for x, y in reach for v, w in edges if v == y} - reach
        if not more:
            return reach
        reach |= more


def _evaluated(program: str, edges: set[tuple]) -> Engine:
    """An engine of ``program`` with ``edges`` in `link`, run to idle."""
    engine = Engine(program)
    for edge in edges:
        engine.insert("link", edge)
    engine.run()
    return engine


def _overdeleted(engine: Engine) -> int:
    """Rows removed by over-deletion in the last step (rederived ones included)."""
    return engine._fixpoint.overdeleted_rows  # type: ignore[union-attr]


def test_a_deletion_in_a_cycle_removes_only_what_lost_its_support() -> None:
    # a ring with a chord: cutting 0->1 leaves 0 -> 2 -> ... so only pairs whose every
    # shortest path used 0->1 lose their support; plain DRed removes the whole closure
    n = 30
    edges = {(i, (i + 1) % n) for i in range(n)} | {(0, 2)}
    engine = _evaluated(TC, edges)
    engine.delete("link", (0, 1))
    engine.run()
    assert set(engine.rows("reach")) == _closure(edges - {(0, 1)})
    # reach(X, 1) for every X (only 0->1 enters 1): 30 rows, and nothing else
    assert _overdeleted(engine) == n


@pytest.mark.parametrize("program, relation", [(TC, "reach"), (TC2, "path")],
                         ids=["linear", "non-linear"])
def test_long_histories_and_deletions_match_the_closure(program: str, relation: str) -> None:
    """Edges come one step at a time (more generations than are kept: they are merged,
    and a row may then rest on rows of its own generation), then go in random order."""
    rng = random.Random(7)
    edges = [(rng.randrange(12), rng.randrange(12)) for _ in range(120)]
    engine = Engine(program)
    present: set[tuple] = set()
    for edge in edges:
        engine.insert("link", edge)
        present.add(edge)
        engine.run()
    assert len(engine.store.table(relation).gens) <= Table.MAX_GENS  # type: ignore[arg-type]
    assert set(engine.rows(relation)) == _closure(present)
    order = sorted(present)
    rng.shuffle(order)
    for i, edge in enumerate(order):
        engine.delete("link", edge)
        present.discard(edge)
        if i % 3 == 0:  # and some come back
            again = rng.choice(edges)
            engine.insert("link", again)
            present.add(again)
        engine.run()
        assert set(engine.rows(relation)) == _closure(present), edge
        if relation == "path":
            assert set(engine.rows("two")) == {(x, z) for x, y in _closure(present)
                                               for v, z in present if v == y and x != z}


def _store() -> LocalStore:
    store = LocalStore({"r": Relation(name="r", arity=2, event=False, keys=(0, 1))})
    store.track("r")
    return store


def _births(store: LocalStore) -> dict[tuple, int]:
    """Each present row's birth: the newest generation holding it."""
    born = {}
    for tick, members in store.births("r"):
        born.update((row, tick) for row in members if row in store.rows("r"))
    return born


def test_a_rolled_back_step_leaves_births_as_they_were() -> None:
    store = _store()
    store.begin_step()
    store.tick()
    store.add_many("r", {(1, 2), (2, 3)})
    store.tick()
    store.add_many("r", {(1, 3)})
    store.commit()
    store.end_step()
    before = _births(store)
    assert before[(1, 3)] > before[(1, 2)]
    # a step removes rows and adds them again (born anew), then rolls back
    store.begin_step()
    store.remove_many("r", {(1, 2), (1, 3)})
    store.tick()
    store.add_many("r", {(1, 2)})
    store.add("r", (1, 3))
    assert _births(store)[(1, 2)] > before[(1, 3)]
    store.rollback()
    assert _births(store) == before
    # and to a mark, in the middle of a step
    store.begin_step()
    mark = store.mark()
    store.remove("r", (1, 2))
    store.tick()
    store.add("r", (1, 2))
    store.rollback_to(mark)
    assert _births(store) == before


def test_rows_of_a_relation_tracked_late_have_no_birth_and_it_is_not_ordered() -> None:
    store = LocalStore({"r": Relation(name="r", arity=2, event=False, keys=(0, 1))})
    store.add_many("r", {(1, 2)})
    store.track("r")
    assert not store.ordered("r")
    assert store.births("r") == []


def test_compaction_merges_neighbours_into_equal_generations_then_drops_removed_rows(
        ) -> None:
    store = _store()
    table = store.table("r")
    store.tick()
    store.add_many("r", {(0, i) for i in range(1000)})  # one big generation
    for i in range(Table.MAX_GENS + 5):
        store.tick()
        store.add("r", (1, i))
    store.remove_many("r", {(1, 0), (1, 1)})
    store.end_step()
    # 1,067 rows into 32 generations of about 33: the large one alone, the small ones by 34
    assert [tick for tick, _ in store.births("r")] == [1, 2, 36, 70]
    assert store.births("r")[0] == (1, {(0, i) for i in range(1000)})  # kept apart
    # the removed rows stay in theirs (until they are as many as the rows present)
    assert set().union(*(m for _, m in store.births("r")[1:])) == {
        (1, i) for i in range(Table.MAX_GENS + 5)}
    assert table.rows == {(0, i) for i in range(1000)} | {
        (1, i) for i in range(2, Table.MAX_GENS + 5)}
    assert _births(store)[(1, 40)] == 36
    store.remove_many("r", {(0, i) for i in range(600)})
    store.tick()
    store.add_many("r", {(2, i) for i in range(20_000)})
    store.remove_many("r", {(2, i) for i in range(20_000)})
    store.end_step()  # 21,069 rows in generations for 467 present: only those stay
    assert [(tick, len(members)) for tick, members in store.births("r")] == [
        (1, 400), (2, 32), (36, 34), (70, 1)]


def test_rows_that_came_back_all_at_once_are_over_deleted_in_full_until_evaluated_afresh(
        ) -> None:
    n = 30
    edges = {(i, (i + 1) % n) for i in range(n)} | {(0, 2)}
    engine = _evaluated(TC, edges)
    store = engine.store
    store.take_back("reach", set(store.rows("reach")))  # as rows coming back from Spark do
    store.commit()
    assert not store.ordered("reach")
    engine._fixpoint.RECOMPUTE_MIN = 0  # type: ignore[union-attr]
    engine.delete("link", (5, 6))
    engine.run()
    edges.discard((5, 6))
    assert set(engine.rows("reach")) == _closure(edges)
    # plain DRed went past a quarter of the closure: evaluated afresh, in order again
    assert _overdeleted(engine) > len(_closure(edges)) // 4
    assert store.ordered("reach")
    into_1 = {row for row in engine.rows("reach") if row[1] == 1}
    engine.delete("link", (0, 1))
    engine.run()
    assert set(engine.rows("reach")) == _closure(edges - {(0, 1)})
    assert _overdeleted(engine) == len(into_1) == 25  # 0 and 6..29 (cut at 5->6)


def test_generations_merge_alike_in_every_relation_so_a_cycle_cannot_hold_itself() -> None:
    """Mutual recursion: `a` has more generations than are kept and `b` does not. Merged
    by a map of its own, a(900) would count as born before b(800), which it rests on,
    and would hold b(800) once nothing else does."""
    engine = Engine("a(X) :- s(X).\nb(X) :- t(X).\n"
                    "a(Y) :- b(X), ba(X, Y).\nb(Y) :- a(X), ab(X, Y).\n")
    for i in range(40):
        engine.insert("s", (i,))
        engine.run()
    engine.insert("t", (800,))
    engine.run()
    engine.insert("ba", (800, 900))
    engine.insert("ab", (900, 800))
    engine.run()
    for i in range(30):
        engine.insert("s", (100 + i,))
        engine.insert("t", (200 + i,))
        engine.run()
    engine.delete("t", (800,))
    engine.run()
    assert set(engine.rows("a")) == {(i,) for i in [*range(40), *range(100, 130)]}
    assert set(engine.rows("b")) == {(i,) for i in range(200, 230)}


def test_a_step_that_fails_as_a_whole_leaves_births_as_they_were() -> None:
    """The failed step removed and asserted p(1, 2) again (born anew in the step): its
    rollback must forget that birth, or p(1, 3) would not be checked when p(1, 2) goes."""
    engine = Engine("p(X, Y) :- e(X, Y).\np(X, Z) :- p(X, Y), e(Y, Z).\nzz(X) :- z(X).\n",
                    max_tuples=50)
    engine.insert("e", (1, 2))
    engine.run()
    engine.insert("e", (2, 3))
    engine.run()
    engine.delete("p", (1, 2))
    engine.insert("p", (1, 2))
    for i in range(100):
        engine.insert("z", (i,))
    assert [e.code for report in engine.run() for e in report.errors] == ["E307"]
    assert set(engine.rows("p")) == {(1, 2), (1, 3), (2, 3)}
    engine.delete("e", (1, 2))
    engine.run()
    assert set(engine.rows("p")) == {(2, 3)}


def test_a_deep_cascade_goes_on_unchecked_with_everything_still_to_check() -> None:
    """Cutting a chain near its start marks one row per generation and keeps none: the check
    gives up and over-deletion goes on without it, from the rows marked and from those it
    had still to check (here the rows through the second cut, queued at the start)."""
    left = "reach(X, Y) :- link(X, Y).\nreach(X, Z) :- reach(X, Y), link(Y, Z).\n"
    edges = {(i, i + 1) for i in range(40)}
    engine = _evaluated(left, edges)
    engine.delete("link", (0, 1))
    engine.delete("link", (30, 31))
    engine.run()
    assert set(engine.rows("reach")) == _closure(edges - {(0, 1), (30, 31)})
