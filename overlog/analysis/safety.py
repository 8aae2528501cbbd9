"""Rule pass: safety of variables, functions and aggregates, location specifiers, facts.

Also warns about variables used only once.
"""

from __future__ import annotations

from collections import ChainMap
from collections.abc import Iterable, Mapping

from overlog import syntax as s
from overlog.diagnostics import Diagnostic, Note
from overlog.functions import AGGREGATES, BUILTIN_FUNCTIONS, RANKED, describe_arity


def check_statements(program: s.Program,
                     functions: Mapping[str, tuple[int, float]]) -> list[Diagnostic]:
    diagnostics: list[Diagnostic] = []
    for statement in program.statements:
        if isinstance(statement, s.Rule):
            diagnostics += check_rule(statement, functions)
        elif isinstance(statement, s.Fact):
            diagnostics += check_fact(statement, functions)
    return diagnostics


def _atoms(rule: s.Rule) -> Iterable[s.Atom]:
    yield rule.head
    for literal in rule.body:
        if isinstance(literal, s.Atom):
            yield literal
        elif isinstance(literal, s.Negation):
            yield literal.atom


def check_fact(fact: s.Fact, functions: Mapping[str, tuple[int, float]]) -> list[Diagnostic]:
    atom = fact.atom
    if fact.values_only:  # most facts: quick
        return _check_locations(atom, in_fact=True) if atom.locs else []
    problems = _check_calls(atom, functions) + _check_locations(atom, in_fact=True)
    for node in s.walk(atom):
        if isinstance(node, s.Agg):
            problems.append(Diagnostic(
                "E210", "aggregates belong in rule heads, not in facts", node.span))
        elif isinstance(node, (s.Var, s.Wildcard)):
            what = "`_`" if isinstance(node, s.Wildcard) else f"variable `{node.name}`"
            problems.append(Diagnostic(
                "E216", f"a fact must be ground, but it has {what}", node.span,
                notes=(Note("facts hold values only; derive tuples with a rule "
                            "`head :- body.`"),)))
    return problems


def check_rule(rule: s.Rule, functions: Mapping[str, tuple[int, float]]) -> list[Diagnostic]:
    problems: list[Diagnostic] = []
    for atom in _atoms(rule):
        problems += _check_locations(atom, in_fact=False)
    problems += _check_calls(rule, functions)
    problems += _check_head(rule)
    for literal in rule.body:
        nodes = s.walk(literal)
        for node in nodes:
            if isinstance(node, s.Agg):
                problems.append(Diagnostic(
                    "E210", "aggregates belong in rule heads, not in rule bodies", node.span))
    problems += _check_periodic_constants(rule)
    problems += _check_wildcards(rule)
    unsafe, bound = _check_safety(rule)
    problems += unsafe
    problems += _warn_single_use(rule, bound)
    return problems


def _check_calls(node: object, functions: Mapping[str, tuple[int, float]]) -> list[Diagnostic]:
    problems = []
    for call in s.walk(node):
        if not isinstance(call, s.Call):
            continue
        arity = functions.get(call.name)
        if arity is None:
            builtins = functions.maps[1] if isinstance(functions, ChainMap) \
                else BUILTIN_FUNCTIONS
            known = ", ".join(sorted(builtins))
            problems.append(Diagnostic(
                "E208", f"unknown function `{call.name}`", call.span,
                notes=(Note(f"built-in functions: {known}; register others from Python"),)))
        elif not arity[0] <= len(call.args) <= arity[1]:
            problems.append(Diagnostic(
                "E208", f"function `{call.name}` takes {describe_arity(*arity)}, "
                f"but is given {len(call.args)}", call.span))
    return problems


def _check_head(rule: s.Rule) -> list[Diagnostic]:
    head = rule.head
    problems = []
    aggregates = [a for a in head.args if isinstance(a, s.Agg)]
    for agg in aggregates:
        if agg.func not in AGGREGATES:
            problems.append(Diagnostic(
                "E209", f"unknown aggregate `{agg.spelling}`", agg.span,
                notes=(Note("aggregates: count, sum, min, max, avg, countdistinct, set, list, "
                            "topk<X, K>, bottomk<X, K> (or a_count, a_sum, ...)"),)))
        elif agg.arg is None and agg.func != "count":
            problems.append(Diagnostic(
                "E209", f"`{agg.spelling}<*>` is not an aggregate: only `count` takes `*`",
                agg.span))
        elif agg.func in RANKED and agg.k is None:
            problems.append(Diagnostic(
                "E209", f"`{agg.spelling}` takes a count: `{agg.spelling}<X, 3>`", agg.span))
        elif agg.func not in RANKED and agg.k is not None:
            problems.append(Diagnostic(
                "E209", f"only `topk` and `bottomk` take a count, not `{agg.spelling}`",
                agg.span))
        elif agg.k is not None and agg.k < 1:
            problems.append(Diagnostic(
                "E209", f"the count of `{agg.spelling}` must be at least 1", agg.span))
    if len(aggregates) > 1:
        problems.append(Diagnostic(
            "E222", "a rule head may hold at most one aggregate", aggregates[1].span,
            notes=(Note("first aggregate here", aggregates[0].span),)))
    if rule.delete:
        if head.event:
            problems.append(Diagnostic(
                "E221", f"`delete` removes stored tuples, but `{head.name}` is an event",
                head.span))
        if aggregates:
            problems.append(Diagnostic(
                "E221", "a `delete` rule cannot aggregate", aggregates[0].span))
    return problems


def _check_periodic_constants(rule: s.Rule) -> list[Diagnostic]:
    """The runtime schedules timers from the rule text: Period and Count must be numbers."""
    problems = []
    for literal in rule.body:
        if not (isinstance(literal, s.Atom) and literal.name == "periodic"
                and literal.arity in (3, 4)):
            continue
        period = literal.args[2]
        if not (isinstance(period, s.Const) and type(period.value) in (int, float)
                and 0 <= period.value < float("inf")):
            problems.append(Diagnostic(
                "E215", "the period of `periodic` must be a number of seconds (0: one firing "
                "a step, as soon as possible)", period.span))
        elif period.value == 0 and (literal.arity == 3 or (
                isinstance(literal.args[3], s.Const) and literal.args[3].value == float("inf"))):
            problems.append(Diagnostic(
                "E215", "a `periodic` of period 0 needs a count: it fires once a step, and "
                "for ever would never let the engine rest", period.span))
        if literal.arity == 4:
            count = literal.args[3]
            if not (isinstance(count, s.Const) and (
                    count.value == float("inf")
                    or (type(count.value) is int and count.value >= 1))):
                problems.append(Diagnostic(
                    "E215", "the count of `periodic` must be a positive whole number or "
                    "`infinity`", count.span))
    return problems


def _check_wildcards(rule: s.Rule) -> list[Diagnostic]:
    """`_` may stand only for a whole argument of a body atom."""
    allowed = {id(a) for lit in rule.body for a in _literal_atom_args(lit)}
    problems = []
    for node in s.walk(rule):
        if isinstance(node, s.Wildcard) and id(node) not in allowed:
            problems.append(Diagnostic(
                "E223", "`_` can only stand for an argument of a body atom", node.span))
    return problems


def _literal_atom_args(literal: s.Literal) -> tuple[s.Term, ...]:
    if isinstance(literal, s.Atom):
        return literal.args
    if isinstance(literal, s.Negation):
        return literal.atom.args
    return ()


def _unbound(node: object, bound: set[str]) -> list[s.Var]:
    return [v for v in s.variables(node) if v.name not in bound]


def _check_safety(rule: s.Rule) -> tuple[list[Diagnostic], set[str]]:
    """Every variable must be bound by a positive body atom (as a whole argument) or an
    assignment whose right side is bound. Returns the errors and the bound variables."""
    bound: set[str] = set()
    binder: dict[str, object] = {}
    for literal in rule.body:
        if isinstance(literal, s.Atom):
            for arg in literal.args:
                if isinstance(arg, s.Var) and arg.name not in bound:
                    bound.add(arg.name)
                    binder[arg.name] = literal
    problems: list[Diagnostic] = []
    pending = [lit for lit in rule.body if isinstance(lit, s.Assign)]
    for assign in pending:
        if assign.var.name in bound:
            problems.append(Diagnostic(
                "E219", f"`{assign.var.name}` is already bound; write `{assign.var.name} == ...` "
                "to compare", assign.var.span,
                notes=(Note(f"`{assign.var.name}` bound here",
                            _span_of(binder[assign.var.name])),)))
    pending = [a for a in pending if a.var.name not in bound]
    progress = True
    while pending and progress:
        progress = False
        for assign in list(pending):
            if not _unbound(assign.expr, bound):
                if assign.var.name in bound:
                    problems.append(Diagnostic(
                        "E219", f"`{assign.var.name}` is assigned twice", assign.var.span,
                        notes=(Note("first assigned here", _span_of(binder[assign.var.name])),)))
                bound.add(assign.var.name)
                binder[assign.var.name] = assign
                pending.remove(assign)
                progress = True

    hint = Note("bind it in a positive body atom or with `Var := expression`")
    reported: set[tuple[str, str]] = set()

    def report(code: str, var: s.Var, where: str) -> None:
        if (code, var.name) in reported:
            return
        reported.add((code, var.name))
        problems.append(Diagnostic(code, f"unsafe rule: variable `{var.name}` {where} is not "
                                   "bound by the body", var.span, notes=(hint,)))

    # An unsafe assignment is reported where it reads an unbound variable (its own one
    # included, as in `X := X + 1`), and the variable it fails to bind nowhere else.
    for assign in pending:
        for var in _unbound(assign.expr, bound):
            report("E207", var, "in an assignment")
    reported |= {(code, a.var.name) for a in pending for code in ("E205", "E206", "E207")}

    for var in _unbound(rule.head, bound):
        report("E205", var, "in the head")
    for literal in rule.body:
        if isinstance(literal, s.Negation):
            for var in _unbound(literal.atom, bound):
                report("E206", var, "in `notin`")
        elif isinstance(literal, s.Comparison):
            for var in _unbound(literal, bound):
                report("E207", var, "in a comparison")
        elif isinstance(literal, s.Atom):
            for arg in literal.args:
                if not isinstance(arg, (s.Var, s.Wildcard)):
                    for var in _unbound(arg, bound):
                        report("E207", var, "in an expression argument")
    return problems, bound


def _span_of(node: object):
    return getattr(node, "span", None)


def _location_label(term: s.Term) -> str:
    if isinstance(term, s.Var):
        return term.name
    if isinstance(term, s.Const):
        return repr(term.value).replace("'", '"')
    return "?"


def _check_locations(atom: s.Atom, in_fact: bool) -> list[Diagnostic]:
    problems = []
    if len(atom.locs) > 1:
        notes = tuple(Note("location specifier here", atom.args[i].span) for i in atom.locs[1:])
        problems.append(Diagnostic(
            "E211", f"`{atom.name}` has {len(atom.locs)} location specifiers; an atom has at "
            "most one", atom.args[atom.locs[0]].span, notes=notes))
    for i in atom.locs:
        term = atom.args[i]
        ok = isinstance(term, s.Const) and isinstance(term.value, str)
        if not in_fact:  # (a head's aggregate of a variable: the tuple goes to its value)
            ok = ok or isinstance(term, s.Var) or (isinstance(term, s.Agg)
                                                   and term.arg is not None)
        if not ok:
            what = "an address string" if in_fact else "a variable or an address string"
            problems.append(Diagnostic(
                "E212", f"a location specifier `@` must mark {what}", term.span))
    return problems


def _warn_single_use(rule: s.Rule, bound: set[str]) -> list[Diagnostic]:
    """A bound variable used once in the body is a likely typo (unbound ones are errors).
    A location specifier is exempt: `@_` is not allowed, so `@N` is how to write "here"."""
    exempt = {id(v) for v in s.variables(rule.head)}
    atoms = [lit.atom if isinstance(lit, s.Negation) else lit for lit in rule.body]
    exempt |= {id(a.loc) for a in atoms if isinstance(a, s.Atom) and a.locs}
    occurrences: dict[str, list[s.Var]] = {}
    for var in s.variables(rule):
        occurrences.setdefault(var.name, []).append(var)
    return [
        Diagnostic("W202", f"variable `{name}` is used only once; write `_` if that is "
                   "intended", uses[0].span, severity="warning")
        for name, uses in occurrences.items()
        if len(uses) == 1 and name in bound and not name.startswith("_")
        and id(uses[0]) not in exempt
    ]
