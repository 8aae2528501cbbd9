"""``overlog run --nodes``: several nodes in one process on the simulated network."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.goldens import run_cli

PING = """
link(@"a", "b"). link(@"b", "a").
ping[@Y, X, E] :- periodic[@X, E, 1, 2], link(@X, Y).
got(@X, Y) :- ping[@X, Y, _].
watch(ping).
"""


@pytest.fixture
def here(tmp_path: Path) -> Path:
    (tmp_path / "ping.olg").write_text(PING)
    return tmp_path


def test_jsonl_lines_say_their_node(here: Path) -> None:
    code, out, err = run_cli(["run", "ping.olg", "--nodes", "a,b", "--latency", "250",
                              "--format", "jsonl", "--print", "got"], here)
    assert (code, err) == (0, "")
    assert [json.loads(line) for line in out.splitlines()] == [
        {"node": "a", "step": 3, "time": 1.25, "table": "ping", "op": "event",
         "row": ["a", "b", 1]},
        {"node": "b", "step": 3, "time": 1.25, "table": "ping", "op": "event",
         "row": ["b", "a", 1]},
        {"node": "a", "step": 6, "time": 2.25, "table": "ping", "op": "event",
         "row": ["a", "b", 2]},
        {"node": "b", "step": 6, "time": 2.25, "table": "ping", "op": "event",
         "row": ["b", "a", 2]},
        {"node": "a", "table": "got", "row": ["a", "b"]},
        {"node": "b", "table": "got", "row": ["b", "a"]},
    ]


def test_csv_and_text_say_their_node(here: Path) -> None:
    code, out, err = run_cli(["run", "ping.olg", "--nodes", "b,a", "--format", "csv",
                              "--steps", "3"], here)
    assert (code, err, out) == (0, "", "node,step,time,table,op,field1,field2,field3,field4\n"
                                       "b,3,1.0,ping,event,b,a,1\n"
                                       "a,3,1.0,ping,event,a,b,1\n")
    code, out, err = run_cli(["run", "ping.olg", "--nodes", "a,b", "--print", "got",
                              "--print", "link"], here)
    assert (code, err) == (0, "")
    assert out.splitlines()[-8:] == ['a: got (1 row)', '  "a"  "b"', 'a: link (1 row)',
                                     '  "a"  "b"', 'b: got (1 row)', '  "b"  "a"',
                                     'b: link (1 row)', '  "b"  "a"']


def test_a_lossy_network_says_what_it_lost(here: Path) -> None:
    code, out, err = run_cli(["run", "ping.olg", "--nodes", "a,b", "--loss", "0.5",
                              "--seed", "1", "--print", "got"], here)
    assert (code, out) == (0, '[a step 3 @1]  ping["a", "b", 1]\n'
                              '[b step 4 @2]  ping["b", "a", 2]\n'
                              'a: got (1 row)\n  "a"  "b"\nb: got (1 row)\n  "b"  "a"\n')
    assert err == "overlog: network: 4 packets sent, 2 delivered; 2 lost\n"


def test_a_node_may_run_its_own_program(here: Path) -> None:
    (here / "echo.olg").write_text('back[@Y, X, E] :- ping[@X, Y, E].\n')
    (here / "pinger.olg").write_text('link(@"a", "b").\n'
                                     'ping[@Y, X, E] :- periodic[@X, E, 1, 1], link(@X, Y).\n'
                                     'back[@Y, X, E] :- ping[@X, Y, E].\n'
                                     'heard(@X, Y) :- back[@X, Y, _].\n')
    code, out, err = run_cli(["run", "pinger.olg", "--nodes", "a", "--node", "b=echo.olg",
                              "--print", "heard", "--format", "jsonl"], here)
    assert (code, err) == (0, "echo.olg:1:19: warning[W201]: relation `ping` is read but no "
                              "rule or fact writes it (it can only be fed from outside, by "
                              "another node's program, or with generate_event)\n"
                              "  1 | back[@Y, X, E] :- ping[@X, Y, E].\n"
                              "    |                   ^^^^^^^^^^^^^^\n")
    assert [json.loads(line) for line in out.splitlines()] == [
        {"node": "a", "table": "heard", "row": ["a", "b"]}]


def test_facts_per_node_or_placed_by_location(here: Path) -> None:
    program = here / "r.olg"
    program.write_text("r(@X, Y) :- e(@X, Y).\n")
    unfed = ""  # W201 (`e` is read but nothing writes it) is not shown: -F supplies it
    (here / "flat").mkdir()
    (here / "flat" / "e.csv").write_text('"a",1\n"b",2\n"a",3\n')
    code, out, err = run_cli(["run", "r.olg", "--nodes", "a,b", "-F", "flat", "--format",
                              "csv", "--print", "r"], here)
    assert (code, err) == (0, unfed)
    assert out.splitlines() == ["node,step,time,table,op,field1,field2", "a,1,0.0,r,final,a,1",
                                "a,1,0.0,r,final,a,3", "b,1,0.0,r,final,b,2"]
    for node, rows in (("a", '"a",5\n'), ("b", '"b",6\n')):
        (here / "per" / node).mkdir(parents=True)
        (here / "per" / node / "e.csv").write_text(rows)
    code, out, err = run_cli(["run", "r.olg", "--nodes", "a,b", "-F", "per", "--format",
                              "csv", "--print", "r", "-D", "out"], here)
    assert (code, err) == (0, unfed)
    assert out.splitlines()[1:] == ["a,1,0.0,r,final,a,5", "b,1,0.0,r,final,b,6"]
    assert (here / "out" / "a" / "r.csv").read_text() == "a,5\n"
    assert (here / "out" / "b" / "e.csv").read_text() == "b,6\n"
    (here / "flat" / "e.csv").write_text('"c",1\n')
    code, out, err = run_cli(["run", "r.olg", "--nodes", "a,b", "-F", "flat"], here)
    assert (code, out) == (2, "")
    assert err == unfed + ("overlog: error: flat/e.csv: a row for 'c', which is not among "
                           "the nodes\n")


@pytest.mark.parametrize(("extra", "message"), [
    (["--nodes", "a,,b"], "--nodes takes names separated by commas, not 'a,,b'"),
    (["--nodes", "a,b,a"], "--nodes names a node twice: 'a,b,a'"),
    (["--nodes", "a", "--node", "b"], "--node takes NAME=PROGRAM.olg, not 'b'"),
    (["--nodes", "a", "--clock", "real"],
     "--nodes runs on the simulated network's clock: no --clock real"),
    (["--nodes", "a", "--address", "z"], "--address names the node of a single-node run: "
     "with --nodes, the nodes are named by --nodes"),
    (["--nodes", "a", "--latency", "-1"], "--latency takes a number of milliseconds >= 0"),
    (["--nodes", "a", "--loss", "2"], "--loss takes a probability between 0 and 1"),
    (["--latency", "5"], "--latency and --loss shape the network of --nodes"),
    (["--nodes", "a", "--print", "nosuch"], "--print names `nosuch`, which no node's "
     "program has"),
])
def test_bad_node_options_are_usage_errors(here: Path, extra: list[str], message: str) -> None:
    code, out, err = run_cli(["run", "ping.olg", *extra], here)
    assert (code, out, err) == (2, "", f"overlog: error: {message}\n")
