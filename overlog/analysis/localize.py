"""Localization (docs/distribution.md, "Localization"): NDlog's rewrite of a rule whose body
reads relations at several locations (Loo et al., SIGMOD 2006) into rules whose bodies each
sit at one location.

The body's atoms are grouped by their location, in order of appearance (the group of an
event atom first: an event lives at its node for one step). Left to right, each group's
join must bind the next group's location: the bindings the rest of the rule needs travel
there in a generated relation, are joined with the next group, and so on; the last group
derives the head, which goes to its own location as any remote head does.

    path(@X, Z, C) :- link(@X, Y, C1), path(@Y, Z, C2), C := C1 + C2.
becomes
    path_1_at_Y(@Y, X, C1) :- link(@X, Y, C1).
    path(@X, Z, C) :- path_1_at_Y(@Y, X, C1), path(@Y, Z, C2), C := C1 + C2.

A generated relation is a table (kept as a remote view, retracted when its support goes)
when the body reads only tables, and an event otherwise. A rule with a head aggregate
carries every body variable along (an aggregate counts bindings); a view rule with a head
aggregate whose head is elsewhere ships them to the head's location and aggregates there,
so that a group gathers the bindings of every node. A body that cannot be localized is an
error (E213): a location that no earlier atom reaches, events at two locations, a `notin`
at a location no positive atom has, an event-triggered aggregate over several locations.
"""

from __future__ import annotations

from dataclasses import replace

from overlog import syntax as s
from overlog.diagnostics import Diagnostic, Note


def localize(program: s.Program, taken: set[str]) -> tuple[s.Program, list[Diagnostic]]:
    """The program with every multi-location rule rewritten (the same object when none is);
    ``taken`` holds the names in use (the generated ones are added)."""
    statements: list[s.Statement] = []
    errors: list[Diagnostic] = []
    number = 0
    for statement in program.statements:
        if not isinstance(statement, s.Rule):
            statements.append(statement)
            continue
        number += 1
        try:
            statements += _Localizer(statement, number, taken).rules()
        except _Unroutable as error:
            errors.append(error.diagnostic)
    if len(statements) == len(program.statements) and all(
            new is old for new, old in zip(statements, program.statements, strict=True)):
        return program, errors
    return replace(program, statements=tuple(statements)), errors


class _Unroutable(Exception):
    def __init__(self, diagnostic: Diagnostic) -> None:
        self.diagnostic = diagnostic


def _label(term: s.Term) -> str:
    if isinstance(term, s.Var):
        return term.name
    assert isinstance(term, s.Const)
    return '"' + str(term.value) + '"'


def _names(*nodes: object) -> list[str]:
    return list(dict.fromkeys(v.name for node in nodes for v in s.variables(node)))


class _Localizer:
    def __init__(self, rule: s.Rule, number: int, taken: set[str]) -> None:
        self.rule = rule
        self.base = rule.name or f"{rule.head.name}_{number}"
        self.taken = taken
        self.wild = 0
        self.used = {v.name for v in s.variables(rule)}

    def _fresh(self, label: str) -> str:
        clean = "".join(c if c.isalnum() or c == "_" else "" for c in label) or "node"
        name = f"{self.base}_at_{clean}"
        suffix = 1
        while name in self.taken:
            suffix += 1
            name = f"{self.base}_at_{clean}_{suffix}"
        self.taken.add(name)
        return name

    def _named_wildcards(self, literal: s.Literal) -> s.Literal:
        """Wildcards of a positive atom as variables of their own: a binding that travels
        keeps every matched row apart, as the body's evaluation in one place does."""
        if not isinstance(literal, s.Atom) or not any(
                isinstance(a, s.Wildcard) for a in literal.args):
            return literal
        args = []
        for arg in literal.args:
            if isinstance(arg, s.Wildcard):
                self.wild += 1
                while f"_{self.wild}" in self.used:  # a name the rule does not use
                    self.wild += 1
                arg = s.Var(name=f"_{self.wild}", span=arg.span)
            args.append(arg)
        return replace(literal, args=tuple(args))

    def rules(self) -> list[s.Rule]:
        rule = self.rule
        head = rule.head
        atoms = [lit for lit in rule.body if isinstance(lit, s.Atom)]
        groups: dict[str, s.Term] = {}
        for atom in atoms:
            if atom.locs:
                groups.setdefault(_label(atom.loc), atom.loc)
        for literal in rule.body:
            if (isinstance(literal, s.Negation) and literal.atom.locs
                    and _label(literal.atom.loc) not in groups):
                raise self._error(
                    f"`notin {literal.atom.name}` is at `{_label(literal.atom.loc)}`, where "
                    "no positive atom of the body is: a negation is checked where the "
                    "bindings are", literal.span)
        events = {_label(a.loc) for a in atoms if a.event and a.locs}
        aggregate = any(isinstance(a, s.Agg) for a in head.args)
        # (a head located at its aggregate's value is sent there from where the body is)
        head_label = _label(head.loc) if head.locs and not isinstance(head.loc, s.Agg) \
            else None
        tables = not any(a.event for a in atoms)  # the generated relations are tables
        view = tables and not head.event and not rule.delete
        gather = (aggregate and view and head_label is not None
                  and (len(groups) > 1 or (groups and head_label not in groups)))
        if len(groups) <= 1 and not gather:
            return [rule]
        if len(events) > 1:
            raise self._error("event atoms at different locations never meet: an event "
                              "lives at its node for one step")
        if aggregate and not tables:
            raise self._error("an aggregate triggered by an event cannot gather bindings "
                              "from several locations within the event's step")
        order = list(groups)
        if events:
            (first,) = events
            order.remove(first)
            order.insert(0, first)
        body = [self._named_wildcards(lit) for lit in rule.body]
        stage_of: dict[int, int] = {}  # body position -> stage
        current = 0
        for i, literal in enumerate(body):
            atom = literal.atom if isinstance(literal, s.Negation) else literal
            if isinstance(atom, s.Atom):
                if atom.locs:
                    current = order.index(_label(atom.loc))
                stage_of[i] = current  # an atom without a location goes with the last one
        # conditions go to the first stage where what they read is bound
        stages: list[list[s.Literal]] = [[] for _ in order]
        bound: set[str] = set()
        conditions = [i for i, lit in enumerate(body) if i not in stage_of]
        placed: set[int] = set()
        for k in range(len(order)):
            for i, literal in enumerate(body):
                if stage_of.get(i) == k and isinstance(literal, s.Atom):
                    stages[k].append(literal)
                    bound.update(_names(literal))
            self._place(body, conditions, placed, bound, stages[k])
            for i, literal in enumerate(body):
                if stage_of.get(i) == k and isinstance(literal, s.Negation):
                    missing = [n for n in _names(literal) if n not in bound]
                    if missing:
                        raise self._error(
                            f"`notin {literal.atom.name}` at `{order[k]}` reads "
                            f"`{missing[0]}`, which is bound only at a later location",
                            literal.span)
                    stages[k].append(literal)
            if k + 1 < len(order):
                target = groups[order[k + 1]]
                if isinstance(target, s.Var) and target.name not in bound:
                    raise self._unreachable(order, k, body)
        return self._chain(order, groups, stages, gather, tables, aggregate)

    def _place(self, body: list[s.Literal], conditions: list[int], placed: set[int],
               bound: set[str], stage: list[s.Literal]) -> None:
        changed = True
        while changed:
            changed = False
            for i in conditions:
                if i in placed:
                    continue
                literal = body[i]
                reads = _names(literal.expr if isinstance(literal, s.Assign) else literal)
                if all(name in bound for name in reads):
                    stage.append(literal)
                    placed.add(i)
                    if isinstance(literal, s.Assign):
                        bound.add(literal.var.name)
                    changed = True

    def _chain(self, order: list[str], groups: dict[str, s.Term],
               stages: list[list[s.Literal]], gather: bool, tables: bool,
               aggregate: bool) -> list[s.Rule]:
        """The rules of the chain: each stage ships what the rest needs (every variable,
        for an aggregate, which counts bindings) to the next stage's location."""
        rule = self.rule
        head = rule.head
        out: list[s.Rule] = []
        incoming: s.Atom | None = None
        carried: list[str] = []
        for k in range(len(order)):
            literals = ([incoming] if incoming is not None else []) + stages[k]
            last = k + 1 == len(order)
            if last and not gather:
                out.append(replace(rule, body=tuple(literals)))
                break
            later = [lit for stage in stages[k + 1:] for lit in stage]
            needed = set(_names(*later, head))
            if aggregate:
                needed |= set(_names(*(lit for stage in stages for lit in stage)))
            have = list(dict.fromkeys([*carried, *(n for lit in literals
                                                   for n in _names(lit))]))
            if last:  # gather: the whole binding goes to the head's location
                target = head.loc
                keep = [n for n in have if not (isinstance(target, s.Var)
                                                and n == target.name)]
            else:
                target = groups[order[k + 1]]
                keep = [n for n in have if n in needed
                        and not (isinstance(target, s.Var) and n == target.name)]
            name = self._fresh(_label(target))
            ship = s.Atom(name=name, args=(target, *(s.Var(name=n) for n in keep)),
                          event=not tables, locs=(0,), span=rule.span)
            out.append(s.Rule(head=ship, body=tuple(literals), name=None, span=rule.span))
            incoming = ship
            carried = keep
            if last:
                out.append(replace(rule, body=(ship,)))
        return out

    def _error(self, message: str, span: object = None) -> _Unroutable:
        return _Unroutable(Diagnostic("E213", f"cannot localize this rule: {message}",
                                      span or self.rule.span))

    def _unreachable(self, order: list[str], k: int, body: list[s.Literal]) -> _Unroutable:
        here = ", ".join(f"`{label}`" for label in order[:k + 1])
        target = order[k + 1]
        first = next(lit for lit in body if isinstance(lit, s.Atom) and lit.locs
                     and _label(lit.loc) == target)
        notes = (Note(f"`{first.name}` is located at `{target}` here", first.span),
                 Note(f"rules are localized left to right: an atom at {here} must hold "
                      f"`{target}` in a field, as `link(@{order[k]}, {target})` does, to "
                      f"send the bindings on to `{target}`"))
        return _Unroutable(Diagnostic(
            "E213", f"cannot route this rule's body: location `{target}` is not reachable "
                    f"from {here}", self.rule.span, notes=notes))
