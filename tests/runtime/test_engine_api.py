"""The Python API of design.md section 5, and atomic steps."""

from __future__ import annotations

import gc

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import overlog
from overlog import ANY, Engine

PINGPONG = """
pong[X, N] :- ping[X, N].
total(count<*>) :- seen(_).
seen(N) :- ping[_, N].
"""


def test_listener_patterns_and_phases() -> None:
    eng = Engine(PINGPONG, address="n1")
    post, pre = [], []
    eng.register_listener("pong", ("a", ANY), post.append)
    eng.registerListener("ping", None, pre.append, phase="pre")
    eng.generate_event("ping", ("a", 1))
    eng.generateEvent("ping", ("b", 2))
    report = eng.step()
    assert (report.step, report.time) == (1, 0.0)
    assert report.events == {"ping": [("a", 1), ("b", 2)], "pong": [("a", 1), ("b", 2)]}
    assert post == [("a", 1)]
    assert sorted(pre) == [("a", 1), ("b", 2)]
    report = eng.step()  # the buffered writes of seen apply
    assert report.inserted == {"seen": [(1,), (2,)], "total": [(2,)]}
    assert eng.rows("total") == [(2,)]


def test_persistent_listeners_take_op() -> None:
    eng = Engine("p(X) :- q(X).\n")
    inserted, deleted = [], []
    eng.register_listener("p", None, inserted.append, op="insert")
    eng.register_listener("p", (ANY,), deleted.append, op="delete")
    eng.insert("q", (1,))
    eng.insert("q", (2,))
    eng.run()
    eng.delete("q", (1,))
    eng.run()
    assert inserted == [(1,), (2,)]
    assert deleted == [(1,)]
    assert eng.rows("p") == [(2,)]


def test_generate_event_when_and_sim_clock() -> None:
    eng = Engine("got(T, X) :- e[X], T := f_now().\n")
    eng.generate_event("e", (1,), when=5.0)
    eng.generate_event("e", (2,), when=2.5)
    reports = eng.run()
    assert [(r.step, r.time) for r in reports] == [(1, 2.5), (2, 2.5), (3, 5.0), (4, 5.0)]
    assert eng.rows("got") == [(2.5, 2), (5.0, 1)]
    assert eng.idle


def test_run_stops_at_steps_and_until() -> None:
    eng = Engine("tick(E) :- periodic[_, E, 1].\n")  # for ever
    assert len(eng.run(steps=3)) == 3
    eng.run(until=10.0)
    assert eng.rows("tick")[-1] == (10,)
    assert eng.now == 10.0


def test_register_function() -> None:
    eng = Engine("h(X, Y) :- item(X), Y := f_double(X).\nitem(21).\n")
    eng.register_function("f_double", lambda x: 2 * x)
    eng.run()
    assert eng.rows("h") == [(21, 42)]


def test_unregistered_function_is_reported_at_first_step() -> None:
    eng = Engine("h(X, Y) :- item(X), Y := f_nope(X).\nitem(1).\n", path="u.olg")
    with pytest.raises(overlog.SemanticError, match=r"unknown function `f_nope`"):
        eng.step()


def test_bad_api_use_is_a_clear_error() -> None:
    eng = Engine(PINGPONG)
    with pytest.raises(ValueError, match="`ping` is an event relation: use generate_event"):
        eng.insert("ping", ("a", 1))
    with pytest.raises(ValueError, match="`seen` is persistent: use insert"):
        eng.generate_event("seen", (1,))
    with pytest.raises(ValueError, match="`pong` has 2 fields, got 1"):
        eng.generate_event("pong", (1,))
    with pytest.raises(KeyError, match="unknown relation `nope`"):
        eng.rows("nope")
    with pytest.raises(ValueError, match="phase='pre' listeners see input events"):
        eng.register_listener("seen", None, print, phase="pre")


def test_failed_step_rolls_back_and_quarantines_only_the_bad_input() -> None:
    eng = Engine("r(X, Y, Q) :- calc[X, Y], Q := X / Y.\n", path="c.olg")
    errors = []
    eng.register_listener("error", None, errors.append)
    eng.generate_event("calc", (10, 2))
    eng.generate_event("calc", (1, 0))
    eng.generate_event("calc", (9, 3))
    first = eng.step()
    assert [e.code for e in first.errors] == ["E302"]
    error = first.errors[0]
    assert (error.step, error.binding, error.quarantined) == (1, {"X": 1, "Y": 0},
                                                             (("event", "calc", (1, 0)),))
    assert str(error) == ("c.olg:1:32: error[E302]: step 1 (time 0): division by zero\n"
                          "  in rule 1, at `X / Y`\n  binding: X=1, Y=0\n"
                          "  quarantined input: calc[1, 0]")
    eng.run()
    assert eng.rows("r") == [(9, 3, 3), (10, 2, 5)]
    assert errors == [(1, "calc", (1, 0), "division by zero")]


def test_a_step_leaves_the_garbage_collector_as_it_found_it() -> None:
    eng = Engine("r(X, Y, Q) :- calc[X, Y], Q := X / Y.\n")
    before = gc.get_threshold()
    eng.generate_event("calc", (1, 0))
    eng.generate_event("calc", (2, 1))
    assert [e.code for e in eng.step().errors] == ["E302"]  # failed, rolled back, re-run
    assert gc.get_threshold() == before


def test_a_step_collects_young_garbage_less_often_and_no_old_garbage() -> None:
    eng = Engine("r(X) :- e[X].\n")
    seen = []
    eng.register_listener("e", None, lambda row: seen.append(gc.get_threshold()), phase="pre")
    before = gc.get_threshold()
    try:
        for young in (700, 0):  # (0: automatic collection is off, and stays off)
            gc.set_threshold(young, 10, 10)
            eng.generate_event("e", (young,))
            eng.step()
            assert gc.get_threshold() == (young, 10, 10)
    finally:
        gc.set_threshold(*before)
    assert seen == [(50_000, 10, 2**31 - 1), (0, 10, 2**31 - 1)]


def test_type_error_names_rule_and_binding() -> None:
    eng = Engine('r1 r(Z) :- v[X], Z := X + 1.\n', path="t.olg")
    eng.generate_event("v", ("a",))
    eng.generate_event("v", (1,))
    report = eng.step()
    assert [e.code for e in report.errors] == ["E301"]
    assert report.errors[0].message == 'cannot add string and int'
    assert report.errors[0].rule == "`r1`"
    eng.run()
    assert eng.rows("r") == [(2,)]


def test_key_conflict_between_two_writes_quarantines_the_later_one() -> None:
    source = ("materialize(owner, infinity, infinity, keys(1)).\n"
              "owner(T, W) :- sold[T, W].\n")
    eng = Engine(source)
    eng.generate_event("sold", ("car", "ann"))
    eng.generate_event("sold", ("car", "bob"))
    report = eng.step()
    assert [e.code for e in report.errors] == ["E303"]
    assert report.errors[0].quarantined == (("event", "sold", ("car", "bob")),)
    eng.run()
    assert eng.rows("owner") == [("car", "ann")]


def test_pre_listener_raising_fails_the_step_for_that_event_only() -> None:
    eng = Engine("seen(X) :- e[X].\n")

    def picky(row: tuple) -> None:
        if row == (13,):
            raise RuntimeError("unlucky")

    eng.register_listener("e", None, picky, phase="pre")
    eng.generate_event("e", (12,))
    eng.generate_event("e", (13,))
    report = eng.step()
    assert [e.code for e in report.errors] == ["E304"]
    assert "pre listener on `e` raised RuntimeError: unlucky" in str(report.errors[0])
    eng.run()
    assert eng.rows("seen") == [(12,)]


def test_post_listener_raising_is_reported_and_changes_nothing() -> None:
    eng = Engine("seen(X) :- e[X].\n")
    eng.register_listener("e", None, lambda row: 1 / 0)
    eng.generate_event("e", (1,))
    report = eng.step()
    assert [e.code for e in report.errors] == ["E305"]
    eng.run()
    assert eng.rows("seen") == [(1,)]


def test_cyclic_deletion_where_counting_fails() -> None:
    # reach(b,b) and reach(c,c) support each other through the cycle b->c->b; deleting the
    # only way in must retract them all, which derivation counting alone gets wrong.
    eng = Engine("reach(X, Y) :- link(X, Y).\nreach(X, Z) :- reach(X, Y), link(Y, Z).\n")
    for row in [("a", "b"), ("b", "c"), ("c", "b")]:
        eng.insert("link", row)
    eng.run()
    assert len(eng.rows("reach")) == 6
    eng.delete("link", ("b", "c"))
    eng.run()
    assert eng.rows("reach") == [("a", "b"), ("c", "b")]
    eng.insert("link", ("b", "c"))
    eng.delete("link", ("a", "b"))
    eng.run()
    assert eng.rows("reach") == [("b", "b"), ("b", "c"), ("c", "b"), ("c", "c")]


def test_asserted_and_derived_tuple_stays_while_derivable() -> None:
    eng = Engine("p(X) :- q(X).\n")
    eng.insert("q", (1,))
    eng.insert("p", (1,))
    eng.run()
    eng.delete("p", (1,))  # still derived from q(1)
    eng.run()
    assert eng.rows("p") == [(1,)]
    eng.delete("q", (1,))
    eng.run()
    assert eng.rows("p") == []


def test_native_handler_by_name(capsys: pytest.CaptureFixture[str]) -> None:
    eng = Engine('alarm["fire", 2].\n'
                 'registerNativeEventHandler["alarm", "stdlib.io:print_row"].\n')
    eng.run()
    assert capsys.readouterr().out == '["fire", 2]\n'


def test_seeded_rand_is_reproducible() -> None:
    source = "r(E, X) :- periodic[_, E, 1, 3], X := f_rand().\n"
    runs = []
    for _ in range(2):
        eng = Engine(source, seed=7)
        eng.run()
        runs.append(eng.rows("r"))
    assert runs[0] == runs[1] and len(runs[0]) == 3
    other = Engine(source, seed=8)
    other.run()
    assert other.rows("r") != runs[0]


def test_soft_state_refresh_postpones_expiry() -> None:
    eng = Engine("materialize(lease, 5, infinity, keys(1)).\nheld(X) :- lease(X).\n")
    eng.insert("lease", ("a",))
    eng.insert("lease", ("b",))
    eng.run(until=0.0)  # run() alone would go on to the expiries
    eng.now = 3.0
    eng.insert("lease", ("a",))  # refresh: a now expires at 8, b still at 5
    eng.run(until=6.0)
    assert (eng.now, eng.rows("held")) == (5.0, [("a",)])
    reports = eng.run()
    assert [(r.time, r.deleted) for r in reports] == [(8.0, {"lease": [("a",)],
                                                              "held": [("a",)]})]
    assert eng.idle and eng.next_time() is None


def test_size_cap_evicts_the_oldest() -> None:
    eng = Engine("materialize(recent, infinity, 2, keys(1)).\nn(count<*>) :- recent(_).\n")
    for i, name in enumerate(["a", "b", "c"]):
        eng.now = float(i)
        eng.insert("recent", (name,))
        eng.run()
    assert eng.rows("recent") == [("b",), ("c",)]
    eng.now = 3.0
    eng.insert("recent", ("b",))  # refresh b: c is now the oldest
    eng.insert("recent", ("d",))
    eng.run()
    assert eng.rows("recent") == [("b",), ("d",)]
    assert eng.rows("n") == [(2,)]


def test_a_row_stamped_twice_in_a_step_counts_once_against_the_cap() -> None:
    eng = Engine("materialize(p, infinity, 2, keys(1)).\nr(X) :- p(X).\n")
    for x in (1, 1, 2, 3, 4):
        eng.insert("p", (x,))
    eng.run()
    assert eng.rows("p") == eng.rows("r") == [(3,), (4,)]


def test_a_rolled_back_attempt_leaves_the_cap_evicting_the_oldest() -> None:
    eng = Engine("materialize(p, infinity, 2, keys(1)).\nr(X) :- p(X).\n"
                 "q(Y) :- ev[X], Y := 1 / X.\n")
    for x in (1, 2, 3, 4):
        eng.insert("p", (x,))
    eng.generate_event("ev", (0,))  # fails: the step runs again without it
    reports = eng.run()
    assert [[error.code for error in report.errors] for report in reports] == [["E302"], []]
    assert eng.rows("p") == eng.rows("r") == [(3,), (4,)]


def test_an_external_delete_removes_the_row_holding_its_key() -> None:
    """As a delete rule does (design: the stored tuple with the same key); deliver alike."""
    eng = Engine("materialize(p, infinity, infinity, keys(1)).\nr(K, V) :- p(K, V).\n")
    for row in [(1, "a"), (2, "b"), (3, "c")]:
        eng.insert("p", row)
    eng.run()
    eng.delete("p", (1, "zzz"))
    eng.deliver("p", (2, "other"), "delete")
    eng.delete("p", (9, "c"))  # no row holds key 9: nothing
    (report,) = eng.run()
    assert eng.rows("p") == eng.rows("r") == [(3, "c")]
    assert report.deleted == {"p": [(1, "a"), (2, "b")], "r": [(1, "a"), (2, "b")]}


def test_what_a_pre_listener_queues_counts_once_from_the_attempt_that_stands() -> None:
    """A failing event makes the step run again without it (and bisect): the pre listener
    is called at each attempt, and what it queued in the attempts rolled back goes."""
    eng = Engine("r(Y) :- ev[X], Y := 10 / X.\nlogged(X) :- log(X).\nlate(X) :- again[X].\n")
    eng.register_listener("ev", None, lambda row: (
        eng.insert("log", row), eng.generate_event("again", row)), phase="pre")
    for x in (1, 0, 2):
        eng.generate_event("ev", (x,))
    reports = eng.run()
    assert [[e.quarantined for e in r.errors] for r in reports] == [
        [(("event", "ev", (0,)),)], [], []]
    assert reports[1].inserted == {"r": [(5,), (10,)], "log": [(1,), (2,)],
                                   "logged": [(1,), (2,)]}
    assert reports[1].events["again"] == [(1,), (2,)]
    assert eng.rows("late") == [(1,), (2,)]


def test_a_listener_registered_in_an_attempt_rolled_back_goes_with_it() -> None:
    eng = Engine("r(Y) :- ev[X], Y := 10 / X.\n")
    heard: list[tuple] = []
    eng.register_listener("ev", None, lambda row: eng.register_listener(
        "r", None, heard.append), phase="pre")
    for x in (1, 0):
        eng.generate_event("ev", (x,))
    eng.run()  # ev[0] fails: the second attempt, without it, registers one listener
    assert [listener.relation for listener in eng.listeners] == ["ev", "r"]
    assert heard == [(10,)]


def test_a_commit_s_writes_come_before_what_the_step_queued() -> None:
    """As docs/engine.md orders the next step's inputs: the previous commit's writes and
    deletes, then the inserts and deletes called meanwhile."""
    eng = Engine("delete p(X) :- drop[X], p(X).\n")
    eng.insert("p", (1,))
    eng.run()
    eng.register_listener("drop", None, lambda row: eng.insert("p", row), phase="pre")
    eng.generate_event("drop", (1,))  # the rule deletes p(1); the listener inserts it
    eng.run()
    assert eng.rows("p") == [(1,)]


def test_a_listener_registered_by_a_listener_hears_from_the_next_step() -> None:
    eng = Engine("got(X) :- e[X].\n")
    calls: list[tuple] = []

    def spawn(row: tuple) -> None:  # (each call registers one more: it ran for ever)
        calls.append(row)
        eng.register_listener("got", None, spawn)

    eng.register_listener("got", None, spawn)
    eng.generate_event("e", (1,))
    eng.run()
    assert calls == [(1,)]
    eng.generate_event("e", (2,))
    eng.run()
    assert calls == [(1,), (2,), (2,)]


def test_a_tuple_whose_expiry_fails_stays_and_expires_no_more() -> None:
    eng = Engine("materialize(p, 1, infinity, keys(1)).\nq(Y) :- r(X, D), notin p(X), "
                 "Y := 1 / D.\n")
    eng.insert("p", (1,))
    eng.step()
    eng.insert("r", (1, 0))  # q fails once p(1) goes
    eng.step()
    reports = eng.run()  # at 1.0 p(1) expires: that fails (then the error event's step)
    assert [(r.time, [(e.code, e.quarantined) for e in r.errors]) for r in reports] == [
        (1.0, [("E302", (("delete", "p", (1,)),))]), (1.0, [])]
    assert eng.rows("p") == [(1,)] and eng.idle and eng.next_time() is None


def test_real_clock_waits_for_timed_events() -> None:
    import time

    start = time.monotonic()  # (before the clock's time 0, which is the engine's start)
    eng = Engine("got(X) :- e[X].\n", clock="real")
    eng.generate_event("e", (1,), when=eng.now + 0.2)
    reports = eng.run()
    elapsed = time.monotonic() - start
    assert eng.rows("got") == [(1,)]
    assert reports[0].time >= 0.2 and elapsed >= 0.2


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(st.integers(0, 6), st.integers(0, 3), max_size=5),
       st.lists(st.tuples(st.integers(0, 6), st.integers(0, 3)), max_size=8))
def test_inserts_into_a_keyed_table_replace_the_rows_of_their_keys(
        before: dict[int, int], batch: list[tuple[int, int]]) -> None:
    # a batch of inserts with distinct keys is applied as set operations, one with a
    # repeated key row by row (the later insert wins): the same rows and changes either way
    engine = Engine("materialize(owner, infinity, infinity, keys(1)).\n"
                    "seen(K, V) :- owner(K, V).\n")
    for row in before.items():
        engine.insert("owner", row)
    engine.run()
    for row in batch:
        engine.insert("owner", row)
    reports = engine.run()
    after = dict(before)
    after.update(batch)
    assert engine.rows("owner") == engine.rows("seen") == sorted(after.items())
    assert [(r.inserted.get("owner", []), r.deleted.get("owner", [])) for r in reports] == (
        [(sorted(after.items() - before.items()), sorted(before.items() - after.items()))]
        if batch else [])


def test_a_batch_of_keyed_inserts_is_undone_with_its_failing_step() -> None:
    engine = Engine("materialize(owner, infinity, infinity, keys(1)).\n"
                    "big(K, V, W) :- owner(K, V), owner(_, W).\n", max_tuples=10)
    engine.insert("owner", (1, "a"))
    engine.insert("owner", (2, "b"))
    engine.run()
    assert engine.rows("big") == [(1, "a", "a"), (1, "a", "b"), (2, "b", "a"), (2, "b", "b")]
    for row in [(1, "x"), (3, "c"), (4, "d")]:  # 12 new rows of big: past the limit
        engine.insert("owner", row)
    report = engine.run()[0]
    assert [(e.code, e.quarantined) for e in report.errors] == [("E307", (
        ("insert", "owner", (1, "x")), ("insert", "owner", (3, "c")),
        ("insert", "owner", (4, "d"))))]
    assert engine.rows("owner") == [(1, "a"), (2, "b")]
    assert report.inserted == {} and report.deleted == {}
