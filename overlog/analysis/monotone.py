"""Recursive `min` and `max`: which aggregates may sit on a cycle of the dependency graph.

A `min` (or `max`) aggregate in a recursive stratum keeps one row per group, the best value so
far, and the stratum runs until no group improves (semi-naive on the improvements). That is
exact when the stratum is monotone: a better value of a recursive aggregate can only make the
values computed from it better, never remove a row another rule needs. So, in the rules of the
cycle, a value read from an aggregated column (a "recursive value") may only:

- flow into the head, at the aggregate's argument or, through a view of the cycle, at one of
  its columns (which then carries recursive values too), never into a group column;
- go through `+`, `-` with it on the left, `f_min` and `f_max` (the result grows with it);
- be bounded from the side it improves on: `C < K` or `C <= K` for `min`, `C > K` or
  `C >= K` for `max` (a better value passes whenever a worse one did);

and never be joined on, compared for equality, negated or given to another function. `count`,
`sum` and `avg` cannot be recursive; one cycle aggregates with one function; every rule of an
aggregated relation in the cycle aggregates it, and no view of the cycle has keys
(docs/language.md, "Recursive min and max").
"""

from __future__ import annotations

from collections.abc import Collection

from overlog import syntax as s
from overlog.diagnostics import Diagnostic, Note
from overlog.printer import format_literal, format_term

MONOTONE = ("min", "max")
# the comparisons that keep holding as a value improves: recursive value on the left
_BOUNDS = {"min": ("<", "<="), "max": (">", ">=")}
_FLIPPED = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}


def aggregate_of(rule: s.Rule) -> tuple[int, s.Agg] | None:
    return next(((i, a) for i, a in enumerate(rule.head.args) if isinstance(a, s.Agg)), None)


def refusal(rules: list[s.Rule]) -> Note | None:
    """Why a cycle through an aggregate cannot be evaluated as a recursive min/max at all
    (the cycle error gets it as a note), or None."""
    for rule in rules:
        found = aggregate_of(rule)
        if found is not None and found[1].func not in MONOTONE:
            return Note(f"`{found[1].func}` cannot be recursive: only `min` and `max` can "
                        "(docs/language.md, \"Recursive min and max\")", found[1].span)
    return None


STRICT = "strict"  # every recursive value read flows, through + and -, into the head
LOOSE = "loose"  # some row of the cycle is read for its existence, or through f_min/f_max


def check(rules: list[s.Rule], keyed: Collection[str] = ()) -> Diagnostic | str:
    """E228 when the rules of one cycle through `min`/`max` aggregates (``rules``: every
    in-step rule whose head is in the cycle; ``keyed``: the relations with keys) are not
    monotone, else STRICT or LOOSE. In a strict cycle a group's best row always has a
    derivation that does not go through the group itself, so a removal can spare a group
    whose best it did not take away; in a loose one (`low(Y, _)` read for its existence, or
    a value capped by `f_min`) a group may be held up by nothing but itself, and every
    group a removal reaches is recomputed."""
    aggregated: dict[str, tuple[int, str]] = {}  # relation -> (column, function)
    for rule in rules:
        found = aggregate_of(rule)
        if rule.head.event:
            return _error(f"a recursive `{_function(rules)}` cannot go through the event "
                          f"`{rule.head.name}`: the rules of its cycle must be views",
                          rule.head.span)
        if found is not None:
            position, agg = found
            first = next(iter(aggregated.values()), None)
            if first is not None and first[1] != agg.func:
                return _error(f"one recursive cycle aggregates with both `{first[1]}` and "
                              f"`{agg.func}`: a better value of one would be a worse one of "
                              "the other", agg.span)
            aggregated.setdefault(rule.head.name, (position, agg.func))
    function = next(iter(aggregated.values()))[1]
    for rule in rules:
        if rule.head.name in keyed and rule.head.name not in aggregated:
            return _error(f"`{rule.head.name}` has keys: a view in a recursive `{function}` "
                          "cycle cannot (a better value would conflict with the worse one "
                          "it replaces)", rule.head.span)
    for rule in rules:
        wanted = aggregated.get(rule.head.name)
        found = aggregate_of(rule)
        if wanted is not None and (found is None or found[0] != wanted[0]):
            return _error(f"`{rule.head.name}` is a recursive `{function}` over column "
                          f"{wanted[0] + 1}: every rule for it must aggregate that column "
                          "with it", rule.head.span)
    tainted = {(name, column) for name, (column, _) in aggregated.items()}
    loose: list[bool] = []
    while True:
        grown = set(tainted)
        loose.clear()
        for rule in rules:
            error = _follow(rule, function, grown, loose)
            if error is not None:
                return error
        if grown == tainted:
            break
        tainted = grown
    carried = {name for name, _ in tainted}
    if loose or any(rule.head.name not in carried for rule in rules):
        return LOOSE  # (a view of the cycle without a recursive value: read for existence)
    return STRICT


def _function(rules: list[s.Rule]) -> str:
    return next((found[1].func for rule in rules if (found := aggregate_of(rule))), "min")


def _error(message: str, span, notes: tuple[Note, ...] = ()) -> Diagnostic:
    return Diagnostic("E228", message, span, notes=notes or (Note(
        "docs/language.md, \"Recursive min and max\", says what a recursive min or max "
        "may do with its values"),))


def _names(node: object) -> set[str]:
    return {v.name for v in s.variables(node)}


def _follow(rule: s.Rule, function: str, tainted: set[tuple[str, int]],
            loose: list[bool]) -> Diagnostic | None:
    """Check one rule's uses of recursive values, adding the view columns they reach to
    ``tainted`` (and to ``loose`` when the rule reads one other than into its head through
    + and -)."""
    atoms = [lit for lit in rule.body if isinstance(lit, s.Atom)]
    uses: dict[str, int] = {}
    for atom in atoms:
        for arg in atom.args:
            for name in _names(arg):
                uses[name] = uses.get(name, 0) + 1
    values: set[str] = set()  # variables holding recursive values
    for atom in atoms:
        for column, arg in enumerate(atom.args):
            if (atom.name, column) not in tainted:
                continue
            if isinstance(arg, s.Wildcard):
                loose.append(True)
                continue
            if not isinstance(arg, s.Var):
                return _error(f"`{atom.name}` column {column + 1} holds a recursive "
                              f"`{function}`: it cannot be matched against a value here",
                              arg.span)
            if uses[arg.name] > 1:
                return _error(f"`{arg.name}` is a recursive `{function}` value: joining on "
                              "it would lose rows as it improves", arg.span)
            values.add(arg.name)
    for literal in rule.body:
        if isinstance(literal, s.Negation) and _names(literal) & values:
            return _error(f"a recursive `{function}` value cannot be negated over",
                          literal.span)
        if isinstance(literal, s.Assign) and _names(literal.expr) & values:
            if not _grows(literal.expr, values):
                return _shrinks(literal.expr, function)
            values.add(literal.var.name)
        if (isinstance(literal, s.Comparison) and _names(literal) & values
                and not _bounded(literal, function, values)):
            good = " or ".join(f"`C {op} K`" for op in _BOUNDS[function])
            return _error(f"`{format_literal(literal)}` can stop holding as a recursive "
                          f"`{function}` value improves: bound it as {good}", literal.span)
    read = set(values)
    found = aggregate_of(rule)
    flowing = {arg.arg.name for arg in rule.head.args if isinstance(arg, s.Agg) and arg.arg}
    flowing |= set().union(*(_names(arg) for arg in rule.head.args
                             if not isinstance(arg, s.Agg) and _names(arg) & values))
    for literal in reversed(rule.body):
        if isinstance(literal, s.Assign) and literal.var.name in flowing:
            flowing |= _names(literal.expr)
    capped = any(isinstance(node, s.Call) and _names(node) & values
                 for node in s.walk(rule))
    if read - flowing or capped:
        loose.append(True)
    for column, arg in enumerate(rule.head.args):
        if isinstance(arg, s.Agg) or not (_names(arg) & values):
            continue
        if found is not None:
            return _error(f"a recursive `{function}` value cannot be a group column of "
                          f"`{rule.head.name}`", arg.span)
        if not _grows(arg, values):
            return _shrinks(arg, function)
        tainted.add((rule.head.name, column))
    return None


def _grows(term: s.Term, values: set[str]) -> bool:
    """Whether ``term`` grows (or stays) whenever a recursive value in it grows."""
    if not (_names(term) & values):
        return True
    if isinstance(term, s.Var):
        return True
    if isinstance(term, s.BinOp):
        if term.op == "+":
            return _grows(term.left, values) and _grows(term.right, values)
        if term.op == "-":
            return _grows(term.left, values) and not (_names(term.right) & values)
    if isinstance(term, s.Call) and term.name in ("f_min", "f_max"):
        return all(_grows(arg, values) for arg in term.args)
    return False


def _shrinks(term: s.Term, function: str) -> Diagnostic:
    return _error(f"`{format_term(term)}` does not grow with the recursive `{function}` "
                  "value in it: only `+`, `-` with the value on the left, `f_min` and "
                  "`f_max` keep a better value better", term.span)


def _bounded(comparison: s.Comparison, function: str, values: set[str]) -> bool:
    left, right, op = comparison.left, comparison.right, comparison.op
    if _names(left) & values and _names(right) & values:
        return False
    if _names(right) & values:
        left, right, op = right, left, _FLIPPED.get(op, op)
    return op in _BOUNDS[function] and _grows(left, values)
