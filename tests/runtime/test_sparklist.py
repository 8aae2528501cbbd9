"""Lists as Spark holds them (runtime/sparklist.py): one encoding per list, so that equal
bytes are equal lists, and back as they were."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from overlog.runtime import sparklist
from overlog.runtime.builtins import ValueFault
from overlog.values import FALSE, TRUE, internal, same

values = st.recursive(
    st.none() | st.sampled_from([TRUE, FALSE]) | st.integers() | st.text()
    | st.floats(allow_nan=False).filter(lambda f: f != 0 or str(f) == "0.0").map(internal),
    lambda items: st.lists(items, max_size=4).map(tuple), max_leaves=12)
lists = st.lists(values, max_size=4).map(tuple)


@given(lists, lists)
def test_equal_lists_and_only_they_have_equal_encodings(a: tuple, b: tuple) -> None:
    assert sparklist.decode(sparklist.encode(a)) == a
    assert same(sparklist.decode(sparklist.encode(a)), a)
    assert (sparklist.encode(a) == sparklist.encode(b)) == same(a, b)


def test_the_encoding_keeps_types_apart() -> None:
    assert sparklist.encode((1, 1.0, TRUE, "1", None, ())) == (
        b"l6:i1;d?\xf0\x00\x00\x00\x00\x00\x00ts1:1nl0:")
    decoded = sparklist.decode(sparklist.encode((2**80, 1.0)))
    assert [type(v).__name__ for v in decoded] == ["int", "IntFloat"]


@pytest.mark.parametrize(("items", "message"), [
    ((-0.0,), "-0.0 in a list"),
    (("\ud800",), "'utf-8' codec can't encode character '\\ud800' in position 0: "
                  "surrogates not allowed"),
])
def test_what_the_encoding_refuses(items: tuple, message: str) -> None:
    with pytest.raises(ValueError) as caught:
        sparklist.encode(items)
    assert str(caught.value) == message


def test_lists_nested_too_deep_are_refused() -> None:
    deep: tuple = ()
    for _ in range(sparklist.DEPTH - 1):  # DEPTH lists, one in the other
        deep = (deep,)
    assert sparklist.decode(sparklist.encode(deep)) == deep
    with pytest.raises(ValueError) as caught:
        sparklist.encode((deep,))
    assert str(caught.value) == f"lists nested more than {sparklist.DEPTH} deep"


def test_a_list_function_as_the_workers_run_it() -> None:
    cons = sparklist.udf("f_cons", "binary")
    assert sparklist.decode(cons(1, sparklist.encode((2.5, "a")))) == (1, 2.5, "a")
    assert sparklist.udf("f_member", "boolean")(sparklist.encode((1, 2)), 2) is True
    assert sparklist.udf(sparklist.MAKE, "binary")(1.0, True, None) == sparklist.encode(
        (1.0, TRUE, None))
    assert sparklist.udf(sparklist.TOSTR, "string")(sparklist.encode((1, "a"))) == '[1, "a"]'
    with pytest.raises(ValueFault) as caught:
        cons(1, 5)
    assert str(caught.value) == "f_cons takes a list, not int 5"
