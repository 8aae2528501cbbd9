"""``--backend auto``'s offload: each stratum runs where its size says (docs/vector.md,
"Placement"). Below the vector threshold it runs locally; from it, in DuckDB (when DuckDB
can run it and is installed); from the Spark threshold, on Spark (when Spark can run it and
starts). Each offload decides for itself from the stratum's tables (Spark's threshold is the
higher one), Spark first; whichever ran says its ``name``. Also what both offloads share:
which view rules of a stratum either may take (``stratum_views``), and which relations may
live only there (``holdable``)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from overlog import plan as p

if TYPE_CHECKING:
    from overlog.runtime.spark import SparkStrata
    from overlog.runtime.vector import VectorStrata

Row = tuple
RECURSIVE = "a recursive min/max (DuckDB runs none)"


def stratum_views(plan: p.ProgramPlan, index: int) -> tuple[list[p.RulePlan], str | None]:
    """A stratum's view rules (those Spark or DuckDB may take), and why none of them may go
    whatever the backend (None: they may): a recursive min/max, or a head an aggregate also
    writes."""
    rules = [plan.rules[i] for i in plan.strata[index].rules]
    views = [r for r in rules if not r.head_event and r.aggregation is None]
    if views and plan.strata[index].monotone:
        return views, RECURSIVE
    if {r.head for r in views} & {r.head for r in rules if r.aggregation is not None}:
        return views, "a head that an aggregate also writes"
    return views, None


def holdable(plan: p.ProgramPlan, never: Mapping[int, str],
             ) -> tuple[dict[str, int | None], dict[str, set[int | None]]]:
    """The relations that may live only in an offload (Spark, DuckDB), each with the stratum
    deriving it (None: an input relation, derived by no rule): persistent, without keys or
    soft state, derived only by view rules of a stratum that may run there (not in
    ``never``, nor a recursive min/max) and reads no events, and read only by such rules;
    and, for every relation, the strata reading it."""
    relations = plan.relations
    events = {name for name, rel in relations.items() if rel.event}
    heads = {rule.head for rule in plan.rules}
    found: dict[str, int | None] = {name: None for name in relations if name not in heads}
    found.update((rule.head, rule.stratum) for rule in plan.rules
                 if not rule.head_event and rule.stratum is not None)
    readers: dict[str, set[int | None]] = {}
    for rule in plan.rules:
        reads = set().union(*(p.plan_relations(plan) for _, plan in rule.plans()))
        for name in reads:
            readers.setdefault(name, set()).add(rule.stratum)
        if (rule.kind != "view" or rule.deferred or rule.head_event
                or rule.aggregation is not None or rule.stratum in never or reads & events):
            for name in {rule.head, *reads}:
                found.pop(name, None)
        elif plan.strata[rule.stratum].monotone:  # type: ignore[index]
            found.pop(rule.head, None)  # (a recursive min/max gives back its rows)
    return {name: stratum for name, stratum in found.items()
            if (rel := relations.get(name)) and not rel.event and not rel.keyed
            and not rel.builtin and rel.lifetime == math.inf and rel.size == math.inf
            and (stratum is not None or readers.get(name))}, readers


class Placement:
    """An ``Offload`` (runtime/seminaive.py) over Spark's and DuckDB's (either may be None)."""

    def __init__(self, spark: SparkStrata | None, vector: VectorStrata | None) -> None:
        self.spark = spark
        self.vector = vector
        self.name = ""  # the offload that ran last (read after it ran)

    @property
    def held(self) -> Mapping[str, int]:
        spark = self.spark.held if self.spark is not None else {}
        vector = self.vector.held if self.vector is not None else {}
        return {**spark, **vector} if spark and vector else spark or vector

    def begin_step(self) -> None:
        for offload in (self.spark, self.vector):
            if offload is not None:
                offload.begin_step()

    def watches(self, rules: list[p.RulePlan]) -> bool:
        return any(offload is not None and offload.watches(rules)
                   for offload in (self.spark, self.vector))

    def moves(self, rules: list[p.RulePlan], store: Any, grown: int) -> bool:
        return any(offload is not None and offload.watches(rules)
                   and offload.moves(rules, store, grown)
                   for offload in (self.spark, self.vector))

    def changed(self, relations: Iterable[str]) -> bool:
        return self.spark is not None and self.spark.changed(relations)

    def evaluate(self, rules: list[p.RulePlan], store: Any, max_rounds: int,
                 plus: Mapping[str, set[Row]], minus: Mapping[str, set[Row]],
                 cap: int) -> Any:
        stratum = rules[0].stratum
        spark, vector = self.spark, self.vector
        # a stratum whose head DuckDB holds stays there (its rows are not in the store), but
        # for one reading a relation Spark holds: the head comes back, and Spark decides
        there = vector is not None and any(rule.head in vector.held for rule in rules)
        if there and spark is not None and spark.held and not spark.held.keys().isdisjoint(
                set().union(*(p.plan_relations(each) for rule in rules
                              for _, each in rule.plans()))):
            vector.forget(stratum, store)  # type: ignore[union-attr, arg-type]
            there = False
        if spark is not None and not there:
            found = self._on_spark(rules, store, max_rounds, plus, minus, cap)
            if found is not None:
                return found
        if vector is None:
            return None
        self.name = vector.name
        found = vector.evaluate(rules, store, max_rounds, plus, minus, cap)
        if found is None and there and spark is not None:  # (DuckDB failed: back in the
            return self._on_spark(rules, store, max_rounds, plus, minus, cap)  # store)
        return found

    def _on_spark(self, rules: list[p.RulePlan], store: Any, max_rounds: int,
                  plus: Mapping[str, set[Row]], minus: Mapping[str, set[Row]],
                  cap: int) -> Any:
        """Spark's evaluation of the stratum, or None: what DuckDB kept for it is stale."""
        assert self.spark is not None
        found = self.spark.evaluate(rules, store, max_rounds, plus, minus, cap)
        if found is not None:
            self.name = self.spark.name
            if self.vector is not None:  # what DuckDB held for it is stale now
                self.vector.forget(rules[0].stratum, store)  # type: ignore[arg-type]
        return found

    def monotone(self, rules: list[p.RulePlan], store: Any, max_rounds: int,
                 plus: Mapping[str, set[Row]], minus: Mapping[str, set[Row]],
                 cap: int) -> Any:
        if self.spark is None:  # (DuckDB runs no recursive min/max)
            return None
        self.name = self.spark.name
        return self.spark.monotone(rules, store, max_rounds, plus, minus, cap)

    def continues(self, rules: list[p.RulePlan], store: Any, max_rounds: int,
                  delta: Mapping[str, set[Row]], cap: int) -> Any:
        if self.vector is None:
            return None
        self.name = self.vector.name
        return self.vector.continues(rules, store, max_rounds, delta, cap)

    def forget(self, stratum: int, store: Any) -> None:
        for offload in (self.spark, self.vector):
            if offload is not None:
                offload.forget(stratum, store)

    def groups(self, rule: p.RulePlan, store: Any) -> dict[tuple, Row] | None:
        if self.spark is None:
            return None
        self.name = self.spark.name
        return self.spark.groups(rule, store)
