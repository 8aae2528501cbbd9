"""A small, obviously-correct reference evaluator: naive stratified evaluation of the view
rules over given base tables, from scratch. Slow on purpose; no plans, no indexes, no deltas.

Aggregates are over the bag of body bindings (one element per distinct combination of body
tuples), as in the engine.
"""

from __future__ import annotations

import random
from collections import defaultdict
from typing import Any

from overlog import syntax as s
from overlog.analysis import CheckedProgram
from overlog.runtime.builtins import aggregate, divide, make_functions, remainder

Binding = dict[str, Any]
PURE = {name: fn for name, fn in make_functions(lambda: 0.0, random.Random(0)).items()
        if name not in ("f_now", "f_rand")}


def value(term: s.Term, b: Binding) -> Any:
    match term:
        case s.Var(name=name):
            return b[name]
        case s.Const(value=v):
            return v
        case s.BinOp(op=op, left=left, right=right):
            x, y = value(left, b), value(right, b)
            return {"+": lambda: x + y, "-": lambda: x - y, "*": lambda: x * y,
                    "/": lambda: divide(x, y), "%": lambda: remainder(x, y)}[op]()
        case s.Neg(operand=operand):
            return -value(operand, b)
        case s.ListExpr(items=items):
            return tuple(value(i, b) for i in items)
        case s.Call(name=name, args=args):  # pure built-ins only (no f_now, f_rand)
            return PURE[name](*(value(a, b) for a in args))
    raise NotImplementedError(term)


def _ready(literal: s.Literal, b: Binding) -> bool:
    if isinstance(literal, s.Atom):
        return True
    if isinstance(literal, s.Assign):
        return all(v.name in b for v in s.variables(literal.expr))
    return all(v.name in b for v in s.variables(literal))


def _match(atom: s.Atom, row: tuple, b: Binding) -> Binding | None:
    out = dict(b)
    for term, v in zip(atom.args, row, strict=True):
        if isinstance(term, s.Wildcard):
            continue
        if isinstance(term, s.Var) and term.name not in out:
            out[term.name] = v
        elif value(term, out) != v:
            return None
    return out


def bindings(body: list[s.Literal], b: Binding, db: dict[str, set]) -> list[Binding]:
    """Every binding of the body (a list: one per combination of tuples)."""
    if not body:
        return [b]
    literal = next(lit for lit in body if _ready(lit, b))
    rest = [lit for lit in body if lit is not literal]
    if isinstance(literal, s.Atom):
        out = []
        for row in db.get(literal.name, ()):
            matched = _match(literal, row, b)
            if matched is not None:
                out += bindings(rest, matched, db)
        return out
    if isinstance(literal, s.Negation):
        if any(_match(literal.atom, row, b) is not None for row in db.get(literal.atom.name, ())):
            return []
        return bindings(rest, b, db)
    if isinstance(literal, s.Assign):
        return bindings(rest, {**b, literal.var.name: value(literal.expr, b)}, db)
    x, y = value(literal.left, b), value(literal.right, b)
    ok = {"==": x == y, "!=": x != y, "<": x < y, "<=": x <= y, ">": x > y, ">=": x >= y}
    return bindings(rest, b, db) if ok[literal.op] else []


def _derive(rule: s.Rule, db: dict[str, set]) -> set[tuple]:
    found = bindings(list(rule.body), {}, db)
    agg = next(((i, a) for i, a in enumerate(rule.head.args) if isinstance(a, s.Agg)), None)
    if agg is None:
        return {tuple(value(t, b) for t in rule.head.args) for b in found}
    position, term = agg
    groups: dict[tuple, list] = defaultdict(list)
    for b in found:
        key = tuple(value(t, b) for i, t in enumerate(rule.head.args) if i != position)
        groups[key].append(None if term.arg is None else b[term.arg.name])
    rows = set()
    for key, values in groups.items():
        row = list(key)
        row.insert(position, aggregate(term.func, values))
        rows.add(tuple(row))
    return rows


def closure(checked: CheckedProgram, base: dict[str, set]) -> dict[str, set]:
    """Every persistent relation: its base tuples plus what the view rules derive."""
    db = {name: set(base.get(name, ())) for name in checked.relations}
    for stratum in checked.strata:
        rules = [checked.rules[i].rule for i in stratum.rules
                 if checked.rules[i].kind == "view"]
        plain = [r for r in rules if not any(isinstance(a, s.Agg) for a in r.head.args)]
        for rule in rules:
            if rule not in plain:  # aggregates read lower strata only: once is enough
                db[rule.head.name] |= _derive(rule, db)
        changed = True
        while changed:
            changed = False
            for rule in plain:
                new = _derive(rule, db) - db[rule.head.name]
                if new:
                    db[rule.head.name] |= new
                    changed = True
    return db
