"""``overlog explain`` prints the plans the runtime runs: every plan the fixpoint evaluates
while running the golden programs is one of the ProgramPlan's, and appears in the explain
output exactly as printed there."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from overlog import plan as p
from overlog.runtime import local
from tests.goldens import GOLDEN, discover, golden_id, run_cli

ROOT = Path(__file__).parents[1]
PROGRAMS = [*discover("eval"), *sorted((ROOT / "programs").glob("*.olg"))]
# what each golden run evaluated: (program, purpose, plan)
EVALUATED: list[tuple[str, str, p.Plan]] = []


@contextmanager
def recording(ran: list[p.Plan]) -> Iterator[None]:
    """Record each plan the local backend evaluates."""
    prepare = local.LocalBackend.prepare

    def recording_prepare(self: local.LocalBackend, plan: p.Plan):
        run = prepare(self, plan)

        def recorded(*args):
            ran.append(plan)
            return run(*args)
        return recorded

    local.LocalBackend.prepare = recording_prepare  # type: ignore[method-assign]
    try:
        yield
    finally:
        local.LocalBackend.prepare = prepare  # type: ignore[method-assign]


def _name(path: Path) -> str:
    return golden_id(path) if GOLDEN in path.parents else f"programs/{path.name}"


@pytest.mark.parametrize("path", PROGRAMS, ids=_name)
def test_every_plan_run_is_explained(path: Path) -> None:
    code, explained, err = run_cli(["explain", path.name], cwd=path.parent)
    assert code == 0, err
    ran: list[p.Plan] = []
    with recording(ran):
        run_cli(["run", path.name, "--steps", "50"], cwd=path.parent)
    assert ran, "the program evaluated no plan"
    import overlog

    program = overlog.compile_program(path.read_text(encoding="utf-8"), path.name)
    purposes = {plan: purpose for _, purpose, plan in program.plans()}
    for plan in dict.fromkeys(ran):
        assert plan in purposes, p.format_plan(plan)
        printed = f"{purposes[plan]}:\n" + "\n".join(
            f"        {line}" for line in p.format_plan(plan).split("\n"))
        assert printed in explained, printed
        EVALUATED.append((_name(path), purposes[plan], plan))


def test_the_goldens_run_every_kind_of_plan() -> None:
    """Over all golden programs (run above), every kind of variant was evaluated."""
    if len({name for name, _, _ in EVALUATED}) < len(PROGRAMS):
        pytest.skip("needs the whole parametrized test above in this session")
    purposes = {purpose for _, purpose, _ in EVALUATED}
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
