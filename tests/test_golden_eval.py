"""Golden programs for the engine: ``tests/golden/eval/*.olg`` run with
``overlog run --format jsonl`` (plus any options on a ``// args:`` line); beside each,
``.expected`` (exact stdout) and ``.err`` (exact stderr, absent means empty). Exit code: 3
when a step failed, else 0. Rewrite with ``pytest --update-goldens``."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from tests.goldens import compare, discover, golden_id, run_cli


def _args(path: Path) -> list[str]:
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("// args:"):
            return shlex.split(line.removeprefix("// args:"))
    return []


@pytest.mark.parametrize("path", discover("eval"), ids=golden_id)
def test_golden_run(path: Path, update_goldens: bool) -> None:
    code, out, err = run_cli(["run", path.name, "--format", "jsonl", *_args(path)],
                             cwd=path.parent)
    compare(path, ".expected", out, update_goldens)
    compare(path, ".err", err, update_goldens)
    assert code == (3 if "error[E3" in err else 0)
