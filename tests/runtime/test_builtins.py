"""The built-in functions' refusals, and where a failing expression is reported: each error
in the engine's words, located at the expression that failed (not the rule's start)."""

from __future__ import annotations

import pytest

import overlog


def _failure(expression: str) -> tuple[str, str, int, str | None]:
    """The code, message, column and expression text of the one error of a step that
    evaluates ``expression``, written from column 27 of the rule's line."""
    engine = overlog.Engine(f"go[1].\nr[V] :- go[_], V := 0, W := {expression}.\n",
                            "t.olg")
    (error,) = engine.step().errors
    assert (error.path, error.span.line) == ("t.olg", 2)
    return error.code, error.message, error.span.column, error.expression


@pytest.mark.parametrize(("expression", "expected"), [
    ("f_abs(\"a\")", ("E301", 'f_abs takes a number, not string "a"', 29, 'f_abs("a")')),
    ("f_pow(2, 100000)", ("E301", "f_pow(2, 100000) is too large (the limit is 65536 bits)",
                          29, "f_pow(2, 100000)")),
    ("f_pow(0, -1)", ("E302", "division by zero (0 to a negative power)", 29,
                      "f_pow(0, -1)")),
    ("f_pow(-8, 0.5)", ("E301", "f_pow(-8, 0.5) is not a number", 29, "f_pow(-8, 0.5)")),
    ("f_pow(true, 1)", ("E301", "f_pow takes numbers, not boolean true and int 1", 29,
                        "f_pow(true, 1)")),
    ("f_sqrt(-4)", ("E301", "f_sqrt of a negative number (-4)", 29, "f_sqrt(-4)")),
    ("f_round(infinity)", ("E301", "f_round of infinity is not an int", 29,
                           "f_round(infinity)")),
    ("f_round(2.5, 1.0)", ("E301", "f_round takes an int number of digits, not float 1.0",
                           29, "f_round(2.5, 1.0)")),
    ("f_floor(\"1\")", ("E301", 'f_floor takes a number, not string "1"', 29,
                        'f_floor("1")')),
    ("f_toint(\"1_000\")", ("E301", 'f_toint: "1_000" is not an int', 29,
                            'f_toint("1_000")')),
    ("f_toint([1])", ("E301", "f_toint takes a number, not list [1]", 29, "f_toint([1])")),
    ("f_tofloat(\"nan\")", ("E301", 'f_tofloat: "nan" is not a number', 29,
                            'f_tofloat("nan")')),
    ("f_strlen(3)", ("E301", "f_strlen takes a string, not int 3", 29, "f_strlen(3)")),
    ("f_substr(\"abc\", -1)", ("E301", "f_substr: the start must be 0 or more, not -1", 29,
                               'f_substr("abc", -1)')),
    ("f_substr(\"abc\", 0, -2)", ("E301", "f_substr: the length must be 0 or more, not -2",
                                  29, 'f_substr("abc", 0, -2)')),
    ("f_split(\"a\", \"\")", ("E301", "f_split: the separator is empty", 29,
                              'f_split("a", "")')),
    ("f_join(1, \",\")", ("E301", "f_join takes a list, not int 1", 29, 'f_join(1, ",")')),
    ("f_format(\"{0}\", 1)", ("E301", "f_format: a lone brace in the format (write {} for a "
                              "value, {{ and }} for braces)", 29, 'f_format("{0}", 1)')),
    ("f_format(\"{} {}\", 1)", ("E301", "f_format: the format has 2 placeholders for 1 value",
                                29, 'f_format("{} {}", 1)')),
    ("f_car([])", ("E301", "f_car of an empty list", 29, "f_car([])")),
    ("f_cons(1, 2)", ("E301", "f_cons takes a list, not int 2", 29, "f_cons(1, 2)")),
    # the innermost expression that failed, inside others
    ("1 + f_size(f_upper(3))", ("E301", "f_upper takes a string, not int 3", 40,
                                "f_upper(3)")),
    ("f_max(1, \"a\")", ("E301", "cannot compare string with int", 29, 'f_max(1, "a")')),
    ("(V >= 0 && V) == true", ("E301", "`&&` takes booleans, not int 0", 30,
                              "((V >= 0) && V)")),
    ("V + \"a\"", ("E301", "cannot add int and string", 29, 'V + "a"')),
    ("2 * (V / V)", ("E302", "division by zero", 34, "V / V")),
    ("-\"a\"", ("E301", "cannot negate string", 29, '-"a"')),
])
def test_a_failing_expression_is_reported_where_it_is(
        expression: str, expected: tuple[str, str, int, str]) -> None:
    assert _failure(expression) == expected


def test_a_failing_comparison_of_the_body_is_reported_where_it_is() -> None:
    engine = overlog.Engine('a(1, "x").\nb(X) :- a(X, Y),  Y < 3.\n', "t.olg")
    (error,) = engine.step().errors
    assert (error.code, error.message, error.span.line, error.span.column,
            error.expression, error.binding) == (
        "E301", "cannot compare string with int", 2, 19, "Y < 3", {"X": 1, "Y": "x"})


def test_a_user_function_that_raises_is_named() -> None:
    engine = overlog.Engine("go[1].\nr[V] :- go[X], V := f_lookup(X).\n", "t.olg")
    engine.register_function("f_lookup", lambda x: {}[x])
    (error,) = engine.step().errors
    assert str(error) == ("t.olg:2:21: error[E301]: step 1 (time 0): f_lookup raised "
                          "KeyError: 1\n  in rule 1, at `f_lookup(X)`\n  binding: X=1\n"
                          "  quarantined input: go[1]")


def test_a_failing_fact_is_reported_at_its_expression() -> None:
    with pytest.raises(overlog.SemanticError) as caught:
        overlog.Engine("q(1, f_lower(2) + 1).\n", "t.olg").step()
    assert str(caught.value) == (
        "t.olg:1:6: error[E225]: cannot evaluate fact: f_lower takes a string, not int 2\n"
        "  1 | q(1, f_lower(2) + 1).\n"
        "    |      ^^^^^^^^^^")


@pytest.mark.parametrize(("expression", "value"), [
    ("f_round(7 * f_pow(10, 850), -851) == f_pow(10, 851)", True),
    ("f_round(f_pow(10, 900) + 1, -1) == f_pow(10, 900)", True),
    ("f_round(-1250, -2)", -1300),
    ("f_round(7, -900)", 0),
    ("f_sqrt(f_pow(10, 400))", 1e200),
    ("f_pow(0.5, f_pow(10, 400))", 0.0),
    ("f_pow(f_pow(10, 400), -1)", 0.0),
    ("f_pow(2, 65535) == f_pow(2, 65534) * 2", True),
])
def test_numbers_past_the_floats(expression: str, value: object) -> None:
    engine = overlog.Engine(f"go[1].\nr[V] :- go[_], V := ({expression}).\n")
    seen: list[tuple] = []
    engine.register_listener("r", None, seen.append)
    assert engine.step().errors == []
    assert seen == [(value,)] and type(seen[0][0]) is type(value)


def test_a_failing_comparison_after_a_call_is_the_comparisons() -> None:
    engine = overlog.Engine('p("ab", "x").\nq(X) :- p(X, Y), f_size(X) > Y.\n', "t.olg")
    (error,) = engine.step().errors
    assert (error.message, error.span.column, error.expression) == (
        "cannot compare int with string", 18, "f_size(X) > Y")
    assert _failure("f_pow(2, 65536)")[1] == \
        "f_pow(2, 65536) is too large (the limit is 65536 bits)"
