"""The planner: join order, versions, fresh variables, and the variants each kind of rule gets."""

from __future__ import annotations

import pickle

import pytest

from overlog import plan as p
from overlog.compile import compile_program

V = p.Version


def rule(source: str, index: int = -1) -> p.RulePlan:
    return compile_program(source).rules[index]


def var(name: str) -> p.Var:
    return p.Var(name=name)


def test_greedy_join_order_and_old_versions() -> None:
    plan = rule("p(X, W) :- a(X, Y), b(Z, W), c(Y, Z).")
    first, second, third = (t.insert for t in plan.triggers)
    # driven by a: c is joined on Y before b (one bound column beats none)
    assert [(op.relation, op.version, op.key) for op in first.operators] == [
        ("c", V.FULL, (0,)), ("b", V.FULL, (0,))]
    # driven by b: a comes before b in the body, so it reads its old version
    assert [(op.relation, op.version) for op in second.operators] == [
        ("c", V.FULL), ("a", V.OLD)]
    assert [(op.relation, op.version) for op in third.operators] == [
        ("a", V.OLD), ("b", V.OLD)]
    assert first.driver == p.Scan(relation="a", binds=((0, "X"), (1, "Y")), checks=())
    assert first.project == p.Project(terms=(var("X"), var("W")), unless_in="p")


def test_expression_arguments_get_fresh_variables_no_program_can_write() -> None:
    plan = rule("p(_col1) :- q(Y + 1), r(Y, _col1).").triggers[0].insert
    assert plan.driver == p.Scan(relation="q", binds=((0, "#1"),), checks=())
    assert plan.operators == (
        p.Join(relation="r", version=V.FULL, key=(), key_terms=(),
               binds=((0, "Y"), (1, "_col1")), checks=()),
        p.Filter(op="==", left=var("#1"),
                 right=p.Arith(op="+", left=var("Y"), right=p.Const(value=1))))


def test_over_deletion_reads_prior_versions_without_anti_joins() -> None:
    trigger = rule("p(X) :- a(X, Y), b(Y), notin c(X).").triggers[1]
    assert [type(op).__name__ for op in trigger.insert.operators] == ["Join", "AntiJoin"]
    assert trigger.insert.operators[0].version is V.OLD
    assert trigger.delete == p.Plan(
        driver=trigger.insert.driver,
        operators=(p.Join(relation="a", version=V.PRIOR, key=(1,), key_terms=(var("Y"),),
                          binds=((0, "X"),), checks=()),),
        project=p.Project(terms=(var("X"),)), finds=True)


def test_comparisons_and_negations_ready_together_keep_their_body_order() -> None:
    """A `notin` before a comparison guards it (`notin zero(Y), X / Y > 0`); one after it
    does not, as written."""
    guarded = rule("r(X) :- a(X, Y), notin zero(Y), X / Y > 0.").triggers[0].insert
    unguarded = rule("r(X) :- a(X, Y), X / Y > 0, notin zero(Y).").triggers[0].insert
    assert [type(op).__name__ for op in guarded.operators] == ["AntiJoin", "Filter"]
    assert [type(op).__name__ for op in unguarded.operators] == ["Filter", "AntiJoin"]


@pytest.mark.parametrize(("source", "from_a", "from_c"), [
    # an atom written before an expression that may fail guards it, whatever the driver
    ("r(Y) :- a(X), c(X), Y := 1 / X.", ["Join", "Let"], ["Join", "Let"]),
    ("r(X) :- a(X), c(X), X > 3.", ["Join", "Filter"], ["Join", "Filter"]),
    ("r(Y) :- a(X), c(X), Y := f_size(X).", ["Join", "Let"], ["Join", "Let"]),
    # one written after it does not, as written
    ("r(Y) :- a(X), Y := 1 / X, c(X).", ["Let", "Join"], ["Join", "Let"]),
    # what cannot fail is placed as soon as its variables are bound
    ("r(Y) :- a(X), c(X), Y := X.", ["Let", "Join"], ["Let", "Join"]),
    ("r(Y) :- a(X), c(X), Y := [X, 1].", ["Let", "Join"], ["Let", "Join"]),
    ("r(X) :- a(X), c(X), X != 3.", ["Filter", "Join"], ["Filter", "Join"]),
])
def test_an_atom_guards_the_expressions_written_after_it(source, from_a, from_c) -> None:
    a, c = (trigger.insert for trigger in rule(source).triggers)
    assert [type(op).__name__ for op in a.operators] == from_a
    assert [type(op).__name__ for op in c.operators] == from_c


def test_an_expression_that_may_fail_stays_where_the_body_puts_it() -> None:
    """What comes after it in the body (a test, an atom) is not placed before it, and it is
    not placed before what comes before it, whatever atom drives the plan; a test that
    cannot fail moves freely between two that may."""
    plans = rule("r(X) :- a(X, Y), c(Z), X != 2, X / Y > 0, Y != 0, d(Y), Y < X.").triggers

    def shown(plan: p.Plan) -> list[str]:
        return [f"{type(op).__name__} {op.relation}" if isinstance(op, p.Join) else
                f"{type(op).__name__} {op.op}" for op in plan.operators]

    assert [shown(t.insert) for t in plans] == [
        ["Filter !=", "Join c", "Filter >", "Filter !=", "Join d", "Filter <"],  # from a
        ["Join a", "Filter !=", "Filter >", "Filter !=", "Join d", "Filter <"],  # from c
        ["Join a", "Filter !=", "Join c", "Filter >", "Filter !=", "Filter <"]]  # from d


def test_an_atom_computing_a_column_that_may_fail_is_a_barrier_too() -> None:
    """`b(10 / X)` after `X != 0`: joined after it; driving the plan, its column's check
    comes after it, and what follows `b` (`X < 3`) after the check."""
    a, b = (t.insert for t in rule("r(X) :- a(X), X != 0, b(10 / X), X < 3.").triggers)
    assert [type(op).__name__ for op in a.operators] == ["Filter", "Join", "Filter"]
    assert [(type(op).__name__, getattr(op, "op", None)) for op in b.operators] == [
        ("Join", None), ("Filter", "!="), ("Filter", "=="), ("Filter", "<")]


def test_variants_by_rule_kind() -> None:
    source = """
        materialize(k, infinity, infinity, keys(1)).
        v(X) :- a(X), notin b(X).
        k(X, Y) :- a(X), b(Y).
        e[X] :- a(X).
        s(X) :- ev[X], a(X).
        delete a(X) :- ev[X].
        n(X) :- notin a(X), X := 1.
    """
    view, keyed, event, state, delete, unit = compile_program(source).rules
    # views: insertion and over-deletion per positive and negated atom, rederivation
    assert [(t.relation, t.negated, t.delete is not None) for t in view.triggers] == [
        ("a", False, True), ("b", True, True)]
    assert view.rederive is not None and view.start is None
    # a keyed head checks keys when rows are added: its plans emit every row
    assert keyed.triggers[0].insert.project.unless_in is None
    # event heads: insertion only, new rows only
    assert [(t.relation, t.delete) for t in event.triggers] == [("a", None)]
    assert event.triggers[0].insert.project.unless_in == "e"
    assert (event.rederive, event.stratum) == (None, 0)
    # deferred rules: insertion on what is new in the step, every row
    for deferred in (state, delete):
        assert deferred.deferred and deferred.rederive is None
        assert all(t.delete is None and t.insert.project.unless_in is None
                   for t in deferred.triggers)
    # no positive atom: a plan for the first step, from one empty binding
    assert unit.start is not None and isinstance(unit.start.driver, p.Unit)
    assert [t.relation for t in unit.triggers] == ["a"]


def test_rederivation_is_seeded_with_head_columns() -> None:
    plan = rule("p(X, Y + 1, X) :- a(X, Y).").rederive
    assert plan is not None
    assert plan.driver == p.Seed(vars=("X",), columns=(0,))
    assert plan.project.terms == (var("X"), p.Arith(op="+", left=var("Y"),
                                                    right=p.Const(value=1)), var("X"))


def test_aggregates_recompute_groups_seeded_or_whole() -> None:
    seeded = rule("m(X, count<Y>, X) :- a(X, Y).").aggregation
    assert seeded is not None and (seeded.position, seeded.group) == (1, (0, 2))
    assert seeded.groups.driver == p.Seed(vars=("X",), columns=(0,))
    assert seeded.groups.aggregate == p.Aggregate(function="count", position=1)
    assert seeded.zero == ()
    whole = rule("m(X + 1, max<Y>) :- a(X, Y).").aggregation
    assert whole is not None
    assert whole.groups.driver == p.Scan(relation="a", binds=((0, "X"), (1, "Y")), checks=())
    # the triggers only say which groups changed
    assert rule("m(X + 1, max<Y>) :- a(X, Y).").triggers[0].insert.project == p.Project(
        terms=(p.Arith(op="+", left=var("X"), right=p.Const(value=1)),))


def test_a_recursive_min_projects_its_candidates_as_a_bag() -> None:
    plan = rule("d(0, 0).\nd(Y, min<C>) :- d(X, C1), e(X, Y, W), C := C1 + W.\n"
                "v(Y) :- d(Y, _).")
    assert [t.insert.project for t in plan.triggers] == [  # a view: a set
        p.Project(terms=(var("Y"),), unless_in="v")]
    recursive = rule("d(0, 0).\nd(Y, min<C>) :- d(X, C1), e(X, Y, W), C := C1 + W.\n", 0)
    best = p.Best(function="min", position=1)
    assert [(t.relation, t.insert.project, t.delete.project) for t in recursive.triggers] == [
        (name, p.Project(terms=(var("Y"), var("C")), best=best),
         p.Project(terms=(var("Y"), var("C")), best=best)) for name in ("d", "e")]


def test_count_triggered_by_events_has_a_zero_probe() -> None:
    agg = rule("c[K, count<V>] :- ask[K], item(K, V).").aggregation
    assert agg is not None
    assert agg.zero == (p.Plan(driver=p.Scan(relation="ask", binds=((0, "K"),), checks=()),
                               operators=(), project=p.Project(terms=(var("K"),)),
                               finds=True),)
    assert rule("c[K, max<V>] :- ask[K], item(K, V).").aggregation.zero == ()  # type: ignore


@pytest.mark.parametrize(("source", "operators"), [
    # what the body evaluates on the event before another atom: a test there filters it
    ("c[X, count<*>] :- ask[X], X > 0, item(X).", ["Filter >"]),
    # a test after it filters what the event matched, not the event
    ("c[X, count<*>] :- ask[X], item(X), X > 0.", []),
    # an assignment after it: only where the group needs it
    ("c[X, count<*>] :- ask[X], item(X), Y := 10 / X.", []),
    ("c[K, count<*>] :- ask[X], item(X), K := 10 / X.", ["Let K"]),
    # followed on as written until the group is known: the test before it, not after it
    ("c[K, count<*>] :- ask[X], item(X), X != 5, K := f_size(X), X > 1.", ["Filter !=",
                                                                           "Let K"]),
])
def test_a_zero_probe_evaluates_the_event_as_written(source: str, operators: list) -> None:
    (plan,) = rule(source).aggregation.zero  # type: ignore[union-attr]
    assert plan.finds is True
    assert [f"{type(op).__name__} {op.var if isinstance(op, p.Let) else op.op}"
            for op in plan.operators] == operators


def test_constants_compare_with_their_type() -> None:
    assert p.Const(value=1) != p.Const(value=True)
    assert p.Const(value=1) != p.Const(value=1.0)
    assert rule("p(X) :- a(X, 1).") != rule("p(X) :- a(X, true).")


def test_plans_are_plain_picklable_data() -> None:
    plan = compile_program("path(X, Y) :- link(X, Y).\n"
                           "path(X, Z) :- link(X, Y), path(Y, Z).\n"
                           "n(X, count<*>) :- path(X, _).\n")
    for _, _, one in plan.plans():
        assert pickle.loads(pickle.dumps(one)) == one
    assert pickle.loads(pickle.dumps(plan)) == plan


@pytest.mark.parametrize(("source", "text"), [
    ("p(Z) :- a(X, Y), Z := (Y - 1) * -(Y / 2) % X.", "(Y - 1) * -(Y / 2) % X"),
    ("p(Z) :- a(X, Y), Z := Y - (1 - X) + [Y, f_size([1])].", "Y - (1 - X) + [Y, f_size([1])]"),
])
def test_expressions_print_with_the_fewest_parentheses(source: str, text: str) -> None:
    let = rule(source).triggers[0].insert.operators[-1]
    assert isinstance(let, p.Let) and p.format_expr(let.expr) == text
