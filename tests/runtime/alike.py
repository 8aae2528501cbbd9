"""Edge cases every backend runs exactly as the local backend does (Spark's and DuckDB's
tests run them), and the comparison: the same errors at every step, then the same rows in
every persistent relation."""

from __future__ import annotations

from typing import Any

from overlog import Engine, StepReport

# (program, inputs of each step: (op, relation, row)): edge cases every backend must run as
# the local backend does
ALIKE = [
    # arithmetic on null fails as it does locally
    ("v(1). v(null).\nw(X + 1) :- v(X).\n", []),
    ('v("a"). v(null).\nw(X + "!") :- v(X).\n', []),
    ("v(1). v(null).\nw(Y) :- v(X), Y := -X.\n", []),
    # an assignment nothing uses is still evaluated
    ("v(0). v(1).\nw(X) :- v(X), Y := 10 / X.\n", []),
    # so is a comparison before a join with an empty relation
    ("r(X) :- p(X), 10 / X > 1, q(X).\n", [[("insert", "p", (1,))], [("insert", "p", (0,))]]),
    ("r(X, Z) :- p(X), Y := 10 / X, q(Z).\n", [[("insert", "p", (0,))]]),
    # so is a check of the first atom, and a key of a negated atom, before an empty join
    ("r(X, Y) :- a(X, 10 / X), b(Y).\n", [[("insert", "a", (0, 1))]]),
    ("r(X) :- a(X), notin c(X + 1), b(X).\n", [[("insert", "a", ("s",))]]),
    # a join key that is an expression, evaluated before the join
    ("r(X) :- p(X), q(10 / X).\n", [[("insert", "p", (0,)), ("insert", "p", (5,))]]),
    # an empty column at the first step, values later
    ("q(X) :- p(X), X > 3.\n", [[], [("insert", "p", (5,)), ("insert", "p", (2,))]]),
    # a lone surrogate, as a literal and as data
    ('s(1).\nt(X, "\\ud800") :- s(X).\n', [[("insert", "s", (2,))]]),
    ("t(X) :- s(X).\n", [[("insert", "s", ("\ud800",))]]),
    # aggregates: nulls, no group, a group that empties, a view over the aggregate
    ("s(X, sum<Y>) :- q(X, Y).\n", [[("insert", "q", (1, 2)), ("insert", "q", (1, None))]]),
    ("m(min<Y>) :- q(_, Y).\n", [[("insert", "q", (1, None))], [("insert", "q", (2, 3))]]),
    ("n(count<*>) :- q(_, _).\nbig(N) :- n(N), N > 1.\n",
     [[("insert", "q", (1, 1)), ("insert", "q", (2, 2))], [("delete", "q", (1, 1))],
      [("delete", "q", (2, 2))]]),
    ('a(X, avg<Y>) :- q(X, Y).\nw(X, max<S>) :- r(X, S).\n',
     [[("insert", "q", (1, 1)), ("insert", "q", (1, 2)), ("insert", "r", (1, "b")),
       ("insert", "r", (1, "a"))]]),
    ("s(sum<Y>) :- q(_, Y).\n", [[("insert", "q", (1, float("inf"))),
                                   ("insert", "q", (2, float("-inf")))]]),
    # built-in functions Spark runs: string sizes, concatenation, least and greatest
    ('v(1, "ab", true). v(2, "", false). v(3, "\U0001d11e\u00e9", null).\n'
     'w(X, f_size(S), f_concat(S, "-", X, "-", B)) :- v(X, S, _), v(X, _, B).\n', []),
    ('v(1, null).\nw(X, f_size(S)) :- v(X, S).\n', [[("insert", "v", (2, "x"))]]),
    # a function that can fail is evaluated where nothing uses it, and before an empty join
    ('q(1, null). q(2, "a").\np(X) :- q(X, S), Y := f_size(S).\n', []),
    ("q(1, null, 2). q(2, 1, 2).\np(X) :- q(X, A, B), Y := f_min(A, B).\n", []),
    ("materialize(r, infinity, infinity, keys(1)).\nq(1, null). q(2, \"a\").\n"
     "p(X) :- q(X, S), r(f_size(S)).\n", []),
    ('q("ab"). q("c").\np(Z) :- q(S), Y := f_size(S), Z := f_min(Y, 5).\n', []),
    ('v(1, 2, "a", "b"). v(5, 3, "z", "y").\nw(f_min(X, Y), f_max(S, T)) :- v(X, Y, S, T).\n',
     [[("insert", "v", (None, 1, "c", "d"))]]),
    # float sums (in any order of the terms) and averages (divided once), null among them
    ("s(sum<Y>) :- q(_, Y).\n", [[("insert", "q", (i, v)) for i, v in
                                   enumerate([1e16, 1.0, 1.0, -1e16])]]),
    ("v(X, avg<Y>) :- q(X, Y).\n", [[("insert", "q", (1, 2**53)), ("insert", "q", (1, 1)),
                                      ("insert", "q", (1, 2))]]),
    ("s(X, sum<Y>) :- q(X, Y).\na(X, avg<Y>) :- q(X, Y).\n",
     [[("insert", "q", (1, 2.5)), ("insert", "q", (2, 1.5))], [("insert", "q", (1, None))],
      [("delete", "q", (1, None)), ("insert", "q", (3, 1e308)), ("insert", "q", (4, 1e308))]]),
    # a head both an aggregate and views write, read by a view
    ("m(X, count<Y>) :- a(X, Y).\nm(X, Z) :- m(X, Y), b(Y, Z).\n",
     [[("insert", "a", (1, 10)), ("insert", "a", (1, 20)), ("insert", "b", (2, 5))]]),
    ("m(X, count<Y>) :- a(X, Y).\nm(X, Z) :- b(X, Z).\nv(X, N) :- m(X, N).\n",
     [[("insert", "a", (1, 1)), ("insert", "a", (1, 2)), ("insert", "b", (7, 7))],
      [("insert", "a", (1, 3))]]),
    # a column with only nulls (Spark types it void): rows leave, recursion ends
    ("p(X, Y) :- q(X, Y), r(X).\nr(1). r(2).\n",
     [[("insert", "q", (1, None)), ("insert", "q", (2, None))], [("delete", "q", (1, None))]]),
    ("u(X, N) :- s(X, N).\nu(Y, N) :- u(X, N), f(X, Y).\nf(1, 2). f(2, 3). f(3, 1).\n",
     [[("insert", "s", (1, None))], [("insert", "s", (2, None))], [("delete", "s", (1, None))],
      [("delete", "s", (2, None))]]),
    # keyed view heads: a conflict (reported locally), a key freed and taken in one step
    ("materialize(m, infinity, infinity, keys(1)).\nm(X, Y) :- q(X, Y).\n",
     [[("insert", "q", (1, 10)), ("insert", "q", (2, 20))], [("insert", "q", (1, 11))],
      [("delete", "q", (1, 10)), ("insert", "q", (1, 12))], [("insert", "q", (3, None))]]),
    ("materialize(m, infinity, infinity, keys(1)).\nm(1, \"a\").\nm(X, Y) :- q(X, Y).\n",
     [[("insert", "q", (1, "a"))], [("insert", "q", (1, "b"))]]),
    # a negated relation that empties lets its rows by (a plan seeded with the rows
    # that left it, not its empty table)
    ("lonely(X) :- node(X), notin link(X, _).\n",
     [[("insert", "node", ("a",)), ("insert", "node", ("b",)), ("insert", "link", ("a", "b"))],
      [("delete", "link", ("a", "b"))]]),
    # recursive min/max: a null among the values, an int and a float, no group column
    ("dist(0, 0). dist(1, null).\ndist(Y, min<C>) :- dist(X, C1), edge(X, Y, W), "
     "C := C1 + W.\n", [[("insert", "edge", (0, 1, 1))], [("insert", "edge", (1, 2, 1))]]),
    ("dist(0, 0).\ndist(Y, min<C>) :- dist(X, C1), edge(X, Y, W), C := C1 + W.\n",
     [[("insert", "edge", (0, 1, 1.5)), ("insert", "edge", (1, 2, 1))]]),
    ("b(min<C>) :- src(C).\nb(min<C>) :- b(C1), w(D), C := C1 + D.\n",
     [[("insert", "src", (5,)), ("insert", "w", (1,)), ("insert", "src", (3,))],
      [("delete", "src", (3,))]]),
    # a keyed aggregate head whose key moves from one group to another
    ("materialize(m, infinity, infinity, keys(1)).\nm(X, Y, count<Z>) :- q(X, Y, Z).\n",
     [[("insert", "q", (1, 10, "a")), ("insert", "q", (2, 0, "z")),
       ("insert", "q", (3, 0, "z"))], [("delete", "q", (1, 10, "a")),
                                       ("insert", "q", (1, 20, "a"))]]),
]


def run_alike(here: Engine, there: Engine, inputs: list) -> list[StepReport]:
    """One ``run()`` of ``inputs`` ((op, relation, row)) on each engine (``here`` the local
    backend's): both must report the same errors and hold the same rows. ``there``'s
    reports."""
    reports, errors = [], []
    for engine in (here, there):
        for op, relation, row in inputs:
            getattr(engine, op)(relation, row)
        reports = engine.run()
        errors.append([(e.code, e.message, e.quarantined) for r in reports
                       for e in r.errors])
    assert errors[1] == errors[0]
    for name, relation in here.relations.items():
        if not relation.event:
            assert there.rows(name) == here.rows(name), name
    return reports


def assert_alike(program: str, steps: list, **options: Any) -> None:
    """Run ``program`` locally and with ``options`` (a backend), step by step (a first step
    with no inputs, then one per item of ``steps``): both must report the same errors and
    hold the same rows."""
    here, there = Engine(program, backend="local"), Engine(program, **options)
    for inputs in [[], *steps]:
        run_alike(here, there, inputs)
