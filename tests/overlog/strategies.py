"""Hypothesis strategies for Overlog ASTs: every program the parser can produce."""

from __future__ import annotations

import math

from hypothesis import strategies as st

from overlog import syntax as s
from overlog.values import RingId

KEYWORDS = {"true", "false", "null", "infinity", "notin", "delete", "materialize", "watch",
            "keys"}

identifiers = st.from_regex(r"[A-Za-z][A-Za-z0-9_]{0,6}", fullmatch=True).filter(
    lambda n: n not in KEYWORDS)
relation_names = identifiers.filter(lambda n: not n.startswith("f_"))
variables = identifiers.map(lambda n: s.Var(name=n))
function_names = st.from_regex(r"f_[a-z0-9_]{1,6}", fullmatch=True)

numbers = st.one_of(
    st.integers(min_value=-(10**20), max_value=10**20),
    st.floats(allow_nan=False),  # includes +-infinity
)
strings = st.text(st.characters(exclude_categories=("Cs",)), max_size=8)
constants = st.one_of(numbers, strings, st.booleans(), st.none(),
                      st.integers(0, 2**160 - 1).map(RingId)).map(lambda v: s.Const(value=v))


COMPARISONS = ["==", "!=", "<", "<=", ">", ">="]


def _compound(children: st.SearchStrategy) -> st.SearchStrategy:
    return st.one_of(
        st.builds(lambda n, a: s.Call(name=n, args=tuple(a)), function_names,
                  st.lists(children, max_size=3)),
        st.builds(lambda o, left, right: s.BinOp(op=o, left=left, right=right),
                  st.sampled_from(["+", "-", "*", "/", "%", "<<", ">>"]), children, children),
        st.builds(lambda o, left, right: s.Logic(op=o, left=left, right=right),
                  st.sampled_from(["&&", "||"]), children, children),
        children.map(lambda t: s.Not(operand=t)),
        st.builds(lambda o, left, right: s.Comparison(op=o, left=left, right=right),
                  st.sampled_from(COMPARISONS), children, children),
        st.builds(lambda v, lo, hi, lc, hc: s.InRange(value=v, low=lo, high=hi, low_closed=lc,
                                                      high_closed=hc),
                  children, children, children, st.booleans(), st.booleans()),
        # the parser folds minus into numeric literals, so Neg never wraps one
        children.filter(lambda t: not (isinstance(t, s.Const)
                                       and type(t.value) in (int, float)))
        .map(lambda t: s.Neg(operand=t)),
        st.lists(children, max_size=3).map(lambda items: s.ListExpr(items=tuple(items))),
    )


expressions = st.recursive(st.one_of(variables, constants), _compound, max_leaves=6)
aggregates = st.one_of(
    st.builds(lambda f, a: s.Agg(func=f, arg=a),
              st.sampled_from(["count", "sum", "min", "max", "avg", "median"]),
              st.one_of(st.none(), variables)),
    st.builds(lambda f, a, k: s.Agg(func=f, arg=a, k=k), st.sampled_from(["topk", "bottomk"]),
              variables, st.integers(0, 10**6)))


@st.composite
def atoms(draw: st.DrawFn, head: bool = False) -> s.Atom:
    arg = st.one_of(expressions, st.just(s.Wildcard()), *([aggregates] if head else []))
    args = tuple(draw(st.lists(arg, max_size=4)))
    locatable = [i for i, a in enumerate(args)  # (an aggregate of a variable: `a_MAX<@Y>`)
                 if not isinstance(a, s.Agg) or (a.arg is not None and a.k is None)]
    locs = tuple(sorted(draw(st.sets(st.sampled_from(locatable), max_size=2))
                        if locatable else ()))
    return s.Atom(name=draw(relation_names), args=args, event=draw(st.booleans()), locs=locs)


literals = st.one_of(
    atoms(),
    atoms().map(lambda a: s.Negation(atom=a)),
    st.builds(lambda o, left, right: s.Comparison(op=o, left=left, right=right),
              st.sampled_from(COMPARISONS), expressions, expressions),
    expressions.filter(lambda t: isinstance(t, (s.Logic, s.Not, s.InRange)))  # a condition
    .map(lambda t: s.Comparison(op="==", left=t, right=s.Const(value=True))),
    st.builds(lambda v, e: s.Assign(var=v, expr=e), variables, expressions),
)

rules = st.builds(
    lambda head, body, name, delete: s.Rule(head=head, body=tuple(body), name=name,
                                            delete=delete),
    atoms(head=True), st.lists(literals, min_size=1, max_size=4),
    st.one_of(st.none(), identifiers), st.booleans())

bounds = st.one_of(st.integers(min_value=0, max_value=10**6),
                   st.floats(min_value=0, allow_nan=False), st.just(math.inf))

statements = st.one_of(
    rules,
    atoms(head=True).map(lambda a: s.Fact(atom=a)),
    st.builds(lambda n, lt, sz, k: s.Materialize(name=n, lifetime=lt, size=sz, keys=tuple(k)),
              relation_names, bounds, bounds, st.lists(st.integers(0, 9), max_size=3)),
    st.builds(lambda n, k: s.Materialize(name=n, lifetime=math.inf, size=math.inf,
                                         keys=tuple(p for p, _ in k),
                                         key_types=tuple(t for _, t in k)),
              relation_names, st.lists(st.tuples(st.integers(0, 9), st.sampled_from(
                  ["int32", "str", "list"])), min_size=1, max_size=3)),
    relation_names.map(lambda n: s.Watch(name=n)),
)

programs = st.lists(statements, max_size=5).map(lambda sts: s.Program(statements=tuple(sts)))
