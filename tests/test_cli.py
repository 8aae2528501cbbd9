"""The overlog command: subprocess runs of the real entry point, exit codes, output."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[1]


def overlog(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "overlog", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=60)


def test_check_ok_several_files() -> None:
    result = overlog("check", "programs/tc.olg", "programs/shortest_paths.olg")
    assert result.returncode == 0
    assert result.stdout == ("programs/tc.olg: ok (2 relations, 2 rules, 1 stratum)\n"
                             "programs/shortest_paths.olg: ok (4 relations, 4 rules, 2 strata)\n")
    assert result.stderr == ""


def test_check_reports_errors_of_every_file(tmp_path: Path) -> None:
    (tmp_path / "good.olg").write_text('p(1).\n')
    (tmp_path / "bad.olg").write_text('p(X) :- q(X), X > Y.\n')
    result = overlog("check", "bad.olg", "good.olg", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stdout == "good.olg: ok (1 relation, 0 rules, 1 stratum)\n"
    assert result.stderr == (
        "bad.olg:1:19: error[E207]: unsafe rule: variable `Y` in a comparison is not bound by "
        "the body\n"
        "  1 | p(X) :- q(X), X > Y.\n"
        "    |                   ^\n"
        "  note: bind it in a positive body atom or with `Var := expression`\n")


def test_check_missing_file_is_a_usage_error() -> None:
    result = overlog("check", "no/such/file.olg")
    assert result.returncode == 2
    assert result.stderr == ("overlog: error: cannot read no/such/file.olg: "
                             "No such file or directory\n")


def test_usage_errors_exit_2() -> None:
    assert overlog().returncode == 2
    assert overlog("frobnicate").returncode == 2
    assert overlog("check").returncode == 2


def test_explain_prints_strata() -> None:
    result = overlog("explain", "programs/shortest_paths.olg")
    assert result.returncode == 0
    assert "stratum 1: shortest, distance\n" in result.stdout
    assert "  rule 3 [view]  shortest(X, Y, min<C>) :- path(X, Y, C).\n" in result.stdout


def test_help_exits_0() -> None:
    result = overlog("--help")
    assert result.returncode == 0
    assert "check" in result.stdout
