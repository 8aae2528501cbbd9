"""The engine's door to the outside: send listeners and outbound tuples, ``deliver`` (from any
thread), handlers, and an injectable clock."""

from __future__ import annotations

import threading
import time

import pytest

import overlog
from overlog import ANY, DeliveryError
from overlog.runtime.events import Outbound
from overlog.runtime.local import LocalBackend
from overlog.stdlib import Loopback, periodic

GOSSIP = """
peer(@"a", "a").
peer(@"a", "b").
pong[@P, X] :- ping[@A, X], peer(@A, P).
heard(@N, X) :- pong[@N, X].
copy(@P, X) :- kept(@A, X), peer(@A, P).
delete kept(@A, X) :- drop[@A, X], kept(@A, X).
"""


def test_sent_tuples_leave_as_send_events_and_loop_back_home() -> None:
    loopback = Loopback()
    eng = overlog.Engine(GOSSIP, address="a", handlers=[loopback])
    sent: list[tuple] = []
    eng.register_listener("pong", None, sent.append, phase="send")
    eng.register_listener("copy", (ANY, 7), sent.append, phase="send", op="insert")
    eng.generate_event("ping", ("a", 1))
    eng.insert("kept", ("a", 7))
    report = eng.step()
    assert report.sent == [Outbound("a", "pong", "event", ("a", 1)),
                           Outbound("b", "pong", "event", ("b", 1)),
                           Outbound("a", "copy", "insert", ("a", 7)),
                           Outbound("b", "copy", "insert", ("b", 7))]
    assert sorted(sent) == [("a", 1), ("a", 7), ("b", 1), ("b", 7)]
    assert loopback.undeliverable == 2  # b is not this node, and no transport knows it
    assert (eng.rows("heard"), eng.rows("copy")) == ([], [])
    report = eng.step()  # what was sent to this node arrives
    assert report.events == {"pong": [("a", 1)]}
    assert report.inserted == {"copy": [("a", 7)]}
    eng.run()
    assert eng.rows("heard") == [("a", 1)]
    assert loopback.undeliverable == 2


def test_remote_deletes_leave_as_deletes() -> None:
    source = 'delete item(@D, X) :- cut[@A, D, X].\nitem(@"n", 1).\nitem(@"n", 2).\n'
    eng = overlog.Engine(source, address="n")
    eng.run()
    eng.generate_event("cut", ("n", "n", 1))
    deleted: list[tuple] = []
    eng.register_listener("item", None, deleted.append, phase="send", op="delete")
    assert eng.step().sent == [Outbound("n", "item", "delete", ("n", 1))]
    eng.run()
    assert (deleted, eng.rows("item")) == ([("n", 1)], [("n", 2)])


def test_located_facts_for_other_nodes_are_sent_at_the_first_step() -> None:
    eng = overlog.Engine('item(@"elsewhere", 1).\nitem(@"here", 2).\n', address="here")
    assert eng.step().sent == [Outbound("elsewhere", "item", "insert", ("elsewhere", 1))]
    assert eng.rows("item") == [("here", 2)]


def test_deliver_takes_events_and_changes_for_the_next_step() -> None:
    eng = overlog.Engine("got(X) :- e[X].\nheld(X, Y) :- t(X, Y).\n")
    eng.deliver("e", [1])
    eng.deliver("t", (1, [2, [3]]))
    eng.deliver("t", (5, 6), op="insert")
    assert not eng.idle
    eng.run()
    assert eng.rows("held") == [(1, (2, (3,))), (5, 6)]
    eng.deliver("t", (5, 6), op="delete")
    eng.run()
    assert (eng.rows("got"), eng.rows("held")) == ([(1,)], [(1, (2, (3,)))])


def _nested(depth: int) -> list:
    """A list of lists, ``depth`` deep."""
    value: list = []
    for _ in range(depth - 1):
        value = [value]
    return value


@pytest.mark.parametrize(("relation", "row", "op", "message"), [
    ("nope", (1,), None, "no relation `nope` to deliver to"),
    ("periodic", ("n", 1, 1, 1), None, "no relation `periodic` to deliver to"),
    ("error", (1, "e", (), "m"), None, "no relation `error` to deliver to"),
    ("e", (1, 2), None, "`e` has 1 fields; got 2"),
    ("e", "x", None, "`e` has 1 fields; got 'x'"),
    ("e", (object(),), None, "not an Overlog value: object"),
    ("e", ({1: 2},), None, "not an Overlog value: dict"),
    ("e", (1,), "insert", "`e` is an event relation: no op 'insert'"),
    ("t", (1, 2), "upsert", "op must be 'insert' or 'delete', not 'upsert'"),
    (["e"], (1,), None, "no relation `['e']` to deliver to"),
    ("e", (_nested(1001),), None, "a list nested more than 1,000 deep (the limit)"),
    ("e", (_nested(5000),), None, "a list nested more than 1,000 deep (the limit)"),
])
def test_deliver_refuses_what_the_program_cannot_hold(relation, row, op, message) -> None:
    eng = overlog.Engine("got(X) :- e[X].\nheld(X, Y) :- t(X, Y).\n"
                         "tick(E) :- periodic[_, E, 1, 1].\nsaw(S) :- error[S, _, _, _].\n")
    with pytest.raises(DeliveryError) as caught:
        eng.deliver(relation, row, op)
    assert str(caught.value) == message
    assert eng.idle or (eng.step_count == 0 and not eng._inbox)


def test_values_nest_as_deep_as_terms_may() -> None:
    eng = overlog.Engine("got(X) :- e[X].\nheld(X) :- t(X).\n")
    eng.deliver("e", (_nested(1000),))
    eng.insert("t", (_nested(1000),))
    eng.run()
    ((value,),) = eng.rows("held")
    depth = 1
    while value:  # (== on values this deep would pass Python's recursion limit)
        (value,) = value
        depth += 1
    assert (depth, value) == (1000, ())
    with pytest.raises(ValueError) as caught:
        eng.insert("t", (_nested(1001),))
    assert str(caught.value) == "`t`: a list nested more than 1,000 deep (the limit)"


@pytest.mark.parametrize("items", [[("e", (1,))], [1], [("e", (1,), None, "x")]])
def test_deliver_many_refuses_an_item_that_is_not_relation_row_op(items) -> None:
    eng = overlog.Engine("got(X) :- e[X].\n")
    with pytest.raises(DeliveryError) as caught:
        eng.deliver_many([("e", (0,), None), *items])
    assert str(caught.value) == (f"an item to deliver is (relation, row, op), not "
                                 f"{items[0]!r}")
    assert eng.idle  # (none of them delivered)


def test_deliver_from_another_thread_wakes_a_waiting_run() -> None:
    eng = overlog.Engine("got(X) :- e[X].\n", clock="real")
    eng.generate_event("e", (0,), when=30.0)  # run() would sleep until then
    start = time.monotonic()
    timer = threading.Timer(0.2, eng.deliver, ("e", (1,)))
    timer.start()
    try:
        reports = eng.run(steps=1)
    finally:
        timer.cancel()
    assert time.monotonic() - start < 10
    assert [r.events for r in reports] == [{"e": [(1,)]}]


def test_deliveries_from_many_threads_while_it_steps_all_arrive() -> None:
    eng = overlog.Engine("got(T, I) :- e[T, I].\n")
    go = threading.Event()

    def send(thread: int) -> None:
        go.wait()
        for i in range(2000):
            eng.deliver("e", (thread, i))

    threads = [threading.Thread(target=send, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    go.set()
    steps = 0
    while any(thread.is_alive() for thread in threads):
        eng.step()  # the engine steps while the threads deliver
        steps += 1
    eng.run()
    assert len(eng.rows("got")) == 8000 and steps > 0


class StepClock:
    """A clock a test drives: waits are recorded and jump there."""

    def __init__(self) -> None:
        self.time = 100.0
        self.waits: list[float | None] = []

    def now(self) -> float:
        return self.time

    def wait(self, until: float | None) -> None:
        self.waits.append(until)
        if until is not None:
            self.time = until

    def wake(self) -> None:
        pass


def test_the_clock_is_injectable() -> None:
    clock = StepClock()
    eng = overlog.Engine("at(T) :- periodic[_, _, 5, 2], T := f_now().\n", clock=clock)
    eng.run()
    assert clock.waits == [105.0, 110.0]
    assert eng.rows("at") == [(105.0,), (110.0,)]


def test_handlers_are_the_callers_choice() -> None:
    """Without periodic's handler, nothing schedules timers; with it, they fire."""
    source = "tick(E) :- periodic[_, E, 1, 3].\n"
    bare = overlog.Engine(source, handlers=[])
    bare.run()
    assert bare.rows("tick") == []
    timed = overlog.Engine(source, handlers=[periodic.install])
    timed.run()
    assert timed.rows("tick") == [(1,), (2,), (3,)]


def test_send_listener_errors_are_reported_and_the_step_stands() -> None:
    eng = overlog.Engine('out[@"x", N] :- in[N].\n', address="me")

    def fail(row: tuple) -> None:
        raise OSError("network is down")

    eng.register_listener("out", None, fail, phase="send")
    eng.generate_event("in", (1,))
    report = eng.step()
    assert [(e.code, e.message) for e in report.errors] == [
        ("E306", "send listener on `out` raised OSError: network is down")]
    assert report.events == {"in": [(1,)]}


def test_listener_phases_are_checked() -> None:
    eng = overlog.Engine("p(X) :- q(X).\n")
    with pytest.raises(ValueError, match="phase must be 'pre', 'post' or 'send'"):
        eng.register_listener("p", None, print, phase="later")


def test_the_backend_is_pluggable() -> None:
    made = []

    def factory(relations, functions, user):
        made.append(sorted(relations))
        return LocalBackend.create(relations, functions, user)

    eng = overlog.Engine("p(X) :- q(X).\nq(1).\n", backend=factory)
    eng.run()
    assert (made, eng.rows("p")) == ([["error", "p", "q"]], [(1,)])
    with pytest.raises(ValueError) as caught:
        overlog.Engine("p(1).", backend="nope")
    assert str(caught.value) == ("backend must be 'local', 'auto', 'spark', 'vector' or a "
                                 "BackendFactory, not 'nope'")


def test_a_compiled_plan_runs_on_many_engines() -> None:
    plan = overlog.compile_program('a["x"].\nregisterNativeEventHandler["a", "mine:f"].\n',
                                   native_modules=["mine"])  # allowed, and not imported
    message = "defines and dialect apply when compiling: pass them to compile_program"
    for option in ({"defines": {"X": 1}}, {"dialect": "p2"}):
        with pytest.raises(ValueError) as raised:
            overlog.Engine(plan, **option)
        assert str(raised.value) == message
    for options, message in [
            ({}, "native handler `mine:f` is not allowed: a program binds only `stdlib.` "
                 "handlers, and modules its user allows (`--native mine`)"),
            ({"native_modules": ["mine"]}, "unknown native handler `mine:f`: cannot import "
                                           "`mine` (No module named 'mine')")]:
        with pytest.raises(overlog.SemanticError) as caught:
            overlog.Engine(plan, **options)
        assert [(d.code, d.message, d.span.line) for d in caught.value.diagnostics] == [
            ("E218", message, 2)]
    seen: list[tuple] = []
    for address in ("a", "b"):
        eng = overlog.Engine(plan, address=address, natives=lambda target: seen.append)
        eng.run()
    assert seen == [("x",), ("x",)]
