"""The value model (docs/language.md, "Values"): distinct types stay distinct in tables, joins
and comparisons; arithmetic takes numbers (and `+` two strings); NaN is never a value; a type
error is E301 in the engine's words. Property tests check the engine against a typed model
written here from the documented rules, sharing no code with ``overlog.values``."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from overlog import Engine

INF = math.inf
scalars = st.one_of(
    st.integers(-3, 3), st.integers(-(10**20), 10**20),
    st.sampled_from([0.0, -0.0, 1.0, 2.0, -3.0, 0.5, 1e20, INF, -INF]),
    st.floats(-1e6, 1e6, allow_nan=False),
    st.booleans(), st.none(), st.sampled_from(["", "a", "b", "1", "1.0", "true"]))
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=2).map(tuple),
                      max_leaves=4)


# -- the model ------------------------------------------------------------------------------

class Refused(Exception):
    """The model says: a runtime error (E301 or E302)."""


def kind(v: object) -> str:
    return {bool: "boolean", int: "int", float: "float", str: "string", type(None): "null",
            tuple: "list"}[type(v)]


def tagged(v: object) -> object:
    """A value as a hashable key whose equality is the language's: type and value."""
    return ("list", tuple(tagged(x) for x in v)) if isinstance(v, tuple) else (kind(v), v)


def is_number(v: object) -> bool:
    return kind(v) in ("int", "float")


def exact(v: float | int) -> tuple:
    """A number's position on the line (exact, infinities at the ends)."""
    if v in (INF, -INF):
        return (1 if v > 0 else -1, 0)
    return (0, Fraction(v))


def less(a: object, b: object) -> bool:
    """The documented order: numbers by value, a float before an int it equals; strings by
    code point; false before true; lists item by item; anything else is refused."""
    if is_number(a) and is_number(b):
        if exact(a) != exact(b):
            return exact(a) < exact(b)
        return kind(a) == "float" and kind(b) == "int"
    if kind(a) != kind(b) or kind(a) == "null":
        raise Refused
    if kind(a) == "list":
        for x, y in zip(a, b, strict=False):
            if tagged(x) != tagged(y):
                return less(x, y)
        return len(a) < len(b)
    return a < b


def compare(op: str, a: object, b: object) -> bool:
    if op == "==":
        return tagged(a) == tagged(b)
    if op == "!=":
        return tagged(a) != tagged(b)
    if op == "<":
        return less(a, b)
    if op == ">":
        return less(b, a)
    if op == "<=":
        return less(a, b) or tagged(a) == tagged(b)
    return less(b, a) or tagged(a) == tagged(b)


def arith(op: str, a: object, b: object) -> object:
    if op == "+" and kind(a) == kind(b) == "string":
        return a + b
    if not (is_number(a) and is_number(b)):
        raise Refused
    if kind(a) == kind(b) == "int":
        if op in "/%" and b == 0:
            raise Refused
        quotient = abs(a) // abs(b) * (1 if (a >= 0) == (b >= 0) else -1) if op in "/%" else 0
        return {"+": a + b, "-": a - b, "*": a * b, "/": quotient, "%": a - b * quotient}[op]
    x, y = float(a), float(b)
    if op in "/%" and y == 0:
        raise Refused
    if op == "%" and x in (INF, -INF):
        raise Refused
    result = {"+": lambda: x + y, "-": lambda: x - y, "*": lambda: x * y, "/": lambda: x / y,
              "%": lambda: math.fmod(x, y)}[op]()
    if math.isnan(result):
        raise Refused
    return result


# -- tables, joins, order ---------------------------------------------------------------------

def test_one_two_and_true_are_three_rows() -> None:
    engine = Engine("q(1). q(1.0). q(true). q(2.0). q(2.5). q(false). q(null). q([1, 1.0]).\n"
                    "q([1, 1]). q(\"1\").\n"
                    "one(X) :- q(X), X == 1.\nyes(X) :- q(X), X == true.\n"
                    "j(X) :- q(X), r(X).\nr(1.0). r([1, 1]).\n")
    engine.run()
    rows = engine.rows("q")
    assert rows == [(None,), (False,), (True,), (1.0,), (1,), (2.0,), (2.5,), ("1",),
                    ((1, 1.0),), ((1, 1),)]
    assert [type(v) for (v,) in rows] == [type(None), bool, bool, float, int, float, float,
                                          str, tuple, tuple]
    assert [type(x) for x in rows[-2][0]] == [int, float]
    assert engine.rows("one") == [(1,)] and type(engine.rows("one")[0][0]) is int
    assert engine.rows("yes") == [(True,)] and engine.rows("yes")[0][0] is True
    assert engine.rows("j") == [(1.0,), ((1, 1),)] and type(engine.rows("j")[0][0]) is float


def test_a_float_sorts_before_the_int_it_equals() -> None:
    engine = Engine("u(1). u(1.0). u(0). u(-0.5).\nmn(min<X>) :- u(X).\nmx(max<X>) :- u(X).\n"
                    "below(X) :- u(X), X < 1.\n")
    engine.run()
    assert engine.rows("mn") == [(-0.5,)]
    assert engine.rows("mx") == [(1,)] and type(engine.rows("mx")[0][0]) is int
    assert engine.rows("below") == [(-0.5,), (0,), (1.0,)]


@pytest.mark.parametrize(("expression", "message"), [
    ("infinity - infinity", "infinity - infinity is not a number"),
    ("infinity * 0", "infinity * 0 is not a number"),
    ("infinity % 2", "infinity % 2 is not a number"),
    ('"ab" * 3', "cannot multiply string by int"),
    ("true + 3", "cannot add boolean and int"),
    ('3 - "a"', "cannot subtract string from int"),
    ("[1] + [2]", "cannot add list and list"),
    ('-"a"', "cannot negate string"),
    ("null / 2", "cannot divide null by int"),
    ("1 / 0.0", "division by zero"),
])
def test_arithmetic_outside_the_model_is_e301(expression: str, message: str) -> None:
    engine = Engine(f"n[Z] :- go[_], Z := {expression}.\n")
    engine.generate_event("go", (1,))
    report = engine.step()
    assert [(e.code, e.message) for e in report.errors] == [
        ("E302" if "zero" in message else "E301", message)]
    assert report.events == {}


@pytest.mark.parametrize(("body", "message"), [
    ('1 < "a"', "cannot compare int with string"),
    ("true > 0", "cannot compare boolean with int"),
    ("null <= null", "cannot compare null with null"),
    ("[1] < [\"a\"]", "cannot compare int with string"),
])
def test_ordering_different_types_is_e301(body: str, message: str) -> None:
    engine = Engine(f"n[1] :- go[_], {body}.\n")
    engine.generate_event("go", (1,))
    assert [(e.code, e.message) for e in engine.step().errors] == [("E301", message)]


@pytest.mark.parametrize(("aggregate", "message"), [
    ("sum", "sum<> of string values"),
    ("avg", "avg<> of boolean values"),
])
def test_sum_and_avg_take_numbers(aggregate: str, message: str) -> None:
    value = '"a"' if aggregate == "sum" else "true"
    engine = Engine(f"q(1). q({value}).\ns({aggregate}<X>) :- q(X).\n")
    report = engine.step()
    assert [(e.code, e.message) for e in report.errors] == [("E301", message)]


def test_a_float_sum_does_not_depend_on_the_order_of_its_terms() -> None:
    """The float nearest the exact sum (ints summed exactly first); past the largest float,
    an infinity of its sign."""
    engine = Engine("s(K, sum<X>) :- q(K, _, X).\na(K, avg<X>) :- q(K, _, X).\n")
    rows = [("a", 1, 1e16), ("a", 2, 1.0), ("a", 3, 1.0), ("a", 4, -1e16),
            ("b", 1, 0.1), ("b", 2, 0.2), ("b", 3, 0.3),
            ("c", 1, 2**60 + 1), ("c", 2, 0.5), ("d", 1, -1e308), ("d", 2, -1e308),
            ("e", 1, 10**400), ("e", 2, 1.0), ("e", 3, -(10**400))]
    for row in rows:
        engine.insert("q", row)
    assert engine.step().errors == []
    assert engine.rows("s") == [("a", 2.0), ("b", 0.6), ("c", 1.152921504606847e18),
                                ("d", -math.inf), ("e", 1.0)]
    assert engine.rows("a") == [("a", 0.5), ("b", 0.19999999999999998),
                                ("c", 5.764607523034235e17), ("d", -math.inf),
                                ("e", 0.3333333333333333)]


def test_an_infinite_sum_of_both_signs_is_e301() -> None:
    engine = Engine("q(infinity). q(-infinity).\ns(sum<X>) :- q(X).\n")
    assert [e.message for e in engine.step().errors] == [
        "the sum of infinity and -infinity is not a number"]


def test_nan_is_refused_at_every_door() -> None:
    engine = Engine("q(X) :- p(X).\ne[X] :- q(X).\n")
    with pytest.raises(ValueError, match=r"^`p`: NaN is not an Overlog value$"):
        engine.insert("p", (math.nan,))
    with pytest.raises(ValueError, match=r"^`e`: NaN is not an Overlog value$"):
        engine.generate_event("e", ((1, math.nan),))
    calling = Engine("n[Z] :- go[_], Z := f_nan().\n", functions={"f_nan": lambda: math.nan})
    calling.generate_event("go", (1,))
    assert [e.message for e in calling.step().errors] == [
        "the result of f_nan: NaN is not an Overlog value"]


def test_functions_see_and_give_python_values() -> None:
    seen = []

    def f_show(*args):
        seen.append(args)
        return args[0]

    engine = Engine("n[f_show(X, Y, Z)] :- go[X, Y, Z].\n", functions={"f_show": f_show})
    engine.generate_event("go", (True, 1.0, [False, 2]))
    report = engine.step()
    assert seen == [(True, 1.0, (False, 2))]
    assert [type(v) for v in seen[0]] == [bool, float, tuple]
    assert report.events["n"] == [(True,)] and report.events["n"][0][0] is True


def test_listener_patterns_match_types() -> None:
    engine = Engine("q(1). q(1.0). q(true).\n")
    seen = []
    engine.register_listener("q", (1.0,), seen.append)
    engine.register_listener("q", (True,), seen.append)
    engine.run()
    assert seen == [(1.0,), (True,)] and [type(v) for (v,) in seen] == [float, bool]


# -- properties -------------------------------------------------------------------------------

@settings(max_examples=150, deadline=None)
@given(st.lists(values, max_size=12))
def test_tables_keep_exactly_the_distinct_values(given_values: list) -> None:
    engine = Engine("keep(X) :- q(X).\n")
    for v in given_values:
        engine.insert("q", (v,))
    engine.run()
    distinct = {tagged(v): v for v in given_values}
    for relation in ("q", "keep"):
        rows = engine.rows(relation)
        assert {tagged(v) for (v,) in rows} == set(distinct)
        assert len(rows) == len(distinct)
        for earlier, later in itertools.pairwise(rows):  # in the documented order
            assert order_key(earlier[0]) < order_key(later[0])


def order_key(v: object) -> tuple:
    """The output order: null, booleans, numbers (a float before an equal int), strings,
    lists."""
    rank = {"null": 0, "boolean": 1, "int": 2, "float": 2, "string": 3, "list": 4}[kind(v)]
    if kind(v) == "list":
        return (rank, tuple(order_key(x) for x in v))
    if is_number(v):
        return (rank, exact(v), 1 if kind(v) == "int" else 0)
    return (rank, v)


pairs = st.lists(st.tuples(values, values), min_size=1, max_size=8,
                 unique_by=lambda pair: (tagged(pair[0]), tagged(pair[1])))


def follows_the_model(rule: str, pairs: list, model, codes: set[str]) -> None:
    """Each pair as an event `a[X, Y]` of one step of ``rule`` (deriving `r`): the step
    derives exactly the rows ``model(a, b)`` gives (None: none), and quarantines exactly
    the pairs it refuses, with an error of ``codes``."""
    engine = Engine(rule)
    for pair in pairs:
        engine.generate_event("a", pair)
    report = engine.step()
    expected, refused = set(), set()
    for a, b in pairs:
        try:
            row = model(a, b)
        except Refused:
            refused.add((tagged(a), tagged(b)))
            continue
        if row is not None:
            expected.add(tuple(tagged(v) for v in row))
    assert {tuple(tagged(v) for v in row) for row in report.events.get("r", [])} == expected
    assert {(tagged(row[0]), tagged(row[1])) for e in report.errors
            for _, _, row in e.quarantined} == refused
    assert {e.code for e in report.errors} <= codes


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(["==", "!=", "<", "<=", ">", ">="]), pairs)
def test_comparisons_follow_the_model(op: str, given_pairs: list) -> None:
    follows_the_model(f"r[X, Y] :- a[X, Y], X {op} Y.\n", given_pairs,
                      lambda a, b: (a, b) if compare(op, a, b) else None, {"E301"})


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(["+", "-", "*", "/", "%"]), pairs)
def test_arithmetic_follows_the_model(op: str, given_pairs: list) -> None:
    follows_the_model(f"r[X, Y, Z] :- a[X, Y], Z := X {op} Y.\n", given_pairs,
                      lambda a, b: (a, b, arith(op, a, b)), {"E301", "E302"})


def test_timers_of_period_1_and_1_0_are_two() -> None:
    engine = Engine("a(N, E) :- periodic[@N, E, 1].\nb(N, E) :- periodic[@N, E, 1.0].\n")
    engine.run(until=3)
    assert [(type(period), period) for period, _ in engine.plan.timers] == [
        (int, 1), (float, 1.0)]
    assert len(engine.rows("a")) == len(engine.rows("b")) == 3


@pytest.mark.parametrize(("value", "error", "message"), [
    (math.nan, ValueError, "define N: NaN is not an Overlog value"),
    ({}, ValueError, "define N: not an Overlog value: dict"),
])
def test_defines_take_values(value, error, message) -> None:
    with pytest.raises(error) as caught:
        Engine("q(1).\np(X) :- q(_), X := N.\n", defines={"N": value})
    assert str(caught.value) == message
