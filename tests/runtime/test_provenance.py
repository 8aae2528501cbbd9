"""Why a tuple is there and why another is not (Engine.why, Engine.why_not, --why,
--why-not): exact trees, well founded through cycles, and checked against the rules on
random graphs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import overlog
from overlog.runtime.provenance import Explanation

_TC = ('link("a", "b").\nlink("b", "c").\nlink("c", "a").\nlink("c", "d").\n'
       "reach(X, Y) :- link(X, Y).\nhop reach(X, Z) :- link(X, Y), reach(Y, Z).\n")


def _engine(source: str = _TC) -> overlog.Engine:
    engine = overlog.Engine(source, "t.olg", provenance=True)
    engine.run()
    return engine


def test_why_gives_a_least_deep_derivation_down_to_the_facts() -> None:
    engine = _engine()
    assert engine.why("reach", ("a", "d")).format() == (
        'reach("a", "d")  [hop (t.olg:6) at step 1: reach(X, Z) :- link(X, Y), reach(Y, Z).]'
        '  X="a", Z="d", Y="b"\n'
        '├─ link("a", "b")  [fact, t.olg:1]\n'
        '└─ reach("b", "d")  [hop (t.olg:6) at step 1: reach(X, Z) :- link(X, Y), '
        'reach(Y, Z).]  X="b", Z="d", Y="c"\n'
        '   ├─ link("b", "c")  [fact, t.olg:2]\n'
        '   └─ reach("c", "d")  [rule 1 (t.olg:5) at step 1: reach(X, Y) :- link(X, Y).]'
        '  X="c", Y="d"\n'
        '      └─ link("c", "d")  [fact, t.olg:4]\n')


def test_a_tuple_on_a_cycle_is_not_its_own_reason() -> None:
    engine = _engine()
    tree = engine.why("reach", ("a", "a"))
    assert [(n.relation, n.row) for n in _walk(tree)] == [
        ("reach", ("a", "a")), ("link", ("a", "b")), ("reach", ("b", "a")),
        ("link", ("b", "c")), ("reach", ("c", "a")), ("link", ("c", "a"))]


def test_after_a_deletion_the_derivation_that_remains_is_given() -> None:
    engine = _engine(_TC + 'link("a", "c").\n')
    engine.delete("link", ("b", "c"))
    engine.step()
    tree = engine.why("reach", ("a", "d"))
    assert [(n.relation, n.row, n.how, n.step) for n in _walk(tree)] == [
        ("reach", ("a", "d"), "derived", 2), ("link", ("a", "c"), "fact", None),
        ("reach", ("c", "d"), "derived", 2), ("link", ("c", "d"), "fact", None)]
    engine.insert("link", ("d", "e"))
    engine.step()
    assert engine.why("reach", ("d", "e")).children[0].format() == \
        'link("d", "e")  [inserted at step 3]\n'


def test_events_written_rows_and_aggregates() -> None:
    engine = _engine("ping[1]. ping[2].\nseen(X) :- ping[X].\nlate(X) :- seen(X), X > 1.\n"
                     "n(count<*>) :- seen(_).\nbig(N) :- n(N), N > 1.\n")
    assert engine.why("big", (2,)).format() == (
        "big(2)  [rule 4 (t.olg:5) at step 2: big(N) :- n(N), N > 1.]  N=2\n"
        "└─ n(2)  [rule 3 (t.olg:4) at step 2, over 2 bindings: n(count<*>) :- seen(_).]\n"
        "   ├─ seen(1)  [written by rule 1 (t.olg:2) at step 1: seen(X) :- ping[X].]  X=1\n"
        "   │  └─ ping[1]  [event at step 1]\n"
        "   └─ seen(2)  [written by rule 1 (t.olg:2) at step 1: seen(X) :- ping[X].]  X=2\n"
        "      └─ ping[2]  [event at step 1]\n")
    assert engine.why("ping", (2,)).format() == "ping[2]  [event at step 1]\n"


def test_why_not_names_what_the_closest_binding_lacks() -> None:
    engine = _engine()
    assert "".join(x.format() for x in engine.why_not("reach", ("d", "a"))) == (
        "rule 1 (t.olg:5): reach(X, Y) :- link(X, Y).\n"
        '  no link("d", "a") matches  X="d", Y="a"\n'
        "hop (t.olg:6): reach(X, Z) :- link(X, Y), reach(Y, Z).\n"
        '  no link("d", Y) matches  X="d", Z="a"\n')
    engine = _engine("a(1). a(2). b(2).\nc(X) :- a(X), notin b(X), X > 1.\n"
                     "d(X) :- a(X), X > 5.\n")
    assert "".join(x.format() for x in engine.why_not("c", (2,))) == (
        "rule 1 (t.olg:2): c(X) :- a(X), notin b(X), X > 1.\n"
        "  notin b: a matching row is there  X=2\n")
    assert "".join(x.format() for x in engine.why_not("d", (1,))) == (
        "rule 2 (t.olg:3): d(X) :- a(X), X > 5.\n  X > 5 is false (after a(1))  X=1\n")
    assert engine.why_not("a", (3,))[0].format() == (
        "no rule derives `a`: only facts and inputs put rows there\n")


def test_what_why_refuses() -> None:
    engine = _engine()
    for call, message in [
            (lambda: engine.why("reach", ("d", "a")),
             'reach("d", "a") is not in `reach` now (why-not says what is missing)'),
            (lambda: engine.why_not("reach", ("a", "b")),
             'reach("a", "b") is in `reach` (why explains it)'),
            (lambda: overlog.Engine("p(1).").why("p", (1,)),
             "why() reads what the engine records with Engine(..., provenance=True)")]:
        with pytest.raises(ValueError) as caught:
            call()
        assert str(caught.value) == message
    events = _engine("e[1].\n")
    with pytest.raises(ValueError, match=r"e\[2\] was not an event of any step"):
        events.why("e", (2,))


def _walk(node: Explanation, path: tuple = ()) -> list[Explanation]:
    assert (node.relation, node.row) not in path, "a tuple explained by itself"
    return [node, *(n for child in node.children
                    for n in _walk(child, (*path, (node.relation, node.row))))]


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5), st.integers(0, 5)), min_size=1, max_size=12),
       st.data())
def test_every_reach_tuple_has_a_derivation_by_the_rules(links, data) -> None:
    engine = overlog.Engine("reach(X, Y) :- link(X, Y).\n"
                            "reach(X, Z) :- link(X, Y), reach(Y, Z).\n", provenance=True)
    for link in links:
        engine.insert("link", link)
    engine.step()
    removed = data.draw(st.sampled_from(links))
    engine.delete("link", removed)
    engine.step()
    now = set(engine.rows("link"))
    for row in engine.rows("reach"):
        tree = engine.why("reach", row)
        for node in _walk(tree):
            if node.relation == "link":
                assert (node.how, node.row in now) == ("input", True)
                continue
            x, z = node.row
            if node.rule == "rule 1":
                assert [(c.relation, c.row) for c in node.children] == [("link", (x, z))]
            else:
                (first, second) = node.children
                y = first.row[1]
                assert [(first.relation, first.row), (second.relation, second.row)] == [
                    ("link", (x, y)), ("reach", (y, z))]


def test_the_cli_answers_why_and_why_not(tmp_path: Path) -> None:
    (tmp_path / "t.olg").write_text(_TC)

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "overlog", "run", "t.olg", "--print",
                               "link", *args], cwd=tmp_path, capture_output=True, text=True,
                              check=False)

    done = run("--why", 'reach("b", "d")', "--why-not", 'reach("d", "d")', "--why",
               'reach("d", "d")')
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.split("link (4 rows)\n", 1)[1].split('  "c"  "d"\n', 1)[1] == (
        '--why reach("b", "d"):\n'
        'reach("b", "d")  [hop (t.olg:6) at step 1: reach(X, Z) :- link(X, Y), reach(Y, Z).]'
        '  X="b", Z="d", Y="c"\n'
        '├─ link("b", "c")  [fact, t.olg:2]\n'
        '└─ reach("c", "d")  [rule 1 (t.olg:5) at step 1: reach(X, Y) :- link(X, Y).]'
        '  X="c", Y="d"\n'
        '   └─ link("c", "d")  [fact, t.olg:4]\n'
        '--why: reach("d", "d") is not in `reach` now (why-not says what is missing)\n'
        '--why-not reach("d", "d"):\n'
        "rule 1 (t.olg:5): reach(X, Y) :- link(X, Y).\n"
        '  no link("d", "d") matches  X="d", Y="d"\n'
        "hop (t.olg:6): reach(X, Z) :- link(X, Y), reach(Y, Z).\n"
        '  no link("d", Y) matches  X="d", Z="d"\n')
    for args, error in [
            (("--why", 'reach("a", X)'),
             "--why: `X` is a variable: write a tuple of values"),
            (("--why", "nope(1)"), "--why names `nope`, which the program does not have"),
            (("--why-not", "reach(1)"), "--why-not: `reach` has 2 fields, not 1"),
            (("--why", "reach(1,"), "--why: not an atom of values: reach(1, (write one as a "
                                    'fact has it: link("a", "b"))'),
            (("--why", 'reach("a", "b")', "--nodes", "a,b"),
             "--why and --why-not explain one node's tuples: not with --nodes (run the node "
             "alone, or use Engine.why per node)")]:
        done = run(*args)
        assert (done.returncode, done.stderr) == (2, f"overlog: error: {error}\n")


def test_relations_duckdb_evaluates_are_explained_too() -> None:
    pytest.importorskip("duckdb")
    engine = overlog.Engine(_TC, "t.olg", provenance=True, backend="vector")
    engine.run()
    assert engine.holder("reach") is None  # (its rows come back to be explained)
    assert [(n.relation, n.row) for n in _walk(engine.why("reach", ("b", "d")))] == [
        ("reach", ("b", "d")), ("link", ("b", "c")), ("reach", ("c", "d")),
        ("link", ("c", "d"))]


def test_an_aggregate_is_explained_by_its_bindings_the_best_first() -> None:
    engine = _engine('dist("a", 0).\nlink("a", "b", 1). link("b", "c", 2). link("a", "c", 5).\n'
                     "dist(Y, min<C>) :- dist(X, C1), link(X, Y, W), C := C1 + W.\n")
    rule = "dist(Y, min<C>) :- dist(X, C1), link(X, Y, W), C := C1 + W."
    assert engine.why("dist", ("c", 3)).format() == (
        f'dist("c", 3)  [rule 1 (t.olg:3) at step 1, over 2 bindings: {rule}]\n'
        '├─ link("b", "c", 2)  [fact, t.olg:2]\n'
        f'├─ dist("b", 1)  [rule 1 (t.olg:3) at step 1, over 1 binding: {rule}]\n'
        '│  ├─ link("a", "b", 1)  [fact, t.olg:2]\n'
        '│  └─ dist("a", 0)  [fact, t.olg:1]\n'
        '├─ link("a", "c", 5)  [fact, t.olg:2]\n'
        '└─ dist("a", 0)  [fact, t.olg:1]\n')


def test_a_long_chain_is_explained_from_python() -> None:
    engine = _engine("".join(f"link({i}, {i + 1}).\n" for i in range(800))
                     + "reach(X, Y) :- link(X, Y).\nreach(X, Z) :- link(X, Y), reach(Y, Z).\n")
    node, depth = engine.why("reach", (0, 800)), 0
    while node.children:
        node, depth = node.children[-1], depth + 1
    assert (depth, node.relation, node.row, node.how) == (800, "link", (799, 800), "fact")


def test_questions_leave_the_program_alone() -> None:
    """A delete rule writes nothing; a random draw is not made again to explain."""
    engine = _engine('price("a", 2).\ndelete price(K, P) :- kill[K, P].\n'
                     'path(X, Y, C, 1) :- link(X, Y, C).\nlink("a", "c", 3).\n')
    assert "".join(x.format() for x in engine.why_not("price", ("a", 1))) == \
        "no rule derives `price`: only facts and inputs put rows there\n"
    assert "".join(x.format() for x in engine.why_not("path", ("a", "c", 3, 5))) == (
        "rule 2 (t.olg:3): path(X, Y, C, 1) :- link(X, Y, C).\n"
        "  its head writes 1 in field 4, not 5\n")
    source = "r(X, R) :- tick[X], R := f_rand().\np(1).\nq(X, R) :- p(X), R := f_rand().\n"
    values = []
    for ask in (False, True):
        engine = overlog.Engine(source, provenance=True, seed=1)
        engine.step()
        if ask:
            (row,) = engine.rows("q")
            assert engine.why("q", row).how == "missing"
        engine.generate_event("tick", (2,))
        engine.step()
        values.append(engine.rows("r"))
    assert values[0] == values[1]
