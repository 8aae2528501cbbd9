"""Events driving buffered state changes, vs a model of the base tables and the reference
closure of the views: random programs, random batches of external inserts/deletes and events.

Per step, in order: external changes apply; then the step's events fire the state rules, whose
deletes (of tuples present) and writes (a keyed write replaces the holder; of two different
writes to one key, the first wins and the later is quarantined) apply at the next step.
"""

from __future__ import annotations

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from overlog import Engine
from overlog.errors import CompileError
from tests.runtime.reference import closure
from tests.runtime.test_views_property import TEMPLATES

STATE_RULES = """
materialize(k, infinity, infinity, keys(1)).
a(X, Y) :- ins[X, Y].
delete a(X, Y) :- del[X, Y], a(X, Y).
k(X, Y) :- setk[X, Y].
b(X, Y) :- ins[X, Y], a(Y, X).
"""

values = st.integers(0, 2)
events = st.tuples(st.sampled_from(["ins", "del", "setk"]), st.tuples(values, values))
external = st.tuples(st.sampled_from(["insert", "delete"]), st.sampled_from("ab"),
                     st.tuples(values, values))
batches = st.lists(st.tuples(st.lists(external, max_size=3), st.lists(events, max_size=5)),
                   min_size=1, max_size=6)


def _model_step(base: dict[str, set], ext: list, evs: list) -> int:
    """Apply one batch to the model; returns how many events get quarantined."""
    for op, relation, row in ext:
        (base[relation].add if op == "insert" else base[relation].discard)(row)
    a_before = set(base["a"])
    seen_events = list(dict.fromkeys(evs))  # events are sets, in queue order
    ins = [row for name, row in seen_events if name == "ins"]
    dels = {row for name, row in seen_events if name == "del"}
    writes: dict[int, tuple] = {}
    quarantined = 0
    for name, row in seen_events:
        if name == "setk":
            if row[0] in writes and writes[row[0]] != row:
                quarantined += 1
            else:
                writes[row[0]] = row
    base["a"] = (base["a"] - (dels & a_before)) | set(ins)
    base["b"] |= {(x, y) for x, y in ins if (y, x) in a_before}
    for key, row in writes.items():
        base["k"] = {r for r in base["k"] if r[0] != key} | {row}
    return quarantined


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(TEMPLATES), max_size=5, unique=True), batches)
def test_state_changes_match_model_and_views_match_reference(rules, steps) -> None:
    try:
        engine = Engine(STATE_RULES + "\n".join(rules))
    except CompileError:
        assume(False)
        return
    base: dict[str, set] = {"a": set(), "b": set(), "k": set()}
    for ext, evs in steps:
        for op, relation, row in ext:
            getattr(engine, op)(relation, row)
        for name, row in evs:
            engine.generate_event(name, row)
        expected_errors = _model_step(base, ext, evs)
        reports = engine.run()
        errors = [e for r in reports for e in r.errors]
        # each retry of the step finds one conflicting write and quarantines its event
        assert [(e.code, len(e.quarantined)) for e in errors] == [("E303", 1)] * expected_errors
        for name in "abk":
            assert set(engine.store.asserted(name)) == base[name], name
        reference = closure(engine.checked.program, base)
        for name, relation in engine.checked.relations.items():
            if not relation.event:
                assert set(engine.rows(name)) == reference[name], name
