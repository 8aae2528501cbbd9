"""Every example in programs/ runs as its header comment says, with exactly the output in
``tests/golden/programs/<name>.expected`` (rewrite with ``pytest --update-goldens``)."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from tests.goldens import GOLDEN, compare, run_cli

ROOT = Path(__file__).parents[1]
PROGRAMS = sorted((ROOT / "programs").glob("*.olg"))


def _run_line(path: Path) -> list[str]:
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("// Run: "):
            return shlex.split(line.removeprefix("// Run: "))
    raise AssertionError(f"{path.name} has no `// Run: overlog ...` header line")


def test_there_are_examples() -> None:
    assert {p.name for p in PROGRAMS} >= {
        "tc.olg", "shortest_paths.olg", "pingpong.olg", "path_vector.olg", "heartbeat.olg",
        "ring.olg", "two_phase_commit.olg"}


@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: p.name)
def test_example_runs_as_its_header_says(path: Path, update_goldens: bool) -> None:
    command = _run_line(path)
    assert command[:2] == ["overlog", "run"]
    assert f"programs/{path.name}" in command
    code, out, err = run_cli(command[1:], cwd=ROOT)
    assert (code, err) == (0, "")
    compare(GOLDEN / "programs" / path.name, ".expected", out, update_goldens)


@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: p.name)
def test_example_checks_clean(path: Path) -> None:
    code, out, err = run_cli(["check", f"programs/{path.name}"], cwd=ROOT)
    assert (code, err) == (0, "")
    assert out.startswith(f"programs/{path.name}: ok (")
