"""The local backend's code generation, plan by plan on a store, and how its errors surface."""

from __future__ import annotations

import random
import traceback

import pytest

import overlog
from overlog import plan as p
from overlog.analysis import Relation
from overlog.runtime import builtins
from overlog.runtime.backend import Incomparable, Overflow, PlanFailure
from overlog.runtime.local import LocalBackend
from overlog.runtime.store import LocalStore
from overlog.source import Span

V = p.Version


def var(name: str) -> p.Var:
    return p.Var(name=name)


@pytest.fixture
def backend() -> LocalBackend:
    store = LocalStore({name: Relation(name=name, arity=2, event=False, keys=(0, 1))
                        for name in ("a", "b", "out")})
    for row in [(1, 2), (2, 3), (2, 4)]:
        store.add("a", row)
    for row in [(3, "x"), (4, "y"), (9, "z")]:
        store.add("b", row)
    store.commit()
    store.end_step()
    return LocalBackend(store, builtins.make_functions(lambda: 0.0, random.Random(0)))


def join(relation: str, version: p.Version, key_var: str, bind: str) -> p.Join:
    return p.Join(relation=relation, version=version, key=(0,), key_terms=(var(key_var),),
                  binds=((1, bind),), checks=())


def test_scan_join_project(backend: LocalBackend) -> None:
    plan = p.Plan(driver=p.Scan(relation="a", binds=((0, "X"), (1, "Y")), checks=()),
                  operators=(join("b", V.FULL, "Y", "Z"),),
                  project=p.Project(terms=(var("X"), var("Z"))))
    run = backend.prepare(plan)
    assert run([(1, 2), (2, 3), (2, 4)]) == {(2, "x"), (2, "y")}
    assert run([(7, 9)]) == {(7, "z")}  # seeds need not be rows of the relation
    assert run([]) == set()


def test_a_plan_is_compiled_once_per_process(backend: LocalBackend) -> None:
    """Two backends (two engines of one program) share a plan's code, each over its own
    store: the second reads its own tables."""
    plan = p.Plan(driver=p.Scan(relation="a", binds=((0, "X"), (1, "Y")), checks=()),
                  operators=(join("b", V.FULL, "Y", "Z"),),
                  project=p.Project(terms=(var("X"), var("Z"))))
    store = LocalStore({name: Relation(name=name, arity=2, event=False, keys=(0, 1))
                        for name in ("a", "b", "out")})
    store.add("b", (2, "w"))
    other = LocalBackend(store, backend.functions)
    first, second = backend.prepare(plan), other.prepare(plan)
    assert first.__code__ is second.__code__
    assert (first([(1, 2), (2, 3)]), second([(1, 2), (2, 3)])) == ({(2, "x")}, {(1, "w")})


def test_a_plan_alike_over_tables_of_other_arities_is_written_for_them() -> None:
    """`p(X) :- q(X, _).` and `p(X) :- q(X, _, _).` plan alike (they bind column 0 of
    `q`); each engine's code unpacks rows of its own `q`."""
    narrow, wide = overlog.Engine("p(X) :- q(X, _)."), overlog.Engine("p(X) :- q(X, _, _).")
    narrow.insert("q", (1, 2))
    wide.insert("q", (3, 4, 5))
    narrow.run()
    wide.run()
    assert (narrow.rows("p"), wide.rows("p")) == ([(1,)], [(3,)])


def test_engines_sharing_a_plans_code_report_their_own_spans() -> None:
    """The rule on line 1 of one program and line 3 of another plan alike (spans take no
    part in a plan's equality): each error names its own program's line and column."""
    rule = "r[Z] :- calc[X, Y], Z := X / Y.\n"
    spans = []
    for text in (rule, "\n\n    " + rule):
        engine = overlog.Engine(text)
        engine.generate_event("calc", (1, 0))
        (error,) = engine.step().errors
        spans.append((error.code, error.span))
    assert spans == [("E302", (1, 26, 1, 30)), ("E302", (3, 30, 3, 34))]


def test_a_plan_written_without_spans_serves_an_equal_one_with_them(backend: LocalBackend,
                                                                   ) -> None:
    """The code does not depend on spans: a failure of the plan with spans names its own
    expression, though the code was written for the plan without."""

    def plan(span: Span | None) -> p.Plan:
        return p.Plan(driver=p.Scan(relation="a", binds=((0, "X"), (1, "Y")), checks=()),
                      operators=(), project=p.Project(terms=(p.Call(
                          function="f_car", args=(p.MakeList(items=()),), span=span),)))

    failed = []
    for span in (None, Span(3, 5, 3, 12)):
        with pytest.raises(PlanFailure) as caught:
            backend.prepare(plan(span))([(1, 2)])
        failed.append(caught.value.expr and caught.value.expr.span)
    assert failed == [None, (3, 5, 3, 12)]


def test_constants_equal_in_python_but_not_alike_are_each_engines_own() -> None:
    """0.0 and -0.0 are equal in Python (plans holding them would be too), but print apart."""
    found = []
    for value in ("-0.0", "0.0", "[-0.0]", "[0.0]"):
        engine = overlog.Engine(f"r(Z) :- a(X), Z := f_tostr({value}).")
        engine.insert("a", (1,))
        engine.run()
        found += engine.rows("r")
    assert found == [("-0.0",), ("0.0",), ("[-0.0]",), ("[0.0]",)]


def test_old_joins_skip_the_excluded_delta(backend: LocalBackend) -> None:
    plan = p.Plan(driver=p.Seed(vars=("Y",), columns=(0,)),
                  operators=(join("b", V.OLD, "Y", "Z"),),
                  project=p.Project(terms=(var("Y"), var("Z"))))
    run = backend.prepare(plan)
    assert run([(3,), (4,)]) == {(3, "x"), (4, "y")}
    assert run([(3,), (4,)], {"b": {(4, "y")}}) == {(3, "x")}


def test_prior_joins_read_the_rows_removed_in_the_step(backend: LocalBackend) -> None:
    backend.store.remove("b", (3, "x"))
    full = backend.prepare(p.Plan(driver=p.Seed(vars=("Y",), columns=(0,)),
                                  operators=(join("b", V.FULL, "Y", "Z"),),
                                  project=p.Project(terms=(var("Z"),))))
    prior = backend.prepare(p.Plan(driver=p.Seed(vars=("Y",), columns=(0,)),
                                   operators=(join("b", V.PRIOR, "Y", "Z"),),
                                   project=p.Project(terms=(var("Z"),))))
    assert full([(3,), (4,)]) == {("y",)}
    assert prior([(3,), (4,)]) == {("x",), ("y",)}


def test_anti_join_filter_let_and_novel_projection(backend: LocalBackend) -> None:
    backend.store.add("out", (2, 4))
    plan = p.Plan(
        driver=p.Scan(relation="a", binds=((0, "X"), (1, "Y")), checks=()),
        operators=(p.AntiJoin(relation="b", key=(0,), key_terms=(var("X"),)),
                   p.Filter(op=">", left=var("X"), right=p.Const(value=0)),
                   p.Let(var="S", expr=p.Arith(op="+", left=var("X"), right=var("Y")))),
        project=p.Project(terms=(var("X"), var("S")), unless_in="out"))
    # (1, 2) -> (1, 3); (2, 3) -> (2, 5); (2, 4) -> (2, 6); none of 1, 2 is a key of b
    assert backend.prepare(plan)([(1, 2), (2, 3), (2, 4), (3, 0)]) == {(1, 3), (2, 5), (2, 6)}
    backend.store.add("out", (2, 6))
    assert backend.prepare(plan)([(2, 4)]) == set()


def test_aggregate_is_over_the_bag_of_bindings(backend: LocalBackend) -> None:
    plan = p.Plan(driver=p.Unit(),
                  operators=(p.Join(relation="a", version=V.FULL, key=(), key_terms=(),
                                    binds=((0, "X"), (1, "Y")), checks=()),),
                  project=p.Project(terms=(var("X"), p.Const(value=1))),
                  aggregate=p.Aggregate(function="sum", position=1))
    # X=2 has two bindings (Y=3, Y=4) that project to the same row: both count
    assert sorted(backend.prepare(plan)(())) == [(1, 1), (2, 2)]


@pytest.mark.parametrize(("function", "terms", "best", "improved", "before"), [
    # candidates (Z, X): (x, 1), (x, 2), (y, 2); a min grouped on the bare first column
    ("min", ("Z", "X"), {"x": ("x", 5), "y": ("y", 1)}, {"x": ("x", 1)}, {"x": ("x", 5)}),
    # candidates (X, Z, Y): (1, x, 3), (2, x, 3), (2, y, 4); a max, the group a tuple
    ("max", ("X", "Z", "Y"), {(2, "y"): (2, "y", 4)},
     {(1, "x"): (1, "x", 3), (2, "x"): (2, "x", 3)}, {(1, "x"): None, (2, "x"): None})])
def test_a_min_or_max_plan_compares_its_candidates_as_it_derives_them(
        backend: LocalBackend, function, terms, best, improved, before) -> None:
    """Where a plan's rows are a recursive min/max's candidates, ``improve`` keeps each
    group's best in ``best`` as the rows are derived, as ``run``'s rows would."""
    position = terms.index("Y") if function == "max" else 1
    plan = p.Plan(driver=p.Scan(relation="a", binds=((0, "X"), (1, "Y")), checks=()),
                  operators=(p.Join(relation="b", version=V.FULL, key=(0,),
                                    key_terms=(var("Y"),), binds=((1, "Z"),), checks=()),),
                  project=p.Project(terms=tuple(map(var, terms)),
                                    best=p.Best(function=function, position=position)))
    run = backend.prepare(plan)
    seed = [(1, 3), (2, 3), (2, 4)]
    assert sorted(run(seed)) == sorted(
        tuple({"X": x, "Y": y, "Z": z}[t] for t in terms)
        for x, y, z in [(1, 3, "x"), (2, 3, "x"), (2, 4, "y")])
    found: dict = {}
    everything = {**best}
    assert run.improve(seed, {}, 10, everything, found, {}) == improved
    assert found == before
    assert everything == {**best, **improved}


def test_a_min_plan_copying_its_seed_compares_it_too(backend: LocalBackend) -> None:
    plan = p.Plan(driver=p.Scan(relation="a", binds=((0, "X"), (1, "Y")), checks=()),
                  operators=(), project=p.Project(terms=(var("X"), var("Y")),
                                                  best=p.Best(function="min", position=1)))
    run = backend.prepare(plan)
    best = {1: (1, 0), 2: (2, 9)}
    before: dict = {}
    assert run.improve([(1, 2), (2, 4), (2, 3), (3, 7)], {}, 10, best, before, {}) == {
        2: (2, 3), 3: (3, 7)}
    assert (best, before) == ({1: (1, 0), 2: (2, 3), 3: (3, 7)}, {2: (2, 9), 3: None})
    improved: dict = {}
    with pytest.raises(Incomparable, match="'<' not supported between instances of 'str' "
                       "and 'int'"):  # (the fixpoint's to report: E301, once the seeds ran)
        run.improve([(1, "x"), (4, 1)], {}, 10, best, {}, improved)
    assert improved == {4: (4, 1)}
    with pytest.raises(Overflow):  # more groups improved than the cap
        run.improve([(5, 1), (6, 1)], {}, 1, best, {}, {})


def test_expression_errors_carry_the_binding(backend: LocalBackend) -> None:
    plan = p.Plan(driver=p.Scan(relation="a", binds=((0, "X"), (1, "Y")), checks=()),
                  operators=(p.Let(var="Q", expr=p.Arith(op="/", left=var("Y"),
                                                         right=p.Arith(op="-", left=var("X"),
                                                                       right=var("X")))),),
                  project=p.Project(terms=(var("Q"),)))
    with pytest.raises(PlanFailure) as caught:
        backend.prepare(plan)([(1, 2)])
    assert isinstance(caught.value.cause, ZeroDivisionError)
    assert caught.value.binding == {"X": 1, "Y": 2}


def test_errors_outside_expressions_are_not_the_programs(backend: LocalBackend) -> None:
    """A ValueError or TypeError raised by the loops themselves (a seed of the wrong shape,
    a bad exclusion) is a bug of the engine's: it propagates as it is."""
    plan = p.Plan(driver=p.Scan(relation="a", binds=((0, "X"), (1, "Y")), checks=()),
                  operators=(join("b", V.OLD, "Y", "Z"),),
                  project=p.Project(terms=(p.Arith(op="+", left=var("X"), right=var("Z")),)))
    run = backend.prepare(plan)
    with pytest.raises(ValueError, match="too many values to unpack"):
        run([(1, 2, 3)])
    with pytest.raises(TypeError):
        run([(2, 3)], {"b": 5})
    with pytest.raises(PlanFailure) as caught:  # 2 + "x": the expression's error
        run([(2, 3)])
    assert isinstance(caught.value.cause, builtins.ValueFault)
    assert caught.value.binding == {"X": 2, "Y": 3, "Z": "x"}


def test_generated_code_shows_in_tracebacks(backend: LocalBackend) -> None:
    plan = p.Plan(driver=p.Scan(relation="a", binds=((0, "X"), (1, "Y")), checks=()),
                  operators=(), project=p.Project(terms=(
                      p.Call(function="f_car", args=(p.MakeList(items=()),)),)))
    with pytest.raises(PlanFailure) as caught:
        backend.prepare(plan)([(1, 2)])
    text = "".join(traceback.format_exception(caught.value.__cause__))
    assert '<overlog plan ' in text
    assert "_add((_s0(()), ))" in text  # the generated line itself (f_car, by its site)


def test_a_user_function_that_raises_is_the_programs_error() -> None:
    def lookup(x: int) -> int:
        return {}[x]

    eng = overlog.Engine("p(Y) :- q[X], Y := f_lookup(X).\n", functions={"f_lookup": lookup})
    eng.generate_event("q", (1,))
    report = eng.step()
    assert [(e.code, e.message, e.binding) for e in report.errors] == [
        ("E301", "f_lookup raised KeyError: 1", {"X": 1})]


def test_a_bug_of_the_engine_surfaces_and_loses_nothing(monkeypatch) -> None:
    """An error an expression cannot raise (here from a broken built-in) is not reported as
    the program's: it propagates, the step is undone, and its inputs wait for the next."""
    size, calls = builtins.f_size, []

    def broken_once(value):
        calls.append(value)
        if len(calls) == 1:
            raise KeyError("engine bug")
        return size(value)

    monkeypatch.setattr(builtins, "f_size", broken_once)
    eng = overlog.Engine('t(1).\np(S) :- q[X], t(X), S := f_size("ab").\n')
    eng.insert("t", (2,))
    eng.generate_event("q", (2,))
    with pytest.raises(KeyError, match="engine bug"):
        eng.step()
    assert (eng.step_count, eng.rows("t"), eng.store.added("t")) == (0, [], set())
    report = eng.step()  # the engine rebuilt nothing: its first step never happened
    assert (report.step, report.errors, eng.rows("t")) == (1, [], [(1,), (2,)])
    eng.run()
    assert eng.rows("p") == [(2,)]


def test_a_plan_in_stages_reports_a_failure_of_a_later_stage() -> None:
    """A rule of 30 joins runs in stages (Python nests 20 blocks at most): a binding failing
    in the last stage is reported with its whole binding, and its event quarantined."""
    n = 30
    body = ", ".join(f"e(X{i}, X{i + 1})" for i in range(n))
    eng = overlog.Engine(f"p(Q) :- go[G], {body}, Q := G / X{n}.\n")
    for i in range(n):
        eng.insert("e", (i, i + 1 if i < n - 1 else 0))
    eng.generate_event("go", (7,))
    (report,) = eng.run(steps=1)
    ((error),) = report.errors
    assert (error.code, error.quarantined) == ("E302", (("event", "go", (7,)),))
    assert error.binding == {"G": 7, **{f"X{i}": i for i in range(n)}, f"X{n}": 0}
