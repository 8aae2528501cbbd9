"""Edge cases that once lost data, hung or broke an invariant (issue 8, section 1); each test
here failed before its fix."""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest

import overlog
from overlog.compile import compile_program
from overlog.runtime.softstate import SoftState


def test_a_step_that_fails_with_no_input_is_reported_not_retried_for_ever() -> None:
    # its rules without atoms fire at the next step that runs: here, the first input's
    eng = overlog.Engine("n(0) :- notin z(0).\nn(Y) :- n(X), Y := X + 1.\n", max_tuples=10)
    reports = eng.run()
    assert [[(e.code, e.quarantined, e.dropped) for e in r.errors] for r in reports] == [
        [("E307", (), None)]]
    assert (eng.rows("n"), eng.idle) == ([], True)
    eng.insert("z", (0,))
    assert [r.errors for r in eng.run()] == [[]]
    assert (eng.rows("n"), eng.rows("z")) == ([], [(0,)])


def _errors(reports: list) -> list[list[tuple]]:
    return [[(e.code, e.rule, e.quarantined, e.dropped) for e in r.errors] for r in reports]


def _raising_first(error: BaseException, calls: list | None = None) -> Callable[[int], int]:
    """A function for a program that raises ``error`` at its first call only (``calls``
    gets the argument of every call)."""
    calls = [] if calls is None else calls

    def once(x: int) -> int:
        calls.append(x)
        if len(calls) == 1:
            raise error
        return x

    return once


def test_a_rule_without_atoms_failing_at_the_first_step_loses_no_input() -> None:
    # it is taken out of the program; the facts, the step's event and the other rules'
    # firings stand (they were all quarantined: the step failed whatever its inputs)
    eng = overlog.Engine("c(1).\nok(1) :- notin b(1).\np(X) :- X := 1 / 0.\n"
                         "q(X) :- e[X].\n")
    eng.generate_event("e", (1,))
    assert _errors(eng.run()) == [[("E302", "2", (), "2")], []]  # (q(1) written: a step)
    assert [eng.rows(r) for r in ("c", "ok", "p", "q")] == [[(1,)], [(1,)], [], [(1,)]]
    eng.insert("b", (1,))
    eng.delete("b", (1,))
    eng.run()
    assert [eng.rows(r) for r in ("b", "ok", "p")] == [[], [(1,)], []]


def test_a_first_step_failing_in_what_a_rule_without_atoms_derives_drops_that_rule() -> None:
    eng = overlog.Engine("c(1).\nok(1) :- notin b(1).\na(2) :- notin b(2).\n"
                         "x(Y) :- a(X), Y := 1 / (X - 2).\n")
    (report,) = eng.run()
    assert _errors([report]) == [[("E302", "3", (), "2")]]
    assert str(report.errors[0]).splitlines()[1:] == [
        "  in rule 3, at `1 / (X - 2)`", "  binding: X=2",
        "  dropped for good: rule 2 (it has no positive atom)"]
    assert [eng.rows(r) for r in ("c", "ok", "a", "x")] == [[(1,)], [(1,)], [], []]


def test_a_rule_without_atoms_guarded_by_its_negation_fails_only_without_the_guard() -> None:
    # (with q(1), `1 / 0` is not evaluated: the plan finding p's rows to delete when q(1)
    # arrives passes over the binding it fails on, decision 65)
    eng = overlog.Engine("q(1).\np(Y) :- notin q(1), Y := 1 / 0.\n")
    assert (_errors(eng.run()), eng.rows("p")) == ([[]], [])
    eng.delete("q", (1,))  # the guard goes: the rule fires, and fails
    assert _errors(eng.run()) == [[("E302", "1", (("delete", "q", (1,)),), None)], []]
    assert (eng.rows("p"), eng.rows("q")) == ([], [(1,)])


def test_the_rule_without_atoms_whose_firing_alone_fails_the_step_is_dropped() -> None:
    # c(0, 0) fails only where a(0) is missing (the first rule, firing, puts it there)
    eng = overlog.Engine("c(0, 0).\na(0) :- notin b(0).\nd(5) :- notin e(5).\n"
                         "g(X, Z) :- c(X, Z), notin a(X).\nr(Y) :- g(X, Z), Y := 1 / Z.\n"
                         "y(Y) :- d(X), Y := 1 / (X - 5).\n")
    assert _errors(eng.run()) == [[("E302", "5", (), "2")]]
    assert [eng.rows(r) for r in ("a", "c", "d", "g")] == [[(0,)], [(0, 0)], [], []]


def test_a_failing_input_and_a_failing_rule_without_atoms_are_each_blamed() -> None:
    eng = overlog.Engine("c(0, 0).\na(2) :- notin b(2).\nx(Y) :- a(X), Y := 1 / (X - 2).\n"
                         "s(X, Z) :- c(X, Z).\nr(Y) :- s(X, Z), notin a(X), Y := 1 / Z.\n")
    report, _ = eng.run()  # (the next step: c(0, 0)'s error event)
    assert [(e.code, e.rule, e.binding, e.quarantined, e.dropped) for e in report.errors] == [
        ("E302", "4", {"X": 0, "Z": 0}, (("insert", "c", (0, 0)),), None),
        ("E302", "2", {"X": 2}, (), "1")]
    assert [eng.rows(r) for r in ("a", "c", "x")] == [[], [], []]


def test_an_input_that_fails_with_what_the_rules_without_atoms_derive_is_quarantined() -> None:
    # as it is after the first step: their rows are the state the inputs come to
    eng = overlog.Engine("limit(10) :- notin override(1).\n"
                         "share(X, Y) :- limit(L), req(X), Y := L / X.\n")
    eng.insert("req", (0,))
    assert _errors(eng.run()) == [[("E302", "2", (("insert", "req", (0,)),), None)], []]
    eng.insert("req", (5,))
    eng.run()
    assert [eng.rows(r) for r in ("limit", "req", "share")] == [[(10,)], [(5,)], [(5, 2)]]


@pytest.mark.parametrize("backend", ["local", "vector"])
def test_a_dropped_rule_derives_nothing_on_any_backend(backend: str) -> None:
    eng = overlog.Engine("a(2) :- notin b(2).\nn(X) :- a(X), X > 100.\n"
                         "x(Y) :- a(X), notin n(X), Y := f_once(X).\n",
                         backend=backend, functions={"f_once": _raising_first(ValueError("boom"))})
    assert _errors(eng.run()) == [[("E301", "3", (), "1")]]
    eng.insert("b", (2,))
    eng.run()
    eng.delete("b", (2,))
    assert _errors(eng.run()) == [[]]
    assert (eng.rows("a"), eng.rows("x")) == ([], [])


def test_why_not_knows_a_dropped_rule_derives_nothing() -> None:
    eng = overlog.Engine("a(X) :- notin b(2), X := f_once(2).\n", provenance=True,
                         functions={"f_once": _raising_first(ValueError("boom"))})
    assert _errors(eng.run()) == [[("E301", "1", (), "1")]]
    assert [e.text for e in eng.why_not("a", (2,))] == [
        "no rule derives `a`: only facts and inputs put rows there"]


def test_a_rule_without_atoms_is_not_blamed_for_what_fails_on_the_inputs_alone() -> None:
    # without the fact b(2), a(2) would make x fail: but it is c(0) that fails, on its own
    eng = overlog.Engine("b(2).\nc(0).\na(2) :- notin b(2).\nx(Y) :- a(X), Y := 1 / (X - 2).\n"
                         "s(X) :- c(X).\nr(Y) :- s(X), Y := 1 / X.\n")
    assert _errors(eng.run()) == [[("E302", "4", (("insert", "c", (0,)),), None)], []]
    assert [eng.rows(r) for r in ("a", "b", "c", "x")] == [[], [(2,)], [], []]
    eng.delete("b", (2,))  # a(2) fires, as a view following b: x fails on the delete
    assert _errors(eng.run()) == [[("E302", "2", (("delete", "b", (2,)),), None)], []]


def test_a_rule_without_atoms_is_not_dropped_for_a_step_limit() -> None:
    eng = overlog.Engine("n(0) :- notin z(0).\nn(Y) :- n(X), notin stop(X), Y := X + 1.\n"
                         "a(2) :- notin b(2).\nx(Y) :- a(X), Y := 1 / (X - 2).\n",
                         max_tuples=10)
    assert _errors(eng.run()) == [[("E302", "4", (), "3"), ("E307", "2", (), None)]]
    eng.insert("stop", (3,))  # rule 1 still fires
    assert _errors(eng.run()) == [[]]
    assert [eng.rows(r) for r in ("n", "a", "x")] == [[(0,), (1,), (2,), (3,)], [], []]


def test_rules_without_atoms_fire_at_the_next_step_when_the_first_fails_on_a_limit() -> None:
    eng = overlog.Engine("ok(1) :- notin b(1).\nd(X) :- c(X).\n", max_tuples=2)
    for n in range(1, 4):
        eng.insert("c", (n,))
    # (the next step: the quarantined inputs' error events)
    assert [[e.code for e in r.errors] for r in eng.run()] == [["E307"], []]
    assert [eng.rows(r) for r in ("ok", "c", "d")] == [[(1,)], [], []]


def test_a_key_is_never_held_twice() -> None:
    eng = overlog.Engine("materialize(p, infinity, infinity, keys(1)).\n"
                         "p(X, Y) :- q(X, Y).\nq(1, 2).\n")
    eng.run()
    eng.insert("p", (1, 3))
    errors = [e for r in eng.run() for e in r.errors]
    assert [(e.code, e.message) for e in errors] == [
        ("E303", "key conflict: derived p(1, 2) but p(1, 3) holds the same key")]
    assert eng.rows("p") == [(1, 2)]
    eng.insert("p", (1, 2))  # the tuple the view derives: asserted, and it outlives q(1, 2)
    eng.delete("q", (1, 2))
    eng.run()
    assert eng.rows("p") == [(1, 2)]


def test_changes_of_mixed_types_reach_listeners_and_reports() -> None:
    eng = overlog.Engine('q(1).\nq("a").\nq(null).\nq([2]).\n')
    seen: list[tuple] = []
    eng.register_listener("q", None, seen.append, op="insert")
    (report,) = eng.run()
    assert report.inserted == {"q": [(None,), (1,), ("a",), ((2,),)]}
    assert seen == [(None,), (1,), ("a",), ((2,),)]


def test_a_timer_keeps_its_schedule_when_a_firing_is_quarantined() -> None:
    eng = overlog.Engine("t(E, X) :- periodic[_, E, 1, 5], X := 10 / (E - 2).\n")
    reports = eng.run()
    assert [r.time for r in reports if r.errors] == [2.0]
    assert eng.rows("t") == [(1, -10), (3, 10), (4, 5), (5, 3)]
    assert eng.now == 5.0


def test_internal_variables_cannot_capture_the_programs() -> None:
    eng = overlog.Engine("p(_col1) :- q(Y + 1), r(Y, _col1).\n"
                         'q(3).\nr(2, "x").\nr(5, "y").\n')
    eng.run()
    assert eng.rows("p") == [("x",)]


def test_defines_substitute_in_any_program() -> None:
    source = ("materialize(lease, 30, infinity, keys(1, 2)).\n"
              "tick(@N, E) :- periodic[@N, E, 1, 3].\n"
              "lease(@N, X) :- tick(@N, X), X < LIMIT.\n")
    eng = overlog.Engine(source, defines={"LIMIT": 3})
    eng.run(until=10)
    assert eng.rows("lease") == [("localhost", 1), ("localhost", 2)]


def test_step_refuses_to_run_inside_a_step() -> None:
    eng = overlog.Engine("p(X) :- e[X].\n")
    eng.register_listener("e", None, lambda row: eng.step())
    eng.generate_event("e", (1,))
    report = eng.step()
    assert [(e.code, e.message) for e in report.errors] == [
        ("E305", "post listener on `e` raised RuntimeError: step() or run() called while a "
                 "step runs (from a listener or a function of the program): queue inputs "
                 "instead, with generate_event, insert, delete or deliver")]
    assert eng.rows("p") == [] and eng.run() and eng.rows("p") == [(1,)]


def test_an_interrupt_undoes_the_step_and_keeps_its_inputs() -> None:
    eng = overlog.Engine("p(Y) :- e[X], Y := f_slow(X).\nq(X) :- e[X].\n",
                         functions={"f_slow": _raising_first(KeyboardInterrupt())})
    eng.generate_event("e", (1,))
    with pytest.raises(KeyboardInterrupt):
        eng.step()
    assert (eng.step_count, eng.idle) == (0, False)
    eng.run()
    assert (eng.rows("p"), eng.rows("q")) == ([(1,)], [(1,)])


def test_an_interrupt_while_a_step_takes_its_inputs_keeps_them(monkeypatch) -> None:
    """The step has taken its events (and, here, nothing else yet) when the interrupt
    comes: they are put back, with the inserts still queued."""
    eng = overlog.Engine("materialize(s, 10, infinity, keys(1)).\n"
                         "p(X) :- e[X].\nq(X) :- r(X).\ns(X) :- q(X).\n")
    eng.generate_event("e", (1,))
    eng.insert("r", (2,))

    def stop(self, now: float) -> list:
        raise KeyboardInterrupt

    with monkeypatch.context() as patch:
        patch.setattr(SoftState, "expired", stop)
        with pytest.raises(KeyboardInterrupt):
            eng.step()
    assert (eng.step_count, eng.idle) == (0, False)
    assert [report.firings for report in eng.run()] == [  # (then the event's turnover)
        {"rule 1": 1, "rule 2": 1, "rule 3": 1}, {}]
    assert (eng.rows("p"), eng.rows("q"), eng.rows("s")) == ([(1,)], [(2,)], [(2,)])


def test_an_interrupt_after_a_rule_without_atoms_is_dropped_undoes_the_drop() -> None:
    calls: list[int] = []  # (the first: in the attempt after the drop; p's stratum is first)
    eng = overlog.Engine("p(X) :- X := 1 / 0.\nq(Y) :- e[X], Y := f_slow(X).\n",
                         functions={"f_slow": _raising_first(KeyboardInterrupt(), calls)})
    eng.generate_event("e", (1,))
    with pytest.raises(KeyboardInterrupt):
        eng.step()
    assert _errors(eng.run()) == [[("E302", "1", (), "1")], []]  # dropped and reported now
    assert (eng.rows("p"), eng.rows("q"), calls) == ([], [(1,)], [1, 1])


def test_an_interrupt_in_a_listener_leaves_the_step_committed() -> None:
    eng = overlog.Engine("p(X) :- q(X).\n")

    def stop(row: tuple) -> None:
        raise KeyboardInterrupt

    eng.register_listener("p", None, stop)
    eng.insert("q", (1,))
    with pytest.raises(KeyboardInterrupt):
        eng.step()
    assert (eng.step_count, eng.rows("p")) == (1, [(1,)])
    eng.insert("q", (2,))
    with pytest.raises(KeyboardInterrupt):
        eng.step()
    assert eng.store.added("p") == set()  # the interrupted step's changes were closed


@pytest.mark.parametrize(("call", "error", "message"), [
    (lambda e: e.insert("q", {"a": 1}), TypeError, "a row is a tuple of values, not dict"),
    (lambda e: e.insert("q", ({"a": 1},)), TypeError, "`q`: not an Overlog value: dict"),
    (lambda e: e.insert("q", (object(),)), TypeError, "`q`: not an Overlog value: object"),
    (lambda e: e.insert("q", (1, 2)), ValueError, "`q` has 1 fields, got 2"),
    (lambda e: e.generate_event("e", (1,), when=math.nan), ValueError,
     "when must be a finite number of seconds, not nan"),
    (lambda e: e.generate_event("e", (1,), when=math.inf), ValueError,
     "when must be a finite number of seconds, not inf"),
    (lambda e: e.generate_event("e", (1,), when="soon"), ValueError,
     "when must be a finite number of seconds, not 'soon'"),
])
def test_bad_values_are_refused_at_the_boundary_and_nothing_else_is_lost(call, error, message):
    eng = overlog.Engine("p(X) :- q(X).\nr(X) :- e[X].\n")
    eng.insert("q", (1,))
    with pytest.raises(error) as caught:
        call(eng)
    assert str(caught.value) == message
    eng.generate_event("e", (2,))
    eng.run()
    assert (eng.rows("p"), eng.rows("r")) == ([(1,)], [(2,)])


def test_failing_bindings_blame_the_inputs_that_drove_them_in_one_pass(monkeypatch) -> None:
    """Every failing event of a batch is found in one evaluation and quarantined at once,
    each with its own error, in queue order; no search over prefixes of the inputs."""
    eng = overlog.Engine("ok(X, Q) :- ev[X, D], Q := 100 / D.\n")
    for i in range(200):
        eng.generate_event("ev", (i, 0 if i % 10 == 3 else 1))
    searched = []
    monkeypatch.setattr(eng, "_culprit", lambda *a: searched.append(a))
    (report, _) = eng.run()
    assert searched == []
    assert [(e.code, e.binding, e.quarantined) for e in report.errors] == [
        ("E302", {"X": i, "D": 0}, (("event", "ev", (i, 0)),)) for i in range(3, 200, 10)]
    assert len(eng.rows("ok")) == 180


def test_a_failing_row_blames_its_last_input() -> None:
    """A delete then an insert of one row: the insert put it there (the delete, first in
    line, did nothing), so the insert is quarantined, once."""
    eng = overlog.Engine("q(Y) :- p(X), Y := 1 / (X - 1).\n")
    eng.delete("p", (1,))
    eng.insert("p", (1,))
    eng.insert("p", (2,))
    report = eng.run()[0]
    assert [(e.code, e.quarantined) for e in report.errors] == [
        ("E302", (("insert", "p", (1,)),))]
    assert (eng.rows("p"), eng.rows("q")) == ([(2,)], [(1,)])


def test_an_error_event_that_fails_comes_back_as_no_new_one() -> None:
    eng = overlog.Engine("seen(S) :- error[S, _, _, _], 1 / 0 > 0.\nq(Y) :- p(X), Y := 1 / X.\n")
    eng.insert("p", (0,))
    reports = eng.run()  # the insert fails; its error event fails too; then idle
    assert [[(e.code, e.quarantined) for e in r.errors] for r in reports] == [
        [("E302", (("insert", "p", (0,)),))],
        [("E302", (("event", "error", (1, "p", (0,), "division by zero")),))]]
    assert eng.idle and eng.rows("seen") == []


def test_key_conflicts_blame_the_later_inputs_in_one_pass(monkeypatch) -> None:
    """Writes to one key from several events: the earliest event's row stands and every
    event that wrote another row is quarantined at once, each with its own error (an event
    writing the kept row again is not); no search over prefixes of the inputs."""
    eng = overlog.Engine("materialize(owner, infinity, infinity, keys(1)).\n"
                         "owner(T, P) :- buy[T, P].\nowner(T, P) :- gift[P, T].\n")
    for i in range(100):
        eng.generate_event("buy", (i % 25, f"p{i}" if i % 50 else "x"))
    eng.generate_event("gift", ("x", 0))  # the same row as buy[0, "x"]: no conflict
    eng.generate_event("gift", ("y", 1))  # a second writer of key 1, after buy[1, "p1"]
    searched = []
    monkeypatch.setattr(eng, "_culprit", lambda *a: searched.append(a))
    (report, _) = eng.run()
    assert searched == []
    blamed = [(e.code, e.quarantined[0][1:]) for e in report.errors]
    assert blamed == [*(("E303", ("buy", (i % 25, f"p{i}"))) for i in range(25, 100)
                        if i != 50), ("E303", ("gift", ("y", 1)))]
    assert report.errors[0].message == ('key conflict: owner(0, "p25") and owner(0, "x") '
                                        'written to the same key in one step')
    assert report.errors[-1].message == ('key conflict: owner(1, "p1") and owner(1, "y") '
                                         'written to the same key in one step')
    assert eng.rows("owner") == [(0, "x"), *((i, f"p{i}") for i in range(1, 25))]


def test_a_conflict_no_trigger_explains_is_bisected() -> None:
    """Both writes come from the one tick event (joined with rows inserted in the same
    step): the trigger does not tell them apart, so the step searches its inputs and blames
    the one whose arrival made the conflict."""
    eng = overlog.Engine("materialize(owner, infinity, infinity, keys(1)).\n"
                         "owner(T, P) :- tick[_], want(T, P).\n"
                         "want(T, P) :- wish(T, P).\n")
    eng.insert("wish", (1, "a"))
    eng.insert("wish", (1, "b"))
    eng.generate_event("tick", (0,))
    (report, *_) = eng.run()
    assert [(e.code, e.quarantined) for e in report.errors] == [
        ("E303", (("insert", "wish", (1, "b")),))]
    assert eng.rows("owner") == [(1, "a")]


RUNAWAY = "n(0).\nr1 n(Y) :- n(X), Y := X + 1.\nm(1).\nok(X) :- e[X].\n"


@pytest.mark.parametrize(("options", "problem"), [
    ({"max_rounds": 300}, "more than 300 rounds in one stratum (rule `r1` keeps deriving `n` "
                          "tuples: 1 in the last round)"),
    ({"max_tuples": 500}, "more than 500 new tuples in one step (rule `r1` keeps deriving `n` "
                          "tuples: 1 from one evaluation)"),
    ({"step_timeout": 0.3}, "the step ran longer than 0.3 s (rule `r1` keeps deriving `n` "
                            "tuples: 1 in the last round)"),
])
def test_a_runaway_step_is_stopped_rolled_back_and_reported(options, problem) -> None:
    eng = overlog.Engine(RUNAWAY, **options)
    (report,) = eng.run(steps=1)
    assert [(e.code, e.message, e.rule, e.quarantined) for e in report.errors] == [
        ("E307", f"step limit: {problem}", "`r1`",
         (("insert", "n", (0,)), ("insert", "m", (1,))))]
    assert (eng.rows("n"), eng.rows("m")) == ([], [])
    eng.generate_event("e", (5,))  # the engine goes on
    eng.run()
    assert eng.rows("ok") == [(5,)]


def test_limits_are_checked_at_the_boundary() -> None:
    for options in ({"max_rounds": 0}, {"max_tuples": -1}, {"step_timeout": 0},
                    {"max_rounds": True}):
        with pytest.raises(ValueError):
            overlog.Engine("p(1).", **options)


def test_progress_is_reported_each_round() -> None:
    seen: list[tuple[int, int, dict]] = []
    eng = overlog.Engine("n(0).\nn(Y) :- n(X), X < 3, Y := X + 1.\n",
                         progress=lambda *args: seen.append(args))
    eng.run()
    assert seen == [(1, 1, {"n": 1}), (2, 2, {"n": 1}), (3, 3, {"n": 1})]


def test_one_evaluation_cannot_go_far_past_the_tuple_limit() -> None:
    """A cross product derives its tuples in one round: the limit is checked as each
    driving row's work ends, not only between rounds."""
    eng = overlog.Engine("p(X, Y, Z) :- a(X), a(Y), a(Z).\n", max_tuples=1000)
    for i in range(300):  # 27 million combinations
        eng.insert("a", (i,))
    (report,) = eng.run(steps=1)
    assert [e.message for e in report.errors] == [
        "step limit: more than 1,000 new tuples in one step (rule 1 keeps deriving `p` "
        "tuples: 90,000 from one evaluation)"]


def test_an_input_whose_rival_was_blamed_stands() -> None:
    """Inputs are taken in queue order: the second transfer clashes with the first at `b`
    and is quarantined; the third then clashes with nothing that stands, and takes effect."""
    eng = overlog.Engine("materialize(bal, infinity, infinity, keys(1)).\n"
                         "bal(A, X) :- xfer[A, B, X, Y].\nbal(B, Y) :- xfer[A, B, X, Y].\n")
    for row in [("a", "b", 1, 2), ("b", "c", 3, 4), ("c", "d", 5, 6)]:
        eng.generate_event("xfer", row)
    (report, *_) = eng.run()
    assert [(e.message, e.quarantined) for e in report.errors] == [
        ('key conflict: bal("b", 2) and bal("b", 3) written to the same key in one step',
         (("event", "xfer", ("b", "c", 3, 4)),))]
    assert eng.rows("bal") == [("a", 1), ("b", 2), ("c", 5), ("d", 6)]


def test_a_key_freed_by_one_group_can_be_taken_by_another() -> None:
    """A keyed aggregate head: group (1, 10) loses its rows as group (1, 20) gains one, in
    one step; the old row goes before the new one comes, whatever the order of the groups."""
    eng = overlog.Engine("materialize(m, infinity, infinity, keys(1)).\n"
                         "m(X, Y, count<Z>) :- q(X, Y, Z).\n")
    for row in [(1, 10, "a"), (2, 0, "z"), (3, 0, "z")]:
        eng.insert("q", row)
    eng.run()
    eng.delete("q", (1, 10, "a"))
    eng.insert("q", (1, 20, "a"))
    (report,) = eng.run()
    assert report.errors == []
    assert eng.rows("m") == [(1, 20, 1), (2, 0, 1), (3, 0, 1)]


def test_the_tuple_limit_counts_new_tuples_not_the_rows_plans_read() -> None:
    """Recomputing a group reads every row of it; only the group's row is new."""
    eng = overlog.Engine("cnt(count<X>) :- n(X).\n", max_tuples=100)
    for i in range(60):
        eng.insert("n", (i,))
    eng.run()
    for i in range(60, 120):
        eng.insert("n", (i,))
    assert [e for r in eng.run() for e in r.errors] == []
    assert eng.rows("cnt") == [(120,)]


GUARDED = "r(Z) :- a(X, Y), notin zero(Y), Z := X / Y.\n"


def test_a_negation_guards_an_expression_when_its_row_comes_in_the_same_step() -> None:
    """`notin zero(Y)` keeps `X / Y` from Y = 0 however the rows arrive: with the guard in
    the program's facts, or in one step with the guarded row; and the guarded row can be
    deleted. (The plans finding the rows to delete drop the negation: a binding
    failing there derived nothing.)"""
    facts = overlog.Engine("zero(0).\na(1, 0). a(4, 2).\n" + GUARDED)
    together = overlog.Engine(GUARDED)
    together.insert("a", (4, 2))
    together.step()
    together.insert("zero", (0,))
    together.insert("a", (1, 0))
    reports = [facts.step(), together.step()]
    together.delete("a", (1, 0))
    reports.append(together.step())
    assert _errors(reports) == [[], [], []]
    assert [(e.rows("a"), e.rows("zero"), e.rows("r")) for e in (facts, together)] == [
        ([(1, 0), (4, 2)], [(0,)], [(2,)]), ([(4, 2)], [(0,)], [(2,)])]
    together.insert("a", (1, 0))
    together.delete("zero", (0,))  # now nothing guards it: the program's error
    assert _errors([together.step()]) == [[("E302", "1", (("insert", "a", (1, 0)),), None)]]
    assert (together.rows("a"), together.rows("zero"), together.rows("r")) == (
        [(4, 2)], [], [(2,)])


@pytest.mark.parametrize("rule", [
    "r(X) :- a(X, Y), notin zero(Y), X / Y > 0.",
    "r(X) :- a(X, Y), W := Y, notin zero(W), Z := X / W, Z > 0.",  # (W readies the notin)
    "r(X) :- a(X, Y), W := Y, notin zero(W), X / W > 0.",
])
def test_a_negation_guards_what_comes_after_it(rule: str) -> None:
    eng = overlog.Engine("zero(0).\na(1, 0). a(4, 2).\n" + rule + "\n")
    assert (_errors([eng.step()]), eng.rows("a"), eng.rows("r")) == (
        [[]], [(1, 0), (4, 2)], [(4,)])


def test_an_atom_guards_an_expression_written_after_it() -> None:
    """`c(X)` comes before `10 / X`: `a(0)` without `c(0)` has no binding, and divides by
    nothing, whichever of the two arrives first; with `c(0)` the division is the program's
    error."""
    rule = "r(Y) :- a(X), c(X), Y := 10 / X.\n"
    eng = overlog.Engine("a(0). a(2). c(2).\n" + rule)
    assert (_errors([eng.step()]), eng.rows("r")) == ([[]], [(5,)])
    eng.insert("c", (0,))
    assert _errors([eng.step()]) == [[("E302", "1", (("insert", "c", (0,)),), None)]]
    other = overlog.Engine("c(0). c(2). a(2).\n" + rule)
    assert (_errors([other.step()]), other.rows("r")) == ([[]], [(5,)])
    other.insert("a", (0,))
    assert _errors([other.step()]) == [[("E302", "1", (("insert", "a", (0,)),), None)]]


@pytest.mark.parametrize(("rule", "fails"), [
    # evaluated where written: after a and c, before the test after it
    ("r(X) :- a(X, Y), c(Z), X / Y > 0, Y != 0.", True),
    ("r(X) :- a(X, Y), c(Z), X / Y > 0, notin zero(Y).", True),
    ("r(W) :- a(X, Y), c(Z), W := X / Y, Y > 0.", True),
    # guarded by what comes before it
    ("r(X) :- a(X, Y), c(Z), Y != 0, X / Y > 0.", False),
    ("r(X) :- a(X, Y), c(Z), notin zero(Y), X / Y > 0.", False),
    ("r(W) :- a(X, Y), c(Z), Y > 0, W := X / Y.", False),
])
def test_whether_an_expression_fails_does_not_depend_on_what_arrived_first(
        rule: str, fails: bool) -> None:
    """The same rows in one step, or a(1, 0) then c(7), or c(7) then a(1, 0): the
    division is evaluated on the same bindings, whatever plan meets them."""
    outcomes = []
    for order in (["a", "c"], ["c", "a"], ["ac"]):
        eng = overlog.Engine("zero(0).\na(4, 2).\n" + rule + "\n")
        eng.step()
        for part in order:
            if "a" in part:
                eng.insert("a", (1, 0))
            if "c" in part:
                eng.insert("c", (7,))
            outcomes.append(any(r.errors for r in eng.run()))
    assert outcomes == [False, fails, False, fails, fails]


@pytest.mark.parametrize(("rule", "rows"), [
    # e(0) matches nothing: a count of 0, its division never evaluated
    ("r(X, count<*>) :- e[X], a(X), Y := 10 / X.", [(0, 0), (2, 1)]),
    # its group cannot be computed: no row for it, and no error
    ("r(K, count<*>) :- e[X], a(X), K := 10 / X.", [(5, 1)]),
])
def test_an_event_matching_nothing_evaluates_only_what_it_reached(rule, rows) -> None:
    eng = overlog.Engine("a(2).\n" + rule + "\n")
    eng.generate_event("e", (0,))
    eng.generate_event("e", (2,))
    assert (_errors(eng.run()), eng.rows("r")) == ([[], []], rows)  # (the facts, the events)


def test_an_event_matching_nothing_finds_its_group_as_written() -> None:
    """e(0) matches nothing; its group is found following the body: `X != 0` comes before
    `f_size(X)` (which fails on 0, a function's failure being the program's error)."""
    eng = overlog.Engine('a("ab").\nr(K, count<*>) :- e[X], a(X), X != 0, K := f_size(X).\n')
    eng.generate_event("e", (0,))
    eng.generate_event("e", ("ab",))
    assert (_errors(eng.run()), eng.rows("r")) == ([[], []], [(2, 1)])


def test_an_atoms_column_is_computed_where_the_atom_is() -> None:
    """`10 / X` in `b`'s column comes after `X != 0`, in the plan `b` drives too: a(0)
    never divides, whichever of a and b arrives first."""
    outcomes = []
    for order in (["a", "b"], ["b", "a"], ["ab"]):
        eng = overlog.Engine("r(X) :- a(X), X != 0, b(10 / X).\n")
        for part in order:
            for relation, row in [("a", (0,)), ("a", (5,)), ("b", (2,))]:
                if relation in part:
                    eng.insert(relation, row)
            outcomes.append(_errors(eng.run()))
        outcomes.append(eng.rows("r"))
    assert outcomes == [[[]], [[]], [(5,)]] * 2 + [[[]], [(5,)]]


def test_a_negations_expression_is_tested_where_the_negation_is() -> None:
    """When q(2) goes, the plan driven by it meets a(0): `10 / X` in the `notin` comes
    after `X != 0`, in that plan too."""
    eng = overlog.Engine("a(0). a(5). q(2).\nr(X) :- a(X), X != 0, notin q(10 / X).\n")
    assert (_errors([eng.step()]), eng.rows("r")) == ([[]], [])
    eng.delete("q", (2,))
    assert (_errors([eng.step()]), eng.rows("r")) == ([[]], [(5,)])


def test_a_column_computed_from_the_atoms_own_variable_waits_for_its_place() -> None:
    """`10 / X` in `b(X, 10 / X)` and in `notin q(X, 10 / X)` uses the `X` its own atom
    binds where that atom drives the plan; it is computed after `X != 0` there too."""
    eng = overlog.Engine("a(5).\nr(X) :- a(X), X != 0, b(X, 10 / X).\n")
    eng.insert("b", (0, 3))
    assert (_errors(eng.run()), eng.rows("r"), eng.rows("b")) == ([[]], [], [(0, 3)])
    eng.insert("b", (5, 2))
    assert (_errors(eng.run()), eng.rows("r")) == ([[]], [(5,)])
    eng = overlog.Engine("a(5). q(0, 1). q(5, 9).\nr(X) :- a(X), X != 0, notin q(X, 10 / X).\n")
    assert (_errors([eng.step()]), eng.rows("r")) == ([[]], [(5,)])
    eng.delete("q", (0, 1))
    assert (_errors(eng.run()), eng.rows("r"), eng.rows("q")) == ([[]], [(5,)], [(5, 9)])
    eng.insert("q", (5, 2))
    assert (_errors(eng.run()), eng.rows("r")) == ([[]], [])


def test_a_rule_without_atoms_feeding_a_guarded_expression_stays() -> None:
    """`a(0)` fires at the first step; with no `c(0)`, rule 2 divides by nothing (it used
    to, and rule 1 was dropped for good though nothing was wrong)."""
    eng = overlog.Engine("a(0) :- notin b(0).\nr(Y) :- a(X), c(X), Y := 1 / X.\n")
    assert (_errors([eng.step()]), eng.rows("a"), eng.rows("r")) == ([[]], [(0,)], [])


def test_a_binding_failing_where_rows_are_found_skips_only_itself() -> None:
    """When `zero(1)` arrives, the rows to delete are found from `a`'s rows with X = 1:
    `a(1, 0)` (guarded by `bad(0)`) fails there and is passed over; `a(1, 5)`'s row, read
    after it, still goes."""
    eng = overlog.Engine("bad(0).\na(1, 0). a(1, 5).\n"
                         "r(Z) :- a(X, Y), notin zero(X), notin bad(Y), Z := 10 / Y.\n")
    assert _errors([eng.step()]) == [[]]
    assert (eng.rows("a"), eng.rows("r")) == ([(1, 0), (1, 5)], [(2,)])
    eng.insert("zero", (1,))
    assert _errors([eng.step()]) == [[]]
    assert (eng.rows("zero"), eng.rows("r")) == ([(1,)], [])


def test_rederiving_a_row_of_another_rule_passes_over_this_rules_failing_binding() -> None:
    """p(1, "s") goes with e(1, "s"); whether rule 2 derives it too is checked with its
    own expressions, where `"s" < 100` fails: it does not derive it."""
    eng = overlog.Engine('p(X, C) :- e(X, C).\np(X, C) :- f(X, D), C := D + 1, C < 100.\n')
    eng.insert("e", (1, "s"))
    eng.insert("f", (2, 5))
    eng.step()
    eng.delete("e", (1, "s"))
    assert _errors([eng.step()]) == [[]]
    assert (eng.rows("e"), eng.rows("p")) == ([], [(2, 6)])


def test_an_aggregates_guarded_row_can_be_deleted() -> None:
    eng = overlog.Engine("zero(0).\ns(Y, sum<Z>) :- a(X, Y), notin zero(Y), Z := X / Y.\n")
    eng.step()
    eng.insert("a", (1, 0))
    eng.insert("a", (4, 2))
    eng.step()
    eng.delete("a", (1, 0))
    assert _errors([eng.step()]) == [[]]
    assert (eng.rows("a"), eng.rows("s")) == ([(4, 2)], [(2, 2)])


def test_a_function_failing_where_rows_are_found_is_still_the_programs_error() -> None:
    """A function may fail where it did not (a user's): had it derived the row, passing
    over it would leave the row for good, so its failure stays the program's error."""
    calls: list[int] = []

    def f_look(x: int) -> int:
        calls.append(x)
        if len(calls) > 1:
            raise ValueError("gone")
        return 10

    eng = overlog.Engine("r(X, Y) :- a(X), Y := f_look(X).\n", functions={"f_look": f_look})
    eng.insert("a", (1,))
    eng.step()
    eng.delete("a", (1,))
    assert _errors([eng.step()]) == [[("E301", "1", (("delete", "a", (1,)),), None)]]
    assert (eng.rows("a"), eng.rows("r")) == ([(1,)], [(1, 10)])


def test_over_deletion_and_rederivation_plans_find_rows() -> None:
    """Over-deletion and rederivation find rows (``finds``); insertion derives them."""
    (rule,) = compile_program(GUARDED).rules
    assert [(t.relation, t.insert.finds, t.delete.finds) for t in rule.triggers] == [
        ("a", False, True), ("zero", False, True)]
    assert rule.rederive.finds is True
