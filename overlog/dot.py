"""A program's rule/relation dependency graph as Graphviz DOT (``overlog explain --dot``).

One node per relation, in a cluster per stratum: persistent tables are boxes, event
relations dashed ellipses, built-in relations (``periodic``, ``error``) grey, watched ones
doubly outlined. One edge per rule, body relation and sign, from the body relation to the
rule's head, labelled with the rule's label (``r1``, ``rule 3``, as ``overlog explain``
names it): a ``notin`` edge is red and dashed, an edge into a head aggregate blue and bold
(labelled with the aggregate, ``min<C>``), an edge of a deferred rule dotted (labelled
``next step``, ``delete`` or ``@remote``; a delete rule's arrow ends in a bar).
docs/pictures.md describes the picture.

Everything comes from the plan IR: a rule's body relations are read off its plans (the
relations its triggers, scans and joins read, and those its anti-joins and negated
triggers test), so the graph shows what the engine runs.
"""

from __future__ import annotations

import math

from overlog.plan import (
    AntiJoin,
    Const,
    Join,
    Plan,
    ProgramPlan,
    RulePlan,
    Scan,
    Var,
)
from overlog.printer import format_bound

__all__ = ["body_relations", "program_graph"]


def program_graph(plan: ProgramPlan) -> str:
    """The DOT text of ``plan``'s dependency graph, deterministic (relations sorted within
    their stratum, edges in rule order), ending with a newline."""
    watched = set(plan.watched)
    lines = [f"// overlog explain --dot: {_comment(plan.path)}",
             "digraph overlog {",
             f"  graph [rankdir=LR, labelloc=t, label={_quote('program ' + plan.path)}];"]
    for stratum in plan.strata:
        title = f"stratum {stratum.index}" + (" (recursive min/max)" if stratum.monotone
                                              else "")
        lines += ["", f"  subgraph cluster_{stratum.index} {{",
                  f"    label={_quote(title)};"]
        for name in sorted(stratum.relations):
            lines.append(f"    {_node(plan, name, name in watched)}")
        lines.append("  }")
    edges = [_edge(rule, relation, negated)
             for rule in plan.rules
             for relation, negated in _sources(rule)]
    if edges:
        lines += ["", *edges]
    lines.append("}")
    return "\n".join(lines) + "\n"


def body_relations(rule: RulePlan) -> tuple[frozenset[str], frozenset[str]]:
    """The relations ``rule`` reads in positive body atoms, and those it tests with
    ``notin``, from its plans: a trigger's relation (negated or not), the relation every
    other plan scans, and every join's (positive) and anti-join's (negated)."""
    positive: set[str] = set()
    negated: set[str] = set()
    for trigger in rule.triggers:
        # a negated trigger's plans scan the negated relation: only their joins count
        (negated if trigger.negated else positive).add(trigger.relation)
        for plan in (trigger.insert, trigger.delete):
            if plan is not None:
                _operands(plan, positive, negated, scan=not trigger.negated)
    others = [rule.start, rule.rederive]
    if rule.aggregation is not None:
        others += [rule.aggregation.groups, rule.aggregation.every, *rule.aggregation.zero]
    for plan in others:
        if plan is not None:
            _operands(plan, positive, negated, scan=True)
    return frozenset(positive), frozenset(negated)


def _operands(plan: Plan, positive: set[str], negated: set[str], scan: bool) -> None:
    if scan and isinstance(plan.driver, Scan):
        positive.add(plan.driver.relation)
    for op in plan.operators:
        if isinstance(op, Join):
            positive.add(op.relation)
        elif isinstance(op, AntiJoin):
            negated.add(op.relation)


def _sources(rule: RulePlan) -> list[tuple[str, bool]]:
    """(body relation, negated) of each edge into the rule's head: one per relation and sign,
    however often the body reads it."""
    positive, negated = body_relations(rule)
    return sorted([(name, False) for name in positive] + [(name, True) for name in negated])


def _node(plan: ProgramPlan, name: str, watched: bool) -> str:
    relation = plan.relations[name]
    label = [f"{name}/{relation.arity}"]
    if relation.keyed:
        label.append(f"keys({', '.join(str(k + 1) for k in relation.keys)})")
    if not relation.event and (relation.lifetime != math.inf or relation.size != math.inf):
        label.append(f"lifetime {format_bound(relation.lifetime)}, "
                     f"size {format_bound(relation.size)}")
    if relation.builtin:
        label.append("(built-in)")
    attributes = ["shape=box"] if not relation.event else ["shape=ellipse"]
    style = ["dashed"] if relation.event else []
    if relation.builtin:
        style.append("filled")
    if style:
        attributes.append(f"style={_quote(','.join(style))}")
    if relation.builtin:
        attributes.append("fillcolor=lightgrey")
    if watched:
        attributes.append("peripheries=2")
    attributes.append(f"label={_label(label)}")
    return f"{_quote(name)} [{', '.join(attributes)}];"


def _edge(rule: RulePlan, relation: str, negated: bool) -> str:
    later = ["delete"] if rule.kind == "delete" else []
    if rule.remote:
        later.append("@remote")
    if rule.deferred and not later:
        later.append("next step")  # a state rule: written at commit, seen next step
    tags = ([_aggregate(rule)] if rule.aggregation is not None else []) + later
    label = ("notin " if negated else "") + rule.label + (f": {', '.join(tags)}" if tags
                                                          else "")
    style = []
    if rule.deferred:
        style.append("dotted")
    elif negated:
        style.append("dashed")
    if rule.aggregation is not None:
        style.append("bold")
    attributes = [f"label={_quote(label)}"]
    if style:
        attributes.append(f"style={_quote(','.join(style))}")
    color = "red" if negated else "blue" if rule.aggregation is not None else None
    if color is not None:
        attributes.append(f"color={color}, fontcolor={color}")
    if rule.kind == "delete":
        attributes.append("arrowhead=tee")
    return f"  {_quote(relation)} -> {_quote(rule.head)} [{', '.join(attributes)}];"


def _aggregate(rule: RulePlan) -> str:
    """The head aggregate as written: ``min<C>``, ``count<*>``, ``topk<X, 3>``."""
    aggregation = rule.aggregation
    assert aggregation is not None
    term = aggregation.groups.project.terms[aggregation.position]
    argument = (term.name if isinstance(term, Var)
                else "*" if isinstance(term, Const) and term.value is None else "?")
    function, _, k = aggregation.function.partition(":")
    return f"{function}<{argument}{', ' + k if k else ''}>"


def _escape(text: str) -> str:
    """Text inside a DOT quoted string: backslashes and quotes escaped, line breaks as
    ``\\n`` (labels read them as line breaks; names hold none)."""
    return (text.replace("\\", "\\\\").replace('"', '\\"')
            .replace("\r", "").replace("\n", "\\n"))


def _quote(text: str) -> str:
    return f'"{_escape(text)}"'


def _label(lines: list[str]) -> str:
    return '"' + "\\n".join(_escape(line) for line in lines) + '"'


def _comment(text: str) -> str:
    return "".join(c if c.isprintable() else "?" for c in text)
