"""Golden-file helpers: run a command on a program and compare with the files beside it."""

from __future__ import annotations

import io
import os
from collections.abc import Iterator
from contextlib import contextmanager, redirect_stdout
from pathlib import Path

from overlog.cli import main

GOLDEN = Path(__file__).parent / "golden"


def discover(*areas: str) -> list[Path]:
    return sorted(p for area in areas for p in (GOLDEN / area).glob("*.olg"))


def golden_id(path: Path) -> str:
    return str(path.relative_to(GOLDEN))


@contextmanager
def chdir(path: Path) -> Iterator[None]:
    previous = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(previous)


def run_cli(args: list[str], cwd: Path) -> tuple[int, str, str]:
    """Run the CLI in-process; what native handlers print to ``sys.stdout`` lands in the
    same stdout, in order, as it would on a terminal."""
    out, err = io.StringIO(), io.StringIO()
    with chdir(cwd), redirect_stdout(out):
        code = main(args, out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def compare(path: Path, suffix: str, actual: str, update: bool) -> None:
    """Assert ``actual`` equals the file ``path`` with ``suffix`` (absent means empty)."""
    expected_path = path.with_suffix(suffix)
    if update:
        if actual:
            expected_path.write_text(actual, encoding="utf-8")
        elif expected_path.exists():
            os.remove(expected_path)
        return
    expected = expected_path.read_text(encoding="utf-8") if expected_path.exists() else ""
    assert actual == expected, f"{expected_path.name} differs"
