"""``overlog explain --dot`` and ``--svg``: the rule/relation dependency graph as Graphviz DOT
(``overlog/dot.py``, docs/pictures.md), valid for every golden program, and rendered to SVG
by Graphviz's ``dot`` when it is installed."""

from __future__ import annotations

import io
import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from overlog import syntax as s
from overlog.cli import EXIT_OK, EXIT_USAGE, _compile, _parser
from overlog.dot import body_relations
from tests.goldens import GOLDEN, chdir, discover, golden_id, run_cli

ROOT = Path(__file__).parents[1]
PROGRAMS = [*discover("eval", "explain"), *sorted((ROOT / "programs").glob("*.olg"))]
DOT = shutil.which("dot")
NO_DOT = "Graphviz's dot is not on PATH"
COMPILE_OPTIONS = ("--define", "--native", "--dialect")  # of run's options, those explain takes

QUOTED = r'"(?:[^"\\]|\\.)*"'


def _name(path: Path) -> str:
    return golden_id(path) if GOLDEN in path.parents else f"programs/{path.name}"


def _options(path: Path) -> list[str]:
    """The options of the program's `// args:` or `// Run:` line that compiling takes."""
    options: list[str] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith(("// args:", "// Run:")):
            words = shlex.split(line.partition(":")[2])
            options += [word for i, word in enumerate(words)
                        if word in COMPILE_OPTIONS or (i and words[i - 1] in COMPILE_OPTIONS)]
    return options


def _structure(text: str) -> tuple[list[str], list[tuple[str, str, str]]]:
    """Node ids and (tail, head, attributes) of edges of DOT text as program_graph writes it,
    after checking that its quotes and braces balance and every edge's ends are nodes."""
    bare = re.sub(QUOTED, '""', text)
    assert '"' not in bare.replace('""', ""), "an unbalanced quote"
    depth = 0
    for char in bare:
        depth += {"{": 1, "}": -1}.get(char, 0)
        assert depth >= 0, "a closing brace without an opening one"
    assert depth == 0, "unclosed braces"
    nodes = re.findall(rf"^    ({QUOTED}) \[.*\];$", text, re.M)
    edges = re.findall(rf"^  ({QUOTED}) -> ({QUOTED}) \[(.*)\];$", text, re.M)
    assert len(nodes) == len(set(nodes)), "a node declared twice"
    assert len(edges) == len(set(edges)), "an edge drawn twice"
    for tail, head, _ in edges:
        assert tail in nodes and head in nodes, f"{tail} -> {head}: an undeclared node"
    lines = text.splitlines()
    assert len(lines) == 3 + len(nodes) + len(edges) + 4 * text.count("subgraph cluster_") + (
        1 if edges else 0) + 1, "a line of another kind"
    return nodes, edges


def _canon(text: str) -> subprocess.CompletedProcess[str]:
    assert DOT is not None
    return subprocess.run([DOT, "-Tcanon"], input=text, capture_output=True, text=True,
                          timeout=60, check=False)


@pytest.mark.parametrize("path", PROGRAMS, ids=_name)
def test_every_golden_program_draws_a_valid_graph(path: Path) -> None:
    code, out, err = run_cli(["explain", path.name, "--dot", *_options(path)], cwd=path.parent)
    assert code == EXIT_OK, err
    assert out.startswith(f"// overlog explain --dot: {path.name}\ndigraph overlog {{\n")
    assert out.endswith("\n}\n")
    nodes, _ = _structure(out)
    assert nodes
    if DOT is not None:
        done = _canon(out)
        assert (done.returncode, done.stderr) == (0, "")


@pytest.mark.parametrize("path", PROGRAMS, ids=_name)
def test_edges_are_the_body_atoms_of_each_rule(path: Path) -> None:
    """What the graph reads off the plans is what each rule's body says: its positive atoms'
    relations and its negated ones', one edge each."""
    args = _parser().parse_args(["explain", path.name, *_options(path)])
    with chdir(path.parent):
        plan = _compile(path.name, io.StringIO(), args)
    assert plan is not None
    edges = 0
    for rule, info in zip(plan.rules, plan.checked.rules, strict=True):
        body = info.rule.body
        positive = {lit.name for lit in body if isinstance(lit, s.Atom)}
        negated = {lit.atom.name for lit in body if isinstance(lit, s.Negation)}
        assert body_relations(rule) == (positive, negated), rule.text
        edges += len(positive) + len(negated)
    _, out, _ = run_cli(["explain", path.name, "--dot", *_options(path)], cwd=path.parent)
    assert len(_structure(out)[1]) == edges


SMALL = """\
materialize(link, infinity, infinity, keys(1, 2)).
materialize(seen, 60, 100, keys(1)).
link("a", "b", 1).
link("b", "c", 2).
r1 reach(X, Y) :- link(X, Y, _).
reach(X, Z) :- link(X, Y, _), reach(Y, Z).
hop2(X, Z) :- link(X, Y, _), link(Y, Z, _).
cheapest(X, min<C>) :- link(X, _, C).
island(X) :- link(_, X, _), notin reach(X, _).
tick[@N, E] :- periodic[@N, E, 1, 2].
seen(E) :- tick[_, E].
delete seen(E) :- tick[_, E], E > 1.
ping[@Y, X] :- tick[@X, _], link(X, Y, _).
watch(reach).
"""

SMALL_DOT = r"""// overlog explain --dot: small.olg
digraph overlog {
  graph [rankdir=LR, labelloc=t, label="program small.olg"];

  subgraph cluster_0 {
    label="stratum 0";
    "hop2" [shape=box, label="hop2/2"];
    "link" [shape=box, label="link/3\nkeys(1, 2)"];
    "periodic" [shape=ellipse, style="dashed,filled", fillcolor=lightgrey, label="periodic/4\n(built-in)"];
    "ping" [shape=ellipse, style="dashed", label="ping/2"];
    "reach" [shape=box, peripheries=2, label="reach/2"];
    "seen" [shape=box, label="seen/1\nlifetime 60, size 100"];
    "tick" [shape=ellipse, style="dashed", label="tick/2"];
  }

  subgraph cluster_1 {
    label="stratum 1";
    "cheapest" [shape=box, label="cheapest/2"];
    "island" [shape=box, label="island/1"];
  }

  "link" -> "reach" [label="r1"];
  "link" -> "reach" [label="rule 2"];
  "reach" -> "reach" [label="rule 2"];
  "link" -> "hop2" [label="rule 3"];
  "link" -> "cheapest" [label="rule 4: min<C>", style="bold", color=blue, fontcolor=blue];
  "link" -> "island" [label="rule 5"];
  "reach" -> "island" [label="notin rule 5", style="dashed", color=red, fontcolor=red];
  "periodic" -> "tick" [label="rule 6"];
  "tick" -> "seen" [label="rule 7: next step", style="dotted"];
  "tick" -> "seen" [label="rule 8: delete", style="dotted", arrowhead=tee];
  "link" -> "ping" [label="rule 9: @remote", style="dotted"];
  "tick" -> "ping" [label="rule 9: @remote", style="dotted"];
}
"""  # noqa: E501 (the periodic line)


def test_the_whole_graph_of_a_small_program(tmp_path: Path) -> None:
    """Views (one edge for hop2's two reads of link), a notin, a min, an event rule, a
    built-in, state and delete rules, a remote head, keys, soft state, a watch."""
    (tmp_path / "small.olg").write_text(SMALL)
    assert run_cli(["explain", "small.olg", "--dot"], cwd=tmp_path) == (EXIT_OK, SMALL_DOT, "")


def test_aggregates_and_a_notin_into_one(tmp_path: Path) -> None:
    (tmp_path / "agg.olg").write_text(
        "n(@A, count<*>) :- e(@A, _), notin bad(@A).\ns(A, sum<B>) :- e(A, B).\n")
    code, out, _ = run_cli(["explain", "agg.olg", "--dot"], cwd=tmp_path)
    assert code == EXIT_OK
    assert out.splitlines()[-4:-1] == [
        '  "bad" -> "n" [label="notin rule 1: count<*>", style="dashed,bold", color=red, '
        'fontcolor=red];',
        '  "e" -> "n" [label="rule 1: count<*>", style="bold", color=blue, fontcolor=blue];',
        '  "e" -> "s" [label="rule 2: sum<B>", style="bold", color=blue, fontcolor=blue];']


def test_names_are_quoted_and_escaped(tmp_path: Path) -> None:
    name = 'a "quoted" \\ name.olg'
    (tmp_path / name).write_text("p(X) :- q(X).\n")
    code, out, _ = run_cli(["explain", name, "--dot"], cwd=tmp_path)
    assert code == EXIT_OK
    assert out.splitlines()[:3] == [
        f"// overlog explain --dot: {name}", "digraph overlog {",
        r'  graph [rankdir=LR, labelloc=t, label="program a \"quoted\" \\ name.olg"];']
    _structure(out)
    if DOT is not None:
        done = _canon(out)
        assert (done.returncode, done.stderr) == (0, "")
        assert r'label="program a \"quoted\" \\ name.olg"' in done.stdout


@pytest.mark.skipif(DOT is None, reason=NO_DOT)
def test_svg_is_rendered_by_graphviz(tmp_path: Path) -> None:
    (tmp_path / "small.olg").write_text(SMALL)
    assert run_cli(["explain", "small.olg", "--svg", "small.svg"], cwd=tmp_path) == (
        EXIT_OK, "", "")
    svg = (tmp_path / "small.svg").read_text(encoding="utf-8")
    assert svg.startswith("<?xml")
    assert "<svg" in svg and "notin rule 5" in svg


def _path_of(monkeypatch: pytest.MonkeyPatch, folder: Path) -> None:
    folder.mkdir()
    monkeypatch.setenv("PATH", str(folder))


def test_svg_without_graphviz_is_a_usage_error(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "small.olg").write_text(SMALL)
    _path_of(monkeypatch, tmp_path / "empty")
    assert shutil.which("dot") is None
    assert run_cli(["explain", "small.olg", "--svg", "out.svg"], cwd=tmp_path) == (
        EXIT_USAGE, "",
        "overlog: error: --svg runs Graphviz's `dot`, which is not on PATH: install Graphviz "
        "(`apt install graphviz`, `brew install graphviz`, or from "
        "https://graphviz.org/download/), or run `overlog explain small.olg --dot | dot -Tsvg "
        "-o out.svg` where it is installed\n")
    assert not (tmp_path / "out.svg").exists()
    # --dot needs no Graphviz
    assert run_cli(["explain", "small.olg", "--dot"], cwd=tmp_path) == (EXIT_OK, SMALL_DOT, "")


@pytest.mark.skipif(os.name != "posix", reason="a shell script stands in for dot")
def test_a_failing_dot_is_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "small.olg").write_text(SMALL)
    _path_of(monkeypatch, tmp_path / "bin")
    fake = tmp_path / "bin" / "dot"
    fake.write_text("#!/bin/sh\necho 'Error: <stdin>: syntax error in line 1' >&2\nexit 3\n")
    fake.chmod(0o755)
    assert run_cli(["explain", "small.olg", "--svg", "out.svg"], cwd=tmp_path) == (
        EXIT_USAGE, "",
        "overlog: error: --svg: dot -Tsvg failed (exit 3): Error: <stdin>: syntax error in "
        "line 1\n")
    assert not (tmp_path / "out.svg").exists()


@pytest.mark.skipif(DOT is None, reason=NO_DOT)
def test_an_svg_that_cannot_be_written_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "small.olg").write_text(SMALL)
    assert run_cli(["explain", "small.olg", "--svg", "no/such/dir.svg"], cwd=tmp_path) == (
        EXIT_USAGE, "",
        "overlog: error: --svg: cannot write no/such/dir.svg: No such file or directory\n")


def test_dot_and_svg_together_are_a_usage_error(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "small.olg").write_text(SMALL)
    code, out, _ = run_cli(["explain", "small.olg", "--dot", "--svg", "out.svg"], cwd=tmp_path)
    assert (code, out) == (EXIT_USAGE, "")
    assert "argument --svg: not allowed with argument --dot" in capsys.readouterr().err
    assert not (tmp_path / "out.svg").exists()


def test_a_program_error_is_reported_before_drawing(tmp_path: Path) -> None:
    (tmp_path / "bad.olg").write_text("p(X) :- q(Y).\n")
    code, out, err = run_cli(["explain", "bad.olg", "--dot"], cwd=tmp_path)
    assert (code, out) == (1, "")
    assert err.startswith("bad.olg:1:3: error[E205]:")

