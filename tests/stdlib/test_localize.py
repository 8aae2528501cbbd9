"""Localization (overlog/analysis/localize.py): a body at several locations is rewritten into
rules with one location each; run on the simulated network, the nodes together hold what
the same program derives on one node without its locations."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from overlog import Engine, compile_program
from overlog.printer import format_statement
from overlog.stdlib.sim import SimNetwork


def rewritten(program: str) -> list[str]:
    plan = compile_program(program)
    return [format_statement(st) for st in plan.checked.program.statements]


def run(program: str, names: str, rows: dict[str, list[tuple]], **settings):
    net = SimNetwork(**settings)
    engines = {n: Engine(program, address=n, clock=net.clock, handlers=net.handlers())
               for n in names}
    for relation, found in rows.items():
        for row in found:
            engines[row[0]].insert(relation, row)
    net.run()
    return net, engines


def central(program: str, rows: dict[str, list[tuple]], relation: str) -> list[tuple]:
    engine = Engine(program.replace("@", ""), backend="local")
    for name, found in rows.items():
        for row in found:
            engine.insert(name, row)
    engine.run()
    return engine.rows(relation)


def gathered(engines: dict[str, Engine], relation: str) -> list[tuple]:
    return sorted(row for engine in engines.values() for row in engine.rows(relation))


def test_the_rewrite_ships_what_the_rest_of_the_rule_needs() -> None:
    assert rewritten(
        "r3 path(@X, Z, C) :- link(@X, Y, C1), path(@Y, Z, C2), C := C1 + C2, C < 10.\n"
        "two(@A, D) :- l(@A, B, W), l(@B, C, _), W > 1, l(@C, D, _).") == [
        "r3_at_Y(@Y, X, C1) :- link(@X, Y, C1).",
        "r3 path(@X, Z, C) :- r3_at_Y(@Y, X, C1), path(@Y, Z, C2), C := C1 + C2, C < 10.",
        "two_2_at_B(@B, A) :- l(@A, B, W), W > 1.",
        "two_2_at_C(@C, A) :- two_2_at_B(@B, A), l(@B, C, _1).",
        "two(@A, D) :- two_2_at_C(@C, A), l(@C, D, _2).",
    ]


def test_events_travel_as_events_and_aggregates_gather_at_the_head() -> None:
    assert rewritten("reply[@X, Z] :- ask[@X, Y], link(@X, Y), data(@Y, Z).\n"
                     'total(@"hub", count<*>) :- want(@X, _).') == [
        "reply_1_at_Y[@Y, X] :- ask[@X, Y], link(@X, Y).",
        "reply[@X, Z] :- reply_1_at_Y[@Y, X], data(@Y, Z).",
        'total_2_at_hub(@"hub", X, _1) :- want(@X, _1).',
        'total(@"hub", count<*>) :- total_2_at_hub(@"hub", X, _1).',
    ]


def test_a_three_hop_rule_across_nodes() -> None:
    program = "hop3(@A, D) :- l(@A, B), l(@B, C), l(@C, D)."
    rows = {"l": [("a", "b"), ("b", "c"), ("c", "d"), ("c", "a"), ("d", "a"), ("b", "d")]}
    net, engines = run(program, "abcd", rows, latency=0.1)
    assert gathered(engines, "hop3") == central(program, rows, "hop3") == [
        ("a", "a"), ("a", "d"), ("b", "a"), ("b", "b"), ("c", "b"), ("c", "c"), ("c", "d"),
        ("d", "c"), ("d", "d")]
    engines["b"].delete("l", ("b", "c"))
    net.run()
    rows["l"].remove(("b", "c"))
    assert gathered(engines, "hop3") == central(program, rows, "hop3")


def test_an_event_asks_a_neighbour() -> None:
    program = """
    reply[@X, Z] :- ask[@X, Y], link(@X, Y), data(@Y, Z).
    got(@X, Z) :- reply[@X, Z].
    """
    rows = {"link": [("a", "b"), ("a", "c")], "data": [("b", 1), ("b", 2), ("c", 3)]}
    net, engines = run(program, "abc", rows, latency=0.5)
    engines["a"].generate_event("ask", ("a", "b"))
    net.run()
    assert engines["a"].rows("got") == [("a", 1), ("a", 2)]


def test_a_remote_aggregate_counts_every_nodes_bindings() -> None:
    program = 'total(@"hub", count<*>) :- want(@X, _).'
    rows = {"want": [("a", 1), ("a", 2), ("b", 1)]}
    net, engines = run(program, ["hub", "a", "b"], rows)
    assert engines["hub"].rows("total") == [("hub", 3)]
    engines["a"].delete("want", ("a", 2))
    net.run()
    assert engines["hub"].rows("total") == [("hub", 2)]


PATHS = """
path(@X, Y, P) :- link(@X, Y), P := [X, Y].
path(@X, Z, P) :- link(@X, Y), path(@Y, Z, P2), f_member(P2, X) == false,
                  P := f_cons(X, P2).
reach(@X, count<*>) :- path(@X, _, _).
"""
NODES = "abcd"
edges = st.lists(st.tuples(st.sampled_from(NODES), st.sampled_from(NODES)).filter(
    lambda e: e[0] != e[1]), max_size=8, unique=True)


@settings(max_examples=15, deadline=None)
@given(edges, st.data())
def test_localized_paths_equal_one_nodes(links: list[tuple], data) -> None:
    rows = {"link": links}
    net, engines = run(PATHS, NODES, rows, latency=0.01)
    for relation in ("path", "reach"):
        assert gathered(engines, relation) == central(PATHS, rows, relation)
    gone = data.draw(st.lists(st.sampled_from(links), unique=True)) if links else []
    for link in gone:
        engines[link[0]].delete("link", link)
    net.run()
    rows = {"link": [link for link in links if link not in gone]}
    for relation in ("path", "reach"):
        assert gathered(engines, relation) == central(PATHS, rows, relation)



def test_an_aggregate_counts_every_binding_across_locations() -> None:
    program = "cnt(@X, count<*>) :- a(@X, Y, W), t(@Y, Z)."
    rows = {"a": [("x", "y", 1), ("x", "y", 2)], "t": [("y", "z")]}
    _, engines = run(program, "xy", rows)
    assert gathered(engines, "cnt") == central(program, rows, "cnt") == [("x", 2)]


def test_wildcards_never_meet_a_variable_of_the_rule() -> None:
    program = "p(@X, Y) :- a(@X, Y, _), b(@Y, _1)."
    rows = {"a": [("x", "y", 1)], "b": [("y", 2)]}
    _, engines = run(program, "xy", rows)
    assert gathered(engines, "p") == central(program, rows, "p") == [("x", "y")]


def test_a_delete_rule_over_tables_sees_later_rows_at_the_far_node() -> None:
    program = "delete p(@X, Y) :- a(@X, Y), b(@Y)."
    assert rewritten(program)[0] == "p_1_at_Y(@Y, X) :- a(@X, Y)."  # a table, not an event
    rows = {"p": [("x", "y")], "a": [("x", "y")]}
    net, engines = run(program, "xy", rows)
    assert engines["x"].rows("p") == [("x", "y")]
    engines["y"].insert("b", ("y",))  # after a's row travelled: still deletes
    net.run()
    assert engines["x"].rows("p") == []


def test_two_rules_deriving_one_row_keep_it_until_both_stop() -> None:
    program = "r(@Z, X) :- a(@X, Z).\nr(@Z, X) :- c(@X, Z)."
    rows = {"a": [("x", "y")], "c": [("x", "y")]}
    net, engines = run(program, "xy", rows)
    assert engines["y"].rows("r") == [("y", "x")]
    engines["x"].delete("a", ("x", "y"))
    net.run()
    assert engines["y"].rows("r") == [("y", "x")]
    engines["x"].delete("c", ("x", "y"))
    net.run()
    assert engines["y"].rows("r") == []


def test_a_program_with_nothing_to_localize_is_returned_as_it_is():
    """No copy, and no comparison of programs: comparing expands every fact (a 10 MB program
    of facts took 10 s more to compile when analysis compared them)."""
    from overlog.analysis.localize import localize
    from overlog.parser import parse

    program = parse('link(1, 2).\nlink(2, 3).\npath(X, Y) :- link(X, Y).\n'
                    'out(@Y, X) :- link(@X, Y).')
    same, errors = localize(program, {"link", "path", "out"})
    assert same is program and errors == []
    other = parse("r(@X, Z) :- a(@X, Y), b(@Y, Z).")
    moved, errors = localize(other, {"r", "a", "b"})
    assert errors == [] and moved is not other and len(moved.statements) == 2
