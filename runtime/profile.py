"""Where a run's time goes (``Engine(profile=True)``, ``overlog run --profile``): per rule
and per stratum, the time spent, the evaluations and rounds, and the tuples derived, over
every committed step, as Soufflé's profiler reports them (docs/profile.md).

Rules are timed around each evaluation of their plans (insertion, over-deletion,
rederivation, regrouping), strata around their whole evaluation, in the Python process:
a stratum that Spark or DuckDB evaluated has its time, rounds and tuples, and no time per
rule. A step that fails is rolled back: its time is counted (it was spent), its tuples
not. Disabled (the default), nothing is timed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from time import perf_counter
from typing import Any

from overlog import plan as p

_OFFLOADED = re.compile(r"stratum (\d+) on ")  # the firings of a stratum Spark or DuckDB ran


@dataclass(slots=True)
class RuleStats:
    """One rule's totals."""

    label: str  # as explain names it: its name, or "rule N"
    text: str  # the rule as written
    where: str  # path:line
    stratum: int | None  # None: deferred (after the fixpoint)
    seconds: float = 0.0
    evaluations: int = 0  # plan evaluations (each a batch of seeds)
    derived: int = 0  # new tuples (firings) in committed steps


@dataclass(slots=True)
class StratumStats:
    """One stratum's totals (the deferred rules are stratum None)."""

    index: int | None
    relations: tuple[str, ...]
    seconds: float = 0.0
    rounds: int = 0  # rounds of semi-naive insertion
    derived: int = 0


@dataclass
class Profile:
    """A run's profile: filled by the engine as steps run (``Engine.profile``)."""

    path: str
    rules: list[RuleStats]
    strata: dict[int | None, StratumStats]
    steps: int = 0  # committed steps
    failed: int = 0  # failed (rolled back) steps
    seconds: float = 0.0  # in steps, all told (inputs, fixpoint, deferred rules, commit)
    _started: float = field(default=0.0, repr=False)

    @classmethod
    def of(cls, plan: p.ProgramPlan) -> Profile:
        rules = [RuleStats(r.label, r.text, p.where(plan, r.span), r.stratum)
                 for r in plan.rules]
        strata: dict[int | None, StratumStats] = {
            s.index: StratumStats(s.index, tuple(s.relations)) for s in plan.strata}
        strata[None] = StratumStats(None, ())
        return cls(plan.path, rules, strata)

    # -- filled by the engine ----------------------------------------------------------

    def step_started(self) -> None:
        self._started = perf_counter()

    def step_ended(self, firings: Mapping[int | str, int] | None) -> None:
        """A step ended: committed with its firings (rule index, or "stratum N on ..." for
        a stratum Spark or DuckDB ran -> new tuples), or rolled back (None)."""
        self.seconds += perf_counter() - self._started
        if firings is None:
            self.failed += 1
            return
        self.steps += 1
        for key, count in firings.items():
            if key.__class__ is int:
                rule = self.rules[key]  # type: ignore[index]
                rule.derived += count
                self.strata[rule.stratum].derived += count
            else:
                found = _OFFLOADED.match(key)  # type: ignore[arg-type]
                if found:
                    self.strata[int(found.group(1))].derived += count

    # -- reading -------------------------------------------------------------------------

    def as_json(self) -> dict[str, Any]:
        """The profile as JSON-ready data (``--profile-json``)."""
        return {
            "program": self.path, "steps": self.steps, "failed_steps": self.failed,
            "seconds": self.seconds,
            "rules": [{"rule": r.label, "text": r.text, "where": r.where,
                       "stratum": r.stratum, "seconds": r.seconds,
                       "evaluations": r.evaluations, "derived": r.derived}
                      for r in self._by_time(self.rules)],
            "strata": [{"stratum": s.index, "relations": list(s.relations),
                        "seconds": s.seconds, "rounds": s.rounds, "derived": s.derived}
                       for s in self._by_time(self.strata.values())],
        }

    def dumps(self) -> str:
        return json.dumps(self.as_json(), indent=2, ensure_ascii=False) + "\n"

    def format(self) -> str:
        """The profile as a table, rules and then strata sorted by time (most first)."""
        total = self.seconds or 1.0
        failed = f", {self.failed} failed" if self.failed else ""
        lines = [f"profile of {self.path}: {self.steps} step{'s' if self.steps != 1 else ''}"
                 f"{failed}, {self.seconds:.3f} s in steps",
                 "", "time (s)   share  evals  derived  rule"]
        for r in self._by_time(self.rules):
            stratum = "deferred" if r.stratum is None else f"stratum {r.stratum}"
            lines.append(f"{r.seconds:8.3f}  {r.seconds / total:6.1%}  {r.evaluations:5,}  "
                         f"{r.derived:7,}  {r.label}: {' '.join(r.text.split())}  "
                         f"[{stratum}, {r.where}]")
        lines += ["", "time (s)   share  rounds  derived  stratum"]
        deferred = any(rule.stratum is None for rule in self.rules)
        for s in self._by_time(self.strata.values()):
            if s.index is None and not deferred:
                continue
            name = "deferred rules" if s.index is None else \
                f"stratum {s.index}: {', '.join(s.relations)}"
            lines.append(f"{s.seconds:8.3f}  {s.seconds / total:6.1%}  {s.rounds:6,}  "
                         f"{s.derived:7,}  {name}")
        return "\n".join(lines) + "\n"

    @staticmethod
    def _by_time(items: Any) -> list:
        return sorted(items, key=lambda item: -item.seconds)
