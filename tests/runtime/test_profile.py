"""The profile (Engine(profile=True), overlog run --profile): per rule and stratum, the
evaluations, rounds and tuples derived are exact; times are only checked to add up."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

import overlog

_PROGRAM = ('link(1, 2). link(2, 3). link(3, 1). link(3, 4).\n'
            "reach(X, Y) :- link(X, Y).\n"
            "hop reach(X, Z) :- link(X, Y), reach(Y, Z).\n"
            "n(count<*>) :- reach(_, _).\n"
            "seen(X) :- n(X), notin gone(X).\n"
            "gone(X) :- ping[X].\n")


def test_the_profile_counts_what_each_rule_and_stratum_did() -> None:
    engine = overlog.Engine(_PROGRAM, "p.olg", profile=True)
    engine.run()
    engine.delete("link", (3, 4))
    engine.step()
    engine.generate_event("ping", (12,))
    engine.step()
    profile = engine.profile
    assert (profile.steps, profile.failed) == (3, 0)
    # reach: 4 links, then 8 more; a deletion removes 3 (rederived rows are not new)
    assert [(r.label, r.stratum, r.where, r.evaluations, r.derived) for r in profile.rules] == [
        ("rule 1", 0, "p.olg:2", 6, 4), ("hop", 0, "p.olg:3", 12, 8),
        ("rule 3", 1, "p.olg:4", 3, 2), ("rule 4", 1, "p.olg:5", 4, 2),
        ("rule 5", None, "p.olg:6", 1, 1)]
    assert [(s.index, s.relations, s.rounds, s.derived) for s in profile.strata.values()] == [
        (0, ("link", "reach", "gone", "ping"), 6, 12), (1, ("n", "seen"), 3, 4),
        (None, (), 0, 1)]
    assert all(r.seconds > 0 for r in profile.rules)
    assert sum(s.seconds for s in profile.strata.values()) <= profile.seconds
    data = profile.as_json()
    assert (data["program"], data["steps"], data["failed_steps"]) == ("p.olg", 3, 0)
    assert sorted(data["rules"][0]) == ["derived", "evaluations", "rule", "seconds", "stratum",
                                        "text", "where"]
    assert {r["rule"]: r["derived"] for r in data["rules"]} == {
        "rule 1": 4, "hop": 8, "rule 3": 2, "rule 4": 2, "rule 5": 1}


def test_a_failed_step_counts_its_time_not_its_tuples() -> None:
    engine = overlog.Engine("q(X, Y) :- p[X], Y := 1 / X.\n", "f.olg", profile=True)
    engine.generate_event("p", (0,))
    assert [e.code for e in engine.step().errors] == ["E302"]
    engine.generate_event("p", (2,))
    engine.step()
    assert (engine.profile.steps, engine.profile.failed) == (2, 0)  # (the input was blamed)
    assert [(r.evaluations, r.derived) for r in engine.profile.rules] == [(2, 1)]


def test_without_profile_nothing_is_kept() -> None:
    engine = overlog.Engine(_PROGRAM)
    engine.run()
    assert engine.profile is None


def test_the_cli_prints_the_profile_and_writes_it_as_json(tmp_path: Path) -> None:
    (tmp_path / "p.olg").write_text(_PROGRAM)
    done = subprocess.run([sys.executable, "-m", "overlog", "run", "p.olg", "--profile",
                           "--profile-json", "out.json", "--print", "n"], cwd=tmp_path,
                          capture_output=True, text=True, check=False)
    assert (done.returncode, done.stdout) == (0, "n (1 row)\n  12\n")
    lines = done.stderr.splitlines()
    lines = lines[next(i for i, line in enumerate(lines) if line.startswith("profile")):]
    assert lines[:3] == [lines[0], "", "time (s)   share  evals  derived  rule"]
    assert re.fullmatch(r"profile of p\.olg: 1 step, \d+\.\d{3} s in steps", lines[0])
    rule = r" +\d+\.\d{3} +\d+\.\d% +(\d+) +(\d+)  (.*)"
    found = sorted(re.fullmatch(rule, line).groups() for line in lines[3:8])
    assert found == [
        ("0", "0", "rule 5: gone(X) :- ping[X].  [deferred, p.olg:6]"),
        ("1", "1", "rule 3: n(count<*>) :- reach(_, _).  [stratum 1, p.olg:4]"),
        ("1", "1", "rule 4: seen(X) :- n(X), notin gone(X).  [stratum 1, p.olg:5]"),
        ("1", "4", "rule 1: reach(X, Y) :- link(X, Y).  [stratum 0, p.olg:2]"),
        ("4", "8", "hop: reach(X, Z) :- link(X, Y), reach(Y, Z).  [stratum 0, p.olg:3]")]
    assert lines[8:10] == ["", "time (s)   share  rounds  derived  stratum"]
    assert sorted(re.fullmatch(rule, line).groups() for line in lines[10:]) == [
        ("0", "0", "deferred rules"), ("1", "2", "stratum 1: n, seen"),
        ("4", "12", "stratum 0: link, reach, gone, ping")]
    data = json.loads((tmp_path / "out.json").read_text())
    assert [(r["rule"], r["derived"]) for r in sorted(data["rules"], key=lambda r: r["rule"])
            ] == [("hop", 8), ("rule 1", 4), ("rule 3", 1), ("rule 4", 1), ("rule 5", 0)]
    bad = subprocess.run([sys.executable, "-m", "overlog", "run", "p.olg", "--profile-json",
                          "nowhere/out.json"], cwd=tmp_path, capture_output=True, text=True,
                         check=False)
    assert (bad.returncode, bad.stderr) == (
        2, "overlog: error: --profile-json: cannot write nowhere/out.json\n")


def test_rolled_back_steps_shared_names_and_offloaded_strata() -> None:
    engine = overlog.Engine("n(0).\nn(Y) :- n(X), X < 1000, Y := X + 1.\n", profile=True,
                            max_tuples=100)
    assert [e.code for e in engine.step().errors] == ["E307"]
    assert (engine.profile.steps, engine.profile.failed, engine.profile.rules[0].derived) == \
        (0, 1, 0)
    engine = overlog.Engine("q(1). q(2).\nr1 p(X) :- q(X).\nr1 s(X) :- q(X), X > 1.\n",
                            profile=True)
    assert engine.step().firings == {"r1": 3}  # (the report sums a shared name)
    assert [(r.label, r.text, r.derived) for r in engine.profile.rules] == [
        ("r1", "p(X) :- q(X).", 2), ("r1", "s(X) :- q(X), X > 1.", 1)]
    pytest.importorskip("duckdb")
    engine = overlog.Engine(_PROGRAM, profile=True, backend="vector")
    engine.run()
    assert engine.profile.strata[0].derived == len(engine.rows("reach"))
