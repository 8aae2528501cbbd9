"""Remote views (design.md 3.7): a view rule whose head lives at another node sends what it
newly derives and retracts what it no longer derives, and the receiver keeps a row while
some sender supports it; path-vector routes reconverge after a link goes."""

from __future__ import annotations

import re

from overlog import Engine
from overlog.limits import recursion_room
from overlog.stdlib import wire
from overlog.stdlib.sim import SimNetwork

PATH_VECTOR = """
rlink(@Y, X, C) :- link(@X, Y, C).
path(@X, Y, P, C) :- link(@X, Y, C), P := [X, Y].
path(@X, Z, P, C) :- rlink(@Y, X, C1), path(@Y, Z, P2, C2), f_member(P2, X) == false,
                     P := f_cons(X, P2), C := C1 + C2.
best(@X, Z, min<C>) :- path(@X, Z, P, C).
"""
LINKS = [("a", "b", 1), ("b", "c", 1), ("c", "d", 1), ("d", "a", 5), ("b", "d", 4)]


def nodes(program: str, names: str, **settings) -> tuple[SimNetwork, dict[str, Engine]]:
    net = SimNetwork(**settings)
    engines = {n: Engine(program, address=n, clock=net.clock, handlers=net.handlers())
               for n in names}
    return net, engines


def central(links: list[tuple], relation: str = "best") -> list[tuple]:
    """The same program on one node, its locations taken away: what the nodes must agree
    with."""
    program = re.sub(r"@", "", PATH_VECTOR)
    engine = Engine(program, backend="local")
    for x, y, c in links:
        engine.insert("link", (x, y, c))
        engine.insert("link", (y, x, c))
    engine.run()
    return engine.rows(relation)


def everywhere(engines: dict[str, Engine], relation: str) -> list[tuple]:
    return sorted(row for engine in engines.values() for row in engine.rows(relation))


def test_path_vector_routes_reconverge_after_links_go_and_come_back() -> None:
    net, engines = nodes(PATH_VECTOR, "abcd", latency=0.01)
    for x, y, c in LINKS:
        engines[x].insert("link", (x, y, c))
        engines[y].insert("link", (y, x, c))
    net.run()
    assert everywhere(engines, "best") == central(LINKS)
    for x, y, c in (("a", "b", 1), ("b", "d", 4)):
        engines[x].delete("link", (x, y, c))
        engines[y].delete("link", (y, x, c))
    net.run()
    left = [("b", "c", 1), ("c", "d", 1), ("d", "a", 5)]
    assert everywhere(engines, "best") == central(left)
    assert engines["a"].rows("best") == [("a", "b", 7), ("a", "c", 6), ("a", "d", 5)]
    engines["a"].insert("link", ("a", "b", 1))
    engines["b"].insert("link", ("b", "a", 1))
    net.run()
    back = [("a", "b", 1), *left]
    assert everywhere(engines, "best") == central(back)
    assert everywhere(engines, "path") == central(back, "path")  # no stale path anywhere


def test_a_row_stays_while_some_sender_supports_it() -> None:
    program = 'seen(@"hub", T) :- item(@X, T).'
    net, engines = nodes(program, ["hub", "a", "b"])
    engines["a"].insert("item", ("a", "x"))
    engines["b"].insert("item", ("b", "x"))
    net.run()
    assert engines["hub"].rows("seen") == [("hub", "x")]
    engines["a"].delete("item", ("a", "x"))
    net.run()
    assert engines["hub"].rows("seen") == [("hub", "x")]  # b still derives it
    engines["b"].delete("item", ("b", "x"))
    net.run()
    assert engines["hub"].rows("seen") == []


def test_a_retraction_without_support_and_a_duplicate_change_nothing() -> None:
    program = 'seen(@"hub", T) :- item(@X, T).'
    net, engines = nodes(program, ["hub", "a"], duplicate=1.0)
    engines["a"].insert("item", ("a", "x"))
    net.run()
    receiver = net.nodes["hub"].receiver
    receiver.take(wire.encode("z", [("retract", "seen", ("hub", "x"))]))  # z never sent it
    net.run()
    assert engines["hub"].rows("seen") == [("hub", "x")]
    engines["a"].delete("item", ("a", "x"))
    net.run()  # the retraction arrives twice
    assert engines["hub"].rows("seen") == []
    assert net.stats == {"sent": 2, "duplicated": 2, "delivered": 4}


def test_negation_and_aggregates_in_remote_views() -> None:
    program = """
    missing(@"hub", X, Y) :- want(@X, Y), notin have(@X, Y).
    total(@"hub", X, count<*>) :- want(@X, _).
    """
    net, engines = nodes(program, ["hub", "a"])
    a, hub = engines["a"], engines["hub"]
    for y in (1, 2, 3):
        a.insert("want", ("a", y))
    net.run()
    assert hub.rows("missing") == [("hub", "a", 1), ("hub", "a", 2), ("hub", "a", 3)]
    assert hub.rows("total") == [("hub", "a", 3)]
    a.insert("have", ("a", 2))
    a.delete("want", ("a", 3))
    net.run()
    assert hub.rows("missing") == [("hub", "a", 1)]
    assert hub.rows("total") == [("hub", "a", 2)]
    a.delete("have", ("a", 2))
    net.run()
    assert hub.rows("missing") == [("hub", "a", 1), ("hub", "a", 2)]


def test_a_failed_step_sends_nothing_and_forgets_nothing() -> None:
    program = """
    materialize(k, infinity, infinity, keys(1, 2)).
    copy(@"b", X) :- e(@"a", X).
    k(@"a", 1, V) :- go[@"a", V].
    """
    net, engines = nodes(program, "ab")
    a = engines["a"]
    a.insert("e", ("a", 1))
    a.generate_event("go", ("a", 10))
    a.generate_event("go", ("a", 20))  # a key conflict: the step runs again without one
    reports = net.run()
    assert [e.code for _, r in reports for e in r.errors] == ["E303"]
    assert engines["b"].rows("copy") == [("b", 1)]
    a.delete("e", ("a", 1))
    net.run()
    assert engines["b"].rows("copy") == []


def test_support_tells_one_from_one_point_zero() -> None:
    program = 'seen(@"hub", V) :- item(@X, V).'
    net, engines = nodes(program, ["hub", "a", "b"])
    engines["a"].insert("item", ("a", 1))
    engines["b"].insert("item", ("b", 1.0))
    net.run()
    assert engines["hub"].rows("seen") == [("hub", 1.0), ("hub", 1)]
    engines["a"].delete("item", ("a", 1))
    net.run()
    assert engines["hub"].rows("seen") == [("hub", 1.0)]


def test_a_deeply_nested_value_does_not_stop_the_receiver() -> None:
    deep: tuple = ()
    for _ in range(990):
        deep = (deep,)
    net, engines = nodes("seen(@Y, V) :- item(@X, Y, V).", ["a", "b"])
    receiver = net.nodes["b"].receiver
    receiver.take(wire.encode("a", [("insert", "seen", ("b", deep))]))
    receiver.take(wire.encode("a", [("insert", "seen", ("b", 1))]))
    net.run()
    rows = engines["b"].rows("seen")
    with recursion_room():  # comparing values this deep takes Python's recursion too
        assert rows == [("b", 1), ("b", deep)]
    assert receiver.received == 2
