"""Golden programs for the front end.

``tests/golden/{syntax,semantic}/*.olg`` run ``overlog check``; ``tests/golden/explain/*.olg``
run ``overlog explain``. Beside each: ``.err`` (exact stderr) and ``.expected`` (exact stdout);
an absent file means empty. The exit code is 1 exactly when an error is reported.
Rewrite them with ``pytest --update-goldens``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.goldens import compare, discover, golden_id, run_cli


@pytest.mark.parametrize("path", discover("syntax", "semantic", "explain"), ids=golden_id)
def test_golden(path: Path, update_goldens: bool) -> None:
    command = "explain" if path.parent.name == "explain" else "check"
    # the default threshold of --backend auto depends on the machine's memory
    pinned = ["--spark-threshold", "10000000"] if command == "explain" else []
    code, out, err = run_cli([command, path.name, *pinned], cwd=path.parent)
    compare(path, ".err", err, update_goldens)
    compare(path, ".expected", out, update_goldens)
    assert code == (1 if "error[" in err else 0)
    if path.parent.name == "syntax":
        assert "error[E1" in err, "a syntax golden must fail with a syntax error"
    if path.parent.name == "semantic":
        assert "error[E2" in err or "warning[W2" in err
    if path.parent.name == "explain":
        assert code == 0
