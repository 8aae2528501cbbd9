"""Big and deep input: terms nested up to the limit compile and run, deeper ones and huge
integer literals are refused with a located error naming the limit; wide rules plan."""

from __future__ import annotations

import sys

import pytest

import overlog
from overlog.limits import MAX_INT_DIGITS, MAX_NESTING, int_text


def test_long_expressions_compile_and_run() -> None:
    terms = MAX_NESTING - 10
    eng = overlog.Engine("q(1).\np(Y) :- q(X), Y := X" + " + 1" * terms + ".\n")
    eng.run()
    assert eng.rows("p") == [(terms + 1,)]


def test_deep_terms_compile_and_run() -> None:
    depth = MAX_NESTING - 2
    source = ("q(1).\n"
              f"m(Y) :- q(X), Y := {'-' * depth}X.\n"
              f"l(L) :- q(X), L := {'[' * depth}X{']' * depth}.\n"
              f"c(Y) :- q(X), Y := {'f_max(' * depth}X{', 0)' * depth}.\n"
              f"v({'[' * depth}2{']' * depth}).\n")
    eng = overlog.Engine(source)
    eng.run()
    assert eng.rows("m") == [(1,)]  # an even number of minus signs
    assert eng.rows("c") == [(1,)]
    ((value,),) = eng.rows("l")
    for _ in range(depth):
        (value,) = value
    assert value == 1
    assert sys.getrecursionlimit() < 20 * MAX_NESTING  # lifted only while needed


@pytest.mark.parametrize("text", [
    "p(Y) :- q(X), Y := X" + " + 1" * (MAX_NESTING + 1) + ".",
    "p(" + "[" * (MAX_NESTING + 1) + "1" + "]" * (MAX_NESTING + 1) + ").",
    "p(Y) :- q(X), Y := " + "-" * (MAX_NESTING + 5) + "X.",
])
def test_deeper_terms_are_refused_where_they_start(text: str) -> None:
    with pytest.raises(overlog.ParseError) as caught:
        overlog.compile_program("q(1).\n" + text + "\n", "deep.olg")
    (diagnostic,) = caught.value.diagnostics
    assert (diagnostic.code, diagnostic.message, diagnostic.span.line) == (
        "E105", "terms nested more than 1,000 deep (the limit)", 2)


def test_integers_of_any_size_within_the_literal_limit() -> None:
    big = 10**5000 - 1  # 5,000 digits: more than Python converts to text by default
    digits = "9" * 5000
    eng = overlog.Engine(f"q({digits}).\np(Y) :- q(X), Y := X * X + 1.\n")
    eng.run()
    assert eng.rows("p") == [(big * big + 1,)]
    assert overlog.format_program(overlog.parse(f"q({digits}).")) == f"q({digits}).\n"
    assert int_text(big * big + 1) == "9" * 4999 + "8" + "0" * 4999 + "2"
    with pytest.raises(overlog.ParseError) as caught:
        overlog.parse("q(" + "1" * (MAX_INT_DIGITS + 1) + ").")
    (diagnostic,) = caught.value.diagnostics
    assert (diagnostic.code, diagnostic.message, diagnostic.span.column) == (
        "E106", "integer literal of 100,001 digits (the limit is 100,000)", 3)


def test_wide_rules_plan_and_run() -> None:
    n = 150
    body = ", ".join(f"e(X{i}, X{i + 1})" for i in range(n))
    eng = overlog.Engine(f"p(X0, X{n}) :- {body}.\n")
    for i in range(n):
        eng.insert("e", (i, i + 1))
    eng.run()
    assert eng.rows("p") == [(0, n)]
    eng.delete("e", (7, 8))
    eng.run()
    assert eng.rows("p") == []
    plan = eng.plan.rules[0].triggers[0].insert  # driven by the first atom: joins in order
    assert [op.key_terms[0].name for op in plan.operators] == [f"X{i}" for i in range(1, n)]


def test_lifted_limits_hold_for_every_thread_inside() -> None:
    """Threads entering and leaving the lifted limits in any order: each keeps them while
    inside, and the last one out puts them back."""
    import threading

    from overlog.limits import recursion_room, unlimited_int_digits

    before = (sys.getrecursionlimit(), sys.get_int_max_str_digits())
    errors: list[BaseException] = []
    barrier = threading.Barrier(4)

    def work(pause: float) -> None:
        import time

        try:
            with recursion_room(), unlimited_int_digits():
                barrier.wait()
                time.sleep(pause)
                str(10**5000)  # needs the digit limit lifted
                assert sys.getrecursionlimit() >= 20 * MAX_NESTING
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=work, args=(i / 50,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert (sys.getrecursionlimit(), sys.get_int_max_str_digits()) == before
