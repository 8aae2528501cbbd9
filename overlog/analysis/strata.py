"""Rule kinds, the in-step dependency graph and its stratification.

Only edges inside a timestep count: view rules and rules with event heads. The buffered writes
of event rules, delete rules and remote heads land in a later step, so they cannot close a
cycle; they run once the step's fixpoint is complete ("deferred").
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import pairwise

from overlog import syntax as s
from overlog.analysis import monotone
from overlog.analysis.catalog import Relation
from overlog.analysis.graph import Digraph, topological
from overlog.diagnostics import Diagnostic, Note
from overlog.source import Span

VIEW = "view"  # persistent head, persistent body: maintained at once, inside the fixpoint
STATE = "state"  # persistent head, an event in the body: a buffered state change
EVENT = "event"  # event head: tuples live in this timestep only
DELETE = "delete"  # delete rule: applied at commit


@dataclass(frozen=True, slots=True)
class RuleInfo:
    index: int  # position among the program's rules
    rule: s.Rule
    kind: str
    remote: bool  # the head is sent to another address
    stratum: int | None  # None for deferred rules

    @property
    def deferred(self) -> bool:
        return self.stratum is None

    @property
    def label(self) -> str:
        return self.rule.name or f"rule {self.index + 1}"

    @property
    def fires_at_start(self) -> bool:
        """No positive atom: nothing new can fire it, so it fires at the first step."""
        return not any(isinstance(lit, s.Atom) for lit in self.rule.body)


@dataclass(frozen=True, slots=True)
class Stratum:
    index: int
    relations: tuple[str, ...]
    rules: tuple[int, ...]  # rule indexes
    monotone: bool = False  # a recursive min/max (overlog/analysis/monotone.py)
    strict: bool = False  # ... whose best rows never rest on themselves alone


def body_location(rule: s.Rule) -> s.Term | None:
    """The location term the body's atoms share (analysis has checked there is at most one)."""
    for literal in rule.body:
        atom = literal.atom if isinstance(literal, s.Negation) else literal
        if isinstance(atom, s.Atom) and len(atom.locs) == 1:
            return atom.loc
    return None


def is_remote(rule: s.Rule) -> bool:
    """A head located somewhere other than the body's location is sent over the network."""
    head_loc = rule.head.loc if len(rule.head.locs) == 1 else None
    return head_loc is not None and head_loc != body_location(rule)


def classify(rule: s.Rule, relations: dict[str, Relation]) -> str:
    if rule.delete:
        return DELETE
    if rule.head.event:
        return EVENT
    for literal in rule.body:
        if isinstance(literal, s.Atom) and literal.event:
            return STATE
    return VIEW


@dataclass(frozen=True, slots=True)
class _Reason:
    rule: int
    span: Span | None
    negative: bool
    how: str  # "positive" | "negation" | "aggregation"


def _dependency_graph(rules: list[tuple[int, s.Rule]],
                      relations: dict[str, Relation]) -> Digraph:
    graph = Digraph(relations)
    for index, rule in rules:
        aggregate = next((a for a in rule.head.args if isinstance(a, s.Agg)), None)
        for literal in rule.body:
            if isinstance(literal, s.Atom):
                negative = aggregate is not None
                reason = _Reason(index, aggregate.span if negative else literal.span, negative,
                                 "aggregation" if negative else "positive")
                source = literal.name
            elif isinstance(literal, s.Negation):
                reason = _Reason(index, literal.span, True, "negation")
                source = literal.atom.name
            else:
                continue
            graph.add_edge(source, rule.head.name).append(reason)
    return graph


def _negative_reason(graph: Digraph, u: str, v: str) -> _Reason | None:
    return next((r for r in graph.edges[u][v] if r.negative), None)


def _cycle_error(graph: Digraph, component: set[str], rules: dict[int, s.Rule],
                 keyed: set[str]) -> Diagnostic | str | None:
    """E214 (or E228) for a component with a negative edge inside it, unless its only
    negative edges are `min`/`max` aggregates that can be evaluated as a recursive min/max
    (overlog/analysis/monotone.py): then its kind (monotone.STRICT or LOOSE); None for a
    component without negative edges."""
    candidates = []
    for u in component:
        for v in graph.edges[u]:
            reason = _negative_reason(graph, u, v) if v in component else None
            if reason is not None:
                candidates.append((reason.span.line if reason.span else 0, u, v, reason))
    if not candidates:
        return None
    negations = [c for c in candidates if c[3].how == "negation"]
    refused = None
    if not negations:
        cycle = [rule for rule in rules.values() if rule.head.name in component]
        refused = monotone.refusal(cycle)
        if refused is None:
            return monotone.check(cycle, keyed)
    _, u, v, reason = min(negations or candidates, key=lambda c: (c[0], c[1], c[2]))
    path = graph.shortest_path(v, u, component)  # v ... u, closing u -> v
    notes = [Note(f"`{v}` depends on `{u}` through {reason.how} here", reason.span)]
    for a, b in pairwise(path):
        step = graph.edges[a][b][0]
        notes.append(Note(f"`{b}` depends on `{a}` here", step.span))
    if refused is not None:
        notes.append(refused)
    shown = " -> ".join(f"`{name}`" for name in [u, *path])
    return Diagnostic(
        "E214", f"cannot stratify: `{v}` depends on itself through {reason.how} "
        f"(cycle {shown})", rules[reason.rule].span, notes=tuple(notes))


def _negated_event(rule: s.Rule) -> Diagnostic | None:
    """A view is maintained across steps; an event lives one step: `notin` of an event in a
    view would make the view change with no change of its tables, so it is refused."""
    for literal in rule.body:
        if isinstance(literal, s.Negation) and literal.atom.event:
            return Diagnostic(
                "E227", f"a view rule cannot negate the event relation `{literal.atom.name}`",
                literal.span, notes=(Note(
                    "a view is maintained from its tables across steps, and an event lives "
                    f"one step; negate a persistent relation, or fire the rule with an event "
                    f"in its body (it then writes `{rule.head.name}` at the step's end)"),))
    return None


def stratify(program: s.Program, relations: dict[str, Relation],
             ) -> tuple[tuple[RuleInfo, ...], tuple[Stratum, ...], list[Diagnostic]]:
    rules = list(enumerate(program.rules))
    kinds = {i: classify(r, relations) for i, r in rules}
    remote = {i: is_remote(r) for i, r in rules}
    in_step = [(i, r) for i, r in rules if kinds[i] in (VIEW, EVENT) and not remote[i]]
    graph = _dependency_graph(in_step, relations)

    diagnostics = [_negated_event(r) for i, r in in_step if kinds[i] == VIEW]
    diagnostics = [d for d in diagnostics if d is not None]
    by_index = dict(in_step)
    components = graph.components()
    monotone_parts: dict[int, str] = {}  # components that are a recursive min/max
    for part in sorted(range(len(components)), key=lambda i: sorted(components[i])):
        found = _cycle_error(graph, components[part], by_index,
                             {name for name, rel in relations.items() if rel.keyed})
        if isinstance(found, Diagnostic):
            diagnostics.append(found)
        elif found is not None:
            monotone_parts[part] = found
    if diagnostics:
        return (), (), diagnostics

    # a component's level: past each one it reads, one more past one it reads negatively;
    # a recursive min/max is a stratum of its own, one past what it reads and before what
    # reads it (it runs alone, from complete inputs, to a final result)
    mapping = {name: i for i, component in enumerate(components) for name in component}
    level = [0] * len(components)
    for node in topological(components, graph):
        for a in components[node]:
            for b in graph.edges[a]:
                later = mapping[b]
                if later != node:
                    step = 1 if (_negative_reason(graph, a, b) is not None
                                 or node in monotone_parts or later in monotone_parts) else 0
                    level[later] = max(level[later], level[node] + step)
    # strata in order of level; at one level, the other components, then each recursive
    # min/max alone
    slot = [(level[part], 1 + part if part in monotone_parts else 0)
            for part in range(len(components))]
    order = {key: n for n, key in enumerate(sorted(set(slot)))}
    part_stratum = [order[key] for key in slot]
    relation_stratum = {name: part_stratum[mapping[name]] for name in relations}
    monotone_strata = {part_stratum[part]: kind for part, kind in monotone_parts.items()}

    infos = tuple(
        RuleInfo(index=i, rule=r, kind=kinds[i], remote=remote[i],
                 stratum=relation_stratum[r.head.name] if (i, r) in in_step else None)
        for i, r in rules)
    strata = tuple(
        Stratum(index=n,
                relations=tuple(name for name in relations if relation_stratum[name] == n),
                rules=tuple(info.index for info in infos if info.stratum == n),
                monotone=n in monotone_strata,
                strict=monotone_strata.get(n) == monotone.STRICT)
        for n in range(len(order)))
    return infos, strata, []


def unbounded_recursion(infos: tuple[RuleInfo, ...]) -> list[Diagnostic]:
    """W204 for each view rule that feeds on its own relation only (every body atom is in its
    head's recursive component), computes a new value for its head (an expression in the
    head, or an assigned variable), and has no comparison: such a relation obviously grows
    without end (`n(Y) :- n(X), Y := X + 1.`)."""
    views = [info for info in infos if info.kind == VIEW and not info.deferred]
    graph = Digraph()
    for info in views:
        for literal in info.rule.body:
            if isinstance(literal, s.Atom):
                graph.add_edge(literal.name, info.rule.head.name)
    component = {name: i for i, names in enumerate(graph.components()) for name in names}
    warnings = []
    for info in views:
        rule = info.rule
        head = rule.head.name
        # every atom it reads is fed by itself (no other relation limits it), and no
        # comparison holds it back
        atoms = [lit for lit in rule.body if isinstance(lit, s.Atom)]
        feeds_itself = bool(atoms) and all(
            atom.name == head or component.get(atom.name) == component.get(head)
            for atom in atoms)
        if not feeds_itself or any(isinstance(lit, s.Comparison) for lit in rule.body):
            continue
        assigned = {lit.var.name: lit for lit in rule.body if isinstance(lit, s.Assign)}
        computed = next((arg for arg in rule.head.args
                         if isinstance(arg, (s.BinOp, s.Neg, s.Call, s.ListExpr))
                         or (isinstance(arg, s.Var) and arg.name in assigned)), None)
        if computed is None:
            continue
        where = assigned[computed.name] if isinstance(computed, s.Var) else computed
        warnings.append(Diagnostic(
            "W204", f"`{head}` may grow without end: this recursive rule computes new "
            "values and no comparison bounds them", where.span, severity="warning",
            notes=(Note("add a condition (such as `X < 100`), or rely on the step limits "
                        "(--max-tuples, --max-rounds, --step-timeout)"),)))
    return warnings
