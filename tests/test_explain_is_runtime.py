"""``overlog explain`` prints the plans the runtime runs: every plan the fixpoint evaluates
while running the golden programs is one of the ProgramPlan's, and appears in the explain
output exactly as printed there, under what it is for."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

import overlog
from overlog import plan as p
from overlog.runtime import local
from tests.goldens import GOLDEN, discover, golden_id, run_cli

ROOT = Path(__file__).parents[1]
PROGRAMS = [*discover("eval"), *sorted((ROOT / "programs").glob("*.olg"))]


def _name(path: Path) -> str:
    return golden_id(path) if GOLDEN in path.parents else f"programs/{path.name}"


@contextmanager
def recording(ran: list[p.Plan]) -> Iterator[None]:
    """Record each plan the local backend evaluates."""
    prepare = local.LocalBackend.prepare

    def recording_prepare(self: local.LocalBackend, plan: p.Plan):
        run = prepare(self, plan)

        def recorded(*args):
            ran.append(plan)
            return run(*args)

        def improve(*args):  # (a recursive min/max's candidates, compared as derived)
            ran.append(plan)
            return run.improve(*args)

        if hasattr(run, "improve"):
            recorded.improve = improve  # type: ignore[attr-defined]
        return recorded

    local.LocalBackend.prepare = recording_prepare  # type: ignore[method-assign]
    try:
        yield
    finally:
        local.LocalBackend.prepare = prepare  # type: ignore[method-assign]


@dataclass
class Run:
    explained: str  # overlog explain's output
    purposes: dict[p.Plan, set[str]]  # every plan of the ProgramPlan -> what it is for
    ran: list[p.Plan]  # what the fixpoint evaluated while overlog run ran the program


@pytest.fixture(scope="module")
def runs() -> dict[str, Run]:
    found = {}
    for path in PROGRAMS:
        code, explained, err = run_cli(["explain", path.name], cwd=path.parent)
        assert code == 0, err
        ran: list[p.Plan] = []
        with recording(ran):
            code, _, err = run_cli(["run", path.name, "--steps", "50"], cwd=path.parent)
        assert code == (3 if "error[E3" in err else 0), err
        program = overlog.compile_program(path.read_text(encoding="utf-8"), str(path))
        purposes: dict[p.Plan, set[str]] = defaultdict(set)
        for _, purpose, plan in program.plans():
            purposes[plan].add(purpose)
        found[_name(path)] = Run(explained, purposes, ran)
    return found


@pytest.mark.parametrize("name", [_name(path) for path in PROGRAMS])
def test_every_plan_run_is_explained(runs: dict[str, Run], name: str) -> None:
    run = runs[name]
    assert run.ran, "the program evaluated no plan"
    for plan in dict.fromkeys(run.ran):
        assert plan in run.purposes, p.format_plan(plan)
        body = "\n".join(f"        {line}" for line in p.format_plan(plan).split("\n"))
        assert all(f"      {purpose}:\n{body}" in run.explained
                   for purpose in run.purposes[plan]), body


def test_the_goldens_run_every_kind_of_plan(runs: dict[str, Run]) -> None:
    """Over all golden programs, every kind of variant was evaluated (so the test above
    covers them all)."""
    purposes = {purpose for run in runs.values() for plan in run.ran
                for purpose in run.purposes[plan]}
    kinds = {
        "insertion": any(x.startswith("when") and "over-deletion" not in x for x in purposes),
        "over-deletion": any("over-deletion" in x for x in purposes),
        "notin": any("notin" in x for x in purposes),
        "rederive": "rederive" in purposes,
        "groups": "recompute groups" in purposes,
        "count 0": any(x.startswith("count 0") for x in purposes),
        "first step": "at the first step (no positive atom)" in purposes,
    }
    assert [kind for kind, seen in kinds.items() if not seen] == []


def test_the_engine_runs_the_plan_compile_program_returns() -> None:
    source = (ROOT / "programs" / "shortest_paths.olg").read_text(encoding="utf-8")
    plan = overlog.compile_program(source, "shortest_paths.olg")
    assert overlog.Engine(source, "shortest_paths.olg").plan == plan
    assert overlog.Engine(plan).plan is plan
