"""Rules -> plans: join order, index keys and the semi-naive driver variants.

Join order is greedy: after the driver, the atom with the most bound columns next (index
lookups over scans), ties in source order; filters, assignments and anti-joins are placed as
soon as their variables are bound.
"""

from __future__ import annotations

from overlog import syntax as s
from overlog.plan import AntiJoin, Filter, Join, Let, Operator, Plan, RulePlans, Scan


def _vars(term: object) -> set[str]:
    return {v.name for v in s.variables(term)}


def _head_terms(rule: s.Rule) -> tuple[s.Term, ...]:
    terms = []
    for arg in rule.head.args:
        if isinstance(arg, s.Agg):
            terms.append(arg.arg if arg.arg is not None else s.Const(value=None))
        else:
            terms.append(arg)
    return tuple(terms)


class _Builder:
    """Accumulates operators for one plan, tracking bound variables."""

    def __init__(self, rule: s.Rule, bound: set[str]) -> None:
        self.rule = rule
        self.bound = set(bound)
        self.ops: list[Operator] = []
        self.pending_filters: list[tuple[str, s.Term, s.Term]] = []
        self.fresh = 0

    def _columns(self, atom: s.Atom) -> tuple[list, list, list]:
        """Split an atom's columns into (keys, binds, checks) given what is bound."""
        keys: list[tuple[int, s.Term]] = []
        binds: list[tuple[int, str]] = []
        checks: list[tuple[int, s.Term]] = []
        local = set(self.bound)
        for c, term in enumerate(atom.args):
            if isinstance(term, s.Var) and term.name not in local:
                binds.append((c, term.name))
                local.add(term.name)
        bound_here = {v for _, v in binds}
        for c, term in enumerate(atom.args):
            if isinstance(term, s.Wildcard) or (c, getattr(term, "name", None)) in binds:
                continue
            if _vars(term) <= self.bound:
                keys.append((c, term))
            elif _vars(term) <= self.bound | bound_here:
                checks.append((c, term))
            else:  # needs a variable bound later: bind a fresh one, compare when ready
                self.fresh += 1
                name = f"_col{self.fresh}"
                binds.append((c, name))
                self.pending_filters.append(("==", s.Var(name=name), term))
        return keys, binds, checks

    def scan(self, atom: s.Atom) -> None:
        keys, binds, checks = self._columns(atom)
        self.ops.append(Scan(atom.name, "delta", tuple(binds), tuple(keys + checks)))
        self.bound |= {v for _, v in binds}

    def join(self, atom: s.Atom, old: bool = False) -> None:
        keys, binds, checks = self._columns(atom)
        self.ops.append(Join(atom.name, tuple(c for c, _ in keys), tuple(t for _, t in keys),
                             tuple(binds), tuple(checks), old))
        self.bound |= {v for _, v in binds}

    def place_ready(self, lets: list[s.Assign], filters: list[s.Comparison],
                    negations: list[s.Negation]) -> None:
        progress = True
        while progress:
            progress = False
            for f in list(self.pending_filters):
                if _vars(f[1]) | _vars(f[2]) <= self.bound:
                    self.ops.append(Filter(*f))
                    self.pending_filters.remove(f)
            for c in list(filters):
                if _vars(c) <= self.bound:
                    self.ops.append(Filter(c.op, c.left, c.right))
                    filters.remove(c)
            for n in list(negations):
                if _vars(n) <= self.bound:
                    key = tuple((i, t) for i, t in enumerate(n.atom.args)
                                if not isinstance(t, s.Wildcard))
                    self.ops.append(AntiJoin(n.atom.name, tuple(i for i, _ in key),
                                             tuple(t for _, t in key)))
                    negations.remove(n)
            for a in list(lets):
                if _vars(a.expr) <= self.bound:
                    if a.var.name in self.bound:  # pre-bound (rederivation): a test
                        self.ops.append(Filter("==", a.var, a.expr))
                    else:
                        self.ops.append(Let(a.var.name, a.expr))
                        self.bound.add(a.var.name)
                        progress = True
                    lets.remove(a)


def _score(atom: s.Atom, bound: set[str]) -> int:
    return sum(1 for t in atom.args
               if not isinstance(t, s.Wildcard) and _vars(t) <= bound)


def plan_variant(index: int, rule: s.Rule, driver: str, prebound: tuple[str, ...] = (),
                 ) -> Plan:
    """The plan of ``rule`` triggered by ``driver`` ("pos:i", "neg:i" or "bound")."""
    builder = _Builder(rule, set())
    atoms = [(i, lit) for i, lit in enumerate(rule.body) if isinstance(lit, s.Atom)]
    lets = [lit for lit in rule.body if isinstance(lit, s.Assign)]
    filters = [lit for lit in rule.body if isinstance(lit, s.Comparison)]
    negations = [lit for lit in rule.body if isinstance(lit, s.Negation)]

    before = -1  # positive atoms before a positive driver read their old version
    if driver == "bound":
        builder.ops.append(Scan("", "bound", tuple(enumerate(prebound)), ()))
        builder.bound |= set(prebound)
    else:
        kind, _, position = driver.partition(":")
        literal = rule.body[int(position)]
        if kind == "pos":
            before = int(position)
            atoms = [(i, a) for i, a in atoms if i != before]
            builder.scan(literal)  # type: ignore[arg-type]
        else:
            builder.scan(literal.atom)  # type: ignore[union-attr]
    builder.place_ready(lets, filters, negations)
    while atoms:
        best = max(atoms, key=lambda ia: (_score(ia[1], builder.bound), -ia[0]))
        atoms.remove(best)
        builder.join(best[1], old=best[0] < before)
        builder.place_ready(lets, filters, negations)
    assert not (lets or filters or negations or builder.pending_filters), "unsafe rule planned"
    return Plan(rule=index, driver=driver, operators=tuple(builder.ops),
                head=_head_terms(rule))


def plan_rule(index: int, rule: s.Rule, with_negation_drivers: bool) -> RulePlans:
    """All plans of a rule: a trigger per positive atom (and per negated atom if asked: views
    must react to tuples leaving a negated relation), and the pre-bound "full" plan."""
    triggers = [plan_variant(index, rule, f"pos:{i}")
                for i, lit in enumerate(rule.body) if isinstance(lit, s.Atom)]
    if with_negation_drivers:
        triggers += [plan_variant(index, rule, f"neg:{i}")
                     for i, lit in enumerate(rule.body) if isinstance(lit, s.Negation)]
    head = rule.head.args
    aggregate = next(((i, a.func, a.arg.name if a.arg else None)
                      for i, a in enumerate(head) if isinstance(a, s.Agg)), None)
    group = tuple(i for i, a in enumerate(head) if not isinstance(a, s.Agg))
    prebound = tuple(dict.fromkeys(a.name for a in head if isinstance(a, s.Var)))
    full = plan_variant(index, rule, "bound", prebound)
    return RulePlans(rule=index, relation=rule.head.name, aggregate=aggregate, group=group,
                     triggers=tuple(triggers), full=full)
