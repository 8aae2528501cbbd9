"""Recursive min and max (monotone aggregates): exact against the reference evaluator on
random weighted graphs with cycles, under inserts and deletes; step limits for programs that
improve without end; rollback."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from overlog import Engine
from overlog import plan as p
from overlog.api import compile_program
from overlog.plan import format_program_plan
from overlog.runtime.seminaive import Fixpoint, _best_first
from overlog.runtime.spark import placement
from overlog.runtime.store import LocalStore
from tests.runtime.reference import closure
from tests.runtime.test_store import check_indexes

TEMPLATES = [
    # the aggregate itself recursive, from an asserted row
    "dist(0, 0).\ndist(Y, min<C>) :- dist(X, C1), edge(X, Y, W), C := C1 + W.",
    # through a view, with a base rule
    "hop(Y, C) :- edge(0, Y, C).\nhop(Y, C) :- best(X, C1), edge(X, Y, W), C := C1 + W.\n"
    "best(X, min<C>) :- hop(X, C).",
    # two aggregate rules of one head, and a bound
    "near(Y, min<C>) :- edge(1, Y, C).\n"
    "near(Y, min<C>) :- near(X, C1), edge(X, Y, W), C := C1 + W, C1 < 4.",
    # widest paths: a recursive max
    "wide(Y, max<C>) :- edge(0, Y, C).\n"
    "wide(Y, max<C>) :- wide(X, C1), edge(X, Y, W), C := f_min(C1, W), C >= 1.",
    # a view reading the recursive min in the same cycle, and one reading it afterwards
    "far(Y, max<C>) :- edge(2, Y, C).\nreach(Y, C) :- far(Y, C).\n"
    "far(Y, max<C>) :- reach(X, C1), edge(X, Y, W), C := C1 - W - 1.\n"
    "ok(Y) :- reach(Y, C), C > 0.",
    # a group of two columns, one an expression
    "par(Y, Y % 2, min<C>) :- edge(3, Y, C).\n"
    "par(Z, Z % 2, min<C>) :- par(Y, _, C1), edge(Y, Z, W), C := C1 + W.",
    # a view reading the cycle twice (its stale rows are found by evaluating it again)
    "low(Y, min<C>) :- edge(4, Y, C).\nlow(Y, min<C>) :- pair(Y, C).\n"
    "pair(Y, C) :- low(X, C1), low(Y, _), edge(X, Y, W), C := C1 + W.",
]
BASE = {"dist": {(0, 0)}}

edges = st.tuples(st.integers(0, 4), st.integers(0, 4), st.integers(0, 3))
batches = st.lists(st.lists(st.tuples(st.sampled_from(["insert", "delete"]), edges),
                            min_size=1, max_size=5), min_size=1, max_size=6)


@pytest.mark.parametrize("recompute_min", [Fixpoint.RECOMPUTE_MIN, 0],
                         ids=["removals", "removals-or-afresh"])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(TEMPLATES), min_size=1, max_size=3, unique=True),
       st.lists(edges, max_size=8), batches)
def test_recursive_aggregates_match_reference(recompute_min, templates, initial,
                                              changes) -> None:
    """With ``recompute_min`` 0, removals that reach a quarter of the stratum's rows
    switch to evaluating it afresh (at every size)."""
    engine = Engine("\n".join(templates))
    graph = set(initial)
    for row in graph:
        engine.insert("edge", row)
    engine.step()
    engine._fixpoint.RECOMPUTE_MIN = recompute_min
    for batch in [[], *changes]:
        for op, row in batch:
            getattr(engine, op)("edge", row)
            (graph.add if op == "insert" else graph.discard)(row)
        reports = engine.run()
        assert all(not r.errors for r in reports), [str(e) for r in reports for e in r.errors]
        base = {"edge": set(graph), **{k: v for k, v in BASE.items() if k in engine.relations}}
        expected = closure(engine.checked.program, base)
        for name in engine.checked.relations:
            assert set(engine.rows(name)) == expected[name], name


SSSP = """dist(0, 0).
dist(Y, min<C>) :- dist(X, C1), edge(X, Y, W), C := C1 + W.
"""
VIEW_SSSP = """hop(Y, C) :- edge(0, Y, C).
hop(Y, C) :- best(X, C1), edge(X, Y, W), C := C1 + W.
best(Y, min<C>) :- hop(Y, C).
"""


def test_an_inserted_edge_improves_what_it_reaches() -> None:
    engine = Engine(SSSP)
    for row in [(0, 1, 5), (1, 2, 1), (2, 0, 1)]:
        engine.insert("edge", row)
    engine.run()
    assert sorted(engine.rows("dist")) == [(0, 0), (1, 5), (2, 6)]
    engine.insert("edge", (0, 2, 1))
    report, = engine.run()
    assert sorted(engine.rows("dist")) == [(0, 0), (1, 5), (2, 1)]
    assert report.deleted["dist"] == [(2, 6)]
    assert report.inserted["dist"] == [(2, 1)]
    engine.insert("edge", (0, 1, 9))  # no better: nothing changes
    report, = engine.run()
    assert report.inserted == {"edge": [(0, 1, 9)]} and report.deleted == {}


# d is found at 100 with a, b and c (1, 2, 3), and at 2 through a
BETTER_HALF = [(0, "a", 1), (0, "b", 2), (0, "c", 3), (0, "d", 100), ("a", "d", 1),
               ("d", "e", 1)]


def test_the_better_half_of_the_improvements_propagates_first() -> None:
    # d is found at 100 with a, b and c (1, 2, 3); the better part of those propagates
    # first (up to the mean, 26.5), which improves d to 2 before d propagates: e is found
    # once, at 3 (all at once, e would be found at 101, then at 3: 7 improvements)
    engine = Engine(SSSP)
    for row in BETTER_HALF:
        engine.insert("edge", row)
    report, = engine.run()
    assert report.firings == {"rule 1": 6}
    assert sorted(engine.rows("dist"), key=str) == [
        ("a", 1), ("b", 2), ("c", 3), ("d", 2), ("e", 3), (0, 0)]


def test_a_view_feeds_the_min_in_the_round_that_derives_its_rows() -> None:
    # the same graph through a view: the hop rows a round derives are best's candidates in
    # that round, so the better half is taken from them as in the recursive form (a round
    # later, d would propagate at 100 before its 2 came: e found twice, 7 improvements)
    engine = Engine(VIEW_SSSP)
    for row in BETTER_HALF:
        engine.insert("edge", row)
    report, = engine.run()
    assert report.firings == {"rule 1": 4, "rule 2": 2, "rule 3": 6}
    assert sorted(engine.rows("best"), key=str) == [
        ("a", 1), ("b", 2), ("c", 3), ("d", 2), ("e", 3)]
    assert sorted(engine.rows("hop"), key=str) == [
        ("a", 1), ("b", 2), ("c", 3), ("d", 100), ("d", 2), ("e", 3)]


def test_rows_improved_twice_in_a_step_change_the_table_once() -> None:
    # d goes 100 -> 13 (through c) -> 2 (through x, found a round later), e with it: the
    # table gets each group's last row when the stratum ends, and the step reports only
    # the net change
    engine = Engine(SSSP)
    for row in [(0, "a", 1), (0, "b", 2), (0, "c", 3), (0, "d", 100), ("d", "e", 1)]:
        engine.insert("edge", row)
    engine.run()
    for row in [("c", "d", 10), ("a", "x", 1), ("x", "d", 0)]:
        engine.insert("edge", row)
    report, = engine.run()
    assert report.firings == {"rule 1": 5}  # x; d at 13, e at 14; d at 2, e at 3
    assert report.deleted["dist"] == [("d", 100), ("e", 101)]
    assert report.inserted["dist"] == [("d", 2), ("e", 3), ("x", 2)]
    assert sorted(engine.rows("dist"), key=str) == [
        ("a", 1), ("b", 2), ("c", 3), ("d", 2), ("e", 3), ("x", 2), (0, 0)]
    check_indexes(engine.store.tables["dist"])


def test_the_improvements_go_into_the_table_when_the_loop_ends(monkeypatch) -> None:
    engine = Engine(SSSP)
    for row in [(0, "a", 1), (0, "b", 2), (0, "c", 3), (0, "d", 100), ("d", "e", 1)]:
        engine.insert("edge", row)
    engine.run()
    writes = []
    for name in ("add", "add_many", "remove", "remove_many"):
        method = getattr(LocalStore, name)
        monkeypatch.setattr(LocalStore, name, lambda self, relation, rows, method=method,
                            name=name: (writes.append((name, relation, rows)),
                                        method(self, relation, rows)))
    for row in [("c", "d", 10), ("a", "x", 1), ("x", "d", 0)]:
        engine.insert("edge", row)
    engine.run()  # d and e each improved twice, in three rounds: one write of each kind
    assert [(name, rows) for name, relation, rows in writes if relation == "dist"] == [
        ("remove_many", {("d", 100), ("e", 101)}), ("add_many", {("d", 2), ("e", 3), ("x", 2)})]


def test_repeated_candidates_count_once_against_the_tuple_limit() -> None:
    # 50 paths of cost 2 to z: one evaluation derives the candidate (z, 2) fifty times
    engine = Engine(SSSP, max_tuples=55)
    for i in range(1, 51):
        engine.insert("edge", (0, i, 1))
        engine.insert("edge", (i, "z", 1))
    report, = engine.run()
    assert report.errors == []
    assert sorted(engine.rows("dist"), key=str) == sorted(
        [(0, 0), ("z", 2), *((i, 1) for i in range(1, 51))], key=str)


@pytest.mark.parametrize(("values", "greater", "now"), [
    ([1, 2, 3, 4, 100], False, [1, 2, 3, 4]),  # at most the mean, 22
    ([1, 2, 3, 100], True, [100]),  # a max: at least the mean
    (["a", "b", "c", "d"], False, ["a", "b", "c"]),  # strings: up to the upper median
    ([10**400, 2 * 10**400, 3 * 10**400], False, [10**400, 2 * 10**400]),  # no float mean
    ([1.0, 2.0, 3.0, 1e308, 1e308], False, [1.0, 2.0, 3.0]),  # a sum past floats: median
    ([1, 2, math.inf], False, [1, 2]),  # an infinite mean: the upper median
    ([math.inf, -math.inf, 1], True, [math.inf, 1]),  # no mean at all (NaN): the median
    ([True, False, True], False, [False]),  # booleans add up
    ([1, "a", 2], False, [1, "a", 2]),  # values that do not compare: all now
])
def test_the_better_part_of_the_waiting_rows_propagates(values, greater, now) -> None:
    waiting = {(i,): (i, value) for i, value in enumerate(values)}
    rest = {key: row for key, row in waiting.items() if row[1] not in now}
    assert _best_first(waiting, (1, greater)) == {
        (i, value) for i, value in enumerate(values) if value in now}
    assert waiting == rest


def test_a_view_rule_without_atoms_fires_once_at_the_first_step() -> None:
    # (the rows derived from replaced ones go at the end without firing it again)
    engine = Engine("edge(0, 1, 5).\nedge(1, 2, 1).\nedge(0, 2, 9).\n"
                    "hop(Y, C) :- Y := 0, C := f_rand().\n"
                    "hop(Y, C) :- best(X, C1), edge(X, Y, W), C := C1 + W.\n"
                    "best(X, min<C>) :- hop(X, C).\n")
    engine.run()
    ((_, r),) = [row for row in engine.rows("hop") if row[0] == 0]
    assert engine.rows("best") == [(0, r), (1, r + 5), (2, r + 6)]
    assert sorted(engine.rows("hop")) == [(0, r), (1, r + 5), (2, r + 6), (2, r + 9)]


def test_a_view_reading_the_cycle_twice_keeps_nothing_a_waiting_row_derived() -> None:
    # low(16, 45) waits while the better half propagates; pair's second atom joins it all
    # the same (pair(10, 50)), and it improves to 2 before it propagates: what it derived
    # goes with it
    engine = Engine("low(Y, min<C>) :- edge(4, Y, C).\nlow(Y, min<C>) :- pair(Y, C).\n"
                    "pair(Y, C) :- low(X, C1), low(Y, _), edge(X, Y, W), C := C1 + W.\n")
    for row in [(4, 10, 1), (4, 11, 2), (4, 12, 3), (4, 13, 20), (4, 14, 30), (4, 15, 40),
                (4, 16, 45), (10, 16, 1), (16, 10, 5)]:
        engine.insert("edge", row)
    engine.run()
    assert engine.rows("pair") == [(10, 7), (16, 2)]
    assert engine.rows("low") == [(10, 1), (11, 2), (12, 3), (13, 20), (14, 30), (15, 40),
                                  (16, 2)]


def test_a_cut_edge_raises_distances() -> None:
    engine = Engine(SSSP)
    for row in [(0, 1, 1), (1, 2, 1), (0, 2, 5), (2, 3, 1)]:
        engine.insert("edge", row)
    engine.run()
    assert sorted(engine.rows("dist")) == [(0, 0), (1, 1), (2, 2), (3, 3)]
    engine.delete("edge", (1, 2, 1))
    engine.run()
    assert sorted(engine.rows("dist")) == [(0, 0), (1, 1), (2, 5), (3, 6)]
    engine.delete("edge", (0, 2, 5))
    engine.run()
    assert sorted(engine.rows("dist")) == [(0, 0), (1, 1)]


def test_a_negative_cycle_stops_at_the_step_limit_and_rolls_back() -> None:
    engine = Engine(SSSP, max_rounds=50)
    engine.insert("edge", (0, 1, 1))
    engine.run()
    engine.insert("edge", (1, 0, -2))
    error, = engine.run()[0].errors
    assert (error.code, error.message) == (
        "E307", "step limit: more than 50 rounds in one stratum (rule 1 keeps deriving "
        "`dist` tuples: 1 in the last round)")
    assert sorted(engine.rows("dist")) == [(0, 0), (1, 1)]
    assert sorted(engine.rows("edge")) == [(0, 1, 1)]
    engine.insert("edge", (1, 2, 3))  # the groups' rows and the table still agree
    engine.insert("edge", (0, 2, 5))
    assert engine.run()[0].errors == []
    assert sorted(engine.rows("dist")) == [(0, 0), (1, 1), (2, 4)]
    check_indexes(engine.store.tables["dist"])


def test_a_negative_cycle_through_a_view_stops_at_the_step_limit() -> None:
    engine = Engine(VIEW_SSSP, max_rounds=50)
    engine.insert("edge", (0, 1, 1))
    engine.run()
    engine.insert("edge", (1, 0, -2))
    error, = engine.run()[0].errors
    assert (error.code, error.message) == (
        "E307", "step limit: more than 50 rounds in one stratum (rule 1 keeps deriving "
        "`hop` tuples: 1 in the last round)")
    assert sorted(engine.rows("hop")) == sorted(engine.rows("best")) == [(1, 1)]


def test_rows_of_a_view_feeding_the_min_count_against_the_tuple_limit() -> None:
    # 10 hop rows and 10 best rows: 20 new tuples, past 15 (the best rows alone are not)
    engine = Engine(VIEW_SSSP, max_tuples=15)
    for i in range(1, 11):
        engine.insert("edge", (0, i, i))
    error, = engine.run()[0].errors
    assert (error.code, error.message) == (
        "E307", "step limit: more than 15 new tuples in one step (rule 3 keeps deriving "
        "`best` tuples: 3 in the last round)")
    assert engine.rows("hop") == engine.rows("best") == []


@pytest.mark.parametrize(("limit", "errors"), [
    (26, [("E307", "step limit: more than 26 new tuples in one step (rule 4 keeps deriving "
                   "`copy` tuples: 12 from one evaluation)")]),
    (27, [])])
def test_view_rows_that_improve_nothing_count_against_the_tuple_limit(limit, errors) -> None:
    # hop: 3 rows from 0, then 9 that improve nothing (the loop's last round); best 3;
    # copy 12 in the next stratum: 27 new tuples
    engine = Engine(VIEW_SSSP + "copy(Y, C) :- hop(Y, C).\n", max_tuples=limit)
    for i in range(1, 4):
        engine.insert("edge", (0, i, 1))
        for j in range(1, 4):
            for w in range(5, 8):
                engine.insert("edge", (i, j, w))
    assert [(error.code, error.message) for error in engine.run()[0].errors] == errors
    assert engine.rows("copy") == ([] if errors else sorted(
        [(1, 1), (2, 1), (3, 1), *((j, c) for j in (1, 2, 3) for c in (6, 7, 8))]))


def test_values_that_do_not_compare_fail_the_step() -> None:
    engine = Engine('dist(0, 0).\ndist(Y, min<C>) :- dist(X, C1), edge(X, Y, W), '
                    'C := C1 + W.\ndist(1, "far").')
    engine.insert("edge", (0, 1, 1))
    error, = engine.run()[0].errors
    assert (error.code, error.message) == ("E301", "cannot compare int with string")
    assert str(error).endswith("quarantined input: edge(0, 1, 1)")
    assert engine.rows("dist") == [(0, 0), (1, "far")]
    assert engine.rows("edge") == []


def test_values_that_do_not_compare_fail_a_later_step_and_leave_the_groups_as_they_were(
        ) -> None:
    # after the first step, the plan compares each candidate as it derives it
    engine = Engine(SSSP + 'dist(1, "far").')
    engine.insert("edge", (0, 2, 1))
    assert engine.run()[0].errors == []
    engine.insert("edge", (0, 1, 1))
    error, = engine.run()[0].errors
    assert (error.code, error.message) == ("E301", "cannot compare int with string")
    assert str(error).endswith("quarantined input: edge(0, 1, 1)")
    assert sorted(engine.rows("dist"), key=str) == [(0, 0), (1, "far"), (2, 1)]
    engine.insert("edge", (2, 3, 1))
    assert engine.run()[0].errors == []
    assert sorted(engine.rows("dist"), key=str) == [(0, 0), (1, "far"), (2, 1), (3, 2)]


def test_a_failing_guard_of_a_later_step_names_its_binding_and_input() -> None:
    engine = Engine("dist(0, 0).\n"
                    "dist(Y, min<C>) :- dist(X, C1), edge(X, Y, W), C := C1 + W, 100 / W > 1.")
    engine.insert("edge", (0, 1, 2))
    engine.run()
    engine.insert("edge", (1, 2, 0))
    engine.insert("edge", (1, 3, 4))
    error, = engine.run()[0].errors
    assert (error.code, error.message, error.expression, error.binding) == (
        "E302", "division by zero", "100 / W", {"X": 1, "Y": 2, "W": 0, "C1": 2, "C": 2})
    assert error.quarantined == (("insert", "edge", (1, 2, 0)),)
    assert sorted(engine.rows("dist")) == [(0, 0), (1, 2), (3, 6)]


def test_candidates_that_improve_nothing_do_not_count_against_the_tuple_limit() -> None:
    # a later step's plan compares each candidate as it derives it: 30 candidates for z,
    # one improvement, within a limit of 10 new tuples
    engine = Engine(SSSP, max_tuples=10)
    engine.insert("edge", (0, 1, 1))
    assert engine.run()[0].errors == []
    for w in range(2, 32):
        engine.insert("edge", (1, "z", w))
    report, = engine.run()
    assert (report.errors, report.firings) == ([], {"rule 1": 1})
    assert sorted(engine.rows("dist"), key=str) == [("z", 3), (0, 0), (1, 1)]


def test_a_group_two_triggers_improve_in_one_round_fires_once() -> None:
    engine = Engine("d(0, 0).\nd(Y, min<C>) :- d(X, C1), e(X, Y, W), f(Y, V), C := C1 + W + V.")
    for row in [(0, 1, 5), (1, 2, 1)]:
        engine.insert("e", row)
    for row in [(1, 0), (2, 0)]:
        engine.insert("f", row)
    engine.run()
    engine.insert("e", (0, 2, 7))  # d(2): 7 through e, then -4 through f: one new row
    engine.insert("f", (2, -10))
    report, = engine.run()
    assert report.firings == {"rule 1": 1}
    assert sorted(engine.rows("d")) == [(0, 0), (1, 5), (2, -4)]


def test_a_group_a_view_feeds_better_than_its_own_candidate_fires_once() -> None:
    # best(2) gets 5 from hop's row of its own trigger (w(2) new) and 3 from hop's new row
    # in the same round: compared after the view's rows, as when candidates were listed
    engine = Engine("hop(Y, C) :- edge(0, Y, C).\n"
                    "hop(Y, C) :- best(X, C1), edge(X, Y, W), C := C1 + W.\n"
                    "best(Y, min<C>) :- hop(Y, C), w(Y).")
    for row in [(0, 1, 1), (1, 2, 4)]:
        engine.insert("edge", row)
    engine.insert("w", (1,))
    engine.run()
    engine.insert("w", (2,))
    engine.insert("edge", (0, 2, 3))
    report, = engine.run()
    assert report.firings == {"rule 1": 1, "rule 3": 1}
    assert sorted(engine.rows("best")) == [(1, 1), (2, 3)]


def test_an_expression_failing_beside_values_that_do_not_compare_is_the_error() -> None:
    # the candidate (1, "x") does not compare with (1, 5); the binding K=2 divides "x":
    # the expression's failure is reported, located, as when candidates were listed first
    engine = Engine("d(0, 0).\n"
                    "d(Y, min<C>) :- d(X, C1), e(X, Y, C), f(Y, K), K == 1 || C / K > 0.")
    engine.insert("e", (0, 1, 5))
    engine.insert("f", (1, 1))
    engine.insert("f", (1, 2))
    engine.run()
    engine.insert("e", (0, 1, "x"))
    error, = engine.run()[0].errors
    assert (error.code, error.message, error.expression, error.binding) == (
        "E301", "cannot divide string by int", "C / K",
        {"X": 0, "Y": 1, "C": "x", "C1": 0, "K": 2})
    assert error.quarantined == (("insert", "e", (0, 1, "x")),)
    assert sorted(engine.rows("d")) == [(0, 0), (1, 5)]


def test_a_min_rule_of_many_joins_compares_its_candidates_in_stages() -> None:
    """A rule of 14 joins runs in stages (Python nests 20 blocks at most); in a later step
    its plans compare their candidates as they derive them, in the last stage."""
    n = 14
    body = ", ".join(f"e(X{i}, X{i + 1})" for i in range(n))
    engine = Engine(f"d(0, 0).\nd(X{n}, min<C>) :- d(X0, C1), {body}, C := C1 + 1.\n")
    for i in range(n):
        engine.insert("e", (i, i + 1))
    assert engine.run()[0].errors == []
    assert sorted(engine.rows("d")) == [(0, 0), (14, 1)]
    for i in range(n, 2 * n):
        engine.insert("e", (i, i + 1))
    engine.insert("e", (0, 100))  # 0, 100, 1, ... 13: 14 arcs too
    engine.insert("e", (100, 1))
    report, = engine.run()
    assert (report.errors, report.firings) == ([], {"rule 1": 3})
    assert sorted(engine.rows("d")) == [(0, 0), (13, 1), (14, 1), (27, 2), (28, 2)]


def test_evaluated_afresh_a_constant_in_the_first_atom_reads_its_rows_from_an_index() -> None:
    # the first step evaluates the stratum afresh: hop's first rule takes the arcs from 0
    # out of edge's index on its first column (not those from 0.0 or false: other values)
    engine = Engine(VIEW_SSSP)
    for row in [(0, 1, 5), (0.0, 2, 1), (False, 3, 1), (1, 4, 1), (2, 5, 1)]:
        engine.insert("edge", row)
    assert engine.run()[0].errors == []
    assert sorted(engine.rows("hop")) == sorted(engine.rows("best")) == [(1, 5), (4, 6)]
    fixpoint = engine._fixpoint
    rule = next(r for r in fixpoint.rules if r.plan.text.startswith("hop(Y, C) :- edge(0"))
    plan = rule.plan.triggers[0].insert
    assert fixpoint._all_rows("edge", plan) == [(0, 1, 5)]
    # no index on the constants' columns (the weight): every row
    assert len(fixpoint._all_rows("edge", replace(plan, driver=replace(
        plan.driver, checks=((2, p.Const(value=1)),))))) == 5


def test_an_asserted_row_is_a_candidate_and_stays() -> None:
    engine = Engine(SSSP + "dist(2, 10).\ndist(1, 0).")
    for row in [(0, 1, 1), (1, 2, 1)]:
        engine.insert("edge", row)
    engine.run()
    # 1: asserted 0 beats the derived 1; 2: the derived 1 beats the asserted 10, which stays
    assert sorted(engine.rows("dist")) == [(0, 0), (1, 0), (2, 1), (2, 10)]


def test_explain_names_the_recursive_stratum() -> None:
    plan = compile_program(SSSP)
    text = format_program_plan(plan, placement(plan, 10_000_000))
    # triggers project candidate rows (no aggregate step: the fixpoint keeps each best)
    assert text[text.index("stratum 1"):] == """\
stratum 1: dist (recursive min/max)
  the recursive min/max runs on Spark with --backend spark (auto: at 10,000,000 rows)
  rule 1 [view]  dist(Y, min<C>) :- dist(X, C1), edge(X, Y, W), C := C1 + W.
      min of $1, grouped on $0
      when dist gains rows (literal 1):
        scan dist [$0->X, $1->C1]
        join edge on ($0=X) [$1->Y, $2->W]
        let C := C1 + W
        project (Y, C)
      when dist loses rows (literal 1, over-deletion):
        scan dist [$0->X, $1->C1]
        join edge.prior on ($0=X) [$1->Y, $2->W]
        let C := C1 + W
        project (Y, C)
      when edge gains rows (literal 2):
        scan edge [$0->X, $1->Y, $2->W]
        join dist.old on ($0=X) [$1->C1]
        let C := C1 + W
        project (Y, C)
      when edge loses rows (literal 2, over-deletion):
        scan edge [$0->X, $1->Y, $2->W]
        join dist.prior on ($0=X) [$1->C1]
        let C := C1 + W
        project (Y, C)
      recompute groups:
        seed (Y) from columns $0
        join edge on ($1=Y) [$0->X, $2->W]
        join dist on ($0=X) [$1->C1]
        let C := C1 + W
        project (Y, C)
        aggregate min of $1"""


def test_an_asserted_row_equal_to_a_derived_one_stays() -> None:
    engine = Engine(SSSP)
    engine.insert("edge", (0, 1, 5))
    engine.run()
    engine.insert("dist", (1, 5))  # the row the min derived, now asserted too
    engine.run()
    engine.insert("edge", (0, 1, 2))
    engine.run()
    assert engine.rows("dist") == [(0, 0), (1, 2), (1, 5)]
    engine.delete("edge", (0, 1, 2))
    engine.run()
    assert engine.rows("dist") == [(0, 0), (1, 5)]
    engine.delete("edge", (0, 1, 5))
    engine.run()
    assert engine.rows("dist") == [(0, 0), (1, 5)]


def test_a_recursive_min_that_adds_takes_numbers() -> None:
    """`+` on strings is concatenation, which does not keep their order ("a" < "ab" but
    "az" > "abz"): a minimum through it would depend on the order of evaluation."""
    engine = Engine('d(0, "a").\nd(Y, min<C>) :- d(X, C1), w(X, Y, W), C := C1 + W.')
    engine.insert("w", (0, 1, "b"))
    error, = engine.run()[0].errors
    assert (error.code, error.message) == (
        "E301", "a recursive min that adds takes numbers, not string values")
    labels = Engine('d(0, "a").\nd(Y, min<C>) :- d(X, C), w(X, Y).')  # no +: any values
    labels.insert("w", (0, 1))
    assert not labels.run()[0].errors
    assert labels.rows("d") == [(0, "a"), (1, "a")]
