"""Deterministic replay in the sim clock: the same program, inputs and seed give the same
steps, reports and tables, f_rand() and timers included."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from overlog import Engine

PROGRAM = """
materialize(k, 3, 4, keys(1)).
k(X, R) :- e[X], R := f_rand().
seen(X, T) :- e[X], T := f_now().
tick(E, R) :- periodic[_, E, 2, 3], R := f_rand().
n(count<*>) :- k(_, _).
"""

inputs = st.lists(st.tuples(st.integers(0, 5), st.floats(0, 10, allow_nan=False)),
                  max_size=12)


def _run(seed: int, events: list[tuple[int, float]]) -> list:
    engine = Engine(PROGRAM, seed=seed)
    for value, when in events:
        engine.generate_event("e", (value,), when=when)
    trace = [(r.step, r.time, r.events, r.inserted, r.deleted) for r in engine.run()]
    return [trace, {name: engine.rows(name) for name in ("k", "seen", "tick", "n")}]


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 3), inputs)
def test_same_seed_same_run(seed: int, events) -> None:
    assert _run(seed, events) == _run(seed, events)
