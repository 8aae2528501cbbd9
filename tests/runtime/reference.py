"""A small, obviously-correct reference evaluator: naive stratified evaluation of the view
rules over given base tables, from scratch. Slow on purpose; no plans, no indexes, no deltas.

It shares nothing with the engine but the parser's AST: its own rule kinds, stratification
(levels raised until every negated or aggregated input sits strictly below), arithmetic,
built-in functions and aggregates, so that a bug in one cannot hide in the other.
Aggregates are over the bag of body bindings (one element per distinct combination of body
tuples), as the language defines them.
"""

from __future__ import annotations

import math
from collections import defaultdict
from fractions import Fraction
from typing import Any

from overlog import syntax as s

Binding = dict[str, Any]


def _int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _divide(x: Any, y: Any) -> Any:
    if y == 0:
        raise ZeroDivisionError("division by zero")
    if _int(x) and _int(y):  # truncate toward zero
        quotient = abs(x) // abs(y)
        return quotient if (x < 0) == (y < 0) else -quotient
    return x / y


def _remainder(x: Any, y: Any) -> Any:
    if _int(x) and _int(y):
        return x - y * _divide(x, y)
    if y == 0:
        raise ZeroDivisionError("division by zero")
    return math.fmod(x, y)


FUNCTIONS = {  # the pure built-ins (no f_now, f_rand)
    "f_concat": lambda *a: (tuple(x for part in a for x in part)
                            if all(isinstance(x, tuple) for x in a) else "".join(a)),
    "f_size": len,
    "f_min": min,
    "f_max": max,
    "f_cons": lambda x, items: (x, *items),
    "f_append": lambda items, x: (*items, x),
    "f_member": lambda items, x: x in items,
    "f_car": lambda items: items[0],
    "f_cdr": lambda items: items[1:],
    "f_last": lambda items: items[-1],
}

COMPARE = {"==": lambda x, y: x == y, "!=": lambda x, y: x != y, "<": lambda x, y: x < y,
           "<=": lambda x, y: x <= y, ">": lambda x, y: x > y, ">=": lambda x, y: x >= y}

ARITHMETIC = {"+": lambda x, y: x + y, "-": lambda x, y: x - y, "*": lambda x, y: x * y,
              "/": _divide, "%": _remainder}


def aggregate(func: str, values: list) -> Any:
    if func == "count":
        return len(values)
    total = 0
    for v in values:
        total += Fraction(v)  # exact: a float sum is the float nearest it
    if any(isinstance(v, float) for v in values):
        total = float(total)
    elif func == "sum":
        total = int(total)
    if func == "sum":
        return total
    if func == "avg":
        return float(total / len(values))  # divided once
    best = values[0]
    for v in values[1:]:
        if (v < best) if func == "min" else (v > best):
            best = v
    return best


def value(term: s.Term, b: Binding) -> Any:
    match term:
        case s.Var(name=name):
            return b[name]
        case s.Const(value=v):
            return v
        case s.BinOp(op=op, left=left, right=right):
            return ARITHMETIC[op](value(left, b), value(right, b))
        case s.Neg(operand=operand):
            return -value(operand, b)
        case s.ListExpr(items=items):
            return tuple(value(i, b) for i in items)
        case s.Call(name=name, args=args):
            return FUNCTIONS[name](*(value(a, b) for a in args))
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
    ok = COMPARE[literal.op](value(literal.left, b), value(literal.right, b))
    return bindings(rest, b, db) if ok else []


def _aggregate_of(rule: s.Rule) -> tuple[int, s.Agg] | None:
    return next(((i, a) for i, a in enumerate(rule.head.args) if isinstance(a, s.Agg)), None)


def _derive(rule: s.Rule, db: dict[str, set]) -> set[tuple]:
    found = bindings(list(rule.body), {}, db)
    agg = _aggregate_of(rule)
    if agg is None:
        return {tuple(value(t, b) for t in rule.head.args) for b in found}
    position, term = agg
    groups: dict[tuple, list] = defaultdict(list)
    for b in found:
        key = tuple(value(t, b) for i, t in enumerate(rule.head.args) if i != position)
        groups[key].append(None if term.arg is None else b[term.arg.name])
    return {(*key[:position], aggregate(term.func, values), *key[position:])
            for key, values in groups.items()}


def view_rules(program: s.Program) -> list[s.Rule]:
    """Rules whose head is a view of persistent tables: no event anywhere, no delete, no
    location specifiers (this evaluator knows one node)."""
    views = []
    for rule in program.rules:
        atoms = [rule.head, *(lit.atom if isinstance(lit, s.Negation) else lit
                              for lit in rule.body if isinstance(lit, (s.Atom, s.Negation)))]
        assert not any(atom.locs for atom in atoms), "the reference knows no locations"
        if not rule.delete and not any(atom.event for atom in atoms):
            views.append(rule)
    return views


def recursive_rules(rules: list[s.Rule]) -> list[s.Rule]:
    """The rules whose head feeds (through rules) one of their own body atoms."""
    feeds: dict[str, set[str]] = defaultdict(set)  # relation -> the heads reading it
    for rule in rules:
        for literal in rule.body:
            atom = literal.atom if isinstance(literal, s.Negation) else literal
            if isinstance(atom, s.Atom):
                feeds[atom.name].add(rule.head.name)
    found = []
    for rule in rules:
        reached, todo = set(), [rule.head.name]
        while todo:
            for name in feeds[todo.pop()] - reached:
                reached.add(name)
                todo.append(name)
        if any(isinstance(lit, s.Atom) and lit.name in reached for lit in rule.body):
            found.append(rule)
    return found


def levels(rules: list[s.Rule]) -> dict[str, int]:
    """Stratum levels: a head sits at or above each positive input and strictly above each
    negated or aggregated one, but for recursive `min` and `max`. Raises if no such levels
    exist (a cycle through them)."""
    level: dict[str, int] = defaultdict(int)
    recursive = recursive_rules(rules)
    for _ in range(len(rules) + 2):
        changed = False
        for rule in rules:
            agg = _aggregate_of(rule)
            strict = agg is not None and not (rule in recursive
                                              and agg[1].func in ("min", "max"))
            for literal in rule.body:
                if isinstance(literal, s.Atom):
                    need = level[literal.name] + (1 if strict else 0)
                elif isinstance(literal, s.Negation):
                    need = level[literal.atom.name] + 1
                else:
                    continue
                if level[rule.head.name] < need:
                    level[rule.head.name] = need
                    changed = True
        if not changed:
            return dict(level)
    raise ValueError("not stratifiable")


def _best_of(rules: list[s.Rule], base: set, db: dict[str, set]) -> set[tuple]:
    """A recursive min/max head: per group, the best candidate of all its rules, where it is
    better than the group's base rows (which stay)."""
    position, agg = _aggregate_of(rules[0])  # type: ignore[misc]
    better = (lambda x, y: x < y) if agg.func == "min" else (lambda x, y: x > y)
    best: dict[tuple, Any] = {}
    for rule in rules:
        for row in _derive(rule, db):
            key = row[:position] + row[position + 1:]
            if key not in best or better(row[position], best[key]):
                best[key] = row[position]
    for row in base:
        key = row[:position] + row[position + 1:]
        if key in best and not better(best[key], row[position]):
            del best[key]
    return set(base) | {(*key[:position], v, *key[position:]) for key, v in best.items()}


def closure(program: s.Program, base: dict[str, set]) -> dict[str, set]:
    """Every persistent relation: its base tuples plus what the view rules derive. A level
    whose `min`/`max` aggregates are recursive is iterated from its base rows, every rule
    evaluated in full each time, until nothing changes (aggregates only improve)."""
    rules = view_rules(program)
    names = {node.name for node in s.walk(program)
             if isinstance(node, s.Atom) and not node.event}
    db = {name: set(base.get(name, ())) for name in names}
    level = levels(rules)
    aggregates = [r for r in recursive_rules(rules) if _aggregate_of(r) is not None]
    for n in sorted(set(level.values())):
        here = [r for r in rules if level.get(r.head.name, 0) == n]
        # an aggregated head of a cycle: each of its rules is a recursive min/max
        recursive = [r for r in here if r.head.name in {a.head.name for a in aggregates}]
        for rule in here:  # aggregates read lower levels only: once is enough
            if _aggregate_of(rule) is not None and rule not in recursive:
                db[rule.head.name] |= _derive(rule, db)
        plain = [r for r in here if _aggregate_of(r) is None]
        if recursive:
            heads = {r.head.name for r in plain + recursive}
            while True:
                new = {h: set(base.get(h, ())) for h in heads}
                for rule in plain:
                    new[rule.head.name] |= _derive(rule, db)
                for head in {r.head.name for r in recursive}:
                    new[head] = _best_of([r for r in recursive if r.head.name == head],
                                         base.get(head, set()), db)
                if all(new[h] == db[h] for h in heads):
                    break
                db.update(new)
            continue
        changed = True
        while changed:
            changed = False
            for rule in plain:
                new_rows = _derive(rule, db) - db[rule.head.name]
                if new_rows:
                    db[rule.head.name] |= new_rows
                    changed = True
    return db
